/*
 * Shared by the rdma-session qtests: device defaults, assertion helpers,
 * object setup, the loopback transport engine helpers, the LAN test
 * environment and the migration sequence
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef RS_TEST_H
#define RS_TEST_H

#include <sys/ioctl.h>
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "qemu/iov.h"
#include "qemu/host-utils.h"
#include "qemu/sockets.h"
#include "hw/pci/pci_ids.h"
#include "hw/pci/pci_regs.h"
#include "libqtest.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qnum.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/pci-pc.h"
#include "libqos/libqos-malloc.h"
#include "libqos/rdma-session.h"

/* ------------------------------------------------------------------ */
/* Device defaults, assertions, handles                               */
/* ------------------------------------------------------------------ */

/* Property defaults. */
#define DEF_MAX_QPS             256

#define DEF_MAX_MRS             1024
#define DEF_MAX_PDS             256
#define DEF_MAX_SRQS            256
#define DEF_MAX_XRCDS           64
#define DEF_MAX_GIDS            16
#define DEF_MAX_MCAST_GRP       32
#define DEF_MAX_MCAST_QP_ATTACH 8
#define DEF_COMP_VECTORS        4
#define DEF_DB_PAGES            64
#define DEF_MAX_MR_PAGES        262144
#define DEF_NUM_MSIX            (1 + DEF_COMP_VECTORS)

/*
 * QUERY_DEVICE reports usable objects: a table of max-* slots never uses
 * slot 0.
 */
#define USABLE(max)             ((max) - 1)

/* Addresses that are never guest RAM. */
#define FAR_ADDR                0xfffff0000000ull

#define PAGE                    4096u
#define RS_ASSERT_STATUS(expr, expected)                                  \
    g_assert_cmpstr(qrs_status_name(expr), ==, qrs_status_name(expected))
#define RS_ASSERT_OK(expr) RS_ASSERT_STATUS(expr, RS_STATUS_OK)
#define HANDLE(gen, index)  (((uint32_t)(gen) << RS_HANDLE_GEN_SHIFT) | (index))
#define HINDEX(h)           ((h) & RS_HANDLE_INDEX_MASK)

/* Canonical QP attribute values used by the state walks. */
#define STD_QKEY                0x11111111u

#define STD_RQ_PSN              0xabcdefu
#define STD_SQ_PSN              0x654321u
#define STD_DEST_QPN            0x123456u
#define STD_FLOW_LABEL          0x12345u
/* The lowest access bit no right has yet. */
#define RS_ACCESS_UNKNOWN       (RS_ACCESS_ALL + 1)
#define STD_ACCESS              (RS_ACCESS_LOCAL_WRITE |                  \
                                 RS_ACCESS_REMOTE_WRITE |                 \
                                 RS_ACCESS_REMOTE_READ)
#define RC_INIT_MASK    (RS_QP_ATTR_STATE | RS_QP_ATTR_PKEY_INDEX |        \
                         RS_QP_ATTR_PORT | RS_QP_ATTR_ACCESS_FLAGS)
#define UD_INIT_MASK    (RS_QP_ATTR_STATE | RS_QP_ATTR_PKEY_INDEX |        \
                         RS_QP_ATTR_PORT | RS_QP_ATTR_QKEY)
#define GSI_INIT_MASK   (RS_QP_ATTR_STATE | RS_QP_ATTR_PKEY_INDEX |        \
                         RS_QP_ATTR_QKEY)
#define UC_RTR_MASK     (RS_QP_ATTR_STATE | RS_QP_ATTR_AV |                \
                         RS_QP_ATTR_PATH_MTU | RS_QP_ATTR_DEST_QPN |       \
                         RS_QP_ATTR_RQ_PSN)
#define RC_RTR_MASK     (UC_RTR_MASK | RS_QP_ATTR_MAX_DEST_RD_ATOMIC |     \
                         RS_QP_ATTR_MIN_RNR_TIMER)
#define UD_RTS_MASK     (RS_QP_ATTR_STATE | RS_QP_ATTR_SQ_PSN)
#define RC_RTS_MASK     (UD_RTS_MASK | RS_QP_ATTR_TIMEOUT |                \
                         RS_QP_ATTR_RETRY_CNT | RS_QP_ATTR_RNR_RETRY |     \
                         RS_QP_ATTR_MAX_QP_RD_ATOMIC)

