/* passes/partition.c - one partition per device, cut edges as SEND/RECV.
 * requires: topo order, shapes, placement (pass_place)   preserves: shapes, devices
 * invalidates: memory plan
 *
 * The partitions stay one IrGraph, annotated by each node's device
 * (n->device, set by pass_place): codegen emits one schedule for a single
 * process, and a device backend takes the nodes of its device.
 * Algorithm:
 *   1. With for_codegen, every node must be on a device this build can run:
 *      a CPU of the local task.  A GPU ("no CUDA runtime yet": --emit cuda
 *      compiles GPU nodes without for_codegen) or
 *      another task is an error naming the first such node.
 *   2. Every data edge producer -> consumer whose devices differ (CONST
 *      producers excepted: weights are on every device; so are ARGs for a
 *      CPU consumer: every process of a --cluster run loads the feeds into
 *      its own host memory, docs/distributed.md) is rerouted
 *      producer -> SEND (producer's device) -> RECV (consumer's device) ->
 *      consumer.  Pairs are shared per (producer, output, destination
 *      device): a device receives a tensor once however many of its nodes
 *      read it.  A fetched value not on the host CPU:0 is received there
 *      (results live in host memory).  Both halves carry the key
 *      "src;dst;edge_<producer id>_<tf name>:<output>", unique in the graph
 *      (TensorFlow's rendezvous key, without incarnation and frame), and
 *      p.i[0]/p.i[1] = source/destination device numbered in order of first
 *      appearance in the node list; p.i[2] = 1 when the two devices are
 *      on different tasks (the receiver posts the receive at the SEND's
 *      position: memplan keeps the RECV's buffer from there, codegen calls
 *      MPI_Irecv there and waits at the RECV).  Control edges are left as they are:
 *      one schedule orders them.
 *   3. Schedule: each SEND right after its producer (as soon as possible),
 *      each RECV right before its first consumer (as late as possible, so
 *      received buffers are not held early); a RECV only fetched follows
 *      its SEND (a result is live for the whole run anyway, and the sent
 *      buffer is freed sooner).
 *      The report gets the peak memory for this order and for RECVs as soon
 *      as possible (right after their SEND): the sum over devices of each
 *      device's peak of live bytes.  A buffer lives on its node's device
 *      from its producer to its last consumer, and a sent buffer until its
 *      RECV has run (the rendezvous holds it; a SEND makes no buffer of its
 *      own); ARGs, fetched values, VARIABLE and ASSIGN outputs live for the
 *      whole run; CONSTs are weights, not counted.  (In one process the
 *      memory planner still gives the SEND output a buffer of its own.)
 * Invariants: afterwards every data edge between different devices is a
 * SEND -> RECV edge; one RECV per (tensor, destination device); keys unique.
 */
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

typedef struct Pair {
    IrNode *producer;
    int index;
    const char *dst;
    IrNode *send, *recv;
    bool read_by_node;            /* false: only fetched */
    int next;                     /* next pair of the same producer, -1 */
} Pair;

typedef struct Parter {
    IrGraph *g;
    PassCtx *cx;
    Pair *pairs;
    int n_pairs, cap_pairs;
    int *first;                   /* producer id -> first pair, -1 */
    int n_ids;
    const char **devs;            /* device numbering (first appearance) */
    int n_devs, cap_devs;
} Parter;

static const char *nm(const IrNode *n)
{
    return n->origin ? n->origin : ir_op_name(n->op);
}

static const char *nm_op(const IrNode *n)
{
    return n->origin_op ? n->origin_op : ir_op_name(n->op);
}

static bool nomem(Parter *pt)
{
    return st_errorf(pt->cx->st, ST_NOMEM, "partition: out of memory");
}

static int dev_index(Parter *pt, const char *d)
{
    for (int i = 0; i < pt->n_devs; i++)
        if (!strcmp(pt->devs[i], d))
            return i;
    if (pt->n_devs == pt->cap_devs) {
        int cap = pt->cap_devs ? 2 * pt->cap_devs : 8;
        const char **nd = arena_alloc(&pt->cx->scratch, sizeof(char *) * (size_t)cap);
        if (!nd)
            return -1;
        if (pt->n_devs)
            memcpy(nd, pt->devs, sizeof(char *) * (size_t)pt->n_devs);
        pt->devs = nd;
        pt->cap_devs = cap;
    }
    pt->devs[pt->n_devs] = d;
    return pt->n_devs++;
}

