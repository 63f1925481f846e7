/*
 * rdma-session qtests: identity, registers, the admin queue, MSI-X,
 * queries, link state and doorbells
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "rs-test.h"

#define DEF_MAX_CQS             256
#define DEF_MAX_AHS             256
#define DEF_MAX_SESSIONS        256
#define DEF_MAX_GROUPS          64
#define DEF_MAX_MSG_SIZE        0x80000000u

static void test_probe(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    QPCIDevice *dev = &d->dev;
    uint32_t bar;
    uint8_t cap;

    g_assert_cmphex(qpci_config_readw(dev, PCI_VENDOR_ID), ==,
                    RS_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(dev, PCI_DEVICE_ID), ==,
                    RS_PCI_DEVICE_ID);
    /* An Ethernet controller: the RoCE port is also the LAN NIC. */
    g_assert_cmphex(qpci_config_readw(dev, PCI_CLASS_DEVICE), ==,
                    PCI_CLASS_NETWORK_ETHERNET);
    g_assert_cmphex(RS_PCI_CLASS, ==, PCI_CLASS_NETWORK_ETHERNET);
    g_assert_cmphex(qpci_config_readb(dev, PCI_REVISION_ID), ==,
                    RS_PCI_REVISION);
    g_assert_cmphex(qpci_config_readb(dev, PCI_HEADER_TYPE) & 0x7f, ==,
                    PCI_HEADER_TYPE_NORMAL);

    /* BAR0: 4 KiB of registers, memory space. */
    g_assert_cmphex(d->bar0_size, ==, RS_REGS_SIZE);
    bar = qpci_config_readl(dev, PCI_BASE_ADDRESS_0);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_SPACE, ==,
                    PCI_BASE_ADDRESS_SPACE_MEMORY);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_MASK, ==, d->bar0.addr);

    /* BAR2: db-pages doorbell pages, 64-bit, not prefetchable. */
    g_assert_cmphex(d->bar2_size, ==, DEF_DB_PAGES * RS_DB_PAGE_SIZE);
    bar = qpci_config_readl(dev, PCI_BASE_ADDRESS_2);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_SPACE, ==,
                    PCI_BASE_ADDRESS_SPACE_MEMORY);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_PREFETCH, ==, 0);

    /* MSI-X: 1 + num-comp-vectors vectors, table and PBA in BAR1. */
    cap = qpci_find_capability(dev, PCI_CAP_ID_MSIX, 0);
    g_assert_cmphex(cap, !=, 0);
    g_assert_cmpuint(qpci_msix_table_size(dev), ==, DEF_NUM_MSIX);
    g_assert_cmpuint(qpci_config_readl(dev, cap + PCI_MSIX_TABLE) &
                     PCI_MSIX_FLAGS_BIRMASK, ==, RS_BAR_MSIX);
    g_assert_cmpuint(qpci_config_readl(dev, cap + PCI_MSIX_PBA) &
                     PCI_MSIX_FLAGS_BIRMASK, ==, RS_BAR_MSIX);

    /* Registers at power-on. */
    assert_power_on_regs(d, DEF_DB_PAGES, DEF_NUM_MSIX);
    g_assert_cmpuint((qrs_readl(d, A_RS_VERSION) &
                      (uint32_t)R_RS_VERSION_MAJOR_MASK) >>
                     R_RS_VERSION_MAJOR_SHIFT, ==, RS_ABI_VERSION_MAJOR);
}

