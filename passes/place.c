/* passes/place.c - device placement (docs/devices.md).
 * requires: topo order, shapes, options (REQ_PLACEMENT)   preserves: shapes, node order
 * invalidates: memory plan
 *
 * Gives every live top-level node except CONST an assigned device in
 * n->device (canonical, "/job:localhost/replica:0/task:0/device:CPU:0").
 * Constants are weights, loaded onto every device that reads them, so they
 * are never placed and never cut an edge.  Region graphs are not placed:
 * a region op (WHILE, COND) runs on the CPU with everything inside it.
 * Algorithm:
 *   1. The cluster: the local CPU:0, --devices, --default-device, the
 *      --device-map devices, and every local CPU:N a request names (the CPU
 *      devices of this process always exist; a GPU or another task exists
 *      only when a flag names it).  At most 64 devices.
 *   2. Each node's request: the last --device-map pattern matching its TF
 *      name, else NodeDef.device; parsed (ir/device.c) and completed with
 *      the local task's job/replica/task.  Malformed: an error.
 *   3. Colocation groups (union-find): TF `_class` "loc:@x" joins a node
 *      with every node of TF name x; an ASSIGN joins its VARIABLE (the
 *      state and its update live together; reads of the variable on other
 *      devices receive it through SEND/RECV).  Members' requests merge
 *      (DeviceNameUtils::MergeDevNames without soft placement): a conflict
 *      is an error naming both nodes.
 *   4. Candidates of a group: the cluster devices its merged request
 *      matches (none: an error), or the default device, or the host CPU:0
 *      for a group holding a feed's ARG, or every device (cost model).
 *      Kernel availability (pass_place_supports) keeps the devices that can
 *      run every member; none left: soft placement on the CPU:0 of the
 *      candidates' task, reported.  Several left: the default device when
 *      among them, else the cost model.
 *   5. Cost model (Abadi et al. 2015, 3.2.1): simulated execution in node
 *      order; each device is busy until its last node finishes; a node's
 *      start is the latest of its device's free time and its inputs'
 *      arrival (producer finish + transfer time when on another device);
 *      an undecided group takes the device where its first node would
 *      finish first (ties: the earlier device in the cluster).  Compute
 *      time per device type is max(FLOPs / peak, bytes / bandwidth) plus a
 *      per-kernel overhead; transfers cost latency + bytes / link speed,
 *      once per (tensor, destination device), as partition sends them.
 * Invariants: every placed device is in the cluster; a group's members
 * share one device; nothing is printed (the report is data).
 */
#include "passes/passes.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 64

/* ---- kernel availability and costs ---- */

bool pass_place_supports(Op op, const char *type)
{
    if (!type || !strcmp(type, "CPU"))
        return true; /* every primitive has a CPU kernel */
    if (strcmp(type, "GPU"))
        return false;
    const OpInfo *oi = ir_op_info(op);
    if (!oi)
        return false;
    /* What the CUDA backend (codegen/cuda) generates or plans a library
     * call for; the rest is soft-placed on the CPU. */
    switch (oi->kind) {
    case K_LEAF:
        return true; /* const, arg, variable: buffers in device memory */
    case K_ELEM:
    case K_REDUCE:
        return true; /* fused elementwise kernels, block-per-output reductions and argmax/argmin */
    default:
        return op == OP_MATMUL || op == OP_CONV2D || /* cuBLAS, cuDNN */
               op == OP_COPY || op == OP_ASSIGN || op == OP_SEND || op == OP_RECV;
    }
}

typedef struct DevCost {
    const char *type;
    double flops;                 /* peak FLOP/s */
    double bandwidth;             /* memory bytes/s */
    double overhead;              /* seconds per kernel (call or launch) */
} DevCost;

static const DevCost dev_costs[] = {
    {"CPU", 50e9, 20e9, 1e-6},
    {"GPU", 10e12, 500e9, 10e-6},
};

static const DevCost *cost_of(const char *type)
{
    for (size_t i = 0; i < sizeof dev_costs / sizeof dev_costs[0]; i++)
        if (!strcmp(dev_costs[i].type, type))
            return &dev_costs[i];
    return &dev_costs[0];
}

static double count_of(const IrType *t)
{
    return (double)ir_shape_count(&t->shape);
}

