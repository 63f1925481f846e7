/*
 * libqos driver for the rdma-session RDMA adapter
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/host-utils.h"
#include "qemu/module.h"
#include "hw/pci/pci_regs.h"
#include "../libqtest.h"
#include "pci.h"
#include "libqos-malloc.h"
#include "qgraph.h"
#include "rdma-session.h"

/* ------------------------------------------------------------------ */
/* Byte order                                                          */
/* ------------------------------------------------------------------ */

/*
 * Everything in guest memory is little endian.  Converting in place is
 * its own inverse, so one function serves both directions.
 */
#define SW16(x) le16_to_cpus(&(x))
#define SW32(x) le32_to_cpus(&(x))
#define SW64(x) le64_to_cpus(&(x))

static void qrs_ah_attr_swap(struct rs_ah_attr *ah)
{
    SW32(ah->flow_label);
    SW32(ah->gid_index);
}

void qrs_cmd_to_le(struct rs_admin_cmd *cmd)
{
    int i;

    SW16(cmd->hdr.cmd_id);
    SW32(cmd->hdr.rsvd1);

    switch (cmd->hdr.opcode) {
    case RS_CMD_QUERY_DEVICE:
    case RS_CMD_QUERY_PORT:
    case RS_CMD_QUERY_QP:
        SW64(cmd->query.resp_addr);
        SW32(cmd->query.resp_len);
        SW32(cmd->query.handle);
        break;
    case RS_CMD_DESTROY_PD:
    case RS_CMD_DESTROY_CQ:
    case RS_CMD_DESTROY_QP:
    case RS_CMD_DEREG_MR:
    case RS_CMD_DESTROY_AH:
    case RS_CMD_DESTROY_SESSION:
    case RS_CMD_DESTROY_SESSION_GROUP:
    case RS_CMD_DEL_GID:
    case RS_CMD_DESTROY_LAN_QUEUE:
    case RS_CMD_DESTROY_XRCD:
        SW32(cmd->destroy.handle);
        SW32(cmd->destroy.rsvd);
        break;
    case RS_CMD_CREATE_CQ:
        SW64(cmd->create_cq.ring_addr);
        SW16(cmd->create_cq.comp_vector);
        SW32(cmd->create_cq.uar);
        break;
    case RS_CMD_RESIZE_CQ:
        SW64(cmd->resize_cq.ring_addr);
        SW32(cmd->resize_cq.handle);
        SW32(cmd->resize_cq.consumer_index);
        break;
    case RS_CMD_CREATE_QP:
        SW64(cmd->create_qp.sq_addr);
        SW64(cmd->create_qp.rq_addr);
        SW32(cmd->create_qp.pd);
        SW32(cmd->create_qp.send_cq);
        SW32(cmd->create_qp.recv_cq);
        SW32(cmd->create_qp.srq);
        SW16(cmd->create_qp.max_inline);
        SW32(cmd->create_qp.uar);
        SW32(cmd->create_qp.session_group);
        SW32(cmd->create_qp.xrcd);
        break;
    case RS_CMD_CREATE_SRQ:
        SW64(cmd->create_srq.ring_addr);
        SW32(cmd->create_srq.pd);
        SW32(cmd->create_srq.uar);
        SW32(cmd->create_srq.srq_limit);
        SW32(cmd->create_srq.xrcd);
        SW32(cmd->create_srq.cq);
        break;
    case RS_CMD_MODIFY_SRQ:
        SW64(cmd->modify_srq.ring_addr);
        SW32(cmd->modify_srq.handle);
        SW32(cmd->modify_srq.attr_mask);
        SW32(cmd->modify_srq.srq_limit);
        break;
    case RS_CMD_MODIFY_QP:
        SW64(cmd->modify_qp.attr_addr);
        SW32(cmd->modify_qp.handle);
        SW32(cmd->modify_qp.attr_mask);
        break;
    case RS_CMD_REG_MR:
        SW64(cmd->reg_mr.iova);
        SW64(cmd->reg_mr.length);
        SW64(cmd->reg_mr.pbl_addr);
        SW32(cmd->reg_mr.npages);
        SW32(cmd->reg_mr.pd);
        SW16(cmd->reg_mr.access);
        SW32(cmd->reg_mr.gid_index);
        break;
    case RS_CMD_REREG_MR:
        SW32(cmd->rereg_mr.handle);
        SW32(cmd->rereg_mr.flags);
        SW64(cmd->rereg_mr.iova);
        SW64(cmd->rereg_mr.length);
        SW64(cmd->rereg_mr.pbl_addr);
        SW32(cmd->rereg_mr.npages);
        SW32(cmd->rereg_mr.pd);
        SW16(cmd->rereg_mr.access);
        SW32(cmd->rereg_mr.rsvd);
        break;
    case RS_CMD_CREATE_AH:
        SW32(cmd->create_ah.pd);
        SW32(cmd->create_ah.flow_label);
        SW32(cmd->create_ah.gid_index);
        break;
    case RS_CMD_CREATE_SESSION:
        SW16(cmd->create_session.src_port);
        SW16(cmd->create_session.dst_port);
        SW32(cmd->create_session.gid_index);
        break;
    case RS_CMD_CREATE_SESSION_GROUP:
        for (i = 0; i < RS_MAX_GROUP_SESSIONS; i++) {
            SW32(cmd->create_group.session[i]);
        }
        break;
    case RS_CMD_ADD_GID:
        SW32(cmd->add_gid.index);
        SW32(cmd->add_gid.vni);
        break;
    case RS_CMD_CREATE_LAN_QUEUE:
        SW64(cmd->create_lan_queue.ring_addr);
        SW16(cmd->create_lan_queue.vector);
        SW32(cmd->create_lan_queue.rsvd);
        break;
    case RS_CMD_SET_LAN_RX_MODE:
        SW32(cmd->set_lan_rx_mode.flags);
        SW32(cmd->set_lan_rx_mode.rsvd);
        break;
    case RS_CMD_ATTACH_MCAST:
    case RS_CMD_DETACH_MCAST:
        SW32(cmd->mcast.qp);
        break;
    default:
        break;
    }
}

