/*
 * rdma-session qtests: small tables and NO_RESOURCES, reset, FLR, DMA
 * containment, invalid properties
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"

static uint64_t msix_table_addr(QRdmaSession *d)
{
    g_assert_true(d->dev.msix_enabled);
    return d->dev.msix_table_bar.addr + d->dev.msix_table_off;
}

typedef struct ResetObjects {
    uint32_t pd, cq, qp, lkey, ah, session, group;
} ResetObjects;

static void reset_make_objects(QRdmaSession *d, ResetObjects *o)
{
    struct rs_cmd_create_qp c;
    struct rs_cmd_reg_mr mr = { 0 };
    struct rs_cmd_create_ah ah;
    uint64_t page = qrs_alloc_zeroed(d, PAGE);

    add_gid_v4(d, 0, 1);
    o->pd = new_pd(d);
    g_assert_cmphex(o->pd, ==, HANDLE(0, 1));
    o->cq = new_cq(d, 4);
    g_assert_cmphex(o->cq, ==, HANDLE(0, 1));
    o->session = new_session(d, 0, 49152);
    g_assert_cmphex(o->session, ==, HANDLE(0, 1));
    o->group = new_group(d, RS_GROUP_ROUND_ROBIN, o->session, 0);
    g_assert_cmphex(o->group, ==, HANDLE(0, 1));
    qp_template(d, &c, RS_QPT_RC, o->pd, o->cq, o->cq);
    c.session_group = o->group;
    o->qp = new_qp(d, &c);
    g_assert_cmphex(o->qp, ==, HANDLE(0, 2));
    qp_walk(d, o->qp, RS_QPT_RC, RS_QPS_RTS);
    mr.length = PAGE;
    mr.npages = 1;
    mr.pbl_addr = make_pbl(d, page, PAGE, 1);
    mr.pd = o->pd;
    mr.page_shift = 12;
    mr.access = STD_ACCESS;
    o->lkey = reg_mr_ok(d, &mr);
    g_assert_cmphex(o->lkey >> RS_MKEY_INDEX_SHIFT, ==, 1);
    ah_template(&ah, o->pd, 0);
    RS_ASSERT_OK(qrs_create_ah(d, &ah, &o->ah));
    g_assert_cmphex(o->ah, ==, HANDLE(0, 1));
}

static void reset_check_gone(QRdmaSession *d, ResetObjects *o)
{
    struct rs_qp_attr a;

    RS_ASSERT_STATUS(qrs_query_qp(d, o->qp, &a), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_QP, o->qp),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEREG_MR, o->lkey),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_AH, o->ah),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, o->group),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION, o->session),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_CQ, o->cq),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, o->pd),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 0), RS_STATUS_BAD_HANDLE);

    /* Tables are back at power-on: first index, generation 0. */
    g_assert_cmphex(new_pd(d), ==, HANDLE(0, 1));
    add_gid_v4(d, 0, 1);
}

static void test_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    QTestState *qts = qrs_qts(d);
    ResetObjects o;
    int how;

    for (how = 0; how < 3; how++) {
        reset_make_objects(d, &o);
        switch (how) {
        case 0:
            qrs_writel(d, A_RS_CTRL, R_RS_CTRL_RESET_MASK);
            break;
        case 1:
            qrs_writel(d, A_RS_CTRL, 0);
            break;
        case 2:
            /* System reset: config space is reset, map the BARs again. */
            qtest_system_reset(qts);
            d->bar0 = qpci_iomap(&d->dev, RS_BAR_REGS, NULL);
            d->bar2 = qpci_iomap(&d->dev, RS_BAR_DOORBELL, NULL);
            qpci_device_enable(&d->dev);
            qpci_msix_enable(&d->dev);
            break;
        }
        assert_power_on_regs(d, DEF_DB_PAGES, DEF_NUM_MSIX);
        admin_setup(d);
        reset_check_gone(d, &o);
        qrs_reset(d);
        assert_power_on_regs(d, DEF_DB_PAGES, DEF_NUM_MSIX);
        admin_setup(d);
    }
    assert_alive(d);
}

/*
 * Function level reset through the PCIe capability's device control, as
 * the guest's PCI core issues it: the function is back at power-on
 * (registers, admin queue, objects, LAN rings; in config space the
 * command register, the BARs and MSI-X are cleared) and works again once
 * it is set up again.
 */
