#!/usr/bin/env python3
"""The adapter in libvirt domains, and `virsh migrate --live` between two
libvirt instances that act as two hosts, during verified RDMA traffic
(docs/system/devices/rdma-session-libvirt.rst).

Each domain is made from examples/libvirt/rdma-session-domain.xml (the
adapter as <interface type='bridge'> with <model type='rdma-session'/>:
libvirt creates the tap, puts it on br0 and passes the model through as
-device rdma-session), running the project's initramfs guest with the
project's QEMU as its emulator.  The hosts are libvirtd instances in
network, mount and UTS namespaces of their own (rstest/virthost.py),
Debian 12's libvirt 9.0 (installed with the project's private apt
configuration if missing).

  Domain.test_lifecycle     one host, two domains: virsh define, start,
                            the QEMU command line libvirt built, the
                            device in the guests, RDMA traffic between
                            them (ib_write_bw, rping -V), the guests
                            power off, virsh destroy of a running one,
                            undefine
  Domain.test_hotplug       virsh attach-interface --model rdma-session
                            to a running domain: the guest driver binds
                            it; detach-interface: it lets it go
  Migration.test_migrate    three hosts on a VXLAN overlay
                            (rstest/overlay.py): vm1 on h1, its peer vm2
                            on h3, a verified rping stream between them,
                            during
                            which vm1 is migrated h1 -> h2
                            (virsh migrate --live, virsh driving both
                            daemons) and back h2 -> h1 (--p2p: h2's
                            daemon connects to h1's over TCP); libvirt's
                            figures (total time, downtime) per migration

Usage: tests/guest/libvirt.py [CLASS[.test_METHOD]...]   (default: all)
Environment: RS_BUILD; RS_LIBVIRT_PINGS (rping count of the migration
  stream, default 15000); RS_LIBVIRT_MIGRATIONS (default 2, alternating
  direction and mode).
Needs root.  Output: TAP, figures as "# " lines.  Logs:
$RS_BUILD/test-logs/libvirt.last/CLASS/ (each host's directory: virsh.log,
libvirtd.log, the QEMU logs and consoles under log/qemu/).
"""

import json
import os
import re
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import console  # noqa: E402
from rstest.suite import BUILD, Suite  # noqa: E402
from rstest.tap import TapResult  # noqa: E402
from rstest import virthost  # noqa: E402
from rstest.virthost import Net, VirtError, need_libvirt  # noqa: E402

QEMU = os.path.join(BUILD, "qemu", "qemu-system-x86_64")
PINGS = int(os.environ.get("RS_LIBVIRT_PINGS", "15000"))
MIGRATIONS = int(os.environ.get("RS_LIBVIRT_MIGRATIONS", "2"))
NETS = []

# rs_barrier K: both guests reached K (TCP over the adapter's Ethernet,
# busybox nc; VM 1 listens)
BARRIER = r'''rs_barrier() {
    if [ "$RS_VM_INDEX" = 1 ]; then
        timeout 120 nc -l -p $((30000 + $1)) </dev/null >/dev/null 2>&1
    else
        n=0
        until nc -w 2 10.77.0.1 $((30000 + $1)) </dev/null >/dev/null 2>&1; do
            n=$((n + 1)); [ $n -lt 300 ] || return 1; sleep 0.3
        done
    fi
}
ip() { /usr/bin/ip "$@"; }
'''


def script(index: int, body: str) -> str:
    return "export RS_VM_INDEX=%d\n%s%s\n" % (index, BARRIER, body)


