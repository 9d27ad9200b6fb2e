/* test_guards.c - Check suite for the runtime's guards against bad input.
 *
 * .npy files written byte by byte by this test (wrong magic, versions,
 * header length past the end or over TCRT_NPY_MAX_HEADER, text after the
 * dict, non-little-endian, fortran_order True, negative and overflowing
 * dims, data shorter and longer than the shape, a FIFO and a folder) must be
 * rejected with a one-line message naming the file and the reason;
 * tcrt_npy_read_feed checks the header against a signature before reading
 * the data; tcrt_npy_write replaces files atomically, never follows a
 * planted temporary name and leaves no temporary behind; the descriptor and
 * feed checks (tcrt_check_model, tcrt_check_feed, tcrt_set_feed,
 * tcrt_find_arg) return status codes with pinned messages and never touch
 * the arena on error; tcrt_main names the feed and the file on stderr; two
 * results with the same output file are refused; integer division in
 * generated code (tcrt_elem.h) does not trap on 0 or INT_MIN / -1.
 */
#include "tcrt.h"
#include "tcrt_elem.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/tcrt_guards_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        /* best effort */
    }
}

static void path_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

static bool exists(const char *p)
{
    struct stat sb;
    return lstat(p, &sb) == 0;
}

static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* Preamble (magic, major.minor, header length as u16 or u32 LE) + dict +
 * spaces + '\n' so that the data starts at a multiple of 64, then n bytes. */
static void write_npy_v(const char *path, int major, int minor, const char *dict, const void *data, size_t n)
{
    size_t pre = major == 1 ? 10 : 12;
    size_t hlen = ((pre + strlen(dict) + 1 + 63) / 64) * 64 - pre;
    unsigned char *buf = calloc(1, pre + hlen + n + 1);
    ck_assert_ptr_nonnull(buf);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = (unsigned char)minor;
    for (size_t k = 0; k < pre - 8; k++)
        buf[8 + k] = (unsigned char)(hlen >> (8 * k));
    memcpy(buf + pre, dict, strlen(dict));
    memset(buf + pre + strlen(dict), ' ', hlen - strlen(dict) - 1);
    buf[pre + hlen - 1] = '\n';
    if (n)
        memcpy(buf + pre + hlen, data, n);
    write_bytes(path, buf, pre + hlen + n);
    free(buf);
}

static void write_npy(const char *path, const char *dict, const void *data, size_t n)
{
    write_npy_v(path, 1, 0, dict, data, n);
}

/* Reading path fails with status s and a one-line message holding the file
 * name and why. */
static void expect_bad(const char *p, tcrt_status s, const char *why)
{
    char err[512];
    tcrt_tensor r;
    tcrt_status got = tcrt_npy_read(p, &r, err, sizeof err);
    ck_assert_msg(got == s, "status %d (want %d): %s", got, s, err);
    ck_assert_msg(strncmp(err, p, strlen(p)) == 0, "message does not start with the file name: %s", err);
    ck_assert_msg(strstr(err, why) != NULL, "message lacks '%s': %s", why, err);
    ck_assert_ptr_null(strchr(err, '\n'));
    ck_assert_ptr_null(r.data);
}

