/* passes/pipeline.c - the visible pass table and the pass manager.
 *
 * The pipeline is the table below, run top to bottom.  For each pass the
 * manager: skips it when named in PipelineOptions.disabled; gives it a fresh
 * scratch arena (reset when it returns, so nothing in it may stay reachable
 * from the graph); after PASS_CHANGED runs the read-only verifier (always in
 * debug builds, with verify_each in release) and reports failures as
 * "after pass 'cse': <verifier message>"; and with dump_after equal to the
 * pass name or "all" writes dump_dir/NN-<pass>.ir (ir_print with data
 * summarized) and NN-<pass>.dot, where NN is the pass's 1-based position in
 * the pipeline.  Unknown pass names in the options are errors.
 * The placement passes (place, partition; REQ_PLACEMENT) are a table of
 * their own, run after dce only when PipelineOptions.place is set; without
 * it the pipeline, its dump numbers and the output are as before.  Passes
 * themselves never print, read flags or the environment.
 * Regions (ir.h): each pass runs on every graph of the region tree, in
 * post-order (a region op's regions, innermost first, before the graph that
 * holds it), so fold, cse and dce work inside loop bodies and branches and
 * memplan sizes a region op's workspace from its regions' arenas.  The tree
 * is walked again for every pass (fold may inline a COND: its branches leave
 * the tree).  Verification and dumps cover the whole tree once per pass
 * (ir_verify recurses into regions).
 * Invariants: the table order is the run order; a failed pass stops the run.
 */
#include "passes/passes.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

static const PassInfo pipeline[] = {
    /* name      function      requires                invalidates */
    {"state", pass_state, REQ_TOPO | REQ_SHAPES, INV_PLAN},
    {"fold", pass_fold, REQ_TOPO | REQ_SHAPES, INV_PLAN},
    {"cse", pass_cse, REQ_TOPO | REQ_SHAPES, INV_PLAN},
    {"dce", pass_dce, REQ_TOPO, INV_PLAN},
    {"layout", pass_layout, REQ_TOPO | REQ_SHAPES, INV_PLAN},
    {"fuse", pass_fuse, REQ_TOPO | REQ_SHAPES, INV_PLAN},
    {"winograd", pass_winograd, REQ_TOPO | REQ_SHAPES, INV_PLAN},
    {"pack", pass_pack, REQ_TOPO | REQ_SHAPES, INV_PLAN},
    {"dwfuse", pass_dwfuse, REQ_TOPO | REQ_SHAPES, INV_PLAN},
    {"pair", pass_pair, REQ_TOPO | REQ_SHAPES, INV_PLAN},
    {"memplan", pass_memplan, REQ_TOPO | REQ_SHAPES, INV_NONE},
};

/* Placement (docs/devices.md): part of the pipeline only when
 * PipelineOptions.place is set, right after PLACEMENT_AFTER. */
static const PassInfo placement[] = {
    {"place", pass_place, REQ_TOPO | REQ_SHAPES | REQ_PLACEMENT, INV_PLAN},
    {"partition", pass_partition, REQ_TOPO | REQ_SHAPES | REQ_PLACEMENT, INV_PLAN},
};
#define PLACEMENT_AFTER "dce"
#define N_PLACEMENT ((int)(sizeof placement / sizeof placement[0]))

const PassInfo *pass_pipeline(int *n)
{
    if (n)
        *n = (int)(sizeof pipeline / sizeof pipeline[0]);
    return pipeline;
}

PassResult pass_finish_rewrite(IrGraph *g, PassCtx *cx, bool fold, bool changed)
{
    g->fold_on_build = fold;
    if (!st_ok(cx->st))
        return PASS_FAILED;
    if (changed)
        ir_graph_compact(g);
    return changed ? PASS_CHANGED : PASS_SAME;
}

const PassInfo *pass_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof pipeline / sizeof pipeline[0]; i++)
        if (strcmp(pipeline[i].name, name) == 0)
            return &pipeline[i];
    for (int i = 0; i < N_PLACEMENT; i++)
        if (strcmp(placement[i].name, name) == 0)
            return &placement[i];
    return NULL;
}

static bool is_disabled(const PipelineOptions *o, const char *name)
{
    for (int i = 0; o && i < o->n_disabled; i++)
        if (o->disabled[i] && strcmp(o->disabled[i], name) == 0)
            return true;
    return false;
}

/* mkdir -p: creates every missing component of path. */
static bool make_dirs(const char *path, Status *st)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return st_errorf(st, ST_IO, "dump directory '%s': bad path", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return st_errorf(st, ST_IO, "cannot create dump directory '%s': %s", buf,
                                 strerror(errno));
            buf[i] = c;
        }
    }
    return true;
}

static bool write_dump(const IrGraph *g, const char *dir, int pos, const char *pass, Status *st)
{
    if (!make_dirs(dir, st))
        return false;
    const char *ext[2] = {"ir", "dot"};
    for (int k = 0; k < 2; k++) {
        char path[4096];
        int len = snprintf(path, sizeof path, "%s/%02d-%s.%s", dir, pos, pass, ext[k]);
        if (len < 0 || (size_t)len >= sizeof path)
            return st_errorf(st, ST_IO, "dump path too long in '%s'", dir);
        FILE *f = fopen(path, "w");
        if (!f)
            return st_errorf(st, ST_IO, "cannot write '%s': %s", path, strerror(errno));
        if (k == 0)
            ir_print(g, f, false);
        else
            ir_print_dot(g, f);
        if (fclose(f) != 0)
            return st_errorf(st, ST_IO, "cannot write '%s': %s", path, strerror(errno));
    }
    return true;
}