static void test_flr(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    QPCIDevice *dev = &d->dev;
    uint8_t exp = qpci_find_capability(dev, PCI_CAP_ID_EXP, 0);
    uint8_t msix = qpci_find_capability(dev, PCI_CAP_ID_MSIX, 0);
    size_t ring = sizeof(struct rs_lan_desc) << 4;
    uint64_t lan = qrs_alloc_zeroed(d, 2 * ring);
    ResetObjects o;
    uint16_t ctl;

    g_assert_cmphex(exp, !=, 0);
    g_assert_cmphex(qpci_config_readl(dev, exp + PCI_EXP_DEVCAP) &
                    PCI_EXP_DEVCAP_FLR, ==, PCI_EXP_DEVCAP_FLR);

    reset_make_objects(d, &o);
    RS_ASSERT_OK(qrs_create_lan_queue(d, RS_LAN_TXQ, lan, 4, 0, NULL));
    RS_ASSERT_OK(qrs_create_lan_queue(d, RS_LAN_RXQ, lan + ring, 4, 0, NULL));

    ctl = qpci_config_readw(dev, exp + PCI_EXP_DEVCTL);
    qpci_config_writew(dev, exp + PCI_EXP_DEVCTL,
                       ctl | PCI_EXP_DEVCTL_BCR_FLR);
    /* The initiate bit always reads 0. */
    g_assert_cmphex(qpci_config_readw(dev, exp + PCI_EXP_DEVCTL), ==, ctl);
    g_assert_cmphex(qpci_config_readw(dev, PCI_COMMAND) &
                    (PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER), ==, 0);
    g_assert_cmphex(qpci_config_readl(dev, PCI_BASE_ADDRESS_0) &
                    PCI_BASE_ADDRESS_MEM_MASK, ==, 0);
    g_assert_cmphex(qpci_config_readw(dev, msix + PCI_MSIX_FLAGS) &
                    PCI_MSIX_FLAGS_ENABLE, ==, 0);

    /* Set up again as a driver does after the reset. */
    d->bar0 = qpci_iomap(dev, RS_BAR_REGS, NULL);
    d->bar2 = qpci_iomap(dev, RS_BAR_DOORBELL, NULL);
    qpci_device_enable(dev);
    qpci_msix_enable(dev);
    assert_power_on_regs(d, DEF_DB_PAGES, DEF_NUM_MSIX);
    admin_setup(d);
    reset_check_gone(d, &o);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_RXQ),
                     RS_STATUS_BAD_HANDLE);

    /* The same objects can be made again. */
    qrs_reset(d);
    admin_setup(d);
    reset_make_objects(d, &o);
    RS_ASSERT_OK(qrs_create_lan_queue(d, RS_LAN_TXQ, lan, 4, 0, NULL));
    RS_ASSERT_OK(qrs_create_lan_queue(d, RS_LAN_RXQ, lan + ring, 4, 0, NULL));
    assert_alive(d);
}

/*
 * Responses aimed at the device's own registers, its MSI-X table, the
 * doorbell BAR or nowhere: refused, and nothing of the device changes.
 */
static void dma_into_device(QRdmaSession *d, uint32_t qp)
{
    QTestState *qts = qrs_qts(d);
    uint64_t msix = msix_table_addr(d);
    uint8_t msix_before[DEF_NUM_MSIX * PCI_MSIX_ENTRY_SIZE];
    uint8_t msix_after[sizeof(msix_before)];
    uint32_t before[NREGS], after[NREGS];

    /* The device's own registers are not memory. */
    dump_regs(d, before);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, d->bar0.addr,
                              sizeof(struct rs_device_attr)),
                     RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0,
                              d->bar0.addr + A_RS_CTRL,
                              sizeof(struct rs_device_attr)),
                     RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_PORT, 1,
                              d->bar0.addr + A_RS_ADMQ_BASE_LO,
                              sizeof(struct rs_port_attr)),
                     RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_QP, qp,
                              d->bar0.addr + A_RS_ADMQ_DB,
                              sizeof(struct rs_qp_attr)),
                     RS_STATUS_BAD_ADDR);
    dump_regs(d, after);
    /* ADMQ_CI moved by the four commands, nothing else. */
    g_assert_cmpuint(after[A_RS_ADMQ_CI / 4], ==,
                     before[A_RS_ADMQ_CI / 4] + 4);
    after[A_RS_ADMQ_CI / 4] = before[A_RS_ADMQ_CI / 4];
    assert_regs_equal(before, after);

    /* Nor are the MSI-X table and the doorbell BAR. */
    qtest_memread(qts, msix, msix_before, sizeof(msix_before));
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, msix,
                              sizeof(struct rs_device_attr)),
                     RS_STATUS_BAD_ADDR);
    qtest_memread(qts, msix, msix_after, sizeof(msix_after));
    g_assert_cmpmem(msix_before, sizeof(msix_before), msix_after,
                    sizeof(msix_after));
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, d->bar2.addr,
                              sizeof(struct rs_device_attr)),
                     RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, FAR_ADDR,
                              sizeof(struct rs_device_attr)),
                     RS_STATUS_BAD_ADDR);
}

