/*
 * rdma-session device-only benchmark: two adapters in one QEMU, their
 * netdevs on one hub, and no vCPU (qtest), so what is measured is the
 * device's own cost: the QEMU process's CPU time per packet and per KiB
 * for RC WRITE, SEND and READ between the adapters, with and without
 * bundles, next to this host's memcpy and CRC-32 (zlib, as the ICRC is
 * defined) speed measured in the same run by this process.
 *
 * The work requests are written into the rings in bulk (one qtest write
 * per batch of DEVB_BATCH) and rung with one doorbell, and completions
 * are read in bulk, so the qtest protocol costs a few commands per batch;
 * what QEMU spends on them (per command and per byte, measured on the
 * idle pair) is subtracted, and shown.
 *
 * As a qtest each case moves DEVB_SMOKE_KIB and checks every byte the
 * receiver got.  With RS_DEVBENCH_MIB set it moves that many MiB per
 * case and appends its figures as JSON lines to RS_DEVBENCH_OUT
 * (bench/run-bench.sh --device): no timing is ever asserted.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <zlib.h>
#include "rs-test.h"
#include "rs-peer.h"

#define DEVB_HUB        9
#define DEVB_BUF        (2 * MiB)
#define DEVB_LOG        8               /* SQ, RQ and CQ: 256 entries */
#define DEVB_BATCH      128
#define DEVB_CQ_LOG     9
#define DEVB_SMOKE_KIB  (4 * 1024)
#define DEVB_CAL        2000
#define DEVB_MAX_MSGS   (64 * 1024)

typedef struct DevbCase {
    const char *name;
    uint8_t opcode;                     /* RS_WR_RDMA_WRITE, SEND, READ */
    uint32_t size;
} DevbCase;

static const DevbCase devb_cases[] = {
    { "write_64", RS_WR_RDMA_WRITE, 64 },
    { "write_4k", RS_WR_RDMA_WRITE, 4096 },
    { "write_64k", RS_WR_RDMA_WRITE, 65536 },
    { "send_4k", RS_WR_SEND, 4096 },
    { "read_64k", RS_WR_RDMA_READ, 65536 },
};

/* The qtest commands a case issued, and their payload bytes. */
typedef struct DevbHarness {
    uint64_t cmds, steps, bytes;    /* steps: clock steps, of the cmds */
} DevbHarness;

static DevbHarness devb_h;

typedef struct DevbSide {
    QRdmaSession *d;
    LoopQp q;
    EngCq cq;
    uint64_t buf;
    uint32_t key;
} DevbSide;

/*
 * The QEMU process's CPU time, ns: the sum of its threads' run time
 * (/proc/PID/task/TID/schedstat, in ns, where /proc/PID/stat counts in
 * clock ticks of 10 ms).
 */
static uint64_t devb_cpu_ns(QTestState *qts)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/task", qtest_pid(qts));
    GDir *d = g_dir_open(dir, 0, NULL);
    const char *tid;
    uint64_t sum = 0;

    g_assert_nonnull(d);
    while ((tid = g_dir_read_name(d))) {
        g_autofree char *path = g_strdup_printf("%s/%s/schedstat", dir, tid);
        g_autofree char *text = NULL;

        /* a thread that ended meanwhile has no file any more */
        if (g_file_get_contents(path, &text, NULL, NULL)) {
            sum += g_ascii_strtoull(text, NULL, 10);
        }
    }
    g_dir_close(d);
    return sum;
}

static uint64_t devb_now_ns(void)
{
    return g_get_monotonic_time() * 1000;
}

