#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Multipath sessions on a routed ECMP network, as TAP: one boot of three
VMs on the launcher's --ecmp 4 network (tests/guest/rstest/ecmp.py: each
VM behind its own host namespace, four router namespaces between them,
ECMP routes with the L4 hash, so each UDP source port takes its router),
VM 1 and VM 2 with the adapter, VM 3 with Linux soft-RoCE; every RoCEv2
frame a VM sends or receives is captured on its host namespace's links
(ecmp-hI.pcapng, so per router) and counted here.  The network is dual
stack: each VM also has fd77:I::1/64 and a route to the other VMs'
fd77:J::/64 through its host namespace, which routes them over the four
routers with the IPv6 L4 hash; the steps named ...6 run RoCE over those
addresses (ib_write_bw -x: the IPv6 GIDs; the connection data over IPv4
TCP) and count only the IPv6 frames of the captures.

VM 1 runs the requester side of every step and prints "MP mark NAME"
lines; this program watches its console and acts on them:
  topology   VM 1 pings VM 2 and VM 3 across the routers.
  topology6  every VM's IPv6 address has its RoCE v2 GID (gid6); VM 1
             pings VM 2 and VM 3 over IPv6 across the routers.
  q8         ib_write_bw -q 8 (one session per QP, the driver's default):
             VM 1's frames to VM 2 take at least two routers and eight
             source ports.
  spread     paths=4 in both adapters' driver (its module parameter),
             ib_write_bw with one QP (-t 1: a message boundary with
             nothing outstanding after every 64 KiB): its frames take at
             least two routers and two source ports, every ACK of VM 2
             leaves with the source port of a request.
  spread6    the same over IPv6 (both adapters' IPv6 GIDs): VM 1's IPv6
             frames to VM 2 take at least two routers and two source
             ports, one destination QP, every IPv6 ACK of VM 2 leaves with
             the source port of a request.
  fail-bw    paths=8 in both adapters (the routers' hash is random: with
             four sessions all four of a connection share one router 1
             time in 64, and no failover survives its failure; with
             eight, 1 in 16384), ib_write_bw -D 20 (one QP, a full send
             queue): three times
             the router that forwards the most takes its links down for
             2 s (the hosts keep routing over it: the flows hashed to it
             are lost) and up again; the program ends without an error
             on both sides, and the longest time VM 2 got nothing from
             VM 1 around each failure (VM 2's host namespace's capture)
             is printed as "MEASURE failover-stall ms=..." and must stay
             under a second.
  fail6      the same over IPv6 with one failure (ib_write_bw -D 9,
             paths=8): the program ends without an error on both sides,
             the stall (VM 1's IPv6 frames at VM 2) is printed as
             "MEASURE failover-stall ms=... step=fail6" and must stay under
             a second; while the router was down, VM 1's host namespace
             kept its IPv6 nexthop over it (linkdown, not dead: the flows
             hashed to it are lost, as for IPv4).
  fail-rping a verified rping -V stream (its count from a measured rate,
             for about 30 s) the same way; after each router comes back
             (and the device's 500 ms holddown), frames of the stream take
             it again; rdma statistic's path_migrations grew in VM 1.
  rxe        VM 1 (paths=4 again) to soft-RoCE: ib_write_bw with one QP and a
             verified rping; VM 3 receives from at least two source ports
             (counted per port; soft-RoCE's own ports are noted).
  rxe6       the same over IPv6: ib_write_bw through both sides' IPv6
             GIDs, rping -V to soft-RoCE's IPv6 address (rdma_cm
             resolving it through the routers); VM 3 receives VM 1's
             IPv6 frames of the QP from at least two source ports.
  rxe-fail   one path failure under ib_write_bw -D 12 to soft-RoCE:
             reported (the stall, which routers the requests and
             soft-RoCE's answers took, the program's result) but not
             counted: soft-RoCE answers from one source port per QP, so
             when the router that fails carries its answers, no session
             of the adapter gets an ACK until it is back.
The steps with paths=4 need the multipath sessions of the driver and the
device (the paths module parameter, the failover, the path_migrations
counter); without them they fail.

Needs root (network namespaces) and dumpcap (installed with tshark through
the private apt configuration when missing).

Usage: tests/guest/multipath.py [--list] [--repeat N] [NAME...]
  (rstest/select.py: the one boot runs whatever is selected; only the
  selected tests are reported)
Environment: RS_BUILD; RS_NO_BUILD=1 is implied (the build comes first).
Logs: $RS_BUILD/test-logs/multipath.XXXXXX (multipath.last): the
launcher's output launch.log, the VMs' run directory vms with the
captures (vms/ecmp-hI.pcapng), the marks' times in marks.
"""

import os
import shutil
import signal
import sys
import threading
import time
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import console, ecmp, select  # noqa: E402
from rstest.suite import Suite, guest_files, need_tshark  # noqa: E402

ROUTERS = 4
VM1, VM2, VM3 = ecmp.vm_ip(1), ecmp.vm_ip(2), ecmp.vm_ip(3)
# their IPv6 addresses, as the captures write them (fd77:1::1)
VM1_6, VM2_6, VM3_6 = ecmp.vm_ip6(1), ecmp.vm_ip6(2), ecmp.vm_ip6(3)
FAILURES = 3
DOWN_S = 2.0
AFTER_UP_S = 1.5
HOLDDOWN_S = 0.5
STALL_MAX_MS = 1000
# a router "carries" a flow with at least this many of its frames
MIN_FRAMES = 20
ACK = 17

VM_CHECKS = ["1:gid6", "2:gid6", "3:gid6",
             "1:ping-vm2", "1:ping-vm3", "1:ping6-vm2", "1:ping6-vm3",
             "1:q8-bw", "2:q8-bw",
             "1:paths-4", "2:paths-4", "1:spread-bw", "2:spread-bw",
             "1:spread6-bw", "2:spread6-bw", "1:paths-8", "2:paths-8",
             "1:fail-bw", "2:fail-bw", "1:fail6-bw", "2:fail6-bw",
             "1:rping-rate", "2:rping-rate",
             "1:fail-rping", "2:fail-rping", "1:path-migrations",
             "1:paths-4-rxe", "1:rxe-bw", "3:rxe-bw", "1:rxe-rping",
             "3:rxe-rping", "1:rxe6-bw", "3:rxe6-bw", "1:rxe6-rping",
             "3:rxe6-rping",
             "1:dmesg-clean", "2:dmesg-clean"]


def fmt(d: Dict) -> str:
    return " ".join("%s=%d" % kv for kv in sorted(d.items())) or "none"


class Host:
    """This program's side of the run: the marks, the failures, its
    checks."""

    def __init__(self, s: Suite, run: str):
        self.s = s
        self.run = run
        self.marks: Dict[str, float] = {}
        self.failures: Dict[str, List[Tuple[int, float, float]]] = {}
        self.results: List[Tuple[bool, str, str]] = []
        self.notes: List[str] = []
        self.checks_of: Dict = {}
        # an IPv6 step's failure: the router, VM 1's host's nexthop over
        # it to VM 2's subnet while it was down
        self.nexthops: Dict[str, Tuple[int, str]] = {}
        self.net: Optional[ecmp.Ecmp] = None
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.watcher = threading.Thread(target=self.watch, daemon=True)

    def watch(self) -> None:
        """Poll VM 1's console every 0.1 s: a mark's time is when it
        came, to 0.1 s and the console's delay."""
        while not self.stop.wait(0.1):
            self.poll()

    def check(self, ok: bool, name: str, detail: str) -> None:
        self.results.append((ok, name, detail))

    def poll(self) -> None:
        """VM 1's new marks, with the time this program saw them."""
        path = os.path.join(self.run, "vm1", "serial.log")
        now = time.time()
        with self.lock:
            for ln in console.lines(path):
                if ln.startswith("MP mark ") and len(ln.split()) > 2:
                    self.marks.setdefault(ln.split()[2], now)

    def wait_mark(self, bg, name: str, seconds: float) -> bool:
        def seen() -> bool:
            with self.lock:
                return name in self.marks
        return bg.wait_for(seconds, seen)

    def attach(self, bg) -> bool:
        ok = bg.wait_for(120, lambda: os.path.exists(
            os.path.join(self.run, "ecmp.json")))
        if ok:
            self.net = ecmp.Ecmp.attach(self.run)
            self.watcher.start()
        return ok

    def fail_paths(self, bg, step: str, failures: int = FAILURES) -> None:
        """On VM 1's mark STEP-go: failures times the busiest router down
        for DOWN_S, then up."""
        done: List[Tuple[int, float, float]] = []
        self.failures[step] = done
        if not self.wait_mark(bg, step + "-go", 240):
            self.check(False, step + "-paths-down",
                       "VM 1 never said its stream runs (%s-go)" % step)
            self.linkdown_check(step)
            return
        assert self.net is not None
        why: List[str] = []
        try:
            self._fail(step, failures, done, why)
        except ecmp.EcmpError as e:
            why.append(str(e))
        self.check(len(done) == failures, step + "-paths-down",
                   "%d routers taken down and up again: %s" % (
                       len(done), " ".join("r%d" % k for k, _, _ in done))
                   if len(done) == failures else "; ".join(why))
        self.linkdown_check(step)

    def linkdown_check(self, step: str) -> None:
        """An IPv6 step's: as for IPv4, VM 1's host kept its nexthop over
        the router that was down (flows still hashed to it)."""
        if not v6(step):
            return
        k, hop = self.nexthops.get(step, (0, ""))
        self.check("linkdown" in hop.split() and "dead" not in hop.split(),
                   step + "-linkdown-kept",
                   "while r%d was down, VM 1's host's IPv6 route to %s "
                   "had: %s" % (k, ecmp.vm_net6(2),
                                hop or "no nexthop over it"))

    def _fail(self, step: str, failures: int,
              done: List[Tuple[int, float, float]], why: List[str]) -> None:
        assert self.net is not None
        for n in range(failures):
            with self.lock:
                if step + "-end" in self.marks:
                    why.append("the stream ended after %d failures" % n)
                    break
            k, d = self.net.busiest(0.5)
            if d[k] < MIN_FRAMES:
                why.append("failure %d: no router forwards (%s)" % (
                    n + 1, fmt(d)))
                break
            t0 = time.time()
            self.net.path_down(k)
            # (the carrier's change takes up to a second: linkwatch)
            time.sleep(DOWN_S / 2 + 0.3)
            if v6(step):
                self.nexthops[step] = (k, self.net.nexthop(1, 2, k, True))
            time.sleep(DOWN_S / 2 - 0.3)
            self.net.path_up(k)
            t1 = time.time()
            done.append((k, t0, t1))
            self.notes.append("%s: failure %d: router r%d down %.2f s "
                              "(packets forwarded per router in the 0.5 s "
                              "before: %s)" % (step, n + 1, k, t1 - t0,
                                               fmt(d)))
            time.sleep(AFTER_UP_S)


def window(h: Host, step: str) -> Optional[Tuple[float, float]]:
    a, b = h.marks.get(step + "-start"), h.marks.get(step + "-end")
    if a is None or b is None:
        return None
    return a, b


def sent(frames: List[ecmp.Frame], src: str, dst: str,
         w: Tuple[float, float]) -> List[ecmp.Frame]:
    return [f for f in ecmp.between(frames, w[0], w[1])
            if f.src == src and f.dst == dst]


def v6(step: str) -> bool:
    """The IPv6 steps: spread6, fail6, rxe6 (their frames: IPv6 only)."""
    return step.endswith("6")


def addrs(step: str) -> Tuple[str, str, str]:
    """VM 1's, VM 2's and VM 3's addresses in step's frames."""
    return (VM1_6, VM2_6, VM3_6) if v6(step) else (VM1, VM2, VM3)


def analyse(s: Suite, h: Host) -> None:
    """The checks on the captures."""
    frames = {}
    for i in (1, 2, 3):
        try:
            frames[i] = ecmp.read_frames(os.path.join(
                h.run, "ecmp-h%d.pcapng" % i))
        except ecmp.EcmpError as e:
            frames[i] = []
            s.note("capture of h%d: %s" % (i, e))
    s.note("captured RoCEv2 frames: for VM 1 %d, VM 2 %d, VM 3 %d (IPv6: "
           "%d, %d, %d)" % (len(frames[1]), len(frames[2]), len(frames[3]),
                            *(len([f for f in frames[i] if f.v6])
                              for i in (1, 2, 3))))
    drops = [(i, h.net.capture_drops(i)) for i in (1, 2, 3)] if h.net \
        else []
    s.report(not any(d for _, d in drops), "host/captures-complete",
             "; ".join("VM %d: %s" % x for x in drops if x[1]) or
             "dumpcap dropped nothing")
    spread_checks(s, h, frames)
    for step in ("fail-bw", "fail6", "fail-rping"):
        failover_checks(s, h, frames, step)
    for step in ("rxe", "rxe6"):
        rxe_checks(s, h, frames, step)
    rxe_failover(s, h, frames)


def routers_ports(fr: List[ecmp.Frame]) -> Tuple[Dict, Dict]:
    return (ecmp.per(fr, lambda f: f.ifname), ecmp.per(fr, lambda f: f.sport))


def spread_checks(s: Suite, h: Host, frames) -> None:
    for step, ports_min in (("q8", 8), ("spread", 2), ("spread6", 2)):
        w = window(h, step)
        if w is None:
            s.report(False, "host/%s-routers" % step,
                     "no window (VM 1's marks: %s)" % " ".join(h.marks))
            continue
        vm1, vm2, _ = addrs(step)
        fr = [f for f in sent(frames[2], vm1, vm2, (w[0], w[1]))
              if f.v6 == v6(step)]
        paths, ports = routers_ports(fr)
        used = [r for r, c in paths.items() if c >= MIN_FRAMES]
        qps = ecmp.per([f for f in fr if f.opcode != ACK],
                       lambda f: f.dqp)
        s.note("%s: VM 1 -> VM 2, %d frames in %.1f s; per router: %s; "
               "per UDP source port: %s; destination QPs: %d" % (
                   step, len(fr), w[1] - w[0], fmt(paths), fmt(ports),
                   len(qps)))
        s.report(len(used) >= 2, "host/%s-routers" % step,
                 "routers with >= %d frames: %s (%s)" % (
                     MIN_FRAMES, " ".join(sorted(used)) or "none",
                     fmt(paths)))
        s.report(len(ports) >= ports_min, "host/%s-ports" % step,
                 "%d source ports (want >= %d): %s" % (
                     len(ports), ports_min, fmt(ports)))
        if step != "q8":
            s.report(len(qps) == 1, "host/%s-one-qp" % step,
                     "destination QPs of VM 1's requests: %s" % fmt(qps))
            acks = [f for f in sent(frames[1], vm2, vm1, w)
                    if f.opcode == ACK and f.v6 == v6(step)]
            ap = ecmp.per(acks, lambda f: f.sport)
            stray = set(ap) - set(ports)
            s.report(bool(acks) and not stray and len(ap) >= 2,
                     "host/%s-acks-follow" % step,
                     "VM 2's ACKs per source port: %s; ports VM 1 did not "
                     "send from: %s" % (fmt(ap), " ".join(
                         str(p) for p in sorted(stray)) or "none"))


def failover_checks(s: Suite, h: Host, frames, step: str) -> None:
    done = h.failures.get(step, [])
    end = h.marks.get(step + "-end")
    if not done or end is None:
        s.report(False, "host/%s-stall" % step,
                 "no failure to measure (%d done, end mark %s)" % (
                     len(done), "seen" if end else "missing"))
        if step == "fail-rping":
            s.report(False, "host/%s-path-back" % step, "not measured")
        return
    # what VM 2 received from VM 1 (requests; READ responses for rping)
    vm1, vm2, _ = addrs(step)
    got = [f for f in frames[2] if f.src == vm1 and f.dst == vm2 and
           f.v6 == v6(step)]
    start = h.marks.get(step + "-go", done[0][1])
    ports: Dict[str, set] = {}
    for f in ecmp.between(got, start - 3, end):
        ports.setdefault(f.ifname, set()).add(f.sport)
    s.note("%s: VM 1's source ports per router: %s" % (step, "; ".join(
        "%s: %s" % (r, " ".join(str(p) for p in sorted(ps)))
        for r, ps in sorted(ports.items()))))
    # (a stream that ended before a router came back stalls no more)
    last = max((f.t for f in got if f.t <= end), default=end)
    stalls = []
    for n, (k, t0, t1) in enumerate(done):
        gap, at = ecmp.longest_gap(got, t0 - 0.2, min(t1, last))
        stalls.append(gap * 1000)
        print("MEASURE failover-stall ms=%.0f step=%s failure=%d router=r%d "
              "(longest time VM 2 got no frame of VM 1, %.0f ms after the "
              "router went down)" % (gap * 1000, step, n + 1, k,
                                     (at - t0) * 1000))
        sys.stdout.flush()
    s.report(max(stalls) < STALL_MAX_MS, "host/%s-stall" % step,
             "longest stall per failure: %s ms (want < %d)" % (
                 " ".join("%.0f" % x for x in stalls), STALL_MAX_MS))
    # each router taken down carries frames of the stream again
    back = []
    for n, (k, t0, t1) in enumerate(done):
        until = done[n + 1][1] if n + 1 < len(done) else end
        fr = [f for f in sent(frames[2], vm1, vm2,
                              (t1 + HOLDDOWN_S + 0.2, until))
              if f.ifname == "r%d" % k and f.v6 == v6(step)]
        back.append((k, len(fr), until - t1))
    msg = "; ".join("r%d: %d frames of VM 1 in the %.1f s after it came "
                    "back" % b for b in back)
    if step == "fail-rping":
        s.report(all(c > 0 for _, c, _ in back), "host/%s-path-back" % step,
                 msg)
    else:
        # a full send queue leaves no flowlet boundary: it need not move
        s.note("%s: %s" % (step, msg))


def rxe_checks(s: Suite, h: Host, frames, step: str) -> None:
    w = window(h, step)
    if w is None:
        s.report(False, "host/%s-ports" % step, "no window")
        return
    vm1, _, vm3 = addrs(step)
    fr = [f for f in sent(frames[3], vm1, vm3, w) if f.v6 == v6(step)]
    paths, ports = routers_ports(fr)
    # per connection: soft-RoCE's QP each request names
    qps = ecmp.per([f for f in fr if f.opcode != ACK], lambda f: f.dqp)
    per_qp = {q: ecmp.per([f for f in fr if f.dqp == q],
                          lambda f: f.sport) for q in qps}
    most = max(qps, key=lambda q: qps[q]) if qps else None
    s.report(most is not None and len(per_qp[most]) >= 2,
             "host/%s-ports" % step,
             "soft-RoCE received from VM 1 per QP and source port: %s "
             "(per router: %s)" % ("; ".join(
                 "QP %#x: %s" % (q, fmt(p)) for q, p in per_qp.items()) or
                 "nothing", fmt(paths)))
    back = [f for f in sent(frames[1], vm3, vm1, w) if f.v6 == v6(step)]
    bp, bports = routers_ports(back)
    s.note("%s: soft-RoCE's own frames to VM 1: %d, per source port: %s, "
           "per router: %s" % (step, len(back), fmt(bports), fmt(bp)))


def rxe_failover(s: Suite, h: Host, frames) -> None:
    """Reported, not counted: soft-RoCE answers from the source port its
    hash of the QP gives, so when the failed router carries those
    answers, no session of the adapter gets an ACK until it is back."""
    done = h.failures.get("rxe-fail", [])
    end = h.marks.get("rxe-fail-end")
    got = [f for f in frames[3] if f.src == VM1 and f.dst == VM3]
    acks = [f for f in frames[1] if f.src == VM3 and f.dst == VM1]
    what = []
    for k, t0, t1 in done:
        gap, _ = ecmp.longest_gap(got, t0 - 0.2, t1)
        before = ecmp.per([f for f in acks if t0 - 1 <= f.t < t0],
                          lambda f: f.ifname)
        req = ecmp.per([f for f in sent(frames[3], VM1, VM3, (t0 - 1, t0))],
                       lambda f: f.ifname)
        what.append("router r%d down: VM 1's requests took %s, soft-RoCE's "
                    "answers %s in the second before; longest stall %.0f ms"
                    % (k, fmt(req), fmt(before), gap * 1000))
        print("MEASURE rxe-failover-stall ms=%.0f router=r%d" % (
            gap * 1000, k))
    c = h.checks_of.get((1, "rxe-fail-bw"))
    s.skip("host/rxe-failover", "not counted (soft-RoCE answers from one "
           "port per QP): %s; ib_write_bw: %s%s" % (
               "; ".join(what) or "no failure",
               c.line if c is not None else "no result",
               "" if end else ", no end mark"))


def names() -> List[str]:
    """Every test, in order (rstest/select.py); host/dumpcap only fails
    (the suite cannot run)."""
    return ["host/" + n for n in (
        "ecmp-network", "fail-bw-paths-down", "fail6-paths-down",
        "fail6-linkdown-kept",
        "fail-rping-paths-down", "rxe-fail-paths-down", "captures-complete",
        "q8-routers", "q8-ports", "spread-routers", "spread-ports",
        "spread-one-qp", "spread-acks-follow", "spread6-routers",
        "spread6-ports", "spread6-one-qp", "spread6-acks-follow",
        "fail-bw-stall", "fail6-stall", "fail-rping-stall",
        "fail-rping-path-back", "rxe-ports", "rxe6-ports",
        "rxe-failover")] + [
        "%s/vm%s" % (c.split(":")[1], c.split(":")[0])
        for c in VM_CHECKS] + ["launch-vms"]


def main() -> int:
    # (the launcher tears its VMs and namespaces down when this stops)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *a: sys.exit(130))
    return select.main("multipath", {("boot",): names()}, run,
                       sys.argv[1:], __doc__)


def run(s: Suite, _units=None) -> None:
    """The boot and the captures' checks (rstest/select.py's run)."""
    # dumpcap comes with tshark (Debian's wireshark-common)
    if need_tshark(os.path.join(s.dir, "apt-tshark.log")) is None or \
            shutil.which("dumpcap") is None:
        s.report(False, "host/dumpcap", "no dumpcap, and tshark could not be "
                 "installed (see %s)" % os.path.join(s.dir, "apt-tshark.log"))
        return
    run = os.environ.get("RS_VMS_LOGDIR") or os.path.join(s.dir, "vms")
    common = guest_files("lib.sh", "multipath-common.sh")
    h = Host(s, run)
    argv = ["-q", "-n", "3", "--ecmp", str(ROUTERS), "--ecmp-capture",
            "--soft-roce-vm", "3", "--timeout", "400"]
    for i in (1, 2, 3):
        argv += ["--vm-cmd", str(i), "%s\n%s" % (
            common, guest_files("multipath-vm%d.sh" % i))]
    with s.start("launch", argv, vms_dir=run) as bg:
        if not h.attach(bg):
            h.check(False, "ecmp-network", "no ecmp.json in %s" % run)
        else:
            h.check(True, "ecmp-network", h.net.describe()
                    if h.net else "")
            h.fail_paths(bg, "fail-bw")
            h.fail_paths(bg, "fail6", 1)
            h.fail_paths(bg, "fail-rping")
            h.fail_paths(bg, "rxe-fail", 1)
        r = bg.wait()
    h.stop.set()
    if h.watcher.is_alive():
        h.watcher.join()
    with open(os.path.join(s.dir, "marks"), "w") as f:
        for k, v in sorted(h.marks.items(), key=lambda kv: kv[1]):
            f.write("%.3f %s\n" % (v, k))
    sys.stderr.write("".join(ln + "\n" for ln in r.lines))
    sys.stderr.flush()
    for ok, name, detail in h.results:
        s.report(ok, "host/%s" % name, detail)
    for n in h.notes:
        s.note(n)
    h.checks_of = r.found
    analyse(s, h)
    s.expect(r, VM_CHECKS)
    s.launcher_check(r)


if __name__ == "__main__":
    sys.exit(main())
