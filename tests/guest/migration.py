#!/usr/bin/env python3
"""Live migration in the middle of RDMA traffic, with unmodified peers
(launcher runs of rstest).

1. Short downtimes: two adapter VMs on the multicast segment (-n 2); VM 1
   is migrated to a new QEMU three times (--migrate 1@5x3,
   tests/guest/rstest/migration.py) while it serves rping -V (RDMA READ
   and WRITE of 4 KiB buffers, every ping verified by rping itself),
   ib_read_bw, ibv_srq_pingpong -c and a UD ib_send_bw to VM 2, and is
   VM 2's client of ib_send_bw and ibv_rc_pingpong -c; and dynamically
   connected transport both ways (rsdv_dc_bw -D 30, 40 on the local
   fabric; 4 KiB SENDs whose bytes and order the target checks): VM 2's
   DCI sends to a DCT on VM 1 (the responder contexts migrate) and VM
   1's DCI to a DCT on VM 2 (the DCI's connection migrates).  The RDMA
   stall VM 2 saw at each switch is measured from a capture of its
   netdev.  The adapters run with the
   default dc-idle (1 ms): the DCIs idle out between bursts, and a target
   keeps a context across the migrated DCI's downtime.
   Before those, migrations that must fail and leave VM 1 running with its
   traffic (--migrate-drill): to a destination with another max-qps and to
   one with another MAC (refused, the destination names the field), and
   one cancelled during a held switchover.
Parts 2 to 4 run between hosts: the VMs on three hosts joined by a VXLAN
overlay (launch-vms.sh --overlay, tests/guest/rstest/overlay.py: network
namespaces with a bridge each and a tap per VM; VM 1 on host 1, the
others on host 3), each migration from VM 1's host to host 2 or back
over TCP between the hosts' underlay addresses; after each switch every
other host's overlay must send the VM's frames to its new host within
2 s (what QEMU's announcements and the adapter's first frames teach it).
Their tests are named hosts-*; RS_MIGRATION_HOSTS=0 runs them on the
multicast segment of one host instead.
2. A downtime longer than the peers' retry budget: VM 1 (adapter), VM 2
   (adapter) and VM 3 (soft-RoCE, rdma_rxe); VM 1 serves ib_write_bw to
   VM 2 (ACK timeout 14: a retry budget of about 3 s; rdma_cm would set
   18, whose budget with this adapter's backoff exceeds 30 s) for 20 s of
   VM 2's time (VM 2 is still writing when VM 1 stops, then waits for its
   last writes) and ibv_rc_pingpong -c (timeout 14), and rping -V (data
   verified) to VM 3, and is migrated once with the switchover held
   RS_MIGRATION_HOLD seconds (--migrate-hold): the source's RNR NAKs keep
   the peers waiting.  VM 3's traffic is captured (--pcap): the capture
   must show VM 1's RNR NAKs with the longest timer during the hold and
   the destination's prompt (shortest timer) after it.
3. perftest: VM 1, migrated twice, is the client of ib_write_bw and
   ib_read_bw and the server of ib_send_bw with a soft-RoCE VM, then the
   other way round (between hosts with RS_MIGRATION_ALL=1: both VMs in
   the Debian guest, launch-vms.sh --distro), then the first way with an
   adapter VM (part 1 has the other way with an adapter, part 2
   ib_write_bw).
4. NVMe over Fabrics over RDMA (tests/guest/nvmf.py --migrate): VM 1 the
   target, VM 2 the host, which verifies I/O round after round while VM 1
   and then VM 2 are migrated.
Checks: each migration completed with the destination running (its
figures are printed, and every "migrate-vm: " line as a "# " note), every
program passed on both sides, VM 1's driver got the device's migration
notice after each migration, the kernel logs are clean, every QEMU powered
off.  The guest-side scripts are tests/guest/in-guest/migration-*.sh
(after lib.sh and migration-common.sh), the run's values prepended as
variable assignments.  Prints TAP and "# migration: N passed, N failed";
exits 0 if every check passed.

With --between-hosts, the long runs between hosts instead (minutes each):
VM 1 migrated RS_HOST_MIGRATIONS times (default 20, h1 to h2 to h1 ...)
under part 3's perftest programs as client and as server, with rping -V
(RS_RPING_COUNT pings) beside them, with a soft-RoCE peer and with an
adapter peer; RS_DISTRO_MIGRATIONS (default 4) with both VMs in the
Debian guest (--distro: Debian's soft-RoCE as the peer); two migrations
each way with announcements off
(--migrate-no-announce); part 2's held switchover and part 4.  Each
run's stall median and worst are in its tests' names.

Usage: tests/guest/migration.py [--list] [--repeat N] [NAME...]
         [-- extra QEMU arguments for every VM]
       tests/guest/migration.py [--between-hosts] [extra QEMU arguments
  for every VM, e.g. -trace 'rdma_session_migration*']
  --list, NAME, --repeat: rstest/select.py; a NAME selects tests and the
  parts that report them (units short, held, rxe, rxe-rev, adapter,
  nvmf); the names: PART-PREFIX + test, guests' checks CHECK/vmN.
Environment: RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_NO_BUILD=1,
  RS_MIGRATIONS (part 1's migrations, default 3; 0 skips part 1),
  RS_MIGRATION_SECS (part 1's program durations, default 30, 60 with
  RS_LOCAL_FABRIC=1),
  RS_RPING_COUNT (default 60000), RS_PINGPONG_COUNT (default 30000),
  RS_STALL_MAX_MS (part 1's and 3's bound on the stall, default 3000),
  RS_MIGRATION_HOLD (seconds, default 30; 0 skips part 2),
  RS_MIGRATION_RXE=0 (skips part 3), RS_MIGRATION_NVMF=0 (skips part 4),
  RS_MIGRATION_HOSTS=0 (parts 2-4 on one host), RS_HOST_MIGRATIONS,
  RS_MIGRATION_ALL=1 (part 3's second run in the Debian guest; the test
  command leaves it out: it is also in --between-hosts).
Logs: $RS_BUILD/test-logs/migration.XXXXXX (migration.last): each run's
launcher output (launch.log, hold.log with hold-vm3.pcap, rxe.log,
rxe-rev.log, adapter.log, nvmf.log) and VM directory (vms, vms-NAME).
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import select  # noqa: E402
from rstest.suite import (TOP, Run, Suite, guest_files,  # noqa: E402
                          need_tshark)
import nvmf  # noqa: E402

# The guests' checks of part 1 (short), 2 (held) and 3 (perf_checks).
SHORT = ["1:send-bw-client", "1:rc-pingpong-client", "1:read-bw-server",
         "1:srq-pingpong-server", "1:ud-send-bw-server", "1:rping-server",
         "1:dc-bw-dci", "1:dc-bw-dct", "1:dmesg-clean", "1:migration-notice",
         "2:send-bw-server", "2:rc-pingpong-server", "2:read-bw-client",
         "2:srq-pingpong-client", "2:ud-send-bw-client", "2:rping-client",
         "2:dc-bw-dci", "2:dc-bw-dct", "2:dmesg-clean"]
HELD = ["1:write-bw-server-adapter", "1:rping-server",
        "1:rc-pingpong-server", "1:dmesg-clean", "1:migration-notice",
        "2:write-bw-client", "2:rc-pingpong-client", "2:dmesg-clean",
        "3:rping-client", "3:dmesg-clean"]

LAUNCH_PREFIX = "[launch-vms] "


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


def script(values, part: str) -> str:
    """A VM's command: the run's values as variable assignments, lib.sh,
    migration-common.sh and the part's script."""
    head = "".join("%s=%s\n" % (k, "'%s'" % v) for k, v in values)
    return head + guest_files("lib.sh", "migration-common.sh", part)