void qrs_cqe_from_le(struct rs_admin_cqe *cqe)
{
    SW16(cqe->cmd_id);
    SW32(cqe->handle);
    SW32(cqe->result1);
    SW32(cqe->rsvd);
}

void qrs_event_from_le(struct rs_event *ev)
{
    SW16(ev->info);
    SW32(ev->handle);
    SW64(ev->data);
}

void qrs_device_attr_from_le(struct rs_device_attr *a)
{
    SW64(a->max_mr_size);
    SW64(a->page_size_cap);
    SW32(a->abi_version);
    SW32(a->caps);
    SW32(a->max_qp);
    SW32(a->max_qp_wr);
    SW32(a->max_sge);
    SW32(a->max_cq);
    SW32(a->max_cqe);
    SW32(a->max_mr);
    SW32(a->max_pd);
    SW32(a->max_ah);
    SW32(a->max_qp_rd_atom);
    SW32(a->max_sessions);
    SW32(a->max_session_groups);
    SW32(a->max_srq);
    SW32(a->max_srq_wr);
    SW32(a->max_srq_sge);
    SW32(a->max_mcast_grp);
    SW32(a->max_mcast_qp_attach);
    SW32(a->max_gids);
    SW32(a->max_msg_size);
    SW32(a->max_inline);
    SW32(a->num_comp_vectors);
    SW32(a->num_db_pages);
    SW32(a->max_mw);
    SW32(a->max_xrcds);
    SW32(a->max_odp_pages);
    SW32(a->max_dc_contexts);
    SW32(a->max_mkey_entries);
    SW32(a->max_mkey_nest);
    SW32(a->dc_idle_us);
}

void qrs_port_attr_from_le(struct rs_port_attr *a)
{
    SW32(a->gid_tbl_len);
    SW32(a->pkey_tbl_len);
    SW32(a->active_speed_mbps);
}

void qrs_qp_attr_to_le(struct rs_qp_attr *a)
{
    SW32(a->qkey);
    SW32(a->rq_psn);
    SW32(a->sq_psn);
    SW32(a->dest_qp_num);
    SW16(a->access_flags);
    SW16(a->pkey_index);
    SW32(a->session_group);
    qrs_ah_attr_swap(&a->ah);
    SW32(a->qp_type);
}

void qrs_qp_attr_from_le(struct rs_qp_attr *a)
{
    qrs_qp_attr_to_le(a);
}

