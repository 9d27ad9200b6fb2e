/* fuzz/fuzz_entry.h - the pipelines the fuzz targets drive, shared with the
 * regression test (tests/fuzz_regress), so a saved input replays through
 * exactly the code that found it.
 *
 * Each fuzz_run_* takes the raw input bytes and returns
 *    1  the input loaded (and, for graphs, imported),
 *    0  a clean error: false/NULL came back and the message is non-empty,
 *   -1  a broken contract: an error without a message, or (npy) a tensor
 *       that disagrees with the file.  The fuzz targets abort() on it.
 * Graphs: every Placeholder / PlaceholderV2 node is fed by name with no shape
 * and no dtype (the importer takes both from the node's attrs or reports
 * that it cannot), and the last node of the graph is fetched.  Targets that
 * need files (tfjs shard, config, npy) take a scratch folder `dir`.
 * Everything allocated is freed before returning (LeakSanitizer checks).
 */
#ifndef FUZZ_ENTRY_H
#define FUZZ_ENTRY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "compiler/frontend/fe_int.h"
#include "compiler/onnx/onnx.h"
#include "compiler/tf/tf.h"
#include "tcrt.h"
#include "tcrt_ckpt.h"

static inline int fuzz_result(bool ok, const Status *st)
{
    if (ok)
        return 1;
    return st->msg[0] ? 0 : -1;
}

/* Imports g (not freed) with the feeds and fetch described above. */
static inline int fuzz_import(const Tensorflow__GraphDef *g, const char *file, Status *st)
{
    if (g->n_node == 0)
        return 1;
    const Tensorflow__NodeDef *last = g->node[g->n_node - 1];
    if (!last->name)
        return 1;
    TfFeedSpec *feeds = calloc(g->n_node, sizeof *feeds);
    if (!feeds)
        return 1;
    int n_feeds = 0;
    for (size_t i = 0; i < g->n_node && n_feeds < 1024; i++) {
        const Tensorflow__NodeDef *nd = g->node[i];
        if (nd->name && nd->op && (!strcmp(nd->op, "Placeholder") || !strcmp(nd->op, "PlaceholderV2"))) {
            feeds[n_feeds].name = nd->name;
            feeds[n_feeds].has_shape = false;
            feeds[n_feeds].dtype = TCRT_INVALID;
            n_feeds++;
        }
    }
    const char *fetches[1] = {last->name};
    TfImportOptions o = {.file = file, .feeds = feeds, .n_feeds = n_feeds, .fetches = fetches, .n_fetches = 1};
    IrGraph *ir = tf_import(g, &o, st);
    if (ir)
        ir_graph_free(ir);
    free(feeds);
    return fuzz_result(ir != NULL, st);
}

/* bytes -> fe_graphdef_from_binary -> import */
static inline int fuzz_run_graphdef_binary(const uint8_t *data, size_t size, Status *st)
{
    Tensorflow__GraphDef *g = fe_graphdef_from_binary(data, size, "fuzz.pb", st);
    if (!g)
        return fuzz_result(false, st);
    int r = fuzz_import(g, "fuzz.pb", st);
    protobuf_c_message_free_unpacked(&g->base, NULL);
    return r;
}

/* bytes -> fe_load_buffer (content detection: binary or text GraphDef,
 * MetaGraphDef, SavedModel, ONNX ModelProto) -> import: TF graphs as above,
 * ONNX with the model's own inputs and outputs.  JSON (TF.js) is left to the
 * tfjs target, which gives its shards a scratch folder. */
