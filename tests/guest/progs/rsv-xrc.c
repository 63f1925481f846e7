/*
 * XRC between two VMs, as MPI uses it: one XRC_SEND QP on the sending
 * node reaches several processes of the receiving node through one XRC
 * target QP that they share.
 *
 *  - VM 1 ("send", the server of the TCP exchange): one XRC_SEND QP,
 *    connected to the target QP.  It sends 8 messages alternately to
 *    process A's and process B's XRC SRQ, half with ibv_post_send
 *    (wr.qp_type.xrc.remote_srqn), half with ibv_wr_* and
 *    ibv_wr_set_xrc_srqn; SEND and SEND_WITH_IMM, 1 to 10000 bytes
 *    (several packets at the port's active MTU, 10 at 1024).  Then an RDMA WRITE (ibv_wr_*)
 *    and an RDMA READ (ibv_post_send) through the target into an MR of
 *    A, registered on the PD of A's SRQ, data checked both ways.  Last,
 *    as it breaks the connection: a SEND naming an XRC SRQ of another XRC
 *    domain must complete with IBV_WC_REM_INV_REQ_ERR.
 *  - VM 2, process A ("recv-a", the TCP client): opens the XRC domain
 *    through a file (ibv_open_xrcd with O_CREAT, as MPI shares it between
 *    the processes of a node), creates the XRC_RECV QP and connects it,
 *    and has its own XRC SRQ and CQ.
 *  - VM 2, process B ("recv-b"): opens the same domain through the same
 *    file and the target QP by its number (ibv_open_qp), with its own
 *    XRC SRQ and CQ; and a second domain with an SRQ of its own, the
 *    one the bad SEND names: nothing may arrive there.
 *    A and B talk through a Unix socket: A gives the target QP's number,
 *    B its SRQ numbers.
 *  Each SRQ holds 2 WQEs and is posted to again after every completion,
 *  so the provider must count the XRC SRQ's completions (they carry the
 *  SRQ's number and the target QP's) to free its slots.  Every receive
 *  is checked: status, opcode, length, every byte, immediate data, and
 *  wc.qp_num, which must be the target QP's number.
 *
 * Usage: rsv-xrc [common options] -- send
 *        rsv-xrc [common options] -c VM1 -- recv-a DOMAIN_FILE SOCKET
 *        rsv-xrc [common options] -- recv-b DOMAIN_FILE SOCKET
 *  Posting to a queue an XRC QP does not have fails with EINVAL in the
 *  provider and is refused by the kernel's uverbs commands.
 *
 * Checks (prefix -n): send: xrc-post-refused, xrc-connect, xrc-send,
 * xrc-write-read, xrc-other-domain; recv-a: xrc-tgt-post-refused,
 * xrc-tgt-connect, xrc-recv-a, xrc-write-mem; recv-b: xrc-open-qp,
 * xrc-recv-b, xrc-other-domain-nothing.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rsv-common.h"

#define NMSG 8
#define MAXLEN 10000		/* several packets at any path MTU */
#define SLOT 10240		/* bytes per send or receive buffer */
#define SRQ_WR 2		/* WQEs per XRC SRQ: reposted as they complete */
#define MEMLEN 10000		/* A's MR, written and read through XRC */
#define MEM_SEED 200
#define IMM(i) (0x5a000000u + (i))

/* The messages, in the order sent: to A (0) or B (1). */
static const struct {
	int to;
	uint32_t len;
	bool imm;
	bool wr_api;		/* ibv_wr_* (else ibv_post_send) */
} msgs[NMSG] = {
	{ 0, MAXLEN, false, false },
	{ 1, MAXLEN, true, false },
	{ 0, 3000, true, true },
	{ 1, 64, false, true },
	{ 0, 1, false, false },
	{ 1, MAXLEN, false, false },
	{ 0, MAXLEN, true, true },
	{ 1, 2048, true, true },
};

static struct rsv_opts o;
static struct rsv_dev d;

