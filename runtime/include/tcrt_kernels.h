/* tcrt_kernels.h - reference kernels, one per non-elementwise primitive.
 *
 * Every kernel has the same signature (tcrt_kernel_fn): input tensors,
 * output tensors (data preallocated by the caller, shapes filled in), and a
 * parameter block whose layout per primitive is fixed below.  They accept any
 * shape up to TCRT_MAX_RANK and the dtypes listed per kernel, never allocate
 * unless stated, and return TCRT_ERR_RUNTIME for values they cannot handle
 * (an out-of-range gather index, say) instead of reading out of bounds.
 * Constant folding in the compiler calls these same functions, and they are
 * the test oracle for the fast kernels (tcrt_fast_*).
 *
 * Elementwise primitives have no kernel here: their C expression lives in
 * ir/ops.def and is emitted inline (helpers in tcrt_elem.h).
 */
#ifndef TCRT_KERNELS_H
#define TCRT_KERNELS_H

#include "tcrt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TCRT_MAX_IPARAM 32
#define TCRT_MAX_FPARAM 4

typedef struct tcrt_params {
    int64_t i[TCRT_MAX_IPARAM];
    double f[TCRT_MAX_FPARAM];
} tcrt_params;

typedef tcrt_status (*tcrt_kernel_fn)(const tcrt_tensor *in, int n_in, tcrt_tensor *out,
                                      int n_out, const tcrt_params *p);

/* Fused activation codes (contractions). */
enum { TCRT_ACT_NONE = 0, TCRT_ACT_RELU = 1, TCRT_ACT_RELU6 = 2, TCRT_ACT_LEAKY = 3 };