/* Both adapters on hub DEVB_HUB: every frame goes from one to the other. */
static void *devb_before(GString *cmd_line, void *arg)
{
    static const char user[] = RS_QOS_NETDEV_OPTS;
    const char *at = strstr(cmd_line->str, user);
    PairSockets *s = g_new0(PairSockets, 1);
    g_autofree char *hub = g_strdup_printf(" -netdev hubport,id="
                                           RS_QOS_NETDEV_ID ",hubid=%d ",
                                           DEVB_HUB);
    const char *props = arg ? arg : "";
    const char *a = strstr(cmd_line->str, RS_QOS_DEVICE_OPTS);

    g_assert_nonnull(at);
    g_assert_nonnull(a);
    g_string_insert(cmd_line, a - cmd_line->str + strlen(RS_QOS_DEVICE_OPTS),
                    props);
    at = strstr(cmd_line->str, user);
    g_string_erase(cmd_line, at - cmd_line->str, strlen(user));
    g_string_insert(cmd_line, at - cmd_line->str, hub);
    g_string_append_printf(cmd_line, " -netdev hubport,id=" PAIR_NETDEV
                           ",hubid=%d -device rdma-session,netdev="
                           PAIR_NETDEV ",mac=" PAIR_MAC_STR
                           ",addr=0x%x.0,bundle=off%s ",
                           DEVB_HUB, PAIR_SLOT, props);
    /* No test-side wire: pair_setup()'s sockets stay closed. */
    s->test[0] = s->test[1] = s->qemu[0] = s->qemu[1] = -1;
    s->old[0] = s->old[1] = -1;
    s->b_props = g_strdup(props);   /* the test's mode */
    g_test_queue_free(s->b_props);
    g_test_queue_free(s);
    qos_invalidate_command_line();
    return s;
}

static void devb_side(Pair *pr, int i, DevbSide *s)
{
    Peer *p = &pr->p[i];

    s->d = p->d;
    s->buf = loop_buf(s->d, DEVB_BUF);
    s->key = eng_mr(s->d, p->pd, 0, s->buf, DEVB_BUF, STD_ACCESS);
    eng_cq_init(s->d, &s->cq, DEVB_CQ_LOG);
    memset(&s->q, 0, sizeof(s->q));
    qp_template(s->d, &s->q.c, RS_QPT_RC, p->pd, s->cq.h, s->cq.h);
    s->q.c.sq_log_size = DEVB_LOG;
    s->q.c.rq_log_size = DEVB_LOG;
    s->q.c.max_send_sge = s->q.c.max_recv_sge = 1;
    s->q.c.max_inline = 0;
    s->q.c.sq_addr = qrs_alloc_zeroed(s->d, qrs_qp_sq_bytes(&s->q.c));
    s->q.c.rq_addr = qrs_alloc_zeroed(s->d, qrs_qp_rq_bytes(&s->q.c));
    s->q.h = new_qp(s->d, &s->q.c);
    s->q.qpn = HINDEX(s->q.h);
}

static void devb_connect(DevbSide s[2])
{
    LoopQp q[2] = { s[0].q, s[1].q };
    struct rs_qp_attr a;
    int i;

    for (i = 0; i < 2; i++) {
        pair_attr(q, i, 0, &a);
        a.access_flags = STD_ACCESS;
        a.path_mtu = RS_MTU_4096;
        a.max_rd_atomic = a.max_dest_rd_atomic = 16;
        eng_connect(s[i].d, &s[i].q, RS_QPT_RC, &a, 0);
    }
}

/* Write @n ring entries of @stride bytes from @img at index @pi on. */
static void devb_ring_write(QRdmaSession *d, uint64_t ring, uint8_t log,
                            uint32_t stride, uint32_t pi, const uint8_t *img,
                            uint32_t n)
{
    uint32_t at = pi & ((1u << log) - 1);
    uint32_t first = MIN(n, (1u << log) - at);

    qtest_bufwrite(qrs_qts(d), ring + (uint64_t)at * stride, img,
                   (size_t)first * stride);
    devb_h.cmds++;
    if (n > first) {
        qtest_bufwrite(qrs_qts(d), ring, img + (size_t)first * stride,
                       (size_t)(n - first) * stride);
        devb_h.cmds++;
    }
    devb_h.bytes += (uint64_t)n * stride;
}

/*
 * Post @n receives of @size bytes on @r, into its buffer at @off on,
 * one doorbell.
 */
static void devb_post_recvs(DevbSide *r, uint32_t n, uint32_t size,
                            uint32_t *off)
{
    uint32_t stride = qrs_qp_rq_bytes(&r->q.c) >> r->q.c.rq_log_size;
    g_autofree uint8_t *img = g_malloc0((size_t)n * stride);
    uint32_t k;

    for (k = 0; k < n; k++) {
        struct rs_recv_wqe_ctrl w = { .wr_id = r->q.rq_pi + k, .num_sge = 1 };
        struct rs_sge sge = {
            .addr = r->buf + *off, .length = size, .lkey = r->key,
        };

        memcpy(img + (size_t)k * stride, &w, sizeof(w));
        memcpy(img + (size_t)k * stride + sizeof(w), &sge, sizeof(sge));
        *off = (*off + size) % DEVB_BUF;
    }
    devb_ring_write(r->d, r->q.c.rq_addr, r->q.c.rq_log_size, stride,
                    r->q.rq_pi, img, n);
    r->q.rq_pi += n;
    qrs_db_writel(r->d, 0, RS_DB_RQ, r->q.qpn | (r->q.rq_pi & 0xffff) << 16);
    devb_h.cmds++;
}

