/*
 * rdma-session qtests: indirect and pattern memory keys (ABI 1.5): local
 * and remote access through them split across their entries, a column
 * of a matrix through a pattern key, bounds, the checks of each entry's
 * key at access time, nesting and cycles, bad entry lists from commands
 * and work requests, invalidation and refill, migration
 *
 * Remote access goes through the loopback pair of one adapter (QP A to
 * QP B through the session to ourselves): every request and response
 * crosses the requester, the wire format and the responder.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"
#include "rs-odp.h"
#include "rs-peer.h"

#define KL_RIGHTS   (STD_ACCESS | RS_ACCESS_REMOTE_ATOMIC)
#define KL_FILL     0xee

static uint8_t kl_reg_st(QRdmaSession *d, uint8_t op, uint32_t pd,
                         uint32_t gid, uint64_t list, uint16_t n,
                         uint16_t access, uint32_t repeat, uint32_t flags,
                         uint32_t *key)
{
    struct rs_cmd_reg_mkey_list c = {
        .list_addr = list, .pd = pd, .gid_index = gid, .nentries = n,
        .access = access, .repeat = repeat, .flags = flags,
    };

    return qrs_admin_cmd(d, op, &c, sizeof(c), key, NULL);
}

/* Entries into guest memory (an 8-byte aligned list). */
static uint64_t kl_list(QRdmaSession *d, const void *ents, size_t size)
{
    uint64_t a = qrs_alloc_zeroed(d, size + 8);

    qtest_memwrite(qrs_qts(d), a, ents, size);
    return a;
}

static uint32_t ind_reg(Loop *l, uint32_t pd, const struct rs_mkey_entry *e,
                        uint16_t n, uint16_t access)
{
    uint32_t key = 0;

    RS_ASSERT_OK(kl_reg_st(l->d, RS_CMD_REG_INDIRECT_MKEY, pd, 0,
                           kl_list(l->d, e, n * sizeof(*e)), n, access, 0,
                           0, &key));
    g_assert_cmphex(key >> RS_MKEY_INDEX_SHIFT, !=, 0);
    return key;
}

static uint32_t pat_reg(Loop *l, const struct rs_pattern_entry *e,
                        uint16_t n, uint32_t repeat, uint16_t access)
{
    uint32_t key = 0;

    RS_ASSERT_OK(kl_reg_st(l->d, RS_CMD_REG_PATTERN_MKEY, l->pd, 0,
                           kl_list(l->d, e, n * sizeof(*e)), n, access,
                           repeat, 0, &key));
    return key;
}

/* A key of @op made empty with room for @n entries. */
static uint32_t kl_empty(Loop *l, uint8_t op, uint32_t pd, uint16_t n)
{
    uint32_t key = 0;

    RS_ASSERT_OK(kl_reg_st(l->d, op, pd, 0, 0, n, 0, 0, RS_MKEY_F_EMPTY,
                           &key));
    return key;
}

static uint32_t kl_tag(uint32_t key, uint8_t tag)
{
    return (key & ~RS_MKEY_TAG_MASK) | tag;
}

/* An RC QP of @pd with WQE slots of 512 bytes, connected to QP A. */
static void kl_qp(Loop *l, LoopQp *q, uint32_t pd, uint16_t max_inline)
{
    memset(q, 0, sizeof(*q));
    qp_template(l->d, &q->c, RS_QPT_RC, pd, l->cq.h, l->cq.h);
    q->c.max_inline = max_inline;
    q->c.sq_addr = qrs_alloc_zeroed(l->d, qrs_qp_sq_bytes(&q->c));
    q->h = new_qp(l->d, &q->c);
    q->qpn = HINDEX(q->h);
    loop_connect(l, q, l->a.qpn);
}

/* Post a REG_INDIRECT / REG_PATTERN WQE with @size bytes of entries. */
static void kl_post_reg(Loop *l, LoopQp *q, uint64_t wr_id, uint8_t op,
                        uint32_t key, uint16_t n, uint16_t access,
                        uint32_t repeat, const void *ents, size_t size)
{
    struct rs_send_wqe_reg_mkey f = {
        .wr_id = wr_id, .opcode = op, .flags = RS_WQE_F_SIGNALED,
        .key = key, .nentries = n, .access = access, .repeat = repeat,
    };
    uint32_t stride = qrs_qp_sq_bytes(&q->c) >> q->c.sq_log_size;
    uint64_t slot = q->c.sq_addr +
        (uint64_t)(q->sq_pi & ((1u << q->c.sq_log_size) - 1)) * stride;

    qtest_memwrite(qrs_qts(l->d), slot, &f, sizeof(f));
    if (size) {
        g_assert_cmpuint(size, <=, stride - sizeof(f));
        qtest_memwrite(qrs_qts(l->d), slot + sizeof(f), ents, size);
    }
    q->sq_pi++;
    qrs_db_writel(l->d, 0, RS_DB_SQ, q->qpn | (q->sq_pi & 0xffff) << 16);
}

/* A WRITE of @len bytes of src through @rkey at @va: its status. */
static void kl_write(Loop *l, uint64_t wr_id, uint64_t va, uint32_t rkey,
                     uint64_t src, uint32_t len, uint8_t status)
{
    loop_post_op(l, &l->a, wr_id, RS_WR_RDMA_WRITE, 0, va, rkey, src, len,
                 l->src_key);
    fr_expect(l, wr_id, RS_WR_RDMA_WRITE, status);
    if (status) {
        loop_reconnect(l);
    }
}

/* Guest memory at @addr equals @img. */
static void kl_assert_mem(Loop *l, uint64_t addr, const uint8_t *img,
                          size_t len)
{
    g_autofree uint8_t *buf = g_malloc(len);
    size_t i;

    qtest_memread(qrs_qts(l->d), addr, buf, len);
    for (i = 0; i < len; i++) {
        if (buf[i] != img[i]) {
            g_error("byte 0x%zx: 0x%02x, expected 0x%02x", i, buf[i],
                    img[i]);
        }
    }
}

static void kl_read_mem(Loop *l, uint64_t addr, uint8_t *buf, size_t len)
{
    qtest_memread(qrs_qts(l->d), addr, buf, len);
}

/*
 * Three MRs over pages 0, 1 and 2 of dst and an indirect key over a
 * range of each: [0, 0x2fc) page 0 from 0x100, [0x2fc, 0x500) page 1
 * from 0x84, [0x500, 0xa00) page 2 from 0x40.
 */
typedef struct Three {
    uint32_t mr[3];
    struct rs_mkey_entry e[3];
    uint32_t key;
} Three;

#define THREE_LEN   0xa00

static void three_setup(Loop *l, Three *t, uint16_t key_access,
                        uint16_t mr_access)
{
    static const uint64_t off[3] = { 0x100, PAGE + 0x84, 2 * PAGE + 0x40 };
    static const uint32_t len[3] = { 0x2fc, 0x204, 0x500 };
    int i;

    for (i = 0; i < 3; i++) {
        t->mr[i] = loop_mr_access(l, l->dst + i * PAGE, PAGE, mr_access);
        t->e[i] = (struct rs_mkey_entry) {
            .addr = l->dst + off[i], .length = len[i], .key = t->mr[i],
        };
    }
    t->key = ind_reg(l, l->pd, t->e, 3, key_access);
}

/* dst's first three pages as they are after @len bytes at key offset @va. */
static void three_image(const Three *t, Loop *l, uint8_t *img,
                        const uint8_t *data, uint64_t va, uint32_t len)
{
    uint64_t koff = 0;
    int i;

    memset(img, KL_FILL, 3 * PAGE);
    for (i = 0; i < 3; i++) {
        uint64_t s = MAX(va, koff), e = MIN(va + len, koff + t->e[i].length);

        if (s < e) {
            memcpy(img + (t->e[i].addr - l->dst) + (s - koff),
                   data + (s - va), e - s);
        }
        koff += t->e[i].length;
    }
}

