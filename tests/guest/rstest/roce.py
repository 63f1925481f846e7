"""RoCEv2 frames in captures, the one capture library of the suites
(verbs, multipath's rstest/ecmp.py, the migration stall of
rstest/migration.py, scripts/roce-icrc.py):

  records(path)     the records of a pcap (microseconds or nanoseconds,
                    either byte order) or pcapng file (every interface,
                    its name): Record(num, t, data, whole, ifname,
                    orig), orig the frame's length on the wire
  offsets(frame)    where a RoCEv2 frame's IP and UDP headers are
                    (VLAN tags skipped, IPv4 or IPv6), None if not one
  packets(path)     the RoCEv2 packets of a capture as Packet (source,
                    destination, UDP source port, BTH fields, .roce the
                    bytes from the BTH on, ICRC included), each packet
                    in a bundle as if it had come alone
  read_capture(path)   packets() and the bundles (Bundle: frame number,
                    addresses, bundle_faults(), a hash of its bytes)
  icrc(frame, ...)  a packet's ICRC computed and stored
  write_pcap(path, frames)
  with_fabric(path) the capture to check: path, or path and path.fabric
                    (the local fabric's, launcher --pcap) merged

The adapter's bundles (opcode 0xc7, docs/specs/rdma-session.rst "Bundles
on the wire") stand for the frames inside them, which the capture checks
count as if each had come alone (unbundle, bundle_faults)."""

import os
import socket
import struct
import zlib
from typing import Iterator, List, NamedTuple, Optional, Tuple, Union

OP_BUNDLE = 0xc7
ROCE_PORT = 4791


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


# --- capture files --------------------------------------------------------

class Record(NamedTuple):
    """One record of a capture file: its number (from 1), time (seconds),
    the frame as captured, whether it was captured whole, the interface's
    name (pcapng; "" in a pcap), the frame's length on the wire (the
    record's orig_len: more than len(data) in a record the capture
    truncated, e.g. a local fabric's frame by reference, its headers)."""
    num: int
    t: float
    data: bytes
    whole: bool
    ifname: str
    orig: int = -1


PCAP_MAGIC = {b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
              b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
              b"\xa1\xb2\xc3\xd4": (">", 1e-6),
              b"\xa1\xb2\x3c\x4d": (">", 1e-9)}
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"


def records(src: Union[str, bytes]) -> Iterator[Record]:
    """The records of a capture (a file's path, or its bytes): pcap of
    Ethernet frames, or pcapng (its enhanced packet blocks).  A record cut
    short at the end (a capture still written, or killed) ends it.
    ValueError if it is neither, or a pcap of another link type."""
    if isinstance(src, str):
        with open(src, "rb") as f:
            data = f.read()
    else:
        data = src
    if data[:4] == PCAPNG_MAGIC:
        yield from _pcapng(data)
        return
    if data[:4] not in PCAP_MAGIC or len(data) < 24:
        raise ValueError("not a pcap file")
    end, unit = PCAP_MAGIC[data[:4]]
    linktype = struct.unpack_from(end + "I", data, 20)[0]
    if linktype != 1:
        raise ValueError("link type %d, not Ethernet" % linktype)
    off, n = 24, 0
    while off + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack_from(end + "IIII", data, off)
        if off + 16 + incl > len(data):
            break
        n += 1
        yield Record(n, sec + frac * unit, data[off + 16:off + 16 + incl],
                     incl == orig, "", orig)
        off += 16 + incl


def _pcapng(data: bytes) -> Iterator[Record]:
    ifs: List[Tuple[str, float]] = []
    bo = "<"
    off, n = 0, 0
    while off + 12 <= len(data):
        btype = struct.unpack_from(bo + "I", data, off)[0]
        if btype == 0x0A0D0D0A:
            bo = "<" if data[off + 8:off + 12] == b"\x4d\x3c\x2b\x1a" \
                else ">"
            ifs = []
        blen = struct.unpack_from(bo + "I", data, off + 4)[0]
        if blen < 12 or off + blen > len(data):
            break
        body = data[off + 8:off + blen - 4]
        if btype == 1:
            ifs.append(_idb(body, bo))
        elif btype == 6 and len(body) >= 20:
            iid, hi, lo, cap, orig = struct.unpack_from(bo + "IIIII", body, 0)
            if iid < len(ifs):
                n += 1
                yield Record(n, ((hi << 32) | lo) * ifs[iid][1],
                             body[20:20 + cap], cap == orig, ifs[iid][0],
                             orig)
        off += blen


