/*
 * rdma-session qtests: two adapters, one of them (or the wire) hostile:
 * protection checks, malformed frames, floods
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

/* Each adapter's PD of identity 1. */
static uint32_t vni1_pd[2];

/*
 * The host puts 10.0.1.0/24 in identity 1 (VNI 1) on both adapters (each
 * driver hears of it); GID 1 (10.0.1.x) lands there; a PD of identity 1
 * and the buffers' MRs in it.
 */
static void pair_add_vni1(Pair *pr)
{
    struct rs_event ev;
    int i;

    rs_qom_set_all(qrs_qts(pr->p[0].d), "netids", "10.0.1.0/24=1");
    for (i = 0; i < 2; i++) {
        Peer *p = &pr->p[i];

        g_assert_true(qrs_aeq_poll(p->d, &ev, 1000000));
        g_assert_cmpuint(ev.type, ==, RS_EV_NETID_CHANGED);
        g_assert_cmpuint(ev.handle, ==, 1);
        g_assert_cmpuint(ev.data, ==, 1);
        add_gid_v4(p->d, 1, i + 1);
        vni1_pd[i] = new_pd_netid(p->d, 1);
        p->key[1] = eng_mr(p->d, vni1_pd[i], 1, p->buf, PAIR_BUF,
                           STD_ACCESS);
    }
}

/*
 * Protection matrix.  Each row runs one work request from A on a fresh RC
 * pair and checks the requester's completion, the NAK B answered with,
 * both QPs' states, B's receive completion if the request consumed one,
 * and both buffers byte by byte (a request that fails changes nothing).
 */
enum {
    PROT_WIN,               /* B: 2 pages at buf + 2 pages, all rights */
    PROT_WIN_NO_RW,         /* the same range without REMOTE_WRITE */
    PROT_WIN_NO_RR,         /* ... without REMOTE_READ */
    PROT_WIN_PD2,           /* ... in another PD */
    PROT_WIN_VNI1,          /* ... in a PD of identity 1 (VNI 1) */
    PROT_TOP,               /* IOVA 2^64 - 8 KiB, 8 KiB - 1 bytes */
    PROT_STALE,             /* a deregistered key: same index, old tag */
    PROT_UNUSED,            /* an index never registered */
    PROT_BAD_INDEX,         /* an index past the table */
    PROT_ZERO,              /* key 0 */
    PROT_NR,
};

enum {
    LOCAL_OK,
    LOCAL_BAD_KEY,          /* A's key with another tag */
    LOCAL_OTHER_PD,         /* an MR of A's buffer in another PD */
    LOCAL_PAST_END,         /* the SGE ends past its MR */
    LOCAL_NO_WRITE,         /* READ into an MR without LOCAL_WRITE */
    LOCAL_OTHER_VNI,        /* a key of VNI 0 on a QP of VNI 1's PD */
};

#define WIN_OFF         (2 * PAGE)
#define WIN_LEN         (2 * PAGE)
#define TOP_IOVA        0xffffffffffffe000ull
#define TOP_OFF         (6 * PAGE)

typedef struct ProtRow {
    const char *name;
    uint8_t op;                 /* RS_WR_RDMA_WRITE, RS_WR_RDMA_READ, SEND */
    uint8_t mr;                 /* PROT_*: the remote key and region */
    int64_t va;                 /* from the region's IOVA */
    uint32_t len;
    uint8_t status;             /* the requester's completion */
    uint8_t nak;                /* B's AETH syndrome, 0: none */
    uint8_t local;              /* LOCAL_* */
    uint8_t gid;                /* the GID (VNI) of both QPs */
    uint16_t resp_access;       /* B's QP access flags, 0: STD_ACCESS */
    uint32_t recv_len;          /* SEND: B's receive buffer */
    uint8_t recv_status;        /* SEND: B's receive completion */
} ProtRow;

