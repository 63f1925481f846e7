/*
 * On-demand paging between two VMs: the peer RDMA-WRITEs and READs
 * through an implicit ODP MR while its owner drops the pages under it.
 *
 *  - VM 1 (the server of the TCP exchange, an adapter with ODP) maps an
 *    anonymous buffer it never touches and registers the implicit ODP MR
 *    (ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...)); its
 *    rkey covers every address of the process.
 *  - VM 2 (-c VM1, an adapter or soft-RoCE) writes and reads VM 1's
 *    buffer through that rkey from a buffer of its own, registered as an
 *    explicit ODP MR at an iova that is not the buffer's address when
 *    its device has ODP (its requester then faults on its own SGEs and
 *    on READ responses, and before its last READ it drops its own
 *    pages), else pinned.
 *
 * Steps (both sides meet over TCP before each):
 *  1. write: VM 2 writes the whole buffer (every page faults at VM 1);
 *     VM 1 checks every byte.
 *  2. halves: ROUNDS rounds; in each VM 2 writes one half with a new
 *     pattern while VM 1 drops the other half (madvise MADV_DONTNEED in
 *     64 KiB steps, at least one full pass, until VM 2 is done): ODP
 *     invalidations of the key run while its faults are resolved.  VM 1
 *     checks every byte: the half written has the round's pattern, the
 *     half dropped is zero.
 *  3. same-pages: VM 2 writes the whole buffer while VM 1 drops 64 KiB
 *     ranges at random all over it.  Every byte must be the pattern or
 *     zero (its page dropped after the packet landed; a page dropped
 *     between two packets of it has both), never the old contents or
 *     anything else.
 *  4. final: VM 2 writes the whole buffer again, nothing dropped: every
 *     byte checked (a translation the device kept after a drop would
 *     have sent its data to a page the process no longer has).  VM 2
 *     reads it back (checked); VM 1 drops the first half; VM 2 reads
 *     again: zero, then the pattern.
 *  4b. fork: VM 1 forks a child that keeps the second half's pages, then
 *     writes a new pattern there itself (copy on write: the kernel gives
 *     the parent new pages and invalidates the old ones); VM 2 reads the
 *     second half: the parent's new pattern, not the child's pages; the
 *     child checks its copy still has the old pattern.
 *  5. prefetch (VM 1 alone): ibv_advise_mr PREFETCH_WRITE with
 *     IB_UVERBS_ADVISE_MR_FLAG_FLUSH on 64 fresh pages (the device's
 *     odp_resolved_pages grows by at least 64), PREFETCH_NO_FAULT on 64
 *     pages never touched (nothing installed: the counter stays) and on
 *     the 64 prefetched (grows by 64 again); an lkey that is no ODP MR
 *     of the PD: EINVAL.
 *     Then a WRITE between two QPs of VM 1 from an explicit ODP MR
 *     over a PROT_NONE page: the requester's fault fails, the WQE
 *     completes with IBV_WC_LOC_PROT_ERR.
 *  6. fault-fail: VM 2 writes 4 KiB at an address of VM 1 that is
 *     mapped PROT_NONE: the driver cannot fault it in and answers the
 *     fault with RS_ODP_RESOLVE_F_FAIL; the WRITE completes with
 *     IBV_WC_REM_ACCESS_ERR (the QP is in error afterwards: last step).
 *
 * VM 1 prints its counters' changes (the port's hw_counters, which
 * `rdma statistic` shows): the device's odp_faults, odp_resolved_pages,
 * odp_invalidations, odp_fault_fails, odp_pauses_sent and the driver's
 * odp_faults_handled, odp_invalidations_issued, odp_faults_failed,
 * odp_implicit_children.  VM 2, with ODP, its requester's.
 *
 * Usage: rsv-odp [common options] [-- -m MIB -r ROUNDS]      (VM 1)
 *        rsv-odp [common options] -c VM1 [-- -m MIB -r ROUNDS]
 *  -m: the buffer, MiB (default 4); -r: rounds of step 2 (default 4).
 *  Both sides must be given the same values.
 *
 * Checks (prefix -n): VM 1: odp-caps, odp-implicit-mr, odp-connect,
 * odp-write, odp-halves, odp-same-pages, odp-final-write, odp-prefetch,
 * odp-local-fail, odp-counters; VM 2: odp-client-mr, odp-connect, odp-peer-write,
 * odp-read, odp-read-dropped, odp-fault-fail, and with ODP
 * odp-requester-counters.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rsv-common.h"

#define PAGE 4096u
#define STEP (64u << 10)	/* WRITE/READ size and drop size */
#define DEPTH 8			/* WRs outstanding */
#define PF_PAGES 64		/* pages of each prefetch */
#define SEED_WRITE 11
#define SEED_HALVES 20		/* + round */
#define SEED_SAME 40
#define SEED_FINAL 50
#define SEED_COW 60
#define CLIENT_IOVA 0x5a5a00000000ull

