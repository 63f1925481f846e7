/*
 * rdma-session adapter: the LAN (Ethernet) path.
 *
 * One TX and one RX ring of struct rs_lan_desc.  The driver posts
 * descriptors and writes its free-running 16-bit producer index to
 * RS_DB_LAN_TX / RS_DB_LAN_RX of doorbell page 0; the device writes each
 * descriptor's status back with the phase bit of its lap and signals the
 * ring's MSI-X vector.
 *
 * TX runs in a bottom half, a bounded batch of frames per run, gathering
 * each frame into a buffer allocated once at realize.  When the backend
 * cannot take a frame it keeps it (one frame) and TX pauses until the
 * backend has sent it, so a stalled backend costs no memory and the guest
 * sees its ring stop.  RX is driven by the network layer.  RoCEv2 frames
 * for the engine need no descriptor.  While the engine has a GID, a frame
 * for the LAN ring that finds no descriptor is dropped and counted
 * (lan_rx_missed, as a NIC counts frames it had no buffer for), because
 * the layer would hold every later frame behind it, RoCE ones included,
 * until an RX doorbell that an interface that is down never rings.
 * Without a GID no frame can be the engine's, so the adapter is a plain
 * NIC with lossless backpressure: the frame is handed back and the layer
 * holds it and those after it (its queue is bounded: a backend with a
 * completion callback stops reading, the others drop past the queue
 * limit); the RX doorbell, or the first GID, flushes them.
 *
 * The core knows nothing about PCI or the NIC: the glue gives it a send
 * and a flush callback.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/iov.h"
#include "qemu/main-loop.h"
#include "qemu/error-report.h"
#include "net/eth.h"
#include "net/checksum.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "trace.h"

/* Frames per TX bottom-half run, so that a vCPU is never held for long. */
#define RS_LAN_TX_BATCH     64

#define RS_LAN_IDX_MASK     0xffffu

static const char *const rs_lan_name[] = { "TX", "RX" };

static uint32_t rs_lan_size(const RSLanQueue *q)
{
    return 1u << q->log_size;
}

/* Descriptors posted and not yet consumed. */
static uint32_t rs_lan_pending(const RSLanQueue *q)
{
    return (q->pi - q->ci) & RS_LAN_IDX_MASK;
}

static uint64_t rs_lan_desc_addr(const RSLanQueue *q, uint32_t index)
{
    return q->ring + (uint64_t)(index & (rs_lan_size(q) - 1)) *
                     sizeof(struct rs_lan_desc);
}

/* RS_LAN_S_PHASE is 1 on the first lap of the ring, 0 on the second... */
static uint8_t rs_lan_phase(const RSLanQueue *q, uint32_t index)
{
    return ((index >> q->log_size) & 1) ? 0 : RS_LAN_S_PHASE;
}

static void rs_lan_ring_lost(RSCore *c, int type)
{
    RS_GUEST_ERR(rdma_session_err_lan_ring, "%s ring at 0x%" PRIx64
                 " unreachable", rs_lan_name[type], c->lanq[type].ring);
}

static bool rs_lan_write_status(RSCore *c, const RSLanQueue *q,
                                uint32_t index, uint8_t status)
{
    return rs_dma_write(c, rs_lan_desc_addr(q, index) +
                        offsetof(struct rs_lan_desc, status),
                        &status, sizeof(status)) == RS_STATUS_OK;
}

/* ------------------------------------------------------------------ */
/* Admin commands                                                      */
/* ------------------------------------------------------------------ */

uint8_t rs_cmd_create_lan_queue(RSCore *c, const struct rs_admin_cmd *cmd,
                                struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_create_lan_queue *lc = &cmd->create_lan_queue;
    uint64_t ring = le64_to_cpu(lc->ring_addr);
    uint16_t vector = le16_to_cpu(lc->vector);
    RSLanQueue *q;
    uint8_t st;

    if (lc->type > RS_LAN_RXQ) {
        return RS_STATUS_BAD_PARAM;
    }
    st = rs_check_ring(c, ring, lc->log_size, RS_MAX_LAN_LOG,
                       sizeof(struct rs_lan_desc));
    if (st) {
        return st;
    }
    if (vector >= c->p.num_comp_vectors + 1) {
        return RS_STATUS_BAD_PARAM;
    }
    q = &c->lanq[lc->type];
    if (q->valid) {
        return RS_STATUS_EXISTS;
    }
    q->valid = true;
    q->log_size = lc->log_size;
    q->vector = vector;
    q->ring = ring;
    q->pi = q->ci = 0;
    trace_rdma_session_lan_queue(lc->type, true, ring, lc->log_size, vector);
    cqe->handle = cpu_to_le32(lc->type);
    return RS_STATUS_OK;
}

