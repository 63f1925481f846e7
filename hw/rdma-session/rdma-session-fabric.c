/*
 * rdma-session adapter: the local fabric (opt-in, local-fabric=DIR).
 *
 * Adapters of QEMU processes on one host that name the same directory
 * meet there: each listens on a Unix SOCK_SEQPACKET socket in it and
 * connects to the others'.  Over that control channel members tell each
 * other their RAM (a HELLO: DMA address -> (memfd, offset, size) regions,
 * the fds by SCM_RIGHTS, as vhost-user's set_mem_table does) and their
 * IPv4 addresses (ADDRS, again whenever the GID table changes).  A RoCE
 * frame to a member's address then goes over the channel instead of the
 * netdev: the channel is just a link, the RoCE protocol on it unchanged.
 * A frame whose payload is large goes by reference: its headers (a valid
 * frame without payload) and a list of (DMA address, length) pieces of
 * the sender's RAM that its own key check granted; the receiver checks
 * the pieces against the regions it mapped (read-only) and its own key
 * check copies straight from there into its guest memory.
 *
 * Everything runs on the main loop: a member is unmapped only between
 * frames.  Runtime only: nothing of it is migrated.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/mman.h>
#include <dirent.h>
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/sockets.h"
#include "qemu/error-report.h"
#include "qemu/bswap.h"
#include "qemu/iov.h"
#include "qemu/memfd.h"
#include "net/checksum.h"
#include "net/eth.h"
#include "qapi/error.h"
#include "exec/memory.h"
#include "exec/ramblock.h"
#include "hw/boards.h"
#include "system/runstate.h"
#include "migration/misc.h"
#include "qemu/guest-random.h"
#include "rdma-session-core.h"
#include "rdma-session-wire.h"
#include "rdma-session-fabric.h"
#include "hw/rdma-session/rdma-session-fabric-fuzz.h"
#include "trace.h"

/*
 * HELLO version 2 adds flags (RS_FAB_HELLO_BATCH); sent only to a member
 * known to take it: one whose socket name says so (RS_FAB_SOCK_SUFFIX)
 * or that sent version 2 itself.  A version 1 member gets version 1.
 */
#define RS_FAB_VERSION      2
#define RS_FAB_SOCK_SUFFIX  ".v2.sock"
/* The name it has until it listens: shorter, and no "*.sock" to a scan. */
#define RS_FAB_SOCK_TMP     ".v2.new"
/* A socket's name in the directory: "/<id>" and the suffix. */
#define RS_FAB_NAME_MAX     (1 + 16 + sizeof(RS_FAB_SOCK_SUFFIX) - 1)
/* Largest message: a whole frame inline, and the header. */
#define RS_FAB_MSG_MAX      (RS_WIRE_MAX_FRAME + 64)
/* Largest channel message: one message, or a batch of them. */
#define RS_FAB_RX_MAX       MAX_CONST(RS_FAB_MSG_MAX, RS_FAB_BATCH_MAX)
/* A by-reference frame's headers (a RoCE frame without payload). */
#define RS_FAB_REF_HDR_MAX  128
/* Socket buffers asked for per member connection. */
#define RS_FAB_SOCK_BUF     (2 * 1024 * 1024)

typedef struct RSFabRegion {
    uint64_t addr;              /* DMA address */
    uint64_t size;
    uint64_t offset;            /* in the fd */
    int fd;                     /* local: not ours to close */
    void *map;                  /* peer: the mmap, PROT_READ */
    size_t maplen;
    uint8_t *host;              /* peer: where addr is */
} RSFabRegion;

typedef struct RSFabMember {
    RSFabric *f;
    int fd;                     /* -1: free */
    bool accepted;              /* it connected to us */
    bool hello;
    bool v2;                    /* it takes HELLO version 2 */
    bool batch;                 /* its HELLO announced batches */
    uint32_t tx_max;            /* largest batch its socket takes */
    uint64_t id;
    uint32_t naddrs;
    uint32_t addrs[RS_FAB_MAX_ADDRS];
    unsigned nregions;
    RSFabRegion reg[RS_FAB_MAX_REGIONS];
} RSFabMember;

typedef struct RSFabPiece {
    uint64_t addr;
    uint32_t len;
} RSFabPiece;

struct RSFabric {
    RSCore *c;
    char *path;                 /* our socket */
    int lfd;
    bool joined;
    bool migrating;             /* an outgoing migration runs */
    NotifierWithReturn mig;
    uint64_t id;
    RSFabMember m[RS_FAB_MAX_MEMBERS];
    /* Our RAM as the DMA address space shows it (the listener's view). */
    MemoryListener listener;
    bool listening;
    unsigned nlocal;
    RSFabRegion local[RS_FAB_MAX_REGIONS];
    bool local_changed;
    /* The frame being built by reference (rs_fabric_ref_begin/end). */
    bool rec, rec_fail;
    unsigned npieces;
    RSFabPiece pieces[RS_FAB_MAX_PIECES];
    uint64_t rec_len;
    uint32_t rec_want;          /* the payload's length */
    bool ref_ready;
    struct iovec rxiov[RS_FAB_MAX_PIECES];
    /*
     * The batch of frames to member tx_m: messages back to back, sent as
     * one channel message when full, at the end of the engine's run
     * (rs_fabric_flush), after a received channel message (rx_busy defers
     * it until then) and by bh after anything else.  The counts go to
     * the counters once it is sent.
     */
    RSFabMember *tx_m;
    uint32_t tx_len, tx_frames;
    uint32_t tx_inline, tx_ref;
    uint64_t tx_inline_bytes, tx_ref_bytes;
    bool rx_busy;
    QEMUBH *bh;
    uint8_t tx[RS_FAB_BATCH_MAX];
    uint8_t rxbuf[RS_FAB_RX_MAX];
    uint8_t txbuf[RS_FAB_MSG_MAX];
    uint64_t cnt[RS_FAB_COUNTERS];
    int pcap_fd;                /* fabric-pcap, or -1 */
};

/*
 * fabric-pcap: what goes over the fabric, both ways, as a capture of the
 * netdev would have shown it (the frames of the channel's messages; a
 * frame by reference as a truncated record, rs_fab_pcap_ref).  One record
 * per frame, as filter-dump writes them: the operator's choice, as that,
 * and on its clock (the virtual clock), so that a netdev's capture and
 * this one merge into one timeline.
 * orig: the frame's length on the wire (len: the bytes recorded).
 */
static void rs_fab_pcap(RSFabric *f, const uint8_t *frame, size_t len,
                        size_t orig)
{
    int64_t us;
    uint32_t hdr[4];
    struct iovec iov[2] = {
        { .iov_base = hdr, .iov_len = sizeof(hdr) },
        { .iov_base = (void *)frame, .iov_len = len },
    };

    if (f->pcap_fd < 0) {
        return;                 /* (every frame passes here) */
    }
    us = qemu_clock_get_us(QEMU_CLOCK_VIRTUAL);
    hdr[0] = cpu_to_le32(us / 1000000);
    hdr[1] = cpu_to_le32(us % 1000000);
    hdr[2] = cpu_to_le32(len);
    hdr[3] = cpu_to_le32(orig);
    if (writev(f->pcap_fd, iov, 2) != sizeof(hdr) + len) {
        warn_report("rdma-session: fabric-pcap=%s: write failed, no more "
                    "records", f->c->p.fabric_pcap);
        close(f->pcap_fd);
        f->pcap_fd = -1;
    }
}

