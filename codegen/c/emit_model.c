/* codegen/c/emit_model.c - the C backend's driver: writes a model's files.
 *
 * cgc_emit takes a planned graph (passes/memplan.c done) and writes, in dir:
 *   NAME.h             the user API from a template (DESIGN.md "Artifacts"),
 *                      with usage, signature and memory stats in its comment;
 *   NAME.c             one static kernel per live non-leaf node, in schedule
 *                      order, named k<NNN>_<op> (NNN = schedule position);
 *                      elementwise nodes memplan marked PASS_OFFSET_FUSED are
 *                      computed inside their consumer's kernel, named after
 *                      the whole chain (k012_add_sub_mul_add_relu); then
 *                      NAME_run_arena calling them with `arena + offset` and
 *                      `NAME_weights + offset` pointers, the tcrt_model
 *                      descriptor NAME_model and the API functions;
 *                      each top-level call sits between TFCC_T0() and
 *                      TFCC_T1(i), the --profile hooks (tcrt_prof_ns),
 *                      and NAME_kernels names the calls;
 *   NAME_weights.bin   every used CONST at its planned offset, zero padded;
 *   NAME_weights.S     .incbin of the .bin into .rodata (symbol NAME_weights);
 *   NAME_main.c        main() calling tcrt_main(&NAME_model, ...).
 * Elementwise kernels come from emit_elem.c, the others from emit_call.c.
 * Regions (WHILE, COND; docs/control-flow.md): every region of the tree,
 * numbered R = 1.. in pre-order, becomes
 *   static tcrt_status NAME_r<R>(uint8_t *a, const unsigned char *w, uint8_t *const *args)
 * running its kernels r<R>_k<NNN>_<ops> on arena a (the caller's base plus
 * the region op's workspace offset), with constants at w + offset and its
 * parameter i read through args[i] (memplan gives region ARGs no buffer).
 * Region functions come after the top-level kernels, nested ones first.
 * The caller emits a region op inline as a block: a WHILE copies its
 * operands into its outputs (the loop state, which are the body's args),
 * then loops { cond; break if false; body; copy the body's results back,
 * skipping a pass-through ARG i }; a COND passes its data operands as args,
 * switches on the selector (int32 out of range: the last branch) and copies
 * the branch's results into its outputs.  Kernel errors return through
 * TFCC_TRY from any depth.
 * Invariants: the output depends only on the graph and the options (node
 * order, no pointers, no timestamps, the source file's base name only), so
 * emitting twice gives identical bytes; weights never become C literals;
 * NAME_run never allocates.
 */
#include "codegen/cg_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A region of the tree, numbered in pre-order from 1: its function is
 * NAME_r<number>, its kernels r<number>_k<NNN>_<ops>. */
typedef struct RegionInfo {
    const IrGraph *g;
    const IrNode *owner;          /* the WHILE or COND holding it */
    int index;                    /* which of owner's regions */
    bool is_emitted;              /* its function is written (a region shared by two ops: once) */
} RegionInfo;

typedef struct Ctx {
    const IrGraph *g;
    const char *name;             /* model prefix */
    char uname[128];              /* upper-case prefix for macros */
    char source[256];             /* base name of the source file, comment-safe */
    const char *dir;
    CgIo *args, *results, *vars;  /* vars: VARIABLE nodes (name = origin), in node order */
    int n_args, n_results, n_vars;
    RegionInfo *rgs;              /* every region of the tree, pre-order */
    int n_rgs;
    const PassCluster *cluster; /* --cluster, or NULL */
    bool mpi;                   /* cgc_needs_mpi: per-rank dispatch and MPI transfers */
    bool trunc16;               /* --transfer-compress trunc16 (float32 transfers between tasks) */
    bool dp;                    /* has ALLREDUCE (--data-parallel): MPI main, any world size */
    Status *st;
} Ctx;

static bool is_c_ident(const char *s)
{
    if (!s || !s[0] || isdigit((unsigned char)s[0]))
        return false;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_')
            return false;
    return true;
}

static const char *type_or_void(tcrt_dtype dt)
{
    const char *t = cg_c_type(dt);
    return t ? t : "void";
}

static FILE *open_out(Ctx *c, const char *suffix, const char *mode, char *path, size_t n)
{
    int len = snprintf(path, n, "%s/%s%s", c->dir, c->name, suffix);
    if (len < 0 || (size_t)len >= n) {
        st_errorf(c->st, ST_IO, "output path too long: '%s/%s%s'", c->dir, c->name, suffix);
        return NULL;
    }
    FILE *f = fopen(path, mode);
    if (!f)
        st_errorf(c->st, ST_IO, "cannot write '%s': %s", path, strerror(errno));
    return f;
}

static bool close_out(Ctx *c, FILE *f, const char *path)
{
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad)
        return st_errorf(c->st, ST_IO, "cannot write '%s': %s", path, strerror(errno));
    return true;
}

/* ---- checks and names ---- */

static bool value_in_range(const IrValue v, int64_t limit)
{
    const IrOut *out = &v.node->out[v.index];
    return out->offset >= 0 && out->offset + (int64_t)ir_type_bytes(&out->type) <= limit;
}

/* Checks g's plan (and its regions', recursively): buffers inside g's
 * arena, CONST data inside the weights, region ops' workspaces hold their
 * regions' arenas, results have buffers.  owner/region: the region op and
 * region index g belongs to (NULL for the root). */
static bool check_graph_plan(Ctx *c, const IrGraph *g, const IrNode *owner, int region, int depth)
{
    const char *hint = "graph is not memory-planned (run the memplan pass before codegen)";
    int64_t weights = c->g->weights_bytes;
    if (depth > IR_MAX_REGION_DEPTH)
        return st_errorf(c->st, ST_ERROR, "control flow nested more than %d deep (the limit)",
                         IR_MAX_REGION_DEPTH);
    IR_FOR_EACH(g, n) {
        if (n->op == OP_CONST || cg_is_region_arg(g, n))
            continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (cg_is_fused(n->inputs[k].node) && (ir_op_info(n->op)->kind != K_ELEM ||
                                                 ir_op_info(n->inputs[k].node->op)->kind != K_ELEM))
                return st_errorf(c->st, ST_ERROR, "node '%s' (%s) input %d: fused into a non-elementwise node",
                                 n->origin ? n->origin : "?", ir_op_name(n->op), k);
        if (cg_is_fused(n))
            continue;
        for (int k = 0; k < n->n_outputs; k++)
            if (!value_in_range((IrValue){n, k}, g->arena_bytes))
                return st_errorf(c->st, ST_ERROR, "node '%s' (%s) output %d: %s",
                                 n->origin ? n->origin : "?", ir_op_name(n->op), k, hint);
        for (int k = 0; k < n->n_inputs; k++) {
            IrValue v = n->inputs[k];
            if (cg_is_fused(v.node) || cg_is_region_arg(g, v.node))
                continue;
            int64_t limit = v.node->op == OP_CONST ? weights : g->arena_bytes;
            if (!value_in_range(v, limit))
                return st_errorf(c->st, ST_ERROR, "node '%s' (%s) input %d: %s",
                                 n->origin ? n->origin : "?", ir_op_name(n->op), k, hint);
        }
        if (cgc_has_workspace(n) && n->workspace_bytes > 0 &&
            (n->workspace_offset < 0 || n->workspace_offset + n->workspace_bytes > g->arena_bytes))
            return st_errorf(c->st, ST_ERROR, "node '%s' (%s) workspace: %s",
                             n->origin ? n->origin : "?", ir_op_name(n->op), hint);
        if (n->n_regions > 0) {
            if (n->workspace_offset < 0 || n->workspace_offset + n->workspace_bytes > g->arena_bytes)
                return st_errorf(c->st, ST_ERROR, "node '%s' (%s) workspace: %s",
                                 n->origin ? n->origin : "?", ir_op_name(n->op), hint);
            for (int k = 0; k < n->n_regions; k++) {
                const IrGraph *r = n->regions[k];
                if (!r || r->arena_bytes > n->workspace_bytes)
                    return st_errorf(c->st, ST_ERROR, "node '%s' (%s) region %d: %s",
                                     n->origin ? n->origin : "?", ir_op_name(n->op), k, hint);
                if (!check_graph_plan(c, r, n, k, depth + 1))
                    return false;
            }
        }
    }
    for (int i = 0; i < g->n_fetches; i++) {
        IrValue v = g->fetches[i].value;
        if (v.node && !v.node->dead && cg_is_passthrough(owner, region, v, i))
            continue;
        if (!v.node || v.node->dead || v.node->op == OP_CONST || cg_is_region_arg(g, v.node) ||
            !value_in_range(v, g->arena_bytes))
            return st_errorf(c->st, ST_ERROR, "%s '%s': %s", g->parent ? "region result" : "fetch",
                             g->fetches[i].name ? g->fetches[i].name : "?", hint);
    }
    for (int i = 0; i < g->n_feeds; i++) {
        IrNode *a = g->feeds[i].arg;
        if (!a || a->dead || (g->parent ? a->op != OP_ARG || a->p.i[0] != i
                                        : !value_in_range((IrValue){a, 0}, g->arena_bytes)))
            return st_errorf(c->st, ST_ERROR, "%s '%s': %s", g->parent ? "region parameter" : "feed",
                             g->feeds[i].name ? g->feeds[i].name : "?", hint);
    }
    return true;
}

static bool check_plan(Ctx *c)
{
    return check_graph_plan(c, c->g, NULL, -1, 0);
}

/* ---- weights ---- */

