/*
 * qtest: peer-to-peer DMA.  Data buffers in another PCI function's memory
 * BAR, here an NVMe controller memory buffer (an I/O region of QEMU's
 * nvme device, as p2pdma hands its pages to nvmet), for RDMA WRITE, READ
 * and SEND on the loopback pair; atomics refused there; ranges that leave
 * the BAR, our own BARs, a BAR the peer stops decoding or moves, and
 * peer-dma=off refused without a byte moved.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/units.h"
#include "libqos/pci.h"
#include "rs-test.h"

#define NVME_SLOT       0x10
#define NVME_CMB_BAR    2
#define CMB_MB          1
#define PEER_LEN        (3 * PAGE)
/* The bad-input test's RAM size: its end is no multiple of 2 MiB. */
#define PEER_RAM_END    (129 * MiB)

typedef struct PeerEnv {
    Loop l;
    QPCIDevice *nvme;
    uint64_t cmb;               /* the CMB's bus address */
    uint64_t cmb_size;
    uint32_t cmb_key;           /* an MR of PEER_LEN bytes on the CMB */
} PeerEnv;

static void *peer_before(GString *cmd_line, void *arg)
{
    g_string_append_printf(cmd_line,
                           " -device nvme,id=peer,serial=p2p,cmb_size_mb=%d,"
                           "addr=0x%x %s", CMB_MB, NVME_SLOT,
                           arg ? (const char *)arg : "");
    return arg;
}

static uint64_t peer_bar(QPCIDevice *dev, int bar)
{
    return qpci_config_readl(dev, PCI_BASE_ADDRESS_0 + bar * 4) &
           PCI_BASE_ADDRESS_MEM_MASK;
}

/* The loopback pair, the NVMe controller decoding its CMB. */
static void peer_setup(PeerEnv *e, void *obj, bool peer_key)
{
    QPCIBar cmb;

    loop_setup(&e->l, obj);
    e->nvme = qpci_device_find(e->l.d->dev.bus, QPCI_DEVFN(NVME_SLOT, 0));
    g_assert_nonnull(e->nvme);
    qpci_device_enable(e->nvme);
    cmb = qpci_iomap(e->nvme, NVME_CMB_BAR, &e->cmb_size);
    g_assert_false(cmb.is_io);
    e->cmb = peer_bar(e->nvme, NVME_CMB_BAR);
    g_assert_cmphex(e->cmb, !=, 0);
    g_assert_cmpuint(e->cmb_size, ==, CMB_MB * MiB);
    fill(e->l.d, e->cmb, 0xee, PEER_LEN);
    e->cmb_key = peer_key ? loop_mr(&e->l, e->cmb, PEER_LEN) : 0;
}

static void peer_teardown(PeerEnv *e)
{
    assert_alive(e->l.d);
    g_free(e->nvme);
}

static void peer_stats(PeerEnv *e, struct rs_device_stats *st)
{
    query_stats(e->l.d, st, sizeof(*st));
}

/* A REG_MR of @len bytes on the pages from @base; its status. */
static uint8_t peer_reg(PeerEnv *e, uint64_t base, uint32_t len,
                        uint8_t page_shift)
{
    struct rs_cmd_reg_mr c = {
        .iova = base,
        .length = len,
        .npages = DIV_ROUND_UP(len, 1u << page_shift),
        .pd = e->l.pd,
        .page_shift = page_shift,
        .access = STD_ACCESS,
    };
    uint32_t lkey, rkey;

    c.pbl_addr = make_pbl(e->l.d, base, 1ull << page_shift, c.npages);
    return qrs_reg_mr(e->l.d, &c, &lkey, &rkey);
}

