/* tests/codegen/test_regions.c - control flow through the passes and the C
 * backend (Check suite "regions").
 *
 * Builds graphs with WHILE and COND regions by hand (ir_region_new,
 * ir_add_feed / ir_add_fetch for the parameters and results,
 * ir_emit_region), runs the pipeline, emits C, builds the standalone
 * executable with tgt_build_exe against the runtime of this build dir, runs
 * it on .npy feeds and compares its .npy results with values derived by
 * hand in the comments.  Also: fold, cse and dce work inside regions, fold
 * inlines a COND on a constant selector, memplan refuses a parent whose
 * regions are not planned.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "passes/passes.h"
#include "targets/targets.h"
#include "tfcc_config.h"

/* ---- helpers ---- */

static const IrType T_I32 = {TCRT_I32, {0, {0}}};
static const IrType T_BOOL = {TCRT_BOOL, {0, {0}}};

static IrType vec_f32(int64_t n)
{
    IrType t = {TCRT_F32, ir_shape_make(1, (int64_t[]){n})};
    return t;
}

static IrValue ci(IrGraph *g, int v, Status *st)
{
    return ir_const_scalar_f(g, TCRT_I32, v, st);
}

static IrValue feed(IrGraph *g, const char *name, IrType t, Status *st)
{
    return ir_add_feed(g, name, &t, st);
}

static IrNode *emit_while(IrGraph *g, const IrValue *init, int n, IrGraph *cond, IrGraph *body,
                          Status *st)
{
    IrGraph *rs[2] = {cond, body};
    IrNode *w = ir_emit_region(g, OP_WHILE, init, n, rs, 2, st);
    ck_assert_msg(w != NULL, "%s", st->msg);
    return w;
}

static int count_op(const IrGraph *g, Op op)
{
    int k = 0;
    IR_FOR_EACH(g, n) {
        if (n->op == op)
            k++;
    }
    return k;
}

/* A model built in a temporary folder. */
typedef struct Model {
    char dir[64];
    char name[32];
    int n_runs;
} Model;

