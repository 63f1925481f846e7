#!/bin/bash
# Run one of the adapter's fuzzers (libFuzzer, ASan + UBSan build from
# scripts/build-qemu.sh --fuzz).
#
# Usage: scripts/fuzz.sh [--target generic|hub|packet|fabric]
#                        [--minutes N | --seconds N]
#                        [--no-build] [-- libFuzzer options...]
#   generic  QEMU's generic-fuzz with the "rdma-session" configuration:
#            MMIO/PIO/PCI config accesses and DMA contents from the input
#   hub      generic-fuzz with "rdma-session-hub": the adapter and a
#            virtio-net NIC on one hub, for frames the guest builds in
#            virtio-net TX buffers to reach the adapter's receive path
#   packet   rdma-session-packet (tests/qtest/fuzz/rdma_session_fuzz.c):
#            RoCEv2 frames, bundles, HELLO/REPLY and raw frames from the
#            network (also from spoofed sources) on an adapter with QPs in
#            RTS, plus work requests, CQ doorbells and virtual time; an
#            input that makes the adapter exceed a documented
#            amplification bound fails as a crash does
#   fabric   rdma-session-fabric: the local fabric's control channel
#            (HELLO, ADDRS, inline and by-reference frames) from a member
#            whose RAM the adapter has mapped
# Default: packet, 10 minutes.
#
# The run starts from the seeds in tests/qtest/fuzz/rdma-session-corpus/
# <target>/ (hub: generic/ and hub/ if it exists) and keeps what it finds in
# build/fuzz/<target>/corpus; crash (for packet also an amplification
# bound exceeded), timeout (an input running longer than 10 s: a hang) and
# out-of-memory (2048 MB: amplification) reproducers go to
# build/fuzz/<target>/artifacts.
# It prints exec/s and libFuzzer's coverage (cov: edges, ft: features) and
# exits 1 on any crash, timeout or OOM (naming the reproducer), 2 on a
# setup error.  Reproduce one with
#   build/qemu-fuzz/qemu-fuzz-x86_64 --fuzz-target=NAME FILE
# Environment: RS_BUILD (see scripts/build-qemu.sh), RS_FUZZ_TIMEOUT
#   (seconds per input, default 10), RS_FUZZ_RSS_MB (default 2048).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
: "${RS_BUILD:=$top/build}"

log() { printf '[fuzz] %s\n' "$*" >&2; }
die() { printf '[fuzz] error: %s\n' "$*" >&2; exit 2; }

target=packet secs=600 build=1 extra=()
while [ $# -gt 0 ]; do
    case $1 in
    --target) target=${2:?}; shift 2 ;;
    --minutes) secs=$(( ${2:?} * 60 )); shift 2 ;;
    --seconds) secs=${2:?}; shift 2 ;;
    --no-build) build=0; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done
# The packet fuzzer's commands carry whole frames: inputs up to 4 KiB from
# the start (libFuzzer would otherwise grow the limit from a few bytes).
case $target in
generic) name=generic-fuzz-rdma-session opts=(-max_len=4096) ;;
hub) name=generic-fuzz-rdma-session-hub opts=(-max_len=4096) ;;
packet) name=rdma-session-packet opts=(-max_len=4096 -len_control=0) ;;
fabric) name=rdma-session-fabric opts=(-max_len=16384) ;;
*) die "--target must be generic, hub, packet or fabric" ;;
esac

if [ $build = 1 ]; then
    log "building the fuzzer (scripts/build-qemu.sh --fuzz qemu-fuzz-x86_64)"
    "$top/scripts/build-qemu.sh" --fuzz qemu-fuzz-x86_64 >&2 ||
        die "the fuzz build failed"
fi
bin="$RS_BUILD/qemu-fuzz/qemu-fuzz-x86_64"
[ -x "$bin" ] || die "$bin is missing (run without --no-build)"

