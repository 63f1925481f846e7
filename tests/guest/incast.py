#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Incast through a bottleneck with ECN, as TAP: two boots of three
adapter VMs on the launcher's routed network with one router (--ecmp 1
--ecmp-capture, tests/guest/rstest/ecmp.py), the adapters' DCQCN off
(dcqcn-off: CNPs sent and counted, rates untouched) and on (dcqcn-on:
its time constants scaled from a datacenter's microseconds to this
network's milliseconds, the line rate the bottleneck's).  In each, VMs 2
and 3 send to VM 1 at the same time (ib_write_bw, 64 KiB messages,
IN_SECS seconds each, one RC QP each); the router's egress towards VM 1
is the bottleneck: an HTB shaper of RATE_MBIT over a tail-drop queue of
QUEUE_BYTES, and an ECN marker in front of it that sets CE on
ECN-capable packets arriving faster than 80% of that rate (nftables: a
token bucket at 0.8 x RATE_MBIT with MARK_BURST of depth, a phantom
queue as in HULL; the host's kernel has no RED or CoDel queue
discipline).  While the senders run, host namespace 2 (from VM 2's
gateway address) pings VM 1 through the same router every 20 ms: the
latency probe.

Checks, each boot (MODE/...): the bottleneck is in place (bottleneck),
each sender's ib_write_bw ends without an error (incast-bw/vm2, vm3) and
VM 1's servers too (incast-servers/vm1), the bottleneck carried the
traffic and held it to its rate (shaped: the senders' goodput together
at most the rate), the probe got answers (probe), every RoCE frame to VM
1 was ECN-capable (ect), the marker marked some, VM 1's device counted
CE and sent CNPs and both senders' devices received CNPs (cnp), tshark
decodes CNPs (BTH opcode 0x81, which tshark 4.0 does not name) in the
captures of both senders' host namespaces and frames ECT(0) and CE in VM
1's (cnp-tshark), DCQCN lowered both senders' rates with it on and never
with it off (rate-reductions), no kernel warnings.  Printed as "MEASURE
incast mode=...": each sender's goodput and Jain's fairness index, the
retransmissions, ACK timeouts and sequence NAKs each sender's device
counted, the bottleneck's RoCE, ECN-capable and marked frames and its
queue's drops, the CE marks and CNPs of the devices, the rate
reductions, and the probe's median and 99th percentile round trip.

Needs root (network namespaces), tc, nft and ping (nftables and
iputils-ping are installed through the private apt configuration when
missing).

Usage: tests/guest/incast.py [--list] [--repeat N] [NAME...]
  (rstest/select.py)
Environment: RS_BUILD; RS_NO_BUILD=1 (do not build QEMU first).
Logs: $RS_BUILD/test-logs/incast.XXXXXX (incast.last).
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import console, ecmp, select  # noqa: E402
from rstest.suite import Suite, guest_files, need_program, need_tshark  # noqa: E402,E501

IN_SECS = 8
# Two adapters under TCG on two cores reach about 11 MB/s together.
RATE_MBIT = 40
# 4 KiB RoCE frames (MTU 9000 on the links, RoCE MTU 4096): 64 of them
QUEUE_BYTES = 64 * 4200
MARK_BURST = "16 kbytes"
PROBE_INTERVAL = 0.02
VM_CHECKS = ["1:incast-servers", "2:incast-bw", "3:incast-bw",
             "1:dmesg-clean", "2:dmesg-clean", "3:dmesg-clean"]
HOST_CHECKS = ["bottleneck", "shaped", "probe", "ect", "cnp", "cnp-tshark",
               "rate-reductions"]
# The boots: the adapters with DCQCN off (CNPs sent and counted, rates
# untouched) and on.  ConnectX's time constants (a rate increase stage
# per 300 us, alpha per 55 us) are for microsecond round trips; here a
# round trip through the bottleneck is tens of milliseconds, and with
# them a QP recovered its full rate long before the next CNP.  The line
# rate is the bottleneck's, as a NIC's is its link's.
MODES = [("dcqcn-off", ["-global", "rdma-session.dcqcn=off"]),
         ("dcqcn-on", ["-global", "rdma-session.dcqcn-line-rate=%d" % RATE_MBIT,
                       "-global", "rdma-session.dcqcn-time-reset=10000",
                       "-global", "rdma-session.dcqcn-alpha-period=5000",
                       "-global", "rdma-session.dcqcn-ai-rate=1",
                       "-global", "rdma-session.dcqcn-hai-rate=5"])]
