#!/bin/bash
# Benchmark the rdma-session adapter against Linux soft-RoCE (rdma_rxe over
# virtio-net-pci), side by side in one run on the same machine.
#
# Two boots of scripts/launch-vms.sh, one after the other, with the same
# settings (TCG, -smp 1, 512 MiB, the same guest image, -netdev stream
# between the two VMs, Ethernet MTU 9000 so RoCE MTU 4096): an adapter
# pair (-device rdma-session, device rsess0) and a soft-RoCE pair (--soft-roce, device rxe0).  In each, VM 1 is
# the server and VM 2 the client of every program (perftest 4.5 from Debian
# with -F -x GID -d DEV -p PORT -u 18; rping from rdma-core 56.1):
#   write_bw_64k  ib_write_bw -s 65536 -D DUR     BW average MB/s, MsgRate Mpps
#                 (DUR 10 s, N 2000 iterations; less with --quick, --smoke)
#   write_bw_64k_odp       ib_write_bw -s 65536 -D DUR --odp (both sides):
#                 on-demand paging, warm (the pages fault in the warm-up)
#   write_bw_64k_odp_cold  ib_write_bw -s 65536 -n 100 --odp (both sides):
#                 a fresh process each time, every page faults: the cold
#                 cost.  Both ODP rows run only where both devices have
#                 ODP (the adapter; not soft-RoCE, "n/a (no ODP)") and are
#                 compared with the adapter's write_bw_64k (ODP/pinned)
#   write_bw_4k   ib_write_bw -s 4096 -D DUR      BW average MB/s, MsgRate Mpps
#   read_bw_64k   ib_read_bw -s 65536 -o 16 -D DUR  BW average MB/s, MsgRate Mpps
#   send_bw_4k    ib_send_bw -s 4096 -D DUR       BW average MB/s, MsgRate Mpps
#   msg_rate      ib_write_bw -s 64 -q 4 -D DUR   MsgRate Mpps (4 QPs)
#   write_lat     ib_write_lat -s 8 -n N          t_typical, t_avg usec
#   send_lat      ib_send_lat -s 8 -n N           t_typical, t_avg usec
#   read_lat      ib_read_lat -s 8 -o 16 -n N     t_typical, t_avg usec
#   send_lat_ev, read_lat_ev  the same with -e: both sides sleep on CQ
#                 (send_lat_ev only when named, or with "lat": soft-RoCE's
#                 ib_send_lat -e hangs now and then)
#                 events instead of busy-polling; on a 2-core host two
#                 spinning vCPUs and two QEMU main loops are four busy
#                 threads, and the polling figures then measure the host's
#                 time slices more than the device (perftest has no event
#                 mode for WRITE)
#   verify        rping -V -S 65535 -C 256 after every repetition: 16 MiB
#                 read by the server and written back (32 MiB moved), the
#                 client compares every byte; MB/s, time
#   transfer_1g   rping -V -S 65535 -C 8192 once per pair: 512 MiB read by
#                 the server from the client and written back, 1 GiB moved
#                 in all, every byte compared; MB/s (both directions), time
# Each perftest program and the short verified transfer run -r times
# (repetitions); the table shows the median and [min-max].
#
# Usage: bench/run-bench.sh [options]
#   -r N           repetitions (default 3)
#   --quick        1 repetition, shorter tests (-D 2, -n 300, rping -C 64
#                  and -C 1024): about 3 minutes
#   --smoke        for CI: 1 repetition, -D 1, -n 100, rping -C 32 and
#                  -C 256, no chart unless gnuplot is installed: about
#                  2 minutes; exits non-zero on any error or failed check
#   --only LIST    only these benchmarks (comma or space separated names
#                  from the list above; "bw", "lat", "odp" select groups,
#                  "odp" the two ODP rows and write_bw_64k, their pinned
#                  reference); the per-repetition verify runs whenever a
#                  perftest program does
#   --out DIR      output directory (default build/bench/<timestamp>; the
#                  last run is linked as build/bench/last)
#   --no-build     do not run scripts/build-qemu.sh
#   --segment S    stream (default: -netdev stream, a Unix socket with flow
#                  control) or dgram (-netdev dgram, a UDP socket pair,
#                  which loses frames when its receive buffer overflows)
#   --mtu N        the guests' Ethernet MTU (default 9000: RoCE MTU 4096 on
#                  both devices; 1500: RoCE MTU 1024)
#   --adapter-args "ARGS"  extra QEMU arguments for the adapter pair's VMs,
#                  e.g. "-global rdma-session.x-window=256" (the table's
#                  machine line shows them)
#   --variant NAME LABEL "LAUNCH-ARGS" "QEMU-ARGS"  one more adapter pair,
#                  booted after the two with these launch-vms.sh and QEMU
#                  arguments (and --adapter-args): a column of its own and
#                  its ratio to the adapter pair.  Repeatable.  Two have
#                  bars of their own (bench/README.md): NAME adapter-shm,
#                  the local fabric; adapter-dbr-off, doorbell records off
#   --shm          the variant adapter-shm (see "Local fabric" in
#                  docs/system/rdma-session.rst)
#   --dbr-off      the variant adapter-dbr-off: the adapter without
#                  doorbell records, the wire path before them
#   --pin          pin each VM's vCPU to one core and the rest of its QEMU
#                  (main loop, workers) to the other, VM 1's vCPU on core
#                  0 and VM 2's on core 1 (bench/cpu-sampler.py; both
#                  pairs): a spinning vCPU cannot take its own main loop's
#                  core
#   --device       also the device-only benchmark (no vCPU; see
#                  tests/qtest/rdma-session/devbench.c): RS_DEVBENCH_MIB
#                  per case (default 256, 64 with --quick, 8 with --smoke)
# Host CPU: bench/cpu-sampler.py reads both QEMUs' user + system time as
# each step's client program starts and ends (cpu-PAIR.jsonl); the rping
# rows show the CPU time per GB moved.
# Output (in DIR): results.csv, results.json (medians, ranges, every
# repetition's values, the machine), table.txt, chart.png (gnuplot-nox,
# installed with scripts/apt-private.sh), adapter.log / soft-roce.log (the
# launch-vms output), vms-*/ (serial logs: every program's full output,
# which bench/bench.py parses), table.txt (the terminal table).
# Exit status: 0 if every benchmark produced its numbers and every verified
# transfer passed, 1 otherwise (a "FAIL" or "ERROR" cell), 2 on a setup
# error.  The two performance bars (bench/README.md) are printed as met /
# not met and do not change the exit status.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
: "${RS_BUILD:=$top/build}"
export RS_BUILD
py=/usr/bin/python3