/*
 * An indirect key over three MRs: a remote WRITE through it lands split
 * in the three ranges (nothing else touched), one starting and ending
 * inside entries too; a READ through it gathers them; a SEND gathers
 * through it as an lkey; a READ response lands through it; a FETCH_ADD
 * inside one entry works, one straddling two is refused.
 */
static void test_indirect_three(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree uint8_t *img = g_malloc(3 * PAGE);
    g_autofree uint8_t *pat = g_malloc(THREE_LEN);
    QTestState *qts;
    Three t;
    Loop l;

    loop_setup(&l, obj);
    qts = qrs_qts(l.d);
    three_setup(&l, &t, KL_RIGHTS, KL_RIGHTS);

    /* WRITE of the whole key. */
    fill(l.d, l.dst, KL_FILL, 3 * PAGE);
    loop_pattern(&l, l.src, THREE_LEN, 0x31);
    kl_read_mem(&l, l.src, pat, THREE_LEN);
    kl_write(&l, 0x11, 0, t.key, l.src, THREE_LEN, RS_WC_SUCCESS);
    three_image(&t, &l, img, pat, 0, THREE_LEN);
    kl_assert_mem(&l, l.dst, img, 3 * PAGE);

    /* From inside entry 0 to inside entry 2. */
    fill(l.d, l.dst, KL_FILL, 3 * PAGE);
    kl_write(&l, 0x12, 0x250, t.key, l.src, 0x400, RS_WC_SUCCESS);
    three_image(&t, &l, img, pat, 0x250, 0x400);
    kl_assert_mem(&l, l.dst, img, 3 * PAGE);

    /* READ through it: the three ranges in order. */
    loop_pattern(&l, l.dst, 3 * PAGE, 0x52);
    kl_read_mem(&l, l.dst, img, 3 * PAGE);
    fill(l.d, l.src, 0, LOOP_BUF);
    loop_post_op(&l, &l.a, 0x13, RS_WR_RDMA_READ, 0, 0x10, t.key, l.src,
                 THREE_LEN - 0x10, l.src_key);
    fr_expect(&l, 0x13, RS_WR_RDMA_READ, RS_WC_SUCCESS);
    memcpy(pat, img + 0x110, 0x2fc - 0x10);
    memcpy(pat + 0x2fc - 0x10, img + PAGE + 0x84, 0x204);
    memcpy(pat + 0x500 - 0x10, img + 2 * PAGE + 0x40, 0x500);
    kl_assert_mem(&l, l.src, pat, THREE_LEN - 0x10);

    /* SEND gathering through the key as an lkey, 0x80 into entry 0. */
    loop_post_recv(&l, &l.b, 0x14, l.src + 2 * PAGE, PAGE, l.src_key);
    {
        struct rs_send_wqe_ctrl w = {
            .wr_id = 0x15, .opcode = RS_WR_SEND, .flags = RS_WQE_F_SIGNALED,
            .num_sge = 1,
        };

        loop_post_send(&l, &l.a, &w, 0x80, 0x900, t.key);
    }
    loop_expect(&l, 0x14, RS_WC_SUCCESS, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0x15, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    memcpy(pat, img + 0x180, 0x2fc - 0x80);
    memcpy(pat + 0x2fc - 0x80, img + PAGE + 0x84, 0x204);
    memcpy(pat + 0x500 - 0x80, img + 2 * PAGE + 0x40, 0x480);
    kl_assert_mem(&l, l.src + 2 * PAGE, pat, 0x900);

    /* A READ whose response lands through the key (local write). */
    loop_pattern(&l, l.src + 3 * PAGE, THREE_LEN, 0x77);
    kl_read_mem(&l, l.src + 3 * PAGE, pat, THREE_LEN);
    fill(l.d, l.dst, KL_FILL, 3 * PAGE);
    loop_post_op(&l, &l.a, 0x16, RS_WR_RDMA_READ, 0, l.src + 3 * PAGE,
                 l.src_key, 0, THREE_LEN, t.key);
    fr_expect(&l, 0x16, RS_WR_RDMA_READ, RS_WC_SUCCESS);
    three_image(&t, &l, img, pat, 0, THREE_LEN);
    kl_assert_mem(&l, l.dst, img, 3 * PAGE);

    /* FETCH_ADD at key offset 0x300: entry 1, dst page 1 + 0x88. */
    qtest_writeq(qts, l.dst + PAGE + 0x88, 1000);
    loop_atomic(&l, 0x17, RS_WR_ATOMIC_FETCH_ADD, 0x300, t.key, 5, 0,
                l.src, 8);
    fr_expect(&l, 0x17, RS_WR_ATOMIC_FETCH_ADD, RS_WC_SUCCESS);
    g_assert_cmpuint(qtest_readq(qts, l.dst + PAGE + 0x88), ==, 1005);
    g_assert_cmpuint(qtest_readq(qts, l.src), ==, 1000);
    /* At 0x2f8: 4 bytes in entry 0, 4 in entry 1: refused. */
    kl_read_mem(&l, l.dst, img, 3 * PAGE);
    loop_atomic(&l, 0x18, RS_WR_ATOMIC_CMP_SWP, 0x2f8, t.key, 0, 1,
                l.src, 8);
    fr_expect(&l, 0x18, 0, RS_WC_REM_ACCESS_ERR);
    kl_assert_mem(&l, l.dst, img, 3 * PAGE);
    loop_reconnect(&l);

    /* Deleting the key leaves the MRs alone; the key is gone. */
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DEREG_MR, t.key));
    kl_write(&l, 0x19, 0, t.key, l.src, 16, RS_WC_REM_ACCESS_ERR);
    kl_write(&l, 0x1a, l.dst + 0x100, t.mr[0], l.src, 16, RS_WC_SUCCESS);
    assert_alive(l.d);
}

/*
 * Bounds: accesses past the key's length (starting inside, starting at
 * the end, a READ, a local SGE) are refused with nothing touched; a
 * zero-length WRITE names no memory.
 */
static void test_indirect_bounds(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    g_autofree uint8_t *img = g_malloc(3 * PAGE);
    Three t;
    Loop l;

    loop_setup(&l, obj);
    three_setup(&l, &t, KL_RIGHTS, KL_RIGHTS);
    fill(l.d, l.dst, KL_FILL, 3 * PAGE);
    memset(img, KL_FILL, 3 * PAGE);
    kl_write(&l, 0x21, THREE_LEN - 0x10, t.key, l.src, 0x20,
             RS_WC_REM_ACCESS_ERR);
    kl_write(&l, 0x22, THREE_LEN, t.key, l.src, 1, RS_WC_REM_ACCESS_ERR);
    kl_write(&l, 0x23, ~0ull - 4, t.key, l.src, 0x10, RS_WC_REM_ACCESS_ERR);
    kl_assert_mem(&l, l.dst, img, 3 * PAGE);
    loop_post_op(&l, &l.a, 0x24, RS_WR_RDMA_READ, 0, 0x800, t.key, l.src,
                 0x201, l.src_key);
    fr_expect(&l, 0x24, 0, RS_WC_REM_ACCESS_ERR);
    loop_reconnect(&l);
    /* The last byte exactly. */
    kl_write(&l, 0x25, THREE_LEN - 1, t.key, l.src, 1, RS_WC_SUCCESS);
    g_assert_true(is_filled(l.d, l.dst + 2 * PAGE + 0x540, KL_FILL,
                            PAGE - 0x540));
    g_assert_false(is_filled(l.d, l.dst + 2 * PAGE + 0x53f, KL_FILL, 1));
    kl_write(&l, 0x26, 0x5000, t.key, l.src, 0, RS_WC_SUCCESS);
    /* A local SGE past the end. */
    loop_post_op(&l, &l.a, 0x27, RS_WR_RDMA_WRITE, 0, l.src, l.src_key,
                 0x9ff, 2, t.key);
    fr_expect(&l, 0x27, 0, RS_WC_LOC_PROT_ERR);
    loop_reconnect(&l);
    assert_alive(l.d);
}

