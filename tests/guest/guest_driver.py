#!/usr/bin/env python3
"""Guest driver test, as TAP: build guest-driver/kernel (rdma_session.ko)
against the headers of the guest kernel (also with W=1: no warnings
either way), boot the guest image with the module loaded at boot
(scripts/guest-image.sh, RS_EXTRA_MODULES) and check:
 - one VM on -netdev user (a launcher run of rstest, -n 1 --netdev-user):
   the probe line with ABI 1.x, max_qp 255, max_cq 255 and port ACTIVE,
   the eth0 line with link up (both at boot and after the reload);
   udhcpc gets a lease from slirp through the adapter and the slirp
   gateway 10.0.2.2 answers ping; MTU 9000 works; rmmod while the
   interface is up and a second insmod work, and the gateway answers
   again after the reload;
 - two VMs on one segment (-n 2, in the background: the multicast
   socket on 127.0.0.1) with 10.77.0.1/24 and 10.77.0.2/24 ping each
   other, also with 8000-byte (jumbo) and 30000-byte (fragmented)
   datagrams; the carrier of VM 1 goes off and on with QMP set_link
   (port events); each VM's command and QEMU must end with status 0;
 - the user-net VM: the DC driver data of CREATE_QP from user space
   (tests/guest/progs/rsv-dcbad.c: commands written to the verbs file
   as libibverbs writes them): an unknown DC type, DC type 0 for
   IB_QPT_DRIVER, flags, nonzero reserved words, a key on a DCI, a DCI
   with an SRQ, a DCT without one, a DC type on an RC QP are refused
   with EINVAL, a good DCI and DCT through the same path are created;
   rsdv_create_qp refuses a bad DC type and an SRQ-less DCT itself;
 - the user-net VM, module parameters paths=4, port_min=50000,
   port_max=50063 (tests/guest/progs/rsv-paths.c): two RC QPs connected
   through the adapter's own GID get 4 sessions each, whose 8 UDP source
   ports a user-space bind() finds taken (EADDRINUSE) until the QPs are
   destroyed; RDMA WRITEs complete while spreading and after
   rsdv_modify_qp_path_policy() chose active-backup; the call refuses
   two policies at once, the driver input the provider never sends
   (flags, policy, reserved words, attributes with it); rdma statistic
   shows path_migrations (0); a verified rping (rdma_cm) over
   connections of 4 sessions;
 - the user-net VM: the driver's self-test of rs_ib_reg_mkey_list (an
   indirect key over three kernel MRs, a pattern key, bad lists refused)
   does not run at probe (its debugfs file,
   /sys/kernel/debug/rdma_session/rsess0/mkey_selftest, reads "not run"
   after boot and after the reload); a write to the file runs it, after
   boot and after the reload: the file then reads ok and the kernel log
   has its ok line;
 - no WARNING, BUG, Oops or call trace in any guest's kernel log.
One test per check (55), named by a fixed path (the figures are in the
TAP detail): build/..., user-net/..., two-vms/CHECK/vmN; when all pass,
three "# guest-driver: PASS: " notes (the probe line, the user-net VM,
the two VMs).  Exits 0 if every test passed.

The headers: linux-headers-amd64 from bookworm-backports is installed if
no linux-headers-6.12.*-amd64 is (scripts/apt-private.sh, apt_need);
scripts/guest-image.sh boots the kernel matching the newest installed
6.12 headers, and the module is built against those same headers.

Usage: tests/guest/guest_driver.py [--list] [--repeat N] [NAME...]
  (rstest/select.py: the units build, user-net and two-vms; the module
  is built whatever is selected, and only the VM runs the selection
  needs boot)
Environment: RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_NO_BUILD=1
  (do not build QEMU first), RS_KERNEL_PKG (scripts/guest-image.sh),
  RS_DEMO_TIMEOUT (seconds for each run's commands, default 180).
Logs: the module builds in $RS_BUILD/guest-driver (kmod, kmod-w1,
build.log, build-w1.log; one run at a time per build directory);
$RS_BUILD/test-logs/guest-driver.XXXXXX (guest-driver.last): each run's
launcher output user-net.log, two-vms.log and VM directory vms-user-net,
vms-two-vms; serial.log and dmesg.log of the user-net VM; two-vms.qmp.log.
"""

import fcntl
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from rstest import console, select  # noqa: E402
from rstest.suite import BUILD, TOP, Suite, qmp  # noqa: E402

