# migration part 2, VM 3 (soft-RoCE): client of VM 1's rping -V.
sleep 1
retry /tmp/rp rping -c -V -C 20000 -S 4096 -a 10.77.0.1; v rping-client $? /tmp/rp; clean
