"""rstest.roce, the capture library: unbundle and bundle_faults on
bundles built here, the capture readers, packets, ICRCs, and
scripts/roce-icrc.py over it."""

import os
import struct
import subprocess
import sys
import tempfile
import unittest

from rstest import roce
from rstest.roce import bundle_faults, unbundle
from test_dissector import frame as dissector_frame


def frame(op: int, payload: bytes = b"") -> bytes:
    """A RoCEv2 frame to QP 1, PSN 0 (test_dissector's; a bundle has no
    ICRC of its own)."""
    return dissector_frame(op, 1, 0, payload, icrc=op != 0xc7)


def bundle(frames, count=None) -> bytes:
    """A bundle of frames as the adapter sends it (count: another count),
    its IPv4 header checksum right."""
    body = struct.pack("!HH", len(frames) if count is None else count, 0) + \
        b"".join(struct.pack("!H", len(f)) + f for f in frames)
    fr = bytearray(frame(0xc7, body))
    s = sum(struct.unpack("!10H", fr[14:34]))
    s = (s & 0xffff) + (s >> 16)
    fr[24:26] = struct.pack("!H", ~s & 0xffff)
    return bytes(fr)


class UnbundleTest(unittest.TestCase):
    def test_bundle(self) -> None:
        a, b = frame(0x0a, b"x" * 100), frame(0x11, b"\x1f\0\0\1")
        body = struct.pack("!HH", 2, 0) + struct.pack("!H", len(a)) + a + \
            struct.pack("!H", len(b)) + b
        self.assertEqual(unbundle(frame(0xc7, body)), [a, b])

    def test_not_a_bundle(self) -> None:
        a = frame(0x04, b"payload")
        self.assertEqual(unbundle(a), [a])
        self.assertEqual(unbundle(b"\0" * 20), [b"\0" * 20])

    def test_bad_lengths(self) -> None:
        a = frame(0x0a, b"x" * 100)
        short = struct.pack("!HH", 2, 0) + struct.pack("!H", len(a)) + a
        self.assertEqual(unbundle(frame(0xc7, short)), [])
        long = struct.pack("!HH", 1, 0) + struct.pack("!H", len(a) + 5) + a
        self.assertEqual(unbundle(frame(0xc7, long)), [])


class BundleFaultsTest(unittest.TestCase):
    def test_good(self) -> None:
        a, b = frame(0x0a, b"x" * 100), frame(0x11, b"\x1f\0\0\1")
        self.assertEqual(bundle_faults(bundle([a, b])), [])

    def test_faults(self) -> None:
        a, b = frame(0x0a, b"x" * 100), frame(0x11, b"\x1f\0\0\1")
        self.assertEqual(bundle_faults(bundle([a, b], 3)),
                         ["count 3, 2 packets"])
        self.assertEqual(bundle_faults(bundle([a], 1)),
                         ["count 1, reserved 0"])
        self.assertEqual(bundle_faults(bundle([])[:56]),
                         ["56 bytes, no count"])
        self.assertEqual(bundle_faults(bundle([a, frame(0xc6, bytes(16))])),
                         ["packet 2 has opcode 0xc6"])
        other = bytearray(b)
        other[34:36] = b"\xc0\x06"        # another UDP source port
        self.assertEqual(bundle_faults(bundle([a, bytes(other)])),
                         ["packet 2 has other addresses or source port"])
        bad = bytearray(bundle([a, b]))
        bad[24] ^= 1                        # the IP header checksum
        bad[-len(b) - 2:-len(b)] = struct.pack("!H", len(b) + 1)
        self.assertEqual(bundle_faults(bytes(bad)),
                         ["bad IP header checksum",
                          "packet 2 of %d bytes (%d left)" %
                          (len(b) + 1, len(b))])
        self.assertEqual(bundle_faults(bundle([a, b]) + b"\0"),
                         ["IP length %d, frame %d" % (
                             len(bundle([a, b])) - 14,
                             len(bundle([a, b])) + 1),
                          "UDP length %d, datagram %d" % (
                              len(bundle([a, b])) - 34,
                              len(bundle([a, b])) - 33),
                          "1 bytes after the last packet"])


ICRC_CLI = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "scripts", "roce-icrc.py")


def signed(fr: bytes) -> bytes:
    """fr with its ICRC computed (rstest.roce.icrc)."""
    o = roce.offsets(fr)
    comp, _ = roce.icrc(fr, *o)
    return fr[:-4] + struct.pack("<I", comp)