/* Step 1: devices this build can run. */
static bool check_devices(Parter *pt)
{
    IR_FOR_EACH(pt->g, n) {
        if (!n->device)
            continue;
        IrDevName d;
        if (!ir_dev_parse(n->device, &d))
            return st_errorf(pt->cx->st, ST_ERROR, "node '%s' (%s): malformed device '%s'", nm(n), nm_op(n),
                             n->device);
        ir_dev_complete(&d, ir_dev_local_task());
        if (!ir_dev_same_task(&d, ir_dev_local_task()) &&
            pass_cluster_rank(pt->cx->place->cluster, n->device) < 0)
            return st_errorf(pt->cx->st, ST_ERROR,
                             "node '%s' (%s) is placed on %s, another task: this tfcc compiles one process "
                             "(/job:localhost/replica:0/task:0) and has no distributed runtime; use "
                             "--default-device cpu:0 or --device-map",
                             nm(n), nm_op(n), n->device);
        if (!strcmp(d.type, "GPU")) /* codegen/cuda writes GPU code (--emit cuda), nothing runs it yet */
            return st_errorf(pt->cx->st, ST_ERROR,
                             "node '%s' (%s) is placed on %s but this tfcc has no CUDA runtime yet (--emit cuda "
                             "writes the GPU code only); use --default-device cpu:0 or --device-map",
                             nm(n), nm_op(n), n->device);
        if (strcmp(d.type, "CPU"))
            return st_errorf(pt->cx->st, ST_ERROR,
                             "node '%s' (%s) is placed on %s but this tfcc has no %s backend; use "
                             "--default-device cpu:0 or --device-map",
                             nm(n), nm_op(n), n->device, d.type);
    }
    return true;
}

/* Whether dev names a CPU (feeds are in every process's host memory). */
static bool is_cpu(const char *dev)
{
    IrDevName d;
    return ir_dev_parse(dev, &d) && !strcmp(d.type, "CPU");
}

/* The RECV of (producer output, dst), made on first use. */
static IrNode *get_recv(Parter *pt, IrValue v, const char *dst)
{
    IrNode *p = v.node;
    for (int i = pt->first[p->id]; i >= 0; i = pt->pairs[i].next)
        if (pt->pairs[i].index == v.index && !strcmp(pt->pairs[i].dst, dst))
            return pt->pairs[i].recv;
    if (pt->n_pairs == pt->cap_pairs) {
        int cap = pt->cap_pairs ? 2 * pt->cap_pairs : 16;
        Pair *np = arena_alloc(&pt->cx->scratch, sizeof(Pair) * (size_t)cap);
        if (!np) {
            nomem(pt);
            return NULL;
        }
        if (pt->n_pairs)
            memcpy(np, pt->pairs, sizeof(Pair) * (size_t)pt->n_pairs);
        pt->pairs = np;
        pt->cap_pairs = cap;
    }
    IrGraph *g = pt->g;
    Status *st = pt->cx->st;
    int si = dev_index(pt, p->device), di = dev_index(pt, dst);
    if (si < 0 || di < 0) {
        nomem(pt);
        return NULL;
    }
    char key[3 * IR_DEV_MAX_STR + 512];
    snprintf(key, sizeof key, "%s;%s;edge_%d_%s:%d", p->device, dst, p->id, nm(p), v.index);
    const char *k = arena_strdup(&g->arena, key);
    IrParams prm;
    memset(&prm, 0, sizeof prm);
    prm.i[0] = si;
    prm.i[1] = di;
    IrDevName sd, dd; /* between tasks: the receive is posted at the SEND's position */
    prm.i[2] = ir_dev_parse(p->device, &sd) && ir_dev_parse(dst, &dd) && !ir_dev_same_task(&sd, &dd);
    ir_graph_set_origin(g, p->origin, "_Send");
    IrNode *send = ir_emit(g, OP_SEND, &v, 1, &prm, NULL, st);
    if (!send || !k)
        return st_ok(st) ? (nomem(pt), NULL) : NULL;
    send->device = p->device;
    send->key = k;
    ir_graph_set_origin(g, p->origin, "_Recv");
    IrValue sv = {send, 0};
    IrNode *recv = ir_emit(g, OP_RECV, &sv, 1, &prm, NULL, st);
    if (!recv)
        return NULL;
    recv->device = dst;
    recv->key = k;
    Pair *pr = &pt->pairs[pt->n_pairs];
    *pr = (Pair){p, v.index, dst, send, recv, false, pt->first[p->id]};
    pt->first[p->id] = pt->n_pairs++;
    return recv;
}

