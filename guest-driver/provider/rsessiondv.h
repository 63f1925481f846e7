/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rsessiondv.h: direct verbs of the rdma-session adapter (librsession).
 *
 * The adapter's features that plain verbs have no words for: dynamically
 * connected transport (DC) and indirect/pattern memory keys.  The names
 * and shapes follow mlx5dv.h (mlx5dv_create_qp(3), mlx5dv_wr_post(3),
 * mlx5dv_create_mkey(3)), so code written for mlx5 DC and mkeys ports by
 * renaming mlx5dv_ to rsdv_ and MLX5DV_ to RSDV_; the differences are
 * noted at each item.  Link with -lrsession -libverbs.
 *
 * DC in short: a DC initiator (DCI) is a send-only reliable QP whose
 * every work request names its target (an AH, the target's DCT number
 * and DC access key: rsdv_wr_set_dc_addr()); the adapter connects to one
 * target at a time with a DC CONNECT packet carrying the key, sends as RC
 * does, and reconnects when a work request names another target.  A DC
 * target (DCT) is a QP without queues of its own: it takes what any DCI
 * presenting its key sends into its SRQ and receive CQ.  Its QP number is
 * the DCT number.
 *
 * Memory keys: rsdv_create_mkey() makes an empty key (lkey == rkey) with
 * room for max_entries entries; rsdv_wr_mr_list() (indirect: the entries'
 * ranges one after the other) or rsdv_wr_mr_interleaved() (pattern: a
 * block of strided entries repeated) on a send queue fills it, LOCAL_INV
 * (ibv_wr_local_inv) empties it again, rsdv_destroy_mkey() frees it.  The
 * key's address space is zero-based: [0, total length).
 */
#ifndef RSESSIONDV_H
#define RSESSIONDV_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Device                                                             */
/* ------------------------------------------------------------------ */

/* True if device is an rdma-session adapter (librsession's provider). */
bool rsdv_is_supported(struct ibv_device *device);

enum rsdv_context_flags {
	RSDV_CONTEXT_FLAGS_DC = 1 << 0,			/* DCI and DCT QPs */
	RSDV_CONTEXT_FLAGS_INDIRECT_MKEY = 1 << 1,	/* rsdv_wr_mr_list */
	RSDV_CONTEXT_FLAGS_PATTERN_MKEY = 1 << 2,	/* rsdv_wr_mr_interleaved */
};

struct rsdv_context {
	uint64_t comp_mask;		/* in: 0 (nothing optional yet) */
	uint64_t flags;			/* out: RSDV_CONTEXT_FLAGS_* */
	uint32_t max_dc_contexts;	/* DCIs the adapter serves at once */
	uint32_t dc_idle_us;		/* a DCI disconnects after this idle */
	uint32_t max_mkey_entries;	/* entries of one indirect/pattern key */
	uint32_t max_mkey_nest;		/* key levels an entry may name below */
};

/*
 * The adapter's DC and memory key capabilities and limits (0 where it
 * lacks the feature).  Returns 0 or an errno value (EOPNOTSUPP: not an
 * rdma-session context; comp_mask bits not known: EINVAL).
 */
int rsdv_query_device(struct ibv_context *context, struct rsdv_context *attrs);

/* ------------------------------------------------------------------ */
/* Multipath (ABI 1.6)                                                */
/* ------------------------------------------------------------------ */

/*
 * With the driver's module parameter paths > 1 a connected QP (RC, UC,
 * XRC) gets several UDP sessions (paths) to its peer when its primary
 * path is set.  By default it spreads its messages over them by
 * flowlets; rsdv_modify_qp_path_policy() chooses how it uses them: one
 * of RSDV_PATH_SPREAD or RSDV_PATH_ACTIVE_BACKUP (the first session
 * that works, the next one when it fails).  Either way a session that
 * stops carrying ACKs is left for another one (IBV_EVENT_PATH_MIG).
 * Call it with the QP in RTS; a new primary path brings back
 * RSDV_PATH_SPREAD.  The driver picks the session group; the
 * application never names sessions or ports.  With one session per
 * connection there is nothing to choose and it succeeds.  Returns 0 or
 * an errno value (EINVAL: not exactly one policy, or no primary path;
 * EOPNOTSUPP: not an rdma-session QP).
 */