static void test_registers(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    static const uint32_t ro_regs[] = {
        A_RS_MAGIC, A_RS_VERSION, A_RS_CAPS, A_RS_DB_PAGES, A_RS_STATUS,
        A_RS_FATAL_CODE, A_RS_NUM_MSIX, A_RS_ADMQ_CI, A_RS_MAC_LO,
        A_RS_MAC_HI,
    };
    static const uint32_t unknown[] = {
        0x058, 0x05c, 0x080, 0x0fc, 0x104, 0x200, 0x800, 0xffc,
    };
    static const struct {
        uint32_t reg;
        uint32_t val;
    } ring_regs[] = {
        { A_RS_ADMQ_BASE_LO, 0x12345640 },
        { A_RS_ADMQ_BASE_HI, 0x00000009 },
        { A_RS_ADMQ_CFG, 7 },
        { A_RS_ACQ_BASE_LO, 0x2345c000 },
        { A_RS_ACQ_BASE_HI, 0x0000000a },
        { A_RS_ACQ_CFG, 3 },
        { A_RS_AEQ_BASE_LO, 0x3456f080 },
        { A_RS_AEQ_BASE_HI, 0x0000000b },
        { A_RS_AEQ_CFG, (2 << R_RS_AEQ_CFG_VECTOR_SHIFT) | 6 },
    };
    uint32_t before[NREGS], after[NREGS];
    uint32_t saved[ARRAY_SIZE(ring_regs)];
    struct rs_device_attr attr;
    int i;

    /* Unknown offsets read as zero. */
    for (i = 0; i < ARRAY_SIZE(unknown); i++) {
        g_assert_cmphex(qrs_readl(d, unknown[i]), ==, 0);
    }

    /* Read-only registers ignore writes. */
    dump_regs(d, before);
    for (i = 0; i < ARRAY_SIZE(ro_regs); i++) {
        qrs_writel(d, ro_regs[i], 0xffffffff);
        qrs_writel(d, ro_regs[i], 0);
    }
    dump_regs(d, after);
    assert_regs_equal(before, after);

    /* Ring registers read back what was written while disabled. */
    for (i = 0; i < ARRAY_SIZE(ring_regs); i++) {
        qrs_writel(d, ring_regs[i].reg, ring_regs[i].val);
    }
    for (i = 0; i < ARRAY_SIZE(ring_regs); i++) {
        g_assert_cmphex(qrs_readl(d, ring_regs[i].reg), ==, ring_regs[i].val);
    }
    g_assert_cmphex(qrs_readl(d, A_RS_CTRL), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, R_RS_STATUS_LINK_UP_MASK);

    /* Only 32-bit accesses reach the registers. */
    g_assert_cmphex(qpci_io_readw(&d->dev, d->bar0, A_RS_MAGIC), ==, 0);
    g_assert_cmphex(qpci_io_readb(&d->dev, d->bar0, A_RS_MAGIC), ==, 0);
    g_assert_cmphex(qpci_io_readw(&d->dev, d->bar0, A_RS_ADMQ_CFG), ==, 0);
    qpci_io_writeb(&d->dev, d->bar0, A_RS_CTRL, R_RS_CTRL_ENABLE_MASK);
    qpci_io_writew(&d->dev, d->bar0, A_RS_CTRL, R_RS_CTRL_ENABLE_MASK);
    qpci_io_writew(&d->dev, d->bar0, A_RS_ADMQ_CFG, 2);
    g_assert_cmphex(qrs_readl(d, A_RS_CTRL), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, R_RS_STATUS_LINK_UP_MASK);
    g_assert_cmphex(qrs_readl(d, A_RS_ADMQ_CFG), ==, 7);

    /* While enabled the ring registers ignore writes. */
    admin_setup(d);
    for (i = 0; i < ARRAY_SIZE(ring_regs); i++) {
        saved[i] = qrs_readl(d, ring_regs[i].reg);
    }
    g_assert_cmphex(saved[0], ==, d->admq & 0xffffffffu);
    g_assert_cmphex(saved[1], ==, d->admq >> 32);
    g_assert_cmphex(saved[2], ==, RS_QOS_ADMQ_LOG);
    g_assert_cmphex(saved[3], ==, d->acq & 0xffffffffu);
    g_assert_cmphex(saved[6], ==, d->aeq & 0xffffffffu);
    g_assert_cmphex(saved[8], ==, RS_QOS_AEQ_LOG);
    for (i = 0; i < ARRAY_SIZE(ring_regs); i++) {
        qrs_writel(d, ring_regs[i].reg, ring_regs[i].val);
    }
    for (i = 0; i < ARRAY_SIZE(ring_regs); i++) {
        g_assert_cmphex(qrs_readl(d, ring_regs[i].reg), ==, saved[i]);
    }
    RS_ASSERT_OK(qrs_query_device(d, &attr));
    RS_ASSERT_OK(qrs_query_device(d, &attr));
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, 2);

    /* Writing ENABLE=1 again is not a 0->1 edge: nothing restarts. */
    qrs_writel(d, A_RS_CTRL, R_RS_CTRL_ENABLE_MASK);
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, 2);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);
    assert_alive(d);
}