const char *qrs_status_name(uint8_t status)
{
    static const char *const names[] = {
        [RS_STATUS_OK] = "OK",
        [RS_STATUS_BAD_OPCODE] = "BAD_OPCODE",
        [RS_STATUS_BAD_HANDLE] = "BAD_HANDLE",
        [RS_STATUS_BAD_PARAM] = "BAD_PARAM",
        [RS_STATUS_NO_RESOURCES] = "NO_RESOURCES",
        [RS_STATUS_BUSY] = "BUSY",
        [RS_STATUS_BAD_STATE] = "BAD_STATE",
        [RS_STATUS_BAD_ATTR_MASK] = "BAD_ATTR_MASK",
        [RS_STATUS_BAD_ADDR] = "BAD_ADDR",
        [RS_STATUS_BAD_ALIGN] = "BAD_ALIGN",
        [RS_STATUS_BAD_SIZE] = "BAD_SIZE",
        [RS_STATUS_BAD_ACCESS] = "BAD_ACCESS",
        [RS_STATUS_BAD_PD] = "BAD_PD",
        [RS_STATUS_DMA_ERROR] = "DMA_ERROR",
        [RS_STATUS_NOT_SUPPORTED] = "NOT_SUPPORTED",
        [RS_STATUS_BAD_NETID] = "BAD_NETID",
        [RS_STATUS_EXISTS] = "EXISTS",
    };

    if (status < ARRAY_SIZE(names) && names[status]) {
        return names[status];
    }
    return "(unknown status)";
}

/* ------------------------------------------------------------------ */
/* Registers                                                           */
/* ------------------------------------------------------------------ */

uint32_t qrs_readl(QRdmaSession *d, uint32_t reg)
{
    return qpci_io_readl(&d->dev, d->bar0, reg);
}

void qrs_writel(QRdmaSession *d, uint32_t reg, uint32_t val)
{
    qpci_io_writel(&d->dev, d->bar0, reg, val);
}

void qrs_db_writel(QRdmaSession *d, uint32_t page, uint32_t off, uint32_t val)
{
    qpci_io_writel(&d->dev, d->bar2,
                   ((uint64_t)page << RS_DB_PAGE_SHIFT) + off, val);
}

uint64_t qrs_alloc_zeroed(QRdmaSession *d, size_t size)
{
    uint64_t addr = guest_alloc(d->alloc, size);

    g_assert(addr);
    qtest_memset(qrs_qts(d), addr, 0, size);
    return addr;
}

void qrs_msix_set_vector(QRdmaSession *d, uint16_t vector, uint64_t addr,
                         uint32_t data, bool masked)
{
    uint64_t off = d->dev.msix_table_off + vector * PCI_MSIX_ENTRY_SIZE;

    g_assert(d->dev.msix_enabled);
    qpci_io_writel(&d->dev, d->dev.msix_table_bar,
                   off + PCI_MSIX_ENTRY_LOWER_ADDR, addr & 0xffffffffu);
    qpci_io_writel(&d->dev, d->dev.msix_table_bar,
                   off + PCI_MSIX_ENTRY_UPPER_ADDR, addr >> 32);
    qpci_io_writel(&d->dev, d->dev.msix_table_bar,
                   off + PCI_MSIX_ENTRY_DATA, data);
    qpci_io_writel(&d->dev, d->dev.msix_table_bar,
                   off + PCI_MSIX_ENTRY_VECTOR_CTRL,
                   masked ? PCI_MSIX_ENTRY_CTRL_MASKBIT : 0);
}

/* ------------------------------------------------------------------ */
/* Admin queue                                                         */
/* ------------------------------------------------------------------ */

void qrs_admin_configure(QRdmaSession *d, uint32_t admq_log, uint32_t aeq_log,
                         uint32_t acq_vector, uint32_t aeq_vector)
{
    g_assert(admq_log >= 1 && admq_log <= RS_MAX_ADMQ_LOG);
    g_assert(aeq_log <= RS_MAX_AEQ_LOG);

    d->admq_log = admq_log;
    d->aeq_log = aeq_log;
    d->admq = qrs_alloc_zeroed(d, sizeof(struct rs_admin_cmd) << admq_log);
    d->acq = qrs_alloc_zeroed(d, sizeof(struct rs_admin_cqe) << admq_log);
    d->aeq = aeq_log ? qrs_alloc_zeroed(d, sizeof(struct rs_event) << aeq_log)
                     : 0;
    d->admq_pi = 0;
    d->aeq_ci = 0;

    qrs_writel(d, A_RS_ADMQ_BASE_LO, d->admq & 0xffffffffu);
    qrs_writel(d, A_RS_ADMQ_BASE_HI, d->admq >> 32);
    qrs_writel(d, A_RS_ADMQ_CFG, admq_log << R_RS_ADMQ_CFG_LOG_SIZE_SHIFT);
    qrs_writel(d, A_RS_ACQ_BASE_LO, d->acq & 0xffffffffu);
    qrs_writel(d, A_RS_ACQ_BASE_HI, d->acq >> 32);
    qrs_writel(d, A_RS_ACQ_CFG, acq_vector << R_RS_ACQ_CFG_VECTOR_SHIFT);
    qrs_writel(d, A_RS_AEQ_BASE_LO, d->aeq & 0xffffffffu);
    qrs_writel(d, A_RS_AEQ_BASE_HI, d->aeq >> 32);
    qrs_writel(d, A_RS_AEQ_CFG,
               (aeq_log << R_RS_AEQ_CFG_LOG_SIZE_SHIFT) |
               (aeq_vector << R_RS_AEQ_CFG_VECTOR_SHIFT));
}

