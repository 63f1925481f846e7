/*
 * The limits of on-demand paging in the guest driver, on one VM:
 * ibv_advise_mr over an implicit ODP MR cannot make the kernel keep
 * memory without bound, and advise_mr finds an ODP MR by its lkey in
 * every network identity.
 *
 * An implicit ODP MR's driver keeps a child (an ib_umem_odp of 64 MiB
 * with its page arrays, about 256 KiB of kernel memory) per 64 MiB block
 * of the address space it resolved pages in.  The driver creates one only
 * for an address in a readable mapping, holds at most odp_children
 * (module parameter, default 64) per MR, and frees a child that maps
 * nothing: the one whose fault failed, and the one an invalidation
 * emptied.  Steps, each a check (prefix -n):
 *
 *  - advise-netid: an explicit ODP MR registered in network identity 1
 *    (RSESSION_NETID=ADDRESS, after an MR of identity 0 took a key slot,
 *    so that its lkey is not its admin handle) is prefetched with
 *    PREFETCH_WRITE and IB_UVERBS_ADVISE_MR_FLAG_FLUSH: success, and the
 *    device's odp_resolved_pages grows by its pages;
 *    advise-other-identity: its lkey through identity 0's PD: EINVAL.
 *  - unmapped-no-child: PREFETCH_WRITE (FLUSH) of one page in each of
 *    odp_children + 8 blocks of a PROT_NONE reservation and in 8
 *    unmapped blocks: every call fails and no child is kept;
 *    unmapped-memory: the kernel's unreclaimable slab + vmalloc memory
 *    grows by less than 2 MiB over those calls.
 *  - cap: one read-write page in each of the odp_children + 8 blocks,
 *    prefetched: the first odp_children succeed, the rest fail with
 *    ENOSPC; cap-memory: the memory grows by at most 320 KiB per child.
 *  - reap-invalidated: the pages of 8 of those blocks unmapped: their
 *    children are freed (within 5 s).
 *  - fault-fail-reaped: PREFETCH_WRITE of a read-only page in a new
 *    block: fails, and the child it created is freed.
 *  - reap-reuse: the 8 refused blocks again: all succeed now.
 *  - dereg-frees: after ibv_dereg_mr every child of the MR is freed.
 *
 * The children are counted by the driver's hw_counters
 * odp_implicit_children (created), odp_implicit_children_freed and
 * odp_implicit_children_refused (what `rdma statistic` shows); a driver
 * without the last two frees none.
 *
 * Usage: rsv-odplim [common options] -- SECOND_IPV4_ADDRESS
 *   SECOND_IPV4_ADDRESS: an address of the adapter's interface in
 *   network identity 1.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rsv-common.h"

#define PAGE		4096ul
#define BLOCK		(64ul << 20)	/* the driver's child size */
#define EXTRA		8		/* blocks past the cap */
#define NETID_LEN	(64ul << 10)
#define DEFAULT_CAP	64

static struct rsv_opts o;
static const char *dev_name;

struct kids {
	int64_t created, freed, refused;
};

static void kids(struct kids *k)
{
	k->created = rsv_hw_counter(dev_name, "odp_implicit_children");
	k->freed = rsv_hw_counter(dev_name, "odp_implicit_children_freed");
	k->refused = rsv_hw_counter(dev_name, "odp_implicit_children_refused");
	/* A driver that does not count them frees and refuses none. */
	if (k->freed < 0)
		k->freed = 0;
	if (k->refused < 0)
		k->refused = 0;
}

static int64_t live(const struct kids *k)
{
	return k->created - k->freed;
}

/* The kernel's unreclaimable slab plus vmalloc memory, KiB. */
static long kmem_kib(void)
{
	char line[128];
	long v, sum = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "SUnreclaim: %ld", &v) == 1 ||
		    sscanf(line, "VmallocUsed: %ld", &v) == 1)
			sum += v;
	}
	fclose(f);
	return sum;
}

/* ibv_advise_mr with FLUSH on [addr, addr + len): 0 or an errno. */
static int advise(struct ibv_pd *pd, uint32_t lkey, uintptr_t addr,
		  uint32_t len, enum ibv_advise_mr_advice advice)
{
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	int ret;

	errno = 0;
	ret = ibv_advise_mr(pd, advice, IB_UVERBS_ADVISE_MR_FLAG_FLUSH, &sge,
			    1);
	if (!ret)
		return 0;
	return ret > 0 ? ret : (errno ? errno : EIO);
}

/*
 * PREFETCH_WRITE of the first page of blocks [from, to) but block skip
 * (base: block 0): how many succeeded, *first_err the first error or 0.
 */
