/*
 * Dynamically connected transport and indirect/pattern memory keys
 * through rsessiondv.h, among three VMs: VM 1 (the server of the
 * out-of-band exchange) owns one DCI, VMs 2 and 3 (its clients) one DCT
 * each.
 *
 *  1. Traffic: 8 rounds, round i to the DCT of VM 2 + i % 2 (so the DCI
 *     switches target every round): a SEND with immediate i (64 bytes of
 *     seed 1000 + i), a WRITE of 256 bytes (seed 2000 + i) at offset
 *     i * 256 of the target's buffer and a READ of them back, verified.
 *     Each DCT checks its 4 receives (immediate, bytes, its own number as
 *     qp_num, the DCI's as src_qp) and its buffer: its rounds' WRITEs
 *     landed, the other rounds' slots are untouched.
 *  2. A SEND to VM 2's DCT with a wrong key: IBV_WC_REM_ACCESS_ERR at the
 *     DCI, IBV_EVENT_QP_ACCESS_ERR on the DCT; the DCI is reset and
 *     reconnected, and VM 2's DCT still serves (the rounds of step 3).
 *  3. Rates: NRATE WRITEs of 64 bytes alternating between the two DCTs,
 *     then as many to VM 2's DCT alone (messages/s of each), and the
 *     memory of one DCI against N RC QPs of the same send queue.
 *  4. VM 2 makes an indirect key over three MRs (rsdv_create_mkey,
 *     rsdv_wr_mr_list on a DCI of its own, which reaches RTS without a
 *     peer); VM 1 writes 4500 bytes through it (zero-based) and reads
 *     them back; VM 2 checks the three MRs (each range written, the guard
 *     bytes around it not).  VM 3 makes a pattern key over one column of
 *     a 32 x 256-byte matrix (rsdv_wr_mr_interleaved: 8 bytes every 256,
 *     32 times); VM 1 writes the column (256 bytes) and reads it back;
 *     VM 3 checks the column and that the rest of the matrix is untouched.
 *     Then VM 2 invalidates its key (LOCAL_INV) and VM 1's WRITE through
 *     it is refused.
 *
 * Usage: rsv-dc [common options]   (RS_VM_COUNT: 3)
 * Checks: VM 1: dc-caps dc-dci-create dc-query dc-traffic dc-bad-key dc-recover
 *   dc-rate dc-memory mkey-indirect-rw mkey-pattern-rw mkey-inv-refused;
 *   VMs 2 and 3: dc-caps dc-dct-create dc-query dc-recv dc-write-mem;
 *   VM 2: dc-key-event mkey-indirect-mem; VM 3: mkey-pattern-column
 *   mkey-pattern-rest.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/rsessiondv.h>

#include "rsv-common.h"

#define ROUNDS		8
#define SLOT		256
#define BUF		(ROUNDS * SLOT)
#define NRATE		1000
#define KEY_BASE	0x5eed0000c0ffee00ull	/* + VM number: the DCT keys */
#define BAD_KEY_XOR	0xbad0000u
#define IND_LEN		4500
#define ROWS		32
#define ROWB		256
#define COL		5	/* the column: bytes 40-47 of each row */
#define COLW		8
#define NRC		16	/* RC QPs for the memory comparison */

static const struct { uint32_t off, len; } ind[3] = {
	{ 100, 1000 }, { 200, 1500 }, { 300, 2000 },
};

static struct rsv_opts o;
static struct rsv_dev d;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void oob_accept(int n, int *fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(o.port) };
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1, i;
	struct pollfd p = { .fd = ls, .events = POLLIN };

	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, n))
		rsv_die("listen on port %d: %s", o.port, strerror(errno));
	for (i = 0; i < n; i++) {
		if (poll(&p, 1, o.timeout * 1000) != 1)
			rsv_die("no client %d on port %d", i, o.port);
		fd[i] = accept(ls, NULL, NULL);
		if (fd[i] < 0)
			rsv_die("accept: %s", strerror(errno));
	}
	close(ls);
}

/* A DCI on cq with the memory key work requests; RESET -> RTS. */
static struct ibv_qp *make_dci(struct ibv_cq *cq, uint32_t depth)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_DRIVER,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = depth, .max_send_sge = 4 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = d.pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_LOCAL_INV,
	};
	struct rsdv_qp_init_attr dv = {
		.comp_mask = RSDV_QP_INIT_ATTR_MASK_DC |
			     RSDV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS,
		.dc_init_attr = { .dc_type = RSDV_DCTYPE_DCI },
		.send_ops_flags = RSDV_QP_EX_WITH_MR_LIST |
				  RSDV_QP_EX_WITH_MR_INTERLEAVED,
	};

	return rsdv_create_qp(d.ctx, &a, &dv);
}

