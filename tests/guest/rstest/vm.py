"""Guests on one L2 segment: the segment, each VM's QEMU, and the script
each guest runs.

A VM is one guest of a run directory <run>/vmI/: its QEMU (a
qemu.machine.QEMUMachine: the process, its own QMP connection, its output
in qemu.log), its console (serial.log), its control port (the second
serial port, a pipe: ctl.in, ctl.out; /init reads "go BASE64" from it),
a QMP socket for other tools (qmp.sock; scripts/qmp.py), its command line
(cmdline) and pid (pid), and captures of its netdev (QEMU's filter-dump).
A live migration (rstest.migration) moves the VM to another QEMU: VM.machine
is then the destination's.
"""

import base64
import os
import random
import select
import shlex
import signal
import threading
import time
from typing import List, Optional

from . import qemupath  # noqa: F401  (QEMU's python/ on sys.path)
from . import console
# pylint: disable=wrong-import-order
from qemu.machine import QEMUMachine  # noqa: E402

MAC_FMT = "52:54:00:77:00:%02x"
NETDEV = "n0"
# A Unix socket's path has at most 107 bytes: no qmp.sock for deeper runs.
MAX_SOCK_DIR = 96


class Segment:
    """The L2 segment every VM's netdev n0 is on."""

    # the destination of a live migration must be able to join it
    migratable = False
    # static addresses 10.77.0.I/24 (else DHCP)
    addresses = True

    def netdev(self, index: int) -> str:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def ip(self, index: int) -> str:
        return "10.77.0.%d" % index if self.addresses else ""

    def gateway(self, index: int) -> Optional[str]:
        """VM index's default route (None: the segment is one subnet)."""
        return None

    def wrapper(self, index: int) -> List[str]:
        """The prefix of VM index's QEMU command line (rstest.ecmp: the
        namespace it runs in)."""
        return []

    # A live migration's destination (rstest.migration): on this host
    # (None) or on another host of the segment.
    def destination(self, index: int) -> Optional[int]:
        return None

    def host_wrapper(self, host: int) -> List[str]:
        """The prefix of a QEMU command line on host."""
        return []

    def migration_uri(self, host: int, port: int) -> str:
        raise NotImplementedError

    def moved(self, index: int, host: int) -> None:
        """VM index runs on host now."""

    def watch(self, index: int, mac: str, host: int):
        """A watcher (rstest.overlay.Learning) of how the network learns
        that VM index (mac) moved to host, or None."""
        return None


class McastSegment(Segment):
    """QEMU's multicast socket backend on the loopback interface (a random
    group per run): every QEMU receives every frame, as on a hub."""

    migratable = True

    def __init__(self, group: Optional[str] = None):
        r = random.randrange
        self.group = group or "230.%d.%d.%d:%d" % (
            r(256), r(256), r(254) + 1, r(30000) + 20000)

    def netdev(self, index: int) -> str:
        return "socket,id=%s,mcast=%s,localaddr=127.0.0.1" % (NETDEV,
                                                              self.group)

    def describe(self) -> str:
        return "-netdev socket mcast %s on 127.0.0.1" % self.group


class DgramSegment(Segment):
    """Two VMs on a unicast UDP socket pair on loopback: each QEMU gets
    only its peer's frames."""

    def __init__(self, port: Optional[int] = None):
        self.port = port or random.randrange(30000) + 20000

    def netdev(self, index: int) -> str:
        return ("dgram,id=%s,local.type=inet,local.host=127.0.0.1,"
                "local.port=%d,remote.type=inet,remote.host=127.0.0.1,"
                "remote.port=%d" % (NETDEV, self.port + index,
                                    self.port + 3 - index))

    def describe(self) -> str:
        return "-netdev dgram, UDP ports %d/%d on 127.0.0.1" % (
            self.port + 1, self.port + 2)