/* Floating-point operations of one node (0 for data movement). */
static double node_flops(const IrNode *n)
{
    const OpInfo *oi = ir_op_info(n->op);
    double out = n->n_outputs > 0 ? count_of(&n->out[0].type) : 0;
    switch (oi->kind) {
    case K_ELEM:
        return out;
    case K_REDUCE:
        return n->n_inputs > 0 ? count_of(ir_value_type(n->inputs[0])) : 0;
    case K_WINDOW:
        return out * (double)(n->p.i[TCRT_POOL_KH] > 0 ? n->p.i[TCRT_POOL_KH] : 1) *
               (double)(n->p.i[TCRT_POOL_KW] > 0 ? n->p.i[TCRT_POOL_KW] : 1);
    case K_CONTRACT: {
        if (n->n_inputs < 2)
            return out;
        const IrShape *a = &ir_value_type(n->inputs[0])->shape, *w = &ir_value_type(n->inputs[1])->shape;
        if (n->op == OP_MATMUL && a->rank >= 2) {
            int64_t k = n->p.i[TCRT_MM_TA] ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
            return 2.0 * out * (double)k;
        }
        if (n->op == OP_CONV2D && w->rank == 4 && !n->p.i[TCRT_CONV_PACKED]) {
            double taps = (double)w->dims[0] * (double)w->dims[1];
            return 2.0 * out * taps * (n->p.i[TCRT_CONV_DEPTHWISE] ? 1.0 : (double)w->dims[2]);
        }
        /* others (transposed conv, gradients): every weight once per input element */
        double cw = (double)ir_shape_count(w), ca = (double)ir_shape_count(a);
        double wout = w->rank > 0 && w->dims[w->rank - 1] > 0 ? (double)w->dims[w->rank - 1] : 1;
        return 2.0 * ca * cw / wout;
    }
    default:
        return 0;
    }
}

static double node_bytes(const IrNode *n)
{
    double b = 0;
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k].node)
            b += (double)ir_type_bytes(ir_value_type(n->inputs[k]));
    for (int k = 0; k < n->n_outputs; k++)
        b += (double)ir_type_bytes(&n->out[k].type);
    return b;
}

double pass_place_node_seconds(const IrNode *n, const char *type)
{
    const OpInfo *oi = ir_op_info(n->op);
    if (!oi || n->op == OP_ARG || n->op == OP_CONST || n->op == OP_VARIABLE)
        return 0; /* buffers, no kernel */
    const DevCost *c = cost_of(type);
    double tf = node_flops(n) / c->flops, tb = node_bytes(n) / c->bandwidth;
    return (tf > tb ? tf : tb) + c->overhead;
}

/* Whether a node on device d reads p's output without a transfer: a feed
 * read on a CPU (every process holds the feeds; passes/partition.c). */
static bool reads_in_place(const IrNode *p, const IrDevName *d)
{
    return p->op == OP_ARG && !strcmp(d->type, "CPU");
}

double pass_place_transfer_seconds(int64_t bytes, const char *src, const char *dst)
{
    IrDevName a, b;
    if (!src || !dst || !strcmp(src, dst) || !ir_dev_parse(src, &a) || !ir_dev_parse(dst, &b))
        return 0;
    double lat, speed;
    if (!ir_dev_same_task(&a, &b)) {
        lat = 100e-6; /* another process: the network */
        speed = 1e9;
    } else if (!strcmp(a.type, "GPU") || !strcmp(b.type, "GPU")) {
        lat = 10e-6; /* PCIe */
        speed = 10e9;
    } else {
        lat = 1e-6; /* memcpy between CPU devices of one process */
        speed = 10e9;
    }
    return lat + (double)bytes / speed;
}

void pass_clear_devices(IrGraph *g)
{
    IR_FOR_EACH(g, n) {
        n->device = NULL;
        for (int k = 0; k < n->n_regions; k++)
            if (n->regions[k] && n->regions[k] != g)
                pass_clear_devices(n->regions[k]);
    }
}

/* ---- the pass ---- */

typedef struct Dev {
    IrDevName name;
    const char *str;              /* canonical, owned by the graph */
} Dev;

typedef struct Group {
    IrDevName spec;               /* merged request */
    int spec_from;                /* node index whose request set it, -1: none */
    uint64_t cand;                /* candidate devices (bit per cluster device) */
    int dev;                      /* chosen device, -1: undecided (cost model) */
    PassPlaceWhy why;
    const char *detail;
} Group;

typedef struct Placer {
    IrGraph *g;
    PassCtx *cx;
    const PassPlaceOptions *o;
    Dev devs[MAX_DEVICES];
    int n_devs;
    int host;                     /* the local CPU:0 */
    int def;                      /* --default-device, -1 */
    IrNode **nodes;               /* live non-CONST nodes in order */
    int n;
    int *idx_of;                  /* node id -> index, -1 */
    int n_ids;
    IrDevName *req;
    bool *has_req;
    PassPlaceWhy *req_why;        /* PLACE_REQUESTED or PLACE_MAPPED */
    const char **req_text;        /* the request as written (map: the pattern) */
    int *parent;                  /* union-find */
    int *next_member;             /* members of a group: root, next_member[root], ..., -1 */
    Group *groups;                /* by root index */
} Placer;

