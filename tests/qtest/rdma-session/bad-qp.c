/*
 * rdma-session qtests: bad input to the QP state machine, the allowed
 * transitions and optional attributes, bad ring configurations
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"

typedef struct BadModifyRow {
    const char *name;
    uint8_t qp_type;
    uint8_t from;               /* a fresh QP is walked there first */
    uint8_t to;                 /* attr.qp_state */
    uint32_t mask;
    uint8_t status;
    BadPatch patch[2];          /* on struct rs_qp_attr */
} BadModifyRow;

#define A(f, v) { offsetof(struct rs_qp_attr, f),                         \
                  sizeof(((struct rs_qp_attr *)NULL)->f), (v) }

#define MROW(name, type, from, to, mask, st, ...)                          \
    { name, RS_QPT_##type, RS_QPS_##from, RS_QPS_##to, mask,              \
      RS_STATUS_##st, { __VA_ARGS__ } }

#define ST      RS_QP_ATTR_STATE
#define SG      RS_QP_ATTR_SESSION_GROUP

static const BadModifyRow bad_modify_rows[] = {
    /* Transitions the IBTA table does not allow */
    MROW("RC RESET->RTR", RC, RESET, RTR, RC_RTR_MASK, BAD_STATE),
    MROW("RC RESET->RTS", RC, RESET, RTS, RC_RTS_MASK, BAD_STATE),
    MROW("RC RESET->SQD", RC, RESET, SQD, ST, BAD_STATE),
    MROW("RC RESET->SQE", RC, RESET, SQE, ST, BAD_STATE),
    MROW("RC RESET->ERR", RC, RESET, ERR, ST, BAD_STATE),
    MROW("UC RESET->ERR", UC, RESET, ERR, ST, BAD_STATE),
    MROW("UD RESET->ERR", UD, RESET, ERR, ST, BAD_STATE),
    MROW("GSI RESET->ERR", GSI, RESET, ERR, ST, BAD_STATE),
    MROW("RC INIT->RTS", RC, INIT, RTS, RC_RTS_MASK, BAD_STATE),
    MROW("RC INIT->SQD", RC, INIT, SQD, ST, BAD_STATE),
    MROW("RC RTR->INIT", RC, RTR, INIT, ST, BAD_STATE),
    MROW("RC RTR->RTR", RC, RTR, RTR, ST, BAD_STATE),
    MROW("RC RTR->RTR (no STATE in mask)", RC, RTR, RTR, 0, BAD_STATE),
    MROW("RC RTR->SQD", RC, RTR, SQD, ST, BAD_STATE),
    MROW("RC RTS->INIT", RC, RTS, INIT, ST, BAD_STATE),
    MROW("RC RTS->RTR", RC, RTS, RTR, RC_RTR_MASK, BAD_STATE),
    MROW("RC RTS->SQE", RC, RTS, SQE, ST, BAD_STATE),
    MROW("RC SQD->INIT", RC, SQD, INIT, ST, BAD_STATE),
    MROW("RC SQD->RTR", RC, SQD, RTR, ST, BAD_STATE),
    MROW("RC ERR->INIT", RC, ERR, INIT, RC_INIT_MASK, BAD_STATE),
    MROW("RC ERR->RTS", RC, ERR, RTS, RC_RTS_MASK, BAD_STATE),
    MROW("RC ERR->SQD", RC, ERR, SQD, ST, BAD_STATE),
    MROW("UC RTR->INIT", UC, RTR, INIT, ST, BAD_STATE),
    MROW("UD RESET->RTS", UD, RESET, RTS, UD_RTS_MASK, BAD_STATE),
    MROW("UD ERR->RTS", UD, ERR, RTS, UD_RTS_MASK, BAD_STATE),
    MROW("GSI INIT->RTS", GSI, INIT, RTS, UD_RTS_MASK, BAD_STATE),
    MROW("RC CUR_STATE mismatch (RESET->INIT)", RC, RESET, INIT,
         RC_INIT_MASK | RS_QP_ATTR_CUR_STATE, BAD_STATE,
         A(cur_qp_state, RS_QPS_INIT)),
    MROW("RC CUR_STATE mismatch (RTR->RTS)", RC, RTR, RTS,
         RC_RTS_MASK | RS_QP_ATTR_CUR_STATE, BAD_STATE,
         A(cur_qp_state, RS_QPS_RTS)),
    MROW("UD CUR_STATE mismatch (RTS->RTS)", UD, RTS, RTS,
         ST | RS_QP_ATTR_CUR_STATE, BAD_STATE, A(cur_qp_state, RS_QPS_SQD)),

    /* Target state out of range */
    MROW("RC qp_state 7", RC, RESET, RESET, ST, BAD_PARAM,
         A(qp_state, 7)),
    MROW("RC qp_state 0xff", RC, INIT, INIT, ST, BAD_PARAM,
         A(qp_state, 0xff)),

    /* Attribute masks */
    MROW("RC unknown mask bit 21", RC, RESET, INIT,
         RC_INIT_MASK | 1u << 21, BAD_ATTR_MASK),
    MROW("RC unknown mask bit 31", RC, RESET, INIT,
         RC_INIT_MASK | 1u << 31, BAD_ATTR_MASK),
    MROW("RC RESET->INIT without ACCESS_FLAGS", RC, RESET, INIT,
         RC_INIT_MASK & ~RS_QP_ATTR_ACCESS_FLAGS, BAD_ATTR_MASK),
    MROW("RC RESET->INIT without PORT", RC, RESET, INIT,
         RC_INIT_MASK & ~RS_QP_ATTR_PORT, BAD_ATTR_MASK),
    MROW("RC RESET->INIT without PKEY_INDEX", RC, RESET, INIT,
         RC_INIT_MASK & ~RS_QP_ATTR_PKEY_INDEX, BAD_ATTR_MASK),
    MROW("RC RESET->INIT with QKEY", RC, RESET, INIT,
         RC_INIT_MASK | RS_QP_ATTR_QKEY, BAD_ATTR_MASK),
    MROW("RC RESET->INIT with AV", RC, RESET, INIT,
         RC_INIT_MASK | RS_QP_ATTR_AV, BAD_ATTR_MASK),
    MROW("RC RESET->INIT with SQ_PSN", RC, RESET, INIT,
         RC_INIT_MASK | RS_QP_ATTR_SQ_PSN, BAD_ATTR_MASK),
    MROW("UC RESET->INIT with QKEY", UC, RESET, INIT,
         RC_INIT_MASK | RS_QP_ATTR_QKEY, BAD_ATTR_MASK),
    MROW("UD RESET->INIT without QKEY", UD, RESET, INIT,
         UD_INIT_MASK & ~RS_QP_ATTR_QKEY, BAD_ATTR_MASK),
    MROW("UD RESET->INIT with ACCESS_FLAGS", UD, RESET, INIT,
         UD_INIT_MASK | RS_QP_ATTR_ACCESS_FLAGS, BAD_ATTR_MASK),
    MROW("GSI RESET->INIT without QKEY", GSI, RESET, INIT,
         GSI_INIT_MASK & ~RS_QP_ATTR_QKEY, BAD_ATTR_MASK),
    MROW("GSI RESET->INIT without PKEY_INDEX", GSI, RESET, INIT,
         GSI_INIT_MASK & ~RS_QP_ATTR_PKEY_INDEX, BAD_ATTR_MASK),
    MROW("GSI RESET->INIT with PORT", GSI, RESET, INIT,
         GSI_INIT_MASK | RS_QP_ATTR_PORT, BAD_ATTR_MASK),
    MROW("GSI RESET->INIT with ACCESS_FLAGS", GSI, RESET, INIT,
         GSI_INIT_MASK | RS_QP_ATTR_ACCESS_FLAGS, BAD_ATTR_MASK),
    MROW("GSI RESET->INIT with SESSION_GROUP", GSI, RESET, INIT,
         GSI_INIT_MASK | SG, BAD_ATTR_MASK),
    MROW("RC INIT->RTR without AV", RC, INIT, RTR,
         RC_RTR_MASK & ~RS_QP_ATTR_AV, BAD_ATTR_MASK),
    MROW("RC INIT->RTR without MAX_DEST_RD_ATOMIC", RC, INIT, RTR,
         RC_RTR_MASK & ~RS_QP_ATTR_MAX_DEST_RD_ATOMIC, BAD_ATTR_MASK),
    MROW("RC INIT->RTR without MIN_RNR_TIMER", RC, INIT, RTR,
         RC_RTR_MASK & ~RS_QP_ATTR_MIN_RNR_TIMER, BAD_ATTR_MASK),
    MROW("UC INIT->RTR without DEST_QPN", UC, INIT, RTR,
         UC_RTR_MASK & ~RS_QP_ATTR_DEST_QPN, BAD_ATTR_MASK),
    MROW("UC INIT->RTR with MAX_DEST_RD_ATOMIC", UC, INIT, RTR,
         UC_RTR_MASK | RS_QP_ATTR_MAX_DEST_RD_ATOMIC, BAD_ATTR_MASK),
    MROW("UD INIT->RTR with AV", UD, INIT, RTR, ST | RS_QP_ATTR_AV,
         BAD_ATTR_MASK),
    MROW("RC RTR->RTS without SQ_PSN", RC, RTR, RTS,
         RC_RTS_MASK & ~RS_QP_ATTR_SQ_PSN, BAD_ATTR_MASK),
    MROW("RC RTR->RTS without TIMEOUT", RC, RTR, RTS,
         RC_RTS_MASK & ~RS_QP_ATTR_TIMEOUT, BAD_ATTR_MASK),
    MROW("RC RTR->RTS without RETRY_CNT", RC, RTR, RTS,
         RC_RTS_MASK & ~RS_QP_ATTR_RETRY_CNT, BAD_ATTR_MASK),
    MROW("RC RTR->RTS without RNR_RETRY", RC, RTR, RTS,
         RC_RTS_MASK & ~RS_QP_ATTR_RNR_RETRY, BAD_ATTR_MASK),
    MROW("RC RTR->RTS without MAX_QP_RD_ATOMIC", RC, RTR, RTS,
         RC_RTS_MASK & ~RS_QP_ATTR_MAX_QP_RD_ATOMIC, BAD_ATTR_MASK),
    MROW("UC RTR->RTS with TIMEOUT", UC, RTR, RTS,
         UD_RTS_MASK | RS_QP_ATTR_TIMEOUT, BAD_ATTR_MASK),
    MROW("UD RTR->RTS without SQ_PSN", UD, RTR, RTS, ST, BAD_ATTR_MASK),
    MROW("RC RTS->RTS with AV", RC, RTS, RTS, ST | RS_QP_ATTR_AV,
         BAD_ATTR_MASK),
    MROW("RC RTS->SQD with SESSION_GROUP", RC, RTS, SQD, ST | SG,
         BAD_ATTR_MASK),
    MROW("RC RTS->ERR with ACCESS_FLAGS", RC, RTS, ERR,
         ST | RS_QP_ATTR_ACCESS_FLAGS, BAD_ATTR_MASK),
    MROW("RC INIT->RESET with QKEY", RC, INIT, RESET,
         ST | RS_QP_ATTR_QKEY, BAD_ATTR_MASK),

    /* Attribute values */
    MROW("RC port_num 0", RC, RESET, INIT, RC_INIT_MASK, BAD_PARAM,
         A(port_num, 0)),
    MROW("RC port_num 2", RC, RESET, INIT, RC_INIT_MASK, BAD_PARAM,
         A(port_num, 2)),
    MROW("RC pkey_index 1", RC, RESET, INIT, RC_INIT_MASK, BAD_PARAM,
         A(pkey_index, 1)),
    MROW("UD port_num 2", UD, RESET, INIT, UD_INIT_MASK, BAD_PARAM,
         A(port_num, 2)),
    MROW("RC path_mtu 0", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(path_mtu, 0)),
    MROW("RC path_mtu 6", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(path_mtu, 6)),
    MROW("RC rq_psn 1 << 24", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(rq_psn, 1 << 24)),
    MROW("RC dest_qp_num 1 << 24", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(dest_qp_num, 1 << 24)),
    MROW("RC max_dest_rd_atomic 17", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(max_dest_rd_atomic, RS_MAX_RD_ATOMIC + 1)),
    MROW("RC min_rnr_timer 32", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(min_rnr_timer, 32)),
    MROW("RC ah.flow_label 1 << 20", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(ah.flow_label, 1 << 20)),
    MROW("UC path_mtu 0xff", UC, INIT, RTR, UC_RTR_MASK, BAD_PARAM,
         A(path_mtu, 0xff)),
    MROW("RC sq_psn 1 << 24", RC, RTR, RTS, RC_RTS_MASK, BAD_PARAM,
         A(sq_psn, 1 << 24)),
    MROW("RC timeout 32", RC, RTR, RTS, RC_RTS_MASK, BAD_PARAM,
         A(timeout, 32)),
    MROW("RC retry_cnt 8", RC, RTR, RTS, RC_RTS_MASK, BAD_PARAM,
         A(retry_cnt, 8)),
    MROW("RC rnr_retry 8", RC, RTR, RTS, RC_RTS_MASK, BAD_PARAM,
         A(rnr_retry, 8)),
    MROW("RC max_rd_atomic 17", RC, RTR, RTS, RC_RTS_MASK, BAD_PARAM,
         A(max_rd_atomic, RS_MAX_RD_ATOMIC + 1)),
    MROW("UD sq_psn 0xffffffff", UD, RTR, RTS, UD_RTS_MASK, BAD_PARAM,
         A(sq_psn, 0xffffffff)),
    MROW("RC access_flags beyond RS_ACCESS_ALL", RC, RESET, INIT,
         RC_INIT_MASK, BAD_ACCESS, A(access_flags, RS_ACCESS_UNKNOWN)),
    MROW("RC access_flags 0xffff", RC, RESET, INIT, RC_INIT_MASK,
         BAD_ACCESS, A(access_flags, 0xffff)),
    MROW("RC INIT->INIT access_flags beyond RS_ACCESS_ALL", RC, INIT, INIT,
         RS_QP_ATTR_ACCESS_FLAGS, BAD_ACCESS,
         A(access_flags, RS_ACCESS_UNKNOWN << 1)),
    MROW("RC ah.gid_index empty", RC, INIT, RTR, RC_RTR_MASK, BAD_NETID,
         A(ah.gid_index, 3)),
    MROW("UC ah.gid_index out of range", UC, INIT, RTR, UC_RTR_MASK,
         BAD_NETID, A(ah.gid_index, DEF_MAX_GIDS)),
    MROW("RC stale session_group", RC, RESET, INIT, RC_INIT_MASK | SG,
         BAD_HANDLE, A(session_group, TOK(T_GROUP_STALE, 0))),
    MROW("UD session_group out of range", UD, RTS, RTS, ST | SG,
         BAD_HANDLE, A(session_group, 0x00fffffe)),

    /* Two faults: the check listed first wins. */
    MROW("order: unknown mask bit before CUR_STATE", RC, RESET, INIT,
         RC_INIT_MASK | RS_QP_ATTR_CUR_STATE | 1u << 22, BAD_ATTR_MASK,
         A(cur_qp_state, RS_QPS_RTS)),
    MROW("order: CUR_STATE before target state", RC, RESET, INIT,
         ST | RS_QP_ATTR_CUR_STATE, BAD_STATE,
         A(cur_qp_state, RS_QPS_RTS), A(qp_state, 9)),
    MROW("order: target state before transition", RC, RTS, RTS, ST,
         BAD_PARAM, A(qp_state, 7)),
    MROW("order: transition before attribute mask", RC, RESET, RTS, ST,
         BAD_STATE),
    MROW("order: attribute mask before values", RC, RESET, INIT,
         RC_INIT_MASK & ~RS_QP_ATTR_PORT, BAD_ATTR_MASK,
         A(pkey_index, 5)),
    MROW("order: BAD_PARAM values before access flags", RC, RESET, INIT,
         RC_INIT_MASK, BAD_PARAM, A(port_num, 2),
         A(access_flags, RS_ACCESS_UNKNOWN)),
    MROW("order: access flags before session group", RC, RESET, INIT,
         RC_INIT_MASK | SG, BAD_ACCESS, A(access_flags, RS_ACCESS_UNKNOWN),
         A(session_group, TOK(T_GROUP_STALE, 0))),
    MROW("order: GID before session group", RC, INIT, RTR,
         RC_RTR_MASK | SG, BAD_NETID, A(ah.gid_index, 3),
         A(session_group, TOK(T_GROUP_STALE, 0))),
};

static bool bad_modify_run(BadFixture *f, const BadModifyRow *row,
                           GString *why)
{
    QRdmaSession *d = f->d;
    struct rs_cmd_create_qp c = f->qp_tmpl;
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    struct rs_qp_attr a;
    uint32_t qp, index;
    uint8_t expect = row->from;
    bool ok = true;

    c.qp_type = row->qp_type;
    qp = new_qp(d, &c);
    qp_walk(d, qp, row->qp_type, row->from);

    std_attr(&a, row->from, row->to);
    apply_patches(f, &a, sizeof(a), row->patch, ARRAY_SIZE(row->patch));
    qrs_qp_attr_to_le(&a);
    qtest_memwrite(qrs_qts(d), f->tok[T_ATTR], &a, sizeof(a));
    cmd_init(&cmd, RS_CMD_MODIFY_QP);
    cmd.modify_qp.attr_addr = f->tok[T_ATTR];
    cmd.modify_qp.handle = qp;
    cmd.modify_qp.attr_mask = row->mask;
    index = qrs_admin_submit(d, &cmd);
    if (!qrs_admin_poll(d, index, &cqe, RS_QOS_TIMEOUT_US)) {
        g_string_append(why, "no completion");
        return false;
    }
    if (cqe.status != row->status) {
        g_string_append_printf(why, "expected %s, got %s",
                               qrs_status_name(row->status),
                               qrs_status_name(cqe.status));
        ok = false;
    }
    /* A refused MODIFY_QP leaves the QP where it was. */
    if (row->status == RS_STATUS_OK && (row->mask & RS_QP_ATTR_STATE)) {
        expect = row->to;
    }
    if (qrs_query_qp(d, qp, &a) != RS_STATUS_OK || a.qp_state != expect) {
        g_string_append_printf(why, "%sQP state %u afterwards, not %u",
                               ok ? "" : "; ", a.qp_state, expect);
        ok = false;
    }
    if (qrs_destroy(d, RS_CMD_DESTROY_QP, qp) != RS_STATUS_OK) {
        g_string_append(why, "; DESTROY_QP failed");
        ok = false;
    }
    return ok;
}

/* PD, CQ, GID 0 and a session group; no GSI QP so rows may create one. */
static void bad_modify_fixture(QRdmaSession *d, BadFixture *f)
{
    uint64_t *t = f->tok;
    uint32_t s;

    add_gid_v4(d, 0, 1);
    t[T_PD] = new_pd(d);
    t[T_CQ] = new_cq(d, 4);
    s = new_session(d, 0, 49152);
    t[T_GROUP] = new_group(d, RS_GROUP_ROUND_ROBIN, s, 0);
    t[T_GROUP_STALE] = new_group(d, RS_GROUP_ROUND_ROBIN, s, 0);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP,
                             t[T_GROUP_STALE]));
    qp_template(d, &f->qp_tmpl, RS_QPT_RC, t[T_PD], t[T_CQ], t[T_CQ]);
}

