"""QEMU's python/ directory on sys.path: the qemu.machine and qemu.qmp
packages of the QEMU source tree that scripts/build-qemu.sh unpacked into
$RS_BUILD (default build/)."""

import glob
import os
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
BUILD = os.environ.get("RS_BUILD", os.path.join(TOP, "build"))


def qemu_python_dir() -> str:
    trees = sorted(glob.glob(os.path.join(BUILD, "qemu-10.0.*", "python")))
    if not trees:
        raise ImportError("no QEMU source tree (qemu-10.0.*/python) in %s: "
                          "run scripts/build-qemu.sh" % BUILD)
    return trees[-1]


_dir = qemu_python_dir()
if _dir not in sys.path:
    sys.path.insert(0, _dir)
