"""rstest.roce.unbundle on bundles built here."""

import struct
import unittest

from rstest.roce import unbundle
from test_dissector import frame as dissector_frame


def frame(op: int, payload: bytes = b"") -> bytes:
    """A RoCEv2 frame to QP 1, PSN 0 (test_dissector's; a bundle has no
    ICRC of its own)."""
    return dissector_frame(op, 1, 0, payload, icrc=op != 0xc7)


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


if __name__ == "__main__":
    unittest.main()
