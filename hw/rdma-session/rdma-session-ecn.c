/*
 * rdma-session adapter: ECN and congestion notification packets (RoCEv2,
 * IBTA vol. 1 Annex A17.9).
 *
 * Reaction to congestion the network reports: with the "ecn" property on,
 * every RoCE packet leaves ECN-capable, ECT(0), its DSCP the address
 * vector's (rs_ecn_tos; the ICRC does not cover the ECN bits, so a switch
 * may mark them).  A packet that a switch marked CE (congestion
 * experienced) and that passes its QP's checks is answered, as the
 * notification point, with a CNP to the QP that sent it: BTH opcode 0x81
 * to its QPN, 16 reserved bytes, on the path the QP's ACKs take, not
 * ECN-capable itself.  At most one CNP per QP in each "cnp-interval"
 * (ConnectX's min_time_between_cnps) of virtual time.
 *
 * A CNP for one of our QPs (from its peer, a valid P_Key) is counted and
 * lowers the QP's sending rate (rdma-session-dcqcn.c); one for no QP,
 * from another address, or malformed, is counted apart and has no other
 * effect.  A CNP never makes the device send anything.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/timer.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "trace.h"

/* The partition of the P_Key table's one entry, membership bit aside. */
#define RS_PKEY_DEFAULT     0x7fff

#define RS_CNP_INTERVAL_MAX 1000000     /* us */

uint8_t rs_ecn_tos(const RSCore *c, uint8_t traffic_class)
{
    return c->p.ecn ? (traffic_class & ~RS_ECN_MASK) | RS_ECN_ECT0 :
           traffic_class;
}

static bool rs_ecn_receiving(const RSQp *qp)
{
    return qp->state == RS_QPS_RTR || qp->state == RS_QPS_RTS ||
           qp->state == RS_QPS_SQD;
}

static bool rs_ecn_datagram(const RSQp *qp)
{
    return qp->type == RS_QPT_UD || qp->type == RS_QPT_GSI;
}

/*
 * Send a CNP for packet pkt of QP qpn to the QP that sent it: a
 * connected QP's peer on the path its ACKs take, a datagram's source QP
 * at its source address, on the VLAN and priority it came with.
 */
static void rs_ecn_send_cnp(RSCore *c, uint32_t qpn, RSQp *qp, int gid,
                            const RSPkt *pkt)
{
    uint8_t f[RS_BTH_OFF6 + RS_BTH_LEN + RS_CNP_PAYLOAD + RS_ICRC_LEN];
    RSPkt p = { 0 };
    size_t len;
    bool ok;

    if (rs_ecn_datagram(qp)) {
        RSAv av = {
            .hop_limit = 64,
            .traffic_class = pkt->tos,
            .flow_label = pkt->flow_label |
                          RS_VLAN_PCP(pkt->vlan) << RS_AV_PRIO_SHIFT,
            .gid_index = gid,
        };

        memcpy(av.dgid, pkt->sgid, sizeof(av.dgid));
        memcpy(av.dmac, pkt->smac, sizeof(av.dmac));
        ok = rs_qp_tuple(c, qp, qpn, &av, &p);
        p.dqpn = pkt->sqpn;
    } else {
        ok = rs_qp_tuple(c, qp, qpn, NULL, &p);
        if (!(rs_opcode[pkt->opcode].flags & RS_OPF_RESP)) {
            rs_path_resp_tuple(qp, qp->path.resp_sport, &p);
        }
        p.dqpn = qp->dest_qpn;
    }
    if (!ok) {
        trace_rdma_session_cnp_skip(qpn, "no path back");
        return;
    }
    p.tos &= ~RS_ECN_MASK;
    p.opcode = RS_OP_CNP;
    memset(f + rs_wire_payload_off(&p), 0, RS_CNP_PAYLOAD);
    len = rs_wire_build(f, &p, RS_CNP_PAYLOAD);
    c->stats.cnp_sent++;
    trace_rdma_session_cnp_tx(qpn, p.dqpn);
    rs_roce_xmit(c, f, len, &p);
}

/*
 * Packet pkt passed the checks of QP qpn (rdma-session-net.c): if it is
 * marked CE, count it and notify its sender, at most once per interval.
 */