static const char *nm(const IrNode *n)
{
    return n->origin ? n->origin : ir_op_name(n->op);
}

static const char *nm_op(const IrNode *n)
{
    return n->origin_op ? n->origin_op : ir_op_name(n->op);
}

static const char *gprintf(IrGraph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *gprintf(IrGraph *g, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return arena_strdup(&g->arena, buf);
}

static bool nomem(Placer *pl)
{
    return st_errorf(pl->cx->st, ST_NOMEM, "place: out of memory");
}

static int find_dev(const Placer *pl, const IrDevName *d)
{
    for (int i = 0; i < pl->n_devs; i++)
        if (ir_dev_matches(d, &pl->devs[i].name) && ir_dev_matches(&pl->devs[i].name, d))
            return i;
    return -1;
}

/* Adds a full device name to the cluster (once); its index or -1. */
static int add_dev(Placer *pl, const IrDevName *d, const char *what)
{
    int i = find_dev(pl, d);
    if (i >= 0)
        return i;
    char buf[IR_DEV_MAX_STR];
    ir_dev_str(d, buf, sizeof buf);
    if (strcmp(d->type, "CPU") && strcmp(d->type, "GPU")) {
        st_errorf(pl->cx->st, ST_ERROR, "%s: unknown device type '%s' in '%s' (CPU or GPU)", what, d->type,
                  buf);
        return -1;
    }
    if (pl->n_devs >= MAX_DEVICES) {
        st_errorf(pl->cx->st, ST_ERROR, "%s: more than %d devices in the cluster", what, MAX_DEVICES);
        return -1;
    }
    const char *s = arena_strdup(&pl->g->arena, buf);
    if (!s) {
        nomem(pl);
        return -1;
    }
    pl->devs[pl->n_devs] = (Dev){*d, s};
    return pl->n_devs++;
}

/* A device named by a flag: parsed, completed with the local task, and it
 * must name a type and an index. */
static int flag_dev(Placer *pl, const char *flag, const char *s)
{
    IrDevName d;
    if (!ir_dev_parse(s, &d) || ir_dev_is_empty(&d)) {
        st_errorf(pl->cx->st, ST_ERROR,
                  "%s '%s': malformed device (expected e.g. cpu:0, gpu:1, /device:GPU:0, "
                  "/job:localhost/replica:0/task:0/device:CPU:1)",
                  flag, s);
        return -1;
    }
    ir_dev_complete(&d, ir_dev_local_task());
    if (!d.has_type || !d.has_id) {
        char buf[IR_DEV_MAX_STR];
        st_errorf(pl->cx->st, ST_ERROR, "%s '%s': name a device type and index (e.g. gpu:0), not '%s'", flag,
                  s, ir_dev_str(&d, buf, sizeof buf));
        return -1;
    }
    char what[300];
    snprintf(what, sizeof what, "%s '%s'", flag, s);
    return add_dev(pl, &d, what);
}

static const char *cluster_text(const Placer *pl, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < pl->n_devs; i++) {
        int w = snprintf(buf + len, n - len, "%s%s", i ? ", " : "", pl->devs[i].str);
        if (w < 0 || (size_t)w >= n - len)
            break;
        len += (size_t)w;
    }
    return buf;
}

static int uf_find(int *parent, int i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

static void uf_union(int *parent, int a, int b)
{
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a != b)
        parent[a > b ? a : b] = a < b ? a : b; /* the earlier node is the root */
}

/* Node indices sorted by TF name, for "loc:@name" lookups. */
typedef struct ByName {
    const char *origin;
    int idx;
} ByName;

static int cmp_by_name(const void *x, const void *y)
{
    const ByName *a = x, *b = y;
    int c = strcmp(a->origin, b->origin);
    return c ? c : a->idx - b->idx;
}

