#!/usr/bin/env python3
"""Unmodified RDMA programs between two VMs, as TAP: two adapters, then an
adapter (VM 1) and Linux soft-RoCE (VM 2: rdma_rxe on virtio-net), each
program once with each side as the server; then, in the same soft-RoCE
boot, RC programs with netem dropping, reordering and delaying the
soft-RoCE VM's packets.  One boot (a launcher run of rstest) per pairing:
both guests walk the same list of steps (tests/guest/in-guest/matrix.sh),
meeting at a TCP barrier (busybox nc) before each.  The adapter VM's
traffic is recorded with --pcap and checked with tshark and
scripts/roce-icrc.py.

Known exceptions (KNOWN below) run after the counted checks and are
reported as skipped tests with their result, never counted as passed or
failed.

Usage: tests/guest/rdma_matrix.py [--list] [--repeat N] [NAME...]
  --list      every test's name: PAIRING/PROGRAM/server=SIDE (PAIRING
              adapter-adapter, adapter-rxe, adapter-rxe-netem),
              PAIRING/dmesg-clean..., PAIRING/launch-vms,
              PAIRING/capture-..., capture-icrc-selftest
  NAME        a test or any part of the names ("ib_write_bw",
              "adapter-rxe/ibv_rc_pingpong"; rstest/select.py): only the
              pairings and programs the selection needs run
  --repeat N  N rounds, then each test's pass rate
Environment: RS_BUILD; RS_NO_BUILD=1 is implied (the build comes first);
  RS_MATRIX_PROGS, RS_MATRIX_LOSS (the programs without and with netem
  loss, for a shorter run by hand; RS_MATRIX_LOSS may be empty).
Logs: $RS_BUILD/test-logs/rdma-matrix.XXXXXX (rdma-matrix.last): each
pairing's launcher output PAIRING.log, VM directory vms-PAIRING and
capture PAIRING.pcap, and every result in checks.
"""

import os
import re
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import roce, select  # noqa: E402
from rstest.suite import (TOP, Run, Suite, guest_files,  # noqa: E402
                          need_tshark)

PROGS = ("ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong "
         "ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw "
         "ib_read_lat ib_atomic_bw rping")
LOSS = "ibv_rc_pingpong ib_write_bw ib_read_bw"

# Known exceptions, as "pairing/program/server=NAME" (pairings
# adapter-adapter, adapter-rxe, adapter-rxe-netem; NAME vm1, vm2, adapter
# or rxe) with the reason.  ibv_rc_pingpong under netem (which drops only
# soft-RoCE's packets), either way round: when netem drops soft-RoCE's ACK
# for the adapter's last SEND, soft-RoCE has all it needs, exits and
# destroys its QP, so no retransmission is ever acknowledged and the
# adapter ends with "transport retry counter exceeded", as any RC
# requester must (rc_pingpong has no closing handshake).  With the adapter
# as the server it is the server's last message (about 3% of runs); with
# the adapter as the client, the client's last SEND before the server's
# last message (seen once: the capture shows soft-RoCE's server done and
# the adapter resending that SEND's first packets unanswered).
KNOWN = {
    "adapter-rxe-netem/ibv_rc_pingpong/server=adapter":
        "rc_pingpong has no closing handshake: a lost last ACK ends the "
        "server with retry exceeded",
    "adapter-rxe-netem/ibv_rc_pingpong/server=rxe":
        "rc_pingpong has no closing handshake: a lost last ACK ends the "
        "client with retry exceeded",
}

PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) \
    else "python3"
ICRC = os.path.join(TOP, "scripts", "roce-icrc.py")


