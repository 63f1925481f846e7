# SPDX-License-Identifier: GPL-2.0-or-later
# multipath: guest-side part 'vm3' (Linux soft-RoCE, rxe0)
bw_server /tmp/bw4.log -p 18705 -t 1 -D 4 -s 65536
bw_check rxe-bw /tmp/bw4.log
timeout 300 rping -s -a "$RS_IP" -p 18706 -V -C 1000 -S 4096 \
    > /tmp/rp4.log 2>&1
rc=$?
rp_check rxe-rping /tmp/rp4.log 1000
bwgid=$gi6
bw_server /tmp/bw4-6.log -p 18715 -t 1 -D 4 -s 65536
bw_check rxe6-bw /tmp/bw4-6.log
bwgid=
timeout 300 rping -s -a "$IP6" -p 18716 -V -C 1000 -S 4096 \
    > /tmp/rp4-6.log 2>&1
rc=$?
rp_check rxe6-rping /tmp/rp4-6.log 1000
bw_server /tmp/bw5.log -p 18707 -D 12 -s 65536
bw_check rxe-fail-bw /tmp/bw5.log
exit 0
