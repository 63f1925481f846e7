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

static void rs_ah_attr_swap(struct rs_ah_attr *ah)
{
    SW32(ah->flow_label);
    SW32(ah->gid_index);
}

void rs_cmd_to_le(struct rs_admin_cmd *cmd)
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
        break;
    case RS_CMD_CREATE_SRQ:
        SW64(cmd->create_srq.ring_addr);
        SW32(cmd->create_srq.pd);
        SW32(cmd->create_srq.uar);
        SW32(cmd->create_srq.srq_limit);
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
    default:
        break;
    }
}

void rs_cqe_from_le(struct rs_admin_cqe *cqe)
{
    SW16(cqe->cmd_id);
    SW32(cqe->handle);
    SW32(cqe->result1);
    SW32(cqe->rsvd);
}

void rs_event_from_le(struct rs_event *ev)
{
    SW16(ev->rsvd);
    SW32(ev->handle);
    SW64(ev->data);
}

void rs_device_attr_from_le(struct rs_device_attr *a)
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
    SW32(a->max_gids);
    SW32(a->max_msg_size);
    SW32(a->max_inline);
    SW32(a->num_comp_vectors);
    SW32(a->num_db_pages);
}

void rs_port_attr_from_le(struct rs_port_attr *a)
{
    SW32(a->gid_tbl_len);
    SW32(a->pkey_tbl_len);
    SW32(a->active_speed_mbps);
}

void rs_qp_attr_to_le(struct rs_qp_attr *a)
{
    SW32(a->qkey);
    SW32(a->rq_psn);
    SW32(a->sq_psn);
    SW32(a->dest_qp_num);
    SW16(a->access_flags);
    SW16(a->pkey_index);
    SW32(a->session_group);
    rs_ah_attr_swap(&a->ah);
    SW32(a->qp_type);
}

void rs_qp_attr_from_le(struct rs_qp_attr *a)
{
    rs_qp_attr_to_le(a);
}

const char *rs_status_name(uint8_t status)
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

uint32_t rs_readl(QRdmaSession *d, uint32_t reg)
{
    return qpci_io_readl(&d->dev, d->bar0, reg);
}

void rs_writel(QRdmaSession *d, uint32_t reg, uint32_t val)
{
    qpci_io_writel(&d->dev, d->bar0, reg, val);
}

void rs_db_writel(QRdmaSession *d, uint32_t page, uint32_t off, uint32_t val)
{
    qpci_io_writel(&d->dev, d->bar2,
                   ((uint64_t)page << RS_DB_PAGE_SHIFT) + off, val);
}

uint64_t rs_alloc_zeroed(QRdmaSession *d, size_t size)
{
    uint64_t addr = guest_alloc(d->alloc, size);

    g_assert(addr);
    qtest_memset(rs_qts(d), addr, 0, size);
    return addr;
}

