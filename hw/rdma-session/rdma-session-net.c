/*
 * rdma-session adapter: the RoCE network layer (rxe_net.c's role).
 *
 * Transmit: every RoCE frame the engine builds goes out through
 * rs_roce_xmit(): to our own GIDs by loopback, a copy to our own QPs in a
 * multicast group, into a bundle to an adapter peer (rdma-session-bundle.c)
 * or on the link as its state allows (held for a stopped VM, dropped when
 * the backend holds too many), with the backend's flow control.
 *
 * Receive: the NIC's receive path (rdma-session-pci.c) hands over every
 * IPv4 or IPv6 UDP frame for port 4791 that is addressed to one of our
 * GIDs or to a multicast group a QP is attached to (rs_resp_divert,
 * rdma-session-mcast.c), before the LAN rings see it; a bundle is unpacked
 * first.  rs_roce_input() parses a frame and sends it to its QP: requests
 * to the responder, ACKs and READ responses to the completer, multicast to
 * each attached QP (rs_mcast_input), DC connects to the DCT.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/iov.h"
#include "qemu/main-loop.h"
#include "qemu/bswap.h"
#include "net/eth.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "rdma-session-fabric.h"
#include "trace.h"

/* RoCE frames (ACKs once data has stopped) the backend may hold. */
#define RS_TX_HELD_MAX  32

/*
 * x-drop-tx=N, fault injection for tests: lose one frame in N on average,
 * chosen by a fixed pseudo-random sequence (xorshift32).  Every Nth frame
 * exactly would not do: go-back-N falls into cycles of a multiple of N
 * frames in which the same retransmission is lost every time.
 */
static bool rs_drop_tx(RSCore *c)
{
    uint32_t x = c->tx_rng ? c->tx_rng : 0x2545f491u;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c->tx_rng = x;
    c->tx_count++;
    return x % c->p.drop_tx == 0;
}

/*
 * Put one frame (a RoCE packet or a bundle of them) on the link, as the
 * link's state allows: held for a stopped VM, dropped when the backend
 * holds too many.  vlan (RS_VLAN_TAGGED | TCI): the 802.1Q tag goes in
 * after the MAC addresses, without a copy of the frame.
 */
void rs_roce_send(RSCore *c, uint8_t *frame, size_t len, uint8_t op,
                  uint32_t vlan)
{
    uint8_t tag[RS_VLAN_HLEN];
    struct iovec iov[3] = {
        { .iov_base = frame, .iov_len = len },
    };
    int iovcnt = 1;

    if (!c->link_up) {
        return;
    }
    if (vlan && len > 12) {
        stw_be_p(tag, RS_VLAN_TPID);
        stw_be_p(tag + 2, RS_VLAN_TCI(vlan));
        iov[0].iov_len = 12;
        iov[1] = (struct iovec) { .iov_base = tag, .iov_len = sizeof(tag) };
        iov[2] = (struct iovec) { .iov_base = frame + 12,
                                  .iov_len = len - 12 };
        iovcnt = 3;
    }
    if (c->holding) {
        /* the VM is stopped: the network layer would keep the frame */
        if (!c->send_stopped(c->owner, iov, iovcnt)) {
            trace_rdma_session_roce_tx_drop(op, c->tx_count);
        }
        return;
    }
    if (c->roce_tx_held >= RS_TX_HELD_MAX) {
        trace_rdma_session_roce_tx_busy(op, c->roce_tx_held);
        return;
    }
    if (!c->send(c->owner, iov, iovcnt, true)) {
        c->roce_tx_held++;
    }
}

/*
 * A RoCE frame pkt was built into (untagged; pkt->vlan says its tag):
 * loopback to our own GIDs, a bundle to an adapter peer (untagged frames
 * only) or the link.
 */
