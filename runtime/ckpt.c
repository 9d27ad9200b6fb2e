/* ckpt.c - TensorFlow checkpoints (TensorBundle): reader, writer, and a
 * compiled model's variables saved to / restored from one.
 *
 * Format (tcrt_ckpt.h has the overview, docs/checkpoints.md the details).
 * PREFIX.index is a LevelDB-style table: data blocks of entries (varint32
 * shared key bytes, varint32 unshared bytes, varint32 value length, the
 * unshared key bytes, the value), a restart array (fixed32 offsets of
 * entries stored with shared == 0) and its count (fixed32); each block is
 * followed by a trailer (1 byte compression type: 0 none, 1 Snappy; fixed32
 * masked CRC32C of the stored block + type).  An index block maps a key >=
 * every key of a data block (and < the next block's keys) to that block's
 * handle (varint64 offset, varint64 size); the 48-byte footer holds the
 * metaindex and index handles, zero padding to 40 bytes and the magic
 * 0xdb4775248b80fb57 (fixed64).  Values are protobufs decoded here by hand
 * (no protobuf library in the runtime): key "" is a BundleHeaderProto
 * (1 num_shards, 2 endianness, 3 version {1 producer, 2 min_consumer,
 * 3 bad_consumers}), every other key a BundleEntryProto (1 dtype, 2 shape
 * {2 dim {1 size}, 3 unknown_rank}, 3 shard_id, 4 offset, 5 size,
 * 6 crc32c fixed32, 7 slices).  The bytes are in PREFIX.data-SSSSS-of-NNNNN.
 *
 * Reading: the whole index file (at most CK_MAX_INDEX bytes, checked
 * against fstat before anything is allocated) is loaded and every byte is
 * checked before use: footer magic, handles inside the file and before the
 * footer, data blocks in increasing non-overlapping order (so the work is
 * linear in the file size), every block's CRC, Snappy-compressed blocks
 * (every length and back-reference checked), restart arrays (count within
 * the block, offsets increasing and on entry starts with shared == 0),
 * shared prefix lengths, varints that end inside their block, keys strictly
 * increasing across blocks and not above their index key, the header first,
 * proto fields inside their messages with the expected wire types, dtypes,
 * ranks and dims, byte sizes, shard ids, and offset + size inside the data
 * shard (stat'ed once per shard).  Entries whose key holds a NUL byte
 * (TensorFlow's encoded slice keys) are checked but not listed.  Sliced and
 * string tensors are listed; tcrt_ckpt_read refuses them.
 *
 * Writing: entries are sorted by key; the data shard gets the bytes in that
 * order; the index is built in memory: the header entry, then one entry per
 * tensor, in ~CK_BLOCK-byte blocks with a restart every CK_RESTART entries,
 * an empty metaindex block, the index block (restart interval 1, each
 * block's separator shortened as TensorFlow's bytewise comparator does, so
 * the index is byte for byte what TensorFlow writes) and the footer.  Both
 * files go to exclusive temporaries in the destination folder and are
 * fsync'ed before either is renamed (data shard first, index last), then
 * the folder is fsync'ed; any failure removes the temporaries.  Between the
 * two renames a crash leaves the old index with the new data: the reader
 * then reports size or CRC mismatches instead of returning wrong values.
 */
#include "tcrt_ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CK_MAX_INDEX ((int64_t)1 << 30) /* index files larger than this are refused */
#define CK_FOOTER 48
#define CK_TRAILER 5
#define CK_MAGIC 0xdb4775248b80fb57ull
#define CK_BLOCK 4096       /* target data block size when writing */
#define CK_RESTART 16       /* restart interval of written data blocks */
#define CK_MAX_SHARDS 99999 /* the shard file name has five digits */
#define CK_READER_VERSION 1 /* TensorFlow's kTensorBundleVersion */

enum { CK_PLAIN = 0, CK_SLICED = 1, CK_STRING = 2 };

typedef struct ck_meta {
    int shard;
    uint64_t offset;
    uint32_t crc; /* masked, as stored */
    int kind;     /* CK_PLAIN, CK_SLICED or CK_STRING */
} ck_meta;

struct tcrt_ckpt {
    char *prefix;
    char *index_path;
    int num_shards;
    int n, cap;
    tcrt_ckpt_entry *entries; /* keys malloc'ed one by one */
    ck_meta *meta;            /* parallel to entries */
};

static tcrt_status fail(char *err, size_t errlen, tcrt_status s, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static tcrt_status fail(char *err, size_t errlen, tcrt_status s, const char *file, const char *fmt, ...)
{
    if (err && errlen) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(err, errlen, "%s: %s", file ? file : "(null)", msg);
    }
    return s;
}

static char *str_cat(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *s = malloc(na + nb + 1);
    if (s) {
        memcpy(s, a, na);
        memcpy(s + na, b, nb + 1);
    }
    return s;
}

static char *shard_path(const char *prefix, int shard, int num_shards)
{
    char suffix[64];
    snprintf(suffix, sizeof suffix, ".data-%05d-of-%05d", shard, num_shards);
    return str_cat(prefix, suffix);
}

/* A key for messages: printable ASCII kept, anything else as \xNN, cut at
 * 160 bytes. */
static const char *key_show(const uint8_t *k, size_t n, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 8 < cap; i++) {
        if (o > 160) {
            o += (size_t)snprintf(buf + o, cap - o, "...");
            break;
        }
        if (k[i] >= 0x20 && k[i] < 0x7f && k[i] != '\\')
            buf[o++] = (char)k[i];
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", k[i]);
    }
    buf[o < cap ? o : cap - 1] = 0;
    return buf;
}

/* ---- decoding ---- */

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A varint at p[*pos] that ends before `end` and fits in `bits` bits (32:
 * at most 5 bytes, 64: at most 10); advances *pos.  false otherwise. */
static bool get_varint(const uint8_t *p, size_t end, size_t *pos, int bits, uint64_t *v)
{
    uint64_t r = 0;
    int max_bytes = bits == 32 ? 5 : 10;
    for (int i = 0; i < max_bytes; i++) {
        if (*pos >= end)
            return false;
        uint8_t b = p[(*pos)++];
        if (i == 9 && (b & 0x7e))
            return false; /* bits past 64 */
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            if (bits < 64 && (r >> bits))
                return false;
            *v = r;
            return true;
        }
    }
    return false;
}

/* One protobuf field: its number, wire type and value (varint / fixed in
 * *v, a length-delimited payload as p[*sub .. *sub + *len)). */
typedef struct pb_field {
    uint32_t num;
    int wire;
    uint64_t v;
    size_t sub, len;
} pb_field;

/* Next field of the message p[*pos .. end); 1 got one, 0 at the end, -1
 * malformed (*why says what). */
static int pb_next(const uint8_t *p, size_t end, size_t *pos, pb_field *f, const char **why)
{
    if (*pos >= end)
        return 0;
    uint64_t tag;
    if (!get_varint(p, end, pos, 32, &tag)) {
        *why = "field tag does not end inside its message";
        return -1;
    }
    f->num = (uint32_t)(tag >> 3);
    f->wire = (int)(tag & 7);
    if (f->num == 0) {
        *why = "field number 0";
        return -1;
    }
    switch (f->wire) {
    case 0:
        if (!get_varint(p, end, pos, 64, &f->v)) {
            *why = "varint does not end inside its message";
            return -1;
        }
        return 1;
    case 1:
        if (end - *pos < 8) {
            *why = "fixed64 past the end of its message";
            return -1;
        }
        f->v = get32(p + *pos) | (uint64_t)get32(p + *pos + 4) << 32;
        *pos += 8;
        return 1;
    case 5:
        if (end - *pos < 4) {
            *why = "fixed32 past the end of its message";
            return -1;
        }
        f->v = get32(p + *pos);
        *pos += 4;
        return 1;
    case 2: {
        uint64_t n;
        if (!get_varint(p, end, pos, 64, &n)) {
            *why = "length does not end inside its message";
            return -1;
        }
        if (n > end - *pos) {
            *why = "length-delimited field runs past the end of its message";
            return -1;
        }
        f->sub = *pos;
        f->len = (size_t)n;
        *pos += (size_t)n;
        return 1;
    }
    default:
        *why = "unsupported wire type (group or invalid)";
        return -1;
    }
}

