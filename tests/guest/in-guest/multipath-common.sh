# SPDX-License-Identifier: GPL-2.0-or-later
# multipath: guest-side part 'common' (after lib.sh; sent by
# tests/guest/multipath.py to every VM of the routed ECMP network).
# mark NAME: the suite acts on it (a path down, a window of its captures)
mark() { echo "MP mark $1"; }
PATHS=/sys/module/rdma_session/parameters/paths
# the adapter takes MTU 9000 (RoCE MTU 4096: four times fewer frames)
ip link set "$RS_IFACE" mtu 9000 || echo "multipath: MTU 9000 refused"
wait_gid() {
    for t in $(seq 1 40); do
        gi=$(gid_of "$RS_IP") && return 0
        sleep 0.5
    done
    return 1
}
wait_gid || echo "multipath: no RoCE v2 GID for $RS_IP on $dev"
# IPv6 beside IPv4 (rstest/ecmp.py): fd77:I::1/64, the other VMs'
# segments (fd77:J::/64) through the host namespace, fd77:I::254; gi6:
# the RoCE v2 GID of that address (bw_client/bw_server take it when
# bwgid=$gi6; "none" when there is none, and they fail)
IP6=fd77:$RS_VM_INDEX::1
ip -6 addr add "$IP6/64" dev "$RS_IFACE" nodad
ip -6 route add fd77::/16 via "fd77:$RS_VM_INDEX::254" dev "$RS_IFACE"
gi6=$(gid_wait "$IP6") || gi6=none
if [ "$gi6" != none ]; then
    ck gid6 ok "RoCE v2 GID $gi6 of $IP6: $(cat \
        "/sys/class/infiniband/$dev/ports/1/gids/$gi6")"
else
    ck gid6 fail "no RoCE v2 GID of $IP6: $(grep -v \
        '^0000:0000:0000:0000:0000:0000:0000:0000$' \
        "/sys/class/infiniband/$dev/ports/1/gids/"* | tr '\n' ' ')"
fi
mtu() { ibv_devinfo -d "$dev" | grep -E 'active_mtu' | tr -s ' \t' ' '; }
for t in $(seq 1 20); do
    case $(mtu) in *4096*) break ;; esac
    sleep 0.5
done
echo "multipath: vm$RS_VM_INDEX $dev GID index '$gi', IPv6 '$gi6',$(mtu)"
alive() {
    [ -e /proc/$1 ] && ! grep -q '^[0-9]* (.*) Z' /proc/$1/stat 2>/dev/null
}
# wait_end PID SECONDS: wait for PID, killing it after SECONDS; rc = status
wait_end() {
    for t in $(seq 1 $((2 * $2))); do alive $1 || break; sleep 0.5; done
    alive $1 && { kill -9 $1 2>/dev/null; sleep 1; }
    wait $1; rc=$?
}
# bw_client LOG SERVER ARGS...: ib_write_bw against SERVER, again while it
# does not listen yet (up to 90 s); rc = its status.  Through the GID
# $bwgid when set (bwgid=$gi6: RoCE over IPv6, the connection data over
# IPv4 TCP), else $gi.
no_gid() {  # LOG: rc=1 when the IPv6 GID to take is not there
    [ "$bwgid" = none ] || return 1
    echo "no RoCE v2 GID of $IP6" > "$1"
    rc=1
}
bw_client() {
    log=$1 srv=$2 end=$(( $(date +%s) + 90 )); shift 2
    no_gid "$log" && return 1
    while :; do
        timeout 150 ib_write_bw -d "$dev" -x "${bwgid:-$gi}" -F "$@" \
            "$srv" > "$log" 2>&1
        rc=$?
        grep -qiE "couldn't connect|unable to connect|connection refused" \
            "$log" || break
        [ "$(date +%s)" -lt "$end" ] || break
        sleep 1
    done
    return $rc
}
bw_server() {  # LOG ARGS...
    log=$1; shift
    no_gid "$log" && return 1
    timeout 300 ib_write_bw -d "$dev" -x "${bwgid:-$gi}" -F "$@" \
        > "$log" 2>&1; rc=$?
}
# rp_client LOG SERVER ARGS...: rping -c, again while the server does not
# listen yet
rp_client() {
    log=$1 srv=$2 end=$(( $(date +%s) + 90 )); shift 2
    while :; do
        timeout 150 rping -c -a "$srv" "$@" > "$log" 2>&1; rc=$?
        [ $rc = 0 ] && break
        grep -qiE "REJECTED|unreachable|refused|(ADDR|ROUTE)_ERROR" \
            "$log" || break
        [ "$(date +%s)" -lt "$end" ] || break
        sleep 1
    done
    return $rc
}
# bw_check NAME LOG: NAME from $rc and ib_write_bw's result line
bw_check() {
    r=$(grep -A1 '#bytes' "$2" | tail -n 1 | tr -s ' \t' ' ')
    if [ $rc = 0 ] && [ -n "$r" ]; then
        ck "$1" ok "$r"
    else
        ck "$1" fail "status $rc: $(tail -n 3 "$2" | tr '\n' ' ')"
    fi
}
rp_check() {  # NAME LOG COUNT
    if [ $rc = 0 ] && ! grep -qiE 'mismatch|error|fail' "$2"; then
        ck "$1" ok "$3 pings of rping -V, data verified"
    else
        ck "$1" fail "status $rc: $(tail -n 3 "$2" | tr '\n' ' ')"
    fi
}
set_paths() {  # N CHECK: the driver's sessions per new RC connection
    if [ -w $PATHS ] && echo "$1" > $PATHS && [ "$(cat $PATHS)" = "$1" ]
    then
        ck "$2" ok "$PATHS = $1"
    else
        ck "$2" fail "no $PATHS (multipath sessions): $(ls \
            /sys/module/rdma_session/parameters 2>&1 | tr '\n' ' ')"
    fi
}
migrations() {
    rdma statistic show link "$dev/1" 2>/dev/null | tr ' ' '\n' |
        grep -A1 '^path_migrations$' | tail -n 1
}
dmesg_clean() {
    b=$(badlog)
    if [ -z "$b" ]; then ck dmesg-clean ok; else ck dmesg-clean fail "$b"; fi
}
