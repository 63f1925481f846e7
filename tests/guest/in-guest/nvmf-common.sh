# nvmf: guest-side part 'common' (sent by tests/guest/nvmf.py)
ck() { echo "CHECK $1 $2 ${3:-}"; }
migs() { dmesg | grep -c 'live migration: announcing'; }
badlog() { dmesg | grep -E 'WARNING|BUG|Oops|Call Trace|rdma_session .*(failed|timed out|fatal)' | head -n 3 | tr '\n' ' '; }
nqn=nqn.2026-11.org.rdma-session:nvmf-test
# cnt NAME: the adapter's counter NAME (rdma statistic), 0 if it has none
cnt() {
    rdma statistic show link "$(ls /sys/class/infiniband | head -n 1)/1" 2>/dev/null |
        tr ' ' '\n' | awk -v k="$1" 'p { print; f = 1; exit } $0 == k { p = 1 } END { if (!f) print 0 }'
}
# ios: the I/Os completed on /dev/nvme0n1 (reads + writes)
ios() { awk '{ print $1 + $5 }' /sys/block/nvme0n1/stat; }