def extra(qemu_args) -> list:
    """The suite's arguments for every VM's QEMU (as ${1:+-- "$@"})."""
    return ["--"] + list(qemu_args) if qemu_args and qemu_args[0] else []


def migrations(s: Suite, r: Run, vm: int, n: int, pre: str) -> None:
    """The "migrate-vm: " lines as notes, then the figures of VM's n
    migrations."""
    for ln in r.lines:
        if ln.startswith(LAUNCH_PREFIX + "migrate-vm:"):
            s.note(ln[len(LAUNCH_PREFIX):])
    for k in range(1, n + 1):
        line = r.first("migrate-vm: vm%d #%d: " % (vm, k))
        if line is not None:
            s.tap("ok", "%smigration-%d" % (pre, k), line.split(": ", 1)[1])
        else:
            s.report(False, "%smigration-%d" % (pre, k),
                     r.first("migrate-vm: FAIL") or "")


def learned_check(s: Suite, r: Run, vm: int, n: int, pre: str,
                  most: float = 2.0) -> None:
    """Between hosts: after each of VM's n switches every other host's
    overlay sent the VM's frames to its new host within most seconds."""
    for k in range(1, n + 1):
        tag = "migrate-vm: vm%d #%d: overlay: " % (vm, k)
        line = r.first(tag)
        times = [float(t) for t in re.findall(r"learned h[0-9]+ ([-+.0-9]+) s",
                                              line or "")]
        ok = (line is not None and "had not learned" not in line and
              bool(times) and max(times) < most)
        what = line.split(tag, 1)[1] if line else "no overlay figures"
        s.tap("ok" if ok else "fail", "%soverlay-learned-%d" % (pre, k),
              what + ", within %g s expected" % most)


