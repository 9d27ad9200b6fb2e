/* test_npy.c - Check suite for the .npy reader/writer (runtime/npy.c).
 *
 * Round trips every supported dtype, reads hand-written byte files (v1, v2,
 * v3, scalar, keys in another order), pins the exact header the writer
 * produces, and checks that each malformed file is rejected with a message
 * naming the file and the reason.  Atomic write: a failing write leaves
 * neither the file nor PATH.tmp behind.
 */
#include "tcrt.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/tcrt_npy_XXXXXX");
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
    return stat(p, &sb) == 0;
}

/* Writes preamble (magic, version, header length), the dict padded with
 * spaces + '\n' to hlen, then data. */
static void write_npy(const char *path, int major, const char *dict, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    size_t pre = major == 1 ? 10 : 12;
    size_t hlen = strlen(dict) + 1;
    hlen = ((pre + hlen + 63) / 64) * 64 - pre;
    unsigned char head[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)major, 0};
    head[8] = (unsigned char)(hlen & 0xff);
    head[9] = (unsigned char)(hlen >> 8);
    head[10] = head[11] = 0;
    fwrite(head, 1, pre, f);
    fputs(dict, f);
    for (size_t i = strlen(dict); i + 1 < hlen; i++)
        fputc(' ', f);
    fputc('\n', f);
    if (n)
        fwrite(data, 1, n, f);
    fclose(f);
}

static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(b, 1, n, f);
    fclose(f);
}

START_TEST(roundtrip_all_dtypes)
{
    tcrt_dtype dts[] = {TCRT_F32, TCRT_F64, TCRT_I32, TCRT_I64, TCRT_U8, TCRT_BOOL,
                        TCRT_I8,  TCRT_I16, TCRT_U16, TCRT_U32, TCRT_U64};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        unsigned char data[6 * 8];
        for (size_t i = 0; i < sizeof data; i++)
            data[i] = (unsigned char)(dts[k] == TCRT_BOOL ? i % 2 : i * 7 + k);
        tcrt_tensor t = {.data = data, .dtype = dts[k], .rank = 2, .dims = {2, 3}};
        char p[128], err[256];
        path_of(p, sizeof p, "rt.npy");
        ck_assert_int_eq(tcrt_npy_write(p, &t, err, sizeof err), TCRT_OK);
        tcrt_tensor r;
        ck_assert_msg(tcrt_npy_read(p, &r, err, sizeof err) == TCRT_OK, "%s", err);
        ck_assert_int_eq(r.dtype, dts[k]);
        ck_assert_int_eq(r.rank, 2);
        ck_assert_int_eq(r.dims[0], 2);
        ck_assert_int_eq(r.dims[1], 3);
        ck_assert_mem_eq(r.data, data, 6 * tcrt_dtype_size(dts[k]));
        free(r.data);
    }
}
END_TEST

START_TEST(roundtrip_scalar_and_empty)
{
    char p[128], err[256];
    path_of(p, sizeof p, "s.npy");
    float v = 2.5f;
    tcrt_tensor t = {.data = &v, .dtype = TCRT_F32, .rank = 0};
    ck_assert_int_eq(tcrt_npy_write(p, &t, err, sizeof err), TCRT_OK);
    tcrt_tensor r;
    ck_assert_int_eq(tcrt_npy_read(p, &r, err, sizeof err), TCRT_OK);
    ck_assert_int_eq(r.rank, 0);
    ck_assert_float_eq(*(float *)r.data, 2.5f);
    free(r.data);
    tcrt_tensor e = {.data = NULL, .dtype = TCRT_I32, .rank = 2, .dims = {0, 4}};
    ck_assert_int_eq(tcrt_npy_write(p, &e, err, sizeof err), TCRT_OK);
    ck_assert_int_eq(tcrt_npy_read(p, &r, err, sizeof err), TCRT_OK);
    ck_assert_int_eq(r.dims[0], 0);
    ck_assert_int_eq(r.dims[1], 4);
    free(r.data);
}
END_TEST

