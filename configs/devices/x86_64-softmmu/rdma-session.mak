# Lean x86_64 device set for rdma-session: q35 with PCIe, virtio-net for
# the soft-RoCE peer VMs, virtio-blk for the Debian guest's disk,
# virtio-9p for a shared host directory, NVMe and PCIe switch ports for
# peer-to-peer topologies (a PCIe switch; expander bridges on NUMA
# nodes, whose code needs CXL), and the adapter.  Used with
# --without-default-devices --with-devices-x86_64=rdma-session.
CONFIG_Q35=y
CONFIG_I440FX=y
CONFIG_PCIE_PORT=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_9P=y
CONFIG_NVME_PCI=y
CONFIG_XIO3130=y
CONFIG_PXB=y
CONFIG_CXL=y
CONFIG_CXL_MEM_DEVICE=y
CONFIG_VIRTIO_RNG=y
CONFIG_VIRTIO_SERIAL=y
CONFIG_E1000E_PCI_EXPRESS=y
CONFIG_RDMA_SESSION=y
