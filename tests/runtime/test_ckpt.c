/* test_ckpt.c - Check suite for TensorFlow checkpoints (runtime/ckpt.c,
 * runtime/crc32c.c): reader, writer, tcrt_model_save / tcrt_model_restore.
 *
 * Usage: test_runtime_ckpt MODELS_DIR  (../shared/models).  The corpus
 * cases read real TensorFlow checkpoints; without MODELS_DIR the other
 * cases run and the test exits 77 (SKIP) when they pass.
 *
 * Where expected values come from:
 *  - CRC32C: the standard check value of "123456789" (0xe3069283) and the
 *    RFC 3720 appendix B.4 vectors; the hardware and portable paths must
 *    also agree on random data.
 *  - Corpus values: TensorFlow's own generators (cited per case), and the
 *    CRC32C TensorFlow stored for every tensor (tcrt_ckpt_read checks it).
 *  - Writer: TensorFlow's bytes.  Re-encoding a TF1 checkpoint must give the
 *    very same .index file (and data shard) as TensorFlow wrote.
 *  - Bad input: index files assembled by hand here (make_table, separate
 *    from the writer), each error message pinned.
 */
#include "tcrt_ckpt.h"

#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *models_dir; /* NULL when ../shared/models is absent */
static char dir[64];
static char err[1024];

static void setup(void)
{
    strcpy(dir, "/tmp/tcrt_ckpt_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
    if (system(cmd) != 0) {
        /* best effort */
    }
}

static void path_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

static void model_path(char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", models_dir, rel);
}

static long file_size(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? (long)sb.st_size : -1;
}

static unsigned char *slurp(const char *p, size_t *n)
{
    FILE *f = fopen(p, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", p);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)sz + 1);
    ck_assert(fread(b, 1, (size_t)sz, f) == (size_t)sz);
    fclose(f);
    *n = (size_t)sz;
    return b;
}

static void spit(const char *p, const void *d, size_t n)
{
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert(fwrite(d, 1, n, f) == n);
    ck_assert_int_eq(fclose(f), 0);
}

/* Number of names in dir containing ".tmp". */
static int count_tmp(void)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strstr(de->d_name, ".tmp"))
            n++;
    closedir(d);
    return n;
}

static void assert_err_has(const char *want)
{
    ck_assert_msg(strstr(err, want) != NULL, "error '%s' lacks '%s'", err, want);
}

/* ---- CRC32C ---- */

START_TEST(test_crc32c_vectors)
{
    uint8_t zeros[32], ones[32], inc[32], dec[32];
    for (int i = 0; i < 32; i++) {
        zeros[i] = 0;
        ones[i] = 0xff;
        inc[i] = (uint8_t)i;
        dec[i] = (uint8_t)(31 - i);
    }
    uint32_t (*fns[2])(uint32_t, const void *, size_t) = {tcrt_crc32c, tcrt_crc32c_portable};
    for (int f = 0; f < 2; f++) {
        ck_assert_uint_eq(fns[f](0, "123456789", 9), 0xe3069283u);
        ck_assert_uint_eq(fns[f](0, zeros, 32), 0x8a9136aau); /* RFC 3720 B.4 */
        ck_assert_uint_eq(fns[f](0, ones, 32), 0x62a8ab43u);
        ck_assert_uint_eq(fns[f](0, inc, 32), 0x46dd794eu);
        ck_assert_uint_eq(fns[f](0, dec, 32), 0x113fdb5cu);
        ck_assert_uint_eq(fns[f](0, "", 0), 0);
        /* extending: crc(a ++ b) = crc32c(crc(a), b) */
        ck_assert_uint_eq(fns[f](fns[f](0, "1234", 4), "56789", 5), 0xe3069283u);
    }
    /* masking: rotate right by 15, add 0xa282ead8 */
    ck_assert_uint_eq(tcrt_crc32c_mask(0), 0xa282ead8u);
    ck_assert_uint_eq(tcrt_crc32c_mask(0x8000u), 0xa282ead8u + 1u);
    /* both paths agree on every length and alignment */
    uint8_t buf[4096 + 16];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t off = 0; off < 9; off++)
        for (size_t n = 0; n < 300; n += 7)
            ck_assert_uint_eq(tcrt_crc32c(0, buf + off, n), tcrt_crc32c_portable(0, buf + off, n));
    ck_assert_uint_eq(tcrt_crc32c(7, buf, 4096), tcrt_crc32c_portable(7, buf, 4096));
}
END_TEST

/* ---- the corpus ---- */

static const tcrt_ckpt_entry *want_entry(tcrt_ckpt *ck, const char *key, tcrt_dtype dt, int rank,
                                         const int64_t *dims)
{
    const tcrt_ckpt_entry *e = tcrt_ckpt_find(ck, key);
    ck_assert_msg(e != NULL, "no entry '%s'", key);
    ck_assert_str_eq(e->key, key);
    ck_assert_int_eq(e->dtype, dt);
    ck_assert_int_eq(e->rank, rank);
    for (int d = 0; d < rank; d++)
        ck_assert_int_eq(e->dims[d], dims[d]);
    return e;
}

static float read_f32_scalar(tcrt_ckpt *ck, const char *key)
{
    const tcrt_ckpt_entry *e = want_entry(ck, key, TCRT_F32, 0, NULL);
    float v = -1;
    ck_assert_uint_eq(e->bytes, 4);
    ck_assert_msg(tcrt_ckpt_read(ck, e, &v, 4, err, sizeof err) == TCRT_OK, "%s", err);
    return v;
}

/* a = 0.5, b = 2.0, c = 3.0: TensorFlow's generator
 * tensorflow/python/saved_model/example/saved_model_half_plus_two.py
 * (tf.Variable(0.5, name="a"), tf.Variable(2.0, name="b"),
 * tf.Variable(3.0, name="c"); filename_tensor has collections=[] and is
 * not saved). */
START_TEST(test_corpus_half_plus_two)
{
    const char *models[] = {"github-tensorflow/cc_saved_model_half_plus_two/variables/variables",
                            "github-tensorflow/cc_saved_model_half_plus_two_pbtxt/variables/variables",
                            "github-tensorflow/cc_saved_model_half_plus_two_main_op/variables/variables"};
    for (int m = 0; m < 3; m++) {
        char p[1024];
        model_path(p, sizeof p, models[m]);
        tcrt_ckpt *ck;
        ck_assert_msg(tcrt_ckpt_open(p, &ck, err, sizeof err) == TCRT_OK, "%s", err);
        ck_assert_int_eq(tcrt_ckpt_count(ck), 3);
        ck_assert_str_eq(tcrt_ckpt_get(ck, 0)->key, "a");
        ck_assert_str_eq(tcrt_ckpt_get(ck, 1)->key, "b");
        ck_assert_str_eq(tcrt_ckpt_get(ck, 2)->key, "c");
        ck_assert_ptr_null(tcrt_ckpt_get(ck, 3));
        ck_assert_ptr_null(tcrt_ckpt_get(ck, -1));
        ck_assert_ptr_null(tcrt_ckpt_find(ck, "d"));
        ck_assert_ptr_null(tcrt_ckpt_find(ck, ""));
        ck_assert(read_f32_scalar(ck, "a") == 0.5f);
        ck_assert(read_f32_scalar(ck, "b") == 2.0f);
        ck_assert(read_f32_scalar(ck, "c") == 3.0f);
        tcrt_ckpt_close(ck);
    }
}
END_TEST

/* TensorFlow Serving's generator
 * tensorflow_serving/servables/tensorflow/testdata/saved_model_half_plus_two.py
 * saves a = 0.5, b = 2.0, c = 3.0, a2 = 0.5, c2 = 3.0; its _cpu export has a
 * Snappy-compressed index (compression type 1). */
