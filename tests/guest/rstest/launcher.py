"""Start N guests (default 2) with the rdma-session adapter under TCG on one
L2 segment, wait until each is ready, run a command in each, collect the
outputs and exit statuses, and tear everything down (also on failure,
timeout or Ctrl-C).

The segment is QEMU's own multicast socket backend on the loopback
interface (-netdev socket,mcast=230.x.y.z:port,localaddr=127.0.0.1, a
random group per run): nothing leaves the host and no switch or tap
device is needed (--ecmp puts the VMs on a routed network of network
namespaces instead, rstest/ecmp.py).  VM i (1..N) gets MAC
52:54:00:77:00:<i> and address 10.77.0.<i>/24 on its interface (the
adapter's Ethernet function).

Each guest's /init (scripts/guest-image.sh) loads the modules, brings the
interface up, prints "rs-init: ready", then waits on its second serial
port until the launcher sends the command, which it sends to all VMs
once every VM is ready.  The command runs with sh -c and sees
  RS_VM_INDEX  its VM's index (1..N)      RS_VM_COUNT  N
  RS_IP        its own address            RS_PEERS     the other VMs' addresses
  RS_PEER      the next VM's address (VM N: VM 1's)   RS_IFACE  interface
  rs_barrier K [S]  a shell function: returns once every VM called
               rs_barrier K (TCP ports 30000+K and 31000+K; fails after S
               seconds, default 120)
(with --netdev-user the addresses come from DHCP: RS_IP, RS_PEER and
RS_PEERS are empty, and rs_barrier does not work).

Usage: scripts/launch-vms.sh [options] [-- extra QEMU arguments for every VM]
  -n N               number of VMs (default 2)
  --cmd 'CMD'        command for every VM (default: ibv_devinfo; ip -4 addr)
  --vm-cmd I 'CMD'   command for VM I only (overrides --cmd for that VM)
  --timeout S        seconds the commands may run (default 120)
  --boot-timeout S   seconds for all VMs to become ready (default 120)
  --netdev-user      each VM on its own -netdev user (slirp) instead of the
                     shared segment; the interface is configured by DHCP
  --dgram            two VMs only: connect them with -netdev dgram (a
                     unicast UDP socket pair on loopback) instead of the
                     multicast segment; each QEMU then receives only its
                     peer's frames, not every frame on the segment
  --stream           two VMs only: connect them with -netdev stream over
                     a Unix socket (VM 1 listens): no frame is lost,
                     since the stream has flow control
  --ecmp N           a routed multipath network instead of the segment
                     (tests/guest/rstest/ecmp.py): network namespaces made
                     for the run and removed after it, VM I behind host
                     namespace hI (a tap device, QEMU started there), N
                     router namespaces r1..rN (1..8) each linked to every
                     hI, ECMP routes over all N with the L4 hash
                     (fib_multipath_hash_policy=1), so each UDP source
                     port takes its router; VM I gets 10.77.I.1/24 and a
                     default route via hI (10.77.I.254); IPv6 alike (the
                     guest adds fd77:I::1/64 and a route to fd77::/16 via
                     hI's fd77:I::254); MTU 9000; at most
                     8 VMs; not with --migrate.  The namespaces are
                     rse<PID>-hI and rse<PID>-rK (ip netns list; e.g.
                     ip netns exec rse123-r2 ip -s link); <run>/ecmp.json
                     names them; a crashed run's are removed by the next
  --overlay          hosts joined by a VXLAN overlay instead of the segment
                     (tests/guest/rstest/overlay.py): network namespaces
                     made for the run and removed after it, 3 hosts (more
                     if --host names more) each with a bridge, a tap per
                     VM on it and an underlay address 10.250.0.H; VM 1
                     on host 1, the others on host 3 unless --host says
                     otherwise; --migrate moves a VM to the first host no
                     other VM started on and back (h1 to h2 to h1 ...),
                     over TCP between the hosts' underlay addresses, and
                     prints when each host's overlay learned the move.
                     The namespaces are rso<PID>-hH and rso<PID>-u
  --host I H         with --overlay: VM I starts on host H (1..8)
  --ecmp-capture     with --ecmp: record the RoCEv2 frames that come for
                     VM I, IPv4 and IPv6 (80 bytes each), on hI's router
                     links into <run>/ecmp-hI.pcapng and print, after the
                     commands, the frames between each pair of VMs per
                     router and per UDP source port
  --soft-roce        every VM gets virtio-net-pci instead of the adapter
                     and Linux soft-RoCE (rdma_rxe, device rxe0)
  --soft-roce-vm I   only VM I does (repeatable)
  --pcap I FILE      record VM I's network traffic, both directions, into
                     the pcap FILE (QEMU's filter-dump on its netdev;
                     repeatable; after VM I's k-th migration in FILE.k)
  --shell I          interactive shell on VM I's console (the others boot
                     and run --cmd if one was given); exit powers it off
  --device DEV       the adapter's -device name (default rdma-session)
  --local-fabric DIR every VM's RAM in a shared memfd backend and its
                     adapter (QOM path /machine/peripheral/rsfab) with
                     local-fabric=DIR (created if missing):
                     RoCE traffic between the VMs goes over the fabric's
                     channel, payloads by reference (docs/specs "Local
                     fabric"); with --pcap I FILE, what VM I's adapter
                     sent and received over it goes to FILE.fabric
  --mem MB           guest memory (default 512; 1536 with --distro)
  --distro           the Debian guest instead of the initramfs guest
                     (scripts/distro-image.sh: bookworm with the 6.12
                     kernel, systemd, the RDMA stacks; the adapter's
                     driver and provider installed as packages, DKMS
                     building the module in the guest, rstest/distro.py),
                     its disk a snapshot per VM; 2 vCPUs each
  --smp N            vCPUs per VM (default 1; 2 with --distro)
  --share DIR        with --distro: the host directory DIR in every guest
                     at /mnt/host (virtio-9p; what the guests write there
                     is on the host afterwards), the command run there
  --migrate I@S[xN]  live-migrate VM I to a new QEMU on this host S seconds
                     after the commands start, N times (default 1), every S
                     seconds (repeatable, one VM each;
                     tests/guest/rstest/migration.py; the multicast segment
                     or --overlay); each migration's figures are printed (QEMU's
                     and the RDMA stall VM I's peer, RS_PEER, saw at the
                     switch, from a capture of the peer's netdev,
                     <run>/vmJ/migrate-peer.pcap, and with --local-fabric
                     of its fabric, migrate-peer.pcap.fabric; their
                     median and worst), and a failed migration fails the
                     run
  --migrate-hold S   each of those migrations holds the switchover S
                     seconds with the VM stopped (a long downtime)
  --migrate-drill    first try migrations that must fail and leave VM I
                     running (another max-qps, another MAC, cancelled)
  --migrate-no-announce  the destinations send no announcement when they
                     start to run (QEMU's announce-rounds 0)
  --no-build         do not run scripts/build-qemu.sh first
  -q, --quiet        only the command outputs and the summary
Environment: RS_ACCEL=kvm (KVM instead of TCG; only if it really works),
  RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_NO_BUILD=1 (--no-build),
  RS_KERNEL_ARGS (more guest kernel parameters for every VM, e.g.
  tsc=reliable: bench/run-bench.sh), RS_LOCAL_FABRIC=1 (--local-fabric
  on the run directory's fabric/ unless given: any suite's VMs on the
  local fabric; with --ecmp each VM, a host of its own behind the
  routers, alone on a fabric of its own, fabric/hI, so that its RoCE
  traffic still crosses the routers),
  RS_VMS_LOGDIR (default $RS_BUILD/vms/<run>; the last run is linked as
  $RS_BUILD/vms/last), the guest-image.sh variables.
Each VM has a QMP socket, <run>/vmI/qmp.sock (scripts/qmp.py sends it
commands, e.g. system_reset); its /init takes a new command on the control
port after every boot ("go BASE64" written to <run>/vmI/ctl.in).
The run directory: vmI/serial.log (console), qemu.log (QEMU's output),
cmdline, pid, cmd.sh (the script sent), output (the command's output),
ctl.in/ctl.out, qmp.sock; with --migrate migrate.log, qemu-K.log,
qmp-K.sock; harness.log (the QEMU library's log).
Output: the command's output of each VM, each line prefixed "[vmI] ", then
"launch-vms: vmI: exit status S" per VM and a summary line.  Exits 0 if
every command exited 0 and every QEMU powered off cleanly, 1 otherwise,
2 on a setup error.
"""

