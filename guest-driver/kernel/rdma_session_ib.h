/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rdma-session adapter: the ib_device and its objects (user context, PD,
 * CQ, QP and its work queues, SRQ, AH, MR), shared by the ib_device
 * (rdma_session_verbs.c), the control verbs by object
 * (rdma_session_{device,pd,cq,qp,mr,odp}.c, on the admin commands of
 * rdma_session_com_cmd.c) and the data path of kernel QPs, SRQs and CQs
 * (rdma_session_datapath.c).
 */
#ifndef RDMA_SESSION_IB_H
#define RDMA_SESSION_IB_H

#include <linux/completion.h>
#include <linux/interrupt.h>
#include <linux/ratelimit.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "rdma_session.h"

#define RS_PORT_NUM		1

enum rs_ib_counter {
	RS_CNT_ADMIN_CMDS,
	RS_CNT_ADMIN_ERRS,
	RS_CNT_SESSIONS,
	RS_CNT_QP_CREATED,
	RS_CNT_MR_REGISTERED,
	RS_CNT_MR_REREG_IN_PLACE,	/* rereg_mr with the keys kept */
	RS_CNT_TX_PACKETS,
	RS_CNT_RX_PACKETS,
	RS_CNT_TX_BYTES,
	RS_CNT_RX_BYTES,
	/* On-demand paging, counted by the driver (rdma_session_odp.c). */
	RS_CNT_ODP_FAULT_EVENTS,	/* ODP_PAGE_FAULT events taken */
	RS_CNT_ODP_FAULT_DROPPED,	/* events for no ODP MR, or no memory */
	RS_CNT_ODP_FAULTS_RESOLVED,	/* faults answered with their pages */
	RS_CNT_ODP_FAULT_PAGES,		/* pages those answers handed over */
	RS_CNT_ODP_FAULTS_FAILED,	/* faults answered RS_ODP_RESOLVE_F_FAIL */
	RS_CNT_ODP_STALE,		/* ODP_RESOLVE refused as STALE */
	RS_CNT_ODP_INVALIDATIONS,	/* ODP_INVALIDATE commands issued */
	RS_CNT_ODP_PREFETCHES,		/* advise_mr SGEs prefetched */
	RS_CNT_ODP_CHILDREN,		/* implicit MR children created */
	RS_CNT_ODP_CHILDREN_FREED,	/* ... released (reaped or dereg) */
	RS_CNT_ODP_CHILDREN_REFUSED,	/* not created: the MR had odp_children */
	RS_CNT_PATH_MIGRATIONS,		/* RS_EV_PATH_MIGRATED events */
	RS_CNT_DRV_NUM,
	/*
	 * The device's own counters (QUERY_STATS, struct rs_device_stats,
	 * ABI 1.4), read by get_hw_stats; in the structure's order.
	 */
	RS_CNT_DEV_ODP_FAULTS = RS_CNT_DRV_NUM,
	RS_CNT_DEV_ODP_RESOLVED_PAGES,
	RS_CNT_DEV_ODP_INVALIDATIONS,
	RS_CNT_DEV_ODP_FAULT_FAILS,
	RS_CNT_DEV_ODP_PAUSES_SENT,
	RS_CNT_DEV_ODP_PAUSES_RCVD,
	RS_CNT_DEV_ODP_RESUMES_RCVD,
	RS_CNT_DEV_RNR_NAKS_RCVD,
	RS_CNT_DEV_V14_END,
	/* ABI 1.6 (RS_CAP_DEVICE_COUNTERS): the transport counters. */
	RS_CNT_DEV_RNR_NAKS_SENT = RS_CNT_DEV_V14_END,
	RS_CNT_DEV_SEQ_NAKS_SENT,
	RS_CNT_DEV_SEQ_NAKS_RCVD,
	RS_CNT_DEV_RETRANSMITS,
	RS_CNT_DEV_ACK_TIMEOUTS,
	RS_CNT_DEV_ICRC_DROPS,
	RS_CNT_DEV_TX_PACKETS,
	RS_CNT_DEV_TX_BYTES,
	RS_CNT_DEV_RX_PACKETS,
	RS_CNT_DEV_RX_BYTES,
	RS_CNT_DEV_PATH_FAILOVERS,
	RS_CNT_DEV_V16_END,
	/* ABI 1.8 (RS_CAP_PEER_DMA): data buffer bytes by where they went */
	RS_CNT_DEV_RAM_DMA_READ = RS_CNT_DEV_V16_END,
	RS_CNT_DEV_RAM_DMA_WRITE,
	RS_CNT_DEV_PEER_DMA_READ,
	RS_CNT_DEV_PEER_DMA_WRITE,
	RS_CNT_DEV_DATA_DMA_REFUSED,
	RS_CNT_DEV_V18_END,
	/* ABI 1.9 (RS_CAP_VLAN) */
	RS_CNT_DEV_VLAN_RX_DROPPED = RS_CNT_DEV_V18_END,
	RS_CNT_DEV_V19_END,
	/* ABI 1.10 (RS_CAP_ECN) */
	RS_CNT_DEV_ECN_CE_RECEIVED = RS_CNT_DEV_V19_END,
	RS_CNT_DEV_CNP_SENT,
	RS_CNT_DEV_CNP_RECEIVED,
	RS_CNT_DEV_CNP_IGNORED,
	RS_CNT_DEV_DCQCN_RATE_REDUCTIONS,
	RS_CNT_DEV_V110_END,
	/* ABI 1.11: every device of 1.11 counts, RS_CAP_DB_RECORD or not */
	RS_CNT_DEV_DB_MMIO_WRITES = RS_CNT_DEV_V110_END,
	RS_CNT_DEV_DB_RECORD_PICKUPS,
	RS_CNT_NUM,
};