static const ProtRow prot_rows[] = {
    /* bounds */
    { .name = "write-first-bytes", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .len = 256, .status = RS_WC_SUCCESS },
    { .name = "write-last-bytes", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .va = WIN_LEN - 256, .len = 256, .status = RS_WC_SUCCESS },
    { .name = "write-below-start", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .va = -1, .len = 256, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-past-end", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .va = WIN_LEN - 255, .len = 256, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-far-past-end", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .va = 1ll << 40, .len = 16, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-9-packets-past-end", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN, .len = WIN_LEN + 1, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-top-last-bytes", .op = RS_WR_RDMA_WRITE, .mr = PROT_TOP,
      .va = 0x1fff - 0x100, .len = 0x100, .status = RS_WC_SUCCESS },
    { .name = "write-wraps-2^64", .op = RS_WR_RDMA_WRITE, .mr = PROT_TOP,
      .va = 0x1000, .len = 0x1000, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "read-bytes", .op = RS_WR_RDMA_READ, .mr = PROT_WIN, .va = 0x100,
      .len = 3000, .status = RS_WC_SUCCESS },
    { .name = "read-below-start", .op = RS_WR_RDMA_READ, .mr = PROT_WIN,
      .va = -16, .len = 100, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "read-past-end", .op = RS_WR_RDMA_READ, .mr = PROT_WIN,
      .va = WIN_LEN - 2999, .len = 3000, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "read-wraps-2^64", .op = RS_WR_RDMA_READ, .mr = PROT_TOP,
      .va = 0x1800, .len = 0x1000, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    /* keys */
    { .name = "write-unused-index", .op = RS_WR_RDMA_WRITE, .mr = PROT_UNUSED,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-index-past-table", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_BAD_INDEX, .len = 64, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-key-0", .op = RS_WR_RDMA_WRITE, .mr = PROT_ZERO,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-stale-tag", .op = RS_WR_RDMA_WRITE, .mr = PROT_STALE,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS },
    { .name = "read-stale-tag", .op = RS_WR_RDMA_READ, .mr = PROT_STALE,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS },
    /* PD and rights */
    { .name = "write-other-pd", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN_PD2,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS },
    { .name = "read-other-pd", .op = RS_WR_RDMA_READ, .mr = PROT_WIN_PD2,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-mr-no-remote-write", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN_NO_RW, .len = 64, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "read-mr-no-remote-write", .op = RS_WR_RDMA_READ,
      .mr = PROT_WIN_NO_RW, .len = 64, .status = RS_WC_SUCCESS },
    { .name = "read-mr-no-remote-read", .op = RS_WR_RDMA_READ,
      .mr = PROT_WIN_NO_RR, .len = 64, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-mr-no-remote-read", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN_NO_RR, .len = 64, .status = RS_WC_SUCCESS },
    { .name = "write-qp-no-remote-write", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN, .len = 64, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS,
      .resp_access = RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_READ },
    { .name = "read-qp-no-remote-read", .op = RS_WR_RDMA_READ, .mr = PROT_WIN,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS,
      .resp_access = RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE },
    /* network identity: keys resolve in the VNI of the receiving GID */
    { .name = "write-key-of-other-vni", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN_VNI1, .len = 64, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-key-of-vni1-on-vni1", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN_VNI1, .len = 64, .status = RS_WC_SUCCESS, .gid = 1 },
    { .name = "write-key-of-vni0-on-vni1", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN, .len = 64, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS, .gid = 1 },
    /* zero length: no R_Key or VA check (IBTA C9-88) */
    { .name = "write-0-bytes-bad-key", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_BAD_INDEX, .len = 0, .status = RS_WC_SUCCESS },
    { .name = "read-0-bytes-bad-key", .op = RS_WR_RDMA_READ,
      .mr = PROT_BAD_INDEX, .len = 0, .status = RS_WC_SUCCESS },
    { .name = "write-0-bytes-past-end", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .va = WIN_LEN + 64, .len = 0, .status = RS_WC_SUCCESS },
    /* receive buffers */
    { .name = "send-fits", .op = RS_WR_SEND, .len = 2048,
      .status = RS_WC_SUCCESS, .recv_len = 2048,
      .recv_status = RS_WC_SUCCESS },
    { .name = "send-longer-than-receive", .op = RS_WR_SEND, .len = 600,
      .status = RS_WC_REM_INV_REQ_ERR, .nak = AETH_NAK_INV_REQ,
      .recv_len = 512, .recv_status = RS_WC_LOC_LEN_ERR },
    { .name = "send-3-packets-longer", .op = RS_WR_SEND, .len = 3000,
      .status = RS_WC_REM_INV_REQ_ERR, .nak = AETH_NAK_INV_REQ,
      .recv_len = 2048, .recv_status = RS_WC_LOC_LEN_ERR },
    /* the requester's own keys */
    { .name = "local-bad-lkey", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .len = 256, .status = RS_WC_LOC_PROT_ERR, .local = LOCAL_BAD_KEY },
    { .name = "local-lkey-other-pd", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .len = 256, .status = RS_WC_LOC_PROT_ERR, .local = LOCAL_OTHER_PD },
    { .name = "local-sge-past-mr", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .len = 256, .status = RS_WC_LOC_PROT_ERR, .local = LOCAL_PAST_END },
    { .name = "local-read-into-readonly", .op = RS_WR_RDMA_READ,
      .mr = PROT_WIN, .len = 256, .status = RS_WC_LOC_PROT_ERR,
      .local = LOCAL_NO_WRITE },
    { .name = "local-lkey-other-vni", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .len = 256, .status = RS_WC_LOC_PROT_ERR, .local = LOCAL_OTHER_VNI,
      .gid = 1 },
    { .name = "local-send-bad-lkey", .op = RS_WR_SEND, .len = 256,
      .status = RS_WC_LOC_PROT_ERR, .local = LOCAL_BAD_KEY, .recv_len = 256 },
};

typedef struct ProtEnv {
    Pair pr;
    uint32_t pd0[2], pd2[2];
    uint32_t rkey[PROT_NR];
    uint64_t iova[PROT_NR];
    uint32_t off[PROT_NR];      /* the region's offset in B's buffer */
    uint32_t lkey_pd2, lkey_small, lkey_ro;
} ProtEnv;

static void prot_setup(ProtEnv *e, void *obj, void *data,
                       QGuestAllocator *alloc)
{
    Peer *a = &e->pr.p[0], *b = &e->pr.p[1];
    uint64_t win;
    uint32_t i, stale;

    pair_setup(&e->pr, obj, data, alloc);
    win = b->buf + WIN_OFF;
    pair_add_vni1(&e->pr);
    for (i = 0; i < 2; i++) {
        e->pd0[i] = e->pr.p[i].pd;
        e->pd2[i] = new_pd(e->pr.p[i].d);
    }
    for (i = 0; i < PROT_NR; i++) {
        e->iova[i] = win;
        e->off[i] = WIN_OFF;
    }
    e->rkey[PROT_WIN] = eng_mr(b->d, b->pd, 0, win, WIN_LEN, STD_ACCESS);
    e->rkey[PROT_WIN_NO_RW] = eng_mr(b->d, b->pd, 0, win, WIN_LEN,
                                     RS_ACCESS_LOCAL_WRITE |
                                     RS_ACCESS_REMOTE_READ);
    e->rkey[PROT_WIN_NO_RR] = eng_mr(b->d, b->pd, 0, win, WIN_LEN,
                                     RS_ACCESS_LOCAL_WRITE |
                                     RS_ACCESS_REMOTE_WRITE);
    e->rkey[PROT_WIN_PD2] = eng_mr(b->d, e->pd2[1], 0, win, WIN_LEN,
                                   STD_ACCESS);
    e->rkey[PROT_WIN_VNI1] = eng_mr(b->d, vni1_pd[1], 1, win, WIN_LEN,
                                    STD_ACCESS);
    e->rkey[PROT_TOP] = eng_mr_at(b->d, b->pd, 0, TOP_IOVA,
                                  b->buf + TOP_OFF, 0x1fff, STD_ACCESS);
    e->iova[PROT_TOP] = TOP_IOVA;
    e->off[PROT_TOP] = TOP_OFF;
    /* Deregister and register again: the index comes back, the tag not. */
    stale = eng_mr(b->d, b->pd, 0, win, WIN_LEN, STD_ACCESS);
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DEREG_MR, stale));
    e->rkey[PROT_STALE] = stale;
    i = eng_mr(b->d, b->pd, 0, win, WIN_LEN, STD_ACCESS);
    g_assert_cmphex(i >> RS_MKEY_INDEX_SHIFT, ==,
                    stale >> RS_MKEY_INDEX_SHIFT);
    g_assert_cmphex(i, !=, stale);
    e->rkey[PROT_UNUSED] = (DEF_MAX_MRS - 1) << RS_MKEY_INDEX_SHIFT |
                           (e->rkey[PROT_WIN] & RS_MKEY_TAG_MASK);
    e->rkey[PROT_BAD_INDEX] = 0xffffff00u |
                              (e->rkey[PROT_WIN] & RS_MKEY_TAG_MASK);
    e->rkey[PROT_ZERO] = 0;

    e->lkey_pd2 = eng_mr(a->d, e->pd2[0], 0, a->buf, PAIR_BUF, STD_ACCESS);
    e->lkey_small = eng_mr(a->d, a->pd, 0, a->buf, 128, STD_ACCESS);
    e->lkey_ro = eng_mr(a->d, a->pd, 0, a->buf, PAIR_BUF, 0);
}

static void prot_run(ProtEnv *e, const ProtRow *r)
{
    Pair *pr = &e->pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    bool ok = r->status == RS_WC_SUCCESS;
    uint64_t va = e->iova[r->mr] + r->va;
    uint32_t boff = e->off[r->mr] + r->va;
    struct rs_sge sge = peer_sge(a, 0, r->len), rsge;
    struct rs_cqe cqe;
    LoopQp q[2];

    g_test_message("protection: %s", r->name);
    /* Through GID 1 the QPs are in the PDs of its identity. */
    if (r->gid) {
        a->pd = vni1_pd[0];
        b->pd = vni1_pd[1];
    }
    pair_rc(pr, q, r->gid, r->resp_access ? r->resp_access : STD_ACCESS);
    a->pd = e->pd0[0];
    b->pd = e->pd0[1];
    peer_fill(a, 0, 3 * PAGE, r->len);
    sge.lkey = a->key[r->gid];
    switch (r->local) {
    case LOCAL_BAD_KEY:
        sge.lkey ^= 1;
        break;
    case LOCAL_OTHER_PD:
        sge.lkey = e->lkey_pd2;
        break;
    case LOCAL_PAST_END:
        sge.lkey = e->lkey_small;
        sge.addr += 128 - r->len / 2;
        break;
    case LOCAL_NO_WRITE:
        sge.lkey = e->lkey_ro;
        break;
    case LOCAL_OTHER_VNI:
        /*
         * A key of identity 0 whose value identity 1 does not have (A's
         * key[0] has a twin there: key[1], the same value).
         */
        sge.lkey = e->lkey_ro;
        break;
    }
    if (r->op == RS_WR_SEND) {
        rsge = peer_sge(b, WIN_OFF, r->recv_len);
        eng_post_recv(b->d, &q[1], 0xb0, &rsge, 1);
    }
    pair_log_reset(pr);
    pair_post(pr, 0, &q[0], r->op, 0xa0, &sge, 1, va, e->rkey[r->mr], 0);
    if (r->op == RS_WR_SEND && !r->local) {
        pair_poll(pr, 1, &cqe);
        assert_cqe(&cqe, 0xb0, r->recv_status, RS_WR_RECV, q[1].qpn);
        if (r->recv_status == RS_WC_SUCCESS) {
            g_assert_cmpuint(cqe.byte_len, ==, r->len);
            img_move(b, WIN_OFF, a, 0, r->len);
        } else if (r->len > 1024) {
            /* What the packets before the error left is undefined. */
            peer_dont_care(b, WIN_OFF, r->recv_len);
        }
    }
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, r->status, r->op, q[0].qpn);
    if (ok && r->op == RS_WR_RDMA_WRITE) {
        img_move(b, boff, a, 0, r->len);
    } else if (ok && r->op == RS_WR_RDMA_READ) {
        img_move(a, 0, b, boff, r->len);
        g_assert_cmpuint(cqe.byte_len, ==, r->len);
    }

    pair_pump(pr);
    if (r->local) {
        PAIR_EXPECT_NONE(pr, 0);
        PAIR_EXPECT_NONE(pr, 1);
    } else {
        g_assert_cmpuint(pr->nops[0], ==,
                         r->op == RS_WR_RDMA_READ ? 1 :
                         MAX(DIV_ROUND_UP(r->len, 1024), 1));
    }
    if (r->nak) {
        /* for the first packet, or the SEND's packet that did not fit */
        PAIR_EXPECT_OPS(pr, 1, OP_ACK);
        g_assert_cmphex(pr->syn[1][0], ==, r->nak);
        g_assert_cmphex(pr->psn[1][0], ==,
                        pr->psn[0][r->op == RS_WR_SEND ? pr->nops[0] - 1 : 0]);
    }
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==,
                     ok ? RS_QPS_RTS : RS_QPS_ERR);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==,
                     r->nak ? RS_QPS_ERR : RS_QPS_RTS);
    pair_cq_empty(pr, 0);
    pair_cq_empty(pr, 1);
    peer_check(a);
    peer_check(b);
}