void rs_roce_xmit(RSCore *c, uint8_t *frame, size_t len, const RSPkt *pkt)
{
    uint8_t dgid[16];
    bool roce = rs_wire_is_roce(frame, len, dgid);
    uint8_t op = frame[lduw_be_p(frame + 12) == ETH_P_IPV6 ?
                       RS_BTH_OFF6 : RS_BTH_OFF];

    trace_rdma_session_roce_tx(op, len, pkt->dip);
    c->stats.tx_packets++;
    c->stats.tx_bytes += len + (pkt->vlan ? RS_VLAN_HLEN : 0);
    if (c->p.drop_tx && rs_drop_tx(c)) {
        trace_rdma_session_roce_tx_drop(op, c->tx_count);
        if (c->fabric) {
            rs_fabric_ref_drop(c);
        }
        return;
    }
    if (roce && rs_gid_find(c, dgid) >= 0) {
        if (!c->rx_frame) {
            /* A frame of ours: its responses get a budget of their own. */
            c->rx_resp_budget = RS_RESP_BUDGET;
        }
        rs_roce_input_vlan(c, frame, len, pkt->vlan);       /* loopback */
        return;
    }
    if (roce && rs_gid_is_mcast(dgid) && rs_mcast_find(c, dgid) >= 0) {
        /* Our own QPs in the group get a copy, as a switch would send. */
        rs_roce_input_vlan(c, frame, len, pkt->vlan);
    }
    if (c->fabric && rs_fabric_xmit(c, frame, len, pkt)) {
        return;                 /* over the local fabric's channel */
    }
    if (pkt->vlan) {
        rs_bundle_flush(c);     /* what went before goes first */
    } else if (roce && rs_bundle_add(c, frame, len)) {
        return;                 /* in the bundle to this frame's peer */
    }
    rs_roce_send(c, frame, len, op, pkt->vlan);
}

/* The backend holds one of our RoCE frames: produce no more data. */
bool rs_roce_tx_busy(RSCore *c)
{
    return c->roce_tx_held != 0;
}

/* The backend has sent a RoCE frame it held. */
void rs_engine_tx_resume(RSCore *c)
{
    if (c->roce_tx_held) {
        c->roce_tx_held--;
    }
    trace_rdma_session_roce_tx_resume(c->roce_tx_held);
    if (!c->roce_tx_held) {
        rs_req_kick(c);
        if (c->resp_bh) {
            qemu_bh_schedule(c->resp_bh);
        }
    }
}

/* The index of the populated GID equal to gid, -1 if none. */
int rs_gid_find(RSCore *c, const uint8_t *gid)
{
    uint32_t i;

    for (i = 0; i < c->p.max_gids; i++) {
        if (c->gids[i].valid && !memcmp(c->gids[i].gid, gid, 16)) {
            return i;
        }
    }
    return -1;
}

/* Whether GID g is on the VLAN of a frame's tag vlan (0: untagged). */
static bool rs_gid_on_vlan(const RSGid *g, uint32_t vlan)
{
    return vlan ? g->vlan && RS_VLAN_VID(g->vlan) == RS_VLAN_VID(vlan) :
           !g->vlan;
}

/*
 * The index of the populated GID equal to gid on the VLAN of tag vlan,
 * -1 if none; with gid NULL, any GID on it.
 */
static int rs_gid_find_vlan(RSCore *c, const uint8_t *gid, uint32_t vlan)
{
    uint32_t i;

    for (i = 0; i < c->p.max_gids; i++) {
        if (c->gids[i].valid && rs_gid_on_vlan(&c->gids[i], vlan) &&
            (!gid || !memcmp(c->gids[i].gid, gid, 16))) {
            return i;
        }
    }
    return -1;
}

/*
 * The frame of rs_resp_divert, to one of our GIDs or groups; hdr its
 * first bytes as the engine parses them (the 802.1Q tag taken out of a
 * tagged one, vlan != 0).  Bundles are never tagged.
 */