uint8_t rs_cmd_destroy_lan_queue(RSCore *c, const struct rs_admin_cmd *cmd,
                                 struct rs_admin_cqe *cqe)
{
    uint32_t type = le32_to_cpu(cmd->destroy.handle);

    if (type > RS_LAN_RXQ || !c->lanq[type].valid) {
        return RS_STATUS_BAD_HANDLE;
    }
    /* Descriptors still posted are abandoned, not completed. */
    memset(&c->lanq[type], 0, sizeof(c->lanq[type]));
    trace_rdma_session_lan_queue(type, false, 0, 0, 0);
    return RS_STATUS_OK;
}

uint8_t rs_cmd_set_lan_rx_mode(RSCore *c, const struct rs_admin_cmd *cmd,
                               struct rs_admin_cqe *cqe)
{
    uint32_t flags = le32_to_cpu(cmd->set_lan_rx_mode.flags);

    if (flags & ~RS_LAN_RX_ALL) {
        return RS_STATUS_BAD_PARAM;
    }
    c->lan_rx_mode = flags;
    trace_rdma_session_lan_rx_mode(flags);
    return RS_STATUS_OK;
}

/* ------------------------------------------------------------------ */
/* Transmit                                                            */
/* ------------------------------------------------------------------ */

/*
 * Gather the frame that starts at the TX consumer index into lan_tx_buf.
 * Returns the number of descriptors it spans, 0 when its last descriptor
 * is not posted yet, -1 when the ring cannot be read.  *err is set when
 * the frame must be dropped: its descriptors are completed with
 * RS_LAN_S_ERR.
 */
static int rs_lan_tx_gather(RSCore *c, RSLanQueue *q, uint32_t *len,
                            bool *err)
{
    uint32_t avail = rs_lan_pending(q);
    uint32_t n = 0, total = 0;
    const char *why = NULL;
    bool more = true;

    while (more) {
        struct rs_lan_desc d;
        uint64_t addr;
        uint16_t dlen;

        if (n == avail) {
            if (avail < rs_lan_size(q)) {
                return 0;
            }
            if (!why) {
                why = "frame fills the whole ring";
                RS_GUEST_ERR(rdma_session_err_lan_tx_desc, "TX descriptors "
                             "%u..%u: %s", q->ci,
                             (q->ci + n - 1) & RS_LAN_IDX_MASK, why);
            }
            break;
        }
        if (rs_dma_read(c, rs_lan_desc_addr(q, q->ci + n), &d, sizeof(d))) {
            return -1;
        }
        n++;
        more = d.flags & RS_LAN_F_MORE;
        if (why) {
            continue;       /* skip to the end of a bad frame */
        }
        addr = le64_to_cpu(d.addr);
        dlen = le16_to_cpu(d.len);
        if (d.flags & ~RS_LAN_F_MORE) {
            why = "unknown flags";
        } else if (dlen == 0) {
            why = "length 0";
        } else if (n > RS_LAN_MAX_FRAGS) {
            why = "more than RS_LAN_MAX_FRAGS descriptors";
        } else if (total + dlen > RS_LAN_MAX_FRAME) {
            why = "frame longer than RS_LAN_MAX_FRAME";
        } else if (rs_dma_read(c, addr, c->lan_tx_buf + total, dlen)) {
            why = "buffer not in guest RAM";
        } else {
            total += dlen;
        }
        if (why) {
            RS_GUEST_ERR(rdma_session_err_lan_tx_bad, "TX descriptor %u "
                         "(addr 0x%" PRIx64 " len %u flags 0x%x): %s",
                         (q->ci + n - 1) & RS_LAN_IDX_MASK, addr, dlen,
                         d.flags, why);
        }
    }
    *err = why != NULL;
    *len = total;
    return n;
}