/* Run @rows on fresh QPs; returns the failures, one line each. */
static int run_modify_rows(QRdmaSession *d, BadFixture *f,
                           const BadModifyRow *rows, int n,
                           GString *failures)
{
    int i, nfail = 0;

    for (i = 0; i < n; i++) {
        g_autoptr(GString) why = g_string_new("");
        bool ok = bad_modify_run(f, &rows[i], why);

        if (ok && !device_alive(d, why)) {
            g_string_prepend(why, "device broken afterwards: ");
            ok = false;
        }
        if (!ok) {
            nfail++;
            g_string_append_printf(failures, "  %s: %s\n", rows[i].name,
                                   why->str);
            qrs_reset(d);
            admin_setup(d);
            bad_modify_fixture(d, f);
        }
    }
    return nfail;
}

static void modify_fixture_init(QRdmaSession *d, BadFixture *f)
{
    memset(f, 0, sizeof(*f));
    f->d = d;
    f->tok[T_ATTR] = qrs_alloc_zeroed(d, PAGE);
    bad_modify_fixture(d, f);
}

static void test_bad_qp_modify(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    g_autoptr(GString) failures = g_string_new("");
    BadFixture f;
    int nfail;

    modify_fixture_init(d, &f);
    nfail = run_modify_rows(d, &f, bad_modify_rows,
                            ARRAY_SIZE(bad_modify_rows), failures);
    g_test_message("bad-qp-modify: %d rows, %d failed",
                   (int)ARRAY_SIZE(bad_modify_rows), nfail);
    g_assert_cmpstr(failures->str, ==, "");
}

