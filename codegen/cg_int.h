/* codegen/cg_int.h - helpers shared by the code generators (internal to codegen/).
 *
 * cg_util.c: templates with named holes, C string and comment escaping,
 * dtype spellings.  c/: the C backend's per-kind emitters, called by
 * c/emit_model.c for every kernel.
 */
#ifndef CODEGEN_CG_INT_H
#define CODEGEN_CG_INT_H

#include "codegen/codegen.h"
#include "passes/passes.h"

/* ---- cg_util.c ---- */

/* A hole of a template: "{{KEY}}" is replaced by value. */
typedef struct CgHole {
    const char *key;
    const char *value;
} CgHole;

/* Writes tmpl to o->f with every {{KEY}} replaced by its value (holes ends
 * with a {NULL, NULL} entry); an unknown key is written as is. */
void cg_template(CgOut *o, const char *tmpl, const CgHole *holes);
/* Writes s as a C string literal (quotes included, escapes as needed). */
void cg_c_string(FILE *f, const char *s);
/* Copies s into buf for use inside a C comment: no "* /" sequence, no newlines. */
void cg_comment_text(const char *s, char *buf, size_t n);
/* "TCRT_F32" */
const char *cg_dtype_enum(tcrt_dtype dt);
/* "f32", "i64", "bool": short spelling for comments. */
const char *cg_dtype_short(tcrt_dtype dt);
/* Writes "f32[2,3]" into buf (returns buf). */
const char *cg_type_str(const IrType *t, char *buf, size_t n);
/* Floating-point operations of kernel root n, counted as the plain
 * algorithm does them (2 per multiply-add: a Winograd conv counts its direct
 * convolution's work; a depthwise block its three parts; a pool one per
 * window element), for --profile's GFLOP/s; 0 for other kernels (data
 * movement, elementwise, reductions) and where the count is not known. */
double cg_kernel_flops(const IrNode *n);
/* Writes a double as a C literal that reads back exactly (INFINITY/NAN spelled). */
void cg_double_lit(double v, char *buf, size_t n);

/* ---- cg_group.c: what every backend derives from the memory plan ---- */

/* An elementwise node fused into its consumer's loop (no buffer of its own). */
bool cg_is_fused(const IrNode *n);
/* A region graph's parameter: read through args[i], no buffer of its own. */
bool cg_is_region_arg(const IrGraph *g, const IrNode *n);
/* A WHILE body's result i that is its parameter i unchanged (no copy-back);
 * owner/region: the region op and region index of the graph holding v. */
bool cg_is_passthrough(const IrNode *owner, int region, IrValue v, int i);

/* The runtime function a non-elementwise node calls: the op's reference
 * kernel (OpInfo.ref_kernel_name), or its fast f32 twin (tcrt_fast_*) for
 * matmul, conv2d, max/avg pool and reduce sum/max; NULL if none. */
const char *cg_kernel_name(const IrNode *n);

/* A graph argument or result as the generated API names it. */
typedef struct CgIo {
    const char *name;             /* tensor name ("x:0") */
    IrValue value;
    char ident[128];              /* accessor suffix: NAME_arg_<ident> */
} CgIo;
/* Sets io[i].ident for all n: the tensor name without a ":0" suffix, as an
 * identifier, made unique with "_<index>" (both backends must agree: the C
 * backend's header declares what the LLVM object defines). */
void cg_io_idents(CgIo *io, int n);

/* ---- c/ backend: one emitter per kind ----
 * Every kernel takes its inputs (const T *restrict), then its outputs
 * (T *restrict), then for a fast f32 CONV2D a workspace (uint8_t *).
 * cgc_kernel_returns_status says whether the kernel returns tcrt_status
 * (call kernels) or void (elementwise loops). */
/* A fused elementwise kernel: members in schedule order (the last is the
 * root, whose output is the kernel's; the others have out[0].offset ==
 * PASS_OFFSET_FUSED), and the values they read from outside the group, in
 * first-use order (the kernel's parameters, before the output). */
typedef struct CgcElemGroup {
    const IrNode **members;
    int n_members;
    IrValue *ext;
    int n_ext;
} CgcElemGroup;
/* Collects root's fused group (cg_group.c): members by DFS over fused
 * producers, put in schedule order (pos by node id), then the operands from
 * outside the group in first-use order.  cg_elem_group_free releases it. */
bool cg_elem_group_build(const IrGraph *g, const IrNode *root, const int *pos, CgcElemGroup *grp, Status *st);
void cg_elem_group_free(CgcElemGroup *grp);
/* Index of v among grp's outside operands, of n among its members; -1 if absent. */
int cg_elem_group_ext(const CgcElemGroup *grp, IrValue v);
int cg_elem_group_member(const CgcElemGroup *grp, const IrNode *n);
/* The loop nest of a fused group over its root's output: one loop per
 * output dim of size > 1, outermost first, with the output's stride and each
 * operand's broadcast stride (0 along a broadcast dim), adjacent loops merged
 * when every operand is affine across both.  loops holds IR_MAX_RANK entries;
 * grp->n_ext must be <= CG_MAX_EXT.  `who` names the node in errors (an
 * operand whose shape does not broadcast to the output). */
#define CG_MAX_EXT 64
typedef struct CgLoop {
    int64_t size;
    int64_t in_stride[CG_MAX_EXT];
    int64_t out_stride;
} CgLoop;
bool cg_elem_loops(const CgcElemGroup *grp, const char *who, CgLoop *loops, int *n_loops, Status *st);

/* ---- elementwise expressions (cg_group.c), shared by the C and CUDA
 * backends ---- */
#define CG_ELEM_LEN 320 /* one operand read: "a[" + index expression + "]" */
/* Appends s to buf (cap bytes, *len used), truncating safely. */
void cg_append(char *buf, size_t cap, size_t *len, const char *s);
/* expr with its identifier tokens A, B, C replaced by elems[0..2]; false
 * when the result does not fit in cap bytes. */
bool cg_expr_subst(const char *expr, const char *const *elems, int n_elems, char *buf, size_t cap);
/* Parameter name of external operand k: a, b, ..., z ('y', the output,
 * skipped), then x26, x27, ... */
void cg_elem_ext_name(int k, char *buf, size_t n);
/* The expression of member m of grp ("((a[i0]) - (t0))"): members are read
 * as t<m>, external operand k as ext[k]; a cast is a C cast (to bool:
 * != 0); x ** 2 is one multiply (the same correctly rounded value as pow);
 * with pow_double an integer pow goes through double (device code has no
 * integer pow).  who prefixes errors ("codegen", "cuda codegen"). */
bool cg_elem_member_expr(const CgcElemGroup *grp, int m, char ext[][CG_ELEM_LEN], bool pow_double, const char *who,
                         char *buf, size_t cap, Status *st);
bool cgc_emit_elem(CgOut *o, const CgcElemGroup *grp, const char *kname, Status *st);
bool cgc_emit_call(CgOut *o, const IrNode *n, const char *kname, Status *st);
bool cgc_kernel_returns_status(const IrNode *n);
bool cgc_has_workspace(const IrNode *n);
/* Whether n's kernel takes the run-time sizes (ir/dyn.c) as a last
 * argument `const int64_t *sym`. */
bool cgc_needs_sym(const IrNode *n);
/* Writes the comment block above a kernel (TF origin, types). */
void cgc_kernel_comment(CgOut *o, const IrNode *n, const char *kname, const char *const *in_names,
                        const char *const *out_names, const char *extra);

#endif
