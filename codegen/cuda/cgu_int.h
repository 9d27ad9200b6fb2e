/* codegen/cuda/cgu_int.h - internals of the CUDA backend (codegen/cuda/).
 *
 * cgu_model.c walks the graph's GPU-placed nodes in schedule order and
 * writes NAME.cu (a prelude, then one `extern "C" __global__` kernel per
 * fused elementwise group, copy or reduction) and NAME_cuda_plan.h (the
 * launch table: kernels, cuBLAS/cuDNN calls, host<->device copies);
 * cgu_elem.c and cgu_reduce.c emit the kernels of their kind; cgu_nvrtc.c
 * loads NVRTC with dlopen and compiles NAME.cu to PTX and cubins.
 */
#ifndef CODEGEN_CUDA_CGU_INT_H
#define CODEGEN_CUDA_CGU_INT_H

#include "codegen/cg_int.h"

/* Threads per block of every generated kernel (the plan's block size). */
#define CGU_BLOCK 256
/* Grid size of a grid-stride elementwise kernel over `total` elements:
 * enough blocks for one element per thread, capped (the loop covers the rest). */
#define CGU_MAX_GRID 65535

/* Writes the comment and the `// kernel NAME: nodes ...` marker line that
 * cgu_nvrtc.c uses to name the nodes of a kernel NVRTC rejects. */
void cgu_kernel_header(CgOut *o, const char *kname, const IrNode *const *nodes, int n_nodes);
/* Elementwise group (cg_elem_group_build) as a grid-stride kernel; *grid
 * gets its launch grid. */
bool cgu_emit_elem(CgOut *o, const CgcElemGroup *grp, const char *kname, int64_t *grid, Status *st);
/* COPY / ASSIGN (value input) / any same-size copy: a flat grid-stride copy. */
bool cgu_emit_copy(CgOut *o, const IrNode *n, IrValue src, const char *kname, int64_t *grid, Status *st);
/* reduce_sum/max/min/prod over any axis mask, argmax/argmin: one block per
 * output element, a strided partial per thread, a shared-memory tree. */
bool cgu_emit_reduce(CgOut *o, const IrNode *n, const char *kname, int64_t *grid, Status *st);
bool cgu_is_reduce(Op op);

#endif
