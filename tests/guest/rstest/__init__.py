"""The VM-level test harness of rdma-session.

Guests with the adapter (or Linux soft-RoCE) on one L2 segment, each a QEMU
driven through QEMU's own Python library (python/qemu/machine and
python/qemu/qmp, from the QEMU source tree scripts/build-qemu.sh unpacked
into $RS_BUILD):

  qemupath    puts that library on sys.path (import it first)
  console     what a guest's /init prints on its serial console: ready,
              the command's output and exit status
  checks      "CHECK name ok|fail detail" lines and their TAP report
  vm          Segment (multicast, dgram, stream, user), VM (one guest:
              its QEMUMachine, serial log, control port, captures, QMP),
              the script each guest runs (with rs_barrier)
  migration   live migration of a VM to a new QEMU on this host, and the
              RDMA stall its peer saw, from a capture
  launcher    scripts/launch-vms.sh: N guests, their commands, the report
  suite       a VM-level suite in Python: TAP, its log directory, launcher
              runs in-process (tests/guest/guest_stack.py, nvmf.py)
  select      a table-driven suite's tests by name: --list, NAME... (only
              the boots and features they need), --repeat N (pass rates)
  roce        the capture library: pcap and pcapng records, RoCEv2
              packets and their fields, bundles, ICRCs
"""
