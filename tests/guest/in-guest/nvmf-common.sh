# nvmf: guest-side part 'common' (sent by tests/guest/nvmf.py)
ck() { echo "CHECK $1 $2 ${3:-}"; }
migs() { dmesg | grep -c 'live migration: announcing'; }
badlog() { dmesg | grep -E 'WARNING|BUG|Oops|Call Trace|rdma_session .*(failed|timed out|fatal)' | head -n 3 | tr '\n' ' '; }
nqn=nqn.2026-11.org.rdma-session:nvmf-test