/* Allowed transitions, for every QP type (RESET -> ERR is not one). */
static const struct {
    uint8_t from, to;
} good_transitions[] = {
    { RS_QPS_RESET, RS_QPS_RESET }, { RS_QPS_RESET, RS_QPS_INIT },
    { RS_QPS_INIT, RS_QPS_INIT },
    { RS_QPS_INIT, RS_QPS_RTR }, { RS_QPS_INIT, RS_QPS_RESET },
    { RS_QPS_INIT, RS_QPS_ERR }, { RS_QPS_RTR, RS_QPS_RTS },
    { RS_QPS_RTR, RS_QPS_RESET }, { RS_QPS_RTR, RS_QPS_ERR },
    { RS_QPS_RTS, RS_QPS_RTS }, { RS_QPS_RTS, RS_QPS_SQD },
    { RS_QPS_RTS, RS_QPS_RESET }, { RS_QPS_RTS, RS_QPS_ERR },
    { RS_QPS_SQD, RS_QPS_RTS }, { RS_QPS_SQD, RS_QPS_SQD },
    { RS_QPS_SQD, RS_QPS_RESET }, { RS_QPS_SQD, RS_QPS_ERR },
    { RS_QPS_ERR, RS_QPS_RESET }, { RS_QPS_ERR, RS_QPS_ERR },
};