static void rs_lan_tx(RSCore *c)
{
    RSLanQueue *q = &c->lanq[RS_LAN_TXQ];
    unsigned frames = 0;

    while ((c->status & R_RS_STATUS_READY_MASK) && q->valid &&
           rs_lan_pending(q) && !c->lan_tx_waiting) {
        uint32_t len = 0;
        bool err = false;
        int n, i;

        if (frames == RS_LAN_TX_BATCH) {
            qemu_bh_schedule(c->lan_bh);
            break;
        }
        n = rs_lan_tx_gather(c, q, &len, &err);
        if (n == 0) {
            break;
        }
        if (n < 0) {
            rs_lan_ring_lost(c, RS_LAN_TXQ);
            break;
        }
        if (!err) {
            struct iovec iov = { .iov_base = c->lan_tx_buf, .iov_len = len };

            c->lan_tx_waiting = !c->send(c->owner, &iov, 1, false);
        }
        trace_rdma_session_lan_tx(q->ci, n, len, err);
        for (i = 0; i < n; i++) {
            uint32_t index = q->ci + i;

            if (!rs_lan_write_status(c, q, index, rs_lan_phase(q, index) |
                                     (err ? RS_LAN_S_ERR : 0))) {
                rs_lan_ring_lost(c, RS_LAN_TXQ);
                break;
            }
        }
        q->ci = (q->ci + n) & RS_LAN_IDX_MASK;
        frames++;
    }
    if (frames) {
        c->notify(c->owner, q->vector);
    }
}

/* The backend has sent the frame it held: go on with the ring. */
void rs_lan_tx_resume(RSCore *c)
{
    c->lan_tx_waiting = false;
    trace_rdma_session_lan_tx_resume();
    qemu_bh_schedule(c->lan_bh);
}

static void rs_lan_bh(void *opaque)
{
    RSCore *c = opaque;

    rs_lan_tx(c);
    if (c->lan_flush_pending) {
        c->lan_flush_pending = false;
        c->flush(c->owner);
    }
}

/* ------------------------------------------------------------------ */
/* Receive                                                             */
/* ------------------------------------------------------------------ */

static bool rs_lan_rx_ready(RSCore *c)
{
    RSLanQueue *q = &c->lanq[RS_LAN_RXQ];

    return (c->status & R_RS_STATUS_READY_MASK) && q->valid &&
           rs_lan_pending(q) != 0;
}

/*
 * RoCEv2 frames for the engine need no RX descriptor, so while the port
 * is active every frame is taken; what happens to one for the LAN ring
 * that finds no descriptor is rs_lan_rx_hold()'s choice.
 */
bool rs_lan_can_receive(RSCore *c)
{
    return rs_port_active(c) || rs_lan_rx_ready(c);
}

/*
 * May a LAN frame without a descriptor be handed back to the network
 * layer, which then holds it and everything after it?  Only while no
 * frame behind it can be for the engine: the port is down or there is no
 * GID to receive RoCE traffic on.
 */
static bool rs_lan_rx_hold(RSCore *c)
{
    if (!rs_port_active(c)) {
        return true;
    }
    for (uint32_t i = 0; i < c->p.max_gids; i++) {
        if (c->gids[i].valid) {
            return false;
        }
    }
    return true;
}

/* A GID was added: frames held before must not wait for RoCE ones. */
void rs_lan_gid_added(RSCore *c)
{
    c->lan_flush_pending = true;
    qemu_bh_schedule(c->lan_bh);
}

static bool rs_lan_rx_accept(RSCore *c, const uint8_t *dst)
{
    if (c->lan_rx_mode & RS_LAN_RX_PROMISC) {
        return true;
    }
    if (is_broadcast_ether_addr(dst)) {
        return c->lan_rx_mode & RS_LAN_RX_BROADCAST;
    }
    if (is_multicast_ether_addr(dst)) {
        return c->lan_rx_mode & RS_LAN_RX_ALLMULTI;
    }
    return !memcmp(dst, c->mac.a, ETH_ALEN);
}

