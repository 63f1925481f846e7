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

Usage: tests/guest/stacks.py [CLASS[.test_METHOD]...]   (default: all)
  e.g. tests/guest/stacks.py AdapterPair.test_nfs_rdma
Environment: RS_BUILD; RS_STACKS_FULL=1 the long variants (more data,
  longer runs: by hand, not in the test command).
Output: TAP; figures as "# " lines.  Logs: $RS_BUILD/test-logs/stacks.*
(stacks.last): per class the VMs' run directory and per test the
scripts and their outputs.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("RS_SUITE_NAME", "stacks")
# pylint: disable=wrong-import-position
from rstest import distro  # noqa: E402
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


if __name__ == "__main__":
    sys.exit(distro.main())
