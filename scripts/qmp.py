#!/usr/bin/env python3
"""Send QMP commands to a running QEMU, such as a VM of scripts/launch-vms.sh
(its socket is <run>/vmI/qmp.sock).

Usage: scripts/qmp.py SOCKET COMMAND ['JSON-ARGUMENTS'] [COMMAND ...]
  e.g. scripts/qmp.py build/vms/last/vm2/qmp.sock \\
           set-action '{"reboot": "reset"}' system_reset

The commands run in order on one connection; each one's return value is
printed as one line of JSON.  Exits 0 if every command succeeded, 1 if QEMU
answered one with an error (the rest are not sent), 2 if the socket does
not answer or the arguments are wrong.

It uses QEMU's own QMP library (python/qemu/qmp) from the QEMU source tree
scripts/build-qemu.sh unpacked into $RS_BUILD (default build/).
"""

import glob
import json
import os
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("RS_BUILD", os.path.join(TOP, "build"))


def qemu_python_dir():
    trees = sorted(glob.glob(os.path.join(BUILD, "qemu-10.0.*", "python")))
    if not trees:
        sys.exit("qmp.py: no QEMU source tree in %s (run scripts/build-qemu.sh)"
                 % BUILD)
    return trees[-1]


def parse(argv):
    """[(command, arguments or None), ...] from COMMAND ['JSON'] ..."""
    cmds = []
    for a in argv:
        if a.startswith("{"):
            if not cmds or cmds[-1][1] is not None:
                raise ValueError("arguments %s follow no command" % a)
            cmds[-1] = (cmds[-1][0], json.loads(a))
        else:
            cmds.append((a, None))
    if not cmds:
        raise ValueError("no command")
    return cmds


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        cmds = parse(sys.argv[2:])
    except ValueError as e:
        print("qmp.py: %s" % e, file=sys.stderr)
        return 2
    sys.path.insert(0, qemu_python_dir())
    # pylint: disable=import-outside-toplevel
    from qemu.qmp import ExecuteError
    from qemu.qmp.legacy import QEMUMonitorProtocol

    qmp = QEMUMonitorProtocol(sys.argv[1])
    qmp.settimeout(10)
    try:
        qmp.connect()
    except Exception as e:  # pylint: disable=broad-except
        print("qmp.py: cannot connect to %s: %s" % (sys.argv[1], e),
              file=sys.stderr)
        return 2
    try:
        for name, args in cmds:
            try:
                ret = qmp.cmd(name, **(args or {}))
            except ExecuteError as e:
                print("qmp.py: %s: %s" % (name, e), file=sys.stderr)
                return 1
            print(json.dumps(ret))
    finally:
        qmp.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