/* ---- the index file ---- */

typedef struct ck_rd {
    const char *path; /* the index file, for messages */
    const uint8_t *p; /* its bytes */
    size_t size;
    size_t data_end; /* size - CK_FOOTER: blocks end here */
    char *err;
    size_t errlen;
} ck_rd;

/* A block handle at p[*pos .. end). */
static bool get_handle(const uint8_t *p, size_t end, size_t *pos, uint64_t *off, uint64_t *n)
{
    return get_varint(p, end, pos, 64, off) && get_varint(p, end, pos, 64, n);
}

/* Snappy (compression type 1; TensorFlow writes it for some indexes):
 * a varint32 length, then literals (tag & 3 == 0: length - 1 in the tag's
 * upper 6 bits, or in the 1..4 bytes after it for values 60..63) and
 * back-references (1: length 4..11 and an 11-bit offset; 2: length 1..64,
 * 2-byte offset; 3: length 1..64, 4-byte offset) copied byte by byte, so
 * overlapping copies repeat.  A copy produces at most 64 bytes from 3, so a
 * length above 22 x the input is refused before anything is allocated.
 * NULL on success (*out malloc'ed), else the reason. */
static const char *snappy_decode(const uint8_t *p, size_t n, uint8_t **out, size_t *out_n)
{
    size_t pos = 0;
    uint64_t ulen;
    if (!get_varint(p, n, &pos, 32, &ulen))
        return "snappy length does not end";
    if (ulen > 22 * (uint64_t)n + 64)
        return "snappy length too large for its block";
    uint8_t *o = malloc(ulen ? (size_t)ulen : 1);
    if (!o)
        return "out of memory";
    size_t op = 0;
    const char *why = NULL;
    while (pos < n && !why) {
        uint8_t tag = p[pos++];
        uint64_t len, offset;
        if ((tag & 3) == 0) {
            len = tag >> 2;
            if (len >= 60) {
                size_t nb = (size_t)len - 59;
                if (n - pos < nb) {
                    why = "snappy literal length past the end";
                    break;
                }
                len = 0;
                for (size_t i = 0; i < nb; i++)
                    len |= (uint64_t)p[pos + i] << (8 * i);
                pos += nb;
            }
            len += 1;
            if (len > n - pos || len > ulen - op) {
                why = "snappy literal past the end";
                break;
            }
            memcpy(o + op, p + pos, (size_t)len);
            op += (size_t)len;
            pos += (size_t)len;
            continue;
        }
        if ((tag & 3) == 1) {
            if (pos >= n) {
                why = "snappy copy past the end";
                break;
            }
            len = 4 + ((tag >> 2) & 7);
            offset = (uint64_t)(tag >> 5) << 8 | p[pos++];
        } else if ((tag & 3) == 2) {
            if (n - pos < 2) {
                why = "snappy copy past the end";
                break;
            }
            len = (uint64_t)(tag >> 2) + 1;
            offset = (uint64_t)p[pos] | (uint64_t)p[pos + 1] << 8;
            pos += 2;
        } else {
            if (n - pos < 4) {
                why = "snappy copy past the end";
                break;
            }
            len = (uint64_t)(tag >> 2) + 1;
            offset = get32(p + pos);
            pos += 4;
        }
        if (offset == 0 || offset > op || len > ulen - op) {
            why = "snappy copy outside the output";
            break;
        }
        for (size_t i = 0; i < (size_t)len; i++)
            o[op + i] = o[op - (size_t)offset + i];
        op += (size_t)len;
    }
    if (!why && op != ulen)
        why = "snappy data shorter than its length";
    if (why) {
        free(o);
        return why;
    }
    *out = o;
    *out_n = (size_t)ulen;
    return NULL;
}

/* Checks the block (off, n) lies before the footer with its trailer, its
 * CRC and its compression type (none or snappy); *blk / *blk_n = its
 * contents, in the file or (compressed) in *owned, which the caller frees. */
static tcrt_status block_get(ck_rd *r, const char *what, uint64_t off, uint64_t n, const uint8_t **blk,
                             size_t *blk_n, uint8_t **owned)
{
    *owned = NULL;
    if (off > r->data_end || n > r->data_end - off || CK_TRAILER > r->data_end - off - n)
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                    "%s block (offset %llu, %llu bytes) runs past the end of the file (%zu bytes)", what,
                    (unsigned long long)off, (unsigned long long)n, r->size);
    const uint8_t *b = r->p + off;
    uint32_t want = get32(b + n + 1);
    uint32_t got = tcrt_crc32c_mask(tcrt_crc32c(0, b, (size_t)n + 1));
    if (want != got)
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                    "%s block at offset %llu: checksum mismatch (stored 0x%08x, computed 0x%08x)", what,
                    (unsigned long long)off, want, got);
    *blk = b;
    *blk_n = (size_t)n;
    if (b[n] == 1) {
        const char *why = snappy_decode(b, (size_t)n, owned, blk_n);
        if (why)
            return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "%s block at offset %llu: %s", what,
                        (unsigned long long)off, why);
        *blk = *owned;
    } else if (b[n] != 0) {
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                    "%s block at offset %llu: unknown compression type %d", what, (unsigned long long)off,
                    b[n]);
    }
    if (*blk_n < 4) {
        free(*owned);
        *owned = NULL;
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                    "%s block at offset %llu: %zu bytes, too short for a restart count", what,
                    (unsigned long long)off, *blk_n);
    }
    return TCRT_OK;
}

/* Iterates a block's entries, checking them and the restart array. */
typedef struct blk_it {
    ck_rd *r;
    const char *what;
    uint64_t off; /* block offset in the file, for messages */
    const uint8_t *b;
    uint8_t *owned; /* decompressed contents, or NULL */
    size_t limit;   /* start of the restart array */
    const uint8_t *restarts;
    uint32_t n_restarts, next_restart;
    size_t pos;
    uint8_t *key; /* the current key, reassembled */
    size_t key_len, key_cap;
    const uint8_t *val;
    size_t val_len;
} blk_it;

static tcrt_status blk_open(blk_it *it, ck_rd *r, const char *what, uint64_t off, uint64_t n)
{
    uint8_t *key = it->key; /* the key buffer is kept from block to block */
    size_t key_cap = it->key_cap;
    free(it->owned);
    memset(it, 0, sizeof *it);
    it->key = key;
    it->key_cap = key_cap;
    it->r = r;
    it->what = what;
    it->off = off;
    size_t bn = 0;
    tcrt_status s = block_get(r, what, off, n, &it->b, &bn, &it->owned);
    if (s != TCRT_OK)
        return s;
    it->n_restarts = get32(it->b + bn - 4);
    if (it->n_restarts > (bn - 4) / 4)
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                    "%s block at offset %llu: %u restart points do not fit in its %zu bytes", what,
                    (unsigned long long)off, it->n_restarts, bn);
    it->limit = bn - 4 - 4 * (size_t)it->n_restarts;
    it->restarts = it->b + it->limit;
    if (it->limit > 0 && (it->n_restarts == 0 || get32(it->restarts) != 0))
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                    "%s block at offset %llu: the first restart point is not offset 0", what,
                    (unsigned long long)off);
    return TCRT_OK;
}

static void blk_free(blk_it *it)
{
    free(it->owned);
    free(it->key);
}

