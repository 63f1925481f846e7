// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rsdv_dc_bw: one DC initiator sending to DC targets on several hosts
 * (rsessiondv.h).  See usage() or -h.
 */
#include <getopt.h>
#include <inttypes.h>

#include "rsdv-example.h"

#define WINDOW 32

static void usage(const char *argv0)
{
	printf("Usage: %s [options]                  start a DC target (server)\n"
	       "       %s [options] HOST [HOST...]   one DCI sending to the targets on HOSTs\n"
	       "\n"
	       "Sends -n messages of -s bytes to each target through ONE dynamically\n"
	       "connected initiator (DCI), round robin: every message names another\n"
	       "target (rsdv_wr_set_dc_addr), so the adapter connects anew for each\n"
	       "(a DC CONNECT packet carrying the target's key).  Each message is a\n"
	       "SEND with immediate data (its number); its bytes derive from that\n"
	       "number, and the target checks every byte.  The targets exchange\n"
	       "their DCT number, key and GID over TCP (like ibv_rc_pingpong) and\n"
	       "report what they received; the initiator prints messages/s and MB/s.\n"
	       "\n"
	       "Options:\n"
	       "  -p, --port=PORT      TCP port of the exchange (default 18520)\n"
	       "  -d, --ib-dev=DEV     RDMA device (default: the first)\n"
	       "  -i, --ib-port=PORT   port of the device (default 1)\n"
	       "  -g, --gid-idx=IDX    local GID index (default 1, the IPv4 RoCEv2 GID)\n"
	       "  -s, --size=SIZE      message size (default 4096)\n"
	       "  -n, --iters=ITERS    messages per target (default 1000)\n"
	       "  -k, --key=KEY        the target's DC access key (default 0x1234abcd);\n"
	       "                       an initiator given another key than its target's\n"
	       "                       sees IBV_WC_REM_ACCESS_ERR\n"
	       "  -h, --help           this text\n"
	       "\n"
	       "Exit status: 0 if every message arrived intact at every target.\n",
	       argv0, argv0);
}

static uint8_t byte_of(uint32_t seq, uint32_t j)
{
	return (uint8_t)(seq * 31u + j * 7u + (seq >> 8));
}

struct result {
	uint32_t received;
	uint32_t bad;
};

static int server(const struct ex_opts *o, uint32_t size)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 2 * WINDOW,
						  .max_sge = 1 } };
	struct ex_dev d;
	struct ex_info me = { 0 };
	struct result res = { 0, 0 };
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *dct;
	struct ibv_mr *mr;
	uint32_t iters, i, j, seq;
	uint8_t *buf;
	int fd;

	ex_open(o, &d, RSDV_CONTEXT_FLAGS_DC);
	cq = ibv_create_cq(d.ctx, 2 * WINDOW, NULL, NULL, 0);
	srq = ibv_create_srq(d.pd, &sa);
	buf = calloc(2 * WINDOW, size);
	mr = buf ? ibv_reg_mr(d.pd, buf, (size_t)2 * WINDOW * size,
			      IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!cq || !srq || !mr)
		ex_die("CQ, SRQ or MR: %s", strerror(errno));
	for (i = 0; i < 2 * WINDOW; i++) {
		struct ibv_sge sge = { (uintptr_t)buf + (size_t)i * size, size,
				       mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_srq_recv(srq, &wr, &bad))
			ex_die("ibv_post_srq_recv: %s", strerror(errno));
	}
	dct = ex_dct(&d, o, cq, srq);
	me.dctn = dct->qp_num;
	me.key = o->key;
	me.gid = d.gid;
	printf("DCT %u, key %#" PRIx64 ", waiting on TCP port %d\n", me.dctn,
	       o->key, o->tcp_port);
	fd = ex_tcp(o, NULL);
	ex_send(fd, &me, sizeof(me));
	ex_recv(fd, &iters, sizeof(iters));
	while (res.received < iters) {
		struct ibv_wc wc;
		int r = ibv_poll_cq(cq, 1, &wc);

		if (r < 0)
			ex_die("ibv_poll_cq");
		if (!r)
			continue;
		res.received++;
		seq = ntohl(wc.imm_data);
		if (wc.status || !(wc.wc_flags & IBV_WC_WITH_IMM) ||
		    wc.byte_len != size) {
			res.bad++;
		} else {
			uint8_t *p = buf + wc.wr_id * size;

			for (j = 0; j < size; j++)
				if (p[j] != byte_of(seq, j)) {
					res.bad++;
					break;
				}
		}
		{
			struct ibv_sge sge = { (uintptr_t)buf + wc.wr_id * size,
					       size, mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = wc.wr_id,
						  .sg_list = &sge,
						  .num_sge = 1 }, *bad;

			if (ibv_post_srq_recv(srq, &wr, &bad))
				ex_die("ibv_post_srq_recv: %s",
				       strerror(errno));
		}
	}
	ex_send(fd, &res, sizeof(res));
	printf("received %u messages of %u bytes from DCI %s, %u bad\n",
	       res.received, size, "(remote)", res.bad);
	close(fd);
	return res.bad ? 1 : 0;
}

