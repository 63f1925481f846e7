#!/usr/bin/env python3
"""UCX and Open MPI between two VMs, as a user runs them with Debian
bookworm's packages (ucx-utils/libucx0 1.13, openmpi-bin/libopenmpi3
4.1.4 with the UCX PML), as TAP.

One boot (a launcher run of rstest) per pairing:
  adapter-adapter  two VMs with the adapter: UCX's defaults on both
  adapter-rxe      VM 1 with the adapter (UCX's defaults), VM 2 with
                   Linux soft-RoCE (UCX_UD_ETH_DGID_CHECK=n, see
                   tests/guest/in-guest/ucx-common.sh), on a stream
                   segment (--stream, see PAIRINGS)
The guest image is the base one with the UCX/Open MPI overlay
(RS_GUEST_OVERLAY=ucx, scripts/guest-overlay-ucx.sh).  Each VM runs
lib.sh, ucx-common.sh, then (tests/guest/in-guest/):
  ucx-info.sh  ucx_info -d and ompi_info: every UCX module and Open MPI
               component loads, rc_verbs and ud_verbs on the device
  ucx-perf.sh  ucx_perftest, VM 1 the client: UCT over rc_verbs (put_bw,
               get_bw, put_lat, am_lat) and ud_verbs (am_lat, am_bw), UCP
               (tag_bw, tag_lat, ucp_put_bw); a check per test on each
               VM, the client's with its bandwidth or latency
  ucx-mpi.sh   mpirun from VM 1, one rank per VM, the UCX PML and OSC:
               tests/guest/mpi/rs-mpi-check.c checks point-to-point
               (eager and rendezvous), collective and one-sided data; the
               ranks must have selected pml ucx and used verbs on their
               RDMA device, no TCP
and the kernel log check.  The figures (ucx_perftest's, rs-mpi-check's
ping-pong) are listed as TAP notes ("# ") at the end.

  rxe-rxe          (only when named) two soft-RoCE VMs on a stream
                   segment, UCX_UD_ETH_DGID_CHECK=n on both: the
                   figures to compare with

Usage: tests/guest/ucx.py [PAIRING...]   (default: the first two)
Environment: RS_BUILD; RS_NO_BUILD=1 is implied (the build comes first);
  RS_UCX_ADAPTER_ENV: UCX variables for the adapter VMs, e.g.
  "UCX_UD_ETH_DGID_CHECK=n" (debugging only: the suite's verdict is with
  UCX's defaults).
Logs: $RS_BUILD/test-logs/ucx.XXXXXX (ucx.last): each pairing's launcher
output PAIRING.log and VM directory vms-PAIRING.
"""

import os
import re
import shlex
import sys
from typing import Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest.suite import Suite, guest_files  # noqa: E402

PAIRINGS = {
    "adapter-adapter": ["-n", "2"],
    # A stream segment: the multicast segment loses the frames the
    # soft-RoCE VM does not take in time, such as the 1024 responses the
    # adapter sends at once to soft-RoCE's RDMA READ of a 1 MiB
    # rendezvous, and soft-RoCE retries its READ after UCX's RC timeout
    # (UCX_RC_TIMEOUT, 1 s): minutes for the MPI job instead of seconds
    # (docs/system/devices/rdma-session.rst, "UCX and Open MPI").
    "adapter-rxe": ["-n", "2", "--soft-roce-vm", "2", "--stream"],
    # Not run by default: the same between two soft-RoCE VMs, the figures
    # to compare the adapter's with.
    "rxe-rxe": ["-n", "2", "--soft-roce", "--stream"],
}
DEFAULT = ["adapter-adapter", "adapter-rxe"]

# ucx-perf.sh's tests, in its order: (name, what it measures)
PERF = [("uct-rc-put-bw", "bw"), ("uct-rc-get-bw", "bw"),
        ("uct-rc-put-lat", "lat"), ("uct-rc-am-lat", "lat"),
        ("uct-ud-am-lat", "lat"), ("uct-ud-am-bw", "bw"),
        ("ucp-tag-bw", "bw"), ("ucp-tag-lat", "lat"),
        ("ucp-put-bw", "bw")]
INFO = ["ucx-info", "ompi-info"]
MPI_PROG = ["mpi-ranks", "mpi-send-recv", "mpi-exchange", "mpi-collectives",
            "mpi-rma", "mpi-finalize"]