static int cmp_const_offset(const void *pa, const void *pb)
{
    const IrNode *a = *(IrNode *const *)pa, *b = *(IrNode *const *)pb;
    if (a->out[0].offset != b->out[0].offset)
        return a->out[0].offset < b->out[0].offset ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Graph i of the tree: 0 the root, i >= 1 region i. */
static const IrGraph *tree_graph(const Ctx *c, int i)
{
    return i == 0 ? c->g : c->rgs[i - 1].g;
}

static bool write_weights(Ctx *c)
{
    const IrGraph *g = c->g;
    char path[4096];
    int n_consts = 0;
    for (int i = 0; i <= c->n_rgs; i++) {
        IR_FOR_EACH(tree_graph(c, i), n) {
            if (n->op == OP_CONST && n->out[0].offset >= 0)
                n_consts++;
        }
    }
    IrNode **consts = xx_malloc(sizeof(IrNode *) * ((size_t)n_consts + 1));
    if (!consts)
        return st_errorf(c->st, ST_NOMEM, "codegen: out of memory");
    int k = 0;
    for (int i = 0; i <= c->n_rgs; i++) {
        IR_FOR_EACH(tree_graph(c, i), n) {
            if (n->op == OP_CONST && n->out[0].offset >= 0)
                consts[k++] = n;
        }
    }
    qsort(consts, (size_t)n_consts, sizeof *consts, cmp_const_offset);
    FILE *f = open_out(c, "_weights.bin", "wb", path, sizeof path);
    if (!f) {
        xx_free(consts);
        return false;
    }
    static const unsigned char zeros[64];
    int64_t pos = 0;
    bool ok = true;
    for (int i = 0; i < n_consts && ok; i++) {
        IrNode *n = consts[i];
        int64_t bytes = (int64_t)ir_type_bytes(&n->out[0].type);
        if (n->out[0].offset < pos || n->out[0].offset + bytes > g->weights_bytes ||
            (bytes > 0 && (!n->data || (int64_t)n->data_bytes < bytes))) {
            ok = st_errorf(c->st, ST_ERROR, "constant '%s': bad weights offset %lld (%lld bytes)",
                           n->origin ? n->origin : "?", (long long)n->out[0].offset,
                           (long long)bytes);
            break;
        }
        while (pos < n->out[0].offset) {
            size_t z = (size_t)(n->out[0].offset - pos) < sizeof zeros ? (size_t)(n->out[0].offset - pos)
                                                                         : sizeof zeros;
            fwrite(zeros, 1, z, f);
            pos += (int64_t)z;
        }
        if (bytes > 0)
            fwrite(n->data, 1, (size_t)bytes, f);
        pos += bytes;
    }
    while (ok && pos < g->weights_bytes) {
        size_t z = (size_t)(g->weights_bytes - pos) < sizeof zeros ? (size_t)(g->weights_bytes - pos)
                                                                    : sizeof zeros;
        fwrite(zeros, 1, z, f);
        pos += (int64_t)z;
    }
    xx_free(consts);
    bool closed = close_out(c, f, path);
    if (!ok || !closed)
        return false;

    f = open_out(c, "_weights.S", "w", path, sizeof path);
    if (!f)
        return false;
    CgOut o = {f, 0, false};
    char size[32];
    snprintf(size, sizeof size, "%lld", (long long)g->weights_bytes);
    const CgHole holes[] = {{"NAME", c->name}, {"SOURCE", c->source}, {"SIZE", size}, {NULL, NULL}};
    cg_template(&o,
                "/* Generated by tfcc from {{SOURCE}} - DO NOT EDIT */\n"
                "/* {{NAME}}_weights: the model's constants ({{SIZE}} bytes, each 64-byte aligned),\n"
                " * linked read-only from {{NAME}}_weights.bin. */\n"
                "    .section .rodata\n"
                "    .balign 64\n"
                "    .globl {{NAME}}_weights\n"
                "    .type {{NAME}}_weights, @object\n"
                "    .size {{NAME}}_weights, {{SIZE}}\n"
                "{{NAME}}_weights:\n"
                "    .incbin \"{{NAME}}_weights.bin\"\n"
                "    .section .note.GNU-stack,\"\",@progbits\n",
                holes);
    return close_out(c, f, path);
}

/* ---- NAME.h ---- */

static void io_comment_line(CgOut *o, const char *what, int i, const CgIo *io, const char *name)
{
    char t[IR_MAX_RANK * 24 + 16], nm[256];
    cg_comment_text(io->name, nm, sizeof nm);
    cg_printf(o, " *   %-6s %d  %-24s %-20s (%s_%s_%s)\n", what, i, nm,
              cg_type_str(ir_value_type(io->value), t, sizeof t), name, what, io->ident);
}

static bool write_header(Ctx *c)
{
    const IrGraph *g = c->g;
    char path[4096];
    FILE *f = open_out(c, ".h", "w", path, sizeof path);
    if (!f)
        return false;
    CgOut o = {f, 0, false};
    char arena[32], weights[32], sum[32], n_args[16], n_results[16];
    snprintf(arena, sizeof arena, "%lld", (long long)g->arena_bytes);
    snprintf(weights, sizeof weights, "%lld", (long long)g->weights_bytes);
    snprintf(sum, sizeof sum, "%lld", (long long)g->unplanned_bytes);
    snprintf(n_args, sizeof n_args, "%d", c->n_args);
    snprintf(n_results, sizeof n_results, "%d", c->n_results);
    const char *a0 = c->n_args ? c->args[0].ident : "ARGNAME";
    const char *r0 = c->n_results ? c->results[0].ident : "RESULTNAME";
    const CgHole holes[] = {
        {"NAME", c->name}, {"UNAME", c->uname},   {"SOURCE", c->source},
        {"ARENA", arena},  {"WEIGHTS", weights},  {"SUM", sum},
        {"NARGS", n_args}, {"NRESULTS", n_results}, {"A0", a0},
        {"R0", r0},        {NULL, NULL},
    };
    cg_template(&o,
                "/* Generated by tfcc from {{SOURCE}} - DO NOT EDIT */\n"
                "/*\n"
                " * {{NAME}}: a compiled TensorFlow graph.  Usage:\n"
                " *\n"
                " *     {{NAME}} *m = {{NAME}}_new();                  (NULL when out of memory)\n"
                " *     memcpy({{NAME}}_arg_{{A0}}(m), input, {{UNAME}}_ARG0_BYTES);\n"
                " *       (or checked against the signature: {{NAME}}_set_arg(m, 0, &tensor, err, n))\n"
                " *     if ({{NAME}}_run(m) == TCRT_OK)\n"
                " *         use({{NAME}}_result_{{R0}}(m));             ({{UNAME}}_RESULT0_COUNT elements)\n"
                " *     {{NAME}}_free(m);\n"
                " *\n"
                " * Without malloc, on memory of your own (any 8-byte aligned block; 64 is best):\n"
                " *\n"
                " *     static _Alignas(64) uint8_t scratch[{{UNAME}}_ARENA_BYTES];\n"
                " *     {{NAME}} m;                                    (the struct is public)\n"
                " *     {{NAME}}_init(&m, scratch, sizeof scratch);\n"
                " *\n"
                " * Args, intermediates and results share one arena: write the args, run,\n"
                " * read the results (valid until the next run).  {{NAME}}_run never\n"
                " * allocates; one {{NAME}} must not run on two threads at once.\n"
                " * {{NAME}}_free is only for objects from {{NAME}}_new.\n"
                " *\n"
                " * Memory: arena {{ARENA}} bytes (buffers sum to {{SUM}} before reuse),\n"
                " * weights {{WEIGHTS}} bytes (read-only, linked from {{NAME}}_weights.S).\n"
                " *\n"
                " * Signature ({{NARGS}} args, {{NRESULTS}} results):\n",
                holes);
    for (int i = 0; i < c->n_args; i++)
        io_comment_line(&o, "arg", i, &c->args[i], c->name);
    for (int i = 0; i < c->n_results; i++)
        io_comment_line(&o, "result", i, &c->results[i], c->name);
    cg_template(&o,
                " */\n"
                "#ifndef {{UNAME}}_H\n"
                "#define {{UNAME}}_H\n"
                "\n"
                "#include <stddef.h>\n"
                "#include <stdint.h>\n"
                "\n"
                "#include \"tcrt.h\"\n"
                "\n"
                "#ifdef __cplusplus\n"
                "extern \"C\" {\n"
                "#endif\n"
                "\n"
                "#define {{UNAME}}_ARENA_BYTES {{ARENA}}\n"
                "#define {{UNAME}}_SCRATCH_BYTES {{UNAME}}_ARENA_BYTES\n"
                "#define {{UNAME}}_WEIGHTS_BYTES {{WEIGHTS}}\n"
                "#define {{UNAME}}_NUM_ARGS {{NARGS}}\n"
                "#define {{UNAME}}_NUM_RESULTS {{NRESULTS}}\n",
                holes);
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? c->n_results : c->n_args;
        for (int i = 0; i < n; i++) {
            const CgIo *io = pass ? &c->results[i] : &c->args[i];
            const IrType *t = ir_value_type(io->value);
            cg_printf(&o, "#define %s_%s%d_COUNT %lld\n", c->uname, pass ? "RESULT" : "ARG", i,
                      (long long)ir_shape_count(&t->shape));
            cg_printf(&o, "#define %s_%s%d_BYTES %zu\n", c->uname, pass ? "RESULT" : "ARG", i,
                      ir_type_bytes(t));
        }
    }
    cg_template(&o,
                "\n"
                "/* The model's state.  Public so that callers can place it themselves;\n"
                " * treat the fields as private. */\n"
                "struct {{NAME}} {\n"
                "    uint8_t *arena;               /* {{UNAME}}_ARENA_BYTES bytes */\n"
                "    int owns_arena;               /* allocated by {{NAME}}_new */\n"
                "};\n"
                "typedef struct {{NAME}} {{NAME}};\n"
                "\n"
                "/* sizeof({{NAME}}), for callers that allocate it themselves. */\n"
                "size_t {{NAME}}_size(void);\n"
                "/* Allocates the model and its arena; NULL when out of memory. */\n"
                "{{NAME}} *{{NAME}}_new(void);\n"
                "/* Frees a model from {{NAME}}_new (NULL is fine). */\n"
                "void {{NAME}}_free({{NAME}} *m);\n"
                "/* Uses scratch (n >= {{UNAME}}_ARENA_BYTES bytes, 8-byte aligned, owned by\n"
                " * the caller) as the arena; TCRT_ERR_ARG if it does not fit. */\n"
                "tcrt_status {{NAME}}_init({{NAME}} *m, void *scratch, size_t n);\n"
                "/* Runs the graph: TCRT_OK or the first kernel error.  No allocation. */\n"
                "tcrt_status {{NAME}}_run({{NAME}} *m);\n"
                "/* Arg i's buffer (write before run) / result i's (read after), NULL if out of range. */\n"
                "void *{{NAME}}_arg({{NAME}} *m, int i);\n"
                "const void *{{NAME}}_result(const {{NAME}} *m, int i);\n"
                "/* Checked feed: compares t's dtype, shape and byte size with arg i's\n"
                " * signature, then copies t->data into arg i's buffer.  TCRT_ERR_DTYPE,\n"
                " * TCRT_ERR_SHAPE or TCRT_ERR_ARG (no model, i out of range, no data) leave\n"
                " * the buffer as it was; err (may be NULL) gets a one-line reason naming the\n"
                " * arg.  Arg index by name: tcrt_find_arg({{NAME}}_signature(), \"x\"). */\n"
                "tcrt_status {{NAME}}_set_arg({{NAME}} *m, int i, const tcrt_tensor *t, char *err, size_t errlen);\n",
                holes);
    for (int i = 0; i < c->n_args; i++) {
        char t[IR_MAX_RANK * 24 + 16], nm[256];
        cg_comment_text(c->args[i].name, nm, sizeof nm);
        const char *ct = type_or_void(ir_value_type(c->args[i].value)->dtype);
        cg_printf(&o, "/* arg %d: %s %s */\n", i, nm,
                  cg_type_str(ir_value_type(c->args[i].value), t, sizeof t));
        cg_printf(&o, "%s *%s_arg_%s(%s *m);\n", ct, c->name, c->args[i].ident, c->name);
        cg_printf(&o, "%s *%s_arg%d(%s *m);\n", ct, c->name, i, c->name);
    }
    for (int i = 0; i < c->n_results; i++) {
        char t[IR_MAX_RANK * 24 + 16], nm[256];
        cg_comment_text(c->results[i].name, nm, sizeof nm);
        const char *ct = type_or_void(ir_value_type(c->results[i].value)->dtype);
        cg_printf(&o, "/* result %d: %s %s */\n", i, nm,
                  cg_type_str(ir_value_type(c->results[i].value), t, sizeof t));
        cg_printf(&o, "const %s *%s_result_%s(const %s *m);\n", ct, c->name, c->results[i].ident,
                  c->name);
        cg_printf(&o, "const %s *%s_result%d(const %s *m);\n", ct, c->name, i, c->name);
    }
    if (c->n_vars > 0) {
        cg_printf(&o,
                  "\n/* Variables (%d): the model's state, kept across runs in the arena.\n"
                  " * %s_new and %s_init load the initial values; each %s_run reads the\n"
                  " * values the run starts with and then stores the assigned ones.  Read or\n"
                  " * overwrite a value between runs through these pointers (also by name:\n"
                  " * tcrt_find_var(%s_signature(), \"name\")); tcrt_vars_init resets them all. */\n"
                  "#define %s_NUM_VARS %d\n",
                  c->n_vars, c->name, c->name, c->name, c->name, c->uname, c->n_vars);
        cg_printf(&o, "void *%s_var(%s *m, int i);\n", c->name, c->name);
        for (int i = 0; i < c->n_vars; i++) {
            char t[IR_MAX_RANK * 24 + 16], nm[256];
            cg_comment_text(c->vars[i].name, nm, sizeof nm);
            const IrType *vt = ir_value_type(c->vars[i].value);
            cg_printf(&o, "/* var %d: %s %s%s */\n", i, nm, cg_type_str(vt, t, sizeof t),
                      c->vars[i].value.node->p.i[0] ? " (trainable)" : "");
            cg_printf(&o, "%s *%s_var_%s(%s *m);\n", type_or_void(vt->dtype), c->name, c->vars[i].ident,
                      c->name);
        }
        cg_printf(&o, "\n");
    }
    cg_template(&o,
                "/* Names, dtypes, shapes and arena offsets of the args and results. */\n"
                "const tcrt_model *{{NAME}}_signature(void);\n"
                "extern const tcrt_model {{NAME}}_model;\n"
                "\n"
                "#ifdef __cplusplus\n"
                "}\n"
                "#endif\n"
                "#endif\n",
                holes);
    return close_out(c, f, path);
}

