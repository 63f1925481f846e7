/*
 * dma-buf memory regions (ibv_reg_dmabuf_mr), as ConnectX and efa have
 * them.  The server (VM 1, an adapter) makes two dma-bufs of memfds with
 * /dev/udmabuf and registers them: A, 64 KiB from offset 0, and B, a
 * range of three pages and 100 bytes from an odd offset into its second
 * page, each at an IOVA unrelated to its mapping.  The client RDMA-writes into both and reads back, reads what the
 * server wrote with the CPU, and SENDs into A (a receive buffer of the
 * server's); the server checks the bytes through its memfd mappings.
 * The client's own buffer is a dma-buf MR too unless it runs with
 * "-- ordinary" (soft-RoCE has no dma-buf MRs: it must refuse one).
 *
 * Checks: server: bad-fd, past-end, odp-refused (the registrations that
 * must fail, each with its errno), reg, rereg-refused, connect, recv,
 * memory, dereg (reg and dereg also count the devices attached to
 * dma-bufs: one per MR while registered, none left by a refusal or a
 * deregistration);
 * client: local-mr, connect, write-read, read, offset-write-read, dereg.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/udmabuf.h>

#include "rsv-common.h"

#define PG 4096
#define A_SIZE (64 * 1024)
#define PART (16 * 1024)	/* A: write | CPU-filled | receive | untouched */
#define B_SIZE (5 * PG)
#define B_OFF (PG + 0x123)
#define B_LEN (3 * PG + 100)
#define SEND_LEN 4096
/*
 * The server's MRs start at IOVAs of their own, not at their mappings'
 * addresses: the device goes by the MR's translation (same offset in
 * the page as the dma-buf offset).
 */
#define A_IOVA 0x10000000000ull
#define B_IOVA (0x20000000000ull + (B_OFF & (PG - 1)))
#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		IBV_ACCESS_REMOTE_READ)

struct dbuf {
	int memfd;
	int fd;			/* the dma-buf */
	uint8_t *map;		/* the memfd, for the CPU */
	size_t size;
};

