/* compiler/onnx/onnx_ops_ctl.c - ONNX control flow (If, Loop, Scan) and the
 * ops whose output size depends on the data (Compress, Unique,
 * NonMaxSuppression), which are folded at compile time when their inputs are
 * constant (NonZero too); MaxUnpool with constant indices.  Their rows are in onnx_ops_flow[] (onnx_ops_flow.c).
 *
 * Subgraphs: an ONNX subgraph reads outer values by name.  A branch or loop
 * body that becomes an IR region (isolated: it reads only its parameters)
 * gets one parameter per outer value it reads (onnx_free_names), passed as
 * an extra operand of the COND / WHILE; outer constants are copied into the
 * region instead, so they still fold there.  An If whose condition is
 * constant is inlined; Scan is unrolled over its static length.
 *
 * Loop -> WHILE with loop variables [iteration, keep going, v..., M,
 * captures..., scan buffers...]; the cond region is `keep && i < M`.  Scan
 * outputs of a Loop need a constant trip count M: they are [M, ...]
 * buffers written with update_slice at row i (a loop that stops early
 * leaves the remaining rows zero).
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/onnx/onnx_int.h"

#define LOOP_UNROLL_MAX 16 /* constant trip counts up to this are unrolled */

static const IrType *type_of(IrValue v)
{
    return ir_value_type(v);
}

static IrValue reshape_to(IrGraph *g, IrValue a, int rank, const int64_t *dims, Status *st)
{
    if (!a.node)
        return a;
    IrShape s = ir_shape_make(rank, dims);
    return ir_reshape(g, a, &s, st);
}

static bool nomem(OnnxCtx *c)
{
    return st_errorf(c->st, ST_NOMEM, "out of memory");
}

/* A one-element value as a bool scalar of graph g. */
static IrValue to_bool_scalar(OnnxCtx *c, IrGraph *g, IrValue v, const char *what)
{
    const IrType *t = type_of(v);
    if (ir_shape_count(&t->shape) != 1) {
        char b[80];
        onnx_errorf(c, "%s must have one element, got %s", what, ir_shape_str(&t->shape, b, sizeof b));
        return (IrValue){NULL, 0};
    }
    if (t->shape.rank)
        v = reshape_to(g, v, 0, NULL, c->st);
    if (v.node && t->dtype != TCRT_BOOL)
        v = ir_binary(g, OP_NE, v, ir_const_scalar_f(g, t->dtype, 0, c->st), c->st);
    return v;
}

/* ---- captured outer values ---- */

typedef struct Caps {
    const char **names;           /* free names of the subgraph(s) that resolve outside */
    IrValue *outer;               /* their values in c's graph */
    int n;
    IrValue *operands;            /* the non-constant ones, in order */
    int n_operands;
} Caps;

static void caps_free(Caps *k)
{
    free(k->names);
    free(k->outer);
    free(k->operands);
    memset(k, 0, sizeof *k);
}

/* Adds the free names of gp that c's scope resolves (unresolved ones are
 * left to the subgraph's own "not defined" error). */
static bool caps_add(OnnxCtx *c, Caps *k, const Onnx__GraphProto *gp)
{
    const char **fn;
    int nf;
    if (!onnx_free_names(c, gp, &fn, &nf))
        return false;
    const char **nn = realloc(k->names, (size_t)(k->n + nf + 1) * sizeof *nn);
    if (nn)
        k->names = nn;
    IrValue *no = realloc(k->outer, (size_t)(k->n + nf + 1) * sizeof *no);
    if (no)
        k->outer = no;
    IrValue *nop = realloc(k->operands, (size_t)(k->n + nf + 1) * sizeof *nop);
    if (nop)
        k->operands = nop;
    if (!nn || !no || !nop) {
        free(fn);
        return nomem(c);
    }
    for (int i = 0; i < nf; i++) {
        const IrValue *v = onnx_lookup(c, fn[i]);
        bool dup = false;
        for (int j = 0; j < k->n && !dup; j++)
            dup = !strcmp(k->names[j], fn[i]);
        if (!v || dup)
            continue;
        if (!v->node) {
            bool r = onnx_errorf(c, "the subgraph reads '%s', a sequence or an optional, which cannot enter a "
                                    "region (a run-time If or a while loop)",
                                 fn[i]);
            free(fn);
            return r;
        }
        k->names[k->n] = fn[i];
        k->outer[k->n++] = *v;
        if (!ir_is_const(*v))
            k->operands[k->n_operands++] = *v;
    }
    free(fn);
    return true;
}

/* The captures inside region r: parameters (appended to r's feeds in order)
 * for the non-constant ones, copies for constants.  vals[k->n]. */
static bool caps_bind(OnnxCtx *c, const Caps *k, IrGraph *r, IrValue *vals)
{
    for (int i = 0; i < k->n; i++) {
        IrValue v = k->outer[i];
        const IrType *t = type_of(v);
        if (ir_is_const(v))
            vals[i] = ir_const(r, t->dtype, &t->shape, v.node->data, c->st);
        else
            vals[i] = ir_add_feed(r, k->names[i], t, c->st);
        TRY(vals[i]);
    }
    return true;
}

/* The non-constant captures' parameters of a region, in operand order. */
static int caps_params(const Caps *k, const IrValue *vals, IrValue *out)
{
    int n = 0;
    for (int i = 0; i < k->n; i++)
        if (!ir_is_const(k->outer[i]))
            out[n++] = vals[i];
    return n;
}

/* ---- If ---- */

/* A branch result as its tensors (leaves, in order) and a signature of
 * its structure: 't' a tensor, "s<n>(...)" a sequence, "o<n>(...)" an
 * optional.  Both branches of a run-time If must have the same signature. */
static bool flatten(OnnxCtx *c, IrValue v, IrValue *leaves, int *nl, int max, char *sig, size_t nsig, int depth)
{
    size_t k = strlen(sig);
    if (v.node) {
        if (*nl >= max || k + 2 > nsig)
            return onnx_errorf(c, "too many branch results");
        leaves[(*nl)++] = v;
        sig[k] = 't', sig[k + 1] = 0;
        return true;
    }
    const OnnxSeq *s = onnx_seq_get(c, v);
    if (!s || depth > 8)
        return onnx_errorf(c, "a branch result is empty");
    snprintf(sig + k, nsig - k, "%c%d(", s->is_optional ? 'o' : 's', s->n);
    for (int i = 0; i < s->n; i++)
        if (!flatten(c, s->v[i], leaves, nl, max, sig, nsig, depth + 1))
            return false;
    k = strlen(sig);
    if (k + 2 > nsig)
        return onnx_errorf(c, "too many branch results");
    sig[k] = ')', sig[k + 1] = 0;
    return true;
}

/* Rebuilds the structure of v (a branch result) from the COND outputs
 * outs[*pos...]. */
