"""Open MPI over UCX, launched over ssh, and libfabric's verbs provider in
the Debian guests (tests/guest/stacks.py): Debian's openmpi-bin 4.1.4
and libfabric-bin 1.17 as a cluster would run them."""

import base64
import os
import re

from stacks_base import DEV

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "mpi", "rs-mpi-check.c")
# Counters of RoCE traffic sent and received: the adapter's hw_counters
# roce_{tx,rx}_{bytes,packets} (not lan_*: its Ethernet traffic, ssh
# included), soft-RoCE's sent_pkts and rcvd_pkts, port counters if any
MOVING = re.compile(r"(port_(xmit|rcv)_(data|packets)|sent_pkts|rcvd_pkts"
                    r"|roce_(tx|rx)_(bytes|packets))$")
# Every port counter and hardware counter of the device, as "CTR NAME N"
CTRS = DEV + r'''
p=/sys/class/infiniband/$dev/ports/1
for f in $p/counters/* $p/hw_counters/*; do
    [ -f "$f" ] && v=$(cat "$f" 2>/dev/null) && echo "CTR ${f#$p/} $v"
done
true
'''


def counters(out: str) -> dict:
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"(?m)^CTR (\S+) (\d+)$", out)}


class MpiTests:
    """Mixin of distro.PairTest."""

    # pylint: disable=no-member

    def mpi_setup(self) -> dict:
        """Host names in /etc/hosts, rs-mpi-check built with mpicc on both
        VMs, root's ssh from VM 1 to both hosts without a question; each
        VM's RDMA device name."""
        with open(SRC, "rb") as f:
            b64 = base64.b64encode(f.read()).decode()
        devs = {}
        for i in self.vms:
            out = self.sh(i, DEV + r'''
grep -q ' vm1$' /etc/hosts || printf '%%s vm1\n%%s vm2\n' "${RS_IP%%.*}.1" "${RS_IP%%.*}.2" >> /etc/hosts
base64 -d > /root/rs-mpi-check.c <<'EOF'
%s
EOF
mpicc -O2 -Wall -o /root/rs-mpi-check /root/rs-mpi-check.c
echo "device $dev"
''' % b64, 300)
            devs[i] = re.search(r"device (\S+)", out).group(1)
        out = self.sh(1, "for h in vm1 vm2; do ssh -o BatchMode=yes $h "
                      "hostname; done", 120)
        self.assertEqual(out.split()[-2:], ["vm1", "vm2"], out)
        return devs

    def test_mpi(self):
        """Open MPI 4.1.4 with the UCX PML and OSC started by mpirun over
        ssh on both VMs, one then two ranks per VM: rs-mpi-check's steps
        (point-to-point eager and rendezvous, collectives with Alltoall,
        one-sided, a halo exchange) all check their data; both hosts
        selected pml ucx, each rank's endpoints to the other host send
        tagged messages and RMA over rc_verbs on the RDMA device, no TCP
        lane; the device's traffic counters moved on both VMs."""
        devs = self.mpi_setup()
        for ppn in (1, 2):
            before = {i: counters(self.sh(i, CTRS)) for i in self.vms}
            ctx = []
            for i in self.vms:
                env = ("-x UCX_UD_ETH_DGID_CHECK=n " if self.soft(i) else "")
                ctx.append("-np %d --host vm%d:%d -x UCX_LOG_LEVEL=info %s"
                           "/root/rs-mpi-check 1" % (ppn, i, ppn, env))
            if any(self.soft(i) for i in self.vms):
                # MPMD: the soft-RoCE VM's ranks alone get its variable
                app = " : ".join(ctx)
            else:
                app = ("-np %d --host vm1:%d,vm2:%d -x UCX_LOG_LEVEL=info "
                       "/root/rs-mpi-check 1" % (2 * ppn, ppn, ppn))
            out = self.sh(1, r'''
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%%s.%%N)
timeout 500 mpirun --mca plm_rsh_agent ssh \
    --mca pml ucx --mca osc ucx --mca btl self \
    --mca oob_tcp_if_include "${RS_IP%%.*}.0/24" \
    --mca pml_base_verbose 10 %s > /tmp/mpi.out 2>&1
rc=$?
cat /tmp/mpi.out
echo "mpirun status $rc in $(awk -v a=$t0 -v b=$(date +%%s.%%N) 'BEGIN { printf "%%.1f", b - a }') s"
''' % app, 600)
            after = {i: counters(self.sh(i, CTRS)) for i in self.vms}
            tag = "%d per VM" % ppn
            m = re.search(r"mpirun status (\d+) in ([\d.]+) s", out)
            self.assertIsNotNone(m, out[-3000:])
            self.assertEqual(m.group(1), "0", "%s: mpirun failed:\n%s"
                             % (tag, out[-3000:]))
            checks = re.findall(r"(?m)^CHECK (\S+) (ok|fail)(.*)$", out)
            names = [c[0] for c in checks]
            for step in ("ranks", "send-recv", "exchange", "collectives",
                         "rma", "halo", "finalize"):
                self.assertIn("mpi-" + step, names, "%s: no result" % tag)
            bad = [c for c in checks if c[1] != "ok"]
            self.assertEqual(bad, [], tag)
            self.assertIn("%d ranks" % (2 * ppn), out)
            for i in self.vms:
                h = "vm%d" % i
                sel = re.findall(r"(?m)^\[%s:(\d+)\] select: component ucx "
                                 r"selected" % h, out)
                self.assertEqual(len(set(sel)), ppn, "%s: %s: pml ucx "
                                 "selected by %s" % (tag, h, sel))
                # "[TIME] [HOST:PID:THREAD] ucp_worker.c:N UCX INFO
                # ep_cfg[K]: tag(TL/DEV ...) rma(...) ...": each rank's
                # endpoints to the other host's ranks on rc_verbs
                lanes = re.findall(r"\[%s:\s*(\d+)\s*:\w+\].*ep_cfg\[\d+\]: "
                                   r"(.*)" % h, out)
                rc_dev = "rc_verbs/%s:1" % re.escape(devs[i])
                # (tagged messages and RMA are separate ep_cfg lines)
                tag_p = {pid for pid, ln in lanes
                         if re.search(r"tag\([^)]*%s" % rc_dev, ln)}
                rma_p = {pid for pid, ln in lanes
                         if re.search(r"rma\([^)]*%s" % rc_dev, ln)}
                pids = tag_p & rma_p
                self.assertEqual(len(pids), ppn, "%s: %s: ranks with tag "
                                 "and rma lanes on %s: %s (lanes %s)"
                                 % (tag, h, rc_dev, pids, lanes))
            self.assertNotRegex(out, r"ep_cfg.*tcp/", tag)
            for i in self.vms:
                d = {k: after[i].get(k, 0) - v for k, v in before[i].items()
                     if MOVING.search(k)}
                moved = {k: v for k, v in d.items() if v >= 1000}
                self.assertTrue(moved, "%s: vm%d: the device's traffic "
                                "counters did not move: %s (all: %s)"
                                % (tag, i, d, sorted(before[i])))
                self.note("%s: vm%d %s" % (tag, i, " ".join(
                    "%s+%d" % kv for kv in sorted(moved.items()))))
            perf = re.findall(r"(?m)^MPI-PERF (\S+) (\S+) (\S+)$", out)
            self.assertEqual(len(perf), 2, out[-2000:])
            self.note("%s: mpirun %s s; %s" % (tag, m.group(2), ", ".join(
                "%s %s %s" % p for p in perf)))

    def test_libfabric(self):
        """libfabric 1.17's verbs provider: fi_info lists each VM's RDMA
        device as a verbs domain (MSG and, through ofi_rxm, RDM);
        fi_pingpong between the VMs, VM 1 the server, over verbs;ofi_rxm
        RDM and verbs MSG endpoints, 64 B and 1 MiB with data checks (-c),
        ends with its result line."""
        for i in self.vms:
            out = self.sh(i, DEV + r'''
echo "device $dev"
fi_info -p verbs
fi_info -p "verbs;ofi_rxm" -t FI_EP_RDM
''', 120)
            dev = re.search(r"device (\S+)", out).group(1)
            doms = set(re.findall(r"domain: (\S+)", out))
            self.assertIn(dev, doms, "vm%d: verbs domains %s" % (i, doms))
            self.assertRegex(out, r"provider: verbs;ofi_rxm",
                             "vm%d: no RDM endpoint through ofi_rxm" % i)
        # ofi_rxm sizes the verbs CQ of its connections as (tx + rx
        # size) x the universe size, (384 + 384) x 256 by default: more
        # than the adapter's 32767 CQ entries (soft-RoCE's too; ConnectX
        # has 4 M), so ibv_create_cq fails with EINVAL.  A universe of 32
        # (the job's size bound, 2 here) fits.
        runs = [("rdm", 'env FI_UNIVERSE_SIZE=32 fi_pingpong -p '
                 '"verbs;ofi_rxm" -e rdm'),
                ("msg", "fi_pingpong -p verbs -e msg")]
        # (size, iterations): latency, then bandwidth
        sizes = [(64, 500), (1048576, 20)]
        for k, (name, args) in enumerate(runs):
            srv = cli = ""
            for j, (size, iters) in enumerate(sizes):
                port = 47600 + 2 * k + j
                # -c: fi_pingpong checks every received byte and fails
                # on a mismatch
                cmd = ("FI_LOG_LEVEL=warn timeout 200 %s -c -S %d -I %d"
                       % (args, size, iters))
                # the server's control socket listens before the barrier;
                # the client connects once (no retry)
                srv += r'''
%s -B %d > /tmp/fi.out 2>&1 &
pid=$!
rs_barrier %d 120
wait $pid; rc=$?
cat /tmp/fi.out
echo "fi status %d $rc"
''' % (cmd, port, 610 + 2 * k + j, size)
                cli += r'''
rs_barrier %d 120
sleep 3
%s -P %d "$RS_PEER" > /tmp/fi.out 2>&1; rc=$?
cat /tmp/fi.out
echo "fi status %d $rc"
''' % (610 + 2 * k + j, cmd, port, size)
            outs = self.run_both(srv, cli)
            figs = []
            for size, iters in sizes:
                for i, out in outs.items():
                    self.assertIn("fi status %d 0" % size, out,
                                  "%s %d B vm%d:\n%s"
                                  % (name, size, i, out[-2500:]))
                # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec,
                # e.g. "1m  20  =20  40m  0.72s  58.34  17974.20  0.00"
                label = "1m" if size == 1048576 else str(size)
                row = re.search(r"(?m)^%s\s+(\d+)\s+=\d+\s+\S+\s+\S+s\s+"
                                r"([\d.]+)\s+([\d.]+)\s+[\d.]+\s*$"
                                % label, outs[2])
                self.assertIsNotNone(row, "%s: no result line for %d B:\n%s"
                                     % (name, size, outs[2][-2500:]))
                self.assertEqual(int(row.group(1)), iters, row.group(0))
                figs.append("%d B x%s: %s us/xfer %s MB/s" % (
                    size, row.group(1), row.group(3), row.group(2)))
            self.note("fi_pingpong %s (data checked): %s"
                      % (name, "; ".join(figs)))

    def run_both(self, srv: str, cli: str) -> dict:
        return self.sh_all({1: srv, 2: cli}, 400)
