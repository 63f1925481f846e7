# Sourced by the VM-level suites in tests/guest/: their results as TAP on
# stdout (one "ok"/"not ok" line per check, the plan at the end, notes as
# "# " lines), the guests' "CHECK <name> ok|fail <detail>" lines counted in
# one place, and each run's log directory.

pass=0
fail=0
skip=0

# tap RESULT NAME [DETAIL]: one test; RESULT ok or anything else (failed)
tap()
{
    if [ "$1" = ok ]; then
        pass=$((pass + 1))
        echo "ok - $2${3:+: $3}"
    else
        fail=$((fail + 1))
        echo "not ok - $2${3:+: $3}" | cut -c1-600
    fi
}

# tap_skip NAME REASON: a test not counted as passed or failed (a known
# exception: REASON says why and what it gave this time)
tap_skip()
{
    skip=$((skip + 1))
    echo "ok - $1 # SKIP $2" | cut -c1-600
}

# vm_checks OUT VM:NAME...: each named check of VM in the launcher's output
# OUT ("[vmI] CHECK NAME ok|fail DETAIL", parsed by tests/guest/rstest/
# checks.py); a missing one fails.
rs_checks_py=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/rstest/checks.py
vm_checks()
{
    local out=$1 res name detail n=0
    shift
    while IFS=$'\t' read -r res name detail; do
        tap "$res" "$name" "$detail"
        n=$((n + 1))
    done < <(python3 "$rs_checks_py" "$out" "$@")
    [ $n = $# ] || tap fail "vm checks" "$rs_checks_py gave $n results for $# checks"
}

# launcher_check STATUS [NAME OUT]: scripts/launch-vms.sh's exit status
# (every VM became ready, ran its command with status 0, powered off)
launcher_check()
{
    if [ "$1" = 0 ]; then
        tap ok "${2:+$2: }VMs ran and powered off"
    else
        tap fail "${2:+$2: }launch-vms exit status $1" \
            "$( [ -n "${3:-}" ] && grep -E '^launch-vms: (FAIL|vm[0-9]+: exit status [^0])' "$3" | tr '\n' ' ')"
    fi
}

# suite_dir NAME: a new log directory $sdir in $RS_BUILD/test-logs (the
# newest three kept, the last one linked as NAME.last)
suite_dir()
{
    local logs=$RS_BUILD/test-logs
    mkdir -p "$logs"
    sdir=$(mktemp -d "$logs/$1.XXXXXX")
    find "$logs" -mindepth 1 -maxdepth 1 -type d -name "$1.*" -printf '%T@ %p\n' |
        sort -rn | tail -n +4 | cut -d' ' -f2- | xargs -r rm -rf
    ln -sfn "${sdir##*/}" "$logs/$1.last"
    suite_t0=$(date +%s)
    suite_name=$1
}

# suite_end: the plan, a summary note, and the exit status
suite_end()
{
    echo "1..$((pass + fail + skip))"
    echo "# $suite_name: $pass passed, $fail failed$( [ "$skip" = 0 ] || echo ", $skip not counted") ($(( $(date +%s) - suite_t0 )) s, logs in $sdir)"
    [ "$fail" = 0 ] && [ $((pass + fail)) -gt 0 ]
}