void qrs_admin_enable(QRdmaSession *d)
{
    uint32_t status;

    qrs_writel(d, A_RS_CTRL, R_RS_CTRL_ENABLE_MASK);
    status = qrs_readl(d, A_RS_STATUS);
    g_assert_cmphex(status & R_RS_STATUS_FATAL_MASK, ==, 0);
    g_assert_cmphex(status & R_RS_STATUS_READY_MASK, ==,
                    R_RS_STATUS_READY_MASK);
    g_assert_cmphex(qrs_readl(d, A_RS_CTRL), ==, R_RS_CTRL_ENABLE_MASK);
    g_assert_cmphex(qrs_readl(d, A_RS_ADMQ_CI), ==, 0);
    d->admq_pi = 0;
    d->aeq_ci = 0;
}

void qrs_admin_init(QRdmaSession *d, uint32_t admq_log, uint32_t aeq_log)
{
    qrs_admin_configure(d, admq_log, aeq_log, RS_MSIX_ADMIN_VECTOR,
                        RS_MSIX_ADMIN_VECTOR);
    qrs_admin_enable(d);
}

void qrs_reset(QRdmaSession *d)
{
    qrs_writel(d, A_RS_CTRL, R_RS_CTRL_RESET_MASK);
    g_assert_cmphex(qrs_readl(d, A_RS_CTRL), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS) &
                    (R_RS_STATUS_READY_MASK | R_RS_STATUS_FATAL_MASK), ==, 0);
    d->admq_pi = 0;
    d->aeq_ci = 0;
}

uint32_t qrs_admin_submit(QRdmaSession *d, const struct rs_admin_cmd *cmd)
{
    struct rs_admin_cmd c = *cmd;
    uint32_t index = d->admq_pi;
    uint32_t slot = index & ((1u << d->admq_log) - 1);

    c.hdr.cmd_id = d->next_cmd_id++;
    qrs_cmd_to_le(&c);
    qtest_memwrite(qrs_qts(d), d->admq + slot * sizeof(c), &c, sizeof(c));
    d->admq_pi++;
    qrs_writel(d, A_RS_ADMQ_DB, d->admq_pi);
    return index;
}

bool qrs_admin_poll(QRdmaSession *d, uint32_t index, struct rs_admin_cqe *cqe,
                    int64_t timeout_us)
{
    uint32_t slot = index & ((1u << d->admq_log) - 1);
    uint8_t phase = qrs_ring_phase(index, d->admq_log);
    int64_t end = g_get_monotonic_time() + timeout_us;

    do {
        if (d->idle) {
            d->idle(qrs_qts(d));
        }
        qtest_memread(qrs_qts(d), d->acq + slot * sizeof(*cqe), cqe,
                      sizeof(*cqe));
        if ((cqe->flags & RS_ACQE_PHASE) == phase) {
            qrs_cqe_from_le(cqe);
            return true;
        }
    } while (g_get_monotonic_time() < end);
    qrs_cqe_from_le(cqe);
    return false;
}

void qrs_admin_wait(QRdmaSession *d, uint32_t index, struct rs_admin_cqe *cqe)
{
    if (!qrs_admin_poll(d, index, cqe, RS_QOS_TIMEOUT_US)) {
        g_error("rdma-session: no admin completion for index %u "
                "(ADMQ_CI=%u STATUS=0x%x FATAL_CODE=%u)", index,
                qrs_readl(d, A_RS_ADMQ_CI), qrs_readl(d, A_RS_STATUS),
                qrs_readl(d, A_RS_FATAL_CODE));
    }
}