struct rs_ibdev {
	struct ib_device ibdev;
	struct rs_dev *rdev;
	void __iomem *kdb;		/* doorbell page 0 */
	u32 db_pages;
	spinlock_t uar_lock;
	unsigned long *uar_map;		/* doorbell pages in use */
	struct xarray qps;		/* QP number -> rs_qp */
	struct xarray cqs;		/* CQ index -> rs_cq */
	struct xarray srqs;		/* SRQ index -> rs_srq */
	struct mutex gid_lock;
	unsigned long *gid_map;		/* RoCEv2 GIDs present in the device */
	u8 *gid_netid;			/* each GID's identity (ADD_GID) */
	u32 max_gids;
	struct mutex sess_lock;
	struct list_head sessions;	/* rs_session, by 5-tuple */
	struct ratelimit_state path_mig_rs;	/* IB_EVENT_PATH_MIG */
	atomic64_t cnt[RS_CNT_NUM];
	struct workqueue_struct *wq;	/* deferred admin commands */
	struct rs_comp_vec *vecs;	/* completion vector IRQs */
	u32 nvecs;			/* ib completion vectors */
	u32 vec_base;			/* ib vector i = device vector base + i */
	/* On-demand paging (RS_CAP_ODP), rdma_session_odp.c. */
	struct xarray odp_mrs;		/* admin handle -> ODP rs_mr (IRQ-safe) */
	/* Per network identity (the PD's): lkey -> ODP rs_mr, for advise_mr. */
	struct xarray odp_keys[RS_MAX_NETIDS];
	struct workqueue_struct *odp_wq; /* page faults, prefetches */
	struct dma_pool *odp_pool;	/* ODP_RESOLVE page lists */
	/* Indirect/pattern keys: the self-test at the first GID. */
	struct work_struct netid_work;	/* the host changed identities */
	struct dentry *debugfs;		/* rdma_session_debugfs.c */
	struct mutex mkey_test_lock;	/* a run of the mkey self-test */
	char mkey_test_result[160];	/* its outcome, for reading */
};

/*
 * ib completion vector i is the device's completion vector vec_base + i,
 * MSI-X vector RS_MSIX_COMP_VECTOR0 + vec_base + i.  The LAN queues use
 * RS_LAN_VECTOR (the device's completion vector 0): when the device has
 * more than one completion vector, the CQs stay off it (vec_base 1), so
 * that LAN interrupts do not become completion events.
 */
struct rs_comp_vec {
	struct rs_ibdev *dev;
	u32 vector;
	bool requested;
	char name[32];
};

struct rs_ucontext {
	struct ib_ucontext ibuc;
	u32 uar;
	struct rdma_user_mmap_entry *db_entry;
};

struct rs_pd {
	struct ib_pd ibpd;
	u32 handle;
	u8 netid;			/* its network identity (key table) */
};

/* An XRC domain (RS_CAP_XRC): its XRC SRQs and target QPs name it. */
struct rs_xrcd {
	struct ib_xrcd ibxrcd;
	u32 handle;
};

