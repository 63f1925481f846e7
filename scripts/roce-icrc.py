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
and a bundle whose lengths do not fill it counts as bad.  A record the
capture truncated (orig_len above incl_len: the local fabric's frames by
reference, their headers; a snap length) has no ICRC to check: it is
counted as not checkable if it holds the headers up to the BTH and its IP
and UDP lengths end the frame where its orig_len does, and as bad
otherwise (truncated inconsistently).  (A command line over the suites'
capture library, tests/guest/rstest/roce.py.)

Usage: roce-icrc.py FILE.pcap [--corrupt OUT.pcap]
  prints "N RoCEv2 packets, N bad ICRC, opcodes {...}" (N checked) and,
  if there were any, "; N truncated by the capture, not checkable"; exits
  1 if no RoCEv2 packet was checked or one is bad (listing up to 10 of
  them), 2 if the file is not a pcap.  --corrupt also writes the first RoCEv2 packet with
  one payload byte flipped into OUT.pcap, for the check's self-test.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "tests", "guest"))
# pylint: disable=wrong-import-position
from rstest import roce  # noqa: E402


def check(recs, corrupt=None, trunc=None):
    """(count, bad lines, opcodes {opcode: count}) of the records; count:
    the packets checked (or bad).  trunc: a list that gets the number of
    each record truncated consistently (not checkable, not counted)."""
    count, bad, ops = 0, [], {}
    for rec in recs:
        frame = rec.data
        r = roce.offsets(frame)
        if r is None:
            continue
        n = rec.num
        if not rec.whole:
            why = roce.truncation_fault(rec)
            if why is None:
                if trunc is not None:
                    trunc.append(n)
                continue
            count += 1
            bad.append('frame %d: truncated inconsistently: %s' % (n, why))
            continue
        count += 1
        ip, udp, v6 = r
        ops[frame[udp + 8]] = ops.get(frame[udp + 8], 0) + 1
        if frame[udp + 8] == roce.OP_BUNDLE:
            inner = roce.unbundle(frame)
            if not inner:
                bad.append('frame %d: a bundle whose lengths do not fill it'
                           % n)
                continue
            todo = [(f, roce.offsets(f)) for f in inner]
            if any(x is None for _, x in todo):
                bad.append('frame %d: a bundle with a frame not RoCEv2' % n)
                continue
        else:
            todo = [(frame, r)]
        for k, (f, (ip, udp, v6)) in enumerate(todo):
            if f is not frame:
                count += 1
                ops[f[udp + 8]] = ops.get(f[udp + 8], 0) + 1
            got, want = roce.icrc(f, ip, udp, v6)
            if got != want:
                bad.append('frame %d%s opcode 0x%02x: ICRC 0x%08x, computed '
                           '0x%08x' % (n, '' if f is frame else
                                       ' (bundled %d)' % (k + 1),
                                       f[udp + 8], want, got))
        if corrupt and count == 1:
            f = bytearray(frame)
            f[udp + 8 + 12] ^= 0x01    # first byte after the BTH
            roce.write_pcap(corrupt, [bytes(f)])
    return count, bad, ops


def main():
    args = sys.argv[1:]
    corrupt = None
    if len(args) == 3 and args[1] == '--corrupt':
        corrupt = args[2]
    elif len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        recs = list(roce.records(args[0]))
    except (OSError, ValueError, struct.error) as e:
        print('%s: %s' % (args[0], e))
        return 2
    trunc = []
    count, bad, ops = check(recs, corrupt, trunc)
    print('%d RoCEv2 packets, %d bad ICRC, opcodes {%s}%s' % (
        count, len(bad),
        ', '.join('0x%02x: %d' % (k, ops[k]) for k in sorted(ops)),
        '; %d truncated by the capture, not checkable' % len(trunc)
        if trunc else ''))
    for b in bad[:10]:
        print('  ' + b)
    return 0 if count and not bad else 1


if __name__ == '__main__':
    sys.exit(main())
