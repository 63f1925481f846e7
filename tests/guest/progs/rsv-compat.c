/*
 * What programs written for ConnectX and soft-RoCE rely on, checked
 * against both kinds of peer: UCX sets every flow label to 0xffffffff,
 * reads a UD datagram's network header type from wc.sl and its
 * destination address from the GRH area, and waits for CQ events.
 *
 * VM 1 (the server) and the other VM each:
 *   flow-label-rc  an RC QP's path with flow label 0xffffffff: RTR taken
 *   flow-label-ah  ibv_create_ah with flow label 0xffffffff
 *   ud-recv        the other side's datagram through that AH arrived
 *   ud-grh         its GRH area as ConnectX lays it out for RoCEv2 over
 *                  IPv4: the IPv4 header in the last 20 bytes, from the
 *                  other side's address to ours
 *   ud-net-type    (own argument "adapter") wc.sl is ConnectX's RoCE
 *                  packet type for IPv4 (bits 0-2: 2)
 * and attributes both accept where a stricter reading would refuse:
 *   attr-rd-atomic   RTS with max_rd_atomic 128 (perftest asks for the
 *                    peer's max_qp_rd_atom; soft-RoCE's is 128)
 *   attr-srq-caps    a QP on an SRQ with receive queue sizes beyond the
 *                    device's (ignored with an SRQ)
 *   attr-srq-limit   an SRQ created with srq_limit above max_wr
 *   attr-inline-room a QP asked for no inline data reports the room its
 *                    work requests have (4 SGEs: at least 64 bytes)
 *   attr-mw-flush    (with "adapter") a type 2 window bound with
 *                    IBV_ACCESS_FLUSH_GLOBAL
 * VM 1 only, the receiver of an RC SEND, its send and receive CQs armed
 * on the same completion vector, each with its own channel:
 *   cq-event       the receive CQ's event came, and its completion with
 *                  it (a poll right after the event finds it)
 *   cq-event-only-fired  no event for the send CQ, which completed
 *                  nothing
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsv-common.h"

#define LEN     4096
#define UD_LEN  256
#define GRH     40
#define QKEY    0x11111111
#define FLOW    0xffffffffu

/* Wait up to ms for an event on ch: 1 with it taken and acked, else 0. */
static int wait_event(struct ibv_comp_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;

	if (poll(&p, 1, ms) != 1)
		return 0;
	if (ibv_get_cq_event(ch, &cq, &ctx))
		return 0;
	ibv_ack_cq_events(cq, 1);
	return 1;
}

static struct ibv_qp *ud_qp(struct rsv_dev *d, struct ibv_cq *scq,
			    struct ibv_cq *rcq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY,
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &ia);

	if (!qp)
		rsv_die("ibv_create_qp(UD): %s", strerror(errno));
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		rsv_die("UD QP to INIT failed");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		rsv_die("UD QP to RTR failed");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		rsv_die("UD QP to RTS failed");
	return qp;
}

/* The attribute checks of the header, on objects of their own. */
static void attrs(const struct rsv_opts *o, struct rsv_dev *d,
		  struct ibv_cq *cq, const struct rsv_peer_info *peer)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1,
						   .srq_limit = 100 } };
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 4 },
	};
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	int err;

	qp = ibv_create_qp(d->pd, &ia);
	if (!qp)
		rsv_die("ibv_create_qp: %s", strerror(errno));
	rsv_check(o, "attr-inline-room", ia.cap.max_inline_data >= 64,
		  "max_inline_data 0 asked, %u granted (4 SGEs: 64 bytes)",
		  ia.cap.max_inline_data);
	rsv_max_rd_atomic = 128;
	err = rsv_rc_connect(d, qp, 0, 0, peer);
	rsv_max_rd_atomic = 1;
	rsv_check(o, "attr-rd-atomic", !err, "RTS with max_rd_atomic 128: %s",
		  err ? strerror(err) : "taken");
	ibv_destroy_qp(qp);

	srq = ibv_create_srq(d->pd, &sa);
	rsv_check(o, "attr-srq-limit", srq != NULL,
		  "max_wr 16, srq_limit 100: %s", srq ? "created" :
		  strerror(errno));
	if (!srq)
		srq = ibv_create_srq(d->pd, &(struct ibv_srq_init_attr){
				     .attr = { .max_wr = 16, .max_sge = 1 } });
	if (!srq)
		rsv_die("ibv_create_srq: %s", strerror(errno));
	ia.srq = srq;
	ia.cap.max_recv_wr = 1u << 20;
	ia.cap.max_recv_sge = 64;
	qp = ibv_create_qp(d->pd, &ia);
	rsv_check(o, "attr-srq-caps", qp != NULL,
		  "with an SRQ, max_recv_wr 2^20, max_recv_sge 64: %s",
		  qp ? "created" : strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	ibv_destroy_srq(srq);
}