/* Queue memory: whole pages, DMA-mapped; mappable with vm_insert_page. */
struct rs_buf {
	void *va;
	dma_addr_t dma;
	size_t size;
	bool mapped;
};

struct rs_cq {
	struct ib_cq ibcq;
	u32 handle;
	u32 log;
	struct rs_buf ring;
	struct rdma_user_mmap_entry *mentry;
	spinlock_t lock;		/* kernel CQ consumer */
	struct mutex resize_lock;	/* ring, log and mentry of user CQs */
	u32 ci;
	u16 vector;			/* completion vector */
	bool armed;			/* kernel CQs: req_notify_cq done */
	bool user;
};

/*
 * A work queue of a kernel QP or SRQ (send, receive or shared receive).
 *
 * Locking: @lock protects @pi, @ci and the ring's free slots.  The post
 * verbs write @pi with it held; the poll path (rs_ib_poll_cq) advances @ci
 * with it held, nested inside the CQ's lock (cq->lock, then wq->lock;
 * never the other way round).  Both indexes are therefore read plainly
 * under @lock, and a post sees a slot free only after the completion
 * that freed it was consumed.  One lock, not the CQ's, because the
 * receive completions of an SRQ come through the CQs of all its QPs.
 */
struct rs_wq {
	struct rs_buf ring;
	struct rdma_user_mmap_entry *mentry;
	u32 log;
	u32 stride;
	u32 max_sge;
	spinlock_t lock;		/* kernel QPs and SRQs: pi, ci */
	u32 pi;
	u32 ci;
	u8 *signaled;			/* SQ of kernel QPs: per slot */
};

/*
 * An XRC SRQ (IB_SRQT_XRC) is a basic SRQ plus its domain and receive CQ;
 * its receive completions carry its number (rs_cqe.srqn, the handle's
 * index) and the target QP's number, not a QP of its own.
 */
struct rs_srq {
	struct ib_srq ibsrq;
	u32 handle;
	u32 limit;			/* armed limit, 0 after the event */
	bool user;
	struct mutex resize_lock;	/* user SRQs: wq.ring, log, mentry */
	struct rs_wq wq;		/* ci: receive completions seen */
};

/*
 * A connected QP's sessions and the group it uses.  The shared kind
 * (nsess 0, rdma_session_qp.c): one session per 5-tuple, in
 * dev->sessions, refcounted by the QPs that use it.  The multipath kind
 * (rdma_session_path.c, module parameter paths > 1): nsess sessions of
 * one QP, their source ports held by kernel UDP sockets; group spreads,
 * ab_group (0 until asked for) is active-backup over the same sessions.
 */
struct rs_session {
	struct list_head node;
	refcount_t refs;
	u32 session;
	u32 group;
	u8 dst_ip[16];
	u16 src_port;
	u32 gid_index;
	u32 nsess;
	u32 sess[RS_MAX_GROUP_SESSIONS];
	u16 ports[RS_MAX_GROUP_SESSIONS];
	struct socket *socks[RS_MAX_GROUP_SESSIONS];
	u32 ab_group;
	u32 policy;			/* the QP's: RS_UVERBS_PATH_* */
};

/*
 * An XRC target QP (RS_QPT_XRC_TGT) has no rings, PD or CQs: sq and rq
 * stay empty (ring.va NULL), and ib_core creates it with udata NULL even
 * for user space, so user is false for it.  An XRC initiator is a user
 * QP with a send ring only.
 */
struct rs_qp {
	struct ib_qp ibqp;
	struct rs_srq *srq;
	u32 handle;
	u32 qpn;
	u8 rs_type;
	enum ib_qp_state state;
	bool user;
	bool sig_all;
	u32 max_inline;
	struct rs_wq sq;
	struct rs_wq rq;
	struct rs_session *sess;
	u32 dest_qpn;
	u64 dc_key;			/* DCT: its access key */
	bool db_record;			/* a record in the SQ ring */
	u32 db_record_offset;
	struct rs_db_record *dbrec;	/* kernel QPs: the record, or NULL */
	bool has_av;
	struct rdma_ah_attr av;		/* for query_qp */
	struct ib_qp_cap cap;
};

/*
 * An AH created in atomic context: CREATE_AH and DESTROY_AH run from the
 * device's ordered workqueue; handle is 0 until CREATE_AH completed.
 */