#define PK      RS_QP_ATTR_PKEY_INDEX
#define QK      RS_QP_ATTR_QKEY
#define AC      RS_QP_ATTR_ACCESS_FLAGS
#define CS      RS_QP_ATTR_CUR_STATE
#define RNR     RS_QP_ATTR_MIN_RNR_TIMER

/* Optional attributes (Linux's qp_state_table, plus SESSION_GROUP). */
static const BadModifyRow good_optional_rows[] = {
    MROW("RC INIT->INIT PKEY_INDEX|PORT|ACCESS_FLAGS", RC, INIT, INIT,
         ST | PK | RS_QP_ATTR_PORT | AC, OK),
    MROW("UD INIT->INIT PKEY_INDEX|PORT|QKEY", UD, INIT, INIT,
         ST | PK | RS_QP_ATTR_PORT | QK, OK),
    MROW("GSI INIT->INIT PKEY_INDEX|QKEY", GSI, INIT, INIT, ST | PK | QK,
         OK),
    MROW("RC INIT->RTR + ACCESS_FLAGS|PKEY_INDEX", RC, INIT, RTR,
         RC_RTR_MASK | AC | PK, OK),
    MROW("UC INIT->RTR + ACCESS_FLAGS|PKEY_INDEX", UC, INIT, RTR,
         UC_RTR_MASK | AC | PK, OK),
    MROW("UD INIT->RTR PKEY_INDEX|QKEY", UD, INIT, RTR, ST | PK | QK, OK),
    MROW("GSI INIT->RTR PKEY_INDEX|QKEY", GSI, INIT, RTR, ST | PK | QK, OK),
    MROW("RC RTR->RTS + CUR_STATE|ACCESS_FLAGS|MIN_RNR_TIMER", RC, RTR,
         RTS, RC_RTS_MASK | CS | AC | RNR, OK),
    MROW("UC RTR->RTS + CUR_STATE|ACCESS_FLAGS", UC, RTR, RTS,
         UD_RTS_MASK | CS | AC, OK),
    MROW("UD RTR->RTS + CUR_STATE|QKEY", UD, RTR, RTS,
         UD_RTS_MASK | CS | QK, OK),
    MROW("GSI RTR->RTS + CUR_STATE|QKEY", GSI, RTR, RTS,
         UD_RTS_MASK | CS | QK, OK),
    MROW("RC RTS->RTS CUR_STATE|ACCESS_FLAGS|MIN_RNR_TIMER", RC, RTS, RTS,
         ST | CS | AC | RNR, OK),
    MROW("UC RTS->RTS CUR_STATE|ACCESS_FLAGS", UC, RTS, RTS, ST | CS | AC,
         OK),
    MROW("UD RTS->RTS CUR_STATE|QKEY", UD, RTS, RTS, ST | CS | QK, OK),
    MROW("RC RTS->SQD EN_SQD_ASYNC_NOTIFY", RC, RTS, SQD,
         ST | RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, OK),
    MROW("UC RTS->SQD EN_SQD_ASYNC_NOTIFY", UC, RTS, SQD,
         ST | RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, OK),
    MROW("UD RTS->SQD EN_SQD_ASYNC_NOTIFY", UD, RTS, SQD,
         ST | RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, OK),
    MROW("GSI RTS->SQD EN_SQD_ASYNC_NOTIFY", GSI, RTS, SQD,
         ST | RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, OK),
    MROW("RC SQD->RTS CUR_STATE|ACCESS_FLAGS|MIN_RNR_TIMER", RC, SQD, RTS,
         ST | CS | AC | RNR, OK),
    MROW("UD SQD->RTS CUR_STATE|QKEY", UD, SQD, RTS, ST | CS | QK, OK),
    MROW("RC SQD->SQD path and limits", RC, SQD, SQD,
         ST | RS_QP_ATTR_PORT | RS_QP_ATTR_AV | RS_QP_ATTR_TIMEOUT |
         RS_QP_ATTR_RETRY_CNT | RS_QP_ATTR_RNR_RETRY |
         RS_QP_ATTR_MAX_QP_RD_ATOMIC | RS_QP_ATTR_MAX_DEST_RD_ATOMIC |
         AC | PK | RNR, OK),
    MROW("UC SQD->SQD AV|ACCESS_FLAGS|PKEY_INDEX", UC, SQD, SQD,
         ST | RS_QP_ATTR_AV | AC | PK, OK),
    MROW("UD SQD->SQD PKEY_INDEX|QKEY", UD, SQD, SQD, ST | PK | QK, OK),
    MROW("GSI SQD->SQD PKEY_INDEX|QKEY", GSI, SQD, SQD, ST | PK | QK, OK),
    MROW("RC RESET->INIT + SESSION_GROUP", RC, RESET, INIT,
         RC_INIT_MASK | SG, OK, A(session_group, TOK(T_GROUP, 0))),
    MROW("UC INIT->INIT SESSION_GROUP", UC, INIT, INIT, SG, OK,
         A(session_group, TOK(T_GROUP, 0))),
    MROW("UD INIT->RTR + SESSION_GROUP", UD, INIT, RTR, ST | SG, OK,
         A(session_group, TOK(T_GROUP, 0))),
    MROW("RC RTR->RTS + SESSION_GROUP", RC, RTR, RTS, RC_RTS_MASK | SG, OK,
         A(session_group, TOK(T_GROUP, 0))),
    MROW("UD RTS->RTS SESSION_GROUP", UD, RTS, RTS, ST | SG, OK,
         A(session_group, TOK(T_GROUP, 0))),
    MROW("RC SQD->RTS + SESSION_GROUP", RC, SQD, RTS, ST | SG, OK,
         A(session_group, TOK(T_GROUP, 0))),
    MROW("UC SQD->SQD SESSION_GROUP", UC, SQD, SQD, ST | SG, OK,
         A(session_group, TOK(T_GROUP, 0))),
};