/*
 * libibverbs' private (IBVERBS_PRIVATE_34) entry points of the uverbs
 * POST_SEND and POST_RECV commands, which providers may fall back on:
 * work requests for the kernel driver.  uverbs refuses both
 * (EOPNOTSUPP: the driver does not enable them in its uverbs_cmd_mask);
 * were they enabled, the driver refuses them for XRC QPs (EINVAL: a
 * target QP has no queues, though it looks like a kernel QP to the
 * driver, as ib_core creates it without user data).  Anything else,
 * or a kernel oops (dmesg-clean), is a failure.
 */
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);

/*
 * What posting to an XRC QP without the queue gives, through the
 * provider and through the kernel: 4 errnos into e[].
 */
static bool kernel_refused(int e)
{
	return e == EOPNOTSUPP || e == EINVAL;
}

static void post_refused(struct ibv_qp *qp, bool send, int e[4])
{
	static uint8_t b[64];
	struct ibv_sge sge = { (uintptr_t)b, sizeof(b), 0 };
	struct ibv_send_wr swr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND }, *sbad;
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 },
		*rbad;

	e[0] = send ? ibv_post_send(qp, &swr, &sbad) : 0;
	e[1] = ibv_post_recv(qp, &rwr, &rbad);
	e[2] = send ? ibv_cmd_post_send(qp, &swr, &sbad) : 0;
	e[3] = ibv_cmd_post_recv(qp, &rwr, &rbad);
}

static uint32_t seed_of(int i)
{
	return 100 + i;
}

/* ------------------------------------------------------------------ */
/* The Unix socket between A and B                                    */
/* ------------------------------------------------------------------ */

static int unix_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(fd, 1))
		rsv_die("listen on %s: %s", path, strerror(errno));
	return fd;
}

static int unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	time_t end = time(NULL) + o.timeout;
	int fd;

	strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return fd;
		if (fd >= 0)
			close(fd);
		if (time(NULL) >= end)
			rsv_die("cannot connect to %s within %d s", path,
				o.timeout);
		usleep(100000);
	}
}

/* Exchange of fixed-size records (rsv_xchg), both ways. */
struct ab_msg {
	uint32_t tag;
	uint32_t val[3];
};

enum { AB_TGT = 1, AB_SRQS, AB_BAD_SENT, AB_DONE };

static void ab_xchg(int fd, uint32_t tag, uint32_t v0, uint32_t v1,
		    uint32_t v2, struct ab_msg *in)
{
	struct ab_msg out = { tag, { v0, v1, v2 } };

	if (!rsv_xchg(fd, &out, in, sizeof(out)) || in->tag != tag)
		rsv_die("A/B exchange (step %u) failed", tag);
}

/* ------------------------------------------------------------------ */
/* Receiving processes                                                */
/* ------------------------------------------------------------------ */

static struct ibv_xrcd *open_domain(const char *file)
{
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.oflags = O_CREAT,
	};
	struct ibv_xrcd *xrcd;

	if (file) {
		xa.fd = open(file, O_RDONLY | O_CREAT, 0600);
		if (xa.fd < 0)
			rsv_die("open %s: %s", file, strerror(errno));
	} else {
		xa.fd = -1;	/* a domain of its own */
	}
	xrcd = ibv_open_xrcd(d.ctx, &xa);
	if (!xrcd)
		rsv_die("ibv_open_xrcd %s: %s", file ? file : "(no file)",
			strerror(errno));
	return xrcd;
}

/* A process's XRC SRQ: its CQ, its receive buffers (one MR on d.pd). */
struct rx {
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	uint32_t srqn;
	uint8_t *buf;
	struct ibv_mr *mr;
	uint64_t posted;	/* wr_id of the next WQE */
	int post_err;
};

static void rx_post(struct rx *r)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(r->buf + (r->posted % SRQ_WR) * SLOT),
		.length = SLOT,
		.lkey = r->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = r->posted, .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	int err;

	/* The slot's old data is gone: a stale match cannot pass. */
	memset((void *)(uintptr_t)sge.addr, 0xee, SLOT);
	err = ibv_post_srq_recv(r->srq, &wr, &bad);
	if (err && !r->post_err)
		r->post_err = err;
	if (!err)
		r->posted++;
}

