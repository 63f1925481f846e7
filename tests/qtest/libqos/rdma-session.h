/*
 * libqos driver for the rdma-session RDMA adapter
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef LIBQOS_RDMA_SESSION_H
#define LIBQOS_RDMA_SESSION_H

#include "qgraph.h"
#include "pci.h"
#include "libqos-malloc.h"
#include "hw/rdma-session/rdma-session-abi.h"

/* The netdev the qos graph attaches the adapter to, and its MAC. */
#define RS_QOS_NETDEV_ID        "rsnet0"
#define RS_QOS_MAC_STR          "52:54:00:12:34:70"
#define RS_QOS_MAC              { 0x52, 0x54, 0x00, 0x12, 0x34, 0x70 }
/*
 * Bundles off: the tests' wires carry standard RoCEv2 frames only; the
 * bundle area's tests turn them on.
 */
#define RS_QOS_DEVICE_OPTS \
    "netdev=" RS_QOS_NETDEV_ID ",mac=" RS_QOS_MAC_STR ",bundle=off"
#define RS_QOS_NETDEV_OPTS      " -netdev user,id=" RS_QOS_NETDEV_ID " "

/*
 * For a test's QOSGraphTestOptions.before: attach the adapter to a
 * "-netdev socket,fd=@fd" backend (one end of a socketpair the test keeps
 * the other end of) instead of the user-mode network.  Frames on the
 * socket carry a 4-byte big-endian length prefix.
 */
void qrs_qos_socket_netdev(GString *cmd_line, int fd);

/* Default ring sizes of qrs_admin_init(). */
#define RS_QOS_ADMQ_LOG         5
#define RS_QOS_AEQ_LOG          4

/* How long qrs_admin_wait() and qrs_aeq_poll() poll before failing. */
#define RS_QOS_TIMEOUT_US       (5 * G_USEC_PER_SEC)

/* Size of the per-device scratch buffer used for responses/attributes. */
#define RS_QOS_SCRATCH_SIZE     4096

typedef struct QRdmaSession QRdmaSession;

struct QRdmaSession {
    QOSGraphObject obj;
    QPCIDevice dev;
    QPCIBar bar0;                   /* registers */
    QPCIBar bar2;                   /* doorbell pages */
    uint64_t bar0_size;
    uint64_t bar2_size;
    QGuestAllocator *alloc;

    /* Admin queue as the driver sees it. */
    uint64_t admq;                  /* 64 << admq_log bytes */
    uint64_t acq;                   /* 16 << admq_log bytes */
    uint64_t aeq;                   /* 16 << aeq_log bytes, 0: no AEQ */
    uint32_t admq_log;
    uint32_t aeq_log;
    uint32_t admq_pi;               /* free-running producer index */
    uint32_t aeq_ci;                /* free-running consumer index */
    uint16_t next_cmd_id;

    uint64_t scratch;               /* RS_QOS_SCRATCH_SIZE bytes */

    /*
     * Called in every polling loop of this driver.  NULL under qtest,
     * where QEMU runs in a process of its own; an in-process fuzzer runs
     * QEMU's main loop here, in which the device's bottom halves work.
     */
    void (*idle)(QTestState *qts);
};

static inline QTestState *qrs_qts(QRdmaSession *d)
{
    return d->dev.bus->qts;
}

/* Register and doorbell access. */
uint32_t qrs_readl(QRdmaSession *d, uint32_t reg);
void qrs_writel(QRdmaSession *d, uint32_t reg, uint32_t val);
void qrs_db_writel(QRdmaSession *d, uint32_t page, uint32_t off, uint32_t val);

/*
 * Attach @d to an already configured device (BARs assigned, e.g. after an
 * incoming migration): reads the BAR addresses from config space instead
 * of assigning new ones.
 */
void qrs_attach_existing(QRdmaSession *d, QPCIBus *bus, int devfn,
                         QGuestAllocator *alloc);

