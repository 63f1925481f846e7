/*
 * Memory windows between two VMs: one side (the owner) binds a window of
 * type 1 (ibv_bind_mw) or type 2 (IBV_WR_BIND_MW) to the middle of its
 * MR, the other (the user) RDMA-writes into it and reads from it through
 * the window's rkey; then the window is taken away (type 2: the user's
 * SEND with Invalidate; type 1: the owner's zero-length bind) and the
 * user's next WRITE through it must fail with a remote access error while
 * the owner's memory stays as it was.
 *
 * Own arguments (after "--"): TYPE OWNER, TYPE 1, 2 or 2ex (type 2 bound
 * with ibv_wr_bind_mw on a QP of the extended send API), OWNER "server" or
 * "client" (which side binds the window).  Checks, each NAME prefixed with
 * "tTYPE-vm1owns-" (the server is VM 1) or "tTYPE-vm2owns-":
 *   owner: bind, mr-busy (the MR cannot be deregistered while the window
 *          is bound), remote-write (the user's data in the window, nothing
 *          outside it), remote-inv (type 2: the receive reports the
 *          invalidated rkey) or unbind (type 1), memory-unchanged;
 *   user:  write-read (data checked both ways), send-inv (type 2),
 *          access-refused.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsv-common.h"

#define BUF	(16 * 1024)
#define WIN_OFF	4096		/* the window: [WIN_OFF, WIN_OFF + WIN_LEN) */
#define WIN_LEN	8192
#define HALF	(WIN_LEN / 2)

enum { SEED_GUARD = 3, SEED_READ = 5, SEED_WRITE = 7, SEED_LATE = 9 };

static struct rsv_opts o;
static char prefix[64];
static bool use_ex;		/* type 2 through ibv_wr_bind_mw */

static const char *nm(const char *check)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "%s%s", prefix, check);
	return buf;
}

/* The owner's buffer as it must be: guards around the window. */
static long owner_verify(const uint8_t *buf, bool written)
{
	long bad;

	bad = rsv_verify(buf, WIN_OFF, SEED_GUARD);
	if (bad >= 0)
		return bad;
	bad = rsv_verify(buf + WIN_OFF, HALF, written ? SEED_WRITE : SEED_GUARD);
	if (bad >= 0)
		return WIN_OFF + bad;
	bad = rsv_verify(buf + WIN_OFF + HALF, HALF, SEED_READ);
	if (bad >= 0)
		return WIN_OFF + HALF + bad;
	bad = rsv_verify(buf + WIN_OFF + WIN_LEN, BUF - WIN_OFF - WIN_LEN,
			 SEED_GUARD + 1);
	return bad >= 0 ? WIN_OFF + WIN_LEN + bad : -1;
}

static int mw_bind(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mw *mw,
		struct ibv_mr *mr, uint64_t addr, uint64_t len,
		uint32_t *rkey, struct ibv_wc *wc)
{
	struct ibv_mw_bind_info bi = {
		.mr = mr, .addr = addr, .length = len,
		/*
		 * LOCAL_WRITE too, as programs written for ConnectX and
		 * soft-RoCE pass it: both accept and ignore it.
		 */
		.mw_access_flags = len ? IBV_ACCESS_LOCAL_WRITE |
					 IBV_ACCESS_REMOTE_WRITE |
					 IBV_ACCESS_REMOTE_READ : 0,
	};
	int err;

	if (mw->type == IBV_MW_TYPE_1) {
		struct ibv_mw_bind mwb = {
			.wr_id = 1, .send_flags = IBV_SEND_SIGNALED,
			.bind_info = bi,
		};

		err = ibv_bind_mw(qp, mw, &mwb);
		if (err)
			return err;
		*rkey = mw->rkey;
	} else if (use_ex) {
		struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);

		*rkey = ibv_inc_rkey(mw->rkey);
		ibv_wr_start(qpx);
		qpx->wr_id = 2;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_bind_mw(qpx, mw, *rkey, &bi);
		err = ibv_wr_complete(qpx);
		if (err)
			return err;
		mw->rkey = *rkey;
	} else {
		struct ibv_send_wr wr = {
			.wr_id = 2, .opcode = IBV_WR_BIND_MW,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
		wr.bind_mw.bind_info = bi;
		err = ibv_post_send(qp, &wr, &bad);
		if (err)
			return err;
		*rkey = wr.bind_mw.rkey;
		mw->rkey = *rkey;
	}
	if (rsv_poll(cq, wc, o.timeout * 1000) != 1)
		return ETIMEDOUT;
	return 0;
}