static void rx_create(struct rx *r, struct ibv_xrcd *xrcd)
{
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = SRQ_WR, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = d.pd,
		.xrcd = xrcd,
	};
	int i;

	memset(r, 0, sizeof(*r));
	r->cq = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
	if (!r->cq)
		rsv_die("ibv_create_cq: %s", strerror(errno));
	sa.cq = r->cq;
	r->srq = ibv_create_srq_ex(d.ctx, &sa);
	if (!r->srq)
		rsv_die("ibv_create_srq_ex XRC: %s", strerror(errno));
	if (sa.attr.max_wr != SRQ_WR)
		rsv_die("XRC SRQ of %u WQEs, asked for %u", sa.attr.max_wr,
			SRQ_WR);
	if (ibv_get_srq_num(r->srq, &r->srqn))
		rsv_die("ibv_get_srq_num: %s", strerror(errno));
	r->buf = aligned_alloc(4096, SRQ_WR * SLOT);
	r->mr = ibv_reg_mr(d.pd, r->buf, SRQ_WR * SLOT,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!r->buf || !r->mr)
		rsv_die("receive buffers: %s", strerror(errno));
	for (i = 0; i < SRQ_WR; i++)
		rx_post(r);
	if (r->post_err)
		rsv_die("ibv_post_srq_recv: %s", strerror(r->post_err));
}

static void rx_destroy(struct rx *r)
{
	ibv_destroy_srq(r->srq);
	ibv_destroy_cq(r->cq);
	ibv_dereg_mr(r->mr);
	free(r->buf);
}

/*
 * Receive this process's messages (who: 0 A, 1 B) in order, each
 * checked, reposting a WQE after each.  A description of the first
 * problem goes into why.
 */
static bool rx_messages(struct rx *r, int who, uint32_t tgt_qpn,
			char *why, size_t whylen, int *got)
{
	int i, n = 0;

	*got = 0;
	for (i = 0; i < NMSG; i++) {
		struct ibv_wc wc;
		uint8_t *b;
		long bad;
		int st;

		if (msgs[i].to != who)
			continue;
		st = rsv_poll(r->cq, &wc, o.timeout * 1000);
		if (st != 1) {
			snprintf(why, whylen, "message %d: %s", i,
				 st ? "poll failed" : "timed out");
			return false;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
		    wc.wr_id != (uint64_t)n || wc.byte_len != msgs[i].len ||
		    wc.qp_num != tgt_qpn ||
		    !!(wc.wc_flags & IBV_WC_WITH_IMM) != msgs[i].imm ||
		    (msgs[i].imm && be32toh(wc.imm_data) != IMM(i))) {
			snprintf(why, whylen,
				 "message %d: %s opcode %d wr_id %llu (want %d) %u bytes (want %u) qp_num %u (want %u) flags %#x imm %#x",
				 i, ibv_wc_status_str(wc.status), wc.opcode,
				 (unsigned long long)wc.wr_id, n, wc.byte_len,
				 msgs[i].len, wc.qp_num, tgt_qpn, wc.wc_flags,
				 be32toh(wc.imm_data));
			return false;
		}
		b = r->buf + (wc.wr_id % SRQ_WR) * SLOT;
		bad = rsv_verify(b, msgs[i].len, seed_of(i));
		if (bad >= 0 || b[msgs[i].len] != 0xee) {
			snprintf(why, whylen,
				 "message %d (%u bytes): first difference at %ld, byte after it %#x",
				 i, msgs[i].len, bad, b[msgs[i].len]);
			return false;
		}
		n++;
		*got = n;
		/* Only if the provider counted the completion is a slot free. */
		rx_post(r);
		if (r->post_err) {
			snprintf(why, whylen, "repost after message %d: %s", i,
				 strerror(r->post_err));
			return false;
		}
	}
	return true;
}


