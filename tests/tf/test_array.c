/* tests/tf/test_array.c - Check suite for compiler/tf/tf_ops_array.c.
 *
 * Each test builds a tiny GraphDef in C (protobuf-c structs made by the
 * helpers below: Const inputs feeding one op), imports it with tf_import
 * (fold_on_build folds every node to a CONST) and compares the fetched
 * constant with values derived by hand in the comments next to them.
 * Error tests pin the message text ("node 'r' (Reshape): ...").
 */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/tf/tf.h"
#include "tf_build.h"

#include "tf_check.h"

/* A Placeholder of dtype and static shape (not fed: its shape attr is used). */
static Tensorflow__NodeDef *placeholder(G *g, const char *name, int dtype, int rank, const int64_t *dims)
{
    return tb_placeholder(g, name, dtype, rank, dims);
}

/* f32 constant of the given shape. */
#define KF(g, name, dims, ...) konst(g, name, TCRT_F32, NDIMS dims, DIMS dims, F32S(__VA_ARGS__), NULL, NULL)
/* int32 constant: rank 1 vector of the values */
#define KV(g, name, ...)                                                                                              \
    konst(g, name, TCRT_I32, 1, DIMS((int64_t)(sizeof(I32S(__VA_ARGS__)) / sizeof(int32_t))), NULL, I32S(__VA_ARGS__), \
          NULL)
/* int32 constant of the given shape */
#define KI(g, name, dims, ...) konst(g, name, TCRT_I32, NDIMS dims, DIMS dims, NULL, I32S(__VA_ARGS__), NULL)
/* int32 scalar */
#define KS(g, name, v) konst(g, name, TCRT_I32, 0, NULL, NULL, I32S(v), NULL)

/* x = [[0,1,2],[3,4,5],[6,7,8]] */
static void x33(G *g) { KF(g, "x", (3, 3), 0, 1, 2, 3, 4, 5, 6, 7, 8); }
/* x = [[0,1,2],[3,4,5]] */
static void x23(G *g) { KF(g, "x", (2, 3), 0, 1, 2, 3, 4, 5); }

static Tensorflow__NodeDef *strided(G *g, int bm, int em, int ell, int na, int sh)
{
    Tensorflow__NodeDef *n = tb_node(g, "s", "StridedSlice", "x", "b", "e", "st", NULL);
    tb_attr_i(n, "begin_mask", bm);
    tb_attr_i(n, "end_mask", em);
    tb_attr_i(n, "ellipsis_mask", ell);
    tb_attr_i(n, "new_axis_mask", na);
    tb_attr_i(n, "shrink_axis_mask", sh);
    return n;
}

/* ---- StridedSlice ------------------------------------------------------- */

START_TEST(test_ss_reverse_cols)
{
    /* x[1:, ::-1]: begin [1,0] end [0,0] strides [1,-1], begin_mask 0b10,
     * end_mask 0b11.  Rows 1..2, columns reversed: [[5,4,3],[8,7,6]]. */
    G *g = tb_new();
    x33(g);
    KV(g, "b", 1, 0);
    KV(g, "e", 0, 0);
    KV(g, "st", 1, -1);
    strided(g, 2, 3, 0, 0, 0);
    import_ok(g, "s", NULL);
    EXPECT_F32(0, (2, 3), 5, 4, 3, 8, 7, 6);
}
END_TEST

START_TEST(test_ss_ellipsis_shrink)
{
    /* x[..., 0] on [2,3]: ellipsis bit 0, shrink bit 1 -> column 0 = [0,3]. */
    G *g = tb_new();
    x23(g);
    KV(g, "b", 0, 0);
    KV(g, "e", 0, 1);
    KV(g, "st", 1, 1);
    strided(g, 0, 0, 1, 0, 2);
    import_ok(g, "s", NULL);
    EXPECT_F32(0, (2), 0, 3);
}
END_TEST

START_TEST(test_ss_newaxis)
{
    /* x[:, tf.newaxis] on [2,3]: begin/end mask bit 0, new_axis bit 1 ->
     * shape [2,1,3], data unchanged. */
    G *g = tb_new();
    x23(g);
    KV(g, "b", 0, 0);
    KV(g, "e", 0, 0);
    KV(g, "st", 1, 1);
    strided(g, 1, 1, 0, 2, 0);
    import_ok(g, "s", NULL);
    EXPECT_F32(0, (2, 1, 3), 0, 1, 2, 3, 4, 5);
}
END_TEST

START_TEST(test_ss_newaxis_variants)
{
    /* On x [2,3] = 0..5:
     * x[..., tf.newaxis]: ellipsis bit 0, new_axis bit 1 -> [2,3,1];
     * x[tf.newaxis, 1]: new_axis bit 0, shrink bit 1 -> [1,3] = [[3,4,5]]. */
    G *g = tb_new();
    x23(g);
    KV(g, "b", 0, 0);
    KV(g, "e", 0, 0);
    KV(g, "st", 1, 1);
    strided(g, 0, 0, 1, 2, 0);
    KV(g, "b2", 0, 1);
    KV(g, "e2", 0, 2);
    Tensorflow__NodeDef *n = tb_node(g, "s2", "StridedSlice", "x", "b2", "e2", "st", NULL);
    tb_attr_i(n, "new_axis_mask", 1);
    tb_attr_i(n, "shrink_axis_mask", 2);
    import_ok(g, "s", "s2", NULL);
    EXPECT_F32(0, (2, 3, 1), 0, 1, 2, 3, 4, 5);
    EXPECT_F32(1, (1, 3), 3, 4, 5);
}
END_TEST

