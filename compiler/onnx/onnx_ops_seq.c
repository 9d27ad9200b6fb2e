/* compiler/onnx/onnx_ops_seq.c - ONNX sequence and optional ops, resolved at
 * import time.
 *
 * A sequence (or an optional) is a list of IR tensors that exists only while
 * the model is imported: the value table maps its name to IrValue {NULL, id}
 * (onnx_int.h), and the ops here build new lists or read elements, so every
 * position and length must be a compile-time constant.  What reaches the IR
 * is only tensors: SequenceAt is the element itself, ConcatFromSequence a
 * concat, SplitToSequence slices, SequenceLength a constant.  SequenceMap
 * inlines its body once per element.  A sequence cannot be a graph input or
 * output, nor cross a run-time If or a while loop.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/onnx/onnx_int.h"

struct OnnxSeqs {
    OnnxSeq *s;
    int n, cap;
};

struct OnnxSeqs *onnx_seqs_new(void)
{
    return calloc(1, sizeof(struct OnnxSeqs));
}

void onnx_seqs_free(struct OnnxSeqs *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        free(s->s[i].v);
    free(s->s);
    free(s);
}

IrValue onnx_seq_new(OnnxCtx *c, const IrValue *v, int n, bool is_optional)
{
    struct OnnxSeqs *s = c->seqs;
    IrValue none = {NULL, 0};
    if (!s) {
        onnx_errorf(c, "sequences are not available here");
        return none;
    }
    if (s->n == s->cap) {
        int nc = s->cap ? s->cap * 2 : 16;
        OnnxSeq *ns = realloc(s->s, (size_t)nc * sizeof *ns);
        if (!ns) {
            st_errorf(c->st, ST_NOMEM, "out of memory");
            return none;
        }
        s->s = ns;
        s->cap = nc;
    }
    IrValue *copy = malloc((size_t)(n + 1) * sizeof *copy);
    if (!copy) {
        st_errorf(c->st, ST_NOMEM, "out of memory");
        return none;
    }
    if (n)
        memcpy(copy, v, (size_t)n * sizeof *copy);
    s->s[s->n] = (OnnxSeq){n, is_optional, copy};
    return (IrValue){NULL, ++s->n};
}

const OnnxSeq *onnx_seq_get(const OnnxCtx *c, IrValue v)
{
    if (!onnx_is_seq(v) || !c->seqs || v.index > c->seqs->n)
        return NULL;
    return &c->seqs->s[v.index - 1];
}

static const OnnxSeq *need_seq(OnnxCtx *c, const IrValue *in, int n_in, int k, const char *what)
{
    const OnnxSeq *s = k < n_in ? onnx_seq_get(c, in[k]) : NULL;
    if (!s || s->is_optional) {
        onnx_errorf(c, "input %d (%s) must be a sequence", k, what);
        return NULL;
    }
    return s;
}

/* A position input (constant scalar) normalized to [0, n] (or [0, n) when
 * !end_ok); `def` when absent. */
static bool position(OnnxCtx *c, const IrValue *in, int n_in, int k, int n, bool end_ok, int64_t def, int64_t *pos)
{
    if (k >= n_in || !in[k].node) {
        *pos = def;
        return true;
    }
    int64_t v[1];
    int got;
    if (!ir_const_ints(in[k], v, 1, &got) || got != 1)
        return onnx_errorf(c, "position must be a compile-time constant scalar (bind it with --const)");
    int64_t p = v[0] < 0 ? v[0] + n : v[0];
    if (p < 0 || p > n || (!end_ok && p == n))
        return onnx_errorf(c, "position %lld is out of range for a sequence of %d", (long long)v[0], n);
    *pos = p;
    return true;
}

static IrValue *copy_elems(OnnxCtx *c, const OnnxSeq *s, int extra)
{
    IrValue *v = malloc((size_t)(s->n + extra + 1) * sizeof *v);
    if (!v)
        st_errorf(c->st, ST_NOMEM, "out of memory");
    else if (s->n)
        memcpy(v, s->v, (size_t)s->n * sizeof *v);
    return v;
}

static bool insert_erase(OnnxCtx *c, bool insert, const IrValue *in, int n_in, IrValue *out)
{
    const OnnxSeq *s = need_seq(c, in, n_in, 0, "input_sequence");
    if (!s)
        return false;
    int64_t p;
    if (insert && (n_in < 2 || !in[1].node))
        return onnx_errorf(c, "input 1 (tensor) is required");
    if (!position(c, in, n_in, insert ? 2 : 1, s->n, insert, insert ? s->n : s->n - 1, &p))
        return false;
    if (!insert && s->n == 0)
        return onnx_errorf(c, "erasing from an empty sequence");
    IrValue *v = copy_elems(c, s, 1);
    if (!v)
        return false;
    int n = s->n;
    if (insert) {
        memmove(v + p + 1, v + p, (size_t)(n - p) * sizeof *v);
        v[p] = in[1];
        n++;
    } else {
        memmove(v + p, v + p + 1, (size_t)(n - p - 1) * sizeof *v);
        n--;
    }
    out[0] = onnx_seq_new(c, v, n, false);
    free(v);
    return out[0].index > 0;
}