/*
 * Post @n work requests of @c from @s to @t, the last one signaled, one
 * doorbell; the buffers' offsets advance through @off.
 */
static void devb_post_sends(DevbSide *s, DevbSide *t, const DevbCase *c,
                            uint32_t n, uint32_t *off)
{
    uint32_t stride = qrs_qp_sq_bytes(&s->q.c) >> s->q.c.sq_log_size;
    g_autofree uint8_t *img = g_malloc0((size_t)n * stride);
    uint32_t k;

    for (k = 0; k < n; k++) {
        struct rs_send_wqe_ctrl w = {
            .wr_id = s->q.sq_pi + k,
            .opcode = c->opcode,
            .flags = k == n - 1 ? RS_WQE_F_SIGNALED : 0,
            .num_sge = 1,
            .remote_addr = t->buf + *off,
            .rkey = t->key,
        };
        struct rs_sge sge = {
            .addr = s->buf + *off, .length = c->size, .lkey = s->key,
        };

        memcpy(img + (size_t)k * stride, &w, sizeof(w));
        memcpy(img + (size_t)k * stride + sizeof(w), &sge, sizeof(sge));
        *off = (*off + c->size) % DEVB_BUF;
    }
    devb_ring_write(s->d, s->q.c.sq_addr, s->q.c.sq_log_size, stride,
                    s->q.sq_pi, img, n);
    s->q.sq_pi += n;
    qrs_db_writel(s->d, 0, RS_DB_SQ, s->q.qpn | (s->q.sq_pi & 0xffff) << 16);
    devb_h.cmds++;
}

/*
 * Wait for @n completions on @s, all successful, reading the CQ ring in
 * bulk (the entries from the consumer index to the ring's end in one
 * qtest read).
 */
static void devb_reap(DevbSide *s, uint32_t n)
{
    struct rs_cqe cqe[1u << DEVB_CQ_LOG];
    gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    uint32_t size = 1u << s->cq.log;

    while (n) {
        uint32_t at = s->cq.ci & (size - 1);
        uint32_t k, want = MIN(n, size - at);
        bool lap = !((s->cq.ci >> s->cq.log) & 1);

        qtest_bufread(qrs_qts(s->d), s->cq.ring + at * sizeof(cqe[0]), cqe,
                      want * sizeof(cqe[0]));
        devb_h.cmds++;
        devb_h.bytes += want * sizeof(cqe[0]);
        for (k = 0; k < want && (cqe[k].owner & RS_CQE_OWNER) == lap; k++) {
            g_assert_cmpuint(cqe[k].status, ==, RS_WC_SUCCESS);
        }
        s->cq.ci += k;
        n -= k;
        if (k < want) {
            /* Virtual time for the engine's timers (ACK coalescing). */
            g_assert_cmpint(g_get_monotonic_time(), <, end);
            qtest_clock_step(qrs_qts(s->d), 1000);
            devb_h.cmds++;
            devb_h.steps++;
            g_usleep(20);
        }
    }
    qrs_db_writel(s->d, 0, RS_DB_CQ_CI,
                  HINDEX(s->cq.h) | (s->cq.ci & 0xffff) << 16);
    devb_h.cmds++;
}

/* A pattern of @len bytes, different for every byte offset and @seed. */
static void devb_pattern(uint8_t *p, size_t len, uint8_t seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        p[i] = seed + i * 7 + (i >> 9) * 13;
    }
}

/* ns per KiB of memcpy and of zlib's crc32 over 64 KiB, cache-warm. */
static void devb_host_speed(double *memcpy_ns_kib, double *crc_ns_kib)
{
    const size_t len = 64 * KiB;
    const unsigned reps = 4096;
    g_autofree uint8_t *a = g_malloc(len);
    g_autofree uint8_t *b = g_malloc(len);
    /* volatile: the loop's result is used, the compiler keeps the loop */
    volatile uLong crc = 0;
    uint64_t t;
    unsigned i;

    devb_pattern(a, len, 1);
    t = devb_now_ns();
    for (i = 0; i < reps; i++) {
        a[i % len] = i;
        memcpy(b, a, len);
    }
    *memcpy_ns_kib = (double)(devb_now_ns() - t) / reps / (len / KiB);
    g_assert_cmpuint(b[0], ==, a[0]);
    t = devb_now_ns();
    for (i = 0; i < reps / 4; i++) {
        crc = crc32(crc, a, len);
    }
    *crc_ns_kib = (double)(devb_now_ns() - t) / (reps / 4) / (len / KiB);
}

