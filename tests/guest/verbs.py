#!/usr/bin/env python3
"""Verbs a soft-RoCE user relies on, between VMs, as TAP: the programs of
tests/guest/progs (rsv-*, in the guest image's /usr/bin) run through the
guest driver and rdma-core's provider, with their data checked.

One boot (a launcher run of rstest) per pairing that has features:
  adapter-adapter  two VMs with the adapter
  adapter-rxe      VM 1 with the adapter, VM 2 with Linux soft-RoCE
  three            three VMs with the adapter (multicast)
Every VM of a boot runs lib.sh, verbs-common.sh, then the guest script
of each feature of FEATURES that lists the pairing (tests/guest/in-guest/
verbs-FEATURE.sh) in the table's order, and verbs-end.sh (the kernel
log); a feature script runs its programs with vb_pair (see
verbs-common.sh), which names their checks "PAIRING/FEATURE/CHECK".

To add a feature: write tests/guest/progs/rsv-FEATURE.c (rsv-common.h
says how), tests/guest/in-guest/verbs-FEATURE.sh, and a FEATURES entry:
(script, pairings, {VM: [checks of that VM]}); a check that does not come
fails as "no result".

Usage: tests/guest/verbs.py [FEATURE...]   (default: all)
Environment: RS_BUILD; RS_NO_BUILD=1 is implied (the build comes first).
Logs: $RS_BUILD/test-logs/verbs.XXXXXX (verbs.last): each pairing's
launcher output PAIRING.log and VM directory vms-PAIRING, and every CHECK
line in checks.
"""

import os
import sys
from typing import Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import checks  # noqa: E402
from rstest.suite import Suite, guest_files  # noqa: E402

PAIRINGS = {
    "adapter-adapter": ["-n", "2"],
    "adapter-rxe": ["-n", "2", "--soft-roce-vm", "2"],
    "three": ["-n", "3"],
}

TWO = ("adapter-adapter", "adapter-rxe")

# (feature, pairings, {VM: [checks]})
FEATURES: List[Tuple[str, Tuple[str, ...], Dict[int, List[str]]]] = [
    ("rc", TWO, {1: ["rc-connect", "rc-send"],
                 2: ["rc-connect", "rc-write-read"]}),
    ("mcast", ("three",), {1: ["devinfo", "ud-send", "mckey-send"],
                           2: ["devinfo", "ud-attach", "ud-recv",
                               "ud-detach", "mckey-recv"],
                           3: ["devinfo", "ud-attach", "ud-recv",
                               "ud-detach", "mckey-recv"]}),
    ("mcast-rxe", ("adapter-rxe",), {
        1: ["a2r-send", "r2a-attach", "r2a-recv", "r2a-detach",
            "mckey-a2r-send", "mckey-r2a-recv"],
        2: ["a2r-attach", "a2r-recv", "a2r-detach", "r2a-send",
            "mckey-a2r-recv", "mckey-r2a-send"]}),
]


def main(argv: List[str]) -> int:
    names = [f[0] for f in FEATURES]
    for a in argv:
        if a not in names:
            print("usage: %s [%s]..." % (sys.argv[0], "|".join(names)),
                  file=sys.stderr)
            return 2
    s = Suite("verbs")
    for pairing, args in PAIRINGS.items():
        feats = [f for f in FEATURES
                 if pairing in f[1] and (not argv or f[0] in argv)]
        if not feats:
            continue
        nvm = int(args[args.index("-n") + 1])
        script = "VB_PAIRING=%s\n%s" % (pairing, guest_files(
            "lib.sh", "verbs-common.sh",
            *["verbs-%s.sh" % f[0] for f in feats], "verbs-end.sh"))
        r = s.launch(pairing, ["-q", "--no-build", "--timeout", "600"] +
                     args + ["--cmd", script],
                     vms_dir=os.path.join(s.dir, "vms-" + pairing))
        want = [(vm, "%s/%s/%s" % (pairing, f[0], c))
                for f in feats for vm, cks in sorted(f[2].items())
                for c in cks]
        want += [(vm, "%s/dmesg-clean" % pairing)
                 for vm in range(1, nvm + 1)]
        s.expect(r, want)
        s.launcher_check(r, pairing)
        with open(os.path.join(s.dir, "checks"), "a") as f:
            f.writelines(ln + "\n" for ln in r.lines
                         if checks.LINE_RE.match(ln))
    return s.end()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
