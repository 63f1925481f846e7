# ucx: the overlay's programs and plugins load in this VM (each VM on its
# own).
#   ucx-info   ucx_info -d: every UCT module of /usr/lib/.../ucx loaded
#              (UCX_MODULE_LOG_LEVEL=info logs each "loading module" and
#              its "loaded"), rc_verbs and ud_verbs on this VM's RDMA
#              device, cma, the rdmacm connection manager
#   ompi-info  ompi_info and oshmem_info (the OpenSHMEM frameworks): every
#              MCA component file listed but btl/sm (in 4.1 a stub that
#              only registers when asked for, to say it became btl/vader),
#              none failed to open (mca_base_component_show_load_errors),
#              pml ucx and osc ucx among them
out=/tmp/ucx-info.out
UCX_MODULE_LOG_LEVEL=info UCX_LOG_LEVEL=info ucx_info -d > $out 2>&1
rc=$?
bad=''
for f in /usr/lib/x86_64-linux-gnu/ucx/libuct_*.so.0; do
    m=${f##*/libuct_}
    m=${m%.so.0}
    grep -q "loaded $f" $out || bad="$bad module $m not loaded;"
done
n=$(ls /usr/lib/x86_64-linux-gnu/ucx/libuct_*.so.0 | wc -l)
for t in rc_verbs ud_verbs; do
    awk -v t="$t" -v d="$UC_DEV" '$0 ~ "Transport: " t "$" { want = 1; next }
        want && /Device:/ { if ($NF == d) found = 1; want = 0 }
        END { exit !found }' $out || bad="$bad no $t on $UC_DEV;"
done
grep -q 'Transport: cma$' $out || bad="$bad no cma;"
grep -q 'Connection manager: rdmacm$' $out || bad="$bad no rdmacm;"
e=$(grep -E 'UCX +(ERROR|WARN)|failed' $out | head -n 2 | tr '\n' ' ')
[ -z "$e" ] || bad="$bad $e"
if [ $rc = 0 ] && [ -z "$bad" ]; then
    ck "$UC_PAIRING/ucx-info" ok "$n UCT modules loaded; $(grep -E '# +Transport:' $out | awk '{print $3}' | sort -u | tr '\n' ' ')on $UC_DEV and others"
else
    grep -vE 'module.c|parser.c' $out | head -n 40
    ck "$UC_PAIRING/ucx-info" fail "ucx_info -d exit $rc;$bad"
fi

out=/tmp/ompi-info.out
ompi_info --mca mca_base_component_show_load_errors 1 > $out 2>&1
rc=$?
oshmem_info --mca mca_base_component_show_load_errors 1 >> $out 2>&1 || rc=$((rc + 100))
bad=''
n=0
for f in /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_*.so; do
    c=${f##*/mca_}
    c=${c%.so}
    n=$((n + 1))
    [ "$c" = btl_sm ] && continue
    grep -q "MCA ${c%%_*}: ${c#*_} " $out || bad="$bad ${c%%_*}/${c#*_}"
done
e=$(grep -E 'component_repository_open|unable to open|cannot open' $out | head -n 2 | tr '\n' ' ')
if [ $rc = 0 ] && [ -z "$bad" ] && [ -z "$e" ] && [ $n -gt 50 ] &&
   grep -q 'MCA pml: ucx ' $out && grep -q 'MCA osc: ucx ' $out; then
    ck "$UC_PAIRING/ompi-info" ok "$(sed -n 's/^ *Open MPI: //p' $out | head -n 1): $n MCA components, all listed but btl/sm, pml ucx and osc ucx among them"
else
    grep -E 'component_repository_open|unable to open|cannot open' $out | head -n 20
    ck "$UC_PAIRING/ompi-info" fail "ompi_info, oshmem_info exit $rc; $n component files; not listed:${bad:- none}; $e"
fi
