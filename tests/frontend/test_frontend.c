/* tests/frontend/test_frontend.c - unit tests of the model file readers.
 *
 * Hand-written inputs only (the real corpus is test_frontend_corpus.c):
 * the text-format parser on every syntax rule and its pinned error
 * messages, binary GraphDef round trips and corrupt input, format sniffing
 * in fe_load, the strict JSON parser, TF.js weights (plain, quantized,
 * float16, strings, sharded, missing/short shards) and tfcompile configs.
 * Expected numbers are derived by hand in the comments.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/frontend/fe_int.h"

static Tensorflow__GraphDef *parse_graph(const char *text, Status *st)
{
    return (Tensorflow__GraphDef *)fe_pbtxt_parse(&tensorflow__graph_def__descriptor, text, strlen(text),
                                                  "t.pbtxt", st);
}

static void free_graph(Tensorflow__GraphDef *g)
{
    if (g)
        protobuf_c_message_free_unpacked(&g->base, NULL);
}

static Tensorflow__AttrValue *attr(Tensorflow__NodeDef *n, const char *key)
{
    for (size_t i = 0; i < n->n_attr; i++)
        if (!strcmp(n->attr[i]->key, key))
            return n->attr[i]->value;
    return NULL;
}

/* Expects parse failure with exactly `msg`. */
static void expect_error(const char *text, const char *msg)
{
    Status st = ST_INIT;
    Tensorflow__GraphDef *g = parse_graph(text, &st);
    ck_assert_ptr_null(g);
    ck_assert_int_ne(st.code, ST_OK);
    ck_assert_str_eq(st.msg, msg);
}

/* ---- text format --------------------------------------------------------- */

START_TEST(test_pbtxt_basic)
{
    const char *text = "# RUN: some-tool %s | FileCheck %s\n"
                       "node {\n"
                       "  name: \"x\"   # trailing comment\n"
                       "  op: 'Const'\n"
                       "  input: \"a\" input: \"^b\"\n"
                       "  attr { key: \"dtype\" value { type: DT_FLOAT } }\n"
                       "  attr {\n"
                       "    key: \"value\"\n"
                       "    value: {\n"
                       "      tensor <\n"
                       "        dtype: 3\n"
                       "        tensor_shape { dim { size: 2 } dim { size: -1 name: \"n\" } }\n"
                       "        int_val: [1, -2, 0x10, 010]\n"
                       "      >\n"
                       "    }\n"
                       "  }\n"
                       "}\n"
                       "node [ { name: \"y\" op: \"Add\" }, { name: \"z\" } ]\n"
                       "versions { producer: 27, min_consumer: 12; }\n"
                       "library { function { signature { name: \"f\" } } gradient { function_name: \"f\" "
                       "gradient_func: \"g\" } }\n";
    Status st = ST_INIT;
    Tensorflow__GraphDef *g = parse_graph(text, &st);
    ck_assert_msg(g != NULL, "%s", st.msg);
    ck_assert_uint_eq(g->n_node, 3);
    Tensorflow__NodeDef *n = g->node[0];
    ck_assert_str_eq(n->name, "x");
    ck_assert_str_eq(n->op, "Const");
    ck_assert_uint_eq(n->n_input, 2);
    ck_assert_str_eq(n->input[1], "^b");
    ck_assert_uint_eq(n->n_attr, 2);
    Tensorflow__AttrValue *dt = attr(n, "dtype");
    ck_assert_int_eq(dt->value_case, TENSORFLOW__ATTR_VALUE__VALUE_TYPE);
    ck_assert_int_eq(dt->type, TENSORFLOW__DATA_TYPE__DT_FLOAT);
    Tensorflow__AttrValue *v = attr(n, "value");
    ck_assert_int_eq(v->value_case, TENSORFLOW__ATTR_VALUE__VALUE_TENSOR);
    Tensorflow__TensorProto *t = v->tensor;
    ck_assert_int_eq(t->dtype, TENSORFLOW__DATA_TYPE__DT_INT32); /* enum by number: 3 */
    ck_assert_uint_eq(t->tensor_shape->n_dim, 2);
    ck_assert_int_eq(t->tensor_shape->dim[0]->size, 2);
    ck_assert_int_eq(t->tensor_shape->dim[1]->size, -1);
    ck_assert_str_eq(t->tensor_shape->dim[1]->name, "n");
    ck_assert_uint_eq(t->n_int_val, 4);
    ck_assert_int_eq(t->int_val[0], 1);
    ck_assert_int_eq(t->int_val[1], -2);
    ck_assert_int_eq(t->int_val[2], 16); /* 0x10 */
    ck_assert_int_eq(t->int_val[3], 8);  /* octal 010 */
    ck_assert_str_eq(g->node[1]->name, "y");
    ck_assert_str_eq(g->node[1]->op, "Add");
    ck_assert_str_eq(g->node[2]->op, ""); /* default */
    ck_assert_int_eq(g->versions->producer, 27);
    ck_assert_int_eq(g->versions->min_consumer, 12);
    ck_assert_uint_eq(g->library->n_function, 1);
    ck_assert_str_eq(g->library->function[0]->signature->name, "f");
    ck_assert_str_eq(g->library->gradient[0]->gradient_func, "g");
    free_graph(g);
}
END_TEST

START_TEST(test_pbtxt_strings)
{
    /* "\000\000\200?" = bytes 00 00 80 3f = 1.0f little endian;
     * "\x41\102" = "AB"; adjacent literals concatenate. */
    const char *text = "node { name: \"a\\n\\t\\\\\\\"\\'q\" \"-\" 'cat' op: \"\\x41\\102\"\n"
                       "  attr { key: \"v\" value { tensor { tensor_content: \"\\000\\000\\200?\" } } }\n"
                       "  attr { key: \"s\" value { s: \"\\303\\251\" } } }\n";
    Status st = ST_INIT;
    Tensorflow__GraphDef *g = parse_graph(text, &st);
    ck_assert_msg(g != NULL, "%s", st.msg);
    ck_assert_str_eq(g->node[0]->name, "a\n\t\\\"'q-cat");
    ck_assert_str_eq(g->node[0]->op, "AB");
    ProtobufCBinaryData c = attr(g->node[0], "v")->tensor->tensor_content;
    ck_assert_uint_eq(c.len, 4);
    float f;
    memcpy(&f, c.data, 4);
    ck_assert(f == 1.0f);
    ProtobufCBinaryData s = attr(g->node[0], "s")->s;
    ck_assert_uint_eq(s.len, 2); /* é in UTF-8: C3 A9 */
    ck_assert_uint_eq(s.data[0], 0xC3);
    ck_assert_uint_eq(s.data[1], 0xA9);
    free_graph(g);
}
END_TEST

