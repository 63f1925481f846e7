# Guest side of bench/run-bench.sh (sent to both VMs of a pair through
# scripts/launch-vms.sh --cmd, after a few variable assignments and
# tests/guest/in-guest/lib.sh):
#   B_STEPS   the steps, one per line: "NAME REP TIMEOUT"
#   B_DUR     perftest -D seconds for the bandwidth and message-rate tests
#   B_LATN    perftest -n iterations for the latency tests
#   B_VSHORT  rping -C count of the short verified transfer (every repetition)
#   B_VLONG   rping -C count of the long verified transfer (once)
#   B_VSIZE   rping -S size of both
#   B_ODPN    perftest -n iterations of the cold ODP test
#   B_NEED_TSC=1  stop (BENCH-REBOOT) unless both VMs' clocksource is tsc
#   B_MTU     the Ethernet MTU (the RoCE path MTU follows: 9000 gives 4096)
# VM 1 is the server, VM 2 the client.  Both walk the same steps and meet at
# a TCP barrier (busybox nc) before each.  Per step each VM prints
#   BENCH-STEP K NAME REP ROLE rc=RC secs=S
#   | <the program's output>
#   BENCH-END K
# and the host parses the client's (bench/bench.py); the client prints
# "BENCH-BEGIN K ATTEMPT" as its program starts (bench/cpu-sampler.py).  secs is the wall time
# of the program's run that counted (the client's last attempt), from
# /proc/uptime.  The ODP steps (*_odp*) run only when both VMs' devices
# have ODP for RC WRITE (ibv_devinfo -v); otherwise both print rc=no-odp
# and skip them.  After an ODP run each VM appends the change of its
# device's ODP counters (rdma statistic) as "| odp-counters NAME=N ...".
[ -n "${B_MTU:-}" ] && { ip link set "$RS_IFACE" mtu "$B_MTU" || echo "BENCH-WARN vm$RS_VM_INDEX: cannot set MTU $B_MTU on $RS_IFACE"; }
for t in $(seq 1 20); do gi=$(gid_of "$RS_IP") && break; sleep 0.5; done
csf=/sys/devices/system/clocksource/clocksource0/current_clocksource
cs=$(cat $csf 2>/dev/null)
amtu=$(ibv_devinfo -d "$dev" 2>/dev/null | awk '/active_mtu/ { print $2; exit }')
# ODP: the device offers it (general_odp_caps ODP_SUPPORT) for RC WRITEs
# (rc_odp_caps SUPPORT_WRITE), what perftest's --odp needs here
odp=$(ibv_devinfo -v -d "$dev" 2>/dev/null | awk '
    /^\t[a-z_]*odp_caps:/ { s = $1; next }
    /^\t\t\t\t\t/ && s != "" { c[s $1] = 1; next }
    { s = "" }
    END { print (c["general_odp_caps:ODP_SUPPORT"] && c["rc_odp_caps:SUPPORT_WRITE"]) ? "yes" : "no" }')
echo "BENCH-INFO vm$RS_VM_INDEX device=$dev gid_index=$gi ip=$RS_IP peer=$RS_PEER mtu=$(cat /sys/class/net/$RS_IFACE/mtu) roce_mtu=$amtu kernel=$(uname -r) clocksource=$cs odp=$odp cpu_mhz=$(awk -F': ' '/^cpu MHz/ { print $2; exit }' /proc/cpuinfo)"
now() { awk '{ print $1 }' /proc/uptime; }
# send PORT MESSAGE: to the peer's listener (retrying until it listens, 60 s)
send()
{
    local end=$(( $(date +%s) + 60 ))
    until echo "$2" | nc -w 2 "$RS_PEER" "$1" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$end" ] || return 1
        sleep 0.3
    done
}
# The clocksource: a TCG guest that boots on a busy host may find its TSC
# "unstable" against jiffies and fall back to acpi_pm, an emulated I/O
# port.  That slows every clock read of the guest kernel (soft-RoCE's
# network stack reads it often) and makes perftest's clock sampling fail.
# Both VMs must be on tsc, or the pair is booted again (B_NEED_TSC=1; the
# host gives up after a few boots and then records what it got).  The
# same exchange settles the pair's ODP: yes only if both VMs have it.
if [ "$RS_VM_INDEX" = 1 ]; then
    r=$(timeout 90 nc -l -p 29998 </dev/null 2>/dev/null | head -n 1)
    pcs=${r%% *} podp=${r#* }
    go=go
    [ "${B_NEED_TSC:-0}" = 1 ] && { [ "$cs" != tsc ] || [ "$pcs" != tsc ]; } && go=reboot
    [ "$odp" = yes ] && [ "$podp" = yes ] || odp=no
    send 29997 "$go $odp"
else
    send 29998 "$cs $odp"
    r=$(timeout 90 nc -l -p 29997 </dev/null 2>/dev/null | head -n 1)
    go=${r%% *}
    [ "${r#* }" = yes ] || odp=no
fi
if [ "$go" = reboot ]; then
    echo "BENCH-REBOOT vm$RS_VM_INDEX clocksource=$cs"
    exit 0
fi
# run_for SECONDS PROGRAM ARGS...: output in $out, exit status in $rc
# ("timeout", or "stuck" for a process that SIGKILL does not end: it is left
# behind, not waited for), wall time in $secs.  A server also ends 5 s
# after $donef appears (its client is done).
alive() { [ -e /proc/$1 ] && ! grep -q '^[0-9]* (.*) Z' /proc/$1/stat 2>/dev/null; }
run_for()
{
    local end=$(( $(date +%s) + $1 )) p fin= s0
    shift
    s0=$(now)
    "$@" </dev/null >"$out" 2>&1 &
    p=$!
    while alive $p; do
        [ -z "$fin" ] && [ -n "$donef" ] && [ -e "$donef" ] && fin=$(( $(date +%s) + 5 ))
        if [ "$(date +%s)" -ge "$end" ] || { [ -n "$fin" ] && [ "$(date +%s)" -ge "$fin" ]; }; then
            kill $p 2>/dev/null; sleep 1; kill -9 $p 2>/dev/null; sleep 2
            if alive $p; then rc=stuck; echo "(pid $p: $(cat /proc/$p/wchan 2>/dev/null), state $(cut -d' ' -f3 /proc/$p/stat 2>/dev/null), not ended by SIGKILL)" >> "$out"
            else wait $p; rc=timeout; fi
            secs=$(awk -v a="$s0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
            return
        fi
        sleep 0.1
    done
    wait $p; rc=$?
    secs=$(awk -v a="$s0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
}
# dev_counters: "NAME VALUE" lines of the device's and the driver's
# counters a step reports (rdma statistic; ib_core keeps what it read for
# 10 ms): ODP, doorbells (MMIO writes and posts taken from doorbell
# records) and the payload bytes the device wrote to guest RAM.  Devices
# without them (soft-RoCE) print none.
dev_counters()
{
    rdma statistic show link "$dev/1" 2>/dev/null | tr -s ' ' '\n' | awk '
        p { print n, $0; p = 0 }
        /^(odp_faults|odp_resolved_pages|odp_pauses_sent|odp_pauses_rcvd|odp_resumes_rcvd|rnr_naks_rcvd|odp_faults_handled|odp_fault_pages_mapped|db_mmio_writes|db_record_pickups|ram_dma_write_bytes|roce_tx_packets)$/ { n = $0; p = 1 }'
}
pf="-d $dev -x $gi -F -u 18"
# A perftest client whose timestamp-frequency sampling failed ("Correlation
# coefficient r^2: ... < 0.9": a TCG guest on a busy host is descheduled
# during the sample) computes with 0 MHz and reports 0 MB/s or inf usec:
# the step is then run again, both sides, at most 5 attempts.
step()  # K NAME REP TIMEOUT
{
    k=$1 name=$2 rep=$3 tmo=$4 attempt=0
    while :; do
        attempt=$((attempt + 1))
        run_step $((k * 8 + attempt))
        [ "$verdict" = retry ] || break
    done
}
run_step()  # ID: barrier, ports; prints the step's result
{
    id=$1 port=$((18000 + $1))
    [ -n "$gone" ] || barrier "$id" $(( (tmo > ptmo ? tmo : ptmo) + 60 )) || gone=$k
    ptmo=$tmo verdict=done
    if [ -n "$gone" ]; then
        echo "BENCH-STEP $k $name $rep $role0 rc=peer-gone secs=0 attempt=$attempt"
        echo "| the peer did not reach step $gone"
        echo "BENCH-END $k"
        return
    fi
    case $name in
    *_odp*)
        if [ "$odp" != yes ]; then
            echo "BENCH-STEP $k $name $rep $role0 rc=no-odp secs=0 attempt=$attempt"
            echo "| skipped: no ODP for RC WRITE on $dev or on the peer's device (ibv_devinfo -v)"
            echo "BENCH-END $k"
            return
        fi ;;
    esac
    case $name in
    write_bw_64k) prog=ib_write_bw a="$pf -p $port -D $B_DUR -s 65536" ;;
    # ODP on both sides: warm (the pages fault in the -D run's warm-up,
    # which perftest does not count), and cold (a fresh process, whose
    # first WRITEs fault every page they touch on both sides, counted)
    write_bw_64k_odp)      prog=ib_write_bw a="$pf -p $port -D $B_DUR -s 65536 --odp" ;;
    write_bw_64k_odp_cold) prog=ib_write_bw a="$pf -p $port -n $B_ODPN -s 65536 --odp" ;;
    write_bw_4k)  prog=ib_write_bw a="$pf -p $port -D $B_DUR -s 4096" ;;
    # -o 16: perftest 4.5 takes the peer's outstanding-read count for its
    # own QP; soft-RoCE's is 128, more than the adapter's 16
    read_bw_64k)  prog=ib_read_bw a="$pf -p $port -D $B_DUR -s 65536 -o 16" ;;
    send_bw_4k)   prog=ib_send_bw a="$pf -p $port -D $B_DUR -s 4096" ;;
    msg_rate)     prog=ib_write_bw a="$pf -p $port -D $B_DUR -s 64 -q 4" ;;
    write_lat)    prog=ib_write_lat a="$pf -p $port -n $B_LATN -s 8" ;;
    send_lat)     prog=ib_send_lat a="$pf -p $port -n $B_LATN -s 8" ;;
    read_lat)     prog=ib_read_lat a="$pf -p $port -n $B_LATN -s 8 -o 16" ;;
    # -e: both sides sleep on CQ events instead of spinning, so the two
    # vCPUs do not compete with the QEMU main loops for the host's cores
    # (perftest has no event mode for WRITE)
    send_lat_ev)  prog=ib_send_lat a="$pf -p $port -n $B_LATN -s 8 -e" ;;
    read_lat_ev)  prog=ib_read_lat a="$pf -p $port -n $B_LATN -s 8 -o 16 -e" ;;
    verify)       prog=rping a="-V -S $B_VSIZE -C $B_VSHORT -p $port" ;;
    transfer_1g)  prog=rping a="-V -S $B_VSIZE -C $B_VLONG -p $port" ;;
    *) echo "BENCH-STEP $k $name $rep $role0 rc=unknown-step secs=0 attempt=$attempt"; echo "BENCH-END $k"; return ;;
    esac
    out=/tmp/bench.$id.out
    c0=
    case $prog in ib_*) c0=$(dev_counters) ;; esac
    if [ "$RS_VM_INDEX" = 1 ]; then
        role=server
        [ "$prog" = rping ] && a="-s -a $RS_IP $a"
        # the client says when it is done: a server still waiting then
        # (a failed client) is stopped after a grace period
        donef=/tmp/bench.done.$id
        ( nc -l -p $((31000 + id)) </dev/null >/dev/null 2>&1 && touch $donef ) &
        run_for $((tmo + 30)) $prog $a
        nc -w 2 127.0.0.1 $((31000 + id)) </dev/null >/dev/null 2>&1
        # the client's verdict: "retry" or "done"
        verdict=$(timeout $((tmo + 60)) nc -l -p $((32000 + id)) </dev/null 2>/dev/null | head -n 1)
    else
        role=client
        [ "$prog" = rping ] && a="-c -a $RS_PEER $a" || a="$a $RS_PEER"
        donef=
        sleep 1
        t0=$(date +%s)
        # the host's CPU accounting of the step starts here (cpu-sampler.py)
        echo "BENCH-BEGIN $k $attempt"
        # until the server listens: TCP (perftest) or rdma_cm (rping)
        for try in 1 2 3 4 5 6 7 8; do
            run_for "$tmo" $prog $a
            [ $rc != 0 ] && [ $(( $(date +%s) - t0 )) -lt 20 ] &&
                grep -qE "Couldn't connect to|Unable to open file descriptor|RDMA_CM_EVENT_REJECTED|RDMA_CM_EVENT_UNREACHABLE|connect error" "$out" || break
            sleep 2
        done
        nc -w 2 "$RS_PEER" $((31000 + id)) </dev/null >/dev/null 2>&1
        case $prog in
        ib_*) [ $attempt -lt 5 ] && grep -qF 'Correlation coefficient r^2' "$out" && verdict=retry ;;
        esac
        # (a retry only if the server heard it, or the two would part ways)
        send $((32000 + id)) "$verdict" || verdict=done
    fi
    # the change of this VM's counters over its own run
    [ -n "$c0" ] && printf '%s\n%s\n' "$c0" "$(dev_counters)" | awk '
        NF < 2 { next }
        !($1 in a) { a[$1] = $2; o[++n] = $1; next }
        { d[$1] = $2 - a[$1] }
        END { printf "dev-counters"; for (i = 1; i <= n; i++) printf " %s=%s", o[i], (o[i] in d) ? d[o[i]] : "?"; print "" }' >> "$out"
    echo "BENCH-STEP $k $name $rep $role rc=$rc secs=$secs attempt=$attempt${verdict:+ verdict=$verdict}"
    echo "| $prog $a"
    # the whole output of perftest (about 30 lines); rping -V without -v
    # prints only "client DISCONNECT EVENT..." and errors
    head -c 20000 "$out" | sed 's/^/| /'
    echo "BENCH-END $k"
}
role0=$([ "$RS_VM_INDEX" = 1 ] && echo server || echo client)
k=0 ptmo=0 gone=
while read -r name rep tmo; do
    [ -n "$name" ] || continue
    k=$((k + 1))
    step "$k" "$name" "$rep" "$tmo"
done <<STEPS
$B_STEPS
STEPS
b=$(dmesg | grep -E 'WARNING|BUG|Oops|Call Trace' | head -n 3 | tr '\n' ' ')
echo "BENCH-DMESG ${b:-clean}"
echo "BENCH-CLOCK clocksource=$(cat $csf 2>/dev/null) $(dmesg | grep -iE 'clocksource.*unstable|Marking TSC' | head -n 2 | tr '\n' ' ')"
exit 0
