#!/usr/bin/env python3
"""Introspection between two VMs with the adapter, as TAP.

VM 2 runs ib_write_bw (RDMA WRITE, 64 KiB, IS_SECS seconds) to VM 1 with
every RoCE frame lost with probability 1/300 (x-drop-tx=300 on both).
 - In VM 2, while it runs: `rdma resource show qp -dd` shows the driver's
   details of the RC QP (device QPN equal to lqpn, type rc, one session,
   a group, a UDP source port >= 49152, the device's SQ PSN, which moves
   in 2 s), `mr -dd` the MR's key (= lkey), kind user and pages covering
   mrlen, `cq -dd` the CQ's handle and size.
 - From the host, meanwhile, query-rdma-session twice 2 s apart on VM 2's
   QMP socket: its GID ::ffff:10.77.0.2, the RC QP in RTS whose sq-psn
   and una-psn moved, its group of one session with the 5-tuple
   (10.77.0.2, port >= 49152) -> (10.77.0.1, 4791), the QPN, group and
   source port VM 2's rdma tool showed, a key of ib_write_bw's buffer in
   the key table of VNI 0, the counters moving; info rdma-session (HMP)
   has the QP's row.
 - Afterwards `rdma statistic` in both VMs: VM 2's device sent packets,
   retransmitted and received sequence NAKs (the loss), path_failovers 0;
   VM 1's received packets and sent sequence NAKs.
 - Both ib_write_bw ends pass; no warning in either kernel log.

Usage: tests/guest/introspect.py [--list] [--repeat N] [NAME...]
  (rstest/select.py: the one boot runs whatever is selected; only the
  selected tests are reported)
Environment: RS_BUILD, RS_NO_BUILD=1 (the build comes first), IS_SECS
  (default 20).
Logs: $RS_BUILD/test-logs/introspect.XXXXXX (introspect.last): the
launcher output introspect.log, the VM directory vms, qmp.json (both
answers).
"""

import json
import os
import re
import sys
import time
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import console, select  # noqa: E402
from rstest.suite import Suite, guest_files, qmp  # noqa: E402

SECS = int(os.environ.get("IS_SECS", "20"))
GID2 = "::ffff:10.77.0.2"
GID1 = "::ffff:10.77.0.1"
GUEST_CHECKS = {1: ["write-bw-server", "statistic-server", "dmesg-clean"],
                2: ["resource-qp", "resource-mr", "resource-cq",
                    "write-bw-client", "statistic-client", "dmesg-clean"]}
RSQP_RE = re.compile(r"RS-QP qpn=([0-9]+) sport=([0-9]+) group=(0x[0-9a-f]+)")


def psn_diff(a: int, b: int) -> int:
    """a - b in 24-bit PSN space, as a signed number."""
    d = (a - b) & 0xffffff
    return d - (1 << 24) if d & 0x800000 else d


def rc_qp(dev: dict) -> Optional[dict]:
    """The RC QP in RTS that sends over a session group (ib_write_bw's)."""
    qps = [q for q in dev["qps"] if q["type"] == "rc" and
           q["state"] == "rts" and q["group"] != 0]
    return qps[0] if len(qps) == 1 else None


def check(s: Suite, ok: bool, name: str, what: str, why: str = "") -> None:
    """Test name: "ok - NAME: WHAT" or "not ok - NAME: WHAT: WHY"."""
    if ok:
        s.tap("ok", name, what)
    else:
        s.report(False, name, "%s: %s" % (what, why) if why else what)


def check_query(s: Suite, a: dict, b: dict) -> Dict[str, int]:
    """The two answers of query-rdma-session, 2 s apart."""
    check(s, len(a) == 1 and len(b) == 1, "qmp/one-adapter",
          "%d and %d adapters" % (len(a), len(b)))
    a, b = a[0], b[0]
    ids = [i for i in a["identities"] if i["address"] == GID2]
    check(s, len(ids) == 1 and ids[0]["type"] == "roce-v2-ipv4" and
          ids[0]["vni"] == 0 and ids[0]["refs"] > 0,
          "qmp/identity", "%s, VNI 0, in use" % GID2, str(a["identities"]))
    gid = ids[0]["index"] if ids else -1
    qa, qb = rc_qp(a), rc_qp(b)
    ok = qa is not None and qb is not None and qa["qpn"] == qb["qpn"]
    check(s, ok, "qmp/rc-qp", "one RC QP in RTS with a session group",
          str(a["qps"]))
    if not ok:
        return {}
    ds, du = (psn_diff(qb["sq-psn"], qa["sq-psn"]),
              psn_diff(qb["una-psn"], qa["una-psn"]))
    check(s, ds > 0 and du > 0 and
          0 <= psn_diff(qb["sq-psn"], qb["una-psn"]) <= 4096 and
          qa["gid-index"] == gid,
          "qmp/psns-move", "the QP's sq-psn +%d, una-psn +%d in 2 s"
          % (ds, du), "%s -> %s" % (qa, qb))
    grp = [g for g in a["groups"] if g["index"] == qa["group"]]
    sess = [x for x in a["sessions"]
            if grp and x["index"] in grp[0]["sessions"]]
    ok = (len(grp) == 1 and len(sess) == 1 and
          grp[0]["policy"] == "round-robin" and grp[0]["refs"] >= 1 and
          sess[0]["src-ip"] == GID2 and sess[0]["dst-ip"] == GID1 and
          sess[0]["dst-port"] == 4791 and sess[0]["src-port"] >= 49152 and
          sess[0]["gid-index"] == gid)
    check(s, ok, "qmp/group", "the QP's group: one session %s:%s -> "
          "%s:4791" % (GID2, sess[0]["src-port"] if sess else "?", GID1),
          "groups %s sessions %s" % (a["groups"], a["sessions"]))
    tables = [t for t in a["key-tables"] if t["netid"] == 0]
    keys = [k for t in tables for k in t["keys"]
            if k["kind"] == "mr" and k["valid"] and
            k["length"] >= 65536 and k["pd"] == qa["pd"]]
    check(s, len(tables) == 1 and gid in tables[0]["identities"] and
          len(keys) >= 1,
          "qmp/key-table", "identity 0's with ib_write_bw's MR (%s)" %
          ", ".join("0x%x %d bytes" % (k["key"], k["length"])
                    for k in keys), str(a["key-tables"]))
    ca, cb = a["counters"], b["counters"]
    check(s, cb["tx-packets"] > ca["tx-packets"] > 0 and
          cb["rx-packets"] > ca["rx-packets"] > 0 and
          cb["tx-bytes"] > ca["tx-bytes"] and
          cb["path-failovers"] == 0,
          "qmp/counters-move", "tx-packets %d -> %d" %
          (ca["tx-packets"], cb["tx-packets"]), "%s -> %s" % (ca, cb))
    return {"qpn": qa["qpn"], "sport": sess[0]["src-port"] if sess else -1,
            "group": grp[0]["handle"] if grp else -1}