enum rsdv_path_policy {
	RSDV_PATH_SPREAD = 1 << 0,
	RSDV_PATH_ACTIVE_BACKUP = 1 << 1,
};

int rsdv_modify_qp_path_policy(struct ibv_qp *qp, uint32_t policy);

/* ------------------------------------------------------------------ */
/* DC QPs                                                             */
/* ------------------------------------------------------------------ */

enum rsdv_dc_type {
	RSDV_DCTYPE_DCT = 1,
	RSDV_DCTYPE_DCI,
};

struct rsdv_dc_init_attr {
	enum rsdv_dc_type dc_type;
	uint64_t dct_access_key;	/* DCT: the key DCIs must present */
};

enum rsdv_qp_init_attr_mask {
	RSDV_QP_INIT_ATTR_MASK_DC = 1 << 1,
	RSDV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS = 1 << 2,
};

enum rsdv_qp_create_send_ops_flags {
	RSDV_QP_EX_WITH_MR_INTERLEAVED = 1 << 0,
	RSDV_QP_EX_WITH_MR_LIST = 1 << 1,
};

struct rsdv_qp_init_attr {
	uint64_t comp_mask;		/* RSDV_QP_INIT_ATTR_MASK_* */
	uint32_t create_flags;		/* none: 0 */
	struct rsdv_dc_init_attr dc_init_attr;
	uint64_t send_ops_flags;	/* RSDV_QP_EX_WITH_* */
};

/*
 * Create a QP; with RSDV_QP_INIT_ATTR_MASK_DC a DCI or DCT, as with
 * mlx5dv_create_qp(): qp_attr->qp_type IBV_QPT_DRIVER, comp_mask with
 * IBV_QP_INIT_ATTR_PD.
 *  - DCI: send_cq, cap.max_send_wr/_sge/max_inline_data; no SRQ or
 *    receive side (recv_cq and the receive caps are ignored).  Post with
 *    the extended API only (IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, ibv_qp_to_qp_ex,
 *    rsdv_wr_set_dc_addr after each operation); ibv_post_send is refused.
 *    Modify: RESET->INIT PORT (PKEY_INDEX); INIT->RTR PATH_MTU;
 *    RTR->RTS TIMEOUT, RETRY_CNT, RNR_RETRY, SQ_PSN, MAX_QP_RD_ATOMIC; no
 *    AV or DEST_QPN (mlx5 RoCE code passes an AV at RTR: drop it).
 *  - DCT: srq and recv_cq (send_cq may be NULL); all caps are ignored.
 *    Modify: RESET->INIT ACCESS_FLAGS, PORT (PKEY_INDEX); INIT->RTR
 *    PATH_MTU, MIN_RNR_TIMER (an AV is accepted and not used); it serves
 *    in RTR.  A connect with another key fails at the DCI with
 *    IBV_WC_REM_ACCESS_ERR and raises IBV_EVENT_QP_ACCESS_ERR on the DCT.
 * With RSDV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS the QP (RC, UC or DCI) takes
 * rsdv_wr_mr_list / rsdv_wr_mr_interleaved; their entries go inline in
 * the WQE, so size the QP for them: max_send_sge * 16 or max_inline_data
 * of at least 16 bytes per list entry, 24 per interleaved entry.
 * Returns the QP, or NULL with errno set.
 */
struct ibv_qp *rsdv_create_qp(struct ibv_context *context,
			      struct ibv_qp_init_attr_ex *qp_attr,
			      struct rsdv_qp_init_attr *rs_qp_attr);

/* ------------------------------------------------------------------ */
/* Memory keys                                                        */
/* ------------------------------------------------------------------ */

struct rsdv_mkey {
	uint32_t lkey;
	uint32_t rkey;			/* == lkey */
};

enum rsdv_mkey_init_attr_flags {
	/* mlx5's flag: an indirect key, filled by rsdv_wr_mr_list. */
	RSDV_MKEY_INIT_ATTR_FLAGS_INDIRECT = 1 << 0,
	/*
	 * rdma-session: a pattern key, filled by rsdv_wr_mr_interleaved
	 * (mlx5 fills one kind of key with both; this adapter makes the
	 * kind at creation).
	 */
	RSDV_MKEY_INIT_ATTR_FLAGS_PATTERN = 1 << 8,
};

