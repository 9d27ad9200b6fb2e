/* passes/pack.c - compile-time packing of convolution weights (passes
 * "winograd", "pack" and "dwfuse").
 * requires: topo order, shapes   preserves: shapes, feeds, fetches   invalidates: memory plan
 *
 * winograd (before pack): an f32 3x3 CONV2D with strides and dilations 1,
 * Cin and Cout >= WINO_MIN_CH gets its weight transformed by the runtime's
 * tcrt_pack_conv_wino: for Winograd F(4x4,3x3) (TCRT_CONV_PACK_WINO4, 4x
 * fewer multiply-adds) with at least WINO4_MIN_TILES 4x4 output tiles, else
 * for F(2x2,3x3) (TCRT_CONV_PACK_WINO, 2.25x fewer) with at least
 * WINO_MIN_TILES 2x2 tiles.  Fewer tiles than that (ResNet's 7x7 layers at
 * batch 1: 4 tiles of 4x4, 16 of 2x2) run no faster: the transformed weights are 16/9
 * (36/9) the size and each is used by few tiles (benchmarks/sgemm,
 * docs/performance.md).
 * `--disable-pass winograd` keeps the direct kernel for every conv.
 *
 * Every f32 non-depthwise CONV2D whose weight input is a CONST in HWIO
 * layout [KH,KW,Cin,Cout] gets a new CONST weight packed by the runtime's
 * tcrt_pack_conv_weights (the layout the fast kernel reads:
 * [ceil(Cout/16), KH, KW, Cin, 16], output channels past Cout zero) and
 * p.i[TCRT_CONV_PACKED] = 1, p.i[TCRT_CONV_COUT] = Cout.  The node is
 * rebuilt through ir_emit (shape rule rechecked, origin kept) and its uses
 * redirected; a weight shared by several convolutions is packed once; an
 * old weight left without uses is dropped.  A convolution placed on a
 * device other than a CPU (a GPU partition) is left as it is.
 * dwfuse (after pack): a plain f32 depthwise conv (multiplier 1, constant
 * filter, no residual) absorbs the packed 1x1 stride-1 conv feeding it
 * (the expansion) when it is that conv's only user, and then the packed
 * 1x1 conv it feeds (the projection, with its residual) when that conv is
 * its only user, into one CONV2D with TCRT_CONV_PACK_DWBLOCK
 * (tcrt_kernels.h): the constants go into one filter vector, the
 * depthwise bias stays an input (zeros for a conv without one).  Limits:
 * the DWF_* sizes below.
 * pack also turns an f32 MATMUL whose B is a rank-2 CONST into a 1x1 conv
 * first (mm_as_conv): A (not transposed, rows = the product of its dims but
 * the last, at least MM_CONV_MIN_ROWS) is viewed as [1, 1, rows, K] by a
 * COPY, B as the HWIO filter [1, 1, K, N] (B^T transposed at compile time),
 * the matmul's bias and activation move to the conv, and a COPY gives the
 * result the matmul's shape back; the conv is then packed like any other.
 * The runtime's matmul packed B on every call (tcrt_kmm_run, or the
 * 14x32 AVX-512 GEMM) and, at 2 threads, each thread read the half of it the
 * other had packed; the packed 1x1 conv reads the weights as stored and
 * runs small products on one thread (measured in docs/performance.md,
 * "Passes").  M = 1 (a GEMV, memory-bound, no packing) stays a matmul.
 * Before that (split_sliced_matmuls), such a matmul whose result is only
 * read by SLICEs of its last axis (an attention layer's fused Q/K/V
 * projection cut into q, k and v), not fetched, with slices no wider than
 * N together, and at least SPLIT_MIN_OUT floats, becomes one matmul per
 * slice over the slice's columns of B and the bias: each writes its part
 * contiguously (no slice copies, which at 2 threads read the conv output
 * from the other core).
 * Invariants: the packed data is exactly tcrt_pack_conv_weights' output, so
 * the reference kernel's packed index mapping (ref_conv.c) reads the same
 * values as the HWIO original.
 */
#include "passes/passes.h"

#include <string.h>

typedef struct Packed {
    IrNode *from; /* the HWIO weight CONST */
    int wino;     /* its Winograd tile (0: direct layout) */
    IrValue to;   /* its packed CONST */
} Packed;

static bool is_fetched(const IrGraph *g, const IrNode *n)
{
    for (int i = 0; i < g->n_fetches; i++)
        if (g->fetches[i].value.node == n)
            return true;
    return false;
}

/* Placed on a device that is not a CPU (passes/place.c): its kernel is not
 * the CPU micro-kernel the packed layout is for. */
static bool on_accelerator(const IrNode *n)
{
    IrDevName d;
    return n->device && ir_dev_parse(n->device, &d) && d.has_type && strcmp(d.type, "CPU") != 0;
}

/* Winograd limits: F(4x4) from WINO4_MIN_TILES 4x4 tiles, else F(2x2) from
 * WINO_MIN_TILES 2x2 tiles; 7x7 (4 and 16 tiles) stays direct.  A 14x14
 * output (16 tiles of 4x4, 49 of 2x2) takes F(2x2): in a model its
 * transformed weights come from memory (F(4x4): 4x the direct weights,
 * F(2x2): 16/9), and on the AVX-512 Xeon ResNet-50's six 14x14x256 convs
 * took 4.19 ms with F(2x2) against 5.23 with F(4x4) at 2 threads (per-layer
 * minima of 4 interleaved runs), the whole model even at 1 and 2 threads
 * (14 interleaved rounds), with 26 MB less weights (149 -> 123 MB).  With
 * its weights in cache F(4x4) is faster there (0.81 against 0.94 ms at 1
 * thread, benchmarks/sgemm --convs-only 1), with the caches flushed even
 * (1.22 / 1.25 ms). */