def stall_check(s: Suite, r: Run, vm: int, n: int, pre: str,
                most: int) -> None:
    """The peer's RDMA stall was measured at each of VM's n switches and
    none lasted most ms."""
    tag = "vm%d: " % vm
    line = r.first("migrate-vm: %sRDMA stall over %d migrations" % (tag, n))
    m = re.search(r"worst ([0-9]*) ms", line or "")
    if m and m.group(1) and int(m.group(1)) < most:
        s.tap("ok", "%srdma-stall" % pre, "%s, at most %d ms expected" % (
            line.split(tag, 1)[1], most))
    else:
        s.report(False, "%srdma-stall" % pre, "%s, at most %d ms expected" % (
            line or "no stall figures for %d migrations" % n, most))


def short_part(s: Suite, n_mig: int, qemu_args) -> None:
    """1: n_mig short migrations of VM 1 under RC, UD and DC traffic,
    after the drill.  The perftest and rsdv_dc_bw runs last secs (30, 60
    on the local fabric) s of guest time (they outlast the migrations,
    which the check asserts); the
    pingpongs run a fixed count (at least one migration)."""
    count = env_int("RS_RPING_COUNT", 60000)
    pp = env_int("RS_PINGPONG_COUNT", 30000)
    # On the local fabric the VMs' RAM is a memfd, and reading the pages
    # the guest never touched allocates them: each migration took 6-10 s
    # there against 1.1-3.9 s, and the programs ended before the third
    # (with 40 s too, on a loaded machine).
    secs = env_int("RS_MIGRATION_SECS",
                   60 if os.environ.get("RS_LOCAL_FABRIC") == "1" else 30)
    r = s.launch("launch", [
        "-q"] + (["--no-build"] if os.environ.get("RS_NO_BUILD") else []) + [
        "-n", "2", "--timeout", str(240 + 2 * secs),
        "--migrate", "1@5x%d" % n_mig,
        "--migrate-drill",
        "--vm-cmd", "1", script([("n_mig", n_mig), ("count", count),
                                 ("pingpong", pp), ("secs", secs)],
                                "migration-short-vm1.sh"),
        "--vm-cmd", "2", script([("count", count), ("pingpong", pp),
                                 ("secs", secs)],
                                "migration-short-vm2.sh")] + extra(qemu_args),
        vms_dir=os.path.join(s.dir, "vms"))
    for what, field in (("max-qps differs", "max_qps"), ("mac differs", "mac"),
                        ("cancelled", "cancelled")):
        name = "drill-" + what.replace(" ", "-")
        line = r.first("migrate-vm: vm1 drill: %s: the source runs on" % what)
        if line is not None and field in line:
            s.tap("ok", name, line.split("drill: ", 1)[1])
        else:
            s.report(False, name, r.first("migrate-vm: FAIL") or "")
    migrations(s, r, 1, n_mig, "")
    # Under TCG on 2 busy cores; the goal is a median under 300 ms.
    stall_check(s, r, 1, n_mig, "", env_int("RS_STALL_MAX_MS", 3000))
    s.expect(r, SHORT)
    s.launcher_check(r)