/* ---- kernels ---- */

typedef struct Kernel {
    const IrNode *node;           /* the node (for a fused group: its root) */
    bool is_elem;
    bool is_region;               /* WHILE/COND: control flow in the caller, no kernel */
    CgcElemGroup grp;             /* elementwise: members and operands */
    char name[96];                /* [r<R>_]k<NNN>_<op>[_<op>...] */
} Kernel;

static void free_kernels(Kernel *ks, int n)
{
    for (int i = 0; ks && i < n; i++) {
        cg_elem_group_free(&ks[i].grp);
    }
    xx_free(ks);
}

/* Root's fused group (cg_elem_group_build) and the kernel's name. */
static bool build_group(Ctx *c, const IrGraph *g, const IrNode *root, const int *pos,
                        const char *prefix, Kernel *k)
{
    if (!cg_elem_group_build(g, root, pos, &k->grp, c->st))
        return false;
    const IrNode *const *members = k->grp.members;
    int n_members = k->grp.n_members;
    /* name: [r<R>_]k<NNN>_<op>_<op>..., capped */
    size_t len = (size_t)snprintf(k->name, sizeof k->name, "%sk%03d", prefix, pos[root->id]);
    for (int i = 0; i < n_members; i++) {
        const char *op = ir_op_name(members[i]->op);
        if (len + strlen(op) + 6 >= sizeof k->name - 1) {
            snprintf(k->name + len, sizeof k->name - len, "_etc");
            break;
        }
        len += (size_t)snprintf(k->name + len, sizeof k->name - len, "_%s", op);
    }
    return true;
}

/* One Kernel per non-leaf, non-fused node of g, in schedule order; kernel
 * names start with prefix ("" at top level, "r<R>_" in region R). */
static bool plan_kernels(Ctx *c, const IrGraph *g, const char *prefix, Kernel **out, int *n_out)
{
    int n_ids = g->next_id;
    IR_FOR_EACH(g, n) {
        if (n->id >= n_ids)
            n_ids = n->id + 1;
    }
    int *pos = xx_malloc(sizeof(int) * ((size_t)n_ids + 1));
    Kernel *ks = xx_malloc(sizeof(Kernel) * ((size_t)g->n_nodes + 1));
    if (!pos || !ks) {
        xx_free(pos);
        xx_free(ks);
        return st_errorf(c->st, ST_NOMEM, "codegen: out of memory");
    }
    memset(ks, 0, sizeof(Kernel) * ((size_t)g->n_nodes + 1));
    int p = 0, n_ks = 0;
    IR_FOR_EACH(g, n) {
        pos[n->id] = p++;
    }
    bool ok = true;
    IR_FOR_EACH(g, n) {
        const OpInfo *oi = ir_op_info(n->op);
        if (!ok || oi->kind == K_LEAF || cg_is_fused(n))
            continue;
        Kernel *k = &ks[n_ks++];
        k->node = n;
        k->is_elem = oi->kind == K_ELEM;
        k->is_region = n->n_regions > 0;
        if (k->is_elem)
            ok = build_group(c, g, n, pos, prefix, k);
        else
            snprintf(k->name, sizeof k->name, "%sk%03d_%s", prefix, pos[n->id], oi->name);
    }
    xx_free(pos);
    if (!ok) {
        free_kernels(ks, n_ks);
        return false;
    }
    *out = ks;
    *n_out = n_ks;
    return true;
}

/* Pointer expression for value v in the code of graph g (the top-level run
 * function or a region function): arena a, weights w, or a region
 * parameter args[i]. */
static void value_ptr(const IrGraph *g, const IrValue v, bool is_out, char *buf, size_t n)
{
    const IrOut *out = &v.node->out[v.index];
    const char *ct = type_or_void(out->type.dtype);
    if (cg_is_region_arg(g, v.node)) {
        snprintf(buf, n, "(const %s *)args[%lld]", ct, (long long)v.node->p.i[0]);
        return;
    }
    bool is_w = v.node->op == OP_CONST;
    snprintf(buf, n, "(%s%s *)(%s + %lld)", is_out ? "" : "const ", ct, is_w ? "w" : "a",
             (long long)out->offset);
}