enum { WINO_MIN_CH = 16, WINO_MIN_TILES = 32, WINO4_MIN_TILES = 17 };

static bool can_pack(const IrNode *n)
{
    if (n->op != OP_CONV2D || n->n_inputs < 2 || n->out[0].type.dtype != TCRT_F32 ||
        n->p.i[TCRT_CONV_PACKED] || n->p.i[TCRT_CONV_DEPTHWISE] || on_accelerator(n))
        return false;
    IrValue w = n->inputs[1];
    const IrType *wt = ir_value_type(w);
    const IrType *xt = ir_value_type(n->inputs[0]);
    return w.node->op == OP_CONST && w.node->data && wt->dtype == TCRT_F32 && wt->shape.rank == 4 &&
           xt->shape.rank == 4 && wt->shape.dims[2] == xt->shape.dims[3] && ir_shape_count(&wt->shape) > 0;
}

/* The Winograd tile m (2 or 4) that runs a packable conv faster, 0 when
 * the direct kernel does (file comment). */
static int wino_tile(const IrNode *n)
{
    if (!can_pack(n))
        return 0;
    const IrShape *w = &ir_value_type(n->inputs[1])->shape, *y = &n->out[0].type.shape;
    const int64_t *p = n->p.i;
    int64_t tiles2 = y->dims[0] * ((y->dims[1] + 1) / 2) * ((y->dims[2] + 1) / 2),
            tiles4 = y->dims[0] * ((y->dims[1] + 3) / 4) * ((y->dims[2] + 3) / 4);
    if (w->dims[0] != 3 || w->dims[1] != 3 || p[TCRT_CONV_SH] != 1 || p[TCRT_CONV_SW] != 1 ||
        p[TCRT_CONV_DH] != 1 || p[TCRT_CONV_DW] != 1 || w->dims[2] < WINO_MIN_CH || w->dims[3] < WINO_MIN_CH)
        return 0;
    return tiles4 >= WINO4_MIN_TILES ? 4 : tiles2 >= WINO_MIN_TILES ? 2 : 0;
}

static bool wants_wino(const IrNode *n)
{
    return wino_tile(n) != 0;
}

/* A new f32 CONST of shape s holding data (origin: from's), entered in the
 * cache under (from, key). */
static IrValue cached_const(IrGraph *g, PassCtx *cx, IrNode *from, int key, IrShape s, const float *data,
                            Packed *cache, int *n_cache)
{
    IrOrigin saved = ir_origin_like(g, from);
    IrValue v = ir_const(g, TCRT_F32, &s, data, cx->st);
    ir_origin_restore(g, saved);
    if (v.node) {
        cache[*n_cache].from = from;
        cache[*n_cache].wino = key;
        cache[*n_cache].to = v;
        (*n_cache)++;
    }
    return v;
}

/* A CONST holding w packed (made once per weight node), for Winograd when
 * wino. */
static IrValue packed_weight(IrGraph *g, PassCtx *cx, IrNode *w, int wino, Packed *cache, int *n_cache)
{
    for (int i = 0; i < *n_cache; i++)
        if (cache[i].from == w && cache[i].wino == wino)
            return cache[i].to;
    const IrShape *s = &w->out[0].type.shape;
    int64_t kh = wino ? wino + 2 : s->dims[0], kw = wino ? wino + 2 : s->dims[1], cin = s->dims[2],
            cout = s->dims[3];
    int64_t floats = tcrt_conv_packed_floats(kh, kw, cin, cout);
    IrValue none = {NULL, 0};
    if (floats <= 0 || (uint64_t)floats > SIZE_MAX / sizeof(float))
        return none;
    float *buf = arena_alloc_align(&cx->scratch, (size_t)floats * sizeof(float), 64);
    if (!buf) {
        st_errorf(cx->st, ST_NOMEM, "pack: out of memory");
        return none;
    }
    if (wino)
        tcrt_pack_conv_wino(w->data, wino, cin, cout, buf);
    else
        tcrt_pack_conv_weights(w->data, kh, kw, cin, cout, buf);
    int64_t dims[5] = {(cout + TCRT_PACK_NR - 1) / TCRT_PACK_NR, kh, kw, cin, TCRT_PACK_NR};
    return cached_const(g, cx, w, wino, ir_shape_make(5, dims), buf, cache, n_cache);
}

