/* ref_nms.c - reference non-maximum suppression (TensorFlow's
 * NonMaxSuppressionV3/V4/V5 with hard suppression, soft_nms_sigma = 0).
 *
 * in:  boxes f32 [N,4] (y1,x1,y2,x2: any two diagonal corners), scores f32 [N]
 * out: selected box indices int32 [M] (padded with 0), their scores f32
 *      [M] (padded with 0), the number selected int32 [], and the candidate
 *      order int32 [N] (see below); M = p->i[TCRT_NMS_MAX_OUT].
 * Algorithm (TensorFlow's DoNonMaxSuppressionOp, hard NMS):
 *   1. candidates: the boxes whose score is > score_threshold (a strict
 *      comparison: a box scoring exactly the threshold is dropped; NaN
 *      scores never qualify), written to order[0..K) and heap-sorted in
 *      place: higher score first, the lower box index first on ties (a
 *      total order, so the unstable heap sort is deterministic).  order[K..N)
 *      is -1.  order is an output so that the kernel needs no allocation.
 *   2. greedy: walk the candidates in that order; a candidate is selected
 *      unless its IoU with an already selected box is > iou_threshold (an
 *      IoU equal to the threshold does not suppress); stop after M.
 * IoU as TensorFlow computes it, in float: each box is normalized with
 *   min/max of its two y and two x coordinates (flipped corners are fine);
 *   a box of zero area (a point or a line) overlaps nothing (IoU 0), so it
 *   is never suppressed and suppresses nothing.
 *   The products are kept out of fused multiply-adds so that the result is
 *   the correctly rounded float TensorFlow's CPU kernel gets.
 * Known difference: a NaN IoU (NaN coordinates) does not suppress here;
 * TensorFlow instead re-queues that candidate with score 0.
 * Cost: O(N log N) for the sort plus O(K * M) IoUs; no allocation.
 */
#include "kern_int.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#define NO_CONTRACT
#elif defined(__GNUC__)
#define NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define NO_CONTRACT
#endif

typedef struct NmsBox {
    float ymin, xmin, ymax, xmax, area;
} NmsBox;

static NO_CONTRACT NmsBox nms_box(const float *b)
{
    NmsBox r;
    r.ymin = b[0] < b[2] ? b[0] : b[2];
    r.ymax = b[0] < b[2] ? b[2] : b[0];
    r.xmin = b[1] < b[3] ? b[1] : b[3];
    r.xmax = b[1] < b[3] ? b[3] : b[1];
    float dy = r.ymax - r.ymin;
    float dx = r.xmax - r.xmin;
    r.area = dy * dx;
    return r;
}

/* Intersection over union of boxes i and j of the [N,4] array b. */
static NO_CONTRACT float nms_iou(const float *b, int64_t i, int64_t j)
{
    NmsBox p = nms_box(b + 4 * i), q = nms_box(b + 4 * j);
    if (p.area <= 0 || q.area <= 0)
        return 0.0f;
    float iy0 = p.ymin > q.ymin ? p.ymin : q.ymin;
    float ix0 = p.xmin > q.xmin ? p.xmin : q.xmin;
    float iy1 = p.ymax < q.ymax ? p.ymax : q.ymax;
    float ix1 = p.xmax < q.xmax ? p.xmax : q.xmax;
    float h = iy1 - iy0;
    float w = ix1 - ix0;
    h = h > 0.0f ? h : 0.0f;
    w = w > 0.0f ? w : 0.0f;
    float inter = h * w;
    float sum = p.area + q.area;
    float uni = sum - inter;
    return inter / uni;
}

/* Does candidate a rank after candidate b?  (lower score, or equal score
 * and higher index) */
static bool ranks_after(const float *s, int32_t a, int32_t b)
{
    return s[a] < s[b] || (s[a] == s[b] && a > b);
}

static void sift_down(int32_t *h, int64_t root, int64_t n, const float *s)
{
    for (;;) {
        int64_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && ranks_after(s, h[c + 1], h[c]))
            c++;
        if (!ranks_after(s, h[c], h[root]))
            return;
        int32_t t = h[root];
        h[root] = h[c];
        h[c] = t;
        root = c;
    }
}

/* Sorts h[0..n) best first: a heap whose root ranks last, popped to the end. */
static void sort_candidates(int32_t *h, int64_t n, const float *s)
{
    for (int64_t i = n / 2; i-- > 0;)
        sift_down(h, i, n, s);
    for (int64_t end = n - 1; end > 0; end--) {
        int32_t t = h[0];
        h[0] = h[end];
        h[end] = t;
        sift_down(h, 0, end, s);
    }
}