/*
 * A frame by reference, its headers built as a frame without payload
 * (len bytes, its ICRC last), its payload paylen bytes: recorded as a
 * capture truncated after the headers would show the frame on the wire,
 * orig_len its whole length (headers, payload, pad, ICRC), the bytes
 * recorded the headers as that frame has them: the IP and UDP lengths,
 * the BTH's pad count and the IPv4 header checksum of the whole frame.
 * Headers of another kind (no IPv4 or IPv6 of our format): as they are.
 */
static void rs_fab_pcap_ref(RSFabric *f, const uint8_t *frame, size_t len,
                            uint64_t paylen)
{
    uint8_t h[RS_FAB_REF_HDR_MAX];
    uint16_t type = len >= RS_L3_OFF ? lduw_be_p(frame + 12) : 0;
    bool v6 = type == ETH_P_IPV6;
    unsigned l3 = v6 ? RS_IP6_HLEN : RS_IP4_HLEN;
    size_t bth = RS_L3_OFF + l3 + RS_UDP_HLEN;
    unsigned pad = (-paylen) & 3;
    uint8_t *ip = h + RS_L3_OFF;
    size_t hl, wire;

    if (f->pcap_fd < 0) {
        return;
    }
    if ((type != ETH_P_IP && !v6) || len > sizeof(h) ||
        len < bth + RS_BTH_LEN + RS_ICRC_LEN ||
        (!v6 && frame[RS_L3_OFF] != 0x45)) {
        rs_fab_pcap(f, frame, len, len);
        return;
    }
    /* the headers: without the ICRC and any pad of the frame as built */
    hl = len - RS_ICRC_LEN -
         MIN((frame[bth + 1] >> 4) & 3, len - RS_ICRC_LEN - bth - RS_BTH_LEN);
    wire = hl + paylen + pad + RS_ICRC_LEN;
    memcpy(h, frame, hl);
    if (v6) {
        stw_be_p(ip + 4, wire - RS_L3_OFF - l3);
    } else {
        stw_be_p(ip + 2, wire - RS_L3_OFF);
        stw_be_p(ip + 10, 0);
        stw_be_p(ip + 10, net_raw_checksum(ip, RS_IP4_HLEN));
    }
    stw_be_p(ip + l3 + 4, wire - RS_L3_OFF - l3);
    h[bth + 1] = (h[bth + 1] & ~0x30) | (pad << 4);
    rs_fab_pcap(f, h, hl, wire);
}

static bool rs_fab_pcap_open(RSFabric *f, Error **errp)
{
    /* pcap's file header: version 2.4, microseconds, Ethernet */
    uint32_t hdr[6] = {
        cpu_to_le32(0xa1b2c3d4), cpu_to_le32(2 | (4 << 16)), 0, 0,
        cpu_to_le32(RS_WIRE_MAX_FRAME), cpu_to_le32(1),
    };

    f->pcap_fd = -1;
    if (!f->c->p.fabric_pcap) {
        return true;
    }
    f->pcap_fd = qemu_create(f->c->p.fabric_pcap, O_WRONLY | O_TRUNC, 0644,
                             errp);
    if (f->pcap_fd < 0) {
        return false;
    }
    if (write(f->pcap_fd, hdr, sizeof(hdr)) != sizeof(hdr)) {
        error_setg_errno(errp, errno, "rdma-session: fabric-pcap=%s",
                         f->c->p.fabric_pcap);
        close(f->pcap_fd);
        f->pcap_fd = -1;
        return false;
    }
    return true;
}

static void rs_fab_put_hdr(uint8_t *b, uint16_t type, uint32_t len)
{
    stl_le_p(b, RS_FAB_MAGIC);
    stw_le_p(b + 4, type);
    stw_le_p(b + 6, 0);
    stl_le_p(b + 8, len);
}

/* Send one channel message (and fds); 0 or an errno. */
static int rs_fab_sendmsg(RSFabMember *m, const struct iovec *iov,
                          int iovcnt, const int *fds, unsigned nfds)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * RS_FAB_MAX_REGIONS)];
    } u;
    struct msghdr msg = {
        .msg_iov = (struct iovec *)iov,
        .msg_iovlen = iovcnt,
    };
    ssize_t r;

    if (nfds) {
        struct cmsghdr *cm;

        memset(&u, 0, sizeof(u));
        msg.msg_control = u.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
    }
    do {
        r = sendmsg(m->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);
    return r < 0 ? errno : 0;
}

static void rs_fab_tx_empty(RSFabric *f)
{
    f->tx_len = f->tx_frames = f->tx_inline = f->tx_ref = 0;
    f->tx_inline_bytes = f->tx_ref_bytes = 0;
}

/*
 * The batch goes as one channel message; a full socket loses it, each
 * frame counted as lost, as a link would lose packets.
 */
static void rs_fab_tx_flush(RSFabric *f)
{
    RSFabMember *m = f->tx_m;
    struct iovec iov = { .iov_base = f->tx, .iov_len = f->tx_len };
    int err;

    if (!f->tx_len) {
        return;
    }
    qemu_bh_cancel(f->bh);
    err = rs_fab_sendmsg(m, &iov, 1, NULL, 0);
    trace_rdma_session_fabric_tx_msg(m - f->m, f->tx_frames, f->tx_len, err);
    if (err) {
        f->cnt[RS_FAB_CNT_TX_LOST] += f->tx_frames;
        trace_rdma_session_fabric_tx_lost(m - f->m, err);
    } else {
        f->cnt[RS_FAB_CNT_TX_MSGS]++;
        f->cnt[RS_FAB_CNT_TX_INLINE] += f->tx_inline;
        f->cnt[RS_FAB_CNT_TX_INLINE_BYTES] += f->tx_inline_bytes;
        f->cnt[RS_FAB_CNT_TX_REF] += f->tx_ref;
        f->cnt[RS_FAB_CNT_TX_REF_BYTES] += f->tx_ref_bytes;
    }
    rs_fab_tx_empty(f);
}

static void rs_fab_tx_bh(void *opaque)
{
    rs_fab_tx_flush(opaque);
}

/* The member leaves: its batch is lost with the frames in flight. */
static void rs_fab_tx_discard(RSFabric *f, RSFabMember *m)
{
    if (f->tx_len && f->tx_m == m) {
        f->cnt[RS_FAB_CNT_TX_LOST] += f->tx_frames;
        rs_fab_tx_empty(f);
        qemu_bh_cancel(f->bh);
    }
}

/*
 * Where the next message (len bytes, at most RS_FAB_MSG_MAX) to member m
 * goes in the batch: a batch to another member, or one that would grow
 * past the bounds, is sent first.
 */
