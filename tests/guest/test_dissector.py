"""The Wireshark dissector of the adapter's RoCEv2 extensions
(scripts/wireshark/rdma-session.lua) on frames built here: each extension
opcode decoded field by field, the packets in a bundle decoded by
tshark's own dissectors as if each had come alone, a truncated packet or
bundle flagged malformed, a standard RoCE packet left alone.  Needs
tshark (installed with the project's apt configuration when missing)."""

import os
import struct
import subprocess
import tempfile
import unittest

from rstest.suite import TOP, need_tshark

LUA = os.path.join(TOP, "scripts", "wireshark", "rdma-session.lua")
FIELDS = ["rdmasession.op", "rdmasession.aeth.kind",
          "rdmasession.aeth.rnr_timer", "rdmasession.dc.key",
          "rdmasession.dc.dci_qpn", "rdmasession.dc.connection",
          "rdmasession.dc.context_qpn", "rdmasession.bundle.max",
          "rdmasession.bundle.nonce", "rdmasession.bundle.hello_len",
          "rdmasession.bundle.count", "rdmasession.bundle.len",
          "rdmasession.bundle.opcode", "rdmasession.bundle.psn",
          "infiniband.bth.opcode", "infiniband.bth.psn", "udp.dstport",
          "_ws.expert.severity", "_ws.expert.message", "_ws.col.Info"]


def frame(op: int, dqpn: int, psn: int, ext: bytes,
          icrc: bool = True) -> bytes:
    """Ethernet, IPv4, UDP to 4791, BTH, ext, a dummy ICRC (a BUNDLE has
    none)."""
    bth = struct.pack("!BBHII", op, 0, 0xffff, dqpn & 0xffffff,
                      (1 << 31 if op == 0xc2 else 0) | psn)
    udp_payload = bth + ext + (b"\0\0\0\0" if icrc else b"")
    udp = struct.pack("!HHHH", 0xc005, 4791, 8 + len(udp_payload), 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) +
                     len(udp_payload), 0, 0x4000, 64, 17, 0,
                     bytes([10, 77, 0, 2]), bytes([10, 77, 0, 1]))
    eth = bytes.fromhex("525400770001525400770002") + b"\x08\x00"
    return eth + ip + udp + udp_payload


def pcap(frames) -> bytes:
    out = struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)
    for i, f in enumerate(frames):
        out += struct.pack("<IIII", i, 0, len(f), len(f)) + f
    return out


