/*
 * Network identities (ABI 1.6): the host puts the adapter's second subnet
 * (the address given after "--", e.g. 10.78.0.1) in identity 1, the first
 * address stays in identity 0.  Each side opens the device twice: once
 * as is (identity 0) and once with RSESSION_NETID set to its second
 * address, so the provider creates that context's PD in identity 1.
 * Each side registers a buffer in each identity and connects a QP pair
 * through each identity's address, and one more pair through each for
 * the crossed accesses.  The client then writes through each identity
 * with that identity's key (both land), and with the other identity's
 * key through each (both must be refused with a remote access error);
 * the server checks its two buffers byte by byte: each holds exactly
 * what its own identity wrote.
 *
 * With a second argument (seconds), both sides wait that long once they
 * are connected, before the writes: the suite migrates VM 1 meanwhile.
 *
 * Checks: write-id0, write-id1, cross-id1-key-via-id0,
 * cross-id0-key-via-id1 (client); memory-id0, memory-id1 (server).
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsv-common.h"

#define LEN		8192
#define OFF		0x100
#define WLEN		512
#define QP_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ)

/* Write WLEN bytes of src (seed) to the peer's addr + OFF with rkey. */
static int put(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *src,
	       uint64_t addr, uint32_t rkey, uint32_t seed, int tmo)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)src->addr, .length = WLEN, .lkey = src->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = seed, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = addr + OFF, .rkey = rkey },
	};

	rsv_fill(src->addr, WLEN, seed);
	return rsv_post_wait(qp, cq, &wr, tmo);
}

/* buf holds seed's pattern at OFF (WLEN bytes) and zeros elsewhere. */
static bool holds(const uint8_t *buf, uint32_t seed, char *why, size_t n)
{
	long bad = rsv_verify(buf + OFF, WLEN, seed);
	size_t i;

	if (bad >= 0) {
		snprintf(why, n, "byte %ld of the write differs", OFF + bad);
		return false;
	}
	for (i = 0; i < LEN; i++) {
		if ((i < OFF || i >= OFF + WLEN) && buf[i]) {
			snprintf(why, n, "byte %zu changed to 0x%02x", i, buf[i]);
			return false;
		}
	}
	snprintf(why, n, "%d bytes at 0x%x, the rest untouched", WLEN, OFF);
	return true;
}

struct side {
	struct rsv_dev d;
	uint8_t *buf, *src;
	struct ibv_mr *mr, *smr;
	struct ibv_cq *cq;
	struct ibv_qp *qp, *qx;
	struct rsv_peer_info me, peer;
};

static void side_init(struct side *s, const struct rsv_opts *o)
{
	rsv_open(o, &s->d);
	s->buf = aligned_alloc(4096, LEN);
	s->src = aligned_alloc(4096, LEN);
	memset(s->buf, 0, LEN);
	s->mr = ibv_reg_mr(s->d.pd, s->buf, LEN, QP_ACCESS);
	s->smr = ibv_reg_mr(s->d.pd, s->src, LEN, IBV_ACCESS_LOCAL_WRITE);
	s->cq = ibv_create_cq(s->d.ctx, 16, NULL, NULL, 0);
	if (!s->mr || !s->smr || !s->cq)
		rsv_die("ibv_reg_mr / ibv_create_cq failed");
	s->qp = rsv_rc_qp(&s->d, s->cq, NULL, 4);
	s->qx = rsv_rc_qp(&s->d, s->cq, NULL, 4);
	rsv_info(&s->d, s->qp, 0x3000 + (o->server ? 1 : 0), &s->me);
	s->me.addr = (uintptr_t)s->buf;
	s->me.rkey = s->mr->rkey;
	s->me.len = LEN;
	s->me.extra[0] = s->qx->qp_num;
}

static int side_connect(struct side *s)
{
	struct rsv_peer_info x = s->peer;
	int err;

	err = rsv_rc_connect(&s->d, s->qp, QP_ACCESS, s->me.psn, &s->peer);
	x.qpn = s->peer.extra[0];
	return err ? err : rsv_rc_connect(&s->d, s->qx, QP_ACCESS, s->me.psn,
					  &x);
}

int main(int argc, char **argv)
{
	struct side s[2];
	struct rsv_opts o, o1;
	char why[128];
	int fd, st, err, tmo, i;

	rsv_parse(&o, argc, argv);
	if (o.argc < 1)
		rsv_die("usage: rsv-netid [options] -- SECOND_IPV4_ADDRESS "
			"[SECONDS]");
	tmo = o.timeout * 1000;
	unsetenv("RSESSION_NETID");
	side_init(&s[0], &o);
	o1 = o;
	o1.gid_index = rsv_gid_index(s[0].d.ctx, o.argv[0], o.timeout);
	/* The provider puts this context's PDs in the GID's identity. */
	setenv("RSESSION_NETID", o.argv[0], 1);
	side_init(&s[1], &o1);
	printf("rsv-netid: identity 0 through GID %d, identity 1 "
	       "(RSESSION_NETID=%s) through GID %d; keys 0x%x and 0x%x\n",
	       s[0].d.gid_index, o.argv[0], s[1].d.gid_index, s[0].mr->rkey,
	       s[1].mr->rkey);

	fd = rsv_oob(&o);
	for (i = 0; i < 2; i++) {
		if (!rsv_xchg(fd, &s[i].me, &s[i].peer, sizeof(s[i].me)))
			rsv_die("out-of-band exchange failed");
	}
	for (i = 0; i < 2; i++) {
		err = side_connect(&s[i]);
		if (err)
			rsv_die("connect through identity %d: %s", i,
				strerror(err));
	}
	if (!rsv_sync(fd))
		rsv_die("the other side is gone");
	if (o.argc > 1) {
		printf("rsv-netid: connected; waiting %s s\n", o.argv[1]);
		fflush(stdout);
		sleep(atoi(o.argv[1]));
		if (!rsv_sync(fd))
			rsv_die("the other side is gone");
	}

	/* The client (-c) writes, the server checks its memory. */
	if (o.server) {
		for (i = 0; i < 2; i++) {
			st = put(s[i].qp, s[i].cq, s[i].smr, s[i].peer.addr,
				 s[i].peer.rkey, 0x11 * (i + 1), tmo);
			rsv_check(&o, i ? "write-id1" : "write-id0",
				  st == IBV_WC_SUCCESS,
				  "WRITE through identity %d with its key "
				  "0x%x: status %d", i, s[i].peer.rkey, st);
		}
		/* The other identity's key and buffer, through each. */
		for (i = 0; i < 2; i++) {
			st = put(s[i].qx, s[i].cq, s[i].smr, s[!i].peer.addr,
				 s[!i].peer.rkey, 0x33 + i, tmo);
			rsv_check(&o, i ? "cross-id0-key-via-id1" :
					  "cross-id1-key-via-id0",
				  st == IBV_WC_REM_ACCESS_ERR,
				  "WRITE through identity %d with identity %d's "
				  "key 0x%x: status %d (%s)", i, !i,
				  s[!i].peer.rkey, st,
				  st >= 0 ? ibv_wc_status_str(st) : "none");
		}
	}
	if (!rsv_sync(fd))
		rsv_die("the other side is gone");
	if (!o.server) {
		for (i = 0; i < 2; i++) {
			bool ok = holds(s[i].buf, 0x11 * (i + 1), why,
					sizeof(why));

			rsv_check(&o, i ? "memory-id1" : "memory-id0", ok,
				  "identity %d's buffer: %s", i, why);
		}
	}
	rsv_sync(fd);
	return rsv_exit_status();
}
