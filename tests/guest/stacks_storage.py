"""Storage over RDMA in the Debian guests (tests/guest/stacks.py): NFS over
RDMA (nfs-kernel-server, rpcrdma), iSCSI with the iSER transport (LIO's
isert through targetcli, open-iscsi's ib_iser) and NVMe-oF over RDMA
(nvmet_rdma through configfs, nvme-cli's nvme_rdma).  VM 1 serves, VM 2
is the client; every test takes down what it set up, so the others of
the boot find the kernel as it was."""

import json
import re
import time

# a small tree of known content: (name, KiB), 4 KiB .. 4 MiB
TREE = [("a/small", 4), ("a/b/mid", 100), ("c/big", 1024), ("huge", 4096),
        ("odd", 37)]
NFS_DIR = "/srv/nfs"
NFS_MNT = "/mnt/nfs"
ISER_IQN = "iqn.2024-01.io.rdma-session:stacks"
ISER_IMG = "/srv/iser.img"
NVMF_NQN = "nqn.2024-01.io.rdma-session:stacks"
NVMF_IMG = "/srv/nvmf.img"

# fio's JSON between markers; the host reads it (fio warns on stderr)
FIO_JSON = r'''
echo FIO-JSON-BEGIN; cat /tmp/fio.json; echo FIO-JSON-END
'''
# the sha256 of the first MiB count of $1 (a device or an image file)
SUM_MB = r'''
sum_mb() { dd if="$1" bs=1M count="$2" iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1; }
'''