tcrt_status tcrt_ref_nms(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    KCHECK(in && out && p && n_in == 2 && n_out == 4);
    const tcrt_tensor *boxes = &in[0], *scores = &in[1];
    tcrt_tensor *sel = &out[0], *sel_scores = &out[1], *count = &out[2], *order = &out[3];
    KCHECK(k_valid(boxes) && k_valid(scores) && k_valid(sel) && k_valid(sel_scores) && k_valid(count) &&
           k_valid(order));
    KCHECK(boxes->dtype == TCRT_F32 && scores->dtype == TCRT_F32 && sel_scores->dtype == TCRT_F32);
    KCHECK(sel->dtype == TCRT_I32 && count->dtype == TCRT_I32 && order->dtype == TCRT_I32);
    KCHECK(boxes->rank == 2 && boxes->dims[1] == 4 && scores->rank == 1);
    int64_t n = boxes->dims[0], m = p->i[TCRT_NMS_MAX_OUT];
    KCHECK(scores->dims[0] == n && n <= INT32_MAX);
    KCHECK(m >= 0 && sel->rank == 1 && sel->dims[0] == m && sel_scores->rank == 1 &&
           sel_scores->dims[0] == m);
    KCHECK(k_count(count) == 1 && order->rank == 1 && order->dims[0] == n);
    double iou_thr = p->f[TCRT_NMS_IOU];
    KCHECK(iou_thr >= 0 && iou_thr <= 1);
    const float iou_t = (float)iou_thr, score_t = (float)p->f[TCRT_NMS_SCORE];
    const float *b = (const float *)boxes->data, *s = (const float *)scores->data;
    int32_t *idx = (int32_t *)sel->data, *ord = (int32_t *)order->data;
    float *osc = (float *)sel_scores->data;

    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (s[i] > score_t)
            ord[k++] = (int32_t)i;
    for (int64_t i = k; i < n; i++)
        ord[i] = -1;
    sort_candidates(ord, k, s);

    int64_t n_sel = 0;
    for (int64_t c = 0; c < k && n_sel < m; c++) {
        int32_t cand = ord[c];
        bool suppressed = false;
        /* latest selections first: overlapping boxes have close scores */
        for (int64_t j = n_sel - 1; j >= 0 && !suppressed; j--)
            suppressed = nms_iou(b, cand, idx[j]) > iou_t;
        if (suppressed)
            continue;
        idx[n_sel] = cand;
        osc[n_sel] = s[cand];
        n_sel++;
    }
    for (int64_t i = n_sel; i < m; i++) {
        idx[i] = 0;
        osc[i] = 0.0f;
    }
    *(int32_t *)count->data = (int32_t)n_sel;
    return TCRT_OK;
}

/* where: x (rank >= 1, any numeric or bool dtype) -> coordinates of its
 * nonzero elements in row-major order, int64 [N, rank] (N = count(x); the
 * rows past the count are -1), and the count, int64 [].  A NaN is nonzero,
 * as in TensorFlow. */
static bool nonzero_at(const tcrt_tensor *x, int64_t i)
{
    switch (x->dtype) {
    case TCRT_F32: return ((const float *)x->data)[i] != 0;
    case TCRT_F64: return ((const double *)x->data)[i] != 0;
    case TCRT_I8: return ((const int8_t *)x->data)[i] != 0;
    case TCRT_U8:
    case TCRT_BOOL: return ((const uint8_t *)x->data)[i] != 0;
    case TCRT_I16: return ((const int16_t *)x->data)[i] != 0;
    case TCRT_U16: return ((const uint16_t *)x->data)[i] != 0;
    case TCRT_I32: return ((const int32_t *)x->data)[i] != 0;
    case TCRT_U32: return ((const uint32_t *)x->data)[i] != 0;
    case TCRT_I64: return ((const int64_t *)x->data)[i] != 0;
    case TCRT_U64: return ((const uint64_t *)x->data)[i] != 0;
    default: return false;
    }
}

tcrt_status tcrt_ref_where(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    (void)p;
    KCHECK(in && out && n_in == 1 && n_out == 2);
    const tcrt_tensor *x = &in[0];
    tcrt_tensor *co = &out[0], *cnt = &out[1];
    KCHECK(k_valid(x) && k_valid(co) && k_valid(cnt) && x->rank >= 1);
    KCHECK(co->dtype == TCRT_I64 && cnt->dtype == TCRT_I64 && co->rank == 2 && co->dims[1] == x->rank);
    KCHECK(x->dtype != TCRT_F16 && x->dtype != TCRT_STRING);
    int64_t n = k_count(x);
    KCHECK(co->dims[0] >= n);
    int64_t *c = co->data, idx[TCRT_MAX_RANK] = {0}, k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (nonzero_at(x, i)) {
            for (int d = 0; d < x->rank; d++)
                c[k * x->rank + d] = idx[d];
            k++;
        }
        for (int d = x->rank - 1; d >= 0; d--) {
            if (++idx[d] < x->dims[d])
                break;
            idx[d] = 0;
        }
    }
    for (int64_t r = k; r < co->dims[0]; r++)
        for (int d = 0; d < x->rank; d++)
            c[r * x->rank + d] = -1;
    *(int64_t *)cnt->data = k;
    return TCRT_OK;
}