static bool wants_dump(const PipelineOptions *o, const char *name)
{
    return o && o->dump_after && o->dump_dir &&
           (strcmp(o->dump_after, "all") == 0 || strcmp(o->dump_after, name) == 0);
}

/* Names the passes for an error message: "fold, cse, dce, layout, ...". */
static void pass_names(char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof pipeline / sizeof pipeline[0]; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", pipeline[i].name);
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
    }
}

static bool check_names(const PipelineOptions *o, Status *st)
{
    char names[256];
    pass_names(names, sizeof names);
    if (o->dump_after && strcmp(o->dump_after, "all") != 0 && !pass_find(o->dump_after))
        return st_errorf(st, ST_ERROR, "--dump-after: unknown pass '%s' (passes: %s, or all)",
                         o->dump_after, names);
    for (int i = 0; i < o->n_disabled; i++)
        if (!o->disabled[i] || !pass_find(o->disabled[i]))
            return st_errorf(st, ST_ERROR, "--disable-pass: unknown pass '%s' (passes: %s)",
                             o->disabled[i] ? o->disabled[i] : "", names);
    return true;
}

/* Graph list of a region tree in post-order (regions before the graph that
 * holds them), grown in an arena of its own. */
typedef struct GraphList {
    IrGraph **items;
    int n, cap;
} GraphList;

static bool list_push(GraphList *l, IrGraph *g, Arena *ar)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        IrGraph **items = arena_alloc(ar, sizeof(IrGraph *) * (size_t)cap);
        if (!items)
            return false;
        if (l->n)
            memcpy(items, l->items, sizeof(IrGraph *) * (size_t)l->n);
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = g;
    return true;
}

/* Appends g's regions (recursively, innermost first), then g.  Only regions
 * of live nodes count, each once (ir_inline_region shares nested regions);
 * depth is bounded by IR_MAX_REGION_DEPTH. */
static bool collect_tree(IrGraph *g, GraphList *l, Arena *ar, int depth, Status *st)
{
    if (depth > IR_MAX_REGION_DEPTH)
        return st_errorf(st, ST_ERROR, "control flow nested more than %d deep (the limit)",
                         IR_MAX_REGION_DEPTH);
    for (int i = 0; i < l->n; i++)
        if (l->items[i] == g)
            return true;
    IR_FOR_EACH(g, n) {
        for (int k = 0; k < n->n_regions; k++)
            if (n->regions[k] && !collect_tree(n->regions[k], l, ar, depth + 1, st))
                return false;
    }
    if (!list_push(l, g, ar))
        return st_errorf(st, ST_NOMEM, "pass manager: out of memory");
    return true;
}

/* Runs one pass on every graph of g's tree (post-order); PASS_CHANGED if it
 * changed any. */
static PassResult run_on_tree(const PassInfo *pi, IrGraph *g, const PipelineOptions *o, Status *st)
{
    Arena list_ar;
    arena_init(&list_ar, g->arena.a);
    GraphList l = {NULL, 0, 0};
    PassResult res = PASS_SAME;
    if (!collect_tree(g, &l, &list_ar, 0, st))
        res = PASS_FAILED;
    for (int i = 0; i < l.n && res != PASS_FAILED; i++) {
        PassCtx cx;
        arena_init(&cx.scratch, g->arena.a);
        cx.st = st;
        cx.place = o ? o->place : NULL;
        PassResult r = pi->fn(l.items[i], &cx);
        arena_reset(&cx.scratch);
        if (r == PASS_FAILED || !st_ok(st))
            res = PASS_FAILED;
        else if (r == PASS_CHANGED)
            res = PASS_CHANGED;
    }
    arena_reset(&list_ar);
    return res;
}

bool pass_run_pipeline(IrGraph *g, const PipelineOptions *o, Status *st)
{
    if (!st_ok(st))
        return false;
    if (o && !check_names(o, st))
        return false;
    int n_table;
    const PassInfo *table = pass_pipeline(&n_table);
    const PassInfo *run[32]; /* this run's passes: the table, plus placement when requested */
    int n = 0;
    for (int i = 0; i < n_table && n < 32 - N_PLACEMENT; i++) {
        run[n++] = &table[i];
        if (o && o->place && !strcmp(table[i].name, PLACEMENT_AFTER))
            for (int k = 0; k < N_PLACEMENT; k++)
                run[n++] = &placement[k];
    }
    bool verify = true;
#ifdef NDEBUG
    verify = o && o->verify_each;
#endif
    for (int i = 0; i < n; i++) {
        const PassInfo *pi = run[i];
        if (is_disabled(o, pi->name))
            continue;
        PassResult r = run_on_tree(pi, g, o, st);
        if (r == PASS_FAILED || !st_ok(st)) {
            if (st_ok(st))
                st_errorf(st, ST_ERROR, "pass '%s' failed", pi->name);
            return false;
        }
        if (r == PASS_CHANGED && verify) {
            Status vst = ST_INIT;
            if (!ir_verify(g, &vst)) {
                size_t len = strlen(vst.msg);
                while (len > 0 && vst.msg[len - 1] == '\n')
                    vst.msg[--len] = '\0';
                return st_errorf(st, vst.code ? vst.code : ST_ERROR, "after pass '%s': %s",
                                 pi->name, vst.msg);
            }
        }
        if (wants_dump(o, pi->name) && !write_dump(g, o->dump_dir, i + 1, pi->name, st))
            return false;
    }
    return true;
}
