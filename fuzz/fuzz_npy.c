/* fuzz/fuzz_npy.c - libFuzzer target: bytes as a .npy file -> tcrt_npy_read.
 *
 * A thin wrapper: the pipeline is fuzz_run_npy in fuzz_entry.h (shared with
 * tests/fuzz_regress, which replays saved inputs through it).  Clean errors
 * are expected; crashes, sanitizer reports, leaks, hangs (-timeout), huge
 * allocations (-malloc_limit_mb) and broken contracts (abort) are findings.
 */
#include "fuzz/fuzz_entry.h"
#include "fuzz/fuzz_scratch.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_scratch_init("npy");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    if (fuzz_run_npy(fuzz_dir, data, size, err, sizeof err) < 0)
        abort();
    return 0;
}