uint8_t qrs_admin_exec(QRdmaSession *d, const struct rs_admin_cmd *cmd,
                       struct rs_admin_cqe *cqe)
{
    struct rs_admin_cqe local;
    uint16_t id = d->next_cmd_id;
    uint32_t index;

    if (!cqe) {
        cqe = &local;
    }
    index = qrs_admin_submit(d, cmd);
    qrs_admin_wait(d, index, cqe);
    g_assert_cmpuint(cqe->cmd_id, ==, id);
    return cqe->status;
}

bool qrs_aeq_poll(QRdmaSession *d, struct rs_event *ev, int64_t timeout_us)
{
    uint32_t slot = d->aeq_ci & ((1u << d->aeq_log) - 1);
    uint8_t phase = qrs_ring_phase(d->aeq_ci, d->aeq_log);
    int64_t end = g_get_monotonic_time() + timeout_us;

    g_assert(d->aeq);
    do {
        if (d->idle) {
            d->idle(qrs_qts(d));
        }
        qtest_memread(qrs_qts(d), d->aeq + slot * sizeof(*ev), ev,
                      sizeof(*ev));
        if ((ev->flags & RS_EQE_PHASE) == phase) {
            qrs_event_from_le(ev);
            d->aeq_ci++;
            qrs_writel(d, A_RS_AEQ_CI, d->aeq_ci);
            return true;
        }
    } while (g_get_monotonic_time() < end);
    return false;
}

/* ------------------------------------------------------------------ */
/* Commands                                                            */
/* ------------------------------------------------------------------ */

uint8_t qrs_admin_cmd(QRdmaSession *d, uint8_t opcode, const void *body,
                      size_t len, uint32_t *handle, uint32_t *result1)
{
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    uint8_t status;

    g_assert_cmpuint(len, <=, sizeof(cmd.raw));
    memset(&cmd, 0, sizeof(cmd));
    cmd.hdr.opcode = opcode;
    if (len) {
        memcpy(cmd.raw, body, len);
    }
    status = qrs_admin_exec(d, &cmd, &cqe);
    if (handle) {
        *handle = cqe.handle;
    }
    if (result1) {
        *result1 = cqe.result1;
    }
    return status;
}

/*
 * QUERY_* into the scratch buffer, which is first filled with @fill so
 * that a field the device leaves alone shows.
 */
static uint8_t qrs_query(QRdmaSession *d, uint8_t opcode, uint32_t handle,
                         void *resp, uint32_t len, uint8_t fill)
{
    struct rs_cmd_query q = {
        .resp_addr = d->scratch, .resp_len = len, .handle = handle,
    };
    uint8_t status;

    g_assert_cmpuint(len, <=, RS_QOS_SCRATCH_SIZE);
    qtest_memset(qrs_qts(d), d->scratch, fill, len);
    status = qrs_admin_cmd(d, opcode, &q, sizeof(q), NULL, NULL);
    qtest_memread(qrs_qts(d), d->scratch, resp, len);
    return status;
}

uint8_t qrs_query_device(QRdmaSession *d, struct rs_device_attr *attr)
{
    uint8_t status = qrs_query(d, RS_CMD_QUERY_DEVICE, 0, attr,
                               sizeof(*attr), 0);

    qrs_device_attr_from_le(attr);
    return status;
}

/*
 * QUERY_DEVICE with resp_len len, as a driver built for an older ABI
 * asks: the bytes the device does not write keep the fill 0xee.
 */
uint8_t qrs_query_device_len(QRdmaSession *d, struct rs_device_attr *attr,
                             uint32_t len)
{
    uint8_t status;

    g_assert_cmpuint(len, <=, sizeof(*attr));
    memset(attr, 0xee, sizeof(*attr));
    status = qrs_query(d, RS_CMD_QUERY_DEVICE, 0, attr, len, 0xee);
    qrs_device_attr_from_le(attr);
    return status;
}

uint8_t qrs_query_port(QRdmaSession *d, uint32_t port,
                       struct rs_port_attr *attr)
{
    uint8_t status = qrs_query(d, RS_CMD_QUERY_PORT, port, attr,
                               sizeof(*attr), 0);

    qrs_port_attr_from_le(attr);
    return status;
}

uint8_t qrs_query_qp(QRdmaSession *d, uint32_t handle,
                     struct rs_qp_attr *attr)
{
    uint8_t status = qrs_query(d, RS_CMD_QUERY_QP, handle, attr,
                               sizeof(*attr), 0xee);