struct rs_ah_pend {
	struct work_struct create_work;
	struct work_struct destroy_work;
	struct rs_ibdev *dev;
	struct rs_cmd_create_ah params;	/* run by create_work */
	refcount_t refs;
	u32 handle;
};

struct rs_ah {
	struct ib_ah ibah;
	u32 handle;
	struct rs_ah_pend *pend;
	/* Kernel AHs: the vector kernel UD WQEs point to (RS_WQE_F_AV_ADDR). */
	struct rs_ah_attr *av;
	dma_addr_t av_dma;
};

/*
 * IB access flags to the device's: the first five are the same bits, the
 * FLUSH rights are not.
 */
#define RS_IB_ACCESS_SAME	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
				 IB_ACCESS_MW_BIND)

static inline u16 rs_access_from_ib(int access)
{
	u16 a = access & RS_IB_ACCESS_SAME;

	if (access & IB_ACCESS_FLUSH_GLOBAL)
		a |= RS_ACCESS_FLUSH_GLOBAL;
	if (access & IB_ACCESS_FLUSH_PERSISTENT)
		a |= RS_ACCESS_FLUSH_PERSISTENT;
	return a;
}

static inline int rs_access_to_ib(u16 a)
{
	int access = a & RS_IB_ACCESS_SAME;

	if (a & RS_ACCESS_FLUSH_GLOBAL)
		access |= IB_ACCESS_FLUSH_GLOBAL;
	if (a & RS_ACCESS_FLUSH_PERSISTENT)
		access |= IB_ACCESS_FLUSH_PERSISTENT;
	return access;
}

static inline u32 rs_ah_handle(struct rs_ah *ah)
{
	return ah->pend ? READ_ONCE(ah->pend->handle) : ah->handle;
}

/*
 * The ODP state of an MR (rdma_session_odp.c).
 *
 * Locking: @lock serialises the ODP_RESOLVE and ODP_INVALIDATE commands
 * of the key and protects @seq and @live.  It nests inside the umem_mutex
 * of the MR's umem (explicit) or of any of its children (implicit): an
 * invalidation holds the child's umem_mutex and then @lock, a fault holds
 * the umem_mutex that ib_umem_odp_map_dma_and_lock() returned with and
 * then @lock, so @seq, read under @lock, is the device's count whenever
 * a resolve is issued.  Neither lock is held across a GFP_KERNEL
 * allocation: the invalidate callback runs in reclaim.
 *
 * @users is 1 while the MR is in dev->odp_mrs and dev->odp_keys, plus
 * one per fault or prefetch work item that holds it; dereg takes the MR
 * out of both xarrays and waits on @idle for the count to drop to 0.
 *
 * Implicit MRs: @child_lock (a mutex, never taken by the invalidate
 * callback, so it may be held across allocations) protects @children,
 * @nchildren and each child's users; a child is in use while a resolve
 * holds it, and freed when nothing is mapped in it and nobody uses it
 * (rdma_session_odp.c, "Implicit children").  @reap_work frees children
 * that an invalidation emptied; it is only queued while @live.
 */
struct rs_mr_odp {
	struct rs_ibdev *dev;
	struct mutex lock;
	u32 seq;			/* ODP_INVALIDATE commands for the key */
	bool live;			/* REG_MR done, DEREG_MR not yet */
	bool implicit;
	refcount_t users;
	struct completion idle;
	u64 iova_page;			/* explicit: the region's first page */
	struct mm_struct *mm;		/* implicit: the owner's (mmgrab) */
	struct mutex child_lock;
	struct xarray children;		/* implicit: VA >> RS_ODP_CHILD_SHIFT
					 * -> struct rs_odp_child */
	unsigned int nchildren;		/* in @children */
	struct work_struct reap_work;	/* free the emptied children */
};

struct rs_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;
	int access;			/* user MRs: for rereg_user_mr */
	bool dma;			/* get_dma_mr: no device object */
	/* Fast registration: page list of max_pages DMA addresses. */
	u64 *pages;
	dma_addr_t pages_dma;
	u32 npages;
	u32 max_pages;
	struct rs_mr_odp *odp;		/* ODP MRs only */
	/* For rdma resource show mr (rdma_session_restrack.c). */
	const char *kind;		/* user, odp, fast_reg, indirect, ... */
	u32 netid;			/* the GID it was registered through */
	/*
	 * The device's admin handle of the key (DEREG_MR, ODP commands and
	 * events): the key itself in identity 0, slot-based in another.
	 */
	u32 handle;
};

