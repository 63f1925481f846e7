# ucx: a two-rank Open MPI job with the UCX PML, rank 0 on VM 1 (which
# runs mpirun), rank 1 on VM 2 (whose orted mpirun starts through rs-rsh
# and VM 2's rs-rshd: the guests have no ssh): rs-mpi-check, which checks
# its data and prints its own CHECK lines (named here
# "$UC_PAIRING/mpi-..."), then on VM 1:
#   mpirun          mpirun's exit status
#   mpi-pml-ucx     both ranks selected the UCX PML (pml_base_verbose)
#   mpi-ucx-lanes   each rank's UCX endpoint to the other rank (the
#                   ep_cfg lines of UCX_LOG_LEVEL=info) sends tagged
#                   messages and RMA (osc ucx) over verbs on its RDMA
#                   device, and no endpoint has a TCP lane
#   mpi-plugins     hwloc's plugins loaded (HWLOC_PLUGINS_VERBOSE), no
#                   Open MPI or PMIx component failed to open
# Debian's /etc/openmpi/openmpi-mca-params.conf turns UCX off (pml =
# ^ucx, osc = ^ucx,pt2pt): --mca pml ucx --mca osc ucx select it; --mca
# btl self leaves Open MPI no TCP or shared-memory path of its own.  (In
# mpirun's MPMD form, "-x VAR" belongs to the application context it is
# given in.)  A
# soft-RoCE VM 2's rank runs with UCX_UD_ETH_DGID_CHECK=n (ucx-common.sh),
# the adapters' with UCX's defaults.
uc_step
if [ "$RS_VM_INDEX" = 2 ]; then
    rsh=$(rs-rshd -d)
    uc_barrier "$uc_n" 120
    uc_barrier $((uc_n + 500)) 300
    kill "$rsh" 2>/dev/null
else
    out=/tmp/mpi.out
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    peer_env=''
    [ "${UC_PEER_SOFT:-0}" = 1 ] && peer_env='env UCX_UD_ETH_DGID_CHECK=n'
    uc_barrier "$uc_n" 120
    t0=$(uc_now)
    # shellcheck disable=SC2086
    HWLOC_PLUGINS_VERBOSE=1 PMIX_MCA_mca_base_component_show_load_errors=1 \
    timeout 150 mpirun --mca plm_rsh_agent rs-rsh \
        --mca pml ucx --mca osc ucx --mca btl self \
        --mca oob_tcp_if_include "${RS_IP%.*}.0/24" \
        --mca pml_base_verbose 10 --mca mca_base_component_show_load_errors 1 \
        -np 1 --host vm1 -x UCX_LOG_LEVEL=info -x HWLOC_PLUGINS_VERBOSE rs-mpi-check : \
        -np 1 --host vm2 -x UCX_LOG_LEVEL=info -x HWLOC_PLUGINS_VERBOSE $peer_env rs-mpi-check > $out 2>&1
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(uc_now)" 'BEGIN { printf "%.1f", b - a }')
    uc_barrier $((uc_n + 500)) 60
    # the log without the hwloc plugin lines, the CHECK lines renamed
    grep -v '^hwloc: ' $out | sed "s|^CHECK mpi-|CHECK $UC_PAIRING/mpi-|"
    if [ $rc = 0 ]; then
        ck "$UC_PAIRING/mpirun" ok "exit 0 in $secs s"
    else
        ck "$UC_PAIRING/mpirun" fail "exit $rc after $secs s: $(grep -iE 'error|abort|fail' $out | grep -v '^hwloc' | head -n 2 | tr '\n' ' ')"
    fi
    bad=''
    for h in vm1 vm2; do
        grep -q "^\[$h:[0-9]*\] select: component ucx selected" $out || bad="$bad $h"
    done
    if [ -z "$bad" ]; then
        ck "$UC_PAIRING/mpi-pml-ucx" ok "both ranks selected pml ucx"
    else
        ck "$UC_PAIRING/mpi-pml-ucx" fail "no 'select: component ucx selected' from$bad"
    fi
    # ep_cfg lines: "[TIME] [HOST:PID:THREAD] ucp_worker.c:N UCX INFO
    # ep_cfg[K]: tag(TL/DEV ...)" or "rma(...) amo_am(...)"; those with
    # self/ are each rank's endpoint to itself
    bad=''
    lanes=''
    for h in vm1 vm2; do
        d=rsess0:1
        [ $h = vm2 ] && [ "${UC_PEER_SOFT:-0}" = 1 ] && d=rxe0:1
        [ "$UC_PAIRING" = rxe-rxe ] && d=rxe0:1
        l=$(grep "\[$h:[0-9 ]*:[0-9a-f]*\].*ep_cfg\[" $out | grep -v 'self/' | sed 's/.*ep_cfg\[[0-9]*\]: //')
        echo "$l" | grep -q "^tag(.*rc_verbs/$d" || bad="$bad $h: no tag lane over rc_verbs/$d;"
        echo "$l" | grep -q "rma(.*rc_verbs/$d" || bad="$bad $h: no rma lane over rc_verbs/$d;"
        lanes="$lanes $h $(echo "$l" | tr '\n' ' ')"
    done
    grep -q 'ep_cfg.*tcp/' $out && bad="$bad a TCP lane: $(grep 'ep_cfg.*tcp/' $out | head -n 1)"
    if [ -z "$bad" ]; then
        ck "$UC_PAIRING/mpi-ucx-lanes" ok "$lanes"
    else
        ck "$UC_PAIRING/mpi-ucx-lanes" fail "$bad (lanes:$lanes)"
    fi
    bad=''
    for f in /usr/lib/x86_64-linux-gnu/hwloc/hwloc_*.so; do
        p=${f##*/}
        p=${p%.so}
        grep -q "Plugin descriptor \`$p' ready" $out || bad="$bad hwloc plugin $p not loaded;"
    done
    e=$(grep -E 'hwloc: Failed|component_repository_open|unable to open' $out | head -n 2 | tr '\n' ' ')
    if [ -z "$bad$e" ]; then
        ck "$UC_PAIRING/mpi-plugins" ok "hwloc plugins loaded, no MCA or PMIx component failed to open"
    else
        ck "$UC_PAIRING/mpi-plugins" fail "$bad $e"
    fi
fi
