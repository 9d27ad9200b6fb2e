/* passes/replicate.c - in-graph replication for parameter-server training
 * (--replicas JOB with --cluster, docs/distributed.md "Parameter-server
 * training").  Not a pipeline pass: the driver calls pass_replicate after
 * import (and --trainable), before the gradients are built.
 *
 * The model's step is copied once per task of JOB, each copy working on its
 * share of the batch; the variables stay single and go to the parameter
 * server tasks.  Algorithm:
 *   0. The driver imports the model with every fed tensor of rank >= 1
 *      given 1/N of its rows (N = tasks of JOB; a batch not divisible by N
 *      is its error naming the feed), so g is ONE replica's step, with the
 *      frontend's shape-derived constants (a Mean's divisor, a Reshape's
 *      target) right for the replica's batch.
 *   1. Batch: each such feed gets a new ARG with N times the rows (the
 *      signature keeps the model's batch), and replica r reads a SLICE of
 *      it, rows [r*b, (r+1)*b), on JOB's task r (it reads the feed in its
 *      own process: partition.c makes no transfer for ARGs read on a CPU).
 *   2. Cone: the nodes that depend on a split feed.  Each is copied for
 *      every replica r in node order (inputs in the cone read replica r's
 *      copies; other inputs, i.e. variables, constants and unsplit feeds,
 *      are shared), with the request "/job:JOB/replica:0/task:r"; the
 *      copies have the original's types.  Cone nodes that assign a
 *      variable or hold regions (control flow) are errors: one update per
 *      step, and one replica's regions are not copied.
 *   3. Results: the loss becomes the mean of the replicas' losses (the
 *      full batch's loss when the loss is a batch mean, which is what
 *      --replicas assumes); another fetched value in the cone becomes the
 *      concatenation of the replicas' values along dimension 0 when each is
 *      batch-major (its dimension 0 the replica's share), an error
 *      otherwise.  The original cone nodes are removed.
 *   4. Parameter servers: every VARIABLE without a device request goes to
 *      a task of the first job other than JOB, the least loaded by bytes
 *      first (TensorFlow's greedy load-balancing device setter); without
 *      such a job the variables take the default device.
 * The gradient pass then colocates each replica's adjoints with its
 * forward nodes and sums the replicas' contributions to a variable on the
 * variable's task, where the optimizer's update also runs (grad.c, optim.c
 * cur_device): a synchronous step whose aggregation barrier is the
 * parameter server waiting for every worker's gradient.
 */
#include "passes/passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Rep {
    IrGraph *g;
    Status *st;
    int n;                        /* replicas */
    const char *job;
    bool *cone;                   /* by node id */
    IrValue **map;                /* by node id: outputs of the current replica's copy */
    int n_ids;
} Rep;

static const char *nm(const IrNode *n)
{
    return n->origin ? n->origin : ir_op_name(n->op);
}

static const char *dev_str(IrGraph *g, const char *job, int task)
{
    char buf[IR_DEV_MAX_STR];
    snprintf(buf, sizeof buf, "/job:%s/replica:0/task:%d", job, task);
    return arena_strdup(&g->arena, buf);
}

/* Step 1: each split feed's full-batch ARG (made once, in big[]) and
 * replica r's slice of it (the map entry of the replica-sized ARG). */
static bool slice_feeds(Rep *R, int r, IrNode **big, int *n_split)
{
    IrGraph *g = R->g;
    for (int i = 0; i < g->n_feeds; i++) {
        IrNode *a = g->feeds[i].arg;
        if (!a || a->dead || a->out[0].type.shape.rank < 1)
            continue;
        const IrType *t = &a->out[0].type;
        int64_t b = t->shape.dims[0];
        ir_graph_set_origin(g, a->origin ? a->origin : g->feeds[i].name, "Placeholder");
        if (!big[i]) {
            IrType bt = *t;
            bt.shape.dims[0] = b * R->n;
            big[i] = ir_emit(g, OP_ARG, NULL, 0, &a->p, &bt, R->st);
            if (!big[i])
                return false;
            big[i]->device = a->device;
        }
        IrParams p;
        memset(&p, 0, sizeof p);
        p.i[TCRT_SL_BEGIN + 0] = r * b;
        for (int d = 0; d < t->shape.rank; d++)
            p.i[TCRT_SL_STRIDE + d] = 1;
        g->cur_origin_op = "Slice";
        g->cur_device = dev_str(g, R->job, r);
        IrValue s = ir_emit1(g, OP_SLICE, &(IrValue){big[i], 0}, 1, &p, t, R->st);
        g->cur_device = NULL;
        if (!s.node)
            return false;
        R->map[a->id] = arena_alloc(&g->arena, sizeof(IrValue));
        if (!R->map[a->id])
            return st_errorf(R->st, ST_NOMEM, "--replicas: out of memory");
        R->map[a->id][0] = s;
        R->cone[a->id] = true;
        (*n_split)++;
    }
    return true;
}

