/*
 * rdma-session qtests: every admin command with each bad field, table
 * driven
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"

/* Guest memory of the fixture: allocated once per test. */
static void bad_fixture_memory(QRdmaSession *d, BadFixture *f)
{
    uint64_t *t = f->tok;
    uint64_t buf = qrs_alloc_zeroed(d, 3 * PAGE);
    uint64_t many = guest_alloc(d->alloc, 600 * PAGE);
    uint64_t c0 = qrs_alloc_zeroed(d, PAGE), c1 = qrs_alloc_zeroed(d, PAGE);
    struct rs_qp_attr a;
    uint32_t i;

    g_assert(many);
    memset(f, 0, sizeof(*f));
    f->d = d;
    t[T_BAR0] = d->bar0.addr;
    t[T_BAR1] = d->dev.msix_table_bar.addr;
    t[T_BAR2] = d->bar2.addr;
    t[T_RAM_END] = ram_end(d);
    t[T_SCRATCH] = qrs_alloc_zeroed(d, PAGE);
    t[T_ATTR] = qrs_alloc_zeroed(d, PAGE);
    std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
    qrs_qp_attr_to_le(&a);
    qtest_memwrite(qrs_qts(d), t[T_ATTR], &a, sizeof(a));
    t[T_CQ_RING] = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << 4);
    t[T_CQ_RING2] = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << 5);

    /* Page lists of three pages: a good one and one bad entry each. */
    t[T_PBL] = make_pbl(d, buf, PAGE, 3);
    t[T_PBL_MISALIGNED] = make_pbl(d, buf, PAGE, 3);
    qtest_writeq(qrs_qts(d), t[T_PBL_MISALIGNED] + 8, buf + PAGE + 0x800);
    t[T_PBL_FAR] = make_pbl(d, buf, PAGE, 3);
    qtest_writeq(qrs_qts(d), t[T_PBL_FAR] + 16, FAR_ADDR);
    t[T_PBL_BAR0] = make_pbl(d, buf, PAGE, 3);
    qtest_writeq(qrs_qts(d), t[T_PBL_BAR0] + 8, d->bar0.addr);
    t[T_PBL_RAM_END] = make_pbl(d, buf, PAGE, 3);
    qtest_writeq(qrs_qts(d), t[T_PBL_RAM_END] + 16, t[T_RAM_END]);

    /* Indirect lists for 600 pages: two chunks. */
    for (i = 0; i < 600; i++) {
        qtest_writeq(qrs_qts(d), (i < 512 ? c0 : c1) + (i % 512) * 8,
                     many + i * PAGE);
    }
    t[T_IPBL] = make_pbl(d, c0, c1 - c0, 2);
    t[T_IPBL_MISALIGNED] = make_pbl(d, c0, c1 - c0, 2);
    qtest_writeq(qrs_qts(d), t[T_IPBL_MISALIGNED] + 8, c1 + 0x800);
    t[T_IPBL_FAR] = make_pbl(d, c0, c1 - c0, 2);
    qtest_writeq(qrs_qts(d), t[T_IPBL_FAR] + 8, FAR_ADDR);
    t[T_IPBL_BAR0] = make_pbl(d, c0, c1 - c0, 2);
    qtest_writeq(qrs_qts(d), t[T_IPBL_BAR0] + 8, d->bar0.addr);
}

/*
 * Objects of the fixture:
 *   GIDs 0 (sessions), 1 (one session), 2 (an MR), 4 (an AH), 5 (a QP AV)
 *   PD: QPs; PD_MR: an MR only; PD_AH: an AH only
 *   CQ: QPs; CQ_SEND/CQ_RECV: the send/recv CQ of one UD QP; CQ_FREE
 *   QP: an RC QP in RESET; a UD QP bound to GROUP; a GSI QP
 *   GROUP = { SESS, another }; SESS_FREE1/2 in no group
 *   *_STALE: created and destroyed again
 */
static void bad_fixture_objects(BadFixture *f)
{
    QRdmaSession *d = f->d;
    uint64_t *t = f->tok;
    struct rs_cmd_create_qp c;
    struct rs_cmd_reg_mr mr = { 0 };
    struct rs_cmd_create_ah ah;
    struct rs_qp_attr a;
    uint32_t qp_av, h;

    add_gid_v4(d, 0, 1);
    add_gid_v4(d, 1, 1);
    add_gid_v4(d, 2, 1);
    add_gid_v4(d, 4, 1);
    add_gid_v4(d, 5, 1);

    t[T_PD] = new_pd(d);
    t[T_PD_MR] = new_pd(d);
    t[T_PD_AH] = new_pd(d);
    t[T_PD_STALE] = new_pd(d);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, t[T_PD_STALE]));

    t[T_CQ] = new_cq(d, 4);
    t[T_CQ_SEND] = new_cq(d, 4);
    t[T_CQ_RECV] = new_cq(d, 4);
    t[T_CQ_FREE] = new_cq(d, 4);
    t[T_CQ_STALE] = new_cq(d, 4);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, t[T_CQ_STALE]));

    t[T_SESS] = new_session(d, 0, 49152);
    h = new_session(d, 0, 49153);
    t[T_SESS_FREE1] = new_session(d, 0, 49154);
    t[T_SESS_FREE2] = new_session(d, 0, 49155);
    t[T_SESS_GID1] = new_session(d, 1, 49152);
    t[T_SESS_STALE] = new_session(d, 0, 49160);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, t[T_SESS_STALE]));
    t[T_GROUP] = new_group(d, RS_GROUP_ROUND_ROBIN, t[T_SESS], h);
    t[T_GROUP_STALE] = new_group(d, RS_GROUP_ROUND_ROBIN,
                                 t[T_SESS_FREE1], 0);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP,
                             t[T_GROUP_STALE]));

    qp_template(d, &f->qp_tmpl, RS_QPT_RC, t[T_PD], t[T_CQ], t[T_CQ]);
    t[T_SQ] = f->qp_tmpl.sq_addr;
    t[T_RQ] = f->qp_tmpl.rq_addr;
    t[T_QP] = new_qp(d, &f->qp_tmpl);
    t[T_QP_STALE] = new_qp(d, &f->qp_tmpl);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, t[T_QP_STALE]));

    qp_template(d, &c, RS_QPT_RC, t[T_PD], t[T_CQ], t[T_CQ]);
    qp_av = new_qp(d, &c);
    qp_walk(d, qp_av, RS_QPT_RC, RS_QPS_INIT);
    std_attr(&a, RS_QPS_INIT, RS_QPS_RTR);
    a.ah.gid_index = 5;
    RS_ASSERT_OK(qrs_modify_qp(d, qp_av, &a, RC_RTR_MASK));

    qp_template(d, &c, RS_QPT_UD, t[T_PD], t[T_CQ_SEND], t[T_CQ_RECV]);
    c.session_group = t[T_GROUP];
    new_qp(d, &c);
    qp_template(d, &c, RS_QPT_GSI, t[T_PD], t[T_CQ], t[T_CQ]);
    new_qp(d, &c);

    mr.iova = 0x10000;
    mr.length = PAGE;
    mr.pbl_addr = t[T_PBL];
    mr.npages = 1;
    mr.pd = t[T_PD_MR];
    mr.page_shift = 12;
    mr.access = STD_ACCESS;
    mr.gid_index = 2;
    t[T_MR] = reg_mr_ok(d, &mr);
    mr.pd = t[T_PD];
    mr.gid_index = 0;
    t[T_MR_STALE] = reg_mr_ok(d, &mr);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, t[T_MR_STALE]));

    ah_template(&ah, t[T_PD_AH], 4);
    RS_ASSERT_OK(qrs_create_ah(d, &ah, &h));
    t[T_AH] = h;
    RS_ASSERT_OK(qrs_create_ah(d, &ah, &h));
    t[T_AH_STALE] = h;
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_AH, h));
}