static void test_qp_transitions(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    static const char *const type_names[] = { "RC", "UC", "UD", "GSI" };
    static const char *const state_names[] = {
        "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
    };
    QRdmaSession *d = admin_setup(obj);
    g_autoptr(GString) failures = g_string_new("");
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    int ntypes = ARRAY_SIZE(type_names);
    int n = ntypes * ARRAY_SIZE(good_transitions);
    g_autofree BadModifyRow *rows = g_new0(BadModifyRow, n);
    BadFixture f;
    int t, i, nfail;

    for (t = 0; t < ntypes; t++) {
        for (i = 0; i < ARRAY_SIZE(good_transitions); i++) {
            BadModifyRow *r = &rows[t * ARRAY_SIZE(good_transitions) + i];
            uint8_t from = good_transitions[i].from;
            uint8_t to = good_transitions[i].to;
            char *name = g_strdup_printf("%s %s->%s", type_names[t],
                                         state_names[from],
                                         state_names[to]);

            g_ptr_array_add(names, name);
            r->name = name;
            r->qp_type = t;
            r->from = from;
            r->to = to;
            r->mask = std_mask(t, from, to);
            r->status = RS_STATUS_OK;
        }
    }

    modify_fixture_init(d, &f);
    nfail = run_modify_rows(d, &f, rows, n, failures);
    nfail += run_modify_rows(d, &f, good_optional_rows,
                             ARRAY_SIZE(good_optional_rows), failures);
    g_test_message("qp-transitions: %d rows, %d failed",
                   n + (int)ARRAY_SIZE(good_optional_rows), nfail);
    g_assert_cmpstr(failures->str, ==, "");
}

