/*
 * Shared parts of the in-guest verbs test programs: see rsv-common.h.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rsv-common.h"

static int rsv_failed;

void rsv_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("rsv: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

bool rsv_check(const struct rsv_opts *o, const char *name, bool ok,
	       const char *fmt, ...)
{
	va_list ap;

	printf("CHECK %s%s%s %s ", o->prefix, *o->prefix ? "/" : "", name,
	       ok ? "ok" : "fail");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		rsv_failed++;
	return ok;
}

int rsv_exit_status(void)
{
	return rsv_failed ? 1 : 0;
}

void rsv_parse(struct rsv_opts *o, int argc, char **argv)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->gid_index = -1;
	o->port = 18515;
	o->prefix = "";
	o->timeout = 30;
	while ((c = getopt(argc, argv, "d:g:p:c:n:t:")) != -1) {
		switch (c) {
		case 'd':
			o->dev = optarg;
			break;
		case 'g':
			o->gid_index = atoi(optarg);
			break;
		case 'p':
			o->port = atoi(optarg);
			break;
		case 'c':
			o->server = optarg;
			break;
		case 'n':
			o->prefix = optarg;
			break;
		case 't':
			o->timeout = atoi(optarg);
			break;
		default:
			rsv_die("usage: %s [-d DEV] [-g GID_INDEX] [-p PORT] [-c SERVER] [-n PREFIX] [-t SECONDS] [-- ARGS]",
				argv[0]);
		}
	}
	o->argc = argc - optind;
	o->argv = argv + optind;
}

/*
 * The index of the RoCE v2 GID ::ffff:a.b.c.d of the first IPv4 address,
 * or -1.
 */
static int rsv_find_gid(struct rsv_dev *d)
{
	struct ifaddrs *ifa, *i;
	struct in_addr ip = { 0 };
	int idx;

	if (getifaddrs(&ifa))
		rsv_die("getifaddrs: %s", strerror(errno));
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    strcmp(i->ifa_name, "lo")) {
			ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			break;
		}
	}
	freeifaddrs(ifa);
	if (!ip.s_addr)
		rsv_die("no IPv4 address");
	for (idx = 0; idx < d->port_attr.gid_tbl_len; idx++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(d->ctx, 1, idx, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(&e.gid.raw[12], &ip, 4) &&
		    e.gid.raw[10] == 0xff && e.gid.raw[11] == 0xff)
			return idx;
	}
	return -1;
}

void rsv_open(const struct rsv_opts *o, struct rsv_dev *d)
{
	struct ibv_device **list;
	int i, n, t;

	memset(d, 0, sizeof(*d));
	list = ibv_get_device_list(&n);
	if (!list || !n)
		rsv_die("no RDMA device");
	for (i = 0; i < n; i++)
		if (!o->dev || !strcmp(ibv_get_device_name(list[i]), o->dev))
			break;
	if (i == n)
		rsv_die("no device %s", o->dev);
	d->name = strdup(ibv_get_device_name(list[i]));
	d->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!d->ctx)
		rsv_die("ibv_open_device %s: %s", d->name, strerror(errno));
	if (ibv_query_device_ex(d->ctx, NULL, &d->attr))
		rsv_die("ibv_query_device_ex: %s", strerror(errno));
	if (ibv_query_port(d->ctx, 1, &d->port_attr))
		rsv_die("ibv_query_port: %s", strerror(errno));
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd)
		rsv_die("ibv_alloc_pd: %s", strerror(errno));
	d->gid_index = o->gid_index;
	/* The GID appears a moment after the address. */
	for (t = 0; d->gid_index < 0; t++) {
		d->gid_index = rsv_find_gid(d);
		if (d->gid_index < 0 && t >= o->timeout * 5)
			rsv_die("no RoCE v2 GID for the IPv4 address on %s",
				d->name);
		if (d->gid_index < 0)
			usleep(200000);
	}
	if (ibv_query_gid(d->ctx, 1, d->gid_index, &d->gid))
		rsv_die("ibv_query_gid %d: %s", d->gid_index, strerror(errno));
}

void rsv_close(struct rsv_dev *d)
{
	ibv_dealloc_pd(d->pd);
	ibv_close_device(d->ctx);
}

