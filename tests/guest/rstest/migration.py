"""Live migration of a VM (rstest.vm.VM on the multicast segment) to a new
QEMU on this host, and the RDMA stall its peer saw.

A migration starts a destination QEMU (a QEMUMachine: the VM's own command
line plus -incoming defer, its console appended to the same serial.log,
its control port on the same pipes, its QMP socket qmp-K.sock, its output
in qemu-K.log, its captures in FILE.K), migrates the VM to it over a Unix
socket (mig.sock), quits the source and makes the destination the VM (its
pid in <vm>/pid, qmp.sock a link to its socket).
The destination drops the segment's frames until the switch (see GATE):
the source stops the VM and waits before it sends the device state
(QEMU's pause-before-switchover capability), the destination's gate
opens, then the source goes on (migrate-continue).  With a hold the
switchover waits that long with the VM stopped: the downtime of a big VM,
a slow link or a busy host, which the peers must outlast.
The drill first tries the failures that must leave the source running:
destinations whose adapter has another max-qps or another MAC (the
migration fails, the destination names the property's field) and a
migration cancelled during a held switchover.
For each migration it prints QEMU's figures:

  migrate-vm: vmI #k: total 812 ms, downtime 41 ms, setup 3 ms, 35 MiB

From a capture of the segment on a peer's netdev (the VM's address SRC
and the peer's DST) it then prints the RDMA stall the peer saw at each
switch: the longest time without a frame from SRC around the switch
(where the destination's prompt, an RNR NAK with the shortest timer, or
its gratuitous ARP is; the hold's RNR NAKs do not count as traffic), and
their median and worst (a stall only where traffic flows across the
switch: an idle time in the window counts too):

  migrate-vm: vmI #k: RDMA stall 212 ms (...)
  migrate-vm: vmI: RDMA stall over 3 migrations: median 190 ms, worst 212 ms

The source is driven through its qmp.sock and the destination through its
QEMUMachine's own QMP connection, both from the thread that migrates: the
QMP library's event loop belongs to one thread.
"""

import asyncio
import bisect
import glob
import os
import random
import re
import socket
import statistics
import threading
import time
import traceback
from typing import Callable, List, Optional, Tuple

from . import qemupath  # noqa: F401  (QEMU's python/ on sys.path)
# pylint: disable=wrong-import-order
from qemu.machine import QEMUMachine  # noqa: E402
from qemu.qmp.legacy import QEMUMonitorProtocol  # noqa: E402

from . import roce  # noqa: E402
from .vm import VM  # noqa: E402

Log = Callable[[str], None]

# The destination's gate: until the switch it takes the segment's frames
# from its netdev and drops them (a filter-redirector to a null chardev:
# filters see a frame before the NIC refuses it for a VM that does not
# run).  A switch port does the same: it forwards to the new host once the
# VM runs there.  Without it, the frames of the seconds before the switch
# wait in the destination's socket and come to the device as it starts to
# run, as if they were new, while the socket has no room for those that
# matter (the ones sent while the source stopped).
GATE = "rs-switch-gate"


class Stopped(Exception):
    """The run ends (timeout, interrupt): no more migrations."""


def connect(path: str, timeout: float = 30) -> QEMUMonitorProtocol:
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


def dest_args(args: List[str], qmp_path: str, tag: str) -> List[str]:
    """The source's arguments for a destination: same machine and devices,
    its own QMP socket, the console appended to, its captures in files of
    their own (FILE.tag: QEMU truncates a capture file it opens), its gate
    closed, waiting for the stream."""
    out: List[str] = []
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
            m = re.match(r"(?:socket,id=([^,]+),.*mcast=|tap,id=([^,]+),)",
                         a)
            netdev = (m.group(1) or m.group(2)) if m else netdev
            if a.startswith("filter-dump,"):
                a = re.sub(r"(,file=[^,]+)", r"\1.%s" % tag, a)
            out.append(a)
    if netdev is None:
        raise RuntimeError("no -netdev socket,mcast= or tap in the command "
                           "line")
    return out + ["-chardev", "null,id=%s" % GATE, "-object",
                  "filter-redirector,id=%s,netdev=%s,queue=tx,outdev=%s" %
                  (GATE, netdev, GATE), "-incoming", "defer"]


