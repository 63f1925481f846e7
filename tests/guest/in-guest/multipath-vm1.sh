# SPDX-License-Identifier: GPL-2.0-or-later
# multipath: guest-side part 'vm1' (the adapter, the requester of every
# stream; its marks time the suite's windows and path failures)
for v in 2 3; do
    if ping -c 3 -W 2 10.77.$v.1 > /tmp/ping$v 2>&1; then
        ck ping-vm$v ok "$(tail -n 1 /tmp/ping$v)"
    else
        ck ping-vm$v fail "$(tail -n 2 /tmp/ping$v | tr '\n' ' ')"
    fi
done
echo "multipath: traceroute to VM 2: $(traceroute -n -w 1 -q 1 10.77.2.1 \
    2>&1 | tail -n +2 | awk '{print $2}' | tr '\n' ' ')"
# the same over IPv6 (a VM that came up later adds its address later)
for v in 2 3; do
    ok=fail
    for t in 1 2 3 4 5; do
        ping -6 -c 3 -W 2 fd77:$v::1 > /tmp/ping6-$v 2>&1 && { ok=ok; break; }
        sleep 1
    done
    if [ $ok = ok ]; then
        ck ping6-vm$v ok "$(tail -n 1 /tmp/ping6-$v)"
    else
        ck ping6-vm$v fail "$(tail -n 2 /tmp/ping6-$v | tr '\n' ' ')"
    fi
done
# 0. eight QPs, one session each: eight source ports
mark q8-start
bw_client /tmp/bw0.log 10.77.2.1 -p 18700 -q 8 -D 3 -s 65536
bw_check q8-bw /tmp/bw0.log
mark q8-end
# 1. one QP over four sessions, one message outstanding: a flowlet ends
# at every message boundary after 256 KiB
set_paths 4 paths-4
m0=$(migrations)
mark spread-start
bw_client /tmp/bw1.log 10.77.2.1 -p 18701 -t 1 -D 4 -s 65536
bw_check spread-bw /tmp/bw1.log
mark spread-end
# 1b. the same through both adapters' IPv6 GIDs (RoCE over IPv6, the
# connection data over IPv4 TCP)
bwgid=$gi6
mark spread6-start
bw_client /tmp/bw1-6.log 10.77.2.1 -p 18711 -t 1 -D 4 -s 65536
bw_check spread6-bw /tmp/bw1-6.log
mark spread6-end
bwgid=
# 2. one QP, a full send queue; the suite takes three paths down
# meanwhile.  Eight sessions: the routers' hash puts all four of a
# connection on one router now and then (1 in 64), and no failover
# survives that router; all eight, 1 in 16384.
set_paths 8 paths-8
bw_client /tmp/bw2.log 10.77.2.1 -p 18702 -D 20 -s 65536 --report_gbits &
p=$!
sleep 3
mark fail-bw-go
wait_end $p 120
bw_check fail-bw /tmp/bw2.log
mark fail-bw-end
# 2b. over IPv6: the suite takes one path down meanwhile
bwgid=$gi6
bw_client /tmp/bw2-6.log 10.77.2.1 -p 18712 -D 9 -s 65536 --report_gbits &
p=$!
sleep 3
mark fail6-go
wait_end $p 120
bw_check fail6-bw /tmp/bw2-6.log
mark fail6-end
bwgid=
# 3. a verified rping stream, long enough for three failures: its rate
# measured first (1000 pings, connection set-up included: the stream is
# faster, so 30 s of it at that rate), its count sent to VM 2 over TCP
t0=$(cut -d' ' -f1 /proc/uptime)
rp_client /tmp/rp0.log 10.77.2.1 -p 18703 -V -C 1000 -S 4096
rp_check rping-rate /tmp/rp0.log 1000
t1=$(cut -d' ' -f1 /proc/uptime)
n=$(awk -v a=$t0 -v b=$t1 'BEGIN { n = int(1000 * 30 / (b - a + 0.01));
    if (n < 5000) n = 5000; if (n > 400000) n = 400000; print n }')
echo "multipath: rping: 1000 pings in $(awk -v a=$t0 -v b=$t1 \
    'BEGIN { print b - a }') s: $n pings for the failures"
until echo "$n" | nc -w 2 10.77.2.1 30970 >/dev/null 2>&1; do sleep 0.3; done
rp_client /tmp/rp1.log 10.77.2.1 -p 18704 -V -C "$n" -S 4096 &
p=$!
sleep 3
mark fail-rping-go
wait_end $p 150
rp_check fail-rping /tmp/rp1.log "$n"
mark fail-rping-end
m1=$(migrations)
if [ -n "$m1" ] && [ "${m1:-0}" -gt "${m0:-0}" ]; then
    ck path-migrations ok "rdma statistic path_migrations ${m0:-?} -> $m1"
else
    st=$(rdma statistic show link "$dev/1" 2>&1 | head -c 300)
    ck path-migrations fail \
        "rdma statistic path_migrations ${m0:-none} -> ${m1:-none}: $st"
fi
# 4. soft-RoCE (VM 3): one QP over four sessions, then a verified rping
set_paths 4 paths-4-rxe
mark rxe-start
bw_client /tmp/bw4.log 10.77.3.1 -p 18705 -t 1 -D 4 -s 65536
bw_check rxe-bw /tmp/bw4.log
rp_client /tmp/rp4.log 10.77.3.1 -p 18706 -V -C 1000 -S 4096
rp_check rxe-rping /tmp/rp4.log 1000
mark rxe-end
# 4b. the same over IPv6: ib_write_bw through the IPv6 GIDs, rping
# resolving soft-RoCE's IPv6 address
mark rxe6-start
bwgid=$gi6
bw_client /tmp/bw4-6.log 10.77.3.1 -p 18715 -t 1 -D 4 -s 65536
bw_check rxe6-bw /tmp/bw4-6.log
bwgid=
rp_client /tmp/rp4-6.log fd77:3::1 -p 18716 -V -C 1000 -S 4096
rp_check rxe6-rping /tmp/rp4-6.log 1000
mark rxe6-end
# 5. one path failure under ib_write_bw to soft-RoCE (not counted: its
# answers come from one source port, whose path the failure may take)
bw_client /tmp/bw5.log 10.77.3.1 -p 18707 -D 12 -s 65536 &
p=$!
sleep 3
mark rxe-fail-go
wait_end $p 120
bw_check rxe-fail-bw /tmp/bw5.log
mark rxe-fail-end
dmesg_clean
exit 0