def run(s: Suite, _units=None) -> None:
    """The boot and the checks (rstest/select.py's run)."""
    vms = os.path.join(s.dir, "vms")
    serial2 = os.path.join(vms, "vm2", "serial.log")
    sock = os.path.join(vms, "vm2", "qmp.sock")
    env = "IS_SECS=%d\n" % SECS
    answers: List[list] = []
    hmp = ""
    with s.start("introspect", [
            "--no-build", "-q", "-n", "2", "--timeout", str(SECS + 180),
            "--vm-cmd", "1", env + guest_files("lib.sh",
                                               "introspect-vm1.sh"),
            "--vm-cmd", "2", env + guest_files("lib.sh",
                                               "introspect-vm2.sh"),
            "--", "-global", "rdma-session.x-drop-tx=300"],
            vms_dir=vms) as bg:
        if bg.wait_for(SECS + 150, lambda: any(
                "RS-INTROSPECT-RUNNING" in ln
                for ln in console.lines(serial2))):
            for i in range(2):
                ok, r = qmp(sock, [("query-rdma-session", None)])
                answers.append(r[0] if ok else r)
                if i == 0:
                    time.sleep(2)
            ok, r = qmp(sock, [("human-monitor-command",
                                {"command-line": "info rdma-session"})])
            hmp = r[0] if ok else str(r)
        run = bg.wait()
    with open(os.path.join(s.dir, "qmp.json"), "w") as f:
        json.dump({"answers": answers, "hmp": hmp}, f, indent=1)
    s.expect(run, [(vm, c) for vm, cks in GUEST_CHECKS.items()
                   for c in cks])
    s.launcher_check(run)
    got = len(answers) == 2 and all(isinstance(x, list) and x and
                                    isinstance(x[0], dict)
                                    for x in answers)
    check(s, got, "qmp/answered",
          "query-rdma-session answered during the transfer",
          str(answers)[:300] or "VM 2 never said RS-INTROSPECT-RUNNING")
    if not got:
        return
    seen = check_query(s, answers[0], answers[1])
    m = next((RSQP_RE.search(ln) for ln in run.lines
              if RSQP_RE.search(ln)), None)
    check(s, m is not None and seen and int(m.group(1)) == seen["qpn"] and
          int(m.group(2)) == seen["sport"] and
          int(m.group(3), 16) == seen["group"],
          "qmp/agrees-with-rdma-tool",
          "qmp and rdma resource show agree: QPN, group, source port",
          "guest %s, host %s" % (m.group(0) if m else "no RS-QP line",
                                 seen))
    row = re.search(r"^    %-6u rc      rts " % seen.get("qpn", -1), hmp,
                    re.M) if seen else None
    check(s, row is not None and "key table vni 0 (identity 0" in hmp and
          "tx-packets" in hmp, "hmp/info-rdma-session",
          "info rdma-session has the QP's row and the key table", hmp[:400])


def names() -> List[str]:
    """Every test, in order (rstest/select.py)."""
    return (["%s/vm%d" % (c, vm) for vm, cks in GUEST_CHECKS.items()
             for c in cks] + ["launch-vms", "qmp/answered"] +
            ["qmp/" + n for n in ("one-adapter", "identity", "rc-qp",
                                  "psns-move", "group", "key-table",
                                  "counters-move",
                                  "agrees-with-rdma-tool")] +
            ["hmp/info-rdma-session"])


if __name__ == "__main__":
    sys.exit(select.main("introspect", {("boot",): names()}, run,
                         sys.argv[1:], __doc__))
