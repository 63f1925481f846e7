#!/usr/bin/env python3
"""Live-migrate a VM of scripts/launch-vms.sh to a new QEMU on this host.

The first piece of the VM-level test harness in tests/guest/: QEMU's own
Python library (qemu.qmp) for the QEMUs, the segment's captures read for
what the peers saw.

Usage: tests/guest/migrate_vm.py [--after S] [--count N] [--interval S]
                                [--hold S] [--drill] [--capture PCAP SRC DST]
                                VMDIR

VMDIR is <run>/vmI of a launch-vms run on the multicast segment (its
cmdline, qmp.sock, serial.log, pid).  After S seconds (default 5) it starts
a destination QEMU with the VM's own command line plus -incoming defer,
its console appended to the same serial.log and its control port on the
same pipes, migrates the VM to it over a Unix socket, quits the source and
makes the destination the VM (its pid in VMDIR/pid, its QMP socket linked
from VMDIR/qmp.sock), N times (default 1), every --interval seconds.
The destination drops the segment's frames until the switch (see GATE):
the source stops the VM and waits before it sends the device state
(QEMU's pause-before-switchover capability), the destination's gate
opens, then the source goes on (migrate-continue).
With --hold S the switchover waits S seconds with the VM stopped: the
downtime of a big VM, a slow link or a busy host, which the peers must
outlast.
With --drill it first tries the failures that must leave the source
running: destinations whose adapter has another max-qps or another MAC
(the migration fails, the destination names the property's field) and a
migration cancelled during a held switchover.
For each migration it prints QEMU's figures: total time, downtime, setup
time and bytes, as

  migrate-vm: vmI #k: total 812 ms, downtime 41 ms, setup 3 ms, 35 MiB

With --capture PCAP SRC DST (a capture of the segment on a peer's netdev,
the VM's address SRC and the peer's DST) it then prints the RDMA stall the
peer saw at each switch, the longest time without a frame from SRC around
the switch (where the destination's prompt, an RNR NAK with the shortest
timer, or its gratuitous ARP is; the hold's RNR NAKs do not count as
traffic), and their median and worst (a stall only where traffic flows across the switch:
an idle time in the window counts too):

  migrate-vm: vmI #k: RDMA stall 212 ms (...)
  migrate-vm: vmI: RDMA stall over 3 migrations: median 190 ms, worst 212 ms

It exits 0 if every migration completed, 1 otherwise.

It drives both QEMUs with QEMU's own QMP library (python/qemu/qmp) from the
source tree scripts/build-qemu.sh unpacked into $RS_BUILD (default build/).
"""

import argparse
import asyncio
import bisect
import glob
import os
import re
import shlex
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
import traceback

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD = os.environ.get("RS_BUILD", os.path.join(TOP, "build"))


def qemu_python_dir():
    trees = sorted(glob.glob(os.path.join(BUILD, "qemu-10.0.*", "python")))
    if not trees:
        sys.exit("migrate-vm: no QEMU source tree in %s" % BUILD)
    return trees[-1]


sys.path.insert(0, qemu_python_dir())
# pylint: disable=wrong-import-position
from qemu.qmp.legacy import QEMUMonitorProtocol  # noqa: E402


def log(msg):
    print("migrate-vm: %s" % msg, flush=True)


def connect(path, timeout=30):
    """A QMP connection to the socket at path, waiting for it to appear."""
    end = time.monotonic() + timeout
    while True:
        qmp = QEMUMonitorProtocol(path)
        try:
            qmp.connect()
            qmp.settimeout(30)
            return qmp
        except Exception:  # pylint: disable=broad-except
            # (not listening yet: the library wraps the OSError)
            if time.monotonic() > end:
                raise
            time.sleep(0.1)


# The destination's gate: until the switch it takes the segment's frames
# from its netdev and drops them (a filter-redirector to a null chardev:
# filters see a frame before the NIC refuses it for a VM that does not
# run).  A switch port does the same: it forwards to the new host once the
# VM runs there.  Without it, the frames of the seconds before the switch
# wait in the destination's socket and come to the device as it starts to
# run, as if they were new, while the socket has no room for those that
# matter (the ones sent while the source stopped).
GATE = "rs-switch-gate"


