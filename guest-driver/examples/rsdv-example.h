/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared parts of the rsessiondv.h example programs (rsdv_dc_bw,
 * rsdv_strided_write): device and GID, the TCP exchange (as
 * ibv_rc_pingpong does it), a DCI and a DCT brought to their working
 * states.  Each program includes this once.
 */
#ifndef RSDV_EXAMPLE_H
#define RSDV_EXAMPLE_H

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <infiniband/rsessiondv.h>

struct ex_opts {
	const char *dev;
	int ib_port;
	int gid_index;
	int tcp_port;
	uint64_t key;
};

/*
 * The options both examples take (-p -d -i -g -k): true if @c was one
 * of them, stored in @o.
 */
static inline bool ex_opt(struct ex_opts *o, int c, const char *arg)
{
	switch (c) {
	case 'p':
		o->tcp_port = atoi(arg);
		return true;
	case 'd':
		o->dev = arg;
		return true;
	case 'i':
		o->ib_port = atoi(arg);
		return true;
	case 'g':
		o->gid_index = atoi(arg);
		return true;
	case 'k':
		o->key = strtoull(arg, NULL, 0);
		return true;
	}
	return false;
}

/* What a target tells its initiator. */
struct ex_info {
	uint32_t dctn;
	uint32_t rkey;
	uint64_t key;
	uint64_t addr;
	uint64_t len;
	union ibv_gid gid;
};

struct ex_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
	struct rsdv_context dv;
};

static inline void __attribute__((noreturn, format(printf, 1, 2)))
ex_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs("\n", stderr);
	va_end(ap);
	exit(1);
}

static inline double ex_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline void ex_open(const struct ex_opts *o, struct ex_dev *d, uint64_t need)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	for (i = 0; list && list[i]; i++)
		if (!o->dev || !strcmp(ibv_get_device_name(list[i]), o->dev))
			break;
	if (!list || !list[i])
		ex_die("no RDMA device %s", o->dev ? o->dev : "");
	if (!rsdv_is_supported(list[i]))
		ex_die("%s is not an rdma-session adapter",
		       ibv_get_device_name(list[i]));
	d->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!d->ctx)
		ex_die("ibv_open_device: %s", strerror(errno));
	memset(&d->dv, 0, sizeof(d->dv));
	if (rsdv_query_device(d->ctx, &d->dv) || (d->dv.flags & need) != need)
		ex_die("the adapter lacks a feature this program needs (flags %#llx, need %#llx)",
		       (unsigned long long)d->dv.flags,
		       (unsigned long long)need);
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd || ibv_query_gid(d->ctx, o->ib_port, o->gid_index, &d->gid))
		ex_die("PD or GID %d: %s", o->gid_index, strerror(errno));
}

/* Server: accept one client; client: connect to host. */
static inline int ex_tcp(const struct ex_opts *o, const char *host)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = host ? 0 : AI_PASSIVE };
	struct addrinfo *res;
	char port[16];
	int fd, ls, one = 1, tries;

	snprintf(port, sizeof(port), "%d", o->tcp_port);
	if (getaddrinfo(host, port, &hints, &res))
		ex_die("cannot resolve %s", host ? host : "the local address");
	if (host) {
		for (tries = 0; tries < 100; tries++) {
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (!connect(fd, res->ai_addr, res->ai_addrlen))
				break;
			close(fd);
			fd = -1;
			usleep(200000);
		}
		freeaddrinfo(res);
		if (fd < 0)
			ex_die("cannot connect to %s:%d", host, o->tcp_port);
		return fd;
	}
	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, res->ai_addr, res->ai_addrlen) || listen(ls, 1))
		ex_die("listen on port %d: %s", o->tcp_port, strerror(errno));
	freeaddrinfo(res);
	fd = accept(ls, NULL, NULL);
	close(ls);
	if (fd < 0)
		ex_die("accept: %s", strerror(errno));
	return fd;
}

static inline void ex_send(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		ex_die("TCP write: %s", strerror(errno));
}