static IrValue rebuild(OnnxCtx *c, IrValue v, const IrValue *outs, int *pos)
{
    if (v.node)
        return outs[(*pos)++];
    const OnnxSeq *s = onnx_seq_get(c, v);
    IrValue *el = calloc((size_t)s->n + 1, sizeof *el), r = {NULL, 0};
    if (!el) {
        nomem(c);
        return r;
    }
    int n = s->n;
    bool opt = s->is_optional;
    for (int i = 0; i < n; i++)
        if (!(el[i] = rebuild(c, onnx_seq_get(c, v)->v[i], outs, pos)).node && !onnx_is_seq(el[i])) {
            free(el);
            return r;
        }
    r = onnx_seq_new(c, el, n, opt);
    free(el);
    return r;
}

#define IF_MAX_LEAVES 256

bool onnx_lower_if(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    const Onnx__GraphProto *gp[2];
    static const char *const attr[2] = {"then_branch", "else_branch"};
    if (n_in < 1 || !in[0].node)
        return onnx_errorf(c, "input 0 (cond) is required");
    if (!onnx_attr_graph(c, attr[0], &gp[0]) || !onnx_attr_graph(c, attr[1], &gp[1]))
        return false;
    size_t n_out = c->nd->n_output;
    for (int b = 0; b < 2; b++)
        if (gp[b]->n_output != n_out)
            return onnx_errorf(c, "attribute '%s' has %zu outputs, the node has %zu", attr[b], gp[b]->n_output,
                               n_out);
    IrValue sel = to_bool_scalar(c, c->g, in[0], "cond");
    TRY(sel);
    double v;
    if (ir_const_scalar(sel, &v)) {
        int b = v != 0 ? 0 : 1;
        return onnx_lower_graph(c, attr[b], gp[b], c->g, NULL, 0, NULL, NULL, 0, true, out);
    }
    /* A run-time condition: both branches become regions.  Sequence and
     * optional results are passed as their tensors (flatten) when both
     * branches give the same structure, and rebuilt after the COND. */
    Caps k = {0};
    IrValue *vals = NULL, *res = NULL, *ops = NULL, *leaves = NULL, *res0 = NULL;
    char sig[2][1024];
    int nl[2] = {0, 0};
    IrGraph *regions[2];
    bool ok = caps_add(c, &k, gp[0]) && caps_add(c, &k, gp[1]);
    if (ok) {
        vals = calloc((size_t)k.n + 1, sizeof *vals);
        res = calloc(n_out + 1, sizeof *res);
        res0 = calloc(n_out + 1, sizeof *res0);
        ops = calloc((size_t)k.n_operands + 1, sizeof *ops);
        leaves = calloc(IF_MAX_LEAVES, sizeof *leaves);
        if (!vals || !res || !res0 || !ops || !leaves)
            ok = nomem(c);
    }
    for (int b = 0; ok && b < 2; b++) {
        regions[b] = ir_region_new(c->g, c->st);
        ok = regions[b] && caps_bind(c, &k, regions[b], vals) &&
             onnx_lower_graph(c, attr[b], gp[b], regions[b], NULL, 0, k.names, vals, k.n, false, res);
        sig[b][0] = 0;
        for (size_t i = 0; ok && i < n_out; i++)
            ok = flatten(c, res[i], leaves, &nl[b], IF_MAX_LEAVES, sig[b], sizeof sig[b], 0);
        if (ok && b == 1 && strcmp(sig[0], sig[1]))
            ok = onnx_errorf(c, "the branches give sequences or optionals of different lengths or presence "
                                "(then %s, else %s): the condition must be a compile-time constant",
                             sig[0], sig[1]);
        for (int i = 0; ok && i < nl[b]; i++) {
            char nm[32];
            snprintf(nm, sizeof nm, "out%d", i);
            ok = ir_add_fetch(regions[b], nm, leaves[i], c->st);
        }
        nl[b] = 0;
        if (ok && b == 0)
            memcpy(res0, res, n_out * sizeof *res);
        if (ok)
            regions[b]->fold_on_build = false;
    }
    if (ok) {
        ops[0] = sel;
        memcpy(ops + 1, k.operands, (size_t)k.n_operands * sizeof *ops);
        IrNode *n = ir_emit_region(c->g, OP_COND, ops, k.n_operands + 1, regions, 2, c->st);
        ok = n != NULL;
        for (int i = 0; ok && i < n->n_outputs && i < IF_MAX_LEAVES; i++)
            leaves[i] = (IrValue){n, i};
        int pos = 0;
        for (size_t i = 0; ok && i < n_out; i++) {
            out[i] = rebuild(c, res0[i], leaves, &pos);
            ok = out[i].node || onnx_is_seq(out[i]);
        }
    }
    free(vals);
    free(res);
    free(res0);
    free(leaves);
    free(ops);
    caps_free(&k);
    return ok;
}

/* ---- Loop ---- */

/* A loop with a small constant trip count: the body inlined M times, with
 * the iteration number a constant in each copy (so Slice and Gather on it
 * stay static).  A run-time condition masks the updates: once it is false
 * the values keep their last state and scan rows are zero. */
static IrValue select3(OnnxCtx *c, IrValue m, IrValue a, IrValue b)
{
    if (!m.node || !a.node || !b.node)
        return (IrValue){NULL, 0};
    IrType t = {TCRT_BOOL, type_of(a)->shape};
    if (type_of(m)->shape.rank != t.shape.rank)
        m = ir_emit1(c->g, OP_BROADCAST, &m, 1, NULL, &t, c->st);
    if (!m.node)
        return m;
    return ir_emit1(c->g, OP_SELECT, (IrValue[]){m, a, b}, 3, NULL, NULL, c->st);
}