def wait_end(qmp, what: str, timeout: float = 300) -> Tuple[str, dict]:
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


def wait_done(qmp, what: str, timeout: float = 300) -> dict:
    status, info = wait_end(qmp, what, timeout)
    if status != "completed":
        raise RuntimeError("%s: migration %s: %s" %
                           (what, status, info.get("error-desc", "")))
    return info


def set_caps(dq, src, pause: bool, announce: bool = True) -> None:
    """The return path lets the source hear that the destination refused
    the state (it then runs on); the pause holds the switchover.  Without
    announce the destination sends no announcement when it starts to run
    (QEMU's announce-rounds 0: the network learns where the VM is only
    from what it sends)."""
    dq.cmd("migrate-set-capabilities", capabilities=[
        {"capability": "return-path", "state": True}])
    if not announce:
        dq.cmd("migrate-set-parameters", announce_rounds=0)
    src.cmd("migrate-set-capabilities", capabilities=[
        {"capability": "return-path", "state": True},
        {"capability": "events", "state": True},
        {"capability": "pause-before-switchover", "state": pause}])


def wait_pre_switchover(qmp: QEMUMonitorProtocol, what: str,
                        timeout: float = 300) -> None:
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


def check_movable(vm: VM) -> None:
    if not vm.segment.migratable:
        raise RuntimeError("%s: only VMs on the multicast segment or the "
                           "overlay can move (the destination must join the "
                           "same segment)" % vm.name)
    if vm.qmp_sock is None:
        raise RuntimeError("%s: no qmp.sock (its run directory's path is "
                           "too long for a Unix socket)" % vm.name)


def other_mac(args: List[str]) -> List[str]:
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


def start(vm: VM, args: List[str], qmp_path: str, name: str, pause: bool,
          tag: str, binary: Optional[str] = None, host: Optional[int] = None,
          announce: bool = True) -> Tuple[QEMUMachine, QEMUMonitorProtocol]:
    """A destination QEMU (binary, default the VM's; args, its QMP socket
    at qmp_path, its output in <vm>/name.log) waiting for the stream, on
    this host (a Unix socket) or on the segment's host (TCP), and the
    source migrating to it, with the switchover paused if pause.  Returns
    the destination and a QMP connection to the source."""
    mig = os.path.join(vm.dir, "mig.sock")
    for p in (qmp_path, mig):
        if os.path.lexists(p):
            os.unlink(p)
    wrapper: List[str] = []
    uri = "unix:%s" % mig
    if host is not None:
        wrapper = vm.segment.host_wrapper(host)
        uri = vm.segment.migration_uri(host, random.randrange(20000) + 40000)
    dst = QEMUMachine(binary or vm.binary,
                      args=dest_args(args, qmp_path, tag), name=name,
                      log_dir=vm.dir, wrapper=wrapper)
    with vm.lock:
        vm.incoming = dst
    src = None
    try:
        dst.launch()
        src = connect(vm.qmp_sock)
        set_caps(dst, src, pause, announce)
        dst.cmd("migrate-incoming", uri=uri)
        src.cmd("migrate", uri=uri)
    except Exception:
        if src is not None:
            src.close()
        discard(vm, dst)
        raise
    return dst, src


def discard(vm: VM, dst: QEMUMachine) -> None:
    """A destination that is not the VM: gone."""
    try:
        if dst.is_running():
            dst.kill()
        else:
            dst.wait()
    except Exception:  # pylint: disable=broad-except
        pass            # (it quit on its own: its QMP went first)
    with vm.lock:
        if vm.incoming is dst:
            vm.incoming = None


def switchover(src: QEMUMonitorProtocol, what: str, secs: float,
               command: str, dst: Optional[QEMUMachine] = None,
               **kw) -> None:
    """Hold the paused switchover secs seconds, open the destination's
    gate (the source no longer takes frames: they are the destination's
    now), then send command."""
    wait_pre_switchover(src, what)
    time.sleep(secs)
    if dst is not None:
        dst.cmd("qom-set", path="/objects/" + GATE, property="status",
                value="off")
    src.cmd(command, **kw)


