/*
 * rs-mpi-check: an MPI program for N >= 2 ranks (one or more per VM)
 * that moves data with point-to-point, collective and one-sided
 * operations and an application-like halo exchange, and checks every
 * byte it receives.  Point-to-point and one-sided steps go around the
 * ring of ranks (rank r to r+1), so with ranks placed by slot on two
 * hosts some pairs cross between the hosts and some stay on one.
 *
 * Each step counts its errors on every rank; rank 0 prints one line per
 * step, "CHECK mpi-STEP ok|fail DETAIL", once MPI_Allreduce has summed
 * the ranks' counts (a step that hangs or aborts leaves no line, which
 * the suite reports as "no result").  Then a ping-pong's latency (8 B) and
 * bandwidth (1 MiB) between rank 0 and the first rank on another host as
 * "MPI-PERF name value unit" lines.
 *
 * The point-to-point sizes go from eager (1 B) past UCX's rendezvous
 * threshold (64 KiB and more: the data then moves by RDMA READ or WRITE
 * of the receive or send buffer, not through bounce buffers).
 *
 * Built by tests/guest/stacks_mpi.py with mpicc in the Debian guests (2
 * and 4 ranks).
 *
 * Usage: mpirun -np N ... rs-mpi-check [ROUNDS]   (default 2)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;
/* the ping-pong's peer of rank 0 */
static int perf_peer = 1;

/* The byte at offset i of a message of size n, round r, from rank src. */
static uint8_t pat(int src, size_t n, int r, size_t i)
{
    uint64_t x = (uint64_t)i * 2654435761u ^ (uint64_t)n * 40503u ^
                 (uint64_t)(r + 1) * 977u ^ (uint64_t)(src + 1) * 0x9e37u;
    return (uint8_t)(x ^ x >> 13 ^ x >> 29);
}

static void fill(uint8_t *b, int src, size_t n, int r)
{
    for (size_t i = 0; i < n; i++) {
        b[i] = pat(src, n, r, i);
    }
}

/* Mismatching bytes; the first one described in where (if any). */
static long verify(const uint8_t *b, int src, size_t n, int r, char *where,
                   size_t wlen)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (b[i] != pat(src, n, r, i)) {
            if (!bad && where[0] == '\0') {
                snprintf(where, wlen, "rank %d: %zu B from %d round %d: "
                         "byte %zu is 0x%02x, not 0x%02x", rank, n, src, r, i,
                         b[i], pat(src, n, r, i));
            }
            bad++;
        }
    }
    return bad;
}

/*
 * All ranks' error counts summed; rank 0 prints the CHECK line (the
 * detail of the first error found by rank 0 and by the first other rank
 * that found one, else ok_detail).
 */
static void report(const char *name, long bad, const char *where,
                   const char *ok_detail)
{
    long total = 0;
    char other[256] = "";
    char w[256];
    char *all = rank == 0 ? calloc(nranks, sizeof(w)) : NULL;

    MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    /* the other ranks' first errors, for rank 0 to print */
    memset(w, 0, sizeof(w));
    snprintf(w, sizeof(w), "%s", where);
    MPI_Gather(w, sizeof(w), MPI_CHAR, all, sizeof(w), MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        for (int s = 1; s < nranks && !other[0]; s++) {
            snprintf(other, sizeof(other), "%s", all + s * sizeof(w));
        }
        free(all);
    }
    if (rank == 0) {
        if (total == 0) {
            printf("CHECK mpi-%s ok %s\n", name, ok_detail);
        } else {
            printf("CHECK mpi-%s fail %ld bad bytes or values; %s%s%s\n",
                   name, total, where, where[0] && other[0] ? "; " : "",
                   other);
        }
        fflush(stdout);
    }
}

static const size_t sizes[] = {1, 64, 4096, 8192, 65536, 65537, 262144,
                               1048576 + 7};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAXSZ (1048576 + 7)

/* Each rank in turn sends each size to the next rank (rank 0 to 1, then
 * 1 to 0 with two ranks). */
