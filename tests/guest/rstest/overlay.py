# SPDX-License-Identifier: GPL-2.0-or-later
"""Hosts joined by a VXLAN overlay, as a small cloud runs its VMs: network
namespaces made for the run, so that a VM can be live-migrated from one
"host" to another over TCP while its peers on a third go on talking to it.

  host hI: br0 (Linux bridge, MTU 9000)
             +-- tap1 .. tapN   one per VM of the run (QEMU's tap netdev)
             +-- vx0            VXLAN VNI 77, learning, dstport 4789,
                                flooding to every other host (head-end
                                replication: all-zero FDB entries)
           ul0 10.250.0.I/24 (MTU 9100: VXLAN adds 50 bytes)
  u:       ul (bridge) -- the underlay every host's ul0 is on

Every host has a tap for every VM: a VM's tap is on its host's bridge,
and the same tap waits on the others' bridges (no carrier while no QEMU
has it open) for the VM to be migrated there.  A VM runs in its host's
namespace (wrapper()), a migration's destination in the destination's,
and the migration stream goes over TCP between the hosts' underlay
addresses (migration_uri()).  After the switch the overlay learns where
the VM is from what the VM sends: QEMU's announcements (the adapter's
gratuitous ARPs and neighbour advertisements) or the adapter's first
frames to a peer; until then the hosts' VXLAN forwarding tables still
send the VM's frames to the host it left.  fdb() reads a host's table
for a MAC: where that host's overlay sends frames to it.

The VMs are on one subnet, 10.77.0.0/24 (VM I at 10.77.0.I, as on the
multicast segment).  The namespaces are rso<PID>-u and rso<PID>-hI,
removed by destroy(), which the launcher calls on every exit; those of a
run whose process is gone are removed by the next (rstest.netns).
<run>/overlay.json names them.
"""

import json
import os
import threading
import time
from typing import Dict, List, Optional

from . import netns

MTU = 9000
UNDERLAY_MTU = 9100
MAX_HOSTS = 8
VNI = 77
VXLAN_PORT = 4789


def tap(vm: int) -> str:
    return "tap%d" % vm


def underlay_ip(host: int) -> str:
    return "10.250.0.%d" % host


class OverlayError(Exception):
    """The hosts could not be set up."""


def sh(argv: List[str], check: bool = True) -> str:
    return netns.sh(argv, check, OverlayError)


