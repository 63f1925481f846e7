/*
 * Verbs rules a conformance suite checks, and the resize and re-register
 * verbs, between two VMs:
 *
 *  - comp masks (both sides, local): every comp_mask bit of
 *    ibv_create_qp_ex, ibv_create_cq_ex, ibv_create_srq_ex and
 *    ibv_query_device_ex with its default value is accepted; values the
 *    device does not offer are refused.  XRC: a device that reports
 *    IBV_DEVICE_XRC creates an XRC_SEND QP and an XRC SRQ with a number
 *    (qp-ex-xrc, srq-ex-xrc); one that does not refuses them
 *    (qp-ex-xrc-refused, srq-ex-xrc-refused).
 *  - state rules (both sides): ibv_post_send, ibv_wr_complete and
 *    ibv_post_recv fail with EINVAL and post nothing in the states that
 *    take no work requests (sends before RTS, receives in RESET); the
 *    receive posted in INIT and the first send in RTS are the only work
 *    requests that complete (data checked); in ERR posts complete with
 *    flush errors.
 *  - CQ resize (server, the client streams SENDs into the server's SRQ):
 *    resizing below the unpolled completions fails with EINVAL, unpolled
 *    completions are carried over in order, and a stream of numbered
 *    messages arrives once each, in order, data checked, while the CQ is
 *    resized up and down.  SRQ resize (server, where the device reports
 *    IBV_DEVICE_SRQ_RESIZE): the same stream, the SRQ resized up and down
 *    too, takes its WQEs in the order posted; resizing below the WQEs
 *    waiting fails with EINVAL and loses none of them (16 more messages
 *    fill them, in order, data checked); MAX_WR with LIMIT together
 *    take both.
 *  - rereg_mr (server's MR, the client accesses it with the rkey it was
 *    given at set-up): after a change of access that adds remote write,
 *    of PD (there and back) and of translation the keys are the same and
 *    the client's write through them lands (data checked), while the
 *    MR's current rights, PD and range are enforced; a SEND into a
 *    receive posted in the range the translation left completes with
 *    Remote Operation Error at the client, then Flush, and the receive
 *    with Local Protection Error; pages pinned read-only get no write
 *    access without a new translation (EACCES); bad flags are refused.
 *
 * Checks (prefix -n): see the rsv_check calls; both sides print the local
 * ones, the server the resize and rereg ones.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsv-common.h"

#define MSG 64			/* stream message size */
#define NMSG 400		/* stream length */
/*
 * The SRQ bounds the completions the server's CQ can hold unpolled, so
 * every CQ size of the stream (>= SRQ_WR) is safe from overrun.
 */
#define SRQ_WR 16
#define RLEN 8192		/* rereg buffers */

static struct rsv_opts o;
static struct rsv_dev d;
static int fd;

static const char *err_str(int e)
{
	if (e < -1000)
		e = -e - 1000;
	return e ? strerror(e) : "success";
}

/* ------------------------------------------------------------------ */
/* Comp masks                                                         */
/* ------------------------------------------------------------------ */

static struct ibv_qp *qp_ex(struct ibv_cq *cq, enum ibv_qp_type t,
			    uint32_t mask, uint32_t create_flags)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = t,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | mask,
		.pd = d.pd,
		.create_flags = create_flags,
	};

	return ibv_create_qp_ex(d.ctx, &a);
}

