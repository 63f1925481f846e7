/*
 * rdma-session qtests: live migration of one adapter (objects, LAN
 * rings, fast registration, SRQ, corrupt streams)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"

typedef struct MigObjects {
    uint32_t pd1, pd2_dead, pd3;
    uint32_t cq1, cq2;
    uint32_t gsi, rc, ud, qp_dead;
    uint32_t mr1, mr2_dead, mr3;
    uint32_t ah;
    uint32_t s1, s2, group;
    struct rs_cmd_create_qp tmpl;
    struct rs_cmd_reg_mr mr_cmd;
    uint64_t msi;
} MigObjects;

static void mig_build(QRdmaSession *d, MigObjects *m)
{
    struct rs_cmd_create_qp c;
    struct rs_cmd_reg_mr mr = { 0 };
    struct rs_cmd_create_ah ah;
    struct rs_cmd_add_gid g = { 0 };
    struct rs_qp_attr a;
    uint64_t pages = qrs_alloc_zeroed(d, 4 * PAGE);
    uint64_t many = guest_alloc(d->alloc, 520 * PAGE);

    g_assert(many);
    add_gid_v4(d, 0, 1);
    memset(g.gid, 0, sizeof(g.gid));
    g.gid[0] = 0xfd;
    g.gid[15] = 7;
    g.index = 1;
    g.type = RS_GID_ROCE_V2_IPV6;
    g.vni = 0x123456;
    RS_ASSERT_OK(qrs_add_gid(d, &g, NULL));

    m->pd1 = new_pd(d);
    m->pd2_dead = new_pd(d);
    m->pd3 = new_pd(d);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, m->pd2_dead));

    m->cq1 = new_cq(d, 4);
    RS_ASSERT_OK(qrs_create_cq(d, qrs_alloc_zeroed(d, 32 << 6), 6, 3, 2,
                               &m->cq2));

    qp_template(d, &c, RS_QPT_GSI, m->pd1, m->cq1, m->cq2);
    m->gsi = new_qp(d, &c);
    qp_walk(d, m->gsi, RS_QPT_GSI, RS_QPS_RTS);
    c.qp_type = RS_QPT_RC;
    m->rc = new_qp(d, &c);
    c.qp_type = RS_QPT_UD;
    m->ud = new_qp(d, &c);
    m->qp_dead = new_qp(d, &c);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, m->qp_dead));
    m->tmpl = c;

    /* RC: distinctive attributes; UD in RTS. */
    qp_walk(d, m->rc, RS_QPT_RC, RS_QPS_INIT);
    std_attr(&a, RS_QPS_INIT, RS_QPS_RTR);
    a.ah.gid_index = 1;
    a.dest_qp_num = 0x00abcd;
    a.path_mtu = RS_MTU_2048;
    RS_ASSERT_OK(qrs_modify_qp(d, m->rc, &a, RC_RTR_MASK));
    std_attr(&a, RS_QPS_RTR, RS_QPS_RTS);
    a.sq_psn = 0x777777;
    a.timeout = 19;
    RS_ASSERT_OK(qrs_modify_qp(d, m->rc, &a, RC_RTS_MASK));
    qp_walk(d, m->ud, RS_QPT_UD, RS_QPS_RTS);

    /* MRs: a direct one, a dead slot (tag state), an indirect one. */
    mr.iova = 0x5000;
    mr.length = 4 * PAGE;
    mr.npages = 4;
    mr.pbl_addr = make_pbl(d, pages, PAGE, 4);
    mr.pd = m->pd3;
    mr.page_shift = 12;
    mr.access = STD_ACCESS;
    mr.gid_index = 0;
    m->mr1 = reg_mr_ok(d, &mr);
    mr.gid_index = 1;
    m->mr2_dead = reg_mr_ok(d, &mr);
    m->mr_cmd = mr;
    mr.iova = 0;
    mr.length = 520 * PAGE;
    mr.npages = 520;
    mr.flags = RS_MR_F_PBL_INDIRECT;
    mr.pbl_addr = make_indirect_pbl(d, many, 520);
    mr.pd = m->pd1;
    m->mr3 = reg_mr_ok(d, &mr);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, m->mr2_dead));

    ah_template(&ah, m->pd1, 1);
    RS_ASSERT_OK(qrs_create_ah(d, &ah, &m->ah));

    m->s1 = new_session(d, 0, 40000);
    m->s2 = new_session(d, 0, 40001);
    m->group = new_group(d, RS_GROUP_ACTIVE_BACKUP, m->s1, m->s2);
    std_attr(&a, RS_QPS_RTS, RS_QPS_RTS);
    a.session_group = m->group;
    RS_ASSERT_OK(qrs_modify_qp(d, m->ud, &a, RS_QP_ATTR_SESSION_GROUP));

    /* Vector 0 unmasked, pointing at guest memory. */
    m->msi = qrs_alloc_zeroed(d, PAGE);
    qrs_msix_set_vector(d, 0, m->msi, 0x5eed0000, false);
}