/* A valid command of each kind, built from the fixture. */
static void bad_template(BadFixture *f, uint8_t opcode, uint8_t variant,
                         struct rs_admin_cmd *cmd)
{
    uint64_t *t = f->tok;

    cmd_init(cmd, opcode);
    switch (opcode) {
    case RS_CMD_QUERY_DEVICE:
        cmd->query.resp_addr = t[T_SCRATCH];
        cmd->query.resp_len = sizeof(struct rs_device_attr);
        break;
    case RS_CMD_QUERY_PORT:
        cmd->query.resp_addr = t[T_SCRATCH];
        cmd->query.resp_len = sizeof(struct rs_port_attr);
        cmd->query.handle = 1;
        break;
    case RS_CMD_QUERY_QP:
        cmd->query.resp_addr = t[T_SCRATCH];
        cmd->query.resp_len = sizeof(struct rs_qp_attr);
        cmd->query.handle = t[T_QP];
        break;
    case RS_CMD_CREATE_CQ:
        cmd->create_cq.ring_addr = t[T_CQ_RING];
        cmd->create_cq.log_size = 4;
        break;
    case RS_CMD_RESIZE_CQ:
        cmd->resize_cq.ring_addr = t[T_CQ_RING2];
        cmd->resize_cq.handle = t[T_CQ_FREE];
        cmd->resize_cq.log_size = 5;
        break;
    case RS_CMD_CREATE_QP:
        cmd->create_qp = f->qp_tmpl;
        break;
    case RS_CMD_MODIFY_QP:
        cmd->modify_qp.attr_addr = t[T_ATTR];
        cmd->modify_qp.handle = t[T_QP];
        cmd->modify_qp.attr_mask = RS_QP_ATTR_STATE;
        break;
    case RS_CMD_REG_MR:
        cmd->reg_mr.pd = t[T_PD];
        cmd->reg_mr.page_shift = 12;
        cmd->reg_mr.access = STD_ACCESS;
        cmd->reg_mr.gid_index = 0;
        if (variant) {
            cmd->reg_mr.iova = 0;
            cmd->reg_mr.length = 600 * PAGE;
            cmd->reg_mr.npages = 600;
            cmd->reg_mr.pbl_addr = t[T_IPBL];
            cmd->reg_mr.flags = RS_MR_F_PBL_INDIRECT;
        } else {
            cmd->reg_mr.iova = 0x10000;
            cmd->reg_mr.length = 3 * PAGE;
            cmd->reg_mr.npages = 3;
            cmd->reg_mr.pbl_addr = t[T_PBL];
        }
        break;
    case RS_CMD_CREATE_AH:
        ah_template(&cmd->create_ah, t[T_PD], 0);
        break;
    case RS_CMD_CREATE_SESSION:
        session_template(&cmd->create_session, 0, 50000);
        break;
    case RS_CMD_CREATE_SESSION_GROUP:
        cmd->create_group.session[0] = t[T_SESS_FREE1];
        cmd->create_group.session[1] = t[T_SESS_FREE2];
        cmd->create_group.nsessions = 2;
        cmd->create_group.policy = RS_GROUP_ROUND_ROBIN;
        break;
    case RS_CMD_ADD_GID:
        gid_v4(cmd->add_gid.gid, 10, 0, 3, 9);
        cmd->add_gid.index = 3;
        cmd->add_gid.type = RS_GID_ROCE_V2_IPV4;
        cmd->add_gid.vni = 100;
        break;
    default:
        /* Destroy commands and unknown opcodes: rows set the rest. */
        break;
    }
}

typedef struct BadCmdRow {
    const char *name;
    uint8_t opcode;
    uint8_t variant;            /* REG_MR: 1 = indirect page list */
    uint8_t status;
    BadPatch patch[4];
} BadCmdRow;

#define P(f, v) { offsetof(struct rs_admin_cmd, f),                       \
                  sizeof(((struct rs_admin_cmd *)NULL)->f), (v) }