MEASURE_RE = re.compile(r"MEASURE incast vm=(\d+) (.*)")


def names(mode: str) -> List[str]:
    return ["%s/host/%s" % (mode, c) for c in HOST_CHECKS] + [
        "%s/%s/vm%s" % (mode, c.split(":")[1], c.split(":")[0])
        for c in VM_CHECKS] + ["%s/launch-vms" % mode]


def tc(ns: str, *args: str) -> str:
    return ecmp.sh(["tc", "-n", ns] + list(args))


def nft(ns: str, *args: str) -> str:
    return ecmp.sh(["ip", "netns", "exec", ns, "nft"] + list(args))


def bottleneck(net: ecmp.Ecmp) -> str:
    """The shaper, its queue and the ECN marker on router 1's link to VM
    1's host namespace; their description."""
    r, dev, rate = net.router_ns(1), "h1", "%dmbit" % RATE_MBIT
    tc(r, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb",
       "default", "1")
    tc(r, "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
       "rate", rate, "ceil", rate)
    tc(r, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:",
       "bfifo", "limit", str(QUEUE_BYTES))
    mark = "%d kbytes/second" % (RATE_MBIT * 1000 // 8 * 8 // 10)
    nft(r, "add", "table", "ip", "incast")
    nft(r, "add", "chain", "ip", "incast", "bottleneck",
        "{ type filter hook forward priority 0; }")
    # the RoCE frames, the ECN-capable ones, the ones marked
    nft(r, "add", "rule", "ip", "incast", "bottleneck", "oifname", dev, "udp",
        "dport", str(ecmp.ROCE_PORT), "counter")
    nft(r, "add", "rule", "ip", "incast", "bottleneck", "oifname", dev, "ip", "ecn",
        "!=", "not-ect", "counter")
    nft(r, "add", "rule", "ip", "incast", "bottleneck", "oifname", dev, "ip", "ecn",
        "{ ect0, ect1 }", "limit", "rate", "over", mark, "burst", MARK_BURST,
        "counter", "ip", "ecn", "set", "ce")
    return "%s %s: htb %s, bfifo %d bytes; CE on ECT over %s (burst %s)" % (
        r, dev, rate, QUEUE_BYTES, mark, MARK_BURST)


def queue_stats(s: Suite, net: ecmp.Ecmp) -> Dict[str, int]:
    """The bottleneck's counters: the queue's (iproute2's JSON: bytes,
    packets, drops, ...) and the marker's (roce, ect, marked: packets);
    none (and a note) if they cannot be read."""
    try:
        return _queue_stats(net)
    except ecmp.EcmpError as e:
        s.note("the bottleneck's counters: %s" % e)
        return {}


def _queue_stats(net: ecmp.Ecmp) -> Dict[str, int]:
    out: Dict[str, int] = {}
    r = net.router_ns(1)
    for q in json.loads(tc(r, "-s", "-j", "qdisc", "show", "dev", "h1")
                        or "[]"):
        if q.get("kind") == "bfifo":
            out = {k: v for k, v in q.items() if isinstance(v, int)}
    rules = [x["rule"] for x in json.loads(nft(
        r, "-j", "list", "chain", "ip", "incast", "bottleneck"))["nftables"]
        if "rule" in x]
    for name, rule in zip(("roce", "ect", "marked"), rules):
        for e in rule["expr"]:
            if "counter" in e:
                out[name] = e["counter"]["packets"]
    return out


def jain(xs: List[float]) -> float:
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) \
        if xs and any(xs) else 0.0


def percentile(xs: List[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))] if s else 0.0


class Probe(threading.Thread):
    """ping from host namespace 2 (VM 2's gateway address) to VM 1 through
    the router, until stopped: the round trips in ms."""

    def __init__(self, net: ecmp.Ecmp):
        super().__init__(daemon=True)
        self.rtt: List[float] = []
        self.sent = 0
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", net.host_ns(2), "ping", "-n", "-i",
             str(PROBE_INTERVAL), "-I", ecmp.vm_gw(2), ecmp.vm_ip(1)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def run(self) -> None:
        assert self.proc.stdout is not None
        for ln in self.proc.stdout:
            m = re.search(r"icmp_seq=(\d+) .*time=([0-9.]+)", ln)
            if m:
                self.sent = max(self.sent, int(m.group(1)))
                self.rtt.append(float(m.group(2)))

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.join(5)


