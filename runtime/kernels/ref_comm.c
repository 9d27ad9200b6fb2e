/* ref_comm.c - reference send/recv kernels: the in-process halves of a
 * cross-device edge (ir/ops.def "communication", docs/devices.md).
 *
 * In one process every device shares the address space, so the rendezvous
 * is the SEND's output buffer: send copies the producer's tensor into it and
 * recv copies it out into the consumer's device buffer.  Both check that
 * source and destination hold the same number of bytes and never allocate.
 * A GPU or another task needs a real transport (CUDA copies, MPI); those
 * live in their backends, not here.
 * allreduce (--data-parallel): the mean over the replicas; with one replica
 * (this kernel, constant folding's view) a copy.  The C backend calls
 * tcrt_mpi_allreduce_mean (runtime/mpi.c) instead.
 */
#include "kern_int.h"

static tcrt_status comm_copy(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out)
{
    KCHECK(in && out && n_in == 1 && n_out >= 1);
    KCHECK(k_valid(&in[0]) && k_valid(out) && in[0].dtype == out->dtype);
    size_t es = tcrt_dtype_size(out->dtype);
    KCHECK(es > 0 && k_count(&in[0]) == k_count(out));
    size_t bytes = (size_t)k_count(out) * es;
    if (bytes && in[0].data != out->data)
        memmove(out->data, in[0].data, bytes);
    return TCRT_OK;
}

tcrt_status tcrt_ref_send(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    (void)p;
    return comm_copy(in, n_in, out, n_out);
}

tcrt_status tcrt_ref_recv(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    (void)p;
    return comm_copy(in, n_in, out, n_out);
}

tcrt_status tcrt_ref_allreduce(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                               const tcrt_params *p)
{
    KCHECK(in && n_in == 1 && (in[0].dtype == TCRT_F32 || in[0].dtype == TCRT_F64));
    KCHECK(p && p->i[0] == 0);
    return comm_copy(in, n_in, out, n_out);
}
