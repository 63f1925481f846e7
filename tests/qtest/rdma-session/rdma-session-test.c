/*
 * QTest testcases for the rdma-session RDMA adapter
 *
 * The expected values come from the device's behaviour notes
 * (docs/specs/rdma-session.rst) and the shared ABI header.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/ioctl.h>
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "qemu/units.h"
#include "qemu/iov.h"
#include "qemu/host-utils.h"
#include "qemu/sockets.h"
#include "hw/pci/pci_ids.h"
#include "hw/pci/pci_regs.h"
#include "libqtest.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qnum.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/pci-pc.h"
#include "libqos/libqos-malloc.h"
#include "libqos/rdma-session.h"

/* Property defaults. */
#define DEF_MAX_QPS             256
#define DEF_MAX_CQS             256
#define DEF_MAX_MRS             1024
#define DEF_MAX_PDS             256
#define DEF_MAX_AHS             256
#define DEF_MAX_SESSIONS        256
#define DEF_MAX_GROUPS          64
#define DEF_MAX_SRQS            256
#define DEF_MAX_GIDS            16
#define DEF_MAX_MSG_SIZE        0x80000000u
#define DEF_COMP_VECTORS        4
#define DEF_DB_PAGES            64
#define DEF_MAX_MR_PAGES        262144
#define DEF_NUM_MSIX            (1 + DEF_COMP_VECTORS)

/*
 * QUERY_DEVICE reports usable objects: a table of max-* slots never uses
 * slot 0.
 */
#define USABLE(max)             ((max) - 1)

/* Addresses that are never guest RAM. */
#define FAR_ADDR                0xfffff0000000ull

#define PAGE                    4096u

#define RS_ASSERT_STATUS(expr, expected)                                  \
    g_assert_cmpstr(qrs_status_name(expr), ==, qrs_status_name(expected))
#define RS_ASSERT_OK(expr) RS_ASSERT_STATUS(expr, RS_STATUS_OK)

#define HANDLE(gen, index)  (((uint32_t)(gen) << RS_HANDLE_GEN_SHIFT) | (index))
#define HINDEX(h)           ((h) & RS_HANDLE_INDEX_MASK)

/* Canonical QP attribute values used by the state walks. */
#define STD_QKEY                0x11111111u
#define STD_RQ_PSN              0xabcdefu
#define STD_SQ_PSN              0x654321u
#define STD_DEST_QPN            0x123456u
#define STD_FLOW_LABEL          0x12345u
#define STD_ACCESS              (RS_ACCESS_LOCAL_WRITE |                  \
                                 RS_ACCESS_REMOTE_WRITE |                 \
                                 RS_ACCESS_REMOTE_READ)

#define RC_INIT_MASK    (RS_QP_ATTR_STATE | RS_QP_ATTR_PKEY_INDEX |        \
                         RS_QP_ATTR_PORT | RS_QP_ATTR_ACCESS_FLAGS)
#define UD_INIT_MASK    (RS_QP_ATTR_STATE | RS_QP_ATTR_PKEY_INDEX |        \
                         RS_QP_ATTR_PORT | RS_QP_ATTR_QKEY)
#define GSI_INIT_MASK   (RS_QP_ATTR_STATE | RS_QP_ATTR_PKEY_INDEX |        \
                         RS_QP_ATTR_QKEY)
#define UC_RTR_MASK     (RS_QP_ATTR_STATE | RS_QP_ATTR_AV |                \
                         RS_QP_ATTR_PATH_MTU | RS_QP_ATTR_DEST_QPN |       \
                         RS_QP_ATTR_RQ_PSN)
#define RC_RTR_MASK     (UC_RTR_MASK | RS_QP_ATTR_MAX_DEST_RD_ATOMIC |     \
                         RS_QP_ATTR_MIN_RNR_TIMER)
#define UD_RTS_MASK     (RS_QP_ATTR_STATE | RS_QP_ATTR_SQ_PSN)
#define RC_RTS_MASK     (UD_RTS_MASK | RS_QP_ATTR_TIMEOUT |                \
                         RS_QP_ATTR_RETRY_CNT | RS_QP_ATTR_RNR_RETRY |     \
                         RS_QP_ATTR_MAX_QP_RD_ATOMIC)

static const uint8_t qos_mac[6] = RS_QOS_MAC;

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/*
 * On the pc machine RAM sits below the PCI hole; the libqos allocator
 * covers it up to its end, and nothing is mapped right after it.
 */
static uint64_t ram_end(QRdmaSession *d)
{
    g_assert_cmphex(d->alloc->end, <, 0xe0000000ull);
    return d->alloc->end;
}

static uint64_t msix_table_addr(QRdmaSession *d)
{
    g_assert_true(d->dev.msix_enabled);
    return d->dev.msix_table_bar.addr + d->dev.msix_table_off;
}

static void wait_aeq_port_active(QRdmaSession *d)
{
    struct rs_event ev;

    g_assert_true(qrs_aeq_poll(d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, RS_EV_PORT_ACTIVE);
    g_assert_cmpuint(ev.handle, ==, 1);
}

/* The next asynchronous event of adapter @d is @type for @handle. */
static void expect_event(QRdmaSession *d, uint8_t type, uint32_t handle)
{
    struct rs_event ev;

    g_assert_true(qrs_aeq_poll(d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, type);
    g_assert_cmphex(ev.handle, ==, handle);
}

static void expect_no_event(QRdmaSession *d)
{
    struct rs_event ev;

    g_assert_false(qrs_aeq_poll(d, &ev, G_USEC_PER_SEC / 20));
}

/* Enable the admin queue with the default sizes; eat the port event. */
static QRdmaSession *rs_setup(void *obj)
{
    QRdmaSession *d = obj;

    qrs_admin_init(d, RS_QOS_ADMQ_LOG, RS_QOS_AEQ_LOG);
    wait_aeq_port_active(d);
    return d;
}

static void fill(QRdmaSession *d, uint64_t addr, uint8_t pattern, size_t len)
{
    qtest_memset(qrs_qts(d), addr, pattern, len);
}

/* True when [addr, addr + len) holds only @pattern. */
static bool is_filled(QRdmaSession *d, uint64_t addr, uint8_t pattern,
                      size_t len)
{
    g_autofree uint8_t *buf = g_malloc(len);
    size_t i;

    qtest_memread(qrs_qts(d), addr, buf, len);
    for (i = 0; i < len; i++) {
        if (buf[i] != pattern) {
            return false;
        }
    }
    return true;
}

static void cmd_init(struct rs_admin_cmd *cmd, uint8_t opcode)
{
    memset(cmd, 0, sizeof(*cmd));
    cmd->hdr.opcode = opcode;
}

/* QUERY_DEVICE/PORT/QP with an arbitrary response buffer. */
static uint8_t query_at(QRdmaSession *d, uint8_t opcode, uint32_t handle,
                        uint64_t addr, uint32_t len)
{
    struct rs_cmd_query q = {
        .resp_addr = addr, .resp_len = len, .handle = handle,
    };

    return qrs_admin_cmd(d, opcode, &q, sizeof(q), NULL, NULL);
}

static void gid_v4(uint8_t gid[16], uint8_t a, uint8_t b, uint8_t c,
                   uint8_t e)
{
    memset(gid, 0, 16);
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12] = a;
    gid[13] = b;
    gid[14] = c;
    gid[15] = e;
}

static void add_gid_v4(QRdmaSession *d, uint32_t index, uint8_t host)
{
    struct rs_cmd_add_gid c = {
        .index = index,
        .type = RS_GID_ROCE_V2_IPV4,
        .vni = index,
    };
    uint32_t got = ~0u;

    gid_v4(c.gid, 10, 0, index, host);
    RS_ASSERT_OK(qrs_add_gid(d, &c, &got));
    g_assert_cmpuint(got, ==, index);
}

static uint32_t new_pd(QRdmaSession *d)
{
    uint32_t h = 0;

    RS_ASSERT_OK(qrs_create_pd(d, &h));
    return h;
}

static uint32_t new_cq(QRdmaSession *d, uint8_t log_size)
{
    uint64_t ring = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << log_size);
    uint32_t h = 0;

    RS_ASSERT_OK(qrs_create_cq(d, ring, log_size, 0, 0, &h));
    return h;
}

static void qp_template(QRdmaSession *d, struct rs_cmd_create_qp *c,
                        uint8_t type, uint32_t pd, uint32_t send_cq,
                        uint32_t recv_cq)
{
    memset(c, 0, sizeof(*c));
    c->qp_type = type;
    c->pd = pd;
    c->send_cq = send_cq;
    c->recv_cq = recv_cq;
    c->sq_log_size = 4;
    c->rq_log_size = 4;
    c->max_send_sge = 2;
    c->max_recv_sge = 2;
    c->max_inline = 64;
    c->sq_addr = qrs_alloc_zeroed(d, qrs_qp_sq_bytes(c));
    c->rq_addr = qrs_alloc_zeroed(d, qrs_qp_rq_bytes(c));
}

static uint32_t new_qp(QRdmaSession *d, const struct rs_cmd_create_qp *c)
{
    uint32_t h = 0, qpn = 0;

    RS_ASSERT_OK(qrs_create_qp(d, c, &h, &qpn));
    g_assert_cmphex(qpn, ==, HINDEX(h));
    return h;
}

static void std_ah(struct rs_ah_attr *ah, uint32_t gid_index)
{
    memset(ah, 0, sizeof(*ah));
    gid_v4(ah->dgid, 10, 0, 0, 2);
    ah->dmac[0] = 0x02;
    ah->dmac[5] = 0x02;
    ah->hop_limit = 64;
    ah->traffic_class = 0x28;
    ah->flow_label = STD_FLOW_LABEL;
    ah->gid_index = gid_index;
}

/* Valid values for every attribute; @from/@to fill the two states. */
static void std_attr(struct rs_qp_attr *a, uint8_t from, uint8_t to)
{
    memset(a, 0, sizeof(*a));
    a->qp_state = to;
    a->cur_qp_state = from;
    a->path_mtu = RS_MTU_1024;
    a->port_num = 1;
    a->qkey = STD_QKEY;
    a->rq_psn = STD_RQ_PSN;
    a->sq_psn = STD_SQ_PSN;
    a->dest_qp_num = STD_DEST_QPN;
    a->access_flags = STD_ACCESS;
    a->pkey_index = 0;
    a->max_rd_atomic = 4;
    a->max_dest_rd_atomic = 8;
    a->min_rnr_timer = 12;
    a->timeout = 14;
    a->retry_cnt = 7;
    a->rnr_retry = 6;
    std_ah(&a->ah, 0);
}

/* The required attribute mask of each transition of the walk. */
static uint32_t std_mask(uint8_t type, uint8_t from, uint8_t to)
{
    bool connected = type == RS_QPT_RC || type == RS_QPT_UC;

    if (from == RS_QPS_RESET && to == RS_QPS_INIT) {
        return connected ? RC_INIT_MASK :
               type == RS_QPT_UD ? UD_INIT_MASK : GSI_INIT_MASK;
    }
    if (from == RS_QPS_INIT && to == RS_QPS_RTR) {
        return type == RS_QPT_RC ? RC_RTR_MASK :
               type == RS_QPT_UC ? UC_RTR_MASK : RS_QP_ATTR_STATE;
    }
    if (from == RS_QPS_RTR && to == RS_QPS_RTS) {
        return type == RS_QPT_RC ? RC_RTS_MASK : UD_RTS_MASK;
    }
    return RS_QP_ATTR_STATE;
}

/* Move a QP in RESET to @target with the canonical attributes. */
static void qp_walk(QRdmaSession *d, uint32_t qp, uint8_t type,
                    uint8_t target)
{
    static const uint8_t path[] = {
        RS_QPS_RESET, RS_QPS_INIT, RS_QPS_RTR, RS_QPS_RTS, RS_QPS_SQD,
    };
    struct rs_qp_attr a;
    int i;

    if (target == RS_QPS_ERR) {
        qp_walk(d, qp, type, RS_QPS_INIT);
        std_attr(&a, RS_QPS_INIT, RS_QPS_ERR);
        RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE));
        return;
    }
    for (i = 1; i < ARRAY_SIZE(path) && path[i - 1] != target; i++) {
        std_attr(&a, path[i - 1], path[i]);
        RS_ASSERT_OK(qrs_modify_qp(d, qp, &a,
                                   std_mask(type, path[i - 1], path[i])));
    }
}

static uint8_t qp_state(QRdmaSession *d, uint32_t qp)
{
    struct rs_qp_attr a;

    RS_ASSERT_OK(qrs_query_qp(d, qp, &a));
    g_assert_cmpuint(a.cur_qp_state, ==, a.qp_state);
    return a.qp_state;
}

/* Read the register block (0x000 .. 0x058). */
#define NREGS   (0x58 / 4)
static void dump_regs(QRdmaSession *d, uint32_t *regs)
{
    int i;

    for (i = 0; i < NREGS; i++) {
        regs[i] = qrs_readl(d, i * 4);
    }
}

static void assert_regs_equal(const uint32_t *a, const uint32_t *b)
{
    int i;

    for (i = 0; i < NREGS; i++) {
        if (a[i] != b[i]) {
            g_error("register 0x%03x changed: 0x%08x -> 0x%08x",
                    i * 4, a[i], b[i]);
        }
    }
}

/* Registers after power-on / reset (admin queue not configured). */
static void assert_power_on_regs(QRdmaSession *d, uint32_t db_pages,
                                 uint32_t num_msix)
{
    g_assert_cmphex(qrs_readl(d, A_RS_MAGIC), ==, RS_MAGIC);
    g_assert_cmphex(qrs_readl(d, A_RS_VERSION), ==,
                    (RS_ABI_VERSION_MAJOR << R_RS_VERSION_MAJOR_SHIFT) |
                    RS_ABI_VERSION_MINOR);
    g_assert_cmphex(qrs_readl(d, A_RS_CAPS), ==,
                    RS_CAP_RC | RS_CAP_UC | RS_CAP_UD |
                    RS_CAP_SESSION_GROUPS | RS_CAP_NETID_MKEYS |
                    RS_CAP_LAN | RS_CAP_ATOMIC | RS_CAP_SRQ);
    g_assert_cmpuint(qrs_readl(d, A_RS_DB_PAGES), ==, db_pages);
    g_assert_cmphex(qrs_readl(d, A_RS_CTRL), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, R_RS_STATUS_LINK_UP_MASK);
    g_assert_cmphex(qrs_readl(d, A_RS_FATAL_CODE), ==, RS_FATAL_NONE);
    g_assert_cmpuint(qrs_readl(d, A_RS_NUM_MSIX), ==, num_msix);
    g_assert_cmphex(qrs_readl(d, A_RS_ADMQ_BASE_LO), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_ADMQ_BASE_HI), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_ADMQ_CFG), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_ADMQ_CI), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_ACQ_BASE_LO), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_ACQ_BASE_HI), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_ACQ_CFG), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_AEQ_BASE_LO), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_AEQ_BASE_HI), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_AEQ_CFG), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_AEQ_CI), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_MAC_LO), ==,
                    qos_mac[0] | qos_mac[1] << 8 | qos_mac[2] << 16 |
                    (uint32_t)qos_mac[3] << 24);
    g_assert_cmphex(qrs_readl(d, A_RS_MAC_HI), ==,
                    qos_mac[4] | qos_mac[5] << 8);
}

/* The device still executes commands after a rejected one. */
static bool device_alive(QRdmaSession *d, GString *why)
{
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    struct rs_device_attr attr;
    uint32_t status = qrs_readl(d, A_RS_STATUS);
    uint32_t index, pd;

    if ((status & (R_RS_STATUS_READY_MASK | R_RS_STATUS_FATAL_MASK)) !=
        R_RS_STATUS_READY_MASK) {
        g_string_append_printf(why, "STATUS=0x%x FATAL_CODE=%u", status,
                               qrs_readl(d, A_RS_FATAL_CODE));
        return false;
    }
    cmd_init(&cmd, RS_CMD_CREATE_PD);
    index = qrs_admin_submit(d, &cmd);
    if (!qrs_admin_poll(d, index, &cqe, RS_QOS_TIMEOUT_US)) {
        g_string_append(why, "CREATE_PD timed out");
        return false;
    }
    if (cqe.status != RS_STATUS_OK) {
        g_string_append_printf(why, "CREATE_PD: %s",
                               qrs_status_name(cqe.status));
        return false;
    }
    pd = cqe.handle;
    cmd_init(&cmd, RS_CMD_DESTROY_PD);
    cmd.destroy.handle = pd;
    index = qrs_admin_submit(d, &cmd);
    if (!qrs_admin_poll(d, index, &cqe, RS_QOS_TIMEOUT_US) ||
        cqe.status != RS_STATUS_OK) {
        g_string_append(why, "DESTROY_PD of a new PD failed");
        return false;
    }
    if (qrs_query_device(d, &attr) != RS_STATUS_OK ||
        attr.abi_version != qrs_readl(d, A_RS_VERSION)) {
        g_string_append(why, "QUERY_DEVICE failed");
        return false;
    }
    return true;
}

static void assert_alive(QRdmaSession *d)
{
    g_autoptr(GString) why = g_string_new("");

    if (!device_alive(d, why)) {
        g_error("device no longer works: %s", why->str);
    }
}

/* ------------------------------------------------------------------ */
/* Identity, registers, admin queue                                    */
/* ------------------------------------------------------------------ */

static void test_probe(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    QPCIDevice *dev = &d->dev;
    uint32_t bar;
    uint8_t cap;

    g_assert_cmphex(qpci_config_readw(dev, PCI_VENDOR_ID), ==,
                    RS_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(dev, PCI_DEVICE_ID), ==,
                    RS_PCI_DEVICE_ID);
    /* An Ethernet controller: the RoCE port is also the LAN NIC. */
    g_assert_cmphex(qpci_config_readw(dev, PCI_CLASS_DEVICE), ==,
                    PCI_CLASS_NETWORK_ETHERNET);
    g_assert_cmphex(RS_PCI_CLASS, ==, PCI_CLASS_NETWORK_ETHERNET);
    g_assert_cmphex(qpci_config_readb(dev, PCI_REVISION_ID), ==,
                    RS_PCI_REVISION);
    g_assert_cmphex(qpci_config_readb(dev, PCI_HEADER_TYPE) & 0x7f, ==,
                    PCI_HEADER_TYPE_NORMAL);

    /* BAR0: 4 KiB of registers, memory space. */
    g_assert_cmphex(d->bar0_size, ==, RS_REGS_SIZE);
    bar = qpci_config_readl(dev, PCI_BASE_ADDRESS_0);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_SPACE, ==,
                    PCI_BASE_ADDRESS_SPACE_MEMORY);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_MASK, ==, d->bar0.addr);

    /* BAR2: db-pages doorbell pages, 64-bit, not prefetchable. */
    g_assert_cmphex(d->bar2_size, ==, DEF_DB_PAGES * RS_DB_PAGE_SIZE);
    bar = qpci_config_readl(dev, PCI_BASE_ADDRESS_2);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_SPACE, ==,
                    PCI_BASE_ADDRESS_SPACE_MEMORY);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmphex(bar & PCI_BASE_ADDRESS_MEM_PREFETCH, ==, 0);

    /* MSI-X: 1 + num-comp-vectors vectors, table and PBA in BAR1. */
    cap = qpci_find_capability(dev, PCI_CAP_ID_MSIX, 0);
    g_assert_cmphex(cap, !=, 0);
    g_assert_cmpuint(qpci_msix_table_size(dev), ==, DEF_NUM_MSIX);
    g_assert_cmpuint(qpci_config_readl(dev, cap + PCI_MSIX_TABLE) &
                     PCI_MSIX_FLAGS_BIRMASK, ==, RS_BAR_MSIX);
    g_assert_cmpuint(qpci_config_readl(dev, cap + PCI_MSIX_PBA) &
                     PCI_MSIX_FLAGS_BIRMASK, ==, RS_BAR_MSIX);

    /* Registers at power-on. */
    assert_power_on_regs(d, DEF_DB_PAGES, DEF_NUM_MSIX);
    g_assert_cmpuint((qrs_readl(d, A_RS_VERSION) &
                      (uint32_t)R_RS_VERSION_MAJOR_MASK) >>
                     R_RS_VERSION_MAJOR_SHIFT, ==, RS_ABI_VERSION_MAJOR);
}

static void test_registers(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    static const uint32_t ro_regs[] = {
        A_RS_MAGIC, A_RS_VERSION, A_RS_CAPS, A_RS_DB_PAGES, A_RS_STATUS,
        A_RS_FATAL_CODE, A_RS_NUM_MSIX, A_RS_ADMQ_CI, A_RS_MAC_LO,
        A_RS_MAC_HI,
    };
    static const uint32_t unknown[] = {
        0x058, 0x05c, 0x080, 0x0fc, 0x104, 0x200, 0x800, 0xffc,
    };
    static const struct {
        uint32_t reg;
        uint32_t val;
    } ring_regs[] = {
        { A_RS_ADMQ_BASE_LO, 0x12345640 },
        { A_RS_ADMQ_BASE_HI, 0x00000009 },
        { A_RS_ADMQ_CFG, 7 },
        { A_RS_ACQ_BASE_LO, 0x2345c000 },
        { A_RS_ACQ_BASE_HI, 0x0000000a },
        { A_RS_ACQ_CFG, 3 },
        { A_RS_AEQ_BASE_LO, 0x3456f080 },
        { A_RS_AEQ_BASE_HI, 0x0000000b },
        { A_RS_AEQ_CFG, (2 << R_RS_AEQ_CFG_VECTOR_SHIFT) | 6 },
    };
    uint32_t before[NREGS], after[NREGS];
    uint32_t saved[ARRAY_SIZE(ring_regs)];
    struct rs_device_attr attr;
    int i;

    /* Unknown offsets read as zero. */
    for (i = 0; i < ARRAY_SIZE(unknown); i++) {
        g_assert_cmphex(qrs_readl(d, unknown[i]), ==, 0);
    }

    /* Read-only registers ignore writes. */
    dump_regs(d, before);
    for (i = 0; i < ARRAY_SIZE(ro_regs); i++) {
        qrs_writel(d, ro_regs[i], 0xffffffff);
        qrs_writel(d, ro_regs[i], 0);
    }
    dump_regs(d, after);
    assert_regs_equal(before, after);

    /* Ring registers read back what was written while disabled. */
    for (i = 0; i < ARRAY_SIZE(ring_regs); i++) {
        qrs_writel(d, ring_regs[i].reg, ring_regs[i].val);
    }
    for (i = 0; i < ARRAY_SIZE(ring_regs); i++) {
        g_assert_cmphex(qrs_readl(d, ring_regs[i].reg), ==, ring_regs[i].val);
    }
    g_assert_cmphex(qrs_readl(d, A_RS_CTRL), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, R_RS_STATUS_LINK_UP_MASK);

    /* Only 32-bit accesses reach the registers. */
    g_assert_cmphex(qpci_io_readw(&d->dev, d->bar0, A_RS_MAGIC), ==, 0);
    g_assert_cmphex(qpci_io_readb(&d->dev, d->bar0, A_RS_MAGIC), ==, 0);
    g_assert_cmphex(qpci_io_readw(&d->dev, d->bar0, A_RS_ADMQ_CFG), ==, 0);
    qpci_io_writeb(&d->dev, d->bar0, A_RS_CTRL, R_RS_CTRL_ENABLE_MASK);
    qpci_io_writew(&d->dev, d->bar0, A_RS_CTRL, R_RS_CTRL_ENABLE_MASK);
    qpci_io_writew(&d->dev, d->bar0, A_RS_ADMQ_CFG, 2);
    g_assert_cmphex(qrs_readl(d, A_RS_CTRL), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, R_RS_STATUS_LINK_UP_MASK);
    g_assert_cmphex(qrs_readl(d, A_RS_ADMQ_CFG), ==, 7);

    /* While enabled the ring registers ignore writes. */
    rs_setup(d);
    for (i = 0; i < ARRAY_SIZE(ring_regs); i++) {
        saved[i] = qrs_readl(d, ring_regs[i].reg);
    }
    g_assert_cmphex(saved[0], ==, d->admq & 0xffffffffu);
    g_assert_cmphex(saved[1], ==, d->admq >> 32);
    g_assert_cmphex(saved[2], ==, RS_QOS_ADMQ_LOG);
    g_assert_cmphex(saved[3], ==, d->acq & 0xffffffffu);
    g_assert_cmphex(saved[6], ==, d->aeq & 0xffffffffu);
    g_assert_cmphex(saved[8], ==, RS_QOS_AEQ_LOG);
    for (i = 0; i < ARRAY_SIZE(ring_regs); i++) {
        qrs_writel(d, ring_regs[i].reg, ring_regs[i].val);
    }
    for (i = 0; i < ARRAY_SIZE(ring_regs); i++) {
        g_assert_cmphex(qrs_readl(d, ring_regs[i].reg), ==, saved[i]);
    }
    RS_ASSERT_OK(qrs_query_device(d, &attr));
    RS_ASSERT_OK(qrs_query_device(d, &attr));
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, 2);

    /* Writing ENABLE=1 again is not a 0->1 edge: nothing restarts. */
    qrs_writel(d, A_RS_CTRL, R_RS_CTRL_ENABLE_MASK);
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, 2);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);
    assert_alive(d);
}

/* Write a command into its ring slot without ringing the doorbell. */
static void admq_put(QRdmaSession *d, uint32_t index, uint8_t opcode,
                     uint16_t cmd_id)
{
    struct rs_admin_cmd cmd;

    cmd_init(&cmd, opcode);
    cmd.hdr.cmd_id = cmd_id;
    if (opcode == RS_CMD_QUERY_DEVICE) {
        cmd.query.resp_addr = d->scratch;
        cmd.query.resp_len = sizeof(struct rs_device_attr);
    }
    qrs_cmd_to_le(&cmd);
    qtest_memwrite(qrs_qts(d),
                   d->admq + (index & ((1u << d->admq_log) - 1)) *
                   sizeof(cmd), &cmd, sizeof(cmd));
}

static bool acq_slot_idle(QRdmaSession *d, uint32_t index)
{
    struct rs_admin_cqe cqe;

    return !qrs_admin_poll(d, index, &cqe, G_USEC_PER_SEC / 5);
}

static void test_admin_queue(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    struct rs_admin_cqe cqe;
    struct rs_event ev;
    struct rs_device_attr attr;
    uint64_t end = ram_end(d);
    uint32_t base, i;

    /* Two-entry ring, no event queue. */
    qrs_admin_configure(d, 1, 0, 0, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_AEQ_BASE_LO), ==, 0);

    /* A doorbell before READY is ignored. */
    admq_put(d, 0, RS_CMD_CREATE_PD, 0x7777);
    qrs_writel(d, A_RS_ADMQ_DB, 1);
    qrs_admin_enable(d);
    g_assert_true(acq_slot_idle(d, 0));
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, 0);

    /* Wrap the ring several times; check the phase of every slot. */
    for (i = 0; i < 7; i++) {
        struct rs_admin_cmd cmd;
        uint32_t index;

        cmd_init(&cmd, RS_CMD_QUERY_PORT);
        cmd.query.resp_addr = d->scratch;
        cmd.query.resp_len = sizeof(struct rs_port_attr);
        cmd.query.handle = 1;
        index = qrs_admin_submit(d, &cmd);
        g_assert_cmpuint(index, ==, i);
        qrs_admin_wait(d, index, &cqe);
        RS_ASSERT_OK(cqe.status);
        g_assert_cmpuint(cqe.flags & RS_ACQE_PHASE, ==, ((i >> 1) & 1) ^ 1);
        g_assert_cmpuint(cqe.cmd_id, ==, (uint16_t)(d->next_cmd_id - 1));
        g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, i + 1);
    }

    /* Two commands with one doorbell write. */
    base = d->admq_pi;
    admq_put(d, base, RS_CMD_QUERY_DEVICE, 0x1001);
    admq_put(d, base + 1, RS_CMD_CREATE_PD, 0x1002);
    qrs_writel(d, A_RS_ADMQ_DB, base + 2);
    qrs_admin_wait(d, base, &cqe);
    RS_ASSERT_OK(cqe.status);
    g_assert_cmphex(cqe.cmd_id, ==, 0x1001);
    qrs_admin_wait(d, base + 1, &cqe);
    RS_ASSERT_OK(cqe.status);
    g_assert_cmphex(cqe.cmd_id, ==, 0x1002);
    g_assert_cmphex(cqe.handle, ==, HANDLE(0, 1));
    d->admq_pi = base + 2;
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, base + 2);

    /* A producer index more than a ring ahead, or behind, is ignored. */
    base = d->admq_pi;
    admq_put(d, base, RS_CMD_CREATE_PD, 0x2001);
    admq_put(d, base + 1, RS_CMD_CREATE_PD, 0x2002);
    qrs_writel(d, A_RS_ADMQ_DB, base + 3);
    g_assert_true(acq_slot_idle(d, base));
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, base);
    qrs_writel(d, A_RS_ADMQ_DB, base - 1);
    g_assert_true(acq_slot_idle(d, base));
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, base);
    /* Exactly one ring ahead is fine. */
    qrs_writel(d, A_RS_ADMQ_DB, base + 2);
    qrs_admin_wait(d, base, &cqe);
    RS_ASSERT_OK(cqe.status);
    g_assert_cmphex(cqe.cmd_id, ==, 0x2001);
    g_assert_cmphex(cqe.handle, ==, HANDLE(0, 2));
    qrs_admin_wait(d, base + 1, &cqe);
    RS_ASSERT_OK(cqe.status);
    g_assert_cmphex(cqe.cmd_id, ==, 0x2002);
    g_assert_cmphex(cqe.handle, ==, HANDLE(0, 3));
    d->admq_pi = base + 2;
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, base + 2);

    /* Largest ring, with an event queue: PORT_ACTIVE in slot 0. */
    qrs_reset(d);
    qrs_admin_configure(d, RS_MAX_ADMQ_LOG, RS_MAX_AEQ_LOG, 0, 0);
    qrs_admin_enable(d);
    g_assert_true(qrs_aeq_poll(d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, RS_EV_PORT_ACTIVE);
    g_assert_cmpuint(ev.flags & RS_EQE_PHASE, ==, 1);
    g_assert_cmpuint(ev.handle, ==, 1);
    g_assert_false(qrs_aeq_poll(d, &ev, G_USEC_PER_SEC / 10));
    RS_ASSERT_OK(qrs_query_device(d, &attr));
    g_assert_cmpuint(attr.max_qp, ==, USABLE(DEF_MAX_QPS));

    /* Rings that end exactly at the end of RAM are valid. */
    qrs_reset(d);
    d->admq_log = 1;
    d->aeq_log = 1;
    d->admq = end - (sizeof(struct rs_admin_cmd) << 1);
    d->acq = d->admq - 64;
    d->aeq = d->acq - 64;
    fill(d, d->aeq, 0, 3 * 64 + 64);
    qrs_writel(d, A_RS_ADMQ_BASE_LO, d->admq);
    qrs_writel(d, A_RS_ADMQ_BASE_HI, d->admq >> 32);
    qrs_writel(d, A_RS_ADMQ_CFG, 1);
    qrs_writel(d, A_RS_ACQ_BASE_LO, d->acq);
    qrs_writel(d, A_RS_ACQ_BASE_HI, d->acq >> 32);
    qrs_writel(d, A_RS_ACQ_CFG, 0);
    qrs_writel(d, A_RS_AEQ_BASE_LO, d->aeq);
    qrs_writel(d, A_RS_AEQ_BASE_HI, d->aeq >> 32);
    qrs_writel(d, A_RS_AEQ_CFG, 1);
    qrs_admin_enable(d);
    wait_aeq_port_active(d);
    for (i = 0; i < 5; i++) {
        RS_ASSERT_OK(qrs_query_device(d, &attr));
        g_assert_cmpuint(attr.max_qp, ==, USABLE(DEF_MAX_QPS));
    }
    qrs_reset(d);
}

/* Wait for an MSI-X message (a 32-bit write) to land at @addr. */
static void wait_msg(QRdmaSession *d, uint64_t addr, uint32_t data)
{
    int64_t end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    while (qtest_readl(qrs_qts(d), addr) != data) {
        if (g_get_monotonic_time() > end) {
            g_error("no MSI-X message 0x%x at 0x%" PRIx64 " (got 0x%x)",
                    data, addr, qtest_readl(qrs_qts(d), addr));
        }
    }
}

static void test_msix(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    QTestState *qts = qrs_qts(d);
    uint64_t msg = qrs_alloc_zeroed(d, PAGE);
    struct rs_device_attr attr;
    int v;

    g_assert_cmpuint(qpci_msix_table_size(&d->dev), ==, DEF_NUM_MSIX);
    for (v = 0; v < DEF_NUM_MSIX; v++) {
        qrs_msix_set_vector(d, v, msg + v * 4, 0xcafe0000 + v, false);
    }

    /* The port event goes to the AEQ vector, completions to the ACQ's. */
    qrs_admin_configure(d, RS_QOS_ADMQ_LOG, RS_QOS_AEQ_LOG, 2, 3);
    qrs_admin_enable(d);
    wait_aeq_port_active(d);
    wait_msg(d, msg + 3 * 4, 0xcafe0003);
    g_assert_cmphex(qtest_readl(qts, msg + 2 * 4), ==, 0);
    RS_ASSERT_OK(qrs_query_device(d, &attr));
    wait_msg(d, msg + 2 * 4, 0xcafe0002);
    g_assert_cmphex(qtest_readl(qts, msg + 0 * 4), ==, 0);
    g_assert_cmphex(qtest_readl(qts, msg + 1 * 4), ==, 0);
    g_assert_cmphex(qtest_readl(qts, msg + 4 * 4), ==, 0);

    /* Default vector 0; a masked vector sends nothing. */
    qrs_reset(d);
    fill(d, msg, 0, PAGE);
    qrs_admin_init(d, RS_QOS_ADMQ_LOG, 0);
    RS_ASSERT_OK(qrs_query_device(d, &attr));
    wait_msg(d, msg, 0xcafe0000);
    qtest_writel(qts, msg, 0);
    qrs_msix_set_vector(d, 0, msg, 0xcafe0000, true);
    RS_ASSERT_OK(qrs_query_device(d, &attr));
    g_assert_cmphex(qtest_readl(qts, msg), ==, 0);
    g_assert_true(is_filled(d, msg + 4, 0, 4 * 4));
    qrs_reset(d);
}

static void test_query(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    struct rs_device_attr a;
    struct rs_port_attr p;

    RS_ASSERT_OK(qrs_query_device(d, &a));
    g_assert_cmphex(a.max_mr_size, ==, (uint64_t)DEF_MAX_MR_PAGES << 12);
    g_assert_cmphex(a.page_size_cap, ==, 0x7ffff000ull);
    g_assert_cmphex(a.abi_version, ==, qrs_readl(d, A_RS_VERSION));
    g_assert_cmphex(a.abi_version, ==, 0x10001);
    g_assert_cmphex(a.caps, ==, qrs_readl(d, A_RS_CAPS));
    g_assert_cmpuint(a.max_qp, ==, USABLE(DEF_MAX_QPS));
    g_assert_cmpuint(a.max_qp_wr, ==, 1u << RS_MAX_WQ_LOG);
    g_assert_cmpuint(a.max_sge, ==, RS_MAX_SGE);
    g_assert_cmpuint(a.max_cq, ==, USABLE(DEF_MAX_CQS));
    g_assert_cmpuint(a.max_cqe, ==, 1u << RS_MAX_CQ_LOG);
    g_assert_cmpuint(a.max_mr, ==, USABLE(DEF_MAX_MRS));
    g_assert_cmpuint(a.max_pd, ==, USABLE(DEF_MAX_PDS));
    g_assert_cmpuint(a.max_ah, ==, USABLE(DEF_MAX_AHS));
    g_assert_cmpuint(a.max_qp_rd_atom, ==, RS_MAX_RD_ATOMIC);
    g_assert_cmpuint(a.max_sessions, ==, USABLE(DEF_MAX_SESSIONS));
    g_assert_cmpuint(a.max_session_groups, ==, USABLE(DEF_MAX_GROUPS));
    g_assert_cmpuint(a.max_gids, ==, DEF_MAX_GIDS);
    g_assert_cmphex(a.max_msg_size, ==, DEF_MAX_MSG_SIZE);
    g_assert_cmpuint(a.max_inline, ==, RS_MAX_INLINE);
    g_assert_cmpuint(a.num_comp_vectors, ==, DEF_COMP_VECTORS);
    g_assert_cmpuint(a.num_db_pages, ==, DEF_DB_PAGES);
    g_assert_cmpmem(a.mac, 6, qos_mac, 6);
    g_assert_cmpuint(a.max_srq, ==, USABLE(DEF_MAX_SRQS));
    g_assert_cmpuint(a.max_srq_wr, ==, 1u << RS_MAX_WQ_LOG);
    g_assert_cmpuint(a.max_srq_sge, ==, RS_MAX_SGE);

    RS_ASSERT_OK(qrs_query_port(d, 1, &p));
    g_assert_cmpuint(p.state, ==, RS_PORT_ACTIVE);
    g_assert_cmpuint(p.max_mtu, ==, RS_MTU_4096);
    g_assert_cmpuint(p.active_mtu, ==, RS_MTU_4096);
    g_assert_cmpuint(p.phys_state, ==, 5);
    g_assert_cmpuint(p.gid_tbl_len, ==, DEF_MAX_GIDS);
    g_assert_cmpuint(p.pkey_tbl_len, ==, 1);
    g_assert_cmpuint(p.active_speed_mbps, ==, 100000);

    /* A response buffer larger than the structure is fine. */
    fill(d, d->scratch, 0xa5, PAGE);
    RS_ASSERT_OK(query_at(d, RS_CMD_QUERY_DEVICE, 0, d->scratch, PAGE));
    g_assert_cmphex(qtest_readl(qrs_qts(d), d->scratch +
                                offsetof(struct rs_device_attr, max_qp)),
                    ==, USABLE(DEF_MAX_QPS));
    g_assert_true(is_filled(d, d->scratch + sizeof(a), 0xa5,
                            PAGE - sizeof(a)));
}

static void set_link(QRdmaSession *d, bool up)
{
    qtest_qmp_assert_success(qrs_qts(d), "{ 'execute': 'set_link',"
                             "  'arguments': { 'name': %s, 'up': %i } }",
                             RS_QOS_NETDEV_ID, up);
}

static void test_link(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    struct rs_port_attr p;
    struct rs_event ev;

    /* Link down: STATUS.LINK_UP follows, no PORT_ACTIVE on enable. */
    set_link(d, false);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, 0);
    qrs_admin_init(d, RS_QOS_ADMQ_LOG, RS_QOS_AEQ_LOG);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, R_RS_STATUS_READY_MASK);
    g_assert_false(qrs_aeq_poll(d, &ev, G_USEC_PER_SEC / 5));
    RS_ASSERT_OK(qrs_query_port(d, 1, &p));
    g_assert_cmpuint(p.state, ==, RS_PORT_DOWN);
    g_assert_cmpuint(p.phys_state, ==, 3);
    g_assert_cmpuint(p.max_mtu, ==, RS_MTU_4096);

    /* Link up while enabled: the port is active. */
    set_link(d, true);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);
    RS_ASSERT_OK(qrs_query_port(d, 1, &p));
    g_assert_cmpuint(p.state, ==, RS_PORT_ACTIVE);
    g_assert_cmpuint(p.phys_state, ==, 5);

    /* A reset keeps the link state; enabling with the link up posts. */
    set_link(d, false);
    qrs_reset(d);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, 0);
    set_link(d, true);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, R_RS_STATUS_LINK_UP_MASK);
    rs_setup(d);
    RS_ASSERT_OK(qrs_query_port(d, 1, &p));
    g_assert_cmpuint(p.state, ==, RS_PORT_ACTIVE);
    assert_alive(d);
    /* Do not hand a QEMU with a toggled link to the next test. */
    qos_invalidate_command_line();
}

/* ------------------------------------------------------------------ */
/* Objects: success paths                                              */
/* ------------------------------------------------------------------ */

static void test_pd(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    uint32_t pd[3], h, h2;
    int i;

    for (i = 0; i < 3; i++) {
        pd[i] = new_pd(d);
        g_assert_cmphex(pd[i], ==, HANDLE(0, i + 1));
    }
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd[1]));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd[1]),
                     RS_STATUS_BAD_HANDLE);

    /* Lowest free index, next generation; the old handle stays dead. */
    h = new_pd(d);
    g_assert_cmphex(h, ==, HANDLE(1, 2));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd[1]),
                     RS_STATUS_BAD_HANDLE);
    h2 = new_pd(d);
    g_assert_cmphex(h2, ==, HANDLE(0, 4));

    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, h));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd[0]));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd[2]));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, h2));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, 0),
                     RS_STATUS_BAD_HANDLE);

    /* The generation of slot 1 counts frees modulo 256. */
    for (i = 1; i <= 256; i++) {
        h = new_pd(d);
        g_assert_cmphex(h, ==, HANDLE(i & 0xff, 1));
        RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, h));
    }
    assert_alive(d);
}

static void test_cq(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    uint64_t r1 = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << 1);
    uint64_t r2 = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << RS_MAX_CQ_LOG);
    uint64_t r3 = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << 6);
    uint32_t h1, h2, h3;

    RS_ASSERT_OK(qrs_create_cq(d, r1, 1, 0, 0, &h1));
    g_assert_cmphex(h1, ==, HANDLE(0, 1));
    RS_ASSERT_OK(qrs_create_cq(d, r2, RS_MAX_CQ_LOG, DEF_COMP_VECTORS - 1,
                               DEF_DB_PAGES - 1, &h2));
    g_assert_cmphex(h2, ==, HANDLE(0, 2));

    /* Resize up, down and back, with nothing to carry over. */
    RS_ASSERT_OK(qrs_resize_cq(d, h1, r3, 6, 0));
    RS_ASSERT_OK(qrs_resize_cq(d, h1, r1, 1, 0));
    RS_ASSERT_OK(qrs_resize_cq(d, h2, r3, 6, 0));
    RS_ASSERT_OK(qrs_resize_cq(d, h2, r2, RS_MAX_CQ_LOG, 0));

    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, h1));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_CQ, h1),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_resize_cq(d, h1, r3, 6, 0), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_create_cq(d, r1, 1, 0, 0, &h3));
    g_assert_cmphex(h3, ==, HANDLE(1, 1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, h3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, h2));
    assert_alive(d);
}

static void assert_ah_equal(const struct rs_ah_attr *a,
                            const struct rs_ah_attr *b)
{
    g_assert_cmpmem(a->dgid, 16, b->dgid, 16);
    g_assert_cmpmem(a->dmac, 6, b->dmac, 6);
    g_assert_cmpuint(a->hop_limit, ==, b->hop_limit);
    g_assert_cmpuint(a->traffic_class, ==, b->traffic_class);
    g_assert_cmphex(a->flow_label, ==, b->flow_label);
    g_assert_cmpuint(a->gid_index, ==, b->gid_index);
}

static void test_qp(void *obj, void *data, QGuestAllocator *alloc)
{
    uint8_t type = *(uint8_t *)data;
    bool rc = type == RS_QPT_RC, uc = type == RS_QPT_UC;
    bool gsi = type == RS_QPT_GSI, connected = rc || uc;
    uint32_t first = gsi ? RS_GSI_QPN : 2;
    QRdmaSession *d = rs_setup(obj);
    struct rs_cmd_create_qp c;
    struct rs_qp_attr a, q;
    uint32_t pd, scq, rcq, qp, qpn, h, h2;
    uint32_t mask;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    scq = new_cq(d, 4);
    rcq = new_cq(d, 5);

    /* Largest SGE and inline sizes, last doorbell page. */
    qp_template(d, &c, type, pd, scq, rcq);
    c.max_send_sge = RS_MAX_SGE;
    c.max_recv_sge = RS_MAX_SGE;
    c.max_inline = RS_MAX_INLINE;
    c.sq_log_size = 1;
    c.rq_log_size = 3;
    c.uar = DEF_DB_PAGES - 1;
    c.flags = RS_QP_F_SIGNAL_ALL;
    g_assert_cmpuint(qrs_qp_sq_bytes(&c), ==, 512 << 1);
    g_assert_cmpuint(qrs_qp_rq_bytes(&c), ==, 512 << 3);
    c.sq_addr = qrs_alloc_zeroed(d, qrs_qp_sq_bytes(&c));
    c.rq_addr = qrs_alloc_zeroed(d, qrs_qp_rq_bytes(&c));
    RS_ASSERT_OK(qrs_create_qp(d, &c, &qp, &qpn));
    g_assert_cmphex(qp, ==, HANDLE(0, first));
    g_assert_cmpuint(qpn, ==, first);

    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_RESET);
    g_assert_cmpuint(q.cur_qp_state, ==, RS_QPS_RESET);
    g_assert_cmpuint(q.qp_type, ==, type);

    /* RESET -> RESET */
    std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE));
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_RESET);

    /* RESET -> INIT */
    std_attr(&a, RS_QPS_RESET, RS_QPS_INIT);
    a.access_flags = rc ? RS_ACCESS_ALL :
                     RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE;
    a.qkey = 0x80010000;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a,
                               std_mask(type, RS_QPS_RESET, RS_QPS_INIT)));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_INIT);
    g_assert_cmpuint(q.cur_qp_state, ==, RS_QPS_INIT);
    g_assert_cmpuint(q.qp_type, ==, type);
    if (connected) {
        g_assert_cmpuint(q.port_num, ==, 1);
        g_assert_cmpuint(q.pkey_index, ==, 0);
        g_assert_cmphex(q.access_flags, ==, a.access_flags);
    } else {
        g_assert_cmphex(q.qkey, ==, 0x80010000);
        g_assert_cmpuint(q.pkey_index, ==, 0);
        if (!gsi) {
            g_assert_cmpuint(q.port_num, ==, 1);
        }
    }

    /* INIT -> INIT: optional attributes only, STATE left out. */
    if (connected) {
        a.access_flags = RS_ACCESS_LOCAL_WRITE;
        mask = RS_QP_ATTR_ACCESS_FLAGS;
    } else {
        a.qkey = 0x22222222;
        mask = RS_QP_ATTR_QKEY;
    }
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, mask));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_INIT);
    if (connected) {
        g_assert_cmphex(q.access_flags, ==, RS_ACCESS_LOCAL_WRITE);
    } else {
        g_assert_cmphex(q.qkey, ==, 0x22222222);
    }

    /* INIT -> RTR, boundary values */
    std_attr(&a, RS_QPS_INIT, RS_QPS_RTR);
    a.path_mtu = RS_MTU_4096;
    a.dest_qp_num = 0xffffff;
    a.rq_psn = 0xffffff;
    a.max_dest_rd_atomic = RS_MAX_RD_ATOMIC;
    a.min_rnr_timer = 31;
    a.ah.flow_label = 0xfffff;
    a.ah.hop_limit = 255;
    a.ah.traffic_class = 0xb8;
    a.qkey = 0x33333333;
    mask = std_mask(type, RS_QPS_INIT, RS_QPS_RTR);
    if (!connected) {
        mask |= RS_QP_ATTR_QKEY;
    }
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, mask));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_RTR);
    g_assert_cmpuint(q.cur_qp_state, ==, RS_QPS_RTR);
    if (connected) {
        g_assert_cmpuint(q.path_mtu, ==, RS_MTU_4096);
        g_assert_cmphex(q.dest_qp_num, ==, 0xffffff);
        g_assert_cmphex(q.rq_psn, ==, 0xffffff);
        assert_ah_equal(&q.ah, &a.ah);
    } else {
        g_assert_cmphex(q.qkey, ==, 0x33333333);
    }
    if (rc) {
        g_assert_cmpuint(q.max_dest_rd_atomic, ==, RS_MAX_RD_ATOMIC);
        g_assert_cmpuint(q.min_rnr_timer, ==, 31);
    }

    /* RTR -> RTS, with the optional CUR_STATE */
    std_attr(&a, RS_QPS_RTR, RS_QPS_RTS);
    a.sq_psn = 0xfffffe;
    a.timeout = 31;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = RS_MAX_RD_ATOMIC;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a,
                               std_mask(type, RS_QPS_RTR, RS_QPS_RTS) |
                               RS_QP_ATTR_CUR_STATE));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_RTS);
    g_assert_cmpuint(q.cur_qp_state, ==, RS_QPS_RTS);
    g_assert_cmphex(q.sq_psn, ==, 0xfffffe);
    if (rc) {
        g_assert_cmpuint(q.timeout, ==, 31);
        g_assert_cmpuint(q.retry_cnt, ==, 7);
        g_assert_cmpuint(q.rnr_retry, ==, 7);
        g_assert_cmpuint(q.max_rd_atomic, ==, RS_MAX_RD_ATOMIC);
        g_assert_cmpuint(q.min_rnr_timer, ==, 31);
    }
    if (connected) {
        /* Attributes of earlier transitions are kept. */
        g_assert_cmphex(q.rq_psn, ==, 0xffffff);
        g_assert_cmphex(q.dest_qp_num, ==, 0xffffff);
        g_assert_cmphex(q.access_flags, ==, RS_ACCESS_LOCAL_WRITE);
        g_assert_cmpuint(q.path_mtu, ==, RS_MTU_4096);
    }

    /* RTS -> RTS */
    std_attr(&a, RS_QPS_RTS, RS_QPS_RTS);
    if (rc) {
        a.min_rnr_timer = 5;
        mask = RS_QP_ATTR_MIN_RNR_TIMER;
    } else if (uc) {
        a.access_flags = RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE;
        mask = RS_QP_ATTR_ACCESS_FLAGS;
    } else {
        a.qkey = 0x44444444;
        mask = RS_QP_ATTR_QKEY;
    }
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE | mask));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_RTS);
    if (rc) {
        g_assert_cmpuint(q.min_rnr_timer, ==, 5);
    } else if (uc) {
        g_assert_cmphex(q.access_flags, ==,
                        RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE);
    } else {
        g_assert_cmphex(q.qkey, ==, 0x44444444);
    }

    /* RTS -> SQD with async notification, SQD -> SQD, SQD -> RTS */
    std_attr(&a, RS_QPS_RTS, RS_QPS_SQD);
    a.en_sqd_async_notify = 1;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE |
                               RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_SQD);
    g_assert_cmpuint(q.en_sqd_async_notify, ==, 1);

    std_attr(&a, RS_QPS_SQD, RS_QPS_SQD);
    if (rc) {
        a.timeout = 20;
        mask = RS_QP_ATTR_TIMEOUT;
    } else if (uc) {
        mask = 0;
    } else {
        a.qkey = 0x55555555;
        mask = RS_QP_ATTR_QKEY;
    }
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE | mask));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_SQD);
    if (rc) {
        g_assert_cmpuint(q.timeout, ==, 20);
    } else if (!uc) {
        g_assert_cmphex(q.qkey, ==, 0x55555555);
    }

    std_attr(&a, RS_QPS_SQD, RS_QPS_RTS);
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE));
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_RTS);

    /* RTS -> ERR -> RESET -> INIT */
    std_attr(&a, RS_QPS_RTS, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE));
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_ERR);
    std_attr(&a, RS_QPS_ERR, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE));
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_ERR);
    std_attr(&a, RS_QPS_ERR, RS_QPS_RESET);
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE));
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_RESET);
    qp_walk(d, qp, type, RS_QPS_INIT);
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_INIT);

    /* The QP holds its PD and CQs. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd), RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_CQ, scq), RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_CQ, rcq), RS_STATUS_BUSY);

    /* Destroy; the handle dies, the slot returns with the next gen. */
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, qp));
    RS_ASSERT_STATUS(qrs_query_qp(d, qp, &q), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_QP, qp),
                     RS_STATUS_BAD_HANDLE);
    h = new_qp(d, &c);
    g_assert_cmphex(h, ==, HANDLE(1, first));
    if (gsi) {
        RS_ASSERT_STATUS(qrs_create_qp(d, &c, &h2, NULL), RS_STATUS_EXISTS);
        qp_template(d, &c, RS_QPT_RC, pd, scq, rcq);
        h2 = new_qp(d, &c);
        g_assert_cmphex(h2, ==, HANDLE(0, 2));
    } else {
        h2 = new_qp(d, &c);
        g_assert_cmphex(h2, ==, HANDLE(0, 3));
    }
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, h));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, h2));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, scq));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, rcq));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd));
    assert_alive(d);
}

/* A page list of @npages pages starting at @base, @stride apart. */
static uint64_t make_pbl(QRdmaSession *d, uint64_t base, uint64_t stride,
                         uint32_t npages)
{
    uint64_t pbl = qrs_alloc_zeroed(d, MAX(npages * 8, 8));
    uint32_t i;

    for (i = 0; i < npages; i++) {
        qtest_writeq(qrs_qts(d), pbl + i * 8, base + i * stride);
    }
    return pbl;
}

/* Indirect page list: chunk pages of 512 addresses, and their list. */
static uint64_t make_indirect_pbl(QRdmaSession *d, uint64_t base,
                                  uint32_t npages)
{
    uint32_t nchunks = DIV_ROUND_UP(npages, RS_PBL_CHUNK_ENTRIES);
    uint64_t list = qrs_alloc_zeroed(d, nchunks * 8);
    uint32_t i;

    for (i = 0; i < nchunks; i++) {
        uint32_t n = MIN(npages - i * RS_PBL_CHUNK_ENTRIES,
                         RS_PBL_CHUNK_ENTRIES);
        uint64_t chunk = qrs_alloc_zeroed(d, PAGE);
        uint32_t j;

        for (j = 0; j < n; j++) {
            qtest_writeq(qrs_qts(d), chunk + j * 8,
                         base + (uint64_t)(i * RS_PBL_CHUNK_ENTRIES + j) *
                         PAGE);
        }
        qtest_writeq(qrs_qts(d), list + i * 8, chunk);
    }
    return list;
}

static uint32_t reg_mr_ok(QRdmaSession *d, const struct rs_cmd_reg_mr *c)
{
    uint32_t lkey = 0, rkey = 0;

    RS_ASSERT_OK(qrs_reg_mr(d, c, &lkey, &rkey));
    g_assert_cmphex(lkey, ==, rkey);
    return lkey;
}

static void test_mr(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    uint64_t buf = qrs_alloc_zeroed(d, 3 * PAGE);
    uint64_t big = guest_alloc(alloc, 4 * MiB);
    uint64_t big_aligned = ROUND_UP(big, 2 * MiB);
    uint64_t many = guest_alloc(alloc, 600 * PAGE);
    struct rs_cmd_reg_mr c = { 0 }, c2, c3, c4, c5;
    uint32_t pd, k1, k2, k3, k4, k5, k1b;
    int i;

    g_assert(big && many);
    add_gid_v4(d, 0, 1);
    add_gid_v4(d, 1, 2);
    pd = new_pd(d);

    /* Direct page list, three 4 KiB pages. */
    c.iova = 0x7f0000000000ull;
    c.length = 3 * PAGE;
    c.pbl_addr = make_pbl(d, buf, PAGE, 3);
    c.npages = 3;
    c.pd = pd;
    c.page_shift = 12;
    c.access = STD_ACCESS;
    c.gid_index = 0;
    k1 = reg_mr_ok(d, &c);
    g_assert_cmphex(k1 >> RS_MKEY_INDEX_SHIFT, ==, 1);

    /* IOVA in the middle of a page: two pages spanned. */
    c2 = c;
    c2.iova = 0x1800;
    c2.length = PAGE;
    c2.npages = 2;
    c2.access = RS_ACCESS_ALL;
    c2.gid_index = 1;
    k2 = reg_mr_ok(d, &c2);
    g_assert_cmphex(k2 >> RS_MKEY_INDEX_SHIFT, ==, 2);

    /* Local read only, one byte. */
    c3 = c;
    c3.length = 1;
    c3.npages = 1;
    c3.access = 0;
    k3 = reg_mr_ok(d, &c3);
    g_assert_cmphex(k3 >> RS_MKEY_INDEX_SHIFT, ==, 3);

    /* 2 MiB pages. */
    c4 = c;
    c4.iova = 0x40000000;
    c4.length = 2 * MiB;
    c4.npages = 1;
    c4.page_shift = 21;
    c4.pbl_addr = make_pbl(d, big_aligned, 2 * MiB, 1);
    k4 = reg_mr_ok(d, &c4);
    g_assert_cmphex(k4 >> RS_MKEY_INDEX_SHIFT, ==, 4);

    /* Indirect page list: 600 pages in two chunks. */
    c5 = c;
    c5.iova = 0;
    c5.length = 600 * PAGE;
    c5.npages = 600;
    c5.flags = RS_MR_F_PBL_INDIRECT;
    c5.pbl_addr = make_indirect_pbl(d, many, 600);
    k5 = reg_mr_ok(d, &c5);
    g_assert_cmphex(k5 >> RS_MKEY_INDEX_SHIFT, ==, 5);

    /* The MRs hold their PD and GIDs. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd), RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 1), RS_STATUS_BUSY);

    /* Re-registering a slot gives a new tag; the old key is dead. */
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k1));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEREG_MR, k1),
                     RS_STATUS_BAD_HANDLE);
    k1b = reg_mr_ok(d, &c);
    g_assert_cmphex(k1b >> RS_MKEY_INDEX_SHIFT, ==, 1);
    g_assert_cmphex(k1b & RS_MKEY_TAG_MASK, ==,
                    (k1 + 1) & RS_MKEY_TAG_MASK);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEREG_MR, k1),
                     RS_STATUS_BAD_HANDLE);

    /* The tag counts registrations of the slot modulo 256. */
    for (i = 1; i <= 256; i++) {
        RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k1b));
        k1b = reg_mr_ok(d, &c3);
        g_assert_cmphex(k1b, ==, (1 << RS_MKEY_INDEX_SHIFT) |
                        ((k1 + 1 + i) & RS_MKEY_TAG_MASK));
    }

    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k1b));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k2));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k4));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k5));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd));
    assert_alive(d);
}

static void ah_template(struct rs_cmd_create_ah *c, uint32_t pd,
                        uint32_t gid_index)
{
    memset(c, 0, sizeof(*c));
    gid_v4(c->dgid, 10, 0, 0, 2);
    c->dmac[0] = 0x02;
    c->dmac[5] = 0x02;
    c->hop_limit = 64;
    c->pd = pd;
    c->gid_index = gid_index;
}

static void test_ah(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    struct rs_cmd_create_ah c;
    uint32_t pd, h1, h2, h3;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    ah_template(&c, pd, 0);
    RS_ASSERT_OK(qrs_create_ah(d, &c, &h1));
    g_assert_cmphex(h1, ==, HANDLE(0, 1));
    c.flow_label = 0xfffff;
    c.traffic_class = 0xff;
    c.hop_limit = 255;
    RS_ASSERT_OK(qrs_create_ah(d, &c, &h2));
    g_assert_cmphex(h2, ==, HANDLE(0, 2));

    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd), RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 0), RS_STATUS_BUSY);

    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_AH, h1));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_AH, h1),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_create_ah(d, &c, &h3));
    g_assert_cmphex(h3, ==, HANDLE(1, 1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_AH, h2));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_AH, h3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 0));
    assert_alive(d);
}

static void session_template(struct rs_cmd_create_session *c,
                             uint32_t gid_index, uint16_t src_port)
{
    memset(c, 0, sizeof(*c));
    gid_v4(c->dst_ip, 10, 0, 0, 2);
    c->dmac[0] = 0x02;
    c->dmac[5] = 0x02;
    c->src_port = src_port;
    c->dst_port = 4791;
    c->gid_index = gid_index;
}

static uint32_t new_session(QRdmaSession *d, uint32_t gid_index,
                            uint16_t src_port)
{
    struct rs_cmd_create_session c;
    uint32_t h = 0;

    session_template(&c, gid_index, src_port);
    RS_ASSERT_OK(qrs_create_session(d, &c, &h));
    return h;
}

static uint32_t new_group(QRdmaSession *d, uint8_t policy, uint32_t s0,
                          uint32_t s1)
{
    struct rs_cmd_create_session_group c = { 0 };
    uint32_t h = 0;

    c.session[0] = s0;
    c.session[1] = s1;
    c.nsessions = s1 ? 2 : 1;
    c.policy = policy;
    RS_ASSERT_OK(qrs_create_session_group(d, &c, &h));
    return h;
}

static void test_session(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    struct rs_cmd_create_session_group gc = { 0 };
    struct rs_cmd_create_session sc;
    struct rs_cmd_create_qp c;
    struct rs_qp_attr a, q;
    uint32_t s[RS_MAX_GROUP_SESSIONS], g1, g2, g3, pd, cq, qp, ud, h;
    int i;

    add_gid_v4(d, 0, 1);
    add_gid_v4(d, 1, 2);
    for (i = 0; i < RS_MAX_GROUP_SESSIONS; i++) {
        s[i] = new_session(d, 0, 49152 + i);
        g_assert_cmphex(s[i], ==, HANDLE(0, i + 1));
    }

    /* Group of the largest size, and two small ones. */
    memcpy(gc.session, s, sizeof(s));
    gc.nsessions = RS_MAX_GROUP_SESSIONS;
    gc.policy = RS_GROUP_ROUND_ROBIN;
    RS_ASSERT_OK(qrs_create_session_group(d, &gc, &g1));
    g_assert_cmphex(g1, ==, HANDLE(0, 1));
    h = new_session(d, 1, 1024);
    g_assert_cmphex(h, ==, HANDLE(0, 9));
    g2 = new_group(d, RS_GROUP_ACTIVE_BACKUP, h, 0);
    g_assert_cmphex(g2, ==, HANDLE(0, 2));

    /* A QP created in a group; rebinding with MODIFY_QP. */
    pd = new_pd(d);
    cq = new_cq(d, 4);
    qp_template(d, &c, RS_QPT_RC, pd, cq, cq);
    c.session_group = g1;
    qp = new_qp(d, &c);
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmphex(q.session_group, ==, g1);

    std_attr(&a, RS_QPS_RESET, RS_QPS_INIT);
    a.session_group = g2;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RC_INIT_MASK |
                               RS_QP_ATTR_SESSION_GROUP));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_INIT);
    g_assert_cmphex(q.session_group, ==, g2);
    /* g1 is no longer bound. */
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g1));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g1),
                     RS_STATUS_BAD_HANDLE);
    g3 = new_group(d, RS_GROUP_ROUND_ROBIN, s[0], s[1]);
    g_assert_cmphex(g3, ==, HANDLE(1, 1));

    /* INIT -> RTR -> RTS, rebinding to g3 on the way to RTS. */
    std_attr(&a, RS_QPS_INIT, RS_QPS_RTR);
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RC_RTR_MASK));
    std_attr(&a, RS_QPS_RTR, RS_QPS_RTS);
    a.session_group = g3;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RC_RTS_MASK |
                               RS_QP_ATTR_SESSION_GROUP));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmpuint(q.qp_state, ==, RS_QPS_RTS);
    g_assert_cmphex(q.session_group, ==, g3);
    /* RTS -> RTS back to g2. */
    std_attr(&a, RS_QPS_RTS, RS_QPS_RTS);
    a.session_group = g2;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_SESSION_GROUP));
    RS_ASSERT_OK(qrs_query_qp(d, qp, &q));
    g_assert_cmphex(q.session_group, ==, g2);

    /* A UD QP bound at RESET -> INIT. */
    qp_template(d, &c, RS_QPT_UD, pd, cq, cq);
    ud = new_qp(d, &c);
    std_attr(&a, RS_QPS_RESET, RS_QPS_INIT);
    a.session_group = g3;
    RS_ASSERT_OK(qrs_modify_qp(d, ud, &a, UD_INIT_MASK |
                               RS_QP_ATTR_SESSION_GROUP));
    RS_ASSERT_OK(qrs_query_qp(d, ud, &q));
    g_assert_cmphex(q.session_group, ==, g3);

    /* References: group bound to a QP, session member of a group. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g2),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g3),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION, h),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION, s[0]),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 1), RS_STATUS_BUSY);
    /* s[2] was only in g1, which is gone. */
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, s[2]));

    /* The same tuple can be created again once destroyed. */
    session_template(&sc, 0, 49152 + 2);
    RS_ASSERT_OK(qrs_create_session(d, &sc, &s[2]));
    g_assert_cmphex(s[2], ==, HANDLE(1, 3));

    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, qp));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g2));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g3),
                     RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, ud));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, g3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, h));
    for (i = 0; i < RS_MAX_GROUP_SESSIONS; i++) {
        RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, s[i]));
    }
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION, s[0]),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 0));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, cq));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd));
    assert_alive(d);
}

static void test_gid(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    struct rs_cmd_add_gid g = { 0 };
    struct rs_cmd_create_qp c;
    struct rs_qp_attr a;
    uint32_t index, pd, cq, qp;

    gid_v4(g.gid, 192, 168, 1, 1);
    g.index = 0;
    g.type = RS_GID_ROCE_V2_IPV4;
    RS_ASSERT_OK(qrs_add_gid(d, &g, &index));
    g_assert_cmpuint(index, ==, 0);

    /* IPv6 GID in the last slot with the largest VNI. */
    memset(g.gid, 0, sizeof(g.gid));
    g.gid[0] = 0xfd;
    g.gid[15] = 1;
    g.index = DEF_MAX_GIDS - 1;
    g.type = RS_GID_ROCE_V2_IPV6;
    g.vni = 0xffffff;
    RS_ASSERT_OK(qrs_add_gid(d, &g, &index));
    g_assert_cmpuint(index, ==, DEF_MAX_GIDS - 1);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, DEF_MAX_GIDS - 1));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, DEF_MAX_GIDS - 1),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_add_gid(d, &g, &index));
    g_assert_cmpuint(index, ==, DEF_MAX_GIDS - 1);

    /* A QP's address vector holds its source GID. */
    pd = new_pd(d);
    cq = new_cq(d, 4);
    qp_template(d, &c, RS_QPT_RC, pd, cq, cq);
    qp = new_qp(d, &c);
    qp_walk(d, qp, RS_QPT_RC, RS_QPS_INIT);
    std_attr(&a, RS_QPS_INIT, RS_QPS_RTR);
    a.ah.gid_index = DEF_MAX_GIDS - 1;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RC_RTR_MASK));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, DEF_MAX_GIDS - 1),
                     RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, qp));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, DEF_MAX_GIDS - 1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 0));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 0), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, cq));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, pd));
    assert_alive(d);
}

/* ------------------------------------------------------------------ */
/* Bad input: table driven                                             */
/* ------------------------------------------------------------------ */

/*
 * Row values either are literals or name something of the fixture
 * (TOK(id, offset)): an address, a handle, ...
 */
#define TOK_MARK        0x7a5a000000000000ull
#define TOK_MARK_MASK   0xffff000000000000ull
#define TOK(t, off)     (TOK_MARK | ((uint64_t)(t) << 32) | \
                         (uint32_t)(int32_t)(off))

enum {
    T_NONE,
    /* addresses */
    T_BAR0, T_BAR1, T_BAR2, T_RAM_END, T_SCRATCH, T_ATTR,
    T_CQ_RING, T_CQ_RING2, T_SQ, T_RQ,
    T_PBL, T_PBL_MISALIGNED, T_PBL_FAR, T_PBL_BAR0, T_PBL_RAM_END,
    T_IPBL, T_IPBL_MISALIGNED, T_IPBL_FAR, T_IPBL_BAR0,
    T_RING_ADMQ, T_RING_ACQ, T_RING_AEQ,
    /* handles */
    T_PD, T_PD_MR, T_PD_AH, T_PD_STALE,
    T_CQ, T_CQ_SEND, T_CQ_RECV, T_CQ_FREE, T_CQ_STALE,
    T_QP, T_QP_STALE,
    T_MR, T_MR_STALE,
    T_AH, T_AH_STALE,
    T_SESS, T_SESS_GID1, T_SESS_FREE1, T_SESS_FREE2, T_SESS_STALE,
    T_GROUP, T_GROUP_STALE,
    T_COUNT
};

typedef struct BadPatch {
    uint16_t off;
    uint8_t size;
    uint64_t value;
} BadPatch;

typedef struct BadFixture {
    QRdmaSession *d;
    uint64_t tok[T_COUNT];
    struct rs_cmd_create_qp qp_tmpl;
} BadFixture;

static uint64_t resolve(BadFixture *f, uint64_t v)
{
    unsigned t;

    if ((v & TOK_MARK_MASK) != TOK_MARK) {
        return v;
    }
    t = (v >> 32) & 0xffff;
    g_assert_cmpuint(t, >, T_NONE);
    g_assert_cmpuint(t, <, T_COUNT);
    return f->tok[t] + (int64_t)(int32_t)(uint32_t)v;
}

static void apply_patches(BadFixture *f, void *obj, size_t obj_size,
                          const BadPatch *p, int n)
{
    int i;

    for (i = 0; i < n && p[i].size; i++) {
        uint64_t v = resolve(f, p[i].value);
        uint8_t *dst = (uint8_t *)obj + p[i].off;
        uint8_t v8 = v;
        uint16_t v16 = v;
        uint32_t v32 = v;

        g_assert_cmpuint(p[i].off + p[i].size, <=, obj_size);
        switch (p[i].size) {
        case 1:
            memcpy(dst, &v8, 1);
            break;
        case 2:
            memcpy(dst, &v16, 2);
            break;
        case 4:
            memcpy(dst, &v32, 4);
            break;
        case 8:
            memcpy(dst, &v, 8);
            break;
        default:
            g_assert_not_reached();
        }
    }
}

/* Guest memory of the fixture: allocated once per test. */
static void bad_fixture_memory(QRdmaSession *d, BadFixture *f)
{
    uint64_t *t = f->tok;
    uint64_t buf = qrs_alloc_zeroed(d, 3 * PAGE);
    uint64_t many = guest_alloc(d->alloc, 600 * PAGE);
    uint64_t c0 = qrs_alloc_zeroed(d, PAGE), c1 = qrs_alloc_zeroed(d, PAGE);
    struct rs_qp_attr a;
    uint32_t i;

    g_assert(many);
    memset(f, 0, sizeof(*f));
    f->d = d;
    t[T_BAR0] = d->bar0.addr;
    t[T_BAR1] = d->dev.msix_table_bar.addr;
    t[T_BAR2] = d->bar2.addr;
    t[T_RAM_END] = ram_end(d);
    t[T_SCRATCH] = qrs_alloc_zeroed(d, PAGE);
    t[T_ATTR] = qrs_alloc_zeroed(d, PAGE);
    std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
    qrs_qp_attr_to_le(&a);
    qtest_memwrite(qrs_qts(d), t[T_ATTR], &a, sizeof(a));
    t[T_CQ_RING] = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << 4);
    t[T_CQ_RING2] = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << 5);

    /* Page lists of three pages: a good one and one bad entry each. */
    t[T_PBL] = make_pbl(d, buf, PAGE, 3);
    t[T_PBL_MISALIGNED] = make_pbl(d, buf, PAGE, 3);
    qtest_writeq(qrs_qts(d), t[T_PBL_MISALIGNED] + 8, buf + PAGE + 0x800);
    t[T_PBL_FAR] = make_pbl(d, buf, PAGE, 3);
    qtest_writeq(qrs_qts(d), t[T_PBL_FAR] + 16, FAR_ADDR);
    t[T_PBL_BAR0] = make_pbl(d, buf, PAGE, 3);
    qtest_writeq(qrs_qts(d), t[T_PBL_BAR0] + 8, d->bar0.addr);
    t[T_PBL_RAM_END] = make_pbl(d, buf, PAGE, 3);
    qtest_writeq(qrs_qts(d), t[T_PBL_RAM_END] + 16, t[T_RAM_END]);

    /* Indirect lists for 600 pages: two chunks. */
    for (i = 0; i < 600; i++) {
        qtest_writeq(qrs_qts(d), (i < 512 ? c0 : c1) + (i % 512) * 8,
                     many + i * PAGE);
    }
    t[T_IPBL] = make_pbl(d, c0, c1 - c0, 2);
    t[T_IPBL_MISALIGNED] = make_pbl(d, c0, c1 - c0, 2);
    qtest_writeq(qrs_qts(d), t[T_IPBL_MISALIGNED] + 8, c1 + 0x800);
    t[T_IPBL_FAR] = make_pbl(d, c0, c1 - c0, 2);
    qtest_writeq(qrs_qts(d), t[T_IPBL_FAR] + 8, FAR_ADDR);
    t[T_IPBL_BAR0] = make_pbl(d, c0, c1 - c0, 2);
    qtest_writeq(qrs_qts(d), t[T_IPBL_BAR0] + 8, d->bar0.addr);
}

/*
 * Objects of the fixture:
 *   GIDs 0 (sessions), 1 (one session), 2 (an MR), 4 (an AH), 5 (a QP AV)
 *   PD: QPs; PD_MR: an MR only; PD_AH: an AH only
 *   CQ: QPs; CQ_SEND/CQ_RECV: the send/recv CQ of one UD QP; CQ_FREE
 *   QP: an RC QP in RESET; a UD QP bound to GROUP; a GSI QP
 *   GROUP = { SESS, another }; SESS_FREE1/2 in no group
 *   *_STALE: created and destroyed again
 */
static void bad_fixture_objects(BadFixture *f)
{
    QRdmaSession *d = f->d;
    uint64_t *t = f->tok;
    struct rs_cmd_create_qp c;
    struct rs_cmd_reg_mr mr = { 0 };
    struct rs_cmd_create_ah ah;
    struct rs_qp_attr a;
    uint32_t qp_av, h;

    add_gid_v4(d, 0, 1);
    add_gid_v4(d, 1, 1);
    add_gid_v4(d, 2, 1);
    add_gid_v4(d, 4, 1);
    add_gid_v4(d, 5, 1);

    t[T_PD] = new_pd(d);
    t[T_PD_MR] = new_pd(d);
    t[T_PD_AH] = new_pd(d);
    t[T_PD_STALE] = new_pd(d);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, t[T_PD_STALE]));

    t[T_CQ] = new_cq(d, 4);
    t[T_CQ_SEND] = new_cq(d, 4);
    t[T_CQ_RECV] = new_cq(d, 4);
    t[T_CQ_FREE] = new_cq(d, 4);
    t[T_CQ_STALE] = new_cq(d, 4);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, t[T_CQ_STALE]));

    t[T_SESS] = new_session(d, 0, 49152);
    h = new_session(d, 0, 49153);
    t[T_SESS_FREE1] = new_session(d, 0, 49154);
    t[T_SESS_FREE2] = new_session(d, 0, 49155);
    t[T_SESS_GID1] = new_session(d, 1, 49152);
    t[T_SESS_STALE] = new_session(d, 0, 49160);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, t[T_SESS_STALE]));
    t[T_GROUP] = new_group(d, RS_GROUP_ROUND_ROBIN, t[T_SESS], h);
    t[T_GROUP_STALE] = new_group(d, RS_GROUP_ROUND_ROBIN,
                                 t[T_SESS_FREE1], 0);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP,
                             t[T_GROUP_STALE]));

    qp_template(d, &f->qp_tmpl, RS_QPT_RC, t[T_PD], t[T_CQ], t[T_CQ]);
    t[T_SQ] = f->qp_tmpl.sq_addr;
    t[T_RQ] = f->qp_tmpl.rq_addr;
    t[T_QP] = new_qp(d, &f->qp_tmpl);
    t[T_QP_STALE] = new_qp(d, &f->qp_tmpl);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, t[T_QP_STALE]));

    qp_template(d, &c, RS_QPT_RC, t[T_PD], t[T_CQ], t[T_CQ]);
    qp_av = new_qp(d, &c);
    qp_walk(d, qp_av, RS_QPT_RC, RS_QPS_INIT);
    std_attr(&a, RS_QPS_INIT, RS_QPS_RTR);
    a.ah.gid_index = 5;
    RS_ASSERT_OK(qrs_modify_qp(d, qp_av, &a, RC_RTR_MASK));

    qp_template(d, &c, RS_QPT_UD, t[T_PD], t[T_CQ_SEND], t[T_CQ_RECV]);
    c.session_group = t[T_GROUP];
    new_qp(d, &c);
    qp_template(d, &c, RS_QPT_GSI, t[T_PD], t[T_CQ], t[T_CQ]);
    new_qp(d, &c);

    mr.iova = 0x10000;
    mr.length = PAGE;
    mr.pbl_addr = t[T_PBL];
    mr.npages = 1;
    mr.pd = t[T_PD_MR];
    mr.page_shift = 12;
    mr.access = STD_ACCESS;
    mr.gid_index = 2;
    t[T_MR] = reg_mr_ok(d, &mr);
    mr.pd = t[T_PD];
    mr.gid_index = 0;
    t[T_MR_STALE] = reg_mr_ok(d, &mr);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, t[T_MR_STALE]));

    ah_template(&ah, t[T_PD_AH], 4);
    RS_ASSERT_OK(qrs_create_ah(d, &ah, &h));
    t[T_AH] = h;
    RS_ASSERT_OK(qrs_create_ah(d, &ah, &h));
    t[T_AH_STALE] = h;
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_AH, h));
}

/* A valid command of each kind, built from the fixture. */
static void bad_template(BadFixture *f, uint8_t opcode, uint8_t variant,
                         struct rs_admin_cmd *cmd)
{
    uint64_t *t = f->tok;

    cmd_init(cmd, opcode);
    switch (opcode) {
    case RS_CMD_QUERY_DEVICE:
        cmd->query.resp_addr = t[T_SCRATCH];
        cmd->query.resp_len = sizeof(struct rs_device_attr);
        break;
    case RS_CMD_QUERY_PORT:
        cmd->query.resp_addr = t[T_SCRATCH];
        cmd->query.resp_len = sizeof(struct rs_port_attr);
        cmd->query.handle = 1;
        break;
    case RS_CMD_QUERY_QP:
        cmd->query.resp_addr = t[T_SCRATCH];
        cmd->query.resp_len = sizeof(struct rs_qp_attr);
        cmd->query.handle = t[T_QP];
        break;
    case RS_CMD_CREATE_CQ:
        cmd->create_cq.ring_addr = t[T_CQ_RING];
        cmd->create_cq.log_size = 4;
        break;
    case RS_CMD_RESIZE_CQ:
        cmd->resize_cq.ring_addr = t[T_CQ_RING2];
        cmd->resize_cq.handle = t[T_CQ_FREE];
        cmd->resize_cq.log_size = 5;
        break;
    case RS_CMD_CREATE_QP:
        cmd->create_qp = f->qp_tmpl;
        break;
    case RS_CMD_MODIFY_QP:
        cmd->modify_qp.attr_addr = t[T_ATTR];
        cmd->modify_qp.handle = t[T_QP];
        cmd->modify_qp.attr_mask = RS_QP_ATTR_STATE;
        break;
    case RS_CMD_REG_MR:
        cmd->reg_mr.pd = t[T_PD];
        cmd->reg_mr.page_shift = 12;
        cmd->reg_mr.access = STD_ACCESS;
        cmd->reg_mr.gid_index = 0;
        if (variant) {
            cmd->reg_mr.iova = 0;
            cmd->reg_mr.length = 600 * PAGE;
            cmd->reg_mr.npages = 600;
            cmd->reg_mr.pbl_addr = t[T_IPBL];
            cmd->reg_mr.flags = RS_MR_F_PBL_INDIRECT;
        } else {
            cmd->reg_mr.iova = 0x10000;
            cmd->reg_mr.length = 3 * PAGE;
            cmd->reg_mr.npages = 3;
            cmd->reg_mr.pbl_addr = t[T_PBL];
        }
        break;
    case RS_CMD_CREATE_AH:
        ah_template(&cmd->create_ah, t[T_PD], 0);
        break;
    case RS_CMD_CREATE_SESSION:
        session_template(&cmd->create_session, 0, 50000);
        break;
    case RS_CMD_CREATE_SESSION_GROUP:
        cmd->create_group.session[0] = t[T_SESS_FREE1];
        cmd->create_group.session[1] = t[T_SESS_FREE2];
        cmd->create_group.nsessions = 2;
        cmd->create_group.policy = RS_GROUP_ROUND_ROBIN;
        break;
    case RS_CMD_ADD_GID:
        gid_v4(cmd->add_gid.gid, 10, 0, 3, 9);
        cmd->add_gid.index = 3;
        cmd->add_gid.type = RS_GID_ROCE_V2_IPV4;
        cmd->add_gid.vni = 100;
        break;
    default:
        /* Destroy commands and unknown opcodes: rows set the rest. */
        break;
    }
}

typedef struct BadCmdRow {
    const char *name;
    uint8_t opcode;
    uint8_t variant;            /* REG_MR: 1 = indirect page list */
    uint8_t status;
    BadPatch patch[4];
} BadCmdRow;

#define P(f, v) { offsetof(struct rs_admin_cmd, f),                       \
                  sizeof(((struct rs_admin_cmd *)NULL)->f), (v) }
#define ROW(name, op, st, ...) \
    { name, RS_CMD_##op, 0, RS_STATUS_##st, { __VA_ARGS__ } }
#define ROWV(name, op, var, st, ...) \
    { name, RS_CMD_##op, var, RS_STATUS_##st, { __VA_ARGS__ } }
#define RAW(name, opcode, st) \
    { name, opcode, 0, RS_STATUS_##st, { { 0 } } }
#define DESTROY(name, op, h, st) \
    ROW(name, op, st, P(destroy.handle, h))

#define MR_PAGES_OVER   (DEF_MAX_MR_PAGES + 1ull)

static const BadCmdRow bad_cmd_rows[] = {
    /* Opcodes */
    RAW("opcode 0x00", 0x00, BAD_OPCODE),
    RAW("opcode 0x19", 0x19, BAD_OPCODE),
    RAW("opcode 0x1a", 0x1a, BAD_OPCODE),
    RAW("opcode 0x1f", 0x1f, BAD_OPCODE),
    RAW("opcode 0x28", 0x28, BAD_OPCODE),
    RAW("opcode 0x80", 0x80, BAD_OPCODE),
    RAW("opcode 0xff", 0xff, BAD_OPCODE),
    RAW("CREATE_SRQ all zero", RS_CMD_CREATE_SRQ, BAD_HANDLE),
    RAW("MODIFY_SRQ all zero", RS_CMD_MODIFY_SRQ, BAD_HANDLE),
    RAW("DESTROY_SRQ all zero", RS_CMD_DESTROY_SRQ, BAD_HANDLE),
    RAW("reserved CREATE_DCT", RS_CMD_CREATE_DCT, NOT_SUPPORTED),
    RAW("reserved DESTROY_DCT", RS_CMD_DESTROY_DCT, NOT_SUPPORTED),
    RAW("reserved REG_INDIRECT_MKEY", RS_CMD_REG_INDIRECT_MKEY,
        NOT_SUPPORTED),
    RAW("reserved REG_PATTERN_MKEY", RS_CMD_REG_PATTERN_MKEY,
        NOT_SUPPORTED),
    RAW("reserved ODP_RESOLVE", RS_CMD_ODP_RESOLVE, NOT_SUPPORTED),

    /* QUERY_DEVICE */
    ROW("QUERY_DEVICE resp_len 0", QUERY_DEVICE, BAD_SIZE,
        P(query.resp_len, 0)),
    ROW("QUERY_DEVICE resp_len 127", QUERY_DEVICE, BAD_SIZE,
        P(query.resp_len, 127)),
    ROW("QUERY_DEVICE resp_addr +4", QUERY_DEVICE, BAD_ALIGN,
        P(query.resp_addr, TOK(T_SCRATCH, 4))),
    ROW("QUERY_DEVICE resp_addr +1", QUERY_DEVICE, BAD_ALIGN,
        P(query.resp_addr, TOK(T_SCRATCH, 1))),
    ROW("QUERY_DEVICE resp_addr in BAR0", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, TOK(T_BAR0, 0))),
    ROW("QUERY_DEVICE resp_addr in MSI-X BAR", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, TOK(T_BAR1, 0))),
    ROW("QUERY_DEVICE resp_addr in BAR2", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, TOK(T_BAR2, 0))),
    ROW("QUERY_DEVICE resp_addr at end of RAM", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, TOK(T_RAM_END, 0))),
    ROW("QUERY_DEVICE resp straddles end of RAM", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, TOK(T_RAM_END, -64))),
    ROW("QUERY_DEVICE resp_addr far", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, FAR_ADDR)),
    ROW("QUERY_DEVICE resp_addr wraps", QUERY_DEVICE, BAD_ADDR,
        P(query.resp_addr, 0xffffffffffffffc0ull)),

    /* QUERY_PORT */
    ROW("QUERY_PORT port 0", QUERY_PORT, BAD_PARAM, P(query.handle, 0)),
    ROW("QUERY_PORT port 2", QUERY_PORT, BAD_PARAM, P(query.handle, 2)),
    ROW("QUERY_PORT resp_len 63", QUERY_PORT, BAD_SIZE,
        P(query.resp_len, 63)),
    ROW("QUERY_PORT resp_addr in BAR0", QUERY_PORT, BAD_ADDR,
        P(query.resp_addr, TOK(T_BAR0, 0))),
    ROW("QUERY_PORT resp_addr +4", QUERY_PORT, BAD_ALIGN,
        P(query.resp_addr, TOK(T_SCRATCH, 4))),

    /* QUERY_QP */
    ROW("QUERY_QP stale handle", QUERY_QP, BAD_HANDLE,
        P(query.handle, TOK(T_QP_STALE, 0))),
    ROW("QUERY_QP handle 0", QUERY_QP, BAD_HANDLE, P(query.handle, 0)),
    ROW("QUERY_QP wrong generation", QUERY_QP, BAD_HANDLE,
        P(query.handle, TOK(T_QP, 1 << RS_HANDLE_GEN_SHIFT))),
    ROW("QUERY_QP index out of range", QUERY_QP, BAD_HANDLE,
        P(query.handle, 0x00fffffe)),
    ROW("QUERY_QP resp_len 95", QUERY_QP, BAD_SIZE, P(query.resp_len, 95)),
    ROW("QUERY_QP resp straddles end of RAM", QUERY_QP, BAD_ADDR,
        P(query.resp_addr, TOK(T_RAM_END, -32))),
    ROW("QUERY_QP resp_addr +4", QUERY_QP, BAD_ALIGN,
        P(query.resp_addr, TOK(T_SCRATCH, 4))),

    /* CREATE_PD / DESTROY_PD */
    DESTROY("DESTROY_PD handle 0", DESTROY_PD, 0, BAD_HANDLE),
    DESTROY("DESTROY_PD twice (stale)", DESTROY_PD, TOK(T_PD_STALE, 0),
            BAD_HANDLE),
    DESTROY("DESTROY_PD wrong generation", DESTROY_PD,
            TOK(T_PD, 1 << RS_HANDLE_GEN_SHIFT), BAD_HANDLE),
    DESTROY("DESTROY_PD free slot", DESTROY_PD, 200, BAD_HANDLE),
    DESTROY("DESTROY_PD index max-pds", DESTROY_PD, DEF_MAX_PDS,
            BAD_HANDLE),
    DESTROY("DESTROY_PD index out of range", DESTROY_PD, 0x00ffffff,
            BAD_HANDLE),
    DESTROY("DESTROY_PD used by QPs", DESTROY_PD, TOK(T_PD, 0), BUSY),
    DESTROY("DESTROY_PD used by an MR", DESTROY_PD, TOK(T_PD_MR, 0), BUSY),
    DESTROY("DESTROY_PD used by an AH", DESTROY_PD, TOK(T_PD_AH, 0), BUSY),

    /* CREATE_CQ */
    ROW("CREATE_CQ log_size 0", CREATE_CQ, BAD_SIZE,
        P(create_cq.log_size, 0)),
    ROW("CREATE_CQ log_size 17", CREATE_CQ, BAD_SIZE,
        P(create_cq.log_size, RS_MAX_CQ_LOG + 1)),
    ROW("CREATE_CQ ring 0", CREATE_CQ, BAD_ADDR, P(create_cq.ring_addr, 0)),
    ROW("CREATE_CQ ring +32", CREATE_CQ, BAD_ALIGN,
        P(create_cq.ring_addr, TOK(T_CQ_RING, 32))),
    ROW("CREATE_CQ ring +8", CREATE_CQ, BAD_ALIGN,
        P(create_cq.ring_addr, TOK(T_CQ_RING, 8))),
    ROW("CREATE_CQ ring in BAR0", CREATE_CQ, BAD_ADDR,
        P(create_cq.ring_addr, TOK(T_BAR0, 0))),
    ROW("CREATE_CQ ring straddles end of RAM", CREATE_CQ, BAD_ADDR,
        P(create_cq.ring_addr, TOK(T_RAM_END, -256))),
    ROW("CREATE_CQ ring far", CREATE_CQ, BAD_ADDR,
        P(create_cq.ring_addr, FAR_ADDR)),
    ROW("CREATE_CQ comp_vector 4", CREATE_CQ, BAD_PARAM,
        P(create_cq.comp_vector, DEF_COMP_VECTORS)),
    ROW("CREATE_CQ comp_vector 0xffff", CREATE_CQ, BAD_PARAM,
        P(create_cq.comp_vector, 0xffff)),
    ROW("CREATE_CQ uar 64", CREATE_CQ, BAD_PARAM,
        P(create_cq.uar, DEF_DB_PAGES)),
    ROW("CREATE_CQ uar 0xffffffff", CREATE_CQ, BAD_PARAM,
        P(create_cq.uar, 0xffffffff)),

    /* DESTROY_CQ */
    DESTROY("DESTROY_CQ handle 0", DESTROY_CQ, 0, BAD_HANDLE),
    DESTROY("DESTROY_CQ twice (stale)", DESTROY_CQ, TOK(T_CQ_STALE, 0),
            BAD_HANDLE),
    DESTROY("DESTROY_CQ index out of range", DESTROY_CQ, 0x00fffffe,
            BAD_HANDLE),
    DESTROY("DESTROY_CQ used by QPs", DESTROY_CQ, TOK(T_CQ, 0), BUSY),
    DESTROY("DESTROY_CQ send CQ of a QP", DESTROY_CQ, TOK(T_CQ_SEND, 0),
            BUSY),
    DESTROY("DESTROY_CQ recv CQ of a QP", DESTROY_CQ, TOK(T_CQ_RECV, 0),
            BUSY),

    /* RESIZE_CQ */
    ROW("RESIZE_CQ stale handle", RESIZE_CQ, BAD_HANDLE,
        P(resize_cq.handle, TOK(T_CQ_STALE, 0))),
    ROW("RESIZE_CQ handle 0", RESIZE_CQ, BAD_HANDLE, P(resize_cq.handle, 0)),
    ROW("RESIZE_CQ log_size 0", RESIZE_CQ, BAD_SIZE,
        P(resize_cq.log_size, 0)),
    ROW("RESIZE_CQ log_size 17", RESIZE_CQ, BAD_SIZE,
        P(resize_cq.log_size, RS_MAX_CQ_LOG + 1)),
    ROW("RESIZE_CQ ring 0", RESIZE_CQ, BAD_ADDR, P(resize_cq.ring_addr, 0)),
    ROW("RESIZE_CQ ring +32", RESIZE_CQ, BAD_ALIGN,
        P(resize_cq.ring_addr, TOK(T_CQ_RING2, 32))),
    ROW("RESIZE_CQ ring in BAR0", RESIZE_CQ, BAD_ADDR,
        P(resize_cq.ring_addr, TOK(T_BAR0, 0))),
    ROW("RESIZE_CQ ring at end of RAM", RESIZE_CQ, BAD_ADDR,
        P(resize_cq.ring_addr, TOK(T_RAM_END, 0))),
    ROW("RESIZE_CQ consumer_index beyond producer", RESIZE_CQ, BAD_SIZE,
        P(resize_cq.consumer_index, 1)),
    ROW("RESIZE_CQ consumer_index behind", RESIZE_CQ, BAD_SIZE,
        P(resize_cq.consumer_index, 0xffffffff)),

    /* CREATE_QP */
    ROW("CREATE_QP type DCI", CREATE_QP, NOT_SUPPORTED,
        P(create_qp.qp_type, RS_QPT_DCI)),
    ROW("CREATE_QP type DCT", CREATE_QP, NOT_SUPPORTED,
        P(create_qp.qp_type, RS_QPT_DCT)),
    ROW("CREATE_QP type 6", CREATE_QP, BAD_PARAM, P(create_qp.qp_type, 6)),
    ROW("CREATE_QP type 0xff", CREATE_QP, BAD_PARAM,
        P(create_qp.qp_type, 0xff)),
    ROW("CREATE_QP pd 0", CREATE_QP, BAD_HANDLE, P(create_qp.pd, 0)),
    ROW("CREATE_QP stale pd", CREATE_QP, BAD_HANDLE,
        P(create_qp.pd, TOK(T_PD_STALE, 0))),
    ROW("CREATE_QP stale send_cq", CREATE_QP, BAD_HANDLE,
        P(create_qp.send_cq, TOK(T_CQ_STALE, 0))),
    ROW("CREATE_QP send_cq 0", CREATE_QP, BAD_HANDLE,
        P(create_qp.send_cq, 0)),
    ROW("CREATE_QP stale recv_cq", CREATE_QP, BAD_HANDLE,
        P(create_qp.recv_cq, TOK(T_CQ_STALE, 0))),
    ROW("CREATE_QP srq 1 (no such SRQ)", CREATE_QP, BAD_HANDLE,
        P(create_qp.srq, 1)),
    ROW("CREATE_QP sq_log_size 0", CREATE_QP, BAD_SIZE,
        P(create_qp.sq_log_size, 0)),
    ROW("CREATE_QP sq_log_size 16", CREATE_QP, BAD_SIZE,
        P(create_qp.sq_log_size, RS_MAX_WQ_LOG + 1)),
    ROW("CREATE_QP rq_log_size 0", CREATE_QP, BAD_SIZE,
        P(create_qp.rq_log_size, 0)),
    ROW("CREATE_QP rq_log_size 16", CREATE_QP, BAD_SIZE,
        P(create_qp.rq_log_size, RS_MAX_WQ_LOG + 1)),
    ROW("CREATE_QP max_send_sge 0", CREATE_QP, BAD_PARAM,
        P(create_qp.max_send_sge, 0)),
    ROW("CREATE_QP max_send_sge 17", CREATE_QP, BAD_PARAM,
        P(create_qp.max_send_sge, RS_MAX_SGE + 1)),
    ROW("CREATE_QP max_recv_sge 0", CREATE_QP, BAD_PARAM,
        P(create_qp.max_recv_sge, 0)),
    ROW("CREATE_QP max_recv_sge 17", CREATE_QP, BAD_PARAM,
        P(create_qp.max_recv_sge, RS_MAX_SGE + 1)),
    ROW("CREATE_QP max_inline 257", CREATE_QP, BAD_PARAM,
        P(create_qp.max_inline, RS_MAX_INLINE + 1)),
    ROW("CREATE_QP max_inline 0xffff", CREATE_QP, BAD_PARAM,
        P(create_qp.max_inline, 0xffff)),
    ROW("CREATE_QP uar 64", CREATE_QP, BAD_PARAM,
        P(create_qp.uar, DEF_DB_PAGES)),
    ROW("CREATE_QP flags 0x02", CREATE_QP, BAD_PARAM,
        P(create_qp.flags, 0x02)),
    ROW("CREATE_QP flags 0x80", CREATE_QP, BAD_PARAM,
        P(create_qp.flags, 0x80)),
    ROW("CREATE_QP stale session_group", CREATE_QP, BAD_HANDLE,
        P(create_qp.session_group, TOK(T_GROUP_STALE, 0))),
    ROW("CREATE_QP session_group out of range", CREATE_QP, BAD_HANDLE,
        P(create_qp.session_group, 0x00fffffe)),
    ROW("CREATE_QP sq_addr 0", CREATE_QP, BAD_ADDR, P(create_qp.sq_addr, 0)),
    ROW("CREATE_QP sq_addr +32", CREATE_QP, BAD_ALIGN,
        P(create_qp.sq_addr, TOK(T_SQ, 32))),
    ROW("CREATE_QP sq_addr in BAR0", CREATE_QP, BAD_ADDR,
        P(create_qp.sq_addr, TOK(T_BAR0, 0))),
    ROW("CREATE_QP SQ straddles end of RAM", CREATE_QP, BAD_ADDR,
        P(create_qp.sq_addr, TOK(T_RAM_END, -1024))),
    ROW("CREATE_QP sq_addr far", CREATE_QP, BAD_ADDR,
        P(create_qp.sq_addr, FAR_ADDR)),
    ROW("CREATE_QP rq_addr 0", CREATE_QP, BAD_ADDR, P(create_qp.rq_addr, 0)),
    ROW("CREATE_QP rq_addr +8", CREATE_QP, BAD_ALIGN,
        P(create_qp.rq_addr, TOK(T_RQ, 8))),
    ROW("CREATE_QP rq_addr in BAR2", CREATE_QP, BAD_ADDR,
        P(create_qp.rq_addr, TOK(T_BAR2, 0))),
    ROW("CREATE_QP RQ straddles end of RAM", CREATE_QP, BAD_ADDR,
        P(create_qp.rq_addr, TOK(T_RAM_END, -512))),
    ROW("CREATE_QP second GSI QP", CREATE_QP, EXISTS,
        P(create_qp.qp_type, RS_QPT_GSI)),

    /* MODIFY_QP (command level; the state machine has its own table) */
    ROW("MODIFY_QP stale handle", MODIFY_QP, BAD_HANDLE,
        P(modify_qp.handle, TOK(T_QP_STALE, 0))),
    ROW("MODIFY_QP handle 0", MODIFY_QP, BAD_HANDLE,
        P(modify_qp.handle, 0)),
    ROW("MODIFY_QP attr_addr +4", MODIFY_QP, BAD_ALIGN,
        P(modify_qp.attr_addr, TOK(T_ATTR, 4))),
    ROW("MODIFY_QP attr_addr in BAR0", MODIFY_QP, BAD_ADDR,
        P(modify_qp.attr_addr, TOK(T_BAR0, 0))),
    ROW("MODIFY_QP attr straddles end of RAM", MODIFY_QP, BAD_ADDR,
        P(modify_qp.attr_addr, TOK(T_RAM_END, -32))),
    ROW("MODIFY_QP attr_addr far", MODIFY_QP, BAD_ADDR,
        P(modify_qp.attr_addr, FAR_ADDR)),
    ROW("MODIFY_QP attr_mask bit 21", MODIFY_QP, BAD_ATTR_MASK,
        P(modify_qp.attr_mask, RS_QP_ATTR_STATE | 1u << 21)),
    ROW("MODIFY_QP attr_mask bit 31", MODIFY_QP, BAD_ATTR_MASK,
        P(modify_qp.attr_mask, RS_QP_ATTR_STATE | 1u << 31)),

    /* DESTROY_QP */
    DESTROY("DESTROY_QP twice (stale)", DESTROY_QP, TOK(T_QP_STALE, 0),
            BAD_HANDLE),
    DESTROY("DESTROY_QP handle 0", DESTROY_QP, 0, BAD_HANDLE),
    DESTROY("DESTROY_QP index out of range", DESTROY_QP, 0x00fffffe,
            BAD_HANDLE),

    /* REG_MR */
    ROW("REG_MR stale pd", REG_MR, BAD_HANDLE,
        P(reg_mr.pd, TOK(T_PD_STALE, 0))),
    ROW("REG_MR pd 0", REG_MR, BAD_HANDLE, P(reg_mr.pd, 0)),
    ROW("REG_MR empty gid_index", REG_MR, BAD_NETID,
        P(reg_mr.gid_index, 3)),
    ROW("REG_MR gid_index out of range", REG_MR, BAD_NETID,
        P(reg_mr.gid_index, DEF_MAX_GIDS)),
    ROW("REG_MR access 0x20", REG_MR, BAD_ACCESS, P(reg_mr.access, 0x20)),
    ROW("REG_MR access 0xffff", REG_MR, BAD_ACCESS,
        P(reg_mr.access, 0xffff)),
    ROW("REG_MR REMOTE_WRITE without LOCAL_WRITE", REG_MR, BAD_ACCESS,
        P(reg_mr.access, RS_ACCESS_REMOTE_WRITE)),
    ROW("REG_MR REMOTE_ATOMIC without LOCAL_WRITE", REG_MR, BAD_ACCESS,
        P(reg_mr.access, RS_ACCESS_REMOTE_ATOMIC | RS_ACCESS_REMOTE_READ)),
    ROW("REG_MR flags ODP", REG_MR, NOT_SUPPORTED,
        P(reg_mr.flags, RS_MR_F_ODP)),
    ROW("REG_MR flags 0x08", REG_MR, BAD_PARAM, P(reg_mr.flags, 0x08)),
    ROW("REG_MR flags 0x80", REG_MR, BAD_PARAM, P(reg_mr.flags, 0x80)),
    ROW("REG_MR page_shift 0", REG_MR, BAD_PARAM, P(reg_mr.page_shift, 0)),
    ROW("REG_MR page_shift 11", REG_MR, BAD_PARAM,
        P(reg_mr.page_shift, 11)),
    ROW("REG_MR page_shift 31", REG_MR, BAD_PARAM,
        P(reg_mr.page_shift, 31)),
    ROW("REG_MR length 0", REG_MR, BAD_SIZE, P(reg_mr.length, 0)),
    ROW("REG_MR iova + length overflows", REG_MR, BAD_SIZE,
        P(reg_mr.iova, 0xfffffffffffff000ull)),
    ROW("REG_MR npages too small", REG_MR, BAD_SIZE, P(reg_mr.npages, 2)),
    ROW("REG_MR npages too large", REG_MR, BAD_SIZE, P(reg_mr.npages, 4)),
    ROW("REG_MR npages 0", REG_MR, BAD_SIZE, P(reg_mr.npages, 0)),
    ROW("REG_MR npages 0xffffffff", REG_MR, BAD_SIZE,
        P(reg_mr.npages, 0xffffffff)),
    ROW("REG_MR unaligned iova spans 4 pages", REG_MR, BAD_SIZE,
        P(reg_mr.iova, 0x10800)),
    ROW("REG_MR more pages than max-mr-pages", REG_MR, NO_RESOURCES,
        P(reg_mr.length, MR_PAGES_OVER * PAGE),
        P(reg_mr.npages, MR_PAGES_OVER)),
    ROW("REG_MR npages * 8 overflows 32 bits", REG_MR, NO_RESOURCES,
        P(reg_mr.length, 0x20000001ull * PAGE),
        P(reg_mr.npages, 0x20000001)),
    ROW("REG_MR pbl_addr +4", REG_MR, BAD_ALIGN,
        P(reg_mr.pbl_addr, TOK(T_PBL, 4))),
    ROW("REG_MR pbl_addr in BAR0", REG_MR, BAD_ADDR,
        P(reg_mr.pbl_addr, TOK(T_BAR0, 0))),
    ROW("REG_MR page list straddles end of RAM", REG_MR, BAD_ADDR,
        P(reg_mr.pbl_addr, TOK(T_RAM_END, -8))),
    ROW("REG_MR pbl_addr far", REG_MR, BAD_ADDR,
        P(reg_mr.pbl_addr, FAR_ADDR)),
    ROW("REG_MR page misaligned", REG_MR, BAD_ALIGN,
        P(reg_mr.pbl_addr, TOK(T_PBL_MISALIGNED, 0))),
    ROW("REG_MR page far", REG_MR, BAD_ADDR,
        P(reg_mr.pbl_addr, TOK(T_PBL_FAR, 0))),
    ROW("REG_MR page in BAR0", REG_MR, BAD_ADDR,
        P(reg_mr.pbl_addr, TOK(T_PBL_BAR0, 0))),
    ROW("REG_MR page at end of RAM", REG_MR, BAD_ADDR,
        P(reg_mr.pbl_addr, TOK(T_PBL_RAM_END, 0))),
    ROW("REG_MR 4 KiB pages for page_shift 21", REG_MR, BAD_ALIGN,
        P(reg_mr.page_shift, 21), P(reg_mr.iova, 0),
        P(reg_mr.length, 3 * 2 * MiB)),
    ROWV("REG_MR indirect: list in BAR0", REG_MR, 1, BAD_ADDR,
         P(reg_mr.pbl_addr, TOK(T_BAR0, 0))),
    ROWV("REG_MR indirect: list +4", REG_MR, 1, BAD_ALIGN,
         P(reg_mr.pbl_addr, TOK(T_IPBL, 4))),
    ROWV("REG_MR indirect: chunk misaligned", REG_MR, 1, BAD_ALIGN,
         P(reg_mr.pbl_addr, TOK(T_IPBL_MISALIGNED, 0))),
    ROWV("REG_MR indirect: chunk far", REG_MR, 1, BAD_ADDR,
         P(reg_mr.pbl_addr, TOK(T_IPBL_FAR, 0))),
    ROWV("REG_MR indirect: chunk in BAR0", REG_MR, 1, BAD_ADDR,
         P(reg_mr.pbl_addr, TOK(T_IPBL_BAR0, 0))),
    ROWV("REG_MR indirect: npages mismatch", REG_MR, 1, BAD_SIZE,
         P(reg_mr.npages, 599)),

    /* DEREG_MR */
    DESTROY("DEREG_MR lkey 0", DEREG_MR, 0, BAD_HANDLE),
    DESTROY("DEREG_MR twice (stale)", DEREG_MR, TOK(T_MR_STALE, 0),
            BAD_HANDLE),
    DESTROY("DEREG_MR wrong tag", DEREG_MR, TOK(T_MR, 1), BAD_HANDLE),
    DESTROY("DEREG_MR index max-mrs", DEREG_MR,
            DEF_MAX_MRS << RS_MKEY_INDEX_SHIFT, BAD_HANDLE),
    DESTROY("DEREG_MR index out of range", DEREG_MR, 0xffffff00,
            BAD_HANDLE),

    /* CREATE_AH / DESTROY_AH */
    ROW("CREATE_AH stale pd", CREATE_AH, BAD_HANDLE,
        P(create_ah.pd, TOK(T_PD_STALE, 0))),
    ROW("CREATE_AH empty gid_index", CREATE_AH, BAD_NETID,
        P(create_ah.gid_index, 3)),
    ROW("CREATE_AH gid_index out of range", CREATE_AH, BAD_NETID,
        P(create_ah.gid_index, 0xffffffff)),
    ROW("CREATE_AH flow_label 1 << 20", CREATE_AH, BAD_PARAM,
        P(create_ah.flow_label, 1 << 20)),
    ROW("CREATE_AH flow_label 0xffffffff", CREATE_AH, BAD_PARAM,
        P(create_ah.flow_label, 0xffffffff)),
    DESTROY("DESTROY_AH twice (stale)", DESTROY_AH, TOK(T_AH_STALE, 0),
            BAD_HANDLE),
    DESTROY("DESTROY_AH handle 0", DESTROY_AH, 0, BAD_HANDLE),

    /* CREATE_SESSION / DESTROY_SESSION */
    ROW("CREATE_SESSION empty gid_index", CREATE_SESSION, BAD_NETID,
        P(create_session.gid_index, 3)),
    ROW("CREATE_SESSION src_port 1023", CREATE_SESSION, BAD_PARAM,
        P(create_session.src_port, 1023)),
    ROW("CREATE_SESSION src_port 0", CREATE_SESSION, BAD_PARAM,
        P(create_session.src_port, 0)),
    ROW("CREATE_SESSION dst_port 0", CREATE_SESSION, BAD_PARAM,
        P(create_session.dst_port, 0)),
    ROW("CREATE_SESSION multicast dmac", CREATE_SESSION, BAD_PARAM,
        P(create_session.dmac[0], 0x01)),
    ROW("CREATE_SESSION broadcast dmac", CREATE_SESSION, BAD_PARAM,
        P(create_session.dmac[0], 0xff)),
    ROW("CREATE_SESSION duplicate tuple", CREATE_SESSION, EXISTS,
        P(create_session.src_port, 49152)),
    ROW("CREATE_SESSION duplicate tuple, other dmac", CREATE_SESSION,
        EXISTS, P(create_session.src_port, 49152),
        P(create_session.dmac[5], 0x77)),
    DESTROY("DESTROY_SESSION twice (stale)", DESTROY_SESSION,
            TOK(T_SESS_STALE, 0), BAD_HANDLE),
    DESTROY("DESTROY_SESSION in a group", DESTROY_SESSION, TOK(T_SESS, 0),
            BUSY),

    /* CREATE_SESSION_GROUP / DESTROY_SESSION_GROUP */
    ROW("CREATE_SESSION_GROUP nsessions 0", CREATE_SESSION_GROUP, BAD_PARAM,
        P(create_group.nsessions, 0)),
    ROW("CREATE_SESSION_GROUP nsessions 9", CREATE_SESSION_GROUP, BAD_PARAM,
        P(create_group.nsessions, RS_MAX_GROUP_SESSIONS + 1)),
    ROW("CREATE_SESSION_GROUP policy 2", CREATE_SESSION_GROUP, BAD_PARAM,
        P(create_group.policy, 2)),
    ROW("CREATE_SESSION_GROUP stale session", CREATE_SESSION_GROUP,
        BAD_HANDLE, P(create_group.session[1], TOK(T_SESS_STALE, 0))),
    ROW("CREATE_SESSION_GROUP session 0", CREATE_SESSION_GROUP, BAD_HANDLE,
        P(create_group.session[0], 0)),
    ROW("CREATE_SESSION_GROUP sessions of two GIDs", CREATE_SESSION_GROUP,
        BAD_PARAM, P(create_group.session[1], TOK(T_SESS_GID1, 0))),
    DESTROY("DESTROY_SESSION_GROUP twice (stale)", DESTROY_SESSION_GROUP,
            TOK(T_GROUP_STALE, 0), BAD_HANDLE),
    DESTROY("DESTROY_SESSION_GROUP bound to a QP", DESTROY_SESSION_GROUP,
            TOK(T_GROUP, 0), BUSY),

    /* ADD_GID / DEL_GID */
    ROW("ADD_GID index 16", ADD_GID, BAD_PARAM,
        P(add_gid.index, DEF_MAX_GIDS)),
    ROW("ADD_GID index 0xffffffff", ADD_GID, BAD_PARAM,
        P(add_gid.index, 0xffffffff)),
    ROW("ADD_GID type 2", ADD_GID, BAD_PARAM, P(add_gid.type, 2)),
    ROW("ADD_GID vni 1 << 24", ADD_GID, BAD_PARAM,
        P(add_gid.vni, 1 << 24)),
    ROW("ADD_GID IPv4 type, not v4-mapped", ADD_GID, BAD_PARAM,
        P(add_gid.gid[0], 0xfe)),
    ROW("ADD_GID IPv4 type, ::0:a.b.c.d", ADD_GID, BAD_PARAM,
        P(add_gid.gid[10], 0)),
    ROW("ADD_GID populated slot", ADD_GID, EXISTS, P(add_gid.index, 0)),
    DESTROY("DEL_GID index 16", DEL_GID, DEF_MAX_GIDS, BAD_HANDLE),
    DESTROY("DEL_GID empty slot", DEL_GID, 3, BAD_HANDLE),
    DESTROY("DEL_GID used by sessions", DEL_GID, 0, BUSY),
    DESTROY("DEL_GID used by one session", DEL_GID, 1, BUSY),
    DESTROY("DEL_GID used by an MR", DEL_GID, 2, BUSY),
    DESTROY("DEL_GID used by an AH", DEL_GID, 4, BUSY),
    DESTROY("DEL_GID used by a QP address vector", DEL_GID, 5, BUSY),

    /* Two faults: the check listed first wins. */
    ROW("order: QUERY_DEVICE short resp_len before BAR0 address",
        QUERY_DEVICE, BAD_SIZE, P(query.resp_len, 64),
        P(query.resp_addr, TOK(T_BAR0, 0))),
    ROW("order: QUERY_DEVICE short resp_len before alignment",
        QUERY_DEVICE, BAD_SIZE, P(query.resp_len, 8),
        P(query.resp_addr, TOK(T_SCRATCH, 4))),
    ROW("order: QUERY_DEVICE alignment before RAM", QUERY_DEVICE, BAD_ALIGN,
        P(query.resp_addr, TOK(T_BAR0, 4))),
    ROW("order: CREATE_CQ log_size before ring 0", CREATE_CQ, BAD_SIZE,
        P(create_cq.log_size, 0), P(create_cq.ring_addr, 0)),
    ROW("order: CREATE_CQ alignment before RAM", CREATE_CQ, BAD_ALIGN,
        P(create_cq.ring_addr, TOK(T_BAR0, 32))),
    ROW("order: CREATE_CQ ring before comp_vector", CREATE_CQ, BAD_ADDR,
        P(create_cq.ring_addr, TOK(T_BAR0, 0)),
        P(create_cq.comp_vector, 0xffff)),
    ROW("order: CREATE_CQ comp_vector before uar", CREATE_CQ, BAD_PARAM,
        P(create_cq.comp_vector, 0xffff), P(create_cq.uar, 0xffff)),
    ROW("order: RESIZE_CQ handle before log_size", RESIZE_CQ, BAD_HANDLE,
        P(resize_cq.handle, TOK(T_CQ_STALE, 0)), P(resize_cq.log_size, 0)),
    ROW("order: RESIZE_CQ ring before consumer_index", RESIZE_CQ, BAD_ADDR,
        P(resize_cq.ring_addr, TOK(T_BAR0, 0)),
        P(resize_cq.consumer_index, 1)),
    ROW("order: CREATE_QP type DCI before pd", CREATE_QP, NOT_SUPPORTED,
        P(create_qp.qp_type, RS_QPT_DCI), P(create_qp.pd, 0)),
    ROW("order: CREATE_QP pd before srq", CREATE_QP, BAD_HANDLE,
        P(create_qp.pd, TOK(T_PD_STALE, 0)), P(create_qp.srq, 1)),
    ROW("order: CREATE_QP srq before sq_log_size", CREATE_QP, BAD_HANDLE,
        P(create_qp.srq, 1), P(create_qp.sq_log_size, 0)),
    ROW("order: CREATE_QP sq_log_size before max_send_sge", CREATE_QP,
        BAD_SIZE, P(create_qp.sq_log_size, 0), P(create_qp.max_send_sge, 0)),
    ROW("order: CREATE_QP flags before session_group", CREATE_QP, BAD_PARAM,
        P(create_qp.flags, 0x80),
        P(create_qp.session_group, TOK(T_GROUP_STALE, 0))),
    ROW("order: CREATE_QP session_group before sq_addr", CREATE_QP,
        BAD_HANDLE, P(create_qp.session_group, TOK(T_GROUP_STALE, 0)),
        P(create_qp.sq_addr, 0)),
    ROW("order: CREATE_QP sq_addr before GSI exists", CREATE_QP, BAD_ADDR,
        P(create_qp.sq_addr, TOK(T_BAR0, 0)),
        P(create_qp.qp_type, RS_QPT_GSI)),
    ROW("order: REG_MR pd before gid_index", REG_MR, BAD_HANDLE,
        P(reg_mr.pd, TOK(T_PD_STALE, 0)), P(reg_mr.gid_index, 3)),
    ROW("order: REG_MR gid_index before access", REG_MR, BAD_NETID,
        P(reg_mr.gid_index, 3), P(reg_mr.access, 0x20)),
    ROW("order: REG_MR access before ODP", REG_MR, BAD_ACCESS,
        P(reg_mr.access, 0x20), P(reg_mr.flags, RS_MR_F_ODP)),
    ROW("order: REG_MR ODP before page_shift", REG_MR, NOT_SUPPORTED,
        P(reg_mr.flags, RS_MR_F_ODP), P(reg_mr.page_shift, 11)),
    ROW("order: REG_MR page_shift before length", REG_MR, BAD_PARAM,
        P(reg_mr.page_shift, 11), P(reg_mr.length, 0)),
    ROW("order: REG_MR npages before the page list", REG_MR, BAD_SIZE,
        P(reg_mr.npages, 2), P(reg_mr.pbl_addr, TOK(T_BAR0, 0))),
    ROW("order: REG_MR translation entries before pbl_addr", REG_MR,
        NO_RESOURCES, P(reg_mr.length, MR_PAGES_OVER * PAGE),
        P(reg_mr.npages, MR_PAGES_OVER), P(reg_mr.pbl_addr, TOK(T_PBL, 4))),
    ROW("order: REG_MR pbl alignment before RAM", REG_MR, BAD_ALIGN,
        P(reg_mr.pbl_addr, TOK(T_BAR0, 4))),
    ROW("order: CREATE_AH pd before gid_index", CREATE_AH, BAD_HANDLE,
        P(create_ah.pd, TOK(T_PD_STALE, 0)), P(create_ah.gid_index, 3)),
    ROW("order: CREATE_AH gid_index before flow_label", CREATE_AH, BAD_NETID,
        P(create_ah.gid_index, 3), P(create_ah.flow_label, 1 << 20)),
    ROW("order: CREATE_SESSION gid_index before src_port", CREATE_SESSION,
        BAD_NETID, P(create_session.gid_index, 3),
        P(create_session.src_port, 0)),
    ROW("order: CREATE_SESSION dmac before duplicate", CREATE_SESSION,
        BAD_PARAM, P(create_session.dmac[0], 0x01),
        P(create_session.src_port, 49152)),
    ROW("order: CREATE_SESSION_GROUP nsessions before sessions",
        CREATE_SESSION_GROUP, BAD_PARAM, P(create_group.nsessions, 0),
        P(create_group.session[0], 0)),
    ROW("order: CREATE_SESSION_GROUP session before GID mix",
        CREATE_SESSION_GROUP, BAD_HANDLE,
        P(create_group.session[0], TOK(T_SESS_STALE, 0)),
        P(create_group.session[1], TOK(T_SESS_GID1, 0))),
    ROW("order: ADD_GID type before populated slot", ADD_GID, BAD_PARAM,
        P(add_gid.type, 2), P(add_gid.index, 0)),
};

/* Run one command, compare the status; false with a reason if wrong. */
static bool bad_cmd_run(BadFixture *f, const BadCmdRow *row, GString *why)
{
    QRdmaSession *d = f->d;
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    uint32_t index;

    bad_template(f, row->opcode, row->variant, &cmd);
    apply_patches(f, &cmd, sizeof(cmd), row->patch, ARRAY_SIZE(row->patch));
    index = qrs_admin_submit(d, &cmd);
    if (!qrs_admin_poll(d, index, &cqe, RS_QOS_TIMEOUT_US)) {
        g_string_append(why, "no completion");
        return false;
    }
    if (cqe.status != row->status) {
        g_string_append_printf(why, "expected %s, got %s",
                               qrs_status_name(row->status),
                               qrs_status_name(cqe.status));
        return false;
    }
    return true;
}

/* After a failed row: start over from a clean device. */
static void bad_fixture_rebuild(BadFixture *f)
{
    qrs_reset(f->d);
    rs_setup(f->d);
    bad_fixture_objects(f);
}

static void test_bad_input(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    g_autoptr(GString) failures = g_string_new("");
    BadFixture f;
    int i, nfail = 0;

    bad_fixture_memory(d, &f);
    bad_fixture_objects(&f);
    for (i = 0; i < ARRAY_SIZE(bad_cmd_rows); i++) {
        const BadCmdRow *row = &bad_cmd_rows[i];
        g_autoptr(GString) why = g_string_new("");
        bool ok = bad_cmd_run(&f, row, why);

        if (ok && !device_alive(d, why)) {
            g_string_prepend(why, "device broken afterwards: ");
            ok = false;
        }
        if (!ok) {
            nfail++;
            g_string_append_printf(failures, "  %s: %s\n", row->name,
                                   why->str);
            bad_fixture_rebuild(&f);
        }
    }
    g_test_message("bad-input: %d rows, %d failed", i, nfail);
    g_assert_cmpstr(failures->str, ==, "");
}

/* ------------------------------------------------------------------ */
/* Bad input: the QP state machine                                     */
/* ------------------------------------------------------------------ */

typedef struct BadModifyRow {
    const char *name;
    uint8_t qp_type;
    uint8_t from;               /* a fresh QP is walked there first */
    uint8_t to;                 /* attr.qp_state */
    uint32_t mask;
    uint8_t status;
    BadPatch patch[2];          /* on struct rs_qp_attr */
} BadModifyRow;

#define A(f, v) { offsetof(struct rs_qp_attr, f),                         \
                  sizeof(((struct rs_qp_attr *)NULL)->f), (v) }
#define MROW(name, type, from, to, mask, st, ...)                          \
    { name, RS_QPT_##type, RS_QPS_##from, RS_QPS_##to, mask,              \
      RS_STATUS_##st, { __VA_ARGS__ } }

#define ST      RS_QP_ATTR_STATE
#define SG      RS_QP_ATTR_SESSION_GROUP

static const BadModifyRow bad_modify_rows[] = {
    /* Transitions the IBTA table does not allow */
    MROW("RC RESET->RTR", RC, RESET, RTR, RC_RTR_MASK, BAD_STATE),
    MROW("RC RESET->RTS", RC, RESET, RTS, RC_RTS_MASK, BAD_STATE),
    MROW("RC RESET->SQD", RC, RESET, SQD, ST, BAD_STATE),
    MROW("RC RESET->SQE", RC, RESET, SQE, ST, BAD_STATE),
    MROW("RC RESET->ERR", RC, RESET, ERR, ST, BAD_STATE),
    MROW("UC RESET->ERR", UC, RESET, ERR, ST, BAD_STATE),
    MROW("UD RESET->ERR", UD, RESET, ERR, ST, BAD_STATE),
    MROW("GSI RESET->ERR", GSI, RESET, ERR, ST, BAD_STATE),
    MROW("RC INIT->RTS", RC, INIT, RTS, RC_RTS_MASK, BAD_STATE),
    MROW("RC INIT->SQD", RC, INIT, SQD, ST, BAD_STATE),
    MROW("RC RTR->INIT", RC, RTR, INIT, ST, BAD_STATE),
    MROW("RC RTR->RTR", RC, RTR, RTR, ST, BAD_STATE),
    MROW("RC RTR->RTR (no STATE in mask)", RC, RTR, RTR, 0, BAD_STATE),
    MROW("RC RTR->SQD", RC, RTR, SQD, ST, BAD_STATE),
    MROW("RC RTS->INIT", RC, RTS, INIT, ST, BAD_STATE),
    MROW("RC RTS->RTR", RC, RTS, RTR, RC_RTR_MASK, BAD_STATE),
    MROW("RC RTS->SQE", RC, RTS, SQE, ST, BAD_STATE),
    MROW("RC SQD->INIT", RC, SQD, INIT, ST, BAD_STATE),
    MROW("RC SQD->RTR", RC, SQD, RTR, ST, BAD_STATE),
    MROW("RC ERR->INIT", RC, ERR, INIT, RC_INIT_MASK, BAD_STATE),
    MROW("RC ERR->RTS", RC, ERR, RTS, RC_RTS_MASK, BAD_STATE),
    MROW("RC ERR->SQD", RC, ERR, SQD, ST, BAD_STATE),
    MROW("UC RTR->INIT", UC, RTR, INIT, ST, BAD_STATE),
    MROW("UD RESET->RTS", UD, RESET, RTS, UD_RTS_MASK, BAD_STATE),
    MROW("UD ERR->RTS", UD, ERR, RTS, UD_RTS_MASK, BAD_STATE),
    MROW("GSI INIT->RTS", GSI, INIT, RTS, UD_RTS_MASK, BAD_STATE),
    MROW("RC CUR_STATE mismatch (RESET->INIT)", RC, RESET, INIT,
         RC_INIT_MASK | RS_QP_ATTR_CUR_STATE, BAD_STATE,
         A(cur_qp_state, RS_QPS_INIT)),
    MROW("RC CUR_STATE mismatch (RTR->RTS)", RC, RTR, RTS,
         RC_RTS_MASK | RS_QP_ATTR_CUR_STATE, BAD_STATE,
         A(cur_qp_state, RS_QPS_RTS)),
    MROW("UD CUR_STATE mismatch (RTS->RTS)", UD, RTS, RTS,
         ST | RS_QP_ATTR_CUR_STATE, BAD_STATE, A(cur_qp_state, RS_QPS_SQD)),

    /* Target state out of range */
    MROW("RC qp_state 7", RC, RESET, RESET, ST, BAD_PARAM,
         A(qp_state, 7)),
    MROW("RC qp_state 0xff", RC, INIT, INIT, ST, BAD_PARAM,
         A(qp_state, 0xff)),

    /* Attribute masks */
    MROW("RC unknown mask bit 21", RC, RESET, INIT,
         RC_INIT_MASK | 1u << 21, BAD_ATTR_MASK),
    MROW("RC unknown mask bit 31", RC, RESET, INIT,
         RC_INIT_MASK | 1u << 31, BAD_ATTR_MASK),
    MROW("RC RESET->INIT without ACCESS_FLAGS", RC, RESET, INIT,
         RC_INIT_MASK & ~RS_QP_ATTR_ACCESS_FLAGS, BAD_ATTR_MASK),
    MROW("RC RESET->INIT without PORT", RC, RESET, INIT,
         RC_INIT_MASK & ~RS_QP_ATTR_PORT, BAD_ATTR_MASK),
    MROW("RC RESET->INIT without PKEY_INDEX", RC, RESET, INIT,
         RC_INIT_MASK & ~RS_QP_ATTR_PKEY_INDEX, BAD_ATTR_MASK),
    MROW("RC RESET->INIT with QKEY", RC, RESET, INIT,
         RC_INIT_MASK | RS_QP_ATTR_QKEY, BAD_ATTR_MASK),
    MROW("RC RESET->INIT with AV", RC, RESET, INIT,
         RC_INIT_MASK | RS_QP_ATTR_AV, BAD_ATTR_MASK),
    MROW("RC RESET->INIT with SQ_PSN", RC, RESET, INIT,
         RC_INIT_MASK | RS_QP_ATTR_SQ_PSN, BAD_ATTR_MASK),
    MROW("UC RESET->INIT with QKEY", UC, RESET, INIT,
         RC_INIT_MASK | RS_QP_ATTR_QKEY, BAD_ATTR_MASK),
    MROW("UD RESET->INIT without QKEY", UD, RESET, INIT,
         UD_INIT_MASK & ~RS_QP_ATTR_QKEY, BAD_ATTR_MASK),
    MROW("UD RESET->INIT with ACCESS_FLAGS", UD, RESET, INIT,
         UD_INIT_MASK | RS_QP_ATTR_ACCESS_FLAGS, BAD_ATTR_MASK),
    MROW("GSI RESET->INIT without QKEY", GSI, RESET, INIT,
         GSI_INIT_MASK & ~RS_QP_ATTR_QKEY, BAD_ATTR_MASK),
    MROW("GSI RESET->INIT without PKEY_INDEX", GSI, RESET, INIT,
         GSI_INIT_MASK & ~RS_QP_ATTR_PKEY_INDEX, BAD_ATTR_MASK),
    MROW("GSI RESET->INIT with PORT", GSI, RESET, INIT,
         GSI_INIT_MASK | RS_QP_ATTR_PORT, BAD_ATTR_MASK),
    MROW("GSI RESET->INIT with ACCESS_FLAGS", GSI, RESET, INIT,
         GSI_INIT_MASK | RS_QP_ATTR_ACCESS_FLAGS, BAD_ATTR_MASK),
    MROW("GSI RESET->INIT with SESSION_GROUP", GSI, RESET, INIT,
         GSI_INIT_MASK | SG, BAD_ATTR_MASK),
    MROW("RC INIT->RTR without AV", RC, INIT, RTR,
         RC_RTR_MASK & ~RS_QP_ATTR_AV, BAD_ATTR_MASK),
    MROW("RC INIT->RTR without MAX_DEST_RD_ATOMIC", RC, INIT, RTR,
         RC_RTR_MASK & ~RS_QP_ATTR_MAX_DEST_RD_ATOMIC, BAD_ATTR_MASK),
    MROW("RC INIT->RTR without MIN_RNR_TIMER", RC, INIT, RTR,
         RC_RTR_MASK & ~RS_QP_ATTR_MIN_RNR_TIMER, BAD_ATTR_MASK),
    MROW("UC INIT->RTR without DEST_QPN", UC, INIT, RTR,
         UC_RTR_MASK & ~RS_QP_ATTR_DEST_QPN, BAD_ATTR_MASK),
    MROW("UC INIT->RTR with MAX_DEST_RD_ATOMIC", UC, INIT, RTR,
         UC_RTR_MASK | RS_QP_ATTR_MAX_DEST_RD_ATOMIC, BAD_ATTR_MASK),
    MROW("UD INIT->RTR with AV", UD, INIT, RTR, ST | RS_QP_ATTR_AV,
         BAD_ATTR_MASK),
    MROW("RC RTR->RTS without SQ_PSN", RC, RTR, RTS,
         RC_RTS_MASK & ~RS_QP_ATTR_SQ_PSN, BAD_ATTR_MASK),
    MROW("RC RTR->RTS without TIMEOUT", RC, RTR, RTS,
         RC_RTS_MASK & ~RS_QP_ATTR_TIMEOUT, BAD_ATTR_MASK),
    MROW("RC RTR->RTS without RETRY_CNT", RC, RTR, RTS,
         RC_RTS_MASK & ~RS_QP_ATTR_RETRY_CNT, BAD_ATTR_MASK),
    MROW("RC RTR->RTS without RNR_RETRY", RC, RTR, RTS,
         RC_RTS_MASK & ~RS_QP_ATTR_RNR_RETRY, BAD_ATTR_MASK),
    MROW("RC RTR->RTS without MAX_QP_RD_ATOMIC", RC, RTR, RTS,
         RC_RTS_MASK & ~RS_QP_ATTR_MAX_QP_RD_ATOMIC, BAD_ATTR_MASK),
    MROW("UC RTR->RTS with TIMEOUT", UC, RTR, RTS,
         UD_RTS_MASK | RS_QP_ATTR_TIMEOUT, BAD_ATTR_MASK),
    MROW("UD RTR->RTS without SQ_PSN", UD, RTR, RTS, ST, BAD_ATTR_MASK),
    MROW("RC RTS->RTS with AV", RC, RTS, RTS, ST | RS_QP_ATTR_AV,
         BAD_ATTR_MASK),
    MROW("RC RTS->SQD with SESSION_GROUP", RC, RTS, SQD, ST | SG,
         BAD_ATTR_MASK),
    MROW("RC RTS->ERR with ACCESS_FLAGS", RC, RTS, ERR,
         ST | RS_QP_ATTR_ACCESS_FLAGS, BAD_ATTR_MASK),
    MROW("RC INIT->RESET with QKEY", RC, INIT, RESET,
         ST | RS_QP_ATTR_QKEY, BAD_ATTR_MASK),

    /* Attribute values */
    MROW("RC port_num 0", RC, RESET, INIT, RC_INIT_MASK, BAD_PARAM,
         A(port_num, 0)),
    MROW("RC port_num 2", RC, RESET, INIT, RC_INIT_MASK, BAD_PARAM,
         A(port_num, 2)),
    MROW("RC pkey_index 1", RC, RESET, INIT, RC_INIT_MASK, BAD_PARAM,
         A(pkey_index, 1)),
    MROW("UD port_num 2", UD, RESET, INIT, UD_INIT_MASK, BAD_PARAM,
         A(port_num, 2)),
    MROW("RC path_mtu 0", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(path_mtu, 0)),
    MROW("RC path_mtu 6", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(path_mtu, 6)),
    MROW("RC rq_psn 1 << 24", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(rq_psn, 1 << 24)),
    MROW("RC dest_qp_num 1 << 24", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(dest_qp_num, 1 << 24)),
    MROW("RC max_dest_rd_atomic 17", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(max_dest_rd_atomic, RS_MAX_RD_ATOMIC + 1)),
    MROW("RC min_rnr_timer 32", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(min_rnr_timer, 32)),
    MROW("RC ah.flow_label 1 << 20", RC, INIT, RTR, RC_RTR_MASK, BAD_PARAM,
         A(ah.flow_label, 1 << 20)),
    MROW("UC path_mtu 0xff", UC, INIT, RTR, UC_RTR_MASK, BAD_PARAM,
         A(path_mtu, 0xff)),
    MROW("RC sq_psn 1 << 24", RC, RTR, RTS, RC_RTS_MASK, BAD_PARAM,
         A(sq_psn, 1 << 24)),
    MROW("RC timeout 32", RC, RTR, RTS, RC_RTS_MASK, BAD_PARAM,
         A(timeout, 32)),
    MROW("RC retry_cnt 8", RC, RTR, RTS, RC_RTS_MASK, BAD_PARAM,
         A(retry_cnt, 8)),
    MROW("RC rnr_retry 8", RC, RTR, RTS, RC_RTS_MASK, BAD_PARAM,
         A(rnr_retry, 8)),
    MROW("RC max_rd_atomic 17", RC, RTR, RTS, RC_RTS_MASK, BAD_PARAM,
         A(max_rd_atomic, RS_MAX_RD_ATOMIC + 1)),
    MROW("UD sq_psn 0xffffffff", UD, RTR, RTS, UD_RTS_MASK, BAD_PARAM,
         A(sq_psn, 0xffffffff)),
    MROW("RC access_flags 0x20", RC, RESET, INIT, RC_INIT_MASK, BAD_ACCESS,
         A(access_flags, 0x20)),
    MROW("RC access_flags 0xffff", RC, RESET, INIT, RC_INIT_MASK,
         BAD_ACCESS, A(access_flags, 0xffff)),
    MROW("RC INIT->INIT access_flags 0x40", RC, INIT, INIT,
         RS_QP_ATTR_ACCESS_FLAGS, BAD_ACCESS, A(access_flags, 0x40)),
    MROW("RC ah.gid_index empty", RC, INIT, RTR, RC_RTR_MASK, BAD_NETID,
         A(ah.gid_index, 3)),
    MROW("UC ah.gid_index out of range", UC, INIT, RTR, UC_RTR_MASK,
         BAD_NETID, A(ah.gid_index, DEF_MAX_GIDS)),
    MROW("RC stale session_group", RC, RESET, INIT, RC_INIT_MASK | SG,
         BAD_HANDLE, A(session_group, TOK(T_GROUP_STALE, 0))),
    MROW("UD session_group out of range", UD, RTS, RTS, ST | SG,
         BAD_HANDLE, A(session_group, 0x00fffffe)),

    /* Two faults: the check listed first wins. */
    MROW("order: unknown mask bit before CUR_STATE", RC, RESET, INIT,
         RC_INIT_MASK | RS_QP_ATTR_CUR_STATE | 1u << 22, BAD_ATTR_MASK,
         A(cur_qp_state, RS_QPS_RTS)),
    MROW("order: CUR_STATE before target state", RC, RESET, INIT,
         ST | RS_QP_ATTR_CUR_STATE, BAD_STATE,
         A(cur_qp_state, RS_QPS_RTS), A(qp_state, 9)),
    MROW("order: target state before transition", RC, RTS, RTS, ST,
         BAD_PARAM, A(qp_state, 7)),
    MROW("order: transition before attribute mask", RC, RESET, RTS, ST,
         BAD_STATE),
    MROW("order: attribute mask before values", RC, RESET, INIT,
         RC_INIT_MASK & ~RS_QP_ATTR_PORT, BAD_ATTR_MASK,
         A(pkey_index, 5)),
    MROW("order: BAD_PARAM values before access flags", RC, RESET, INIT,
         RC_INIT_MASK, BAD_PARAM, A(port_num, 2), A(access_flags, 0x20)),
    MROW("order: access flags before session group", RC, RESET, INIT,
         RC_INIT_MASK | SG, BAD_ACCESS, A(access_flags, 0x20),
         A(session_group, TOK(T_GROUP_STALE, 0))),
    MROW("order: GID before session group", RC, INIT, RTR,
         RC_RTR_MASK | SG, BAD_NETID, A(ah.gid_index, 3),
         A(session_group, TOK(T_GROUP_STALE, 0))),
};

static bool bad_modify_run(BadFixture *f, const BadModifyRow *row,
                           GString *why)
{
    QRdmaSession *d = f->d;
    struct rs_cmd_create_qp c = f->qp_tmpl;
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    struct rs_qp_attr a;
    uint32_t qp, index;
    uint8_t expect = row->from;
    bool ok = true;

    c.qp_type = row->qp_type;
    qp = new_qp(d, &c);
    qp_walk(d, qp, row->qp_type, row->from);

    std_attr(&a, row->from, row->to);
    apply_patches(f, &a, sizeof(a), row->patch, ARRAY_SIZE(row->patch));
    qrs_qp_attr_to_le(&a);
    qtest_memwrite(qrs_qts(d), f->tok[T_ATTR], &a, sizeof(a));
    cmd_init(&cmd, RS_CMD_MODIFY_QP);
    cmd.modify_qp.attr_addr = f->tok[T_ATTR];
    cmd.modify_qp.handle = qp;
    cmd.modify_qp.attr_mask = row->mask;
    index = qrs_admin_submit(d, &cmd);
    if (!qrs_admin_poll(d, index, &cqe, RS_QOS_TIMEOUT_US)) {
        g_string_append(why, "no completion");
        return false;
    }
    if (cqe.status != row->status) {
        g_string_append_printf(why, "expected %s, got %s",
                               qrs_status_name(row->status),
                               qrs_status_name(cqe.status));
        ok = false;
    }
    /* A refused MODIFY_QP leaves the QP where it was. */
    if (row->status == RS_STATUS_OK && (row->mask & RS_QP_ATTR_STATE)) {
        expect = row->to;
    }
    if (qrs_query_qp(d, qp, &a) != RS_STATUS_OK || a.qp_state != expect) {
        g_string_append_printf(why, "%sQP state %u afterwards, not %u",
                               ok ? "" : "; ", a.qp_state, expect);
        ok = false;
    }
    if (qrs_destroy(d, RS_CMD_DESTROY_QP, qp) != RS_STATUS_OK) {
        g_string_append(why, "; DESTROY_QP failed");
        ok = false;
    }
    return ok;
}

/* PD, CQ, GID 0 and a session group; no GSI QP so rows may create one. */
static void bad_modify_fixture(QRdmaSession *d, BadFixture *f)
{
    uint64_t *t = f->tok;
    uint32_t s;

    add_gid_v4(d, 0, 1);
    t[T_PD] = new_pd(d);
    t[T_CQ] = new_cq(d, 4);
    s = new_session(d, 0, 49152);
    t[T_GROUP] = new_group(d, RS_GROUP_ROUND_ROBIN, s, 0);
    t[T_GROUP_STALE] = new_group(d, RS_GROUP_ROUND_ROBIN, s, 0);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP,
                             t[T_GROUP_STALE]));
    qp_template(d, &f->qp_tmpl, RS_QPT_RC, t[T_PD], t[T_CQ], t[T_CQ]);
}

/* Run @rows on fresh QPs; returns the failures, one line each. */
static int run_modify_rows(QRdmaSession *d, BadFixture *f,
                           const BadModifyRow *rows, int n,
                           GString *failures)
{
    int i, nfail = 0;

    for (i = 0; i < n; i++) {
        g_autoptr(GString) why = g_string_new("");
        bool ok = bad_modify_run(f, &rows[i], why);

        if (ok && !device_alive(d, why)) {
            g_string_prepend(why, "device broken afterwards: ");
            ok = false;
        }
        if (!ok) {
            nfail++;
            g_string_append_printf(failures, "  %s: %s\n", rows[i].name,
                                   why->str);
            qrs_reset(d);
            rs_setup(d);
            bad_modify_fixture(d, f);
        }
    }
    return nfail;
}

static void modify_fixture_init(QRdmaSession *d, BadFixture *f)
{
    memset(f, 0, sizeof(*f));
    f->d = d;
    f->tok[T_ATTR] = qrs_alloc_zeroed(d, PAGE);
    bad_modify_fixture(d, f);
}

static void test_bad_qp_modify(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    g_autoptr(GString) failures = g_string_new("");
    BadFixture f;
    int nfail;

    modify_fixture_init(d, &f);
    nfail = run_modify_rows(d, &f, bad_modify_rows,
                            ARRAY_SIZE(bad_modify_rows), failures);
    g_test_message("bad-qp-modify: %d rows, %d failed",
                   (int)ARRAY_SIZE(bad_modify_rows), nfail);
    g_assert_cmpstr(failures->str, ==, "");
}

/* Allowed transitions, for every QP type (RESET -> ERR is not one). */
static const struct {
    uint8_t from, to;
} good_transitions[] = {
    { RS_QPS_RESET, RS_QPS_RESET }, { RS_QPS_RESET, RS_QPS_INIT },
    { RS_QPS_INIT, RS_QPS_INIT },
    { RS_QPS_INIT, RS_QPS_RTR }, { RS_QPS_INIT, RS_QPS_RESET },
    { RS_QPS_INIT, RS_QPS_ERR }, { RS_QPS_RTR, RS_QPS_RTS },
    { RS_QPS_RTR, RS_QPS_RESET }, { RS_QPS_RTR, RS_QPS_ERR },
    { RS_QPS_RTS, RS_QPS_RTS }, { RS_QPS_RTS, RS_QPS_SQD },
    { RS_QPS_RTS, RS_QPS_RESET }, { RS_QPS_RTS, RS_QPS_ERR },
    { RS_QPS_SQD, RS_QPS_RTS }, { RS_QPS_SQD, RS_QPS_SQD },
    { RS_QPS_SQD, RS_QPS_RESET }, { RS_QPS_SQD, RS_QPS_ERR },
    { RS_QPS_ERR, RS_QPS_RESET }, { RS_QPS_ERR, RS_QPS_ERR },
};

#define PK      RS_QP_ATTR_PKEY_INDEX
#define QK      RS_QP_ATTR_QKEY
#define AC      RS_QP_ATTR_ACCESS_FLAGS
#define CS      RS_QP_ATTR_CUR_STATE
#define RNR     RS_QP_ATTR_MIN_RNR_TIMER

/* Optional attributes (Linux's qp_state_table, plus SESSION_GROUP). */
static const BadModifyRow good_optional_rows[] = {
    MROW("RC INIT->INIT PKEY_INDEX|PORT|ACCESS_FLAGS", RC, INIT, INIT,
         ST | PK | RS_QP_ATTR_PORT | AC, OK),
    MROW("UD INIT->INIT PKEY_INDEX|PORT|QKEY", UD, INIT, INIT,
         ST | PK | RS_QP_ATTR_PORT | QK, OK),
    MROW("GSI INIT->INIT PKEY_INDEX|QKEY", GSI, INIT, INIT, ST | PK | QK,
         OK),
    MROW("RC INIT->RTR + ACCESS_FLAGS|PKEY_INDEX", RC, INIT, RTR,
         RC_RTR_MASK | AC | PK, OK),
    MROW("UC INIT->RTR + ACCESS_FLAGS|PKEY_INDEX", UC, INIT, RTR,
         UC_RTR_MASK | AC | PK, OK),
    MROW("UD INIT->RTR PKEY_INDEX|QKEY", UD, INIT, RTR, ST | PK | QK, OK),
    MROW("GSI INIT->RTR PKEY_INDEX|QKEY", GSI, INIT, RTR, ST | PK | QK, OK),
    MROW("RC RTR->RTS + CUR_STATE|ACCESS_FLAGS|MIN_RNR_TIMER", RC, RTR,
         RTS, RC_RTS_MASK | CS | AC | RNR, OK),
    MROW("UC RTR->RTS + CUR_STATE|ACCESS_FLAGS", UC, RTR, RTS,
         UD_RTS_MASK | CS | AC, OK),
    MROW("UD RTR->RTS + CUR_STATE|QKEY", UD, RTR, RTS,
         UD_RTS_MASK | CS | QK, OK),
    MROW("GSI RTR->RTS + CUR_STATE|QKEY", GSI, RTR, RTS,
         UD_RTS_MASK | CS | QK, OK),
    MROW("RC RTS->RTS CUR_STATE|ACCESS_FLAGS|MIN_RNR_TIMER", RC, RTS, RTS,
         ST | CS | AC | RNR, OK),
    MROW("UC RTS->RTS CUR_STATE|ACCESS_FLAGS", UC, RTS, RTS, ST | CS | AC,
         OK),
    MROW("UD RTS->RTS CUR_STATE|QKEY", UD, RTS, RTS, ST | CS | QK, OK),
    MROW("RC RTS->SQD EN_SQD_ASYNC_NOTIFY", RC, RTS, SQD,
         ST | RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, OK),
    MROW("UC RTS->SQD EN_SQD_ASYNC_NOTIFY", UC, RTS, SQD,
         ST | RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, OK),
    MROW("UD RTS->SQD EN_SQD_ASYNC_NOTIFY", UD, RTS, SQD,
         ST | RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, OK),
    MROW("GSI RTS->SQD EN_SQD_ASYNC_NOTIFY", GSI, RTS, SQD,
         ST | RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, OK),
    MROW("RC SQD->RTS CUR_STATE|ACCESS_FLAGS|MIN_RNR_TIMER", RC, SQD, RTS,
         ST | CS | AC | RNR, OK),
    MROW("UD SQD->RTS CUR_STATE|QKEY", UD, SQD, RTS, ST | CS | QK, OK),
    MROW("RC SQD->SQD path and limits", RC, SQD, SQD,
         ST | RS_QP_ATTR_PORT | RS_QP_ATTR_AV | RS_QP_ATTR_TIMEOUT |
         RS_QP_ATTR_RETRY_CNT | RS_QP_ATTR_RNR_RETRY |
         RS_QP_ATTR_MAX_QP_RD_ATOMIC | RS_QP_ATTR_MAX_DEST_RD_ATOMIC |
         AC | PK | RNR, OK),
    MROW("UC SQD->SQD AV|ACCESS_FLAGS|PKEY_INDEX", UC, SQD, SQD,
         ST | RS_QP_ATTR_AV | AC | PK, OK),
    MROW("UD SQD->SQD PKEY_INDEX|QKEY", UD, SQD, SQD, ST | PK | QK, OK),
    MROW("GSI SQD->SQD PKEY_INDEX|QKEY", GSI, SQD, SQD, ST | PK | QK, OK),
    MROW("RC RESET->INIT + SESSION_GROUP", RC, RESET, INIT,
         RC_INIT_MASK | SG, OK, A(session_group, TOK(T_GROUP, 0))),
    MROW("UC INIT->INIT SESSION_GROUP", UC, INIT, INIT, SG, OK,
         A(session_group, TOK(T_GROUP, 0))),
    MROW("UD INIT->RTR + SESSION_GROUP", UD, INIT, RTR, ST | SG, OK,
         A(session_group, TOK(T_GROUP, 0))),
    MROW("RC RTR->RTS + SESSION_GROUP", RC, RTR, RTS, RC_RTS_MASK | SG, OK,
         A(session_group, TOK(T_GROUP, 0))),
    MROW("UD RTS->RTS SESSION_GROUP", UD, RTS, RTS, ST | SG, OK,
         A(session_group, TOK(T_GROUP, 0))),
    MROW("RC SQD->RTS + SESSION_GROUP", RC, SQD, RTS, ST | SG, OK,
         A(session_group, TOK(T_GROUP, 0))),
    MROW("UC SQD->SQD SESSION_GROUP", UC, SQD, SQD, ST | SG, OK,
         A(session_group, TOK(T_GROUP, 0))),
};

static void test_qp_transitions(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    static const char *const type_names[] = { "RC", "UC", "UD", "GSI" };
    static const char *const state_names[] = {
        "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
    };
    QRdmaSession *d = rs_setup(obj);
    g_autoptr(GString) failures = g_string_new("");
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    int ntypes = ARRAY_SIZE(type_names);
    int n = ntypes * ARRAY_SIZE(good_transitions);
    g_autofree BadModifyRow *rows = g_new0(BadModifyRow, n);
    BadFixture f;
    int t, i, nfail;

    for (t = 0; t < ntypes; t++) {
        for (i = 0; i < ARRAY_SIZE(good_transitions); i++) {
            BadModifyRow *r = &rows[t * ARRAY_SIZE(good_transitions) + i];
            uint8_t from = good_transitions[i].from;
            uint8_t to = good_transitions[i].to;
            char *name = g_strdup_printf("%s %s->%s", type_names[t],
                                         state_names[from],
                                         state_names[to]);

            g_ptr_array_add(names, name);
            r->name = name;
            r->qp_type = t;
            r->from = from;
            r->to = to;
            r->mask = std_mask(t, from, to);
            r->status = RS_STATUS_OK;
        }
    }

    modify_fixture_init(d, &f);
    nfail = run_modify_rows(d, &f, rows, n, failures);
    nfail += run_modify_rows(d, &f, good_optional_rows,
                             ARRAY_SIZE(good_optional_rows), failures);
    g_test_message("qp-transitions: %d rows, %d failed",
                   n + (int)ARRAY_SIZE(good_optional_rows), nfail);
    g_assert_cmpstr(failures->str, ==, "");
}

/* ------------------------------------------------------------------ */
/* Bad ring configurations at enable time                              */
/* ------------------------------------------------------------------ */

typedef struct BadRingRow {
    const char *name;
    uint32_t reg;               /* *_BASE_LO: a 64-bit base, else a CFG */
    uint64_t value;
} BadRingRow;

static const BadRingRow bad_ring_rows[] = {
    { "ADMQ base 0", A_RS_ADMQ_BASE_LO, 0 },
    { "ADMQ base +32", A_RS_ADMQ_BASE_LO, TOK(T_RING_ADMQ, 32) },
    { "ADMQ base +8", A_RS_ADMQ_BASE_LO, TOK(T_RING_ADMQ, 8) },
    { "ADMQ log 0", A_RS_ADMQ_CFG, 0 },
    { "ADMQ log 13", A_RS_ADMQ_CFG, RS_MAX_ADMQ_LOG + 1 },
    { "ADMQ log 31", A_RS_ADMQ_CFG, 31 },
    { "ADMQ in BAR0", A_RS_ADMQ_BASE_LO, TOK(T_BAR0, 0) },
    { "ADMQ in BAR2", A_RS_ADMQ_BASE_LO, TOK(T_BAR2, 0) },
    { "ADMQ at end of RAM", A_RS_ADMQ_BASE_LO, TOK(T_RAM_END, 0) },
    { "ADMQ straddles end of RAM", A_RS_ADMQ_BASE_LO,
      TOK(T_RAM_END, -1024) },
    { "ADMQ far", A_RS_ADMQ_BASE_LO, FAR_ADDR },
    { "ADMQ above 4 GiB", A_RS_ADMQ_BASE_LO, 0x100100000ull },
    { "ACQ base +16", A_RS_ACQ_BASE_LO, TOK(T_RING_ACQ, 16) },
    { "ACQ in BAR0", A_RS_ACQ_BASE_LO, TOK(T_BAR0, 0) },
    { "ACQ straddles end of RAM", A_RS_ACQ_BASE_LO, TOK(T_RAM_END, -256) },
    { "ACQ far", A_RS_ACQ_BASE_LO, FAR_ADDR },
    { "ACQ vector 5", A_RS_ACQ_CFG, DEF_NUM_MSIX },
    { "ACQ vector 0x7ff", A_RS_ACQ_CFG, 0x7ff },
    { "AEQ base +32", A_RS_AEQ_BASE_LO, TOK(T_RING_AEQ, 32) },
    { "AEQ log 0", A_RS_AEQ_CFG, 0 },
    { "AEQ log 13", A_RS_AEQ_CFG, RS_MAX_AEQ_LOG + 1 },
    { "AEQ in BAR2", A_RS_AEQ_BASE_LO, TOK(T_BAR2, 0) },
    { "AEQ at end of RAM", A_RS_AEQ_BASE_LO, TOK(T_RAM_END, 0) },
    { "AEQ straddles end of RAM", A_RS_AEQ_BASE_LO, TOK(T_RAM_END, -128) },
    { "AEQ vector 5", A_RS_AEQ_CFG,
      RS_QOS_AEQ_LOG | DEF_NUM_MSIX << R_RS_AEQ_CFG_VECTOR_SHIFT },
    { "AEQ vector 0x7ff", A_RS_AEQ_CFG,
      RS_QOS_AEQ_LOG | 0x7ff << R_RS_AEQ_CFG_VECTOR_SHIFT },
};

static void test_bad_ring_config(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    g_autoptr(GString) failures = g_string_new("");
    BadFixture f;
    int i;

    memset(&f, 0, sizeof(f));
    f.d = d;
    f.tok[T_BAR0] = d->bar0.addr;
    f.tok[T_BAR2] = d->bar2.addr;
    f.tok[T_RAM_END] = ram_end(d);

    for (i = 0; i < ARRAY_SIZE(bad_ring_rows); i++) {
        const BadRingRow *row = &bad_ring_rows[i];
        uint32_t status, code;
        uint64_t v;

        qrs_admin_configure(d, RS_QOS_ADMQ_LOG, RS_QOS_AEQ_LOG, 0, 0);
        f.tok[T_RING_ADMQ] = d->admq;
        f.tok[T_RING_ACQ] = d->acq;
        f.tok[T_RING_AEQ] = d->aeq;
        v = resolve(&f, row->value);
        if (row->reg == A_RS_ADMQ_BASE_LO || row->reg == A_RS_ACQ_BASE_LO ||
            row->reg == A_RS_AEQ_BASE_LO) {
            qrs_writel(d, row->reg, v & 0xffffffffu);
            qrs_writel(d, row->reg + 4, v >> 32);
        } else {
            qrs_writel(d, row->reg, v);
        }
        qrs_writel(d, A_RS_CTRL, R_RS_CTRL_ENABLE_MASK);

        status = qrs_readl(d, A_RS_STATUS);
        code = qrs_readl(d, A_RS_FATAL_CODE);
        if ((status & (R_RS_STATUS_FATAL_MASK | R_RS_STATUS_READY_MASK)) !=
            R_RS_STATUS_FATAL_MASK || code != RS_FATAL_BAD_RING_CONFIG) {
            g_string_append_printf(failures,
                                   "  %s: STATUS=0x%x FATAL_CODE=%u\n",
                                   row->name, status, code);
        } else {
            /* Not READY: the doorbell is ignored. */
            qrs_writel(d, A_RS_ADMQ_DB, 1);
            if (qrs_readl(d, A_RS_ADMQ_CI) != 0) {
                g_string_append_printf(failures,
                                       "  %s: ADMQ_CI moved while FATAL\n",
                                       row->name);
            }
        }

        /* Cleared by CTRL.RESET or by writing ENABLE=0 (alternating). */
        qrs_writel(d, A_RS_CTRL, i & 1 ? R_RS_CTRL_RESET_MASK : 0);
        g_assert_cmphex(qrs_readl(d, A_RS_CTRL), ==, 0);
        g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==,
                        R_RS_STATUS_LINK_UP_MASK);
        g_assert_cmphex(qrs_readl(d, A_RS_FATAL_CODE), ==, RS_FATAL_NONE);
        rs_setup(d);
        assert_alive(d);
        qrs_reset(d);
    }
    g_test_message("bad-ring-config: %d rows", i);
    g_assert_cmpstr(failures->str, ==, "");
}

/* ------------------------------------------------------------------ */
/* Doorbells                                                           */
/* ------------------------------------------------------------------ */

static void test_doorbells(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    struct rs_cmd_create_qp c;
    struct rs_event ev;
    uint64_t ring = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << 4);
    uint32_t pd, cq, qp, qi, ci, ci_before;
    static const uint32_t offs[] = {
        RS_DB_SQ, RS_DB_RQ, RS_DB_CQ_CI, RS_DB_CQ_ARM, RS_DB_SRQ,
    };
    static const uint32_t pages[] = { 0, 1, 2, DEF_DB_PAGES - 1 };
    int i, j;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    RS_ASSERT_OK(qrs_create_cq(d, ring, 4, 0, 1, &cq));
    qp_template(d, &c, RS_QPT_RC, pd, cq, cq);
    c.uar = 1;
    qp = new_qp(d, &c);
    qp_walk(d, qp, RS_QPT_RC, RS_QPS_RTR);
    qi = HINDEX(qp);
    ci = HINDEX(cq);

    /*
     * Doorbells only record indices: in RTR the requester does not run
     * and no packet arrives, so nothing is written to guest memory.
     */
    fill(d, ring, 0x5a, sizeof(struct rs_cqe) << 4);
    fill(d, c.sq_addr, 0x5a, qrs_qp_sq_bytes(&c));
    fill(d, c.rq_addr, 0x5a, qrs_qp_rq_bytes(&c));
    ci_before = qrs_readl(d, A_RS_ADMQ_CI);

    for (i = 0; i < ARRAY_SIZE(pages); i++) {
        for (j = 0; j < ARRAY_SIZE(offs); j++) {
            bool cqdb = offs[j] == RS_DB_CQ_CI || offs[j] == RS_DB_CQ_ARM;
            uint32_t idx = cqdb ? ci : qi;

            /* the object's own page and index, then wrong indices */
            qrs_db_writel(d, pages[i], offs[j], idx | 1 << 16);
            qrs_db_writel(d, pages[i], offs[j], idx | RS_DB_CQ_ARM_NEXT |
                          RS_DB_CQ_ARM_SOLICITED);
            qrs_db_writel(d, pages[i], offs[j], RS_DB_INDEX_MASK | 5 << 16);
            qrs_db_writel(d, pages[i], offs[j], 0);
            qrs_db_writel(d, pages[i], offs[j], 0xffffffff);
        }
        qrs_db_writel(d, pages[i], 0xffc, 0xffffffff);
    }

    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, ci_before);
    g_assert_true(is_filled(d, ring, 0x5a, sizeof(struct rs_cqe) << 4));
    g_assert_true(is_filled(d, c.sq_addr, 0x5a, qrs_qp_sq_bytes(&c)));
    g_assert_true(is_filled(d, c.rq_addr, 0x5a, qrs_qp_rq_bytes(&c)));
    g_assert_false(qrs_aeq_poll(d, &ev, G_USEC_PER_SEC / 10));
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_RTR);
    assert_alive(d);

    /* Doorbells of a disabled device are ignored too. */
    qrs_reset(d);
    qrs_db_writel(d, 1, RS_DB_SQ, qi | 1 << 16);
    qrs_db_writel(d, 1, RS_DB_CQ_ARM, ci | RS_DB_CQ_ARM_NEXT);
    assert_power_on_regs(d, DEF_DB_PAGES, DEF_NUM_MSIX);
}

/* ------------------------------------------------------------------ */
/* Transport engine: work requests and completions as a driver posts   */
/* and polls them                                                      */
/* ------------------------------------------------------------------ */

typedef struct LoopQp {
    struct rs_cmd_create_qp c;
    uint32_t h, qpn, sq_pi, rq_pi;
} LoopQp;

/* Something to do while a completion is awaited (e.g. move frames). */
typedef void EngIdleFn(void *opaque);

/* A memory region of @len bytes at @iova on the pages from @base. */
static uint32_t eng_mr_at(QRdmaSession *d, uint32_t pd, uint32_t gid_index,
                          uint64_t iova, uint64_t base, uint32_t len,
                          uint16_t access)
{
    struct rs_cmd_reg_mr c = {
        .iova = iova,
        .length = len,
        .npages = DIV_ROUND_UP(len, PAGE),
        .pd = pd,
        .page_shift = 12,
        .access = access,
        .gid_index = gid_index,
    };

    c.pbl_addr = make_pbl(d, base, PAGE, c.npages);
    return reg_mr_ok(d, &c);
}

/* ... and at the page-aligned guest address @base as its IOVA. */
static uint32_t eng_mr(QRdmaSession *d, uint32_t pd, uint32_t gid_index,
                       uint64_t base, uint32_t len, uint16_t access)
{
    return eng_mr_at(d, pd, gid_index, base, base, len, access);
}

/* Walk an RC or UC QP from RESET to RTS with @base's attributes. */
static void eng_connect(QRdmaSession *d, LoopQp *q, uint8_t type,
                        const struct rs_qp_attr *base, uint32_t rtr_mask)
{
    static const uint8_t path[] = {
        RS_QPS_RESET, RS_QPS_INIT, RS_QPS_RTR, RS_QPS_RTS,
    };
    struct rs_qp_attr a;
    int i;

    for (i = 1; i < ARRAY_SIZE(path); i++) {
        uint32_t mask = std_mask(type, path[i - 1], path[i]);

        a = *base;
        a.cur_qp_state = path[i - 1];
        a.qp_state = path[i];
        if (path[i] == RS_QPS_RTR) {
            mask |= rtr_mask;
        }
        RS_ASSERT_OK(qrs_modify_qp(d, q->h, &a, mask));
    }
}

static void eng_post_recv(QRdmaSession *d, LoopQp *q, uint64_t wr_id,
                          const struct rs_sge *sge, uint8_t nsge)
{
    struct rs_recv_wqe_ctrl w = { .wr_id = wr_id, .num_sge = nsge };
    uint64_t slot = q->c.rq_addr +
        (uint64_t)(q->rq_pi & ((1u << q->c.rq_log_size) - 1)) *
        (qrs_qp_rq_bytes(&q->c) >> q->c.rq_log_size);

    qtest_memwrite(qrs_qts(d), slot, &w, sizeof(w));
    if (nsge) {
        qtest_memwrite(qrs_qts(d), slot + sizeof(w), sge,
                       nsge * sizeof(*sge));
    }
    q->rq_pi++;
    qrs_db_writel(d, 0, RS_DB_RQ, q->qpn | (q->rq_pi & 0xffff) << 16);
}

/* Post @w with the @nsge entries of @sge (w->num_sge is the caller's). */
static void eng_post_send(QRdmaSession *d, LoopQp *q,
                          const struct rs_send_wqe_ctrl *w,
                          const struct rs_sge *sge, uint8_t nsge)
{
    uint64_t slot = q->c.sq_addr +
        (uint64_t)(q->sq_pi & ((1u << q->c.sq_log_size) - 1)) *
        (qrs_qp_sq_bytes(&q->c) >> q->c.sq_log_size);

    qtest_memwrite(qrs_qts(d), slot, w, sizeof(*w));
    if (nsge) {
        qtest_memwrite(qrs_qts(d), slot + sizeof(*w), sge,
                       nsge * sizeof(*sge));
    }
    q->sq_pi++;
    qrs_db_writel(d, 0, RS_DB_SQ, q->qpn | (q->sq_pi & 0xffff) << 16);
}

/* A CQ as the driver polls it: ring, size, handle, consumer index. */
typedef struct EngCq {
    uint64_t ring;
    uint32_t h, ci;
    uint8_t log;
} EngCq;

static void eng_cq_init(QRdmaSession *d, EngCq *cq, uint8_t log)
{
    memset(cq, 0, sizeof(*cq));
    cq->log = log;
    cq->ring = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << log);
    RS_ASSERT_OK(qrs_create_cq(d, cq->ring, log, 0, 0, &cq->h));
}

/* Is the entry at the consumer index written (owner bit of this lap)? */
static bool eng_cq_peek(QRdmaSession *d, EngCq *cq, struct rs_cqe *cqe)
{
    uint64_t addr = cq->ring +
        (uint64_t)(cq->ci & ((1u << cq->log) - 1)) * sizeof(*cqe);

    qtest_memread(qrs_qts(d), addr, cqe, sizeof(*cqe));
    return (cqe->owner & RS_CQE_OWNER) == !((cq->ci >> cq->log) & 1);
}

/* The next CQE, waiting for the engine's BH (and @idle meanwhile). */
static void eng_poll(QRdmaSession *d, EngCq *cq, struct rs_cqe *cqe,
                     EngIdleFn *idle, void *opaque)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    while (!eng_cq_peek(d, cq, cqe)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        if (idle) {
            idle(opaque);
        }
        qtest_clock_step(qrs_qts(d), 1000);
    }
    cq->ci++;
    qrs_db_writel(d, 0, RS_DB_CQ_CI, HINDEX(cq->h) | (cq->ci & 0xffff) << 16);
}

/* ------------------------------------------------------------------ */
/* Transport engine: two RC QPs of one adapter over loopback           */
/* ------------------------------------------------------------------ */

typedef struct Loop {
    QRdmaSession *d;
    uint8_t type;               /* RS_QPT_RC or RS_QPT_UC */
    EngCq cq;
    uint32_t pd, group;
    LoopQp a, b;
    uint64_t src, dst;          /* page-aligned buffers, LOOP_BUF bytes */
    uint32_t src_key, dst_key;
} Loop;

#define LOOP_BUF    (4 * PAGE)
#define LOOP_CQ_LOG 5
#define LOOP_PSN    0x100

static uint64_t loop_buf(QRdmaSession *d, uint32_t len)
{
    uint64_t a = qrs_alloc_zeroed(d, len + PAGE);

    return (a + PAGE - 1) & ~(uint64_t)(PAGE - 1);
}

static uint32_t loop_mr_access(Loop *l, uint64_t base, uint32_t len,
                               uint16_t access)
{
    struct rs_cmd_reg_mr c = {
        .iova = base,
        .length = len,
        .npages = len / PAGE,
        .pd = l->pd,
        .page_shift = 12,
        .access = access,
        .gid_index = 0,
    };

    c.pbl_addr = make_pbl(l->d, base, PAGE, len / PAGE);
    return reg_mr_ok(l->d, &c);
}

static uint32_t loop_mr(Loop *l, uint64_t base, uint32_t len)
{
    return eng_mr(l->d, l->pd, 0, base, len, STD_ACCESS);
}

/*
 * RESET to RTS, to QP @peer at 10.0.0.@host: through the loopback session
 * group when @host is 1, else through the QP's own AV with our MAC as the
 * destination (the tests that put frames on the wire and take them back).
 */
static void loop_connect_to(Loop *l, LoopQp *q, uint32_t peer, uint8_t host)
{
    struct rs_qp_attr a;

    std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
    gid_v4(a.ah.dgid, 10, 0, 0, host);
    memcpy(a.ah.dmac, qos_mac, 6);
    a.dest_qp_num = peer;
    a.rq_psn = a.sq_psn = LOOP_PSN;
    a.access_flags = STD_ACCESS | RS_ACCESS_REMOTE_ATOMIC;
    if (host == 1) {
        a.session_group = l->group;
    }
    eng_connect(l->d, q, l->type, &a,
                host == 1 ? RS_QP_ATTR_SESSION_GROUP : 0);
}

static void loop_connect(Loop *l, LoopQp *q, uint32_t peer)
{
    loop_connect_to(l, q, peer, 1);
}

/* Both QPs back through RESET to RTS, e.g. after an error. */
static void loop_reconnect(Loop *l)
{
    struct rs_qp_attr a;

    std_attr(&a, 0, RS_QPS_RESET);
    RS_ASSERT_OK(qrs_modify_qp(l->d, l->a.h, &a, RS_QP_ATTR_STATE));
    RS_ASSERT_OK(qrs_modify_qp(l->d, l->b.h, &a, RS_QP_ATTR_STATE));
    l->a.sq_pi = l->a.rq_pi = l->b.sq_pi = l->b.rq_pi = 0;
    loop_connect(l, &l->a, l->b.qpn);
    loop_connect(l, &l->b, l->a.qpn);
}

/* Objects of the loopback tests on @d; QPs of @type, not connected. */
static void loop_init(Loop *l, QRdmaSession *d, uint8_t type,
                      uint32_t pd_flags)
{
    struct rs_cmd_create_session sc;
    uint32_t s = 0;

    memset(l, 0, sizeof(*l));
    l->d = d;
    l->type = type;
    add_gid_v4(l->d, 0, 1);                     /* 10.0.0.1 */
    RS_ASSERT_OK(qrs_create_pd_flags(l->d, pd_flags, &l->pd));
    eng_cq_init(l->d, &l->cq, LOOP_CQ_LOG);
    session_template(&sc, 0, 49152);
    gid_v4(sc.dst_ip, 10, 0, 0, 1);             /* ourselves: loopback */
    RS_ASSERT_OK(qrs_create_session(l->d, &sc, &s));
    l->group = new_group(l->d, RS_GROUP_ROUND_ROBIN, s, 0);
    qp_template(l->d, &l->a.c, type, l->pd, l->cq.h, l->cq.h);
    qp_template(l->d, &l->b.c, type, l->pd, l->cq.h, l->cq.h);
    l->a.h = new_qp(l->d, &l->a.c);
    l->b.h = new_qp(l->d, &l->b.c);
    l->a.qpn = HINDEX(l->a.h);
    l->b.qpn = HINDEX(l->b.h);
    l->src = loop_buf(l->d, LOOP_BUF);
    l->dst = loop_buf(l->d, LOOP_BUF);
    l->src_key = loop_mr(l, l->src, LOOP_BUF);
    l->dst_key = loop_mr(l, l->dst, LOOP_BUF);
}

static void loop_setup_pd(Loop *l, void *obj, uint32_t pd_flags)
{
    loop_init(l, rs_setup(obj), RS_QPT_RC, pd_flags);
    loop_connect(l, &l->a, l->b.qpn);
    loop_connect(l, &l->b, l->a.qpn);
}

static void loop_setup_type(Loop *l, void *obj, uint8_t type)
{
    loop_init(l, rs_setup(obj), type, 0);
    loop_connect(l, &l->a, l->b.qpn);
    loop_connect(l, &l->b, l->a.qpn);
}

static void loop_setup(Loop *l, void *obj)
{
    loop_setup_pd(l, obj, 0);
}

static void loop_post_recv(Loop *l, LoopQp *q, uint64_t wr_id,
                           uint64_t addr, uint32_t len, uint32_t lkey)
{
    struct rs_sge sge = { .addr = addr, .length = len, .lkey = lkey };

    eng_post_recv(l->d, q, wr_id, &sge, 1);
}

static void loop_post_send(Loop *l, LoopQp *q,
                           const struct rs_send_wqe_ctrl *w,
                           uint64_t addr, uint32_t len, uint32_t lkey)
{
    struct rs_sge sge = { .addr = addr, .length = len, .lkey = lkey };

    eng_post_send(l->d, q, w, &sge, 1);
}

static void loop_poll(Loop *l, struct rs_cqe *cqe)
{
    eng_poll(l->d, &l->cq, cqe, NULL, NULL);
}

static void loop_pattern(Loop *l, uint64_t addr, uint32_t len, uint8_t seed)
{
    g_autofree uint8_t *buf = g_malloc(len);
    uint32_t i;

    for (i = 0; i < len; i++) {
        buf[i] = seed + i * 7 + (i >> 8);
    }
    qtest_memwrite(qrs_qts(l->d), addr, buf, len);
}

static void loop_assert_same(Loop *l, uint64_t a, uint64_t b, uint32_t len)
{
    g_autofree uint8_t *x = g_malloc(len);
    g_autofree uint8_t *y = g_malloc(len);
    uint32_t i;

    qtest_memread(qrs_qts(l->d), a, x, len);
    qtest_memread(qrs_qts(l->d), b, y, len);
    for (i = 0; i < len; i++) {
        g_assert_cmphex(x[i], ==, y[i]);
    }
}

static void test_engine_loopback(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Loop l;
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;

    loop_setup(&l, obj);

    /* RC SEND of 3000 bytes: three packets at MTU 1024. */
    loop_pattern(&l, l.src, 3000, 0x11);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_recv(&l, &l.b, 0xb0, l.dst, LOOP_BUF, l.dst_key);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa0;
    w.opcode = RS_WR_SEND_IMM;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    w.imm_or_inv = 0x01020304;
    loop_post_send(&l, &l.a, &w, l.src, 3000, l.src_key);
    loop_poll(&l, &cqe);                /* the receive completes first */
    g_assert_cmphex(cqe.wr_id, ==, 0xb0);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmphex(cqe.opcode, ==, RS_WR_RECV);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    g_assert_cmpuint(cqe.qpn, ==, l.b.qpn);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0x01020304);
    g_assert_true(cqe.wc_flags & RS_WC_F_IMM);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa0);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmphex(cqe.opcode, ==, RS_WR_SEND_IMM);
    g_assert_cmpuint(cqe.qpn, ==, l.a.qpn);
    loop_assert_same(&l, l.src, l.dst, 3000);
    g_assert_true(is_filled(l.d, l.dst + 3000, 0xee, LOOP_BUF - 3000));

    /* RDMA WRITE of 5000 bytes at an unaligned offset. */
    loop_pattern(&l, l.src, 5000, 0x5c);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa1;
    w.opcode = RS_WR_RDMA_WRITE;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    w.remote_addr = l.dst + 100;
    w.rkey = l.dst_key;
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 100, 5000);
    g_assert_true(is_filled(l.d, l.dst, 0xee, 100));
    g_assert_true(is_filled(l.d, l.dst + 5100, 0xee, LOOP_BUF - 5100));

    /* RDMA READ back into the source buffer. */
    fill(l.d, l.src, 0, LOOP_BUF);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa2;
    w.opcode = RS_WR_RDMA_READ;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    w.remote_addr = l.dst + 100;
    w.rkey = l.dst_key;
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa2);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 5000);
    loop_assert_same(&l, l.src, l.dst + 100, 5000);

    /* A bad rkey: remote access NAK, error completion, memory intact. */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa3;
    w.opcode = RS_WR_RDMA_WRITE;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    w.remote_addr = l.dst;
    w.rkey = l.dst_key ^ 0x40;
    loop_post_send(&l, &l.a, &w, l.src, 2000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa3);
    g_assert_cmpuint(cqe.status, ==, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l.d, l.dst, 0xee, LOOP_BUF));
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_ERR);
    assert_alive(l.d);
}

/* ------------------------------------------------------------------ */
/* Kernel consumers: fast registration, invalidation, the DMA lkey      */
/* ------------------------------------------------------------------ */

#define FR_IOVA     0x7000000000ull     /* any IOVA: the page list decides */
#define RS_GRH_BYTES 40                 /* UD receives: the GRH area first */

/* A fast-registration MR of @npages slots in @pd: its initial key. */
static uint32_t fr_alloc(Loop *l, uint32_t pd, uint32_t npages)
{
    struct rs_cmd_reg_mr c = {
        .npages = npages, .pd = pd, .page_shift = 12,
        .flags = RS_MR_F_FAST_REG,
    };

    return reg_mr_ok(l->d, &c);
}

static void fr_post_reg(Loop *l, LoopQp *q, uint64_t wr_id, uint32_t key,
                        uint64_t iova, uint64_t len, uint64_t pbl,
                        uint32_t npages, uint16_t access)
{
    struct rs_send_wqe_reg_mr f = {
        .wr_id = wr_id, .opcode = RS_WR_REG_MR, .flags = RS_WQE_F_SIGNALED,
        .page_shift = 12, .key = key, .iova = iova, .length = len,
        .pbl_addr = pbl, .npages = npages, .access = access,
    };
    struct rs_send_wqe_ctrl w;

    memcpy(&w, &f, sizeof(w));
    loop_post_send(l, q, &w, 0, 0, 0);
}

static void fr_post_op(Loop *l, LoopQp *q, uint64_t wr_id, uint8_t op,
                       uint32_t inv, uint64_t raddr, uint32_t rkey,
                       uint64_t addr, uint32_t len, uint32_t lkey)
{
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id, .opcode = op, .flags = RS_WQE_F_SIGNALED,
        .num_sge = len ? 1 : 0, .imm_or_inv = inv, .remote_addr = raddr,
        .rkey = rkey,
    };

    loop_post_send(l, q, &w, addr, len, lkey);
}

static void fr_expect(Loop *l, uint64_t wr_id, uint8_t opcode, uint8_t status)
{
    struct rs_cqe cqe;

    loop_poll(l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    if (status == RS_WC_SUCCESS) {
        g_assert_cmphex(cqe.opcode, ==, opcode);
    }
}

/* A spare RTS QP on @pd (doorbell page @uar) for one failing WQE. */
static void fr_spare_qp(Loop *l, LoopQp *q, uint32_t pd, uint32_t uar)
{
    memset(q, 0, sizeof(*q));
    qp_template(l->d, &q->c, RS_QPT_RC, pd, l->cq.h, l->cq.h);
    q->c.uar = uar;
    q->h = new_qp(l->d, &q->c);
    q->qpn = HINDEX(q->h);
    loop_connect(l, q, l->a.qpn);
}

/* Post one WQE on a fresh QP: it fails with @status, the QP goes to ERR. */
static void fr_fail_on_spare(Loop *l, uint32_t pd, uint32_t uar,
                             const struct rs_send_wqe_ctrl *w, uint8_t status)
{
    LoopQp q;

    fr_spare_qp(l, &q, pd, uar);
    if (uar) {
        /* A user QP rings its own doorbell page. */
        uint64_t slot = q.c.sq_addr;

        qtest_memwrite(qrs_qts(l->d), slot, w, sizeof(*w));
        q.sq_pi++;
        qrs_db_writel(l->d, uar, RS_DB_SQ, q.qpn | (q.sq_pi & 0xffff) << 16);
    } else {
        loop_post_send(l, &q, w, 0, 0, 0);
    }
    fr_expect(l, w->wr_id, w->opcode, status);
    g_assert_cmpuint(qp_state(l->d, q.h), ==, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_destroy(l->d, RS_CMD_DESTROY_QP, q.h));
}

/* QEMU logs the doorbell's trace event, to the file data names. */
static void *trace_doorbell_before(GString *cmd_line, void *arg)
{
    char *path = g_strdup_printf("%s/rs-doorbell-%d.log", g_get_tmp_dir(),
                                 getpid());

    unlink(path);
    g_string_append_printf(cmd_line, " -d trace:rdma_session_req_doorbell"
                           " -D %s ", path);
    g_test_queue_free(path);
    qos_invalidate_command_line();
    return path;
}

/*
 * One doorbell for 1000 fast registrations and invalidations: they count
 * against the doorbell's budget like packets, so the doorbell does a
 * budget of them and the requester's bottom half the rest, in order.
 */
static void test_engine_local_op_budget(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    g_autofree char *log = NULL;
    g_auto(GStrv) lines = NULL;
    unsigned rings = 0, used, more, qpn;
    char **line;
    const uint32_t n = 1000;
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    uint32_t key, i, stride;
    uint64_t pbl;
    LoopQp q;
    Loop l;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    memset(&q, 0, sizeof(q));
    qp_template(l.d, &q.c, RS_QPT_RC, l.pd, l.cq.h, l.cq.h);
    q.c.sq_log_size = 10;
    q.c.sq_addr = qrs_alloc_zeroed(l.d, qrs_qp_sq_bytes(&q.c));
    q.h = new_qp(l.d, &q.c);
    q.qpn = HINDEX(q.h);
    loop_connect(&l, &q, l.a.qpn);
    key = fr_alloc(&l, l.pd, 1);
    pbl = make_pbl(l.d, l.dst, PAGE, 1);
    stride = qrs_qp_sq_bytes(&q.c) >> q.c.sq_log_size;
    for (i = 0; i < n; i++) {
        struct rs_send_wqe_reg_mr f = {
            .wr_id = i, .opcode = RS_WR_REG_MR, .page_shift = 12,
            .key = key, .iova = FR_IOVA, .length = PAGE, .pbl_addr = pbl,
            .npages = 1, .access = RS_ACCESS_LOCAL_WRITE,
        };

        memcpy(&w, &f, sizeof(w));
        if (i & 1) {
            w = (struct rs_send_wqe_ctrl) {
                .wr_id = i, .opcode = RS_WR_LOCAL_INV, .imm_or_inv = key,
            };
        }
        if (i == n - 1) {
            w.flags |= RS_WQE_F_SIGNALED;
        }
        qtest_memwrite(qrs_qts(l.d), q.c.sq_addr + i * stride, &w, sizeof(w));
    }
    qrs_db_writel(l.d, 0, RS_DB_SQ, q.qpn | n << 16);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, n - 1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.opcode, ==, RS_WR_LOCAL_INV);
    g_assert_cmpuint(qp_state(l.d, q.h), ==, RS_QPS_RTS);
    g_assert_false(eng_cq_peek(l.d, &l.cq, &cqe));
    assert_alive(l.d);

    /* The doorbell itself did one budget's worth and left the rest. */
    g_assert_true(g_file_get_contents(data, &log, NULL, NULL));
    lines = g_strsplit(log, "\n", -1);
    for (line = lines; *line; line++) {
        const char *t = strstr(*line, "rdma_session_req_doorbell qpn ");

        if (t && sscanf(t, "rdma_session_req_doorbell qpn %u budget used "
                        "%u, more for the bottom half %u", &qpn, &used,
                        &more) == 3 && qpn == q.qpn) {
            g_test_message("doorbell: budget used %u, more %u", used, more);
            g_assert_cmpuint(used, <=, 64);
            g_assert_cmpuint(more, ==, 1);
            rings++;
        }
    }
    g_assert_cmpuint(rings, ==, 1);
    unlink(data);
}

static void test_engine_fast_reg(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    Loop l;
    struct rs_cmd_reg_mr bad = {
        .npages = 4, .page_shift = 12, .flags = RS_MR_F_FAST_REG,
    };
    struct rs_cmd_create_qp qc;
    struct rs_send_wqe_reg_mr f;
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    uint32_t key, k1, k2, k3, upd, ppd2, mr2, h;
    uint64_t pbl, rbuf;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    RS_ASSERT_OK(qrs_create_pd(l.d, &upd));
    RS_ASSERT_OK(qrs_create_pd_flags(l.d, RS_PD_F_PRIVILEGED, &ppd2));
    RS_ASSERT_STATUS(qrs_create_pd_flags(l.d, 2, NULL), RS_STATUS_BAD_PARAM);

    /* Allocation: kernel PDs only, 1 .. RS_MAX_FRMR_PAGES slots, no pages. */
    bad.pd = upd;
    RS_ASSERT_STATUS(qrs_reg_mr(l.d, &bad, NULL, NULL), RS_STATUS_BAD_PD);
    bad.pd = l.pd;
    bad.npages = 0;
    RS_ASSERT_STATUS(qrs_reg_mr(l.d, &bad, NULL, NULL), RS_STATUS_BAD_SIZE);
    bad.npages = RS_MAX_FRMR_PAGES + 1;
    RS_ASSERT_STATUS(qrs_reg_mr(l.d, &bad, NULL, NULL), RS_STATUS_BAD_SIZE);
    bad.npages = 4;
    bad.access = RS_ACCESS_LOCAL_WRITE;
    RS_ASSERT_STATUS(qrs_reg_mr(l.d, &bad, NULL, NULL), RS_STATUS_BAD_PARAM);
    bad.access = 0;
    bad.pbl_addr = 0x1000;
    RS_ASSERT_STATUS(qrs_reg_mr(l.d, &bad, NULL, NULL), RS_STATUS_BAD_PARAM);

    /* A kernel PD's QP rings doorbell page 0 only. */
    qp_template(l.d, &qc, RS_QPT_RC, l.pd, l.cq.h, l.cq.h);
    qc.uar = 1;
    RS_ASSERT_STATUS(qrs_create_qp(l.d, &qc, &h, NULL), RS_STATUS_BAD_PD);

    key = fr_alloc(&l, l.pd, 4);
    mr2 = fr_alloc(&l, ppd2, 4);
    g_assert_cmphex(key & RS_MKEY_TAG_MASK, !=, 0x5a);

    /* Page list out of order: IOVA page i is dst page perm[i]. */
    pbl = qrs_alloc_zeroed(l.d, 4 * 8);
    qtest_writeq(qrs_qts(l.d), pbl + 0, l.dst + 2 * PAGE);
    qtest_writeq(qrs_qts(l.d), pbl + 8, l.dst + 0 * PAGE);
    qtest_writeq(qrs_qts(l.d), pbl + 16, l.dst + 3 * PAGE);

    /* 1: B binds key k1 (tag 0x5a) to 3 pages at FR_IOVA + 0x80. */
    k1 = (key & ~RS_MKEY_TAG_MASK) | 0x5a;
    fr_post_reg(&l, &l.b, 0xf1, k1, FR_IOVA + 0x80, 3 * PAGE - 0x80, pbl, 3,
                RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE |
                RS_ACCESS_REMOTE_READ);
    fr_expect(&l, 0xf1, RS_WR_REG_MR, RS_WC_SUCCESS);

    /* 2: A writes 5000 bytes at FR_IOVA + 0xe4 through k1. */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_pattern(&l, l.src, 5000, 0x21);
    fr_post_op(&l, &l.a, 0xf2, RS_WR_RDMA_WRITE, 0, FR_IOVA + 0xe4, k1,
               l.src, 5000, l.src_key);
    fr_expect(&l, 0xf2, RS_WR_RDMA_WRITE, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 2 * PAGE + 0xe4, PAGE - 0xe4);
    loop_assert_same(&l, l.src + PAGE - 0xe4, l.dst, 5000 - (PAGE - 0xe4));
    g_assert_true(is_filled(l.d, l.dst + 2 * PAGE, 0xee, 0xe4));
    g_assert_true(is_filled(l.d, l.dst + 5000 - (PAGE - 0xe4), 0xee,
                            2 * PAGE - (5000 - (PAGE - 0xe4))));
    g_assert_true(is_filled(l.d, l.dst + 3 * PAGE, 0xee, PAGE));

    /* 3: A reads it back into a DMA address: the reserved lkey. */
    rbuf = loop_buf(l.d, 2 * PAGE);
    fr_post_op(&l, &l.a, 0xf3, RS_WR_RDMA_READ, 0, FR_IOVA + 0xe4, k1,
               rbuf, 5000, RS_LOCAL_DMA_LKEY);
    fr_expect(&l, 0xf3, RS_WR_RDMA_READ, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, rbuf, 5000);

    /* 4: SEND with invalidate of k1; B receives into a DMA address. */
    fill(l.d, rbuf, 0, 2 * PAGE);
    loop_post_recv(&l, &l.b, 0xb4, rbuf, 100, RS_LOCAL_DMA_LKEY);
    fr_post_op(&l, &l.a, 0xf4, RS_WR_SEND_INV, k1, 0, 0, l.src, 64,
               l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb4);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 64);
    g_assert_true(cqe.wc_flags & RS_WC_F_INV);
    g_assert_cmphex(cqe.imm_or_inv, ==, k1);
    fr_expect(&l, 0xf4, RS_WR_SEND_INV, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, rbuf, 64);

    /* 5-7: the MR is Free again: rebind (ib_inc_rkey), LOCAL_INV, rebind. */
    k2 = (k1 & ~RS_MKEY_TAG_MASK) | 0x5b;
    fr_post_reg(&l, &l.b, 0xf5, k2, FR_IOVA, 2 * PAGE, pbl, 2,
                RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE);
    fr_expect(&l, 0xf5, RS_WR_REG_MR, RS_WC_SUCCESS);
    fr_post_op(&l, &l.b, 0xf6, RS_WR_LOCAL_INV, k2, 0, 0, 0, 0, 0);
    fr_expect(&l, 0xf6, RS_WR_LOCAL_INV, RS_WC_SUCCESS);
    k3 = (k1 & ~RS_MKEY_TAG_MASK) | 0x5c;
    fr_post_reg(&l, &l.b, 0xf7, k3, FR_IOVA, 2 * PAGE, pbl, 2,
                RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE);
    fr_expect(&l, 0xf7, RS_WR_REG_MR, RS_WC_SUCCESS);

    /* Bad local operations, each on a fresh QP of its own. */
    memset(&f, 0, sizeof(f));
    f.wr_id = 0xe1;
    f.opcode = RS_WR_REG_MR;
    f.flags = RS_WQE_F_SIGNALED;
    f.page_shift = 12;
    f.key = k3;
    f.iova = FR_IOVA;
    f.length = PAGE;
    f.pbl_addr = pbl;
    f.npages = 1;
    memcpy(&w, &f, sizeof(w));
    /* REG_MR on a bound (Valid) MR. */
    fr_fail_on_spare(&l, l.pd, 0, &w, RS_WC_LOC_PROT_ERR);
    /* REG_MR of an MR of another PD. */
    f.key = mr2;
    memcpy(&w, &f, sizeof(w));
    fr_fail_on_spare(&l, l.pd, 0, &w, RS_WC_LOC_PROT_ERR);
    /* More pages than the MR has slots, a page outside guest RAM. */
    f.key = (mr2 & ~RS_MKEY_TAG_MASK) | 0x77;
    g_assert_cmphex(mr2 & RS_MKEY_TAG_MASK, !=, 0x77);
    f.length = 5 * PAGE;
    f.npages = 5;
    memcpy(&w, &f, sizeof(w));
    fr_fail_on_spare(&l, ppd2, 0, &w, RS_WC_LOC_PROT_ERR);
    f.length = PAGE;
    f.npages = 1;
    f.pbl_addr = qrs_alloc_zeroed(l.d, 8);
    qtest_writeq(qrs_qts(l.d), f.pbl_addr, 1ull << 40);
    memcpy(&w, &f, sizeof(w));
    fr_fail_on_spare(&l, ppd2, 0, &w, RS_WC_LOC_PROT_ERR);
    /* ... which left it Free: the same WQE with a good page binds it. */
    qtest_writeq(qrs_qts(l.d), f.pbl_addr, l.dst);
    f.wr_id = 0xe2;
    memcpy(&w, &f, sizeof(w));
    {
        LoopQp q;

        fr_spare_qp(&l, &q, ppd2, 0);
        loop_post_send(&l, &q, &w, 0, 0, 0);
        fr_expect(&l, 0xe2, RS_WR_REG_MR, RS_WC_SUCCESS);
        /* LOCAL_INV with a stale tag, then of an ordinary MR. */
        fr_post_op(&l, &q, 0xe3, RS_WR_LOCAL_INV, mr2, 0, 0, 0, 0, 0);
        fr_expect(&l, 0xe3, 0, RS_WC_LOC_PROT_ERR);
        g_assert_cmpuint(qp_state(l.d, q.h), ==, RS_QPS_ERR);
        RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DESTROY_QP, q.h));
    }
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xe4;
    w.opcode = RS_WR_LOCAL_INV;
    w.flags = RS_WQE_F_SIGNALED;
    w.imm_or_inv = l.src_key;
    fr_fail_on_spare(&l, l.pd, 0, &w, RS_WC_LOC_PROT_ERR);
    /* Privileged operations on a user QP (doorbell page 1, user PD). */
    w.wr_id = 0xe5;
    w.imm_or_inv = k3;
    fr_fail_on_spare(&l, upd, 1, &w, RS_WC_LOC_QP_OP_ERR);
    memcpy(&w, &f, sizeof(w));
    w.wr_id = 0xe6;
    fr_fail_on_spare(&l, upd, 1, &w, RS_WC_LOC_QP_OP_ERR);
    /* The reserved lkey on a QP of a user PD, even on doorbell page 0. */
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xe7;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    {
        LoopQp q;
        struct rs_sge sge = { .addr = l.src, .length = 64,
                              .lkey = RS_LOCAL_DMA_LKEY };

        fr_spare_qp(&l, &q, upd, 0);
        qtest_memwrite(qrs_qts(l.d), q.c.sq_addr, &w, sizeof(w));
        qtest_memwrite(qrs_qts(l.d), q.c.sq_addr + sizeof(w), &sge,
                       sizeof(sge));
        q.sq_pi++;
        qrs_db_writel(l.d, 0, RS_DB_SQ, q.qpn | (q.sq_pi & 0xffff) << 16);
        fr_expect(&l, 0xe7, 0, RS_WC_LOC_PROT_ERR);
        g_assert_cmpuint(qp_state(l.d, q.h), ==, RS_QPS_ERR);
        RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DESTROY_QP, q.h));
    }

    /* The reserved lkey is never an rkey. */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    fr_post_op(&l, &l.a, 0xf8, RS_WR_RDMA_WRITE, 0, l.dst,
               RS_LOCAL_DMA_LKEY, l.src, 64, l.src_key);
    fr_expect(&l, 0xf8, 0, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l.d, l.dst, 0xee, LOOP_BUF));
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);

    /* A bound MR keeps its PD referenced; DEREG_MR releases it. */
    RS_ASSERT_STATUS(qrs_destroy(l.d, RS_CMD_DESTROY_PD, ppd2),
                     RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DEREG_MR, f.key));
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DESTROY_PD, ppd2));
    assert_alive(l.d);
}

/* A kernel UD QP's WQE with the address vector by DMA address. */
static void av_addr_post(Loop *l, LoopQp *q, uint64_t wr_id, uint64_t av,
                         uint32_t dqpn, uint64_t addr, uint32_t len)
{
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id, .opcode = RS_WR_SEND,
        .flags = RS_WQE_F_SIGNALED | RS_WQE_F_AV_ADDR, .num_sge = 1,
        .swap = av, .ah = 0xdead, .remote_qpn = dqpn,
        .remote_qkey = STD_QKEY,
    };

    loop_post_send(l, q, &w, addr, len, RS_LOCAL_DMA_LKEY);
}

static void test_engine_ud_av_addr(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    Loop l;
    LoopQp u, v, x;
    struct rs_ah_attr a;
    struct rs_cqe cqe;
    uint64_t av, bad_av, rbuf;
    uint32_t upd;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    RS_ASSERT_OK(qrs_create_pd(l.d, &upd));
    memset(&u, 0, sizeof(u));
    memset(&v, 0, sizeof(v));
    memset(&x, 0, sizeof(x));
    qp_template(l.d, &u.c, RS_QPT_UD, l.pd, l.cq.h, l.cq.h);
    qp_template(l.d, &v.c, RS_QPT_UD, l.pd, l.cq.h, l.cq.h);
    qp_template(l.d, &x.c, RS_QPT_UD, upd, l.cq.h, l.cq.h);
    u.h = new_qp(l.d, &u.c);
    v.h = new_qp(l.d, &v.c);
    x.h = new_qp(l.d, &x.c);
    u.qpn = HINDEX(u.h);
    v.qpn = HINDEX(v.h);
    x.qpn = HINDEX(x.h);
    qp_walk(l.d, u.h, RS_QPT_UD, RS_QPS_RTS);
    qp_walk(l.d, v.h, RS_QPT_UD, RS_QPS_RTS);
    qp_walk(l.d, x.h, RS_QPT_UD, RS_QPS_RTS);

    memset(&a, 0, sizeof(a));
    gid_v4(a.dgid, 10, 0, 0, 1);                /* ourselves: loopback */
    a.hop_limit = 64;
    av = qrs_alloc_zeroed(l.d, sizeof(a));
    qtest_memwrite(qrs_qts(l.d), av, &a, sizeof(a));
    a.gid_index = 5;                            /* not populated */
    bad_av = qrs_alloc_zeroed(l.d, sizeof(a));
    qtest_memwrite(qrs_qts(l.d), bad_av, &a, sizeof(a));

    /* The AH handle is ignored: the vector in memory addresses v. */
    rbuf = loop_buf(l.d, PAGE);
    fill(l.d, rbuf, 0xee, PAGE);
    loop_pattern(&l, l.src, 300, 0x3c);
    loop_post_recv(&l, &v, 0xb1, rbuf, PAGE, RS_LOCAL_DMA_LKEY);
    av_addr_post(&l, &u, 0xa1, av, v.qpn, l.src, 300);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, RS_GRH_BYTES + 300);
    g_assert_cmpuint(cqe.src_qp, ==, u.qpn);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, rbuf + RS_GRH_BYTES, 300);
    g_assert_true(is_filled(l.d, rbuf + RS_GRH_BYTES + 300, 0xee,
                            PAGE - RS_GRH_BYTES - 300));

    /* A vector naming an unpopulated GID, or not in guest RAM. */
    av_addr_post(&l, &u, 0xa2, bad_av, v.qpn, l.src, 16);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa2);
    g_assert_cmpuint(cqe.status, ==, RS_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(qp_state(l.d, u.h), ==, RS_QPS_ERR);
    av_addr_post(&l, &v, 0xa3, 1ull << 40, u.qpn, l.src, 16);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa3);
    g_assert_cmpuint(cqe.status, ==, RS_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(qp_state(l.d, v.h), ==, RS_QPS_ERR);

    /* Only privileged QPs may address by vector. */
    {
        struct rs_send_wqe_ctrl w = {
            .wr_id = 0xa4, .opcode = RS_WR_SEND,
            .flags = RS_WQE_F_SIGNALED | RS_WQE_F_AV_ADDR, .num_sge = 1,
            .swap = av, .remote_qpn = v.qpn, .remote_qkey = STD_QKEY,
        };

        loop_post_send(&l, &x, &w, l.src, 16, l.src_key);
    }
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xa4);
    g_assert_cmpuint(cqe.status, ==, RS_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(qp_state(l.d, x.h), ==, RS_QPS_ERR);
    assert_alive(l.d);
}

/* fe80::5054:ff:fe12:34<host>, a link-local RoCEv2 GID. */
static void gid_v6(uint8_t gid[16], uint8_t host)
{
    static const uint8_t ll[16] = {
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34,
    };

    memcpy(gid, ll, 16);
    gid[15] = host;
}

/*
 * RoCEv2 over IPv6: two RC QPs over a link-local GID (loopback) and a UD
 * datagram whose receive GRH area is the IPv6 header itself.
 */
static void test_engine_ipv6(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_cmd_add_gid g = {
        .index = 2, .type = RS_GID_ROCE_V2_IPV6, .vni = 0,
    };
    struct rs_cmd_create_session sc;
    struct rs_send_wqe_ctrl w;
    struct rs_ah_attr a;
    struct rs_qp_attr qa;
    struct rs_cqe cqe;
    uint8_t grh[RS_GRH_BYTES];
    LoopQp u, v;
    uint32_t s = 0, got = ~0u, grp;
    uint64_t av, rbuf;
    Loop l;
    int i;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    gid_v6(g.gid, 0x70);
    RS_ASSERT_OK(qrs_add_gid(l.d, &g, &got));

    /* A second RC pair whose session and AV use the IPv6 GID. */
    session_template(&sc, 2, 49200);
    gid_v6(sc.dst_ip, 0x70);
    RS_ASSERT_OK(qrs_create_session(l.d, &sc, &s));
    grp = new_group(l.d, RS_GROUP_ROUND_ROBIN, s, 0);
    memset(&u, 0, sizeof(u));
    memset(&v, 0, sizeof(v));
    qp_template(l.d, &u.c, RS_QPT_RC, l.pd, l.cq.h, l.cq.h);
    qp_template(l.d, &v.c, RS_QPT_RC, l.pd, l.cq.h, l.cq.h);
    u.h = new_qp(l.d, &u.c);
    v.h = new_qp(l.d, &v.c);
    u.qpn = HINDEX(u.h);
    v.qpn = HINDEX(v.h);
    for (i = 0; i < 2; i++) {
        LoopQp *q = i ? &v : &u;
        static const uint8_t path[] = {
            RS_QPS_RESET, RS_QPS_INIT, RS_QPS_RTR, RS_QPS_RTS,
        };
        int j;

        for (j = 1; j < ARRAY_SIZE(path); j++) {
            uint32_t mask = std_mask(RS_QPT_RC, path[j - 1], path[j]);

            std_attr(&qa, path[j - 1], path[j]);
            gid_v6(qa.ah.dgid, 0x70);
            qa.ah.gid_index = 2;
            qa.dest_qp_num = i ? u.qpn : v.qpn;
            qa.rq_psn = qa.sq_psn = LOOP_PSN;
            if (path[j] == RS_QPS_RTR) {
                qa.session_group = grp;
                mask |= RS_QP_ATTR_SESSION_GROUP;
            }
            RS_ASSERT_OK(qrs_modify_qp(l.d, q->h, &qa, mask));
        }
    }

    /* SEND of 3000 bytes (3 packets) and RDMA READ back, over IPv6. */
    loop_pattern(&l, l.src, 3000, 0x61);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_recv(&l, &v, 0xb1, l.dst, LOOP_BUF, RS_LOCAL_DMA_LKEY);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa1;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    loop_post_send(&l, &u, &w, l.src, 3000, RS_LOCAL_DMA_LKEY);
    fr_expect(&l, 0xb1, RS_WR_RECV, RS_WC_SUCCESS);
    fr_expect(&l, 0xa1, RS_WR_SEND, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst, 3000);
    g_assert_true(is_filled(l.d, l.dst + 3000, 0xee, LOOP_BUF - 3000));
    fill(l.d, l.src, 0, LOOP_BUF);
    fr_post_op(&l, &u, 0xa2, RS_WR_RDMA_READ, 0, l.dst, l.dst_key, l.src,
               3000, RS_LOCAL_DMA_LKEY);
    fr_expect(&l, 0xa2, RS_WR_RDMA_READ, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst, 3000);

    /* UD from the IPv6 GID: the GRH area holds the IPv6 header. */
    memset(&u, 0, sizeof(u));
    memset(&v, 0, sizeof(v));
    qp_template(l.d, &u.c, RS_QPT_UD, l.pd, l.cq.h, l.cq.h);
    qp_template(l.d, &v.c, RS_QPT_UD, l.pd, l.cq.h, l.cq.h);
    u.h = new_qp(l.d, &u.c);
    v.h = new_qp(l.d, &v.c);
    u.qpn = HINDEX(u.h);
    v.qpn = HINDEX(v.h);
    qp_walk(l.d, u.h, RS_QPT_UD, RS_QPS_RTS);
    qp_walk(l.d, v.h, RS_QPT_UD, RS_QPS_RTS);
    memset(&a, 0, sizeof(a));
    gid_v6(a.dgid, 0x70);
    a.gid_index = 2;
    a.hop_limit = 1;
    a.traffic_class = 0x28;
    a.flow_label = 0x12345;
    av = qrs_alloc_zeroed(l.d, sizeof(a));
    qtest_memwrite(qrs_qts(l.d), av, &a, sizeof(a));
    rbuf = loop_buf(l.d, PAGE);
    fill(l.d, rbuf, 0xee, PAGE);
    loop_pattern(&l, l.src, 200, 0x17);
    loop_post_recv(&l, &v, 0xb3, rbuf, PAGE, RS_LOCAL_DMA_LKEY);
    av_addr_post(&l, &u, 0xa3, av, v.qpn, l.src, 200);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb3);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, RS_GRH_BYTES + 200);
    fr_expect(&l, 0xa3, RS_WR_SEND, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, rbuf + RS_GRH_BYTES, 200);
    qtest_memread(qrs_qts(l.d), rbuf, grh, sizeof(grh));
    /* version 6, traffic class 0x28, flow label 0x12345 */
    g_assert_cmphex(grh[0], ==, 0x62);
    g_assert_cmphex(grh[1], ==, 0x81);
    g_assert_cmphex(grh[2], ==, 0x23);
    g_assert_cmphex(grh[3], ==, 0x45);
    /* payload length: UDP 8 + BTH 12 + DETH 8 + 200 + ICRC 4 */
    g_assert_cmpuint(grh[4] << 8 | grh[5], ==, 8 + 12 + 8 + 200 + 4);
    g_assert_cmpuint(grh[6], ==, 17);           /* next header: UDP */
    g_assert_cmpuint(grh[7], ==, 1);            /* hop limit */
    g_assert_cmpmem(grh + 8, 16, g.gid, 16);
    g_assert_cmpmem(grh + 24, 16, g.gid, 16);
    assert_alive(l.d);
}

/* Stale tags and remote invalidation of keys it may not invalidate. */
static void test_engine_remote_inv(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    Loop l;
    struct rs_cqe cqe;
    uint32_t key, k1;
    uint64_t pbl;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    key = fr_alloc(&l, l.pd, 2);
    pbl = make_pbl(l.d, l.dst, PAGE, 2);
    k1 = (key & ~RS_MKEY_TAG_MASK) | ((key + 1) & RS_MKEY_TAG_MASK);
    fr_post_reg(&l, &l.b, 0xf1, k1, FR_IOVA, 2 * PAGE, pbl, 2,
                RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE);
    fr_expect(&l, 0xf1, RS_WR_REG_MR, RS_WC_SUCCESS);

    /* The allocation's key (the old tag) does not reach the bound MR. */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_recv(&l, &l.b, 0xb1, l.dst + 3 * PAGE, 100, l.dst_key);
    fr_post_op(&l, &l.a, 0xf2, RS_WR_SEND_INV, key, 0, 0, l.src, 16,
               l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_LOC_ACCESS_ERR);
    fr_expect(&l, 0xf2, 0, RS_WC_REM_INV_REQ_ERR);
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_ERR);
    assert_alive(l.d);
}

/* ------------------------------------------------------------------ */
/* RC reliability over loopback: send window, loss, RNR, retry limits  */
/* ------------------------------------------------------------------ */

#define REL_BUF         (24 * PAGE)     /* 96 messages' worth at MTU 1024 */
#define REL_TIMEOUT_US  (60 * G_USEC_PER_SEC)
#define REL_MS          1000000LL            /* virtual ns */
#define REL_S           (1000 * REL_MS)

typedef struct RelAttr {
    uint8_t rnr_retry;
    uint8_t retry_cnt;
    uint8_t min_rnr_timer;
    uint32_t a_dest;            /* 0: QP b */
} RelAttr;

static void rel_connect(Loop *l, LoopQp *q, uint32_t peer, const RelAttr *r)
{
    static const uint8_t path[] = {
        RS_QPS_RESET, RS_QPS_INIT, RS_QPS_RTR, RS_QPS_RTS,
    };
    struct rs_qp_attr a;
    int i;

    for (i = 1; i < ARRAY_SIZE(path); i++) {
        uint32_t mask = std_mask(RS_QPT_RC, path[i - 1], path[i]);

        std_attr(&a, path[i - 1], path[i]);
        gid_v4(a.ah.dgid, 10, 0, 0, 1);
        a.dest_qp_num = peer;
        a.rq_psn = a.sq_psn = LOOP_PSN;
        a.rnr_retry = r->rnr_retry;
        a.retry_cnt = r->retry_cnt;
        a.min_rnr_timer = r->min_rnr_timer;
        if (path[i] == RS_QPS_RTR) {
            a.session_group = l->group;
            mask |= RS_QP_ATTR_SESSION_GROUP;
        }
        RS_ASSERT_OK(qrs_modify_qp(l->d, q->h, &a, mask));
    }
}

/* loop_setup() with RC attributes of the test's choice and big buffers. */
static void rel_setup(Loop *l, void *obj, const RelAttr *r)
{
    struct rs_cmd_create_session sc;
    uint32_t s = 0;

    memset(l, 0, sizeof(*l));
    l->d = rs_setup(obj);
    add_gid_v4(l->d, 0, 1);                     /* 10.0.0.1 */
    l->pd = new_pd(l->d);
    eng_cq_init(l->d, &l->cq, LOOP_CQ_LOG);
    session_template(&sc, 0, 49152);
    gid_v4(sc.dst_ip, 10, 0, 0, 1);             /* ourselves: loopback */
    RS_ASSERT_OK(qrs_create_session(l->d, &sc, &s));
    l->group = new_group(l->d, RS_GROUP_ROUND_ROBIN, s, 0);
    qp_template(l->d, &l->a.c, RS_QPT_RC, l->pd, l->cq.h, l->cq.h);
    qp_template(l->d, &l->b.c, RS_QPT_RC, l->pd, l->cq.h, l->cq.h);
    l->a.h = new_qp(l->d, &l->a.c);
    l->b.h = new_qp(l->d, &l->b.c);
    l->a.qpn = HINDEX(l->a.h);
    l->b.qpn = HINDEX(l->b.h);
    rel_connect(l, &l->a, r->a_dest ? r->a_dest : l->b.qpn, r);
    rel_connect(l, &l->b, l->a.qpn, r);
    l->src = loop_buf(l->d, REL_BUF);
    l->dst = loop_buf(l->d, REL_BUF);
    l->src_key = loop_mr(l, l->src, REL_BUF);
    l->dst_key = loop_mr(l, l->dst, REL_BUF);
}

/*
 * The next CQE, stepping the virtual clock step_ns at a time so that
 * retransmission and RNR timers run; false if none came within max_ns.
 */
static bool rel_poll(Loop *l, struct rs_cqe *cqe, int64_t step_ns,
                     int64_t max_ns)
{
    gint64 end = g_get_monotonic_time() + REL_TIMEOUT_US;
    int64_t waited = 0;

    while (!eng_cq_peek(l->d, &l->cq, cqe)) {
        if (waited >= max_ns) {
            return false;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(qrs_qts(l->d), step_ns);
        waited += step_ns;
    }
    l->cq.ci++;
    qrs_db_writel(l->d, 0, RS_DB_CQ_CI,
                  HINDEX(l->cq.h) | (l->cq.ci & 0xffff) << 16);
    return true;
}

static void rel_expect(Loop *l, uint64_t wr_id, uint8_t status,
                       uint32_t qpn)
{
    struct rs_cqe cqe;

    g_assert_true(rel_poll(l, &cqe, REL_MS, 100 * REL_S));
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    g_assert_cmpuint(cqe.qpn, ==, qpn);
}

static void rel_wqe(struct rs_send_wqe_ctrl *w, uint64_t wr_id, uint8_t op,
                    uint64_t remote, uint32_t rkey)
{
    memset(w, 0, sizeof(*w));
    w->wr_id = wr_id;
    w->opcode = op;
    w->flags = RS_WQE_F_SIGNALED;
    w->num_sge = 1;
    w->remote_addr = remote;
    w->rkey = rkey;
}

/*
 * WRITE, SEND and READ of messages two to three times the send window
 * (x-window=32 packets at MTU 1024, rel_window_before()), several in
 * flight, byte by byte.
 */
static void rel_big_messages(Loop *l)
{
    static const uint32_t wlen = 80000, slen = 70001, rlen = 77777;
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    int i;

    /* Two WRITEs back to back, the second at an odd offset. */
    loop_pattern(l, l->src, REL_BUF, 0x21);
    fill(l->d, l->dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xc0, RS_WR_RDMA_WRITE, l->dst + 8, l->dst_key);
    loop_post_send(l, &l->a, &w, l->src, wlen, l->src_key);
    rel_wqe(&w, 0xc1, RS_WR_RDMA_WRITE, l->dst + wlen + 8 + 3,
            l->dst_key);
    loop_post_send(l, &l->a, &w, l->src + 5, 9000, l->src_key);
    rel_expect(l, 0xc0, RS_WC_SUCCESS, l->a.qpn);
    rel_expect(l, 0xc1, RS_WC_SUCCESS, l->a.qpn);
    loop_assert_same(l, l->src, l->dst + 8, wlen);
    loop_assert_same(l, l->src + 5, l->dst + wlen + 11, 9000);
    g_assert_true(is_filled(l->d, l->dst, 0xee, 8));
    g_assert_true(is_filled(l->d, l->dst + wlen + 8, 0xee, 3));
    g_assert_true(is_filled(l->d, l->dst + wlen + 9011, 0xee,
                            REL_BUF - wlen - 9011));

    /* SEND of 70001 bytes into one receive WQE, then a small one. */
    loop_pattern(l, l->src, REL_BUF, 0x37);
    fill(l->d, l->dst, 0xee, REL_BUF);
    loop_post_recv(l, &l->b, 0xd0, l->dst, REL_BUF, l->dst_key);
    loop_post_recv(l, &l->b, 0xd1, l->dst + slen, 100, l->dst_key);
    rel_wqe(&w, 0xc2, RS_WR_SEND, 0, 0);
    loop_post_send(l, &l->a, &w, l->src, slen, l->src_key);
    rel_wqe(&w, 0xc3, RS_WR_SEND, 0, 0);
    loop_post_send(l, &l->a, &w, l->src + 1, 100, l->src_key);
    for (i = 0; i < 4; i++) {
        g_assert_true(rel_poll(l, &cqe, REL_MS,
                               100 * REL_S));
        g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
        switch (cqe.wr_id) {
        case 0xd0:
            g_assert_cmpuint(cqe.byte_len, ==, slen);
            g_assert_cmpuint(cqe.qpn, ==, l->b.qpn);
            break;
        case 0xd1:
            g_assert_cmpuint(cqe.byte_len, ==, 100);
            break;
        case 0xc2:
        case 0xc3:
            g_assert_cmpuint(cqe.qpn, ==, l->a.qpn);
            break;
        default:
            g_assert_not_reached();
        }
    }
    loop_assert_same(l, l->src, l->dst, slen);
    loop_assert_same(l, l->src + 1, l->dst + slen, 100);
    g_assert_true(is_filled(l->d, l->dst + slen + 100, 0xee,
                            REL_BUF - slen - 100));

    /* READ of 77777 bytes: several READ requests, one completion. */
    loop_pattern(l, l->dst, REL_BUF, 0x4d);
    fill(l->d, l->src, 0, REL_BUF);
    rel_wqe(&w, 0xc4, RS_WR_RDMA_READ, l->dst + 1000, l->dst_key);
    loop_post_send(l, &l->a, &w, l->src + 7, rlen, l->src_key);
    g_assert_true(rel_poll(l, &cqe, REL_MS, 100 * REL_S));
    g_assert_cmphex(cqe.wr_id, ==, 0xc4);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, rlen);
    loop_assert_same(l, l->src + 7, l->dst + 1000, rlen);
    g_assert_true(is_filled(l->d, l->src, 0, 7));
    g_assert_true(is_filled(l->d, l->src + 7 + rlen, 0,
                            REL_BUF - 7 - rlen));

    /* A WRITE after the READ: the QPs are still in order. */
    fill(l->d, l->dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xc5, RS_WR_RDMA_WRITE, l->dst, l->dst_key);
    loop_post_send(l, &l->a, &w, l->src, 40000, l->src_key);
    rel_expect(l, 0xc5, RS_WC_SUCCESS, l->a.qpn);
    loop_assert_same(l, l->src, l->dst, 40000);
    g_assert_cmpuint(qp_state(l->d, l->a.h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(l->d, l->b.h), ==, RS_QPS_RTS);
}

static void test_engine_rc_window(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 6, .retry_cnt = 7, .min_rnr_timer = 12 };
    Loop l;

    rel_setup(&l, obj, &r);
    rel_big_messages(&l);
    assert_alive(l.d);
}

static void *rel_drop_before(GString *cmd_line, void *arg)
{
    g_string_append_printf(cmd_line, " -global rdma-session.x-drop-tx=%u ",
                           GPOINTER_TO_UINT(arg));
    return arg;
}

/* x-window=32 for rel_big_messages(), and x-drop-tx=arg if not 0. */
static void *rel_window_before(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line, " -global rdma-session.x-window=32 ");
    return arg ? rel_drop_before(cmd_line, arg) : arg;
}

/*
 * The same with a send window of 512 packets, wider than the test's
 * messages: the congestion window, not x-window, keeps the bursts small.
 */
static void *rel_drop_wide_before(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line, " -global rdma-session.x-window=512 ");
    return rel_drop_before(cmd_line, arg);
}

/* Every Nth RoCE frame lost (requests, ACKs, READ responses alike). */
static void test_engine_rc_loss(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 6, .retry_cnt = 7, .min_rnr_timer = 12 };
    Loop l;

    rel_setup(&l, obj, &r);
    rel_big_messages(&l);
    rel_big_messages(&l);
    assert_alive(l.d);
}

/* A SEND before its RECV: RNR NAKs, then it completes once posted. */
static void test_engine_rc_rnr(void *obj, void *data, QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 7, .retry_cnt = 7, .min_rnr_timer = 14 };
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    Loop l;

    rel_setup(&l, obj, &r);
    loop_pattern(&l, l.src, 5000, 0x66);
    fill(l.d, l.dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xe0, RS_WR_SEND, 0, 0);
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    /* 200 ms, about 150 RNR timers (1.28 ms): nothing completes. */
    g_assert_false(rel_poll(&l, &cqe, REL_MS, 200 * REL_MS));
    g_assert_true(is_filled(l.d, l.dst, 0xee, REL_BUF));
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_RTS);
    loop_post_recv(&l, &l.b, 0xe1, l.dst, REL_BUF, l.dst_key);
    g_assert_true(rel_poll(&l, &cqe, REL_MS, 10 * REL_MS * 100));
    g_assert_cmphex(cqe.wr_id, ==, 0xe1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 5000);
    rel_expect(&l, 0xe0, RS_WC_SUCCESS, l.a.qpn);
    loop_assert_same(&l, l.src, l.dst, 5000);
    g_assert_true(is_filled(l.d, l.dst + 5000, 0xee, REL_BUF - 5000));

    /* WRITE with immediate needs a receive WQE too. */
    rel_wqe(&w, 0xe2, RS_WR_RDMA_WRITE_IMM, l.dst + 6000, l.dst_key);
    w.imm_or_inv = 0x0badcafe;
    loop_post_send(&l, &l.a, &w, l.src, 3000, l.src_key);
    g_assert_false(rel_poll(&l, &cqe, REL_MS, 50 * REL_MS));
    loop_post_recv(&l, &l.b, 0xe3, 0, 0, l.dst_key);
    g_assert_true(rel_poll(&l, &cqe, REL_MS, 10 * REL_MS * 100));
    g_assert_cmphex(cqe.wr_id, ==, 0xe3);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0x0badcafe);
    rel_expect(&l, 0xe2, RS_WC_SUCCESS, l.a.qpn);
    loop_assert_same(&l, l.src, l.dst + 6000, 3000);
    assert_alive(l.d);
}

/* rnr_retry 2: the third RNR NAK ends the SEND and the QP. */
static void test_engine_rc_rnr_exceeded(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 2, .retry_cnt = 7, .min_rnr_timer = 14 };
    struct rs_send_wqe_ctrl w;
    Loop l;

    rel_setup(&l, obj, &r);
    fill(l.d, l.dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xe4, RS_WR_SEND, 0, 0);
    loop_post_send(&l, &l.a, &w, l.src, 3000, l.src_key);
    rel_expect(&l, 0xe4, RS_WC_RNR_RETRY_EXC_ERR, l.a.qpn);
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_RTS);
    g_assert_true(is_filled(l.d, l.dst, 0xee, REL_BUF));
    assert_alive(l.d);
}

/* No responder (a QPN nobody has): retry_cnt 2 timeouts, then the error. */
static void test_engine_rc_retry_exceeded(void *obj, void *data,
                                          QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 7, .retry_cnt = 2, .min_rnr_timer = 12,
                  .a_dest = 200 };
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    Loop l;

    rel_setup(&l, obj, &r);
    fill(l.d, l.dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xe5, RS_WR_RDMA_WRITE, l.dst, l.dst_key);
    loop_post_send(&l, &l.a, &w, l.src, 50000, l.src_key);
    /* Three local ACK timeouts of 67 ms (timeout 14) at least. */
    g_assert_false(rel_poll(&l, &cqe, REL_MS, 150 * REL_MS));
    rel_expect(&l, 0xe5, RS_WC_RETRY_EXC_ERR, l.a.qpn);
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_true(is_filled(l.d, l.dst, 0xee, REL_BUF));
    assert_alive(l.d);
}

/*
 * The give-up's completion interrupts through an MSI-X vector the guest
 * pointed at the device's own CTRL register, with a message that would
 * disable it.  The engine timer that gives up holds the device's
 * re-entrancy guard, so that write is refused as any DMA into the
 * device is, and the device carries on with the completion posted.
 */
static void test_engine_rc_retry_msix_reentry(void *obj, void *data,
                                              QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 7, .retry_cnt = 0, .min_rnr_timer = 12,
                  .a_dest = 200 };
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    Loop l;

    rel_setup(&l, obj, &r);
    qrs_msix_set_vector(l.d, RS_MSIX_COMP_VECTOR0, l.d->bar0.addr + A_RS_CTRL,
                        0, false);
    qrs_db_writel(l.d, 0, RS_DB_CQ_ARM, HINDEX(l.cq.h) | RS_DB_CQ_ARM_NEXT);
    rel_wqe(&w, 0xe6, RS_WR_RDMA_WRITE, l.dst, l.dst_key);
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    g_assert_true(rel_poll(&l, &cqe, REL_MS, 10 * REL_S));
    g_assert_cmphex(cqe.wr_id, ==, 0xe6);
    g_assert_cmpuint(cqe.status, ==, RS_WC_RETRY_EXC_ERR);
    g_assert_cmphex(qrs_readl(l.d, A_RS_CTRL), !=, 0);
    assert_alive(l.d);
}

/*
 * The retry timeout doubles for each retry without progress (x-ack-backoff,
 * 3 by default): with timeout 14 (67 ms) and retry_cnt 2 the QP gives up
 * after 67 + 134 + 268 ms, not after 3 x 67 ms.
 */
static void test_engine_rc_retry_backoff(void *obj, void *data,
                                         QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 7, .retry_cnt = 2, .min_rnr_timer = 12,
                  .a_dest = 200 };
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    Loop l;

    rel_setup(&l, obj, &r);
    fill(l.d, l.dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xe6, RS_WR_RDMA_WRITE, l.dst, l.dst_key);
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    g_assert_false(rel_poll(&l, &cqe, REL_MS, 440 * REL_MS));
    g_assert_true(rel_poll(&l, &cqe, REL_MS, 100 * REL_MS));
    g_assert_cmphex(cqe.wr_id, ==, 0xe6);
    g_assert_cmpuint(cqe.status, ==, RS_WC_RETRY_EXC_ERR);
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_true(is_filled(l.d, l.dst, 0xee, REL_BUF));
    assert_alive(l.d);
}

/*
 * The local ACK timer starts when a request leaves with nothing
 * outstanding: after a second of idleness a request whose responder went
 * away still waits one whole timeout (retry_cnt 0: then fails) instead
 * of timing out at the first tick.
 */
static void test_engine_rc_timer_after_idle(void *obj, void *data,
                                            QGuestAllocator *alloc)
{
    RelAttr r = { .rnr_retry = 7, .retry_cnt = 0, .min_rnr_timer = 12 };
    struct rs_send_wqe_ctrl w;
    struct rs_qp_attr a;
    struct rs_cqe cqe;
    Loop l;

    rel_setup(&l, obj, &r);
    /* (the engine reads a zero progress time as "not set yet") */
    qtest_clock_step(qrs_qts(l.d), 5 * REL_MS);
    rel_wqe(&w, 0xe7, RS_WR_RDMA_WRITE, l.dst, l.dst_key);
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    rel_expect(&l, 0xe7, RS_WC_SUCCESS, l.a.qpn);
    /* idle for a second of virtual time, then the responder stops */
    g_assert_false(rel_poll(&l, &cqe, 10 * REL_MS, REL_S));
    std_attr(&a, RS_QPS_RTS, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_modify_qp(l.d, l.b.h, &a, RS_QP_ATTR_STATE));
    fill(l.d, l.dst, 0xee, REL_BUF);
    rel_wqe(&w, 0xe8, RS_WR_RDMA_WRITE, l.dst, l.dst_key);
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    g_assert_false(rel_poll(&l, &cqe, REL_MS, 60 * REL_MS));
    rel_expect(&l, 0xe8, RS_WC_RETRY_EXC_ERR, l.a.qpn);
    g_assert_true(is_filled(l.d, l.dst, 0xee, REL_BUF));
    assert_alive(l.d);
}

/* ------------------------------------------------------------------ */
/* Reset                                                               */
/* ------------------------------------------------------------------ */

typedef struct ResetObjects {
    uint32_t pd, cq, qp, lkey, ah, session, group;
} ResetObjects;

static void reset_make_objects(QRdmaSession *d, ResetObjects *o)
{
    struct rs_cmd_create_qp c;
    struct rs_cmd_reg_mr mr = { 0 };
    struct rs_cmd_create_ah ah;
    uint64_t page = qrs_alloc_zeroed(d, PAGE);

    add_gid_v4(d, 0, 1);
    o->pd = new_pd(d);
    g_assert_cmphex(o->pd, ==, HANDLE(0, 1));
    o->cq = new_cq(d, 4);
    g_assert_cmphex(o->cq, ==, HANDLE(0, 1));
    o->session = new_session(d, 0, 49152);
    g_assert_cmphex(o->session, ==, HANDLE(0, 1));
    o->group = new_group(d, RS_GROUP_ROUND_ROBIN, o->session, 0);
    g_assert_cmphex(o->group, ==, HANDLE(0, 1));
    qp_template(d, &c, RS_QPT_RC, o->pd, o->cq, o->cq);
    c.session_group = o->group;
    o->qp = new_qp(d, &c);
    g_assert_cmphex(o->qp, ==, HANDLE(0, 2));
    qp_walk(d, o->qp, RS_QPT_RC, RS_QPS_RTS);
    mr.length = PAGE;
    mr.npages = 1;
    mr.pbl_addr = make_pbl(d, page, PAGE, 1);
    mr.pd = o->pd;
    mr.page_shift = 12;
    mr.access = STD_ACCESS;
    o->lkey = reg_mr_ok(d, &mr);
    g_assert_cmphex(o->lkey >> RS_MKEY_INDEX_SHIFT, ==, 1);
    ah_template(&ah, o->pd, 0);
    RS_ASSERT_OK(qrs_create_ah(d, &ah, &o->ah));
    g_assert_cmphex(o->ah, ==, HANDLE(0, 1));
}

static void reset_check_gone(QRdmaSession *d, ResetObjects *o)
{
    struct rs_qp_attr a;

    RS_ASSERT_STATUS(qrs_query_qp(d, o->qp, &a), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_QP, o->qp),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEREG_MR, o->lkey),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_AH, o->ah),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, o->group),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION, o->session),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_CQ, o->cq),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, o->pd),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 0), RS_STATUS_BAD_HANDLE);

    /* Tables are back at power-on: first index, generation 0. */
    g_assert_cmphex(new_pd(d), ==, HANDLE(0, 1));
    add_gid_v4(d, 0, 1);
}

static void test_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    QTestState *qts = qrs_qts(d);
    ResetObjects o;
    int how;

    for (how = 0; how < 3; how++) {
        reset_make_objects(d, &o);
        switch (how) {
        case 0:
            qrs_writel(d, A_RS_CTRL, R_RS_CTRL_RESET_MASK);
            break;
        case 1:
            qrs_writel(d, A_RS_CTRL, 0);
            break;
        case 2:
            /* System reset: config space is reset, map the BARs again. */
            qtest_system_reset(qts);
            d->bar0 = qpci_iomap(&d->dev, RS_BAR_REGS, NULL);
            d->bar2 = qpci_iomap(&d->dev, RS_BAR_DOORBELL, NULL);
            qpci_device_enable(&d->dev);
            qpci_msix_enable(&d->dev);
            break;
        }
        assert_power_on_regs(d, DEF_DB_PAGES, DEF_NUM_MSIX);
        rs_setup(d);
        reset_check_gone(d, &o);
        qrs_reset(d);
        assert_power_on_regs(d, DEF_DB_PAGES, DEF_NUM_MSIX);
        rs_setup(d);
    }
    assert_alive(d);
}

/*
 * Function level reset through the PCIe capability's device control, as
 * the guest's PCI core issues it: the function is back at power-on
 * (registers, admin queue, objects, LAN rings; in config space the
 * command register, the BARs and MSI-X are cleared) and works again once
 * it is set up again.
 */
static void test_flr(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    QPCIDevice *dev = &d->dev;
    uint8_t exp = qpci_find_capability(dev, PCI_CAP_ID_EXP, 0);
    uint8_t msix = qpci_find_capability(dev, PCI_CAP_ID_MSIX, 0);
    size_t ring = sizeof(struct rs_lan_desc) << 4;
    uint64_t lan = qrs_alloc_zeroed(d, 2 * ring);
    ResetObjects o;
    uint16_t ctl;

    g_assert_cmphex(exp, !=, 0);
    g_assert_cmphex(qpci_config_readl(dev, exp + PCI_EXP_DEVCAP) &
                    PCI_EXP_DEVCAP_FLR, ==, PCI_EXP_DEVCAP_FLR);

    reset_make_objects(d, &o);
    RS_ASSERT_OK(qrs_create_lan_queue(d, RS_LAN_TXQ, lan, 4, 0, NULL));
    RS_ASSERT_OK(qrs_create_lan_queue(d, RS_LAN_RXQ, lan + ring, 4, 0, NULL));

    ctl = qpci_config_readw(dev, exp + PCI_EXP_DEVCTL);
    qpci_config_writew(dev, exp + PCI_EXP_DEVCTL,
                       ctl | PCI_EXP_DEVCTL_BCR_FLR);
    /* The initiate bit always reads 0. */
    g_assert_cmphex(qpci_config_readw(dev, exp + PCI_EXP_DEVCTL), ==, ctl);
    g_assert_cmphex(qpci_config_readw(dev, PCI_COMMAND) &
                    (PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER), ==, 0);
    g_assert_cmphex(qpci_config_readl(dev, PCI_BASE_ADDRESS_0) &
                    PCI_BASE_ADDRESS_MEM_MASK, ==, 0);
    g_assert_cmphex(qpci_config_readw(dev, msix + PCI_MSIX_FLAGS) &
                    PCI_MSIX_FLAGS_ENABLE, ==, 0);

    /* Set up again as a driver does after the reset. */
    d->bar0 = qpci_iomap(dev, RS_BAR_REGS, NULL);
    d->bar2 = qpci_iomap(dev, RS_BAR_DOORBELL, NULL);
    qpci_device_enable(dev);
    qpci_msix_enable(dev);
    assert_power_on_regs(d, DEF_DB_PAGES, DEF_NUM_MSIX);
    rs_setup(d);
    reset_check_gone(d, &o);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_RXQ),
                     RS_STATUS_BAD_HANDLE);

    /* The same objects can be made again. */
    qrs_reset(d);
    rs_setup(d);
    reset_make_objects(d, &o);
    RS_ASSERT_OK(qrs_create_lan_queue(d, RS_LAN_TXQ, lan, 4, 0, NULL));
    RS_ASSERT_OK(qrs_create_lan_queue(d, RS_LAN_RXQ, lan + ring, 4, 0, NULL));
    assert_alive(d);
}

/* ------------------------------------------------------------------ */
/* DMA containment                                                     */
/* ------------------------------------------------------------------ */

static void test_dma_containment(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    QTestState *qts = qrs_qts(d);
    uint64_t end = ram_end(d);
    uint64_t buf = qrs_alloc_zeroed(d, PAGE);
    uint64_t msix = msix_table_addr(d);
    uint8_t msix_before[DEF_NUM_MSIX * PCI_MSIX_ENTRY_SIZE];
    uint8_t msix_after[sizeof(msix_before)];
    uint32_t before[NREGS], after[NREGS];
    struct rs_cmd_create_qp c;
    struct rs_cmd_reg_mr mr = { 0 };
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe, acq_before, acq_after;
    struct rs_qp_attr a;
    uint32_t pd, cq, qp, index, ci;
    uint16_t pci_cmd;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    cq = new_cq(d, 4);
    qp_template(d, &c, RS_QPT_RC, pd, cq, cq);
    qp = new_qp(d, &c);
    qp_walk(d, qp, RS_QPT_RC, RS_QPS_INIT);

    /* A good response lands exactly where it was asked to. */
    fill(d, buf, 0xa5, PAGE);
    RS_ASSERT_OK(query_at(d, RS_CMD_QUERY_DEVICE, 0, buf + 64, 256));
    g_assert_true(is_filled(d, buf, 0xa5, 64));
    g_assert_true(is_filled(d, buf + 64 + sizeof(struct rs_device_attr),
                            0xa5, PAGE - 64 - sizeof(struct rs_device_attr)));
    g_assert_cmphex(qtest_readl(qts, buf + 64 +
                                offsetof(struct rs_device_attr, max_qp)),
                    ==, USABLE(DEF_MAX_QPS));

    /* Refused responses write nothing. */
    fill(d, buf, 0xa5, PAGE);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, buf + 64, 64),
                     RS_STATUS_BAD_SIZE);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, buf + 68, 128),
                     RS_STATUS_BAD_ALIGN);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_PORT, 2, buf + 64, 64),
                     RS_STATUS_BAD_PARAM);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_QP, qp + (1 << 24), buf + 64,
                              sizeof(struct rs_qp_attr)),
                     RS_STATUS_BAD_HANDLE);
    g_assert_true(is_filled(d, buf, 0xa5, PAGE));

    /* Straddling the end of RAM: not even the part in RAM is written. */
    fill(d, end - 64, 0x5a, 64);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, end - 64,
                              sizeof(struct rs_device_attr)),
                     RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_QP, qp, end - 64,
                              sizeof(struct rs_qp_attr)),
                     RS_STATUS_BAD_ADDR);
    g_assert_true(is_filled(d, end - 64, 0x5a, 64));

    /* The device's own registers are not memory. */
    dump_regs(d, before);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, d->bar0.addr,
                              sizeof(struct rs_device_attr)),
                     RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0,
                              d->bar0.addr + A_RS_CTRL,
                              sizeof(struct rs_device_attr)),
                     RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_PORT, 1,
                              d->bar0.addr + A_RS_ADMQ_BASE_LO,
                              sizeof(struct rs_port_attr)),
                     RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_QP, qp,
                              d->bar0.addr + A_RS_ADMQ_DB,
                              sizeof(struct rs_qp_attr)),
                     RS_STATUS_BAD_ADDR);
    dump_regs(d, after);
    /* ADMQ_CI moved by the four commands, nothing else. */
    g_assert_cmpuint(after[A_RS_ADMQ_CI / 4], ==,
                     before[A_RS_ADMQ_CI / 4] + 4);
    after[A_RS_ADMQ_CI / 4] = before[A_RS_ADMQ_CI / 4];
    assert_regs_equal(before, after);

    /* Nor are the MSI-X table and the doorbell BAR. */
    qtest_memread(qts, msix, msix_before, sizeof(msix_before));
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, msix,
                              sizeof(struct rs_device_attr)),
                     RS_STATUS_BAD_ADDR);
    qtest_memread(qts, msix, msix_after, sizeof(msix_after));
    g_assert_cmpmem(msix_before, sizeof(msix_before), msix_after,
                    sizeof(msix_after));
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, d->bar2.addr,
                              sizeof(struct rs_device_attr)),
                     RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(query_at(d, RS_CMD_QUERY_DEVICE, 0, FAR_ADDR,
                              sizeof(struct rs_device_attr)),
                     RS_STATUS_BAD_ADDR);

    /* Reads: MODIFY_QP attributes from BAR0, MR pages in BAR0. */
    cmd_init(&cmd, RS_CMD_MODIFY_QP);
    cmd.modify_qp.attr_addr = d->bar0.addr;
    cmd.modify_qp.handle = qp;
    cmd.modify_qp.attr_mask = RS_QP_ATTR_STATE;
    RS_ASSERT_STATUS(qrs_admin_exec(d, &cmd, NULL), RS_STATUS_BAD_ADDR);
    g_assert_cmpuint(qp_state(d, qp), ==, RS_QPS_INIT);
    mr.length = 2 * PAGE;
    mr.npages = 2;
    mr.pbl_addr = make_pbl(d, d->bar0.addr, 0, 2);
    mr.pd = pd;
    mr.page_shift = 12;
    mr.access = STD_ACCESS;
    RS_ASSERT_STATUS(qrs_reg_mr(d, &mr, NULL, NULL), RS_STATUS_BAD_ADDR);
    mr.pbl_addr = make_pbl(d, d->bar2.addr, PAGE, 2);
    RS_ASSERT_STATUS(qrs_reg_mr(d, &mr, NULL, NULL), RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(qrs_create_cq(d, msix & ~63ull, 1, 0, 0, NULL),
                     RS_STATUS_BAD_ADDR);
    dump_regs(d, after);
    g_assert_cmphex(after[A_RS_CTRL / 4], ==, R_RS_CTRL_ENABLE_MASK);
    g_assert_cmphex(after[A_RS_STATUS / 4], ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);
    assert_alive(d);

    /*
     * Bus mastering off: the device cannot read the command, so it
     * writes neither a response nor a completion.
     */
    fill(d, buf, 0xa5, PAGE);
    ci = qrs_readl(d, A_RS_ADMQ_CI);
    g_assert_cmpuint(ci, ==, d->admq_pi);
    qtest_memread(qts, d->acq + (ci & ((1u << d->admq_log) - 1)) *
                  sizeof(cqe), &acq_before, sizeof(acq_before));
    pci_cmd = qpci_config_readw(&d->dev, PCI_COMMAND);
    qpci_config_writew(&d->dev, PCI_COMMAND, pci_cmd & ~PCI_COMMAND_MASTER);
    cmd_init(&cmd, RS_CMD_QUERY_DEVICE);
    cmd.query.resp_addr = buf;
    cmd.query.resp_len = sizeof(struct rs_device_attr);
    index = qrs_admin_submit(d, &cmd);
    g_assert_false(qrs_admin_poll(d, index, &cqe, G_USEC_PER_SEC / 2));
    qtest_memread(qts, d->acq + (ci & ((1u << d->admq_log) - 1)) *
                  sizeof(cqe), &acq_after, sizeof(acq_after));
    g_assert_cmpmem(&acq_before, sizeof(acq_before), &acq_after,
                    sizeof(acq_after));
    g_assert_true(is_filled(d, buf, 0xa5, PAGE));
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, ci);
    /* Failing to read a command is a DMA fatal error. */
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS) & R_RS_STATUS_FATAL_MASK, ==,
                    R_RS_STATUS_FATAL_MASK);
    g_assert_cmpuint(qrs_readl(d, A_RS_FATAL_CODE), ==, RS_FATAL_DMA);

    /* Bus mastering back on: the fatal state stays until a reset. */
    qpci_config_writew(&d->dev, PCI_COMMAND, pci_cmd);
    g_assert_cmpuint(qrs_readl(d, A_RS_FATAL_CODE), ==, RS_FATAL_DMA);
    g_assert_true(is_filled(d, buf, 0xa5, PAGE));
    qrs_reset(d);
    assert_power_on_regs(d, DEF_DB_PAGES, DEF_NUM_MSIX);
    rs_setup(d);
    RS_ASSERT_STATUS(qrs_query_qp(d, qp, &a), RS_STATUS_BAD_HANDLE);
    assert_alive(d);
}

/* ------------------------------------------------------------------ */
/* Small tables: properties and NO_RESOURCES                           */
/* ------------------------------------------------------------------ */

/*
 * Object tables have max-* slots; slot 0 is never used, and for QPs
 * slot 1 belongs to the GSI QP.
 */
#define LIM_QPS         4
#define LIM_CQS         3
#define LIM_MRS         3
#define LIM_PDS         3
#define LIM_AHS         2
#define LIM_SESSIONS    3
#define LIM_GROUPS      2
#define LIM_GIDS        2
#define LIM_MSG_SIZE    65536
#define LIM_VECTORS     2
#define LIM_DB_PAGES    4
#define LIM_MR_PAGES    8

static void *limits_before(GString *cmd_line, void *arg)
{
    g_string_append_printf(cmd_line,
        " -global rdma-session.max-qps=%d"
        " -global rdma-session.max-cqs=%d"
        " -global rdma-session.max-mrs=%d"
        " -global rdma-session.max-pds=%d"
        " -global rdma-session.max-ahs=%d"
        " -global rdma-session.max-sessions=%d"
        " -global rdma-session.max-session-groups=%d"
        " -global rdma-session.max-gids=%d"
        " -global rdma-session.max-msg-size=%d"
        " -global rdma-session.mtu=1024"
        " -global rdma-session.num-comp-vectors=%d"
        " -global rdma-session.db-pages=%d"
        " -global rdma-session.max-mr-pages=%d ",
        LIM_QPS, LIM_CQS, LIM_MRS, LIM_PDS, LIM_AHS, LIM_SESSIONS,
        LIM_GROUPS, LIM_GIDS, LIM_MSG_SIZE, LIM_VECTORS, LIM_DB_PAGES,
        LIM_MR_PAGES);
    return arg;
}

static uint8_t reg_pages(QRdmaSession *d, uint32_t pd, uint64_t pages,
                         uint32_t npages, uint32_t *lkey)
{
    struct rs_cmd_reg_mr c = { 0 };

    c.length = (uint64_t)npages * PAGE;
    c.npages = npages;
    c.pbl_addr = make_pbl(d, pages, PAGE, npages);
    c.pd = pd;
    c.page_shift = 12;
    c.access = RS_ACCESS_LOCAL_WRITE;
    return qrs_reg_mr(d, &c, lkey, NULL);
}

static void test_limits(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = obj;
    uint64_t pages = qrs_alloc_zeroed(d, LIM_MR_PAGES * PAGE);
    uint64_t ring = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << 4);
    struct rs_device_attr a;
    struct rs_port_attr p;
    struct rs_cmd_create_qp c;
    struct rs_cmd_create_ah ah;
    struct rs_cmd_create_session sc;
    struct rs_cmd_create_session_group gc = { 0 };
    struct rs_cmd_add_gid g = { 0 };
    struct rs_qp_attr attr;
    uint32_t h[8], k1, k2, k3, k4, pd, cq, qp, s1;
    int i;

    /* Identity follows the properties. */
    g_assert_cmpuint(qrs_readl(d, A_RS_DB_PAGES), ==, LIM_DB_PAGES);
    g_assert_cmpuint(qrs_readl(d, A_RS_NUM_MSIX), ==, 1 + LIM_VECTORS);
    g_assert_cmpuint(qpci_msix_table_size(&d->dev), ==, 1 + LIM_VECTORS);
    g_assert_cmphex(d->bar2_size, ==, LIM_DB_PAGES * RS_DB_PAGE_SIZE);

    rs_setup(d);
    RS_ASSERT_OK(qrs_query_device(d, &a));
    g_assert_cmpuint(a.max_qp, ==, USABLE(LIM_QPS));
    g_assert_cmpuint(a.max_cq, ==, USABLE(LIM_CQS));
    g_assert_cmpuint(a.max_mr, ==, USABLE(LIM_MRS));
    g_assert_cmpuint(a.max_pd, ==, USABLE(LIM_PDS));
    g_assert_cmpuint(a.max_ah, ==, USABLE(LIM_AHS));
    g_assert_cmpuint(a.max_sessions, ==, USABLE(LIM_SESSIONS));
    g_assert_cmpuint(a.max_session_groups, ==, USABLE(LIM_GROUPS));
    g_assert_cmpuint(a.max_gids, ==, LIM_GIDS);
    g_assert_cmpuint(a.max_msg_size, ==, LIM_MSG_SIZE);
    g_assert_cmpuint(a.num_comp_vectors, ==, LIM_VECTORS);
    g_assert_cmpuint(a.num_db_pages, ==, LIM_DB_PAGES);
    g_assert_cmphex(a.max_mr_size, ==, (uint64_t)LIM_MR_PAGES << 12);
    RS_ASSERT_OK(qrs_query_port(d, 1, &p));
    g_assert_cmpuint(p.max_mtu, ==, RS_MTU_1024);
    g_assert_cmpuint(p.active_mtu, ==, RS_MTU_1024);
    g_assert_cmpuint(p.gid_tbl_len, ==, LIM_GIDS);

    /* GIDs: the index is the slot, beyond max-gids is a bad parameter. */
    add_gid_v4(d, 0, 1);
    add_gid_v4(d, LIM_GIDS - 1, 2);
    gid_v4(g.gid, 10, 0, 9, 9);
    g.index = LIM_GIDS;
    RS_ASSERT_STATUS(qrs_add_gid(d, &g, NULL), RS_STATUS_BAD_PARAM);

    /* PDs */
    for (i = 1; i < LIM_PDS; i++) {
        h[i] = new_pd(d);
        g_assert_cmphex(h[i], ==, HANDLE(0, i));
    }
    RS_ASSERT_STATUS(qrs_create_pd(d, NULL), RS_STATUS_NO_RESOURCES);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, h[1]));
    g_assert_cmphex(new_pd(d), ==, HANDLE(1, 1));
    RS_ASSERT_STATUS(qrs_create_pd(d, NULL), RS_STATUS_NO_RESOURCES);
    pd = h[2];

    /* CQs, comp vectors and doorbell pages */
    RS_ASSERT_STATUS(qrs_create_cq(d, ring, 4, LIM_VECTORS, 0, NULL),
                     RS_STATUS_BAD_PARAM);
    RS_ASSERT_STATUS(qrs_create_cq(d, ring, 4, 0, LIM_DB_PAGES, NULL),
                     RS_STATUS_BAD_PARAM);
    for (i = 1; i < LIM_CQS; i++) {
        RS_ASSERT_OK(qrs_create_cq(d, ring, 4, LIM_VECTORS - 1,
                                   LIM_DB_PAGES - 1, &h[i]));
        g_assert_cmphex(h[i], ==, HANDLE(0, i));
    }
    RS_ASSERT_STATUS(qrs_create_cq(d, ring, 4, 0, 0, NULL),
                     RS_STATUS_NO_RESOURCES);
    cq = h[1];

    /* QPs: slot 1 stays for the GSI QP. */
    qp_template(d, &c, RS_QPT_RC, pd, cq, cq);
    for (i = 2; i < LIM_QPS; i++) {
        h[i] = new_qp(d, &c);
        g_assert_cmphex(h[i], ==, HANDLE(0, i));
    }
    RS_ASSERT_STATUS(qrs_create_qp(d, &c, NULL, NULL), RS_STATUS_NO_RESOURCES);
    c.qp_type = RS_QPT_GSI;
    g_assert_cmphex(new_qp(d, &c), ==, HANDLE(0, RS_GSI_QPN));
    RS_ASSERT_STATUS(qrs_create_qp(d, &c, NULL, NULL), RS_STATUS_EXISTS);
    c.qp_type = RS_QPT_UD;
    c.uar = LIM_DB_PAGES;
    RS_ASSERT_STATUS(qrs_create_qp(d, &c, NULL, NULL), RS_STATUS_BAD_PARAM);

    /* The path MTU is limited by the device's mtu property. */
    qp = h[2];
    qp_walk(d, qp, RS_QPT_RC, RS_QPS_INIT);
    std_attr(&attr, RS_QPS_INIT, RS_QPS_RTR);
    attr.path_mtu = RS_MTU_2048;
    RS_ASSERT_STATUS(qrs_modify_qp(d, qp, &attr, RC_RTR_MASK),
                     RS_STATUS_BAD_PARAM);
    attr.path_mtu = RS_MTU_4096;
    RS_ASSERT_STATUS(qrs_modify_qp(d, qp, &attr, RC_RTR_MASK),
                     RS_STATUS_BAD_PARAM);
    attr.path_mtu = RS_MTU_1024;
    RS_ASSERT_OK(qrs_modify_qp(d, qp, &attr, RC_RTR_MASK));

    /* MR translation entries, then MR slots. */
    RS_ASSERT_OK(reg_pages(d, pd, pages, 5, &k1));
    RS_ASSERT_STATUS(reg_pages(d, pd, pages, 4, NULL),
                     RS_STATUS_NO_RESOURCES);
    RS_ASSERT_OK(reg_pages(d, pd, pages, 3, &k2));
    RS_ASSERT_STATUS(reg_pages(d, pd, pages, 1, NULL),
                     RS_STATUS_NO_RESOURCES);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k1));
    RS_ASSERT_OK(reg_pages(d, pd, pages, 1, &k3));
    g_assert_cmphex(k3 >> RS_MKEY_INDEX_SHIFT, ==, 1);
    /* 4 entries free, but both MR slots are taken. */
    RS_ASSERT_STATUS(reg_pages(d, pd, pages, 1, NULL),
                     RS_STATUS_NO_RESOURCES);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k2));
    RS_ASSERT_OK(reg_pages(d, pd, pages, LIM_MR_PAGES - 1, &k4));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k4));
    RS_ASSERT_STATUS(reg_pages(d, pd, pages, LIM_MR_PAGES + 1, NULL),
                     RS_STATUS_NO_RESOURCES);
    RS_ASSERT_OK(reg_pages(d, pd, pages, LIM_MR_PAGES, &k1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, k1));

    /* AHs */
    ah_template(&ah, pd, 0);
    for (i = 1; i < LIM_AHS; i++) {
        RS_ASSERT_OK(qrs_create_ah(d, &ah, &h[i]));
        g_assert_cmphex(h[i], ==, HANDLE(0, i));
    }
    RS_ASSERT_STATUS(qrs_create_ah(d, &ah, NULL), RS_STATUS_NO_RESOURCES);

    /* Sessions and groups */
    for (i = 1; i < LIM_SESSIONS; i++) {
        h[i] = new_session(d, 0, 2000 + i);
        g_assert_cmphex(h[i], ==, HANDLE(0, i));
    }
    s1 = h[1];
    session_template(&sc, 0, 3000);
    RS_ASSERT_STATUS(qrs_create_session(d, &sc, NULL),
                     RS_STATUS_NO_RESOURCES);
    for (i = 1; i < LIM_GROUPS; i++) {
        h[i] = new_group(d, RS_GROUP_ACTIVE_BACKUP, s1, 0);
        g_assert_cmphex(h[i], ==, HANDLE(0, i));
    }
    gc.session[0] = s1;
    gc.nsessions = 1;
    RS_ASSERT_STATUS(qrs_create_session_group(d, &gc, NULL),
                     RS_STATUS_NO_RESOURCES);

    /* Full tables are not an error state. */
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);
    RS_ASSERT_OK(qrs_query_device(d, &a));
    g_assert_cmpuint(a.max_qp, ==, USABLE(LIM_QPS));
}

/* ------------------------------------------------------------------ */
/* Invalid properties fail realize                                     */
/* ------------------------------------------------------------------ */

/*
 * Start QEMU with one property value and return its exit status.  The
 * monitor reads "quit" from stdin, so a QEMU that starts does exit.
 */
static int run_qemu_with(const char *prop, char **err_out)
{
    const char *qemu = getenv("QTEST_QEMU_BINARY");
    g_autofree char *dev = g_strdup_printf("rdma-session,netdev=n0%s%s",
                                           *prop ? "," : "", prop);
    const char *argv[] = {
        qemu, "-M", "pc,accel=qtest", "-display", "none", "-nodefaults",
        "-S", "-monitor", "stdio", "-netdev", "user,id=n0",
        "-device", dev, NULL,
    };
    g_autoptr(GError) err = NULL;
    g_autofree char *out = NULL;
    int in_fd, out_fd, err_fd, status;
    GPid pid;
    GString *errs = g_string_new("");
    char chunk[256];
    ssize_t n;

    g_assert_nonnull(qemu);
    g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                           G_SPAWN_DO_NOT_REAP_CHILD,
                                           NULL, NULL, &pid, &in_fd,
                                           &out_fd, &err_fd, &err));
    g_assert_cmpint(write(in_fd, "quit\n", 5), ==, 5);
    close(in_fd);
    while ((n = read(err_fd, chunk, sizeof(chunk))) > 0) {
        g_string_append_len(errs, chunk, n);
    }
    close(err_fd);
    while (read(out_fd, chunk, sizeof(chunk)) > 0) {
        /* drain the monitor output */
    }
    close(out_fd);
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_spawn_close_pid(pid);
    *err_out = g_string_free(errs, false);
    g_assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_bad_properties(void)
{
    static const struct {
        const char *props;
        bool valid;
    } rows[] = {
        { "", true },
        /* the documented lower bounds */
        { "max-qps=2", true },
        { "max-cqs=2", true },
        { "max-mrs=2", true },
        { "max-gids=1,mtu=256,num-comp-vectors=1,db-pages=1", true },
        { "max-pds=2,max-ahs=2,max-sessions=2,max-session-groups=2", true },
        /* the documented upper bounds */
        { "max-qps=65536,max-cqs=65536,max-gids=256,mtu=4096,"
          "num-comp-vectors=64,db-pages=1024", true },
        { "max-mrs=1048576", true },
        { "max-srqs=2", true },
        { "max-srqs=65536", true },
        { "mtu=512", true },
        { "mtu=2048", true },
        /* out of range */
        { "max-qps=1", false },
        { "max-qps=65537", false },
        { "max-cqs=0", false },
        { "max-cqs=1", false },
        { "max-mrs=1", false },
        { "max-pds=1", false },
        { "max-mr-pages=0", false },
        { "max-msg-size=0", false },
        { "max-cqs=65537", false },
        { "max-mrs=0", false },
        { "max-mrs=1048577", false },
        { "max-srqs=1", false },
        { "max-srqs=65537", false },
        { "max-gids=0", false },
        { "max-gids=257", false },
        { "mtu=0", false },
        { "mtu=300", false },
        { "mtu=8192", false },
        { "num-comp-vectors=0", false },
        { "num-comp-vectors=65", false },
        { "db-pages=0", false },
        { "db-pages=3", false },
        { "db-pages=2048", false },
        { "x-window=0", false },
        { "x-window=4097", false },
        { "x-ack-backoff=7", false },
        /* the experimental properties' bounds */
        { "x-window=1,x-ack-backoff=0", true },
        { "x-window=4096,x-ack-backoff=6", true },
    };
    g_autoptr(GString) failures = g_string_new("");
    int i;

    for (i = 0; i < ARRAY_SIZE(rows); i++) {
        g_autofree char *err = NULL;
        int rc = run_qemu_with(rows[i].props, &err);

        if (rows[i].valid && rc != 0) {
            g_string_append_printf(failures, "  '%s' refused (exit %d): %s",
                                   rows[i].props, rc, err);
        } else if (!rows[i].valid && (rc != 1 ||
                                      !strstr(err, "rdma-session"))) {
            g_string_append_printf(failures,
                                   "  '%s' accepted or no realize error "
                                   "(exit %d): %s\n", rows[i].props, rc, err);
        }
    }
    g_assert_cmpstr(failures->str, ==, "");
}

/* ------------------------------------------------------------------ */
/* Migration                                                           */
/* ------------------------------------------------------------------ */

static void wait_migration_done(QTestState *qts)
{
    int64_t end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

    for (;;) {
        QDict *rsp = qtest_qmp_assert_success_ref(qts,
                                    "{ 'execute': 'query-migrate' }");
        const char *status = qdict_get_try_str(rsp, "status");
        bool done = status && !strcmp(status, "completed");

        if (status && !strcmp(status, "failed")) {
            g_error("migration failed: %s",
                    qdict_get_try_str(rsp, "error-desc") ?: "?");
        }
        qobject_unref(rsp);
        if (done) {
            return;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(10 * 1000);
    }
}

/*
 * Attach @d to the adapter that @src drove before it migrated to the QEMU
 * of @bus: its BARs as the destination has them, and the admin queue and
 * MSI-X table where the driver left them.
 */
static void rs_attach_migrated(QRdmaSession *d, QPCIBus *bus,
                               const QRdmaSession *src)
{
    qrs_attach_existing(d, bus, src->dev.devfn, src->alloc);
    d->dev.msix_enabled = src->dev.msix_enabled;
    d->dev.msix_table_bar = src->dev.msix_table_bar;
    d->dev.msix_table_off = src->dev.msix_table_off;
    d->dev.msix_pba_bar = src->dev.msix_pba_bar;
    d->dev.msix_pba_off = src->dev.msix_pba_off;
    d->admq = src->admq;
    d->acq = src->acq;
    d->aeq = src->aeq;
    d->admq_log = src->admq_log;
    d->aeq_log = src->aeq_log;
    d->admq_pi = src->admq_pi;
    d->aeq_ci = src->aeq_ci;
    d->next_cmd_id = src->next_cmd_id;
    d->scratch = src->scratch;
}

typedef struct MigObjects {
    uint32_t pd1, pd2_dead, pd3;
    uint32_t cq1, cq2;
    uint32_t gsi, rc, ud, qp_dead;
    uint32_t mr1, mr2_dead, mr3;
    uint32_t ah;
    uint32_t s1, s2, group;
    struct rs_cmd_create_qp tmpl;
    struct rs_cmd_reg_mr mr_cmd;
    uint64_t msi;
} MigObjects;

static void mig_build(QRdmaSession *d, MigObjects *m)
{
    struct rs_cmd_create_qp c;
    struct rs_cmd_reg_mr mr = { 0 };
    struct rs_cmd_create_ah ah;
    struct rs_cmd_add_gid g = { 0 };
    struct rs_qp_attr a;
    uint64_t pages = qrs_alloc_zeroed(d, 4 * PAGE);
    uint64_t many = guest_alloc(d->alloc, 520 * PAGE);

    g_assert(many);
    add_gid_v4(d, 0, 1);
    memset(g.gid, 0, sizeof(g.gid));
    g.gid[0] = 0xfd;
    g.gid[15] = 7;
    g.index = 1;
    g.type = RS_GID_ROCE_V2_IPV6;
    g.vni = 0x123456;
    RS_ASSERT_OK(qrs_add_gid(d, &g, NULL));

    m->pd1 = new_pd(d);
    m->pd2_dead = new_pd(d);
    m->pd3 = new_pd(d);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, m->pd2_dead));

    m->cq1 = new_cq(d, 4);
    RS_ASSERT_OK(qrs_create_cq(d, qrs_alloc_zeroed(d, 32 << 6), 6, 3, 2,
                               &m->cq2));

    qp_template(d, &c, RS_QPT_GSI, m->pd1, m->cq1, m->cq2);
    m->gsi = new_qp(d, &c);
    qp_walk(d, m->gsi, RS_QPT_GSI, RS_QPS_RTS);
    c.qp_type = RS_QPT_RC;
    m->rc = new_qp(d, &c);
    c.qp_type = RS_QPT_UD;
    m->ud = new_qp(d, &c);
    m->qp_dead = new_qp(d, &c);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, m->qp_dead));
    m->tmpl = c;

    /* RC: distinctive attributes; UD in RTS. */
    qp_walk(d, m->rc, RS_QPT_RC, RS_QPS_INIT);
    std_attr(&a, RS_QPS_INIT, RS_QPS_RTR);
    a.ah.gid_index = 1;
    a.dest_qp_num = 0x00abcd;
    a.path_mtu = RS_MTU_2048;
    RS_ASSERT_OK(qrs_modify_qp(d, m->rc, &a, RC_RTR_MASK));
    std_attr(&a, RS_QPS_RTR, RS_QPS_RTS);
    a.sq_psn = 0x777777;
    a.timeout = 19;
    RS_ASSERT_OK(qrs_modify_qp(d, m->rc, &a, RC_RTS_MASK));
    qp_walk(d, m->ud, RS_QPT_UD, RS_QPS_RTS);

    /* MRs: a direct one, a dead slot (tag state), an indirect one. */
    mr.iova = 0x5000;
    mr.length = 4 * PAGE;
    mr.npages = 4;
    mr.pbl_addr = make_pbl(d, pages, PAGE, 4);
    mr.pd = m->pd3;
    mr.page_shift = 12;
    mr.access = STD_ACCESS;
    mr.gid_index = 0;
    m->mr1 = reg_mr_ok(d, &mr);
    mr.gid_index = 1;
    m->mr2_dead = reg_mr_ok(d, &mr);
    m->mr_cmd = mr;
    mr.iova = 0;
    mr.length = 520 * PAGE;
    mr.npages = 520;
    mr.flags = RS_MR_F_PBL_INDIRECT;
    mr.pbl_addr = make_indirect_pbl(d, many, 520);
    mr.pd = m->pd1;
    m->mr3 = reg_mr_ok(d, &mr);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, m->mr2_dead));

    ah_template(&ah, m->pd1, 1);
    RS_ASSERT_OK(qrs_create_ah(d, &ah, &m->ah));

    m->s1 = new_session(d, 0, 40000);
    m->s2 = new_session(d, 0, 40001);
    m->group = new_group(d, RS_GROUP_ACTIVE_BACKUP, m->s1, m->s2);
    std_attr(&a, RS_QPS_RTS, RS_QPS_RTS);
    a.session_group = m->group;
    RS_ASSERT_OK(qrs_modify_qp(d, m->ud, &a, RS_QP_ATTR_SESSION_GROUP));

    /* Vector 0 unmasked, pointing at guest memory. */
    m->msi = qrs_alloc_zeroed(d, PAGE);
    qrs_msix_set_vector(d, 0, m->msi, 0x5eed0000, false);
}

static void test_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *src = obj;
    QTestState *from = qrs_qts(src);
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-mig-XXXXXX",
                                             NULL);
    g_autofree char *path = g_strdup_printf("%s/state", tmpdir);
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    uint32_t regs_src[NREGS], regs_dst[NREGS];
    struct rs_qp_attr q_src[3], q_dst[3], q;
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    struct rs_device_attr attr;
    struct rs_cmd_add_gid g = { 0 };
    QRdmaSession *d;
    QTestState *to;
    QPCIBus *bus;
    MigObjects m;
    uint32_t qps[3], h, lkey, index;
    int i;

    /* Small admin ring so that it has wrapped before migrating. */
    qrs_admin_init(src, 3, RS_QOS_AEQ_LOG);
    wait_aeq_port_active(src);
    mig_build(src, &m);
    qps[0] = m.gsi;
    qps[1] = m.rc;
    qps[2] = m.ud;
    for (i = 0; i < 3; i++) {
        RS_ASSERT_OK(qrs_query_qp(src, qps[i], &q_src[i]));
    }
    g_assert_cmpuint(q_src[0].qp_state, ==, RS_QPS_RTS);
    g_assert_cmpuint(q_src[1].qp_state, ==, RS_QPS_RTS);
    g_assert_cmpuint(q_src[2].qp_state, ==, RS_QPS_RTS);
    g_assert_cmphex(q_src[2].session_group, ==, m.group);
    /* Stop where the next command is on an odd pass (phase 0). */
    while ((src->admq_pi & 15) != 13 || src->admq_pi < 40) {
        RS_ASSERT_OK(qrs_query_device(src, &attr));
    }
    dump_regs(src, regs_src);
    g_assert_cmpuint(regs_src[A_RS_ADMQ_CI / 4], ==, src->admq_pi);
    g_assert_cmphex(qtest_readl(from, m.msi), ==, 0x5eed0000);
    qtest_writel(from, m.msi, 0);

    /* Save to a file and load into a second QEMU. */
    qtest_qmp_assert_success(from, "{ 'execute': 'stop' }");
    qtest_qmp_assert_success(from, "{ 'execute': 'migrate',"
                             "  'arguments': { 'uri': %s } }", uri);
    wait_migration_done(from);

    to = qtest_initf("%s -incoming defer", qos_get_current_command_line());
    qtest_qmp_assert_success(to, "{ 'execute': 'migrate-incoming',"
                             "  'arguments': { 'uri': %s } }", uri);
    wait_migration_done(to);
    qtest_qmp_assert_success(to, "{ 'execute': 'cont' }");

    bus = qpci_new_pc(to, NULL);
    d = g_new0(QRdmaSession, 1);
    qrs_attach_existing(d, bus, src->dev.devfn, src->alloc);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_VENDOR_ID), ==,
                    RS_PCI_VENDOR_ID);
    g_assert_cmphex(d->bar0.addr, ==, src->bar0.addr);
    g_assert_cmphex(d->bar2.addr, ==, src->bar2.addr);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_COMMAND) &
                    PCI_COMMAND_MASTER, ==, PCI_COMMAND_MASTER);
    d->dev.msix_enabled = true;
    d->dev.msix_table_bar = src->dev.msix_table_bar;
    d->dev.msix_table_off = src->dev.msix_table_off;
    d->dev.msix_pba_bar = src->dev.msix_pba_bar;
    d->dev.msix_pba_off = src->dev.msix_pba_off;
    d->admq = src->admq;
    d->acq = src->acq;
    d->aeq = src->aeq;
    d->admq_log = src->admq_log;
    d->aeq_log = src->aeq_log;
    d->admq_pi = src->admq_pi;
    d->aeq_ci = src->aeq_ci;
    d->next_cmd_id = src->next_cmd_id;
    d->scratch = src->scratch;

    /* Registers */
    dump_regs(d, regs_dst);
    assert_regs_equal(regs_src, regs_dst);

    /* The admin queue continues at the right index with the right phase. */
    index = d->admq_pi;
    g_assert_cmpuint(qrs_ring_phase(index, 3), ==, 0);
    cmd_init(&cmd, RS_CMD_QUERY_QP);
    cmd.query.resp_addr = d->scratch;
    cmd.query.resp_len = sizeof(struct rs_qp_attr);
    cmd.query.handle = m.rc;
    RS_ASSERT_OK(qrs_admin_exec(d, &cmd, &cqe));
    g_assert_cmpuint(cqe.flags & RS_ACQE_PHASE, ==, 0);
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, index + 1);
    /* ... and raises its interrupt through the migrated MSI-X table. */
    g_assert_cmphex(qtest_readl(to, m.msi), ==, 0x5eed0000);

    /* QP attributes */
    for (i = 0; i < 3; i++) {
        RS_ASSERT_OK(qrs_query_qp(d, qps[i], &q_dst[i]));
        g_assert_cmpmem(&q_src[i], sizeof(q_src[i]), &q_dst[i],
                        sizeof(q_dst[i]));
    }

    /* Old handles resolve; references are still counted. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, m.pd1),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, m.pd3),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_CQ, m.cq1),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_CQ, m.cq2),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION, m.s1),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, m.group),
                     RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 0), RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEL_GID, 1), RS_STATUS_BUSY);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, m.pd2_dead),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_QP, m.qp_dead),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DEREG_MR, m.mr2_dead),
                     RS_STATUS_BAD_HANDLE);

    /* New objects take the next free index with the next generation. */
    h = new_pd(d);
    g_assert_cmphex(h, ==, HANDLE(1, HINDEX(m.pd2_dead)));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, h));
    h = new_qp(d, &m.tmpl);
    g_assert_cmphex(h, ==, HANDLE(1, HINDEX(m.qp_dead)));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, h));
    lkey = reg_mr_ok(d, &m.mr_cmd);
    g_assert_cmphex(lkey, ==, (m.mr2_dead & ~RS_MKEY_TAG_MASK) |
                    ((m.mr2_dead + 1) & RS_MKEY_TAG_MASK));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, lkey));
    h = new_cq(d, 4);
    g_assert_cmphex(h, ==, HANDLE(0, 3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, h));
    h = new_session(d, 1, 40000);
    g_assert_cmphex(h, ==, HANDLE(0, 3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, h));
    g.index = 0;
    gid_v4(g.gid, 10, 0, 0, 1);
    RS_ASSERT_STATUS(qrs_add_gid(d, &g, NULL), RS_STATUS_EXISTS);
    add_gid_v4(d, 2, 3);

    /* Tear down in dependency order. */
    for (i = 0; i < 3; i++) {
        RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, qps[i]));
        RS_ASSERT_STATUS(qrs_query_qp(d, qps[i], &q), RS_STATUS_BAD_HANDLE);
    }
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION_GROUP, m.group));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, m.s1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SESSION, m.s2));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, m.mr1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEREG_MR, m.mr3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_AH, m.ah));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, m.cq1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_CQ, m.cq2));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, m.pd1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_PD, m.pd3));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 0));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 1));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DEL_GID, 2));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, m.pd1),
                     RS_STATUS_BAD_HANDLE);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);

    g_free(d);
    qpci_free_pc(bus);
    qtest_quit(to);
    unlink(path);
    rmdir(tmpdir);
    /* The source QEMU is stopped: start the next test with a new one. */
    qos_invalidate_command_line();
}

/*
 * The same QEMU migrates out twice (a VM moved on again, or a migration
 * retried): the MRs' page check of the saved state starts anew each time
 * (it aborted the second save).
 */
static void test_migrate_twice(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    QTestState *qts = qrs_qts(d);
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-mig2-XXXXXX",
                                             NULL);
    uint64_t buf = qrs_alloc_zeroed(d, 4 * PAGE);
    uint32_t pd;
    int i;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    eng_mr(d, pd, 0, buf, 4 * PAGE, STD_ACCESS);
    eng_mr(d, pd, 0, buf, 2 * PAGE, STD_ACCESS);
    for (i = 0; i < 2; i++) {
        g_autofree char *file = g_strdup_printf("%s/state%d", tmpdir, i);
        g_autofree char *to = g_strdup_printf("file:%s", file);

        qtest_qmp_assert_success(qts, "{ 'execute': 'stop' }");
        qtest_qmp_assert_success(qts, "{ 'execute': 'migrate',"
                                 "  'arguments': { 'uri': %s } }", to);
        wait_migration_done(qts);
        unlink(file);
        qtest_qmp_assert_success(qts, "{ 'execute': 'cont' }");
    }
    rmdir(tmpdir);
    assert_alive(d);
}

/*
 * A corrupted migration stream fails the incoming migration cleanly: the
 * destination reports the failure and keeps running.  The source saves
 * to a file once; each case patches one field of the device's state,
 * found by the distinctive bytes in front of it (the stream is big
 * endian), and loads the result into a new QEMU.
 */
typedef struct MigPatch {
    const char *name;
    uint8_t needle[32];
    size_t needle_len;
    size_t field_off;           /* from the needle's start */
    uint32_t value;             /* big endian in the stream */
} MigPatch;

/* The offset of the only occurrence of @needle in @buf. */
static size_t mig_find(const uint8_t *buf, size_t len, const uint8_t *needle,
                       size_t nlen)
{
    const uint8_t *p = buf, *found = NULL;

    while ((p = memmem(p, len - (p - buf), needle, nlen))) {
        g_assert_null(found);
        found = p++;
    }
    g_assert_nonnull(found);
    return found - buf;
}

/* Load @path into a new QEMU; true if the migration completed. */
static bool mig_load(const char *path, char **err)
{
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    QTestState *to = qtest_initf("%s -incoming defer",
                                 qos_get_current_command_line());
    int64_t end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    bool ok;

    qtest_qmp_assert_success(to, "{ 'execute': 'migrate-incoming',"
                             "  'arguments': { 'uri': %s,"
                             "                 'exit-on-error': false } }",
                             uri);
    for (;;) {
        QDict *rsp = qtest_qmp_assert_success_ref(to,
                                    "{ 'execute': 'query-migrate' }");
        const char *status = qdict_get_try_str(rsp, "status");

        if (status && (!strcmp(status, "completed") ||
                       !strcmp(status, "failed"))) {
            ok = !strcmp(status, "completed");
            *err = g_strdup(qdict_get_try_str(rsp, "error-desc") ?: "");
            qobject_unref(rsp);
            break;
        }
        qobject_unref(rsp);
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(10 * 1000);
    }
    /* Still alive after a failure: it answers, then quits normally. */
    qtest_qmp_assert_success(to, "{ 'execute': 'query-status' }");
    qtest_quit(to);
    return ok;
}

static void test_migrate_corrupt(void *obj, void *data,
                                 QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    QTestState *from = qrs_qts(d);
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-mig-XXXXXX",
                                             NULL);
    g_autofree char *path = g_strdup_printf("%s/state", tmpdir);
    g_autofree char *bad = g_strdup_printf("%s/bad", tmpdir);
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autofree uint8_t *stream = NULL;
    struct rs_cmd_add_gid g = { 0 };
    struct rs_cmd_reg_mr mr = { 0 };
    struct rs_cmd_create_ah ah;
    MigPatch cases[4];
    uint32_t pd, h, admq_cfg, acq_cfg, aeq_cfg;
    char *err = NULL;
    gsize len;
    int i;

    /* GID 1 (fd00::7e, VNI 0x5a5a5a) with one reference: an AH. */
    add_gid_v4(d, 0, 1);
    g.gid[0] = 0xfd;
    g.gid[15] = 0x7e;
    g.index = 1;
    g.type = RS_GID_ROCE_V2_IPV6;
    g.vni = 0x5a5a5a;
    RS_ASSERT_OK(qrs_add_gid(d, &g, NULL));
    pd = new_pd(d);
    ah_template(&ah, pd, 1);
    RS_ASSERT_OK(qrs_create_ah(d, &ah, &h));
    /* An MR of 2 pages at a distinctive IOVA. */
    mr.iova = 0x5a5a00000000ull;
    mr.length = 2 * PAGE;
    mr.npages = 2;
    mr.pbl_addr = make_pbl(d, qrs_alloc_zeroed(d, 2 * PAGE), PAGE, 2);
    mr.pd = pd;
    mr.page_shift = 12;
    mr.access = STD_ACCESS;
    reg_mr_ok(d, &mr);
    admq_cfg = qrs_readl(d, A_RS_ADMQ_CFG);
    acq_cfg = qrs_readl(d, A_RS_ACQ_CFG);
    aeq_cfg = qrs_readl(d, A_RS_AEQ_CFG);

    qtest_qmp_assert_success(from, "{ 'execute': 'stop' }");
    qtest_qmp_assert_success(from, "{ 'execute': 'migrate',"
                             "  'arguments': { 'uri': %s } }", uri);
    wait_migration_done(from);
    g_assert_true(g_file_get_contents(path, (gchar **)&stream, &len, NULL));

    /* RSGid: gid[16], vni, refs.  RSMr: ..., iova, length, npages. */
    memset(cases, 0, sizeof(cases));
    cases[0].name = "GID reference count";
    memcpy(cases[0].needle, g.gid, 16);
    stl_be_p(cases[0].needle + 16, g.vni);
    cases[0].needle_len = 20;
    cases[0].field_off = 20;
    cases[0].value = 2;
    cases[1].name = "MR npages 0xffffffff";
    stq_be_p(cases[1].needle, mr.iova);
    stq_be_p(cases[1].needle + 8, mr.length);
    cases[1].needle_len = 16;
    cases[1].field_off = 16;
    cases[1].value = 0xffffffff;
    cases[2] = cases[1];
    cases[2].name = "MR npages over max-mr-pages";
    cases[2].value = 300000;
    /* Registers: admq_base, cfg, acq_base, cfg, aeq_base, cfg, admq_pi */
    cases[3].name = "admin queue producer ahead by more than the ring";
    stq_be_p(cases[3].needle, d->admq);
    stl_be_p(cases[3].needle + 8, admq_cfg);
    stq_be_p(cases[3].needle + 12, d->acq);
    stl_be_p(cases[3].needle + 20, acq_cfg);
    stq_be_p(cases[3].needle + 24, d->aeq);
    cases[3].needle_len = 32;
    cases[3].field_off = 32 + 4;
    cases[3].value = d->admq_pi + (1u << d->admq_log) + 1;
    g_assert_cmpuint(qrs_readl(d, A_RS_ADMQ_CI), ==, d->admq_pi);

    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        g_autofree uint8_t *copy = g_memdup2(stream, len);
        size_t off = mig_find(stream, len, cases[i].needle,
                              cases[i].needle_len) + cases[i].field_off;

        g_test_message("corrupt stream: %s", cases[i].name);
        if (i == 3) {
            /* aeq_cfg, then admq_pi equal to admq_ci */
            g_assert_cmphex(ldl_be_p(stream + off - 4), ==, aeq_cfg);
            g_assert_cmphex(ldl_be_p(stream + off), ==, d->admq_pi);
            g_assert_cmphex(ldl_be_p(stream + off + 4), ==, d->admq_pi);
        }
        stl_be_p(copy + off, cases[i].value);
        g_assert_true(g_file_set_contents(bad, (gchar *)copy, len, NULL));
        g_assert_false(mig_load(bad, &err));
        g_test_message("destination: %s", err);
        g_assert_cmpstr(err, !=, "");
        g_free(err);
    }
    /* The stream as saved loads. */
    g_assert_true(mig_load(path, &err));
    g_free(err);

    unlink(bad);
    unlink(path);
    rmdir(tmpdir);
    qos_invalidate_command_line();
}

/* ------------------------------------------------------------------ */
/* LAN path                                                            */
/* ------------------------------------------------------------------ */

/*
 * These tests attach the adapter to "-netdev socket" on one end of a
 * socketpair; the test reads and writes frames on the other end, each
 * with a 4-byte big-endian length prefix.
 */
#define LAN_TX_VECTOR   2
#define LAN_RX_VECTOR   3
#define LAN_BUF_SIZE    2048
/* How long "nothing happens" is watched for. */
#define LAN_QUIET_US    (G_USEC_PER_SEC / 5)

typedef struct LanRing {
    uint64_t ring;
    uint8_t type;
    uint8_t log;
    uint32_t pi;                /* free running, as the driver keeps it */
} LanRing;

typedef struct LanEnv {
    QRdmaSession *d;
    int fd;                     /* the test's end of the socketpair */
    uint64_t msi;               /* MSI-X vector v writes msi + 4 v */
    LanRing tx, rx;
} LanEnv;

static void lan_sockets_free(void *p)
{
    int *sv = p;

    close(sv[0]);
    close(sv[1]);
    g_free(sv);
}

static void *lan_before(GString *cmd_line, void *arg)
{
    int *sv = g_new(int, 2);

    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    qrs_qos_socket_netdev(cmd_line, sv[1]);
    g_test_queue_destroy(lan_sockets_free, sv);
    /*
     * The fd number may be the previous test's: make sure QEMU restarts
     * with this socket instead of keeping the old one.
     */
    qos_invalidate_command_line();
    return sv;
}

static void lan_sock_send(int fd, const void *frame, uint32_t len)
{
    uint32_t be = cpu_to_be32(len);
    struct iovec iov[2] = {
        { .iov_base = &be, .iov_len = sizeof(be) },
        { .iov_base = (void *)frame, .iov_len = len },
    };

    g_assert_cmpint(iov_send(fd, iov, 2, 0, sizeof(be) + len), ==,
                    sizeof(be) + len);
}

/*
 * One frame from the wire: its length, or -1 if none came in time.  The
 * RARP frames QEMU sends to announce a migrated NIC are skipped.
 */
static ssize_t lan_sock_recv(int fd, uint8_t *buf, size_t max,
                             int64_t timeout_us)
{
    int64_t end = g_get_monotonic_time() + timeout_us;
    GPollFD pfd = { .fd = fd, .events = G_IO_IN };
    uint32_t be;
    size_t len;

    do {
        int64_t left = end - g_get_monotonic_time();

        if (left < 0 || g_poll(&pfd, 1, left / 1000) != 1) {
            return -1;
        }
        g_assert_cmpint(recv(fd, &be, sizeof(be), MSG_WAITALL), ==,
                        sizeof(be));
        len = be32_to_cpu(be);
        g_assert_cmpuint(len, <=, max);
        g_assert_cmpint(recv(fd, buf, len, MSG_WAITALL), ==, len);
    } while (len >= 14 && buf[12] == 0x80 && buf[13] == 0x35);
    return len;
}

/* The next frame on the wire must be @len bytes of @expect. */
static void lan_expect_frame(LanEnv *e, const uint8_t *expect, size_t len)
{
    g_autofree uint8_t *buf = g_malloc(RS_LAN_MAX_FRAME);
    ssize_t got = lan_sock_recv(e->fd, buf, RS_LAN_MAX_FRAME,
                                RS_QOS_TIMEOUT_US);

    g_assert_cmpint(got, ==, len);
    g_assert_cmpmem(buf, got, expect, len);
}

static void lan_expect_quiet(LanEnv *e)
{
    uint8_t buf[RS_LAN_MAX_FRAME];

    g_assert_cmpint(lan_sock_recv(e->fd, buf, sizeof(buf), LAN_QUIET_US),
                    ==, -1);
}

/* An Ethernet frame: @dst, the adapter's MAC as source, @seed payload. */
static void lan_make_frame(uint8_t *f, size_t len, const uint8_t *dst,
                           uint8_t seed)
{
    size_t i;

    g_assert_cmpuint(len, >=, 14);
    memcpy(f, dst, 6);
    memcpy(f + 6, qos_mac, 6);
    f[12] = 0x88;
    f[13] = 0xb5;               /* local experimental ethertype */
    for (i = 14; i < len; i++) {
        f[i] = seed + i * 7 + (i >> 8);
    }
}

static void lan_ring_init(LanEnv *e, LanRing *r, uint8_t type, uint8_t log,
                          uint16_t vector)
{
    uint32_t h = ~0u;

    r->ring = qrs_alloc_zeroed(e->d, sizeof(struct rs_lan_desc) << log);
    r->type = type;
    r->log = log;
    r->pi = 0;
    RS_ASSERT_OK(qrs_create_lan_queue(e->d, type, r->ring, log, vector, &h));
    g_assert_cmpuint(h, ==, type);
}

static uint64_t lan_desc_addr(const LanRing *r, uint32_t index)
{
    return r->ring + (uint64_t)(index & ((1u << r->log) - 1)) *
                     sizeof(struct rs_lan_desc);
}

/*
 * Post one descriptor (not yet announced).  Its status keeps the phase of
 * the previous lap, so that the device's write-back stands out.
 */
static uint32_t lan_post(LanEnv *e, LanRing *r, uint64_t addr, uint16_t len,
                         uint8_t flags)
{
    struct rs_lan_desc desc = {
        .addr = cpu_to_le64(addr),
        .len = cpu_to_le16(len),
        .flags = flags,
        .status = qrs_ring_phase(r->pi, r->log) ^ RS_LAN_S_PHASE,
    };

    qtest_memwrite(qrs_qts(e->d), lan_desc_addr(r, r->pi), &desc,
                   sizeof(desc));
    return r->pi++;
}

static void lan_doorbell(LanEnv *e, LanRing *r)
{
    qrs_db_writel(e->d, 0, r->type == RS_LAN_TXQ ? RS_DB_LAN_TX :
                  RS_DB_LAN_RX, r->pi & RS_DB_INDEX_MASK);
}

static void lan_read_desc(LanEnv *e, LanRing *r, uint32_t index,
                          struct rs_lan_desc *desc)
{
    qtest_memread(qrs_qts(e->d), lan_desc_addr(r, index), desc,
                  sizeof(*desc));
    desc->addr = le64_to_cpu(desc->addr);
    desc->len = le16_to_cpu(desc->len);
}

static bool lan_done(LanEnv *e, LanRing *r, uint32_t index)
{
    struct rs_lan_desc desc;

    lan_read_desc(e, r, index, &desc);
    return (desc.status & RS_LAN_S_PHASE) == qrs_ring_phase(index, r->log);
}

/* Wait for the write-back of descriptor @index; returns the descriptor. */
static struct rs_lan_desc lan_wait(LanEnv *e, LanRing *r, uint32_t index)
{
    int64_t end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    struct rs_lan_desc desc;

    while (!lan_done(e, r, index)) {
        if (g_get_monotonic_time() > end) {
            g_error("%s descriptor %u not written back",
                    r->type == RS_LAN_TXQ ? "TX" : "RX", index);
        }
        g_usleep(1000);
    }
    lan_read_desc(e, r, index, &desc);
    return desc;
}

static uint8_t lan_status(LanEnv *e, LanRing *r, uint32_t index)
{
    return lan_wait(e, r, index).status;
}

static uint8_t lan_ok(LanRing *r, uint32_t index)
{
    return qrs_ring_phase(index, r->log);
}

static uint8_t lan_err(LanRing *r, uint32_t index)
{
    return qrs_ring_phase(index, r->log) | RS_LAN_S_ERR;
}

/* Admin queue up, MSI-X vectors pointing at e->msi, rings created. */
static void lan_setup(LanEnv *e, void *obj, void *data, uint8_t tx_log,
                      uint8_t rx_log)
{
    QRdmaSession *d = rs_setup(obj);
    int v;

    memset(e, 0, sizeof(*e));
    e->d = d;
    e->fd = ((int *)data)[0];
    e->msi = qrs_alloc_zeroed(d, PAGE);
    for (v = 0; v < DEF_NUM_MSIX; v++) {
        qrs_msix_set_vector(d, v, e->msi + v * 4, 0x1a40000 + v, false);
    }
    if (tx_log) {
        lan_ring_init(e, &e->tx, RS_LAN_TXQ, tx_log, LAN_TX_VECTOR);
    }
    if (rx_log) {
        lan_ring_init(e, &e->rx, RS_LAN_RXQ, rx_log, LAN_RX_VECTOR);
    }
}

/*
 * Session groups on the wire: an RC QP bound to a group of three sessions
 * (UDP source ports 50001-50003) sends each message on the next session
 * of a round-robin group, every packet of a message on the same one; an
 * active-backup group keeps to its first session.
 */
#define GRP_L3      14                  /* IPv4 header */
#define GRP_BTH     (14 + 20 + 8)           /* BTH after IPv4 and UDP */

static void group_run(LanEnv *e, uint8_t policy, const uint16_t *want,
                      int nmsgs)
{
    QRdmaSession *d = e->d;
    struct rs_cmd_create_session sc;
    struct rs_cmd_create_session_group gc = { 0 };
    struct rs_cmd_create_qp qc;
    struct rs_send_wqe_ctrl w;
    struct rs_sge sge;
    uint8_t f[RS_LAN_MAX_FRAME];
    uint32_t pd, cq, qp, grp, key, psn = 0;
    uint64_t buf;
    int i, j;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    cq = new_cq(d, 5);
    for (i = 0; i < 3; i++) {
        session_template(&sc, 0, 50001 + i);
        RS_ASSERT_OK(qrs_create_session(d, &sc, &gc.session[i]));
    }
    gc.nsessions = 3;
    gc.policy = policy;
    RS_ASSERT_OK(qrs_create_session_group(d, &gc, &grp));
    qp_template(d, &qc, RS_QPT_RC, pd, cq, cq);
    qc.session_group = grp;
    qp = new_qp(d, &qc);
    qp_walk(d, qp, RS_QPT_RC, RS_QPS_RTS);
    buf = loop_buf(d, PAGE);
    key = loop_mr(&(Loop) { .d = d, .pd = pd }, buf, PAGE);

    /* nmsgs SENDs of 1500 bytes: two packets each at MTU 1024. */
    for (i = 0; i < nmsgs; i++) {
        uint64_t slot = qc.sq_addr + (uint64_t)i *
                        (qrs_qp_sq_bytes(&qc) >> qc.sq_log_size);

        memset(&w, 0, sizeof(w));
        w.wr_id = i;
        w.opcode = RS_WR_SEND;
        w.num_sge = 1;
        sge = (struct rs_sge) { .addr = buf, .length = 1500, .lkey = key };
        qtest_memwrite(qrs_qts(d), slot, &w, sizeof(w));
        qtest_memwrite(qrs_qts(d), slot + sizeof(w), &sge, sizeof(sge));
    }
    qrs_db_writel(d, 0, RS_DB_SQ, HINDEX(qp) | nmsgs << 16);
    for (i = 0; i < nmsgs; i++) {
        for (j = 0; j < 2; j++) {
            ssize_t n = lan_sock_recv(e->fd, f, sizeof(f), RS_QOS_TIMEOUT_US);

            g_assert_cmpint(n, >, GRP_BTH + 12);
            g_assert_cmphex(lduw_be_p(f + 12), ==, 0x0800);
            g_assert_cmpuint(f[GRP_L3 + 9], ==, 17);
            /* UDP source port of the message's session, port 4791 */
            g_assert_cmpuint(lduw_be_p(f + GRP_L3 + 20), ==, want[i]);
            g_assert_cmpuint(lduw_be_p(f + GRP_L3 + 22), ==, 4791);
            /* BTH: SEND_FIRST then SEND_LAST, consecutive PSNs */
            g_assert_cmphex(f[GRP_BTH], ==, j ? 0x02 : 0x00);
            if (i || j) {
                g_assert_cmphex(ldl_be_p(f + GRP_BTH + 8) & 0xffffff, ==,
                                (psn + 1) & 0xffffff);
            }
            psn = ldl_be_p(f + GRP_BTH + 8) & 0xffffff;
        }
    }
    lan_expect_quiet(e);
}

static void test_group_round_robin(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    static const uint16_t want[] = {
        50001, 50002, 50003, 50001, 50002,
    };
    LanEnv e;

    lan_setup(&e, obj, data, 0, 0);
    group_run(&e, RS_GROUP_ROUND_ROBIN, want, ARRAY_SIZE(want));
    assert_alive(e.d);
}

static void test_group_active_backup(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    static const uint16_t want[] = { 50001, 50001, 50001 };
    LanEnv e;

    lan_setup(&e, obj, data, 0, 0);
    group_run(&e, RS_GROUP_ACTIVE_BACKUP, want, ARRAY_SIZE(want));
    assert_alive(e.d);
}

/* Send one frame from @buf in fragments of the given sizes. */
static uint32_t lan_tx_frags(LanEnv *e, uint64_t buf, const uint16_t *frag,
                             int n)
{
    uint32_t first = e->tx.pi, off = 0;
    int i;

    for (i = 0; i < n; i++) {
        lan_post(e, &e->tx, buf + off, frag[i],
                 i < n - 1 ? RS_LAN_F_MORE : 0);
        off += frag[i];
    }
    lan_doorbell(e, &e->tx);
    return first;
}

static void test_lan_tx(void *obj, void *data, QGuestAllocator *alloc)
{
    LanEnv e;
    QTestState *qts;
    uint64_t buf;
    g_autofree uint8_t *f = g_malloc(RS_LAN_MAX_FRAME);
    static const uint16_t three[] = { 14, 100, 1386 };
    uint16_t frags[RS_LAN_MAX_FRAGS];
    uint32_t first, i;
    size_t len;

    lan_setup(&e, obj, data, 4, 0);
    qts = qrs_qts(e.d);
    g_assert_cmphex(qrs_readl(e.d, A_RS_CAPS) & RS_CAP_LAN, ==, RS_CAP_LAN);
    buf = qrs_alloc_zeroed(e.d, RS_LAN_MAX_FRAME + PAGE);

    /* One descriptor, one frame; the TX vector fires. */
    lan_make_frame(f, 60, qos_mac, 1);
    qtest_memwrite(qts, buf, f, 60);
    first = lan_post(&e, &e.tx, buf, 60, 0);
    lan_doorbell(&e, &e.tx);
    lan_expect_frame(&e, f, 60);
    g_assert_cmphex(lan_status(&e, &e.tx, first), ==, lan_ok(&e.tx, first));
    wait_msg(e.d, e.msi + LAN_TX_VECTOR * 4, 0x1a40000 + LAN_TX_VECTOR);
    g_assert_cmphex(qtest_readl(qts, e.msi + LAN_RX_VECTOR * 4), ==, 0);

    /* Three fragments: one frame, byte exact; every descriptor done. */
    len = 14 + 100 + 1386;
    lan_make_frame(f, len, qos_mac, 2);
    qtest_memwrite(qts, buf, f, len);
    first = lan_tx_frags(&e, buf, three, 3);
    lan_expect_frame(&e, f, len);
    for (i = 0; i < 3; i++) {
        g_assert_cmphex(lan_status(&e, &e.tx, first + i), ==,
                        lan_ok(&e.tx, first + i));
    }

    /* RS_LAN_MAX_FRAGS fragments of different sizes, 65535 bytes. */
    lan_make_frame(f, RS_LAN_MAX_FRAME, qos_mac, 3);
    qtest_memwrite(qts, buf, f, RS_LAN_MAX_FRAME);
    len = 0;
    for (i = 0; i < RS_LAN_MAX_FRAGS - 1; i++) {
        frags[i] = 1000 + i * 37;
        len += frags[i];
    }
    frags[i] = RS_LAN_MAX_FRAME - len;
    /* the ring has 16 entries: use a bigger one from here on */
    RS_ASSERT_OK(qrs_destroy(e.d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ));
    lan_ring_init(&e, &e.tx, RS_LAN_TXQ, 7, LAN_TX_VECTOR);
    first = lan_tx_frags(&e, buf, frags, RS_LAN_MAX_FRAGS);
    lan_expect_frame(&e, f, RS_LAN_MAX_FRAME);
    for (i = 0; i < RS_LAN_MAX_FRAGS; i++) {
        g_assert_cmphex(lan_status(&e, &e.tx, first + i), ==,
                        lan_ok(&e.tx, first + i));
    }

    /*
     * 100 frames behind one doorbell, more than a bottom-half batch, and
     * across the end of the 128-entry ring: they leave in order, and the
     * phase bit is 0 on the second lap.
     */
    for (i = 0; i < 100; i++) {
        lan_make_frame(f, 60 + i, qos_mac, i);
        qtest_memwrite(qts, buf + i * 256, f, 60 + i);
        lan_post(&e, &e.tx, buf + i * 256, 60 + i, 0);
    }
    lan_doorbell(&e, &e.tx);
    for (i = 0; i < 100; i++) {
        lan_make_frame(f, 60 + i, qos_mac, i);
        lan_expect_frame(&e, f, 60 + i);
    }
    first += RS_LAN_MAX_FRAGS;
    g_assert_cmpuint(first + 99, >=, 128);
    for (i = 0; i < 100; i++) {
        g_assert_cmphex(lan_status(&e, &e.tx, first + i), ==,
                        lan_ok(&e.tx, first + i));
    }
    g_assert_cmphex(lan_ok(&e.tx, first + 99), ==, 0);
    lan_expect_quiet(&e);
    assert_alive(e.d);
}

static const uint8_t lan_bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/*
 * A backend that does not take frames stops the TX ring instead of making
 * QEMU buffer them: while the test does not read its socket only a few
 * frames complete; then every frame arrives, in order, none lost.
 */
static void test_lan_tx_backpressure(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    enum { FRAMES = 100, BODY = 30000, HDR = 14 };
    LanEnv e;
    QTestState *qts;
    g_autofree uint8_t *f = g_malloc(HDR + BODY);
    uint64_t hdrs, body;
    uint32_t done = 0, i;

    lan_setup(&e, obj, data, 8, 0);         /* 2 descriptors a frame */
    qts = qrs_qts(e.d);
    hdrs = qrs_alloc_zeroed(e.d, FRAMES * 64);
    body = qrs_alloc_zeroed(e.d, BODY);
    lan_make_frame(f, HDR + BODY, lan_bcast, 0);
    qtest_memwrite(qts, body, f + HDR, BODY);
    for (i = 0; i < FRAMES; i++) {
        /* each frame: its own header (source MAC low byte = i), one body */
        lan_make_frame(f, HDR, lan_bcast, 0);
        f[11] = i;
        qtest_memwrite(qts, hdrs + i * 64, f, HDR);
        lan_post(&e, &e.tx, hdrs + i * 64, HDR, RS_LAN_F_MORE);
        lan_post(&e, &e.tx, body, BODY, 0);
    }
    lan_doorbell(&e, &e.tx);
    g_usleep(2 * LAN_QUIET_US);
    while (done < FRAMES && lan_done(&e, &e.tx, 2 * done + 1)) {
        done++;
    }
    g_test_message("%u of %u frames of %u bytes completed while the "
                   "socket is not read", done, FRAMES, HDR + BODY);
    g_assert_cmpuint(done, >, 0);
    g_assert_cmpuint(done, <, FRAMES / 2);

    for (i = 0; i < FRAMES; i++) {
        lan_make_frame(f, HDR + BODY, lan_bcast, 0);
        f[11] = i;
        lan_expect_frame(&e, f, HDR + BODY);
    }
    for (i = 0; i < 2 * FRAMES; i++) {
        g_assert_cmphex(lan_status(&e, &e.tx, i), ==, lan_ok(&e.tx, i));
    }
    lan_expect_quiet(&e);
    assert_alive(e.d);
}

/* RX: the posted buffer of descriptor @index must hold exactly @f. */
static void lan_expect_rx(LanEnv *e, uint32_t index, uint64_t buf,
                          size_t bufsize, const uint8_t *f, size_t len)
{
    struct rs_lan_desc desc = lan_wait(e, &e->rx, index);
    g_autofree uint8_t *got = g_malloc(bufsize);

    g_assert_cmphex(desc.status, ==, lan_ok(&e->rx, index));
    g_assert_cmpuint(desc.len, ==, len);
    g_assert_cmphex(desc.addr, ==, buf);
    g_assert_cmphex(desc.flags, ==, 0);
    qtest_memread(qrs_qts(e->d), buf, got, bufsize);
    g_assert_cmpmem(got, len, f, len);
    /* the rest of the buffer is untouched */
    g_assert_true(is_filled(e->d, buf + len, 0xee, bufsize - len));
}

static uint64_t lan_rx_buf(LanEnv *e, size_t size)
{
    uint64_t buf = qrs_alloc_zeroed(e->d, size);

    fill(e->d, buf, 0xee, size);
    return buf;
}


static void test_lan_rx(void *obj, void *data, QGuestAllocator *alloc)
{
    LanEnv e;
    QTestState *qts;
    uint8_t f[LAN_BUF_SIZE + 100];
    uint64_t bufs[12];
    uint32_t idx, i;

    lan_setup(&e, obj, data, 0, 3);
    qts = qrs_qts(e.d);
    for (i = 0; i < ARRAY_SIZE(bufs); i++) {
        bufs[i] = lan_rx_buf(&e, LAN_BUF_SIZE);
    }

    /* A frame for our MAC lands byte exact; the RX vector fires. */
    idx = lan_post(&e, &e.rx, bufs[0], LAN_BUF_SIZE, 0);
    lan_post(&e, &e.rx, bufs[1], LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);
    lan_make_frame(f, 60, qos_mac, 0x10);
    lan_sock_send(e.fd, f, 60);
    lan_expect_rx(&e, idx, bufs[0], LAN_BUF_SIZE, f, 60);
    wait_msg(e.d, e.msi + LAN_RX_VECTOR * 4, 0x1a40000 + LAN_RX_VECTOR);
    g_assert_cmphex(qtest_readl(qts, e.msi + LAN_TX_VECTOR * 4), ==, 0);
    /* The second descriptor is still the driver's. */
    g_usleep(LAN_QUIET_US);
    g_assert_false(lan_done(&e, &e.rx, idx + 1));

    /* A full-size frame, exactly the buffer's size. */
    lan_make_frame(f, LAN_BUF_SIZE, qos_mac, 0x11);
    lan_sock_send(e.fd, f, LAN_BUF_SIZE);
    lan_expect_rx(&e, idx + 1, bufs[1], LAN_BUF_SIZE, f, LAN_BUF_SIZE);

    /*
     * No descriptor posted: the frame waits in QEMU and arrives when the
     * doorbell announces a buffer.
     */
    lan_make_frame(f, 100, qos_mac, 0x12);
    lan_sock_send(e.fd, f, 100);
    lan_make_frame(f + 200, 101, qos_mac, 0x13);
    lan_sock_send(e.fd, f + 200, 101);
    g_usleep(LAN_QUIET_US);
    idx = lan_post(&e, &e.rx, bufs[2], LAN_BUF_SIZE, 0);
    g_assert_false(lan_done(&e, &e.rx, idx));
    lan_doorbell(&e, &e.rx);
    lan_expect_rx(&e, idx, bufs[2], LAN_BUF_SIZE, f, 100);
    g_usleep(LAN_QUIET_US);
    lan_post(&e, &e.rx, bufs[3], LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);
    lan_expect_rx(&e, idx + 1, bufs[3], LAN_BUF_SIZE, f + 200, 101);

    /* Larger than its buffer: ERR, length 0, buffer untouched, next OK. */
    idx = lan_post(&e, &e.rx, bufs[4], 200, 0);
    lan_post(&e, &e.rx, bufs[5], LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);
    lan_make_frame(f, 201, qos_mac, 0x14);
    lan_sock_send(e.fd, f, 201);
    lan_make_frame(f, 64, qos_mac, 0x15);
    lan_sock_send(e.fd, f, 64);
    lan_expect_rx(&e, idx + 1, bufs[5], LAN_BUF_SIZE, f, 64);
    g_assert_cmphex(lan_status(&e, &e.rx, idx), ==, lan_err(&e.rx, idx));
    g_assert_cmpuint(lan_wait(&e, &e.rx, idx).len, ==, 0);
    g_assert_true(is_filled(e.d, bufs[4], 0xee, LAN_BUF_SIZE));

    /* Around the 8-entry ring: the phase is 0 on the second lap. */
    for (i = 0; i < 6; i++) {
        fill(e.d, bufs[6 + i], 0xee, LAN_BUF_SIZE);
        idx = lan_post(&e, &e.rx, bufs[6 + i], LAN_BUF_SIZE, 0);
        lan_doorbell(&e, &e.rx);
        lan_make_frame(f, 70 + i, lan_bcast, 0x20 + i);
        lan_sock_send(e.fd, f, 70 + i);
        lan_expect_rx(&e, idx, bufs[6 + i], LAN_BUF_SIZE, f, 70 + i);
    }
    g_assert_cmpuint(idx, ==, 11);
    g_assert_cmphex(lan_ok(&e.rx, idx), ==, 0);
    assert_alive(e.d);
}

/*
 * A guest that posts no receive buffers does not make QEMU buffer frames
 * without bound: the network layer holds one frame, the socket backend
 * stops reading, and the sender sees its socket fill up.  Once buffers are
 * posted the held frames arrive, in order.
 */
static void test_lan_rx_backpressure(void *obj, void *data,
                                     QGuestAllocator *alloc)
{
    enum { FRAME = 1514, TRIES = 4000 };
    LanEnv e;
    uint8_t f[FRAME];
    uint64_t bufs[16];
    int sent, i;

    lan_setup(&e, obj, data, 0, 0);
    for (sent = 0; sent < TRIES; sent++) {
        uint32_t be = cpu_to_be32(FRAME);
        struct iovec iov[2] = {
            { .iov_base = &be, .iov_len = sizeof(be) },
            { .iov_base = f, .iov_len = FRAME },
        };
        struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
        ssize_t n;

        lan_make_frame(f, FRAME, qos_mac, sent);
        n = sendmsg(e.fd, &msg, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        }
        g_assert_cmpint(n, >, 0);
        if (n < sizeof(be) + FRAME) {
            break;          /* the socket is full in the middle of it */
        }
        if (sent % 64 == 0) {
            g_usleep(10 * 1000);        /* give QEMU time to read */
        }
    }
    g_test_message("socket full after %d frames of %d bytes", sent, FRAME);
    /* 4000 frames would be 6 MB held in QEMU. */
    g_assert_cmpint(sent, <, TRIES);
    g_assert_cmpint(sent, >, ARRAY_SIZE(bufs));

    /* With an RX ring but no buffer posted, nothing lands either. */
    lan_ring_init(&e, &e.rx, RS_LAN_RXQ, 4, LAN_RX_VECTOR);
    for (i = 0; i < ARRAY_SIZE(bufs); i++) {
        bufs[i] = lan_rx_buf(&e, LAN_BUF_SIZE);
    }
    g_usleep(LAN_QUIET_US);
    lan_post(&e, &e.rx, bufs[0], LAN_BUF_SIZE, 0);
    g_assert_false(lan_done(&e, &e.rx, 0));
    for (i = 1; i < ARRAY_SIZE(bufs); i++) {
        lan_post(&e, &e.rx, bufs[i], LAN_BUF_SIZE, 0);
    }
    lan_doorbell(&e, &e.rx);
    for (i = 0; i < ARRAY_SIZE(bufs); i++) {
        lan_make_frame(f, FRAME, qos_mac, i);
        lan_expect_rx(&e, i, bufs[i], LAN_BUF_SIZE, f, FRAME);
    }
    assert_alive(e.d);
}

/*
 * Send frames to the listed destinations with descriptors posted for all
 * of them, then a marker frame to our MAC: the accepted ones, and then
 * the marker, must land in order.
 */
static void lan_filter_check(LanEnv *e, uint64_t *bufs,
                             const uint8_t (*dst)[6], const bool *accept,
                             int n)
{
    uint8_t f[8][128];
    uint32_t first = e->rx.pi;
    int i, k = 0;

    g_assert_cmpint(n, <, 8);
    for (i = 0; i <= n; i++) {
        fill(e->d, bufs[i], 0xee, LAN_BUF_SIZE);
        lan_post(e, &e->rx, bufs[i], LAN_BUF_SIZE, 0);
    }
    lan_doorbell(e, &e->rx);
    for (i = 0; i < n; i++) {
        lan_make_frame(f[i], 64 + i, dst[i], 0x40 + i);
        lan_sock_send(e->fd, f[i], 64 + i);
    }
    lan_make_frame(f[n], 90, qos_mac, 0x4f);
    lan_sock_send(e->fd, f[n], 90);
    for (i = 0; i < n; i++) {
        if (accept[i]) {
            lan_expect_rx(e, first + k, bufs[k], LAN_BUF_SIZE, f[i], 64 + i);
            k++;
        }
    }
    lan_expect_rx(e, first + k, bufs[k], LAN_BUF_SIZE, f[n], 90);
    /* Hand the unused descriptors back: destroy and recreate the ring. */
    RS_ASSERT_OK(qrs_destroy(e->d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_RXQ));
    lan_ring_init(e, &e->rx, RS_LAN_RXQ, 4, LAN_RX_VECTOR);
}

static void test_lan_rx_filter(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    static const uint8_t dst[5][6] = {
        { 0x52, 0x54, 0x00, 0x12, 0x34, 0x71 },     /* another station */
        { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },     /* broadcast */
        { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb },     /* IPv4 multicast */
        { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 },     /* IPv6 multicast */
        { 0x52, 0x54, 0x00, 0x12, 0x34, 0x70 },     /* ours */
    };
    static const struct {
        uint32_t mode;              /* ~0: the default after reset */
        bool accept[5];
    } rows[] = {
        { ~0u, { false, true, false, false, true } },
        { 0, { false, false, false, false, true } },
        { RS_LAN_RX_BROADCAST, { false, true, false, false, true } },
        { RS_LAN_RX_ALLMULTI, { false, false, true, true, true } },
        { RS_LAN_RX_ALLMULTI | RS_LAN_RX_BROADCAST,
          { false, true, true, true, true } },
        { RS_LAN_RX_PROMISC, { true, true, true, true, true } },
        { RS_LAN_RX_PROMISC | RS_LAN_RX_ALLMULTI | RS_LAN_RX_BROADCAST,
          { true, true, true, true, true } },
    };
    LanEnv e;
    uint64_t bufs[8];
    uint8_t runt[13];
    uint8_t f[64];
    uint32_t idx;
    int i;

    lan_setup(&e, obj, data, 0, 4);
    g_assert_cmpmem(dst[4], 6, qos_mac, 6);
    for (i = 0; i < ARRAY_SIZE(bufs); i++) {
        bufs[i] = lan_rx_buf(&e, LAN_BUF_SIZE);
    }
    for (i = 0; i < ARRAY_SIZE(rows); i++) {
        g_test_message("rx mode 0x%x", rows[i].mode);
        if (rows[i].mode != ~0u) {
            RS_ASSERT_OK(qrs_set_lan_rx_mode(e.d, rows[i].mode));
        }
        lan_filter_check(&e, bufs, dst, rows[i].accept, 5);
    }

    /* Runts (shorter than an Ethernet header) are dropped. */
    memcpy(runt, qos_mac, 6);
    memset(runt + 6, 0x77, sizeof(runt) - 6);
    idx = lan_post(&e, &e.rx, bufs[0], LAN_BUF_SIZE, 0);
    fill(e.d, bufs[0], 0xee, LAN_BUF_SIZE);
    lan_doorbell(&e, &e.rx);
    lan_sock_send(e.fd, runt, sizeof(runt));
    lan_make_frame(f, 64, qos_mac, 0x60);
    lan_sock_send(e.fd, f, 64);
    lan_expect_rx(&e, idx, bufs[0], LAN_BUF_SIZE, f, 64);

    /* A reset brings the default mode back. */
    qrs_reset(e.d);
    rs_setup(e.d);
    lan_ring_init(&e, &e.rx, RS_LAN_RXQ, 4, LAN_RX_VECTOR);
    lan_filter_check(&e, bufs, dst, rows[0].accept, 5);
    assert_alive(e.d);
}

/* Admin commands of the LAN path: each bad field with its status. */
static void lan_bad_commands(LanEnv *e)
{
    QRdmaSession *d = e->d;
    uint64_t ring = qrs_alloc_zeroed(d, PAGE);
    uint64_t end = ram_end(d);
    struct rs_admin_cmd cmd;
    uint32_t h;
    static const struct {
        const char *name;
        uint8_t type, log;
        int64_t ring_off;       /* from the good ring; INT64_MIN: 0 */
        uint16_t vector;
        uint8_t status;
    } rows[] = {
        { "type 2", 2, 4, 0, 0, RS_STATUS_BAD_PARAM },
        { "type 0xff", 0xff, 4, 0, 0, RS_STATUS_BAD_PARAM },
        { "log_size 0", RS_LAN_TXQ, 0, 0, 0, RS_STATUS_BAD_SIZE },
        { "log_size 13", RS_LAN_TXQ, RS_MAX_LAN_LOG + 1, 0, 0,
          RS_STATUS_BAD_SIZE },
        { "log_size 0xff", RS_LAN_RXQ, 0xff, 0, 0, RS_STATUS_BAD_SIZE },
        { "ring 0", RS_LAN_TXQ, 4, INT64_MIN, 0, RS_STATUS_BAD_ADDR },
        { "ring +16", RS_LAN_TXQ, 4, 16, 0, RS_STATUS_BAD_ALIGN },
        { "ring +32", RS_LAN_RXQ, 4, 32, 0, RS_STATUS_BAD_ALIGN },
        { "vector NUM_MSIX", RS_LAN_TXQ, 4, 0, DEF_NUM_MSIX,
          RS_STATUS_BAD_PARAM },
        { "vector 0xffff", RS_LAN_RXQ, 4, 0, 0xffff, RS_STATUS_BAD_PARAM },
        { "type before log_size", 2, 0, 0, 0, RS_STATUS_BAD_PARAM },
        { "log_size before ring", RS_LAN_TXQ, 0, 16, 0, RS_STATUS_BAD_SIZE },
        { "ring before vector", RS_LAN_TXQ, 4, 16, 0xffff,
          RS_STATUS_BAD_ALIGN },
    };
    int i;

    for (i = 0; i < ARRAY_SIZE(rows); i++) {
        uint64_t r = rows[i].ring_off == INT64_MIN ? 0 :
                     ring + rows[i].ring_off;

        g_test_message("CREATE_LAN_QUEUE %s", rows[i].name);
        RS_ASSERT_STATUS(qrs_create_lan_queue(d, rows[i].type, r,
                                              rows[i].log, rows[i].vector,
                                              NULL), rows[i].status);
    }
    /* Rings outside guest RAM, in the BARs, straddling the end of RAM. */
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_TXQ, FAR_ADDR, 4, 0,
                                          NULL), RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_TXQ, d->bar0.addr, 4, 0,
                                          NULL), RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_RXQ, d->bar2.addr, 4, 0,
                                          NULL), RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_RXQ, end - 128, 4, 0,
                                          NULL), RS_STATUS_BAD_ADDR);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_RXQ,
                                          0xffffffffffffffc0ull, 1, 0, NULL),
                     RS_STATUS_BAD_ADDR);

    /* Destroying what does not exist. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_RXQ),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, 2),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, 0x01000000),
                     RS_STATUS_BAD_HANDLE);

    /* Good bounds: smallest and largest ring, last vector; then EXISTS. */
    RS_ASSERT_OK(qrs_create_lan_queue(d, RS_LAN_TXQ, ring, 1,
                                      DEF_NUM_MSIX - 1, &h));
    g_assert_cmpuint(h, ==, RS_LAN_TXQ);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_TXQ, ring, 4, 0, NULL),
                     RS_STATUS_EXISTS);
    RS_ASSERT_OK(qrs_create_lan_queue(d, RS_LAN_RXQ,
                                      qrs_alloc_zeroed(d, 16 << RS_MAX_LAN_LOG),
                                      RS_MAX_LAN_LOG, 0, &h));
    g_assert_cmpuint(h, ==, RS_LAN_RXQ);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_RXQ, ring, 4, 0, NULL),
                     RS_STATUS_EXISTS);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE,
                                 RS_LAN_RXQ | 0x100), RS_STATUS_BAD_HANDLE);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_RXQ));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ),
                     RS_STATUS_BAD_HANDLE);

    /* Unknown rx-mode flags. */
    RS_ASSERT_STATUS(qrs_set_lan_rx_mode(d, 1u << 3), RS_STATUS_BAD_PARAM);
    RS_ASSERT_STATUS(qrs_set_lan_rx_mode(d, RS_LAN_RX_PROMISC | 1u << 31),
                     RS_STATUS_BAD_PARAM);
    RS_ASSERT_STATUS(qrs_set_lan_rx_mode(d, ~0u), RS_STATUS_BAD_PARAM);
    RS_ASSERT_OK(qrs_set_lan_rx_mode(d, RS_LAN_RX_BROADCAST));
    /* reserved fields are ignored */
    cmd_init(&cmd, RS_CMD_SET_LAN_RX_MODE);
    cmd.set_lan_rx_mode.flags = RS_LAN_RX_BROADCAST;
    cmd.set_lan_rx_mode.rsvd = 0xffffffff;
    RS_ASSERT_OK(qrs_admin_exec(d, &cmd, NULL));
}

static void test_lan_bad_input(void *obj, void *data,
                               QGuestAllocator *alloc)
{
    LanEnv e;
    QTestState *qts;
    uint64_t buf, big, rxbuf;
    uint8_t f[256], g[256];
    uint32_t idx, i;

    lan_setup(&e, obj, data, 0, 0);
    qts = qrs_qts(e.d);
    lan_bad_commands(&e);

    lan_ring_init(&e, &e.tx, RS_LAN_TXQ, 6, LAN_TX_VECTOR);
    buf = qrs_alloc_zeroed(e.d, PAGE);
    big = qrs_alloc_zeroed(e.d, 40000);
    lan_make_frame(f, 80, lan_bcast, 0x70);
    qtest_memwrite(qts, buf, f, 80);
    lan_make_frame(g, 90, lan_bcast, 0x71);
    qtest_memwrite(qts, buf + 128, g, 90);

    /* Doorbells the device ignores: nothing goes out. */
    idx = lan_post(&e, &e.tx, buf, 80, 0);
    qrs_db_writel(e.d, 1, RS_DB_LAN_TX, e.tx.pi);
    qrs_db_writel(e.d, DEF_DB_PAGES - 1, RS_DB_LAN_TX, e.tx.pi);
    qrs_db_writel(e.d, 0, RS_DB_LAN_TX, e.tx.pi | 1u << 16);
    qrs_db_writel(e.d, 0, RS_DB_LAN_TX, 65);     /* > ring size ahead */
    qrs_db_writel(e.d, 0, RS_DB_LAN_TX, 0xffff);
    qrs_db_writel(e.d, 0, RS_DB_LAN_RX, 1);      /* no RX queue */
    qrs_db_writel(e.d, 1, RS_DB_LAN_RX, 1);
    lan_expect_quiet(&e);
    g_assert_false(lan_done(&e, &e.tx, idx));
    /* ... and then the right one. */
    lan_doorbell(&e, &e.tx);
    lan_expect_frame(&e, f, 80);
    g_assert_cmphex(lan_status(&e, &e.tx, idx), ==, lan_ok(&e.tx, idx));

    /*
     * Bad descriptors: the frame is dropped, every descriptor of it is
     * completed with ERR, and the next frame still goes out.
     */
    {
        static const struct {
            const char *name;
            int n;              /* descriptors */
            int bad;            /* which one is bad, -1: the length */
            uint64_t addr;      /* 0: good buffer; 1: BAR0; 2: RAM end */
            uint16_t len;
            uint8_t flags;
        } rows[] = {
            { "len 0", 1, 0, 0, 0, 0 },
            { "len 0 in a chain", 3, 1, 0, 0, 0 },
            { "address far", 1, 0, FAR_ADDR, 80, 0 },
            { "address in BAR0", 1, 0, 1, 80, 0 },
            { "straddles the end of RAM", 2, 1, 2, 80, 0 },
            { "address wraps", 1, 0, 0xfffffffffffffff0ull, 80, 0 },
            { "unknown flag", 1, 0, 0, 80, 0x2 },
            { "chain too long", RS_LAN_MAX_FRAGS + 1, -1, 0, 0, 0 },
            { "frame too long", 2, -2, 0, 0, 0 },
        };
        int r;

        for (r = 0; r < ARRAY_SIZE(rows); r++) {
            uint32_t first = e.tx.pi;
            int n = rows[r].n, k;

            g_test_message("TX %s", rows[r].name);
            for (k = 0; k < n; k++) {
                uint64_t addr = buf;
                uint16_t len = 10;
                uint8_t flags = k < n - 1 ? RS_LAN_F_MORE : 0;

                if (rows[r].bad == -2) {
                    addr = big;
                    len = 40000;        /* two of them: > 65535 */
                } else if (k == rows[r].bad) {
                    addr = rows[r].addr == 0 ? buf :
                           rows[r].addr == 1 ? e.d->bar0.addr :
                           rows[r].addr == 2 ? ram_end(e.d) - 40 :
                           rows[r].addr;
                    len = rows[r].len;
                    flags |= rows[r].flags;
                }
                lan_post(&e, &e.tx, addr, len, flags);
            }
            idx = lan_post(&e, &e.tx, buf + 128, 90, 0);
            lan_doorbell(&e, &e.tx);
            lan_expect_frame(&e, g, 90);
            for (k = 0; k < n; k++) {
                g_assert_cmphex(lan_status(&e, &e.tx, first + k), ==,
                                lan_err(&e.tx, first + k));
            }
            g_assert_cmphex(lan_status(&e, &e.tx, idx), ==,
                            lan_ok(&e.tx, idx));
        }
    }
    lan_expect_quiet(&e);

    /*
     * A frame whose end is not posted yet waits; a chain that fills the
     * whole ring can never end and is dropped.
     */
    idx = lan_post(&e, &e.tx, buf, 14, RS_LAN_F_MORE);
    lan_doorbell(&e, &e.tx);
    lan_expect_quiet(&e);
    g_assert_false(lan_done(&e, &e.tx, idx));
    lan_post(&e, &e.tx, buf + 14, 66, 0);
    lan_doorbell(&e, &e.tx);
    lan_expect_frame(&e, f, 80);
    g_assert_cmphex(lan_status(&e, &e.tx, idx), ==, lan_ok(&e.tx, idx));
    idx = e.tx.pi;
    for (i = 0; i < 64; i++) {
        lan_post(&e, &e.tx, buf, 14, RS_LAN_F_MORE);
    }
    lan_doorbell(&e, &e.tx);
    for (i = 0; i < 64; i++) {
        g_assert_cmphex(lan_status(&e, &e.tx, idx + i), ==,
                        lan_err(&e.tx, idx + i));
    }
    idx = lan_post(&e, &e.tx, buf + 128, 90, 0);
    lan_doorbell(&e, &e.tx);
    lan_expect_frame(&e, g, 90);
    g_assert_cmphex(lan_status(&e, &e.tx, idx), ==, lan_ok(&e.tx, idx));

    /* RX: a buffer outside guest RAM or too small: ERR, then the next. */
    lan_ring_init(&e, &e.rx, RS_LAN_RXQ, 3, LAN_RX_VECTOR);
    rxbuf = lan_rx_buf(&e, LAN_BUF_SIZE);
    idx = lan_post(&e, &e.rx, FAR_ADDR, LAN_BUF_SIZE, 0);
    lan_post(&e, &e.rx, e.d->bar0.addr, LAN_BUF_SIZE, 0);
    lan_post(&e, &e.rx, ram_end(e.d) - 64, LAN_BUF_SIZE, 0);
    lan_post(&e, &e.rx, rxbuf, 79, 0);
    lan_post(&e, &e.rx, rxbuf, LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);
    for (i = 0; i < 5; i++) {
        lan_sock_send(e.fd, f, 80);
    }
    lan_expect_rx(&e, idx + 4, rxbuf, LAN_BUF_SIZE, f, 80);
    for (i = 0; i < 4; i++) {
        struct rs_lan_desc desc = lan_wait(&e, &e.rx, idx + i);

        g_assert_cmphex(desc.status, ==, lan_err(&e.rx, idx + i));
        g_assert_cmpuint(desc.len, ==, 0);
    }
    /* RX doorbell beyond the ring, or from another page: ignored. */
    qrs_db_writel(e.d, 0, RS_DB_LAN_RX, (e.rx.pi + 9) & 0xffff);
    qrs_db_writel(e.d, 2, RS_DB_LAN_RX, e.rx.pi + 1);
    lan_sock_send(e.fd, f, 80);
    g_usleep(LAN_QUIET_US);
    g_assert_false(lan_done(&e, &e.rx, e.rx.pi));
    fill(e.d, rxbuf, 0xee, LAN_BUF_SIZE);
    idx = lan_post(&e, &e.rx, rxbuf, LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);
    lan_expect_rx(&e, idx, rxbuf, LAN_BUF_SIZE, f, 80);

    g_assert_cmphex(qrs_readl(e.d, A_RS_STATUS), ==,
                    R_RS_STATUS_READY_MASK | R_RS_STATUS_LINK_UP_MASK);
    assert_alive(e.d);

    /* A reset forgets the queues. */
    qrs_reset(e.d);
    qrs_db_writel(e.d, 0, RS_DB_LAN_TX, 1);
    rs_setup(e.d);
    RS_ASSERT_STATUS(qrs_destroy(e.d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(e.d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_RXQ),
                     RS_STATUS_BAD_HANDLE);
    lan_expect_quiet(&e);
}

/*
 * Guest errors a peer's frames trigger are logged at a bounded rate: 256
 * frames into RX descriptors whose buffers are outside guest RAM, with
 * "-d guest_errors", log at most a burst per second, and the next line
 * after a quiet second says how many were left out.
 */
static char *lan_log_path;

static void *lan_log_before(GString *cmd_line, void *arg)
{
    void *sv = lan_before(cmd_line, arg);

    g_free(lan_log_path);
    lan_log_path = g_strdup_printf("%s/rdma-session-log-%d.txt",
                                   g_get_tmp_dir(), (int)getpid());
    unlink(lan_log_path);
    g_string_append_printf(cmd_line, " -d guest_errors -D %s ",
                           lan_log_path);
    return sv;
}

static int lan_log_count(const char *what)
{
    g_autofree char *text = NULL;
    const char *p;
    int n = 0;

    g_assert_true(g_file_get_contents(lan_log_path, &text, NULL, NULL));
    for (p = text; (p = strstr(p, what)); p++) {
        n++;
    }
    return n;
}

static void test_lan_log_rate(void *obj, void *data, QGuestAllocator *alloc)
{
    enum { FRAMES = 256 };
    const char *line = "rdma_session_err_lan_rx_buf: RX descriptor";
    int64_t t0, secs;
    uint32_t idx = 0;
    uint8_t f[80];
    LanEnv e;
    int i, n;

    lan_setup(&e, obj, data, 0, 8);
    for (i = 0; i < FRAMES; i++) {
        idx = lan_post(&e, &e.rx, FAR_ADDR, LAN_BUF_SIZE, 0);
    }
    lan_doorbell(&e, &e.rx);
    lan_make_frame(f, sizeof(f), qos_mac, 0x70);
    t0 = g_get_monotonic_time();
    for (i = 0; i < FRAMES; i++) {
        lan_sock_send(e.fd, f, sizeof(f));
    }
    g_assert_cmphex(lan_status(&e, &e.rx, idx), ==, lan_err(&e.rx, idx));
    secs = (g_get_monotonic_time() - t0) / G_USEC_PER_SEC;
    n = lan_log_count(line);
    g_test_message("%d frames in %" PRId64 " s: %d log lines", FRAMES,
                   secs, n);
    g_assert_cmpint(n, >=, 1);
    /* ten a second, and an interval that began before the first frame */
    g_assert_cmpint(n, <=, 10 * (secs + 2));
    g_assert_cmpint(lan_log_count("more not logged"), ==, 0);

    /* After a quiet second: logged again, with the count left out. */
    g_usleep(1100 * 1000);
    idx = lan_post(&e, &e.rx, FAR_ADDR, LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);
    lan_sock_send(e.fd, f, sizeof(f));
    g_assert_cmphex(lan_status(&e, &e.rx, idx), ==, lan_err(&e.rx, idx));
    g_assert_cmpint(lan_log_count(line), ==, n + 1);
    g_assert_cmpint(lan_log_count("more not logged"), ==, 1);
    assert_alive(e.d);
    unlink(lan_log_path);
}

/* Link down: TX completes and is discarded, RX frames are dropped. */
static void test_lan_link(void *obj, void *data, QGuestAllocator *alloc)
{
    LanEnv e;
    uint64_t buf, rxbuf;
    uint8_t f[100], g[100];
    uint32_t idx, rx;

    lan_setup(&e, obj, data, 4, 3);
    buf = qrs_alloc_zeroed(e.d, PAGE);
    rxbuf = lan_rx_buf(&e, LAN_BUF_SIZE);
    lan_make_frame(f, 100, lan_bcast, 0xa0);
    qtest_memwrite(qrs_qts(e.d), buf, f, 100);
    rx = lan_post(&e, &e.rx, rxbuf, LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);

    set_link(e.d, false);
    idx = lan_post(&e, &e.tx, buf, 100, 0);
    lan_doorbell(&e, &e.tx);
    g_assert_cmphex(lan_status(&e, &e.tx, idx), ==, lan_ok(&e.tx, idx));
    lan_expect_quiet(&e);
    lan_make_frame(g, 90, qos_mac, 0xa1);
    lan_sock_send(e.fd, g, 90);
    g_usleep(LAN_QUIET_US);
    g_assert_false(lan_done(&e, &e.rx, rx));

    set_link(e.d, true);
    lan_make_frame(g, 91, qos_mac, 0xa2);
    lan_sock_send(e.fd, g, 91);
    lan_expect_rx(&e, rx, rxbuf, LAN_BUF_SIZE, g, 91);
    idx = lan_post(&e, &e.tx, buf, 100, 0);
    lan_doorbell(&e, &e.tx);
    lan_expect_frame(&e, f, 100);
    g_assert_cmphex(lan_status(&e, &e.tx, idx), ==, lan_ok(&e.tx, idx));
    assert_alive(e.d);
}

/*
 * LAN queue state survives migration: after loading, the TX ring goes on
 * at its index and phase, the RX ring at its own, with the rx mode kept.
 */
static void test_lan_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    LanEnv e, *src = &e;
    QTestState *from, *to;
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-lan-XXXXXX",
                                             NULL);
    g_autofree char *path = g_strdup_printf("%s/state", tmpdir);
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autoptr(GString) cmd_line = g_string_new("");
    uint64_t buf, rxbuf[4];
    int sv[2];
    uint8_t f[128];
    QRdmaSession *d;
    QPCIBus *bus;
    LanEnv de;
    uint32_t idx, i;

    lan_setup(src, obj, data, 2, 2);
    from = qrs_qts(src->d);
    buf = qrs_alloc_zeroed(src->d, PAGE);
    for (i = 0; i < ARRAY_SIZE(rxbuf); i++) {
        rxbuf[i] = lan_rx_buf(src, LAN_BUF_SIZE);
    }
    RS_ASSERT_OK(qrs_set_lan_rx_mode(src->d, RS_LAN_RX_ALLMULTI));

    /* TX: 5 frames through the 4-entry ring, next one on lap 2. */
    for (i = 0; i < 5; i++) {
        lan_make_frame(f, 64 + i, lan_bcast, 0x80 + i);
        qtest_memwrite(from, buf, f, 64 + i);
        idx = lan_post(src, &src->tx, buf, 64 + i, 0);
        lan_doorbell(src, &src->tx);
        lan_expect_frame(src, f, 64 + i);
        g_assert_cmphex(lan_status(src, &src->tx, idx), ==,
                        lan_ok(&src->tx, idx));
    }
    /* TX work posted but not announced; RX: one frame in, one posted. */
    lan_make_frame(f, 100, lan_bcast, 0x90);
    qtest_memwrite(from, buf + 256, f, 100);
    idx = lan_post(src, &src->tx, buf + 256, 100, 0);
    lan_post(src, &src->rx, rxbuf[0], LAN_BUF_SIZE, 0);
    lan_post(src, &src->rx, rxbuf[1], LAN_BUF_SIZE, 0);
    lan_doorbell(src, &src->rx);
    lan_make_frame(f, 70, qos_mac, 0x91);
    lan_sock_send(src->fd, f, 70);
    lan_expect_rx(src, 0, rxbuf[0], LAN_BUF_SIZE, f, 70);

    qtest_qmp_assert_success(from, "{ 'execute': 'stop' }");
    qtest_qmp_assert_success(from, "{ 'execute': 'migrate',"
                             "  'arguments': { 'uri': %s } }", uri);
    wait_migration_done(from);

    /*
     * The destination gets a socket of its own: the stopped source still
     * reads the old one (the current command line is the one from before
     * lan_before()).
     */
    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    g_string_append(cmd_line, qos_get_current_command_line());
    qrs_qos_socket_netdev(cmd_line, sv[1]);
    to = qtest_initf("%s -incoming defer", cmd_line->str);
    qtest_qmp_assert_success(to, "{ 'execute': 'migrate-incoming',"
                             "  'arguments': { 'uri': %s } }", uri);
    wait_migration_done(to);
    qtest_qmp_assert_success(to, "{ 'execute': 'cont' }");

    bus = qpci_new_pc(to, NULL);
    d = g_new0(QRdmaSession, 1);
    qrs_attach_existing(d, bus, src->d->dev.devfn, src->d->alloc);
    d->admq = src->d->admq;
    d->acq = src->d->acq;
    d->aeq = src->d->aeq;
    d->admq_log = src->d->admq_log;
    d->aeq_log = src->d->aeq_log;
    d->admq_pi = src->d->admq_pi;
    d->aeq_ci = src->d->aeq_ci;
    d->next_cmd_id = src->d->next_cmd_id;
    d->scratch = src->d->scratch;
    de = *src;
    de.d = d;
    de.fd = sv[0];

    /* The driver learns that the VM moved, once it runs again. */
    expect_event(d, RS_EV_MIGRATION_NOTICE, 1);

    /* TX: the posted frame goes out at index 5, on the second lap. */
    g_assert_cmpuint(idx, ==, 5);
    lan_doorbell(&de, &de.tx);
    lan_make_frame(f, 100, lan_bcast, 0x90);
    lan_expect_frame(&de, f, 100);
    g_assert_cmphex(lan_status(&de, &de.tx, idx), ==, 0);
    wait_msg(d, de.msi + LAN_TX_VECTOR * 4, 0x1a40000 + LAN_TX_VECTOR);

    /* RX: the second posted buffer takes the next frame; ALLMULTI kept. */
    lan_make_frame(f, 72, lan_bcast, 0x92);
    lan_sock_send(de.fd, f, 72);            /* no BROADCAST: dropped */
    lan_make_frame(f, 73, (const uint8_t[6]) { 0x01, 0, 0x5e, 0, 0, 1 },
                   0x93);
    lan_sock_send(de.fd, f, 73);
    lan_expect_rx(&de, 1, rxbuf[1], LAN_BUF_SIZE, f, 73);
    /* ... and the ring goes on across its end. */
    fill(d, rxbuf[0], 0xee, LAN_BUF_SIZE);
    for (i = 2; i < 5; i++) {
        lan_post(&de, &de.rx, rxbuf[i % 4], LAN_BUF_SIZE, 0);
    }
    lan_doorbell(&de, &de.rx);
    for (i = 2; i < 5; i++) {
        lan_make_frame(f, 72 + i, qos_mac, 0x94 + i);
        lan_sock_send(de.fd, f, 72 + i);
        lan_expect_rx(&de, i, rxbuf[i % 4], LAN_BUF_SIZE, f, 72 + i);
    }
    g_assert_cmphex(lan_ok(&de.rx, 4), ==, 0);
    RS_ASSERT_STATUS(qrs_create_lan_queue(d, RS_LAN_TXQ, de.tx.ring, 2, 0,
                                          NULL), RS_STATUS_EXISTS);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_TXQ));
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_LAN_QUEUE, RS_LAN_RXQ));

    g_free(d);
    qpci_free_pc(bus);
    qtest_quit(to);
    close(sv[0]);
    close(sv[1]);
    unlink(path);
    rmdir(tmpdir);
    qos_invalidate_command_line();
}

/* ------------------------------------------------------------------ */
/* Transport engine: two adapters on a wire the test carries           */
/* ------------------------------------------------------------------ */

/*
 * Two adapters in one guest, each on "-netdev socket" on one end of a
 * socketpair.  The test holds the other ends and is the wire: it moves
 * every frame from one adapter to the other, checks its headers and ICRC
 * on the way, counts it, and may keep it instead (to inject it later, or
 * changed).  So every RoCE packet really leaves one adapter through its
 * netdev and enters the other through its own; nothing goes through the
 * loopback path of one adapter.
 *
 * Adapter A (index 0) is the qos graph's; B (index 1) sits in slot
 * PAIR_SLOT.  GID 0 of adapter i is 10.0.0.(i + 1) in VNI 0; tests that
 * need it add GID 1, 10.0.1.(i + 1) in VNI 1.
 */
#define PAIR_SLOT       0x1f
#define PAIR_NETDEV     "rsnet1"
#define PAIR_MAC_STR    "52:54:00:12:34:71"
#define PAIR_BUF        (8 * PAGE)
#define PAIR_CQ_LOG     6
#define PAIR_OPS        64
#define PAIR_FRAME_MAX  4352
/* Local ACK timeout 4.096 us * 2^20 = 4.3 s of virtual time: no resends. */
#define PAIR_TIMEOUT    20

#define GRH_SIZE        40
#define ROCE_BTH        (14 + 20 + 8)
#define ROCE_EXT        (ROCE_BTH + 12)

/* IBTA BTH opcodes (RC unless named) and AETH syndromes. */
enum {
    OP_SEND_FIRST = 0x00,
    OP_SEND_MIDDLE = 0x01,
    OP_SEND_LAST = 0x02,
    OP_SEND_LAST_IMM = 0x03,
    OP_SEND_ONLY = 0x04,
    OP_SEND_ONLY_IMM = 0x05,
    OP_WRITE_FIRST = 0x06,
    OP_WRITE_MIDDLE = 0x07,
    OP_WRITE_LAST = 0x08,
    OP_WRITE_LAST_IMM = 0x09,
    OP_WRITE_ONLY = 0x0a,
    OP_WRITE_ONLY_IMM = 0x0b,
    OP_READ_REQ = 0x0c,
    OP_READ_RESP_FIRST = 0x0d,
    OP_READ_RESP_MIDDLE = 0x0e,
    OP_READ_RESP_LAST = 0x0f,
    OP_READ_RESP_ONLY = 0x10,
    OP_ACK = 0x11,
    OP_UD_SEND_ONLY = 0x64,
    OP_UD_SEND_ONLY_IMM = 0x65,

    AETH_ACK = 0x1f,
    AETH_RNR = 0x20,            /* | the RNR timer code */
    AETH_NAK_SEQ = 0x60,
    AETH_NAK_INV_REQ = 0x61,
    AETH_NAK_REM_ACCESS = 0x62,
    AETH_NAK_REM_OP = 0x63,
};

static const uint8_t pair_mac[2][6] = {
    RS_QOS_MAC, { 0x52, 0x54, 0x00, 0x12, 0x34, 0x71 },
};
/* First send PSN of each side: A's first message crosses 2^24. */
static const uint32_t pair_psn[2] = { 0xfffffe, 0x000100 };

typedef struct PairSockets {
    int test[2], qemu[2];
    int old[2];                 /* after pair_migrate(): the source's wire */
    char *b_props;              /* more properties of adapter B */
} PairSockets;

typedef struct Peer {
    QRdmaSession *d;
    EngCq cq;
    uint32_t pd;
    uint64_t buf;               /* PAIR_BUF bytes, page aligned */
    uint32_t key[2];            /* MR over buf, all rights, through GID i */
    uint8_t *img;               /* what buf must hold */
} Peer;

typedef struct Pair {
    int fd[2];                  /* the test's ends of A's and B's wire */
    bool hold[2];               /* keep frames from A / B, do not relay */
    uint64_t drop[2];           /* bit n: lose frame n since the reset */
    GQueue held[2];             /* of GByteArray */
    uint8_t op[2][PAIR_OPS];    /* BTH opcodes since pair_log_reset() */
    uint8_t syn[2][PAIR_OPS];   /* their AETH syndromes, if any */
    uint32_t psn[2][PAIR_OPS];
    unsigned nops[2];
    uint8_t *frame;             /* RS_LAN_MAX_FRAME bytes */
    uint8_t last[2][PAIR_FRAME_MAX];
    size_t last_len[2];
    Peer p[2];
    QRdmaSession b;
    PairSockets *sock;
    /* After pair_migrate(): the destination QEMU, where p[].d are now. */
    QTestState *to;
    QPCIBus *to_bus;
    QRdmaSession to_dev[2];
    unsigned announced[2];      /* gratuitous ARPs from A / B, not logged */
} Pair;

static void pair_sockets_free(void *opaque)
{
    PairSockets *s = opaque;
    int i;

    for (i = 0; i < 2; i++) {
        close(s->test[i]);
        close(s->qemu[i]);
        if (s->old[i] >= 0) {
            close(s->old[i]);
        }
    }
    g_free(s->b_props);
    g_free(s);
}

/* A's and B's netdevs on the QEMU ends of the wires, and B itself. */
static void pair_cmd_line(GString *cmd_line, const PairSockets *s)
{
    qrs_qos_socket_netdev(cmd_line, s->qemu[0]);
    g_string_append_printf(cmd_line, " -netdev socket,fd=%d,id=" PAIR_NETDEV
                           " -device rdma-session,netdev=" PAIR_NETDEV
                           ",mac=" PAIR_MAC_STR ",addr=0x%x.0%s ",
                           s->qemu[1], PAIR_SLOT, s->b_props);
}

static void *pair_before(GString *cmd_line, void *arg)
{
    PairSockets *s = g_new(PairSockets, 1);
    int i, sv[2];

    for (i = 0; i < 2; i++) {
        g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
        qemu_set_cloexec(sv[0]);
        s->test[i] = sv[0];
        s->qemu[i] = sv[1];
        s->old[i] = -1;
    }
    /* @arg: more properties for adapter B, or NULL. */
    s->b_props = g_strdup(arg ? (char *)arg : "");
    pair_cmd_line(cmd_line, s);
    g_test_queue_destroy(pair_sockets_free, s);
    qos_invalidate_command_line();
    return s;
}

/* CRC-32 (IEEE 802.3, reflected), as the ICRC uses it. */
static uint32_t crc32_ieee(uint32_t crc, const uint8_t *p, size_t n)
{
    int k;

    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
        }
    }
    return ~crc;
}

/*
 * ICRC of a RoCEv2/IPv4 frame (IBTA A17.8): over 8 bytes of ones, the
 * IPv4 header with TOS, TTL and checksum as ones, the UDP header with its
 * checksum as ones, the BTH with byte 4 as ones, and the rest up to the
 * ICRC; stored little endian.
 */
static uint32_t roce_icrc(const uint8_t *f, size_t icrc_off)
{
    uint8_t ph[8 + ROCE_EXT - 14];
    uint32_t crc;

    memset(ph, 0xff, 8);
    memcpy(ph + 8, f + 14, ROCE_EXT - 14);
    ph[8 + 1] = ph[8 + 8] = ph[8 + 10] = ph[8 + 11] = 0xff;
    ph[8 + 20 + 6] = ph[8 + 20 + 7] = 0xff;
    ph[8 + 28 + 4] = 0xff;
    crc = crc32_ieee(0, ph, sizeof(ph));
    return crc32_ieee(crc, f + ROCE_EXT, icrc_off - ROCE_EXT);
}

static uint16_t ip4_csum(const uint8_t *h)
{
    uint32_t sum = 0;
    int i;

    for (i = 0; i < 20; i += 2) {
        sum += lduw_be_p(h + i);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum;
}

/* After a change to a frame of @len bytes: lengths, checksum, ICRC. */
static void roce_reseal(uint8_t *f, size_t len)
{
    stw_be_p(f + 16, len - 14);
    stw_be_p(f + 14 + 20 + 4, len - 14 - 20);
    stw_be_p(f + 24, 0);
    stw_be_p(f + 24, ip4_csum(f + 14));
    stl_le_p(f + len - 4, roce_icrc(f, len - 4));
}

/* Does AETH follow the BTH of this opcode (ACK, READ response)? */
static bool roce_has_aeth(uint8_t op)
{
    return op == OP_READ_RESP_FIRST || op == OP_READ_RESP_LAST ||
           op == OP_READ_RESP_ONLY || op == OP_ACK || op == OP_ACK + 1;
}

/* A frame adapter @from put on the wire: well formed RoCEv2 from it. */
static void pair_check_frame(int from, const uint8_t *f, size_t len)
{
    g_assert_cmpuint(len, >=, ROCE_EXT + 4);
    g_assert_cmpmem(f, 6, pair_mac[!from], 6);
    g_assert_cmpmem(f + 6, 6, pair_mac[from], 6);
    g_assert_cmphex(lduw_be_p(f + 12), ==, 0x0800);
    g_assert_cmphex(f[14], ==, 0x45);
    g_assert_cmpuint(lduw_be_p(f + 16), ==, len - 14);
    g_assert_cmphex(f[14 + 9], ==, 17);
    g_assert_cmphex(ip4_csum(f + 14), ==, 0);
    g_assert_cmpuint(f[14 + 12], ==, 10);
    g_assert_cmpuint(f[14 + 15], ==, from + 1);
    g_assert_cmpuint(f[14 + 19], ==, !from + 1);
    g_assert_cmpuint(lduw_be_p(f + 14 + 20 + 2), ==, 4791);
    g_assert_cmpuint(lduw_be_p(f + 14 + 20 + 4), ==, len - 14 - 20);
    g_assert_cmphex(f[ROCE_BTH + 1] & 0xf, ==, 0);     /* TVer */
    g_assert_cmphex((uint32_t)ldl_le_p(f + len - 4), ==,
                    roce_icrc(f, len - 4));
}

/*
 * After a migration the destination's adapters tell the network where
 * their GIDs are now (QEMU's announce-self, on a real-time timer): a
 * gratuitous ARP per IPv4 GID.  Is this one of them?
 */
static bool pair_is_announce(int from, const uint8_t *f, size_t len)
{
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

    if (len < 42 || lduw_be_p(f + 12) != 0x0806) {
        return false;
    }
    g_assert_cmpmem(f, 6, bcast, 6);
    g_assert_cmpmem(f + 6, 6, pair_mac[from], 6);
    g_assert_cmpuint(lduw_be_p(f + 20), ==, 1);
    g_assert_cmpmem(f + 22, 6, pair_mac[from], 6);
    g_assert_cmphex(ldl_be_p(f + 28), ==, ldl_be_p(f + 38));
    g_assert_cmpuint(f[28], ==, 10);
    g_assert_cmpuint(f[31], ==, from + 1);
    return true;
}

/* Log the frame of @len bytes in pr->frame from adapter @i; move it on. */
static void pair_handle(Pair *pr, int i, size_t len)
{
    if (pr->to && pair_is_announce(i, pr->frame, len)) {
        pr->announced[i]++;
        return;
    }
    pair_check_frame(i, pr->frame, len);
    g_assert_cmpuint(pr->nops[i], <, PAIR_OPS);
    pr->op[i][pr->nops[i]] = pr->frame[ROCE_BTH];
    pr->syn[i][pr->nops[i]] = roce_has_aeth(pr->frame[ROCE_BTH]) ?
                              pr->frame[ROCE_EXT] : 0;
    pr->psn[i][pr->nops[i]] = ldl_be_p(pr->frame + ROCE_BTH + 8) &
                              0xffffff;
    pr->nops[i]++;
    g_assert_cmpuint(len, <=, sizeof(pr->last[i]));
    memcpy(pr->last[i], pr->frame, len);
    pr->last_len[i] = len;
    if (pr->drop[i] >> (pr->nops[i] - 1) & 1) {
        return;
    }
    if (pr->hold[i]) {
        g_queue_push_tail(&pr->held[i],
                          g_byte_array_new_take(g_memdup2(pr->frame, len),
                                                len));
    } else {
        lan_sock_send(pr->fd[!i], pr->frame, len);
    }
}

/* Move (or keep) every frame the adapters have put on the wire. */
static void pair_pump(void *opaque)
{
    Pair *pr = opaque;
    int i;

    for (i = 0; i < 2; i++) {
        GPollFD pfd = { .fd = pr->fd[i], .events = G_IO_IN };
        ssize_t len;

        while (g_poll(&pfd, 1, 0) == 1) {
            len = lan_sock_recv(pr->fd[i], pr->frame, RS_LAN_MAX_FRAME,
                                RS_QOS_TIMEOUT_US);
            g_assert_cmpint(len, >, 0);
            pair_handle(pr, i, len);
        }
    }
}

static void pair_log_reset(Pair *pr)
{
    pair_pump(pr);
    pr->nops[0] = pr->nops[1] = 0;
    pr->drop[0] = pr->drop[1] = 0;
}

/* The frames from adapter @from since pair_log_reset(): these opcodes. */
static void pair_expect_ops(Pair *pr, int from, const uint8_t *ops,
                            unsigned n)
{
    unsigned i;

    pair_pump(pr);
    g_assert_cmpuint(pr->nops[from], ==, n);
    for (i = 0; i < n; i++) {
        g_assert_cmphex(pr->op[from][i], ==, ops[i]);
    }
}
#define PAIR_EXPECT_OPS(pr, from, ...)                                    \
    do {                                                                  \
        static const uint8_t ops_[] = { __VA_ARGS__ };                    \
        pair_expect_ops(pr, from, ops_, ARRAY_SIZE(ops_));                \
    } while (0)
#define PAIR_EXPECT_NONE(pr, from) pair_expect_ops(pr, from, NULL, 0)

/* Until adapter @from has put @n frames on the wire since the reset. */
static void pair_wait_frames(Pair *pr, int from, unsigned n)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    for (pair_pump(pr); pr->nops[from] < n; pair_pump(pr)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/* The next frame adapter @from sent while held; g_byte_array_unref it. */
static GByteArray *pair_take(Pair *pr, int from)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    g_assert_true(pr->hold[from]);
    for (;;) {
        pair_pump(pr);
        if (!g_queue_is_empty(&pr->held[from])) {
            return g_queue_pop_head(&pr->held[from]);
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        qtest_clock_step(qrs_qts(pr->p[0].d), 1000);
    }
}

/* Put a frame on adapter @to's wire as if its peer had sent it. */
static void pair_inject(Pair *pr, int to, const uint8_t *f, size_t len)
{
    lan_sock_send(pr->fd[to], f, len);
}

static void pair_poll(Pair *pr, int i, struct rs_cqe *cqe)
{
    eng_poll(pr->p[i].d, &pr->p[i].cq, cqe, pair_pump, pr);
}

/* No completion is waiting on adapter @i's CQ. */
static void pair_cq_empty(Pair *pr, int i)
{
    struct rs_cqe cqe;

    pair_pump(pr);
    g_assert_false(eng_cq_peek(pr->p[i].d, &pr->p[i].cq, &cqe));
}

static void assert_cqe(const struct rs_cqe *cqe, uint64_t wr_id,
                       uint8_t status, uint8_t opcode, uint32_t qpn)
{
    g_assert_cmphex(cqe->wr_id, ==, wr_id);
    g_assert_cmpuint(cqe->status, ==, status);
    g_assert_cmphex(cqe->opcode, ==, opcode);
    g_assert_cmpuint(cqe->qpn, ==, qpn);
}

/* Write a pattern to @len bytes at @off of peer @p's buffer. */
static void peer_fill(Peer *p, uint32_t off, uint32_t len, uint8_t seed)
{
    uint32_t i;

    g_assert_cmpuint(off + len, <=, PAIR_BUF);
    for (i = 0; i < len; i++) {
        p->img[off + i] = seed + i * 13 + (i >> 8) * 7;
    }
    qtest_memwrite(qrs_qts(p->d), p->buf + off, p->img + off, len);
}

/* The whole buffer must be as expected, byte by byte. */
static void peer_check(Peer *p)
{
    g_autofree uint8_t *got = g_malloc(PAIR_BUF);
    uint32_t i;

    qtest_memread(qrs_qts(p->d), p->buf, got, PAIR_BUF);
    for (i = 0; i < PAIR_BUF && got[i] == p->img[i]; i++) {
        continue;
    }
    if (i < PAIR_BUF) {
        g_test_message("buffer byte 0x%x is 0x%x, expected 0x%x", i, got[i],
                       p->img[i]);
    }
    g_assert_cmpuint(i, ==, PAIR_BUF);
}

/* Accept whatever the adapter left in a range IBTA leaves undefined. */
static void peer_dont_care(Peer *p, uint32_t off, uint32_t len)
{
    qtest_memread(qrs_qts(p->d), p->buf + off, p->img + off, len);
}

static struct rs_sge peer_sge(Peer *p, uint32_t off, uint32_t len)
{
    return (struct rs_sge) {
        .addr = p->buf + off, .length = len, .lkey = p->key[0],
    };
}

static void pair_setup(Pair *pr, void *obj, void *data,
                       QGuestAllocator *alloc)
{
    QRdmaSession *a = obj;
    int i;

    memset(pr, 0, sizeof(*pr));
    pr->sock = data;
    qrs_attach_new(&pr->b, a->dev.bus, QPCI_DEVFN(PAIR_SLOT, 0), alloc);
    pr->p[0].d = a;
    pr->p[1].d = &pr->b;
    pr->frame = g_malloc(RS_LAN_MAX_FRAME);
    for (i = 0; i < 2; i++) {
        Peer *p = &pr->p[i];

        pr->fd[i] = ((PairSockets *)data)->test[i];
        g_queue_init(&pr->held[i]);
        rs_setup(p->d);
        add_gid_v4(p->d, 0, i + 1);
        p->pd = new_pd(p->d);
        eng_cq_init(p->d, &p->cq, PAIR_CQ_LOG);
        p->buf = loop_buf(p->d, PAIR_BUF);
        p->key[0] = eng_mr(p->d, p->pd, 0, p->buf, PAIR_BUF, STD_ACCESS);
        p->img = g_malloc(PAIR_BUF);
        peer_fill(p, 0, PAIR_BUF, 0x40 * (i + 1));
    }
}

/* GID 1 (VNI 1) on both adapters, and the buffers' MRs through it. */
static void pair_add_vni1(Pair *pr)
{
    int i;

    for (i = 0; i < 2; i++) {
        Peer *p = &pr->p[i];

        add_gid_v4(p->d, 1, i + 1);
        p->key[1] = eng_mr(p->d, p->pd, 1, p->buf, PAIR_BUF, STD_ACCESS);
    }
}

static void pair_teardown(Pair *pr)
{
    int i;

    pair_pump(pr);
    for (i = 0; i < 2; i++) {
        g_assert_true(g_queue_is_empty(&pr->held[i]));
        assert_alive(pr->p[i].d);
        g_free(pr->p[i].img);
    }
    qrs_detach(&pr->b);
    if (pr->to) {
        qpci_free_pc(pr->to_bus);
        qtest_quit(pr->to);
    }
    g_free(pr->frame);
}

/* Create QP @q of @type on adapter @i in @pd, 4 SGEs each way. */
static void pair_qp(Pair *pr, int i, LoopQp *q, uint8_t type, uint32_t pd)
{
    Peer *p = &pr->p[i];

    memset(q, 0, sizeof(*q));
    qp_template(p->d, &q->c, type, pd, p->cq.h, p->cq.h);
    q->c.max_send_sge = q->c.max_recv_sge = 4;
    q->c.sq_addr = qrs_alloc_zeroed(p->d, qrs_qp_sq_bytes(&q->c));
    q->c.rq_addr = qrs_alloc_zeroed(p->d, qrs_qp_rq_bytes(&q->c));
    q->h = new_qp(p->d, &q->c);
    q->qpn = HINDEX(q->h);
}

/*
 * A connected RC pair: q[0] on A, q[1] on B, through GID @gid of both,
 * in the adapters' PDs; B's QP allows @resp_access.
 */
static void pair_rc_mtu(Pair *pr, LoopQp q[2], uint32_t gid,
                        uint16_t resp_access, uint8_t path_mtu)
{
    struct rs_qp_attr a;
    int i;

    for (i = 0; i < 2; i++) {
        pair_qp(pr, i, &q[i], RS_QPT_RC, pr->p[i].pd);
    }
    for (i = 0; i < 2; i++) {
        std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
        gid_v4(a.ah.dgid, 10, 0, gid, !i + 1);
        memcpy(a.ah.dmac, pair_mac[!i], 6);
        a.ah.gid_index = gid;
        a.dest_qp_num = q[!i].qpn;
        a.sq_psn = pair_psn[i];
        a.rq_psn = pair_psn[!i];
        a.timeout = PAIR_TIMEOUT;
        a.access_flags = i ? resp_access : STD_ACCESS;
        a.path_mtu = path_mtu;
        eng_connect(pr->p[i].d, &q[i], RS_QPT_RC, &a, 0);
    }
}

static void pair_rc(Pair *pr, LoopQp q[2], uint32_t gid,
                    uint16_t resp_access)
{
    pair_rc_mtu(pr, q, gid, resp_access, RS_MTU_1024);
}

/* Post a signaled work request on adapter @i's QP @q. */
static void pair_post(Pair *pr, int i, LoopQp *q, uint8_t opcode,
                      uint64_t wr_id, const struct rs_sge *sge, uint8_t n,
                      uint64_t raddr, uint32_t rkey, uint32_t imm)
{
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id,
        .opcode = opcode,
        .flags = RS_WQE_F_SIGNALED,
        .num_sge = n,
        .imm_or_inv = imm,
        .remote_addr = raddr,
        .rkey = rkey,
    };

    eng_post_send(pr->p[i].d, q, &w, sge, n);
}

/* Copy what a transfer moves into the expected image of the target. */
static void img_move(Peer *dst, uint32_t doff, Peer *src, uint32_t soff,
                     uint32_t len)
{
    memmove(dst->img + doff, src->img + soff, len);
}

static void test_engine_pair_rc(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    static const uint32_t sizes[] = { 1, 1023, 1024, 1025, 2048, 4097 };
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    LoopQp q[2];
    struct rs_sge ss[4], rs[4];
    struct rs_cqe cqe;
    int i;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);

    /*
     * SEND with immediate, 3000 bytes from two SGEs into three: three
     * packets at MTU 1024, whose PSNs cross 2^24; one ACK.
     */
    pair_log_reset(&pr);
    ss[0] = peer_sge(a, 0x10, 1000);
    ss[1] = peer_sge(a, 0x2000, 2000);
    rs[0] = peer_sge(b, 0x100, 512);
    rs[1] = peer_sge(b, 0x1000, 1500);
    rs[2] = peer_sge(b, 0x3000, 4000);
    eng_post_recv(b->d, &q[1], 0xb0, rs, 3);
    pair_post(&pr, 0, &q[0], RS_WR_SEND_IMM, 0xa0, ss, 2, 0, 0,
              0x01020304);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0x01020304);
    g_assert_cmphex(cqe.wc_flags, ==, RS_WC_F_IMM);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_SEND_IMM, q[0].qpn);
    PAIR_EXPECT_OPS(&pr, 0, OP_SEND_FIRST, OP_SEND_MIDDLE,
                    OP_SEND_LAST_IMM);
    g_assert_cmphex(pr.psn[0][0], ==, 0xfffffe);
    g_assert_cmphex(pr.psn[0][2], ==, 0);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_ACK);
    g_assert_cmphex(pr.psn[1][0], ==, 0);
    img_move(b, 0x100, a, 0x10, 512);
    img_move(b, 0x1000, a, 0x10 + 512, 488);
    img_move(b, 0x1000 + 488, a, 0x2000, 1012);
    img_move(b, 0x3000, a, 0x2000 + 1012, 988);
    peer_check(a);
    peer_check(b);

    /* SENDs around the MTU, each into a buffer exactly its size. */
    for (i = 0; i < ARRAY_SIZE(sizes); i++) {
        uint32_t n = sizes[i], soff = 0x4000 + i, doff = 0x6000 - i;

        pair_log_reset(&pr);
        peer_fill(a, soff, n, i);
        rs[0] = peer_sge(b, doff, n);
        eng_post_recv(b->d, &q[1], 0xb1 + i, rs, 1);
        ss[0] = peer_sge(a, soff, n);
        pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa1 + i, ss, 1, 0, 0, 0);
        pair_poll(&pr, 1, &cqe);
        assert_cqe(&cqe, 0xb1 + i, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
        g_assert_cmpuint(cqe.byte_len, ==, n);
        g_assert_cmphex(cqe.wc_flags, ==, 0);
        pair_poll(&pr, 0, &cqe);
        assert_cqe(&cqe, 0xa1 + i, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
        pair_pump(&pr);
        g_assert_cmpuint(pr.nops[0], ==, DIV_ROUND_UP(n, 1024));
        g_assert_cmpuint(pr.nops[1], ==, 1);
        img_move(b, doff, a, soff, n);
        peer_check(b);
    }

    /* RDMA WRITE of 5000 bytes from two SGEs to an odd address. */
    pair_log_reset(&pr);
    ss[0] = peer_sge(a, 0x123, 3000);
    ss[1] = peer_sge(a, 0x5000, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa8, ss, 2,
              b->buf + 0x777, b->key[0], 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa8, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_MIDDLE,
                    OP_WRITE_MIDDLE, OP_WRITE_MIDDLE, OP_WRITE_LAST);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    pair_cq_empty(&pr, 1);
    img_move(b, 0x777, a, 0x123, 3000);
    img_move(b, 0x777 + 3000, a, 0x5000, 2000);
    peer_check(b);

    /* RDMA WRITE with immediate: consumes a receive, not its buffer. */
    pair_log_reset(&pr);
    rs[0] = peer_sge(b, 0x7000, 64);
    eng_post_recv(b->d, &q[1], 0xb8, rs, 1);
    ss[0] = peer_sge(a, 0x3333, 1500);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE_IMM, 0xa9, ss, 1,
              b->buf + 0x10, b->key[0], 0xdeadbeef);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb8, RS_WC_SUCCESS, RS_WR_RECV_RDMA_IMM, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1500);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0xdeadbeef);
    g_assert_cmphex(cqe.wc_flags, ==, RS_WC_F_IMM);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa9, RS_WC_SUCCESS, RS_WR_RDMA_WRITE_IMM, q[0].qpn);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST_IMM);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    img_move(b, 0x10, a, 0x3333, 1500);
    peer_check(b);

    /* RDMA READ of 5000 bytes into three SGEs: five responses. */
    pair_log_reset(&pr);
    peer_fill(b, 0x2100, 5000, 0x77);
    ss[0] = peer_sge(a, 0x0, 100);
    ss[1] = peer_sge(a, 0x1001, 4000);
    ss[2] = peer_sge(a, 0x7000, 900);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xaa, ss, 3,
              b->buf + 0x2100, b->key[0], 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xaa, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 5000);
    PAIR_EXPECT_OPS(&pr, 0, OP_READ_REQ);
    PAIR_EXPECT_OPS(&pr, 1, OP_READ_RESP_FIRST, OP_READ_RESP_MIDDLE,
                    OP_READ_RESP_MIDDLE, OP_READ_RESP_MIDDLE,
                    OP_READ_RESP_LAST);
    pair_cq_empty(&pr, 1);
    img_move(a, 0, b, 0x2100, 100);
    img_move(a, 0x1001, b, 0x2100 + 100, 4000);
    img_move(a, 0x7000, b, 0x2100 + 4100, 900);
    peer_check(a);
    peer_check(b);

    /* Zero-length SEND, WRITE and READ: one packet each, no data. */
    pair_log_reset(&pr);
    eng_post_recv(b->d, &q[1], 0xb9, NULL, 0);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xab, NULL, 0, 0, 0, 0);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xac, NULL, 0,
              b->buf, b->key[0], 0);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xad, NULL, 0,
              b->buf, b->key[0], 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb9, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xab, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xac, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xad, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 0);
    PAIR_EXPECT_OPS(&pr, 0, OP_SEND_ONLY, OP_WRITE_ONLY,
                    OP_READ_REQ);
    peer_check(a);
    peer_check(b);

    /* And back: B SENDs to A. */
    pair_log_reset(&pr);
    rs[0] = peer_sge(a, 0x6800, 2000);
    eng_post_recv(a->d, &q[0], 0xa0b0, rs, 1);
    ss[0] = peer_sge(b, 0x200, 1999);
    pair_post(&pr, 1, &q[1], RS_WR_SEND, 0xb0a0, ss, 1, 0, 0, 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0b0, RS_WC_SUCCESS, RS_WR_RECV, q[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1999);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0a0, RS_WC_SUCCESS, RS_WR_SEND, q[1].qpn);
    PAIR_EXPECT_OPS(&pr, 1, OP_SEND_FIRST, OP_SEND_LAST);
    PAIR_EXPECT_OPS(&pr, 0, OP_ACK);
    img_move(a, 0x6800, b, 0x200, 1999);
    peer_check(a);
    peer_check(b);

    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

/* A UD SEND of @len bytes at @off of A's buffer to B's QP @qpn. */
static void pair_post_ud(Pair *pr, LoopQp *q, uint32_t ah, uint64_t wr_id,
                         uint32_t off, uint32_t len, uint32_t qpn,
                         uint32_t qkey, bool imm)
{
    struct rs_sge sge = peer_sge(&pr->p[0], off, len);
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id,
        .opcode = imm ? RS_WR_SEND_IMM : RS_WR_SEND,
        .flags = RS_WQE_F_SIGNALED,
        .num_sge = 1,
        .imm_or_inv = 0x11223344,
        .ah = ah,
        .remote_qpn = qpn,
        .remote_qkey = qkey,
    };

    eng_post_send(pr->p[0].d, q, &w, &sge, 1);
}

static void test_engine_pair_ud(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_cmd_create_ah ac;
    struct rs_sge rs[2];
    struct rs_cqe cqe;
    LoopQp q[2];
    uint32_t ah;
    int i;

    pair_setup(&pr, obj, data, alloc);
    for (i = 0; i < 2; i++) {
        pair_qp(&pr, i, &q[i], RS_QPT_UD, pr.p[i].pd);
        qp_walk(pr.p[i].d, q[i].h, RS_QPT_UD, RS_QPS_RTS);
    }
    ah_template(&ac, a->pd, 0);
    memcpy(ac.dmac, pair_mac[1], 6);
    RS_ASSERT_OK(qrs_create_ah(a->d, &ac, &ah));

    /*
     * SEND with immediate: the receive buffer starts with the 40-byte GRH
     * area, the IPv4 header in its last 20 bytes (RoCEv2), then the data.
     */
    pair_log_reset(&pr);
    rs[0] = peer_sge(b, 0x100, GRH_SIZE);
    rs[1] = peer_sge(b, 0x1000, 512);
    eng_post_recv(b->d, &q[1], 0xb0, rs, 2);
    pair_post_ud(&pr, &q[0], ah, 0xa0, 0x500, 300, q[1].qpn, STD_QKEY, true);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_SEND_IMM, q[0].qpn);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, GRH_SIZE + 300);
    g_assert_cmpuint(cqe.src_qp, ==, q[0].qpn);
    g_assert_cmphex(cqe.wc_flags, ==, RS_WC_F_GRH | RS_WC_F_IMM);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0x11223344);
    PAIR_EXPECT_OPS(&pr, 0, OP_UD_SEND_ONLY_IMM);
    PAIR_EXPECT_NONE(&pr, 1);
    g_assert_cmphex((uint32_t)ldl_be_p(pr.last[0] + ROCE_EXT), ==, STD_QKEY);
    g_assert_cmphex(ldl_be_p(pr.last[0] + ROCE_EXT + 4), ==, q[0].qpn);
    memset(b->img + 0x100, 0, 20);
    memcpy(b->img + 0x100 + 20, pr.last[0] + 14, 20);
    img_move(b, 0x1000, a, 0x500, 300);
    peer_check(b);

    /*
     * A wrong Q_Key and an unknown QP drop the datagram (the sender does
     * not know); a Q_Key with bit 31 set means the sender QP's own.
     */
    pair_log_reset(&pr);
    rs[0] = peer_sge(b, 0x2000, GRH_SIZE + 1024);
    eng_post_recv(b->d, &q[1], 0xb1, rs, 1);
    peer_fill(a, 0x600, 1024, 0x31);
    pair_post_ud(&pr, &q[0], ah, 0xa1, 0x600, 1000, q[1].qpn,
                 STD_QKEY ^ 1, false);
    pair_post_ud(&pr, &q[0], ah, 0xa2, 0x600, 1001, 0xabc, STD_QKEY, false);
    pair_post_ud(&pr, &q[0], ah, 0xa3, 0x601, 1002, q[1].qpn, 0x80000000u,
                 false);
    for (i = 1; i <= 3; i++) {
        pair_poll(&pr, 0, &cqe);
        assert_cqe(&cqe, 0xa0 + i, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    }
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, GRH_SIZE + 1002);
    g_assert_cmphex(cqe.wc_flags, ==, RS_WC_F_GRH);
    PAIR_EXPECT_OPS(&pr, 0, OP_UD_SEND_ONLY, OP_UD_SEND_ONLY,
                    OP_UD_SEND_ONLY);
    memset(b->img + 0x2000, 0, 20);
    memcpy(b->img + 0x2000 + 20, pr.last[0] + 14, 20);
    img_move(b, 0x2000 + GRH_SIZE, a, 0x601, 1002);
    peer_check(b);
    pair_cq_empty(&pr, 1);

    /*
     * Longer than the receive buffer: that receive completes with a local
     * length error and nothing written; the QP goes on receiving.
     */
    rs[0] = peer_sge(b, 0x3000, GRH_SIZE + 100);
    eng_post_recv(b->d, &q[1], 0xb2, rs, 1);
    rs[0] = peer_sge(b, 0x3800, GRH_SIZE + 200);
    eng_post_recv(b->d, &q[1], 0xb3, rs, 1);
    pair_post_ud(&pr, &q[0], ah, 0xa4, 0x700, 101, q[1].qpn, STD_QKEY,
                 false);
    pair_post_ud(&pr, &q[0], ah, 0xa5, 0x700, 200, q[1].qpn, STD_QKEY,
                 false);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb2, RS_WC_LOC_LEN_ERR, RS_WR_RECV, q[1].qpn);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb3, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, GRH_SIZE + 200);
    for (i = 4; i <= 5; i++) {
        pair_poll(&pr, 0, &cqe);
        assert_cqe(&cqe, 0xa0 + i, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    }
    memset(b->img + 0x3800, 0, 20);
    memcpy(b->img + 0x3800 + 20, pr.last[0] + 14, 20);
    img_move(b, 0x3800 + GRH_SIZE, a, 0x700, 200);
    peer_check(b);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);

    /*
     * A datagram larger than the path MTU cannot be sent: a local length
     * error, nothing on the wire, and the QP goes to the error state.
     */
    pair_log_reset(&pr);
    pair_post_ud(&pr, &q[0], ah, 0xa6, 0, 4097, q[1].qpn, STD_QKEY, false);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa6, RS_WC_LOC_LEN_ERR, RS_WR_SEND, q[0].qpn);
    PAIR_EXPECT_NONE(&pr, 0);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_ERR);
    peer_check(a);
    peer_check(b);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

/*
 * Protection matrix.  Each row runs one work request from A on a fresh RC
 * pair and checks the requester's completion, the NAK B answered with,
 * both QPs' states, B's receive completion if the request consumed one,
 * and both buffers byte by byte (a request that fails changes nothing).
 */
enum {
    PROT_WIN,               /* B: 2 pages at buf + 2 pages, all rights */
    PROT_WIN_NO_RW,         /* the same range without REMOTE_WRITE */
    PROT_WIN_NO_RR,         /* ... without REMOTE_READ */
    PROT_WIN_PD2,           /* ... in another PD */
    PROT_WIN_VNI1,          /* ... registered through GID 1 (VNI 1) */
    PROT_TOP,               /* IOVA 2^64 - 8 KiB, 8 KiB - 1 bytes */
    PROT_STALE,             /* a deregistered key: same index, old tag */
    PROT_UNUSED,            /* an index never registered */
    PROT_BAD_INDEX,         /* an index past the table */
    PROT_ZERO,              /* key 0 */
    PROT_NR,
};

enum {
    LOCAL_OK,
    LOCAL_BAD_KEY,          /* A's key with another tag */
    LOCAL_OTHER_PD,         /* an MR of A's buffer in another PD */
    LOCAL_PAST_END,         /* the SGE ends past its MR */
    LOCAL_NO_WRITE,         /* READ into an MR without LOCAL_WRITE */
    LOCAL_OTHER_VNI,        /* a key of VNI 0 on a QP of VNI 1 */
};

#define WIN_OFF         (2 * PAGE)
#define WIN_LEN         (2 * PAGE)
#define TOP_IOVA        0xffffffffffffe000ull
#define TOP_OFF         (6 * PAGE)

typedef struct ProtRow {
    const char *name;
    uint8_t op;                 /* RS_WR_RDMA_WRITE, RS_WR_RDMA_READ, SEND */
    uint8_t mr;                 /* PROT_*: the remote key and region */
    int64_t va;                 /* from the region's IOVA */
    uint32_t len;
    uint8_t status;             /* the requester's completion */
    uint8_t nak;                /* B's AETH syndrome, 0: none */
    uint8_t local;              /* LOCAL_* */
    uint8_t gid;                /* the GID (VNI) of both QPs */
    uint16_t resp_access;       /* B's QP access flags, 0: STD_ACCESS */
    uint32_t recv_len;          /* SEND: B's receive buffer */
    uint8_t recv_status;        /* SEND: B's receive completion */
} ProtRow;

static const ProtRow prot_rows[] = {
    /* bounds */
    { .name = "write-first-bytes", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .len = 256, .status = RS_WC_SUCCESS },
    { .name = "write-last-bytes", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .va = WIN_LEN - 256, .len = 256, .status = RS_WC_SUCCESS },
    { .name = "write-below-start", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .va = -1, .len = 256, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-past-end", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .va = WIN_LEN - 255, .len = 256, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-far-past-end", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .va = 1ll << 40, .len = 16, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-9-packets-past-end", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN, .len = WIN_LEN + 1, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-top-last-bytes", .op = RS_WR_RDMA_WRITE, .mr = PROT_TOP,
      .va = 0x1fff - 0x100, .len = 0x100, .status = RS_WC_SUCCESS },
    { .name = "write-wraps-2^64", .op = RS_WR_RDMA_WRITE, .mr = PROT_TOP,
      .va = 0x1000, .len = 0x1000, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "read-bytes", .op = RS_WR_RDMA_READ, .mr = PROT_WIN, .va = 0x100,
      .len = 3000, .status = RS_WC_SUCCESS },
    { .name = "read-below-start", .op = RS_WR_RDMA_READ, .mr = PROT_WIN,
      .va = -16, .len = 100, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "read-past-end", .op = RS_WR_RDMA_READ, .mr = PROT_WIN,
      .va = WIN_LEN - 2999, .len = 3000, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "read-wraps-2^64", .op = RS_WR_RDMA_READ, .mr = PROT_TOP,
      .va = 0x1800, .len = 0x1000, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    /* keys */
    { .name = "write-unused-index", .op = RS_WR_RDMA_WRITE, .mr = PROT_UNUSED,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-index-past-table", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_BAD_INDEX, .len = 64, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-key-0", .op = RS_WR_RDMA_WRITE, .mr = PROT_ZERO,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-stale-tag", .op = RS_WR_RDMA_WRITE, .mr = PROT_STALE,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS },
    { .name = "read-stale-tag", .op = RS_WR_RDMA_READ, .mr = PROT_STALE,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS },
    /* PD and rights */
    { .name = "write-other-pd", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN_PD2,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS },
    { .name = "read-other-pd", .op = RS_WR_RDMA_READ, .mr = PROT_WIN_PD2,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-mr-no-remote-write", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN_NO_RW, .len = 64, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "read-mr-no-remote-write", .op = RS_WR_RDMA_READ,
      .mr = PROT_WIN_NO_RW, .len = 64, .status = RS_WC_SUCCESS },
    { .name = "read-mr-no-remote-read", .op = RS_WR_RDMA_READ,
      .mr = PROT_WIN_NO_RR, .len = 64, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-mr-no-remote-read", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN_NO_RR, .len = 64, .status = RS_WC_SUCCESS },
    { .name = "write-qp-no-remote-write", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN, .len = 64, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS,
      .resp_access = RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_READ },
    { .name = "read-qp-no-remote-read", .op = RS_WR_RDMA_READ, .mr = PROT_WIN,
      .len = 64, .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS,
      .resp_access = RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE },
    /* network identity: keys resolve in the VNI of the receiving GID */
    { .name = "write-key-of-other-vni", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN_VNI1, .len = 64, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "write-key-of-vni1-on-vni1", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN_VNI1, .len = 64, .status = RS_WC_SUCCESS, .gid = 1 },
    { .name = "write-key-of-vni0-on-vni1", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_WIN, .len = 64, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS, .gid = 1 },
    /* zero length: no R_Key or VA check (IBTA C9-88) */
    { .name = "write-0-bytes-bad-key", .op = RS_WR_RDMA_WRITE,
      .mr = PROT_BAD_INDEX, .len = 0, .status = RS_WC_SUCCESS },
    { .name = "read-0-bytes-bad-key", .op = RS_WR_RDMA_READ,
      .mr = PROT_BAD_INDEX, .len = 0, .status = RS_WC_SUCCESS },
    { .name = "write-0-bytes-past-end", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .va = WIN_LEN + 64, .len = 0, .status = RS_WC_SUCCESS },
    /* receive buffers */
    { .name = "send-fits", .op = RS_WR_SEND, .len = 2048,
      .status = RS_WC_SUCCESS, .recv_len = 2048,
      .recv_status = RS_WC_SUCCESS },
    { .name = "send-longer-than-receive", .op = RS_WR_SEND, .len = 600,
      .status = RS_WC_REM_INV_REQ_ERR, .nak = AETH_NAK_INV_REQ,
      .recv_len = 512, .recv_status = RS_WC_LOC_LEN_ERR },
    { .name = "send-3-packets-longer", .op = RS_WR_SEND, .len = 3000,
      .status = RS_WC_REM_INV_REQ_ERR, .nak = AETH_NAK_INV_REQ,
      .recv_len = 2048, .recv_status = RS_WC_LOC_LEN_ERR },
    /* the requester's own keys */
    { .name = "local-bad-lkey", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .len = 256, .status = RS_WC_LOC_PROT_ERR, .local = LOCAL_BAD_KEY },
    { .name = "local-lkey-other-pd", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .len = 256, .status = RS_WC_LOC_PROT_ERR, .local = LOCAL_OTHER_PD },
    { .name = "local-sge-past-mr", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .len = 256, .status = RS_WC_LOC_PROT_ERR, .local = LOCAL_PAST_END },
    { .name = "local-read-into-readonly", .op = RS_WR_RDMA_READ,
      .mr = PROT_WIN, .len = 256, .status = RS_WC_LOC_PROT_ERR,
      .local = LOCAL_NO_WRITE },
    { .name = "local-lkey-other-vni", .op = RS_WR_RDMA_WRITE, .mr = PROT_WIN,
      .len = 256, .status = RS_WC_LOC_PROT_ERR, .local = LOCAL_OTHER_VNI,
      .gid = 1 },
    { .name = "local-send-bad-lkey", .op = RS_WR_SEND, .len = 256,
      .status = RS_WC_LOC_PROT_ERR, .local = LOCAL_BAD_KEY, .recv_len = 256 },
};

typedef struct ProtEnv {
    Pair pr;
    uint32_t pd2[2];
    uint32_t rkey[PROT_NR];
    uint64_t iova[PROT_NR];
    uint32_t off[PROT_NR];      /* the region's offset in B's buffer */
    uint32_t lkey_pd2, lkey_small, lkey_ro;
} ProtEnv;

static void prot_setup(ProtEnv *e, void *obj, void *data,
                       QGuestAllocator *alloc)
{
    Peer *a = &e->pr.p[0], *b = &e->pr.p[1];
    uint64_t win;
    uint32_t i, stale;

    pair_setup(&e->pr, obj, data, alloc);
    win = b->buf + WIN_OFF;
    pair_add_vni1(&e->pr);
    for (i = 0; i < 2; i++) {
        e->pd2[i] = new_pd(e->pr.p[i].d);
    }
    for (i = 0; i < PROT_NR; i++) {
        e->iova[i] = win;
        e->off[i] = WIN_OFF;
    }
    e->rkey[PROT_WIN] = eng_mr(b->d, b->pd, 0, win, WIN_LEN, STD_ACCESS);
    e->rkey[PROT_WIN_NO_RW] = eng_mr(b->d, b->pd, 0, win, WIN_LEN,
                                     RS_ACCESS_LOCAL_WRITE |
                                     RS_ACCESS_REMOTE_READ);
    e->rkey[PROT_WIN_NO_RR] = eng_mr(b->d, b->pd, 0, win, WIN_LEN,
                                     RS_ACCESS_LOCAL_WRITE |
                                     RS_ACCESS_REMOTE_WRITE);
    e->rkey[PROT_WIN_PD2] = eng_mr(b->d, e->pd2[1], 0, win, WIN_LEN,
                                   STD_ACCESS);
    e->rkey[PROT_WIN_VNI1] = eng_mr(b->d, b->pd, 1, win, WIN_LEN,
                                    STD_ACCESS);
    e->rkey[PROT_TOP] = eng_mr_at(b->d, b->pd, 0, TOP_IOVA,
                                  b->buf + TOP_OFF, 0x1fff, STD_ACCESS);
    e->iova[PROT_TOP] = TOP_IOVA;
    e->off[PROT_TOP] = TOP_OFF;
    /* Deregister and register again: the index comes back, the tag not. */
    stale = eng_mr(b->d, b->pd, 0, win, WIN_LEN, STD_ACCESS);
    RS_ASSERT_OK(qrs_destroy(b->d, RS_CMD_DEREG_MR, stale));
    e->rkey[PROT_STALE] = stale;
    i = eng_mr(b->d, b->pd, 0, win, WIN_LEN, STD_ACCESS);
    g_assert_cmphex(i >> RS_MKEY_INDEX_SHIFT, ==,
                    stale >> RS_MKEY_INDEX_SHIFT);
    g_assert_cmphex(i, !=, stale);
    e->rkey[PROT_UNUSED] = (DEF_MAX_MRS - 1) << RS_MKEY_INDEX_SHIFT |
                           (e->rkey[PROT_WIN] & RS_MKEY_TAG_MASK);
    e->rkey[PROT_BAD_INDEX] = 0xffffff00u |
                              (e->rkey[PROT_WIN] & RS_MKEY_TAG_MASK);
    e->rkey[PROT_ZERO] = 0;

    e->lkey_pd2 = eng_mr(a->d, e->pd2[0], 0, a->buf, PAIR_BUF, STD_ACCESS);
    e->lkey_small = eng_mr(a->d, a->pd, 0, a->buf, 128, STD_ACCESS);
    e->lkey_ro = eng_mr(a->d, a->pd, 0, a->buf, PAIR_BUF, 0);
}

static void prot_run(ProtEnv *e, const ProtRow *r)
{
    Pair *pr = &e->pr;
    Peer *a = &pr->p[0], *b = &pr->p[1];
    bool ok = r->status == RS_WC_SUCCESS;
    uint64_t va = e->iova[r->mr] + r->va;
    uint32_t boff = e->off[r->mr] + r->va;
    struct rs_sge sge = peer_sge(a, 0, r->len), rsge;
    struct rs_cqe cqe;
    LoopQp q[2];

    g_test_message("protection: %s", r->name);
    pair_rc(pr, q, r->gid, r->resp_access ? r->resp_access : STD_ACCESS);
    peer_fill(a, 0, 3 * PAGE, r->len);
    sge.lkey = a->key[r->gid];
    switch (r->local) {
    case LOCAL_BAD_KEY:
        sge.lkey ^= 1;
        break;
    case LOCAL_OTHER_PD:
        sge.lkey = e->lkey_pd2;
        break;
    case LOCAL_PAST_END:
        sge.lkey = e->lkey_small;
        sge.addr += 128 - r->len / 2;
        break;
    case LOCAL_NO_WRITE:
        sge.lkey = e->lkey_ro;
        break;
    case LOCAL_OTHER_VNI:
        sge.lkey = a->key[0];
        break;
    }
    if (r->op == RS_WR_SEND) {
        rsge = peer_sge(b, WIN_OFF, r->recv_len);
        eng_post_recv(b->d, &q[1], 0xb0, &rsge, 1);
    }
    pair_log_reset(pr);
    pair_post(pr, 0, &q[0], r->op, 0xa0, &sge, 1, va, e->rkey[r->mr], 0);
    if (r->op == RS_WR_SEND && !r->local) {
        pair_poll(pr, 1, &cqe);
        assert_cqe(&cqe, 0xb0, r->recv_status, RS_WR_RECV, q[1].qpn);
        if (r->recv_status == RS_WC_SUCCESS) {
            g_assert_cmpuint(cqe.byte_len, ==, r->len);
            img_move(b, WIN_OFF, a, 0, r->len);
        } else if (r->len > 1024) {
            /* What the packets before the error left is undefined. */
            peer_dont_care(b, WIN_OFF, r->recv_len);
        }
    }
    pair_poll(pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, r->status, r->op, q[0].qpn);
    if (ok && r->op == RS_WR_RDMA_WRITE) {
        img_move(b, boff, a, 0, r->len);
    } else if (ok && r->op == RS_WR_RDMA_READ) {
        img_move(a, 0, b, boff, r->len);
        g_assert_cmpuint(cqe.byte_len, ==, r->len);
    }

    pair_pump(pr);
    if (r->local) {
        PAIR_EXPECT_NONE(pr, 0);
        PAIR_EXPECT_NONE(pr, 1);
    } else {
        g_assert_cmpuint(pr->nops[0], ==,
                         r->op == RS_WR_RDMA_READ ? 1 :
                         MAX(DIV_ROUND_UP(r->len, 1024), 1));
    }
    if (r->nak) {
        /* for the first packet, or the SEND's packet that did not fit */
        PAIR_EXPECT_OPS(pr, 1, OP_ACK);
        g_assert_cmphex(pr->syn[1][0], ==, r->nak);
        g_assert_cmphex(pr->psn[1][0], ==,
                        pr->psn[0][r->op == RS_WR_SEND ? pr->nops[0] - 1 : 0]);
    }
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==,
                     ok ? RS_QPS_RTS : RS_QPS_ERR);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==,
                     r->nak ? RS_QPS_ERR : RS_QPS_RTS);
    pair_cq_empty(pr, 0);
    pair_cq_empty(pr, 1);
    peer_check(a);
    peer_check(b);
}

static void test_engine_pair_protection(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    ProtEnv e;
    int i;

    prot_setup(&e, obj, data, alloc);
    for (i = 0; i < ARRAY_SIZE(prot_rows); i++) {
        prot_run(&e, &prot_rows[i]);
    }
    pair_teardown(&e.pr);
}

/* Frame @g changed by @edit, resealed if @reseal, put on B's wire. */
typedef void FrameEdit(uint8_t *f, size_t *len);

static void pair_inject_edit(Pair *pr, const GByteArray *g, FrameEdit *edit,
                             bool reseal)
{
    g_autofree uint8_t *f = g_malloc(g->len + 64);
    size_t len = g->len;

    memcpy(f, g->data, g->len);
    edit(f, &len);
    if (reseal) {
        roce_reseal(f, len);
    }
    pair_inject(pr, 1, f, len);
}

static void edit_payload(uint8_t *f, size_t *len)
{
    f[ROCE_EXT + 16 + 5] ^= 1;
}

static void edit_icrc(uint8_t *f, size_t *len)
{
    f[*len - 1] ^= 0x80;
}

static void edit_cut_1(uint8_t *f, size_t *len)
{
    *len -= 1;
}

static void edit_cut_icrc(uint8_t *f, size_t *len)
{
    *len -= 4;
}

static void edit_cut_in_reth(uint8_t *f, size_t *len)
{
    *len = ROCE_EXT + 15;
}

static void edit_cut_in_bth(uint8_t *f, size_t *len)
{
    *len = ROCE_BTH + 11;
}

/* Shorter than IPv4 + UDP: not RoCE, the LAN path's. */
static void edit_cut_in_udp(uint8_t *f, size_t *len)
{
    *len = ROCE_BTH - 1;
}

/* Lengths and ICRC made to fit, but the RETH is cut short. */
static void edit_short_reth(uint8_t *f, size_t *len)
{
    *len = ROCE_EXT + 8 + 4;
}

static void edit_qpn_unused(uint8_t *f, size_t *len)
{
    stl_be_p(f + ROCE_BTH + 4, 200);
}

static void edit_qpn_huge(uint8_t *f, size_t *len)
{
    stl_be_p(f + ROCE_BTH + 4, 0xffffff);
}

static void edit_qpn_0(uint8_t *f, size_t *len)
{
    stl_be_p(f + ROCE_BTH + 4, 0);
}

static void edit_op_ud_send(uint8_t *f, size_t *len)
{
    f[ROCE_BTH] = OP_UD_SEND_ONLY;
}

static void edit_op_unknown(uint8_t *f, size_t *len)
{
    f[ROCE_BTH] = 0x1f;
}

/* A READ request carries no payload. */
static void edit_op_read_with_data(uint8_t *f, size_t *len)
{
    f[ROCE_BTH] = OP_READ_REQ;
}

static void edit_tver(uint8_t *f, size_t *len)
{
    f[ROCE_BTH + 1] |= 1;
}

/* The right QP and PSN, but from a host that is not the QP's peer. */
static void edit_foreign_source(uint8_t *f, size_t *len)
{
    f[14 + 15] = 9;
}

/* To B's other GID (VNI 1): not the one the QP's peer sends to. */
static void edit_other_gid(uint8_t *f, size_t *len)
{
    f[14 + 18] = 1;
}

static void edit_psn_ahead(uint8_t *f, size_t *len)
{
    stl_be_p(f + ROCE_BTH + 8, ldl_be_p(f + ROCE_BTH + 8) + 5);
}

static void edit_psn_behind(uint8_t *f, size_t *len)
{
    stl_be_p(f + ROCE_BTH + 8, ldl_be_p(f + ROCE_BTH + 8) - 1);
}

/* WRITE MIDDLE, the RETH taken out: no WRITE is in progress. */
static void edit_write_middle(uint8_t *f, size_t *len)
{
    f[ROCE_BTH] = OP_WRITE_MIDDLE;
    memmove(f + ROCE_EXT, f + ROCE_EXT + 16, *len - ROCE_EXT - 16);
    *len -= 16;
}

typedef struct BadFrame {
    const char *name;
    FrameEdit *edit;
    bool reseal;
} BadFrame;

/* Each of these B must drop without an answer and without an effect. */
static const BadFrame bad_frames[] = {
    { "payload changed, ICRC kept", edit_payload, false },
    { "ICRC changed", edit_icrc, false },
    { "last byte cut", edit_cut_1, false },
    { "ICRC cut", edit_cut_icrc, false },
    { "cut in the RETH", edit_cut_in_reth, false },
    { "cut in the BTH", edit_cut_in_bth, false },
    { "RETH cut, lengths and ICRC fitting", edit_short_reth, true },
    { "unused QPN", edit_qpn_unused, true },
    { "QPN 2^24 - 1", edit_qpn_huge, true },
    { "QPN 0", edit_qpn_0, true },
    { "UD SEND to an RC QP", edit_op_ud_send, true },
    { "unknown opcode", edit_op_unknown, true },
    { "READ request with a payload", edit_op_read_with_data, true },
    { "transport version 1", edit_tver, true },
    { "source not the QP's peer", edit_foreign_source, true },
    { "to the adapter's other GID", edit_other_gid, true },
};

/* B's UD QP, for an RC opcode sent to it. */
static uint32_t bad_ud_qpn;

static void edit_to_ud_qp(uint8_t *f, size_t *len)
{
    stl_be_p(f + ROCE_BTH + 4, bad_ud_qpn);
}

static void test_engine_pair_bad_frames(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    LanEnv lan;
    uint64_t lanbuf[4];
    LoopQp q[2], ud;
    struct rs_sge sge;
    struct rs_cqe cqe;
    GByteArray *g, *r;
    uint32_t psn;
    int i;

    pair_setup(&pr, obj, data, alloc);
    pair_add_vni1(&pr);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_qp(&pr, 1, &ud, RS_QPT_UD, b->pd);
    qp_walk(b->d, ud.h, RS_QPT_UD, RS_QPS_RTS);
    bad_ud_qpn = ud.qpn;
    /* B's LAN receive ring: frames that are not RoCE land there. */
    memset(&lan, 0, sizeof(lan));
    lan.d = b->d;
    lan.fd = pr.fd[1];
    lan_ring_init(&lan, &lan.rx, RS_LAN_RXQ, 3, LAN_RX_VECTOR);
    for (i = 0; i < ARRAY_SIZE(lanbuf); i++) {
        lanbuf[i] = lan_rx_buf(&lan, LAN_BUF_SIZE);
        lan_post(&lan, &lan.rx, lanbuf[i], LAN_BUF_SIZE, 0);
    }
    lan_doorbell(&lan, &lan.rx);

    /* The genuine RDMA WRITE of 300 bytes, kept off the wire for now. */
    pr.hold[0] = pr.hold[1] = true;
    sge = peer_sge(a, 0x100, 300);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, &sge, 1,
              b->buf + 0x2000, b->key[0], 0);
    g = pair_take(&pr, 0);
    g_assert_cmphex(g->data[ROCE_BTH], ==, OP_WRITE_ONLY);
    psn = ldl_be_p(g->data + ROCE_BTH + 8) & 0xffffff;
    g_assert_cmphex(psn, ==, pair_psn[0]);

    for (i = 0; i < ARRAY_SIZE(bad_frames); i++) {
        g_test_message("bad frame: %s", bad_frames[i].name);
        pair_inject_edit(&pr, g, bad_frames[i].edit, bad_frames[i].reseal);
    }
    g_test_message("bad frame: RC WRITE to a UD QP");
    pair_inject_edit(&pr, g, edit_to_ud_qp, true);
    /* Not RoCE: the LAN ring takes it. */
    pair_inject_edit(&pr, g, edit_cut_in_udp, false);
    /* A PSN gap: one sequence NAK; an old PSN: ACK of the last one. */
    pair_inject_edit(&pr, g, edit_psn_ahead, true);
    pair_inject_edit(&pr, g, edit_psn_behind, true);
    pair_inject(&pr, 1, g->data, g->len);

    r = pair_take(&pr, 1);
    g_assert_cmphex(r->data[ROCE_BTH], ==, OP_ACK);
    g_assert_cmphex(r->data[ROCE_EXT], ==, AETH_NAK_SEQ);
    g_assert_cmphex(ldl_be_p(r->data + ROCE_BTH + 8) & 0xffffff, ==, psn);
    /*
     * Then ACKs only: of the duplicate (PSN - 1; it may be coalesced
     * into the next), and of the genuine WRITE.  B let the rest be.
     */
    for (;;) {
        uint32_t apsn;

        g_byte_array_unref(r);
        r = pair_take(&pr, 1);
        g_assert_cmphex(r->data[ROCE_BTH], ==, OP_ACK);
        g_assert_cmphex(r->data[ROCE_EXT], ==, AETH_ACK);
        apsn = ldl_be_p(r->data + ROCE_BTH + 8) & 0xffffff;
        if (apsn == psn) {
            break;
        }
        g_assert_cmphex(apsn, ==, (psn - 1) & 0xffffff);
    }
    pr.hold[0] = pr.hold[1] = false;
    pair_inject(&pr, 0, r->data, r->len);
    g_byte_array_unref(r);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    img_move(b, 0x2000, a, 0x100, 300);
    peer_check(b);
    pair_cq_empty(&pr, 1);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, ud.h), ==, RS_QPS_RTS);
    /* Of all that, only the frame cut short of its UDP header is LAN's. */
    {
        g_autofree uint8_t *cut = g_memdup2(g->data, ROCE_BTH - 1);

        lan_expect_rx(&lan, 0, lanbuf[0], LAN_BUF_SIZE, cut, ROCE_BTH - 1);
        g_assert_false(lan_done(&lan, &lan.rx, 1));
    }

    /* The adapters go on working: a SEND of 2000 bytes. */
    pair_log_reset(&pr);
    sge = peer_sge(b, 0x4000, 2000);
    eng_post_recv(b->d, &q[1], 0xb0, &sge, 1);
    sge = peer_sge(a, 0x800, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa1, &sge, 1, 0, 0, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    PAIR_EXPECT_OPS(&pr, 0, OP_SEND_FIRST, OP_SEND_LAST);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    img_move(b, 0x4000, a, 0x800, 2000);
    peer_check(b);

    /*
     * A WRITE MIDDLE where no WRITE is in progress, at the expected PSN:
     * an invalid request NAK, and B's QP goes to the error state.
     */
    pr.hold[0] = pr.hold[1] = true;
    sge = peer_sge(a, 0x1000, 1024);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, &sge, 1,
              b->buf + 0x5000, b->key[0], 0);
    g_byte_array_unref(g);
    g = pair_take(&pr, 0);
    psn = ldl_be_p(g->data + ROCE_BTH + 8) & 0xffffff;
    pair_inject_edit(&pr, g, edit_write_middle, true);
    r = pair_take(&pr, 1);
    g_assert_cmphex(r->data[ROCE_BTH], ==, OP_ACK);
    g_assert_cmphex(r->data[ROCE_EXT], ==, AETH_NAK_INV_REQ);
    g_assert_cmphex(ldl_be_p(r->data + ROCE_BTH + 8) & 0xffffff, ==, psn);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_ERR);
    /* The NAK ends A's request too; the genuine one finds B's QP shut. */
    pr.hold[0] = pr.hold[1] = false;
    pair_inject(&pr, 0, r->data, r->len);
    g_byte_array_unref(r);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa2, RS_WC_REM_INV_REQ_ERR, RS_WR_RDMA_WRITE,
               q[0].qpn);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_ERR);
    pair_log_reset(&pr);
    pair_inject(&pr, 1, g->data, g->len);
    g_byte_array_unref(g);
    /* A SEND on another pair after it: B's only answer is its ACK. */
    pair_rc(&pr, q, 0, STD_ACCESS);
    sge = peer_sge(b, 0x6000, 16);
    eng_post_recv(b->d, &q[1], 0xb1, &sge, 1);
    sge = peer_sge(a, 0x1000, 16);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa3, &sge, 1, 0, 0, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa3, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    img_move(b, 0x6000, a, 0x1000, 16);
    pair_cq_empty(&pr, 1);
    peer_check(a);
    peer_check(b);
    pair_teardown(&pr);
}


/*
 * Lost packets: the test drops chosen frames and the adapters recover
 * (sequence NAK or local ACK timeout, go-back-N, duplicates answered
 * again) with every byte in place.
 */
static void test_engine_pair_loss(void *obj, void *data,
                                  QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2];
    uint32_t p;
    int i;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);

    /* A SEND's middle packet is lost: sequence NAK, all three again. */
    pair_log_reset(&pr);
    pr.drop[0] = 1 << 1;
    sge = peer_sge(b, 0x1000, 4000);
    eng_post_recv(b->d, &q[1], 0xb0, &sge, 1);
    sge = peer_sge(a, 0x10, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0, &sge, 1, 0, 0, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    /* B answered the gap with a sequence NAK for the lost PSN. */
    p = pr.psn[0][0];
    pair_pump(&pr);
    g_assert_cmpuint(pr.nops[0], >=, 5);
    g_assert_cmphex(pr.op[1][0], ==, OP_ACK);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_NAK_SEQ);
    g_assert_cmphex(pr.psn[1][0], ==, (p + 1) & 0xffffff);
    img_move(b, 0x1000, a, 0x10, 3000);
    peer_check(b);

    /* A WRITE's ACK is lost: after the local ACK timeout A asks again. */
    pair_log_reset(&pr);
    pr.drop[1] = 1 << 0;
    sge = peer_sge(a, 0x2000, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &sge, 1,
              b->buf + 0x3000, b->key[0], 0);
    pair_wait_frames(&pr, 1, 1);
    img_move(b, 0x3000, a, 0x2000, 2000);
    peer_check(b);
    pair_cq_empty(&pr, 0);
    qtest_clock_step(qrs_qts(a->d), 5000000000ll);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    g_assert_cmpuint(pr.nops[0], >=, 3);
    g_assert_cmpuint(pr.nops[1], >=, 2);
    peer_check(b);

    /* The last READ response is lost: the READ is issued again. */
    pair_log_reset(&pr);
    pr.drop[1] = 1 << 2;
    peer_fill(b, 0x4000, 3000, 0x21);
    sge = peer_sge(a, 0x5000, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa2, &sge, 1,
              b->buf + 0x4000, b->key[0], 0);
    pair_wait_frames(&pr, 1, 3);
    pair_cq_empty(&pr, 0);
    qtest_clock_step(qrs_qts(a->d), 5000000000ll);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    g_assert_cmpuint(pr.nops[0], >=, 2);
    img_move(a, 0x5000, b, 0x4000, 3000);
    peer_check(a);

    /*
     * The middle, then the first READ response is lost: the requester
     * must not complete the READ without those bytes.
     */
    for (i = 1; i >= 0; i--) {
        pair_log_reset(&pr);
        pr.drop[1] = 1 << i;
        peer_fill(b, 0x4000, 3000, 0x43 + i);
        sge = peer_sge(a, 0x5000, 3000);
        pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa3 + i, &sge, 1,
                  b->buf + 0x4000, b->key[0], 0);
        pair_wait_frames(&pr, 1, 3);
        qtest_clock_step(qrs_qts(a->d), 5000000000ll);
        pair_poll(&pr, 0, &cqe);
        assert_cqe(&cqe, 0xa3 + i, RS_WC_SUCCESS, RS_WR_RDMA_READ,
                   q[0].qpn);
        g_assert_cmpuint(cqe.byte_len, ==, 3000);
        g_assert_cmpuint(pr.nops[0], >=, 2);
        img_move(a, 0x5000, b, 0x4000, 3000);
        peer_check(a);
    }

    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_cq_empty(&pr, 0);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

/* ------------------------------------------------------------------ */
/* Two adapters: atomics and UC                                        */
/* ------------------------------------------------------------------ */

#define OP_ATOMIC_ACK   0x12
#define OP_CMP_SWAP     0x13
#define OP_FETCH_ADD    0x14
#define OP_UC           0x20

typedef struct AtomicRow {
    const char *name;
    uint8_t op;                 /* RS_WR_ATOMIC_CMP_SWP / _FETCH_ADD */
    uint32_t off;               /* in B's buffer */
    uint64_t value;             /* B holds this before */
    uint64_t compare_add;
    uint64_t swap;
    uint8_t status;
    uint8_t nak;
    bool mr_plain;              /* B's MR without REMOTE_ATOMIC */
    bool qp_plain;              /* B's QP without REMOTE_ATOMIC */
    bool bad_lkey;              /* A's result SGE has a bad lkey */
} AtomicRow;

#define ATOMIC_ACCESS   (STD_ACCESS | RS_ACCESS_REMOTE_ATOMIC)

static const AtomicRow atomic_rows[] = {
    { .name = "fetch-add", .op = RS_WR_ATOMIC_FETCH_ADD, .off = 0x100,
      .value = 0x1000000000000001ull, .compare_add = 0x0123456789abcdefull,
      .status = RS_WC_SUCCESS },
    { .name = "fetch-add-wraps", .op = RS_WR_ATOMIC_FETCH_ADD, .off = 0x108,
      .value = 0xffffffffffffff00ull, .compare_add = 0x200,
      .status = RS_WC_SUCCESS },
    { .name = "cmp-swap-equal", .op = RS_WR_ATOMIC_CMP_SWP, .off = 0x1ff8,
      .value = 0x5555aaaa5555aaaaull, .compare_add = 0x5555aaaa5555aaaaull,
      .swap = 0x0102030405060708ull, .status = RS_WC_SUCCESS },
    { .name = "cmp-swap-differs", .op = RS_WR_ATOMIC_CMP_SWP, .off = 0x200,
      .value = 0x5555aaaa5555aaaaull, .compare_add = 0x5555aaaa5555aaabull,
      .swap = 0x0102030405060708ull, .status = RS_WC_SUCCESS },
    { .name = "misaligned", .op = RS_WR_ATOMIC_FETCH_ADD, .off = 0x204,
      .value = 7, .compare_add = 1, .status = RS_WC_REM_INV_REQ_ERR,
      .nak = AETH_NAK_INV_REQ },
    { .name = "past-mr-end", .op = RS_WR_ATOMIC_FETCH_ADD, .off = PAIR_BUF,
      .compare_add = 1, .status = RS_WC_REM_ACCESS_ERR,
      .nak = AETH_NAK_REM_ACCESS },
    { .name = "mr-no-remote-atomic", .op = RS_WR_ATOMIC_CMP_SWP,
      .off = 0x300, .value = 1, .compare_add = 1, .swap = 2,
      .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS,
      .mr_plain = true },
    { .name = "qp-no-remote-atomic", .op = RS_WR_ATOMIC_FETCH_ADD,
      .off = 0x300, .value = 1, .compare_add = 1,
      .status = RS_WC_REM_ACCESS_ERR, .nak = AETH_NAK_REM_ACCESS,
      .qp_plain = true },
    { .name = "local-bad-lkey", .op = RS_WR_ATOMIC_FETCH_ADD, .off = 0x300,
      .value = 1, .compare_add = 1, .status = RS_WC_LOC_PROT_ERR,
      .bad_lkey = true },
};

/* A connected pair of @type (RC or UC), like pair_rc(). */
static void pair_connected(Pair *pr, LoopQp q[2], uint8_t type,
                           uint16_t resp_access)
{
    struct rs_qp_attr a;
    int i;

    for (i = 0; i < 2; i++) {
        pair_qp(pr, i, &q[i], type, pr->p[i].pd);
    }
    for (i = 0; i < 2; i++) {
        std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
        gid_v4(a.ah.dgid, 10, 0, 0, !i + 1);
        memcpy(a.ah.dmac, pair_mac[!i], 6);
        a.dest_qp_num = q[!i].qpn;
        a.sq_psn = pair_psn[i];
        a.rq_psn = pair_psn[!i];
        a.timeout = PAIR_TIMEOUT;
        a.access_flags = i ? resp_access : STD_ACCESS;
        eng_connect(pr->p[i].d, &q[i], type, &a, 0);
    }
}

static void test_engine_pair_atomic(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    uint32_t atomic_key;
    int i;

    pair_setup(&pr, obj, data, alloc);
    atomic_key = eng_mr(b->d, b->pd, 0, b->buf, PAIR_BUF, ATOMIC_ACCESS);
    for (i = 0; i < ARRAY_SIZE(atomic_rows); i++) {
        const AtomicRow *r = &atomic_rows[i];
        bool ok = r->status == RS_WC_SUCCESS;
        struct rs_sge sge = peer_sge(a, 0x40, 8);
        struct rs_send_wqe_ctrl w = {
            .wr_id = 0xa0 + i,
            .opcode = r->op,
            .flags = RS_WQE_F_SIGNALED,
            .num_sge = 1,
            .remote_addr = b->buf + r->off,
            .rkey = r->mr_plain ? b->key[0] : atomic_key,
            .compare_add = r->compare_add,
            .swap = r->swap,
        };
        struct rs_cqe cqe;
        LoopQp q[2];
        uint64_t now;
        uint8_t wop;

        g_test_message("atomic: %s", r->name);
        pair_connected(&pr, q, RS_QPT_RC,
                       r->qp_plain ? STD_ACCESS : ATOMIC_ACCESS);
        if (r->off + 8 <= PAIR_BUF) {
            stq_le_p(b->img + r->off, r->value);
            qtest_memwrite(qrs_qts(b->d), b->buf + r->off, b->img + r->off,
                           8);
        }
        if (r->bad_lkey) {
            sge.lkey ^= 1;
        }
        pair_log_reset(&pr);
        eng_post_send(a->d, &q[0], &w, &sge, 1);
        pair_poll(&pr, 0, &cqe);
        assert_cqe(&cqe, 0xa0 + i, r->status, r->op, q[0].qpn);
        if (ok) {
            g_assert_cmpuint(cqe.byte_len, ==, 8);
            stq_le_p(a->img + 0x40, r->value);
            now = r->op == RS_WR_ATOMIC_FETCH_ADD ?
                  r->value + r->compare_add :
                  r->value == r->compare_add ? r->swap : r->value;
            stq_le_p(b->img + r->off, now);
            wop = r->op == RS_WR_ATOMIC_FETCH_ADD ? OP_FETCH_ADD :
                  OP_CMP_SWAP;
            pair_expect_ops(&pr, 0, &wop, 1);
            PAIR_EXPECT_OPS(&pr, 1, OP_ATOMIC_ACK);
            g_assert_cmphex(pr.syn[1][0], ==, AETH_ACK);
        } else if (r->nak) {
            PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
            g_assert_cmphex(pr.syn[1][0], ==, r->nak);
        } else {
            PAIR_EXPECT_NONE(&pr, 0);
            PAIR_EXPECT_NONE(&pr, 1);
        }
        g_assert_cmpuint(qp_state(a->d, q[0].h), ==,
                         ok ? RS_QPS_RTS : RS_QPS_ERR);
        g_assert_cmpuint(qp_state(b->d, q[1].h), ==,
                         r->nak ? RS_QPS_ERR : RS_QPS_RTS);
        pair_cq_empty(&pr, 0);
        pair_cq_empty(&pr, 1);
        peer_check(a);
        peer_check(b);
    }
    pair_teardown(&pr);
}

/*
 * UC: no ACKs and no NAKs.  A bad rkey or a lost packet drops the rest
 * of that message at the responder, never the QP.
 */
static void test_engine_pair_uc(void *obj, void *data,
                                QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge, rsge[2];
    struct rs_cqe cqe;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_connected(&pr, q, RS_QPT_UC, STD_ACCESS);

    /* SEND of three packets: completes at A once sent. */
    pair_log_reset(&pr);
    rsge[0] = peer_sge(b, 0x1000, 4000);
    eng_post_recv(b->d, &q[1], 0xb0, rsge, 1);
    sge = peer_sge(a, 0x10, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0, &sge, 1, 0, 0, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    PAIR_EXPECT_OPS(&pr, 0, OP_UC | OP_SEND_FIRST, OP_UC | OP_SEND_MIDDLE,
                    OP_UC | OP_SEND_LAST);
    PAIR_EXPECT_NONE(&pr, 1);
    img_move(b, 0x1000, a, 0x10, 3000);
    peer_check(b);

    /* RDMA WRITE with immediate. */
    pair_log_reset(&pr);
    rsge[0] = peer_sge(b, 0x7000, 16);
    eng_post_recv(b->d, &q[1], 0xb1, rsge, 1);
    sge = peer_sge(a, 0x2000, 1500);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE_IMM, 0xa1, &sge, 1,
              b->buf + 0x3000, b->key[0], 0xcafe);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb1, RS_WC_SUCCESS, RS_WR_RECV_RDMA_IMM, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1500);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0xcafe);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE_IMM, q[0].qpn);
    PAIR_EXPECT_OPS(&pr, 0, OP_UC | OP_WRITE_FIRST,
                    OP_UC | OP_WRITE_LAST_IMM);
    PAIR_EXPECT_NONE(&pr, 1);
    img_move(b, 0x3000, a, 0x2000, 1500);
    peer_check(b);

    /*
     * A WRITE with a bad rkey completes at A (nobody tells it) and
     * writes nothing; a WRITE whose middle packet is lost writes only
     * what IBTA leaves undefined; the next messages arrive whole.
     */
    pair_log_reset(&pr);
    sge = peer_sge(a, 0x4000, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, &sge, 1,
              b->buf + 0x5000, b->key[0] ^ 1, 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    rsge[0] = peer_sge(b, 0x6800, 16);
    eng_post_recv(b->d, &q[1], 0xb3, rsge, 1);
    sge = peer_sge(a, 0x200, 16);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa6, &sge, 1, 0, 0, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb3, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa6, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    img_move(b, 0x6800, a, 0x200, 16);
    peer_check(b);
    pair_log_reset(&pr);
    pr.drop[0] = 1 << 1;
    sge = peer_sge(a, 0x4000, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa3, &sge, 1,
              b->buf + 0x5000, b->key[0], 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa3, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    pair_wait_frames(&pr, 0, 3);
    rsge[0] = peer_sge(b, 0x6000, 2000);
    eng_post_recv(b->d, &q[1], 0xb2, rsge, 1);
    sge = peer_sge(a, 0x100, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa4, &sge, 1, 0, 0, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb2, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 2000);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa4, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    peer_dont_care(b, 0x5000, 3000);
    img_move(b, 0x6000, a, 0x100, 2000);
    peer_check(b);

    /* No RDMA READ on UC: a local error, nothing on the wire. */
    pair_log_reset(&pr);
    sge = peer_sge(a, 0x100, 64);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa5, &sge, 1,
              b->buf, b->key[0], 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa5, RS_WC_LOC_QP_OP_ERR, RS_WR_RDMA_READ, q[0].qpn);
    PAIR_EXPECT_NONE(&pr, 0);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_RTS);
    pair_cq_empty(&pr, 1);
    peer_check(a);
    peer_check(b);
    pair_teardown(&pr);
}

/* ------------------------------------------------------------------ */
/* Transport engine: atomics, UC, flush, SRQ                          */
/* ------------------------------------------------------------------ */

/* No completion arrives while the engine's timers run for a while. */
static void loop_poll_none(Loop *l)
{
    struct rs_cqe cqe;
    int i;

    for (i = 0; i < 20; i++) {
        qtest_clock_step(qrs_qts(l->d), 1000000);
        g_assert_false(eng_cq_peek(l->d, &l->cq, &cqe));
    }
}

static void loop_expect(Loop *l, uint64_t wr_id, uint8_t status,
                        uint8_t opcode, uint32_t qpn)
{
    struct rs_cqe cqe;

    loop_poll(l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, wr_id);
    g_assert_cmpuint(cqe.status, ==, status);
    g_assert_cmphex(cqe.opcode, ==, opcode);
    g_assert_cmpuint(cqe.qpn, ==, qpn);
}

static void loop_atomic(Loop *l, uint64_t wr_id, uint8_t op, uint64_t va,
                        uint32_t rkey, uint64_t compare_add, uint64_t swap,
                        uint64_t result, uint32_t result_len)
{
    struct rs_send_wqe_ctrl w = {
        .wr_id = wr_id,
        .opcode = op,
        .flags = RS_WQE_F_SIGNALED,
        .num_sge = 1,
        .remote_addr = va,
        .rkey = rkey,
        .compare_add = compare_add,
        .swap = swap,
    };

    loop_post_send(l, &l->a, &w, result, result_len, l->src_key);
}

#define ATOMIC_INIT     0x1122334455667788ull

static void test_engine_atomic(void *obj, void *data, QGuestAllocator *alloc)
{
    QTestState *qts;
    struct rs_cqe cqe;
    uint32_t akey;
    Loop l;

    loop_setup(&l, obj);
    qts = qrs_qts(l.d);
    akey = loop_mr_access(&l, l.dst, LOOP_BUF, RS_ACCESS_LOCAL_WRITE |
                          RS_ACCESS_REMOTE_ATOMIC);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    fill(l.d, l.src, 0xee, LOOP_BUF);
    qtest_writeq(qts, l.dst + 8, ATOMIC_INIT);

    /* FETCH_ADD: memory += add; the original lands in the local SGE. */
    loop_atomic(&l, 0xc0, RS_WR_ATOMIC_FETCH_ADD, l.dst + 8, akey,
                0x0100000000000001ull, 0, l.src, 8);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xc0);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmphex(cqe.opcode, ==, RS_WR_ATOMIC_FETCH_ADD);
    g_assert_cmpuint(cqe.byte_len, ==, 8);
    g_assert_cmphex(qtest_readq(qts, l.src), ==, ATOMIC_INIT);
    g_assert_cmphex(qtest_readq(qts, l.dst + 8), ==, 0x1222334455667789ull);
    g_assert_true(is_filled(l.d, l.dst, 0xee, 8));
    g_assert_true(is_filled(l.d, l.dst + 16, 0xee, LOOP_BUF - 16));
    g_assert_true(is_filled(l.d, l.src + 8, 0xee, 64));

    /* CMP_SWP that matches: swapped. */
    loop_atomic(&l, 0xc1, RS_WR_ATOMIC_CMP_SWP, l.dst + 8, akey,
                0x1222334455667789ull, 0xdeadbeefcafef00dull, l.src + 8, 8);
    loop_expect(&l, 0xc1, RS_WC_SUCCESS, RS_WR_ATOMIC_CMP_SWP, l.a.qpn);
    g_assert_cmphex(qtest_readq(qts, l.src + 8), ==, 0x1222334455667789ull);
    g_assert_cmphex(qtest_readq(qts, l.dst + 8), ==, 0xdeadbeefcafef00dull);

    /* CMP_SWP that does not match: memory unchanged, original returned. */
    loop_atomic(&l, 0xc2, RS_WR_ATOMIC_CMP_SWP, l.dst + 8, akey, 0, 1,
                l.src + 16, 8);
    loop_expect(&l, 0xc2, RS_WC_SUCCESS, RS_WR_ATOMIC_CMP_SWP, l.a.qpn);
    g_assert_cmphex(qtest_readq(qts, l.src + 16), ==, 0xdeadbeefcafef00dull);
    g_assert_cmphex(qtest_readq(qts, l.dst + 8), ==, 0xdeadbeefcafef00dull);

    /* A local SGE that is not 8 bytes: local length error, nothing sent. */
    loop_atomic(&l, 0xc3, RS_WR_ATOMIC_FETCH_ADD, l.dst + 8, akey, 1, 0,
                l.src + 24, 4);
    loop_expect(&l, 0xc3, RS_WC_LOC_LEN_ERR, RS_WR_ATOMIC_FETCH_ADD,
                l.a.qpn);
    g_assert_cmphex(qtest_readq(qts, l.dst + 8), ==, 0xdeadbeefcafef00dull);
    g_assert_true(is_filled(l.d, l.src + 24, 0xee, 8));
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_RTS);

    /* Misaligned remote address: invalid request NAK, memory intact. */
    loop_reconnect(&l);
    loop_atomic(&l, 0xc4, RS_WR_ATOMIC_FETCH_ADD, l.dst + 12, akey, 1, 0,
                l.src + 24, 8);
    loop_expect(&l, 0xc4, RS_WC_REM_INV_REQ_ERR, RS_WR_ATOMIC_FETCH_ADD,
                l.a.qpn);
    g_assert_cmphex(qtest_readq(qts, l.dst + 8), ==, 0xdeadbeefcafef00dull);
    g_assert_true(is_filled(l.d, l.dst + 16, 0xee, LOOP_BUF - 16));
    g_assert_true(is_filled(l.d, l.src + 24, 0xee, 8));
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_ERR);

    /* An MR without the remote atomic right: remote access error. */
    loop_reconnect(&l);
    loop_atomic(&l, 0xc5, RS_WR_ATOMIC_FETCH_ADD, l.dst + 8, l.dst_key, 1,
                0, l.src + 24, 8);
    loop_expect(&l, 0xc5, RS_WC_REM_ACCESS_ERR, RS_WR_ATOMIC_FETCH_ADD,
                l.a.qpn);
    g_assert_cmphex(qtest_readq(qts, l.dst + 8), ==, 0xdeadbeefcafef00dull);

    /* Out of the MR's bounds: remote access error. */
    loop_reconnect(&l);
    loop_atomic(&l, 0xc6, RS_WR_ATOMIC_CMP_SWP, l.dst + LOOP_BUF, akey, 0,
                0, l.src + 24, 8);
    loop_expect(&l, 0xc6, RS_WC_REM_ACCESS_ERR, RS_WR_ATOMIC_CMP_SWP,
                l.a.qpn);
    g_assert_true(is_filled(l.d, l.src + 24, 0xee, 8));

    /* Atomics are RC only: a UD or UC QP refuses them (see engine-uc). */
}

/* IBTA BTH opcodes the wire tests look at (IBTA vol. 1 table 38). */
#define BTH_UC                  0x20
#define BTH_SEND_FIRST          0x00
#define BTH_SEND_MIDDLE         0x01
#define BTH_SEND_LAST           0x02
#define BTH_SEND_ONLY           0x04
#define BTH_ATOMIC_ACK          0x12
#define BTH_CMP_SWAP            0x13
#define AETH_ACK                0x1f

/* Frames the device put on the wire: the RoCE ones, by BTH opcode. */
static ssize_t roce_recv(LanEnv *e, uint8_t *buf, uint8_t opcode)
{
    ssize_t n = lan_sock_recv(e->fd, buf, RS_LAN_MAX_FRAME,
                              RS_QOS_TIMEOUT_US);

    g_assert_cmpint(n, >, 42 + 12);
    g_assert_cmphex(buf[42], ==, opcode);
    return n;
}

/* 10.0.0.2 becomes ours (VNI 0, the MRs' table): frames to it come back. */
static void add_gid_peer(QRdmaSession *d)
{
    struct rs_cmd_add_gid c = {
        .index = 1,
        .type = RS_GID_ROCE_V2_IPV4,
        .vni = 0,
    };
    uint32_t got = ~0u;

    gid_v4(c.gid, 10, 0, 0, 2);
    RS_ASSERT_OK(qrs_add_gid(d, &c, &got));
}

/*
 * QP a (10.0.0.1) sends to QP b at 10.0.0.2, which is not ours yet, so its
 * packets go to the wire where the test keeps them; then 10.0.0.2 becomes
 * ours and QP b's address (wire_peer()), and the test feeds them back to
 * QP b (wire_feed()), as often as it likes, as from b's peer 10.0.0.3.
 * QP b answers to 10.0.0.3: the wire again.
 */
static void wire_setup(Loop *l, LanEnv *e, void *obj, void *data,
                       uint8_t type)
{
    uint64_t bufs[4];
    int i;

    lan_setup(e, obj, data, 0, 2);
    for (i = 0; i < 4; i++) {
        bufs[i] = qrs_alloc_zeroed(e->d, LAN_BUF_SIZE);
        lan_post(e, &e->rx, bufs[i], LAN_BUF_SIZE, 0);
    }
    lan_doorbell(e, &e->rx);
    loop_init(l, e->d, type, 0);
    loop_connect_to(l, &l->a, l->b.qpn, 2);
}

static void wire_peer(Loop *l)
{
    struct rs_qp_attr a;

    add_gid_peer(l->d);
    std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
    gid_v4(a.ah.dgid, 10, 0, 0, 3);
    memcpy(a.ah.dmac, qos_mac, 6);
    a.ah.gid_index = 1;
    a.dest_qp_num = l->a.qpn;
    a.rq_psn = a.sq_psn = LOOP_PSN;
    a.access_flags = STD_ACCESS | RS_ACCESS_REMOTE_ATOMIC;
    eng_connect(l->d, &l->b, l->type, &a, 0);
}

/* Frame @f, kept from QP a, to QP b as its peer 10.0.0.3 sends it. */
static void wire_feed(LanEnv *e, const uint8_t *f, size_t len)
{
    g_autofree uint8_t *g = g_memdup2(f, len);

    g[14 + 15] = 3;
    roce_reseal(g, len);
    lan_sock_send(e->fd, g, len);
}

static void test_engine_atomic_dup(void *obj, void *data,
                                   QGuestAllocator *alloc)
{
    g_autofree uint8_t *req = g_malloc(RS_LAN_MAX_FRAME);
    g_autofree uint8_t *rsp = g_malloc(RS_LAN_MAX_FRAME);
    struct rs_send_wqe_ctrl w;
    QTestState *qts;
    uint32_t akey;
    ssize_t n;
    LanEnv e;
    Loop l;
    int i;

    wire_setup(&l, &e, obj, data, RS_QPT_RC);
    qts = qrs_qts(l.d);
    akey = loop_mr_access(&l, l.dst, LOOP_BUF, RS_ACCESS_LOCAL_WRITE |
                          RS_ACCESS_REMOTE_ATOMIC);
    qtest_writeq(qts, l.dst + 64, ATOMIC_INIT);

    memset(&w, 0, sizeof(w));
    w.wr_id = 0xd0;
    w.opcode = RS_WR_ATOMIC_CMP_SWP;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    w.remote_addr = l.dst + 64;
    w.rkey = akey;
    w.compare_add = ATOMIC_INIT;
    w.swap = 0x0102030405060708ull;
    loop_post_send(&l, &l.a, &w, l.src, 8, l.src_key);
    n = roce_recv(&e, req, BTH_CMP_SWAP);

    /* AtomicETH after the BTH, big-endian: VA, rkey, swap, compare. */
    g_assert_cmphex(ldq_be_p(req + 54), ==, l.dst + 64);
    g_assert_cmphex(ldl_be_p(req + 62), ==, akey);
    g_assert_cmphex(ldq_be_p(req + 66), ==, 0x0102030405060708ull);
    g_assert_cmphex(ldq_be_p(req + 74), ==, ATOMIC_INIT);
    g_assert_cmphex(ldl_be_p(req + 50) & 0xffffff, ==, LOOP_PSN);

    /*
     * Executed once; the same request again (its response was "lost") is
     * answered from the responder resource with the same original value.
     */
    wire_peer(&l);
    for (i = 0; i < 3; i++) {
        wire_feed(&e, req, n);
        roce_recv(&e, rsp, BTH_ATOMIC_ACK);
        g_assert_cmphex(ldl_be_p(rsp + 50) & 0xffffff, ==, LOOP_PSN);
        g_assert_cmphex(rsp[54], ==, AETH_ACK);      /* AETH: ACK */
        g_assert_cmphex(ldq_be_p(rsp + 58), ==, ATOMIC_INIT);
        g_assert_cmphex(qtest_readq(qts, l.dst + 64), ==,
                        0x0102030405060708ull);
    }
    /* Someone else changes the value: a duplicate still does not. */
    qtest_writeq(qts, l.dst + 64, ATOMIC_INIT);
    wire_feed(&e, req, n);
    roce_recv(&e, rsp, BTH_ATOMIC_ACK);
    g_assert_cmphex(ldq_be_p(rsp + 58), ==, ATOMIC_INIT);
    g_assert_cmphex(qtest_readq(qts, l.dst + 64), ==, ATOMIC_INIT);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_RTS);
}

static void test_engine_uc(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    Loop l;

    loop_setup_type(&l, obj, RS_QPT_UC);

    /* UC SEND of 3000 bytes: three packets, no ACK, both complete. */
    loop_pattern(&l, l.src, 3000, 0x21);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_recv(&l, &l.b, 0xb0, l.dst, LOOP_BUF, l.dst_key);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa0;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    loop_post_send(&l, &l.a, &w, l.src, 3000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb0);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    g_assert_cmpuint(cqe.qpn, ==, l.b.qpn);
    loop_expect(&l, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    loop_assert_same(&l, l.src, l.dst, 3000);
    g_assert_true(is_filled(l.d, l.dst + 3000, 0xee, LOOP_BUF - 3000));

    /* UC RDMA WRITE with immediate: data placed, receive WQE consumed. */
    loop_pattern(&l, l.src, 5000, 0x37);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_recv(&l, &l.b, 0xb1, l.dst, 0, l.dst_key);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa1;
    w.opcode = RS_WR_RDMA_WRITE_IMM;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    w.imm_or_inv = 0x0a0b0c0d;
    w.remote_addr = l.dst + 100;
    w.rkey = l.dst_key;
    loop_post_send(&l, &l.a, &w, l.src, 5000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmphex(cqe.opcode, ==, RS_WR_RECV_RDMA_IMM);
    g_assert_cmpuint(cqe.byte_len, ==, 5000);
    g_assert_cmphex(cqe.imm_or_inv, ==, 0x0a0b0c0d);
    loop_expect(&l, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE_IMM, l.a.qpn);
    loop_assert_same(&l, l.src, l.dst + 100, 5000);
    g_assert_true(is_filled(l.d, l.dst, 0xee, 100));
    g_assert_true(is_filled(l.d, l.dst + 5100, 0xee, LOOP_BUF - 5100));

    /*
     * A bad rkey: UC drops the message silently.  The sender completes
     * (no ACKs), the receiver's memory is untouched, both QPs stay up.
     */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa2;
    w.opcode = RS_WR_RDMA_WRITE;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    w.remote_addr = l.dst;
    w.rkey = l.dst_key ^ 0x40;
    loop_post_send(&l, &l.a, &w, l.src, 2000, l.src_key);
    loop_expect(&l, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, l.a.qpn);
    loop_poll_none(&l);
    g_assert_true(is_filled(l.d, l.dst, 0xee, LOOP_BUF));
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_RTS);

    /* No receive WQE: dropped, no RNR NAK, no completion. */
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa3;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    loop_expect(&l, 0xa3, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    loop_poll_none(&l);
    g_assert_true(is_filled(l.d, l.dst, 0xee, LOOP_BUF));

    /* READ and atomics are not UC operations. */
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa4;
    w.opcode = RS_WR_RDMA_READ;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    w.remote_addr = l.dst;
    w.rkey = l.dst_key;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    loop_expect(&l, 0xa4, RS_WC_LOC_QP_OP_ERR, RS_WR_RDMA_READ, l.a.qpn);
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
}

/*
 * A PSN gap in a UC message: the rest of it is dropped without a NAK or a
 * completion and the receive WQE serves the next message.
 */
static void test_engine_uc_gap(void *obj, void *data, QGuestAllocator *alloc)
{
    g_autofree uint8_t *p0 = g_malloc(RS_LAN_MAX_FRAME);
    g_autofree uint8_t *p1 = g_malloc(RS_LAN_MAX_FRAME);
    g_autofree uint8_t *p2 = g_malloc(RS_LAN_MAX_FRAME);
    g_autofree uint8_t *p3 = g_malloc(RS_LAN_MAX_FRAME);
    g_autofree uint8_t *junk = g_malloc(RS_LAN_MAX_FRAME);
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    ssize_t n0, n1, n2, n3;
    LanEnv e;
    Loop l;

    wire_setup(&l, &e, obj, data, RS_QPT_UC);
    loop_pattern(&l, l.src, 3000, 0x44);
    loop_pattern(&l, l.src + 3000, 500, 0x55);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xe0;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    loop_post_send(&l, &l.a, &w, l.src, 3000, l.src_key);
    n0 = roce_recv(&e, p0, BTH_UC | BTH_SEND_FIRST);
    n1 = roce_recv(&e, p1, BTH_UC | BTH_SEND_MIDDLE);
    n2 = roce_recv(&e, p2, BTH_UC | BTH_SEND_LAST);
    g_assert_false(p2[50] & 0x80);          /* UC: no AckReq */
    loop_expect(&l, 0xe0, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    w.wr_id = 0xe1;
    loop_post_send(&l, &l.a, &w, l.src + 3000, 500, l.src_key);
    n3 = roce_recv(&e, p3, BTH_UC | BTH_SEND_ONLY);
    loop_expect(&l, 0xe1, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);

    wire_peer(&l);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_post_recv(&l, &l.b, 0xb0, l.dst, LOOP_BUF, l.dst_key);

    /* FIRST, then LAST: the MIDDLE was lost.  Nothing completes. */
    wire_feed(&e, p0, n0);
    wire_feed(&e, p2, n2);
    /* The late MIDDLE is part of the dropped message too. */
    wire_feed(&e, p1, n1);
    loop_poll_none(&l);
    /* No NAK on the wire: UC never answers. */
    g_assert_cmpint(lan_sock_recv(e.fd, junk, RS_LAN_MAX_FRAME, LAN_QUIET_US),
                    ==, -1);

    /* The next message lands in the same receive WQE, from its start. */
    wire_feed(&e, p3, n3);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb0);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 500);
    g_assert_cmpuint(cqe.qpn, ==, l.b.qpn);
    loop_assert_same(&l, l.src + 3000, l.dst, 500);
    /* Bytes 500.. are the dropped message's FIRST packet, not more. */
    loop_assert_same(&l, l.src + 500, l.dst + 500, 1024 - 500);
    g_assert_true(is_filled(l.d, l.dst + 1024, 0xee, LOOP_BUF - 1024));

    /* The whole 3-packet message again, in order: it is received. */
    loop_post_recv(&l, &l.b, 0xb1, l.dst + 4096, 4096, l.dst_key);
    wire_feed(&e, p0, n0);
    wire_feed(&e, p1, n1);
    wire_feed(&e, p2, n2);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb1);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    g_assert_cmpuint(cqe.byte_len, ==, 3000);
    loop_assert_same(&l, l.src, l.dst + 4096, 3000);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_RTS);
}

/* The adapter's x-lan-rx-missed counter, through QMP. */
static uint64_t lan_rx_missed(QRdmaSession *d)
{
    QTestState *qts = qrs_qts(d);
    QDict *rsp = qtest_qmp(qts, "{ 'execute': 'qom-list', 'arguments':"
                           " { 'path': '/machine/peripheral-anon' } }");
    g_autofree char *path = NULL;
    QListEntry *entry;
    uint64_t n;

    g_assert_true(qdict_haskey(rsp, "return"));
    QLIST_FOREACH_ENTRY(qdict_get_qlist(rsp, "return"), entry) {
        QDict *prop = qobject_to(QDict, qlist_entry_obj(entry));

        if (!strcmp(qdict_get_str(prop, "type"), "child<rdma-session>")) {
            g_assert_null(path);
            path = g_strdup_printf("/machine/peripheral-anon/%s",
                                   qdict_get_str(prop, "name"));
        }
    }
    qobject_unref(rsp);
    g_assert_nonnull(path);
    rsp = qtest_qmp(qts, "{ 'execute': 'qom-get', 'arguments':"
                    " { 'path': %s, 'property': 'x-lan-rx-missed' } }",
                    path);
    g_assert_true(qdict_haskey(rsp, "return"));
    n = qnum_get_uint(qobject_to(QNum, qdict_get(rsp, "return")));
    qobject_unref(rsp);
    return n;
}

/*
 * While the port is active, a LAN frame that finds no RX descriptor is
 * dropped and counted, never held in front of the RoCE frames behind it:
 * a broadcast ARP with no RX ring (the interface is down), then with a
 * ring and nothing posted, and each time a RoCE SEND after it that must
 * be received.
 */
static void test_lan_rx_missed(void *obj, void *data, QGuestAllocator *alloc)
{
    static const uint8_t other[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x71 };
    g_autofree uint8_t *p = g_malloc(RS_LAN_MAX_FRAME);
    struct rs_send_wqe_ctrl w;
    struct rs_cqe cqe;
    uint8_t arp[60], f[64];
    uint64_t buf;
    uint32_t idx;
    ssize_t n;
    LanEnv e;
    Loop l;
    int i;

    lan_setup(&e, obj, data, 0, 0);
    loop_init(&l, e.d, RS_QPT_UC, 0);
    loop_connect_to(&l, &l.a, l.b.qpn, 2);
    loop_pattern(&l, l.src, 500, 0x3c);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xe0;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    loop_post_send(&l, &l.a, &w, l.src, 500, l.src_key);
    n = roce_recv(&e, p, BTH_UC | BTH_SEND_ONLY);
    loop_expect(&l, 0xe0, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    wire_peer(&l);

    /* who-has 10.0.0.9 tell 10.0.0.3, to everyone */
    memset(arp, 0, sizeof(arp));
    memcpy(arp, lan_bcast, 6);
    memcpy(arp + 6, other, 6);
    stw_be_p(arp + 12, 0x0806);
    stw_be_p(arp + 14, 1);
    stw_be_p(arp + 16, 0x0800);
    arp[18] = 6;
    arp[19] = 4;
    stw_be_p(arp + 20, 1);
    memcpy(arp + 22, other, 6);
    stl_be_p(arp + 28, 0x0a000003);
    stl_be_p(arp + 38, 0x0a000009);

    for (i = 0; i < 2; i++) {
        if (i == 1) {
            lan_ring_init(&e, &e.rx, RS_LAN_RXQ, 2, LAN_RX_VECTOR);
        }
        fill(l.d, l.dst, 0xee, LOOP_BUF);
        loop_post_recv(&l, &l.b, 0xb0 + i, l.dst, LOOP_BUF, l.dst_key);
        lan_sock_send(e.fd, arp, sizeof(arp));
        wire_feed(&e, p, n);
        loop_poll(&l, &cqe);
        g_assert_cmphex(cqe.wr_id, ==, 0xb0 + i);
        g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
        g_assert_cmpuint(cqe.byte_len, ==, 500);
        loop_assert_same(&l, l.src, l.dst, 500);
        g_assert_cmpuint(lan_rx_missed(e.d), ==, i + 1);
    }

    /* A frame the filter refuses is not a missed one. */
    lan_make_frame(f, sizeof(f), other, 0x62);
    lan_sock_send(e.fd, f, sizeof(f));
    loop_post_recv(&l, &l.b, 0xb2, l.dst, LOOP_BUF, l.dst_key);
    wire_feed(&e, p, n);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0xb2);
    g_assert_cmpuint(lan_rx_missed(e.d), ==, 2);

    /* The ARPs were dropped, not held: a new buffer gets the next frame. */
    buf = lan_rx_buf(&e, LAN_BUF_SIZE);
    idx = lan_post(&e, &e.rx, buf, LAN_BUF_SIZE, 0);
    lan_doorbell(&e, &e.rx);
    g_usleep(LAN_QUIET_US);
    g_assert_false(lan_done(&e, &e.rx, idx));
    lan_make_frame(f, sizeof(f), qos_mac, 0x61);
    lan_sock_send(e.fd, f, sizeof(f));
    lan_expect_rx(&e, idx, buf, LAN_BUF_SIZE, f, sizeof(f));
    g_assert_cmpuint(lan_rx_missed(e.d), ==, 2);
    assert_alive(e.d);
}

static void test_engine_flush(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_send_wqe_ctrl w;
    struct rs_qp_attr a;
    Loop l;

    loop_setup(&l, obj);

    /* MODIFY_QP to ERR: posted receive WQEs complete flushed, in order. */
    loop_post_recv(&l, &l.b, 0xb0, l.dst, 100, l.dst_key);
    loop_post_recv(&l, &l.b, 0xb1, l.dst + 100, 100, l.dst_key);
    loop_post_recv(&l, &l.b, 0xb2, l.dst + 200, 100, l.dst_key);
    std_attr(&a, RS_QPS_RTS, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_modify_qp(l.d, l.b.h, &a, RS_QP_ATTR_STATE));
    loop_expect(&l, 0xb0, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0xb1, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0xb2, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, l.b.qpn);
    loop_poll_none(&l);

    /* Posted in ERR: flushed too, send WQEs signaled or not. */
    loop_post_recv(&l, &l.b, 0xb3, l.dst, 100, l.dst_key);
    loop_expect(&l, 0xb3, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, l.b.qpn);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xb4;
    w.opcode = RS_WR_SEND;
    w.num_sge = 1;
    loop_post_send(&l, &l.b, &w, l.src, 100, l.src_key);
    w.wr_id = 0xb5;
    w.opcode = RS_WR_RDMA_WRITE;
    w.flags = RS_WQE_F_SIGNALED;
    loop_post_send(&l, &l.b, &w, l.src, 100, l.src_key);
    loop_expect(&l, 0xb4, RS_WC_WR_FLUSH_ERR, RS_WR_SEND, l.b.qpn);
    loop_expect(&l, 0xb5, RS_WC_WR_FLUSH_ERR, RS_WR_RDMA_WRITE, l.b.qpn);
    loop_poll_none(&l);

    /*
     * An error completion first, then the WQEs behind it flushed: a WRITE
     * with a bad rkey and two more, one unsignaled.  QP b is in RESET and
     * then RTS again, with a receive WQE that the error leaves flushed.
     */
    loop_reconnect(&l);
    loop_post_recv(&l, &l.b, 0xb6, l.dst, 100, l.dst_key);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa0;
    w.opcode = RS_WR_RDMA_WRITE;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    w.remote_addr = l.dst;
    w.rkey = l.dst_key ^ 0x40;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    w.wr_id = 0xa1;
    w.opcode = RS_WR_SEND;
    w.flags = 0;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    w.wr_id = 0xa2;
    w.flags = RS_WQE_F_SIGNALED;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    loop_expect(&l, 0xa0, RS_WC_REM_ACCESS_ERR, RS_WR_RDMA_WRITE, l.a.qpn);
    loop_expect(&l, 0xb6, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0xa1, RS_WC_WR_FLUSH_ERR, RS_WR_SEND, l.a.qpn);
    loop_expect(&l, 0xa2, RS_WC_WR_FLUSH_ERR, RS_WR_SEND, l.a.qpn);
    loop_poll_none(&l);
    g_assert_cmpuint(qp_state(l.d, l.a.h), ==, RS_QPS_ERR);
    g_assert_cmpuint(qp_state(l.d, l.b.h), ==, RS_QPS_ERR);

    /* RESET drops what is left without completions. */
    std_attr(&a, RS_QPS_ERR, RS_QPS_RESET);
    RS_ASSERT_OK(qrs_modify_qp(l.d, l.a.h, &a, RS_QP_ATTR_STATE));
    loop_poll_none(&l);
}

/* ---- SRQ ---- */

static void srq_template(QRdmaSession *d, struct rs_cmd_create_srq *c,
                         uint32_t pd, uint8_t log, uint8_t max_sge)
{
    memset(c, 0, sizeof(*c));
    c->pd = pd;
    c->log_size = log;
    c->max_sge = max_sge;
    c->ring_addr = qrs_alloc_zeroed(d, (size_t)qrs_recv_stride(max_sge)
                                    << log);
}

static void srq_post(QRdmaSession *d, const struct rs_cmd_create_srq *c,
                     uint32_t h, uint32_t *pi, uint64_t wr_id, uint64_t addr,
                     uint32_t len, uint32_t lkey)
{
    struct rs_recv_wqe_ctrl w = { .wr_id = wr_id, .num_sge = 1 };
    struct rs_sge sge = { .addr = addr, .length = len, .lkey = lkey };
    uint64_t slot = c->ring_addr +
        (uint64_t)(*pi & ((1u << c->log_size) - 1)) *
        qrs_recv_stride(c->max_sge);

    qtest_memwrite(qrs_qts(d), slot, &w, sizeof(w));
    qtest_memwrite(qrs_qts(d), slot + sizeof(w), &sge, sizeof(sge));
    (*pi)++;
    qrs_db_writel(d, c->uar, RS_DB_SRQ, HINDEX(h) | (*pi & 0xffff) << 16);
}

/*
 * A CQ of the largest size, filled past capacity without polling: the
 * CQE that finds it full raises RS_EV_CQ_ERR and overwrites nothing.
 * Flushing QPs in ERR makes the CQEs: each QP's receive queue, then its
 * send queue, WQE i of the whole sequence completing with wr_id i.
 */
static void cq_full_post(QRdmaSession *d, uint64_t ring, uint32_t reg,
                         uint32_t qpn, uint32_t stride, uint32_t n,
                         uint32_t first)
{
    g_autofree uint8_t *buf = g_malloc0((size_t)stride * n);
    uint32_t i;

    for (i = 0; i < n; i++) {
        uint8_t *wqe = buf + (size_t)i * stride;

        stq_le_p(wqe, first + i);      /* wr_id leads both WQE kinds */
        if (reg == RS_DB_SQ) {
            wqe[offsetof(struct rs_send_wqe_ctrl, opcode)] = RS_WR_SEND;
        }
    }
    qtest_bufwrite(qrs_qts(d), ring, buf, (size_t)stride * n);
    qrs_db_writel(d, 0, reg, qpn | (n & 0xffff) << 16);
}

/* Wait until the CQE in slot @index has the first lap's owner bit. */
static void cq_full_wait(QRdmaSession *d, uint64_t ring, uint32_t index)
{
    int64_t end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    uint64_t owner = ring + (uint64_t)index * sizeof(struct rs_cqe) +
                     offsetof(struct rs_cqe, owner);

    while (!(qtest_readb(qrs_qts(d), owner) & RS_CQE_OWNER)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

static void test_cq_full_max(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    const uint32_t cap = 1u << RS_MAX_CQ_LOG, wq = 1u << RS_MAX_WQ_LOG;
    const uint32_t total = cap + 1;
    const size_t ring_len = (size_t)sizeof(struct rs_cqe) << RS_MAX_CQ_LOG;
    uint64_t ring = qrs_alloc_zeroed(d, ring_len);
    g_autofree struct rs_cqe *cqes = g_malloc(ring_len);
    uint32_t pd = new_pd(d), cq = 0, done = 0, i;
    int64_t end;
    struct rs_event ev;
    bool got = false;

    RS_ASSERT_OK(qrs_create_cq(d, ring, RS_MAX_CQ_LOG, 0, 0, &cq));
    while (done < total) {
        struct rs_cmd_create_qp c = {
            .qp_type = RS_QPT_RC,
            .pd = pd,
            .send_cq = cq,
            .recv_cq = cq,
            .sq_log_size = RS_MAX_WQ_LOG,
            .rq_log_size = RS_MAX_WQ_LOG,
            .max_send_sge = 1,
            .max_recv_sge = 1,
        };
        uint32_t qp, n;

        c.sq_addr = qrs_alloc_zeroed(d, qrs_qp_sq_bytes(&c));
        c.rq_addr = qrs_alloc_zeroed(d, qrs_qp_rq_bytes(&c));
        qp = new_qp(d, &c);
        qp_walk(d, qp, RS_QPT_RC, RS_QPS_ERR);
        n = MIN(total - done, wq);
        cq_full_post(d, c.rq_addr, RS_DB_RQ, HINDEX(qp),
                     qrs_qp_rq_bytes(&c) >> RS_MAX_WQ_LOG, n, done);
        done += n;
        if (done <= cap) {
            cq_full_wait(d, ring, done - 1);
        }
        if (done < total) {
            n = MIN(total - done, wq);
            cq_full_post(d, c.sq_addr, RS_DB_SQ, HINDEX(qp),
                         qrs_qp_sq_bytes(&c) >> RS_MAX_WQ_LOG, n, done);
            done += n;
            if (done <= cap) {
                cq_full_wait(d, ring, done - 1);
            }
        }
    }

    /* The last CQE: an event, or (wrongly) slot 0 of the second lap. */
    end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    while (!got && g_get_monotonic_time() < end &&
           (qtest_readb(qrs_qts(d), ring + offsetof(struct rs_cqe, owner)) &
            RS_CQE_OWNER)) {
        got = qrs_aeq_poll(d, &ev, 10 * 1000);
    }
    qtest_bufread(qrs_qts(d), ring, cqes, ring_len);
    for (i = 0; i < cap; i++) {
        if (le64_to_cpu(cqes[i].wr_id) != i ||
            !(cqes[i].owner & RS_CQE_OWNER)) {
            g_error("CQE %u overwritten: wr_id %" PRIu64 " owner 0x%x", i,
                    (uint64_t)le64_to_cpu(cqes[i].wr_id), cqes[i].owner);
        }
    }
    g_assert_true(got);
    g_assert_cmpuint(ev.type, ==, RS_EV_CQ_ERR);
    g_assert_cmphex(ev.handle, ==, cq);
    g_assert_false(qrs_aeq_poll(d, &ev, 100 * 1000));
    assert_alive(d);
}

static void test_srq(void *obj, void *data, QGuestAllocator *alloc)
{
    QRdmaSession *d = rs_setup(obj);
    struct rs_cmd_create_srq c, b;
    struct rs_cmd_create_qp q;
    uint32_t pd, pd2, cq, srq, h, qp, moved, pi = 0;
    uint64_t ring2;
    uint8_t wqe[64], wqe2[64];
    int i;

    add_gid_v4(d, 0, 1);
    pd = new_pd(d);
    pd2 = new_pd(d);
    cq = new_cq(d, 4);
    srq_template(d, &c, pd, 3, 2);
    c.srq_limit = 2;
    RS_ASSERT_OK(qrs_create_srq(d, &c, &srq));
    g_assert_cmpuint(HINDEX(srq), ==, 1);

    /* Bad CREATE_SRQ inputs. */
    b = c;
    b.pd = HINDEX(pd) | 0x7f000000;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_HANDLE);
    b = c;
    b.log_size = 0;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_SIZE);
    b.log_size = RS_MAX_WQ_LOG + 1;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_SIZE);
    b = c;
    b.max_sge = 0;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_PARAM);
    b.max_sge = RS_MAX_SGE + 1;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_PARAM);
    b = c;
    b.uar = DEF_DB_PAGES;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_PARAM);
    b = c;
    b.rsvd0 = 1;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_PARAM);
    b = c;
    b.ring_addr = 0;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_ADDR);
    b.ring_addr = c.ring_addr + 8;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_ALIGN);
    b.ring_addr = ram_end(d) - 64;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_ADDR);
    b = c;
    b.srq_limit = 8;
    RS_ASSERT_STATUS(qrs_create_srq(d, &b, &h), RS_STATUS_BAD_PARAM);

    /* MODIFY_SRQ: handles, mask, limit. */
    RS_ASSERT_STATUS(qrs_modify_srq(d, 0, RS_SRQ_ATTR_LIMIT, 1, 0, 0, NULL),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq + (1u << RS_HANDLE_GEN_SHIFT),
                                RS_SRQ_ATTR_LIMIT, 1, 0, 0, NULL),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, 0, 1, 0, 0, NULL),
                     RS_STATUS_BAD_ATTR_MASK);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, 4, 1, 0, 0, NULL),
                     RS_STATUS_BAD_ATTR_MASK);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, RS_SRQ_ATTR_LIMIT, 8, 0, 0, NULL),
                     RS_STATUS_BAD_PARAM);
    RS_ASSERT_OK(qrs_modify_srq(d, srq, RS_SRQ_ATTR_LIMIT, 7, 0, 0, NULL));
    RS_ASSERT_OK(qrs_modify_srq(d, srq, RS_SRQ_ATTR_LIMIT, 0, 0, 0, NULL));

    /* Resize: the three posted WQEs move to the start of the new ring. */
    for (i = 0; i < 3; i++) {
        srq_post(d, &c, srq, &pi, 0x50 + i, 0x1000 * i, 64, 0x100 + i);
    }
    ring2 = qrs_alloc_zeroed(d, (size_t)qrs_recv_stride(2) << 4);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, RS_SRQ_ATTR_MAX_WR, 0, ring2, 1,
                                NULL), RS_STATUS_BAD_SIZE);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, RS_SRQ_ATTR_MAX_WR, 0,
                                c.ring_addr + 64, 4, NULL),
                     RS_STATUS_BAD_SIZE);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, RS_SRQ_ATTR_MAX_WR, 0, ring2 + 8, 4,
                                NULL), RS_STATUS_BAD_ALIGN);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, RS_SRQ_ATTR_MAX_WR |
                                RS_SRQ_ATTR_LIMIT, 16, ring2, 4, NULL),
                     RS_STATUS_BAD_PARAM);
    RS_ASSERT_OK(qrs_modify_srq(d, srq, RS_SRQ_ATTR_MAX_WR | RS_SRQ_ATTR_LIMIT,
                            15, ring2, 4, &moved));
    g_assert_cmpuint(moved, ==, 3);
    for (i = 0; i < 3; i++) {
        qtest_memread(qrs_qts(d), c.ring_addr + i * qrs_recv_stride(2), wqe,
                      sizeof(wqe));
        qtest_memread(qrs_qts(d), ring2 + i * qrs_recv_stride(2), wqe2,
                      sizeof(wqe2));
        g_assert_cmpmem(wqe, sizeof(wqe), wqe2, sizeof(wqe2));
    }
    g_assert_true(is_filled(d, ring2 + 3 * qrs_recv_stride(2), 0,
                            13 * qrs_recv_stride(2)));

    /* QPs on the SRQ. */
    qp_template(d, &q, RS_QPT_RC, pd, cq, cq);
    q.srq = srq;
    q.rq_addr = 0;
    q.rq_log_size = 0;
    q.max_recv_sge = 0;
    qp = new_qp(d, &q);
    q.srq = srq + (1u << RS_HANDLE_GEN_SHIFT);
    RS_ASSERT_STATUS(qrs_create_qp(d, &q, &h, NULL), RS_STATUS_BAD_HANDLE);
    q.srq = srq;
    q.rq_addr = c.ring_addr;
    RS_ASSERT_STATUS(qrs_create_qp(d, &q, &h, NULL), RS_STATUS_BAD_PARAM);
    q.rq_addr = 0;
    q.qp_type = RS_QPT_GSI;
    RS_ASSERT_STATUS(qrs_create_qp(d, &q, &h, NULL), RS_STATUS_BAD_PARAM);
    q.qp_type = RS_QPT_UD;
    q.pd = pd2;
    RS_ASSERT_STATUS(qrs_create_qp(d, &q, &h, NULL), RS_STATUS_BAD_PD);
    q.pd = pd;
    h = new_qp(d, &q);                          /* UD on an SRQ is fine */
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, h));

    /* BUSY while a QP uses it; its PD is busy too. */
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SRQ, srq), RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_QP, qp));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_PD, pd), RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_destroy(d, RS_CMD_DESTROY_SRQ, srq));
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SRQ, srq),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SRQ, 0),
                     RS_STATUS_BAD_HANDLE);
    RS_ASSERT_STATUS(qrs_modify_srq(d, srq, RS_SRQ_ATTR_LIMIT, 1, 0, 0, NULL),
                     RS_STATUS_BAD_HANDLE);
    /* The slot comes back with a new generation. */
    RS_ASSERT_OK(qrs_create_srq(d, &c, &h));
    g_assert_cmphex(h, ==, srq + (1u << RS_HANDLE_GEN_SHIFT));

    /* The table holds max-srqs - 1. */
    for (i = 2; i < DEF_MAX_SRQS; i++) {
        RS_ASSERT_OK(qrs_create_srq(d, &c, &h));
    }
    RS_ASSERT_STATUS(qrs_create_srq(d, &c, &h), RS_STATUS_NO_RESOURCES);
    assert_alive(d);
}

static void test_engine_srq(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_cmd_create_srq c;
    struct rs_cmd_create_qp q;
    struct rs_send_wqe_ctrl w;
    struct rs_qp_attr a;
    struct rs_event ev;
    struct rs_cqe cqe;
    LoopQp c2, b2;
    uint32_t srq, pi = 0;
    Loop l;
    int i;

    loop_setup(&l, obj);

    /* QP b and a second QP b2 take receive WQEs from one SRQ. */
    srq_template(l.d, &c, l.pd, 2, 1);
    c.srq_limit = 2;
    RS_ASSERT_OK(qrs_create_srq(l.d, &c, &srq));
    memset(&b2, 0, sizeof(b2));
    memset(&c2, 0, sizeof(c2));
    qp_template(l.d, &b2.c, RS_QPT_RC, l.pd, l.cq.h, l.cq.h);
    b2.c.srq = srq;
    b2.c.rq_addr = 0;
    b2.h = new_qp(l.d, &b2.c);
    b2.qpn = HINDEX(b2.h);
    qp_template(l.d, &c2.c, RS_QPT_RC, l.pd, l.cq.h, l.cq.h);
    c2.h = new_qp(l.d, &c2.c);
    c2.qpn = HINDEX(c2.h);
    loop_connect(&l, &c2, b2.qpn);
    loop_connect(&l, &b2, c2.qpn);
    /* QP b again, now on the SRQ: a new QP in its place. */
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DESTROY_QP, l.b.h));
    q = l.b.c;
    q.srq = srq;
    q.rq_addr = 0;
    l.b.c = q;
    l.b.h = new_qp(l.d, &q);
    l.b.qpn = HINDEX(l.b.h);
    l.b.sq_pi = l.b.rq_pi = 0;
    std_attr(&a, 0, RS_QPS_RESET);
    RS_ASSERT_OK(qrs_modify_qp(l.d, l.a.h, &a, RS_QP_ATTR_STATE));
    l.a.sq_pi = 0;
    loop_connect(&l, &l.a, l.b.qpn);
    loop_connect(&l, &l.b, l.a.qpn);
    /* Its RQ doorbell names no receive queue: ignored. */
    qrs_db_writel(l.d, 0, RS_DB_RQ, l.b.qpn | 1 << 16);

    fill(l.d, l.dst, 0xee, LOOP_BUF);
    for (i = 0; i < 4; i++) {
        srq_post(l.d, &c, srq, &pi, 0x70 + i, l.dst + i * 1024, 1024,
                 l.dst_key);
    }
    loop_pattern(&l, l.src, 4096, 0x66);
    memset(&w, 0, sizeof(w));
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;

    /* In SRQ order, whichever QP receives. */
    w.wr_id = 0xa0;
    loop_post_send(&l, &l.a, &w, l.src, 1000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0x70);
    g_assert_cmpuint(cqe.qpn, ==, l.b.qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1000);
    g_assert_cmpuint(cqe.status, ==, RS_WC_SUCCESS);
    loop_expect(&l, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    g_assert_false(qrs_aeq_poll(l.d, &ev, 0));

    w.wr_id = 0xa1;
    loop_post_send(&l, &c2, &w, l.src + 1000, 1024, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0x71);
    g_assert_cmpuint(cqe.qpn, ==, b2.qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1024);
    loop_expect(&l, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, c2.qpn);
    g_assert_false(qrs_aeq_poll(l.d, &ev, 0));

    /* Fewer than srq_limit (2) left: the limit event, once. */
    w.wr_id = 0xa2;
    loop_post_send(&l, &l.a, &w, l.src + 2024, 7, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0x72);
    g_assert_cmpuint(cqe.qpn, ==, l.b.qpn);
    loop_expect(&l, 0xa2, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    g_assert_true(qrs_aeq_poll(l.d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, RS_EV_SRQ_LIMIT_REACHED);
    g_assert_cmphex(ev.handle, ==, srq);
    g_assert_cmpuint(ev.data, ==, 1);
    loop_assert_same(&l, l.src, l.dst, 1000);
    loop_assert_same(&l, l.src + 1000, l.dst + 1024, 1024);
    loop_assert_same(&l, l.src + 2024, l.dst + 2048, 7);
    g_assert_true(is_filled(l.d, l.dst + 1000, 0xee, 24));
    g_assert_true(is_filled(l.d, l.dst + 2055, 0xee, LOOP_BUF - 2055));

    /* Too long for the WQE: local length error, NAK, both QPs in ERR. */
    w.wr_id = 0xa3;
    loop_post_send(&l, &l.a, &w, l.src, 2000, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0x73);
    g_assert_cmpuint(cqe.status, ==, RS_WC_LOC_LEN_ERR);
    loop_expect(&l, 0xa3, RS_WC_REM_INV_REQ_ERR, RS_WR_SEND, l.a.qpn);
    /*
     * QP b's invalid request error, then, on the SRQ in ERR: Last WQE
     * Reached, no receive flush.
     */
    g_assert_true(qrs_aeq_poll(l.d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, RS_EV_QP_REQ_ERR);
    g_assert_cmphex(ev.handle, ==, l.b.h);
    g_assert_true(qrs_aeq_poll(l.d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, RS_EV_QP_LAST_WQE_REACHED);
    g_assert_cmphex(ev.handle, ==, l.b.h);
    srq_post(l.d, &c, srq, &pi, 0x74, l.dst, 1024, l.dst_key);
    loop_poll_none(&l);

    /* The SRQ still serves b2. */
    w.wr_id = 0xa4;
    loop_post_send(&l, &c2, &w, l.src, 10, l.src_key);
    loop_poll(&l, &cqe);
    g_assert_cmphex(cqe.wr_id, ==, 0x74);
    g_assert_cmpuint(cqe.qpn, ==, b2.qpn);
    loop_expect(&l, 0xa4, RS_WC_SUCCESS, RS_WR_SEND, c2.qpn);
    RS_ASSERT_STATUS(qrs_destroy(l.d, RS_CMD_DESTROY_SRQ, srq),
                     RS_STATUS_BUSY);
    assert_alive(l.d);
}


/*
 * SRQ and engine state move with the VM: an SRQ with posted WQEs and a QP
 * on it, and a QP's atomic responder resource.  On the destination a SEND
 * lands in the next SRQ WQE and a duplicate atomic is answered, not
 * executed.
 */
static void test_engine_srq_migrate(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-mig-XXXXXX",
                                             NULL);
    g_autofree char *path = g_strdup_printf("%s/state", tmpdir);
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    QRdmaSession *src, *d;
    struct rs_cmd_create_srq c;
    struct rs_cmd_create_qp q;
    struct rs_send_wqe_ctrl w;
    QTestState *to;
    QPCIBus *bus;
    uint32_t srq, akey, pi = 0;
    Loop l;

    loop_setup(&l, obj);
    src = l.d;
    srq_template(l.d, &c, l.pd, 3, 1);
    RS_ASSERT_OK(qrs_create_srq(l.d, &c, &srq));
    RS_ASSERT_OK(qrs_destroy(l.d, RS_CMD_DESTROY_QP, l.b.h));
    q = l.b.c;
    q.srq = srq;
    q.rq_addr = 0;
    l.b.c = q;
    l.b.h = new_qp(l.d, &q);
    l.b.qpn = HINDEX(l.b.h);
    loop_reconnect(&l);
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    srq_post(l.d, &c, srq, &pi, 0x90, l.dst, 1024, l.dst_key);
    srq_post(l.d, &c, srq, &pi, 0x91, l.dst + 1024, 1024, l.dst_key);
    loop_pattern(&l, l.src, 2048, 0x77);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa0;
    w.opcode = RS_WR_SEND;
    w.flags = RS_WQE_F_SIGNALED;
    w.num_sge = 1;
    loop_post_send(&l, &l.a, &w, l.src, 100, l.src_key);
    loop_expect(&l, 0x90, RS_WC_SUCCESS, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    akey = loop_mr_access(&l, l.dst + 2 * PAGE, 2 * PAGE,
                          RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_ATOMIC);
    qtest_writeq(qrs_qts(l.d), l.dst + 2 * PAGE, 5);
    loop_atomic(&l, 0xa1, RS_WR_ATOMIC_FETCH_ADD, l.dst + 2 * PAGE, akey,
                10, 0, l.src + 1024, 8);
    loop_expect(&l, 0xa1, RS_WC_SUCCESS, RS_WR_ATOMIC_FETCH_ADD, l.a.qpn);
    g_assert_cmphex(qtest_readq(qrs_qts(l.d), l.dst + 2 * PAGE), ==, 15);

    qtest_qmp_assert_success(qrs_qts(src), "{ 'execute': 'stop' }");
    qtest_qmp_assert_success(qrs_qts(src), "{ 'execute': 'migrate',"
                             "  'arguments': { 'uri': %s } }", uri);
    wait_migration_done(qrs_qts(src));
    to = qtest_initf("%s -incoming defer", qos_get_current_command_line());
    qtest_qmp_assert_success(to, "{ 'execute': 'migrate-incoming',"
                             "  'arguments': { 'uri': %s } }", uri);
    wait_migration_done(to);
    qtest_qmp_assert_success(to, "{ 'execute': 'cont' }");
    bus = qpci_new_pc(to, NULL);
    d = g_new0(QRdmaSession, 1);
    rs_attach_migrated(d, bus, src);
    l.d = d;

    /* The SRQ's next WQE, through the QP's SRQ link. */
    w.wr_id = 0xa2;
    loop_post_send(&l, &l.a, &w, l.src + 1024, 1000, l.src_key);
    loop_expect(&l, 0x91, RS_WC_SUCCESS, RS_WR_RECV, l.b.qpn);
    loop_expect(&l, 0xa2, RS_WC_SUCCESS, RS_WR_SEND, l.a.qpn);
    loop_assert_same(&l, l.src, l.dst, 100);
    loop_assert_same(&l, l.src + 1024, l.dst + 1024, 1000);
    RS_ASSERT_STATUS(qrs_destroy(d, RS_CMD_DESTROY_SRQ, srq), RS_STATUS_BUSY);
    RS_ASSERT_OK(qrs_modify_srq(d, srq, RS_SRQ_ATTR_LIMIT, 1, 0, 0, NULL));

    g_free(d);
    qpci_free_pc(bus);
    qtest_quit(to);
    unlink(path);
    rmdir(tmpdir);
}

/*
 * Kernel-consumer state moves with the VM: a privileged PD, a bound
 * fast-registration MR (key tag, IOVA, page slots) and a Free one.  On
 * the destination the bound key translates as before, LOCAL_INV and a
 * REG_MR of the Free MR work, and the reserved lkey is still honoured.
 */
static void test_engine_fast_reg_migrate(void *obj, void *data,
                                         QGuestAllocator *alloc)
{
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-mig-XXXXXX",
                                             NULL);
    g_autofree char *path = g_strdup_printf("%s/state", tmpdir);
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    QRdmaSession *src, *d;
    QTestState *to;
    QPCIBus *bus;
    uint32_t key, k1, free_key, k2;
    uint64_t pbl;
    Loop l;

    loop_setup_pd(&l, obj, RS_PD_F_PRIVILEGED);
    src = l.d;
    key = fr_alloc(&l, l.pd, 4);
    free_key = fr_alloc(&l, l.pd, 3);
    pbl = qrs_alloc_zeroed(l.d, 4 * 8);
    qtest_writeq(qrs_qts(l.d), pbl + 0, l.dst + 3 * PAGE);
    qtest_writeq(qrs_qts(l.d), pbl + 8, l.dst + 1 * PAGE);
    k1 = (key & ~RS_MKEY_TAG_MASK) | 0xc3;
    fr_post_reg(&l, &l.b, 0xf1, k1, FR_IOVA + 0x200, 2 * PAGE - 0x200, pbl,
                2, RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE);
    fr_expect(&l, 0xf1, RS_WR_REG_MR, RS_WC_SUCCESS);

    qtest_qmp_assert_success(qrs_qts(src), "{ 'execute': 'stop' }");
    qtest_qmp_assert_success(qrs_qts(src), "{ 'execute': 'migrate',"
                             "  'arguments': { 'uri': %s } }", uri);
    wait_migration_done(qrs_qts(src));
    to = qtest_initf("%s -incoming defer", qos_get_current_command_line());
    qtest_qmp_assert_success(to, "{ 'execute': 'migrate-incoming',"
                             "  'arguments': { 'uri': %s } }", uri);
    wait_migration_done(to);
    qtest_qmp_assert_success(to, "{ 'execute': 'cont' }");
    bus = qpci_new_pc(to, NULL);
    d = g_new0(QRdmaSession, 1);
    rs_attach_migrated(d, bus, src);
    l.d = d;

    /* 5000 bytes at FR_IOVA + 0x300: dst page 3 from 0x300, then page 1. */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    loop_pattern(&l, l.src, 5000, 0x4d);
    fr_post_op(&l, &l.a, 0xf2, RS_WR_RDMA_WRITE, 0, FR_IOVA + 0x300, k1,
               l.src, 5000, RS_LOCAL_DMA_LKEY);
    fr_expect(&l, 0xf2, RS_WR_RDMA_WRITE, RS_WC_SUCCESS);
    loop_assert_same(&l, l.src, l.dst + 3 * PAGE + 0x300, PAGE - 0x300);
    loop_assert_same(&l, l.src + PAGE - 0x300, l.dst + PAGE,
                     5000 - (PAGE - 0x300));
    g_assert_true(is_filled(l.d, l.dst, 0xee, PAGE));
    g_assert_true(is_filled(l.d, l.dst + PAGE + 5000 - (PAGE - 0x300), 0xee,
                            PAGE - (5000 - (PAGE - 0x300))));
    g_assert_true(is_filled(l.d, l.dst + 2 * PAGE, 0xee, PAGE + 0x300));

    fr_post_op(&l, &l.b, 0xf3, RS_WR_LOCAL_INV, k1, 0, 0, 0, 0, 0);
    fr_expect(&l, 0xf3, RS_WR_LOCAL_INV, RS_WC_SUCCESS);
    k2 = (free_key & ~RS_MKEY_TAG_MASK) | 0x11;
    qtest_writeq(qrs_qts(l.d), pbl + 16, l.dst);
    fr_post_reg(&l, &l.b, 0xf4, k2, FR_IOVA, 3 * PAGE, pbl, 3,
                RS_ACCESS_LOCAL_WRITE);
    fr_expect(&l, 0xf4, RS_WR_REG_MR, RS_WC_SUCCESS);
    /* The invalidated key no longer reaches memory. */
    fill(l.d, l.dst, 0xee, LOOP_BUF);
    fr_post_op(&l, &l.a, 0xf5, RS_WR_RDMA_WRITE, 0, FR_IOVA + 0x300, k1,
               l.src, 64, RS_LOCAL_DMA_LKEY);
    fr_expect(&l, 0xf5, 0, RS_WC_REM_ACCESS_ERR);
    g_assert_true(is_filled(l.d, l.dst, 0xee, LOOP_BUF));
    assert_alive(d);

    g_free(d);
    qpci_free_pc(bus);
    qtest_quit(to);
    unlink(path);
    rmdir(tmpdir);
}

/* ------------------------------------------------------------------ */
/* Hostile peers and guests                                            */
/* ------------------------------------------------------------------ */

/*
 * An MR of @len bytes at @iova whose pages are all the guest page @page:
 * remote access to more memory than the test guest has.
 */
static uint32_t alias_mr(QRdmaSession *d, uint32_t pd, uint64_t iova,
                         uint64_t page, uint32_t len)
{
    struct rs_cmd_reg_mr c = {
        .iova = iova,
        .length = len,
        .npages = len / PAGE,
        .pd = pd,
        .page_shift = 12,
        .access = STD_ACCESS,
    };

    c.pbl_addr = make_pbl(d, page, 0, c.npages);
    return reg_mr_ok(d, &c);
}

/* Send the frames held from adapter @from on, and stop holding them. */
static void pair_release(Pair *pr, int from)
{
    GByteArray *f;

    pair_pump(pr);
    pr->hold[from] = false;
    while ((f = g_queue_pop_head(&pr->held[from]))) {
        lan_sock_send(pr->fd[!from], f->data, f->len);
        g_byte_array_unref(f);
    }
}

/* Forget the frames held from adapter @from. */
static void pair_forget(Pair *pr, int from)
{
    GByteArray *f;

    pair_pump(pr);
    pr->hold[from] = false;
    while ((f = g_queue_pop_head(&pr->held[from]))) {
        g_byte_array_unref(f);
    }
}

/* Move frames both ways without logging them (long transfers). */
static void pair_relay(void *opaque)
{
    Pair *pr = opaque;
    int i;

    for (i = 0; i < 2; i++) {
        GPollFD pfd = { .fd = pr->fd[i], .events = G_IO_IN };
        ssize_t len;

        while (g_poll(&pfd, 1, 0) == 1) {
            len = lan_sock_recv(pr->fd[i], pr->frame, RS_LAN_MAX_FRAME,
                                RS_QOS_TIMEOUT_US);
            g_assert_cmpint(len, >, 0);
            lan_sock_send(pr->fd[!i], pr->frame, len);
        }
    }
}

/* The LAN environment with a 1024-packet send window. */
static void *lan_wide_before(GString *cmd_line, void *arg)
{
    void *sv = lan_before(cmd_line, arg);

    g_string_append(cmd_line, " -global rdma-session.x-window=1024 ");
    return sv;
}

/*
 * LAN and RoCE frames share the backend, and each waits for its own: a
 * LAN frame held behind RoCE frames is not "sent" because one of those
 * was.  An RC WRITE of 1024 packets to a peer that never answers fills
 * the socket, then four LAN frames are posted, and the test reads the
 * wire a frame at a time.  Once the device has taken the second LAN
 * frame, the first must already be in the socket: at most a socket
 * buffer's worth of RoCE frames can come before it.  (When the RoCE
 * requester did not stop for the backend and every RoCE completion
 * resumed the LAN ring, hundreds of RoCE frames stood between them.)
 */
static void test_lan_roce_backpressure(void *obj, void *data,
                                       QGuestAllocator *alloc)
{
    const uint64_t iova = 0x100000000000ull;
    const uint32_t nlan = 4;
    uint32_t pd, key, i, lan_seen = 0, roce_between = 0;
    g_autofree uint8_t *f = g_malloc(RS_LAN_MAX_FRAME);
    bool second_taken = false;
    struct rs_send_wqe_ctrl w;
    struct rs_qp_attr a;
    struct rs_sge sge;
    uint64_t lanbuf;
    EngCq cq;
    LanEnv e;
    LoopQp q;
    ssize_t len;

    lan_setup(&e, obj, data, 4, 0);
    add_gid_v4(e.d, 0, 1);
    pd = new_pd(e.d);
    eng_cq_init(e.d, &cq, 6);
    key = alias_mr(e.d, pd, iova, qrs_alloc_zeroed(e.d, PAGE), 4 * MiB);
    memset(&q, 0, sizeof(q));
    qp_template(e.d, &q.c, RS_QPT_RC, pd, cq.h, cq.h);
    q.h = new_qp(e.d, &q.c);
    q.qpn = HINDEX(q.h);
    std_attr(&a, RS_QPS_RESET, RS_QPS_RESET);
    gid_v4(a.ah.dgid, 10, 0, 0, 2);
    memcpy(a.ah.dmac, pair_mac[1], 6);
    a.path_mtu = RS_MTU_4096;
    a.timeout = PAIR_TIMEOUT;
    eng_connect(e.d, &q, RS_QPT_RC, &a, 0);
    w = (struct rs_send_wqe_ctrl) {
        .wr_id = 1, .opcode = RS_WR_RDMA_WRITE, .num_sge = 1,
        .remote_addr = 0x1000, .rkey = 0x1234,
    };
    sge = (struct rs_sge) { .addr = iova, .length = 4 * MiB, .lkey = key };
    eng_post_send(e.d, &q, &w, &sge, 1);
    for (i = 0; i < 20; i++) {
        g_usleep(5000);
        assert_alive(e.d);
    }

    lanbuf = qrs_alloc_zeroed(e.d, nlan * 1024);
    for (i = 0; i < nlan; i++) {
        lan_make_frame(f, 1000, lan_bcast, i);
        qtest_memwrite(qrs_qts(e.d), lanbuf + i * 1024, f, 1000);
        lan_post(&e, &e.tx, lanbuf + i * 1024, 1000, 0);
    }
    lan_doorbell(&e, &e.tx);

    while (lan_seen < nlan) {
        len = lan_sock_recv(e.fd, f, RS_LAN_MAX_FRAME, RS_QOS_TIMEOUT_US);
        g_assert_cmpint(len, >, 14);
        if (lduw_be_p(f + 12) == 0x88b5) {
            lan_seen++;
        } else if (second_taken && !lan_seen) {
            roce_between++;
        }
        second_taken |= lan_done(&e, &e.tx, 1);
    }
    g_test_message("RoCE frames between the second LAN frame's hand-over "
                   "and the first LAN frame: %u", roce_between);
    g_assert_cmpuint(roce_between, <, 200);
    for (i = 0; i < nlan; i++) {
        g_assert_cmphex(lan_status(&e, &e.tx, i), ==, lan_ok(&e.tx, i));
    }
    assert_alive(e.d);
}

/*
 * announce-self (as after a migration): besides QEMU's RARP, a gratuitous
 * ARP for the IPv4 GID and an unsolicited neighbour advertisement with
 * the override flag for the IPv6 GID, each with the adapter's MAC.
 */
static void test_lan_announce(void *obj, void *data, QGuestAllocator *alloc)
{
    struct rs_cmd_add_gid g6 = { .index = 2, .type = RS_GID_ROCE_V2_IPV6 };
    uint8_t f[RS_LAN_MAX_FRAME];
    bool arp = false, na = false;
    uint32_t got, sum, i;
    ssize_t len;
    LanEnv e;

    lan_setup(&e, obj, data, 0, 0);
    add_gid_v4(e.d, 0, 1);
    gid_v6(g6.gid, 0x70);
    RS_ASSERT_OK(qrs_add_gid(e.d, &g6, &got));
    qtest_qmp_assert_success(qrs_qts(e.d), "{ 'execute': 'announce-self',"
                             "  'arguments': { 'initial': 50, 'max': 550,"
                             "    'rounds': 1, 'step': 100 } }");
    while ((!arp || !na) &&
           (len = lan_sock_recv(e.fd, f, sizeof(f), RS_QOS_TIMEOUT_US)) > 0) {
        g_assert_cmpmem(f + 6, 6, qos_mac, 6);
        if (lduw_be_p(f + 12) == 0x0806) {
            g_assert_cmpint(len, ==, 60);
            g_assert_cmpmem(f, 6, lan_bcast, 6);
            g_assert_cmphex(lduw_be_p(f + 20), ==, 1);
            g_assert_cmpmem(f + 22, 6, qos_mac, 6);
            g_assert_cmphex(ldl_be_p(f + 28), ==, 0x0a000001);
            g_assert_cmphex(ldl_be_p(f + 38), ==, 0x0a000001);
            arp = true;
        } else if (lduw_be_p(f + 12) == 0x86dd) {
            g_assert_cmpint(len, ==, 86);
            g_assert_cmphex(f[20], ==, 58);
            g_assert_cmpuint(f[21], ==, 255);
            g_assert_cmpmem(f + 22, 16, g6.gid, 16);
            g_assert_cmphex(f[54], ==, 136);
            g_assert_cmphex(ldl_be_p(f + 58), ==, 0x20000000);
            g_assert_cmpmem(f + 62, 16, g6.gid, 16);
            g_assert_cmphex(f[78], ==, 2);
            g_assert_cmpmem(f + 80, 6, qos_mac, 6);
            /* ICMPv6 checksum: pseudo-header and message sum to 0xffff. */
            sum = 32 + 58;
            for (i = 22; i < 54; i += 2) {
                sum += lduw_be_p(f + i);
            }
            for (i = 54; i < 86; i += 2) {
                sum += lduw_be_p(f + i);
            }
            while (sum >> 16) {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            g_assert_cmphex(sum, ==, 0xffff);
            na = true;
        }
    }
    g_assert_true(arp);
    g_assert_true(na);
    assert_alive(e.d);
}

/*
 * One READ request for 16 MiB from a peer: the responder produces its
 * responses a budget at a time and stops while the backend cannot take
 * more, instead of building all 16384 of them in the receive callback
 * and leaving what the socket refuses in QEMU's net queue.  Once the QP
 * is gone, what comes out of the wire is what was really sent: a socket
 * buffer's worth.  A READ of 256 KiB, with the wire relayed, completes.
 */
static void test_engine_pair_read_flood(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    const uint64_t iova = 0x100000000000ull;
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_qp_attr attr;
    struct rs_sge sge;
    struct rs_cqe cqe;
    uint32_t rkey, lkey, n = 0, i;
    g_autofree uint8_t *page = g_malloc(PAGE);
    g_autofree uint8_t *got = g_malloc(PAGE);
    GByteArray *req;
    LoopQp q[2], q2[2];
    ssize_t len;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    rkey = alias_mr(b->d, b->pd, iova, b->buf, 16 * MiB);

    /* A's READ request, taken off the wire and grown to 16 MiB. */
    pr.hold[0] = true;
    sge = peer_sge(a, 0, PAGE);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa0, &sge, 1, iova, rkey, 0);
    req = pair_take(&pr, 0);
    g_assert_cmphex(req->data[ROCE_BTH], ==, OP_READ_REQ);
    stl_be_p(req->data + ROCE_BTH + 12 + 12, 16 * MiB);
    roce_reseal(req->data, req->len);
    pair_inject(&pr, 1, req->data, req->len);
    g_byte_array_unref(req);
    pair_forget(&pr, 0);

    /* Nobody reads B's wire for a while; then B's QP goes away. */
    for (i = 0; i < 50; i++) {
        qtest_clock_step(qrs_qts(b->d), 1000);
        g_usleep(2000);
    }
    std_attr(&attr, RS_QPS_RTS, RS_QPS_ERR);
    RS_ASSERT_OK(qrs_modify_qp(b->d, q[1].h, &attr, RS_QP_ATTR_STATE));
    while ((len = lan_sock_recv(pr.fd[1], pr.frame, RS_LAN_MAX_FRAME,
                                G_USEC_PER_SEC / 5)) > 0) {
        n++;
    }
    g_test_message("READ responses on the wire: %u of 16384", n);
    g_assert_cmpuint(n, >, 0);
    g_assert_cmpuint(n, <, 2048);
    assert_alive(b->d);

    /* A legitimate long READ, to an MR aliased the same way on A. */
    pair_rc(&pr, q2, 0, STD_ACCESS);
    lkey = alias_mr(a->d, a->pd, iova, a->buf, 256 * KiB);
    sge = (struct rs_sge) { .addr = iova, .length = 256 * KiB,
                            .lkey = lkey };
    pair_post(&pr, 0, &q2[0], RS_WR_RDMA_READ, 0xa1, &sge, 1, iova, rkey,
              0);
    eng_poll(a->d, &a->cq, &cqe, pair_relay, &pr);
    assert_cqe(&cqe, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_READ, q2[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 256 * KiB);
    qtest_memread(qrs_qts(b->d), b->buf, page, PAGE);
    qtest_memread(qrs_qts(a->d), a->buf, got, PAGE);
    g_assert_cmpmem(got, PAGE, page, PAGE);
    peer_dont_care(a, 0, PAGE);
    g_assert_cmpuint(qp_state(a->d, q2[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, q2[1].h), ==, RS_QPS_RTS);
    pair_cq_empty(&pr, 1);
    pair_teardown(&pr);
}

/*
 * The guest rewrites its send queue after the doorbell: every slot now
 * holds a SEND of 4 GiB - 1, 2^24 packets at MTU 256, a multiple of the
 * PSN space.  The ACK for the real message completes it as the requester
 * sent it (the completer used to read the slot again and loop forever
 * without moving its PSN).
 */
static void test_engine_pair_sq_rewrite(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    uint32_t stride, i, nslots;
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc_mtu(&pr, q, 0, STD_ACCESS, RS_MTU_256);
    sge = peer_sge(b, 0x1000, 4000);
    eng_post_recv(b->d, &q[1], 0xb0, &sge, 1);
    pr.hold[0] = true;
    sge = peer_sge(a, 0x10, 1000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0, &sge, 1, 0, 0, 0);
    pair_wait_frames(&pr, 0, 4);

    nslots = 1u << q[0].c.sq_log_size;
    stride = qrs_qp_sq_bytes(&q[0].c) >> q[0].c.sq_log_size;
    for (i = 0; i < nslots; i++) {
        struct rs_send_wqe_ctrl w = {
            .wr_id = 0xbad0000 + i,
            .opcode = RS_WR_SEND,
            .flags = RS_WQE_F_SIGNALED,
            .num_sge = 1,
        };
        struct rs_sge huge = { .addr = a->buf, .length = 0xffffffffu,
                               .lkey = a->key[0] };

        qtest_memwrite(qrs_qts(a->d), q[0].c.sq_addr + i * stride, &w,
                       sizeof(w));
        qtest_memwrite(qrs_qts(a->d), q[0].c.sq_addr + i * stride + sizeof(w),
                       &huge, sizeof(huge));
    }

    pair_release(&pr, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1000);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, 1000);
    pair_cq_empty(&pr, 0);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    img_move(b, 0x1000, a, 0x10, 1000);
    peer_check(b);
    pair_teardown(&pr);
}

/*
 * Ten sequence NAKs for the same PSN (a confused or spoofing peer): the
 * requester sends its unacknowledged packets again once, not ten times.
 */
static void test_engine_pair_nak_storm(void *obj, void *data,
                                       QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;
    GByteArray *ack;
    uint32_t first;
    LoopQp q[2];
    int i;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);

    /* One exchange, to have a frame from B to A to shape NAKs from. */
    sge = peer_sge(b, 0x1000, 100);
    eng_post_recv(b->d, &q[1], 0xb0, &sge, 1);
    pr.hold[1] = true;
    sge = peer_sge(a, 0x10, 100);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0, &sge, 1, 0, 0, 0);
    ack = pair_take(&pr, 1);
    g_assert_cmphex(ack->data[ROCE_BTH], ==, OP_ACK);
    pair_release(&pr, 1);
    pair_inject(&pr, 0, ack->data, ack->len);
    pair_poll(&pr, 1, &cqe);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
    img_move(b, 0x1000, a, 0x10, 100);

    /* A WRITE of four packets that B never sees. */
    pair_log_reset(&pr);
    pr.hold[0] = true;
    sge = peer_sge(a, 0x2000, 4000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &sge, 1,
              b->buf + 0x3000, b->key[0], 0);
    pair_wait_frames(&pr, 0, 4);
    first = pr.psn[0][0];
    stl_be_p(ack->data + ROCE_BTH + 8, first);
    ack->data[ROCE_EXT] = AETH_NAK_SEQ;
    roce_reseal(ack->data, ack->len);
    for (i = 0; i < 10; i++) {
        int j;

        pair_inject(&pr, 0, ack->data, ack->len);
        for (j = 0; j < 5; j++) {
            pair_pump(&pr);
            g_usleep(2000);
        }
    }
    g_test_message("A sent %u frames", pr.nops[0]);
    g_assert_cmpuint(pr.nops[0], ==, 8);
    for (i = 4; i < 8; i++) {
        g_assert_cmphex(pr.psn[0][i], ==, (first + i - 4) & 0xffffff);
    }
    g_byte_array_unref(ack);
    pair_forget(&pr, 0);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    peer_check(b);
    pair_teardown(&pr);
}

/*
 * A SEND longer than max-msg-size (8192 on adapter B) into a receive WQE
 * that would hold it: an invalid request, not a message (nor a 32-bit
 * offset that wraps with receive SGEs beyond 4 GiB).
 */
static void test_engine_pair_send_too_long(void *obj, void *data,
                                           QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    sge = peer_sge(b, 0, 16384);
    eng_post_recv(b->d, &q[1], 0xb0, &sge, 1);
    sge = peer_sge(a, 0, 9216);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0, &sge, 1, 0, 0, 0);
    pair_poll(&pr, 1, &cqe);
    assert_cqe(&cqe, 0xb0, RS_WC_LOC_LEN_ERR, RS_WR_RECV, q[1].qpn);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa0, RS_WC_REM_INV_REQ_ERR, RS_WR_SEND, q[0].qpn);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_ERR);
    expect_event(b->d, RS_EV_QP_REQ_ERR, q[1].h);
    peer_dont_care(b, 0, 16384);
    pair_teardown(&pr);
}

static void modify_state(QRdmaSession *d, LoopQp *q, uint8_t from,
                         uint8_t to, uint32_t mask, bool sqd_notify)
{
    struct rs_qp_attr a;

    std_attr(&a, from, to);
    a.en_sqd_async_notify = sqd_notify;
    RS_ASSERT_OK(qrs_modify_qp(d, q->h, &a, RS_QP_ATTR_STATE | mask));
    g_assert_cmpuint(qp_state(d, q->h), ==, to);
}

/*
 * The QP-affiliated asynchronous events the device raises itself, each
 * provoked: Communication Established (a packet for a QP in RTR), SQ
 * Drained (SQD with notification, at once and after the outstanding
 * WRITE's ACK), access and invalid request errors of a responder, and a
 * catastrophic error (a send queue producer more than a ring ahead).
 */
static void test_engine_pair_events(void *obj, void *data,
                                    QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_qp_attr attr;
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp q[2], x[2];
    int i;

    pair_setup(&pr, obj, data, alloc);
    for (i = 0; i < 2; i++) {
        pair_qp(&pr, i, &q[i], RS_QPT_RC, pr.p[i].pd);
    }
    for (i = 0; i < 2; i++) {
        std_attr(&attr, RS_QPS_RESET, RS_QPS_RESET);
        gid_v4(attr.ah.dgid, 10, 0, 0, !i + 1);
        memcpy(attr.ah.dmac, pair_mac[!i], 6);
        attr.dest_qp_num = q[!i].qpn;
        attr.sq_psn = pair_psn[i];
        attr.rq_psn = pair_psn[!i];
        attr.timeout = PAIR_TIMEOUT;
        if (i == 0) {
            eng_connect(a->d, &q[0], RS_QPT_RC, &attr, 0);
        } else {
            /* B stays in RTR. */
            attr.qp_state = RS_QPS_INIT;
            RS_ASSERT_OK(qrs_modify_qp(b->d, q[1].h, &attr,
                         std_mask(RS_QPT_RC, RS_QPS_RESET, RS_QPS_INIT)));
            attr.cur_qp_state = RS_QPS_INIT;
            attr.qp_state = RS_QPS_RTR;
            RS_ASSERT_OK(qrs_modify_qp(b->d, q[1].h, &attr,
                         std_mask(RS_QPT_RC, RS_QPS_INIT, RS_QPS_RTR)));
        }
    }

    /* Communication Established on B, once. */
    for (i = 0; i < 2; i++) {
        sge = peer_sge(b, 0x1000 * i, 100);
        eng_post_recv(b->d, &q[1], 0xb0 + i, &sge, 1);
        sge = peer_sge(a, 0x10, 100);
        pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0 + i, &sge, 1, 0, 0, 0);
        pair_poll(&pr, 1, &cqe);
        assert_cqe(&cqe, 0xb0 + i, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn);
        pair_poll(&pr, 0, &cqe);
        assert_cqe(&cqe, 0xa0 + i, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn);
        img_move(b, 0x1000 * i, a, 0x10, 100);
    }
    expect_event(b->d, RS_EV_QP_COMM_EST, q[1].h);
    expect_no_event(b->d);
    modify_state(b->d, &q[1], RS_QPS_RTR, RS_QPS_RTS,
                 std_mask(RS_QPT_RC, RS_QPS_RTR, RS_QPS_RTS) &
                 ~RS_QP_ATTR_STATE, false);

    /* SQ Drained: nothing outstanding, at once. */
    modify_state(a->d, &q[0], RS_QPS_RTS, RS_QPS_SQD,
                 RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, true);
    expect_event(a->d, RS_EV_QP_SQ_DRAINED, q[0].h);
    modify_state(a->d, &q[0], RS_QPS_SQD, RS_QPS_RTS, 0, false);

    /* ... and with a WRITE in flight, only once its ACK is in. */
    pr.hold[1] = true;
    sge = peer_sge(a, 0x2000, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, &sge, 1,
              b->buf + 0x3000, b->key[0], 0);
    pair_wait_frames(&pr, 1, 1);
    modify_state(a->d, &q[0], RS_QPS_RTS, RS_QPS_SQD,
                 RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, true);
    expect_no_event(a->d);
    pair_release(&pr, 1);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn);
    expect_event(a->d, RS_EV_QP_SQ_DRAINED, q[0].h);
    img_move(b, 0x3000, a, 0x2000, 3000);
    modify_state(a->d, &q[0], RS_QPS_SQD, RS_QPS_RTS, 0, false);

    /* A WRITE through a key B does not have: B's access error. */
    sge = peer_sge(a, 0x2000, 100);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa3, &sge, 1,
              b->buf, b->key[0] ^ 0x100, 0);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, 0xa3, RS_WC_REM_ACCESS_ERR, RS_WR_RDMA_WRITE, q[0].qpn);
    expect_event(b->d, RS_EV_QP_ACCESS_ERR, q[1].h);
    g_assert_cmpuint(qp_state(b->d, q[1].h), ==, RS_QPS_ERR);

    /* A send queue producer more than a ring ahead: catastrophic. */
    pair_rc(&pr, x, 0, STD_ACCESS);
    qrs_db_writel(a->d, 0, RS_DB_SQ,
                  x[0].qpn | ((1u << x[0].c.sq_log_size) + 5) << 16);
    expect_event(a->d, RS_EV_QP_FATAL, x[0].h);
    g_assert_cmpuint(qp_state(a->d, x[0].h), ==, RS_QPS_ERR);
    peer_check(b);
    pair_teardown(&pr);
}

/* ------------------------------------------------------------------ */
/* Two adapters: live migration with state in flight                   */
/* ------------------------------------------------------------------ */

/*
 * What the source had put on adapter @i's old wire when it was saved: the
 * bytes in the socket now.  Reading them makes room, and the stopped
 * source's net queue and bottom halves may then send more; that comes
 * after the state was saved and is left unread, lost with the old wire.
 */
static void pair_pump_old(Pair *pr, int i)
{
    int left;

    g_assert_cmpint(ioctl(pr->fd[i], FIONREAD, &left), ==, 0);
    while (left > 0) {
        ssize_t len = lan_sock_recv(pr->fd[i], pr->frame, RS_LAN_MAX_FRAME,
                                    RS_QOS_TIMEOUT_US);

        g_assert_cmpint(len, >, 0);
        left -= sizeof(uint32_t) + len;
        pair_handle(pr, i, len);
    }
}

/*
 * Live migration of the QEMU that runs both adapters: stop it, save its
 * state, load it into a new QEMU with the same devices and continue
 * there.  A and B move together, at one instant, as the adapters of two
 * VMs whose hosts switch over at once would; the relay is the switch
 * between them and stays.  The destination's command line gives the same
 * devices, its netdevs on new socketpairs.
 *
 * From here on the switch holds both directions.  On return held[] has
 * what the source had put on the wire (pair_pump_old), the log is empty,
 * and what the destination sent on resuming is still in the new sockets:
 * the caller delivers the old frames to the running destination
 * (pair_release: a switch's queue drains) or loses them (pair_lose_held).
 * No migration hold (x-migration-hold) runs: a stream backend has none,
 * and after 'stop' the run state at the save is not finish-migrate.
 */
static void pair_migrate(Pair *pr)
{
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-mig-XXXXXX",
                                             NULL);
    g_autofree char *path = g_strdup_printf("%s/state", tmpdir);
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autoptr(GString) cmd_line =
        g_string_new(qos_get_current_command_line());
    QTestState *from = qrs_qts(pr->p[0].d);
    PairSockets *s = pr->sock;
    int i, sv[2];

    g_assert_null(pr->to);
    pr->hold[0] = pr->hold[1] = true;
    qtest_qmp_assert_success(from, "{ 'execute': 'stop' }");
    qtest_qmp_assert_success(from, "{ 'execute': 'migrate',"
                             "  'arguments': { 'uri': %s } }", uri);
    wait_migration_done(from);
    for (i = 0; i < 2; i++) {
        pair_pump_old(pr, i);
        g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
        qemu_set_cloexec(sv[0]);
        s->old[i] = s->test[i];
        s->test[i] = pr->fd[i] = sv[0];
        close(s->qemu[i]);
        s->qemu[i] = sv[1];
    }
    pr->nops[0] = pr->nops[1] = 0;
    pr->drop[0] = pr->drop[1] = 0;

    pair_cmd_line(cmd_line, s);
    pr->to = qtest_initf("%s -incoming defer", cmd_line->str);
    qtest_qmp_assert_success(pr->to, "{ 'execute': 'migrate-incoming',"
                             "  'arguments': { 'uri': %s } }", uri);
    wait_migration_done(pr->to);
    qtest_qmp_assert_success(pr->to, "{ 'execute': 'cont' }");
    pr->to_bus = qpci_new_pc(pr->to, NULL);
    for (i = 0; i < 2; i++) {
        rs_attach_migrated(&pr->to_dev[i], pr->to_bus, pr->p[i].d);
        pr->p[i].d = &pr->to_dev[i];
        /* The driver hears that it runs somewhere else now. */
        expect_event(pr->p[i].d, RS_EV_MIGRATION_NOTICE, 1);
    }
    unlink(path);
    rmdir(tmpdir);
}

/* The switch loses what it holds from adapter @from, and holds on. */
static void pair_lose_held(Pair *pr, int from)
{
    GByteArray *f;

    while ((f = g_queue_pop_head(&pr->held[from]))) {
        g_byte_array_unref(f);
    }
}

/* Deliver the first @n frames held from adapter @from; hold the rest. */
static void pair_pass(Pair *pr, int from, unsigned n)
{
    while (n--) {
        GByteArray *f = g_queue_pop_head(&pr->held[from]);

        g_assert_nonnull(f);
        lan_sock_send(pr->fd[!from], f->data, f->len);
        g_byte_array_unref(f);
    }
}

/* Until adapter @from has sent a frame @op for @psn since the reset. */
static void pair_wait_sent(Pair *pr, int from, uint8_t op, uint32_t psn)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    unsigned i = 0;

    for (;;) {
        pair_pump(pr);
        for (; i < pr->nops[from]; i++) {
            if (pr->op[from][i] == op &&
                pr->psn[from][i] == (psn & 0xffffff)) {
                return;
            }
        }
        if (g_get_monotonic_time() > end) {
            g_error("adapter %c sent no opcode 0x%x for PSN 0x%x",
                    'A' + from, op, psn & 0xffffff);
        }
        g_usleep(1000);
    }
}

/* Until @n completions wait on adapter @i's CQ, without polling them. */
static void pair_cq_wait(Pair *pr, int i, unsigned n)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    EngCq ahead = pr->p[i].cq;
    struct rs_cqe cqe;

    ahead.ci += n - 1;
    for (pair_pump(pr); !eng_cq_peek(pr->p[i].d, &ahead, &cqe);
         pair_pump(pr)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/* Until both adapters have told the switch where their GIDs are now. */
static void pair_wait_announced(Pair *pr)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    for (pair_pump(pr); !pr->announced[0] || !pr->announced[1];
         pair_pump(pr)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/* The next completion on adapter @i must be this one. */
static void pair_expect_cqe(Pair *pr, int i, uint64_t wr_id, uint8_t status,
                            uint8_t opcode, uint32_t qpn, uint32_t byte_len)
{
    struct rs_cqe cqe;

    pair_poll(pr, i, &cqe);
    assert_cqe(&cqe, wr_id, status, opcode, qpn);
    if (status == RS_WC_SUCCESS && (opcode == RS_WR_RECV ||
                                    opcode == RS_WR_RDMA_READ)) {
        g_assert_cmpuint(cqe.byte_len, ==, byte_len);
    }
}

/* Until peer @p's buffer is as expected (a message arrives in parts). */
static void peer_wait(Peer *p)
{
    gint64 end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;
    g_autofree uint8_t *got = g_malloc(PAIR_BUF);

    for (;;) {
        qtest_memread(qrs_qts(p->d), p->buf, got, PAIR_BUF);
        if (!memcmp(got, p->img, PAIR_BUF)) {
            return;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(1000);
    }
}

/* The end of every migration test: nothing else completes, both RTS. */
static void pair_mig_done(Pair *pr, LoopQp q[2])
{
    int i;

    for (i = 0; i < 2; i++) {
        pair_cq_empty(pr, i);
        peer_check(&pr->p[i]);
        g_assert_cmpuint(qp_state(pr->p[i].d, q[i].h), ==, RS_QPS_RTS);
    }
    pair_teardown(pr);
}

/*
 * Unacknowledged WQEs: three WRITEs and a SEND (eight packets whose PSNs
 * cross 2^24) have reached B, their ACKs wait at the switch.  On the
 * destination each adapter prompts its peer with an RNR NAK (timer code
 * 1) at the PSN it expects, and A, whose congestion window starts anew,
 * sends all eight packets again at once from its first unacknowledged
 * PSN.  The switch then delivers the ACKs it held: every WQE completes
 * once, B executes none of the duplicates.  Both adapters announce their
 * GIDs from the destination.
 */
static void test_engine_pair_migrate_unacked(void *obj, void *data,
                                             QGuestAllocator *alloc)
{
    static const struct {
        uint32_t soff, doff, len;
    } w[] = {
        { 0x100, 0x1000, 1500 }, { 0x800, 0x2000, 3000 },
        { 0x2000, 0x4000, 100 },
    };
    const uint32_t psn = pair_psn[0], next = (psn + 8) & 0xffffff;
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    LoopQp q[2];
    int i;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    sge = peer_sge(b, 0x6000, 2000);
    eng_post_recv(b->d, &q[1], 0xb3, &sge, 1);
    pair_log_reset(&pr);
    pr.hold[1] = true;
    for (i = 0; i < ARRAY_SIZE(w); i++) {
        sge = peer_sge(a, w[i].soff, w[i].len);
        pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0 + i, &sge, 1,
                  b->buf + w[i].doff, b->key[0], 0);
        img_move(b, w[i].doff, a, w[i].soff, w[i].len);
    }
    sge = peer_sge(a, 0x3000, 1800);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa3, &sge, 1, 0, 0, 0);
    img_move(b, 0x6000, a, 0x3000, 1800);
    pair_wait_sent(&pr, 1, OP_ACK, next - 1);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST, OP_WRITE_FIRST,
                    OP_WRITE_MIDDLE, OP_WRITE_LAST, OP_WRITE_ONLY,
                    OP_SEND_FIRST, OP_SEND_LAST);
    pair_cq_empty(&pr, 0);
    peer_check(b);

    pair_migrate(&pr);
    g_assert_true(g_queue_is_empty(&pr.held[0]));
    g_assert_false(g_queue_is_empty(&pr.held[1]));
    pair_wait_frames(&pr, 0, 9);
    PAIR_EXPECT_OPS(&pr, 0, OP_ACK, OP_WRITE_FIRST, OP_WRITE_LAST,
                    OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST,
                    OP_WRITE_ONLY, OP_SEND_FIRST, OP_SEND_LAST);
    g_assert_cmphex(pr.syn[0][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[0][0], ==, pair_psn[1]);
    for (i = 1; i < 9; i++) {
        g_assert_cmphex(pr.psn[0][i], ==, (psn + i - 1) & 0xffffff);
    }
    pair_wait_frames(&pr, 1, 1);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[1][0], ==, next);

    /* The ACKs the switch held, then A's packets again. */
    pair_release(&pr, 1);
    for (i = 0; i < ARRAY_SIZE(w); i++) {
        pair_expect_cqe(&pr, 0, 0xa0 + i, RS_WC_SUCCESS, RS_WR_RDMA_WRITE,
                        q[0].qpn, 0);
    }
    pair_expect_cqe(&pr, 0, 0xa3, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn, 0);
    pair_release(&pr, 0);
    /* B acknowledges the duplicates and executes none of them. */
    pair_wait_sent(&pr, 1, OP_ACK, next - 1);
    pair_expect_cqe(&pr, 1, 0xb3, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn, 1800);
    pair_wait_announced(&pr);
    pair_mig_done(&pr, q);
}

/*
 * READ responses that arrive while the requester waits out an RNR timer
 * (a responder that said "not ready" and then answered the READ anyway,
 * as a migration source does when its hold and a cancelled migration
 * meet): they complete the READ, and when the wait is over the requester
 * goes on after it.  It must not start again from behind the completed
 * WQE: that sends the READ again and, with a full send queue, trips the
 * SQ overrun check and ends the QP without an error completion.
 */
static void test_engine_pair_read_during_rnr(void *obj, void *data,
                                             QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    GByteArray *r1, *r2, *nak;
    uint32_t psn;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    peer_fill(b, 0x1000, 2000, 0x31);
    pair_log_reset(&pr);
    pr.hold[1] = true;
    sge = peer_sge(a, 0x4000, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_READ, 0xa1, &sge, 1,
              b->buf + 0x1000, b->key[0], 0);
    r1 = pair_take(&pr, 1);
    r2 = pair_take(&pr, 1);
    g_assert_cmphex(r1->data[ROCE_BTH], ==, OP_READ_RESP_FIRST);
    g_assert_cmphex(r2->data[ROCE_BTH], ==, OP_READ_RESP_LAST);
    psn = pr.psn[0][0];

    /* "Not ready" at the READ's PSN, the longest timer (655.36 ms). */
    nak = g_byte_array_new();
    g_byte_array_append(nak, r1->data, ROCE_EXT + 4 + 4);
    nak->data[ROCE_BTH] = OP_ACK;
    nak->data[ROCE_EXT] = AETH_RNR | 0;
    roce_reseal(nak->data, nak->len);
    pair_inject(&pr, 0, nak->data, nak->len);
    pair_pump(&pr);
    g_usleep(20 * 1000);

    /* The responses, during the wait: the READ completes. */
    pair_inject(&pr, 0, r1->data, r1->len);
    pair_inject(&pr, 0, r2->data, r2->len);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_READ, q[0].qpn,
                    2000);
    img_move(a, 0x4000, b, 0x1000, 2000);

    /* A WRITE posted during the wait leaves after it, at the next PSN. */
    pair_log_reset(&pr);
    pr.hold[1] = false;
    sge = peer_sge(a, 0x100, 500);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, &sge, 1,
              b->buf + 0x3000, b->key[0], 0);
    g_usleep(20 * 1000);
    PAIR_EXPECT_NONE(&pr, 0);
    qtest_clock_step(qrs_qts(a->d), 700 * 1000 * 1000);
    pair_wait_frames(&pr, 0, 1);
    g_usleep(20 * 1000);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_ONLY);
    g_assert_cmphex(pr.psn[0][0], ==, (psn + 2) & 0xffffff);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x3000, a, 0x100, 500);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_RTS);
    pair_cq_empty(&pr, 0);
    peer_check(a);
    peer_check(b);
    g_byte_array_unref(r1);
    g_byte_array_unref(r2);
    g_byte_array_unref(nak);
    pair_teardown(&pr);
}

/*
 * A multi-packet message half sent and half received: B has the WRITE
 * before it and the first two packets of a four-packet SEND (its receive
 * WQE taken, half of it written); the other two wait at the switch.  On
 * the destination A sends the SEND again from its first packet (no ACK
 * covers any of it), B prompts A at the third packet's PSN, and the
 * switch delivers the second half first: B completes the message from
 * the responder state it brought along, and takes the rest as
 * duplicates.
 */
static void test_engine_pair_migrate_half_message(void *obj, void *data,
                                                  QGuestAllocator *alloc)
{
    const uint32_t psn = pair_psn[0];
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    sge = peer_sge(b, 0x4000, 4096);
    eng_post_recv(b->d, &q[1], 0xb1, &sge, 1);
    pair_log_reset(&pr);
    pr.hold[0] = true;
    sge = peer_sge(a, 0x100, 2500);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa0, &sge, 1,
              b->buf + 0x1000, b->key[0], 0);
    sge = peer_sge(a, 0x2000, 4000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa1, &sge, 1, 0, 0, 0);
    pair_wait_frames(&pr, 0, 7);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST,
                    OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_MIDDLE,
                    OP_SEND_LAST);
    pair_pass(&pr, 0, 5);
    pair_expect_cqe(&pr, 0, 0xa0, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x1000, a, 0x100, 2500);
    img_move(b, 0x4000, a, 0x2000, 2048);
    peer_wait(b);
    pair_cq_empty(&pr, 1);
    g_assert_cmpuint(g_queue_get_length(&pr.held[0]), ==, 2);

    pair_migrate(&pr);
    g_assert_cmpuint(g_queue_get_length(&pr.held[0]), ==, 2);
    pair_wait_frames(&pr, 0, 5);
    PAIR_EXPECT_OPS(&pr, 0, OP_ACK, OP_SEND_FIRST, OP_SEND_MIDDLE,
                    OP_SEND_MIDDLE, OP_SEND_LAST);
    g_assert_cmphex(pr.syn[0][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[0][1], ==, (psn + 3) & 0xffffff);
    pair_wait_frames(&pr, 1, 1);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[1][0], ==, (psn + 5) & 0xffffff);

    pair_release(&pr, 0);
    pair_release(&pr, 1);
    pair_expect_cqe(&pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn, 4000);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn, 0);
    img_move(b, 0x4000, a, 0x2000, 4000);
    pair_mig_done(&pr, q);
}

/*
 * The pair with a small send buffer on B's wire: a few frames fill it,
 * and B's responder then owes the rest of a READ's responses until the
 * test reads them.
 */
static void *pair_small_sndbuf_before(GString *cmd_line, void *arg)
{
    PairSockets *s = pair_before(cmd_line, arg);
    int v = 4096;

    g_assert_cmpint(setsockopt(s->qemu[1], SOL_SOCKET, SO_SNDBUF, &v,
                               sizeof(v)), ==, 0);
    return s;
}

/*
 * READ responses still owed.  X: B answered a READ, its four responses
 * wait at the switch and are lost there.  Y: B took a READ of 16 packets
 * but its wire filled up, so it still owes most responses when the state
 * is saved (the READ resource migrates with next < stop).  On the
 * destination B sends what it owes on its own, before any request asks
 * again (A's requests wait at the switch meanwhile), from where the
 * source stopped; then both READs complete with every byte.
 */
static void test_engine_pair_migrate_read_owed(void *obj, void *data,
                                               QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    GPollFD pfd = { .events = G_IO_IN };
    struct rs_sge sge;
    struct rs_cqe cqe;
    LoopQp x[2], y[2];
    GByteArray *req;
    uint32_t ypsn, k, i;
    bool x_first;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, x, 0, STD_ACCESS);
    pair_rc(&pr, y, 0, STD_ACCESS);
    peer_fill(b, 0, 4000, 0x31);
    peer_fill(b, 0x2000, 16384, 0x57);

    pair_log_reset(&pr);
    pr.hold[1] = true;
    sge = peer_sge(a, 0x1000, 4000);
    pair_post(&pr, 0, &x[0], RS_WR_RDMA_READ, 0xa1, &sge, 1, b->buf,
              b->key[0], 0);
    pair_wait_frames(&pr, 1, 4);
    PAIR_EXPECT_OPS(&pr, 1, OP_READ_RESP_FIRST, OP_READ_RESP_MIDDLE,
                    OP_READ_RESP_MIDDLE, OP_READ_RESP_LAST);

    /* Y's request reaches B; from now on nobody reads B's wire. */
    pr.hold[0] = true;
    sge = peer_sge(a, 0x3000, 16384);
    pair_post(&pr, 0, &y[0], RS_WR_RDMA_READ, 0xa2, &sge, 1,
              b->buf + 0x2000, b->key[0], 0);
    req = pair_take(&pr, 0);
    g_assert_cmphex(req->data[ROCE_BTH], ==, OP_READ_REQ);
    ypsn = ldl_be_p(req->data + ROCE_BTH + 8) & 0xffffff;
    pair_inject(&pr, 1, req->data, req->len);
    g_byte_array_unref(req);
    pfd.fd = pr.fd[1];
    g_assert_cmpint(g_poll(&pfd, 1, RS_QOS_TIMEOUT_US / 1000), ==, 1);
    /* B's responder ran to the full wire before QEMU answers this. */
    qtest_readl(qrs_qts(b->d), b->buf);

    pair_migrate(&pr);
    k = g_queue_get_length(&pr.held[1]) - 4;
    g_test_message("Y's responses on the wire when saved: %u of 16", k);
    g_assert_cmpuint(k, <, 16);
    pair_lose_held(&pr, 1);
    pair_wait_sent(&pr, 1, OP_READ_RESP_LAST, ypsn + 15);
    for (i = 0; i < pr.nops[1]; i++) {
        if (pr.op[1][i] != OP_ACK) {
            g_assert_cmpuint((pr.psn[1][i] - ypsn) & 0xffffff, >=, k);
        }
    }

    pair_log_reset(&pr);
    pair_release(&pr, 1);
    pair_release(&pr, 0);
    /* X and Y complete on different QPs, in either order. */
    pair_poll(&pr, 0, &cqe);
    x_first = cqe.wr_id == 0xa1;
    assert_cqe(&cqe, x_first ? 0xa1 : 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_READ,
               x_first ? x[0].qpn : y[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, x_first ? 4000 : 16384);
    pair_poll(&pr, 0, &cqe);
    assert_cqe(&cqe, x_first ? 0xa2 : 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_READ,
               x_first ? y[0].qpn : x[0].qpn);
    g_assert_cmpuint(cqe.byte_len, ==, x_first ? 16384 : 4000);
    img_move(a, 0x1000, b, 0, 4000);
    img_move(a, 0x3000, b, 0x2000, 16384);
    g_assert_cmpuint(qp_state(a->d, x[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, x[1].h), ==, RS_QPS_RTS);
    pair_mig_done(&pr, y);
}

/*
 * An RNR wait in progress: B had no receive WQE for A's SEND and sent an
 * RNR NAK with its min_rnr_timer (code 12, 0.64 ms of virtual time); A
 * waits, with a WRITE queued behind the SEND.  The receive is posted on
 * the destination.  The deadline was the source's virtual time and does
 * not migrate, so A's wait ends as the destination runs: A sends the
 * SEND again from its first packet and then the WRITE, without virtual
 * time passing.
 */
static void test_engine_pair_migrate_rnr(void *obj, void *data,
                                         QGuestAllocator *alloc)
{
    const uint32_t psn = pair_psn[0];
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_log_reset(&pr);
    sge = peer_sge(a, 0x100, 3000);
    pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa1, &sge, 1, 0, 0, 0);
    pair_wait_sent(&pr, 1, OP_ACK, psn);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_RNR | 12);
    sge = peer_sge(a, 0x2000, 500);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, &sge, 1,
              b->buf + 0x3000, b->key[0], 0);
    g_usleep(20 * 1000);
    PAIR_EXPECT_OPS(&pr, 0, OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    pair_cq_empty(&pr, 0);

    pair_migrate(&pr);
    g_assert_true(g_queue_is_empty(&pr.held[0]));
    g_assert_true(g_queue_is_empty(&pr.held[1]));
    sge = peer_sge(b, 0x5000, 3000);
    eng_post_recv(b->d, &q[1], 0xb1, &sge, 1);
    pair_wait_frames(&pr, 0, 5);
    PAIR_EXPECT_OPS(&pr, 0, OP_ACK, OP_SEND_FIRST, OP_SEND_MIDDLE,
                    OP_SEND_LAST, OP_WRITE_ONLY);
    g_assert_cmphex(pr.syn[0][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[0][1], ==, psn);
    pair_wait_frames(&pr, 1, 1);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[1][0], ==, psn);

    pair_release(&pr, 0);
    pair_release(&pr, 1);
    pair_expect_cqe(&pr, 1, 0xb1, RS_WC_SUCCESS, RS_WR_RECV, q[1].qpn, 3000);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_SEND, q[0].qpn, 0);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    img_move(b, 0x5000, a, 0x100, 3000);
    img_move(b, 0x3000, a, 0x2000, 500);
    pair_mig_done(&pr, q);
}

/*
 * A retransmission timer running: both packets of a WRITE were lost
 * before the switch and no virtual time passed, so A's local ACK timer
 * (4.3 s) and its tail loss probe (20 ms) are pending.  Their deadlines
 * are runtime state and start anew on the destination: A's resume
 * rewind sends the WRITE again at once; the switch loses that too, and
 * the tail loss probe 20 ms later; the retransmission on the local ACK
 * timeout, 4.3 s after the probe, gets through.
 */
static void test_engine_pair_migrate_retry_timer(void *obj, void *data,
                                                 QGuestAllocator *alloc)
{
    const uint32_t psn = pair_psn[0];
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    LoopQp q[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_log_reset(&pr);
    pr.drop[0] = 3;
    sge = peer_sge(a, 0x100, 2000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &sge, 1,
              b->buf + 0x1000, b->key[0], 0);
    pair_wait_frames(&pr, 0, 2);
    g_usleep(20 * 1000);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST);
    PAIR_EXPECT_NONE(&pr, 1);

    pair_migrate(&pr);
    pair_wait_frames(&pr, 0, 3);
    PAIR_EXPECT_OPS(&pr, 0, OP_ACK, OP_WRITE_FIRST, OP_WRITE_LAST);
    g_assert_cmphex(pr.psn[0][1], ==, psn);
    pair_wait_frames(&pr, 1, 1);
    PAIR_EXPECT_OPS(&pr, 1, OP_ACK);
    g_assert_cmphex(pr.syn[1][0], ==, AETH_RNR | 1);
    g_assert_cmphex(pr.psn[1][0], ==, psn);
    pair_forget(&pr, 0);
    pair_forget(&pr, 1);

    /* The tail loss probe, lost. */
    pair_log_reset(&pr);
    pr.drop[0] = 3;
    qtest_clock_step(qrs_qts(a->d), 30 * 1000 * 1000);
    pair_wait_frames(&pr, 0, 2);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST);
    g_assert_cmphex(pr.psn[0][0], ==, psn);
    qtest_clock_step(qrs_qts(a->d), 4000 * 1000 * 1000ll);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST);

    /* The local ACK timeout. */
    qtest_clock_step(qrs_qts(a->d), 500 * 1000 * 1000);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST, OP_WRITE_FIRST,
                    OP_WRITE_LAST);
    /* After a timeout the window is 2: one ACK, or one per packet. */
    pair_wait_sent(&pr, 1, OP_ACK, psn + 1);
    img_move(b, 0x1000, a, 0x100, 2000);
    pair_mig_done(&pr, q);
}

/*
 * A QP in SQD and one in ERR.  q: A's WRITE was sent and its ACK waits at
 * the switch when A's QP goes to SQD with notification; a second WRITE is
 * posted in SQD.  x: B's QP went to ERR with two receive WQEs, whose
 * flush completions were written before the switch.  On the destination
 * both keep their state; the held ACK completes the WRITE and raises SQ
 * Drained there, the second WRITE waits until SQD->RTS and then goes;
 * the ERR QP's old completions are polled and what is posted to it now
 * is flushed as before.
 */
static void test_engine_pair_migrate_sqd_err(void *obj, void *data,
                                             QGuestAllocator *alloc)
{
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    LoopQp q[2], x[2];

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    pair_rc(&pr, x, 0, STD_ACCESS);
    pair_log_reset(&pr);
    pr.hold[1] = true;
    sge = peer_sge(a, 0x100, 1000);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa1, &sge, 1,
              b->buf + 0x1000, b->key[0], 0);
    pair_wait_sent(&pr, 1, OP_ACK, pair_psn[0]);
    modify_state(a->d, &q[0], RS_QPS_RTS, RS_QPS_SQD,
                 RS_QP_ATTR_EN_SQD_ASYNC_NOTIFY, true);
    sge = peer_sge(a, 0x2000, 1500);
    pair_post(&pr, 0, &q[0], RS_WR_RDMA_WRITE, 0xa2, &sge, 1,
              b->buf + 0x3000, b->key[0], 0);
    sge = peer_sge(b, 0x5000, 100);
    eng_post_recv(b->d, &x[1], 0xc1, &sge, 1);
    eng_post_recv(b->d, &x[1], 0xc2, &sge, 1);
    modify_state(b->d, &x[1], RS_QPS_RTS, RS_QPS_ERR, 0, false);
    pair_cq_wait(&pr, 1, 2);
    expect_no_event(a->d);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_ONLY);

    pair_migrate(&pr);
    g_assert_cmpuint(qp_state(a->d, q[0].h), ==, RS_QPS_SQD);
    g_assert_cmpuint(qp_state(b->d, x[1].h), ==, RS_QPS_ERR);
    pair_expect_cqe(&pr, 1, 0xc1, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, x[1].qpn,
                    0);
    pair_expect_cqe(&pr, 1, 0xc2, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, x[1].qpn,
                    0);
    eng_post_recv(b->d, &x[1], 0xc3, &sge, 1);
    pair_expect_cqe(&pr, 1, 0xc3, RS_WC_WR_FLUSH_ERR, RS_WR_RECV, x[1].qpn,
                    0);
    pair_post(&pr, 1, &x[1], RS_WR_SEND, 0xc4, &sge, 1, 0, 0, 0);
    pair_expect_cqe(&pr, 1, 0xc4, RS_WC_WR_FLUSH_ERR, RS_WR_SEND, x[1].qpn,
                    0);

    pair_release(&pr, 1);
    pair_release(&pr, 0);
    pair_expect_cqe(&pr, 0, 0xa1, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    expect_event(a->d, RS_EV_QP_SQ_DRAINED, q[0].h);
    img_move(b, 0x1000, a, 0x100, 1000);
    peer_check(b);
    pair_log_reset(&pr);
    pair_cq_empty(&pr, 0);
    PAIR_EXPECT_NONE(&pr, 0);
    modify_state(a->d, &q[0], RS_QPS_SQD, RS_QPS_RTS, 0, false);
    pair_expect_cqe(&pr, 0, 0xa2, RS_WC_SUCCESS, RS_WR_RDMA_WRITE, q[0].qpn,
                    0);
    PAIR_EXPECT_OPS(&pr, 0, OP_WRITE_FIRST, OP_WRITE_LAST);
    img_move(b, 0x3000, a, 0x2000, 1500);
    expect_no_event(a->d);
    expect_no_event(b->d);
    g_assert_cmpuint(qp_state(a->d, x[0].h), ==, RS_QPS_RTS);
    g_assert_cmpuint(qp_state(b->d, x[1].h), ==, RS_QPS_ERR);
    pair_mig_done(&pr, q);
}

/*
 * Unpolled completions and an armed CQ: both sides' CQEs of two SENDs are
 * written before the switch and polled after it, in order.  B's CQ was
 * armed (next completion) with MSI-X vector 1 pointed at guest memory:
 * the arm migrates and does not fire by itself; the next CQE on the
 * destination interrupts, once.
 */
static void test_engine_pair_migrate_cq(void *obj, void *data,
                                        QGuestAllocator *alloc)
{
    const uint32_t msi_data = 0xc0ffee01;
    Pair pr;
    Peer *a = &pr.p[0], *b = &pr.p[1];
    struct rs_sge sge;
    LoopQp q[2];
    uint64_t msi;
    int i;

    pair_setup(&pr, obj, data, alloc);
    pair_rc(&pr, q, 0, STD_ACCESS);
    msi = qrs_alloc_zeroed(b->d, 64);
    qrs_msix_set_vector(b->d, RS_MSIX_COMP_VECTOR0 + 0, msi, msi_data, false);
    for (i = 0; i < 4; i++) {
        sge = peer_sge(b, 0x1000 * (i + 1), 1000);
        eng_post_recv(b->d, &q[1], 0xb0 + i, &sge, 1);
    }
    for (i = 0; i < 2; i++) {
        sge = peer_sge(a, 0x100 * i, 1000 - i);
        pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0 + i, &sge, 1, 0, 0, 0);
        img_move(b, 0x1000 * (i + 1), a, 0x100 * i, 1000 - i);
    }
    pair_cq_wait(&pr, 1, 2);
    pair_cq_wait(&pr, 0, 2);
    qrs_db_writel(b->d, 0, RS_DB_CQ_ARM, HINDEX(b->cq.h) | RS_DB_CQ_ARM_NEXT);

    pair_migrate(&pr);
    pair_release(&pr, 0);
    pair_release(&pr, 1);
    for (i = 0; i < 2; i++) {
        pair_expect_cqe(&pr, 1, 0xb0 + i, RS_WC_SUCCESS, RS_WR_RECV,
                        q[1].qpn, 1000 - i);
    }
    for (i = 0; i < 2; i++) {
        pair_expect_cqe(&pr, 0, 0xa0 + i, RS_WC_SUCCESS, RS_WR_SEND,
                        q[0].qpn, 0);
    }
    g_assert_cmphex(qtest_readl(pr.to, msi), ==, 0);

    for (i = 2; i < 4; i++) {
        sge = peer_sge(a, 0x100 * i, 1000 - i);
        pair_post(&pr, 0, &q[0], RS_WR_SEND, 0xa0 + i, &sge, 1, 0, 0, 0);
        pair_expect_cqe(&pr, 1, 0xb0 + i, RS_WC_SUCCESS, RS_WR_RECV,
                        q[1].qpn, 1000 - i);
        pair_expect_cqe(&pr, 0, 0xa0 + i, RS_WC_SUCCESS, RS_WR_SEND,
                        q[0].qpn, 0);
        g_assert_cmphex(qtest_readl(pr.to, msi), ==, i == 2 ? msi_data : 0);
        qtest_writel(pr.to, msi, 0);
        img_move(b, 0x1000 * (i + 1), a, 0x100 * i, 1000 - i);
    }
    pair_mig_done(&pr, q);
}

/* ------------------------------------------------------------------ */
/* Registration                                                        */
/* ------------------------------------------------------------------ */

static uint8_t qp_types[] = { RS_QPT_RC, RS_QPT_UC, RS_QPT_UD, RS_QPT_GSI };

static void register_rdma_session_test(void)
{
    QOSGraphTestOptions limits = { .before = limits_before };
    QOSGraphTestOptions lan = { .before = lan_before };
    QOSGraphTestOptions lan_wide = { .before = lan_wide_before };
    QOSGraphTestOptions lan_log = { .before = lan_log_before };
    QOSGraphTestOptions rel_window = { .before = rel_window_before };
    QOSGraphTestOptions rel_drop = { .before = rel_window_before,
                                     .arg = GUINT_TO_POINTER(7) };
    QOSGraphTestOptions rel_drop_wide = { .before = rel_drop_wide_before,
                                          .arg = GUINT_TO_POINTER(7) };
    QOSGraphTestOptions pair = { .before = pair_before };
    QOSGraphTestOptions pair_small_sndbuf = {
        .before = pair_small_sndbuf_before,
    };
    QOSGraphTestOptions trace_doorbell = { .before = trace_doorbell_before };
    QOSGraphTestOptions pair_small_msg = {
        .before = pair_before, .arg = (void *)",max-msg-size=8192",
    };
    QOSGraphTestOptions qp[ARRAY_SIZE(qp_types)];
    static const char *const qp_names[] = {
        "qp-rc", "qp-uc", "qp-ud", "qp-gsi",
    };
    int i;

    qos_add_test("probe", "rdma-session", test_probe, NULL);
    qos_add_test("registers", "rdma-session", test_registers, NULL);
    qos_add_test("admin-queue", "rdma-session", test_admin_queue, NULL);
    qos_add_test("msix", "rdma-session", test_msix, NULL);
    qos_add_test("query", "rdma-session", test_query, NULL);
    qos_add_test("link", "rdma-session", test_link, NULL);
    qos_add_test("pd", "rdma-session", test_pd, NULL);
    qos_add_test("cq", "rdma-session", test_cq, NULL);
    for (i = 0; i < ARRAY_SIZE(qp_types); i++) {
        qp[i] = (QOSGraphTestOptions) { .arg = &qp_types[i] };
        qos_add_test(qp_names[i], "rdma-session", test_qp, &qp[i]);
    }
    qos_add_test("mr", "rdma-session", test_mr, NULL);
    qos_add_test("ah", "rdma-session", test_ah, NULL);
    qos_add_test("session", "rdma-session", test_session, NULL);
    qos_add_test("gid", "rdma-session", test_gid, NULL);
    qos_add_test("reset", "rdma-session", test_reset, NULL);
    qos_add_test("doorbells", "rdma-session", test_doorbells, NULL);
    qos_add_test("bad-ring-config", "rdma-session", test_bad_ring_config,
                 NULL);
    qos_add_test("bad-input", "rdma-session", test_bad_input, NULL);
    qos_add_test("bad-qp-modify", "rdma-session", test_bad_qp_modify, NULL);
    qos_add_test("qp-transitions", "rdma-session", test_qp_transitions,
                 NULL);
    qos_add_test("dma-containment", "rdma-session", test_dma_containment,
                 NULL);
    qos_add_test("limits", "rdma-session", test_limits, &limits);
    qos_add_test("migrate", "rdma-session", test_migrate, NULL);
    qos_add_test("lan-tx", "rdma-session", test_lan_tx, &lan);
    qos_add_test("lan-tx-backpressure", "rdma-session",
                 test_lan_tx_backpressure, &lan);
    qos_add_test("lan-rx", "rdma-session", test_lan_rx, &lan);
    qos_add_test("lan-rx-filter", "rdma-session", test_lan_rx_filter, &lan);
    qos_add_test("lan-rx-backpressure", "rdma-session",
                 test_lan_rx_backpressure, &lan);
    qos_add_test("lan-bad-input", "rdma-session", test_lan_bad_input, &lan);
    qos_add_test("lan-link", "rdma-session", test_lan_link, &lan);
    qos_add_test("lan-migrate", "rdma-session", test_lan_migrate, &lan);
    qos_add_test("engine-loopback", "rdma-session", test_engine_loopback,
                 NULL);
    qos_add_test("engine-fast-reg", "rdma-session", test_engine_fast_reg,
                 NULL);
    qos_add_test("engine-local-op-budget", "rdma-session",
                 test_engine_local_op_budget, &trace_doorbell);
    qos_add_test("engine-remote-inv", "rdma-session",
                 test_engine_remote_inv, NULL);
    qos_add_test("engine-ud-av-addr", "rdma-session",
                 test_engine_ud_av_addr, NULL);
    qos_add_test("engine-ipv6", "rdma-session", test_engine_ipv6, NULL);
    qos_add_test("engine-fast-reg-migrate", "rdma-session",
                 test_engine_fast_reg_migrate, NULL);
    qos_add_test("group-round-robin", "rdma-session", test_group_round_robin,
                 &lan);
    qos_add_test("group-active-backup", "rdma-session",
                 test_group_active_backup, &lan);
    qos_add_test("engine-atomic", "rdma-session", test_engine_atomic, NULL);
    qos_add_test("engine-atomic-dup", "rdma-session", test_engine_atomic_dup,
                 &lan);
    qos_add_test("engine-uc", "rdma-session", test_engine_uc, NULL);
    qos_add_test("engine-uc-gap", "rdma-session", test_engine_uc_gap, &lan);
    qos_add_test("engine-flush", "rdma-session", test_engine_flush, NULL);
    qos_add_test("srq", "rdma-session", test_srq, NULL);
    qos_add_test("engine-srq", "rdma-session", test_engine_srq, NULL);
    qos_add_test("engine-srq-migrate", "rdma-session",
                 test_engine_srq_migrate, NULL);
    qos_add_test("engine-rc-window", "rdma-session", test_engine_rc_window,
                 &rel_window);
    qos_add_test("engine-rc-loss", "rdma-session", test_engine_rc_loss,
                 &rel_drop);
    qos_add_test("engine-rc-loss-wide", "rdma-session", test_engine_rc_loss,
                 &rel_drop_wide);
    qos_add_test("engine-rc-rnr", "rdma-session", test_engine_rc_rnr, NULL);
    qos_add_test("engine-rc-rnr-exceeded", "rdma-session",
                 test_engine_rc_rnr_exceeded, NULL);
    qos_add_test("engine-rc-retry-exceeded", "rdma-session",
                 test_engine_rc_retry_exceeded, NULL);
    qos_add_test("engine-rc-retry-backoff", "rdma-session",
                 test_engine_rc_retry_backoff, NULL);
    qos_add_test("engine-rc-retry-msix-reentry", "rdma-session",
                 test_engine_rc_retry_msix_reentry, NULL);
    qos_add_test("engine-rc-timer-after-idle", "rdma-session",
                 test_engine_rc_timer_after_idle, NULL);
    qos_add_test("engine-pair-rc", "rdma-session", test_engine_pair_rc,
                 &pair);
    qos_add_test("engine-pair-ud", "rdma-session", test_engine_pair_ud,
                 &pair);
    qos_add_test("engine-pair-protection", "rdma-session",
                 test_engine_pair_protection, &pair);
    qos_add_test("engine-pair-bad-frames", "rdma-session",
                 test_engine_pair_bad_frames, &pair);
    qos_add_test("engine-pair-loss", "rdma-session", test_engine_pair_loss,
                 &pair);
    qos_add_test("engine-pair-atomic", "rdma-session",
                 test_engine_pair_atomic, &pair);
    qos_add_test("engine-pair-uc", "rdma-session", test_engine_pair_uc,
                 &pair);
    qos_add_test("engine-pair-events", "rdma-session",
                 test_engine_pair_events, &pair);
    qos_add_test("engine-pair-migrate-unacked", "rdma-session",
                 test_engine_pair_migrate_unacked, &pair);
    qos_add_test("engine-pair-migrate-half-message", "rdma-session",
                 test_engine_pair_migrate_half_message, &pair);
    qos_add_test("engine-pair-migrate-read-owed", "rdma-session",
                 test_engine_pair_migrate_read_owed, &pair_small_sndbuf);
    qos_add_test("engine-pair-migrate-rnr", "rdma-session",
                 test_engine_pair_migrate_rnr, &pair);
    qos_add_test("engine-pair-migrate-retry-timer", "rdma-session",
                 test_engine_pair_migrate_retry_timer, &pair);
    qos_add_test("engine-pair-migrate-sqd-err", "rdma-session",
                 test_engine_pair_migrate_sqd_err, &pair);
    qos_add_test("engine-pair-migrate-cq", "rdma-session",
                 test_engine_pair_migrate_cq, &pair);
    qos_add_test("lan-announce", "rdma-session", test_lan_announce, &lan);
    qos_add_test("lan-roce-backpressure", "rdma-session",
                 test_lan_roce_backpressure, &lan_wide);
    qos_add_test("engine-pair-read-flood", "rdma-session",
                 test_engine_pair_read_flood, &pair);
    qos_add_test("engine-pair-sq-rewrite", "rdma-session",
                 test_engine_pair_sq_rewrite, &pair);
    qos_add_test("engine-pair-nak-storm", "rdma-session",
                 test_engine_pair_nak_storm, &pair);
    qos_add_test("engine-pair-read-during-rnr", "rdma-session",
                 test_engine_pair_read_during_rnr, &pair);
    qos_add_test("engine-pair-send-too-long", "rdma-session",
                 test_engine_pair_send_too_long, &pair_small_msg);
    qos_add_test("migrate-corrupt", "rdma-session", test_migrate_corrupt,
                 NULL);
    qos_add_test("migrate-twice", "rdma-session", test_migrate_twice, NULL);
    qos_add_test("lan-rx-missed", "rdma-session", test_lan_rx_missed, &lan);
    qos_add_test("lan-log-rate", "rdma-session", test_lan_log_rate,
                 &lan_log);
    qos_add_test("cq-full-max", "rdma-session", test_cq_full_max, NULL);
    qos_add_test("flr", "rdma-session", test_flr, NULL);
    qtest_add_func("rdma-session/bad-properties", test_bad_properties);
}

libqos_init(register_rdma_session_test);