static void test_engine_pair_protection(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    ProtEnv e;
    int i;

    prot_setup(&e, obj, data, alloc);
    for (i = 0; i < ARRAY_SIZE(prot_rows); i++) {
        prot_run(&e, &prot_rows[i]);
    }
    pair_teardown(&e.pr);
}

/* Frame @g changed by @edit, resealed if @reseal, put on B's wire. */
typedef void FrameEdit(uint8_t *f, size_t *len);

static void pair_inject_edit(Pair *pr, const GByteArray *g, FrameEdit *edit,
                             bool reseal)
{
    g_autofree uint8_t *f = g_malloc(g->len + 64);
    size_t len = g->len;

    memcpy(f, g->data, g->len);
    edit(f, &len);
    if (reseal) {
        roce_reseal(f, len);
    }
    pair_inject(pr, 1, f, len);
}

static void edit_payload(uint8_t *f, size_t *len)
{
    f[ROCE_EXT + 16 + 5] ^= 1;
}

static void edit_icrc(uint8_t *f, size_t *len)
{
    f[*len - 1] ^= 0x80;
}

static void edit_cut_1(uint8_t *f, size_t *len)
{
    *len -= 1;
}

static void edit_cut_icrc(uint8_t *f, size_t *len)
{
    *len -= 4;
}