static bool unroll_loop(OnnxCtx *c, const Onnx__GraphProto *body, int64_t M, IrValue keep, const IrValue *v0, int N,
                        int K, IrValue *out)
{
    IrValue *rows = calloc((size_t)((M ? M : 1) * (K ? K : 1)), sizeof *rows);
    IrValue *v = calloc((size_t)N + 1, sizeof *v), *args = calloc((size_t)N + 3, sizeof *args),
            *res = calloc(body->n_output + 1, sizeof *res);
    bool ok = rows && v && args && res ? true : nomem(c);
    for (int i = 0; ok && i < N; i++) {
        v[i] = v0[i];
        if (!v[i].node && !onnx_is_seq(v[i]))
            ok = onnx_errorf(c, "loop-carried input %d is empty", i);
    }
    int64_t ran = 0;
    for (int64_t it = 0; ok && it < M; it++) {
        double kv;
        bool keep_const = ir_const_scalar(keep, &kv);
        if (keep_const && kv == 0)
            break;
        args[0] = ir_const_scalar_f(c->g, TCRT_I64, (double)it, c->st);
        args[1] = keep;
        memcpy(args + 2, v, (size_t)N * sizeof *v);
        ok = args[0].node && onnx_lower_graph(c, "body", body, c->g, args, N + 2, NULL, NULL, 0, true, res);
        if (!ok)
            break;
        for (int i = 0; ok && i < N; i++) {
            if (onnx_is_seq(v[i]) || onnx_is_seq(res[1 + i])) {
                if (!keep_const || !onnx_is_seq(v[i]) || !onnx_is_seq(res[1 + i]))
                    ok = onnx_errorf(c, "loop-carried sequence %d needs a constant loop condition", i);
                v[i] = res[1 + i];
                continue;
            }
            const IrType *t0 = type_of(v[i]), *t1 = type_of(res[1 + i]);
            char b0[80], b1[80];
            if (t0->dtype != t1->dtype || !ir_shape_eq(&t0->shape, &t1->shape))
                ok = onnx_errorf(c, "attribute 'body': loop-carried value %d enters as %s%s and leaves as %s%s; "
                                    "tfcc needs its type and shape to stay the same",
                                 i, tcrt_dtype_name(t0->dtype), ir_shape_str(&t0->shape, b0, sizeof b0),
                                 tcrt_dtype_name(t1->dtype), ir_shape_str(&t1->shape, b1, sizeof b1));
            else
                v[i] = keep_const ? res[1 + i] : select3(c, keep, res[1 + i], v[i]);
            ok = ok && v[i].node;
        }
        for (int j = 0; ok && j < K; j++) {
            IrValue s = res[1 + N + j];
            if (!keep_const)
                s = select3(c, keep, s, ir_binary(c->g, OP_MUL, s, ir_const_scalar_f(c->g, type_of(s)->dtype, 0, c->st), c->st));
            ok = (rows[j * M + it] = s).node != NULL;
        }
        IrValue cn = ok ? to_bool_scalar(c, c->g, res[0], "attribute 'body': output 0 (condition)") : res[0];
        keep = cn.node ? (keep_const ? cn : ir_binary(c->g, OP_AND, keep, cn, c->st)) : cn;
        ok = ok && keep.node;
        ran = it + 1;
    }
    for (int i = 0; ok && i < N; i++)
        out[i] = v[i];
    for (int j = 0; ok && j < K; j++) {
        if (ran == 0) {
            ok = onnx_errorf(c, "scan output %d is empty (the loop runs no iteration), which is not supported", j);
            break;
        }
        const IrType *t = type_of(rows[j * M]);
        IrShape us = {t->shape.rank + 1, {1}};
        if (us.rank > IR_MAX_RANK) {
            ok = onnx_errorf(c, "scan output %d has rank %d, too high to stack", j, t->shape.rank);
            break;
        }
        memcpy(us.dims + 1, t->shape.dims, (size_t)t->shape.rank * sizeof(int64_t));
        for (int64_t it = 0; ok && it < M; it++) {
            if (it >= ran) /* never ran: zero rows */
                rows[j * M + it] = ir_binary(c->g, OP_MUL, rows[j * M], ir_const_scalar_f(c->g, t->dtype, 0, c->st), c->st);
            ok = (rows[j * M + it] = ir_reshape(c->g, rows[j * M + it], &us, c->st)).node != NULL;
        }
        IrParams p;
        memset(&p, 0, sizeof p);
        if (ok)
            out[N + j] = M == 1 ? rows[j * M] : ir_emit1(c->g, OP_CONCAT, rows + j * M, (int)M, &p, NULL, c->st);
        ok = ok && out[N + j].node;
    }
    free(rows);
    free(v);
    free(args);
    free(res);
    return ok;
}