/* Parameter layouts (index into p->i / p->f). */
enum {
    /* matmul: in a[...,M,K] (a[...,K,M] if transposed), b[...,K,N], optional bias[N];
     * batch dims broadcast; f32, f64, i32, i64. */
    TCRT_MM_TA = 0, TCRT_MM_TB = 1, TCRT_MM_ACT = 2,               /* f[0]: leaky alpha */
    /* conv2d: x NHWC, w HWIO (depthwise: H,W,C,M), optional bias[Cout]; f32 only.
     * conv2d_transpose: dy NHWC, w [kh,kw,Cout_of_result,Cdy] (depthwise: [kh,kw,C,M], Cdy = C*M);
     * params are the forward conv's. */
    TCRT_CONV_SH = 0, TCRT_CONV_SW = 1, TCRT_CONV_DH = 2, TCRT_CONV_DW = 3,
    TCRT_CONV_PT = 4, TCRT_CONV_PL = 5, TCRT_CONV_PB = 6, TCRT_CONV_PR = 7,
    TCRT_CONV_DEPTHWISE = 8, TCRT_CONV_ACT = 9,                    /* f[0]: leaky alpha */
    /* TCRT_CONV_PACKED = 1: w is not HWIO but packed by tcrt_pack_conv_weights
     * ([ceil(Cout/16), KH, KW, Cin, 16], zero-padded; non-depthwise f32 only) and
     * TCRT_CONV_COUT holds Cout.  conv2d inputs are x, w[, bias[, residual]]: a
     * residual (same shape as the output) is added after the bias and before the
     * activation, y = act(conv(x, w) + bias + residual); it needs the bias input. */
    TCRT_CONV_PACKED = 10, TCRT_CONV_COUT = 11,
    /* TCRT_CONV_PACKED values: TCRT_CONV_PACK_DIRECT as above; TCRT_CONV_PACK_WINO
     * (WINO4): a 3x3 conv with strides and dilations 1 whose w is the Winograd
     * F(2x2,3x3) (F(4x4,3x3)) filter U = G g G^T of tcrt_pack_conv_wino
     * ([ceil(Cout/16), a, a, Cin, 16], a = 4 (6)). */
    TCRT_CONV_PACK_DIRECT = 1, TCRT_CONV_PACK_WINO = 2, TCRT_CONV_PACK_WINO4 = 3,
    /* TCRT_CONV_PACK_DWBLOCK (passes/pack.c "dwfuse"): a depthwise conv
     * (multiplier 1) with the 1x1 convs around it fused in, neither
     * intermediate stored whole: the expansion before it (TCRT_CONV_FUSE bit
     * TCRT_FUSE_EXPAND), e = eact(x * we + be) with Ce = TCRT_CONV_COUT
     * channels (without it e = x), then d = act(dw(e) + bias), and the
     * projection after it (bit TCRT_FUSE_PROJECT), y = pact(d * wp + bp[ +
     * residual]) with Co = TCRT_CONV_PCOUT channels (without it y = act(dw(e)
     * + bias[ + residual])).  TCRT_CONV_DEPTHWISE is 1; strides, dilations,
     * pads and act are the depthwise conv's, TCRT_CONV_KH/KW its window;
     * TCRT_CONV_EACT, TCRT_CONV_PACT the 1x1 convs' activations (f[1], f[2]:
     * their leaky alphas).  w is one f32 vector of the parts present
     * (tcrt_conv_dwblock_floats): we packed by tcrt_pack_conv_weights as a
     * [1,1,Cin,Ce] filter, be [Ce], the depthwise filter [KH,KW,Ce], wp
     * packed as a [1,1,Ce,Co] filter, bp [Co]. */
    TCRT_CONV_PACK_DWBLOCK = 4,
    TCRT_CONV_KH = 12, TCRT_CONV_KW = 13, TCRT_CONV_EACT = 14, TCRT_CONV_FUSE = 15, TCRT_CONV_PCOUT = 16,
    TCRT_CONV_PACT = 17,
    TCRT_FUSE_EXPAND = 1, TCRT_FUSE_PROJECT = 2,
    /* TCRT_CONV_X2S = s > 0 (passes/pack.c "pair"): two 1x1 unpadded convs
     * summed, y = act(conv(x, w[:, :, :C]) + conv_s(x2, w[:, :, C:]) + bias)
     * with x [N,H,W,C] the first input (its conv 1x1 with the strides and
     * dilations given, pads 0) and in[3] = x2 [N,H2,W2,C2] (not a residual)
     * read at stride s in both dims, OH = (H2-1)/s + 1 and OW = (W2-1)/s + 1;
     * w is [1,1,C+C2,O] (HWIO, or packed as such), the bias input required.
     * A bottleneck's last 1x1 conv and its strided shortcut conv in one, so
     * the shortcut's output is never stored. */
    TCRT_CONV_X2S = 18,
    /* maxpool / avgpool: x NHWC; avg excludes padding from the count (TF SAME). */
    TCRT_POOL_KH = 0, TCRT_POOL_KW = 1, TCRT_POOL_SH = 2, TCRT_POOL_SW = 3,
    TCRT_POOL_PT = 4, TCRT_POOL_PL = 5, TCRT_POOL_PB = 6, TCRT_POOL_PR = 7,
    /* reduce_{sum,max,min,prod}: i[0] = bitmask of reduced axes (of the input),
     * output holds the reduced shape (keepdims or not: same data order). */
    TCRT_RED_MASK = 0,
    /* argmax / argmin: i[0] = axis; output int32 or int64; first index wins ties. */
    TCRT_ARG_AXIS = 0,
    /* transpose: i[0..rank) = perm (out dim d = in dim perm[d]). */
    TCRT_TR_PERM = 0,
    /* slice (strided): i[0..8) begin per input dim, i[8..16) stride per dim (non-zero,
     * may be negative); the output shape gives the count per dim. Rank of out == in. */
    TCRT_SL_BEGIN = 0, TCRT_SL_STRIDE = 8,
    /* pad: i[2d], i[2d+1] = before/after for dim d (>= 0); i[16] = mode
     * (0 constant, 1 reflect, 2 symmetric); f[0] = constant value. */
    TCRT_PAD_MODE = 16,
    /* concat: i[0] = axis; n_in inputs. */
    TCRT_CAT_AXIS = 0,
    /* gather: in params, indices (i32/i64); i[0] = axis, i[1] = batch_dims.
     * gather_nd: params, indices (last dim indexes the leading params dims). */
    TCRT_GA_AXIS = 0, TCRT_GA_BATCH = 1,
    /* resize: x NHWC, out shape given; i[0] mode (0 bilinear, 1 nearest),
     * i[1] align_corners, i[2] half_pixel_centers. */
    TCRT_RS_MODE = 0, TCRT_RS_ALIGN = 1, TCRT_RS_HALF = 2,
    /* topk: x[..., n] -> values[..., k], indices[..., k] (int32); i[0] = k, i[1] = sorted. */
    TCRT_TOPK_K = 0, TCRT_TOPK_SORTED = 1,
    /* range: no inputs; out 1-D; f[0] = start, f[1] = delta. */
    TCRT_RANGE_START = 0, TCRT_RANGE_DELTA = 1,
    /* random_uniform: out f32/f64 in [0,1); i[0] = seed, i[1] = seed2. */
    TCRT_RND_SEED = 0, TCRT_RND_SEED2 = 1,
};