def _idb(body: bytes, bo: str) -> Tuple[str, float]:
    """An interface description block: (name, seconds per tick)."""
    name, res = "", 1e-6
    o = 8
    while o + 4 <= len(body):
        code, ln = struct.unpack_from(bo + "HH", body, o)
        if code == 0:
            break
        val = body[o + 4:o + 4 + ln]
        if code == 2:
            name = val.rstrip(b"\0").decode(errors="replace")
        elif code == 9 and val:
            res = (2.0 ** -(val[0] & 0x7f) if val[0] & 0x80
                   else 10.0 ** -val[0])
        o += 4 + (ln + 3) // 4 * 4
    return name, res


def with_fabric(path: str) -> Tuple[str, str]:
    """The capture a suite checks for the launcher's --pcap I FILE (path):
    FILE itself, or, when FILE.fabric is there (the local fabric was on,
    RS_LOCAL_FABRIC=1: VM I's adapter's frames over the fabric, which
    never reach the netdev its capture records), FILE and FILE.fabric
    merged in time order into FILE.with-fabric.pcap (nanoseconds, each
    record's lengths as they were: the fabric's frames by reference
    truncated).  And a note for the check's text: "" or what the fabric's
    capture added."""
    fab = path + ".fabric"
    if not os.path.isfile(fab):
        return path, ""
    recs = []
    for src in (path, fab):
        if os.path.isfile(src) and os.path.getsize(src) > 0:
            recs += [(r.t, k, r, src == fab)
                     for k, r in enumerate(records(src))]
    recs.sort(key=lambda x: (x[0], x[3], x[1]))
    out = path + ".with-fabric.pcap"
    nfab = ntrunc = 0
    with open(out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b23c4d, 2, 4, 0, 0, 262144, 1))
        for t, _, r, fabric in recs:
            ns = int(round(t * 1e9))
            orig = r.orig if r.orig >= 0 else len(r.data)
            f.write(struct.pack("<IIII", ns // 1000000000, ns % 1000000000,
                                len(r.data), orig) + r.data)
            nfab += fabric
            ntrunc += fabric and not r.whole
    return out, (" (with the local fabric's capture %s: %d frames, %d of "
                 "them by reference, their headers)" %
                 (os.path.basename(fab), nfab, ntrunc))