die() { printf 'run-bench: error: %s\n' "$*" >&2; exit 2; }
say() { printf 'run-bench: %s\n' "$*"; }

reps=3 mode=full out='' only='' build=1 reps_given=0 segment=stream mtu=9000
adapter_args='' variants=() device=0
while [ $# -gt 0 ]; do
    case $1 in
    -r) reps=${2:?-r needs a number}; reps_given=1; shift ;;
    --quick) mode=quick ;;
    --smoke) mode=smoke ;;
    --only) only=${2:?--only needs a list}; shift ;;
    --out) out=${2:?--out needs a directory}; shift ;;
    --no-build) build=0 ;;
    --segment) segment=${2:?--segment needs stream or dgram}; shift ;;
    --mtu) mtu=${2:?--mtu needs a number}; shift ;;
    --adapter-args) adapter_args=${2?--adapter-args needs arguments}; shift ;;
    --variant)
        [ $# -ge 5 ] || die "--variant needs NAME LABEL LAUNCH-ARGS QEMU-ARGS"
        case $2 in adapter|soft-roce|*[!a-z0-9-]*|'') die "--variant: NAME of [a-z0-9-], not '$2'" ;; esac
        variants+=("$2" "$3" "$4" "$5"); shift 4 ;;
    --shm) variants+=(adapter-shm "adapter, shared memory" "--local-fabric @OUT@/fabric" "") ;;
    --dbr-off) variants+=(adapter-dbr-off "adapter, no doorbell records" "" "-global rdma-session.db-record=off") ;;
    --device) device=1 ;;
    --pin) export RS_BENCH_PIN=1 ;;
    -h|--help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
    shift
done
case $reps in ''|*[!0-9]*|0) die "-r needs a positive number" ;; esac
case $segment in stream|dgram) ;; *) die "--segment: stream or dgram, not '$segment'" ;; esac
case $mtu in ''|*[!0-9]*) die "--mtu needs a number" ;; esac
[ "$mtu" -ge 1280 ] && [ "$mtu" -le 9000 ] || die "--mtu: 1280 to 9000"

