#!/usr/bin/env python3
"""The guest stack, as TAP: two launcher runs (rstest).  Two VMs with the
adapter on one segment: in each, the module is bound and the kernel log is
clean, eth0 is the adapter's with its MAC and carrier, the VMs ping each
other, ibv_devices/ibv_devinfo show rsess0 ACTIVE on Ethernet, the port has
the RoCE v2 GID of its address, rdma link/resource work, every perftest
program, rping and ibv_*_pingpong start, and ibv_uc_pingpong,
ibv_srq_pingpong and ib_atomic_bw run between the VMs.  Then one VM on
-netdev user: a DHCP lease and the slirp gateway, and rmmod/modprobe while
ibv_rc_pingpong holds a context.  One test per check and per run (the VMs
ran and powered off cleanly).  The guest-side scripts are
tests/guest/in-guest/*.sh.

Usage: tests/guest/guest_stack.py [--list] [--repeat N] [NAME...]
  (rstest/select.py: tests RUN/CHECK/vmN and RUN/launch-vms, RUN pair or
  user; only the runs the selection needs boot)
Environment: RS_BUILD; RS_NO_BUILD=1 is implied (the build comes first).
Logs: $RS_BUILD/test-logs/guest-stack.XXXXXX (guest-stack.last): each
run's launcher output NAME.log and VM directory vms-NAME, and every CHECK
line in checks.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import checks, select  # noqa: E402
from rstest.suite import Suite, guest_files  # noqa: E402

PAIR_CHECKS = ["module-load", "netdev", "ping", "ibv-devices", "ibv-devinfo",
               "gid-rocev2", "rdma-link", "rdma-resource", "perftest-start",
               "uc-pingpong", "srq-pingpong", "atomic-bw", "dmesg-clean"]
USER_CHECKS = ["module-load", "dhcp-gateway", "reload-with-context",
               "dmesg-clean"]


def gs_run(s: Suite, name: str, expect, argv) -> None:
    """One launcher run: a test per expected check and one for the run."""
    r = s.launch(name, ["-q", "--no-build"] + argv,
                 vms_dir=os.path.join(s.dir, "vms-" + name))
    s.expect(r, expect, prefix=name + "/")
    s.launcher_check(r, name)
    with open(os.path.join(s.dir, "checks"), "a") as f:
        f.writelines(ln + "\n" for ln in r.lines if checks.LINE_RE.match(ln))


# The runs: their checks (VM, CHECK) and launcher arguments.
RUNS = {
    "pair": ([(v, c) for v in (1, 2) for c in PAIR_CHECKS],
             ["-n", "2", "--timeout", "300", "--cmd",
              ("lib.sh", "stack-module.sh", "stack-pair.sh")]),
    "user": ([(1, c) for c in USER_CHECKS],
             ["-n", "1", "--netdev-user", "--timeout", "120", "--cmd",
              ("lib.sh", "stack-module.sh", "stack-user.sh")]),
}


def catalog():
    """The units (rstest/select.py): the runs, with their tests."""
    return {name: ["%s/%s/vm%d" % (name, c, v) for v, c in want] +
            [name + "/launch-vms"] for name, (want, _) in RUNS.items()}


def run(s: Suite, units) -> None:
    for name in units:
        want, argv = RUNS[name]
        gs_run(s, name, want, argv[:-1] + [guest_files(*argv[-1])])


if __name__ == "__main__":
    sys.exit(select.main("guest-stack", catalog(), run, sys.argv[1:],
                         __doc__))
