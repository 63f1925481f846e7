#!/bin/bash
# Start N guests (default 2) with the rdma-session adapter under TCG on one
# L2 segment, run a command in each, collect the outputs and exit statuses
# and tear everything down: the launcher of the VM test harness,
# tests/guest/rstest/launcher.py (its options: --help).  Exits 0 if every
# command exited 0 and every QEMU powered off cleanly, 1 otherwise, 2 on a
# setup error.
set -uo pipefail

py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" "$(dirname "$0")/../tests/guest/launch_vms.py" "$@"