START_TEST(test_pbtxt_numbers_bools)
{
    const char *text = "node { name: \"n\"\n"
                       "  attr { key: \"f1\" value { f: 1.5f } }\n"
                       "  attr { key: \"f2\" value { f: -inf } }\n"
                       "  attr { key: \"f3\" value { f: nan } }\n"
                       "  attr { key: \"f4\" value { f: .5 } }\n"
                       "  attr { key: \"f5\" value { f: 1e-3 } }\n"
                       "  attr { key: \"f6\" value { f: 7 } }\n"
                       "  attr { key: \"f7\" value { f: Infinity } }\n"
                       "  attr { key: \"i\" value { i: -9223372036854775808 } }\n"
                       "  attr { key: \"b1\" value { b: true } }\n"
                       "  attr { key: \"b2\" value { b: False } }\n"
                       "  attr { key: \"b3\" value { b: t } }\n"
                       "  attr { key: \"b4\" value { b: 1 } }\n"
                       "  attr { key: \"b5\" value { b: f } }\n"
                       "  attr { key: \"l\" value { list { b: [true, 0, True] f: [1, 2.5] i: [] } } }\n"
                       "}\n";
    Status st = ST_INIT;
    Tensorflow__GraphDef *g = parse_graph(text, &st);
    ck_assert_msg(g != NULL, "%s", st.msg);
    Tensorflow__NodeDef *n = g->node[0];
    ck_assert(attr(n, "f1")->f == 1.5f);
    ck_assert(isinf(attr(n, "f2")->f) && attr(n, "f2")->f < 0);
    ck_assert(isnan(attr(n, "f3")->f));
    ck_assert(attr(n, "f4")->f == 0.5f);
    ck_assert(attr(n, "f5")->f == 1e-3f);
    ck_assert(attr(n, "f6")->f == 7.0f);
    ck_assert(isinf(attr(n, "f7")->f) && attr(n, "f7")->f > 0);
    ck_assert(attr(n, "i")->i == INT64_MIN);
    ck_assert_int_eq(attr(n, "b1")->b, 1);
    ck_assert_int_eq(attr(n, "b2")->b, 0);
    ck_assert_int_eq(attr(n, "b2")->value_case, TENSORFLOW__ATTR_VALUE__VALUE_B);
    ck_assert_int_eq(attr(n, "b3")->b, 1);
    ck_assert_int_eq(attr(n, "b4")->b, 1);
    ck_assert_int_eq(attr(n, "b5")->b, 0);
    Tensorflow__AttrValue__ListValue *l = attr(n, "l")->list;
    ck_assert_uint_eq(l->n_b, 3);
    ck_assert_int_eq(l->b[1], 0);
    ck_assert_int_eq(l->b[2], 1);
    ck_assert_uint_eq(l->n_f, 2);
    ck_assert(l->f[1] == 2.5f);
    ck_assert_uint_eq(l->n_i, 0);
    free_graph(g);
}
END_TEST

START_TEST(test_pbtxt_unknown_and_oneof)
{
    /* unknown fields of every shape are skipped; a oneof set twice keeps the
     * last member (the first is freed: run under valgrind/ASan for leaks) */
    const char *text = "unknown_scalar: 5\n"
                       "unknown_neg: -inf\n"
                       "unknown_str: \"a\" \"b\"\n"
                       "unknown_msg { a: 1 b { c: \"}\" } d: [1, 2] }\n"
                       "unknown_colon_msg: < x: 1 >\n"
                       "unknown_list: [ {a: 1}, {b: 2} ]\n"
                       "[some.extension] { z: 1 }\n"
                       "node { name: \"n\" experimental_type { type_id: TFT_PRODUCT }\n"
                       "  attr { key: \"o\" value { s: \"abc\" i: 4 } }\n"
                       "  attr { key: \"p\" value { tensor { dtype: DT_FLOAT } list { i: 1 } } }\n"
                       "}\n"
                       "debug_info { files: \"x\" }\n";
    Status st = ST_INIT;
    Tensorflow__GraphDef *g = parse_graph(text, &st);
    ck_assert_msg(g != NULL, "%s", st.msg);
    ck_assert_uint_eq(g->n_node, 1);
    Tensorflow__AttrValue *o = attr(g->node[0], "o");
    ck_assert_int_eq(o->value_case, TENSORFLOW__ATTR_VALUE__VALUE_I);
    ck_assert_int_eq(o->i, 4);
    Tensorflow__AttrValue *p = attr(g->node[0], "p");
    ck_assert_int_eq(p->value_case, TENSORFLOW__ATTR_VALUE__VALUE_LIST);
    ck_assert_uint_eq(p->list->n_i, 1);
    free_graph(g);
}
END_TEST