def mx_steps(which: str, p: str, progs: List[str]) -> List[str]:
    """The steps "ID SERVER-VM PROGRAM SECONDS", both directions of each
    program: the counted ones (90 s each) or the known exceptions (20 s)."""
    out = []
    for prog in progs:
        for srv in (1, 2):
            if p == "adapter-adapter":
                name = "vm%d" % srv
            else:
                name = "adapter" if srv == 1 else "rxe"
            sid = "%s/%s/server=%s" % (p, prog, name)
            if (sid in KNOWN) == (which == "known"):
                out.append("%s %d %s %d" % (sid, srv, prog,
                                            20 if sid in KNOWN else 90))
    return out


def step_lists(progs: List[str], loss: List[str]) -> Tuple[List[str],
                                                           List[str]]:
    """The two pairings' steps: the counted checks first, then the kernel
    log check, then the known exceptions: one that hangs (a process stuck
    in the kernel) costs only their results and the final kernel log
    check."""
    aa = (mx_steps("counted", "adapter-adapter", progs) +
          ["adapter-adapter/dmesg-clean 0 dmesg 10"] +
          mx_steps("known", "adapter-adapter", progs) +
          ["adapter-adapter/dmesg-clean-all 0 dmesg 10"])
    ar = (mx_steps("counted", "adapter-rxe", progs) +
          ["adapter-rxe-netem/tc-netem 0 netem-on 10"] +
          mx_steps("counted", "adapter-rxe-netem", loss) +
          ["adapter-rxe-netem/tc-netem-off 0 netem-off 10",
           "adapter-rxe/dmesg-clean 0 dmesg 10"] +
          mx_steps("known", "adapter-rxe", progs))
    known_loss = mx_steps("known", "adapter-rxe-netem", loss)
    if known_loss:
        # Off again before the last barrier: VM 2 powers off right after
        # it, so a handshake segment netem drops there is never sent again
        # and VM 1 waits out the barrier (seen once).
        ar += (["adapter-rxe-netem/tc-netem-again 0 netem-on 10"] +
               known_loss +
               ["adapter-rxe-netem/tc-netem-off-again 0 netem-off 10"])
    ar.append("adapter-rxe/dmesg-clean-all 0 dmesg 10")
    return aa, ar