TMO = os.environ.get("RS_DEMO_TIMEOUT", "180")
PROBE_RE = re.compile(
    r"rdma_session [0-9a-f:.]+: rdma-session: ABI 1\.[0-9]+, max_qp 255, "
    r"max_cq 255, max_mr [0-9]+, max_gids [0-9]+, MAC ([0-9a-f]{2}:){5}"
    r"[0-9a-f]{2}, port ACTIVE")
LAN_RE = re.compile(
    r"rdma_session [0-9a-f:.]+ eth0: rdma-session LAN port, MAC "
    r"([0-9a-f]{2}:){5}[0-9a-f]{2}, link up")
BAD_RE = re.compile(
    r"WARNING|BUG|Oops|Call Trace|rdma_session .*(failed|timed out|fatal)")
WARN_RE = re.compile(r"warning:|error:")

# The user-net VM's command (/init loads the module before it): a DHCP
# lease (busybox udhcpc with its own script), a ping of the slirp gateway,
# MTU 9000, the module unloaded with the interface up and reloaded
# (remove path, second enable after a disable), a ping again with a
# static address, the kernel log between markers.
USER_CMD = r"""printf '#!/bin/sh\ncase "$1" in bound|renew) ip addr flush dev "$interface"; ip addr add "$ip/${mask:-24}" dev "$interface"; echo "RS-DHCP-LEASE $ip from $serverid";; esac\n' > /tmp/rs-udhcpc.sh
chmod +x /tmp/rs-udhcpc.sh
ip addr flush dev eth0; ip link set eth0 up
udhcpc -i eth0 -s /tmp/rs-udhcpc.sh -n -q -t 5 -T 2
ping -c 3 -W 5 10.0.2.2 && echo RS-PING-GW-OK
ip link set eth0 mtu 9000 && ping -c 2 -W 5 -s 1400 10.0.2.2 && echo RS-MTU9000-OK
ip link set eth0 mtu 1500
mount -t debugfs debugfs /sys/kernel/debug
for f in /sys/kernel/debug/rdma_session/*/mkey_selftest; do echo "RS-MKEY-BEFORE boot $(cat $f)"; echo 1 > $f; echo "RS-MKEY-SELFTEST boot $(cat $f)"; done
rmmod rdma_session && echo RS-RMMOD-OK
insmod /lib/modules/$(uname -r)/rdma_session.ko && echo RS-INSMOD-OK
ip addr add 10.0.2.15/24 dev eth0; ip link set eth0 up
rsv-dcbad
for f in /sys/kernel/debug/rdma_session/*/mkey_selftest; do echo "RS-MKEY-BEFORE reload $(cat $f)"; echo 1 > $f; echo "RS-MKEY-SELFTEST reload $(cat $f)"; done
p=/sys/module/rdma_session/parameters
echo 4 > $p/paths && echo 50000 > $p/port_min && echo 50063 > $p/port_max && rsv-paths -- 50000
(rping -s -a 10.0.2.15 -p 18700 -C 20 -S 4096 -V > /tmp/rping-s.log 2>&1 &)
sleep 1; rping -c -a 10.0.2.15 -p 18700 -C 20 -S 4096 -V > /tmp/rping-c.log 2>&1 && echo RS-RPING-PATHS-OK
echo 1 > $p/paths
rdma statistic show link rsess0/1 | grep -q "path_migrations 0" && echo RS-PATH-MIG-COUNTER
ping -c 3 -W 5 10.0.2.2 && echo RS-PING-RELOAD-OK
echo RS-DMESG-BEGIN; dmesg; echo RS-DMESG-END"""
# rsv-dcbad's checks (tests/guest/progs/rsv-dcbad.c).
DCBAD_CHECKS = ["bad-dc-type", "dc-type-none", "flags", "rsvd0", "rsvd1",
                "dci-key", "dci-srq", "dct-no-srq", "rc-with-dc-type",
                "good-dci", "good-dct", "rsdv-bad-dc-type",
                "rsdv-dct-no-srq"]
# rsv-paths's checks (tests/guest/progs/rsv-paths.c).
PATHS_CHECKS = ["paths-connect", "paths-reserved", "paths-write-spread",
                "paths-dv-active-backup", "paths-write-active-backup",
                "paths-dv-bad", "paths-dv-spread", "paths-kernel-bad",
                "paths-kernel-good", "paths-released"]