/*
 * On the destination: the handles of the source resolve (dead ones do
 * not), references are still counted, and new objects take the next
 * free index with the next generation.
 */
static void mig_check_handles(QRdmaSession *d, const MigObjects *m)
{
    struct rs_cmd_add_gid g = { 0 };
    uint32_t h, lkey;

    /* Old handles resolve; references are still counted. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, m->pd1),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, m->pd3),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_CQ, m->cq1),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_CQ, m->cq2),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION, m->s1),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, m->group),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 0), RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 1), RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, m->pd2_dead),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_QP, m->qp_dead),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEREG_MR, m->mr2_dead),
                     RS_STATUS_BAD_HANDLE);

    /* New objects take the next free index with the next generation. */
    h = new_pd(d);
    g_assert_cmphex(h, ==, HANDLE(1, HINDEX(m->pd2_dead)));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, h));
    h = new_qp(d, &m->tmpl);
    g_assert_cmphex(h, ==, HANDLE(1, HINDEX(m->qp_dead)));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, h));
    lkey = reg_mr_ok(d, &m->mr_cmd);
    g_assert_cmphex(lkey, ==, (m->mr2_dead & ~RS_MKEY_TAG_MASK) |
                    ((m->mr2_dead + 1) & RS_MKEY_TAG_MASK));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, lkey));
    h = new_cq(d, 4);
    g_assert_cmphex(h, ==, HANDLE(0, 3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, h));
    h = new_session(d, 1, 40000);
    g_assert_cmphex(h, ==, HANDLE(0, 3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, h));
    g.index = 0;
    gid_v4(g.gid, 10, 0, 0, 1);
    RS_ASSERT_STATUS(qrs_add_gid(d, &g, NULL), RS_STATUS_EXISTS);
    add_gid_v4(d, 2, 3);
}

/* Tear down in dependency order: everything goes. */
static void mig_teardown(QRdmaSession *d, const MigObjects *m,
                         const uint32_t *qps)
{
    struct rs_qp_attr q;
    int i;

    for (i = 0; i < 3; i++) {
        RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, qps[i]));
        RS_ASSERT_STATUS(qrs_query_qp(d, qps[i], &q), RS_STATUS_BAD_HANDLE);
    }
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, m->group));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, m->s1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, m->s2));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, m->mr1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, m->mr3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_AH, m->ah));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, m->cq1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, m->cq2));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, m->pd1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, m->pd3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 0));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 2));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, m->pd1),
                     RS_STATUS_BAD_HANDLE);
}