static int by_name_lower(const ByName *order, int n, const char *name)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (strcmp(order[mid].origin, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Step 2: requests.  The last matching --device-map wins over NodeDef.device. */
static bool read_requests(Placer *pl)
{
    for (int i = 0; i < pl->n; i++) {
        IrNode *n = pl->nodes[i];
        const char *text = n->device;
        pl->req_why[i] = PLACE_REQUESTED;
        pl->req_text[i] = text;
        for (int m = 0; m < pl->o->n_map; m++) {
            if (n->origin && fnmatch(pl->o->map[m].pattern, n->origin, 0) == 0) {
                text = pl->o->map[m].device;
                pl->req_why[i] = PLACE_MAPPED;
                pl->req_text[i] = pl->o->map[m].pattern;
            }
        }
        IrDevName d;
        if (!ir_dev_parse(text, &d)) {
            if (pl->req_why[i] == PLACE_MAPPED)
                return st_errorf(pl->cx->st, ST_ERROR, "--device-map '%s=%s': malformed device '%s'",
                                 pl->req_text[i], text, text);
            return st_errorf(pl->cx->st, ST_ERROR,
                             "node '%s' (%s): malformed device '%s' (expected e.g. "
                             "/job:localhost/replica:0/task:0/device:CPU:0, /device:GPU:1, /cpu:0)",
                             nm(n), nm_op(n), text);
        }
        pl->has_req[i] = !ir_dev_is_empty(&d);
        if (pl->has_req[i]) {
            ir_dev_complete(&d, ir_dev_local_task());
            /* the CPUs of this process always exist */
            if (ir_dev_same_task(&d, ir_dev_local_task()) && d.has_type && d.has_id &&
                !strcmp(d.type, "CPU") && add_dev(pl, &d, "device request") < 0)
                return false;
        }
        pl->req[i] = d;
    }
    return true;
}

/* Step 3: colocation groups and merged requests. */
static bool build_groups(Placer *pl)
{
    for (int i = 0; i < pl->n; i++)
        pl->parent[i] = i;
    ByName *order = arena_alloc(&pl->cx->scratch, sizeof(ByName) * ((size_t)pl->n + 1));
    if (!order)
        return nomem(pl);
    for (int i = 0; i < pl->n; i++)
        order[i] = (ByName){pl->nodes[i]->origin ? pl->nodes[i]->origin : "", i};
    qsort(order, (size_t)pl->n, sizeof *order, cmp_by_name);
    for (int i = 0; i < pl->n; i++) {
        IrNode *n = pl->nodes[i];
        for (int c = 0; c < n->n_coloc; c++) {
            if (!n->coloc[c])
                continue;
            for (int k = by_name_lower(order, pl->n, n->coloc[c]);
                 k < pl->n && !strcmp(order[k].origin, n->coloc[c]); k++)
                uf_union(pl->parent, i, order[k].idx);
        }
        if (n->op == OP_ASSIGN && n->inputs[0].node && n->inputs[0].node->id >= 0 &&
            n->inputs[0].node->id < pl->n_ids) {
            int v = pl->idx_of[n->inputs[0].node->id];
            if (v >= 0)
                uf_union(pl->parent, i, v);
        }
    }
    for (int i = 0; i < pl->n; i++)
        pl->groups[i] = (Group){.spec_from = -1, .dev = -1};
    /* member lists in node order: the root (the group's first node) leads */
    int *last = arena_alloc(&pl->cx->scratch, sizeof(int) * ((size_t)pl->n + 1));
    if (!last)
        return nomem(pl);
    for (int i = 0; i < pl->n; i++) {
        int r = uf_find(pl->parent, i);
        pl->next_member[i] = -1;
        if (r != i)
            pl->next_member[last[r]] = i;
        last[r] = i;
    }
    for (int i = 0; i < pl->n; i++) {
        if (!pl->has_req[i])
            continue;
        Group *gr = &pl->groups[uf_find(pl->parent, i)];
        if (gr->spec_from < 0) {
            gr->spec = pl->req[i];
            gr->spec_from = i;
            continue;
        }
        char why[2 * IR_DEV_MAX_STR + 64];
        IrDevName merged = gr->spec;
        if (!ir_dev_merge(&merged, &pl->req[i], why, sizeof why)) {
            const IrNode *a = pl->nodes[gr->spec_from], *b = pl->nodes[i];
            return st_errorf(pl->cx->st, ST_ERROR,
                             "nodes '%s' (%s) and '%s' (%s) are colocated but request different devices: %s",
                             nm(a), nm_op(a), nm(b), nm_op(b), why);
        }
        gr->spec = merged;
    }
    return true;
}

/* The first member of group r whose op a device of `type` cannot run, or -1. */
static int unsupported_member(const Placer *pl, int r, const char *type)
{
    for (int i = r; i >= 0; i = pl->next_member[i])
        if (!pass_place_supports(pl->nodes[i]->op, type))
            return i;
    return -1;
}

static int popcount64(uint64_t x)
{
    int c = 0;
    for (; x; x &= x - 1)
        c++;
    return c;
}

static int lowest_bit(uint64_t x)
{
    for (int i = 0; i < 64; i++)
        if (x >> i & 1)
            return i;
    return -1;
}

/* Step 4: candidate devices of every group. */
static bool choose_candidates(Placer *pl)
{
    uint64_t all = pl->n_devs >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << pl->n_devs) - 1);
    for (int r = 0; r < pl->n; r++) {
        if (uf_find(pl->parent, r) != r)
            continue;
        Group *gr = &pl->groups[r];
        bool has_arg = false;
        for (int i = r; i >= 0; i = pl->next_member[i])
            has_arg |= pl->nodes[i]->op == OP_ARG;
        char spec_text[IR_DEV_MAX_STR] = "";
        if (gr->spec_from >= 0) {
            ir_dev_str(&gr->spec, spec_text, sizeof spec_text);
            for (int d = 0; d < pl->n_devs; d++)
                if (ir_dev_matches(&gr->spec, &pl->devs[d].name))
                    gr->cand |= (uint64_t)1 << d;
            if (!gr->cand) {
                const IrNode *n = pl->nodes[gr->spec_from];
                char cl[2048];
                if (pl->req_why[gr->spec_from] == PLACE_MAPPED)
                    return st_errorf(
                        pl->cx->st, ST_ERROR,
                        "node '%s' (%s): --device-map '%s' gives device '%s', which is not in the "
                        "cluster (%s); add it with --devices",
                        nm(n), nm_op(n), pl->req_text[gr->spec_from], spec_text,
                        cluster_text(pl, cl, sizeof cl));
                return st_errorf(
                    pl->cx->st, ST_ERROR,
                    "node '%s' (%s) requests device '%s', which is not in the cluster (%s); add it "
                    "with --devices, or move the node with --device-map '%s=cpu:0'",
                    nm(n), nm_op(n), spec_text, cluster_text(pl, cl, sizeof cl), nm(n));
            }
            gr->why = PLACE_REQUESTED;
        } else if (pl->def >= 0) {
            gr->cand = (uint64_t)1 << pl->def;
            gr->why = PLACE_DEFAULT;
        } else if (has_arg) {
            gr->cand = (uint64_t)1 << pl->host;
            gr->why = PLACE_HOST;
        } else {
            gr->cand = all;
            gr->why = PLACE_COST;
        }
        /* kernel availability */
        uint64_t ok = 0;
        int bad = -1;
        for (int d = 0; d < pl->n_devs; d++) {
            if (!(gr->cand >> d & 1))
                continue;
            int u = unsupported_member(pl, r, pl->devs[d].name.type);
            if (u < 0)
                ok |= (uint64_t)1 << d;
            else if (bad < 0)
                bad = u;
        }
        if (!ok) {
            /* soft placement: the CPU:0 of the first candidate's task */
            const Dev *first = &pl->devs[lowest_bit(gr->cand)];
            IrDevName cpu = first->name;
            strcpy(cpu.type, "CPU");
            cpu.id = 0;
            int target = find_dev(pl, &cpu);
            const IrNode *b = pl->nodes[bad];
            if (target < 0) {
                char buf[IR_DEV_MAX_STR];
                return st_errorf(pl->cx->st, ST_ERROR,
                                 "node '%s' (%s): no %s kernel for op %s and no CPU in its task (%s) to fall "
                                 "back to; add one with --devices",
                                 nm(b), nm_op(b), first->name.type, ir_op_name(b->op),
                                 ir_dev_str(&cpu, buf, sizeof buf));
            }
            gr->cand = (uint64_t)1 << target;
            gr->detail = gprintf(pl->g, "no %s kernel for op %s%s; wanted %s", first->name.type,
                                 ir_op_name(b->op), bad != r ? gprintf(pl->g, " (node '%s')", nm(b)) : "",
                                 spec_text[0] ? spec_text : first->str);
            gr->why = PLACE_SOFT;
        } else {
            gr->cand = ok;
        }
        if (popcount64(gr->cand) == 1) {
            gr->dev = lowest_bit(gr->cand);
        } else if (pl->def >= 0 && (gr->cand >> pl->def & 1)) {
            gr->dev = pl->def;
            if (gr->why == PLACE_REQUESTED)
                gr->detail = gprintf(pl->g, "default device among those matching '%s'", spec_text);
        } else if (gr->why == PLACE_REQUESTED) {
            gr->why = PLACE_COST;
            gr->detail = gprintf(pl->g, "among %d devices matching '%s'", popcount64(gr->cand), spec_text);
        }
    }
    return st_ok(pl->cx->st);
}