/* Packs the weights of every conv that can_pack (wino: wants_wino) says. */
static PassResult pack_convs(IrGraph *g, PassCtx *cx, bool wino)
{
    bool (*eligible)(const IrNode *) = wino ? wants_wino : can_pack;
    int n_convs = 0;
    IR_FOR_EACH(g, n) {
        n_convs += eligible(n);
    }
    if (n_convs == 0)
        return PASS_SAME;
    Packed *cache = arena_alloc(&cx->scratch, sizeof(Packed) * (size_t)n_convs);
    if (!cache) {
        st_errorf(cx->st, ST_NOMEM, "pack: out of memory");
        return PASS_FAILED;
    }
    int n_cache = 0, n_nodes = g->n_nodes;
    bool changed = false, fold = g->fold_on_build;
    g->fold_on_build = false;
    for (int i = 0; i < n_nodes && st_ok(cx->st); i++) {
        IrNode *n = g->nodes[i];
        if (n->dead || !eligible(n))
            continue;
        IrNode *w = n->inputs[1].node;
        int m = wino ? wino_tile(n) : 0;
        IrValue pw = packed_weight(g, cx, w, m, cache, &n_cache);
        if (!pw.node)
            continue;
        IrValue in[4];
        memcpy(in, n->inputs, sizeof(IrValue) * (size_t)n->n_inputs);
        in[1] = pw;
        IrParams p = n->p;
        p.i[TCRT_CONV_PACKED] = m == 4   ? TCRT_CONV_PACK_WINO4
                                : m == 2 ? TCRT_CONV_PACK_WINO
                                         : TCRT_CONV_PACK_DIRECT;
        p.i[TCRT_CONV_COUT] = w->out[0].type.shape.dims[3];
        IrOrigin saved = ir_origin_like(g, n);
        IrNode *c = ir_emit(g, OP_CONV2D, in, n->n_inputs, &p, NULL, cx->st);
        ir_origin_restore(g, saved);
        if (!c)
            break;
        c->device = n->device;
        c->ctrl = n->ctrl;
        c->n_ctrl = n->n_ctrl;
        ir_replace_uses(g, (IrValue){n, 0}, (IrValue){c, 0});
        n->dead = true;
        if (ir_use_count(g, w) == 0 && !is_fetched(g, w))
            w->dead = true;
        changed = true;
    }
    return pass_finish_rewrite(g, cx, fold, changed);
}

/* ---- dwfuse ---- */

/* Limits (measured, docs/performance.md): an expansion is fused when the
 * expanded tensor is at least DWF_EXP_MIN_BYTES (smaller ones stay in cache
 * between the two kernels, and the row-wise expansion's short tiles lose),
 * its rows at least DWF_MIN_W pixels, and the ring of expanded rows at
 * most DWF_MAX_RING bytes (it stays in L2); a projection when the
 * depthwise output is at least DWF_PROJ_MIN_BYTES with rows of at least
 * DWF_MIN_W pixels. */
enum {
    DWF_EXP_MIN_BYTES = 512 << 10,
    DWF_PROJ_MIN_BYTES = 512 << 10,
    DWF_MIN_W = 16,
    DWF_MAX_RING = 256 << 10
};

static bool is_const_f32(IrValue v)
{
    return v.node && v.node->op == OP_CONST && v.node->data && v.node->out[0].type.dtype == TCRT_F32;
}

static bool same_device(const IrNode *a, const IrNode *b)
{
    return (a->device == NULL) == (b->device == NULL) && (!a->device || strcmp(a->device, b->device) == 0);
}

/* A packed 1x1 stride-1 unpadded f32 conv with constant weights and bias
 * and no residual (unless res_ok), on a CPU. */
static bool is_pointwise(const IrNode *e, bool res_ok)
{
    const int64_t *q = e->p.i;
    if (e->op != OP_CONV2D || e->n_inputs < 3 || e->n_inputs > (res_ok ? 4 : 3) || e->n_ctrl ||
        e->out[0].type.dtype != TCRT_F32 || on_accelerator(e) ||
        q[TCRT_CONV_PACKED] != TCRT_CONV_PACK_DIRECT || q[TCRT_CONV_DEPTHWISE] || q[TCRT_CONV_X2S] ||
        !is_const_f32(e->inputs[1]) || !is_const_f32(e->inputs[2]))
        return false;
    const IrShape *ew = &ir_value_type(e->inputs[1])->shape;
    return ew->rank == 5 && ew->dims[1] == 1 && ew->dims[2] == 1 && q[TCRT_CONV_SH] == 1 &&
           q[TCRT_CONV_SW] == 1 && !q[TCRT_CONV_PT] && !q[TCRT_CONV_PL] && !q[TCRT_CONV_PB] &&
           !q[TCRT_CONV_PR];
}

/* A plain f32 depthwise conv (multiplier 1, constant filter, no residual)
 * on a CPU: the center of a fused block (a zero bias is made for one
 * without). */
static bool is_plain_dw(const IrNode *n)
{
    const int64_t *p = n->p.i;
    if (n->op != OP_CONV2D || !p[TCRT_CONV_DEPTHWISE] || p[TCRT_CONV_PACKED] || n->n_inputs > 3 ||
        n->n_ctrl || n->out[0].type.dtype != TCRT_F32 || !is_const_f32(n->inputs[1]) || on_accelerator(n))
        return false;
    const IrShape *w = &ir_value_type(n->inputs[1])->shape;
    return w->rank == 4 && w->dims[3] == 1;
}

/* The expansion conv feeding depthwise conv n that dwfuse fuses, or NULL. */
static IrNode *expansion_of(const IrGraph *g, const IrNode *n)
{
    if (!is_plain_dw(n))
        return NULL;
    IrNode *e = n->inputs[0].node;
    if (!e || !is_pointwise(e, false) || !same_device(e, n) || (n->n_inputs == 3 && n->inputs[2].node == e) ||
        ir_use_count(g, e) != 1)
        return NULL;
    const IrShape *w = &ir_value_type(n->inputs[1])->shape, *ex = &e->out[0].type.shape;
    int64_t ce = ex->dims[3], rows = tcrt_dwblock_ring_rows(w->dims[0], n->p.i[TCRT_CONV_DH]);
    if (ex->rank != 4 || ex->dims[0] * ex->dims[1] * ex->dims[2] * ce * 4 < DWF_EXP_MIN_BYTES ||
        ex->dims[2] < DWF_MIN_W || rows * ex->dims[2] * ce * 4 > DWF_MAX_RING)
        return NULL;
    return e;
}

/* The depthwise conv (plain, or fused without a projection) feeding 1x1
 * conv c that dwfuse fuses it into, or NULL. */