#define ROW(name, op, st, ...) \
    { name, RS_CMD_##op, 0, RS_STATUS_##st, { __VA_ARGS__ } }

#define ROWV(name, op, var, st, ...) \
    { name, RS_CMD_##op, var, RS_STATUS_##st, { __VA_ARGS__ } }

#define RAW(name, opcode, st) \
    { name, opcode, 0, RS_STATUS_##st, { { 0 } } }

#define DESTROY(name, op, h, st) \
    ROW(name, op, st, P(destroy.handle, h))

#define MR_PAGES_OVER   (DEF_MAX_MR_PAGES + 1ull)

static const BadCmdRow bad_cmd_rows[] = {
    /* Opcodes */
    RAW("opcode 0x00", 0x00, BAD_OPCODE),
    RAW("opcode 0x19", 0x19, BAD_OPCODE),
    RAW("opcode 0x1a", 0x1a, BAD_OPCODE),
    RAW("opcode 0x1f", 0x1f, BAD_OPCODE),
    RAW("opcode RS_CMD_MAX", RS_CMD_MAX, BAD_OPCODE),
    RAW("opcode 0x80", 0x80, BAD_OPCODE),
    RAW("opcode 0xff", 0xff, BAD_OPCODE),
    RAW("CREATE_SRQ all zero", RS_CMD_CREATE_SRQ, BAD_HANDLE),
    RAW("MODIFY_SRQ all zero", RS_CMD_MODIFY_SRQ, BAD_HANDLE),
    RAW("DESTROY_SRQ all zero", RS_CMD_DESTROY_SRQ, BAD_HANDLE),
    RAW("reserved CREATE_DCT", RS_CMD_CREATE_DCT, NOT_SUPPORTED),
    RAW("reserved DESTROY_DCT", RS_CMD_DESTROY_DCT, NOT_SUPPORTED),
    RAW("REG_INDIRECT_MKEY all zero", RS_CMD_REG_INDIRECT_MKEY, BAD_HANDLE),
    RAW("REG_PATTERN_MKEY all zero", RS_CMD_REG_PATTERN_MKEY, BAD_HANDLE),
    RAW("ODP_RESOLVE all zero", RS_CMD_ODP_RESOLVE, BAD_HANDLE),
    RAW("ODP_INVALIDATE all zero", RS_CMD_ODP_INVALIDATE, BAD_HANDLE),
    RAW("QUERY_STATS all zero", RS_CMD_QUERY_STATS, BAD_SIZE),

    /* QUERY_DEVICE */
    ROW("QUERY_DEVICE resp_len 0", QUERY_DEVICE, BAD_SIZE,
        P(query.resp_len, 0)),
    ROW("QUERY_DEVICE resp_len 127", QUERY_DEVICE, BAD_SIZE,
        P(query.resp_len, 127)),
    ROW("QUERY_DEVICE resp_addr +4", QUERY_DEVICE, BAD_ALIGN,
        P(query.resp_addr, TOK(T_SCRATCH, 4))),
    ROW("QUERY_DEVICE resp_addr +1", QUERY_DEVICE, BAD_ALIGN,
        P(query.resp_addr, TOK(T_SCRATCH, 1))),
    ROW("QUERY_DEVICE resp_addr in BAR0", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, TOK(T_BAR0, 0))),
    ROW("QUERY_DEVICE resp_addr in MSI-X BAR", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, TOK(T_BAR1, 0))),
    ROW("QUERY_DEVICE resp_addr in BAR2", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, TOK(T_BAR2, 0))),
    ROW("QUERY_DEVICE resp_addr at end of RAM", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, TOK(T_RAM_END, 0))),
    ROW("QUERY_DEVICE resp straddles end of RAM", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, TOK(T_RAM_END, -64))),
    ROW("QUERY_DEVICE resp_addr far", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, FAR_ADDR)),
    ROW("QUERY_DEVICE resp_addr wraps", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, 0xffffffffffffffc0ull)),

    /* QUERY_PORT */
    ROW("QUERY_PORT port 0", QUERY_PORT, BAD_PARAM, P(query.handle, 0)),
    ROW("QUERY_PORT port 2", QUERY_PORT, BAD_PARAM, P(query.handle, 2)),
    ROW("QUERY_PORT resp_len 63", QUERY_PORT, BAD_SIZE,
        P(query.resp_len, 63)),
    ROW("QUERY_PORT resp_addr in BAR0", QUERY_PORT, BAD_ADDR,
        P(query.resp_addr, TOK(T_BAR0, 0))),
    ROW("QUERY_PORT resp_addr +4", QUERY_PORT, BAD_ALIGN,
        P(query.resp_addr, TOK(T_SCRATCH, 4))),

    /* QUERY_QP */
    ROW("QUERY_QP stale handle", QUERY_QP, BAD_HANDLE,
        P(query.handle, TOK(T_QP_STALE, 0))),
    ROW("QUERY_QP handle 0", QUERY_QP, BAD_HANDLE, P(query.handle, 0)),
    ROW("QUERY_QP wrong generation", QUERY_QP, BAD_HANDLE,
        P(query.handle, TOK(T_QP, 1 << RS_HANDLE_GEN_SHIFT))),
    ROW("QUERY_QP index out of range", QUERY_QP, BAD_HANDLE,
        P(query.handle, 0x00fffffe)),
    ROW("QUERY_QP resp_len 95", QUERY_QP, BAD_SIZE, P(query.resp_len, 95)),
    ROW("QUERY_QP resp straddles end of RAM", QUERY_QP, BAD_ADDR,
        P(query.resp_addr, TOK(T_RAM_END, -32))),
    ROW("QUERY_QP resp_addr +4", QUERY_QP, BAD_ALIGN,
        P(query.resp_addr, TOK(T_SCRATCH, 4))),

    /* CREATE_PD / DESTROY_PD */
    DESTROY("DESTROY_PD handle 0", DESTROY_PD, 0, BAD_HANDLE),
    DESTROY("DESTROY_PD twice (stale)", DESTROY_PD, TOK(T_PD_STALE, 0),
            BAD_HANDLE),
    DESTROY("DESTROY_PD wrong generation", DESTROY_PD,
            TOK(T_PD, 1 << RS_HANDLE_GEN_SHIFT), BAD_HANDLE),
    DESTROY("DESTROY_PD free slot", DESTROY_PD, 200, BAD_HANDLE),
    DESTROY("DESTROY_PD index max-pds", DESTROY_PD, DEF_MAX_PDS,
            BAD_HANDLE),
    DESTROY("DESTROY_PD index out of range", DESTROY_PD, 0x00ffffff,
            BAD_HANDLE),
    DESTROY("DESTROY_PD used by QPs", DESTROY_PD, TOK(T_PD, 0), BUSY),
    DESTROY("DESTROY_PD used by an MR", DESTROY_PD, TOK(T_PD_MR, 0), BUSY),
    DESTROY("DESTROY_PD used by an AH", DESTROY_PD, TOK(T_PD_AH, 0), BUSY),

    /* CREATE_CQ */
    ROW("CREATE_CQ log_size 0", CREATE_CQ, BAD_SIZE,
        P(create_cq.log_size, 0)),
    ROW("CREATE_CQ log_size 17", CREATE_CQ, BAD_SIZE,
        P(create_cq.log_size, RS_MAX_CQ_LOG + 1)),
    ROW("CREATE_CQ ring 0", CREATE_CQ, BAD_ADDR, P(create_cq.ring_addr, 0)),
    ROW("CREATE_CQ ring +32", CREATE_CQ, BAD_ALIGN,
        P(create_cq.ring_addr, TOK(T_CQ_RING, 32))),
    ROW("CREATE_CQ ring +8", CREATE_CQ, BAD_ALIGN,
        P(create_cq.ring_addr, TOK(T_CQ_RING, 8))),
    ROW("CREATE_CQ ring in BAR0", CREATE_CQ, BAD_ADDR,
        P(create_cq.ring_addr, TOK(T_BAR0, 0))),
    ROW("CREATE_CQ ring straddles end of RAM", CREATE_CQ, BAD_ADDR,
        P(create_cq.ring_addr, TOK(T_RAM_END, -256))),
    ROW("CREATE_CQ ring far", CREATE_CQ, BAD_ADDR,
        P(create_cq.ring_addr, FAR_ADDR)),
    ROW("CREATE_CQ comp_vector 4", CREATE_CQ, BAD_PARAM,
        P(create_cq.comp_vector, DEF_COMP_VECTORS)),
    ROW("CREATE_CQ comp_vector 0xffff", CREATE_CQ, BAD_PARAM,
        P(create_cq.comp_vector, 0xffff)),
    ROW("CREATE_CQ uar 64", CREATE_CQ, BAD_PARAM,
        P(create_cq.uar, DEF_DB_PAGES)),
    ROW("CREATE_CQ uar 0xffffffff", CREATE_CQ, BAD_PARAM,
        P(create_cq.uar, 0xffffffff)),

    /* DESTROY_CQ */
    DESTROY("DESTROY_CQ handle 0", DESTROY_CQ, 0, BAD_HANDLE),
    DESTROY("DESTROY_CQ twice (stale)", DESTROY_CQ, TOK(T_CQ_STALE, 0),
            BAD_HANDLE),
    DESTROY("DESTROY_CQ index out of range", DESTROY_CQ, 0x00fffffe,
            BAD_HANDLE),
    DESTROY("DESTROY_CQ used by QPs", DESTROY_CQ, TOK(T_CQ, 0), BUSY),
    DESTROY("DESTROY_CQ send CQ of a QP", DESTROY_CQ, TOK(T_CQ_SEND, 0),
            BUSY),
    DESTROY("DESTROY_CQ recv CQ of a QP", DESTROY_CQ, TOK(T_CQ_RECV, 0),
            BUSY),

    /* RESIZE_CQ */
    ROW("RESIZE_CQ stale handle", RESIZE_CQ, BAD_HANDLE,
        P(resize_cq.handle, TOK(T_CQ_STALE, 0))),
    ROW("RESIZE_CQ handle 0", RESIZE_CQ, BAD_HANDLE, P(resize_cq.handle, 0)),
    ROW("RESIZE_CQ log_size 0", RESIZE_CQ, BAD_SIZE,
        P(resize_cq.log_size, 0)),
    ROW("RESIZE_CQ log_size 17", RESIZE_CQ, BAD_SIZE,
        P(resize_cq.log_size, RS_MAX_CQ_LOG + 1)),
    ROW("RESIZE_CQ ring 0", RESIZE_CQ, BAD_ADDR, P(resize_cq.ring_addr, 0)),
    ROW("RESIZE_CQ ring +32", RESIZE_CQ, BAD_ALIGN,
        P(resize_cq.ring_addr, TOK(T_CQ_RING2, 32))),
    ROW("RESIZE_CQ ring in BAR0", RESIZE_CQ, BAD_ADDR,
        P(resize_cq.ring_addr, TOK(T_BAR0, 0))),
    ROW("RESIZE_CQ ring at end of RAM", RESIZE_CQ, BAD_ADDR,
        P(resize_cq.ring_addr, TOK(T_RAM_END, 0))),
    ROW("RESIZE_CQ consumer_index beyond producer", RESIZE_CQ, BAD_SIZE,
        P(resize_cq.consumer_index, 1)),
    ROW("RESIZE_CQ consumer_index behind", RESIZE_CQ, BAD_SIZE,
        P(resize_cq.consumer_index, 0xffffffff)),

    /* CREATE_QP */
    /* The template's receive side and send queue: wrong for DC. */
    ROW("CREATE_QP DCI with a receive side", CREATE_QP, BAD_PARAM,
        P(create_qp.qp_type, RS_QPT_DCI)),
    ROW("CREATE_QP DCT with a send queue", CREATE_QP, BAD_PARAM,
        P(create_qp.qp_type, RS_QPT_DCT)),
    ROW("CREATE_QP type 6", CREATE_QP, BAD_PARAM, P(create_qp.qp_type, 6)),
    ROW("CREATE_QP type 0xff", CREATE_QP, BAD_PARAM,
        P(create_qp.qp_type, 0xff)),
    ROW("CREATE_QP pd 0", CREATE_QP, BAD_HANDLE, P(create_qp.pd, 0)),
    ROW("CREATE_QP stale pd", CREATE_QP, BAD_HANDLE,
        P(create_qp.pd, TOK(T_PD_STALE, 0))),
    ROW("CREATE_QP stale send_cq", CREATE_QP, BAD_HANDLE,
        P(create_qp.send_cq, TOK(T_CQ_STALE, 0))),
    ROW("CREATE_QP send_cq 0", CREATE_QP, BAD_HANDLE,
        P(create_qp.send_cq, 0)),
    ROW("CREATE_QP stale recv_cq", CREATE_QP, BAD_HANDLE,
        P(create_qp.recv_cq, TOK(T_CQ_STALE, 0))),
    ROW("CREATE_QP srq 1 (no such SRQ)", CREATE_QP, BAD_HANDLE,
        P(create_qp.srq, 1)),
    ROW("CREATE_QP sq_log_size 0", CREATE_QP, BAD_SIZE,
        P(create_qp.sq_log_size, 0)),
    ROW("CREATE_QP sq_log_size 16", CREATE_QP, BAD_SIZE,
        P(create_qp.sq_log_size, RS_MAX_WQ_LOG + 1)),
    ROW("CREATE_QP rq_log_size 0", CREATE_QP, BAD_SIZE,
        P(create_qp.rq_log_size, 0)),
    ROW("CREATE_QP rq_log_size 16", CREATE_QP, BAD_SIZE,
        P(create_qp.rq_log_size, RS_MAX_WQ_LOG + 1)),
    ROW("CREATE_QP max_send_sge 0", CREATE_QP, BAD_PARAM,
        P(create_qp.max_send_sge, 0)),
    ROW("CREATE_QP max_send_sge 17", CREATE_QP, BAD_PARAM,
        P(create_qp.max_send_sge, RS_MAX_SGE + 1)),
    ROW("CREATE_QP max_recv_sge 0", CREATE_QP, BAD_PARAM,
        P(create_qp.max_recv_sge, 0)),
    ROW("CREATE_QP max_recv_sge 17", CREATE_QP, BAD_PARAM,
        P(create_qp.max_recv_sge, RS_MAX_SGE + 1)),
    ROW("CREATE_QP max_inline 257", CREATE_QP, BAD_PARAM,
        P(create_qp.max_inline, RS_MAX_INLINE + 1)),
    ROW("CREATE_QP max_inline 0xffff", CREATE_QP, BAD_PARAM,
        P(create_qp.max_inline, 0xffff)),
    ROW("CREATE_QP uar 64", CREATE_QP, BAD_PARAM,
        P(create_qp.uar, DEF_DB_PAGES)),
    ROW("CREATE_QP flags 0x02", CREATE_QP, BAD_PARAM,
        P(create_qp.flags, 0x02)),
    ROW("CREATE_QP flags 0x80", CREATE_QP, BAD_PARAM,
        P(create_qp.flags, 0x80)),
    ROW("CREATE_QP stale session_group", CREATE_QP, BAD_HANDLE,
        P(create_qp.session_group, TOK(T_GROUP_STALE, 0))),
    ROW("CREATE_QP session_group out of range", CREATE_QP, BAD_HANDLE,
        P(create_qp.session_group, 0x00fffffe)),
    ROW("CREATE_QP sq_addr 0", CREATE_QP, BAD_ADDR, P(create_qp.sq_addr, 0)),
    ROW("CREATE_QP sq_addr +32", CREATE_QP, BAD_ALIGN,
        P(create_qp.sq_addr, TOK(T_SQ, 32))),
    ROW("CREATE_QP sq_addr in BAR0", CREATE_QP, BAD_ADDR,
        P(create_qp.sq_addr, TOK(T_BAR0, 0))),
    ROW("CREATE_QP SQ straddles end of RAM", CREATE_QP, BAD_ADDR,
        P(create_qp.sq_addr, TOK(T_RAM_END, -1024))),
    ROW("CREATE_QP sq_addr far", CREATE_QP, BAD_ADDR,
        P(create_qp.sq_addr, FAR_ADDR)),
    ROW("CREATE_QP rq_addr 0", CREATE_QP, BAD_ADDR, P(create_qp.rq_addr, 0)),
    ROW("CREATE_QP rq_addr +8", CREATE_QP, BAD_ALIGN,
        P(create_qp.rq_addr, TOK(T_RQ, 8))),
    ROW("CREATE_QP rq_addr in BAR2", CREATE_QP, BAD_ADDR,
        P(create_qp.rq_addr, TOK(T_BAR2, 0))),
    ROW("CREATE_QP RQ straddles end of RAM", CREATE_QP, BAD_ADDR,
        P(create_qp.rq_addr, TOK(T_RAM_END, -512))),
    ROW("CREATE_QP second GSI QP", CREATE_QP, EXISTS,
        P(create_qp.qp_type, RS_QPT_GSI)),

    /* MODIFY_QP (command level; the state machine has its own table) */
    ROW("MODIFY_QP stale handle", MODIFY_QP, BAD_HANDLE,
        P(modify_qp.handle, TOK(T_QP_STALE, 0))),
    ROW("MODIFY_QP handle 0", MODIFY_QP, BAD_HANDLE,
        P(modify_qp.handle, 0)),
    ROW("MODIFY_QP attr_addr +4", MODIFY_QP, BAD_ALIGN,
        P(modify_qp.attr_addr, TOK(T_ATTR, 4))),
    ROW("MODIFY_QP attr_addr in BAR0", MODIFY_QP, BAD_ADDR,
        P(modify_qp.attr_addr, TOK(T_BAR0, 0))),
    ROW("MODIFY_QP attr straddles end of RAM", MODIFY_QP, BAD_ADDR,
        P(modify_qp.attr_addr, TOK(T_RAM_END, -32))),
    ROW("MODIFY_QP attr_addr far", MODIFY_QP, BAD_ADDR,
        P(modify_qp.attr_addr, FAR_ADDR)),
    ROW("MODIFY_QP attr_mask bit 21", MODIFY_QP, BAD_ATTR_MASK,
        P(modify_qp.attr_mask, RS_QP_ATTR_STATE | 1u << 21)),
    ROW("MODIFY_QP attr_mask bit 31", MODIFY_QP, BAD_ATTR_MASK,
        P(modify_qp.attr_mask, RS_QP_ATTR_STATE | 1u << 31)),

    /* DESTROY_QP */
    DESTROY("DESTROY_QP twice (stale)", DESTROY_QP, TOK(T_QP_STALE, 0),
            BAD_HANDLE),
    DESTROY("DESTROY_QP handle 0", DESTROY_QP, 0, BAD_HANDLE),
    DESTROY("DESTROY_QP index out of range", DESTROY_QP, 0x00fffffe,
            BAD_HANDLE),

    /* REG_MR */
    ROW("REG_MR stale pd", REG_MR, BAD_HANDLE,
        P(reg_mr.pd, TOK(T_PD_STALE, 0))),
    ROW("REG_MR pd 0", REG_MR, BAD_HANDLE, P(reg_mr.pd, 0)),
    ROW("REG_MR empty gid_index", REG_MR, BAD_NETID,
        P(reg_mr.gid_index, 3)),
    ROW("REG_MR gid_index out of range", REG_MR, BAD_NETID,
        P(reg_mr.gid_index, DEF_MAX_GIDS)),
    ROW("REG_MR access beyond RS_ACCESS_ALL", REG_MR, BAD_ACCESS,
        P(reg_mr.access, RS_ACCESS_UNKNOWN)),
    ROW("REG_MR access 0xffff", REG_MR, BAD_ACCESS,
        P(reg_mr.access, 0xffff)),
    ROW("REG_MR REMOTE_WRITE without LOCAL_WRITE", REG_MR, BAD_ACCESS,
        P(reg_mr.access, RS_ACCESS_REMOTE_WRITE)),
    ROW("REG_MR REMOTE_ATOMIC without LOCAL_WRITE", REG_MR, BAD_ACCESS,
        P(reg_mr.access, RS_ACCESS_REMOTE_ATOMIC | RS_ACCESS_REMOTE_READ)),
    ROW("REG_MR FLUSH_PERSISTENT (no persistence domain)", REG_MR,
        BAD_ACCESS, P(reg_mr.access, RS_ACCESS_LOCAL_WRITE |
                      RS_ACCESS_FLUSH_PERSISTENT)),
    ROW("REG_MR flags ODP with a page list", REG_MR, BAD_PARAM,
        P(reg_mr.flags, RS_MR_F_ODP)),
    ROW("REG_MR flags 0x08", REG_MR, BAD_PARAM, P(reg_mr.flags, 0x08)),
    ROW("REG_MR flags 0x80", REG_MR, BAD_PARAM, P(reg_mr.flags, 0x80)),
    ROW("REG_MR page_shift 0", REG_MR, BAD_PARAM, P(reg_mr.page_shift, 0)),
    ROW("REG_MR page_shift 11", REG_MR, BAD_PARAM,
        P(reg_mr.page_shift, 11)),
    ROW("REG_MR page_shift 31", REG_MR, BAD_PARAM,
        P(reg_mr.page_shift, 31)),
    ROW("REG_MR length 0", REG_MR, BAD_SIZE, P(reg_mr.length, 0)),
    ROW("REG_MR iova + length overflows", REG_MR, BAD_SIZE,
        P(reg_mr.iova, 0xfffffffffffff000ull)),
    ROW("REG_MR npages too small", REG_MR, BAD_SIZE, P(reg_mr.npages, 2)),
    ROW("REG_MR npages too large", REG_MR, BAD_SIZE, P(reg_mr.npages, 4)),
    ROW("REG_MR npages 0", REG_MR, BAD_SIZE, P(reg_mr.npages, 0)),
    ROW("REG_MR npages 0xffffffff", REG_MR, BAD_SIZE,
        P(reg_mr.npages, 0xffffffff)),
    ROW("REG_MR unaligned iova spans 4 pages", REG_MR, BAD_SIZE,
        P(reg_mr.iova, 0x10800)),
    ROW("REG_MR more pages than max-mr-pages", REG_MR, NO_RESOURCES,
        P(reg_mr.length, MR_PAGES_OVER * PAGE),
        P(reg_mr.npages, MR_PAGES_OVER)),
    ROW("REG_MR npages * 8 overflows 32 bits", REG_MR, NO_RESOURCES,
        P(reg_mr.length, 0x20000001ull * PAGE),
        P(reg_mr.npages, 0x20000001)),
    ROW("REG_MR pbl_addr +4", REG_MR, BAD_ALIGN,
        P(reg_mr.pbl_addr, TOK(T_PBL, 4))),
    ROW("REG_MR pbl_addr in BAR0", REG_MR, BAD_ADDR,
        P(reg_mr.pbl_addr, TOK(T_BAR0, 0))),
    ROW("REG_MR page list straddles end of RAM", REG_MR, BAD_ADDR,
        P(reg_mr.pbl_addr, TOK(T_RAM_END, -8))),
    ROW("REG_MR pbl_addr far", REG_MR, BAD_ADDR,
        P(reg_mr.pbl_addr, FAR_ADDR)),
    ROW("REG_MR page misaligned", REG_MR, BAD_ALIGN,
        P(reg_mr.pbl_addr, TOK(T_PBL_MISALIGNED, 0))),
    ROW("REG_MR page far", REG_MR, BAD_ADDR,
        P(reg_mr.pbl_addr, TOK(T_PBL_FAR, 0))),
    ROW("REG_MR page in BAR0", REG_MR, BAD_ADDR,
        P(reg_mr.pbl_addr, TOK(T_PBL_BAR0, 0))),
    ROW("REG_MR page at end of RAM", REG_MR, BAD_ADDR,
        P(reg_mr.pbl_addr, TOK(T_PBL_RAM_END, 0))),
    ROW("REG_MR 4 KiB pages for page_shift 21", REG_MR, BAD_ALIGN,
        P(reg_mr.page_shift, 21), P(reg_mr.iova, 0),
        P(reg_mr.length, 3 * 2 * MiB)),
    ROWV("REG_MR indirect: list in BAR0", REG_MR, 1, BAD_ADDR,
         P(reg_mr.pbl_addr, TOK(T_BAR0, 0))),
    ROWV("REG_MR indirect: list +4", REG_MR, 1, BAD_ALIGN,
         P(reg_mr.pbl_addr, TOK(T_IPBL, 4))),
    ROWV("REG_MR indirect: chunk misaligned", REG_MR, 1, BAD_ALIGN,
         P(reg_mr.pbl_addr, TOK(T_IPBL_MISALIGNED, 0))),
    ROWV("REG_MR indirect: chunk far", REG_MR, 1, BAD_ADDR,
         P(reg_mr.pbl_addr, TOK(T_IPBL_FAR, 0))),
    ROWV("REG_MR indirect: chunk in BAR0", REG_MR, 1, BAD_ADDR,
         P(reg_mr.pbl_addr, TOK(T_IPBL_BAR0, 0))),
    ROWV("REG_MR indirect: npages mismatch", REG_MR, 1, BAD_SIZE,
         P(reg_mr.npages, 599)),

    /* DEREG_MR */
    DESTROY("DEREG_MR lkey 0", DEREG_MR, 0, BAD_HANDLE),
    DESTROY("DEREG_MR twice (stale)", DEREG_MR, TOK(T_MR_STALE, 0),
            BAD_HANDLE),
    DESTROY("DEREG_MR wrong tag", DEREG_MR, TOK(T_MR, 1), BAD_HANDLE),
    DESTROY("DEREG_MR index max-mrs", DEREG_MR,
            DEF_MAX_MRS << RS_MKEY_INDEX_SHIFT, BAD_HANDLE),
    DESTROY("DEREG_MR index out of range", DEREG_MR, 0xffffff00,
            BAD_HANDLE),

    /* CREATE_AH / DESTROY_AH */
    ROW("CREATE_AH stale pd", CREATE_AH, BAD_HANDLE,
        P(create_ah.pd, TOK(T_PD_STALE, 0))),
    ROW("CREATE_AH empty gid_index", CREATE_AH, BAD_NETID,
        P(create_ah.gid_index, 3)),
    ROW("CREATE_AH gid_index out of range", CREATE_AH, BAD_NETID,
        P(create_ah.gid_index, 0xffffffff)),
    ROW("CREATE_AH flow_label 1 << 20", CREATE_AH, BAD_PARAM,
        P(create_ah.flow_label, 1 << 20)),
    ROW("CREATE_AH flow_label 0xffffffff", CREATE_AH, BAD_PARAM,
        P(create_ah.flow_label, 0xffffffff)),
    DESTROY("DESTROY_AH twice (stale)", DESTROY_AH, TOK(T_AH_STALE, 0),
            BAD_HANDLE),
    DESTROY("DESTROY_AH handle 0", DESTROY_AH, 0, BAD_HANDLE),

    /* CREATE_SESSION / DESTROY_SESSION */
    ROW("CREATE_SESSION empty gid_index", CREATE_SESSION, BAD_NETID,
        P(create_session.gid_index, 3)),
    ROW("CREATE_SESSION src_port 1023", CREATE_SESSION, BAD_PARAM,
        P(create_session.src_port, 1023)),
    ROW("CREATE_SESSION src_port 0", CREATE_SESSION, BAD_PARAM,
        P(create_session.src_port, 0)),
    ROW("CREATE_SESSION dst_port 0", CREATE_SESSION, BAD_PARAM,
        P(create_session.dst_port, 0)),
    ROW("CREATE_SESSION multicast dmac", CREATE_SESSION, BAD_PARAM,
        P(create_session.dmac[0], 0x01)),
    ROW("CREATE_SESSION broadcast dmac", CREATE_SESSION, BAD_PARAM,
        P(create_session.dmac[0], 0xff)),
    ROW("CREATE_SESSION duplicate tuple", CREATE_SESSION, EXISTS,
        P(create_session.src_port, 49152)),
    ROW("CREATE_SESSION duplicate tuple, other dmac", CREATE_SESSION,
        EXISTS, P(create_session.src_port, 49152),
        P(create_session.dmac[5], 0x77)),
    DESTROY("DESTROY_SESSION twice (stale)", DESTROY_SESSION,
            TOK(T_SESS_STALE, 0), BAD_HANDLE),
    DESTROY("DESTROY_SESSION in a group", DESTROY_SESSION, TOK(T_SESS, 0),
            BUSY),

    /* CREATE_SESSION_GROUP / DESTROY_SESSION_GROUP */
    ROW("CREATE_SESSION_GROUP nsessions 0", CREATE_SESSION_GROUP, BAD_PARAM,
        P(create_group.nsessions, 0)),
    ROW("CREATE_SESSION_GROUP nsessions 9", CREATE_SESSION_GROUP, BAD_PARAM,
        P(create_group.nsessions, RS_MAX_GROUP_SESSIONS + 1)),
    ROW("CREATE_SESSION_GROUP policy 2", CREATE_SESSION_GROUP, BAD_PARAM,
        P(create_group.policy, 2)),
    ROW("CREATE_SESSION_GROUP stale session", CREATE_SESSION_GROUP,
        BAD_HANDLE, P(create_group.session[1], TOK(T_SESS_STALE, 0))),
    ROW("CREATE_SESSION_GROUP session 0", CREATE_SESSION_GROUP, BAD_HANDLE,
        P(create_group.session[0], 0)),
    ROW("CREATE_SESSION_GROUP sessions of two GIDs", CREATE_SESSION_GROUP,
        BAD_PARAM, P(create_group.session[1], TOK(T_SESS_GID1, 0))),
    DESTROY("DESTROY_SESSION_GROUP twice (stale)", DESTROY_SESSION_GROUP,
            TOK(T_GROUP_STALE, 0), BAD_HANDLE),
    DESTROY("DESTROY_SESSION_GROUP bound to a QP", DESTROY_SESSION_GROUP,
            TOK(T_GROUP, 0), BUSY),

    /* ADD_GID / DEL_GID */
    ROW("ADD_GID index 16", ADD_GID, BAD_PARAM,
        P(add_gid.index, DEF_MAX_GIDS)),
    ROW("ADD_GID index 0xffffffff", ADD_GID, BAD_PARAM,
        P(add_gid.index, 0xffffffff)),
    ROW("ADD_GID type 2", ADD_GID, BAD_PARAM, P(add_gid.type, 2)),
    ROW("ADD_GID vni 1 << 24", ADD_GID, BAD_PARAM,
        P(add_gid.vni, 1 << 24)),
    ROW("ADD_GID IPv4 type, not v4-mapped", ADD_GID, BAD_PARAM,
        P(add_gid.gid[0], 0xfe)),
    ROW("ADD_GID IPv4 type, ::0:a.b.c.d", ADD_GID, BAD_PARAM,
        P(add_gid.gid[10], 0)),
    ROW("ADD_GID populated slot", ADD_GID, EXISTS, P(add_gid.index, 0)),
    DESTROY("DEL_GID index 16", DEL_GID, DEF_MAX_GIDS, BAD_HANDLE),
    DESTROY("DEL_GID empty slot", DEL_GID, 3, BAD_HANDLE),
    DESTROY("DEL_GID used by sessions", DEL_GID, 0, BUSY),
    DESTROY("DEL_GID used by one session", DEL_GID, 1, BUSY),
    DESTROY("DEL_GID used by an MR", DEL_GID, 2, BUSY),
    DESTROY("DEL_GID used by an AH", DEL_GID, 4, BUSY),
    DESTROY("DEL_GID used by a QP address vector", DEL_GID, 5, BUSY),

    /* Two faults: the check listed first wins. */
    ROW("order: QUERY_DEVICE short resp_len before BAR0 address",
        QUERY_DEVICE, BAD_SIZE, P(query.resp_len, 64),
        P(query.resp_addr, TOK(T_BAR0, 0))),
    ROW("order: QUERY_DEVICE short resp_len before alignment",
        QUERY_DEVICE, BAD_SIZE, P(query.resp_len, 8),
        P(query.resp_addr, TOK(T_SCRATCH, 4))),
    ROW("order: QUERY_DEVICE alignment before RAM", QUERY_DEVICE, BAD_ALIGN,
        P(query.resp_addr, TOK(T_BAR0, 4))),
    ROW("order: CREATE_CQ log_size before ring 0", CREATE_CQ, BAD_SIZE,
        P(create_cq.log_size, 0), P(create_cq.ring_addr, 0)),
    ROW("order: CREATE_CQ alignment before RAM", CREATE_CQ, BAD_ALIGN,
        P(create_cq.ring_addr, TOK(T_BAR0, 32))),
    ROW("order: CREATE_CQ ring before comp_vector", CREATE_CQ, BAD_ADDR,
        P(create_cq.ring_addr, TOK(T_BAR0, 0)),
        P(create_cq.comp_vector, 0xffff)),
    ROW("order: CREATE_CQ comp_vector before uar", CREATE_CQ, BAD_PARAM,
        P(create_cq.comp_vector, 0xffff), P(create_cq.uar, 0xffff)),
    ROW("order: RESIZE_CQ handle before log_size", RESIZE_CQ, BAD_HANDLE,
        P(resize_cq.handle, TOK(T_CQ_STALE, 0)), P(resize_cq.log_size, 0)),
    ROW("order: RESIZE_CQ ring before consumer_index", RESIZE_CQ, BAD_ADDR,
        P(resize_cq.ring_addr, TOK(T_BAR0, 0)),
        P(resize_cq.consumer_index, 1)),
    ROW("order: CREATE_QP DCI's receive side before pd", CREATE_QP,
        BAD_PARAM, P(create_qp.qp_type, RS_QPT_DCI), P(create_qp.pd, 0)),
    ROW("order: CREATE_QP pd before srq", CREATE_QP, BAD_HANDLE,
        P(create_qp.pd, TOK(T_PD_STALE, 0)), P(create_qp.srq, 1)),
    ROW("order: CREATE_QP srq before sq_log_size", CREATE_QP, BAD_HANDLE,
        P(create_qp.srq, 1), P(create_qp.sq_log_size, 0)),
    ROW("order: CREATE_QP sq_log_size before max_send_sge", CREATE_QP,
        BAD_SIZE, P(create_qp.sq_log_size, 0), P(create_qp.max_send_sge, 0)),
    ROW("order: CREATE_QP flags before session_group", CREATE_QP, BAD_PARAM,
        P(create_qp.flags, 0x80),
        P(create_qp.session_group, TOK(T_GROUP_STALE, 0))),
    ROW("order: CREATE_QP session_group before sq_addr", CREATE_QP,
        BAD_HANDLE, P(create_qp.session_group, TOK(T_GROUP_STALE, 0)),
        P(create_qp.sq_addr, 0)),
    ROW("order: CREATE_QP sq_addr before GSI exists", CREATE_QP, BAD_ADDR,
        P(create_qp.sq_addr, TOK(T_BAR0, 0)),
        P(create_qp.qp_type, RS_QPT_GSI)),
    ROW("order: REG_MR pd before gid_index", REG_MR, BAD_HANDLE,
        P(reg_mr.pd, TOK(T_PD_STALE, 0)), P(reg_mr.gid_index, 3)),
    ROW("order: REG_MR gid_index before access", REG_MR, BAD_NETID,
        P(reg_mr.gid_index, 3), P(reg_mr.access, RS_ACCESS_UNKNOWN)),
    ROW("order: REG_MR access before ODP", REG_MR, BAD_ACCESS,
        P(reg_mr.access, RS_ACCESS_UNKNOWN), P(reg_mr.flags, RS_MR_F_ODP)),
    ROW("order: REG_MR ODP's checks before page_shift", REG_MR, BAD_PARAM,
        P(reg_mr.flags, RS_MR_F_ODP), P(reg_mr.page_shift, 11)),
    ROW("order: REG_MR page_shift before length", REG_MR, BAD_PARAM,
        P(reg_mr.page_shift, 11), P(reg_mr.length, 0)),
    ROW("order: REG_MR npages before the page list", REG_MR, BAD_SIZE,
        P(reg_mr.npages, 2), P(reg_mr.pbl_addr, TOK(T_BAR0, 0))),
    ROW("order: REG_MR translation entries before pbl_addr", REG_MR,
        NO_RESOURCES, P(reg_mr.length, MR_PAGES_OVER * PAGE),
        P(reg_mr.npages, MR_PAGES_OVER), P(reg_mr.pbl_addr, TOK(T_PBL, 4))),
    ROW("order: REG_MR pbl alignment before RAM", REG_MR, BAD_ALIGN,
        P(reg_mr.pbl_addr, TOK(T_BAR0, 4))),
    ROW("order: CREATE_AH pd before gid_index", CREATE_AH, BAD_HANDLE,
        P(create_ah.pd, TOK(T_PD_STALE, 0)), P(create_ah.gid_index, 3)),
    ROW("order: CREATE_AH gid_index before flow_label", CREATE_AH, BAD_NETID,
        P(create_ah.gid_index, 3), P(create_ah.flow_label, 1 << 20)),
    ROW("order: CREATE_SESSION gid_index before src_port", CREATE_SESSION,
        BAD_NETID, P(create_session.gid_index, 3),
        P(create_session.src_port, 0)),
    ROW("order: CREATE_SESSION dmac before duplicate", CREATE_SESSION,
        BAD_PARAM, P(create_session.dmac[0], 0x01),
        P(create_session.src_port, 49152)),
    ROW("order: CREATE_SESSION_GROUP nsessions before sessions",
        CREATE_SESSION_GROUP, BAD_PARAM, P(create_group.nsessions, 0),
        P(create_group.session[0], 0)),
    ROW("order: CREATE_SESSION_GROUP session before GID mix",
        CREATE_SESSION_GROUP, BAD_HANDLE,
        P(create_group.session[0], TOK(T_SESS_STALE, 0)),
        P(create_group.session[1], TOK(T_SESS_GID1, 0))),
    ROW("order: ADD_GID type before populated slot", ADD_GID, BAD_PARAM,
        P(add_gid.type, 2), P(add_gid.index, 0)),
};