extern const uint8_t qos_mac[6];

/* ------------------------------------------------------------------ */
/* Where a test runs (rs-test.c)                                      */
/* ------------------------------------------------------------------ */

/*
 * Most tests drive the one adapter of the qos graph and are qgraph tests
 * of the "rdma-session" node in qos-test (qos_add_test(), paths
 * .../rdma-session/rdma-session-tests/AREA/NAME).  Those that start two
 * adapters (pair_before() and its kin) or a second QEMU (migration) are
 * registered with rs_add_standalone_test() instead and run in
 * rdma-session-test, a qtest binary of its own (rdma-session-test.c,
 * paths /ARCH/rdma-session/AREA/NAME): it starts the machine that the
 * graph would, with the same command line, and calls the test the same
 * way.  In qos-test the call does nothing.
 *
 * The rdma-session node has 88 tests: QEMU's qgraph walk keeps every test
 * of the node it visits on its stack of QOS_PATH_MAX_ELEMENT_SIZE (128)
 * entries, with the path to the node and the siblings still to visit, and
 * qos-test aborts ("QOSStack: full stack") when they do not fit.
 */
typedef void RsAddTestFn(const char *name, QOSTestFunc test_func,
                         QOSGraphTestOptions *opts);

/* Set by rdma-session-test's main() before the tests register. */
extern RsAddTestFn *rs_standalone_add;

void rs_add_standalone_test(const char *name, QOSTestFunc test_func,
                            QOSGraphTestOptions *opts);

/* ------------------------------------------------------------------ */
/* Admin commands, objects and QP state walks (rs-test.c)             */
/* ------------------------------------------------------------------ */

/*
 * On the pc machine RAM sits below the PCI hole; the libqos allocator
 * covers it up to its end, and nothing is mapped right after it.
 */
uint64_t ram_end(QRdmaSession *d);

void wait_aeq_port_active(QRdmaSession *d);

/* The next asynchronous event of adapter @d is @type for @handle. */
void expect_event(QRdmaSession *d, uint8_t type, uint32_t handle);

void expect_no_event(QRdmaSession *d);

/* Enable the admin queue with the default sizes; eat the port event. */
QRdmaSession *admin_setup(void *obj);

void fill(QRdmaSession *d, uint64_t addr, uint8_t pattern, size_t len);

/* True when [addr, addr + len) holds only @pattern. */
bool is_filled(QRdmaSession *d, uint64_t addr, uint8_t pattern,
               size_t len);

void cmd_init(struct rs_admin_cmd *cmd, uint8_t opcode);

/* QUERY_DEVICE/PORT/QP with an arbitrary response buffer. */
uint8_t query_at(QRdmaSession *d, uint8_t opcode, uint32_t handle,
                 uint64_t addr, uint32_t len);

/*
 * The counters of QUERY_STATS (@len bytes asked for) into @st, checking
 * that the device wrote no more (introspect.c).
 */
void query_stats(QRdmaSession *d, struct rs_device_stats *st, uint32_t len);

void gid_v4(uint8_t gid[16], uint8_t a, uint8_t b, uint8_t c,
            uint8_t e);

void add_gid_v4(QRdmaSession *d, uint32_t index, uint8_t host);

uint32_t new_pd(QRdmaSession *d);

/* A PD of network identity @netid (CREATE_PD's netid, ABI 1.6). */
uint32_t new_pd_netid(QRdmaSession *d, uint32_t netid);

/* QOM: the adapters' paths, qom-set of a string on one or all. */
GPtrArray *rs_qom_paths(QTestState *qts);
char *rs_qom_set_str(QTestState *qts, const char *path, const char *prop,
                     const char *value);
void rs_qom_set_all(QTestState *qts, const char *prop, const char *value);

uint32_t new_cq(QRdmaSession *d, uint8_t log_size);

void qp_template(QRdmaSession *d, struct rs_cmd_create_qp *c,
                 uint8_t type, uint32_t pd, uint32_t send_cq,
                 uint32_t recv_cq);

uint32_t new_qp(QRdmaSession *d, const struct rs_cmd_create_qp *c);