class Overlay:
    """The hosts 1..hosts of one run and where each of its VMs runs."""

    def __init__(self, run: str, placement: List[int],
                 tag: Optional[str] = None):
        """placement: VM I's first host at [I - 1]."""
        self.hosts = max([3] + placement)
        if self.hosts > MAX_HOSTS or min(placement) < 1:
            raise OverlayError("hosts are 1..%d" % MAX_HOSTS)
        self.run = run
        self.vms = len(placement)
        self.home = {i + 1: h for i, h in enumerate(placement)}
        self.where: Dict[int, int] = dict(self.home)
        self.tag = tag or "rso%d" % os.getpid()
        self.made: List[str] = []

    # --- names ----------------------------------------------------------

    def host_ns(self, host: int) -> str:
        return "%s-h%d" % (self.tag, host)

    def underlay_ns(self) -> str:
        return "%s-u" % self.tag

    def wrapper(self, host: int) -> List[str]:
        """The prefix that runs a command on host."""
        return ["ip", "netns", "exec", self.host_ns(host)]

    @staticmethod
    def netdev(netdev_id: str, vm: int) -> str:
        return "tap,id=%s,ifname=%s,script=no,downscript=no" % (netdev_id,
                                                               tap(vm))

    def describe(self) -> str:
        return ("%d hosts on a VXLAN overlay (namespaces %s-h1..h%d, "
                "underlay %s-u), VMs on hosts %s" % (
                    self.hosts, self.tag, self.hosts, self.tag,
                    ",".join(str(self.home[i])
                             for i in range(1, self.vms + 1))))

    # --- migration ------------------------------------------------------

    def destination(self, vm: int) -> int:
        """Where vm goes next: its first host if it is elsewhere, else the
        first host no other VM started on (A to B, B to A, ...)."""
        now = self.where[vm]
        if now != self.home[vm]:
            return self.home[vm]
        others = {h for v, h in self.home.items() if v != vm}
        for h in range(1, self.hosts + 1):
            if h != now and h not in others:
                return h
        return next(h for h in range(1, self.hosts + 1) if h != now)

    def migration_uri(self, host: int, port: int) -> str:
        return "tcp:%s:%d" % (underlay_ip(host), port)

    def moved(self, vm: int, host: int) -> None:
        self.where[vm] = host

    def fdb(self, host: int, mac: str) -> str:
        """Where host's overlay sends frames for mac: "local" (a port of
        its bridge), the underlay address of another host (its VXLAN
        table), or "unknown" (flooded)."""
        mac = mac.lower()
        port, dst = None, None
        out = sh(["bridge", "-n", self.host_ns(host), "fdb", "show"],
                 check=False)
        for ln in out.splitlines():
            f = ln.split()
            if len(f) < 3 or f[0] != mac or f[1] != "dev":
                continue
            if "master" in f and "permanent" not in f:
                port = f[2]         # the bridge's entry
            elif f[2] == "vx0" and "dst" in f:
                dst = f[f.index("dst") + 1]     # the overlay's
        if port is None:
            return "unknown"
        if port != "vx0":
            return "local (%s)" % port
        return dst or "unknown"

    def host_of(self, where: str) -> str:
        """A fdb() answer in the hosts' names."""
        for h in range(1, self.hosts + 1):
            if where == underlay_ip(h):
                return "h%d" % h
        return where

    def watch(self, vm: int, mac: str, host: int) -> "Learning":
        return Learning(self, vm, mac, host)

    # --- setup and teardown ---------------------------------------------

    def _ip(self, ns: str, *args: str) -> None:
        sh(["ip", "-n", ns] + list(args))

    def _add_ns(self, ns: str) -> None:
        sh(["ip", "netns", "add", ns])
        self.made.append(ns)
        self._ip(ns, "link", "set", "lo", "up")
        # the hosts' own interfaces stay quiet (no router solicitations or
        # DAD in the VMs' segment); the bridges forward IPv6 all the same
        sh(["ip", "netns", "exec", ns, "sysctl", "-q", "-w",
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1"])

    def create(self) -> None:
        """Make the namespaces, bridges, overlay and taps (on failure:
        remove what was made, then raise OverlayError)."""
        netns.clear("rso", self.tag)
        try:
            self._create()
        except BaseException:
            self.destroy()
            raise
        with open(os.path.join(self.run, "overlay.json"), "w") as f:
            json.dump({"tag": self.tag, "hosts": self.hosts,
                       "home": self.home, "pid": os.getpid()}, f)
            f.write("\n")

    def _create(self) -> None:
        u = self.underlay_ns()
        self._add_ns(u)
        self._ip(u, "link", "add", "ul", "mtu", str(UNDERLAY_MTU), "type",
                 "bridge")
        self._ip(u, "link", "set", "ul", "up")
        for h in range(1, self.hosts + 1):
            ns = self.host_ns(h)
            self._add_ns(ns)
            self._ip(u, "link", "add", "h%d" % h, "mtu", str(UNDERLAY_MTU),
                     "type", "veth", "peer", "name", "ul0", "mtu",
                     str(UNDERLAY_MTU), "netns", ns)
            self._ip(u, "link", "set", "h%d" % h, "master", "ul", "up")
            self._ip(ns, "addr", "add", underlay_ip(h) + "/24", "dev", "ul0")
            self._ip(ns, "link", "set", "ul0", "up")
            self._ip(ns, "link", "add", "br0", "mtu", str(MTU), "type",
                     "bridge")
            self._ip(ns, "link", "add", "vx0", "mtu", str(MTU), "type",
                     "vxlan", "id", str(VNI), "local", underlay_ip(h),
                     "dev", "ul0", "dstport", str(VXLAN_PORT), "learning")
            for o in range(1, self.hosts + 1):
                if o != h:
                    sh(["bridge", "-n", ns, "fdb", "append",
                        "00:00:00:00:00:00", "dev", "vx0", "dst",
                        underlay_ip(o)])
            self._ip(ns, "link", "set", "vx0", "master", "br0", "up")
            for v in range(1, self.vms + 1):
                self._ip(ns, "tuntap", "add", "dev", tap(v), "mode", "tap")
                self._ip(ns, "link", "set", tap(v), "mtu", str(MTU),
                         "master", "br0", "up")
            self._ip(ns, "link", "set", "br0", "up")

    def destroy(self) -> None:
        """Remove the namespaces (every exit)."""
        for ns in reversed(self.made):
            netns.delete(ns)
        self.made = []


class Learning(threading.Thread):
    """How the overlay learns that a VM moved: from just before the
    switch, every other host's forwarding table for the VM's MAC, polled
    every 50 ms until each one sends to the destination or LIMIT s have
    passed."""

    LIMIT = 15.0

    def __init__(self, net: Overlay, vm: int, mac: str, host: int):
        super().__init__(name="learning-vm%d" % vm, daemon=True)
        self.net = net
        self.vm = vm
        self.mac = mac
        self.dest = host
        self.others = [h for h in range(1, net.hosts + 1) if h != host]
        self.before = {h: net.fdb(h, mac) for h in self.others}
        self.learned: Dict[int, float] = {}
        self.stopping = threading.Event()
        self.start()

    def stop(self) -> None:
        self.stopping.set()

    def run(self) -> None:
        want = underlay_ip(self.dest)
        end = time.monotonic() + self.LIMIT + 60
        while not self.stopping.is_set() and time.monotonic() < end:
            for h in self.others:
                if h not in self.learned and self.net.fdb(h, self.mac) == want:
                    self.learned[h] = time.monotonic()
            if len(self.learned) == len(self.others):
                return
            self.stopping.wait(0.05)

    def report(self, t_switch: float) -> str:
        """Where the hosts sent the VM's frames before the switch (t_switch,
        time.monotonic()) and when each learned the destination."""
        self.join(max(0.0, t_switch + self.LIMIT - time.monotonic()))
        self.stop()
        n = self.net
        out = []
        for h in self.others:
            if h in self.learned:
                out.append("h%d (was %s) learned h%d %+.2f s after the "
                           "switch" % (h, n.host_of(self.before[h]),
                                       self.dest, self.learned[h] - t_switch))
            else:
                out.append("h%d (was %s) had not learned h%d %.0f s after "
                           "the switch (now %s)" % (
                               h, n.host_of(self.before[h]), self.dest,
                               self.LIMIT,
                               n.host_of(n.fdb(h, self.mac))))
        return "overlay: " + "; ".join(out)