def source_status(src: QEMUMonitorProtocol) -> Optional[str]:
    """After a migration that did not happen: the source's run state once
    it runs again (within 10 s), or the last one seen; the connection is
    closed."""
    st = None
    for _ in range(100):
        st = src.cmd("query-status").get("status")
        if st == "running":
            break
        time.sleep(0.1)
    src.close()
    return st


def drill_one(vm: VM, what: str, args: List[str], log: Log,
              cancel_after: float = 0.0, field: Optional[str] = None) -> None:
    """One migration that must not happen; the source must run on."""
    name = vm.name
    tag = what.replace(" ", "-")
    qmp_path = os.path.join(vm.dir, "drill-%s.sock" % tag)
    logpath = os.path.join(vm.dir, "drill-%s.log" % tag)
    dst, src = start(vm, args, qmp_path, "drill-" + tag, cancel_after > 0,
                     "drill-" + tag,
                     host=vm.segment.destination(vm.index))
    try:
        if cancel_after > 0:
            switchover(src, name, cancel_after, "migrate_cancel")
        status, info = wait_end(src, name, timeout=120)
        if status == "completed":
            raise RuntimeError("%s: %s: the migration completed" %
                               (name, what))
        outcome = "migration %s: %s" % (status, info.get("error-desc", ""))
        if cancel_after == 0:
            # it refused the state and quits
            end = time.monotonic() + 30
            while dst.is_running():
                if time.monotonic() > end:
                    raise RuntimeError("%s: %s: the destination did not quit"
                                       % (name, what))
                time.sleep(0.1)
    finally:
        discard(vm, dst)
    st = source_status(src)
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
    if os.path.lexists(qmp_path):
        os.unlink(qmp_path)
    log("%s drill: %s: the source runs on (%s)" % (name, what, detail))


def drill(vm: VM, log: Log) -> None:
    check_movable(vm)
    drill_one(vm, "max-qps differs",
              vm.args + ["-global", "rdma-session.max-qps=4096"], log,
              field="max_qps")
    drill_one(vm, "mac differs", other_mac(vm.args), log, field="mac")
    drill_one(vm, "cancelled", vm.args, log, cancel_after=2.0)


def refused(vm: VM, k: int, dst: QEMUMachine, src: QEMUMonitorProtocol,
            info: dict, log: Log) -> None:
    """The destination of vm's k-th migration refused the stream: it must
    quit and the source run on (else RuntimeError)."""
    name = vm.name
    end = time.monotonic() + 30
    while dst.is_running() and time.monotonic() < end:
        time.sleep(0.1)
    quit_ok = not dst.is_running()
    discard(vm, dst)
    st = source_status(src)
    errs: List[str] = []
    try:
        with open(os.path.join(vm.dir, "qemu-%d.log" % k),
                  errors="replace") as f:
            errs = [ln.strip() for ln in f if ln.strip()]
    except OSError:
        pass
    log("%s #%d: refused: migration %s: %s; the destination %s: %s; the "
        "source is %s" % (name, k, info.get("status"),
                          info.get("error-desc", ""),
                          "quit" if quit_ok else "did not quit",
                          " | ".join(errs[-4:]) or "(no output)", st))
    if st != "running" or not quit_ok:
        raise RuntimeError("%s: the refused migration did not end cleanly "
                           "(source %s)" % (name, st))


