"""RoCEv2 frames in captures: the adapter's bundles (opcode 0xc7,
docs/specs/rdma-session.rst "Bundles on the wire") stand for the frames
inside them, which the capture checks count as if each had come alone."""

import struct
from typing import List

OP_BUNDLE = 0xc7


def unbundle(fr: bytes) -> List[bytes]:
    """The frames an Ethernet frame stands for: itself, or the frames in
    it if it is an IPv4 bundle (an empty list if the bundle's lengths do
    not fill it, which the capture checks then miss as frames)."""
    if len(fr) < 34 or fr[12:14] != b"\x08\x00" or fr[23] != 17:
        return [fr]
    bth = 14 + (fr[14] & 0x0f) * 4 + 8
    if len(fr) < bth + 16 or fr[bth] != OP_BUNDLE or \
            struct.unpack_from(">H", fr, bth - 6)[0] != 4791:
        return [fr]
    count = struct.unpack_from(">H", fr, bth + 12)[0]
    off, out = bth + 16, []
    for _ in range(count):
        if off + 2 > len(fr):
            return []
        n = struct.unpack_from(">H", fr, off)[0]
        if off + 2 + n > len(fr):
            return []
        out.append(fr[off + 2:off + 2 + n])
        off += 2 + n
    return out if off == len(fr) else []


# The smallest packet a bundle carries (IPv4: Ethernet, IP, UDP, BTH,
# ICRC) and the largest (IPv6, 64 bytes of headers after the BTH, 4096
# of payload, pad, ICRC): the receiver's limits.
INNER_MIN = 14 + 20 + 8 + 12 + 4
INNER_MAX = 14 + 40 + 8 + 12 + 64 + 4096 + 4 + 4


def _csum(b: bytes) -> int:
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def bundle_faults(fr: bytes) -> List[str]:
    """What is wrong with bundle fr (an IPv4 frame with a BTH of opcode
    0xc7 on UDP 4791) by the spec's "Bundles on the wire": what the
    receiver checks (IP and UDP lengths agree with the frame, TVer 0, a
    count of 2 or more, each length in range, each packet a RoCEv2 frame
    that is not a BUNDLE, HELLO or REPLY, the lengths filling the bundle)
    and what the sender promises (IPv4 header checksum right, UDP checksum
    0, BTH to QP 1 with PSN 0, reserved 0, every packet with the outer
    Ethernet and IP addresses and UDP source port).  Empty if none."""
    out: List[str] = []
    ihl = (fr[14] & 0x0f) * 4
    udp = 14 + ihl
    bth = udp + 8
    if len(fr) < bth + 16:
        return ["%d bytes, no count" % len(fr)]
    if struct.unpack_from(">H", fr, 16)[0] != len(fr) - 14:
        out.append("IP length %d, frame %d" %
                   (struct.unpack_from(">H", fr, 16)[0], len(fr)))
    if _csum(fr[14:udp]) != 0xffff:
        out.append("bad IP header checksum")
    ulen, ucsum = struct.unpack_from(">HH", fr, udp + 4)
    if ulen != len(fr) - udp:
        out.append("UDP length %d, datagram %d" % (ulen, len(fr) - udp))
    if ucsum:
        out.append("UDP checksum 0x%04x" % ucsum)
    if fr[bth + 1] & 0x0f:
        out.append("TVer %d" % (fr[bth + 1] & 0x0f))
    dqp, psn = struct.unpack_from(">II", fr, bth + 4)
    if dqp & 0xffffff != 1 or psn & 0xffffff:
        out.append("BTH to QP %d PSN %d" % (dqp & 0xffffff, psn & 0xffffff))
    count, resv = struct.unpack_from(">HH", fr, bth + 12)
    if count < 2 or resv:
        out.append("count %d, reserved %d" % (count, resv))
    off, n = bth + 16, 0
    while off + 2 <= len(fr):
        ln = struct.unpack_from(">H", fr, off)[0]
        inner = fr[off + 2:off + 2 + ln]
        n += 1
        if not INNER_MIN <= ln <= INNER_MAX or len(inner) < ln:
            out.append("packet %d of %d bytes (%d left)" %
                       (n, ln, len(fr) - off - 2))
            return out
        off += 2 + ln
        v6 = inner[12:14] == b"\x86\xdd"
        iudp = 14 + (40 if v6 else (inner[14] & 0x0f) * 4)
        if inner[12:14] not in (b"\x08\x00", b"\x86\xdd") or \
                inner[20 if v6 else 23] != 17 or \
                len(inner) < iudp + 8 + 12 + 4 or \
                inner[iudp + 2:iudp + 4] != b"\x12\xb7":
            out.append("packet %d is not RoCEv2" % n)
            continue
        if inner[iudp + 8] in (0xc5, 0xc6, OP_BUNDLE):
            out.append("packet %d has opcode 0x%x" % (n, inner[iudp + 8]))
        if inner[:12] != fr[:12] or v6 or inner[26:34] != fr[26:34] or \
                inner[iudp:iudp + 2] != fr[udp:udp + 2]:
            out.append("packet %d has other addresses or source port" % n)
    if off != len(fr):
        out.append("%d bytes after the last packet" % (len(fr) - off))
    if n != count:
        out.append("count %d, %d packets" % (count, n))
    return out