START_TEST(test_pbtxt_errors)
{
    /* line 3 is `  attr { key: "T" value { type: DT_FOO } }`: DT_FOO starts at column 33 */
    expect_error("node {\n  name: \"a\"\n  attr { key: \"T\" value { type: DT_FOO } }\n}\n",
                 "t.pbtxt:3:33: unknown enum value 'DT_FOO' for field 'type'");
    /* `node { name "x" }`: the string is at column 13 */
    expect_error("node { name \"x\" }", "t.pbtxt:1:13: expected ':' after field 'name', found '\"x\"'");
    /* end of input right after `node {` (6 columns): column 7 */
    expect_error("node {", "t.pbtxt:1:7: unexpected end of input (expected '}')");
    expect_error("node { name: 5 }", "t.pbtxt:1:14: expected string for field 'name', found '5'");
    expect_error("versions { producer: 2147483648 }",
                 "t.pbtxt:1:22: integer out of range for int32 (field 'producer')");
    expect_error("versions { producer: 1.5 }",
                 "t.pbtxt:1:22: expected integer for field 'producer', found '1.5'");
    expect_error("node { attr { value { b: yes } } }",
                 "t.pbtxt:1:26: expected true or false for field 'b', found 'yes'");
    expect_error("node { name: \"abc }", "t.pbtxt:1:14: unterminated string");
    expect_error("node { name: \"\\q\" }", "t.pbtxt:1:14: invalid escape '\\q' in string");
    expect_error("node { } }", "t.pbtxt:1:10: expected field name, found '}'");
    expect_error("node: 3", "t.pbtxt:1:7: expected '{' for field 'node', found '3'");
    expect_error("node { name: [\"a\"] }", "t.pbtxt:1:14: list value for non-repeated field 'name'");
    /* adjacent strings in a list concatenate; a number after one is an error (column 20) */
    expect_error("node { input: [\"a\" 5] }",
                 "t.pbtxt:1:20: expected ',' or ']' in list for field 'input', found '5'");
    expect_error("\n\n  @", "t.pbtxt:3:3: unexpected character '@'");
    expect_error("this is not a valid graph def",
                 "t.pbtxt:1:6: expected ':' or '{' after field 'this', found 'is'");
    expect_error("junk { a { }", "t.pbtxt:1:13: unexpected end of input (unclosed '{')");
}
END_TEST

START_TEST(test_pbtxt_depth)
{
    /* each "attr { value { func { " opens 3 messages: 20 reps = 60 levels
     * (+1 for node) is fine, 40 reps = 121 levels is too deep */
    for (int reps = 20; reps <= 40; reps += 20) {
        size_t cap = 64 + (size_t)reps * 40;
        char *s = malloc(cap);
        strcpy(s, "node { ");
        for (int i = 0; i < reps; i++)
            strcat(s, "attr { value { func { ");
        for (int i = 0; i < reps * 3 + 1; i++)
            strcat(s, "}");
        Status st = ST_INIT;
        Tensorflow__GraphDef *g = parse_graph(s, &st);
        if (reps == 20) {
            ck_assert_msg(g != NULL, "%s", st.msg);
        } else {
            ck_assert_ptr_null(g);
            ck_assert_msg(strstr(st.msg, "messages nested deeper than 100 levels") != NULL, "%s", st.msg);
        }
        free_graph(g);
        free(s);
    }
    /* unknown fields nested deeply are rejected too (iterative skipping) */
    char *s = malloc(2000);
    s[0] = 0;
    for (int i = 0; i < 150; i++)
        strcat(s, "x{");
    Status st = ST_INIT;
    ck_assert_ptr_null(parse_graph(s, &st));
    ck_assert_msg(strstr(st.msg, "nested deeper than 100") != NULL, "%s", st.msg);
    free(s);
}
END_TEST

START_TEST(test_pbtxt_truncations)
{
    /* every prefix and every single-byte corruption of a valid text either
     * parses or fails with a message; none crashes */
    const char *text =
        "node { name: \"x\" op: \"Const\" attr { key: \"value\" value { tensor { dtype: DT_FLOAT "
        "tensor_shape { dim { size: 2 } } float_val: [1.5, -2e3] tensor_content: \"\\001\\x02\" } } } }\n"
        "versions { producer: 3 }";
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    for (size_t len = 0; len <= n; len++) {
        Status st = ST_INIT;
        ProtobufCMessage *m = fe_pbtxt_parse(&tensorflow__graph_def__descriptor, text, len, "p", &st);
        ck_assert(m != NULL || st.code != ST_OK);
        if (m)
            protobuf_c_message_free_unpacked(m, NULL);
    }
    const char junk[] = "{}<>[]:;,-\"'\\#x0.e \n\x01\xff";
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < sizeof junk - 1; j++) {
            memcpy(buf, text, n + 1);
            buf[i] = junk[j];
            Status st = ST_INIT;
            ProtobufCMessage *m = fe_pbtxt_parse(&tensorflow__graph_def__descriptor, buf, n, "p", &st);
            ck_assert(m != NULL || st.code != ST_OK);
            if (m)
                protobuf_c_message_free_unpacked(m, NULL);
        }
    free(buf);
}
END_TEST

/* ---- binary -------------------------------------------------------------- */

static uint8_t *pack_test_graph(size_t *n)
{
    Tensorflow__GraphDef g = TENSORFLOW__GRAPH_DEF__INIT;
    Tensorflow__NodeDef n1 = TENSORFLOW__NODE_DEF__INIT, n2 = TENSORFLOW__NODE_DEF__INIT;
    Tensorflow__NodeDef *nodes[] = {&n1, &n2};
    n1.name = "c";
    n1.op = "Const";
    n2.name = "y";
    n2.op = "Neg";
    char *inputs[] = {"c"};
    n2.input = inputs;
    n2.n_input = 1;
    Tensorflow__AttrValue av;
    tensorflow__attr_value__init(&av); /* (the INIT macro trips -Wmissing-braces on the oneof union) */
    av.value_case = TENSORFLOW__ATTR_VALUE__VALUE_TYPE;
    av.type = TENSORFLOW__DATA_TYPE__DT_HALF;
    Tensorflow__NodeDef__AttrEntry e = TENSORFLOW__NODE_DEF__ATTR_ENTRY__INIT;
    e.key = "T";
    e.value = &av;
    Tensorflow__NodeDef__AttrEntry *es[] = {&e};
    n2.attr = es;
    n2.n_attr = 1;
    g.node = nodes;
    g.n_node = 2;
    Tensorflow__VersionDef v = TENSORFLOW__VERSION_DEF__INIT;
    v.producer = 1234;
    g.versions = &v;
    *n = tensorflow__graph_def__get_packed_size(&g);
    uint8_t *buf = malloc(*n);
    tensorflow__graph_def__pack(&g, buf);
    return buf;
}