def pcap_bytes(frames, end="<", nano=False, cut=0) -> bytes:
    """A pcap of frames (record k at k s + 5 us or ns), the last record
    cut by cut bytes."""
    magic = 0xa1b23c4d if nano else 0xa1b2c3d4
    out = struct.pack(end + "IHHiIII", magic, 2, 4, 0, 0, 65535, 1)
    for k, f in enumerate(frames):
        out += struct.pack(end + "IIII", k, 5, len(f), len(f)) + f
    return out[:len(out) - cut]


class CaptureTest(unittest.TestCase):
    def test_records(self) -> None:
        a, b = frame(0x0a, b"x" * 10), frame(0x11, b"\x1f\0\0\1")
        for end in "<>":
            for nano in (False, True):
                rs = list(roce.records(pcap_bytes([a, b], end, nano)))
                self.assertEqual([(r.num, r.data, r.whole, r.ifname)
                                  for r in rs],
                                 [(1, a, True, ""), (2, b, True, "")])
                self.assertAlmostEqual(rs[1].t, 1 + (5e-9 if nano else 5e-6))
        # a record cut short ends the capture
        self.assertEqual(len(list(roce.records(pcap_bytes([a, b], cut=1)))),
                         1)
        with self.assertRaises(ValueError):
            list(roce.records(b"not a capture at all, not at all"))
        other = bytearray(pcap_bytes([a]))
        other[20] = 105                       # link type 802.11
        with self.assertRaises(ValueError):
            list(roce.records(bytes(other)))

    def test_offsets(self) -> None:
        a = frame(0x0a, b"x" * 10)
        self.assertEqual(roce.offsets(a), (14, 34, False))
        vlan = a[:12] + b"\x81\x00\x00\x05" + a[12:]
        self.assertEqual(roce.offsets(vlan), (18, 38, False))
        v6 = (a[:12] + b"\x86\xdd" + b"\x60" + bytes(3) +
              struct.pack("!HBB", len(a) - 34, 17, 64) + bytes(15) + b"\1" +
              bytes(15) + b"\2" + a[34:])
        self.assertEqual(roce.offsets(v6), (14, 54, True))
        self.assertIsNone(roce.offsets(a[:36]))
        other = bytearray(a)
        other[36:38] = b"\x12\xb8"            # UDP 4792
        self.assertIsNone(roce.offsets(bytes(other)))
        p = roce.Packet(1, 0.0, "", v6, 14, 54, True)
        self.assertEqual((p.src, p.dst, p.opcode), ("::1", "::2", 0x0a))

    def test_icrc(self) -> None:
        a = signed(frame(0x0a, b"x" * 10))
        comp, stored = roce.icrc(a, 14, 34, False)
        self.assertEqual(comp, stored)
        bad = bytearray(a)
        bad[56] ^= 1                          # the payload's first byte
        c2, s2 = roce.icrc(bytes(bad), 14, 34, False)
        self.assertNotEqual(c2, s2)
        # TTL, TOS, IP checksum and the BTH's byte 4 are not covered
        var = bytearray(a)
        var[15] = 0x10
        var[22] = 3
        var[24:26] = b"\x12\x34"
        var[46] = 0xc0                        # the BTH's byte 4
        self.assertEqual(roce.icrc(bytes(var), 14, 34, False), (comp, stored))
        # Ethernet padding after the UDP datagram is not covered either
        self.assertEqual(roce.icrc(a + bytes(6), 14, 34, False),
                         roce.icrc(a, 14, 34, False))

    def test_read_capture(self) -> None:
        a, b = signed(frame(0x0a, b"x" * 100)), signed(frame(0x11,
                                                             b"\x1f\0\0\1"))
        c = signed(frame(0x04, b"y" * 8))
        arp = bytes(12) + b"\x08\x06" + bytes(28)
        bb = bundle([a, b])
        pk, bs = roce.read_capture(pcap_bytes([c, arp, bb]))
        self.assertEqual([(p.num, p.frame, p.bundled) for p in pk],
                         [(1, c, False), (3, a, True), (3, b, True)])
        self.assertEqual([(x.num, x.src, x.dst, x.faults) for x in bs],
                         [(3, "10.77.0.2", "10.77.0.1", [])])
        p = pk[1]
        self.assertEqual((p.src, p.dst, p.sport, p.opcode, p.dqp, p.psn,
                          p.t), ("10.77.0.2", "10.77.0.1", 0xc005, 0x0a,
                                 1, 0, 2.000005))
        self.assertEqual(p.roce, a[42:])
        self.assertEqual(len(roce.packets(pcap_bytes([c, bb]),
                                          v4only=True)), 3)
        # a bundle whose lengths do not fill it: no packets, its faults
        pk, bs = roce.read_capture(pcap_bytes([bb[:-1]]))
        self.assertEqual((pk, len(bs)), ([], 1))
        self.assertTrue(bs[0].faults)

    def test_write_pcap(self) -> None:
        a = frame(0x0a, b"x" * 10)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "a.pcap")
            roce.write_pcap(path, [a, a])
            self.assertEqual([r.data for r in roce.records(path)], [a, a])

    def test_icrc_cli(self) -> None:
        """scripts/roce-icrc.py: good packets and bundles pass, a flipped
        byte fails, its --corrupt copy fails, a file not a pcap is 2."""
        a, b = signed(frame(0x0a, b"x" * 100)), signed(frame(0x11,
                                                             b"\x1f\0\0\1"))
        with tempfile.TemporaryDirectory() as d:
            def run(*args):
                r = subprocess.run([sys.executable, ICRC_CLI] + list(args),
                                   stdout=subprocess.PIPE, text=True,
                                   check=False)
                return r.returncode, r.stdout.splitlines()

            good = os.path.join(d, "good.pcap")
            roce.write_pcap(good, [a, bundle([a, b])])
            bad = os.path.join(d, "bad.pcap")
            rc, out = run(good, "--corrupt", bad)
            self.assertEqual((rc, out), (0, [
                "4 RoCEv2 packets, 0 bad ICRC, opcodes "
                "{0x0a: 2, 0x11: 1, 0xc7: 1}"]))
            rc, out = run(bad)
            self.assertEqual(rc, 1)
            self.assertTrue(out[0].startswith("1 RoCEv2 packets, 1 bad ICRC"))
            with open(os.path.join(d, "x"), "w") as f:
                f.write("x" * 40)
            self.assertEqual(run(os.path.join(d, "x"))[0], 2)

    def test_truncated(self) -> None:
        """A record the capture truncated after the headers (a local
        fabric's frame by reference): not checkable if its IP and UDP
        lengths end where its orig_len does; bad if not (or if it holds
        more than orig_len); with_fabric merges FILE.fabric in time
        order, keeping each record's lengths."""
        a = signed(frame(0x0a, b"x" * 100))
        hdr = a[:14 + 20 + 8 + 12 + 16]     # the headers up to the RETH

        def pcap(recs, t0=0):
            out = struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)
            for k, (f, orig) in enumerate(recs):
                out += struct.pack("<IIII", t0 + 2 * k, 0, len(f), orig) + f
            return out

        with tempfile.TemporaryDirectory() as d:
            def run(recs):
                path = os.path.join(d, "t.pcap")
                with open(path, "wb") as f:
                    f.write(pcap(recs))
                r = subprocess.run([sys.executable, ICRC_CLI, path],
                                   stdout=subprocess.PIPE, text=True,
                                   check=False)
                return r.returncode, r.stdout.splitlines()

            self.assertEqual(run([(a, len(a)), (hdr, len(a))]), (0, [
                "1 RoCEv2 packets, 0 bad ICRC, opcodes {0x0a: 1}; "
                "1 truncated by the capture, not checkable"]))
            rc, out = run([(a, len(a)), (hdr, len(a) + 4)])
            self.assertEqual(rc, 1)
            self.assertIn("truncated inconsistently", out[1])
            rc, out = run([(a, len(a)), (a[:14 + 20 + 8 + 6], len(a))])
            self.assertEqual(rc, 1)
            self.assertIn("inside its headers", out[1])
            # only truncated records: nothing checked
            self.assertEqual(run([(hdr, len(a))])[0], 1)

            net = os.path.join(d, "n.pcap")
            with open(net, "wb") as f:
                f.write(pcap([(a, len(a)), (a, len(a))]))
            self.assertEqual(roce.with_fabric(net), (net, ""))
            with open(net + ".fabric", "wb") as f:
                f.write(pcap([(hdr, len(a)), (a, len(a))], 1))
            path, note = roce.with_fabric(net)
            self.assertIn("2 frames, 1 of them by reference", note)
            rs = list(roce.records(path))
            self.assertEqual([(r.t, len(r.data), r.orig) for r in rs],
                             [(0, len(a), len(a)), (1, len(hdr), len(a)),
                              (2, len(a), len(a)), (3, len(a), len(a))])


if __name__ == "__main__":
    unittest.main()
