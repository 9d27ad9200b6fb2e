/* compiler/onnx/onnx_ops_flow.c - ONNX recurrent ops (rows looked up after
 * onnx_ops[], onnx_int.h).
 *
 * RNN, GRU and LSTM are unrolled at import time over the static sequence
 * length into matmul and elementwise IR: the input projections X*W^T of all
 * time steps are one matmul per gate, each step adds H*R^T and applies the
 * activations.  sequence_lens (constant or fed) masks the steps past each
 * batch entry's length: H keeps its value and Y is zero there; the reverse
 * direction walks t = T-1 .. 0, which with the mask starts each entry at its
 * own last step, as ONNX requires.
 *
 * Control flow (If, Loop, Scan) and the constant-folded ops are in
 * onnx_ops_ctl.c, sequences and optionals in onnx_ops_seq.c, GridSample in
 * onnx_ops_grid.c; their rows are here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/onnx/onnx_int.h"

static IrValue bin(OnnxCtx *c, Op op, IrValue a, IrValue b)
{
    if (!a.node || !b.node)
        return (IrValue){NULL, 0};
    return ir_binary(c->g, op, a, b, c->st);
}

static IrValue un(OnnxCtx *c, Op op, IrValue a)
{
    if (!a.node)
        return a;
    return ir_unary(c->g, op, a, c->st);
}

static IrValue reshape_to(OnnxCtx *c, IrValue a, int rank, const int64_t *dims)
{
    if (!a.node)
        return a;
    IrShape s = ir_shape_make(rank, dims);
    return ir_reshape(c->g, a, &s, c->st);
}

static IrValue transpose(OnnxCtx *c, IrValue a, const int64_t *perm, int rank)
{
    if (!a.node)
        return a;
    IrParams p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < rank; i++)
        p.i[i] = perm[i];
    return ir_emit1(c->g, OP_TRANSPOSE, &a, 1, &p, NULL, c->st);
}

/* x[begin .. begin+count) with stride 1 on every axis. */
static IrValue slice1(OnnxCtx *c, IrValue x, const int64_t *begin, const int64_t *count)
{
    if (!x.node)
        return x;
    const IrShape *s = shape_of(x);
    IrParams p;
    memset(&p, 0, sizeof p);
    IrType t = {ir_value_type(x)->dtype, *s};
    for (int i = 0; i < s->rank; i++) {
        p.i[TCRT_SL_BEGIN + i] = begin[i];
        p.i[TCRT_SL_STRIDE + i] = 1;
        t.shape.dims[i] = count[i];
    }
    return ir_emit1(c->g, OP_SLICE, &x, 1, &p, &t, c->st);
}

static IrValue matmul_bt(OnnxCtx *c, IrValue a, IrValue b) /* a @ b^T */
{
    if (!a.node || !b.node)
        return (IrValue){NULL, 0};
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_MM_TB] = 1;
    IrValue ins[2] = {a, b};
    return ir_emit1(c->g, OP_MATMUL, ins, 2, &p, NULL, c->st);
}

/* Concatenates vals[0..n) on axis (in groups, the arity of one node being
 * bounded by what codegen likes). */
static IrValue concat(OnnxCtx *c, IrValue *vals, int n, int axis)
{
    if (n == 1)
        return vals[0];
    for (int i = 0; i < n; i++)
        if (!vals[i].node)
            return vals[i];
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = axis;
    if (n <= 32)
        return ir_emit1(c->g, OP_CONCAT, vals, n, &p, NULL, c->st);
    IrValue parts[32];
    int np = 0, per = (n + 31) / 32;
    for (int i = 0; i < n; i += per)
        parts[np++] = concat(c, vals + i, n - i < per ? n - i : per, axis);
    return concat(c, parts, np, axis);
}

/* ---- activations ---- */

typedef struct Act {
    char name[32];
    double alpha, beta;
} Act;

