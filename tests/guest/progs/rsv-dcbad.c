/*
 * The guest driver's checks of the DC driver data of CREATE_QP (struct
 * rs_uverbs_create_qp), from user space: the commands are written to the
 * verbs command file as libibverbs writes them (ib_uverbs_cmd_hdr,
 * ib_uverbs_create_qp, then the driver data), with input the provider
 * would never send.  Each bad one must fail with EINVAL; a good DCI and
 * a good DCT, sent the same way, must be created (and are destroyed).
 * Then the same through rsdv_create_qp: the provider's own refusals.
 *
 * Usage: rsv-dcbad [DEVICE]
 * Prints "RS-DCBAD NAME ok|fail DETAIL" per check; exits 0 if all passed.
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

#include <infiniband/verbs.h>
#include <infiniband/rsessiondv.h>
#include <rdma/ib_user_verbs.h>

/* include/hw/rdma-session/rdma-session-uverbs.h, as the driver reads it. */
struct dc_data {
	uint32_t dc_type;		/* 1 DCI, 2 DCT */
	uint32_t flags;
	uint64_t dct_access_key;
	uint32_t rsvd[2];
};

struct cmd {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_create_qp qp;
	struct dc_data dc;
};

static int failed;

static void check(const char *name, int ok, const char *what, int e)
{
	printf("RS-DCBAD %s %s %s: %s\n", name, ok ? "ok" : "fail", what,
	       e ? strerror(e) : "success");
	failed += !ok;
}

/* CREATE_QP through write(); 0 and *qp_handle, or the errno. */
static int raw_create(struct ibv_context *ctx, struct ibv_pd *pd,
		      struct ibv_cq *cq, struct ibv_srq *srq, int qp_type,
		      const struct dc_data *dc, uint32_t *qp_handle)
{
	struct {
		struct ib_uverbs_create_qp_resp base;
		uint8_t drv[64];
	} resp;
	struct cmd c;

	memset(&c, 0, sizeof(c));
	memset(&resp, 0, sizeof(resp));
	c.hdr.command = IB_USER_VERBS_CMD_CREATE_QP;
	c.hdr.in_words = sizeof(c) / 4;
	c.hdr.out_words = sizeof(resp) / 4;
	c.qp.response = (uintptr_t)&resp;
	c.qp.pd_handle = pd->handle;
	c.qp.send_cq_handle = cq->handle;
	c.qp.recv_cq_handle = cq->handle;
	c.qp.srq_handle = srq ? srq->handle : 0;
	c.qp.is_srq = !!srq;
	c.qp.qp_type = qp_type;
	if (dc && dc->dc_type == 1) {
		c.qp.max_send_wr = 8;
		c.qp.max_send_sge = 1;
	} else if (!dc || dc->dc_type != 2) {
		c.qp.max_send_wr = 8;
		c.qp.max_send_sge = 1;
		c.qp.max_recv_wr = srq ? 0 : 8;
		c.qp.max_recv_sge = srq ? 0 : 1;
	}
	c.dc = *dc;
	if (write(ctx->cmd_fd, &c, sizeof(c)) != sizeof(c))
		return errno;
	*qp_handle = resp.base.qp_handle;
	return 0;
}

static void raw_destroy(struct ibv_context *ctx, uint32_t h)
{
	struct ib_uverbs_destroy_qp_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_qp d;
	} c = { { IB_USER_VERBS_CMD_DESTROY_QP, sizeof(c) / 4,
		  sizeof(resp) / 4 }, { (uintptr_t)&resp, h, 0 } };

	if (write(ctx->cmd_fd, &c, sizeof(c)) != sizeof(c))
		fprintf(stderr, "rsv-dcbad: destroy QP %u: %s\n", h,
			strerror(errno));
}

