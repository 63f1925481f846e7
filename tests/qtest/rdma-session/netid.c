/*
 * rdma-session qtests: host-assigned network identities (ABI 1.6).  The
 * vni and netids properties and qom-set on them; which identity ADD_GID
 * puts a GID in; QUERY_NETID and the change event; PDs of an identity;
 * then between two adapters: one key value naming different memory in
 * two identities, keys of one identity refused through the other with
 * nothing touched, windows, indirect keys and fast-registration MRs in an
 * identity, the tables across a live migration, and a corrupt stream
 * refused.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-peer.h"

#define NET1        "10.0.1.0/24=1"

static char *qom_get_str(QTestState *qts, const char *path, const char *prop)
{
    QDict *rsp = qtest_qmp(qts, "{ 'execute': 'qom-get', 'arguments':"
                           " { 'path': %s, 'property': %s } }", path, prop);
    char *s;

    g_assert_true(qdict_haskey(rsp, "return"));
    s = g_strdup(qdict_get_str(rsp, "return"));
    qobject_unref(rsp);
    return s;
}

static uint64_t qom_get_uint(QTestState *qts, const char *path,
                             const char *prop)
{
    QDict *rsp = qtest_qmp(qts, "{ 'execute': 'qom-get', 'arguments':"
                           " { 'path': %s, 'property': %s } }", path, prop);
    uint64_t v;

    g_assert_true(qdict_haskey(rsp, "return"));
    v = qnum_get_uint(qobject_to(QNum, qdict_get(rsp, "return")));
    qobject_unref(rsp);
    return v;
}

static char *qom_set_vni(QTestState *qts, const char *path, uint64_t vni)
{
    QDict *rsp = qtest_qmp(qts, "{ 'execute': 'qom-set', 'arguments':"
                           " { 'path': %s, 'property': 'vni',"
                           "   'value': %" PRIu64 " } }", path, vni);
    char *err = NULL;

    if (qdict_haskey(rsp, "error")) {
        err = g_strdup(qdict_get_str(qdict_get_qdict(rsp, "error"), "desc"));
    }
    qobject_unref(rsp);
    return err;
}

/* ADD_GID; the completion's RS_NETID_RESULT. */
static uint32_t add_gid_netid(QRdmaSession *d, uint32_t index,
                              const uint8_t *gid, uint8_t type, uint32_t vni)
{
    struct rs_cmd_add_gid c = { .index = index, .type = type, .vni = vni };
    uint32_t h = ~0u, r = ~0u;

    memcpy(c.gid, gid, 16);
    RS_ASSERT_OK(qrs_admin_cmd(d, RS_CMD_ADD_GID, &c, sizeof(c), &h, &r));
    g_assert_cmpuint(h, ==, index);
    return r;
}

static uint8_t query_netid(QRdmaSession *d, uint32_t n,
                           struct rs_netid_attr *a, uint32_t *result)
{
    uint64_t at = qrs_alloc_zeroed(d, sizeof(*a));
    struct rs_cmd_query q = {
        .resp_addr = at, .resp_len = sizeof(*a), .handle = n,
    };
    uint8_t st;

    fill(d, at, 0xa5, sizeof(*a));
    st = qrs_admin_cmd(d, RS_CMD_QUERY_NETID, &q, sizeof(q), NULL, result);
    qtest_memread(qrs_qts(d), at, a, sizeof(*a));
    return st;
}

static uint8_t create_pd_netid(QRdmaSession *d, uint32_t flags,
                               uint32_t netid, uint32_t *h)
{
    struct rs_cmd_create_pd c = { .flags = flags, .netid = netid };

    return qrs_admin_cmd(d, RS_CMD_CREATE_PD, &c, sizeof(c), h, NULL);
}

/* REG_MR over @len bytes at @base (IOVA @base): key and admin handle. */
static uint32_t mr_netid(QRdmaSession *d, uint32_t pd, uint32_t gid,
                         uint64_t base, uint32_t len, uint16_t access,
                         uint32_t *handle)
{
    struct rs_cmd_reg_mr c = {
        .iova = base, .length = len, .npages = DIV_ROUND_UP(len, PAGE),
        .pd = pd, .page_shift = 12, .access = access, .gid_index = gid,
    };
    uint32_t h = 0, key = 0;

    c.pbl_addr = make_pbl(d, base, PAGE, c.npages);
    RS_ASSERT_OK(qrs_reg_mr(d, &c, &h, &key));
    if (handle) {
        *handle = h;
    }
    return key;
}

/*
 * The properties: what qom-set refuses (and then nothing changes), what
 * it takes and how it reads back; ADD_GID's identity; QUERY_NETID; the
 * change events; CREATE_PD's netid; an identity in use cannot go; a VNI
 * change keeps the keys.
 */