START_TEST(test_corpus_snappy)
{
    char p[1024];
    model_path(p, sizeof p, "github-tfserving/saved_model_half_plus_two_cpu/variables/variables");
    tcrt_ckpt *ck;
    ck_assert_msg(tcrt_ckpt_open(p, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_ckpt_count(ck), 5);
    const char *keys[] = {"a", "a2", "b", "c", "c2"};
    const float vals[] = {0.5f, 0.5f, 2.0f, 3.0f, 3.0f};
    for (int i = 0; i < 5; i++) {
        ck_assert_str_eq(tcrt_ckpt_get(ck, i)->key, keys[i]);
        ck_assert(read_f32_scalar(ck, keys[i]) == vals[i]);
    }
    tcrt_ckpt_close(ck);

    /* the TF2 export: object-graph checkpoint, snappy, a string entry */
    model_path(p, sizeof p, "github-tfserving/saved_model_half_plus_two_tf2_cpu/variables/variables");
    ck_assert_msg(tcrt_ckpt_open(p, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_ckpt_count(ck), 4);
    ck_assert(read_f32_scalar(ck, "a/.ATTRIBUTES/VARIABLE_VALUE") == 0.5f);
    ck_assert(read_f32_scalar(ck, "b/.ATTRIBUTES/VARIABLE_VALUE") == 2.0f);
    ck_assert(read_f32_scalar(ck, "c/.ATTRIBUTES/VARIABLE_VALUE") == 3.0f);
    const tcrt_ckpt_entry *g = want_entry(ck, "_CHECKPOINTABLE_OBJECT_GRAPH", TCRT_STRING, 0, NULL);
    char buf[4096];
    ck_assert_uint_le(g->bytes, sizeof buf);
    ck_assert_int_eq(tcrt_ckpt_read(ck, g, buf, g->bytes, err, sizeof err), TCRT_ERR_FORMAT);
    assert_err_has("variables.index: entry '_CHECKPOINTABLE_OBJECT_GRAPH': string tensors are not supported");
    tcrt_ckpt_close(ck);
}
END_TEST

/* Keys, dtypes and shapes of more corpus checkpoints; every tensor is read
 * (its CRC32C as TensorFlow stored it is checked). */
START_TEST(test_corpus_listing)
{
    static const int64_t d784_10[] = {784, 10}, d10[] = {10}, d7_7_3_32[] = {7, 7, 3, 32},
                         d5408_10[] = {5408, 10}, d3_2[] = {3, 2};
    struct {
        const char *model, *key;
        tcrt_dtype dt;
        int rank;
        const int64_t *dims;
        int count;
    } cases[] = {
        {"github-mlnet-testdata/mnist_lr_model/variables/variables", "W", TCRT_F32, 2, d784_10, 2},
        {"github-mlnet-testdata/mnist_lr_model/variables/variables", "b", TCRT_F32, 1, d10, 2},
        {"github-tf2onnx/regression/saved_model/variables/variables", "W", TCRT_F32, 0, NULL, 2},
        {"github-tf2onnx/regression/saved_model/variables/variables", "b", TCRT_F32, 0, NULL, 2},
        {"github-tf2onnx/assign/variables/variables", "Variable", TCRT_I32, 0, NULL, 1},
        {"github-tfserving/saved_model_half_plus_three/variables/variables", "b", TCRT_F32, 0, NULL, 3},
        {"github-tensorflow/contrib_predictor_test_export_dir/variables/variables", "global_step", TCRT_I64,
         0, NULL, 1},
        {"github-tensorflow/feature_column_embedding_ckpt/embedding.ckpt", "my_embedding", TCRT_F32, 2, d3_2,
         1},
        {"github-mlnet-testdata/cifar_model/model.ckpt", "Wconv1/Adam", TCRT_F32, 4, d7_7_3_32, 14},
        {"github-mlnet-testdata/cifar_model/model.ckpt", "W1", TCRT_F32, 2, d5408_10, 14},
        {"github-tfjs/saved_model_int64_multiply/variables/variables", "v1/.ATTRIBUTES/VARIABLE_VALUE",
         TCRT_I64, 0, NULL, 3},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char p[1024];
        model_path(p, sizeof p, cases[c].model);
        tcrt_ckpt *ck;
        ck_assert_msg(tcrt_ckpt_open(p, &ck, err, sizeof err) == TCRT_OK, "%s", err);
        ck_assert_int_eq(tcrt_ckpt_count(ck), cases[c].count);
        want_entry(ck, cases[c].key, cases[c].dt, cases[c].rank, cases[c].dims);
        for (int i = 0; i < tcrt_ckpt_count(ck); i++) {
            const tcrt_ckpt_entry *e = tcrt_ckpt_get(ck, i);
            if (i > 0)
                ck_assert_int_lt(strcmp(tcrt_ckpt_get(ck, i - 1)->key, e->key), 0);
            if (e->dtype == TCRT_STRING)
                continue;
            void *b = malloc(e->bytes + 1);
            ck_assert_msg(tcrt_ckpt_read(ck, e, b, e->bytes, err, sizeof err) == TCRT_OK, "%s", err);
            free(b);
        }
        tcrt_ckpt_close(ck);
    }
}
END_TEST

/* The sentiment model ships its index without its data shard. */
START_TEST(test_corpus_missing_shard)
{
    char p[1024];
    model_path(p, sizeof p, "github-mlnet-testdata/sentiment_model/variables/variables");
    tcrt_ckpt *ck = (tcrt_ckpt *)1;
    ck_assert_int_eq(tcrt_ckpt_open(p, &ck, err, sizeof err), TCRT_ERR_IO);
    ck_assert_ptr_null(ck);
    assert_err_has("sentiment_model/variables/variables.data-00000-of-00001: cannot open data shard (for "
                   "'Prediction/bias'): No such file or directory");
}
END_TEST

/* Everything readable in the checkpoint at src, written to dst; returns
 * how many entries were copied. */
static int reencode(const char *src, const char *dst)
{
    tcrt_ckpt *ck;
    ck_assert_msg(tcrt_ckpt_open(src, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    int n = tcrt_ckpt_count(ck), m = 0;
    tcrt_ckpt_entry *es = calloc((size_t)n + 1, sizeof *es);
    for (int i = 0; i < n; i++) {
        const tcrt_ckpt_entry *e = tcrt_ckpt_get(ck, i);
        if (e->dtype == TCRT_STRING)
            continue;
        void *b = malloc(e->bytes + 1);
        ck_assert_msg(tcrt_ckpt_read(ck, e, b, e->bytes, err, sizeof err) == TCRT_OK, "%s", err);
        es[m] = *e;
        es[m].data = b;
        m++;
    }
    ck_assert_msg(tcrt_ckpt_write(dst, es, m, err, sizeof err) == TCRT_OK, "%s", err);
    /* read back: same keys, dtypes, shapes, bytes */
    tcrt_ckpt *back;
    ck_assert_msg(tcrt_ckpt_open(dst, &back, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_ckpt_count(back), m);
    for (int i = 0; i < m; i++) {
        const tcrt_ckpt_entry *e = tcrt_ckpt_get(back, i);
        ck_assert_str_eq(e->key, es[i].key);
        ck_assert_int_eq(e->dtype, es[i].dtype);
        ck_assert_int_eq(e->rank, es[i].rank);
        for (int d = 0; d < e->rank; d++)
            ck_assert_int_eq(e->dims[d], es[i].dims[d]);
        ck_assert_uint_eq(e->bytes, es[i].bytes);
        void *b = malloc(e->bytes + 1);
        ck_assert_msg(tcrt_ckpt_read(back, e, b, e->bytes, err, sizeof err) == TCRT_OK, "%s", err);
        ck_assert(e->bytes == 0 || memcmp(b, es[i].data, e->bytes) == 0);
        free(b);
        free((void *)es[i].data);
    }
    tcrt_ckpt_close(back);
    tcrt_ckpt_close(ck);
    free(es);
    return m;
}

static void assert_same_file(const char *a, const char *b)
{
    size_t na, nb;
    unsigned char *pa = slurp(a, &na), *pb = slurp(b, &nb);
    ck_assert_msg(na == nb && memcmp(pa, pb, na) == 0, "%s and %s differ", a, b);
    free(pa);
    free(pb);
}

/* TF1 checkpoints (only plain tensors, written in key order) come back byte
 * for byte: the index TensorFlow wrote is the one tcrt_ckpt_write writes. */
START_TEST(test_corpus_reencode)
{
    const char *same[] = {"github-tensorflow/cc_saved_model_half_plus_two/variables/variables",
                          "github-mlnet-testdata/mnist_conv_model/variables/variables",
                          "github-mlnet-testdata/cifar_model/model.ckpt",
                          "github-tensorflow/profiler_testdata/ckpt"};
    for (int i = 0; i < 4; i++) {
        char src[1024], dst[256], a[1100], b[300];
        model_path(src, sizeof src, same[i]);
        path_of(dst, sizeof dst, "re");
        ck_assert_int_gt(reencode(src, dst), 0);
        snprintf(a, sizeof a, "%s.index", src);
        snprintf(b, sizeof b, "%s.index", dst);
        assert_same_file(a, b);
        snprintf(a, sizeof a, "%s.data-00000-of-00001", src);
        snprintf(b, sizeof b, "%s.data-00000-of-00001", dst);
        assert_same_file(a, b);
    }
    /* others (snappy, TF2 object graphs with a string entry dropped) round trip */
    const char *other[] = {"github-tfserving/saved_model_half_plus_two_cpu/variables/variables",
                           "github-tfnet/keras_lstm_from_sequential/variables/variables",
                           "github-tfrust/keras_single_input_saved_model/variables/variables"};
    for (int i = 0; i < 3; i++) {
        char src[1024], dst[256];
        model_path(src, sizeof src, other[i]);
        path_of(dst, sizeof dst, "re2");
        ck_assert_int_gt(reencode(src, dst), 0);
    }
    ck_assert_int_eq(count_tmp(), 0);
}
END_TEST

/* ---- round trip ---- */

START_TEST(test_roundtrip)
{
    enum { N_BIG = 300 };
    static float f32[6] = {1.5f, -2, 3, 4.25f, 0, -0.0f};
    static double f64 = 3.141592653589793;
    static int32_t i32[4] = {-1, 0, 2147483647, -2147483647 - 1};
    static uint8_t u8[3] = {0, 128, 255}, b8[2] = {1, 0};
    static int16_t i16[2] = {-32768, 7};
    static int8_t i8[2] = {-128, 127};
    static int64_t i64[2] = {INT64_MIN, INT64_MAX};
    static uint16_t u16[2] = {65535, 1}, bf16[2] = {0x3f80, 0xc000}, f16[1] = {0x3c00};
    static uint32_t u32[1] = {4000000000u};
    static uint64_t u64[1] = {18000000000000000000ull};
    static float r8[256];
    static uint32_t big[N_BIG][3];
    for (int i = 0; i < 256; i++)
        r8[i] = (float)i * 0.5f;
    tcrt_ckpt_entry es[16 + N_BIG];
    char names[N_BIG][64];
    int n = 0;
#define ENT(K, DT, R, D0, D1, PTR, BYTES)                                                                    \
    es[n] =                                                                                                  \
        (tcrt_ckpt_entry){.key = K, .dtype = DT, .rank = R, .dims = {D0, D1}, .bytes = BYTES, .data = PTR};  \
    n++
    ENT("scalars/pi", TCRT_F64, 0, 0, 0, &f64, 8);
    ENT("dense/kernel", TCRT_F32, 2, 2, 3, f32, sizeof f32);
    ENT("dense/bias", TCRT_I32, 1, 4, 0, i32, sizeof i32);
    ENT("dense/bias_u8", TCRT_U8, 1, 3, 0, u8, 3);
    ENT("flags", TCRT_BOOL, 1, 2, 0, b8, 2);
    ENT("i16", TCRT_I16, 1, 2, 0, i16, 4);
    ENT("i8", TCRT_I8, 1, 2, 0, i8, 2);
    ENT("i64", TCRT_I64, 1, 2, 0, i64, 16);
    ENT("u16", TCRT_U16, 1, 2, 0, u16, 4);
    ENT("bf16", TCRT_BF16, 1, 2, 0, bf16, 4);
    ENT("f16", TCRT_F16, 0, 0, 0, f16, 2);
    ENT("u32", TCRT_U32, 1, 1, 0, u32, 4);
    ENT("u64", TCRT_U64, 1, 1, 0, u64, 8);
    ENT("empty", TCRT_F32, 2, 0, 3, NULL, 0); /* zero-size: no data */
    es[n] = (tcrt_ckpt_entry){.key = "rank8",
                              .dtype = TCRT_F32,
                              .rank = 8,
                              .dims = {2, 2, 2, 2, 2, 2, 2, 2},
                              .bytes = sizeof r8,
                              .data = r8};
    n++;
    /* > 4 KiB of keys with long shared prefixes: several data blocks */
    for (int i = 0; i < N_BIG; i++) {
        snprintf(names[i], sizeof names[i], "model/encoder/layer_%03d/attention/%s", (i * 7) % N_BIG,
                 i % 2 ? "kernel" : "bias");
        for (int j = 0; j < 3; j++)
            big[i][j] = (uint32_t)(i * 3 + j);
        ENT(names[i], TCRT_U32, 1, 3, 0, big[i], 12);
    }
#undef ENT
    char prefix[256], idx[300];
    path_of(prefix, sizeof prefix, "model.ckpt");
    ck_assert_msg(tcrt_ckpt_write(prefix, es, n, err, sizeof err) == TCRT_OK, "%s", err);
    snprintf(idx, sizeof idx, "%s.index", prefix);
    ck_assert_int_gt(file_size(idx), 3 * 4096); /* several blocks */
    ck_assert_int_eq(count_tmp(), 0);

    tcrt_ckpt *ck;
    ck_assert_msg(tcrt_ckpt_open(prefix, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_ckpt_count(ck), n);
    for (int i = 1; i < n; i++)
        ck_assert_int_lt(strcmp(tcrt_ckpt_get(ck, i - 1)->key, tcrt_ckpt_get(ck, i)->key), 0);
    for (int i = 0; i < n; i++) {
        const tcrt_ckpt_entry *e = tcrt_ckpt_find(ck, es[i].key);
        ck_assert_msg(e != NULL, "no '%s'", es[i].key);
        ck_assert_int_eq(e->dtype, es[i].dtype);
        ck_assert_int_eq(e->rank, es[i].rank);
        for (int d = 0; d < e->rank; d++)
            ck_assert_int_eq(e->dims[d], es[i].dims[d]);
        ck_assert_uint_eq(e->bytes, es[i].bytes);
        uint8_t buf[1024];
        ck_assert_msg(tcrt_ckpt_read(ck, e, buf, e->bytes, err, sizeof err) == TCRT_OK, "%s", err);
        ck_assert(e->bytes == 0 || memcmp(buf, es[i].data, e->bytes) == 0);
    }
    /* wrong buffer size; an entry of another checkpoint */
    const tcrt_ckpt_entry *k = tcrt_ckpt_find(ck, "dense/kernel");
    float small[2];
    ck_assert_int_eq(tcrt_ckpt_read(ck, k, small, sizeof small, err, sizeof err), TCRT_ERR_ARG);
    assert_err_has("entry 'dense/kernel': 24 bytes, but the buffer is 8");
    tcrt_ckpt_entry fake = *k;
    ck_assert_int_eq(tcrt_ckpt_read(ck, &fake, small, 24, err, sizeof err), TCRT_ERR_ARG);
    tcrt_ckpt_close(ck);

    /* an empty checkpoint (header only) */
    ck_assert_msg(tcrt_ckpt_write(prefix, NULL, 0, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_msg(tcrt_ckpt_open(prefix, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_ckpt_count(ck), 0);
    tcrt_ckpt_close(ck);
}
END_TEST

START_TEST(test_write_rejects)
{
    char prefix[256];
    path_of(prefix, sizeof prefix, "w");
    float v[2] = {1, 2};
    tcrt_ckpt_entry e[2] = {{.key = "x", .dtype = TCRT_F32, .rank = 1, .dims = {2}, .bytes = 8, .data = v},
                            {.key = "x", .dtype = TCRT_F32, .rank = 1, .dims = {2}, .bytes = 8, .data = v}};
    ck_assert_int_eq(tcrt_ckpt_write(prefix, e, 2, err, sizeof err), TCRT_ERR_ARG);
    assert_err_has("key 'x' appears twice");
    e[1].key = "y";
    e[1].bytes = 4;
    ck_assert_int_eq(tcrt_ckpt_write(prefix, e, 2, err, sizeof err), TCRT_ERR_ARG);
    assert_err_has("entry 'y': 4 bytes do not match float32[2]");
    e[1].bytes = 8;
    e[1].dtype = TCRT_STRING;
    ck_assert_int_eq(tcrt_ckpt_write(prefix, e, 2, err, sizeof err), TCRT_ERR_ARG);
    assert_err_has("entry 'y': cannot write dtype 7");
    e[1].dtype = TCRT_F32;
    e[1].dims[0] = -2;
    ck_assert_int_eq(tcrt_ckpt_write(prefix, e, 2, err, sizeof err), TCRT_ERR_ARG);
    assert_err_has("entry 'y': dim 0 is -2");
    e[1].dims[0] = 2;
    e[1].key = "";
    ck_assert_int_eq(tcrt_ckpt_write(prefix, e, 2, err, sizeof err), TCRT_ERR_ARG);
    assert_err_has("entry 1 has no key");
    char idx[300];
    snprintf(idx, sizeof idx, "%s.index", prefix);
    ck_assert_int_eq(file_size(idx), -1);
    ck_assert_int_eq(count_tmp(), 0);
}
END_TEST

/* ---- hand-made tables for bad input ---- */

static void put_varint(unsigned char *b, size_t *n, uint64_t v)
{
    while (v >= 0x80) {
        b[(*n)++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    b[(*n)++] = (unsigned char)v;
}

static void put32(unsigned char *b, size_t *n, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[(*n)++] = (unsigned char)(v >> (8 * i));
}

/* Appends a block (raw contents) and its trailer; returns its offset. */
static size_t put_block(unsigned char *f, size_t *n, const unsigned char *blk, size_t bn, int type)
{
    size_t off = *n;
    memcpy(f + *n, blk, bn);
    *n += bn;
    f[(*n)++] = (unsigned char)type;
    put32(f, n, tcrt_crc32c_mask(tcrt_crc32c(0, f + off, bn + 1)));
    return off;
}

typedef struct kv {
    const char *key;
    size_t klen;
    const unsigned char *val;
    size_t vlen;
} kv;

/* A block of entries, each a restart point (shared 0). */
static size_t make_block(unsigned char *b, const kv *e, int n)
{
    size_t len = 0;
    uint32_t starts[64];
    for (int i = 0; i < n; i++) {
        starts[i] = (uint32_t)len;
        put_varint(b, &len, 0);
        put_varint(b, &len, e[i].klen);
        put_varint(b, &len, e[i].vlen);
        memcpy(b + len, e[i].key, e[i].klen);
        len += e[i].klen;
        memcpy(b + len, e[i].val, e[i].vlen);
        len += e[i].vlen;
    }
    for (int i = 0; i < n; i++)
        put32(b, &len, starts[i]);
    put32(b, &len, (uint32_t)n);
    return len;
}

/* An index file: one data block of blk (bn bytes, compression `type`), an
 * empty metaindex, an index block with key `sep`, the footer. */
static size_t make_table_raw(unsigned char *f, const unsigned char *blk, size_t bn, int type, const char *sep)
{
    size_t n = 0, dn = bn;
    size_t doff = put_block(f, &n, blk, bn, type);
    unsigned char meta[8];
    size_t mn = 0;
    put32(meta, &mn, 0);
    put32(meta, &mn, 1);
    size_t moff = put_block(f, &n, meta, mn, 0);
    unsigned char h[20], ib[256];
    size_t hn = 0;
    put_varint(h, &hn, doff);
    put_varint(h, &hn, dn);
    kv ie = {sep, strlen(sep), h, hn};
    size_t in = make_block(ib, &ie, 1);
    size_t ioff = put_block(f, &n, ib, in, 0);
    size_t fstart = n;
    put_varint(f, &n, moff);
    put_varint(f, &n, mn);
    put_varint(f, &n, ioff);
    put_varint(f, &n, in);
    while (n < fstart + 40)
        f[n++] = 0;
    put32(f, &n, 0x8b80fb57u);
    put32(f, &n, 0xdb477524u);
    return n;
}

static const unsigned char hdr_ok[] = {0x08, 0x01, 0x1a, 0x02, 0x08, 0x01};

/* prefix "t" in the test folder: the index from entries (the header first
 * unless no_header) and a data shard of `data_n` bytes 0..255. */
static void make_ckpt(const kv *e, int n, bool no_header, size_t data_n, char *prefix, size_t pn)
{
    kv all[32];
    int m = 0;
    if (!no_header)
        all[m++] = (kv){"", 0, hdr_ok, sizeof hdr_ok};
    for (int i = 0; i < n; i++)
        all[m++] = e[i];
    static unsigned char blk[65536], f[70000];
    size_t bn = make_block(blk, all, m);
    size_t fn = make_table_raw(f, blk, bn, 0, "zzzz");
    path_of(prefix, pn, "t");
    char p[300];
    snprintf(p, sizeof p, "%s.index", prefix);
    spit(p, f, fn);
    unsigned char *d = malloc(data_n + 1);
    for (size_t i = 0; i < data_n; i++)
        d[i] = (unsigned char)i;
    snprintf(p, sizeof p, "%s.data-00000-of-00001", prefix);
    spit(p, d, data_n);
    free(d);
}

static tcrt_status open_fails(const char *prefix)
{
    tcrt_ckpt *ck = (tcrt_ckpt *)1;
    err[0] = 0;
    tcrt_status s = tcrt_ckpt_open(prefix, &ck, err, sizeof err);
    ck_assert_int_ne(s, TCRT_OK);
    ck_assert_ptr_null(ck);
    ck_assert_msg(strstr(err, prefix) != NULL, "error '%s' does not name the file", err);
    return s;
}

/* entry proto: dtype float, shape [2], offset 0, size 8, crc of bytes 0..7 */
static size_t entry_f32x2(unsigned char *v, uint32_t masked_crc)
{
    size_t n = 0;
    v[n++] = 0x08, v[n++] = 0x01; /* dtype 1 */
    v[n++] = 0x12, v[n++] = 0x04, v[n++] = 0x12, v[n++] = 0x02, v[n++] = 0x08,
    v[n++] = 0x02;                /* shape {dim {size 2}} */
    v[n++] = 0x28, v[n++] = 0x08; /* size 8 */
    v[n++] = 0x35;                /* crc32c fixed32 */
    put32(v, &n, masked_crc);
    return n;
}

START_TEST(test_bad_hand_made)
{
    char prefix[256], p[300];
    unsigned char bytes8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    uint32_t crc = tcrt_crc32c_mask(tcrt_crc32c(0, bytes8, 8));
    unsigned char v[64];
    size_t vn = entry_f32x2(v, crc);
    kv good = {"w", 1, v, vn};

    /* the hand-made table itself is good */
    make_ckpt(&good, 1, false, 8, prefix, sizeof prefix);
    tcrt_ckpt *ck;
    ck_assert_msg(tcrt_ckpt_open(prefix, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    float w[2];
    ck_assert_msg(tcrt_ckpt_read(ck, tcrt_ckpt_find(ck, "w"), w, 8, err, sizeof err) == TCRT_OK, "%s", err);
    tcrt_ckpt_close(ck);

    /* truncated data shard */
    make_ckpt(&good, 1, false, 6, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has(
        "t.data-00000-of-00001: entry 'w' (offset 0, 8 bytes) runs past the end of the shard (6 bytes)");

    /* missing data shard */
    make_ckpt(&good, 1, false, 8, prefix, sizeof prefix);
    snprintf(p, sizeof p, "%s.data-00000-of-00001", prefix);
    ck_assert_int_eq(unlink(p), 0);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_IO);
    assert_err_has("t.data-00000-of-00001: cannot open data shard (for 'w'): No such file or directory");

    /* data CRC mismatch: the shard changes after open */
    make_ckpt(&good, 1, false, 8, prefix, sizeof prefix);
    ck_assert_msg(tcrt_ckpt_open(prefix, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    bytes8[3] ^= 0x10;
    spit(p, bytes8, 8);
    ck_assert_int_eq(tcrt_ckpt_read(ck, tcrt_ckpt_find(ck, "w"), w, 8, err, sizeof err), TCRT_ERR_FORMAT);
    assert_err_has("t.data-00000-of-00001: entry 'w': checksum mismatch (stored 0x");
    /* ... and is truncated after open */
    spit(p, bytes8, 5);
    ck_assert_int_eq(tcrt_ckpt_read(ck, tcrt_ckpt_find(ck, "w"), w, 8, err, sizeof err), TCRT_ERR_FORMAT);
    assert_err_has("t.data-00000-of-00001: entry 'w': data shard truncated (5 of 8 bytes)");
    tcrt_ckpt_close(ck);

    /* no header */
    make_ckpt(&good, 1, true, 8, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: no header entry (the first key is 'w')");

    /* keys out of order */
    kv two[2] = {{"x", 1, v, vn}, {"w", 1, v, vn}};
    make_ckpt(two, 2, false, 8, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: key 'w' out of order");

    /* a dtype tfcc does not know (complex64 = 8) */
    unsigned char v2[64];
    memcpy(v2, v, vn);
    v2[1] = 8;
    kv cplx = {"z", 1, v2, vn};
    make_ckpt(&cplx, 1, false, 8, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: entry 'z': dtype 8 is not supported");

    /* size that does not match dtype and shape */
    memcpy(v2, v, vn);
    v2[9] = 12;
    kv badsize = {"s", 1, v2, vn};
    make_ckpt(&badsize, 1, false, 16, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: entry 's': size 12 does not match its dtype and shape (8 bytes)");

    /* shard id 1 of 1 */
    unsigned char v3[64];
    memcpy(v3, v, vn);
    v3[vn] = 0x18, v3[vn + 1] = 0x01; /* shard_id 1 */
    kv badshard = {"q", 1, v3, vn + 2};
    make_ckpt(&badshard, 1, false, 8, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: entry 'q': shard_id 1 (num_shards is 1)");

    /* negative dim, rank 9, unknown rank */
    unsigned char neg[] = {0x08, 0x01, 0x12, 0x0d, 0x12, 0x0b, 0x08, 0xfe, 0xff,
                           0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    kv negdim = {"n", 1, neg, sizeof neg};
    make_ckpt(&negdim, 1, false, 8, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: entry 'n': dim 0 is -2");
    unsigned char r9[32] = {0x08, 0x01, 0x12, 18};
    for (int i = 0; i < 9; i++)
        r9[4 + 2 * i] = 0x12, r9[5 + 2 * i] = 0x00;
    kv rank9 = {"r", 1, r9, 22};
    make_ckpt(&rank9, 1, false, 8, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: entry 'r': rank above 8");
    unsigned char unk[] = {0x08, 0x01, 0x12, 0x02, 0x18, 0x01};
    kv unkrank = {"u", 1, unk, sizeof unk};
    make_ckpt(&unkrank, 1, false, 8, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: entry 'u': shape of unknown rank");

    /* a huge length inside a proto, a varint that does not end */
    unsigned char huge[] = {0x08, 0x01, 0x12, 0xff, 0xff, 0xff, 0xff, 0x0f};
    kv hugelen = {"h", 1, huge, sizeof huge};
    make_ckpt(&hugelen, 1, false, 8, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: entry 'h': length-delimited field runs past the end of its message");
    unsigned char noend[] = {0x08, 0x81, 0x82, 0x83};
    kv noendv = {"v", 1, noend, sizeof noend};
    make_ckpt(&noendv, 1, false, 8, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: entry 'v': varint does not end inside its message");

    /* header: big endian, num_shards 0, a newer format */
    unsigned char big_endian[] = {0x08, 0x01, 0x10, 0x01};
    kv be[1] = {{"", 0, big_endian, sizeof big_endian}};
    make_ckpt(be, 1, true, 8, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: header: big-endian checkpoints are not supported");
    unsigned char zero_shards[] = {0x1a, 0x02, 0x08, 0x01};
    kv zs[1] = {{"", 0, zero_shards, sizeof zero_shards}};
    make_ckpt(zs, 1, true, 8, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: header: num_shards 0 (must be 1..99999)");
    unsigned char newer[] = {0x08, 0x01, 0x1a, 0x04, 0x08, 0x03, 0x10, 0x02};
    kv nw[1] = {{"", 0, newer, sizeof newer}};
    make_ckpt(nw, 1, true, 8, prefix, sizeof prefix);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: header: the checkpoint needs a reader of version 2 (this one is 1)");

    /* sliced entry: listed, not read */
    unsigned char sl[64];
    memcpy(sl, v, vn);
    sl[vn] = 0x3a, sl[vn + 1] = 0x00; /* slices {} */
    kv sliced = {"p", 1, sl, vn + 2};
    make_ckpt(&sliced, 1, false, 8, prefix, sizeof prefix);
    ck_assert_msg(tcrt_ckpt_open(prefix, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_ckpt_read(ck, tcrt_ckpt_find(ck, "p"), w, 8, err, sizeof err), TCRT_ERR_FORMAT);
    assert_err_has("t.index: entry 'p': sliced (partitioned) tensors are not supported");
    tcrt_ckpt_close(ck);
}
END_TEST

/* A valid index (from hand-made blocks) with its bytes damaged. */
START_TEST(test_bad_table)
{
    char prefix[256], p[300];
    unsigned char bytes8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    unsigned char v[64];
    size_t vn = entry_f32x2(v, tcrt_crc32c_mask(tcrt_crc32c(0, bytes8, 8)));
    kv good = {"w", 1, v, vn};
    make_ckpt(&good, 1, false, 8, prefix, sizeof prefix);
    snprintf(p, sizeof p, "%s.index", prefix);
    size_t n;
    unsigned char *orig = slurp(p, &n), *f = malloc(n + 64);

    /* bad magic */
    memcpy(f, orig, n);
    f[n - 1] ^= 1;
    spit(p, f, n);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: bad magic number 0xda4775248b80fb57 (not a TensorFlow checkpoint index)");

    /* truncated index: too short for a footer, and cut mid-way */
    spit(p, orig, 20);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: 20 bytes, too short for a table footer (48 bytes)");
    spit(p, orig, n - 10);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: bad magic number");

    /* a flipped byte in the data block */
    memcpy(f, orig, n);
    f[7] ^= 0x40;
    spit(p, f, n);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: data block at offset 0: checksum mismatch (stored 0x");

    /* a flipped byte in a block's trailer CRC (metaindex) */
    memcpy(f, orig, n);
    size_t fstart = n - 48, fp = fstart;
    uint64_t moff = f[fp]; /* small offsets: one-byte varints */
    f[moff + 8 + 2] ^= 1;
    spit(p, f, n);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: metaindex block at offset");

    /* the index handle past the end of the file */
    memcpy(f, orig, n);
    fp = fstart + 2; /* after the metaindex handle (two one-byte varints) */
    size_t k = fp;
    unsigned char ioff = f[fp];
    put_varint(f, &k, ioff);
    put_varint(f, &k, 1000000);
    spit(p, f, n);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: index block (offset ");
    assert_err_has(", 1000000 bytes) runs past the end of the file");
    /* a handle varint that does not end in the footer */
    memcpy(f, orig, n);
    memset(f + fstart, 0xff, 40);
    spit(p, f, n);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: footer: block handle varint does not end");

    /* a block entry with a huge value length (valid CRC) */
    static unsigned char blk[256], tab[1024];
    size_t bn = 0;
    put_varint(blk, &bn, 0);
    put_varint(blk, &bn, 0);
    put_varint(blk, &bn, 0xffffffffu);
    put32(blk, &bn, 0);
    put32(blk, &bn, 1);
    size_t tn = make_table_raw(tab, blk, bn, 0, "zz");
    spit(p, tab, tn);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: data block at offset 0: entry at byte 0: entry runs past the end of the block");
    /* a varint running into the restart array */
    bn = 0;
    blk[bn++] = 0x80, blk[bn++] = 0x80;
    put32(blk, &bn, 0);
    put32(blk, &bn, 1);
    tn = make_table_raw(tab, blk, bn, 0, "zz");
    spit(p, tab, tn);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has(
        "t.index: data block at offset 0: entry at byte 0: entry header varint does not end inside "
        "the block");
    /* a restart count larger than the block */
    bn = 0;
    put32(blk, &bn, 0);
    put32(blk, &bn, 1000);
    tn = make_table_raw(tab, blk, bn, 0, "zz");
    spit(p, tab, tn);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: data block at offset 0: 1000 restart points do not fit in its 8 bytes");
    /* a shared prefix longer than the previous key */
    kv hdr = {"", 0, hdr_ok, sizeof hdr_ok};
    bn = make_block(blk, &hdr, 1);
    bn -= 8; /* drop the restart array; add an entry sharing 3 bytes of "" */
    put_varint(blk, &bn, 3);
    put_varint(blk, &bn, 1);
    put_varint(blk, &bn, 0);
    blk[bn++] = 'x';
    put32(blk, &bn, 0);
    put32(blk, &bn, 1);
    tn = make_table_raw(tab, blk, bn, 0, "zz");
    spit(p, tab, tn);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("shared key prefix longer than the previous key");
    /* a restart point inside an entry */
    bn = make_block(blk, &hdr, 1);
    bn -= 8;
    put32(blk, &bn, 0);
    put32(blk, &bn, 2);
    put32(blk, &bn, 2);
    tn = make_table_raw(tab, blk, bn, 0, "zz");
    spit(p, tab, tn);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: data block at offset 0: restart point 1 (offset 2) is not at an entry");
    /* a key above its index key */
    kv es[2] = {hdr, good};
    bn = make_block(blk, es, 2);
    tn = make_table_raw(tab, blk, bn, 0, "a");
    spit(p, tab, tn);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: key 'w' is above its index key");
    /* an unknown compression type; a bad snappy block */
    bn = make_block(blk, es, 2);
    tn = make_table_raw(tab, blk, bn, 2, "zz");
    spit(p, tab, tn);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: data block at offset 0: unknown compression type 2");
    unsigned char sn[] = {0x40, 0x00, 'a', 0x09, 0x05}; /* 64 bytes: "a" then a copy from offset 5 */
    tn = make_table_raw(tab, sn, sizeof sn, 1, "zz");
    spit(p, tab, tn);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: data block at offset 0: snappy copy outside the output");
    unsigned char sn2[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x00};
    tn = make_table_raw(tab, sn2, sizeof sn2, 1, "zz");
    spit(p, tab, tn);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: data block at offset 0: snappy length too large for its block");

    /* a good snappy block, by hand: the header and 'w' as one literal, then
     * the restart array written as a literal + copies */
    unsigned char raw[128];
    size_t rn = make_block(raw, es, 2);
    unsigned char sb[256];
    size_t sbn = 0;
    put_varint(sb, &sbn, rn);
    sb[sbn++] = (unsigned char)((rn - 8 - 1) << 2); /* literal of rn - 8 bytes (< 60) */
    memcpy(sb + sbn, raw, rn - 8);
    sbn += rn - 8;
    sb[sbn++] = (unsigned char)((8 - 1) << 2);
    memcpy(sb + sbn, raw + rn - 8, 8);
    sbn += 8;
    tn = make_table_raw(tab, sb, sbn, 1, "zz");
    spit(p, tab, tn);
    tcrt_ckpt *ck;
    ck_assert_msg(tcrt_ckpt_open(prefix, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_ckpt_count(ck), 1);
    ck_assert_str_eq(tcrt_ckpt_get(ck, 0)->key, "w");
    tcrt_ckpt_close(ck);

    /* the index file over 1 GiB (sparse) */
    FILE *big = fopen(p, "wb");
    ck_assert_ptr_nonnull(big);
    ck_assert_int_eq(fseeko(big, ((off_t)1 << 30) + 100, SEEK_SET), 0);
    fputc(0, big);
    fclose(big);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("t.index: index file of 1073741925 bytes is over the 1073741824-byte limit");

    /* no index at all */
    unlink(p);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_IO);
    assert_err_has("t.index: cannot open: No such file or directory");
    free(orig);
    free(f);
}
END_TEST

/* Formats TensorFlow writes that tcrt_ckpt_write does not: several shards,
 * per-slice entries (keys starting with a NUL byte), Snappy back-references,
 * restart points inside a block; and an empty table. */
START_TEST(test_more_formats)
{
    char prefix[256], p[300];
    uint8_t bytes[16];
    for (int i = 0; i < 16; i++)
        bytes[i] = (uint8_t)(i * 3);
    /* two shards: 'a' = shard 0 bytes 0..7, 'b' = shard 1 bytes 4..11 */
    unsigned char hdr2[] = {0x08, 0x02, 0x1a, 0x02, 0x08, 0x01};
    unsigned char va[64], vb[64];
    size_t na = entry_f32x2(va, tcrt_crc32c_mask(tcrt_crc32c(0, bytes, 8)));
    size_t nb = 0;
    vb[nb++] = 0x08, vb[nb++] = 0x01;
    vb[nb++] = 0x12, vb[nb++] = 0x04, vb[nb++] = 0x12, vb[nb++] = 0x02, vb[nb++] = 0x08, vb[nb++] = 0x02;
    vb[nb++] = 0x18, vb[nb++] = 0x01; /* shard_id 1 */
    vb[nb++] = 0x20, vb[nb++] = 0x04; /* offset 4 */
    vb[nb++] = 0x28, vb[nb++] = 0x08;
    vb[nb++] = 0x35;
    put32(vb, &nb, tcrt_crc32c_mask(tcrt_crc32c(0, bytes + 4, 8)));
    unsigned char slice_key[] = {0x00, 0x01, 'a'};
    kv es[4] = {{"", 0, hdr2, sizeof hdr2},
                {(const char *)slice_key, sizeof slice_key, va, na}, /* a slice's data entry: not listed */
                {"a", 1, va, na},
                {"b", 1, vb, nb}};
    static unsigned char blk[1024], tab[2048];
    size_t bn = make_block(blk, es, 4);
    size_t tn = make_table_raw(tab, blk, bn, 0, "c");
    path_of(prefix, sizeof prefix, "s");
    snprintf(p, sizeof p, "%s.index", prefix);
    spit(p, tab, tn);
    snprintf(p, sizeof p, "%s.data-00000-of-00002", prefix);
    spit(p, bytes, 8);
    snprintf(p, sizeof p, "%s.data-00001-of-00002", prefix);
    spit(p, bytes, 16);
    tcrt_ckpt *ck;
    ck_assert_msg(tcrt_ckpt_open(prefix, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_ckpt_count(ck), 2);
    uint8_t got[8];
    ck_assert_msg(tcrt_ckpt_read(ck, tcrt_ckpt_find(ck, "a"), got, 8, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert(memcmp(got, bytes, 8) == 0);
    ck_assert_msg(tcrt_ckpt_read(ck, tcrt_ckpt_find(ck, "b"), got, 8, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert(memcmp(got, bytes + 4, 8) == 0);
    tcrt_ckpt_close(ck);
    /* shard 1 missing */
    unlink(p);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_IO);
    assert_err_has("s.data-00001-of-00002: cannot open data shard (for 'b')");

    /* Snappy with back-references: the block of make_ckpt's 'w' entry, its
     * restart array "00000000 RR000000 02000000" coded as literal "00",
     * copy(len 3, offset 1: overlapping), literal RR, copy(len 3, offset 4,
     * 4-byte form), literal "02", copy(len 3, offset 4, 2-byte form). */
    unsigned char v[64];
    uint8_t b8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    size_t vn = entry_f32x2(v, tcrt_crc32c_mask(tcrt_crc32c(0, b8, 8)));
    kv two[2] = {{"", 0, hdr_ok, sizeof hdr_ok}, {"w", 1, v, vn}};
    unsigned char raw[256];
    size_t rn = make_block(raw, two, 2);
    ck_assert_uint_eq(raw[rn - 12], 0); /* restart 0 */
    ck_assert_uint_eq(raw[rn - 4], 2);  /* two restarts */
    size_t x = rn - 12, sn = 0;         /* entries before the restart array */
    unsigned char sb[512];
    put_varint(sb, &sn, rn);
    sb[sn++] = (unsigned char)(x << 2); /* literal of x + 1 bytes (x < 60) */
    memcpy(sb + sn, raw, x + 1);
    sn += x + 1;
    sb[sn++] = (3 - 1) << 2 | 2, sb[sn++] = 1, sb[sn++] = 0; /* copy 3 from 1 back */
    sb[sn++] = 0 << 2, sb[sn++] = raw[rn - 8];               /* literal RR */
    sb[sn++] = (3 - 1) << 2 | 3, sb[sn++] = 4, sb[sn++] = 0, sb[sn++] = 0, sb[sn++] = 0; /* 3 from 4 back */
    sb[sn++] = 0 << 2, sb[sn++] = 2;                                                     /* literal 02 */
    sb[sn++] = (3 - 1) << 2 | 2, sb[sn++] = 4, sb[sn++] = 0;                             /* 3 from 4 back */
    tn = make_table_raw(tab, sb, sn, 1, "zz");
    path_of(prefix, sizeof prefix, "z");
    snprintf(p, sizeof p, "%s.index", prefix);
    spit(p, tab, tn);
    snprintf(p, sizeof p, "%s.data-00000-of-00001", prefix);
    spit(p, b8, 8);
    ck_assert_msg(tcrt_ckpt_open(prefix, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_ckpt_count(ck), 1);
    ck_assert_msg(tcrt_ckpt_read(ck, tcrt_ckpt_find(ck, "w"), got, 8, err, sizeof err) == TCRT_OK, "%s", err);
    tcrt_ckpt_close(ck);
    /* ... one byte short of its stated length */
    sn -= 3;
    sb[sn++] = (2 - 1) << 2 | 2, sb[sn++] = 4, sb[sn++] = 0;
    tn = make_table_raw(tab, sb, sn, 1, "zz");
    snprintf(p, sizeof p, "%s.index", prefix);
    spit(p, tab, tn);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("z.index: data block at offset 0: snappy data shorter than its length");

    /* a restart point at an entry that shares a key prefix */
    kv three[3] = {{"", 0, hdr_ok, sizeof hdr_ok}, {"w", 1, v, vn}, {"wx", 2, v, vn}};
    bn = 0;
    uint32_t starts[3];
    for (int i = 0; i < 3; i++) {
        size_t shared = i == 2 ? 1 : 0;
        starts[i] = (uint32_t)bn;
        put_varint(blk, &bn, shared);
        put_varint(blk, &bn, three[i].klen - shared);
        put_varint(blk, &bn, three[i].vlen);
        memcpy(blk + bn, three[i].key + shared, three[i].klen - shared);
        bn += three[i].klen - shared;
        memcpy(blk + bn, three[i].val, three[i].vlen);
        bn += three[i].vlen;
    }
    put32(blk, &bn, starts[0]);
    put32(blk, &bn, starts[2]); /* "wx" is stored with shared = 1 */
    put32(blk, &bn, 2);
    tn = make_table_raw(tab, blk, bn, 0, "zz");
    spit(p, tab, tn);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("entry at a restart point shares a key prefix");
    /* without that restart point the same block is fine */
    bn -= 8;
    put32(blk, &bn, 1);
    tn = make_table_raw(tab, blk, bn, 0, "zz");
    spit(p, tab, tn);
    ck_assert_msg(tcrt_ckpt_open(prefix, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_ckpt_count(ck), 2);
    ck_assert_ptr_nonnull(tcrt_ckpt_find(ck, "wx"));
    tcrt_ckpt_close(ck);

    /* an empty table: the index block lists no data block */
    size_t n = 0;
    unsigned char empty[8];
    size_t en = 0;
    put32(empty, &en, 0);
    put32(empty, &en, 1);
    size_t moff = put_block(tab, &n, empty, en, 0);
    size_t ioff = put_block(tab, &n, empty, en, 0);
    size_t fstart = n;
    put_varint(tab, &n, moff);
    put_varint(tab, &n, en);
    put_varint(tab, &n, ioff);
    put_varint(tab, &n, en);
    while (n < fstart + 40)
        tab[n++] = 0;
    put32(tab, &n, 0x8b80fb57u);
    put32(tab, &n, 0xdb477524u);
    spit(p, tab, n);
    ck_assert_int_eq(open_fails(prefix), TCRT_ERR_FORMAT);
    assert_err_has("z.index: no header entry (the table is empty)");
}
END_TEST

/* ---- atomic writes ---- */

static void write_xy(const char *prefix, float x, float y)
{
    float vx[2] = {x, x}, vy[1] = {y};
    tcrt_ckpt_entry e[2] = {{.key = "x", .dtype = TCRT_F32, .rank = 1, .dims = {2}, .bytes = 8, .data = vx},
                            {.key = "y", .dtype = TCRT_F32, .rank = 0, .bytes = 4, .data = vy}};
    ck_assert_msg(tcrt_ckpt_write(prefix, e, 2, err, sizeof err) == TCRT_OK, "%s", err);
}

static void assert_xy(const char *prefix, float x, float y)
{
    tcrt_ckpt *ck;
    ck_assert_msg(tcrt_ckpt_open(prefix, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_ckpt_count(ck), 2);
    float vx[2], vy;
    ck_assert_msg(tcrt_ckpt_read(ck, tcrt_ckpt_find(ck, "x"), vx, 8, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_msg(tcrt_ckpt_read(ck, tcrt_ckpt_find(ck, "y"), &vy, 4, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert(vx[0] == x && vx[1] == x && vy == y);
    tcrt_ckpt_close(ck);
}

START_TEST(test_atomic_replace)
{
    char prefix[256];
    path_of(prefix, sizeof prefix, "ck");
    write_xy(prefix, 1, 2);
    assert_xy(prefix, 1, 2);
    /* a different checkpoint under the same prefix replaces it completely */
    static float big[5000];
    for (int i = 0; i < 5000; i++)
        big[i] = (float)i;
    tcrt_ckpt_entry e = {
        .key = "z", .dtype = TCRT_F32, .rank = 1, .dims = {5000}, .bytes = sizeof big, .data = big};
    ck_assert_msg(tcrt_ckpt_write(prefix, &e, 1, err, sizeof err) == TCRT_OK, "%s", err);
    tcrt_ckpt *ck;
    ck_assert_msg(tcrt_ckpt_open(prefix, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_ckpt_count(ck), 1);
    ck_assert_ptr_null(tcrt_ckpt_find(ck, "x"));
    static float back[5000];
    ck_assert_msg(tcrt_ckpt_read(ck, tcrt_ckpt_find(ck, "z"), back, sizeof back, err, sizeof err) == TCRT_OK,
                  "%s", err);
    ck_assert(memcmp(back, big, sizeof big) == 0);
    tcrt_ckpt_close(ck);
    /* and back to a small one: the shard shrinks */
    write_xy(prefix, 3, 4);
    assert_xy(prefix, 3, 4);
    char p[300];
    snprintf(p, sizeof p, "%s.data-00000-of-00001", prefix);
    ck_assert_int_eq(file_size(p), 12);
    ck_assert_int_eq(count_tmp(), 0);
}
END_TEST

START_TEST(test_atomic_failures)
{
    char prefix[256], p[300];
    path_of(prefix, sizeof prefix, "ck");
    write_xy(prefix, 1, 2);

    /* a folder that does not exist */
    char nodir[300];
    snprintf(nodir, sizeof nodir, "%s/nope/ck", dir);
    float v = 0;
    tcrt_ckpt_entry e = {.key = "x", .dtype = TCRT_F32, .rank = 0, .bytes = 4, .data = &v};
    ck_assert_int_eq(tcrt_ckpt_write(nodir, &e, 1, err, sizeof err), TCRT_ERR_IO);
    assert_err_has("nope/ck.data-00000-of-00001: cannot create: No such file or directory");

    /* the write fails part-way (file size limit): the old checkpoint stays,
     * no temporary is left */
    static float big[100000];
    tcrt_ckpt_entry eb = {
        .key = "x", .dtype = TCRT_F32, .rank = 1, .dims = {100000}, .bytes = sizeof big, .data = big};
    struct rlimit old, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 65536;
    signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    tcrt_status s = tcrt_ckpt_write(prefix, &eb, 1, err, sizeof err);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_DFL);
    ck_assert_int_eq(s, TCRT_ERR_IO);
    assert_err_has("ck.data-00000-of-00001: write failed: File too large");
    ck_assert_int_eq(count_tmp(), 0);
    assert_xy(prefix, 1, 2);

    /* the index cannot be renamed into place (a folder has its name) */
    char other[256];
    path_of(other, sizeof other, "o");
    snprintf(p, sizeof p, "%s.index", other);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    ck_assert_int_ne(tcrt_ckpt_write(other, &e, 1, err, sizeof err), TCRT_OK);
    assert_err_has("o.index: cannot rename into place");
    ck_assert_int_eq(count_tmp(), 0);

    /* a read-only folder (not as root: root writes anyway) */
    if (geteuid() != 0) {
        ck_assert_int_eq(chmod(dir, 0555), 0);
        ck_assert_int_eq(tcrt_ckpt_write(prefix, &e, 1, err, sizeof err), TCRT_ERR_IO);
        assert_err_has("ck.data-00000-of-00001: cannot create: Permission denied");
        ck_assert_int_eq(chmod(dir, 0755), 0);
        ck_assert_int_eq(count_tmp(), 0);
        assert_xy(prefix, 1, 2);
    }
}
END_TEST

/* ---- model state ---- */

START_TEST(test_model_save_restore)
{
    static _Alignas(64) uint8_t arena[256];
    tcrt_var vars[3] = {
        {.name = "dense/kernel", .dtype = TCRT_F32, .rank = 2, .dims = {2, 3}, .bytes = 24, .offset = 0},
        {.name = "dense/bias", .dtype = TCRT_F32, .rank = 1, .dims = {3}, .bytes = 12, .offset = 64},
        {.name = "step", .dtype = TCRT_I64, .rank = 0, .bytes = 8, .offset = 128},
    };
    tcrt_model m = {.name = "m", .arena_bytes = sizeof arena, .n_vars = 3, .vars = vars};
    float k[6] = {1, 2, 3, 4, 5, 6}, b[3] = {-1, -2, -3};
    int64_t step = 42;
    memcpy(arena, k, 24);
    memcpy(arena + 64, b, 12);
    memcpy(arena + 128, &step, 8);
    char prefix[256];
    path_of(prefix, sizeof prefix, "model");
    ck_assert_msg(tcrt_model_save(&m, arena, prefix, err, sizeof err) == TCRT_OK, "%s", err);
    memset(arena, 0, sizeof arena);
    ck_assert_msg(tcrt_model_restore(&m, arena, prefix, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert(memcmp(arena, k, 24) == 0);
    ck_assert(memcmp(arena + 64, b, 12) == 0);
    ck_assert(memcmp(arena + 128, &step, 8) == 0);

    /* mismatches, each naming the variable; nothing written */
    memset(arena, 0x55, sizeof arena);
    tcrt_var bad[3];
    memcpy(bad, vars, sizeof bad);
    bad[0].dims[0] = 3, bad[0].dims[1] = 2;
    m.vars = bad;
    ck_assert_int_eq(tcrt_model_restore(&m, arena, prefix, err, sizeof err), TCRT_ERR_SHAPE);
    assert_err_has(
        "model.index: variable 'dense/kernel': wrong shape: the model has float32[3,2], the checkpoint "
        "float32[2,3]");
    ck_assert_int_eq(arena[0], 0x55);
    memcpy(bad, vars, sizeof bad);
    bad[2].dtype = TCRT_I32, bad[2].bytes = 4;
    ck_assert_int_eq(tcrt_model_restore(&m, arena, prefix, err, sizeof err), TCRT_ERR_DTYPE);
    assert_err_has("variable 'step': wrong dtype: the model has int32[], the checkpoint int64[]");
    memcpy(bad, vars, sizeof bad);
    bad[1].name = "dense/gamma";
    ck_assert_int_eq(tcrt_model_restore(&m, arena, prefix, err, sizeof err), TCRT_ERR_FORMAT);
    assert_err_has("model.index: no variable 'dense/gamma' in the checkpoint");
    ck_assert_int_eq(arena[0], 0x55);

    /* extra checkpoint entries are ignored */
    m.vars = vars + 1;
    m.n_vars = 2;
    ck_assert_msg(tcrt_model_restore(&m, arena, prefix, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert(memcmp(arena + 64, b, 12) == 0);
    /* a variable outside the arena */
    m.arena_bytes = 100;
    ck_assert_int_eq(tcrt_model_save(&m, arena, prefix, err, sizeof err), TCRT_ERR_ARG);
    assert_err_has("variable 'step' lies outside the arena");
}
END_TEST

/* A model whose variables are half_plus_two's restores TensorFlow's values. */
START_TEST(test_model_restore_tf)
{
    static _Alignas(64) uint8_t arena[64];
    tcrt_var vars[3] = {
        {.name = "c", .dtype = TCRT_F32, .bytes = 4, .offset = 0},
        {.name = "a", .dtype = TCRT_F32, .bytes = 4, .offset = 4},
        {.name = "b", .dtype = TCRT_F32, .bytes = 4, .offset = 8},
    };
    tcrt_model m = {.name = "h", .arena_bytes = sizeof arena, .n_vars = 3, .vars = vars};
    char p[1024];
    model_path(p, sizeof p, "github-tensorflow/cc_saved_model_half_plus_two/variables/variables");
    ck_assert_msg(tcrt_model_restore(&m, arena, p, err, sizeof err) == TCRT_OK, "%s", err);
    float v[3];
    memcpy(v, arena, 12);
    ck_assert(v[0] == 3.0f && v[1] == 0.5f && v[2] == 2.0f);
}
END_TEST

int main(int argc, char **argv)
{
    struct stat sb;
    if (argc > 1 && stat(argv[1], &sb) == 0 && S_ISDIR(sb.st_mode))
        models_dir = argv[1];
    Suite *s = suite_create("ckpt");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_crc32c_vectors);
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_write_rejects);
    tcase_add_test(tc, test_bad_hand_made);
    tcase_add_test(tc, test_bad_table);
    tcase_add_test(tc, test_more_formats);
    tcase_add_test(tc, test_atomic_replace);
    tcase_add_test(tc, test_atomic_failures);
    tcase_add_test(tc, test_model_save_restore);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    if (models_dir) {
        TCase *tcc = tcase_create("corpus");
        tcase_add_checked_fixture(tcc, setup, teardown);
        tcase_add_test(tcc, test_corpus_half_plus_two);
        tcase_add_test(tcc, test_corpus_snappy);
        tcase_add_test(tcc, test_corpus_listing);
        tcase_add_test(tcc, test_corpus_missing_shard);
        tcase_add_test(tcc, test_corpus_reencode);
        tcase_add_test(tcc, test_model_restore_tf);
        tcase_set_timeout(tcc, 60);
        suite_add_tcase(s, tcc);
    }
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (failed)
        return 1;
    return models_dir ? 0 : 77;
}