static IrNode *depthwise_of(const IrGraph *g, const IrNode *c)
{
    if (!is_pointwise(c, true))
        return NULL;
    IrNode *d = c->inputs[0].node;
    if (!d || !same_device(d, c) || ir_use_count(g, d) != 1 || (c->n_inputs == 4 && c->inputs[3].node == d))
        return NULL;
    bool fused = d->op == OP_CONV2D && d->p.i[TCRT_CONV_PACKED] == TCRT_CONV_PACK_DWBLOCK &&
                 d->p.i[TCRT_CONV_FUSE] == TCRT_FUSE_EXPAND && d->n_inputs == 3 && !d->n_ctrl &&
                 is_const_f32(d->inputs[1]);
    if (!fused && !is_plain_dw(d))
        return NULL;
    const IrShape *y = &d->out[0].type.shape;
    if (y->rank != 4 || y->dims[0] * y->dims[1] * y->dims[2] * y->dims[3] * 4 < DWF_PROJ_MIN_BYTES ||
        y->dims[2] < DWF_MIN_W)
        return NULL;
    return d;
}

/* Replaces `last` (whose uses move to the new node) by a DWBLOCK conv of
 * input x with the fused filter vector parts[], the depthwise bias, the
 * optional residual and params p: 1 when it did, 0 when the sizes do not
 * allow it (left as it is), -1 on an error (in cx->st). */
static int emit_block(IrGraph *g, PassCtx *cx, IrNode *last, IrValue x,
                      const float *const parts[TCRT_DWB_PARTS], IrValue bias, const IrValue *res, IrParams *p)
{
    int64_t off[TCRT_DWB_PARTS], ci = ir_value_type(x)->shape.dims[3];
    const int64_t *q = p->i;
    int64_t floats = tcrt_conv_dwblock_floats(q[TCRT_CONV_FUSE], ci, q[TCRT_CONV_COUT], q[TCRT_CONV_KH],
                                              q[TCRT_CONV_KW], q[TCRT_CONV_PCOUT], off);
    if (floats <= 0 || (uint64_t)floats > SIZE_MAX / sizeof(float))
        return 0;
    float *buf = arena_alloc_align(&cx->scratch, (size_t)floats * sizeof(float), 64);
    if (!buf) {
        st_errorf(cx->st, ST_NOMEM, "dwfuse: out of memory");
        return -1;
    }
    for (int k = 0; k < TCRT_DWB_PARTS; k++) {
        int64_t end = k + 1 < TCRT_DWB_PARTS ? off[k + 1] : floats;
        if (end > off[k])
            memcpy(buf + off[k], parts[k], (size_t)(end - off[k]) * sizeof(float));
    }
    IrShape bs = ir_shape_make(1, (int64_t[]){floats});
    IrOrigin saved = ir_origin_like(g, last);
    IrValue blob = ir_const(g, TCRT_F32, &bs, buf, cx->st);
    if (!bias.node && blob.node) { /* a depthwise conv without a bias: zeros */
        int64_t ce = q[TCRT_CONV_COUT];
        float *z = arena_alloc_align(&cx->scratch, (size_t)ce * sizeof(float), 64);
        IrShape zs = ir_shape_make(1, (int64_t[]){ce});
        if (z) {
            memset(z, 0, (size_t)ce * sizeof(float));
            bias = ir_const(g, TCRT_F32, &zs, z, cx->st);
        } else {
            st_errorf(cx->st, ST_NOMEM, "dwfuse: out of memory");
        }
    }
    IrValue in[4] = {x, blob, bias, res ? *res : (IrValue){NULL, 0}};
    p->i[TCRT_CONV_PACKED] = TCRT_CONV_PACK_DWBLOCK;
    IrNode *c = blob.node ? ir_emit(g, OP_CONV2D, in, res ? 4 : 3, p, NULL, cx->st) : NULL;
    ir_origin_restore(g, saved);
    if (!c)
        return -1;
    c->device = last->device;
    ir_replace_uses(g, (IrValue){last, 0}, (IrValue){c, 0});
    return 1;
}

/* Marks dead the nodes and (now unused) constants of a fused block. */
static void kill_fused(IrGraph *g, IrNode *const *nodes, int n)
{
    for (int i = 0; i < n; i++)
        nodes[i]->dead = true;
    for (int i = 0; i < n; i++)
        for (int k = 1; k < nodes[i]->n_inputs; k++) {
            IrNode *w = nodes[i]->inputs[k].node;
            if (w->op == OP_CONST && !w->dead && ir_use_count(g, w) == 0)
                w->dead = true;
        }
}