/* Step 2: marks the nodes depending on a split feed (ARGs marked by step 1). */
static bool mark_cone(Rep *R, int n_orig)
{
    IrGraph *g = R->g;
    for (int i = 0; i < n_orig; i++) {
        IrNode *n = g->nodes[i];
        if (!n || n->dead || n->op == OP_ARG)
            continue;
        for (int k = 0; k < n->n_inputs && !R->cone[n->id]; k++)
            R->cone[n->id] = n->inputs[k].node && R->cone[n->inputs[k].node->id];
        if (!R->cone[n->id])
            continue;
        if (n->op == OP_ASSIGN)
            return st_errorf(R->st, ST_UNSUPPORTED,
                             "--replicas %s: node '%s' (%s) assigns a variable from the batch (e.g. batch-norm "
                             "statistics); replicated steps would update it once per replica",
                             R->job, nm(n), n->origin_op ? n->origin_op : "assign");
        if (n->n_regions > 0)
            return st_errorf(R->st, ST_UNSUPPORTED,
                             "--replicas %s: node '%s' (%s) is control flow over the batch; replicating "
                             "loops and conditionals is not supported",
                             R->job, nm(n), n->origin_op ? n->origin_op : ir_op_name(n->op));
    }
    return true;
}

/* Step 2: replica r's copy of the cone's nodes. */
static bool copy_cone(Rep *R, int r, int n_orig)
{
    IrGraph *g = R->g;
    g->cur_device = dev_str(g, R->job, r);
    for (int i = 0; i < n_orig; i++) {
        IrNode *n = g->nodes[i];
        if (!n || n->dead || n->op == OP_ARG || !R->cone[n->id])
            continue;
        IrValue in[64], *inp = in;
        if (n->n_inputs > 64 && !(inp = arena_alloc(&g->arena, sizeof(IrValue) * (size_t)n->n_inputs)))
            return st_errorf(R->st, ST_NOMEM, "--replicas: out of memory");
        for (int k = 0; k < n->n_inputs; k++) {
            IrValue v = n->inputs[k];
            inp[k] = v.node && R->cone[v.node->id] ? R->map[v.node->id][v.index] : v;
        }
        g->cur_origin = n->origin;
        g->cur_origin_op = n->origin_op;
        IrNode *m = ir_emit(g, n->op, inp, n->n_inputs, &n->p, &n->out[0].type, R->st);
        if (!m) {
            st_prefix(R->st, "--replicas: ");
            return false;
        }
        m->coloc = NULL; /* the replica's request wins over `_class` colocation */
        m->n_coloc = 0;
        for (int k = 0; k < n->n_ctrl; k++) {
            IrNode *d = n->ctrl[k];
            if (d && R->cone[d->id] && d->op != OP_ARG && R->map[d->id])
                d = R->map[d->id][0].node;
            ir_add_ctrl(g, m, d, R->st);
        }
        if (!(R->map[n->id] = arena_alloc(&g->arena, sizeof(IrValue) * (size_t)(n->n_outputs + 1))))
            return st_errorf(R->st, ST_NOMEM, "--replicas: out of memory");
        for (int k = 0; k < n->n_outputs; k++)
            R->map[n->id][k] = (IrValue){m, m->op == OP_CONST ? 0 : k};
    }
    g->cur_device = NULL;
    return st_ok(R->st);
}

/* Step 4: variables to the parameter-server job's tasks, least bytes first. */
static void place_variables(Rep *R, const PassCluster *c)
{
    int ps = -1;
    for (int j = 0; j < c->n_jobs && ps < 0; j++)
        if (strcmp(c->job[j], R->job))
            ps = j;
    if (ps < 0)
        return;
    int64_t load[64] = {0};
    int n_tasks = c->count[ps] < 64 ? c->count[ps] : 64;
    IR_FOR_EACH(R->g, n)
    {
        if (n->op != OP_VARIABLE || n->device)
            continue;
        int best = 0;
        for (int t = 1; t < n_tasks; t++)
            if (load[t] < load[best])
                best = t;
        load[best] += (int64_t)ir_type_bytes(&n->out[0].type);
        n->device = dev_str(R->g, c->job[ps], best);
    }
}

/* Whether fetched value v (one replica's) has the batch's rows: its
 * dimension 0 is the rows of a split feed. */
static bool batch_major(const Rep *R, IrValue v, IrNode *const *big)
{
    const IrType *t = ir_value_type(v);
    for (int i = 0; i < R->g->n_feeds; i++)
        if (big[i] && t->shape.rank >= 1 && t->shape.dims[0] * R->n == big[i]->out[0].type.shape.dims[0])
            return true;
    return false;
}