static void dma_bus_master_off(QRdmaSession *d, uint64_t buf, uint32_t qp)
{
    QTestState *qts = qrs_qts(d);
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe, acq_before, acq_after;
    struct rs_qp_attr a;
    uint32_t index, ci;
    uint16_t pci_cmd;

    /*
     * Bus mastering off: the device cannot read the command, so it
     * writes neither a response nor a completion.
     */
    fill(d, buf, 0xa5, PAGE);
    ci = qrs_readl(d, A_RS_ADMQ_CI);
    g_assert_cmpuint(ci, ==, d->admq_pi);
    qtest_memread(qts, d->acq + (ci & ((1u << d->admq_log) - 1)) *
                  sizeof(cqe), &acq_before, sizeof(acq_before));
    pci_cmd = qpci_config_readw(&d->dev, PCI_COMMAND);
    qpci_config_writew(&d->dev, PCI_COMMAND, pci_cmd & ~PCI_COMMAND_MASTER);
    cmd_init(&cmd, RS_CMD_QUERY_DEVICE);
    cmd.query.resp_addr = buf;
    cmd.query.resp_len = sizeof(struct rs_device_attr);
    index = qrs_admin_submit(d, &cmd);
    g_assert_false(qrs_admin_poll(d, index, &cqe, G_USEC_PER_SEC / 2));
    qtest_memread(qts, d->acq + (ci & ((1u << d->admq_log) - 1)) *
                  sizeof(cqe), &acq_after, sizeof(acq_after));
    g_assert_cmpmem(&acq_before, sizeof(acq_before), &acq_after,
                    sizeof(acq_after));
    g_assert_true(is_filled(d, buf, 0xa5, PAGE));
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, ci);
    /* Failing to read a command is a DMA fatal error. */
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS) & R_RS_STATUS_FATAL_MASK, ==,
                    R_RS_STATUS_FATAL_MASK);
    g_assert_cmpuint(qrs_readl(d, A_RS_FATAL_CODE), ==, RS_FATAL_DMA);

    /* Bus mastering back on: the fatal state stays until a reset. */
    qpci_config_writew(&d->dev, PCI_COMMAND, pci_cmd);
    g_assert_cmpuint(qrs_readl(d, A_RS_FATAL_CODE), ==, RS_FATAL_DMA);
    g_assert_true(is_filled(d, buf, 0xa5, PAGE));
    qrs_reset(d);
    assert_power_on_regs(d, DEF_DB_PAGES, DEF_NUM_MSIX);
    admin_setup(d);
    RS_ASSERT_STATUS(qrs_query_qp(d, qp, &a), RS_STATUS_BAD_HANDLE);
    assert_alive(d);
}

