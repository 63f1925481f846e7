#!/usr/bin/env python3
"""Verbs a soft-RoCE user relies on, between VMs, as TAP: the programs of
tests/guest/progs (rsv-*, in the guest image's /usr/bin) run through the
guest driver and rdma-core's provider, with their data checked.

One boot (a launcher run of rstest) per pairing that has features:
  adapter-adapter  two VMs with the adapter
  adapter-rxe      VM 1 with the adapter, VM 2 with Linux soft-RoCE
  three            three VMs with the adapter (multicast)
Every VM of a boot runs lib.sh, verbs-common.sh, then the guest script
of each feature of FEATURES that lists the pairing (tests/guest/in-guest/
verbs-FEATURE.sh) in the table's order, and verbs-end.sh (the kernel
log); a feature script runs its programs with vb_pair (see
verbs-common.sh), which names their checks "PAIRING/FEATURE/CHECK".

To add a feature: write tests/guest/progs/rsv-FEATURE.c (rsv-common.h
says how), tests/guest/in-guest/verbs-FEATURE.sh, and a FEATURES entry:
(script, pairings, {VM: [checks of that VM]}); a check that does not come
fails as "no result".

Besides the pairings, one boot of a single VM (odp-limits, run in the
full suite or on its own as "verbs.py odp-limits"): the guest driver's
bounds on ODP (tests/guest/progs/rsv-odplim.c, odp_limits).

Usage: tests/guest/verbs.py [--list] [--repeat N] [NAME...]  (default: all)
  --list        every test's name: PAIRING/FEATURE/CHECK/vmN for a
                guest's check, PAIRING/dmesg-clean/vmN,
                PAIRING/launch-vms, PAIRING/capture-bundles,
                PAIRING/FEATURE/capture...
  NAME          a test, or any part of the names: a feature ("rc"), a
                pairing ("adapter-rxe"), "adapter-adapter/rc", a check on
                both VMs ("adapter-adapter/rc/rc-connect"); shell patterns
                per component ("*/rc/*/vm2").  Only the pairings and
                features the selection needs boot (rstest/select.py).
  --repeat N    N rounds, then each test's pass rate and those below N/N
Environment: RS_BUILD; RS_NO_BUILD=1 is implied (the build comes first).
Logs: $RS_BUILD/test-logs/verbs.XXXXXX (verbs.last): each pairing's
launcher output PAIRING.log and VM directory vms-PAIRING, and every CHECK
line in checks.

The adapters run with bundles on (the default), so runs of RoCE packets
between two of them travel as one BUNDLE frame (docs/specs/rdma-session.rst
"Bundles on the wire"); every capture check counts and checks the packets
inside (rstest/roce.py unbundle; tshark with the project's dissector,
scripts/wireshark/rdma-session.lua, which hands each packet in a bundle to
tshark's own dissectors, and counts field values, not frames).  The boots
of adapters only (adapter-adapter, three) always capture VM 1's traffic
(--pcap) in PAIRING.pcap and check that the adapters negotiated bundles
with each other and, when a feature with messages of several packets ran
(BUNDLED), sent some, each well formed (bundle_capture).

A boot with the flush feature captures VM 1's traffic too and checks it:
tshark decodes every RoCE packet with a BTH and finds nothing malformed,
scripts/roce-icrc.py's CRC finds every packet's ICRC right (and every
bundle well formed), and
the FLUSH (0x1c) and ATOMIC WRITE (0x1d) requests, which tshark 4.0 shows
as "Unknown OpCode", are checked byte by byte, each with its response.
With the xrc feature too, the XRC packets are checked: the XRCETH of
every request (tshark 4.0 names the XRC opcodes but has no XRCETH
fields) and none on the responses.  With the odp feature, the page-fault
pause: VM 1's PAUSEs each with its RNR NAK, tshark decoding them, and
no retransmission from an adapter requester while it is paused
(odp_capture).  A boot with the dc feature captures VM 1 (the DCI) too:
every DC CONNECT (0xc2) carries the key of the DCT it names in its
DCETH, the data between goes as RC opcodes, the CONNECTs switch target
at least once per round of rsv-dc, and tshark decodes them (dc_capture).
"""

import os
import re
import struct
import subprocess
import sys
import zlib
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import checks, console, select  # noqa: E402
from rstest import roce  # noqa: E402
from rstest.suite import Suite, guest_files, need_tshark, qmp  # noqa: E402

PAIRINGS = {
    "adapter-adapter": ["-n", "2"],
    "adapter-rxe": ["-n", "2", "--soft-roce-vm", "2"],
    "three": ["-n", "3"],
    "netid": ["-n", "2"],
    # The same, VM 1 migrated while the programs wait (connected) with
    # their keys of both identities registered.
    "netid-migrate": ["-n", "2", "--migrate", "1@15"],
}

TWO = ("adapter-adapter", "adapter-rxe")
# The boots whose adapters talk to each other with bundles on (the
# default): VM 1's traffic is captured, the adapters must negotiate
# bundles both ways, and the capture checks read the packets inside them
# (bundle_capture).  With one of these features the boot must also send
# bundles: each has messages of several packets that a requester sends in
# one run (rsv-rc's 8 KiB WRITE, rsv-xrc's 10000-byte SENDs, perftest,
# rsv-dc's WRITEs through the memory keys); the others may not (rsv-mw's
# 4 KiB, multicast).
BUNDLED = {"adapter-adapter": ("rc", "xrc", "odp"), "three": ("dc",)}


def _mw_checks(vm: int) -> List[str]:
    """rsv-mw's checks on VM vm, for each window type (2ex: type 2 bound
    with ibv_wr_bind_mw) and owner VM: the owner's (bind, ...) or the
    user's (write-read, ...)."""
    out = []
    for t in ("2", "2ex", "1"):
        for owner in (1, 2):
            if owner == vm:
                cks = ["bind", "mr-busy", "remote-write",
                       "unbind" if t == "1" else "remote-inv",
                       "memory-unchanged"]
            else:
                cks = (["write-read"] + ([] if t == "1" else ["send-inv"]) +
                       ["access-refused"])
            out += ["t%s-vm%downs-%s" % (t, owner, c) for c in cks]
    return out


# verbs-vlan.sh's checks: every VM's; an adapter's also.
VLAN_COMMON = ["gid", "ping", "rc-pingpong", "rc-pingpong-untagged", "rping"]
VLAN_ADAPTER = ["gid", "driver-vlan", "ping", "rc-pingpong",
                "rc-pingpong-untagged", "rping", "statistic"]

# verbs-ipv6.sh's checks on each VM (mckey's differ by role).
IPV6_CHECKS = ["gid", "ping", "rc-pingpong", "write-bw", "rping"]

# rsv-flush: every side is the requester once and the responder once.
FLUSH_CHECKS = ["flush-caps", "flush-connect", "atomic-write",
                "atomic-write-peer", "flush-range", "flush-mr",
                "flush-no-right"]