/* Untyped byte pointer for value v in the code of graph g: what memcpy
 * takes, or with is_arg a region's args[] entry (uint8_t *, so weights lose
 * their const: regions never write their parameters). */
static void raw_ptr(const IrGraph *g, const IrValue v, bool is_arg, char *buf, size_t n)
{
    const IrOut *out = &v.node->out[v.index];
    if (cg_is_region_arg(g, v.node))
        snprintf(buf, n, "args[%lld]", (long long)v.node->p.i[0]);
    else if (v.node->op == OP_CONST)
        snprintf(buf, n, is_arg ? "(uint8_t *)(w + %lld)" : "w + %lld", (long long)out->offset);
    else
        snprintf(buf, n, "a + %lld", (long long)out->offset);
}

/* Argument j of kernel k's call: operands, then outputs. */
static void kernel_arg(const IrGraph *g, const Kernel *k, int j, char *buf, size_t n)
{
    const IrNode *node = k->node;
    int n_in = k->is_elem ? k->grp.n_ext : node->n_inputs;
    if (j < n_in)
        value_ptr(g, k->is_elem ? k->grp.ext[j] : node->inputs[j], false, buf, n);
    else
        value_ptr(g, (IrValue){(IrNode *)node, j - n_in}, true, buf, n);
}

/* Writes the kernel functions of ks (region ops have none). */
static bool emit_kernels(Ctx *c, CgOut *o, const Kernel *ks, int n_ks)
{
    bool ok = true;
    for (int i = 0; i < n_ks && ok; i++) {
        const Kernel *k = &ks[i];
        if (k->is_region || (!k->is_elem && k->node->op == OP_ALLREDUCE))
            continue; /* allreduce: a runtime/mpi.c call at its position (emit_allreduce) */
        ok = k->is_elem ? cgc_emit_elem(o, &k->grp, k->name, c->st)
                        : cgc_emit_call(o, k->node, k->name, c->st);
    }
    return ok;
}

/* The number R of region r (NAME_r<R>), 0 if unknown. */
static int region_number(const Ctx *c, const IrGraph *r)
{
    for (int i = 0; i < c->n_rgs; i++)
        if (c->rgs[i].g == r)
            return i + 1;
    return 0;
}

/* "cond" / "body" / "branch 2" */
static void region_role(const IrNode *owner, int index, char *buf, size_t n)
{
    if (owner->op == OP_WHILE)
        snprintf(buf, n, "%s", index == 0 ? "the cond" : "the body");
    else
        snprintf(buf, n, "branch %d", index);
}

/* Runs region r (in graph g's code) and copies its results into the outputs
 * of region op n, skipping a WHILE body's pass-through results.  The
 * regions' arena is `ra`, their parameters `rargs`. */
static void emit_run_region(Ctx *c, CgOut *o, const IrGraph *g, const IrNode *n, int index)
{
    const IrGraph *r = n->regions[index];
    cg_printf(o, "TFCC_TRY(%s_r%d(ra, w, rargs));\n", c->name, region_number(c, r));
    if (n->op == OP_WHILE && index == 0)
        return; /* the cond's result is read by the caller */
    for (int i = 0; i < r->n_fetches; i++) {
        IrValue v = r->fetches[i].value;
        char dst[64];
        raw_ptr(g, (IrValue){(IrNode *)n, i}, false, dst, sizeof dst);
        if (cg_is_passthrough(n, index, v, i))
            cg_printf(o, "/* %s: loop-invariant (the body returns args[%d] unchanged) */\n", dst, i);
        else
            cg_printf(o, "memcpy(%s, ra + %lld, %zu);\n", dst, (long long)v.node->out[v.index].offset,
                      ir_type_bytes(&n->out[i].type));
    }
}

/* A WHILE or COND in graph g's code: one block with the regions' arena
 * `ra` (n's workspace) and their parameter pointers `rargs`. */
static void emit_region_op(Ctx *c, CgOut *o, const IrGraph *g, const IrNode *n)
{
    char origin[256], origin_op[128], p[96];
    cg_comment_text(n->origin ? n->origin : "?", origin, sizeof origin);
    cg_comment_text(n->origin_op ? n->origin_op : "?", origin_op, sizeof origin_op);
    bool is_while = n->op == OP_WHILE;
    int first = is_while ? 0 : 1; /* operands passed to the regions */
    int n_params = n->n_inputs - first;
    if (is_while)
        cg_printf(o, "/* while  (TF node: %s (%s)): %d loop variables, cond %s_r%d, body %s_r%d */\n",
                  origin, origin_op, n->n_inputs, c->name, region_number(c, n->regions[0]), c->name,
                  region_number(c, n->regions[1]));
    else
        cg_printf(o, "/* cond  (TF node: %s (%s)): %d branches %s_r%d..%s_r%d, selected by a %s */\n",
                  origin, origin_op, n->n_regions, c->name, region_number(c, n->regions[0]), c->name,
                  region_number(c, n->regions[n->n_regions - 1]),
                  cg_dtype_short(ir_value_type(n->inputs[0])->dtype));
    cg_printf(o, "{\n");
    o->indent++;
    cg_printf(o, "uint8_t *ra = a + %lld; /* the regions' arena (%lld bytes) */\n",
              (long long)n->workspace_offset, (long long)n->workspace_bytes);
    if (is_while) {
        for (int i = 0; i < n->n_inputs; i++) {
            char dst[64], src[64];
            raw_ptr(g, (IrValue){(IrNode *)n, i}, false, dst, sizeof dst);
            raw_ptr(g, n->inputs[i], false, src, sizeof src);
            if (strcmp(dst, src) != 0)
                cg_printf(o, "memcpy(%s, %s, %zu); /* loop variable %d: initial value */\n", dst, src,
                          ir_type_bytes(&n->out[i].type), i);
        }
    }
    if (n_params == 0) {
        cg_printf(o, "uint8_t *const *rargs = NULL; /* no parameters */\n");
    } else {
        cg_printf(o, "uint8_t *const rargs[%d] = {", n_params);
        for (int i = 0; i < n_params; i++) {
            raw_ptr(g, is_while ? (IrValue){(IrNode *)n, i} : n->inputs[first + i], true, p, sizeof p);
            cg_printf(o, "%s%s", i ? ", " : "", p);
        }
        cg_printf(o, "}; /* %s */\n", is_while ? "the loop state: the while's outputs" : "the operands");
    }
    if (is_while) {
        const IrGraph *cr = n->regions[0];
        IrValue cv = cr->fetches[0].value;
        cg_printf(o, "for (;;) {\n");
        o->indent++;
        emit_run_region(c, o, g, n, 0);
        cg_printf(o, "if (!*(const %s *)(ra + %lld))\n", type_or_void(TCRT_BOOL),
                  (long long)cv.node->out[cv.index].offset);
        cg_printf(o, "    break;\n");
        emit_run_region(c, o, g, n, 1);
        o->indent--;
        cg_printf(o, "}\n");
    } else {
        const IrType *st = ir_value_type(n->inputs[0]);
        value_ptr(g, n->inputs[0], false, p, sizeof p);
        if (st->dtype == TCRT_BOOL) {
            cg_printf(o, "if (*%s) {\n", p);
            o->indent++;
            emit_run_region(c, o, g, n, 0);
            o->indent--;
            cg_printf(o, "} else {\n");
            o->indent++;
            emit_run_region(c, o, g, n, 1);
            o->indent--;
            cg_printf(o, "}\n");
        } else {
            cg_printf(o, "switch (*%s) {\n", p);
            for (int k = 0; k < n->n_regions; k++) {
                if (k + 1 < n->n_regions)
                    cg_printf(o, "case %d:\n", k);
                else
                    cg_printf(o, "default: /* branch %d, and any selector out of range (as TF's Case) */\n", k);
                o->indent++;
                emit_run_region(c, o, g, n, k);
                cg_printf(o, "break;\n");
                o->indent--;
            }
            cg_printf(o, "}\n");
        }
    }
    o->indent--;
    cg_printf(o, "}\n");
}

/* The calls of graph g's kernels in order (the body of NAME_run_arena or of
 * a region function), at o's indent. */
/* ---- --cluster: per-rank dispatch (docs/distributed.md) ---- */

static int node_rank(const Ctx *c, const IrNode *n)
{
    int r = n->device ? pass_cluster_rank(c->cluster, n->device) : 0;
    return r < 0 ? 0 : r;
}

/* The RECV reading SEND s, or NULL. */
static const IrNode *recv_of(const IrGraph *g, const IrNode *s)
{
    IR_FOR_EACH(g, n)
    {
        if (n->op == OP_RECV && n->n_inputs == 1 && n->inputs[0].node == s)
            return n;
    }
    return NULL;
}

bool cgc_needs_mpi(const IrGraph *g, const PassCluster *cl)
{
    if (!g || !cl)
        return false;
    Ctx c = {.cluster = cl};
    IR_FOR_EACH(g, n)
    {
        if (n->op == OP_RECV && n->n_inputs == 1 && n->inputs[0].node->op == OP_SEND &&
            node_rank(&c, n) != node_rank(&c, n->inputs[0].node))
            return true;
    }
    return false;
}

static void emit_call(Ctx *c, CgOut *o, const IrGraph *g, const Kernel *k);

/* One kernel of the top-level schedule of an MPI graph: run by its rank
 * only; a send/recv pair between ranks becomes runtime/mpi.c calls (tag:
 * the send's node id). */