bool onnx_lower_loop(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    const Onnx__GraphProto *body;
    if (!onnx_attr_graph(c, "body", &body))
        return false;
    if (n_in < 2)
        return onnx_errorf(c, "needs inputs M and cond (either may be empty)");
    int N = n_in - 2;
    int K = (int)body->n_output - 1 - N;
    if ((int)body->n_input != N + 2)
        return onnx_errorf(c, "attribute 'body': the graph has %zu inputs, the node needs 2 + %d (iteration, "
                              "condition and the loop-carried values)",
                           body->n_input, N);
    if (K < 0 || (int)c->nd->n_output != N + K)
        return onnx_errorf(c, "attribute 'body': the graph has %zu outputs, the node needs 1 + %d (condition "
                              "and the loop-carried values) plus one per scan output (the node has %zu outputs)",
                           body->n_output, N, c->nd->n_output);
    IrGraph *g = c->g;
    Status *st = c->st;
    IrValue M = {NULL, 0};
    int64_t Mc = -1;
    if (in[0].node) {
        if (ir_shape_count(&type_of(in[0])->shape) != 1)
            return onnx_errorf(c, "M must be a scalar");
        M = reshape_to(g, ir_cast(g, in[0], TCRT_I64, st), 0, NULL, st);
        TRY(M);
        double mv;
        if (ir_const_scalar(M, &mv))
            Mc = (int64_t)mv;
    }
    if (K > 0 && Mc < 0)
        return onnx_errorf(c, "scan outputs need a constant trip count M (bind it with --const): tfcc "
                              "compiles static shapes only");
    if (K > 0 && Mc == 0)
        return onnx_errorf(c, "scan outputs of a loop with M = 0 are empty tensors, which are not supported");
    IrValue keep0 = in[1].node ? to_bool_scalar(c, g, in[1], "cond") : ir_const_scalar_f(g, TCRT_BOOL, 1, st);
    TRY(keep0);
    if (Mc >= 0 && Mc <= LOOP_UNROLL_MAX)
        return unroll_loop(c, body, Mc, keep0, in + 2, N, K, out);
    Caps k = {0};
    if (!caps_add(c, &k, body))
        return false;
    int nv = 2 + N + (M.node ? 1 : 0) + k.n_operands + K; /* loop variables */
    IrValue *ops = calloc((size_t)nv + 1, sizeof *ops), *prm = calloc((size_t)nv + 1, sizeof *prm),
            *cprm = calloc((size_t)nv + 1, sizeof *cprm), *vals = calloc((size_t)k.n + 1, sizeof *vals),
            *res = calloc(body->n_output + 1, sizeof *res), *fet = calloc((size_t)nv + 1, sizeof *fet);
    bool ok = ops && prm && cprm && vals && res && fet ? true : nomem(c);
    IrGraph *regions[2] = {NULL, NULL};
    int a = 0;
    if (ok) {
        ops[a++] = ir_const_scalar_f(g, TCRT_I64, 0, st);
        ops[a++] = keep0;
        for (int i = 0; i < N; i++) {
            ops[a++] = in[2 + i];
            if (!in[2 + i].node)
                ok = onnx_errorf(c, "loop-carried input %d is empty or a sequence (a sequence needs a constant "
                                    "trip count up to %d and a constant condition: the loop is then unrolled)",
                                 i, LOOP_UNROLL_MAX);
        }
        if (M.node)
            ops[a++] = M;
        memcpy(ops + a, k.operands, (size_t)k.n_operands * sizeof *ops);
        a += k.n_operands;
    }
    /* body: params [iter, keep, v..., M, captures...], then the scan buffers */
    if (ok) {
        regions[1] = ir_region_new(g, st);
        ok = regions[1] != NULL;
    }
    IrGraph *r = regions[1];
    for (int i = 0; ok && i < 2 + N + (M.node ? 1 : 0); i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "loop_var%d", i);
        prm[i] = ir_add_feed(r, nm, type_of(ops[i]), st);
        ok = prm[i].node != NULL;
    }
    ok = ok && caps_bind(c, &k, r, vals);
    ok = ok && onnx_lower_graph(c, "body", body, r, prm, 2 + N, k.names, vals, k.n, false, res);
    if (ok) {
        int f = 0;
        fet[f++] = ir_binary(r, OP_ADD, prm[0], ir_const_scalar_f(r, TCRT_I64, 1, st), st);
        fet[f++] = to_bool_scalar(c, r, res[0], "attribute 'body': output 0 (condition)");
        for (int i = 0; ok && i < N; i++) {
            const IrType *t0 = type_of(ops[2 + i]), *t1 = type_of(res[1 + i]);
            char b0[80], b1[80];
            if (t0->dtype != t1->dtype || !ir_shape_eq(&t0->shape, &t1->shape))
                ok = onnx_errorf(c, "attribute 'body': loop-carried value %d ('%s') enters as %s%s and leaves as "
                                    "%s%s; tfcc needs its type and shape to stay the same",
                                 i, body->input[2 + i]->name ? body->input[2 + i]->name : "",
                                 tcrt_dtype_name(t0->dtype), ir_shape_str(&t0->shape, b0, sizeof b0),
                                 tcrt_dtype_name(t1->dtype), ir_shape_str(&t1->shape, b1, sizeof b1));
            fet[f++] = res[1 + i];
        }
        if (M.node)
            fet[f++] = prm[2 + N];
        f += caps_params(&k, vals, fet + f);
        for (int j = 0; ok && j < K; j++) {
            IrValue sv = res[1 + N + j];
            const IrType *t = type_of(sv);
            if (t->shape.rank + 1 > IR_MAX_RANK) {
                ok = onnx_errorf(c, "scan output %d has rank %d, too high to stack", j, t->shape.rank);
                break;
            }
            IrType bt = {t->dtype, {t->shape.rank + 1, {Mc}}};
            memcpy(bt.shape.dims + 1, t->shape.dims, (size_t)t->shape.rank * sizeof(int64_t));
            IrValue zero = ir_const_scalar_f(g, t->dtype, 0, st);
            ops[a + j] = zero.node ? ir_emit1(g, OP_BROADCAST, &zero, 1, NULL, &bt, st) : zero;
            char nm[32];
            snprintf(nm, sizeof nm, "scan_buf%d", j);
            IrValue buf = ir_add_feed(r, nm, &bt, st);
            IrShape us = bt.shape;
            us.dims[0] = 1;
            IrValue upd = sv.node ? ir_reshape(r, sv, &us, st) : sv;
            int64_t zeros[IR_MAX_RANK] = {0};
            IrValue rest = ir_const_i64s(r, TCRT_I64, zeros, t->shape.rank, st);
            IrValue i1 = reshape_to(r, prm[0], 1, (int64_t[]){1}, st);
            IrValue start = i1;
            if (t->shape.rank > 0 && i1.node && rest.node) {
                IrParams p;
                memset(&p, 0, sizeof p);
                start = ir_emit1(r, OP_CONCAT, (IrValue[]){i1, rest}, 2, &p, NULL, st);
            }
            if (!ops[a + j].node || !buf.node || !upd.node || !start.node) {
                ok = false;
                break;
            }
            fet[f++] = ir_emit1(r, OP_UPDATE_SLICE, (IrValue[]){buf, upd, start}, 3, NULL, NULL, st);
        }
        for (int i = 0; ok && i < f; i++) {
            char nm[32];
            snprintf(nm, sizeof nm, "next%d", i);
            ok = fet[i].node && ir_add_fetch(r, nm, fet[i], st);
        }
        if (ok)
            r->fold_on_build = false;
    }
    /* cond: keep && iter < M */
    if (ok) {
        regions[0] = ir_region_new(g, st);
        ok = regions[0] != NULL;
    }
    for (int i = 0; ok && i < nv; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "loop_var%d", i);
        cprm[i] = ir_add_feed(regions[0], nm, type_of(ops[i]), st);
        ok = cprm[i].node != NULL;
    }
    if (ok) {
        IrValue go = cprm[1];
        if (M.node)
            go = ir_binary(regions[0], OP_AND, go, ir_binary(regions[0], OP_LT, cprm[0], cprm[2 + N], st), st);
        ok = go.node && ir_add_fetch(regions[0], "cond", go, st);
        regions[0]->fold_on_build = false;
    }
    if (ok) {
        IrNode *w = ir_emit_region(g, OP_WHILE, ops, nv, regions, 2, st);
        ok = w != NULL;
        for (int i = 0; ok && i < N; i++)
            out[i] = (IrValue){w, 2 + i};
        for (int j = 0; ok && j < K; j++)
            out[N + j] = (IrValue){w, nv - K + j};
    }
    free(ops);
    free(prm);
    free(cprm);
    free(vals);
    free(res);
    free(fet);
    caps_free(&k);
    return ok;
}

/* ---- Scan: unrolled ---- */

static IrValue take(OnnxCtx *c, IrValue x, int axis, int64_t t)
{
    const IrType *ty = type_of(x);
    IrParams p;
    memset(&p, 0, sizeof p);
    IrType o = *ty;
    for (int i = 0; i < ty->shape.rank; i++) {
        p.i[TCRT_SL_BEGIN + i] = i == axis ? t : 0;
        p.i[TCRT_SL_STRIDE + i] = 1;
    }
    o.shape.dims[axis] = 1;
    IrValue s = ir_emit1(c->g, OP_SLICE, &x, 1, &p, &o, c->st);
    IrShape r = ty->shape;
    for (int i = axis; i + 1 < r.rank; i++)
        r.dims[i] = r.dims[i + 1];
    r.rank--;
    return s.node ? ir_reshape(c->g, s, &r, c->st) : s;
}

