// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rsdv_strided_write: write one column of a remote matrix with one RDMA
 * WRITE through a pattern memory key (rsessiondv.h).  See usage() or -h.
 */
#include <getopt.h>
#include <inttypes.h>

#include "rsdv-example.h"

static void usage(const char *argv0)
{
	printf("Usage: %s [options]        own a matrix and wait (server)\n"
	       "       %s [options] HOST   write a column of HOST's matrix\n"
	       "\n"
	       "The server fills a ROWS x ROW_BYTES matrix with known bytes and makes a\n"
	       "pattern key over column COL (rsdv_create_mkey with\n"
	       "RSDV_MKEY_INIT_ATTR_FLAGS_PATTERN, then rsdv_wr_mr_interleaved on a\n"
	       "DCI of its own: ELEM bytes every ROW_BYTES, ROWS times), and a DC\n"
	       "target.  The key's zero-based address space is the column, packed:\n"
	       "the client writes ROWS * ELEM contiguous bytes at key offset 0 with\n"
	       "ONE RDMA WRITE and reads them back; the server then checks that the\n"
	       "column holds them and that no other byte of the matrix changed.\n"
	       "\n"
	       "Options:\n"
	       "  -p, --port=PORT      TCP port of the exchange (default 18521)\n"
	       "  -d, --ib-dev=DEV     RDMA device (default: the first)\n"
	       "  -i, --ib-port=PORT   port of the device (default 1)\n"
	       "  -g, --gid-idx=IDX    local GID index (default 1, the IPv4 RoCEv2 GID)\n"
	       "  -r, --rows=ROWS      rows (default 64)\n"
	       "  -w, --row=BYTES      bytes per row (default 512)\n"
	       "  -e, --elem=BYTES     bytes per element (default 8)\n"
	       "  -c, --col=COL        the column, in elements (default 3)\n"
	       "  -k, --key=KEY        DC access key (default 0x1234abcd)\n"
	       "  -h, --help           this text\n"
	       "\n"
	       "Exit status: 0 if the column was written and nothing else was.\n",
	       argv0, argv0);
}

struct geom {
	uint32_t rows, row, elem, col;
};

static uint8_t mat_byte(size_t i)
{
	return (uint8_t)(0x5a ^ i ^ (i >> 8));
}

static uint8_t col_byte(size_t i)
{
	return (uint8_t)(0xc3 + 13 * i);
}

static int server(const struct ex_opts *o, const struct geom *g)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1, .max_sge = 1 } };
	size_t msz = (size_t)g->rows * g->row, i;
	struct rsdv_mkey_init_attr ka = { 0 };
	struct rsdv_mr_interleaved il;
	struct ex_info me = { 0 };
	struct ibv_cq *cq, *lcq;
	struct ibv_qp *dct, *reg;
	struct ibv_qp_ex *qpx;
	struct rsdv_mkey *mkey;
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	struct ex_dev d;
	uint32_t bad_col = 0, bad_rest = 0, r, done;
	uint8_t *m;
	int fd;

	ex_open(o, &d, RSDV_CONTEXT_FLAGS_DC | RSDV_CONTEXT_FLAGS_PATTERN_MKEY);
	m = aligned_alloc(4096, (msz + 4095) & ~(size_t)4095);
	if (!m)
		ex_die("no memory");
	for (i = 0; i < msz; i++)
		m[i] = mat_byte(i);
	mr = ibv_reg_mr(d.pd, m, msz, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	cq = ibv_create_cq(d.ctx, 4, NULL, NULL, 0);
	lcq = ibv_create_cq(d.ctx, 4, NULL, NULL, 0);
	srq = ibv_create_srq(d.pd, &sa);
	if (!mr || !cq || !lcq || !srq)
		ex_die("MR, CQ or SRQ: %s", strerror(errno));

	/* The pattern key, filled by a work request on a local DCI. */
	ka.pd = d.pd;
	ka.create_flags = RSDV_MKEY_INIT_ATTR_FLAGS_PATTERN;
	ka.max_entries = 1;
	mkey = rsdv_create_mkey(&ka);
	if (!mkey)
		ex_die("rsdv_create_mkey: %s", strerror(errno));
	reg = ex_dci(&d, o, lcq, 4, RSDV_QP_EX_WITH_MR_INTERLEAVED);
	il.addr = (uintptr_t)m + (uint64_t)g->col * g->elem;
	il.bytes_count = g->elem;
	il.bytes_skip = g->row - g->elem;
	il.lkey = mr->lkey;
	qpx = ibv_qp_to_qp_ex(reg);
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	rsdv_wr_mr_interleaved(rsdv_qp_ex_from_ibv_qp_ex(qpx), mkey,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ, g->rows, 1, &il);
	if (ibv_wr_complete(qpx))
		ex_die("rsdv_wr_mr_interleaved: %s", strerror(errno));
	ex_wait(lcq, 1, "pattern key registration");

	dct = ex_dct(&d, o, cq, srq);
	me.dctn = dct->qp_num;
	me.key = o->key;
	me.gid = d.gid;
	me.rkey = mkey->rkey;
	me.addr = 0;			/* zero-based */
	me.len = (uint64_t)g->rows * g->elem;
	printf("matrix %u x %u bytes, column %u (%u bytes): pattern key %#x of %" PRIu64 " bytes, DCT %u\n",
	       g->rows, g->row, g->col, g->elem, mkey->rkey, me.len, me.dctn);
	fd = ex_tcp(o, NULL);
	ex_send(fd, &me, sizeof(me));
	ex_recv(fd, &done, sizeof(done));
	for (r = 0; r < g->rows; r++) {
		for (i = 0; i < g->row; i++) {
			size_t at = (size_t)r * g->row + i;
			bool in_col = i >= (size_t)g->col * g->elem &&
				      i < (size_t)(g->col + 1) * g->elem;
			uint8_t want = in_col ?
				col_byte((size_t)r * g->elem + i - g->col * g->elem) :
				mat_byte(at);

			if (m[at] != want) {
				if (in_col)
					bad_col++;
				else
					bad_rest++;
			}
		}
	}
	printf("column: %u bytes wrong; rest of the matrix: %u bytes changed\n",
	       bad_col, bad_rest);
	ex_send(fd, &bad_col, sizeof(bad_col));
	ex_send(fd, &bad_rest, sizeof(bad_rest));
	close(fd);
	ibv_destroy_qp(dct);
	ibv_destroy_qp(reg);
	rsdv_destroy_mkey(mkey);
	return bad_col || bad_rest ? 1 : 0;
}