static int dci_up(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT |
			  IBV_QP_PKEY_INDEX))
		return errno;
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PATH_MTU))
		return errno;
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return errno;
	return 0;
}

struct target {
	struct ibv_ah *ah;
	uint32_t dctn;
	uint64_t key;
	uint64_t addr;
	uint32_t rkey;
	uint32_t mkey, mkey_len;	/* its indirect or pattern key */
};

enum { OP_SEND_IMM, OP_WRITE, OP_READ };

/* Post one DC work request (signaled if sig); 0 or an errno. */
static int dc_post(struct ibv_qp *qp, int op, const struct target *t,
		   uint64_t key, uint32_t rkey, uint64_t raddr, uint32_t lkey,
		   void *laddr, uint32_t len, uint64_t wr_id, bool sig)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);
	struct rsdv_qp_ex *mqp = rsdv_qp_ex_from_ibv_qp_ex(qpx);

	ibv_wr_start(qpx);
	qpx->wr_id = wr_id;
	qpx->wr_flags = sig ? IBV_SEND_SIGNALED : 0;
	if (op == OP_SEND_IMM)
		ibv_wr_send_imm(qpx, htonl((uint32_t)wr_id));
	else if (op == OP_WRITE)
		ibv_wr_rdma_write(qpx, rkey, raddr);
	else
		ibv_wr_rdma_read(qpx, rkey, raddr);
	rsdv_wr_set_dc_addr(mqp, t->ah, t->dctn, key);
	ibv_wr_set_sge(qpx, lkey, (uintptr_t)laddr, len);
	return ibv_wr_complete(qpx);
}

/* Post and wait: the completion's status, -1 post failed, -2 timeout. */
static int dc_do(struct ibv_qp *qp, struct ibv_cq *cq, int op,
		 const struct target *t, uint64_t key, uint32_t rkey,
		 uint64_t raddr, struct ibv_mr *mr, void *laddr, uint32_t len,
		 uint64_t wr_id)
{
	struct ibv_wc wc;
	int r;

	if (dc_post(qp, op, t, key, rkey, raddr, mr->lkey, laddr, len, wr_id,
		    true))
		return -1;
	r = rsv_poll(cq, &wc, o.timeout * 1000);
	if (r != 1)
		return -2;
	return wc.status;
}

/* Bytes of this process's mappings of the uverbs device (the rings). */
static long uverbs_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long a, b;
	long sum = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/dev/infiniband/uverbs") &&
		    sscanf(line, "%lx-%lx", &a, &b) == 2)
			sum += b - a;
	fclose(f);
	return sum;
}

/* Ring bytes and provider heap bytes of creating n QPs with make(). */
static void qp_memory(struct ibv_cq *cq, bool dci, int n, long *ring,
		      long *heap)
{
	struct ibv_qp *qp[NRC];
	long m0 = uverbs_mapped();
	size_t h0 = mallinfo2().uordblks;
	int i;

	for (i = 0; i < n; i++) {
		if (dci) {
			qp[i] = make_dci(cq, 64);
		} else {
			struct ibv_qp_init_attr a = {
				.send_cq = cq, .recv_cq = cq,
				.qp_type = IBV_QPT_RC,
				.cap = { .max_send_wr = 64, .max_recv_wr = 64,
					 .max_send_sge = 4,
					 .max_recv_sge = 1 },
			};

			qp[i] = ibv_create_qp(d.pd, &a);
		}
		if (!qp[i])
			rsv_die("create QP for the memory count: %s",
				strerror(errno));
	}
	*ring = uverbs_mapped() - m0;
	*heap = (long)(mallinfo2().uordblks - h0);
	for (i = 0; i < n; i++)
		ibv_destroy_qp(qp[i]);
}