PassResult pass_dwfuse(IrGraph *g, PassCtx *cx)
{
    bool changed = false, fold = g->fold_on_build;
    g->fold_on_build = false;
    /* expansions first, then projections (of plain or expanded depthwise convs) */
    for (int round = 0; round < 2 && st_ok(cx->st); round++) {
        int n_nodes = g->n_nodes;
        for (int i = 0; i < n_nodes && st_ok(cx->st); i++) {
            IrNode *n = g->nodes[i], *e, *d;
            if (n->dead)
                continue;
            int r = 0;
            if (round == 0 && (e = expansion_of(g, n))) {
                const IrShape *w = &ir_value_type(n->inputs[1])->shape;
                IrParams p = n->p;
                p.i[TCRT_CONV_FUSE] = TCRT_FUSE_EXPAND;
                p.i[TCRT_CONV_COUT] = e->out[0].type.shape.dims[3];
                p.i[TCRT_CONV_KH] = w->dims[0];
                p.i[TCRT_CONV_KW] = w->dims[1];
                p.i[TCRT_CONV_EACT] = e->p.i[TCRT_CONV_ACT];
                p.f[1] = e->p.f[0];
                const float *parts[TCRT_DWB_PARTS] = {e->inputs[1].node->data, e->inputs[2].node->data,
                                                      n->inputs[1].node->data, NULL, NULL};
                IrValue nb = n->n_inputs >= 3 ? n->inputs[2] : (IrValue){NULL, 0};
                if ((r = emit_block(g, cx, n, e->inputs[0], parts, nb, NULL, &p)) > 0)
                    kill_fused(g, (IrNode *[]){n, e}, 2);
            } else if (round == 1 && (d = depthwise_of(g, n))) {
                /* n is the projection; d the plain or expanded depthwise conv */
                bool fused = d->p.i[TCRT_CONV_PACKED] == TCRT_CONV_PACK_DWBLOCK;
                const IrShape *w = &ir_value_type(d->inputs[1])->shape;
                IrParams p = d->p;
                int64_t off[TCRT_DWB_PARTS] = {0};
                if (fused) {
                    tcrt_conv_dwblock_floats(TCRT_FUSE_EXPAND, ir_value_type(d->inputs[0])->shape.dims[3],
                                             p.i[TCRT_CONV_COUT], p.i[TCRT_CONV_KH], p.i[TCRT_CONV_KW], 0,
                                             off);
                } else {
                    p.i[TCRT_CONV_COUT] = w->dims[2];
                    p.i[TCRT_CONV_KH] = w->dims[0];
                    p.i[TCRT_CONV_KW] = w->dims[1];
                }
                p.i[TCRT_CONV_FUSE] = (fused ? TCRT_FUSE_EXPAND : 0) | TCRT_FUSE_PROJECT;
                p.i[TCRT_CONV_PCOUT] = n->out[0].type.shape.dims[3];
                p.i[TCRT_CONV_PACT] = n->p.i[TCRT_CONV_ACT];
                p.f[2] = n->p.f[0];
                const float *dv = d->inputs[1].node->data;
                const float *parts[TCRT_DWB_PARTS] = {
                    fused ? dv + off[TCRT_DWB_WE] : NULL, fused ? dv + off[TCRT_DWB_BE] : NULL,
                    fused ? dv + off[TCRT_DWB_WD] : dv, n->inputs[1].node->data, n->inputs[2].node->data};
                IrValue db = d->n_inputs >= 3 ? d->inputs[2] : (IrValue){NULL, 0};
                if ((r = emit_block(g, cx, n, d->inputs[0], parts, db,
                                    n->n_inputs == 4 ? &n->inputs[3] : NULL, &p)) > 0)
                    kill_fused(g, (IrNode *[]){n, d}, 2);
            }
            if (r < 0)
                break;
            changed |= r > 0;
        }
    }
    return pass_finish_rewrite(g, cx, fold, changed);
}

/* ---- pair ---- */

/* The smallest gcd of a pair's channel counts (its kernel runs the joined
 * Cin as taps of that many values). */
enum { PAIR_MIN_KC = 16 };

/* A packed 1x1 unpadded f32 conv with constant weights (and bias, when it
 * has one), not depthwise, not a pair, on a CPU, no control deps: a part
 * of a conv pair. */
static bool is_pair_part(const IrNode *c)
{
    const int64_t *q = c->p.i;
    if (c->op != OP_CONV2D || c->n_inputs < 2 || c->n_ctrl || c->n_outputs != 1 ||
        c->out[0].type.dtype != TCRT_F32 || on_accelerator(c) ||
        q[TCRT_CONV_PACKED] != TCRT_CONV_PACK_DIRECT || q[TCRT_CONV_DEPTHWISE] || q[TCRT_CONV_X2S] ||
        !is_const_f32(c->inputs[1]) || (c->n_inputs >= 3 && !is_const_f32(c->inputs[2])))
        return false;
    const IrShape *w = &ir_value_type(c->inputs[1])->shape;
    return w->rank == 5 && w->dims[1] == 1 && w->dims[2] == 1 && !q[TCRT_CONV_PT] && !q[TCRT_CONV_PL] &&
           !q[TCRT_CONV_PB] && !q[TCRT_CONV_PR];
}

/* The conv whose output is packed 1x1 conv a's residual and that pair
 * merges into a, or NULL: a 1x1 conv (pair part) without residual or
 * activation whose only user is a, on a's device, with strides equal in
 * both dims, and channel counts whose gcd is at least PAIR_MIN_KC. */
static IrNode *pair_of(const IrGraph *g, const IrNode *a)
{
    if (!is_pair_part(a) || a->n_inputs != 4 || !is_const_f32(a->inputs[2]) || a->inputs[3].index != 0)
        return NULL;
    IrNode *b = a->inputs[3].node;
    if (!b || !is_pair_part(b) || b->n_inputs > 3 || b->p.i[TCRT_CONV_ACT] != TCRT_ACT_NONE ||
        !same_device(a, b) || ir_use_count(g, b) != 1 || is_fetched(g, b) || a->inputs[0].node == b ||
        b->p.i[TCRT_CONV_SH] != b->p.i[TCRT_CONV_SW])
        return NULL;
    int64_t ca = ir_value_type(a->inputs[0])->shape.dims[3], cb = ir_value_type(b->inputs[0])->shape.dims[3];
    while (cb) {
        int64_t t = ca % cb;
        ca = cb, cb = t;
    }
    return ca >= PAIR_MIN_KC ? b : NULL;
}

/* Replaces a (residual b's output) by one conv pair: a's input and
 * geometry first, b's input at b's stride second, the packed panels of the
 * two filters joined along Cin, the biases summed.  1 when done, -1 on an
 * error. */