static void comp_masks(void)
{
	static const enum ibv_qp_type types[] = {
		IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD
	};
	struct ibv_cq_init_attr_ex ca = { .cqe = 8,
		.wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_srq_init_attr_ex sa = { .attr = { .max_wr = 4,
		.max_sge = 1 } };
	struct ibv_query_device_ex_input qin = { 0 };
	struct ibv_device_attr_ex dattr;
	struct ibv_cq *cq = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
	struct ibv_cq_ex *cqx;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	char why[256] = "";
	size_t i;
	int ok, e, xrc;

	if (!cq)
		rsv_die("ibv_create_cq: %s", strerror(errno));

	ok = 1;
	for (i = 0; i < 3; i++) {
		qp = qp_ex(cq, types[i], IBV_QP_INIT_ATTR_CREATE_FLAGS, 0);
		if (!qp) {
			ok = 0;
			snprintf(why + strlen(why), sizeof(why) - strlen(why),
				 " type %d: %s", types[i], strerror(errno));
		} else {
			ibv_destroy_qp(qp);
		}
	}
	rsv_check(&o, "qp-ex-create-flags-0", ok,
		  "RC, UC, UD with CREATE_FLAGS and create_flags 0:%s",
		  ok ? " created" : why);

	errno = 0;
	qp = qp_ex(cq, IBV_QPT_RC, IBV_QP_INIT_ATTR_CREATE_FLAGS,
		   IBV_QP_CREATE_SCATTER_FCS);
	e = errno;
	rsv_check(&o, "qp-ex-create-flags-unsupported",
		  !qp && (e == EOPNOTSUPP || e == EINVAL),
		  "create_flags SCATTER_FCS: %s", qp ? "created" : strerror(e));
	if (qp)
		ibv_destroy_qp(qp);

	qp = qp_ex(cq, IBV_QPT_RC, IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
		   IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0);
	e = errno;
	rsv_check(&o, "qp-ex-defaults", qp != NULL,
		  "MAX_TSO_HEADER 0 and SEND_OPS_FLAGS 0: %s",
		  qp ? "created" : strerror(e));
	if (qp)
		ibv_destroy_qp(qp);

	/*
	 * XRC: a device that reports IBV_DEVICE_XRC (the adapter) creates
	 * an XRC_SEND QP (caps as for RC; the receive side it has not is
	 * ignored) and an XRC SRQ with a number; one that does not
	 * (soft-RoCE) refuses the QP with EOPNOTSUPP.  The suite expects
	 * the names each device should print.
	 */
	xrc = !!(d.attr.orig_attr.device_cap_flags & IBV_DEVICE_XRC);
	errno = 0;
	qp = qp_ex(cq, IBV_QPT_XRC_SEND, 0, 0);
	e = errno;
	if (xrc)
		rsv_check(&o, "qp-ex-xrc", qp && qp->qp_type == IBV_QPT_XRC_SEND &&
			  !qp->recv_cq,
			  "device reports XRC; XRC_SEND: %s", qp ? "created" :
			  strerror(e));
	else
		rsv_check(&o, "qp-ex-xrc-refused", !qp && e == EOPNOTSUPP,
			  "device does not report XRC; XRC_SEND: %s",
			  qp ? "created" : strerror(e));
	if (qp)
		ibv_destroy_qp(qp);

	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD;
	ca.flags = 0;
	ca.parent_domain = NULL;
	cqx = ibv_create_cq_ex(d.ctx, &ca);
	e = errno;
	rsv_check(&o, "cq-ex-defaults", cqx != NULL,
		  "FLAGS 0 and PD NULL: %s", cqx ? "created" : strerror(e));
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	ca.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	errno = 0;
	cqx = ibv_create_cq_ex(d.ctx, &ca);
	e = errno;
	rsv_check(&o, "cq-ex-unsupported", !cqx && e == EOPNOTSUPP,
		  "IGNORE_OVERRUN: %s", cqx ? "created" : strerror(e));
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));

	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_CQ;
	sa.srq_type = IBV_SRQT_BASIC;
	sa.pd = d.pd;
	sa.cq = NULL;
	srq = ibv_create_srq_ex(d.ctx, &sa);
	e = errno;
	rsv_check(&o, "srq-ex-defaults", srq != NULL,
		  "BASIC with CQ NULL: %s", srq ? "created" : strerror(e));
	if (srq)
		ibv_destroy_srq(srq);
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	sa.srq_type = IBV_SRQT_XRC;
	if (xrc) {
		struct ibv_xrcd_init_attr xa = {
			.comp_mask = IBV_XRCD_INIT_ATTR_FD |
				     IBV_XRCD_INIT_ATTR_OFLAGS,
			.fd = -1,
			.oflags = O_CREAT,
		};
		struct ibv_xrcd *xrcd = ibv_open_xrcd(d.ctx, &xa);
		int xe = errno;
		uint32_t num = 0;

		/* An XRC SRQ without its domain and CQ: EINVAL. */
		errno = 0;
		srq = ibv_create_srq_ex(d.ctx, &sa);
		ok = !srq && errno == EINVAL;
		if (srq)
			ibv_destroy_srq(srq);
		sa.comp_mask |= IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
		sa.xrcd = xrcd;
		sa.cq = cq;
		errno = 0;
		srq = xrcd ? ibv_create_srq_ex(d.ctx, &sa) : NULL;
		e = errno;
		if (srq && ibv_get_srq_num(srq, &num))
			num = 0;
		rsv_check(&o, "srq-ex-xrc", ok && srq && num > 0 && num < (1u << 24),
			  "without domain and CQ %s; XRC domain %s; XRC SRQ %s, number %u",
			  ok ? "refused" : "not refused",
			  xrcd ? "opened" : strerror(xe),
			  srq ? "created" : strerror(e), num);
		if (srq)
			ibv_destroy_srq(srq);
		if (xrcd)
			ibv_close_xrcd(xrcd);
	} else {
		errno = 0;
		srq = ibv_create_srq_ex(d.ctx, &sa);
		e = errno;
		rsv_check(&o, "srq-ex-xrc-refused", !srq && e == EOPNOTSUPP,
			  "XRC: %s", srq ? "created" : strerror(e));
		if (srq)
			ibv_destroy_srq(srq);
	}

	e = ibv_query_device_ex(d.ctx, &qin, &dattr);
	qin.comp_mask = 1;
	rsv_check(&o, "query-device-ex", !e &&
		  ibv_query_device_ex(d.ctx, &qin, &dattr) == EINVAL,
		  "comp_mask 0: %s; comp_mask 1 refused", err_str(e));
	ibv_destroy_cq(cq);
}

/* ------------------------------------------------------------------ */
/* State rules                                                        */
/* ------------------------------------------------------------------ */

static int to_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

/* post1()'s result as text: the errno, and whether *bad_wr was wrong. */
static const char *post_str(int e)
{
	static char b[4][96];
	static int i;

	i = (i + 1) % 4;
	snprintf(b[i], sizeof(b[i]), "%s%s", err_str(e),
		 e < -1000 ? " (bad_wr not set)" : "");
	return b[i];
}

/*
 * One SEND or receive of MSG bytes: 0, the errno, or -errno - 1000 when
 * the post failed without pointing *bad_wr at the work request.
 */
static int post1(struct ibv_qp *qp, uint64_t id, void *buf, uint32_t lkey,
		 bool recv)
{
	struct ibv_sge sge = { (uintptr_t)buf, MSG, lkey };
	struct ibv_send_wr swr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	struct ibv_recv_wr rwr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_send_wr *sbad = NULL;
	struct ibv_recv_wr *rbad = NULL;
	bool bad_wr_wrong;
	int e;

	if (recv) {
		e = ibv_post_recv(qp, &rwr, &rbad);
		bad_wr_wrong = e && rbad != &rwr;
	} else {
		e = ibv_post_send(qp, &swr, &sbad);
		bad_wr_wrong = e && sbad != &swr;
	}
	return bad_wr_wrong ? -e - 1000 : e;
}

static int wr_api_send(struct ibv_qp *qp, uint64_t id, void *buf,
		       uint32_t lkey)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);

	ibv_wr_start(qpx);
	qpx->wr_id = id;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, lkey, (uintptr_t)buf, MSG);
	return ibv_wr_complete(qpx);
}