static void rs_resp_frame(RSCore *c, const struct iovec *iov, int iovcnt,
                          const uint8_t *hdr, size_t hdrlen, uint32_t vlan)
{
    size_t size = iov_size(iov, iovcnt) - (vlan ? RS_VLAN_HLEN : 0);

    if (!vlan && rs_bundle_divert(c, iov, iovcnt, hdr, hdrlen, size)) {
        return;                 /* a bundle, or its negotiation */
    }
    if (size > RS_WIRE_MAX_FRAME) {
        trace_rdma_session_roce_drop(size, "larger than the path MTU allows");
        return;
    }
    if (vlan) {
        /* One bounded copy, without the tag. */
        memcpy(c->rx_buf, hdr, 12);
        iov_to_buf(iov, iovcnt, 12 + RS_VLAN_HLEN, c->rx_buf + 12, size - 12);
        rs_roce_input_vlan(c, c->rx_buf, size, vlan);
    } else if (iovcnt == 1) {
        /* The usual case: the backend's own buffer, without a copy. */
        rs_roce_input(c, iov[0].iov_base, size);
    } else {
        iov_to_buf(iov, iovcnt, 0, c->rx_buf, size);
        rs_roce_input(c, c->rx_buf, size);
    }
    rs_bundle_flush(c);         /* its responses (READ, NAK) go now */
}

/*
 * A frame from the network: a RoCE frame to one of our addresses or
 * groups, untagged or 802.1Q-tagged (ABI 1.9), is the engine's; others,
 * a truncated tag or a second tag included, stay the LAN's.
 */
bool rs_resp_divert(RSCore *c, const struct iovec *iov, int iovcnt)
{
    uint8_t hdr[RS_BTH_OFF6 + RS_VLAN_HLEN], dgid[16];
    size_t n = iov_to_buf(iov, iovcnt, 0, hdr, sizeof(hdr));
    uint32_t vlan = 0;

    if (n >= RS_ETH_HLEN + RS_VLAN_HLEN &&
        lduw_be_p(hdr + 12) == RS_VLAN_TPID) {
        vlan = RS_VLAN_TAGGED | lduw_be_p(hdr + 14);
        n -= RS_VLAN_HLEN;
        memmove(hdr + 12, hdr + 12 + RS_VLAN_HLEN, n - 12);
    }
    n = MIN(n, RS_BTH_OFF6);
    if (!rs_wire_is_roce(hdr, n, dgid) ||
        (rs_gid_find(c, dgid) < 0 &&
         (!rs_gid_is_mcast(dgid) || rs_mcast_find(c, dgid) < 0))) {
        return false;
    }
    /*
     * The work one received frame causes is bounded: its READ and atomic
     * responses share one budget, a bundle's packets together, and it
     * makes at most one bundle HELLO.
     */
    c->rx_frame = true;
    c->rx_frame_seq++;
    c->rx_resp_budget = RS_RESP_BUDGET;
    if (!vlan && lduw_be_p(hdr + 12) == ETH_P_IP) {
        rs_bundle_heard(c, ldl_be_p(hdr + RS_L3_OFF + 12));
    }
    rs_resp_frame(c, iov, iovcnt, hdr, n, vlan);
    c->rx_frame = false;
    return true;
}

/*
 * The GID whose key tables the receive buffers resolve in: the port's
 * first address of the packet's IP version (the one a unicast packet
 * from the same sender would arrive on).
 */
static int rs_mcast_local_gid(RSCore *c, bool v6)
{
    uint32_t i, ip;

    for (i = 0; i < c->p.max_gids; i++) {
        if (c->gids[i].valid && rs_gid_to_ip4(c->gids[i].gid, &ip) == !v6) {
            return i;
        }
    }
    return -1;
}

/*
 * A UD packet to a multicast group (rdma-session-mcast.c's table): a
 * copy to each attached QP.
 */