/* Runs the pipeline on g, emits C as `name` and builds the executable. */
static void build(IrGraph *g, const char *name, Model *m)
{
    Status st = ST_INIT;
    ck_assert_msg(pass_run_pipeline(g, NULL, &st), "%s", st.msg);
    snprintf(m->dir, sizeof m->dir, "/tmp/tfcc-rg-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(m->dir));
    snprintf(m->name, sizeof m->name, "%s", name);
    m->n_runs = 0;
    CgOptions o = {.name = name, .source_file = "regions.pbtxt"};
    ck_assert_msg(cgc_emit(g, &o, m->dir, &st), "%s", st.msg);
    char exe[128];
    snprintf(exe, sizeof exe, "%s/%s", m->dir, name);
    ck_assert_msg(tgt_build_exe(tgt_host(), m->dir, name, exe, NULL, &st), "%s", st.msg);
}

static void done(Model *m)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", m->dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* The generated NAME.c (malloc'ed, NUL-terminated). */
static char *source_text(const Model *m)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s.c", m->dir, m->name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* One feed of a run. */
typedef struct Feed {
    const char *name;
    tcrt_dtype dtype;
    int rank;
    int64_t dims[2];
    const void *data;
} Feed;

/* Writes the feeds as .npy, runs the model into a fresh out folder and
 * returns its exit status (0 ok, 1 run-time error).  Results are read with
 * result(). */
static int run_status(Model *m, const Feed *feeds, int n_feeds)
{
    char outdir[128], exe[128];
    snprintf(outdir, sizeof outdir, "%s/out%d", m->dir, ++m->n_runs);
    ck_assert_int_eq(mkdir(outdir, 0755), 0);
    snprintf(exe, sizeof exe, "%s/%s", m->dir, m->name);
    char *argv[16];
    static char args[6][200];
    int k = 0;
    argv[k++] = exe;
    ck_assert_int_le(n_feeds, 6);
    for (int i = 0; i < n_feeds; i++) {
        char path[160];
        snprintf(path, sizeof path, "%s/in%d_%d.npy", m->dir, m->n_runs, i);
        tcrt_tensor t;
        memset(&t, 0, sizeof t);
        t.data = (void *)feeds[i].data;
        t.dtype = feeds[i].dtype;
        t.rank = feeds[i].rank;
        for (int d = 0; d < t.rank; d++)
            t.dims[d] = feeds[i].dims[d];
        char err[256];
        ck_assert_msg(tcrt_npy_write(path, &t, err, sizeof err) == TCRT_OK, "%s", err);
        snprintf(args[i], sizeof args[i], "%s=%s", feeds[i].name, path);
        argv[k++] = "--feed";
        argv[k++] = args[i];
    }
    argv[k++] = "--out-dir";
    argv[k++] = outdir;
    argv[k] = NULL;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void run(Model *m, const Feed *feeds, int n_feeds)
{
    int rc = run_status(m, feeds, n_feeds);
    ck_assert_msg(rc == 0, "%s/%s exited with %d", m->dir, m->name, rc);
}

/* Result `name` of the last run; checks dtype and element count. */
static tcrt_tensor result(const Model *m, const char *name, tcrt_dtype dt, int64_t count)
{
    char fname[64], path[200], err[256];
    tcrt_output_filename(name, fname, sizeof fname);
    snprintf(path, sizeof path, "%s/out%d/%s", m->dir, m->n_runs, fname);
    tcrt_tensor t;
    ck_assert_msg(tcrt_npy_read(path, &t, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(t.dtype, dt);
    ck_assert_int_eq(tcrt_tensor_count(&t), count);
    return t;
}

static int32_t result_i32(const Model *m, const char *name)
{
    tcrt_tensor t = result(m, name, TCRT_I32, 1);
    int32_t v = *(const int32_t *)t.data;
    free(t.data);
    return v;
}

static void check_f32(const Model *m, const char *name, const float *want, int64_t n)
{
    tcrt_tensor t = result(m, name, TCRT_F32, n);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(((const float *)t.data)[i] == want[i], "%s[%lld]: got %g, want %g", name,
                      (long long)i, (double)((const float *)t.data)[i], (double)want[i]);
    free(t.data);
}

static void run_n(Model *m, int32_t n)
{
    Feed f = {"n", TCRT_I32, 0, {0}, &n};
    run(m, &f, 1);
}

/* ---- (a) counter loop ----
 * i = 0; s = 0; while (i < n) { s += i; i += 1; }  with n fed; n is a loop
 * variable the body returns unchanged (loop-invariant).  With extras in the
 * body for the passes: five = 2 + 3 (folds), dead = i * five (unused: dce),
 * t2 = s + i next to t1 = s + i (cse), s' = max(t1, t2) = s + i. */
static IrGraph *counter_graph(bool extras)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    ck_assert_ptr_nonnull(g);
    ir_graph_set_origin(g, "loop", "While");
    IrValue n = feed(g, "n", T_I32, &st);

    IrGraph *cond = ir_region_new(g, &st);
    IrValue ci_ = feed(cond, "i", T_I32, &st);
    feed(cond, "s", T_I32, &st);
    IrValue cn = feed(cond, "n", T_I32, &st);
    ck_assert(ir_add_fetch(cond, "lt", ir_binary(cond, OP_LT, ci_, cn, &st), &st));

    IrGraph *body = ir_region_new(g, &st);
    IrValue bi = feed(body, "i", T_I32, &st);
    IrValue bs = feed(body, "s", T_I32, &st);
    IrValue bn = feed(body, "n", T_I32, &st);
    IrValue s2 = ir_binary(body, OP_ADD, bs, bi, &st);
    if (extras) {
        IrValue five = ir_binary(body, OP_ADD, ci(body, 2, &st), ci(body, 3, &st), &st);
        ir_binary(body, OP_MUL, bi, five, &st); /* dead */
        IrValue t2 = ir_binary(body, OP_ADD, bs, bi, &st);
        s2 = ir_binary(body, OP_MAX, s2, t2, &st);
    }
    ck_assert(ir_add_fetch(body, "i_next", ir_binary(body, OP_ADD, bi, ci(body, 1, &st), &st), &st));
    ck_assert(ir_add_fetch(body, "s_next", s2, &st));
    ck_assert(ir_add_fetch(body, "n", bn, &st));
    ck_assert_msg(st_ok(&st), "%s", st.msg);

    IrValue init[3] = {ci(g, 0, &st), ci(g, 0, &st), n};
    IrNode *w = emit_while(g, init, 3, cond, body, &st);
    ck_assert(ir_add_fetch(g, "i", (IrValue){w, 0}, &st));
    ck_assert(ir_add_fetch(g, "s", (IrValue){w, 1}, &st));
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    return g;
}

START_TEST(test_counter_loop)
{
    IrGraph *g = counter_graph(false);
    Model m;
    build(g, "counter", &m);
    /* n = 5: s = 0+1+2+3+4 = 10, i = 5 */
    run_n(&m, 5);
    ck_assert_int_eq(result_i32(&m, "s"), 10);
    ck_assert_int_eq(result_i32(&m, "i"), 5);
    /* n = 0: the body never runs */
    run_n(&m, 0);
    ck_assert_int_eq(result_i32(&m, "s"), 0);
    ck_assert_int_eq(result_i32(&m, "i"), 0);
    /* n = 100: s = 99*100/2 = 4950 */
    run_n(&m, 100);
    ck_assert_int_eq(result_i32(&m, "s"), 4950);

    /* The contract: region functions named NAME_r<R>, kernels r<R>_k..., the
     * loop-invariant n not copied back. */
    char *src = source_text(&m);
    ck_assert_ptr_nonnull(strstr(src, "static tcrt_status counter_r1(uint8_t *a, const unsigned char *w, "
                                      "uint8_t *const *args)"));
    ck_assert_ptr_nonnull(strstr(src, "static tcrt_status counter_r2("));
    ck_assert_ptr_nonnull(strstr(src, "r2_k"));
    ck_assert_ptr_nonnull(strstr(src, "args[2] unchanged"));
    ck_assert_ptr_nonnull(strstr(src, "TF node: loop (While)"));
    /* deterministic: emitting again gives the same NAME.c */
    Model m2 = m;
    snprintf(m2.dir, sizeof m2.dir, "/tmp/tfcc-rg-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(m2.dir));
    Status st = ST_INIT;
    CgOptions o = {.name = "counter", .source_file = "regions.pbtxt"};
    ck_assert_msg(cgc_emit(g, &o, m2.dir, &st), "%s", st.msg);
    char *src2 = source_text(&m2);
    ck_assert_str_eq(src, src2);
    free(src2);
    done(&m2);
    free(src);
    done(&m);
    ir_graph_free(g);
}
END_TEST

/* fold, cse and dce inside a loop body (counter_graph's extras), then the
 * whole pipeline still computes the same values. */
START_TEST(test_passes_in_regions)
{
    IrGraph *g = counter_graph(true);
    Status st = ST_INIT;
    const char *off[] = {"memplan"};
    char dump[64];
    snprintf(dump, sizeof dump, "/tmp/tfcc-rg-dump-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dump));
    PipelineOptions po = {.disabled = off, .n_disabled = 1, .dump_after = "dce", .dump_dir = dump};
    ck_assert_msg(pass_run_pipeline(g, &po, &st), "%s", st.msg);
    /* --dump-after writes the tree once per pass (04-dce.ir: the root and its while) */
    char path[128], line[512];
    snprintf(path, sizeof path, "%s/04-dce.ir", dump);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no dump %s", path);
    bool has_while = false;
    while (fgets(line, sizeof line, f))
        has_while |= strstr(line, "= while(") != NULL;
    fclose(f);
    ck_assert(has_while);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dump);
    ck_assert_int_eq(system(cmd), 0);
    IrNode *w = NULL;
    IR_FOR_EACH(g, n) {
        if (n->op == OP_WHILE)
            w = n;
    }
    ck_assert_ptr_nonnull(w);
    const IrGraph *body = w->regions[1];
    ck_assert_int_eq(count_op(body, OP_MUL), 0); /* dce */
    ck_assert_int_eq(count_op(body, OP_ADD), 2); /* cse merged t1, t2; 2 + 3 folded; i + 1 */
    IR_FOR_EACH(body, n) {
        if (n->op == OP_ADD)
            ck_assert(n->inputs[0].node->op != OP_CONST || n->inputs[1].node->op != OP_CONST);
        if (n->op == OP_MAX)
            ck_assert_ptr_eq(n->inputs[0].node, n->inputs[1].node);
    }
    Model m;
    build(g, "counter2", &m);
    run_n(&m, 5);
    ck_assert_int_eq(result_i32(&m, "s"), 10);
    done(&m);
    ir_graph_free(g);
}
END_TEST

/* memplan plans regions before their parent; alone on the parent it
 * reports the unplanned region. */
START_TEST(test_memplan_needs_planned_regions)
{
    IrGraph *g = counter_graph(false);
    Status st = ST_INIT;
    PassCtx cx;
    arena_init(&cx.scratch, NULL);
    cx.st = &st;
    ck_assert_int_eq(pass_memplan(g, &cx), PASS_FAILED);
    arena_reset(&cx.scratch);
    ck_assert_ptr_nonnull(strstr(st.msg, "node 'loop' (while): region 0 is not planned"));
    ir_graph_free(g);
}
END_TEST

/* ---- (b) nested loops ----
 * acc = 0; for (i = 0; i < 3; i++) for (j = 0; j < 4; j++) acc += i * j;
 * acc = (0+1+2) * (0+1+2+3) = 3 * 6 = 18.  The inner loop's j starts from a
 * constant inside the outer body, its bound 4 is a constant inside the
 * inner cond (weights of regions). */
START_TEST(test_nested_loops)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    ir_graph_set_origin(g, "outer", "While");

    IrGraph *oc = ir_region_new(g, &st);
    IrValue oci = feed(oc, "i", T_I32, &st);
    feed(oc, "acc", T_I32, &st);
    ck_assert(ir_add_fetch(oc, "lt", ir_binary(oc, OP_LT, oci, ci(oc, 3, &st), &st), &st));

    IrGraph *ob = ir_region_new(g, &st);
    IrValue obi = feed(ob, "i", T_I32, &st);
    IrValue obacc = feed(ob, "acc", T_I32, &st);
    ir_graph_set_origin(ob, "inner", "While");
    IrGraph *ic = ir_region_new(ob, &st);
    IrValue icj = feed(ic, "j", T_I32, &st);
    feed(ic, "acc", T_I32, &st);
    feed(ic, "i", T_I32, &st);
    ck_assert(ir_add_fetch(ic, "lt", ir_binary(ic, OP_LT, icj, ci(ic, 4, &st), &st), &st));
    IrGraph *ib = ir_region_new(ob, &st);
    IrValue ibj = feed(ib, "j", T_I32, &st);
    IrValue ibacc = feed(ib, "acc", T_I32, &st);
    IrValue ibi = feed(ib, "i", T_I32, &st);
    ck_assert(ir_add_fetch(ib, "j", ir_binary(ib, OP_ADD, ibj, ci(ib, 1, &st), &st), &st));
    IrValue prod = ir_binary(ib, OP_MUL, ibi, ibj, &st);
    ck_assert(ir_add_fetch(ib, "acc", ir_binary(ib, OP_ADD, ibacc, prod, &st), &st));
    ck_assert(ir_add_fetch(ib, "i", ibi, &st));
    IrValue iinit[3] = {ci(ob, 0, &st), obacc, obi};
    IrNode *inner = emit_while(ob, iinit, 3, ic, ib, &st);
    ck_assert(ir_add_fetch(ob, "i", ir_binary(ob, OP_ADD, obi, ci(ob, 1, &st), &st), &st));
    ck_assert(ir_add_fetch(ob, "acc", (IrValue){inner, 1}, &st));

    IrValue oinit[2] = {ci(g, 0, &st), ci(g, 0, &st)};
    IrNode *outer = emit_while(g, oinit, 2, oc, ob, &st);
    ck_assert(ir_add_fetch(g, "acc", (IrValue){outer, 1}, &st));
    ck_assert(ir_add_fetch(g, "i", (IrValue){outer, 0}, &st));
    ck_assert_msg(st_ok(&st), "%s", st.msg);

    Model m;
    build(g, "nested", &m);
    /* The outer body's workspace holds the inner loop's regions' arena. */
    ck_assert_int_ge(outer->workspace_bytes, ob->arena_bytes);
    ck_assert_int_ge(inner->workspace_bytes, ib->arena_bytes);
    run(&m, NULL, 0);
    ck_assert_int_eq(result_i32(&m, "acc"), 18);
    ck_assert_int_eq(result_i32(&m, "i"), 3);
    char *src = source_text(&m);
    /* pre-order numbering: r1 outer cond, r2 outer body, r3/r4 inner */
    ck_assert_ptr_nonnull(strstr(src, "nested_r4(ra, w, rargs)"));
    ck_assert(strstr(src, "static tcrt_status nested_r4(") < strstr(src, "static tcrt_status nested_r2("));
    free(src);
    done(&m);
    ir_graph_free(g);
}
END_TEST

/* ---- (c) a cond inside a loop body ----
 * x = 0; for (i = 0; i < n; i++) x = (i % 2 == 0) ? x + i : x - 1;
 * i: 0 -> 0, 1 -> -1, 2 -> 1, 3 -> 0, 4 -> 4, 5 -> 3 (n = 6), 6 -> 9 (n = 7). */
START_TEST(test_cond_in_loop)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    IrValue n = feed(g, "n", T_I32, &st);
    ir_graph_set_origin(g, "loop", "While");
    IrGraph *cond = ir_region_new(g, &st);
    IrValue ci_ = feed(cond, "i", T_I32, &st);
    feed(cond, "x", T_I32, &st);
    IrValue cn = feed(cond, "n", T_I32, &st);
    ck_assert(ir_add_fetch(cond, "lt", ir_binary(cond, OP_LT, ci_, cn, &st), &st));

    IrGraph *body = ir_region_new(g, &st);
    IrValue bi = feed(body, "i", T_I32, &st);
    IrValue bx = feed(body, "x", T_I32, &st);
    IrValue bn = feed(body, "n", T_I32, &st);
    IrValue even = ir_binary(body, OP_EQ, ir_binary(body, OP_FLOORMOD, bi, ci(body, 2, &st), &st),
                             ci(body, 0, &st), &st);
    ir_graph_set_origin(body, "pick", "If");
    IrGraph *br[2];
    for (int k = 0; k < 2; k++) {
        br[k] = ir_region_new(body, &st);
        IrValue x = feed(br[k], "x", T_I32, &st);
        IrValue i = feed(br[k], "i", T_I32, &st);
        IrValue r = k == 0 ? ir_binary(br[k], OP_ADD, x, i, &st)
                           : ir_binary(br[k], OP_SUB, x, ci(br[k], 1, &st), &st);
        ck_assert(ir_add_fetch(br[k], "x", r, &st));
    }
    IrValue cin[3] = {even, bx, bi};
    IrNode *c = ir_emit_region(body, OP_COND, cin, 3, br, 2, &st);
    ck_assert_msg(c != NULL, "%s", st.msg);
    ck_assert(ir_add_fetch(body, "i", ir_binary(body, OP_ADD, bi, ci(body, 1, &st), &st), &st));
    ck_assert(ir_add_fetch(body, "x", (IrValue){c, 0}, &st));
    ck_assert(ir_add_fetch(body, "n", bn, &st));
    IrValue init[3] = {ci(g, 0, &st), ci(g, 0, &st), n};
    IrNode *w = emit_while(g, init, 3, cond, body, &st);
    ck_assert(ir_add_fetch(g, "x", (IrValue){w, 1}, &st));
    ck_assert_msg(st_ok(&st), "%s", st.msg);

    Model m;
    build(g, "condloop", &m);
    run_n(&m, 6);
    ck_assert_int_eq(result_i32(&m, "x"), 3);
    run_n(&m, 7);
    ck_assert_int_eq(result_i32(&m, "x"), 9);
    run_n(&m, 1);
    ck_assert_int_eq(result_i32(&m, "x"), 0);
    done(&m);
    ir_graph_free(g);
}
END_TEST

/* ---- (d) COND on a bool and on an int32 selector ----
 * x f32[3] fed.  b = sel ? x * 2 : x (branch 1 returns its parameter: a
 * copy).  k = case(idx): 0: x + 1, 1: x * x, else (2 and out of range):
 * the constant {7, 8, 9} (a copy too). */
START_TEST(test_cond_selectors)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    IrValue sel = feed(g, "sel", T_BOOL, &st);
    IrValue idx = feed(g, "idx", T_I32, &st);
    IrValue x = feed(g, "x", vec_f32(3), &st);
    ir_graph_set_origin(g, "b", "If");
    IrGraph *bb[2];
    for (int k = 0; k < 2; k++) {
        bb[k] = ir_region_new(g, &st);
        IrValue p = feed(bb[k], "x", vec_f32(3), &st);
        IrValue r = k == 0 ? ir_binary(bb[k], OP_MUL, p, ir_const_scalar_f(bb[k], TCRT_F32, 2, &st), &st) : p;
        ck_assert(ir_add_fetch(bb[k], "y", r, &st));
    }
    IrValue bin[2] = {sel, x};
    IrNode *b = ir_emit_region(g, OP_COND, bin, 2, bb, 2, &st);
    ck_assert_msg(b != NULL, "%s", st.msg);
    ir_graph_set_origin(g, "k", "Case");
    IrGraph *kb[3];
    for (int k = 0; k < 3; k++) {
        kb[k] = ir_region_new(g, &st);
        IrValue p = feed(kb[k], "x", vec_f32(3), &st);
        IrShape s3 = ir_shape_make(1, (int64_t[]){3});
        IrValue r = k == 0   ? ir_binary(kb[k], OP_ADD, p, ir_const_scalar_f(kb[k], TCRT_F32, 1, &st), &st)
                    : k == 1 ? ir_binary(kb[k], OP_MUL, p, p, &st)
                             : ir_const(kb[k], TCRT_F32, &s3, (float[]){7, 8, 9}, &st);
        ck_assert(ir_add_fetch(kb[k], "y", r, &st));
    }
    IrValue kin[2] = {idx, x};
    IrNode *kc = ir_emit_region(g, OP_COND, kin, 2, kb, 3, &st);
    ck_assert_msg(kc != NULL, "%s", st.msg);
    ck_assert(ir_add_fetch(g, "b", (IrValue){b, 0}, &st));
    ck_assert(ir_add_fetch(g, "k", (IrValue){kc, 0}, &st));
    ck_assert_msg(st_ok(&st), "%s", st.msg);

    Model m;
    build(g, "conds", &m);
    static const float xv[3] = {1, 2, 3};
    static const struct {
        uint8_t sel;
        int32_t idx;
        float b[3], k[3];
    } cases[] = {
        {1, 0, {2, 4, 6}, {2, 3, 4}},   /* x*2; x+1 */
        {0, 1, {1, 2, 3}, {1, 4, 9}},   /* x;   x*x */
        {1, 2, {2, 4, 6}, {7, 8, 9}},   /* x*2; const */
        {0, 9, {1, 2, 3}, {7, 8, 9}},   /* out of range: last branch */
        {1, -1, {2, 4, 6}, {7, 8, 9}},  /* negative: last branch */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Feed f[3] = {
            {"sel", TCRT_BOOL, 0, {0}, &cases[i].sel},
            {"idx", TCRT_I32, 0, {0}, &cases[i].idx},
            {"x", TCRT_F32, 1, {3}, xv},
        };
        run(&m, f, 3);
        check_f32(&m, "b", cases[i].b, 3);
        check_f32(&m, "k", cases[i].k, 3);
    }
    char *src = source_text(&m);
    ck_assert_ptr_nonnull(strstr(src, "switch ("));
    ck_assert_ptr_nonnull(strstr(src, "default: /* branch 2"));
    free(src);
    done(&m);
    ir_graph_free(g);
}
END_TEST

/* ---- (e) update_slice in a loop ----
 * buf = zeros f32[5,2]; for (i = 0; i < n; i++) buf[i, :] = [i, 2i]
 * (update = float(i) * [[1, 2]], start = i * [1, 0] = [i, 0]), n fed.
 * n = 5: buf = [[0,0],[1,2],[2,4],[3,6],[4,8]].  n = 6: row 5 does not
 * exist, update_slice fails at run time inside the body and the error
 * reaches the caller (exit status 1). */
START_TEST(test_update_slice_loop)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    IrType bt = {TCRT_F32, ir_shape_make(2, (int64_t[]){5, 2})};
    IrValue n = feed(g, "n", T_I32, &st);
    ir_graph_set_origin(g, "fill", "While");
    IrGraph *cond = ir_region_new(g, &st);
    IrValue ci_ = feed(cond, "i", T_I32, &st);
    feed(cond, "buf", bt, &st);
    IrValue cn = feed(cond, "n", T_I32, &st);
    ck_assert(ir_add_fetch(cond, "lt", ir_binary(cond, OP_LT, ci_, cn, &st), &st));
    IrGraph *body = ir_region_new(g, &st);
    IrValue bi = feed(body, "i", T_I32, &st);
    IrValue bbuf = feed(body, "buf", bt, &st);
    IrValue bn = feed(body, "n", T_I32, &st);
    IrShape s12 = ir_shape_make(2, (int64_t[]){1, 2});
    IrValue upd = ir_binary(body, OP_MUL, ir_cast(body, bi, TCRT_F32, &st),
                            ir_const(body, TCRT_F32, &s12, (float[]){1, 2}, &st), &st);
    IrValue start = ir_binary(body, OP_MUL, bi, ir_const_i64s(body, TCRT_I32, (int64_t[]){1, 0}, 2, &st), &st);
    ir_graph_set_origin(body, "fill/update", "TensorScatterUpdate");
    IrValue us_in[3] = {bbuf, upd, start};
    IrValue nb = ir_emit1(body, OP_UPDATE_SLICE, us_in, 3, NULL, NULL, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(ir_add_fetch(body, "i", ir_binary(body, OP_ADD, bi, ci(body, 1, &st), &st), &st));
    ck_assert(ir_add_fetch(body, "buf", nb, &st));
    ck_assert(ir_add_fetch(body, "n", bn, &st));
    static const float zeros[10];
    IrValue init[3] = {ci(g, 0, &st), ir_const(g, TCRT_F32, &bt.shape, zeros, &st), n};
    IrNode *w = emit_while(g, init, 3, cond, body, &st);
    ck_assert(ir_add_fetch(g, "buf", (IrValue){w, 1}, &st));
    ck_assert_msg(st_ok(&st), "%s", st.msg);

    Model m;
    build(g, "fill", &m);
    run_n(&m, 5);
    static const float want[10] = {0, 0, 1, 2, 2, 4, 3, 6, 4, 8};
    check_f32(&m, "buf", want, 10);
    int32_t six = 6;
    Feed f6 = {"n", TCRT_I32, 0, {0}, &six};
    ck_assert_int_eq(run_status(&m, &f6, 1), 1);
    char *src = source_text(&m);
    ck_assert_ptr_nonnull(strstr(src, "tcrt_ref_update_slice"));
    free(src);
    done(&m);
    ir_graph_free(g);
}
END_TEST

/* ---- (f) a COND on a constant selector is inlined by fold ----
 * x f32[2] = {2, 5} fed.  c1 = true ? x + 1 : x - 1 = {3, 6};
 * c2 = case(7) over {x * 3, x * x}: out of range -> last = {4, 25}. */
START_TEST(test_const_selector_inlined)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    IrValue x = feed(g, "x", vec_f32(2), &st);
    IrGraph *b1[2], *b2[2];
    for (int k = 0; k < 2; k++) {
        b1[k] = ir_region_new(g, &st);
        IrValue p = feed(b1[k], "x", vec_f32(2), &st);
        IrValue one = ir_const_scalar_f(b1[k], TCRT_F32, 1, &st);
        ck_assert(ir_add_fetch(b1[k], "y", ir_binary(b1[k], k == 0 ? OP_ADD : OP_SUB, p, one, &st), &st));
        b2[k] = ir_region_new(g, &st);
        IrValue q = feed(b2[k], "x", vec_f32(2), &st);
        IrValue r = k == 0 ? ir_binary(b2[k], OP_MUL, q, ir_const_scalar_f(b2[k], TCRT_F32, 3, &st), &st)
                           : ir_binary(b2[k], OP_MUL, q, q, &st);
        ck_assert(ir_add_fetch(b2[k], "y", r, &st));
    }
    IrShape scalar = ir_shape_make(0, NULL);
    IrValue in1[2] = {ir_const(g, TCRT_BOOL, &scalar, (uint8_t[]){1}, &st), x};
    IrNode *c1 = ir_emit_region(g, OP_COND, in1, 2, b1, 2, &st);
    IrValue in2[2] = {ci(g, 7, &st), x};
    IrNode *c2 = ir_emit_region(g, OP_COND, in2, 2, b2, 2, &st);
    ck_assert_msg(c1 && c2, "%s", st.msg);
    ck_assert(ir_add_fetch(g, "c1", (IrValue){c1, 0}, &st));
    ck_assert(ir_add_fetch(g, "c2", (IrValue){c2, 0}, &st));
    ck_assert_msg(st_ok(&st), "%s", st.msg);

    Model m;
    build(g, "inlined", &m);
    ck_assert_int_eq(count_op(g, OP_COND), 0);
    ck_assert_int_eq(count_op(g, OP_SUB), 0); /* branch 1 of c1 not taken */
    static const float xv[2] = {2, 5}, w1[2] = {3, 6}, w2[2] = {4, 25};
    Feed f = {"x", TCRT_F32, 1, {2}, xv};
    run(&m, &f, 1);
    check_f32(&m, "c1", w1, 2);
    check_f32(&m, "c2", w2, 2);
    char *src = source_text(&m);
    ck_assert_ptr_null(strstr(src, "inlined_r1"));
    free(src);
    done(&m);
    ir_graph_free(g);
}
END_TEST

