"""The packages in the Debian guest, and the driver under two CPUs
(tests/guest/stacks.py)."""

import re

# The guest's RDMA device, whatever udev named it (rdma-core's rules name
# the adapter's after its PCI slot, e.g. rocep0s1).
DEV = 'dev=$(ls /sys/class/infiniband | head -n 1); [ -n "$dev" ] || ' \
      '{ echo "no RDMA device"; exit 1; }\n'


class BaseTests:
    """Mixin of distro.PairTest."""

    # pylint: disable=no-member

    def test_packages(self):
        """The adapter's VMs: DKMS built and installed the module, udev
        loaded it at boot from the PCI ID (nothing loaded it by hand),
        rdma link and Debian's ibv_devinfo (libibverbs 44 with the
        provider package's plugin) show it active."""
        for i in self.vms:
            if self.soft(i):
                continue
            out = self.sh(i, DEV + r'''
dkms status rdma-session
echo "module: $(modinfo -n rdma_session)"
echo "loaded: $(grep -c '^rdma_session ' /proc/modules)"
echo "modalias: $(cat /sys/bus/pci/devices/*/modalias | grep -i v00001AF4d000010F0)"
echo "driver: $(basename "$(readlink /sys/class/infiniband/$dev/device/driver)")"
rdma link show
ibv_devinfo -d "$dev"
dpkg -S "$(readlink -f /usr/lib/x86_64-linux-gnu/libibverbs/librsession-rdmav34.so)"
dpkg-query -W libibverbs1 rdma-session-dkms rdma-session-provider
nproc
''')
            self.assertRegex(out, r"rdma-session/[^ ]+, [^ ]+, x86_64: "
                             r"installed")
            self.assertIn("/updates/dkms/rdma_session.ko", out)
            self.assertIn("loaded: 1", out)
            self.assertIn("driver: rdma_session", out)
            self.assertRegex(out, r"link \S+/1 state ACTIVE physical_state "
                             r"LINK_UP netdev \S+")
            self.assertIn("PORT_ACTIVE", out)
            self.assertRegex(out, r"rdma-session-provider: /usr/lib/")
            self.assertRegex(out, r"libibverbs1(:amd64)?\t44\.")
            self.assertRegex(out, r"(?m)^2$")

    def test_two_cpus(self):
        """Two processes on the two vCPUs post to the same device at once
        (ib_send_bw of 64 KiB and ib_send_bw with completion events, each pinned
        to one CPU on both sides), the completion interrupts on CPU 1,
        not on ib_send_bw of 64 KiB's CPU 0; both streams end well and the
        interrupts were taken on CPU 1."""
        irqs = r'''
irqs() { awk '/rdma_session-comp/ { a += $2; b += $3 } END { print a + 0, b + 0 }' /proc/interrupts; }
'''
        # every completion vector's interrupt to CPU 1, where the
        # ib_send_bw of 64 KiB poster is not
        pin = r'''
for h in /proc/irq/*/rdma_session-comp*; do
    [ -e "$h" ] && echo 2 > "${h%/*}/smp_affinity"
done
'''
        srv = {}
        for i in self.vms:
            srv[i] = DEV + irqs + ("" if self.soft(i) else pin) + r'''
before=$(irqs)
''' + (r'''
taskset -c 0 ib_send_bw -d $dev -x 1 -F -s 65536 -n 400 -e > /tmp/w.out 2>&1 &
a=$!
taskset -c 1 ib_send_bw -d $dev -x 1 -F -s 4096 -n 2000 -e -p 18516 > /tmp/s.out 2>&1 &
b=$!
rs_barrier 1 120
wait $a; ra=$?
wait $b; rb=$?
''' if i == 1 else r'''
rs_barrier 1 120
sleep 2
taskset -c 0 ib_send_bw -d $dev -x 1 -F -s 65536 -n 400 -e $RS_PEER > /tmp/w.out 2>&1 &
a=$!
taskset -c 1 ib_send_bw -d $dev -x 1 -F -s 4096 -n 2000 -e -p 18516 $RS_PEER > /tmp/s.out 2>&1 &
b=$!
wait $a; ra=$?
wait $b; rb=$?
''') + r'''
cat /tmp/w.out /tmp/s.out
echo "status: $ra $rb"
echo "interrupts: $before -> $(irqs)"
'''
        outs = self.sh_all(srv, 300)
        for i, out in outs.items():
            self.assertIn("status: 0 0", out, "vm%d" % i)
            if self.soft(i):
                continue
            m = re.search(r"interrupts: (\d+) (\d+) -> (\d+) (\d+)", out)
            self.assertIsNotNone(m, out)
            c1 = int(m.group(4)) - int(m.group(2))
            self.assertGreater(c1, 0, "vm%d: no completion interrupt on "
                               "CPU 1" % i)