static void emit_mpi_step(Ctx *c, CgOut *o, const IrGraph *g, const Kernel *k)
{
    const IrNode *n = k->node;
    int r = node_rank(c, n);
    if (!k->is_elem && n->op == OP_RECV && n->inputs[0].node->op == OP_SEND) {
        const IrNode *s = n->inputs[0].node;
        int rs = node_rank(c, s);
        bool t16 = c->trunc16 && n->out[0].type.dtype == TCRT_F32;
        long long cnt = (long long)ir_shape_count(&n->out[0].type.shape);
        size_t bytes = t16 ? (size_t)cnt * 2 : ir_type_bytes(&n->out[0].type);
        if (rs != r && n->p.i[2]) { /* posted at the SEND (below): wait for both halves */
            cg_printf(o, "if (tcrt_mpi_rank() == %d)\n    TFCC_TRY(tcrt_mpi_wait_recv(a + %lld, %zu, %lld, %d));\n",
                      r, (long long)n->out[0].offset, bytes, t16 ? cnt : 0LL, s->id);
            cg_printf(o, "else if (tcrt_mpi_rank() == %d)\n    TFCC_TRY(tcrt_mpi_wait(%d));\n", rs, s->id);
            return;
        }
        if (rs != r) {
            cg_printf(o, "if (tcrt_mpi_rank() == %d)\n    TFCC_TRY(tcrt_mpi_%s(a + %lld, %lld, %d, %d));\n", r,
                      t16 ? "recv16" : "recv", (long long)n->out[0].offset, t16 ? cnt : (long long)bytes, rs,
                      s->id);
            cg_printf(o, "else if (tcrt_mpi_rank() == %d)\n    TFCC_TRY(tcrt_mpi_wait(%d));\n", rs, s->id);
            return;
        }
    }
    cg_printf(o, "if (tcrt_mpi_rank() == %d) {\n", r);
    o->indent++;
    emit_call(c, o, g, k);
    const IrNode *rv = !k->is_elem && n->op == OP_SEND ? recv_of(g, n) : NULL;
    int rr = rv ? node_rank(c, rv) : r;
    bool t16 = c->trunc16 && n->out[0].type.dtype == TCRT_F32;
    long long cnt = (long long)ir_shape_count(&n->out[0].type.shape);
    if (rr != r && t16)
        cg_printf(o, "TFCC_TRY(tcrt_mpi_isend16(a + %lld, %lld, %d, %d));\n", (long long)n->out[0].offset, cnt, rr,
                  n->id);
    else if (rr != r)
        cg_printf(o, "TFCC_TRY(tcrt_mpi_isend(a + %lld, %zu, %d, %d));\n", (long long)n->out[0].offset,
                  ir_type_bytes(&n->out[0].type), rr, n->id);
    o->indent--;
    cg_printf(o, "}\n");
    if (rr != r && rv->p.i[2]) /* the receiver posts its receive as soon as the tensor is sent */
        cg_printf(o, "if (tcrt_mpi_rank() == %d)\n    TFCC_TRY(tcrt_mpi_irecv(a + %lld, %zu, %d, %d));\n", rr,
                  (long long)rv->out[0].offset, t16 ? (size_t)cnt * 2 : ir_type_bytes(&rv->out[0].type), r, n->id);
}

/* Whether graph g's calls get the --profile timing hooks: the top level of
 * a graph without --cluster (a region op is timed as one kernel). */
static bool is_profiled(const Ctx *c, const IrGraph *g)
{
    return g == c->g && !c->mpi;
}

static void emit_calls(Ctx *c, CgOut *o, const IrGraph *g, const Kernel *ks, int n_ks)
{
    bool prof = is_profiled(c, g);
    for (int i = 0; i < n_ks; i++) {
        if (prof)
            cg_printf(o, "TFCC_T0();\n");
        if (c->mpi && g == c->g)
            emit_mpi_step(c, o, g, &ks[i]);
        else
            emit_call(c, o, g, &ks[i]);
        if (prof)
            cg_printf(o, "TFCC_T1(%d);\n", i);
    }
}

/* NAME_kernels: what --profile names kernel i by (tcrt_kernel_info). */
static void emit_kernel_table(Ctx *c, CgOut *o, FILE *f, const Kernel *ks, int n_ks)
{
    if (n_ks == 0)
        return;
    cg_printf(o, "static const tcrt_kernel_info %s_kernels[%d] = {\n", c->name, n_ks);
    o->indent++;
    for (int i = 0; i < n_ks; i++) {
        const IrNode *n = ks[i].node;
        char t[IR_MAX_RANK * 26 + 16];
        if (n->n_outputs > 0)
            cg_type_str(&n->out[0].type, t, sizeof t);
        else
            snprintf(t, sizeof t, "-");
        cg_printf(o, "{");
        cg_c_string(f, ks[i].name);
        fputs(", ", f);
        cg_c_string(f, n->origin ? n->origin : "?");
        fputs(", ", f);
        cg_c_string(f, n->origin_op ? n->origin_op : "?");
        fputs(", ", f);
        cg_c_string(f, t);
        fprintf(f, ", %.17g},\n", cg_kernel_flops(n));
    }
    o->indent--;
    cg_printf(o, "};\n\n");
}

/* ---- --data-parallel: ALLREDUCE (docs/distributed.md) ---- */

/* An ALLREDUCE: the mean over the replicas, computed by runtime/mpi.c
 * (MPI_Allreduce) into the node's buffer. */
static void emit_allreduce(CgOut *o, const IrGraph *g, const IrNode *n)
{
    char src[128], dst[128], origin[256];
    raw_ptr(g, n->inputs[0], false, src, sizeof src);
    raw_ptr(g, (IrValue){(IrNode *)n, 0}, false, dst, sizeof dst);
    cg_comment_text(n->origin ? n->origin : "?", origin, sizeof origin);
    cg_printf(o, "/* allreduce: the mean over the replicas (TF node: %s) */\n", origin);
    cg_printf(o, "TFCC_TRY(tcrt_mpi_allreduce_mean(%s, %s, %lld, %s));\n", dst, src,
              (long long)ir_shape_count(&n->out[0].type.shape),
              n->out[0].type.dtype == TCRT_F64 ? "TCRT_F64" : "TCRT_F32");
}

/* Whether g calls ALLREDUCE: a --data-parallel training step. */
static bool has_allreduce(const IrGraph *g)
{
    IR_FOR_EACH(g, n)
    {
        if (n->op == OP_ALLREDUCE)
            return true;
    }
    return false;
}

/* After the kernel of n: the run-time sizes (ir/dyn.c) n produces, read
 * from its buffers and checked against the bounds the compiler proved (the
 * buffers downstream are planned at those bounds). */
static void emit_sym_reads(CgOut *o, const IrGraph *g, const IrNode *n)
{
    if (g->parent)
        return;
    for (int i = 0; i < g->n_syms; i++) {
        const IrSym *s = &g->syms[i];
        if (s->src.node != n)
            continue;
        const IrOut *out = &n->out[s->src.index];
        char origin[256];
        cg_comment_text(n->origin ? n->origin : "?", origin, sizeof origin);
        cg_printf(o, "/* sym[%d]: a size known at run time (TF node: %s), proved in [%lld, %lld] */\n", i, origin,
                  (long long)s->lo, (long long)s->hi);
        cg_printf(o, "sym[%d] = *(const %s *)(a + %lld);\n", i, cg_c_type(out->type.dtype), (long long)out->offset);
        cg_printf(o, "if (sym[%d] < %lld || sym[%d] > %lld)\n    return TCRT_ERR_RUNTIME;\n", i, (long long)s->lo, i,
                  (long long)s->hi);
    }
}

static void emit_call(Ctx *c, CgOut *o, const IrGraph *g, const Kernel *k)
{
    const IrNode *n = k->node;
    if (k->is_region) {
        emit_region_op(c, o, g, n);
        return;
    }
    if (!k->is_elem && n->op == OP_ALLREDUCE) {
        emit_allreduce(o, g, n);
        return;
    }
    bool is_status = !k->is_elem && cgc_kernel_returns_status(n);
    int n_in = k->is_elem ? k->grp.n_ext : n->n_inputs;
    int n_args_k = n_in + n->n_outputs;
    /* One line when it fits in 100 columns, else one argument per line. */
    size_t width = strlen(k->name) + 16;
    for (int j = 0; j < n_args_k; j++) {
        char ptr[128];
        kernel_arg(g, k, j, ptr, sizeof ptr);
        width += strlen(ptr) + 2;
    }
    bool wide = width > 100 && n_args_k > 1;
    cg_printf(o, "%s%s(", is_status ? "TFCC_TRY(" : "", k->name);
    for (int j = 0; j < n_args_k; j++) {
        char ptr[128];
        kernel_arg(g, k, j, ptr, sizeof ptr);
        cg_printf(o, "%s%s", j == 0 ? (wide ? "\n    " : "") : (wide ? ",\n    " : ", "), ptr);
    }
    if (cgc_has_workspace(n)) {
        if (n->workspace_bytes > 0)
            cg_printf(o, "%sa + %lld", wide ? ",\n    " : ", ", (long long)n->workspace_offset);
        else
            cg_printf(o, "%sNULL", wide ? ",\n    " : ", ");
    }
    if (!k->is_elem && cgc_needs_sym(n))
        cg_printf(o, "%ssym", wide ? ",\n    " : ", ");
    cg_printf(o, ")%s;\n", is_status ? ")" : "");
    emit_sym_reads(o, g, n);
}

/* Writes region ri (index into c->rgs) after the regions nested in it: its
 * kernels, then its function NAME_r<R>. */