/* Write a command into its ring slot without ringing the doorbell. */
static void admq_put(QRdmaSession *d, uint32_t index, uint8_t opcode,
                     uint16_t cmd_id)
{
    struct rs_admin_cmd cmd;

    cmd_init(&cmd, opcode);
    cmd.hdr.cmd_id = cmd_id;
    if (opcode == RS_CMD_QUERY_DEVICE) {
        cmd.query.resp_addr = d->scratch;
        cmd.query.resp_len = sizeof(struct rs_device_attr);
    }
    qrs_cmd_to_le(&cmd);
    qtest_memwrite(qrs_qts(d),
                   d->admq + (index & ((1u << d->admq_log) - 1)) *
                   sizeof(cmd), &cmd, sizeof(cmd));
}

static bool acq_slot_idle(QRdmaSession *d, uint32_t index)
{
    struct rs_admin_cqe cqe;

    return !qrs_admin_poll(d, index, &cqe, G_USEC_PER_SEC / 5);
}

/*
 * A producer index more than a ring ahead, or behind, is ignored;
 * exactly one ring ahead is fine.  (Two-entry ring, two PDs created.)
 */
static void admq_bad_doorbells(QRdmaSession *d)
{
    struct rs_admin_cqe cqe;
    uint32_t base;

    base = d->admq_pi;
    admq_put(d, base, RS_CMD_CREATE_PD, 0x2001);
    admq_put(d, base + 1, RS_CMD_CREATE_PD, 0x2002);
    qrs_writel(d, A_RS_ADMQ_DB, base + 3);
    g_assert_true(acq_slot_idle(d, base));
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, base);
    qrs_writel(d, A_RS_ADMQ_DB, base - 1);
    g_assert_true(acq_slot_idle(d, base));
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, base);
    /* Exactly one ring ahead is fine. */
    qrs_writel(d, A_RS_ADMQ_DB, base + 2);
    qrs_admin_wait(d, base, &cqe);
    RS_ASSERT_OK(cqe.status);
    g_assert_cmphex(cqe.cmd_id, ==, 0x2001);
    g_assert_cmphex(cqe.handle, ==, HANDLE(0, 2));
    qrs_admin_wait(d, base + 1, &cqe);
    RS_ASSERT_OK(cqe.status);
    g_assert_cmphex(cqe.cmd_id, ==, 0x2002);
    g_assert_cmphex(cqe.handle, ==, HANDLE(0, 3));
    d->admq_pi = base + 2;
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, base + 2);
}

/* Rings that end exactly at the end of RAM are valid. */
static void admq_at_ram_end(QRdmaSession *d)
{
    struct rs_device_attr attr;
    uint64_t end = ram_end(d);
    int i;

    qrs_reset(d);
    d->admq_log = 1;
    d->aeq_log = 1;
    d->admq = end - (sizeof(struct rs_admin_cmd) << 1);
    d->acq = d->admq - 64;
    d->aeq = d->acq - 64;
    fill(d, d->aeq, 0, 3 * 64 + 64);
    qrs_writel(d, A_RS_ADMQ_BASE_LO, d->admq);
    qrs_writel(d, A_RS_ADMQ_BASE_HI, d->admq >> 32);
    qrs_writel(d, A_RS_ADMQ_CFG, 1);
    qrs_writel(d, A_RS_ACQ_BASE_LO, d->acq);
    qrs_writel(d, A_RS_ACQ_BASE_HI, d->acq >> 32);
    qrs_writel(d, A_RS_ACQ_CFG, 0);
    qrs_writel(d, A_RS_AEQ_BASE_LO, d->aeq);
    qrs_writel(d, A_RS_AEQ_BASE_HI, d->aeq >> 32);
    qrs_writel(d, A_RS_AEQ_CFG, 1);
    qrs_admin_enable(d);
    wait_aeq_port_active(d);
    for (i = 0; i < 5; i++) {
        RS_ASSERT_OK(qrs_query_device(d, &attr));
        g_assert_cmpuint(attr.max_qp, ==, USABLE(DEF_MAX_QPS));
    }
    qrs_reset(d);
}