class StorageTests:
    """Mixin of distro.PairTest."""

    # pylint: disable=no-member

    def fio_result(self, out: str, what: str) -> str:
        """fio's JSON in out: no job error, some data both ways; its
        bandwidth as a figure."""
        m = re.search(r"FIO-JSON-BEGIN\n(.*?)FIO-JSON-END", out, re.S)
        self.assertIsNotNone(m, "%s: no fio output:\n%s" % (what, out[-2000:]))
        text = m.group(1)
        # fio may put notes before the JSON object
        res = json.loads(text[text.index("{"):])
        job = res["jobs"][0]
        self.assertEqual(job["error"], 0, "%s: fio error %s" % (what, job))
        rd, wr = job["read"], job["write"]
        self.assertGreater(wr["io_bytes"], 0, what)
        # verify read everything back: the reads happened and agreed
        self.assertGreaterEqual(rd["io_bytes"], wr["io_bytes"], what)
        return ("fio 64 KiB randwrite %.1f MB/s, verify read %.1f MB/s"
                % (wr["bw_bytes"] / 1e6, rd["bw_bytes"] / 1e6))

    def dd_rate(self, out: str, tag: str) -> str:
        m = re.search(r"%s: .*copied, ([\d.,]+) s, ([\d.,]+ [kMG]?B/s)"
                      % tag, out)
        return m.group(2) if m else "?"

    # --- NFS over RDMA -------------------------------------------------------

    def test_nfs_rdma(self):
        """NFS over RDMA: VM 1's nfsd exports a directory with an rdma
        listener on 20049, VM 2 mounts it with proto=rdma (NFS 4.2, else
        3); a tree of files 4 KiB..4 MiB written on the client reads back
        with the same sha256 after a remount (no page cache) and in the
        exported directory on the server; /proc/mounts and mountstats
        show the rdma transport; fio's verified random writes end without
        error."""
        t0 = time.time()
        mk = "".join("mkdir -p $(dirname %s); dd if=/dev/urandom of=%s "
                     "bs=1K count=%d status=none\n" % (n, n, k)
                     for n, k in TREE)
        try:
            self.sh(1, r'''
modprobe nfsd; modprobe rpcrdma
systemctl stop nfs-server
mkdir -p %(dir)s && rm -rf %(dir)s/*
mkdir -p /etc/exports.d
echo "%(dir)s *(rw,no_root_squash,insecure,sync,no_subtree_check,fsid=7)" > /etc/exports.d/rs-stacks.exports
# a short NFSv4 grace period (set while nfsd is down): a new server
# refuses opens until it ends
mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
echo 10 > /proc/fs/nfsd/nfsv4gracetime
echo 10 > /proc/fs/nfsd/nfsv4leasetime
systemctl start nfs-server
grep -q '^rdma 20049' /proc/fs/nfsd/portlist || echo 'rdma 20049' > /proc/fs/nfsd/portlist
exportfs -v
cat /proc/fs/nfsd/portlist
grep -q '^rdma 20049' /proc/fs/nfsd/portlist
''' % {"dir": NFS_DIR}, 300)
            out = self.sh(2, r'''
modprobe rpcrdma
mkdir -p %(mnt)s
mountpoint -q %(mnt)s && umount %(mnt)s
v=
for vers in 4.2 3; do
    if timeout 120 mount -t nfs -o rdma,port=20049,vers=$vers $RS_PEER:%(dir)s %(mnt)s; then
        v=$vers; break
    fi
done
[ -n "$v" ] || { echo "mount failed"; dmesg | grep -iE 'rpcrdma|nfs|rdma' | tail; exit 1; }
echo "nfs version $v"
grep " %(mnt)s " /proc/mounts
awk -v m=%(mnt)s '$1 == "device" && $5 == m { on = 1 } on && /xprt:/ { print; exit }' /proc/self/mountstats
cd %(mnt)s
t=$(date +%%s.%%N)
%(mk)s
find . -type f ! -name SHA256SUMS | sort | xargs sha256sum > /tmp/nfs.sums
cp /tmp/nfs.sums SHA256SUMS
sync
echo "tree written in $(awk "BEGIN { printf \"%%.1f\", $(date +%%s.%%N) - $t }") s"
cd /
# remount: the reads come from the server, not the page cache
umount %(mnt)s
echo 3 > /proc/sys/vm/drop_caches
mount -t nfs -o rdma,port=20049,vers=$v $RS_PEER:%(dir)s %(mnt)s
cd %(mnt)s
sha256sum -c /tmp/nfs.sums && echo "client checksums equal"
cmp SHA256SUMS /tmp/nfs.sums
timeout 200 fio --name=t --directory=%(mnt)s --rw=randwrite --bs=64k --size=16M \
    --verify=crc32c --do_verify=1 --direct=1 --numjobs=1 \
    --output-format=json --output=/tmp/fio.json
echo "fio status $?"
rm -f %(mnt)s/t.0.0
cd /
'''  % {"mnt": NFS_MNT, "dir": NFS_DIR, "mk": mk} + FIO_JSON, 300)
            self.assertRegex(out, r"client checksums equal")
            self.assertRegex(out, r" %s nfs4? \S*proto=rdma" % NFS_MNT)
            self.assertRegex(out, r"xprt:\s+rdma ")
            self.assertIn("fio status 0", out)
            ver = re.search(r"nfs version (\S+)", out).group(1)
            fio = self.fio_result(out, "fio over NFS")
            # the server's own view of what the client wrote
            srv = self.sh(1, "cd %s && sha256sum -c SHA256SUMS && "
                          "echo 'server checksums equal'" % NFS_DIR, 120)
            self.assertIn("server checksums equal", srv)
            self.assertEqual(srv.count(": OK"), len(TREE), srv)
            tree = re.search(r"tree written in (\S+) s", out)
            self.note("NFS %s over RDMA: %d files (%.1f MiB) equal on "
                      "client and server, written in %s s; %s; %.0f s"
                      % (ver, len(TREE), sum(k for _, k in TREE) / 1024.0,
                         tree.group(1) if tree else "?", fio,
                         time.time() - t0))
        finally:
            self.run_on(2, "mountpoint -q %s && umount %s; true"
                        % (NFS_MNT, NFS_MNT), 120, check=False)
            self.run_on(1, r'''
rm -f /etc/exports.d/rs-stacks.exports
exportfs -ra
systemctl stop nfs-server
rm -rf %s
''' % NFS_DIR, 120, check=False)

    # --- iSER ----------------------------------------------------------------

    def target_holds(self, img: str, want: str, what: str) -> None:
        """VM 1's file img holds in its first 8 MiB what the initiator
        wrote (checksum want)."""
        srv = self.sh(1, SUM_MB + 'echo "target $(sum_mb %s 8)"' % img, 120)
        self.assertIn("target %s" % want, srv,
                      "%s differs from what was written" % what)

    def test_iser(self):
        """iSCSI over iSER: VM 1's LIO target (targetcli: a 64 MiB fileio
        backstore, demo-mode ACLs, a portal on its address with iSER on),
        VM 2's open-iscsi logs in through the iser interface; 8 MiB of
        random data written to the disk with O_DIRECT read back equal,
        and equal in the target's backing file; the session's transport
        is iser; logout, and the target is removed."""
        t0 = time.time()
        tgt = "/iscsi/%s/tpg1" % ISER_IQN
        try:
            self.sh(1, r'''
modprobe ib_isert
rm -f %(img)s
# one command per targetcli run (what every targetcli-fb accepts)
targetcli /backstores/fileio create name=rs_iser file_or_dev=%(img)s size=64M write_back=false || exit 1
targetcli /iscsi create %(iqn)s || exit 1
targetcli %(tgt)s/luns create /backstores/fileio/rs_iser || exit 1
targetcli %(tgt)s set attribute authentication=0 demo_mode_write_protect=0 generate_node_acls=1 cache_dynamic_acls=1 || exit 1
# the portal on the VM's address only, with iSER
targetcli %(tgt)s/portals delete 0.0.0.0 3260
targetcli %(tgt)s/portals create $RS_IP 3260 || exit 1
targetcli %(tgt)s/portals/$RS_IP:3260 enable_iser boolean=true || exit 1
targetcli ls /iscsi
targetcli ls %(tgt)s/portals | grep -q 'iser'
''' % {"img": ISER_IMG, "iqn": ISER_IQN, "tgt": tgt}, 300)
            out = self.sh(2, SUM_MB + r'''
modprobe ib_iser
# a name of its own if the package left it to be generated
grep -q '^InitiatorName=' /etc/iscsi/initiatorname.iscsi 2>/dev/null ||
    echo "InitiatorName=iqn.2024-01.io.rdma-session:vm$RS_VM_INDEX" > /etc/iscsi/initiatorname.iscsi
systemctl start iscsid
iscsiadm -m discovery -t st -p $RS_PEER:3260 -I iser || exit 1
iscsiadm -m node -T %(iqn)s -p $RS_PEER:3260 -I iser --login
disk=
for t in $(seq 60); do
    disk=$(iscsiadm -m session -P 3 | awk '/Attached scsi disk/ { print $4 }' | head -n 1)
    [ -n "$disk" ] && [ -b /dev/$disk ] && break
    sleep 1
done
[ -n "$disk" ] || { echo "no disk"; iscsiadm -m session -P 3; exit 1; }
echo "disk $disk: $(cat /sys/block/$disk/size) sectors"
iscsiadm -m session -P 1 | grep -E 'Target:|Transport|Portal|State'
dd if=/dev/urandom of=/tmp/iser.a bs=1M count=8 status=none
want=$(sha256sum < /tmp/iser.a | cut -d' ' -f1)
# 64 KiB writes, 1 MiB reads, all O_DIRECT
echo "write: $(dd if=/tmp/iser.a of=/dev/$disk bs=64k oflag=direct 2>&1 | tail -n 1)"
blockdev --flushbufs /dev/$disk
echo "read: $(dd if=/dev/$disk of=/dev/null bs=1M count=8 iflag=direct 2>&1 | tail -n 1)"
got=$(sum_mb /dev/$disk 8)
echo "sums $want $got"
[ "$want" = "$got" ] && echo "initiator checksums equal"
echo "want $want"
''' % {"iqn": ISER_IQN}, 300)
            self.assertIn("initiator checksums equal", out)
            self.assertRegex(out, r"Iface Transport: iser")
            self.assertRegex(out, r"iSCSI Session State: LOGGED_IN")
            want = re.search(r"want (\w+)", out).group(1)
            self.sh(2, "iscsiadm -m node -T %s -p $RS_PEER:3260 -I iser "
                    "--logout" % ISER_IQN, 120)
            self.target_holds(ISER_IMG, want, "the backing file")
            self.note("iSER: 8 MiB equal on initiator and target, write "
                      "%s, read %s; %.0f s"
                      % (self.dd_rate(out, "write"), self.dd_rate(out, "read"),
                         time.time() - t0))
        finally:
            self.run_on(2, r'''
iscsiadm -m node -T %s -p $RS_PEER:3260 -I iser --logout 2>/dev/null
iscsiadm -m node -o delete -T %s 2>/dev/null
iscsiadm -m discoverydb -t st -p $RS_PEER:3260 -I iser -o delete 2>/dev/null
true
''' % (ISER_IQN, ISER_IQN), 120, check=False)
            self.run_on(1, r'''
targetcli /iscsi delete %s
targetcli /backstores/fileio delete rs_iser
rm -f %s
''' % (ISER_IQN, ISER_IMG), 120, check=False)

    # --- NVMe-oF -------------------------------------------------------------

    def test_nvmeof(self):
        """NVMe-oF over RDMA: VM 1's nvmet (configfs: a 64 MiB file
        namespace, an rdma port on its address:4420), VM 2's nvme-cli
        discovers and connects over rdma; 8 MiB of random data written
        with O_DIRECT read back equal on the host and in the target's
        file; fio's verified random writes end without error; the
        controller's transport is rdma; disconnect, and the configfs
        entries are removed."""
        t0 = time.time()
        cfg = r'''
cfg=/sys/kernel/config/nvmet
s=$cfg/subsystems/%s
p=$cfg/ports/1
''' % NVMF_NQN
        try:
            self.sh(1, cfg + r'''
modprobe nvmet
modprobe nvmet_rdma
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
rm -f %(img)s; truncate -s 64M %(img)s
mkdir $s
echo 1 > $s/attr_allow_any_host
mkdir $s/namespaces/1
echo -n %(img)s > $s/namespaces/1/device_path
echo 1 > $s/namespaces/1/enable
mkdir $p
echo rdma > $p/addr_trtype
echo ipv4 > $p/addr_adrfam
echo "$RS_IP" > $p/addr_traddr
echo 4420 > $p/addr_trsvcid
ln -s $s $p/subsystems/ || exit 1
dmesg | grep nvmet | tail -n 3
''' % {"img": NVMF_IMG}, 300)
            out = self.sh(2, SUM_MB + r'''
modprobe nvme_rdma
nvme discover -t rdma -a $RS_PEER -s 4420
nvme connect -t rdma -n %(nqn)s -a $RS_PEER -s 4420
ctrl= blk=
for t in $(seq 60); do
    for c in /sys/class/nvme/nvme*; do
        [ "$(cat $c/subsysnqn 2>/dev/null)" = %(nqn)s ] && ctrl=${c##*/}
    done
    if [ -n "$ctrl" ]; then
        # the namespace's block device: the subsystem's (native
        # multipath) or the controller's own
        for d in /sys/class/nvme-subsystem/* /sys/class/nvme/$ctrl; do
            [ "$(cat $d/subsysnqn 2>/dev/null)" = %(nqn)s ] || continue
            blk=$(ls $d | grep -E '^nvme[0-9]+n[0-9]+$' | head -n 1)
            [ -n "$blk" ] && break
        done
        [ -n "$blk" ] && [ -b /dev/$blk ] && break
    fi
    sleep 1
done
[ -n "$blk" ] || { echo "no namespace"; ls /sys/class/nvme /sys/class/nvme-subsystem; exit 1; }
echo "ctrl $ctrl transport $(cat /sys/class/nvme/$ctrl/transport) address $(cat /sys/class/nvme/$ctrl/address)"
echo "namespace $blk: $(cat /sys/block/$blk/size) sectors"
nvme list -v
dd if=/dev/urandom of=/tmp/nvmf.a bs=1M count=8 status=none
want=$(sha256sum < /tmp/nvmf.a | cut -d' ' -f1)
echo "write: $(dd if=/tmp/nvmf.a of=/dev/$blk bs=64k oflag=direct 2>&1 | tail -n 1)"
echo "read: $(dd if=/dev/$blk of=/dev/null bs=1M count=8 iflag=direct 2>&1 | tail -n 1)"
got=$(sum_mb /dev/$blk 8)
echo "sums $want $got"
[ "$want" = "$got" ] && echo "host checksums equal"
echo "want $want"
# fio after the dd data, which the target checks afterwards
timeout 200 fio --name=t --filename=/dev/$blk --offset=32M --size=16M \
    --rw=randwrite --bs=64k --ioengine=libaio --iodepth=4 --direct=1 \
    --verify=crc32c --do_verify=1 --output-format=json --output=/tmp/fio.json
echo "fio status $?"
''' % {"nqn": NVMF_NQN} + FIO_JSON, 300)
            self.assertIn("host checksums equal", out)
            self.assertRegex(out, r"transport rdma address \S*traddr=")
            # nvme list -v: the controller's TxPort
            self.assertRegex(out, r"(?m)^nvme\d+ .* rdma +traddr=")
            self.assertIn("fio status 0", out)
            # the discovery log has the subsystem on an rdma port
            self.assertRegex(out, r"trtype:\s+rdma")
            self.assertIn(NVMF_NQN, out)
            fio = self.fio_result(out, "fio over NVMe-oF")
            want = re.search(r"want (\w+)", out).group(1)
            dis = self.sh(2, "nvme disconnect -n %s" % NVMF_NQN, 120)
            self.assertRegex(dis, r"disconnected 1 controller")
            self.target_holds(NVMF_IMG, want, "the namespace file")
            self.note("NVMe-oF/RDMA: 8 MiB equal on host and target, dd "
                      "write %s, read %s; %s; %.0f s"
                      % (self.dd_rate(out, "write"), self.dd_rate(out, "read"),
                         fio, time.time() - t0))
        finally:
            self.run_on(2, "nvme disconnect -n %s 2>/dev/null; true"
                        % NVMF_NQN, 120, check=False)
            self.run_on(1, cfg + r'''
rm -f $p/subsystems/%s
rmdir $p
echo 0 > $s/namespaces/1/enable
rmdir $s/namespaces/1
rmdir $s
rm -f %s
''' % (NVMF_NQN, NVMF_IMG), 120, check=False)
