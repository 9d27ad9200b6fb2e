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
/* Writes a double as a C literal that reads back exactly (INFINITY/NAN spelled). */
void cg_double_lit(double v, char *buf, size_t n);

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
bool cgc_emit_elem(CgOut *o, const CgcElemGroup *grp, const char *kname, Status *st);
bool cgc_emit_call(CgOut *o, const IrNode *n, const char *kname, Status *st);
bool cgc_kernel_returns_status(const IrNode *n);
bool cgc_has_workspace(const IrNode *n);
/* Writes the comment block above a kernel (TF origin, types). */
void cgc_kernel_comment(CgOut *o, const IrNode *n, const char *kname, const char *const *in_names,
                        const char *const *out_names, const char *extra);

#endif
