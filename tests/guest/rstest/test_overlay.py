# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tests of the hosts on a VXLAN overlay (rstest.overlay) and what a
migration between them takes from it: where a VM goes next, the
destination's command line on a tap, the launcher's options, and, as
root, real hosts made, a frame carried between two of them over VXLAN,
their forwarding tables read, and everything removed."""

import os
import shutil
import subprocess
import tempfile
import unittest

from rstest import launcher, migration, netns, overlay
from rstest.test_ecmp import can_make_namespaces
from rstest.vm import VM, OverlaySegment


class Placement(unittest.TestCase):

    def test_destination(self) -> None:
        """A VM goes to the first host no other VM started on, then
        back; the next after that is the other host again."""
        net = overlay.Overlay("/nonexistent", [1, 3, 3])
        self.assertEqual(net.hosts, 3)
        self.assertEqual(net.destination(1), 2)
        net.moved(1, 2)
        self.assertEqual(net.destination(1), 1)
        net.moved(1, 1)
        self.assertEqual(net.destination(1), 2)
        # every host taken: the next one
        net = overlay.Overlay("/nonexistent", [1, 2, 3])
        self.assertEqual(net.destination(1), 2)

    def test_uri(self) -> None:
        net = overlay.Overlay("/nonexistent", [1, 3])
        self.assertEqual(net.migration_uri(2, 40001), "tcp:10.250.0.2:40001")
        self.assertEqual(net.wrapper(2), ["ip", "netns", "exec",
                                          net.tag + "-h2"])

    def test_hosts(self) -> None:
        self.assertEqual(overlay.Overlay("/x", [1, 5]).hosts, 5)
        with self.assertRaises(overlay.OverlayError):
            overlay.Overlay("/x", [1, 9])


class Destination(unittest.TestCase):

    def test_dest_args_tap(self) -> None:
        """The destination gets the source's tap netdev and the gate on
        it."""
        args = ["-netdev", overlay.Overlay.netdev("n0", 2), "-device",
                "rdma-session,netdev=n0"]
        out = migration.dest_args(args, "/tmp/q.sock", "1")
        self.assertIn("tap,id=n0,ifname=tap2,script=no,downscript=no", out)
        self.assertIn("filter-redirector,id=%s,netdev=n0,queue=tx,outdev=%s"
                      % (migration.GATE, migration.GATE), out)
        self.assertEqual(out[-2:], ["-incoming", "defer"])

    def test_dest_args_none(self) -> None:
        with self.assertRaises(RuntimeError):
            migration.dest_args(["-netdev", "user,id=n0"], "/tmp/q", "1")

    def test_vm_on_overlay(self) -> None:
        d = tempfile.mkdtemp()
        try:
            net = overlay.Overlay(d, [1, 3])
            seg = OverlaySegment(net)
            vm = VM(2, d, binary="/bin/false", kernel="k", initrd="i",
                    segment=seg)
            self.assertTrue(seg.migratable)
            self.assertIn("tap,id=n0,ifname=tap2,script=no,downscript=no",
                          vm.args)
            self.assertEqual(seg.wrapper(2), net.wrapper(3))
            self.assertEqual(seg.destination(2), 2)
            seg.moved(2, 2)
            self.assertEqual(seg.wrapper(2), net.wrapper(2))
        finally:
            shutil.rmtree(d)


class Options(unittest.TestCase):

    def test_parse(self) -> None:
        o = launcher.parse(["-n", "3", "--overlay", "--host", "2", "5",
                            "--migrate", "1@5x2", "--migrate-no-announce"])
        assert o is not None
        self.assertTrue(o.overlay)
        self.assertEqual(o.hosts, {2: 5})
        self.assertFalse(o.mig_announce)

    def test_refused(self) -> None:
        for argv in (["--host", "1", "2"], ["--overlay", "--ecmp", "2"],
                     ["--overlay", "--dgram"], ["--overlay", "--host", "1",
                                                "9"],
                     ["--overlay", "--host", "3", "1"]):
            with self.assertRaises(launcher.SetupError, msg=argv):
                launcher.parse(argv)


@unittest.skipUnless(can_make_namespaces(), "needs root and ip netns")
class Real(unittest.TestCase):

    def test_hosts(self) -> None:
        """Three hosts: a frame from a tap on host 1 reaches host 3 over
        VXLAN, host 3's tables then send that MAC to host 1, and every
        namespace is gone after destroy()."""
        d = tempfile.mkdtemp()
        net = overlay.Overlay(d, [1, 3])
        try:
            net.create()
            self.assertTrue(os.path.isfile(os.path.join(d, "overlay.json")))
            names = netns.namespaces()
            for h in (1, 2, 3):
                self.assertIn(net.host_ns(h), names)
            mac = "52:54:00:77:00:01"
            # tap1 on host 1 has no reader: a veth stands in for the VM
            subprocess.run(
                ["ip", "-n", net.host_ns(1), "link", "add", "vm", "address",
                 mac, "type", "veth", "peer", "name", "vmp"], check=True)
            for dev in ("vm", "vmp"):
                subprocess.run(["ip", "-n", net.host_ns(1), "link", "set",
                                dev, "up"], check=True)
            subprocess.run(["ip", "-n", net.host_ns(1), "link", "set", "vmp",
                            "master", "br0"], check=True)
            self.assertEqual(net.fdb(3, mac), "unknown")
            # a broadcast from the "VM" (local experimental EtherType):
            # host 3 learns where it is
            send = ("import socket; s = socket.socket(socket.AF_PACKET, "
                    "socket.SOCK_RAW); s.bind(('vm', 0)); "
                    "s.send(b'\\xff' * 6 + bytes.fromhex('%s') + "
                    "b'\\x88\\xb5' + bytes(46))" % mac.replace(":", ""))
            subprocess.run(net.wrapper(1) + ["python3", "-c", send],
                           check=True)
            self.assertEqual(net.fdb(3, mac), overlay.underlay_ip(1))
            self.assertEqual(net.host_of(net.fdb(3, mac)), "h1")
            self.assertEqual(net.fdb(1, mac), "local (vmp)")
        finally:
            net.destroy()
            shutil.rmtree(d)
        names = netns.namespaces()
        for h in (1, 2, 3):
            self.assertNotIn(net.host_ns(h), names)
        self.assertNotIn(net.underlay_ns(), names)


if __name__ == "__main__":
    unittest.main()