static void peer_expect(PeerEnv *e, uint64_t wr_id, uint8_t status)
{
    struct rs_cqe cqe;

    loop_poll(&e->l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
}

/*
 * WRITE into the CMB, READ out of it, a SEND landing in it and a WRITE
 * whose source is in it: the bytes arrive, the peer counters count them
 * and the RAM counters do not.
 */
static void test_peer_dma_rw(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_device_stats st0, st;
    struct rs_send_wqe_ctrl w = {
        .wr_id = 0xa2, .opcode = RS_WR_SEND, .flags = RS_WQE_F_SIGNALED,
        .num_sge = 1,
    };
    PeerEnv e;
    Loop *l = &e.l;

    peer_setup(&e, obj, true);
    peer_stats(&e, &st0);

    /* RAM -> CMB, at an unaligned offset across two pages. */
    loop_pattern(l, l->src, 5000, 0x31);
    loop_post_op(l, &l->a, 0xa0, RS_WR_RDMA_WRITE, 0, e.cmb + 100,
                 e.cmb_key, l->src, 5000, l->src_key);
    peer_expect(&e, 0xa0, RS_WC_SUCCESS);
    loop_assert_same(l, l->src, e.cmb + 100, 5000);
    g_assert_true(is_filled(l->d, e.cmb, 0xee, 100));
    g_assert_true(is_filled(l->d, e.cmb + 5100, 0xee, PEER_LEN - 5100));
    peer_stats(&e, &st);
    g_assert_cmpuint(st.peer_dma_write_bytes - st0.peer_dma_write_bytes,
                     ==, 5000);
    g_assert_cmpuint(st.ram_dma_write_bytes, ==, st0.ram_dma_write_bytes);
    g_assert_cmpuint(st.ram_dma_read_bytes - st0.ram_dma_read_bytes,
                     ==, 5000);

    /* CMB -> RAM by READ. */
    fill(l->d, l->dst, 0, LOOP_BUF);
    loop_post_op(l, &l->a, 0xa1, RS_WR_RDMA_READ, 0, e.cmb + 100,
                 e.cmb_key, l->dst, 5000, l->dst_key);
    peer_expect(&e, 0xa1, RS_WC_SUCCESS);
    loop_assert_same(l, l->dst, e.cmb + 100, 5000);
    peer_stats(&e, &st0);
    g_assert_cmpuint(st0.peer_dma_read_bytes - st.peer_dma_read_bytes,
                     ==, 5000);

    /* A SEND whose receive buffer is in the CMB. */
    loop_pattern(l, l->src, 3000, 0x47);
    fill(l->d, e.cmb, 0xee, PEER_LEN);
    loop_post_recv(l, &l->b, 0xb0, e.cmb, PEER_LEN, e.cmb_key);
    loop_post_send(l, &l->a, &w, l->src, 3000, l->src_key);
    peer_expect(&e, 0xb0, RS_WC_SUCCESS);
    peer_expect(&e, 0xa2, RS_WC_SUCCESS);
    loop_assert_same(l, l->src, e.cmb, 3000);
    g_assert_true(is_filled(l->d, e.cmb + 3000, 0xee, PEER_LEN - 3000));

    /* A WRITE whose source (the local SGE) is the CMB. */
    fill(l->d, l->dst, 0, LOOP_BUF);
    loop_post_op(l, &l->a, 0xa3, RS_WR_RDMA_WRITE, 0, l->dst, l->dst_key,
                 e.cmb, 3000, e.cmb_key);
    peer_expect(&e, 0xa3, RS_WC_SUCCESS);
    loop_assert_same(l, l->dst, e.cmb, 3000);
    peer_stats(&e, &st);
    g_assert_cmpuint(st.peer_dma_write_bytes - st0.peer_dma_write_bytes,
                     ==, 3000);
    g_assert_cmpuint(st.peer_dma_read_bytes - st0.peer_dma_read_bytes,
                     ==, 3000);
    g_assert_cmpuint(st.data_dma_refused, ==, 0);
    peer_teardown(&e);
}

/*
 * An MMIO BAR cannot do a read-modify-write as one access: atomics on
 * the CMB get a remote operational error and leave it as it was; the
 * same atomics on RAM still work.
 */
static void test_peer_dma_atomic(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    static const uint8_t ops[] = {
        RS_WR_ATOMIC_CMP_SWP, RS_WR_ATOMIC_FETCH_ADD,
    };
    const uint16_t acc = RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_ATOMIC;
    uint32_t cmb_key, ram_key;
    PeerEnv e;
    Loop *l = &e.l;
    unsigned i;

    peer_setup(&e, obj, false);
    cmb_key = loop_mr_access(l, e.cmb, PEER_LEN, acc);
    ram_key = loop_mr_access(l, l->dst, LOOP_BUF, acc);
    for (i = 0; i < ARRAY_SIZE(ops); i++) {
        qtest_writeq(qrs_qts(l->d), e.cmb + 64, 5);
        loop_reconnect(l);
        loop_atomic(l, 0xc0 + i, ops[i], e.cmb + 64, cmb_key, 5, 9,
                    l->src, 8);
        peer_expect(&e, 0xc0 + i, RS_WC_REM_OP_ERR);
        g_assert_cmphex(qtest_readq(qrs_qts(l->d), e.cmb + 64), ==, 5);
        g_assert_true(is_filled(l->d, e.cmb, 0xee, 64));
    }
    loop_reconnect(l);
    qtest_writeq(qrs_qts(l->d), l->dst, 5);
    loop_atomic(l, 0xc8, RS_WR_ATOMIC_CMP_SWP, l->dst, ram_key, 5, 9,
                l->src, 8);
    peer_expect(&e, 0xc8, RS_WC_SUCCESS);
    g_assert_cmphex(qtest_readq(qrs_qts(l->d), l->dst), ==, 9);
    peer_teardown(&e);
}

/*
 * What is not a data buffer stays refused: a page that runs past the
 * CMB's end, our own BARs, a page that is part RAM and part CMB; and a
 * BAR the peer stops decoding, or moves, after registration gives an
 * error completion with no byte moved.
 */
static void test_peer_dma_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_device_stats st0, st1, st;
    PeerEnv e;
    Loop *l = &e.l;
    uint16_t cmd;
    uint64_t moved;

    peer_setup(&e, obj, true);
    peer_stats(&e, &st0);

    /* The whole CMB as one 1 MiB page is fine, a page more is not. */
    g_assert_cmpuint(peer_reg(&e, e.cmb, MiB, 20), ==, RS_STATUS_OK);
    g_assert_cmpuint(peer_reg(&e, e.cmb, 2 * MiB, 20), ==,
                     RS_STATUS_BAD_ADDR);
    g_assert_cmpuint(peer_reg(&e, e.cmb + e.cmb_size - PAGE, 2 * PAGE, 12),
                     ==, RS_STATUS_BAD_ADDR);
    /* Our own registers and doorbells are no peer. */
    g_assert_cmpuint(peer_reg(&e, l->d->bar0.addr, PAGE, 12), ==,
                     RS_STATUS_BAD_ADDR);
    g_assert_cmpuint(peer_reg(&e, l->d->bar2.addr, PAGE, 12), ==,
                     RS_STATUS_BAD_ADDR);
    peer_stats(&e, &st);
    g_assert_cmpuint(st.data_dma_refused - st0.data_dma_refused, ==, 4);

    /* The peer stops decoding memory: the WRITE fails, nothing moves. */
    loop_pattern(l, l->src, 2000, 0x5a);
    cmd = qpci_config_readw(e.nvme, PCI_COMMAND);
    qpci_config_writew(e.nvme, PCI_COMMAND, cmd & ~PCI_COMMAND_MEMORY);
    loop_post_op(l, &l->a, 0xd0, RS_WR_RDMA_WRITE, 0, e.cmb, e.cmb_key,
                 l->src, 2000, l->src_key);
    peer_expect(&e, 0xd0, RS_WC_REM_OP_ERR);
    qpci_config_writew(e.nvme, PCI_COMMAND, cmd);
    g_assert_true(is_filled(l->d, e.cmb, 0xee, PEER_LEN));

    /* It moves its CMB elsewhere: the key's old pages reach nothing. */
    moved = e.cmb + 16 * MiB;
    qpci_config_writel(e.nvme, PCI_BASE_ADDRESS_0 + NVME_CMB_BAR * 4,
                       (uint32_t)moved | PCI_BASE_ADDRESS_MEM_TYPE_64 |
                       PCI_BASE_ADDRESS_MEM_PREFETCH);
    g_assert_cmphex(peer_bar(e.nvme, NVME_CMB_BAR), ==, moved);
    loop_reconnect(l);
    loop_post_op(l, &l->a, 0xd1, RS_WR_RDMA_WRITE, 0, e.cmb, e.cmb_key,
                 l->src, 2000, l->src_key);
    peer_expect(&e, 0xd1, RS_WC_REM_OP_ERR);
    g_assert_true(is_filled(l->d, moved, 0xee, PEER_LEN));
    loop_reconnect(l);
    fill(l->d, l->dst, 0x11, LOOP_BUF);
    loop_post_op(l, &l->a, 0xd2, RS_WR_RDMA_READ, 0, e.cmb, e.cmb_key,
                 l->dst, 2000, l->dst_key);
    peer_expect(&e, 0xd2, RS_WC_REM_OP_ERR);
    g_assert_true(is_filled(l->d, l->dst, 0x11, LOOP_BUF));

    /*
     * The CMB right after the end of RAM: a 2 MiB page half in each is
     * refused as a whole; the same page size wholly in RAM is not.
     */
    qpci_config_writel(e.nvme, PCI_BASE_ADDRESS_0 + NVME_CMB_BAR * 4,
                       (uint32_t)PEER_RAM_END | PCI_BASE_ADDRESS_MEM_TYPE_64 |
                       PCI_BASE_ADDRESS_MEM_PREFETCH);
    g_assert_cmphex(peer_bar(e.nvme, NVME_CMB_BAR), ==, PEER_RAM_END);
    peer_stats(&e, &st1);
    g_assert_cmpuint(peer_reg(&e, PEER_RAM_END - MiB, 2 * MiB, 21), ==,
                     RS_STATUS_BAD_ADDR);
    g_assert_cmpuint(peer_reg(&e, PEER_RAM_END - 3 * MiB, 2 * MiB, 21), ==,
                     RS_STATUS_OK);
    g_assert_cmpuint(peer_reg(&e, PEER_RAM_END, MiB, 20), ==, RS_STATUS_OK);

    peer_stats(&e, &st);
    g_assert_cmpuint(st.data_dma_refused - st1.data_dma_refused, ==, 1);
    g_assert_cmpuint(st.peer_dma_write_bytes, ==, st0.peer_dma_write_bytes);
    g_assert_cmpuint(st.peer_dma_read_bytes, ==, st0.peer_dma_read_bytes);
    peer_teardown(&e);
}

