# SPDX-License-Identifier: GPL-2.0-or-later
"""What the networks of namespaces made for a run (rstest.ecmp,
rstest.overlay, rstest.virthost) share: running ip and bridge, the
namespaces that exist, and removing those a crashed run left behind.

Each run names its namespaces <prefix><PID>-<name>, PID the process that
made them; clean_stale() removes those whose process is gone, with what
still runs in them (its QEMUs, captures, daemons).
"""

import os
import re
import signal
import subprocess
import time
from typing import List, Type


def sh(argv: List[str], check: bool = True,
       error: Type[Exception] = RuntimeError) -> str:
    """argv's output; error(message) if it failed and check."""
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, check=False)
    if check and r.returncode != 0:
        raise error("%s: %s" % (" ".join(argv),
                                (r.stderr or r.stdout).strip()))
    return r.stdout


def namespaces() -> List[str]:
    out = sh(["ip", "netns", "list"], check=False)
    return [ln.split()[0] for ln in out.splitlines() if ln.split()]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def kill_processes(ns: str, grace: float = 0.0) -> None:
    """End what runs in namespace ns: SIGTERM and up to grace seconds to
    go first if grace, then SIGKILL."""
    for sig in ((signal.SIGTERM,) if grace else ()) + (signal.SIGKILL,):
        pids = [int(p) for p in sh(["ip", "netns", "pids", ns],
                                   check=False).split() if p.isdigit()]
        if not pids:
            return
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + grace
        while time.monotonic() < end and any(pid_alive(p) for p in pids):
            time.sleep(0.1)


def delete(ns: str, grace: float = 0.0) -> None:
    """Remove namespace ns with what runs in it."""
    kill_processes(ns, grace)
    sh(["ip", "netns", "del", ns], check=False)


def clean_stale(prefix: str, grace: float = 0.0) -> List[str]:
    """Remove the namespaces <prefix><PID>-* of runs whose process is
    gone; the names removed."""
    gone = []
    name_re = re.compile(r"^%s([0-9]+)-" % re.escape(prefix))
    for ns in namespaces():
        m = name_re.match(ns)
        if m and not pid_alive(int(m.group(1))):
            delete(ns, grace)
            gone.append(ns)
    return gone


def clear(prefix: str, tag: str) -> None:
    """Before a run makes namespaces tag-* (tag: prefix and its process
    number): remove the crashed runs', and those a crashed run of a
    process with the same number left."""
    clean_stale(prefix)
    for ns in namespaces():
        if ns.startswith(tag + "-"):
            sh(["ip", "netns", "del", ns], check=False)