static void state_rules(void)
{
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND,
		.pd = d.pd,
	};
	struct rsv_peer_info me = { 0 }, peer;
	int access = IBV_ACCESS_LOCAL_WRITE;
	struct ibv_qp_attr a = { 0 };
	struct ibv_wc wc[8];
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	int e1, e2, e3, n, got, st, i;
	char list[256] = "";
	bool flushed;

	buf = aligned_alloc(4096, 4096);
	memset(buf, 0, 4096);
	mr = ibv_reg_mr(d.pd, buf, 4096, access);
	cq = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
	if (!mr || !cq)
		rsv_die("ibv_reg_mr / ibv_create_cq failed");
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp_ex(d.ctx, &ia);
	if (!qp)
		rsv_die("ibv_create_qp_ex: %s", strerror(errno));

	/* RESET */
	rsv_fill(buf, MSG, 1);
	e1 = post1(qp, 1, buf, mr->lkey, false);
	e2 = post1(qp, 2, buf + 1024, mr->lkey, true);
	e3 = wr_api_send(qp, 3, buf, mr->lkey);
	rsv_check(&o, "state-reset", e1 == EINVAL && e2 == EINVAL &&
		  e3 == EINVAL,
		  "post_send %s, post_recv %s, wr_complete %s (EINVAL each)",
		  post_str(e1), post_str(e2), err_str(e3));

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		rsv_die("modify to INIT failed");
	e1 = post1(qp, 4, buf, mr->lkey, false);
	e3 = wr_api_send(qp, 5, buf, mr->lkey);
	e2 = post1(qp, 6, buf + 1024, mr->lkey, true);
	rsv_check(&o, "state-init", e1 == EINVAL && e3 == EINVAL && !e2,
		  "post_send %s, wr_complete %s (EINVAL each), post_recv %s",
		  post_str(e1), err_str(e3), post_str(e2));

	rsv_info(&d, qp, 0x2000, &me);
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");
	/* rsv_rc_connect goes through INIT again (allowed) to RTR, RTS. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = d.port_attr.active_mtu;
	a.dest_qp_num = peer.qpn;
	a.rq_psn = peer.psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer.gid;
	a.ah_attr.grh.sgid_index = d.gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		rsv_die("modify to RTR failed");
	e1 = post1(qp, 7, buf, mr->lkey, false);
	e3 = wr_api_send(qp, 8, buf, mr->lkey);
	rsv_check(&o, "state-rtr", e1 == EINVAL && e3 == EINVAL,
		  "post_send %s, wr_complete %s (EINVAL each)",
		  post_str(e1), err_str(e3));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = me.psn;
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		rsv_die("modify to RTS failed");
	if (!rsv_sync(fd))
		rsv_die("peer gone");

	/* RTS: one send each way; only it and the INIT receive complete. */
	rsv_fill(buf, MSG, o.server ? 21 : 22);
	e1 = post1(qp, 9, buf, mr->lkey, false);
	got = 0;
	st = 0;
	for (n = 0; n < 2 && e1 == 0;) {
		i = rsv_poll(cq, &wc[n], o.timeout * 1000);
		if (i <= 0)
			break;
		n++;
	}
	for (i = 0; i < n; i++) {
		if (wc[i].status)
			st = wc[i].status;
		else if (wc[i].wr_id == 9 && wc[i].opcode == IBV_WC_SEND)
			got |= 1;
		else if (wc[i].wr_id == 6 && wc[i].opcode == IBV_WC_RECV &&
			 wc[i].byte_len == MSG &&
			 rsv_verify(buf + 1024, MSG, o.server ? 22 : 21) < 0)
			got |= 2;
		else
			got |= 4;
	}
	usleep(200000);
	i = ibv_poll_cq(cq, 6, wc + 2);
	n += i > 0 ? i : 0;
	for (i = 0; i < n && i < 8; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
			 " %llu:%s", (unsigned long long)wc[i].wr_id,
			 wc[i].status ? ibv_wc_status_str(wc[i].status) :
			 wc[i].opcode == IBV_WC_RECV ? "recv" : "send");
	rsv_check(&o, "state-posted-nothing", e1 == 0 && got == 3 && n == 2 &&
		  !st,
		  "RTS send %s; completions (want 9:send and 6:recv, posted in INIT, with the peer's data):%s; flags %#x",
		  err_str(e1), list, got);
	if (!rsv_sync(fd))
		rsv_die("peer gone");

	/* ERR: posts are taken and complete with flush errors. */
	e3 = to_state(qp, IBV_QPS_ERR);
	e1 = post1(qp, 10, buf, mr->lkey, false);
	e2 = post1(qp, 11, buf + 1024, mr->lkey, true);
	flushed = true;
	list[0] = 0;
	for (i = 0; i < 2 && !e1 && !e2; i++) {
		if (rsv_poll(cq, &wc[0], o.timeout * 1000) != 1) {
			strcat(list, " (none)");
			flushed = false;
			break;
		}
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
			 " %llu:%s", (unsigned long long)wc[0].wr_id,
			 ibv_wc_status_str(wc[0].status));
		if (wc[0].status != IBV_WC_WR_FLUSH_ERR ||
		    (wc[0].wr_id != 10 && wc[0].wr_id != 11))
			flushed = false;
	}
	rsv_check(&o, "state-err-flush", !e3 && !e1 && !e2 && flushed,
		  "modify to ERR %s, post_send %s, post_recv %s; completions (want 10 and 11 flushed):%s",
		  err_str(e3), post_str(e1), post_str(e2), list);

	/* RESET again: the rings start over and posts are refused again. */
	e3 = to_state(qp, IBV_QPS_RESET);
	e1 = post1(qp, 12, buf, mr->lkey, false);
	e2 = post1(qp, 13, buf, mr->lkey, true);
	rsv_check(&o, "state-reset-again", !e3 && e1 == EINVAL && e2 == EINVAL,
		  "modify to RESET %s; post_send %s, post_recv %s",
		  err_str(e3), post_str(e1), post_str(e2));
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	free(buf);
}

