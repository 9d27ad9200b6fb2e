/* ir/print.c - the text form of the IR and a Graphviz view.
 *
 * Text form (parsed back by parse.c; stable: same graph, same bytes):
 *   graph "name"
 *   feed "input:0" %0
 *   fetch "Softmax:0" %12
 *   %12 = conv2d(%3, %7, %9) {i=[1,1,1,1,0,0,0,0,0,1]} : f32[1,112,112,32]  # Conv/Conv2D (Conv2D)
 * Inputs are %id or %id:k (output k), control inputs ^%id.  Params print
 * the used prefix of i and f (trailing zeros trimmed; floats in the shortest
 * form that reads back exactly).  Multiple outputs print as a tuple
 * "(f32[2,5], i32[2,5])".  Optional fields follow the type: device="...",
 * key="..." (SEND/RECV rendezvous key), offset=[..] (planned outputs), workspace=BYTES@OFFSET, then CONST data:
 * "= hex:0000803f..." with data, else a short value summary.  The comment
 * holds the origin TF node and op.
 * Region ops (while, cond) follow their line with their regions, in order,
 * each a nested graph with its own node ids, indented two more spaces:
 *   %7 = while(%3, %5) : (i32[], f32[2])  # loop (While)
 *     region 0 {
 *       feed "i" %0
 *       %0 = arg() : i32[]
 *       ...
 *       yield "cond" %2
 *     }
 *     region 1 {
 *       ...
 *     }
 * Inside a region, feed lines name its parameters and the last line before
 * "}" yields its results (fetches) as "name" %ref pairs; "yield" alone when
 * there are none.
 * DOT: nodes with a device are filled with its colour (dot_device_colour)
 * and carry it as a tooltip; a region op and its regions form a cluster; each region is a cluster
 * inside it, labelled ("while %7 body", "cond %9 branch 1 (false)"), with a
 * "yield" node fed by its results.  Names of region nodes carry the path of
 * region ops ("n7r1_n0": node %0 of region 1 of %7); a dotted edge with
 * lhead (compound=true) joins the op node to each of its regions.  Edges
 * into a region op are written after its cluster, so only the op's own
 * nodes join it.
 * Invariants: only live nodes print, in g->nodes order; nothing is modified;
 * nesting is bounded by IR_MAX_REGION_DEPTH (deeper regions print as a
 * comment, never recurse further).
 */
#include "ir/ir.h"
#include "ir/ir_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void print_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void print_double(FILE *f, double v)
{
    char buf[64];
    if (isnan(v)) {
        fputs("nan", f);
        return;
    }
    if (isinf(v)) {
        fputs(v < 0 ? "-inf" : "inf", f);
        return;
    }
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
}

/* f32 values: the shortest text that reads back as the same float. */
static void print_float(FILE *f, float v)
{
    char buf[64];
    if (isnan(v) || isinf(v)) {
        print_double(f, v);
        return;
    }
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
}

static void print_hex(FILE *f, const uint8_t *b, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    char buf[4096];
    size_t o = 0;
    for (size_t k = 0; b && k < n; k++) {
        buf[o++] = digits[b[k] >> 4];
        buf[o++] = digits[b[k] & 15];
        if (o == sizeof buf) {
            fwrite(buf, 1, o, f);
            o = 0;
        }
    }
    fwrite(buf, 1, o, f);
}

static void print_type(FILE *f, const IrType *t)
{
    char buf[160];
    fprintf(f, "%s%s", ir_dtype_short(t->dtype), ir_shape_str(&t->shape, buf, sizeof buf));
}

static void print_ref(FILE *f, IrValue v)
{
    if (!v.node)
        fputs("%?", f);
    else if (v.index)
        fprintf(f, "%%%d:%d", v.node->id, v.index);
    else
        fprintf(f, "%%%d", v.node->id);
}