static void step_sendrecv(int rounds, uint8_t *buf)
{
    long bad = 0;
    char where[256] = "";

    for (int r = 0; r < rounds; r++) {
        for (size_t k = 0; k < NSIZES; k++) {
            size_t n = sizes[k];
            for (int src = 0; src < nranks; src++) {
                if (rank == src) {
                    fill(buf, src, n, r);
                    MPI_Send(buf, (int)n, MPI_BYTE, (src + 1) % nranks,
                             (int)k, MPI_COMM_WORLD);
                } else if (rank == (src + 1) % nranks) {
                    MPI_Status st;
                    int cnt = -1;
                    memset(buf, 0xee, n + 16);
                    MPI_Recv(buf, (int)n + 16, MPI_BYTE, src, (int)k,
                             MPI_COMM_WORLD, &st);
                    MPI_Get_count(&st, MPI_BYTE, &cnt);
                    if (cnt != (int)n) {
                        if (!where[0]) {
                            snprintf(where, sizeof(where), "rank %d: received "
                                     "%d B, not %zu", rank, cnt, n);
                        }
                        bad++;
                    }
                    bad += verify(buf, src, n, r, where, sizeof(where));
                    for (size_t i = n; i < n + 16; i++) {
                        if (buf[i] != 0xee) {
                            if (!where[0]) {
                                snprintf(where, sizeof(where), "rank %d: "
                                         "byte %zu after a %zu B message "
                                         "written", rank, i - n, n);
                            }
                            bad++;
                        }
                    }
                }
            }
        }
    }
    report("send-recv", bad, where,
           "1 B to 1 MiB+7 each way, eager and rendezvous, data checked");
}

/* All ranks send to the next and receive from the previous at once
 * (Isend/Irecv), every size. */
static void step_exchange(int rounds, uint8_t *sbuf, uint8_t *rbuf)
{
    long bad = 0;
    char where[256] = "";
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;

    for (int r = 0; r < rounds; r++) {
        for (size_t k = 0; k < NSIZES; k++) {
            size_t n = sizes[k];
            MPI_Request req[2];
            fill(sbuf, rank, n, r + 100);
            memset(rbuf, 0, n);
            MPI_Irecv(rbuf, (int)n, MPI_BYTE, prev, 1000 + (int)k,
                      MPI_COMM_WORLD, &req[0]);
            MPI_Isend(sbuf, (int)n, MPI_BYTE, next, 1000 + (int)k,
                      MPI_COMM_WORLD, &req[1]);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            bad += verify(rbuf, prev, n, r + 100, where, sizeof(where));
        }
    }
    report("exchange", bad, where,
           "Isend/Irecv around the ring at once, 1 B to 1 MiB+7, data checked");
}