/* A memory window: its device key is ibmw.rkey as allocated. */
struct rs_mw {
	struct ib_mw ibmw;
	u32 handle;			/* DEALLOC_MW's (see rs_mr.handle) */
};

static inline struct rs_ibdev *to_rsdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct rs_ibdev, ibdev);
}

/*
 * An address vector's flow_label word: the 20 bits of the flow label
 * (UCX sets all 32; mlx5 and rxe mask too) and, with RS_CAP_VLAN, the
 * Ethernet priority from the SL in bits 24-26, as mlx5 puts sl & 7 in
 * eth_prio (rdma_cm sets the SL from the ToS through the net device's
 * egress priority map).  Frames carry it when their GID is on a VLAN.
 */
static inline u32 rs_av_flow_label(struct rs_ibdev *dev,
				   const struct rdma_ah_attr *ah)
{
	u32 fl = rdma_ah_read_grh(ah)->flow_label & IB_GRH_FLOWLABEL_MASK;

	if (dev->rdev->caps & RS_CAP_VLAN)
		fl |= (u32)(rdma_ah_get_sl(ah) & 7) << RS_AV_PRIO_SHIFT;
	return fl;
}

static inline struct rs_ucontext *to_rsuc(struct ib_ucontext *uc)
{
	return container_of(uc, struct rs_ucontext, ibuc);
}

static inline struct rs_pd *to_rspd(struct ib_pd *pd)
{
	return container_of(pd, struct rs_pd, ibpd);
}

static inline struct rs_xrcd *to_rsxrcd(struct ib_xrcd *xrcd)
{
	return container_of(xrcd, struct rs_xrcd, ibxrcd);
}

static inline struct rs_cq *to_rscq(struct ib_cq *cq)
{
	return container_of(cq, struct rs_cq, ibcq);
}

static inline struct rs_qp *to_rsqp(struct ib_qp *qp)
{
	return container_of(qp, struct rs_qp, ibqp);
}

static inline struct rs_srq *to_rssrq(struct ib_srq *srq)
{
	return container_of(srq, struct rs_srq, ibsrq);
}

static inline struct rs_ah *to_rsah(struct ib_ah *ah)
{
	return container_of(ah, struct rs_ah, ibah);
}

static inline struct rs_mr *to_rsmr(struct ib_mr *mr)
{
	return container_of(mr, struct rs_mr, ibmr);
}

static inline struct device *rs_dma_dev(struct rs_ibdev *dev)
{
	return &dev->rdev->pdev->dev;
}

/* The kinds of mmap entries (rdma_session_verbs.c). */
enum rs_mmap_type {
	RS_MMAP_DB,
	RS_MMAP_MEM,
};

/* XRC domains, SRQs and QPs: only a device that reports them. */
static inline bool rs_has_xrc(struct rs_ibdev *dev)
{
	return dev->rdev->caps & RS_CAP_XRC;
}

/* DC initiators and targets (RS_CAP_DC, ABI 1.5). */
static inline bool rs_has_dc(struct rs_ibdev *dev)
{
	return dev->rdev->caps & RS_CAP_DC;
}

static inline bool rs_is_dc(const struct rs_qp *qp)
{
	return qp->rs_type == RS_QPT_DCI || qp->rs_type == RS_QPT_DCT;
}

/*
 * rdma_session_verbs.c: the ib_device_ops table, registration, async
 * events, user contexts and the mmap entries of queues and doorbells.
 */
int rs_udata_in(struct ib_udata *udata, void *out, size_t size);
int rs_buf_alloc(struct rs_ibdev *dev, struct rs_buf *b, size_t size);
void rs_buf_free(struct rs_ibdev *dev, struct rs_buf *b);
struct rdma_user_mmap_entry *
rs_mmap_insert(struct rs_ibdev *dev, struct ib_ucontext *uc, u8 type,
	       u64 address, size_t length, u32 uar, u64 *key);
void rs_mmap_remove(struct rdma_user_mmap_entry **e);

/* rdma_session_device.c */
int rs_ib_query_device(struct ib_device *ibdev, struct ib_device_attr *a,
		       struct ib_udata *udata);