static void edit_cut_in_reth(uint8_t *f, size_t *len)
{
    *len = ROCE_EXT + 15;
}

static void edit_cut_in_bth(uint8_t *f, size_t *len)
{
    *len = ROCE_BTH + 11;
}

/* Shorter than IPv4 + UDP: not RoCE, the LAN path's. */
static void edit_cut_in_udp(uint8_t *f, size_t *len)
{
    *len = ROCE_BTH - 1;
}

/* Lengths and ICRC made to fit, but the RETH is cut short. */
static void edit_short_reth(uint8_t *f, size_t *len)
{
    *len = ROCE_EXT + 8 + 4;
}

static void edit_qpn_unused(uint8_t *f, size_t *len)
{
    stl_be_p(f + ROCE_BTH + 4, 200);
}

static void edit_qpn_huge(uint8_t *f, size_t *len)
{
    stl_be_p(f + ROCE_BTH + 4, 0xffffff);
}

static void edit_qpn_0(uint8_t *f, size_t *len)
{
    stl_be_p(f + ROCE_BTH + 4, 0);
}

static void edit_op_ud_send(uint8_t *f, size_t *len)
{
    f[ROCE_BTH] = OP_UD_SEND_ONLY;
}

static void edit_op_unknown(uint8_t *f, size_t *len)
{
    f[ROCE_BTH] = 0x1f;
}

/* A READ request carries no payload. */
static void edit_op_read_with_data(uint8_t *f, size_t *len)
{
    f[ROCE_BTH] = OP_READ_REQ;
}

static void edit_tver(uint8_t *f, size_t *len)
{
    f[ROCE_BTH + 1] |= 1;
}