/* ------------------------------------------------------------------ */
/* CQ and SRQ resize under a stream of SENDs                          */
/* ------------------------------------------------------------------ */

static int post_srq(struct ibv_srq *srq, struct ibv_mr *mr, uint8_t *bufs,
		    uint32_t slot)
{
	struct ibv_sge sge = { (uintptr_t)(bufs + slot * MSG), MSG, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/* Message i: its number, then a pattern of it. */
static void msg_fill(uint8_t *p, uint32_t i)
{
	memcpy(p, &i, 4);
	rsv_fill(p + 4, MSG - 4, 1000 + i);
}

static bool msg_ok(const uint8_t *p, uint32_t i)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v == i && rsv_verify(p + 4, MSG - 4, 1000 + i) < 0;
}

static void resize_server(void)
{
	static const int sizes[] = { 16, 255, 24, 1000, 17, 100, 33, 63 };
	/* Never below SRQ_WR: that many WQEs can be waiting. */
	static const uint32_t srq_sizes[] = { 64, 16, 200, 17, 40, 16, 256,
					      16, 33, 100, 16, 24, 128, 16,
					      20, 16 };
	struct rsv_peer_info me = { 0 }, peer;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = SRQ_WR,
						  .max_sge = 1 } };
	struct ibv_srq_attr sattr = { .max_wr = 2 * SRQ_WR };
	uint32_t next = 0, resizes = 0, srq_resizes = 0, bad_at = ~0u, slot;
	int srq_err = 0;
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t *bufs;
	int e, e2, i, r;
	bool srq_resize;
	struct ibv_device_attr da;

	bufs = aligned_alloc(4096, SRQ_WR * MSG);
	mr = ibv_reg_mr(d.pd, bufs, SRQ_WR * MSG, IBV_ACCESS_LOCAL_WRITE);
	cq = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
	srq = ibv_create_srq(d.pd, &sa);
	if (!mr || !cq || !srq)
		rsv_die("resize setup failed");
	if (ibv_query_device(d.ctx, &da))
		rsv_die("ibv_query_device failed");
	srq_resize = da.device_cap_flags & IBV_DEVICE_SRQ_RESIZE;
	for (slot = 0; slot < SRQ_WR; slot++)
		if (post_srq(srq, mr, bufs, slot))
			rsv_die("ibv_post_srq_recv failed");
	qp = rsv_rc_qp(&d, cq, srq, 8);
	rsv_info(&d, qp, 0x3000, &me);
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");
	e = rsv_rc_connect(&d, qp, IBV_ACCESS_LOCAL_WRITE, me.psn, &peer);
	if (e || !rsv_sync(fd))
		rsv_die("resize connect: %s", err_str(e));

	/* The client sends 8 messages and waits: they are unpolled here. */
	if (!rsv_sync(fd))
		rsv_die("peer gone");
	e = ibv_resize_cq(cq, 4);
	e2 = ibv_resize_cq(cq, 12);
	for (i = 0; i < 8; i++) {
		r = rsv_poll(cq, &wc, o.timeout * 1000);
		if (r != 1 || wc.status || wc.wr_id >= SRQ_WR ||
		    !msg_ok(bufs + wc.wr_id * MSG, next))
			break;
		if (post_srq(srq, mr, bufs, wc.wr_id))
			break;
		next++;
	}
	rsv_check(&o, "cq-resize-below-unpolled", e == EINVAL,
		  "resize to 4 with 8 completions unpolled: %s (EINVAL)",
		  err_str(e));
	rsv_check(&o, "cq-resize-carry", !e2 && next == 8 && cq->cqe >= 12,
		  "resize to 12: %s, cqe %d; %u of the 8 unpolled completions then polled in order, data checked",
		  err_str(e2), cq->cqe, next);
	if (!rsv_sync(fd))
		rsv_die("peer gone");

	/* The stream: resize every 25 completions, up and down. */
	while (next < NMSG) {
		r = rsv_poll(cq, &wc, o.timeout * 1000);
		/* Slots are reposted as they complete: WQE order is next's. */
		if (r != 1 || wc.status || wc.wr_id != next % SRQ_WR ||
		    !msg_ok(bufs + wc.wr_id * MSG, next)) {
			bad_at = next;
			break;
		}
		if (post_srq(srq, mr, bufs, wc.wr_id)) {
			bad_at = next;
			break;
		}
		next++;
		if (next % 25 == 0) {
			e = ibv_resize_cq(cq, sizes[resizes % 8]);
			if (e) {
				bad_at = next;
				break;
			}
			resizes++;
		}
		if (srq_resize && !srq_err && next % 25 == 12) {
			sattr.max_wr = srq_sizes[srq_resizes % 16];
			srq_err = ibv_modify_srq(srq, &sattr, IBV_SRQ_MAX_WR);
			if (!srq_err)
				srq_resizes++;
		}
	}
	rsv_check(&o, "cq-resize-traffic", next == NMSG && resizes == NMSG / 25,
		  "%u of %d messages arrived once, in order, data checked, across %u CQ resizes (stopped at %d: %s)",
		  next, NMSG, resizes, (int)bad_at,
		  r == 1 && wc.status ? ibv_wc_status_str(wc.status) :
		  err_str(e));
	usleep(200000);
	rsv_check(&o, "cq-resize-no-extra", ibv_poll_cq(cq, 1, &wc) == 0,
		  "no completion after the last message");
	rsv_check(&o, "srq-resize-traffic",
		  srq_resize && !srq_err && srq_resizes == NMSG / 25,
		  "IBV_DEVICE_SRQ_RESIZE %s; %u SRQ resizes during the stream (%s)",
		  srq_resize ? "set" : "clear", srq_resizes, err_str(srq_err));

	/* All SRQ_WR slots wait: a resize below them fails, losing none. */
	sattr.max_wr = SRQ_WR / 2;
	e = ibv_modify_srq(srq, &sattr, IBV_SRQ_MAX_WR);
	if (!rsv_sync(fd))
		rsv_die("peer gone");
	for (i = 0; i < SRQ_WR; i++) {
		r = rsv_poll(cq, &wc, o.timeout * 1000);
		if (r != 1 || wc.status || wc.wr_id != next % SRQ_WR ||
		    !msg_ok(bufs + wc.wr_id * MSG, next))
			break;
		if (post_srq(srq, mr, bufs, wc.wr_id))
			break;
		next++;
	}
	usleep(200000);
	rsv_check(&o, "srq-resize-below-waiting",
		  e == EINVAL && i == SRQ_WR && ibv_poll_cq(cq, 1, &wc) == 0,
		  "resize to %d with %d WQEs waiting: %s (EINVAL); then %d of %d messages into them, in order, data checked",
		  SRQ_WR / 2, SRQ_WR, err_str(e), i, SRQ_WR);

	/* MAX_WR and LIMIT together (a limit below the WQEs waiting). */
	{
		struct ibv_srq_attr q = { 0 };

		sattr.max_wr = 2 * SRQ_WR;
		sattr.srq_limit = SRQ_WR - 4;
		e = ibv_modify_srq(srq, &sattr, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT);
		e2 = ibv_query_srq(srq, &q);
		rsv_check(&o, "srq-resize-limit",
			  !e && !e2 && q.max_wr >= 2 * SRQ_WR &&
			  q.srq_limit == SRQ_WR - 4,
			  "MAX_WR %d with LIMIT %d: %s; query: %s, max_wr %u, srq_limit %u",
			  2 * SRQ_WR, SRQ_WR - 4, err_str(e), err_str(e2),
			  q.max_wr, q.srq_limit);
	}
	rsv_sync(fd);
	ibv_destroy_qp(qp);
	ibv_destroy_srq(srq);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	free(bufs);
}

