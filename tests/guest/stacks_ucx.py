"""UCX in the Debian guests (tests/guest/stacks.py): Debian's ucx-utils
1.13 with UCX's defaults on the adapter; a soft-RoCE VM with
UCX_UD_ETH_DGID_CHECK=n (UCX 1.13's UD looks for the destination GID
where ConnectX puts it in the receive buffer, soft-RoCE does not: UCX's
own advice for soft-RoCE)."""

import os
import re

from stacks_base import DEV

FULL = os.environ.get("RS_STACKS_FULL") == "1"
# ucx_perftest runs: (name, kind, arguments); UCT ones (with -x) name the
# device, which must have the same name on both VMs
PERF = [
    ("uct-rc-put-bw", "bw", "-t put_bw -x rc_verbs -s 65536 -D zcopy"),
    ("uct-rc-get-bw", "bw", "-t get -x rc_verbs -s 65536 -D zcopy"),
    ("uct-rc-am-lat", "lat", "-t am_lat -x rc_verbs"),
    ("uct-ud-am-lat", "lat", "-t am_lat -x ud_verbs"),
    ("uct-ud-am-bw", "bw", "-t am_bw -x ud_verbs -s 512 -D bcopy"),
    ("ucp-tag-bw", "bw", "-t tag_bw -s 65536"),
    ("ucp-tag-lat", "lat", "-t tag_lat"),
    ("ucp-put-bw", "bw", "-t ucp_put_bw -s 65536"),
]
SOFT_ENV = "export UCX_UD_ETH_DGID_CHECK=n\n"
# the UCT tests' common device name on a soft-RoCE VM
NAME = "rsuct0"


class UcxTests:
    """Mixin of distro.PairTest."""

    # pylint: disable=no-member

    def ucx_env(self, i: int) -> str:
        return DEV + (SOFT_ENV if self.soft(i) else "")

    def test_ucx_info(self):
        """ucx_info -d lists rc_verbs, ud_verbs and the device's memory
        domain on each VM's RDMA device."""
        for i in self.vms:
            out = self.sh(i, self.ucx_env(i) + 'echo "device $dev"\n'
                          'ucx_info -d\n')
            dev = re.search(r"device (\S+)", out).group(1)
            for tl in ("rc_verbs", "ud_verbs"):
                self.assertRegex(out, r"Transport: %s\s*\n#\s*Device: %s:1"
                                 % (tl, re.escape(dev)),
                                 "vm%d: no %s on %s" % (i, tl, dev))
            self.assertRegex(out, r"Memory domain: %s" % re.escape(dev))

    def test_ucx_perftest(self):
        """ucx_perftest between the VMs (VM 1 the client): UCT over RC
        (RDMA WRITE and READ of 64 KiB, active-message latency), over UD
        (latency, 512-byte stream), UCP tagged messages and puts; every
        run ends with a Final line and UCP's lanes are on the RDMA
        device."""
        n_bw, n_lat = (4000, 20000) if FULL else (400, 1000)
        ren = {}
        for i in self.vms:
            ren[i] = ""
            if self.soft(i):
                # UCT's server takes the client's device name
                ren[i] = ('rdma dev set "$dev" name %s && dev=%s\n'
                          % (NAME, NAME))
        if any(ren.values()) and not self.soft(1):
            # the adapter keeps its name: the soft-RoCE VM takes it
            dev1 = self.sh(1, DEV + 'echo "$dev"').strip().split()[-1]
            for i in self.vms:
                if self.soft(i):
                    ren[i] = 'rdma dev set "$dev" name %s\n' % dev1
        try:
            for k, (name, kind, args) in enumerate(PERF):
                n = n_bw if kind == "bw" else n_lat
                port = 13100 + k
                uct = " -x " in " %s " % args
                srv = self.ucx_env(2) + (ren[2] if uct else "") + r'''
timeout 150 ucx_perftest -p %d > /tmp/srv.out 2>&1 &
pid=$!
rs_barrier %d 120
rs_barrier %d 200
# the client is done: the server ends by itself (a SIGTERM can leave
# UCX hanging in its cleanup)
for _ in $(seq 40); do kill -0 $pid 2>/dev/null || break; sleep 0.5; done
pkill -9 -x ucx_perftest; wait $pid
cat /tmp/srv.out
''' % (port, 200 + k, 300 + k)
                cli = self.ucx_env(1) + r'''
rs_barrier %d 120
for try in $(seq 20); do
    UCX_LOG_LEVEL=%s timeout 120 ucx_perftest -p %d %s %s %s -n %d > /tmp/cli.out 2>&1
    rc=$?
    grep -q 'connect() failed' /tmp/cli.out || break
    sleep 0.5
done
rs_barrier %d 200
cat /tmp/cli.out
echo "status $rc"
''' % (200 + k, "warn" if uct else "info", port,
                    '"$RS_PEER"', args,
                    '-d "$dev:1"' if uct else "", n, 300 + k)
                out = self.sh_all({1: cli, 2: srv}, 300)[1]
                self.assertIn("status 0", out, name)
                fin = re.search(r"(?m)^Final:\s+(.*)$", out)
                self.assertIsNotNone(fin, "%s: no Final line:\n%s"
                                     % (name, out[-1500:]))
                self.assertNotRegex(out, r"UCX +ERROR", name)
                f = fin.group(1).split()
                # iterations, latency 50%, avg, overall (us), bandwidth
                # avg, overall (MB/s), message rate avg, overall
                fig = ("%s MB/s" % f[5] if kind == "bw" else
                       "%s us" % f[2])
                self.note("%s: %s" % (name, fig))
                if not uct:
                    lanes = [ln for ln in re.findall(r"ep_cfg\[\d+\]: (.*)",
                                                     out) if "self/" not in ln]
                    self.assertTrue(any("verbs/" in ln for ln in lanes),
                                    "%s: lanes %s" % (name, lanes))
        finally:
            for i in self.vms:
                if self.soft(i):
                    self.run_on(i, 'for d in /sys/class/infiniband/*; do '
                                'rdma dev set "${d##*/}" name rxe0; done',
                                check=False)