/*
 * The peer is unplugged while a key names its CMB: WRITE and READ through
 * the key complete in error with no byte moved, and the address is refused
 * to a new registration.
 */
static void test_peer_dma_unplug(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    struct rs_device_stats st0, st;
    PeerEnv e;
    Loop *l = &e.l;

    peer_setup(&e, obj, true);
    peer_stats(&e, &st0);
    qpci_unplug_acpi_device_test(qrs_qts(l->d), "peer", NVME_SLOT);

    loop_pattern(l, l->src, 2000, 0x5a);
    loop_post_op(l, &l->a, 0xe0, RS_WR_RDMA_WRITE, 0, e.cmb, e.cmb_key,
                 l->src, 2000, l->src_key);
    peer_expect(&e, 0xe0, RS_WC_REM_OP_ERR);
    loop_reconnect(l);
    fill(l->d, l->dst, 0x11, LOOP_BUF);
    loop_post_op(l, &l->a, 0xe1, RS_WR_RDMA_READ, 0, e.cmb, e.cmb_key,
                 l->dst, 2000, l->dst_key);
    peer_expect(&e, 0xe1, RS_WC_REM_OP_ERR);
    g_assert_true(is_filled(l->d, l->dst, 0x11, LOOP_BUF));
    g_assert_cmpuint(peer_reg(&e, e.cmb, PAGE, 12), ==, RS_STATUS_BAD_ADDR);

    peer_stats(&e, &st);
    g_assert_cmpuint(st.peer_dma_write_bytes, ==, st0.peer_dma_write_bytes);
    g_assert_cmpuint(st.peer_dma_read_bytes, ==, st0.peer_dma_read_bytes);
    g_assert_cmpuint(st.data_dma_refused, >, st0.data_dma_refused);
    peer_teardown(&e);
}