/*
 * A pattern key: one column of a row-major matrix of 8 rows of 64 bytes
 * (elements of 8 bytes) written remotely and read back; two matrices'
 * columns interleaved by a key of two entries, a READ from inside a
 * repetition; a pattern over 2^20 repetitions accessed near its end.
 */
static void test_pattern(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { ROWS = 8, ROW = 64, EL = 8, COL = 3 };
    uint8_t img[2 * ROWS * ROW], col[2 * ROWS * EL];
    struct rs_pattern_entry pe[2];
    uint32_t mr, key, key2, big_mr, big;
    QTestState *qts;
    Loop l;
    int r;

    loop_setup(&l, obj);
    qts = qrs_qts(l.d);
    mr = loop_mr_access(&l, l.dst, LOOP_BUF, KL_RIGHTS);
    pe[0] = (struct rs_pattern_entry) {
        .addr = l.dst + COL * EL, .key = mr, .bytes_count = EL,
        .bytes_skip = ROW - EL,
    };
    key = pat_reg(&l, pe, 1, ROWS, KL_RIGHTS);

    fill(l.d, l.dst, KL_FILL, LOOP_BUF);
    loop_pattern(&l, l.src, ROWS * EL, 0x41);
    kl_read_mem(&l, l.src, col, ROWS * EL);
    kl_write(&l, 0x31, 0, key, l.src, ROWS * EL, RS_WC_SUCCESS);
    memset(img, KL_FILL, sizeof(img));
    for (r = 0; r < ROWS; r++) {
        memcpy(img + r * ROW + COL * EL, col + r * EL, EL);
    }
    kl_assert_mem(&l, l.dst, img, ROWS * ROW);
    g_assert_true(is_filled(l.d, l.dst + ROWS * ROW, KL_FILL,
                            LOOP_BUF - ROWS * ROW));
    /* Read the column back. */
    fill(l.d, l.src + PAGE, 0, PAGE);
    loop_post_op(&l, &l.a, 0x32, RS_WR_RDMA_READ, 0, 0, key, l.src + PAGE,
                 ROWS * EL, l.src_key);
    fr_expect(&l, 0x32, RS_WR_RDMA_READ, RS_WC_SUCCESS);
    kl_assert_mem(&l, l.src + PAGE, col, ROWS * EL);
    /* One past the last repetition. */
    kl_write(&l, 0x33, ROWS * EL - 4, key, l.src, 8, RS_WC_REM_ACCESS_ERR);

    /* Column 1 of matrix X at dst, column 5 of Y at dst + 0x800. */
    pe[0].addr = l.dst + 1 * EL;
    pe[1] = (struct rs_pattern_entry) {
        .addr = l.dst + 0x800 + 5 * EL, .key = mr, .bytes_count = EL,
        .bytes_skip = ROW - EL,
    };
    key2 = pat_reg(&l, pe, 2, ROWS, KL_RIGHTS);
    loop_pattern(&l, l.dst, LOOP_BUF, 0x13);
    kl_read_mem(&l, l.dst, img, ROWS * ROW);
    kl_read_mem(&l, l.dst + 0x800, img + ROWS * ROW, ROWS * ROW);
    for (r = 0; r < ROWS; r++) {
        memcpy(col + 2 * r * EL, img + r * ROW + EL, EL);
        memcpy(col + (2 * r + 1) * EL, img + ROWS * ROW + r * ROW + 5 * EL,
               EL);
    }
    fill(l.d, l.src, 0, PAGE);
    loop_post_op(&l, &l.a, 0x34, RS_WR_RDMA_READ, 0, 3 * EL + 2, key2,
                 l.src, 2 * ROWS * EL - 3 * EL - 2, l.src_key);
    fr_expect(&l, 0x34, RS_WR_RDMA_READ, RS_WC_SUCCESS);
    kl_assert_mem(&l, l.src, col + 3 * EL + 2, 2 * ROWS * EL - 3 * EL - 2);
    /* And written: Y's column only from repetition 2 on. */
    loop_pattern(&l, l.src, 2 * ROWS * EL, 0x66);
    kl_read_mem(&l, l.src, col, 2 * ROWS * EL);
    kl_write(&l, 0x35, 2 * (2 * EL) + EL, key2, l.src, EL, RS_WC_SUCCESS);
    kl_assert_mem(&l, l.dst + 0x800 + 2 * ROW + 5 * EL, col, EL);
    g_assert_cmpuint(qtest_readq(qts, l.dst + 0x800 + 2 * ROW + 4 * EL), ==,
                     ldq_le_p(img + ROWS * ROW + 2 * ROW + 4 * EL));

    /*
     * 2^20 repetitions of 8 bytes every 16 over a 16 MiB MR whose pages
     * are all one page: the last 64 bytes are repetitions 2^20 - 8 ..
     * 2^20 - 1, at 0xf80, 0xf90 ... 0xff0 of that page.
     */
    big_mr = alias_mr(l.d, l.pd, 0x40000000ull, l.dst + 3 * PAGE, 16 << 20);
    pe[0] = (struct rs_pattern_entry) {
        .addr = 0x40000000ull, .key = big_mr, .bytes_count = 8,
        .bytes_skip = 8,
    };
    big = pat_reg(&l, pe, 1, 1u << 20, STD_ACCESS);
    fill(l.d, l.dst + 3 * PAGE, KL_FILL, PAGE);
    loop_pattern(&l, l.src, 64, 0x29);
    kl_read_mem(&l, l.src, col, 64);
    kl_write(&l, 0x36, (8ull << 20) - 64, big, l.src, 64, RS_WC_SUCCESS);
    memset(img, KL_FILL, 0x100);
    for (r = 0; r < 8; r++) {
        memcpy(img + 0x80 + r * 16, col + r * 8, 8);
    }
    kl_assert_mem(&l, l.dst + 3 * PAGE + 0xf00, img, 0x100);
    assert_alive(l.d);
}

/*
 * Each entry key is checked when it is used, and a refused access moves
 * nothing: the bad entry is the last of three, after two good ones.
 */
static void kl_refused(Loop *l, uint64_t wr_id, struct rs_mkey_entry *e,
                       const char *what)
{
    uint32_t key = ind_reg(l, l->pd, e, 3, KL_RIGHTS);

    g_test_message("entry refused: %s", what);
    fill(l->d, l->dst, KL_FILL, LOOP_BUF);
    kl_write(l, wr_id, 0, key, l->src, 0x300, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l->d, l->dst, KL_FILL, LOOP_BUF));
    RS_ASSERT_OK(qrs_destroy(l->d, RS_CMD_DEREG_MR, key));
}