static void print_params(FILE *f, const IrParams *p)
{
    int ni = IR_MAX_IPARAM, nf = IR_MAX_FPARAM;
    while (ni > 0 && p->i[ni - 1] == 0)
        ni--;
    while (nf > 0 && p->f[nf - 1] == 0 && !signbit(p->f[nf - 1]))
        nf--;
    if (!ni && !nf)
        return;
    fputs(" {", f);
    if (ni) {
        fputs("i=[", f);
        for (int k = 0; k < ni; k++)
            fprintf(f, "%s%lld", k ? "," : "", (long long)p->i[k]);
        fputc(']', f);
    }
    if (nf) {
        fputs(ni ? ", f=[" : "f=[", f);
        for (int k = 0; k < nf; k++) {
            if (k)
                fputc(',', f);
            print_double(f, p->f[k]);
        }
        fputc(']', f);
    }
    fputc('}', f);
}

static void print_summary(FILE *f, const IrNode *n)
{
    const IrType *t = &n->out[0].type;
    int64_t count;
    if (!n->data || !ir_shape_count_checked(&t->shape, &count) || !ir_dtype_is_numeric(t->dtype)) {
        fputs(" = ?", f);
        return;
    }
    int64_t shown = count < 8 ? count : 6;
    fputs(" = [", f);
    for (int64_t k = 0; k < shown; k++) {
        if (k)
            fputs(", ", f);
        if (t->dtype == TCRT_F32)
            print_float(f, (float)ir_load_f64(n->data, t->dtype, k));
        else if (ir_dtype_is_float(t->dtype))
            print_double(f, ir_load_f64(n->data, t->dtype, k));
        else
            fprintf(f, "%lld", (long long)ir_load_i64(n->data, t->dtype, k));
    }
    if (shown < count)
        fprintf(f, ", ...] (%lld elements)", (long long)count);
    else
        fputc(']', f);
}

static void print_node(const IrNode *n, FILE *f, bool with_data, int indent)
{
    fprintf(f, "%*s%%%d = %s(", indent, "", n->id, ir_op_name(n->op));
    for (int i = 0; i < n->n_inputs; i++) {
        if (i)
            fputs(", ", f);
        print_ref(f, n->inputs[i]);
    }
    for (int i = 0; i < n->n_ctrl; i++) {
        fputs(i || n->n_inputs ? ", ^" : "^", f);
        if (n->ctrl[i])
            fprintf(f, "%%%d", n->ctrl[i]->id);
        else
            fputs("%?", f);
    }
    fputc(')', f);
    print_params(f, &n->p);
    fputs(" : ", f);
    if (n->n_outputs == 1) {
        print_type(f, &n->out[0].type);
    } else {
        fputc('(', f);
        for (int k = 0; k < n->n_outputs; k++) {
            if (k)
                fputs(", ", f);
            print_type(f, &n->out[k].type);
        }
        fputc(')', f);
    }
    if (n->device) {
        fputs(" device=", f);
        print_str(f, n->device);
    }
    if (n->key) {
        fputs(" key=", f);
        print_str(f, n->key);
    }
    bool planned = false;
    for (int k = 0; k < n->n_outputs; k++)
        planned |= n->out[k].offset != -1;
    if (planned) {
        fputs(" offset=[", f);
        for (int k = 0; k < n->n_outputs; k++)
            fprintf(f, "%s%lld", k ? "," : "", (long long)n->out[k].offset);
        fputc(']', f);
    }
    if (n->workspace_bytes || n->workspace_offset != -1)
        fprintf(f, " workspace=%lld@%lld", (long long)n->workspace_bytes, (long long)n->workspace_offset);
    if (n->op == OP_CONST) {
        if (with_data) {
            fputs(" = hex:", f);
            print_hex(f, n->data, n->data_bytes);
        } else {
            print_summary(f, n);
        }
    }
    if (n->origin || n->origin_op) {
        fputs("  #", f);
        if (n->origin)
            fprintf(f, " %s", n->origin);
        if (n->origin_op)
            fprintf(f, " (%s)", n->origin_op);
    }
    fputc('\n', f);
}

/* The lines of g at `indent` spaces: header lines, then nodes, each region
 * op followed by its regions (depth counts enclosing regions). */