static void test_config(void *obj, void *data, QGuestAllocator *alloc)
{
    static const struct {
        const char *value, *why;
    } bad[] = {
        { "10.0.1.0/24", "expected SUBNET=VNI" },
        { "10.0.1.1/24=5", "no host bits" },
        { "10.0.1.0/33=5", "expected SUBNET=VNI" },
        { "10.0.1.0=5", "expected SUBNET=VNI" },
        { "10.0.1.0/24=16777216", "0-16777215" },
        { "10.0.1.0/24=x", "0-16777215" },
        { "10.0.300.0/24=5", "expected SUBNET=VNI" },
        { "fd01::1/64=5", "no host bits" },
        { "10.0.1.0/24=5,", "expected SUBNET=VNI" },
        { "10.0.1.0/24=5,10.0.1.128/25=6", "overlap" },
        { "10.0.0.0/8=5,10.0.1.0/24=6", "overlap" },
        { "10.0.1.0/24=7,10.0.2.0/24=7", "same VNI" },
        { "10.0.1.0/24=0", "same VNI" },
        { "10.1.0.0/16=1,10.2.0.0/16=2,10.3.0.0/16=3,10.4.0.0/16=4,"
          "10.5.0.0/16=5,10.6.0.0/16=6,10.7.0.0/16=7,10.8.0.0/16=8",
          "at most 7" },
    };
    QRdmaSession *d = admin_setup(obj);
    QTestState *qts = qrs_qts(d);
    g_autoptr(GPtrArray) paths = rs_qom_paths(qts);
    const char *path = paths->pdata[0];
    struct rs_netid_attr na;
    struct rs_event ev;
    uint8_t gid[16];
    uint32_t r, pd1, pd0, h, key, handle;
    char *err, *s;
    int i;

    g_assert_cmpuint(paths->len, ==, 1);
    s = qom_get_str(qts, path, "netids");
    g_assert_cmpstr(s, ==, "");
    g_free(s);
    g_assert_cmpuint(qom_get_uint(qts, path, "vni"), ==, 0);
    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        err = rs_qom_set_str(qts, path, "netids", bad[i].value);
        g_test_message("netids=%s: %s", bad[i].value, err);
        g_assert_nonnull(err);
        g_assert_nonnull(strstr(err, bad[i].why));
        g_free(err);
    }
    s = qom_get_str(qts, path, "netids");
    g_assert_cmpstr(s, ==, "");
    g_free(s);
    expect_no_event(d);

    /* Two identities; they read back in their canonical form. */
    g_assert_null(rs_qom_set_str(qts, path, "netids",
                                 "10.0.1.0/24=100,fd01:0::/64=0x10000"));
    s = qom_get_str(qts, path, "netids");
    g_assert_cmpstr(s, ==, "10.0.1.0/24=100,fd01::/64=65536");
    g_free(s);
    g_assert_true(qrs_aeq_poll(d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, RS_EV_NETID_CHANGED);
    g_assert_cmpuint(ev.handle, ==, 1);
    g_assert_cmpuint(ev.data, ==, 100);
    g_assert_true(qrs_aeq_poll(d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, RS_EV_NETID_CHANGED);
    g_assert_cmpuint(ev.handle, ==, 2);
    g_assert_cmpuint(ev.data, ==, 65536);
    expect_no_event(d);
    err = qom_set_vni(qts, path, 100);
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err, "same VNI"));
    g_free(err);
    err = qom_set_vni(qts, path, 1u << 24);
    g_assert_nonnull(err);
    g_free(err);
    g_assert_null(qom_set_vni(qts, path, 5));
    g_assert_cmpuint(qom_get_uint(qts, path, "vni"), ==, 5);
    expect_event(d, RS_EV_NETID_CHANGED, 0);

    /* The host's subnets decide, not the vni the driver writes. */
    gid_v4(gid, 10, 0, 0, 1);
    r = add_gid_netid(d, 0, gid, RS_GID_ROCE_V2_IPV4, 0);
    g_assert_cmphex(r, ==, RS_NETID_RESULT(0, 5));
    gid_v4(gid, 10, 0, 1, 1);
    r = add_gid_netid(d, 1, gid, RS_GID_ROCE_V2_IPV4, 77);
    g_assert_cmphex(r, ==, RS_NETID_RESULT(1, 100));
    memset(gid, 0, 16);
    gid[0] = 0xfd;
    gid[1] = 0x01;
    gid[15] = 7;
    r = add_gid_netid(d, 2, gid, RS_GID_ROCE_V2_IPV6, 0);
    g_assert_cmphex(r, ==, RS_NETID_RESULT(2, 65536));
    gid[1] = 0x02;
    r = add_gid_netid(d, 3, gid, RS_GID_ROCE_V2_IPV6, 0);
    g_assert_cmphex(r, ==, RS_NETID_RESULT(0, 5));

    /* PDs: of a configured identity only. */
    RS_ASSERT_OK(create_pd_netid(d, 0, 1, &pd1));
    RS_ASSERT_OK(create_pd_netid(d, 0, 0, &pd0));
    RS_ASSERT_STATUS(create_pd_netid(d, 0, 3, &h), RS_STATUS_BAD_NETID);
    RS_ASSERT_STATUS(create_pd_netid(d, 0, RS_MAX_NETIDS, &h),
                     RS_STATUS_BAD_NETID);
    RS_ASSERT_STATUS(create_pd_netid(d, 0, 0x100, &h), RS_STATUS_BAD_NETID);
    {
        struct rs_cmd_create_pd x = { .netid = 1 };

        RS_ASSERT_STATUS(qrs_admin_cmd(d, RS_CMD_CREATE_XRCD, &x, sizeof(x),
                                       &h, NULL), RS_STATUS_BAD_PARAM);
    }

    /* Keys: identity 1's first is index 1, like identity 0's first. */
    key = mr_netid(d, pd1, 1, qrs_alloc_zeroed(d, PAGE), PAGE, STD_ACCESS,
                   &handle);
    g_assert_cmphex(key >> RS_MKEY_INDEX_SHIFT, ==, 1);
    g_assert_cmphex(handle & RS_MKEY_TAG_MASK, ==, key & RS_MKEY_TAG_MASK);
    h = mr_netid(d, pd0, 0, qrs_alloc_zeroed(d, PAGE), PAGE, STD_ACCESS, &r);
    g_assert_cmphex(h, ==, r);
    g_assert_cmphex(h >> RS_MKEY_INDEX_SHIFT, ==, 2);
    g_assert_cmphex(h, ==, key + (1 << RS_MKEY_INDEX_SHIFT));

    RS_ASSERT_OK(query_netid(d, 1, &na, &r));
    g_assert_cmphex(r, ==, RS_NETID_RESULT(1, 100));
    g_assert_cmpuint(na.vni, ==, 100);
    g_assert_cmpuint(na.flags, ==, RS_NETID_F_VALID);
    g_assert_cmpuint(na.prefix_len, ==, 96 + 24);
    gid_v4(gid, 10, 0, 1, 0);
    g_assert_cmpmem(na.prefix, 16, gid, 16);
    g_assert_cmpuint(na.ngids, ==, 1);
    g_assert_cmpuint(na.nkeys, ==, 1);
    g_assert_cmpuint(na.npds, ==, 1);
    RS_ASSERT_OK(query_netid(d, 0, &na, &r));
    g_assert_cmpuint(na.vni, ==, 5);
    g_assert_cmpuint(na.ngids, ==, 2);
    g_assert_cmpuint(na.nkeys, ==, 1);
    g_assert_cmpuint(na.npds, ==, 1);
    RS_ASSERT_OK(query_netid(d, 3, &na, &r));
    g_assert_cmpuint(na.flags, ==, 0);
    g_assert_cmpuint(na.vni, ==, 0);
    RS_ASSERT_STATUS(query_netid(d, RS_MAX_NETIDS, &na, &r),
                     RS_STATUS_BAD_HANDLE);
    {
        struct rs_cmd_query q = {
            .resp_addr = qrs_alloc_zeroed(d, 64), .resp_len = 31,
            .handle = 1,
        };

        RS_ASSERT_STATUS(qrs_admin_cmd(d, RS_CMD_QUERY_NETID, &q, sizeof(q),
                                       NULL, NULL), RS_STATUS_BAD_SIZE);
    }

    /* Identity 2 (no PDs, no keys) may go; identity 1 may not. */
    g_assert_null(rs_qom_set_str(qts, path, "netids", "10.0.1.0/24=100"));
    expect_event(d, RS_EV_NETID_CHANGED, 2);
    RS_ASSERT_OK(query_netid(d, 0, &na, &r));
    g_assert_cmpuint(na.ngids, ==, 3);
    err = rs_qom_set_str(qts, path, "netids", "");
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err, "identity 1"));
    g_free(err);
    expect_no_event(d);

    /* A new VNI for identity 1: the label changes, its keys stay. */
    g_assert_null(rs_qom_set_str(qts, path, "netids", "10.0.1.0/24=300"));
    g_assert_true(qrs_aeq_poll(d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, RS_EV_NETID_CHANGED);
    g_assert_cmpuint(ev.handle, ==, 1);
    g_assert_cmpuint(ev.data, ==, 300);
    RS_ASSERT_OK(query_netid(d, 1, &na, &r));
    g_assert_cmpuint(na.vni, ==, 300);
    g_assert_cmpuint(na.nkeys, ==, 1);
    g_assert_cmpuint(na.ngids, ==, 1);

    /* Its key goes by its admin handle, then the identity may go. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEREG_MR, handle + 0x1000),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, handle));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd1));
    g_assert_null(rs_qom_set_str(qts, path, "netids", ""));
    expect_event(d, RS_EV_NETID_CHANGED, 1);
    RS_ASSERT_OK(query_netid(d, 0, &na, &r));
    g_assert_cmpuint(na.ngids, ==, 4);
    assert_alive(d);
}

/*
 * Two adapters with 10.0.1.0/24 in identity 1 (set at run time on both,
 * each driver told), GID 1 (10.0.1.x) there, a PD of identity 1 on each;
 * on B an MR over a second buffer in identity 1 whose key has the value
 * of B's identity 0 key over its first buffer.
 */
typedef struct NetEnv {
    Pair pr;
    uint32_t pd0[2], pd1[2];
    uint32_t b_pd1;             /* B's PD of QPs through GID 1 */
    uint32_t a1;                /* A: its buffer in identity 1 */
    uint64_t buf2;              /* B: the buffer of identity 1 */
    uint8_t *img2;
    uint32_t k1, k1_handle;     /* B: buf2 in identity 1, == B's key[0] */
    uint32_t k2;                /* B: buf2 again, identity 1, MW_BIND */
    uint32_t k0b;               /* B: buf in identity 0, no twin in 1 */
} NetEnv;

static void net_fill2(NetEnv *e, uint32_t off, uint32_t len, uint8_t seed)
{
    uint32_t i;

    for (i = 0; i < len; i++) {
        e->img2[off + i] = seed + i * 13;
    }
    qtest_memwrite(qrs_qts(e->pr.p[1].d), e->buf2 + off, e->img2 + off, len);
}

static void net_check2(NetEnv *e)
{
    g_autofree uint8_t *now = g_malloc(PAIR_BUF);

    qtest_memread(qrs_qts(e->pr.p[1].d), e->buf2, now, PAIR_BUF);
    g_assert_cmpmem(now, PAIR_BUF, e->img2, PAIR_BUF);
}

static void net_setup(NetEnv *e, void *obj, void *data,
                      QGuestAllocator *alloc)
{
    Pair *pr = &e->pr;
    Peer *b = &pr->p[1];
    int i;

    pair_setup(pr, obj, data, alloc);
    rs_qom_set_all(qrs_qts(pr->p[0].d), "netids", NET1);
    for (i = 0; i < 2; i++) {
        Peer *p = &pr->p[i];
        uint8_t gid[16];

        expect_event(p->d, RS_EV_NETID_CHANGED, 1);
        gid_v4(gid, 10, 0, 1, i + 1);
        g_assert_cmphex(add_gid_netid(p->d, 1, gid, RS_GID_ROCE_V2_IPV4, 0),
                        ==, RS_NETID_RESULT(1, 1));
        e->pd0[i] = p->pd;
        e->pd1[i] = new_pd_netid(p->d, 1);
    }
    e->b_pd1 = e->pd1[1];
    e->a1 = mr_netid(pr->p[0].d, e->pd1[0], 1, pr->p[0].buf, PAIR_BUF,
                     STD_ACCESS, NULL);
    e->buf2 = loop_buf(b->d, PAIR_BUF);
    e->img2 = g_malloc(PAIR_BUF);
    net_fill2(e, 0, PAIR_BUF, 0x33);
    e->k1 = mr_netid(b->d, e->pd1[1], 1, e->buf2, PAIR_BUF, STD_ACCESS,
                     &e->k1_handle);
    /* One key value, two identities, two buffers. */
    g_assert_cmphex(e->k1, ==, b->key[0]);
    g_assert_cmphex(e->k1_handle, !=, e->k1);
    e->k2 = mr_netid(b->d, e->pd1[1], 1, e->buf2, PAIR_BUF,
                     STD_ACCESS | RS_ACCESS_MW_BIND, NULL);
    e->k0b = mr_netid(b->d, b->pd, 0, b->buf, PAIR_BUF, STD_ACCESS, NULL);
    g_assert_cmphex(e->k2 >> RS_MKEY_INDEX_SHIFT, ==, 2);
    g_assert_cmphex(e->k0b >> RS_MKEY_INDEX_SHIFT, ==, 4);
}

/* A connected RC pair through GID @gid, in the PDs of its identity. */
static void net_rc(NetEnv *e, LoopQp q[2], uint32_t gid)
{
    int i;

    for (i = 0; i < 2; i++) {
        e->pr.p[i].pd = gid ? e->pd1[i] : e->pd0[i];
    }
    if (gid) {
        e->pr.p[1].pd = e->b_pd1;
    }
    pair_rc(&e->pr, q, gid, STD_ACCESS);
    for (i = 0; i < 2; i++) {
        e->pr.p[i].pd = e->pd0[i];
    }
}

/*
 * A writes @len bytes from its buffer through GID @gid to @va with
 * @rkey: a success, or a NAK (remote access error) on the wire, the
 * requester's completion with that status and both QPs in error.
 */
static void net_write(NetEnv *e, uint32_t gid, uint64_t va, uint32_t rkey,
                      uint32_t len, bool ok, uint8_t seed)
{
    Pair *pr = &e->pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_sge sge = peer_sge(a, 0, len);
    struct rs_cqe cqe;
    LoopQp q[2];

    net_rc(e, q, gid);
    peer_fill(a, 0, len, seed);
    /* A's key over its buffer has the same value in both identities. */
    sge.lkey = gid ? e->a1 : a->key[0];
    g_assert_cmphex(e->a1, ==, a->key[0]);
    pair_log_reset(pr);
    pair_post(pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, &sge, 1, va, rkey, 0);
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, ok ? RS_WC_SUCCESS : RS_WC_REM_ACCESS_ERR,
               RS_WR_RDMA_WRITE, q[0].qpn);
    pair_pump(pr);
    g_assert_cmpuint(pr->nops[0], ==, DIV_ROUND_UP(len, 1024));
    if (!ok) {
        PAIR_EXPECT_OPS(pr, 1, OP_ACK);
        g_assert_cmphex(pr->syn[1][0], ==, AETH_NAK_REM_ACCESS);
        g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_ERR);
        g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_ERR);
    } else {
        g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    }
    pair_cq_empty(pr, 0);
    pair_cq_empty(pr, 1);
}