bool onnx_lower_scan(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    const Onnx__GraphProto *body;
    int64_t n_scan;
    if (!onnx_attr_graph(c, "body", &body) || !onnx_attr_int(c, "num_scan_inputs", -1, &n_scan))
        return false;
    bool v8 = c->opset < 9;
    IrValue ins[64];
    int n = 0;
    for (int i = v8 ? 1 : 0; i < n_in; i++) {
        ins[n] = in[i];
        if (!ins[n].node)
            return onnx_errorf(c, "input %d is empty", i);
        if (v8) { /* batch axis 0: only batch 1, squeezed */
            const IrShape *s = &type_of(ins[n])->shape;
            if (s->rank < 1 || s->dims[0] != 1)
                return onnx_errorf(c, "Scan-8 with a batch size other than 1 is not supported");
            TRY(ins[n] = take(c, ins[n], 0, 0));
        }
        n++;
    }
    if (v8 && n_in > 0 && in[0].node) {
        int64_t lens[1];
        int nl;
        if (!ir_const_ints(in[0], lens, 1, &nl))
            return onnx_errorf(c, "sequence_lens must be constant");
    }
    if (n_scan < 1 || n_scan > n)
        return onnx_errorf(c, "attribute 'num_scan_inputs' is %lld, the node has %d inputs", (long long)n_scan, n);
    int N = n - (int)n_scan, Ms = (int)n_scan;
    int K = (int)body->n_output - N;
    if ((int)body->n_input != n)
        return onnx_errorf(c, "attribute 'body': the graph has %zu inputs, the node passes %d", body->n_input, n);
    if (K < 0 || (int)c->nd->n_output != N + K)
        return onnx_errorf(c, "attribute 'body': the graph has %zu outputs, the node has %zu", body->n_output,
                           c->nd->n_output);
    int64_t iax[64] = {0}, idir[64] = {0}, oax[64] = {0}, odir[64] = {0};
    int cnt;
    if (!onnx_attr_ints(c, v8 ? "directions" : "scan_input_directions", idir, 64, &cnt) ||
        !onnx_attr_ints(c, "scan_input_axes", iax, 64, &cnt) ||
        !onnx_attr_ints(c, "scan_output_directions", odir, 64, &cnt) ||
        !onnx_attr_ints(c, "scan_output_axes", oax, 64, &cnt))
        return false;
    int64_t T = -1;
    for (int j = 0; j < Ms; j++) {
        const IrShape *s = &type_of(ins[N + j])->shape;
        if (iax[j] < 0)
            iax[j] += s->rank;
        if (iax[j] < 0 || iax[j] >= s->rank)
            return onnx_errorf(c, "scan input %d: axis out of range", j);
        if (T >= 0 && s->dims[iax[j]] != T)
            return onnx_errorf(c, "scan inputs differ in length (%lld and %lld)", (long long)T,
                               (long long)s->dims[iax[j]]);
        T = s->dims[iax[j]];
    }
    if (T < 1 || T > 4096)
        return onnx_errorf(c, "scan length %lld: 1 to 4096 supported (Scan is unrolled)", (long long)T);
    IrValue *steps = calloc((size_t)(T * (K ? K : 1)), sizeof *steps);
    if (!steps)
        return nomem(c);
    IrValue state[64], args[64], res[128];
    bool ok = body->n_output <= 128;
    for (int i = 0; i < N; i++)
        state[i] = ins[i];
    for (int64_t s = 0; ok && s < T; s++) {
        for (int i = 0; i < N; i++)
            args[i] = state[i];
        for (int j = 0; ok && j < Ms; j++) {
            args[N + j] = take(c, ins[N + j], (int)iax[j], idir[j] ? T - 1 - s : s);
            ok = args[N + j].node != NULL;
        }
        ok = ok && onnx_lower_graph(c, "body", body, c->g, args, n, NULL, NULL, 0, true, res);
        for (int i = 0; ok && i < N; i++)
            state[i] = res[i];
        for (int kk = 0; ok && kk < K; kk++)
            steps[kk * T + (odir[kk] ? T - 1 - s : s)] = res[N + kk];
    }
    for (int i = 0; ok && i < N; i++)
        out[i] = state[i];
    for (int kk = 0; ok && kk < K; kk++) {
        const IrShape *es = &type_of(steps[kk * T])->shape;
        int64_t ax = oax[kk] < 0 ? oax[kk] + es->rank + 1 : oax[kk];
        if (ax < 0 || ax > es->rank || es->rank + 1 > IR_MAX_RANK) {
            ok = onnx_errorf(c, "scan output %d: axis out of range", kk);
            break;
        }
        IrShape us = {0};
        us.rank = es->rank + 1;
        for (int d = 0, e = 0; d < us.rank; d++)
            us.dims[d] = d == ax ? 1 : es->dims[e++];
        IrValue *parts = steps + kk * T;
        for (int64_t s = 0; ok && s < T; s++)
            ok = (parts[s] = ir_reshape(c->g, parts[s], &us, c->st)).node != NULL;
        IrParams p;
        memset(&p, 0, sizeof p);
        p.i[0] = ax;
        if (ok)
            out[N + kk] = T == 1 ? parts[0] : ir_emit1(c->g, OP_CONCAT, parts, (int)T, &p, NULL, c->st);
        ok = ok && out[N + kk].node;
    }
    if (ok && v8) /* the batch axis back */
        for (int i = 0; ok && i < N + K; i++) {
            IrShape s = type_of(out[i])->shape;
            memmove(s.dims + 1, s.dims, (size_t)s.rank * sizeof s.dims[0]);
            s.dims[0] = 1;
            s.rank++;
            ok = (out[i] = ir_reshape(c->g, out[i], &s, c->st)).node != NULL;
        }
    free(steps);
    return ok;
}

/* ---- Det: cofactor expansion over the matrix entries (n <= 4) ---- */

/* det of the submatrix of rows r0.. and the columns in cols[n]. */
static IrValue det_rec(OnnxCtx *c, IrValue e[4][4], int r0, const int *cols, int n)
{
    if (n == 1)
        return e[r0][cols[0]];
    IrValue acc = {NULL, 0};
    for (int j = 0; j < n; j++) {
        int sub[4], m = 0;
        for (int k = 0; k < n; k++)
            if (k != j)
                sub[m++] = cols[k];
        IrValue term = det_rec(c, e, r0 + 1, sub, n - 1);
        if (!term.node)
            return term;
        term = ir_binary(c->g, OP_MUL, e[r0][cols[j]], term, c->st);
        if (!acc.node)
            acc = term;
        else
            acc = ir_binary(c->g, j % 2 ? OP_SUB : OP_ADD, acc, term, c->st);
        if (!acc.node)
            return acc;
    }
    return acc;
}

bool onnx_lower_det(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (n_in < 1 || !in[0].node)
        return onnx_errorf(c, "input 0 is required");
    const IrType *t = type_of(in[0]);
    int r = t->shape.rank;
    if (r < 2 || t->shape.dims[r - 1] != t->shape.dims[r - 2])
        return onnx_errorf(c, "X must be [..., n, n]");
    int64_t n = t->shape.dims[r - 1];
    if (n < 1 || n > 4)
        return onnx_errorf(c, "matrices of size %lld: 1 to 4 supported", (long long)n);
    if (t->dtype != TCRT_F32 && t->dtype != TCRT_F64)
        return onnx_errorf(c, "X must be float or double");
    IrShape bs = t->shape;
    bs.rank = r - 2;
    IrValue e[4][4];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            IrParams p;
            memset(&p, 0, sizeof p);
            IrType o = *t;
            for (int d = 0; d < r; d++)
                p.i[TCRT_SL_STRIDE + d] = 1;
            p.i[TCRT_SL_BEGIN + r - 2] = i;
            p.i[TCRT_SL_BEGIN + r - 1] = j;
            o.shape.dims[r - 2] = o.shape.dims[r - 1] = 1;
            e[i][j] = ir_emit1(c->g, OP_SLICE, &in[0], 1, &p, &o, c->st);
            TRY(e[i][j]);
            TRY(e[i][j] = ir_reshape(c->g, e[i][j], &bs, c->st));
        }
    int cols[4] = {0, 1, 2, 3};
    out[0] = det_rec(c, e, 0, cols, (int)n);
    return out[0].node != NULL;
}