static int recv_a(const char *file, const char *sock)
{
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
	};
	struct rsv_peer_info me = { 0 }, peer;
	struct ab_msg in;
	struct ibv_xrcd *xrcd;
	struct ibv_mr *mem_mr;
	struct ibv_qp *tgt;
	char why[256] = "";
	uint8_t *mem;
	struct rx r;
	int ls, bfd, fd, err, got, pe[4];
	bool ok;
	long bad;

	ls = unix_listen(sock);
	xrcd = open_domain(file);
	rx_create(&r, xrcd);
	qa.xrcd = xrcd;
	tgt = ibv_create_qp_ex(d.ctx, &qa);
	if (!tgt)
		rsv_die("ibv_create_qp_ex XRC_RECV: %s", strerror(errno));
	post_refused(tgt, true, pe);
	rsv_check(&o, "xrc-tgt-post-refused", pe[0] == EINVAL &&
		  pe[1] == EINVAL && kernel_refused(pe[2]) &&
		  kernel_refused(pe[3]),
		  "XRC_RECV QP %u: ibv_post_send %s, ibv_post_recv %s; through the kernel: send %s, receive %s",
		  tgt->qp_num, strerror(pe[0]), strerror(pe[1]),
		  strerror(pe[2]), strerror(pe[3]));
	mem = aligned_alloc(4096, 4 * 4096);
	memset(mem, 0, MEMLEN);
	/* On the PD of A's SRQ, which the target checks R_Keys against. */
	mem_mr = ibv_reg_mr(d.pd, mem, MEMLEN, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mem || !mem_mr)
		rsv_die("ibv_reg_mr: %s", strerror(errno));

	/* B: the target QP's number to it, its SRQ numbers back. */
	bfd = accept(ls, NULL, NULL);
	if (bfd < 0)
		rsv_die("accept: %s", strerror(errno));
	close(ls);
	ab_xchg(bfd, AB_TGT, tgt->qp_num, 0, 0, &in);
	ab_xchg(bfd, AB_SRQS, 0, 0, 0, &in);
	if (!in.val[0] || !in.val[1])
		rsv_die("B has no SRQs (it could not open the target QP?)");

	fd = rsv_oob(&o);
	rsv_info(&d, tgt, 0x2000, &me);
	me.addr = (uintptr_t)mem;
	me.rkey = mem_mr->rkey;
	me.len = MEMLEN;
	me.extra[0] = r.srqn;
	me.extra[1] = in.val[0];	/* B's SRQ */
	me.extra[2] = in.val[1];	/* B's SRQ of another domain */
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");
	/* A target sends responses only: RTS takes its PSN and timeout. */
	err = rsv_connect(&d, tgt, IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ, me.psn, &peer,
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
			  IBV_QP_SQ_PSN | IBV_QP_TIMEOUT);
	rsv_check(&o, "xrc-tgt-connect", !err,
		  "XRC_RECV QP %u (domain opened with %s) to XRC_SEND QP %u: %s; SRQ numbers A %u, B %u, B's other domain %u",
		  tgt->qp_num, file, peer.qpn, err ? strerror(err) : "RTS",
		  r.srqn, in.val[0], in.val[1]);
	if (err || !rsv_sync(fd))
		return rsv_exit_status();

	ok = rx_messages(&r, 0, tgt->qp_num, why, sizeof(why), &got);
	rsv_check(&o, "xrc-recv-a", ok,
		  "%d of 4 messages through target QP %u into SRQ %u, data checked%s%s",
		  got, tgt->qp_num, r.srqn, ok ? "" : ": ", why);

	/* The sender wrote and read back: what A's memory holds. */
	if (!rsv_sync(fd))
		rsv_die("sender gone");
	bad = rsv_verify(mem, MEMLEN, MEM_SEED);
	rsv_check(&o, "xrc-write-mem", bad < 0,
		  "%d bytes written through the target into A's MR (rkey %#x): first difference %ld",
		  MEMLEN, mem_mr->rkey, bad);

	/* After the SEND to the other domain: B looks at its SRQs. */
	if (!rsv_sync(fd))
		rsv_die("sender gone");
	ab_xchg(bfd, AB_BAD_SENT, 0, 0, 0, &in);
	/* The target QP lives until B is done with it. */
	ab_xchg(bfd, AB_DONE, 0, 0, 0, &in);
	rsv_sync(fd);
	close(fd);
	close(bfd);
	ibv_destroy_qp(tgt);
	rx_destroy(&r);
	ibv_dereg_mr(mem_mr);
	free(mem);
	ibv_close_xrcd(xrcd);
	return rsv_exit_status();
}