/* Step 5: simulated execution; decides the groups left to the cost model. */
/* Transfers already simulated: (producer, output, device) -> arrival time,
 * so a tensor moves to a device once, as partition will send it. */
typedef struct Xfer {
    int pi, index, dev;           /* pi = -1: empty slot */
    double t;
} Xfer;

static Xfer *xfer_slot(Xfer *tab, size_t cap, int pi, int index, int dev)
{
    size_t h = ((size_t)pi * 2654435761u + (size_t)index * 40503u + (size_t)dev * 97u) & (cap - 1);
    while (tab[h].pi >= 0 && !(tab[h].pi == pi && tab[h].index == index && tab[h].dev == dev))
        h = (h + 1) & (cap - 1);
    return &tab[h];
}

static bool simulate(Placer *pl, double *makespan)
{
    double free_at[MAX_DEVICES] = {0};
    double *fin = arena_alloc(&pl->cx->scratch, sizeof(double) * ((size_t)pl->n + 1));
    int *dev_of = arena_alloc(&pl->cx->scratch, sizeof(int) * ((size_t)pl->n + 1));
    size_t edges = 0, cap = 16;
    for (int i = 0; i < pl->n; i++)
        edges += (size_t)pl->nodes[i]->n_inputs;
    while (cap < 2 * edges + 16)
        cap *= 2;
    Xfer *tab = arena_alloc(&pl->cx->scratch, sizeof(Xfer) * cap);
    if (!fin || !dev_of || !tab)
        return nomem(pl);
    for (size_t k = 0; k < cap; k++)
        tab[k].pi = -1;
    double end = 0;
    for (int i = 0; i < pl->n; i++) {
        IrNode *n = pl->nodes[i];
        Group *gr = &pl->groups[uf_find(pl->parent, i)];
        double best_t = 0;
        int best = -1;
        for (int d = 0; d < pl->n_devs; d++) {
            if (gr->dev >= 0 ? d != gr->dev : !(gr->cand >> d & 1))
                continue;
            double start = free_at[d];
            for (int k = 0; k < n->n_inputs; k++) {
                const IrNode *p = n->inputs[k].node;
                if (!p || p->op == OP_CONST || p->id < 0 || p->id >= pl->n_ids || pl->idx_of[p->id] < 0)
                    continue;
                int pi = pl->idx_of[p->id];
                double arrive = fin[pi];
                if (dev_of[pi] != d && !reads_in_place(p, &pl->devs[d].name)) {
                    const Xfer *x = xfer_slot(tab, cap, pi, n->inputs[k].index, d);
                    arrive = x->pi >= 0 ? x->t
                                        : arrive + pass_place_transfer_seconds(
                                                       (int64_t)ir_type_bytes(ir_value_type(n->inputs[k])),
                                                       pl->devs[dev_of[pi]].str, pl->devs[d].str);
                }
                if (arrive > start)
                    start = arrive;
            }
            double t = start + pass_place_node_seconds(n, pl->devs[d].name.type);
            if (best < 0 || t < best_t) {
                best = d;
                best_t = t;
            }
        }
        if (best < 0)
            return st_errorf(pl->cx->st, ST_ERROR, "node '%s' (%s): internal: no device to place it on",
                             nm(n), nm_op(n));
        if (gr->dev < 0)
            gr->dev = best;
        for (int k = 0; k < n->n_inputs; k++) { /* record this node's transfers */
            const IrNode *p = n->inputs[k].node;
            if (!p || p->op == OP_CONST || p->id < 0 || p->id >= pl->n_ids || pl->idx_of[p->id] < 0)
                continue;
            int pi = pl->idx_of[p->id];
            Xfer *x = xfer_slot(tab, cap, pi, n->inputs[k].index, best);
            if (dev_of[pi] != best && x->pi < 0 && !reads_in_place(p, &pl->devs[best].name))
                *x = (Xfer){pi, n->inputs[k].index, best,
                            fin[pi] + pass_place_transfer_seconds(
                                          (int64_t)ir_type_bytes(ir_value_type(n->inputs[k])),
                                          pl->devs[dev_of[pi]].str, pl->devs[best].str)};
        }
        free_at[best] = best_t;
        fin[i] = best_t;
        dev_of[i] = best;
        if (best_t > end)
            end = best_t;
    }
    *makespan = end;
    return true;
}

