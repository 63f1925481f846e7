#!/usr/bin/env python3
"""Check the ICRC of every RoCEv2 packet in a pcap file.

Independent of the device's and of Wireshark's code: the ICRC is zlib's
CRC-32 over the pseudo header of IBTA Annex A17 (8 bytes of 0xff standing
for the LRH, then the IP header with TOS/traffic class, TTL/hop limit,
IPv4 header checksum and IPv6 flow label set to ones, the UDP header with
its checksum set to ones, the BTH with its reserved byte 4 (FECN, BECN,
resv6) set to ones) followed by the rest of the packet up to the ICRC,
stored little-endian in the packet's last 4 bytes.  A bundle (opcode
0xc7, docs/specs/rdma-session.rst "Bundles on the wire") has no ICRC of
its own: each RoCEv2 frame in it is checked (and counted) as if alone,
and a bundle whose lengths do not fill it counts as bad.

Usage: roce-icrc.py FILE.pcap [--corrupt OUT.pcap]
  prints "N RoCEv2 packets, N bad ICRC, opcodes {...}" and exits 1 if there
  is no RoCEv2 packet or a bad ICRC (listing up to 10 of them), 2 if the
  file is not a pcap.  --corrupt also writes the first RoCEv2 packet with
  one payload byte flipped into OUT.pcap, for the check's self-test.
"""
import struct
import sys
import zlib

ROCE_PORT = 4791


def frames(data):
    magic = data[:4]
    if magic in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1'):
        end = '<'
    elif magic in (b'\xa1\xb2\xc3\xd4', b'\xa1\xb2\x3c\x4d'):
        end = '>'
    else:
        raise ValueError('not a pcap file')
    linktype = struct.unpack(end + 'I', data[20:24])[0]
    if linktype != 1:
        raise ValueError('link type %d, not Ethernet' % linktype)
    off, n = 24, 0
    while off + 16 <= len(data):
        incl, orig = struct.unpack(end + 'II', data[off + 8:off + 16])
        n += 1
        yield n, data[off + 16:off + 16 + incl], incl == orig
        off += 16 + incl


def roce(frame):
    """(ip header offset, udp offset, is_ipv6) of a RoCEv2 frame, or None."""
    off = 12
    etype = struct.unpack('>H', frame[off:off + 2])[0]
    while etype in (0x8100, 0x88a8):
        off += 4
        etype = struct.unpack('>H', frame[off:off + 2])[0]
    ip = off + 2
    if etype == 0x0800 and len(frame) >= ip + 20:
        ihl = (frame[ip] & 0x0f) * 4
        if frame[ip + 9] != 17:
            return None
        udp = ip + ihl
        v6 = False
    elif etype == 0x86dd and len(frame) >= ip + 40:
        if frame[ip + 6] != 17:
            return None
        udp = ip + 40
        v6 = True
    else:
        return None
    if len(frame) < udp + 8 or struct.unpack('>H', frame[udp + 2:udp + 4])[0] != ROCE_PORT:
        return None
    return ip, udp, v6


def icrc(frame, ip, udp, v6):
    """(computed, stored) ICRC of a RoCEv2 frame."""
    ulen = struct.unpack('>H', frame[udp + 4:udp + 6])[0]
    end = udp + ulen           # the UDP length excludes Ethernet padding
    h = bytearray(frame[ip:udp + 8 + 12])
    u = udp - ip
    if v6:
        h[0] |= 0x0f           # traffic class (low nibble of byte 0, high of 1)
        h[1] = 0xff            # traffic class low nibble, flow label
        h[2] = h[3] = 0xff
        h[7] = 0xff            # hop limit
    else:
        h[1] = 0xff            # TOS
        h[8] = 0xff            # TTL
        h[10] = h[11] = 0xff   # header checksum
    h[u + 6] = h[u + 7] = 0xff  # UDP checksum
    h[u + 8 + 4] = 0xff        # BTH byte 4: FECN, BECN, resv6
    crc = zlib.crc32(b'\xff' * 8 + bytes(h) + frame[udp + 8 + 12:end - 4])
    return crc & 0xffffffff, struct.unpack('<I', frame[end - 4:end])[0]


def unbundle(frame, udp):
    """The frames in bundle @frame, or None if its lengths do not fill it."""
    end = udp + struct.unpack('>H', frame[udp + 4:udp + 6])[0]
    off = udp + 8 + 12
    if end > len(frame) or off + 4 > end:
        return None
    count = struct.unpack('>H', frame[off:off + 2])[0]
    off += 4
    inner = []
    for _ in range(count):
        if off + 2 > end:
            return None
        n = struct.unpack('>H', frame[off:off + 2])[0]
        if off + 2 + n > end:
            return None
        inner.append(frame[off + 2:off + 2 + n])
        off += 2 + n
    return inner if count >= 2 and off == end else None


def write_pcap(path, frame):
    with open(path, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        f.write(struct.pack('<IIII', 0, 0, len(frame), len(frame)))
        f.write(frame)


def main():
    args = sys.argv[1:]
    corrupt = None
    if len(args) == 3 and args[1] == '--corrupt':
        corrupt = args[2]
    elif len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        data = open(args[0], 'rb').read()
        pkts = list(frames(data))
    except (OSError, ValueError, struct.error) as e:
        print('%s: %s' % (args[0], e))
        return 2
    count, bad, ops = 0, [], {}
    for n, frame, whole in pkts:
        r = roce(frame)
        if r is None:
            continue
        count += 1
        if not whole:
            bad.append('frame %d: truncated in the capture' % n)
            continue
        ip, udp, v6 = r
        ops[frame[udp + 8]] = ops.get(frame[udp + 8], 0) + 1
        if frame[udp + 8] == 0xc7:
            inner = unbundle(frame, udp)
            if inner is None:
                bad.append('frame %d: a bundle whose lengths do not fill it'
                           % n)
                continue
            todo = [(f, roce(f)) for f in inner]
            if any(x is None for _, x in todo):
                bad.append('frame %d: a bundle with a frame not RoCEv2' % n)
                continue
        else:
            todo = [(frame, r)]
        for k, (f, (ip, udp, v6)) in enumerate(todo):
            if f is not frame:
                count += 1
                ops[f[udp + 8]] = ops.get(f[udp + 8], 0) + 1
            got, want = icrc(f, ip, udp, v6)
            if got != want:
                bad.append('frame %d%s opcode 0x%02x: ICRC 0x%08x, computed '
                           '0x%08x' % (n, '' if f is frame else
                                       ' (bundled %d)' % (k + 1),
                                       f[udp + 8], want, got))
        if corrupt and count == 1:
            f = bytearray(frame)
            f[udp + 8 + 12] ^= 0x01    # first byte after the BTH
            write_pcap(corrupt, bytes(f))
    print('%d RoCEv2 packets, %d bad ICRC, opcodes {%s}' % (
        count, len(bad),
        ', '.join('0x%02x: %d' % (k, ops[k]) for k in sorted(ops))))
    for b in bad[:10]:
        print('  ' + b)
    return 0 if count and not bad else 1


if __name__ == '__main__':
    sys.exit(main())