START_TEST(test_binary_roundtrip)
{
    size_t n;
    uint8_t *buf = pack_test_graph(&n);
    Status st = ST_INIT;
    Tensorflow__GraphDef *g = fe_graphdef_from_binary(buf, n, "g.pb", &st);
    ck_assert_msg(g != NULL, "%s", st.msg);
    ck_assert_uint_eq(g->n_node, 2);
    ck_assert_str_eq(g->node[1]->op, "Neg");
    ck_assert_str_eq(g->node[1]->input[0], "c");
    ck_assert_int_eq(attr(g->node[1], "T")->type, TENSORFLOW__DATA_TYPE__DT_HALF);
    ck_assert_int_eq(g->versions->producer, 1234);
    free_graph(g);
    /* every truncation either decodes (a prefix ending on a field
     * boundary) or fails with the pinned message */
    int failures = 0;
    for (size_t len = 0; len < n; len++) {
        Status s2 = ST_INIT;
        Tensorflow__GraphDef *t = fe_graphdef_from_binary(buf, len, "g.pb", &s2);
        if (!t) {
            failures++;
            ck_assert_str_eq(
                s2.msg,
                "g.pb: not a valid GraphDef (binary protobuf decode failed; file truncated or corrupt?)");
        }
        free_graph(t);
    }
    ck_assert_int_gt(failures, 0);
    /* single-byte corruptions: decode or fail, never crash */
    for (size_t i = 0; i < n; i++)
        for (int v = 0; v < 256; v += 17) {
            uint8_t *c = malloc(n);
            memcpy(c, buf, n);
            c[i] = (uint8_t)v;
            Status s4 = ST_INIT;
            Tensorflow__GraphDef *t = fe_graphdef_from_binary(c, n, "g.pb", &s4);
            ck_assert(t != NULL || s4.code != ST_OK);
            free_graph(t);
            free(c);
        }
    free(buf);
    /* garbage: field 31, wire type 7 (invalid) */
    const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    Status s3 = ST_INIT;
    ck_assert_ptr_null(fe_graphdef_from_binary(junk, sizeof junk, "j.pb", &s3));
    ck_assert_str_eq(
        s3.msg, "j.pb: not a valid GraphDef (binary protobuf decode failed; file truncated or corrupt?)");
}
END_TEST

START_TEST(test_binary_depth)
{
    /* NodeDef.attr(5) -> entry.value(2) AttrValue -> func(10) NameAttrList
     * -> attr(2) entry -> value(2) AttrValue -> ...: built inside out, 3
     * messages per round; 60 rounds = 180 levels + graph + node. */
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap), *tmp = malloc(cap);
    int tags[] = {0x12 /* NameAttrList.attr=2 */, 0x52 /* AttrValue.func=10 */, 0x12 /* entry.value=2 */};
    for (int r = 0; r < 60; r++)
        for (int k = 0; k < 3; k++) {
            size_t m = 0;
            tmp[m++] = (uint8_t)tags[k];
            size_t len = n;
            do {
                tmp[m++] = (uint8_t)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
                len >>= 7;
            } while (len);
            memcpy(tmp + m, buf, n);
            n += m;
            memcpy(buf, tmp, n);
        }
    /* wrap: GraphDef.node(1) { NodeDef.attr(5) { ... } } */
    for (int k = 0; k < 2; k++) {
        size_t m = 0;
        tmp[m++] = k == 0 ? 0x2a : 0x0a;
        size_t len = n;
        do {
            tmp[m++] = (uint8_t)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
            len >>= 7;
        } while (len);
        memcpy(tmp + m, buf, n);
        n += m;
        memcpy(buf, tmp, n);
    }
    Status st = ST_INIT;
    ck_assert_ptr_null(fe_graphdef_from_binary(buf, n, "deep.pb", &st));
    ck_assert_str_eq(st.msg, "deep.pb: not a valid GraphDef (messages nested deeper than 100 levels)");
    free(buf);
    free(tmp);
}
END_TEST

/* ---- fe_load: sniffing ---------------------------------------------------- */

static char tmpdir[64];

