/*
 * rs-mpi-check: an MPI program for two ranks (tests/guest/ucx.py, one
 * rank per VM) that moves data with point-to-point, collective and
 * one-sided operations and checks every byte it receives.
 *
 * Each step counts its errors on both ranks; rank 0 prints one line per
 * step, "CHECK mpi-STEP ok|fail DETAIL", once MPI_Allreduce has summed
 * both ranks' counts (a step that hangs or aborts leaves no line, which
 * the suite reports as "no result").  Then a ping-pong's latency (8 B) and
 * bandwidth (1 MiB) as "MPI-PERF name value unit" lines.
 *
 * The point-to-point sizes go from eager (1 B) past UCX's rendezvous
 * threshold (64 KiB and more: the data then moves by RDMA READ or WRITE
 * of the receive or send buffer, not through bounce buffers).
 *
 * Built by scripts/guest-overlay-ucx.sh against Debian's libopenmpi-dev
 * (mpi.h) into the overlay's /usr/bin.
 *
 * Usage: mpirun -np 2 ... rs-mpi-check [ROUNDS]   (default 2)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

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
 * Both ranks' error counts summed; rank 0 prints the CHECK line (the
 * detail of the first error found by either rank, else ok_detail).
 */
static void report(const char *name, long bad, const char *where,
                   const char *ok_detail)
{
    long total = 0;
    char other[256] = "";

    MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    /* rank 1's first error, for rank 0 to print */
    if (rank == 1) {
        char w[256];
        snprintf(w, sizeof(w), "%s", where);
        MPI_Send(w, sizeof(w), MPI_CHAR, 0, 99, MPI_COMM_WORLD);
    } else {
        MPI_Recv(other, sizeof(other), MPI_CHAR, 1, 99, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
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

/* Rank 0 sends each size to rank 1, then rank 1 to rank 0. */
static void step_sendrecv(int rounds, uint8_t *buf)
{
    long bad = 0;
    char where[256] = "";

    for (int r = 0; r < rounds; r++) {
        for (size_t k = 0; k < NSIZES; k++) {
            size_t n = sizes[k];
            for (int src = 0; src < 2; src++) {
                if (rank == src) {
                    fill(buf, src, n, r);
                    MPI_Send(buf, (int)n, MPI_BYTE, 1 - src, (int)k,
                             MPI_COMM_WORLD);
                } else {
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

/* Both ranks send and receive at once (Isend/Irecv), every size. */
static void step_exchange(int rounds, uint8_t *sbuf, uint8_t *rbuf)
{
    long bad = 0;
    char where[256] = "";
    int peer = 1 - rank;

    for (int r = 0; r < rounds; r++) {
        for (size_t k = 0; k < NSIZES; k++) {
            size_t n = sizes[k];
            MPI_Request req[2];
            fill(sbuf, rank, n, r + 100);
            memset(rbuf, 0, n);
            MPI_Irecv(rbuf, (int)n, MPI_BYTE, peer, 1000 + (int)k,
                      MPI_COMM_WORLD, &req[0]);
            MPI_Isend(sbuf, (int)n, MPI_BYTE, peer, 1000 + (int)k,
                      MPI_COMM_WORLD, &req[1]);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            bad += verify(rbuf, peer, n, r + 100, where, sizeof(where));
        }
    }
    report("exchange", bad, where,
           "Isend/Irecv both ways at once, 1 B to 1 MiB+7, data checked");
}

static void step_collectives(uint8_t *buf)
{
    long bad = 0;
    char where[256] = "";
    const size_t n = 1048576;
    const int cnt = 65536;
    int *in = malloc(cnt * sizeof(int)), *out = malloc(cnt * sizeof(int));
    int *all = malloc(2 * cnt * sizeof(int));

    /* Bcast 1 MiB from each rank in turn */
    for (int root = 0; root < 2; root++) {
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
        if (out[i] != i * 3 + 1) {
            if (!where[0]) {
                snprintf(where, sizeof(where), "rank %d: allreduce[%d] = %d, "
                         "not %d", rank, i, out[i], i * 3 + 1);
            }
            bad++;
        }
    }
    /* Allgather of 64 Ki ints from each */
    MPI_Allgather(in, cnt, MPI_INT, all, cnt, MPI_INT, MPI_COMM_WORLD);
    for (int s = 0; s < 2; s++) {
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
    MPI_Barrier(MPI_COMM_WORLD);
    free(in);
    free(out);
    free(all);
    report("collectives", bad, where,
           "Bcast 1 MiB from each rank, Allreduce and Allgather of 64 Ki "
           "ints, Barrier");
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
    int peer = 1 - rank;

    MPI_Alloc_mem(n, MPI_INFO_NULL, &base);
    memset(base, 0, n);
    MPI_Win_create(base, n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);

    /* Put 1 MiB into the peer's window, then each checks its own */
    fill(tmp, rank, n, 11);
    MPI_Win_fence(0, win);
    MPI_Put(tmp, (int)n, MPI_BYTE, peer, 0, (int)n, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    bad += verify(base, peer, n, 11, where, sizeof(where));

    /* Get 64 KiB + 3 at an odd offset of the peer's window */
    memset(tmp, 0, n);
    MPI_Get(tmp, 65539, MPI_BYTE, peer, 4093, 65539, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    for (size_t i = 0; i < 65539; i++) {
        /* the peer's window holds what this rank put there */
        if (tmp[i] != pat(rank, n, 11, 4093 + i)) {
            if (!where[0]) {
                snprintf(where, sizeof(where), "rank %d: get byte %zu", rank,
                         i);
            }
            bad++;
        }
    }

    /* Accumulate: both ranks add into rank 0's first 4096 longs */
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
                if (w[i] != (long)i * 3) {
                    if (!where[0]) {
                        snprintf(where, sizeof(where), "rank 0: accumulate "
                                 "[%d] = %ld, not %ld", i, w[i], (long)i * 3);
                    }
                    bad++;
                }
            }
        }
        MPI_Win_fence(0, win);
    }

    /* Passive target: 50 Fetch_and_op(+1) from each rank on rank 0's
     * counter, then a Compare_and_swap from rank 1 */
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
            if (old < 0 || old > 99 || old <= prev_max) {
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
        if (rank == 1) {
            int64_t cmp = 100, swp = 12345, res = -1;
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Compare_and_swap(&swp, &cmp, &res, MPI_INT64_T, 0, 65536,
                                 win);
            MPI_Win_unlock(0, win);
            if (res != 100) {
                snprintf(where, sizeof(where), "rank 1: compare_and_swap "
                         "found %lld, not 100", (long long)res);
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
           "Put 1 MiB, Get 64 KiB+3, Accumulate, Fetch_and_op x100, "
           "Compare_and_swap");
}

/* Ping-pong: rank 0's round-trip time / 2 and bandwidth. */
static void step_perf(uint8_t *buf)
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
                MPI_Send(buf, (int)n, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)n, MPI_BYTE, 1, 7, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            } else {
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
    if (nranks != 2) {
        if (rank == 0) {
            printf("CHECK mpi-ranks fail %d ranks, not 2\n", nranks);
        }
        MPI_Finalize();
        return 1;
    }
    if (rank == 0) {
        printf("CHECK mpi-ranks ok 2 ranks\n");
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
    step_perf(a);
    free(a);
    free(b);
    MPI_Finalize();
    if (rank == 0) {
        printf("CHECK mpi-finalize ok\n");
        fflush(stdout);
    }
    return 0;
}