/* Write the frame to guest memory; the range was checked before. */
static uint8_t rs_lan_rx_copy(RSCore *c, uint64_t addr,
                              const struct iovec *iov, int iovcnt)
{
    uint8_t st = RS_STATUS_OK;
    int i;

    for (i = 0; i < iovcnt && st == RS_STATUS_OK; i++) {
        st = rs_dma_write(c, addr, iov[i].iov_base, iov[i].iov_len);
        addr += iov[i].iov_len;
    }
    return st;
}

ssize_t rs_lan_receive_iov(RSCore *c, const struct iovec *iov, int iovcnt)
{
    RSLanQueue *q = &c->lanq[RS_LAN_RXQ];
    size_t size = iov_size(iov, iovcnt);
    uint8_t dst[ETH_ALEN];
    struct rs_lan_desc d;
    uint64_t addr;
    uint16_t buflen, len = 0;
    uint8_t status;

    /* Frames the ring would not take are dropped before any holding. */
    if (size < ETH_HLEN) {
        trace_rdma_session_lan_rx_drop(size, "runt");
        return size;
    }
    iov_to_buf(iov, iovcnt, 0, dst, sizeof(dst));
    if (!rs_lan_rx_accept(c, dst)) {
        trace_rdma_session_lan_rx_drop(size, "filtered");
        return size;
    }
    if (!rs_lan_rx_ready(c)) {
        if (rs_lan_rx_hold(c)) {
            return 0;       /* the network layer holds it */
        }
        c->lan_rx_missed++;
        trace_rdma_session_lan_rx_drop(size, "no descriptor");
        return size;
    }
    if (rs_dma_read(c, rs_lan_desc_addr(q, q->ci), &d, sizeof(d))) {
        rs_lan_ring_lost(c, RS_LAN_RXQ);
        trace_rdma_session_lan_rx_drop(size, "ring unreachable");
        return size;
    }
    addr = le64_to_cpu(d.addr);
    buflen = le16_to_cpu(d.len);
    status = rs_lan_phase(q, q->ci);
    if (size > buflen) {
        trace_rdma_session_lan_rx_drop(size, "larger than the buffer");
        status |= RS_LAN_S_ERR;
    } else if (rs_dma_check(c, addr, size, true) ||
               rs_lan_rx_copy(c, addr, iov, iovcnt)) {
        RS_GUEST_ERR(rdma_session_err_lan_rx_buf, "RX descriptor %u: buffer "
                     "0x%" PRIx64 " len %u not in guest RAM", q->ci, addr,
                     buflen);
        status |= RS_LAN_S_ERR;
    } else {
        len = size;
    }
    /* Frame first, then its length, then the status that hands it over. */
    len = cpu_to_le16(len);
    if (rs_dma_write(c, rs_lan_desc_addr(q, q->ci) +
                     offsetof(struct rs_lan_desc, len), &len, sizeof(len)) ||
        !rs_lan_write_status(c, q, q->ci, status)) {
        rs_lan_ring_lost(c, RS_LAN_RXQ);
        return size;
    }
    trace_rdma_session_lan_rx(q->ci, size, status);
    q->ci = (q->ci + 1) & RS_LAN_IDX_MASK;
    c->notify(c->owner, q->vector);
    return size;
}

/* ------------------------------------------------------------------ */
/* Doorbells                                                           */
/* ------------------------------------------------------------------ */

static void rs_lan_db_write(RSCore *c, uint32_t page, uint32_t reg,
                            uint32_t val)
{
    int type = reg == RS_DB_LAN_TX ? RS_LAN_TXQ : RS_LAN_RXQ;
    RSLanQueue *q = &c->lanq[type];

    if (page != 0) {
        RS_GUEST_ERR(rdma_session_err_lan_db_page, "%s doorbell 0x%x on "
                     "page %u: only page 0 rings the LAN rings",
                     rs_lan_name[type], val, page);
        return;
    }
    if (val & ~RS_LAN_IDX_MASK) {
        RS_GUEST_ERR(rdma_session_err_lan_db_value, "%s doorbell 0x%x: "
                     "bits 16-31 are reserved", rs_lan_name[type], val);
        return;
    }
    if (!q->valid) {
        RS_GUEST_ERR(rdma_session_err_lan_db_no_queue, "%s doorbell 0x%x "
                     "without a %s queue", rs_lan_name[type], val,
                     rs_lan_name[type]);
        return;
    }
    if (((val - q->ci) & RS_LAN_IDX_MASK) > rs_lan_size(q)) {
        RS_GUEST_ERR(rdma_session_err_lan_db_range, "%s producer index %u "
                     "more than the ring ahead of the consumer %u",
                     rs_lan_name[type], val, q->ci);
        return;
    }
    q->pi = val;
    trace_rdma_session_lan_db(type, val, q->ci);
    if (type == RS_LAN_TXQ) {
        qemu_bh_schedule(c->lan_bh);
    } else {
        c->flush(c->owner);
    }
}

