/*
 * rdma-session RoCEv2 packet fuzzer
 *
 * Brings the adapter up as a driver does (admin queue, GIDs, a PD, CQs,
 * MRs with every access right, RC QPs over loopback, RC/UC/UD QPs paired
 * with a remote GID that exists only in this fuzzer, an RC QP over IPv6,
 * a bound type 1 and type 2 memory window, an XRC initiator and an XRC
 * target with an XRC SRQ, a DC initiator connecting to the remote, two
 * DC targets (keys 0 and RSF_DC_KEY2) on a basic SRQ, an explicit and an
 * implicit on-demand-paging MR with half their pages resolved, an
 * indirect and a pattern key over those MRs, requests outstanding
 * towards the remote) and then feeds the input to the adapter as frames
 * from the network, handed to it by its netdev (a socket netdev whose
 * socket carries nothing: the fuzzer sends and sees frames on the
 * netdev's side in-process, see RSFWire): RoCEv2
 * frames built from the input with valid Ethernet/IP/UDP/BTH headers and
 * a correct ICRC, so that the input reaches the responder, the completer
 * and the READ/atomic resources, plus raw frames for the parser.  Work
 * requests, receives, CQ doorbells and virtual time come from the input
 * too.  Every input starts from a system reset and the same bring-up, so
 * a crash reproduces from its input alone.  Page faults are answered (or
 * not, or refused) by the input too, as a driver would, and the input
 * re-registers keys in place (REREG_MR) between its frames.
 *
 * The input also builds BUNDLE frames (opcode 0xc7) out of the frames of
 * its next operations (valid inner ICRCs, up to the 64 KiB a bundle
 * carries), sends frames from other (rotating) source addresses, HELLO
 * (0xc5) and HELLO_REPLY (0xc6) frames, and answers the HELLOs the
 * adapter sends with the right nonce, so the bundle negotiation reaches
 * its OK state and the adapter sends bundles.
 *
 * Amplification is a failure, not only crashes (the bounds are those of
 * docs/specs/rdma-session.rst; the input aborts with a message starting
 * "rdma-session fuzz: amplification", which libFuzzer records as a
 * crash):
 * - work per received frame, every input: the RoCE packets the adapter
 *   sends while it handles one frame from the wire (a bundle counts as
 *   one frame of n inner packets; each packet of a bundle the adapter
 *   sends counts) are at most 32 + 2 n + 1 (32 READ/atomic responses,
 *   one ACK/NAK/DC reply/HELLO_REPLY per inner packet, one HELLO).
 *   Frames are handed to the adapter directly (qemu_send_packet) and
 *   what it sends is seen as it sends it, so this counts the sends of
 *   the receive callback alone, before any bottom half or timer runs;
 * - keyless inputs (bit 7 of the input's first byte): the bring-up
 *   registers no MR or key with a remote access right and posts no work
 *   request, and the input's send work requests are ignored, so all the
 *   adapter sends is caused by peers.  Over the whole input: bytes of
 *   the frames it sends other than HELLOs and CNPs <= bytes it received
 *   + 8 per received RoCE packet; CNPs (ECN's answer to a CE mark, also
 *   inside bundles) <= received RoCE packets; HELLOs <= 8 + 10 per
 *   second of virtual time;
 *   a HELLO to an address that never answered an unpadded HELLO of the
 *   adapter with its nonce is at most 80 bytes.
 * Bit 6 of the first byte makes the wire take only 208 KiB per main-loop
 * round (a socket buffer: the adapter's sends then wait), else 16 MiB.
 *
 * Input: commands separated by "RSFZ"; a command's first byte selects
 * the operation (the first command's: its bits 0-5), the rest are its
 * operands (see rsf_ops[]).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */


#include "qemu/osdep.h"
#include "rdma_session_fuzz.h"
#include "hw/rdma-session/rdma-session-fabric-fuzz.h"

static int rsf_sock[2] = { -1, -1 };
RSFState rsf;

static RSFOp *const rsf_ops[] = {
    rsf_op_roce, rsf_op_roce, rsf_op_roce, rsf_op_bth, rsf_op_raw,
    rsf_op_clock, rsf_op_post_send, rsf_op_post_recv, rsf_op_cq,
    rsf_op_odp, rsf_op_bundle, rsf_op_spoof, rsf_op_hello, rsf_op_reply,
    rsf_op_rereg, rsf_op_dbrec,
};

RSFOp *rsf_op_get(uint8_t sel)
{
    return rsf_ops[sel % ARRAY_SIZE(rsf_ops)];
}

/* The rdma-session-fabric target: commands go to rsf_fab_cmd. */
static bool rsf_fab_mode;