def held_capture(s: Suite, pcap: str, hold: int, pre: str) -> None:
    """The hold on the wire, as the soft-RoCE VM received it: RNR NAKs
    (AETH syndrome 001 + timer) from VM 1, timer 0 (655.36 ms) every
    300 ms of the hold, then timer 1 (0.01 ms) from the destination."""
    tshark = need_tshark(os.path.join(s.dir, "tshark-install.log"))
    if not os.path.isfile(pcap) or os.path.getsize(pcap) == 0 or not tshark:
        s.report(False, pre + "capture", "no capture %s or no tshark" % pcap)
        return

    def nak(syndrome: str) -> int:
        p = subprocess.run(
            [tshark, "-n", "-r", pcap, "-Y",
             "ip.src == 10.77.0.1 && ip.dst == 10.77.0.3 && "
             "infiniband.aeth.syndrome == %s" % syndrome],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, universal_newlines=True, check=False)
        return len(p.stdout.splitlines())

    h, p, want = nak("0x20"), nak("0x21"), hold * 10 // 3 // 2
    if h >= want and p >= 1:
        s.tap("ok", pre + "capture", "%d RNR NAKs with timer 655.36 ms "
              "during the hold (at least %d expected), %d with 0.01 ms after "
              "it" % (h, want, p))
    else:
        s.report(False, pre + "capture", "%d RNR NAKs with timer 655.36 ms (at "
                 "least %d expected), %d with 0.01 ms" % (h, want, p))


def held_part(s: Suite, hold: int, net, qemu_args) -> None:
    """2: one migration of VM 1 with the switchover held hold seconds
    (net: the launcher's network options; between hosts, the tests are
    named hosts-held-*)."""
    pp = env_int("RS_PINGPONG_COUNT", 30000)
    pcap = os.path.join(s.dir, "hold-vm3.pcap")
    pre = "hosts-held-" if net else "held-"
    r = s.launch(pre + "run", [
        "-q", "--no-build", "-n", "3", "--soft-roce-vm", "3"] + net + [
        "--timeout", str(hold + 240), "--migrate", "1@5",
        "--migrate-hold", str(hold), "--pcap", "3", pcap,
        "--vm-cmd", "1", script([("pingpong", pp)], "migration-held-vm1.sh"),
        "--vm-cmd", "2", script([("pingpong", pp)], "migration-held-vm2.sh"),
        "--vm-cmd", "3", script([], "migration-held-vm3.sh")] +
        extra(qemu_args), vms_dir=os.path.join(s.dir, "vms-" + pre + "run"))
    migrations(s, r, 1, 1, pre)
    if net:
        learned_check(s, r, 1, 1, pre)
    stall_check(s, r, 1, 1, pre, (hold + 3) * 1000)
    s.expect(r, HELD, prefix=pre)
    s.launcher_check(r, pre.rstrip("-"))
    held_capture(s, pcap, hold, pre)


def perf_part(s: Suite, pre: str, opts, c1, s1, qemu_args,
              n_mig: int = 2, pings: int = 0) -> None:
    """3: VM 1, migrated n_mig times, the client of the perftest programs
    c1 and the server of s1 (write, read, send: ib_<x>_bw), VM 2 the
    other way; on VM 1 each must have lived through every migration.
    With pings, VM 1 also serves VM 2 that many rping -V pings."""
    name = pre.rstrip("-")
    # (the programs outlast the migrations: one every 5 s plus its own
    # 1-3 s under TCG; the Debian guest's 1536 MiB took 6.8-17.1 s each
    # between hosts, and its programs ended before the second)
    secs = 25 if n_mig <= 2 else 15 + 8 * n_mig
    if "--distro" in opts:
        secs += 20
    r = s.launch(name, [
        "-q", "--no-build", "-n", "2"] + opts + [
        "--timeout", str(240 + 15 * n_mig), "--migrate", "1@5x%d" % n_mig,
        "--vm-cmd", "1", script([("clients", " ".join(c1)),
                                 ("servers", " ".join(s1)),
                                 ("migs", n_mig), ("secs", secs),
                                 ("pings", pings or "")],
                                "migration-perf.sh"),
        "--vm-cmd", "2", script([("clients", " ".join(s1)),
                                 ("servers", " ".join(c1)), ("migs", ""),
                                 ("secs", secs), ("pings", pings or "")],
                                "migration-perf.sh")] + extra(qemu_args),
        vms_dir=os.path.join(s.dir, "vms-" + name))
    migrations(s, r, 1, n_mig, pre)
    if "--overlay" in opts:
        learned_check(s, r, 1, n_mig, pre)
    stall_check(s, r, 1, n_mig, pre, env_int("RS_STALL_MAX_MS", 3000))
    s.expect(r, perf_checks(c1, s1, pings), prefix=pre)
    s.launcher_check(r, name)