static uint8_t *rs_fab_tx_room(RSFabric *f, RSFabMember *m, uint32_t len)
{
    if (f->tx_len && (f->tx_m != m || f->tx_len + len > m->tx_max ||
                      f->tx_frames >= RS_FAB_BATCH_MSGS)) {
        rs_fab_tx_flush(f);
    }
    f->tx_m = m;
    return f->tx + f->tx_len;
}

/*
 * A message of len bytes was put at rs_fab_tx_room's place.  A member
 * that did not announce batches gets it at once, alone; otherwise it
 * waits for the end of the run, or the main loop (bh) at the latest.
 * An MMIO write flushes when it ends: a BH scheduled from its vCPU
 * thread would wake the main loop for every message, for nothing.
 */
static void rs_fab_tx_added(RSFabric *f, uint32_t len)
{
    f->tx_len += len;
    f->tx_frames++;
    if (!f->tx_m->batch) {
        rs_fab_tx_flush(f);
    } else if (f->tx_frames == 1 && !rs_bundle_in_mmio(f->c)) {
        qemu_bh_schedule(f->bh);
    }
}

/*
 * Send one control message (and fds) alone, after the member's batch;
 * a full socket loses it, as a link would.
 */
static bool rs_fab_send(RSFabric *f, RSFabMember *m, const struct iovec *iov,
                        int iovcnt, const int *fds, unsigned nfds)
{
    int err;

    if (f->tx_m == m) {
        rs_fab_tx_flush(f);
    }
    err = rs_fab_sendmsg(m, iov, iovcnt, fds, nfds);
    if (err) {
        f->cnt[RS_FAB_CNT_TX_LOST]++;
        trace_rdma_session_fabric_tx_lost(m - f->m, err);
        return false;
    }
    return true;
}

static void rs_fab_send_hello(RSFabric *f, RSFabMember *m)
{
    uint8_t *b = f->txbuf;
    int fds[RS_FAB_MAX_REGIONS];
    unsigned i, n = f->nlocal;
    uint32_t len = RS_FAB_HDR_LEN + 16 + n * 24 + (m->v2 ? 8 : 0);
    struct iovec iov = { .iov_base = b, .iov_len = len };

    rs_fab_put_hdr(b, RS_FAB_MSG_HELLO, len);
    stl_le_p(b + 12, m->v2 ? 2 : 1);
    stl_le_p(b + 16, n);
    stq_le_p(b + 20, f->id);
    for (i = 0; i < n; i++) {
        stq_le_p(b + 28 + i * 24, f->local[i].addr);
        stq_le_p(b + 36 + i * 24, f->local[i].size);
        stq_le_p(b + 44 + i * 24, f->local[i].offset);
        fds[i] = f->local[i].fd;
    }
    if (m->v2) {
        stl_le_p(b + 28 + n * 24, RS_FAB_HELLO_BATCH);      /* flags */
        stl_le_p(b + 32 + n * 24, 0);
    }
    rs_fab_send(f, m, &iov, 1, fds, n);
}

static void rs_fab_send_addrs(RSFabric *f, RSFabMember *m)
{
    RSCore *c = f->c;
    uint8_t *b = f->txbuf;
    uint32_t i, n = 0, ip;
    struct iovec iov;

    for (i = 0; i < c->p.max_gids && n < RS_FAB_MAX_ADDRS; i++) {
        if (c->gids[i].valid && !c->gids[i].vlan &&
            rs_gid_to_ip4(c->gids[i].gid, &ip)) {
            stl_le_p(b + RS_FAB_HDR_LEN + 4 + n * 4, ip);
            n++;
        }
    }
    stl_le_p(b + RS_FAB_HDR_LEN, n);
    rs_fab_put_hdr(b, RS_FAB_MSG_ADDRS, RS_FAB_HDR_LEN + 4 + n * 4);
    iov = (struct iovec) { .iov_base = b,
                           .iov_len = RS_FAB_HDR_LEN + 4 + n * 4 };
    rs_fab_send(f, m, &iov, 1, NULL, 0);
}

static void rs_fab_unmap(RSFabMember *m)
{
    unsigned i;

    for (i = 0; i < m->nregions; i++) {
        if (m->reg[i].map) {
            munmap(m->reg[i].map, m->reg[i].maplen);
        }
    }
    m->nregions = 0;
}

/*
 * The member goes away (EOF, garbage, our reset): unmapped now, between
 * frames; its addresses go back to the wire, its frames in flight are
 * lost and the retransmission machinery recovers.
 */
static void rs_fab_drop_member(RSFabric *f, RSFabMember *m, const char *why)
{
    if (m->fd < 0) {
        return;
    }
    trace_rdma_session_fabric_leave(m - f->m, m->id, why);
    rs_fab_tx_discard(f, m);
    qemu_set_fd_handler(m->fd, NULL, NULL, NULL);
    close(m->fd);
    rs_fab_unmap(m);
    memset(m, 0, sizeof(*m));
    m->f = f;
    m->fd = -1;
    f->cnt[RS_FAB_CNT_LEFT]++;
}

static RSFabMember *rs_fab_member_of_ip(RSFabric *f, uint32_t ip)
{
    unsigned i, k;

    for (i = 0; i < RS_FAB_MAX_MEMBERS; i++) {
        RSFabMember *m = &f->m[i];

        if (m->fd < 0 || !m->hello) {
            continue;
        }
        for (k = 0; k < m->naddrs; k++) {
            if (m->addrs[k] == ip) {
                return m;
            }
        }
    }
    return NULL;
}

/*
 * The member a frame with pkt's headers goes to now, or NULL (the wire):
 * IPv4 without a VLAN tag, the port up and no migration hold.
 */
static RSFabMember *rs_fab_member_of_pkt(RSCore *c, const RSPkt *pkt)
{
    if (pkt->vlan || !pkt->dip || pkt->v6 || c->holding || !c->link_up) {
        return NULL;
    }
    return rs_fab_member_of_ip(c->fabric, pkt->dip);
}