# QEMU arguments of a pairing's VMs.  Linux 6.12's soft-RoCE computes the
# ICRC of a FLUSH over the transport headers twice: the adapters next to
# it send and accept FLUSHes so (x-rxe-flush-icrc).  The soft-RoCE VM's
# virtio-net filters multicast by a table its driver updates from a work
# item after the group join has returned: on a loaded host a whole burst
# sent to a group the receiver had just joined was dropped there (64 of
# 64).  Without the control-RX feature the NIC passes every group, and
# mcast-rxe measures the adapter and soft-RoCE, not that delay.
PAIRING_QEMU = {
    "adapter-rxe": ["--", "-global", "rdma-session.x-rxe-flush-icrc=on",
                    "-global", "virtio-net-pci.ctrl_rx=off"],
    # Two network identities the host assigns: the launcher's 10.77.0.0/24
    # stays in identity 0 (VNI 100), 10.78.0.0/24 is identity 1 (VNI 200).
    "netid": ["--", "-global", "rdma-session.vni=100",
              "-global", "rdma-session.netids=10.78.0.0/24=200"],
    "netid-migrate": ["--", "-global", "rdma-session.vni=100",
                      "-global", "rdma-session.netids=10.78.0.0/24=200"],
}

# rsv-verbs' checks on both sides (local to each VM) and on VM 1 alone.
VERBS_LOCAL = ["qp-ex-create-flags-0", "qp-ex-create-flags-unsupported",
               "qp-ex-defaults", "qp-ex-xrc", "cq-ex-defaults",
               "cq-ex-unsupported", "srq-ex-defaults", "srq-ex-xrc",
               "query-device-ex", "state-reset", "state-init", "state-rtr",
               "state-posted-nothing", "state-err-flush",
               "state-reset-again"]
# What soft-RoCE (Debian's 6.12 rdma_rxe, rdma-core 56.1) passes of them.
# Its post verbs answer EINVAL outside the states but keep the work
# request queued (sent in RTS, flushed in ERR) and leave bad_wr unset;
# it refuses MAX_TSO_HEADER 0 with EOPNOTSUPP and an
# XRC SRQ with EINVAL (docs/system/devices/rdma-session.rst).  It has no
# XRC: it is held to refusing the XRC_SEND QP (qp-ex-xrc-refused), where
# the adapter creates it (qp-ex-xrc).
VERBS_RXE = ["qp-ex-create-flags-0", "qp-ex-create-flags-unsupported",
             "qp-ex-xrc-refused", "cq-ex-defaults", "cq-ex-unsupported",
             "srq-ex-defaults", "query-device-ex"]
VERBS_SERVER = ["cq-resize-below-unpolled", "cq-resize-carry",
                "cq-resize-traffic", "cq-resize-no-extra",
                "srq-resize-traffic", "srq-resize-below-waiting",
                "srq-resize-limit", "rereg-bad-input", "rereg-before",
                "rereg-access-add-write", "rereg-pd", "rereg-pd-back",
                "rereg-translation", "rereg-translation-posted-recv",
                "rereg-access", "rereg-access-pinned-read-only",
                "rereg-in-place-count"]

# rsv-odp's checks: VM 1 owns the implicit ODP MR, VM 2 is its peer; then
# the unmodified programs with ODP on the adapter's side (both ways).
ODP_VM1 = ["odp-caps", "odp-implicit-mr", "odp-connect", "odp-write",
           "odp-halves", "odp-same-pages", "odp-final-write", "odp-fork-child",
           "odp-prefetch",
           "odp-local-fail", "odp-counters"]
ODP_VM2 = ["odp-client-mr", "odp-connect", "odp-peer-write", "odp-read",
           "odp-read-dropped", "odp-fork-cow", "odp-fault-fail"]
ODP_RUNS = ["rc-pingpong-odp", "rc-pingpong-iodp"] + [
    "%s-server%d" % (p, s) for p in ("ib_write_bw", "ib_read_bw", "ib_send_bw")
    for s in (1, 2)]

# rsv-dc (three VMs: VM 1 the DCI, VMs 2 and 3 a DCT each) and the
# rsessiondv.h example programs.
DC_EXAMPLES = ["example-dc-bw", "example-strided", "example-usage"]
DC_VM1 = ["dc-caps", "dc-dci-create", "dc-query", "dc-traffic", "dc-bad-key",
          "dc-recover", "dc-rate", "dc-memory", "mkey-indirect-rw",
          "mkey-pattern-rw", "mkey-inv-refused"] + DC_EXAMPLES
DC_DCT = ["dc-caps", "dc-dct-create", "dc-query", "dc-recv",
          "dc-write-mem"]
DC_VM2 = DC_DCT + ["dc-key-event", "mkey-indirect-mem", "dc-key-log"] + \
    DC_EXAMPLES
DC_VM3 = DC_DCT + ["mkey-pattern-column", "mkey-pattern-rest",
                   "example-dc-bw", "example-usage"]
# rsv-dc's DCT keys: KEY_BASE + VM number; the wrong one sent to VM 2;
# rsdv_dc_bw's and rsdv_strided_write's default key.
DC_KEY_BASE = 0x5eed0000c0ffee00
DC_BAD_XOR = 0xbad0000
DC_EXAMPLE_KEY = 0x1234abcd

# rsv-compat's checks (VM 1 receives the RC SEND: the cq-event ones) and
# the event-mode perftest runs.
COMPAT = ["attr-inline-room", "attr-rd-atomic", "attr-srq-limit",
          "attr-srq-caps", "flow-label-rc", "flow-label-ah", "ud-recv",
          "ud-grh"]
COMPAT_VM1 = COMPAT + ["cq-event", "cq-event-only-fired"]
# perftest in event mode, between adapters (verbs-compat.sh says why).
COMPAT_EVENTS = ["ib_send_lat-events", "ib_send_bw-events"]
# soft-RoCE neither reports a UD receive's network header type nor binds
# windows with FLUSH_GLOBAL.
COMPAT_ADAPTER = ["ud-net-type", "attr-mw-flush"]

# rsv-dmabuf's checks: VM 1 owns the dma-buf MRs, VM 2 is the initiator.
DMABUF_VM1 = ["bad-fd", "past-end", "odp-refused", "reg", "rereg-refused",
              "connect", "recv", "memory", "dereg"]
DMABUF_VM2 = ["local-mr", "connect", "write-read", "read",
              "offset-write-read", "dereg"]

