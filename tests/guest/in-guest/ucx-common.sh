# The UCX suite's helpers (tests/guest/ucx.py), after lib.sh; then
# ucx-info.sh, ucx-perf.sh and ucx-mpi.sh run, and uc_end.
# $UC_PAIRING names the boot (its checks are "$UC_PAIRING/NAME").
#
# The VMs run UCX as a user of this device would: with UCX's defaults on
# an adapter.  A soft-RoCE VM (rxe0) runs with UCX_UD_ETH_DGID_CHECK=n:
# UCX 1.13's UD transport checks the destination GID of a received
# datagram in the GRH area where ConnectX puts it, which soft-RoCE does
# not lay out that way, so every UD datagram to a soft-RoCE VM would be
# dropped (UCX's own advice for soft-RoCE).  $UC_ADAPTER_ENV (from
# RS_UCX_ADAPTER_ENV, empty in the suite) adds variables on adapters
# when debugging.
#
#   uc_step               the next step number (ports, barriers)
#   uc_barrier K [S]      the two VMs meet (lib.sh's barrier)
#   uc_perf NAME KIND ARGS...  ucx_perftest: VM 2 the server, VM 1 the
#        client with ARGS (-d this VM's device added for UCT tests, those
#        with -x); KIND bw or lat: which figures the check reports
#   uc_end                the kernel log check
uc_n=0
uc_step() { uc_n=$((uc_n + 1)); }
# seconds since boot, to 1/100 s (busybox date has no %N)
uc_now() { cut -d' ' -f1 /proc/uptime; }
uc_barrier() { barrier "$@"; }
uc_vm1() { echo "${RS_IP%.*}.1"; }
uc_vm2() { echo "${RS_IP%.*}.2"; }
UC_DEV="$dev:1"
case $dev in
rxe*) UC_SOFT=1; export UCX_UD_ETH_DGID_CHECK=n ;;
*) UC_SOFT=0
   for v in ${UC_ADAPTER_ENV:-}; do export "$v"; done ;;
esac
# mpirun names the hosts (rs-mpi-check prints them); the VMs' host names
# are vm1 and vm2 (rs.name).
printf '%s vm1\n%s vm2\n' "$(uc_vm1)" "$(uc_vm2)" >> /etc/hosts
echo "ucx: $UC_PAIRING vm$RS_VM_INDEX device $UC_DEV soft-RoCE $UC_SOFT," \
     "UCX variables: $(env | grep '^UCX_' | tr '\n' ' ')"

# uc_perf NAME KIND ARGS...: a check "$UC_PAIRING/NAME" on each VM: the
# client's with the figures (a line "UCX-PERF PAIRING NAME KEY=VALUE...",
# which ucx.py collects), the server's that it ended well.
uc_perf()
{
    local name=$1 kind=$2 out=/tmp/ucx-perf.out port rc t0 t1 try fin err pid i ll lanes secs d
    shift 2
    uc_step
    port=$((13000 + uc_n))
    # UCT tests name their device; UCP tests log the lanes UCX chose
    # (ep_cfg lines at log level info)
    ll=''
    case " $* " in
    *" -x "*) set -- "$@" -d "$UC_DEV" ;;
    *) ll=info ;;
    esac
    if [ "$RS_VM_INDEX" = 1 ]; then
        uc_barrier "$uc_n" 120
        t0=$(uc_now)
        # the server may not listen yet: try again while the connection is
        # refused (nothing of the test has run then)
        try=0
        while :; do
            UCX_LOG_LEVEL=${ll:-${UCX_LOG_LEVEL:-warn}} \
                timeout 90 ucx_perftest -p "$port" "$(uc_vm2)" "$@" > $out 2>&1
            rc=$?
            grep -q 'connect() failed' $out || break
            try=$((try + 1))
            [ $try -lt 20 ] || break
            sleep 0.5
        done
        t1=$(uc_now)
        cat $out
        fin=$(grep '^Final:' $out | tail -n 1)
        # the lanes of the endpoint to the server (not the one to itself)
        lanes=$(sed -n 's/.*ep_cfg\[[0-9]*\]: //p' $out | grep -v 'self/' | tail -n 1)
        err=$(grep -E 'UCX +ERROR|[Ee]rror|failed' $out | head -n 2 | tr '\n' ' ')
        secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
        # Final: iterations, latency 50%ile, average, overall (usec),
        # bandwidth average, overall (MB/s), message rate average, overall
        if [ -n "$ll" ] && [ $rc = 0 ]; then
            case "$lanes" in
            *"/$UC_DEV"*) ;;
            *) err="${err}UCX did not use $UC_DEV: lanes '$lanes' " ;;
            esac
        fi
        if [ $rc = 0 ] && [ -n "$fin" ] && [ -z "$err" ]; then
            if [ "$kind" = bw ]; then
                d=$(echo "$fin" | awk '{ printf "bw_mbs=%s msgrate=%s iters=%s", $7, $9, $2 }')
            else
                # the overall average; the median of each report interval
                # (about a second; the last one is the Final line's)
                d=$(echo "$fin" | awk '{ printf "lat_avg_us=%s iters=%s", $5, $2 }')
                d="$d p50_us=$(grep -E '^(\[thread 0\]|Final:)' $out |
                    awk '{ printf "%s%s", n++ ? "/" : "", $(NF - 6) }')"
            fi
            echo "UCX-PERF $UC_PAIRING $name $d secs=$secs"
            ck "$UC_PAIRING/$name" ok "$d (${secs} s; ucx_perftest $*${lanes:+; lanes $lanes})"
        else
            ck "$UC_PAIRING/$name" fail "exit $rc after ${secs} s, ${err:-no Final line}(ucx_perftest $*)"
        fi
        uc_barrier $((uc_n + 500)) 120
    else
        timeout 150 ucx_perftest -p "$port" > $out 2>&1 &
        pid=$!
        uc_barrier "$uc_n" 120
        # the client is done (or gave up): the server ends by itself then
        uc_barrier $((uc_n + 500)) 120
        i=0
        while kill -0 $pid 2>/dev/null && [ $i -lt 20 ]; do
            sleep 0.5
            i=$((i + 1))
        done
        kill $pid 2>/dev/null
        wait $pid
        rc=$?
        err=$(grep -E 'UCX +ERROR|[Ee]rror|failed' $out | head -n 2 | tr '\n' ' ')
        sed -n '/UCX/p' $out
        if [ $rc = 0 ] && [ -z "$err" ]; then
            ck "$UC_PAIRING/$name" ok "server"
        else
            ck "$UC_PAIRING/$name" fail "server exit $rc${err:+: $err}"
        fi
    fi
}

uc_end()
{
    local b
    b=$(badlog)
    if [ -z "$b" ]; then ck "$UC_PAIRING/dmesg-clean" ok; else ck "$UC_PAIRING/dmesg-clean" fail "$b"; fi
}