def dest_args(args, qmp_path, tag):
    """The source's arguments for a destination: same machine and devices,
    its own QMP socket, the console appended to, its captures in files of
    their own (FILE.tag: QEMU truncates a capture file it opens), its gate
    closed, waiting for the stream."""
    out = []
    netdev = None
    it = iter(args)
    for a in it:
        if a == "-qmp":
            next(it)
            out += ["-qmp", "unix:%s,server=on,wait=off" % qmp_path]
        elif a == "-chardev":
            spec = next(it)
            if spec.startswith("file,"):
                spec += ",append=on"
            out += ["-chardev", spec]
        else:
            m = re.match(r"socket,id=([^,]+),.*mcast=", a)
            netdev = m.group(1) if m else netdev
            if a.startswith("filter-dump,"):
                a = re.sub(r"(,file=[^,]+)", r"\1.%s" % tag, a)
            out.append(a)
    if netdev is None:
        raise RuntimeError("no -netdev socket,mcast= in the command line")
    return out + ["-chardev", "null,id=%s" % GATE, "-object",
                  "filter-redirector,id=%s,netdev=%s,queue=tx,outdev=%s" %
                  (GATE, netdev, GATE), "-incoming", "defer"]


def wait_end(qmp, what, timeout=300):
    """The migration's end: ("completed", info) or (failed|cancelled, info)."""
    end = time.monotonic() + timeout
    while True:
        info = qmp.cmd("query-migrate")
        status = info.get("status")
        if status in ("completed", "failed", "cancelled"):
            return status, info
        if time.monotonic() > end:
            raise RuntimeError("%s: migration not done after %s s (%s)" %
                               (what, timeout, status))
        time.sleep(0.05)


def wait_done(qmp, what, timeout=300):
    status, info = wait_end(qmp, what, timeout)
    if status != "completed":
        raise RuntimeError("%s: migration %s: %s" %
                           (what, status, info.get("error-desc", "")))
    return info


def set_caps(dq, src, pause):
    """The return path lets the source hear that the destination refused
    the state (it then runs on); the pause holds the switchover."""
    dq.cmd("migrate-set-capabilities", capabilities=[
        {"capability": "return-path", "state": True}])
    src.cmd("migrate-set-capabilities", capabilities=[
        {"capability": "return-path", "state": True},
        {"capability": "events", "state": True},
        {"capability": "pause-before-switchover", "state": pause}])


def wait_pre_switchover(qmp, what, timeout=300):
    """Wait until the source stopped the VM and waits for migrate-continue:
    its MIGRATION event, so that the gate opens as soon as possible (what
    the segment carries in between is lost), or the status, polled."""
    end = time.monotonic() + timeout
    while True:
        try:
            ev = qmp.pull_event(wait=0.05)
        except asyncio.TimeoutError:
            ev = None
        if ev is not None and ev.get("event") != "MIGRATION":
            continue
        status = (ev["data"]["status"] if ev is not None else
                  qmp.cmd("query-migrate").get("status"))
        if status == "pre-switchover":
            return
        if status in ("failed", "cancelled", "completed"):
            raise RuntimeError("%s: migration %s before the switchover" %
                               (what, status))
        if time.monotonic() > end:
            raise RuntimeError("%s: no switchover after %s s (%s)" %
                               (what, timeout, status))


def vm_args(vmdir):
    with open(os.path.join(vmdir, "cmdline")) as f:
        args = shlex.split(f.read())
    if not any(a.startswith("socket,") and "mcast=" in a for a in args):
        raise RuntimeError("%s: only VMs on the multicast segment can move "
                           "(the destination must join the same segment)"
                           % os.path.basename(vmdir))
    return args


def other_mac(args):
    """The arguments with the adapter's MAC changed in its last byte."""
    out = []
    for a in args:
        m = re.search(r"(rdma-session,.*mac=(?:[0-9a-f]{2}:){5})([0-9a-f]{2})",
                      a)
        if m:
            a = a.replace(m.group(0), "%s%02x" % (m.group(1),
                                                  int(m.group(2), 16) ^ 0x80))
        out.append(a)
    return out


def start(vmdir, args, qmp_path, logpath, pause, tag):
    """A destination QEMU (args, its QMP socket at qmp_path, its output in
    logpath) waiting for the stream, and the source migrating to it, with
    the switchover paused if pause.  Returns the destination's process,
    its log file and the QMP connections of source and destination."""
    mig = os.path.join(vmdir, "mig.sock")
    for p in (qmp_path, mig):
        if os.path.exists(p):
            os.unlink(p)
    qlog = open(logpath, "w")
    dst = subprocess.Popen(dest_args(args, qmp_path, tag),
                           stdin=subprocess.DEVNULL,
                           stdout=qlog, stderr=subprocess.STDOUT,
                           start_new_session=True)
    try:
        src = connect(os.path.join(vmdir, "qmp.sock"))
        dq = connect(qmp_path)
        set_caps(dq, src, pause)
        dq.cmd("migrate-incoming", uri="unix:%s" % mig)
        src.cmd("migrate", uri="unix:%s" % mig)
    except Exception:
        dst.kill()
        qlog.close()
        raise
    return dst, qlog, src, dq


