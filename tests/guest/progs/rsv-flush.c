/*
 * RDMA ATOMIC WRITE and RDMA FLUSH (IBTA 1.5) through rdma-core's extended
 * QP API (ibv_wr_atomic_write, ibv_wr_flush), each side in turn the
 * requester: the server first, then the client.  The requester
 * ATOMIC-WRITEs 8 bytes into the other side's MR, FLUSHes a range of it and
 * the whole MR to global visibility, and reads the 8 bytes back; the
 * responder then checks them in its own memory.  Last, on a QP pair of
 * its own, each requester FLUSHes an MR that lacks the FLUSH right and
 * must get a remote access error.
 *
 * Checks (both sides): flush-caps (the device reports FLUSH_GLOBAL and
 * ATOMIC_WRITE; the adapter not FLUSH_PERSISTENT), flush-connect,
 * atomic-write (completion and read back, requester), flush-range and
 * flush-mr (requester), atomic-write-peer (the 8 bytes in the responder's
 * memory), flush-no-right (requester).
 *
 * Linux soft-RoCE (6.12) computes the ICRC of a FLUSH over the transport
 * headers twice; an adapter that meets it needs x-rxe-flush-icrc=on
 * (tests/guest/verbs.py sets it for that pairing).
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsv-common.h"

#define LEN		8192
#define AW_OFF		0x100
#define RD_OFF		0x1000
#define QP_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_FLUSH_GLOBAL)

static struct ibv_qp *flush_qp(struct rsv_dev *d, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = d->pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_FLUSH |
				  IBV_QP_EX_WITH_ATOMIC_WRITE,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(d->ctx, &a);

	if (!qp)
		rsv_die("ibv_create_qp_ex with FLUSH and ATOMIC_WRITE failed");
	return qp;
}

/* The 8 bytes side `server` writes: different per side. */
static void aw_value(int server, uint8_t *v)
{
	int i;

	for (i = 0; i < 8; i++)
		v[i] = (uint8_t)(0xa0 + 0x11 * i + (server ? 0 : 5));
}

enum op { OP_AW, OP_FLUSH_RANGE, OP_FLUSH_MR, OP_READ };

/* Post one work request through the extended API and wait: the status,
 * -1 if it could not be posted, -2 on timeout; *opc the WC opcode. */
static int run(struct ibv_qp *qp, struct ibv_cq *cq, enum op op,
	       const struct rsv_peer_info *peer, uint32_t rkey, void *local,
	       uint32_t lkey, const uint8_t *value, int timeout_ms,
	       enum ibv_wc_opcode *opc)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);
	struct ibv_wc wc;
	int n;

	ibv_wr_start(qpx);
	qpx->wr_id = op;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	switch (op) {
	case OP_AW:
		ibv_wr_atomic_write(qpx, rkey, peer->addr + AW_OFF, value);
		break;
	case OP_FLUSH_RANGE:
		ibv_wr_flush(qpx, rkey, peer->addr, 4096, IBV_FLUSH_GLOBAL,
			     IBV_FLUSH_RANGE);
		break;
	case OP_FLUSH_MR:
		ibv_wr_flush(qpx, rkey, peer->addr, 0, IBV_FLUSH_GLOBAL,
			     IBV_FLUSH_MR);
		break;
	case OP_READ:
		ibv_wr_rdma_read(qpx, rkey, peer->addr + AW_OFF);
		ibv_wr_set_sge(qpx, lkey, (uintptr_t)local, 8);
		break;
	}
	if (ibv_wr_complete(qpx))
		return -1;
	n = rsv_poll(cq, &wc, timeout_ms);
	if (n != 1)
		return -2;
	if (wc.wr_id != (uint64_t)op)
		return -3;
	*opc = wc.opcode;
	return wc.status;
}