static void rs_mcast_input(RSCore *c, const RSPkt *pkt)
{
    const RSMcastGrp *g;
    uint32_t i, n = 0;
    int idx, gid;

    if (!(rs_opcode[pkt->opcode].qpt_mask & (1u << RS_QPT_UD))) {
        trace_rdma_session_mcast_drop("not a UD opcode");
        return;
    }
    idx = rs_mcast_find(c, pkt->dgid);
    if (idx < 0) {
        trace_rdma_session_mcast_drop("no QP attached to the group");
        return;
    }
    gid = rs_mcast_local_gid(c, pkt->v6);
    if (gid < 0) {
        trace_rdma_session_mcast_drop("no GID of the packet's IP version");
        return;
    }
    g = &c->mcast[idx];
    for (i = 0; i < g->nqp && i < c->p.max_mcast_qp_attach; i++) {
        RSQp *qp = &c->qps[g->qp[i]];

        if (qp->valid && qp->type == RS_QPT_UD) {
            rs_resp_ud(c, g->qp[i], qp, gid, pkt);
            n++;
        }
    }
    trace_rdma_session_mcast_rx(idx, n);
}

/*
 * A connected QP talks only to its peer: the packet must come from the
 * address the QP's AV, or a session of its group, sends to, and arrive on
 * the GID that one sends from.
 */
bool rs_qp_from_peer(RSCore *c, const RSQp *qp, int gid, const RSPkt *pkt)
{
    const RSSessionGroup *g;
    uint32_t i;

    if (!qp->group) {
        return qp->has_av && qp->av.gid_index == gid &&
               !memcmp(qp->av.dgid, pkt->sgid, sizeof(pkt->sgid));
    }
    g = &c->groups[qp->group];
    for (i = 0; g->valid && i < MIN(g->nsessions, RS_MAX_GROUP_SESSIONS);
         i++) {
        const RSSession *s = &c->sessions[g->session[i]];

        if (g->session[i] && g->session[i] < c->p.max_sessions &&
            s->valid && s->gid_index == gid &&
            !memcmp(s->dst_ip, pkt->sgid, sizeof(pkt->sgid))) {
            return true;
        }
    }
    return false;
}

void rs_roce_input(RSCore *c, const uint8_t *frame, size_t len)
{
    rs_roce_input_vlan(c, frame, len, 0);
}

void rs_roce_input_vlan(RSCore *c, const uint8_t *frame, size_t len,
                        uint32_t vlan)
{
    const char *why = NULL;
    RSPkt pkt;

    if (!rs_port_active(c)) {
        trace_rdma_session_roce_drop(len, "port not active");
        return;
    }
    c->stats.rx_packets++;
    c->stats.rx_bytes += len;
    if (!rs_wire_parse(frame, len, &pkt, &why)) {
        if (why == rs_wire_bad_icrc) {
            c->stats.icrc_drops++;
        }
        trace_rdma_session_roce_drop(len, why);
        return;
    }
    if (pkt.icrc_rxe_flush && !c->p.rxe_flush_icrc) {
        trace_rdma_session_roce_drop(len, "FLUSH with soft-RoCE's ICRC");
        return;
    }
    rs_roce_dispatch(c, &pkt, len, vlan);
}

/*
 * A parsed packet (from the wire, loopback or the local fabric) to its
 * QP: requests to the responder, responses to the completer.
 */