static void resize_client(void)
{
	struct rsv_peer_info me = { 0 }, peer;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_sge sge;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t *buf;
	uint32_t i, done = 0;
	int e;

	/* 16 sends in flight at most; buffer slots are reused after 64. */
	buf = aligned_alloc(4096, 64 * MSG);
	mr = ibv_reg_mr(d.pd, buf, 64 * MSG, IBV_ACCESS_LOCAL_WRITE);
	cq = ibv_create_cq(d.ctx, 128, NULL, NULL, 0);
	if (!mr || !cq)
		rsv_die("resize setup failed");
	qp = rsv_rc_qp(&d, cq, NULL, 32);
	rsv_info(&d, qp, 0x3001, &me);
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");
	e = rsv_rc_connect(&d, qp, IBV_ACCESS_LOCAL_WRITE, me.psn, &peer);
	if (e || !rsv_sync(fd))
		rsv_die("resize connect: %s", err_str(e));

	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	for (i = 0; i < NMSG; i++) {
		uint8_t *p = buf + (i % 64) * MSG;

		while (i - done >= 16) {
			if (rsv_poll(cq, &wc, o.timeout * 1000) != 1 ||
			    wc.status)
				rsv_die("stream send %u failed", done);
			done++;
		}
		msg_fill(p, i);
		sge = (struct ibv_sge){ (uintptr_t)p, MSG, mr->lkey };
		wr.wr_id = i;
		if (ibv_post_send(qp, &wr, &bad))
			rsv_die("ibv_post_send %u failed", i);
		if (i == 7) {
			/* 8 unpolled at the server while it resizes. */
			while (done < 8) {
				if (rsv_poll(cq, &wc, o.timeout * 1000) != 1 ||
				    wc.status)
					rsv_die("send %u failed", done);
				done++;
			}
			if (!rsv_sync(fd) || !rsv_sync(fd))
				rsv_die("peer gone");
		}
	}
	while (done < NMSG) {
		if (rsv_poll(cq, &wc, o.timeout * 1000) != 1 || wc.status)
			rsv_die("stream send %u failed", done);
		done++;
	}
	/* After the server's refused SRQ resize: SRQ_WR more messages. */
	if (!rsv_sync(fd))
		rsv_die("peer gone");
	for (; i < NMSG + SRQ_WR; i++) {
		uint8_t *p = buf + (i % 64) * MSG;

		msg_fill(p, i);
		sge = (struct ibv_sge){ (uintptr_t)p, MSG, mr->lkey };
		wr.wr_id = i;
		if (ibv_post_send(qp, &wr, &bad))
			rsv_die("ibv_post_send %u failed", i);
	}
	while (done < NMSG + SRQ_WR) {
		if (rsv_poll(cq, &wc, o.timeout * 1000) != 1 || wc.status)
			rsv_die("stream send %u failed", done);
		done++;
	}
	rsv_check(&o, "stream-sent", true, "%d messages sent", NMSG + SRQ_WR);
	rsv_sync(fd);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	free(buf);
}

/* ------------------------------------------------------------------ */
/* rereg_mr                                                           */
/* ------------------------------------------------------------------ */

/* What the server asks the client to do through one fresh QP pair. */
struct probe_req {
	uint64_t addr;
	uint32_t rkey;
	uint32_t op;		/* IBV_WR_RDMA_WRITE / _READ / SEND */
	uint32_t seed;
	uint32_t stop;
};

/*
 * What the server does on its QP once it is connected, before the client
 * goes on: post a receive of 256 bytes at recv_addr through lkey, then
 * re-register mr as rereg_mr(flags, NULL, addr, RLEN, 0) says.
 */