MPI_VM1 = ["mpirun", "mpi-pml-ucx", "mpi-ucx-lanes", "mpi-plugins"]


def wanted(pairing: str) -> Dict[int, List[str]]:
    """Each VM's checks, in the order the guests print them."""
    names = [p[0] for p in PERF]
    return {1: INFO + names + MPI_PROG + MPI_VM1 + ["dmesg-clean"],
            2: INFO + names + ["dmesg-clean"]}


PERF_RE = re.compile(r"^\[vm1\] UCX-PERF (\S+) (\S+) (.*)$")
MPI_PERF_RE = re.compile(r"^\[vm1\] MPI-PERF (\S+) (\S+) (\S+)$")


def figures(lines: List[str]) -> List[str]:
    """The run's figures: "PAIRING NAME: ..." per ucx_perftest test and
    for rs-mpi-check's ping-pong."""
    out = []
    pairing = ""
    for ln in lines:
        m = PERF_RE.match(ln)
        if m:
            pairing = m.group(1)
            kv = dict(x.split("=", 1) for x in m.group(3).split()
                      if "=" in x)
            if "bw_mbs" in kv:
                fig = "%8s MB/s  %s msg/s" % (kv["bw_mbs"],
                                             kv.get("msgrate", "?"))
            else:
                fig = "%8s us average, medians per second %s us" % (
                    kv.get("lat_avg_us", "?"), kv.get("p50_us", "?"))
            out.append("%-16s %-15s %s (%s s)" % (
                m.group(1), m.group(2), fig, kv.get("secs", "?")))
            continue
        m = MPI_PERF_RE.match(ln)
        if m:
            out.append("%-16s mpi-%-26s %8s %s" % (
                pairing, m.group(1), m.group(2), m.group(3)))
    return out


def main(argv) -> int:
    unknown = [a for a in argv if a not in PAIRINGS]
    if unknown:
        print("usage: %s [%s]..." % (sys.argv[0], "|".join(PAIRINGS)),
              file=sys.stderr)
        return 2
    # The base image with the UCX/Open MPI overlay appended
    # (scripts/guest-image.sh runs scripts/guest-overlay-ucx.sh).
    os.environ["RS_GUEST_OVERLAY"] = " ".join(
        sorted(set(os.environ.get("RS_GUEST_OVERLAY", "").split()) |
               {"ucx"}))
    adapter_env = os.environ.get("RS_UCX_ADAPTER_ENV", "")
    s = Suite("ucx")
    if adapter_env:
        s.note("RS_UCX_ADAPTER_ENV=%s: the adapters do not run with UCX's "
               "defaults" % adapter_env)
    figs: List[str] = []
    for pairing in argv or DEFAULT:
        peer_soft = "--soft-roce-vm" in PAIRINGS[pairing] or \
            "--soft-roce" in PAIRINGS[pairing]
        head = "UC_PAIRING=%s UC_PEER_SOFT=%d UC_ADAPTER_ENV=%s\n" % (
            pairing, peer_soft, shlex.quote(adapter_env))
        script = head + guest_files("lib.sh", "ucx-common.sh", "ucx-info.sh",
                                    "ucx-perf.sh", "ucx-mpi.sh") + \
            "\nuc_end\n"
        vms = os.path.join(s.dir, "vms-" + pairing)
        r = s.launch(pairing, ["-q", "--no-build", "--timeout", "300"] +
                     PAIRINGS[pairing] + ["--cmd", script], vms)
        sys.stderr.write("".join(ln + "\n" for ln in r.lines))
        sys.stderr.flush()
        for vm, names in wanted(pairing).items():
            for n in names:
                name = "%s/%s" % (pairing, n)
                c = r.found.get((vm, name))
                if c is None:
                    s.report(False, "vm%d %s" % (vm, name),
                             "no result (see %s)" % r.path)
                else:
                    s.tap(c.result, "vm%d %s" % (vm, name), c.detail)
        s.launcher_check(r, pairing)
        figs += figures(r.lines)
    if figs:
        s.note("ucx_perftest (VM 1 the client; UCX's MB/s are MiB/s; "
               "latency one way, half the round trip):")
        for f in figs:
            s.note("  " + f)
    return s.end()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