static inline void ex_recv(int fd, void *p, size_t n)
{
	size_t got = 0;
	ssize_t r;

	while (got < n) {
		r = read(fd, (char *)p + got, n - got);
		if (r <= 0)
			ex_die("TCP read: the other side is gone");
		got += r;
	}
}

/* A DCI on cq (with mkey_ops, RSDV_QP_EX_WITH_*), in RTS. */
static inline struct ibv_qp *ex_dci(struct ex_dev *d, const struct ex_opts *o,
			     struct ibv_cq *cq, uint32_t depth,
			     uint64_t mkey_ops)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_DRIVER,
		.send_cq = cq,
		.cap = { .max_send_wr = depth, .max_send_sge = 2 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = d->pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_RDMA_READ,
	};
	struct rsdv_qp_init_attr dv = {
		.comp_mask = RSDV_QP_INIT_ATTR_MASK_DC |
			     (mkey_ops ? RSDV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS : 0),
		.dc_init_attr = { .dc_type = RSDV_DCTYPE_DCI },
		.send_ops_flags = mkey_ops,
	};
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT,
				  .port_num = o->ib_port };
	struct ibv_qp *qp = rsdv_create_qp(d->ctx, &a, &dv);

	if (!qp)
		ex_die("rsdv_create_qp (DCI): %s", strerror(errno));
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PORT |
			  IBV_QP_PKEY_INDEX))
		ex_die("DCI to INIT: %s", strerror(errno));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_1024;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PATH_MTU))
		ex_die("DCI to RTR: %s", strerror(errno));
	qa.qp_state = IBV_QPS_RTS;
	qa.timeout = 14;
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;
	qa.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		ex_die("DCI to RTS: %s", strerror(errno));
	return qp;
}

/* A DCT taking what DCIs with o->key send into srq and cq, in RTR. */
static inline struct ibv_qp *ex_dct(struct ex_dev *d, const struct ex_opts *o,
			     struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_DRIVER,
		.recv_cq = cq,
		.srq = srq,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = d->pd,
	};
	struct rsdv_qp_init_attr dv = {
		.comp_mask = RSDV_QP_INIT_ATTR_MASK_DC,
		.dc_init_attr = { .dc_type = RSDV_DCTYPE_DCT,
				  .dct_access_key = o->key },
	};
	struct ibv_qp_attr qa = {
		.qp_state = IBV_QPS_INIT, .port_num = o->ib_port,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	struct ibv_qp *qp = rsdv_create_qp(d->ctx, &a, &dv);

	if (!qp)
		ex_die("rsdv_create_qp (DCT): %s", strerror(errno));
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PORT |
			  IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS))
		ex_die("DCT to INIT: %s", strerror(errno));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_1024;
	qa.min_rnr_timer = 12;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PATH_MTU |
			  IBV_QP_MIN_RNR_TIMER))
		ex_die("DCT to RTR: %s", strerror(errno));
	return qp;
}

static inline struct ibv_ah *ex_ah(struct ex_dev *d, const struct ex_opts *o,
			    const union ibv_gid *dgid)
{
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = o->ib_port,
		.grh = { .dgid = *dgid, .sgid_index = o->gid_index,
			 .hop_limit = 64 },
	};
	struct ibv_ah *ah = ibv_create_ah(d->pd, &aa);

	if (!ah)
		ex_die("ibv_create_ah: %s", strerror(errno));
	return ah;
}

/* Wait for n completions of cq; exits on an error completion. */
static inline void ex_wait(struct ibv_cq *cq, int n, const char *what)
{
	struct ibv_wc wc;
	double end = ex_now() + 60;

	while (n > 0) {
		int r = ibv_poll_cq(cq, 1, &wc);

		if (r < 0 || ex_now() > end)
			ex_die("%s: no completion", what);
		if (r && wc.status)
			ex_die("%s: %s", what, ibv_wc_status_str(wc.status));
		n -= r;
	}
}

#endif /* RSDV_EXAMPLE_H */