# (feature, pairings, {VM: [checks]})
FEATURES: List[Tuple[str, Tuple[str, ...], Dict[int, List[str]]]] = [
    ("rc", TWO, {1: ["rc-connect", "rc-send"],
                 2: ["rc-connect", "rc-write-read"]}),
    ("mw", TWO, {1: _mw_checks(1), 2: _mw_checks(2)}),
    # rsv-compat, then perftest in event mode.
    ("compat", ("adapter-adapter",),
     {1: COMPAT_VM1 + COMPAT_ADAPTER + COMPAT_EVENTS,
      2: COMPAT + COMPAT_ADAPTER + COMPAT_EVENTS}),
    ("compat", ("adapter-rxe",), {1: COMPAT_VM1 + COMPAT_ADAPTER,
                                  2: COMPAT}),
    ("flush", TWO, {vm: FLUSH_CHECKS for vm in (1, 2)}),
    # rsv-verbs: VM 1 (the adapter) resizes and re-registers; soft-RoCE
    # as VM 2 is held to the checks it passes (docs: what it does).
    ("verbs", ("adapter-adapter",),
     {1: VERBS_LOCAL + VERBS_SERVER, 2: VERBS_LOCAL + ["stream-sent"]}),
    ("verbs", ("adapter-rxe",),
     {1: VERBS_LOCAL + VERBS_SERVER, 2: VERBS_RXE + ["stream-sent"]}),
    # rsv-xrc, then ibv_xsrq_pingpong: VM 1 the sender, VM 2 the two
    # processes that share an XRC domain and target QP.
    ("xrc", ("adapter-adapter",),
     {1: ["xrc-post-refused", "xrc-connect", "xrc-send", "xrc-write-read",
          "xrc-other-domain", "xsrq-pingpong"],
      2: ["xrc-tgt-post-refused", "xrc-tgt-connect", "xrc-open-qp",
          "xrc-recv-a", "xrc-recv-b", "xrc-write-mem",
          "xrc-other-domain-nothing", "xsrq-pingpong"]}),
    # On-demand paging: rsv-odp (VM 1 the implicit ODP MR), then
    # ibv_rc_pingpong and perftest with ODP on the adapter's side.
    ("odp", ("adapter-adapter",),
     {1: ["devinfo"] + ODP_VM1 + ODP_RUNS + ["ib_write_bw-pinned",
                                             "rdma-statistic"],
      2: ["devinfo"] + ODP_VM2 + ["odp-requester-counters"] + ODP_RUNS +
         ["ib_write_bw-pinned", "rdma-statistic"]}),
    ("odp", ("adapter-rxe",),
     {1: ["devinfo"] + ODP_VM1 + ODP_RUNS + ["rdma-statistic"],
      2: ODP_VM2 + ODP_RUNS}),
    # rsv-dmabuf: VM 1 (an adapter) registers dma-bufs, VM 2 writes,
    # reads and sends into them (soft-RoCE from an ordinary MR).
    ("dmabuf", TWO, {1: DMABUF_VM1, 2: DMABUF_VM2}),
    ("mcast", ("three",), {1: ["devinfo", "ud-send", "mckey-send"],
                           2: ["devinfo", "ud-attach", "ud-recv",
                               "ud-detach", "mckey-recv"],
                           3: ["devinfo", "ud-attach", "ud-recv",
                               "ud-detach", "mckey-recv"]}),
    ("dc", ("three",), {1: DC_VM1, 2: DC_VM2, 3: DC_VM3}),
    # rsv-netid: VM 2 writes into VM 1 through each identity with each
    # identity's key; the other identity's key is refused through each.
    ("netid", ("netid", "netid-migrate"), {
        1: ["memory-id0", "memory-id1", "driver-learns"],
        2: ["write-id0", "write-id1", "cross-id1-key-via-id0",
            "cross-id0-key-via-id1", "driver-learns"]}),
    # 802.1Q VLAN 100 (verbs-vlan.sh), on the adapters and with a
    # soft-RoCE peer; VM 1's capture: vlan_capture.
    ("vlan", ("adapter-adapter",), {1: VLAN_ADAPTER, 2: VLAN_ADAPTER}),
    ("vlan", ("adapter-rxe",), {1: VLAN_ADAPTER, 2: VLAN_COMMON}),
    # RoCE v2 over IPv6 global addresses (verbs-ipv6.sh) on the adapters
    # and with a soft-RoCE peer; VM 1's capture: ipv6_capture.
    ("ipv6", TWO, {1: IPV6_CHECKS + ["mc1-send", "mc2-attach", "mc2-recv",
                                     "mc2-detach", "nvmf-target"],
                   2: IPV6_CHECKS + ["mc1-attach", "mc1-recv", "mc1-detach",
                                     "mc2-send", "nvmf-io"]}),
    ("mcast-rxe", ("adapter-rxe",), {
        1: ["a2r-send", "r2a-attach", "r2a-recv", "r2a-detach",
            "mckey-a2r-send"],
        2: ["a2r-attach", "a2r-recv", "a2r-detach", "r2a-send",
            "mckey-a2r-recv"]}),
]


TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def no_capture(s: Suite, name: str, pcap: str) -> bool:
    """Whether pcap is missing or empty (then test name fails)."""
    if os.path.isfile(pcap) and os.path.getsize(pcap) > 0:
        return False
    s.report(False, name, "no capture " + pcap)
    return True


def roce_frames(path: str) -> List[Tuple[str, str, bytes]]:
    """The IPv4 RoCEv2 frames of a pcap: (source, destination, from the
    BTH on, ICRC included)."""
    return [f[1:] for f in roce_frames_ts(path)]


def roce_frames_ts(path: str) -> List[Tuple[float, str, str, bytes]]:
    """roce_frames() with each frame's capture time (seconds) first; the
    frames in a bundle of the adapter's count as if each came alone
    (rstest.roce.packets)."""
    return [(p.t, p.src, p.dst, p.roce)
            for p in roce.packets(path, v4only=True)]


def flush_bytes(path: str) -> Tuple[bool, str]:
    """Every FLUSH (BTH, FETH global with a range or the MR, RETH, ICRC)
    and ATOMIC WRITE (BTH, RETH of 8 bytes, 8 bytes, ICRC) request, and
    for each the other side's answer at its PSN: an empty READ RESPONSE
    Only with an ACK, or a NAK.  Each side sends 1 ATOMIC WRITE and 3
    FLUSHes (one refused with a remote access NAK)."""
    fl = aw = ok = nak = 0
    bad = []
    frames = roce_frames(path)
    seen = set()
    for i, (src, dst, b) in enumerate(frames):
        op = b[0]
        psn = struct.unpack("!I", b[8:12])[0] & 0xffffff
        if op not in (0x1c, 0x1d) or (src, op, psn) in seen:
            continue        # a retransmission is answered like the first
        seen.add((src, op, psn))
        if op == 0x1c:
            fl += 1
            feth = struct.unpack("!I", b[12:16])[0]
            if len(b) != 12 + 4 + 16 + 4 or feth not in (0x01, 0x11):
                bad.append("FLUSH %d bytes FETH 0x%x" % (len(b), feth))
        else:
            aw += 1
            rlen = struct.unpack("!I", b[24:28])[0]
            if len(b) != 12 + 16 + 8 + 4 or rlen != 8:
                bad.append("ATOMIC WRITE %d bytes RETH length %d" %
                           (len(b), rlen))
        resp = [r for s2, d2, r in frames[i + 1:]
                if s2 == dst and d2 == src and r[0] in (0x10, 0x11) and
                struct.unpack("!I", r[8:12])[0] & 0xffffff == psn]
        if not resp:
            bad.append("no response to 0x%x PSN %d" % (op, psn))
        elif resp[0][0] == 0x10 and len(resp[0]) == 12 + 4 + 4 and \
                resp[0][12] & 0xe0 == 0:
            ok += 1
        elif resp[0][0] == 0x11 and resp[0][12] == 0x62:
            nak += 1
        else:
            bad.append("response 0x%x syndrome 0x%x to 0x%x PSN %d" %
                       (resp[0][0], resp[0][12], op, psn))
    detail = ("%d FLUSH, %d ATOMIC WRITE, %d empty READ responses, %d "
              "remote access NAKs" % (fl, aw, ok, nak))
    return (not bad and fl == 6 and aw == 2 and ok == 6 and nak == 2,
            detail + ("; " + "; ".join(bad[:3]) if bad else ""))