/* The right QP and PSN, but from a host that is not the QP's peer. */
static void edit_foreign_source(uint8_t *f, size_t *len)
{
    f[14 + 15] = 9;
}

/* To B's other GID (VNI 1): not the one the QP's peer sends to. */
static void edit_other_gid(uint8_t *f, size_t *len)
{
    f[14 + 18] = 1;
}

static void edit_psn_ahead(uint8_t *f, size_t *len)
{
    stl_be_p(f + ROCE_BTH + 8, ldl_be_p(f + ROCE_BTH + 8) + 5);
}

static void edit_psn_behind(uint8_t *f, size_t *len)
{
    stl_be_p(f + ROCE_BTH + 8, ldl_be_p(f + ROCE_BTH + 8) - 1);
}

/* WRITE MIDDLE, the RETH taken out: no WRITE is in progress. */
static void edit_write_middle(uint8_t *f, size_t *len)
{
    f[ROCE_BTH] = OP_WRITE_MIDDLE;
    memmove(f + ROCE_EXT, f + ROCE_EXT + 16, *len - ROCE_EXT - 16);
    *len -= 16;
}

typedef struct BadFrame {
    const char *name;
    FrameEdit *edit;
    bool reseal;
} BadFrame;

/* Each of these B must drop without an answer and without an effect. */
static const BadFrame bad_frames[] = {
    { "payload changed, ICRC kept", edit_payload, false },
    { "ICRC changed", edit_icrc, false },
    { "last byte cut", edit_cut_1, false },
    { "ICRC cut", edit_cut_icrc, false },
    { "cut in the RETH", edit_cut_in_reth, false },
    { "cut in the BTH", edit_cut_in_bth, false },
    { "RETH cut, lengths and ICRC fitting", edit_short_reth, true },
    { "unused QPN", edit_qpn_unused, true },
    { "QPN 2^24 - 1", edit_qpn_huge, true },
    { "QPN 0", edit_qpn_0, true },
    { "UD SEND to an RC QP", edit_op_ud_send, true },
    { "unknown opcode", edit_op_unknown, true },
    { "READ request with a payload", edit_op_read_with_data, true },
    { "transport version 1", edit_tver, true },
    { "source not the QP's peer", edit_foreign_source, true },
    { "to the adapter's other GID", edit_other_gid, true },
};

/* B's UD QP, for an RC opcode sent to it. */
static uint32_t bad_ud_qpn;

static void edit_to_ud_qp(uint8_t *f, size_t *len)
{
    stl_be_p(f + ROCE_BTH + 4, bad_ud_qpn);
}

/* B's LAN receive ring: frames that are not RoCE land there. */
/* B's LAN receive ring, @n buffers posted: frames not RoCE land there. */
static void bad_frames_lan_ring(Pair *pr, LanEnv *lan, uint64_t *lanbuf,
                                int n)
{
    int i;

    memset(lan, 0, sizeof(*lan));
    lan->d = pr->p[1].d;
    lan->fd = pr->fd[1];
    lan_ring_init(lan, &lan->rx, RS_LAN_RXQ, 3, LAN_RX_VECTOR);
    for (i = 0; i < n; i++) {
        lanbuf[i] = lan_rx_buf(lan, LAN_BUF_SIZE);
        lan_post(lan, &lan->rx, lanbuf[i], LAN_BUF_SIZE, 0);
    }
    lan_doorbell(lan, &lan->rx);
}

static void bad_frames_write_middle(Pair *pr, LoopQp q[2])
{
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;
    GByteArray *g, *r;
    uint32_t psn;

    /*
     * A WRITE MIDDLE where no WRITE is in progress, at the expected PSN:
     * an invalid request NAK, and B's QP goes to the error state.
     */
    pr->hold[0] = pr->hold[1] = true;
    sge = peer_sge(a, 0x1000, 1024);
    pair_post(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, &sge, 1,
              b->buf + 0x5000, b->key[0], 0);
    g = pair_take(pr, 0);
    psn = ldl_be_p(g->data + ROCE_BTH + 8) & 0xffffff;
    pair_inject_edit(pr, g, edit_write_middle, true);
    r = pair_take(pr, 1);
    g_assert_cmphex(r->data[ROCE_BTH], ==, OP_ACK);
    g_assert_cmphex(r->data[ROCE_EXT], ==, AETH_NAK_INV_REQ);
    g_assert_cmphex(ldl_be_p(r->data + ROCE_BTH + 8) & 0xffffff, ==, psn);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_ERR);
    /* The NAK ends A's request too; the genuine one finds B's QP shut. */
    pr->hold[0] = pr->hold[1] = false;
    pair_inject(pr, 0, r->data, r->len);
    g_byte_array_unref(r);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xa2, RS_WC_REM_INV_REQ_ERR, RS_WR_RDMA_WRITE,
               q[0].qpn);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_ERR);
    pair_log_reset(pr);
    pair_inject(pr, 1, g->data, g->len);
    g_byte_array_unref(g);
    /* A SEND on another pair after it: B's only answer is its ACK. */
    pair_rc(pr, q, 0, STD_ACCESS);
    sge = peer_sge(b, 0x6000, 16);
    eng_post_recv(b->d, &q[1], 0xb1, &sge, 1);
    sge = peer_sge(a, 0x1000, 16);
    pair_post(pr, 0, &q[0], RS_WR_SEND, 0xa3, &sge, 1, 0, 0, 0);
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xa3, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    PAIR_EXPECT_OPS(pr, 1, OP_ACK);
    img_move(b, 0x6000, a, 0x1000, 16);
    pair_cq_empty(pr, 1);
    peer_check(a);
    peer_check(b);
}