static bool is_pinned(const IrGraph *g, const IrNode *n)
{
    if (n->op == OP_ARG || n->op == OP_VARIABLE || n->op == OP_ASSIGN)
        return true;
    for (int i = 0; i < g->n_fetches; i++)
        if (g->fetches[i].value.node == n)
            return true;
    return false;
}

/* Peak memory of the schedule order[0..n): the sum over devices of each
 * device's peak of live bytes (see the file comment). */
static int64_t peak_bytes(Parter *pt, IrNode **order, int n, int n_ids)
{
    const IrGraph *g = pt->g;
    Arena *ar = &pt->cx->scratch;
    int nd = pt->n_devs + 1; /* + nodes without a device */
    int64_t *delta = arena_alloc(ar, sizeof(int64_t) * (size_t)nd * ((size_t)n + 2));
    int *last = arena_alloc(ar, sizeof(int) * ((size_t)n_ids + 1));
    int *dev = arena_alloc(ar, sizeof(int) * ((size_t)n + 1));
    if (!delta || !last || !dev)
        return -1;
    for (int i = 0; i < n; i++) {
        last[order[i]->id] = i;
        dev[i] = order[i]->device ? dev_index(pt, order[i]->device) : pt->n_devs;
        if (dev[i] < 0 || dev[i] >= nd)
            dev[i] = nd - 1;
    }
    for (int i = 0; i < n; i++) {
        const IrNode *y = order[i];
        for (int k = 0; k < y->n_inputs; k++) {
            const IrNode *p = y->inputs[k].node;
            if (y->op == OP_RECV && p && p->op == OP_SEND && p->n_inputs == 1)
                p = p->inputs[0].node; /* the rendezvous holds the sent buffer until the RECV */
            if (p && p->op != OP_CONST && p->id >= 0 && p->id < n_ids && last[p->id] < i)
                last[p->id] = i;
        }
    }
    for (int i = 0; i < n; i++) {
        const IrNode *x = order[i];
        if (x->op == OP_CONST || x->op == OP_SEND)
            continue;
        int64_t b = 0;
        for (int k = 0; k < x->n_outputs; k++)
            b += (int64_t)ir_type_bytes(&x->out[k].type);
        bool pin = is_pinned(g, x);
        int start = pin ? 0 : i, end = pin ? n - 1 : last[x->id];
        int64_t *dd = delta + (size_t)dev[i] * ((size_t)n + 2);
        dd[start] += b;
        dd[end + 1] -= b;
    }
    int64_t total = 0;
    for (int d = 0; d < nd; d++) {
        int64_t live = 0, peak = 0, *dd = delta + (size_t)d * ((size_t)n + 2);
        for (int i = 0; i < n; i++) {
            live += dd[i];
            if (live > peak)
                peak = live;
        }
        total += peak;
    }
    return total;
}