static bool emit_region(Ctx *c, CgOut *o, int ri, int depth)
{
    const RegionInfo *ri_info = &c->rgs[ri];
    const IrGraph *r = ri_info->g;
    if (depth > IR_MAX_REGION_DEPTH)
        return st_errorf(c->st, ST_ERROR, "control flow nested more than %d deep (the limit)",
                         IR_MAX_REGION_DEPTH);
    if (c->rgs[ri].is_emitted)
        return true;
    c->rgs[ri].is_emitted = true;
    IR_FOR_EACH(r, n) {
        for (int k = 0; k < n->n_regions; k++)
            if (!emit_region(c, o, region_number(c, n->regions[k]) - 1, depth + 1))
                return false;
    }
    int num = ri + 1;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "r%d_", num);
    Kernel *ks = NULL;
    int n_ks = 0;
    if (!plan_kernels(c, r, prefix, &ks, &n_ks))
        return false;
    if (!emit_kernels(c, o, ks, n_ks)) {
        free_kernels(ks, n_ks);
        return false;
    }
    const IrNode *owner = ri_info->owner;
    char role[32], origin[256], origin_op[128], t[IR_MAX_RANK * 24 + 16], nm[256];
    region_role(owner, ri_info->index, role, sizeof role);
    cg_comment_text(owner->origin ? owner->origin : "?", origin, sizeof origin);
    cg_comment_text(owner->origin_op ? owner->origin_op : "?", origin_op, sizeof origin_op);
    cg_printf(o, "/* %s_r%d: %s of the %s at TF node %s (%s); arena %lld bytes\n", c->name, num,
              role, owner->op == OP_WHILE ? "while" : "cond", origin, origin_op,
              (long long)r->arena_bytes);
    cg_printf(o, " *   parameters (read-only):");
    if (r->n_feeds == 0)
        cg_printf(o, " none");
    for (int i = 0; i < r->n_feeds; i++) {
        cg_comment_text(r->feeds[i].name ? r->feeds[i].name : "?", nm, sizeof nm);
        cg_printf(o, "%s args[%d] %s %s", i ? "," : "", i, nm,
                  cg_type_str(&r->feeds[i].arg->out[0].type, t, sizeof t));
    }
    cg_printf(o, "\n *   results:");
    for (int i = 0; i < r->n_fetches; i++) {
        IrValue v = r->fetches[i].value;
        cg_type_str(ir_value_type(v), t, sizeof t);
        if (cg_is_passthrough(owner, ri_info->index, v, i))
            cg_printf(o, "%s %d = args[%d] (unchanged)", i ? "," : "", i, i);
        else
            cg_printf(o, "%s %d %s at a + %lld", i ? "," : "", i, t,
                      (long long)v.node->out[v.index].offset);
    }
    cg_printf(o, " */\n");
    cg_printf(o, "static tcrt_status %s_r%d(uint8_t *a, const unsigned char *w, uint8_t *const *args)\n{\n",
              c->name, num);
    o->indent++;
    cg_printf(o, "(void)a;\n(void)w;\n(void)args;\n");
    emit_calls(c, o, r, ks, n_ks);
    cg_printf(o, "return TCRT_OK;\n");
    o->indent--;
    cg_printf(o, "}\n\n");
    free_kernels(ks, n_ks);
    return true;
}

/* Counts (n_count, an upper bound) or records (c->rgs, each region once)
 * the regions of g's live region ops, pre-order. */
static bool walk_regions(Ctx *c, const IrGraph *g, int *n_count, int depth)
{
    if (depth > IR_MAX_REGION_DEPTH)
        return st_errorf(c->st, ST_ERROR, "control flow nested more than %d deep (the limit)",
                         IR_MAX_REGION_DEPTH);
    IR_FOR_EACH(g, n) {
        for (int k = 0; k < n->n_regions; k++) {
            if (!n->regions[k])
                return st_errorf(c->st, ST_ERROR, "node '%s' (%s): region %d is missing",
                                 n->origin ? n->origin : "?", ir_op_name(n->op), k);
            if (c->rgs) {
                if (region_number(c, n->regions[k]) > 0)
                    continue; /* shared with an earlier op (ir_inline_region shares) */
                c->rgs[*n_count] = (RegionInfo){n->regions[k], n, k, false};
                c->n_rgs = *n_count + 1;
            }
            (*n_count)++;
            if (!walk_regions(c, n->regions[k], n_count, depth + 1))
                return false;
        }
    }
    return true;
}

/* ---- NAME.c ---- */

static void emit_io_table(CgOut *o, const char *name, const char *what, const CgIo *io, int n)
{
    if (n == 0)
        return;
    cg_printf(o, "static const tcrt_io %s_%s[%d] = {\n", name, what, n);
    o->indent++;
    for (int i = 0; i < n; i++) {
        const IrType *t = ir_value_type(io[i].value);
        cg_printf(o, "{");
        cg_c_string(o->f, io[i].name ? io[i].name : "");
        cg_printf(o, ", %s, %d, {", cg_dtype_enum(t->dtype), t->shape.rank);
        if (t->shape.rank == 0)
            cg_printf(o, "0");
        for (int d = 0; d < t->shape.rank; d++)
            cg_printf(o, "%s%lld", d ? ", " : "", (long long)t->shape.dims[d]);
        cg_printf(o, "}, %zu, %lld},\n", ir_type_bytes(t),
                  (long long)io[i].value.node->out[io[i].value.index].offset);
    }
    o->indent--;
    cg_printf(o, "};\n");
}

/* The variable table (tcrt_var): state offset, initial value in the
 * weights (the VARIABLE's CONST input), the live ASSIGN's output. */
static void emit_var_table(CgOut *o, const Ctx *c)
{
    if (c->n_vars == 0)
        return;
    cg_printf(o, "static const tcrt_var %s_vars[%d] = {\n", c->name, c->n_vars);
    o->indent++;
    for (int i = 0; i < c->n_vars; i++) {
        const IrNode *v = c->vars[i].value.node;
        const IrType *t = &v->out[0].type;
        int64_t assigned = -1;
        IR_FOR_EACH(c->g, n) {
            if (n->op == OP_ASSIGN && n->inputs[0].node == v)
                assigned = n->out[0].offset;
        }
        cg_printf(o, "{");
        cg_c_string(o->f, c->vars[i].name);
        cg_printf(o, ", %s, %d, {", cg_dtype_enum(t->dtype), t->shape.rank);
        if (t->shape.rank == 0)
            cg_printf(o, "0");
        for (int d = 0; d < t->shape.rank; d++)
            cg_printf(o, "%s%lld", d ? ", " : "", (long long)t->shape.dims[d]);
        cg_printf(o, "}, %zu, %lld, %lld, %lld, %d},\n", ir_type_bytes(t), (long long)v->out[0].offset,
                  (long long)v->inputs[0].node->out[0].offset, (long long)assigned, v->p.i[0] ? 1 : 0);
    }
    o->indent--;
    cg_printf(o, "};\n");
}