def nvmf_part(s: Suite, net, pre: str) -> None:
    """4: tests/guest/nvmf.py --migrate (net: --overlay or nothing), its
    tests prefixed PRE + nvmf-."""
    log = os.path.join(s.dir, "nvmf.log")
    env = dict(os.environ)
    env["RS_VMS_LOGDIR"] = os.path.join(s.dir, "vms-nvmf")
    with open(log, "w") as f:
        subprocess.run([os.path.join(TOP, "tests", "guest", "nvmf.py"),
                        "--migrate"] + net, stdin=subprocess.DEVNULL, stdout=f,
                       stderr=subprocess.STDOUT, env=env, check=False)
    n = 0
    with open(log, errors="replace") as f:
        for ln in f.read().splitlines():
            m = re.match(r"^(ok|not ok) - ([^:]*)(?:: (.*))?$", ln)
            if m:
                n += 1
                if m.group(1) == "ok":
                    s.tap("ok", pre + "nvmf-" + m.group(2), m.group(3) or "")
                else:
                    s.report(False, pre + "nvmf-" + m.group(2),
                             m.group(3) or "")
            elif ln.startswith("# migrate-vm: "):
                s.note(ln[2:])
    if n == 0:
        s.report(False, pre + "nvmf", "no result (see %s)" % log)