struct probe_hook {
	struct ibv_mr *mr;
	uint64_t recv_addr;
	uint32_t lkey;
	int flags;
	void *addr;
	int rereg;		/* out: ibv_rereg_mr's result */
	int err;		/* out: its errno */
	int recv_st;		/* out: the receive's completion status */
};

/*
 * One access over a new QP pair (an access error moves both QPs to ERR,
 * so each probe gets its own): the server's QP in pd; the client does
 * req's operation and reports res[0] the completion status (for a READ,
 * res[1] whether the data matched seed); for SEND, two SENDs of 64 bytes
 * and res[] the status of each.
 */
static void probe_server_hook(struct ibv_pd *pd, const struct probe_req *req,
			      struct probe_hook *h, uint32_t res[2])
{
	struct rsv_peer_info me = { 0 }, peer;
	struct ibv_pd *keep = d.pd;
	struct ibv_cq *cq = ibv_create_cq(d.ctx, 4, NULL, NULL, 0);
	struct ibv_recv_wr rwr = { 0 }, *rbad;
	struct ibv_sge sge;
	struct ibv_qp *qp;
	struct probe_req scratch;
	int e;

	d.pd = pd;
	qp = rsv_rc_qp(&d, cq, NULL, 4);
	d.pd = keep;
	rsv_info(&d, qp, 0x4000, &me);
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)) ||
	    !rsv_xchg(fd, req, &scratch, sizeof(*req)))
		rsv_die("out-of-band exchange failed");
	e = rsv_rc_connect(&d, qp, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
			   me.psn, &peer);
	if (e)
		rsv_die("probe connect: %s", err_str(e));
	if (h) {
		sge = (struct ibv_sge){ h->recv_addr, 256, h->lkey };
		rwr.wr_id = 0x5ec;
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		if (ibv_post_recv(qp, &rwr, &rbad))
			rsv_die("probe receive: %s", strerror(errno));
		errno = 0;
		h->rereg = ibv_rereg_mr(h->mr, h->flags, NULL, h->addr,
					h->addr ? RLEN : 0, 0);
		h->err = errno;
	}
	if (!rsv_sync(fd))
		rsv_die("peer gone");
	if (!rsv_xchg(fd, res, res, 2 * sizeof(*res)))
		rsv_die("peer gone");
	if (h) {
		struct ibv_wc wc;

		/* Our receive: its own error completion (or none). */
		h->recv_st = rsv_poll(cq, &wc, o.timeout * 1000) == 1 ?
			 (int)wc.status : -2;
	}
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

static int probe_server(struct ibv_pd *pd, const struct probe_req *req,
			bool *data_ok)
{
	uint32_t res[2];

	probe_server_hook(pd, req, NULL, res);
	*data_ok = res[1];
	return res[0];
}

/* A write of seed through rkey at addr, from a QP of pd: its status. */
static int probe_write(struct ibv_pd *pd, void *addr, uint32_t rkey,
		       uint32_t seed)
{
	struct probe_req req = { (uintptr_t)addr, rkey, IBV_WR_RDMA_WRITE,
				 seed, 0 };
	bool ignored;

	return probe_server(pd, &req, &ignored);
}

static const char *wc_str(int st)
{
	return st >= 0 ? ibv_wc_status_str(st) : st == -1 ? "post failed" :
	       st == -2 ? "no completion" : "not run";
}

static bool probe_client(void)
{
	struct rsv_peer_info me = { 0 }, peer;
	struct ibv_send_wr wr[2] = { 0 }, *bad;
	struct probe_req req, scratch = { 0 };
	struct ibv_sge sge;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint32_t res[2], theirs[2];
	uint8_t *buf;
	int e, i;

	buf = aligned_alloc(4096, RLEN);
	mr = ibv_reg_mr(d.pd, buf, RLEN, IBV_ACCESS_LOCAL_WRITE);
	cq = ibv_create_cq(d.ctx, 4, NULL, NULL, 0);
	if (!mr || !cq)
		rsv_die("probe setup failed");
	qp = rsv_rc_qp(&d, cq, NULL, 4);
	rsv_info(&d, qp, 0x4001, &me);
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)) ||
	    !rsv_xchg(fd, &scratch, &req, sizeof(req)))
		rsv_die("out-of-band exchange failed");
	if (req.stop) {
		ibv_destroy_qp(qp);
		ibv_destroy_cq(cq);
		ibv_dereg_mr(mr);
		free(buf);
		return false;
	}
	e = rsv_rc_connect(&d, qp, IBV_ACCESS_LOCAL_WRITE, me.psn, &peer);
	if (e || !rsv_sync(fd))
		rsv_die("probe connect: %s", err_str(e));
	if (req.op == IBV_WR_RDMA_WRITE || req.op == IBV_WR_SEND)
		rsv_fill(buf, RLEN, req.seed);
	else
		memset(buf, 0, RLEN);
	sge = (struct ibv_sge){ (uintptr_t)buf, RLEN, mr->lkey };
	wr[0].sg_list = &sge;
	wr[0].num_sge = 1;
	wr[0].opcode = req.op;
	wr[0].wr.rdma.remote_addr = req.addr;
	wr[0].wr.rdma.rkey = req.rkey;
	if (req.op != IBV_WR_SEND) {
		/* An access error may take the retry timeout: wait long. */
		res[0] = rsv_post_wait(qp, cq, wr, o.timeout * 1000);
		res[1] = req.op == IBV_WR_RDMA_READ && !res[0] &&
			 rsv_verify(buf, RLEN, req.seed) < 0;
	} else {
		/* Two SENDs of 64 bytes: each completion's status in turn. */
		sge.length = 64;
		wr[0].wr_id = 1;
		wr[0].send_flags = IBV_SEND_SIGNALED;
		wr[1] = wr[0];
		wr[1].wr_id = 2;
		wr[0].next = &wr[1];
		res[0] = res[1] = (uint32_t)-1;
		if (!ibv_post_send(qp, wr, &bad))
			for (i = 0; i < 2; i++)
				res[i] = rsv_poll(cq, &wc, o.timeout * 1000) ==
					 1 ? wc.status : (uint32_t)-2;
	}
	if (!rsv_xchg(fd, res, theirs, sizeof(res)))
		rsv_die("peer gone");
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	free(buf);
	return true;
}

