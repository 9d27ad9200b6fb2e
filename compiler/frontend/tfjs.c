/* compiler/frontend/tfjs.c - TF.js graph models (model.json + weight shards).
 *
 * model.json holds "modelTopology", a GraphDef in protobuf's JSON mapping
 * (converted generically by json.c, library and versions included), and
 * "weightsManifest": groups of weights, each group stored as the
 * concatenation of its shard files ("paths", relative to the json's folder).
 * Inside a group, weights follow each other in manifest order; a weight
 * takes prod(shape) elements of its stored type (the quantized type when
 * "quantization" is present; strings are a uint32 LE length + bytes each).
 *
 * Each weight becomes the "value" TensorProto (tensor_content, little
 * endian) of the node with the same name, creating the attr entries when
 * missing.  Quantized weights are dequantized: uint8/uint16 affine
 * (q * scale + min, rounded for int32 originals), float16 -> float32.
 * Weights naming no node are skipped.  All size arithmetic is checked.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/frontend/fe_int.h"

/* ---- node index ---------------------------------------------------------- */

typedef struct NodeIndex {
    Tensorflow__NodeDef **slots;
    size_t cap; /* power of two, > 2 * nodes */
} NodeIndex;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool index_build(NodeIndex *ix, const Tensorflow__GraphDef *g)
{
    ix->cap = 16;
    while (ix->cap < 2 * g->n_node + 1)
        ix->cap *= 2;
    ix->slots = calloc(ix->cap, sizeof *ix->slots);
    if (!ix->slots)
        return false;
    for (size_t i = 0; i < g->n_node; i++) {
        Tensorflow__NodeDef *nd = g->node[i];
        if (!nd->name)
            continue;
        for (size_t h = hash_str(nd->name) & (ix->cap - 1);; h = (h + 1) & (ix->cap - 1)) {
            if (!ix->slots[h]) {
                ix->slots[h] = nd;
                break;
            }
            if (!strcmp(ix->slots[h]->name, nd->name))
                break; /* first node of a name wins */
        }
    }
    return true;
}

static Tensorflow__NodeDef *index_find(const NodeIndex *ix, const char *name)
{
    for (size_t h = hash_str(name) & (ix->cap - 1);; h = (h + 1) & (ix->cap - 1)) {
        if (!ix->slots[h])
            return NULL;
        if (!strcmp(ix->slots[h]->name, name))
            return ix->slots[h];
    }
}

/* ---- helpers ------------------------------------------------------------- */

static float half_to_float(uint16_t h)
{
    unsigned sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)mant, -24); /* subnormal: mant * 2^-24 */
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 0x400), (int)exp - 25); /* 1.mant * 2^(exp-15) */
    return sign ? -v : v;
}

static void put_le32(uint8_t *p, uint32_t u)
{
    p[0] = (uint8_t)u;
    p[1] = (uint8_t)(u >> 8);
    p[2] = (uint8_t)(u >> 16);
    p[3] = (uint8_t)(u >> 24);
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_f32(uint8_t *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put_le32(p, u);
}

typedef struct DtypeInfo {
    const char *name;
    Tensorflow__DataType dt;
    size_t size; /* bytes per element; 0 = variable (string) */
} DtypeInfo;

static const DtypeInfo dtypes[] = {
    {"float32", TENSORFLOW__DATA_TYPE__DT_FLOAT, 4},       {"int32", TENSORFLOW__DATA_TYPE__DT_INT32, 4},
    {"bool", TENSORFLOW__DATA_TYPE__DT_BOOL, 1},           {"uint8", TENSORFLOW__DATA_TYPE__DT_UINT8, 1},
    {"complex64", TENSORFLOW__DATA_TYPE__DT_COMPLEX64, 8}, {"string", TENSORFLOW__DATA_TYPE__DT_STRING, 0},
};

static const DtypeInfo *find_dtype(const char *name)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (!strcmp(dtypes[i].name, name))
            return &dtypes[i];
    return NULL;
}

static bool mul_ok(size_t a, size_t b, size_t *r)
{
    if (a != 0 && b > SIZE_MAX / a)
        return false;
    *r = a * b;
    return true;
}

/* ---- attaching tensors ----------------------------------------------------- */

