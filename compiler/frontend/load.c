/* compiler/frontend/load.c - reading a model file, whatever its extension.
 *
 * fe_load reads the whole file (size-limited) and sniffs the content:
 *   first non-space byte '{'                 -> TF.js model.json (tfjs.c)
 *   every byte printable text / valid UTF-8  -> GraphDef text format (pbtxt.c)
 *   otherwise                                -> GraphDef binary (protobuf-c)
 * A binary message is first walked once on the wire to bound its nesting
 * depth (protobuf-c's unpacker recurses without a limit), then unpacked.
 * A graph with no nodes is an error for every format (e.g. a SavedModel or
 * MetaGraphDef given by mistake parses as an empty GraphDef).
 * Every message starts with the file path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/frontend/fe_int.h"

const char *fe_format_name(FeFormat f)
{
    switch (f) {
    case FE_GRAPHDEF_BINARY:
        return "GraphDef (binary)";
    case FE_GRAPHDEF_TEXT:
        return "GraphDef (text)";
    case FE_TFJS:
        return "TF.js graph model";
    }
    return "?";
}

uint8_t *fe_read_file(const char *path, size_t max_bytes, size_t *n, Status *st)
{
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        st_errorf(st, ST_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st_errorf(st, ST_IO, "%s: not a regular file", path);
        fclose(f);
        return NULL;
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > (uint64_t)max_bytes) {
        st_errorf(st, ST_IO, "%s: file is %lld bytes, more than the limit of %zu", path,
                  (long long)sb.st_size, max_bytes);
        fclose(f);
        return NULL;
    }
    size_t size = (size_t)sb.st_size;
    uint8_t *buf = malloc(size + 1);
    if (!buf) {
        st_errorf(st, ST_NOMEM, "%s: out of memory reading %zu bytes", path, size);
        fclose(f);
        return NULL;
    }
    size_t got = fread(buf, 1, size, f);
    bool err = ferror(f) != 0;
    fclose(f);
    if (err || got != size) {
        st_errorf(st, ST_IO, "%s: read error (got %zu of %zu bytes)", path, got, size);
        free(buf);
        return NULL;
    }
    buf[size] = 0; /* convenience terminator, not counted */
    *n = size;
    return buf;
}

bool fe_looks_like_text(const uint8_t *b, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = b[i];
        if (c < 0x80) {
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v')
                return false;
            if (c == 0x7f)
                return false;
            i++;
            continue;
        }
        /* UTF-8 multibyte: lead byte, then continuation bytes 10xxxxxx */
        size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (len == 0 || c == 0xC0 || c == 0xC1 || c > 0xF4 || i + len > n)
            return false;
        for (size_t k = 1; k < len; k++)
            if ((b[i + k] & 0xC0) != 0x80)
                return false;
        i += len;
    }
    return true;
}

/* ---- binary -------------------------------------------------------------- */

static bool read_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= n)
            return false;
        uint8_t b = p[(*pos)++];
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* 1: ok, 0: malformed wire data, -1: nested too deep. */
static int check_depth(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n, int depth)
{
    if (depth > FE_MAX_DEPTH)
        return -1;
    size_t pos = 0;
    while (pos < n) {
        uint64_t key, v;
        if (!read_varint(p, n, &pos, &key))
            return 0;
        switch (key & 7) {
        case 0:
            if (!read_varint(p, n, &pos, &v))
                return 0;
            break;
        case 1:
            if (n - pos < 8)
                return 0;
            pos += 8;
            break;
        case 5:
            if (n - pos < 4)
                return 0;
            pos += 4;
            break;
        case 2: {
            if (!read_varint(p, n, &pos, &v) || v > n - pos)
                return 0;
            uint64_t id = key >> 3;
            const ProtobufCFieldDescriptor *f =
                id <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)id) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                int r = check_depth(f->descriptor, p + pos, (size_t)v, depth + 1);
                if (r <= 0)
                    return r;
            }
            pos += (size_t)v;
            break;
        }
        default:
            return 0; /* groups (3, 4) are not used by these protos */
        }
    }
    return 1;
}

ProtobufCMessage *fe_pb_unpack(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t n,
                               const char *name, const char *what, Status *st)
{
    int r = check_depth(d, buf, n, 0);
    if (r < 0) {
        st_errorf(st, ST_ERROR, "%s: not a valid %s (messages nested deeper than %d levels)", name, what,
                  FE_MAX_DEPTH);
        return NULL;
    }
    ProtobufCMessage *m = r ? protobuf_c_message_unpack(d, NULL, n, buf) : NULL;
    if (!m)
        st_errorf(st, ST_ERROR,
                  "%s: not a valid %s (binary protobuf decode failed; file truncated or corrupt?)", name,
                  what);
    return m;
}

Tensorflow__GraphDef *fe_graphdef_from_binary(const uint8_t *buf, size_t n, const char *name, Status *st)
{
    return (Tensorflow__GraphDef *)fe_pb_unpack(&tensorflow__graph_def__descriptor, buf, n,
                                                name ? name : "<input>", "GraphDef", st);
}

/* ---- fe_load ------------------------------------------------------------- */

bool fe_load(const char *path, FeModel *m, Status *st)
{
    memset(m, 0, sizeof *m);
    size_t n;
    uint8_t *buf = fe_read_file(path, FE_MAX_FILE_BYTES, &n, st);
    if (!buf)
        return false;
    size_t i = 0;
    while (i < n && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
        i++;
    Tensorflow__GraphDef *g;
    if (i < n && buf[i] == '{') {
        m->format = FE_TFJS;
        g = fe_tfjs_from_buffer(path, (const char *)buf, n, st);
    } else if (fe_looks_like_text(buf, n)) {
        m->format = FE_GRAPHDEF_TEXT;
        g = (Tensorflow__GraphDef *)fe_pbtxt_parse(&tensorflow__graph_def__descriptor, (const char *)buf, n,
                                                   path, st);
    } else {
        m->format = FE_GRAPHDEF_BINARY;
        g = fe_graphdef_from_binary(buf, n, path, st);
    }
    free(buf);
    if (!g)
        return false;
    if (g->n_node == 0) {
        st_errorf(st, ST_ERROR, "%s: the graph has no nodes (read as %s; is this a GraphDef?)", path,
                  fe_format_name(m->format));
        protobuf_c_message_free_unpacked(&g->base, NULL);
        return false;
    }
    m->path = strdup(path);
    if (!m->path) {
        protobuf_c_message_free_unpacked(&g->base, NULL);
        return st_errorf(st, ST_NOMEM, "%s: out of memory", path);
    }
    m->graph = g;
    return true;
}

void fe_model_free(FeModel *m)
{
    if (!m)
        return;
    if (m->graph)
        protobuf_c_message_free_unpacked(&m->graph->base, NULL);
    free(m->path);
    m->graph = NULL;
    m->path = NULL;
}
