#!/usr/bin/env python3
"""Live migration across releases: from a VM running the previous
release's QEMU build to this tree's build, in the middle of verified RDMA
traffic, then back (see docs/system/devices/rdma-session-releases.rst).

The previous release is the highest tag vX.Y.Z below VERSION with the same
major version (or --prev X.Y.Z).  Its QEMU is built, if it is not there
yet, from a git worktree of the tag (RS_PREV_BUILD/src) into its own build
directory (RS_PREV_BUILD, default $RS_BUILD/rel-X.Y.Z) by the tag's own
scripts/build-qemu.sh: a cold build, a few minutes on 2 cores.  The guests
are this tree's guest image (driver, provider): what changes between the
two runs is only the QEMU binary, so the device model and its migration
stream.

Two VMs on the multicast segment (scripts/launch-vms.sh -n 2, in-process)
both start on the previous release's QEMU.  VM 1 serves rping -V to VM 2,
is the client of VM 2's rping -V (rping checks every ping's data) and of
ib_write_bw (tests/guest/in-guest/cross-version-vm*.sh).  5 s into the
traffic VM 1 moves to a QEMU of this build (rstest.migration.migrate_once
with binary=; VM 2, its peer, stays on the previous release throughout
and records its netdev, from which the RDMA stall it saw is measured);
5 s later it is migrated back to a QEMU of the previous release.  That
reverse migration may be refused (a stream with a subsection the older
build does not know); then it must fail cleanly: the migration ends
"failed", the destination quits (QEMU 10.0 says "Failed to load
rdma-session:core ... load of migration failed: No such file or
directory" for a subsection it does not know), and the
source runs on with the traffic.  If it is accepted, VM 1 ends on the
previous release again.  Either way every program must pass on both sides.

Prints TAP and "# cross-version: N passed, N failed"; exits 0 if every
check passed.  The outcome of the reverse migration is a note, not a
check (either is allowed), except that a refusal must leave the source
running.

Usage: tests/guest/cross_version.py [--prev X.Y.Z] [extra QEMU arguments
  for every VM]
Environment: RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_NO_BUILD=1 (no
  build of this tree's QEMU; the previous release's is still built if it
  is missing), RS_PREV_BUILD, RS_PREV_QEMU and RS_NEW_QEMU (binaries to
  use instead of the previous release's and this build's, e.g. to try a
  change to the stream), RS_RPING_COUNT (default 60000),
  RS_WRITE_SECS (ib_write_bw's duration, default 40).
Logs: $RS_BUILD/test-logs/cross-version.XXXXXX (cross-version.last):
  launch.log (the launcher's output with the "migrate-vm: " lines) and
  vms/ (vm1/qemu-1.log: the destination of this build; vm1/qemu-2.log:
  the reverse destination).
"""

import os
import re
import subprocess
import sys
import time
from typing import List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest.suite import TOP, BUILD, Suite, guest_files  # noqa: E402

LAUNCH_PREFIX = "[launch-vms] "
QEMU = "qemu-system-x86_64"


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