static inline int fuzz_run_model(const uint8_t *data, size_t size, Status *st)
{
    size_t i = 0;
    while (i < size && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r'))
        i++;
    if (i < size && data[i] == '{')
        return 1;
    FeModel m;
    memset(&m, 0, sizeof m);
    if (!fe_load_buffer("fuzz.model", data, size, &m, st))
        return fuzz_result(false, st);
    int r = 1;
    if (m.onnx) {
        OnnxImportOptions o = {.file = "fuzz.model"};
        IrGraph *ir = onnx_import(m.onnx, &o, st);
        if (ir)
            ir_graph_free(ir);
        r = fuzz_result(ir != NULL, st);
    } else if (m.graph) {
        r = fuzz_import(m.graph, "fuzz.model", st);
    }
    fe_model_free(&m);
    return r;
}

/* text (data, size: not NUL-terminated) -> fe_pbtxt_parse(GraphDef) -> import */
static inline int fuzz_run_pbtxt(const uint8_t *data, size_t size, Status *st)
{
    ProtobufCMessage *m =
        fe_pbtxt_parse(&tensorflow__graph_def__descriptor, (const char *)data, size, "fuzz.pbtxt", st);
    if (!m)
        return fuzz_result(false, st);
    int r = fuzz_import((const Tensorflow__GraphDef *)m, "fuzz.pbtxt", st);
    protobuf_c_message_free_unpacked(m, NULL);
    return r;
}

static inline bool fuzz_write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok;
}

/* TF.js: the model.json text, optionally followed by a NUL byte and the
 * bytes of one weight shard (JSON never holds a raw NUL).  The shard is
 * written to DIR/shard.bin (empty without a NUL) and the JSON is loaded as
 * DIR/model.json by fe_tfjs_from_buffer, so a manifest naming "shard.bin"
 * reads the shard and any other name is a missing shard. */
static inline int fuzz_run_tfjs(const char *dir, const uint8_t *data, size_t size, Status *st)
{
    char json_path[512], shard_path[512];
    snprintf(json_path, sizeof json_path, "%s/model.json", dir);
    snprintf(shard_path, sizeof shard_path, "%s/shard.bin", dir);
    const uint8_t *nul = memchr(data, 0, size);
    size_t json_n = nul ? (size_t)(nul - data) : size;
    if (!fuzz_write_file(shard_path, nul ? nul + 1 : data, nul ? size - json_n - 1 : 0))
        return -1;
    Tensorflow__GraphDef *g = fe_tfjs_from_buffer(json_path, (const char *)data, json_n, st);
    if (!g)
        return fuzz_result(false, st);
    int r = fuzz_import(g, json_path, st);
    protobuf_c_message_free_unpacked(&g->base, NULL);
    return r;
}

#define FUZZ_MAX_ITEMS 256 /* the driver's limit on feeds / fetches */

static inline char *fuzz_tensor_name(const Tensorflow__Tf2xla__TensorId *id)
{
    char *nm = malloc(strlen(id->node_name) + 24);
    if (nm)
        sprintf(nm, "%s:%lld", id->node_name, (long long)id->output_index);
    return nm;
}

/* Feed / fetch specs from cfg as the driver's --config makes them
 * (node_name:output_index; the shape unless unknown_rank or a negative dim;
 * the raw `type` enum as the dtype), then tf_import of fuzz_config_graph. */