static void test_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *src = obj;
    QTestState *from = qrs_qts(src);
    uint32_t regs_src[NREGS], regs_dst[NREGS];
    struct rs_qp_attr q_src[3], q_dst[3];
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    struct rs_device_attr attr;
    QRdmaSession *d;
    QTestState *to;
    QPCIBus *bus;
    MigObjects m;
    uint32_t qps[3], index;
    int i;

    /* Small admin ring so that it has wrapped before migrating. */
    qrs_admin_init(src, 3, RS_QOS_AEQ_LOG);
    wait_aeq_port_active(src);
    mig_build(src, &m);
    qps[0] = m.gsi;
    qps[1] = m.rc;
    qps[2] = m.ud;
    for (i = 0; i < 3; i++) {
        RS_ASSERT_OK(qrs_query_qp(src, qps[i], &q_src[i]));
    }
    g_assert_cmpuint(q_src[0].qp_state, ==, RS_QPS_RTS);
    g_assert_cmpuint(q_src[1].qp_state, ==, RS_QPS_RTS);
    g_assert_cmpuint(q_src[2].qp_state, ==, RS_QPS_RTS);
    g_assert_cmphex(q_src[2].session_group, ==, m.group);
    /* Stop where the next command is on an odd pass (phase 0). */
    while ((src->admq_pi & 15) != 13 || src->admq_pi < 40) {
        RS_ASSERT_OK(qrs_query_device(src, &attr));
    }
    dump_regs(src, regs_src);
    g_assert_cmpuint(regs_src[A_RS_ADMQ_CI / 4], ==, src->admq_pi);
    g_assert_cmphex(qtest_readl(from, m.msi), ==, 0x5eed0000);
    qtest_writel(from, m.msi, 0);

    /* Save to a file and load into a second QEMU. */
    to = mig_move(from, NULL, NULL);
    bus = qpci_new_pc(to, NULL);
    d = g_new0(QRdmaSession, 1);
    mig_attach(d, bus, src);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_VENDOR_ID), ==,
                    RS_PCI_VENDOR_ID);
    g_assert_cmphex(d->bar0.addr, ==, src->bar0.addr);
    g_assert_cmphex(d->bar2.addr, ==, src->bar2.addr);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_COMMAND) &
                    PCI_COMMAND_MASTER, ==, PCI_COMMAND_MASTER);
    g_assert_true(d->dev.msix_enabled);

    /* Registers */
    dump_regs(d, regs_dst);
    assert_regs_equal(regs_src, regs_dst);

    /* The admin queue continues at the right index with the right phase. */
    index = d->admq_pi;
    g_assert_cmpuint(qrs_ring_phase(index, 3), ==, 0);
    cmd_init(&cmd, RS_CMD_QUERY_QP);
    cmd.query.resp_addr = d->scratch;
    cmd.query.resp_len = sizeof(struct rs_qp_attr);
    cmd.query.handle = m.rc;
    RS_ASSERT_OK(qrs_admin_exec(d, &cmd, &cqe));
    g_assert_cmpuint(cqe.flags & RS_ACQE_PHASE, ==, 0);
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, index + 1);
    /* ... and raises its interrupt through the migrated MSI-X table. */
    g_assert_cmphex(qtest_readl(to, m.msi), ==, 0x5eed0000);

    /* QP attributes */
    for (i = 0; i < 3; i++) {
        RS_ASSERT_OK(qrs_query_qp(d, qps[i], &q_dst[i]));
        g_assert_cmpmem(&q_src[i], sizeof(q_src[i]), &q_dst[i],
                        sizeof(q_dst[i]));
    }

    mig_check_handles(d, &m);

    mig_teardown(d, &m, qps);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);

    g_free(d);
    qpci_free_pc(bus);
    qtest_quit(to);
}

/*
 * The same QEMU migrates out twice (a VM moved on again, or a migration
 * retried): the MRs' page check of the saved state starts anew each time
 * (it aborted the second save).
 */
static void test_migrate_twice(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    QTestState *qts = qrs_qts(d);
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-mig2-XXXXXX",
                                             NULL);
    uint64_t buf = qrs_alloc_zeroed(d, 4 * PAGE);
    uint32_t pd;
    int i;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    eng_mr(d, pd, 0, buf, 4 * PAGE, STD_ACCESS);
    eng_mr(d, pd, 0, buf, 2 * PAGE, STD_ACCESS);
    for (i = 0; i < 2; i++) {
        g_autofree char *file = g_strdup_printf("%s/state%d", tmpdir, i);

        mig_save(qts, file);
        unlink(file);
        qtest_qmp_assert_success(qts, "{ 'execute': 'cont' }");
    }
    rmdir(tmpdir);
    assert_alive(d);
}

/*
 * A corrupted migration stream fails the incoming migration cleanly: the
 * destination reports the failure and keeps running.  The source saves
 * to a file once; each case patches one field of the device's state,
 * found by the distinctive bytes in front of it (the stream is big
 * endian), and loads the result into a new QEMU.
 */
typedef struct MigPatch {
    const char *name;
    uint8_t needle[32];
    size_t needle_len;
    size_t field_off;           /* from the needle's start */
    uint32_t value;             /* big endian in the stream */
} MigPatch;

/* The objects whose saved fields the corrupt-stream cases patch. */
static void corrupt_build(QRdmaSession *d, struct rs_cmd_add_gid *g,
                          struct rs_cmd_reg_mr *mr)
{
    struct rs_cmd_create_ah ah;
    uint32_t pd, h;