def between_hosts(qemu_args) -> int:
    """--between-hosts: the long runs between hosts on the overlay."""
    s = Suite("migration-hosts")
    n = env_int("RS_HOST_MIGRATIONS", 20)
    net = ["--overlay"]
    rxe = ["--soft-roce-vm", "2"] + net
    pings = env_int("RS_RPING_COUNT", 60000)
    for pre, opts, c1, s1 in (
            ("long-rxe-", rxe, ["write", "read"], ["send"]),
            ("long-rxe-rev-", rxe, ["send"], ["write", "read"]),
            ("long-adapter-", net, ["write", "read"], ["send"]),
            ("long-adapter-rev-", net, ["send"], ["write", "read"])):
        perf_part(s, pre, opts, c1, s1, qemu_args, n, pings)
    # both in the Debian guest: the adapter's packages, Debian's soft-RoCE
    # (fewer pings: rping is about four times slower in the Debian guest)
    perf_part(s, "distro-rxe-", ["--distro"] + rxe, ["write", "read"],
              ["send"], qemu_args, env_int("RS_DISTRO_MIGRATIONS", 4),
              pings // 4)
    # without announcements: what moves the peers' traffic then
    perf_part(s, "no-announce-rxe-", rxe + ["--migrate-no-announce"],
              ["send"], ["write", "read"], qemu_args, 2, pings)
    perf_part(s, "no-announce-adapter-", net + ["--migrate-no-announce"],
              ["send"], ["write", "read"], qemu_args, 2, pings)
    held_part(s, env_int("RS_MIGRATION_HOLD", 30), net, qemu_args)
    nvmf_part(s, net, "hosts-")
    return s.end()


def perf_checks(c1, s1, pings) -> list:
    """The guests' checks of a perf_part."""
    return (["1:%s-bw-client" % x for x in c1] +
            ["1:%s-bw-server" % x for x in s1] +
            ["1:dmesg-clean", "1:migration-notice"] +
            ["2:%s-bw-server" % x for x in c1] +
            ["2:%s-bw-client" % x for x in s1] + ["2:dmesg-clean"] +
            (["1:rping-server", "2:rping-client"] if pings else []))


def _vm(pre: str, checks) -> list:
    return ["%s%s/vm%s" % (pre, c.split(":")[1], c.split(":")[0])
            for c in checks]


def parts():
    """The parts this environment runs: {unit: (function of (suite,
    qemu_args), the tests it reports)} (rstest/select.py)."""
    n_mig = env_int("RS_MIGRATIONS", 3)
    hold = env_int("RS_MIGRATION_HOLD", 30)
    # parts 2 and 3 between hosts (--overlay), unless RS_MIGRATION_HOSTS=0
    hosts = os.environ.get("RS_MIGRATION_HOSTS", "1") != "0"
    net = ["--overlay"] if hosts else []
    pre = "hosts-" if hosts else ""
    out = {}
    if n_mig != 0:
        out["short"] = (
            lambda s, q: short_part(s, n_mig, q),
            ["drill-" + w for w in ("max-qps-differs", "mac-differs",
                                    "cancelled")] +
            ["migration-%d" % k for k in range(1, n_mig + 1)] +
            ["rdma-stall"] + _vm("", SHORT) + ["launch-vms"])
    if hold != 0:
        hp = "hosts-held-" if net else "held-"
        out["held"] = (
            lambda s, q: held_part(s, hold, net, q),
            [hp + "migration-1"] + ([hp + "overlay-learned-1"] if net
                                    else []) + [hp + "rdma-stall"] +
            _vm(hp, HELD) + [hp.rstrip("-") + "/launch-vms", hp + "capture"])
    if os.environ.get("RS_MIGRATION_RXE", "1") != "0":
        rxe = ["--soft-roce-vm", "2"] + net
        # with RS_MIGRATION_ALL=1, between hosts the other way round with
        # both VMs in the Debian guest (the driver's packages, Debian's
        # soft-RoCE): its boot and its 1536 MiB migrations take twice as
        # long as the minimal guest's
        distro = hosts and os.environ.get("RS_MIGRATION_ALL") == "1"
        for unit, p, opts, c1, s1 in (
                ("rxe", pre + "rxe-", rxe, ["write", "read"], ["send"]),
                ("rxe-rev", pre + ("distro-rxe-rev-" if distro
                                   else "rxe-rev-"),
                 (["--distro"] if distro else []) + rxe, ["send"],
                 ["write", "read"]),
                ("adapter", pre + "adapter-", net, ["write", "read"],
                 ["send"])):
            out[unit] = (
                lambda s, q, p=p, opts=opts, c1=c1, s1=s1:
                perf_part(s, p, opts, c1, s1, q),
                ["%smigration-%d" % (p, k) for k in (1, 2)] +
                (["%soverlay-learned-%d" % (p, k) for k in (1, 2)]
                 if hosts else []) + [p + "rdma-stall"] +
                _vm(p, perf_checks(c1, s1, 0)) +
                [p.rstrip("-") + "/launch-vms"])
    if os.environ.get("RS_MIGRATION_NVMF", "1") != "0":
        out["nvmf"] = (lambda s, q: nvmf_part(s, net, pre),
                       [pre + "nvmf-" + n for n in nvmf.names(True)])
    return out


def main(argv) -> int:
    """[--between-hosts] [--list] [--repeat N] [NAME...] [-- QEMU
    arguments]; QEMU arguments alone (the first not a NAME) as before."""
    if argv[:1] == ["--between-hosts"]:
        return between_hosts(argv[1:])
    qemu_args: list = []
    if "--" in argv:
        qemu_args = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    elif argv and argv[0].startswith("-") and \
            argv[0] not in ("--list", "--repeat", "-h", "--help") and \
            not argv[0].startswith("--repeat="):
        qemu_args, argv = argv, []
    ps = parts()
    return select.main(
        "migration", {u: p[1] for u, p in ps.items()},
        lambda s, units: [ps[u][0](s, qemu_args) for u in units],
        argv, __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