typedef struct BadRingRow {
    const char *name;
    uint32_t reg;               /* *_BASE_LO: a 64-bit base, else a CFG */
    uint64_t value;
} BadRingRow;

static const BadRingRow bad_ring_rows[] = {
    { "ADMQ base 0", A_RS_ADMQ_BASE_LO, 0 },
    { "ADMQ base +32", A_RS_ADMQ_BASE_LO, TOK(T_RING_ADMQ, 32) },
    { "ADMQ base +8", A_RS_ADMQ_BASE_LO, TOK(T_RING_ADMQ, 8) },
    { "ADMQ log 0", A_RS_ADMQ_CFG, 0 },
    { "ADMQ log 13", A_RS_ADMQ_CFG, RS_MAX_ADMQ_LOG + 1 },
    { "ADMQ log 31", A_RS_ADMQ_CFG, 31 },
    { "ADMQ in BAR0", A_RS_ADMQ_BASE_LO, TOK(T_BAR0, 0) },
    { "ADMQ in BAR2", A_RS_ADMQ_BASE_LO, TOK(T_BAR2, 0) },
    { "ADMQ at end of RAM", A_RS_ADMQ_BASE_LO, TOK(T_RAM_END, 0) },
    { "ADMQ straddles end of RAM", A_RS_ADMQ_BASE_LO,
      TOK(T_RAM_END, -1024) },
    { "ADMQ far", A_RS_ADMQ_BASE_LO, FAR_ADDR },
    { "ADMQ above 4 GiB", A_RS_ADMQ_BASE_LO, 0x100100000ull },
    { "ACQ base +16", A_RS_ACQ_BASE_LO, TOK(T_RING_ACQ, 16) },
    { "ACQ in BAR0", A_RS_ACQ_BASE_LO, TOK(T_BAR0, 0) },
    { "ACQ straddles end of RAM", A_RS_ACQ_BASE_LO, TOK(T_RAM_END, -256) },
    { "ACQ far", A_RS_ACQ_BASE_LO, FAR_ADDR },
    { "ACQ vector 5", A_RS_ACQ_CFG, DEF_NUM_MSIX },
    { "ACQ vector 0x7ff", A_RS_ACQ_CFG, 0x7ff },
    { "AEQ base +32", A_RS_AEQ_BASE_LO, TOK(T_RING_AEQ, 32) },
    { "AEQ log 0", A_RS_AEQ_CFG, 0 },
    { "AEQ log 13", A_RS_AEQ_CFG, RS_MAX_AEQ_LOG + 1 },
    { "AEQ in BAR2", A_RS_AEQ_BASE_LO, TOK(T_BAR2, 0) },
    { "AEQ at end of RAM", A_RS_AEQ_BASE_LO, TOK(T_RAM_END, 0) },
    { "AEQ straddles end of RAM", A_RS_AEQ_BASE_LO, TOK(T_RAM_END, -128) },
    { "AEQ vector 5", A_RS_AEQ_CFG,
      RS_QOS_AEQ_LOG | DEF_NUM_MSIX << R_RS_AEQ_CFG_VECTOR_SHIFT },
    { "AEQ vector 0x7ff", A_RS_AEQ_CFG,
      RS_QOS_AEQ_LOG | 0x7ff << R_RS_AEQ_CFG_VECTOR_SHIFT },
};

