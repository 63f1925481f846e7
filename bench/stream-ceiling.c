/*
 * The ceiling of QEMU's -netdev stream backend on this machine: two
 * processes move Ethernet frames over a Unix stream socket the way two
 * QEMUs connected by -netdev stream do, and nothing else happens to the
 * frames.  The sender writes each frame with its 4-byte big-endian length
 * in one writev() (net/stream.c), or BATCH frames per writev(); the
 * receiver reads into a 69 KiB buffer and copies each frame out of it
 * whole, as net_fill_rstate() does, before the next read.  Both keep the
 * socket buffers at the kernel's defaults, as QEMU does.
 *
 * Usage: stream-ceiling [-s SECONDS] [-b BATCH] FRAME_BYTES...
 * Prints one line per frame size:
 *   CEILING frame=4154 batch=1 MB/s=1834.2 frames/s=441546 seconds=2.00
 * (MB = 10^6 bytes of frames, the length words not counted.)
 *
 * Copyright (c) 2026 rdma-session developers
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAME   (64 * 1024)
#define RX_BUF      (4096 + MAX_FRAME)  /* NET_BUFSIZE */
#define MAX_BATCH   64

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sender: frames until the receiver closes its end. */
static void sender(int fd, size_t len, int batch)
{
    static uint8_t frame[MAX_FRAME];
    struct iovec iov[2 * MAX_BATCH];
    uint32_t hdr = htonl(len);
    int i;

    memset(frame, 0x5a, len);
    for (i = 0; i < batch; i++) {
        iov[2 * i].iov_base = &hdr;
        iov[2 * i].iov_len = 4;
        iov[2 * i + 1].iov_base = frame;
        iov[2 * i + 1].iov_len = len;
    }
    for (;;) {
        size_t left = batch * (len + 4);
        struct iovec *v = iov;
        int n = 2 * batch;

        while (left) {
            ssize_t w = writev(fd, v, n);

            if (w < 0) {
                if (errno == EINTR) {
                    continue;
                }
                _exit(0);           /* EPIPE: the receiver is done */
            }
            left -= w;
            while (n && (size_t)w >= v->iov_len) {
                w -= v->iov_len;
                v++;
                n--;
            }
            if (n) {
                /* a short write: resume inside this iovec (on a copy) */
                static struct iovec rest[2 * MAX_BATCH];

                memmove(rest, v, n * sizeof(*v));
                rest[0].iov_base = (uint8_t *)rest[0].iov_base + w;
                rest[0].iov_len -= w;
                v = rest;
            }
        }
    }
}

/* Receiver: frames for secs seconds; returns the frames counted. */
static uint64_t receiver(int fd, size_t len, double secs, double *elapsed)
{
    static uint8_t rx[RX_BUF], out[MAX_FRAME];
    size_t have = 0, need = 4, got = 0;
    int in_frame = 0;
    uint64_t frames = 0;
    double t0 = now(), t = t0;

    while (t - t0 < secs) {
        ssize_t r = read(fd, rx, sizeof(rx));
        size_t off = 0;

        if (r <= 0) {
            if (r < 0 && errno == EINTR) {
                continue;
            }
            break;
        }
        /* net_fill_rstate(): length word, then the frame copied out */
        while (off < (size_t)r) {
            if (!in_frame) {
                size_t n = need - have < r - off ? need - have : r - off;

                have += n;
                off += n;
                if (have == 4) {
                    in_frame = 1;
                    got = 0;
                }
            } else {
                size_t n = len - got < r - off ? len - got : r - off;

                memcpy(out + got, rx + off, n);
                got += n;
                off += n;
                if (got == len) {
                    if (out[0] != 0x5a || out[len - 1] != 0x5a) {
                        fprintf(stderr, "stream-ceiling: corrupt frame\n");
                        exit(1);
                    }
                    frames++;
                    in_frame = 0;
                    have = 0;
                }
            }
        }
        if ((frames & 63) == 0) {
            t = now();
        }
    }
    *elapsed = now() - t0;
    return frames;
}

int main(int argc, char **argv)
{
    double secs = 2, elapsed;
    int batch = 1, opt, i;

    while ((opt = getopt(argc, argv, "s:b:")) != -1) {
        switch (opt) {
        case 's':
            secs = atof(optarg);
            break;
        case 'b':
            batch = atoi(optarg);
            break;
        default:
            goto usage;
        }
    }
    if (optind >= argc || secs <= 0 || batch < 1 || batch > MAX_BATCH) {
        goto usage;
    }
    signal(SIGPIPE, SIG_IGN);
    for (i = optind; i < argc; i++) {
        size_t len = strtoul(argv[i], NULL, 0);
        int sv[2];
        pid_t pid;
        uint64_t n;

        if (len < 64 || len > MAX_FRAME) {
            goto usage;
        }
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
            perror("socketpair");
            return 1;
        }
        pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            close(sv[1]);
            sender(sv[0], len, batch);
            _exit(0);
        }
        close(sv[0]);
        n = receiver(sv[1], len, secs, &elapsed);
        close(sv[1]);
        waitpid(pid, NULL, 0);
        printf("CEILING frame=%zu batch=%d MB/s=%.1f frames/s=%.0f "
               "seconds=%.2f\n", len, batch, n * len / elapsed / 1e6,
               n / elapsed, elapsed);
        fflush(stdout);
    }
    return 0;
usage:
    fprintf(stderr, "usage: stream-ceiling [-s SECONDS] [-b BATCH 1-%d] "
            "FRAME_BYTES (64-%d)...\n", MAX_BATCH, MAX_FRAME);
    return 2;
}
