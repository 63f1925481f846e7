# resilience: guest-side part 'common' (sent by tests/guest/resilience.py)
ck() { echo "CHECK $1 $2 ${3:-} (uptime $(cut -d' ' -f1 /proc/uptime) s)"; }
badlog() { dmesg | grep -E 'WARNING|BUG|Oops|Call Trace|blocked for more than' | head -n 3 | tr '\n' ' '; }
gid_of() {  # IPv4 address -> index of its RoCE v2 GID on rsess0 port 1
    h=$(echo "$1" | awk -F. '{ printf "%02x%02x:%02x%02x", $1, $2, $3, $4 }')
    for f in /sys/class/infiniband/rsess0/ports/1/gids/*; do
        i=${f##*/}
        [ "$(cat "$f" 2>/dev/null)" = "0000:0000:0000:0000:0000:ffff:$h" ] || continue
        [ "$(cat /sys/class/infiniband/rsess0/ports/1/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && { echo "$i"; return 0; }
    done
    return 1
}
# passed NAME LOG: check NAME from the program's status $rc and its LOG
passed() {
    if [ $rc = 0 ]; then ck "$1" ok "$(grep -A1 '#bytes' "$2" | tail -n 1)$(grep 'iters in' "$2" | tail -n 1)"
    else ck "$1" fail "status $rc: $(tail -n 3 "$2" | tr '\n' ' ')"; fi
}
wait_gid() { for t in $(seq 1 40); do gi=$(gid_of "$RS_IP") && return 0; sleep 0.5; done; return 1; }
# port_back: after the driver came back (modprobe, FLR), give the interface
# its address again; true once rsess0 is ACTIVE with its RoCE v2 GID
port_back() {
    for t in $(seq 1 20); do [ -e "/sys/class/net/$RS_IFACE" ] && break; sleep 0.5; done
    ip addr add "$RS_IP/24" dev "$RS_IFACE" 2>/dev/null
    ip link set "$RS_IFACE" up
    for t in $(seq 1 40); do ibv_devinfo -d rsess0 2>/dev/null | grep -q PORT_ACTIVE && break; sleep 0.5; done
    ibv_devinfo -d rsess0 2>/dev/null | grep -q PORT_ACTIVE && wait_gid
}
port_state() { ibv_devinfo -d rsess0 2>&1 | grep -E 'state|No IB' | tr '\n' ' '; }
alive() { [ -e /proc/$1 ] && ! grep -q '^[0-9]* (.*) Z' /proc/$1/stat 2>/dev/null; }
# wait_end PID SECONDS: wait for PID, killing it after SECONDS; rc = status
wait_end() {
    for t in $(seq 1 $((2 * $2))); do alive $1 || break; sleep 0.5; done
    alive $1 && { kill -9 $1 2>/dev/null; sleep 1; }
    wait $1; rc=$?
}
# client LOG SECONDS PROGRAM ARGS...: run a client against $RS_PEER, again
# while the server does not listen yet (up to SECONDS); rc = its status
client() {
    log=$1 end=$(( $(date +%s) + $2 )); shift 2
    while :; do
        timeout 120 "$@" "$RS_PEER" > "$log" 2>&1; rc=$?
        grep -qiE "couldn't connect|unable to connect|connection refused" "$log" || break
        [ "$(date +%s)" -lt "$end" ] || break
        sleep 1
    done
    return $rc
}
# wait_rts: until a QP of ib_write_bw is connected (traffic has started):
# in RTS on the client, in RTR on the server (perftest's bandwidth servers
# only receive)
wait_rts() {
    for t in $(seq 1 120); do
        rdma resource show qp 2>/dev/null | grep -qE 'type RC state RT[RS] .*comm ib_write_bw' && return 0
        sleep 0.5
    done
    return 1
}
retry_exceeded() {  # LOG RC CHECK: the program failed with status 12
    if [ "$2" != 0 ] && grep -q 'Failed status 12' "$1"; then
        ck $3 ok "exit status $2: $(grep -m1 'Failed status' "$1")"
    else ck $3 fail "exit status $2: $(tail -n 4 "$1" | tr '\n' ' ')"; fi
}
dmesg_clean() {
    b=$(badlog)
    if [ -z "$b" ]; then ck $1 ok; else ck $1 fail "$b"; fi
}
wait_gid || echo "resilience: no RoCE v2 GID for $RS_IP"
echo "resilience: vm$RS_VM_INDEX GID index '$gi' peer $RS_PEER"