static int recv_b(const char *file, const char *sock)
{
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_xrcd *xrcd, *other;
	struct rx r, rbad;
	struct ab_msg in;
	struct ibv_qp *tgt;
	struct ibv_wc wc;
	char why[256] = "";
	int afd, got, n1, n2;
	uint32_t tgt_qpn;
	bool ok;

	afd = unix_connect(sock);
	xrcd = open_domain(file);
	rx_create(&r, xrcd);
	other = open_domain(NULL);
	rx_create(&rbad, other);

	ab_xchg(afd, AB_TGT, 0, 0, 0, &in);
	tgt_qpn = in.val[0];
	oa.qp_num = tgt_qpn;
	oa.xrcd = xrcd;
	tgt = ibv_open_qp(d.ctx, &oa);
	rsv_check(&o, "xrc-open-qp", tgt && tgt->qp_num == tgt_qpn &&
		  tgt->qp_type == IBV_QPT_XRC_RECV,
		  "A's XRC_RECV QP %u in the domain of %s: %s", tgt_qpn,
		  file, tgt ? "opened" : strerror(errno));
	ab_xchg(afd, AB_SRQS, tgt ? r.srqn : 0, tgt ? rbad.srqn : 0, 0, &in);
	if (!tgt)
		return rsv_exit_status();

	ok = rx_messages(&r, 1, tgt_qpn, why, sizeof(why), &got);
	rsv_check(&o, "xrc-recv-b", ok,
		  "%d of 4 messages through the opened target QP %u into SRQ %u, data checked%s%s",
		  got, tgt->qp_num, r.srqn, ok ? "" : ": ", why);

	/* The sender's SEND to rbad's number has failed by now. */
	ab_xchg(afd, AB_BAD_SENT, 0, 0, 0, &in);
	n1 = rsv_poll(rbad.cq, &wc, 2000);
	n2 = rsv_poll(r.cq, &wc, 100);
	rsv_check(&o, "xrc-other-domain-nothing", n1 == 0 && n2 == 0,
		  "SRQ %u of another XRC domain: %s; SRQ %u: %s", rbad.srqn,
		  n1 ? "a completion" : "nothing", r.srqn,
		  n2 ? "a completion" : "nothing");
	ab_xchg(afd, AB_DONE, 0, 0, 0, &in);
	close(afd);
	ibv_destroy_qp(tgt);
	rx_destroy(&r);
	rx_destroy(&rbad);
	ibv_close_xrcd(xrcd);
	ibv_close_xrcd(other);
	return rsv_exit_status();
}

/* ------------------------------------------------------------------ */
/* Sender                                                             */
/* ------------------------------------------------------------------ */


/* Wait for n send completions: wr_id i at index i; false on the first
 * one missing or failed. */
static bool wait_sends(struct ibv_cq *cq, int n, struct ibv_wc *wcs,
		       char *why, size_t whylen)
{
	int i, st;

	for (i = 0; i < n; i++) {
		st = rsv_poll(cq, &wcs[i], o.timeout * 1000);
		if (st != 1) {
			snprintf(why, whylen, "completion %d: %s", i,
				 st ? "poll failed" : "timed out");
			return false;
		}
		if (wcs[i].status != IBV_WC_SUCCESS) {
			snprintf(why, whylen, "wr_id %llu: %s",
				 (unsigned long long)wcs[i].wr_id,
				 ibv_wc_status_str(wcs[i].status));
			return false;
		}
	}
	return true;
}