static void test_entry_protection(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    struct rs_mkey_entry e[3];
    uint32_t pd2, mr, mr_pd2, mr_ro, fr, k1, gone, key;
    uint64_t pbl;
    Loop l;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    pd2 = new_pd(l.d);
    mr = loop_mr_access(&l, l.dst, 2 * PAGE, KL_RIGHTS);
    mr_pd2 = eng_mr(l.d, pd2, 0, l.dst + 2 * PAGE, PAGE, KL_RIGHTS);
    mr_ro = loop_mr_access(&l, l.dst + 2 * PAGE, PAGE,
                           RS_ACCESS_REMOTE_READ);
    e[0] = (struct rs_mkey_entry) { l.dst, 0x100, mr };
    e[1] = (struct rs_mkey_entry) { l.dst + PAGE, 0x100, mr };
    e[2] = (struct rs_mkey_entry) { l.dst + 2 * PAGE, 0x100, mr_pd2 };
    kl_refused(&l, 0x41, e, "another PD");
    e[2].key = mr_ro;
    kl_refused(&l, 0x42, e, "no local write");
    /* ... but READ through it needs none. */
    key = ind_reg(&l, l.pd, e, 3, KL_RIGHTS);
    loop_pattern(&l, l.dst + 2 * PAGE, 0x100, 0x21);
    loop_post_op(&l, &l.a, 0x43, RS_WR_RDMA_READ, 0, 0x200, key, l.src,
                 0x100, l.src_key);
    fr_expect(&l, 0x43, RS_WR_RDMA_READ, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 2 * PAGE, 0x100);
    e[2] = (struct rs_mkey_entry) { l.dst + 2 * PAGE - 0x80, 0x100, mr };
    kl_refused(&l, 0x44, e, "range beyond the entry's MR");
    e[2] = (struct rs_mkey_entry) { l.dst + 0x200, 0x100, kl_tag(mr, 0x99) };
    kl_refused(&l, 0x45, e, "stale tag");
    /* An ODP MR, even with its page mapped, is no entry. */
    key = odp_mr(l.d, l.pd, l.dst + 3 * PAGE, PAGE);
    odp_map(l.d, key, 0, l.dst + 3 * PAGE, l.dst + 3 * PAGE, 1,
            RS_ODP_PAGE_READ | RS_ODP_PAGE_WRITE);
    e[2] = (struct rs_mkey_entry) { l.dst + 3 * PAGE, 0x100, key };
    kl_refused(&l, 0x4e, e, "ODP MR");
    kl_write(&l, 0x4f, l.dst + 3 * PAGE, key, l.src, 0x100, RS_WC_SUCCESS);
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DEREG_MR, key));

    /* A fast-registration MR as entry, then invalidated. */
    fr = fr_alloc(&l, l.pd, 1);
    pbl = qrs_alloc_zeroed(l.d, 8);
    qtest_writeq(qrs_qts(l.d), pbl, l.dst + 3 * PAGE);
    k1 = kl_tag(fr, 0x5a);
    fr_post_reg(&l, &l.b, 0x46, k1, FR_IOVA, PAGE, pbl, 1,
                RS_ACCESS_LOCAL_WRITE);
    fr_expect(&l, 0x46, RS_WR_REG_MR, RS_WC_SUCCESS);
    e[2] = (struct rs_mkey_entry) { FR_IOVA + 0x10, 0x100, k1 };
    key = ind_reg(&l, l.pd, e, 3, KL_RIGHTS);
    fill(l.d, l.dst, KL_FILL, LOOP_BUF);
    loop_pattern(&l, l.src, 0x300, 0x35);
    kl_write(&l, 0x47, 0, key, l.src, 0x300, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src + 0x200, l.dst + 3 * PAGE + 0x10, 0x100);
    loop_post_op(&l, &l.b, 0x48, RS_WR_LOCAL_INV, k1, 0, 0, 0, 0, 0);
    fr_expect(&l, 0x48, RS_WR_LOCAL_INV, RS_WC_SUCCESS);
    fill(l.d, l.dst, KL_FILL, LOOP_BUF);
    kl_write(&l, 0x49, 0, key, l.src, 0x300, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l.d, l.dst, KL_FILL, LOOP_BUF));

    /* DEREG_MR of an entry's MR; a new MR in its slot has another tag. */
    gone = loop_mr_access(&l, l.dst + 2 * PAGE, PAGE, KL_RIGHTS);
    e[2] = (struct rs_mkey_entry) { l.dst + 2 * PAGE, 0x100, gone };
    key = ind_reg(&l, l.pd, e, 3, KL_RIGHTS);
    kl_write(&l, 0x4a, 0, key, l.src, 0x300, RS_WC_SUCCESS);
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DEREG_MR, gone));
    fill(l.d, l.dst, KL_FILL, LOOP_BUF);
    kl_write(&l, 0x4b, 0, key, l.src, 0x300, RS_WC_REM_ACCESS_ERR);
    g_assert_cmphex(loop_mr_access(&l, l.dst + 2 * PAGE, PAGE, KL_RIGHTS) >>
                    RS_MKEY_INDEX_SHIFT, ==, gone >> RS_MKEY_INDEX_SHIFT);
    kl_write(&l, 0x4c, 0, key, l.src, 0x300, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l.d, l.dst, KL_FILL, LOOP_BUF));
    /* A local SGE through it: a local protection error. */
    loop_post_op(&l, &l.a, 0x4d, RS_WR_RDMA_WRITE, 0, l.src, l.src_key, 0,
                 0x300, key);
    fr_expect(&l, 0x4d, 0, RS_WC_LOC_PROT_ERR);
    loop_reconnect(&l);
    RS_ASSERT_STATUS(qrs_destroy(l.d, RS_CMD_DESTROY_PD, pd2),
                     RS_STATUS_BUSY);
    assert_alive(l.d);
}

/*
 * Nesting: a key over a key over a key over MRs (2 levels below the key
 * named) works, one more level is refused; a key whose entry names
 * itself (filled by a work request) is refused without looping.
 */
static void test_nesting(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_mkey_entry e[2];
    uint32_t mr, k0, k1, k2, k3, self, ks;
    LoopQp q;
    Loop l;

    loop_setup(&l, obj);
    mr = loop_mr_access(&l, l.dst, LOOP_BUF, KL_RIGHTS);
    e[0] = (struct rs_mkey_entry) { l.dst + 0x100, 0x80, mr };
    e[1] = (struct rs_mkey_entry) { l.dst + 0x1000, 0x80, mr };
    k0 = ind_reg(&l, l.pd, e, 2, KL_RIGHTS);
    /* Each level takes [0x40, 0xc0) of the one below. */
    e[0] = (struct rs_mkey_entry) { 0x40, 0x80, k0 };
    k1 = ind_reg(&l, l.pd, e, 1, KL_RIGHTS);
    e[0].key = k1;
    k2 = ind_reg(&l, l.pd, e, 1, KL_RIGHTS);
    e[0].key = k2;
    k3 = ind_reg(&l, l.pd, e, 1, KL_RIGHTS);

    fill(l.d, l.dst, KL_FILL, LOOP_BUF);
    loop_pattern(&l, l.src, 0x80, 0x17);
    kl_write(&l, 0x51, 0, k1, l.src, 0x80, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 0x140, 0x40);
    loop_assert_same(&l, l.src + 0x40, l.dst + 0x1000, 0x40);
    fill(l.d, l.dst, KL_FILL, LOOP_BUF);
    /* k2 [0x40, 0xc0) is k1 [0x80, 0x100): beyond k1's 0x80 bytes. */
    kl_write(&l, 0x52, 0, k2, l.src, 0x80, RS_WC_REM_ACCESS_ERR);
    kl_write(&l, 0x53, 0, k2, l.src, 0x40, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 0x1000, 0x40);
    g_assert_true(is_filled(l.d, l.dst, KL_FILL, 0x1000));
    fill(l.d, l.dst, KL_FILL, LOOP_BUF);
    kl_write(&l, 0x54, 0, k3, l.src, 0x10, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l.d, l.dst, KL_FILL, LOOP_BUF));

    /* Depth 2 with wider ranges works; depth 3 does not. */
    e[0] = (struct rs_mkey_entry) { 0, 0x100, k0 };
    k1 = ind_reg(&l, l.pd, e, 1, KL_RIGHTS);
    e[0].key = k1;
    k2 = ind_reg(&l, l.pd, e, 1, KL_RIGHTS);
    e[0].key = k2;
    k3 = ind_reg(&l, l.pd, e, 1, KL_RIGHTS);
    kl_write(&l, 0x55, 0x60, k2, l.src, 0x40, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 0x160, 0x20);
    loop_assert_same(&l, l.src + 0x20, l.dst + 0x1000, 0x20);
    fill(l.d, l.dst, KL_FILL, LOOP_BUF);
    kl_write(&l, 0x56, 0x60, k3, l.src, 0x40, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l.d, l.dst, KL_FILL, LOOP_BUF));

    /* A cycle: the key's only entry is itself. */
    self = kl_empty(&l, RS_CMD_REG_INDIRECT_MKEY, l.pd, 1);
    ks = kl_tag(self, 0x42);
    e[0] = (struct rs_mkey_entry) { 0, 0x100, ks };
    kl_qp(&l, &q, l.pd, 256);
    kl_post_reg(&l, &q, 0x57, RS_WR_REG_INDIRECT, ks, 1, KL_RIGHTS, 0, e,
                sizeof(e[0]));
    fr_expect(&l, 0x57, RS_WR_REG_INDIRECT, RS_WC_SUCCESS);
    kl_write(&l, 0x58, 0, ks, l.src, 0x100, RS_WC_REM_ACCESS_ERR);
    loop_post_op(&l, &l.a, 0x59, RS_WR_RDMA_WRITE, 0, l.dst, l.dst_key, 0,
                 0x100, ks);
    fr_expect(&l, 0x59, 0, RS_WC_LOC_PROT_ERR);
    loop_reconnect(&l);
    g_assert_true(is_filled(l.d, l.dst, KL_FILL, LOOP_BUF));
    assert_alive(l.d);
}