static bool concat_from(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    const OnnxSeq *s = need_seq(c, in, n_in, 0, "input_sequence");
    int64_t axis, new_axis;
    if (!s || !onnx_attr_int(c, "axis", 0, &axis) || !onnx_attr_int(c, "new_axis", 0, &new_axis))
        return false;
    if (s->n == 0)
        return onnx_errorf(c, "the sequence is empty: empty outputs are not supported");
    IrValue *v = copy_elems(c, s, 0);
    if (!v)
        return false;
    bool ok = true;
    for (int i = 0; ok && i < s->n; i++)
        if (!v[i].node)
            ok = onnx_errorf(c, "element %d is not a tensor", i);
    int rank = ok ? ir_value_type(v[0])->shape.rank : 0;
    int r = new_axis ? rank + 1 : rank;
    if (ok && (axis < -r || axis >= r || r > IR_MAX_RANK))
        ok = onnx_errorf(c, "axis %lld is out of range for rank %d", (long long)axis, r);
    if (axis < 0)
        axis += r;
    for (int i = 0; ok && new_axis && i < s->n; i++) {
        IrShape sh = ir_value_type(v[i])->shape;
        memmove(sh.dims + axis + 1, sh.dims + axis, (size_t)(sh.rank - axis) * sizeof sh.dims[0]);
        sh.dims[axis] = 1;
        sh.rank++;
        ok = (v[i] = ir_reshape(c->g, v[i], &sh, c->st)).node != NULL;
    }
    if (ok) {
        IrParams p;
        memset(&p, 0, sizeof p);
        p.i[0] = axis;
        out[0] = s->n == 1 ? v[0] : ir_emit1(c->g, OP_CONCAT, v, s->n, &p, NULL, c->st);
        ok = out[0].node != NULL;
    }
    free(v);
    return ok;
}

static bool split_to(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axis, keepdims;
    if (n_in < 1 || !in[0].node)
        return onnx_errorf(c, "input 0 is required");
    if (!onnx_attr_int(c, "axis", 0, &axis) || !onnx_attr_int(c, "keepdims", 1, &keepdims))
        return false;
    const IrType *t = ir_value_type(in[0]);
    int r = t->shape.rank;
    if (axis < -r || axis >= r)
        return onnx_errorf(c, "axis %lld is out of range for rank %d", (long long)axis, r);
    if (axis < 0)
        axis += r;
    int64_t len = t->shape.dims[axis];
    int64_t sizes[4096];
    int n = 0;
    bool squeeze = false;
    if (n_in > 1 && in[1].node) {
        int got;
        if (!ir_const_ints(in[1], sizes, 4096, &got))
            return onnx_errorf(c, "split must be a compile-time constant (bind it with --const)");
        if (ir_value_type(in[1])->shape.rank == 0) {
            int64_t chunk = sizes[0];
            if (chunk < 1)
                return onnx_errorf(c, "split %lld must be positive", (long long)chunk);
            for (int64_t o = 0; o < len && n < 4096; o += chunk)
                sizes[n++] = len - o < chunk ? len - o : chunk;
        } else {
            n = got;
            int64_t sum = 0;
            for (int i = 0; i < n; i++)
                sum += sizes[i];
            if (sum != len)
                return onnx_errorf(c, "split sizes sum to %lld, the axis has %lld", (long long)sum, (long long)len);
        }
    } else {
        if (len > 4096)
            return onnx_errorf(c, "splitting %lld elements: at most 4096 supported", (long long)len);
        for (int64_t i = 0; i < len; i++)
            sizes[n++] = 1;
        squeeze = !keepdims;
    }
    IrValue *v = malloc((size_t)(n + 1) * sizeof *v);
    if (!v)
        return st_errorf(c->st, ST_NOMEM, "out of memory");
    bool ok = true;
    int64_t off = 0;
    for (int i = 0; ok && i < n; i++) {
        IrParams p;
        memset(&p, 0, sizeof p);
        IrType o = *t;
        for (int d = 0; d < r; d++) {
            p.i[TCRT_SL_BEGIN + d] = d == axis ? off : 0;
            p.i[TCRT_SL_STRIDE + d] = 1;
        }
        o.shape.dims[axis] = sizes[i];
        v[i] = ir_emit1(c->g, OP_SLICE, &in[0], 1, &p, &o, c->st);
        if (v[i].node && squeeze) {
            IrShape sh = o.shape;
            memmove(sh.dims + axis, sh.dims + axis + 1, (size_t)(r - axis - 1) * sizeof sh.dims[0]);
            sh.rank--;
            v[i] = ir_reshape(c->g, v[i], &sh, c->st);
        }
        ok = v[i].node != NULL;
        off += sizes[i];
    }
    if (ok)
        out[0] = onnx_seq_new(c, v, n, false);
    free(v);
    return ok && out[0].index > 0;
}