    /*
     * GID 1 (fd00::7e) with one reference: an AH.  The vni the driver
     * writes is ignored: the GID is in identity 0, VNI 0.
     */
    add_gid_v4(d, 0, 1);
    g->gid[0] = 0xfd;
    g->gid[15] = 0x7e;
    g->index = 1;
    g->type = RS_GID_ROCE_V2_IPV6;
    g->vni = 0x5a5a5a;
    RS_ASSERT_OK(qrs_add_gid(d, g, NULL));
    pd = new_pd(d);
    ah_template(&ah, pd, 1);
    RS_ASSERT_OK(qrs_create_ah(d, &ah, &h));
    /* An MR of 2 pages at a distinctive IOVA. */
    mr->iova = 0x5a5a00000000ull;
    mr->length = 2 * PAGE;
    mr->npages = 2;
    mr->pbl_addr = make_pbl(d, qrs_alloc_zeroed(d, 2 * PAGE), PAGE, 2);
    mr->pd = pd;
    mr->page_shift = 12;
    mr->access = STD_ACCESS;
    reg_mr_ok(d, mr);
}

static void test_migrate_corrupt(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    QTestState *from = qrs_qts(d);
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-mig-XXXXXX",
                                             NULL);
    g_autofree char *path = g_strdup_printf("%s/state", tmpdir);
    g_autofree char *bad = g_strdup_printf("%s/bad", tmpdir);
    g_autofree uint8_t *stream = NULL;
    struct rs_cmd_add_gid g = { 0 };
    struct rs_cmd_reg_mr mr = { 0 };
    MigPatch cases[4];
    uint32_t admq_cfg, acq_cfg, aeq_cfg;
    char *err = NULL;
    gsize len;
    int i;

    corrupt_build(d, &g, &mr);
    admq_cfg = qrs_readl(d, A_RS_ADMQ_CFG);
    acq_cfg = qrs_readl(d, A_RS_ACQ_CFG);
    aeq_cfg = qrs_readl(d, A_RS_AEQ_CFG);

    mig_save(from, path);
    g_assert_true(g_file_get_contents(path, (gchar **)&stream, &len, NULL));

    /* RSGid: gid[16], vni (its identity's), refs.  RSMr: ..., iova, */
    /* length, npages. */
    memset(cases, 0, sizeof(cases));
    cases[0].name = "GID reference count";
    memcpy(cases[0].needle, g.gid, 16);
    stl_be_p(cases[0].needle + 16, 0);
    cases[0].needle_len = 20;
    cases[0].field_off = 20;
    cases[0].value = 2;
    cases[1].name = "MR npages 0xffffffff";
    stq_be_p(cases[1].needle, mr.iova);
    stq_be_p(cases[1].needle + 8, mr.length);
    cases[1].needle_len = 16;
    cases[1].field_off = 16;
    cases[1].value = 0xffffffff;
    cases[2] = cases[1];
    cases[2].name = "MR npages over max-mr-pages";
    cases[2].value = 300000;
    /* Registers: admq_base, cfg, acq_base, cfg, aeq_base, cfg, admq_pi */
    cases[3].name = "admin queue producer ahead by more than the ring";
    stq_be_p(cases[3].needle, d->admq);
    stl_be_p(cases[3].needle + 8, admq_cfg);
    stq_be_p(cases[3].needle + 12, d->acq);
    stl_be_p(cases[3].needle + 20, acq_cfg);
    stq_be_p(cases[3].needle + 24, d->aeq);
    cases[3].needle_len = 32;
    cases[3].field_off = 32 + 4;
    cases[3].value = d->admq_pi + (1u << d->admq_log) + 1;
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, d->admq_pi);

    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        g_autofree uint8_t *copy = g_memdup2(stream, len);
        size_t off = mig_find(stream, len, cases[i].needle,
                              cases[i].needle_len) + cases[i].field_off;

        g_test_message("corrupt stream: %s", cases[i].name);
        if (i == 3) {
            /* aeq_cfg, then admq_pi equal to admq_ci */
            g_assert_cmphex(ldl_be_p(stream + off - 4), ==, aeq_cfg);
            g_assert_cmphex(ldl_be_p(stream + off), ==, d->admq_pi);
            g_assert_cmphex(ldl_be_p(stream + off + 4), ==, d->admq_pi);
        }
        stl_be_p(copy + off, cases[i].value);
        g_assert_true(g_file_set_contents(bad, (gchar *)copy, len, NULL));
        g_assert_false(mig_load(bad, &err));
        g_test_message("destination: %s", err);
        g_assert_cmpstr(err, !=, "");
        g_free(err);
    }
    /* The stream as saved loads. */
    g_assert_true(mig_load(path, &err));
    g_free(err);

    unlink(bad);
    unlink(path);
    rmdir(tmpdir);
    qos_invalidate_command_line();
}