# The user-net VM's marks: {mark: its test's name}.
USER_MARKS = {"RS-DHCP-LEASE": "dhcp-lease", "RS-PING-GW-OK": "ping-gateway",
              "RS-MTU9000-OK": "mtu-9000", "RS-RMMOD-OK": "rmmod",
              "RS-INSMOD-OK": "insmod", "RS-RPING-PATHS-OK": "rping-paths",
              "RS-PATH-MIG-COUNTER": "path-migrations-counter",
              "RS-PING-RELOAD-OK": "ping-after-reload"}

# The two VMs' command: each pings the other until it answers (at most 30
# tries), then checks plain, jumbo and fragmented pings, stays up a while
# for the peer; VM 1 says RS-LINK-TEST and watches its carrier go off and
# on (this program's QMP set_link); each prints its kernel log.
PAIR_CMD = r"""ip link set "$RS_IFACE" mtu 9000
i=0; while [ $i -lt 30 ] && ! ping -c 1 -W 1 $RS_PEER > /dev/null 2>&1; do i=$((i + 1)); done
ping -c 3 -W 5 $RS_PEER && echo RS-PEER-PING-OK
ping -c 2 -W 5 -s 8000 $RS_PEER && echo RS-PEER-JUMBO-OK
ping -c 2 -W 5 -s 30000 $RS_PEER && echo RS-PEER-FRAG-OK
sleep 5
if [ $RS_VM_INDEX = 1 ]; then
    echo RS-LINK-TEST
    c=/sys/class/net/$RS_IFACE/carrier
    i=0; while [ $i -lt 60 ] && [ $(cat $c) = 1 ]; do sleep 0.5; i=$((i + 1)); done
    [ $(cat $c) = 0 ] && echo RS-CARRIER-DOWN-OK
    i=0; while [ $i -lt 30 ] && [ $(cat $c) = 0 ]; do sleep 0.5; i=$((i + 1)); done
    [ $(cat $c) = 1 ] && echo RS-CARRIER-UP-OK
fi
echo RS-DMESG-BEGIN; dmesg; echo RS-DMESG-END"""
PAIR_MARKS = {1: ["RS-PEER-PING-OK", "RS-PEER-JUMBO-OK", "RS-PEER-FRAG-OK",
                  "RS-DMESG-END", "RS-CARRIER-DOWN-OK", "RS-CARRIER-UP-OK"],
              2: ["RS-PEER-PING-OK", "RS-PEER-JUMBO-OK", "RS-PEER-FRAG-OK",
                  "RS-DMESG-END"]}
# ... and their tests' names (two-vms/NAME/vmN)
PAIR_NAMES = {"RS-PEER-PING-OK": "peer-ping", "RS-PEER-JUMBO-OK": "peer-jumbo",
              "RS-PEER-FRAG-OK": "peer-fragmented",
              "RS-DMESG-END": "dmesg-printed",
              "RS-CARRIER-DOWN-OK": "carrier-down",
              "RS-CARRIER-UP-OK": "carrier-up"}
MKEY_TESTS = ["mkey-selftest/not-run-at-probe", "mkey-selftest/debugfs-ok",
              "mkey-selftest/logged-ok"]


def catalog():
    """The units (rstest/select.py), each with its tests, in the order
    they run."""
    user = (["launch-vms", "dmesg-printed", "probe-line", "eth0-link-up"] +
            list(USER_MARKS.values()) + MKEY_TESTS +
            ["dc-driver-data/" + c for c in DCBAD_CHECKS] +
            ["paths/" + c[len("paths-"):] for c in PATHS_CHECKS] +
            ["dmesg-clean"])
    pair = ["%s/vm%d" % (t, n) for n in (1, 2) for t in
            ["ran-and-powered-off"] + [PAIR_NAMES[m] for m in PAIR_MARKS[n]]
            + ["dmesg-clean"]]
    return {"build": ["build/warnings", "build/w1-warnings"],
            "user-net": ["user-net/" + t for t in user],
            "two-vms": ["two-vms/" + t for t in pair]}


def check(s: Suite, ok: bool, name: str, good: str, bad: str) -> None:
    """A test with its detail on the ok line too."""
    s.tap("ok" if ok else "fail", name, good if ok else bad)


class Abort(Exception):
    """A setup step failed: the tests after it are not run."""


def err(msg: str) -> None:
    print("[guest-driver] %s" % msg, file=sys.stderr, flush=True)