int main(int argc, char **argv)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	uint32_t h;
	int e, i;
	static const struct {
		const char *name;
		int qp_type;		/* 0xff: IB_QPT_DRIVER */
		int srq;
		struct dc_data dc;
	} bad[] = {
		{ "bad-dc-type", 0xff, 0, { 7, 0, 0, { 0, 0 } } },
		{ "dc-type-none", 0xff, 0, { 0, 0, 0, { 0, 0 } } },
		/* bit 0 is RS_UVERBS_QP_F_DB_RECORD (ABI 1.11): an unknown one */
		{ "flags", 0xff, 0, { 1, 2, 0, { 0, 0 } } },
		{ "rsvd0", 0xff, 0, { 1, 0, 0, { 1, 0 } } },
		{ "rsvd1", 0xff, 1, { 2, 0, 5, { 0, 0x80000000u } } },
		{ "dci-key", 0xff, 0, { 1, 0, 5, { 0, 0 } } },
		{ "dci-srq", 0xff, 1, { 1, 0, 0, { 0, 0 } } },
		{ "dct-no-srq", 0xff, 0, { 2, 0, 5, { 0, 0 } } },
		{ "rc-with-dc-type", IBV_QPT_RC, 0, { 1, 0, 0, { 0, 0 } } },
	};

	if (!list || !list[0])
		return 2;
	for (i = 0; argc > 1 && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			break;
	if (!list[i])
		return 2;
	ctx = ibv_open_device(list[i]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	srq = cq ? ibv_create_srq(pd, &sa) : NULL;
	if (!srq) {
		fprintf(stderr, "rsv-dcbad: setup: %s\n", strerror(errno));
		return 2;
	}

	for (i = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
		e = raw_create(ctx, pd, cq, bad[i].srq ? srq : NULL,
			       bad[i].qp_type, &bad[i].dc, &h);
		if (!e)
			raw_destroy(ctx, h);
		check(bad[i].name, e == EINVAL, "driver data refused",
		      e);
	}
	/* The control: the same path with good input creates the QPs. */
	{
		struct dc_data dci = { 1, 0, 0, { 0, 0 } };
		struct dc_data dct = { 2, 0, 0x1234, { 0, 0 } };

		e = raw_create(ctx, pd, cq, NULL, 0xff, &dci, &h);
		if (!e)
			raw_destroy(ctx, h);
		check("good-dci", !e, "DCI through the same path", e);
		e = raw_create(ctx, pd, cq, srq, 0xff, &dct, &h);
		if (!e)
			raw_destroy(ctx, h);
		check("good-dct", !e, "DCT through the same path", e);
	}
	/* The provider refuses what it can tell is wrong itself. */
	{
		struct ibv_qp_init_attr_ex a = {
			.qp_type = IBV_QPT_DRIVER, .send_cq = cq,
			.recv_cq = cq, .comp_mask = IBV_QP_INIT_ATTR_PD,
			.pd = pd, .cap = { .max_send_wr = 8,
					   .max_send_sge = 1 },
		};
		struct rsdv_qp_init_attr dv = {
			.comp_mask = RSDV_QP_INIT_ATTR_MASK_DC,
			.dc_init_attr = { .dc_type = 9 },
		};
		struct ibv_qp *qp = rsdv_create_qp(ctx, &a, &dv);

		e = qp ? 0 : errno;
		check("rsdv-bad-dc-type", !qp && e == EINVAL,
		      "rsdv_create_qp with dc_type 9", e);
		if (qp)
			ibv_destroy_qp(qp);
		dv.dc_init_attr.dc_type = RSDV_DCTYPE_DCT;
		qp = rsdv_create_qp(ctx, &a, &dv);
		e = qp ? 0 : errno;
		check("rsdv-dct-no-srq", !qp && e == EINVAL,
		      "rsdv_create_qp DCT without SRQ", e);
		if (qp)
			ibv_destroy_qp(qp);
	}
	ibv_destroy_srq(srq);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return failed ? 1 : 0;
}
