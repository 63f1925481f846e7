/*
 * UD multicast through ibv_attach_mcast: one sender, every other side a
 * receiver.  Each receiver joins the IP group (IP_ADD_MEMBERSHIP or
 * IPV6_JOIN_GROUP, as rdma_cm does for RoCE over IPv4, so that a
 * soft-RoCE receiver's IP layer takes the group's packets), attaches a UD QP to the group's GID and posts a
 * receive per message; a second UD QP of its own with receives posted is
 * not attached.  The sender sends N messages of known content (immediate
 * data: their index) to the group, DQPN 0xffffff; each receiver checks
 * the count (at most MAX_LOST lost), order, source QP, length and every
 * byte, and that the other QP got nothing.  Then the receivers detach and the sender sends again:
 * nothing may arrive.
 *
 * Usage: rsv-mcast [common options] [-- ROLE [TAG [GROUP]]]
 *   ROLE  send: the server (VM 1) sends to its RS_VM_COUNT - 1 clients
 *         (default); recv: the one client sends to the server
 *   TAG   the checks' prefix (default "ud"); GROUP an IPv4 or IPv6
 *         group (default 239.1.2.3), whose GID is ::ffff:GROUP or GROUP;
 *         with an IPv6 group, -g names the IPv6 GID (rdma_cm does not
 *         join IPv6 groups over RoCE v2)
 * Checks: TAG-send (sender), TAG-attach, TAG-recv, TAG-detach (receivers).
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rsv-common.h"

#define NMSG		64
#define SIZE		1000
#define SLOT		(40 + SIZE)	/* GRH area, then the data */
#define QKEY		0x11110000u
#define MAX_CLIENTS	8
#define MAX_LOST	2	/* of NMSG, UD being unreliable */

static const char *tag = "ud";

/* The check name TAG-what. */
static const char *cname(const char *what)
{
	static char buf[4][64];
	static int n;

	n = (n + 1) % 4;
	snprintf(buf[n], sizeof(buf[n]), "%s-%s", tag, what);
	return buf[n];
}

/*
 * The server's out-of-band connections: n clients on one listening socket
 * (rsv_oob takes one and closes it, which would reset the others).
 */
static void oob_accept(const struct rsv_opts *o, int n, int *fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(o->port) };
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1, i;
	struct pollfd p = { .fd = ls, .events = POLLIN };

	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, n))
		rsv_die("listen on port %d: %s", o->port, strerror(errno));
	for (i = 0; i < n; i++) {
		if (poll(&p, 1, o->timeout * 1000) != 1)
			rsv_die("%d of %d clients on port %d within %d s", i, n,
				o->port, o->timeout);
		fd[i] = accept(ls, NULL, NULL);
		if (fd[i] < 0)
			rsv_die("accept: %s", strerror(errno));
	}
	close(ls);
}

static struct ibv_qp *ud_qp(struct rsv_dev *d, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_UD,
		.cap = {
			.max_send_wr = 16,
			.max_recv_wr = NMSG + 8,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qkey = QKEY,
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &ia);

	if (!qp)
		rsv_die("ibv_create_qp UD: %s", strerror(errno));
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		rsv_die("UD QP to INIT: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		rsv_die("UD QP to RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x123;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		rsv_die("UD QP to RTS: %s", strerror(errno));
	return qp;
}

static void post_recvs(struct ibv_qp *qp, uint8_t *buf, struct ibv_mr *mr)
{
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct ibv_sge sge;
	int i;

	for (i = 0; i < NMSG; i++) {
		sge = (struct ibv_sge){ (uintptr_t)(buf + i * SLOT), SLOT,
					mr->lkey };
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(qp, &wr, &bad))
			rsv_die("ibv_post_recv: %s", strerror(errno));
	}
}

/*
 * Join the IP group of mgid on the interface of the GID in use (IPv4: by
 * its address; IPv6: $RS_IFACE's, else the route's); the socket or
 * -errno.
 */