DISSECTOR = os.path.join(TOP, "scripts", "wireshark", "rdma-session.lua")


# The payloads are test data: no guessing of what they carry (tshark took
# a 56-byte SEND for an Ethernet frame with a malformed CGMP).
NOHEUR = ["--disable-heuristic", "eth_over_ib"] + [
    a for p in ("smc", "smb_direct", "rpcordma", "nvme-rdma", "lnet", "iser",
                "infiniband_sdp", "fcoib") for a in ("--disable-protocol", p)]

# What tshark_packets() reads of each frame.
TS_FIELDS = ["ip.src", "udp.srcport", "udp.dstport", "infiniband.bth.opcode",
             "rdmasession.op", "rdmasession.dc.key"]
_ts_cache: Dict[str, Optional[List[Dict[str, List[str]]]]] = {}


def tshark_run(tshark: str, pcap: str, args: List[str]) -> Optional[str]:
    """tshark over pcap with the project's dissector
    (scripts/wireshark/rdma-session.lua), which decodes the adapter's
    extension packets and hands each packet in a bundle to tshark's own
    dissectors; its output, None if it failed."""
    r = subprocess.run([tshark, "-n", "-X", "lua_script:" + DISSECTOR] +
                       NOHEUR + ["-r", pcap] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       stdin=subprocess.DEVNULL, universal_newlines=True,
                       errors="replace", check=False)
    return r.stdout if r.returncode == 0 else None


def tshark_frames(tshark: str, pcap: str, flt: str) -> int:
    """How many frames (a bundle is one) match display filter flt; -1 if
    tshark failed."""
    out = tshark_run(tshark, pcap, ["-Y", flt])
    return -1 if out is None else len(out.splitlines())


def tshark_packets(tshark: str, pcap: str
                   ) -> Optional[List[Dict[str, List[str]]]]:
    """Each frame of pcap as tshark decodes it: {field of TS_FIELDS: its
    values, one per header that has it (a bundle's own, then each of its
    packets')}; read once per capture.  None if tshark failed.  (A display
    filter selects whole frames, so the checks count values instead.)"""
    if pcap not in _ts_cache:
        args = ["-T", "fields", "-E", "separator=|", "-E", "aggregator=;"]
        for x in TS_FIELDS:
            args += ["-e", x]
        out = tshark_run(tshark, pcap, args)
        _ts_cache[pcap] = None if out is None else [
            {k: v.split(";") if v else [] for k, v in
             zip(TS_FIELDS, ln.split("|"))} for ln in out.splitlines()]
    return _ts_cache[pcap]


def ts_opcodes(fr: List[Dict[str, List[str]]]) -> List[int]:
    """The BTH opcodes of every packet tshark decoded in frames fr."""
    return [int(v, 0) for f in fr for v in f["infiniband.bth.opcode"]]


def icrc_check(pcap: str, rxe_flush: bool) -> Tuple[bool, str]:
    """The ICRC of every packet (rstest.roce.icrc, scripts/roce-icrc.py's),
    each packet in a bundle's its own (a bundle has none), every bundle
    well formed (bundle_faults); with rxe_flush, a FLUSH may carry
    soft-RoCE's instead (the headers covered twice)."""
    pkts, bundles = roce.read_capture(pcap)
    rxe = 0
    bad = ["bundle in frame %d: %s" % (b.num, "; ".join(b.faults))
           for b in bundles if b.faults]
    for p in pkts:
        comp, stored = roce.icrc(p.frame, p.ip, p.udp, p.v6)
        if comp == stored:
            continue
        end = p.udp + struct.unpack_from(">H", p.frame, p.udp + 4)[0]
        if rxe_flush and p.opcode == 0x1c and stored == \
                zlib.crc32(p.frame[p.udp + 8:end - 4], comp) & 0xffffffff:
            rxe += 1
            continue
        bad.append("frame %d opcode 0x%x" % (p.num, p.opcode))
    return (len(pkts) > 0 and not bad,
            "%d RoCEv2 packets (%d bundles, each of their packets counted "
            "and checked), %d bad ICRC or bundle%s, %d FLUSH with "
            "soft-RoCE's ICRC" %
            (len(pkts), len(bundles), len(bad),
             (": " + ", ".join(bad[:3])) if bad else "", rxe))


def flush_capture(s: Suite, pairing: str, pcap: str) -> None:
    """The checks of the capture of a boot that ran rsv-flush."""
    name = "%s/flush/capture" % pairing
    if not os.path.isfile(pcap) or os.path.getsize(pcap) == 0:
        for x in ("-bytes", "-icrc", "-tshark"):
            s.report(False, name + x, "no capture " + pcap)
        return
    ok, detail = flush_bytes(pcap)
    s.tap("ok" if ok else "fail", name + "-bytes", detail)
    ok, detail = icrc_check(pcap, pairing == "adapter-rxe")
    s.tap("ok" if ok else "fail", name + "-icrc", detail)
    tshark = need_tshark(os.path.join(s.dir, "tshark-install.log"))
    if not tshark:
        s.report(False, name + "-tshark", "no tshark (see %s)" %
                 os.path.join(s.dir, "tshark-install.log"))
        return

    # Packets, not frames: a bundle and each packet in it have their own
    # UDP header and BTH.
    frames = tshark_packets(tshark, pcap)
    nudp = nbth = nnew = -1
    if frames is not None:
        on4791 = [f for f in frames
                  if "4791" in f["udp.srcport"] + f["udp.dstport"]]
        nudp = sum(1 for f in on4791 for a, b in zip(f["udp.srcport"],
                                                     f["udp.dstport"])
                   if "4791" in (a, b))
        ops = ts_opcodes(on4791)
        nbth = len(ops)
        nnew = sum(1 for o in ops if o in (28, 29))
    pkts, bundles = roce.read_capture(pcap)
    # (the programs' TCP exchanges on ports 19000+ are not RoCE; tshark
    # takes some of those ports for other protocols.  Soft-RoCE leaves the
    # UDP checksum of its IPv6 packets 0, which tshark calls an error.)
    nbad = tshark_frames(tshark, pcap, 'udp.port == 4791 && '
                         '(_ws.malformed || (_ws.expert.severity >= "error" '
                         '&& !udp.checksum.zero))')
    s.tap("ok" if nudp > 0 and nudp == nbth and
          nbth == len(pkts) + len(bundles) and nbad == 0 and
          nnew >= 8 else "fail", name + "-tshark",
          "%d RoCE packets (the %d bundles and each packet in them; %d read "
          "here), %d with a BTH, %d frames malformed or with an expert "
          "error; %d FLUSH/ATOMIC WRITE (tshark 4.0: \"Unknown OpCode\")" %
          (nudp, len(bundles), len(pkts) + len(bundles), nbth, nbad, nnew))