/* After the bad frames the adapters go on working: a SEND of 2000 bytes. */
static void bad_frames_send(Pair *pr, LoopQp q[2])
{
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;

    pair_log_reset(pr);
    sge = peer_sge(b, 0x4000, 2000);
    eng_post_recv(b->d, &q[1], 0xb0, &sge, 1);
    sge = peer_sge(a, 0x800, 2000);
    pair_post(pr, 0, &q[0], RS_WR_SEND, 0xa1, &sge, 1, 0, 0, 0);
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    PAIR_EXPECT_OPS(pr, 0, OP_SEND_FIRST, OP_SEND_LAST);
    PAIR_EXPECT_OPS(pr, 1, OP_ACK);
    img_move(b, 0x4000, a, 0x800, 2000);
    peer_check(b);
}

static void test_engine_pair_bad_frames(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    LanEnv lan;
    uint64_t lanbuf[4];
    LoopQp q[2], ud;
    struct rs_sge sge;
    struct rs_cqe cqe;
    GByteArray *g, *r;
    uint32_t psn;
    int i;

    pair_setup(&pr, obj, data, alloc);
    pair_add_vni1(&pr);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_qp(&pr, 1, &ud, RS_QPT_UD, b->pd);
    qp_walk(b->d, ud.h, RS_QPT_UD, RS_QPS_RTS);
    bad_ud_qpn = ud.qpn;
    bad_frames_lan_ring(&pr, &lan, lanbuf, ARRAY_SIZE(lanbuf));

    /* The genuine RDMA WRITE of 300 bytes, kept off the wire for now. */
    pr.hold[0] = pr.hold[1] = true;
    sge = peer_sge(a, 0x100, 300);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, &sge, 1,
              b->buf + 0x2000, b->key[0], 0);
    g = pair_take(&pr, 0);
    g_assert_cmphex(g->data[ROCE_BTH], ==, OP_WRITE_ONLY);
    psn = ldl_be_p(g->data + ROCE_BTH + 8) & 0xffffff;
    g_assert_cmphex(psn, ==, pair_psn[0]);

    for (i = 0; i < ARRAY_SIZE(bad_frames); i++) {
        g_test_message("bad frame: %s", bad_frames[i].name);
        pair_inject_edit(&pr, g, bad_frames[i].edit, bad_frames[i].reseal);
    }
    g_test_message("bad frame: RC WRITE to a UD QP");
    pair_inject_edit(&pr, g, edit_to_ud_qp, true);
    /* Not RoCE: the LAN ring takes it. */
    pair_inject_edit(&pr, g, edit_cut_in_udp, false);
    /* A PSN gap: one sequence NAK; an old PSN: ACK of the last one. */
    pair_inject_edit(&pr, g, edit_psn_ahead, true);
    pair_inject_edit(&pr, g, edit_psn_behind, true);
    pair_inject(&pr, 1, g->data, g->len);

    r = pair_take(&pr, 1);
    g_assert_cmphex(r->data[ROCE_BTH], ==, OP_ACK);
    g_assert_cmphex(r->data[ROCE_EXT], ==, AETH_NAK_SEQ);
    g_assert_cmphex(ldl_be_p(r->data + ROCE_BTH + 8) & 0xffffff, ==, psn);
    /*
     * Then ACKs only: of the duplicate (PSN - 1; it may be coalesced
     * into the next), and of the genuine WRITE.  B let the rest be.
     */
    for (;;) {
        uint32_t apsn;

        g_byte_array_unref(r);
        r = pair_take(&pr, 1);
        g_assert_cmphex(r->data[ROCE_BTH], ==, OP_ACK);
        g_assert_cmphex(r->data[ROCE_EXT], ==, AETH_ACK);
        apsn = ldl_be_p(r->data + ROCE_BTH + 8) & 0xffffff;
        if (apsn == psn) {
            break;
        }
        g_assert_cmphex(apsn, ==, (psn - 1) & 0xffffff);
    }
    pr.hold[0] = pr.hold[1] = false;
    pair_inject(&pr, 0, r->data, r->len);
    g_byte_array_unref(r);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    img_move(b, 0x2000, a, 0x100, 300);
    peer_check(b);
    pair_cq_empty(&pr, 1);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, ud.h), ==, RS_QPS_RTS);
    /* Of all that, only the frame cut short of its UDP header is LAN's. */
    {
        g_autofree uint8_t *cut = g_memdup2(g->data, ROCE_BTH - 1);

        lan_expect_rx(&lan, 0, lanbuf[0], LAN_BUF_SIZE, cut, ROCE_BTH - 1);
        g_assert_false(lan_done(&lan, &lan.rx, 1));
    }

    bad_frames_send(&pr, q);
    g_byte_array_unref(g);
    bad_frames_write_middle(&pr, q);
    pair_teardown(&pr);
}

