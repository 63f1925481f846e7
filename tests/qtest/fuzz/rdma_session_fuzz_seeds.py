#!/usr/bin/env python3
# The named seeds of the packet fuzzer (tests/qtest/fuzz/rdma_session_fuzz.c)
# for bundles, DC keys, spoofed sources, HELLO/REPLY and keyless inputs:
#   python3 tests/qtest/fuzz/rdma_session_fuzz_seeds.py \
#       tests/qtest/fuzz/rdma-session-corpus/packet
# Operation and QP numbers are those of rsf_ops[] and the RSF_QP_* enum.
#
# SPDX-License-Identifier: GPL-2.0-or-later
import struct, os, sys
out = sys.argv[1]
SEP = b"RSFZ"
ROCE, BTH, RAW, CLOCK, POST_SEND, POST_RECV, CQ, ODP, BUNDLE, SPOOF, HELLO, REPLY, REREG, DBREC = 0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
LOOP_A, LOOP_B, RC, UC, UD, RC6, XINI, XTGT, DCI, DCT, DCT2 = range(11)
MR_ALL, MR_RO, MR_ALL6, MR_BIG, MW_1, MW_2, MR_ODP, MR_ODPI, MR_IND, MR_PAT, MR_PEER = range(11)
TRANS, PD, ACCESS = 1, 2, 4

def roce(qp, opcode, ctl=0, psn=0, ackreq=0x80, ext=b"", flags=0, sport=1, qpn=None):
    b = bytes([ROCE, qp, opcode, flags, ctl, psn & 0xff, sport, ackreq])
    if qpn is not None:
        b += struct.pack(">I", qpn)[1:]
    return b + ext

def reth(length, off=0):
    return struct.pack(">QII", 0, 0, length)[:4] + struct.pack(">I", off) + struct.pack(">II", 0, length)

def read_req(qp, length, mr=MR_ALL, psn=0):
    # RETH: va (8: its low 4 bytes pick the offset), rkey, dmalen
    return roce(qp, 0x0c, ctl=0x04 | (mr << 4), psn=psn,
                ext=struct.pack(">QII", 0, 0, length))

def dc(qp, kind, key=True, other=False, dci=0x123, conn=1, psn=0):
    ctl = (0x04 if key else 0) | (0x10 if other else 0)
    return roce(qp, kind, ctl=ctl, psn=psn, ext=struct.pack(">QII", 0, dci, conn))

def clock(ns):
    return bytes([CLOCK]) + struct.pack("<Q", ns)

def bundle(frames, flags=0, cap=0, step=0, adj=0):
    return bytes([BUNDLE, (frames - 1) % 64, flags]) + struct.pack("<H", cap) + bytes([step, adj & 0xff])

def spoof(n, base, kind, nested):
    return bytes([SPOOF, (n - 1) % 64, base, kind]) + nested

def hello(flen=70, limit=60000, nonce=7, flags=0, sport=3):
    return bytes([HELLO, flags]) + struct.pack("<H", flen) + struct.pack(">II", limit, nonce) + bytes([sport])

def reply(answer=True, back=0, limit=0, val=0, size=None, flags=0):
    f = flags | (1 if answer else 0) | (back << 1)
    b = bytes([REPLY, f]) + struct.pack(">II", limit, val)
    if size is not None:
        b += struct.pack(">I", size)
    return b

def rereg(mr, flags, access=0, pd=0, pages=0, first=0, mr_flags=0):
    # REREG_MR of key mr: pages of a new translation (bit 7: npages off)
    return bytes([REREG, mr, flags]) + struct.pack("<H", access) + bytes([pd, pages, first, mr_flags])

def nested(cmd):
    # a command as the operand of spoof: its selector then operands
    return cmd

def write(name, cmds, keyless=False, small=False):
    cmds = list(cmds)
    first = bytearray(cmds[0])
    first[0] = (first[0] & 0x3f) | (0x80 if keyless else 0) | (0x40 if small else 0)
    cmds[0] = bytes(first)
    data = SEP.join(cmds)
    assert len(data) <= 4096, (name, len(data))
    open(os.path.join(out, name), "wb").write(data)

send = lambda qp, psn=0: roce(qp, 0x04, psn=psn, ext=b"hello from the wire")
# a bundle of ~860 READ requests of 16 KiB (16 response packets each)
write("bundle-read-fill", [bundle(1, flags=3, step=16), read_req(RC, 16384)])
# the same, 1 KiB each: within the per-frame bound only if the device
# bounds the work per frame, not per inner packet
write("bundle-read-fill-1k", [bundle(1, flags=3, step=1), read_req(RC, 1024)])
# distinct frames: SEND, WRITE, READ, ACK of the outstanding WRITE, DC CONNECTs
write("bundle-mixed-ops", [bundle(6), send(RC), roce(RC, 0x0a, ctl=0x04, ext=struct.pack(">QII", 0, 0, 64) + b"w" * 64),
                           read_req(RC, 2048, psn=1), roce(RC, 0x11, psn=0, ext=struct.pack(">I", 0)),
                           dc(DCT, 0), dc(DCT2, 0), clock(1000000)])