seeds=()
for d in "$target" $([ "$target" != hub ] || echo generic); do
    d="$top/tests/qtest/fuzz/rdma-session-corpus/$d"
    [ ! -d "$d" ] || seeds+=("$d")
done
work="$RS_BUILD/fuzz/$target"
mkdir -p "$work/corpus" "$work/artifacts"
touch "$work/.start"
out="$work/last.log"

# Leaks are not failures here: QEMU allocates for its whole life.  Any
# other sanitizer report aborts, so libFuzzer records it as a crash.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:symbolize=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
command -v llvm-symbolizer >/dev/null 2>&1 ||
    [ ! -x /usr/bin/llvm-symbolizer-14 ] ||
    export ASAN_SYMBOLIZER_PATH=/usr/bin/llvm-symbolizer-14

# What the fuzzers showed once stays fixed: the reproducers of this target
# (tests/qtest/fuzz/rdma-session-repro/<target>-*) run first, each once.
mapfile -t repro < <(ls "$top/tests/qtest/fuzz/rdma-session-repro/$target-"* 2>/dev/null)
if [ ${#repro[@]} -gt 0 ]; then
    log "${#repro[@]} reproducer(s) of earlier findings"
    if ! "$bin" --fuzz-target="$name" -timeout="${RS_FUZZ_TIMEOUT:-10}" \
            -rss_limit_mb="${RS_FUZZ_RSS_MB:-2048}" "${repro[@]}" \
            > "$work/repro.log" 2>&1; then
        grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|ALARM|.*out-of-memory|rdma-session fuzz: )' "$work/repro.log" | head -n 5 >&2 || true
        echo "fuzz $target: a reproducer of an earlier finding fails again (log $work/repro.log)"
        exit 1
    fi
fi

log "$name for ${secs} s (corpus $work/corpus, seeds ${seeds[*]})"
set +e
nice -n 10 "$bin" --fuzz-target="$name" \
    -timeout="${RS_FUZZ_TIMEOUT:-10}" -rss_limit_mb="${RS_FUZZ_RSS_MB:-2048}" \
    -max_total_time="$secs" -print_final_stats=1 "${opts[@]}" \
    -artifact_prefix="$work/artifacts/" ${extra[@]+"${extra[@]}"} \
    "$work/corpus" "${seeds[@]}" > "$out" 2>&1
rc=$?
set -e

# The last status line: "#N <event> cov: E ft: F corp: ... exec/s: X ...".
last=$(grep -E '^#[0-9]+.*cov: ' "$out" | tail -n 1 || true)
cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$out" | tail -n 1)
eps=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+).*/\1/p' "$out" | tail -n 1)
# (-fork=N prints no final stats: take exec/s from the last status line)
[ -n "$eps" ] || eps=$(sed -nE 's/.* exec\/s:? ([0-9]+).*/\1/p' <<<"$last")
[ -n "$execs" ] || execs=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$last")
corp=$(ls "$work/corpus" | wc -l)
echo "fuzz $target: ${execs:-?} inputs, ${eps:-?} exec/s, cov ${cov:-?}, ft ${ft:-?}, corpus $corp (log $out)"

# Reproducers of this run: the artifacts newer than its start.
mapfile -t found < <(find "$work/artifacts" -type f -newer "$work/.start" -printf '%f\n' | sort)
if [ ${#found[@]} -gt 0 ] || { [ $rc != 0 ] && [ -z "$execs" ]; }; then
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|ALARM|.*out-of-memory|rdma-session fuzz: )' "$out" | head -n 5 >&2 || true
    for f in ${found[@]+"${found[@]}"}; do
        echo "fuzz $target: reproducer $work/artifacts/$f"
        echo "  $bin --fuzz-target=$name $work/artifacts/$f"
    done
    [ ${#found[@]} -gt 0 ] || echo "fuzz $target: libFuzzer exit status $rc, see $out"
    exit 1
fi
[ $rc = 0 ] || { echo "fuzz $target: libFuzzer exit status $rc, see $out"; exit 1; }
exit 0