class StreamSegment(Segment):
    """Two VMs on -netdev stream over a Unix socket (VM 1 listens, VM 2
    connects and tries again until VM 1 is up): no frame is lost."""

    def __init__(self, path: str):
        self.path = path

    def netdev(self, index: int) -> str:
        if index == 1:
            return ("stream,id=%s,server=on,addr.type=unix,addr.path=%s"
                    % (NETDEV, self.path))
        return ("stream,id=%s,server=off,reconnect-ms=100,addr.type=unix,"
                "addr.path=%s" % (NETDEV, self.path))

    def describe(self) -> str:
        return "-netdev stream, Unix socket %s" % self.path


class EcmpSegment(Segment):
    """Each VM behind its own host namespace of a routed ECMP network
    (rstest.ecmp): a tap device there, QEMU started in that namespace,
    address 10.77.I.1/24 with the namespace as its gateway."""

    def __init__(self, net):
        self.net = net

    def netdev(self, index: int) -> str:
        return self.net.netdev(NETDEV)

    def describe(self) -> str:
        return self.net.describe()

    def ip(self, index: int) -> str:
        return "10.77.%d.1" % index

    def gateway(self, index: int) -> Optional[str]:
        return "10.77.%d.254" % index

    def wrapper(self, index: int) -> List[str]:
        return self.net.wrapper(index)


class OverlaySegment(Segment):
    """Each VM behind a tap on its host's bridge, the hosts' bridges
    joined by a VXLAN overlay (rstest.overlay), QEMU started on the VM's
    host; a migration moves the VM to another host, its stream over TCP
    between the hosts' underlay addresses."""

    migratable = True

    def __init__(self, net):
        self.net = net

    def netdev(self, index: int) -> str:
        return self.net.netdev(NETDEV, index)

    def describe(self) -> str:
        return self.net.describe()

    def wrapper(self, index: int) -> List[str]:
        return self.net.wrapper(self.net.where[index])

    def destination(self, index: int) -> Optional[int]:
        return self.net.destination(index)

    def host_wrapper(self, host: int) -> List[str]:
        return self.net.wrapper(host)

    def migration_uri(self, host: int, port: int) -> str:
        return self.net.migration_uri(host, port)

    def moved(self, index: int, host: int) -> None:
        self.net.moved(index, host)

    def watch(self, index: int, mac: str, host: int):
        return self.net.watch(index, mac, host)


class UserSegment(Segment):
    """No segment: each VM on its own -netdev user (slirp), configured by
    DHCP."""

    addresses = False

    def netdev(self, index: int) -> str:
        return "user,id=%s" % NETDEV

    def describe(self) -> str:
        return "-netdev user (one slirp network per VM)"


# Shell functions every guest script gets.
# rs_barrier K [SECONDS]: wait until every VM of the run has called
# rs_barrier K (TCP over the segment with busybox nc: the others connect
# to VM 1's port 30000+K; once all did, VM 1 connects to each one's port
# 31000+K).  Fails after SECONDS (default 120).  Not with --netdev-user.
GUEST_HELPERS = r'''rs_barrier() {
    _k=$1 _end=$(( $(date +%s) + ${2:-120} ))
    _left() { _s=$(( _end - $(date +%s) )); [ $_s -gt 0 ] && echo $_s; }
    if [ "$RS_VM_INDEX" = 1 ]; then
        _n=1
        while [ $_n -lt "$RS_VM_COUNT" ]; do
            _t=$(_left) && timeout "$_t" nc -l -p $((30000 + _k)) </dev/null >/dev/null 2>&1 || return 1
            _n=$((_n + 1))
        done
        for _p in $RS_PEERS; do
            until nc -w 2 "$_p" $((31000 + _k)) </dev/null >/dev/null 2>&1; do
                _left >/dev/null || return 1
                sleep 0.3
            done
        done
    else
        _first=${RS_PEERS%% *}
        until nc -w 2 "$_first" $((30000 + _k)) </dev/null >/dev/null 2>&1; do
            _left >/dev/null || return 1
            sleep 0.3
        done
        _t=$(_left) && timeout "$_t" nc -l -p $((31000 + _k)) </dev/null >/dev/null 2>&1
    fi
}'''


