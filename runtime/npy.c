/* npy.c - NumPy .npy reader and writer.
 *
 * Format: "\x93NUMPY", major, minor, header length (u16 LE for v1, u32 LE
 * for v2/v3), then an ASCII (v3: UTF-8) Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a final '\n', then the raw C-order data.
 *
 * Reading: the file is opened non-blocking (a FIFO cannot hang the reader)
 * and must be a regular file; version 1.0, 2.0 or 3.0; the header length is
 * checked against the file size and TCRT_NPY_MAX_HEADER before anything is
 * allocated; the whole header is parsed with a tiny tokenizer that accepts
 * the three keys in any order and nothing but whitespace after the dict;
 * every size is checked before use (rank <= 8, product of dims and byte size
 * with overflow checks, data size equal to the rest of the file).  With a
 * signature (tcrt_npy_read_feed) the dtype and shape are compared with it
 * right after the header, before the data is allocated.  Errors are one
 * line "FILE: reason".
 * Writing: always v1.0 with the header padded so the data starts at a
 * multiple of 64; the data goes to a fresh temporary PATH.PID.N.tmp created
 * with O_EXCL (never an existing file or symlink), fsync'ed, then renamed
 * over PATH; the temporary is removed on any failure, so no partial file
 * ever appears under PATH.
 */
#include "tcrt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static tcrt_status fail(char *err, size_t errlen, tcrt_status s, const char *path, const char *fmt, ...)
{
    if (err && errlen) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(err, errlen, "%s: %s", path, msg);
    }
    return s;
}

/* ---- descr <-> dtype ---- */

/* Maps the type code and size of a descr ('f4' after the byte-order char). */
static tcrt_dtype descr_dtype(char kind, int size)
{
    switch (kind) {
    case 'f':
        return size == 4 ? TCRT_F32 : size == 8 ? TCRT_F64 : size == 2 ? TCRT_F16 : TCRT_INVALID;
    case 'i':
        return size == 1   ? TCRT_I8
               : size == 2 ? TCRT_I16
               : size == 4 ? TCRT_I32
               : size == 8 ? TCRT_I64
                           : TCRT_INVALID;
    case 'u':
        return size == 1   ? TCRT_U8
               : size == 2 ? TCRT_U16
               : size == 4 ? TCRT_U32
               : size == 8 ? TCRT_U64
                           : TCRT_INVALID;
    case 'b':
        return size == 1 ? TCRT_BOOL : TCRT_INVALID;
    case 'V': /* bfloat16: NumPy has no such type; two opaque bytes */
        return size == 2 ? TCRT_BF16 : TCRT_INVALID;
    default:
        return TCRT_INVALID;
    }
}

static const char *dtype_descr(tcrt_dtype dt)
{
    switch (dt) {
    case TCRT_F32:
        return "<f4";
    case TCRT_F64:
        return "<f8";
    case TCRT_F16:
        return "<f2";
    case TCRT_BF16:
        return "|V2";
    case TCRT_I32:
        return "<i4";
    case TCRT_I64:
        return "<i8";
    case TCRT_I16:
        return "<i2";
    case TCRT_U16:
        return "<u2";
    case TCRT_U32:
        return "<u4";
    case TCRT_U64:
        return "<u8";
    case TCRT_I8:
        return "|i1";
    case TCRT_U8:
        return "|u1";
    case TCRT_BOOL:
        return "|b1";
    default:
        return NULL;
    }
}

/* ---- header dict parser ---- */

typedef struct Lex {
    const char *s, *end;
} Lex;

static void skip_ws(Lex *lx)
{
    while (lx->s < lx->end && (*lx->s == ' ' || *lx->s == '\t' || *lx->s == '\n' || *lx->s == '\r'))
        lx->s++;
}

static bool eat(Lex *lx, char c)
{
    skip_ws(lx);
    if (lx->s < lx->end && *lx->s == c) {
        lx->s++;
        return true;
    }
    return false;
}

