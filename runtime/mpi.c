/* mpi.c - the MPI side of a --cluster executable (docs/distributed.md):
 * built into libtcrt_mpi only when meson finds MPI, and linked (with MPI)
 * only into executables whose graph has send/recv pairs between tasks.
 *
 * The generated NAME_main.c calls tcrt_mpi_main instead of tcrt_main: it
 * starts MPI, checks that mpirun started exactly the cluster's number of
 * ranks (an error on every rank, before any file is read, otherwise),
 * turns the results and stdout off on ranks other than 0 (the results live
 * on rank 0, the local task), runs tcrt_main, then finalizes MPI after a success and
 * aborts the whole job after a failure (a peer may be waiting for a tensor
 * this rank will never send: aborting is what keeps it from hanging).
 *
 * The generated run function executes on every rank but calls only the
 * kernels of its rank's task (tcrt_mpi_rank).  A send/recv pair between
 * tasks becomes tcrt_mpi_isend (at the send, on the sender: MPI_Isend from
 * the send's rendezvous buffer, which the memory plan keeps until the recv's
 * schedule position), tcrt_mpi_recv on the receiver and tcrt_mpi_wait on
 * the sender (both at the recv's position, so every rank waits at the same
 * point of the one schedule and no pair of blocking calls can deadlock).
 * The tag is the send node's id (unique per pair).  MPI_ERRORS_RETURN is
 * set on MPI_COMM_WORLD: an MPI error is reported (rank, peer, tag, MPI's
 * text) and returned as TCRT_ERR_RUNTIME.
 *
 * --data-parallel (section at the end; n_ranks = 0 in tcrt_mpi_main): any
 * world size N >= 1; every rank is replica `rank` of N, runs the whole
 * graph on its own batches (runtime/main.c's replica globals) and the
 * graph's ALLREDUCE nodes call tcrt_mpi_allreduce_mean.  Only rank 0 writes
 * results and --save checkpoints.
 */
#include "tcrt.h"

#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TCRT_MPI_MAX_REQ 4096 /* pending sends (tags are node ids below this) */

extern int tcrt_main_skip_results; /* runtime/main.c */
extern int (*tcrt_main_before_save)(const tcrt_model *m, uint8_t *arena);
extern long tcrt_main_runs;
extern int tcrt_main_data_parallel, tcrt_main_replica, tcrt_main_n_replicas, tcrt_main_skip_save;

int tcrt_mpi_rank(void);
tcrt_status tcrt_mpi_isend(const void *buf, size_t bytes, int dst, int tag);
tcrt_status tcrt_mpi_recv(void *buf, size_t bytes, int src, int tag);
tcrt_status tcrt_mpi_wait(int tag);
int tcrt_mpi_main(const tcrt_model *m, int n_ranks, const char *cluster, int argc, char **argv);
tcrt_status tcrt_mpi_allreduce_mean(void *dst, const void *src, size_t n, tcrt_dtype dtype);
static int dp_start(int size);

static int g_rank = -1;
/* transfer statistics (section "checkpoints, trunc16, traffic" below) */
static double g_bytes_sent;    /* payload bytes this rank sent (point-to-point and allreduce) */
static double g_trunc16_err;   /* largest relative error trunc16 made on this rank */
static int gather_vars(const tcrt_model *m, uint8_t *arena);
static void report_traffic(int size);
static MPI_Request g_req[TCRT_MPI_MAX_REQ];
static int g_req_live[TCRT_MPI_MAX_REQ];
static MPI_Request g_rreq[TCRT_MPI_MAX_REQ]; /* receives posted early (tcrt_mpi_irecv) */
static int g_rreq_live[TCRT_MPI_MAX_REQ], g_rreq_src[TCRT_MPI_MAX_REQ];

static tcrt_status mpi_fail(int rc, const char *what, int peer, int tag)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", rc);
    fprintf(stderr, "error: rank %d: %s (peer rank %d, tag %d) failed: %s\n", g_rank, what, peer, tag, text);
    return TCRT_ERR_RUNTIME;
}

int tcrt_mpi_rank(void)
{
    return g_rank < 0 ? 0 : g_rank;
}

tcrt_status tcrt_mpi_isend(const void *buf, size_t bytes, int dst, int tag)
{
    if (g_rank < 0 || tag < 0 || tag >= TCRT_MPI_MAX_REQ || bytes > (size_t)0x7fffffff || g_req_live[tag]) {
        fprintf(stderr, "error: tcrt_mpi_isend: MPI not started, tag %d out of range or busy, or %zu bytes\n",
                tag, bytes);
        return TCRT_ERR_RUNTIME;
    }
    g_bytes_sent += (double)bytes;
    int rc = MPI_Isend(buf, (int)bytes, MPI_BYTE, dst, tag, MPI_COMM_WORLD, &g_req[tag]);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Isend", dst, tag);
    g_req_live[tag] = 1;
    return TCRT_OK;
}