def write_pcap(path: str, frames: List[bytes]) -> None:
    """A pcap file (Ethernet, microseconds) of frames, record k at k s."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for k, fr in enumerate(frames):
            f.write(struct.pack("<IIII", k, 0, len(fr), len(fr)) + fr)


# --- RoCEv2 packets -------------------------------------------------------

def offsets(frame: bytes) -> Optional[Tuple[int, int, bool]]:
    """(IP header offset, UDP offset, IPv6) of a RoCEv2 frame (UDP to port
    4791, after any VLAN tags), or None."""
    off = 12
    if len(frame) < off + 2:
        return None
    etype = struct.unpack_from(">H", frame, off)[0]
    while etype in (0x8100, 0x88a8) and len(frame) >= off + 6:
        off += 4
        etype = struct.unpack_from(">H", frame, off)[0]
    ip = off + 2
    if etype == 0x0800 and len(frame) >= ip + 20:
        if frame[ip + 9] != 17:
            return None
        udp, v6 = ip + (frame[ip] & 0x0f) * 4, False
    elif etype == 0x86dd and len(frame) >= ip + 40:
        if frame[ip + 6] != 17:
            return None
        udp, v6 = ip + 40, True
    else:
        return None
    if len(frame) < udp + 8 or \
            struct.unpack_from(">H", frame, udp + 2)[0] != ROCE_PORT:
        return None
    return ip, udp, v6


def truncation_fault(rec: Record) -> Optional[str]:
    """Of a RoCEv2 record the capture truncated (not rec.whole): None if
    it holds the headers up to the BTH and the frame's own IP and UDP
    lengths say the length on the wire its record does (orig_len; up to
    Ethernet's padding of a short frame); else what is wrong with it."""
    frame = rec.data
    r = offsets(frame)
    if r is None:
        return "not a RoCEv2 frame"
    ip, udp, v6 = r
    if len(frame) > rec.orig:
        return "%d bytes recorded of a frame of %d" % (len(frame), rec.orig)
    if len(frame) < udp + 8 + 12:
        return "truncated inside its headers"
    end = ip + struct.unpack_from(">H", frame, ip + (4 if v6 else 2))[0] + \
        (40 if v6 else 0)
    uend = udp + struct.unpack_from(">H", frame, udp + 4)[0]
    if uend != end or not (end == rec.orig or end < rec.orig <= 60):
        return "IP/UDP lengths end it at %d/%d, its record at %d" % (
            end, uend, rec.orig)
    return None


def icrc(frame: bytes, ip: int, udp: int, v6: bool) -> Tuple[int, int]:
    """(computed, stored) ICRC of a RoCEv2 frame: zlib's CRC-32 over the
    pseudo header of IBTA Annex A17 (8 bytes of 0xff standing for the LRH,
    then the IP header with TOS/traffic class, TTL/hop limit, IPv4 header
    checksum and IPv6 flow label set to ones, the UDP header with its
    checksum set to ones, the BTH with its byte 4 (FECN, BECN, resv6) set
    to ones) and the rest of the packet up to the ICRC, which the packet's
    last 4 bytes store little-endian (the UDP length excludes Ethernet
    padding)."""
    end = udp + struct.unpack_from(">H", frame, udp + 4)[0]
    h = bytearray(frame[ip:udp + 8 + 12])
    u = udp - ip
    if v6:
        h[0] |= 0x0f           # traffic class (low nibble of byte 0,
        #                        high of byte 1)
        h[1] = 0xff            # traffic class low nibble, flow label
        h[2] = h[3] = 0xff
        h[7] = 0xff            # hop limit
    else:
        h[1] = 0xff            # TOS
        h[8] = 0xff            # TTL
        h[10] = h[11] = 0xff   # header checksum
    h[u + 6] = h[u + 7] = 0xff  # UDP checksum
    h[u + 8 + 4] = 0xff        # BTH byte 4: FECN, BECN, resv6
    crc = zlib.crc32(b"\xff" * 8 + bytes(h) + frame[udp + 8 + 12:end - 4])
    return crc & 0xffffffff, struct.unpack("<I", frame[end - 4:end])[0]


class Packet(NamedTuple):
    """A RoCEv2 packet of a capture: its record's number and time, the
    interface, its Ethernet frame (a packet in a bundle: its own), the
    offsets of its IP and UDP headers, IPv6 or not, the number of the
    bundle's record it came in (None if alone)."""
    num: int
    t: float
    ifname: str
    frame: bytes
    ip: int
    udp: int
    v6: bool
    bundled: bool = False

    @property
    def src(self) -> str:
        if self.v6:
            return socket.inet_ntop(socket.AF_INET6,
                                    self.frame[self.ip + 8:self.ip + 24])
        return ".".join(map(str, self.frame[self.ip + 12:self.ip + 16]))

    @property
    def dst(self) -> str:
        if self.v6:
            return socket.inet_ntop(socket.AF_INET6,
                                    self.frame[self.ip + 24:self.ip + 40])
        return ".".join(map(str, self.frame[self.ip + 16:self.ip + 20]))

    @property
    def sport(self) -> int:
        return struct.unpack_from(">H", self.frame, self.udp)[0]

    @property
    def roce(self) -> bytes:
        """The UDP payload: BTH, the rest, ICRC."""
        ulen = struct.unpack_from(">H", self.frame, self.udp + 4)[0]
        return self.frame[self.udp + 8:self.udp + ulen]

    @property
    def opcode(self) -> int:
        return self.frame[self.udp + 8] if len(self.frame) > self.udp + 8 \
            else -1

    @property
    def dqp(self) -> int:
        b = self.frame[self.udp + 12:self.udp + 16]
        return struct.unpack(">I", b)[0] & 0xffffff if len(b) == 4 else -1

    @property
    def psn(self) -> int:
        b = self.frame[self.udp + 16:self.udp + 20]
        return struct.unpack(">I", b)[0] & 0xffffff if len(b) == 4 else -1


class Bundle(NamedTuple):
    """A bundle of a capture: its record's number, IPv4 source and
    destination, what is wrong with it (bundle_faults), a hash of its bytes
    (not a CRC-32, which the ICRCs of the packets in it make collide)."""
    num: int
    src: str
    dst: str
    faults: List[str]
    hash: int


def read_capture(src: Union[str, bytes], bundles_too: bool = True
                 ) -> Tuple[List[Packet], List[Bundle]]:
    """The RoCEv2 packets of a capture (IPv4 or IPv6), the packets in a
    bundle each as if alone (none if its lengths do not fill it), and the
    bundles (IPv4, untagged; none unless bundles_too)."""
    pkts: List[Packet] = []
    bundles: List[Bundle] = []
    for r in records(src):
        o = offsets(r.data)
        if o is None:
            continue
        fr = r.data
        if o[0] == 14 and not o[2] and len(fr) > o[1] + 8 and \
                fr[o[1] + 8] == OP_BUNDLE:
            if bundles_too:
                bundles.append(Bundle(r.num, ".".join(map(str, fr[26:30])),
                                      ".".join(map(str, fr[30:34])),
                                      bundle_faults(fr), hash(fr)))
            for x in unbundle(fr):
                xo = offsets(x)
                if xo is not None:
                    pkts.append(Packet(r.num, r.t, r.ifname, x, *xo,
                                       bundled=True))
        else:
            pkts.append(Packet(r.num, r.t, r.ifname, fr, *o))
    return pkts, bundles


def packets(src: Union[str, bytes], v4only: bool = False) -> List[Packet]:
    """read_capture()'s packets (v4only: the IPv4 ones)."""
    return [p for p in read_capture(src, False)[0]
            if not (v4only and p.v6)]