/* The AttrValue for key in node, created (empty) when missing; NULL on OOM. */
static Tensorflow__AttrValue *node_attr(Tensorflow__NodeDef *nd, const char *key, bool *created)
{
    *created = false;
    for (size_t i = 0; i < nd->n_attr; i++)
        if (nd->attr[i]->key && !strcmp(nd->attr[i]->key, key)) {
            if (!nd->attr[i]->value)
                nd->attr[i]->value = (Tensorflow__AttrValue *)fe_pb_new(&tensorflow__attr_value__descriptor);
            return nd->attr[i]->value;
        }
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(&tensorflow__node_def__descriptor, "attr");
    void *slot = fe_pb_slot(&nd->base, f);
    Tensorflow__NodeDef__AttrEntry *e =
        slot ? (Tensorflow__NodeDef__AttrEntry *)fe_pb_slot_message(slot, f) : NULL;
    if (!e || fe_pb_set_string(&e->key, &e->base.descriptor->fields[0], key, strlen(key)))
        return NULL;
    e->value = (Tensorflow__AttrValue *)fe_pb_new(&tensorflow__attr_value__descriptor);
    *created = true;
    return e->value;
}

/* Gives t to node nd as attr "value" (and "dtype" when missing).  Takes t. */
static bool attach_tensor(Tensorflow__NodeDef *nd, Tensorflow__TensorProto *t)
{
    bool created;
    Tensorflow__AttrValue *av = node_attr(nd, "value", &created);
    if (!av) {
        protobuf_c_message_free_unpacked(&t->base, NULL);
        return false;
    }
    const ProtobufCFieldDescriptor *tf =
        protobuf_c_message_descriptor_get_field_by_name(&tensorflow__attr_value__descriptor, "tensor");
    if (av->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TENSOR && av->tensor) {
        protobuf_c_message_free_unpacked(&av->tensor->base, NULL);
        av->tensor = NULL;
    }
    Tensorflow__TensorProto **slot = fe_pb_slot(&av->base, tf); /* frees another oneof member */
    *slot = t;
    av = node_attr(nd, "dtype", &created);
    if (!av)
        return false;
    if (created) {
        const ProtobufCFieldDescriptor *ty =
            protobuf_c_message_descriptor_get_field_by_name(&tensorflow__attr_value__descriptor, "type");
        *(int32_t *)fe_pb_slot(&av->base, ty) = (int32_t)t->dtype;
    }
    return true;
}

static Tensorflow__TensorProto *new_tensor(Tensorflow__DataType dt, const int64_t *dims, size_t rank)
{
    Tensorflow__TensorProto *t = (Tensorflow__TensorProto *)fe_pb_new(&tensorflow__tensor_proto__descriptor);
    if (!t)
        return NULL;
    t->dtype = dt;
    t->tensor_shape = (Tensorflow__TensorShapeProto *)fe_pb_new(&tensorflow__tensor_shape_proto__descriptor);
    if (!t->tensor_shape)
        goto oom;
    if (rank) {
        t->tensor_shape->dim = calloc(rank, sizeof *t->tensor_shape->dim);
        if (!t->tensor_shape->dim)
            goto oom;
        for (size_t i = 0; i < rank; i++) {
            Tensorflow__TensorShapeProto__Dim *d = (Tensorflow__TensorShapeProto__Dim *)fe_pb_new(
                &tensorflow__tensor_shape_proto__dim__descriptor);
            if (!d)
                goto oom;
            d->size = dims[i];
            t->tensor_shape->dim[t->tensor_shape->n_dim++] = d;
        }
    }
    return t;
oom:
    protobuf_c_message_free_unpacked(&t->base, NULL);
    return NULL;
}

/* ---- weights --------------------------------------------------------------- */

typedef struct Ctx {
    const char *path; /* model.json */
    Status *st;
    NodeIndex ix;
} Ctx;

static bool oom(Ctx *c)
{
    return st_errorf(c->st, ST_NOMEM, "%s: out of memory", c->path);
}