/* The same key value through each identity's GID: each its own buffer. */
static void net_same_key(NetEnv *e, uint8_t seed)
{
    Peer *a = &e->pr.p[0], *b = &e->pr.p[1];

    net_write(e, 0, b->buf + 0x1000, b->key[0], 1500, true, seed);
    img_move(b, 0x1000, a, 0, 1500);
    net_write(e, 1, e->buf2 + 0x3000, e->k1, 700, true, seed + 1);
    memcpy(e->img2 + 0x3000, a->img, 700);
    peer_check(a);
    peer_check(b);
    net_check2(e);
}

/* Keys of one identity through the other's GID: refused, nothing moves. */
static void net_cross(NetEnv *e, uint8_t seed)
{
    Peer *a = &e->pr.p[0], *b = &e->pr.p[1];

    net_write(e, 0, e->buf2 + 0x2000, e->k2, 300, false, seed);
    net_write(e, 1, b->buf + 0x2000, e->k0b, 300, false, seed + 1);
    /* B's identity 0 key over buf names buf2 through identity 1. */
    net_write(e, 1, b->buf + 0x2000, b->key[0], 300, false, seed + 2);
    peer_check(a);
    peer_check(b);
    net_check2(e);
}

static void test_same_key(void *obj, void *data, QGuestAllocator *alloc)
{
    NetEnv e;

    net_setup(&e, obj, data, alloc);
    net_same_key(&e, 0x10);
    net_cross(&e, 0x20);
    g_free(e.img2);
    pair_teardown(&e.pr);
}