void rs_msix_set_vector(QRdmaSession *d, uint16_t vector, uint64_t addr,
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

void rs_admin_configure(QRdmaSession *d, uint32_t admq_log, uint32_t aeq_log,
                        uint32_t acq_vector, uint32_t aeq_vector)
{
    g_assert(admq_log >= 1 && admq_log <= RS_MAX_ADMQ_LOG);
    g_assert(aeq_log <= RS_MAX_AEQ_LOG);

    d->admq_log = admq_log;
    d->aeq_log = aeq_log;
    d->admq = rs_alloc_zeroed(d, sizeof(struct rs_admin_cmd) << admq_log);
    d->acq = rs_alloc_zeroed(d, sizeof(struct rs_admin_cqe) << admq_log);
    d->aeq = aeq_log ? rs_alloc_zeroed(d, sizeof(struct rs_event) << aeq_log)
                     : 0;
    d->admq_pi = 0;
    d->aeq_ci = 0;

    rs_writel(d, A_RS_ADMQ_BASE_LO, d->admq & 0xffffffffu);
    rs_writel(d, A_RS_ADMQ_BASE_HI, d->admq >> 32);
    rs_writel(d, A_RS_ADMQ_CFG, admq_log << R_RS_ADMQ_CFG_LOG_SIZE_SHIFT);
    rs_writel(d, A_RS_ACQ_BASE_LO, d->acq & 0xffffffffu);
    rs_writel(d, A_RS_ACQ_BASE_HI, d->acq >> 32);
    rs_writel(d, A_RS_ACQ_CFG, acq_vector << R_RS_ACQ_CFG_VECTOR_SHIFT);
    rs_writel(d, A_RS_AEQ_BASE_LO, d->aeq & 0xffffffffu);
    rs_writel(d, A_RS_AEQ_BASE_HI, d->aeq >> 32);
    rs_writel(d, A_RS_AEQ_CFG,
              (aeq_log << R_RS_AEQ_CFG_LOG_SIZE_SHIFT) |
              (aeq_vector << R_RS_AEQ_CFG_VECTOR_SHIFT));
}

void rs_admin_enable(QRdmaSession *d)
{
    uint32_t status;

    rs_writel(d, A_RS_CTRL, R_RS_CTRL_ENABLE_MASK);
    status = rs_readl(d, A_RS_STATUS);
    g_assert_cmphex(status & R_RS_STATUS_FATAL_MASK, ==, 0);
    g_assert_cmphex(status & R_RS_STATUS_READY_MASK, ==,
                    R_RS_STATUS_READY_MASK);
    g_assert_cmphex(rs_readl(d, A_RS_CTRL), ==, R_RS_CTRL_ENABLE_MASK);
    g_assert_cmphex(rs_readl(d, A_RS_ADMQ_CI), ==, 0);
    d->admq_pi = 0;
    d->aeq_ci = 0;
}

void rs_admin_init(QRdmaSession *d, uint32_t admq_log, uint32_t aeq_log)
{
    rs_admin_configure(d, admq_log, aeq_log, RS_MSIX_ADMIN_VECTOR,
                       RS_MSIX_ADMIN_VECTOR);
    rs_admin_enable(d);
}

void rs_reset(QRdmaSession *d)
{
    rs_writel(d, A_RS_CTRL, R_RS_CTRL_RESET_MASK);
    g_assert_cmphex(rs_readl(d, A_RS_CTRL), ==, 0);
    g_assert_cmphex(rs_readl(d, A_RS_STATUS) &
                    (R_RS_STATUS_READY_MASK | R_RS_STATUS_FATAL_MASK), ==, 0);
    d->admq_pi = 0;
    d->aeq_ci = 0;
}

uint32_t rs_admin_submit(QRdmaSession *d, const struct rs_admin_cmd *cmd)
{
    struct rs_admin_cmd c = *cmd;
    uint32_t index = d->admq_pi;
    uint32_t slot = index & ((1u << d->admq_log) - 1);

    c.hdr.cmd_id = d->next_cmd_id++;
    rs_cmd_to_le(&c);
    qtest_memwrite(rs_qts(d), d->admq + slot * sizeof(c), &c, sizeof(c));
    d->admq_pi++;
    rs_writel(d, A_RS_ADMQ_DB, d->admq_pi);
    return index;
}

bool rs_admin_poll(QRdmaSession *d, uint32_t index, struct rs_admin_cqe *cqe,
                   int64_t timeout_us)
{
    uint32_t slot = index & ((1u << d->admq_log) - 1);
    uint8_t phase = rs_ring_phase(index, d->admq_log);
    int64_t end = g_get_monotonic_time() + timeout_us;

    do {
        if (d->idle) {
            d->idle(rs_qts(d));
        }
        qtest_memread(rs_qts(d), d->acq + slot * sizeof(*cqe), cqe,
                      sizeof(*cqe));
        if ((cqe->flags & RS_ACQE_PHASE) == phase) {
            rs_cqe_from_le(cqe);
            return true;
        }
    } while (g_get_monotonic_time() < end);
    rs_cqe_from_le(cqe);
    return false;
}

void rs_admin_wait(QRdmaSession *d, uint32_t index, struct rs_admin_cqe *cqe)
{
    if (!rs_admin_poll(d, index, cqe, RS_QOS_TIMEOUT_US)) {
        g_error("rdma-session: no admin completion for index %u "
                "(ADMQ_CI=%u STATUS=0x%x FATAL_CODE=%u)", index,
                rs_readl(d, A_RS_ADMQ_CI), rs_readl(d, A_RS_STATUS),
                rs_readl(d, A_RS_FATAL_CODE));
    }
}

uint8_t rs_admin_exec(QRdmaSession *d, const struct rs_admin_cmd *cmd,
                      struct rs_admin_cqe *cqe)
{
    struct rs_admin_cqe local;
    uint16_t id = d->next_cmd_id;
    uint32_t index;

    if (!cqe) {
        cqe = &local;
    }
    index = rs_admin_submit(d, cmd);
    rs_admin_wait(d, index, cqe);
    g_assert_cmpuint(cqe->cmd_id, ==, id);
    return cqe->status;
}

bool rs_aeq_poll(QRdmaSession *d, struct rs_event *ev, int64_t timeout_us)
{
    uint32_t slot = d->aeq_ci & ((1u << d->aeq_log) - 1);
    uint8_t phase = rs_ring_phase(d->aeq_ci, d->aeq_log);
    int64_t end = g_get_monotonic_time() + timeout_us;

    g_assert(d->aeq);
    do {
        if (d->idle) {
            d->idle(rs_qts(d));
        }
        qtest_memread(rs_qts(d), d->aeq + slot * sizeof(*ev), ev,
                      sizeof(*ev));
        if ((ev->flags & RS_EQE_PHASE) == phase) {
            rs_event_from_le(ev);
            d->aeq_ci++;
            rs_writel(d, A_RS_AEQ_CI, d->aeq_ci);
            return true;
        }
    } while (g_get_monotonic_time() < end);
    return false;
}

/* ------------------------------------------------------------------ */
/* Commands                                                            */
/* ------------------------------------------------------------------ */

static void rs_cmd_init(struct rs_admin_cmd *cmd, uint8_t opcode)
{
    memset(cmd, 0, sizeof(*cmd));
    cmd->hdr.opcode = opcode;
}

uint8_t rs_query_device(QRdmaSession *d, struct rs_device_attr *attr)
{
    struct rs_admin_cmd cmd;
    uint8_t status;

    rs_cmd_init(&cmd, RS_CMD_QUERY_DEVICE);
    cmd.query.resp_addr = d->scratch;
    cmd.query.resp_len = sizeof(*attr);
    qtest_memset(rs_qts(d), d->scratch, 0, sizeof(*attr));
    status = rs_admin_exec(d, &cmd, NULL);
    qtest_memread(rs_qts(d), d->scratch, attr, sizeof(*attr));
    rs_device_attr_from_le(attr);
    return status;
}

uint8_t rs_query_port(QRdmaSession *d, uint32_t port,
                      struct rs_port_attr *attr)
{
    struct rs_admin_cmd cmd;
    uint8_t status;

    rs_cmd_init(&cmd, RS_CMD_QUERY_PORT);
    cmd.query.resp_addr = d->scratch;
    cmd.query.resp_len = sizeof(*attr);
    cmd.query.handle = port;
    qtest_memset(rs_qts(d), d->scratch, 0, sizeof(*attr));
    status = rs_admin_exec(d, &cmd, NULL);
    qtest_memread(rs_qts(d), d->scratch, attr, sizeof(*attr));
    rs_port_attr_from_le(attr);
    return status;
}

uint8_t rs_create_pd(QRdmaSession *d, uint32_t *handle)
{
    return rs_create_pd_flags(d, 0, handle);
}

uint8_t rs_create_pd_flags(QRdmaSession *d, uint32_t flags, uint32_t *handle)
{
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    uint8_t status;

    rs_cmd_init(&cmd, RS_CMD_CREATE_PD);
    cmd.create_pd.flags = cpu_to_le32(flags);
    status = rs_admin_exec(d, &cmd, &cqe);
    if (handle) {
        *handle = cqe.handle;
    }
    return status;
}

uint8_t rs_destroy(QRdmaSession *d, uint8_t opcode, uint32_t handle)
{
    struct rs_admin_cmd cmd;

    rs_cmd_init(&cmd, opcode);
    cmd.destroy.handle = handle;
    return rs_admin_exec(d, &cmd, NULL);
}

uint8_t rs_create_lan_queue(QRdmaSession *d, uint8_t type, uint64_t ring,
                            uint8_t log_size, uint16_t vector,
                            uint32_t *handle)
{
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    uint8_t status;

    rs_cmd_init(&cmd, RS_CMD_CREATE_LAN_QUEUE);
    cmd.create_lan_queue.ring_addr = ring;
    cmd.create_lan_queue.type = type;
    cmd.create_lan_queue.log_size = log_size;
    cmd.create_lan_queue.vector = vector;
    status = rs_admin_exec(d, &cmd, &cqe);
    if (handle) {
        *handle = cqe.handle;
    }
    return status;
}

uint8_t rs_set_lan_rx_mode(QRdmaSession *d, uint32_t flags)
{
    struct rs_admin_cmd cmd;

    rs_cmd_init(&cmd, RS_CMD_SET_LAN_RX_MODE);
    cmd.set_lan_rx_mode.flags = flags;
    return rs_admin_exec(d, &cmd, NULL);
}

void rs_qos_socket_netdev(GString *cmd_line, int fd)
{
    static const char user[] = RS_QOS_NETDEV_OPTS;
    g_autofree char *sock = g_strdup_printf(" -netdev socket,fd=%d,id="
                                            RS_QOS_NETDEV_ID " ", fd);
    const char *at = strstr(cmd_line->str, user);

    g_assert_nonnull(at);
    g_string_erase(cmd_line, at - cmd_line->str, strlen(user));
    g_string_insert(cmd_line, at - cmd_line->str, sock);
}

uint8_t rs_create_cq(QRdmaSession *d, uint64_t ring, uint8_t log_size,
                     uint16_t comp_vector, uint32_t uar, uint32_t *handle)
{
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    uint8_t status;

    rs_cmd_init(&cmd, RS_CMD_CREATE_CQ);
    cmd.create_cq.ring_addr = ring;
    cmd.create_cq.log_size = log_size;
    cmd.create_cq.comp_vector = comp_vector;
    cmd.create_cq.uar = uar;
    status = rs_admin_exec(d, &cmd, &cqe);
    if (handle) {
        *handle = cqe.handle;
    }
    return status;
}

uint8_t rs_resize_cq(QRdmaSession *d, uint32_t handle, uint64_t ring,
                     uint8_t log_size, uint32_t consumer_index)
{
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    uint8_t status;

    rs_cmd_init(&cmd, RS_CMD_RESIZE_CQ);
    cmd.resize_cq.handle = handle;
    cmd.resize_cq.ring_addr = ring;
    cmd.resize_cq.log_size = log_size;
    cmd.resize_cq.consumer_index = consumer_index;
    status = rs_admin_exec(d, &cmd, &cqe);
    if (status == RS_STATUS_OK) {
        g_assert_cmphex(cqe.handle, ==, handle);
    }
    return status;
}

uint8_t rs_create_qp(QRdmaSession *d, const struct rs_cmd_create_qp *c,
                     uint32_t *handle, uint32_t *qpn)
{
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    uint8_t status;

    rs_cmd_init(&cmd, RS_CMD_CREATE_QP);
    cmd.create_qp = *c;
    status = rs_admin_exec(d, &cmd, &cqe);
    if (handle) {
        *handle = cqe.handle;
    }
    if (qpn) {
        *qpn = cqe.result1;
    }
    return status;
}

uint8_t rs_modify_qp(QRdmaSession *d, uint32_t handle,
                     const struct rs_qp_attr *attr, uint32_t mask)
{
    struct rs_admin_cmd cmd;
    struct rs_qp_attr a = *attr;

    rs_qp_attr_to_le(&a);
    qtest_memwrite(rs_qts(d), d->scratch, &a, sizeof(a));
    rs_cmd_init(&cmd, RS_CMD_MODIFY_QP);
    cmd.modify_qp.attr_addr = d->scratch;
    cmd.modify_qp.handle = handle;
    cmd.modify_qp.attr_mask = mask;
    return rs_admin_exec(d, &cmd, NULL);
}

uint8_t rs_query_qp(QRdmaSession *d, uint32_t handle,
                    struct rs_qp_attr *attr)
{
    struct rs_admin_cmd cmd;
    uint8_t status;

    rs_cmd_init(&cmd, RS_CMD_QUERY_QP);
    cmd.query.resp_addr = d->scratch;
    cmd.query.resp_len = sizeof(*attr);
    cmd.query.handle = handle;
    qtest_memset(rs_qts(d), d->scratch, 0xee, sizeof(*attr));
    status = rs_admin_exec(d, &cmd, NULL);
    qtest_memread(rs_qts(d), d->scratch, attr, sizeof(*attr));
    rs_qp_attr_from_le(attr);
    return status;
}

uint8_t rs_reg_mr(QRdmaSession *d, const struct rs_cmd_reg_mr *c,
                  uint32_t *lkey, uint32_t *rkey)
{
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    uint8_t status;

    rs_cmd_init(&cmd, RS_CMD_REG_MR);
    cmd.reg_mr = *c;
    status = rs_admin_exec(d, &cmd, &cqe);
    if (lkey) {
        *lkey = cqe.handle;
    }
    if (rkey) {
        *rkey = cqe.result1;
    }
    return status;
}

uint8_t rs_create_ah(QRdmaSession *d, const struct rs_cmd_create_ah *c,
                     uint32_t *handle)
{
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    uint8_t status;

    rs_cmd_init(&cmd, RS_CMD_CREATE_AH);
    cmd.create_ah = *c;
    status = rs_admin_exec(d, &cmd, &cqe);
    if (handle) {
        *handle = cqe.handle;
    }
    return status;
}

uint8_t rs_create_session(QRdmaSession *d,
                          const struct rs_cmd_create_session *c,
                          uint32_t *handle)
{
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    uint8_t status;

    rs_cmd_init(&cmd, RS_CMD_CREATE_SESSION);
    cmd.create_session = *c;
    status = rs_admin_exec(d, &cmd, &cqe);
    if (handle) {
        *handle = cqe.handle;
    }
    return status;
}

uint8_t rs_create_session_group(QRdmaSession *d,
                                const struct rs_cmd_create_session_group *c,
                                uint32_t *handle)
{
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    uint8_t status;

    rs_cmd_init(&cmd, RS_CMD_CREATE_SESSION_GROUP);
    cmd.create_group = *c;
    status = rs_admin_exec(d, &cmd, &cqe);
    if (handle) {
        *handle = cqe.handle;
    }
    return status;
}

uint8_t rs_add_gid(QRdmaSession *d, const struct rs_cmd_add_gid *c,
                   uint32_t *index)
{
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    uint8_t status;

    rs_cmd_init(&cmd, RS_CMD_ADD_GID);
    cmd.add_gid = *c;
    status = rs_admin_exec(d, &cmd, &cqe);
    if (index) {
        *index = cqe.handle;
    }
    return status;
}

uint64_t rs_qp_sq_bytes(const struct rs_cmd_create_qp *c)
{
    uint64_t stride = pow2ceil(64 + MAX(16 * c->max_send_sge, c->max_inline));

    return stride << c->sq_log_size;
}

uint64_t rs_qp_rq_bytes(const struct rs_cmd_create_qp *c)
{
    uint64_t stride = pow2ceil(16 + 16 * c->max_recv_sge);

    return stride << c->rq_log_size;
}

/* ------------------------------------------------------------------ */
/* qos graph node                                                      */
/* ------------------------------------------------------------------ */

/* The first adapter found: a test may add more at higher slots. */
static void rs_foreach_callback(QPCIDevice *dev, int devfn, void *data)
{
    QPCIDevice *res = data;

    if (!res->bus) {
        memcpy(res, dev, sizeof(QPCIDevice));
    }
    g_free(dev);
}

/* Assign and map the BARs of the adapter in d->dev. */
static void rs_map(QRdmaSession *d, QGuestAllocator *alloc)
{
    d->alloc = alloc;
    d->bar0 = qpci_iomap(&d->dev, RS_BAR_REGS, &d->bar0_size);
    d->bar2 = qpci_iomap(&d->dev, RS_BAR_DOORBELL, &d->bar2_size);
    d->scratch = guest_alloc(alloc, RS_QOS_SCRATCH_SIZE);
    g_assert(d->scratch);
}

static void rs_start(QRdmaSession *d)
{
    qpci_device_enable(&d->dev);
    qpci_msix_enable(&d->dev);
    /* The adapter starts disabled after any reset. */
    g_assert_cmphex(rs_readl(d, A_RS_MAGIC), ==, RS_MAGIC);
    g_assert_cmphex(rs_readl(d, A_RS_CTRL), ==, 0);
}

static void rs_unmap(QRdmaSession *d)
{
    if (d->dev.msix_enabled) {
        qpci_msix_disable(&d->dev);
    }
    qpci_iounmap(&d->dev, d->bar0);
    qpci_iounmap(&d->dev, d->bar2);
}

void rs_attach_new(QRdmaSession *d, QPCIBus *bus, int devfn,
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
    rs_map(d, alloc);
    rs_start(d);
}

void rs_detach(QRdmaSession *d)
{
    rs_unmap(d);
    guest_free(d->alloc, d->scratch);
}

void rs_attach_existing(QRdmaSession *d, QPCIBus *bus, int devfn,
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

static void rs_pci_destructor(QOSGraphObject *obj)
{
    rs_unmap((QRdmaSession *)obj);
}

static void rs_pci_start_hw(QOSGraphObject *obj)
{
    rs_start((QRdmaSession *)obj);
}

static void *rs_pci_get_driver(void *obj, const char *interface)
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

static void *rs_pci_create(void *pci_bus, QGuestAllocator *alloc, void *addr)
{
    QRdmaSession *d = g_new0(QRdmaSession, 1);
    QPCIBus *bus = pci_bus;
    QPCIAddress *address = addr;

    qpci_device_foreach(bus, address->vendor_id, address->device_id,
                        rs_foreach_callback, &d->dev);
    g_assert(d->dev.bus);

    rs_map(d, alloc);
    d->obj.get_driver = rs_pci_get_driver;
    d->obj.start_hw = rs_pci_start_hw;
    d->obj.destructor = rs_pci_destructor;

    return &d->obj;
}

static void rs_register_nodes(void)
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
    qos_node_create_driver("rdma-session", rs_pci_create);
    qos_node_consumes("rdma-session", "pci-bus", &opts);
    qos_node_produces("rdma-session", "pci-device");
}

libqos_init(rs_register_nodes);