/* The owner's RC QP, of the extended send API for ibv_wr_bind_mw. */
static struct ibv_qp *owner_qp(struct rsv_dev *d, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = 8,
			.max_recv_wr = 8,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = d->pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW,
	};
	struct ibv_qp *qp;

	if (!use_ex)
		return rsv_rc_qp(d, cq, NULL, 8);
	qp = ibv_create_qp_ex(d->ctx, &ia);
	if (!qp)
		rsv_die("ibv_create_qp_ex with IBV_QP_EX_WITH_BIND_MW: %s",
			strerror(errno));
	return qp;
}

static void owner(struct rsv_dev *d, int fd, int type)
{
	struct rsv_peer_info me = { 0 }, peer;
	struct ibv_recv_wr rwr = { 0 }, *rbad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr, *rmr;
	struct ibv_mw *mw;
	uint8_t *buf, *rbuf;
	uint32_t rkey = 0;
	long bad;
	int err;

	buf = aligned_alloc(4096, BUF);
	rbuf = aligned_alloc(4096, 4096);
	rsv_fill(buf, BUF, SEED_GUARD);
	rsv_fill(buf + WIN_OFF + HALF, HALF, SEED_READ);
	rsv_fill(buf + WIN_OFF + WIN_LEN, BUF - WIN_OFF - WIN_LEN,
		 SEED_GUARD + 1);
	mr = ibv_reg_mr(d->pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_MW_BIND);
	cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
	mw = ibv_alloc_mw(d->pd, type == 1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
	if (!mr || !cq || !mw)
		rsv_die("ibv_reg_mr / ibv_create_cq / ibv_alloc_mw failed: %s",
			strerror(errno));
	qp = owner_qp(d, cq);
	rsv_info(d, qp, 0x2000, &me);
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");
	err = rsv_rc_connect(d, qp, IBV_ACCESS_LOCAL_WRITE |
			     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
			     me.psn, &peer);
	if (err)
		rsv_die("connect: %s", strerror(err));
	rmr = ibv_reg_mr(d->pd, rbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!rmr)
		rsv_die("ibv_reg_mr (receive buffer) failed");
	sge = (struct ibv_sge){ (uintptr_t)rbuf, 4096, rmr->lkey };
	rwr.wr_id = 3;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	if (ibv_post_recv(qp, &rwr, &rbad))
		rsv_die("ibv_post_recv failed");

	err = mw_bind(qp, cq, mw, mr, (uintptr_t)buf + WIN_OFF, WIN_LEN, &rkey,
		      &wc);
	rsv_check(&o, nm("bind"), !err && wc.status == IBV_WC_SUCCESS &&
		  wc.opcode == IBV_WC_BIND_MW,
		  "type %d window over %d bytes of the MR: %s, %s, opcode %d, rkey 0x%x",
		  type, WIN_LEN, strerror(err), err ? "-" :
		  ibv_wc_status_str(wc.status), err ? -1 : (int)wc.opcode,
		  rkey);
	err = ibv_dereg_mr(mr);
	rsv_check(&o, nm("mr-busy"), err != 0,
		  "ibv_dereg_mr while the window is bound: %s", strerror(err));

	me.addr = (uintptr_t)buf + WIN_OFF;
	me.rkey = rkey;
	me.len = WIN_LEN;
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)) || !rsv_sync(fd))
		rsv_die("out-of-band exchange failed");
	/* The user writes and reads. */
	if (!rsv_sync(fd))
		rsv_die("the user is gone");
	bad = owner_verify(buf, true);
	rsv_check(&o, nm("remote-write"), bad < 0,
		  "%d bytes written through the window, the rest untouched: first difference %ld",
		  HALF, bad);

	if (type == 2) {
		int st = rsv_poll(cq, &wc, o.timeout * 1000);
		unsigned int inv = IBV_WC_WITH_INV;

		/*
		 * Soft-RoCE puts the kernel's IB_WC_WITH_INVALIDATE (1 << 2)
		 * into a user CQE, which libibverbs reads as
		 * IBV_WC_IP_CSUM_OK: accept that bit from it, and say so.
		 */
		if (!strncmp(d->name, "rxe", 3))
			inv = IBV_WC_IP_CSUM_OK;
		rsv_check(&o, nm("remote-inv"), st == 1 &&
			  wc.status == IBV_WC_SUCCESS && (wc.wc_flags & inv) &&
			  wc.invalidated_rkey == rkey,
			  "receive %s, flags 0x%x (%s), invalidated rkey 0x%x (window 0x%x)",
			  st == 1 ? ibv_wc_status_str(wc.status) : "timed out",
			  st == 1 ? wc.wc_flags : 0,
			  inv == IBV_WC_WITH_INV ? "IBV_WC_WITH_INV expected" :
			  "soft-RoCE: IB_WC_WITH_INVALIDATE in the kernel's bit 2",
			  st == 1 ? wc.invalidated_rkey : 0, rkey);
	} else {
		err = mw_bind(qp, cq, mw, mr, 0, 0, &rkey, &wc);
		rsv_check(&o, nm("unbind"), !err &&
			  wc.status == IBV_WC_SUCCESS &&
			  wc.opcode == IBV_WC_BIND_MW,
			  "zero-length bind: %s, %s", strerror(err),
			  err ? "-" : ibv_wc_status_str(wc.status));
	}
	if (!rsv_sync(fd))
		rsv_die("the user is gone");
	/* The user tries again. */
	if (!rsv_sync(fd))
		rsv_die("the user is gone");
	bad = owner_verify(buf, true);
	rsv_check(&o, nm("memory-unchanged"), bad < 0,
		  "after the refused WRITE: first difference %ld", bad);

	ibv_destroy_qp(qp);
	ibv_dealloc_mw(mw);
	ibv_dereg_mr(mr);
	ibv_dereg_mr(rmr);
	ibv_destroy_cq(cq);
	free(rbuf);
	free(buf);
}

