#!/bin/bash
# QEMU's coding style on the device's own files: scripts/checkpatch.pl of
# the QEMU tree scripts/build-qemu.sh unpacked (the release qemu/VERSION
# pins), run as `checkpatch.pl --no-tree -f FILE` on every file of
# hw/rdma-session/, include/hw/rdma-session/ and tests/qtest/rdma-session/.
# Prints TAP, one case per file: it fails on any ERROR; WARNINGs (a line
# over 80 characters, a license other than GPL-2.0-or-later, ...) are
# printed as notes and do not fail it.
#
# Skipped (not counted), with the reason:
#   include/hw/rdma-session/rdma-session-uverbs.h  the uverbs structures the
#       Linux driver and the rdma-core provider exchange: a Linux UAPI
#       header, in the kernel's style (tabs) and under its UAPI license
#       (GPL-2.0 WITH Linux-syscall-note), which checkpatch.pl rejects; QEMU
#       does not check its own copies of such headers (linux-headers/,
#       include/standard-headers/) either.
#
# Usage: tests/runners/checkpatch.sh [FILE...]   (default: the directories
#   above, relative to the repository)
# Environment: RS_BUILD (the QEMU tree is $RS_BUILD/qemu-<QEMU_VERSION>),
#   RS_CHECKPATCH (another checkpatch.pl).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
: "${RS_BUILD:=$top/build}"
. "$top/qemu/VERSION"
cp=${RS_CHECKPATCH:-$RS_BUILD/qemu-$QEMU_VERSION/scripts/checkpatch.pl}
if [ ! -f "$cp" ]; then
    echo "Bail out! no $cp: QEMU's tree comes from scripts/build-qemu.sh"
    exit 1
fi

declare -A skip=(
    [include/hw/rdma-session/rdma-session-uverbs.h]="a Linux UAPI header (kernel style, GPL-2.0 WITH Linux-syscall-note), as QEMU's linux-headers/"
)

cd "$top" || exit 1
if [ $# -gt 0 ]; then
    files=("$@")
else
    mapfile -t files < <(find hw/rdma-session include/hw/rdma-session \
                              tests/qtest/rdma-session -type f ! -name '*~' |
                         LC_ALL=C sort)
fi
echo "1..${#files[@]}"
n=0 bad=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for f in "${files[@]}"; do
    n=$((n + 1))
    if [ -n "${skip[$f]:-}" ]; then
        echo "ok $n - $f # SKIP ${skip[$f]}"
        continue
    fi
    perl "$cp" --no-tree --no-color -f "$f" > "$out" 2>&1
    # "ERROR: text" / "WARNING: text", then "#N: FILE: path:line:"
    mapfile -t found < <(awk -v f="$f" '
        /^(ERROR|WARNING): / { if (msg != "") print f ": " msg; msg = $0; next }
        msg != "" && /^#[0-9]+: FILE: / { sub(/:$/, "", $3); print $3 ": " msg; msg = ""; next }
        msg != "" && !/^[+#]/ { print f ": " msg; msg = "" }
        END { if (msg != "") print f ": " msg }' "$out")
    e=0 w=0
    for l in ${found[@]+"${found[@]}"}; do
        case $l in *ERROR:*) e=$((e + 1)) ;; *WARNING:*) w=$((w + 1)) ;; esac
    done
    if ! grep -q '^total: ' "$out"; then
        echo "not ok $n - $f: checkpatch.pl did not finish"
        sed 's/^/#   /' "$out" | tail -n 5
        bad=$((bad + 1))
        continue
    fi
    if [ $e -gt 0 ]; then
        echo "not ok $n - $f: $e error(s), $w warning(s)"
        printf '#   %s\n' "${found[@]:0:20}"
        [ ${#found[@]} -le 20 ] || echo "#   ... and $(( ${#found[@]} - 20 )) more"
        bad=$((bad + 1))
    else
        if [ $w = 0 ]; then
            echo "ok $n - $f"
        else
            echo "ok $n - $f ($w warning(s))"
            printf '# %s\n' "${found[@]}"
        fi
    fi
done
[ $bad = 0 ]