def migrate_once(vm: VM, k: int, log: Log, hold: float = 0.0,
                 binary: Optional[str] = None, announce: bool = True,
                 may_refuse: bool = False) -> Optional[int]:
    """Move vm to a new QEMU (its k-th migration; binary: the
    destination's QEMU, default the VM's), on this host or on the next
    host of an overlay; QEMU's downtime (ms).  On an overlay it also
    says when the other hosts learned where the VM went.  If may_refuse,
    a destination that refuses the stream is no error as long as it quits
    and the source runs on: None."""
    check_movable(vm)
    name = vm.name
    host = vm.segment.destination(vm.index)
    qmp_path = vm.qmp_sock
    assert qmp_path is not None
    # QEMU unlinks its socket's path when it quits: each destination gets
    # a path of its own, and qmp.sock links to the current one.
    new_qmp = os.path.join(vm.dir, "qmp-%d.sock" % k)
    with vm.lock:
        source = vm.machine
    assert source is not None
    dst, src = start(vm, vm.args, new_qmp, "qemu-%d" % k, True, str(k),
                     binary, host, announce)
    learn = None
    try:
        if host is not None:
            learn = vm.segment.watch(vm.index, vm.mac, host)
        switchover(src, name, hold, "migrate-continue", dst,
                   state="pre-switchover")
        t_switch = time.monotonic()
        status, info = wait_end(src, name)
        if status != "completed":
            if not may_refuse:
                raise RuntimeError("%s: migration %s: %s" % (
                    name, status, info.get("error-desc", "")))
            if learn is not None:
                learn.stop()
            refused(vm, k, dst, src, dict(info, status=status), log)
            if os.path.lexists(new_qmp):
                os.unlink(new_qmp)
            return None
        wait_done(dst, name + " destination")
        st = dst.cmd("query-status")
        if st.get("status") != "running":
            raise RuntimeError("%s: destination is %s" % (name, st))
        # The destination is the VM now: say so before the source goes, so
        # that the launcher never sees the VM without a QEMU.
        with vm.lock:
            vm.machine = dst
            vm.incoming = None
            vm.retired.append(source)
            vm.migrations = k
            vm.binary = binary or vm.binary
            if host is not None:
                vm.segment.moved(vm.index, host)
        vm.write_pid(dst.get_pid())
    except Exception:
        if learn is not None:
            learn.stop()
        discard(vm, dst)
        try:
            src.cmd("quit")
            src.close()
        except Exception:  # pylint: disable=broad-except
            pass
        raise
    try:
        src.cmd("quit")
        src.close()
    except Exception:  # pylint: disable=broad-except
        pass                # (it went away with the answer)
    for _ in range(100):
        if not source.is_running():
            break
        time.sleep(0.05)
    if os.path.lexists(qmp_path):
        os.unlink(qmp_path)
    os.symlink(os.path.basename(new_qmp), qmp_path)
    ram = info.get("ram", {})
    log("%s #%d: total %d ms, downtime %d ms, setup %d ms, %d MiB%s%s" %
        (name, k, info.get("total-time", -1), info.get("downtime", -1),
         info.get("setup-time", -1), ram.get("transferred", 0) >> 20,
         ", switchover held %g s" % hold if hold > 0 else "",
         ", to host %d over TCP" % host if host is not None else ""))
    if learn is not None:
        log("%s #%d: %s" % (name, k, learn.report(t_switch)))
    return info.get("downtime", 0)


# --- the RDMA stall the peer saw, from its capture ------------------------

OP_ACK = 0x11


def segment_frames(path: str, src: str, dst: str):
    """From the capture file at path (QEMU's filter-dump; a record cut
    short at the end, as a capture still written gives, ends it; read by
    rstest.roce): the (time, RNR NAK timer code or None) of each RoCEv2
    frame from IPv4 address src to dst, the frames in a bundle each
    alone, and the times of src's gratuitous ARPs."""
    frames, arps = [], []
    a_src = socket.inet_aton(src)
    try:
        recs = list(roce.records(path))
    except ValueError:
        return frames, arps
    for r in recs:
        fr = r.data
        if (fr[12:14] == b"\x08\x06" and len(fr) >= 42 and
                fr[28:32] == a_src and fr[38:42] == a_src):
            arps.append(r.t)
            continue
        for pkt in roce.unbundle(fr):
            o = roce.offsets(pkt)
            if o is None or o[2] or len(pkt) < o[1] + 8 + 13:
                continue
            p = roce.Packet(r.num, r.t, r.ifname, pkt, *o)
            if p.src != src or p.dst != dst:
                continue
            syn = pkt[o[1] + 8 + 12]
            rnr = syn & 0x1f if p.opcode == OP_ACK and syn >> 5 == 1 \
                else None
            frames.append((r.t, rnr))
    return frames, arps