/*
 * LAN queue state survives migration: after loading, the TX ring goes on
 * at its index and phase, the RX ring at its own, with the rx mode kept.
 */
/* The destination's adapter on the socket *@opaque. */
static void lan_mig_netdev(GString *cmd_line, void *opaque)
{
    qrs_qos_socket_netdev(cmd_line, *(int *)opaque);
}

static void test_lan_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    LanEnv e, *src = &e;
    QTestState *from, *to;
    uint64_t buf, rxbuf[4];
    int sv[2];
    uint8_t f[128];
    QRdmaSession *d;
    QPCIBus *bus;
    LanEnv de;
    uint32_t idx, i;

    lan_setup(src, obj, data, 2, 2);
    from = qrs_qts(src->d);
    buf = qrs_alloc_zeroed(src->d, PAGE);
    for (i = 0; i < ARRAY_SIZE(rxbuf); i++) {
        rxbuf[i] = lan_rx_buf(src, LAN_BUF_SIZE);
    }
    RS_ASSERT_OK(qrs_set_lan_rx_mode(src->d, RS_LAN_RX_ALLMULTI));

    /* TX: 5 frames through the 4-entry ring, next one on lap 2. */
    for (i = 0; i < 5; i++) {
        lan_make_frame(f, 64 + i, lan_bcast, 0x80 + i);
        qtest_memwrite(from, buf, f, 64 + i);
        idx = lan_post(src, &src->tx, buf, 64 + i, 0);
        lan_doorbell(src, &src->tx);
        lan_expect_frame(src, f, 64 + i);
        g_assert_cmphex(lan_status(src, &src->tx, idx), ==,
                        lan_ok(&src->tx, idx));
    }
    /* TX work posted but not announced; RX: one frame in, one posted. */
    lan_make_frame(f, 100, lan_bcast, 0x90);
    qtest_memwrite(from, buf + 256, f, 100);
    idx = lan_post(src, &src->tx, buf + 256, 100, 0);
    lan_post(src, &src->rx, rxbuf[0], LAN_BUF_SIZE, 0);
    lan_post(src, &src->rx, rxbuf[1], LAN_BUF_SIZE, 0);
    lan_doorbell(src, &src->rx);
    lan_make_frame(f, 70, qos_mac, 0x91);
    lan_sock_send(src->fd, f, 70);
    lan_expect_rx(src, 0, rxbuf[0], LAN_BUF_SIZE, f, 70);

    /*
     * The destination gets a socket of its own: the stopped source still
     * reads the old one (the current command line is the one from before
     * lan_before()).
     */
    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    to = mig_move(from, lan_mig_netdev, &sv[1]);
    bus = qpci_new_pc(to, NULL);
    d = g_new0(QRdmaSession, 1);
    mig_attach(d, bus, src->d);
    de = *src;
    de.d = d;
    de.fd = sv[0];

    /* The driver learns that the VM moved, once it runs again. */
    expect_event(d, RS_EV_MIGRATION_NOTICE, 1);

    /* TX: the posted frame goes out at index 5, on the second lap. */
    g_assert_cmpuint(idx, ==, 5);
    lan_doorbell(&de, &de.tx);
    lan_make_frame(f, 100, lan_bcast, 0x90);
    lan_expect_frame(&de, f, 100);
    g_assert_cmphex(lan_status(&de, &de.tx, idx), ==, 0);
    wait_msg(d, de.msi + LAN_TX_VECTOR * 4, 0x1a40000 + LAN_TX_VECTOR);

    /* RX: the second posted buffer takes the next frame; ALLMULTI kept. */
    lan_make_frame(f, 72, lan_bcast, 0x92);
    lan_sock_send(de.fd, f, 72);            /* no BROADCAST: dropped */
    lan_make_frame(f, 73, (const uint8_t[6]) { 0x01, 0, 0x5e, 0, 0, 1 },
                   0x93);
    lan_sock_send(de.fd, f, 73);
    lan_expect_rx(&de, 1, rxbuf[1], LAN_BUF_SIZE, f, 73);
    /* ... and the ring goes on across its end. */
    fill(d, rxbuf[0], 0xee, LAN_BUF_SIZE);
    for (i = 2; i < 5; i++) {
        lan_post(&de, &de.rx, rxbuf[i % 4], LAN_BUF_SIZE, 0);
    }
    lan_doorbell(&de, &de.rx);
    for (i = 2; i < 5; i++) {
        lan_make_frame(f, 72 + i, qos_mac, 0x94 + i);
        lan_sock_send(de.fd, f, 72 + i);
        lan_expect_rx(&de, i, rxbuf[i % 4], LAN_BUF_SIZE, f, 72 + i);
    }
    g_assert_cmphex(lan_ok(&de.rx, 4), ==, 0);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_TXQ, de.tx.ring, 2, 0,
                                          NULL), RS_STATUS_EXISTS);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_RXQ));

    g_free(d);
    qpci_free_pc(bus);
    qtest_quit(to);
    close(sv[0]);
    close(sv[1]);
}