# negotiation: answer the HELLO of the bring-up, twice (an unpadded then
# a padded one), then traffic the device answers with several packets
write("hello-reply-negotiate", [reply(), clock(150_000_000), send(RC), reply(), clock(150_000_000),
                                bundle(3), read_req(RC, 2048), read_req(RC, 2048, psn=2), send(RC, psn=4),
                                clock(200_000_000), reply(), bundle(2), send(RC), send(RC), clock(1_000_000_000)])
# REPLYs with wrong nonce / version / size; a HELLO of each kind
write("hello-reply-bad", [reply(answer=False, val=1, size=60000), reply(flags=0x20), reply(flags=0x10, val=100),
                          hello(), hello(flen=60000), hello(flags=1), hello(flags=2), reply(back=3)])
# spoofed CONNECTs to both DCTs (own key, the other DCT's key, no key)
write("dc-connect-spoof-both", [spoof(8, 0, 4, dc(DCT, 0)), spoof(8, 0, 4, dc(DCT2, 0)),
                                spoof(8, 0, 4, dc(DCT2, 0, other=True)), spoof(4, 0, 0, dc(DCT, 0, key=False)),
                                dc(DCT, 0), dc(DCT2, 0, other=True), dc(DCT2, 0), dc(DCT, 2), clock(2_000_000)])
# keyless: what peers without a key can make the device send
write("keyless-dc-connect-flood", [spoof(64, 0, 4, dc(DCT, 0)), clock(100_000_000), spoof(64, 64, 4, dc(DCT2, 0)),
                                   clock(1_000_000_000), spoof(40, 0, 4, dc(DCT, 0))], keyless=True)
write("keyless-hello-flood", [spoof(64, 0, 4, hello()), spoof(16, 0, 3, hello(flen=60000)), reply(answer=False, val=1),
                              clock(500_000_000), spoof(64, 100, 0, hello())], keyless=True)
write("keyless-requests", [spoof(8, 0, 1, read_req(RC, 16384)), send(RC), roce(RC, 0x0a, ext=struct.pack(">QII", 0, 0, 64) + b"w" * 64),
                           roce(RC, 0x13, ext=bytes(28)), send(UC), roce(UD, 0x64, ctl=0x04, ext=bytes(8) + b"ud"),
                           bundle(1, flags=3, step=16), read_req(RC, 16384), clock(300_000_000)], keyless=True)
write("keyless-unknown-ops", [spoof(4, 0, 3, bytes([BTH, RC, 0x20]) + bytes([op, 0, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0]) + bytes(16))
                              for op in (0x18, 0x1f, 0x5f, 0xc0, 0xc1, 0xc8, 0xe0, 0xff)] +
                             [roce(RC, 0xc0, ctl=1), roce(RC, 0xc1, ctl=1)], keyless=True)
write("keyless-negotiate", [dc(DCT, 0), reply(), clock(200_000_000), dc(DCT, 0, conn=2), reply(),
                            bundle(4), dc(DCT, 0, conn=3), dc(DCT2, 0, conn=3), send(RC), send(RC, psn=1), clock(1_000_000_000)],
      keyless=True)
write("keyless-small-wire", [bundle(1, flags=1), dc(DCT, 0), clock(10_000_000)], keyless=True, small=True)
# REREG_MR between frames (RSF_MR_ALL has windows bound: BUSY): remote
# write taken from the big MR the WRITEs use and given back, its
# translation moved under the READs, MR_ALL6's PD changed away from the
# QPs' (and back); windows, ODP translations and indirect keys refused,
# bad translations and flags
wr = lambda qp, mr=MR_ALL, psn=0: roce(qp, 0x0a, ctl=0x04 | (mr << 4), psn=psn,
                                       ext=struct.pack(">QII", 0, 0, 64) + b"w" * 64)