struct rsdv_mkey_init_attr {
	struct ibv_pd *pd;
	uint32_t create_flags;		/* exactly one RSDV_MKEY_INIT_ATTR_FLAGS_* */
	uint16_t max_entries;		/* 1 - rsdv_context.max_mkey_entries */
};

/* An empty key, or NULL with errno set (EOPNOTSUPP: no such keys). */
struct rsdv_mkey *rsdv_create_mkey(struct rsdv_mkey_init_attr *mkey_init_attr);
/* Free a key (no QP may still use it); 0 or an errno value. */
int rsdv_destroy_mkey(struct rsdv_mkey *mkey);

/* One pattern entry: bytes_count bytes, then bytes_skip skipped. */
struct rsdv_mr_interleaved {
	uint64_t addr;
	uint32_t bytes_count;		/* >= 1 */
	uint32_t bytes_skip;
	uint32_t lkey;
};

/* ------------------------------------------------------------------ */
/* Extended work requests                                             */
/* ------------------------------------------------------------------ */

struct rsdv_qp_ex {
	uint64_t comp_mask;
	void (*wr_set_dc_addr)(struct rsdv_qp_ex *mqp, struct ibv_ah *ah,
			       uint32_t remote_dctn, uint64_t remote_dc_key);
	void (*wr_mr_interleaved)(struct rsdv_qp_ex *mqp,
				  struct rsdv_mkey *mkey,
				  uint32_t access_flags,
				  uint32_t repeat_count,
				  uint16_t num_interleaved,
				  struct rsdv_mr_interleaved *data);
	void (*wr_mr_list)(struct rsdv_qp_ex *mqp, struct rsdv_mkey *mkey,
			   uint32_t access_flags, uint16_t num_sges,
			   struct ibv_sge *sge);
};

/* The rsdv side of a QP made with send ops flags (NULL: not ours). */
struct rsdv_qp_ex *rsdv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp);

/*
 * DCI: the target of the work request just started (ibv_wr_send, ...,
 * call it before the SGEs): ah (of the DCI's PD), the DCT number and its
 * access key.  Bad input fails the batch at ibv_wr_complete() (EINVAL).
 */
static inline void rsdv_wr_set_dc_addr(struct rsdv_qp_ex *mqp,
				       struct ibv_ah *ah,
				       uint32_t remote_dctn,
				       uint64_t remote_dc_key)
{
	mqp->wr_set_dc_addr(mqp, ah, remote_dctn, remote_dc_key);
}

/*
 * Fill an empty pattern key: repeat_count times, for each entry in
 * order, bytes_count bytes from addr (lkey's memory), the entry's next
 * block starting bytes_count + bytes_skip further.  The key then covers
 * [0, repeat_count * sum(bytes_count)) with access_flags
 * (IBV_ACCESS_LOCAL_WRITE, _REMOTE_WRITE, _REMOTE_READ, _REMOTE_ATOMIC).
 * A local work request (takes ibv_qp_ex wr_id/wr_flags, no SGEs).
 */
static inline void rsdv_wr_mr_interleaved(struct rsdv_qp_ex *mqp,
					  struct rsdv_mkey *mkey,
					  uint32_t access_flags,
					  uint32_t repeat_count,
					  uint16_t num_interleaved,
					  struct rsdv_mr_interleaved *data)
{
	mqp->wr_mr_interleaved(mqp, mkey, access_flags, repeat_count,
			       num_interleaved, data);
}

/*
 * Fill an empty indirect key with num_sges ranges (addr, length of the
 * memory of lkey), one after the other from key offset 0.
 */
static inline void rsdv_wr_mr_list(struct rsdv_qp_ex *mqp,
				   struct rsdv_mkey *mkey,
				   uint32_t access_flags, uint16_t num_sges,
				   struct ibv_sge *sge)
{
	mqp->wr_mr_list(mqp, mkey, access_flags, num_sges, sge);
}

#ifdef __cplusplus
}
#endif

#endif /* RSESSIONDV_H */
