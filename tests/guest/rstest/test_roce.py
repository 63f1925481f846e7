"""rstest.roce.unbundle and bundle_faults on bundles built here."""

import struct
import unittest

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


if __name__ == "__main__":
    unittest.main()