/*
 * SRQ and engine state move with the VM: an SRQ with posted WQEs and a QP
 * on it, and a QP's atomic responder resource.  On the destination a SEND
 * lands in the next SRQ WQE and a duplicate atomic is answered, not
 * executed.
 */
static void test_engine_srq_migrate(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    QRdmaSession *src, *d;
    struct rs_cmd_create_srq c;
    struct rs_cmd_create_qp q;
    struct rs_send_wqe_ctrl w;
    QTestState *to;
    QPCIBus *bus;
    uint32_t srq, akey, pi = 0;
    Loop l;

    loop_setup(&l, obj);
    src = l.d;
    srq_template(l.d, &c, l.pd, 3, 1);
    RS_ASSERT_OK(qrs_create_srq(l.d, &c, &srq));
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DESTROY_QP, l.b.h));
    q = l.b.c;
    q.srq = srq;
    q.rq_addr = 0;
    l.b.c = q;
    l.b.h = new_qp(l.d, &q);
    l.b.qpn = HINDEX(l.b.h);
    loop_reconnect(&l);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    srq_post(l.d, &c, srq, &pi, 0x90, l.dst, 1024, l.dst_key);
    srq_post(l.d, &c, srq, &pi, 0x91, l.dst + 1024, 1024, l.dst_key);
    loop_pattern(&l, l.src, 2048, 0x77);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa0;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    loop_expect(&l, 0x90, RS_WC_SUCCESS, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    akey = loop_mr_access(&l, l.dst + 2 * PAGE, 2 * PAGE,
                          RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_ATOMIC);
    qtest_writeq(qrs_qts(l.d), l.dst + 2 * PAGE, 5);
    loop_atomic(&l, 0xa1, RS_WR_ATOMIC_FETCH_ADD, l.dst + 2 * PAGE, akey,
                10, 0, l.src + 1024, 8);
    loop_expect(&l, 0xa1, RS_WC_SUCCESS, RS_WR_ATOMIC_FETCH_ADD, l.a.qpn);
    g_assert_cmphex(qtest_readq(qrs_qts(l.d), l.dst + 2 * PAGE), ==, 15);

    to = mig_move(qrs_qts(src), NULL, NULL);
    bus = qpci_new_pc(to, NULL);
    d = g_new0(QRdmaSession, 1);
    mig_attach(d, bus, src);
    l.d = d;

    /* The SRQ's next WQE, through the QP's SRQ link. */
    w.wr_id = 0xa2;
    loop_post_send(&l, &l.a, &w, l.src + 1024, 1000, l.src_key);
    loop_expect(&l, 0x91, RS_WC_SUCCESS, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0xa2, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    loop_assert_same(&l, l.src, l.dst, 100);
    loop_assert_same(&l, l.src + 1024, l.dst + 1024, 1000);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SRQ, srq), RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_modify_srq(d, srq, RS_SRQ_ATTR_LIMIT, 1, 0, 0, NULL));

    g_free(d);
    qpci_free_pc(bus);
    qtest_quit(to);
}

/*
 * Kernel-consumer state moves with the VM: a privileged PD, a bound
 * fast-registration MR (key tag, IOVA, page slots) and a Free one.  On
 * the destination the bound key translates as before, LOCAL_INV and a
 * REG_MR of the Free MR work, and the reserved lkey is still honoured.
 */