/*
 * A window and an indirect key of identity 1: they work through GID 1
 * and are refused through GID 0; an indirect key of identity 1 whose
 * entry names an identity 0 key is refused at access.
 */
static void test_window_indirect(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    NetEnv e;
    Pair *pr = &e.pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_cmd_alloc_mw am;
    struct rs_send_wqe_bind_mw bw = { 0 };
    struct rs_send_wqe_ctrl w;
    struct rs_mkey_entry ent[2];
    struct rs_cmd_reg_mkey_list kl = { 0 };
    struct rs_cqe cqe;
    uint32_t mw, mwh, rkey, ik, bad, k0c;
    uint64_t list;
    LoopQp q[2];

    net_setup(&e, obj, data, alloc);

    /* A type 1 window over buf2 + 8 KiB, bound by B's QP of identity 1. */
    am = (struct rs_cmd_alloc_mw) {
        .pd = e.pd1[1], .gid_index = 1, .type = RS_MW_TYPE_1,
    };
    RS_ASSERT_OK(qrs_admin_cmd(b->d, RS_CMD_ALLOC_MW, &am, sizeof(am),
                               &mwh, &mw));
    g_assert_cmphex(mw >> RS_MKEY_INDEX_SHIFT, ==, 3);
    net_rc(&e, q, 1);
    rkey = (mw & ~RS_MKEY_TAG_MASK) | ((mw + 1) & RS_MKEY_TAG_MASK);
    bw.opcode = RS_WR_BIND_MW;
    bw.flags = RS_WQE_F_SIGNALED;
    bw.wr_id = 0xb1;
    bw.mw_rkey = mw;
    bw.new_rkey = rkey;
    bw.mr_lkey = e.k2;
    bw.addr = e.buf2 + 0x2000;
    bw.length = 0x2000;
    bw.access = RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_READ;
    memcpy(&w, &bw, sizeof(w));
    eng_post_send(b->d, &q[1], &w, NULL, 0);
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xb1, RS_WC_SUCCESS, RS_WR_BIND_MW, q[1].qpn);
    net_write(&e, 1, e.buf2 + 0x2100, rkey, 512, true, 0x50);
    memcpy(e.img2 + 0x2100, a->img, 512);
    net_check2(&e);
    net_write(&e, 0, e.buf2 + 0x2100, rkey, 512, false, 0x51);
    net_check2(&e);
    peer_check(b);

    /* An indirect key: buf2 + 0x100 (k1), then buf2 + 0x800 (k2). */
    ent[0] = (struct rs_mkey_entry) { e.buf2 + 0x100, 0x100, e.k1 };
    ent[1] = (struct rs_mkey_entry) { e.buf2 + 0x800, 0x100, e.k2 };
    list = qrs_alloc_zeroed(b->d, sizeof(ent));
    qtest_memwrite(qrs_qts(b->d), list, ent, sizeof(ent));
    kl.list_addr = list;
    kl.pd = e.pd1[1];
    kl.gid_index = 1;
    kl.nentries = 2;
    kl.access = STD_ACCESS;
    RS_ASSERT_OK(qrs_admin_cmd(b->d, RS_CMD_REG_INDIRECT_MKEY, &kl,
                               sizeof(kl), NULL, &ik));
    g_assert_cmphex(ik >> RS_MKEY_INDEX_SHIFT, ==, 4);
    net_write(&e, 1, 0x80, ik, 0x100, true, 0x60);
    memcpy(e.img2 + 0x180, a->img, 0x80);
    memcpy(e.img2 + 0x800, a->img + 0x80, 0x80);
    net_check2(&e);
    /*
     * Through identity 0 the value of ik is k0b (index 4, tag 1), an MR
     * at B's buffer's own address: 0x80 is outside it.
     */
    g_assert_cmphex(ik, ==, e.k0b);
    net_write(&e, 0, 0x80, ik, 0x100, false, 0x61);

    /* An entry naming an identity 0 key: no such key in identity 1. */
    k0c = mr_netid(b->d, e.pd0[1], 0, b->buf, PAIR_BUF, STD_ACCESS, NULL);
    g_assert_cmphex(k0c >> RS_MKEY_INDEX_SHIFT, ==, 7);
    ent[1].key = k0c;
    qtest_memwrite(qrs_qts(b->d), list, ent, sizeof(ent));
    RS_ASSERT_OK(qrs_admin_cmd(b->d, RS_CMD_REG_INDIRECT_MKEY, &kl,
                               sizeof(kl), NULL, &bad));
    net_write(&e, 1, 0x80, bad, 0x100, false, 0x62);
    net_check2(&e);
    peer_check(a);
    peer_check(b);
    g_free(e.img2);
    pair_teardown(pr);
}

