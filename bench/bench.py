#!/usr/bin/python3
"""Parse a bench/run-bench.sh run and write its results.

Usage: bench/bench.py OUTDIR
       bench/bench.py smoke-check OUTDIR/results.csv

Reads OUTDIR/machine.env and the launch-vms logs OUTDIR/adapter.log and
OUTDIR/soft-roce.log (every guest line prefixed "[vmI] "; the guest script
bench/guest-bench.sh prints "BENCH-STEP K NAME REP ROLE rc=RC secs=S", the
program's output as "| " lines and "BENCH-END K").  Writes results.csv,
results.json, table.txt and chart.png (gnuplot, when installed) into
OUTDIR, prints the table, the two performance bars (ib_write_bw 64 KiB
at 50x soft-RoCE, ib_write_lat 8 B at a tenth of it) and the ODP rows
against pinned memory (the adapter's ib_write_bw 64 KiB with --odp, warm
and cold, over its pinned ib_write_bw 64 KiB of the same run).  Exits 1
if a cell is ERROR or FAIL, else 0 (soft-RoCE's "n/a (no ODP)" cells
count as neither).  Standard library only.
"""

import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

PAIRS = [("adapter", "adapter", "rsess0"), ("soft-roce", "soft-RoCE", "rxe0")]
# More adapter pairs a run may have booted (run-bench.sh --variant NAME
# LABEL ARGS; machine.env's "variants" and "variant_NAME_label"), each
# compared with the adapter pair: its own column and a "/adapter" ratio.
# The issue bars below name two: adapter-shm (the local fabric) and
# adapter-dbr-off (doorbell records off: the wire path before them).
VARIANT_COLORS = ["#2ca02c", "#9467bd", "#8c564b", "#e377c2"]
# The pairs whose device may lack ODP (Debian's 6.12 rdma_rxe has none):
# there an ODP step the guests skipped (rc=no-odp) is "n/a (no ODP)"; on
# the adapter it is an error.
NO_ODP_OK = {"soft-roce"}
NA_TEXT = "n/a (no ODP)"

# name -> (label, program, [(metric key, metric label, unit, better)])
# better: "higher" (bandwidth, rate) or "lower" (latency, time)
# Doorbells per message and host CPU per GB come from the adapter's
# counters (guest-bench.sh's "dev-counters" line): soft-RoCE has none ("-")
COST = [("db_msg", "MMIO doorbells per message", "db/msg", "lower"),
        ("cpu_gb", "host CPU per GB", "CPU-s/GB", "lower")]
BW = [("bw_avg", "BW average", "MB/s", "higher"), ("msg_rate", "MsgRate", "Mpps", "higher")] + COST
LAT = [("t_typical", "t_typical", "usec", "lower"), ("t_avg", "t_avg", "usec", "lower")]
RPING = [("mbps", "throughput", "MB/s", "higher"), ("time", "time", "s", "lower"),
         ("cpu_gb", "host CPU per GB", "CPU-s/GB", "lower")]
# Metrics a run may lack (an older run without cpu-PAIR.jsonl, a device
# without the counters)
OPTIONAL = {"cpu_gb", "db_msg"}
BENCH = {
    "write_bw_64k": ("ib_write_bw 64 KiB", BW),
    # ODP on both sides; adapter only (NO_ODP_OK); compared with write_bw_64k
    "write_bw_64k_odp": ("ib_write_bw 64 KiB ODP", BW),
    "write_bw_64k_odp_cold": ("ib_write_bw 64 KiB ODP cold", BW),
    "write_bw_4k": ("ib_write_bw 4 KiB", BW),
    "read_bw_64k": ("ib_read_bw 64 KiB", BW),
    "send_bw_4k": ("ib_send_bw 4 KiB", BW),
    "msg_rate": ("ib_write_bw 64 B, 4 QPs", [("msg_rate", "MsgRate", "Mpps", "higher")] + COST),
    "write_lat": ("ib_write_lat 8 B", LAT),
    "send_lat": ("ib_send_lat 8 B", LAT),
    "read_lat": ("ib_read_lat 8 B", LAT),
    "send_lat_ev": ("ib_send_lat 8 B, events", LAT),
    "read_lat_ev": ("ib_read_lat 8 B, events", LAT),
    "verify": ("rping -V (each rep)", RPING),
    "transfer_1g": ("rping -V 1 GiB", RPING),
}
# Not run unless named (--only send_lat_ev, or the "lat" group): in this
# machine's run of 2026-11-30 soft-RoCE's ib_send_lat -e hung in 2 of 3
# repetitions, which would fail every default and smoke run on soft-RoCE
NOT_DEFAULT = {"send_lat_ev"}
ORDER = [n for n in BENCH if n not in NOT_DEFAULT]
ODP_ROWS = ("write_bw_64k_odp", "write_bw_64k_odp_cold")
ODP_PINNED = "write_bw_64k"

# perftest column names -> our keys
COLS = {
    "#bytes": "bytes", "#iterations": "iterations",
    "BW peak[MB/sec]": "bw_peak", "BW average[MB/sec]": "bw_avg",
    "MsgRate[Mpps]": "msg_rate",
    "t_min[usec]": "t_min", "t_max[usec]": "t_max",
    "t_typical[usec]": "t_typical", "t_avg[usec]": "t_avg",
    "t_stdev[usec]": "t_stdev",
    "99% percentile[usec]": "p99", "99.9% percentile[usec]": "p999",
}
HDR_TOKEN = re.compile(r"#\w+|(?:\d+(?:\.\d+)?% )?[A-Za-z_]+(?: [A-Za-z]+)?\[[^\]]+\]")
NUM_ROW = re.compile(r"^\s*\d+\s+\d+\s+\S")


