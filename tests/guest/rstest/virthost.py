"""libvirt instances that act as hosts on one machine, and domains with
the adapter in them (tests/guest/libvirt.py,
docs/system/devices/rdma-session-libvirt.rst).

Net makes the hosts' network namespaces: its own (below), or those of
rstest.overlay (Net(..., overlay=[...]): hosts on a VXLAN overlay, each
daemon listening on its host's underlay address 10.250.0.I instead).

A Host is one libvirtd (Debian 12's libvirt 9.0, the monolithic daemon,
started directly: no systemd) in a network namespace of its own,
rsl<PID>-hI, with a bridge br0 that its domains' tap devices join and the
address 10.79.0.I/24 on br0, which migration streams and peer-to-peer
migrations use.  What makes it another host:
  - its network namespace (ip netns exec): taps, bridge, addresses;
  - its own mount namespace (unshare -m) in which <dir>/hI/{etc,run,lib,
    cache,log} are bind-mounted over /etc/libvirt, /run/libvirt,
    /var/lib/libvirt, /var/cache/libvirt, /var/log/libvirt: its own
    configuration, sockets, domain state, capabilities cache and logs
    (the QEMUs it starts inherit them);
  - its own UTS namespace (unshare -u): hostname rsl<PID>-hI;
  - host_uuid in its libvirtd.conf (libvirt refuses a migration between
    two daemons with the same host UUID: "Attempt to migrate guest to
    the same host").
libvirt 9.0's QEMU driver needs the user libvirt-qemu to exist even when
qemu.conf says user = "root" (it looks the default up before it reads
qemu.conf); Debian's libvirt-daemon-system creates it.  Without that
package, the namespace gets a copy of /etc/passwd and /etc/group with the
user added, bind-mounted: the machine's files stay as they are.
qemu.conf: root, no security driver, no cgroups, no per-domain /dev
namespace, QEMU's output into files (no virtlogd).

Every host's daemon answers on a Unix socket (Host.uri, virsh -c) and on
TCP 10.79.0.I:16509 without authentication (Host.tcp_uri, for virsh
migrate --p2p: the source daemon connects to the destination's).

Names carry the test's process number; Net.create() removes the
namespaces (and the processes in them) of runs whose process is gone.
"""

import os
import shlex
import shutil
import subprocess
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from typing import Dict, List, Optional

from . import netns
from .suite import TOP

PREFIX = "rsl"
PACKAGES = ["libvirt-daemon", "libvirt-daemon-driver-qemu",
            "libvirt-clients"]
# the directories each host has of its own (inside: the host's directory)
MOUNTS = [("/etc/libvirt", "etc"), ("/run/libvirt", "run"),
          ("/var/lib/libvirt", "lib"), ("/var/cache/libvirt", "cache"),
          ("/var/log/libvirt", "log")]
EXAMPLE = os.path.join(TOP, "examples", "libvirt", "rdma-session-domain.xml")


class VirtError(Exception):
    """A host or domain could not be set up."""