/* A HELLO: map the peer's regions read-only; false: garbage. */
static bool rs_fab_hello(RSFabric *f, RSFabMember *m, const uint8_t *b,
                         size_t len, const int *fds, unsigned nfds)
{
    uint32_t n, i, ver, flags = 0;
    uint64_t id;

    if (len < RS_FAB_HDR_LEN + 16) {
        return false;
    }
    ver = ldl_le_p(b + 12);
    n = ldl_le_p(b + 16);
    id = ldq_le_p(b + 20);
    if ((ver != 1 && ver != RS_FAB_VERSION) || n > RS_FAB_MAX_REGIONS ||
        n != nfds ||
        len != RS_FAB_HDR_LEN + 16 + n * 24 + (ver == 2 ? 8 : 0) ||
        id == f->id || (m->hello && id != m->id)) {
        return false;
    }
    if (ver == 2) {
        flags = ldl_le_p(b + 28 + n * 24);  /* unknown bits: later ones */
    }
    for (i = 0; i < RS_FAB_MAX_MEMBERS; i++) {
        RSFabMember *o = &f->m[i];

        /*
         * Both connected at once: keep the connection whose connecting
         * side has the smaller id (both sides choose the same one).
         */
        if (o != m && o->fd >= 0 && o->hello && o->id == id) {
            uint64_t mine = m->accepted ? id : f->id;

            if (mine == MIN(id, f->id)) {
                rs_fab_drop_member(f, o, "duplicate connection");
            } else {
                rs_fab_drop_member(f, m, "duplicate connection");
                return true;
            }
        }
    }
    rs_fab_unmap(m);
    for (i = 0; i < n; i++) {
        const uint8_t *r = b + 28 + i * 24;
        uint64_t addr = ldq_le_p(r), size = ldq_le_p(r + 8);
        uint64_t off = ldq_le_p(r + 16);
        uint64_t in = off & (qemu_real_host_page_size() - 1);
        struct stat st;
        int seals = fcntl(fds[i], F_GET_SEALS);
        void *p;

        /*
         * The peer must not be able to shrink the file under our mapping
         * (a SIGBUS here): QEMU's memfd backend seals it by default.
         */
        if (!size || size > (1ull << 40) || addr + size < addr ||
            off + size < off || fstat(fds[i], &st) < 0 ||
            (uint64_t)st.st_size < off + size || seals < 0 ||
            !(seals & F_SEAL_SHRINK)) {
            rs_fab_unmap(m);
            return false;
        }
        p = mmap(NULL, size + in, PROT_READ, MAP_SHARED, fds[i], off - in);
        if (p == MAP_FAILED) {
            rs_fab_unmap(m);
            return false;
        }
        m->reg[i] = (RSFabRegion) {
            .addr = addr, .size = size, .offset = off, .fd = -1,
            .map = p, .maplen = size + in, .host = (uint8_t *)p + in,
        };
        m->nregions = i + 1;
    }
    if (f->tx_m == m) {
        rs_fab_tx_flush(f);     /* built for what it said before */
    }
    m->v2 = m->v2 || ver == 2;
    m->batch = flags & RS_FAB_HELLO_BATCH;
    if (!m->hello) {
        m->hello = true;
        m->id = id;
        f->cnt[RS_FAB_CNT_JOINED]++;
        trace_rdma_session_fabric_join(m - f->m, id, n);
        if (m->accepted) {
            rs_fab_send_hello(f, m);
        }
        rs_fab_send_addrs(f, m);
    }
    return true;
}

static bool rs_fab_addrs(RSFabMember *m, const uint8_t *b, size_t len)
{
    uint32_t n, i;

    if (len < RS_FAB_HDR_LEN + 4) {
        return false;
    }
    n = ldl_le_p(b + RS_FAB_HDR_LEN);
    if (n > RS_FAB_MAX_ADDRS || len != RS_FAB_HDR_LEN + 4 + n * 4) {
        return false;
    }
    for (i = 0; i < n; i++) {
        uint32_t ip = ldl_le_p(b + RS_FAB_HDR_LEN + 4 + i * 4);

        /* Unicast only: a member cannot take multicast off the wire. */
        if (!ip || (ip >> 28) == 0xe || (ip >> 28) == 0xf ||
            (ip >> 24) == 127) {
            m->naddrs = 0;
            return false;
        }
        m->addrs[i] = ip;
    }
    m->naddrs = n;
    return true;
}

/* Whether opcode op may come by reference: RC SEND, WRITE, READ RESP. */
static bool rs_fab_ref_op(uint8_t op)
{
    return op <= RS_OP_READ_RESP_ONLY && op != RS_OP_READ_REQ;
}

/*
 * A by-reference frame: the headers parse as a frame without payload;
 * the pieces, each inside one region of the member, become the payload.
 * False: drop it (counted, traced); the link stays.
 */
static bool rs_fab_frame_ref(RSFabric *f, RSFabMember *m, const uint8_t *b,
                             size_t len)
{
    RSCore *c = f->c;
    const char *why = NULL;
    uint32_t hlen, n, i, k;
    uint64_t total = 0;
    RSPkt pkt;

    if (len < RS_FAB_HDR_LEN + 8) {
        why = "short";
        goto drop;
    }
    hlen = lduw_le_p(b + 12);
    n = lduw_le_p(b + 14);
    if (!hlen || hlen > RS_FAB_REF_HDR_MAX || !n ||
        n > RS_FAB_MAX_PIECES ||
        len != RS_FAB_HDR_LEN + 8 + ROUND_UP(hlen, 8) + n * 16) {
        why = "lengths";
        goto drop;
    }
    for (i = 0; i < n; i++) {
        const uint8_t *p = b + RS_FAB_HDR_LEN + 8 + ROUND_UP(hlen, 8) + i * 16;
        uint64_t addr = ldq_le_p(p);
        uint32_t plen = ldl_le_p(p + 8);
        const RSFabRegion *r = NULL;

        for (k = 0; k < m->nregions; k++) {
            r = &m->reg[k];
            if (plen && addr >= r->addr && addr - r->addr < r->size &&
                plen <= r->size - (addr - r->addr)) {
                break;
            }
        }
        if (k == m->nregions) {
            f->cnt[RS_FAB_CNT_RX_BAD_REF]++;
            trace_rdma_session_fabric_bad_ref(m - f->m, addr, plen);
            why = "piece outside the peer's RAM";
            goto drop;
        }
        f->rxiov[i].iov_base = r->host + (addr - r->addr);
        f->rxiov[i].iov_len = plen;
        total += plen;
    }
    if (total > RS_WIRE_MAX_FRAME) {
        why = "payload longer than a frame";
        goto drop;
    }
    if (!rs_port_active(c)) {
        why = "port not active";
        goto drop;
    }
    if (!rs_wire_parse(b + RS_FAB_HDR_LEN + 8, hlen, &pkt, &why)) {
        goto drop;
    }
    if (pkt.paylen || pkt.v6 || !rs_fab_ref_op(pkt.opcode) ||
        rs_gid_find(c, pkt.dgid) < 0) {
        why = "not a RoCE frame that may come by reference";
        goto drop;
    }
    rs_fab_pcap_ref(f, b + RS_FAB_HDR_LEN + 8, hlen, total);
    pkt.payiov = f->rxiov;
    pkt.payiovcnt = n;
    pkt.paylen = total;
    f->cnt[RS_FAB_CNT_RX_REF]++;
    f->cnt[RS_FAB_CNT_RX_REF_BYTES] += total;
    trace_rdma_session_fabric_rx(m - f->m, pkt.opcode, pkt.psn, total, true);
    c->rx_frame = true;
    c->rx_frame_seq++;
    c->rx_resp_budget = RS_RESP_BUDGET;
    c->stats.rx_packets++;
    c->stats.rx_bytes += hlen + total;
    rs_roce_dispatch(c, &pkt, hlen + total, 0);
    c->rx_frame = false;
    return true;

drop:
    f->cnt[RS_FAB_CNT_RX_DROP]++;
    trace_rdma_session_fabric_drop(m - f->m, why);
    return true;
}