def read_env(path):
    env = {}
    try:
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    env[k] = v
    except OSError:
        pass
    return env


def read_steps(vmsdir):
    """The serial logs vmsdir/vm1/serial.log, vm2/serial.log ->
    ({vm: {k: {name, rep, role, rc, secs, attempt, out: [lines]}}}, info)"""
    steps = {"1": {}, "2": {}}
    info = {}
    for vm in ("1", "2"):
        cur = None
        try:
            f = open(os.path.join(vmsdir, "vm" + vm, "serial.log"), errors="replace")
        except OSError:
            continue
        with f:
            for raw in f:
                text = raw.rstrip("\n").replace("\r", "")
                if text.startswith("BENCH-INFO "):
                    info[vm] = text[len("BENCH-INFO "):]
                elif text.startswith("BENCH-DMESG "):
                    info["dmesg" + vm] = text[len("BENCH-DMESG "):]
                elif text.startswith("BENCH-CLOCK "):
                    info["clock" + vm] = text[len("BENCH-CLOCK "):].strip()
                elif text.startswith("BENCH-STEP "):
                    p = text.split()
                    if len(p) < 7:
                        continue
                    kv = dict(x.split("=", 1) for x in p[5:] if "=" in x)
                    cur = {"k": int(p[1]), "name": p[2], "rep": int(p[3]), "role": p[4],
                           "rc": kv.get("rc", "?"), "secs": kv.get("secs", "?"),
                           "attempt": int(kv.get("attempt", "1")), "out": []}
                    steps[vm][cur["k"]] = cur
                elif text.startswith("BENCH-END "):
                    cur = None
                elif (text.startswith("| ") or text == "|") and cur is not None:
                    cur["out"].append(text[2:])
    return steps, info


def read_cpu(path):
    """bench/cpu-sampler.py's cpu-PAIR.jsonl -> {k: CPU seconds of both
    QEMUs from the client program's last start (BENCH-BEGIN) of step k to
    its end (BENCH-STEP)}."""
    begin, cpu = {}, {}
    try:
        with open(path) as f:
            events = [json.loads(ln) for ln in f if ln.strip()]
    except (OSError, ValueError):
        return {}
    for e in events:
        c = e.get("cpu") or {}
        if None in c.values() or len(c) != 2:
            continue
        both = sum(c.values())
        if e["event"] == "begin":
            begin[e["k"]] = both
        elif e["k"] in begin:
            cpu[e["k"]] = both - begin[e["k"]]
    return cpu


def log_tail(path, n=15):
    try:
        with open(path, errors="replace") as f:
            return [l.rstrip("\n") for l in f.readlines()[-n:]]
    except OSError:
        return []


def parse_perftest(lines):
    """The result row of perftest's output as {key: float}, or None."""
    hdr = None
    for i, line in enumerate(lines):
        if "#bytes" in line:
            hdr = [COLS.get(t, t) for t in HDR_TOKEN.findall(line)]
            for row in lines[i + 1:]:
                if NUM_ROW.match(row):
                    vals = row.split()
                    res = {}
                    for key, v in zip(hdr, vals):
                        try:
                            x = float(v)
                        except ValueError:
                            continue
                        if x == x and x not in (float("inf"), float("-inf")):
                            res[key] = x
                    return res
    return None


def short(lines, n=4):
    keep = [l for l in lines if l.strip() and not l.startswith("-----")]
    return " / ".join(keep[-n:])[:400]


def dev_counters(step):
    """The "dev-counters NAME=N ..." line guest-bench.sh appends to a
    perftest step's output (older runs: "odp-counters", ODP steps only)
    -> {name: int}, or None."""
    for l in (step or {}).get("out", []):
        if l.startswith("dev-counters") or l.startswith("odp-counters"):
            c = {}
            for kv in l.split()[1:]:
                k, _, v = kv.partition("=")
                try:
                    c[k] = int(v)
                except ValueError:
                    pass
            return c
    return None