def installed_kver() -> str:
    r = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Status}\n",
                        "linux-headers-6.12*"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True, check=False)
    pkgs = [ln.split()[0] for ln in r.stdout.splitlines()
            if re.match(r"^linux-headers-6\.12\.[0-9]+\+.*-amd64 ", ln) and
            "install ok installed" in ln]
    if not pkgs:
        return ""
    newest = subprocess.run(["sort", "-V"], input="\n".join(pkgs) + "\n",
                            stdout=subprocess.PIPE, text=True,
                            check=False).stdout.split()[-1]
    return newest[len("linux-headers-"):]


def apt_need(pkg: str) -> bool:
    return subprocess.call(
        ["bash", "-c", '. "$1/scripts/apt-private.sh" && '
         'apt_need bookworm-backports "$2"', "apt-need", TOP, pkg],
        stdout=sys.stderr) == 0


def kernel_dir() -> str:
    """The guest kernel's build tree (its headers installed if needed)."""
    pkg = os.environ.get("RS_KERNEL_PKG", "")
    if pkg:
        kver = pkg[len("linux-image-"):] if pkg.startswith(
            "linux-image-") else pkg
        if not apt_need("linux-headers-" + kver):
            raise Abort("cannot install linux-headers-%s" % kver)
    else:
        kver = installed_kver()
        if not kver:
            if not apt_need("linux-headers-amd64"):
                raise Abort("cannot install linux-headers-amd64 from "
                            "bookworm-backports")
            kver = installed_kver()
    if not kver:
        raise Abort("no linux-headers-6.12.*-amd64 installed")
    kdir = "/lib/modules/%s/build" % kver
    if not os.path.exists(os.path.join(kdir, "Makefile")):
        kdir = "/usr/src/linux-headers-" + kver
    if not os.path.exists(os.path.join(kdir, "Makefile")):
        raise Abort("no kernel build tree for %s" % kver)
    return kdir


def make(kdir: str, src: str, log: str, *extra: str) -> bool:
    with open(log, "w") as f:
        return subprocess.call(
            ["make", "-C", kdir, "M=" + src,
             "RS_ABI_INCLUDE=" + os.path.join(TOP, "include")] +
            list(extra) + ["modules"], stdout=f, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL) == 0


def warnings(log: str) -> str:
    with open(log, errors="replace") as f:
        return " | ".join(ln.strip() for ln in f if WARN_RE.search(ln))


def build(s: Suite, out: str) -> str:
    """Both module builds, a test each; the module's path."""
    kdir = kernel_dir()
    src = os.path.join(out, "kmod")
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    for pat in ("Kbuild", "Makefile", "*.c", "*.h"):
        for p in glob.glob(os.path.join(TOP, "guest-driver", "kernel", pat)):
            shutil.copy(p, src)
    err("building rdma_session.ko against %s" % kdir)
    log = os.path.join(out, "build.log")
    if not make(kdir, src, log):
        with open(log, errors="replace") as f:
            s.note("".join(f.readlines()[-30:]).rstrip("\n"))
        s.report(False, "build/warnings",
                 "the module does not build (see %s)" % log)
        raise Abort("the module does not build")
    w = warnings(log)
    check(s, not w, "build/warnings", "the module builds without warnings",
          "the module build has warnings (see %s): %s" % (log, w))
    # the same sources with W=1 (extra warnings), in a second copy
    srcw = os.path.join(out, "kmod-w1")
    shutil.rmtree(srcw, ignore_errors=True)
    shutil.copytree(src, srcw)
    subprocess.call(["make", "-C", kdir, "M=" + srcw,
                     "RS_ABI_INCLUDE=" + os.path.join(TOP, "include"),
                     "W=1", "clean"], stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL)
    logw = os.path.join(out, "build-w1.log")
    ok = make(kdir, srcw, logw, "W=1")
    w = warnings(logw)
    check(s, ok and not w, "build/w1-warnings",
          "the module builds with W=1 without warnings",
          "the module build with W=1 fails or warns (see %s)%s" % (
                 logw, ": " + w if w else ""))
    ko = os.path.join(src, "rdma_session.ko")
    if not (os.path.exists(ko) and os.path.getsize(ko)):
        raise Abort("the build left no %s" % ko)
    return ko


def dmesg(lines):
    """The lines between RS-DMESG-BEGIN and RS-DMESG-END (both kept)."""
    out, inside = [], False
    for ln in lines:
        if ln == "RS-DMESG-BEGIN":
            inside = True
        if inside:
            out.append(ln)
            if ln == "RS-DMESG-END":
                inside = False
    return out