/* A quoted string ('...' or "..."), copied into buf (truncated). */
static bool parse_str(Lex *lx, char *buf, size_t n)
{
    skip_ws(lx);
    if (lx->s >= lx->end || (*lx->s != '\'' && *lx->s != '"'))
        return false;
    char q = *lx->s++;
    size_t j = 0;
    while (lx->s < lx->end && *lx->s != q) {
        if (j + 1 < n)
            buf[j++] = *lx->s;
        lx->s++;
    }
    buf[j] = 0;
    if (lx->s >= lx->end)
        return false;
    lx->s++;
    return true;
}

static bool parse_word(Lex *lx, const char *w)
{
    skip_ws(lx);
    size_t n = strlen(w);
    if ((size_t)(lx->end - lx->s) >= n && memcmp(lx->s, w, n) == 0) {
        lx->s += n;
        return true;
    }
    return false;
}

typedef struct Header {
    char descr[32];
    int fortran; /* -1 unset, 0, 1 */
    int rank;    /* -1 unset */
    int64_t dims[TCRT_MAX_RANK];
    bool has_descr;
} Header;

/* Parses the shape tuple; returns a reason on failure (NULL on success). */
static const char *parse_shape(Lex *lx, Header *h)
{
    if (!eat(lx, '('))
        return "header 'shape' is not a tuple";
    h->rank = 0;
    for (;;) {
        if (eat(lx, ')'))
            return NULL;
        skip_ws(lx);
        if (lx->s >= lx->end || *lx->s < '0' || *lx->s > '9')
            return "header 'shape' holds something other than non-negative integers";
        int64_t v = 0;
        while (lx->s < lx->end && *lx->s >= '0' && *lx->s <= '9') {
            int dgt = *lx->s - '0';
            if (v > (INT64_MAX - dgt) / 10)
                return "shape dimension overflows";
            v = v * 10 + dgt;
            lx->s++;
        }
        if (lx->s < lx->end && *lx->s == 'L') /* Python 2 long suffix */
            lx->s++;
        if (h->rank >= TCRT_MAX_RANK)
            return "rank exceeds 8 (the runtime's maximum)";
        h->dims[h->rank++] = v;
        if (eat(lx, ','))
            continue;
        if (eat(lx, ')'))
            return NULL;
        return "header 'shape' tuple is malformed";
    }
}

static const char *parse_header(const char *txt, size_t len, Header *h)
{
    Lex lx = {txt, txt + len};
    h->fortran = -1;
    h->rank = -1;
    h->has_descr = false;
    if (!eat(&lx, '{'))
        return "header is not a dict";
    for (;;) {
        if (eat(&lx, '}'))
            break;
        char key[32];
        if (!parse_str(&lx, key, sizeof key))
            return "header dict key is not a string";
        if (!eat(&lx, ':'))
            return "header dict lacks ':'";
        if (strcmp(key, "descr") == 0) {
            if (!parse_str(&lx, h->descr, sizeof h->descr))
                return "header 'descr' is not a string (structured dtypes are not supported)";
            h->has_descr = true;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (parse_word(&lx, "True"))
                h->fortran = 1;
            else if (parse_word(&lx, "False"))
                h->fortran = 0;
            else
                return "header 'fortran_order' is not True or False";
        } else if (strcmp(key, "shape") == 0) {
            const char *why = parse_shape(&lx, h);
            if (why)
                return why;
        } else {
            return "header has an unknown key";
        }
        if (eat(&lx, ','))
            continue;
        if (eat(&lx, '}'))
            break;
        return "header dict is malformed";
    }
    if (!h->has_descr)
        return "header lacks 'descr'";
    if (h->fortran < 0)
        return "header lacks 'fortran_order'";
    if (h->rank < 0)
        return "header lacks 'shape'";
    /* only the padding may follow the dict (spaces, tabs, newlines, NULs) */
    for (const char *p = lx.s; p < lx.end; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '\0')
            return "header has text after the dict";
    return NULL;
}