static int emit_pair(IrGraph *g, PassCtx *cx, IrNode *a, IrNode *b)
{
    const IrShape *wa = &ir_value_type(a->inputs[1])->shape, *wb = &ir_value_type(b->inputs[1])->shape;
    int64_t panels = wa->dims[0], ka = wa->dims[3], kb = wb->dims[3], cout = a->p.i[TCRT_CONV_COUT];
    int64_t floats = tcrt_conv_packed_floats(1, 1, ka + kb, cout);
    float *wbuf = floats > 0 && (uint64_t)floats <= SIZE_MAX / sizeof(float)
                      ? arena_alloc_align(&cx->scratch, (size_t)floats * sizeof(float), 64)
                      : NULL;
    float *bbuf = arena_alloc_align(&cx->scratch, (size_t)cout * sizeof(float), 64);
    if (!wbuf || !bbuf) {
        st_errorf(cx->st, ST_NOMEM, "pair: out of memory");
        return -1;
    }
    const float *pa = a->inputs[1].node->data, *pb = b->inputs[1].node->data;
    for (int64_t q = 0; q < panels; q++) { /* panel q: a's ka rows of 16, then b's kb */
        memcpy(wbuf + q * (ka + kb) * TCRT_PACK_NR, pa + q * ka * TCRT_PACK_NR,
               (size_t)(ka * TCRT_PACK_NR) * sizeof(float));
        memcpy(wbuf + (q * (ka + kb) + ka) * TCRT_PACK_NR, pb + q * kb * TCRT_PACK_NR,
               (size_t)(kb * TCRT_PACK_NR) * sizeof(float));
    }
    const float *ba = a->inputs[2].node->data, *bb = b->n_inputs >= 3 ? b->inputs[2].node->data : NULL;
    for (int64_t o = 0; o < cout; o++)
        bbuf[o] = (float)((double)ba[o] + (bb ? (double)bb[o] : 0.0));
    IrOrigin saved = ir_origin_like(g, a);
    IrShape ws = ir_shape_make(5, (int64_t[]){panels, 1, 1, ka + kb, TCRT_PACK_NR});
    IrShape bs = ir_shape_make(1, (int64_t[]){cout});
    IrValue w = ir_const(g, TCRT_F32, &ws, wbuf, cx->st);
    IrValue bias = w.node ? ir_const(g, TCRT_F32, &bs, bbuf, cx->st) : (IrValue){NULL, 0};
    IrParams p = a->p;
    p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
    p.i[TCRT_CONV_X2S] = b->p.i[TCRT_CONV_SH];
    IrValue in[4] = {a->inputs[0], w, bias, b->inputs[0]};
    IrNode *c = bias.node ? ir_emit(g, OP_CONV2D, in, 4, &p, NULL, cx->st) : NULL;
    ir_origin_restore(g, saved);
    if (!c)
        return -1;
    c->device = a->device;
    ir_replace_uses(g, (IrValue){a, 0}, (IrValue){c, 0});
    kill_fused(g, (IrNode *[]){a, b}, 2);
    return 1;
}

PassResult pass_pair(IrGraph *g, PassCtx *cx)
{
    bool changed = false, fold = g->fold_on_build;
    g->fold_on_build = false;
    int n_nodes = g->n_nodes;
    for (int i = 0; i < n_nodes && st_ok(cx->st); i++) {
        IrNode *a = g->nodes[i], *b;
        if (a->dead || !(b = pair_of(g, a)))
            continue;
        if (emit_pair(g, cx, a, b) < 0)
            break;
        changed = true;
    }
    return pass_finish_rewrite(g, cx, fold, changed);
}

PassResult pass_winograd(IrGraph *g, PassCtx *cx)
{
    return pack_convs(g, cx, true);
}

/* ---- matmuls as 1x1 convs (file comment) ---- */

enum { MM_CONV_MIN_ROWS = 2 };

/* Whether MATMUL n runs as a 1x1 conv: f32, on a CPU, A not transposed,
 * B a rank-2 CONST, at least MM_CONV_MIN_ROWS rows of A, a bias (if any) a
 * CONST of N values. */
static bool mm_as_conv(const IrNode *n)
{
    if (n->op != OP_MATMUL || n->n_inputs < 2 || n->n_inputs > 3 || n->n_outputs != 1 ||
        n->out[0].type.dtype != TCRT_F32 || n->p.i[TCRT_MM_TA] || on_accelerator(n) ||
        !is_const_f32(n->inputs[1]))
        return false;
    const IrType *at = ir_value_type(n->inputs[0]);
    const IrShape *a = &at->shape, *b = &ir_value_type(n->inputs[1])->shape;
    if (at->dtype != TCRT_F32 || a->rank < 2 || b->rank != 2)
        return false;
    bool tb = n->p.i[TCRT_MM_TB] != 0;
    int64_t K = b->dims[tb ? 1 : 0], N = b->dims[tb ? 0 : 1], rows = 1;
    for (int d = 0; d + 1 < a->rank; d++)
        rows *= a->dims[d];
    if (K < 1 || N < 1 || a->dims[a->rank - 1] != K || rows < MM_CONV_MIN_ROWS)
        return false;
    if (n->n_inputs < 3)
        return true;
    const IrShape *bias = &ir_value_type(n->inputs[2])->shape;
    return is_const_f32(n->inputs[2]) && bias->rank == 1 && bias->dims[0] == N;
}

/* The [1,1,K,N] HWIO filter of matmul n's B (once per B node and
 * orientation: cache of *n_cache entries, `wino` holding tb). */