static void test_dma_containment(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    QTestState *qts = qrs_qts(d);
    uint64_t end = ram_end(d);
    uint64_t buf = qrs_alloc_zeroed(d, PAGE);
    uint64_t msix = msix_table_addr(d);
    uint32_t after[NREGS];
    struct rs_cmd_create_qp c;
    struct rs_cmd_reg_mr mr = { 0 };
    struct rs_admin_cmd cmd;
    uint32_t pd, cq, qp;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    cq = new_cq(d, 4);
    qp_template(d, &c, RS_QPT_RC, pd, cq, cq);
    qp = new_qp(d, &c);
    qp_walk(d, qp, RS_QPT_RC, RS_QPS_INIT);

    /* A good response lands exactly where it was asked to. */
    fill(d, buf, 0xa5, PAGE);
    RS_ASSERT_OK(query_at(d, RS_CMD_QUERY_DEVICE, 0, buf + 64, 256));
    g_assert_true(is_filled(d, buf, 0xa5, 64));
    g_assert_true(is_filled(d, buf + 64 + sizeof(struct rs_device_attr),
                            0xa5, PAGE - 64 - sizeof(struct rs_device_attr)));
    g_assert_cmphex(qtest_readl(qts, buf + 64 +
                                offsetof(struct rs_device_attr, max_qp)),
                    ==, USABLE(DEF_MAX_QPS));

    /* Refused responses write nothing. */
    fill(d, buf, 0xa5, PAGE);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, buf + 64, 64),
                     RS_STATUS_BAD_SIZE);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, buf + 68, 128),
                     RS_STATUS_BAD_ALIGN);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_PORT, 2, buf + 64, 64),
                     RS_STATUS_BAD_PARAM);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_QP, qp + (1 << 24), buf + 64,
                              sizeof(struct rs_qp_attr)),
                     RS_STATUS_BAD_HANDLE);
    g_assert_true(is_filled(d, buf, 0xa5, PAGE));

    /* Straddling the end of RAM: not even the part in RAM is written. */
    fill(d, end - 64, 0x5a, 64);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, end - 64,
                              sizeof(struct rs_device_attr)),
                     RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_QP, qp, end - 64,
                              sizeof(struct rs_qp_attr)),
                     RS_STATUS_BAD_ADDR);
    g_assert_true(is_filled(d, end - 64, 0x5a, 64));

    dma_into_device(d, qp);

    /* Reads: MODIFY_QP attributes from BAR0, MR pages in BAR0. */
    cmd_init(&cmd, RS_CMD_MODIFY_QP);
    cmd.modify_qp.attr_addr = d->bar0.addr;
    cmd.modify_qp.handle = qp;
    cmd.modify_qp.attr_mask = RS_QP_ATTR_STATE;
    RS_ASSERT_STATUS(qrs_admin_exec(d, &cmd, NULL), RS_STATUS_BAD_ADDR);
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_INIT);
    mr.length = 2 * PAGE;
    mr.npages = 2;
    mr.pbl_addr = make_pbl(d, d->bar0.addr, 0, 2);
    mr.pd = pd;
    mr.page_shift = 12;
    mr.access = STD_ACCESS;
    RS_ASSERT_STATUS(qrs_reg_mr(d, &mr, NULL, NULL), RS_STATUS_BAD_ADDR);
    mr.pbl_addr = make_pbl(d, d->bar2.addr, PAGE, 2);
    RS_ASSERT_STATUS(qrs_reg_mr(d, &mr, NULL, NULL), RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(qrs_create_cq(d, msix & ~63ull, 1, 0, 0, NULL),
                     RS_STATUS_BAD_ADDR);
    dump_regs(d, after);
    g_assert_cmphex(after[A_RS_CTRL / 4], ==, R_RS_CTRL_ENABLE_MASK);
    g_assert_cmphex(after[A_RS_STATUS / 4], ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);
    assert_alive(d);

    dma_bus_master_off(d, buf, qp);
}

/*
 * Object tables have max-* slots; slot 0 is never used, and for QPs
 * slot 1 belongs to the GSI QP.
 */
#define LIM_QPS         4
#define LIM_CQS         3
#define LIM_MRS         3
#define LIM_PDS         3
#define LIM_AHS         2
#define LIM_SESSIONS    3
#define LIM_GROUPS      2
#define LIM_GIDS        2
#define LIM_MSG_SIZE    65536
#define LIM_VECTORS     2
#define LIM_DB_PAGES    4
#define LIM_MR_PAGES    8

