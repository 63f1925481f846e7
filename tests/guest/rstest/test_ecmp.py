# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tests of the ECMP network (rstest.ecmp) and the launcher's --ecmp
options: the capture reader and the stall measure on made-up data, and,
as root, a real network of namespaces made, changed and removed."""

import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

from rstest import ecmp, launcher, netns
from rstest.vm import VM, EcmpSegment


def block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def option(code: int, val: bytes) -> bytes:
    return (struct.pack("<HH", code, len(val)) + val +
            b"\0" * (-len(val) % 4))


def roce(src: str, dst: str, sport: int, opcode: int, dqp: int) -> bytes:
    eth = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00"
    ip = (bytes([0x45, 0, 0, 60, 0, 0, 0x40, 0, 64, 17, 0, 0]) +
          bytes(int(x) for x in src.split(".")) +
          bytes(int(x) for x in dst.split(".")))
    udp = struct.pack(">HHHH", sport, ecmp.ROCE_PORT, 40, 0)
    bth = bytes([opcode, 0, 0xff, 0xff]) + struct.pack(">I", dqp) + b"\0" * 4
    return eth + ip + udp + bth


def roce6(src: str, dst: str, sport: int, opcode: int, dqp: int) -> bytes:
    eth = b"\x02" * 6 + b"\x04" * 6 + b"\x86\xdd"
    ip = (bytes([0x60, 0, 0, 0]) + struct.pack(">HBB", 28, 17, 64) +
          socket.inet_pton(socket.AF_INET6, src) +
          socket.inet_pton(socket.AF_INET6, dst))
    udp = struct.pack(">HHHH", sport, ecmp.ROCE_PORT, 28, 0)
    bth = bytes([opcode, 0, 0xff, 0xff]) + struct.pack(">I", dqp) + b"\0" * 4
    return eth + ip + udp + bth


def pcapng(frames) -> bytes:
    """A capture of two interfaces, r1 and r2 (nanoseconds), of
    (interface index, ns, packet)."""
    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    for name in (b"r1", b"r2"):
        out += block(1, struct.pack("<HHI", 1, 0, 64) + option(2, name) +
                     option(9, b"\x09") + option(0, b""))
    for iid, ns, pkt in frames:
        out += block(6, struct.pack("<IIIII", iid, ns >> 32,
                                    ns & 0xffffffff, len(pkt), len(pkt)) +
                     pkt)
    return out


class CaptureTest(unittest.TestCase):
    def test_read(self) -> None:
        base = 1_700_000_000 * 10 ** 9
        data = pcapng([
            (1, base + 2_000_000, roce("10.77.1.1", "10.77.2.1", 49156,
                                       0x0a, 0x12)),
            (0, base, roce("10.77.2.1", "10.77.1.1", 49157, 17, 0x34)),
            (1, base + 3_000_000, roce6("fd77:1::1", "fd77:2::1", 49158,
                                        0x0a, 0x12)),
            # not RoCE: UDP to another port
            (0, base + 1, roce("10.77.2.1", "10.77.1.1", 1, 17, 0)[:36] +
             struct.pack(">H", 53) + b"\0" * 20)])
        with tempfile.NamedTemporaryFile(suffix=".pcapng") as f:
            # a last block cut short, as by a killed dumpcap
            f.write(data + block(6, b"\0" * 40)[:20])
            f.flush()
            fr = ecmp.read_frames(f.name)
        self.assertEqual([(x.ifname, x.src, x.sport, x.opcode, x.dqp)
                          for x in fr],
                         [("r1", "10.77.2.1", 49157, 17, 0x34),
                          ("r2", "10.77.1.1", 49156, 0x0a, 0x12),
                          ("r2", "fd77:1::1", 49158, 0x0a, 0x12)])
        self.assertEqual([x.v6 for x in fr], [False, False, True])
        self.assertEqual(fr[2].dst, ecmp.vm_ip6(2))
        self.assertAlmostEqual(fr[1].t - fr[0].t, 0.002, places=6)
        self.assertEqual(ecmp.per(fr, lambda x: x.ifname),
                         {"r1": 1, "r2": 2})

    def test_missing(self) -> None:
        with self.assertRaises(ecmp.EcmpError):
            ecmp.read_frames("/nonexistent/ecmp-h1.pcapng")

    def test_gap(self) -> None:
        fr = [ecmp.Frame(t, "r1", "a", "b", 1, 1, 1)
              for t in (10.0, 10.1, 10.2, 10.9, 11.0)]
        self.assertEqual(ecmp.longest_gap(fr, 10.0, 11.0),
                         (0.7000000000000011, 10.2))
        # nothing after 10.2: the window's end counts
        gap, at = ecmp.longest_gap(fr[:3], 10.0, 12.0)
        self.assertAlmostEqual(gap, 1.8)
        self.assertEqual(at, 10.2)
        self.assertEqual(ecmp.longest_gap([], 1.0, 3.0), (2.0, 1.0))


class OptionsTest(unittest.TestCase):
    def test_ecmp(self) -> None:
        o = launcher.parse(["-n", "3", "--ecmp", "4", "--ecmp-capture"])
        self.assertEqual((o.ecmp, o.ecmp_capture), (4, True))
        for bad in (["--ecmp", "9"], ["--ecmp", "0"], ["--ecmp", "x"],
                    ["--ecmp", "2", "--dgram"],
                    ["--ecmp", "2", "--netdev-user"],
                    ["--ecmp", "2", "--migrate", "1@5"],
                    ["-n", "9", "--ecmp", "2"], ["--ecmp-capture"]):
            with self.assertRaises(launcher.SetupError, msg=bad):
                launcher.parse(bad)

    def test_vm(self) -> None:
        d = tempfile.mkdtemp()
        try:
            net = ecmp.Ecmp(d, 2, 4, tag="rse1")
            vm = VM(2, d, binary="qemu", kernel="k", initrd="i",
                    segment=EcmpSegment(net))
            args = " ".join(vm.args)
            self.assertIn("rs.ip=10.77.2.1/24 rs.gw=10.77.2.254", args)
            self.assertIn("-netdev tap,id=n0,ifname=tap0,script=no,"
                          "downscript=no", args)
            with open(os.path.join(vm.dir, "cmdline")) as f:
                self.assertTrue(f.read().startswith(
                    "ip netns exec rse1-h2 qemu "))
        finally:
            shutil.rmtree(d)


SEND = """
import socket
for p in range(50000, 50016):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("10.77.1.254", p))
    s.sendto(b"x", ("10.77.2.254", 4791))