static void make_tmpdir(void)
{
    strcpy(tmpdir, "/tmp/tfcc_fe_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmpdir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static char *tmp_write(const char *name, const void *data, size_t n)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
    return path;
}

START_TEST(test_load_sniffing)
{
    make_tmpdir();
    size_t n;
    uint8_t *bin = pack_test_graph(&n);
    /* binary under a .pbtxt name, text under a .pb name */
    char *p = tmp_write("bin.pbtxt", bin, n);
    FeModel m;
    Status st = ST_INIT;
    ck_assert_msg(fe_load(p, &m, &st), "%s", st.msg);
    ck_assert_int_eq(m.format, FE_GRAPHDEF_BINARY);
    ck_assert_uint_eq(m.graph->n_node, 2);
    ck_assert_str_eq(m.path, p);
    fe_model_free(&m);
    free(bin);

    const char *txt = "node { name: \"a\" op: \"Placeholder\" }\n";
    p = tmp_write("text.pb", txt, strlen(txt));
    ck_assert_msg(fe_load(p, &m, &st), "%s", st.msg);
    ck_assert_int_eq(m.format, FE_GRAPHDEF_TEXT);
    ck_assert_str_eq(m.graph->node[0]->op, "Placeholder");
    fe_model_free(&m);

    /* binary GraphDef with versions only: 22 02 08 05 = field 4 {producer 5} */
    const uint8_t nonodes[] = {0x22, 0x02, 0x08, 0x05};
    p = tmp_write("empty.pb", nonodes, sizeof nonodes);
    ck_assert(!fe_load(p, &m, &st));
    char want[512];
    snprintf(want, sizeof want, "%s: the graph has no nodes (read as GraphDef (binary); is this a GraphDef?)",
             p);
    ck_assert_str_eq(st.msg, want);

    Status st2 = ST_INIT;
    const uint8_t trunc[] = {0x0a, 0x10, 0x0a, 0x01};
    p = tmp_write("trunc.pb", trunc, sizeof trunc);
    ck_assert(!fe_load(p, &m, &st2));
    snprintf(want, sizeof want,
             "%s: not a valid GraphDef (binary protobuf decode failed; file truncated or corrupt?)", p);
    ck_assert_str_eq(st2.msg, want);

    Status st3 = ST_INIT;
    const char *bad = "node {\n  name: \"a\"\n  op: Const\n}\n";
    p = tmp_write("bad.pbtxt", bad, strlen(bad));
    ck_assert(!fe_load(p, &m, &st3));
    snprintf(want, sizeof want, "%s:3:7: expected string for field 'op', found 'Const'", p);
    ck_assert_str_eq(st3.msg, want);

    Status st4 = ST_INIT;
    snprintf(want, sizeof want, "%s/missing.pb", tmpdir);
    ck_assert(!fe_load(want, &m, &st4));
    ck_assert_int_eq(st4.code, ST_IO);
    ck_assert_msg(strncmp(st4.msg, want, strlen(want)) == 0, "%s", st4.msg);

    Status st5 = ST_INIT;
    uint8_t *buf = fe_read_file(p, 4, &n, &st5);
    ck_assert_ptr_null(buf);
    snprintf(want, sizeof want, "%s: file is %zu bytes, more than the limit of 4", p, strlen(bad));
    ck_assert_str_eq(st5.msg, want);
    rm_tmpdir();
}
END_TEST

/* ---- JSON ------------------------------------------------------------------- */

START_TEST(test_json_parse)
{
    const char *text = "{\"a\": [1, -2.5e1, 12345678901234567890, true, false, null],\n"
                       " \"s\": \"x\\u00e9\\ud83d\\ude00\\n\\/\", \"o\": {}, \"e\": []}";
    Status st = ST_INIT;
    JsonValue *v = fe_json_parse(text, strlen(text), "j.json", &st);
    ck_assert_msg(v != NULL, "%s", st.msg);
    const JsonValue *a = fe_json_get(v, "a");
    ck_assert_int_eq(a->type, JSON_ARRAY);
    ck_assert_uint_eq(a->n, 6);
    ck_assert(a->items[1]->num == -25.0);
    ck_assert_str_eq(a->items[2]->str, "12345678901234567890"); /* literal kept */
    ck_assert_int_eq(a->items[3]->type, JSON_BOOL);
    ck_assert_int_eq(a->items[3]->b, 1);
    ck_assert_int_eq(a->items[5]->type, JSON_NULL);
    const JsonValue *s = fe_json_get(v, "s");
    /* x, é = C3 A9, U+1F600 = F0 9F 98 80, \n, / */
    ck_assert_uint_eq(s->len, 9);
    ck_assert_mem_eq(s->str, "x\xc3\xa9\xf0\x9f\x98\x80\n/", 9);
    ck_assert_int_eq(fe_json_get(v, "o")->type, JSON_OBJECT);
    ck_assert_ptr_null(fe_json_get(v, "missing"));
    fe_json_free(v);

    struct {
        const char *text, *msg;
    } bad[] = {
        {"[1, 2,]", "b.json:1:7: invalid JSON: unexpected character ']'"},
        {"{\"a\": 01}", "b.json:1:7: invalid JSON: leading zero in number"},
        {"\"\\ud800\"", "b.json:1:8: invalid JSON: unpaired UTF-16 surrogate in \\u escape"},
        {"\"\xff\"", "b.json:1:2: invalid JSON: invalid UTF-8 in string"},
        {"{\"a\" 1}", "b.json:1:6: invalid JSON: expected ':' after object key"},
        {"[1]\n x", "b.json:2:2: invalid JSON: trailing characters after the JSON value"},
        {"{\"a\": \"b", "b.json:1:7: invalid JSON: unterminated string"},
        {"[1 2]", "b.json:1:4: invalid JSON: expected ',' or ']'"},
        {"NaN", "b.json:1:1: invalid JSON: unexpected character 'N'"},
        {"", "b.json:1:1: invalid JSON: unexpected end of input"},
        {"\"a\tb\"", "b.json:1:3: invalid JSON: control character in string"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Status s2 = ST_INIT;
        ck_assert_ptr_null(fe_json_parse(bad[i].text, strlen(bad[i].text), "b.json", &s2));
        ck_assert_str_eq(s2.msg, bad[i].msg);
    }
    /* depth: 101 nested arrays fail, 100 pass */
    char deep[256];
    for (int d = 100; d <= 101; d++) {
        memset(deep, '[', (size_t)d);
        memset(deep + d, ']', (size_t)d);
        Status s3 = ST_INIT;
        JsonValue *dv = fe_json_parse(deep, (size_t)(2 * d), "d.json", &s3);
        ck_assert(d == 100 ? dv != NULL : dv == NULL);
        fe_json_free(dv);
    }
}
END_TEST

START_TEST(test_json_to_pb)
{
    const char *text =
        "{\"node\": [{\"name\": \"c\", \"op\": \"Const\", \"input\": [\"x\", \"y:1\"],"
        " \"attr\": {\"value\": {\"tensor\": {\"dtype\": \"DT_INT32\", \"tensorShape\": {\"dim\": "
        "[{\"size\": \"3\"}]},"
        "   \"int_val\": [1, \"-2\", 3e0], \"tensorContent\": \"AAECAw==\"}},"
        "  \"l\": {\"list\": {\"i\": [\"1\", \"2\"], \"type\": [\"DT_FLOAT\", 3], \"s\": [\"YQ\"]}},"
        "  \"f\": {\"f\": \"NaN\"}, \"b\": {\"b\": true}, \"u\": null}, \"unknownKey\": {\"deep\": [1]}}],"
        " \"versions\": {\"producer\": 1, \"badConsumers\": [4]},"
        " \"library\": {\"function\": [{\"signature\": {\"name\": \"fn\", \"inputArg\": [{\"name\": \"a\", "
        "\"type\": \"DT_FLOAT\"}]},"
        "   \"ret\": {\"out\": \"a\"}}]}}";
    Status st = ST_INIT;
    JsonValue *v = fe_json_parse(text, strlen(text), "m.json", &st);
    ck_assert_msg(v != NULL, "%s", st.msg);
    Tensorflow__GraphDef *g = (Tensorflow__GraphDef *)fe_pb_new(&tensorflow__graph_def__descriptor);
    ck_assert_msg(fe_json_to_pb(v, &g->base, "m.json", "", &st), "%s", st.msg);
    Tensorflow__NodeDef *n = g->node[0];
    ck_assert_str_eq(n->input[1], "y:1");
    Tensorflow__TensorProto *t = attr(n, "value")->tensor;
    ck_assert_int_eq(t->dtype, TENSORFLOW__DATA_TYPE__DT_INT32);
    ck_assert_int_eq(t->tensor_shape->dim[0]->size, 3);
    ck_assert_uint_eq(t->n_int_val, 3);
    ck_assert_int_eq(t->int_val[1], -2);
    ck_assert_int_eq(t->int_val[2], 3);
    /* base64 "AAECAw==" = 00 01 02 03 */
    ck_assert_uint_eq(t->tensor_content.len, 4);
    ck_assert_mem_eq(t->tensor_content.data, "\x00\x01\x02\x03", 4);
    Tensorflow__AttrValue__ListValue *l = attr(n, "l")->list;
    ck_assert_uint_eq(l->n_i, 2);
    ck_assert_int_eq(l->i[1], 2);
    ck_assert_int_eq(l->type[0], TENSORFLOW__DATA_TYPE__DT_FLOAT);
    ck_assert_int_eq(l->type[1], TENSORFLOW__DATA_TYPE__DT_INT32);
    ck_assert_uint_eq(l->s[0].len, 1); /* "YQ" = "a" */
    ck_assert_int_eq(l->s[0].data[0], 'a');
    ck_assert(isnan(attr(n, "f")->f));
    ck_assert_int_eq(attr(n, "b")->b, 1);
    ck_assert_int_eq(g->versions->bad_consumers[0], 4);
    ck_assert_str_eq(g->library->function[0]->signature->input_arg[0]->name, "a");
    ck_assert_str_eq(g->library->function[0]->ret[0]->key, "out");
    ck_assert_str_eq(g->library->function[0]->ret[0]->value, "a");
    free_graph(g);
    fe_json_free(v);

    const char *bad = "{\"node\": [{\"name\": \"a\"}, {\"attr\": {\"T\": {\"type\": \"DT_NOPE\"}}}]}";
    Status s2 = ST_INIT;
    v = fe_json_parse(bad, strlen(bad), "m.json", &s2);
    g = (Tensorflow__GraphDef *)fe_pb_new(&tensorflow__graph_def__descriptor);
    ck_assert(!fe_json_to_pb(v, &g->base, "m.json", "modelTopology", &s2));
    /* "DT_NOPE" starts at column 50 of the one-line text */
    ck_assert_str_eq(
        s2.msg,
        "m.json:1:50: modelTopology.node[1].attr[\"T\"].type: unknown enum value 'DT_NOPE' for field 'type'");
    free_graph(g);
    fe_json_free(v);
}
END_TEST

/* ---- TF.js ------------------------------------------------------------------- */

static const char *tfjs_json =
    "{\"format\": \"graph-model\", \"modelTopology\": {\"node\": ["
    " {\"name\": \"w\", \"op\": \"Const\", \"attr\": {\"value\": {\"tensor\": {\"dtype\": \"DT_FLOAT\"}}, "
    "\"dtype\": {\"type\": \"DT_FLOAT\"}}},"
    " {\"name\": \"q\", \"op\": \"Const\"},"
    " {\"name\": \"h\", \"op\": \"Const\", \"attr\": {\"value\": {\"s\": \"eA==\"}}},"
    " {\"name\": \"i\", \"op\": \"Const\"},"
    " {\"name\": \"qi\", \"op\": \"Const\"},"
    " {\"name\": \"b\", \"op\": \"Const\"},"
    " {\"name\": \"s\", \"op\": \"Const\"},"
    " {\"name\": \"x\", \"op\": \"Placeholder\"}],"
    " \"versions\": {\"producer\": 7}},"
    " \"weightsManifest\": ["
    "  {\"paths\": [\"group1-shard1of2\", \"group1-shard2of2\"], \"weights\": ["
    "   {\"name\": \"w\", \"shape\": [2], \"dtype\": \"float32\"},"
    "   {\"name\": \"unused\", \"shape\": [1], \"dtype\": \"float32\"},"
    "   {\"name\": \"q\", \"shape\": [2, 2], \"dtype\": \"float32\", \"quantization\": {\"dtype\": "
    "\"uint8\", \"scale\": 0.5, \"min\": -1}},"
    "   {\"name\": \"h\", \"shape\": [3], \"dtype\": \"float32\", \"quantization\": {\"dtype\": \"float16\", "
    "\"original_dtype\": \"float32\"}}]},"
    "  {\"paths\": [\"sub/group2-shard1of1.bin\"], \"weights\": ["
    "   {\"name\": \"i\", \"shape\": [], \"dtype\": \"int32\"},"
    "   {\"name\": \"qi\", \"shape\": [2], \"dtype\": \"int32\", \"quantization\": {\"dtype\": \"uint16\", "
    "\"scale\": 1, \"min\": -3, \"original_dtype\": \"int32\"}},"
    "   {\"name\": \"b\", \"shape\": [3], \"dtype\": \"bool\"},"
    "   {\"name\": \"s\", \"shape\": [2], \"dtype\": \"string\"}]}]}";

/* group 1: w = 1.0f, -2.0f (00 00 80 3f, 00 00 00 c0); unused = 0.0f;
 *   q = uint8 0,1,2,4 -> q*0.5-1 = -1, -0.5, 0, 1;
 *   h = float16 3c00 (1.0), c000 (-2.0), 0001 (2^-24, smallest subnormal).
 *   Split into shards after 6 bytes.
 * group 2: i = 7; qi = uint16 5, 65535 -> 2, 65532; b = 1,0,1;
 *   s = "ab", "" as uint32 LE length + bytes. */
static const uint8_t g1[] = {
    0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, /* | shard 2 */ 0x00, 0xc0, 0, 0, 0, 0, 0, 1, 2, 4,
    0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00};
static const uint8_t g2[] = {7, 0, 0, 0, 5, 0, 0xff, 0xff, 1, 0, 1, 2, 0, 0, 0, 'a', 'b', 0, 0, 0, 0};

static float f32_at(const ProtobufCBinaryData *b, size_t i)
{
    float f;
    memcpy(&f, b->data + 4 * i, 4);
    return f;
}

static void write_tfjs(bool with_shard2, size_t g2_len)
{
    tmp_write("model.json", tfjs_json, strlen(tfjs_json));
    tmp_write("group1-shard1of2", g1, 6);
    if (with_shard2)
        tmp_write("group1-shard2of2", g1 + 6, sizeof g1 - 6);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/sub", tmpdir);
    mkdir(sub, 0700);
    tmp_write("sub/group2-shard1of1.bin", g2, g2_len);
}

START_TEST(test_json_mutations)
{
    /* every prefix and single-byte corruption of a model.json either
     * converts or fails with a message */
    size_t n = strlen(tfjs_json);
    char *buf = malloc(n + 1);
    const char junk[] = "{}[]:,\"\\0-e.tn \x01\xc3";
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= sizeof junk - 1; j++) {
            memcpy(buf, tfjs_json, n + 1);
            size_t len = n;
            if (j == sizeof junk - 1)
                len = i; /* prefix */
            else
                buf[i] = junk[j];
            Status st = ST_INIT;
            JsonValue *v = fe_json_parse(buf, len, "m.json", &st);
            if (!v) {
                ck_assert_int_ne(st.code, ST_OK);
                continue;
            }
            const JsonValue *topo = fe_json_get(v, "modelTopology");
            if (topo) {
                Tensorflow__GraphDef *g =
                    (Tensorflow__GraphDef *)fe_pb_new(&tensorflow__graph_def__descriptor);
                bool ok = fe_json_to_pb(topo, &g->base, "m.json", "modelTopology", &st);
                ck_assert(ok || st.code != ST_OK);
                free_graph(g);
            }
            fe_json_free(v);
        }
    free(buf);
}
END_TEST

START_TEST(test_tfjs_weights)
{
    make_tmpdir();
    write_tfjs(true, sizeof g2);
    char path[256];
    snprintf(path, sizeof path, "%s/model.json", tmpdir);
    FeModel m;
    Status st = ST_INIT;
    ck_assert_msg(fe_load(path, &m, &st), "%s", st.msg);
    ck_assert_int_eq(m.format, FE_TFJS);
    Tensorflow__GraphDef *g = m.graph;
    ck_assert_uint_eq(g->n_node, 8);
    ck_assert_int_eq(g->versions->producer, 7);

    Tensorflow__TensorProto *t = attr(g->node[0], "value")->tensor;
    ck_assert_int_eq(t->dtype, TENSORFLOW__DATA_TYPE__DT_FLOAT);
    ck_assert_uint_eq(t->tensor_shape->n_dim, 1);
    ck_assert_int_eq(t->tensor_shape->dim[0]->size, 2);
    ck_assert_uint_eq(t->tensor_content.len, 8);
    ck_assert(f32_at(&t->tensor_content, 0) == 1.0f);
    ck_assert(f32_at(&t->tensor_content, 1) == -2.0f);

    t = attr(g->node[1], "value")->tensor; /* q: attrs created */
    ck_assert_int_eq(attr(g->node[1], "dtype")->type, TENSORFLOW__DATA_TYPE__DT_FLOAT);
    ck_assert_uint_eq(t->tensor_content.len, 16);
    ck_assert(f32_at(&t->tensor_content, 0) == -1.0f);
    ck_assert(f32_at(&t->tensor_content, 1) == -0.5f);
    ck_assert(f32_at(&t->tensor_content, 2) == 0.0f);
    ck_assert(f32_at(&t->tensor_content, 3) == 1.0f);

    Tensorflow__AttrValue *hv = attr(g->node[2], "value"); /* was an "s" value: replaced */
    ck_assert_int_eq(hv->value_case, TENSORFLOW__ATTR_VALUE__VALUE_TENSOR);
    t = hv->tensor;
    ck_assert_uint_eq(t->tensor_content.len, 12);
    ck_assert(f32_at(&t->tensor_content, 0) == 1.0f);
    ck_assert(f32_at(&t->tensor_content, 1) == -2.0f);
    ck_assert(f32_at(&t->tensor_content, 2) == ldexpf(1.0f, -24));

    t = attr(g->node[3], "value")->tensor;
    ck_assert_int_eq(t->dtype, TENSORFLOW__DATA_TYPE__DT_INT32);
    ck_assert_uint_eq(t->tensor_shape->n_dim, 0);
    ck_assert_uint_eq(t->tensor_content.len, 4);
    ck_assert_mem_eq(t->tensor_content.data, "\x07\x00\x00\x00", 4);

    t = attr(g->node[4], "value")->tensor; /* qi: 5-3 = 2, 65535-3 = 65532 = 0xfffc */
    ck_assert_int_eq(t->dtype, TENSORFLOW__DATA_TYPE__DT_INT32);
    ck_assert_mem_eq(t->tensor_content.data, "\x02\x00\x00\x00\xfc\xff\x00\x00", 8);

    t = attr(g->node[5], "value")->tensor;
    ck_assert_int_eq(t->dtype, TENSORFLOW__DATA_TYPE__DT_BOOL);
    ck_assert_mem_eq(t->tensor_content.data, "\x01\x00\x01", 3);

    t = attr(g->node[6], "value")->tensor;
    ck_assert_int_eq(t->dtype, TENSORFLOW__DATA_TYPE__DT_STRING);
    ck_assert_uint_eq(t->n_string_val, 2);
    ck_assert_uint_eq(t->string_val[0].len, 2);
    ck_assert_mem_eq(t->string_val[0].data, "ab", 2);
    ck_assert_uint_eq(t->string_val[1].len, 0);

    ck_assert_ptr_null(attr(g->node[7], "value"));
    fe_model_free(&m);
    rm_tmpdir();
}
END_TEST

START_TEST(test_tfjs_errors)
{
    make_tmpdir();
    char path[256], want[512];
    snprintf(path, sizeof path, "%s/model.json", tmpdir);

    write_tfjs(false, sizeof g2);
    Status st = ST_INIT;
    ck_assert_ptr_null(fe_tfjs_load(path, &st));
    snprintf(want, sizeof want,
             "%s: weight shard 'group1-shard2of2' not found (needed by weights of group 1)", path);
    ck_assert_str_eq(st.msg, want);

    /* group 2 needs 4 + 4 + 3 + (4+2) + 4 = 21 bytes; give 20 */
    write_tfjs(true, sizeof g2 - 1);
    Status st2 = ST_INIT;
    ck_assert_ptr_null(fe_tfjs_load(path, &st2));
    snprintf(want, sizeof want,
             "%s: weight 's' of group 2 runs past the end of the group's shards (20 bytes; shard truncated?)",
             path);
    ck_assert_str_eq(st2.msg, want);

    const char *layers =
        "{\"format\": \"layers-model\", \"modelTopology\": {\"class_name\": \"Sequential\"}}";
    tmp_write("model.json", layers, strlen(layers));
    Status st3 = ST_INIT;
    ck_assert_ptr_null(fe_tfjs_load(path, &st3));
    snprintf(want, sizeof want,
             "%s: TF.js layers model: only graph models are supported (convert with tensorflowjs_converter "
             "--output_format=tfjs_graph_model)",
             path);
    ck_assert_str_eq(st3.msg, want);

    const char *esc = "{\"modelTopology\": {\"node\": [{\"name\": \"a\"}]}, \"weightsManifest\": "
                      "[{\"paths\": [\"../x\"], \"weights\": []}]}";
    tmp_write("model.json", esc, strlen(esc));
    Status st4 = ST_INIT;
    ck_assert_ptr_null(fe_tfjs_load(path, &st4));
    snprintf(want, sizeof want, "%s: weightsManifest[0].paths[0]: bad shard file name", path);
    ck_assert_str_eq(st4.msg, want);

    const char *huge =
        "{\"modelTopology\": {\"node\": [{\"name\": \"a\"}]}, \"weightsManifest\": [{\"paths\": [], "
        "\"weights\": [{\"name\": \"a\", \"shape\": [4294967296, 4294967296, 4294967296], \"dtype\": "
        "\"float32\"}]}]}";
    tmp_write("model.json", huge, strlen(huge));
    Status st5 = ST_INIT;
    ck_assert_ptr_null(fe_tfjs_load(path, &st5));
    snprintf(want, sizeof want, "%s: weight 'a': shape too large", path);
    ck_assert_str_eq(st5.msg, want);
    rm_tmpdir();
}
END_TEST

/* ---- config ------------------------------------------------------------------- */

START_TEST(test_config)
{
    make_tmpdir();
    const char *txt =
        "# Text form of tensorflow.tf2xla.Config proto.\n"
        "feed { id { node_name: \"x\" } shape { dim { size: 1 } } name: \"in\" type: DT_INT32 }\n"
        "feed { id { node_name: \"y\" output_index: 1 } }\n"
        "fetch { id { node_name: \"sum\" } name: \"out\" }\n"
        "variable { node_name: \"v\" readonly: true }\n";
    char *p = tmp_write("c.config.pbtxt", txt, strlen(txt));
    Status st = ST_INIT;
    Tensorflow__Tf2xla__Config *c = fe_config_load(p, &st);
    ck_assert_msg(c != NULL, "%s", st.msg);
    ck_assert_uint_eq(c->n_feed, 2);
    ck_assert_str_eq(c->feed[0]->id->node_name, "x");
    ck_assert_str_eq(c->feed[0]->name, "in");
    ck_assert_int_eq(c->feed[0]->type, TENSORFLOW__DATA_TYPE__DT_INT32);
    ck_assert_int_eq(c->feed[1]->id->output_index, 1);
    ck_assert_str_eq(c->fetch[0]->name, "out");
    ck_assert_int_eq(c->variable[0]->readonly, 1);
    /* binary round trip */
    size_t n = tensorflow__tf2xla__config__get_packed_size(c);
    uint8_t *buf = malloc(n);
    tensorflow__tf2xla__config__pack(c, buf);
    protobuf_c_message_free_unpacked(&c->base, NULL);
    p = tmp_write("c.config.pb", buf, n);
    free(buf);
    c = fe_config_load(p, &st);
    ck_assert_msg(c != NULL, "%s", st.msg);
    ck_assert_str_eq(c->fetch[0]->id->node_name, "sum");
    protobuf_c_message_free_unpacked(&c->base, NULL);
    rm_tmpdir();
}
END_TEST

static Suite *frontend_suite(void)
{
    Suite *s = suite_create("frontend");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_pbtxt_basic);
    tcase_add_test(tc, test_pbtxt_strings);
    tcase_add_test(tc, test_pbtxt_numbers_bools);
    tcase_add_test(tc, test_pbtxt_unknown_and_oneof);
    tcase_add_test(tc, test_pbtxt_errors);
    tcase_add_test(tc, test_pbtxt_depth);
    tcase_add_test(tc, test_pbtxt_truncations);
    tcase_add_test(tc, test_binary_roundtrip);
    tcase_add_test(tc, test_binary_depth);
    tcase_add_test(tc, test_load_sniffing);
    tcase_add_test(tc, test_json_parse);
    tcase_add_test(tc, test_json_to_pb);
    tcase_add_test(tc, test_json_mutations);
    tcase_add_test(tc, test_tfjs_weights);
    tcase_add_test(tc, test_tfjs_errors);
    tcase_add_test(tc, test_config);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(frontend_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