/* A type 2 window with FLUSH_GLOBAL among its rights, bound on qp. */
static void mw_flush(const struct rsv_opts *o, struct rsv_dev *d,
		     struct ibv_qp *qp, struct ibv_cq *cq, uint8_t *buf)
{
	struct ibv_mr *mr = ibv_reg_mr(d->pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_READ |
				       IBV_ACCESS_MW_BIND |
				       IBV_ACCESS_FLUSH_GLOBAL);
	struct ibv_mw *mw = ibv_alloc_mw(d->pd, IBV_MW_TYPE_2);
	struct ibv_send_wr wr = { .wr_id = 20, .opcode = IBV_WR_BIND_MW }, *bad;
	struct ibv_wc wc;
	int st = -1;

	if (!mr || !mw)
		rsv_die("ibv_reg_mr(FLUSH_GLOBAL) / ibv_alloc_mw failed");
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = mr, .addr = (uintptr_t)buf, .length = LEN,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_FLUSH_GLOBAL,
	};
	if (!ibv_post_send(qp, &wr, &bad) &&
	    rsv_poll(cq, &wc, o->timeout * 1000) == 1)
		st = wc.status;
	rsv_check(o, "attr-mw-flush", st == IBV_WC_SUCCESS,
		  "bind with REMOTE_READ | FLUSH_GLOBAL: %s",
		  st < 0 ? "no completion" : ibv_wc_status_str(st));
	if (st == IBV_WC_SUCCESS) {
		wr = (struct ibv_send_wr){ .wr_id = 21,
					   .opcode = IBV_WR_LOCAL_INV,
					   .send_flags = IBV_SEND_SIGNALED,
					   .invalidate_rkey = wr.bind_mw.rkey };
		if (!ibv_post_send(qp, &wr, &bad))
			rsv_poll(cq, &wc, o->timeout * 1000);
	}
	ibv_dealloc_mw(mw);
	ibv_dereg_mr(mr);
}