/* Rate of NRATE 64-byte WRITEs, window 16, alternating or to t[0] only. */
static double rate(struct ibv_qp *qp, struct ibv_cq *cq, struct target *t,
		   bool alternate, struct ibv_mr *mr, char *buf, int *bad)
{
	int posted = 0, done = 0, out = 0, n, i;
	struct ibv_wc wc[16];
	double t0 = now(), end = t0 + o.timeout;

	while (done < NRATE && now() < end) {
		while (posted < NRATE && out < 16) {
			struct target *x = &t[alternate ? posted % 2 : 0];

			if (dc_post(qp, OP_WRITE, x, x->key, x->rkey,
				    x->addr + (posted % ROUNDS) * 64,
				    mr->lkey, buf, 64, posted, true))
				break;
			posted++;
			out++;
		}
		n = ibv_poll_cq(cq, 16, wc);
		for (i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				(*bad)++;
		done += n > 0 ? n : 0;
		out -= n > 0 ? n : 0;
	}
	if (done < NRATE)
		(*bad) += NRATE - done;
	return done / (now() - t0);
}

static int dci_side(int *fd)
{
	struct target t[2];
	struct rsv_peer_info me, peer, tinfo[2];
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	char *buf, *rd;
	int i, st, err, bad = 0;
	char detail[256] = "";

	cq = ibv_create_cq(d.ctx, 256, NULL, NULL, 0);
	buf = aligned_alloc(4096, 2 * IND_LEN + 8192);
	rd = buf + IND_LEN + 4096;
	mr = ibv_reg_mr(d.pd, buf, 2 * IND_LEN + 8192,
			IBV_ACCESS_LOCAL_WRITE);
	if (!cq || !mr)
		rsv_die("CQ/MR: %s", strerror(errno));
	qp = make_dci(cq, 64);
	err = qp ? dci_up(qp) : errno;
	rsv_check(&o, "dc-dci-create", qp && !err, "DCI %u: %s",
		  qp ? qp->qp_num : 0, err ? strerror(err) : "RTS");
	if (!qp || err)
		return 1;
	{
		struct ibv_qp_init_attr ia;
		struct ibv_qp_attr q;

		err = ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_TIMEOUT |
				   IBV_QP_RETRY_CNT | IBV_QP_CAP, &ia);
		rsv_check(&o, "dc-query", !err && q.qp_state == IBV_QPS_RTS &&
			  q.timeout == 14 && q.retry_cnt == 7 &&
			  q.cap.max_send_wr == 64 && !q.cap.max_recv_wr &&
			  ia.qp_type == IBV_QPT_DRIVER,
			  "ibv_query_qp of the DCI: %s, state %d, timeout %u, retry %u, send WRs %u, receive WRs %u, type %d",
			  err ? strerror(err) : "ok", q.qp_state, q.timeout,
			  q.retry_cnt, q.cap.max_send_wr, q.cap.max_recv_wr,
			  ia.qp_type);
	}
	rsv_info(&d, qp, 0, &me);
	/*
	 * The clients connect in any order: each says its VM number, and
	 * t[k] and fd[k] become VM k + 2's.
	 */
	{
		struct rsv_peer_info p[2];
		int f[2] = { fd[0], fd[1] }, k;

		for (i = 0; i < 2; i++)
			if (!rsv_xchg(f[i], &me, &p[i], sizeof(me)))
				rsv_die("exchange with a DCT side");
		for (i = 0; i < 2; i++) {
			k = p[i].extra[2] == 3;
			if (p[i].extra[2] != 2 + k || p[!i].extra[2] == p[i].extra[2])
				rsv_die("the DCT sides are not VMs 2 and 3");
			fd[k] = f[i];
			tinfo[k] = p[i];
		}
	}
	for (i = 0; i < 2; i++) {
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };

		peer = tinfo[i];
		aa.grh.dgid = peer.gid;
		aa.grh.sgid_index = d.gid_index;
		aa.grh.hop_limit = 64;
		t[i].ah = ibv_create_ah(d.pd, &aa);
		if (!t[i].ah)
			rsv_die("ibv_create_ah: %s", strerror(errno));
		t[i].dctn = peer.qpn;
		t[i].key = peer.extra[0] | (uint64_t)peer.extra[1] << 32;
		t[i].addr = peer.addr;
		t[i].rkey = peer.rkey;
	}

	/* 1. SEND, WRITE, READ, alternating targets. */
	for (i = 0; i < ROUNDS && !bad; i++) {
		struct target *x = &t[i % 2];

		rsv_fill(buf, 64, 1000 + i);
		st = dc_do(qp, cq, OP_SEND_IMM, x, x->key, 0, 0, mr, buf, 64, i);
		if (!st) {
			rsv_fill(buf, SLOT, 2000 + i);
			st = dc_do(qp, cq, OP_WRITE, x, x->key, x->rkey,
				   x->addr + i * SLOT, mr, buf, SLOT, i);
		}
		if (!st) {
			memset(rd, 0, SLOT);
			st = dc_do(qp, cq, OP_READ, x, x->key, x->rkey,
				   x->addr + i * SLOT, mr, rd, SLOT, i);
		}
		if (st || rsv_verify(rd, SLOT, 2000 + i) >= 0) {
			snprintf(detail, sizeof(detail),
				 "round %d to VM %d: %s", i, 2 + i % 2,
				 st > 0 ? ibv_wc_status_str(st) :
				 st ? "post failed or timeout" :
				 "READ data differ");
			bad++;
		}
	}
	rsv_check(&o, "dc-traffic", !bad,
		  "%d rounds of SEND+WRITE+READ (%d bytes) alternating between DCT %u of VM 2 and DCT %u of VM 3, %d target switches: %s",
		  ROUNDS, SLOT, t[0].dctn, t[1].dctn, ROUNDS - 1,
		  bad ? detail : "all completed, READ data verified");
	for (i = 0; i < 2; i++)
		rsv_sync(fd[i]);

	/* 2. A wrong key. */
	st = dc_do(qp, cq, OP_SEND_IMM, &t[0], t[0].key ^ BAD_KEY_XOR, 0, 0, mr, buf,
		   64, 99);
	rsv_check(&o, "dc-bad-key", st == IBV_WC_REM_ACCESS_ERR,
		  "SEND to DCT %u with key %#llx (its key ^ 0xbad0000): %s", t[0].dctn,
		  (unsigned long long)(t[0].key ^ BAD_KEY_XOR),
		  st > 0 ? ibv_wc_status_str(st) : st == 0 ? "success" :
		  "post failed or timeout");
	/* The DCI is in error: flush what may still come, then reset. */
	while (rsv_poll(cq, &wc, 200) == 1)
		;
	err = dci_up(qp);
	st = err ? -1 : dc_do(qp, cq, OP_WRITE, &t[0], t[0].key, t[0].rkey,
			      t[0].addr, mr, buf, 64, 100);
	rsv_check(&o, "dc-recover", !err && !st,
		  "DCI reset to RTS (%s), WRITE to DCT %u: %s",
		  err ? strerror(err) : "ok", t[0].dctn,
		  st > 0 ? ibv_wc_status_str(st) : st ? "failed" : "success");
	for (i = 0; i < 2; i++)
		rsv_sync(fd[i]);

	/* 3. Rates and memory. */
	{
		double ra, r1;
		long dring, dheap, rring, rheap, rring1, rheap1;
		int bad_a = 0, bad_1 = 0;

		ra = rate(qp, cq, t, true, mr, buf, &bad_a);
		r1 = rate(qp, cq, t, false, mr, buf, &bad_1);
		rsv_check(&o, "dc-rate", !bad_a && !bad_1 && ra > 0 && r1 > 0,
			  "%d WRITEs of 64 bytes (16 outstanding): alternating between 2 DCTs %.0f msg/s, one DCT %.0f msg/s (alternating/one %.2f); failed %d, %d",
			  NRATE, ra, r1, r1 > 0 ? ra / r1 : 0, bad_a, bad_1);
		printf("MEASURE dc-rate alternate=%.0f single=%.0f msg/s\n",
		       ra, r1);
		qp_memory(cq, true, 1, &dring, &dheap);
		qp_memory(cq, false, 1, &rring1, &rheap1);
		qp_memory(cq, false, NRC, &rring, &rheap);
		rsv_check(&o, "dc-memory", dring > 0 && rring > dring,
			  "one DCI (64 send WQEs, 4 SGEs): %ld ring bytes mapped + %ld provider heap bytes; one RC QP of the same send queue + 64 receive WQEs: %ld + %ld; %d RC QPs: %ld + %ld",
			  dring, dheap, rring1, rheap1, NRC, rring, rheap);
		printf("MEASURE dc-memory dci_ring=%ld dci_heap=%ld rc_ring=%ld rc_heap=%ld rc%d_ring=%ld rc%d_heap=%ld\n",
		       dring, dheap, rring1, rheap1, NRC, rring, NRC, rheap);
	}

	/* 4. The keys of VMs 2 and 3. */
	for (i = 0; i < 2; i++) {
		if (!rsv_xchg(fd[i], &me, &peer, sizeof(me)))
			rsv_die("key exchange with VM %d", i + 2);
		t[i].mkey = peer.extra[2];
		t[i].mkey_len = peer.extra[3];
	}
	for (i = 0; i < 2; i++) {
		uint32_t len = i ? ROWS * COLW : IND_LEN;
		uint32_t mlen = len < 600 ? len / 2 : 300;
		uint32_t moff = len / 2 - mlen / 2;
		long badoff;

		st = -3;
		badoff = 0;
		if (t[i].mkey) {
			rsv_fill(buf, len, 3000 + i);
			st = dc_do(qp, cq, OP_WRITE, &t[i], t[i].key,
				   t[i].mkey, 0, mr, buf, len, 200 + i);
			memset(rd, 0, len);
			if (!st)
				st = dc_do(qp, cq, OP_READ, &t[i], t[i].key,
					   t[i].mkey, 0, mr, rd, len, 210 + i);
			badoff = st ? 0 : rsv_verify(rd, len, 3000 + i);
			/* A READ across entries, from the middle. */
			if (!st && badoff < 0) {
				memset(rd, 0, mlen);
				st = dc_do(qp, cq, OP_READ, &t[i], t[i].key,
					   t[i].mkey, moff, mr, rd, mlen,
					   220 + i);
				if (!st && memcmp(rd, buf + moff, mlen))
					badoff = moff;
			}
		}
		rsv_check(&o, i ? "mkey-pattern-rw" : "mkey-indirect-rw",
			  !st && badoff < 0 && t[i].mkey_len == len,
			  "%s key %#x of VM %d (length %u): WRITE %u bytes at 0, READ back, READ %u bytes at %u: %s",
			  i ? "pattern" : "indirect", t[i].mkey, i + 2,
			  t[i].mkey_len, len, mlen, moff,
			  st == -3 ? "no key" : st > 0 ? ibv_wc_status_str(st) :
			  st ? "post failed or timeout" :
			  badoff >= 0 ? "data differ" : "verified");
		if (st > 0) {
			while (rsv_poll(cq, &wc, 200) == 1)
				;
			dci_up(qp);
		}
	}
	for (i = 0; i < 2; i++)
		rsv_sync(fd[i]);		/* written: check them */
	for (i = 0; i < 2; i++)
		rsv_sync(fd[i]);		/* VM 2 invalidated its key */
	st = t[0].mkey ? dc_do(qp, cq, OP_WRITE, &t[0], t[0].key, t[0].mkey,
			       0, mr, buf, 64, 300) : -3;
	rsv_check(&o, "mkey-inv-refused", st == IBV_WC_REM_ACCESS_ERR,
		  "WRITE through VM 2's invalidated key %#x: %s", t[0].mkey,
		  st > 0 ? ibv_wc_status_str(st) : st == 0 ? "success" :
		  st == -3 ? "no key" : "post failed or timeout");
	for (i = 0; i < 2; i++)
		rsv_sync(fd[i]);
	return 0;
}

