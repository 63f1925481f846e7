#!/usr/bin/python3
"""Host CPU time of both QEMU processes of a bench/run-bench.sh pair at
each step's start and end.

Usage: bench/cpu-sampler.py VMSDIR OUT.jsonl PARENT_PID

Watches VMSDIR/vm2/serial.log (the client's console) every 50 ms for
"BENCH-BEGIN K ATTEMPT" (bench/guest-bench.sh: the client program is
about to start) and "BENCH-STEP K ..." (it ended) and appends, for each,
a JSON line {"event": "begin"|"end", "k": K, "t": host time, "cpu":
{"1": s, "2": s}} with the user + system time of VM 1's and VM 2's QEMU
(all threads, /proc/PID/stat) in seconds.  The time between the console
line and its reading is at most 50 ms, beside the console's own delay.
Exits when PARENT_PID is gone.  Standard library only.

With RS_BENCH_PIN=1 (run-bench.sh --pin) it also pins the QEMUs'
threads, as they appear: VM I's vCPU threads (named "CPU N/..." by
-name debug-threads=on) to core I-1 and its other threads (the main loop,
the workers) to the other core, so that a vCPU spinning on its CQ never
takes its own main loop's core.
"""

import json
import os
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def pid_of(vmsdir, vm):
    try:
        with open(os.path.join(vmsdir, "vm" + vm, "pid")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def cpu_of(pid):
    """utime + stime of pid in seconds (fields 14 and 15 of its stat,
    counted after the command name's closing parenthesis)."""
    if pid is None:
        return None
    try:
        with open("/proc/%d/stat" % pid) as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / TICK
    except (OSError, IndexError, ValueError):
        return None


def pin(vmsdir, done):
    """Pin the threads of both QEMUs not pinned yet (done: set of tids)."""
    for i, vm in enumerate(("1", "2")):
        pid = pid_of(vmsdir, vm)
        if pid is None:
            continue
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for t in tids:
            tid = int(t)
            if tid in done:
                continue
            try:
                with open("/proc/%d/task/%d/comm" % (pid, tid)) as f:
                    vcpu = f.read().startswith("CPU ")
                os.sched_setaffinity(tid, {i % 2 if vcpu else (i + 1) % 2})
                done.add(tid)
            except OSError:
                pass


def main():
    vmsdir, out, parent = sys.argv[1], sys.argv[2], int(sys.argv[3])
    log = os.path.join(vmsdir, "vm2", "serial.log")
    pos, part = 0, b""
    pinned = set() if os.environ.get("RS_BENCH_PIN") == "1" and os.cpu_count() >= 2 else None
    with open(out, "a") as o:
        while True:
            if pinned is not None:
                pin(vmsdir, pinned)
            try:
                os.kill(parent, 0)
            except OSError:
                return 0
            try:
                with open(log, "rb") as f:
                    f.seek(pos)
                    data = f.read()
            except OSError:
                data = b""
            if data:
                pos += len(data)
                lines = (part + data).split(b"\n")
                part = lines.pop()
                for raw in lines:
                    p = raw.decode(errors="replace").strip("\r").split()
                    if len(p) < 2 or p[0] not in ("BENCH-BEGIN", "BENCH-STEP") \
                            or not p[1].isdigit():
                        continue
                    cpu = {vm: cpu_of(pid_of(vmsdir, vm)) for vm in ("1", "2")}
                    o.write(json.dumps({
                        "event": "begin" if p[0] == "BENCH-BEGIN" else "end",
                        "k": int(p[1]), "t": time.time(), "cpu": cpu}) + "\n")
                    o.flush()
            time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