def has(lines, mark: str) -> bool:
    return any(ln.startswith(mark) for ln in lines)


def user_net(s: Suite, ko: str) -> dict:
    """The user-net VM: its tests; what the PASS notes say."""
    os.environ["RS_EXTRA_MODULES"] = ko
    r = s.launch("user-net", ["--no-build", "-q", "-n", "1", "--netdev-user",
                              "--timeout", TMO, "--cmd", USER_CMD],
                 vms_dir=os.path.join(s.dir, "vms-user-net"))
    serial = console.lines(os.path.join(s.dir, "vms-user-net", "vm1",
                                        "serial.log"))
    with open(os.path.join(s.dir, "serial.log"), "w") as f:
        f.write("\n".join(serial))
    dm = dmesg(serial)
    with open(os.path.join(s.dir, "dmesg.log"), "w") as f:
        f.writelines(ln + "\n" for ln in dm)
    if r.rc == 2:
        s.note("\n".join(r.lines[-20:]))
        s.launcher_check(r, "user-net")
        raise Abort("the launcher could not start the VM (see %s)" % r.path)
    s.launcher_check(r, "user-net")
    s.report("RS-DMESG-END" in dm, "user-net/dmesg-printed",
             "no RS-DMESG-END (see %s)" % os.path.join(s.dir, "serial.log"))
    probes = [ln for ln in dm if PROBE_RE.search(ln)]
    check(s, len(probes) == 2, "user-net/probe-line",
          "probe line (ABI 1.x, max_qp 255, max_cq 255, port ACTIVE) at "
          "boot and reload",
          "%d probe lines with the expected values, expected 2" %
             len(probes))
    nlan = sum(1 for ln in dm if LAN_RE.search(ln))
    check(s, nlan == 2, "user-net/eth0-link-up",
          "eth0 link up at boot and reload", "%d eth0 lines with link up, expected 2" % nlan)
    for m, t in USER_MARKS.items():
        check(s, has(serial, m), "user-net/" + t, m, "no %s" % m)
    # the mkey self-test: not at probe, run through debugfs after boot
    # and after the reload
    before = [ln for ln in serial if ln.startswith("RS-MKEY-BEFORE ")]
    check(s, [ln.split(" ", 2)[1:] for ln in before] ==
          [["boot", "not run"], ["reload", "not run"]],
          "user-net/" + MKEY_TESTS[0],
          "kernel-consumer key self-test not run at probe (debugfs "
          "mkey_selftest reads 'not run' at boot and reload)",
          " | ".join(before) or "no RS-MKEY-BEFORE line")
    runs = [ln for ln in serial if ln.startswith("RS-MKEY-SELFTEST ")]
    check(s, [ln.split(" ", 2)[1] for ln in runs] == ["boot", "reload"] and
          all(ln.endswith(": ok") for ln in runs),
          "user-net/" + MKEY_TESTS[1],
          "kernel-consumer key self-test (rs_ib_reg_mkey_list) run through "
          "debugfs at boot and reload reads ok",
          " | ".join(runs) or "no RS-MKEY-SELFTEST line")
    mk = [ln for ln in dm if "mkey self-test" in ln]
    check(s, len(mk) == 2 and all(ln.endswith(": ok") for ln in mk),
          "user-net/" + MKEY_TESTS[2],
          "kernel-consumer key self-test (rs_ib_reg_mkey_list) logged ok "
          "at boot and reload", " | ".join(mk) or "no mkey self-test line")
    for c in DCBAD_CHECKS:
        ln = next((x for x in serial if x.startswith("RS-DCBAD %s " % c)),
                  "")
        check(s, ln.startswith("RS-DCBAD %s ok " % c),
              "user-net/dc-driver-data/" + c, "DC driver data: " + ln,
              ln or "no RS-DCBAD %s line" % c)
    for c in PATHS_CHECKS:
        ln = next((x for x in serial if x.startswith("CHECK %s " % c)), "")
        check(s, ln.startswith("CHECK %s ok " % c),
              "user-net/paths/" + c[len("paths-"):],
              "multipath sessions: " + ln, ln or "no CHECK %s line" % c)
    bad = [ln for ln in dm if BAD_RE.search(ln)][:5]
    s.report(not bad, "user-net/dmesg-clean",
             "the kernel log has: %s" % " | ".join(bad))
    lease = next((ln[len("RS-DHCP-LEASE "):] for ln in serial
                  if ln.startswith("RS-DHCP-LEASE")), "")
    return {"probe": probes[0] if probes else "", "lease": lease,
            "dmesg": dm}


