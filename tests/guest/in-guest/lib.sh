# Shell functions for the test scripts that run inside the guests (busybox
# sh); a suite sends this file followed by its own script.
#
#   ck NAME ok|fail [DETAIL]  a result line: the suites count "CHECK" lines
#   badlog                    the kernel log's warnings, bugs and oopses
#   gid_of IPV4               the index of its RoCE v2 GID on $dev port 1
#   dev                       the guest's first RDMA device
#   barrier K SECONDS         two VMs meet (step K) before going on

ck() { echo "CHECK $1 $2 ${3:-}"; }
badlog() { dmesg | grep -E 'WARNING|BUG|Oops|Call Trace|rdma_session .*(failed|timed out|fatal)' | head -n 3 | tr '\n' ' '; }
dev=$(ls /sys/class/infiniband 2>/dev/null | head -n 1)
# gid_sysfs ADDRESS: the RoCE v2 GID of an IPv4 or IPv6 ADDRESS as sysfs
# writes it (eight groups of four hex digits; IPv4 as ::ffff:a.b.c.d)
gid_sysfs() {
    case $1 in
    *:*) echo "$1" | awk -F: '{
        n = 0; for (i = 1; i <= NF; i++) if ($i != "") n++
        out = ""; c = 0
        for (i = 1; i <= NF; i++) {
            if ($i == "") {
                if (i > 1 && i < NF)
                    for (z = 0; z < 8 - n; z++) { out = out (c ? ":" : "") "0000"; c++ }
                continue
            }
            out = out (c ? ":" : "") sprintf("%04s", $i); c++
        }
        gsub(/ /, "0", out); print out }' ;;
    *) echo "$1" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n", $1, $2, $3, $4 }' ;;
    esac
}
# gid_of ADDRESS: the index of ADDRESS's RoCE v2 GID on port 1
gid_of() {
    want=$(gid_sysfs "$1")
    for f in /sys/class/infiniband/$dev/ports/1/gids/*; do
        i=${f##*/}
        [ "$(cat "$f" 2>/dev/null)" = "$want" ] || continue
        [ "$(cat /sys/class/infiniband/$dev/ports/1/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && { echo "$i"; return 0; }
    done
    return 1
}
# gid_wait ADDRESS: gid_of, again every 0.5 s for up to 20 s while the
# driver has not added the GID yet
gid_wait() {
    for t in $(seq 1 40); do
        gid_of "$1" && return 0
        sleep 0.5
    done
    return 1
}
# barrier K SECONDS: VM 1 listens on port 30000+K, VM 2 connects (two
# VMs; the harness's rs_barrier is the one for more).
barrier()
{
    if [ "$RS_VM_INDEX" = 1 ]; then
        timeout "$2" nc -l -p $((30000 + $1)) </dev/null >/dev/null 2>&1
    else
        end=$(( $(date +%s) + $2 ))
        until nc -w 2 "$RS_PEER" $((30000 + $1)) </dev/null >/dev/null 2>&1; do
            [ "$(date +%s)" -lt "$end" ] || return 1
            sleep 0.3
        done
    fi
}
