/*
 * Shared parts of the in-guest verbs test programs (tests/guest/progs/).
 *
 * Each program rsv-FEATURE.c is built against rdma-core's staging tree by
 * scripts/guest-image.sh and lands in the guest image's /usr/bin.  It runs
 * once on each of two (or more) VMs: one side is the server (no -c), the
 * other connects to it (-c SERVER_IP) over TCP for the out-of-band
 * exchange of QP numbers, GIDs and keys.  Verdicts are the suites'
 * "CHECK NAME ok|fail DETAIL" lines (tests/guest/in-guest/lib.sh's ck),
 * NAME prefixed with -n PREFIX; the exit status is 0 when every check of
 * this side passed.
 *
 * Common options (rsv_parse): -d DEV (default: the first device), -g GID
 * index (default: the RoCE v2 GID of the first IPv4 address), -p TCP port
 * (default 18515), -c SERVER_IP (client), -n PREFIX, -t SECONDS (timeout of
 * each wait, default 30); a program's own options come after "--".
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef RSV_COMMON_H
#define RSV_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

struct rsv_opts {
	const char *dev;
	int gid_index;		/* -1: look it up */
	int port;
	const char *server;	/* NULL: this side is the server */
	const char *prefix;
	int timeout;		/* seconds */
	int argc;		/* the program's own arguments, after "--" */
	char **argv;
};

struct rsv_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr_ex attr;
	struct ibv_port_attr port_attr;
	union ibv_gid gid;
	int gid_index;
	const char *name;
};

/* What one side tells the other about itself and one buffer. */
struct rsv_peer_info {
	uint32_t qpn;
	uint32_t psn;
	union ibv_gid gid;
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
	uint32_t extra[4];	/* a program's own values */
};

void rsv_parse(struct rsv_opts *o, int argc, char **argv);

/* Print a verdict; false results count towards rsv_exit_status(). */
bool rsv_check(const struct rsv_opts *o, const char *name, bool ok,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int rsv_exit_status(void);
/* Print "rsv: ..." to stderr and exit 1: the setup cannot go on. */
void rsv_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* Open the device, allocate a PD, query the attributes and the GID. */
void rsv_open(const struct rsv_opts *o, struct rsv_dev *d);
void rsv_close(struct rsv_dev *d);

/* The out-of-band TCP connection: the server accepts one client. */
int rsv_oob(const struct rsv_opts *o);
/* Send mine, receive theirs (len bytes each); false on a broken link. */
bool rsv_xchg(int fd, const void *mine, void *theirs, size_t len);
/* Both sides meet: false if the other side is gone. */
bool rsv_sync(int fd);

/*
 * The flow label rsv_connect gives the path (0) and the max_rd_atomic it
 * asks for at RTS (1), unless a program sets them.
 */
extern uint32_t rsv_flow_label;
extern uint8_t rsv_max_rd_atomic;

/* An RC QP on cq (send and receive), with srq if not NULL. */
struct ibv_qp *rsv_rc_qp(struct rsv_dev *d, struct ibv_cq *cq,
			 struct ibv_srq *srq, uint32_t max_wr);
/* RESET -> INIT -> RTR -> RTS towards the peer; 0 or an errno. */
int rsv_rc_connect(struct rsv_dev *d, struct ibv_qp *qp, int access,
		   uint32_t my_psn, const struct rsv_peer_info *peer);
/*
 * The same with the attributes the QP type takes beyond the common ones:
 * rtr_mask's for RTR (RC's responder side: MAX_DEST_RD_ATOMIC,
 * MIN_RNR_TIMER), all of rts_mask's but STATE for RTS (RC's:
 * RSV_RTS_REQUESTER; an XRC target's: SQ_PSN and TIMEOUT only).
 */
#define RSV_RTS_REQUESTER (IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | \
			   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
			   IBV_QP_MAX_QP_RD_ATOMIC)
int rsv_connect(struct rsv_dev *d, struct ibv_qp *qp, int access,
		uint32_t my_psn, const struct rsv_peer_info *peer,
		int rtr_mask, int rts_mask);
/* Fill in qpn, psn and gid of this side. */
void rsv_info(const struct rsv_dev *d, const struct ibv_qp *qp, uint32_t psn,
	      struct rsv_peer_info *me);

/*
 * Poll one completion within timeout_ms: 1 with *wc filled in, 0 on
 * timeout, -1 if ibv_poll_cq failed.
 */
int rsv_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms);

/* Post one signaled work request with one SGE and wait for it: its status
 * (or -1 if the post failed, -2 on timeout). */
int rsv_post_wait(struct ibv_qp *qp, struct ibv_cq *cq,
		  struct ibv_send_wr *wr, int timeout_ms);

/* Fill buf with a pattern of seed; check it (the first bad offset or -1). */
/*
 * Port 1's hw_counter name of device dev, -1 if it does not exist.  It
 * waits 30 ms first: ib_core keeps what it read for 10 ms
 * (RDMA_HW_STATS_DEFAULT_LIFESPAN), else a read shows the one before.
 */
int64_t rsv_hw_counter(const char *dev, const char *name);

/* The GID index of IPv4 address ip on port 1, waiting timeout s for it. */
int rsv_gid_index(struct ibv_context *ctx, const char *ip, int timeout);

void rsv_fill(void *buf, size_t len, uint32_t seed);
long rsv_verify(const void *buf, size_t len, uint32_t seed);

#endif