static inline int fuzz_config_import(const Tensorflow__Tf2xla__Config *cfg, Status *st)
{
    /* TensorFlow's tfadd test graph (the config seeds name its nodes) plus a
     * MatMul of two placeholders. */
    static const char fuzz_config_graph[] =
        "node { name: 'x_const' op: 'Const' attr { key: 'value' value { tensor { dtype: DT_INT32\n"
        "  tensor_shape { dim { size: 1 } } int_val: 1 } } } attr { key: 'dtype' value { type: DT_INT32 } } }\n"
        "node { name: 'y_const' op: 'Const' attr { key: 'value' value { tensor { dtype: DT_INT32\n"
        "  tensor_shape { dim { size: 1 } } int_val: 2 } } } attr { key: 'dtype' value { type: DT_INT32 } } }\n"
        "node { name: 'y_shape' op: 'Const' attr { key: 'value' value { tensor { dtype: DT_INT32\n"
        "  tensor_shape { dim { size: 1 } } int_val: 1 } } } attr { key: 'dtype' value { type: DT_INT32 } } }\n"
        "node { name: 'y_reshape' op: 'Reshape' input: 'y_const' input: 'y_shape'\n"
        "  attr { key: 'T' value { type: DT_INT32 } } }\n"
        "node { name: 'x_y_sum' op: 'Add' input: 'x_const' input: 'y_reshape'\n"
        "  attr { key: 'T' value { type: DT_INT32 } } }\n"
        "node { name: 'a' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
        "  attr { key: 'shape' value { shape { dim { size: 2 } dim { size: -1 } } } } }\n"
        "node { name: 'b' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
        "node { name: 'mm' op: 'MatMul' input: 'a' input: 'b' attr { key: 'T' value { type: DT_FLOAT } } }\n"
        "node { name: 'out' op: 'Relu' input: 'mm' attr { key: 'T' value { type: DT_FLOAT } } }\n";
    Tensorflow__GraphDef *graph = (Tensorflow__GraphDef *)fe_pbtxt_parse(
        &tensorflow__graph_def__descriptor, fuzz_config_graph, sizeof fuzz_config_graph - 1, "graph", st);
    if (!graph)
        return -1;
    TfFeedSpec feeds[FUZZ_MAX_ITEMS];
    char *names[2 * FUZZ_MAX_ITEMS];
    const char *fetches[FUZZ_MAX_ITEMS];
    int n_feeds = 0, n_fetches = 0, n_names = 0, r = 1;
    for (size_t i = 0; i < cfg->n_feed && n_feeds < FUZZ_MAX_ITEMS; i++) {
        const Tensorflow__Tf2xla__Feed *f = cfg->feed[i];
        if (!f->id || !f->id->node_name || !f->id->node_name[0])
            goto out; /* the driver reports these itself */
        TfFeedSpec *s = &feeds[n_feeds++];
        memset(s, 0, sizeof *s);
        if (!(s->name = names[n_names++] = fuzz_tensor_name(f->id)))
            goto out;
        if (f->shape && !f->shape->unknown_rank) {
            if (f->shape->n_dim > IR_MAX_RANK)
                goto out;
            s->has_shape = true;
            s->shape.rank = (int)f->shape->n_dim;
            for (size_t d = 0; d < f->shape->n_dim; d++) {
                s->shape.dims[d] = f->shape->dim[d]->size;
                if (s->shape.dims[d] < 0)
                    s->has_shape = false;
            }
        }
        if (f->type)
            s->dtype = (tcrt_dtype)f->type;
    }
    for (size_t i = 0; i < cfg->n_fetch && n_fetches < FUZZ_MAX_ITEMS; i++) {
        const Tensorflow__Tf2xla__Fetch *f = cfg->fetch[i];
        if (!f->id || !f->id->node_name || !f->id->node_name[0])
            goto out;
        if (!(fetches[n_fetches++] = names[n_names++] = fuzz_tensor_name(f->id)))
            goto out;
    }
    if (n_fetches > 0) {
        TfImportOptions o = {.file = "graph", .feeds = feeds, .n_feeds = n_feeds, .fetches = fetches,
                             .n_fetches = n_fetches};
        IrGraph *ir = tf_import(graph, &o, st);
        if (ir)
            ir_graph_free(ir);
        r = fuzz_result(ir != NULL, st);
    }
out:
    for (int i = 0; i < n_names; i++)
        free(names[i]);
    protobuf_c_message_free_unpacked(&graph->base, NULL);
    return r;
}

/* bytes -> DIR/in.config -> fe_config_load -> specs -> import */
static inline int fuzz_run_config(const char *dir, const uint8_t *data, size_t size, Status *st)
{
    char path[512];
    snprintf(path, sizeof path, "%s/in.config", dir);
    if (!fuzz_write_file(path, data, size))
        return -1;
    Tensorflow__Tf2xla__Config *cfg = fe_config_load(path, st);
    if (!cfg)
        return fuzz_result(false, st);
    int r = fuzz_config_import(cfg, st);
    protobuf_c_message_free_unpacked(&cfg->base, NULL);
    return r;
}