/* Move frames both ways without logging them (long transfers). */
static void pair_relay(void *opaque)
{
    Pair *pr = opaque;
    int i;

    for (i = 0; i < 2; i++) {
        GPollFD pfd = { .fd = pr->fd[i], .events = G_IO_IN };
        ssize_t len;

        while (g_poll(&pfd, 1, 0) == 1) {
            len = lan_sock_recv(pr->fd[i], pr->frame, RS_LAN_MAX_FRAME,
                                RS_QOS_TIMEOUT_US);
            g_assert_cmpint(len, >, 0);
            lan_sock_send(pr->fd[!i], pr->frame, len);
        }
    }
}

/*
 * One READ request for 16 MiB from a peer: the responder produces its
 * responses a budget at a time and stops while the backend cannot take
 * more, instead of building all 16384 of them in the receive callback
 * and leaving what the socket refuses in QEMU's net queue.  Once the QP
 * is gone, what comes out of the wire is what was really sent: a socket
 * buffer's worth.  A READ of 256 KiB, with the wire relayed, completes.
 */
static void test_engine_pair_read_flood(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    const uint64_t iova = 0x100000000000ull;
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_qp_attr attr;
    struct rs_sge sge;
    struct rs_cqe cqe;
    uint32_t rkey, lkey, n = 0, i;
    g_autofree uint8_t *page = g_malloc(PAGE);
    g_autofree uint8_t *got = g_malloc(PAGE);
    GByteArray *req;
    LoopQp q[2], q2[2];
    ssize_t len;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    rkey = alias_mr(b->d, b->pd, iova, b->buf, 16 * MiB);

    /* A's READ request, taken off the wire and grown to 16 MiB. */
    pr.hold[0] = true;
    sge = peer_sge(a, 0, PAGE);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa0, &sge, 1, iova, rkey, 0);
    req = pair_take(&pr, 0);
    g_assert_cmphex(req->data[ROCE_BTH], ==, OP_READ_REQ);
    stl_be_p(req->data + ROCE_BTH + 12 + 12, 16 * MiB);
    roce_reseal(req->data, req->len);
    /* (Before the request: its pump would log B's answers, any number.) */
    pair_forget(&pr, 0);
    pair_inject(&pr, 1, req->data, req->len);
    g_byte_array_unref(req);

    /* Nobody reads B's wire for a while; then B's QP goes away. */
    for (i = 0; i < 50; i++) {
        qtest_clock_step(qrs_qts(b->d), 1000);
        g_usleep(2000);
    }
    std_attr(&attr, RS_QPS_RTS, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_modify_qp(b->d, q[1].h, &attr, RS_QP_ATTR_STATE));
    while ((len = lan_sock_recv(pr.fd[1], pr.frame, RS_LAN_MAX_FRAME,
                                G_USEC_PER_SEC / 5)) > 0) {
        n++;
    }
    g_test_message("READ responses on the wire: %u of 16384", n);
    g_assert_cmpuint(n, >, 0);
    g_assert_cmpuint(n, <, 2048);
    assert_alive(b->d);

    /* A legitimate long READ, to an MR aliased the same way on A. */
    pair_rc(&pr, q2, 0, STD_ACCESS);
    lkey = alias_mr(a->d, a->pd, iova, a->buf, 256 * KiB);
    sge = (struct rs_sge) { .addr = iova, .length = 256 * KiB,
                            .lkey = lkey };
    pair_post(&pr, 0, &q2[0], RS_WR_RDMA_READ, 0xa1, &sge, 1, iova, rkey,
              0);
    eng_poll(a->d, &a->cq, &cqe, pair_relay, &pr);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_READ, q2[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 256 * KiB);
    qtest_memread(qrs_qts(b->d), b->buf, page, PAGE);
    qtest_memread(qrs_qts(a->d), a->buf, got, PAGE);
    g_assert_cmpmem(got, PAGE, page, PAGE);
    peer_dont_care(a, 0, PAGE);
    g_assert_cmpuint(qp_state(a->d, q2[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q2[1].h), ==, RS_QPS_RTS);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

/*
 * The guest rewrites its send queue after the doorbell: every slot now
 * holds a SEND of 4 GiB - 1, 2^24 packets at MTU 256, a multiple of the
 * PSN space.  The ACK for the real message completes it as the requester
 * sent it (the completer used to read the slot again and loop forever
 * without moving its PSN).
 */
static void test_engine_pair_sq_rewrite(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    uint32_t stride, i, nslots;
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc_mtu(&pr, q, 0, STD_ACCESS, RS_MTU_256);
    sge = peer_sge(b, 0x1000, 4000);
    eng_post_recv(b->d, &q[1], 0xb0, &sge, 1);
    pr.hold[0] = true;
    sge = peer_sge(a, 0x10, 1000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0, &sge, 1, 0, 0, 0);
    pair_wait_frames(&pr, 0, 4);

    nslots = 1u << q[0].c.sq_log_size;
    stride = qrs_qp_sq_bytes(&q[0].c) >> q[0].c.sq_log_size;
    for (i = 0; i < nslots; i++) {
        struct rs_send_wqe_ctrl w = {
            .wr_id = 0xbad0000 + i,
            .opcode = RS_WR_SEND,
            .flags = RS_WQE_F_SIGNALED,
            .num_sge = 1,
        };
        struct rs_sge huge = { .addr = a->buf, .length = 0xffffffffu,
                               .lkey = a->key[0] };

        qtest_memwrite(qrs_qts(a->d), q[0].c.sq_addr + i * stride, &w,
                       sizeof(w));
        qtest_memwrite(qrs_qts(a->d), q[0].c.sq_addr + i * stride + sizeof(w),
                       &huge, sizeof(huge));
    }

    pair_release(&pr, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1000);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1000);
    pair_cq_empty(&pr, 0);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    img_move(b, 0x1000, a, 0x10, 1000);
    peer_check(b);
    pair_teardown(&pr);
}