/* REG_*_MKEY with one field bad: its status; no key slot is taken. */
static void test_bad_commands(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_mkey_entry e[2];
    struct rs_pattern_entry p[1];
    uint64_t il, pl;
    uint32_t mr, key, first;
    Loop l;

    loop_setup(&l, obj);
    mr = loop_mr(&l, l.dst, LOOP_BUF);
    e[0] = (struct rs_mkey_entry) { l.dst, 0x100, mr };
    e[1] = (struct rs_mkey_entry) { l.dst + 0x200, 0x100, mr };
    p[0] = (struct rs_pattern_entry) {
        .addr = l.dst, .key = mr, .bytes_count = 8, .bytes_skip = 8,
    };
    il = kl_list(l.d, e, sizeof(e));
    pl = kl_list(l.d, p, sizeof(p));
    first = ind_reg(&l, l.pd, e, 2, STD_ACCESS);
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DEREG_MR, first));

#define BAD(st, op, pd, gid, list, n, acc, rep, fl)                         \
    RS_ASSERT_STATUS(kl_reg_st(l.d, op, pd, gid, list, n, acc, rep, fl,     \
                               &key), st)
#define IND RS_CMD_REG_INDIRECT_MKEY
#define PAT RS_CMD_REG_PATTERN_MKEY
    BAD(RS_STATUS_BAD_SIZE, IND, l.pd, 0, il, 0, STD_ACCESS, 0, 0);
    BAD(RS_STATUS_BAD_SIZE, IND, l.pd, 0, il, RS_MKEY_MAX_ENTRIES + 1,
        STD_ACCESS, 0, 0);
    BAD(RS_STATUS_BAD_SIZE, PAT, l.pd, 0, 0, 0, 0, 0, RS_MKEY_F_EMPTY);
    BAD(RS_STATUS_BAD_ALIGN, IND, l.pd, 0, il + 4, 2, STD_ACCESS, 0, 0);
    BAD(RS_STATUS_BAD_ADDR, IND, l.pd, 0, FAR_ADDR, 2, STD_ACCESS, 0, 0);
    BAD(RS_STATUS_BAD_ADDR, IND, l.pd, 0, ram_end(l.d) - 16, 2, STD_ACCESS,
        0, 0);
    BAD(RS_STATUS_BAD_PARAM, PAT, l.pd, 0, pl, 1, STD_ACCESS, 0, 0);
    BAD(RS_STATUS_BAD_PARAM, IND, l.pd, 0, il, 2, STD_ACCESS, 1, 0);
    BAD(RS_STATUS_BAD_ACCESS, IND, l.pd, 0, il, 2,
        STD_ACCESS | RS_ACCESS_MW_BIND, 0, 0);
    BAD(RS_STATUS_BAD_ACCESS, IND, l.pd, 0, il, 2, RS_ACCESS_REMOTE_WRITE,
        0, 0);
    BAD(RS_STATUS_BAD_ACCESS, PAT, l.pd, 0, pl, 1, RS_ACCESS_UNKNOWN, 4, 0);
    BAD(RS_STATUS_BAD_HANDLE, IND, l.pd + 1, 0, il, 2, STD_ACCESS, 0, 0);
    BAD(RS_STATUS_BAD_HANDLE, IND, 0, 0, il, 2, STD_ACCESS, 0, 0);
    BAD(RS_STATUS_BAD_NETID, IND, l.pd, 5, il, 2, STD_ACCESS, 0, 0);
    BAD(RS_STATUS_BAD_PARAM, IND, l.pd, 0, il, 2, STD_ACCESS, 0, 2);
    BAD(RS_STATUS_BAD_PARAM, IND, l.pd, 0, il, 2, 0, 0, RS_MKEY_F_EMPTY);
    BAD(RS_STATUS_BAD_PARAM, PAT, l.pd, 0, 0, 2, 0, 3, RS_MKEY_F_EMPTY);
    /* Entries: key 0 (the reserved lkey), a key of slot 0, length 0. */
    e[1].key = RS_LOCAL_DMA_LKEY;
    BAD(RS_STATUS_BAD_PARAM, IND, l.pd, 0, kl_list(l.d, e, sizeof(e)), 2,
        STD_ACCESS, 0, 0);
    e[1].key = 0x77;
    BAD(RS_STATUS_BAD_PARAM, IND, l.pd, 0, kl_list(l.d, e, sizeof(e)), 2,
        STD_ACCESS, 0, 0);
    e[1].key = mr;
    e[1].length = 0;
    BAD(RS_STATUS_BAD_PARAM, IND, l.pd, 0, kl_list(l.d, e, sizeof(e)), 2,
        STD_ACCESS, 0, 0);
    e[1].addr = ~0ull - 0x10;
    e[1].length = 0x100;
    BAD(RS_STATUS_BAD_PARAM, IND, l.pd, 0, kl_list(l.d, e, sizeof(e)), 2,
        STD_ACCESS, 0, 0);
    p[0].rsvd = 1;
    BAD(RS_STATUS_BAD_PARAM, PAT, l.pd, 0, kl_list(l.d, p, sizeof(p)), 1,
        STD_ACCESS, 4, 0);
    p[0].rsvd = 0;
    p[0].bytes_count = 0;
    BAD(RS_STATUS_BAD_PARAM, PAT, l.pd, 0, kl_list(l.d, p, sizeof(p)), 1,
        STD_ACCESS, 4, 0);
    /* Its last repetition past 2^64. */
    p[0].bytes_count = 8;
    p[0].bytes_skip = 0x1000;
    p[0].addr = ~0ull - 0x1000;
    BAD(RS_STATUS_BAD_PARAM, PAT, l.pd, 0, kl_list(l.d, p, sizeof(p)), 1,
        STD_ACCESS, 2, 0);
    /* A length of 2^64 bytes: 256 entries of 2^32 - 1, 2^24 + 1 times. */
    {
        g_autofree struct rs_pattern_entry *big =
            g_new0(struct rs_pattern_entry, RS_MKEY_MAX_ENTRIES);
        int i;

        for (i = 0; i < RS_MKEY_MAX_ENTRIES; i++) {
            big[i].key = mr;
            big[i].bytes_count = 0xffffffffu;
        }
        BAD(RS_STATUS_BAD_PARAM, PAT, l.pd, 0,
            kl_list(l.d, big, RS_MKEY_MAX_ENTRIES * sizeof(*big)),
            RS_MKEY_MAX_ENTRIES, STD_ACCESS, (1u << 24) + 1, 0);
        BAD(RS_STATUS_OK, PAT, l.pd, 0,
            kl_list(l.d, big, RS_MKEY_MAX_ENTRIES * sizeof(*big)),
            RS_MKEY_MAX_ENTRIES, STD_ACCESS, 1u << 24, 0);
        RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DEREG_MR, key));
    }
    /* Nothing was allocated: the next key takes the first one's slot. */
    key = ind_reg(&l, l.pd, e, 1, STD_ACCESS);
    g_assert_cmphex(key >> RS_MKEY_INDEX_SHIFT, ==,
                    first >> RS_MKEY_INDEX_SHIFT);
    g_assert_cmphex(key, !=, first);
    /* The entries' keys need not exist yet. */
    e[0].key = kl_tag(mr + (8 << RS_MKEY_INDEX_SHIFT), 3);
    ind_reg(&l, l.pd, e, 1, STD_ACCESS);
#undef BAD
#undef IND
#undef PAT
    assert_alive(l.d);
}