def switchover(src, what, secs, command, dq=None, **kw):
    """Hold the paused switchover secs seconds, open the destination dq's
    gate (the source no longer takes frames: they are the destination's
    now), then send command."""
    wait_pre_switchover(src, what)
    time.sleep(secs)
    if dq is not None:
        dq.cmd("qom-set", path="/objects/" + GATE, property="status",
               value="off")
    src.cmd(command, **kw)


def drill_one(vmdir, what, args, cancel_after=0.0, field=None):
    """One migration that must not happen; the source must run on."""
    name = os.path.basename(vmdir)
    tag = what.replace(" ", "-")
    qmp_path = os.path.join(vmdir, "drill-%s.sock" % tag)
    logpath = os.path.join(vmdir, "drill-%s.log" % tag)
    dst, qlog, src, dq = start(vmdir, args, qmp_path, logpath,
                               cancel_after > 0, "drill-" + tag)
    dq.close()                  # before it quits on the refused state
    try:
        if cancel_after > 0:
            switchover(src, name, cancel_after, "migrate_cancel")
        status, info = wait_end(src, name, timeout=120)
        if status == "completed":
            raise RuntimeError("%s: %s: the migration completed" %
                               (name, what))
        outcome = "migration %s: %s" % (status, info.get("error-desc", ""))
        if cancel_after == 0:
            dst.wait(timeout=30)    # it refused the state and quits
    finally:
        if dst.poll() is None:
            dst.kill()
            dst.wait()
        qlog.close()
    for _ in range(100):
        st = src.cmd("query-status").get("status")
        if st == "running":
            break
        time.sleep(0.1)
    src.close()
    if st != "running":
        raise RuntimeError("%s: %s: the source is %s afterwards" %
                           (name, what, st))
    detail = outcome
    if field:
        with open(logpath) as f:
            err = [ln.strip() for ln in f if field in ln]
        if not err:
            raise RuntimeError("%s: %s: the destination did not name %s "
                               "(see %s)" % (name, what, field, logpath))
        detail = err[0]
    if os.path.exists(qmp_path):
        os.unlink(qmp_path)
    log("%s drill: %s: the source runs on (%s)" % (name, what, detail))


def drill(vmdir):
    args = vm_args(vmdir)
    drill_one(vmdir, "max-qps differs",
              args + ["-global", "rdma-session.max-qps=4096"],
              field="max_qps")
    drill_one(vmdir, "mac differs", other_mac(args), field="mac")
    drill_one(vmdir, "cancelled", args, cancel_after=2.0)