/*
 * One message from member m; false: garbage, disconnect it.  Also the
 * fuzzers' entry (rs_fabric_fuzz_input).
 */
static bool rs_fab_input(RSFabric *f, RSFabMember *m, const uint8_t *b,
                         size_t len, const int *fds, unsigned nfds)
{
    uint16_t type;

    if (len < RS_FAB_HDR_LEN || ldl_le_p(b) != RS_FAB_MAGIC ||
        ldl_le_p(b + 8) != len || lduw_le_p(b + 6)) {
        return false;
    }
    type = lduw_le_p(b + 4);
    if (type != RS_FAB_MSG_HELLO && (nfds || !m->hello)) {
        return false;
    }
    switch (type) {
    case RS_FAB_MSG_HELLO:
        return rs_fab_hello(f, m, b, len, fds, nfds);
    case RS_FAB_MSG_ADDRS:
        return rs_fab_addrs(m, b, len);
    case RS_FAB_MSG_FRAME: {
        struct iovec iov = {
            .iov_base = (void *)(b + RS_FAB_HDR_LEN),
            .iov_len = len - RS_FAB_HDR_LEN,
        };

        rs_fab_pcap(f, iov.iov_base, iov.iov_len, iov.iov_len);
        f->cnt[RS_FAB_CNT_RX_INLINE]++;
        f->cnt[RS_FAB_CNT_RX_INLINE_BYTES] += iov.iov_len;
        trace_rdma_session_fabric_rx(m - f->m, 0, 0, iov.iov_len, false);
        if (!rs_resp_divert(f->c, &iov, 1)) {
            f->cnt[RS_FAB_CNT_RX_DROP]++;
            trace_rdma_session_fabric_drop(m - f->m, "not a RoCE frame to us");
        }
        return true;
    }
    case RS_FAB_MSG_FRAME_REF:
        return rs_fab_frame_ref(f, m, b, len);
    default:
        return false;
    }
}

/*
 * One channel message from member m: a message alone, or a batch, FRAME
 * and FRAME_REF messages back to back whose lengths tile it exactly (only
 * from a member that announced batches).  The whole batch is checked
 * before any of it is taken.  What the frames make us send goes in one
 * batch at the end.  *nmsgs: how many messages it held.  False: garbage,
 * disconnect the member.
 */
static bool rs_fab_input_msg(RSFabric *f, RSFabMember *m, const uint8_t *b,
                             size_t len, const int *fds, unsigned nfds,
                             unsigned *nmsgs)
{
    size_t off, sub;
    unsigned n = 0;
    bool ok = true;

    *nmsgs = 1;
    if (len < RS_FAB_HDR_LEN) {
        return false;
    }
    if (ldl_le_p(b + 8) == len && len > RS_FAB_MSG_MAX) {
        return false;           /* only a batch is larger */
    }
    if (ldl_le_p(b + 8) != len) {
        if (nfds || !m->batch || len > RS_FAB_BATCH_MAX) {
            return false;
        }
        for (off = 0; off < len; off += sub) {
            uint16_t type;

            if (len - off < RS_FAB_HDR_LEN || n == RS_FAB_BATCH_MSGS) {
                return false;
            }
            sub = ldl_le_p(b + off + 8);
            type = lduw_le_p(b + off + 4);
            if (ldl_le_p(b + off) != RS_FAB_MAGIC || lduw_le_p(b + off + 6) ||
                sub < RS_FAB_HDR_LEN || sub > len - off ||
                sub > RS_FAB_MSG_MAX ||
                (type != RS_FAB_MSG_FRAME && type != RS_FAB_MSG_FRAME_REF)) {
                trace_rdma_session_fabric_bad_batch(m - f->m, n, off, sub);
                return false;
            }
            n++;
        }
        *nmsgs = n;
    }
    if (*nmsgs > 1 || lduw_le_p(b + 4) == RS_FAB_MSG_FRAME ||
        lduw_le_p(b + 4) == RS_FAB_MSG_FRAME_REF) {
        f->cnt[RS_FAB_CNT_RX_MSGS]++;
        trace_rdma_session_fabric_rx_msg(m - f->m, *nmsgs, len);
    }
    f->rx_busy = true;
    if (*nmsgs == 1) {
        ok = rs_fab_input(f, m, b, len, fds, nfds);
    } else {
        /* A frame may not make it leave; if it did, the rest is lost. */
        for (off = 0; ok && off < len && m->hello; off += sub) {
            sub = ldl_le_p(b + off + 8);
            ok = rs_fab_input(f, m, b + off, sub, NULL, 0);
        }
    }
    f->rx_busy = false;
    rs_bundle_flush(f->c);      /* what the frames made us send goes now */
    return ok;
}

static void rs_fab_read(void *opaque)
{
    RSFabMember *m = opaque;
    RSFabric *f = m->f;
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * (RS_FAB_MAX_REGIONS + 1))];
    } u;
    int fds[RS_FAB_MAX_REGIONS + 1];
    unsigned nfds = 0, i, burst, nmsgs = 1;
    bool ok = true;

    /* 64 messages per round of the main loop, a batch's all at once. */
    for (burst = 0; burst < 64 && ok && m->fd >= 0; burst += nmsgs) {
        struct iovec iov = { .iov_base = f->rxbuf, .iov_len = RS_FAB_RX_MAX };
        struct msghdr msg = {
            .msg_iov = &iov, .msg_iovlen = 1,
            .msg_control = u.buf, .msg_controllen = sizeof(u.buf),
        };
        struct cmsghdr *cm;
        ssize_t r;

        r = recvmsg(m->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
            return;
        }
        if (r <= 0) {
            rs_fab_drop_member(f, m, r ? "error" : "EOF");
            return;
        }
        nfds = 0;
        for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                unsigned k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

                for (i = 0; i < k; i++) {
                    int fd;

                    memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                    if (nfds < ARRAY_SIZE(fds)) {
                        fds[nfds++] = fd;
                    } else {
                        close(fd);
                        ok = false;
                    }
                }
            }
        }
        nmsgs = 1;
        ok = ok && !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
             rs_fab_input_msg(f, m, f->rxbuf, r, fds, nfds, &nmsgs);
        for (i = 0; i < nfds; i++) {
            close(fds[i]);      /* the mappings keep what they need */
        }
        if (!ok) {
            f->cnt[RS_FAB_CNT_GARBAGE]++;
            rs_fab_drop_member(f, m, "bad message");
        }
    }
}