/* ------------------------------------------------------------------ */
/* Life cycle and migration                                            */
/* ------------------------------------------------------------------ */

static bool rs_lan_realize(RSCore *c, Error **errp)
{
    c->lan_bh = qemu_bh_new_guarded(rs_lan_bh, c, c->guard);
    c->lan_db_write = rs_lan_db_write;
    c->lan_tx_buf = g_malloc(RS_LAN_MAX_FRAME);
    return true;
}

static void rs_lan_unrealize(RSCore *c)
{
    qemu_bh_delete(c->lan_bh);
    g_free(c->lan_tx_buf);
}

static void rs_lan_reset(RSCore *c)
{
    qemu_bh_cancel(c->lan_bh);
    memset(c->lanq, 0, sizeof(c->lanq));
    c->lan_rx_mode = RS_LAN_RX_BROADCAST;
    c->lan_flush_pending = false;
    /* A frame the backend still holds is sent; its callback is harmless. */
    c->lan_tx_waiting = false;
}

static bool rs_lan_state_valid(RSCore *c)
{
    int i;

    if (c->lan_rx_mode & ~RS_LAN_RX_ALL) {
        return false;
    }
    for (i = 0; i < ARRAY_SIZE(c->lanq); i++) {
        RSLanQueue *q = &c->lanq[i];

        if (!q->valid) {
            continue;
        }
        if (q->log_size < 1 || q->log_size > RS_MAX_LAN_LOG ||
            q->vector >= c->p.num_comp_vectors + 1 || q->ring == 0 ||
            (q->ring & (RS_RING_ALIGN - 1)) ||
            q->pi > RS_LAN_IDX_MASK || q->ci > RS_LAN_IDX_MASK ||
            rs_lan_pending(q) > rs_lan_size(q)) {
            return false;
        }
    }
    return true;
}

static void rs_lan_post_load(RSCore *c)
{
    /* Finish posted TX work; let frames held meanwhile in. */
    c->lan_flush_pending = true;
    qemu_bh_schedule(c->lan_bh);
}

/* ------------------------------------------------------------------ */
/* Announcements                                                       */
/* ------------------------------------------------------------------ */

/*
 * The frame that tells the network where GID gid now is (QEMU's
 * announce-self, after a migration): a gratuitous ARP for an IPv4 GID, an
 * unsolicited neighbour advertisement (override set) for an IPv6 one, so
 * that peers and switches send its RoCE traffic to this port.  Returns
 * the frame's length in buf (RS_ANNOUNCE_MAX bytes), 0 for no frame.
 */
#define RS_IPPROTO_ICMPV6   58

/* A GID on a VLAN announces itself on it: the 802.1Q tag put in. */
static size_t rs_lan_announce_tag(RSCore *c, unsigned gid, uint8_t *buf,
                                  size_t len)
{
    uint32_t vlan = c->gids[gid].vlan;

    if (!vlan) {
        return len;
    }
    memmove(buf + 16, buf + 12, len - 12);
    stw_be_p(buf + 12, ETH_P_VLAN);
    stw_be_p(buf + 14, vlan & 0xfff);
    return len + 4;
}