def migrate_once(vmdir, k, hold=0.0):
    name = os.path.basename(vmdir)
    args = vm_args(vmdir)
    qmp_path = os.path.join(vmdir, "qmp.sock")
    # QEMU unlinks its socket's path when it quits: each destination gets
    # a path of its own, and qmp.sock links to the current one.
    new_qmp = os.path.join(vmdir, "qmp-%d.sock" % k)
    with open(os.path.join(vmdir, "pid")) as f:
        src_pid = int(f.read())
    dst, _, src, dq = start(vmdir, args, new_qmp,
                            os.path.join(vmdir, "qemu-%d.log" % k), True,
                            str(k))
    try:
        switchover(src, name, hold, "migrate-continue", dq,
                   state="pre-switchover")
        info = wait_done(src, name)
        wait_done(dq, name + " destination")
        st = dq.cmd("query-status")
        if st.get("status") != "running":
            raise RuntimeError("%s: destination is %s" % (name, st))
        dq.close()
        # The destination is the VM now: say so before the source goes, so
        # that the launcher never sees the VM without a QEMU.
        with open(os.path.join(vmdir, "pid"), "w") as f:
            f.write("%d\n" % dst.pid)
    except Exception:
        dst.kill()
        raise
    finally:
        try:
            src.cmd("quit")
            src.close()
        except Exception:  # pylint: disable=broad-except
            pass                # (it went away with the answer)
    for _ in range(100):
        try:
            os.kill(src_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    if os.path.lexists(qmp_path):
        os.unlink(qmp_path)
    os.symlink(os.path.basename(new_qmp), qmp_path)
    ram = info.get("ram", {})
    log("%s #%d: total %d ms, downtime %d ms, setup %d ms, %d MiB%s" %
        (name, k, info.get("total-time", -1), info.get("downtime", -1),
         info.get("setup-time", -1), ram.get("transferred", 0) >> 20,
         ", switchover held %g s" % hold if hold > 0 else ""))
    return info.get("downtime", 0)


ROCE_PORT = 4791
OP_ACK = 0x11


def segment_frames(path, src, dst):
    """From the pcap file at path (QEMU's filter-dump; a record cut short
    at the end, as a capture still written gives, ends it): the (time, RNR
    NAK timer code or None) of each RoCEv2 frame from IPv4 address src to
    dst, and the times of src's gratuitous ARPs."""
    roce, arps = [], []
    a_src, a_dst = socket.inet_aton(src), socket.inet_aton(dst)
    with open(path, "rb") as f:
        if f.read(24)[:4] != b"\xd4\xc3\xb2\xa1":
            return roce, arps
        while True:
            hdr = f.read(16)
            if len(hdr) < 16:
                break
            sec, usec, incl, _ = struct.unpack("<IIII", hdr)
            fr = f.read(incl)
            if len(fr) < incl:
                break
            t = sec + usec / 1e6
            if (fr[12:14] == b"\x08\x06" and len(fr) >= 42 and
                    fr[28:32] == a_src and fr[38:42] == a_src):
                arps.append(t)
                continue
            ip, bth = 14, 14 + (fr[14] & 0xf) * 4 + 8 if len(fr) > 14 else 0
            if (len(fr) < bth + 13 or fr[12:14] != b"\x08\x00" or
                    fr[ip + 9] != 17 or fr[ip + 12:ip + 16] != a_src or
                    fr[ip + 16:ip + 20] != a_dst or
                    struct.unpack_from(">H", fr, bth - 6)[0] != ROCE_PORT):
                continue
            syn = fr[bth + 12]
            rnr = syn & 0x1f if fr[bth] == OP_ACK and syn >> 5 == 1 else None
            roce.append((t, rnr))
    return roce, arps


def stalls(path, src, dst, downtimes):
    """The RDMA stall dst saw at each switch: the longest time without a
    frame from src around it, RNR NAKs left out (the hold's and the
    prompts).  A switch is where the destination makes itself heard first:
    its prompts (RNR NAKs with the shortest timer, as it starts to run) or
    its announcements (gratuitous ARPs), whichever the capture has (a
    burst may lose some on the segment); "around" is from its downtime
    (ms, one per switch) plus 2 s before it to 2 s after it.  One value
    (ms, or None if no frame came before or after) per switch."""
    frames, arps = [], []
    # a capture on a VM that moved goes on in PATH.1, PATH.2, ...
    more = [p for p in glob.glob(glob.escape(path) + ".*")
            if p[len(path) + 1:].isdigit()]
    for p in [path] + sorted(more, key=lambda p: int(p[len(path) + 1:])):
        f, a = segment_frames(p, src, dst)
        frames += f
        arps += a
    traffic = sorted(t for t, rnr in frames if rnr is None)
    switches = []
    for t in sorted([t for t, rnr in frames if rnr == 1] + arps):
        if not switches or t - switches[-1] >= 1.0:
            switches.append(t)
    out = []
    for p, down in zip(switches, downtimes):
        lo = bisect.bisect_left(traffic, p - down / 1000 - 2)
        hi = bisect.bisect_right(traffic, p + 2)
        win = traffic[lo:hi]
        if not win or win[0] > p or win[-1] < p:
            out.append(None)
            continue
        out.append(max(b - a for a, b in zip(win, win[1:])) * 1000)
    return out + [None] * (len(downtimes) - len(out))


def report_stalls(name, path, src, dst, downtimes):
    """Print the stall of each migration (downtimes: QEMU's, ms) and their
    median and worst (the suites judge the printed figures)."""
    try:
        got = stalls(path, src, dst, downtimes)
    except OSError as e:
        log("%s: no stall figures: %s" % (name, e))
        return
    for k, ms in enumerate(got, 1):
        log("%s #%d: RDMA stall %s (%s heard nothing but RNR NAKs from %s)" %
            (name, k, "%.0f ms" % ms if ms is not None else
             "not found (no prompt or announcement, or no traffic on one side)",
             dst, src))
    ok = [ms for ms in got if ms is not None]
    if ok:
        log("%s: RDMA stall over %d migrations: median %.0f ms, worst %.0f ms"
            % (name, len(ok), statistics.median(ok), max(ok)))


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0])
    ap.add_argument("--after", type=float, default=5)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--interval", type=float, default=5)
    ap.add_argument("--hold", type=float, default=0)
    ap.add_argument("--drill", action="store_true")
    ap.add_argument("--capture", nargs=3, metavar=("PCAP", "SRC", "DST"))
    ap.add_argument("vmdir")
    o = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    time.sleep(o.after)
    if o.drill:
        try:
            drill(o.vmdir)
        except Exception as e:  # pylint: disable=broad-except
            log("FAIL: %r" % e)
            traceback.print_exc()
            return 1
    downtimes = []
    for k in range(1, o.count + 1):
        try:
            downtimes.append(migrate_once(o.vmdir, k, o.hold))
        except Exception as e:  # pylint: disable=broad-except
            log("FAIL: %r" % e)
            traceback.print_exc()
            return 1
        if k < o.count:
            time.sleep(o.interval)
    if o.capture:
        time.sleep(2)           # the traffic after the last switch
        report_stalls(os.path.basename(o.vmdir), *o.capture, downtimes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