static int join_group(const struct rsv_dev *d, const union ibv_gid *mgid,
		      bool v6)
{
	const char *ifname = getenv("RS_IFACE");
	int sock = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0), err;

	if (sock < 0)
		return -errno;
	if (v6) {
		struct ipv6_mreq m6 = {
			.ipv6mr_interface = ifname ? if_nametoindex(ifname) : 0,
		};

		memcpy(&m6.ipv6mr_multiaddr, mgid->raw, 16);
		err = setsockopt(sock, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m6,
				 sizeof(m6));
	} else {
		struct ip_mreq m4;

		memcpy(&m4.imr_multiaddr, &mgid->raw[12], 4);
		memcpy(&m4.imr_interface, &d->gid.raw[12], 4);
		err = setsockopt(sock, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m4,
				 sizeof(m4));
	}
	if (err) {
		err = -errno;
		close(sock);
		return err;
	}
	return sock;
}

/* Send n messages, message i with seed base + i; 0 or the first error. */
static int send_all(const struct rsv_opts *o, struct ibv_qp *qp,
		    struct ibv_cq *cq, struct ibv_ah *ah, uint8_t *buf,
		    struct ibv_mr *mr, int n, uint32_t base)
{
	struct ibv_send_wr wr = { 0 };
	struct ibv_sge sge;
	int i, st;

	for (i = 0; i < n; i++) {
		rsv_fill(buf, SIZE, base + i);
		sge = (struct ibv_sge){ (uintptr_t)buf, SIZE, mr->lkey };
		memset(&wr, 0, sizeof(wr));
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htonl(base + i);
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = 0xffffff;
		wr.wr.ud.remote_qkey = QKEY;
		st = rsv_post_wait(qp, cq, &wr, o->timeout * 1000);
		if (st)
			return st;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *role = "send", *group = "239.1.2.3";
	struct rsv_peer_info me = { 0 }, peer;
	struct ibv_cq *cq, *ocq;
	struct ibv_qp *qp, *oqp = NULL;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	union ibv_gid mgid;
	struct rsv_opts o;
	struct rsv_dev d;
	char name[64] = "";
	int fd[MAX_CLIENTS], nfd = 1, i, sock = -1, st, err;
	bool sender, v6;
	uint8_t *buf;

	rsv_parse(&o, argc, argv);
	if (o.argc > 0)
		role = o.argv[0];
	if (o.argc > 1)
		tag = o.argv[1];
	if (o.argc > 2)
		group = o.argv[2];
	if (strcmp(role, "send") && strcmp(role, "recv"))
		rsv_die("ROLE must be send or recv");
	/* The group's RoCE v2 GID: ::ffff:GROUP or the IPv6 group */
	memset(&mgid, 0, sizeof(mgid));
	v6 = strchr(group, ':') != NULL;
	if (v6 ? inet_pton(AF_INET6, group, mgid.raw) != 1 :
	    inet_pton(AF_INET, group, &mgid.raw[12]) != 1)
		rsv_die("bad group %s", group);
	if (!v6)
		mgid.raw[10] = mgid.raw[11] = 0xff;
	sender = !strcmp(role, "send") == !o.server;
	if (!o.server && getenv("RS_VM_COUNT"))
		nfd = atoi(getenv("RS_VM_COUNT")) - 1;
	if (nfd < 1 || nfd > MAX_CLIENTS || (nfd > 1 && !sender))
		rsv_die("%d clients: one receiving server has one client", nfd);

	rsv_open(&o, &d);
	buf = aligned_alloc(4096, NMSG * SLOT * 2);
	memset(buf, 0, NMSG * SLOT * 2);
	mr = ibv_reg_mr(d.pd, buf, NMSG * SLOT * 2, IBV_ACCESS_LOCAL_WRITE);
	cq = ibv_create_cq(d.ctx, 2 * NMSG + 16, NULL, NULL, 0);
	ocq = ibv_create_cq(d.ctx, 2 * NMSG + 16, NULL, NULL, 0);
	if (!mr || !cq || !ocq)
		rsv_die("ibv_reg_mr / ibv_create_cq failed");
	qp = ud_qp(&d, cq);
	rsv_info(&d, qp, 0, &me);
	if (o.server)
		fd[0] = rsv_oob(&o);
	else
		oob_accept(&o, nfd, fd);
	for (i = 0; i < nfd; i++) {
		if (!rsv_xchg(fd[i], &me, &peer, sizeof(me)))
			rsv_die("out-of-band exchange failed");
	}

	if (sender) {
		struct ibv_ah_attr aa = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .dgid = mgid, .sgid_index = d.gid_index,
				 .hop_limit = 64 },
		};
		struct ibv_ah *ah = ibv_create_ah(d.pd, &aa);