class LibvirtTest(unittest.TestCase):
    """A class's hosts (HOSTS libvirtd instances), set up once."""

    HOSTS = 1
    # rstest.overlay's hosts (each VM's first host) instead of HOSTS
    OVERLAY = None
    suite = None

    @classmethod
    def logdir(cls) -> str:
        if LibvirtTest.suite is None:
            LibvirtTest.suite = Suite("libvirt", out=open(os.devnull, "w"))
        return LibvirtTest.suite.dir

    @classmethod
    def setUpClass(cls) -> None:
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (network namespaces)")
        root = os.path.join(cls.logdir(), cls.__name__)
        os.makedirs(root, exist_ok=True)
        need_libvirt(os.path.join(cls.logdir(), "apt.log"))
        if not os.access(QEMU, os.X_OK):
            raise VirtError("no %s: run scripts/build-qemu.sh" % QEMU)
        from rstest import launcher  # pylint: disable=import-outside-toplevel
        launcher.QUIET = True
        img = launcher.image_script("guest-image.sh")
        cls.image = img
        cls.net = Net(root, cls.HOSTS, QEMU, overlay=cls.OVERLAY)
        NETS.append(cls.net)
        t0 = time.monotonic()
        try:
            cls.net.create()
        except BaseException:
            cls.net.destroy()
            raise
        cls.setup_seconds = time.monotonic() - t0
        cls.hosts = cls.net.hosts
        print("# %s: %s, up in %.1f s" % (cls.__name__, cls.net.describe(),
                                          cls.setup_seconds), flush=True)

    @classmethod
    def tearDownClass(cls) -> None:
        net = getattr(cls, "net", None)
        if net is not None:
            net.destroy()
            NETS.remove(net)

    def domain(self, index: int) -> virthost.Domain:
        return virthost.Domain(self.net.prefix, index, emulator=QEMU,
                      kernel=self.image["RS_KERNEL"],
                      initrd=self.image["RS_INITRD"])

    def note(self, text: str) -> None:
        for ln in text.splitlines():
            print("# %s" % ln, flush=True)

    def wait_for(self, what: str, cond, timeout: float) -> None:
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                self.fail("%s: not after %g s" % (what, timeout))
            time.sleep(0.3)

    def wait_ready(self, doms, timeout: float = 180) -> None:
        for d in doms:
            self.wait_for("%s ready" % d.name,
                          lambda d=d: console.readies(d.console()) > 0,
                          timeout)
            self.assertIn("RDMA devices: rsess0", d.console(), d.name)

    def wait_done(self, doms, timeout: float) -> None:
        for d in doms:
            self.wait_for("%s's command ended" % d.name,
                          lambda d=d: console.exit_status(d.console())
                          is not None, timeout)

    def state(self, host, dom: virthost.Domain) -> str:
        return host.virsh("domstate", dom.name, check=False).stdout.strip()


