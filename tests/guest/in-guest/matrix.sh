# One pairing of the RDMA program matrix: both guests walk the steps in
# $MX_STEPS ("ID SERVER-VM PROGRAM SECONDS" per line), meeting at a TCP
# barrier before each.
for t in $(seq 1 20); do gi=$(gid_of "$RS_IP") && break; sleep 0.5; done
echo "rdma-matrix: vm$RS_VM_INDEX device '$dev' GID index '$gi' peer $RS_PEER"
# rping_data FILE PREFIX: the lines "PREFIXrdma-ping-N: <pattern>" are what
# rping -S 100 -C 10 sends (its pattern: letters from 'A' + N % 58, wrapping
# after 'z'), all 10 of them.
rping_data()
{
    awk -v pre="$2" -v S=100 -v C=10 '
        index($0, pre) == 1 {
            e = sprintf("rdma-ping-%d: ", n); c = 65 + n % 58
            while (length(e) < S - 1) { e = e sprintf("%c", c); c++; if (c > 122) c = 65 }
            if (substr($0, length(pre) + 1) != e) bad++
            n++
        }
        END { if (n == C && !bad) exit 0; printf "%d of %d lines \"%s...\", %d wrong", n, C, pre, bad; exit 1 }' "$1"
}
# run_for SECONDS PROGRAM ARGS...: output in $out, exit status in $rc
# ("timeout", or "stuck" for a process that SIGKILL does not end: it is left
# behind, not waited for).  A server also ends 5 s after $donef appears.
alive() { [ -e /proc/$1 ] && ! grep -q '^[0-9]* (.*) Z' /proc/$1/stat 2>/dev/null; }
run_for()
{
    local end=$(( $(date +%s) + $1 )) p fin=
    shift
    "$@" </dev/null >"$out" 2>&1 &
    p=$!
    while alive $p; do
        [ -z "$fin" ] && [ -n "$donef" ] && [ -e "$donef" ] && fin=$(( $(date +%s) + 5 ))
        if [ "$(date +%s)" -ge "$end" ] || { [ -n "$fin" ] && [ "$(date +%s)" -ge "$fin" ]; }; then
            kill $p 2>/dev/null; sleep 1; kill -9 $p 2>/dev/null; sleep 2
            if alive $p; then rc=stuck; echo "(pid $p: $(cat /proc/$p/wchan 2>/dev/null), state $(cut -d' ' -f3 /proc/$p/stat 2>/dev/null), not ended by SIGKILL)" >> "$out"
            else wait $p; rc=timeout; fi
            return
        fi
        sleep 0.2
    done
    wait $p; rc=$?
}
step()  # K ID SERVER-VM PROGRAM SECONDS
{
    k=$1 id=$2 srv=$3 prog=$4 tmo=$5 port=$((18000 + $1))
    # wait for the peer as long as its previous step may take
    [ -n "$gone" ] || barrier "$k" $(( (tmo > ptmo ? tmo : ptmo) + 60 )) || gone=$k
    ptmo=$tmo
    if [ -n "$gone" ]; then ck "$id" fail "the peer did not reach step $gone"; return; fi
    case $prog in
    ibv_rc_pingpong|ibv_uc_pingpong) a="-d $dev -g $gi -p $port -n 100 -s 4096 -c" ;;
    ibv_ud_pingpong) a="-d $dev -g $gi -p $port -n 100 -s 512 -c" ;;
    ibv_srq_pingpong) a="-d $dev -g $gi -p $port -n 100 -s 4096 -q 4 -c" ;;
    # -o 16: perftest 4.5 takes the peer's outstanding-read count for its
    # own QP; soft-RoCE's is 128, more than the adapter's 16
    # -u 18: a local ACK timeout of ~1 s instead of ~67 ms, as a TCG guest on
    # a loaded host can stall for longer than 7 x 67 ms
    ib_atomic_*) a="-d $dev -x $gi -p $port -F -n 200 -o 16 -u 18" ;;   # 8-byte operands
    ib_read_bw) a="-d $dev -x $gi -p $port -F -n 200 -s 4096 -o 16 -u 18" ;;
    ib_read_lat) a="-d $dev -x $gi -p $port -F -n 200 -s 8 -o 16 -u 18" ;;
    ib_*_bw) a="-d $dev -x $gi -p $port -F -n 200 -s 4096 -u 18" ;;
    ib_*_lat) a="-d $dev -x $gi -p $port -F -n 200 -s 8 -u 18" ;;
    rping) a="-v -V -S 100 -C 10 -p $port" ;;
    netem-on) # the soft-RoCE VM (VM 2) shapes its interface's egress
        if [ "$RS_VM_INDEX" = 2 ]; then
            if modprobe sch_netem && tc qdisc add dev "$RS_IFACE" root netem loss 3% reorder 5% delay 1ms; then
                ck "$id" ok "$(tc qdisc show dev "$RS_IFACE" | head -n 1)"
            else ck "$id" fail "tc qdisc add ... netem failed"; fi
        else ck "$id" ok; fi
        return ;;
    netem-off) # with netem's statistics: it did drop packets
        if [ "$RS_VM_INDEX" = 2 ]; then
            st=$(tc -s qdisc show dev "$RS_IFACE" | grep -m1 'Sent' | tr -s ' ')
            if tc qdisc del dev "$RS_IFACE" root; then ck "$id" ok "netem:$st"
            else ck "$id" fail "tc qdisc del failed"; fi
        else ck "$id" ok; fi
        return ;;
    dmesg)
        b=$(dmesg | grep -E 'WARNING|BUG|Oops|Call Trace' | head -n 3 | tr '\n' ' ')
        if [ -z "$b" ]; then ck "$id" ok; else ck "$id" fail "$b"; fi
        return ;;
    esac
    out=/tmp/mx.$k.out
    t0=$(date +%s)
    if [ "$RS_VM_INDEX" = "$srv" ]; then
        role=server
        [ "$prog" = rping ] && a="-s -a $RS_IP $a"
        # the client says when it is done: a server still waiting then
        # (a failed client) is stopped after a grace period
        donef=/tmp/mx.done.$k
        ( nc -l -p $((31000 + k)) </dev/null >/dev/null 2>&1 && touch $donef ) &
        run_for $((tmo + 30)) $prog $a
        nc -w 2 127.0.0.1 $((31000 + k)) </dev/null >/dev/null 2>&1
    else
        role=client
        [ "$prog" = rping ] && a="-c -a $RS_PEER $a" || a="$a $RS_PEER"
        donef=
        sleep 1
        # until the server listens: TCP (pingpong, perftest) or rdma_cm
        for try in 1 2 3 4 5 6 7 8; do
            run_for "$tmo" $prog $a
            [ $rc != 0 ] && [ $(( $(date +%s) - t0 )) -lt 20 ] &&
                grep -qE "Couldn't connect to|Unable to open file descriptor|RDMA_CM_EVENT_REJECTED" "$out" &&
                ! grep -q 'ping data' "$out" || break
            sleep 2
        done
        nc -w 2 "$RS_PEER" $((31000 + k)) </dev/null >/dev/null 2>&1
    fi
    why=
    if [ $rc != 0 ]; then
        case $rc in timeout|stuck) why=$rc ;; *) why="exit status $rc" ;; esac
    else
        case $prog in
        ibv_*) grep -q 'iters in' "$out" || why="no 'iters in' line" ;;
        ib_*) # the server of a read or atomic test measures nothing
            [ $role = server ] || grep -qE '^ *[0-9]+ +[0-9]+ +([0-9]|inf|-?nan)' "$out" || why="no result line" ;;
        rping) if [ $role = client ]; then why=$(rping_data "$out" 'ping data: ')
               else why=$(rping_data "$out" 'server ping data: '); fi ;;
        esac
    fi
    d="$role, $(( $(date +%s) - t0 )) s"
    case $prog in
    ibv_*) r=$(grep 'iters in' "$out" | head -n 1) ;;
    ib_*) r=$(grep -E '^ *[0-9]+ +[0-9]+ +([0-9]|inf|-?nan)' "$out" | head -n 1 | tr -s ' ') ;;
    *) r=$(grep -c 'ping data' "$out") ;;
    esac
    if [ -z "$why" ]; then
        ck "$id" ok "$d: $r"
    else
        ck "$id" fail "$d: $why: $(grep -v '^ *$' "$out" | tail -n 4 | tr '\n' ' ' | cut -c1-400)"
        sed 's/^/    /' "$out" | tail -n 25
    fi
}
k=0 ptmo=0 gone=
while read -r id srv prog tmo; do
    [ -n "$id" ] || continue
    k=$((k + 1))
    step "$k" "$id" "$srv" "$prog" "$tmo"
done <<STEPS
$MX_STEPS
STEPS
exit 0