static RSFabMember *rs_fab_add(RSFabric *f, int fd, bool accepted)
{
    unsigned i;

    for (i = 0; i < RS_FAB_MAX_MEMBERS; i++) {
        RSFabMember *m = &f->m[i];

        if (m->fd < 0) {
            int buf = RS_FAB_SOCK_BUF;
            socklen_t sl = sizeof(buf);

            memset(m, 0, sizeof(*m));
            m->f = f;
            m->fd = fd;
            m->accepted = accepted;
            /* Room for a window of frames; the kernel may cap it. */
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
            /*
             * A datagram larger than the send buffer (less the kernel's
             * overhead) never goes: batches stay below half of it.
             */
            if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, &sl) < 0) {
                buf = 0;
            }
            m->tx_max = MIN(RS_FAB_BATCH_MAX, MAX(buf / 2, RS_FAB_MSG_MAX));
            qemu_socket_set_nonblock(fd);
            qemu_set_fd_handler(fd, rs_fab_read, NULL, m);
            return m;
        }
    }
    close(fd);
    f->cnt[RS_FAB_CNT_FULL]++;
    return NULL;
}

static void rs_fab_accept(void *opaque)
{
    RSFabric *f = opaque;
    int fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);

    if (fd >= 0) {
        rs_fab_add(f, fd, true);    /* it sends its HELLO first */
    }
}

/* Connect to every other socket in the directory. */
static void rs_fab_scan(RSFabric *f)
{
    DIR *d = opendir(f->c->p.local_fabric);
    struct dirent *e;

    if (!d) {
        return;
    }
    while ((e = readdir(d))) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t n = strlen(e->d_name);
        RSFabMember *m;
        int fd;

        if (n < 5 || strcmp(e->d_name + n - 5, ".sock") ||
            snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s",
                     f->c->p.local_fabric, e->d_name) >=
            (int)sizeof(sa.sun_path) || !strcmp(sa.sun_path, f->path)) {
            continue;
        }
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            continue;
        }
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            if (errno == ECONNREFUSED) {
                unlink(sa.sun_path);    /* a member that died */
            }
            close(fd);
            continue;
        }
        m = rs_fab_add(f, fd, false);
        if (m) {
            /* Its name says whether it takes HELLO version 2. */
            m->v2 = n >= strlen(RS_FAB_SOCK_SUFFIX) &&
                    !strcmp(e->d_name + n - strlen(RS_FAB_SOCK_SUFFIX),
                            RS_FAB_SOCK_SUFFIX);
            rs_fab_send_hello(f, m);
        }
    }
    closedir(d);
}

/* Our RAM regions in the DMA address space (memfd/shareable only). */
static void rs_fab_region_add(MemoryListener *l, MemoryRegionSection *s)
{
    RSFabric *f = container_of(l, RSFabric, listener);
    MemoryRegion *mr = s->mr;
    ram_addr_t off;
    RAMBlock *rb;
    uint8_t *host;

    if (!memory_region_is_ram(mr) || memory_region_is_rom(mr) ||
        memory_region_get_fd(mr) < 0 || f->nlocal >= RS_FAB_MAX_REGIONS) {
        return;
    }
    host = (uint8_t *)memory_region_get_ram_ptr(mr) + s->offset_within_region;
    rb = qemu_ram_block_from_host(host, false, &off);
    if (!rb || !qemu_ram_is_shared(rb)) {
        return;
    }
    f->local[f->nlocal++] = (RSFabRegion) {
        .addr = s->offset_within_address_space,
        .size = int128_get64(s->size),
        .offset = rb->fd_offset + off,
        .fd = memory_region_get_fd(mr),
        .host = host,
    };
    f->local_changed = true;
}

static void rs_fab_region_del(MemoryListener *l, MemoryRegionSection *s)
{
    RSFabric *f = container_of(l, RSFabric, listener);
    unsigned i;

    for (i = 0; i < f->nlocal; i++) {
        if (f->local[i].addr == s->offset_within_address_space &&
            f->local[i].size == int128_get64(s->size)) {
            f->local[i] = f->local[--f->nlocal];
            f->local_changed = true;
            return;
        }
    }
}

static void rs_fab_commit(MemoryListener *l)
{
    RSFabric *f = container_of(l, RSFabric, listener);
    unsigned i;

    if (!f->local_changed) {
        return;
    }
    f->local_changed = false;
    for (i = 0; i < RS_FAB_MAX_MEMBERS; i++) {
        if (f->m[i].fd >= 0) {
            rs_fab_send_hello(f, &f->m[i]);
        }
    }
}

/* Join: listen in the directory, connect to the members there. */
static void rs_fab_join(RSFabric *f)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    g_autofree char *tmp = NULL;
    int fd;

    if (f->joined) {
        return;
    }
    if (!f->listening) {
        /*
         * Our RAM as our DMA address space shows it; a PCI device's
         * exists once the machine is done, before the VM first runs.
         */
        memory_listener_register(&f->listener, f->c->as);
        f->listening = true;
    }
    /*
     * A new id for each join: a member that still holds our connection
     * from before a reset or a migration (its EOF behind the frames
     * queued on it) must not take our new connection for a duplicate of
     * that one and drop it.
     */
    qemu_guest_getrandom_nofail(&f->id, sizeof(f->id));
    g_free(f->path);
    f->path = g_strdup_printf("%s/%016" PRIx64 RS_FAB_SOCK_SUFFIX,
                              f->c->p.local_fabric, f->id);
    tmp = g_strdup_printf("%s/%016" PRIx64 RS_FAB_SOCK_TMP,
                          f->c->p.local_fabric, f->id);
    /* Fits: rs_fabric_check refused a longer directory, tmp is shorter. */
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", tmp);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return;
    }
    /*
     * Bound and listening before the name appears: a member that scans
     * meanwhile and is refused takes the socket for a dead member's and
     * removes it.
     */
    unlink(tmp);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(fd, RS_FAB_MAX_MEMBERS) < 0 || rename(tmp, f->path) < 0) {
        warn_report("rdma-session: local fabric %s: cannot listen on %s: %s;"
                    " the fabric stays off", f->c->p.local_fabric, f->path,
                    strerror(errno));
        unlink(tmp);
        close(fd);
        return;
    }
    qemu_socket_set_nonblock(fd);
    f->lfd = fd;
    f->joined = true;
    qemu_set_fd_handler(fd, rs_fab_accept, NULL, f);
    trace_rdma_session_fabric_listen(f->path);
    rs_fab_scan(f);
}

/* Leave: every member dropped, our socket gone. */
static void rs_fab_leave(RSFabric *f, const char *why)
{
    unsigned i;

    for (i = 0; i < RS_FAB_MAX_MEMBERS; i++) {
        rs_fab_drop_member(f, &f->m[i], why);
    }
    if (f->joined) {
        qemu_set_fd_handler(f->lfd, NULL, NULL, NULL);
        close(f->lfd);
        unlink(f->path);
        f->lfd = -1;
        f->joined = false;
    }
}