    qrs_qp_attr_from_le(attr);
    return status;
}

uint8_t qrs_create_pd(QRdmaSession *d, uint32_t *handle)
{
    return qrs_create_pd_flags(d, 0, handle);
}

uint8_t qrs_create_pd_flags(QRdmaSession *d, uint32_t flags,
                            uint32_t *handle)
{
    /* (qrs_cmd_to_le() has no case for CREATE_PD) */
    struct rs_cmd_create_pd c = { .flags = cpu_to_le32(flags) };

    return qrs_admin_cmd(d, RS_CMD_CREATE_PD, &c, sizeof(c), handle, NULL);
}

uint8_t qrs_destroy(QRdmaSession *d, uint8_t opcode, uint32_t handle)
{
    struct rs_cmd_destroy c = { .handle = handle };

    return qrs_admin_cmd(d, opcode, &c, sizeof(c), NULL, NULL);
}

uint8_t qrs_create_lan_queue(QRdmaSession *d, uint8_t type, uint64_t ring,
                             uint8_t log_size, uint16_t vector,
                             uint32_t *handle)
{
    struct rs_cmd_create_lan_queue c = {
        .ring_addr = ring, .type = type, .log_size = log_size,
        .vector = vector,
    };

    return qrs_admin_cmd(d, RS_CMD_CREATE_LAN_QUEUE, &c, sizeof(c), handle,
                         NULL);
}

uint8_t qrs_set_lan_rx_mode(QRdmaSession *d, uint32_t flags)
{
    struct rs_cmd_set_lan_rx_mode c = { .flags = flags };

    return qrs_admin_cmd(d, RS_CMD_SET_LAN_RX_MODE, &c, sizeof(c), NULL,
                         NULL);
}

uint8_t qrs_mcast(QRdmaSession *d, uint8_t opcode, const uint8_t *gid,
                  uint32_t qp)
{
    struct rs_cmd_mcast c = { .qp = qp };

    memcpy(c.gid, gid, sizeof(c.gid));
    return qrs_admin_cmd(d, opcode, &c, sizeof(c), NULL, NULL);
}

uint8_t qrs_create_cq(QRdmaSession *d, uint64_t ring, uint8_t log_size,
                      uint16_t comp_vector, uint32_t uar, uint32_t *handle)
{
    struct rs_cmd_create_cq c = {
        .ring_addr = ring, .log_size = log_size, .comp_vector = comp_vector,
        .uar = uar,
    };

    return qrs_admin_cmd(d, RS_CMD_CREATE_CQ, &c, sizeof(c), handle, NULL);
}

uint8_t qrs_resize_cq(QRdmaSession *d, uint32_t handle, uint64_t ring,
                      uint8_t log_size, uint32_t consumer_index)
{
    struct rs_cmd_resize_cq c = {
        .handle = handle, .ring_addr = ring, .log_size = log_size,
        .consumer_index = consumer_index,
    };
    uint32_t echoed;
    uint8_t status;

    status = qrs_admin_cmd(d, RS_CMD_RESIZE_CQ, &c, sizeof(c), &echoed,
                           NULL);
    if (status == RS_STATUS_OK) {
        g_assert_cmphex(echoed, ==, handle);
    }
    return status;
}

uint8_t qrs_create_qp(QRdmaSession *d, const struct rs_cmd_create_qp *c,
                      uint32_t *handle, uint32_t *qpn)
{
    return qrs_admin_cmd(d, RS_CMD_CREATE_QP, c, sizeof(*c), handle, qpn);
}

uint8_t qrs_modify_qp(QRdmaSession *d, uint32_t handle,
                      const struct rs_qp_attr *attr, uint32_t mask)
{
    struct rs_cmd_modify_qp c = {
        .attr_addr = d->scratch, .handle = handle, .attr_mask = mask,
    };
    struct rs_qp_attr a = *attr;

    qrs_qp_attr_to_le(&a);
    qtest_memwrite(qrs_qts(d), d->scratch, &a, sizeof(a));
    return qrs_admin_cmd(d, RS_CMD_MODIFY_QP, &c, sizeof(c), NULL, NULL);
}

uint8_t qrs_create_srq(QRdmaSession *d, const struct rs_cmd_create_srq *c,
                       uint32_t *handle)
{
    return qrs_admin_cmd(d, RS_CMD_CREATE_SRQ, c, sizeof(*c), handle, NULL);
}

