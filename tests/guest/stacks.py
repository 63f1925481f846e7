#!/usr/bin/env python3
"""The RDMA stacks users run, in Debian guests with the adapter's driver
and provider installed as packages (rstest/distro.py), as named tests.

Two pairings, each booted once for its tests (2 vCPUs per VM, MTTCG):
  AdapterPair      two VMs with the adapter, on the multicast segment
  AdapterSoftRoce  VM 1 with the adapter, VM 2 with Linux soft-RoCE
                   (rxe0 on virtio-net), on a stream segment (no frame
                   lost to the soft-RoCE VM's slower receive)
VM 1 is the server side of each stack (NFS server, iSCSI and NVMe-oF
target, mpirun's first host), VM 2 the client.

The stacks (each a mixin of test methods, tests/guest/stacks_*.py):
  stacks_base     the packages: DKMS built the module, udev loaded it at
                  boot, rdma link and ibv_devinfo show the device through
                  Debian's libibverbs; two posting processes on two CPUs
  stacks_ucx      UCX: ucx_info, ucx_perftest over rc_verbs, ud_verbs
                  and UCP
  stacks_mpi      Open MPI over UCX launched over ssh; libfabric
  stacks_storage  NFS over RDMA, iSER, NVMe-oF

And OwnSoftware.test_share: examples/own-software run by the launcher
with --share, as the README shows it.  SoftRocePair (two soft-RoCE VMs,
UCX and MPI: the figures to compare with) runs only when named.

The test command runs a short variant: every test on AdapterPair and
OwnSoftware, and on AdapterSoftRoce only what soft-RoCE interoperation
needs most, UCX and Open MPI over UCX (this release's stacks) and the
packages' check (the pairing's own setup, 4 s); AdapterSoftRoce's other
tests (iSER, libfabric, NFS, NVMe-oF, two CPUs: about 2 of the suite's
10 minutes) are reported as skipped, which counts neither as passed nor
as failed.  RS_STACKS_ALL=1 runs every test on every pairing (the
complete suite, by hand or in a longer CI job); a test named on the
command line always runs.

Usage: tests/guest/stacks.py [--list] [CLASS[.test_METHOD]...]
       (default: the short variant, or all with RS_STACKS_ALL=1)
  e.g. tests/guest/stacks.py AdapterPair.test_nfs_rdma
       RS_STACKS_ALL=1 tests/guest/stacks.py   (every test)
       tests/guest/stacks.py --list   (the names; "# SKIP" on those the
       short variant leaves out)
       tests/guest/stacks.py --prepare   (build the image, install the
       packages: what the first test would do)
Environment: RS_BUILD; RS_STACKS_ALL=1 every test on every pairing;
  RS_STACKS_FULL=1 that and the long variants (more data, longer runs:
  by hand, not in the test command).
Output: TAP; figures as "# " lines.  Logs: $RS_BUILD/test-logs/stacks.*
(stacks.last): per class the VMs' run directory and per test the
scripts and their outputs.
"""

import contextlib
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("RS_SUITE_NAME", "stacks")
# pylint: disable=wrong-import-position
from rstest import distro, launcher  # noqa: E402
from stacks_base import BaseTests  # noqa: E402
from stacks_ucx import UcxTests  # noqa: E402
from stacks_mpi import MpiTests  # noqa: E402
from stacks_storage import StorageTests  # noqa: E402


class AdapterPair(BaseTests, UcxTests, MpiTests, StorageTests,
                  distro.PairTest):
    """Two VMs with the adapter."""
    ARGS = ["-n", "2"]


class AdapterSoftRoce(BaseTests, UcxTests, MpiTests, StorageTests,
                      distro.PairTest):
    """VM 1 with the adapter, VM 2 with soft-RoCE."""
    ARGS = ["-n", "2", "--soft-roce-vm", "2", "--stream"]
    # The short variant (the test command): UCX and MPI against soft-RoCE,
    # and the packages' check; every test with RS_STACKS_ALL=1.
    SHORT = ("test_packages", "test_ucx_info", "test_ucx_perftest",
             "test_mpi")


class SoftRocePair(UcxTests, MpiTests, distro.PairTest):
    """Two soft-RoCE VMs: the figures to compare the adapter's with (run
    only when named)."""
    ARGS = ["-n", "2", "--soft-roce", "--stream"]
    BY_HAND = True


class OwnSoftware(unittest.TestCase):
    """A CI job's own RDMA test as the README shows it: the launcher
    shares examples/own-software into two Debian guests, each builds
    rdma_hello there and runs it, and the results come back."""

    def test_share(self):
        """launch-vms.sh --distro -n 2 --share DIR --cmd '. ./run.sh':
        exit status 0, each VM's log in DIR/out with every byte checked
        on the adapter's device."""
        share = os.path.join(distro.PairTest.logdir(), "own-software")
        shutil.copytree(os.path.join(distro.TOP, "examples", "own-software"),
                        share)
        log = os.path.join(distro.PairTest.logdir(), "own-software.log")
        with open(log, "w") as f, contextlib.redirect_stdout(f), \
                contextlib.redirect_stderr(f):
            o = launcher.parse(["--distro", "--no-build", "-n", "2",
                                "--boot-timeout", "400", "--timeout", "300",
                                "--share", share, "--cmd", ". ./run.sh"])
            rc = launcher.run(o, os.path.join(distro.PairTest.logdir(),
                                              "own-software-vms"))
        with open(log) as f:
            out = f.read()
        self.assertEqual(rc, 0, out[-3000:])
        for i, role in ((1, "server"), (2, "client")):
            with open(os.path.join(share, "out", "vm%d.log" % i)) as f:
                got = f.read()
            self.assertRegex(got, r"rdma_hello %s: 100 messages of 65536 "
                             r"bytes, 0 bad bytes, device roce" % role)


def full_env() -> str:
    """The variable that selects every test (RS_STACKS_FULL, the long
    variants, implies it)."""
    if os.environ.get("RS_STACKS_FULL") == "1":
        os.environ["RS_STACKS_ALL"] = "1"
    return "RS_STACKS_ALL"


if __name__ == "__main__":
    sys.exit(distro.main(full_env()))