import atexit
import glob
import logging
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

from . import console, ecmp, overlay
from .qemupath import BUILD, TOP
from .vm import (VM, DgramSegment, EcmpSegment, McastSegment,
                 OverlaySegment, Segment, StreamSegment, UserSegment,
                 guest_script)
from .migration import Mover

QUIET = False


def log(msg: str) -> None:
    if not QUIET:
        print("[launch-vms] %s" % msg, file=sys.stderr, flush=True)


class SetupError(Exception):
    """Exit status 2."""


class Interrupted(Exception):
    """SIGINT, SIGTERM or SIGHUP."""


def die(msg: str):
    raise SetupError(msg)



class FabricTally:
    """--local-fabric: what each VM's adapter sent over the fabric, from
    its x-fabric-* counters, read every few seconds on its qmp.sock while
    the commands run (a migration's destination counts from zero again:
    what the source had read is kept)."""

    NAMES = ("tx-ref", "tx-ref-bytes", "tx-inline", "tx-inline-bytes",
             "rx-bad-ref", "rx-dropped")

    def __init__(self) -> None:
        self.done: Dict[int, Dict[str, int]] = {}
        self.last: Dict[int, Dict[str, int]] = {}
        self.t = 0.0

    def sample(self, vms: List[VM], force: bool = False) -> None:
        if not force and time.monotonic() - self.t < 3:
            return
        self.t = time.monotonic()
        from .suite import qmp  # pylint: disable=import-outside-toplevel
        for vm in vms:
            if not vm.qmp_sock or not vm.is_running():
                continue
            ok, r = qmp(vm.qmp_sock, [
                ("qom-get", {"path": "/machine/peripheral/rsfab",
                             "property": "x-fabric-" + n})
                for n in self.NAMES])
            if not ok:
                continue
            now = dict(zip(self.NAMES, r))
            last = self.last.get(vm.index)
            if last and now["tx-ref"] + now["tx-inline"] < \
                    last["tx-ref"] + last["tx-inline"]:
                done = self.done.setdefault(vm.index, {})
                for n in self.NAMES:
                    done[n] = done.get(n, 0) + last[n]
            self.last[vm.index] = now

    def lines(self) -> List[str]:
        out = []
        for i, last in sorted(self.last.items()):
            t = {n: last[n] + self.done.get(i, {}).get(n, 0)
                 for n in self.NAMES}
            out.append("local fabric: vm%d sent %d frames by reference "
                       "(%d payload bytes) and %d inline (%d bytes); "
                       "received %d bad references, dropped %d (at the "
                       "last reading)" % (
                           i, t["tx-ref"], t["tx-ref-bytes"], t["tx-inline"],
                           t["tx-inline-bytes"], t["rx-bad-ref"],
                           t["rx-dropped"]))
        return out


