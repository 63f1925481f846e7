# Sourced by the VM test scripts (test-nvmf.sh, test-resilience.sh,
# test-migration.sh): their guests print "CHECK <name> ok|fail <detail>";
# these print the expected ones as TAP and count them in pass and fail.

# vm_checks OUT VM:NAME...: each named check of VM in the launcher's
# output OUT; a missing one fails.
vm_checks()
{
    local out=$1 e vm c line
    shift
    for e in "$@"; do
        vm=${e%%:*} c=${e#*:}
        line=$(grep -m1 "^\[vm$vm\] CHECK $c " "$out")
        if [ "$(echo "$line" | awk '{print $4}')" = ok ]; then
            pass=$((pass + 1)); echo "ok - vm$vm $c"
        else
            fail=$((fail + 1)); echo "not ok - vm$vm $c: ${line:-no result}"
        fi
    done
}

# launcher_check STATUS: scripts/launch-vms.sh's exit status
launcher_check()
{
    if [ "$1" = 0 ]; then pass=$((pass + 1)); echo "ok - VMs ran and powered off"
    else fail=$((fail + 1)); echo "not ok - launch-vms exit status $1"; fi
}