class Matrix:
    """The suite, its checks file and its results."""

    def __init__(self, s: Suite):
        self.s = s
        self.dir = self.s.dir

    def record(self, res: str, name: str, detail: str) -> None:
        with open(os.path.join(self.dir, "checks"), "a") as f:
            f.write("%s %s: %s\n" % (res, name, detail))

    def cap(self, name: str, res: str, detail: str) -> None:
        """A capture check: in checks and as a test."""
        self.record(res, name, detail)
        self.s.tap(res, name, detail)

    def result(self, r: Run, sid: str) -> None:
        """One test from the CHECK lines of both VMs."""
        res, parts = "ok", []
        for vm in (1, 2):
            c = r.found.get((vm, sid))
            if c is not None and c.result in ("ok", "fail"):
                if c.result == "fail":
                    res = "fail"
                parts.append("vm%d %s" % (vm, c.detail))
            else:
                res = "fail"
                parts.append("vm%d: no result" % vm)
        detail = "; ".join(parts)
        self.record(res, sid, detail)
        if sid in KNOWN:
            self.s.skip(sid, "known exception (%s): %s: %s" % (
                KNOWN[sid], "passed" if res == "ok" else "failed", detail))
        else:
            self.s.tap(res, sid, detail)

    def run(self, name: str, steps: List[str], argv: List[str]) -> None:
        """One boot of a pairing."""
        t0 = time.time()
        text = "\n".join(steps)
        r = self.s.launch(name, ["-q", "--no-build"] + argv + [
            "--cmd", "MX_RUN=%s MX_STEPS='%s'\n%s" % (
                name, text, guest_files("lib.sh", "matrix.sh"))],
            vms_dir=os.path.join(self.dir, "vms-" + name))
        for st in steps:
            self.result(r, st.split()[0])
        self.s.launcher_check(r, name)
        boot = " ".join(m.group(0) for ln in r.lines
                        for m in re.finditer(r"boot to ready [0-9.]* s", ln))
        self.s.note("rdma-matrix: %s: %d s (%s)" % (
            name, time.time() - t0, boot))

    # --- the captures -------------------------------------------------------

    def tshark_checks(self, c: str, f: str, noheur: List[str],
                      note: str = "") -> None:
        """tshark (Debian's, installed with the private apt configuration)
        decodes every UDP 4791 frame as InfiniBand with a BTH, finds no
        malformed packet and no expert error (a record the capture
        truncated, the local fabric's frame by reference, is neither in
        tshark 4.0: "Packet size limited during capture" is _ws.short, no
        expert info).  note: appended to each check's text."""
        err = os.path.join(self.dir, "tshark.err")

        def frames(flt: str) -> Optional[List[str]]:
            with open(err, "a") as e:
                p = subprocess.run(["tshark", "-n"] + noheur +
                                   ["-r", f, "-Y", flt], stdout=subprocess.PIPE,
                                   stderr=e, stdin=subprocess.DEVNULL,
                                   universal_newlines=True, errors="replace",
                                   check=False)
            if p.returncode != 0:
                return None
            o = p.stdout.rstrip("\n")
            return o.split("\n") if o else []

        def tsh(flt: str) -> str:
            fr = frames(flt)
            return "error" if fr is None else str(len(fr))

        nudp = tsh("udp.port == 4791")
        nbth = tsh("udp.port == 4791 && infiniband.bth")
        if nudp not in ("error", "0") and nudp == nbth:
            self.cap(c + "/capture-roce-decoded", "ok",
                     "%s frames on UDP 4791, all with an InfiniBand BTH%s" %
                     (nbth, note))
        else:
            self.cap(c + "/capture-roce-decoded", "fail",
                     "%s frames on UDP 4791, %s decoded with a BTH%s" %
                     (nudp, nbth, note))
        bad = '_ws.malformed || _ws.expert.severity >= "error"'
        nbad = tsh(bad)
        if nbad == "0":
            self.cap(c + "/capture-no-malformed", "ok",
                     "%s frames, none malformed or with an expert error%s" %
                     (tsh(""), note))
        else:
            self.cap(c + "/capture-no-malformed", "fail", "%s frames: %s%s" % (
                nbad, "".join(ln + " " for ln in (frames(bad) or [])[:3]),
                note))

    def captures(self, pairings: List[str]) -> None:
        """The captures (VM 1, the adapter): tshark's checks, and
        scripts/roce-icrc.py checks every ICRC (tshark 4.0 shows the ICRC
        but does not verify it) and must reject a copy with one flipped
        byte.  With the local fabric (RS_LOCAL_FABRIC=1: the launcher's
        --pcap also wrote PAIRING.pcap.fabric) the checks read the two
        captures merged (rstest.roce.with_fabric), and say so: the frames
        between the adapters went over the fabric, not the netdev."""
        need_tshark(os.path.join(self.dir, "tshark-install.log"))
        noheur: List[str] = []
        if shutil.which("tshark") is not None:
            # The payloads are test data: no guessing of upper protocols
            # in them (RPC-over-RDMA calls perftest's 8-byte sends
            # malformed).
            p = subprocess.run(["tshark", "-G", "heuristic-decodes"],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL,
                               stdin=subprocess.DEVNULL,
                               universal_newlines=True, errors="replace",
                               check=False)
            for ln in p.stdout.splitlines():
                w = ln.split()
                if len(w) >= 2 and w[0] == "infiniband.payload" and \
                        w[1] != "ethertype":
                    noheur += ["--disable-protocol", w[1]]
        for c in pairings:
            f = os.path.join(self.dir, c + ".pcap")
            if not os.path.isfile(f) or os.path.getsize(f) == 0:
                for n in CAPTURE:
                    self.cap(c + n, "fail", "no capture " + f)
                continue
            f, note = roce.with_fabric(f)
            if shutil.which("tshark") is None:
                for n in CAPTURE[:2]:
                    self.cap(c + n, "fail",
                             "no tshark (see %s)" % os.path.join(
                                 self.dir, "tshark-install.log"))
            else:
                self.tshark_checks(c, f, noheur, note)
            rc, out = icrc(f, "--corrupt",
                           os.path.join(self.dir, c + ".corrupt.pcap"))
            if rc == 0:
                self.cap(c + "/capture-icrc", "ok",
                         (out[0] if out else "") + note)
            else:
                self.cap(c + "/capture-icrc", "fail",
                         "".join(ln + " " for ln in (out or [""])[:4]) +
                         note)
        # the ICRC check can fail: the copy of a packet with one payload
        # byte flipped
        if "adapter-rxe" not in pairings:
            return
        bad = os.path.join(self.dir, "adapter-rxe.corrupt.pcap")
        out: List[str] = []
        if os.path.isfile(bad) and os.path.getsize(bad) > 0:
            rc, out = icrc(bad)
            if rc == 1 and any(ln.startswith("1 RoCEv2 packets, 1 bad ICRC")
                               for ln in out):
                self.cap("capture-icrc-selftest", "ok",
                         "a flipped byte is found: %s" %
                         (out[1] if len(out) > 1 else ""))
                return
        self.cap("capture-icrc-selftest", "fail",
                 "roce-icrc.py did not reject the corrupted packet: %s" %
                 (" ".join(out) or "no corrupted copy"))