/* Run one command, compare the status; false with a reason if wrong. */
static bool bad_cmd_run(BadFixture *f, const BadCmdRow *row, GString *why)
{
    QRdmaSession *d = f->d;
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    uint32_t index;

    bad_template(f, row->opcode, row->variant, &cmd);
    apply_patches(f, &cmd, sizeof(cmd), row->patch, ARRAY_SIZE(row->patch));
    index = qrs_admin_submit(d, &cmd);
    if (!qrs_admin_poll(d, index, &cqe, RS_QOS_TIMEOUT_US)) {
        g_string_append(why, "no completion");
        return false;
    }
    if (cqe.status != row->status) {
        g_string_append_printf(why, "expected %s, got %s",
                               qrs_status_name(row->status),
                               qrs_status_name(cqe.status));
        return false;
    }
    return true;
}

/* After a failed row: start over from a clean device. */
static void bad_fixture_rebuild(BadFixture *f)
{
    qrs_reset(f->d);
    admin_setup(f->d);
    bad_fixture_objects(f);
}

static void test_bad_input(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    g_autoptr(GString) failures = g_string_new("");
    BadFixture f;
    int i, nfail = 0;

    bad_fixture_memory(d, &f);
    bad_fixture_objects(&f);
    for (i = 0; i < ARRAY_SIZE(bad_cmd_rows); i++) {
        const BadCmdRow *row = &bad_cmd_rows[i];
        g_autoptr(GString) why = g_string_new("");
        bool ok = bad_cmd_run(&f, row, why);

        if (ok && !device_alive(d, why)) {
            g_string_prepend(why, "device broken afterwards: ");
            ok = false;
        }
        if (!ok) {
            nfail++;
            g_string_append_printf(failures, "  %s: %s\n", row->name,
                                   why->str);
            bad_fixture_rebuild(&f);
        }
    }
    g_test_message("bad-input: %d rows, %d failed", i, nfail);
    g_assert_cmpstr(failures->str, ==, "");
}

static void register_bad_input_tests(void)
{
    qos_add_test("bad-input/commands", "rdma-session", test_bad_input, NULL);
}

libqos_init(register_bad_input_tests);