def two_vms(s: Suite, ko: str) -> None:
    """The two VMs, VM 1's carrier toggled by QMP set_link."""
    vms = os.path.join(s.dir, "vms-two-vms")
    vm1 = os.path.join(vms, "vm1", "serial.log")
    with s.start("two-vms", ["--no-build", "-q", "-n", "2", "--timeout", TMO,
                             "--cmd", PAIR_CMD], vms_dir=vms,
                 env={"RS_EXTRA_MODULES": ko}) as bg:
        # when VM 1 says RS-LINK-TEST, its link goes down for 3 s
        if bg.wait_for(float(TMO) + 120,
                       lambda: has(console.lines(vm1), "RS-LINK-TEST")):
            with open(os.path.join(s.dir, "two-vms.qmp.log"), "a") as f:
                sock = os.path.join(vms, "vm1", "qmp.sock")
                f.write("set_link n0 down: %s\n" % (qmp(sock, [(
                    "set_link", {"name": "n0", "up": False})]),))
                time.sleep(3)
                f.write("set_link n0 up: %s\n" % (qmp(sock, [(
                    "set_link", {"name": "n0", "up": True})]),))
        r = bg.wait()
    if r.rc == 2:
        s.note("\n".join(r.lines[-20:]))
        raise Abort("the launcher could not start the two VMs (see %s)"
                    % r.path)
    for n in (1, 2):
        path = os.path.join(vms, "vm%d" % n, "serial.log")
        serial = console.lines(path)
        st = r.first("launch-vms: vm%d: exit status" % n)
        check(s, st == "launch-vms: vm%d: exit status 0" % n,
              "two-vms/ran-and-powered-off/vm%d" % n, "exit status 0",
              "%s (see %s, %s)" % (st or "no status", path, r.path))
        for m in PAIR_MARKS[n]:
            check(s, has(serial, m), "two-vms/%s/vm%d" % (PAIR_NAMES[m], n),
                  m, "no %s (see %s)" % (m, path))
        bad = [ln for ln in dmesg(serial) if BAD_RE.search(ln)][:5]
        s.report(not bad, "two-vms/dmesg-clean/vm%d" % n,
                 "the kernel log has: %s" % " | ".join(bad))


def run(s: Suite, units) -> None:
    """The module build (whatever is selected: the VMs load it), then the
    chosen VM runs; a test a failed step leaves unreported fails
    (rstest/select.py: "not reported")."""
    out = os.path.join(BUILD, "guest-driver")
    os.makedirs(out, exist_ok=True)
    # one run at a time per build directory: the runs share out (the
    # module build)
    with open(os.path.join(out, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        run_locked(s, units, out)


def run_locked(s: Suite, units, out: str) -> None:
    failed = s.failed
    t = [time.time()]
    user = None
    try:
        ko = build(s, out)
        t.append(time.time())
        if "user-net" in units:
            user = user_net(s, ko)
        t.append(time.time())
        if "two-vms" in units:
            two_vms(s, ko)
        t.append(time.time())
    except Abort as e:
        err("error: %s" % e)
        s.note("guest-driver: FAIL: %s" % e)
    took = ["%d s" % (t[i + 1] - t[i]) if len(t) > i + 1 else "-"
            for i in range(3)]
    err("module build %s, image + user-net VM %s, two VMs %s; logs in %s "
        "and %s" % (took[0], took[1], took[2], out, s.dir))
    if s.failed == failed and user is not None and not s.select:
        s.note("guest-driver: PASS: %s" % user["probe"])
        s.note("guest-driver: PASS: eth0 link up; DHCP lease %s; slirp "
               "gateway ping; MTU 9000; rmmod with the interface up and "
               "insmod" % user["lease"])
        if "two-vms" in units:
            s.note("guest-driver: PASS: two VMs (10.77.0.1, 10.77.0.2) ping "
                   "each other: plain, 8000-byte and 30000-byte datagrams; "
                   "carrier follows set_link off/on")
    elif s.failed != failed and user is not None:
        s.note("\n".join([ln for ln in user["dmesg"]
                          if "rdma_session" in ln][:10]))


def main() -> int:
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *a: sys.exit(130))
    return select.main("guest-driver", catalog(), run, sys.argv[1:], __doc__)


if __name__ == "__main__":
    sys.exit(main())
