# SPDX-License-Identifier: GPL-2.0-or-later
"""A routed multipath (ECMP) test network of network namespaces, as in a
datacenter fabric: the VMs attach through tap devices, and different UDP
source ports take different paths.

  VM i --tap0-- hI --rK/hI veth-- rK (router K, one of N spines) --
                                          -- hJ --tap0-- VM j

Every VM i (1..M, at most 8) has its own host namespace hI, every router
namespace rK (1..N, at most 8) a veth link to every host namespace, the
links 10.(100+K).I.0/24 (hI's end .1, named rK; rK's end .2, named hI).
VM i's address is 10.77.I.1/24, its gateway hI's tap0, 10.77.I.254.  A
host namespace routes every other VM's /24 over all N routers
(ip route ... nexthop via ... nexthop via ..., ECMP) with the L4 hash
(net.ipv4.fib_multipath_hash_policy=1: source and destination address and
port, protocol), so each UDP source port of RoCEv2 picks its router; a
router routes each VM's /24 to its host namespace.  Every MTU is 9000
(the adapter's Ethernet interface accepts up to 9000).

IPv6 the same way, beside it (dual stack): VM i's segment fd77:I::/64
(VM i fd77:I::1, which the guest adds itself, hI's tap0 fd77:I::254),
the links fd77:(100+K):I::/64 (hI's end ::1, rK's end ::2), the host
namespaces' routes to the other VMs' /64 over all N routers with
net.ipv6.fib_multipath_hash_policy=1 (L4), the routers' routes to each
VM's /64.  Addresses without duplicate address detection, kept when a
link goes down (keep_addr_on_down).

A path that fails is a router whose veths are set down (path_down): the
host namespaces keep routing over it (ignore_routes_with_linkdown=0),
so the flows hashed to it are lost, as in a fabric that has not
converged yet, until the endpoints move them; path_up brings it back.
IPv6 alike (net.ipv6.conf.all.ignore_routes_with_linkdown=0: a nexthop
whose link is down keeps its share of the hash).

The namespaces are named rse<PID>-hI and rse<PID>-rK (PID: the process
that made them) and removed by destroy(), which the launcher calls on
every exit; a run that crashed leaves them behind, and the next one
removes those whose process is gone (clean_stale()).  Nothing outside
these namespaces is touched.  The run directory gets ecmp.json (the
names and addresses, for the suites acting on a running launcher:
Ecmp.attach()) and, after start_captures(), ecmp-hI.pcapng: dumpcap on
hI's links r1..rN, the RoCEv2 frames that came for VM i through each
router (each frame is captured once, where it arrives), the first 80
bytes of each (the BTH, after an IPv4 or IPv6 header).
"""

import json
import os
import signal
import subprocess
import time
from typing import Dict, List, Optional, Tuple

from . import netns
from . import roce

ROCE_PORT = roce.ROCE_PORT
MTU = 9000
MAX_HOSTS = 8
MAX_ROUTERS = 8
TAP = "tap0"


def vm_ip(i: int) -> str:
    return "10.77.%d.1" % i


def vm_gw(i: int) -> str:
    return "10.77.%d.254" % i


def link_ip(k: int, i: int, router: bool) -> str:
    """The address of the link between host namespace i and router k, at
    the router's end or the host's."""
    return "10.%d.%d.%d" % (100 + k, i, 2 if router else 1)


def vm_net(i: int) -> str:
    return "10.77.%d.0/24" % i


def vm_ip6(i: int) -> str:
    """VM i's IPv6 address (the guest adds it: multipath-common.sh)."""
    return "fd77:%d::1" % i


def vm_gw6(i: int) -> str:
    return "fd77:%d::254" % i


def vm_net6(i: int) -> str:
    return "fd77:%d::/64" % i


def link_ip6(k: int, i: int, router: bool) -> str:
    """link_ip()'s IPv6 twin: fd77:(100+k):i::1 (host), ::2 (router)."""
    return "fd77:%d:%d::%d" % (100 + k, i, 2 if router else 1)


def sh(argv: List[str], check: bool = True) -> str:
    return netns.sh(argv, check, EcmpError)


class EcmpError(Exception):
    """The network could not be set up or changed."""


def clean_stale() -> List[str]:
    """Remove the namespaces of runs whose process is gone, with what
    that run left running in them (its QEMUs, its captures); the names
    removed."""
    return netns.clean_stale("rse")