/* A sealed memfd of size bytes, mapped, and a dma-buf of all of it. */
static const char *dbuf_make(struct dbuf *b, size_t size)
{
	struct udmabuf_create c = { 0 };
	int dev;

	b->size = size;
	b->memfd = memfd_create("rsv-dmabuf", MFD_ALLOW_SEALING);
	if (b->memfd < 0 || ftruncate(b->memfd, size))
		return "memfd_create / ftruncate failed";
	/* udmabuf takes only memfds that cannot shrink under it. */
	if (fcntl(b->memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		return "F_SEAL_SHRINK failed";
	b->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      b->memfd, 0);
	if (b->map == MAP_FAILED)
		return "mmap of the memfd failed";
	dev = open("/dev/udmabuf", O_RDWR);
	if (dev < 0)
		return "no /dev/udmabuf";
	c.memfd = b->memfd;
	c.flags = UDMABUF_FLAGS_CLOEXEC;
	c.offset = 0;
	c.size = size;
	b->fd = ioctl(dev, UDMABUF_CREATE, &c);
	close(dev);
	return b->fd < 0 ? "UDMABUF_CREATE failed" : NULL;
}

static void dbuf_free(struct dbuf *b)
{
	if (b->map && b->map != MAP_FAILED)
		munmap(b->map, b->size);
	if (b->fd > 0)
		close(b->fd);
	if (b->memfd > 0)
		close(b->memfd);
}

/*
 * Devices attached to all dma-bufs (debugfs dma_buf/bufinfo: "Total N
 * devices attached" per buffer): a registration attaches the adapter to
 * its dma-buf, a deregistration must detach it.  -1: unreadable.
 */
static int attached(void)
{
	FILE *f = fopen("/sys/kernel/debug/dma_buf/bufinfo", "r");
	char line[256];
	int n, sum = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Total %d devices attached", &n) == 1)
			sum += n;
	fclose(f);
	return sum;
}

/* A registration that must fail: ok if it did, with an errno. */
static void must_fail(const struct rsv_opts *o, const char *name,
		      struct ibv_mr *mr, int err, const char *what)
{
	rsv_check(o, name, !mr && err, "%s: %s (errno %d)", what,
		  mr ? "registered" : strerror(err), mr ? 0 : err);
	if (mr)
		ibv_dereg_mr(mr);
}

/* All-zero, or the offset of the first byte that is not. */
static long zero_at(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return i;
	return -1;
}

static void server(const struct rsv_opts *o, struct rsv_dev *d)
{
	struct rsv_peer_info me = { 0 }, peer;
	struct ibv_recv_wr rwr = { 0 }, *rbad;
	struct ibv_mr *mra = NULL, *mrb = NULL, *mr;
	struct dbuf a = { 0 }, b = { 0 };
	const char *why;
	struct ibv_sge sge;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	long bad[5];
	int fd, err, st, e1, e2, n0, n1, n2, n3;

	why = dbuf_make(&a, A_SIZE);
	if (!why)
		why = dbuf_make(&b, B_SIZE);
	if (why) {
		rsv_check(o, "reg", false, "%s: %s", why, strerror(errno));
		return;
	}

	/* Bad inputs first: each fails alone, the rest works after them. */
	n0 = attached();
	errno = 0;
	mr = ibv_reg_dmabuf_mr(d->pd, 0, PG, A_IOVA, a.memfd,
			       ACCESS);
	must_fail(o, "bad-fd", mr, errno, "a memfd's fd (not a dma-buf)");
	errno = 0;
	mr = ibv_reg_dmabuf_mr(d->pd, A_SIZE - PG, 2 * PG,
			       A_IOVA, a.fd, ACCESS);
	must_fail(o, "past-end", mr, errno,
		  "offset + length one page past the dma-buf's 64 KiB");
	errno = 0;
	mr = ibv_reg_dmabuf_mr(d->pd, 0, PG, A_IOVA, a.fd,
			       ACCESS | IBV_ACCESS_ON_DEMAND);
	must_fail(o, "odp-refused", mr, errno,
		  "IBV_ACCESS_ON_DEMAND on a pinned dma-buf");

	n1 = attached();
	errno = 0;
	mra = ibv_reg_dmabuf_mr(d->pd, 0, A_SIZE, A_IOVA, a.fd, ACCESS);
	e1 = errno;
	errno = 0;
	mrb = ibv_reg_dmabuf_mr(d->pd, B_OFF, B_LEN, B_IOVA, b.fd, ACCESS);
	e2 = errno;
	n2 = attached();
	rsv_check(o, "reg", mra && mrb && n0 >= 0 && n1 == n0 && n2 == n0 + 2,
		  "A 64 KiB at offset 0: %s; B %d bytes at offset %#x: %s; devices attached to dma-bufs: %d before, %d after the refused ones, %d after these",
		  mra ? "key registered" : strerror(e1), B_LEN, B_OFF,
		  mrb ? "key registered" : strerror(e2), n0, n1, n2);
	if (!mra || !mrb)
		return;
	/*
	 * libibverbs re-registers only ordinary MRs (EINVAL), the driver
	 * none of dma-buf; the MR stays as it was: the traffic below uses it.
	 */
	errno = 0;
	st = ibv_rereg_mr(mra, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			  IBV_ACCESS_LOCAL_WRITE);
	e1 = errno;
	rsv_check(o, "rereg-refused", st && e1,
		  "ibv_rereg_mr of the dma-buf MR's access: %d, %s", st,
		  strerror(e1));

	cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
	if (!cq)
		rsv_die("ibv_create_cq failed");
	qp = rsv_rc_qp(d, cq, NULL, 8);
	/* What the client reads: written with the CPU, through the memfd. */
	rsv_fill(a.map + PART, PART, 13);
	rsv_info(d, qp, 0x2001, &me);
	me.addr = A_IOVA;
	me.rkey = mra->rkey;
	me.len = A_SIZE;
	me.extra[0] = (uint32_t)B_IOVA;
	me.extra[1] = (uint32_t)(B_IOVA >> 32);
	me.extra[2] = mrb->rkey;
	me.extra[3] = B_LEN;
	fd = rsv_oob(o);
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");
	err = rsv_rc_connect(d, qp, ACCESS, me.psn, &peer);
	/* The SEND lands in A's third part, through A's lkey. */
	sge = (struct ibv_sge){ A_IOVA + 2 * PART, PART, mra->lkey };
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	if (!err && ibv_post_recv(qp, &rwr, &rbad))
		rsv_die("ibv_post_recv failed");
	rsv_check(o, "connect", !err, "%s qpn %u to qpn %u: %s", d->name,
		  me.qpn, peer.qpn, err ? strerror(err) : "RTS");
	if (err || !rsv_sync(fd))
		return;

	st = rsv_poll(cq, &wc, o->timeout * 1000);
	bad[0] = st == 1 && !wc.status ?
		rsv_verify(a.map + 2 * PART, SEND_LEN, 14) : -2;
	rsv_check(o, "recv", bad[0] == -1 && wc.byte_len == SEND_LEN,
		  "receive into the dma-buf MR: %s, %u bytes; first difference in the memfd %ld",
		  st == 1 ? ibv_wc_status_str(wc.status) : "timed out",
		  st == 1 ? wc.byte_len : 0, bad[0]);
	/* The client's WRITEs completed before it got here. */
	rsv_sync(fd);
	bad[0] = rsv_verify(a.map, PART, 11);
	bad[1] = zero_at(a.map + 2 * PART + SEND_LEN,
			 A_SIZE - 2 * PART - SEND_LEN);
	bad[2] = rsv_verify(b.map + B_OFF, B_LEN, 12);
	bad[3] = zero_at(b.map, B_OFF);
	bad[4] = zero_at(b.map + B_OFF + B_LEN, B_SIZE - B_OFF - B_LEN);
	rsv_check(o, "memory",
		  bad[0] < 0 && bad[1] < 0 && bad[2] < 0 && bad[3] < 0 &&
		  bad[4] < 0,
		  "through the memfd mappings, first difference: A written %ld, A untouched %ld; B written %ld, before B %ld, after B %ld",
		  bad[0], bad[1], bad[2], bad[3], bad[4]);
	rsv_sync(fd);
	close(fd);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	e1 = ibv_dereg_mr(mra);
	e2 = ibv_dereg_mr(mrb);
	n3 = attached();
	rsv_check(o, "dereg", !e1 && !e2 && n3 == n0,
		  "A: %s, B: %s; devices attached to dma-bufs: %d (%d before)",
		  strerror(e1), strerror(e2), n3, n0);
	dbuf_free(&a);
	dbuf_free(&b);
}

static void client(const struct rsv_opts *o, struct rsv_dev *d,
		   bool ordinary)
{
	struct rsv_peer_info me = { 0 }, peer;
	struct ibv_send_wr wr = { 0 };
	struct dbuf l = { 0 };
	struct ibv_sge sge;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	const char *why;
	uint64_t b_iova;
	uint8_t *buf;
	long bad;
	int fd, err, st;

	why = dbuf_make(&l, A_SIZE);
	if (why)
		rsv_die("%s: %s", why, strerror(errno));
	errno = 0;
	mr = ibv_reg_dmabuf_mr(d->pd, 0, A_SIZE, (uintptr_t)l.map, l.fd,
			       ACCESS);
	err = errno;
	if (ordinary) {
		/* soft-RoCE: refused, then an ordinary MR of the mapping */
		rsv_check(o, "local-mr", !mr && err,
			  "ibv_reg_dmabuf_mr %s (errno %d); an ordinary MR instead",
			  mr ? "registered" : strerror(err), err);
		if (mr)
			ibv_dereg_mr(mr);
		mr = ibv_reg_mr(d->pd, l.map, A_SIZE, ACCESS);
		if (!mr)
			rsv_die("ibv_reg_mr failed");
	} else {
		rsv_check(o, "local-mr", mr, "ibv_reg_dmabuf_mr of 64 KiB: %s",
			  mr ? "key registered" : strerror(err));
		if (!mr)
			return;
	}
	buf = l.map;

	cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
	if (!cq)
		rsv_die("ibv_create_cq failed");
	qp = rsv_rc_qp(d, cq, NULL, 8);
	rsv_info(d, qp, 0x2000, &me);
	fd = rsv_oob(o);
	if (!rsv_xchg(fd, &me, &peer, sizeof(me)))
		rsv_die("out-of-band exchange failed");
	b_iova = peer.extra[0] | (uint64_t)peer.extra[1] << 32;
	err = rsv_rc_connect(d, qp, ACCESS, me.psn, &peer);
	rsv_check(o, "connect", !err, "%s qpn %u to qpn %u: %s", d->name,
		  me.qpn, peer.qpn, err ? strerror(err) : "RTS");
	if (err || !rsv_sync(fd))
		return;

	wr.sg_list = &sge;
	wr.num_sge = 1;
	/* WRITE A's first part from buf[0..), READ it back to buf[PART..) */
	rsv_fill(buf, PART, 11);
	sge = (struct ibv_sge){ (uintptr_t)buf, PART, mr->lkey };
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = peer.addr;
	wr.wr.rdma.rkey = peer.rkey;
	st = rsv_post_wait(qp, cq, &wr, o->timeout * 1000);
	sge.addr = (uintptr_t)(buf + PART);
	wr.opcode = IBV_WR_RDMA_READ;
	if (!st)
		st = rsv_post_wait(qp, cq, &wr, o->timeout * 1000);
	bad = st ? -2 : rsv_verify(buf + PART, PART, 11);
	rsv_check(o, "write-read", !st && bad < 0,
		  "%d bytes written into the dma-buf MR and read back: status %d, first difference %ld",
		  PART, st, bad);

	/* READ what the server's CPU wrote into A's second part. */
	memset(buf + PART, 0, PART);
	wr.wr.rdma.remote_addr = peer.addr + PART;
	st = rsv_post_wait(qp, cq, &wr, o->timeout * 1000);
	bad = st ? -2 : rsv_verify(buf + PART, PART, 13);
	rsv_check(o, "read", !st && bad < 0,
		  "%d bytes the peer wrote through its memfd, read: status %d, first difference %ld",
		  PART, st, bad);

	/* B: the odd offset into a multi-page dma-buf, all of it. */
	rsv_fill(buf + 2 * PART, B_LEN, 12);
	memset(buf + 3 * PART, 0, B_LEN);
	sge = (struct ibv_sge){ (uintptr_t)(buf + 2 * PART), B_LEN, mr->lkey };
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = b_iova;
	wr.wr.rdma.rkey = peer.extra[2];
	st = rsv_post_wait(qp, cq, &wr, o->timeout * 1000);
	sge.addr = (uintptr_t)(buf + 3 * PART);
	wr.opcode = IBV_WR_RDMA_READ;
	if (!st)
		st = rsv_post_wait(qp, cq, &wr, o->timeout * 1000);
	bad = st ? -2 : rsv_verify(buf + 3 * PART, B_LEN, 12);
	rsv_check(o, "offset-write-read", !st && bad < 0,
		  "%u bytes at offset %#x of a %d-byte dma-buf, written and read back: status %d, first difference %ld",
		  peer.extra[3], B_OFF, B_SIZE, st, bad);

	rsv_fill(buf, SEND_LEN, 14);
	sge = (struct ibv_sge){ (uintptr_t)buf, SEND_LEN, mr->lkey };
	wr.opcode = IBV_WR_SEND;
	st = rsv_post_wait(qp, cq, &wr, o->timeout * 1000);
	if (st)
		fprintf(stderr, "rsv: SEND status %d\n", st);
	rsv_sync(fd);
	rsv_sync(fd);
	close(fd);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	err = ibv_dereg_mr(mr);
	rsv_check(o, "dereg", !err, "%s MR: %s",
		  ordinary ? "ordinary" : "dma-buf", strerror(err));
	dbuf_free(&l);
}

int main(int argc, char **argv)
{
	struct rsv_opts o;
	struct rsv_dev d;

	rsv_parse(&o, argc, argv);
	rsv_open(&o, &d);
	if (o.server)
		client(&o, &d, o.argc > 0 && !strcmp(o.argv[0], "ordinary"));
	else
		server(&o, &d);
	rsv_close(&d);
	return rsv_exit_status();
}