bool rs_fabric_check(RSCore *c, Error **errp)
{
    MachineState *ms = MACHINE(qdev_get_machine());
    struct sockaddr_un sa;
    size_t dir_max = sizeof(sa.sun_path) - 1 - RS_FAB_NAME_MAX;
    struct stat st;

    if (!c->p.local_fabric) {
        if (c->p.fabric_pcap) {
            error_setg(errp, "rdma-session: fabric-pcap needs local-fabric");
            return false;
        }
        return true;
    }
    if (stat(c->p.local_fabric, &st) < 0 || !S_ISDIR(st.st_mode)) {
        error_setg(errp, "rdma-session: local-fabric=%s: not a directory",
                   c->p.local_fabric);
        return false;
    }
    if (strlen(c->p.local_fabric) > dir_max) {
        error_setg(errp, "rdma-session: local-fabric=%s: the path is too long"
                   " for the sockets in it (at most %zu bytes)",
                   c->p.local_fabric, dir_max);
        return false;
    }
    if (!ms->ram || memory_region_get_fd(ms->ram) < 0 ||
        !qemu_ram_is_shared(ms->ram->ram_block)) {
        error_setg(errp, "rdma-session: local-fabric needs the VM's RAM in"
                   " a shared fd-backed backend, e.g. -object"
                   " memory-backend-memfd,id=m0,size=<RAM>,share=on"
                   " -machine memory-backend=m0");
        return false;
    }
    return true;
}

/*
 * An outgoing migration: leave when it starts (the peers fall back to
 * the wire until the destination joins); join again if it fails and the
 * VM runs on here.
 */
static int rs_fab_migration(NotifierWithReturn *n, MigrationEvent *e,
                            Error **errp)
{
    RSFabric *f = container_of(n, RSFabric, mig);

    if (e->type == MIG_EVENT_PRECOPY_SETUP) {
        f->migrating = true;
        rs_fab_leave(f, "migration");
    } else {
        f->migrating = false;
        if (e->type == MIG_EVENT_PRECOPY_FAILED && runstate_is_running()) {
            rs_fabric_vm_running(f->c);
        }
    }
    return 0;
}

static bool rs_fabric_realize(RSCore *c, Error **errp)
{
    RSFabric *f;
    unsigned i;

    if (!c->p.local_fabric) {
        return true;
    }
    f = g_new0(RSFabric, 1);
    f->c = c;
    f->lfd = -1;
    if (!rs_fab_pcap_open(f, errp)) {
        g_free(f);
        return false;
    }
    f->bh = qemu_bh_new_guarded(rs_fab_tx_bh, f, c->guard);
    for (i = 0; i < RS_FAB_MAX_MEMBERS; i++) {
        f->m[i].f = f;
        f->m[i].fd = -1;
    }
    f->listener = (MemoryListener) {
        .name = "rdma-session-fabric",
        .region_add = rs_fab_region_add,
        .region_del = rs_fab_region_del,
        .commit = rs_fab_commit,
        .priority = MEMORY_LISTENER_PRIORITY_DEV_BACKEND,
    };
    migration_add_notifier(&f->mig, rs_fab_migration);
    c->fabric = f;
    return true;
}

static void rs_fabric_unrealize(RSCore *c)
{
    RSFabric *f = c->fabric;

    if (!f) {
        return;
    }
    rs_fab_leave(f, "unrealize");
    qemu_bh_delete(f->bh);
    migration_remove_notifier(&f->mig);
    if (f->listening) {
        memory_listener_unregister(&f->listener);
    }
    if (f->pcap_fd >= 0) {
        close(f->pcap_fd);
    }
    g_free(f->path);
    g_free(f);
    c->fabric = NULL;
}

/*
 * Reset: the peers lose us for a moment (as a link that goes down); we
 * join again once the VM runs (rs_fabric_vm_running).
 */
static void rs_fabric_quiesce(RSCore *c)
{
    if (c->fabric) {
        rs_fab_leave(c->fabric, "reset");
        c->fabric->rec = false;
        c->fabric->ref_ready = false;
    }
}

/* After a reset of a running VM (a reboot, FLR): join again now. */
static void rs_fabric_reset(RSCore *c)
{
    if (c->fabric && runstate_is_running()) {
        rs_fabric_vm_running(c);
    }
}

const RSFeature rs_feature_fabric = {
    .name = "fabric",
    .check = rs_fabric_check,
    .realize = rs_fabric_realize,
    .unrealize = rs_fabric_unrealize,
    .quiesce = rs_fabric_quiesce,
    .reset = rs_fabric_reset,
};

void rs_fabric_vm_running(RSCore *c)
{
    if (c->fabric && !c->fabric->joined && !c->fabric->migrating) {
        struct stat st;

        if (stat(c->p.local_fabric, &st) < 0 || !S_ISDIR(st.st_mode)) {
            warn_report_once("rdma-session: local fabric %s is gone; the"
                             " adapter stays on the wire",
                             c->p.local_fabric);
            return;
        }
        rs_fab_join(c->fabric);
    }
}

/* Migration: the peers fall back to the wire until the destination joins. */
void rs_fabric_vm_migrating(RSCore *c)
{
    if (c->fabric) {
        rs_fab_leave(c->fabric, "migration");
    }
}

void rs_fabric_addrs_changed(RSCore *c)
{
    RSFabric *f = c->fabric;
    unsigned i;

    for (i = 0; f && i < RS_FAB_MAX_MEMBERS; i++) {
        if (f->m[i].fd >= 0 && f->m[i].hello) {
            rs_fab_send_addrs(f, &f->m[i]);
        }
    }
}

/* Whether a frame with pkt's headers would go over the fabric now. */
bool rs_fabric_reaches(RSCore *c, const RSPkt *pkt)
{
    return c->fabric && rs_fab_member_of_pkt(c, pkt);
}

/*
 * Building a packet to pkt's destination with n bytes of payload: if it
 * goes to a member and is large, record the payload's pieces (rs_data_rw
 * calls rs_fabric_record) instead of copying them.
 */
bool rs_fabric_ref_begin(RSCore *c, const RSPkt *pkt, uint32_t n)
{
    RSFabric *f = c->fabric;

    if (!f || n < RS_FAB_REF_MIN || rs_gid_find(c, pkt->dgid) >= 0 ||
        !rs_fab_ref_op(pkt->opcode) || !rs_fab_member_of_pkt(c, pkt)) {
        return false;
    }
    f->rec = true;
    f->rec_fail = false;
    f->npieces = 0;
    f->rec_len = 0;
    f->rec_want = n;
    return true;
}

/* The frame built by reference is lost (x-drop-tx). */
void rs_fabric_ref_drop(RSCore *c)
{
    c->fabric->ref_ready = false;
}

/* True: the payload's pieces are recorded; false: copy it after all. */
bool rs_fabric_ref_end(RSCore *c)
{
    RSFabric *f = c->fabric;

    f->rec = false;
    /*
     * Every byte of the payload must have come from a recorded read (a
     * key type that fills the buffer otherwise is copied).
     */
    f->ref_ready = !f->rec_fail && f->npieces && f->rec_len == f->rec_want;
    return f->ref_ready;
}

/*
 * rs_data_rw reading len bytes at DMA address addr for a frame being
 * built by reference: true if recorded (nothing to copy).
 */