static int client(const struct ex_opts *o, const char *host)
{
	struct ex_info t;
	struct ex_dev d;
	struct ibv_cq *cq;
	struct ibv_qp *dci;
	struct ibv_qp_ex *qpx;
	struct rsdv_qp_ex *mqp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	uint32_t done = 1, bad_col, bad_rest;
	uint8_t *buf;
	size_t i;
	int fd, pass;

	ex_open(o, &d, RSDV_CONTEXT_FLAGS_DC);
	cq = ibv_create_cq(d.ctx, 4, NULL, NULL, 0);
	fd = ex_tcp(o, host);
	ex_recv(fd, &t, sizeof(t));
	buf = malloc(2 * t.len);
	mr = buf ? ibv_reg_mr(d.pd, buf, 2 * t.len,
			      IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!cq || !mr)
		ex_die("CQ or MR: %s", strerror(errno));
	for (i = 0; i < t.len; i++)
		buf[i] = col_byte(i);
	memset(buf + t.len, 0, t.len);
	dci = ex_dci(&d, o, cq, 4, 0);
	ah = ex_ah(&d, o, &t.gid);
	qpx = ibv_qp_to_qp_ex(dci);
	mqp = rsdv_qp_ex_from_ibv_qp_ex(qpx);
	for (pass = 0; pass < 2; pass++) {
		ibv_wr_start(qpx);
		qpx->wr_id = pass;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		if (!pass)
			ibv_wr_rdma_write(qpx, t.rkey, 0);
		else
			ibv_wr_rdma_read(qpx, t.rkey, 0);
		rsdv_wr_set_dc_addr(mqp, ah, t.dctn, o->key);
		ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf + pass * t.len,
			       t.len);
		if (ibv_wr_complete(qpx))
			ex_die("post: %s", strerror(errno));
		ex_wait(cq, 1, pass ? "READ of the column" :
			"WRITE of the column");
	}
	printf("wrote %" PRIu64 " bytes through pattern key %#x of DCT %u; read back: %s\n",
	       t.len, t.rkey, t.dctn,
	       memcmp(buf, buf + t.len, t.len) ? "DIFFERENT" : "the same");
	ex_send(fd, &done, sizeof(done));
	ex_recv(fd, &bad_col, sizeof(bad_col));
	ex_recv(fd, &bad_rest, sizeof(bad_rest));
	printf("server: column %u bytes wrong, rest %u bytes changed\n",
	       bad_col, bad_rest);
	return bad_col || bad_rest || memcmp(buf, buf + t.len, t.len);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", 1, NULL, 'p' }, { "ib-dev", 1, NULL, 'd' },
		{ "ib-port", 1, NULL, 'i' }, { "gid-idx", 1, NULL, 'g' },
		{ "rows", 1, NULL, 'r' }, { "row", 1, NULL, 'w' },
		{ "elem", 1, NULL, 'e' }, { "col", 1, NULL, 'c' },
		{ "key", 1, NULL, 'k' }, { "help", 0, NULL, 'h' }, { 0 }
	};
	struct ex_opts o = { NULL, 1, 1, 18521, 0x1234abcd };
	struct geom g = { 64, 512, 8, 3 };
	int c;

	while ((c = getopt_long(argc, argv, "p:d:i:g:r:w:e:c:k:h", lo,
				NULL)) != -1) {
		if (ex_opt(&o, c, optarg))
			continue;
		switch (c) {
		case 'r':
			g.rows = strtoul(optarg, NULL, 0);
			break;
		case 'w':
			g.row = strtoul(optarg, NULL, 0);
			break;
		case 'e':
			g.elem = strtoul(optarg, NULL, 0);
			break;
		case 'c':
			g.col = strtoul(optarg, NULL, 0);
			break;
		case 'h':
			usage(argv[0]);
			return 0;
		default:
			usage(argv[0]);
			return 2;
		}
	}
	if (!g.rows || !g.elem || g.row < g.elem ||
	    (uint64_t)(g.col + 1) * g.elem > g.row) {
		usage(argv[0]);
		return 2;
	}
	if (optind == argc)
		return server(&o, &g);
	return client(&o, argv[optind]);
}