uint8_t qrs_modify_srq(QRdmaSession *d, uint32_t handle, uint32_t mask,
                       uint32_t limit, uint64_t ring, uint8_t log_size,
                       uint32_t *moved)
{
    struct rs_cmd_modify_srq c = {
        .handle = handle, .attr_mask = mask, .srq_limit = limit,
        .ring_addr = ring, .log_size = log_size,
    };

    return qrs_admin_cmd(d, RS_CMD_MODIFY_SRQ, &c, sizeof(c), NULL, moved);
}

uint8_t qrs_reg_mr(QRdmaSession *d, const struct rs_cmd_reg_mr *c,
                   uint32_t *lkey, uint32_t *rkey)
{
    return qrs_admin_cmd(d, RS_CMD_REG_MR, c, sizeof(*c), lkey, rkey);
}

uint8_t qrs_rereg_mr(QRdmaSession *d, const struct rs_cmd_rereg_mr *c,
                     uint32_t *handle, uint32_t *key)
{
    return qrs_admin_cmd(d, RS_CMD_REREG_MR, c, sizeof(*c), handle, key);
}

uint8_t qrs_create_ah(QRdmaSession *d, const struct rs_cmd_create_ah *c,
                      uint32_t *handle)
{
    return qrs_admin_cmd(d, RS_CMD_CREATE_AH, c, sizeof(*c), handle, NULL);
}

uint8_t qrs_create_session(QRdmaSession *d,
                           const struct rs_cmd_create_session *c,
                           uint32_t *handle)
{
    return qrs_admin_cmd(d, RS_CMD_CREATE_SESSION, c, sizeof(*c), handle,
                         NULL);
}

uint8_t qrs_create_session_group(QRdmaSession *d,
                                 const struct rs_cmd_create_session_group *c,
                                 uint32_t *handle)
{
    return qrs_admin_cmd(d, RS_CMD_CREATE_SESSION_GROUP, c, sizeof(*c),
                         handle, NULL);
}

uint8_t qrs_add_gid(QRdmaSession *d, const struct rs_cmd_add_gid *c,
                    uint32_t *index)
{
    return qrs_admin_cmd(d, RS_CMD_ADD_GID, c, sizeof(*c), index, NULL);
}

uint32_t qrs_recv_stride(uint32_t max_sge)
{
    return pow2ceil(sizeof(struct rs_recv_wqe_ctrl) +
                    max_sge * sizeof(struct rs_sge));
}

uint64_t qrs_qp_sq_bytes(const struct rs_cmd_create_qp *c)
{
    uint64_t stride = pow2ceil(64 + MAX(16 * c->max_send_sge, c->max_inline));

    return stride << c->sq_log_size;
}

uint64_t qrs_qp_rq_bytes(const struct rs_cmd_create_qp *c)
{
    return (uint64_t)qrs_recv_stride(c->max_recv_sge) << c->rq_log_size;
}

void qrs_qos_socket_netdev(GString *cmd_line, int fd)
{
    static const char user[] = RS_QOS_NETDEV_OPTS;
    g_autofree char *sock = g_strdup_printf(" -netdev socket,fd=%d,id="
                                            RS_QOS_NETDEV_ID " ", fd);
    const char *at = strstr(cmd_line->str, user);

    g_assert_nonnull(at);
    g_string_erase(cmd_line, at - cmd_line->str, strlen(user));
    g_string_insert(cmd_line, at - cmd_line->str, sock);
}

/* ------------------------------------------------------------------ */
/* qos graph node                                                      */
/* ------------------------------------------------------------------ */

/* The first adapter found: a test may add more at higher slots. */
static void qrs_foreach_callback(QPCIDevice *dev, int devfn, void *data)
{
    QPCIDevice *res = data;

    if (!res->bus) {
        memcpy(res, dev, sizeof(QPCIDevice));
    }
    g_free(dev);
}

/* Assign and map the BARs of the adapter in d->dev. */
static void qrs_map(QRdmaSession *d, QGuestAllocator *alloc)
{
    d->alloc = alloc;
    d->bar0 = qpci_iomap(&d->dev, RS_BAR_REGS, &d->bar0_size);
    d->bar2 = qpci_iomap(&d->dev, RS_BAR_DOORBELL, &d->bar2_size);
    d->scratch = guest_alloc(alloc, RS_QOS_SCRATCH_SIZE);
    g_assert(d->scratch);
}