def vtuple(v: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def this_version() -> str:
    with open(os.path.join(TOP, "VERSION")) as f:
        v = f.read().strip()
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", v):
        raise SystemExit("VERSION holds %r, not MAJOR.MINOR.PATCH" % v)
    return v


def previous(version: str) -> Optional[str]:
    """The highest release tag below version of the same major version."""
    out = subprocess.run(["git", "-C", TOP, "tag", "-l", "v*"],
                         stdout=subprocess.PIPE, text=True,
                         check=False).stdout.split()
    rel = [t[1:] for t in out if re.fullmatch(r"v[0-9]+\.[0-9]+\.[0-9]+", t)]
    rel = [r for r in rel if vtuple(r) < vtuple(version) and
           vtuple(r)[0] == vtuple(version)[0]]
    return max(rel, key=vtuple) if rel else None


def run_logged(argv: List[str], log: str, env=None) -> bool:
    with open(log, "a") as f:
        f.write("$ %s\n" % " ".join(argv))
        f.flush()
        return subprocess.call(argv, stdout=f, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, env=env) == 0


def prev_build(s: Suite, prev: str) -> Optional[str]:
    """The previous release's QEMU binary, built if missing."""
    given = os.environ.get("RS_PREV_QEMU")
    if given:
        s.report(os.access(given, os.X_OK), "previous-build %s (%s, "
                 "RS_PREV_QEMU)" % (prev, given), "not executable")
        return given if os.access(given, os.X_OK) else None
    bdir = os.environ.get("RS_PREV_BUILD") or os.path.join(BUILD,
                                                           "rel-" + prev)
    binary = os.path.join(bdir, "qemu", QEMU)
    if os.access(binary, os.X_OK):
        s.report(True, "previous-build %s (%s, there already)" % (prev,
                                                                  binary))
        return binary
    log = os.path.join(s.dir, "build-prev.log")
    src = os.path.join(bdir, "src")
    t0 = time.time()
    if not os.path.isdir(src) and not run_logged(
            ["git", "-C", TOP, "worktree", "add", "--detach", src,
             "v" + prev], log):
        s.report(False, "previous-build %s" % prev,
                 "git worktree add failed (see %s)" % log)
        return None
    env = dict(os.environ)
    env["RS_BUILD"] = bdir
    if not run_logged([os.path.join(src, "scripts", "build-qemu.sh"), QEMU],
                      log, env) or not os.access(binary, os.X_OK):
        s.report(False, "previous-build %s" % prev,
                 "scripts/build-qemu.sh of v%s failed (see %s)" % (prev, log))
        return None
    s.report(True, "previous-build %s (%s, built in %.0f s)" % (
        prev, binary, time.time() - t0))
    return binary


def this_build(s: Suite) -> Optional[str]:
    binary = os.environ.get("RS_NEW_QEMU") or os.path.join(BUILD, "qemu",
                                                            QEMU)
    if not os.environ.get("RS_NO_BUILD") and \
            not os.environ.get("RS_NEW_QEMU"):
        log = os.path.join(s.dir, "build.log")
        if not run_logged([os.path.join(TOP, "scripts", "build-qemu.sh"),
                           QEMU], log):
            s.report(False, "build", "scripts/build-qemu.sh failed (see %s)"
                     % log)
            return None
    if not os.access(binary, os.X_OK):
        s.report(False, "build", "no %s" % binary)
        return None
    return binary


def script(values, part: str) -> str:
    head = "".join("%s=%s\n" % (k, "'%s'" % v) for k, v in values)
    return head + guest_files("lib.sh", "migration-common.sh", part)


def cross_mover(old: str, new: str, versions: Tuple[str, str]):
    """A rstest.migration.Mover whose VM goes to a QEMU of new, then back
    to one of old (the reverse: accepted or cleanly refused)."""
    # pylint: disable=import-outside-toplevel
    from rstest import migration as mg

    class CrossMover(mg.Mover):
        def migrate(self, log) -> bool:
            vm = self.vm
            self.pause(self.after)
            downs = [mg.migrate_once(vm, 1, log, self.hold, binary=new)]
            log("%s #1: from %s (%s) to %s (%s)" % (
                vm.name, versions[0], old, versions[1], new))
            self.pause(self.interval)
            d = reverse(vm, 2, log)
            if d is not None:
                downs.append(d)
            if self.capture:
                time.sleep(2)
                mg.report_stalls(vm.name, *self.capture, downs, log)
            return True

    def reverse(vm, k: int, log) -> Optional[int]:
        """VM to a QEMU of old: its downtime if it moved; None if the
        destination refused the stream and the source runs on (else an
        exception)."""
        down = mg.migrate_once(vm, k, log, binary=old, may_refuse=True)
        log("%s reverse #%d: %s: from %s (%s) back to %s (%s)" % (
            vm.name, k, "refused" if down is None else "accepted",
            versions[1], new, versions[0], old))
        return down

    return CrossMover


def main(argv: List[str]) -> int:
    prev = None
    if argv[:1] == ["--prev"]:
        prev, argv = argv[1], argv[2:]
    s = Suite("cross-version")
    version = this_version()
    prev = prev or previous(version)
    if prev is None:
        s.skip("cross-version", "no release tag below %s of major version %s"
               % (version, version.split(".")[0]))
        return s.end()
    if os.environ.get("RS_NEW_QEMU"):
        version += " (RS_NEW_QEMU)"
    s.note("cross-version: from %s to %s and back" % (prev, version))
    old = prev_build(s, prev)
    new = this_build(s)
    if old is None or new is None:
        return s.end()

    # pylint: disable=import-outside-toplevel
    from rstest import launcher
    prepare = launcher.prepare

    def prepare_old(o):
        _, img = prepare(o)
        return old, img
    launcher.prepare = prepare_old
    launcher.Mover = cross_mover(old, new, (prev, version))

    count = env_int("RS_RPING_COUNT", 60000)
    secs = env_int("RS_WRITE_SECS", 40)
    values = [("count", count), ("secs", secs)]
    extra = ["--"] + argv if argv else []
    r = s.launch("launch", [
        "-q", "--no-build", "-n", "2", "--timeout", "600",
        "--migrate", "1@5x2",
        "--vm-cmd", "1", script(values, "cross-version-vm1.sh"),
        "--vm-cmd", "2", script(values, "cross-version-vm2.sh")] + extra,
        vms_dir=os.path.join(s.dir, "vms"))
    for ln in r.lines:
        if ln.startswith(LAUNCH_PREFIX + "migrate-vm:"):
            s.note(ln[len(LAUNCH_PREFIX):])
    fwd = r.first("migrate-vm: vm1 #1: total")
    s.report(fwd is not None, "migrate %s -> %s%s" % (
        prev, version, " (%s)" % fwd.split(": ", 2)[2] if fwd else ""),
        r.first("migrate-vm: FAIL") or "no migration line")
    rev = (r.first("migrate-vm: vm1 reverse #2: ") or "")
    s.report(bool(rev), "migrate %s -> %s (reverse) %s" % (
        version, prev, rev.split(": ", 2)[2] if rev else ""),
        r.first("migrate-vm: FAIL") or "no reverse line")
    stall = r.first("migrate-vm: vm1 #1: RDMA stall")
    if stall:
        s.note("peer's stall at the switch to %s: %s" % (
            version, stall.split(": ", 2)[2]))
    s.expect(r, ["1:rping-server", "1:rping-client", "1:write-bw-client",
                 "1:dmesg-clean", "2:rping-server", "2:rping-client",
                 "2:write-bw-server", "2:dmesg-clean"])
    for ln in r.lines:
        if re.match(r"\[vm[0-9]+\] CHECK ", ln):
            s.note(ln)
    mig = [ln for ln in r.lines if "CHECK migrations " in ln]
    if mig:
        s.note("vm1's driver heard of %s migration(s)" % mig[0].split()[-1])
    if "refused:" in rev and refused_only(r, os.path.join(s.dir, "vms")):
        s.report(True, "VMs ran and powered off (vm1's qemu-1.log has only "
                 "the source's word on the refused reverse migration)")
    else:
        s.launcher_check(r)
    return s.end()


def refused_only(r, vms: str) -> bool:
    """The launcher failed the run only because the source of the refused
    reverse migration (vm1's QEMU of this build, qemu-1.log) said so:
    every VM's command ended with status 0 and QEMU with status 0, and
    qemu-1.log holds nothing but QEMU's report of the refusal."""
    status = [ln for ln in r.lines if re.match(r"launch-vms: vm[0-9]+: "
                                               r"exit status ", ln)]
    if r.rc != 1 or not status or any(
            ln.startswith("[launch-vms] error:") for ln in r.lines):
        return False
    for ln in status:
        if not (ln.endswith(": exit status 0") or ln.startswith(
                "launch-vms: vm1: exit status 0, QEMU: see qemu-*.log")):
            return False
    try:
        with open(os.path.join(vms, "vm1", "qemu-1.log"),
                  errors="replace") as f:
            said = [ln for ln in f.read().splitlines() if ln.strip()]
    except OSError:
        return False
    return bool(said) and all("Sibling indicated error" in ln for ln in said)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
