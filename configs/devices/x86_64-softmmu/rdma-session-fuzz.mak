# The fuzzing build's device set (scripts/build-qemu.sh --fuzz): that of
# rdma-session.mak without what only the guests use (virtio-9p, which
# needs virtfs, PCIe switch ports, expander bridges).  NVMe stays: its
# controller memory buffer is the peer of the peer-dma qtests, which the
# sanitizer build runs too.
CONFIG_Q35=y
CONFIG_I440FX=y
CONFIG_PCIE_PORT=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_RNG=y
CONFIG_VIRTIO_SERIAL=y
CONFIG_E1000E_PCI_EXPRESS=y
CONFIG_NVME_PCI=y
CONFIG_RDMA_SESSION=y