static void user(struct rsv_dev *d, int fd, int type)
{
	struct rsv_peer_info me = { 0 }, peer;
	struct ibv_send_wr wr = { 0 };
	struct ibv_sge sge;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	long bad;
	int err, st;

	buf = aligned_alloc(4096, BUF);
	memset(buf, 0, BUF);
	mr = ibv_reg_mr(d->pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
	if (!mr || !cq)
		rsv_die("ibv_reg_mr / ibv_create_cq failed");
	qp = rsv_rc_qp(d, cq, NULL, 8);
	rsv_info(d, qp, 0x3000, &me);
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");
	err = rsv_rc_connect(d, qp, IBV_ACCESS_LOCAL_WRITE, me.psn, &peer);
	if (err)
		rsv_die("connect: %s", strerror(err));
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)) || !rsv_sync(fd))
		rsv_die("out-of-band exchange failed");

	rsv_fill(buf, HALF, SEED_WRITE);
	sge = (struct ibv_sge){ (uintptr_t)buf, HALF, mr->lkey };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = peer.addr;
	wr.wr.rdma.rkey = peer.rkey;
	st = rsv_post_wait(qp, cq, &wr, o.timeout * 1000);
	sge.addr = (uintptr_t)buf + HALF;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = peer.addr + HALF;
	if (!st)
		st = rsv_post_wait(qp, cq, &wr, o.timeout * 1000);
	bad = st ? -2 : rsv_verify(buf + HALF, HALF, SEED_READ);
	rsv_check(&o, nm("write-read"), !st && bad < 0,
		  "%d bytes written and %d read through rkey 0x%x: status %d, first difference %ld",
		  HALF, HALF, peer.rkey, st, bad);
	if (!rsv_sync(fd))
		rsv_die("the owner is gone");

	if (type == 2) {
		memset(&wr, 0, sizeof(wr));
		sge = (struct ibv_sge){ (uintptr_t)buf, 64, mr->lkey };
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.invalidate_rkey = peer.rkey;
		st = rsv_post_wait(qp, cq, &wr, o.timeout * 1000);
		rsv_check(&o, nm("send-inv"), st == 0,
			  "SEND with Invalidate of 0x%x: status %d", peer.rkey,
			  st);
	}
	if (!rsv_sync(fd))
		rsv_die("the owner is gone");

	rsv_fill(buf, HALF, SEED_LATE);
	memset(&wr, 0, sizeof(wr));
	sge = (struct ibv_sge){ (uintptr_t)buf, HALF, mr->lkey };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = peer.addr;
	wr.wr.rdma.rkey = peer.rkey;
	st = rsv_post_wait(qp, cq, &wr, o.timeout * 1000);
	rsv_check(&o, nm("access-refused"), st == IBV_WC_REM_ACCESS_ERR,
		  "WRITE through the window afterwards: %s",
		  st >= 0 ? ibv_wc_status_str(st) : "not completed");
	rsv_sync(fd);

	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	free(buf);
}

int main(int argc, char **argv)
{
	bool owner_is_server;
	struct rsv_dev d;
	int fd, type;

	rsv_parse(&o, argc, argv);
	if (o.argc != 2 || (strcmp(o.argv[0], "1") && strcmp(o.argv[0], "2") &&
			    strcmp(o.argv[0], "2ex")) ||
	    (strcmp(o.argv[1], "server") && strcmp(o.argv[1], "client")))
		rsv_die("usage: rsv-mw [options] -- 1|2|2ex server|client");
	type = atoi(o.argv[0]);
	use_ex = !strcmp(o.argv[0], "2ex");
	owner_is_server = !strcmp(o.argv[1], "server");
	snprintf(prefix, sizeof(prefix), "t%s-vm%downs-", o.argv[0],
		 owner_is_server ? 1 : 2);
	rsv_open(&o, &d);
	fd = rsv_oob(&o);
	if (!o.server == owner_is_server)
		owner(&d, fd, type);
	else
		user(&d, fd, type);
	close(fd);
	rsv_close(&d);
	return rsv_exit_status();
}