# The longest local-fabric directory the adapter takes (its socket names,
# "/<16 hex digits>.v2.sock", after it in a 108-byte sockaddr_un).
FABRIC_DIR_MAX = 82


def fabric_of(o, i: int) -> str:
    """--local-fabric: VM i's fabric directory (RS_LOCAL_FABRIC=1 with
    --ecmp: a fabric per VM, each VM a host of its own)."""
    return os.path.join(o.fabric, "h%d" % i) if o.fabric_per_vm else o.fabric


def fabric_pcap(o, run: str, i: int, peer: bool) -> str:
    """--local-fabric: VM i's capture of the fabric, next to the netdev's
    whose RoCE frames it takes: a migrating VM's peer's (the stall its
    capture shows, rstest/migration.py), else --pcap I FILE's."""
    if not o.fabric or not (peer or o.pcap.get(i)):
        return ""
    return ",fabric-pcap=%s.fabric" % (
        os.path.join(run, "vm%d" % i, "migrate-peer.pcap") if peer
        else o.pcap[i])


def fabric_ram(o) -> List[str]:
    """--local-fabric: the VM's RAM in a memfd the fabric's peers map."""
    if not o.fabric:
        return []
    return ["-object", "memory-backend-memfd,id=rsram,size=%dM,share=on"
            % o.mem, "-machine", "memory-backend=rsram"]

class Options:
    # pylint: disable=too-many-instance-attributes,too-few-public-methods
    def __init__(self) -> None:
        self.n = 2
        self.cmd = "ibv_devinfo; ip -4 addr"
        self.cmd_given = False
        self.vmcmd: Dict[int, str] = {}
        self.tmo = 120.0
        self.btmo = 120.0
        self.user = self.dgram = self.stream = False
        self.ecmp = 0
        self.ecmp_capture = False
        self.overlay = False
        self.hosts: Dict[int, int] = {}
        self.mig_announce = True
        self.softall = False
        self.soft: Dict[int, bool] = {}
        self.pcap: Dict[int, str] = {}
        self.shell = 0
        self.device = "rdma-session"
        self.mem = 0
        self.distro = False
        self.smp = 0
        self.share = ""
        self.fabric = ""
        # RS_LOCAL_FABRIC=1: every launch on its own fabric (its run
        # directory's), so that concurrent launches never meet
        self.fabric_own = os.environ.get("RS_LOCAL_FABRIC", "0") == "1"
        self.fabric_per_vm = False
        # (rstest.distro: the driver's installation boots the disk itself)
        self.disk_writable = False
        self.build = os.environ.get("RS_NO_BUILD", "0") != "1"
        # VM -> (after, count)
        self.migrate: Dict[int, Tuple[float, int]] = {}
        self.mig_hold = 0.0
        self.mig_drill = False
        self.extra: List[str] = []


def number(opt: str, val: str) -> float:
    try:
        return float(val)
    except ValueError:
        die("%s takes a number, not %s" % (opt, val))
    return 0.0


def index(opt: str, val: str) -> int:
    if not re.fullmatch(r"[0-9]+", val):
        die("%s takes a VM index, not %s" % (opt, val))
    return int(val)