int main(int argc, char **argv)
{
	struct rsv_peer_info me = { 0 }, peer, neg;
	uint8_t mine[8], theirs[8];
	enum ibv_wc_opcode opc = 0, opc2 = 0;
	struct ibv_mr *mr, *plain;
	struct ibv_qp *qp, *qneg[2];
	struct rsv_opts o;
	struct rsv_dev d;
	struct ibv_cq *cq, *ncq;
	uint64_t cap;
	bool persistent, is_adapter;
	uint8_t *buf;
	int fd, err, st, st2, st3, phase, i;
	int tmo;

	rsv_parse(&o, argc, argv);
	rsv_open(&o, &d);
	tmo = o.timeout * 1000;
	cap = d.attr.device_cap_flags_ex;
	persistent = cap & IB_UVERBS_DEVICE_FLUSH_PERSISTENT;
	is_adapter = !strncmp(d.name, "rsess", 5);
	rsv_check(&o, "flush-caps",
		  (cap & IB_UVERBS_DEVICE_FLUSH_GLOBAL) &&
		  (cap & IB_UVERBS_DEVICE_ATOMIC_WRITE) &&
		  !(is_adapter && persistent),
		  "%s device_cap_flags_ex 0x%" PRIx64
		  ": FLUSH_GLOBAL %d FLUSH_PERSISTENT %d ATOMIC_WRITE %d",
		  d.name, cap, !!(cap & IB_UVERBS_DEVICE_FLUSH_GLOBAL),
		  persistent, !!(cap & IB_UVERBS_DEVICE_ATOMIC_WRITE));
	fd = rsv_oob(&o);
	buf = aligned_alloc(4096, 2 * LEN);
	memset(buf, 0, 2 * LEN);
	mr = ibv_reg_mr(d.pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_FLUSH_GLOBAL);
	plain = ibv_reg_mr(d.pd, buf + LEN, LEN, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	cq = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
	ncq = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
	if (!mr || !plain || !cq || !ncq)
		rsv_die("ibv_reg_mr (FLUSH_GLOBAL) / ibv_create_cq failed");
	qp = flush_qp(&d, cq);
	/* qneg[0]: this side's requester, qneg[1]: the other side's. */
	qneg[0] = flush_qp(&d, ncq);
	qneg[1] = flush_qp(&d, ncq);
	rsv_info(&d, qp, 0x2000 + (o.server ? 1 : 0), &me);
	me.addr = (uintptr_t)buf;
	me.rkey = mr->rkey;
	me.len = LEN;
	me.extra[0] = qneg[0]->qp_num;
	me.extra[1] = qneg[1]->qp_num;
	me.extra[2] = plain->rkey;
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");

	err = rsv_rc_connect(&d, qp, QP_ACCESS, me.psn, &peer);
	for (i = 0; i < 2 && !err; i++) {
		neg = peer;
		neg.qpn = peer.extra[!i];
		err = rsv_rc_connect(&d, qneg[i], QP_ACCESS, me.psn, &neg);
	}
	rsv_check(&o, "flush-connect", !err, "%s qpn %u to qpn %u: %s",
		  d.name, me.qpn, peer.qpn, err ? strerror(err) : "RTS");
	if (err || !rsv_sync(fd))
		return rsv_exit_status();

	aw_value(!o.server, mine);
	aw_value(!!o.server, theirs);
	/* Phase 0: the server (VM 1) is the requester; phase 1: the client. */
	for (phase = 0; phase < 2; phase++) {
		bool req = (phase == 0) == !o.server;

		if (req) {
			st = run(qp, cq, OP_AW, &peer, peer.rkey, NULL, 0,
				 mine, tmo, &opc);
			memset(buf + RD_OFF, 0, 8);
			st2 = st ? st : run(qp, cq, OP_READ, &peer, peer.rkey,
					    buf + RD_OFF, mr->lkey, NULL, tmo,
					    &opc2);
			rsv_check(&o, "atomic-write",
				  !st && opc == IBV_WC_ATOMIC_WRITE && !st2 &&
				  !memcmp(buf + RD_OFF, mine, 8),
				  "ATOMIC WRITE status %d opcode %d, read back status %d: %s",
				  st, opc, st2,
				  memcmp(buf + RD_OFF, mine, 8) ? "differs" : "same 8 bytes");
			st = run(qp, cq, OP_FLUSH_RANGE, &peer, peer.rkey,
				 NULL, 0, NULL, tmo, &opc);
			rsv_check(&o, "flush-range",
				  !st && opc == IBV_WC_FLUSH,
				  "FLUSH global, 4096-byte range: status %d (%s) opcode %d",
				  st, st >= 0 ? ibv_wc_status_str(st) : "-", opc);
			st = run(qp, cq, OP_FLUSH_MR, &peer, peer.rkey,
				 NULL, 0, NULL, tmo, &opc);
			rsv_check(&o, "flush-mr", !st && opc == IBV_WC_FLUSH,
				  "FLUSH global, whole MR: status %d (%s) opcode %d",
				  st, st >= 0 ? ibv_wc_status_str(st) : "-", opc);
			/* An MR without the FLUSH right: remote access error. */
			st3 = run(qneg[0], ncq, OP_FLUSH_RANGE, &peer,
				  peer.extra[2], NULL, 0, NULL, tmo, &opc);
			rsv_check(&o, "flush-no-right",
				  st3 == IBV_WC_REM_ACCESS_ERR,
				  "FLUSH of an MR without FLUSH_GLOBAL: status %d (%s)",
				  st3, st3 >= 0 ? ibv_wc_status_str(st3) : "-");
		}
		if (!rsv_sync(fd))
			break;
		if (!req)
			rsv_check(&o, "atomic-write-peer",
				  !memcmp(buf + AW_OFF, theirs, 8),
				  "the 8 bytes in this side's memory: %02x%02x%02x%02x%02x%02x%02x%02x",
				  buf[AW_OFF], buf[AW_OFF + 1], buf[AW_OFF + 2],
				  buf[AW_OFF + 3], buf[AW_OFF + 4], buf[AW_OFF + 5],
				  buf[AW_OFF + 6], buf[AW_OFF + 7]);
		if (!rsv_sync(fd))
			break;
	}
	close(fd);
	ibv_destroy_qp(qneg[0]);
	ibv_destroy_qp(qneg[1]);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(ncq);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(plain);
	ibv_dereg_mr(mr);
	free(buf);
	rsv_close(&d);
	return rsv_exit_status();
}