#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		IBV_ACCESS_REMOTE_READ)

static size_t len = 4u << 20;
static int rounds = 4;
static struct rsv_opts o;
static struct rsv_dev d;

/* The byte at offset i of the buffer for pattern seed (rsv_fill's). */
static inline uint8_t pat(uint32_t seed, size_t i)
{
	return (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

static void fill(uint8_t *buf, size_t from, size_t n, uint32_t seed)
{
	size_t i;

	for (i = from; i < from + n; i++)
		buf[i] = pat(seed, i);
}

/* The first offset in [from, from + n) without the pattern, or -1. */
static long verify(const uint8_t *buf, size_t from, size_t n, uint32_t seed)
{
	size_t i;

	for (i = from; i < from + n; i++)
		if (buf[i] != pat(seed, i))
			return i;
	return -1;
}

static long verify_zero(const uint8_t *buf, size_t from, size_t n)
{
	size_t i;

	for (i = from; i < from + n; i++)
		if (buf[i])
			return i;
	return -1;
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ */
/* Counters: the port's hw_counters (what `rdma statistic` shows)     */
/* ------------------------------------------------------------------ */

static const char *const counter_names[] = {
	"odp_faults", "odp_resolved_pages", "odp_invalidations",
	"odp_fault_fails", "odp_pauses_sent", "odp_pauses_rcvd",
	"odp_resumes_rcvd", "odp_faults_handled", "odp_invalidations_issued",
	"odp_faults_failed", "odp_implicit_children", "odp_prefetches",
};
#define NCNT (sizeof(counter_names) / sizeof(counter_names[0]))

enum {
	C_FAULTS, C_RESOLVED, C_INVAL, C_FAILS, C_PAUSES_SENT, C_PAUSES_RCVD,
	C_RESUMES_RCVD, C_HANDLED, C_INVAL_ISSUED, C_FAILED, C_CHILDREN,
	C_PREFETCHES,
};

static void counters(int64_t *v)
{
	size_t i;

	for (i = 0; i < NCNT; i++)
		v[i] = rsv_hw_counter(d.name, counter_names[i]);
}

static void print_deltas(const int64_t *a, const int64_t *b, int64_t *delta)
{
	size_t i;

	printf("rsv-odp: %s counters:", d.name);
	for (i = 0; i < NCNT; i++) {
		delta[i] = a[i] < 0 || b[i] < 0 ? -1 : b[i] - a[i];
		printf(" %s +%" PRId64, counter_names[i], delta[i]);
	}
	putchar('\n');
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* Traffic                                                            */
/* ------------------------------------------------------------------ */

/*
 * n bytes from offset off of the local and the remote buffer as WRITEs
 * (or READs) of STEP bytes, DEPTH outstanding: 0, the first bad status,
 * -1 (post failed) or -2 (timeout).
 */
static int stream(struct ibv_qp *qp, struct ibv_cq *cq,
		  enum ibv_wr_opcode op, uint64_t local, uint32_t lkey,
		  const struct rsv_peer_info *peer, size_t off, size_t n)
{
	size_t posted = off, end = off + n;
	int out = 0, r;
	struct ibv_wc wc;

	while (posted < end || out) {
		while (out < DEPTH && posted < end) {
			uint32_t k = (uint32_t)(end - posted < STEP ?
						end - posted : STEP);
			struct ibv_sge sge = { local + posted, k, lkey };
			struct ibv_send_wr wr = {
				.wr_id = posted,
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = op,
				.send_flags = IBV_SEND_SIGNALED,
			}, *bad;

			wr.wr.rdma.remote_addr = peer->addr + posted;
			wr.wr.rdma.rkey = peer->rkey;
			if (ibv_post_send(qp, &wr, &bad))
				return -1;
			posted += k;
			out++;
		}
		r = rsv_poll(cq, &wc, o.timeout * 1000);
		if (r <= 0)
			return -2;
		if (wc.status)
			return wc.status;
		out--;
	}
	return 0;
}

/*
 * VM 1: drop [from, from + n) of buf, STEP bytes per madvise, in order
 * or (random) anywhere in it, until VM 2 says it is done on fd but at
 * least once over the whole range; then meet VM 2.  Returns the drops.
 */
static long drop_until_done(int fd, uint8_t *buf, size_t from, size_t n,
			    bool random)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	unsigned int seed = 1234;
	size_t steps = n / STEP, k = 0;
	long calls = 0;

	for (;;) {
		size_t at = random ? (size_t)rand_r(&seed) % steps : k;

		if (madvise(buf + from + at * STEP, STEP, MADV_DONTNEED))
			rsv_die("madvise: %s", strerror(errno));
		calls++;
		k = (k + 1) % steps;
		/* Leave the vCPU to the fault work now and then. */
		usleep(500);
		if (calls >= (long)steps && poll(&p, 1, 0) == 1)
			break;
	}
	if (!rsv_sync(fd))
		rsv_die("VM 2 is gone");
	return calls;
}

/* ------------------------------------------------------------------ */
/* VM 1: the implicit ODP MR                                           */
/* ------------------------------------------------------------------ */

/*
 * A requester whose local SGE cannot be faulted in: an explicit ODP MR
 * over a PROT_NONE page, the source of an RDMA WRITE between two QPs of
 * this device (to @to of the implicit MR): IBV_WC_LOC_PROT_ERR.
 */
static void local_fail(struct ibv_mr *imr, void *to)
{
	struct rsv_peer_info a = { 0 }, b = { 0 };
	struct ibv_send_wr wr = { 0 };
	struct ibv_qp *qa, *qb;
	struct ibv_sge sge;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	int64_t t0;
	void *none;
	int st;

	none = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (none == MAP_FAILED)
		rsv_die("mmap: %s", strerror(errno));
	mr = ibv_reg_mr(d.pd, none, PAGE, ACCESS | IBV_ACCESS_ON_DEMAND);
	cq = ibv_create_cq(d.ctx, 4, NULL, NULL, 0);
	if (!mr || !cq)
		rsv_die("ODP MR over PROT_NONE / CQ: %s", strerror(errno));
	qa = rsv_rc_qp(&d, cq, NULL, 2);
	qb = rsv_rc_qp(&d, cq, NULL, 2);
	rsv_info(&d, qa, 0x5000, &a);
	rsv_info(&d, qb, 0x6000, &b);
	if (rsv_rc_connect(&d, qa, ACCESS, a.psn, &b) ||
	    rsv_rc_connect(&d, qb, ACCESS, b.psn, &a))
		rsv_die("loopback QPs: %s", strerror(errno));
	sge = (struct ibv_sge){ (uintptr_t)none, PAGE, mr->lkey };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)to;
	wr.wr.rdma.rkey = imr->rkey;
	t0 = now_ms();
	st = rsv_post_wait(qa, cq, &wr, o.timeout * 1000);
	rsv_check(&o, "odp-local-fail", st == IBV_WC_LOC_PROT_ERR,
		  "WRITE from an ODP MR over a PROT_NONE page: %s after %" PRId64
		  " ms", st >= 0 ? ibv_wc_status_str(st) :
		  "post failed or timed out", now_ms() - t0);
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	munmap(none, PAGE);
}

static int advise(struct ibv_pd *pd, uint32_t lkey, void *addr, size_t n,
		  enum ibv_advise_mr_advice advice)
{
	struct ibv_sge sge = { (uintptr_t)addr, (uint32_t)n, lkey };

	return ibv_advise_mr(pd, advice, IB_UVERBS_ADVISE_MR_FLAG_FLUSH, &sge,
			     1);
}

/*
 * VM 1 forks; the child keeps its copy of [half, 2 * half) (and checks it
 * at the end), the parent writes a new pattern there and lets VM 2 read.
 */
static void fork_cow(int fd, uint8_t *buf, size_t half)
{
	int cp[2], ws = 0;
	pid_t child;
	char c;

	if (pipe(cp))
		rsv_die("pipe: %s", strerror(errno));
	child = fork();
	if (child < 0)
		rsv_die("fork: %s", strerror(errno));
	if (!child) {
		close(cp[1]);
		if (read(cp[0], &c, 1) < 0)
			_exit(2);
		_exit(verify(buf, half, half, SEED_FINAL) < 0 ? 0 : 1);
	}
	close(cp[0]);
	fill(buf, half, half, SEED_COW);
	rsv_sync(fd);			/* VM 2 reads the second half */
	rsv_sync(fd);
	close(cp[1]);
	if (waitpid(child, &ws, 0) < 0)
		rsv_die("waitpid: %s", strerror(errno));
	rsv_check(&o, "odp-fork-child", WIFEXITED(ws) && !WEXITSTATUS(ws),
		  "the forked child's copy of the second half %s after the parent wrote its own",
		  WIFEXITED(ws) && !WEXITSTATUS(ws) ? "kept the old pattern" :
		  "changed (or the child failed)");
}

static void server(int fd)
{
	const uint32_t rc_need = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
				 IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ;
	const struct ibv_odp_caps *caps = &d.attr.odp_caps;
	struct rsv_peer_info me = { 0 }, peer;
	int64_t c0[NCNT], c1[NCNT], dl[NCNT], r0, r1, r2, r3;
	uint8_t *buf, *none, *pf;
	int bad_rounds = 0, a1, a2, a3, a4, r, err;
	long bad, bad2, zero_pages = 0, mixed = 0, other = 0, drops = 0;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	size_t half = len / 2, i;

	if (!rsv_check(&o, "odp-caps",
		       (caps->general_caps & IBV_ODP_SUPPORT) &&
		       (caps->general_caps & IBV_ODP_SUPPORT_IMPLICIT) &&
		       (caps->per_transport_caps.rc_odp_caps & rc_need) == rc_need,
		       "%s: general_caps %#" PRIx64 ", rc %#x, uc %#x, ud %#x",
		       d.name, caps->general_caps,
		       caps->per_transport_caps.rc_odp_caps,
		       caps->per_transport_caps.uc_odp_caps,
		       caps->per_transport_caps.ud_odp_caps))
		rsv_die("no implicit ODP on %s", d.name);
	counters(c0);

	/* Never touched by this process before the peer writes it. */
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	none = mmap(NULL, STEP, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pf = mmap(NULL, 2 * PF_PAGES * PAGE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || none == MAP_FAILED || pf == MAP_FAILED)
		rsv_die("mmap: %s", strerror(errno));

	mr = ibv_reg_mr(d.pd, NULL, SIZE_MAX, ACCESS | IBV_ACCESS_ON_DEMAND);
	err = mr ? 0 : errno;
	rsv_check(&o, "odp-implicit-mr", mr != NULL,
		  "ibv_reg_mr(NULL, SIZE_MAX, ON_DEMAND): %s, lkey %#x rkey %#x",
		  mr ? "ok" : strerror(err), mr ? mr->lkey : 0,
		  mr ? mr->rkey : 0);
	if (!mr)
		rsv_die("no implicit ODP MR");

	cq = ibv_create_cq(d.ctx, 2 * DEPTH, NULL, NULL, 0);
	if (!cq)
		rsv_die("ibv_create_cq: %s", strerror(errno));
	qp = rsv_rc_qp(&d, cq, NULL, DEPTH);
	rsv_info(&d, qp, 0x3000, &me);
	me.addr = (uintptr_t)buf;
	me.rkey = mr->rkey;
	me.len = (uint32_t)len;
	me.extra[0] = (uint32_t)(uintptr_t)none;
	me.extra[1] = (uint32_t)((uintptr_t)none >> 32);
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");
	err = rsv_rc_connect(&d, qp, ACCESS, me.psn, &peer);
	rsv_check(&o, "odp-connect", !err, "%s qpn %u to qpn %u: %s", d.name,
		  me.qpn, peer.qpn, err ? strerror(err) : "RTS");
	if (err || !rsv_sync(fd))
		return;

	/* 1. write */
	if (!rsv_sync(fd))
		rsv_die("VM 2 is gone");
	bad = verify(buf, 0, len, SEED_WRITE);
	rsv_check(&o, "odp-write", bad < 0,
		  "%zu KiB written by the peer into pages never touched: first difference at %ld",
		  len >> 10, bad);

	/* 2. halves */
	for (r = 1; r <= rounds; r++) {
		size_t w = (r % 2) * half, x = half - w;

		if (!rsv_sync(fd))
			rsv_die("VM 2 is gone");
		drops += drop_until_done(fd, buf, x, half, false);
		bad = verify(buf, w, half, SEED_HALVES + r);
		bad2 = verify_zero(buf, x, half);
		if (bad >= 0 || bad2 >= 0) {
			bad_rounds++;
			printf("rsv-odp: round %d: half at %zu: first difference %ld; half dropped at %zu: first nonzero %ld\n",
			       r, w, bad, x, bad2);
		}
	}
	rsv_check(&o, "odp-halves", !bad_rounds,
		  "%d rounds: one half written while the other was dropped (%ld madvise calls of %u KiB): %d rounds with a byte not as expected",
		  rounds, drops, STEP >> 10, bad_rounds);

	/* 3. same-pages */
	if (!rsv_sync(fd))
		rsv_die("VM 2 is gone");
	drops = drop_until_done(fd, buf, 0, len, true);
	for (i = 0; i < len; i += PAGE) {
		size_t j, nz = 0, odd = 0;

		for (j = i; j < i + PAGE; j++) {
			nz += buf[j] != 0;
			odd += buf[j] && buf[j] != pat(SEED_SAME, j);
		}
		if (odd)
			other++;
		else if (!nz)
			zero_pages++;
		else if (verify(buf, i, PAGE, SEED_SAME) >= 0)
			mixed++;
	}
	rsv_check(&o, "odp-same-pages", other == 0,
		  "%ld drops of %u KiB while the peer wrote the same pages: of %zu pages %ld zero (dropped after the write), %ld part zero (dropped between two packets), %ld with bytes neither the pattern nor zero",
		  drops, STEP >> 10, len / PAGE, zero_pages, mixed, other);
	/* Checked: VM 2 may write step 4 over these pages now. */
	if (!rsv_sync(fd))
		rsv_die("VM 2 is gone");

	/* 4. final */
	if (!rsv_sync(fd))
		rsv_die("VM 2 is gone");
	bad = verify(buf, 0, len, SEED_FINAL);
	rsv_check(&o, "odp-final-write", bad < 0,
		  "%zu KiB written with nothing dropped: first difference at %ld",
		  len >> 10, bad);
	rsv_sync(fd);			/* VM 2 has read it back */
	if (madvise(buf, half, MADV_DONTNEED))
		rsv_die("madvise: %s", strerror(errno));
	rsv_sync(fd);			/* VM 2 reads again */
	rsv_sync(fd);

	/* 4b. fork: the child keeps the second half, the parent writes it */
	fork_cow(fd, buf, half);

	/* 5. prefetch */
	r0 = rsv_hw_counter(d.name, "odp_resolved_pages");
	a1 = advise(d.pd, mr->lkey, pf, PF_PAGES * PAGE,
		    IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
	r1 = rsv_hw_counter(d.name, "odp_resolved_pages");
	a2 = advise(d.pd, mr->lkey, pf + PF_PAGES * PAGE, PF_PAGES * PAGE,
		    IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT);
	r2 = rsv_hw_counter(d.name, "odp_resolved_pages");
	a3 = advise(d.pd, mr->lkey, pf, PF_PAGES * PAGE,
		    IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT);
	r3 = rsv_hw_counter(d.name, "odp_resolved_pages");
	a4 = advise(d.pd, mr->lkey ^ (1u << 8), pf, PAGE,
		    IBV_ADVISE_MR_ADVICE_PREFETCH);
	rsv_check(&o, "odp-prefetch",
		  !a1 && r1 - r0 >= PF_PAGES && !a2 && r2 == r1 && !a3 &&
		  r3 - r2 >= PF_PAGES && a4 == EINVAL,
		  "PREFETCH_WRITE of %d pages: %s, resolved pages +%" PRId64
		  "; NO_FAULT of %d untouched pages: %s, +%" PRId64
		  "; NO_FAULT of the %d prefetched: %s, +%" PRId64
		  "; another lkey: %s", PF_PAGES, strerror(a1), r1 - r0,
		  PF_PAGES, strerror(a2), r2 - r1, PF_PAGES, strerror(a3),
		  r3 - r2, strerror(a4));

	/* 5b. a local SGE that cannot be faulted in */
	local_fail(mr, pf);

	/* 6. fault-fail: VM 2 writes into the PROT_NONE page */
	rsv_sync(fd);
	rsv_sync(fd);

	counters(c1);
	print_deltas(c0, c1, dl);
	rsv_check(&o, "odp-counters",
		  dl[C_FAULTS] > 0 && dl[C_RESOLVED] > 0 && dl[C_INVAL] > 0 &&
		  dl[C_INVAL] == dl[C_INVAL_ISSUED] && dl[C_HANDLED] > 0 &&
		  dl[C_FAILED] >= 2 && dl[C_FAILS] >= 2 &&
		  dl[C_PAUSES_SENT] > 0 && dl[C_CHILDREN] >= 1,
		  "device: %" PRId64 " faults, %" PRId64 " pages resolved, %"
		  PRId64 " invalidations (driver issued %" PRId64 "), %" PRId64
		  " faults failed, %" PRId64 " pauses sent; driver: %" PRId64
		  " faults handled, %" PRId64 " answered with F_FAIL, %" PRId64
		  " implicit children",
		  dl[C_FAULTS], dl[C_RESOLVED], dl[C_INVAL],
		  dl[C_INVAL_ISSUED], dl[C_FAILS], dl[C_PAUSES_SENT],
		  dl[C_HANDLED], dl[C_FAILED], dl[C_CHILDREN]);
	rsv_sync(fd);

	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	if (ibv_dereg_mr(mr))
		rsv_die("ibv_dereg_mr of the implicit MR: %s", strerror(errno));
	munmap(buf, len);
	munmap(none, STEP);
	munmap(pf, 2 * PF_PAGES * PAGE);
}

/* ------------------------------------------------------------------ */
/* VM 2: the peer                                                     */
/* ------------------------------------------------------------------ */

static void client(int fd)
{
	const struct ibv_odp_caps *caps = &d.attr.odp_caps;
	bool odp = (caps->general_caps & IBV_ODP_SUPPORT) &&
		   (caps->per_transport_caps.rc_odp_caps &
		    (IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ)) ==
		   (IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ);
	struct rsv_peer_info me = { 0 }, peer, fail;
	int64_t c0[NCNT], c1[NCNT], dl[NCNT], t0;
	int st, st2, ok_all = 1, err, r;
	size_t half = len / 2;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	long bad, bad2;
	uint64_t laddr;
	uint8_t *buf;

	counters(c0);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		rsv_die("mmap: %s", strerror(errno));
	/* The ODP MR's addresses are not the buffer's: SGEs use the iova. */
	laddr = odp ? CLIENT_IOVA : (uintptr_t)buf;
	mr = odp ? ibv_reg_mr_iova(d.pd, buf, len, CLIENT_IOVA,
				   ACCESS | IBV_ACCESS_ON_DEMAND) :
		   ibv_reg_mr(d.pd, buf, len, ACCESS);
	err = mr ? 0 : errno;
	rsv_check(&o, "odp-client-mr", mr != NULL, "%s: %zu KiB, %s: %s",
		  d.name, len >> 10,
		  odp ? "explicit ODP at iova 0x5a5a00000000" : "pinned (no ODP)",
		  mr ? "registered" : strerror(err));
	if (!mr)
		rsv_die("no MR");
	cq = ibv_create_cq(d.ctx, 2 * DEPTH, NULL, NULL, 0);
	if (!cq)
		rsv_die("ibv_create_cq: %s", strerror(errno));
	qp = rsv_rc_qp(&d, cq, NULL, DEPTH);
	rsv_info(&d, qp, 0x4000, &me);
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");
	if (peer.len != len)
		rsv_die("VM 1's buffer is %u bytes, mine %zu: give both -m", peer.len,
			len);
	err = rsv_rc_connect(&d, qp, ACCESS, me.psn, &peer);
	rsv_check(&o, "odp-connect", !err, "%s qpn %u to qpn %u: %s", d.name,
		  me.qpn, peer.qpn, err ? strerror(err) : "RTS");
	if (err || !rsv_sync(fd))
		return;

	/* 1. write */
	fill(buf, 0, len, SEED_WRITE);
	t0 = now_ms();
	st = stream(qp, cq, IBV_WR_RDMA_WRITE, laddr, mr->lkey, &peer, 0, len);
	printf("rsv-odp: step 1: %zu KiB written in %" PRId64 " ms: status %d\n",
	       len >> 10, now_ms() - t0, st);
	ok_all &= !st;
	rsv_sync(fd);

	/* 2. halves */
	for (r = 1; !st && r <= rounds; r++) {
		rsv_sync(fd);
		fill(buf, 0, len, SEED_HALVES + r);
		st = stream(qp, cq, IBV_WR_RDMA_WRITE, laddr, mr->lkey, &peer,
			    (r % 2) * half, half);
		ok_all &= !st;
		rsv_sync(fd);
	}

	/* 3. same-pages */
	if (!st) {
		rsv_sync(fd);
		fill(buf, 0, len, SEED_SAME);
		t0 = now_ms();
		st = stream(qp, cq, IBV_WR_RDMA_WRITE, laddr, mr->lkey, &peer, 0,
			    len);
		printf("rsv-odp: step 3: %zu KiB written under drops in %" PRId64
		       " ms: status %d\n", len >> 10, now_ms() - t0, st);
		ok_all &= !st;
		rsv_sync(fd);
	}

	/* 4. final */
	if (!st) {
		rsv_sync(fd);		/* VM 1 has checked step 3 */
		fill(buf, 0, len, SEED_FINAL);
		st = stream(qp, cq, IBV_WR_RDMA_WRITE, laddr, mr->lkey, &peer, 0,
			    len);
		ok_all &= !st;
	}
	rsv_check(&o, "odp-peer-write", ok_all,
		  "%d WRITE passes of %u KiB WRs (%d outstanding) into VM 1's implicit ODP MR: %s",
		  3 + rounds, STEP >> 10, DEPTH,
		  st ? (st > 0 ? ibv_wc_status_str(st) : "post failed or timed out") :
		  "every completion successful");
	if (st)
		return;
	rsv_sync(fd);
	memset(buf, 0, len);
	t0 = now_ms();
	st = stream(qp, cq, IBV_WR_RDMA_READ, laddr, mr->lkey, &peer, 0, len);
	bad = st ? -2 : verify(buf, 0, len, SEED_FINAL);
	rsv_check(&o, "odp-read", !st && bad < 0,
		  "%zu KiB read back in %" PRId64 " ms: status %d, first difference %ld",
		  len >> 10, now_ms() - t0, st, bad);
	rsv_sync(fd);
	rsv_sync(fd);			/* VM 1 dropped its first half */
	/*
	 * With ODP, this side drops its pages too: the READ responses must
	 * land in the new pages (an invalidation of the iova range the
	 * device knows), not in the old ones, which would leave 0xee.
	 */
	if (odp && madvise(buf, len, MADV_DONTNEED))
		rsv_die("madvise: %s", strerror(errno));
	memset(buf, 0xee, len);
	st2 = stream(qp, cq, IBV_WR_RDMA_READ, laddr, mr->lkey, &peer, 0, len);
	bad = st2 ? -2 : verify_zero(buf, 0, half);
	bad2 = st2 ? -2 : verify(buf, half, half, SEED_FINAL);
	rsv_check(&o, "odp-read-dropped", !st2 && bad < 0 && bad2 < 0,
		  "read after VM 1 dropped its first half: status %d, first nonzero in it %ld, first difference in the second %ld",
		  st2, bad, bad2);
	rsv_sync(fd);

	/* 4b. VM 1 forked and wrote its second half: copy on write */
	rsv_sync(fd);			/* VM 1 wrote */
	memset(buf + half, 0xee, half);
	st = stream(qp, cq, IBV_WR_RDMA_READ, laddr, mr->lkey, &peer, half,
		    half);
	bad = st ? -2 : verify(buf, half, half, SEED_COW);
	rsv_check(&o, "odp-fork-cow", !st && bad < 0,
		  "READ of VM 1's second half after it forked and wrote it (copy on write): status %d, first difference %ld",
		  st, bad);
	rsv_sync(fd);

	/* 5. VM 1 prefetches */
	rsv_sync(fd);

	/* 6. fault-fail */
	fail = peer;
	fail.addr = (uint64_t)peer.extra[0] | (uint64_t)peer.extra[1] << 32;
	fill(buf, 0, PAGE, 1);
	t0 = now_ms();
	st = stream(qp, cq, IBV_WR_RDMA_WRITE, laddr, mr->lkey, &fail, 0, PAGE);
	rsv_check(&o, "odp-fault-fail", st == IBV_WC_REM_ACCESS_ERR,
		  "WRITE into VM 1's PROT_NONE page: %s after %" PRId64 " ms",
		  st > 0 ? ibv_wc_status_str(st) : (st ? "post failed or timed out" :
		  "success"), now_ms() - t0);
	rsv_sync(fd);

	if (odp) {
		counters(c1);
		print_deltas(c0, c1, dl);
		rsv_check(&o, "odp-requester-counters",
			  dl[C_FAULTS] > 0 && dl[C_HANDLED] > 0 &&
			  dl[C_INVAL] > 0 && dl[C_INVAL] == dl[C_INVAL_ISSUED] &&
			  dl[C_PAUSES_RCVD] > 0 && dl[C_RESUMES_RCVD] > 0,
			  "own faults (SGEs, READ responses) %" PRId64
			  ", handled %" PRId64 ", invalidations %" PRId64
			  " (driver issued %" PRId64 "); VM 1's pauses received %"
			  PRId64 ", resumes %" PRId64, dl[C_FAULTS], dl[C_HANDLED],
			  dl[C_INVAL], dl[C_INVAL_ISSUED], dl[C_PAUSES_RCVD],
			  dl[C_RESUMES_RCVD]);
	}
	rsv_sync(fd);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	munmap(buf, len);
}

int main(int argc, char **argv)
{
	int c, fd;

	rsv_parse(&o, argc, argv);
	optind = 0;
	while ((c = getopt(o.argc + 1, o.argv - 1, "m:r:")) != -1) {
		switch (c) {
		case 'm':
			len = (size_t)atoi(optarg) << 20;
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			rsv_die("usage: rsv-odp [-d DEV] [-g GID] [-p PORT] [-c VM1] [-n PREFIX] [-t SECONDS] [-- -m MIB -r ROUNDS]");
		}
	}
	if (len < 2 * STEP || rounds < 1)
		rsv_die("-m must be at least 1 and -r at least 1");
	rsv_open(&o, &d);
	fd = rsv_oob(&o);
	if (o.server)
		client(fd);
	else
		server(fd);
	close(fd);
	rsv_close(&d);
	return rsv_exit_status();
}