def measure(name, cl, sv, env, cpu=None):
    """One repetition of one benchmark -> (status, {metric: value}, note);
    cpu: both QEMUs' CPU seconds during the client's run, if known.
    status: ok, error (no numbers), fail (verification failed), na (an ODP
    step the guests skipped: the device has no ODP)."""
    if cl is None:
        return "error", {}, "no result from the client (VM 2)"
    rc = cl["rc"]
    if rc == "no-odp":
        return "na", {}, "skipped: the device has no ODP for RC WRITE (ibv_devinfo -v)"
    if name in ("verify", "transfer_1g"):
        count = int(env.get("rping_count_verify" if name == "verify" else "rping_count_transfer", "0"))
        size = int(env.get("rping_size", "0"))
        # rping -V without -v prints, on success, only "client DISCONNECT
        # EVENT..." (its own disconnect at the end).  On a mismatch it prints
        # "data mismatch!" and exits non-zero; when the server goes away
        # early it prints "wait for ... state N" but may exit 0 (it returns 0
        # in state DISCONNECTED), so any other line is a failure too.
        extra = [l for l in cl["out"][1:] if l.strip() and not re.match(r"^client DISCONNECT EVENT", l)]
        srv_rc = sv["rc"] if sv else "none"
        if rc != "0" or extra or srv_rc != "0":
            return "fail", {}, "client rc=%s, server rc=%s: %s" % (rc, srv_rc, short(extra) or "no output")
        try:
            t = float(cl["secs"])
        except ValueError:
            return "fail", {}, "no time"
        moved = 2 * size * count
        note = "%d x %d B read and written back, verified; server rc=%s" % (count, size, srv_rc)
        vals = {"time": t, "mbps": moved / t / 1e6 if t > 0 else None}
        if cpu is not None and moved:
            vals["cpu_gb"] = cpu / (moved / 1e9)
            note += "; both QEMUs %.2f CPU-s" % cpu
        return "ok", vals, note
    res = parse_perftest(cl["out"])
    if rc != "0" or not res:
        why = "rc=%s" % rc if rc != "0" else "no result line"
        return "error", {}, "%s: %s" % (why, short(cl["out"][1:]) or "no output")
    vals = {}
    for key, _, _, _ in BENCH[name][1]:
        if key in res:
            vals[key] = res[key]
    vals.update(cost(name, cl, sv, cpu))
    if any(v <= 0 for k, v in vals.items() if k not in OPTIONAL):
        hint = " (perftest's clock sampling failed: 'Correlation coefficient r^2 < 0.9', 0 MHz)" \
            if any("Correlation coefficient" in l for l in cl["out"]) else ""
        return "error", {}, "zero result%s: %s" % (hint, short(cl["out"], 2))
    if len([k for k in vals if k not in OPTIONAL]) != len([m for m in BENCH[name][1] if m[0] not in OPTIONAL]):
        return "error", vals, "missing columns in: %s" % short(cl["out"], 2)
    return "ok", vals, ""


def cost(name, cl, sv, cpu):
    """Doorbells per message and host CPU per GB of a perftest step from
    the adapter's counters: the server wrote every message's payload to
    its RAM (ram_dma_write_bytes), both sides' MMIO doorbells
    (db_mmio_writes) over the messages; both QEMUs' CPU over the bytes.
    Counted over the client's whole run, warm-up included, as the CPU
    time is.  {} for soft-RoCE (no counters) and the other rows."""
    if name not in ("write_bw_64k", "write_bw_4k", "send_bw_4k", "msg_rate"):
        return {}
    c, s = dev_counters(cl), dev_counters(sv)
    if not c or not s or not s.get("ram_dma_write_bytes"):
        return {}
    size = {"write_bw_64k": 65536, "write_bw_4k": 4096, "send_bw_4k": 4096, "msg_rate": 64}[name]
    moved = s["ram_dma_write_bytes"]
    out = {}
    if "db_mmio_writes" in c and "db_mmio_writes" in s and moved >= size:
        out["db_msg"] = (c["db_mmio_writes"] + s["db_mmio_writes"]) / (moved / size)
    if cpu is not None:
        out["cpu_gb"] = cpu / (moved / 1e9)
    return out


def fmt(x):
    if x is None:
        return "-"
    a = abs(x)
    if a >= 1000:
        return "%.0f" % x
    if a >= 100:
        return "%.1f" % x
    if a >= 10:
        return "%.2f" % x
    if a >= 1:
        return "%.2f" % x
    return "%.3g" % x


def size_text(n):
    mib = n / 1048576.0
    return "%.1f GiB" % (mib / 1024) if mib >= 1000 else "%.0f MiB" % mib


def read_devbench(path):
    """The device-only benchmark's devbench.jsonl (run-bench.sh --device)
    -> {"host": {...}, "cases": [...]}, or None."""
    try:
        with open(path) as f:
            recs = [json.loads(ln) for ln in f if ln.strip()]
    except (OSError, ValueError):
        return None
    host = [r for r in recs if r.get("host")]
    cases = [r for r in recs if "case" in r]
    return {"host": host[-1] if host else {}, "cases": cases} if cases else None


def devbench_lines(dev):
    """The device-only table: the QEMU process's CPU per packet and per
    KiB, against memcpy and CRC-32 of the same run."""
    h = dev["host"]
    mc, crc = h.get("memcpy_ns_per_kib"), h.get("crc32_ns_per_kib")
    out = ["Device only (two adapters in one QEMU on a hub, no vCPU; tests/qtest/rdma-session/devbench.c): "
           "the QEMU process's CPU time, the qtest harness's commands subtracted; host memcpy %s ns/KiB, "
           "zlib crc32 %s ns/KiB" % (fmt(mc), fmt(crc))]
    head = ["case", "mode", "messages", "ns/packet", "ns/KiB", "x memcpy", "x crc32", "MB/s (wall)"]
    t = [head]
    for c in dev["cases"]:
        k = c.get("device_ns_per_kib")
        t.append([c["case"], c["mode"], str(c["messages"]), fmt(c.get("device_ns_per_packet")), fmt(k),
                  "%.1f" % (k / mc) if k and mc else "-", "%.1f" % (k / crc) if k and crc else "-",
                  fmt(c.get("mb_per_s"))])
    w = [max(len(r[i]) for r in t) for i in range(len(head))]
    for i, r in enumerate(t):
        out.append("  " + " | ".join(r[j].ljust(w[j]) if j < 2 else r[j].rjust(w[j]) for j in range(len(head))))
        if i == 0:
            out.append("  " + "-+-".join("-" * x for x in w))
    return out


