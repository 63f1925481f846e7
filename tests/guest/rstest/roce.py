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