/*
 * What QEMU spends on the harness's qtest commands, measured on the idle
 * pair: ns per command (register reads), per clock step (which also runs
 * the timers due) and per payload byte
 * (64 KiB base64 writes and reads of @s's buffer, as the rings are
 * written and the CQs read).
 */
static void devb_calibrate(DevbSide *s, double *cmd_ns, double *step_ns,
                           double *byte_ns)
{
    const size_t len = 64 * KiB;
    g_autofree uint8_t *buf = g_malloc0(len);
    QTestState *qts = qrs_qts(s->d);
    uint64_t c0 = devb_cpu_ns(qts);
    unsigned i;

    for (i = 0; i < DEVB_CAL; i++) {
        qrs_readl(s->d, A_RS_CAPS);
    }
    *cmd_ns = (double)(devb_cpu_ns(qts) - c0) / DEVB_CAL;
    c0 = devb_cpu_ns(qts);
    for (i = 0; i < DEVB_CAL; i++) {
        qtest_clock_step(qts, 1000);
    }
    *step_ns = (double)(devb_cpu_ns(qts) - c0) / DEVB_CAL;
    c0 = devb_cpu_ns(qts);
    for (i = 0; i < DEVB_CAL / 20; i++) {
        qtest_bufwrite(qts, s->buf, buf, len);
        qtest_bufread(qts, s->buf, buf, len);
    }
    *byte_ns = MAX(0, (double)(devb_cpu_ns(qts) - c0) -
                   *cmd_ns * (DEVB_CAL / 10)) / ((DEVB_CAL / 10) * len);
}

static void devb_run(DevbSide s[2], const DevbCase *c, uint64_t bytes,
                     const char *mode, const double cal[3], FILE *out)
{
    /* WRITE and SEND go from A to B; READ fetches B's data into A. */
    bool read = c->opcode == RS_WR_RDMA_READ;
    DevbSide *data_from = read ? &s[1] : &s[0];
    DevbSide *data_to = read ? &s[0] : &s[1];
    uint64_t msgs = MIN(MAX(bytes / c->size, DEVB_BATCH), DEVB_MAX_MSGS);
    uint32_t pkts_per_msg = DIV_ROUND_UP(c->size, 4096);
    g_autofree uint8_t *src = g_malloc(DEVB_BUF);
    g_autofree uint8_t *got = g_malloc(DEVB_BUF);
    uint32_t soff = 0, roff = 0;
    uint64_t done = 0, c0, t0, cpu, wall;
    double dev_ns, harness_ns;
    QTestState *qts = qrs_qts(s[0].d);

    msgs -= msgs % DEVB_BATCH;
    devb_pattern(src, DEVB_BUF, c->size + c->opcode);
    qtest_bufwrite(qts, data_from->buf, src, DEVB_BUF);
    qtest_memset(qts, data_to->buf, 0, DEVB_BUF);

    memset(&devb_h, 0, sizeof(devb_h));
    c0 = devb_cpu_ns(qts);
    t0 = devb_now_ns();
    while (done < msgs) {
        if (c->opcode == RS_WR_SEND) {
            devb_post_recvs(&s[1], DEVB_BATCH, c->size, &roff);
        }
        devb_post_sends(&s[0], &s[1], c, DEVB_BATCH, &soff);
        devb_reap(&s[0], 1);
        if (c->opcode == RS_WR_SEND) {
            devb_reap(&s[1], DEVB_BATCH);
        }
        done += DEVB_BATCH;
    }
    wall = devb_now_ns() - t0;
    cpu = devb_cpu_ns(qts) - c0;

    /*
     * Every message went to the same offsets of both buffers: the
     * receiving buffer now holds the sender's bytes wherever a message
     * went (all of it once the messages wrapped).
     */
    qtest_bufread(qts, data_to->buf, got, DEVB_BUF);
    if (msgs * c->size >= DEVB_BUF) {
        g_assert_true(memcmp(got, src, DEVB_BUF) == 0);
    } else {
        g_assert_true(memcmp(got, src, msgs * c->size) == 0);
    }

    harness_ns = cal[0] * (devb_h.cmds - devb_h.steps) +
                 cal[1] * devb_h.steps + cal[2] * devb_h.bytes;
    dev_ns = (double)cpu - harness_ns;
    g_test_message("%s %s: %" PRIu64 " messages of %u bytes, %" PRIu64
                   " ms, QEMU CPU %.1f ms of which harness %.1f ms (%"
                   PRIu64 " qtest commands, %" PRIu64 " bytes), device "
                   "%.0f ns/packet %.1f ns/KiB, %.0f MB/s", mode, c->name,
                   msgs, c->size, wall / 1000000, cpu / 1e6,
                   harness_ns / 1e6, devb_h.cmds, devb_h.bytes,
                   dev_ns / (msgs * pkts_per_msg),
                   dev_ns / (msgs * c->size / 1024.0),
                   msgs * c->size * 1000.0 / wall);
    if (out) {
        fprintf(out, "{\"case\": \"%s\", \"mode\": \"%s\", \"size\": %u, "
                "\"messages\": %" PRIu64 ", \"packets\": %" PRIu64
                ", \"wall_ns\": %" PRIu64 ", \"cpu_ns\": %" PRIu64
                ", \"qtest_cmds\": %" PRIu64 ", \"qtest_bytes\": %" PRIu64
                ", \"harness_ns\": %.0f, "
                "\"device_ns_per_packet\": %.1f, "
                "\"device_ns_per_kib\": %.2f, \"mb_per_s\": %.1f}\n",
                c->name, mode, c->size, msgs, msgs * pkts_per_msg, wall, cpu,
                devb_h.cmds, devb_h.bytes, harness_ns,
                dev_ns / (msgs * pkts_per_msg),
                dev_ns / (msgs * c->size / 1024.0),
                msgs * c->size * 1000.0 / wall);
    }
}