/* ---- --cluster ---------------------------------------------------------- */

bool pass_cluster_parse(const char *spec, PassCluster *c, Status *st)
{
    memset(c, 0, sizeof *c);
    if (!spec || !*spec)
        return st_errorf(st, ST_ERROR,
                         "--cluster '': expected JOB=COUNT[,JOB=COUNT...] (e.g. ps=1,worker=2)");
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq || eq == p)
            return st_errorf(st, ST_ERROR,
                             "--cluster '%s': expected JOB=COUNT[,JOB=COUNT...] (e.g. ps=1,worker=2)", spec);
        size_t jl = (size_t)(eq - p);
        if (jl >= IR_DEV_MAX_NAME)
            return st_errorf(st, ST_ERROR, "--cluster '%s': job name too long", spec);
        char job[IR_DEV_MAX_NAME];
        memcpy(job, p, jl);
        job[jl] = 0;
        /* a job name as in device names: a letter, then letters, digits, '_' */
        bool name_ok = isalpha((unsigned char)job[0]);
        for (size_t k = 1; k < jl; k++)
            name_ok = name_ok && (isalnum((unsigned char)job[k]) || job[k] == '_');
        if (!name_ok || !strcmp(job, "localhost"))
            return st_errorf(st, ST_ERROR,
                             "--cluster '%s': bad job name '%s' (a letter, then letters, digits "
                             "or '_'; not 'localhost')",
                             spec, job);
        long n = 0;
        const char *d = eq + 1;
        if (d == p + len)
            return st_errorf(st, ST_ERROR, "--cluster '%s': job '%s' has no task count", spec, job);
        for (; d < p + len; d++) {
            if (!isdigit((unsigned char)*d) || n > PASS_MAX_RANKS)
                return st_errorf(st, ST_ERROR,
                                 "--cluster '%s': task count of job '%s' is not a number from 1 "
                                 "to %d",
                                 spec, job, PASS_MAX_RANKS);
            n = n * 10 + (*d - '0');
        }
        if (n < 1 || n > PASS_MAX_RANKS)
            return st_errorf(st, ST_ERROR,
                             "--cluster '%s': task count of job '%s' is not a number from 1 to %d", spec, job,
                             PASS_MAX_RANKS);
        for (int k = 0; k < c->n_jobs; k++)
            if (!strcmp(c->job[k], job))
                return st_errorf(st, ST_ERROR, "--cluster '%s': job '%s' named twice", spec, job);
        if (c->n_jobs >= PASS_MAX_JOBS)
            return st_errorf(st, ST_ERROR, "--cluster '%s': more than %d jobs", spec, PASS_MAX_JOBS);
        if (c->n_ranks + n > PASS_MAX_RANKS)
            return st_errorf(st, ST_ERROR, "--cluster '%s': more than %d tasks in all", spec, PASS_MAX_RANKS);
        strcpy(c->job[c->n_jobs], job);
        c->count[c->n_jobs++] = (int)n;
        c->n_ranks += (int)n;
        if (!end)
            break;
        p = end + 1;
        if (!*p)
            return st_errorf(st, ST_ERROR, "--cluster '%s': trailing ','", spec);
    }
    return true;
}