int rsv_oob(const struct rsv_opts *o)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(o->port) };
	time_t end = time(NULL) + o->timeout;
	int fd, one = 1;

	if (!o->server) {
		int ls = socket(AF_INET, SOCK_STREAM, 0);
		struct pollfd p = { .fd = ls, .events = POLLIN };

		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1))
			rsv_die("listen on port %d: %s", o->port,
				strerror(errno));
		if (poll(&p, 1, o->timeout * 1000) != 1)
			rsv_die("no client on port %d within %d s", o->port,
				o->timeout);
		fd = accept(ls, NULL, NULL);
		close(ls);
		if (fd < 0)
			rsv_die("accept: %s", strerror(errno));
		return fd;
	}
	if (inet_pton(AF_INET, o->server, &sa.sin_addr) != 1)
		rsv_die("bad server address %s", o->server);
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return fd;
		close(fd);
		if (time(NULL) >= end)
			rsv_die("cannot connect to %s:%d within %d s", o->server,
				o->port, o->timeout);
		usleep(200000);
	}
}

static bool rsv_full(int fd, void *buf, size_t len, bool wr)
{
	char *p = buf;

	while (len) {
		ssize_t n = wr ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= n;
	}
	return true;
}

bool rsv_xchg(int fd, const void *mine, void *theirs, size_t len)
{
	return rsv_full(fd, (void *)mine, len, true) &&
	       rsv_full(fd, theirs, len, false);
}

bool rsv_sync(int fd)
{
	char a = 's', b;

	return rsv_xchg(fd, &a, &b, 1) && b == 's';
}

struct ibv_qp *rsv_rc_qp(struct rsv_dev *d, struct ibv_cq *cq,
			 struct ibv_srq *srq, uint32_t max_wr)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = max_wr,
			.max_recv_wr = srq ? 0 : max_wr,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &ia);

	if (!qp)
		rsv_die("ibv_create_qp RC: %s", strerror(errno));
	return qp;
}

void rsv_info(const struct rsv_dev *d, const struct ibv_qp *qp, uint32_t psn,
	      struct rsv_peer_info *me)
{
	me->qpn = qp->qp_num;
	me->psn = psn;
	me->gid = d->gid;
}

int rsv_rc_connect(struct rsv_dev *d, struct ibv_qp *qp, int access,
		   uint32_t my_psn, const struct rsv_peer_info *peer)
{
	return rsv_connect(d, qp, access, my_psn, peer,
			   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
			   RSV_RTS_REQUESTER);
}

uint32_t rsv_flow_label;
uint8_t rsv_max_rd_atomic = 1;

int rsv_connect(struct rsv_dev *d, struct ibv_qp *qp, int access,
		uint32_t my_psn, const struct rsv_peer_info *peer,
		int rtr_mask, int rts_mask)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = access,
	};
	int err;

	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = d->port_attr.active_mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = d->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.flow_label = rsv_flow_label;
	a.ah_attr.port_num = 1;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | rtr_mask);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = my_psn;
	/* ~1 s local ACK timeout: a TCG guest can stall for a while. */
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = rsv_max_rd_atomic;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | rts_mask);
}

int rsv_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n < 0 ? -1 : 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000 >= timeout_ms)
			return 0;
		usleep(100);
	}
}

int rsv_post_wait(struct ibv_qp *qp, struct ibv_cq *cq,
		  struct ibv_send_wr *wr, int timeout_ms)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int r;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(qp, wr, &bad))
		return -1;
	r = rsv_poll(cq, &wc, timeout_ms);
	if (r <= 0)
		return -2;
	return wc.status;
}

void rsv_fill(void *buf, size_t len, uint32_t seed)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

long rsv_verify(const void *buf, size_t len, uint32_t seed)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)(seed * 31 + i * 7 + (i >> 8)))
			return i;
	return -1;
}

int64_t rsv_hw_counter(const char *dev, const char *name)
{
	char path[256];
	long long v;
	FILE *f;

	usleep(30 * 1000);
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

int rsv_gid_index(struct ibv_context *ctx, const char *ip, int timeout)
{
	union ibv_gid want = { 0 }, g;
	struct ibv_port_attr pa;
	int i, t;

	if (inet_pton(AF_INET, ip, want.raw + 12) != 1)
		rsv_die("%s: not an IPv4 address", ip);
	want.raw[10] = want.raw[11] = 0xff;
	if (ibv_query_port(ctx, 1, &pa))
		rsv_die("ibv_query_port failed");
	for (t = 0; t < timeout * 5; t++) {
		for (i = 0; i < pa.gid_tbl_len; i++) {
			if (!ibv_query_gid(ctx, 1, i, &g) &&
			    !memcmp(g.raw, want.raw, 16))
				return i;
		}
		usleep(200000);
	}
	rsv_die("no GID for %s", ip);
}