static IrValue mm_filter(IrGraph *g, PassCtx *cx, const IrNode *n, Packed *cache, int *n_cache)
{
    IrNode *bn = n->inputs[1].node;
    int tb = n->p.i[TCRT_MM_TB] != 0;
    for (int i = 0; i < *n_cache; i++)
        if (cache[i].from == bn && cache[i].wino == tb)
            return cache[i].to;
    const IrShape *bs = &bn->out[0].type.shape;
    int64_t K = bs->dims[tb ? 1 : 0], N = bs->dims[tb ? 0 : 1];
    IrValue none = {NULL, 0};
    if ((uint64_t)K > SIZE_MAX / sizeof(float) / (uint64_t)N)
        return none;
    float *w = arena_alloc_align(&cx->scratch, (size_t)(K * N) * sizeof(float), 64);
    if (!w) {
        st_errorf(cx->st, ST_NOMEM, "pack: out of memory");
        return none;
    }
    const float *b = bn->data;
    if (tb)
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < N; j++)
                w[k * N + j] = b[j * K + k];
    else
        memcpy(w, b, (size_t)(K * N) * sizeof(float));
    return cached_const(g, cx, bn, tb, ir_shape_make(4, (int64_t[]){1, 1, K, N}), w, cache, n_cache);
}

/* The last-axis column range [*b, *b + *w) that slice node s takes of
 * matmul output y (rank r, N columns), or false when s slices any other
 * axis, strides, or is not y's slice. */
static bool last_axis_slice(const IrNode *s, const IrNode *mm, int64_t *b, int64_t *w)
{
    const IrShape *ys = &mm->out[0].type.shape;
    if (s->op != OP_SLICE || s->n_inputs != 1 || s->inputs[0].node != mm || s->inputs[0].index != 0 ||
        s->n_outputs != 1 || s->out[0].type.dtype != TCRT_F32 || s->out[0].type.shape.rank != ys->rank ||
        !same_device(s, mm))
        return false;
    int r = ys->rank;
    for (int d = 0; d < r; d++) {
        int64_t begin = s->p.i[TCRT_SL_BEGIN + d], stride = s->p.i[TCRT_SL_STRIDE + d],
                n = s->out[0].type.shape.dims[d];
        if (stride != 1 || begin < 0 || n < 1 || begin + n > ys->dims[d])
            return false;
        if (d < r - 1 && (begin != 0 || n != ys->dims[d]))
            return false;
        if (d == r - 1)
            *b = begin, *w = n;
    }
    return true;
}

/* Results below SPLIT_MIN_OUT floats keep their slices: copies that
 * small cost less than the extra conv calls (the benchmark's 16-row
 * encoder, Q/K/V [16, 192]: 28.3 -> 28.6 us split, five alternating runs
 * at 1 and 2 threads), while the 128-row encoder's [128, 768] at 2 threads
 * read its slices from the other core (docs/performance.md, "Passes"). */
enum { SPLIT_MIN_OUT = 1 << 13 };

/* True when every user of matmul n's result is a last_axis_slice, there is
 * at least one, their widths sum to at most N, the result has at least
 * SPLIT_MIN_OUT floats, nothing fetches or control-depends on n, and
 * mm_as_conv takes n. */
static bool sliced_matmul(const IrGraph *g, const IrNode *n)
{
    if (!mm_as_conv(n) || is_fetched(g, n) || ir_shape_count(&n->out[0].type.shape) < SPLIT_MIN_OUT)
        return false;
    int64_t N = n->out[0].type.shape.dims[n->out[0].type.shape.rank - 1], total = 0, b, w;
    int users = 0;
    IR_FOR_EACH(g, m)
    {
        for (int c = 0; c < m->n_ctrl; c++)
            if (m->ctrl[c] == n)
                return false;
        for (int i = 0; i < m->n_inputs; i++)
            if (m->inputs[i].node == n) {
                if (!last_axis_slice(m, n, &b, &w))
                    return false;
                total += w;
                users++;
            }
    }
    return users > 0 && total <= N;
}

/* A CONST of columns [b, b + w) of matmul n's B (rows of B^T when tb) or,
 * bias, of its bias; data copied through the pass's scratch arena. */
static IrValue column_const(IrGraph *g, PassCtx *cx, const IrNode *n, bool bias, int64_t b, int64_t w)
{
    const IrNode *src = n->inputs[bias ? 2 : 1].node;
    const IrShape *ss = &src->out[0].type.shape;
    const float *d = src->data;
    bool tb = n->p.i[TCRT_MM_TB] != 0;
    /* bias: w floats; B^T [N, K]: rows b .. b + w, contiguous; B [K, N]: w of each row */
    int64_t rows = bias ? 1 : tb ? w : ss->dims[0], cols = bias ? w : tb ? ss->dims[1] : w;
    IrValue none = {NULL, 0};
    float *out = arena_alloc_align(&cx->scratch, (size_t)(rows * cols) * sizeof(float), 64);
    if (!out) {
        st_errorf(cx->st, ST_NOMEM, "pack: out of memory");
        return none;
    }
    if (bias || tb)
        memcpy(out, d + b * (bias ? 1 : cols), (size_t)(rows * cols) * sizeof(float));
    else
        for (int64_t k = 0; k < rows; k++)
            memcpy(out + k * w, d + k * ss->dims[1] + b, (size_t)w * sizeof(float));
    IrShape s = bias ? ir_shape_make(1, (int64_t[]){w}) : ir_shape_make(2, (int64_t[]){rows, cols});
    IrOrigin saved = ir_origin_like(g, src);
    IrValue v = ir_const(g, TCRT_F32, &s, out, cx->st);
    ir_origin_restore(g, saved);
    return v;
}

/* Rewrites every sliced_matmul as one matmul per slice (file comment);
 * *changed when one was. */