/*
 * A fast-registration MR of a kernel PD of identity 1: the REG_MR work
 * request of B's QP in that PD finds it in identity 1's table; it then
 * serves WRITEs through GID 1, not through GID 0 (where its value names
 * identity 1's k2, no key there); after LOCAL_INV not at all.
 */
static void test_fast_reg(void *obj, void *data, QGuestAllocator *alloc)
{
    NetEnv e;
    Pair *pr = &e.pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    struct rs_cmd_reg_mr c = {
        .npages = 4, .page_shift = 12, .flags = RS_MR_F_FAST_REG,
    };
    struct rs_send_wqe_reg_mr f = { 0 };
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    uint32_t kpd, fk, h;
    LoopQp q[2];

    net_setup(&e, obj, data, alloc);
    RS_ASSERT_OK(create_pd_netid(b->d, RS_PD_F_PRIVILEGED, 1, &kpd));
    c.pd = kpd;
    c.gid_index = 1;
    RS_ASSERT_OK(qrs_reg_mr(b->d, &c, &h, &fk));
    g_assert_cmphex(fk >> RS_MKEY_INDEX_SHIFT, ==, 3);
    g_assert_cmphex(h >> RS_MKEY_INDEX_SHIFT, ==, 5);
    e.b_pd1 = kpd;
    net_rc(&e, q, 1);
    fk = (fk & ~RS_MKEY_TAG_MASK) | ((fk + 1) & RS_MKEY_TAG_MASK);
    f.wr_id = 0xf1;
    f.opcode = RS_WR_REG_MR;
    f.flags = RS_WQE_F_SIGNALED;
    f.page_shift = 12;
    f.key = fk;
    f.iova = 0x7000000;
    f.length = 2 * PAGE;
    f.pbl_addr = make_pbl(b->d, e.buf2 + 2 * PAGE, PAGE, 2);
    f.npages = 2;
    f.access = STD_ACCESS;
    memcpy(&w, &f, sizeof(w));
    eng_post_send(b->d, &q[1], &w, NULL, 0);
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xf1, RS_WC_SUCCESS, RS_WR_REG_MR, q[1].qpn);

    net_write(&e, 1, 0x7000000 + PAGE, fk, 600, true, 0xa0);
    memcpy(e.img2 + 3 * PAGE, a->img, 600);
    net_check2(&e);
    net_write(&e, 0, 0x7000000 + PAGE, fk, 600, false, 0xa1);
    net_check2(&e);

    /* LOCAL_INV on B's QP of the kernel PD: Free, no access. */
    net_rc(&e, q, 1);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xf2;
    w.opcode = RS_WR_LOCAL_INV;
    w.flags = RS_WQE_F_SIGNALED;
    w.imm_or_inv = fk;
    eng_post_send(b->d, &q[1], &w, NULL, 0);
    pair_poll(pr, 1, &cqe);
    assert_cqe(&cqe, 0xf2, RS_WC_SUCCESS, RS_WR_LOCAL_INV, q[1].qpn);
    net_write(&e, 1, 0x7000000 + PAGE, fk, 600, false, 0xa2);
    net_check2(&e);
    peer_check(a);
    peer_check(b);
    g_free(e.img2);
    pair_teardown(pr);
}