static void *limits_before(GString *cmd_line, void *arg)
{
    g_string_append_printf(cmd_line,
        " -global rdma-session.max-qps=%d"
        " -global rdma-session.max-cqs=%d"
        " -global rdma-session.max-mrs=%d"
        " -global rdma-session.max-pds=%d"
        " -global rdma-session.max-ahs=%d"
        " -global rdma-session.max-sessions=%d"
        " -global rdma-session.max-session-groups=%d"
        " -global rdma-session.max-gids=%d"
        " -global rdma-session.max-msg-size=%d"
        " -global rdma-session.mtu=1024"
        " -global rdma-session.num-comp-vectors=%d"
        " -global rdma-session.db-pages=%d"
        " -global rdma-session.max-mr-pages=%d ",
        LIM_QPS, LIM_CQS, LIM_MRS, LIM_PDS, LIM_AHS, LIM_SESSIONS,
        LIM_GROUPS, LIM_GIDS, LIM_MSG_SIZE, LIM_VECTORS, LIM_DB_PAGES,
        LIM_MR_PAGES);
    return arg;
}

static uint8_t reg_pages(QRdmaSession *d, uint32_t pd, uint64_t pages,
                         uint32_t npages, uint32_t *lkey)
{
    struct rs_cmd_reg_mr c = { 0 };

    c.length = (uint64_t)npages * PAGE;
    c.npages = npages;
    c.pbl_addr = make_pbl(d, pages, PAGE, npages);
    c.pd = pd;
    c.page_shift = 12;
    c.access = RS_ACCESS_LOCAL_WRITE;
    return qrs_reg_mr(d, &c, lkey, NULL);
}

/* Registers and QUERY_DEVICE/QUERY_PORT follow the properties. */
static void limits_identity(QRdmaSession *d)
{
    struct rs_device_attr a;
    struct rs_port_attr p;

    g_assert_cmpuint(qrs_readl(d, A_RS_DB_PAGES), ==, LIM_DB_PAGES);
    g_assert_cmpuint(qrs_readl(d, A_RS_NUM_MSIX), ==, 1 + LIM_VECTORS);
    g_assert_cmpuint(qpci_msix_table_size(&d->dev), ==, 1 + LIM_VECTORS);
    g_assert_cmphex(d->bar2_size, ==, LIM_DB_PAGES * RS_DB_PAGE_SIZE);

    admin_setup(d);
    RS_ASSERT_OK(qrs_query_device(d, &a));
    g_assert_cmpuint(a.max_qp, ==, USABLE(LIM_QPS));
    g_assert_cmpuint(a.max_cq, ==, USABLE(LIM_CQS));
    g_assert_cmpuint(a.max_mr, ==, USABLE(LIM_MRS));
    g_assert_cmpuint(a.max_pd, ==, USABLE(LIM_PDS));
    g_assert_cmpuint(a.max_ah, ==, USABLE(LIM_AHS));
    g_assert_cmpuint(a.max_sessions, ==, USABLE(LIM_SESSIONS));
    g_assert_cmpuint(a.max_session_groups, ==, USABLE(LIM_GROUPS));
    g_assert_cmpuint(a.max_gids, ==, LIM_GIDS);
    g_assert_cmpuint(a.max_msg_size, ==, LIM_MSG_SIZE);
    g_assert_cmpuint(a.num_comp_vectors, ==, LIM_VECTORS);
    g_assert_cmpuint(a.num_db_pages, ==, LIM_DB_PAGES);
    g_assert_cmphex(a.max_mr_size, ==, (uint64_t)LIM_MR_PAGES << 12);
    RS_ASSERT_OK(qrs_query_port(d, 1, &p));
    g_assert_cmpuint(p.max_mtu, ==, RS_MTU_1024);
    g_assert_cmpuint(p.active_mtu, ==, RS_MTU_1024);
    g_assert_cmpuint(p.gid_tbl_len, ==, LIM_GIDS);
}

