# verbs: on-demand paging.  The adapter's side uses ODP everywhere;
# soft-RoCE (Debian's 6.12 rdma_rxe has no ODP) is only ever the peer.
#  - ibv_devinfo -v shows the adapter's ODP caps;
#  - rsv-odp: VM 2 writes and reads VM 1's implicit ODP MR while VM 1
#    drops the pages (tests/guest/progs/rsv-odp.c);
#  - ibv_rc_pingpong -c with -o (explicit ODP), then -O -P (implicit ODP
#    with a prefetch), the adapter's side only;
#  - perftest ib_write_bw, ib_read_bw, ib_send_bw (64 KiB) both ways,
#    --odp on the adapter's side; between two adapters ib_write_bw
#    without --odp too, for comparison;
#  - `rdma statistic` of the adapter shows the faults it took.
case $dev in rsess*) odp_self=1 ;; *) odp_self=0 ;; esac
gi=$(gid_of "$RS_IP")

if [ $odp_self = 1 ]; then
    caps=$(ibv_devinfo -v -d "$dev" 2>&1 | awk '
        /^\t[a-z_]*odp_caps:/ { s = $1; next }
        /^\t\t\t\t\t/ && s != "" { printf "%s%s ", s, $1; next }
        { s = "" }')
    want="general_odp_caps:ODP_SUPPORT general_odp_caps:ODP_SUPPORT_IMPLICIT rc_odp_caps:SUPPORT_SEND rc_odp_caps:SUPPORT_RECV rc_odp_caps:SUPPORT_WRITE rc_odp_caps:SUPPORT_READ rc_odp_caps:SUPPORT_ATOMIC rc_odp_caps:SUPPORT_SRQ uc_odp_caps:NO ud_odp_caps:SUPPORT_SEND "
    case "$caps" in
    "$want"*) ck "$VB_PAIRING/odp/devinfo" ok "ibv_devinfo -v: $caps" ;;
    *) ck "$VB_PAIRING/odp/devinfo" fail "ibv_devinfo -v: '$caps', expected '$want'" ;;
    esac
fi

vb_pair odp rsv-odp

# odp_pingpong NAME ADAPTER_FLAGS: ibv_rc_pingpong -c, VM 1 serving.
odp_pingpong()
{
    local out=/tmp/odp-pp.out rc f= ok=fail
    vb_step
    [ $odp_self = 1 ] && f=$2
    rs_barrier $((500 + vb_n)) 150
    if [ "$RS_VM_INDEX" = 1 ]; then
        timeout 120 ibv_rc_pingpong -d "$dev" -g "$gi" -p $((19000 + vb_n)) -n 100 -s 4096 -c $f > $out 2>&1
        rc=$?
    else
        vb_client $out 120 ibv_rc_pingpong -d "$dev" -g "$gi" -p $((19000 + vb_n)) -n 100 -s 4096 -c $f "$(vb_vm1)"
        rc=$?
    fi
    cat $out
    [ $rc = 0 ] && grep -q 'iters in' $out && ! grep -qi "couldn't prefetch" $out && ok=ok
    ck "$VB_PAIRING/odp/$1" $ok "ibv_rc_pingpong -c ${f:-(no ODP)}: exit $rc, $(grep -E 'iters in|prefetch|ODP|on.demand' $out | head -n 2 | tr '\n' ' ')"
}
odp_pingpong rc-pingpong-odp -o
odp_pingpong rc-pingpong-iodp "-O -P"

# odp_perf NAME PROG SERVER_VM ODP(1|0) ARGS...: perftest between the
# VMs, --odp on an adapter's side when ODP is 1; the result line (the
# client's, and the server's of a WRITE or SEND test) is the check's.
odp_perf()
{
    local name=$1 prog=$2 srv=$3 use=$4 out=/tmp/odp-perf.out rc a f= why= r role
    shift 4
    vb_step
    [ $odp_self = 1 ] && [ "$use" = 1 ] && f=--odp
    a="-d $dev -x $gi -p $((19000 + vb_n)) -F -u 18 $* $f"
    rs_barrier $((500 + vb_n)) 150
    if [ "$RS_VM_INDEX" = "$srv" ]; then
        role=server
        timeout 150 $prog $a > $out 2>&1
        rc=$?
    else
        role=client
        vb_client $out 150 $prog $a "$RS_PEER"
        rc=$?
    fi
    r=$(grep -E '^ *[0-9]+ +[0-9]+ +([0-9]|inf|-?nan)' $out | head -n 1 | tr -s ' ')
    if [ $rc != 0 ]; then why="exit status $rc"
    elif [ -z "$r" ] && { [ $role = client ] || [ $prog != ib_read_bw ]; }; then why="no result line"
    fi
    if [ -z "$why" ]; then
        ck "$VB_PAIRING/odp/$name" ok "$prog ${f:-(no ODP)} $*, $role:$r"
    else
        ck "$VB_PAIRING/odp/$name" fail "$prog ${f:-(no ODP)} $*, $role: $why: $(grep -v '^ *$' $out | tail -n 4 | tr '\n' ' ' | cut -c1-400)"
        sed 's/^/    /' $out | tail -n 25
    fi
}
for p in ib_write_bw ib_read_bw ib_send_bw; do
    o=
    # perftest 4.5 takes the peer's outstanding-read count for its own QP
    [ $p = ib_read_bw ] && o="-o 16"
    odp_perf "$p-server1" $p 1 1 -n 200 -s 65536 $o
    odp_perf "$p-server2" $p 2 1 -n 200 -s 65536 $o
done
if [ "$VB_PAIRING" = adapter-adapter ]; then
    odp_perf ib_write_bw-pinned ib_write_bw 1 0 -n 200 -s 65536
fi

if [ $odp_self = 1 ]; then
    st=$(rdma statistic show link "$dev/1" 2>&1)
    echo "rdma statistic show link $dev/1: $st"
    cnt() { echo "$st" | tr -s ' ' '\n' | awk -v n="$1" 'p { print; exit } $0 == n { p = 1 }'; }
    f=$(cnt odp_faults) h=$(cnt odp_faults_handled) i=$(cnt odp_invalidations) ii=$(cnt odp_invalidations_issued)
    p=$(cnt odp_pauses_sent)
    # VM 1's rsv-odp dropped pages under its MR: invalidations too.
    if [ "${f:-0}" -gt 0 ] && [ "${h:-0}" -gt 0 ] && [ -n "$i" ] && [ "$i" = "$ii" ] &&
        { [ "$i" -gt 0 ] || [ "$RS_VM_INDEX" != 1 ]; }; then
        ck "$VB_PAIRING/odp/rdma-statistic" ok "odp_faults $f, odp_faults_handled $h, odp_invalidations $i (issued $ii), odp_pauses_sent $p"
    else
        ck "$VB_PAIRING/odp/rdma-statistic" fail "odp_faults '$f', odp_faults_handled '$h', odp_invalidations '$i' (issued '$ii')"
    fi
fi