def parse(argv: List[str]) -> Optional[Options]:
    """The options, or None after --help."""
    o = Options()
    migrate: List[str] = []
    hold = "0"
    args = list(argv)

    def take(k: int = 1) -> List[str]:
        if len(args) < k:
            die("%s needs %d argument%s (see --help)" %
                (opt, k, "s" if k > 1 else ""))
        got = args[:k]
        del args[:k]
        return got

    while args:
        opt = args.pop(0)
        if opt == "-n":
            v = take()[0]
            if not re.fullmatch(r"[0-9]+", v):
                die("-n needs a number")
            o.n = int(v)
        elif opt == "--cmd":
            o.cmd = take()[0]
            o.cmd_given = True
        elif opt == "--vm-cmd":
            i, c = take(2)
            o.vmcmd[index(opt, i)] = c
        elif opt == "--timeout":
            o.tmo = number(opt, take()[0])
        elif opt == "--boot-timeout":
            o.btmo = number(opt, take()[0])
        elif opt == "--netdev-user":
            o.user = True
        elif opt == "--dgram":
            o.dgram = True
        elif opt == "--stream":
            o.stream = True
        elif opt == "--ecmp":
            v = take()[0]
            if not re.fullmatch(r"[1-8]", v):
                die("--ecmp takes a number of routers, 1..8")
            o.ecmp = int(v)
        elif opt == "--overlay":
            o.overlay = True
        elif opt == "--host":
            i, h = take(2)
            if not re.fullmatch(r"[1-8]", h):
                die("--host %s %s: hosts are 1..%d" % (i, h,
                                                       overlay.MAX_HOSTS))
            o.hosts[index(opt, i)] = int(h)
        elif opt == "--migrate-no-announce":
            o.mig_announce = False
        elif opt == "--ecmp-capture":
            o.ecmp_capture = True
        elif opt == "--soft-roce":
            o.softall = True
        elif opt == "--soft-roce-vm":
            o.soft[index(opt, take()[0])] = True
        elif opt == "--pcap":
            i, f = take(2)
            o.pcap[index(opt, i)] = f
        elif opt == "--shell":
            o.shell = index(opt, take()[0])
        elif opt == "--device":
            o.device = take()[0]
        elif opt == "--mem":
            o.mem = int(index(opt, take()[0]))
        elif opt == "--distro":
            o.distro = True
        elif opt == "--smp":
            o.smp = index(opt, take()[0])
        elif opt == "--share":
            o.share = os.path.abspath(take()[0])
        elif opt == "--local-fabric":
            o.fabric = os.path.abspath(take()[0])
        elif opt == "--migrate":
            migrate.append(take()[0])
        elif opt == "--migrate-hold":
            hold = take()[0]
        elif opt == "--migrate-drill":
            o.mig_drill = True
        elif opt == "--no-build":
            o.build = False
        elif opt in ("-q", "--quiet"):
            global QUIET  # pylint: disable=global-statement
            QUIET = True
        elif opt == "--":
            o.extra = args
            break
        elif opt in ("-h", "--help"):
            print(__doc__.strip())
            return None
        else:
            die("unknown argument %s (see --help)" % opt)
    n = o.n
    if not 1 <= n <= 200:
        die("-n must be 1..200")
    o.mem = o.mem or (1536 if o.distro else 512)
    o.smp = o.smp or (2 if o.distro else 1)
    if o.fabric:
        os.makedirs(o.fabric, exist_ok=True)
    if o.share:
        if not o.distro:
            die("--share needs --distro (the initramfs guest has no 9p)")
        if not os.path.isdir(o.share):
            die("--share %s: no such directory" % o.share)
    if o.distro and o.shell:
        die("--shell: the Debian guest's console is its log; log in "
            "with ssh from another VM")
    if o.shell > n:
        die("--shell %d: there are only %d VMs" % (o.shell, n))
    if o.dgram and n != 2:
        die("--dgram connects exactly two VMs (-n 2)")
    if o.stream and n != 2:
        die("--stream connects exactly two VMs (-n 2)")
    if o.dgram and o.stream:
        die("--dgram or --stream, not both")
    if o.ecmp:
        if o.user or o.dgram or o.stream:
            die("--ecmp is a network of its own: not with --netdev-user, "
                "--dgram or --stream")
        if migrate:
            die("--ecmp: no --migrate (the destination would need the "
                "tap device of its source)")
        if n > ecmp.MAX_HOSTS:
            die("--ecmp: at most %d VMs" % ecmp.MAX_HOSTS)
    elif o.ecmp_capture:
        die("--ecmp-capture needs --ecmp")
    if o.overlay:
        if o.user or o.dgram or o.stream or o.ecmp:
            die("--overlay is a network of its own: not with --netdev-user, "
                "--dgram, --stream or --ecmp")
    elif o.hosts:
        die("--host needs --overlay")
    for m in migrate:
        r = re.fullmatch(r"([0-9]+)@([0-9.]+)(x([0-9]+))?", m)
        if not r:
            die("--migrate takes I@SECONDS[xCOUNT], e.g. 1@10x3")
        v = int(r.group(1))
        if not 1 <= v <= n:
            die("--migrate %s: no VM %d" % (m, v))
        if v in o.migrate:
            die("--migrate %s: VM %d twice" % (m, v))
        o.migrate[v] = (number("--migrate", r.group(2)),
                        int(r.group(4) or 1))
    if o.migrate:
        if o.user or o.dgram or o.stream:
            die("--migrate needs the multicast segment or --overlay (the "
                "destination joins it too)")
        if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", hold):
            die("--migrate-hold takes seconds, e.g. 30")
        o.mig_hold = float(hold)
    for i in list(o.vmcmd) + list(o.soft) + list(o.pcap) + list(o.hosts):
        if not 1 <= i <= n:
            die("VM index %d out of range 1..%d" % (i, n))
    return o