static void print_body(const IrGraph *g, FILE *f, bool with_data, int indent, int depth)
{
    if (g->arena_bytes || g->weights_bytes || g->unplanned_bytes)
        fprintf(f, "%*smemory arena=%lld weights=%lld unplanned=%lld\n", indent, "",
                (long long)g->arena_bytes, (long long)g->weights_bytes, (long long)g->unplanned_bytes);
    for (int i = 0; i < g->n_feeds; i++) {
        fprintf(f, "%*sfeed ", indent, "");
        print_str(f, g->feeds[i].name);
        fprintf(f, " %%%d\n", g->feeds[i].arg ? g->feeds[i].arg->id : -1);
    }
    if (depth == 0) {
        for (int i = 0; i < g->n_fetches; i++) {
            fputs("fetch ", f);
            print_str(f, g->fetches[i].name);
            fputc(' ', f);
            print_ref(f, g->fetches[i].value);
            fputc('\n', f);
        }
    }
    IR_FOR_EACH(g, n) {
        print_node(n, f, with_data, indent);
        for (int k = 0; k < n->n_regions; k++) {
            fprintf(f, "%*sregion %d {\n", indent + 2, "", k);
            if (!n->regions[k])
                fprintf(f, "%*s# missing\n", indent + 4, "");
            else if (depth + 1 > IR_MAX_REGION_DEPTH)
                fprintf(f, "%*s# nested more than %d deep\n", indent + 4, "", IR_MAX_REGION_DEPTH);
            else
                print_body(n->regions[k], f, with_data, indent + 4, depth + 1);
            fprintf(f, "%*s}\n", indent + 2, "");
        }
    }
    if (depth > 0) {
        fprintf(f, "%*syield", indent, "");
        for (int i = 0; i < g->n_fetches; i++) {
            fputs(i ? ", " : " ", f);
            print_str(f, g->fetches[i].name);
            fputc(' ', f);
            print_ref(f, g->fetches[i].value);
        }
        fputc('\n', f);
    }
}

void ir_print(const IrGraph *g, FILE *f, bool with_data)
{
    fputs("graph ", f);
    print_str(f, g->name ? g->name : "model");
    fputc('\n', f);
    print_body(g, f, with_data, 0, 0);
}

static void dot_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
}

/* Fill colour of a node's device (placed graphs): a fixed palette indexed
 * by a hash of the device text, so one device has one colour in every dump. */
