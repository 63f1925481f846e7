#!/usr/bin/env python3
"""The local fabric between two VMs with the adapter, as TAP.

Two boots of the same pair of VMs (launch-vms.sh -n 2, VM 1's netdev
captured): "wire" as usual, "fabric" with --local-fabric (each VM's RAM
in a shared memfd backend, each adapter with local-fabric=DIR; docs/specs
"Local fabric").  In each, VM 2 runs against VM 1's servers:
ibv_rc_pingpong, ib_write_bw 64 KiB for FB_SECS seconds, rping -V (200 x
4 KiB, data verified), ib_read_bw 64 KiB; every program passes and no
kernel warns.  When VM 1 says RS-FABRIC-DONE the host reads both
adapters' x-fabric-* counters (fabric boot) and query-rdma-session's
tx-bytes; afterwards the RoCE bytes on VM 1's netdev are counted in the
capture.  The fabric boot passes if the bytes went by reference (payload
bytes by reference at least 90% of all bytes over the fabric, each
side's rx-ref-bytes equal to the other's tx-ref-bytes) and the netdev
carried less than 1% of that in RoCE frames, and VM 1's adapter's
fabric-pcap capture (BOOT.pcap.fabric) holds at least the frames it sent,
each decoded by tshark with an InfiniBand BTH.  Both boots print ib_write_bw's and
ib_read_bw's figures (fabric vs wire on the same machine); the fabric boot
also the frames per channel message (batches).

A third boot, "killed", has three VMs on one fabric: VM 1 runs
ib_write_bw to VM 2 and to VM 3 at once, and the host SIGKILLs VM 2's
QEMU in the middle (after RS-FABRIC-KILL on VM 1's console).  VM 1's QP
to VM 2 must end in an error completion, its transfer to VM 3 must pass
unharmed, no kernel warns, VM 1's and VM 3's QEMUs answer QMP afterwards
and count VM 2 as gone (x-fabric-left), and they power off cleanly.

Usage: tests/guest/fabric.py [--list] [NAME...]  (rstest/select.py)
Environment: RS_BUILD, RS_NO_BUILD=1 (the build comes first), FB_SECS
  (default 10).
Logs: $RS_BUILD/test-logs/fabric.XXXXXX (fabric.last): BOOT.log, the VM
directories vms-BOOT, BOOT.pcap, counters.json.
"""

import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
from typing import Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import console, select  # noqa: E402
from rstest.suite import Suite, guest_files, need_tshark, qmp  # noqa: E402

SECS = int(os.environ.get("FB_SECS", "10"))
BOOTS = ("wire", "fabric", "killed")
KILLED_CHECKS = {1: ["killed-peer-error", "survivor-client", "dmesg-clean"],
                 3: ["survivor-server", "dmesg-clean"]}
CHECKS = {1: ["rc-pingpong-server", "write-bw-server", "rping-server",
              "read-bw-server", "dmesg-clean"],
          2: ["rc-pingpong-client", "write-bw-client", "rping-client",
              "read-bw-client", "dmesg-clean"]}
FAB = "/machine/peripheral/rsfab"
BW_RE = re.compile(r"^\s*65536\s+\d+\s+([0-9.]+)\s+([0-9.]+)", re.M)


def roce_bytes(pcap: str) -> Tuple[int, int]:
    """(frames, bytes) of UDP port 4791 frames in a pcap file."""
    n = total = 0
    try:
        with open(pcap, "rb") as f:
            hdr = f.read(24)
            if len(hdr) < 24:
                return 0, 0
            end = "<" if hdr[:4] == b"\xd4\xc3\xb2\xa1" else ">"
            while True:
                rec = f.read(16)
                if len(rec) < 16:
                    break
                incl, orig = struct.unpack(end + "II", rec[8:16])
                data = f.read(incl)
                off = 14
                if data[12:14] == b"\x81\x00":
                    off = 18
                et = data[off - 2:off]
                if et == b"\x08\x00" and len(data) >= off + 24:
                    ihl = (data[off] & 15) * 4
                    udp = off + ihl
                    ok = data[off + 9] == 17
                elif et == b"\x86\xdd" and len(data) >= off + 48:
                    udp = off + 40
                    ok = data[off + 6] == 17
                else:
                    continue
                if ok and len(data) >= udp + 4 and \
                        struct.unpack(">H", data[udp + 2:udp + 4])[0] == 4791:
                    n += 1
                    total += orig
    except OSError:
        pass
    return n, total


def counters(sock: str) -> Dict[str, int]:
    """The adapter's x-fabric-* counters and query-rdma-session tx-bytes."""
    names = ["tx-ref", "tx-ref-bytes", "rx-ref-bytes", "tx-inline",
             "tx-inline-bytes", "rx-dropped", "rx-bad-ref", "tx-lost",
             "joined", "left", "tx-msgs", "rx-msgs"]
    out: Dict[str, int] = {}
    ok, r = qmp(sock, [("qom-get", {"path": FAB, "property": "x-fabric-" + n})
                       for n in names] + [("query-rdma-session", None)])
    if not ok:
        out["error"] = str(r)
        return out
    for n, v in zip(names, r):
        out[n] = v
    out["tx-bytes"] = r[-1][0]["counters"]["tx-bytes"]
    return out