/* The writer's header is pinned: v1.0, dict text (57 chars); 10 + 57 + '\n' = 68 bytes
 * round up to the next multiple of 64, so the data starts at 128. */
START_TEST(written_header_exact)
{
    char p[128], err[256];
    path_of(p, sizeof p, "h.npy");
    float d[3] = {1, 2, 3};
    tcrt_tensor t = {.data = d, .dtype = TCRT_F32, .rank = 1, .dims = {3}};
    ck_assert_int_eq(tcrt_npy_write(p, &t, err, sizeof err), TCRT_OK);
    unsigned char buf[256];
    FILE *f = fopen(p, "rb");
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ck_assert_uint_eq(n, 128 + 12);
    ck_assert_mem_eq(buf, "\x93NUMPY\x01\x00", 8);
    ck_assert_uint_eq(buf[8] | (buf[9] << 8), 118); /* 10 + 118 = 128 */
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
    ck_assert_mem_eq(buf + 10, dict, strlen(dict));
    ck_assert_uint_eq(buf[127], '\n');
    ck_assert_uint_eq(buf[126], ' ');
    ck_assert_uint_eq(buf[10 + 57], ' ');
    ck_assert_mem_eq(buf + 128, d, 12);
}
END_TEST

START_TEST(read_handwritten)
{
    char p[128], err[256];
    tcrt_tensor r;
    path_of(p, sizeof p, "a.npy");
    /* v1, int64, keys in another order, double quotes */
    int64_t d64[3] = {-1, 0, 1LL << 40};
    write_npy(p, 1, "{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<i8\"}", d64, sizeof d64);
    ck_assert_msg(tcrt_npy_read(p, &r, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(r.dtype, TCRT_I64);
    ck_assert_int_eq(r.rank, 1);
    ck_assert_int_eq(((int64_t *)r.data)[2], 1LL << 40);
    free(r.data);
    /* v2 header, uint8 written as '<u1', shape (2, 2) */
    unsigned char u8[4] = {1, 2, 254, 255};
    write_npy(p, 2, "{'descr': '<u1', 'fortran_order': False, 'shape': (2, 2), }", u8, 4);
    ck_assert_msg(tcrt_npy_read(p, &r, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(r.dtype, TCRT_U8);
    ck_assert_int_eq(((uint8_t *)r.data)[3], 255);
    free(r.data);
    /* v3, bool */
    unsigned char b[2] = {1, 0};
    write_npy(p, 3, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", b, 2);
    ck_assert_msg(tcrt_npy_read(p, &r, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(r.dtype, TCRT_BOOL);
    free(r.data);
    /* scalar f8 */
    double dv = -0.5;
    write_npy(p, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", &dv, 8);
    ck_assert_msg(tcrt_npy_read(p, &r, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(r.rank, 0);
    ck_assert(*(double *)r.data == -0.5);
    free(r.data);
    /* |i1, <i2, <u2 */
    write_npy(p, 1, "{'descr': '|i1', 'fortran_order': False, 'shape': (1,), }", "\xff", 1);
    ck_assert_int_eq(tcrt_npy_read(p, &r, err, sizeof err), TCRT_OK);
    ck_assert_int_eq(r.dtype, TCRT_I8);
    ck_assert_int_eq(((int8_t *)r.data)[0], -1);
    free(r.data);
    write_npy(p, 1, "{'descr': '<i2', 'fortran_order': False, 'shape': (1,), }", "\xfe\xff", 2);
    ck_assert_int_eq(tcrt_npy_read(p, &r, err, sizeof err), TCRT_OK);
    ck_assert_int_eq(((int16_t *)r.data)[0], -2);
    free(r.data);
    write_npy(p, 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", "\xfe\xff", 2);
    ck_assert_int_eq(tcrt_npy_read(p, &r, err, sizeof err), TCRT_OK);
    ck_assert_int_eq(r.dtype, TCRT_U16);
    ck_assert_int_eq(((uint16_t *)r.data)[0], 65534);
    free(r.data);
}
END_TEST

/* Reads path and expects failure with a message containing the file name and why. */
static void expect_bad(const char *p, const char *why)
{
    char err[512];
    tcrt_tensor r;
    tcrt_status s = tcrt_npy_read(p, &r, err, sizeof err);
    ck_assert_int_ne(s, TCRT_OK);
    ck_assert_msg(strstr(err, p) != NULL, "message lacks file name: %s", err);
    ck_assert_msg(strstr(err, why) != NULL, "message lacks '%s': %s", why, err);
    ck_assert_ptr_null(strchr(err, '\n'));
}

START_TEST(malformed_files)
{
    char p[128];
    path_of(p, sizeof p, "bad.npy");
    float d[4] = {0};
    write_bytes(p, "\x93NUMPX\x01\x00\x10\x00", 10);
    expect_bad(p, "bad magic");
    write_bytes(p, "hello", 5);
    expect_bad(p, "bad magic");
    /* header announces 200 bytes but the file ends */
    write_bytes(p, "\x93NUMPY\x01\x00\xc8\x00{'descr'", 18);
    expect_bad(p, "truncated header");
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", d, 16);
    expect_bad(p, "fortran_order");
    write_npy(p, 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", d, 16);
    expect_bad(p, "big-endian");
    write_npy(p, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", d, 16);
    expect_bad(p, "unsupported dtype descr '<c8'");
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", d, 4);
    expect_bad(p, "rank exceeds 8");
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", d, 4);
    expect_bad(p, "overflows");
    write_npy(p, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1152921504606846976,), }", d, 4);
    expect_bad(p, "overflows");
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", d, 16);
    expect_bad(p, "truncated data");
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", d, 16);
    expect_bad(p, "does not match");
    write_npy(p, 1, "{'descr': '<f4', 'shape': (3,), }", d, 12);
    expect_bad(p, "lacks 'fortran_order'");
    write_npy(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': [3], }", d, 12);
    expect_bad(p, "not a tuple");
    write_bytes(p, "\x93NUMPY\x04\x00\x10\x00", 10);
    expect_bad(p, "version");
    path_of(p, sizeof p, "missing.npy");
    expect_bad(p, "cannot open");
}
END_TEST

START_TEST(atomic_write_failure)
{
    char p[128], tmp[140], err[256];
    float d[2] = {1, 2};
    tcrt_tensor t = {.data = d, .dtype = TCRT_F32, .rank = 1, .dims = {2}};
    /* the folder does not exist: nothing is created */
    path_of(p, sizeof p, "nodir/x.npy");
    ck_assert_int_eq(tcrt_npy_write(p, &t, err, sizeof err), TCRT_ERR_IO);
    ck_assert(strstr(err, p) != NULL);
    ck_assert(!exists(p));
    /* rename onto a non-empty directory fails after the tmp file was written */
    path_of(p, sizeof p, "isdir.npy");
    ck_assert_int_eq(mkdir(p, 0777), 0);
    char inner[160];
    snprintf(inner, sizeof inner, "%s/keep", p);
    write_bytes(inner, "x", 1);
    ck_assert_int_eq(tcrt_npy_write(p, &t, err, sizeof err), TCRT_ERR_IO);
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    ck_assert(!exists(tmp));
    /* unknown dtype: rejected before any file */
    path_of(p, sizeof p, "str.npy");
    tcrt_tensor s = {.data = d, .dtype = TCRT_STRING, .rank = 1, .dims = {1}};
    ck_assert_int_ne(tcrt_npy_write(p, &s, err, sizeof err), TCRT_OK);
    ck_assert(!exists(p));
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    ck_assert(!exists(tmp));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_npy");
    TCase *tc = tcase_create("npy");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, roundtrip_all_dtypes);
    tcase_add_test(tc, roundtrip_scalar_and_empty);
    tcase_add_test(tc, written_header_exact);
    tcase_add_test(tc, read_handwritten);
    tcase_add_test(tc, malformed_files);
    tcase_add_test(tc, atomic_write_failure);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