static void test_bad_ring_config(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    g_autoptr(GString) failures = g_string_new("");
    BadFixture f;
    int i;

    memset(&f, 0, sizeof(f));
    f.d = d;
    f.tok[T_BAR0] = d->bar0.addr;
    f.tok[T_BAR2] = d->bar2.addr;
    f.tok[T_RAM_END] = ram_end(d);

    for (i = 0; i < ARRAY_SIZE(bad_ring_rows); i++) {
        const BadRingRow *row = &bad_ring_rows[i];
        uint32_t status, code;
        uint64_t v;

        qrs_admin_configure(d, RS_QOS_ADMQ_LOG, RS_QOS_AEQ_LOG, 0, 0);
        f.tok[T_RING_ADMQ] = d->admq;
        f.tok[T_RING_ACQ] = d->acq;
        f.tok[T_RING_AEQ] = d->aeq;
        v = resolve(&f, row->value);
        if (row->reg == A_RS_ADMQ_BASE_LO || row->reg == A_RS_ACQ_BASE_LO ||
            row->reg == A_RS_AEQ_BASE_LO) {
            qrs_writel(d, row->reg, v & 0xffffffffu);
            qrs_writel(d, row->reg + 4, v >> 32);
        } else {
            qrs_writel(d, row->reg, v);
        }
        qrs_writel(d, A_RS_CTRL, R_RS_CTRL_ENABLE_MASK);

        status = qrs_readl(d, A_RS_STATUS);
        code = qrs_readl(d, A_RS_FATAL_CODE);
        if ((status & (R_RS_STATUS_FATAL_MASK | R_RS_STATUS_READY_MASK)) !=
            R_RS_STATUS_FATAL_MASK || code != RS_FATAL_BAD_RING_CONFIG) {
            g_string_append_printf(failures,
                                   "  %s: STATUS=0x%x FATAL_CODE=%u\n",
                                   row->name, status, code);
        } else {
            /* Not READY: the doorbell is ignored. */
            qrs_writel(d, A_RS_ADMQ_DB, 1);
            if (qrs_readl(d, A_RS_ADMQ_CI) != 0) {
                g_string_append_printf(failures,
                                       "  %s: ADMQ_CI moved while FATAL\n",
                                       row->name);
            }
        }

        /* Cleared by CTRL.RESET or by writing ENABLE=0 (alternating). */
        qrs_writel(d, A_RS_CTRL, i & 1 ? R_RS_CTRL_RESET_MASK : 0);
        g_assert_cmphex(qrs_readl(d, A_RS_CTRL), ==, 0);
        g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==,
                        R_RS_STATUS_LINK_UP_MASK);
        g_assert_cmphex(qrs_readl(d, A_RS_FATAL_CODE), ==, RS_FATAL_NONE);
        admin_setup(d);
        assert_alive(d);
        qrs_reset(d);
    }
    g_test_message("bad-ring-config: %d rows", i);
    g_assert_cmpstr(failures->str, ==, "");
}

static void register_bad_qp_tests(void)
{
    qos_add_test("bad-input/ring-config", "rdma-session",
                 test_bad_ring_config, NULL);
    qos_add_test("bad-input/qp-modify", "rdma-session",
                 test_bad_qp_modify, NULL);
    qos_add_test("bad-input/qp-transitions", "rdma-session",
                 test_qp_transitions, NULL);
}

libqos_init(register_bad_qp_tests);