class Domain(LibvirtTest):
    """One libvirt host, two domains from the example XML."""

    HOSTS = 1

    def test_lifecycle(self):
        """The example validates; define, start, RDMA traffic between
        the domains, stop, undefine."""
        h = self.hosts[1]
        # the example as it is, against libvirt's schema
        self.note(virthost.sh(["virt-xml-validate", virthost.EXAMPLE,
                               "domain"]).strip())
        vms = [self.domain(1), self.domain(2)]
        t0 = time.monotonic()
        for d in vms:
            d.define(h)
        dumped = h.virsh("dumpxml", vms[0].name).stdout
        self.assertRegex(dumped, r"<model type='rdma-session'/>")
        m = re.search(r"<interface type='bridge'>.*?</interface>", dumped,
                      re.S)
        self.assertIsNotNone(m, dumped)
        self.note("libvirt's interface: " +
                  " ".join(ln.strip() for ln in m.group(0).splitlines()))
        for d in vms:
            d.start(h)
        t_start = time.monotonic() - t0
        qlog = vms[0].qemu_log()
        dev = re.search(r"-device '(\{\"driver\":\"rdma-session\"[^']*)'",
                        qlog)
        self.assertIsNotNone(dev, "no -device rdma-session in the QEMU "
                             "log:\n" + qlog[-3000:])
        ndev = re.search(r"-netdev '(\{\"type\":\"tap\"[^']*)'", qlog)
        self.assertIsNotNone(ndev, qlog[-3000:])
        self.note("QEMU: -netdev %s -device %s" % (ndev.group(1),
                                                   dev.group(1)))
        taps = re.findall(r"vnet[0-9]+", virthost.sh(
            ["ip", "-n", h.ns, "-o", "link", "show", "master", "br0"]))
        self.assertEqual(len(taps), 2, "taps on br0: %s" % taps)
        self.wait_ready(vms)
        t_ready = time.monotonic() - t0
        server = r'''ib_write_bw -x 1 -n 1000 -s 65536 > /tmp/bw.txt 2>&1 &
bw=$!
sleep 1; rs_barrier 1
wait $bw; r=$?; cat /tmp/bw.txt; echo "ib_write_bw server status $r"
[ $r = 0 ] || exit 1
rping -s -V -C 2000 -S 4096 -a 10.77.0.1 &
rp=$!
sleep 1; rs_barrier 2
wait $rp; r=$?; echo "rping server status $r"; exit $r'''
        client = r'''rs_barrier 1 || exit 2
ib_write_bw -x 1 -n 1000 -s 65536 10.77.0.1; r=$?
echo "ib_write_bw client status $r"; [ $r = 0 ] || exit 1
rs_barrier 2 || exit 2
t0=$(date +%s)
rping -c -V -C 2000 -S 4096 -a 10.77.0.1; r=$?
echo "rping client status $r, 2000 pings of 4096 bytes in $(( $(date +%s) - t0 )) s"
exit $r'''
        vms[0].send(script(1, server))
        vms[1].send(script(2, client))
        self.wait_done(vms, 240)
        out = {d.index: d.console() for d in vms}
        for d in vms:
            self.assertEqual(console.exit_status(out[d.index]), "0",
                             "%s:\n%s" % (d.name, out[d.index][-3000:]))
        bw = re.search(r"^\s*65536\s+\d+\s+([\d.]+)\s+([\d.]+)", out[2], re.M)
        self.note("ib_write_bw 1000 x 64 KiB: %s MB/s (peak %s)" % (
            bw.group(2) if bw else "?", bw.group(1) if bw else "?"))
        rp = re.search(r"rping client status 0, .*", out[2])
        self.note(rp.group(0) if rp else "rping: ?")
        # the guests powered off after their commands: shut off
        for d in vms:
            self.wait_for("%s shut off" % d.name,
                          lambda d=d: self.state(h, d) == "shut off", 30)
        # start again and stop a running domain with virsh destroy
        vms[0].start(h)
        self.wait_ready([vms[0]], 120)
        self.assertEqual(self.state(h, vms[0]), "running")
        h.virsh("destroy", vms[0].name)
        self.assertEqual(self.state(h, vms[0]), "shut off")
        for d in vms:
            h.virsh("undefine", d.name)
        left = h.virsh("list", "--all", "--name").stdout.split()
        for d in vms:
            self.assertNotIn(d.name, left)
        self.note("define+start %.1f s, both ready %.1f s, total %.1f s" % (
            t_start, t_ready, time.monotonic() - t0))

    def test_hotplug(self):
        """virsh attach-interface --model rdma-session to a running
        domain (the pcie-root-port libvirt left free), the guest's driver
        binds it (rsess1, eth1); detach-interface, the driver lets it
        go."""
        h = self.hosts[1]
        d = self.domain(3)
        d.define(h)
        d.start(h)
        self.wait_ready([d])
        mac = "52:54:00:77:00:13"
        h.virsh("attach-interface", d.name, "bridge", "br0", "--model",
                "rdma-session", "--mac", mac, "--live")
        self.assertRegex(h.virsh("domiflist", d.name).stdout,
                         r"bridge\s+br0\s+rdma-session\s+%s" % mac)
        d.send(r'''n=0
until [ -e /sys/class/infiniband/rsess1 ] && [ -e /sys/class/net/eth1 ]; do
    n=$((n + 1)); [ $n -lt 300 ] || { dmesg | tail -n 20; break; }; sleep 0.2
done
echo "plugged: $(ls /sys/class/infiniband | tr '\n' ' ')/ $(ls /sys/class/net | tr '\n' ' ')"
cat /sys/class/net/eth1/address
echo "waiting for the unplug"
n=0
while [ -e /sys/class/infiniband/rsess1 ]; do
    n=$((n + 1)); [ $n -lt 300 ] || { dmesg | tail -n 20; break; }; sleep 0.2
done
echo "unplugged: $(ls /sys/class/infiniband | tr '\n' ' ')/ $(ls /sys/class/net | tr '\n' ' ')"
dmesg | grep -E "WARNING|BUG:|Oops|Call Trace" && exit 1
exit 0''')
        self.wait_for("the guest's driver bound the new adapter",
                      lambda: "waiting for the unplug" in d.console(), 120)
        out = d.console()
        self.assertIn("plugged: rsess0 rsess1 / eth0 eth1 lo", out,
                      out[-2000:])
        self.assertIn(mac + "\n", out, out[-2000:])
        h.virsh("detach-interface", d.name, "bridge", "--mac", mac, "--live")
        self.wait_done([d], 90)
        out = d.console()
        self.assertEqual(console.exit_status(out), "0", out[-2000:])
        self.assertIn("unplugged: rsess0 / eth0 lo", out, out[-2000:])
        self.assertNotIn(mac, h.virsh("domiflist", d.name,
                                      check=False).stdout)
        self.wait_for("%s shut off" % d.name,
                      lambda: self.state(h, d) == "shut off", 30)
        h.virsh("undefine", d.name)
        self.note("attach-interface and detach-interface of a second "
                  "adapter: bound as rsess1/eth1, then released")