/* MR translation entries (max-mr-pages), then MR slots. */
static void limits_mr(QRdmaSession *d, uint32_t pd, uint64_t pages)
{
    uint32_t k1, k2, k3, k4;

    RS_ASSERT_OK(reg_pages(d, pd, pages, 5, &k1));
    RS_ASSERT_STATUS(reg_pages(d, pd, pages, 4, NULL),
                     RS_STATUS_NO_RESOURCES);
    RS_ASSERT_OK(reg_pages(d, pd, pages, 3, &k2));
    RS_ASSERT_STATUS(reg_pages(d, pd, pages, 1, NULL),
                     RS_STATUS_NO_RESOURCES);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k1));
    RS_ASSERT_OK(reg_pages(d, pd, pages, 1, &k3));
    g_assert_cmphex(k3 >> RS_MKEY_INDEX_SHIFT, ==, 1);
    /* 4 entries free, but both MR slots are taken. */
    RS_ASSERT_STATUS(reg_pages(d, pd, pages, 1, NULL),
                     RS_STATUS_NO_RESOURCES);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k2));
    RS_ASSERT_OK(reg_pages(d, pd, pages, LIM_MR_PAGES - 1, &k4));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k4));
    RS_ASSERT_STATUS(reg_pages(d, pd, pages, LIM_MR_PAGES + 1, NULL),
                     RS_STATUS_NO_RESOURCES);
    RS_ASSERT_OK(reg_pages(d, pd, pages, LIM_MR_PAGES, &k1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k1));
}

/*
 * QPs (slot 1 stays for the GSI QP), their doorbell page, and a path
 * MTU limited by the mtu property.
 */
static void limits_qp(QRdmaSession *d, uint32_t pd, uint32_t cq)
{
    struct rs_cmd_create_qp c;
    struct rs_qp_attr attr;
    uint32_t h[8], qp;
    int i;

    qp_template(d, &c, RS_QPT_RC, pd, cq, cq);
    for (i = 2; i < LIM_QPS; i++) {
        h[i] = new_qp(d, &c);
        g_assert_cmphex(h[i], ==, HANDLE(0, i));
    }
    RS_ASSERT_STATUS(qrs_create_qp(d, &c, NULL, NULL), RS_STATUS_NO_RESOURCES);
    c.qp_type = RS_QPT_GSI;
    g_assert_cmphex(new_qp(d, &c), ==, HANDLE(0, RS_GSI_QPN));
    RS_ASSERT_STATUS(qrs_create_qp(d, &c, NULL, NULL), RS_STATUS_EXISTS);
    c.qp_type = RS_QPT_UD;
    c.uar = LIM_DB_PAGES;
    RS_ASSERT_STATUS(qrs_create_qp(d, &c, NULL, NULL), RS_STATUS_BAD_PARAM);

    /* The path MTU is limited by the device's mtu property. */
    qp = h[2];
    qp_walk(d, qp, RS_QPT_RC, RS_QPS_INIT);
    std_attr(&attr, RS_QPS_INIT, RS_QPS_RTR);
    attr.path_mtu = RS_MTU_2048;
    RS_ASSERT_STATUS(qrs_modify_qp(d, qp, &attr, RC_RTR_MASK),
                     RS_STATUS_BAD_PARAM);
    attr.path_mtu = RS_MTU_4096;
    RS_ASSERT_STATUS(qrs_modify_qp(d, qp, &attr, RC_RTR_MASK),
                     RS_STATUS_BAD_PARAM);
    attr.path_mtu = RS_MTU_1024;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &attr, RC_RTR_MASK));
}