void rs_roce_dispatch(RSCore *c, RSPkt *pkt_, size_t len, uint32_t vlan)
{
    RSPkt pkt = *pkt_;
    uint32_t qpn;
    RSQp *qp;
    int gid;

    pkt.vlan = vlan;
    gid = rs_gid_find_vlan(c, pkt.dgid, vlan);
    qpn = pkt.dqpn;
    trace_rdma_session_roce_rx(rs_opcode[pkt.opcode].name, qpn, pkt.psn,
                               pkt.paylen);
    if (gid < 0 && (rs_gid_find(c, pkt.dgid) >= 0 ||
                    (rs_gid_is_mcast(pkt.dgid) &&
                     rs_gid_find_vlan(c, NULL, vlan) < 0))) {
        /* Our address, or a group, but not on the frame's VLAN. */
        c->stats.vlan_rx_dropped++;
        trace_rdma_session_vlan_drop(RS_VLAN_VID(vlan), !!vlan,
                                     "no GID of the address on the VLAN");
        return;
    }
    if (qpn == RS_MCAST_QPN && rs_gid_is_mcast(pkt.dgid)) {
        rs_mcast_input(c, &pkt);
        return;
    }
    if (gid >= 0 && (rs_opcode[pkt.opcode].flags & RS_OPF_DC)) {
        rs_dc_input(c, gid, &pkt);
        return;
    }
    if (rs_opcode[pkt.opcode].flags & RS_OPF_CNP) {
        rs_ecn_cnp_input(c, gid, &pkt);
        return;
    }
    if (gid < 0 || qpn == 0 || qpn >= c->p.max_qps || !c->qps[qpn].valid) {
        trace_rdma_session_roce_drop(len, "no such GID or QP");
        return;
    }
    qp = &c->qps[qpn];
    if (!(rs_opcode[pkt.opcode].qpt_mask & (1u << qp->type)) ||
        (qp->type == RS_QPT_DCI &&
         !(rs_opcode[pkt.opcode].flags & RS_OPF_RESP))) {
        trace_rdma_session_roce_drop(len, "opcode not for this QP type");
        return;
    }
    if (qp->type != RS_QPT_UD && qp->type != RS_QPT_GSI &&
        !rs_qp_from_peer(c, qp, gid, &pkt)) {
        trace_rdma_session_roce_drop(len, "not from the QP's peer");
        return;
    }
    rs_dc_activity(c, qp);
    if (!(rs_opcode[pkt.opcode].flags & RS_OPF_RESP)) {
        qp->path.resp_sport = pkt.sport;     /* what its responses mirror */
    }
    rs_ecn_received(c, qpn, qp, gid, &pkt);
    if (qp->state == RS_QPS_RTR && !qp->comm_est &&
        (rs_qpt_rc_responder(qp->type) || qp->type == RS_QPT_UC)) {
        /* Communication Established: the first packet in RTR. */
        qp->comm_est = true;
        rs_qp_event(c, qpn, RS_EV_QP_COMM_EST);
    }
    if (rs_opcode[pkt.opcode].flags & RS_OPF_RESP) {
        rs_comp_receive(c, qpn, &pkt);
    } else {
        rs_resp_receive(c, qpn, qp, gid, &pkt);
    }
}

/*
 * A packet's payload into memory key mr at va: flat, or piece by piece
 * from a local fabric peer's RAM (the one copy of a frame by reference).
 */
uint8_t rs_pkt_to_mr(RSCore *c, const RSMr *mr, uint64_t va,
                     const RSPkt *pkt)
{
    unsigned i;
    uint8_t st;

    if (!pkt->payiovcnt) {
        return rs_mr_rw(c, mr, va, (void *)pkt->payload, pkt->paylen, true);
    }
    for (i = 0; i < pkt->payiovcnt; i++) {
        st = rs_mr_rw(c, mr, va, pkt->payiov[i].iov_base,
                      pkt->payiov[i].iov_len, true);
        if (st) {
            return st;
        }
        va += pkt->payiov[i].iov_len;
    }
    return RS_STATUS_OK;
}

/* The same into SGEs from offset off (SEND, READ responses). */
uint8_t rs_pkt_to_sges(RSCore *c, const RSQp *qp, uint32_t gid_index,
                       const struct rs_sge *sge, unsigned n, uint64_t off,
                       const RSPkt *pkt)
{
    unsigned i;
    uint8_t st;

    if (!pkt->payiovcnt) {
        return rs_sge_copy(c, qp, gid_index, sge, n, off,
                           (void *)pkt->payload, pkt->paylen, true);
    }
    for (i = 0; i < pkt->payiovcnt; i++) {
        st = rs_sge_copy(c, qp, gid_index, sge, n, off,
                         pkt->payiov[i].iov_base, pkt->payiov[i].iov_len,
                         true);
        if (st) {
            return st;
        }
        off += pkt->payiov[i].iov_len;
    }
    return RS_WC_SUCCESS;
}