static void test_admin_queue(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    struct rs_admin_cqe cqe;
    struct rs_event ev;
    struct rs_device_attr attr;
    uint32_t base, i;

    /* Two-entry ring, no event queue. */
    qrs_admin_configure(d, 1, 0, 0, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_AEQ_BASE_LO), ==, 0);

    /* A doorbell before READY is ignored. */
    admq_put(d, 0, RS_CMD_CREATE_PD, 0x7777);
    qrs_writel(d, A_RS_ADMQ_DB, 1);
    qrs_admin_enable(d);
    g_assert_true(acq_slot_idle(d, 0));
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, 0);

    /* Wrap the ring several times; check the phase of every slot. */
    for (i = 0; i < 7; i++) {
        struct rs_admin_cmd cmd;
        uint32_t index;

        cmd_init(&cmd, RS_CMD_QUERY_PORT);
        cmd.query.resp_addr = d->scratch;
        cmd.query.resp_len = sizeof(struct rs_port_attr);
        cmd.query.handle = 1;
        index = qrs_admin_submit(d, &cmd);
        g_assert_cmpuint(index, ==, i);
        qrs_admin_wait(d, index, &cqe);
        RS_ASSERT_OK(cqe.status);
        g_assert_cmpuint(cqe.flags & RS_ACQE_PHASE, ==, ((i >> 1) & 1) ^ 1);
        g_assert_cmpuint(cqe.cmd_id, ==, (uint16_t)(d->next_cmd_id - 1));
        g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, i + 1);
    }

    /* Two commands with one doorbell write. */
    base = d->admq_pi;
    admq_put(d, base, RS_CMD_QUERY_DEVICE, 0x1001);
    admq_put(d, base + 1, RS_CMD_CREATE_PD, 0x1002);
    qrs_writel(d, A_RS_ADMQ_DB, base + 2);
    qrs_admin_wait(d, base, &cqe);
    RS_ASSERT_OK(cqe.status);
    g_assert_cmphex(cqe.cmd_id, ==, 0x1001);
    qrs_admin_wait(d, base + 1, &cqe);
    RS_ASSERT_OK(cqe.status);
    g_assert_cmphex(cqe.cmd_id, ==, 0x1002);
    g_assert_cmphex(cqe.handle, ==, HANDLE(0, 1));
    d->admq_pi = base + 2;
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, base + 2);

    admq_bad_doorbells(d);

    /* Largest ring, with an event queue: PORT_ACTIVE in slot 0. */
    qrs_reset(d);
    qrs_admin_configure(d, RS_MAX_ADMQ_LOG, RS_MAX_AEQ_LOG, 0, 0);
    qrs_admin_enable(d);
    g_assert_true(qrs_aeq_poll(d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, RS_EV_PORT_ACTIVE);
    g_assert_cmpuint(ev.flags & RS_EQE_PHASE, ==, 1);
    g_assert_cmpuint(ev.handle, ==, 1);
    g_assert_false(qrs_aeq_poll(d, &ev, G_USEC_PER_SEC / 10));
    RS_ASSERT_OK(qrs_query_device(d, &attr));
    g_assert_cmpuint(attr.max_qp, ==, USABLE(DEF_MAX_QPS));

    admq_at_ram_end(d);
}

static void test_msix(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    QTestState *qts = qrs_qts(d);
    uint64_t msg = qrs_alloc_zeroed(d, PAGE);
    struct rs_device_attr attr;
    int v;

    g_assert_cmpuint(qpci_msix_table_size(&d->dev), ==, DEF_NUM_MSIX);
    for (v = 0; v < DEF_NUM_MSIX; v++) {
        qrs_msix_set_vector(d, v, msg + v * 4, 0xcafe0000 + v, false);
    }

    /* The port event goes to the AEQ vector, completions to the ACQ's. */
    qrs_admin_configure(d, RS_QOS_ADMQ_LOG, RS_QOS_AEQ_LOG, 2, 3);
    qrs_admin_enable(d);
    wait_aeq_port_active(d);
    wait_msg(d, msg + 3 * 4, 0xcafe0003);
    g_assert_cmphex(qtest_readl(qts, msg + 2 * 4), ==, 0);
    RS_ASSERT_OK(qrs_query_device(d, &attr));
    wait_msg(d, msg + 2 * 4, 0xcafe0002);
    g_assert_cmphex(qtest_readl(qts, msg + 0 * 4), ==, 0);
    g_assert_cmphex(qtest_readl(qts, msg + 1 * 4), ==, 0);
    g_assert_cmphex(qtest_readl(qts, msg + 4 * 4), ==, 0);

    /* Default vector 0; a masked vector sends nothing. */
    qrs_reset(d);
    fill(d, msg, 0, PAGE);
    qrs_admin_init(d, RS_QOS_ADMQ_LOG, 0);
    RS_ASSERT_OK(qrs_query_device(d, &attr));
    wait_msg(d, msg, 0xcafe0000);
    qtest_writel(qts, msg, 0);
    qrs_msix_set_vector(d, 0, msg, 0xcafe0000, true);
    RS_ASSERT_OK(qrs_query_device(d, &attr));
    g_assert_cmphex(qtest_readl(qts, msg), ==, 0);
    g_assert_true(is_filled(d, msg + 4, 0, 4 * 4));
    qrs_reset(d);
}