int rs_ib_query_port(struct ib_device *ibdev, u32 port,
		     struct ib_port_attr *pa);
int rs_ib_get_port_immutable(struct ib_device *ibdev, u32 port,
			     struct ib_port_immutable *im);
enum rdma_link_layer rs_ib_get_link_layer(struct ib_device *ibdev, u32 port);
int rs_ib_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey);
void rs_ib_get_dev_fw_str(struct ib_device *ibdev, char *str);
int rs_ib_add_gid(const struct ib_gid_attr *attr, void **context);
int rs_ib_del_gid(const struct ib_gid_attr *attr, void **context);
void rs_netid_refresh(struct work_struct *w);
int rs_default_netid(struct rs_ibdev *dev, struct ib_pd *ibpd,
		     u32 *index);
struct rdma_hw_stats *rs_ib_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port);
int rs_ib_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index);

/* rdma_session_pd.c */
int rs_ib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int rs_ib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int rs_ib_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int rs_ib_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int rs_ib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int rs_ib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int rs_ib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int rs_ib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int rs_ib_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata);
int rs_ib_destroy_ah(struct ib_ah *ibah, u32 flags);

/* rdma_session_cq.c */
int rs_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct uverbs_attr_bundle *attrs);
int rs_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int rs_ib_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
void rs_comp_irqs_free(struct rs_ibdev *dev);
int rs_comp_irqs_request(struct rs_ibdev *dev);

/* rdma_session_qp.c */
void rs_wq_free(struct rs_ibdev *dev, struct rs_wq *wq);
int rs_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int rs_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int rs_ib_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int rs_ib_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int rs_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);

/* rdma_session_mr.c */
struct ib_mr *rs_ib_reg_mkey_list(struct ib_pd *ibpd, bool pattern,
				  const void *entries, u16 nentries, u32 repeat,
				  int access);
struct ib_mr *rs_ib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *rs_ib_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 iova, int fd,
				       int access,
				       struct uverbs_attr_bundle *attrs);
struct ib_mr *rs_ib_rereg_user_mr(struct ib_mr *ibmr, int flags,
				  u64 start, u64 length, u64 iova,
				  int access, struct ib_pd *ibpd,
				  struct ib_udata *udata);
int rs_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *rs_ib_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *rs_ib_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int rs_ib_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int rs_ib_dealloc_mw(struct ib_mw *ibmw);
int rs_ib_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);


/* rdma_session_debugfs.c: /sys/kernel/debug/rdma_session/<ibdev>/ */
void rs_ib_debugfs_add(struct rs_ibdev *dev);
void rs_ib_debugfs_remove(struct rs_ibdev *dev);

/* rdma_session_odp.c: on-demand paging (RS_CAP_ODP). */
bool rs_odp_supported(struct rs_ibdev *dev);
int rs_odp_init(struct rs_ibdev *dev);
void rs_odp_cleanup(struct rs_ibdev *dev);
void rs_odp_query_device(struct rs_ibdev *dev, struct ib_device_attr *a);
struct ib_mr *rs_odp_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				 u64 iova, int access, u32 netid);
int rs_odp_dereg_mr(struct rs_ibdev *dev, struct rs_mr *mr);
void rs_odp_fault_event(struct rs_ibdev *dev, const struct rs_event *ev);
int rs_ib_advise_mr(struct ib_pd *pd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs);

/* rdma_session_path.c: multipath sessions, port reservation */
unsigned int rs_path_count(void);
struct rs_session *rs_path_get(struct rs_ibdev *dev,
			       const struct rdma_ah_attr *ah);
void rs_path_put(struct rs_ibdev *dev, struct rs_session *s);
int rs_path_set_policy(struct rs_ibdev *dev, struct rs_qp *qp, u32 policy);

/* rdma_session_datapath.c */
int rs_ib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad);
int rs_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad);
int rs_ib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad);
int rs_ib_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int rs_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
/* The handler of a completion vector's IRQ (dev_id: its struct rs_comp_vec). */
irqreturn_t rs_ib_comp_irq(int irq, void *data);

/* rdma_session_restrack.c: rdma resource show's driver details. */
extern const struct ib_device_ops rs_ib_restrack_ops;
int rs_ib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
void rs_qp_session_info(struct rs_qp *qp, u32 *group, u16 *sport,
			u32 *nsessions);

#endif /* RDMA_SESSION_IB_H */
