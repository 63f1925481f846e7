#!/usr/bin/env python3
"""Kernel RDMA consumer test: NVMe over Fabrics over RDMA between two VMs
with the adapter (a launcher run of rstest, -n 2).

VM 1 is the target: nvmet + nvmet-rdma configured through configfs, one
namespace on a brd RAM disk (/dev/ram0, 32 MiB), port 4420 on its
address.  VM 2 is the host: nvme-rdma connects through /dev/nvme-fabrics,
then
  - writes 1 MiB of random data with 64 KiB requests (fast-registration
    MRs, the target RDMA READs them) and reads it back with 4 KiB
    requests (the target RDMA WRITEs, SEND with invalidate), comparing;
  - writes 1 MiB more at offset 1 MiB with 4 KiB requests (in-capsule
    data) and reads it back with 64 KiB requests, comparing;
  all with O_DIRECT, one request at a time: the multicast segment of
  launch-vms.sh loses frames in bursts of more than about 90 (see the
  user guide), and an RDMA READ of 64 KiB is 64 response packets;
  - over those two checks, reads the adapter's counters (rdma statistic):
    the kernel QPs must take WQEs from their doorbell records
    (db_record_pickups > 0) and ring fewer MMIO doorbells than they
    exchange messages (two per I/O: the command and its response); the
    figures are in the check's detail;
  - disconnects, then sends the MD5 of what it wrote to VM 1 (busybox
    nc), which compares it with its RAM disk's first 2 MiB.
With --migrate, both VMs are live-migrated while the host verifies I/O:
the target 8 s after the commands start, the host 22 s after; between
the two checks above and the disconnect the host writes 256 KiB of
random data in 64 KiB requests at rotating offsets from 2 MiB and reads
it back in 4 KiB requests, comparing, round after round until 5 s after
its own migration; any I/O error or difference fails it.
The guests print "CHECK <name> ok|fail <detail>" lines; this program
prints them as TAP ("ok"/"not ok"; with --migrate also "vmI migrated" and
each migration's RDMA stall as a "# migrate-vm: " note, which
tests/guest/migration.py reads) and "# nvmf: N passed, N failed".  The
launcher's output goes to stderr too.  Exits 0 if every check passed.

With --overlay too, the VMs are on hosts joined by a VXLAN overlay
(launch-vms.sh --overlay: VM 1 on host 1, VM 2 on host 3) and each
migration goes to another host.

Usage: tests/guest/nvmf.py [--migrate [--overlay]] [--list] [--repeat N]
  [NAME...]   (rstest/select.py: the one boot runs whatever is selected;
  only the selected tests are reported)
Environment: RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_NO_BUILD=1
  (do not build QEMU first), RS_VMS_LOGDIR, RS_NVMF_TIMEOUT (seconds for
  the guest commands, default 300).
Logs: $RS_BUILD/test-logs/nvmf.XXXXXX (nvmf.last): the launcher's output
in nvmf.log.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import select  # noqa: E402
from rstest.suite import Suite, guest_files  # noqa: E402

STALL_PREFIX = "[launch-vms] migrate-vm: "


GUEST = ["1:nvmf-target", "1:nvmf-target-data", "1:dmesg-clean",
         "2:nvmf-connect", "2:nvmf-io-64k", "2:nvmf-io-4k",
         "2:nvmf-dbrec", "2:nvmf-disconnect", "2:dmesg-clean"]
GUEST_MIG = ["1:migration-notice", "2:nvmf-io-migrating",
             "2:migration-notice"]


def names(mig: bool):
    """Every test, in order (rstest/select.py)."""
    return ["%s/vm%s" % (c.split(":")[1], c.split(":")[0])
            for c in GUEST + (GUEST_MIG if mig else [])] + (
        ["migrated/vm1", "migrated/vm2"] if mig else []) + ["launch-vms"]


def run(s: Suite, argv) -> None:
    """The boot (argv: --migrate [--overlay] or nothing)."""
    mig = 1 if argv else 0
    common = guest_files("nvmf-common.sh")
    margs = ["--migrate", "1@8", "--migrate", "2@22"] if mig else []
    margs += argv[1:]
    r = s.launch("nvmf", ["-q", "-n", "2", "--timeout",
                          os.environ.get("RS_NVMF_TIMEOUT", "300")] + margs +
                 ["--vm-cmd", "1", "mig=%d\n%s\n%s" % (
                     mig, common, guest_files("nvmf-target.sh")),
                  "--vm-cmd", "2", "mig=%d\n%s\n%s" % (
                      mig, common, guest_files("nvmf-host.sh"))])
    sys.stderr.write("".join(ln + "\n" for ln in r.lines))
    sys.stderr.flush()
    s.expect(r, GUEST)
    if mig:
        s.expect(r, GUEST_MIG)
        for v in (1, 2):
            line = r.first("migrate-vm: vm%d #1: total" % v)
            if line is not None:
                s.tap("ok", "migrated/vm%d" % v, line.split("#1: ", 1)[1])
            else:
                s.report(False, "migrated/vm%d" % v,
                         r.first("migrate-vm: FAIL") or "")
        for ln in r.lines:
            if ln.startswith(STALL_PREFIX) and "RDMA stall" in ln:
                s.note(ln[len("[launch-vms] "):])
    s.launcher_check(r)


def main(argv) -> int:
    mine = []
    while argv[:1] in (["--migrate"], ["--overlay"]):
        mine.append(argv.pop(0))
    if mine not in ([], ["--migrate"], ["--migrate", "--overlay"]):
        print("usage: %s [--migrate [--overlay]] [--list] [--repeat N] "
              "[NAME...]" % sys.argv[0], file=sys.stderr)
        return 2
    return select.main("nvmf", {("boot",): names(bool(mine))},
                       lambda s, _units: run(s, mine), argv, __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