def smoke_results(path):
    """One (ok, name, detail) per benchmark of a results.csv, ok when every
    metric of it has numbers on both pairs, or, for the ODP rows, on the
    adapter with soft-RoCE "n/a" (no ODP) (tests/guest/bench_smoke.py
    reports them as TAP)."""
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.setdefault(r["benchmark"], []).append(r)
    out = []
    for name, rs in rows.items():
        # "-": a cost metric a device has no counters for (soft-RoCE)
        bad = ["%s: adapter %s, soft-RoCE %s" % (r["metric"], r["adapter_status"], r["soft_roce_status"])
               for r in rs if r["adapter_status"] not in ("ok", "-") or
               r["soft_roce_status"] not in (("ok", "n/a", "-") if "_odp" in name else ("ok", "-"))]
        na = all(r["soft_roce_status"] == "n/a" for r in rs)
        out.append((not bad, name, "; ".join(bad) or (
            "numbers on the adapter, soft-RoCE %s" % NA_TEXT if na else "numbers on both pairs")))
    return out


def smoke_check(path):
    """One line per benchmark of a results.csv: "ok|fail NAME DETAIL"."""
    for ok, name, detail in smoke_results(path):
        print("%s %s %s" % ("ok" if ok else "fail", name, detail))


CEILINGS = [("4154", "1", "4154-byte frames, 1 per writev"),
            ("4154", "16", "4154-byte frames, 16 per writev"),
            ("65536", "1", "64 KiB frames, 1 per writev")]


def ceilings(env):
    """The -netdev stream backend's own ceiling (bench/stream-ceiling.c,
    before and after the pairs): [(frame, batch, text, MB/s or None)],
    the higher of the two measurements."""
    out = []
    for f, b, text in CEILINGS:
        vals = []
        for tag in ("before", "after"):
            try:
                vals.append(float(env.get("ceiling_%s_b%s_mbs_%s" % (f, b, tag), "")))
            except ValueError:
                pass
        out.append((f, b, text, max(vals) if vals else None))
    return out


