/* tests/targets/app.c - a phone-app-style user of a compiled model.
 *
 * Includes kws.h (tfcc compile ... --emit lib --name kws) and uses only its
 * API and tcrt.h: finds the input by its tensor name in the signature, feeds
 * it (checked against dtype and shape) from raw float32 bytes in a file, runs,
 * and writes the result, read through its named accessor, as raw bytes.
 * It then runs the model again on an arena of its own (kws_init) that starts
 * filled with 0xff bytes (NaN floats) and requires byte-identical results: no
 * kernel may read arena bytes the run has not written (neither kws_new nor the
 * standalone executables zero the arena).
 * test_targets builds it against libkws.a for the host and for aarch64 (run
 * under qemu-aarch64) and compares the output with the model's reference.
 * usage: app INPUT_NAME IN.f32 OUT.f32
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kws.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: app INPUT_NAME IN.f32 OUT.f32\n");
        return 2;
    }
    const tcrt_model *sig = kws_signature();
    int i = tcrt_find_arg(sig, argv[1]);
    if (i < 0) {
        fprintf(stderr, "app: the model has no input '%s'\n", argv[1]);
        return 1;
    }
    const tcrt_io *io = &sig->args[i];
    void *data = malloc(io->bytes);
    FILE *f = fopen(argv[2], "rb");
    if (!data || !f || fread(data, 1, io->bytes, f) != io->bytes) {
        fprintf(stderr, "app: cannot read %zu bytes from %s\n", io->bytes, argv[2]);
        return 1;
    }
    fclose(f);
    tcrt_tensor t = {.data = data, .dtype = io->dtype, .rank = io->rank};
    memcpy(t.dims, io->dims, sizeof t.dims);

    kws *m = kws_new();
    char err[256];
    if (!m || kws_set_arg(m, i, &t, err, sizeof err) != TCRT_OK) {
        fprintf(stderr, "app: cannot feed: %s\n", m ? err : "out of memory");
        return 1;
    }
    if (kws_run(m) != TCRT_OK) {
        fprintf(stderr, "app: run failed\n");
        return 1;
    }
    const float *y = kws_result_labels_softmax(m);
    f = fopen(argv[3], "wb");
    if (!f || fwrite(y, 1, KWS_RESULT0_BYTES, f) != KWS_RESULT0_BYTES || fclose(f) != 0) {
        fprintf(stderr, "app: cannot write %s\n", argv[3]);
        return 1;
    }
    /* the same feed on a poisoned arena of the caller's */
    void *scratch = malloc(KWS_ARENA_BYTES + 64);
    kws *p = malloc(kws_size());
    if (!scratch || !p) {
        fprintf(stderr, "app: out of memory\n");
        return 1;
    }
    void *base = (void *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    memset(base, 0xff, KWS_ARENA_BYTES);
    if (kws_init(p, base, KWS_ARENA_BYTES) != TCRT_OK || kws_set_arg(p, i, &t, err, sizeof err) != TCRT_OK ||
        kws_run(p) != TCRT_OK) {
        fprintf(stderr, "app: the run on a caller's arena failed\n");
        return 1;
    }
    if (memcmp(kws_result_labels_softmax(p), y, KWS_RESULT0_BYTES) != 0) {
        fprintf(stderr, "app: results differ when the arena starts as 0xff bytes\n");
        return 1;
    }
    free(p);
    free(scratch);
    printf("app: %s -> %d results (arena %d bytes; same on a 0xff arena)\n", argv[1], KWS_RESULT0_COUNT,
           KWS_ARENA_BYTES);
    kws_free(m);
    free(data);
    return 0;
}
