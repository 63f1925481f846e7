// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdma_hello: a small librdmacm program, the kind of test a CI job runs in
 * VMs with the adapter (examples/own-software/README).  The client sends
 * ITERS messages of SIZE bytes with a known pattern over an RC connection;
 * the server checks every byte and sends each message back; the client
 * checks the echo.  Exits 0 only if every byte matched.
 *
 * Usage: rdma_hello -s [-p PORT]            server
 *        rdma_hello HOST [-p PORT] [-n ITERS] [-b SIZE]   client
 * Build: gcc -O2 -o rdma_hello rdma_hello.c -lrdmacm -libverbs
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

static uint8_t pattern(int iter, size_t i)
{
	return (uint8_t)(iter * 131 + i * 7 + (i >> 8));
}

static int wait_comp(struct rdma_cm_id *id, int recv)
{
	struct ibv_wc wc;
	int n;

	n = recv ? rdma_get_recv_comp(id, &wc) : rdma_get_send_comp(id, &wc);
	if (n <= 0 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "%s completion: %s\n", recv ? "receive" : "send",
			n <= 0 ? "none" : ibv_wc_status_str(wc.status));
		return -1;
	}
	return (int)wc.byte_len;
}

int main(int argc, char **argv)
{
	const char *port = "7471", *host = NULL;
	int server = 0, iters = 100, c, it, bad = 0;
	size_t size = 65536, i;
	struct rdma_addrinfo hints = { 0 }, *res;
	struct ibv_qp_init_attr attr = { 0 };
	struct rdma_cm_id *listen_id = NULL, *id;
	struct ibv_mr *mr;
	uint8_t *buf;

	while ((c = getopt(argc, argv, "sp:n:b:")) != -1) {
		switch (c) {
		case 's': server = 1; break;
		case 'p': port = optarg; break;
		case 'n': iters = atoi(optarg); break;
		case 'b': size = strtoul(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (!server) {
		if (optind >= argc)
			return 2;
		host = argv[optind];
	}
	hints.ai_port_space = RDMA_PS_TCP;
	if (server)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(host, port, &hints, &res)) {
		perror("rdma_getaddrinfo");
		return 1;
	}
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	if (server) {
		if (rdma_create_ep(&listen_id, res, NULL, &attr) ||
		    rdma_listen(listen_id, 1) || rdma_get_request(listen_id, &id)) {
			perror("rdma listen");
			return 1;
		}
	} else if (rdma_create_ep(&id, res, NULL, &attr)) {
		perror("rdma_create_ep");
		return 1;
	}
	buf = malloc(size);
	mr = buf ? rdma_reg_msgs(id, buf, size) : NULL;
	if (!mr) {
		perror("rdma_reg_msgs");
		return 1;
	}
	/* the first receive is posted before the connection exists */
	if (rdma_post_recv(id, NULL, buf, size, mr) ||
	    (server ? rdma_accept(id, NULL) : rdma_connect(id, NULL))) {
		perror("rdma connect");
		return 1;
	}
	for (it = 0; it < iters; it++) {
		if (!server) {
			for (i = 0; i < size; i++)
				buf[i] = pattern(it, i);
			if (rdma_post_send(id, NULL, buf, size, mr, 0) ||
			    wait_comp(id, 0) < 0)
				return 1;
		}
		if (wait_comp(id, 1) != (int)size)
			return 1;
		for (i = 0; i < size; i++)
			bad += buf[i] != pattern(it, i);
		if (it + 1 < iters || server) {
			if (rdma_post_recv(id, NULL, buf, size, mr))
				return 1;
		}
		if (server && (rdma_post_send(id, NULL, buf, size, mr, 0) ||
			       wait_comp(id, 0) < 0))
			return 1;
	}
	printf("rdma_hello %s: %d messages of %zu bytes, %d bad bytes, device %s\n",
	       server ? "server" : "client", iters, size, bad,
	       ibv_get_device_name(id->verbs->device));
	rdma_disconnect(id);
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	if (listen_id)
		rdma_destroy_ep(listen_id);
	rdma_freeaddrinfo(res);
	return bad ? 1 : 0;
}