int main(int argc, char **argv)
{
	struct rsv_peer_info me = { 0 }, peer;
	struct ibv_comp_channel *rch, *sch;
	struct ibv_cq *rcq, *scq, *ucq, *ucs;
	struct ibv_qp *qp, *uqp;
	struct ibv_ah *ah = NULL;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct rsv_opts o;
	struct rsv_dev d;
	bool adapter = false;
	uint8_t *buf, *ubuf;
	long bad;
	int fd, err, st, i;

	rsv_parse(&o, argc, argv);
	for (i = 0; i < o.argc; i++)
		adapter |= !strcmp(o.argv[i], "adapter");
	rsv_open(&o, &d);
	fd = rsv_oob(&o);
	buf = aligned_alloc(4096, 2 * LEN);
	memset(buf, 0, 2 * LEN);
	ubuf = buf + LEN;
	mr = ibv_reg_mr(d.pd, buf, 2 * LEN, IBV_ACCESS_LOCAL_WRITE);
	rch = ibv_create_comp_channel(d.ctx);
	sch = ibv_create_comp_channel(d.ctx);
	if (!mr || !rch || !sch)
		rsv_die("ibv_reg_mr / ibv_create_comp_channel failed");
	/* Both on completion vector 0: one interrupt serves both. */
	rcq = ibv_create_cq(d.ctx, 16, NULL, rch, 0);
	scq = ibv_create_cq(d.ctx, 16, NULL, sch, 0);
	ucq = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
	ucs = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
	if (!rcq || !scq || !ucq || !ucs)
		rsv_die("ibv_create_cq failed");
	{
		struct ibv_qp_init_attr ia = {
			.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qp = ibv_create_qp(d.pd, &ia);
		if (!qp)
			rsv_die("ibv_create_qp(RC): %s", strerror(errno));
	}
	uqp = ud_qp(&d, ucs, ucq);
	rsv_info(&d, qp, 0x2000 + (o.server ? 0 : 1), &me);
	me.extra[0] = uqp->qp_num;
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");

	attrs(&o, &d, ucs, &peer);

	/* RC with the flow label UCX gives every RoCE address. */
	rsv_flow_label = FLOW;
	err = rsv_rc_connect(&d, qp, IBV_ACCESS_LOCAL_WRITE, me.psn, &peer);
	rsv_flow_label = 0;
	rsv_check(&o, "flow-label-rc", !err, "RTR with flow label 0x%x: %s",
		  FLOW, err ? strerror(err) : "taken");
	if (adapter && !err)
		mw_flush(&o, &d, qp, scq, buf);

	/* UD: an AH with that flow label, one datagram each way. */
	{
		struct ibv_ah_attr aa = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = peer.gid, .sgid_index = d.gid_index,
				 .hop_limit = 64, .flow_label = FLOW },
		};

		ah = ibv_create_ah(d.pd, &aa);
		rsv_check(&o, "flow-label-ah", ah != NULL,
			  "ibv_create_ah with flow label 0x%x: %s", FLOW,
			  ah ? "created" : strerror(errno));
	}
	{
		struct ibv_sge sge = { (uintptr_t)ubuf, GRH + UD_LEN, mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = &sge,
					   .num_sge = 1 }, *rbad;

		/* UCX marks the first byte: an IPv4 GRH area may leave it. */
		memset(ubuf, 0xff, GRH + UD_LEN);
		if (ibv_post_recv(uqp, &rwr, &rbad))
			rsv_die("ibv_post_recv(UD) failed");
	}
	if (!rsv_sync(fd))
		return rsv_exit_status();
	if (ah) {
		struct ibv_sge sge = { (uintptr_t)(buf + 2 * LEN - UD_LEN),
				       UD_LEN, mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 8, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND,
			.wr.ud = { .ah = ah, .remote_qpn = peer.extra[0],
				   .remote_qkey = QKEY },
		};

		rsv_fill(buf + 2 * LEN - UD_LEN, UD_LEN, o.server ? 11 : 12);
		st = rsv_post_wait(uqp, ucs, &wr, o.timeout * 1000);
		if (st)
			rsv_check(&o, "ud-recv", false, "UD send status %d", st);
	}
	st = rsv_poll(ucq, &wc, o.timeout * 1000);
	if (st == 1) {
		const uint8_t *ip = ubuf + 20;

		bad = wc.status ? -2 : rsv_verify(ubuf + GRH, UD_LEN,
						  o.server ? 12 : 11);
		rsv_check(&o, "ud-recv", !wc.status && bad < 0 &&
			  wc.byte_len == GRH + UD_LEN && (wc.wc_flags & IBV_WC_GRH),
			  "%s, %u bytes, GRH flag %d, first difference %ld",
			  ibv_wc_status_str(wc.status), wc.byte_len,
			  !!(wc.wc_flags & IBV_WC_GRH), bad);
		rsv_check(&o, "ud-grh", ip[0] == 0x45 && ip[9] == 17 &&
			  !memcmp(ip + 12, peer.gid.raw + 12, 4) &&
			  !memcmp(ip + 16, d.gid.raw + 12, 4),
			  "bytes 20-39: version/IHL 0x%02x protocol %u from %u.%u.%u.%u to %u.%u.%u.%u",
			  ip[0], ip[9], ip[12], ip[13], ip[14], ip[15],
			  ip[16], ip[17], ip[18], ip[19]);
		if (adapter)
			rsv_check(&o, "ud-net-type", (wc.sl & 7) == 2,
				  "wc.sl 0x%x (2 in bits 0-2: IPv4)", wc.sl);
	} else {
		rsv_check(&o, "ud-recv", false, "no datagram (%d)", st);
	}
	if (err || !rsv_sync(fd))
		return rsv_exit_status();

	/* Events: the server (VM 1) receives; both its CQs are armed. */
	if (!o.server) {
		struct ibv_sge sge = { (uintptr_t)buf, LEN, mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = &sge,
					   .num_sge = 1 }, *rbad;
		int ev, n;

		if (ibv_post_recv(qp, &rwr, &rbad) ||
		    ibv_req_notify_cq(rcq, 0) || ibv_req_notify_cq(scq, 0))
			rsv_die("ibv_post_recv / ibv_req_notify_cq failed");
		rsv_sync(fd);
		ev = wait_event(rch, o.timeout * 1000);
		n = ev ? ibv_poll_cq(rcq, 1, &wc) : 0;
		bad = n == 1 && !wc.status ? rsv_verify(buf, LEN, 13) : -2;
		rsv_check(&o, "cq-event", ev && n == 1 && bad < 0,
			  "event %d, then %d completion(s) (%s), first difference %ld",
			  ev, n, n == 1 ? ibv_wc_status_str(wc.status) : "-",
			  bad);
		ev = wait_event(sch, 500);
		rsv_check(&o, "cq-event-only-fired", !ev,
			  "%s for the send CQ, which completed nothing",
			  ev ? "an event" : "no event");
	} else {
		struct ibv_sge sge = { (uintptr_t)buf, LEN, mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 10, .sg_list = &sge,
					  .num_sge = 1, .opcode = IBV_WR_SEND };

		rsv_sync(fd);
		rsv_fill(buf, LEN, 13);
		st = rsv_post_wait(qp, scq, &wr, o.timeout * 1000);
		if (st)
			rsv_check(&o, "rc-send", false, "send status %d", st);
	}
	rsv_sync(fd);
	close(fd);
	if (ah)
		ibv_destroy_ah(ah);
	ibv_destroy_qp(uqp);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(ucq);
	ibv_destroy_cq(ucs);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	ibv_destroy_comp_channel(sch);
	ibv_destroy_comp_channel(rch);
	ibv_dereg_mr(mr);
	free(buf);
	rsv_close(&d);
	return rsv_exit_status();
}