/* peer-dma=off: no capability, and the CMB is refused like any MMIO. */
static void test_peer_dma_off(void *obj, void *data, QGuestAllocator *alloc)
{
    PeerEnv e;

    peer_setup(&e, obj, false);
    g_assert_cmphex(qrs_readl(e.l.d, A_RS_CAPS) & RS_CAP_PEER_DMA, ==, 0);
    g_assert_cmpuint(peer_reg(&e, e.cmb, PAGE, 12), ==, RS_STATUS_BAD_ADDR);
    peer_teardown(&e);
}

static void register_peer_dma_tests(void)
{
    QOSGraphTestOptions on = { .before = peer_before };
    QOSGraphTestOptions bad = {
        .before = peer_before,
        .arg = (void *)"-m 129M",
    };
    QOSGraphTestOptions off = {
        .before = peer_before,
        .arg = (void *)"-global rdma-session.peer-dma=off",
    };

    rs_add_standalone_test("peer-dma/rw", test_peer_dma_rw, &on);
    rs_add_standalone_test("peer-dma/atomic", test_peer_dma_atomic, &on);
    rs_add_standalone_test("peer-dma/bad", test_peer_dma_bad, &bad);
    rs_add_standalone_test("peer-dma/unplug", test_peer_dma_unplug, &on);
    rs_add_standalone_test("peer-dma/off", test_peer_dma_off, &off);
}

libqos_init(register_peer_dma_tests);
