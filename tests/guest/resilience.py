#!/usr/bin/env python3
"""Resets and unloads in the middle of RDMA traffic, between two VMs with
the adapter (a launcher run of rstest, -n 2, in the background), in one
boot:
  1. system reset: VM 2 serves ib_write_bw (-D 30), VM 1 is the client.
     Once VM 1's QP is in RTS and traffic runs ("RESIL reset-now" on its
     console), this program resets VM 2 through QMP (set-action
     reboot=reset, then system_reset: the launcher's -no-reboot would
     otherwise end QEMU).  VM 1's ib_write_bw must end with "Failed status
     12" (transport retry counter exceeded) and a non-zero exit status,
     and VM 1's kernel log must stay clean; VM 2's QEMU must keep running
     (query-status) and its guest boot again to "ready"; this program then
     sends it its second command over the control port ("go BASE64").
  2. VM 1 and the rebooted VM 2 run ibv_rc_pingpong -c (data checked).
  3. module unload: VM 1 serves ib_write_bw (-D 30), VM 2 is the client;
     while traffic runs VM 1 does rmmod rdma_session, which must succeed
     (the driver disassociates the server's context); VM 2's ib_write_bw
     must end with "Failed status 12"; modprobe rdma_session in VM 1
     brings rsess0 back ACTIVE with its RoCE v2 GID.
  4. VM 1 and VM 2 run ib_write_bw again, the same pair of VMs.
  5. function level reset: VM 1 serves ib_write_bw again and, while
     traffic runs, resets its adapter through sysfs ("reset": FLR); the
     driver goes down before and comes back after it, rsess0 must be
     ACTIVE again; VM 2's ib_write_bw must end with "Failed status 12".
  6. VM 1 and VM 2 run ib_write_bw again after the FLR.
  At the end both kernel logs must have no WARNING/BUG/Oops/call trace/
  hung task, and both QEMUs must power off cleanly.
The guests print "CHECK <name> ok|fail <detail>" lines (the scripts
tests/guest/in-guest/resilience-*.sh); this program adds its own (the
reset, QEMU alive, the reboot) and prints all of them as TAP ("ok"/"not
ok") and "# resilience: N passed, N failed".  The launcher's output goes
to stderr too.  Exits 0 if every check passed.

Usage: tests/guest/resilience.py [--list] [--repeat N] [NAME...]
  (rstest/select.py: the one boot runs whatever is selected; only the
  selected tests are reported)
Environment: RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_NO_BUILD=1
  (do not build QEMU first), RS_VMS_LOGDIR (default: vms in the log
  directory).
Logs: $RS_BUILD/test-logs/resilience.XXXXXX (resilience.last): the
launcher's output in launch.log, the VMs' run directory vms.
"""

import base64
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import console, select  # noqa: E402
from rstest.suite import Suite, guest_files, qmp  # noqa: E402