/* ---- Compress: constant condition -> gather ---- */

bool onnx_lower_compress(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (n_in < 2 || !in[0].node || !in[1].node)
        return onnx_errorf(c, "inputs input and condition are required");
    const Onnx__AttributeProto *ax = onnx_attr(c, "axis");
    int64_t axis;
    if (!onnx_attr_int(c, "axis", 0, &axis))
        return false;
    IrValue x = in[0];
    const IrShape *s = &type_of(x)->shape;
    if (!ax) { /* flattened */
        int64_t cnt = ir_shape_count(s);
        TRY(x = reshape_to(c->g, x, 1, &cnt, c->st));
        s = &type_of(x)->shape;
        axis = 0;
    }
    if (axis < -s->rank || axis >= s->rank)
        return onnx_errorf(c, "axis %lld is out of range for rank %d", (long long)axis, s->rank);
    if (axis < 0)
        axis += s->rank;
    const IrType *ct = type_of(in[1]);
    int64_t nc = ir_shape_count(&ct->shape);
    if (!ir_is_const(in[1]))
        return onnx_errorf(c, "the condition must be a compile-time constant (the output size depends on it; "
                              "bind it with --const)");
    int64_t *cond = malloc((size_t)(nc + 1) * sizeof *cond), *idx = malloc((size_t)(nc + 1) * sizeof *idx);
    int got = 0, k = 0;
    bool ok = cond && idx ? true : nomem(c);
    IrValue cv = ok && ct->dtype != TCRT_I64 ? ir_cast(c->g, in[1], TCRT_I64, c->st) : in[1];
    ok = ok && cv.node && ir_const_ints(cv, cond, (int)nc, &got);
    for (int64_t i = 0; ok && i < got && i < s->dims[axis]; i++)
        if (cond[i])
            idx[k++] = i;
    if (ok && k == 0)
        ok = onnx_errorf(c, "the condition selects nothing: empty outputs are not supported");
    if (ok) {
        IrValue iv = ir_const_i64s(c->g, TCRT_I64, idx, k, c->st);
        IrParams p;
        memset(&p, 0, sizeof p);
        p.i[0] = axis;
        out[0] = iv.node ? ir_emit1(c->g, OP_GATHER, (IrValue[]){x, iv}, 2, &p, NULL, c->st) : iv;
        ok = out[0].node != NULL;
    }
    free(cond);
    free(idx);
    return ok;
}

/* ---- MaxUnpool: constant indices ---- */

/* MaxUnpool(X, I[, output_shape]): X's values written at the flat output
 * positions I (MaxPool's Indices), zeros elsewhere.  With I constant, each
 * output position's source is known at compile time: a gather from the
 * flattened X and a select against zeros.  Output shape: output_shape, or
 * (in - 1) * stride + kernel - pad_begin - pad_end per spatial axis. */
bool onnx_lower_maxunpool(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (n_in < 2 || !in[0].node || !in[1].node)
        return onnx_errorf(c, "inputs X and I are required");
    const IrType *xt = type_of(in[0]);
    int r = xt->shape.rank, nk = 0, ns = 0, np = 0;
    int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], pads[2 * IR_MAX_RANK], os[IR_MAX_RANK];
    if (!onnx_attr_ints(c, "kernel_shape", k, IR_MAX_RANK, &nk) || !onnx_attr_ints(c, "strides", st, IR_MAX_RANK, &ns) ||
        !onnx_attr_ints(c, "pads", pads, 2 * IR_MAX_RANK, &np))
        return false;
    if (r < 3 || nk != r - 2 || (ns && ns != nk) || (np && np != 2 * nk))
        return onnx_errorf(c, "kernel_shape (%d), strides (%d) and pads (%d) do not fit X of rank %d", nk, ns, np,
                           r);
    int n_os = r;
    int64_t nat[IR_MAX_RANK], ntotal = 1;
    nat[0] = xt->shape.dims[0];
    nat[1] = xt->shape.dims[1];
    for (int d = 0; d < nk; d++)
        nat[d + 2] = (xt->shape.dims[d + 2] - 1) * (ns ? st[d] : 1) + k[d] - (np ? pads[d] + pads[d + nk] : 0);
    for (int d = 0; d < r; d++)
        ntotal *= nat[d] > 0 ? nat[d] : 1;
    memcpy(os, nat, sizeof nat);
    bool remap = n_in > 2 && in[2].node;
    if (remap) {
        if (!onnx_const_ints(c, in[2], "output_shape", os, IR_MAX_RANK, &n_os))
            return false;
        if (n_os != r || os[0] != xt->shape.dims[0] || os[1] != xt->shape.dims[1])
            return onnx_errorf(c, "output_shape must have rank %d and X's first two dims", r);
    }
    int64_t total = 1, cx = ir_shape_count(&xt->shape);
    for (int d = 0; d < r; d++) {
        if (os[d] <= 0 || (total *= os[d]) > ((int64_t)1 << 24))
            return onnx_errorf(c, "output shape dim %d is %lld (or the output is too large)", d, (long long)os[d]);
    }
    if (!ir_is_const(in[1]) || ir_shape_count(&type_of(in[1])->shape) != cx)
        return onnx_errorf(c, "I must be a compile-time constant of X's shape (bind it with --const)");
    int64_t *idx = malloc((size_t)(cx + 1) * sizeof *idx), *src = malloc((size_t)total * sizeof *src);
    uint8_t *mask = calloc((size_t)total, 1);
    void *zeros = calloc((size_t)total, tcrt_dtype_size(xt->dtype) ? tcrt_dtype_size(xt->dtype) : 1);
    int got = 0;
    IrValue iv = type_of(in[1])->dtype == TCRT_I64 ? in[1] : ir_cast(c->g, in[1], TCRT_I64, c->st);
    bool ok = idx && src && mask && zeros ? true : nomem(c);
    ok = ok && iv.node && ir_const_ints(iv, idx, (int)cx, &got) && got == cx;
    for (int64_t i = 0; ok && i < total; i++)
        src[i] = 0;
    /* with output_shape, an index is a position in the natural output
     * shape: the same coordinates in the given shape (ONNX's reference) */
    for (int64_t e = 0; ok && remap && e < cx; e++) {
        int64_t q = idx[e], j = 0, mul = 1;
        if (q < 0 || q >= ntotal)
            continue; /* reported below */
        for (int d = r - 1; d >= 0; d--) {
            int64_t co = q % nat[d];
            q /= nat[d];
            if (co >= os[d]) {
                j = -1;
                break;
            }
            j += co * mul;
            mul *= os[d];
        }
        idx[e] = j;
    }
    for (int64_t e = 0; ok && e < cx; e++) {
        if (idx[e] < 0 || idx[e] >= total)
            ok = onnx_errorf(c, "index %lld of I is outside the output (%lld elements)", (long long)idx[e],
                             (long long)total);
        else {
            src[idx[e]] = e;
            mask[idx[e]] = 1;
        }
    }
    if (ok) {
        IrShape fs = ir_shape_make(1, &total);
        IrValue xf = reshape_to(c->g, in[0], 1, &cx, c->st);
        IrValue sv = ir_const_i64s(c->g, TCRT_I64, src, (int)total, c->st);
        IrValue mv = ir_const(c->g, TCRT_BOOL, &fs, mask, c->st);
        IrValue zv = ir_const(c->g, xt->dtype, &fs, zeros, c->st);
        IrParams p;
        memset(&p, 0, sizeof p);
        IrValue gv = xf.node && sv.node ? ir_emit1(c->g, OP_GATHER, (IrValue[]){xf, sv}, 2, &p, NULL, c->st) : xf;
        IrValue y = gv.node && mv.node && zv.node
                        ? ir_emit1(c->g, OP_SELECT, (IrValue[]){mv, gv, zv}, 3, NULL, NULL, c->st)
                        : (IrValue){NULL, 0};
        out[0] = reshape_to(c->g, y, r, os, c->st);
        ok = out[0].node != NULL;
    }
    free(idx);
    free(src);
    free(mask);
    free(zeros);
    return ok;
}

