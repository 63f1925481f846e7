/*
 * The in-guest programs' common path, checked on its own: an RC
 * connection through rsv-common, the client RDMA-writes a pattern into
 * the server's buffer and reads it back, then SENDs it; the server checks
 * what arrived in its buffer and in its receive buffer.
 *
 * Checks: rc-connect (both), rc-write-read (client), rc-send (server).
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsv-common.h"

#define LEN 8192

int main(int argc, char **argv)
{
	struct rsv_peer_info me = { 0 }, peer;
	struct ibv_send_wr wr = { 0 };
	struct ibv_recv_wr rwr = { 0 }, *rbad;
	struct ibv_sge sge;
	struct rsv_opts o;
	struct rsv_dev d;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t *buf;
	long bad;
	int fd, err, st;

	rsv_parse(&o, argc, argv);
	rsv_open(&o, &d);
	fd = rsv_oob(&o);
	buf = aligned_alloc(4096, 2 * LEN);
	memset(buf, 0, 2 * LEN);
	mr = ibv_reg_mr(d.pd, buf, 2 * LEN, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	cq = ibv_create_cq(d.ctx, 16, NULL, NULL, 0);
	if (!mr || !cq)
		rsv_die("ibv_reg_mr / ibv_create_cq failed");
	qp = rsv_rc_qp(&d, cq, NULL, 8);
	rsv_info(&d, qp, 0x1000 + (o.server ? 1 : 0), &me);
	me.addr = (uintptr_t)buf;
	me.rkey = mr->rkey;
	me.len = LEN;
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");

	sge = (struct ibv_sge){ (uintptr_t)(buf + LEN), LEN, mr->lkey };
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	err = rsv_rc_connect(&d, qp, IBV_ACCESS_LOCAL_WRITE |
			     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
			     me.psn, &peer);
	/* Not before INIT: a QP in RESET takes no receives (IBTA). */
	if (!err && !o.server && ibv_post_recv(qp, &rwr, &rbad))
		rsv_die("ibv_post_recv failed");
	rsv_check(&o, "rc-connect", !err, "%s qpn %u to qpn %u: %s", d.name,
		  me.qpn, peer.qpn, err ? strerror(err) : "RTS");
	if (err || !rsv_sync(fd))
		return rsv_exit_status();

	if (o.server) {
		/* client: write, read back, send */
		rsv_fill(buf, LEN, 7);
		sge = (struct ibv_sge){ (uintptr_t)buf, LEN, mr->lkey };
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = peer.addr;
		wr.wr.rdma.rkey = peer.rkey;
		st = rsv_post_wait(qp, cq, &wr, o.timeout * 1000);
		sge.addr = (uintptr_t)(buf + LEN);
		wr.opcode = IBV_WR_RDMA_READ;
		if (!st)
			st = rsv_post_wait(qp, cq, &wr, o.timeout * 1000);
		bad = st ? -1 : rsv_verify(buf + LEN, LEN, 7);
		rsv_check(&o, "rc-write-read", !st && bad < 0,
			  "%d bytes written and read back: status %d, first difference %ld",
			  LEN, st, bad);
		sge.addr = (uintptr_t)buf;
		wr.opcode = IBV_WR_SEND;
		st = rsv_post_wait(qp, cq, &wr, o.timeout * 1000);
		if (st)
			rsv_check(&o, "rc-send", false, "send status %d", st);
	} else {
		st = rsv_poll(cq, &wc, o.timeout * 1000);
		bad = st == 1 && !wc.status ? rsv_verify(buf + LEN, LEN, 7) : -2;
		rsv_check(&o, "rc-send", bad == -1 && rsv_verify(buf, LEN, 7) < 0,
			  "receive %s, %u bytes; first difference in it %ld",
			  st == 1 ? ibv_wc_status_str(wc.status) : "timed out",
			  st == 1 ? wc.byte_len : 0, bad);
	}
	rsv_sync(fd);
	close(fd);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	free(buf);
	rsv_close(&d);
	return rsv_exit_status();
}