bool pass_replicate(IrGraph *g, const PassCluster *c, const char *job, int loss_i, Status *st)
{
    if (!st_ok(st))
        return false;
    int n = 0;
    for (int j = 0; j < c->n_jobs; j++)
        if (!strcmp(c->job[j], job))
            n = c->count[j];
    if (n < 1)
        return st_errorf(st, ST_ERROR, "--replicas %s: the --cluster has no job '%s'", job, job);
    Rep R = {.g = g, .st = st, .n = n, .job = job, .n_ids = g->next_id};
    R.cone = calloc((size_t)R.n_ids + 1, sizeof *R.cone);
    R.map = calloc((size_t)R.n_ids + 1, sizeof *R.map);
    IrNode **big = calloc((size_t)g->n_feeds + 1, sizeof *big);
    bool ok = R.cone && R.map && big;
    if (!ok)
        st_errorf(st, ST_NOMEM, "--replicas: out of memory");
    int n_orig = g->n_nodes;
    const char *so = g->cur_origin, *sop = g->cur_origin_op;
    /* the loss and the other fetches in the cone, per replica */
    int nf = g->n_fetches;
    IrValue *res = ok ? calloc((size_t)(nf + 1) * (size_t)n, sizeof *res) : NULL;
    ok = ok && res;
    for (int r = 0; ok && r < n; r++) {
        int n_split = 0;
        ok = slice_feeds(&R, r, big, &n_split);
        if (ok && n_split == 0)
            ok = st_errorf(st, ST_ERROR, "--replicas %s: no fed tensor has a batch dimension to split", job);
        if (ok && r == 0)
            ok = mark_cone(&R, n_orig);
        ok = ok && copy_cone(&R, r, n_orig);
        for (int f = 0; ok && f < nf; f++) {
            IrValue v = g->fetches[f].value;
            res[(size_t)f * (size_t)n + (size_t)r] = v.node && R.cone[v.node->id] ? R.map[v.node->id][v.index] : v;
        }
    }
    if (ok && (loss_i < 0 || loss_i >= nf || !g->fetches[loss_i].value.node))
        ok = st_errorf(st, ST_ERROR, "--replicas %s: the loss is not a fetched value", job);
    if (ok && !R.cone[g->fetches[loss_i].value.node->id])
        ok = st_errorf(st, ST_ERROR, "--replicas %s: the loss '%s' does not depend on a fed batch", job,
                       g->fetches[loss_i].name);
    /* step 3: the loss is the replicas' mean; batch-major fetches are concatenated */
    for (int f = 0; ok && f < nf; f++) {
        IrValue v = g->fetches[f].value, *rv = res + (size_t)f * (size_t)n;
        if (!v.node || !R.cone[v.node->id])
            continue;
        ir_graph_set_origin(g, v.node->origin ? v.node->origin : g->fetches[f].name,
                            f == loss_i ? "Mean" : "ConcatV2");
        IrValue out = rv[0];
        if (f == loss_i) {
            for (int r = 1; r < n && out.node; r++)
                out = ir_binary(g, OP_ADD, out, rv[r], st);
            if (n > 1 && out.node)
                out = ir_binary(g, OP_MUL, out,
                                ir_const_scalar_f(g, ir_value_type(out)->dtype, 1.0 / (double)n, st), st);
        } else {
            const IrType *rt = ir_value_type(rv[0]);
            if (rt->shape.rank < 1 || !batch_major(&R, v, big)) {
                char b1[128];
                ok = st_errorf(st, ST_ERROR,
                               "--replicas %s: fetched '%s' depends on the batch but is neither the loss nor "
                               "batch-major (%s per replica); fetch it from a compile without --replicas",
                               job, g->fetches[f].name, ir_shape_str(&rt->shape, b1, sizeof b1));
                break;
            }
            if (n > 1) {
                IrParams p;
                memset(&p, 0, sizeof p);
                out = ir_emit1(g, OP_CONCAT, rv, n, &p, NULL, st);
            }
        }
        ok = out.node != NULL;
        if (ok)
            g->fetches[f].value = out;
    }
    /* the originals are unused now; the feeds are the full-batch ARGs */
    for (int i = 0; ok && i < n_orig; i++) {
        IrNode *x = g->nodes[i];
        if (x && !x->dead && R.cone[x->id])
            x->dead = true;
    }
    for (int i = 0; ok && i < g->n_feeds; i++)
        if (big[i])
            g->feeds[i].arg = big[i];
    if (ok) {
        IR_FOR_EACH(g, x)
        {
            int k = 0;
            for (int j = 0; j < x->n_ctrl; j++)
                if (x->ctrl[j] && !x->ctrl[j]->dead)
                    x->ctrl[k++] = x->ctrl[j];
            x->n_ctrl = k;
        }
        place_variables(&R, c);
        ir_graph_compact(g);
    }
    g->cur_origin = so;
    g->cur_origin_op = sop;
    g->cur_device = NULL;
    free(R.cone);
    free(R.map);
    free(big);
    free(res);
    return ok && st_ok(st);
}