/* Reads and concatenates the shards of group gi (1-based) into *buf. */
static bool read_group(Ctx *c, const char *dir, const JsonValue *paths, size_t gi, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    if (!paths || paths->type != JSON_ARRAY)
        return st_errorf(c->st, ST_ERROR, "%s: weightsManifest[%zu].paths: expected an array of file names",
                         c->path, gi - 1);
    uint8_t *acc = NULL;
    size_t n = 0;
    for (size_t i = 0; i < paths->n; i++) {
        const JsonValue *pv = paths->items[i];
        if (pv->type != JSON_STRING || pv->len == 0 || strlen(pv->str) != pv->len)
            goto bad_name;
        const char *name = pv->str;
        if (name[0] == '/' || !strcmp(name, "..") || !strncmp(name, "../", 3) || strstr(name, "/../") ||
            (pv->len >= 3 && !strcmp(name + pv->len - 3, "/..")))
            goto bad_name;
        size_t full_n = strlen(dir) + 1 + pv->len + 1;
        char *full = malloc(full_n);
        if (!full)
            goto nomem;
        snprintf(full, full_n, "%s/%s", dir, name);
        struct stat sb;
        if (stat(full, &sb) != 0) {
            free(full);
            free(acc);
            return st_errorf(c->st, ST_IO, "%s: weight shard '%s' not found (needed by weights of group %zu)",
                             c->path, name, gi);
        }
        size_t sn;
        uint8_t *sbuf = fe_read_file(full, FE_MAX_FILE_BYTES - n, &sn, c->st);
        free(full);
        if (!sbuf) {
            free(acc);
            return false;
        }
        uint8_t *na = realloc(acc, n + sn + 1);
        if (!na) {
            free(sbuf);
            goto nomem;
        }
        acc = na;
        memcpy(acc + n, sbuf, sn);
        n += sn;
        free(sbuf);
        continue;
    bad_name:
        free(acc);
        return st_errorf(c->st, ST_ERROR, "%s: weightsManifest[%zu].paths[%zu]: bad shard file name", c->path,
                         gi - 1, i);
    }
    *buf = acc;
    *len = n;
    return true;
nomem:
    free(acc);
    return oom(c);
}

static bool json_number_field(const JsonValue *w, const char *key, double *out)
{
    const JsonValue *v = fe_json_get(w, key);
    if (!v || v->type != JSON_NUMBER)
        return false;
    *out = v->num;
    return true;
}