size_t rs_lan_announce_frame(RSCore *c, unsigned gid, uint8_t *buf)
{
    static const uint8_t all_nodes[16] = {
        0xff, 0x02, [15] = 0x01,
    };
    const uint8_t *g;
    uint32_t ip, sum;
    uint8_t *na;

    if (gid >= c->p.max_gids || !c->gids[gid].valid) {
        return 0;
    }
    g = c->gids[gid].gid;
    memset(buf, 0, RS_ANNOUNCE_MAX);
    memcpy(buf + 6, c->mac.a, ETH_ALEN);
    if (rs_gid_to_ip4(g, &ip)) {
        memset(buf, 0xff, ETH_ALEN);
        stw_be_p(buf + 12, ETH_P_ARP);
        stw_be_p(buf + 14, 1);                  /* Ethernet */
        stw_be_p(buf + 16, ETH_P_IP);
        buf[18] = ETH_ALEN;
        buf[19] = 4;
        stw_be_p(buf + 20, 1);                  /* request */
        memcpy(buf + 22, c->mac.a, ETH_ALEN);
        stl_be_p(buf + 28, ip);                 /* sender = target */
        stl_be_p(buf + 38, ip);
        return rs_lan_announce_tag(c, gid, buf, 60);
    }
    if (g[0] == 0xff) {
        return 0;                               /* not a unicast address */
    }
    /* Ethernet, IPv6 to ff02::1, ICMPv6 NA for g with its MAC. */
    buf[0] = buf[1] = 0x33;
    buf[5] = 0x01;
    stw_be_p(buf + 12, ETH_P_IPV6);
    stl_be_p(buf + 14, 0x60000000);
    stw_be_p(buf + 18, 32);                     /* payload length */
    buf[20] = RS_IPPROTO_ICMPV6;
    buf[21] = 255;                              /* hop limit */
    memcpy(buf + 22, g, 16);
    memcpy(buf + 38, all_nodes, 16);
    na = buf + 54;
    na[0] = 136;                                /* neighbour advertisement */
    stl_be_p(na + 4, 0x20000000);               /* override */
    memcpy(na + 8, g, 16);
    na[24] = 2;                                 /* target link-layer address */
    na[25] = 1;
    memcpy(na + 26, c->mac.a, ETH_ALEN);
    /* Checksum over the pseudo-header (addresses, length, next header). */
    sum = net_checksum_add(32, buf + 22);
    sum += 32 + RS_IPPROTO_ICMPV6;
    sum += net_checksum_add(32, na);
    stw_be_p(na + 2, net_checksum_finish(sum));
    return rs_lan_announce_tag(c, gid, buf, 54 + 32);
}

/* ------------------------------------------------------------------ */
/* Migration                                                          */
/* ------------------------------------------------------------------ */

const VMStateDescription vmstate_rs_lan_queue = {
    .name = "rdma-session/lan-queue",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSLanQueue),
        VMSTATE_UINT8(log_size, RSLanQueue),
        VMSTATE_UINT16(vector, RSLanQueue),
        VMSTATE_UINT64(ring, RSLanQueue),
        VMSTATE_UINT32(pi, RSLanQueue),
        VMSTATE_UINT32(ci, RSLanQueue),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * The guest read the MAC when it probed the device, and its GIDs' peers
 * know it: a destination configured with another MAC fails the migration.
 */
static int rs_mac_pre_save(void *opaque)
{
    RSCore *c = opaque;

    memcpy(c->mig_mac, c->mac.a, sizeof(c->mig_mac));
    return 0;
}

static int rs_mac_post_load(void *opaque, int version_id)
{
    RSCore *c = opaque;

    if (memcmp(c->mig_mac, c->mac.a, sizeof(c->mig_mac))) {
        error_report("rdma-session: mac " MAC_FMT " on the destination, "
                     MAC_FMT " on the source: the properties must match",
                     MAC_ARG(c->mac.a), MAC_ARG(c->mig_mac));
        return -EINVAL;
    }
    return 0;
}

static bool rs_mac_needed(void *opaque)
{
    return true;
}

const VMStateDescription vmstate_rs_mac = {
    .name = "rdma-session/core/mac",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_mac_needed,
    .pre_save = rs_mac_pre_save,
    .post_load = rs_mac_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8_ARRAY(mig_mac, RSCore, 6),
        VMSTATE_END_OF_LIST()
    },
};

const RSFeature rs_feature_lan = {
    .name = "lan",
    .realize = rs_lan_realize,
    .unrealize = rs_lan_unrealize,
    .reset = rs_lan_reset,
    .validate = rs_lan_state_valid,
    .post_load = rs_lan_post_load,
};