def need_libvirt(log: str) -> None:
    """Debian's libvirt daemon, QEMU driver and virsh, installed with the
    project's private apt configuration if missing (apt's output in
    log)."""
    with open(log, "a") as f:
        rc = subprocess.call(
            ["bash", "-c", '. "$1/scripts/apt-private.sh" && shift && '
             'apt_need "" "$@"', "bash", TOP] + PACKAGES,
            stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
    if rc != 0 or shutil.which("virsh") is None or \
            not os.path.exists("/usr/sbin/libvirtd"):
        raise VirtError("cannot install %s (see %s)" % (" ".join(PACKAGES),
                                                        log))


def sh(cmd: List[str], check: bool = True) -> str:
    return netns.sh(cmd, check, VirtError)


def kill_ns_processes(ns: str) -> None:
    """SIGTERM, then SIGKILL after 5 s, to the processes in namespace ns
    (this module's daemons and their QEMUs)."""
    netns.kill_processes(ns, grace=5)


def clean_stale() -> List[str]:
    """Remove the namespaces of runs whose process is gone: their names."""
    return netns.clean_stale(PREFIX, grace=5)


LIBVIRTD_CONF = '''# rstest.virthost: host %(index)d of %(prefix)s
unix_sock_group = "root"
unix_sock_ro_perms = "0700"
unix_sock_rw_perms = "0700"
auth_unix_ro = "none"
auth_unix_rw = "none"
listen_tls = 0
listen_tcp = 1
listen_addr = "%(addr)s"
auth_tcp = "none"
host_uuid = "%(uuid)s"
log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
'''

QEMU_CONF = '''# rstest.virthost: QEMU as root, no security driver, no cgroups, no
# /dev namespace per domain, QEMU's output into files (no virtlogd)
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
cgroup_controllers = [ ]
namespaces = [ ]
stdio_handler = "file"
'''

# What runs in the host's namespaces, as root: its directories over
# libvirt's, the user libvirt-qemu if the machine has none, libvirtd.
DAEMON = r'''set -e
hostname "$1"; d=$2
for m in /etc/libvirt:etc /run/libvirt:run /var/lib/libvirt:lib \
         /var/cache/libvirt:cache /var/log/libvirt:log; do
    mkdir -p "${m%%:*}"
    mount --bind "$d/${m#*:}" "${m%%:*}"
done
if ! getent passwd libvirt-qemu >/dev/null; then
    cp /etc/passwd /etc/group "$d/"
    echo "libvirt-qemu:x:64055:64055:Libvirt Qemu:/var/lib/libvirt:/usr/sbin/nologin" >> "$d/passwd"
    getent group libvirt-qemu >/dev/null || echo "libvirt-qemu:x:64055:" >> "$d/group"
    getent group kvm >/dev/null || echo "kvm:x:64056:" >> "$d/group"
    mount --bind "$d/passwd" /etc/passwd
    mount --bind "$d/group" /etc/group
fi
exec /usr/sbin/libvirtd --listen -f /etc/libvirt/libvirtd.conf \
    -p /run/libvirt/libvirtd.pid
'''


class Host:
    """One libvirtd in its own namespaces (see the module's doc)."""

    def __init__(self, prefix: str, index: int, root: str):
        self.index = index
        self.name = "h%d" % index
        self.ns = "%s-h%d" % (prefix, index)
        self.prefix = prefix
        self.dir = os.path.join(root, self.name)
        self.addr = "10.79.0.%d" % index
        self.uuid = "52530000-0000-4000-8000-%012x" % (0x100 + index)
        self.proc: Optional[subprocess.Popen] = None
        self.log = os.path.join(self.dir, "virsh.log")

    def path(self, inside: str) -> str:
        """The machine's path of a path under one of libvirt's
        directories as this host sees it."""
        for m, sub in MOUNTS:
            if inside == m or inside.startswith(m + "/"):
                return os.path.join(self.dir, sub, inside[len(m) + 1:])
        return inside

    @property
    def uri(self) -> str:
        return "qemu+unix:///system?socket=%s" % self.path(
            "/run/libvirt/libvirt-sock")

    @property
    def tcp_uri(self) -> str:
        return "qemu+tcp://%s/system" % self.addr

    def start(self, timeout: float = 60, emulator: str = "") -> None:
        """Start the daemon, wait until it answers, and have it probe
        emulator's capabilities (else the first define does, ~4 s)."""
        for _, sub in MOUNTS:
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        os.makedirs(self.path("/var/log/libvirt/qemu"), exist_ok=True)
        os.makedirs(self.path("/var/lib/libvirt/qemu"), exist_ok=True)
        with open(self.path("/etc/libvirt/libvirtd.conf"), "w") as f:
            f.write(LIBVIRTD_CONF % {"index": self.index,
                                     "prefix": self.prefix,
                                     "addr": self.addr, "uuid": self.uuid})
        with open(self.path("/etc/libvirt/qemu.conf"), "w") as f:
            f.write(QEMU_CONF)
        out = open(os.path.join(self.dir, "daemon.out"), "w")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, "unshare", "-u", "-m",
             "--propagation", "private", "sh", "-c", DAEMON, "sh", self.ns,
             self.dir], stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT)
        out.close()
        end = time.monotonic() + timeout
        sock = self.path("/run/libvirt/libvirt-sock")
        while True:
            if self.proc.poll() is not None:
                raise VirtError("%s: libvirtd exited %s (see %s)" % (
                    self.ns, self.proc.returncode, self.dir))
            if os.path.exists(sock) and \
                    self.virsh("uri", check=False).returncode == 0:
                break
            if time.monotonic() > end:
                raise VirtError("%s: libvirtd did not answer in %g s" %
                                (self.ns, timeout))
            time.sleep(0.3)
        if emulator:
            self.virsh("domcapabilities", "--emulatorbin", emulator,
                       "--virttype", "qemu", "--machine", "q35")

    def virsh(self, *args: str, check: bool = True,
              timeout: float = 180) -> subprocess.CompletedProcess:
        """virsh -c URI ARGS..., logged in virsh.log; VirtError if it
        failed and check."""
        cmd = ["virsh", "-c", self.uri] + list(args)
        t0 = time.monotonic()
        r = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, check=False)
        with open(self.log, "a") as f:
            f.write("$ %s  # %d, %.1f s\n%s\n" % (
                shlex.join(cmd), r.returncode, time.monotonic() - t0,
                r.stdout.rstrip()))
        if check and r.returncode != 0:
            raise VirtError("virsh %s on %s: %s" % (
                " ".join(args), self.name, r.stdout.strip()))
        return r

    def domains(self) -> List[str]:
        r = self.virsh("list", "--name", check=False)
        return [d for d in r.stdout.split() if d] if r.returncode == 0 else []

    def stop(self) -> None:
        """Every running domain destroyed, the daemon ended, whatever is
        left in the namespace killed."""
        if self.proc is not None and self.proc.poll() is None:
            for d in self.domains():
                self.virsh("destroy", d, check=False, timeout=30)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        kill_ns_processes(self.ns)