"""


SEND6 = """
import socket
for p in range(50000, 50016):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.bind(("fd77:1::254", p))
    s.sendto(b"x", ("fd77:2::254", 4791))
"""


def can_make_namespaces() -> bool:
    return (os.geteuid() == 0 and shutil.which("ip") is not None and
            subprocess.call(["ip", "netns", "list"],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL) == 0)


@unittest.skipUnless(can_make_namespaces(), "needs root and ip netns")
class NetworkTest(unittest.TestCase):
    def test_network(self) -> None:
        d = tempfile.mkdtemp()
        net = ecmp.Ecmp(d, 2, 2)
        try:
            net.create()
            names = set(netns.namespaces())
            self.assertLessEqual({net.host_ns(1), net.host_ns(2),
                                  net.router_ns(1), net.router_ns(2)}, names)
            route = ecmp.sh(["ip", "-n", net.host_ns(1), "route", "show",
                             "10.77.2.0/24"])
            self.assertIn("nexthop via 10.101.1.2 dev r1", route)
            self.assertIn("nexthop via 10.102.1.2 dev r2", route)
            route6 = ecmp.sh(["ip", "-n", net.host_ns(1), "-6", "route",
                              "show", "fd77:2::/64"])
            self.assertIn("nexthop via fd77:101:1::2 dev r1", route6)
            self.assertIn("nexthop via fd77:102:1::2 dev r2", route6)
            for v in (4, 6):
                self.assertEqual(ecmp.sh(
                    ["ip", "netns", "exec", net.host_ns(1), "sysctl", "-n",
                     "net.ipv%d.fib_multipath_hash_policy" % v]).strip(),
                    "1")
            # UDP from host 1's gateway to host 2's, 16 source ports:
            # the routers forward them, over both
            a = net.forwarded()
            ecmp.sh(["ip", "netns", "exec", net.host_ns(1), sys.executable,
                     "-c", SEND])
            b = net.forwarded()
            # (and ARP, and port unreachables back)
            self.assertGreaterEqual(sum(b.values()) - sum(a.values()), 16)
            self.assertTrue(all(b[k] > a[k] for k in a), (a, b))
            # and over IPv6
            a = net.forwarded()
            ecmp.sh(["ip", "netns", "exec", net.host_ns(1), sys.executable,
                     "-c", SEND6])
            b = net.forwarded()
            self.assertGreaterEqual(sum(b.values()) - sum(a.values()), 16)
            self.assertTrue(all(b[k] > a[k] for k in a), (a, b))
            net.path_down(2)
            self.assertIn("state DOWN", ecmp.sh(
                ["ip", "-n", net.router_ns(2), "link", "show", "h1"]))
            # the host keeps the nexthops of the link that is down, for
            # IPv4 and IPv6 (linkdown, not dead: flows still hash to it)
            for _ in range(40):
                hops = (net.nexthop(1, 2, 2), net.nexthop(1, 2, 2, True))
                if all("linkdown" in h for h in hops):
                    break
                time.sleep(0.05)
            for h, via in zip(hops, ("10.102.1.2", "fd77:102:1::2")):
                self.assertIn("via %s dev r2" % via, h)
                self.assertIn("linkdown", h.split())
                self.assertNotIn("dead", h.split())
            net.path_up(2)
            self.assertIn("10.77.2.0/24 via 10.102.2.1", ecmp.sh(
                ["ip", "-n", net.router_ns(2), "route"]))
            self.assertIn("fd77:2::/64 via fd77:102:2::1", ecmp.sh(
                ["ip", "-n", net.router_ns(2), "-6", "route"]))
            again = ecmp.Ecmp.attach(d)
            self.assertEqual((again.tag, again.hosts, again.routers),
                             (net.tag, 2, 2))
        finally:
            net.destroy()
            shutil.rmtree(d)
        self.assertFalse({n for n in netns.namespaces()
                          if n.startswith(net.tag + "-")})

    def test_stale(self) -> None:
        # a process number that is not running: a crashed run's
        pid = 4194303
        while netns.pid_alive(pid):
            pid -= 1
        ns = "rse%d-r1" % pid
        ecmp.sh(["ip", "netns", "add", ns])
        # what the crashed run left running there
        left = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "60"])
        try:
            for _ in range(50):
                if ecmp.sh(["ip", "netns", "pids", ns]).split():
                    break
                time.sleep(0.1)
            self.assertIn(ns, ecmp.clean_stale())
            self.assertNotIn(ns, netns.namespaces())
            self.assertEqual(left.wait(10), -9)
        finally:
            left.kill()
            left.wait()
            ecmp.sh(["ip", "netns", "del", ns], check=False)


if __name__ == "__main__":
    unittest.main()