write("rereg-under-traffic", [wr(RC, MR_BIG), rereg(MR_BIG, ACCESS, access=0x05), wr(RC, MR_BIG, psn=1),
                              rereg(MR_BIG, ACCESS, access=0x3f), wr(LOOP_A, MR_BIG),
                              read_req(LOOP_B, 4096, mr=MR_BIG), rereg(MR_BIG, TRANS, pages=4),
                              read_req(LOOP_B, 4096, mr=MR_BIG, psn=1), wr(RC6, MR_ALL6),
                              rereg(MR_ALL6, PD, pd=1), wr(RC6, MR_ALL6, psn=1),
                              rereg(MR_ALL6, PD | ACCESS, access=0x3f, pd=0), rereg(MR_ALL, ACCESS, access=0x07),
                              rereg(MW_2, ACCESS, access=0x07), rereg(MR_ODP, TRANS, pages=1),
                              rereg(MR_ODP, ACCESS | PD, access=0x07, pd=1), rereg(MR_IND, ACCESS, access=0x07),
                              rereg(MR_RO, TRANS | ACCESS, access=0x3f, pages=0x83), rereg(MR_RO, 0x9, pages=1),
                              rereg(MR_RO, TRANS, pages=1, mr_flags=1), clock(50_000_000)])
# peer-to-peer: WRITE, READ and a SEND's receive into the peer BAR MR
# (e1000e's registers: its MMIO handlers run), an atomic on it (refused),
# local WRITEs whose source and destination it is, and its translation
# moved to RAM under the traffic
post = lambda qp, op, mr, length, off=0: bytes([POST_SEND, qp, op, 0, mr]) + struct.pack("<HH", length, off)
recv = lambda qp, mr, length, off=0: bytes([POST_RECV, qp, mr]) + struct.pack("<HH", length, off)
write("peer-dma-bar", [wr(RC, MR_PEER), read_req(RC, 4096, mr=MR_PEER), clock(1_000_000),
                       recv(LOOP_B, MR_PEER, 2048, 64), post(LOOP_A, 0x00, MR_ALL, 512), clock(1_000_000),
                       post(LOOP_A, 0x03, MR_PEER, 2048, 256), post(LOOP_A, 0x05, MR_PEER, 1024, 8),
                       roce(RC, 0x13, ctl=0x04 | (MR_PEER << 4), psn=3, ext=bytes(28)),
                       rereg(MR_PEER, TRANS, pages=2), wr(RC, MR_PEER, psn=3), clock(50_000_000)])
# 802.1Q VLANs (ABI 1.9): GID 3 is 10.0.0.1 on VLAN 100 (RSF_VLAN).
# ROCE operations tagged (BTH flags bit 0; bits 1-3 the priority): a UD
# SEND taken on GID 3, RC requests (not from the QPs' VLAN: dropped),
# a READ and an ACK; then raw frames: VLAN 200 and 100 to our address,
# a double tag, an 802.1ad tag, tags cut short, a tagged ARP.
import zlib
def icrc4(f):
    h = bytearray(b"\xff" * 8) + bytearray(f[14:14 + 40])
    h[8 + 1] = 0xff; h[8 + 8] = 0xff; h[8 + 10] = h[8 + 11] = 0xff
    h[8 + 20 + 6] = h[8 + 20 + 7] = 0xff; h[8 + 28 + 4] = 0xff
    return zlib.crc32(f[14 + 40:], zlib.crc32(bytes(h)))
def roce4(op, dqpn, psn, payload, dip=bytes([10, 0, 0, 1]), sip=bytes([10, 0, 0, 2])):
    udplen = 8 + 12 + len(payload) + 4
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + udplen, 0, 0x4000, 64, 17, 0, sip, dip))
    s = sum(struct.unpack(">10H", bytes(ip)))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    ip[10:12] = struct.pack(">H", ~s & 0xffff)
    f = bytes([0x52, 0x54, 0, 0x12, 0x34, 0x70, 2, 0, 0, 0, 0, 2]) + b"\x08\x00" + bytes(ip)
    f += struct.pack(">HHHH", 0xc001, 4791, udplen, 0)
    f += struct.pack(">BBHII", op, 0, 0xffff, dqpn, psn) + payload
    return f + struct.pack("<I", icrc4(f))
def tag(f, tci, tpid=0x8100):
    return f[:12] + struct.pack(">HH", tpid, tci) + f[12:]
raw = lambda f: bytes([RAW]) + f
ud_send = roce4(0x64, 2, 0, struct.pack(">II", 0x11111111, 1) + b"to the VLAN")
write("vlan-tagged-ops", [roce(UD, 0x64, ctl=0x04, flags=0x01, ext=bytes(8) + b"ud on vlan"),
                          roce(UD, 0x64, ctl=0x04, flags=0x0f, ext=bytes(8) + b"prio 7"),
                          roce(RC, 0x04, flags=0x01, ext=b"rc on vlan"), read_req(RC, 2048),
                          roce(RC, 0x0c, ctl=0x04, flags=0x05, ext=struct.pack(">QII", 0, 0, 1024)),
                          roce(RC, 0x11, flags=0x01, ext=struct.pack(">I", 0)), clock(1_000_000)])