static void test_query(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    struct rs_device_attr a;
    struct rs_port_attr p;

    RS_ASSERT_OK(qrs_query_device(d, &a));
    g_assert_cmphex(a.max_mr_size, ==, (uint64_t)DEF_MAX_MR_PAGES << 12);
    g_assert_cmphex(a.page_size_cap, ==, 0x7ffff000ull);
    g_assert_cmphex(a.abi_version, ==, qrs_readl(d, A_RS_VERSION));
    g_assert_cmphex(a.abi_version, ==, 0x1000b);
    g_assert_cmphex(a.caps, ==, qrs_readl(d, A_RS_CAPS));
    g_assert_cmpuint(a.max_qp, ==, USABLE(DEF_MAX_QPS));
    g_assert_cmpuint(a.max_qp_wr, ==, 1u << RS_MAX_WQ_LOG);
    g_assert_cmpuint(a.max_sge, ==, RS_MAX_SGE);
    g_assert_cmpuint(a.max_cq, ==, USABLE(DEF_MAX_CQS));
    g_assert_cmpuint(a.max_cqe, ==, 1u << RS_MAX_CQ_LOG);
    g_assert_cmpuint(a.max_mr, ==, USABLE(DEF_MAX_MRS));
    g_assert_cmpuint(a.max_pd, ==, USABLE(DEF_MAX_PDS));
    g_assert_cmpuint(a.max_ah, ==, USABLE(DEF_MAX_AHS));
    g_assert_cmpuint(a.max_qp_rd_atom, ==, RS_MAX_RD_ATOMIC);
    g_assert_cmpuint(a.max_sessions, ==, USABLE(DEF_MAX_SESSIONS));
    g_assert_cmpuint(a.max_session_groups, ==, USABLE(DEF_MAX_GROUPS));
    g_assert_cmpuint(a.max_gids, ==, DEF_MAX_GIDS);
    g_assert_cmphex(a.max_msg_size, ==, DEF_MAX_MSG_SIZE);
    g_assert_cmpuint(a.max_inline, ==, RS_MAX_INLINE);
    g_assert_cmpuint(a.num_comp_vectors, ==, DEF_COMP_VECTORS);
    g_assert_cmpuint(a.num_db_pages, ==, DEF_DB_PAGES);
    g_assert_cmpmem(a.mac, 6, qos_mac, 6);
    g_assert_cmpuint(a.max_srq, ==, USABLE(DEF_MAX_SRQS));
    g_assert_cmpuint(a.max_srq_wr, ==, 1u << RS_MAX_WQ_LOG);
    g_assert_cmpuint(a.max_srq_sge, ==, RS_MAX_SGE);
    g_assert_cmpuint(a.max_mcast_grp, ==, DEF_MAX_MCAST_GRP);
    g_assert_cmpuint(a.max_mcast_qp_attach, ==, DEF_MAX_MCAST_QP_ATTACH);
    g_assert_cmpuint(a.max_xrcds, ==, USABLE(DEF_MAX_XRCDS));
    g_assert_cmpuint(a.max_odp_pages, ==, 16384);
    g_assert_cmpuint(a.max_dc_contexts, ==, 64);
    g_assert_cmpuint(a.max_mkey_entries, ==, RS_MKEY_MAX_ENTRIES);
    g_assert_cmpuint(a.max_mkey_nest, ==, RS_MKEY_MAX_NEST);
    g_assert_cmpuint(a.dc_idle_us, ==, 1000);

    /*
     * A driver of ABI 1.4 asks for 128 bytes: it gets them and nothing
     * past them is written; less than that is refused.
     */
    RS_ASSERT_OK(qrs_query_device_len(d, &a, 128));
    g_assert_cmphex(a.abi_version, ==, 0x1000b);
    g_assert_cmpuint(a.max_odp_pages, ==, 16384);
    g_assert_cmphex(a.max_dc_contexts, ==, 0xeeeeeeee);
    g_assert_cmphex(a.rsvd1[3], ==, 0xeeeeeeee);
    RS_ASSERT_STATUS(qrs_query_device_len(d, &a, 124),
                     RS_STATUS_BAD_SIZE);

    RS_ASSERT_OK(qrs_query_port(d, 1, &p));
    g_assert_cmpuint(p.state, ==, RS_PORT_ACTIVE);
    g_assert_cmpuint(p.max_mtu, ==, RS_MTU_4096);
    g_assert_cmpuint(p.active_mtu, ==, RS_MTU_4096);
    g_assert_cmpuint(p.phys_state, ==, 5);
    g_assert_cmpuint(p.gid_tbl_len, ==, DEF_MAX_GIDS);
    g_assert_cmpuint(p.pkey_tbl_len, ==, 1);
    g_assert_cmpuint(p.active_speed_mbps, ==, 100000);

    /* A response buffer larger than the structure is fine. */
    fill(d, d->scratch, 0xa5, PAGE);
    RS_ASSERT_OK(query_at(d, RS_CMD_QUERY_DEVICE, 0, d->scratch, PAGE));
    g_assert_cmphex(qtest_readl(qrs_qts(d), d->scratch +
                                offsetof(struct rs_device_attr, max_qp)),
                    ==, USABLE(DEF_MAX_QPS));
    g_assert_true(is_filled(d, d->scratch + sizeof(a), 0xa5,
                            PAGE - sizeof(a)));
}