class Net:
    """N hosts, their bridges joined by veth pairs to host 1's bridge
    (one L2 segment: the guests' 10.77.0.0/24 and the hosts'
    10.79.0.0/24)."""

    def __init__(self, root: str, hosts: int = 2, emulator: str = "",
                 overlay: Optional[List[int]] = None):
        """overlay: the hosts on rstest.overlay's VXLAN overlay instead
        (its list: each VM's first host), a daemon on each of its hosts,
        listening on the host's underlay address."""
        self.prefix = "%s%d" % (PREFIX, os.getpid())
        self.root = root
        self.overlay = None
        if overlay is not None:
            # pylint: disable=import-outside-toplevel
            from .overlay import Overlay, underlay_ip
            self.overlay = Overlay(root, overlay, tag=self.prefix)
            hosts = self.overlay.hosts
        self.hosts: Dict[int, Host] = {
            i: Host(self.prefix, i, root) for i in range(1, hosts + 1)}
        if self.overlay is not None:
            for i, h in self.hosts.items():
                h.addr = underlay_ip(i)
        self.created: List[str] = []
        self.emulator = emulator

    def describe(self) -> str:
        if self.overlay is not None:
            return "a libvirtd on each of %s" % self.overlay.describe()
        if len(self.hosts) == 1:
            return "1 libvirt host (namespace %s-h1)" % self.prefix
        return "%d libvirt hosts (namespaces %s-h1..h%d), bridges joined " \
            "by veth pairs" % (len(self.hosts), self.prefix, len(self.hosts))

    def create(self) -> None:
        clean_stale()
        if self.overlay is not None:
            self.overlay.create()
            self.created.append("overlay")
            self.start_daemons()
            return
        for i, h in self.hosts.items():
            sh(["ip", "netns", "add", h.ns])
            self.created.append(h.ns)
            n = ["ip", "-n", h.ns]
            sh(n + ["link", "set", "lo", "up"])
            sh(n + ["link", "add", "br0", "type", "bridge",
                    "forward_delay", "0"])
            sh(n + ["addr", "add", h.addr + "/24", "dev", "br0"])
            sh(n + ["link", "set", "br0", "up"])
            if i > 1:
                h1 = self.hosts[1]
                sh(["ip", "link", "add", "to-h%d" % i, "netns", h1.ns,
                    "type", "veth", "peer", "name", "to-h1", "netns", h.ns])
                sh(["ip", "-n", h1.ns, "link", "set", "to-h%d" % i,
                    "master", "br0", "up"])
                sh(n + ["link", "set", "to-h1", "master", "br0", "up"])
        self.start_daemons()

    def start_daemons(self) -> None:
        # the daemons start and probe the emulator in parallel
        errors: List[BaseException] = []

        def start(h: Host) -> None:
            try:
                h.start(emulator=self.emulator)
            except BaseException as e:  # pylint: disable=broad-except
                errors.append(e)
        threads = [threading.Thread(target=start, args=(h,))
                   for h in self.hosts.values()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def destroy(self) -> None:
        for h in self.hosts.values():
            try:
                h.stop()
            except Exception:  # pylint: disable=broad-except
                kill_ns_processes(h.ns)
        if self.overlay is not None and self.created:
            self.overlay.destroy()
        else:
            for ns in self.created:
                sh(["ip", "netns", "del", ns], check=False)
        self.created = []


class Domain:
    """A domain made from examples/libvirt/rdma-session-domain.xml: the
    project's initramfs guest with the adapter on br0, its console in
    /var/log/libvirt/qemu/NAME.serial and its control port
    /var/lib/libvirt/qemu/NAME.ctl of whichever host runs it."""

    def __init__(self, prefix: str, index: int, *, emulator: str,
                 kernel: str, initrd: str, mem: int = 512):
        self.index = index
        self.name = "%s-vm%d" % (prefix, index)
        self.ip = "10.77.0.%d" % index
        self.mac = "52:54:00:77:00:%02x" % index
        self.serial = "/var/log/libvirt/qemu/%s.serial" % self.name
        self.ctl = "/var/lib/libvirt/qemu/%s.ctl" % self.name
        # the hosts it ran on, in order (its console is in each's file)
        self.hosts: List[Host] = []
        tree = ET.parse(EXAMPLE)
        d = tree.getroot()
        d.find("name").text = self.name
        d.find("uuid").text = str(uuid.uuid5(uuid.NAMESPACE_DNS, self.name))
        d.find("memory").text = str(mem)
        os_ = d.find("os")
        os_.find("kernel").text = kernel
        os_.find("initrd").text = initrd
        os_.find("cmdline").text = (
            "console=ttyS0 panic=-1 quiet no_timer_check rs.name=vm%d "
            "rs.ip=%s/24 rs.go=ttyS1" % (index, self.ip))
        devs = d.find("devices")
        devs.find("emulator").text = emulator
        devs.find("interface/mac").set("address", self.mac)
        for s in devs.findall("serial"):
            src = s.find("source")
            src.set("path", self.serial if s.get("type") == "file"
                    else self.ctl)
        self.xml = ET.tostring(d, encoding="unicode")

    def prepare(self, host: Host) -> None:
        """What the domain needs on host before it starts or arrives
        there: the control port's FIFOs."""
        for ext in (".in", ".out"):
            p = host.path(self.ctl + ext)
            if not os.path.exists(p):
                os.mkfifo(p)

    def define(self, host: Host) -> str:
        path = os.path.join(host.dir, self.name + ".xml")
        with open(path, "w") as f:
            f.write(self.xml)
        self.prepare(host)
        return host.virsh("define", path).stdout

    def start(self, host: Host) -> None:
        host.virsh("start", self.name)
        self.hosts.append(host)

    def console(self) -> str:
        """Its console: each host's file, in the order it ran there (a
        host it came back to has appended to its file: only the last
        occurrence of a host counts)."""
        seen: List[Host] = []
        for h in reversed(self.hosts):
            if h not in seen:
                seen.insert(0, h)
        text = ""
        for h in seen:
            try:
                with open(h.path(self.serial), "rb") as f:
                    text += f.read().decode("utf-8", "replace")
            except OSError:
                pass
        return text.replace("\r", "")

    def send(self, script: str) -> None:
        """The initramfs guest's command ("go BASE64" on its control
        port on the host it runs on)."""
        # pylint: disable=import-outside-toplevel
        import base64
        line = "go %s\n" % base64.b64encode(script.encode()).decode()
        fd = os.open(self.hosts[-1].path(self.ctl + ".in"), os.O_RDWR)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def qemu_log(self) -> str:
        h = self.hosts[-1] if self.hosts else None
        if h is None:
            return ""
        try:
            with open(h.path("/var/log/libvirt/qemu/%s.log" % self.name)) \
                    as f:
                return f.read()
        except OSError:
            return ""
