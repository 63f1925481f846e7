/*
 * The guest driver's multipath sessions, in one VM: two RC QPs connected
 * to each other through the adapter's own GID.  Run with the module
 * parameters paths=4, port_min=P, port_max=P+63 set: each QP's primary
 * path gets 4 sessions whose UDP source ports the driver holds in the
 * guest's port space, so a user-space bind() to any of them fails with
 * EADDRINUSE while the QPs live and succeeds once they are destroyed;
 * RDMA WRITEs complete over the spreading group and, after
 * rsdv_modify_qp_path_policy() chose active-backup, over that one; the
 * call refuses a policy that is not exactly one, and the driver refuses
 * (EINVAL) driver input the provider would never send: unknown flags,
 * no flag, an unknown policy, a reserved word, attributes with it.
 *
 * Usage: rsv-paths [-d DEV] [-g GID_INDEX] -- PORT_MIN
 * Checks: paths-connect, paths-reserved, paths-write-spread,
 * paths-dv-active-backup, paths-write-active-backup, paths-dv-bad,
 * paths-dv-spread, paths-kernel-bad, paths-kernel-good, paths-released.
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
#include <netinet/in.h>
#include <sys/socket.h>

#include <infiniband/rsessiondv.h>
#include <rdma/ib_user_verbs.h>

#include "rsv-common.h"

#define LEN     65536
#define SPAN    64

/* Ports of [lo, lo + SPAN) a UDP bind() refuses; *other: not EADDRINUSE. */
static int taken(int lo, int *other)
{
	int p, n = 0;

	*other = 0;
	for (p = lo; p < lo + SPAN; p++) {
		struct sockaddr_in sin = {
			.sin_family = AF_INET,
			.sin_port = htons(p),
			.sin_addr.s_addr = htonl(INADDR_ANY),
		};
		int fd = socket(AF_INET, SOCK_DGRAM, 0);

		if (fd < 0)
			rsv_die("socket: %s", strerror(errno));
		if (bind(fd, (struct sockaddr *)&sin, sizeof(sin))) {
			if (errno == EADDRINUSE)
				n++;
			else
				(*other)++;
		}
		close(fd);
	}
	return n;
}

/* include/hw/rdma-session/rdma-session-uverbs.h, as the driver reads it. */
struct path_data {
	uint32_t flags;			/* 1: path policy */
	uint32_t path_policy;		/* 1 spread, 2 active-backup */
	uint32_t rsvd[2];
};

/* Extended MODIFY_QP written as libibverbs writes it; 0 or the errno. */
static int raw_modify(struct ibv_qp *qp, uint32_t attr_mask,
		      const struct path_data *pd)
{
	struct ib_uverbs_ex_modify_qp_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_ex_cmd_hdr ex;
		struct ib_uverbs_ex_modify_qp m;
		struct path_data d;
	} c;

	memset(&c, 0, sizeof(c));
	c.hdr.command = IB_USER_VERBS_CMD_FLAG_EXTENDED |
			IB_USER_VERBS_EX_CMD_MODIFY_QP;
	c.hdr.in_words = sizeof(c.m) / 8;
	c.hdr.out_words = sizeof(resp) / 8;
	c.ex.response = (uintptr_t)&resp;
	c.ex.provider_in_words = sizeof(c.d) / 8;
	c.m.base.qp_handle = qp->handle;
	c.m.base.attr_mask = attr_mask;
	c.m.base.min_rnr_timer = 12;
	c.d = *pd;
	if (write(qp->context->cmd_fd, &c, sizeof(c)) != sizeof(c))
		return errno;
	return 0;
}

/* 16 WRITEs of LEN / 16 bytes from a's half to b's; 0 if all landed. */
static int writes(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
		  uint8_t *buf, uint32_t seed, int timeout_ms)
{
	struct ibv_send_wr wr = { 0 };
	struct ibv_sge sge;
	int i, st;

	rsv_fill(buf, LEN, seed);
	memset(buf + LEN, 0, LEN);
	for (i = 0; i < 16; i++) {
		sge = (struct ibv_sge){ (uintptr_t)buf + i * (LEN / 16),
					LEN / 16, mr->lkey };
		memset(&wr, 0, sizeof(wr));
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = (uintptr_t)buf + LEN + i * (LEN / 16);
		wr.wr.rdma.rkey = mr->rkey;
		st = rsv_post_wait(qp, cq, &wr, timeout_ms);
		if (st)
			return st;
	}
	return rsv_verify(buf + LEN, LEN, seed) < 0 ? 0 : -3;
}