/*
 * Attach @d to a further adapter at @devfn that the test put on the
 * command line (the qos graph's adapter is the one in the lowest slot):
 * assigns its BARs and enables it as the graph does.  qrs_detach() undoes
 * it before the test ends.
 */
void qrs_attach_new(QRdmaSession *d, QPCIBus *bus, int devfn,
                    QGuestAllocator *alloc);
void qrs_detach(QRdmaSession *d);

/* MSI-X: point table entry @vector at guest address @addr with @data. */
void qrs_msix_set_vector(QRdmaSession *d, uint16_t vector, uint64_t addr,
                         uint32_t data, bool masked);

/*
 * Admin queue bring-up.  qrs_admin_configure() allocates and clears the
 * rings and programs the ring registers (aeq_log == 0: no event queue);
 * qrs_admin_enable() sets CTRL.ENABLE and asserts STATUS.READY.
 */
void qrs_admin_configure(QRdmaSession *d, uint32_t admq_log, uint32_t aeq_log,
                         uint32_t acq_vector, uint32_t aeq_vector);
void qrs_admin_enable(QRdmaSession *d);
void qrs_admin_init(QRdmaSession *d, uint32_t admq_log, uint32_t aeq_log);
/* CTRL.RESET and check the power-on register state. */
void qrs_reset(QRdmaSession *d);

/* Phase bit the device writes for ring position @index. */
static inline uint8_t qrs_ring_phase(uint32_t index, uint32_t log)
{
    return ((index >> log) & 1) ^ 1;
}

/*
 * Queue one command and ring the doorbell; returns its ring index.  The
 * command id is assigned here.  Structures are converted to little endian.
 */
uint32_t qrs_admin_submit(QRdmaSession *d, const struct rs_admin_cmd *cmd);
/* Poll the ACQ slot of @index for its phase bit; false on timeout. */
bool qrs_admin_poll(QRdmaSession *d, uint32_t index,
                    struct rs_admin_cqe *cqe, int64_t timeout_us);
/* Like qrs_admin_poll but fails the test on a timeout. */
void qrs_admin_wait(QRdmaSession *d, uint32_t index,
                    struct rs_admin_cqe *cqe);
/* Submit + wait; checks cmd_id; returns the status. */
uint8_t qrs_admin_exec(QRdmaSession *d, const struct rs_admin_cmd *cmd,
                       struct rs_admin_cqe *cqe);

/* Read the next event from the AEQ (waits up to @timeout_us). */
bool qrs_aeq_poll(QRdmaSession *d, struct rs_event *ev, int64_t timeout_us);

/*
 * Run one admin command: a zeroed command of @opcode with the @len bytes
 * of @body after its header (a struct rs_cmd_*, in CPU byte order), then
 * submit and wait as qrs_admin_exec().  Returns the completion status;
 * the completion's handle and result1 fields go to @handle and @result1
 * when they are not NULL.  Every command wrapper below is built on it.
 */
uint8_t qrs_admin_cmd(QRdmaSession *d, uint8_t opcode, const void *body,
                      size_t len, uint32_t *handle, uint32_t *result1);

/* Commands.  Each returns the completion status. */
uint8_t qrs_query_device(QRdmaSession *d, struct rs_device_attr *attr);
uint8_t qrs_query_device_len(QRdmaSession *d, struct rs_device_attr *attr,
                             uint32_t len);
uint8_t qrs_query_port(QRdmaSession *d, uint32_t port,
                       struct rs_port_attr *attr);
uint8_t qrs_create_pd(QRdmaSession *d, uint32_t *handle);
uint8_t qrs_create_pd_flags(QRdmaSession *d, uint32_t flags,
                            uint32_t *handle);
uint8_t qrs_destroy(QRdmaSession *d, uint8_t opcode, uint32_t handle);
uint8_t qrs_create_lan_queue(QRdmaSession *d, uint8_t type, uint64_t ring,
                             uint8_t log_size, uint16_t vector,
                             uint32_t *handle);