/* A work request on a new QP @q completes with @status (QP failed). */
static void wr_fails(Loop *l, uint32_t pd, uint16_t max_inline,
                     uint64_t wr_id, uint8_t op, uint32_t key, uint16_t n,
                     uint16_t access, uint32_t repeat, const void *ents,
                     size_t size, uint8_t status)
{
    LoopQp q;

    kl_qp(l, &q, pd, max_inline);
    kl_post_reg(l, &q, wr_id, op, key, n, access, repeat, ents, size);
    fr_expect(l, wr_id, op, status);
    g_assert_cmpuint(qp_state(l->d, q.h), ==, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_destroy(l->d, RS_CMD_DESTROY_QP, q.h));
}

/*
 * REG_INDIRECT / REG_PATTERN work requests on a user QP: each bad one
 * refused with its status; LOCAL_INV and a refill with another tag and
 * other entries; SEND with invalidate of such a key.
 */
static void test_work_requests(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    struct rs_mkey_entry e[30];
    struct rs_pattern_entry p[2];
    uint32_t mr, pd2, ek, ek2, pk, listed, full, k1, k2, k3;
    LoopQp q;
    Loop l;
    int i;

    loop_setup(&l, obj);
    pd2 = new_pd(l.d);
    mr = loop_mr_access(&l, l.dst, LOOP_BUF, KL_RIGHTS);
    for (i = 0; i < 30; i++) {
        e[i] = (struct rs_mkey_entry) { l.dst + i * 0x40, 0x20, mr };
    }
    p[0] = (struct rs_pattern_entry) {
        .addr = l.dst, .key = mr, .bytes_count = 4, .bytes_skip = 12,
    };
    p[1] = p[0];
    p[1].addr += 0x800;
    ek = kl_empty(&l, RS_CMD_REG_INDIRECT_MKEY, l.pd, 4);
    ek2 = kl_empty(&l, RS_CMD_REG_INDIRECT_MKEY, pd2, 4);
    pk = kl_empty(&l, RS_CMD_REG_PATTERN_MKEY, l.pd, 2);
    listed = ind_reg(&l, l.pd, e, 2, KL_RIGHTS);
    full = kl_empty(&l, RS_CMD_REG_INDIRECT_MKEY, l.pd, 30);

    /* Free keys resolve nowhere. */
    kl_write(&l, 0x60, 0, ek, l.src, 8, RS_WC_REM_ACCESS_ERR);

    /* Malformed: RS_WC_LOC_QP_OP_ERR. */
    wr_fails(&l, l.pd, 256, 0x61, RS_WR_REG_INDIRECT, ek, 0, KL_RIGHTS, 0,
             e, 0, RS_WC_LOC_QP_OP_ERR);
    wr_fails(&l, l.pd, 256, 0x62, RS_WR_REG_PATTERN, pk, 1, KL_RIGHTS, 0,
             p, sizeof(p[0]), RS_WC_LOC_QP_OP_ERR);
    wr_fails(&l, l.pd, 256, 0x63, RS_WR_REG_INDIRECT, ek, 1,
             KL_RIGHTS | RS_ACCESS_MW_BIND, 0, e, sizeof(e[0]),
             RS_WC_LOC_QP_OP_ERR);
    /* 4 entries fit a slot of 128 bytes, 5 do not. */
    wr_fails(&l, l.pd, 64, 0x64, RS_WR_REG_INDIRECT, ek, 5, KL_RIGHTS, 0,
             e, 4 * sizeof(e[0]), RS_WC_LOC_QP_OP_ERR);
    wr_fails(&l, l.pd, 64, 0x65, RS_WR_REG_PATTERN, pk, 3, KL_RIGHTS, 1,
             p, 2 * sizeof(p[0]), RS_WC_LOC_QP_OP_ERR);
    {
        struct rs_mkey_entry bad = { l.dst, 0x20, RS_LOCAL_DMA_LKEY };

        wr_fails(&l, l.pd, 256, 0x66, RS_WR_REG_INDIRECT, ek, 1, KL_RIGHTS,
                 0, &bad, sizeof(bad), RS_WC_LOC_QP_OP_ERR);
    }
    /* The key: RS_WC_LOC_PROT_ERR. */
    wr_fails(&l, l.pd, 256, 0x67, RS_WR_REG_INDIRECT, listed, 1, KL_RIGHTS,
             0, e, sizeof(e[0]), RS_WC_LOC_PROT_ERR);
    wr_fails(&l, l.pd, 256, 0x68, RS_WR_REG_INDIRECT, pk, 1, KL_RIGHTS, 0,
             e, sizeof(e[0]), RS_WC_LOC_PROT_ERR);
    wr_fails(&l, l.pd, 256, 0x69, RS_WR_REG_PATTERN, ek, 1, KL_RIGHTS, 2,
             p, sizeof(p[0]), RS_WC_LOC_PROT_ERR);
    wr_fails(&l, l.pd, 256, 0x6a, RS_WR_REG_INDIRECT, ek2, 1, KL_RIGHTS, 0,
             e, sizeof(e[0]), RS_WC_LOC_PROT_ERR);
    wr_fails(&l, l.pd, 256, 0x6b, RS_WR_REG_INDIRECT, ek, 5, KL_RIGHTS, 0,
             e, 5 * sizeof(e[0]), RS_WC_LOC_PROT_ERR);
    wr_fails(&l, l.pd, 256, 0x6c, RS_WR_REG_INDIRECT, mr, 1, KL_RIGHTS, 0,
             e, sizeof(e[0]), RS_WC_LOC_PROT_ERR);
    /* None of them filled the key. */
    kl_write(&l, 0x6d, 0, ek, l.src, 8, RS_WC_REM_ACCESS_ERR);

    /* Fill, use, and a second fill of a Valid key is refused. */
    kl_qp(&l, &q, l.pd, 256);
    k1 = kl_tag(ek, 0x10);
    kl_post_reg(&l, &q, 0x70, RS_WR_REG_INDIRECT, k1, 4, KL_RIGHTS, 0, e,
                4 * sizeof(e[0]));
    fr_expect(&l, 0x70, RS_WR_REG_INDIRECT, RS_WC_SUCCESS);
    fill(l.d, l.dst, KL_FILL, LOOP_BUF);
    loop_pattern(&l, l.src, 0x80, 0x3c);
    kl_write(&l, 0x71, 0, k1, l.src, 0x80, RS_WC_SUCCESS);
    for (i = 0; i < 4; i++) {
        loop_assert_same(&l, l.src + i * 0x20, l.dst + i * 0x40, 0x20);
        g_assert_true(is_filled(l.d, l.dst + i * 0x40 + 0x20, KL_FILL,
                                0x20));
    }
    wr_fails(&l, l.pd, 256, 0x72, RS_WR_REG_INDIRECT, kl_tag(ek, 0x11), 1,
             KL_RIGHTS, 0, e, sizeof(e[0]), RS_WC_LOC_PROT_ERR);
    kl_write(&l, 0x73, 0, k1, l.src, 0x80, RS_WC_SUCCESS);

    /* LOCAL_INV on the user QP, then refill with other entries. */
    loop_post_op(&l, &q, 0x74, RS_WR_LOCAL_INV, k1, 0, 0, 0, 0, 0);
    fr_expect(&l, 0x74, RS_WR_LOCAL_INV, RS_WC_SUCCESS);
    kl_write(&l, 0x75, 0, k1, l.src, 0x80, RS_WC_REM_ACCESS_ERR);
    k2 = kl_tag(ek, 0x20);
    kl_post_reg(&l, &q, 0x76, RS_WR_REG_INDIRECT, k2, 2, KL_RIGHTS, 0,
                e + 10, 2 * sizeof(e[0]));
    fr_expect(&l, 0x76, RS_WR_REG_INDIRECT, RS_WC_SUCCESS);
    fill(l.d, l.dst, KL_FILL, LOOP_BUF);
    kl_write(&l, 0x77, 0, k1, l.src, 0x40, RS_WC_REM_ACCESS_ERR);
    kl_write(&l, 0x78, 0, k2, l.src, 0x40, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 10 * 0x40, 0x20);
    loop_assert_same(&l, l.src + 0x20, l.dst + 11 * 0x40, 0x20);
    g_assert_true(is_filled(l.d, l.dst, KL_FILL, 10 * 0x40));
    /* Its length is the new entries': 0x40. */
    kl_write(&l, 0x79, 0x30, k2, l.src, 0x20, RS_WC_REM_ACCESS_ERR);

    /* A pattern key filled by a work request: two interleaved columns. */
    k3 = kl_tag(pk, 0x30);
    kl_qp(&l, &q, l.pd, 256);
    kl_post_reg(&l, &q, 0x7a, RS_WR_REG_PATTERN, k3, 2, KL_RIGHTS, 3, p,
                sizeof(p));
    fr_expect(&l, 0x7a, RS_WR_REG_PATTERN, RS_WC_SUCCESS);
    fill(l.d, l.dst, KL_FILL, LOOP_BUF);
    kl_write(&l, 0x7b, 0, k3, l.src, 24, RS_WC_SUCCESS);
    for (i = 0; i < 3; i++) {
        loop_assert_same(&l, l.src + i * 8, l.dst + i * 16, 4);
        loop_assert_same(&l, l.src + i * 8 + 4, l.dst + 0x800 + i * 16, 4);
    }
    g_assert_true(is_filled(l.d, l.dst + 4, KL_FILL, 12));
    g_assert_true(is_filled(l.d, l.dst + 0x800 + 3 * 16, KL_FILL, 16));

    /* 28 entries: a slot of 512 bytes. */
    kl_post_reg(&l, &q, 0x7c, RS_WR_REG_INDIRECT, kl_tag(full, 1), 28,
                KL_RIGHTS, 0, e, 28 * sizeof(e[0]));
    fr_expect(&l, 0x7c, RS_WR_REG_INDIRECT, RS_WC_SUCCESS);
    kl_write(&l, 0x7d, 27 * 0x20, kl_tag(full, 1), l.src, 0x20,
             RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 27 * 0x40, 0x20);

    /* SEND with invalidate of the pattern key: Free again. */
    loop_post_recv(&l, &l.b, 0x7e, l.src + PAGE, 64, l.src_key);
    loop_post_op(&l, &l.a, 0x7f, RS_WR_SEND_INV, k3, 0, 0, l.src, 16,
                 l.src_key);
    {
        struct rs_cqe cqe;

        loop_poll(&l, &cqe);
        g_assert_cmphex(cqe.wr_id, ==, 0x7e);
        g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
        g_assert_true(cqe.wc_flags & RS_WC_F_INV);
        g_assert_cmphex(cqe.imm_or_inv, ==, k3);
    }
    fr_expect(&l, 0x7f, RS_WR_SEND_INV, RS_WC_SUCCESS);
    kl_write(&l, 0x80, 0, k3, l.src, 8, RS_WC_REM_ACCESS_ERR);
    /* A key made with a list is not invalidated. */
    loop_post_op(&l, &l.b, 0x81, RS_WR_LOCAL_INV, listed, 0, 0, 0, 0, 0);
    fr_expect(&l, 0x81, 0, RS_WC_LOC_PROT_ERR);
    loop_reconnect(&l);
    kl_write(&l, 0x82, 0, listed, l.src, 0x40, RS_WC_SUCCESS);
    assert_alive(l.d);
}