# Sizes of the tests (odpn: the cold ODP test's iterations, the same in
# every mode, so that its cold cost weighs the same).  The full run (3
# repetitions, both pairs) took about 9 minutes on an idle 2-core host
# under TCG (14 on a loaded one), the soft-RoCE pair 55% of it, before the
# two ODP rows (about a minute more, on the adapter pair).
vsize=65535 odpn=100
case $mode in
full)  dur=10 latn=2000 vshort=256 vlong=8192 ;;
quick) dur=2 latn=300 vshort=64 vlong=1024 ;;
smoke) dur=1 latn=100 vshort=32 vlong=256 ;;
esac
[ $mode != full ] && [ $reps_given = 0 ] && reps=1

all_perf="write_bw_64k write_bw_64k_odp write_bw_64k_odp_cold write_bw_4k read_bw_64k send_bw_4k msg_rate write_lat send_lat read_lat send_lat_ev read_lat_ev"
sel=''
if [ -z "$only" ]; then
    # send_lat_ev only when named: soft-RoCE's ib_send_lat -e hung in 2
    # of 3 repetitions here (bench/README.md)
    sel="${all_perf/ send_lat_ev/} verify transfer_1g"
else
    for b in ${only//,/ }; do
        case $b in
        bw) sel+=" write_bw_64k write_bw_4k read_bw_64k send_bw_4k msg_rate" ;;
        lat) sel+=" write_lat send_lat read_lat send_lat_ev read_lat_ev" ;;
        odp) sel+=" write_bw_64k write_bw_64k_odp write_bw_64k_odp_cold" ;;
        write_bw_64k|write_bw_64k_odp|write_bw_64k_odp_cold|write_bw_4k|read_bw_64k|send_bw_4k|msg_rate|write_lat|send_lat|read_lat|send_lat_ev|read_lat_ev|verify|transfer_1g)
            sel+=" $b" ;;
        *) die "--only: unknown benchmark '$b' (names: $all_perf verify transfer_1g, or bw, lat, odp)" ;;
        esac
    done
fi
sel=" $(printf '%s\n' $sel | awk '!seen[$0]++' | tr '\n' ' ')"
has() { case " $sel " in *" $1 "*) return 0 ;; esac; return 1; }
perf=''
for b in $all_perf; do has "$b" && perf+=" $b"; done
[ -n "$perf" ] && ! has verify && sel+=" verify"

# Steps "NAME REP TIMEOUT" (the guest's timeout of the client's run; the
# server gets 30 s more).  Timeouts allow for soft-RoCE under TCG on a
# loaded host, several times the measured times: a hung program costs
# that long and shows as an error.
steps=''
for rep in $(seq 1 "$reps"); do
    for b in $perf; do
        case $b in
        *_lat|*_lat_ev) steps+="$b $rep $((60 + latn * 12 / 100))"$'\n' ;;  # ~1 ms/iteration on soft-RoCE
        *_odp_cold) steps+="$b $rep 60"$'\n' ;;
        *) steps+="$b $rep $((60 + dur * 3))"$'\n' ;;
        esac
    done
    # rping: 15-60 ms per 64 KiB iteration measured (soft-RoCE the slower)
    has verify && steps+="verify $rep $((60 + vshort * 15 / 100))"$'\n'
done
has transfer_1g && steps+="transfer_1g 1 $((120 + vlong * 15 / 100))"$'\n'
nsteps=$(grep -c . <<< "$steps")
[ "$nsteps" -gt 0 ] || die "nothing to run"
# launch-vms' own limit: every step's timeout plus the barriers' slack
tmo_all=$(awk '{ s += $3 + 40 } END { print s + 120 }' <<< "$steps")

stamp=$(date +%Y%m%d-%H%M%S)
if [ -z "$out" ]; then
    out=$RS_BUILD/bench/$stamp
    mkdir -p "$out" || die "cannot create $out"
    ln -sfn "$stamp" "$RS_BUILD/bench/last"
else
    mkdir -p "$out" || die "cannot create $out"
    out=$(cd "$out" && pwd)
    mkdir -p "$RS_BUILD/bench"
    ln -sfn "$out" "$RS_BUILD/bench/last"