int pass_cluster_rank(const PassCluster *c, const char *device)
{
    IrDevName d;
    if (!c || !ir_dev_parse(device, &d))
        return -1;
    ir_dev_complete(&d, ir_dev_local_task());
    if (ir_dev_same_task(&d, ir_dev_local_task()))
        return 0;
    if (d.replica != 0)
        return -1;
    int base = 0;
    for (int k = 0; k < c->n_jobs; k++) {
        if (!strcmp(c->job[k], d.job))
            return d.task >= 0 && d.task < c->count[k] ? base + d.task : -1;
        base += c->count[k];
    }
    return -1;
}

static bool placer_init(Placer *pl, IrGraph *g, PassCtx *cx)
{
    memset(pl, 0, sizeof *pl);
    pl->g = g;
    pl->cx = cx;
    pl->o = cx->place;
    pl->def = -1;
    pl->n_ids = g->next_id;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && g->nodes[i]->id >= pl->n_ids)
            pl->n_ids = g->nodes[i]->id + 1;
    Arena *ar = &cx->scratch;
    size_t cap = (size_t)g->n_nodes + 1;
    pl->nodes = arena_alloc(ar, sizeof(IrNode *) * cap);
    pl->idx_of = arena_alloc(ar, sizeof(int) * ((size_t)pl->n_ids + 1));
    pl->req = arena_alloc(ar, sizeof(IrDevName) * cap);
    pl->has_req = arena_alloc(ar, sizeof(bool) * cap);
    pl->req_why = arena_alloc(ar, sizeof(PassPlaceWhy) * cap);
    pl->req_text = arena_alloc(ar, sizeof(char *) * cap);
    pl->parent = arena_alloc(ar, sizeof(int) * cap);
    pl->next_member = arena_alloc(ar, sizeof(int) * cap);
    pl->groups = arena_alloc(ar, sizeof(Group) * cap);
    if (!pl->nodes || !pl->idx_of || !pl->req || !pl->has_req || !pl->req_why || !pl->req_text ||
        !pl->parent || !pl->next_member || !pl->groups)
        return nomem(pl);
    for (int i = 0; i < pl->n_ids; i++)
        pl->idx_of[i] = -1;
    IR_FOR_EACH(g, n) {
        if (n->op == OP_CONST)
            continue;
        if (n->id >= 0 && n->id < pl->n_ids)
            pl->idx_of[n->id] = pl->n;
        pl->nodes[pl->n++] = n;
    }
    /* the cluster */
    IrDevName host = *ir_dev_local_task();
    host.has_type = host.has_id = true;
    strcpy(host.type, "CPU");
    host.id = 0;
    pl->host = add_dev(pl, &host, "host");
    /* --cluster: the CPU:0 of every task, in rank order */
    for (int k = 0; pl->o->cluster && k < pl->o->cluster->n_jobs && st_ok(cx->st); k++)
        for (int t = 0; t < pl->o->cluster->count[k] && st_ok(cx->st); t++) {
            IrDevName d = host;
            strcpy(d.job, pl->o->cluster->job[k]);
            d.task = t;
            add_dev(pl, &d, "--cluster");
        }
    for (int i = 0; i < pl->o->n_devices && st_ok(cx->st); i++)
        flag_dev(pl, "--devices", pl->o->devices[i]);
    if (pl->o->default_device && st_ok(cx->st))
        pl->def = flag_dev(pl, "--default-device", pl->o->default_device);
    for (int i = 0; i < pl->o->n_map && st_ok(cx->st); i++) {
        char what[512];
        snprintf(what, sizeof what, "--device-map '%s=%s'", pl->o->map[i].pattern, pl->o->map[i].device);
        IrDevName d;
        if (!ir_dev_parse(pl->o->map[i].device, &d) || ir_dev_is_empty(&d))
            return st_errorf(cx->st, ST_ERROR, "%s: malformed device '%s'", what, pl->o->map[i].device);
        ir_dev_complete(&d, ir_dev_local_task());
        if (d.has_type && d.has_id)
            add_dev(pl, &d, what);
    }
    return st_ok(cx->st);
}

