"""rstest.roce.unbundle on bundles built here."""

import struct
import unittest

from rstest.roce import unbundle


def frame(op: int, payload: bytes = b"") -> bytes:
    udp_payload = struct.pack("!BBHII", op, 0, 0xffff, 1, 0) + payload
    udp = struct.pack("!HHHH", 0xc005, 4791, 8 + len(udp_payload), 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + len(udp_payload),
                     0, 0x4000, 64, 17, 0, bytes([10, 77, 0, 2]),
                     bytes([10, 77, 0, 1]))
    return bytes(12) + b"\x08\x00" + ip + udp + udp_payload


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