/* copy: one input, one output with the same byte size (reshape, identity). Any dtype. */
tcrt_status tcrt_ref_copy(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
/* assign: in[0] the variable (unread), in[1] the new value -> out = in[1]. */
tcrt_status tcrt_ref_assign(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
/* send, recv: the in-process halves of a cross-device edge (ref_comm.c):
 * out = in[0], same dtype and element count. */
tcrt_status tcrt_ref_send(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_recv(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
/* allreduce: the mean over the replicas of a --data-parallel run; one
 * replica here (ref_comm.c): out = in[0], float32/float64, p->i[0] = 0. */
tcrt_status tcrt_ref_allreduce(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_matmul(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_conv2d(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_conv2d_transpose(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_maxpool(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_avgpool(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_reduce_sum(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_reduce_max(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_reduce_min(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_reduce_prod(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_argmax(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_argmin(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_transpose(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_slice(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_pad(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_concat(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_gather(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_gather_nd(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_tile(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_broadcast(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_resize(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_topk(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
/* update_slice: x, update, start[rank] (int32/int64, read at run time) -> x with the slice replaced. */
tcrt_status tcrt_ref_update_slice(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_range(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_ref_random_uniform(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);

/* nms (non-maximum suppression, TensorFlow's NonMaxSuppressionV3/V4/V5 with
 * hard suppression): in boxes f32 [N,4] (two diagonal corners, any order),
 * scores f32 [N]; out selected indices i32 [M] (greedy by descending score,
 * the lower index first on ties; padded with 0), their scores f32 [M]
 * (padded with 0), the number selected i32 [], and the candidates (score >
 * score threshold) in that order i32 [N] (padded with -1; the kernel's work
 * list, so that it needs no allocation).  A box is dropped when its IoU with
 * a selected box is > the IoU threshold. */
#define TCRT_NMS_MAX_OUT 0 /* p->i: M, the maximum number selected */
#define TCRT_NMS_IOU 0     /* p->f: IoU threshold, in [0, 1] */
#define TCRT_NMS_SCORE 1   /* p->f: score threshold (scores must be > it) */
tcrt_status tcrt_ref_nms(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
/* reverse_seq: x, lengths (int32/int64, one per entry of batch_dim) -> x
 * with the first lengths[b] elements along seq_dim reversed in batch entry
 * b (TensorFlow's ReverseSequence); i[0] = seq_dim, i[1] = batch_dim.  A
 * length outside [0, dims[seq_dim]]: TCRT_ERR_RUNTIME (ref_move.c). */
tcrt_status tcrt_ref_reverse_seq(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
/* where: x (rank >= 1; numeric or bool) -> the coordinates of its nonzero
 * elements in row-major order, int64 [N, rank] with N >= count(x) (rows
 * past the count are -1), and the count, int64 [] (ref_nms.c). */
tcrt_status tcrt_ref_where(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);

/* Gradient kernels (ref_grad.c; TF's backprop ops).  f32 and f64 (scatter_add:
 * f32, f64, i32, i64).  conv2d_backprop_filter accumulates in double; the
 * others add in the output dtype, in a fixed order (deterministic).
 * conv2d_backprop_filter: in x NHWC, dy [N,OH,OW,O]; out dw, shape given:
 *   HWIO [KH,KW,CI,O] (grouped when C = G*CI) or depthwise [KH,KW,C,M]
 *   (TCRT_CONV_DEPTHWISE, dy channels C*M).  p: the forward conv2d's
 *   TCRT_CONV_* (TCRT_CONV_ACT and TCRT_CONV_PACKED must be 0).
 * maxpool_grad: in x NHWC, dy (maxpool's output shape); out dx (x's shape).
 *   p: the forward TCRT_POOL_*.  dy goes to the first maximum of its window
 *   in row-major order (a later tap wins only when strictly greater, as
 *   TF's CPU kernel); a window with no in-bounds tap drops its dy.
 * avgpool_grad: in dy; out dx, shape given (the forward input's).  p: the
 *   forward TCRT_POOL_*; dy / (in-bounds taps) to each in-bounds tap.
 * scatter_add (unsorted segment sum): in updates [I..., R...], indices
 *   int32/int64 [I...]; out [S, R...] (shape given) = 0, then
 *   out[indices[i], ...] += updates[i, ...] in index order.  An index
 *   outside [0,S) is TCRT_ERR_ARG before anything is written, except that
 *   with p->i[TCRT_SCAT_DROP_NEG] = 1 negative indices are skipped. */
#define TCRT_SCAT_DROP_NEG 0 /* p->i: 1 = skip negative indices (TF UnsortedSegmentSum) */
tcrt_status tcrt_ref_conv2d_backprop_filter(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                            const tcrt_params *p);
tcrt_status tcrt_ref_maxpool_grad(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                  const tcrt_params *p);
tcrt_status tcrt_ref_avgpool_grad(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                  const tcrt_params *p);
tcrt_status tcrt_ref_scatter_add(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                 const tcrt_params *p);

/* Fast kernels (Eigen through a C++ shim, or hand-written): same contracts as
 * their reference twins, f32 only; they fall back to the reference kernel for
 * cases they do not cover. */
/* fast matmul and conv2d take a workspace as out[1] (U8, rank 1) of at least
 * tcrt_fast_{matmul,conv2d}_workspace(...) bytes (0: none needed); the memory
 * planner reserves it.  With it they allocate nothing. */
tcrt_status tcrt_fast_matmul(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
size_t tcrt_fast_matmul_workspace(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p);
tcrt_status tcrt_fast_conv2d(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
size_t tcrt_fast_conv2d_workspace(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p);
/* NHWC pooling and depthwise convolution (fast_pool.c): vectorized over
 * channels, threaded over output rows, no workspace.  The depthwise kernel
 * takes tcrt_fast_conv2d's inputs and params (TCRT_CONV_DEPTHWISE set,
 * w [KH,KW,C,M], optional bias and residual). */
tcrt_status tcrt_fast_maxpool(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_fast_avgpool(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_fast_depthwise_conv2d(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                       const tcrt_params *p);
/* Float32 sum / max over one adjacent run of axes (softmax, layer norm,
 * global pooling; fast_reduce.c); anything else goes to the reference. */
tcrt_status tcrt_fast_reduce_sum(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_fast_reduce_max(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
/* Float32 constant-mode pad (row memcpy, bit-identical to the reference) and
 * NHWC bilinear / nearest resize (fast_move.c; bilinear in float, the
 * reference in double), threaded over rows; anything else goes to the
 * reference. */
tcrt_status tcrt_fast_pad(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_fast_resize(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
tcrt_status tcrt_fast_transpose(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
/* Float32 conv2d_transpose (fast_conv.c): the reference's gather in float,
 * threaded over output rows; depthwise and other dtypes go to the reference. */
tcrt_status tcrt_fast_conv2d_transpose(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                       const tcrt_params *p);

/* Packed convolution weights (TCRT_CONV_PACKED): HWIO w[KH,KW,Cin,Cout] ->
 * packed[ceil(Cout/TCRT_PACK_NR)][KH][KW][Cin][TCRT_PACK_NR], output channels
 * beyond Cout zero.  tcrt_conv_packed_floats gives the element count (0 on
 * overflow or a non-positive dim).  The layout is the same for every ISA; the
 * compiler packs constant weights once, at compile time (passes/pack). */
#define TCRT_PACK_NR 16
/* Instruction sets of the micro-kernels, in increasing order (macros: the
 * build's cap TCRT_ISA_MAX is compared with them in #if). */
#define TCRT_ISA_PORTABLE 0
#define TCRT_ISA_AVX2 1
#define TCRT_ISA_AVX512 2
/* The ISA the kernels use: the best one the CPU supports, capped by the
 * build's runtime_isa option and by tcrt_kern_force_isa (fast_conv_int.h).
 * The compiler asks it too: executables are linked with the code layout of
 * the kernels they will run on the build host (targets/targets.c). */
int tcrt_kern_isa(void);
int64_t tcrt_conv_packed_floats(int64_t kh, int64_t kw, int64_t cin, int64_t cout);
void tcrt_pack_conv_weights(const float *hwio, int64_t kh, int64_t kw, int64_t cin, int64_t cout,
                            float *packed);
/* Winograd F(m x m,3x3) weights, m = 2 (TCRT_CONV_PACK_WINO) or 4
 * (TCRT_CONV_PACK_WINO4): HWIO w[3,3,Cin,Cout] -> U = G g G^T per (Cin, Cout)
 * pair (computed in double), packed as [ceil(Cout/16)][a][a][Cin][16], a = m + 2
 * (tcrt_conv_packed_floats(a, a, cin, cout) floats), output channels beyond
 * Cout zero.  HWIO is recovered up to a rounding or two by g = L U L^T with L
 * G = I: L = [1 0 0 0; 0 1 -1 0; 0 0 0 1] (m = 2), [4 0 0 0 0 0;
 * 0 -3 3 0 0 0; 0 0 0 0 0 1] (m = 4) (ref_conv.c). */
void tcrt_pack_conv_wino(const float *hwio, int64_t m, int64_t cin, int64_t cout, float *packed);
/* Floats of a TCRT_CONV_PACK_DWBLOCK filter vector (0 on a bad or
 * overflowing size, or fuse not 1..3) and, when off is not NULL, where its
 * parts start (off[TCRT_DWB_*]; an absent part's offset is where it would
 * go). */
enum { TCRT_DWB_WE, TCRT_DWB_BE, TCRT_DWB_WD, TCRT_DWB_WP, TCRT_DWB_BP, TCRT_DWB_PARTS };
/* Rows of the fused kernel's per-thread ring of expanded rows (fast_pool.c;
 * passes/pack.c bounds its size): the window's span (kh-1)*dh+1 rounded up
 * to a power of two, so a row's slot is found by a mask. */
int64_t tcrt_dwblock_ring_rows(int64_t kh, int64_t dh);
int64_t tcrt_conv_dwblock_floats(int64_t fuse, int64_t cin, int64_t ce, int64_t kh, int64_t kw, int64_t co,
                                 int64_t off[TCRT_DWB_PARTS]);

#ifdef __cplusplus
}
#endif
#endif