/*
 * Both identities' tables across a live migration to a QEMU started
 * without the netids property: the identities (set with qom-set) come
 * with the state, and the same key value still names each identity's
 * own buffer.
 */
static void test_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    NetEnv e;
    g_autoptr(GPtrArray) paths = NULL;
    guint i;

    net_setup(&e, obj, data, alloc);
    net_same_key(&e, 0x70);
    pair_migrate(&e.pr);
    /* The switch holds both directions after the move: let them go. */
    pair_release(&e.pr, 0);
    pair_release(&e.pr, 1);
    paths = rs_qom_paths(qrs_qts(e.pr.p[0].d));
    g_assert_cmpuint(paths->len, ==, 2);
    for (i = 0; i < paths->len; i++) {
        g_autofree char *s = qom_get_str(qrs_qts(e.pr.p[0].d),
                                         paths->pdata[i], "netids");

        g_assert_cmpstr(s, ==, NET1);
    }
    net_same_key(&e, 0x80);
    net_cross(&e, 0x90);
    g_free(e.img2);
    pair_teardown(&e.pr);
}

/*
 * A corrupt stream fails the incoming migration: a key's identity or
 * index out of range or taken twice, a key in another identity than its
 * PD, identities the property would refuse, identity 0's tag a key of
 * identity 1 keeps aside for its slot not a tag.
 */