/*
 * Both kinds across a migration: an indirect key made with a list, a
 * pattern key filled by a work request and an empty one; on the
 * destination accesses through them land, and the empty one fills.
 */
static void test_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_mkey_entry e[3];
    struct rs_pattern_entry p = { .bytes_count = 8, .bytes_skip = 24 };
    QRdmaSession *src, *d;
    uint32_t mr, ik, pk, fk, pk1, fk1;
    QTestState *to;
    QPCIBus *bus;
    LoopQp q;
    Loop l;
    int i;

    loop_setup(&l, obj);
    src = l.d;
    mr = loop_mr_access(&l, l.dst, LOOP_BUF, KL_RIGHTS);
    for (i = 0; i < 3; i++) {
        e[i] = (struct rs_mkey_entry) {
            l.dst + (2 - i) * PAGE + 0x10 * i, 0x100 + i, mr,
        };
    }
    ik = ind_reg(&l, l.pd, e, 3, KL_RIGHTS);
    pk = kl_empty(&l, RS_CMD_REG_PATTERN_MKEY, l.pd, 1);
    fk = kl_empty(&l, RS_CMD_REG_INDIRECT_MKEY, l.pd, 3);
    p.addr = l.dst + 3 * PAGE;
    p.key = mr;
    pk1 = kl_tag(pk, 0x61);
    kl_qp(&l, &q, l.pd, 256);
    kl_post_reg(&l, &q, 0x90, RS_WR_REG_PATTERN, pk1, 1, KL_RIGHTS, 16, &p,
                sizeof(p));
    fr_expect(&l, 0x90, RS_WR_REG_PATTERN, RS_WC_SUCCESS);

    to = mig_move(qrs_qts(src), NULL, NULL);
    bus = qpci_new_pc(to, NULL);
    d = g_new0(QRdmaSession, 1);
    mig_attach(d, bus, src);
    l.d = d;

    fill(l.d, l.dst, KL_FILL, LOOP_BUF);
    loop_pattern(&l, l.src, 0x303, 0x5e);
    kl_write(&l, 0x91, 0, ik, l.src, 0x303, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 2 * PAGE, 0x100);
    loop_assert_same(&l, l.src + 0x100, l.dst + PAGE + 0x10, 0x101);
    loop_assert_same(&l, l.src + 0x201, l.dst + 0x20, 0x102);
    kl_write(&l, 0x92, 8 * 15, pk1, l.src, 8, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 3 * PAGE + 15 * 32, 8);
    kl_write(&l, 0x93, 8 * 16 - 4, pk1, l.src, 8, RS_WC_REM_ACCESS_ERR);

    fk1 = kl_tag(fk, 0x62);
    kl_post_reg(&l, &q, 0x94, RS_WR_REG_INDIRECT, fk1, 3, KL_RIGHTS, 0, e,
                sizeof(e));
    fr_expect(&l, 0x94, RS_WR_REG_INDIRECT, RS_WC_SUCCESS);
    fill(l.d, l.dst, KL_FILL, LOOP_BUF);
    kl_write(&l, 0x95, 0x180, fk1, l.src, 0x100, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + PAGE + 0x10 + 0x80, 0x81);
    loop_assert_same(&l, l.src + 0x81, l.dst + 0x20, 0x7f);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, ik));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, pk1));
    assert_alive(d);

    g_free(d);
    qpci_free_pc(bus);
    qtest_quit(to);
}

/* A key of @op on adapter @p over its buffer's MR (GID 0). */
static uint32_t peer_kl(Peer *p, uint8_t op, const void *ents, size_t size,
                        uint16_t n, uint32_t repeat)
{
    uint32_t key = 0;

    RS_ASSERT_OK(kl_reg_st(p->d, op, p->pd, 0, kl_list(p->d, ents, size), n,
                           KL_RIGHTS, repeat, 0, &key));
    return key;
}

/*
 * Between two adapters: A writes and reads through B's indirect key (the
 * bytes split over its three ranges, B's whole buffer checked byte by
 * byte), writes a column through B's pattern key, a FETCH_ADD inside
 * one entry works; one straddling two entries is refused with a remote
 * access error, B's memory as it was.
 */