def counters_at(bg, vms: str, mark: str, secs: float,
                which) -> Dict[int, Dict[str, int]]:
    """Once VM 1's console says mark (within secs), the counters of the
    VMs which; {} if it never did."""
    serial1 = os.path.join(vms, "vm1", "serial.log")
    if not bg.wait_for(secs, lambda: any(mark in ln for ln in
                                         console.lines(serial1))):
        return {}
    return {vm: counters(os.path.join(vms, "vm%d" % vm, "qmp.sock"))
            for vm in which}


def bw(lines: List[str], check: str) -> str:
    """ib_*_bw's "65536 iters bw_peak bw_avg" figures of a check line."""
    for ln in lines:
        if check in ln:
            m = re.search(r"65536\s+\d+\s+([0-9.]+)\s+([0-9.]+)", ln)
            if m:
                return "%s MB/s" % m.group(2)
    return "?"


def run(s: Suite, units=None) -> None:
    """The boots chosen (rstest/select.py)."""
    results = {}
    for boot in BOOTS:
        if units is not None and (boot,) not in units:
            continue
        if boot == "killed":
            run_killed(s)
            continue
        vms = os.path.join(s.dir, "vms-" + boot)
        pcap = os.path.join(s.dir, boot + ".pcap")
        fab = tempfile.mkdtemp(prefix="rs-fabric-") if boot == "fabric" \
            else None
        env = "FB_SECS=%d\n" % SECS
        argv = ["--no-build", "-q", "-n", "2", "--timeout",
                str(8 * SECS + 300), "--pcap", "1", pcap,
                "--vm-cmd", "1", env + guest_files("lib.sh", "fabric-vm1.sh"),
                "--vm-cmd", "2", env + guest_files("lib.sh", "fabric-vm2.sh")]
        if fab:
            argv = ["--local-fabric", fab] + argv
        got: Dict[int, Dict[str, int]] = {}
        with s.start(boot, argv, vms_dir=vms) as bg:
            if fab:
                got = counters_at(bg, vms, "RS-FABRIC-DONE", 8 * SECS + 250,
                                  (1, 2))
            r = bg.wait()
        s.expect(r, [(vm, c) for vm, cks in CHECKS.items() for c in cks],
                 prefix=boot + "/")
        s.launcher_check(r, boot)
        frames, wire = roce_bytes(pcap)
        wb, rb = bw(r.lines, "write-bw-client"), bw(r.lines, "read-bw-client")
        s.note("%s: ib_write_bw 64 KiB %s, ib_read_bw 64 KiB %s; RoCE on VM "
               "1's netdev: %d frames, %d bytes" % (boot, wb, rb, frames,
                                                   wire))
        results[boot] = {"write": wb, "read": rb, "wire-frames": frames,
                         "wire-bytes": wire, "counters": got}
        if fab:
            c1, c2 = got.get(1, {}), got.get(2, {})
            ok = all("error" not in c and "tx-bytes" in c
                     for c in (c1, c2))
            s.report(ok, "fabric/counters", "QMP answered: %s %s" % (c1, c2))
            if ok:
                ref = c1["tx-ref-bytes"] + c2["tx-ref-bytes"]
                sent = ref + c1["tx-inline-bytes"] + c2["tx-inline-bytes"]
                s.tap("ok" if ref >= 0.9 * sent and
                      c2["tx-ref-bytes"] == c1["rx-ref-bytes"] and
                      c1["tx-ref-bytes"] == c2["rx-ref-bytes"] and
                      c1["rx-bad-ref"] == 0 and c2["rx-bad-ref"] == 0
                      else "not ok", "fabric/by-reference",
                      "%d of %d bytes over the fabric by reference"
                      % (ref, sent))
                frames_tx = sum(c["tx-ref"] + c["tx-inline"] for c in (c1, c2))
                msgs = c1["tx-msgs"] + c2["tx-msgs"]
                s.note("fabric: %d frames in %d channel messages (%.1f per "
                       "message), %d lost" % (frames_tx, msgs,
                                              frames_tx / max(msgs, 1),
                                              c1["tx-lost"] + c2["tx-lost"]))
                s.tap("ok" if wire < 0.01 * sent else "not ok",
                      "fabric/netdev-quiet",
                      "%d RoCE bytes (%d frames) on the netdev for %d sent"
                      % (wire, frames, sent))
            capture(s, pcap + ".fabric",
                    (c1.get("tx-ref", 0) + c1.get("tx-inline", 0)) if ok
                    else 0)
            for f in os.listdir(fab):
                os.unlink(os.path.join(fab, f))
            os.rmdir(fab)
    with open(os.path.join(s.dir, "counters.json"), "w") as f:
        json.dump(results, f, indent=1)


