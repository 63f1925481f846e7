/*
 * rdma-session qtests: on-demand paging, the test-side driver (rs-odp.c):
 * ODP regions, ODP_RESOLVE and ODP_INVALIDATE, page-fault events, the pause
 * on the wire between two adapters the test carries.  The areas:
 * odp.c (regions, bad input, invalidation, the table, migration,
 * teardown), odp-fault.c (faults of responders and requesters, faults
 * that fail, XRC, several at once) and odp-pause.c (the pause off,
 * hostile PAUSE/RESUME, a storm, the bounds on a hostile peer).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef RS_ODP_H
#define RS_ODP_H

#include "rs-test.h"
#include "rs-peer.h"

#define ODP_MS          ((int64_t)1000000)  /* virtual ns */

/* B's explicit region: an I/O virtual range that is no guest address. */
#define ODP_VA          0x5a5a00000000ull
#define ODP_PAGES       16
/* A's explicit region (the requester's faults). */
#define ODP_LVA         0x3c3c00000000ull
/* Where the tests reach B's implicit region. */
#define ODP_IVA         0x7f1234560000ull

#define ODP_ACCESS      (STD_ACCESS | RS_ACCESS_REMOTE_ATOMIC)
#define ODP_RW          (RS_ODP_PAGE_READ | RS_ODP_PAGE_WRITE)
#define ODP_RO          RS_ODP_PAGE_READ

/*
 * The responder's min_rnr_timer in the pause tests: code 26, 81.92 ms,
 * longer than the requester's tail loss probe (20 ms) and shorter than
 * the fault's re-post period (100 ms).
 */
#define ODP_MIN_RNR     26

/* How long a paused QP is watched at most, in virtual time. */
#define ODP_QUIET_NS    (60 * ODP_MS)

/* AETH of a NAK Remote Access Error. */
#define ODP_NAK_ACCESS  AETH_NAK_REM_ACCESS

int64_t rnr_timer_ns(uint8_t code);
uint8_t odp_reg(QRdmaSession *d, uint32_t pd, uint8_t flags,
                uint64_t iova, uint64_t len, uint32_t *key);
uint32_t odp_mr(QRdmaSession *d, uint32_t pd, uint64_t iova,
                uint64_t len);
uint8_t odp_resolve_at(QRdmaSession *d, uint32_t key, uint32_t seq,
                       uint64_t va, uint64_t pbl, uint32_t npages,
                       uint32_t flags);
uint64_t odp_list(QRdmaSession *d, const uint64_t *e, uint32_t n);
uint8_t odp_resolve(QRdmaSession *d, uint32_t key, uint32_t seq,
                    uint64_t va, const uint64_t *e, uint32_t n);
void odp_map(QRdmaSession *d, uint32_t key, uint32_t seq,
             uint64_t va, uint64_t pa, uint32_t n, uint64_t rights);
uint8_t odp_fail(QRdmaSession *d, uint32_t key, uint32_t seq,
                 uint64_t va, uint32_t npages);
uint8_t odp_inval(QRdmaSession *d, uint32_t key, uint64_t va,
                  uint64_t len, uint32_t rsvd, uint32_t *count);
void odp_inval_ok(QRdmaSession *d, uint32_t key, uint64_t va,
                  uint64_t len, uint32_t count);
void odp_stats_get(QRdmaSession *d, struct rs_device_stats *s);
void odp_stats(QRdmaSession *d, struct rs_device_stats *s);
bool odp_event(Pair *pr, int i, struct rs_event *ev,
               int64_t step_ns);
void assert_fault(const struct rs_event *ev, uint32_t key,
                  uint64_t page, unsigned min_pages,
                  unsigned max_pages, bool write);
struct rs_event expect_fault_step(Pair *pr, int i, int64_t step_ns,
                                  uint32_t key, uint64_t page,
                                  unsigned min_pages,
                                  unsigned max_pages, bool write);
struct rs_event expect_fault(Pair *pr, int i, uint32_t key,
                             uint64_t page, unsigned min_pages,
                             unsigned max_pages, bool write);
struct rs_event expect_refault(Pair *pr, int i, uint32_t key,
                               uint64_t page, unsigned min_pages,
                               unsigned max_pages, bool write);
unsigned drain_faults(QRdmaSession *d, const struct rs_event *like);
void odp_step(Pair *pr, int64_t ns);
bool odp_poll(Pair *pr, int i, struct rs_cqe *cqe, int64_t step_ns,
              int64_t max_ns);
struct rs_cqe odp_next_cqe(Pair *pr, int i);
void odp_expect_cqe(Pair *pr, int i, uint64_t wr_id, uint8_t status,
                    uint8_t opcode, uint32_t qpn);
int64_t expect_pause(Pair *pr, int from, unsigned at, uint32_t psn,
                     uint8_t rnr);
void expect_resume(Pair *pr, int from, unsigned at, uint32_t psn);
unsigned wait_op(Pair *pr, int from, uint8_t op);
void expect_no_op(Pair *pr, int from, uint8_t op);
void expect_paused(Pair *pr, int64_t pause_ns);
void odp_connect(Pair *pr, LoopQp q[2], uint8_t type,
                 uint8_t retry_cnt, uint8_t rnr_retry,
                 uint8_t min_rnr_timer);
void odp_rc(Pair *pr, LoopQp q[2]);
void pair_post_sge(Pair *pr, int i, LoopQp *q, uint8_t op,
                   uint64_t wr_id, uint64_t addr, uint32_t len,
                   uint32_t lkey, uint64_t raddr, uint32_t rkey);
void pair_atomic(Pair *pr, LoopQp *q, uint8_t op, uint64_t wr_id,
                 uint64_t addr, uint32_t lkey, uint64_t raddr,
                 uint32_t rkey, uint64_t compare_add, uint64_t swap);
void peer_wait_range(Pair *pr, int i, uint32_t off, uint32_t len);
void peer_set64(Peer *p, uint32_t off, uint64_t v);
void pair_post_ud(Pair *pr, LoopQp *q, uint32_t ah, uint64_t wr_id,
                  uint32_t off, uint32_t len, uint32_t qpn);

#endif