/*
 * Ten sequence NAKs for the same PSN (a confused or spoofing peer): the
 * requester sends its unacknowledged packets again once, not ten times.
 */
static void test_engine_pair_nak_storm(void *obj, void *data,
                                       QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;
    GByteArray *ack;
    uint32_t first;
    LoopQp q[2];
    int i;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);

    /* One exchange, to have a frame from B to A to shape NAKs from. */
    sge = peer_sge(b, 0x1000, 100);
    eng_post_recv(b->d, &q[1], 0xb0, &sge, 1);
    pr.hold[1] = true;
    sge = peer_sge(a, 0x10, 100);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0, &sge, 1, 0, 0, 0);
    ack = pair_take(&pr, 1);
    g_assert_cmphex(ack->data[ROCE_BTH], ==, OP_ACK);
    pair_release(&pr, 1);
    pair_inject(&pr, 0, ack->data, ack->len);
    pair_poll(&pr, 1, &cqe);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    img_move(b, 0x1000, a, 0x10, 100);

    /* A WRITE of four packets that B never sees. */
    pair_log_reset(&pr);
    pr.hold[0] = true;
    sge = peer_sge(a, 0x2000, 4000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &sge, 1,
              b->buf + 0x3000, b->key[0], 0);
    pair_wait_frames(&pr, 0, 4);
    first = pr.psn[0][0];
    stl_be_p(ack->data + ROCE_BTH + 8, first);
    ack->data[ROCE_EXT] = AETH_NAK_SEQ;
    roce_reseal(ack->data, ack->len);
    for (i = 0; i < 10; i++) {
        int j;

        pair_inject(&pr, 0, ack->data, ack->len);
        for (j = 0; j < 5; j++) {
            pair_pump(&pr);
            g_usleep(2000);
        }
    }
    g_test_message("A sent %u frames", pr.nops[0]);
    g_assert_cmpuint(pr.nops[0], ==, 8);
    for (i = 4; i < 8; i++) {
        g_assert_cmphex(pr.psn[0][i], ==, (first + i - 4) & 0xffffff);
    }
    g_byte_array_unref(ack);
    pair_forget(&pr, 0);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    peer_check(b);
    pair_teardown(&pr);
}

/*
 * A SEND longer than max-msg-size (8192 on adapter B) into a receive WQE
 * that would hold it: an invalid request, not a message (nor a 32-bit
 * offset that wraps with receive SGEs beyond 4 GiB).
 */
static void test_engine_pair_send_too_long(void *obj, void *data,
                                           QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    sge = peer_sge(b, 0, 16384);
    eng_post_recv(b->d, &q[1], 0xb0, &sge, 1);
    sge = peer_sge(a, 0, 9216);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0, &sge, 1, 0, 0, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_LOC_LEN_ERR, RS_WR_RECV, q[1].qpn);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_REM_INV_REQ_ERR, RS_WR_SEND, q[0].qpn);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_ERR);
    expect_event(b->d, RS_EV_QP_REQ_ERR, q[1].h);
    peer_dont_care(b, 0, 16384);
    pair_teardown(&pr);
}

static void register_pair_hostile_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };
    QOSGraphTestOptions pair_small_msg = {
        .before = pair_before, .arg = (void *)",max-msg-size=8192",
    };

    rs_add_standalone_test("pair/protection",
                           test_engine_pair_protection, &pair);
    rs_add_standalone_test("pair/bad-frames",
                           test_engine_pair_bad_frames, &pair);
    rs_add_standalone_test("pair/read-flood",
                           test_engine_pair_read_flood, &pair);
    rs_add_standalone_test("pair/sq-rewrite",
                           test_engine_pair_sq_rewrite, &pair);
    rs_add_standalone_test("pair/nak-storm", test_engine_pair_nak_storm, &pair);
    rs_add_standalone_test("pair/send-too-long",
                           test_engine_pair_send_too_long, &pair_small_msg);
}

libqos_init(register_pair_hostile_tests);