tcrt_status tcrt_mpi_wait(int tag)
{
    if (tag < 0 || tag >= TCRT_MPI_MAX_REQ || !g_req_live[tag]) {
        fprintf(stderr, "error: tcrt_mpi_wait: no pending send with tag %d\n", tag);
        return TCRT_ERR_RUNTIME;
    }
    g_req_live[tag] = 0;
    int rc = MPI_Wait(&g_req[tag], MPI_STATUS_IGNORE);
    return rc == MPI_SUCCESS ? TCRT_OK : mpi_fail(rc, "MPI_Wait (send)", -1, tag);
}

tcrt_status tcrt_mpi_recv(void *buf, size_t bytes, int src, int tag)
{
    if (g_rank < 0 || bytes > (size_t)0x7fffffff) {
        fprintf(stderr, "error: tcrt_mpi_recv: MPI not started or %zu bytes\n", bytes);
        return TCRT_ERR_RUNTIME;
    }
    MPI_Status stat;
    int rc = MPI_Recv(buf, (int)bytes, MPI_BYTE, src, tag, MPI_COMM_WORLD, &stat);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Recv", src, tag);
    int got = 0;
    MPI_Get_count(&stat, MPI_BYTE, &got);
    if ((size_t)got != bytes) {
        fprintf(stderr, "error: rank %d: received %d bytes from rank %d (tag %d), expected %zu\n", g_rank,
                got, src, tag, bytes);
        return TCRT_ERR_RUNTIME;
    }
    return TCRT_OK;
}

