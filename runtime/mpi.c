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
 */
#include "tcrt.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TCRT_MPI_MAX_REQ 4096 /* pending sends (tags are node ids below this) */

extern int tcrt_main_skip_results; /* runtime/main.c */

int tcrt_mpi_rank(void);
tcrt_status tcrt_mpi_isend(const void *buf, size_t bytes, int dst, int tag);
tcrt_status tcrt_mpi_recv(void *buf, size_t bytes, int src, int tag);
tcrt_status tcrt_mpi_wait(int tag);
int tcrt_mpi_main(const tcrt_model *m, int n_ranks, const char *cluster, int argc, char **argv);

static int g_rank = -1;
static MPI_Request g_req[TCRT_MPI_MAX_REQ];
static int g_req_live[TCRT_MPI_MAX_REQ];

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
        fprintf(stderr, "error: MPI_Init failed (run under mpirun -np %d)\n", n_ranks);
        return 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 1; i < argc; i++) /* every rank would write the same checkpoint files */
        if (!strncmp(argv[i], "--save", 6)) {
            fprintf(stderr, "error: %s is not supported with --cluster yet (docs/distributed.md)\n", argv[i]);
            MPI_Finalize();
            return 2;
        }
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != n_ranks) {
        /* every rank sees the same size: all report and leave together */
        fprintf(stderr,
                "error: rank %d: this model was compiled for --cluster %s (%d ranks) but MPI started %d; "
                "run it with mpirun -np %d\n",
                g_rank, cluster, n_ranks, size, n_ranks);
        MPI_Finalize();
        return 2;
    }
    tcrt_main_skip_results = g_rank != 0;
    /* one report: the step lines and timings of rank 0 (errors still go to stderr on every rank) */
    if (g_rank != 0 && !freopen("/dev/null", "w", stdout)) {
        fprintf(stderr, "error: rank %d: cannot redirect stdout to /dev/null\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    int rc = tcrt_main(m, argc, argv);
    for (int t = 0; t < TCRT_MPI_MAX_REQ; t++)
        if (g_req_live[t]) {
            MPI_Cancel(&g_req[t]);
            g_req_live[t] = 0;
        }
    if (rc != 0) {
        fprintf(stderr, "error: rank %d failed (exit %d): aborting the MPI job\n", g_rank, rc);
        MPI_Abort(MPI_COMM_WORLD, rc);
        return rc;
    }
    MPI_Finalize();
    return 0;
}