/* ---- Unique: folded when the input is constant ---- */

static double const_at(IrValue v, int64_t i)
{
    const void *d = v.node->data;
    switch (type_of(v)->dtype) {
    case TCRT_F32: return ((const float *)d)[i];
    case TCRT_F64: return ((const double *)d)[i];
    case TCRT_I32: return ((const int32_t *)d)[i];
    case TCRT_I64: return (double)((const int64_t *)d)[i];
    case TCRT_I8: return ((const int8_t *)d)[i];
    case TCRT_U8:
    case TCRT_BOOL: return ((const uint8_t *)d)[i];
    default: return 0;
    }
}

typedef struct UniqCtx {
    IrValue x;
    int64_t outer, n, inner;
} UniqCtx;

/* Lexicographic comparison of slices a and b along the axis. */
static int slice_cmp(const UniqCtx *u, int64_t a, int64_t b)
{
    for (int64_t o = 0; o < u->outer; o++)
        for (int64_t i = 0; i < u->inner; i++) {
            double va = const_at(u->x, (o * u->n + a) * u->inner + i), vb = const_at(u->x, (o * u->n + b) * u->inner + i);
            if (va != vb)
                return va < vb ? -1 : 1;
        }
    return 0;
}

/* NonZero: folded when the input is constant: the [rank, count] int64
 * indices of the non-zero elements in row-major order. */
bool onnx_lower_nonzero(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (n_in < 1 || !in[0].node)
        return onnx_errorf(c, "input 0 is required");
    IrValue x = in[0];
    if (!ir_is_const(x))
        return onnx_errorf(c, "the input must be a compile-time constant (the output size depends on its values; "
                              "bind it with --const)");
    tcrt_dtype dt = type_of(x)->dtype;
    if (dt != TCRT_F32 && dt != TCRT_F64 && dt != TCRT_I32 && dt != TCRT_I64 && dt != TCRT_I8 && dt != TCRT_U8 &&
        dt != TCRT_BOOL)
        return onnx_errorf(c, "element type %s is not supported", tcrt_dtype_name(dt));
    const IrShape s = type_of(x)->shape;
    int64_t cnt = ir_shape_count(&s), nz = 0;
    for (int64_t i = 0; i < cnt; i++)
        nz += const_at(x, i) != 0;
    if (nz == 0)
        return onnx_errorf(c, "the input has no non-zero element: empty outputs are not supported");
    int r = s.rank ? s.rank : 1;
    int64_t *idx = malloc((size_t)(r * nz) * sizeof *idx), k = 0;
    if (!idx)
        return nomem(c);
    for (int64_t i = 0; i < cnt; i++) {
        if (const_at(x, i) == 0)
            continue;
        int64_t q = i;
        for (int d = s.rank - 1; d >= 0; d--) {
            idx[d * nz + k] = q % s.dims[d];
            q /= s.dims[d];
        }
        if (!s.rank)
            idx[k] = 0;
        k++;
    }
    IrShape os = ir_shape_make(2, (int64_t[]){r, nz});
    out[0] = ir_const(c->g, TCRT_I64, &os, idx, c->st);
    free(idx);
    return out[0].node != NULL;
}

bool onnx_lower_unique(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (n_in < 1 || !in[0].node)
        return onnx_errorf(c, "input 0 is required");
    const Onnx__AttributeProto *ax = onnx_attr(c, "axis");
    int64_t axis, sorted;
    if (!onnx_attr_int(c, "axis", 0, &axis) || !onnx_attr_int(c, "sorted", 1, &sorted))
        return false;
    IrValue x = in[0];
    if (!ir_is_const(x))
        return onnx_errorf(c, "the input must be a compile-time constant (the output size depends on its values; "
                              "bind it with --const)");
    tcrt_dtype dt = type_of(x)->dtype;
    if (dt != TCRT_F32 && dt != TCRT_F64 && dt != TCRT_I32 && dt != TCRT_I64 && dt != TCRT_I8 && dt != TCRT_U8 &&
        dt != TCRT_BOOL)
        return onnx_errorf(c, "element type %s is not supported", tcrt_dtype_name(dt));
    if (!ax) {
        int64_t cnt = ir_shape_count(&type_of(x)->shape);
        TRY(x = reshape_to(c->g, x, 1, &cnt, c->st));
        axis = 0;
    }
    const IrShape *s = &type_of(x)->shape;
    if (axis < -s->rank || axis >= s->rank)
        return onnx_errorf(c, "axis %lld is out of range for rank %d", (long long)axis, s->rank);
    if (axis < 0)
        axis += s->rank;
    UniqCtx u = {x, 1, s->dims[axis], 1};
    for (int d = 0; d < axis; d++)
        u.outer *= s->dims[d];
    for (int d = (int)axis + 1; d < s->rank; d++)
        u.inner *= s->dims[d];
    if (u.n == 0)
        return onnx_errorf(c, "empty input: empty outputs are not supported");
    int64_t *first = malloc((size_t)u.n * sizeof *first), *inv = malloc((size_t)u.n * sizeof *inv),
            *cnt = calloc((size_t)u.n, sizeof *cnt);
    bool ok = first && inv && cnt ? true : nomem(c);
    int64_t nu = 0;
    for (int64_t k = 0; ok && k < u.n; k++) { /* first-occurrence order */
        int64_t j = 0;
        while (j < nu && slice_cmp(&u, first[j], k) != 0)
            j++;
        if (j == nu)
            first[nu++] = k;
        inv[k] = j;
        cnt[j]++;
    }
    if (ok && sorted) { /* insertion sort of the unique slices, carrying counts and remapping inv */
        int64_t *perm = malloc((size_t)nu * sizeof *perm), *rank = malloc((size_t)nu * sizeof *rank),
                *f2 = malloc((size_t)nu * sizeof *f2), *c2 = malloc((size_t)nu * sizeof *c2);
        ok = perm && rank && f2 && c2 ? true : nomem(c);
        for (int64_t i = 0; ok && i < nu; i++) {
            int64_t j = i;
            while (j > 0 && slice_cmp(&u, first[perm[j - 1]], first[i]) > 0) {
                perm[j] = perm[j - 1];
                j--;
            }
            perm[j] = i;
        }
        for (int64_t i = 0; ok && i < nu; i++) {
            rank[perm[i]] = i;
            f2[i] = first[perm[i]];
            c2[i] = cnt[perm[i]];
        }
        for (int64_t i = 0; ok && i < nu; i++) {
            first[i] = f2[i];
            cnt[i] = c2[i];
        }
        for (int64_t k = 0; ok && k < u.n; k++)
            inv[k] = rank[inv[k]];
        free(perm);
        free(rank);
        free(f2);
        free(c2);
    }
    if (ok) {
        IrValue idx = ir_const_i64s(c->g, TCRT_I64, first, (int)nu, c->st);
        IrParams p;
        memset(&p, 0, sizeof p);
        p.i[0] = axis;
        out[0] = idx.node ? ir_emit1(c->g, OP_GATHER, (IrValue[]){x, idx}, 2, &p, NULL, c->st) : idx;
        out[1] = idx;
        out[2] = ir_const_i64s(c->g, TCRT_I64, inv, (int)u.n, c->st);
        out[3] = ir_const_i64s(c->g, TCRT_I64, cnt, (int)nu, c->st);
        ok = out[0].node && out[2].node && out[3].node;
    }
    free(first);
    free(inv);
    free(cnt);
    return ok;
}