/* ---- read ---- */

/* Opens path for reading without blocking on a FIFO; a regular file only. */
static FILE *open_regular(const char *path, struct stat *sb, tcrt_status *st, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *st = fail(err, errlen, TCRT_ERR_IO, path, "cannot open: %s", strerror(errno));
        return NULL;
    }
    if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode)) {
        close(fd);
        *st = fail(err, errlen, TCRT_ERR_IO, path, "not a regular file");
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        *st = fail(err, errlen, TCRT_ERR_NOMEM, path, "cannot open: %s", strerror(errno));
    }
    return f;
}

/* Reads path into out (dtype, dims, data); with io, checks the header
 * against it first.  dst: the data goes there instead of a malloc'ed buffer
 * (exactly io->bytes of it: the header matched io). */
static tcrt_status npy_read(const char *path, const tcrt_io *io, tcrt_tensor *out, void *dst, char *err,
                            size_t errlen)
{
    if (!path || !out)
        return fail(err, errlen, TCRT_ERR_ARG, path ? path : "(null)", "no output tensor");
    memset(out, 0, sizeof *out);
    tcrt_status st = TCRT_OK;
    struct stat sb;
    FILE *f = open_regular(path, &sb, &st, err, errlen);
    if (!f)
        return st;
    char *hdr = NULL;
    void *data = NULL;
    unsigned char pre[12];
    size_t got = fread(pre, 1, 10, f);
    if (got < 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        st = fail(err, errlen, TCRT_ERR_FORMAT, path, "not a .npy file (bad magic)");
        goto done;
    }
    int major = pre[6], minor = pre[7];
    size_t hlen, pre_len;
    if ((major < 1 || major > 3) || minor != 0) {
        st = fail(err, errlen, TCRT_ERR_FORMAT, path,
                  "unsupported .npy version %d.%d (1.0, 2.0 or 3.0 expected)", major, minor);
        goto done;
    }
    if (major == 1) {
        if (got < 10) {
            st = fail(err, errlen, TCRT_ERR_FORMAT, path, "truncated header");
            goto done;
        }
        hlen = (size_t)pre[8] | ((size_t)pre[9] << 8);
        pre_len = 10;
    } else {
        if (got < 10 || fread(pre + 10, 1, 2, f) != 2) {
            st = fail(err, errlen, TCRT_ERR_FORMAT, path, "truncated header");
            goto done;
        }
        hlen = (size_t)pre[8] | ((size_t)pre[9] << 8) | ((size_t)pre[10] << 16) | ((size_t)pre[11] << 24);
        pre_len = 12;
    }
    uint64_t fsize = (uint64_t)sb.st_size;
    if (fsize < pre_len || hlen > fsize - pre_len) {
        st = fail(err, errlen, TCRT_ERR_FORMAT, path,
                  "truncated header (%zu bytes announced, the file has %llu after the preamble)", hlen,
                  (unsigned long long)(fsize < pre_len ? 0 : fsize - pre_len));
        goto done;
    }
    if (hlen > TCRT_NPY_MAX_HEADER) {
        st = fail(err, errlen, TCRT_ERR_FORMAT, path, "header of %zu bytes exceeds the limit of %d", hlen,
                  TCRT_NPY_MAX_HEADER);
        goto done;
    }
    hdr = malloc(hlen + 1);
    if (!hdr) {
        st = fail(err, errlen, TCRT_ERR_NOMEM, path, "out of memory reading header");
        goto done;
    }
    if (fread(hdr, 1, hlen, f) != hlen) {
        st = fail(err, errlen, TCRT_ERR_FORMAT, path, "truncated header");
        goto done;
    }
    hdr[hlen] = 0;
    Header h;
    const char *why = parse_header(hdr, hlen, &h);
    if (why) {
        st = fail(err, errlen, TCRT_ERR_FORMAT, path, "%s", why);
        goto done;
    }
    if (h.fortran) {
        st = fail(err, errlen, TCRT_ERR_FORMAT, path,
                  "fortran_order True is not supported (save C-order arrays)");
        goto done;
    }
    /* descr: byte order char (optional), kind char, decimal size */
    const char *d = h.descr;
    char order = '=';
    if (*d == '<' || *d == '>' || *d == '|' || *d == '=')
        order = *d++;
    char kind = *d ? *d++ : 0;
    int size = 0;
    while (*d >= '0' && *d <= '9' && size < 1000)
        size = size * 10 + (*d++ - '0');
    tcrt_dtype dt = *d ? TCRT_INVALID : descr_dtype(kind, size);
    if (dt == TCRT_INVALID) {
        st = fail(err, errlen, TCRT_ERR_FORMAT, path, "unsupported dtype descr '%s'", h.descr);
        goto done;
    }
    if (order == '>' && size > 1) {
        st = fail(err, errlen, TCRT_ERR_FORMAT, path, "big-endian data ('%s') is not supported", h.descr);
        goto done;
    }
    uint64_t count = 1;
    for (int i = 0; i < h.rank; i++) {
        uint64_t dim = (uint64_t)h.dims[i];
        if (dim != 0 && count > UINT64_MAX / dim) {
            st = fail(err, errlen, TCRT_ERR_FORMAT, path, "shape is too large (element count overflows)");
            goto done;
        }
        count *= dim;
    }
    uint64_t esz = tcrt_dtype_size(dt);
    if (count > (uint64_t)INT64_MAX / esz || count * esz > (uint64_t)SIZE_MAX / 2) {
        st = fail(err, errlen, TCRT_ERR_FORMAT, path, "shape is too large (byte size overflows)");
        goto done;
    }
    if (io) {
        /* the signature first: a file of the wrong dtype or shape is not read */
        tcrt_tensor meta = {.data = NULL, .dtype = dt, .rank = h.rank};
        for (int i = 0; i < h.rank; i++)
            meta.dims[i] = h.dims[i];
        char why2[512];
        tcrt_status cs = tcrt_check_feed(io, &meta, why2, sizeof why2);
        if (cs != TCRT_OK) {
            /* drop the "feed 'NAME': " prefix: the caller names the feed */
            const char *r = strstr(why2, "': ");
            st = fail(err, errlen, cs, path, "%s", r ? r + 3 : why2);
            goto done;
        }
    }
    uint64_t nbytes = count * esz;
    uint64_t rest = fsize - pre_len - hlen;
    if (rest != nbytes) {
        st = fail(err, errlen, TCRT_ERR_FORMAT, path,
                  "data size %llu bytes does not match the header (%s, %llu elements = %llu bytes)%s",
                  (unsigned long long)rest, h.descr, (unsigned long long)count, (unsigned long long)nbytes,
                  rest < nbytes ? ": truncated data" : ": extra bytes after the data");
        goto done;
    }
    if (dst && nbytes != io->bytes) { /* a descriptor whose bytes disagree with its dims */
        st = fail(err, errlen, TCRT_ERR_ARG, path, "%llu bytes of data, the arg holds %llu",
                  (unsigned long long)nbytes, (unsigned long long)io->bytes);
        goto done;
    }
    data = dst ? dst : malloc(nbytes ? (size_t)nbytes : 1);
    if (!data) {
        st = fail(err, errlen, TCRT_ERR_NOMEM, path, "out of memory for %llu bytes of data",
                  (unsigned long long)nbytes);
        goto done;
    }
    if (nbytes && fread(data, 1, (size_t)nbytes, f) != nbytes) {
        st = fail(err, errlen, TCRT_ERR_IO, path, "truncated data (read error; file changed while read?)");
        goto done;
    }
    out->data = data;
    data = NULL;
    out->dtype = dt;
    out->rank = h.rank;
    for (int i = 0; i < h.rank; i++)
        out->dims[i] = h.dims[i];
done:
    if (data != dst)
        free(data);
    free(hdr);
    fclose(f);
    return st;
}