/* 1: an entry (it->key / key_len, it->val / val_len); 0: the end; -1 error. */
static int blk_next(blk_it *it, tcrt_status *st)
{
    ck_rd *r = it->r;
    if (it->pos >= it->limit) {
        /* every restart point must have been met (an empty block may list offset 0) */
        bool ok = it->next_restart == it->n_restarts ||
                  (it->limit == 0 && it->n_restarts == 1 && get32(it->restarts) == 0);
        if (!ok) {
            *st = fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                       "%s block at offset %llu: restart point %u (offset %u) is not at an entry", it->what,
                       (unsigned long long)it->off, it->next_restart,
                       get32(it->restarts + 4 * it->next_restart));
            return -1;
        }
        return 0;
    }
    size_t start = it->pos;
    uint64_t shared, unshared, vlen;
    const char *why = NULL;
    if (!get_varint(it->b, it->limit, &it->pos, 32, &shared) ||
        !get_varint(it->b, it->limit, &it->pos, 32, &unshared) ||
        !get_varint(it->b, it->limit, &it->pos, 32, &vlen))
        why = "entry header varint does not end inside the block";
    else if (shared > it->key_len)
        why = "shared key prefix longer than the previous key";
    else if (unshared > it->limit - it->pos || vlen > it->limit - it->pos - unshared)
        why = "entry runs past the end of the block";
    if (!why && it->next_restart < it->n_restarts) {
        uint32_t rs = get32(it->restarts + 4 * it->next_restart);
        if (rs == start) {
            if (shared != 0)
                why = "entry at a restart point shares a key prefix";
            it->next_restart++;
        } else if (rs < start) {
            why = "restart point not at an entry (or out of order)";
        }
    }
    if (why) {
        *st = fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                   "%s block at offset %llu: entry at byte %zu: %s", it->what, (unsigned long long)it->off,
                   start, why);
        return -1;
    }
    size_t klen = (size_t)shared + (size_t)unshared;
    if (klen > it->key_cap) {
        size_t cap = klen < 64 ? 64 : klen * 2;
        uint8_t *k = realloc(it->key, cap);
        if (!k) {
            *st = fail(r->err, r->errlen, TCRT_ERR_NOMEM, r->path, "out of memory");
            return -1;
        }
        it->key = k;
        it->key_cap = cap;
    }
    if (unshared)
        memcpy(it->key + shared, it->b + it->pos, (size_t)unshared);
    it->key_len = klen;
    it->pos += (size_t)unshared;
    it->val = it->b + it->pos;
    it->val_len = (size_t)vlen;
    it->pos += (size_t)vlen;
    return 1;
}

/* ---- protos ---- */

static tcrt_status bad_proto(ck_rd *r, const char *what, const char *why)
{
    return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "%s: %s", what, why);
}

static tcrt_status parse_header(ck_rd *r, const uint8_t *p, size_t n, int *num_shards)
{
    size_t pos = 0;
    pb_field f;
    const char *why = NULL;
    int k;
    int64_t shards = 0, endian = 0;
    while ((k = pb_next(p, n, &pos, &f, &why)) > 0) {
        if (f.num == 1 && f.wire == 0) {
            shards = (int64_t)f.v;
        } else if (f.num == 2 && f.wire == 0) {
            endian = (int64_t)f.v;
        } else if (f.num == 3 && f.wire == 2) {
            size_t vp = f.sub, vend = f.sub + f.len;
            pb_field g;
            int kv;
            while ((kv = pb_next(p, vend, &vp, &g, &why)) > 0) {
                if (g.num == 2 && g.wire == 0 && (int64_t)g.v > CK_READER_VERSION)
                    return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                                "header: the checkpoint needs a reader of version %lld (this one is %d)",
                                (long long)(int64_t)g.v, CK_READER_VERSION);
                if (g.num == 3 && g.wire == 0 && (int64_t)g.v == CK_READER_VERSION)
                    return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                                "header: the checkpoint lists reader version %d as bad", CK_READER_VERSION);
                if (g.num == 3 && g.wire == 2) {
                    size_t bp = g.sub;
                    uint64_t v;
                    while (bp < g.sub + g.len) {
                        if (!get_varint(p, g.sub + g.len, &bp, 64, &v))
                            return bad_proto(r, "header version", "packed varint does not end");
                        if ((int64_t)v == CK_READER_VERSION)
                            return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                                        "header: the checkpoint lists reader version %d as bad",
                                        CK_READER_VERSION);
                    }
                }
            }
            if (kv < 0)
                return bad_proto(r, "header version", why);
        } else if (f.num <= 3) {
            return bad_proto(r, "header", "field with the wrong wire type");
        }
    }
    if (k < 0)
        return bad_proto(r, "header", why);
    if (endian == 1)
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                    "header: big-endian checkpoints are not supported");
    if (endian != 0)
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "header: unknown endianness %lld",
                    (long long)endian);
    if (shards < 1 || shards > CK_MAX_SHARDS)
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "header: num_shards %lld (must be 1..%d)",
                    (long long)shards, CK_MAX_SHARDS);
    *num_shards = (int)shards;
    return TCRT_OK;
}

/* A BundleEntryProto into e (key set by the caller) and m. */
static tcrt_status parse_entry(ck_rd *r, const char *key, const uint8_t *p, size_t n, int num_shards,
                               tcrt_ckpt_entry *e, ck_meta *m)
{
    char what[256];
    snprintf(what, sizeof what, "entry '%s'", key);
    size_t pos = 0;
    pb_field f;
    const char *why = NULL;
    int k;
    int64_t dtype = 0, shard = 0, offset = 0, size = 0;
    e->rank = 0;
    m->kind = CK_PLAIN;
    m->crc = 0;
    while ((k = pb_next(p, n, &pos, &f, &why)) > 0) {
        switch (f.num) {
        case 1:
        case 3:
        case 4:
        case 5:
            if (f.wire != 0)
                return bad_proto(r, what, "field with the wrong wire type");
            if (f.num == 1)
                dtype = (int64_t)f.v;
            else if (f.num == 3)
                shard = (int64_t)f.v;
            else if (f.num == 4)
                offset = (int64_t)f.v;
            else
                size = (int64_t)f.v;
            break;
        case 6:
            if (f.wire != 5)
                return bad_proto(r, what, "crc32c is not a fixed32");
            m->crc = (uint32_t)f.v;
            break;
        case 7:
            if (f.wire != 2)
                return bad_proto(r, what, "field with the wrong wire type");
            m->kind = CK_SLICED;
            break;
        case 2: {
            if (f.wire != 2)
                return bad_proto(r, what, "field with the wrong wire type");
            size_t sp = f.sub, send = f.sub + f.len;
            pb_field g;
            int ks;
            while ((ks = pb_next(p, send, &sp, &g, &why)) > 0) {
                if (g.num == 3 && g.wire == 0 && g.v != 0)
                    return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "%s: shape of unknown rank",
                                what);
                if (g.num != 2)
                    continue;
                if (g.wire != 2)
                    return bad_proto(r, what, "shape dim with the wrong wire type");
                if (e->rank >= TCRT_MAX_RANK)
                    return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "%s: rank above %d", what,
                                TCRT_MAX_RANK);
                size_t dp = g.sub, dend = g.sub + g.len;
                pb_field h;
                int kd;
                int64_t dim = 0;
                while ((kd = pb_next(p, dend, &dp, &h, &why)) > 0)
                    if (h.num == 1) {
                        if (h.wire != 0)
                            return bad_proto(r, what, "dim size with the wrong wire type");
                        dim = (int64_t)h.v;
                    }
                if (kd < 0)
                    return bad_proto(r, what, why);
                if (dim < 0)
                    return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "%s: dim %d is %lld", what,
                                e->rank, (long long)dim);
                e->dims[e->rank++] = dim;
            }
            if (ks < 0)
                return bad_proto(r, what, why);
            break;
        }
        default:
            break; /* unknown fields are skipped, as protobuf does */
        }
    }
    if (k < 0)
        return bad_proto(r, what, why);
    /* an absent shape is a scalar, as in TensorFlow */
    size_t esz = dtype > 0 && dtype < 64 ? tcrt_dtype_size((tcrt_dtype)dtype) : 0;
    if (esz == 0 && dtype != TCRT_STRING)
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "%s: dtype %lld is not supported", what,
                    (long long)dtype);
    if (dtype == TCRT_STRING && m->kind == CK_PLAIN)
        m->kind = CK_STRING;
    e->dtype = (tcrt_dtype)dtype;
    if (shard < 0 || shard >= num_shards)
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "%s: shard_id %lld (num_shards is %d)", what,
                    (long long)shard, num_shards);
    if (offset < 0 || size < 0)
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "%s: negative offset %lld or size %lld",
                    what, (long long)offset, (long long)size);
    /* element count x element size, overflow-checked against the size field */
    uint64_t bytes = esz ? esz : 1;
    bool over = false, zero = false;
    for (int d = 0; d < e->rank; d++) {
        if (e->dims[d] == 0)
            zero = true;
        else if (bytes > UINT64_MAX / (uint64_t)e->dims[d])
            over = true;
        else
            bytes *= (uint64_t)e->dims[d];
    }
    if (zero)
        bytes = 0, over = false;
    if (m->kind == CK_PLAIN && (over || bytes != (uint64_t)size))
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                    "%s: size %lld does not match its dtype and shape (%s%llu bytes)", what, (long long)size,
                    over ? "over " : "", over ? (unsigned long long)UINT64_MAX : (unsigned long long)bytes);
    if ((uint64_t)size > (uint64_t)SIZE_MAX)
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "%s: size %lld too large", what,
                    (long long)size);
    e->bytes = m->kind == CK_SLICED ? (over ? 0 : (size_t)bytes) : (size_t)size;
    m->shard = (int)shard;
    m->offset = (uint64_t)offset;
    return TCRT_OK;
}