static bool write_source(Ctx *c)
{
    const IrGraph *g = c->g;
    char path[4096];
    FILE *f = open_out(c, ".c", "w", path, sizeof path);
    if (!f)
        return false;
    CgOut o = {f, 0, false};
    char arena[32], weights[32], alloc_bytes[32], n_args[16], n_results[16];
    snprintf(arena, sizeof arena, "%lld", (long long)g->arena_bytes);
    snprintf(weights, sizeof weights, "%lld", (long long)g->weights_bytes);
    int64_t ab = g->arena_bytes < 64 ? 64 : (g->arena_bytes + 63) / 64 * 64;
    snprintf(alloc_bytes, sizeof alloc_bytes, "%lld", (long long)ab);
    snprintf(n_args, sizeof n_args, "%d", c->n_args);
    snprintf(n_results, sizeof n_results, "%d", c->n_results);
    int n_kernels = 0;
    for (int i = 0; i <= c->n_rgs; i++) {
        IR_FOR_EACH(tree_graph(c, i), n) {
            if (ir_op_info(n->op)->kind != K_LEAF && n->n_regions == 0 &&
                n->out[0].offset != PASS_OFFSET_FUSED)
                n_kernels++;
        }
    }
    char n_k[16], n_r[16];
    snprintf(n_k, sizeof n_k, "%d", n_kernels);
    snprintf(n_r, sizeof n_r, "%d", c->n_rgs);
    const CgHole holes[] = {
        {"NAME", c->name},   {"UNAME", c->uname},     {"SOURCE", c->source},
        {"ARENA", arena},    {"WEIGHTS", weights},    {"ALLOC", alloc_bytes},
        {"NARGS", n_args},   {"NRESULTS", n_results}, {"NKERNELS", n_k},
        {"NREGIONS", n_r},   {NULL, NULL},
    };
    cg_template(&o,
                "/* Generated by tfcc from {{SOURCE}} - DO NOT EDIT */\n"
                "/* {{NAME}}.c: {{NKERNELS}} kernels in schedule order, then {{NAME}}_run_arena\n"
                " * calling them on one arena of {{ARENA}} bytes (buffer offsets planned at\n"
                " * compile time) and {{WEIGHTS}} bytes of weights, then the API of {{NAME}}.h.",
                holes);
    if (c->n_rgs > 0)
        cg_template(&o,
                    "\n * Control flow: {{NREGIONS}} region functions {{NAME}}_r<R> (loop conds and\n"
                    " * bodies, cond branches), each with its kernels r<R>_k<NNN>_*; a while or\n"
                    " * cond runs them on its workspace in the caller's arena.",
                    holes);
    cg_template(&o,
                " */\n"
                "#include \"{{NAME}}.h\"\n"
                "\n"
                "#include <stdlib.h>\n"
                "#include <string.h>\n"
                "\n"
                "#include \"tcrt.h\"\n"
                "#include \"tcrt_kernels.h\"\n"
                "#include \"tcrt_elem.h\"\n"
                "#include \"tcrt_pool.h\"\n"
                "\n"
                "extern const unsigned char {{NAME}}_weights[];\n"
                "\n"
                "/* Code layout (docs/targets.md): tfcc compiles this file's functions into\n"
                " * one section, which its link places where runtime/text.order lists this\n"
                " * function. */\n"
                "__attribute__((used)) static void tfcc_model_code(void)\n"
                "{\n"
                "}\n"
                "\n",
                holes);

    /* Kernels, then the region functions (nested ones first), then the
     * calls of the top-level kernels in the same order. */
    Kernel *ks = NULL;
    int n_ks = 0;
    if (!plan_kernels(c, g, "", &ks, &n_ks)) {
        fclose(f);
        return false;
    }
    bool ok = emit_kernels(c, &o, ks, n_ks);
    if (ok)
        cg_template(&o,
                    "#define TFCC_TRY(call)                                                              \\\n"
                    "    do {                                                                            \\\n"
                    "        tcrt_status s_ = (call);                                                    \\\n"
                    "        if (s_ != TCRT_OK)                                                          \\\n"
                    "            return s_;                                                              \\\n"
                    "    } while (0)\n"
                    "/* --profile (tcrt.h, tcrt_prof_ns): kernel i's wall time, when asked for */\n"
                    "#define TFCC_T0() (tp_ = tcrt_prof_ns ? tcrt_clock_ns() : 0)\n"
                    "#define TFCC_T1(i)                                                                  \\\n"
                    "    do {                                                                            \\\n"
                    "        if (tcrt_prof_ns)                                                           \\\n"
                    "            tcrt_prof_ns[i] += tcrt_clock_ns() - tp_;                               \\\n"
                    "    } while (0)\n"
                    "\n",
                    holes);
    IR_FOR_EACH(g, n) {
        for (int k = 0; ok && k < n->n_regions; k++)
            ok = emit_region(c, &o, region_number(c, n->regions[k]) - 1, 1);
    }
    if (!ok) {
        free_kernels(ks, n_ks);
        fclose(f);
        return false;
    }

    /* The entry point. */
    if (c->mpi)
        cg_printf(&o, "/* runtime/mpi.c (--cluster, docs/distributed.md) */\n"
                      "int tcrt_mpi_rank(void);\n"
                      "tcrt_status tcrt_mpi_isend(const void *buf, size_t bytes, int dst, int tag);\n"
                      "tcrt_status tcrt_mpi_recv(void *buf, size_t bytes, int src, int tag);\n"
                      "tcrt_status tcrt_mpi_wait(int tag);\n"
                      "tcrt_status tcrt_mpi_isend16(void *buf, size_t n, int dst, int tag);\n"
                      "tcrt_status tcrt_mpi_recv16(void *buf, size_t n, int src, int tag);\n"
                      "tcrt_status tcrt_mpi_irecv(void *buf, size_t bytes, int src, int tag);\n"
                      "tcrt_status tcrt_mpi_wait_recv(void *buf, size_t bytes, size_t widen16, int tag);\n\n");
    if (c->dp)
        cg_printf(&o, "/* runtime/mpi.c (--data-parallel, docs/distributed.md) */\n"
                      "tcrt_status tcrt_mpi_allreduce_mean(void *dst, const void *src, size_t n, tcrt_dtype dtype);\n\n");
    cg_template(&o,
                "/* Runs every kernel in order on arena a ({{UNAME}}_ARENA_BYTES bytes). */\n"
                "static tcrt_status {{NAME}}_run_arena(uint8_t *a)\n"
                "{\n"
                "    const unsigned char *w = {{NAME}}_weights;\n"
                "    (void)a;\n"
                "    (void)w;\n",
                holes);
    o.indent = 1;
    if (g->n_syms > 0) {
        if (c->mpi) {
            free_kernels(ks, n_ks);
            fclose(f);
            return st_errorf(c->st, ST_UNSUPPORTED,
                             "data-dependent sizes (NonMaxSuppression, Where) are not supported with --cluster yet");
        }
        cg_printf(&o, "int64_t sym[%d] = {0}; /* sizes known at run time (ir/dyn.c) */\n", g->n_syms);
    }
    bool prof = is_profiled(c, g) && n_ks > 0;
    if (prof)
        cg_printf(&o, "uint64_t tp_ = 0; /* TFCC_T0 / TFCC_T1 (--profile) */\n");
    emit_calls(c, &o, g, ks, n_ks);
    cg_printf(&o, "return TCRT_OK;\n");
    o.indent = 0;
    cg_printf(&o, "}\n\n");
    if (prof)
        emit_kernel_table(c, &o, f, ks, n_ks);
    int n_prof = prof ? n_ks : 0;
    free_kernels(ks, n_ks);

    /* Signature tables and the model descriptor. */
    emit_io_table(&o, c->name, "args", c->args, c->n_args);
    emit_io_table(&o, c->name, "results", c->results, c->n_results);
    emit_var_table(&o, c);
    cg_printf(&o, "\nconst tcrt_model %s_model = {\n", c->name);
    o.indent = 1;
    cg_printf(&o, ".name = ");
    cg_c_string(f, c->name);
    cg_printf(&o, ",\n.n_args = %d,\n.args = %s%s,\n", c->n_args, c->n_args ? c->name : "NULL",
              c->n_args ? "_args" : "");
    cg_printf(&o, ".n_results = %d,\n.results = %s%s,\n", c->n_results,
              c->n_results ? c->name : "NULL", c->n_results ? "_results" : "");
    cg_printf(&o, ".arena_bytes = %s,\n.weights_bytes = %s,\n.run = %s_run_arena,\n", arena, weights,
              c->name);
    cg_printf(&o, ".n_vars = %d,\n.vars = %s%s,\n.weights = %s_weights,\n", c->n_vars,
              c->n_vars ? c->name : "NULL", c->n_vars ? "_vars" : "", c->name);
    cg_printf(&o, ".n_kernels = %d,\n.kernels = %s%s,\n", n_prof, n_prof ? c->name : "NULL",
              n_prof ? "_kernels" : "");
    o.indent = 0;
    cg_printf(&o, "};\n\n");

    /* The API. */
    cg_template(&o,
                "size_t {{NAME}}_size(void)\n"
                "{\n"
                "    return sizeof({{NAME}});\n"
                "}\n"
                "\n"
                "{{NAME}} *{{NAME}}_new(void)\n"
                "{\n"
                "    {{NAME}} *m = malloc(sizeof *m);\n"
                "    if (!m)\n"
                "        return NULL;\n"
                "    m->arena = aligned_alloc(64, {{ALLOC}});\n"
                "    if (!m->arena) {\n"
                "        free(m);\n"
                "        return NULL;\n"
                "    }\n"
                "    m->owns_arena = 1;\n"
                "    tcrt_vars_init(&{{NAME}}_model, m->arena);\n"
                "    return m;\n"
                "}\n"
                "\n"
                "void {{NAME}}_free({{NAME}} *m)\n"
                "{\n"
                "    if (!m)\n"
                "        return;\n"
                "    if (m->owns_arena)\n"
                "        free(m->arena);\n"
                "    free(m);\n"
                "}\n"
                "\n"
                "tcrt_status {{NAME}}_init({{NAME}} *m, void *scratch, size_t n)\n"
                "{\n"
                "    if (!m || !scratch || n < {{UNAME}}_ARENA_BYTES || ((uintptr_t)scratch & 7) != 0)\n"
                "        return TCRT_ERR_ARG;\n"
                "    m->arena = scratch;\n"
                "    m->owns_arena = 0;\n"
                "    tcrt_vars_init(&{{NAME}}_model, m->arena);\n"
                "    return TCRT_OK;\n"
                "}\n"
                "\n"
                "tcrt_status {{NAME}}_run({{NAME}} *m)\n"
                "{\n"
                "    if (!m || !m->arena)\n"
                "        return TCRT_ERR_ARG;\n"
                "    tcrt_status s = {{NAME}}_run_arena(m->arena);\n"
                "    if (s == TCRT_OK)\n"
                "        tcrt_vars_commit(&{{NAME}}_model, m->arena);\n"
                "    return s;\n"
                "}\n"
                "\n"
                "const tcrt_model *{{NAME}}_signature(void)\n"
                "{\n"
                "    return &{{NAME}}_model;\n"
                "}\n"
                "\n"
                "void *{{NAME}}_arg({{NAME}} *m, int i)\n"
                "{\n"
                "    if (!m || !m->arena || i < 0 || i >= {{UNAME}}_NUM_ARGS)\n"
                "        return NULL;\n",
                holes);
    if (c->n_args)
        cg_printf(&o, "    return m->arena + %s_args[i].offset;\n}\n\n", c->name);
    else
        cg_printf(&o, "    return NULL;\n}\n\n");
    cg_template(&o,
                "const void *{{NAME}}_result(const {{NAME}} *m, int i)\n"
                "{\n"
                "    if (!m || !m->arena || i < 0 || i >= {{UNAME}}_NUM_RESULTS)\n"
                "        return NULL;\n",
                holes);
    if (c->n_results)
        cg_printf(&o, "    return m->arena + %s_results[i].offset;\n}\n", c->name);
    else
        cg_printf(&o, "    return NULL;\n}\n");
    cg_template(&o,
                "\n"
                "tcrt_status {{NAME}}_set_arg({{NAME}} *m, int i, const tcrt_tensor *t, char *err, size_t errlen)\n"
                "{\n"
                "    return tcrt_set_feed(&{{NAME}}_model, m ? m->arena : NULL, i, t, err, errlen);\n"
                "}\n",
                holes);
    for (int i = 0; i < c->n_args; i++) {
        const char *ct = type_or_void(ir_value_type(c->args[i].value)->dtype);
        cg_printf(&o, "\n%s *%s_arg_%s(%s *m)\n{\n    return (%s *)%s_arg(m, %d);\n}\n", ct, c->name,
                  c->args[i].ident, c->name, ct, c->name, i);
        cg_printf(&o, "\n%s *%s_arg%d(%s *m)\n{\n    return (%s *)%s_arg(m, %d);\n}\n", ct, c->name, i,
                  c->name, ct, c->name, i);
    }
    for (int i = 0; i < c->n_results; i++) {
        const char *ct = type_or_void(ir_value_type(c->results[i].value)->dtype);
        cg_printf(&o,
                  "\nconst %s *%s_result_%s(const %s *m)\n{\n    return (const %s *)%s_result(m, %d);\n}\n",
                  ct, c->name, c->results[i].ident, c->name, ct, c->name, i);
        cg_printf(&o,
                  "\nconst %s *%s_result%d(const %s *m)\n{\n    return (const %s *)%s_result(m, %d);\n}\n",
                  ct, c->name, i, c->name, ct, c->name, i);
    }
    if (c->n_vars > 0)
        cg_printf(&o,
                  "\nvoid *%s_var(%s *m, int i)\n{\n    if (!m || !m->arena || i < 0 || i >= %d)\n"
                  "        return NULL;\n    return m->arena + %s_vars[i].offset;\n}\n",
                  c->name, c->name, c->n_vars, c->name);
    for (int i = 0; i < c->n_vars; i++) {
        const char *ct = type_or_void(ir_value_type(c->vars[i].value)->dtype);
        cg_printf(&o, "\n%s *%s_var_%s(%s *m)\n{\n    return (%s *)%s_var(m, %d);\n}\n", ct, c->name,
                  c->vars[i].ident, c->name, ct, c->name, i);
    }
    return close_out(c, f, path);
}