/* ---- NonMaxSuppression: folded when every input is constant ---- */

typedef struct NmsBox {
    double y1, x1, y2, x2, score;
    int64_t index;
} NmsBox;

static int nms_cmp(const void *a, const void *b)
{
    const NmsBox *p = a, *q = b;
    if (p->score != q->score)
        return p->score > q->score ? -1 : 1;
    return p->index < q->index ? -1 : p->index > q->index;
}

static double nms_iou(const NmsBox *a, const NmsBox *b)
{
    double ih = (a->y2 < b->y2 ? a->y2 : b->y2) - (a->y1 > b->y1 ? a->y1 : b->y1);
    double iw = (a->x2 < b->x2 ? a->x2 : b->x2) - (a->x1 > b->x1 ? a->x1 : b->x1);
    if (ih <= 0 || iw <= 0)
        return 0;
    double inter = ih * iw;
    double uni = (a->y2 - a->y1) * (a->x2 - a->x1) + (b->y2 - b->y1) * (b->x2 - b->x1) - inter;
    return uni > 0 ? inter / uni : 0;
}

bool onnx_lower_nms(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (n_in < 2 || !in[0].node || !in[1].node)
        return onnx_errorf(c, "inputs boxes and scores are required");
    for (int i = 0; i < n_in && i < 5; i++)
        if (in[i].node && !ir_is_const(in[i]))
            return onnx_errorf(c, "input %d must be a compile-time constant: the number of selected boxes depends "
                                  "on the values, and tfcc compiles static shapes only (bind it with --const)",
                               i);
    int64_t cpb;
    if (!onnx_attr_int(c, "center_point_box", 0, &cpb))
        return false;
    const IrShape *bs = &type_of(in[0])->shape, *ss = &type_of(in[1])->shape;
    if (bs->rank != 3 || bs->dims[2] != 4 || ss->rank != 3 || ss->dims[0] != bs->dims[0] || ss->dims[2] != bs->dims[1])
        return onnx_errorf(c, "boxes must be [B,N,4] and scores [B,C,N]");
    int64_t B = bs->dims[0], N = bs->dims[1], C = ss->dims[1];
    double max_out = 0, iou_th = 0, score_th = 0;
    bool has_score_th = n_in > 4 && in[4].node;
    if ((n_in > 2 && in[2].node && !ir_const_scalar(in[2], &max_out)) ||
        (n_in > 3 && in[3].node && !ir_const_scalar(in[3], &iou_th)) ||
        (has_score_th && !ir_const_scalar(in[4], &score_th)))
        return onnx_errorf(c, "max_output_boxes_per_class, iou_threshold and score_threshold must have one value");
    NmsBox *cand = malloc((size_t)(N ? N : 1) * sizeof *cand);
    int64_t *sel = malloc((size_t)(N ? N : 1) * sizeof *sel);
    int64_t *rows = malloc((size_t)(B * C * N * 3 + 3) * sizeof *rows);
    bool ok = cand && sel && rows ? true : nomem(c);
    int64_t nr = 0;
    for (int64_t b = 0; ok && b < B; b++)
        for (int64_t cl = 0; cl < C; cl++) {
            int64_t nc = 0;
            for (int64_t i = 0; i < N; i++) {
                double sc = const_at(in[1], (b * C + cl) * N + i);
                if (has_score_th && !(sc > score_th))
                    continue;
                double v[4];
                for (int q = 0; q < 4; q++)
                    v[q] = const_at(in[0], (b * N + i) * 4 + q);
                NmsBox x = {0, 0, 0, 0, sc, i};
                if (cpb) { /* x_center, y_center, width, height */
                    x.x1 = v[0] - v[2] / 2, x.x2 = v[0] + v[2] / 2;
                    x.y1 = v[1] - v[3] / 2, x.y2 = v[1] + v[3] / 2;
                } else { /* corners in either order */
                    x.y1 = v[0] < v[2] ? v[0] : v[2], x.y2 = v[0] < v[2] ? v[2] : v[0];
                    x.x1 = v[1] < v[3] ? v[1] : v[3], x.x2 = v[1] < v[3] ? v[3] : v[1];
                }
                cand[nc++] = x;
            }
            qsort(cand, (size_t)nc, sizeof *cand, nms_cmp);
            int64_t ns = 0;
            for (int64_t i = 0; i < nc && ns < (int64_t)max_out; i++) {
                bool keep = true;
                for (int64_t j = 0; j < ns && keep; j++)
                    keep = !(nms_iou(&cand[i], &cand[sel[j]]) > iou_th);
                if (keep) {
                    sel[ns++] = i;
                    rows[nr * 3] = b, rows[nr * 3 + 1] = cl, rows[nr * 3 + 2] = cand[i].index;
                    nr++;
                }
            }
        }
    if (ok && nr == 0)
        ok = onnx_errorf(c, "no box is selected: empty outputs are not supported");
    if (ok) {
        IrShape os = ir_shape_make(2, (int64_t[]){nr, 3});
        out[0] = ir_const(c->g, TCRT_I64, &os, rows, c->st);
        ok = out[0].node != NULL;
    }
    free(cand);
    free(sel);
    free(rows);
    return ok;
}