class DissectorTest(unittest.TestCase):
    def decode(self, frames):
        tshark = need_tshark(os.path.join(tempfile.gettempdir(),
                                          "rs-tshark-install.log"))
        self.assertIsNotNone(tshark, "no tshark")
        with tempfile.NamedTemporaryFile(suffix=".pcap") as f:
            f.write(pcap(frames))
            f.flush()
            cmd = [tshark, "-n", "-X", "lua_script:" + LUA, "-r", f.name,
                   "-T", "fields", "-E", "separator=|",
                   "-E", "aggregator=;"]
            for x in FIELDS:
                cmd += ["-e", x]
            r = subprocess.run(cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               universal_newlines=True, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("Lua: Error", r.stderr)
        rows = [dict(zip(FIELDS, ln.split("|")))
                for ln in r.stdout.splitlines()]
        self.assertEqual(len(rows), len(frames))
        return rows

    def test_pause_resume(self) -> None:
        rows = self.decode([frame(0xc0, 0x11, 16384, bytes([0x20 | 28, 0, 0, 7])),
                            frame(0xc1, 0x11, 16384, bytes([0x1f, 0, 0, 0]))])
        self.assertEqual(rows[0]["rdmasession.op"], "PAUSE")
        self.assertEqual(rows[0]["rdmasession.aeth.kind"], "RNR NAK")
        self.assertEqual(rows[0]["rdmasession.aeth.rnr_timer"], "28")
        self.assertEqual(rows[0]["_ws.col.Info"],
                         "PAUSE PSN 16384 (RNR NAK, timer 28)")
        self.assertEqual(rows[1]["rdmasession.op"], "RESUME")
        self.assertEqual(rows[1]["rdmasession.aeth.kind"], "ACK")
        self.assertEqual(rows[1]["rdmasession.aeth.rnr_timer"], "")

    def test_dc(self) -> None:
        key = 0x0123456789abcdef
        rows = self.decode([
            frame(0xc2, 0x12, 7160, struct.pack("!QII", key, 5, 55)),
            frame(0xc3, 0x05, 7160, bytes([0x1f, 0, 0, 0]) +
                  struct.pack("!II", 0x19, 55)),
            frame(0xc3, 0x05, 7161, bytes([0x62, 0, 0, 0]) +
                  struct.pack("!II", 0, 56)),
            frame(0xc4, 0x19, 7200, struct.pack("!QII", key, 5, 55))])
        self.assertEqual([r["rdmasession.op"] for r in rows],
                         ["DC_CONNECT", "DC_CONNECT_REPLY", "DC_CONNECT_REPLY",
                          "DC_DISCONNECT"])
        for r in (rows[0], rows[3]):
            self.assertEqual(int(r["rdmasession.dc.key"], 16), key)
            self.assertEqual(int(r["rdmasession.dc.dci_qpn"], 16), 5)
            self.assertEqual(r["rdmasession.dc.connection"], "55")
        self.assertEqual(int(rows[1]["rdmasession.dc.context_qpn"], 16), 0x19)
        self.assertEqual(rows[1]["rdmasession.aeth.kind"], "ACK")
        self.assertEqual(rows[2]["rdmasession.aeth.kind"], "NAK")
        self.assertEqual(rows[2]["rdmasession.dc.connection"], "56")
        for r in rows:
            self.assertEqual(r["_ws.expert.severity"], "")

    def test_bundle(self) -> None:
        inner = [frame(0x06, 0x12, 100, bytes(16) + bytes(1024)),
                 frame(0x07, 0x12, 101, bytes(1024)),
                 frame(0x08, 0x12, 102, bytes(512))]
        body = b"".join(struct.pack("!H", len(x)) + x for x in inner)
        hello = struct.pack("!HHII", 1, 0, 60000, 7) + bytes(60000 - 58 - 12)
        rows = self.decode([
            frame(0xc5, 1, 0, hello),
            frame(0xc6, 1, 0, struct.pack("!HHIII", 1, 0, 60000, 7, 60000)),
            frame(0xc7, 1, 0, struct.pack("!HH", 3, 0) + body, icrc=False),
            # the last length one byte too long: malformed
            frame(0xc7, 1, 0, struct.pack("!HH", 3, 0) + body[:-1],
                  icrc=False),
            # a count of 1
            frame(0xc7, 1, 0, struct.pack("!HH", 1, 0) +
                  struct.pack("!H", len(inner[0])) + inner[0], icrc=False)])
        self.assertEqual([r["rdmasession.op"] for r in rows],
                         ["BUNDLE_HELLO", "BUNDLE_HELLO_REPLY", "BUNDLE",
                          "BUNDLE", "BUNDLE"])
        self.assertEqual(rows[0]["rdmasession.bundle.max"], "60000")
        self.assertEqual(int(rows[0]["rdmasession.bundle.nonce"], 16), 7)
        self.assertEqual(rows[0]["_ws.col.Info"],
                         "BUNDLE_HELLO v1 takes 60000 nonce 0x00000007, "
                         "60000 bytes")
        self.assertEqual(rows[1]["rdmasession.bundle.hello_len"], "60000")
        self.assertEqual(rows[2]["rdmasession.bundle.count"], "3")
        self.assertEqual(rows[2]["rdmasession.bundle.len"].split(";"),
                         [str(len(x)) for x in inner])
        self.assertEqual(rows[2]["rdmasession.bundle.opcode"].split(";"),
                         ["0x06", "0x07", "0x08"])
        self.assertEqual(rows[2]["rdmasession.bundle.psn"].split(";"),
                         ["100", "101", "102"])
        self.assertEqual(rows[2]["_ws.col.Info"],
                         "BUNDLE 3 packets, %d bytes" % (42 + 16 + len(body)))
        for r in rows[:3]:
            self.assertEqual(r["_ws.expert.severity"], "")
        for r in rows[3:]:
            self.assertIn("8388608", r["_ws.expert.severity"].split(";"))

    def test_bundle_inner(self) -> None:
        """tshark's InfiniBand dissector decodes each packet of a bundle
        (its BTH once per packet, after the bundle's own), this one the
        extension packets among them; a bundle whose lengths or count do
        not fit, or that carries a HELLO, is flagged, and the packets that
        fit are still decoded."""
        key = 0x0123456789abcdef
        inner = [frame(0x0a, 0x12, 100, bytes(16) + b"w" * 64),
                 frame(0x11, 0x12, 101, bytes([0x1f, 0, 0, 9])),
                 frame(0xc2, 0x13, 7160, struct.pack("!QII", key, 5, 55))]

        def body(frames, count=None):
            return struct.pack("!HH", len(frames) if count is None
                               else count, 0) + \
                b"".join(struct.pack("!H", len(x)) + x for x in frames)
        hello = frame(0xc5, 1, 0, struct.pack("!HHII", 1, 0, 9000, 7) +
                      bytes(4))
        rows = self.decode([
            frame(0xc7, 1, 0, body(inner), icrc=False),
            # the last length past the bundle's end
            frame(0xc7, 1, 0, body(inner)[:-3], icrc=False),
            # a count of 4 with 3 packets, of 2 with 3
            frame(0xc7, 1, 0, body(inner, 4), icrc=False),
            frame(0xc7, 1, 0, body(inner, 2), icrc=False),
            # a HELLO is never bundled
            frame(0xc7, 1, 0, body(inner[:1] + [hello]), icrc=False)])
        ok = rows[0]
        self.assertEqual(ok["infiniband.bth.opcode"].split(";"),
                         ["199", "10", "17", "194"])
        self.assertEqual(ok["infiniband.bth.psn"].split(";"),
                         ["0", "100", "101", "7160"])
        self.assertEqual(ok["udp.dstport"].split(";"), ["4791"] * 4)
        self.assertEqual(ok["rdmasession.op"].split(";"),
                         ["BUNDLE", "DC_CONNECT"])
        self.assertEqual(int(ok["rdmasession.dc.key"], 16), key)
        self.assertEqual(ok["rdmasession.dc.connection"], "55")
        self.assertEqual(ok["rdmasession.bundle.count"], "3")
        self.assertEqual(ok["_ws.expert.severity"], "")
        self.assertEqual(ok["_ws.col.Info"], "BUNDLE 3 packets, %d bytes"
                         % (42 + 12 + len(body(inner))))
        # the packets before the fault are decoded; each bad bundle has
        # an error
        self.assertEqual([r["infiniband.bth.opcode"] for r in rows[1:]],
                         ["199;10;17", "199;10;17;194", "199;10;17",
                          "199;10;197"])
        for r in rows[1:]:
            self.assertIn("8388608", r["_ws.expert.severity"].split(";"))
        for r in rows[1:4]:
            self.assertIn("the packet lengths do not fill the bundle",
                          r["_ws.expert.message"])
        self.assertIn("packet 3 does not fit", rows[1]["_ws.expert.message"])
        self.assertIn("4 packets, the bundle ends after 3",
                      rows[2]["_ws.expert.message"])
        self.assertIn("bytes after packet 2", rows[3]["_ws.expert.message"])
        self.assertIn("packet 2: BUNDLE_HELLO", rows[4]["_ws.expert.message"])

    def test_malformed_and_standard(self) -> None:
        rows = self.decode([
            frame(0xc2, 0x12, 1, struct.pack("!QI", 1, 5)),    # 4 short
            frame(0xc3, 0x05, 1, bytes([0x1f, 0, 0, 0]) +
                  struct.pack("!II", 0x1000000, 1)),           # QPN > 24 bits
            frame(0x04, 0x12, 1, b"payload!")])                # SEND only
        self.assertEqual(rows[0]["rdmasession.op"], "DC_CONNECT")
        self.assertEqual(rows[0]["rdmasession.dc.key"], "")
        self.assertIn("8388608", rows[0]["_ws.expert.severity"].split(";"))
        self.assertIn("6291456", rows[1]["_ws.expert.severity"].split(";"))
        self.assertEqual(rows[2]["rdmasession.op"], "")


if __name__ == "__main__":
    unittest.main()