/* The names qom-list-properties gives for @type. */
static GHashTable *prop_names(QTestState *qts, const char *type)
{
    QDict *r = qtest_qmp(qts, "{ 'execute': 'qom-list-properties',"
                         "  'arguments': { 'typename': %s } }", type);
    GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                          NULL);
    const QListEntry *e;

    QLIST_FOREACH_ENTRY(qdict_get_qlist(r, "return"), e) {
        QDict *p = qobject_to(QDict, qlist_entry_obj(e));

        g_hash_table_add(h, g_strdup(qdict_get_str(p, "name")));
    }
    qobject_unref(r);
    return h;
}

/*
 * Every property the adapter adds to a PCI device says what it is in
 * device-list-properties (and so in "-device rdma-session,help").
 */
static void test_properties(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    g_autoptr(GHashTable) pci = prop_names(qrs_qts(d), "pci-device");
    QDict *r = qtest_qmp(qrs_qts(d), "{ 'execute': 'device-list-properties',"
                         "  'arguments': { 'typename': 'rdma-session' } }");
    const QListEntry *e;
    unsigned own = 0;

    QLIST_FOREACH_ENTRY(qdict_get_qlist(r, "return"), e) {
        QDict *p = qobject_to(QDict, qlist_entry_obj(e));
        const char *name = qdict_get_str(p, "name");
        const char *desc = qdict_get_try_str(p, "description");

        if (g_hash_table_contains(pci, name)) {
            continue;
        }
        if (!desc || !*desc) {
            g_test_message("property %s has no description", name);
        }
        g_assert_true(desc && *desc);
        own++;
    }
    /* mac, netdev and the adapter's 52 (x-fabric-window the last) */
    g_assert_cmpuint(own, ==, 54);
    qobject_unref(r);
}

static void test_link(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    struct rs_port_attr p;
    struct rs_event ev;

    /* Link down: STATUS.LINK_UP follows, no PORT_ACTIVE on enable. */
    set_link(d, false);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, 0);
    qrs_admin_init(d, RS_QOS_ADMQ_LOG, RS_QOS_AEQ_LOG);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, R_RS_STATUS_READY_MASK);
    g_assert_false(qrs_aeq_poll(d, &ev, G_USEC_PER_SEC / 5));
    RS_ASSERT_OK(qrs_query_port(d, 1, &p));
    g_assert_cmpuint(p.state, ==, RS_PORT_DOWN);
    g_assert_cmpuint(p.phys_state, ==, 3);
    g_assert_cmpuint(p.max_mtu, ==, RS_MTU_4096);

    /* Link up while enabled: the port is active. */
    set_link(d, true);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);
    RS_ASSERT_OK(qrs_query_port(d, 1, &p));
    g_assert_cmpuint(p.state, ==, RS_PORT_ACTIVE);
    g_assert_cmpuint(p.phys_state, ==, 5);

    /* A reset keeps the link state; enabling with the link up posts. */
    set_link(d, false);
    qrs_reset(d);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, 0);
    set_link(d, true);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, R_RS_STATUS_LINK_UP_MASK);
    admin_setup(d);
    RS_ASSERT_OK(qrs_query_port(d, 1, &p));
    g_assert_cmpuint(p.state, ==, RS_PORT_ACTIVE);
    assert_alive(d);
    /* Do not hand a QEMU with a toggled link to the next test. */
    qos_invalidate_command_line();
}