int main(int argc, char **argv)
{
	struct rsv_peer_info ia = { 0 }, ib = { 0 };
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ;
	struct ibv_qp *a, *b;
	struct rsv_opts o;
	struct rsv_dev d;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	int lo, n, other, err, st;
	uint8_t *buf;

	rsv_parse(&o, argc, argv);
	if (o.argc != 1)
		rsv_die("usage: rsv-paths [-d DEV] [-g GID_INDEX] -- PORT_MIN");
	lo = atoi(o.argv[0]);
	rsv_open(&o, &d);
	buf = aligned_alloc(4096, 2 * LEN);
	mr = ibv_reg_mr(d.pd, buf, 2 * LEN, access);
	cq = ibv_create_cq(d.ctx, 64, NULL, NULL, 0);
	if (!buf || !mr || !cq)
		rsv_die("ibv_reg_mr / ibv_create_cq failed");
	n = taken(lo, &other);
	if (n || other)
		rsv_die("%d ports of %d-%d taken before the QPs exist", n + other,
			lo, lo + SPAN - 1);

	a = rsv_rc_qp(&d, cq, NULL, 32);
	b = rsv_rc_qp(&d, cq, NULL, 32);
	rsv_info(&d, a, 0x100, &ia);
	rsv_info(&d, b, 0x200, &ib);
	err = rsv_rc_connect(&d, a, access, ia.psn, &ib);
	if (!err)
		err = rsv_rc_connect(&d, b, access, ib.psn, &ia);
	rsv_check(&o, "paths-connect", !err, "qpn %u <-> qpn %u: %s", ia.qpn,
		  ib.qpn, err ? strerror(err) : "RTS");
	if (err)
		return rsv_exit_status();

	n = taken(lo, &other);
	rsv_check(&o, "paths-reserved", n == 8 && !other,
		  "%d of ports %d-%d refused with EADDRINUSE (2 QPs x 4 paths), %d otherwise",
		  n, lo, lo + SPAN - 1, other);

	st = writes(a, cq, mr, buf, 11, o.timeout * 1000);
	rsv_check(&o, "paths-write-spread", !st,
		  "16 RDMA WRITEs of %d bytes: %d", LEN / 16, st);

	err = rsdv_modify_qp_path_policy(a, RSDV_PATH_ACTIVE_BACKUP);
	rsv_check(&o, "paths-dv-active-backup", !err, "%s",
		  err ? strerror(err) : "active-backup");
	st = writes(a, cq, mr, buf, 12, o.timeout * 1000);
	rsv_check(&o, "paths-write-active-backup", !st,
		  "16 RDMA WRITEs of %d bytes: %d", LEN / 16, st);
	err = rsdv_modify_qp_path_policy(a, RSDV_PATH_SPREAD |
					 RSDV_PATH_ACTIVE_BACKUP);
	rsv_check(&o, "paths-dv-bad", err == EINVAL, "both policies: %s",
		  err ? strerror(err) : "accepted");
	err = rsdv_modify_qp_path_policy(a, RSDV_PATH_SPREAD);
	if (!err)
		err = writes(a, cq, mr, buf, 13, o.timeout * 1000) ? EIO : 0;
	rsv_check(&o, "paths-dv-spread", !err, "back to spreading: %s",
		  err ? strerror(err) : "ok");

	{
		static const struct {
			const char *what;
			uint32_t mask;
			struct path_data d;
		} bad[] = {
			{ "no flag", 0, { 0, 1, { 0, 0 } } },
			{ "unknown flag", 0, { 3, 1, { 0, 0 } } },
			{ "policy 0", 0, { 1, 0, { 0, 0 } } },
			{ "policy 3", 0, { 1, 3, { 0, 0 } } },
			{ "rsvd[0]", 0, { 1, 1, { 1, 0 } } },
			{ "rsvd[1]", 0, { 1, 1, { 0, 1 } } },
			{ "with an attribute", IBV_QP_MIN_RNR_TIMER,
			  { 1, 1, { 0, 0 } } },
		};
		static const struct path_data good = { 1, 2, { 0, 0 } };
		unsigned int i, nok = 0;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			err = raw_modify(a, bad[i].mask, &bad[i].d);
			if (err == EINVAL)
				nok++;
			else
				printf("rsv-paths: %s: %s\n", bad[i].what,
				       err ? strerror(err) : "accepted");
		}
		rsv_check(&o, "paths-kernel-bad", nok == i,
			  "%u of %u bad driver inputs refused with EINVAL", nok,
			  i);
		err = raw_modify(a, 0, &good);
		if (!err)
			err = writes(a, cq, mr, buf, 14, o.timeout * 1000) ?
			      EIO : 0;
		rsv_check(&o, "paths-kernel-good", !err,
			  "active-backup by hand, then writes: %s",
			  err ? strerror(err) : "ok");
	}

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	n = taken(lo, &other);
	rsv_check(&o, "paths-released", !n && !other,
		  "%d ports still taken after the QPs are gone", n + other);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	free(buf);
	rsv_close(&d);
	return rsv_exit_status();
}