/* Valid values for every attribute; @from/@to fill the two states. */
void std_attr(struct rs_qp_attr *a, uint8_t from, uint8_t to);

/* The required attribute mask of each transition of the walk. */
uint32_t std_mask(uint8_t type, uint8_t from, uint8_t to);

/* Move a QP in RESET to @target with the canonical attributes. */
void qp_walk(QRdmaSession *d, uint32_t qp, uint8_t type,
             uint8_t target);

uint8_t qp_state(QRdmaSession *d, uint32_t qp);

/* ------------------------------------------------------------------ */
/* Registers and liveness (rs-test.c)                                 */
/* ------------------------------------------------------------------ */

/* Read the register block (0x000 .. 0x058). */
#define NREGS   (0x58 / 4)

void dump_regs(QRdmaSession *d, uint32_t *regs);

void assert_regs_equal(const uint32_t *a, const uint32_t *b);

/* Registers after power-on / reset (admin queue not configured). */
void assert_power_on_regs(QRdmaSession *d, uint32_t db_pages,
                          uint32_t num_msix);

/* The device still executes commands after a rejected one. */
bool device_alive(QRdmaSession *d, GString *why);

void assert_alive(QRdmaSession *d);

/* Wait for an MSI-X message (a 32-bit write) to land at @addr. */
void wait_msg(QRdmaSession *d, uint64_t addr, uint32_t data);

void set_link(QRdmaSession *d, bool up);

/* ------------------------------------------------------------------ */
/* Memory regions, AHs, sessions (rs-test.c)                          */
/* ------------------------------------------------------------------ */

/* A page list of @npages pages starting at @base, @stride apart. */
uint64_t make_pbl(QRdmaSession *d, uint64_t base, uint64_t stride,
                  uint32_t npages);

/* Indirect page list: chunk pages of 512 addresses, and their list. */
uint64_t make_indirect_pbl(QRdmaSession *d, uint64_t base,
                           uint32_t npages);

uint32_t reg_mr_ok(QRdmaSession *d, const struct rs_cmd_reg_mr *c);

void ah_template(struct rs_cmd_create_ah *c, uint32_t pd,
                 uint32_t gid_index);

void session_template(struct rs_cmd_create_session *c,
                      uint32_t gid_index, uint16_t src_port);

uint32_t new_session(QRdmaSession *d, uint32_t gid_index,
                     uint16_t src_port);

uint32_t new_group(QRdmaSession *d, uint8_t policy, uint32_t s0,
                   uint32_t s1);

/*
 * An MR of @len bytes at @iova whose pages are all the guest page @page:
 * remote access to more memory than the test guest has.
 */
uint32_t alias_mr(QRdmaSession *d, uint32_t pd, uint64_t iova,
                  uint64_t page, uint32_t len);

/* ------------------------------------------------------------------ */
/* Table-driven bad input: the fixture the rows name (rs-test.c)      */
/* ------------------------------------------------------------------ */

/*
 * Row values either are literals or name something of the fixture
 * (TOK(id, offset)): an address, a handle, ...
 */
#define TOK_MARK        0x7a5a000000000000ull

#define TOK_MARK_MASK   0xffff000000000000ull
#define TOK(t, off)     (TOK_MARK | ((uint64_t)(t) << 32) | \
                         (uint32_t)(int32_t)(off))

enum {
    T_NONE,
    /* addresses */
    T_BAR0, T_BAR1, T_BAR2, T_RAM_END, T_SCRATCH, T_ATTR,
    T_CQ_RING, T_CQ_RING2, T_SQ, T_RQ,
    T_PBL, T_PBL_MISALIGNED, T_PBL_FAR, T_PBL_BAR0, T_PBL_RAM_END,
    T_IPBL, T_IPBL_MISALIGNED, T_IPBL_FAR, T_IPBL_BAR0,
    T_RING_ADMQ, T_RING_ACQ, T_RING_AEQ,
    /* handles */
    T_PD, T_PD_MR, T_PD_AH, T_PD_STALE,
    T_CQ, T_CQ_SEND, T_CQ_RECV, T_CQ_FREE, T_CQ_STALE,
    T_QP, T_QP_STALE,
    T_MR, T_MR_STALE,
    T_AH, T_AH_STALE,
    T_SESS, T_SESS_GID1, T_SESS_FREE1, T_SESS_FREE2, T_SESS_STALE,
    T_GROUP, T_GROUP_STALE,
    T_COUNT
};