def icrc(*args: str) -> Tuple[int, List[str]]:
    """scripts/roce-icrc.py ARGS: its exit status and output lines."""
    p = subprocess.run([PY, ICRC] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                       universal_newlines=True, errors="replace", check=False)
    o = p.stdout.rstrip("\n")
    return p.returncode, o.split("\n") if o else []


# The capture checks of each pairing (Matrix.captures).
CAPTURE = ["/capture-roce-decoded", "/capture-no-malformed", "/capture-icrc"]
PAIRINGS = {"adapter-adapter": ["-n", "2"],
            "adapter-rxe": ["-n", "2", "--soft-roce-vm", "2"]}


def programs() -> Tuple[List[str], List[str]]:
    """The programs (RS_MATRIX_PROGS) and those also run under netem
    (RS_MATRIX_LOSS)."""
    return ((os.environ.get("RS_MATRIX_PROGS") or PROGS).split(),
            os.environ.get("RS_MATRIX_LOSS", LOSS).split())


def boot_steps(pairing: str, progs: List[str]) -> List[str]:
    """The steps of a boot of pairing with programs progs."""
    aa, ar = step_lists(progs, [p for p in programs()[1] if p in progs])
    return aa if pairing == "adapter-adapter" else ar


def catalog() -> Dict[Tuple[str, str], List[str]]:
    """The units (rstest/select.py): (PAIRING, PROGRAM), each with the
    tests a boot of that pairing with that program alone reports."""
    cat = {}
    for pairing in PAIRINGS:
        for prog in programs()[0]:
            cat[(pairing, prog)] = [
                st.split()[0] for st in boot_steps(pairing, [prog])] + [
                pairing + "/launch-vms"] + [pairing + n for n in CAPTURE] + (
                ["capture-icrc-selftest"] if pairing == "adapter-rxe" else [])
    return cat


def run(s: Suite, units: List[Tuple[str, str]]) -> None:
    """One boot per pairing with its chosen programs, then the captures."""
    m = Matrix(s)
    ran = []
    for pairing, args in PAIRINGS.items():
        progs = [u[1] for u in units if u[0] == pairing]
        if not progs:
            continue
        m.run(pairing, boot_steps(pairing, progs), args + [
            "--timeout", "900",
            "--pcap", "1", os.path.join(m.dir, pairing + ".pcap")])
        ran.append(pairing)
    m.captures(ran)


if __name__ == "__main__":
    sys.exit(select.main("rdma-matrix", catalog(), run, sys.argv[1:],
                         __doc__))