static void test_corrupt_stream(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    static const char mr_sub[] = "\x05\x15rdma-session/mr/netid";
    static const char ids_sub[] = "\x05\x18rdma-session/core/netids";
    static const char *const what[] = {
        "key index taken twice", "key index 0", "key index max-mrs",
        "key in identity 2 (not configured)", "key in identity 0 of a PD "
        "of identity 1", "identity 1's VNI equal to identity 0's",
        "identity 1's subnet with host bits", "identity 0's tag kept "
        "aside above 255", "identity 2 valid after an invalid identity 1",
    };
    static const char tag0_sub[] = "\x05\x1ardma-session/mr/netid/tag0";
    QRdmaSession *d = admin_setup(obj);
    QTestState *qts = qrs_qts(d);
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-nid-XXXXXX",
                                             NULL);
    g_autofree char *path = g_strdup_printf("%s/state", tmpdir);
    g_autofree char *bad = g_strdup_printf("%s/bad", tmpdir);
    g_autofree uint8_t *stream = NULL;
    uint8_t gid[16];
    uint32_t pd1, k1, k2;
    uint8_t *p1, *p2, *ids, *t2;
    char *err = NULL;
    gsize len;
    int i;

    rs_qom_set_all(qts, "netids", "10.0.1.0/24=1,10.0.2.0/24=2");
    expect_event(d, RS_EV_NETID_CHANGED, 1);
    expect_event(d, RS_EV_NETID_CHANGED, 2);
    gid_v4(gid, 10, 0, 1, 1);
    add_gid_netid(d, 0, gid, RS_GID_ROCE_V2_IPV4, 0);
    pd1 = new_pd_netid(d, 1);
    k1 = mr_netid(d, pd1, 0, qrs_alloc_zeroed(d, PAGE), PAGE, STD_ACCESS,
                  NULL);
    k2 = mr_netid(d, pd1, 0, qrs_alloc_zeroed(d, PAGE), PAGE, STD_ACCESS,
                  NULL);
    g_assert_cmphex(k1 >> RS_MKEY_INDEX_SHIFT, ==, 1);
    g_assert_cmphex(k2 >> RS_MKEY_INDEX_SHIFT, ==, 2);
    mig_save(qts, path);
    g_assert_true(g_file_get_contents(path, (gchar **)&stream, &len, NULL));

    /* The two keys' subsections: version (4), netid, kidx. */
    p1 = memmem(stream, len, mr_sub, sizeof(mr_sub) - 1);
    g_assert_nonnull(p1);
    p1 += sizeof(mr_sub) - 1 + 4;
    p2 = memmem(p1, len - (p1 - stream), mr_sub, sizeof(mr_sub) - 1);
    g_assert_nonnull(p2);
    p2 += sizeof(mr_sub) - 1 + 4;
    g_assert_cmpuint(p1[0], ==, 1);
    g_assert_cmpuint(ldl_be_p(p1 + 1), ==, 1);
    g_assert_cmpuint(p2[0], ==, 1);
    g_assert_cmpuint(ldl_be_p(p2 + 1), ==, 2);
    g_assert_null(memmem(p2, len - (p2 - stream), mr_sub,
                         sizeof(mr_sub) - 1));
    /*
     * Nested in it, identity 0's tag slot 2 keeps aside (0, the slot was
     * new) while the key of identity 1 has tag 1.
     */
    t2 = p2 + 1 + 4;
    g_assert_cmpmem(t2, sizeof(tag0_sub) - 1, tag0_sub, sizeof(tag0_sub) - 1);
    t2 += sizeof(tag0_sub) - 1 + 4;
    g_assert_cmphex(k2 & RS_MKEY_TAG_MASK, ==, 1);
    g_assert_cmpuint(lduw_be_p(t2), ==, 0);
    /* The identities: valid, prefix_len, prefix[16], vni each. */
    ids = stream + mig_find(stream, len, (const uint8_t *)ids_sub,
                            sizeof(ids_sub) - 1) + sizeof(ids_sub) - 1 + 4;
    g_assert_cmpuint(ids[0], ==, 1);
    g_assert_cmpuint(ids[22 + 0], ==, 1);
    g_assert_cmpuint(ids[22 + 1], ==, 120);
    g_assert_cmpuint(ldl_be_p(ids + 22 + 18), ==, 1);
    g_assert_cmpuint(ids[44 + 14 + 2], ==, 2);

    for (i = 0; i < ARRAY_SIZE(what); i++) {
        g_autofree uint8_t *copy = g_memdup2(stream, len);
        uint8_t *c2 = copy + (p2 - stream);
        uint8_t *ci = copy + (ids - stream);

        g_test_message("corrupt stream: %s", what[i]);
        switch (i) {
        case 0:
            stl_be_p(c2 + 1, 1);
            break;
        case 1:
            stl_be_p(c2 + 1, 0);
            break;
        case 2:
            stl_be_p(c2 + 1, DEF_MAX_MRS);
            break;
        case 3:
            c2[0] = 2;
            break;
        case 4:
            c2[0] = 0;
            break;
        case 5:
            stl_be_p(ci + 22 + 18, 0);
            break;
        case 6:
            ci[22 + 2 + 15] = 1;
            break;
        case 7:
            stw_be_p(copy + (t2 - stream), 0x1ff);
            break;
        default:
            ci[22] = 0;
            break;
        }
        g_assert_true(g_file_set_contents(bad, (gchar *)copy, len, NULL));
        g_assert_false(mig_load(bad, &err));
        g_test_message("destination: %s", err);
        g_free(err);
    }
    g_assert_true(mig_load(path, &err));
    g_free(err);
    unlink(bad);
    unlink(path);
    rmdir(tmpdir);
}