/* ---- open ---- */

static tcrt_status read_file(const char *path, uint8_t **out, size_t *n, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, TCRT_ERR_IO, path, "cannot open: %s", strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return fail(err, errlen, TCRT_ERR_IO, path, "not a regular file");
    }
    if (sb.st_size > CK_MAX_INDEX) {
        close(fd);
        return fail(err, errlen, TCRT_ERR_FORMAT, path,
                    "index file of %lld bytes is over the %lld-byte limit", (long long)sb.st_size,
                    (long long)CK_MAX_INDEX);
    }
    size_t size = (size_t)sb.st_size;
    uint8_t *p = malloc(size ? size : 1);
    if (!p) {
        close(fd);
        return fail(err, errlen, TCRT_ERR_NOMEM, path, "out of memory (%zu bytes)", size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t k = read(fd, p + got, size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    if (got != size) {
        free(p);
        return fail(err, errlen, TCRT_ERR_IO, path, "short read (%zu of %zu bytes)", got, size);
    }
    *out = p;
    *n = size;
    return TCRT_OK;
}

static tcrt_status add_entry(tcrt_ckpt *ck, const uint8_t *key, size_t klen, const tcrt_ckpt_entry *e,
                             const ck_meta *m, ck_rd *r)
{
    if (ck->n == ck->cap) {
        if (ck->cap > INT_MAX / 2)
            return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "too many entries");
        int cap = ck->cap ? ck->cap * 2 : 16;
        tcrt_ckpt_entry *ne = realloc(ck->entries, (size_t)cap * sizeof *ne);
        if (ne)
            ck->entries = ne;
        ck_meta *nm = ne ? realloc(ck->meta, (size_t)cap * sizeof *nm) : NULL;
        if (!ne || !nm)
            return fail(r->err, r->errlen, TCRT_ERR_NOMEM, r->path, "out of memory");
        ck->meta = nm;
        ck->cap = cap;
    }
    char *k = malloc(klen + 1);
    if (!k)
        return fail(r->err, r->errlen, TCRT_ERR_NOMEM, r->path, "out of memory");
    memcpy(k, key, klen);
    k[klen] = 0;
    ck->entries[ck->n] = *e;
    ck->entries[ck->n].key = k;
    ck->entries[ck->n].data = NULL;
    ck->meta[ck->n] = *m;
    ck->n++;
    return TCRT_OK;
}

/* Key order of TensorFlow's tables: bytewise, a prefix first. */
static int key_cmp(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? c : (na < nb ? -1 : na > nb ? 1 : 0);
}

static tcrt_status parse_index(tcrt_ckpt *ck, ck_rd *r)
{
    if (r->size < CK_FOOTER)
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                    "%zu bytes, too short for a table footer (%d bytes)", r->size, CK_FOOTER);
    const uint8_t *ft = r->p + r->size - CK_FOOTER;
    uint64_t magic = get32(ft + 40) | (uint64_t)get32(ft + 44) << 32;
    if (magic != CK_MAGIC)
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                    "bad magic number 0x%016llx (not a TensorFlow checkpoint index)",
                    (unsigned long long)magic);
    r->data_end = r->size - CK_FOOTER;
    size_t fp = r->size - CK_FOOTER, fend = fp + 40;
    uint64_t meta_off, meta_n, idx_off, idx_n;
    if (!get_handle(r->p, fend, &fp, &meta_off, &meta_n) || !get_handle(r->p, fend, &fp, &idx_off, &idx_n))
        return fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "footer: block handle varint does not end");
    blk_it ix, db;
    memset(&ix, 0, sizeof ix);
    memset(&db, 0, sizeof db);
    uint8_t *prev = NULL; /* the previous key (for the strict order across blocks) */
    size_t prev_len = 0, prev_cap = 0;
    /* the metaindex block: checked, its contents unused */
    tcrt_status s = blk_open(&db, r, "metaindex", meta_off, meta_n);
    int k;
    while (s == TCRT_OK && (k = blk_next(&db, &s)) > 0)
        ;
    if (s == TCRT_OK)
        s = blk_open(&ix, r, "index", idx_off, idx_n);
    if (s != TCRT_OK)
        goto out;
    bool have_prev = false, have_header = false;
    uint64_t next_block = 0; /* data blocks must come in file order without overlap */
    while ((k = blk_next(&ix, &s)) > 0) {
        size_t hp = 0;
        uint64_t off, n;
        if (!get_handle(ix.val, ix.val_len, &hp, &off, &n) || hp != ix.val_len) {
            s = fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "index block: entry %zu: bad block handle",
                     ix.pos);
            goto out;
        }
        if (off < next_block) {
            s = fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                     "index block: data block at offset %llu overlaps or precedes the previous one",
                     (unsigned long long)off);
            goto out;
        }
        if ((s = blk_open(&db, r, "data", off, n)) != TCRT_OK)
            goto out;
        next_block = off + n + CK_TRAILER;
        int kd;
        while ((kd = blk_next(&db, &s)) > 0) {
            char shown[200];
            if (have_prev && key_cmp(db.key, db.key_len, prev, prev_len) <= 0) {
                s = fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "key '%s' out of order",
                         key_show(db.key, db.key_len, shown, sizeof shown));
                goto out;
            }
            if (key_cmp(db.key, db.key_len, ix.key, ix.key_len) > 0) {
                s = fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "key '%s' is above its index key",
                         key_show(db.key, db.key_len, shown, sizeof shown));
                goto out;
            }
            if (db.key_len > prev_cap) {
                size_t cap = db.key_len * 2;
                uint8_t *np = realloc(prev, cap);
                if (!np) {
                    s = fail(r->err, r->errlen, TCRT_ERR_NOMEM, r->path, "out of memory");
                    goto out;
                }
                prev = np;
                prev_cap = cap;
            }
            if (db.key_len)
                memcpy(prev, db.key, db.key_len);
            prev_len = db.key_len;
            bool first = !have_prev;
            have_prev = true;
            if (first) {
                if (db.key_len != 0) {
                    s = fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path,
                             "no header entry (the first key is '%s')",
                             key_show(db.key, db.key_len, shown, sizeof shown));
                    goto out;
                }
                if ((s = parse_header(r, db.val, db.val_len, &ck->num_shards)) != TCRT_OK)
                    goto out;
                have_header = true;
                continue;
            }
            key_show(db.key, db.key_len, shown, sizeof shown);
            tcrt_ckpt_entry e;
            ck_meta m;
            memset(&e, 0, sizeof e);
            if ((s = parse_entry(r, shown, db.val, db.val_len, ck->num_shards, &e, &m)) != TCRT_OK)
                goto out;
            if (memchr(db.key, 0, db.key_len))
                continue; /* an encoded slice key: not listed */
            if ((s = add_entry(ck, db.key, db.key_len, &e, &m, r)) != TCRT_OK)
                goto out;
        }
        if (kd < 0)
            goto out;
    }
    if (k < 0)
        goto out;
    if (!have_header)
        s = fail(r->err, r->errlen, TCRT_ERR_FORMAT, r->path, "no header entry (the table is empty)");
out:
    free(prev);
    blk_free(&ix);
    blk_free(&db);
    return s;
}

