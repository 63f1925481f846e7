# nvmf: guest-side part 'host' (sent by tests/guest/nvmf.py)
send_md5() {
    for t in $(seq 1 20); do
        echo "$1" | nc "$RS_PEER" 7777 2>/dev/null && return 0
        sleep 1
    done
    return 1
}
if ! modprobe nvme_rdma; then
    ck nvmf-connect fail "modprobe nvme_rdma failed"
    send_md5 none
    exit 1
fi
opts="transport=rdma,traddr=$RS_PEER,trsvcid=4420,nqn=$nqn"
ok=0
for t in $(seq 1 30); do
    if echo "$opts" > /dev/nvme-fabrics 2>/tmp/conn.err; then ok=1; break; fi
    sleep 2
done
for t in $(seq 1 40); do [ -b /dev/nvme0n1 ] && break; sleep 0.5; done
if [ $ok = 1 ] && [ -b /dev/nvme0n1 ]; then
    ck nvmf-connect ok "$(cat /sys/class/nvme/nvme0/transport 2>/dev/null) $(cat /sys/class/nvme/nvme0/address 2>/dev/null) $(cat /sys/block/nvme0n1/size) sectors"
else
    ck nvmf-connect fail "$(tr '\n' ' ' < /tmp/conn.err) $(dmesg | grep -iE 'nvme|rdma' | tail -n 4 | tr '\n' ' ')"
    send_md5 none
    exit 1
fi
dd if=/dev/urandom of=/tmp/a bs=65536 count=16 2>/dev/null
dd if=/dev/urandom of=/tmp/b bs=65536 count=16 2>/dev/null
# The kernel QPs' doorbell records (ABI 1.11): counted over the two checks.
mmio0=$(cnt db_mmio_writes) pick0=$(cnt db_record_pickups) io0=$(ios)
# 64 KiB writes (registered with REG_MR), 4 KiB reads.
dd if=/tmp/a of=/dev/nvme0n1 bs=65536 count=16 oflag=direct 2>/tmp/dd.err
dd if=/dev/nvme0n1 of=/tmp/a2 bs=4096 count=256 iflag=direct 2>>/tmp/dd.err
if cmp -s /tmp/a /tmp/a2; then ck nvmf-io-64k ok "1 MiB written in 64 KiB, read back in 4 KiB: equal"
else ck nvmf-io-64k fail "$(cmp /tmp/a /tmp/a2 2>&1 | head -n 1) $(tr '\n' ' ' < /tmp/dd.err) $(dmesg | tail -n 3 | tr '\n' ' ')"; fi
# 4 KiB writes at 1 MiB, 64 KiB reads.
dd if=/tmp/b of=/dev/nvme0n1 bs=4096 count=256 seek=256 oflag=direct 2>/tmp/dd.err
dd if=/dev/nvme0n1 of=/tmp/b2 bs=65536 count=16 skip=16 iflag=direct 2>>/tmp/dd.err
if cmp -s /tmp/b /tmp/b2; then ck nvmf-io-4k ok "1 MiB written in 4 KiB at 1 MiB, read back in 64 KiB: equal"
else ck nvmf-io-4k fail "$(cmp /tmp/b /tmp/b2 2>&1 | head -n 1) $(tr '\n' ' ' < /tmp/dd.err) $(dmesg | tail -n 3 | tr '\n' ' ')"; fi
# Each I/O posts at least two WQEs on the host's queue pair: the command
# capsule's SEND and the receive that takes the response back.  Without
# records every post rings a doorbell (>= 1 per message); with them the
# receive posts need none and an SQ post none while the device is active.
mmio=$(( $(cnt db_mmio_writes) - mmio0 )) pick=$(( $(cnt db_record_pickups) - pick0 ))
msgs=$(( ($(ios) - io0) * 2 ))
dpm=$(awk -v d=$mmio -v m=$msgs 'BEGIN { if (m) printf "%.3f", d / m; else print "nan" }')
det="$msgs messages ($((msgs / 2)) I/Os), $mmio MMIO doorbells ($dpm per message), $pick WQEs from doorbell records"
if [ "$pick" -gt 0 ] && [ "$msgs" -gt 0 ] && [ $((mmio)) -lt $msgs ]; then
    ck nvmf-dbrec ok "$det"
else
    ck nvmf-dbrec fail "$det"
fi
if [ "$mig" = 1 ]; then
    # Verified I/O while the target and then this VM move.
    r=0 err= end=0
    for t in $(seq 1 600); do
        off=$(( 32 + r % 8 * 4 ))
        dd if=/dev/urandom of=/tmp/c bs=65536 count=4 2>/dev/null
        dd if=/tmp/c of=/dev/nvme0n1 bs=65536 count=4 seek=$off oflag=direct 2>/tmp/dd.err &&
            dd if=/dev/nvme0n1 of=/tmp/c2 bs=4096 count=64 skip=$(( off * 16 )) iflag=direct 2>>/tmp/dd.err ||
            { err="round $r: $(tr '\n' ' ' < /tmp/dd.err)"; break; }
        cmp -s /tmp/c /tmp/c2 || { err="round $r: $(cmp /tmp/c /tmp/c2 2>&1 | head -n 1)"; break; }
        r=$((r + 1))
        if [ "$(migs)" -ge 1 ]; then
            [ $end = 0 ] && end=$(( $(cut -d. -f1 /proc/uptime) + 5 ))
            [ "$(cut -d. -f1 /proc/uptime)" -ge $end ] && break
        fi
    done
    if [ -z "$err" ] && [ "$(migs)" = 1 ]; then
        ck nvmf-io-migrating ok "$r rounds of 256 KiB written and read back equal while the target and this VM moved"
    else
        ck nvmf-io-migrating fail "${err:-$(migs) migrations of this VM after $r rounds} $(dmesg | grep -iE 'nvme|rdma' | tail -n 3 | tr '\n' ' ')"
    fi
    m=$(migs); [ "$m" = 1 ] && ck migration-notice ok "$m" || ck migration-notice fail "$m of 1"
fi
sum=$(cat /tmp/a /tmp/b | md5sum | awk '{print $1}')
if echo 1 > /sys/class/nvme/nvme0/delete_controller 2>/tmp/del.err; then
    for t in $(seq 1 20); do [ -e /sys/class/nvme/nvme0 ] || break; sleep 0.5; done
fi
if [ -e /sys/class/nvme/nvme0 ]; then ck nvmf-disconnect fail "$(tr '\n' ' ' < /tmp/del.err)"
else ck nvmf-disconnect ok; fi
send_md5 "$sum" || ck nvmf-md5-sent fail "nc to $RS_PEER:7777 failed"
b=$(badlog)
if [ -z "$b" ]; then ck dmesg-clean ok; else ck dmesg-clean fail "$b"; fi