/* ---- (g) an f32 loop-invariant operand; loop variables that swap ----
 * acc = 0[4]; for (i = 0; i < 3; i++) acc += v;  v fed {1,2,3,4} passes
 * through the body unchanged (no copy-back): acc = 3v = {3,6,9,12}, v out =
 * v.  Also p, q = 10, 20 swap every iteration (the body returns its
 * parameters 2 and 1 as results 1 and 2: copies, or the second copy-back
 * would read the first's result): after 3 swaps p = 20, q = 10. */
START_TEST(test_invariant_and_swap)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    IrValue v = feed(g, "v", vec_f32(4), &st);
    ir_graph_set_origin(g, "acc_loop", "While");
    const char *names[5] = {"i", "p", "q", "acc", "v"};
    IrType types[5] = {T_I32, T_I32, T_I32, vec_f32(4), vec_f32(4)};
    IrGraph *cond = ir_region_new(g, &st), *body = ir_region_new(g, &st);
    IrValue cp[5], bp[5];
    for (int k = 0; k < 5; k++) {
        cp[k] = feed(cond, names[k], types[k], &st);
        bp[k] = feed(body, names[k], types[k], &st);
    }
    ck_assert(ir_add_fetch(cond, "lt", ir_binary(cond, OP_LT, cp[0], ci(cond, 3, &st), &st), &st));
    ck_assert(ir_add_fetch(body, "i", ir_binary(body, OP_ADD, bp[0], ci(body, 1, &st), &st), &st));
    ck_assert(ir_add_fetch(body, "p", bp[2], &st));
    ck_assert(ir_add_fetch(body, "q", bp[1], &st));
    ck_assert(ir_add_fetch(body, "acc", ir_binary(body, OP_ADD, bp[3], bp[4], &st), &st));
    ck_assert(ir_add_fetch(body, "v", bp[4], &st));
    static const float zeros[4];
    IrShape s4 = ir_shape_make(1, (int64_t[]){4});
    IrValue init[5] = {ci(g, 0, &st), ci(g, 10, &st), ci(g, 20, &st), ir_const(g, TCRT_F32, &s4, zeros, &st), v};
    IrNode *w = emit_while(g, init, 5, cond, body, &st);
    for (int k = 1; k < 5; k++)
        ck_assert(ir_add_fetch(g, names[k], (IrValue){w, k}, &st));
    ck_assert_msg(st_ok(&st), "%s", st.msg);

    Model m;
    build(g, "invariant", &m);
    /* the swapped results got copies; the invariant v did not */
    ck_assert_int_eq(body->fetches[1].value.node->op, OP_COPY);
    ck_assert_int_eq(body->fetches[2].value.node->op, OP_COPY);
    ck_assert_int_eq(body->fetches[4].value.node->op, OP_ARG);
    static const float vv[4] = {1, 2, 3, 4}, want[4] = {3, 6, 9, 12};
    Feed f = {"v", TCRT_F32, 1, {4}, vv};
    run(&m, &f, 1);
    check_f32(&m, "acc", want, 4);
    check_f32(&m, "v", vv, 4);
    ck_assert_int_eq(result_i32(&m, "p"), 20);
    ck_assert_int_eq(result_i32(&m, "q"), 10);
    char *src = source_text(&m);
    ck_assert_ptr_nonnull(strstr(src, "loop-invariant (the body returns args[4] unchanged)"));
    free(src);
    done(&m);
    ir_graph_free(g);
}
END_TEST

static Suite *regions_suite(void)
{
    Suite *s = suite_create("regions");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_counter_loop);
    tcase_add_test(tc, test_passes_in_regions);
    tcase_add_test(tc, test_memplan_needs_planned_regions);
    tcase_add_test(tc, test_nested_loops);
    tcase_add_test(tc, test_cond_in_loop);
    tcase_add_test(tc, test_cond_selectors);
    tcase_add_test(tc, test_update_slice_loop);
    tcase_add_test(tc, test_const_selector_inlined);
    tcase_add_test(tc, test_invariant_and_swap);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(regions_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