static unsigned int prefetch_blocks(struct ibv_pd *pd, uint32_t lkey,
				    uintptr_t base, unsigned int from,
				    unsigned int to, unsigned int skip,
				    int *first_err)
{
	unsigned int i, ok = 0;
	int err;

	*first_err = 0;
	for (i = from; i < to; i++) {
		if (i == skip)
			continue;
		err = advise(pd, lkey, base + (uintptr_t)i * BLOCK, PAGE,
			     IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
		ok += !err;
		if (err && !*first_err)
			*first_err = err;
	}
	return ok;
}

/*
 * advise-netid, advise-other-identity: an explicit ODP MR of identity 1
 * whose lkey is not its admin handle.
 */
static void netid_prefetch(struct rsv_dev *d0, const char *ip)
{
	struct rsv_opts o1 = o;
	struct rsv_dev d1;
	struct ibv_mr *pin, *mr;
	int64_t r0, r1;
	void *buf, *pbuf;
	int err;

	/* An MR of identity 0 holds a key slot: identity 1's first key's
	 * index (1) is not its slot. */
	pbuf = aligned_alloc(PAGE, PAGE);
	pin = ibv_reg_mr(d0->pd, pbuf, PAGE, IBV_ACCESS_LOCAL_WRITE);
	if (!pin)
		rsv_die("ibv_reg_mr: %s", strerror(errno));
	o1.gid_index = rsv_gid_index(d0->ctx, ip, o.timeout);
	setenv("RSESSION_NETID", ip, 1);
	rsv_open(&o1, &d1);
	unsetenv("RSESSION_NETID");

	buf = mmap(NULL, NETID_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		rsv_die("mmap: %s", strerror(errno));
	mr = ibv_reg_mr(d1.pd, buf, NETID_LEN,
			IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		rsv_die("ibv_reg_mr ODP in identity 1: %s", strerror(errno));
	r0 = rsv_hw_counter(dev_name, "odp_resolved_pages");
	err = advise(d1.pd, mr->lkey, (uintptr_t)buf, NETID_LEN,
		     IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
	r1 = rsv_hw_counter(dev_name, "odp_resolved_pages");
	rsv_check(&o, "advise-netid",
		  !err && r1 - r0 >= (int64_t)(NETID_LEN / PAGE),
		  "explicit ODP MR of identity 1 (GID %d, lkey 0x%x; identity 0's MR 0x%x): PREFETCH_WRITE of %lu KiB: %s, the device's odp_resolved_pages +%" PRId64 " (want %lu)",
		  d1.gid_index, mr->lkey, pin->lkey, NETID_LEN >> 10,
		  err ? strerror(err) : "ok", r1 - r0, NETID_LEN / PAGE);
	err = advise(d0->pd, mr->lkey, (uintptr_t)buf, PAGE,
		     IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
	rsv_check(&o, "advise-other-identity", err == EINVAL,
		  "identity 1's lkey 0x%x through identity 0's PD: %s",
		  mr->lkey, err ? strerror(err) : "succeeded");
	if (ibv_dereg_mr(mr) || ibv_dereg_mr(pin))
		rsv_die("ibv_dereg_mr: %s", strerror(errno));
	rsv_close(&d1);
	munmap(buf, NETID_LEN);
	free(pbuf);
}

/* The implicit MR's children, as the steps of the header say. */
static void children(struct rsv_dev *d)
{
	struct kids k0, k1, k2, start;
	unsigned int cap = DEFAULT_CAP, i, nblk, ok, refused, other;
	uintptr_t base;
	long m0, m1, m2;
	struct ibv_mr *mr;
	char *res;
	int err, first_err, t;
	FILE *f;

	f = fopen("/sys/module/rdma_session/parameters/odp_children", "r");
	if (f) {
		if (fscanf(f, "%u", &cap) != 1 || !cap)
			cap = DEFAULT_CAP;
		fclose(f);
	}
	/* [0, cap + EXTRA): the loops; cap + EXTRA: read-only; holes. */
	nblk = cap + EXTRA + 1 + EXTRA;
	res = mmap(NULL, (nblk + 1) * BLOCK, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		rsv_die("mmap of %u blocks: %s", nblk + 1, strerror(errno));
	base = ((uintptr_t)res + BLOCK - 1) & ~(BLOCK - 1);
#define BLK(i) (base + (uintptr_t)(i) * BLOCK)
	for (i = cap + EXTRA + 1; i < nblk; i++)
		munmap((void *)BLK(i), BLOCK);

	mr = ibv_reg_mr(d->pd, NULL, SIZE_MAX,
			IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		rsv_die("implicit ODP MR: %s", strerror(errno));
	printf("rsv-odplim: implicit ODP MR 0x%x, odp_children %u, %u blocks of 64 MiB from %#lx\n",
	       mr->lkey, cap, nblk, (unsigned long)base);

	/* PROT_NONE blocks and holes. */
	kids(&start);
	kids(&k0);
	m0 = kmem_kib();
	ok = prefetch_blocks(d->pd, mr->lkey, base, 0, nblk, cap + EXTRA,
			     &first_err);
	kids(&k1);
	m1 = kmem_kib();
	rsv_check(&o, "unmapped-no-child",
		  !ok && live(&k1) == live(&k0),
		  "%u prefetches of PROT_NONE or unmapped pages: %u succeeded, first error %s; children kept %+" PRId64 " (created %+" PRId64 ")",
		  nblk - 1, ok, strerror(first_err), live(&k1) - live(&k0),
		  k1.created - k0.created);
	rsv_check(&o, "unmapped-memory", m1 - m0 < 2048,
		  "kernel memory (SUnreclaim + VmallocUsed) %+ld KiB over them",
		  m1 - m0);

	/* One read-write page in each block. */
	kids(&k0);
	m0 = kmem_kib();
	for (i = 0, ok = 0, refused = 0, other = 0; i < cap + EXTRA; i++) {
		if (mprotect((void *)BLK(i), PAGE, PROT_READ | PROT_WRITE))
			rsv_die("mprotect: %s", strerror(errno));
		err = advise(d->pd, mr->lkey, BLK(i), PAGE,
			     IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
		if (!err && i < cap)
			ok++;
		else if (err == ENOSPC && i >= cap)
			refused++;
		else
			other++;
	}
	kids(&k1);
	m1 = kmem_kib();
	rsv_check(&o, "cap",
		  ok == cap && refused == EXTRA && !other &&
		  live(&k1) - live(&k0) == cap &&
		  k1.refused - k0.refused >= EXTRA,
		  "%u blocks with a mapped page: %u of the first %u prefetched, %u of the next %u refused with ENOSPC, %u otherwise; children %+" PRId64 ", refused %+" PRId64,
		  cap + EXTRA, ok, cap, refused, EXTRA, other,
		  live(&k1) - live(&k0), k1.refused - k0.refused);
	rsv_check(&o, "cap-memory",
		  m1 - m0 <= (long)cap * 320 + 2048,
		  "kernel memory %+ld KiB for %" PRId64 " children: %ld KiB each (bound %u KiB)",
		  m1 - m0, live(&k1) - live(&k0),
		  live(&k1) > live(&k0) ? (m1 - m0) / (long)(live(&k1) - live(&k0)) : 0,
		  cap * 320 + 2048);

	/* Invalidations empty EXTRA children. */
	for (i = 0; i < EXTRA; i++)
		munmap((void *)BLK(i), PAGE);
	for (t = 0; t < 50; t++) {
		kids(&k2);
		if (live(&k1) - live(&k2) >= EXTRA)
			break;
		usleep(100000);
	}
	rsv_check(&o, "reap-invalidated", live(&k1) - live(&k2) == EXTRA,
		  "%u blocks' pages unmapped: children %+" PRId64 " after %d ms",
		  EXTRA, live(&k2) - live(&k1), t * 130);

	/* A fault that fails: the child it created goes. */
	if (mprotect((void *)BLK(cap + EXTRA), PAGE, PROT_READ))
		rsv_die("mprotect: %s", strerror(errno));
	kids(&k0);
	err = advise(d->pd, mr->lkey, BLK(cap + EXTRA), PAGE,
		     IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
	kids(&k1);
	rsv_check(&o, "fault-fail-reaped", err && live(&k1) == live(&k0),
		  "PREFETCH_WRITE of a read-only page in a new block: %s; children created %+" PRId64 ", kept %+" PRId64,
		  err ? strerror(err) : "succeeded", k1.created - k0.created,
		  live(&k1) - live(&k0));

	/* Room again: the blocks refused before. */
	kids(&k0);
	ok = prefetch_blocks(d->pd, mr->lkey, base, cap, cap + EXTRA, nblk,
			     &first_err);
	kids(&k1);
	rsv_check(&o, "reap-reuse",
		  ok == EXTRA && live(&k1) - live(&k0) == EXTRA,
		  "the %u blocks refused before: %u prefetched (first error %s), children %+" PRId64,
		  EXTRA, ok, strerror(first_err), live(&k1) - live(&k0));

	kids(&k0);
	m0 = kmem_kib();
	if (ibv_dereg_mr(mr))
		rsv_die("ibv_dereg_mr: %s", strerror(errno));
	kids(&k1);
	m2 = kmem_kib();
	rsv_check(&o, "dereg-frees", live(&k0) > live(&start) &&
		  live(&k1) == live(&start),
		  "ibv_dereg_mr: %" PRId64 " children freed of the MR's %" PRId64 ", %" PRId64 " left; kernel memory %+ld KiB",
		  k1.freed - k0.freed, live(&k0) - live(&start),
		  live(&k1) - live(&start), m2 - m0);
	munmap(res, (nblk + 1) * BLOCK);
#undef BLK
}

int main(int argc, char **argv)
{
	struct rsv_dev d;

	rsv_parse(&o, argc, argv);
	if (o.argc < 1)
		rsv_die("usage: rsv-odplim [options] -- SECOND_IPV4_ADDRESS");
	unsetenv("RSESSION_NETID");
	rsv_open(&o, &d);
	dev_name = d.name;
	if (!(d.attr.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT))
		rsv_die("%s has no implicit ODP", d.name);

	netid_prefetch(&d, o.argv[0]);
	children(&d);
	rsv_close(&d);
	return rsv_exit_status();
}