typedef struct BadPatch {
    uint16_t off;
    uint8_t size;
    uint64_t value;
} BadPatch;

typedef struct BadFixture {
    QRdmaSession *d;
    uint64_t tok[T_COUNT];
    struct rs_cmd_create_qp qp_tmpl;
} BadFixture;

uint64_t resolve(BadFixture *f, uint64_t v);

void apply_patches(BadFixture *f, void *obj, size_t obj_size,
                   const BadPatch *p, int n);

/* ------------------------------------------------------------------ */
/* Posting work requests and polling CQs, the loopback pair, kernel   */
/* consumers, SRQs (rs-engine.c)                                      */
/* ------------------------------------------------------------------ */

typedef struct LoopQp {
    struct rs_cmd_create_qp c;
    uint32_t h, qpn, sq_pi, rq_pi;
} LoopQp;

/* Something to do while a completion is awaited (e.g. move frames). */
typedef void EngIdleFn(void *opaque);

/* A memory region of @len bytes at @iova on the pages from @base. */
uint32_t eng_mr_at(QRdmaSession *d, uint32_t pd, uint32_t gid_index,
                   uint64_t iova, uint64_t base, uint32_t len,
                   uint16_t access);

/* ... and at the page-aligned guest address @base as its IOVA. */
uint32_t eng_mr(QRdmaSession *d, uint32_t pd, uint32_t gid_index,
                uint64_t base, uint32_t len, uint16_t access);

/* Walk an RC or UC QP from RESET to RTS with @base's attributes. */
void eng_connect(QRdmaSession *d, LoopQp *q, uint8_t type,
                 const struct rs_qp_attr *base, uint32_t rtr_mask);

/*
 * MODIFY_QP of @q from @from to @to with @mask (plus STATE) and the
 * canonical attributes; @sqd_notify for RTS -> SQD.
 */
void modify_state(QRdmaSession *d, LoopQp *q, uint8_t from,
                  uint8_t to, uint32_t mask, bool sqd_notify);

void eng_post_recv(QRdmaSession *d, LoopQp *q, uint64_t wr_id,
                   const struct rs_sge *sge, uint8_t nsge);

/* Post @w with the @nsge entries of @sge (w->num_sge is the caller's). */
void eng_post_send(QRdmaSession *d, LoopQp *q,
                   const struct rs_send_wqe_ctrl *w,
                   const struct rs_sge *sge, uint8_t nsge);

/* A CQ as the driver polls it: ring, size, handle, consumer index. */
typedef struct EngCq {
    uint64_t ring;
    uint32_t h, ci;
    uint8_t log;
} EngCq;

void eng_cq_init(QRdmaSession *d, EngCq *cq, uint8_t log);

/* Is the entry at the consumer index written (owner bit of this lap)? */
bool eng_cq_peek(QRdmaSession *d, EngCq *cq, struct rs_cqe *cqe);

/* The next CQE, waiting for the engine's BH (and @idle meanwhile). */
void eng_poll(QRdmaSession *d, EngCq *cq, struct rs_cqe *cqe,
              EngIdleFn *idle, void *opaque);

typedef struct Loop {
    QRdmaSession *d;
    uint8_t type;               /* RS_QPT_RC or RS_QPT_UC */
    EngCq cq;
    uint32_t pd, group;
    LoopQp a, b;
    uint64_t src, dst;          /* page-aligned buffers, LOOP_BUF bytes */
    uint32_t src_key, dst_key;
} Loop;

#define LOOP_BUF    (4 * PAGE)
#define LOOP_CQ_LOG 5
#define LOOP_PSN    0x100

uint64_t loop_buf(QRdmaSession *d, uint32_t len);

uint32_t loop_mr_access(Loop *l, uint64_t base, uint32_t len,
                        uint16_t access);

uint32_t loop_mr(Loop *l, uint64_t base, uint32_t len);

/*
 * RESET to RTS, to QP @peer at 10.0.0.@host: through the loopback session
 * group when @host is 1, else through the QP's own AV with our MAC as the
 * destination (the tests that put frames on the wire and take them back).
 */