static void qrs_start(QRdmaSession *d)
{
    qpci_device_enable(&d->dev);
    qpci_msix_enable(&d->dev);
    /* The adapter starts disabled after any reset. */
    g_assert_cmphex(qrs_readl(d, A_RS_MAGIC), ==, RS_MAGIC);
    g_assert_cmphex(qrs_readl(d, A_RS_CTRL), ==, 0);
}

static void qrs_unmap(QRdmaSession *d)
{
    if (d->dev.msix_enabled) {
        qpci_msix_disable(&d->dev);
    }
    qpci_iounmap(&d->dev, d->bar0);
    qpci_iounmap(&d->dev, d->bar2);
}

void qrs_attach_new(QRdmaSession *d, QPCIBus *bus, int devfn,
                    QGuestAllocator *alloc)
{
    QPCIDevice *dev = qpci_device_find(bus, devfn);

    g_assert(dev);
    memset(d, 0, sizeof(*d));
    d->dev = *dev;
    g_free(dev);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_VENDOR_ID), ==,
                    RS_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_DEVICE_ID), ==,
                    RS_PCI_DEVICE_ID);
    qrs_map(d, alloc);
    qrs_start(d);
}

void qrs_detach(QRdmaSession *d)
{
    qrs_unmap(d);
    guest_free(d->alloc, d->scratch);
}

void qrs_attach_existing(QRdmaSession *d, QPCIBus *bus, int devfn,
                         QGuestAllocator *alloc)
{
    QPCIDevice *dev = qpci_device_find(bus, devfn);
    uint32_t bar0, bar2_lo, bar2_hi;

    g_assert(dev);
    memset(d, 0, sizeof(*d));
    d->dev = *dev;
    g_free(dev);
    d->alloc = alloc;

    bar0 = qpci_config_readl(&d->dev, PCI_BASE_ADDRESS_0);
    bar2_lo = qpci_config_readl(&d->dev, PCI_BASE_ADDRESS_2);
    bar2_hi = qpci_config_readl(&d->dev, PCI_BASE_ADDRESS_3);
    d->bar0.addr = bar0 & PCI_BASE_ADDRESS_MEM_MASK;
    d->bar0.is_io = false;
    d->bar2.addr = ((uint64_t)bar2_hi << 32) |
                   (bar2_lo & PCI_BASE_ADDRESS_MEM_MASK);
    d->bar2.is_io = false;
    d->bar0_size = RS_REGS_SIZE;
}

static void qrs_pci_destructor(QOSGraphObject *obj)
{
    qrs_unmap((QRdmaSession *)obj);
}

static void qrs_pci_start_hw(QOSGraphObject *obj)
{
    qrs_start((QRdmaSession *)obj);
}

static void *qrs_pci_get_driver(void *obj, const char *interface)
{
    QRdmaSession *d = obj;

    if (!g_strcmp0(interface, "rdma-session")) {
        return d;
    }
    if (!g_strcmp0(interface, "pci-device")) {
        return &d->dev;
    }

    fprintf(stderr, "%s not present in rdma-session\n", interface);
    g_assert_not_reached();
}

static void *qrs_pci_create(void *pci_bus, QGuestAllocator *alloc, void *addr)
{
    QRdmaSession *d = g_new0(QRdmaSession, 1);
    QPCIBus *bus = pci_bus;
    QPCIAddress *address = addr;

    qpci_device_foreach(bus, address->vendor_id, address->device_id,
                        qrs_foreach_callback, &d->dev);
    g_assert(d->dev.bus);

    qrs_map(d, alloc);
    d->obj.get_driver = qrs_pci_get_driver;
    d->obj.start_hw = qrs_pci_start_hw;
    d->obj.destructor = qrs_pci_destructor;

    return &d->obj;
}

static void qrs_register_nodes(void)
{
    QPCIAddress addr = {
        .vendor_id = RS_PCI_VENDOR_ID,
        .device_id = RS_PCI_DEVICE_ID,
    };
    QOSGraphEdgeOptions opts = {
        .extra_device_opts = RS_QOS_DEVICE_OPTS,
        .before_cmd_line = RS_QOS_NETDEV_OPTS,
    };

    add_qpci_address(&opts, &addr);
    qos_node_create_driver("rdma-session", qrs_pci_create);
    qos_node_consumes("rdma-session", "pci-bus", &opts);
    qos_node_produces("rdma-session", "pci-device");
}

libqos_init(qrs_register_nodes);