/* bytes -> DIR/in.npy -> tcrt_npy_read.  On success the tensor must agree
 * with the file: rank <= 8, count * element size <= the file's size, and
 * every byte of that data readable (ASan reports a short buffer). */
static inline int fuzz_run_npy(const char *dir, const uint8_t *data, size_t size, char *err, size_t errlen)
{
    char path[512];
    snprintf(path, sizeof path, "%s/in.npy", dir);
    if (!fuzz_write_file(path, data, size))
        return -1;
    tcrt_tensor t;
    err[0] = 0;
    if (tcrt_npy_read(path, &t, err, errlen) != TCRT_OK)
        return err[0] && memchr(err, 0, errlen) ? 0 : -1;
    int r = 1;
    int64_t count = tcrt_tensor_count(&t);
    if (t.rank < 0 || t.rank > TCRT_MAX_RANK || count < 0 || (uint64_t)count * tcrt_dtype_size(t.dtype) > size) {
        r = -1;
    } else {
        volatile uint8_t sum = 0;
        for (size_t i = 0; i < (size_t)count * tcrt_dtype_size(t.dtype); i++)
            sum ^= ((const uint8_t *)t.data)[i];
        (void)sum;
    }
    free(t.data);
    return r;
}

/* Checkpoints: bytes -> DIR/c.index (with a 64-byte data shard
 * DIR/c.data-00000-of-00001 holding 0..63) -> tcrt_ckpt_open, then every
 * entry read.  On success the
 * listing must be consistent (keys found again by tcrt_ckpt_find, rank
 * 0..8, dims >= 0, readable entries inside the shard), a failed read must
 * say why, and the readable entries must write (tcrt_ckpt_write to DIR/w)
 * and read back with the same keys and bytes. */
static inline int fuzz_ckpt_one(const char *dir, const uint8_t *data, size_t size, char *err, size_t errlen)
{
    char prefix[512], path[600], wprefix[512];
    uint8_t shard[64];
    for (int i = 0; i < 64; i++)
        shard[i] = (uint8_t)i;
    snprintf(prefix, sizeof prefix, "%s/c", dir);
    snprintf(wprefix, sizeof wprefix, "%s/w", dir);
    snprintf(path, sizeof path, "%s.index", prefix);
    if (!fuzz_write_file(path, data, size))
        return -1;
    snprintf(path, sizeof path, "%s.data-00000-of-00001", prefix);
    if (!fuzz_write_file(path, shard, sizeof shard))
        return -1;
    tcrt_ckpt *ck = NULL;
    err[0] = 0;
    if (tcrt_ckpt_open(prefix, &ck, err, errlen) != TCRT_OK)
        return ck == NULL && err[0] && memchr(err, 0, errlen) ? 0 : -1;
    int n = tcrt_ckpt_count(ck), m = 0, r = 1;
    tcrt_ckpt_entry *es = calloc((size_t)n + 1, sizeof *es);
    if (!es) {
        tcrt_ckpt_close(ck);
        return 1;
    }
    for (int i = 0; i < n && r > 0; i++) {
        const tcrt_ckpt_entry *e = tcrt_ckpt_get(ck, i);
        if (!e || !e->key || tcrt_ckpt_find(ck, e->key) != e || e->rank < 0 || e->rank > TCRT_MAX_RANK) {
            r = -1;
            break;
        }
        for (int d = 0; d < e->rank; d++)
            if (e->dims[d] < 0)
                r = -1;
        if (e->bytes > sizeof shard)
            continue; /* a sliced entry's full size: not in the shard, refused by read */
        void *buf = malloc(e->bytes + 1);
        if (!buf)
            break;
        err[0] = 0;
        if (tcrt_ckpt_read(ck, e, buf, e->bytes, err, errlen) == TCRT_OK) {
            es[m] = *e;
            es[m++].data = buf;
        } else {
            if (!err[0])
                r = -1;
            free(buf);
        }
    }
    if (r > 0 && m > 0) {
        err[0] = 0;
        tcrt_ckpt *back = NULL;
        if (tcrt_ckpt_write(wprefix, es, m, err, errlen) != TCRT_OK ||
            tcrt_ckpt_open(wprefix, &back, err, errlen) != TCRT_OK || tcrt_ckpt_count(back) != m) {
            r = -1;
        } else {
            for (int i = 0; i < m && r > 0; i++) {
                const tcrt_ckpt_entry *e = tcrt_ckpt_find(back, es[i].key);
                uint8_t buf[sizeof shard];
                if (!e || e->dtype != es[i].dtype || e->bytes != es[i].bytes ||
                    tcrt_ckpt_read(back, e, buf, e->bytes, err, errlen) != TCRT_OK ||
                    (e->bytes && memcmp(buf, es[i].data, e->bytes) != 0))
                    r = -1;
            }
        }
        tcrt_ckpt_close(back);
    }
    for (int i = 0; i < m; i++)
        free((void *)es[i].data);
    free(es);
    tcrt_ckpt_close(ck);
    return r;
}