/* SequenceMap: the body inlined per element; each output a sequence. */
static bool seq_map(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    const Onnx__GraphProto *body;
    const OnnxSeq *s0 = need_seq(c, in, n_in, 0, "input_sequence");
    if (!s0 || !onnx_attr_graph(c, "body", &body))
        return false;
    int n_out = (int)c->nd->n_output;
    if ((int)body->n_output != n_out)
        return onnx_errorf(c, "attribute 'body' has %zu outputs, the node has %d", body->n_output, n_out);
    for (int k = 1; k < n_in; k++) {
        const OnnxSeq *s = onnx_seq_get(c, in[k]);
        if (s && s->n != s0->n)
            return onnx_errorf(c, "input %d has %d elements, input 0 has %d", k, s->n, s0->n);
    }
    IrValue *args = malloc((size_t)(n_in + 1) * sizeof *args), *res = malloc((size_t)(n_out + 1) * sizeof *res);
    IrValue *cols = malloc((size_t)(n_out * (s0->n ? s0->n : 1) + 1) * sizeof *cols);
    bool ok = args && res && cols ? true : st_errorf(c->st, ST_NOMEM, "out of memory");
    int n = s0->n;
    for (int i = 0; ok && i < n; i++) {
        for (int k = 0; k < n_in; k++) {
            const OnnxSeq *s = onnx_seq_get(c, in[k]);
            args[k] = s ? s->v[i] : in[k];
        }
        ok = onnx_lower_graph(c, "body", body, c->g, args, n_in, NULL, NULL, 0, true, res);
        for (int j = 0; ok && j < n_out; j++)
            cols[j * n + i] = res[j];
    }
    for (int j = 0; ok && j < n_out; j++)
        ok = (out[j] = onnx_seq_new(c, cols + j * n, n, false)).index > 0;
    free(args);
    free(res);
    free(cols);
    return ok;
}

bool onnx_lower_seq_op(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    const char *op = c->nd->op_type;
    if (!strcmp(op, "SequenceEmpty")) {
        out[0] = onnx_seq_new(c, NULL, 0, false);
        return out[0].index > 0;
    }
    if (!strcmp(op, "SequenceConstruct")) {
        for (int i = 0; i < n_in; i++)
            if (!in[i].node)
                return onnx_errorf(c, "input %d must be a tensor", i);
        out[0] = onnx_seq_new(c, in, n_in, false);
        return out[0].index > 0;
    }
    if (!strcmp(op, "SequenceInsert") || !strcmp(op, "SequenceErase"))
        return insert_erase(c, op[8] == 'I', in, n_in, out);
    if (!strcmp(op, "SequenceAt")) {
        const OnnxSeq *s = need_seq(c, in, n_in, 0, "input_sequence");
        int64_t p;
        if (!s)
            return false;
        if (n_in < 2 || !in[1].node)
            return onnx_errorf(c, "input 1 (position) is required");
        if (!position(c, in, n_in, 1, s->n, false, 0, &p))
            return false;
        out[0] = s->v[p];
        return true;
    }
    if (!strcmp(op, "SequenceLength")) {
        const OnnxSeq *s = need_seq(c, in, n_in, 0, "input_sequence");
        if (!s)
            return false;
        out[0] = ir_const_scalar_f(c->g, TCRT_I64, s->n, c->st);
        return out[0].node != NULL;
    }
    if (!strcmp(op, "ConcatFromSequence"))
        return concat_from(c, in, n_in, out);
    if (!strcmp(op, "SplitToSequence"))
        return split_to(c, in, n_in, out);
    if (!strcmp(op, "SequenceMap"))
        return seq_map(c, in, n_in, out);
    if (!strcmp(op, "Optional")) {
        bool has = n_in > 0 && (in[0].node || onnx_is_seq(in[0]));
        out[0] = onnx_seq_new(c, in, has ? 1 : 0, true);
        return out[0].index > 0;
    }
    if (!strcmp(op, "OptionalHasElement")) {
        const OnnxSeq *s = n_in > 0 ? onnx_seq_get(c, in[0]) : NULL;
        bool has = s ? (!s->is_optional || s->n > 0) : n_in > 0 && in[0].node;
        out[0] = ir_const_scalar_f(c->g, TCRT_BOOL, has, c->st);
        return out[0].node != NULL;
    }
    if (!strcmp(op, "OptionalGetElement")) {
        const OnnxSeq *s = n_in > 0 ? onnx_seq_get(c, in[0]) : NULL;
        if (s && s->is_optional) {
            if (s->n == 0)
                return onnx_errorf(c, "the optional is empty");
            out[0] = s->v[0];
            return true;
        }
        if (n_in < 1 || (!in[0].node && !s))
            return onnx_errorf(c, "input 0 is required");
        out[0] = in[0]; /* a tensor or a sequence passes through */
        return true;
    }
    return onnx_errorf(c, "not a sequence op");
}