/* Decodes weight w at group bytes [*off, ...) and attaches it. */
static bool load_weight(Ctx *c, const JsonValue *w, size_t gi, size_t wi, const uint8_t *buf, size_t len,
                        size_t *off)
{
    const JsonValue *jn = fe_json_get(w, "name"), *js = fe_json_get(w, "shape"),
                    *jd = fe_json_get(w, "dtype");
    if (!jn || jn->type != JSON_STRING)
        return st_errorf(c->st, ST_ERROR, "%s: weightsManifest[%zu].weights[%zu]: missing \"name\"", c->path,
                         gi - 1, wi);
    const char *name = jn->str;
    if (!js || js->type != JSON_ARRAY || js->n > 64)
        return st_errorf(c->st, ST_ERROR, "%s: weight '%s': missing or bad \"shape\"", c->path, name);
    if (!jd || jd->type != JSON_STRING)
        return st_errorf(c->st, ST_ERROR, "%s: weight '%s': missing \"dtype\"", c->path, name);
    const DtypeInfo *di = find_dtype(jd->str);
    if (!di)
        return st_errorf(c->st, ST_UNSUPPORTED, "%s: weight '%s': unsupported dtype '%.40s'", c->path, name,
                         jd->str);

    int64_t dims[64];
    size_t count = 1;
    for (size_t i = 0; i < js->n; i++) {
        const JsonValue *d = js->items[i];
        if (d->type != JSON_NUMBER || d->num < 0 || d->num != floor(d->num) || d->num > 9.0e15)
            return st_errorf(c->st, ST_ERROR, "%s: weight '%s': bad dimension in \"shape\"", c->path, name);
        dims[i] = (int64_t)d->num;
        if (!mul_ok(count, (size_t)dims[i], &count))
            return st_errorf(c->st, ST_ERROR, "%s: weight '%s': shape too large", c->path, name);
    }

    /* stored element type: the quantized one when quantized */
    const JsonValue *q = fe_json_get(w, "quantization");
    if (q && q->type == JSON_NULL)
        q = NULL;
    size_t qsize = 0; /* 0: not quantized */
    bool qhalf = false;
    double scale = 1, minv = 0;
    Tensorflow__DataType out_dt = di->dt;
    if (q) {
        const JsonValue *qd = fe_json_get(q, "dtype");
        if (!qd || qd->type != JSON_STRING)
            return st_errorf(c->st, ST_ERROR, "%s: weight '%s': quantization without \"dtype\"", c->path,
                             name);
        if (!strcmp(qd->str, "uint8"))
            qsize = 1;
        else if (!strcmp(qd->str, "uint16"))
            qsize = 2;
        else if (!strcmp(qd->str, "float16"))
            qsize = 2, qhalf = true;
        else
            return st_errorf(c->st, ST_UNSUPPORTED, "%s: weight '%s': unsupported quantization dtype '%.40s'",
                             c->path, name, qd->str);
        /* finite: 1e999 parses as inf, and inf * 0 is a NaN no integer can hold */
        if (!qhalf && (!json_number_field(q, "scale", &scale) || !json_number_field(q, "min", &minv) ||
                       !isfinite(scale) || !isfinite(minv)))
            return st_errorf(c->st, ST_ERROR,
                             "%s: weight '%s': quantization needs finite numeric \"scale\" and \"min\"",
                             c->path, name);
        const JsonValue *od = fe_json_get(q, "original_dtype");
        const DtypeInfo *odi = od && od->type == JSON_STRING ? find_dtype(od->str) : di;
        if (!odi ||
            (odi->dt != TENSORFLOW__DATA_TYPE__DT_FLOAT && odi->dt != TENSORFLOW__DATA_TYPE__DT_INT32))
            return st_errorf(c->st, ST_UNSUPPORTED,
                             "%s: weight '%s': quantized weights must be float32 or int32", c->path, name);
        out_dt = odi->dt;
        if (qhalf && out_dt != TENSORFLOW__DATA_TYPE__DT_FLOAT)
            return st_errorf(c->st, ST_UNSUPPORTED,
                             "%s: weight '%s': float16 quantization of a non-float32 weight", c->path, name);
    }

    /* byte size of the stored weight */
    size_t nbytes = 0;
    if (qsize) {
        if (!mul_ok(count, qsize, &nbytes))
            return st_errorf(c->st, ST_ERROR, "%s: weight '%s': shape too large", c->path, name);
    } else if (di->size) {
        if (!mul_ok(count, di->size, &nbytes))
            return st_errorf(c->st, ST_ERROR, "%s: weight '%s': shape too large", c->path, name);
    } else {
        /* strings: uint32 length + bytes, count times */
        size_t p = *off;
        for (size_t i = 0; i < count; i++) {
            if (p > len || len - p < 4)
                goto short_shard;
            uint32_t l = get_le32(buf + p);
            p += 4;
            if (l > len - p)
                goto short_shard;
            p += l;
        }
        nbytes = p - *off;
    }
    if (*off > len || nbytes > len - *off)
        goto short_shard;

    const uint8_t *src = buf + *off;
    *off += nbytes;
    Tensorflow__NodeDef *nd = index_find(&c->ix, name);
    if (!nd)
        return true; /* a weight no node uses */

    Tensorflow__TensorProto *t = new_tensor(out_dt, dims, js->n);
    if (!t)
        return oom(c);
    if (!di->size && !qsize) {
        if (count) {
            t->string_val = calloc(count, sizeof *t->string_val);
            if (!t->string_val)
                goto nomem;
        }
        size_t p = 0;
        for (size_t i = 0; i < count; i++) {
            uint32_t l = get_le32(src + p);
            p += 4;
            uint8_t *s = malloc(l ? l : 1);
            if (!s)
                goto nomem;
            memcpy(s, src + p, l);
            p += l;
            t->string_val[t->n_string_val].data = s;
            t->string_val[t->n_string_val++].len = l;
        }
    } else {
        size_t out_n = qsize ? count * 4 : nbytes; /* dequantized: float32 or int32 */
        uint8_t *out = malloc(out_n ? out_n : 1);
        if (!out)
            goto nomem;
        if (!qsize) {
            memcpy(out, src, nbytes);
        } else {
            for (size_t i = 0; i < count; i++) {
                if (qhalf) {
                    put_f32(out + 4 * i, half_to_float((uint16_t)(src[2 * i] | src[2 * i + 1] << 8)));
                    continue;
                }
                unsigned qv = qsize == 1 ? src[i] : (unsigned)(src[2 * i] | src[2 * i + 1] << 8);
                double v = qv * scale + minv;
                if (out_dt == TENSORFLOW__DATA_TYPE__DT_INT32) {
                    double r = round(v);
                    r = r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r;
                    put_le32(out + 4 * i, (uint32_t)(int32_t)r);
                } else {
                    put_f32(out + 4 * i, (float)v);
                }
            }
        }
        t->tensor_content.data = out;
        t->tensor_content.len = out_n;
    }
    if (!attach_tensor(nd, t))
        return oom(c);
    return true;
nomem:
    protobuf_c_message_free_unpacked(&t->base, NULL);
    return oom(c);
short_shard:
    return st_errorf(c->st, ST_ERROR,
                     "%s: weight '%s' of group %zu runs past the end of the group's shards (%zu bytes; shard "
                     "truncated?)",
                     c->path, name, gi, len);
}