static bool act_known(const char *n, double *alpha, double *beta, int *n_params)
{
    static const struct {
        const char *name;
        int n_params;
        double alpha, beta;
    } tab[] = {
        {"Relu", 0, 0, 0},          {"Tanh", 0, 0, 0},           {"Sigmoid", 0, 0, 0},
        {"Affine", 2, 1, 0},        {"LeakyRelu", 1, 0.01, 0},   {"ThresholdedRelu", 1, 1, 0},
        {"ScaledTanh", 2, 1, 1},    {"HardSigmoid", 2, 0.2, 0.5}, {"Elu", 1, 1, 0},
        {"Softsign", 0, 0, 0},      {"Softplus", 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(tab[i].name, n)) {
            *alpha = tab[i].alpha;
            *beta = tab[i].beta;
            *n_params = tab[i].n_params;
            return true;
        }
    return false;
}

/* The activations attribute: n_per per direction, defaults def[]. */
static bool read_acts(OnnxCtx *c, int n_dirs, int n_per, const char *const *def, Act *acts)
{
    const Onnx__AttributeProto *a = onnx_attr(c, "activations");
    const Onnx__AttributeProto *al = onnx_attr(c, "activation_alpha");
    const Onnx__AttributeProto *be = onnx_attr(c, "activation_beta");
    int n = n_dirs * n_per;
    if (a && (int)a->n_strings != n)
        return onnx_errorf(c, "attribute 'activations' has %zu names, %d expected (%d per direction)",
                           a->n_strings, n, n_per);
    size_t ia = 0, ib = 0;
    for (int i = 0; i < n; i++) {
        Act *x = &acts[i];
        if (a) {
            size_t len = a->strings[i].len < sizeof x->name - 1 ? a->strings[i].len : sizeof x->name - 1;
            memcpy(x->name, a->strings[i].data, len);
            x->name[len] = 0;
        } else
            snprintf(x->name, sizeof x->name, "%s", def[i % n_per]);
        int np;
        if (!act_known(x->name, &x->alpha, &x->beta, &np))
            return onnx_errorf(c, "activation '%s' is not supported", x->name);
        if (np >= 1 && al && ia < al->n_floats)
            x->alpha = al->floats[ia++];
        if (np >= 2 && be && ib < be->n_floats)
            x->beta = be->floats[ib++];
    }
    return true;
}

static IrValue act_apply(OnnxCtx *c, const Act *a, IrValue x)
{
    if (!x.node)
        return x;
    tcrt_dtype dt = ir_value_type(x)->dtype;
    const char *n = a->name;
    if (!strcmp(n, "Relu"))
        return un(c, OP_RELU, x);
    if (!strcmp(n, "Tanh"))
        return un(c, OP_TANH, x);
    if (!strcmp(n, "Sigmoid"))
        return un(c, OP_SIGMOID, x);
    if (!strcmp(n, "Affine"))
        return bin(c, OP_ADD, bin(c, OP_MUL, x, scalar(c, dt, a->alpha)), scalar(c, dt, a->beta));
    if (!strcmp(n, "LeakyRelu"))
        return bin(c, OP_MAX, x, bin(c, OP_MUL, x, scalar(c, dt, a->alpha)));
    if (!strcmp(n, "ThresholdedRelu")) {
        IrValue ins[3] = {bin(c, OP_GT, x, scalar(c, dt, a->alpha)), x, scalar(c, dt, 0)};
        if (!ins[0].node || !ins[2].node)
            return ins[0].node ? ins[2] : ins[0];
        return ir_emit1(c->g, OP_SELECT, ins, 3, NULL, NULL, c->st);
    }
    if (!strcmp(n, "ScaledTanh"))
        return bin(c, OP_MUL, un(c, OP_TANH, bin(c, OP_MUL, x, scalar(c, dt, a->beta))), scalar(c, dt, a->alpha));
    if (!strcmp(n, "HardSigmoid"))
        return bin(c, OP_MIN,
                   bin(c, OP_MAX, bin(c, OP_ADD, bin(c, OP_MUL, x, scalar(c, dt, a->alpha)), scalar(c, dt, a->beta)),
                       scalar(c, dt, 0)),
                   scalar(c, dt, 1));
    if (!strcmp(n, "Elu")) {
        IrValue neg = bin(c, OP_MUL, bin(c, OP_SUB, un(c, OP_EXP, x), scalar(c, dt, 1)), scalar(c, dt, a->alpha));
        IrValue ins[3] = {bin(c, OP_GT, x, scalar(c, dt, 0)), x, neg};
        if (!ins[0].node || !neg.node)
            return (IrValue){NULL, 0};
        return ir_emit1(c->g, OP_SELECT, ins, 3, NULL, NULL, c->st);
    }
    if (!strcmp(n, "Softsign"))
        return bin(c, OP_DIV, x, bin(c, OP_ADD, un(c, OP_ABS, x), scalar(c, dt, 1)));
    /* Softplus */
    return un(c, OP_LOG1P, un(c, OP_EXP, x));
}

/* ---- RNN / GRU / LSTM ---- */

enum { CELL_RNN, CELL_GRU, CELL_LSTM };

typedef struct Rnn {
    int cell, n_gates, n_dirs, layout;
    int64_t T, B, I, H;
    double clip;                  /* 0: none */
    bool linear_before_reset, input_forget;
    Act acts[6];
    IrValue X;                    /* [T, B, I] */
    IrValue mask[1024];           /* per step: bool [B, 1], or NULL without sequence_lens */
} Rnn;

static IrValue clip_to(OnnxCtx *c, const Rnn *r, IrValue x)
{
    if (r->clip <= 0 || !x.node)
        return x;
    tcrt_dtype dt = ir_value_type(x)->dtype;
    return bin(c, OP_MAX, bin(c, OP_MIN, x, scalar(c, dt, r->clip)), scalar(c, dt, -r->clip));
}

/* Gate g of direction d of a [D, G*H, K] weight: [H, K]. */
static IrValue gate_w(OnnxCtx *c, const Rnn *r, IrValue w, int d, int g)
{
    int64_t k = shape_of(w)->dims[2];
    return reshape_to(c, slice1(c, w, (int64_t[]){d, g * r->H, 0}, (int64_t[]){1, r->H, k}), 2,
                      (int64_t[]){r->H, k});
}

/* Bias part `part` (0: Wb, 1: Rb) of gate g of direction d: [H], or zeros. */
static IrValue gate_b(OnnxCtx *c, const Rnn *r, IrValue b, int d, int part, int g)
{
    if (!b.node)
        return scalar(c, ir_value_type(r->X)->dtype, 0);
    int64_t off = (int64_t)part * r->n_gates * r->H + g * r->H;
    return reshape_to(c, slice1(c, b, (int64_t[]){d, off}, (int64_t[]){1, r->H}), 1, (int64_t[]){r->H});
}

/* The masked update: where the step is valid the new value, else the old. */
static IrValue masked(OnnxCtx *c, IrValue mask, IrValue nv, IrValue old)
{
    if (!mask.node || !nv.node || !old.node)
        return mask.node ? (IrValue){NULL, 0} : nv;
    IrValue m = mask;
    const IrShape *s = shape_of(nv);
    IrType t = {TCRT_BOOL, *s};
    m = ir_emit1(c->g, OP_BROADCAST, &m, 1, NULL, &t, c->st);
    if (!m.node)
        return m;
    IrValue ins[3] = {m, nv, old};
    return ir_emit1(c->g, OP_SELECT, ins, 3, NULL, NULL, c->st);
}

/* One direction: ys[t] = H after step t ([B, H], zero where masked); *h_out,
 * *c_out the final states. */
static bool run_dir(OnnxCtx *c, Rnn *r, int d, const IrValue *in, int n_in, IrValue *ys, IrValue *h_out,
                    IrValue *c_out)
{
    IrValue W = in[1], R = in[2], B = n_in > 3 ? in[3] : (IrValue){NULL, 0};
    IrValue h0 = n_in > 5 ? in[5] : (IrValue){NULL, 0};
    IrValue c0 = n_in > 6 && r->cell == CELL_LSTM ? in[6] : (IrValue){NULL, 0};
    IrValue P = n_in > 7 && r->cell == CELL_LSTM ? in[7] : (IrValue){NULL, 0};
    tcrt_dtype dt = ir_value_type(r->X)->dtype;
    int64_t T = r->T, Bn = r->B, H = r->H;
    int G = r->n_gates;
    /* ONNX gate orders: LSTM i o f c, GRU z r h, RNN i. */
    IrValue xw[4], rw[4], wb[4], rb[4], peep[3];
    IrValue x2 = reshape_to(c, r->X, 2, (int64_t[]){T * Bn, r->I});
    for (int g = 0; g < G; g++) {
        wb[g] = gate_b(c, r, B, d, 0, g);
        rb[g] = gate_b(c, r, B, d, 1, g);
        IrValue bias = r->cell == CELL_GRU && g == 2 && r->linear_before_reset ? wb[g] : bin(c, OP_ADD, wb[g], rb[g]);
        xw[g] = reshape_to(c, bin(c, OP_ADD, matmul_bt(c, x2, gate_w(c, r, W, d, g)), bias), 3,
                           (int64_t[]){T, Bn, H});
        rw[g] = gate_w(c, r, R, d, g);
        TRY(xw[g]);
        TRY(rw[g]);
    }
    for (int k = 0; k < 3; k++)
        peep[k] = P.node ? reshape_to(c, slice1(c, P, (int64_t[]){d, k * H}, (int64_t[]){1, H}), 1, (int64_t[]){H})
                         : (IrValue){NULL, 0};
    IrValue h = h0.node ? reshape_to(c, slice1(c, h0, (int64_t[]){d, 0, 0}, (int64_t[]){1, Bn, H}), 2,
                                     (int64_t[]){Bn, H})
                        : ir_emit1(c->g, OP_BROADCAST, (IrValue[]){scalar(c, dt, 0)}, 1, NULL,
                                   &(IrType){dt, ir_shape_make(2, (int64_t[]){Bn, H})}, c->st);
    IrValue cs = c0.node ? reshape_to(c, slice1(c, c0, (int64_t[]){d, 0, 0}, (int64_t[]){1, Bn, H}), 2,
                                      (int64_t[]){Bn, H})
                         : h0.node ? bin(c, OP_MUL, h, scalar(c, dt, 0)) : h;
    TRY(h);
    TRY(cs);
    const Act *f = &r->acts[d * (r->cell == CELL_LSTM ? 3 : r->cell == CELL_GRU ? 2 : 1)];
    bool reverse = d == 1 || r->n_dirs == -1;
    for (int64_t s = 0; s < T; s++) {
        int64_t t = reverse ? T - 1 - s : s;
        IrValue xt[4];
        for (int g = 0; g < G; g++)
            xt[g] = reshape_to(c, slice1(c, xw[g], (int64_t[]){t, 0, 0}, (int64_t[]){1, Bn, H}), 2,
                               (int64_t[]){Bn, H});
        IrValue nh, nc = cs;
        if (r->cell == CELL_RNN) {
            nh = act_apply(c, &f[0], clip_to(c, r, bin(c, OP_ADD, xt[0], matmul_bt(c, h, rw[0]))));
        } else if (r->cell == CELL_GRU) {
            IrValue z = act_apply(c, &f[0], clip_to(c, r, bin(c, OP_ADD, xt[0], matmul_bt(c, h, rw[0]))));
            IrValue rr = act_apply(c, &f[0], clip_to(c, r, bin(c, OP_ADD, xt[1], matmul_bt(c, h, rw[1]))));
            IrValue hh;
            if (r->linear_before_reset)
                hh = bin(c, OP_ADD, xt[2], bin(c, OP_MUL, rr, bin(c, OP_ADD, matmul_bt(c, h, rw[2]), rb[2])));
            else
                hh = bin(c, OP_ADD, xt[2], matmul_bt(c, bin(c, OP_MUL, rr, h), rw[2]));
            hh = act_apply(c, &f[1], clip_to(c, r, hh));
            /* (1 - z) * hh + z * h = hh + z * (h - hh) */
            nh = bin(c, OP_ADD, hh, bin(c, OP_MUL, z, bin(c, OP_SUB, h, hh)));
        } else {
            IrValue pre[4];
            for (int g = 0; g < 4; g++)
                pre[g] = bin(c, OP_ADD, xt[g], matmul_bt(c, h, rw[g]));
            if (peep[0].node) {
                pre[0] = bin(c, OP_ADD, pre[0], bin(c, OP_MUL, cs, peep[0]));
                pre[2] = bin(c, OP_ADD, pre[2], bin(c, OP_MUL, cs, peep[2]));
            }
            IrValue ig = act_apply(c, &f[0], clip_to(c, r, pre[0]));
            IrValue fg = r->input_forget ? bin(c, OP_SUB, scalar(c, dt, 1), ig)
                                         : act_apply(c, &f[0], clip_to(c, r, pre[2]));
            IrValue cg = act_apply(c, &f[1], clip_to(c, r, pre[3]));
            nc = bin(c, OP_ADD, bin(c, OP_MUL, fg, cs), bin(c, OP_MUL, ig, cg));
            IrValue po = pre[1];
            if (peep[1].node)
                po = bin(c, OP_ADD, po, bin(c, OP_MUL, nc, peep[1]));
            IrValue og = act_apply(c, &f[0], clip_to(c, r, po));
            nh = bin(c, OP_MUL, og, act_apply(c, &f[2], nc));
        }
        TRY(nh);
        TRY(nc);
        if (r->mask[t].node) {
            ys[t] = masked(c, r->mask[t], nh, bin(c, OP_MUL, nh, scalar(c, dt, 0)));
            h = masked(c, r->mask[t], nh, h);
            cs = masked(c, r->mask[t], nc, cs);
        } else {
            ys[t] = nh;
            h = nh;
            cs = nc;
        }
        TRY(ys[t]);
        TRY(h);
        TRY(cs);
    }
    *h_out = h;
    *c_out = cs;
    return true;
}

static bool lower_rnn_common(OnnxCtx *c, int cell, const IrValue *in, int n_in, IrValue *out)
{
    Rnn *r = calloc(1, sizeof *r);
    IrValue *ys = NULL, *steps = NULL;
    if (!r)
        return st_errorf(c->st, ST_NOMEM, "out of memory");
    bool ok = false;
    r->cell = cell;
    r->n_gates = cell == CELL_LSTM ? 4 : cell == CELL_GRU ? 3 : 1;
    int64_t hs, layout, lbr, ifg;
    double clip;
    char dir[32];
    if (n_in < 3 || !in[0].node || !in[1].node || !in[2].node) {
        onnx_errorf(c, "inputs X, W and R are required");
        goto out;
    }
    if (!onnx_attr_int(c, "hidden_size", 0, &hs) || !onnx_attr_int(c, "layout", 0, &layout) ||
        !onnx_attr_int(c, "linear_before_reset", 0, &lbr) || !onnx_attr_int(c, "input_forget", 0, &ifg) ||
        !onnx_attr_float(c, "clip", 0, &clip) || !onnx_attr_str(c, "direction", "forward", dir, sizeof dir))
        goto out;
    r->layout = (int)layout;
    r->clip = clip;
    r->linear_before_reset = lbr != 0;
    r->input_forget = ifg != 0;
    bool reverse_only = !strcmp(dir, "reverse");
    int n_dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
    if (strcmp(dir, "forward") && !reverse_only && n_dirs != 2) {
        onnx_errorf(c, "attribute 'direction' is '%s', expected forward, reverse or bidirectional", dir);
        goto out;
    }
    r->n_dirs = reverse_only ? -1 : n_dirs;
    const IrShape *xs = shape_of(in[0]), *ws = shape_of(in[1]), *rs = shape_of(in[2]);
    if (xs->rank != 3 || ws->rank != 3 || rs->rank != 3) {
        onnx_errorf(c, "X, W and R must have rank 3");
        goto out;
    }
    if (layout != 0 && layout != 1) {
        onnx_errorf(c, "attribute 'layout' is %lld, expected 0 or 1", (long long)layout);
        goto out;
    }
    r->T = layout ? xs->dims[1] : xs->dims[0];
    r->B = layout ? xs->dims[0] : xs->dims[1];
    r->I = xs->dims[2];
    r->H = hs ? hs : rs->dims[2];
    if (ws->dims[0] != n_dirs || ws->dims[1] != r->n_gates * r->H || ws->dims[2] != r->I ||
        rs->dims[0] != n_dirs || rs->dims[1] != r->n_gates * r->H || rs->dims[2] != r->H) {
        char b1[80], b2[80];
        onnx_errorf(c, "W %s or R %s do not match %d direction(s), %d gates, hidden size %lld, input size %lld",
                    ir_shape_str(ws, b1, sizeof b1), ir_shape_str(rs, b2, sizeof b2), n_dirs, r->n_gates,
                    (long long)r->H, (long long)r->I);
        goto out;
    }
    if (r->T < 1 || r->T > 1024) {
        onnx_errorf(c, "sequence length %lld: 1 to 1024 supported (the op is unrolled)", (long long)r->T);
        goto out;
    }
    if (n_in > 3 && in[3].node &&
        (shape_of(in[3])->rank != 2 || shape_of(in[3])->dims[1] != 2 * r->n_gates * r->H)) {
        onnx_errorf(c, "B must be [num_directions, %lld]", (long long)(2 * r->n_gates * r->H));
        goto out;
    }
    static const char *const lstm_def[] = {"Sigmoid", "Tanh", "Tanh"}, *const gru_def[] = {"Sigmoid", "Tanh"},
                             *const rnn_def[] = {"Tanh"};
    if (!read_acts(c, n_dirs, r->n_gates == 4 ? 3 : r->n_gates == 3 ? 2 : 1,
                   cell == CELL_LSTM ? lstm_def : cell == CELL_GRU ? gru_def : rnn_def, r->acts))
        goto out;
    r->X = layout ? transpose(c, in[0], (int64_t[]){1, 0, 2}, 3) : in[0];
    if (!r->X.node)
        goto out;
    tcrt_dtype dt = ir_value_type(r->X)->dtype;
    if (dt != TCRT_F32 && dt != TCRT_F64) {
        onnx_errorf(c, "X must be float or double");
        goto out;
    }
    /* sequence_lens: a mask per step unless every length is T */
    if (n_in > 4 && in[4].node) {
        int64_t lens[4096];
        int nl;
        bool all_full = false;
        if (ir_const_ints(in[4], lens, 4096, &nl)) {
            all_full = true;
            for (int i = 0; i < nl; i++)
                all_full &= lens[i] == r->T;
        }
        if (!all_full) {
            IrValue l = reshape_to(c, ir_cast(c->g, in[4], TCRT_I64, c->st), 2, (int64_t[]){r->B, 1});
            for (int64_t t = 0; t < r->T; t++)
                r->mask[t] = bin(c, OP_LT, scalar(c, TCRT_I64, (double)t), l);
        }
    }
    /* with layout 1, h0 and c0 are [B, D, H] */
    IrValue ins[8];
    for (int i = 0; i < 8; i++)
        ins[i] = i < n_in ? in[i] : (IrValue){NULL, 0};
    for (int i = 5; i <= 6 && layout; i++)
        if (ins[i].node)
            ins[i] = transpose(c, ins[i], (int64_t[]){1, 0, 2}, 3);
    ys = calloc((size_t)(r->T * n_dirs), sizeof *ys);
    steps = calloc((size_t)r->T, sizeof *steps);
    if (!ys || !steps) {
        st_errorf(c->st, ST_NOMEM, "out of memory");
        goto out;
    }
    IrValue hf[2], cf[2];
    for (int d = 0; d < n_dirs; d++)
        if (!run_dir(c, r, d, ins, 8, ys + d * r->T, &hf[d], &cf[d]))
            goto out;
    int64_t T = r->T, Bn = r->B, H = r->H;
    int nd = (int)c->nd->n_output;
    if (nd > 0 && c->nd->output[0][0]) {
        for (int64_t t = 0; t < T; t++) {
            IrValue per[2];
            for (int d = 0; d < n_dirs; d++)
                per[d] = reshape_to(c, ys[d * T + t], 4, (int64_t[]){1, 1, Bn, H});
            steps[t] = concat(c, per, n_dirs, 1);
        }
        out[0] = concat(c, steps, (int)T, 0); /* [T, D, B, H] */
        if (layout)
            out[0] = transpose(c, out[0], (int64_t[]){2, 0, 1, 3}, 4);
        if (!out[0].node)
            goto out;
    }
    for (int k = 1; k <= 2 && k < nd; k++) {
        if (k == 2 && cell != CELL_LSTM)
            break;
        IrValue per[2];
        for (int d = 0; d < n_dirs; d++)
            per[d] = reshape_to(c, k == 1 ? hf[d] : cf[d], 3, (int64_t[]){1, Bn, H});
        out[k] = concat(c, per, n_dirs, 0);
        if (layout)
            out[k] = transpose(c, out[k], (int64_t[]){1, 0, 2}, 3);
        if (!out[k].node)
            goto out;
    }
    ok = true;
out:
    free(ys);
    free(steps);
    free(r);
    return ok;
}

static bool lower_rnn(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_rnn_common(c, CELL_RNN, in, n_in, out);
}

static bool lower_gru(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_rnn_common(c, CELL_GRU, in, n_in, out);
}

static bool lower_lstm(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_rnn_common(c, CELL_LSTM, in, n_in, out);
}

const OnnxOpRow onnx_ops_flow[] = {
    {"RNN", lower_rnn, "matmul, add, activations; unrolled over the sequence"},
    {"GRU", lower_gru, "matmul, add, mul, sigmoid, tanh; unrolled over the sequence"},
    {"LSTM", lower_lstm, "matmul, add, mul, sigmoid, tanh; unrolled over the sequence"},
    {"If", onnx_lower_if, "cond (bool selector) over two branch regions; inlined when the condition is constant"},
    {"Loop", onnx_lower_loop, "while (cond region: keep && i < M); scan outputs via update_slice"},
    {"Scan", onnx_lower_scan, "unrolled: slice, the body inlined per step, concat"},
    {"Det", onnx_lower_det, "slices, mul, add (cofactor expansion, n <= 4)"},
    {"Compress", onnx_lower_compress, "gather with the constant condition's indices"},
    {"Unique", onnx_lower_unique, "folded: constant input only (gather + constants)"},
    {"GridSample", onnx_lower_grid_sample, "index arithmetic, batched gather, mul, add"},
    {"NonMaxSuppression", onnx_lower_nms, "folded: constant inputs only (a constant [num_selected, 3])"},
    {"NonZero", onnx_lower_nonzero, "folded: constant input only (a constant [rank, count])"},
    {"MaxUnpool", onnx_lower_maxunpool, "gather + select with the constant indices' sources"},
    {"SequenceEmpty", onnx_lower_seq_op, "import-time list of tensors (no IR)"},
    {"SequenceConstruct", onnx_lower_seq_op, "import-time list of tensors (no IR)"},
    {"SequenceInsert", onnx_lower_seq_op, "import-time list of tensors (no IR)"},
    {"SequenceErase", onnx_lower_seq_op, "import-time list of tensors (no IR)"},
    {"SequenceAt", onnx_lower_seq_op, "import-time list of tensors (no IR)"},
    {"SequenceLength", onnx_lower_seq_op, "import-time list of tensors (no IR)"},
    {"ConcatFromSequence", onnx_lower_seq_op, "import-time list of tensors (no IR)"},
    {"SplitToSequence", onnx_lower_seq_op, "import-time list of tensors (no IR)"},
    {"SequenceMap", onnx_lower_seq_op, "import-time list of tensors (no IR)"},
    {"Optional", onnx_lower_seq_op, "import-time list of tensors (no IR)"},
    {"OptionalHasElement", onnx_lower_seq_op, "import-time list of tensors (no IR)"},
    {"OptionalGetElement", onnx_lower_seq_op, "import-time list of tensors (no IR)"},
    {NULL, NULL, NULL},
};
