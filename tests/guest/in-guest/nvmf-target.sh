# nvmf: guest-side part 'target' (sent by tests/guest/nvmf.py)
cfg=/sys/kernel/config/nvmet
s=$cfg/subsystems/$nqn
if ! modprobe brd rd_nr=1 rd_size=32768 || ! modprobe nvmet_rdma; then
    ck nvmf-target fail "modprobe brd/nvmet_rdma failed"
    exit 1
fi
mount -t configfs none /sys/kernel/config 2>/dev/null
err=
{ mkdir $s &&
  echo 1 > $s/attr_allow_any_host &&
  mkdir $s/namespaces/1 &&
  echo -n /dev/ram0 > $s/namespaces/1/device_path &&
  echo 1 > $s/namespaces/1/enable &&
  mkdir $cfg/ports/1 &&
  echo rdma > $cfg/ports/1/addr_trtype &&
  echo ipv4 > $cfg/ports/1/addr_adrfam &&
  echo "$RS_IP" > $cfg/ports/1/addr_traddr &&
  echo 4420 > $cfg/ports/1/addr_trsvcid &&
  ln -s $s $cfg/ports/1/subsystems/$nqn; } 2>/tmp/cfg.err || err=$(tr '\n' ' ' < /tmp/cfg.err)
if [ -n "$err" ]; then
    ck nvmf-target fail "configfs: $err $(dmesg | tail -n 3 | tr '\n' ' ')"
    exit 1
fi
ck nvmf-target ok "$nqn on /dev/ram0, rdma $RS_IP:4420"
# The host sends the MD5 of what it wrote once it has disconnected.
timeout 280 nc -l -p 7777 > /tmp/host.md5
want=$(awk '{print $1}' /tmp/host.md5)
got=$(dd if=/dev/ram0 bs=65536 count=32 2>/dev/null | md5sum | awk '{print $1}')
if [ -n "$want" ] && [ "$want" = "$got" ]; then
    ck nvmf-target-data ok "RAM disk holds what the host wrote (md5 $got)"
else
    ck nvmf-target-data fail "host md5 '$want', RAM disk md5 '$got'"
fi
if [ "$mig" = 1 ]; then
    m=$(migs); [ "$m" = 1 ] && ck migration-notice ok "$m" || ck migration-notice fail "$m of 1"
fi
b=$(badlog)
if [ -z "$b" ]; then ck dmesg-clean ok; else ck dmesg-clean fail "$b"; fi
