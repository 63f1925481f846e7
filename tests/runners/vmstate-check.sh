#!/bin/bash
# The device's migration stream against the releases before it, with QEMU's
# own tools: the build's description of the stream (qemu-system-x86_64
# -dump-vmstate, the sections vmschkmachine and rdma-session) is compared
# with the one kept for each earlier release of the same major version,
# tests/vmstate/rdma-session-X.Y.Z.json, by scripts/vmstate-static-checker.py
# from the QEMU source the build unpacked.  Prints TAP:
#
#   - the build's description could be dumped;
#   - for each earlier release R of VERSION's major version:
#       R -> current: the checker finds nothing (a migration from R's build
#         to this one must work: a failure here fails the suite);
#       R -> current: no field added after the last field of a description
#         without a version above R's (vmstate-tool.py appended: the checker
#         stops at the end of R's fields and would not see it);
#       the checker does report a change: R's description with one field's
#         size doubled must fail (it ran, and it read these files);
#       current -> R: what the checker finds in the reverse direction, as
#         notes only (a new subsection that the older build does not know
#         makes it refuse the stream, which is allowed);
#   - if a description is kept for VERSION itself (a release just cut), the
#     build's is the same.
# Releases of another major version are listed as skipped.
#
# Usage: tests/runners/vmstate-check.sh [--save] [QEMU-BUILD-DIR]
#   QEMU-BUILD-DIR: default $RS_BUILD/qemu (scripts/build-qemu.sh's link);
#   the checker is QEMU-BUILD-DIR/../scripts/vmstate-static-checker.py.
#   --save: write the build's description as the one of VERSION,
#   tests/vmstate/rdma-session-VERSION.json (when a release is cut, see
#   docs/system/devices/rdma-session-releases.rst), then check as usual.
# Environment: RS_BUILD; RS_VMSTATE_DIR (default tests/vmstate), the
#   directory of the kept descriptions.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
: "${RS_BUILD:=$top/build}"
save=0
if [ "${1:-}" = --save ]; then save=1; shift; fi
qbuild=${1:-$RS_BUILD/qemu}
qemu=$qbuild/qemu-system-x86_64
store=${RS_VMSTATE_DIR:-$top/tests/vmstate}
tool=$top/tests/vmstate/vmstate-tool.py
machine=q35

n=0
failed=0
ok()     { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; failed=$((failed + 1)); }
note()   { sed 's/^/#   /'; }
finish() { echo "1..$n"; [ "$failed" = 0 ]; exit; }   # the plan at the end

version=$(tr -d '[:space:]' < "$top/VERSION" 2>/dev/null) || true
if ! [[ $version =~ ^([0-9]+)\.[0-9]+\.[0-9]+$ ]]; then
    not_ok "VERSION holds MAJOR.MINOR.PATCH (it holds '$version')"
    finish
fi
major=${BASH_REMATCH[1]}

checker=$(readlink -f "$qbuild/../scripts/vmstate-static-checker.py" 2>/dev/null) ||
    checker=
if [ ! -x "$qemu" ] || [ -z "$checker" ] || [ ! -f "$checker" ]; then
    not_ok "a QEMU build with its source: no $qemu or no $qbuild/../scripts/vmstate-static-checker.py (scripts/build-qemu.sh)"
    finish
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cur=$work/current.json
if "$qemu" -M "$machine" -nodefaults -display none \
        -dump-vmstate "$work/full.json" > "$work/dump.log" 2>&1 &&
   "$tool" extract "$work/full.json" "$cur" >> "$work/dump.log" 2>&1; then
    ok "the build's description of the stream ($version: $qemu -M $machine -dump-vmstate)"
else
    not_ok "the build's description of the stream ($qemu -M $machine -dump-vmstate)"
    note < "$work/dump.log"
    finish
fi
if [ $save = 1 ]; then
    mkdir -p "$store"
    cp "$cur" "$store/rdma-session-$version.json"
    echo "# saved as $store/rdma-session-$version.json"
fi

checks=0
while read -r f; do
    [ -n "$f" ] || continue
    r=$(basename "$f" .json)
    r=${r#rdma-session-}
    if [ "$r" = "$version" ]; then
        if "$tool" same "$f" "$cur" > "$work/same.log" 2>&1; then
            ok "the kept description of $r (this VERSION) is the build's"
        else
            not_ok "the kept description of $r (this VERSION) is the build's: the stream changed after the release was cut (bump VERSION)"
            note < "$work/same.log"
        fi
        continue
    fi
    if [ "${r%%.*}" != "$major" ]; then
        ok "$r -> $version # SKIP major version ${r%%.*}, not $major: no compatibility kept"
        continue
    fi
    if [ "$(printf '%s\n%s\n' "$r" "$version" | sort -V | tail -n 1)" != "$version" ]; then
        ok "$r -> $version # SKIP $r is newer than VERSION $version"
        continue
    fi
    checks=$((checks + 1))
    if python3 "$checker" -s "$f" -d "$cur" > "$work/fwd.log" 2>&1; then
        ok "$r -> $version: vmstate-static-checker.py finds nothing"
    else
        not_ok "$r -> $version: vmstate-static-checker.py (exit status $?): a migration from $r would break"
    fi
    note < "$work/fwd.log"
    if "$tool" appended "$f" "$cur" > "$work/app.log" 2>&1; then
        ok "$r -> $version: no field appended to a description without a version above $r's"
    else
        not_ok "$r -> $version: fields appended without a version above $r's: a migration from $r would break"
    fi
    note < "$work/app.log"
    if "$tool" mutate "$f" "$work/mutated.json" > "$work/mut.log" 2>&1 &&
       ! python3 "$checker" -s "$work/mutated.json" -d "$cur" >> "$work/mut.log" 2>&1; then
        ok "$r -> $version: the checker reports a changed field (a copy of $r's description with one size doubled fails)"
    else
        not_ok "$r -> $version: the checker does not report a changed field: it does not check what it should"
        note < "$work/mut.log"
    fi
    python3 "$checker" -s "$cur" -d "$f" > "$work/rev.log" 2>&1
    rc=$?
    if [ $rc = 0 ]; then
        ok "$version -> $r (reverse, notes only): vmstate-static-checker.py finds nothing"
    else
        ok "$version -> $r (reverse, notes only): $rc finding(s): $r's build refuses a stream of this one that carries what they name"
    fi
    note < "$work/rev.log"
done < <(printf '%s\n' "$store"/rdma-session-*.json | grep -v '\*' | sort -V)

if [ $checks = 0 ]; then
    case $version in
    "$major".0.0)
        ok "an earlier release of major version $major # SKIP $version is the first" ;;
    *)
        not_ok "an earlier release of major version $major: no tests/vmstate/rdma-session-$major.*.json kept, nothing was checked" ;;
    esac
fi
finish