class Migration(LibvirtTest):
    """Three libvirt hosts on rstest.overlay's VXLAN overlay; vm1 migrates
    between h1 and h2 during a verified rping stream with vm2 on h3."""

    OVERLAY = [1, 3]

    def migrate(self, k: int, dom: virthost.Domain, src, dst, p2p: bool) -> str:
        """virsh migrate --live dom src -> dst; libvirt's figures."""
        dom.prepare(dst)
        if p2p:
            args = ["migrate", "--live", "--p2p", dom.name, dst.tcp_uri,
                    "tcp://%s" % dst.addr]
        else:
            args = ["migrate", "--live", dom.name, dst.uri,
                    "tcp://%s" % dst.addr]
        t0 = time.monotonic()
        src.virsh(*args, timeout=300)
        wall = time.monotonic() - t0
        dom.hosts.append(dst)
        info = dst.virsh("domjobinfo", "--completed", dom.name,
                         check=False).stdout
        f = {}
        for key, pat in (("total", r"Time elapsed:\s+(\d+)\s+ms"),
                         ("downtime", r"Total downtime:\s+(\d+)\s+ms"),
                         ("mib", r"Data processed:\s+([\d.]+) MiB")):
            m = re.search(pat, info)
            f[key] = m.group(1) if m else "?"
        self.assertEqual(self.state(dst, dom), "running")
        self.assertNotEqual(self.state(src, dom), "running")
        self.downtimes.append(int(f["downtime"]) if f["downtime"].isdigit()
                              else 0)
        return ("migration %d %s -> %s%s: virsh %.1f s, total %s ms, "
                "downtime %s ms, %s MiB" % (
                    k, src.name, dst.name, " (--p2p)" if p2p else "",
                    wall, f["total"], f["downtime"], f["mib"]))

    def test_migrate(self):
        """virsh migrate --live of vm1 h1 -> h2 -> h1 during rping -V
        with vm2 (on h3): the stream passes on both sides."""
        h1, h2, h3 = self.hosts[1], self.hosts[2], self.hosts[3]
        t0 = time.monotonic()
        vm1, vm2 = self.domain(1), self.domain(2)
        for h in (h1, h2):
            vm1.prepare(h)
        vm1.define(h1)
        vm2.define(h3)
        vm1.start(h1)
        vm2.start(h3)
        self.wait_ready([vm1, vm2])
        t_ready = time.monotonic() - t0
        # the frames vm2 receives (QEMU's filter-dump on its netdev, added
        # over QMP through libvirt): the RDMA stall it saw at each switch
        pcap = "/var/log/libvirt/qemu/%s.pcap" % vm2.name
        h3.virsh("qemu-monitor-command", vm2.name, json.dumps(
            {"execute": "object-add", "arguments": {
                "qom-type": "filter-dump", "id": "rsldump",
                "netdev": "hostnet0", "file": pcap, "maxlen": 96}}))
        self.downtimes = []
        server = r'''rping -s -V -C %d -S 4096 -a 10.77.0.1 &
rp=$!
sleep 1; rs_barrier 1
wait $rp; r=$?; echo "rping server status $r"; exit $r''' % PINGS
        client = r'''rs_barrier 1 || exit 2
echo "rping stream starts"
t0=$(date +%%s)
rping -c -V -C %d -S 4096 -a 10.77.0.1; r=$?
echo "rping client status $r, %d pings of 4096 bytes in $(( $(date +%%s) - t0 )) s"
exit $r''' % (PINGS, PINGS)
        vm1.send(script(1, server))
        vm2.send(script(2, client))
        self.wait_for("the stream's start",
                      lambda: "rping stream starts" in vm2.console(), 120)
        t_stream = time.monotonic()
        lines = []
        src, dst = h1, h2
        for k in range(1, MIGRATIONS + 1):
            time.sleep(2 if k == 1 else 1)
            if console.exit_status(vm2.console()) is not None:
                self.fail("the stream ended before migration %d (%s); "
                          "raise RS_LIBVIRT_PINGS:\n%s" % (
                              k, "; ".join(lines), vm2.console()[-2000:]))
            lines.append(self.migrate(k, vm1, src, dst, p2p=k % 2 == 0))
            self.note(lines[-1])
            src, dst = dst, src
        after = console.exit_status(vm2.console()) is None
        self.wait_done([vm1, vm2], 600)
        out1, out2 = vm1.console(), vm2.console()
        self.assertIn("rping server status 0", out1, out1[-3000:])
        self.assertEqual(console.exit_status(out2), "0", out2[-3000:])
        rp = re.search(r"rping client status 0, .*", out2)
        self.note("%s (stream %.0f s)" % (rp.group(0) if rp else "?",
                                          time.monotonic() - t_stream))
        self.assertTrue(after, "the stream ended during the last "
                        "migration: it did not run across it")
        h3.virsh("qemu-monitor-command", vm2.name, json.dumps(
            {"execute": "object-del", "arguments": {"id": "rsldump"}}),
                 check=False)
        try:
            # pylint: disable=import-outside-toplevel
            from rstest.migration import stalls
            got = stalls(h3.path(pcap), vm1.ip, vm2.ip, self.downtimes)
            self.note("RDMA stall vm2 saw at each switch (longest time "
                      "without a RoCE frame from vm1): %s" % ", ".join(
                          "%.0f ms" % ms if ms is not None else "?"
                          for ms in got))
        except Exception as e:  # pylint: disable=broad-except
            self.note("no stall figures: %s" % e)
        self.note("hosts up %.1f s, both domains ready %.1f s, total %.1f s"
                  % (self.setup_seconds, t_ready, time.monotonic() - t0))


def main() -> int:
    mod = sys.modules["__main__"]
    loader = unittest.defaultTestLoader
    names = sys.argv[1:]
    if names:
        tests = loader.loadTestsFromNames(names, mod)
    else:
        tests = unittest.TestSuite(loader.loadTestsFromTestCase(c)
                                   for c in (Domain, Migration))
    result = TapResult()

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, stop)
    try:
        tests.run(result)
    finally:
        for n in list(NETS):
            n.destroy()
    return result.plan()


if __name__ == "__main__":
    sys.exit(main())