static void test_pair(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint32_t off[3] = { 0x100, 0x3084, 0x6040 };
    static const uint32_t len[3] = { 0x2fc, 0x204, 0x500 };
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_mkey_entry e[3];
    struct rs_pattern_entry pe = { .bytes_count = 8, .bytes_skip = 56 };
    struct rs_sge ss;
    struct rs_cqe cqe;
    uint32_t ik, pk, done;
    QTestState *qts;
    LoopQp q[2];
    int i;

    pair_setup(&pr, obj, data, alloc);
    qts = qrs_qts(b->d);
    pair_rc(&pr, q, 0, KL_RIGHTS);
    for (i = 0; i < 3; i++) {
        e[i] = (struct rs_mkey_entry) { b->buf + off[i], len[i], b->key[0] };
    }
    ik = peer_kl(b, RS_CMD_REG_INDIRECT_MKEY, e, sizeof(e), 3, 0);
    pe.addr = b->buf + 0x7000 + 8;
    pe.key = b->key[0];
    pk = peer_kl(b, RS_CMD_REG_PATTERN_MKEY, &pe, sizeof(pe), 1, 16);

    peer_fill(a, 0x1000, THREE_LEN, 0x11);
    ss = peer_sge(a, 0x1000, THREE_LEN);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &ss, 1, 0, ik, 0);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    q[0].qpn, 0);
    for (i = 0, done = 0; i < 3; done += len[i], i++) {
        img_move(b, off[i], a, 0x1000 + done, len[i]);
    }
    peer_check(b);

    /* READ [0x200, 0x800) of the key: the end of entry 0, 1, part of 2. */
    peer_fill(b, 0, PAIR_BUF, 0x23);
    ss = peer_sge(a, 0x4000, 0x600);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa2, &ss, 1, 0x200, ik, 0);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn,
                    0x600);
    img_move(a, 0x4000, b, 0x300, 0xfc);
    img_move(a, 0x40fc, b, 0x3084, 0x204);
    img_move(a, 0x4300, b, 0x6040, 0x300);
    peer_check(a);

    /* Column 1 of a 16 x 64-byte matrix at 0x7000 of B. */
    peer_fill(a, 0x2000, 128, 0x37);
    ss = peer_sge(a, 0x2000, 128);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa3, &ss, 1, 0, pk, 0);
    pair_expect_cqe(&pr, 0, 0xa3, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                    q[0].qpn, 0);
    for (i = 0; i < 16; i++) {
        img_move(b, 0x7000 + i * 64 + 8, a, 0x2000 + i * 8, 8);
    }
    peer_check(b);

    /* FETCH_ADD at key offset 0x300: entry 1, B's buffer + 0x3088. */
    qtest_writeq(qts, b->buf + 0x3088, 7000);
    ss = peer_sge(a, 0x5000, 8);
    {
        struct rs_send_wqe_ctrl w = {
            .wr_id = 0xa4, .opcode = RS_WR_ATOMIC_FETCH_ADD,
            .flags = RS_WQE_F_SIGNALED, .num_sge = 1, .remote_addr = 0x300,
            .rkey = ik, .compare_add = 7,
        };

        eng_post_send(a->d, &q[0], &w, &ss, 1);
        pair_expect_cqe(&pr, 0, 0xa4, RS_WC_SUCCESS,
                        RS_WR_ATOMIC_FETCH_ADD, q[0].qpn, 0);
        g_assert_cmpuint(qtest_readq(qts, b->buf + 0x3088), ==, 7007);
        g_assert_cmpuint(qtest_readq(qrs_qts(a->d), a->buf + 0x5000), ==,
                         7000);
        peer_dont_care(a, 0x5000, 8);
        stq_le_p(b->img + 0x3088, 7007);
        peer_check(b);

        /* At 0x2f8: half in entry 0, half in entry 1. */
        w.wr_id = 0xa5;
        w.remote_addr = 0x2f8;
        eng_post_send(a->d, &q[0], &w, &ss, 1);
        pair_poll(&pr, 0, &cqe);
        g_assert_cmphex(cqe.wr_id, ==, 0xa5);
        g_assert_cmpuint(cqe.status, ==, RS_WC_REM_ACCESS_ERR);
        g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_ERR);
        peer_check(b);
    }
    pair_teardown(&pr);
}

/*
 * A stream whose indirect key is wrong fails the incoming migration
 * cleanly: the key's subsection (kind, room, entries in use, repeat, an
 * entry) patched into something no key can be.  The stream as saved
 * loads.
 */
static void test_corrupt_stream(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    static const char sub_name[] = "\x05\x19rdma-session/mr/mkey-list";
    static const char *const what[] = {
        "kind 7", "kind 0", "room 300", "room 0", "more entries than room",
        "indirect with repeat", "entry of length 0",
        "entries longer than the key",
    };
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-mkl-XXXXXX", NULL);
    g_autofree char *path = g_strdup_printf("%s/state", tmpdir);
    g_autofree char *bad = g_strdup_printf("%s/bad", tmpdir);
    g_autofree uint8_t *stream = NULL;
    struct rs_mkey_entry e[3];
    uint32_t mr;
    char *err = NULL;
    size_t sub;
    gsize len;
    Loop l;
    int i;

    loop_setup(&l, obj);
    mr = loop_mr_access(&l, l.dst, LOOP_BUF, KL_RIGHTS);
    for (i = 0; i < 3; i++) {
        e[i] = (struct rs_mkey_entry) { l.dst + i * 0x100, 0x80, mr };
    }
    ind_reg(&l, l.pd, e, 3, KL_RIGHTS);
    mig_save(qrs_qts(l.d), path);
    g_assert_true(g_file_get_contents(path, (gchar **)&stream, &len, NULL));

    /* Version (4), kind, room, in use, repeat, then the entries. */
    sub = mig_find(stream, len, (const uint8_t *)sub_name,
                   sizeof(sub_name) - 1) + sizeof(sub_name) - 1 + 4;
    g_assert_cmpuint(stream[sub], ==, RS_WR_REG_INDIRECT);
    g_assert_cmpuint(lduw_be_p(stream + sub + 1), ==, 3);
    g_assert_cmpuint(lduw_be_p(stream + sub + 3), ==, 3);
    g_assert_cmpuint(ldl_be_p(stream + sub + 5), ==, 0);
    g_assert_cmphex(ldq_be_p(stream + sub + 9), ==, l.dst);
    g_assert_cmphex(ldl_be_p(stream + sub + 9 + 8), ==, mr);
    g_assert_cmpuint(ldl_be_p(stream + sub + 9 + 12), ==, 0x80);

    for (i = 0; i < ARRAY_SIZE(what); i++) {
        g_autofree uint8_t *copy = g_memdup2(stream, len);

        g_test_message("corrupt stream: %s", what[i]);
        switch (i) {
        case 0:
            copy[sub] = 7;
            break;
        case 1:
            copy[sub] = 0;
            break;
        case 2:
            stw_be_p(copy + sub + 1, 300);
            break;
        case 3:
            stw_be_p(copy + sub + 1, 0);
            break;
        case 4:
            stw_be_p(copy + sub + 3, 4);
            break;
        case 5:
            stl_be_p(copy + sub + 5, 1);
            break;
        case 6:
            stl_be_p(copy + sub + 9 + 12, 0);
            break;
        default:
            stl_be_p(copy + sub + 9 + 20 + 12, 0x81);
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

static void register_mkey_list_tests(void)
{
    QOSGraphTestOptions pair = { .before = pair_before };

    qos_add_test("mkey-list/indirect", "rdma-session", test_indirect_three,
                 NULL);
    qos_add_test("mkey-list/bounds", "rdma-session", test_indirect_bounds,
                 NULL);
    qos_add_test("mkey-list/pattern", "rdma-session", test_pattern, NULL);
    qos_add_test("mkey-list/entry-protection", "rdma-session",
                 test_entry_protection, NULL);
    qos_add_test("mkey-list/nesting", "rdma-session", test_nesting, NULL);
    qos_add_test("mkey-list/bad-commands", "rdma-session", test_bad_commands,
                 NULL);
    qos_add_test("mkey-list/work-requests", "rdma-session",
                 test_work_requests, NULL);
    rs_add_standalone_test("mkey-list/migrate", test_migrate, NULL);
    rs_add_standalone_test("mkey-list/pair", test_pair, &pair);
    rs_add_standalone_test("mkey-list/corrupt-stream",
                           test_corrupt_stream, NULL);
}

libqos_init(register_mkey_list_tests);
