// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rsdv_dc_bw: one DC initiator sending to DC targets on several hosts
 * (rsessiondv.h).  See usage() or -h.
 */
#include <getopt.h>
#include <inttypes.h>
#include <sys/select.h>

#include "rsdv-example.h"

#define WINDOW 32

static void usage(const char *argv0)
{
	printf("Usage: %s [options]                  start a DC target (server)\n"
	       "       %s [options] HOST [HOST...]   one DCI sending to the targets on HOSTs\n"
	       "\n"
	       "Sends messages of -s bytes to each target through ONE dynamically\n"
	       "connected initiator (DCI), round robin: every message names another\n"
	       "target (rsdv_wr_set_dc_addr), so the adapter connects anew for each\n"
	       "(a DC CONNECT packet carrying the target's key).  Each message is a\n"
	       "SEND with immediate data (its number at that target, counting from\n"
	       "0); its bytes derive from that number, and the target checks every\n"
	       "byte and that the numbers arrive in order, without gaps.  The\n"
	       "targets exchange their DCT number, key and GID over TCP (like\n"
	       "ibv_rc_pingpong) and report what they received; the initiator prints\n"
	       "messages/s and MB/s, each target what it received and how fast.\n"
	       "\n"
	       "The initiator sends -n messages per target, or with -D for SECONDS\n"
	       "(like perftest's -D): it stops posting when the time is up, waits\n"
	       "for the completions of what it posted and then tells each target\n"
	       "over TCP how many messages it sent there; the target waits for all\n"
	       "of them (up to 60 s without progress) before it reports.  A target\n"
	       "learns the mode and the count from its initiator: -n and -D only\n"
	       "matter on the initiator.\n"
	       "\n"
	       "Options:\n"
	       "  -p, --port=PORT      TCP port of the exchange (default 18520)\n"
	       "  -d, --ib-dev=DEV     RDMA device (default: the first)\n"
	       "  -i, --ib-port=PORT   port of the device (default 1)\n"
	       "  -g, --gid-idx=IDX    local GID index (default 1, the IPv4 RoCEv2 GID)\n"
	       "  -s, --size=SIZE      message size (default 4096)\n"
	       "  -n, --iters=ITERS    messages per target (default 1000)\n"
	       "  -D, --duration=SECONDS\n"
	       "                       send for SECONDS instead of -n messages (not\n"
	       "                       with -n)\n"
	       "  -k, --key=KEY        the target's DC access key (default 0x1234abcd);\n"
	       "                       an initiator given another key than its target's\n"
	       "                       sees IBV_WC_REM_ACCESS_ERR\n"
	       "  -h, --help           this text\n"
	       "\n"
	       "Output: the initiator ends with\n"
	       "  N messages of SIZE bytes to T targets through one DCI in S s: R msg/s, B MB/s\n"
	       "and a target with\n"
	       "  received N messages of SIZE bytes from the DCI at ADDR in S s: R msg/s, B MB/s, K bad\n"
	       "(S from its first message to its last).  Anything missing, out of\n"
	       "order or wrong is reported on a line starting with \"error:\".\n"
	       "\n"
	       "Exit status: 0 if every message arrived intact and in order at every\n"
	       "target (on a target: every message its initiator sent there), 1 if\n"
	       "not or on a failure, 2 on a usage error.\n",
	       argv0, argv0);
}

static uint8_t byte_of(uint32_t seq, uint32_t j)
{
	return (uint8_t)(seq * 31u + j * 7u + (seq >> 8));
}

/*
 * The TCP exchange: the target sends its struct ex_info; the initiator
 * sends the number of messages it will send (ITERS), or 0 with -D and,
 * when it has its last completion, the number it sent; the target answers
 * with a struct result.
 */
struct result {
	uint32_t received;
	uint32_t bad;
};

/* How long a target waits for the messages its initiator says it sent. */
#define DRAIN_SECONDS 60

/* 1 if fd has something to read (data, or the end of the stream). */
static int readable(int fd)
{
	struct timeval tv = { 0, 0 };
	fd_set s;

	FD_ZERO(&s);
	FD_SET(fd, &s);
	return select(fd + 1, &s, NULL, NULL, &tv) > 0;
}