fi
t_start=$(date +%s)
say "$mode run, $reps repetition(s), benchmarks:$(printf ' %s' $sel); output in $out"
say "settings: -netdev $segment, Ethernet MTU $mtu; perftest -D $dur (bandwidth, message rate), -n $latn (latency)$(has write_bw_64k_odp_cold && echo ", -n $odpn (cold ODP)"); rping -S $vsize -C $vshort (every repetition), -C $vlong (once)"

# --- Build ------------------------------------------------------------------
if [ $build = 1 ]; then
    say "building QEMU (scripts/build-qemu.sh qemu-system-x86_64; log in $out/build.log)"
    targets=(qemu-system-x86_64)
    [ $device = 1 ] && targets+=(tests/qtest/rdma-session/rdma-session-test)
    "$top/scripts/build-qemu.sh" "${targets[@]}" > "$out/build.log" 2>&1 ||
        { tail -n 20 "$out/build.log"; die "QEMU build failed (see $out/build.log)"; }
fi
qemu=$RS_BUILD/qemu/qemu-system-x86_64
[ -x "$qemu" ] || die "$qemu does not exist: run scripts/build-qemu.sh"
# the chart: gnuplot-nox (pngcairo), from Debian through the private apt
# configuration; not for --smoke, which draws it only if gnuplot is there
if [ $mode != smoke ] && ! command -v gnuplot >/dev/null 2>&1; then
    say "installing gnuplot-nox for the chart (scripts/apt-private.sh)"
    ( . "$top/scripts/apt-private.sh" && apt_need "" gnuplot-nox ) > "$out/gnuplot-install.log" 2>&1 ||
        say "warning: gnuplot-nox could not be installed (see $out/gnuplot-install.log): no chart"
fi

# The guests' clock: tsc=reliable keeps the kernel on the TSC.  Without it
# a guest that boots on a busy host often finds its TSC "unstable" against
# jiffies (TCG loses ticks) and falls back to acpi_pm, an emulated I/O port:
# every clock read of the guest kernel (soft-RoCE's network stack reads it
# often) gets much slower and perftest's clock sampling fails, so the two
# pairs would not run on equal terms.  Under TCG the guest's TSC is the
# host's, so trusting it is right.  (The guests still check: a pair not on
# tsc is booted again.)
export RS_KERNEL_ARGS=${RS_KERNEL_ARGS-tsc=reliable}

# --- Machine -----------------------------------------------------------------
{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "nproc=$(nproc)"
    echo "cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    echo "host_kernel=$(uname -sr)"
    echo "host_os=$(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}")"
    echo "mem_total=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "qemu_version=$("$qemu" --version | head -n 1)"
    echo "git_commit=$(git -C "$top" rev-parse HEAD 2>/dev/null)$(git -C "$top" diff --quiet HEAD -- hw include guest-driver scripts 2>/dev/null || echo '+dirty')"
    echo "accel=${RS_ACCEL:-tcg}"
    echo "segment=-netdev $segment (launch-vms.sh --$segment), Ethernet MTU $mtu${adapter_args:+, adapter VMs with $adapter_args}${RS_BENCH_PIN:+, QEMU threads pinned (--pin)}"
    echo "mtu=$mtu"
    echo "guest_kernel_args=$RS_KERNEL_ARGS"
    echo "mode=$mode"
    echo "reps=$reps"
    echo "perftest_duration_s=$dur"
    echo "latency_iterations=$latn"
    echo "odp_cold_iterations=$odpn"
    echo "rping_size=$vsize"
    echo "rping_count_verify=$vshort"
    echo "rping_count_transfer=$vlong"
} > "$out/machine.env"

# --- The backend's own ceiling ---------------------------------------------------
# bench/stream-ceiling.c: two processes moving frames as two QEMUs joined by
# -netdev stream do, before and after the pairs (the higher of the two
# counts): the adapter's 4154-byte frames (RoCE MTU 4096) one and sixteen
# per writev, and 64 KiB frames, the most -netdev stream carries.
csecs=2
[ $mode = smoke ] && csecs=1
ceiling()
{
    local tag=$1 f b v
    [ -x "$out/stream-ceiling" ] || return 0
    for f in "4154 1" "4154 16" "65536 1"; do
        set -- $f
        v=$("$out/stream-ceiling" -s $csecs -b "$2" "$1" 2>> "$out/stream-ceiling.err" |
            sed -n 's/.* MB\/s=\([0-9.]*\) .*/\1/p')
        echo "ceiling_${1}_b${2}_mbs_$tag=${v:-error}" >> "$out/machine.env"
    done
}
if [ "$segment" = stream ]; then
    if cc -O2 -o "$out/stream-ceiling" "$top/bench/stream-ceiling.c" 2> "$out/stream-ceiling.err"; then
        say "the stream backend's ceiling (bench/stream-ceiling.c, ${csecs} s per frame size)"
        ceiling before
    else
        say "warning: bench/stream-ceiling.c did not build (see $out/stream-ceiling.err): no ceiling"
    fi