START_TEST(npy_bad_headers)
{
    char p[128], msg[600];
    path_of(p, sizeof p, "bad.npy");
    float d[4] = {1, 2, 3, 4};
    const char *ok2x2 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";

    /* the hand-made writer itself is right: a good file reads */
    write_npy(p, ok2x2, d, 16);
    tcrt_tensor r;
    ck_assert_msg(tcrt_npy_read(p, &r, msg, sizeof msg) == TCRT_OK, "%s", msg);
    free(r.data);

    /* wrong magic: one byte off, and a file shorter than the magic */
    write_bytes(p, "\x93NUMPz\x01\x00\x10\x00", 10);
    expect_bad(p, TCRT_ERR_FORMAT, "not a .npy file (bad magic)");
    write_bytes(p, "\x93NUM", 4);
    expect_bad(p, TCRT_ERR_FORMAT, "bad magic");
    write_bytes(p, "", 0);
    expect_bad(p, TCRT_ERR_FORMAT, "bad magic");

    /* versions: 0.0, 4.0 and 1.1 do not exist */
    write_npy_v(p, 1, 1, ok2x2, d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "unsupported .npy version 1.1");
    write_npy_v(p, 4, 0, ok2x2, d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "unsupported .npy version 4.0");
    write_bytes(p, "\x93NUMPY\x00\x00\x10\x00", 10);
    expect_bad(p, TCRT_ERR_FORMAT, "unsupported .npy version 0.0");
    /* v2.0 and v3.0 are fine */
    write_npy_v(p, 2, 0, ok2x2, d, 16);
    ck_assert_msg(tcrt_npy_read(p, &r, msg, sizeof msg) == TCRT_OK, "%s", msg);
    free(r.data);
    write_npy_v(p, 3, 0, ok2x2, d, 16);
    ck_assert_msg(tcrt_npy_read(p, &r, msg, sizeof msg) == TCRT_OK, "%s", msg);
    free(r.data);

    /* header length beyond the file: v1 (0xffff) and v2 (0xffffffff: 4 GiB,
     * must not be allocated) */
    write_bytes(p, "\x93NUMPY\x01\x00\xff\xff{'descr': '<f4'}", 26);
    expect_bad(p, TCRT_ERR_FORMAT,
               "truncated header (65535 bytes announced, the file has 16 after the preamble)");
    write_bytes(p, "\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14);
    expect_bad(p, TCRT_ERR_FORMAT, "truncated header (4294967295 bytes announced");
    /* preamble cut short: v1 needs 10 bytes, v2 12 */
    write_bytes(p, "\x93NUMPY\x01\x00\x10", 9);
    expect_bad(p, TCRT_ERR_FORMAT, "truncated header");
    write_bytes(p, "\x93NUMPY\x02\x00\x10\x00\x00", 11);
    expect_bad(p, TCRT_ERR_FORMAT, "truncated header");

    /* a header over TCRT_NPY_MAX_HEADER, even though the file holds it all:
     * v2 dict padded to 70,000 bytes */
    {
        size_t hlen = 70000 - 12;
        unsigned char *b = malloc(12 + hlen + 16);
        memcpy(b, "\x93NUMPY\x02\x00", 8);
        b[8] = (unsigned char)(hlen & 0xff);
        b[9] = (unsigned char)((hlen >> 8) & 0xff);
        b[10] = (unsigned char)((hlen >> 16) & 0xff);
        b[11] = 0;
        memset(b + 12, ' ', hlen);
        memcpy(b + 12, ok2x2, strlen(ok2x2));
        b[12 + hlen - 1] = '\n';
        memcpy(b + 12 + hlen, d, 16);
        write_bytes(p, b, 12 + hlen + 16);
        free(b);
        expect_bad(p, TCRT_ERR_FORMAT, "header of 69988 bytes exceeds the limit of 65536");
    }

    /* the dict: not a dict, text after it, unknown key, missing keys */
    write_npy(p, "['descr', '<f4']", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "header is not a dict");
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), } junk", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "header has text after the dict");
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'x': 1}", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "header has an unknown key");
    write_npy(p, "{'fortran_order': False, 'shape': (2, 2)}", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "header lacks 'descr'");
    write_npy(p, "{'descr': '<f4', 'fortran_order': False}", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "header lacks 'shape'");
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "header dict is malformed");

    /* byte order: big-endian multi-byte data is refused, '>u1' is fine */
    write_npy(p, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "big-endian data ('>f4') is not supported");
    write_npy(p, "{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "big-endian data ('>i8') is not supported");
    write_npy(p, "{'descr': '>u1', 'fortran_order': False, 'shape': (16,), }", d, 16);
    ck_assert_msg(tcrt_npy_read(p, &r, msg, sizeof msg) == TCRT_OK, "%s", msg);
    ck_assert_int_eq(r.dtype, TCRT_U8);
    free(r.data);

    /* fortran_order True */
    write_npy(p, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "fortran_order True is not supported");

    /* dims: negative, one that overflows int64, a product that overflows */
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "header 'shape' holds something other than non-negative integers");
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -2), }", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "non-negative integers");
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "shape dimension overflows");
    write_npy(p, "{'descr': '<u1', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2), }", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "shape is too large (element count overflows)");
    /* 2^61 float64 elements: the count fits, the byte size does not */
    write_npy(p, "{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }", d, 16);
    expect_bad(p, TCRT_ERR_FORMAT, "shape is too large (byte size overflows)");

    /* data shorter and longer than the shape says (2x2 float32 = 16 bytes) */
    write_npy(p, ok2x2, d, 12);
    expect_bad(p, TCRT_ERR_FORMAT,
               "data size 12 bytes does not match the header (<f4, 4 elements = 16 bytes): truncated data");
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", d, 0);
    expect_bad(p, TCRT_ERR_FORMAT, "truncated data");
    unsigned char more[20] = {0};
    write_npy(p, ok2x2, more, 20);
    expect_bad(p, TCRT_ERR_FORMAT,
               "data size 20 bytes does not match the header (<f4, 4 elements = 16 bytes): "
               "extra bytes after the data");
}
END_TEST