static void test_engine_fast_reg_migrate(void *obj, void *data,
                                         QGuestAllocator *alloc)
{
    QRdmaSession *src, *d;
    QTestState *to;
    QPCIBus *bus;
    uint32_t key, k1, free_key, k2;
    uint64_t pbl;
    Loop l;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    src = l.d;
    key = fr_alloc(&l, l.pd, 4);
    free_key = fr_alloc(&l, l.pd, 3);
    pbl = qrs_alloc_zeroed(l.d, 4 * 8);
    qtest_writeq(qrs_qts(l.d), pbl + 0, l.dst + 3 * PAGE);
    qtest_writeq(qrs_qts(l.d), pbl + 8, l.dst + 1 * PAGE);
    k1 = (key & ~RS_MKEY_TAG_MASK) | 0xc3;
    fr_post_reg(&l, &l.b, 0xf1, k1, FR_IOVA + 0x200, 2 * PAGE - 0x200, pbl,
                2, RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE);
    fr_expect(&l, 0xf1, RS_WR_REG_MR, RS_WC_SUCCESS);

    to = mig_move(qrs_qts(src), NULL, NULL);
    bus = qpci_new_pc(to, NULL);
    d = g_new0(QRdmaSession, 1);
    mig_attach(d, bus, src);
    l.d = d;

    /* 5000 bytes at FR_IOVA + 0x300: dst page 3 from 0x300, then page 1. */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_pattern(&l, l.src, 5000, 0x4d);
    loop_post_op(&l, &l.a, 0xf2, RS_WR_RDMA_WRITE, 0, FR_IOVA + 0x300, k1,
               l.src, 5000, RS_LOCAL_DMA_LKEY);
    fr_expect(&l, 0xf2, RS_WR_RDMA_WRITE, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 3 * PAGE + 0x300, PAGE - 0x300);
    loop_assert_same(&l, l.src + PAGE - 0x300, l.dst + PAGE,
                     5000 - (PAGE - 0x300));
    g_assert_true(is_filled(l.d, l.dst, 0xee, PAGE));
    g_assert_true(is_filled(l.d, l.dst + PAGE + 5000 - (PAGE - 0x300), 0xee,
                            PAGE - (5000 - (PAGE - 0x300))));
    g_assert_true(is_filled(l.d, l.dst + 2 * PAGE, 0xee, PAGE + 0x300));

    loop_post_op(&l, &l.b, 0xf3, RS_WR_LOCAL_INV, k1, 0, 0, 0, 0, 0);
    fr_expect(&l, 0xf3, RS_WR_LOCAL_INV, RS_WC_SUCCESS);
    k2 = (free_key & ~RS_MKEY_TAG_MASK) | 0x11;
    qtest_writeq(qrs_qts(l.d), pbl + 16, l.dst);
    fr_post_reg(&l, &l.b, 0xf4, k2, FR_IOVA, 3 * PAGE, pbl, 3,
                RS_ACCESS_LOCAL_WRITE);
    fr_expect(&l, 0xf4, RS_WR_REG_MR, RS_WC_SUCCESS);
    /* The invalidated key no longer reaches memory. */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_op(&l, &l.a, 0xf5, RS_WR_RDMA_WRITE, 0, FR_IOVA + 0x300, k1,
               l.src, 64, RS_LOCAL_DMA_LKEY);
    fr_expect(&l, 0xf5, 0, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l.d, l.dst, 0xee, LOOP_BUF));
    assert_alive(d);

    g_free(d);
    qpci_free_pc(bus);
    qtest_quit(to);
}

static void register_migrate_tests(void)
{
    QOSGraphTestOptions lan = { .before = lan_before };

    rs_add_standalone_test("migrate/objects", test_migrate, NULL);
    rs_add_standalone_test("migrate/lan", test_lan_migrate, &lan);
    rs_add_standalone_test("migrate/fast-reg",
                           test_engine_fast_reg_migrate, NULL);
    rs_add_standalone_test("migrate/srq", test_engine_srq_migrate, NULL);
    rs_add_standalone_test("migrate/corrupt", test_migrate_corrupt, NULL);
    rs_add_standalone_test("migrate/twice", test_migrate_twice, NULL);
}

libqos_init(register_migrate_tests);