static int client(const struct ex_opts *o, uint32_t size, uint32_t iters,
		  char **hosts, int nh)
{
	struct ex_dev d;
	struct ex_info *t = calloc(nh, sizeof(*t));
	struct ibv_ah **ah = calloc(nh, sizeof(*ah));
	int *fd = calloc(nh, sizeof(*fd));
	uint32_t total = iters * nh, posted = 0, done = 0, bad = 0, j;
	struct ibv_qp_ex *qpx;
	struct rsdv_qp_ex *mqp;
	struct ibv_cq *cq;
	struct ibv_qp *dci;
	struct ibv_mr *mr;
	uint8_t *buf;
	double t0, dt;
	int h;

	ex_open(o, &d, RSDV_CONTEXT_FLAGS_DC);
	cq = ibv_create_cq(d.ctx, 2 * WINDOW, NULL, NULL, 0);
	buf = malloc((size_t)WINDOW * size);
	mr = buf ? ibv_reg_mr(d.pd, buf, (size_t)WINDOW * size,
			      IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!cq || !mr || !t || !ah || !fd)
		ex_die("CQ or MR: %s", strerror(errno));
	dci = ex_dci(&d, o, cq, WINDOW, 0);
	qpx = ibv_qp_to_qp_ex(dci);
	mqp = rsdv_qp_ex_from_ibv_qp_ex(qpx);
	for (h = 0; h < nh; h++) {
		fd[h] = ex_tcp(o, hosts[h]);
		ex_recv(fd[h], &t[h], sizeof(t[h]));
		ah[h] = ex_ah(&d, o, &t[h].gid);
		ex_send(fd[h], &iters, sizeof(iters));
		printf("target %d: %s DCT %u\n", h, hosts[h], t[h].dctn);
	}
	t0 = ex_now();
	while (done < total) {
		struct ibv_wc wc[WINDOW];
		int n, k;

		while (posted < total && posted - done < WINDOW) {
			uint32_t seq = posted / nh, slot = posted % WINDOW;
			uint8_t *p = buf + (size_t)slot * size;

			h = posted % nh;
			for (j = 0; j < size; j++)
				p[j] = byte_of(seq, j);
			ibv_wr_start(qpx);
			qpx->wr_id = posted;
			qpx->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_send_imm(qpx, htonl(seq));
			rsdv_wr_set_dc_addr(mqp, ah[h], t[h].dctn, o->key);
			ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)p, size);
			if (ibv_wr_complete(qpx))
				ex_die("post: %s", strerror(errno));
			posted++;
		}
		n = ibv_poll_cq(cq, WINDOW, wc);
		if (n < 0)
			ex_die("ibv_poll_cq");
		for (k = 0; k < n; k++)
			if (wc[k].status)
				ex_die("message %" PRIu64 ": %s", wc[k].wr_id,
				       ibv_wc_status_str(wc[k].status));
		done += n;
	}
	dt = ex_now() - t0;
	for (h = 0; h < nh; h++) {
		struct result r;

		ex_recv(fd[h], &r, sizeof(r));
		printf("target %d (%s): %u received, %u bad\n", h, hosts[h],
		       r.received, r.bad);
		bad += r.bad + (r.received != iters);
		close(fd[h]);
	}
	printf("%u messages of %u bytes to %d targets through one DCI in %.3f s: %.0f msg/s, %.2f MB/s\n",
	       total, size, nh, dt, total / dt, total * (double)size / dt / 1e6);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", 1, NULL, 'p' }, { "ib-dev", 1, NULL, 'd' },
		{ "ib-port", 1, NULL, 'i' }, { "gid-idx", 1, NULL, 'g' },
		{ "size", 1, NULL, 's' }, { "iters", 1, NULL, 'n' },
		{ "key", 1, NULL, 'k' }, { "help", 0, NULL, 'h' }, { 0 }
	};
	struct ex_opts o = { NULL, 1, 1, 18520, 0x1234abcd };
	uint32_t size = 4096, iters = 1000;
	int c;

	while ((c = getopt_long(argc, argv, "p:d:i:g:s:n:k:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			o.tcp_port = atoi(optarg);
			break;
		case 'd':
			o.dev = optarg;
			break;
		case 'i':
			o.ib_port = atoi(optarg);
			break;
		case 'g':
			o.gid_index = atoi(optarg);
			break;
		case 's':
			size = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			iters = strtoul(optarg, NULL, 0);
			break;
		case 'k':
			o.key = strtoull(optarg, NULL, 0);
			break;
		case 'h':
			usage(argv[0]);
			return 0;
		default:
			usage(argv[0]);
			return 2;
		}
	}
	if (!size || !iters) {
		usage(argv[0]);
		return 2;
	}
	if (optind == argc)
		return server(&o, size);
	return client(&o, size, iters, argv + optind, argc - optind);
}