def main():
    if sys.argv[1] == "smoke-check":
        smoke_check(sys.argv[2])
        return 0
    out = sys.argv[1]
    env = read_env(os.path.join(out, "machine.env"))
    try:
        vs = int(env.get("rping_size", "0"))
        # the amount moved: read by the server and written back
        BENCH["verify"] = ("rping -V %s, each rep" % size_text(2 * vs * int(env["rping_count_verify"])), RPING)
        BENCH["transfer_1g"] = ("rping -V %s" % size_text(2 * vs * int(env["rping_count_transfer"])), RPING)
    except (KeyError, ValueError):
        pass
    if env.get("odp_cold_iterations"):
        BENCH["write_bw_64k_odp_cold"] = ("ib_write_bw 64 KiB ODP cold, -n %s" % env["odp_cold_iterations"], BW)
    results = {}   # name -> pair -> {"reps": [...]}
    pairinfo = {}
    variants = env.get("variants", "").split()
    pairs = PAIRS + [(v, env.get("variant_%s_label" % v.replace("-", "_"), v), "rsess0")
                     for v in variants]
    vlabel = {v: l for v, l, _ in pairs}
    for pair, label, dev in pairs:
        steps, info = read_steps(os.path.join(out, "vms-" + pair))
        cpu = read_cpu(os.path.join(out, "cpu-%s.jsonl" % pair))
        pk = pair.replace("-", "_")
        pairinfo[pair] = {
            "label": label, "device": dev, "guest_info": info,
            "launch_status": env.get("pair_%s_launch_status" % pk),
            "boots": env.get("pair_%s_boots" % pk),
            "seconds": env.get("pair_%s_seconds" % pk),
            "boot": env.get("pair_%s_boot" % pk),
            "log_tail": log_tail(os.path.join(out, pair + ".log")) if not steps["2"] else None,
        }
        for k in sorted(set(steps["1"]) | set(steps["2"])):
            cl = steps["2"].get(k)
            sv = steps["1"].get(k)
            ref = cl or sv
            name, rep = ref["name"], ref["rep"]
            if name not in BENCH:
                continue
            status, vals, note = measure(name, cl, sv, env, cpu.get(k))
            if status == "na" and pair not in NO_ODP_OK:
                status, note = "error", "the %s has no ODP (ibv_devinfo -v): a guest driver without ODP?" % label
            r = {"rep": rep, "status": status, "values": vals, "note": note,
                 "client_rc": cl["rc"] if cl else None, "server_rc": sv["rc"] if sv else None,
                 "client_secs": cl["secs"] if cl else None,
                 "attempts": cl["attempt"] if cl else None,
                 "command": (cl or sv)["out"][0] if (cl or sv)["out"] else ""}
            if name in ODP_ROWS and status != "na":
                r["odp_counters"] = {"client": dev_counters(cl), "server": dev_counters(sv)}
            if status not in ("ok", "na"):
                r["client_output_tail"] = (cl["out"][-12:] if cl else [])
                r["server_output_tail"] = (sv["out"][-12:] if sv else [])
            results.setdefault(name, {}).setdefault(pair, {"reps": []})["reps"].append(r)

    names = [n for n in BENCH if n in results]
    # Missing pair results (a failed boot) count as errors.
    for n in names:
        for pair, _, _ in pairs:
            results[n].setdefault(pair, {"reps": []})

    rows = []
    bad = False
    for n in names:
        label, metrics = BENCH[n]
        for key, mlabel, unit, better in metrics:
            row = {"benchmark": n, "label": label, "metric": "%s [%s]" % (mlabel, unit),
                   "metric_key": key, "unit": unit, "better": better}
            for pair, _, _ in pairs:
                reps = results[n][pair]["reps"]
                vals = [r["values"][key] for r in reps if r["status"] == "ok" and r["values"].get(key) is not None]
                nfail = sum(1 for r in reps if r["status"] == "fail")
                nerr = sum(1 for r in reps if r["status"] == "error") + (0 if reps else 1)
                nna = sum(1 for r in reps if r["status"] == "na")
                cell = {"values": [r["values"].get(key) for r in reps],
                        "statuses": [r["status"] for r in reps],
                        "n": len(vals), "fail": nfail, "error": nerr, "na": nna,
                        "optional": key in OPTIONAL}
                if vals:
                    cell.update(median=statistics.median(vals), min=min(vals), max=max(vals))
                if nfail or nerr:
                    bad = True
                row[pair] = cell
            a, s = row["adapter"].get("median"), row["soft-roce"].get("median")
            ratio = None
            if a and s:
                ratio = a / s if better == "higher" else s / a
            row["ratio"] = ratio
            # each variant against the adapter pair: > 1, the variant is better
            for v in variants:
                x = row[v].get("median")
                row["ratio_" + v] = (x / a if better == "higher" else a / x) if a and x else None
            rows.append(row)

    def cell_text(c):
        if c["na"] and c["na"] == len(c["statuses"]):
            return NA_TEXT
        if c["fail"]:
            t = "FAIL"
            if c["n"]:
                t += " (%d/%d)" % (c["fail"], len(c["statuses"]))
            return t
        if "median" not in c:
            return "-" if c.get("optional") and not c["error"] else "ERROR"
        t = fmt(c["median"])
        if c["n"] > 1:
            t += " [%s-%s]" % (fmt(c["min"]), fmt(c["max"]))
        if c["error"]:
            t += " (%d err)" % c["error"]
        if c["na"]:
            t += " (%d n/a)" % c["na"]
        return t

    head = ["benchmark", "metric", "adapter", "soft-RoCE"] + [vlabel[v] for v in variants] + \
        ["ratio"] + ["%s/adapter" % vlabel[v] for v in variants]
    table = [head]
    for r in rows:
        table.append([r["label"], r["metric"], cell_text(r["adapter"]), cell_text(r["soft-roce"])] +
                     [cell_text(r[v]) for v in variants] +
                     [("%.2fx" % r["ratio"]) if r["ratio"] else "-"] +
                     [("%.2fx" % r["ratio_" + v]) if r["ratio_" + v] else "-" for v in variants])
    w = [max(len(t[i]) for t in table) for i in range(len(head))]
    lines = []
    lines.append("Median [min-max] over %s repetition(s); ratio > 1: the adapter is better "
                 "(adapter/soft-RoCE for bandwidth and rate, soft-RoCE/adapter for latency and time)%s."
                 % (env.get("reps", "?"), "; X/adapter > 1: X is better than the adapter pair"
                    if variants else ""))
    for i, t in enumerate(table):
        lines.append(" | ".join(t[j].ljust(w[j]) if j < 2 else t[j].rjust(w[j]) for j in range(len(head))))
        if i == 0:
            lines.append("-+-".join("-" * x for x in w))

    # The two performance bars the adapter is measured against.
    bars = []

    def bar(title, bench, key, need):
        r = next((r for r in rows if r["benchmark"] == bench and r["metric_key"] == key), None)
        if r is None:
            bars.append({"bar": title, "status": "not measured", "ratio": None, "need": need})
            return
        ratio = r["ratio"]
        st = "not measured" if ratio is None else ("met" if ratio >= need else "not met")
        bars.append({"bar": title, "status": st, "ratio": ratio, "need": need})

    bar("ib_write_bw 64 KiB >= 50x soft-RoCE", "write_bw_64k", "bw_avg", 50.0)
    bar("ib_write_lat 8 B typical <= 1/10 soft-RoCE", "write_lat", "t_typical", 10.0)

    def vbar(title, v, bench, key, need, invert=False):
        r = next((r for r in rows if r["benchmark"] == bench and r["metric_key"] == key), None)
        ratio = r and r.get("ratio_" + v)
        if ratio and invert:
            ratio = 1 / ratio
        st = "not measured" if not ratio else ("met" if ratio >= need else "not met")
        bars.append({"bar": title, "status": st, "ratio": ratio or None, "need": need})

    if "adapter-shm" in variants:
        # the shared-memory path against the wire path and soft-RoCE
        vbar("shared memory: ib_write_bw 64 KiB >= 3x the wire path", "adapter-shm",
             "write_bw_64k", "bw_avg", 3.0)
        r = next((r for r in rows if r["benchmark"] == "write_bw_64k" and r["metric_key"] == "bw_avg"), None)
        x, sr = (r["adapter-shm"].get("median"), r["soft-roce"].get("median")) if r else (None, None)
        bars.append({"bar": "shared memory: ib_write_bw 64 KiB >= 50x soft-RoCE",
                     "status": "not measured" if not (x and sr) else ("met" if x / sr >= 50 else "not met"),
                     "ratio": x / sr if x and sr else None, "need": 50.0})
        vbar("shared memory: host CPU per GB (rping -V, each rep) <= 1/4 the wire path's", "adapter-shm",
             "verify", "cpu_gb", 4.0)
        vbar("shared memory: ib_write_lat 8 B typical <= 1/2 the wire path's", "adapter-shm",
             "write_lat", "t_typical", 2.0)
    if "adapter-dbr-off" in variants:
        # doorbell records: the adapter pair (on) against the same without
        vbar("doorbell records: ib_send_bw 4 KiB >= 1.3x without them", "adapter-dbr-off",
             "send_bw_4k", "bw_avg", 1.3, invert=True)
        vbar("doorbell records: 64 B message rate >= 1.3x without them", "adapter-dbr-off",
             "msg_rate", "msg_rate", 1.3, invert=True)
    ceil = ceilings(env)
    top = ceil[2][3]
    wr = next((r for r in rows if r["benchmark"] == "write_bw_64k" and r["metric_key"] == "bw_avg"), None)
    if top and wr and wr["adapter"].get("median"):
        frac = wr["adapter"]["median"] / top
        bars.append({"bar": "ib_write_bw 64 KiB >= 80% of the stream backend's ceiling (64 KiB frames)",
                     "status": "met" if frac >= 0.8 else "not met", "ratio": frac, "need": 0.8,
                     "ceiling_mbs": top})
    elif any(c[3] for c in ceil):
        bars.append({"bar": "ib_write_bw 64 KiB >= 80% of the stream backend's ceiling (64 KiB frames)",
                     "status": "not measured", "ratio": None, "need": 0.8})
    lines.append("")
    for b in bars:
        if b["ratio"] is None:
            lines.append("bar: %s: %s" % (b["bar"], b["status"]))
        else:
            if b["need"] < 1:
                lines.append("bar: %s: %s (measured %.0f%% of %s MB/s)" % (
                    b["bar"], b["status"].upper(), 100 * b["ratio"], fmt(b["ceiling_mbs"])))
            else:
                lines.append("bar: %s: %s (measured %.2fx, needs %sx)" % (b["bar"], b["status"].upper(), b["ratio"], "%g" % b["need"]))
    if any(c[3] for c in ceil):
        lines.append("backend ceiling (-netdev stream between two plain processes, bench/stream-ceiling.c): %s"
                     % "; ".join("%s %s MB/s" % (t, fmt(v) if v else "error") for _, _, t, v in ceil))
        if wr and wr["adapter"].get("median") and ceil[0][3]:
            lines.append("  ib_write_bw 64 KiB: the adapter %s MB/s = %.0f%% of the backend with the adapter's "
                         "frames, %.0f%% of its ceiling" % (fmt(wr["adapter"]["median"]),
                                                            100 * wr["adapter"]["median"] / ceil[0][3],
                                                            100 * wr["adapter"]["median"] / top if top else 0))
    # The ODP rows against pinned memory: the adapter's medians of the same
    # run, ODP/pinned (BW average), with the faults each side's device took
    # per run (the counters' change, median over the repetitions).
    odp = []
    pin = next((r for r in rows if r["benchmark"] == ODP_PINNED and r["metric_key"] == "bw_avg"), None)
    for n in ODP_ROWS:
        r = next((r for r in rows if r["benchmark"] == n and r["metric_key"] == "bw_avg"), None)
        if r is None:
            continue
        o = r["adapter"].get("median")
        p = pin["adapter"].get("median") if pin else None
        e = {"benchmark": n, "label": r["label"], "pinned_benchmark": ODP_PINNED,
             "metric": r["metric"], "odp": o, "pinned": p, "ratio": o / p if o and p else None,
             "soft_roce": NA_TEXT if r["soft-roce"]["na"] else r["soft-roce"].get("median")}
        for side in ("client", "server"):
            cs = [x["odp_counters"][side] for x in results[n]["adapter"]["reps"]
                  if x["status"] == "ok" and x.get("odp_counters", {}).get(side)]
            if cs:
                e["%s_faults" % side] = statistics.median(c.get("odp_faults", 0) for c in cs)
                e["%s_pages" % side] = statistics.median(c.get("odp_resolved_pages", 0) for c in cs)
        odp.append(e)
    if odp:
        lines.append("")
    for e in odp:
        what = "%s / pinned (adapter, BW average)" % e["label"]
        if e["ratio"] is None:
            t = "odp: %s: not measured (ODP %s, pinned %s)" % (
                what, fmt(e["odp"]), fmt(e["pinned"]) if pin else "not run")
        else:
            t = "odp: %s: %.2fx (%s vs %s MB/s)" % (what, e["ratio"], fmt(e["odp"]), fmt(e["pinned"]))
        f = ["%s %g (%g pages)" % (side, e[side + "_faults"], e[side + "_pages"])
             for side in ("client", "server") if side + "_faults" in e]
        if f:
            t += "; faults per run: %s" % ", ".join(f)
        if e["soft_roce"] == NA_TEXT:
            t += "; soft-RoCE %s" % NA_TEXT
        lines.append(t)
    # The failures, with what the client printed.
    notes = []
    for n in names:
        for pair, plabel, _ in pairs:
            for r in results[n][pair]["reps"]:
                if r["status"] not in ("ok", "na"):
                    notes.append("%s: %s %s rep %d: %s" % (r["status"].upper(), plabel, n, r["rep"], r["note"]))
    for pair, plabel, _ in pairs:
        pi = pairinfo[pair]
        if pi["log_tail"] is not None:
            notes.append("ERROR: %s pair produced no results (launch-vms status %s); last lines: %s"
                         % (plabel, pi["launch_status"], " / ".join(pi["log_tail"][-5:])))
        for vm in ("1", "2"):
            d = pi["guest_info"].get("dmesg" + vm)
            if d and d != "clean":
                notes.append("WARNING: %s vm%s kernel log: %s" % (plabel, vm, d))
            c = pi["guest_info"].get("clock" + vm)
            if c and c != "clocksource=tsc":
                notes.append("WARNING: %s vm%s ran on %s (not tsc: slower guest clock reads)" % (plabel, vm, c))
    dev = read_devbench(os.path.join(out, "devbench.jsonl"))
    if dev:
        lines.append("")
        lines.extend(devbench_lines(dev))
    if notes:
        lines.append("")
        lines.extend(notes)
    m = env
    lines.append("")
    lines.append("Machine: %s CPU(s), %s, %s, %s, %s, accel=%s, %s; commit %s; %s"
                 % (m.get("nproc"), m.get("cpu_model"), m.get("host_kernel"), m.get("host_os"),
                    m.get("qemu_version"), m.get("accel"), m.get("segment"),
                    m.get("git_commit", "")[:12], m.get("date")))
    def pair_text(pair):
        pi = pairinfo[pair]
        cs = "/".join(re.sub(r".*clocksource=(\S+).*", r"\1", pi["guest_info"].get(vm, "?")) for vm in ("1", "2"))
        odp = "/".join(re.sub(r".*\bodp=(\S+).*", r"\1", pi["guest_info"].get(vm, "odp=?")) for vm in ("1", "2"))
        return "%s %s s (%s boot(s), %s, clocksource %s, ODP %s, launch-vms status %s)" % (
            pi["label"], pi["seconds"], pi["boots"], pi["boot"], cs, odp, pi["launch_status"])
    lines.append("Pairs: %s" % "; ".join(pair_text(p) for p, _, _ in pairs))
    for v in variants:
        lines.append("  %s: the adapter pair with %s" % (vlabel[v], env.get("variant_%s_args" % v.replace("-", "_"), "?")))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write(text)

    # results.csv: one row per metric, then the raw values per repetition
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        nrep = int(env.get("reps", "1") or 1)
        hdr = ["benchmark", "label", "metric", "unit", "better"]
        for p, _, _ in pairs:
            p = p.replace("-", "_")
            hdr += [p + "_median", p + "_min", p + "_max", p + "_status"] + \
                   ["%s_rep%d" % (p, i + 1) for i in range(nrep)]
        hdr += ["ratio"] + ["ratio_" + v.replace("-", "_") for v in variants]
        wr.writerow(hdr)
        for r in rows:
            line = [r["benchmark"], r["label"], r["metric_key"], r["unit"], r["better"]]
            for pair, _, _ in pairs:
                c = r[pair]
                st = "FAIL" if c["fail"] else ("ERROR" if "median" not in c else ("ok" if not c["error"] else "partial"))
                if st == "ERROR" and c.get("optional") and not c["error"]:
                    st = "-"
                if st == "ERROR" and c["na"] == len(c["statuses"]) and c["na"]:
                    st = "n/a"
                vals = c["values"] + [None] * (nrep - len(c["values"]))
                line += [c.get("median", ""), c.get("min", ""), c.get("max", ""), st] + \
                        ["" if v is None else v for v in vals[:nrep]]
            line.append("" if r["ratio"] is None else "%.4f" % r["ratio"])
            line += ["" if r["ratio_" + v] is None else "%.4f" % r["ratio_" + v] for v in variants]
            wr.writerow(line)

    doc = {
        "machine": m,
        "settings": {k: m.get(k) for k in ("mode", "reps", "perftest_duration_s", "latency_iterations",
                                             "odp_cold_iterations",
                                             "rping_size", "rping_count_verify", "rping_count_transfer",
                                             "segment", "accel")},
        "ratio_definition": "adapter/soft-RoCE for higher-is-better metrics, soft-RoCE/adapter for lower-is-better; > 1 means the adapter is better",
        "pairs": pairinfo,
        "table": rows,
        "bars": bars,
        "backend_ceiling_mbs": {"%s_b%s" % (f, b): v for f, b, _, v in ceilings(env)},
        "odp_vs_pinned_definition": "the adapter's median BW average of an ODP row over that of %s of the same run (< 1: ODP is slower); faults and pages: the change of the device's odp_faults and odp_resolved_pages counters over one run, median" % ODP_PINNED,
        "odp_vs_pinned": odp,
        "variants": {v: {"label": vlabel[v], "args": env.get("variant_%s_args" % v.replace("-", "_"))}
                     for v in variants},
        "device_only": dev,
        "runs": {n: {p: results[n][p]["reps"] for p, _, _ in pairs} for n in names},
        "ok": not bad,
    }
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)

    chart(out, rows, m, [(v, vlabel[v]) for v in variants])
    return 1 if bad else 0