void rs_ecn_received(RSCore *c, uint32_t qpn, RSQp *qp, int gid,
                     const RSPkt *pkt)
{
    int64_t now;

    if ((pkt->tos & RS_ECN_MASK) != RS_ECN_CE || !rs_ecn_receiving(qp) ||
        (rs_ecn_datagram(qp) && pkt->qkey != qp->qkey)) {
        return;
    }
    c->stats.ecn_ce_received++;
    if (!c->p.ecn) {
        trace_rdma_session_cnp_skip(qpn, "ecn off");
        return;
    }
    now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    if (now < c->cnp_next[qpn]) {
        trace_rdma_session_cnp_skip(qpn, "within cnp-interval");
        return;
    }
    c->cnp_next[qpn] = now + (int64_t)c->p.cnp_interval_us * SCALE_US;
    rs_ecn_send_cnp(c, qpn, qp, gid, pkt);
}

/* A CNP to one of our addresses (gid < 0: not on the frame's VLAN). */
void rs_ecn_cnp_input(RSCore *c, int gid, const RSPkt *pkt)
{
    uint32_t qpn = pkt->dqpn;
    const char *why = NULL;
    RSQp *qp = NULL;

    if (gid < 0 || qpn == 0 || qpn >= c->p.max_qps || !c->qps[qpn].valid) {
        why = "no such GID or QP";
    } else if (pkt->paylen != RS_CNP_PAYLOAD) {
        why = "bad length";
    } else if ((pkt->pkey & RS_PKEY_DEFAULT) != RS_PKEY_DEFAULT) {
        why = "P_Key mismatch";
    } else {
        qp = &c->qps[qpn];
        if (qp->type == RS_QPT_DCT || qp->type == RS_QPT_XRC_TGT ||
            qp->type == RS_QPT_DC_CTX) {
            why = "not a requester";
        } else if (!rs_ecn_datagram(qp) && qp->type != RS_QPT_DCI &&
                   !rs_qp_from_peer(c, qp, gid, pkt)) {
            why = "not from the QP's peer";
        }
    }
    if (why) {
        c->stats.cnp_ignored++;
        trace_rdma_session_cnp_drop(qpn, why);
        return;
    }
    c->stats.cnp_received++;
    trace_rdma_session_cnp_rx(qpn);
    rs_dcqcn_cnp(c, qpn);
}

/* A new QP in slot qpn notifies from its first CE on. */
void rs_ecn_qp_created(RSCore *c, uint32_t qpn)
{
    c->cnp_next[qpn] = 0;
}

static bool rs_ecn_check(RSCore *c, Error **errp)
{
    if (c->p.cnp_interval_us > RS_CNP_INTERVAL_MAX) {
        error_setg(errp, "rdma-session: cnp-interval must be 0..%u us",
                   RS_CNP_INTERVAL_MAX);
        return false;
    }
    return true;
}

static bool rs_ecn_realize(RSCore *c, Error **errp)
{
    c->cnp_next = g_new0(int64_t, c->p.max_qps);
    return true;
}

static void rs_ecn_unrealize(RSCore *c)
{
    g_free(c->cnp_next);
    c->cnp_next = NULL;
}

static void rs_ecn_reset(RSCore *c)
{
    memset(c->cnp_next, 0, sizeof(*c->cnp_next) * c->p.max_qps);
}

/*
 * The ECN counters (ABI 1.10), sent once any counted; they are only
 * reported.  The CNP interval's clock is not migrated: a QP may notify
 * once more, early, after a migration.
 */
static bool rs_ecn_counters_needed(void *opaque)
{
    RSCore *c = opaque;

    return c->stats.ecn_ce_received || c->stats.cnp_sent ||
           c->stats.cnp_received || c->stats.cnp_ignored ||
           c->stats.dcqcn_rate_reductions;
}

const VMStateDescription vmstate_rs_ecn_counters = {
    .name = "rdma-session/core/ecn-counters",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_ecn_counters_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(stats.ecn_ce_received, RSCore),
        VMSTATE_UINT64(stats.cnp_sent, RSCore),
        VMSTATE_UINT64(stats.cnp_received, RSCore),
        VMSTATE_UINT64(stats.cnp_ignored, RSCore),
        VMSTATE_UINT64(stats.dcqcn_rate_reductions, RSCore),
        VMSTATE_END_OF_LIST()
    },
};

const RSFeature rs_feature_ecn = {
    .name = "ecn",
    .check = rs_ecn_check,
    .realize = rs_ecn_realize,
    .unrealize = rs_ecn_unrealize,
    .reset = rs_ecn_reset,
};