START_TEST(test_ss_negative_index_shrink)
{
    /* x[-1] on [2,3]: begin [-1] end [0] stride [1], shrink bit 0 -> last row [3,4,5]. */
    G *g = tb_new();
    x23(g);
    KV(g, "b", -1);
    KV(g, "e", 0);
    KV(g, "st", 1);
    strided(g, 0, 0, 0, 0, 1);
    import_ok(g, "s", NULL);
    EXPECT_F32(0, (3), 3, 4, 5);
}
END_TEST

START_TEST(test_ss_step_and_negative_end)
{
    /* x[::2, 1:-1] on [3,4] = 0..11: rows 0,2; columns 1..2 -> [[1,2],[9,10]]. */
    G *g = tb_new();
    KF(g, "x", (3, 4), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    KV(g, "b", 0, 1);
    KV(g, "e", 0, -1);
    KV(g, "st", 2, 1);
    strided(g, 1, 1, 0, 0, 0);
    import_ok(g, "s", NULL);
    EXPECT_F32(0, (2, 2), 1, 2, 9, 10);
}
END_TEST

START_TEST(test_ss_negative_stride_bounds)
{
    /* y[4:1:-2] on y = [0..5]: indices 4, 2 -> [4,2]. */
    G *g = tb_new();
    KF(g, "x", (6), 0, 1, 2, 3, 4, 5);
    KV(g, "b", 4);
    KV(g, "e", 1);
    KV(g, "st", -2);
    strided(g, 0, 0, 0, 0, 0);
    import_ok(g, "s", NULL);
    EXPECT_F32(0, (2), 4, 2);
}
END_TEST

START_TEST(test_ss_clamp)
{
    /* y[-100:100] clamps to the whole vector; y[10:] is empty (shape [0]). */
    G *g = tb_new();
    KF(g, "x", (3), 7, 8, 9);
    KV(g, "b", -100);
    KV(g, "e", 100);
    KV(g, "st", 1);
    strided(g, 0, 0, 0, 0, 0);
    KV(g, "b2", 10);
    KV(g, "e2", 0);
    Tensorflow__NodeDef *n = tb_node(g, "s2", "StridedSlice", "x", "b2", "e2", "st", NULL);
    tb_attr_i(n, "end_mask", 1);
    import_ok(g, "s", "s2", NULL);
    EXPECT_F32(0, (3), 7, 8, 9);
    fetched(1, TCRT_F32, 1, DIMS(0));
}
END_TEST

START_TEST(test_ss_ellipsis_middle)
{
    /* x[0, ..., 1] on [2,2,3] = 0..11 -> shrink dims 0 and 2: x[0,:,1] = [1,4]. */
    G *g = tb_new();
    KF(g, "x", (2, 2, 3), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    KV(g, "b", 0, 0, 1);
    KV(g, "e", 1, 0, 2);
    KV(g, "st", 1, 1, 1);
    strided(g, 0, 0, 2, 0, 5);
    import_ok(g, "s", NULL);
    EXPECT_F32(0, (2), 1, 4);
}
END_TEST

START_TEST(test_ss_out_of_bounds_index)
{
    /* x[5] on [2,3]: shrink index out of bounds. */
    G *g = tb_new();
    x23(g);
    KV(g, "b", 5);
    KV(g, "e", 6);
    KV(g, "st", 1);
    strided(g, 0, 0, 0, 0, 1);
    import_fails(g, "s", "node 's' (StridedSlice): begin index 5 of dim 0 out of bounds");
}
END_TEST

/* ---- Pack / Unpack / Split / Concat ------------------------------------ */

START_TEST(test_pack)
{
    /* stack([1,2],[3,4], axis=1) = [[1,3],[2,4]]; axis=-1 is the same. */
    G *g = tb_new();
    KF(g, "a", (2), 1, 2);
    KF(g, "b", (2), 3, 4);
    tb_attr_i(tb_node(g, "p", "Pack", "a", "b", NULL), "axis", 1);
    tb_attr_i(tb_node(g, "q", "Pack", "a", "b", NULL), "axis", -1);
    tb_node(g, "r", "Pack", "a", "b", NULL); /* axis 0 by default: [[1,2],[3,4]] */
    import_ok(g, "p", "q", "r", NULL);
    EXPECT_F32(0, (2, 2), 1, 3, 2, 4);
    EXPECT_F32(1, (2, 2), 1, 3, 2, 4);
    EXPECT_F32(2, (2, 2), 1, 2, 3, 4);
}
END_TEST

START_TEST(test_unpack)
{
    /* unstack([[1,2,3],[4,5,6]], axis=1) = [1,4], [2,5], [3,6]. */
    G *g = tb_new();
    KF(g, "x", (2, 3), 1, 2, 3, 4, 5, 6);
    Tensorflow__NodeDef *n = tb_node(g, "u", "Unpack", "x", NULL);
    tb_attr_i(n, "num", 3);
    tb_attr_i(n, "axis", 1);
    import_ok(g, "u:0", "u:1", "u:2", NULL);
    EXPECT_F32(0, (2), 1, 4);
    EXPECT_F32(1, (2), 2, 5);
    EXPECT_F32(2, (2), 3, 6);
}
END_TEST

START_TEST(test_split)
{
    /* split([[0..3],[4..7]], 2, axis=1) = [[0,1],[4,5]], [[2,3],[6,7]]. */
    G *g = tb_new();
    KS(g, "d", 1);
    KF(g, "x", (2, 4), 0, 1, 2, 3, 4, 5, 6, 7);
    tb_attr_i(tb_node(g, "s", "Split", "d", "x", NULL), "num_split", 2);
    import_ok(g, "s:0", "s:1", NULL);
    EXPECT_F32(0, (2, 2), 0, 1, 4, 5);
    EXPECT_F32(1, (2, 2), 2, 3, 6, 7);
}
END_TEST

START_TEST(test_split_v)
{
    /* split([0..4], [1,-1,2]) = [0], [1,2], [3,4] (the -1 takes 5-3 = 2). */
    G *g = tb_new();
    KF(g, "x", (5), 0, 1, 2, 3, 4);
    KV(g, "sz", 1, -1, 2);
    KS(g, "d", 0);
    tb_attr_i(tb_node(g, "s", "SplitV", "x", "sz", "d", NULL), "num_split", 3);
    import_ok(g, "s:0", "s:1", "s:2", NULL);
    EXPECT_F32(0, (1), 0);
    EXPECT_F32(1, (2), 1, 2);
    EXPECT_F32(2, (2), 3, 4);
}
END_TEST

START_TEST(test_concat_v2_negative_axis)
{
    /* concat([[1],[2]], [[3,4],[5,6]], axis=-1) = [[1,3,4],[2,5,6]]. */
    G *g = tb_new();
    KF(g, "a", (2, 1), 1, 2);
    KF(g, "b", (2, 2), 3, 4, 5, 6);
    KS(g, "ax", -1);
    tb_attr_i(tb_node(g, "c", "ConcatV2", "a", "b", "ax", NULL), "N", 2);
    /* Concat (v1) takes the axis first: concat(0, [a, a]) = [[1],[2],[1],[2]]. */
    KS(g, "z", 0);
    tb_attr_i(tb_node(g, "c1", "Concat", "z", "a", "a", NULL), "N", 2);
    import_ok(g, "c", "c1", NULL);
    EXPECT_F32(0, (2, 3), 1, 3, 4, 2, 5, 6);
    EXPECT_F32(1, (4, 1), 1, 2, 1, 2);
}
END_TEST

START_TEST(test_concat_axis_error)
{
    G *g = tb_new();
    KF(g, "a", (2, 1), 1, 2);
    KS(g, "ax", 3);
    tb_attr_i(tb_node(g, "s", "ConcatV2", "a", "a", "ax", NULL), "N", 2);
    import_fails(g, "s", "node 's' (ConcatV2): axis 3 out of range for rank 2");
}
END_TEST

/* ---- Gather ------------------------------------------------------------- */

START_TEST(test_gather_batch_dims)
{
    /* params [[10,11,12],[20,21,22]], indices [[2,0],[1,1]], axis 1, batch_dims 1:
     * row b picks params[b][indices[b][j]] -> [[12,10],[21,21]]. */
    G *g = tb_new();
    KF(g, "p", (2, 3), 10, 11, 12, 20, 21, 22);
    KI(g, "i", (2, 2), 2, 0, 1, 1);
    KS(g, "ax", 1);
    tb_attr_i(tb_node(g, "gv", "GatherV2", "p", "i", "ax", NULL), "batch_dims", 1);
    /* plain axis 0 gather: p[[1,0]] = [[20,21,22],[10,11,12]] */
    KV(g, "i0", 1, 0);
    KS(g, "ax0", 0);
    tb_node(g, "g0", "GatherV2", "p", "i0", "ax0", NULL);
    import_ok(g, "gv", "g0", NULL);
    EXPECT_F32(0, (2, 2), 12, 10, 21, 21);
    EXPECT_F32(1, (2, 3), 20, 21, 22, 10, 11, 12);
}
END_TEST

START_TEST(test_gather_nd)
{
    /* params [[1,2],[3,4]], indices [[1,0],[0,1]] -> [p[1][0], p[0][1]] = [3,2];
     * indices [[1]] -> [p[1]] = [[3,4]]. */
    G *g = tb_new();
    KF(g, "p", (2, 2), 1, 2, 3, 4);
    KI(g, "i", (2, 2), 1, 0, 0, 1);
    KI(g, "j", (1, 1), 1);
    tb_node(g, "n", "GatherNd", "p", "i", NULL);
    tb_node(g, "m", "GatherNd", "p", "j", NULL);
    import_ok(g, "n", "m", NULL);
    EXPECT_F32(0, (2), 3, 2);
    EXPECT_F32(1, (1, 2), 3, 4);
}
END_TEST

/* ---- reductions --------------------------------------------------------- */

START_TEST(test_mean_two_axes_keepdims)
{
    /* x [2,2,2] = 1..8, mean over axes [0,2] keepdims -> [1,2,1]:
     * j=0: x[0,0,:]=1,2 and x[1,0,:]=5,6 -> 14/4 = 3.5;
     * j=1: 3,4,7,8 -> 22/4 = 5.5. */
    G *g = tb_new();
    KF(g, "x", (2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
    KV(g, "ax", 0, -1);
    tb_attr_b(tb_node(g, "m", "Mean", "x", "ax", NULL), "keep_dims", true);
    tb_node(g, "s", "Sum", "x", "ax", NULL); /* no keepdims: [14, 22] */
    import_ok(g, "m", "s", NULL);
    EXPECT_F32(0, (1, 2, 1), 3.5f, 5.5f);
    EXPECT_F32(1, (2), 14, 22);
}
END_TEST

START_TEST(test_mean_int_max_min_prod)
{
    /* int32 [1,2,4]: mean = 7/3 -> 2 (integer division); max 4; min 1; prod 8. */
    G *g = tb_new();
    KV(g, "x", 1, 2, 4);
    KS(g, "ax", 0);
    tb_node(g, "mean", "Mean", "x", "ax", NULL);
    tb_node(g, "max", "Max", "x", "ax", NULL);
    tb_node(g, "min", "Min", "x", "ax", NULL);
    tb_node(g, "prod", "Prod", "x", "ax", NULL);
    import_ok(g, "mean", "max", "min", "prod", NULL);
    EXPECT_INT0(0, TCRT_I32, 2);
    EXPECT_INT0(1, TCRT_I32, 4);
    EXPECT_INT0(2, TCRT_I32, 1);
    EXPECT_INT0(3, TCRT_I32, 8);
}
END_TEST

START_TEST(test_all_any)
{
    /* [[T,F],[T,T]]: All axis 1 = [F,T]; Any axis 0 = [T,T]; All axis 0 = [T,F]. */
    G *g = tb_new();
    konst(g, "x", TCRT_BOOL, 2, DIMS(2, 2), NULL, NULL, (const bool[]){true, false, true, true});
    KS(g, "a1", 1);
    KS(g, "a0", 0);
    tb_node(g, "all1", "All", "x", "a1", NULL);
    tb_node(g, "any0", "Any", "x", "a0", NULL);
    tb_node(g, "all0", "All", "x", "a0", NULL);
    import_ok(g, "all1", "any0", "all0", NULL);
    EXPECT_INT(0, TCRT_BOOL, (2), 0, 1);
    EXPECT_INT(1, TCRT_BOOL, (2), 1, 1);
    EXPECT_INT(2, TCRT_BOOL, (2), 1, 0);
}
END_TEST

START_TEST(test_argmax_argmin)
{
    /* [[1,9,3],[7,2,8]]: argmax dim 1 = [1,2] (int64 default);
     * argmax dim 0 (int32) = [1,0,1]; argmin dim 1 = [0,1]. */
    G *g = tb_new();
    KF(g, "x", (2, 3), 1, 9, 3, 7, 2, 8);
    KS(g, "d1", 1);
    KS(g, "d0", 0);
    tb_node(g, "am", "ArgMax", "x", "d1", NULL);
    tb_attr_type(tb_node(g, "am0", "ArgMax", "x", "d0", NULL), "output_type", TCRT_I32);
    tb_node(g, "an", "ArgMin", "x", "d1", NULL);
    import_ok(g, "am", "am0", "an", NULL);
    EXPECT_INT(0, TCRT_I64, (2), 1, 2);
    EXPECT_INT(1, TCRT_I32, (3), 1, 0, 1);
    EXPECT_INT(2, TCRT_I64, (2), 0, 1);
}
END_TEST

/* ---- movement ----------------------------------------------------------- */

START_TEST(test_tile)
{
    /* tile([[1,2]], [2,2]) = [[1,2,1,2],[1,2,1,2]]. */
    G *g = tb_new();
    KF(g, "x", (1, 2), 1, 2);
    KV(g, "m", 2, 2);
    tb_node(g, "t", "Tile", "x", "m", NULL);
    import_ok(g, "t", NULL);
    EXPECT_F32(0, (2, 4), 1, 2, 1, 2, 1, 2, 1, 2);
}
END_TEST

START_TEST(test_pad_mirror_pad)
{
    /* pad([[1,2],[3,4]], [[1,0],[0,1]]) = [[0,0,0],[1,2,0],[3,4,0]];
     * PadV2 with 9: [[9,9,9],[1,2,9],[3,4,9]];
     * mirror_pad([1,2,3], [[2,1]]): REFLECT (edge not repeated) = [3,2,1,2,3,2],
     * SYMMETRIC (edge repeated) = [2,1,1,2,3,3]. */
    G *g = tb_new();
    KF(g, "x", (2, 2), 1, 2, 3, 4);
    KI(g, "p", (2, 2), 1, 0, 0, 1);
    tb_node(g, "pad", "Pad", "x", "p", NULL);
    konst(g, "nine", TCRT_F32, 0, NULL, F32S(9), NULL, NULL);
    tb_node(g, "pad2", "PadV2", "x", "p", "nine", NULL);
    KF(g, "v", (3), 1, 2, 3);
    KI(g, "q", (1, 2), 2, 1);
    tb_attr_s(tb_node(g, "refl", "MirrorPad", "v", "q", NULL), "mode", "REFLECT");
    tb_attr_s(tb_node(g, "sym", "MirrorPad", "v", "q", NULL), "mode", "SYMMETRIC");
    import_ok(g, "pad", "pad2", "refl", "sym", NULL);
    EXPECT_F32(0, (3, 3), 0, 0, 0, 1, 2, 0, 3, 4, 0);
    EXPECT_F32(1, (3, 3), 9, 9, 9, 1, 2, 9, 3, 4, 9);
    EXPECT_F32(2, (6), 3, 2, 1, 2, 3, 2);
    EXPECT_F32(3, (6), 2, 1, 1, 2, 3, 3);
}
END_TEST

START_TEST(test_mirror_pad_error)
{
    /* REFLECT needs padding < dim: 3 on a dim of 3 is invalid. */
    G *g = tb_new();
    KF(g, "v", (3), 1, 2, 3);
    KI(g, "q", (1, 2), 3, 0);
    tb_attr_s(tb_node(g, "refl", "MirrorPad", "v", "q", NULL), "mode", "REFLECT");
    import_fails(g, "refl", "node 'refl' (MirrorPad): paddings [3,0] invalid for dim 0 of shape [3]");
}
END_TEST

START_TEST(test_transpose_slice)
{
    /* transpose([[1,2,3],[4,5,6]], [1,0]) = [[1,4],[2,5],[3,6]];
     * slice(x33, begin [1,0], size [-1,2]) = [[3,4],[6,7]]. */
    G *g = tb_new();
    KF(g, "a", (2, 3), 1, 2, 3, 4, 5, 6);
    KV(g, "perm", 1, 0);
    tb_node(g, "t", "Transpose", "a", "perm", NULL);
    x33(g);
    KV(g, "b", 1, 0);
    KV(g, "sz", -1, 2);
    tb_node(g, "s", "Slice", "x", "b", "sz", NULL);
    import_ok(g, "t", "s", NULL);
    EXPECT_F32(0, (3, 2), 1, 4, 2, 5, 3, 6);
    EXPECT_F32(1, (2, 2), 3, 4, 6, 7);
}
END_TEST

START_TEST(test_depth_space)
{
    /* x [1,1,2,4]: pixel (0,0) = [1,2,3,4], (0,1) = [5,6,7,8]; block 2.
     * DepthToSpace: out[h*2+i][w*2+j] = x[h][w][i*2+j]:
     *   row 0 (i=0): w=0 -> 1,2; w=1 -> 5,6;  row 1 (i=1): 3,4,7,8.
     * SpaceToDepth of that gives x back. */
    G *g = tb_new();
    KF(g, "x", (1, 1, 2, 4), 1, 2, 3, 4, 5, 6, 7, 8);
    tb_attr_i(tb_node(g, "d2s", "DepthToSpace", "x", NULL), "block_size", 2);
    tb_attr_i(tb_node(g, "s2d", "SpaceToDepth", "d2s", NULL), "block_size", 2);
    import_ok(g, "d2s", "s2d", NULL);
    EXPECT_F32(0, (1, 2, 4, 1), 1, 2, 5, 6, 3, 4, 7, 8);
    EXPECT_F32(1, (1, 1, 2, 4), 1, 2, 3, 4, 5, 6, 7, 8);
}
END_TEST

START_TEST(test_topk)
{
    /* top_k([1,3,2,5], 2) = values [5,3], indices [3,1] (int32). */
    G *g = tb_new();
    KF(g, "x", (4), 1, 3, 2, 5);
    KS(g, "k", 2);
    tb_node(g, "t", "TopKV2", "x", "k", NULL);
    import_ok(g, "t:0", "t:1", NULL);
    EXPECT_F32(0, (2), 5, 3);
    EXPECT_INT(1, TCRT_I32, (2), 3, 1);
}
END_TEST

START_TEST(test_resize)
{
    /* [1,2,2,1] image [[1,2],[3,4]] to 4x4 (align_corners/half_pixel false):
     * nearest: src = floor(dst * 2/4) -> rows/cols 0,0,1,1.
     * bilinear: src = dst * 0.5 = 0, .5, 1, 1.5 (upper neighbour clamped), so
     * a 1-D [a,b] becomes [a, (a+b)/2, b, b]; rows likewise. */
    G *g = tb_new();
    KF(g, "x", (1, 2, 2, 1), 1, 2, 3, 4);
    KV(g, "sz", 4, 4);
    tb_node(g, "nn", "ResizeNearestNeighbor", "x", "sz", NULL);
    tb_node(g, "bl", "ResizeBilinear", "x", "sz", NULL);
    import_ok(g, "nn", "bl", NULL);
    EXPECT_F32(0, (1, 4, 4, 1), 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4);
    EXPECT_F32(1, (1, 4, 4, 1), 1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 3, 3.5f, 4, 4, 3, 3.5f, 4, 4);
}
END_TEST

/* ---- reshape family ----------------------------------------------------- */

START_TEST(test_reshape_infer)
{
    /* [2,3] reshaped to [3,-1] -> [3,2], same data order. */
    G *g = tb_new();
    x23(g);
    KV(g, "sh", 3, -1);
    tb_node(g, "r", "Reshape", "x", "sh", NULL);
    import_ok(g, "r", NULL);
    EXPECT_F32(0, (3, 2), 0, 1, 2, 3, 4, 5);
}
END_TEST

START_TEST(test_reshape_error)
{
    G *g = tb_new();
    x23(g);
    KV(g, "sh", 4, -1);
    tb_node(g, "r", "Reshape", "x", "sh", NULL);
    import_fails(g, "r", "node 'r' (Reshape): cannot reshape [2,3] to [4,-1]");
}
END_TEST

START_TEST(test_squeeze_expand)
{
    /* squeeze([1,2,1] shaped) with dims [] -> [2]; with [-1] -> [1,2];
     * expand_dims([2], -1) -> [2,1]. */
    G *g = tb_new();
    KF(g, "x", (1, 2, 1), 5, 6);
    tb_node(g, "s", "Squeeze", "x", NULL);
    tb_attr_ints(tb_node(g, "s1", "Squeeze", "x", NULL), "squeeze_dims", 1, DIMS(-1));
    KF(g, "v", (2), 5, 6);
    KS(g, "d", -1);
    tb_node(g, "e", "ExpandDims", "v", "d", NULL);
    import_ok(g, "s", "s1", "e", NULL);
    EXPECT_F32(0, (2), 5, 6);
    EXPECT_F32(1, (1, 2), 5, 6);
    EXPECT_F32(2, (2, 1), 5, 6);
}
END_TEST

START_TEST(test_squeeze_error)
{
    G *g = tb_new();
    x23(g);
    tb_attr_ints(tb_node(g, "s", "Squeeze", "x", NULL), "squeeze_dims", 1, DIMS(1));
    import_fails(g, "s", "node 's' (Squeeze): cannot squeeze dim 1 of shape [2,3]: size is 3, not 1");
}
END_TEST

START_TEST(test_shape_size_rank)
{
    /* x [2,3]: Shape = [2,3] (int32; int64 with out_type), Size = 6, Rank = 2;
     * ShapeN(x, v[2]) = [2,3], [2]. */
    G *g = tb_new();
    x23(g);
    KF(g, "v", (2), 1, 2);
    tb_node(g, "sh", "Shape", "x", NULL);
    tb_attr_type(tb_node(g, "sh64", "Shape", "x", NULL), "out_type", TCRT_I64);
    tb_node(g, "sz", "Size", "x", NULL);
    tb_node(g, "rk", "Rank", "x", NULL);
    tb_attr_i(tb_node(g, "shn", "ShapeN", "x", "v", NULL), "N", 2);
    import_ok(g, "sh", "sh64", "sz", "rk", "shn:0", "shn:1", NULL);
    EXPECT_INT(0, TCRT_I32, (2), 2, 3);
    EXPECT_INT(1, TCRT_I64, (2), 2, 3);
    EXPECT_INT0(2, TCRT_I32, 6);
    EXPECT_INT0(3, TCRT_I32, 2);
    EXPECT_INT(4, TCRT_I32, (2), 2, 3);
    EXPECT_INT(5, TCRT_I32, (1), 2);
}
END_TEST

START_TEST(test_fill_like_range_broadcast)
{
    /* Fill([2,2], 7) = 7s; ZerosLike/OnesLike of [2] f32; Range(1,10,3) = [1,4,7];
     * float Range(0,1,0.25) = [0,.25,.5,.75]; BroadcastTo([1,2,3], [2,3]) repeats the row;
     * Identity passes through. */
    G *g = tb_new();
    KV(g, "dims", 2, 2);
    konst(g, "seven", TCRT_F32, 0, NULL, F32S(7), NULL, NULL);
    tb_node(g, "fill", "Fill", "dims", "seven", NULL);
    KF(g, "v", (2), 3, 4);
    tb_node(g, "z", "ZerosLike", "v", NULL);
    tb_node(g, "o", "OnesLike", "v", NULL);
    KS(g, "r0", 1);
    KS(g, "r1", 10);
    KS(g, "r2", 3);
    tb_node(g, "range", "Range", "r0", "r1", "r2", NULL);
    konst(g, "f0", TCRT_F32, 0, NULL, F32S(0), NULL, NULL);
    konst(g, "f1", TCRT_F32, 0, NULL, F32S(1), NULL, NULL);
    konst(g, "f2", TCRT_F32, 0, NULL, F32S(0.25f), NULL, NULL);
    tb_attr_type(tb_node(g, "frange", "Range", "f0", "f1", "f2", NULL), "Tidx", TCRT_F32);
    KF(g, "row", (3), 1, 2, 3);
    KV(g, "bs", 2, 3);
    tb_node(g, "bc", "BroadcastTo", "row", "bs", NULL);
    tb_node(g, "id", "Identity", "v", NULL);
    import_ok(g, "fill", "z", "o", "range", "frange", "bc", "id", NULL);
    EXPECT_F32(0, (2, 2), 7, 7, 7, 7);
    EXPECT_F32(1, (2), 0, 0);
    EXPECT_F32(2, (2), 1, 1);
    EXPECT_INT(3, TCRT_I32, (3), 1, 4, 7);
    EXPECT_F32(4, (4), 0, 0.25f, 0.5f, 0.75f);
    EXPECT_F32(5, (2, 3), 1, 2, 3, 1, 2, 3);
    EXPECT_F32(6, (2), 3, 4);
}
END_TEST

START_TEST(test_transpose_perm_error)
{
    G *g = tb_new();
    x23(g);
    KV(g, "perm", 0, 0);
    tb_node(g, "t", "Transpose", "x", "perm", NULL);
    import_fails(g, "t", "node 't' (Transpose): perm [0,0] is not a permutation of the dims of shape [2,3]");
}
END_TEST

START_TEST(test_non_const_axis)
{
    /* the axis of ConcatV2 comes from a Placeholder: not a compile-time constant */
    G *g = tb_new();
    KF(g, "a", (2, 1), 1, 2);
    placeholder(g, "p", TCRT_I32, 0, NULL);
    tb_attr_i(tb_node(g, "c", "ConcatV2", "a", "a", "p", NULL), "N", 2);
    import_fails(g, "c", "node 'c' (ConcatV2): axis must be a constant");
}
END_TEST

/* Runtime (non-constant) inputs: the lowerings emit nodes the shape rules and
 * the verifier accept, with the shapes TF gives. */
START_TEST(test_unfolded_shapes)
{
    G *g = tb_new();
    placeholder(g, "x", TCRT_F32, 3, DIMS(2, 3, 4));
    KV(g, "b", 0, 0, 1);
    KV(g, "e", 0, 0, 0);
    KV(g, "st", 1, -1, 2);
    /* x[:, ::-1, 1::2] -> [2,3,2] */
    strided(g, 3, 7, 0, 0, 0);
    KV(g, "ax", 1, 2);
    tb_attr_b(tb_node(g, "m", "Mean", "s", "ax", NULL), "keep_dims", true); /* [2,1,1] */
    KS(g, "k", 2);
    tb_node(g, "t", "TopKV2", "x", "k", NULL);                       /* [2,3,2] twice */
    tb_attr_i(tb_node(g, "pk", "Pack", "x", "x", NULL), "axis", -1);   /* [2,3,4,2] */
    tb_node(g, "z", "ZerosLike", "x", NULL);
    KS(g, "a0", 0);
    tb_node(g, "am", "ArgMax", "x", "a0", NULL);                    /* [3,4] int64 */
    placeholder(g, "pb", TCRT_BOOL, 2, DIMS(2, 2));
    tb_node(g, "any", "Any", "pb", "a0", NULL);                     /* [2] bool */
    import_ok(g, "s", "m", "t:0", "t:1", "pk", "z", "am", "any", NULL);
    Status vs = ST_INIT;
    ck_assert_msg(ir_verify(gr, &vs), "verify: %s", vs.msg);
    static const struct { tcrt_dtype dt; int rank; int64_t dims[4]; } want[] = {
        {TCRT_F32, 3, {2, 3, 2}}, {TCRT_F32, 3, {2, 1, 1}}, {TCRT_F32, 3, {2, 3, 2}},
        {TCRT_I32, 3, {2, 3, 2}}, {TCRT_F32, 4, {2, 3, 4, 2}}, {TCRT_F32, 3, {2, 3, 4}},
        {TCRT_I64, 2, {3, 4}},    {TCRT_BOOL, 1, {2}},
    };
    for (int i = 0; i < 8; i++) {
        const IrType *t = ir_value_type(gr->fetches[i].value);
        char a[64];
        ck_assert_msg(t->dtype == want[i].dt, "fetch %d dtype %s", i, tcrt_dtype_name(t->dtype));
        ck_assert_msg(t->shape.rank == want[i].rank, "fetch %d shape %s", i, ir_shape_str(&t->shape, a, sizeof a));
        for (int d = 0; d < want[i].rank; d++)
            ck_assert_msg(t->shape.dims[d] == want[i].dims[d], "fetch %d shape %s", i,
                          ir_shape_str(&t->shape, a, sizeof a));
    }
}
END_TEST

START_TEST(test_space_batch_nd)
{
    /* TF's SpaceToBatchND example 4: x [2,2,4,1] = 1..16, block [2,2],
     * paddings [[0,0],[2,0]]: padded rows per batch b are [0,0,1,2,3,4] and
     * [0,0,5,6,7,8] (+8 for b=1); output batch (i*2+j)*2+b holds rows h with
     * h%2=i, columns w with w%2=j:
     *   [0,1,3] [0,9,11] [0,2,4] [0,10,12] [0,5,7] [0,13,15] [0,6,8] [0,14,16].
     * BatchToSpaceND with crops [[0,0],[2,0]] gives x back. */
    G *g = tb_new();
    KF(g, "x", (2, 2, 4, 1), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
    KV(g, "bs", 2, 2);
    KI(g, "p", (2, 2), 0, 0, 2, 0);
    tb_node(g, "s2b", "SpaceToBatchND", "x", "bs", "p", NULL);
    tb_node(g, "b2s", "BatchToSpaceND", "s2b", "bs", "p", NULL);
    import_ok(g, "s2b", "b2s", NULL);
    EXPECT_F32(0, (8, 1, 3, 1), 0, 1, 3, 0, 9, 11, 0, 2, 4, 0, 10, 12, 0, 5, 7, 0, 13, 15, 0, 6, 8, 0, 14, 16);
    EXPECT_F32(1, (2, 2, 4, 1), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
}
END_TEST

START_TEST(test_one_hot_reverse_invert)
{
    /* one_hot([0,2,-1,1], 3, on=5, off=0): axis -1 -> [[5,0,0],[0,0,5],[0,0,0],[0,5,0]];
     * axis 0 -> its transpose [[5,0,0,0],[0,0,0,5],[0,5,0,0]].
     * reverse(x23, [1]) = [[2,1,0],[5,4,3]]; reverse(x23, [0,-1]) = [[5,4,3],[2,1,0]].
     * invert_permutation([3,4,0,2,1]) = [2,4,3,0,1] (TF's doc example). */
    G *g = tb_new();
    KV(g, "i", 0, 2, -1, 1);
    KS(g, "d", 3);
    konst(g, "on", TCRT_F32, 0, NULL, F32S(5), NULL, NULL);
    konst(g, "off", TCRT_F32, 0, NULL, F32S(0), NULL, NULL);
    tb_node(g, "oh", "OneHot", "i", "d", "on", "off", NULL);
    tb_attr_i(tb_node(g, "oh0", "OneHot", "i", "d", "on", "off", NULL), "axis", 0);
    x23(g);
    KV(g, "a1", 1);
    KV(g, "a2", 0, -1);
    tb_node(g, "r1", "ReverseV2", "x", "a1", NULL);
    tb_node(g, "r2", "ReverseV2", "x", "a2", NULL);
    KV(g, "perm", 3, 4, 0, 2, 1);
    tb_node(g, "inv", "InvertPermutation", "perm", NULL);
    import_ok(g, "oh", "oh0", "r1", "r2", "inv", NULL);
    EXPECT_F32(0, (4, 3), 5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 5, 0);
    EXPECT_F32(1, (3, 4), 5, 0, 0, 0, 0, 0, 0, 5, 0, 5, 0, 0);
    EXPECT_F32(2, (2, 3), 2, 1, 0, 5, 4, 3);
    EXPECT_F32(3, (2, 3), 5, 4, 3, 2, 1, 0);
    EXPECT_INT(4, TCRT_I32, (5), 2, 4, 3, 0, 1);
}
END_TEST

START_TEST(test_reverse_sequence)
{
    /* ReverseSequence, values by hand:
     * x = [[1,2,3,4],[5,6,7,8]], seq_dim 1, batch_dim 0, lengths [3,1]:
     *   row 0 reverses its first 3 -> [3,2,1,4]; row 1 its first 1 -> unchanged.
     * y = [[1,2],[3,4],[5,6]], seq_dim 0, batch_dim 1, lengths [2,3]:
     *   column 0 (1,3,5) -> (3,1,5); column 1 (2,4,6) -> (6,4,2). */
    G *g = tb_new();
    KF(g, "x", (2, 4), 1, 2, 3, 4, 5, 6, 7, 8);
    KF(g, "y", (3, 2), 1, 2, 3, 4, 5, 6);
    KV(g, "l1", 3, 1);
    KV(g, "l2", 2, 3);
    tb_attr_i(tb_node(g, "r1", "ReverseSequence", "x", "l1", NULL), "seq_dim", 1);
    Tensorflow__NodeDef *r2 = tb_node(g, "r2", "ReverseSequence", "y", "l2", NULL);
    tb_attr_i(r2, "seq_dim", 0);
    tb_attr_i(r2, "batch_dim", 1);
    import_ok(g, "r1", "r2", NULL);
    EXPECT_F32(0, (2, 4), 3, 2, 1, 4, 5, 6, 7, 8);
    EXPECT_F32(1, (3, 2), 3, 6, 1, 4, 5, 2);
    teardown();

    /* errors: seq_dim == batch_dim; lengths not one per batch entry */
    g = tb_new();
    KF(g, "x", (2, 4), 1, 2, 3, 4, 5, 6, 7, 8);
    KV(g, "l1", 3, 1);
    KV(g, "l3", 1, 1, 1);
    tb_attr_i(tb_node(g, "r", "ReverseSequence", "x", "l1", NULL), "seq_dim", 0);
    import_fails(g, "r", "node 'r' (ReverseSequence): seq_dim 0 and batch_dim 0 must be distinct dims");
    teardown();
    g = tb_new();
    KF(g, "x", (2, 4), 1, 2, 3, 4, 5, 6, 7, 8);
    KV(g, "l3", 1, 1, 1);
    tb_attr_i(tb_node(g, "r", "ReverseSequence", "x", "l3", NULL), "seq_dim", 1);
    import_fails(g, "r", "seq_lengths must be [2] (one per batch_dim entry), got [3]");
}
END_TEST

static Suite *array_suite(void)
{
    Suite *s = suite_create("tf_array");
    TCase *tc = tcase_create("lower");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_ss_reverse_cols);
    tcase_add_test(tc, test_ss_ellipsis_shrink);
    tcase_add_test(tc, test_ss_newaxis);
    tcase_add_test(tc, test_ss_newaxis_variants);
    tcase_add_test(tc, test_ss_negative_index_shrink);
    tcase_add_test(tc, test_ss_step_and_negative_end);
    tcase_add_test(tc, test_ss_negative_stride_bounds);
    tcase_add_test(tc, test_ss_clamp);
    tcase_add_test(tc, test_ss_ellipsis_middle);
    tcase_add_test(tc, test_ss_out_of_bounds_index);
    tcase_add_test(tc, test_pack);
    tcase_add_test(tc, test_unpack);
    tcase_add_test(tc, test_split);
    tcase_add_test(tc, test_split_v);
    tcase_add_test(tc, test_concat_v2_negative_axis);
    tcase_add_test(tc, test_concat_axis_error);
    tcase_add_test(tc, test_gather_batch_dims);
    tcase_add_test(tc, test_gather_nd);
    tcase_add_test(tc, test_mean_two_axes_keepdims);
    tcase_add_test(tc, test_mean_int_max_min_prod);
    tcase_add_test(tc, test_all_any);
    tcase_add_test(tc, test_argmax_argmin);
    tcase_add_test(tc, test_tile);
    tcase_add_test(tc, test_pad_mirror_pad);
    tcase_add_test(tc, test_mirror_pad_error);
    tcase_add_test(tc, test_transpose_slice);
    tcase_add_test(tc, test_depth_space);
    tcase_add_test(tc, test_topk);
    tcase_add_test(tc, test_resize);
    tcase_add_test(tc, test_reshape_infer);
    tcase_add_test(tc, test_reshape_error);
    tcase_add_test(tc, test_squeeze_expand);
    tcase_add_test(tc, test_squeeze_error);
    tcase_add_test(tc, test_shape_size_rank);
    tcase_add_test(tc, test_fill_like_range_broadcast);
    tcase_add_test(tc, test_transpose_perm_error);
    tcase_add_test(tc, test_non_const_axis);
    tcase_add_test(tc, test_space_batch_nd);
    tcase_add_test(tc, test_one_hot_reverse_invert);
    tcase_add_test(tc, test_reverse_sequence);
    tcase_add_test(tc, test_unfolded_shapes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(array_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