/*
 * Each identity has its own tag sequence (issue 26, finding 7): slot 1
 * gets three keys of identity 0, then one of identity 1, and again; no
 * key value comes back in either identity before the tag space (256)
 * has gone round, however identity 1 used the slot in between.
 */
static void test_tag_sequence(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = admin_setup(obj);
    QTestState *qts = qrs_qts(d);
    g_autoptr(GPtrArray) paths = rs_qom_paths(qts);
    g_autoptr(GHashTable) seen0 = g_hash_table_new(NULL, NULL);
    g_autoptr(GHashTable) seen1 = g_hash_table_new(NULL, NULL);
    uint64_t buf = qrs_alloc_zeroed(d, PAGE);
    uint32_t pd0, pd1, h, key, i, j;
    uint8_t gid[16];

    g_assert_null(rs_qom_set_str(qts, paths->pdata[0], "netids", NET1));
    expect_event(d, RS_EV_NETID_CHANGED, 1);
    gid_v4(gid, 10, 0, 0, 1);
    add_gid_netid(d, 0, gid, RS_GID_ROCE_V2_IPV4, 0);
    gid_v4(gid, 10, 0, 1, 1);
    add_gid_netid(d, 1, gid, RS_GID_ROCE_V2_IPV4, 0);
    RS_ASSERT_OK(create_pd_netid(d, 0, 0, &pd0));
    RS_ASSERT_OK(create_pd_netid(d, 0, 1, &pd1));
    /* 240 keys of identity 0 and 80 of identity 1, all in slot 1. */
    for (i = 0; i < 80; i++) {
        for (j = 0; j < 3; j++) {
            key = mr_netid(d, pd0, 0, buf, PAGE, STD_ACCESS, &h);
            g_assert_cmphex(h, ==, key);
            g_assert_cmphex(key >> RS_MKEY_INDEX_SHIFT, ==, 1);
            if (g_hash_table_contains(seen0, GUINT_TO_POINTER(key))) {
                g_test_message("identity 0 key 0x%x again after %u keys "
                               "of identity 0", key, 3 * i + j);
            }
            g_assert_false(g_hash_table_contains(seen0,
                                                 GUINT_TO_POINTER(key)));
            g_hash_table_add(seen0, GUINT_TO_POINTER(key));
            RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, h));
        }
        key = mr_netid(d, pd1, 1, buf, PAGE, STD_ACCESS, &h);
        g_assert_cmphex(h >> RS_MKEY_INDEX_SHIFT, ==, 1);
        g_assert_cmphex(key >> RS_MKEY_INDEX_SHIFT, ==, 1);
        g_assert_false(g_hash_table_contains(seen1, GUINT_TO_POINTER(key)));
        g_hash_table_add(seen1, GUINT_TO_POINTER(key));
        RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, h));
    }
    assert_alive(d);
}

static void register_netid_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };

    qos_add_test("netid/config", "rdma-session", test_config, NULL);
    rs_add_standalone_test("netid/same-key", test_same_key, &pair);
    rs_add_standalone_test("netid/window-indirect",
                           test_window_indirect, &pair);
    rs_add_standalone_test("netid/fast-reg", test_fast_reg, &pair);
    qos_add_test("netid/tag-sequence", "rdma-session", test_tag_sequence,
                 NULL);
    rs_add_standalone_test("netid/migrate", test_migrate, &pair);
    rs_add_standalone_test("netid/corrupt-stream", test_corrupt_stream, NULL);
}

libqos_init(register_netid_tests);