def marks(run: str) -> List[str]:
    return [ln.split()[2] for ln in console.lines(
        os.path.join(run, "vm1", "serial.log"))
        if ln.startswith("MP mark ") and len(ln.split()) > 2]


def tshark_count(pcap: str, flt: str) -> Tuple[int, str]:
    """The RoCE frames of a host namespace's capture that tshark's
    InfiniBand dissector (over UDP port 4791) and display filter flt
    select: their count and tshark's summary of the first."""
    out = subprocess.run(
        ["tshark", "-r", pcap, "-d", "udp.port==%d,infiniband" %
         ecmp.ROCE_PORT, "-Y", flt, "-T", "fields", "-e", "_ws.col.Info"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        check=False).stdout.splitlines()
    return len(out), (out[0] if out else "")


def boot(s: Suite, mode: str, qemu: List[str]) -> None:
    """One boot: the incast with the adapters' QEMU arguments qemu; the
    tests are named MODE/..."""
    vms = os.path.join(s.dir, "vms-" + mode)
    common = "IN_SECS=%d\nIN_VM1=%s\n%s" % (
        IN_SECS, ecmp.vm_ip(1), guest_files("lib.sh", "multipath-common.sh",
                                            "incast-common.sh"))
    argv = ["-q", "-n", "3", "--ecmp", "1", "--ecmp-capture", "--timeout",
            "300", "--vm-cmd", "1",
            common + "\n" + guest_files("incast-vm1.sh")]
    for i in (2, 3):
        argv += ["--vm-cmd", str(i),
                 common + "\n" + guest_files("incast-sender.sh")]
    argv += ["--"] + qemu
    probe: Optional[Probe] = None
    q0: Dict[str, int] = {}
    q1: Dict[str, int] = {}
    net = None
    with s.start(mode, argv, vms_dir=vms) as bg:
        if bg.wait_for(120, lambda: os.path.exists(
                os.path.join(vms, "ecmp.json"))):
            net = ecmp.Ecmp.attach(vms)
            try:
                s.report(True, mode + "/host/bottleneck", bottleneck(net))
            except ecmp.EcmpError as e:
                s.report(False, mode + "/host/bottleneck", str(e))
                net = None
        else:
            s.report(False, mode + "/host/bottleneck",
                     "no ecmp.json in " + vms)
        if net and bg.wait_for(240, lambda: "incast-go" in marks(vms)):
            q0 = queue_stats(s, net)
            probe = Probe(net)
            probe.start()
            bg.wait_for(IN_SECS + 120, lambda: "incast-end" in marks(vms))
            probe.stop()
            q1 = queue_stats(s, net)
        r = bg.wait()
    sys.stderr.write("".join(ln + "\n" for ln in r.lines))
    sys.stderr.flush()
    meas: Dict[int, Dict[str, float]] = {}
    for ln in r.lines:
        m = MEASURE_RE.search(ln)
        if m:
            meas[int(m.group(1))] = {k: float(v) for k, v in (
                kv.split("=") for kv in m.group(2).split())}
    bw = [meas.get(i, {}).get("MBps", 0.0) for i in (2, 3)]
    q = {k: q1.get(k, 0) - q0.get(k, 0) for k in q1}
    sent_mb = q.get("bytes", 0) / 1e6
    s.report(bool(q1) and sent_mb > 0 and
             sum(bw) <= RATE_MBIT / 8 * 1.05, mode + "/host/shaped",
             "goodput %.2f + %.2f MB/s, the bottleneck %d Mbit/s (%.2f MB/s); "
             "%.1f MB through it" % (bw[0], bw[1], RATE_MBIT, RATE_MBIT / 8,
                                     sent_mb))
    rtt = probe.rtt if probe else []
    s.report(len(rtt) > 0, mode + "/host/probe",
             "%d of %d answered" % (len(rtt), probe.sent if probe else 0))
    # Every RoCE frame towards VM 1 (the senders' requests) is
    # ECN-capable, the marker marked some, VM 1's device answered with
    # CNPs, the senders' devices took them; tshark decodes them in the
    # captures of the senders' host namespaces.
    rx = meas.get(1, {})
    cnp_rx = [meas.get(i, {}).get("cnp_received", 0) for i in (2, 3)]
    s.report(bool(q1) and q.get("roce", 0) > 0 and
             q.get("ect", 0) == q.get("roce", 0), mode + "/host/ect",
             "%d of %d RoCE frames to VM 1 ECN-capable" % (
                 q.get("ect", 0), q.get("roce", 0)))
    s.report(q.get("marked", 0) > 0 and rx.get("ecn_ce_received", 0) > 0 and
             rx.get("cnp_sent", 0) > 0 and all(cnp_rx), mode + "/host/cnp",
             "CE marked %d, VM 1 received %d CE and sent %d CNPs; VMs 2 and 3 "
             "received %d and %d" % (q.get("marked", 0),
                                     rx.get("ecn_ce_received", 0),
                                     rx.get("cnp_sent", 0), *cnp_rx))
    # what tshark decodes: CNPs in the captures of what came for VMs 2 and
    # 3, the senders' frames to VM 1 ECT(0) or, marked, CE in VM 1's
    cnp_f = "infiniband.bth.opcode == 0x81"
    dec = [tshark_count(net.pcap(i), cnp_f) if net else (0, "")
           for i in (2, 3)]
    ecn = [tshark_count(net.pcap(1), "infiniband && ip.dsfield.ecn == %d" %
                        v)[0] if net else 0 for v in (2, 3)]
    s.report(all(n > 0 for n, _ in dec) and all(ecn),
             mode + "/host/cnp-tshark",
             "tshark finds %d and %d CNPs (BTH opcode 0x81) in the captures "
             "for VMs 2 and 3 (its summary: %s); for VM 1, %d frames ECT(0) "
             "and %d CE" % (
                 dec[0][0], dec[1][0], dec[0][1] or dec[1][1], *ecn))
    red = [meas.get(i, {}).get("dcqcn_rate_reductions", 0) for i in (2, 3)]
    want_red = "dcqcn=off" not in " ".join(qemu)
    s.report(all(red) if want_red else not any(red),
             mode + "/host/rate-reductions",
             "DCQCN's rate reductions on VMs 2 and 3: %d, %d (%s)" % (
                 red[0], red[1], "CNPs must lower the rates" if want_red
                 else "dcqcn=off: none"))
    per = {k: "/".join("%d" % meas.get(i, {}).get(k, 0) for i in (2, 3))
           for k in ("retransmits", "ack_timeouts", "seq_naks_rcvd",
                     "cnp_received", "dcqcn_rate_reductions")}
    s.note("MEASURE incast mode=%s senders=2 rate_mbit=%d goodput_MBps=%s "
           "jain=%.3f retransmits=%s ack_timeouts=%s seq_naks_rcvd=%s "
           "roce=%d ect=%d marked=%d queue_drops=%d ce_received=%d "
           "cnp_sent=%d cnp_received=%s rate_reductions=%s "
           "probe_median_ms=%.2f probe_p99_ms=%.2f probe_answered=%d" % (
               mode, RATE_MBIT, "/".join("%.2f" % b for b in bw), jain(bw),
               per["retransmits"], per["ack_timeouts"], per["seq_naks_rcvd"],
               q.get("roce", 0), q.get("ect", 0), q.get("marked", 0),
               q.get("drops", 0), rx.get("ecn_ce_received", 0),
               rx.get("cnp_sent", 0), per["cnp_received"],
               per["dcqcn_rate_reductions"], percentile(rtt, 0.5),
               percentile(rtt, 0.99), len(rtt)))
    s.expect(r, VM_CHECKS, prefix=mode + "/")
    s.launcher_check(r, mode)


def run(s: Suite, units=None) -> None:
    """The boots chosen (rstest/select.py's run)."""
    for prog, pkg in (("nft", "nftables"), ("ping", "iputils-ping")):
        log = os.path.join(s.dir, "apt-%s.log" % pkg)
        if need_program(prog, pkg, log) is None:
            s.report(False, "host/tools", "no %s, and %s could not be "
                     "installed (see %s)" % (prog, pkg, log))
            return
    if need_tshark(os.path.join(s.dir, "apt-tshark.log")) is None:
        s.report(False, "host/tools", "no tshark")
        return
    for mode, qemu in MODES:
        if units is None or (mode,) in units:
            boot(s, mode, qemu)


def main() -> int:
    # (the launcher tears its VMs and namespaces down when this stops)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *a: sys.exit(130))
    return select.main("incast", {(m,): names(m) for m, _ in MODES}, run,
                       sys.argv[1:], __doc__)


if __name__ == "__main__":
    sys.exit(main())