/* Every listed entry with data fits in its shard (stat'ed once each). */
static tcrt_status check_shards(tcrt_ckpt *ck, char *err, size_t errlen)
{
    if (ck->n == 0)
        return TCRT_OK;
    int64_t *sizes = malloc((size_t)ck->num_shards * sizeof *sizes);
    if (!sizes)
        return fail(err, errlen, TCRT_ERR_NOMEM, ck->index_path, "out of memory");
    for (int i = 0; i < ck->num_shards; i++)
        sizes[i] = -1;
    tcrt_status s = TCRT_OK;
    for (int i = 0; i < ck->n && s == TCRT_OK; i++) {
        const ck_meta *m = &ck->meta[i];
        const tcrt_ckpt_entry *e = &ck->entries[i];
        if (m->kind == CK_SLICED)
            continue;
        char *path = shard_path(ck->prefix, m->shard, ck->num_shards);
        if (!path) {
            s = fail(err, errlen, TCRT_ERR_NOMEM, ck->index_path, "out of memory");
            break;
        }
        if (sizes[m->shard] < 0) {
            struct stat sb;
            if (stat(path, &sb) != 0)
                s = fail(err, errlen, TCRT_ERR_IO, path, "cannot open data shard (for '%s'): %s", e->key,
                         strerror(errno));
            else if (!S_ISREG(sb.st_mode))
                s = fail(err, errlen, TCRT_ERR_IO, path, "data shard (for '%s') is not a regular file",
                         e->key);
            else
                sizes[m->shard] = (int64_t)sb.st_size;
        }
        if (s == TCRT_OK &&
            (m->offset > (uint64_t)sizes[m->shard] || e->bytes > (uint64_t)sizes[m->shard] - m->offset))
            s = fail(err, errlen, TCRT_ERR_FORMAT, path,
                     "entry '%s' (offset %llu, %zu bytes) runs past the end of the shard (%lld bytes)",
                     e->key, (unsigned long long)m->offset, e->bytes, (long long)sizes[m->shard]);
        free(path);
    }
    free(sizes);
    return s;
}

tcrt_status tcrt_ckpt_open(const char *prefix, tcrt_ckpt **out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!out)
        return fail(err, errlen, TCRT_ERR_ARG, prefix, "no output pointer");
    *out = NULL;
    if (!prefix || !prefix[0])
        return fail(err, errlen, TCRT_ERR_ARG, "(checkpoint)", "empty checkpoint prefix");
    tcrt_ckpt *ck = calloc(1, sizeof *ck);
    if (!ck)
        return fail(err, errlen, TCRT_ERR_NOMEM, prefix, "out of memory");
    ck->prefix = str_cat(prefix, "");
    ck->index_path = str_cat(prefix, ".index");
    if (!ck->prefix || !ck->index_path) {
        tcrt_ckpt_close(ck);
        return fail(err, errlen, TCRT_ERR_NOMEM, prefix, "out of memory");
    }
    ck_rd r = {.path = ck->index_path, .err = err, .errlen = errlen};
    uint8_t *buf = NULL;
    tcrt_status s = read_file(ck->index_path, &buf, &r.size, err, errlen);
    if (s == TCRT_OK) {
        r.p = buf;
        s = parse_index(ck, &r);
    }
    free(buf);
    if (s == TCRT_OK)
        s = check_shards(ck, err, errlen);
    if (s != TCRT_OK) {
        tcrt_ckpt_close(ck);
        return s;
    }
    *out = ck;
    return TCRT_OK;
}

void tcrt_ckpt_close(tcrt_ckpt *ck)
{
    if (!ck)
        return;
    for (int i = 0; i < ck->n; i++)
        free((char *)ck->entries[i].key);
    free(ck->entries);
    free(ck->meta);
    free(ck->prefix);
    free(ck->index_path);
    free(ck);
}

int tcrt_ckpt_count(const tcrt_ckpt *ck)
{
    return ck ? ck->n : 0;
}

const tcrt_ckpt_entry *tcrt_ckpt_get(const tcrt_ckpt *ck, int i)
{
    return ck && i >= 0 && i < ck->n ? &ck->entries[i] : NULL;
}