static bool split_sliced_matmuls(IrGraph *g, PassCtx *cx, bool *changed)
{
    int n_nodes = g->n_nodes;
    for (int i = 0; i < n_nodes && st_ok(cx->st); i++) {
        IrNode *n = g->nodes[i];
        if (n->dead || !sliced_matmul(g, n))
            continue;
        for (int j = 0; j < n_nodes && st_ok(cx->st); j++) {
            IrNode *s = g->nodes[j];
            int64_t b, w;
            if (s->dead || !last_axis_slice(s, n, &b, &w))
                continue;
            IrOrigin saved = ir_origin_like(g, n);
            IrValue in[3] = {n->inputs[0], column_const(g, cx, n, false, b, w),
                             n->n_inputs == 3 ? column_const(g, cx, n, true, b, w) : (IrValue){NULL, 0}};
            IrNode *m = in[1].node && (n->n_inputs < 3 || in[2].node)
                            ? ir_emit(g, OP_MATMUL, in, n->n_inputs, &n->p, NULL, cx->st)
                            : NULL;
            ir_origin_restore(g, saved);
            if (!m)
                return false;
            if (!ALWAYS(cx->st, ir_shape_eq(&m->out[0].type.shape, &s->out[0].type.shape)))
                return false;
            m->device = n->device;
            m->ctrl = n->ctrl;
            m->n_ctrl = n->n_ctrl;
            ir_replace_uses(g, (IrValue){s, 0}, (IrValue){m, 0});
            s->dead = true;
        }
        n->dead = true;
        for (int k = 1; k < n->n_inputs; k++) {
            IrNode *c = n->inputs[k].node;
            if (ir_use_count(g, c) == 0 && !is_fetched(g, c))
                c->dead = true;
        }
        *changed = true;
    }
    return st_ok(cx->st);
}

/* Rewrites every matmul mm_as_conv takes as COPY -> CONV2D (1x1, HWIO
 * filter, packed by pack_convs after this) -> COPY; *changed when one was.
 * The input COPY of an A that several matmuls read is made once. */
static bool matmuls_as_convs(IrGraph *g, PassCtx *cx, bool *changed)
{
    int n_mm = 0;
    IR_FOR_EACH(g, n)
    {
        n_mm += mm_as_conv(n);
    }
    if (n_mm == 0)
        return true;
    Packed *filters = arena_alloc(&cx->scratch, sizeof(Packed) * (size_t)n_mm);
    IrValue *views = arena_alloc(&cx->scratch, sizeof(IrValue) * (size_t)n_mm * 2);
    if (!filters || !views) {
        st_errorf(cx->st, ST_NOMEM, "pack: out of memory");
        return false;
    }
    int n_filters = 0, n_views = 0, n_nodes = g->n_nodes;
    for (int i = 0; i < n_nodes && st_ok(cx->st); i++) {
        IrNode *n = g->nodes[i];
        if (n->dead || !mm_as_conv(n))
            continue;
        IrValue a = n->inputs[0];
        const IrType *at = ir_value_type(a);
        int64_t K = at->shape.dims[at->shape.rank - 1], rows = ir_shape_count(&at->shape) / K;
        IrOrigin saved = ir_origin_like(g, n);
        IrValue w = mm_filter(g, cx, n, filters, &n_filters), x = {NULL, 0};
        for (int v = 0; v < n_views && !x.node; v++)
            if (views[2 * v].node == a.node && views[2 * v].index == a.index)
                x = views[2 * v + 1];
        if (w.node && !x.node) {
            IrType xt = *at;
            xt.shape = ir_shape_make(4, (int64_t[]){1, 1, rows, K});
            x = ir_emit1(g, OP_COPY, &a, 1, NULL, &xt, cx->st);
            if (x.node) {
                x.node->device = n->device;
                views[2 * n_views] = a;
                views[2 * n_views + 1] = x;
                n_views++;
            }
        }
        IrParams p;
        memset(&p, 0, sizeof p);
        p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
        p.i[TCRT_CONV_ACT] = n->p.i[TCRT_MM_ACT];
        p.f[0] = n->p.f[0];
        IrValue in[3] = {x, w, n->n_inputs == 3 ? n->inputs[2] : (IrValue){NULL, 0}};
        IrNode *c = x.node ? ir_emit(g, OP_CONV2D, in, n->n_inputs, &p, NULL, cx->st) : NULL;
        IrValue y =
            c ? ir_emit1(g, OP_COPY, &(IrValue){c, 0}, 1, NULL, &n->out[0].type, cx->st) : (IrValue){NULL, 0};
        ir_origin_restore(g, saved);
        if (!y.node)
            return false;
        c->device = y.node->device = n->device;
        c->ctrl = n->ctrl; /* the view of A is data only: the conv keeps n's control deps */
        c->n_ctrl = n->n_ctrl;
        ir_replace_uses(g, (IrValue){n, 0}, y);
        n->dead = true;
        IrNode *b = n->inputs[1].node;
        if (ir_use_count(g, b) == 0 && !is_fetched(g, b))
            b->dead = true;
        *changed = true;
    }
    return st_ok(cx->st);
}

PassResult pass_pack(IrGraph *g, PassCtx *cx)
{
    bool changed = false, fold = g->fold_on_build;
    g->fold_on_build = false;
    bool ok = split_sliced_matmuls(g, cx, &changed) && matmuls_as_convs(g, cx, &changed);
    PassResult r = pass_finish_rewrite(g, cx, fold, changed);
    if (!ok || r == PASS_FAILED)
        return PASS_FAILED;
    PassResult q = pack_convs(g, cx, false);
    return q == PASS_SAME ? r : q;
}