		/* Receivers attached, receives posted. */
		for (i = 0; i < nfd; i++)
			if (!rsv_sync(fd[i]))
				rsv_die("a receiver is gone");
		st = ah ? send_all(&o, qp, cq, ah, buf, mr, NMSG, 1) : -3;
		rsv_check(&o, cname("send"), !st,
			  "%s qpn %u: %d messages of %d bytes to %s: %s", d.name,
			  me.qpn, NMSG, SIZE, group, !ah ? "no AH" :
			  st ? ibv_wc_status_str(st) : "sent");
		for (i = 0; i < nfd; i++)
			rsv_sync(fd[i]);		/* sent */
		for (i = 0; i < nfd; i++)
			rsv_sync(fd[i]);		/* detached */
		if (ah && !st)
			send_all(&o, qp, cq, ah, buf, mr, 4, 1000);
		for (i = 0; i < nfd; i++)
			rsv_sync(fd[i]);		/* sent again */
		if (ah)
			ibv_destroy_ah(ah);
	} else {
		long bad = -1;
		int n = 0, wrong = 0, others = 0, lost = 0, first_lost = 0;
		uint32_t next = 1;	/* the lowest index still expected */

		post_recvs(qp, buf, mr);
		oqp = ud_qp(&d, ocq);
		post_recvs(oqp, buf + NMSG * SLOT, mr);
		sock = join_group(&d, &mgid, v6);
		err = sock < 0 ? -sock : 0;
		if (!err)
			err = ibv_attach_mcast(qp, &mgid, 0);
		rsv_check(&o, cname("attach"), !err, "qpn %u to %s: %s", me.qpn, group,
			  err ? strerror(err) : "attached");
		if (!rsv_sync(fd[0]) || !rsv_sync(fd[0]))
			rsv_die("the sender is gone");
		/*
		 * All sent: take what arrived, in order.  UD delivery is
		 * unreliable: a datagram may be lost (a soft-RoCE receiver's
		 * virtio-net applies a new group to its filter after the join
		 * returns), but what arrives must be in order and whole.
		 */
		for (; n < NMSG; n++) {
			uint32_t imm;

			st = rsv_poll(cq, &wc, n ? 5000 : o.timeout * 1000);
			if (st != 1)
				break;
			imm = ntohl(wc.imm_data);
			if (wc.status || wc.wr_id != n || imm < next ||
			    imm > NMSG || !(wc.wc_flags & IBV_WC_WITH_IMM) ||
			    wc.byte_len != SLOT || wc.src_qp != peer.qpn ||
			    wc.qp_num != me.qpn) {
				wrong++;
				snprintf(name, sizeof(name),
					 "message %d: %s imm %u len %u src %u",
					 n, ibv_wc_status_str(wc.status),
					 imm, wc.byte_len, wc.src_qp);
				continue;
			}
			if (imm > next && !lost)
				first_lost = next;
			lost += imm - next;
			next = imm + 1;
			bad = rsv_verify(buf + n * SLOT + 40, SIZE, imm);
			if (bad >= 0)
				break;
		}
		if (next <= NMSG && !lost)
			first_lost = next;
		lost += NMSG + 1 - next;
		while (rsv_poll(ocq, &wc, 100) == 1)
			others++;
		rsv_check(&o, cname("recv"), lost <= MAX_LOST && !wrong &&
			  bad < 0 && !others,
			  "%d of %d messages from qpn %u (at most %d may be lost: %d lost, the first #%d), %d wrong%s%s, first difference %ld; unattached QP got %d",
			  n, NMSG, peer.qpn, MAX_LOST, lost, first_lost, wrong,
			  wrong ? ": " : "", wrong ? name : "", bad, others);

		err = ibv_detach_mcast(qp, &mgid, 0);
		if (!rsv_sync(fd[0]) || !rsv_sync(fd[0]))
			rsv_die("the sender is gone");
		n = 0;
		while (rsv_poll(cq, &wc, 1000) == 1)
			n++;
		rsv_check(&o, cname("detach"), !err && !n,
			  "detach: %s; %d messages after it", strerror(err), n);
	}
	for (i = 0; i < nfd; i++)
		close(fd[i]);
	if (sock >= 0)
		close(sock);
	if (oqp)
		ibv_destroy_qp(oqp);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(ocq);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	free(buf);
	rsv_close(&d);
	return rsv_exit_status();
}