/* Not regular files: a folder, and a FIFO with no writer (opening it for
 * reading would block forever without O_NONBLOCK). */
START_TEST(npy_not_regular)
{
    char p[128];
    path_of(p, sizeof p, "folder.npy");
    ck_assert_int_eq(mkdir(p, 0777), 0);
    expect_bad(p, TCRT_ERR_IO, "not a regular file");
    path_of(p, sizeof p, "fifo.npy");
    ck_assert_int_eq(mkfifo(p, 0666), 0);
    expect_bad(p, TCRT_ERR_IO, "not a regular file");
    path_of(p, sizeof p, "missing.npy");
    expect_bad(p, TCRT_ERR_IO, "cannot open: No such file or directory");
}
END_TEST

/* tcrt_npy_read_feed: the header is compared with the signature before the
 * data: a file of the wrong dtype whose data is also truncated reports the
 * dtype (what the user must fix), not the truncation. */
START_TEST(npy_read_feed_checks_header_first)
{
    static const tcrt_io io = {"x:0", TCRT_F32, 2, {2, 2}, 16, 0};
    char p[128], err[512];
    path_of(p, sizeof p, "f.npy");
    tcrt_tensor r;
    int32_t iv[4] = {1, 2, 3, 4};
    write_npy(p, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", iv, 4);
    ck_assert_int_eq(tcrt_npy_read_feed(p, &io, &r, err, sizeof err), TCRT_ERR_DTYPE);
    ck_assert_msg(strstr(err, "f.npy: wrong dtype: expected float32[2,2], got int32[2,2]") != NULL, "%s",
                  err);
    ck_assert_ptr_null(r.data);
    /* a shape that does not match, announcing 2^40 bytes it does not have */
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (1024, 1024, 1024, 256), }", iv, 16);
    ck_assert_int_eq(tcrt_npy_read_feed(p, &io, &r, err, sizeof err), TCRT_ERR_SHAPE);
    ck_assert_msg(strstr(err, "f.npy: wrong shape: expected float32[2,2], got float32[1024,1024,1024,256]") !=
                      NULL,
                  "%s", err);
    /* rank differs */
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", iv, 16);
    ck_assert_int_eq(tcrt_npy_read_feed(p, &io, &r, err, sizeof err), TCRT_ERR_SHAPE);
    ck_assert_msg(strstr(err, "got float32[4]") != NULL, "%s", err);
    /* matching header, truncated data: a format error */
    float fv[4] = {1, 2, 3, 4};
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", fv, 8);
    ck_assert_int_eq(tcrt_npy_read_feed(p, &io, &r, err, sizeof err), TCRT_ERR_FORMAT);
    ck_assert_msg(strstr(err, "truncated data") != NULL, "%s", err);
    /* all good */
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", fv, 16);
    ck_assert_msg(tcrt_npy_read_feed(p, &io, &r, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_mem_eq(r.data, fv, 16);
    free(r.data);
    ck_assert_int_eq(tcrt_npy_read_feed(p, NULL, &r, err, sizeof err), TCRT_ERR_ARG);
}
END_TEST

/* tcrt_npy_read_feed_into: the same checks, the data straight into the
 * caller's buffer; a refused file leaves the buffer as it was, a
 * descriptor whose byte count disagrees with its dims included. */
START_TEST(npy_read_feed_into)
{
    static const tcrt_io io = {"x:0", TCRT_F32, 2, {2, 2}, 16, 0};
    static const tcrt_io bad_bytes = {"x:0", TCRT_F32, 2, {2, 2}, 12, 0};
    char p[128], err[512];
    path_of(p, sizeof p, "g.npy");
    float fv[4] = {1, 2, 3, 4}, dst[4] = {9, 9, 9, 9}, nines[4] = {9, 9, 9, 9};
    int32_t iv[4] = {1, 2, 3, 4};
    write_npy(p, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", iv, 16);
    ck_assert_int_eq(tcrt_npy_read_feed_into(p, &io, dst, err, sizeof err), TCRT_ERR_DTYPE);
    ck_assert_msg(strstr(err, "g.npy: wrong dtype: expected float32[2,2], got int32[2,2]") != NULL, "%s",
                  err);
    ck_assert_mem_eq(dst, nines, 16);
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", fv, 16);
    ck_assert_int_eq(tcrt_npy_read_feed_into(p, &io, dst, err, sizeof err), TCRT_ERR_SHAPE);
    ck_assert_mem_eq(dst, nines, 16);
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", fv, 8);
    ck_assert_int_eq(tcrt_npy_read_feed_into(p, &io, dst, err, sizeof err), TCRT_ERR_FORMAT);
    ck_assert_msg(strstr(err, "truncated data") != NULL, "%s", err);
    ck_assert_mem_eq(dst, nines, 16);
    write_npy(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", fv, 16);
    ck_assert_int_eq(tcrt_npy_read_feed_into(p, &bad_bytes, dst, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_msg(strstr(err, "is 16 bytes but the signature says 12") != NULL, "%s", err);
    ck_assert_mem_eq(dst, nines, 16);
    ck_assert_msg(tcrt_npy_read_feed_into(p, &io, dst, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_mem_eq(dst, fv, 16);
    ck_assert_int_eq(tcrt_npy_read_feed_into(p, NULL, dst, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_int_eq(tcrt_npy_read_feed_into(p, &io, NULL, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_msg(strstr(err, "no destination buffer") != NULL, "%s", err);
}
END_TEST

/* Counts the entries of dir other than "." and ".." whose name contains sub. */
static int count_entries(const char *sub)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strstr(e->d_name, sub))
            n++;
    closedir(d);
    return n;
}

START_TEST(npy_write_atomic)
{
    char p[128], victim[128], planted[160], err[512];
    float a[2] = {1, 2}, b[2] = {3, 4};
    tcrt_tensor ta = {.data = a, .dtype = TCRT_F32, .rank = 1, .dims = {2}};
    tcrt_tensor tb = {.data = b, .dtype = TCRT_F32, .rank = 1, .dims = {2}};
    path_of(p, sizeof p, "out.npy");
    /* a symlink where the old writer put its temporary (PATH.tmp) points at
     * a file that must survive untouched */
    path_of(victim, sizeof victim, "victim");
    write_bytes(victim, "keep", 4);
    snprintf(planted, sizeof planted, "%s.tmp", p);
    ck_assert_int_eq(symlink(victim, planted), 0);
    ck_assert_msg(tcrt_npy_write(p, &ta, err, sizeof err) == TCRT_OK, "%s", err);
    /* replacing an existing file: the new contents, and no temporary left */
    ck_assert_msg(tcrt_npy_write(p, &tb, err, sizeof err) == TCRT_OK, "%s", err);
    tcrt_tensor r;
    ck_assert_int_eq(tcrt_npy_read(p, &r, err, sizeof err), TCRT_OK);
    ck_assert_mem_eq(r.data, b, sizeof b);
    free(r.data);
    FILE *f = fopen(victim, "rb");
    char keep[8] = {0};
    ck_assert_uint_eq(fread(keep, 1, sizeof keep, f), 4);
    fclose(f);
    ck_assert_str_eq(keep, "keep");
    /* dir: out.npy, victim, the planted link; no other temporary */
    ck_assert_int_eq(count_entries(".tmp"), 1);
    ck_assert_int_eq(count_entries(""), 3);
    /* a failed write (target is a non-empty folder) keeps nothing either */
    char sub[160], inner[200];
    path_of(sub, sizeof sub, "folder.npy");
    ck_assert_int_eq(mkdir(sub, 0777), 0);
    snprintf(inner, sizeof inner, "%s/x", sub);
    write_bytes(inner, "x", 1);
    ck_assert_int_eq(tcrt_npy_write(sub, &ta, err, sizeof err), TCRT_ERR_IO);
    ck_assert_msg(strstr(err, "folder.npy: write failed") != NULL, "%s", err);
    ck_assert_int_eq(count_entries(".tmp"), 1);
    /* bad tensors are refused before any file is made */
    tcrt_tensor neg = {.data = a, .dtype = TCRT_F32, .rank = 1, .dims = {-2}};
    path_of(p, sizeof p, "neg.npy");
    ck_assert_int_eq(tcrt_npy_write(p, &neg, err, sizeof err), TCRT_ERR_ARG);
    tcrt_tensor deep = {.data = a, .dtype = TCRT_F32, .rank = 9};
    ck_assert_int_eq(tcrt_npy_write(p, &deep, err, sizeof err), TCRT_ERR_ARG);
    tcrt_tensor nodata = {.data = NULL, .dtype = TCRT_F32, .rank = 1, .dims = {2}};
    ck_assert_int_eq(tcrt_npy_write(p, &nodata, err, sizeof err), TCRT_ERR_ARG);
    ck_assert(!exists(p));
    ck_assert_int_eq(count_entries(".tmp"), 1);
}
END_TEST

/* ---- descriptors and feeds ---- */

static int runs;
static tcrt_status copy_run(uint8_t *arena)
{
    runs++;
    memcpy(arena + 64, arena, 16);
    return TCRT_OK;
}

/* x: float32[2,2] at 0, y: float32[2,2] at 64, arena 128 bytes */
static const tcrt_io g_args[] = {{"x:0", TCRT_F32, 2, {2, 2}, 16, 0}};
static const tcrt_io g_results[] = {{"y:0", TCRT_F32, 2, {2, 2}, 16, 64}};
static const tcrt_model g_model = {"g", 1, g_args, 1, g_results, 128, 0, copy_run, 0, NULL, NULL};

START_TEST(model_descriptor_checks)
{
    char err[512];
    ck_assert_int_eq(tcrt_check_model(&g_model, err, sizeof err), TCRT_OK);
    ck_assert_int_eq(tcrt_check_model(NULL, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_str_eq(err, "invalid model descriptor: none given");
    tcrt_model m = g_model;
    m.run = NULL;
    ck_assert_int_eq(tcrt_check_model(&m, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_msg(strstr(err, "invalid model descriptor 'g'") != NULL, "%s", err);
    m = g_model;
    m.n_args = -1;
    ck_assert_int_eq(tcrt_check_model(&m, err, sizeof err), TCRT_ERR_ARG);
    /* byte size that does not match the dims (2x2 float32 is 16, not 20) */
    tcrt_io bad = g_args[0];
    bad.bytes = 20;
    m = g_model;
    m.args = &bad;
    ck_assert_int_eq(tcrt_check_model(&m, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_msg(strstr(err, "'x:0' has a bad dtype, rank or dims, or its byte size 20") != NULL, "%s", err);
    /* rank 9, a negative dim, an unknown dtype, no name */
    bad = g_args[0];
    bad.rank = 9;
    ck_assert_int_eq(tcrt_check_model(&m, err, sizeof err), TCRT_ERR_ARG);
    bad = g_args[0];
    bad.dims[1] = -2;
    ck_assert_int_eq(tcrt_check_model(&m, err, sizeof err), TCRT_ERR_ARG);
    bad = g_args[0];
    bad.dtype = TCRT_STRING;
    ck_assert_int_eq(tcrt_check_model(&m, err, sizeof err), TCRT_ERR_ARG);
    bad = g_args[0];
    bad.name = NULL;
    ck_assert_int_eq(tcrt_check_model(&m, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_str_eq(err, "invalid model descriptor: arg 0 has no name");
    /* a result past the arena (offset 120 + 16 bytes > 128) */
    tcrt_io far = g_results[0];
    far.offset = 120;
    m = g_model;
    m.results = &far;
    ck_assert_int_eq(tcrt_check_model(&m, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_str_eq(err, "invalid model descriptor: 'y:0' lies outside the arena");
    /* tcrt_main refuses it before reading any flag: exit 1 */
    char *argv[] = {"g", "--help", NULL};
    ck_assert_int_eq(tcrt_main(&m, 2, argv), 1);
    ck_assert_int_eq(tcrt_main(NULL, 2, argv), 1);
    /* err may be NULL */
    ck_assert_int_eq(tcrt_check_model(&m, NULL, 0), TCRT_ERR_ARG);
}
END_TEST

START_TEST(feed_checks)
{
    char err[512];
    const tcrt_io *io = &g_args[0];
    float v[4] = {1, 2, 3, 4};
    tcrt_tensor ok = {v, TCRT_F32, 2, {2, 2}};
    ck_assert_int_eq(tcrt_check_feed(io, &ok, err, sizeof err), TCRT_OK);
    tcrt_tensor t = ok;
    t.dtype = TCRT_I32;
    ck_assert_int_eq(tcrt_check_feed(io, &t, err, sizeof err), TCRT_ERR_DTYPE);
    ck_assert_str_eq(err, "feed 'x:0': wrong dtype: expected float32[2,2], got int32[2,2]");
    t = ok;
    t.dims[0] = 1;
    t.dims[1] = 4;
    ck_assert_int_eq(tcrt_check_feed(io, &t, err, sizeof err), TCRT_ERR_SHAPE);
    ck_assert_str_eq(err, "feed 'x:0': wrong shape: expected float32[2,2], got float32[1,4]");
    t = ok;
    t.rank = 3;
    t.dims[2] = 1;
    ck_assert_int_eq(tcrt_check_feed(io, &t, err, sizeof err), TCRT_ERR_SHAPE);
    ck_assert_str_eq(err, "feed 'x:0': wrong shape: expected float32[2,2], got float32[2,2,1]");
    t = ok;
    t.rank = -5;
    ck_assert_int_eq(tcrt_check_feed(io, &t, err, sizeof err), TCRT_ERR_SHAPE);
    ck_assert_str_eq(err, "feed 'x:0': wrong shape: expected float32[2,2], got rank -5");
    t.rank = 1000;
    ck_assert_int_eq(tcrt_check_feed(io, &t, err, sizeof err), TCRT_ERR_SHAPE);
    /* a signature whose bytes disagree with its dims: the byte-size guard */
    tcrt_io lie = *io;
    lie.bytes = 8;
    ck_assert_int_eq(tcrt_check_feed(&lie, &ok, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_str_eq(
        err, "feed 'x:0': float32[2,2] is 16 bytes but the signature says 8 (invalid model descriptor)");
    ck_assert_int_eq(tcrt_check_feed(io, NULL, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_int_eq(tcrt_check_feed(NULL, &ok, NULL, 0), TCRT_ERR_ARG);

    /* tcrt_set_feed: nothing is written unless every check passes */
    _Alignas(64) uint8_t arena[128];
    memset(arena, 0xab, sizeof arena);
    uint8_t before[128];
    memcpy(before, arena, sizeof arena);
    t = ok;
    t.dtype = TCRT_I32;
    ck_assert_int_eq(tcrt_set_feed(&g_model, arena, 0, &t, err, sizeof err), TCRT_ERR_DTYPE);
    t = ok;
    t.dims[0] = 4;
    t.dims[1] = 1;
    ck_assert_int_eq(tcrt_set_feed(&g_model, arena, 0, &t, err, sizeof err), TCRT_ERR_SHAPE);
    t = ok;
    t.data = NULL;
    ck_assert_int_eq(tcrt_set_feed(&g_model, arena, 0, &t, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_str_eq(err, "feed 'x:0': tensor has no data");
    ck_assert_int_eq(tcrt_set_feed(&g_model, arena, 1, &ok, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_str_eq(err, "model 'g' has no arg 1 (it has 1)");
    ck_assert_int_eq(tcrt_set_feed(&g_model, arena, -1, &ok, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_int_eq(tcrt_set_feed(&g_model, NULL, 0, &ok, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_int_eq(tcrt_set_feed(NULL, arena, 0, &ok, err, sizeof err), TCRT_ERR_ARG);
    ck_assert_mem_eq(arena, before, sizeof arena);
    ck_assert_int_eq(tcrt_set_feed(&g_model, arena, 0, &ok, err, sizeof err), TCRT_OK);
    ck_assert_mem_eq(arena, v, sizeof v);
    ck_assert_mem_eq(arena + 16, before + 16, sizeof arena - 16);

    /* names: "x" and "x:0" are the same arg */
    ck_assert_int_eq(tcrt_find_arg(&g_model, "x"), 0);
    ck_assert_int_eq(tcrt_find_arg(&g_model, "x:0"), 0);
    ck_assert_int_eq(tcrt_find_arg(&g_model, "x:1"), -1);
    ck_assert_int_eq(tcrt_find_arg(&g_model, "y"), -1);
    ck_assert_int_eq(tcrt_find_arg(&g_model, ""), -1);
    ck_assert_int_eq(tcrt_find_arg(&g_model, NULL), -1);
    ck_assert_int_eq(tcrt_find_arg(NULL, "x"), -1);

    char s[32];
    int64_t dims[2] = {1, 224};
    tcrt_type_str(TCRT_U8, 2, dims, s, sizeof s);
    ck_assert_str_eq(s, "uint8[1,224]");
    tcrt_type_str(TCRT_F64, 0, NULL, s, sizeof s);
    ck_assert_str_eq(s, "float64[]");
    tcrt_type_str(TCRT_F32, 2, dims, s, 8); /* truncated, terminated */
    ck_assert_str_eq(s, "float32");
}
END_TEST

/* ---- tcrt_main's messages (stderr captured into a file) ---- */

static char *run_main_capture(const tcrt_model *m, char **argv, int argc, int *rc)
{
    char errpath[128];
    path_of(errpath, sizeof errpath, "stderr.txt");
    fflush(stderr);
    int saved = dup(2);
    int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    dup2(fd, 2);
    close(fd);
    *rc = tcrt_main(m, argc, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(errpath, "rb");
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

#define HAS(s, sub) ck_assert_msg(strstr((s), (sub)) != NULL, "missing \"%s\" in:\n%s", (sub), (s))

START_TEST(main_messages)
{
    char feed[128], feedarg[160], outarg[160], res[200];
    path_of(feed, sizeof feed, "x.npy");
    snprintf(feedarg, sizeof feedarg, "x=%s", feed);
    snprintf(outarg, sizeof outarg, "--out-dir=%s/out", dir);
    snprintf(res, sizeof res, "%s/out/y_0.npy", dir);
    char *argv[] = {"g", "--feed", feedarg, outarg, NULL};
    int rc;
    runs = 0;
    /* wrong dtype (exit 2): names the feed and the file, expected vs got */
    int32_t iv[4] = {1, 2, 3, 4};
    write_npy(feed, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", iv, 16);
    char *e = run_main_capture(&g_model, argv, 4, &rc);
    ck_assert_int_eq(rc, 2);
    HAS(e, "error: feed 'x:0': ");
    HAS(e, "x.npy: wrong dtype: expected float32[2,2], got int32[2,2]");
    /* wrong shape (exit 2) */
    float fv[4] = {1, 2, 3, 4};
    write_npy(feed, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 1), }", fv, 16);
    e = run_main_capture(&g_model, argv, 4, &rc);
    ck_assert_int_eq(rc, 2);
    HAS(e, "x.npy: wrong shape: expected float32[2,2], got float32[4,1]");
    /* malformed header (exit 1) */
    write_npy(feed, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", fv, 16);
    e = run_main_capture(&g_model, argv, 4, &rc);
    ck_assert_int_eq(rc, 1);
    HAS(e, "error: feed 'x:0': ");
    HAS(e, "x.npy: fortran_order True is not supported");
    /* right header, data cut short (exit 1) */
    write_npy(feed, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", fv, 10);
    e = run_main_capture(&g_model, argv, 4, &rc);
    ck_assert_int_eq(rc, 1);
    HAS(e, "truncated data");
    ck_assert(!exists(res));
    ck_assert_int_eq(runs, 0);
    /* and a good one runs once and writes y = x */
    write_npy(feed, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", fv, 16);
    e = run_main_capture(&g_model, argv, 4, &rc);
    ck_assert_msg(rc == 0, "%s", e);
    ck_assert_int_eq(runs, 1);
    tcrt_tensor r;
    char err[512];
    ck_assert_int_eq(tcrt_npy_read(res, &r, err, sizeof err), TCRT_OK);
    ck_assert_mem_eq(r.data, fv, 16);
    free(r.data);
}
END_TEST

/* Results "a/b:0" and "a_b:0" both become a_b_0.npy: refused before any
 * feed is read or anything runs. */
START_TEST(main_result_name_clash)
{
    static const tcrt_io res2[] = {{"a/b:0", TCRT_F32, 2, {2, 2}, 16, 64},
                                   {"a_b:0", TCRT_F32, 2, {2, 2}, 16, 64}};
    tcrt_model m = g_model;
    m.n_results = 2;
    m.results = res2;
    char feed[128], feedarg[160];
    path_of(feed, sizeof feed, "x.npy");
    float fv[4] = {1, 2, 3, 4};
    write_npy(feed, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", fv, 16);
    snprintf(feedarg, sizeof feedarg, "x=%s", feed);
    char *argv[] = {"g", "--feed", feedarg, NULL};
    int rc;
    runs = 0;
    char *e = run_main_capture(&m, argv, 3, &rc);
    ck_assert_int_eq(rc, 1);
    HAS(e, "error: results 'a/b:0' and 'a_b:0' would both be written to a_b_0.npy");
    ck_assert_int_eq(runs, 0);
}
END_TEST

/* Generated integer division (TCRT_DIV, TCRT_FLOORDIV, TCRT_FLOORMOD) on
 * values from feeds: x / 0 is 0 (TensorFlow raises; generated code must not
 * trap), INT_MIN / -1 wraps to INT_MIN instead of raising SIGFPE.  volatile
 * keeps the compiler from folding the calls. */
START_TEST(elem_division_never_traps)
{
    volatile int32_t a32 = INT32_MIN, m1 = -1, z = 0, seven = 7, two = -2;
    volatile int64_t a64 = INT64_MIN, m164 = -1;
    volatile uint32_t ua = 4000000000u, ub = 3;
    int32_t q32 = TCRT_DIV(a32, m1);
    ck_assert_int_eq(q32, INT32_MIN);
    ck_assert_int_eq(TCRT_DIV(seven, z), 0);
    ck_assert_int_eq(TCRT_DIV(seven, two), -3); /* C truncation, as TF's Div on ints */
    ck_assert_int_eq(TCRT_DIV(a64, m164), INT64_MIN);
    ck_assert_uint_eq(TCRT_DIV(ua, ub), 1333333333u);
    ck_assert_int_eq(TCRT_FLOORDIV(a64, m164), INT64_MIN);
    ck_assert_int_eq(TCRT_FLOORDIV(seven, two), -4); /* floor(-3.5) */
    ck_assert_int_eq(TCRT_FLOORMOD(a64, m164), 0);
    ck_assert_int_eq(TCRT_FLOORMOD(seven, two), -1); /* 7 - (-4)(-2) */
    ck_assert_int_eq(TCRT_FLOORMOD(seven, z), 0);
    volatile float fa = 1.0f, fz = 0.0f;
    ck_assert(isinf(TCRT_DIV(fa, fz)));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_guards");
    TCase *tn = tcase_create("npy");
    tcase_add_checked_fixture(tn, setup, teardown);
    tcase_add_test(tn, npy_bad_headers);
    tcase_add_test(tn, npy_not_regular);
    tcase_add_test(tn, npy_read_feed_checks_header_first);
    tcase_add_test(tn, npy_read_feed_into);
    tcase_add_test(tn, npy_write_atomic);
    TCase *tf = tcase_create("feeds");
    tcase_add_checked_fixture(tf, setup, teardown);
    tcase_add_test(tf, model_descriptor_checks);
    tcase_add_test(tf, feed_checks);
    tcase_add_test(tf, main_messages);
    tcase_add_test(tf, main_result_name_clash);
    tcase_add_test(tf, elem_division_never_traps);
    suite_add_tcase(s, tn);
    suite_add_tcase(s, tf);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