static void step_collectives(uint8_t *buf)
{
    long bad = 0;
    char where[256] = "";
    const size_t n = 1048576;
    const int cnt = 65536;
    int *in = malloc(cnt * sizeof(int)), *out = malloc(cnt * sizeof(int));
    int *all = malloc((size_t)nranks * cnt * sizeof(int));
    /* sum over s of i * (s + 1) + s */
    const long tri = (long)nranks * (nranks + 1) / 2;
    const long tri0 = (long)nranks * (nranks - 1) / 2;

    /* Bcast 1 MiB from each rank in turn */
    for (int root = 0; root < nranks; root++) {
        if (rank == root) {
            fill(buf, root, n, 7);
        } else {
            memset(buf, 0, n);
        }
        MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
        bad += verify(buf, root, n, 7, where, sizeof(where));
    }
    /* Allreduce of 64 Ki ints */
    for (int i = 0; i < cnt; i++) {
        in[i] = i * (rank + 1) + rank;
    }
    MPI_Allreduce(in, out, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < cnt; i++) {
        if (out[i] != (int)(i * tri + tri0)) {
            if (!where[0]) {
                snprintf(where, sizeof(where), "rank %d: allreduce[%d] = %d, "
                         "not %ld", rank, i, out[i], i * tri + tri0);
            }
            bad++;
        }
    }
    /* Allgather of 64 Ki ints from each */
    MPI_Allgather(in, cnt, MPI_INT, all, cnt, MPI_INT, MPI_COMM_WORLD);
    for (int s = 0; s < nranks; s++) {
        for (int i = 0; i < cnt; i++) {
            if (all[s * cnt + i] != i * (s + 1) + s) {
                if (!where[0]) {
                    snprintf(where, sizeof(where), "rank %d: allgather from "
                             "%d [%d] = %d", rank, s, i, all[s * cnt + i]);
                }
                bad++;
            }
        }
    }
    /* Allreduce MPI_MAX of 64 Ki doubles: element i's maximum is rank
     * (i % nranks)'s value */
    {
        double *din = (double *)in, *dout = (double *)all;
        const int dn = cnt / 2;
        for (int i = 0; i < dn; i++) {
            din[i] = (i % nranks == rank ? 1e6 : 0) + i * 0.5 + rank;
        }
        MPI_Allreduce(din, dout, dn, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        for (int i = 0; i < dn; i++) {
            double want = 1e6 + i * 0.5 + i % nranks;
            if (dout[i] != want) {
                if (!where[0]) {
                    snprintf(where, sizeof(where), "rank %d: allreduce max"
                             "[%d] = %g, not %g", rank, i, dout[i], want);
                }
                bad++;
            }
        }
    }
    /* Alltoall: rank s's 64 KiB + 5 block to rank d is pat(s, ., d) */
    {
        const size_t blk = 65536 + 5;
        uint8_t *sb = malloc(blk * nranks), *rb = malloc(blk * nranks);
        if (!sb || !rb) {
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        for (int d = 0; d < nranks; d++) {
            fill(sb + d * blk, rank, blk, 200 + d);
        }
        memset(rb, 0, blk * nranks);
        MPI_Alltoall(sb, (int)blk, MPI_BYTE, rb, (int)blk, MPI_BYTE,
                     MPI_COMM_WORLD);
        for (int s = 0; s < nranks; s++) {
            bad += verify(rb + s * blk, s, blk, 200 + rank, where,
                          sizeof(where));
        }
        free(sb);
        free(rb);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(in);
    free(out);
    free(all);
    report("collectives", bad, where,
           "Bcast 1 MiB from each rank, Allreduce (sum of 64 Ki ints, max "
           "of 32 Ki doubles), Allgather of 64 Ki ints, Alltoall of "
           "64 KiB+5 blocks, Barrier");
}

/*
 * An application's pattern: a periodic 1-D stencil over nranks * L
 * cells, each rank owning L and exchanging one halo cell with each
 * neighbour per iteration (MPI_Sendrecv), then a global checksum
 * (Allreduce).  Integer arithmetic modulo 2^32, so every rank can
 * compute the whole domain serially and compare its cells exactly.
 */
#define HALO_L 4096
#define HALO_T 100
static uint32_t halo_init(long g)
{
    return (uint32_t)(g * 2654435761u) ^ (uint32_t)(g >> 3);
}

static uint32_t halo_rule(uint32_t l, uint32_t c, uint32_t r, int t)
{
    return l + 2 * c + 3 * r + (uint32_t)t;
}

static void step_halo(void)
{
    long bad = 0;
    char where[256] = "";
    const long G = (long)nranks * HALO_L;
    const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    uint32_t *u = malloc((HALO_L + 2) * sizeof(uint32_t));
    uint32_t *v = malloc((HALO_L + 2) * sizeof(uint32_t));
    uint32_t *ru = malloc(G * sizeof(uint32_t)), *rv = malloc(G * sizeof(uint32_t));
    uint32_t sum = 0, gsum = 0, rsum = 0;

    if (!u || !v || !ru || !rv) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 0; i < HALO_L; i++) {
        u[i + 1] = halo_init((long)rank * HALO_L + i);
    }
    for (int t = 0; t < HALO_T; t++) {
        /* my first cell to prev (its right halo), my last to next */
        MPI_Sendrecv(&u[1], 1, MPI_UINT32_T, prev, 500,
                     &u[HALO_L + 1], 1, MPI_UINT32_T, next, 500,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[HALO_L], 1, MPI_UINT32_T, next, 501,
                     &u[0], 1, MPI_UINT32_T, prev, 501,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 1; i <= HALO_L; i++) {
            v[i] = halo_rule(u[i - 1], u[i], u[i + 1], t);
        }
        uint32_t *x = u;
        u = v;
        v = x;
    }
    for (int i = 1; i <= HALO_L; i++) {
        sum += u[i];
    }
    MPI_Allreduce(&sum, &gsum, 1, MPI_UINT32_T, MPI_SUM, MPI_COMM_WORLD);
    /* the serial reference of the whole domain */
    for (long g = 0; g < G; g++) {
        ru[g] = halo_init(g);
    }
    for (int t = 0; t < HALO_T; t++) {
        for (long g = 0; g < G; g++) {
            rv[g] = halo_rule(ru[(g + G - 1) % G], ru[g], ru[(g + 1) % G], t);
        }
        uint32_t *x = ru;
        ru = rv;
        rv = x;
    }
    for (long g = 0; g < G; g++) {
        rsum += ru[g];
    }
    for (int i = 0; i < HALO_L; i++) {
        if (u[i + 1] != ru[(long)rank * HALO_L + i]) {
            if (!where[0]) {
                snprintf(where, sizeof(where), "rank %d: cell %ld after %d "
                         "iterations is %u, not %u", rank,
                         (long)rank * HALO_L + i, HALO_T, u[i + 1],
                         ru[(long)rank * HALO_L + i]);
            }
            bad++;
        }
    }
    if (gsum != rsum) {
        if (!where[0]) {
            snprintf(where, sizeof(where), "rank %d: global checksum %u, "
                     "not %u", rank, gsum, rsum);
        }
        bad++;
    }
    free(u);
    free(v);
    free(ru);
    free(rv);
    {
        char ok[128];
        snprintf(ok, sizeof(ok), "1-D periodic stencil, %d ranks x %d cells,"
                 " %d iterations of halo exchange, every cell and the "
                 "global checksum %u checked", nranks, HALO_L, HALO_T, rsum);
        report("halo", bad, where, ok);
    }
}

/*
 * One-sided: each rank exposes 1 MiB; Put into the peer's window and Get
 * it back (fence epochs), Accumulate (MPI_SUM) from both ranks into rank
 * 0, then passive target: Fetch_and_op and Compare_and_swap under
 * MPI_Win_lock.
 */
static void step_rma(uint8_t *tmp)
{
    long bad = 0;
    char where[256] = "";
    const size_t n = 1048576;
    uint8_t *base;
    MPI_Win win;
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    const long tri = (long)nranks * (nranks + 1) / 2;

    MPI_Alloc_mem(n, MPI_INFO_NULL, &base);
    memset(base, 0, n);
    MPI_Win_create(base, n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);

    /* Put 1 MiB into the next rank's window, then each checks its own */
    fill(tmp, rank, n, 11);
    MPI_Win_fence(0, win);
    MPI_Put(tmp, (int)n, MPI_BYTE, next, 0, (int)n, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    bad += verify(base, prev, n, 11, where, sizeof(where));

    /* Get 64 KiB + 3 at an odd offset of the next rank's window */
    memset(tmp, 0, n);
    MPI_Get(tmp, 65539, MPI_BYTE, next, 4093, 65539, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    for (size_t i = 0; i < 65539; i++) {
        /* the next rank's window holds what this rank put there */
        if (tmp[i] != pat(rank, n, 11, 4093 + i)) {
            if (!where[0]) {
                snprintf(where, sizeof(where), "rank %d: get byte %zu", rank,
                         i);
            }
            bad++;
        }
    }

    /* Accumulate: all ranks add into rank 0's first 4096 longs */
    {
        long *acc = (long *)tmp;
        long *w = (long *)base;
        const int cnt = 4096;
        MPI_Win_fence(0, win);
        if (rank == 0) {
            memset(base, 0, cnt * sizeof(long));
        }
        MPI_Win_fence(0, win);
        for (int i = 0; i < cnt; i++) {
            acc[i] = (long)i * (rank + 1);
        }
        MPI_Accumulate(acc, cnt, MPI_LONG, 0, 0, cnt, MPI_LONG, MPI_SUM, win);
        MPI_Win_fence(0, win);
        if (rank == 0) {
            for (int i = 0; i < cnt; i++) {
                if (w[i] != (long)i * tri) {
                    if (!where[0]) {
                        snprintf(where, sizeof(where), "rank 0: accumulate "
                                 "[%d] = %ld, not %ld", i, w[i], (long)i * tri);
                    }
                    bad++;
                }
            }
        }
        MPI_Win_fence(0, win);
    }

    /* Passive target: 50 Fetch_and_op(+1) from each rank on rank 0's
     * counter, then a Compare_and_swap from the last rank */
    {
        int64_t *ctr = (int64_t *)(base + 65536);
        int64_t one = 1, old = -1, prev_max = -1;
        MPI_Win_fence(0, win);
        if (rank == 0) {
            *ctr = 0;
        }
        MPI_Win_fence(0, win);
        for (int i = 0; i < 50; i++) {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
            MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 65536, MPI_SUM, win);
            MPI_Win_unlock(0, win);
            if (old < 0 || old >= 50L * nranks || old <= prev_max) {
                if (!where[0]) {
                    snprintf(where, sizeof(where), "rank %d: fetch_and_op "
                             "returned %lld after %lld", rank,
                             (long long)old, (long long)prev_max);
                }
                bad++;
            }
            prev_max = old;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == nranks - 1) {
            int64_t cmp = 50L * nranks, swp = 12345, res = -1;
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Compare_and_swap(&swp, &cmp, &res, MPI_INT64_T, 0, 65536,
                                 win);
            MPI_Win_unlock(0, win);
            if (res != cmp) {
                snprintf(where, sizeof(where), "rank %d: compare_and_swap "
                         "found %lld, not %lld", rank, (long long)res,
                         (long long)cmp);
                bad++;
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            if (*ctr != 12345) {
                snprintf(where, sizeof(where), "rank 0: counter %lld after "
                         "compare_and_swap, not 12345", (long long)*ctr);
                bad++;
            }
            MPI_Win_unlock(0, win);
        }
    }
    MPI_Win_free(&win);
    MPI_Free_mem(base);
    report("rma", bad, where,
           "Put 1 MiB, Get 64 KiB+3, Accumulate, Fetch_and_op x50 per rank, "
           "Compare_and_swap");
}

/* Ping-pong between rank 0 and peer: rank 0's round-trip time / 2 and
 * bandwidth; the other ranks wait. */
static void step_perf(uint8_t *buf, int peer)
{
    const size_t sizes2[] = {8, 1048576};
    const int iters[] = {200, 10};
    for (int k = 0; k < 2; k++) {
        size_t n = sizes2[k];
        double t0 = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = -2; i < iters[k]; i++) {
            if (i == 0) {
                t0 = MPI_Wtime();
            }
            if (rank == 0) {
                MPI_Send(buf, (int)n, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)n, MPI_BYTE, peer, 7, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            } else if (rank == peer) {
                MPI_Recv(buf, (int)n, MPI_BYTE, 0, 7, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)n, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
            }
        }
        double t = MPI_Wtime() - t0;
        if (rank == 0) {
            if (k == 0) {
                printf("MPI-PERF pingpong-8B-latency %.1f us\n",
                       t / iters[k] / 2 * 1e6);
            } else {
                printf("MPI-PERF pingpong-1MiB-bandwidth %.1f MB/s\n",
                       2.0 * n * iters[k] / t / 1e6);
            }
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 2;
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    char host[MPI_MAX_PROCESSOR_NAME];
    int len;
    uint8_t *a, *b;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Get_processor_name(host, &len);
    if (rank == 0) {
        MPI_Get_library_version(ver, &len);
        printf("rs-mpi-check: %d ranks, %.*s\n", nranks,
               (int)strcspn(ver, "\n"), ver);
    }
    printf("rs-mpi-check: rank %d on %s\n", rank, host);
    fflush(stdout);
    if (nranks < 2) {
        if (rank == 0) {
            printf("CHECK mpi-ranks fail %d ranks, not 2 or more\n", nranks);
        }
        MPI_Finalize();
        return 1;
    }
    /* the ping-pong's peer: the first rank on another host than rank 0 */
    {
        char *hosts = malloc((size_t)nranks * MPI_MAX_PROCESSOR_NAME);
        if (!hosts) {
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        size_t hl = strlen(host);
        memset(host + hl, 0, MPI_MAX_PROCESSOR_NAME - hl);
        MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts,
                      MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
        for (int s = nranks - 1; s > 0; s--) {
            if (strcmp(hosts + (size_t)s * MPI_MAX_PROCESSOR_NAME, hosts)) {
                perf_peer = s;
            }
        }
        free(hosts);
    }
    if (rank == 0) {
        printf("CHECK mpi-ranks ok %d ranks, ping-pong with rank %d\n",
               nranks, perf_peer);
    }
    a = malloc(MAXSZ + 16);
    b = malloc(MAXSZ + 16);
    if (!a || !b) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    step_sendrecv(rounds, a);
    step_exchange(rounds, a, b);
    step_collectives(a);
    step_rma(a);
    step_halo();
    step_perf(a, perf_peer);
    free(a);
    free(b);
    MPI_Finalize();
    if (rank == 0) {
        printf("CHECK mpi-finalize ok\n");
        fflush(stdout);
    }
    return 0;
}
