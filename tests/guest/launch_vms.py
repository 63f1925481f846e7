#!/usr/bin/env python3
"""scripts/launch-vms.sh: guests with the adapter on one segment (see
rstest/launcher.py, or --help)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    # pylint: disable=wrong-import-position
    from rstest.launcher import main  # noqa: E402
except ImportError as e:
    # (no QEMU source tree, hence no QEMU Python library)
    print("[launch-vms] error: %s" % e, file=sys.stderr)
    sys.exit(2)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