static bool load_weights(Ctx *c, const JsonValue *manifest, Tensorflow__GraphDef *g)
{
    if (!manifest || manifest->type == JSON_NULL)
        return true;
    if (manifest->type != JSON_ARRAY)
        return st_errorf(c->st, ST_ERROR, "%s: weightsManifest: expected an array", c->path);
    /* folder of model.json */
    const char *slash = strrchr(c->path, '/');
    char *dir = slash ? strndup(c->path, (size_t)(slash - c->path) + (slash == c->path)) : strdup(".");
    if (!dir)
        return oom(c);
    if (!index_build(&c->ix, g)) {
        free(dir);
        return oom(c);
    }
    bool ok = true;
    for (size_t gi = 0; ok && gi < manifest->n; gi++) {
        const JsonValue *grp = manifest->items[gi];
        const JsonValue *ws = fe_json_get(grp, "weights");
        if (!ws || ws->type != JSON_ARRAY) {
            ok = st_errorf(c->st, ST_ERROR, "%s: weightsManifest[%zu]: missing \"weights\" array", c->path,
                           gi);
            break;
        }
        uint8_t *buf;
        size_t len;
        if (!read_group(c, dir, fe_json_get(grp, "paths"), gi + 1, &buf, &len)) {
            ok = false;
            break;
        }
        size_t off = 0;
        for (size_t wi = 0; ok && wi < ws->n; wi++)
            ok = load_weight(c, ws->items[wi], gi + 1, wi, buf, len, &off);
        free(buf);
    }
    free(c->ix.slots);
    c->ix.slots = NULL;
    free(dir);
    return ok;
}

/* ---- entry points ---------------------------------------------------------- */

Tensorflow__GraphDef *fe_tfjs_from_buffer(const char *json_path, const char *text, size_t n, Status *st)
{
    JsonValue *root = fe_json_parse(text, n, json_path, st);
    if (!root)
        return NULL;
    Tensorflow__GraphDef *g = NULL;
    Ctx c = {.path = json_path, .st = st};
    const JsonValue *fmt = fe_json_get(root, "format");
    const JsonValue *topo = fe_json_get(root, "modelTopology");
    if (root->type != JSON_OBJECT) {
        st_errorf(st, ST_ERROR, "%s: expected a JSON object (TF.js model.json)", json_path);
        goto out;
    }
    if ((fmt && fmt->type == JSON_STRING && !strcmp(fmt->str, "layers-model")) ||
        (!fmt && topo && (fe_json_get(topo, "class_name") || fe_json_get(topo, "model_config")))) {
        st_errorf(
            st, ST_UNSUPPORTED,
            "%s: TF.js layers model: only graph models are supported (convert with tensorflowjs_converter "
            "--output_format=tfjs_graph_model)",
            json_path);
        goto out;
    }
    if (fmt && (fmt->type != JSON_STRING || strcmp(fmt->str, "graph-model"))) {
        st_errorf(st, ST_UNSUPPORTED, "%s: unsupported TF.js format '%.40s' (expected 'graph-model')",
                  json_path, fmt->type == JSON_STRING ? fmt->str : "?");
        goto out;
    }
    if (!topo || topo->type != JSON_OBJECT) {
        st_errorf(st, ST_ERROR, "%s: no \"modelTopology\" object (is this a TF.js graph model?)", json_path);
        goto out;
    }
    g = (Tensorflow__GraphDef *)fe_pb_new(&tensorflow__graph_def__descriptor);
    if (!g) {
        st_errorf(st, ST_NOMEM, "%s: out of memory", json_path);
        goto out;
    }
    if (!fe_json_to_pb(topo, &g->base, json_path, "modelTopology", st) ||
        !load_weights(&c, fe_json_get(root, "weightsManifest"), g)) {
        protobuf_c_message_free_unpacked(&g->base, NULL);
        g = NULL;
    }
out:
    fe_json_free(root);
    return g;
}

Tensorflow__GraphDef *fe_tfjs_load(const char *json_path, Status *st)
{
    size_t n;
    uint8_t *buf = fe_read_file(json_path, FE_MAX_FILE_BYTES, &n, st);
    if (!buf)
        return NULL;
    Tensorflow__GraphDef *g = fe_tfjs_from_buffer(json_path, (const char *)buf, n, st);
    free(buf);
    return g;
}