void loop_connect_to(Loop *l, LoopQp *q, uint32_t peer, uint8_t host);

void loop_connect(Loop *l, LoopQp *q, uint32_t peer);

/* Both QPs back through RESET to RTS, e.g. after an error. */
void loop_reconnect(Loop *l);

/* Objects of the loopback tests on @d; QPs of @type, not connected. */
void loop_init(Loop *l, QRdmaSession *d, uint8_t type,
               uint32_t pd_flags);

void loop_setup_pd(Loop *l, void *obj, uint32_t pd_flags);

void loop_setup(Loop *l, void *obj);

/* A UD QP of PD @pd on the loopback's CQ, in RTS. */
void loop_ud_qp(Loop *l, LoopQp *q, uint32_t pd);

void loop_post_recv(Loop *l, LoopQp *q, uint64_t wr_id,
                    uint64_t addr, uint32_t len, uint32_t lkey);

void loop_post_send(Loop *l, LoopQp *q,
                    const struct rs_send_wqe_ctrl *w,
                    uint64_t addr, uint32_t len, uint32_t lkey);

void loop_poll(Loop *l, struct rs_cqe *cqe);

void loop_pattern(Loop *l, uint64_t addr, uint32_t len, uint8_t seed);

void loop_assert_same(Loop *l, uint64_t a, uint64_t b, uint32_t len);

void loop_expect(Loop *l, uint64_t wr_id, uint8_t status,
                 uint8_t opcode, uint32_t qpn);

void loop_atomic(Loop *l, uint64_t wr_id, uint8_t op, uint64_t va,
                 uint32_t rkey, uint64_t compare_add, uint64_t swap,
                 uint64_t result, uint32_t result_len);

#define FR_IOVA     0x7000000000ull     /* any IOVA: the page list decides */
#define RS_GRH_BYTES 40                 /* UD receives: the GRH area first */

/* A fast-registration MR of @npages slots in @pd: its initial key. */
uint32_t fr_alloc(Loop *l, uint32_t pd, uint32_t npages);

void fr_post_reg(Loop *l, LoopQp *q, uint64_t wr_id, uint32_t key,
                 uint64_t iova, uint64_t len, uint64_t pbl,
                 uint32_t npages, uint16_t access);

void loop_post_op(Loop *l, LoopQp *q, uint64_t wr_id, uint8_t op,
                uint32_t inv, uint64_t raddr, uint32_t rkey,
                uint64_t addr, uint32_t len, uint32_t lkey);

void fr_expect(Loop *l, uint64_t wr_id, uint8_t opcode, uint8_t status);

/* A kernel UD QP's WQE with the address vector by DMA address. */
void av_addr_post(Loop *l, LoopQp *q, uint64_t wr_id, uint64_t av,
                  uint32_t dqpn, uint64_t addr, uint32_t len);

/* fe80::5054:ff:fe12:34<host>, a link-local RoCEv2 GID. */
void gid_v6(uint8_t gid[16], uint8_t host);

/* Shared receive queues */
void srq_template(QRdmaSession *d, struct rs_cmd_create_srq *c,
                  uint32_t pd, uint8_t log, uint8_t max_sge);

void srq_post(QRdmaSession *d, const struct rs_cmd_create_srq *c,
              uint32_t h, uint32_t *pi, uint64_t wr_id, uint64_t addr,
              uint32_t len, uint32_t lkey);

/* ------------------------------------------------------------------ */
/* Migration (rs-test.c)                                              */
/* ------------------------------------------------------------------ */

/*
 * Live migration through a file.  The source is stopped before it saves
 * (no migration hold runs: a stream backend has none, and after 'stop'
 * the run state at the save is not finish-migrate).
 */

/*
 * Until the migration of @qts has completed (true) or failed (false);
 * @err gets QEMU's error description (the caller frees it).
 */
bool mig_wait(QTestState *qts, char **err);

/* Stop the QEMU of @qts and save its state to the file @path. */
void mig_save(QTestState *qts, const char *path);

/*
 * Load the saved state @path into a new QEMU with the test's command
 * line; true if the migration completed (@err: QEMU's error, the caller
 * frees it).  The destination is quit either way.
 */