static void test_devbench(void *obj, void *data, QGuestAllocator *alloc)
{
    const char *mib = g_getenv("RS_DEVBENCH_MIB");
    const char *path = g_getenv("RS_DEVBENCH_OUT");
    uint64_t bytes = mib ? g_ascii_strtoull(mib, NULL, 10) * MiB
                         : DEVB_SMOKE_KIB * KiB;
    const char *props = ((PairSockets *)data)->b_props;
    const char *mode = strstr(props, "bundle=on") ? "bundles" : "frames";
    FILE *out = NULL;
    double memcpy_ns, crc_ns, cal[3];
    DevbSide s[2];
    Pair pr;
    size_t i;

    pair_setup(&pr, obj, data, alloc);
    for (i = 0; i < 2; i++) {
        devb_side(&pr, i, &s[i]);
    }
    devb_connect(s);
    if (path) {
        out = fopen(path, "a");
        g_assert_nonnull(out);
    }
    devb_host_speed(&memcpy_ns, &crc_ns);
    devb_calibrate(&s[0], &cal[0], &cal[1], &cal[2]);
    g_test_message("host: memcpy %.1f ns/KiB, zlib crc32 %.1f ns/KiB; "
                   "qtest in QEMU %.0f ns/command, %.0f ns/clock step, "
                   "%.2f ns/byte", memcpy_ns, crc_ns, cal[0], cal[1], cal[2]);
    if (out) {
        fprintf(out, "{\"host\": true, \"mode\": \"%s\", "
                "\"memcpy_ns_per_kib\": %.2f, \"crc32_ns_per_kib\": %.2f, "
                "\"qtest_cmd_ns\": %.1f, \"qtest_step_ns\": %.1f, "
                "\"qtest_byte_ns\": %.3f}\n",
                mode, memcpy_ns, crc_ns, cal[0], cal[1], cal[2]);
    }
    for (i = 0; i < ARRAY_SIZE(devb_cases); i++) {
        devb_run(s, &devb_cases[i], bytes, mode, cal, out);
    }
    if (out) {
        fclose(out);
    }
    pair_teardown(&pr);
}

static void register_devbench_tests(void)
{
    static QOSGraphTestOptions frames = { .before = devb_before };
    static QOSGraphTestOptions bundles = {
        .before = devb_before, .arg = (void *)",bundle=on",
    };

    rs_add_standalone_test("devbench/frames", test_devbench, &frames);
    rs_add_standalone_test("devbench/bundles", test_devbench, &bundles);
}

libqos_init(register_devbench_tests);