/*
 * A channel message from the fake member is peer input as a wire frame
 * is: the keyless bounds count its bytes and each message in it (the
 * adapter's answers go on the wire, the fake member having no socket).
 */
static void rsf_fab_input(const uint8_t *msg, size_t len, uint32_t ip)
{
    size_t off = 0, sub;
    uint64_t n = 0;

    while (len - off >= RS_FAB_HDR_LEN) {
        sub = ldl_le_p(msg + off + 8);
        if (sub < RS_FAB_HDR_LEN || sub > len - off) {
            break;
        }
        off += sub;
        n++;
    }
    rsf_wire.rx_bytes += len;
    rsf_wire.rx_roce += MAX(n, 1);
    rs_fabric_fuzz_input(msg, len, ip);
}

/*
 * A command of the rdma-session-fabric target, to the adapter's local
 * fabric as its fake member 0 (RSF_QP_RC's peer, 10.0.0.2) sends it:
 * d[0] even: d[1..] is a channel message as it comes (HELLO, ADDRS,
 * FRAME, FRAME_REF, a batch of them or garbage); d[0] odd: a FRAME_REF whose
 * headers are a frame from the peer to the adapter with a correct ICRC
 * and d[3..3 + h) (h = 12 + d[1] % 64) from the BTH on, the fake member's
 * RAM filled with d[2], then up to 16 pieces of 4 bytes each (offset in
 * units of 4 bytes from the region's start, half of the range outside it;
 * length up to 4096); d[0] & 2 as well: that message twice in one batch,
 * the second's length field moved by (int8_t)(d[1] ^ d[2]) if d[0] & 4
 * (a batch whose lengths do not tile it).
 */
static void rsf_fab_cmd(const uint8_t *d, size_t len)
{
    uint32_t ip = ldl_be_p(rsf_ip_remote);
    uint8_t msg[2 * (RS_FAB_HDR_LEN + 8 + 128 + 16 * 16)];
    uint8_t frame[12 + 64 + 128];
    size_t h, flen, n, i, off;
    uint8_t *ram, op;
    int8_t skew;

    if (len < 1) {
        return;
    }
    if (!(d[0] & 1)) {
        rsf_fab_input(d + 1, len - 1, ip);
        return;
    }
    if (len < 3 + 12) {
        return;                 /* the headers need a BTH at least */
    }
    op = d[0];
    skew = (int8_t)(d[1] ^ d[2]);
    h = MIN(len - 3, 12 + d[1] % 64u);
    ram = rs_fabric_fuzz_input(NULL, 0, ip);
    memset(ram, d[2], RS_FAB_FUZZ_SIZE);
    flen = rsf_build(frame, &rsf.qp[RSF_QP_RC], 0xc000, d + 3, h, false);
    d += 3 + h;
    len -= 3 + h;
    n = MAX(MIN(len / 4, 16), 1);
    off = RS_FAB_HDR_LEN + 8 + ROUND_UP(flen, 8);
    memset(msg, 0, sizeof(msg));
    stl_le_p(msg, RS_FAB_MAGIC);
    stw_le_p(msg + 4, RS_FAB_MSG_FRAME_REF);
    stl_le_p(msg + 8, off + n * 16);
    stw_le_p(msg + 12, flen);
    stw_le_p(msg + 14, n);
    memcpy(msg + RS_FAB_HDR_LEN + 8, frame, flen);
    for (i = 0; i < n; i++) {
        uint16_t a = len >= 4 * i + 4 ? lduw_le_p(d + 4 * i) : 0;
        uint16_t l = len >= 4 * i + 4 ? lduw_le_p(d + 4 * i + 2) : 1024;

        stq_le_p(msg + off + i * 16, RS_FAB_FUZZ_ADDR + a * 4ull);
        stl_le_p(msg + off + i * 16 + 8, l % 4097);
    }
    len = off + n * 16;
    if (op & 2) {
        memcpy(msg + len, msg, len);
        if (op & 4) {
            stl_le_p(msg + len + 8, len + skew);
        }
        len *= 2;
    }
    rsf_fab_input(msg, len, ip);
}

