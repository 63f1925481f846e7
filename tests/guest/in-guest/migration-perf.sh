# migration part 3, either VM: client of the perftest programs in clients
# and server of those in servers (write, read, send: ib_<x>_bw).  Set
# before: clients, servers, migs (on VM 1, the migrations each program
# must have lived through and the notices expected; empty on VM 2), secs
# (how long each program sends), pings (if set: VM 1 also serves rping -V
# of that many pings, VM 2 is its client).
port() { case $1 in write) echo 18611 ;; read) echo 18612 ;; send) echo 18613 ;; esac; }
args() { echo "-d $dev -x $gi -F -D $secs -s 65536 -u 18$([ "$1" = read ] && echo ' -o 16')"; }
wait_gid
for x in $servers; do
    ib_${x}_bw -p $(port $x) $(args $x) > /tmp/$x 2>&1 & eval s_$x=\$!
done
if [ -n "$pings" ] && [ -n "$migs" ]; then
    rping -s -V -C $pings -S 4096 -p 7174 -a $RS_IP > /tmp/rp 2>&1 & rp=$!
fi
sleep 2
if [ -n "$pings" ] && [ -z "$migs" ]; then
    retry /tmp/rp rping -c -V -C $pings -S 4096 -p 7174 -a $RS_PEER & rp=$!
fi
for x in $clients; do
    retry /tmp/$x ib_${x}_bw -p $(port $x) $(args $x) $RS_PEER & eval c_$x=\$!
done
for x in $clients; do eval wait \$c_$x; v $x-bw-client $? /tmp/$x $migs; done
for x in $servers; do eval wait \$s_$x; v $x-bw-server $? /tmp/$x $migs; done
if [ -n "$pings" ]; then
    wait $rp; v rping-$([ -n "$migs" ] && echo server || echo client) $? /tmp/rp
fi
clean
[ -z "$migs" ] || notice $migs