tcrt_status tcrt_npy_read(const char *path, tcrt_tensor *out, char *err, size_t errlen)
{
    return npy_read(path, NULL, out, NULL, err, errlen);
}

tcrt_status tcrt_npy_read_feed(const char *path, const tcrt_io *io, tcrt_tensor *out, char *err,
                               size_t errlen)
{
    if (!io)
        return fail(err, errlen, TCRT_ERR_ARG, path ? path : "(null)", "no signature to check against");
    return npy_read(path, io, out, NULL, err, errlen);
}

tcrt_status tcrt_npy_read_feed_into(const char *path, const tcrt_io *io, void *dst, char *err, size_t errlen)
{
    if (!io || !dst)
        return fail(err, errlen, TCRT_ERR_ARG, path ? path : "(null)",
                    io ? "no destination buffer" : "no signature to check against");
    tcrt_tensor t;
    return npy_read(path, io, &t, dst, err, errlen);
}

/* ---- write ---- */

tcrt_status tcrt_npy_write(const char *path, const tcrt_tensor *t, char *err, size_t errlen)
{
    if (!path || !t)
        return fail(err, errlen, TCRT_ERR_ARG, path ? path : "(null)", "no tensor to write");
    const char *descr = dtype_descr(t->dtype);
    if (!descr)
        return fail(err, errlen, TCRT_ERR_ARG, path, "cannot write dtype %s", tcrt_dtype_name(t->dtype));
    int64_t count = tcrt_tensor_count(t);
    if (count < 0 || (uint64_t)count > SIZE_MAX / tcrt_dtype_size(t->dtype))
        return fail(err, errlen, TCRT_ERR_ARG, path, "bad shape (rank %d)", t->rank);
    size_t nbytes = (size_t)count * tcrt_dtype_size(t->dtype);
    if (nbytes && !t->data)
        return fail(err, errlen, TCRT_ERR_ARG, path, "tensor has no data");

    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < t->rank; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", t->rank == 1 ? "," : "");
    /* 10 bytes preamble + dict + spaces + '\n' == multiple of 64 */
    size_t total = 10 + (size_t)n + 1;
    total = (total + 63) / 64 * 64;
    size_t hlen = total - 10;
    unsigned char hdr[600];
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    hdr[8] = (unsigned char)(hlen & 0xff);
    hdr[9] = (unsigned char)(hlen >> 8);
    memcpy(hdr + 10, dict, (size_t)n);
    memset(hdr + 10 + n, ' ', hlen - (size_t)n - 1);
    hdr[total - 1] = '\n';

    /* PATH.PID.N.tmp, created exclusively: retried with the next N if taken */
    static unsigned counter;
    size_t plen = strlen(path);
    size_t tlen = plen + 48;
    char *tmp = malloc(tlen);
    if (!tmp)
        return fail(err, errlen, TCRT_ERR_NOMEM, path, "out of memory");
    int fd = -1;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        unsigned k = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
        snprintf(tmp, tlen, "%s.%ld.%u.tmp", path, (long)getpid(), k);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        tcrt_status st = fail(err, errlen, TCRT_ERR_IO, path, "cannot create a temporary file next to it: %s",
                              strerror(errno));
        free(tmp);
        return st;
    }
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int saved = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return fail(err, errlen, TCRT_ERR_IO, path, "write failed: %s", strerror(saved));
    }
    bool ok = fwrite(hdr, 1, total, f) == total;
    if (ok && nbytes)
        ok = fwrite(t->data, 1, nbytes, f) == nbytes;
    int saved = errno;
    if (ok && (fflush(f) != 0 || fsync(fileno(f)) != 0)) {
        ok = false;
        saved = errno;
    }
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        unlink(tmp);
        free(tmp);
        return fail(err, errlen, TCRT_ERR_IO, path, "write failed: %s", strerror(saved));
    }
    free(tmp);
    return TCRT_OK;
}