static int sender(void)
{
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_XRC_SEND,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.cap = { .max_send_wr = 16, .max_send_sge = 1 },
		.send_ops_flags = IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_RDMA_READ,
	};
	struct rsv_peer_info me = { 0 }, peer;
	struct ibv_send_wr wr, *badwr;
	struct ibv_wc wcs[NMSG];
	struct ibv_qp_ex *qpx;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char why[256] = "";
	uint8_t *buf, *rd;
	int fd, err, i, st, pe[4];
	bool ok;
	long bad;

	fd = rsv_oob(&o);
	buf = aligned_alloc(4096, (NMSG + 2) * SLOT);
	mr = ibv_reg_mr(d.pd, buf, (NMSG + 2) * SLOT, IBV_ACCESS_LOCAL_WRITE);
	cq = ibv_create_cq(d.ctx, 32, NULL, NULL, 0);
	if (!buf || !mr || !cq)
		rsv_die("ibv_reg_mr / ibv_create_cq: %s", strerror(errno));
	qa.send_cq = cq;
	qa.pd = d.pd;
	qp = ibv_create_qp_ex(d.ctx, &qa);
	if (!qp)
		rsv_die("ibv_create_qp_ex XRC_SEND: %s", strerror(errno));
	qpx = ibv_qp_to_qp_ex(qp);
	post_refused(qp, false, pe);
	rsv_check(&o, "xrc-post-refused", pe[1] == EINVAL &&
		  kernel_refused(pe[3]),
		  "XRC_SEND QP %u: ibv_post_recv %s; through the kernel %s",
		  qp->qp_num, strerror(pe[1]), strerror(pe[3]));
	rsv_info(&d, qp, 0x1000, &me);
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");
	/* An initiator receives responses only: RTR takes nothing more. */
	err = rsv_connect(&d, qp, 0, me.psn, &peer, 0, RSV_RTS_REQUESTER);
	rsv_check(&o, "xrc-connect", !err && qpx &&
		  (d.attr.orig_attr.device_cap_flags & IBV_DEVICE_XRC),
		  "%s reports XRC: %s; XRC_SEND QP %u to XRC_RECV QP %u: %s",
		  d.name, (d.attr.orig_attr.device_cap_flags & IBV_DEVICE_XRC) ?
		  "yes" : "no", qp->qp_num, peer.qpn,
		  err ? strerror(err) : "RTS");
	if (err || !qpx || !rsv_sync(fd))
		return rsv_exit_status();

	/* The messages: A's SRQ peer.extra[0], B's peer.extra[1]. */
	for (i = 0; i < NMSG; i++) {
		uint32_t srqn = peer.extra[msgs[i].to];
		uint8_t *p = buf + i * SLOT;

		rsv_fill(p, msgs[i].len, seed_of(i));
		if (!msgs[i].wr_api) {
			sge = (struct ibv_sge){ (uintptr_t)p, msgs[i].len,
						mr->lkey };
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = i;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = msgs[i].imm ? IBV_WR_SEND_WITH_IMM :
						  IBV_WR_SEND;
			wr.imm_data = htobe32(IMM(i));
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.qp_type.xrc.remote_srqn = srqn;
			err = ibv_post_send(qp, &wr, &badwr);
		} else {
			ibv_wr_start(qpx);
			qpx->wr_id = i;
			qpx->wr_flags = IBV_SEND_SIGNALED;
			if (msgs[i].imm)
				ibv_wr_send_imm(qpx, htobe32(IMM(i)));
			else
				ibv_wr_send(qpx);
			ibv_wr_set_xrc_srqn(qpx, srqn);
			ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)p, msgs[i].len);
			err = ibv_wr_complete(qpx);
		}
		if (err)
			rsv_die("posting message %d (%s): %s", i,
				msgs[i].wr_api ? "ibv_wr_*" : "ibv_post_send",
				strerror(err));
	}
	ok = wait_sends(cq, NMSG, wcs, why, sizeof(why));
	for (i = 0; ok && i < NMSG; i++)
		ok = wcs[i].wr_id == (uint64_t)i && wcs[i].opcode == IBV_WC_SEND;
	rsv_check(&o, "xrc-send", ok,
		  "%d SEND/SEND_WITH_IMM of 1..%d bytes on one XRC_SEND QP, alternately to SRQs %u (A) and %u (B), ibv_post_send and ibv_wr_set_xrc_srqn%s%s",
		  NMSG, MAXLEN, peer.extra[0], peer.extra[1], ok ? "" : ": ",
		  why);

	/* RDMA WRITE (ibv_wr_*), then READ (ibv_post_send), into A's MR. */
	rd = buf + NMSG * SLOT;
	rsv_fill(rd, MEMLEN, MEM_SEED);
	ibv_wr_start(qpx);
	qpx->wr_id = 100;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, peer.rkey, peer.addr);
	ibv_wr_set_xrc_srqn(qpx, peer.extra[0]);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)rd, MEMLEN);
	err = ibv_wr_complete(qpx);
	st = err ? -1 : rsv_poll(cq, &wcs[0], o.timeout * 1000);
	if (st == 1 && wcs[0].status == IBV_WC_SUCCESS) {
		rd += SLOT;
		memset(rd, 0, MEMLEN);
		sge = (struct ibv_sge){ (uintptr_t)rd, MEMLEN, mr->lkey };
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 101;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = peer.addr;
		wr.wr.rdma.rkey = peer.rkey;
		wr.qp_type.xrc.remote_srqn = peer.extra[0];
		err = ibv_post_send(qp, &wr, &badwr);
		st = err ? -1 : rsv_poll(cq, &wcs[1], o.timeout * 1000);
		bad = st == 1 && wcs[1].status == IBV_WC_SUCCESS ?
		      rsv_verify(rd, MEMLEN, MEM_SEED) : -2;
		rsv_check(&o, "xrc-write-read", bad == -1,
			  "%d bytes written into A's MR through SRQ %u, read back: %s, first difference %ld",
			  MEMLEN, peer.extra[0],
			  st == 1 ? ibv_wc_status_str(wcs[1].status) :
			  err ? strerror(err) : "timed out", bad);
	} else {
		rsv_check(&o, "xrc-write-read", false,
			  "RDMA WRITE through SRQ %u: %s", peer.extra[0],
			  st == 1 ? ibv_wc_status_str(wcs[0].status) :
			  err ? strerror(err) : "timed out");
	}
	if (!rsv_sync(fd))
		rsv_die("A gone");

	/* Last: an XRC SRQ of another domain than the target's. */
	rsv_fill(buf, 64, 7);
	sge = (struct ibv_sge){ (uintptr_t)buf, 64, mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 200;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.qp_type.xrc.remote_srqn = peer.extra[2];
	st = rsv_post_wait(qp, cq, &wr, o.timeout * 1000);
	rsv_check(&o, "xrc-other-domain", st == IBV_WC_REM_INV_REQ_ERR,
		  "SEND to SRQ %u of another XRC domain: %s", peer.extra[2],
		  st >= 0 ? ibv_wc_status_str(st) :
		  st == -1 ? "post failed" : "timed out");
	rsv_sync(fd);
	rsv_sync(fd);
	close(fd);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	free(buf);
	return rsv_exit_status();
}

int main(int argc, char **argv)
{
	int ret;

	rsv_parse(&o, argc, argv);
	if (o.argc < 1 || (strcmp(o.argv[0], "send") && o.argc < 3))
		rsv_die("usage: rsv-xrc [options] -- send | recv-a FILE SOCKET | recv-b FILE SOCKET");
	rsv_open(&o, &d);
	if (!strcmp(o.argv[0], "send"))
		ret = sender();
	else if (!strcmp(o.argv[0], "recv-a"))
		ret = recv_a(o.argv[1], o.argv[2]);
	else if (!strcmp(o.argv[0], "recv-b"))
		ret = recv_b(o.argv[1], o.argv[2]);
	else
		rsv_die("unknown role %s", o.argv[0]);
	rsv_close(&d);
	return ret;
}