uint8_t qrs_set_lan_rx_mode(QRdmaSession *d, uint32_t flags);
/* RS_CMD_ATTACH_MCAST or RS_CMD_DETACH_MCAST of UD QP @qp and @gid. */
uint8_t qrs_mcast(QRdmaSession *d, uint8_t opcode, const uint8_t *gid,
                  uint32_t qp);
uint8_t qrs_create_cq(QRdmaSession *d, uint64_t ring, uint8_t log_size,
                      uint16_t comp_vector, uint32_t uar, uint32_t *handle);
/* On success also checks that the completion names the CQ. */
uint8_t qrs_resize_cq(QRdmaSession *d, uint32_t handle, uint64_t ring,
                      uint8_t log_size, uint32_t consumer_index);
uint8_t qrs_create_qp(QRdmaSession *d, const struct rs_cmd_create_qp *c,
                      uint32_t *handle, uint32_t *qpn);
uint8_t qrs_modify_qp(QRdmaSession *d, uint32_t handle,
                      const struct rs_qp_attr *attr, uint32_t mask);
/* The scratch buffer is filled with 0xee first: a field left alone shows. */
uint8_t qrs_query_qp(QRdmaSession *d, uint32_t handle,
                     struct rs_qp_attr *attr);
uint8_t qrs_create_srq(QRdmaSession *d, const struct rs_cmd_create_srq *c,
                       uint32_t *handle);
/* @moved: the WQEs a resize moved to the new ring. */
uint8_t qrs_modify_srq(QRdmaSession *d, uint32_t handle, uint32_t mask,
                       uint32_t limit, uint64_t ring, uint8_t log_size,
                       uint32_t *moved);
uint8_t qrs_reg_mr(QRdmaSession *d, const struct rs_cmd_reg_mr *c,
                   uint32_t *lkey, uint32_t *rkey);
/* REREG_MR (ABI 1.7): @handle and @key from its completion. */
uint8_t qrs_rereg_mr(QRdmaSession *d, const struct rs_cmd_rereg_mr *c,
                     uint32_t *handle, uint32_t *key);
uint8_t qrs_create_ah(QRdmaSession *d, const struct rs_cmd_create_ah *c,
                      uint32_t *handle);
uint8_t qrs_create_session(QRdmaSession *d,
                           const struct rs_cmd_create_session *c,
                           uint32_t *handle);
uint8_t qrs_create_session_group(QRdmaSession *d,
                                 const struct rs_cmd_create_session_group *c,
                                 uint32_t *handle);
uint8_t qrs_add_gid(QRdmaSession *d, const struct rs_cmd_add_gid *c,
                    uint32_t *index);

/* Ring sizes of a QP as the device computes them. */
uint64_t qrs_qp_sq_bytes(const struct rs_cmd_create_qp *c);
uint64_t qrs_qp_rq_bytes(const struct rs_cmd_create_qp *c);
/* Size of a receive WQE (RQ or SRQ) with @max_sge entries. */
uint32_t qrs_recv_stride(uint32_t max_sge);

/* Guest memory helpers. */
uint64_t qrs_alloc_zeroed(QRdmaSession *d, size_t size);

/* Byte order of the structures in guest memory. */
void qrs_cmd_to_le(struct rs_admin_cmd *cmd);
void qrs_cqe_from_le(struct rs_admin_cqe *cqe);
void qrs_event_from_le(struct rs_event *ev);
void qrs_device_attr_from_le(struct rs_device_attr *a);
void qrs_port_attr_from_le(struct rs_port_attr *a);
void qrs_qp_attr_to_le(struct rs_qp_attr *a);
void qrs_qp_attr_from_le(struct rs_qp_attr *a);

const char *qrs_status_name(uint8_t status);

#endif