int tcrt_mpi_main(const tcrt_model *m, int n_ranks, const char *cluster, int argc, char **argv)
{
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        if (n_ranks > 0)
            fprintf(stderr, "error: MPI_Init failed (run under mpirun -np %d)\n", n_ranks);
        else
            fprintf(stderr, "error: MPI_Init failed (run under mpirun -np N)\n");
        return 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (n_ranks == 0 && dp_start(size) != 0) { /* --data-parallel: any world size */
        MPI_Finalize();
        return 2;
    }
    if (n_ranks > 0 && size != n_ranks) {
        /* every rank sees the same size: all report and leave together */
        fprintf(stderr,
                "error: rank %d: this model was compiled for --cluster %s (%d ranks) but MPI started %d; "
                "run it with mpirun -np %d\n",
                g_rank, cluster, n_ranks, size, n_ranks);
        MPI_Finalize();
        return 2;
    }
    if (n_ranks > 0) { /* --cluster: rank 0 writes checkpoints, holding every task's variables */
        tcrt_main_skip_save = g_rank != 0;
        tcrt_main_before_save = gather_vars;
    }
    tcrt_main_skip_results = g_rank != 0;
    /* one report: the step lines and timings of rank 0 (errors still go to stderr on every rank) */
    if (g_rank != 0 && !freopen("/dev/null", "w", stdout)) {
        fprintf(stderr, "error: rank %d: cannot redirect stdout to /dev/null\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    int rc = tcrt_main(m, argc, argv);
    for (int t = 0; t < TCRT_MPI_MAX_REQ; t++) {
        if (g_req_live[t]) {
            MPI_Cancel(&g_req[t]);
            g_req_live[t] = 0;
        }
        if (g_rreq_live[t]) {
            MPI_Cancel(&g_rreq[t]);
            g_rreq_live[t] = 0;
        }
    }
    if (rc != 0) {
        fprintf(stderr, "error: rank %d failed (exit %d): aborting the MPI job\n", g_rank, rc);
        MPI_Abort(MPI_COMM_WORLD, rc);
        return rc;
    }
    report_traffic(size);
    MPI_Finalize();
    return 0;
}

/* ---- --data-parallel: replicas and the gradient allreduce ----
 * tcrt_mpi_main(m, 0, "", ...) starts a data-parallel run: rank r of N is
 * replica r (runtime/main.c picks its batches), rank 0 alone saves
 * checkpoints; the generated code averages each gradient (and the fetched
 * loss) with tcrt_mpi_allreduce_mean.  Every replica calls the allreduces
 * in the same order (one schedule), so the collectives always match. */

static int g_world = 1; /* replicas of a --data-parallel run */

static int dp_start(int size)
{
    if (size < 1 || g_rank < 0) {
        fprintf(stderr, "error: --data-parallel: MPI reports %d ranks\n", size);
        return 1;
    }
    g_world = size;
    tcrt_main_data_parallel = 1;
    tcrt_main_replica = g_rank;
    tcrt_main_n_replicas = size;
    tcrt_main_skip_save = g_rank != 0;
    return 0;
}

/* dst = the mean of src over the replicas (n elements of dtype, float32 or
 * float64; dst == src allowed).  Sums with MPI_Allreduce in place, then
 * scales by 1/N (1 replica: a copy). */
tcrt_status tcrt_mpi_allreduce_mean(void *dst, const void *src, size_t n, tcrt_dtype dtype)
{
    size_t es = dtype == TCRT_F32 ? sizeof(float) : dtype == TCRT_F64 ? sizeof(double) : 0;
    if (g_rank < 0 || es == 0 || n > (size_t)0x7fffffff) {
        fprintf(stderr, "error: tcrt_mpi_allreduce_mean: MPI not started, dtype %d is not float32/float64, "
                        "or %zu elements\n", (int)dtype, n);
        return TCRT_ERR_RUNTIME;
    }
    if (dst != src && n)
        memmove(dst, src, n * es);
    if (g_world == 1 || n == 0)
        return TCRT_OK;
    g_bytes_sent += (double)(n * es); /* the payload this rank contributes */
    int rc = MPI_Allreduce(MPI_IN_PLACE, dst, (int)n, es == 4 ? MPI_FLOAT : MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Allreduce", -1, -1);
    if (es == 4) {
        float *d = dst, s = 1.0f / (float)g_world;
        for (size_t i = 0; i < n; i++)
            d[i] *= s;
    } else {
        double *d = dst, s = 1.0 / (double)g_world;
        for (size_t i = 0; i < n; i++)
            d[i] *= s;
    }
    return TCRT_OK;
}

/* ---- --cluster: checkpoints, trunc16, traffic ----
 * Checkpoints: every rank keeps only its own task's variables up to date
 * (the others are never read there), so before each --save the owners send
 * their variables to rank 0 (tcrt_mpi_set_var_ranks, from the generated
 * main: the task of each variable), and rank 0 alone writes one ordinary
 * checkpoint with every variable.  All ranks save at the same steps (one
 * loop, the same --save-every), so the exchange always pairs up; the tags
 * are above the transfers' (send node ids < TCRT_MPI_MAX_REQ).
 * trunc16 (--transfer-compress trunc16): a float32 tensor crossing tasks
 * travels as the upper 16 bits of each value (sign, exponent and 7 mantissa
 * bits: the mantissa truncated, as the TensorFlow paper describes), packed
 * in place in the send's rendezvous buffer; the receiver widens it in place
 * with zero low bits.  The largest relative error made is tracked.
 * Traffic: after a successful run rank 0 prints one line with the payload
 * bytes every rank sent, per run, and trunc16's largest relative error. */

#define TCRT_MPI_VAR_TAG (2 * TCRT_MPI_MAX_REQ) /* + variable index */

static const int *g_var_rank; /* task rank of each variable, NULL: all on rank 0 */
static int g_n_var_rank;

void tcrt_mpi_set_var_ranks(const int *rank_of_var, int n_vars);
tcrt_status tcrt_mpi_isend16(void *buf, size_t n, int dst, int tag);
tcrt_status tcrt_mpi_recv16(void *buf, size_t n, int src, int tag);
tcrt_status tcrt_mpi_irecv(void *buf, size_t bytes, int src, int tag);
tcrt_status tcrt_mpi_wait_recv(void *buf, size_t bytes, size_t widen, int tag);

void tcrt_mpi_set_var_ranks(const int *rank_of_var, int n_vars)
{
    g_var_rank = rank_of_var;
    g_n_var_rank = n_vars;
}

/* Every variable to rank 0 from the rank that owns it; 0 on success. */
static int gather_vars(const tcrt_model *m, uint8_t *arena)
{
    if (!g_var_rank || g_n_var_rank != m->n_vars)
        return 0;
    for (int i = 0; i < m->n_vars; i++) {
        const tcrt_var *v = &m->vars[i];
        int owner = g_var_rank[i], rc = MPI_SUCCESS;
        if (owner == 0 || v->bytes == 0)
            continue;
        if (v->bytes > (size_t)0x7fffffff || TCRT_MPI_VAR_TAG + i > 32767) {
            fprintf(stderr, "error: rank %d: variable '%s' (%zu bytes, index %d) cannot be gathered for --save\n",
                    g_rank, v->name, v->bytes, i);
            return 1;
        }
        if (g_rank == owner) {
            g_bytes_sent += (double)v->bytes;
            rc = MPI_Send(arena + v->offset, (int)v->bytes, MPI_BYTE, 0, TCRT_MPI_VAR_TAG + i, MPI_COMM_WORLD);
        } else if (g_rank == 0) {
            rc = MPI_Recv(arena + v->offset, (int)v->bytes, MPI_BYTE, owner, TCRT_MPI_VAR_TAG + i, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE);
        }
        if (rc != MPI_SUCCESS) {
            mpi_fail(rc, g_rank == 0 ? "MPI_Recv (checkpoint variable)" : "MPI_Send (checkpoint variable)",
                     g_rank == 0 ? owner : 0, TCRT_MPI_VAR_TAG + i);
            return 1;
        }
    }
    return 0;
}

tcrt_status tcrt_mpi_isend16(void *buf, size_t n, int dst, int tag)
{
    uint32_t *w = buf;
    uint16_t *h = buf;
    float worst = (float)g_trunc16_err;
    for (size_t i = 0; i < n; i++) { /* front to back: h[i] overwrites bytes of w[i / 2] only */
        uint32_t x = w[i];
        uint32_t t = x & 0xffff0000u;
        float fx, ft;
        memcpy(&fx, &x, sizeof fx);
        memcpy(&ft, &t, sizeof ft);
        float d = fabsf(fx - ft), ax = fabsf(fx); /* NaN and infinities compare false */
        if (d > worst * ax)
            worst = d / ax;
        /* a NaN whose payload is in the low bits stays a NaN (not an infinity) */
        h[i] = (x & 0x7f800000u) == 0x7f800000u && (x & 0x007fffffu) ? (uint16_t)((x >> 16) | 0x0040u)
                                                                    : (uint16_t)(x >> 16);
    }
    g_trunc16_err = worst;
    return tcrt_mpi_isend(buf, n * 2, dst, tag);
}

/* The receive half of a pair between tasks, posted when the SEND runs (its
 * schedule position; the memory plan keeps buf from there) and completed
 * at the RECV's position: the tensor arrives while the receiver runs other
 * kernels (the paper's asynchronous Recv kernels, in a static schedule).
 * wait_recv checks the byte count and, for trunc16 (widen16 = element
 * count), widens the received 16-bit values in place. */
tcrt_status tcrt_mpi_irecv(void *buf, size_t bytes, int src, int tag)
{
    if (g_rank < 0 || tag < 0 || tag >= TCRT_MPI_MAX_REQ || bytes > (size_t)0x7fffffff || g_rreq_live[tag]) {
        fprintf(stderr, "error: tcrt_mpi_irecv: MPI not started, tag %d out of range or busy, or %zu bytes\n",
                tag, bytes);
        return TCRT_ERR_RUNTIME;
    }
    int rc = MPI_Irecv(buf, (int)bytes, MPI_BYTE, src, tag, MPI_COMM_WORLD, &g_rreq[tag]);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Irecv", src, tag);
    g_rreq_live[tag] = 1;
    g_rreq_src[tag] = src;
    return TCRT_OK;
}

static void widen16(void *buf, size_t n)
{
    uint32_t *w = buf;
    const uint16_t *h = buf;
    for (size_t i = n; i-- > 0;) /* back to front: w[i] covers h[2i], h[2i+1], already widened */
        w[i] = (uint32_t)h[i] << 16;
}

tcrt_status tcrt_mpi_wait_recv(void *buf, size_t bytes, size_t widen, int tag)
{
    if (tag < 0 || tag >= TCRT_MPI_MAX_REQ || !g_rreq_live[tag]) {
        fprintf(stderr, "error: tcrt_mpi_wait_recv: no pending receive with tag %d\n", tag);
        return TCRT_ERR_RUNTIME;
    }
    g_rreq_live[tag] = 0;
    MPI_Status stat;
    int rc = MPI_Wait(&g_rreq[tag], &stat);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Wait (receive)", g_rreq_src[tag], tag);
    int got = 0;
    MPI_Get_count(&stat, MPI_BYTE, &got);
    if ((size_t)got != bytes) {
        fprintf(stderr, "error: rank %d: received %d bytes from rank %d (tag %d), expected %zu\n", g_rank, got,
                g_rreq_src[tag], tag, bytes);
        return TCRT_ERR_RUNTIME;
    }
    if (widen)
        widen16(buf, widen);
    return TCRT_OK;
}

tcrt_status tcrt_mpi_recv16(void *buf, size_t n, int src, int tag)
{
    tcrt_status s = tcrt_mpi_recv(buf, n * 2, src, tag);
    if (s == TCRT_OK)
        widen16(buf, n);
    return s;
}

static void report_traffic(int size)
{
    double sent[2] = {g_bytes_sent, 0}, tot[2] = {0, 0}, err = 0;
    MPI_Reduce(sent, tot, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&g_trunc16_err, &err, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (g_rank != 0 || tcrt_main_runs <= 0)
        return;
    printf("mpi: ranks=%d runs=%ld bytes_sent=%.0f bytes_per_run=%.1f", size, tcrt_main_runs, tot[0],
           tot[0] / (double)tcrt_main_runs);
    if (err > 0)
        printf(" trunc16_max_rel_err=%.3g", err);
    printf("\n");
    fflush(stdout);
}