write("vlan-raw-frames", [raw(tag(ud_send, 200)), raw(tag(ud_send, 100)), raw(tag(ud_send, 0xe000 | 100)),
                          raw(tag(tag(ud_send, 100), 100)), raw(tag(tag(ud_send, 100), 100, tpid=0x88a8)),
                          raw(tag(ud_send, 100)[:14]), raw(tag(ud_send, 100)[:18]),
                          raw(tag(ud_send, 100)[:18 + 20 + 4]), raw(tag(ud_send, 100)[:-1]),
                          raw(tag(bytes([0xff] * 6) + bytes([2, 0, 0, 0, 0, 2]) + b"\x08\x06" + bytes(28), 100)),
                          clock(1_000_000)])
# ECN and CNPs (ABI 1.10): ROCE operations marked CE (control bit 7) to
# RC, UD and UC QPs (each earns a CNP, one per cnp-interval), and a CNP
# by raw opcode to the RC QP; then raw frames: a CE-marked UD SEND, CNPs
# to the UD QP, to no QP, with another P_Key, cut short and too long.
def ce(f):
    f = bytearray(f)
    f[15] |= 3
    f[24:26] = b"\0\0"
    s = sum(struct.unpack(">10H", bytes(f[14:34])))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    f[24:26] = struct.pack(">H", ~s & 0xffff)
    return bytes(f)
cnp = lambda qpn, payload=bytes(16): roce4(0x81, qpn, 0, payload)
bad_pkey = bytearray(cnp(2))
bad_pkey[14 + 20 + 8 + 2:14 + 20 + 8 + 4] = b"\x12\x34"
bad_pkey = bytes(bad_pkey[:-4]) + struct.pack("<I", icrc4(bytes(bad_pkey[:-4])))
write("ecn-ce-ops", [roce(RC, 0x04, ctl=0x80, ext=b"ce"), roce(RC, 0x04, ctl=0x80, psn=1, ext=b"ce again"),
                     clock(100_000), roce(RC, 0x0c, ctl=0x84, psn=2, ext=struct.pack(">QII", 0, 0, 64)),
                     roce(UD, 0x64, ctl=0x84, ext=bytes(8) + b"ud ce"), roce(UC, 0x04, ctl=0x80, ext=b"uc"),
                     roce(RC, 0x81, ctl=0x01, ext=bytes(16)), roce(RC, 0x81, ctl=0x81, ext=bytes(8)),
                     clock(1_000_000)])
write("ecn-cnp-frames", [raw(ce(ud_send)), raw(cnp(2)), raw(ce(cnp(2))), raw(cnp(0)), raw(cnp(0xffffff)),
                         raw(bad_pkey), raw(cnp(2, bytes(8))), raw(cnp(2, bytes(64))), raw(cnp(2)[:-1]),
                         raw(tag(cnp(2), 100)), clock(1_000_000)])
# DCQCN: CNPs to the RC QP (by raw opcode) lower its rate to the minimum;
# then work requests it must pace, and virtual time for the periods.
cnp_rc = roce(RC, 0x81, ctl=0x01, ext=bytes(16))
write("ecn-dcqcn-pace", [cnp_rc] * 24 + [post(RC, 0x00, MR_ALL, 4096), post(RC, 0x00, MR_ALL, 4096, 64),
                                         clock(100_000), wr(RC, MR_ALL), cnp_rc, clock(1_000_000),
                                         post(RC, 0x00, MR_ALL, 2048), clock(10_000_000), clock(50_000_000)])
# Doorbell records (ABI 1.11): records for the loopback and RC QPs, work
# posted with doorbells, then hostile producers (a ring and more ahead,
# bits 16-31, behind the consumer), scribbled active words, misaligned and
# outside-RAM records, a record dropped and set again, each kicked.
def dbrec(qp, mode, val=0):
    return bytes([DBREC, qp, mode]) + struct.pack("<I", val & 0xffffffff)
write("dbrec-hostile", [dbrec(LOOP_A, 0), dbrec(LOOP_B, 0), dbrec(RC, 0), post(RC, 0x00, MR_ALL, 512),
                        dbrec(RC, 0x04 | 0x20, 0x41), dbrec(LOOP_A, 0x04 | 0x10 | 0x20, 1),
                        dbrec(LOOP_B, 0x08, 0x10005), send(RC), dbrec(RC, 0x10, 0xffffffff),
                        dbrec(RC, 0x04 | 0x20, 0xffff), dbrec(UD, 2), dbrec(UD, 3, 0xfffffff0),
                        dbrec(UC, 1), dbrec(UC, 0x04 | 0x20, 3), clock(1_000_000)])