static void test_limits(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    uint64_t pages = qrs_alloc_zeroed(d, LIM_MR_PAGES * PAGE);
    uint64_t ring = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << 4);
    struct rs_device_attr a;
    struct rs_cmd_create_ah ah;
    struct rs_cmd_create_session sc;
    struct rs_cmd_create_session_group gc = { 0 };
    struct rs_cmd_add_gid g = { 0 };
    uint32_t h[8], pd, cq, s1;
    int i;

    limits_identity(d);

    /* GIDs: the index is the slot, beyond max-gids is a bad parameter. */
    add_gid_v4(d, 0, 1);
    add_gid_v4(d, LIM_GIDS - 1, 2);
    gid_v4(g.gid, 10, 0, 9, 9);
    g.index = LIM_GIDS;
    RS_ASSERT_STATUS(qrs_add_gid(d, &g, NULL), RS_STATUS_BAD_PARAM);

    /* PDs */
    for (i = 1; i < LIM_PDS; i++) {
        h[i] = new_pd(d);
        g_assert_cmphex(h[i], ==, HANDLE(0, i));
    }
    RS_ASSERT_STATUS(qrs_create_pd(d, NULL), RS_STATUS_NO_RESOURCES);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, h[1]));
    g_assert_cmphex(new_pd(d), ==, HANDLE(1, 1));
    RS_ASSERT_STATUS(qrs_create_pd(d, NULL), RS_STATUS_NO_RESOURCES);
    pd = h[2];

    /* CQs, comp vectors and doorbell pages */
    RS_ASSERT_STATUS(qrs_create_cq(d, ring, 4, LIM_VECTORS, 0, NULL),
                     RS_STATUS_BAD_PARAM);
    RS_ASSERT_STATUS(qrs_create_cq(d, ring, 4, 0, LIM_DB_PAGES, NULL),
                     RS_STATUS_BAD_PARAM);
    for (i = 1; i < LIM_CQS; i++) {
        RS_ASSERT_OK(qrs_create_cq(d, ring, 4, LIM_VECTORS - 1,
                                   LIM_DB_PAGES - 1, &h[i]));
        g_assert_cmphex(h[i], ==, HANDLE(0, i));
    }
    RS_ASSERT_STATUS(qrs_create_cq(d, ring, 4, 0, 0, NULL),
                     RS_STATUS_NO_RESOURCES);
    cq = h[1];

    limits_qp(d, pd, cq);
    limits_mr(d, pd, pages);

    /* AHs */
    ah_template(&ah, pd, 0);
    for (i = 1; i < LIM_AHS; i++) {
        RS_ASSERT_OK(qrs_create_ah(d, &ah, &h[i]));
        g_assert_cmphex(h[i], ==, HANDLE(0, i));
    }
    RS_ASSERT_STATUS(qrs_create_ah(d, &ah, NULL), RS_STATUS_NO_RESOURCES);

    /* Sessions and groups */
    for (i = 1; i < LIM_SESSIONS; i++) {
        h[i] = new_session(d, 0, 2000 + i);
        g_assert_cmphex(h[i], ==, HANDLE(0, i));
    }
    s1 = h[1];
    session_template(&sc, 0, 3000);
    RS_ASSERT_STATUS(qrs_create_session(d, &sc, NULL),
                     RS_STATUS_NO_RESOURCES);
    for (i = 1; i < LIM_GROUPS; i++) {
        h[i] = new_group(d, RS_GROUP_ACTIVE_BACKUP, s1, 0);
        g_assert_cmphex(h[i], ==, HANDLE(0, i));
    }
    gc.session[0] = s1;
    gc.nsessions = 1;
    RS_ASSERT_STATUS(qrs_create_session_group(d, &gc, NULL),
                     RS_STATUS_NO_RESOURCES);

    /* Full tables are not an error state. */
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);
    RS_ASSERT_OK(qrs_query_device(d, &a));
    g_assert_cmpuint(a.max_qp, ==, USABLE(LIM_QPS));
}

/*
 * Start QEMU with one property value and return its exit status.  The
 * monitor reads "quit" from stdin, so a QEMU that starts does exit.
 */