const tcrt_ckpt_entry *tcrt_ckpt_find(const tcrt_ckpt *ck, const char *key)
{
    if (!ck || !key)
        return NULL;
    int lo = 0, hi = ck->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(ck->entries[mid].key, key);
        if (c == 0)
            return &ck->entries[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

tcrt_status tcrt_ckpt_read(const tcrt_ckpt *ck, const tcrt_ckpt_entry *e, void *dst, size_t n, char *err,
                           size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!ck || !e || e < ck->entries || e >= ck->entries + ck->n)
        return fail(err, errlen, TCRT_ERR_ARG, ck ? ck->index_path : "(checkpoint)",
                    "entry does not belong to this checkpoint");
    size_t i = (size_t)(e - ck->entries);
    const ck_meta *m = &ck->meta[i];
    if (m->kind == CK_SLICED)
        return fail(err, errlen, TCRT_ERR_FORMAT, ck->index_path,
                    "entry '%s': sliced (partitioned) tensors are not supported", e->key);
    if (m->kind == CK_STRING)
        return fail(err, errlen, TCRT_ERR_FORMAT, ck->index_path,
                    "entry '%s': string tensors are not supported", e->key);
    if (n != e->bytes || (n && !dst))
        return fail(err, errlen, TCRT_ERR_ARG, ck->index_path,
                    "entry '%s': %zu bytes, but the buffer is %zu%s", e->key, e->bytes, n,
                    n && !dst ? " (NULL)" : "");
    char *path = shard_path(ck->prefix, m->shard, ck->num_shards);
    if (!path)
        return fail(err, errlen, TCRT_ERR_NOMEM, ck->index_path, "out of memory");
    tcrt_status s = TCRT_OK;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0) {
        s = fail(err, errlen, TCRT_ERR_IO, path, "cannot open data shard (for '%s'): %s", e->key,
                 strerror(errno));
        goto out;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        s = fail(err, errlen, TCRT_ERR_IO, path, "data shard (for '%s') is not a regular file", e->key);
        goto out;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, (uint8_t *)dst + got, n - got, (off_t)(m->offset + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            s = fail(err, errlen, TCRT_ERR_IO, path, "entry '%s': read failed: %s", e->key, strerror(errno));
            goto out;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    if (got != n) {
        s = fail(err, errlen, TCRT_ERR_FORMAT, path, "entry '%s': data shard truncated (%zu of %zu bytes)",
                 e->key, got, n);
        goto out;
    }
    uint32_t crc = tcrt_crc32c_mask(tcrt_crc32c(0, dst, n));
    if (crc != m->crc)
        s = fail(err, errlen, TCRT_ERR_FORMAT, path,
                 "entry '%s': checksum mismatch (stored 0x%08x, computed 0x%08x)", e->key, m->crc, crc);
out:
    if (fd >= 0)
        close(fd);
    free(path);
    return s;
}

/* ---- writing ---- */

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} wbuf;

static void wb_put(wbuf *b, const void *d, size_t n)
{
    if (b->oom)
        return;
    if (n > b->cap - b->n) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->n < n) {
            if (cap > SIZE_MAX / 2) {
                b->oom = true;
                return;
            }
            cap *= 2;
        }
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void wb_varint(wbuf *b, uint64_t v)
{
    uint8_t t[10];
    int n = 0;
    while (v >= 0x80) {
        t[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (uint8_t)v;
    wb_put(b, t, (size_t)n);
}

static void wb_fixed32(wbuf *b, uint32_t v)
{
    uint8_t t[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    wb_put(b, t, 4);
}

/* A table block being built. */
typedef struct blk_w {
    wbuf b, restarts;
    int counter, interval, n_entries;
    wbuf last; /* the last key added */
} blk_w;

static void bw_reset(blk_w *w, int interval)
{
    w->b.n = w->restarts.n = w->last.n = 0;
    w->counter = w->n_entries = 0;
    w->interval = interval;
    wb_fixed32(&w->restarts, 0);
}

static void bw_add(blk_w *w, const char *key, size_t klen, const uint8_t *val, size_t vlen)
{
    size_t shared = 0;
    if (w->counter < w->interval) {
        size_t lim = klen < w->last.n ? klen : w->last.n;
        while (shared < lim && (uint8_t)key[shared] == w->last.p[shared])
            shared++;
    } else {
        wb_fixed32(&w->restarts, (uint32_t)w->b.n);
        w->counter = 0;
    }
    wb_varint(&w->b, shared);
    wb_varint(&w->b, klen - shared);
    wb_varint(&w->b, vlen);
    wb_put(&w->b, key + shared, klen - shared);
    wb_put(&w->b, val, vlen);
    w->last.n = 0;
    wb_put(&w->last, key, klen);
    w->counter++;
    w->n_entries++;
}

static size_t bw_size(const blk_w *w)
{
    return w->b.n + w->restarts.n + 4;
}

/* Appends the finished block and its trailer to out; *off / *n = its handle. */
static void bw_flush(blk_w *w, wbuf *out, uint64_t *off, uint64_t *n)
{
    size_t start = out->n;
    wb_put(out, w->b.p, w->b.n);
    wb_put(out, w->restarts.p, w->restarts.n);
    wb_fixed32(out, (uint32_t)(w->restarts.n / 4));
    *off = start;
    *n = out->n - start;
    uint8_t type = 0;
    wb_put(out, &type, 1);
    if (!out->oom)
        wb_fixed32(out, tcrt_crc32c_mask(tcrt_crc32c(0, out->p + start, (size_t)*n + 1)));
}

static void bw_free(blk_w *w)
{
    free(w->b.p);
    free(w->restarts.p);
    free(w->last.p);
}

static int entry_cmp(const void *a, const void *b)
{
    const tcrt_ckpt_entry *x = *(const tcrt_ckpt_entry *const *)a, *y = *(const tcrt_ckpt_entry *const *)b;
    return strcmp(x->key, y->key);
}

/* An exclusive temporary next to path: path.PID.N.tmp. */
static int tmp_create(const char *path, char **tmp_out)
{
    size_t len = strlen(path) + 48;
    char *tmp = malloc(len);
    if (!tmp) {
        errno = ENOMEM;
        return -1;
    }
    for (unsigned k = 0; k < 1000; k++) {
        snprintf(tmp, len, "%s.%ld.%u.tmp", path, (long)getpid(), k);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            *tmp_out = tmp;
            return fd;
        }
        if (errno != EEXIST)
            break;
    }
    int saved = errno;
    free(tmp);
    errno = saved;
    return -1;
}

static bool write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t k = write(fd, b, n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO;
            return false;
        }
        b += k;
        n -= (size_t)k;
    }
    return true;
}

/* Checks one entry to write; NULL or the reason. */
static const char *entry_problem(const tcrt_ckpt_entry *e, char *buf, size_t cap)
{
    size_t esz = tcrt_dtype_size(e->dtype);
    if (esz == 0) {
        snprintf(buf, cap, "cannot write dtype %d", (int)e->dtype);
        return buf;
    }
    if (e->rank < 0 || e->rank > TCRT_MAX_RANK) {
        snprintf(buf, cap, "rank %d (must be 0..%d)", e->rank, TCRT_MAX_RANK);
        return buf;
    }
    uint64_t bytes = esz;
    bool over = false, zero = false;
    for (int d = 0; d < e->rank; d++) {
        if (e->dims[d] < 0) {
            snprintf(buf, cap, "dim %d is %lld", d, (long long)e->dims[d]);
            return buf;
        }
        if (e->dims[d] == 0)
            zero = true;
        else if (bytes > UINT64_MAX / (uint64_t)e->dims[d])
            over = true;
        else
            bytes *= (uint64_t)e->dims[d];
    }
    if (zero)
        bytes = 0, over = false;
    if (over || bytes != e->bytes) {
        char ty[128];
        tcrt_type_str(e->dtype, e->rank, e->dims, ty, sizeof ty);
        snprintf(buf, cap, "%zu bytes do not match %s", e->bytes, ty);
        return buf;
    }
    if (e->bytes && !e->data) {
        snprintf(buf, cap, "no data");
        return buf;
    }
    return NULL;
}

/* Index keys as TensorFlow's bytewise comparator shortens them, so that
 * tcrt_ckpt_write gives TensorFlow's bytes.  short_separator: k (the last
 * key of a block) becomes a short key in [k, next): at the first differing
 * byte, if k's byte + 1 is still below next's, that byte is incremented and
 * the rest dropped; otherwise k stays.  short_successor: a short key >= k:
 * the first byte that is not 0xff, incremented, the rest dropped. */
static void short_separator(wbuf *k, const char *next, size_t next_n)
{
    size_t lim = k->n < next_n ? k->n : next_n, i = 0;
    while (i < lim && k->p[i] == (uint8_t)next[i])
        i++;
    if (i < lim && k->p[i] < 0xff && k->p[i] + 1 < (uint8_t)next[i]) {
        k->p[i]++;
        k->n = i + 1;
    }
}

static void short_successor(wbuf *k)
{
    for (size_t i = 0; i < k->n; i++)
        if (k->p[i] != 0xff) {
            k->p[i]++;
            k->n = i + 1;
            return;
        }
}

/* The index file's bytes for the sorted entries (offsets and masked CRCs
 * given); false when out of memory. */
static bool build_index(const tcrt_ckpt_entry *const *sorted, int n, const uint64_t *offs,
                        const uint32_t *crcs, wbuf *out)
{
    blk_w data, index;
    memset(&data, 0, sizeof data);
    memset(&index, 0, sizeof index);
    bw_reset(&data, CK_RESTART);
    bw_reset(&index, 1);
    wbuf val = {0}, shape = {0}, dim = {0}, handle = {0}, sep = {0};
    bool pending = false; /* a flushed block waits for its index entry */
    uint64_t off, sz;
    /* header: num_shards 1, endianness LITTLE (0, the default, not written), version { producer 1 } */
    static const uint8_t header[] = {0x08, 0x01, 0x1a, 0x02, 0x08, 0x01};
    bw_add(&data, "", 0, header, sizeof header);
    for (int i = 0; i <= n; i++) {
        if (i < n) {
            const tcrt_ckpt_entry *e = sorted[i];
            val.n = shape.n = 0;
            wb_varint(&val, 1 << 3 | 0);
            wb_varint(&val, (uint64_t)e->dtype);
            for (int d = 0; d < e->rank; d++) {
                dim.n = 0;
                if (e->dims[d]) {
                    wb_varint(&dim, 1 << 3 | 0);
                    wb_varint(&dim, (uint64_t)e->dims[d]);
                }
                wb_varint(&shape, 2 << 3 | 2);
                wb_varint(&shape, dim.n);
                wb_put(&shape, dim.p, dim.n);
            }
            wb_varint(&val, 2 << 3 | 2);
            wb_varint(&val, shape.n);
            wb_put(&val, shape.p, shape.n);
            if (offs[i]) {
                wb_varint(&val, 4 << 3 | 0);
                wb_varint(&val, offs[i]);
            }
            if (e->bytes) {
                wb_varint(&val, 5 << 3 | 0);
                wb_varint(&val, e->bytes);
            }
            wb_varint(&val, 6 << 3 | 5);
            wb_fixed32(&val, crcs[i]);
            if (val.oom)
                break;
            if (pending) {
                /* the previous block's index entry: a short key between its last key and this one */
                short_separator(&sep, e->key, strlen(e->key));
                bw_add(&index, (const char *)sep.p, sep.n, handle.p, handle.n);
                pending = false;
            }
            bw_add(&data, e->key, strlen(e->key), val.p, val.n);
        }
        if (data.n_entries > 0 && (i == n || bw_size(&data) >= CK_BLOCK)) {
            bw_flush(&data, out, &off, &sz);
            handle.n = 0;
            wb_varint(&handle, off);
            wb_varint(&handle, sz);
            sep.n = 0;
            wb_put(&sep, data.last.p, data.last.n);
            pending = true;
            bw_reset(&data, CK_RESTART);
        }
    }
    if (pending) {
        short_successor(&sep);
        bw_add(&index, (const char *)sep.p, sep.n, handle.p, handle.n);
    }
    uint64_t meta_off, meta_n, idx_off, idx_n;
    blk_w meta;
    memset(&meta, 0, sizeof meta);
    bw_reset(&meta, CK_RESTART);
    bw_flush(&meta, out, &meta_off, &meta_n);
    bw_flush(&index, out, &idx_off, &idx_n);
    wbuf footer = {0};
    wb_varint(&footer, meta_off);
    wb_varint(&footer, meta_n);
    wb_varint(&footer, idx_off);
    wb_varint(&footer, idx_n);
    static const uint8_t zeros[40];
    if (!footer.oom)
        wb_put(&footer, zeros, 40 - footer.n);
    wb_fixed32(&footer, (uint32_t)CK_MAGIC);
    wb_fixed32(&footer, (uint32_t)(CK_MAGIC >> 32));
    wb_put(out, footer.p, footer.n);
    bool ok = !(val.oom || shape.oom || dim.oom || handle.oom || sep.oom || footer.oom || out->oom ||
                data.b.oom || data.restarts.oom || data.last.oom || index.b.oom || index.restarts.oom ||
                index.last.oom || meta.b.oom || meta.restarts.oom);
    bw_free(&data);
    bw_free(&index);
    bw_free(&meta);
    free(val.p);
    free(shape.p);
    free(dim.p);
    free(handle.p);
    free(sep.p);
    free(footer.p);
    return ok;
}

/* fsync of the folder holding path (best effort: some file systems refuse). */
static void sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = NULL;
    if (!slash) {
        dir = str_cat(".", "");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        dir = malloc(n + 1);
        if (dir) {
            memcpy(dir, path, n);
            dir[n] = 0;
        }
    }
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_CLOEXEC
#ifdef O_DIRECTORY
                           | O_DIRECTORY
#endif
    );
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