def odp_capture(s: Suite, pairing: str, pcap: str) -> None:
    """The page-fault pause in the capture of VM 1 (an adapter) in a boot
    that ran the odp feature.  Each PAUSE (0xc0: BTH, AETH with an RNR
    syndrome) VM 1's responder sends is followed by a standard RNR NAK at
    its PSN to the same QP, and tshark decodes both (the PAUSE as a BTH
    with a manufacturer-specific opcode).  An adapter requester sends
    nothing at the paused PSN until the RESUME (0xc1) or the PAUSE's
    163.84 ms; a soft-RoCE requester does not know the PAUSE and sends
    again at every RNR timer, as the IBTA makes it.  The detail gives how
    long the faults took on the wire (PAUSE to RESUME) and what each kind
    of requester sent meanwhile.  The multicast segment hands VM 1 its own
    frames back, which the capture records again: a frame of VM 1's that
    repeats one of its last 50 ms byte for byte is that copy, and skipped.
    With the local fabric (RS_LOCAL_FABRIC=1: the launcher also wrote
    pcap.fabric, VM 1's frames over the fabric, which never reach the
    netdev) the two captures merged (rstest.roce.with_fabric), and the
    detail says so."""
    name = "%s/odp/capture" % pairing
    me = "10.77.0.1"
    if not os.path.isfile(pcap):
        s.report(False, name, "no capture " + pcap)
        return
    pcap, note = roce.with_fabric(pcap)
    frames = []
    seen = {}
    for f in roce_frames_ts(pcap):
        if f[1] == me:
            t0 = seen.get(f[3])
            seen[f[3]] = f[0]
            if t0 is not None and f[0] - t0 < 0.050:
                continue
        frames.append(f)
    open_ = {}                  # (responder, requester, PSN) -> PAUSE time
    waits = []
    npause = nresume = early = late = 0
    bad = []
    for i, (t, src, dst, b) in enumerate(frames):
        op = b[0]
        psn = struct.unpack("!I", b[8:12])[0] & 0xffffff
        if op == 0xc0 and src == me:
            npause += 1
            nxt = [f for f in frames[i + 1:i + 50] if f[1] == src and
                   f[2] == dst][:1]
            if len(b) != 12 + 4 + 4 or b[12] & 0xe0 != 0x20:
                bad.append("PAUSE of %d bytes, AETH 0x%x" % (len(b), b[12]))
            elif not nxt or nxt[0][3][0] != 0x11 or \
                    nxt[0][3][12] & 0xe0 != 0x20 or \
                    struct.unpack("!I", nxt[0][3][8:12])[0] & 0xffffff != psn:
                bad.append("PAUSE at PSN %d without its RNR NAK" % psn)
            open_.setdefault((src, dst, psn), t)
        elif op == 0xc1 and src == me:
            nresume += 1
            # (a QP whose fault outlived its peer's QP may resume a newer
            # QP of the same number: not every RESUME has a PAUSE here)
            t0 = open_.pop((src, dst, psn), None)
            if t0 is not None:
                waits.append(t - t0)
        elif op < 0x11 and op not in range(0x0d, 0x11) and dst == me:
            t0 = open_.get((dst, src, psn))
            if t0 is not None:
                # the requester sends the paused PSN again meanwhile
                if t - t0 < 0.150:
                    early += 1
                else:
                    late += 1
    tshark = need_tshark(os.path.join(s.dir, "tshark-install.log"))
    nts = nall = nmal = -1
    if tshark:
        frames = tshark_packets(tshark, pcap)
        nts = -1 if frames is None else \
            sum(1 for f in frames for op in f["rdmasession.op"]
                if op in ("PAUSE", "RESUME"))
        nmal = tshark_frames(tshark, pcap, "rdmasession.bad_length || "
                             "rdmasession.bad_bundle")
        nall = sum(1 for f in roce_frames(pcap) if f[2][0] in (0xc0, 0xc1))
    waits.sort()
    med = waits[len(waits) // 2] * 1000 if waits else 0
    p90 = waits[len(waits) * 9 // 10] * 1000 if waits else 0
    adapter_peer = pairing == "adapter-adapter"
    ok = not bad and npause > 0 and nresume > 0 and nts == nall and \
        nmal == 0 and (early == 0 if adapter_peer else True)
    s.tap("ok" if ok else "fail", name,
          "VM 1 sent %d PAUSE, %d RESUME (the project's tshark dissector "
          "names all %d such packets of the capture: %d, %d malformed "
          "frames); "
          "fault on the wire (PAUSE to RESUME) median "
          "%.1f ms, 90%% %.1f ms; the paused PSN sent again %d times within "
          "150 ms, %d later (%s requester)%s%s" %
          (npause, nresume, nall, nts, nmal, med, p90, early, late,
           "adapter" if adapter_peer else "soft-RoCE",
           "; " + "; ".join(bad[:3]) if bad else "", note))


XRC_REQ = set(range(0xa0, 0xad)) | {0xb3, 0xb4, 0xb6, 0xb7}
XRC_RESP = set(range(0xad, 0xb3))


def xrc_capture(s: Suite, pairing: str, pcap: str, lines: List[str]) -> None:
    """The XRC traffic of a boot that ran rsv-xrc: every XRC request
    carries an XRCETH (reserved bits 0) naming an XRC SRQ, among them the
    three VM 2 reported (its two processes' and the other domain's);
    responses carry none (the AETH follows the BTH); tshark 4.0 names
    every XRC opcode but has no XRCETH fields, hence the bytes here."""
    name = "%s/xrc/capture" % pairing
    m = None
    for ln in lines:
        m = re.search(r"SRQ numbers A (\d+), B (\d+), B's other domain "
                      r"(\d+)", ln) or m
    if not m or not os.path.isfile(pcap):
        s.report(False, name, "no capture or no SRQ numbers from VM 2")
        return
    want = set(int(x) for x in m.groups())
    seen = set()
    req = resp = 0
    bad = []
    for _, _, b in roce_frames(pcap):
        op = b[0]
        if op in XRC_REQ:
            req += 1
            xrceth = struct.unpack("!I", b[12:16])[0]
            if xrceth >> 24 or not xrceth & 0xffffff:
                bad.append("0x%x XRCETH 0x%08x" % (op, xrceth))
            seen.add(xrceth & 0xffffff)
        elif op in XRC_RESP:
            resp += 1
            if op == 0xb1 and len(b) != 12 + 4 + 4:
                bad.append("XRC ACK of %d bytes" % len(b))
    tshark = need_tshark(os.path.join(s.dir, "tshark-install.log"))
    nts = -1
    frames = tshark_packets(tshark, pcap) if tshark else None
    if frames is not None:
        nts = sum(1 for op in ts_opcodes(frames) if 160 <= op <= 183)
    ok = not bad and req > 0 and resp > 0 and want <= seen and \
        nts == req + resp
    s.tap("ok" if ok else "fail", name,
          "%d XRC requests naming SRQs %s (VM 2's: %s), %d XRC responses, "
          "%d XRC packets in tshark%s" %
          (req, sorted(seen), sorted(want), resp, nts,
           "; " + "; ".join(bad[:3]) if bad else ""))


def dc_capture(s: Suite, pairing: str, pcap: str, lines: List[str]) -> None:
    """The DC traffic VM 1 (the DCI) sent in a boot that ran the dc
    feature: each DC CONNECT (0xc2: BTH, DCETH of the 64-bit key, the
    DCI's QPN and a connection number, ICRC) carries the key of the DCT
    its BTH names (rsv-dc's KEY_BASE + VM, the wrong key once to VM 2,
    the examples' default key); the CONNECTs alternate between VMs 2 and
    3 at least once per round; what VM 1 sends to the DCTs beside the DC
    packets is RC opcodes (0x00-0x1f) only, and the bundle negotiation
    (HELLO 0xc5, REPLY 0xc6 to QP 1; bundles count as the packets in
    them); tshark decodes every CONNECT
    with the key read here (the project's dissector,
    scripts/wireshark/rdma-session.lua).  Also the figures rsv-dc printed
    (MEASURE)."""
    name = "%s/dc/capture" % pairing
    me = "10.77.0.1"
    if not os.path.isfile(pcap):
        s.report(False, name, "no capture " + pcap)
        return
    frames = [f for f in roce_frames(pcap) if f[0] == me and
              f[1] in ("10.77.0.2", "10.77.0.3")]
    want = {"10.77.0.2": {DC_KEY_BASE + 2, (DC_KEY_BASE + 2) ^ DC_BAD_XOR,
                          DC_EXAMPLE_KEY},
            "10.77.0.3": {DC_KEY_BASE + 3, DC_EXAMPLE_KEY}}
    conn = {"10.77.0.2": 0, "10.77.0.3": 0}
    bad = []
    other = rc = switches = neg = 0
    nbad_key = 0
    last = None
    keys = []
    for _, dst, b in frames:
        op = b[0]
        if op == 0xc2:
            if len(b) != 12 + 16 + 4:
                bad.append("CONNECT of %d bytes" % len(b))
                continue
            key = struct.unpack("!Q", b[12:20])[0]
            keys.append(key)
            conn[dst] += 1
            if key not in want[dst]:
                bad.append("CONNECT to %s with key %#x" % (dst, key))
            if key == (DC_KEY_BASE + 2) ^ DC_BAD_XOR:
                nbad_key += 1
            if last is not None and dst != last:
                switches += 1
            last = dst
        elif op in (0xc3, 0xc4):
            pass
        elif op in (0xc5, 0xc6) and b[5:8] == b"\0\0\1":
            neg += 1            # bundle negotiation, to QP 1
        elif op <= 0x1f:
            rc += 1
        else:
            other += 1
            bad.append("opcode 0x%x to %s" % (op, dst))
    tshark = need_tshark(os.path.join(s.dir, "tshark-install.log"))
    nts = -1
    frames = tshark_packets(tshark, pcap) if tshark else None
    if frames is not None:
        # Each CONNECT and DISCONNECT has one key, in the order of the
        # packets (a bundle may carry several).
        ks = []
        for f in frames:
            if f["ip.src"][:1] != [me]:
                continue
            ops = [o for o in f["rdmasession.op"]
                   if o in ("DC_CONNECT", "DC_DISCONNECT")]
            if len(ops) != len(f["rdmasession.dc.key"]):
                ks = None
                break
            ks += [int(k, 16) for o, k in zip(ops, f["rdmasession.dc.key"])
                   if o == "DC_CONNECT"]
        # the dissector's keys must be those read from the frames here
        if ks is not None and sorted(ks) == sorted(keys):
            nts = len(ks)
    ncon = sum(conn.values())
    ok = not bad and conn["10.77.0.2"] > 0 and conn["10.77.0.3"] > 0 and \
        nbad_key >= 1 and switches >= 7 and rc > 0 and nts == ncon
    s.tap("ok" if ok else "fail", name,
          "VM 1 sent %d DC CONNECTs (%d to VM 2, %d to VM 3, %d with the "
          "wrong key, each with its DCT's key otherwise), %d target "
          "switches, %d RC-opcode packets, %d bundle HELLO/REPLY, %d "
          "others; tshark decodes %d CONNECTs%s" %
          (ncon, conn["10.77.0.2"], conn["10.77.0.3"], nbad_key, switches,
           rc, neg, other, nts, "; " + "; ".join(bad[:3]) if bad else ""))
    for ln in lines:
        if "MEASURE dc-" in ln:
            s.note(ln[ln.index("MEASURE"):])


def bundle_capture(s: Suite, pairing: str, pcap: str, nvm: int,
                   must: bool) -> None:
    """The adapters of the boot negotiated bundles and used them: in VM 1's
    capture each direction between VM 1 and every other adapter (if not
    must: every one VM 1 exchanged unicast packets with) has a
    BUNDLE_HELLO_REPLY (0xc6), at least one BUNDLE (0xc7) goes between two
    adapters if must, every bundle is well formed
    (rstest.roce.bundle_faults), and tshark with the project's dissector
    sees as many bundles and as many packets in all as are read here byte
    by byte.  (VM 1's capture holds its own frames twice, the segment
    handing them back: the detail counts distinct bundles.)"""
    name = "%s/capture-bundles" % pairing
    if no_capture(s, name, pcap):
        return
    me = "10.77.0.1"
    vms = ["10.77.0.%d" % i for i in range(1, nvm + 1)]
    pkts, bundles = roce.read_capture(pcap)
    replies, talked = set(), set()
    for p in pkts:
        if p.v6:
            continue
        way = (p.src, p.dst)
        talked.add(way)
        if p.opcode == 0xc6:
            replies.add(way)
    both = [v for v in vms[1:] if (me, v) in replies and (v, me) in replies]
    # Without such a feature, only the adapters that exchanged unicast
    # RoCE packets with VM 1 must have negotiated (multicast is never
    # bundled and asks nothing).
    peers = [v for v in vms[1:] if must or
             ((me, v) in talked and (v, me) in talked)]
    # With the local fabric (RS_LOCAL_FABRIC=1: the launcher also wrote
    # pcap.fabric) the frames to a member go over its channel one by one,
    # never in a bundle (bundles are the netdev's): the adapters VM 1
    # exchanged frames with over the fabric need none.
    fab: List[str] = []
    if os.path.isfile(pcap + ".fabric"):
        way = set((p.src, p.dst) for p in roce.packets(pcap + ".fabric",
                                                       v4only=True))
        fab = [v for v in peers if (me, v) in way and (v, me) in way]
        peers = [v for v in peers if v not in fab]
        must = must and bool(peers)
    per: Dict[Tuple[str, str], int] = {}
    for src, dst, _ in set((b.src, b.dst, b.hash) for b in bundles):
        per[(src, dst)] = per.get((src, dst), 0) + 1
    between = sum(n for (a, b), n in per.items() if a in vms and b in vms)
    faults = ["frame %d: %s" % (b.num, "; ".join(b.faults))
              for b in bundles if b.faults]
    inside = sum(1 for p in pkts if p.bundled)
    tshark = need_tshark(os.path.join(s.dir, "tshark-install.log"))
    frames = tshark_packets(tshark, pcap) if tshark else None
    nts_b = nts_p = -1
    if frames is not None:
        nts_b = sum(1 for f in frames for op in f["rdmasession.op"]
                    if op == "BUNDLE")
        nts_p = len(ts_opcodes(frames))
    ok = set(peers) <= set(both) and (between > 0 or not must) and \
        not faults and nts_b == len(bundles) and \
        nts_p == len(pkts) + len(bundles)
    s.tap("ok" if ok else "fail", name,
          "HELLO_REPLY both ways between VM 1 and %s (%s needed); %d "
          "BUNDLE frames "
          "(distinct: %s%s) holding %d of the capture's %d RoCE packets, %d "
          "malformed; tshark sees %d bundles and %d BTHs (%d expected)%s" %
          (", ".join(both) or "no VM", ", ".join(peers) or "none",
           len(bundles),
           ", ".join("%s>%s %d" % (a.split(".")[-1], b.split(".")[-1], n)
                     for (a, b), n in sorted(per.items())) or "none",
           "" if must else "; none needed: no feature here is sure to "
           "bundle", inside, len(pkts), len(faults), nts_b, nts_p,
           len(pkts) + len(bundles),
           "; " + "; ".join(faults[:3]) if faults else "") +
          ("; over the local fabric with %s (%s.fabric: no bundles "
           "there, none needed)" % (", ".join(fab), os.path.basename(pcap))
           if fab else ""))


def netid_capture(s: Suite, pairing: str, pcap: str) -> None:
    """VM 1's capture of rsv-netid: the crossed WRITEs from VM 2, one to
    each of VM 1's identities' addresses, each answered with a NAK
    (remote access error, AETH syndrome 0x62) from that address, and no
    other NAK.  (The capture holds each frame VM 1 sends twice: NAKs are
    counted by QP and PSN.)"""
    name = "%s/netid/capture" % pairing
    if no_capture(s, name, pcap):
        return
    naks = sorted(set((src, dst, p[5:8].hex(), p[9:12].hex(), p[12])
                      for src, dst, p in roce_frames(pcap)
                      if len(p) >= 16 and p[0] == 0x11 and
                      (p[12] & 0xe0) == 0x60))
    want = [("10.77.0.1", "10.77.0.2"), ("10.78.0.1", "10.78.0.2")]
    ok = (sorted((n[0], n[1]) for n in naks) == want and
          all(n[4] == 0x62 for n in naks))
    s.report(ok, name, "NAKs (src, dst, QPN, PSN, syndrome): %s" % naks)


def netid_change(s: Suite) -> None:
    """The host changes the network identities of a running VM: once the
    VM says "NETID change-now" on its console, qom-set on its QMP socket
    gives identity 1 (10.78.0.0/24) VNI 201 and adds identity 2
    (10.79.0.0/24, VNI 300) over an address the VM has; the guest checks
    that its driver heard of both changes and moved that address's GID
    into identity 2 (tests/guest/in-guest/netid-change.sh)."""
    run = os.path.join(s.dir, "vms-netid-change")
    want = "10.78.0.0/24=201,10.79.0.0/24=300"
    with s.start("netid-change", ["-q", "--no-build", "-n", "1",
                                  "--timeout", "300",
                                  "--cmd", guest_files("lib.sh",
                                                       "netid-change.sh")] +
                 PAIRING_QEMU["netid"], vms_dir=run) as bg:
        serial = os.path.join(run, "vm1", "serial.log")
        sock = os.path.join(run, "vm1", "qmp.sock")
        if bg.wait_for(200, lambda: any(
                ln.startswith("NETID change-now")
                for ln in console.lines(serial))):
            ok, r = qmp(sock, [("qom-list",
                                {"path": "/machine/peripheral-anon"})])
            dev = [c["name"] for c in (r[0] if ok else [])
                   if c.get("type") == "child<rdma-session>"]
            path = "/machine/peripheral-anon/%s" % (dev[0] if dev else "")
            ok2, r2 = qmp(sock, [
                ("qom-set", {"path": path, "property": "netids",
                             "value": want.replace(",", ";")}),
                ("qom-get", {"path": path, "property": "netids"})])
            s.report(ok and ok2 and r2[-1] == want,
                     "netid-change/host-qom-set",
                     "%s netids: %s" % (path, r2))
        else:
            s.report(False, "netid-change/host-qom-set",
                     "the VM never said NETID change-now")
            bg.stop()
        r = bg.wait()
    s.expect(r, [(1, "netid-change/event"),
                 (1, "netid-change/driver-relearns"),
                 (1, "netid-change/dmesg-clean")])
    s.launcher_check(r, "netid-change")


# rsv-odplim's checks (tests/guest/in-guest/odp-limits.sh).
ODP_LIMITS = ["advise-netid", "advise-other-identity", "unmapped-no-child",
              "unmapped-memory", "cap", "cap-memory", "reap-invalidated",
              "fault-fail-reaped", "reap-reuse", "dereg-frees", "dmesg-clean"]


def odp_limits(s: Suite) -> None:
    """The guest driver's ODP bounds on one VM with the netid pairing's
    identities: an implicit ODP MR's children are created only for mapped
    addresses, at most odp_children of them, and freed when their fault
    failed or an invalidation emptied them; advise_mr finds an ODP MR of
    identity 1 by its lkey (tests/guest/progs/rsv-odplim.c)."""
    r = s.launch("odp-limits", ["-q", "--no-build", "-n", "1", "--timeout",
                                "300", "--cmd",
                                guest_files("lib.sh", "odp-limits.sh")] +
                 PAIRING_QEMU["netid"],
                 vms_dir=os.path.join(s.dir, "vms-odp-limits"))
    s.expect(r, [(1, "odp-limits/" + c) for c in ODP_LIMITS])
    s.launcher_check(r, "odp-limits")
    with open(os.path.join(s.dir, "checks"), "a") as f:
        f.writelines(ln + "\n" for ln in r.lines if checks.LINE_RE.match(ln))


def vlan_capture(s: Suite, pairing: str, pcap: str) -> None:
    """VM 1's capture of verbs-vlan.sh: every RoCE frame from or to a
    10.100.0.x address carries one 802.1Q tag with VID 100, those from VM
    1 (10.100.0.1: ibv_rc_pingpong with SL 5, rping with the egress map's
    priority 5) PCP 5; there are some each way; the untagged addresses'
    RoCE frames (10.77.0.x) have no tag."""
    name = "%s/vlan/capture" % pairing
    if no_capture(s, name, pcap):
        return
    n = {"vm1": 0, "vm2": 0, "untagged-lan": 0}
    bad = []
    for p in roce.packets(pcap, v4only=True):
        f = p.frame
        tagged = f[12:14] == b"\x81\x00"
        if p.src.startswith("10.100.0.") or p.dst.startswith("10.100.0."):
            tci = struct.unpack_from(">H", f, 14)[0] if tagged else None
            if not tagged or p.ip != 18 or tci & 0xfff != 100:
                bad.append("frame %d %s>%s tag %s" % (
                    p.num, p.src, p.dst,
                    "none" if tci is None else "0x%04x" % tci))
            elif p.src == "10.100.0.1":
                n["vm1"] += 1
                if tci >> 13 != 5:
                    bad.append("frame %d from VM 1 PCP %d" %
                               (p.num, tci >> 13))
            else:
                n["vm2"] += 1
        elif not p.bundled and tagged:
            bad.append("frame %d %s>%s tagged" % (p.num, p.src, p.dst))
        else:
            n["untagged-lan"] += 1
    s.report(not bad and n["vm1"] > 0 and n["vm2"] > 0, name,
             "RoCE frames on VLAN 100 from VM 1 (PCP 5) %d, from VM 2 %d; "
             "untagged, of the LAN's addresses %d%s" %
             (n["vm1"], n["vm2"], n["untagged-lan"],
              "; " + "; ".join(bad[:4]) if bad else ""))


def ipv6_capture(s: Suite, pairing: str, pcap: str) -> None:
    """VM 1's capture of verbs-ipv6.sh: RoCE v2 frames over IPv6 between
    2001:db8:77::1 and ::2 each way and to the group ff0e::77:1, every
    one with its ICRC right."""
    name = "%s/ipv6/capture" % pairing
    if no_capture(s, name, pcap):
        return
    n = {"vm1": 0, "vm2": 0, "group": 0}
    bad = []
    for p in roce.packets(pcap):
        if not p.v6:
            continue
        if p.dst == "ff0e::77:1" and p.src.startswith("2001:db8:77::"):
            n["group"] += 1
        elif p.src == "2001:db8:77::1" and p.dst == "2001:db8:77::2":
            n["vm1"] += 1
        elif p.src == "2001:db8:77::2" and p.dst == "2001:db8:77::1":
            n["vm2"] += 1
        else:
            continue
        got, want = roce.icrc(p.frame, p.ip, p.udp, True)
        if got != want:
            bad.append("frame %d %s>%s ICRC 0x%08x, computed 0x%08x" %
                       (p.num, p.src, p.dst, got, want))
    s.report(not bad and all(n.values()), name,
             "IPv6 RoCE frames from VM 1 %d, from VM 2 %d, to ff0e::77:1 "
             "%d%s" % (n["vm1"], n["vm2"], n["group"],
                       "; " + "; ".join(bad[:4]) if bad else ""))


def capturing(pairing: str, feats: List[str]) -> bool:
    """Whether a boot of pairing with features feats captures VM 1's
    traffic (--pcap): the adapters-only boots, and those with a feature
    whose capture is checked; never one that migrates VM 1."""
    return (pairing in BUNDLED or any(
        f in ("flush", "dc", "netid", "odp", "vlan", "ipv6")
        for f in feats)) and \
        "migrate" not in pairing


def boot_names(pairing: str, feats: List[str]) -> List[str]:
    """The tests a boot of pairing with features feats reports, in order:
    each VM's checks of each feature (PAIRING/FEATURE/CHECK/vmN), each
    VM's clean kernel log, the launcher's status, the captures'."""
    nvm = int(PAIRINGS[pairing][PAIRINGS[pairing].index("-n") + 1])
    out = ["%s/%s/%s/vm%d" % (pairing, f[0], c, vm)
           for f in FEATURES if pairing in f[1] and f[0] in feats
           for vm, cks in sorted(f[2].items()) for c in cks]
    out += ["%s/dmesg-clean/vm%d" % (pairing, vm) for vm in range(1, nvm + 1)]
    out.append("%s/launch-vms" % pairing)
    if capturing(pairing, feats):
        if pairing in BUNDLED:
            out.append("%s/capture-bundles" % pairing)
        if "flush" in feats:
            out += ["%s/flush/capture-%s" % (pairing, x)
                    for x in ("bytes", "icrc", "tshark")]
        out += ["%s/%s/capture" % (pairing, f)
                for f in ("dc", "xrc", "odp", "netid", "vlan", "ipv6")
                if f in feats]
    return out


def catalog() -> Dict[Tuple[str, ...], List[str]]:
    """The suite's units (rstest/select.py): (PAIRING, FEATURE) for each
    feature of each pairing, ("netid-change",), ("odp-limits",); each
    with the tests it reports when it runs alone."""
    cat: Dict[Tuple[str, ...], List[str]] = {}
    for pairing in PAIRINGS:
        for f in FEATURES:
            if pairing in f[1]:
                cat[(pairing, f[0])] = boot_names(pairing, [f[0]])
    cat[("netid-change",)] = ["netid-change/host-qom-set"] + [
        "netid-change/%s/vm1" % c
        for c in ("event", "driver-relearns", "dmesg-clean")] + [
        "netid-change/launch-vms"]
    cat[("odp-limits",)] = ["odp-limits/%s/vm1" % c for c in ODP_LIMITS] + \
        ["odp-limits/launch-vms"]
    return cat


def run(s: Suite, units: List[Tuple[str, ...]]) -> None:
    """The boots of the units chosen (rstest/select.py): one per pairing
    with its chosen features, then netid-change and odp-limits."""
    for pairing, args in PAIRINGS.items():
        names = [u[1] for u in units if len(u) == 2 and u[0] == pairing]
        feats = [f for f in FEATURES if pairing in f[1] and f[0] in names]
        if not feats:
            continue
        nvm = int(args[args.index("-n") + 1])
        script = "VB_PAIRING=%s\n%s" % (pairing, guest_files(
            "lib.sh", "verbs-common.sh",
            *["verbs-%s.sh" % f[0] for f in feats], "verbs-end.sh"))
        pcap = os.path.join(s.dir, pairing + ".pcap")
        cap = ["--pcap", "1", pcap] if capturing(pairing, names) else []
        r = s.launch(pairing, ["-q", "--no-build", "--timeout", "600"] +
                     args + cap + ["--cmd", script] +
                     PAIRING_QEMU.get(pairing, []),
                     vms_dir=os.path.join(s.dir, "vms-" + pairing))
        want = [(vm, "%s/%s/%s" % (pairing, f[0], c))
                for f in feats for vm, cks in sorted(f[2].items())
                for c in cks]
        want += [(vm, "%s/dmesg-clean" % pairing)
                 for vm in range(1, nvm + 1)]
        s.expect(r, want)
        s.launcher_check(r, pairing)
        if cap and pairing in BUNDLED:
            bundle_capture(s, pairing, pcap, nvm, any(
                f[0] in BUNDLED[pairing] for f in feats))
        if cap and "flush" in names:
            flush_capture(s, pairing, pcap)
        if cap and "dc" in names:
            dc_capture(s, pairing, pcap, r.lines)
        if cap and "xrc" in names:
            xrc_capture(s, pairing, pcap, r.lines)
        if cap and "odp" in names:
            odp_capture(s, pairing, pcap)
        if cap and "netid" in names:
            netid_capture(s, pairing, pcap)
        if cap and "vlan" in names:
            vlan_capture(s, pairing, pcap)
        if cap and "ipv6" in names:
            ipv6_capture(s, pairing, pcap)
        with open(os.path.join(s.dir, "checks"), "a") as f:
            f.writelines(ln + "\n" for ln in r.lines
                         if checks.LINE_RE.match(ln))
    if ("netid-change",) in units:
        netid_change(s)
    if ("odp-limits",) in units:
        odp_limits(s)


if __name__ == "__main__":
    sys.exit(select.main("verbs", catalog(), run, sys.argv[1:], __doc__))