static int run_qemu_with(const char *prop, char **err_out)
{
    const char *qemu = getenv("QTEST_QEMU_BINARY");
    g_autofree char *dev = g_strdup_printf("rdma-session,netdev=n0%s%s",
                                           *prop ? "," : "", prop);
    const char *argv[] = {
        qemu, "-M", "pc,accel=qtest", "-display", "none", "-nodefaults",
        "-S", "-monitor", "stdio", "-netdev", "user,id=n0",
        "-device", dev, NULL,
    };
    g_autoptr(GError) err = NULL;
    int in_fd, out_fd, err_fd, status;
    GPid pid;
    GString *errs = g_string_new("");
    struct sigaction ign = { .sa_handler = SIG_IGN }, old_pipe;
    char chunk[256];
    ssize_t n;

    g_assert_nonnull(qemu);
    g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                           G_SPAWN_DO_NOT_REAP_CHILD,
                                           NULL, NULL, &pid, &in_fd,
                                           &out_fd, &err_fd, &err));
    /*
     * A QEMU that refuses the property may have exited already: the write
     * then fails with EPIPE, which must not kill the test with SIGPIPE.
     */
    sigaction(SIGPIPE, &ign, &old_pipe);
    n = write(in_fd, "quit\n", 5);
    g_assert_true(n == 5 || (n < 0 && errno == EPIPE));
    sigaction(SIGPIPE, &old_pipe, NULL);
    close(in_fd);
    while ((n = read(err_fd, chunk, sizeof(chunk))) > 0) {
        g_string_append_len(errs, chunk, n);
    }
    close(err_fd);
    while (read(out_fd, chunk, sizeof(chunk)) > 0) {
        /* drain the monitor output */
    }
    close(out_fd);
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_spawn_close_pid(pid);
    *err_out = g_string_free(errs, false);
    g_assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_bad_properties(void)
{
    static const struct {
        const char *props;
        bool valid;
    } rows[] = {
        { "", true },
        /* the documented lower bounds */
        { "max-qps=2", true },
        { "max-cqs=2", true },
        { "max-mrs=2", true },
        { "max-gids=1,mtu=256,num-comp-vectors=1,db-pages=1", true },
        { "max-pds=2,max-ahs=2,max-sessions=2,max-session-groups=2", true },
        /* the documented upper bounds */
        { "max-qps=65536,max-cqs=65536,max-gids=256,mtu=4096,"
          "num-comp-vectors=64,db-pages=1024", true },
        { "max-mrs=1048576", true },
        { "max-srqs=2", true },
        { "max-srqs=65536", true },
        { "mtu=512", true },
        { "mtu=2048", true },
        /* out of range */
        { "max-qps=1", false },
        { "max-qps=65537", false },
        { "max-cqs=0", false },
        { "max-cqs=1", false },
        { "max-mrs=1", false },
        { "max-pds=1", false },
        { "max-mr-pages=0", false },
        { "max-msg-size=0", false },
        { "max-cqs=65537", false },
        { "max-mrs=0", false },
        { "max-mrs=1048577", false },
        { "max-srqs=1", false },
        { "max-srqs=65537", false },
        { "max-gids=0", false },
        { "max-gids=257", false },
        { "mtu=0", false },
        { "mtu=300", false },
        { "mtu=8192", false },
        { "num-comp-vectors=0", false },
        { "num-comp-vectors=65", false },
        { "db-pages=0", false },
        { "db-pages=3", false },
        { "db-pages=2048", false },
        { "x-window=0", false },
        { "x-window=4097", false },
        { "x-ack-backoff=7", false },
        /* network identities: the host's subnets and VNIs */
        { "vni=16777215", true },
        { "vni=7,netids=10.0.1.0/24=5;fd00::/64=6", true },
        { "netids=10.0.1.0/24=5,,10.0.2.0/24=0x10", true },
        { "vni=16777216", false },
        { "netids=10.0.1.1/24=5", false },
        { "netids=10.0.1.0/24", false },
        { "netids=10.0.1.0/24=5;10.0.1.128/25=6", false },
        { "vni=5,netids=10.0.1.0/24=5", false },
        { "netids=fd00::/129=5", false },
        /* the experimental properties' bounds */
        { "x-window=1,x-ack-backoff=0", true },
        { "x-window=4096,x-ack-backoff=6", true },
    };
    g_autoptr(GString) failures = g_string_new("");
    int i;

    for (i = 0; i < ARRAY_SIZE(rows); i++) {
        g_autofree char *err = NULL;
        int rc = run_qemu_with(rows[i].props, &err);

        if (rows[i].valid && rc != 0) {
            g_string_append_printf(failures, "  '%s' refused (exit %d): %s",
                                   rows[i].props, rc, err);
        } else if (!rows[i].valid && (rc != 1 ||
                                      !strstr(err, "rdma-session"))) {
            g_string_append_printf(failures,
                                   "  '%s' accepted or no realize error "
                                   "(exit %d): %s\n", rows[i].props, rc, err);
        }
    }
    g_assert_cmpstr(failures->str, ==, "");
}

static void register_limits_tests(void)
{
    QOSGraphTestOptions limits = { .before = limits_before };

    qos_add_test("limits/reset", "rdma-session", test_reset, NULL);
    qos_add_test("limits/dma-containment", "rdma-session",
                 test_dma_containment, NULL);
    qos_add_test("limits/tables", "rdma-session", test_limits, &limits);
    qos_add_test("limits/flr", "rdma-session", test_flr, NULL);
    qtest_add_func("rdma-session/limits/bad-properties", test_bad_properties);
}

libqos_init(register_limits_tests);