static int server(const struct ex_opts *o, uint32_t size)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 2 * WINDOW,
						  .max_sge = 1 } };
	struct ex_dev d;
	struct ex_info me = { 0 };
	struct result res = { 0, 0 };
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	char from[INET_ADDRSTRLEN] = "?";
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *dct;
	struct ibv_mr *mr;
	uint32_t total, i, j, seq, nbad = 0;
	double t_first = 0, t_last = 0, next_check = 0, deadline = 0, dt;
	int known, fd;
	uint8_t *buf;

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
	fflush(stdout);
	fd = ex_tcp(o, NULL);
	if (!getpeername(fd, (struct sockaddr *)&peer, &plen))
		inet_ntop(AF_INET, &peer.sin_addr, from, sizeof(from));
	ex_send(fd, &me, sizeof(me));
	ex_recv(fd, &total, sizeof(total));
	/* 0: a run of -D seconds, whose count comes at its end. */
	known = total != 0;
	while (!known || res.received < total) {
		struct ibv_wc wc;
		int r = ibv_poll_cq(cq, 1, &wc);
		double now;

		if (r < 0)
			ex_die("ibv_poll_cq");
		if (!r) {
			/*
			 * Idle: every 50 ms look at the TCP stream, which
			 * brings the count at the end of a -D run, and ends
			 * if the initiator died (it sends nothing else before
			 * our result); once a -D run's count is known, give
			 * up after DRAIN_SECONDS without a message.
			 */
			now = ex_now();
			if (now < next_check)
				continue;
			next_check = now + 0.05;
			if (deadline > 0) {
				if (now > deadline)
					break;
				continue;
			}
			if (!readable(fd))
				continue;
			if (known || recv(fd, &total, sizeof(total),
					  MSG_PEEK) <= 0)
				ex_die("TCP: the initiator is gone after %u messages",
				       res.received);
			ex_recv(fd, &total, sizeof(total));
			known = 1;
			deadline = now + DRAIN_SECONDS;
			continue;
		}
		t_last = ex_now();
		if (!res.received)
			t_first = t_last;
		if (deadline > 0)
			deadline = t_last + DRAIN_SECONDS;
		seq = ntohl(wc.imm_data);
		if (wc.status || !(wc.wc_flags & IBV_WC_WITH_IMM) ||
		    wc.byte_len != size || seq != res.received) {
			if (!nbad++)
				fprintf(stderr, "error: message %u: status %s, %s, %u bytes, number %u\n",
					res.received,
					ibv_wc_status_str(wc.status),
					wc.wc_flags & IBV_WC_WITH_IMM ?
					"immediate" : "no immediate",
					wc.byte_len, seq);
			res.bad++;
		} else {
			uint8_t *p = buf + wc.wr_id * size;

			for (j = 0; j < size; j++)
				if (p[j] != byte_of(seq, j)) {
					if (!nbad++)
						fprintf(stderr, "error: message %u: byte %u is %#x, not %#x\n",
							seq, j, p[j],
							byte_of(seq, j));
					res.bad++;
					break;
				}
		}
		res.received++;
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
	dt = t_last - t_first;
	printf("received %u messages of %u bytes from the DCI at %s in %.3f s: %.0f msg/s, %.2f MB/s, %u bad\n",
	       res.received, size, from, dt, dt > 0 ? res.received / dt : 0,
	       dt > 0 ? res.received * (double)size / dt / 1e6 : 0, res.bad);
	if (res.received < total)
		fprintf(stderr, "error: %u of the %u messages sent never arrived (nothing for %d s)\n",
			total - res.received, total, DRAIN_SECONDS);
	close(fd);
	return res.bad || res.received != total ? 1 : 0;
}