VM_CHECKS = ["1:reset-peer-retry-exceeded", "1:reset-peer-dmesg-clean",
             "1:reset-traffic-again", "2:reset-traffic-again",
             "1:rmmod-during-traffic", "2:rmmod-peer-retry-exceeded",
             "1:modprobe-port-active", "1:rmmod-traffic-again",
             "2:rmmod-traffic-again", "1:flr-during-traffic",
             "2:flr-peer-retry-exceeded", "1:flr-traffic-again",
             "2:flr-traffic-again", "1:dmesg-clean", "2:dmesg-clean"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cmd2(vm2: str, common: str, vm2b: str) -> str:
    """VM 2's second command: the first one's preamble up to its RS_IFACE=
    line (the launcher's variables and functions), then common and
    vm2b."""
    head = []
    with open(os.path.join(vm2, "cmd.sh")) as f:
        for ln in f:
            head.append(ln)
            if ln.startswith("RS_IFACE="):
                break
    return "".join(head) + "%s\n%s\n" % (common, vm2b)


def reset_vm2(s: Suite, bg, run: str, common: str, host) -> None:
    """Step 1's host side: reset VM 2 once VM 1's traffic runs, wait for
    the reboot, check its QEMU, send it the rest of its steps."""
    vm1 = os.path.join(run, "vm1")
    vm2 = os.path.join(run, "vm2")
    sock = os.path.join(vm2, "qmp.sock")

    def said(path, prefix):
        return next((ln for ln in console.lines(path)
                     if ln.startswith(prefix)), None)

    def readies() -> int:
        return console.readies(console.read(os.path.join(vm2, "serial.log")))

    if not bg.wait_for(200, lambda: said(os.path.join(vm1, "serial.log"),
                                         "RESIL reset-now") is not None):
        host("qmp-system-reset", False, "VM 1 never said its traffic runs: %s"
             % (said(os.path.join(vm1, "serial.log"), "RESIL") or ""))
        host("reset-vm-boots-again", False, "not checked: no reset")
        host("reset-qemu-alive", False, "not checked: no reset")
        bg.stop()
        return
    with open(os.path.join(vm2, "pid")) as f:
        qpid = int(f.read().strip() or 0)
    treset = time.time()
    ok, r = qmp(sock, [("set-action", {"reboot": "reset"}),
                       ("system_reset", None)])
    text = " ".join(json.dumps(x) if ok else str(x) for x in r)
    host("qmp-system-reset", ok,
         "set-action reboot=reset, system_reset: %s" % text if ok else text)
    if not bg.wait_for(120, lambda: readies() >= 2):
        host("reset-vm-boots-again", False,
             "%d 'rs-init: ready' in vm2's console; QEMU %s" % (
                 readies(), "runs" if alive(qpid) else "gone"))
        host("reset-qemu-alive", False, "not checked: no reboot")
        return
    host("reset-vm-boots-again", True,
         "rs-init: ready again %d s after the reset, %d s into the run" % (
             time.time() - treset, treset - s.t0))
    ok, r = qmp(sock, [("query-status", None)])
    st = json.dumps(r[0]) if ok else " ".join(str(x) for x in r)
    if alive(qpid) and ok and r[0].get("status") == "running":
        host("reset-qemu-alive", True, "pid %d, %s" % (qpid, st))
    else:
        host("reset-qemu-alive", False, "pid %d: %s, query-status: %s" % (
            qpid, "runs" if alive(qpid) else "gone", st))
    # its /init waits for a command again: the rest of the steps
    script = cmd2(vm2, common, guest_files("resilience-vm2b.sh"))
    with open(os.path.join(vm2, "cmd2.sh"), "w") as f:
        f.write(script)
    fd = os.open(os.path.join(vm2, "ctl.in"), os.O_RDWR)
    try:
        os.write(fd, b"go " + base64.b64encode(script.encode()) + b"\n")
    finally:
        os.close(fd)


# What this program checks itself (reset_vm2), as tests "host/NAME".
HOST = ["qmp-system-reset", "reset-vm-boots-again", "reset-qemu-alive"]


def names():
    """Every test, in order (rstest/select.py)."""
    return (["host/" + h for h in HOST] +
            ["%s/vm%s" % (c.split(":")[1], c.split(":")[0])
             for c in VM_CHECKS] + ["launch-vms"])


def run_all(s: Suite, _units=None) -> None:
    """The boot (rstest/select.py's run)."""
    run = os.environ.get("RS_VMS_LOGDIR") or os.path.join(s.dir, "vms")
    common = guest_files("resilience-common.sh")
    hosts = []

    def host(name, ok, detail=""):
        hosts.append((name, ok, detail))

    with s.start("launch", [
            "-q", "-n", "2", "--timeout", "300",
            "--vm-cmd", "1", "%s\n%s" % (common,
                                         guest_files("resilience-vm1.sh")),
            "--vm-cmd", "2", "%s\n%s" % (common,
                                         guest_files("resilience-vm2a.sh"))],
            vms_dir=run) as bg:
        reset_vm2(s, bg, run, common, host)
        r = bg.wait()
    sys.stderr.write("".join(ln + "\n" for ln in r.lines))
    sys.stderr.flush()
    for name, ok, detail in hosts:
        s.tap("ok" if ok else "fail", "host/" + name, detail)
    s.expect(r, VM_CHECKS)
    s.launcher_check(r)


def main() -> int:
    # (the launcher tears its VMs down when this program is stopped)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *a: sys.exit(130))
    return select.main("resilience", {("boot",): names()}, run_all,
                       sys.argv[1:], __doc__)


if __name__ == "__main__":
    sys.exit(main())