bool rs_fabric_record(RSCore *c, uint64_t addr, uint64_t len)
{
    RSFabric *f = c->fabric;
    RSFabPiece *last;
    unsigned i;

    if (!f || !f->rec || f->rec_fail) {
        return false;
    }
    for (i = 0; i < f->nlocal; i++) {
        const RSFabRegion *r = &f->local[i];

        if (addr >= r->addr && addr - r->addr < r->size &&
            len <= r->size - (addr - r->addr)) {
            break;
        }
    }
    last = f->npieces ? &f->pieces[f->npieces - 1] : NULL;
    if (i == f->nlocal) {
        f->rec_fail = true;
    } else if (last && last->addr + last->len == addr &&
               last->len + len <= UINT32_MAX) {
        last->len += len;
    } else if (f->npieces < RS_FAB_MAX_PIECES) {
        f->pieces[f->npieces++] = (RSFabPiece) { .addr = addr, .len = len };
    } else {
        f->rec_fail = true;
    }
    if (f->rec_fail) {
        return false;
    }
    f->rec_len += len;
    return true;
}

/*
 * rs_roce_xmit: a frame to a member goes over its channel (true);
 * false: the wire's.  A frame built by reference never goes elsewhere.
 */
bool rs_fabric_xmit(RSCore *c, const uint8_t *frame, size_t len,
                    const RSPkt *pkt)
{
    RSFabric *f = c->fabric;
    bool ref = f && f->ref_ready;
    RSFabMember *m;
    uint32_t mlen, i;
    uint8_t *b;

    if (!f) {
        return false;
    }
    f->ref_ready = false;
    m = rs_fab_member_of_pkt(c, pkt);
    if (!m) {
        if (ref) {
            f->cnt[RS_FAB_CNT_TX_LOST]++;   /* the member left meanwhile */
        }
        return ref;
    }
    if (!ref) {
        if (len > RS_WIRE_MAX_FRAME) {
            f->cnt[RS_FAB_CNT_TX_LOST]++;
            return true;
        }
        mlen = RS_FAB_HDR_LEN + len;
        b = rs_fab_tx_room(f, m, mlen);
        rs_fab_put_hdr(b, RS_FAB_MSG_FRAME, mlen);
        memcpy(b + RS_FAB_HDR_LEN, frame, len);
        rs_fab_pcap(f, frame, len, len);
        f->tx_inline++;
        f->tx_inline_bytes += len;
        trace_rdma_session_fabric_tx(m - f->m, frame[len > RS_BTH_OFF ?
                                     RS_BTH_OFF : 0], len, false);
        rs_fab_tx_added(f, mlen);
        return true;
    }
    if (len > RS_FAB_REF_HDR_MAX) {
        f->cnt[RS_FAB_CNT_TX_LOST]++;
        return true;
    }
    mlen = RS_FAB_HDR_LEN + 8 + ROUND_UP(len, 8) + f->npieces * 16;
    b = rs_fab_tx_room(f, m, mlen);
    rs_fab_put_hdr(b, RS_FAB_MSG_FRAME_REF, mlen);
    stw_le_p(b + 12, len);
    stw_le_p(b + 14, f->npieces);
    stl_le_p(b + 16, 0);
    memcpy(b + RS_FAB_HDR_LEN + 8, frame, len);
    memset(b + RS_FAB_HDR_LEN + 8 + len, 0, ROUND_UP(len, 8) - len);
    rs_fab_pcap_ref(f, frame, len, f->rec_len);
    b += RS_FAB_HDR_LEN + 8 + ROUND_UP(len, 8);
    for (i = 0; i < f->npieces; i++) {
        stq_le_p(b + i * 16, f->pieces[i].addr);
        stl_le_p(b + i * 16 + 8, f->pieces[i].len);
        stl_le_p(b + i * 16 + 12, 0);
    }
    f->tx_ref++;
    f->tx_ref_bytes += f->rec_len;
    trace_rdma_session_fabric_tx(m - f->m, frame[RS_BTH_OFF], f->rec_len,
                                 true);
    rs_fab_tx_added(f, mlen);
    return true;
}

/*
 * The end of a run of the engine (from rs_bundle_flush): the batch goes,
 * unless a received channel message's frames are being taken (it goes
 * after them).
 */
void rs_fabric_flush(RSCore *c)
{
    RSFabric *f = c->fabric;

    if (f && !f->rx_busy) {
        rs_fab_tx_flush(f);
    }
}

uint64_t *rs_fabric_counter(RSCore *c, unsigned which)
{
    static uint64_t zero;

    if (!c->fabric || which >= RS_FAB_COUNTERS) {
        zero = 0;
        return &zero;
    }
    return &c->fabric->cnt[which];
}

/* The members for QMP: index i's id and addresses; false past the end. */
bool rs_fabric_member(RSCore *c, unsigned i, uint64_t *id,
                      uint32_t *addrs, uint32_t *naddrs, uint32_t *nregions)
{
    RSFabMember *m;

    if (!c->fabric || i >= RS_FAB_MAX_MEMBERS) {
        return false;
    }
    m = &c->fabric->m[i];
    if (m->fd < 0 || !m->hello) {
        *naddrs = 0;
        *id = 0;
        return true;
    }
    *id = m->id;
    *naddrs = m->naddrs;
    *nregions = m->nregions;
    memcpy(addrs, m->addrs, m->naddrs * sizeof(uint32_t));
    return true;
}

/*
 * The fuzzers' entry: one message as if member 0 had sent it (no fds),
 * to the first adapter with local-fabric.  Member 0 is a fake one (no
 * socket) that said HELLO with one region, 64 KiB at DMA address
 * RS_FAB_FUZZ_ADDR of the fuzzer's buffer, and the address fuzz_ip.
 */
static uint8_t rs_fab_fuzz_ram[RS_FAB_FUZZ_SIZE];

uint8_t *rs_fabric_fuzz_input(const uint8_t *buf, size_t len,
                              uint32_t fuzz_ip)
{
    Object *obj = object_resolve_path_type("", "rdma-session", NULL);
    RSCore *c = obj ? rs_core_of(obj) : NULL;
    RSFabric *f = c ? c->fabric : NULL;
    RSFabMember *m;

    if (!f || len > RS_FAB_RX_MAX) {
        return rs_fab_fuzz_ram;
    }
    m = &f->m[0];
    if (m->fd >= 0) {
        return rs_fab_fuzz_ram;
    }
    if (!m->hello) {
        m->hello = true;
        m->id = 1;
        m->naddrs = 1;
        m->addrs[0] = fuzz_ip;
        m->nregions = 1;
        m->reg[0] = (RSFabRegion) {
            .addr = RS_FAB_FUZZ_ADDR, .size = sizeof(rs_fab_fuzz_ram),
            .fd = -1, .host = rs_fab_fuzz_ram,
        };
    }
    if (buf) {
        unsigned nmsgs;

        m->batch = true;        /* whatever HELLO the fuzzer sent */
        memcpy(f->rxbuf, buf, len);
        if (!rs_fab_input_msg(f, m, f->rxbuf, len, NULL, 0, &nmsgs)) {
            f->cnt[RS_FAB_CNT_GARBAGE]++;
        }
    }
    return rs_fab_fuzz_ram;
}