static int client(const struct ex_opts *o, uint32_t size, uint32_t iters,
		  double duration, char **hosts, int nh)
{
	struct ex_dev d;
	struct ex_info *t = calloc(nh, sizeof(*t));
	struct ibv_ah **ah = calloc(nh, sizeof(*ah));
	uint32_t *sent = calloc(nh, sizeof(*sent));
	int *fd = calloc(nh, sizeof(*fd));
	/* -D: no bound but the time (and the 32-bit message numbers). */
	uint64_t total = duration > 0 ? UINT32_MAX : (uint64_t)iters * nh;
	uint64_t posted = 0, done = 0;
	uint32_t bad = 0, start, j;
	struct ibv_qp_ex *qpx;
	struct rsdv_qp_ex *mqp;
	struct ibv_cq *cq;
	struct ibv_qp *dci;
	struct ibv_mr *mr;
	uint8_t *buf;
	double t0, end, dt;
	int h;

	ex_open(o, &d, RSDV_CONTEXT_FLAGS_DC);
	cq = ibv_create_cq(d.ctx, 2 * WINDOW, NULL, NULL, 0);
	buf = malloc((size_t)WINDOW * size);
	mr = buf ? ibv_reg_mr(d.pd, buf, (size_t)WINDOW * size,
			      IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!cq || !mr || !t || !ah || !fd || !sent)
		ex_die("CQ or MR: %s", strerror(errno));
	dci = ex_dci(&d, o, cq, WINDOW, 0);
	qpx = ibv_qp_to_qp_ex(dci);
	mqp = rsdv_qp_ex_from_ibv_qp_ex(qpx);
	/* What the targets are told first: ITERS, or 0 for -D. */
	start = duration > 0 ? 0 : iters;
	for (h = 0; h < nh; h++) {
		fd[h] = ex_tcp(o, hosts[h]);
		ex_recv(fd[h], &t[h], sizeof(t[h]));
		ah[h] = ex_ah(&d, o, &t[h].gid);
		ex_send(fd[h], &start, sizeof(start));
		printf("target %d: %s DCT %u\n", h, hosts[h], t[h].dctn);
	}
	fflush(stdout);
	t0 = ex_now();
	end = t0 + duration;
	while (done < posted || posted < total) {
		struct ibv_wc wc[WINDOW];
		int n, k;

		if (duration > 0 && posted < total && ex_now() >= end)
			total = posted;
		while (posted < total && posted - done < WINDOW) {
			uint32_t slot = posted % WINDOW, seq;
			uint8_t *p = buf + (size_t)slot * size;

			h = posted % nh;
			seq = sent[h];
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
			sent[h]++;
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

		/* -D: now the count (every message sent there completed). */
		if (duration > 0)
			ex_send(fd[h], &sent[h], sizeof(sent[h]));
		ex_recv(fd[h], &r, sizeof(r));
		printf("target %d (%s): %u sent, %u received, %u bad\n", h,
		       hosts[h], sent[h], r.received, r.bad);
		if (r.bad || r.received != sent[h]) {
			fprintf(stderr, "error: target %d (%s): %u of %u messages missing, %u bad\n",
				h, hosts[h], sent[h] - r.received, sent[h],
				r.bad);
			bad++;
		}
		close(fd[h]);
	}
	printf("%" PRIu64 " messages of %u bytes to %d targets through one DCI in %.3f s: %.0f msg/s, %.2f MB/s\n",
	       posted, size, nh, dt, posted / dt, posted * (double)size / dt / 1e6);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", 1, NULL, 'p' }, { "ib-dev", 1, NULL, 'd' },
		{ "ib-port", 1, NULL, 'i' }, { "gid-idx", 1, NULL, 'g' },
		{ "size", 1, NULL, 's' }, { "iters", 1, NULL, 'n' },
		{ "duration", 1, NULL, 'D' }, { "key", 1, NULL, 'k' },
		{ "help", 0, NULL, 'h' }, { 0 }
	};
	struct ex_opts o = { NULL, 1, 1, 18520, 0x1234abcd };
	uint32_t size = 4096, iters = 1000;
	double duration = 0;
	int c, have_n = 0;
	char *e;

	while ((c = getopt_long(argc, argv, "p:d:i:g:s:n:D:k:h", lo, NULL)) != -1) {
		if (ex_opt(&o, c, optarg))
			continue;
		switch (c) {
		case 's':
			size = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			iters = strtoul(optarg, NULL, 0);
			have_n = 1;
			break;
		case 'D':
			duration = strtod(optarg, &e);
			if (*e || !(duration > 0)) {
				fprintf(stderr, "-D wants a number of seconds above 0\n");
				return 2;
			}
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
	if (have_n && duration > 0) {
		fprintf(stderr, "-n and -D exclude each other\n");
		return 2;
	}
	if (optind == argc)
		return server(&o, size);
	return client(&o, size, iters, duration, argv + optind, argc - optind);
}