def chart(out, rows, m, variants=()):
    """chart.png: one panel per unit, grouped bars adapter vs soft-RoCE with
    the min-max range, log scale."""
    gp = shutil.which("gnuplot")
    if not gp:
        return
    units = [("MB/s", "bandwidth [MB/s]"), ("Mpps", "message rate [Mpps]"), ("usec", "latency [usec]"), ("s", "time [s]"),
             ("CPU-s/GB", "host CPU per GB moved, both QEMUs [CPU-s/GB]"),
             ("db/msg", "MMIO doorbells per message, both sides [db/msg]")]
    panels = []
    for unit, title in units:
        sel = [r for r in rows if r["unit"] == unit]
        if not sel:
            continue
        path = os.path.join(out, "chart-%s.dat" % unit.replace("/", "_"))
        with open(path, "w") as f:
            for r in sel:
                lab = "%s\\n%s" % (r["label"], r["metric"].split(" [")[0])
                vals = []
                for pair, plabel in [("adapter", "adapter"), ("soft-roce", "soft-RoCE")] + list(variants):
                    c = r[pair]
                    if "median" in c and not c["fail"]:
                        vals += [c["median"], c["min"], c["max"]]
                    else:
                        vals += ["NaN", "NaN", "NaN"]
                        lab += "\\n%s: %s" % (plabel, "FAIL" if c["fail"] else (
                            NA_TEXT if c["na"] and c["na"] == len(c["statuses"]) else "ERROR"))
                f.write('"%s" %s NaN NaN NaN\n' % (lab, " ".join(str(v) for v in vals)))
            if unit == "MB/s":
                for _, _, text, v in ceilings(m):
                    if v:
                        f.write('"backend ceiling\\n%s" %s %s %s %s\n'
                                % (text.replace(", ", "\\n"), " ".join(["NaN"] * 3 * (2 + len(variants))),
                                   v, v, v))
        vals = [r[p][k] for r in sel for p in ["adapter", "soft-roce"] + [v for v, _ in variants]
                for k in ("min", "max") if r[p].get(k)]
        if unit == "MB/s":
            vals += [c[3] for c in ceilings(m) if c[3]]
        yr = "[%g:%g]" % (min(vals) / 3, max(vals) * 3) if vals else "[*:*]"
        nrow = len(sel) + (sum(1 for c in ceilings(m) if c[3]) if unit == "MB/s" else 0)
        panels.append((title, path, nrow, yr))
    if not panels:
        return
    n = len(panels)
    width = max(1200, 170 * max(p[2] for p in panels))
    script = ['set terminal pngcairo size %d,%d font "DejaVu Sans,10"' % (width, 340 * n + 80),
              'set output "%s"' % os.path.join(out, "chart.png"),
              'set multiplot layout %d,1 title "rdma-session adapter vs Linux soft-RoCE (%s run), %s repetition(s), median and min-max\\n%s, %s CPUs, %s, accel=%s, %s"'
              % (n, m.get("mode"), m.get("reps"), m.get("cpu_model", "").replace('"', ""), m.get("nproc"),
                 m.get("qemu_version", "").replace('"', ""), m.get("accel"), m.get("date")),
              'set termoption noenhanced',
              'set style data histogram', 'set style histogram errorbars gap 2 lw 1',
              'set style fill solid 0.8 border -1', 'set boxwidth 0.9',
              'set logscale y', 'set grid ytics', 'set key outside right top vertical',
              'set xtics nomirror font ",9"', 'set bmargin 5', 'set datafile missing "NaN"']
    for title, path, _, yr in panels:
        series = ['"%s" using 2:3:4:xtic(1) title "adapter" lc rgb "#1f77b4"' % path,
                  '"" using 5:6:7 title "soft-RoCE" lc rgb "#ff7f0e"']
        for i, (_, vl) in enumerate(variants):
            c = 8 + 3 * i
            series.append('"" using %d:%d:%d title "%s" lc rgb "%s"'
                          % (c, c + 1, c + 2, vl, VARIANT_COLORS[i % len(VARIANT_COLORS)]))
        c = 8 + 3 * len(variants)
        series.append('"" using %d:%d:%d title "-netdev stream ceiling" lc rgb "#7f7f7f"' % (c, c + 1, c + 2))
        script += ['set title "%s (log scale)"' % title, 'set yrange %s' % yr, 'plot ' + ", ".join(series)]
    script.append("unset multiplot")
    with open(os.path.join(out, "chart.gp"), "w") as f:
        f.write("\n".join(script) + "\n")
    try:
        subprocess.run([gp, os.path.join(out, "chart.gp")], check=True, timeout=60,
                       stderr=open(os.path.join(out, "chart.err"), "w"))
    except (subprocess.SubprocessError, OSError) as e:
        sys.stderr.write("bench.py: gnuplot failed (%s; see %s/chart.err)\n" % (e, out))


if __name__ == "__main__":
    sys.exit(main())