static void rsf_fuzz(QTestState *s, const unsigned char *data, size_t size)
{
    const unsigned char *cmd = data, *next;
    size_t sep = strlen(RSF_SEPARATOR);
    RSFWire *w = &rsf_wire;

    rsf_wire_init();
    w->keyless = size && (data[0] & 0x80);
    w->budget = size && (data[0] & 0x40) ? RSF_WIRE_SMALL : RSF_WIRE_BIG;
    w->used = 0;
    w->t0 = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    w->tx_bytes = w->tx_hellos = w->rx_bytes = w->rx_roce = 0;
    w->tx_cnps = 0;
    w->nhello = w->nanswered = 0;
    w->tx_frames = w->tx_bundles = w->rx_frames = 0;
    w->max_f_pkts = w->max_f_inner = 0;
    rsf_bun.on = false;
    rsf_bun.n = rsf_bun.len = 0;
    rsf_bring_up(&rsf, s);
    while (cmd && size) {
        size_t n;

        next = memmem(cmd, size, RSF_SEPARATOR, sep);
        n = next ? next - cmd : size;
        if (n) {
            uint8_t sel = cmd == data ? cmd[0] & 0x3f : cmd[0];

            if (rsf_fab_mode && cmd != data) {
                rsf_fab_cmd(cmd, n);
            } else {
                rsf_op_get(sel)(&rsf, s, cmd + 1, n - 1);
            }
            rsf_idle(s);
        }
        if (!next) {
            break;
        }
        size -= n + sep;
        cmd = next + sep;
    }
    rsf_bundle_emit();
    /* Everything the wire refused goes before the keyless totals. */
    w->budget = SIZE_MAX;
    rsf_settle(s);
    rsf_wire_check_end();
    rsf_tear_down(&rsf, s);
}

static GString *rsf_cmdline(FuzzTarget *t)
{
    GString *cmd_line = g_string_new(NULL);
    int ret = socketpair(PF_UNIX, SOCK_DGRAM, 0, rsf_sock);

    g_assert_cmpint(ret, ==, 0);
    g_unix_set_fd_nonblocking(rsf_sock[0], true, NULL);
    g_string_printf(cmd_line,
        TARGET_NAME " -display none -machine q35,accel=qtest -nodefaults "
        "-m 128M -device rdma-session,addr=04.0,netdev=n0,mac=" RS_QOS_MAC_STR
        ",max-qps=20,max-cqs=4,max-mrs=12,max-pds=3,max-ahs=2,max-sessions=2,"
        "max-session-groups=2,max-gids=4,max-srqs=3,max-xrcds=2,db-pages=2,"
        "dc-contexts=3,dc-idle=100,"
        "max-mr-pages=64,num-comp-vectors=1,mtu=1024,odp-pages=64,"
        "odp-fault-timeout=50 "
        "-device e1000e,addr=05.0 "
        "-netdev socket,fd=%d,id=n0", rsf_sock[1]);
    /* RS_FUZZ_ARGS: more QEMU options, e.g. "-d trace:rdma_session_odp*". */
    if (getenv("RS_FUZZ_ARGS")) {
        g_string_append_printf(cmd_line, " %s", getenv("RS_FUZZ_ARGS"));
    }
    return cmd_line;
}

/*
 * The same adapter with local-fabric (a directory of its own) and its
 * RAM in a shared memfd: the control channel's messages and by-reference
 * frames (rsf_fab_cmd).  The first command is the packet fuzzer's (it
 * may bring traffic up); the others go to the fabric.
 */
static GString *rsf_fab_cmdline(FuzzTarget *t)
{
    GString *cmd_line = rsf_cmdline(t);
    g_autofree char *dir = g_dir_make_tmp("rs-fuzz-fabric-XXXXXX", NULL);
    g_autofree char *prop = g_strdup_printf(",local-fabric=%s", dir);
    const char *at = strstr(cmd_line->str, "odp-fault-timeout=50 ");

    g_assert_nonnull(dir);
    g_assert_nonnull(at);
    g_string_insert(cmd_line, at - cmd_line->str +
                    strlen("odp-fault-timeout=50"), prop);
    g_string_append(cmd_line, " -object memory-backend-memfd,id=rsfm,"
                    "size=128M,share=on -machine memory-backend=rsfm");
    return cmd_line;
}

static void rsf_fab_fuzz(QTestState *s, const unsigned char *data,
                         size_t size)
{
    rsf_fab_mode = true;
    rsf_fuzz(s, data, size);
}

static void register_rdma_session_fuzz_targets(void)
{
    fuzz_add_target(&(FuzzTarget){
        .name = "rdma-session-fabric",
        .description = "Fuzz the rdma-session adapter's local fabric: "
        "control-channel messages and by-reference frames from a member, "
        "on the packet fuzzer's adapter with local-fabric",
        .get_init_cmdline = rsf_fab_cmdline,
        .fuzz = rsf_fab_fuzz,
    });
    fuzz_add_target(&(FuzzTarget){
        .name = "rdma-session-packet",
        .description = "Fuzz the rdma-session adapter's RoCEv2 receive path "
        "(parser, responder, completer) with frames from the network, on "
        "an adapter brought up with loopback and remote QPs",
        .get_init_cmdline = rsf_cmdline,
        .fuzz = rsf_fuzz,
    });
}

fuzz_target_init(register_rdma_session_fuzz_targets);