fi

# --- The two pairs -----------------------------------------------------------------
# (lib.sh: dev, gid_of, barrier)
guest=$(cat "$top/tests/guest/in-guest/lib.sh" "$top/bench/guest-bench.sh") ||
    die "bench/guest-bench.sh or tests/guest/in-guest/lib.sh missing"
watch_pid=''
stop_watch() { [ -n "$watch_pid" ] && kill "$watch_pid" 2>/dev/null; wait "$watch_pid" 2>/dev/null; watch_pid=''; }
trap 'stop_watch' EXIT
trap 'say "interrupted"; exit 130' INT TERM HUP
# watch_print PAIR SERIAL-LOG: a progress line per client step finished
# since the last call (the count of those printed in $out/.seen-PAIR)
watch_print()
{
    local seen n a
    [ -e "$2" ] || return 0
    seen=$(cat "$out/.seen-$1" 2>/dev/null || echo 0)
    n=$(tr -d '\r' < "$2" | grep -c '^BENCH-STEP ')
    [ "$n" -gt "$seen" ] || return 0
    tr -d '\r' < "$2" | grep '^BENCH-STEP ' | sed -n "$((seen + 1)),${n}p" |
        while read -r _ k name rep _ rc secs attempt verdict; do
            a=${attempt#attempt=}
            [ "$a" = 1 ] && a='' || a=" (attempt $a)"
            [ "$verdict" = verdict=retry ] && a+=", perftest's clock sampling failed: again"
            printf 'run-bench: [%s] %2s/%s %-12s rep %s: exit %s, %s s%s\n' \
                "$1" "$k" "$nsteps" "$name" "$rep" "${rc#rc=}" "${secs#secs=}" "$a"
        done
    echo "$n" > "$out/.seen-$1"
}
watch() { while sleep 2; do watch_print "$@"; done; }
failed_boot=0
# run_pair NAME launch-vms-args...: boots the pair (again while a VM's
# clocksource is not tsc, up to 3 boots; see bench/guest-bench.sh), the
# steps' output in vms-NAME/vm*/serial.log, launch-vms' in NAME.log
run_pair()
{
    local name=$1 t0 lrc boot need
    shift
    t0=$(date +%s)
    for boot in 1 2 3; do
        need=1
        [ $boot = 3 ] && need=0
        say "[$name] booting 2 VMs (launch-vms.sh -n 2 --$segment $*${boot:+, boot $boot}) and running $nsteps steps (launch-vms timeout $tmo_all s)"
        rm -rf "$out/vms-$name"
        mkdir -p "$out/vms-$name"
        watch "$name" "$out/vms-$name/vm2/serial.log" &
        watch_pid=$!
        rm -f "$out/cpu-$name.jsonl"
        "$py" "$top/bench/cpu-sampler.py" "$out/vms-$name" "$out/cpu-$name.jsonl" $$ &
        cpu_pid=$!
        RS_NO_BUILD=1 RS_VMS_LOGDIR="$out/vms-$name" \
            "$top/scripts/launch-vms.sh" -q -n 2 --$segment "$@" --timeout "$tmo_all" \
            --cmd "B_NEED_TSC=$need B_MTU=$mtu B_DUR=$dur B_LATN=$latn B_VSIZE=$vsize B_VSHORT=$vshort B_VLONG=$vlong B_ODPN=$odpn B_STEPS='$steps'
$guest" ${qargs:+-- $qargs} > "$out/$name.log" 2>&1
        lrc=$?
        stop_watch
        kill "$cpu_pid" 2>/dev/null; wait "$cpu_pid" 2>/dev/null
        watch_print "$name" "$out/vms-$name/vm2/serial.log"
        rm -f "$out/.seen-$name"
        grep -q '^BENCH-REBOOT' "$out/vms-$name/vm1/serial.log" 2>/dev/null || break
        say "[$name] $(cat "$out/vms-$name/vm1/serial.log" "$out/vms-$name/vm2/serial.log" | tr -d '\r' |
            grep '^BENCH-REBOOT' | sed 's/^BENCH-REBOOT //' | tr '\n' ' ')- not both on tsc (the TSC was found unstable during boot): booting again"
        rm -rf "$out/vms-$name.boot$boot"
        mv "$out/vms-$name" "$out/vms-$name.boot$boot"
        mv "$out/$name.log" "$out/vms-$name.boot$boot/launch-vms.log"
        mv "$out/cpu-$name.jsonl" "$out/vms-$name.boot$boot/" 2>/dev/null
    done
    echo "pair_${name//-/_}_launch_status=$lrc" >> "$out/machine.env"
    echo "pair_${name//-/_}_boots=$boot" >> "$out/machine.env"
    echo "pair_${name//-/_}_seconds=$(( $(date +%s) - t0 ))" >> "$out/machine.env"
    echo "pair_${name//-/_}_boot=$(grep -o 'boot to ready [0-9.]* s' "$out/$name.log" | head -n 1)" >> "$out/machine.env"
    say "[$name] $(grep -E '^launch-vms: (PASS|FAIL)' "$out/$name.log" | tail -n 1) ($(( $(date +%s) - t0 )) s)"
    if ! grep -q '^BENCH-STEP ' "$out/vms-$name/vm2/serial.log" 2>/dev/null; then
        say "[$name] no results; the last lines of $out/$name.log:"
        tail -n 15 "$out/$name.log" | sed 's/^/    /'
        failed_boot=1
        return 1
    fi
    return 0
}
# a pair that fails to boot does not stop the other: its cells show ERROR
# (--pin: thread names, "CPU 0/TCG", for bench/cpu-sampler.py)
pinargs=''
[ "${RS_BENCH_PIN:-}" = 1 ] && pinargs='-name rsbench,debug-threads=on'
# shellcheck disable=SC2116,SC2086  # (no empty "--" when there are none)
qargs=$(echo $adapter_args $pinargs) run_pair adapter
qargs=$pinargs run_pair soft-roce --soft-roce
vnames=''
for ((i = 0; i < ${#variants[@]}; i += 4)); do
    v=${variants[i]} vk=${variants[i]//-/_}
    # @OUT@ in the launch arguments: the output directory (the fabric's)
    variants[i + 2]=${variants[i + 2]//@OUT@/$out}
    case ${variants[i + 2]} in *--local-fabric*) mkdir -p "$out/fabric" ;; esac
    vnames+=" $v"
    echo "variant_${vk}_label=${variants[i + 1]}" >> "$out/machine.env"
    echo "variant_${vk}_args=launch-vms.sh ${variants[i + 2]:-(no options)}, QEMU ${variants[i + 3]:-(no arguments)}" >> "$out/machine.env"
    # shellcheck disable=SC2086  # word splitting of the launch arguments
    # shellcheck disable=SC2116,SC2086
    qargs=$(echo $adapter_args ${variants[i + 3]} $pinargs) run_pair "$v" ${variants[i + 2]}
done
echo "variants=${vnames# }" >> "$out/machine.env"
# The device-only benchmark: the engine between two adapters in one QEMU,
# no vCPU, against this host's memcpy and CRC-32 (devbench.jsonl)
if [ $device = 1 ]; then
    case $mode in full) dmib=256 ;; quick) dmib=64 ;; smoke) dmib=8 ;; esac
    say "device-only benchmark (qtest devbench, ${dmib} MiB per case; log in $out/devbench.log)"
    rm -f "$out/devbench.jsonl"
    RS_DEVBENCH_MIB=$dmib RS_DEVBENCH_OUT=$out/devbench.jsonl \
        "$top/tests/runners/qtest.sh" "$RS_BUILD/qemu" /devbench/ > "$out/devbench.log" 2>&1 ||
        say "warning: the device-only benchmark failed (see $out/devbench.log)"
fi
[ "$segment" = stream ] && ceiling after
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.env"
echo "total_seconds=$(( $(date +%s) - t_start ))" >> "$out/machine.env"

# --- Results ------------------------------------------------------------------------
"$py" "$top/bench/bench.py" "$out"
rc=$?
say "total $(( $(date +%s) - t_start )) s; results in $out (results.csv, results.json, table.txt$( [ -e "$out/chart.png" ] && echo ', chart.png'))"
[ $failed_boot = 0 ] || rc=1
exit $rc