bool mig_load(const char *path, char **err);

/* The offset of the only occurrence of @needle in @buf (a saved state). */
size_t mig_find(const uint8_t *buf, size_t len, const uint8_t *needle,
                size_t nlen);

/* Edits the destination's command line after the source has saved. */
typedef void MigCmdLineFn(GString *cmd_line, void *opaque);

/*
 * The QEMU of @from migrates to a new one, which it returns running (the
 * caller quits it): stop and save @from, start the destination with the
 * test's command line as @edit (if not NULL) changes it, load, continue.
 * The source stays stopped, so the next test gets a new QEMU.
 */
QTestState *mig_move(QTestState *from, MigCmdLineFn *edit, void *opaque);

/*
 * Attach @d to the adapter that @src drove before it migrated to the QEMU
 * of @bus: its BARs as the destination has them, and the admin queue and
 * MSI-X table where the driver left them.
 */
void mig_attach(QRdmaSession *d, QPCIBus *bus,
                const QRdmaSession *src);

/* ------------------------------------------------------------------ */
/* The LAN test environment (rs-lan.c)                                */
/* ------------------------------------------------------------------ */

/*
 * These tests attach the adapter to "-netdev socket" on one end of a
 * socketpair; the test reads and writes frames on the other end, each
 * with a 4-byte big-endian length prefix.
 */
#define LAN_TX_VECTOR   2

#define LAN_RX_VECTOR   3
#define LAN_BUF_SIZE    2048

/* How long "nothing happens" is watched for. */
#define LAN_QUIET_US    (G_USEC_PER_SEC / 5)

typedef struct LanRing {
    uint64_t ring;
    uint8_t type;
    uint8_t log;
    uint32_t pi;                /* free running, as the driver keeps it */
} LanRing;

typedef struct LanEnv {
    QRdmaSession *d;
    int fd;                     /* the test's end of the socketpair */
    uint64_t msi;               /* MSI-X vector v writes msi + 4 v */
    LanRing tx, rx;
} LanEnv;

void *lan_before(GString *cmd_line, void *arg);

void lan_sock_send(int fd, const void *frame, uint32_t len);

/*
 * One frame from the wire: its length, or -1 if none came in time.  The
 * RARP frames QEMU sends to announce a migrated NIC are skipped.
 */
ssize_t lan_sock_recv(int fd, uint8_t *buf, size_t max,
                      int64_t timeout_us);

/* The next frame on the wire must be @len bytes of @expect. */
void lan_expect_frame(LanEnv *e, const uint8_t *expect, size_t len);

void lan_expect_quiet(LanEnv *e);

/* An Ethernet frame: @dst, the adapter's MAC as source, @seed payload. */
void lan_make_frame(uint8_t *f, size_t len, const uint8_t *dst,
                    uint8_t seed);

void lan_ring_init(LanEnv *e, LanRing *r, uint8_t type, uint8_t log,
                   uint16_t vector);

/*
 * Post one descriptor (not yet announced).  Its status keeps the phase of
 * the previous lap, so that the device's write-back stands out.
 */
uint32_t lan_post(LanEnv *e, LanRing *r, uint64_t addr, uint16_t len,
                  uint8_t flags);

void lan_doorbell(LanEnv *e, LanRing *r);

bool lan_done(LanEnv *e, LanRing *r, uint32_t index);

/* Wait for the write-back of descriptor @index; returns the descriptor. */
struct rs_lan_desc lan_wait(LanEnv *e, LanRing *r, uint32_t index);

uint8_t lan_status(LanEnv *e, LanRing *r, uint32_t index);

uint8_t lan_ok(LanRing *r, uint32_t index);

/* Admin queue up, MSI-X vectors pointing at e->msi, rings created. */
void lan_setup(LanEnv *e, void *obj, void *data, uint8_t tx_log,
               uint8_t rx_log);

extern const uint8_t lan_bcast[6];

/* RX: the posted buffer of descriptor @index must hold exactly @f. */
void lan_expect_rx(LanEnv *e, uint32_t index, uint64_t buf,
                   size_t bufsize, const uint8_t *f, size_t len);

uint64_t lan_rx_buf(LanEnv *e, size_t size);

#endif