def stalls(path: str, src: str, dst: str,
           downtimes: List[int]) -> List[Optional[float]]:
    """The RDMA stall dst saw at each switch: the longest time without a
    frame from src around it, RNR NAKs left out (the hold's and the
    prompts).  A switch is where the destination makes itself heard first:
    its prompts (RNR NAKs with the shortest timer, as it starts to run) or
    its announcements (gratuitous ARPs), whichever the capture has (a
    burst may lose some on the segment); "around" is from its downtime
    (ms, one per switch) plus 2 s before it to 2 s after it.  One value
    (ms, or None if no frame came before or after) per switch."""
    frames, arps = [], []
    # a capture on a VM that moved goes on in PATH.1, PATH.2, ...; on the
    # local fabric, what the peer's adapter took over it is in
    # PATH.fabric, on the same clock (the fabric is left at each switch
    # and joined again after it, so the frames around it are in both)
    more = [p for p in glob.glob(glob.escape(path) + ".*")
            if p[len(path) + 1:].isdigit()]
    fab = [path + ".fabric"] if os.path.isfile(path + ".fabric") else []
    for p in [path] + sorted(more, key=lambda p: int(p[len(path) + 1:])) + \
            fab:
        f, a = segment_frames(p, src, dst)
        frames += f
        arps += a
    traffic = sorted(t for t, rnr in frames if rnr is None)
    switches: List[float] = []
    for t in sorted([t for t, rnr in frames if rnr == 1] + arps):
        if not switches or t - switches[-1] >= 1.0:
            switches.append(t)
    out: List[Optional[float]] = []
    for p, down in zip(switches, downtimes):
        lo = bisect.bisect_left(traffic, p - down / 1000 - 2)
        hi = bisect.bisect_right(traffic, p + 2)
        win = traffic[lo:hi]
        if not win or win[0] > p or win[-1] < p:
            out.append(None)
            continue
        out.append(max(b - a for a, b in zip(win, win[1:])) * 1000)
    return out + [None] * (len(downtimes) - len(out))


def report_stalls(name: str, path: str, src: str, dst: str,
                  downtimes: List[int], log: Log) -> None:
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


class Mover(threading.Thread):
    """Migrates one VM of a running launch: after `after` seconds, `count`
    times, every `interval` seconds (the drill first if asked), then
    reports the stall its peer saw from the peer's capture (capture: PCAP,
    the VM's address, the peer's).  Its lines ("migrate-vm: ...") go to
    <vm>/migrate.log; ok says whether every migration completed."""

    def __init__(self, vm: VM, after: float, count: int = 1,
                 interval: float = 5, hold: float = 0.0, drill: bool = False,
                 capture: Optional[Tuple[str, str, str]] = None,
                 announce: bool = True):
        super().__init__(name="migrate-" + vm.name, daemon=True)
        self.vm = vm
        self.after = after
        self.count = count
        self.interval = interval
        self.hold = hold
        self.do_drill = drill
        self.capture = capture
        self.announce = announce
        self.stopping = threading.Event()
        self.ok = False
        self.log_path = os.path.join(vm.dir, "migrate.log")

    def stop(self) -> None:
        self.stopping.set()

    def pause(self, secs: float) -> None:
        if self.stopping.wait(secs):
            raise Stopped()

    def run(self) -> None:
        with open(self.log_path, "w") as f:
            def log(msg: str) -> None:
                print("migrate-vm: %s" % msg, file=f, flush=True)
            try:
                self.ok = self.migrate(log)
            except Stopped:
                log("stopped: the run ended")
            except Exception as e:  # pylint: disable=broad-except
                log("FAIL: %r" % e)
                traceback.print_exc(file=f)

    def migrate(self, log: Log) -> bool:
        self.pause(self.after)
        if self.do_drill:
            drill(self.vm, log)
        downtimes = []
        for k in range(1, self.count + 1):
            if self.stopping.is_set():
                raise Stopped()
            downtimes.append(migrate_once(self.vm, k, log, self.hold,
                                          announce=self.announce))
            if k < self.count:
                self.pause(self.interval)
        if self.capture:
            time.sleep(2)           # the traffic after the last switch
            report_stalls(self.vm.name, *self.capture, downtimes, log)
        return True

    def lines(self) -> List[str]:
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read().splitlines()
        except OSError:
            return []