tcrt_status tcrt_ckpt_write(const char *prefix, const tcrt_ckpt_entry *e, int n, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!prefix || !prefix[0])
        return fail(err, errlen, TCRT_ERR_ARG, "(checkpoint)", "empty checkpoint prefix");
    if (n < 0 || (n > 0 && !e))
        return fail(err, errlen, TCRT_ERR_ARG, prefix, "bad entry list (%d entries)", n);
    for (int i = 0; i < n; i++) {
        char why[256];
        if (!e[i].key || !e[i].key[0])
            return fail(err, errlen, TCRT_ERR_ARG, prefix, "entry %d has no key", i);
        const char *p = entry_problem(&e[i], why, sizeof why);
        if (p)
            return fail(err, errlen, TCRT_ERR_ARG, prefix, "entry '%s': %s", e[i].key, p);
    }
    tcrt_status s = TCRT_OK;
    const tcrt_ckpt_entry **sorted = malloc((size_t)(n ? n : 1) * sizeof *sorted);
    uint64_t *offs = malloc((size_t)(n ? n : 1) * sizeof *offs);
    uint32_t *crcs = malloc((size_t)(n ? n : 1) * sizeof *crcs);
    char *data_path = shard_path(prefix, 0, 1), *index_path = str_cat(prefix, ".index");
    char *data_tmp = NULL, *index_tmp = NULL;
    wbuf idx = {0};
    int fd = -1;
    if (!sorted || !offs || !crcs || !data_path || !index_path) {
        s = fail(err, errlen, TCRT_ERR_NOMEM, prefix, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++)
        sorted[i] = &e[i];
    qsort(sorted, (size_t)n, sizeof *sorted, entry_cmp);
    for (int i = 1; i < n; i++)
        if (strcmp(sorted[i - 1]->key, sorted[i]->key) == 0) {
            s = fail(err, errlen, TCRT_ERR_ARG, prefix, "key '%s' appears twice", sorted[i]->key);
            goto out;
        }

    /* 1. the data shard, to a temporary */
    if ((fd = tmp_create(data_path, &data_tmp)) < 0) {
        s = fail(err, errlen, TCRT_ERR_IO, data_path, "cannot create: %s", strerror(errno));
        goto out;
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        offs[i] = off;
        crcs[i] = tcrt_crc32c_mask(tcrt_crc32c(0, sorted[i]->data, sorted[i]->bytes));
        if (sorted[i]->bytes && !write_all(fd, sorted[i]->data, sorted[i]->bytes)) {
            s = fail(err, errlen, TCRT_ERR_IO, data_path, "write failed: %s", strerror(errno));
            goto out;
        }
        off += sorted[i]->bytes;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        fd = -1;
        s = fail(err, errlen, TCRT_ERR_IO, data_path, "write failed: %s", strerror(errno));
        goto out;
    }
    fd = -1;

    /* 2. the index, built in memory, to a temporary */
    if (!build_index(sorted, n, offs, crcs, &idx)) {
        s = fail(err, errlen, TCRT_ERR_NOMEM, index_path, "out of memory");
        goto out;
    }
    if ((fd = tmp_create(index_path, &index_tmp)) < 0) {
        s = fail(err, errlen, TCRT_ERR_IO, index_path, "cannot create: %s", strerror(errno));
        goto out;
    }
    if (!write_all(fd, idx.p, idx.n) || fsync(fd) != 0) {
        s = fail(err, errlen, TCRT_ERR_IO, index_path, "write failed: %s", strerror(errno));
        goto out;
    }
    if (close(fd) != 0) {
        fd = -1;
        s = fail(err, errlen, TCRT_ERR_IO, index_path, "write failed: %s", strerror(errno));
        goto out;
    }
    fd = -1;

    /* 3. into place: data first, index last */
    if (rename(data_tmp, data_path) != 0) {
        s = fail(err, errlen, TCRT_ERR_IO, data_path, "cannot rename into place: %s", strerror(errno));
        goto out;
    }
    free(data_tmp);
    data_tmp = NULL;
    if (rename(index_tmp, index_path) != 0) {
        s = fail(err, errlen, TCRT_ERR_IO, index_path, "cannot rename into place: %s", strerror(errno));
        goto out;
    }
    free(index_tmp);
    index_tmp = NULL;
    sync_dir(index_path);
out:
    if (fd >= 0)
        close(fd);
    if (data_tmp) {
        unlink(data_tmp);
        free(data_tmp);
    }
    if (index_tmp) {
        unlink(index_tmp);
        free(index_tmp);
    }
    free(idx.p);
    free(sorted);
    free(offs);
    free(crcs);
    free(data_path);
    free(index_path);
    return s;
}

/* ---- checkpoint series: PREFIX-STEP and the pointer PREFIX.latest ---- */

/* "dir/name" -> dir ("." when none) and name; false if too long. */
static bool split_prefix(const char *prefix, char *dir, size_t dn, const char **base)
{
    const char *slash = strrchr(prefix, '/');
    *base = slash ? slash + 1 : prefix;
    size_t n = slash ? (slash == prefix ? 1 : (size_t)(slash - prefix)) : 1;
    if (n >= dn)
        return false;
    if (slash)
        memcpy(dir, prefix, n);
    else
        dir[0] = '.';
    dir[n] = 0;
    return true;
}