static bool fill_report(Placer *pl, double makespan)
{
    PassPlaceReport *rep = pl->o->report;
    if (!rep)
        return true;
    IrGraph *g = pl->g;
    rep->devices = arena_alloc(&g->arena, sizeof(char *) * (size_t)pl->n_devs);
    rep->entries = arena_alloc(&g->arena, sizeof(PassPlaceEntry) * ((size_t)pl->n + 1));
    if (!rep->devices || !rep->entries)
        return nomem(pl);
    rep->n_devices = pl->n_devs;
    for (int d = 0; d < pl->n_devs; d++)
        rep->devices[d] = pl->devs[d].str;
    rep->n_entries = 0;
    rep->n_soft = 0;
    rep->est_seconds = makespan;
    for (int i = 0; i < pl->n; i++) {
        int r = uf_find(pl->parent, i);
        const Group *gr = &pl->groups[r];
        PassPlaceEntry *e = &rep->entries[rep->n_entries++];
        e->node = pl->nodes[i];
        e->device = gr->dev;
        e->why = gr->why;
        e->detail = gr->detail;
        if (gr->why == PLACE_REQUESTED || (gr->why == PLACE_COST && gr->spec_from >= 0)) {
            int from = pl->has_req[i] ? i : gr->spec_from;
            if (from != i) {
                e->why = gr->why == PLACE_REQUESTED ? PLACE_COLOCATED : gr->why;
                if (gr->why == PLACE_REQUESTED)
                    e->detail = gprintf(g, "colocated with '%s'", nm(pl->nodes[from]));
            } else if (pl->req_why[i] == PLACE_MAPPED && gr->why == PLACE_REQUESTED) {
                e->why = PLACE_MAPPED;
                e->detail = gprintf(g, "--device-map '%s'", pl->req_text[i]);
            } else if (gr->why == PLACE_REQUESTED && !e->detail) {
                e->detail = gprintf(g, "'%s'", pl->req_text[i] ? pl->req_text[i] : "");
            }
        } else if (gr->why == PLACE_SOFT) {
            rep->n_soft++;
        }
        if (!e->detail && r != i && gr->why == PLACE_COST)
            e->detail = gprintf(g, "colocated with '%s'", nm(pl->nodes[r]));
    }
    return true;
}

PassResult pass_place(IrGraph *g, PassCtx *cx)
{
    if (g->parent) { /* a region runs where its op runs: requests inside it are dropped */
        bool dropped = false;
        IR_FOR_EACH(g, n) {
            dropped |= n->device != NULL;
            n->device = NULL;
        }
        return dropped ? PASS_CHANGED : PASS_SAME;
    }
    if (!cx->place)
        return PASS_SAME;
    Placer pl;
    double makespan = 0;
    if (!placer_init(&pl, g, cx) || !read_requests(&pl) || !build_groups(&pl) || !choose_candidates(&pl) ||
        !simulate(&pl, &makespan))
        return PASS_FAILED;
    bool changed = false;
    for (int i = 0; i < pl.n; i++) {
        const char *dev = pl.devs[pl.groups[uf_find(pl.parent, i)].dev].str;
        if (!pl.nodes[i]->device || strcmp(pl.nodes[i]->device, dev))
            changed = true;
        pl.nodes[i]->device = dev;
    }
    IR_FOR_EACH(g, n) {
        if (n->op == OP_CONST && n->device) {
            n->device = NULL;
            changed = true;
        }
    }
    if (!fill_report(&pl, makespan))
        return PASS_FAILED;
    return changed ? PASS_CHANGED : PASS_SAME;
}