static const char *dot_device_colour(const char *device)
{
    /* ordered so that CPU:0 (lightblue), CPU:1 (lightsalmon), CPU:2 and GPU:0 of
     * the local task differ clearly */
    static const char *const palette[] = {"palegreen", "lightcyan", "khaki", "plum",
                                          "lightblue", "thistle", "peachpuff", "lightsalmon"};
    uint32_t h = 2166136261u;
    for (const char *c = device; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    return palette[h % (sizeof palette / sizeof palette[0])];
}

/* Label of region k of region op n. */
static void dot_region_label(FILE *f, const IrNode *n, int k)
{
    if (n->op == OP_WHILE) {
        fprintf(f, "while %%%d %s", n->id, k == 0 ? "cond" : k == 1 ? "body" : "region");
        if (k > 1)
            fprintf(f, " %d", k);
        return;
    }
    fprintf(f, "cond %%%d branch %d", n->id, k);
    bool is_bool = n->n_inputs > 0 && n->inputs[0].node && ir_value_type(n->inputs[0])->dtype == TCRT_BOOL;
    if (is_bool)
        fputs(k == 0 ? " (true)" : " (false)", f);
    else if (k == n->n_regions - 1)
        fputs(" (default)", f);
}

static bool has_regions(const IrGraph *g)
{
    IR_FOR_EACH(g, n) {
        if (n->n_regions > 0)
            return true;
    }
    return false;
}

/* Writes the nodes and edges of g.  `pre` prefixes every DOT name of this
 * graph ("" at the top, "n7r1_" inside region 1 of %7); `ind` is the
 * indentation; recursion stops past IR_MAX_REGION_DEPTH. */
static void dot_body(const IrGraph *g, FILE *f, const char *pre, int ind, int depth)
{
    IR_FOR_EACH(g, n) {
        int ni = ind;
        if (n->n_regions > 0) {
            fprintf(f, "%*ssubgraph cluster_%sn%d {\n", ind, "", pre, n->id);
            fprintf(f, "%*slabel=\"%%%d %s\"; style=rounded;\n", ind + 2, "", n->id, ir_op_name(n->op));
            ni = ind + 2;
        }
        fprintf(f, "%*s%sn%d [label=\"%%%d %s", ni, "", pre, n->id, n->id, ir_op_name(n->op));
        for (int k = 0; k < n->n_outputs; k++) {
            char buf[160];
            fprintf(f, "\\n%s%s", ir_dtype_short(n->out[k].type.dtype),
                    ir_shape_str(&n->out[k].type.shape, buf, sizeof buf));
        }
        if (n->origin) {
            fputs("\\n", f);
            dot_str(f, n->origin);
        }
        fputs("\"", f);
        if (n->device && n->op != OP_CONST) {
            fprintf(f, ", style=filled, fillcolor=%s, tooltip=\"", dot_device_colour(n->device));
            dot_str(f, n->device);
            fputs("\"", f);
        } else if (n->op == OP_CONST || n->op == OP_ARG) {
            fputs(", style=filled, fillcolor=lightgrey", f);
        }
        fputs("];\n", f);
        for (int k = 0; k < n->n_regions; k++) {
            const IrGraph *r = n->regions[k];
            char sub[64 + 32 * (IR_MAX_REGION_DEPTH + 2)];
            snprintf(sub, sizeof sub, "%sn%dr%d_", pre, n->id, k);
            fprintf(f, "%*ssubgraph cluster_%sn%dr%d {\n", ni, "", pre, n->id, k);
            fprintf(f, "%*slabel=\"", ni + 2, "");
            dot_region_label(f, n, k);
            fputs("\"; style=dashed;\n", f);
            char target[32] = "yield";
            bool descend = r && depth + 1 <= IR_MAX_REGION_DEPTH && strlen(sub) + 32 < sizeof sub;
            if (descend)
                dot_body(r, f, sub, ni + 2, depth + 1);
            /* a yield node per region: its results, and the target of the op's
             * edge when the region has no nodes */
            fprintf(f, "%*s%syield [shape=oval, label=\"yield\"];\n", ni + 2, "", sub);
            if (descend) {
                for (int i = 0; i < r->n_fetches; i++)
                    if (r->fetches[i].value.node)
                        fprintf(f, "%*s%sn%d -> %syield;\n", ni + 2, "", sub, r->fetches[i].value.node->id,
                                sub);
                for (int i = 0; i < r->n_nodes; i++) {
                    if (r->nodes[i] && !r->nodes[i]->dead) {
                        snprintf(target, sizeof target, "n%d", r->nodes[i]->id); /* the region's first node */
                        break;
                    }
                }
            }
            fprintf(f, "%*s}\n", ni, "");
            fprintf(f, "%*s%sn%d -> %s%s [lhead=cluster_%sn%dr%d, style=dotted, arrowhead=odot];\n", ni, "",
                    pre, n->id, sub, target, pre, n->id, k);
        }
        if (n->n_regions > 0)
            fprintf(f, "%*s}\n", ind, "");
        /* edges after the cluster, so the inputs stay outside it */
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i].node)
                fprintf(f, "%*s%sn%d -> %sn%d;\n", ind, "", pre, n->inputs[i].node->id, pre, n->id);
        for (int i = 0; i < n->n_ctrl; i++)
            if (n->ctrl[i])
                fprintf(f, "%*s%sn%d -> %sn%d [style=dashed];\n", ind, "", pre, n->ctrl[i]->id, pre, n->id);
    }
}

void ir_print_dot(const IrGraph *g, FILE *f)
{
    fputs("digraph \"", f);
    dot_str(f, g->name ? g->name : "model");
    fputs("\" {\n  node [shape=box, fontname=\"monospace\"];\n", f);
    if (has_regions(g))
        fputs("  compound=true;\n", f);
    dot_body(g, f, "", 2, 0);
    for (int i = 0; i < g->n_fetches; i++) {
        fprintf(f, "  fetch%d [shape=oval, label=\"", i);
        dot_str(f, g->fetches[i].name);
        fputs("\"];\n", f);
        if (g->fetches[i].value.node)
            fprintf(f, "  n%d -> fetch%d;\n", g->fetches[i].value.node->id, i);
    }
    fputs("}\n", f);
}
