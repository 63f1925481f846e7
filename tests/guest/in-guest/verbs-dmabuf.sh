# verbs: dma-buf MRs (rsv-dmabuf): VM 1, an adapter, registers dma-bufs of
# memfds (/dev/udmabuf); VM 2 writes, reads and sends into them.  Soft-RoCE
# has no dma-buf MRs: as VM 2 it must refuse one and uses an ordinary MR.
ls -l /dev/udmabuf
# rsv-dmabuf counts the dma-bufs' attachments in debugfs.
grep -q ' /sys/kernel/debug ' /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
if [ "$VB_PAIRING" = adapter-rxe ] && [ "$RS_VM_INDEX" = 2 ]; then
    vb_pair dmabuf rsv-dmabuf -- ordinary
else
    vb_pair dmabuf rsv-dmabuf
fi
