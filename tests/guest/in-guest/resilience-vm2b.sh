# resilience: guest-side part 'vm2b' (sent by tests/guest/resilience.py)
timeout 120 ibv_rc_pingpong -d rsess0 -g "$gi" -p 18602 -n 100 -s 4096 -c > /tmp/pp2.log 2>&1; rc=$?
passed reset-traffic-again /tmp/pp2.log
client /tmp/bw3.log 60 ib_write_bw -d rsess0 -x "$gi" -p 18603 -F -s 4096 -D 30 -u 15
retry_exceeded /tmp/bw3.log $rc rmmod-peer-retry-exceeded
client /tmp/bw4.log 90 ib_write_bw -d rsess0 -x "$gi" -p 18604 -F -s 4096 -n 200 -u 18
passed rmmod-traffic-again /tmp/bw4.log
client /tmp/bw5.log 60 ib_write_bw -d rsess0 -x "$gi" -p 18605 -F -s 4096 -D 30 -u 15
retry_exceeded /tmp/bw5.log $rc flr-peer-retry-exceeded
client /tmp/bw6.log 90 ib_write_bw -d rsess0 -x "$gi" -p 18606 -F -s 4096 -n 200 -u 18
passed flr-traffic-again /tmp/bw6.log
dmesg_clean dmesg-clean
exit 0