def guest_env(index: int, count: int, segment: Segment,
              distro: bool = False) -> str:
    """What every script VM index (1..count) runs starts with: its
    environment and the helpers."""
    ip = segment.ip
    peers = " ".join(ip(j) for j in range(1, count + 1) if j != index)
    out = ["export RS_VM_INDEX=%d RS_VM_COUNT=%d RS_IP=%s RS_PEERS=%s "
           "RS_PEER=%s" % (index, count, ip(index), shlex.quote(peers),
                           ip(index % count + 1))]
    if distro:
        # rs_barrier's nc is busybox's (its -l -p), also under timeout
        out.append('mkdir -p /run/rs-bin && ln -sf "$(command -v busybox)" '
                   '/run/rs-bin/nc; export PATH=/run/rs-bin:$PATH')
    else:
        out += ['ip() { /usr/bin/ip "$@"; }  # iproute2, not busybox\'s',
                'tc() { /usr/bin/tc "$@"; }']
    out += [GUEST_HELPERS,
            'RS_IFACE=$(ls /sys/class/net | grep -v "^lo$" | head -n 1); '
            'export RS_IFACE']
    return "\n".join(out) + "\n"


SOFT_ROCE = ('rdma link add rxe0 type rxe netdev "$RS_IFACE" || '
             'echo "launch-vms: rdma link add rxe0 failed"\n')


def guest_script(index: int, count: int, segment: Segment, command: str,
                 soft_roce: bool, distro: bool = False) -> str:
    """The shell script VM index (1..count) runs: its environment, the
    helpers, soft-RoCE's rxe0 if it has one, then command."""
    return (guest_env(index, count, segment, distro) +
            (SOFT_ROCE if soft_roce else "") + command + "\n")


