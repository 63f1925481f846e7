#!/usr/bin/env python3
# Seeds of generic-fuzz-rdma-session-hub (the adapter and virtio-net-pci on
# one hub): the adapter's admin queue enabled and an IPv4 GID 10.0.0.1
# added (ADD_GID from a DMA pattern), then virtio-net (legacy I/O BAR) sets
# up its TX queue and transmits one frame from guest RAM: a BUNDLE of two
# SENDs, or a HELLO.  One DMA pattern serves every read of the TX (avail
# index 1, head 1, descriptor 1 at 0x200001, the 10-byte virtio-net header,
# the frame), so the frame's destination MAC starts 00:00:00:00.
#   python3 tests/qtest/fuzz/rdma_session_hub_seeds.py \
#       tests/qtest/fuzz/rdma-session-corpus/hub
#
# SPDX-License-Identifier: GPL-2.0-or-later
import os, struct, sys, zlib
SEP=b"FUZZ"
def out(size, off, val): return bytes([1, size, 0]) + struct.pack("<HI", off, val)
def write(size, base, off, val): return bytes([3, size, base, 0, 0]) + struct.pack("<IQ", off, val)
def pattern(data, index=0, stride=0): return bytes([7, index, stride]) + data
CLEAR=bytes([8]); CLOCK=bytes([9])

def icrc(f):
    h = bytearray(b"\xff"*8) + bytearray(f[14:14+20+8+12])
    h[8+1]=0xff; h[8+8]=0xff; h[8+10]=h[8+11]=0xff
    h[8+20+6]=h[8+20+7]=0xff
    h[8+20+8+4]=0xff
    c = zlib.crc32(bytes(h))
    return zlib.crc32(f[14+20+8+12:], c)

def ipcsum(h):
    s=sum(struct.unpack(">10H", h))
    while s>>16: s=(s&0xffff)+(s>>16)
    return (~s)&0xffff

def roce_frame(dmac_tail, l4, sip=b"\x0a\x00\x00\x02", dip=b"\x0a\x00\x00\x01"):
    f = bytearray(b"\x00\x00\x00\x00"+dmac_tail + b"\x02\x00\x00\x00\x00\x02" + b"\x08\x00")
    udplen = 8+len(l4)+4
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45,0,20+udplen,0,0x4000,64,17,0,sip,dip))
    struct.pack_into(">H", ip, 10, ipcsum(bytes(ip)))
    f += ip + struct.pack(">HHHH", 0xc001, 4791, udplen, 0) + l4
    f += struct.pack("<I", icrc(bytes(f)))
    return bytes(f)

def tx_pattern(frame):
    # one pattern for every DMA read of the TX: avail idx 1, head 1, desc 1
    # at 0x200001 of len 10 + frame, then the vnet header and the frame
    L = 10 + len(frame)
    P = bytes([1,0,0x20,0,0,0,0,0]) + struct.pack("<H", L)
    assert frame[0:6] [:4] == b"\x00"*4
    # P[10:] is the frame: its first 2 bytes are len's high half (0), next 2 the
    # desc flags (0), next 2 desc.next
    return P + frame

def virtio_tx(frame):
    return [CLEAR, pattern(tx_pattern(frame)),
            out(0,18,0), out(0,18,3), out(2,4,0), out(1,14,1), out(2,8,0x100), out(0,18,7),
            out(1,16,1), CLOCK]


def admin_add_gid(ip=b"\x0a\x00\x00\x01"):
    regs = [(0x20, 0x300000), (0x24, 0), (0x28, 1), (0x30, 0x310000), (0x34, 0),
            (0x38, 0), (0x40, 0), (0x44, 0), (0x48, 0), (0x10, 1)]
    cmds = [write(2, 0, off, val) for off, val in regs]
    gid = b"\x00"*10 + b"\xff\xff" + ip
    cmd = bytes([0x14, 0]) + struct.pack("<HI", 1, 0) + gid + struct.pack("<IB3sII", 0, 0, b"\0\0\0", 0, 0)
    cmd += bytes(64 - len(cmd))
    cmds += [CLEAR, pattern(cmd), write(2, 0, 0x100, 1), CLOCK]
    return cmds

def bundle_frame(inner, dmac_tail=b"\x52\x54"):
    body = b"".join(struct.pack(">H", len(f)) + f for f in inner)
    l4 = bytes([0xc7, 0, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0]) + struct.pack(">HH", len(inner), 0) + body
    f = bytearray(roce_frame(dmac_tail, l4))
    return bytes(f[:-4])   # a bundle has no ICRC of its own

def send_frame(psn, payload=b"bundled from virtio-net"):
    l4 = bytes([0x04, 0, 0xff, 0xff, 0, 0, 0, 0x12, 0x80]) + struct.pack(">I", psn)[1:] + payload
    return roce_frame(b"\x00\x01", l4)

def write_seed(path, cmds):
    open(path, "wb").write(SEP.join(cmds))


def fix_lengths(b):
    # a frame without ICRC (a bundle): IP and UDP lengths, IP checksum
    b = bytearray(b)
    struct.pack_into(">H", b, 16, len(b) - 14)
    struct.pack_into(">H", b, 24, 0)
    struct.pack_into(">H", b, 24, ipcsum(bytes(b[14:34])))
    struct.pack_into(">H", b, 38, len(b) - 34)
    return bytes(b)


if __name__ == "__main__":
    outdir = sys.argv[1]
    bundle = fix_lengths(bundle_frame([send_frame(0x100), send_frame(0x101)]))
    write_seed(os.path.join(outdir, "virtio-tx-bundle"),
               admin_add_gid() + virtio_tx(bundle))
    hello = bytes([0xc5, 0, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0]) + \
        struct.pack(">HHII", 1, 0, 60000, 7)
    write_seed(os.path.join(outdir, "virtio-tx-hello"),
               admin_add_gid() + virtio_tx(roce_frame(b"\x52\x54", hello)))