/* ---- NAME_main.c ---- */

static bool write_main(Ctx *c)
{
    char path[4096];
    FILE *f = open_out(c, "_main.c", "w", path, sizeof path);
    if (!f)
        return false;
    CgOut o = {f, 0, false};
    const CgHole holes[] = {{"NAME", c->name}, {"SOURCE", c->source}, {NULL, NULL}};
    cg_template(&o,
                "/* Generated by tfcc from {{SOURCE}} - DO NOT EDIT */\n"
                "/* {{NAME}}_main.c: a standalone executable for {{NAME}}: reads feeds from .npy\n"
                " * files, runs, writes fetches as .npy (see --help). */\n"
                "#include \"tcrt.h\"\n"
                "\n"
                "extern const tcrt_model {{NAME}}_model;\n"
                "\n",
                holes);
    if (c->dp && !c->mpi) { /* --data-parallel: any world size (runtime/mpi.c, n_ranks 0) */
        cg_template(
            &o,
            "int tcrt_mpi_main(const tcrt_model *m, int n_ranks, const char *cluster, int argc, char **argv);\n"
            "\n"
            "int main(int argc, char **argv)\n"
            "{\n"
            "    return tcrt_mpi_main(&{{NAME}}_model, 0, \"\", argc, argv);\n"
            "}\n",
            holes);
        return close_out(c, f, path);
    }
    if (!c->mpi) {
        cg_template(&o,
                    "int main(int argc, char **argv)\n"
                    "{\n"
                    "    return tcrt_main(&{{NAME}}_model, argc, argv);\n"
                    "}\n",
                    holes);
        return close_out(c, f, path);
    }
    /* --cluster with edges between tasks: one executable for every rank
     * (runtime/mpi.c starts MPI and checks the rank count) */
    char spec[PASS_MAX_JOBS * (IR_DEV_MAX_NAME + 8)] = "";
    for (int k = 0; k < c->cluster->n_jobs; k++) {
        size_t len = strlen(spec);
        snprintf(spec + len, sizeof spec - len, "%s%s=%d", k ? "," : "", c->cluster->job[k],
                 c->cluster->count[k]);
    }
    cg_template(
        &o,
        "int tcrt_mpi_main(const tcrt_model *m, int n_ranks, const char *cluster, int argc, char **argv);\n"
        "void tcrt_mpi_set_var_ranks(const int *rank_of_var, int n_vars);\n"
        "\n",
        holes);
    if (c->n_vars > 0) { /* each variable's task: its owner sends it to rank 0 for --save */
        cg_printf(&o, "static const int %s_var_rank[%d] = {", c->name, c->n_vars);
        for (int i = 0; i < c->n_vars; i++)
            cg_printf(&o, "%s%d", i ? ", " : "", node_rank(c, c->vars[i].value.node));
        cg_printf(&o, "};\n\n");
    }
    cg_printf(&o, "int main(int argc, char **argv)\n{\n");
    if (c->n_vars > 0)
        cg_printf(&o, "    tcrt_mpi_set_var_ranks(%s_var_rank, %d);\n", c->name, c->n_vars);
    cg_printf(&o, "    return tcrt_mpi_main(&%s_model, %d, \"%s\", argc, argv);\n}\n", c->name,
              c->cluster->n_ranks, spec);
    return close_out(c, f, path);
}

bool cgc_emit(const IrGraph *g, const CgOptions *o, const char *dir, Status *st)
{
    if (!st_ok(st))
        return false;
    if (!g || !o || !dir)
        return st_errorf(st, ST_ERROR, "cgc_emit: missing graph, options or directory");
    if (!is_c_ident(o->name) || strlen(o->name) > 64)
        return st_errorf(st, ST_ERROR, "model name '%s' is not a C identifier (at most 64 chars)",
                         o->name ? o->name : "");
    Ctx c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.name = o->name;
    c.dir = dir;
    c.st = st;
    c.cluster = o->cluster;
    c.trunc16 = o->trunc16;
    c.mpi = cgc_needs_mpi(g, o->cluster);
    c.dp = has_allreduce(g);
    if (c.dp && c.mpi)
        return st_errorf(st, ST_ERROR, "--data-parallel cannot be combined with --cluster");
    IR_FOR_EACH(g, n)
    { /* MPI tags are send node ids: runtime/mpi.c keeps 4096 pending sends */
        if (c.mpi && n->op == OP_SEND && n->id >= 4096)
            return st_errorf(st, ST_ERROR,
                             "--cluster: send node %d (of '%s') is past the 4096 transfers "
                             "runtime/mpi.c tracks",
                             n->id, n->origin ? n->origin : "?");
    }
    size_t i = 0;
    for (; o->name[i] && i + 1 < sizeof c.uname; i++)
        c.uname[i] = (char)toupper((unsigned char)o->name[i]);
    c.uname[i] = '\0';
    const char *src = o->source_file ? o->source_file : "(unknown)";
    const char *slash = strrchr(src, '/');
    cg_comment_text(slash && slash[1] ? slash + 1 : src, c.source, sizeof c.source);

    if (!check_plan(&c))
        return false;
    int n_rgs = 0;
    if (!walk_regions(&c, g, &n_rgs, 1))
        return false;
    c.rgs = xx_malloc(sizeof(RegionInfo) * ((size_t)n_rgs + 1));
    if (!c.rgs)
        return st_errorf(st, ST_NOMEM, "codegen: out of memory");
    int n_filled = 0;
    if (!walk_regions(&c, g, &n_filled, 1)) {
        xx_free(c.rgs);
        return false;
    }
    c.n_args = g->n_feeds;
    c.n_results = g->n_fetches;
    c.args = xx_malloc(sizeof(CgIo) * ((size_t)c.n_args + 1));
    c.results = xx_malloc(sizeof(CgIo) * ((size_t)c.n_results + 1));
    bool ok = c.args && c.results;
    if (!ok)
        st_errorf(st, ST_NOMEM, "codegen: out of memory");
    for (int k = 0; ok && k < c.n_args; k++) {
        c.args[k].name = g->feeds[k].name;
        c.args[k].value = (IrValue){g->feeds[k].arg, 0};
    }
    for (int k = 0; ok && k < c.n_results; k++) {
        c.results[k].name = g->fetches[k].name;
        c.results[k].value = g->fetches[k].value;
    }
    IR_FOR_EACH(g, n) {
        if (n->op == OP_VARIABLE)
            c.n_vars++;
    }
    c.vars = ok ? xx_malloc(sizeof(CgIo) * ((size_t)c.n_vars + 1)) : NULL;
    if (ok && !c.vars)
        ok = st_errorf(st, ST_NOMEM, "codegen: out of memory");
    int n_v = 0;
    IR_FOR_EACH(g, n) {
        if (ok && n->op == OP_VARIABLE)
            c.vars[n_v++] = (CgIo){n->origin ? n->origin : "var", {n, 0}, ""};
    }
    if (ok) {
        cg_io_idents(c.vars, c.n_vars);
        cg_io_idents(c.args, c.n_args);
        cg_io_idents(c.results, c.n_results);
        ok = write_weights(&c) && write_header(&c) && write_source(&c) && write_main(&c);
    }
    xx_free(c.args);
    xx_free(c.results);
    xx_free(c.vars);
    xx_free(c.rgs);
    return ok;
}