/* "NAME-123" with NAME == base: the step, else -1. */
static int64_t series_step(const char *entry, size_t len, const char *base)
{
    size_t bl = strlen(base);
    if (len < bl + 2 || memcmp(entry, base, bl) != 0 || entry[bl] != '-')
        return -1;
    int64_t v = 0;
    for (size_t i = bl + 1; i < len; i++) {
        if (entry[i] < '0' || entry[i] > '9' || v > (INT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (entry[i] - '0');
    }
    return v;
}

tcrt_status tcrt_ckpt_write_step(const char *prefix, int64_t step, const tcrt_ckpt_entry *e, int n, int keep,
                                 char *err, size_t errlen)
{
    if (!prefix || !prefix[0] || step < 0 || keep < 1)
        return fail(err, errlen, TCRT_ERR_ARG, prefix ? prefix : "(checkpoint)",
                    "bad checkpoint series arguments (step %lld, keep %d)", (long long)step, keep);
    char dir[4096];
    const char *base;
    if (!split_prefix(prefix, dir, sizeof dir, &base) || !base[0] || strlen(prefix) > 4000)
        return fail(err, errlen, TCRT_ERR_ARG, prefix, "checkpoint prefix too long or without a name");
    char path[4200], line[4200];
    snprintf(path, sizeof path, "%s-%lld", prefix, (long long)step);
    tcrt_status s = tcrt_ckpt_write(path, e, n, err, errlen);
    if (s != TCRT_OK)
        return s;

    /* the pointer, atomically: it commits the new checkpoint */
    char *ptr = str_cat(prefix, ".latest"), *tmp = NULL;
    if (!ptr)
        return fail(err, errlen, TCRT_ERR_NOMEM, prefix, "out of memory");
    int len = snprintf(line, sizeof line, "%s-%lld\n", base, (long long)step);
    int fd = tmp_create(ptr, &tmp);
    if (fd < 0) {
        s = fail(err, errlen, TCRT_ERR_IO, ptr, "cannot create: %s", strerror(errno));
    } else {
        bool ok = write_all(fd, line, (size_t)len) && fsync(fd) == 0;
        ok = close(fd) == 0 && ok;
        if (!ok || rename(tmp, ptr) != 0) {
            s = fail(err, errlen, TCRT_ERR_IO, ptr, "cannot write: %s", strerror(errno));
            unlink(tmp);
        } else {
            sync_dir(ptr);
        }
        free(tmp);
    }
    free(ptr);
    if (s != TCRT_OK)
        return s;

    /* the older checkpoints of the series beyond the `keep` newest (best
     * effort: a file that cannot be removed stays, harmless) */
    DIR *d = opendir(dir);
    if (!d)
        return TCRT_OK;
    int64_t newest[64];
    int n_new = 0, k = keep < 64 ? keep : 64;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l < 7 || strcmp(de->d_name + l - 6, ".index") != 0)
            continue;
        int64_t st = series_step(de->d_name, l - 6, base);
        if (st < 0 || st > step)
            continue;
        /* insertion into the k largest steps seen */
        int pos = n_new < k ? n_new++ : k;
        while (pos > 0 && newest[pos - 1] < st) {
            if (pos < k)
                newest[pos] = newest[pos - 1];
            pos--;
        }
        if (pos < k)
            newest[pos] = st;
    }
    rewinddir(d);
    int64_t cut = n_new == k ? newest[k - 1] : -1;
    while ((de = readdir(d)) != NULL) {
        const char *nm = de->d_name, *dot = strchr(nm, '.');
        if (!dot)
            continue;
        int64_t st = series_step(nm, (size_t)(dot - nm), base);
        if (st < 0 || st >= cut || (strcmp(dot, ".index") != 0 && strncmp(dot, ".data-", 6) != 0))
            continue;
        char victim[8300];
        snprintf(victim, sizeof victim, "%s/%s", dir, nm);
        (void)unlink(victim);
    }
    closedir(d);
    return TCRT_OK;
}

tcrt_status tcrt_ckpt_resolve(const char *prefix, char *out, size_t n, char *err, size_t errlen)
{
    if (!prefix || !out || n == 0)
        return fail(err, errlen, TCRT_ERR_ARG, "(checkpoint)", "no checkpoint prefix");
    char *ptr = str_cat(prefix, ".latest");
    if (!ptr)
        return fail(err, errlen, TCRT_ERR_NOMEM, prefix, "out of memory");
    FILE *f = fopen(ptr, "rb");
    if (!f) {
        free(ptr);
        if (strlen(prefix) >= n)
            return fail(err, errlen, TCRT_ERR_ARG, prefix, "checkpoint path too long");
        strcpy(out, prefix);
        return TCRT_OK;
    }
    char line[4200];
    size_t got = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[got] = 0;
    char dir[4096];
    const char *base;
    tcrt_status s = TCRT_OK;
    size_t l = strcspn(line, "\n");
    if (!split_prefix(prefix, dir, sizeof dir, &base) || l == 0 || line[l] != '\n' || line[l + 1] != 0 ||
        series_step(line, l, base) < 0) {
        s = fail(err, errlen, TCRT_ERR_FORMAT, ptr, "not a checkpoint pointer (one line '%s-STEP' expected)",
                 base);
    } else {
        line[l] = 0;
        const char *slash = strrchr(prefix, '/');
        int w = slash ? snprintf(out, n, "%.*s/%s", (int)(slash - prefix), prefix, line)
                      : snprintf(out, n, "%s", line);
        if (w < 0 || (size_t)w >= n)
            s = fail(err, errlen, TCRT_ERR_ARG, ptr, "checkpoint path too long");
    }
    free(ptr);
    return s;
}

/* ---- model state ---- */

tcrt_status tcrt_model_save(const tcrt_model *m, const uint8_t *arena, const char *prefix, char *err,
                            size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!m || (m->n_vars > 0 && (!m->vars || !arena)) || m->n_vars < 0)
        return fail(err, errlen, TCRT_ERR_ARG, prefix, "no model, variables or arena to save");
    tcrt_ckpt_entry *es = calloc((size_t)(m->n_vars ? m->n_vars : 1), sizeof *es);
    if (!es)
        return fail(err, errlen, TCRT_ERR_NOMEM, prefix, "out of memory");
    for (int i = 0; i < m->n_vars; i++) {
        const tcrt_var *v = &m->vars[i];
        if (v->offset > m->arena_bytes || v->bytes > m->arena_bytes - v->offset) {
            free(es);
            return fail(err, errlen, TCRT_ERR_ARG, prefix, "variable '%s' lies outside the arena",
                        v->name ? v->name : "(null)");
        }
        es[i].key = v->name;
        es[i].dtype = v->dtype;
        es[i].rank = v->rank;
        for (int d = 0; d < TCRT_MAX_RANK; d++)
            es[i].dims[d] = v->dims[d];
        es[i].bytes = v->bytes;
        es[i].data = arena + v->offset;
    }
    tcrt_status s = tcrt_ckpt_write(prefix, es, m->n_vars, err, errlen);
    free(es);
    return s;
}

tcrt_status tcrt_model_restore(const tcrt_model *m, uint8_t *arena, const char *prefix, char *err,
                               size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!m || (m->n_vars > 0 && (!m->vars || !arena)) || m->n_vars < 0)
        return fail(err, errlen, TCRT_ERR_ARG, prefix, "no model, variables or arena to restore");
    tcrt_ckpt *ck;
    tcrt_status s = tcrt_ckpt_open(prefix, &ck, err, errlen);
    if (s != TCRT_OK)
        return s;
    /* every variable is checked before any is written */
    for (int i = 0; i < m->n_vars && s == TCRT_OK; i++) {
        const tcrt_var *v = &m->vars[i];
        const char *name = v->name ? v->name : "(null)";
        const tcrt_ckpt_entry *e = tcrt_ckpt_find(ck, name);
        char want[128], got[128];
        if (v->rank < 0 || v->rank > TCRT_MAX_RANK) {
            s = fail(err, errlen, TCRT_ERR_ARG, prefix, "variable '%s': rank %d", name, v->rank);
            break;
        }
        if (!e) {
            s = fail(err, errlen, TCRT_ERR_FORMAT, ck->index_path, "no variable '%s' in the checkpoint",
                     name);
            break;
        }
        if (v->offset > m->arena_bytes || v->bytes > m->arena_bytes - v->offset) {
            s = fail(err, errlen, TCRT_ERR_ARG, prefix, "variable '%s' lies outside the arena", name);
            break;
        }
        tcrt_type_str(v->dtype, v->rank, v->dims, want, sizeof want);
        tcrt_type_str(e->dtype, e->rank, e->dims, got, sizeof got);
        if (e->dtype != v->dtype)
            s = fail(err, errlen, TCRT_ERR_DTYPE, ck->index_path,
                     "variable '%s': wrong dtype: the model has %s, the checkpoint %s", name, want, got);
        else if (e->rank != v->rank || memcmp(e->dims, v->dims, (size_t)v->rank * sizeof v->dims[0]) != 0 ||
                 e->bytes != v->bytes)
            s = fail(err, errlen, TCRT_ERR_SHAPE, ck->index_path,
                     "variable '%s': wrong shape: the model has %s, the checkpoint %s", name, want, got);
    }
    for (int i = 0; i < m->n_vars && s == TCRT_OK; i++) {
        const tcrt_var *v = &m->vars[i];
        s = tcrt_ckpt_read(ck, tcrt_ckpt_find(ck, v->name), arena + v->offset, v->bytes, err, errlen);
    }
    tcrt_ckpt_close(ck);
    return s;
}