static void test_doorbells(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    struct rs_cmd_create_qp c;
    struct rs_event ev;
    uint64_t ring = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << 4);
    uint32_t pd, cq, qp, qi, ci, ci_before;
    static const uint32_t offs[] = {
        RS_DB_SQ, RS_DB_RQ, RS_DB_CQ_CI, RS_DB_CQ_ARM, RS_DB_SRQ,
    };
    static const uint32_t pages[] = { 0, 1, 2, DEF_DB_PAGES - 1 };
    int i, j;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    RS_ASSERT_OK(qrs_create_cq(d, ring, 4, 0, 1, &cq));
    qp_template(d, &c, RS_QPT_RC, pd, cq, cq);
    c.uar = 1;
    qp = new_qp(d, &c);
    qp_walk(d, qp, RS_QPT_RC, RS_QPS_RTR);
    qi = HINDEX(qp);
    ci = HINDEX(cq);

    /*
     * Doorbells only record indices: in RTR the requester does not run
     * and no packet arrives, so nothing is written to guest memory.
     */
    fill(d, ring, 0x5a, sizeof(struct rs_cqe) << 4);
    fill(d, c.sq_addr, 0x5a, qrs_qp_sq_bytes(&c));
    fill(d, c.rq_addr, 0x5a, qrs_qp_rq_bytes(&c));
    ci_before = qrs_readl(d, A_RS_ADMQ_CI);

    for (i = 0; i < ARRAY_SIZE(pages); i++) {
        for (j = 0; j < ARRAY_SIZE(offs); j++) {
            bool cqdb = offs[j] == RS_DB_CQ_CI || offs[j] == RS_DB_CQ_ARM;
            uint32_t idx = cqdb ? ci : qi;

            /* the object's own page and index, then wrong indices */
            qrs_db_writel(d, pages[i], offs[j], idx | 1 << 16);
            qrs_db_writel(d, pages[i], offs[j], idx | RS_DB_CQ_ARM_NEXT |
                          RS_DB_CQ_ARM_SOLICITED);
            qrs_db_writel(d, pages[i], offs[j], RS_DB_INDEX_MASK | 5 << 16);
            qrs_db_writel(d, pages[i], offs[j], 0);
            qrs_db_writel(d, pages[i], offs[j], 0xffffffff);
        }
        qrs_db_writel(d, pages[i], 0xffc, 0xffffffff);
    }

    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, ci_before);
    g_assert_true(is_filled(d, ring, 0x5a, sizeof(struct rs_cqe) << 4));
    g_assert_true(is_filled(d, c.sq_addr, 0x5a, qrs_qp_sq_bytes(&c)));
    g_assert_true(is_filled(d, c.rq_addr, 0x5a, qrs_qp_rq_bytes(&c)));
    g_assert_false(qrs_aeq_poll(d, &ev, G_USEC_PER_SEC / 10));
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_RTR);
    assert_alive(d);

    /* Doorbells of a disabled device are ignored too. */
    qrs_reset(d);
    qrs_db_writel(d, 1, RS_DB_SQ, qi | 1 << 16);
    qrs_db_writel(d, 1, RS_DB_CQ_ARM, ci | RS_DB_CQ_ARM_NEXT);
    assert_power_on_regs(d, DEF_DB_PAGES, DEF_NUM_MSIX);
}

static void register_regs_tests(void)
{
    qos_add_test("regs/probe", "rdma-session", test_probe, NULL);
    qos_add_test("regs/registers", "rdma-session", test_registers, NULL);
    qos_add_test("regs/admin-queue", "rdma-session", test_admin_queue, NULL);
    qos_add_test("regs/msix", "rdma-session", test_msix, NULL);
    qos_add_test("regs/query", "rdma-session", test_query, NULL);
    qos_add_test("regs/properties", "rdma-session", test_properties, NULL);
    qos_add_test("regs/link", "rdma-session", test_link, NULL);
    qos_add_test("regs/doorbells", "rdma-session", test_doorbells, NULL);
}

libqos_init(register_regs_tests);