/* Wait for an async event of type ev on qp; true if it came. */
static bool wait_event(struct ibv_qp *qp, enum ibv_event_type ev, char *what,
		       size_t wlen)
{
	struct pollfd p = { .fd = d.ctx->async_fd, .events = POLLIN };
	double end = now() + o.timeout;
	struct ibv_async_event e;

	fcntl(d.ctx->async_fd, F_SETFL,
	      fcntl(d.ctx->async_fd, F_GETFL) | O_NONBLOCK);
	snprintf(what, wlen, "no event within %d s", o.timeout);
	while (now() < end) {
		if (poll(&p, 1, 500) != 1)
			continue;
		if (ibv_get_async_event(d.ctx, &e))
			continue;
		snprintf(what, wlen, "%s on %s %u", ibv_event_type_str(e.event_type),
			 e.element.qp == qp ? "the DCT" : "QP",
			 e.element.qp ? e.element.qp->qp_num : 0);
		ibv_ack_async_event(&e);
		if (e.event_type == ev && e.element.qp == qp)
			return true;
	}
	return false;
}

static int dct_side(int fd, int vm)
{
	struct ibv_qp_init_attr_ex a = { 0 };
	struct rsdv_qp_init_attr dv = { 0 };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };
	struct rsv_peer_info me, peer;
	struct ibv_qp_attr qa = { 0 };
	struct ibv_cq *cq, *rcq;
	struct ibv_srq *srq;
	struct ibv_mr *mr, *rmr;
	struct ibv_qp *dct, *reg = NULL;
	struct ibv_wc wc;
	uint64_t key = KEY_BASE + vm;
	char *buf, *rbuf, what[128];
	int i, n, bad, err;
	long off;

	cq = ibv_create_cq(d.ctx, 128, NULL, NULL, 0);
	rcq = ibv_create_cq(d.ctx, 64, NULL, NULL, 0);
	srq = ibv_create_srq(d.pd, &sa);
	buf = aligned_alloc(4096, BUF);
	rbuf = aligned_alloc(4096, 64 * ROUNDS);
	memset(buf, 0, BUF);
	mr = ibv_reg_mr(d.pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	rmr = ibv_reg_mr(d.pd, rbuf, 64 * ROUNDS, IBV_ACCESS_LOCAL_WRITE);
	if (!cq || !rcq || !srq || !mr || !rmr)
		rsv_die("CQ/SRQ/MR: %s", strerror(errno));
	for (i = 0; i < ROUNDS; i++) {
		struct ibv_sge sge = { (uintptr_t)rbuf + i * 64, 64, rmr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *badwr;

		if (ibv_post_srq_recv(srq, &wr, &badwr))
			rsv_die("ibv_post_srq_recv: %s", strerror(errno));
	}

	a.qp_type = IBV_QPT_DRIVER;
	a.recv_cq = cq;
	a.srq = srq;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = d.pd;
	dv.comp_mask = RSDV_QP_INIT_ATTR_MASK_DC;
	dv.dc_init_attr.dc_type = RSDV_DCTYPE_DCT;
	dv.dc_init_attr.dct_access_key = key;
	dct = rsdv_create_qp(d.ctx, &a, &dv);
	err = dct ? 0 : errno;
	if (dct) {
		qa.qp_state = IBV_QPS_INIT;
		qa.port_num = 1;
		qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ;
		if (ibv_modify_qp(dct, &qa, IBV_QP_STATE | IBV_QP_PORT |
				  IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS))
			err = errno;
		qa.qp_state = IBV_QPS_RTR;
		qa.path_mtu = IBV_MTU_1024;
		qa.min_rnr_timer = 12;
		if (!err && ibv_modify_qp(dct, &qa, IBV_QP_STATE |
					  IBV_QP_PATH_MTU |
					  IBV_QP_MIN_RNR_TIMER))
			err = errno;
	}
	rsv_check(&o, "dc-dct-create", dct && !err, "DCT %u key %#llx: %s",
		  dct ? dct->qp_num : 0, (unsigned long long)key,
		  err ? strerror(err) : "RTR");
	if (!dct || err)
		return 1;
	{
		struct ibv_qp_init_attr ia;
		struct ibv_qp_attr q;

		err = ibv_query_qp(dct, &q, IBV_QP_STATE | IBV_QP_PATH_MTU |
				   IBV_QP_MIN_RNR_TIMER | IBV_QP_ACCESS_FLAGS,
				   &ia);
		rsv_check(&o, "dc-query", !err && q.qp_state == IBV_QPS_RTR &&
			  q.path_mtu == IBV_MTU_1024 && q.min_rnr_timer == 12 &&
			  (q.qp_access_flags & IBV_ACCESS_REMOTE_READ) &&
			  ia.qp_type == IBV_QPT_DRIVER,
			  "ibv_query_qp of the DCT: %s, state %d, path MTU %d, min RNR timer %u, access %#x, type %d",
			  err ? strerror(err) : "ok", q.qp_state, q.path_mtu,
			  q.min_rnr_timer, q.qp_access_flags, ia.qp_type);
	}
	rsv_info(&d, dct, 0, &me);
	me.addr = (uintptr_t)buf;
	me.rkey = mr->rkey;
	me.len = BUF;
	me.extra[0] = (uint32_t)key;
	me.extra[1] = key >> 32;
	me.extra[2] = vm;
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("exchange with VM 1");

	/* 1. The rounds of this VM. */
	bad = 0;
	what[0] = 0;
	for (n = 0; n < ROUNDS / 2; n++) {
		if (rsv_poll(cq, &wc, o.timeout * 1000) != 1) {
			snprintf(what, sizeof(what), "receive %d did not come", n);
			bad++;
			break;
		}
		i = wc.wc_flags & IBV_WC_WITH_IMM ? (int)ntohl(wc.imm_data) : -1;
		if (wc.status || i < 0 || i >= ROUNDS || i % 2 != vm - 2 ||
		    wc.byte_len != 64 || wc.qp_num != dct->qp_num ||
		    wc.src_qp != peer.qpn ||
		    rsv_verify(rbuf + wc.wr_id * 64, 64, 1000 + i) >= 0) {
			snprintf(what, sizeof(what),
				 "receive %d: %s imm %d len %u qp_num %u src_qp %u (DCI %u)",
				 n, ibv_wc_status_str(wc.status), i, wc.byte_len,
				 wc.qp_num, wc.src_qp, peer.qpn);
			bad++;
		}
	}
	rsv_check(&o, "dc-recv", !bad,
		  "%d SENDs with immediate from DCI %u on DCT %u: %s",
		  ROUNDS / 2, peer.qpn, dct->qp_num,
		  bad ? what : "immediates, bytes, qp_num and src_qp right");
	rsv_sync(fd);
	bad = 0;
	for (i = 0; i < ROUNDS; i++) {
		if (i % 2 == vm - 2)
			off = rsv_verify(buf + i * SLOT, SLOT, 2000 + i);
		else
			for (off = -1, n = 0; n < SLOT; n++)
				if (buf[i * SLOT + n])
					off = n;
		if (off >= 0)
			bad++;
	}
	rsv_check(&o, "dc-write-mem", !bad,
		  "its %d WRITEs landed, the other DCT's %d slots untouched: %d slots wrong",
		  ROUNDS / 2, ROUNDS / 2, bad);

	/* 2. The wrong key (VM 2's DCT). */
	if (vm == 2) {
		bool ok = wait_event(dct, IBV_EVENT_QP_ACCESS_ERR, what,
				     sizeof(what));

		rsv_check(&o, "dc-key-event", ok, "%s", what);
	}
	rsv_sync(fd);

	/* 4. This VM's key: VM 2 indirect over three MRs, VM 3 pattern. */
	{
		struct rsdv_mkey_init_attr ka = {
			.pd = d.pd,
			.create_flags = vm == 2 ? RSDV_MKEY_INIT_ATTR_FLAGS_INDIRECT :
						  RSDV_MKEY_INIT_ATTR_FLAGS_PATTERN,
			.max_entries = 4,
		};
		struct rsdv_mkey *mk = rsdv_create_mkey(&ka);
		char *m[3];
		struct ibv_mr *kmr[3];
		struct ibv_cq *kcq = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
		int st = -1, nm = vm == 2 ? 3 : 1;
		size_t msz = vm == 2 ? 4096 : ROWS * ROWB;
		uint32_t len = vm == 2 ? IND_LEN : ROWS * COLW;
		struct ibv_qp_ex *qpx;
		char *ref;

		reg = mk && kcq ? make_dci(kcq, 16) : NULL;
		err = !mk ? errno : !reg ? errno : dci_up(reg);
		for (i = 0; i < nm; i++) {
			m[i] = aligned_alloc(4096, msz);
			for (n = 0; n < (int)msz; n++)
				m[i][n] = (char)(0xe0 + i + n % 7);
			kmr[i] = ibv_reg_mr(d.pd, m[i], msz,
					    IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ);
			if (!kmr[i])
				rsv_die("ibv_reg_mr: %s", strerror(errno));
		}
		ref = malloc(msz * nm);
		for (i = 0; i < nm; i++)
			memcpy(ref + i * msz, m[i], msz);
		if (!err) {
			qpx = ibv_qp_to_qp_ex(reg);
			ibv_wr_start(qpx);
			qpx->wr_id = 1;
			qpx->wr_flags = IBV_SEND_SIGNALED;
			if (vm == 2) {
				struct ibv_sge sg[3];

				for (i = 0; i < 3; i++) {
					sg[i].addr = (uintptr_t)m[i] + ind[i].off;
					sg[i].length = ind[i].len;
					sg[i].lkey = kmr[i]->lkey;
				}
				rsdv_wr_mr_list(rsdv_qp_ex_from_ibv_qp_ex(qpx),
						mk, IBV_ACCESS_LOCAL_WRITE |
						IBV_ACCESS_REMOTE_WRITE |
						IBV_ACCESS_REMOTE_READ, 3, sg);
			} else {
				struct rsdv_mr_interleaved il = {
					.addr = (uintptr_t)m[0] + COL * COLW,
					.bytes_count = COLW,
					.bytes_skip = ROWB - COLW,
					.lkey = kmr[0]->lkey,
				};

				rsdv_wr_mr_interleaved(rsdv_qp_ex_from_ibv_qp_ex(qpx),
						       mk, IBV_ACCESS_LOCAL_WRITE |
						       IBV_ACCESS_REMOTE_WRITE |
						       IBV_ACCESS_REMOTE_READ,
						       ROWS, 1, &il);
			}
			err = ibv_wr_complete(qpx);
			if (!err)
				st = rsv_poll(kcq, &wc, o.timeout * 1000) == 1 ?
				     (int)wc.status : -2;
		}
		if (err || st)
			fprintf(stderr, "rsv-dc: %s key: %s %s\n",
				vm == 2 ? "indirect" : "pattern",
				err ? strerror(err) : "",
				st > 0 ? ibv_wc_status_str(st) : "");
		me.extra[2] = !err && !st ? mk->rkey : 0;
		me.extra[3] = len;
		if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
			rsv_die("key exchange with VM 1");
		rsv_sync(fd);		/* VM 1 wrote and read */
		if (vm == 2) {
			/* The stream of seed 3000 split over the three ranges. */
			char *want = malloc(IND_LEN);
			long pos = 0;

			rsv_fill(want, IND_LEN, 3000);
			for (i = 0; i < 3; i++) {
				memcpy(ref + i * msz + ind[i].off, want + pos,
				       ind[i].len);
				pos += ind[i].len;
			}
			for (bad = 0, i = 0; i < 3; i++)
				bad += !!memcmp(m[i], ref + i * msz, msz);
			rsv_check(&o, "mkey-indirect-mem", !me.extra[2] ? false :
				  !bad,
				  "key %#x over MRs %#x %#x %#x (%u+%u+%u bytes at offsets %u, %u, %u): %d MRs differ from the expected (ranges written, guard bytes unchanged)",
				  me.extra[2], kmr[0]->lkey, kmr[1]->lkey,
				  kmr[2]->lkey, ind[0].len, ind[1].len,
				  ind[2].len, ind[0].off, ind[1].off,
				  ind[2].off, bad);
			free(want);
		} else {
			char *want = malloc(len);
			int col_bad = 0, rest_bad = 0, r;

			rsv_fill(want, len, 3001);
			for (r = 0; r < ROWS; r++) {
				col_bad += !!memcmp(m[0] + r * ROWB + COL * COLW,
						    want + r * COLW, COLW);
				memcpy(ref + r * ROWB + COL * COLW,
				       want + r * COLW, COLW);
			}
			for (n = 0; n < (int)msz; n++)
				rest_bad += m[0][n] != ref[n];
			rsv_check(&o, "mkey-pattern-column",
				  me.extra[2] && !col_bad,
				  "key %#x: column %d (%d bytes every %d, %d rows): %d rows wrong",
				  me.extra[2], COL, COLW, ROWB, ROWS, col_bad);
			rsv_check(&o, "mkey-pattern-rest",
				  me.extra[2] && !col_bad && !rest_bad,
				  "the rest of the %d-byte matrix: %d bytes changed",
				  ROWS * ROWB, rest_bad);
			free(want);
		}
		/* VM 2 empties its key: VM 1's next WRITE is refused. */
		if (vm == 2 && me.extra[2]) {
			qpx = ibv_qp_to_qp_ex(reg);
			ibv_wr_start(qpx);
			qpx->wr_id = 2;
			qpx->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_local_inv(qpx, mk->lkey);
			if (ibv_wr_complete(qpx) ||
			    rsv_poll(kcq, &wc, o.timeout * 1000) != 1 ||
			    wc.status)
				fprintf(stderr, "rsv-dc: LOCAL_INV failed\n");
		}
		rsv_sync(fd);
		rsv_sync(fd);		/* VM 1 tried the invalidated key */
		if (reg)
			ibv_destroy_qp(reg);
		if (mk && rsdv_destroy_mkey(mk))
			fprintf(stderr, "rsv-dc: rsdv_destroy_mkey failed\n");
	}
	ibv_destroy_qp(dct);
	return 0;
}

int main(int argc, char **argv)
{
	struct rsdv_context dc = { 0 };
	int fd[2], nfd = 2, vm, err;

	rsv_parse(&o, argc, argv);
	vm = getenv("RS_VM_INDEX") ? atoi(getenv("RS_VM_INDEX")) : 1;
	if (getenv("RS_VM_COUNT") && atoi(getenv("RS_VM_COUNT")) != 3)
		rsv_die("three VMs: one DCI (VM 1), two DCTs");
	rsv_open(&o, &d);
	err = rsdv_is_supported(ibv_get_device_list(NULL)[0]) ?
	      rsdv_query_device(d.ctx, &dc) : EOPNOTSUPP;
	rsv_check(&o, "dc-caps", !err && (dc.flags & RSDV_CONTEXT_FLAGS_DC),
		  "rsdv_query_device: %s, flags %#llx, max_dc_contexts %u, dc_idle_us %u, max_mkey_entries %u, max_mkey_nest %u",
		  err ? strerror(err) : "ok", (unsigned long long)dc.flags,
		  dc.max_dc_contexts, dc.dc_idle_us, dc.max_mkey_entries,
		  dc.max_mkey_nest);
	if (!o.server) {
		oob_accept(nfd, fd);
		dci_side(fd);
	} else {
		fd[0] = rsv_oob(&o);
		dct_side(fd[0], vm);
	}
	return rsv_exit_status();
}