class VM:
    """One guest: its QEMU command line, run directory and QEMU."""

    # pylint: disable=too-many-instance-attributes

    def __init__(self, index: int, run: str, *, binary: str, kernel: str,
                 initrd: str, segment: Segment, device: str = "rdma-session",
                 mem: int = 512, accel: Optional[List[str]] = None,
                 firmware: Optional[List[str]] = None,
                 soft_roce: bool = False, pcap: Optional[str] = None,
                 peer_capture: bool = False, kernel_args: str = "",
                 interactive: bool = False,
                 extra: Optional[List[str]] = None,
                 disk: Optional[str] = None, disk_writable: bool = False,
                 smp: int = 1, share: Optional[str] = None):
        self.index = index
        self.name = "vm%d" % index
        self.dir = os.path.join(run, self.name)
        self.binary = binary
        self.segment = segment
        self.soft_roce = soft_roce
        self.interactive = interactive
        self.serial_log = os.path.join(self.dir, "serial.log")
        self.ctl_in = os.path.join(self.dir, "ctl.in")
        self.peer_capture = (os.path.join(self.dir, "migrate-peer.pcap")
                             if peer_capture else None)
        self.qmp_sock: Optional[str] = (
            os.path.join(self.dir, "qmp.sock")
            if len(self.dir) <= MAX_SOCK_DIR else None)
        self.machine: Optional[QEMUMachine] = None
        # the control port's answers to "run" (the Debian guest)
        self.seq = 0
        self.ctl_buf = b""
        self.ctl_fd: Optional[int] = None
        # a migration's destination until it is the VM (teardown kills it)
        self.incoming: Optional[QEMUMachine] = None
        # sources a migration left (they quit; wait() reaps them)
        self.retired: List[QEMUMachine] = []
        self.lock = threading.Lock()
        self.migrations = 0
        os.makedirs(self.dir, exist_ok=True)
        mac = self.mac = MAC_FMT % index
        # no_timer_check: on a loaded host TCG can miss the kernel's
        # IO-APIC timer check, which then panics ("IO-APIC + timer doesn't
        # work!")
        append = ("console=ttyS0 panic=-1 quiet no_timer_check rs.name=%s"
                  % self.name)
        if kernel_args:
            append += " " + kernel_args
        net = ["-netdev", segment.netdev(index)]
        if segment.addresses:
            append += " rs.ip=%s/24" % segment.ip(index)
            if segment.gateway(index):
                append += " rs.gw=%s" % segment.gateway(index)
        else:
            append += " rs.dhcp=1"
        if pcap:
            # the filter sees every frame the NIC sends and receives
            net += ["-object", "filter-dump,id=dump0,netdev=%s,file=%s"
                    % (NETDEV, pcap)]
        if self.peer_capture:
            # the headers of the segment's frames: the RDMA stall this
            # VM saw while its peer moved
            net += ["-object", "filter-dump,id=dumpmig,netdev=%s,maxlen=96,"
                    "file=%s" % (NETDEV, self.peer_capture)]
        # the Debian guest (rstest.distro): its root file system on a
        # virtio disk, a snapshot unless it is being installed
        drive: List[str] = []
        if disk:
            append += " root=/dev/vda rw"
            drive = ["-drive", "file=%s,if=virtio,format=raw,cache=unsafe%s"
                     % (disk, "" if disk_writable else ",snapshot=on")]
        if share:
            drive += ["-fsdev", "local,id=rsshare,path=%s,security_model=none"
                      % share, "-device",
                      "virtio-9p-pci,fsdev=rsshare,mount_tag=rs-share"]
            append += " rs.share=rs-share"
        if soft_roce:
            dev = "virtio-net-pci,netdev=%s,mac=%s" % (NETDEV, mac)
            append += (" rs.modules=virtio_net,crc32_generic,rdma_rxe"
                       " rs.skip=rdma_session")
        else:
            dev = "%s,netdev=%s,mac=%s" % (device, NETDEV, mac)
        with open(self.serial_log, "w"):
            pass
        if interactive:
            con = ["-chardev", "stdio,id=con,mux=on,logfile=%s,signal=off"
                   % self.serial_log, "-serial", "chardev:con",
                   "-mon", "chardev=con,mode=readline"]
        else:
            for p in ("ctl.in", "ctl.out"):
                p = os.path.join(self.dir, p)
                if os.path.lexists(p):
                    os.unlink(p)
                os.mkfifo(p)
            con = ["-chardev", "file,id=con,path=%s" % self.serial_log,
                   "-serial", "chardev:con",
                   "-chardev", "pipe,id=ctl,path=%s" %
                   os.path.join(self.dir, "ctl"), "-serial", "chardev:ctl"]
            append += " rs.go=ttyS1"
        qmp = (["-qmp", "unix:%s,server=on,wait=off" % self.qmp_sock]
               if self.qmp_sock else [])
        self.args: List[str] = (
            ["-machine", "q35"] + (accel or ["-accel", "tcg"]) +
            ["-m", str(mem), "-smp", str(smp), "-nodefaults", "-display",
             "none", "-no-reboot"] + (firmware or []) + ["-name", self.name] +
            qmp + ["-kernel", kernel, "-initrd", initrd, "-append", append] +
            drive + net + ["-device", dev] + con + (extra or []))
        with open(os.path.join(self.dir, "cmdline"), "w") as f:
            f.write(shlex.join(segment.wrapper(index) + [binary] +
                               self.args) + "\n")

    # --- the QEMU ---------------------------------------------------------

    def launch(self) -> None:
        """Start its QEMU (QEMUMachine: its output in qemu.log)."""
        m = QEMUMachine(self.binary, args=self.args, name="qemu",
                        log_dir=self.dir,
                        wrapper=self.segment.wrapper(self.index))
        self.machine = m
        m.launch()
        self.write_pid(m.get_pid())

    def write_pid(self, pid: Optional[int]) -> None:
        with open(os.path.join(self.dir, "pid"), "w") as f:
            f.write("%s\n" % pid)

    def is_running(self) -> bool:
        with self.lock:
            return self.machine is not None and self.machine.is_running()

    def settle(self, timeout: float = 10.0):
        """After its command: wait for QEMU to power off; None if it ended
        cleanly (status 0, and a migration destination said nothing),
        else what went wrong."""
        end = time.monotonic() + timeout
        while self.is_running() and time.monotonic() < end:
            time.sleep(0.2)
        with self.lock:
            m = self.machine
        if m is None:
            return "not started"
        if m.is_running():
            return "still running after the command"
        self.reap()
        try:
            m.wait()
        except Exception:  # pylint: disable=broad-except
            pass            # (its QMP connection broke; the status counts)
        rc = m.exitcode()
        if rc != 0:
            return rc
        if self.migrations and any(
                os.path.getsize(os.path.join(self.dir, "qemu-%d.log" % k))
                for k in range(1, self.migrations + 1)
                if os.path.exists(os.path.join(self.dir,
                                               "qemu-%d.log" % k))):
            return "see qemu-*.log"
        return None

    def reap(self) -> None:
        """Clean up after the sources that migrations left."""
        with self.lock:
            old, self.retired = self.retired, []
        for m in old:
            try:
                if m.is_running():
                    m.kill()
                else:
                    m.wait()
            except Exception:  # pylint: disable=broad-except
                pass        # (it quit: its QMP connection went first)

    def stop(self) -> None:
        """Teardown: SIGTERM, up to 2 s, then SIGKILL (also a migration's
        destination)."""
        with self.lock:
            machines = [m for m in (self.machine, self.incoming)
                        if m is not None]
        for m in machines:
            pid = m.get_pid()
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        end = time.monotonic() + 2
        while any(m.is_running() for m in machines) and \
                time.monotonic() < end:
            time.sleep(0.2)
        for m in machines:
            try:
                if m.is_running():
                    m.kill()
                else:
                    m.wait()
            except Exception:  # pylint: disable=broad-except
                pass        # (torn down anyway)
        self.reap()

    # --- the guest ----------------------------------------------------------

    def console(self) -> str:
        return console.read(self.serial_log)

    def ready(self) -> bool:
        return console.readies(self.console()) > 0

    def send(self, script: str) -> None:
        """Run script: "go BASE64" on the control port (/init takes one
        after every boot)."""
        line = "go %s\n" % base64.b64encode(script.encode()).decode()
        fd = os.open(self.ctl_in, os.O_RDWR)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def run(self, script: str, timeout: float) -> "tuple[int, str]":
        """Run script in the Debian guest and wait for it: its exit status
        and output ("run ID BASE64" on the control port, the answer
        "done ID STATUS BASE64" on ctl.out).  TimeoutError after timeout
        seconds (the guest goes on with it)."""
        self.seq += 1
        rid = str(self.seq)
        if self.ctl_fd is None:
            self.ctl_fd = os.open(os.path.join(self.dir, "ctl.out"),
                                  os.O_RDONLY | os.O_NONBLOCK)
        line = "run %s %s\n" % (rid, base64.b64encode(script.encode())
                                 .decode())
        fd = os.open(self.ctl_in, os.O_RDWR)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        end = time.monotonic() + timeout
        want = ("done %s " % rid).encode()
        while True:
            while b"\n" in self.ctl_buf:
                ln, _, self.ctl_buf = self.ctl_buf.partition(b"\n")
                if ln.startswith(want):
                    f = ln.decode().split(" ")
                    out = base64.b64decode(f[3]) if len(f) > 3 else b""
                    return int(f[2]), out.decode("utf-8", "replace")
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("%s: no answer after %g s" %
                                   (self.name, timeout))
            if not self.is_running():
                raise RuntimeError("%s: QEMU exited" % self.name)
            r, _, _ = select.select([self.ctl_fd], [], [], min(left, 1.0))
            if r:
                try:
                    got = os.read(self.ctl_fd, 1 << 16)
                except BlockingIOError:
                    got = b""
                if not got:
                    time.sleep(0.2)     # (no writer: end of file)
                self.ctl_buf += got

    def exit_status(self) -> Optional[str]:
        return console.exit_status(self.console())

    def output(self) -> List[str]:
        return console.command_output(self.console())
