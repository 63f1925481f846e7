# migration: guest-side helpers (sent by tests/guest/migration.py after
# lib.sh, before the part's script)
#
#   notice N       CHECK migration-notice: the driver heard of N migrations
#                  (MIGRATION_NOTICE, it announces eth0)
#   clean          CHECK dmesg-clean: the kernel log
#   retry OUT CMD  CMD > OUT, run again if it came before its server
#                  listened (rdma_cm rejects, TCP refuses): a slow start
#                  under load is not what is tested
#   v NAME STATUS LOG [MIGRATIONS]  CHECK NAME: a program's verdict from
#                  its exit status and output (rping says what went wrong
#                  but may still exit 0); on the migrated VM it must also
#                  have lived through at least MIGRATIONS migrations.  The
#                  CHECK line quotes the program's figures: perftest's
#                  result row, rping's count, rsdv_dc_bw's msg/s line
#   wait_gid       $dev (the first RDMA device, waited for) and $gi, the
#                  index of $RS_IP's RoCE v2 GID (ibv_*_pingpong need it)
mig() { dmesg | grep -c "live migration: announcing"; }
notice() { m=$(mig); [ "$m" = "$1" ] && echo "CHECK migration-notice ok $m" || echo "CHECK migration-notice fail $m of $1"; }
clean() { b=$(dmesg | grep -E "WARNING|BUG|Oops|Call Trace" | head -n 3 | tr "\n" " "); [ -z "$b" ] && echo "CHECK dmesg-clean ok" || echo "CHECK dmesg-clean fail $b"; }
retry() { local o=$1 i rc; shift; for i in 1 2 3 4 5 6 7 8 9 10; do "$@" > $o 2>&1; rc=$?; grep -qE "REJECTED|[Cc]ouldn.t connect|[Cc]onnection refused" $o || return $rc; sleep 1; done; return $rc; }
v() { m=$(mig); if [ "$2" = 0 ] && ! grep -qiE "mismatch|fail|error|exceeded" "$3" && [ "$m" -ge "${4:-0}" ]; then echo "CHECK $1 ok ${4:+across $m migrations: }$(grep -E "iters in|^ *65536 |^ *1024 |msg/s" "$3" | tail -n 1)"; else echo "CHECK $1 fail exit status $2${4:+, $m of $4 migrations}: $(grep -iE "mismatch|fail|error|exceeded" "$3" | head -n 2 | tr "\n" " ")"; fi; }
wait_gid() {
    for t in $(seq 1 20); do dev=$(ls /sys/class/infiniband 2>/dev/null | head -n 1); [ -n "$dev" ] && break; sleep 0.5; done
    for t in $(seq 1 20); do gi=$(gid_of $RS_IP) && break; sleep 0.5; done
}