PassResult pass_partition(IrGraph *g, PassCtx *cx)
{
    if (g->parent || !cx->place)
        return PASS_SAME;
    Parter pt;
    memset(&pt, 0, sizeof pt);
    pt.g = g;
    pt.cx = cx;
    if (cx->place->for_codegen && !check_devices(&pt))
        return PASS_FAILED;
    int n_orig = 0;
    IrNode **orig = arena_alloc(&cx->scratch, sizeof(IrNode *) * ((size_t)g->n_nodes + 1));
    pt.n_ids = g->next_id;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && g->nodes[i]->id >= pt.n_ids)
            pt.n_ids = g->nodes[i]->id + 1;
    pt.first = arena_alloc(&cx->scratch, sizeof(int) * ((size_t)pt.n_ids + 1));
    if (!orig || !pt.first)
        return nomem(&pt), PASS_FAILED;
    for (int i = 0; i < pt.n_ids; i++)
        pt.first[i] = -1;
    IR_FOR_EACH(g, n) {
        orig[n_orig++] = n;
    }
    const char *so = g->cur_origin, *sop = g->cur_origin_op;

    /* step 2: cut edges */
    char host[IR_DEV_MAX_STR];
    ir_dev_canonical("/device:CPU:0", host, sizeof host);
    for (int i = 0; i < n_orig; i++) {
        IrNode *n = orig[i];
        for (int k = 0; k < n->n_inputs; k++) {
            IrValue v = n->inputs[k];
            if (!v.node || v.node->op == OP_CONST || !v.node->device || !n->device ||
                !strcmp(v.node->device, n->device) || (v.node->op == OP_ARG && is_cpu(n->device)))
                continue;
            IrNode *r = get_recv(&pt, v, n->device);
            if (!r)
                return PASS_FAILED;
            n->inputs[k] = (IrValue){r, 0};
            for (int p = pt.first[v.node->id]; p >= 0; p = pt.pairs[p].next)
                pt.pairs[p].read_by_node |= pt.pairs[p].recv == r;
        }
    }
    const char *host_dev = NULL;
    for (int i = 0; i < g->n_fetches; i++) {
        IrValue v = g->fetches[i].value;
        if (!v.node || v.node->op == OP_CONST || !v.node->device || !strcmp(v.node->device, host))
            continue;
        if (!host_dev && !(host_dev = arena_strdup(&g->arena, host)))
            return nomem(&pt), PASS_FAILED;
        IrNode *r = get_recv(&pt, v, host_dev);
        if (!r)
            return PASS_FAILED;
        g->fetches[i].value = (IrValue){r, 0};
    }
    g->cur_origin = so;
    g->cur_origin_op = sop;

    /* step 3: SENDs as soon as possible, RECVs as late as possible */
    int n_all = n_orig + 2 * pt.n_pairs;
    IrNode **alap = arena_alloc(&cx->scratch, sizeof(IrNode *) * ((size_t)n_all + 1));
    IrNode **asap = arena_alloc(&cx->scratch, sizeof(IrNode *) * ((size_t)n_all + 1));
    bool *placed = arena_alloc(&cx->scratch, (size_t)pt.n_ids + 2 * (size_t)pt.n_pairs + 1);
    if (!alap || !asap || !placed)
        return nomem(&pt), PASS_FAILED;
    int na = 0, ns = 0;
    for (int i = 0; i < n_orig; i++) {
        IrNode *n = orig[i];
        for (int k = 0; k < n->n_inputs; k++) {
            IrNode *r = n->inputs[k].node;
            if (r && r->op == OP_RECV && r->key && !placed[r->id]) {
                placed[r->id] = true;
                alap[na++] = r;
            }
        }
        alap[na++] = n;
        asap[ns++] = n;
        for (int p = pt.n_ids > n->id ? pt.first[n->id] : -1; p >= 0; p = pt.pairs[p].next) {
            alap[na++] = pt.pairs[p].send;
            asap[ns++] = pt.pairs[p].send;
            asap[ns++] = pt.pairs[p].recv;
            if (!pt.pairs[p].read_by_node) { /* only fetched: pinned anyway, nothing to gain by waiting */
                placed[pt.pairs[p].recv->id] = true;
                alap[na++] = pt.pairs[p].recv;
            }
        }
    }
    if (!ALWAYS(cx->st, na == n_all && ns == n_all))
        return PASS_FAILED;
    memcpy(g->nodes, alap, sizeof(IrNode *) * (size_t)na);
    g->n_nodes = na;

    PassPlaceReport *rep = cx->place->report;
    if (rep) {
        rep->n_pairs = pt.n_pairs;
        rep->keys = pt.n_pairs ? arena_alloc(&g->arena, sizeof(char *) * (size_t)pt.n_pairs) : NULL;
        if (pt.n_pairs && !rep->keys)
            return nomem(&pt), PASS_FAILED;
        for (int p = 0; p < pt.n_pairs; p++)
            rep->keys[p] = pt.pairs[p].send->key;
        rep->peak_alap = peak_bytes(&pt, alap, na, g->next_id);
        rep->peak_asap = peak_bytes(&pt, asap, ns, g->next_id);
    }
    return pt.n_pairs ? PASS_CHANGED : PASS_SAME;
}
