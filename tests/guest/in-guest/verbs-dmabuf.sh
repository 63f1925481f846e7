# verbs: dma-buf MRs (rsv-dmabuf): VM 1, an adapter, registers dma-bufs of
# memfds (/dev/udmabuf); VM 2 writes, reads and sends into them.  Soft-RoCE
# has no dma-buf MRs: as VM 2 it must refuse one and uses an ordinary MR.
ls -l /dev/udmabuf
if [ "$VB_PAIRING" = adapter-rxe ] && [ "$RS_VM_INDEX" = 2 ]; then
    vb_pair dmabuf rsv-dmabuf -- ordinary
else
    vb_pair dmabuf rsv-dmabuf
fi
