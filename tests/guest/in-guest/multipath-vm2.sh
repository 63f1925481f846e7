# SPDX-License-Identifier: GPL-2.0-or-later
# multipath: guest-side part 'vm2' (the adapter, VM 1's server)
bw_server /tmp/bw0.log -p 18700 -q 8 -D 3 -s 65536
bw_check q8-bw /tmp/bw0.log
set_paths 4 paths-4
bw_server /tmp/bw1.log -p 18701 -t 1 -D 4 -s 65536
bw_check spread-bw /tmp/bw1.log
bwgid=$gi6
bw_server /tmp/bw1-6.log -p 18711 -t 1 -D 4 -s 65536
bw_check spread6-bw /tmp/bw1-6.log
bwgid=
set_paths 8 paths-8
bw_server /tmp/bw2.log -p 18702 -D 20 -s 65536 --report_gbits
bw_check fail-bw /tmp/bw2.log
bwgid=$gi6
bw_server /tmp/bw2-6.log -p 18712 -D 9 -s 65536 --report_gbits
bw_check fail6-bw /tmp/bw2-6.log
bwgid=
timeout 150 rping -s -a "$RS_IP" -p 18703 -V -C 1000 -S 4096 \
    > /tmp/rp0.log 2>&1
rc=$?
rp_check rping-rate /tmp/rp0.log 1000
n=$(timeout 60 nc -l -p 30970 </dev/null)
timeout 200 rping -s -a "$RS_IP" -p 18704 -V -C "$n" -S 4096 \
    > /tmp/rp1.log 2>&1
rc=$?
rp_check fail-rping /tmp/rp1.log "$n"
dmesg_clean
exit 0