def mig_peer(o: Options, v: int) -> Optional[int]:
    """VM v's RS_PEER, whose capture shows the stall (None: no other VM)."""
    p = v % o.n + 1
    return p if p != v else None


def prepare(o: Options) -> Tuple[str, Dict[str, str]]:
    """Build QEMU if asked and the guest image; the QEMU binary and the
    image (RS_KERNEL, RS_INITRD, RS_KVER)."""
    qemu = os.path.join(BUILD, "qemu", "qemu-system-x86_64")
    if o.build:
        log("building QEMU (scripts/build-qemu.sh)")
        if subprocess.call([os.path.join(TOP, "scripts", "build-qemu.sh"),
                            "qemu-system-x86_64"], stdout=sys.stderr) != 0:
            die("QEMU build failed (scripts/build-qemu.sh)")
    if not os.access(qemu, os.X_OK):
        die("%s does not exist: run scripts/build-qemu.sh" % qemu)
    if o.distro:
        # pylint: disable=import-outside-toplevel
        from . import distro
        log("the Debian guest (scripts/distro-image.sh, rstest/distro.py)")
        try:
            img = distro.image(qemu, log, QUIET)
        except distro.DistroError as e:
            die(str(e))
    else:
        log("building the guest image (scripts/guest-image.sh)")
        img = image_script("guest-image.sh")
    devs = subprocess.run([qemu, "-device", "help"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, check=False)
    if not any(ln.startswith('name "%s"' % o.device)
               for ln in devs.stdout.splitlines()):
        die('this QEMU build has no device "%s" (%s -device help)' %
            (o.device, qemu))
    firmware()
    accel()         # (both checked before the run directory is made)
    return qemu, img


def image_script(name: str) -> Dict[str, str]:
    """What scripts/NAME prints (VAR=value lines), its progress on stderr
    unless quiet."""
    r = subprocess.run([os.path.join(TOP, "scripts", name)],
                       stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL if QUIET else None,
                       text=True, check=False)
    if r.returncode != 0:
        die("guest image build failed (scripts/%s)" % name)
    img = {}
    for ln in r.stdout.splitlines():
        k, _, v = ln.partition("=")
        img[k] = (shlex.split(v) or [""])[0]
    return img


def firmware() -> List[str]:
    fw: List[str] = []
    for d in ("/usr/share/seabios", "/usr/share/qemu", "/usr/lib/ipxe/qemu"):
        if os.path.isdir(d):
            fw += ["-L", d]
    if not os.path.exists("/usr/share/seabios/bios-256k.bin"):
        die("SeaBIOS is missing: install Debian's seabios package "
            "(scripts/build-qemu.sh does)")
    return fw


def accel() -> List[str]:
    a = os.environ.get("RS_ACCEL", "tcg")
    if a == "kvm":
        return ["-accel", "kvm", "-cpu", "host"]
    if a == "tcg":
        return ["-accel", "tcg"]
    die("RS_ACCEL must be tcg or kvm, not %s" % a)
    return []


def run_dir(given: Optional[str] = None) -> str:
    """The run's directory (given, else $RS_VMS_LOGDIR, else a new one
    under $RS_BUILD/vms); the five most recent runs under $RS_BUILD/vms
    are kept."""
    vms = os.path.join(BUILD, "vms")
    os.makedirs(vms, exist_ok=True)
    run = given or os.environ.get("RS_VMS_LOGDIR")
    if run:
        os.makedirs(run, exist_ok=True)
    else:
        run = tempfile.mkdtemp(prefix="run.", dir=vms)
        os.chmod(run, 0o755)
        tmp = os.path.join(vms, ".last.%d" % os.getpid())
        os.symlink(os.path.basename(run), tmp)
        os.replace(tmp, os.path.join(vms, "last"))
    runs = sorted((d for d in glob.glob(os.path.join(vms, "run.*"))
                   if os.path.isdir(d) and not os.path.islink(d)),
                  key=os.path.getmtime, reverse=True)
    for d in runs[5:]:
        subprocess.call(["rm", "-rf", d])
    return run


def tail(path: str, n: int = 15) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def since(t: float) -> str:
    return "%.1f" % (time.time() - t)


class Launch:
    """One run: its VMs, their commands, the report."""

    def __init__(self, o: Options, qemu: str, img: Dict[str, str],
                 run: str):
        self.o = o
        self.run = run
        self.qemu = qemu
        self.img = img
        self.net: Optional[ecmp.Ecmp] = None
        self.overlay: Optional[overlay.Overlay] = None
        if o.overlay:
            self.overlay = overlay.Overlay(
                run, [o.hosts.get(i, 1 if i == 1 else 3)
                      for i in range(1, o.n + 1)])
            try:
                self.overlay.create()   # (removes what it made on failure)
            except overlay.OverlayError as e:
                die("--overlay: %s" % e)
            self.segment: Segment = OverlaySegment(self.overlay)
        elif o.ecmp:
            self.net = ecmp.Ecmp(run, o.n, o.ecmp)
            try:
                self.net.create()
                if o.ecmp_capture:
                    self.net.start_captures()
            except ecmp.EcmpError as e:
                self.net.destroy()
                die("--ecmp: %s" % e)
            except BaseException:
                self.net.destroy()
                raise
            self.segment = EcmpSegment(self.net)
        elif o.user:
            self.segment = UserSegment()
        elif o.dgram:
            self.segment = DgramSegment()
        elif o.stream:
            self.segment = StreamSegment(os.path.join(run, "segment.sock"))
        else:
            self.segment = McastSegment()
        self.vms: Dict[int, VM] = {}
        self.movers: Dict[int, Mover] = {}
        if o.fabric_own and not o.fabric:
            o.fabric = os.path.join(run, "fabric")
            # The adapters' socket paths (a sockaddr_un) leave the
            # directory FABRIC_DIR_MAX bytes: a deeper run directory has
            # its fabric in /tmp, linked as fabric.
            if len(o.fabric) + len("/h%d" % o.n) > FABRIC_DIR_MAX:
                short = tempfile.mkdtemp(prefix="rsfab-")
                atexit.register(shutil.rmtree, short, True)
                os.symlink(short, o.fabric)
                o.fabric = short
            # A fabric is one host's (VMs on one host, docs/specs "Local
            # fabric"): the VMs of --ecmp stand for hosts of their own
            # behind the routers (namespace hI each), so each is alone on
            # a fabric of its own, fabric/hI, and its RoCE traffic goes
            # over the routers as it would between hosts.
            o.fabric_per_vm = bool(o.ecmp)
            for i in range(1, o.n + 1):
                os.makedirs(fabric_of(o, i), exist_ok=True)
        self.fabric = FabricTally() if o.fabric else None
        try:
            self.add_vms()
        except BaseException:
            self.teardown()
            raise
        self.ready: Dict[int, str] = {}

    def add_vms(self) -> None:
        o = self.o
        peers = {mig_peer(o, v) for v in o.migrate} - {None}
        fw, acc = firmware(), accel()
        for i in range(1, o.n + 1):
            self.vms[i] = VM(
                i, self.run, binary=self.qemu, kernel=self.img["RS_KERNEL"],
                initrd=self.img["RS_INITRD"], segment=self.segment,
                device=o.device + (",id=rsfab,local-fabric=%s" %
                                   fabric_of(o, i) if o.fabric else "") +
                fabric_pcap(o, self.run, i, i in peers),
                mem=o.mem, accel=acc, firmware=fw,
                soft_roce=self.soft(i), pcap=o.pcap.get(i),
                peer_capture=i in peers,
                kernel_args=os.environ.get("RS_KERNEL_ARGS", ""),
                interactive=i == o.shell,
                extra=fabric_ram(o) + (o.extra or []),
                disk=self.img.get("RS_DISK"), smp=o.smp,
                disk_writable=o.disk_writable, share=o.share or None)

    def soft(self, i: int) -> bool:
        return self.o.softall or i in self.o.soft

    def script(self, i: int) -> str:
        cmd = self.o.vmcmd.get(i, self.o.cmd)
        if self.o.share:
            cmd = "cd /mnt/host || exit 1\n" + cmd
        return guest_script(i, self.o.n, self.segment, cmd, self.soft(i),
                            self.o.distro)

    def started(self) -> List[VM]:
        return [vm for i, vm in sorted(self.vms.items()) if i != self.o.shell]

    def teardown(self) -> None:
        for m in self.movers.values():
            m.stop()
        for vm in self.vms.values():
            vm.stop()
        if self.net is not None:
            self.net.destroy()
        if self.overlay is not None:
            self.overlay.destroy()

    def launch(self) -> bool:
        for vm in self.started():
            try:
                vm.launch()
            except Exception as e:  # pylint: disable=broad-except
                rc = vm.machine.exitcode() if vm.machine else None
                print("[launch-vms] %s: QEMU exited (status %s) before the "
                      "guest was ready: %s" % (vm.name, rc,
                                                     str(e).splitlines()[0]),
                      file=sys.stderr)
                for f in ("qemu.log", "serial.log"):
                    print("==> %s <==\n%s" % (os.path.join(vm.dir, f),
                                              tail(os.path.join(vm.dir, f))),
                          file=sys.stderr)
                return False
        return True

    def wait_ready(self, tb: float) -> bool:
        deadline = time.monotonic() + self.o.btmo
        while True:
            done = True
            for vm in self.started():
                if vm.index in self.ready:
                    continue
                text = vm.console()
                if console.readies(text):
                    self.ready[vm.index] = since(tb)
                    log("%s ready after %s s: %s" % (
                        vm.name, self.ready[vm.index],
                        console.ready_summary(text)))
                    continue
                done = False
                if not vm.is_running():
                    assert vm.machine is not None
                    try:
                        vm.machine.wait()
                    except Exception:  # pylint: disable=broad-except
                        pass    # (its QMP connection broke with it)
                    print("[launch-vms] %s: QEMU exited (status %s) before "
                          "the guest was ready:" % (vm.name,
                                                    vm.machine.exitcode()),
                          file=sys.stderr)
                    for f in ("qemu.log", "serial.log"):
                        p = os.path.join(vm.dir, f)
                        print("==> %s <==\n%s" % (p, tail(p)),
                              file=sys.stderr)
                    return False
            if done:
                return True
            if time.monotonic() >= deadline:
                for vm in self.started():
                    if vm.index not in self.ready:
                        print("[launch-vms] %s not ready after %g s; its "
                              "console:\n%s" % (vm.name, self.o.btmo,
                                                tail(vm.serial_log)),
                              end="", file=sys.stderr)
                return False
            time.sleep(0.2)

    def shell(self) -> int:
        """The others run their commands (if any) in the background; the
        shell VM gets the terminal, its console also logged."""
        o = self.o
        others = self.started()
        if others and self.launch() and self.wait_ready(time.time()) and \
                (o.cmd_given or o.vmcmd):
            for vm in others:
                vm.send(self.script(vm.index))
        ip = self.segment.ip
        log("shell on vm%d (its address %s; the others: %s)" % (
            o.shell, ip(o.shell),
            "".join("%s " % ip(vm.index) for vm in others)))
        log('"exit" powers it off; Ctrl-A x quits QEMU')
        vm = self.vms[o.shell]
        return subprocess.call(self.segment.wrapper(o.shell) + [self.qemu] +
                               vm.args)

    def commands(self) -> Dict[int, str]:
        """Send every VM its command, migrate, collect the statuses."""
        o = self.o
        for vm in self.started():
            s = self.script(vm.index)
            with open(os.path.join(vm.dir, "cmd.sh"), "w") as f:
                f.write(s)
            vm.send(s)
        hold = o.mig_hold
        for v, (after, count) in sorted(o.migrate.items()):
            p = mig_peer(o, v)
            cap = None
            if p is not None:
                cap = (os.path.join(self.vms[p].dir, "migrate-peer.pcap"),
                       self.segment.ip(v), self.segment.ip(p))
            self.movers[v] = Mover(self.vms[v], after, count, after, hold,
                                   o.mig_drill, cap, o.mig_announce)
            self.movers[v].start()
        st: Dict[int, str] = {}
        deadline = time.monotonic() + o.tmo
        while True:
            if self.fabric is not None:
                self.fabric.sample(self.started())
            done = True
            for vm in self.started():
                if vm.index in st:
                    continue
                s = vm.exit_status()
                if s is not None:
                    st[vm.index] = s
                    if self.fabric is not None:
                        self.fabric.sample([vm], force=True)
                    continue
                done = False
                if not vm.is_running():
                    # it may have written its status just after the read
                    s = vm.exit_status()
                    st[vm.index] = s if s is not None else "QEMU exited"
            if done:
                return st
            if time.monotonic() >= deadline:
                for vm in self.started():
                    st.setdefault(vm.index, "timed out after %g s" % o.tmo)
                return st
            time.sleep(0.2)

    def ecmp_summary(self) -> List[str]:
        """The RoCEv2 frames between each pair of VMs per router and per
        UDP source port, from the captures where they arrived."""
        out = []
        assert self.net is not None
        for i in range(1, self.o.n + 1):
            try:
                fr = ecmp.read_frames(self.net.pcap(i))
            except ecmp.EcmpError as e:
                out.append("ecmp: vm%d: %s" % (i, e))
                continue
            drops = self.net.capture_drops(i)
            if drops:
                out.append("ecmp: the capture for vm%d dropped frames: %s"
                           % (i, drops))
            for j in range(1, self.o.n + 1):
                # (IPv4 and IPv6: the network is dual stack)
                got = [f for f in fr if f.src in (self.segment.ip(j),
                                                  ecmp.vm_ip6(j))]
                if not got:
                    continue
                paths = ecmp.per(got, lambda f: f.ifname)
                ports = ecmp.per(got, lambda f: f.sport)
                out.append("ecmp: vm%d -> vm%d: %d RoCEv2 frames; per "
                           "router: %s; per UDP source port: %s" % (
                               j, i, len(got), " ".join(
                                   "%s=%d" % kv for kv in sorted(
                                       paths.items())),
                               " ".join("%d=%d" % kv for kv in sorted(
                                   ports.items()))))
        return out

    def main(self, t0: float) -> int:
        o = self.o
        tb = time.time()
        log("starting %d VM(s) (%s, kernel %s, %s); logs in %s" % (
            o.n, os.environ.get("RS_ACCEL", "tcg"), self.img.get("RS_KVER"),
            self.segment.describe(), self.run))
        if o.shell:
            return self.shell()
        if not self.launch() or not self.wait_ready(tb):
            print("launch-vms: FAIL: not every VM became ready (logs in %s)"
                  % self.run, flush=True)
            return 1
        tr0 = time.time()
        st = self.commands()
        tr1 = time.time()
        # Let the guests power off; QEMU must end with status 0.
        qrc: Dict[int, object] = {}
        for vm in self.started():
            r = vm.settle(60 if o.distro else 10)
            if r is not None:
                qrc[vm.index] = r
        for m in self.movers.values():
            m.stop()        # (no more migrations: the commands ended)
        for v, m in sorted(self.movers.items()):
            m.join()
            for ln in m.lines():
                print("[launch-vms] %s" % ln)
            if not m.ok:
                qrc[v] = "migration failed (see %s)" % m.log_path
        if self.fabric is not None:
            for ln in self.fabric.lines():
                print("[launch-vms] %s" % ln, flush=True)
        if self.net is not None and self.net.captures:
            self.net.stop_captures()
            if not QUIET:
                for ln in self.ecmp_summary():
                    log(ln)
        fail = False
        for vm in self.started():
            out = vm.output()
            with open(os.path.join(vm.dir, "output"), "w") as f:
                f.write("".join(ln + "\n" for ln in out))
            for ln in out:
                print("[%s] %s" % (vm.name, ln))
        for vm in self.started():
            i = vm.index
            note = ""
            if i in qrc:
                note = ", QEMU: %s (see %s)" % (
                    qrc[i], os.path.join(vm.dir, "qemu.log"))
            if st[i] != "0" or i in qrc:
                fail = True
            print("launch-vms: %s: exit status %s%s" % (vm.name, st[i], note))
        summary = ("build %.1f s, boot to ready %.1f s, commands %.1f s" %
                   (tb - t0, tr0 - tb, tr1 - tr0))
        for vm in self.started():
            summary += ", %s ready at %s s" % (vm.name,
                                               self.ready.get(vm.index))
        if not fail:
            print("launch-vms: PASS: %d VM(s) (%s)" % (o.n, summary))
        else:
            print("launch-vms: FAIL (%s; logs in %s)" % (summary, self.run))
        sys.stdout.flush()
        return 1 if fail else 0


def interrupted(signum, frame):
    raise Interrupted()


SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def main(argv: List[str]) -> int:
    """scripts/launch-vms.sh ARGV: its exit status."""
    try:
        o = parse(argv)
    except SetupError as e:
        print("[launch-vms] error: %s" % e, file=sys.stderr)
        return 2
    if o is None:
        return 0
    return run(o)


def run(o: Options, rundir: Optional[str] = None) -> int:
    """One run with the options o (parse()), in rundir (default as
    run_dir()): the output and the exit status of scripts/launch-vms.sh
    (0, 1, 2 on a setup error, 130 when interrupted).  The suites call it
    in-process; the signal handlers it sets are restored when it
    returns."""
    t0 = time.time()
    launch: Optional[Launch] = None
    old = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, interrupted)
    try:
        qemu, img = prepare(o)
        rdir = run_dir(rundir)
        # (force: a suite's second run logs into its own run directory)
        logging.basicConfig(filename=os.path.join(rdir, "harness.log"),
                            level=logging.INFO,
                            format="%(asctime)s %(threadName)s %(name)s "
                            "%(levelname)s %(message)s", force=True)
        random.seed()
        launch = Launch(o, qemu, img, rdir)
        return launch.main(t0)
    except SetupError as e:
        print("[launch-vms] error: %s" % e, file=sys.stderr)
        return 2
    except Interrupted:
        log("interrupted")
        return 130
    finally:
        if launch is not None:
            # (a second signal must not stop the teardown)
            for s in SIGNALS:
                signal.signal(s, signal.SIG_IGN)
            launch.teardown()
        for s, h in old.items():
            if h is not None:
                signal.signal(s, h)