class Ecmp:
    """The network of one run: hosts (VMs) 1..M, routers 1..N."""

    def __init__(self, run: str, hosts: int, routers: int,
                 tag: Optional[str] = None):
        if not 1 <= hosts <= MAX_HOSTS:
            raise EcmpError("--ecmp: 1..%d VMs" % MAX_HOSTS)
        if not 1 <= routers <= MAX_ROUTERS:
            raise EcmpError("--ecmp takes 1..%d routers" % MAX_ROUTERS)
        self.run = run
        self.hosts = hosts
        self.routers = routers
        self.tag = tag or "rse%d" % os.getpid()
        self.made: List[str] = []
        self.captures: Dict[int, Tuple[int, str]] = {}

    # --- names --------------------------------------------------------------

    def host_ns(self, i: int) -> str:
        return "%s-h%d" % (self.tag, i)

    def router_ns(self, k: int) -> str:
        return "%s-r%d" % (self.tag, k)

    def wrapper(self, i: int) -> List[str]:
        """The prefix that starts VM i's QEMU in its host namespace."""
        return ["ip", "netns", "exec", self.host_ns(i)]

    @staticmethod
    def netdev(netdev_id: str) -> str:
        return "tap,id=%s,ifname=%s,script=no,downscript=no" % (netdev_id,
                                                               TAP)

    def state_path(self) -> str:
        return os.path.join(self.run, "ecmp.json")

    def pcap(self, i: int) -> str:
        return os.path.join(self.run, "ecmp-h%d.pcapng" % i)

    # --- setup and teardown -------------------------------------------------

    def _ip(self, ns: str, *args: str) -> None:
        sh(["ip", "-n", ns] + list(args))

    def _sysctl(self, ns: str, *settings: str) -> None:
        sh(["ip", "netns", "exec", ns, "sysctl", "-q", "-w"] + list(settings))

    def _add_ns(self, ns: str) -> None:
        sh(["ip", "netns", "add", ns])
        self.made.append(ns)
        self._ip(ns, "link", "set", "lo", "up")
        # IPv6: forwarding, no duplicate address detection (an address
        # is usable at once), addresses kept on a link set down (a
        # router's, path_down/path_up)
        self._sysctl(ns, "net.ipv4.ip_forward=1",
                     "net.ipv4.conf.all.rp_filter=0",
                     "net.ipv4.conf.default.rp_filter=0",
                     "net.ipv6.conf.all.disable_ipv6=0",
                     "net.ipv6.conf.default.disable_ipv6=0",
                     "net.ipv6.conf.all.forwarding=1",
                     "net.ipv6.conf.default.forwarding=1",
                     "net.ipv6.conf.all.accept_dad=0",
                     "net.ipv6.conf.default.accept_dad=0",
                     "net.ipv6.conf.all.keep_addr_on_down=1",
                     "net.ipv6.conf.default.keep_addr_on_down=1")

    def _addr(self, ns: str, dev: str, v4: str, v6: str) -> None:
        """dev's IPv4 address v4 (a /24) and IPv6 address v6 (a /64)."""
        self._ip(ns, "addr", "add", v4 + "/24", "dev", dev)
        self._ip(ns, "-6", "addr", "add", v6 + "/64", "dev", dev, "nodad")

    def create(self) -> None:
        """Make the namespaces, links and routes (on failure: remove what
        was made, then raise EcmpError)."""
        netns.clear("rse", self.tag)
        try:
            self._create()
        except BaseException:
            # (also when interrupted: nothing is left behind)
            self.destroy()
            raise
        with open(self.state_path(), "w") as f:
            json.dump({"tag": self.tag, "hosts": self.hosts,
                       "routers": self.routers, "pid": os.getpid()}, f)
            f.write("\n")

    def _create(self) -> None:
        for i in range(1, self.hosts + 1):
            h = self.host_ns(i)
            self._add_ns(h)
            # L4 hash; a router whose link is down stays in the group
            self._sysctl(h, "net.ipv4.fib_multipath_hash_policy=1",
                         "net.ipv4.conf.all.ignore_routes_with_linkdown=0",
                         "net.ipv6.fib_multipath_hash_policy=1",
                         "net.ipv6.conf.all.ignore_routes_with_linkdown=0")
            self._ip(h, "tuntap", "add", "dev", TAP, "mode", "tap")
            self._ip(h, "link", "set", TAP, "mtu", str(MTU), "up")
            self._addr(h, TAP, vm_gw(i), vm_gw6(i))
        for k in range(1, self.routers + 1):
            r = self.router_ns(k)
            self._add_ns(r)
            for i in range(1, self.hosts + 1):
                h = self.host_ns(i)
                self._ip(h, "link", "add", "name", "r%d" % k, "mtu", str(MTU),
                         "type", "veth", "peer", "name", "h%d" % i,
                         "mtu", str(MTU), "netns", r)
                self._addr(h, "r%d" % k, link_ip(k, i, False),
                           link_ip6(k, i, False))
                self._ip(h, "link", "set", "r%d" % k, "up")
                self._addr(r, "h%d" % i, link_ip(k, i, True),
                           link_ip6(k, i, True))
                self._ip(r, "link", "set", "h%d" % i, "up")
            self._router_routes(k)
        for i in range(1, self.hosts + 1):
            for j in range(1, self.hosts + 1):
                if j == i:
                    continue
                for net, via, fam in ((vm_net(j), link_ip, "-4"),
                                      (vm_net6(j), link_ip6, "-6")):
                    hops: List[str] = []
                    for k in range(1, self.routers + 1):
                        hops += ["nexthop", "via", via(k, i, True),
                                 "dev", "r%d" % k]
                    if self.routers == 1:
                        hops = hops[1:]
                    self._ip(self.host_ns(i), fam, "route", "add", net,
                             *hops)

    def _router_routes(self, k: int) -> None:
        # (replace: a link set down loses its routes, path_up restores)
        for i in range(1, self.hosts + 1):
            self._ip(self.router_ns(k), "route", "replace",
                     vm_net(i), "via", link_ip(k, i, False),
                     "dev", "h%d" % i)
            self._ip(self.router_ns(k), "-6", "route", "replace",
                     vm_net6(i), "via", link_ip6(k, i, False),
                     "dev", "h%d" % i)

    def destroy(self) -> None:
        """Stop the captures, remove the namespaces (every exit)."""
        self.stop_captures()
        for ns in reversed(self.made):
            sh(["ip", "netns", "del", ns], check=False)
        self.made = []

    # --- captures -----------------------------------------------------------

    def start_captures(self) -> None:
        """dumpcap in every host namespace on its links r1..rN: the RoCEv2
        frames that came for its VM, from each path (each frame is
        captured once, where it arrives), their first 80 bytes: the BTH
        after an IPv6 header too (ecmp-hI.pcapng)."""
        for i in range(1, self.hosts + 1):
            ifs: List[str] = []
            for d in ["r%d" % k for k in range(1, self.routers + 1)]:
                ifs += ["-i", d]
            path = self.pcap(i)
            log = open(path + ".log", "w")
            # (buffers for a loaded host: a frame dumpcap drops would
            # look like a stall)
            p = subprocess.Popen(
                self.wrapper(i) + ["dumpcap", "-q", "-n", "-s", "80",
                                   "-B", "32", "-N", "1000000", "-C",
                                   "256000000", "-f",
                                   "udp dst port %d and (dst host %s or "
                                   "dst host %s)" % (
                                       ROCE_PORT, vm_ip(i), vm_ip6(i))] +
                ifs +
                ["-w", path], stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
            log.close()
            self.captures[i] = (p.pid, path)
        # dumpcap says "File: ..." once it captures
        end = time.monotonic() + 10
        for i, (_, path) in self.captures.items():
            while time.monotonic() < end:
                with open(path + ".log", errors="replace") as f:
                    if "File:" in f.read():
                        break
                time.sleep(0.1)

    def capture_drops(self, i: int) -> str:
        """What dumpcap said it dropped (after stop_captures())."""
        try:
            with open(self.pcap(i) + ".log", errors="replace") as f:
                return " ".join(ln.strip() for ln in f
                                if "dropped" in ln and "/0 " not in ln)
        except OSError:
            return ""

    def stop_captures(self) -> None:
        for pid, _ in self.captures.values():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            end = time.monotonic() + 5
            while time.monotonic() < end:
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        break
                except ChildProcessError:
                    break
                time.sleep(0.05)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
        self.captures = {}

    # --- acting on it while it runs -----------------------------------------

    @classmethod
    def attach(cls, run: str) -> "Ecmp":
        """The network a launcher made for the run directory run (from its
        ecmp.json), to act on while it runs; destroy() on it does
        nothing."""
        with open(os.path.join(run, "ecmp.json")) as f:
            st = json.load(f)
        return cls(run, st["hosts"], st["routers"], st["tag"])

    def path_down(self, k: int) -> None:
        """Router k fails: its veths go down (both directions)."""
        for i in range(1, self.hosts + 1):
            self._ip(self.router_ns(k), "link", "set", "h%d" % i, "down")

    def path_up(self, k: int) -> None:
        for i in range(1, self.hosts + 1):
            self._ip(self.router_ns(k), "link", "set", "h%d" % i, "up")
        self._router_routes(k)

    def nexthop(self, i: int, j: int, k: int, v6: bool = False) -> str:
        """How host namespace i's route to VM j's subnet has its nexthop
        over router k now: "" (gone) or its line of ip route (with
        linkdown while k is down; dead if the host stopped using it)."""
        out = sh(["ip", "-n", self.host_ns(i)] + (["-6"] if v6 else []) +
                 ["route", "show", vm_net6(j) if v6 else vm_net(j)])
        dev = "dev r%d " % k
        return " ".join(ln.strip() for ln in out.splitlines()
                        if dev in ln + " ")

    def forwarded(self) -> Dict[int, int]:
        """Packets each router has sent so far (all its interfaces)."""
        out = {}
        for k in range(1, self.routers + 1):
            links = json.loads(sh(["ip", "-n", self.router_ns(k), "-s",
                                   "-j", "link", "show"]) or "[]")
            out[k] = sum(ln.get("stats64", {}).get("tx", {}).get("packets",
                                                               0)
                         for ln in links if ln.get("ifname") != "lo")
        return out

    def busiest(self, seconds: float = 0.5) -> Tuple[int, Dict[int, int]]:
        """The router that forwarded the most packets in the next seconds,
        and every router's count."""
        a = self.forwarded()
        time.sleep(seconds)
        b = self.forwarded()
        d = {k: b[k] - a[k] for k in a}
        return max(d, key=lambda k: (d[k], -k)), d

    def describe(self) -> str:
        return ("ECMP: %d VM host namespaces %s-h*, %d routers %s-r*, "
                "L4 hash" % (self.hosts, self.tag, self.routers, self.tag))


class Frame:
    """One RoCEv2 frame of a capture."""

    # pylint: disable=too-few-public-methods
    __slots__ = ("t", "ifname", "src", "dst", "sport", "dqp", "opcode",
                 "v6")

    def __init__(self, t: float, ifname: str, src: str, dst: str,
                 sport: int, dqp: int, opcode: int, v6: bool = False):
        self.t = t
        self.ifname = ifname
        self.src = src
        self.dst = dst
        self.sport = sport
        self.dqp = dqp
        self.opcode = opcode
        self.v6 = v6


def read_frames(path: str) -> List[Frame]:
    """The RoCEv2 frames of an ecmp-hI.pcapng, IPv4 and IPv6 (.v6; .src
    and .dst as inet_ntop writes them: fd77:2::1) (dumpcap's pcapng,
    Ethernet, read here by rstest.roce: tshark takes seconds per 100000
    frames), the frames in a bundle each alone, in time order; a truncated
    last block (a capture that was killed) ends it."""
    try:
        pkts = roce.packets(path)
    except (OSError, ValueError) as e:
        raise EcmpError("%s: %s" % (path, e)) from e
    out = [Frame(p.t, p.ifname, p.src, p.dst, p.sport, p.dqp, p.opcode,
                 p.v6)
           for p in pkts if len(p.frame) >= p.udp + 16]
    out.sort(key=lambda x: x.t)
    return out


def between(frames: List[Frame], t0: float, t1: float) -> List[Frame]:
    return [f for f in frames if t0 <= f.t <= t1]


def per(frames: List[Frame], key) -> Dict:
    out: Dict = {}
    for f in frames:
        k = key(f)
        out[k] = out.get(k, 0) + 1
    return out


def longest_gap(frames: List[Frame], t0: float,
                t1: float) -> Tuple[float, float]:
    """The longest time without a frame in [t0, t1] (the window's ends
    count as frames: a stream that stopped is one long gap): (seconds,
    when it began)."""
    ts = [t0] + [f.t for f in frames if t0 <= f.t <= t1] + [t1]
    best, at = 0.0, t0
    for a, b in zip(ts, ts[1:]):
        if b - a > best:
            best, at = b - a, a
    return best, at