/* The keys are those the MR had at set-up. */
static bool same_keys(const struct ibv_mr *mr, uint32_t lkey, uint32_t rkey)
{
	return mr->lkey == lkey && mr->rkey == rkey;
}

/*
 * The server's MR is re-registered as ConnectX and soft-RoCE users do it,
 * and the client keeps using the rkey it was given at set-up: the keys
 * stay across a change of access, of PD and of translation (the adapter
 * changes the MR in place, docs/specs/rdma-session.rst "Re-registration"),
 * while the MR's rights, PD and range are enforced as they now are.
 */
static void rereg_server(void)
{
	int ro = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	int all = ro | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_pd *pd2 = ibv_alloc_pd(d.ctx);
	uint8_t *a = aligned_alloc(4096, RLEN), *b = aligned_alloc(4096, RLEN);
	uint8_t *c = aligned_alloc(4096, RLEN);
	struct probe_req req = { 0 };
	struct probe_hook h;
	struct rsv_peer_info none = { 0 }, ignored;
	uint32_t lkey, rkey, res[2];
	struct ibv_mr *mr, *mr2;
	bool read_ok = false;
	int e, err, st, st2;
	int64_t in_place = rsv_hw_counter(d.name, "mrs_reregistered_in_place");

	memset(a, 0, RLEN);
	memset(b, 0, RLEN);
	mr = ibv_reg_mr(d.pd, a, RLEN, ro);
	if (!mr || !pd2 || !c)
		rsv_die("rereg setup failed");
	/* What the client was given at set-up. */
	lkey = mr->lkey;
	rkey = mr->rkey;

	e = ibv_rereg_mr(mr, 0x80, NULL, NULL, 0, 0);
	st = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 0,
			  0);
	rsv_check(&o, "rereg-bad-input", e == IBV_REREG_MR_ERR_INPUT &&
		  st == IBV_REREG_MR_ERR_INPUT,
		  "flags 0x80: %d, translation without address: %d (IBV_REREG_MR_ERR_INPUT each)",
		  e, st);

	/* No remote write yet: the client's write is refused. */
	st = probe_write(d.pd, a, rkey, 10);
	rsv_check(&o, "rereg-before", st == IBV_WC_REM_ACCESS_ERR &&
		  rsv_verify(a, RLEN, 10) >= 0,
		  "write through rkey %#x of an MR without remote write: %s, buffer %s",
		  rkey, wc_str(st), rsv_verify(a, RLEN, 10) < 0 ? "written" :
		  "untouched");

	/* Access: remote write added, the set-up rkey writes. */
	e = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, all);
	st = e ? -3 : probe_write(d.pd, a, rkey, 11);
	rsv_check(&o, "rereg-access-add-write",
		  !e && same_keys(mr, lkey, rkey) && !st &&
		  rsv_verify(a, RLEN, 11) < 0,
		  "rereg %d: keys %#x/%#x -> %#x/%#x; write through the set-up rkey: %s, data %s",
		  e, lkey, rkey, mr->lkey, mr->rkey, wc_str(st),
		  rsv_verify(a, RLEN, 11) < 0 ? "ok" : "wrong");

	/* PD: to pd2, only its QPs may use the MR; then back. */
	e = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	st = e ? -3 : probe_write(pd2, a, rkey, 12);
	st2 = e ? -3 : probe_write(d.pd, a, rkey, 13);
	rsv_check(&o, "rereg-pd",
		  !e && same_keys(mr, lkey, rkey) && !st &&
		  st2 == IBV_WC_REM_ACCESS_ERR && rsv_verify(a, RLEN, 12) < 0,
		  "rereg %d: keys %#x/%#x -> %#x/%#x; set-up rkey from a QP of the new PD: %s, data %s; from a QP of the old PD: %s",
		  e, lkey, rkey, mr->lkey, mr->rkey, wc_str(st),
		  rsv_verify(a, RLEN, 12) < 0 ? "ok" : "wrong", wc_str(st2));
	e = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, d.pd, NULL, 0, 0);
	st = e ? -3 : probe_write(d.pd, a, rkey, 13);
	st2 = e ? -3 : probe_write(pd2, a, rkey, 14);
	rsv_check(&o, "rereg-pd-back",
		  !e && same_keys(mr, lkey, rkey) && !st &&
		  st2 == IBV_WC_REM_ACCESS_ERR && rsv_verify(a, RLEN, 13) < 0,
		  "rereg %d: keys %#x/%#x -> %#x/%#x; set-up rkey from a QP of the first PD again: %s, data %s; from a QP of the other: %s",
		  e, lkey, rkey, mr->lkey, mr->rkey, wc_str(st),
		  rsv_verify(a, RLEN, 13) < 0 ? "ok" : "wrong", wc_str(st2));

	/* Translation: the MR now covers b, under the same keys. */
	e = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b, RLEN, 0);
	st = e ? -3 : probe_write(d.pd, b, rkey, 15);
	st2 = e ? -3 : probe_write(d.pd, a, rkey, 16);
	rsv_check(&o, "rereg-translation",
		  !e && same_keys(mr, lkey, rkey) && !st &&
		  rsv_verify(b, RLEN, 15) < 0 &&
		  st2 == IBV_WC_REM_ACCESS_ERR && rsv_verify(a, RLEN, 13) < 0,
		  "rereg %d: keys %#x/%#x -> %#x/%#x; set-up rkey to the new buffer: %s, data %s; to the old one: %s, old buffer %s",
		  e, lkey, rkey, mr->lkey, mr->rkey, wc_str(st),
		  rsv_verify(b, RLEN, 15) < 0 ? "ok" : "wrong", wc_str(st2),
		  rsv_verify(a, RLEN, 13) < 0 ? "untouched" : "changed");

	/*
	 * A receive posted in b, then the MR moved back to a: the client's
	 * SEND lands nowhere.  IBTA 9.9.3: the responder's receive completes
	 * with a local protection error and it NAKs the SEND with a remote
	 * operation error, the requester's first error completion; the next
	 * SEND is flushed.
	 */
	h = (struct probe_hook){ mr, (uintptr_t)b + 512, mr->lkey,
				 IBV_REREG_MR_CHANGE_TRANSLATION, a, 0, 0, 0 };
	req = (struct probe_req){ 0, 0, IBV_WR_SEND, 17, 0 };
	probe_server_hook(d.pd, &req, &h, res);
	rsv_check(&o, "rereg-translation-posted-recv",
		  !h.rereg && same_keys(mr, lkey, rkey) &&
		  res[0] == IBV_WC_REM_OP_ERR &&
		  res[1] == IBV_WC_WR_FLUSH_ERR &&
		  h.recv_st == IBV_WC_LOC_PROT_ERR &&
		  rsv_verify(b, RLEN, 15) < 0,
		  "rereg %d with a receive posted in the old range: keys %#x/%#x -> %#x/%#x; the client's SENDs: %s, then %s; the receive: %s; old buffer %s",
		  h.rereg, lkey, rkey, mr->lkey, mr->rkey, wc_str(res[0]),
		  wc_str(res[1]), wc_str(h.recv_st),
		  rsv_verify(b, RLEN, 15) < 0 ? "untouched" : "changed");

	/* Access: read-only for the peer again. */
	e = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, ro);
	req = (struct probe_req){ (uintptr_t)a, rkey, IBV_WR_RDMA_READ, 13,
				  0 };
	st = e ? -3 : probe_server(d.pd, &req, &read_ok);
	st2 = e ? -3 : probe_write(d.pd, a, rkey, 18);
	rsv_check(&o, "rereg-access",
		  !e && same_keys(mr, lkey, rkey) && !st && read_ok &&
		  st2 == IBV_WC_REM_ACCESS_ERR && rsv_verify(a, RLEN, 13) < 0,
		  "rereg %d: keys %#x/%#x -> %#x/%#x; read through the set-up rkey: %s, data %s; write through it: %s, buffer %s",
		  e, lkey, rkey, mr->lkey, mr->rkey, wc_str(st),
		  read_ok ? "ok" : "wrong", wc_str(st2),
		  rsv_verify(a, RLEN, 13) < 0 ? "unchanged" : "changed");

	/*
	 * Pages pinned for reading only do not become writable by an access
	 * change alone: EACCES, as mlx5 and soft-RoCE (ib_umem_check_rereg);
	 * with a new translation of the same range they are pinned again.
	 */
	memset(c, 0, RLEN);
	mr2 = ibv_reg_mr(d.pd, c, RLEN, IBV_ACCESS_REMOTE_READ);
	if (!mr2)
		rsv_die("ibv_reg_mr: %s", strerror(errno));
	lkey = mr2->lkey;
	rkey = mr2->rkey;
	errno = 0;
	e = ibv_rereg_mr(mr2, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, all);
	err = errno;
	st = ibv_rereg_mr(mr2, IBV_REREG_MR_CHANGE_ACCESS |
			  IBV_REREG_MR_CHANGE_TRANSLATION, NULL, c, RLEN, all);
	st2 = st ? -3 : probe_write(d.pd, c, mr2->rkey, 19);
	rsv_check(&o, "rereg-access-pinned-read-only",
		  e == IBV_REREG_MR_ERR_CMD && err == EACCES && !st &&
		  same_keys(mr2, lkey, rkey) && !st2 &&
		  rsv_verify(c, RLEN, 19) < 0,
		  "write access for pages pinned read-only: %d (%s); with the translation again: %d, keys %#x/%#x -> %#x/%#x, write through the set-up rkey: %s, data %s",
		  e, strerror(err), st, lkey, rkey, mr2->lkey, mr2->rkey,
		  wc_str(st2), rsv_verify(c, RLEN, 19) < 0 ? "ok" : "wrong");

	/* Seven of the calls above were made in place (the driver's count). */
	st = (int)(rsv_hw_counter(d.name, "mrs_reregistered_in_place") -
		   in_place);
	rsv_check(&o, "rereg-in-place-count", in_place >= 0 && st == 7,
		  "mrs_reregistered_in_place: %lld before, +%d (7 expected)",
		  (long long)in_place, st);

	req.stop = 1;
	if (!rsv_xchg(fd, &none, &ignored, sizeof(none)) ||
	    !rsv_xchg(fd, &req, &req, sizeof(req)))
		rsv_die("peer gone");
	ibv_dereg_mr(mr2);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd2);
	free(a);
	free(b);
	free(c);
}

int main(int argc, char **argv)
{
	rsv_parse(&o, argc, argv);
	rsv_open(&o, &d);
	fd = rsv_oob(&o);

	comp_masks();
	state_rules();
	if (!rsv_sync(fd))
		rsv_die("peer gone");
	/* o.server set: this side is the client. */
	if (o.server) {
		resize_client();
		while (probe_client())
			;
	} else {
		resize_server();
		rereg_server();
	}
	rsv_sync(fd);
	close(fd);
	rsv_close(&d);
	return rsv_exit_status();
}