def capture(s: Suite, path: str, sent: int) -> None:
    """fabric-pcap's capture of VM 1's adapter: its RoCE frames, both
    ways, at least as many as VM 1 had sent when the counters were read,
    every one decoded by tshark with an InfiniBand BTH."""
    n, _ = roce_bytes(path)
    tshark = need_tshark(os.path.join(s.dir, "tshark-install.log"))
    nbth = -1
    if tshark:
        p = subprocess.run([tshark, "-n", "-r", path, "-Y",
                            "udp.port == 4791 && infiniband.bth"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL, check=False,
                           universal_newlines=True, errors="replace")
        if p.returncode == 0:
            nbth = len(p.stdout.splitlines())
    s.report(sent > 0 and n >= sent and nbth == n, "fabric/capture",
             "%s: %d RoCE frames (VM 1 had sent %d), %d decoded by tshark "
             "with a BTH" % (os.path.basename(path), n, sent, nbth))


def run_killed(s: Suite) -> None:
    """Three VMs on one fabric; VM 2's QEMU killed mid-transfer."""
    vms = os.path.join(s.dir, "vms-killed")
    fab = tempfile.mkdtemp(prefix="rs-fabric-")
    env = "FB_SECS=%d\n" % SECS
    argv = ["--local-fabric", fab, "--no-build", "-q", "-n", "3",
            "--timeout", str(6 * SECS + 300)]
    for vm in (1, 2, 3):
        argv += ["--vm-cmd", str(vm),
                 env + guest_files("lib.sh", "fabric-kill-vm%d.sh" % vm)]
    before: Dict[str, int] = {}
    killed = ""
    after: Dict[int, Dict[str, int]] = {}
    with s.start("killed", argv, vms_dir=vms) as bg:
        serial1 = os.path.join(vms, "vm1", "serial.log")
        if bg.wait_for(6 * SECS + 250, lambda: any(
                "RS-FABRIC-KILL" in ln for ln in console.lines(serial1))):
            before = counters(os.path.join(vms, "vm1", "qmp.sock"))
            try:
                with open(os.path.join(vms, "vm2", "pid")) as f:
                    pid = int(f.read())
                os.kill(pid, signal.SIGKILL)
                killed = "QEMU pid %d" % pid
            except (OSError, ValueError) as e:
                killed = ""
                s.note("killed: could not kill VM 2: %s" % e)
            # Once VM 1 is done (its checks printed), VM 1's and VM 3's
            # QEMUs must still answer, and have seen VM 2 go.
            if killed:
                after = counters_at(bg, vms, "RS-FABRIC-SURVIVED",
                                    4 * SECS + 200, (1, 3))
        r = bg.wait()
    s.report(bool(killed) and before.get("tx-ref-bytes", 0) > 0,
             "killed/kill", "%s killed while VM 1 sent by reference: %s"
             % (killed or "nothing", before))
    s.expect(r, [(vm, c) for vm, cks in KILLED_CHECKS.items() for c in cks],
             prefix="killed/")
    ok = all("error" not in after.get(vm, {"error": 1}) and
             after[vm].get("left", 0) >= 1 for vm in (1, 3))
    s.report(ok, "killed/survivors", "VM 1's and VM 3's QEMUs answered "
             "QMP after the kill and saw a member leave: %s" % after)
    status = {int(m.group(1)): m.group(2) for m in (
        re.match(r"launch-vms: vm(\d+): exit status (.*)$", ln)
        for ln in r.lines) if m}
    s.report(status.get(1) == "0" and status.get(3) == "0" and
             status.get(2, "0") != "0", "killed/launch-vms",
             "VM 1 and VM 3 ran their commands and powered off cleanly, "
             "VM 2 did not end: %s" % status)
    for f in os.listdir(fab):
        os.unlink(os.path.join(fab, f))
    os.rmdir(fab)


def names() -> Dict[Tuple[str, ...], List[str]]:
    """Every test of each boot, in order (rstest/select.py)."""
    cat = {}
    for boot in BOOTS:
        if boot == "killed":
            cat[(boot,)] = ["killed/kill"] + [
                "killed/%s/vm%d" % (c, vm)
                for vm, cks in KILLED_CHECKS.items() for c in cks] + [
                "killed/survivors", "killed/launch-vms"]
            continue
        t = ["%s/%s/vm%d" % (boot, c, vm) for vm, cks in CHECKS.items()
             for c in cks] + ["%s/launch-vms" % boot]
        if boot == "fabric":
            t += ["fabric/counters", "fabric/by-reference",
                  "fabric/netdev-quiet", "fabric/capture"]
        cat[(boot,)] = t
    return cat


if __name__ == "__main__":
    sys.exit(select.main("fabric", names(), run, sys.argv[1:], __doc__))