static inline void fuzz_ckpt_put32(uint8_t *b, size_t *n, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[(*n)++] = (uint8_t)(v >> (8 * i));
}

static inline void fuzz_ckpt_varint(uint8_t *b, size_t *n, uint64_t v)
{
    while (v >= 0x80) {
        b[(*n)++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[(*n)++] = (uint8_t)v;
}

/* The input as it is (an index file), then the input as the contents of
 * the one data block of a table whose trailers, index block and footer are
 * right (CRCs a fuzzer cannot guess), so mutations reach the restart
 * arrays, entries and protos; an input starting with 's' has the rest
 * wrapped as a Snappy-compressed block. */
static inline int fuzz_run_ckpt(const char *dir, const uint8_t *data, size_t size, char *err, size_t errlen)
{
    int r = fuzz_ckpt_one(dir, data, size, err, errlen);
    if (r < 0)
        return r;
    int type = size > 0 && data[0] == 's' ? 1 : 0;
    const uint8_t *blk = data + type;
    size_t bn = size - (size_t)type;
    uint8_t *f = malloc(bn + 128);
    if (!f)
        return r;
    size_t n = 0;
    memcpy(f, blk, bn);
    n = bn;
    f[n++] = (uint8_t)type;
    fuzz_ckpt_put32(f, &n, tcrt_crc32c_mask(tcrt_crc32c(0, f, bn + 1)));
    size_t moff = n;
    fuzz_ckpt_put32(f, &n, 0); /* an empty metaindex block */
    fuzz_ckpt_put32(f, &n, 1);
    f[n++] = 0;
    fuzz_ckpt_put32(f, &n, tcrt_crc32c_mask(tcrt_crc32c(0, f + moff, 9)));
    size_t ioff = n; /* the index block: "\xff\xff\xff\xff" -> the data block */
    f[n++] = 0;
    f[n++] = 4;
    size_t vlen_at = n++;
    memcpy(f + n, "\xff\xff\xff\xff", 4);
    n += 4;
    size_t v0 = n;
    fuzz_ckpt_varint(f, &n, 0);
    fuzz_ckpt_varint(f, &n, bn);
    f[vlen_at] = (uint8_t)(n - v0);
    fuzz_ckpt_put32(f, &n, 0);
    fuzz_ckpt_put32(f, &n, 1);
    size_t in = n - ioff;
    f[n++] = 0;
    fuzz_ckpt_put32(f, &n, tcrt_crc32c_mask(tcrt_crc32c(0, f + ioff, in + 1)));
    size_t fstart = n;
    fuzz_ckpt_varint(f, &n, moff);
    fuzz_ckpt_varint(f, &n, 8);
    fuzz_ckpt_varint(f, &n, ioff);
    fuzz_ckpt_varint(f, &n, in);
    while (n < fstart + 40)
        f[n++] = 0;
    fuzz_ckpt_put32(f, &n, 0x8b80fb57u);
    fuzz_ckpt_put32(f, &n, 0xdb477524u);
    r = fuzz_ckpt_one(dir, f, n, err, errlen);
    free(f);
    return r;
}

#endif
