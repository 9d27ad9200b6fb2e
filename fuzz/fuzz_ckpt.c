/* fuzz/fuzz_ckpt.c - libFuzzer target: bytes as a TensorFlow checkpoint
 * index (PREFIX.index beside a small valid data shard) -> tcrt_ckpt_open,
 * every entry read, the readable ones written back with tcrt_ckpt_write and
 * read again.
 *
 * A thin wrapper: the pipeline is fuzz_run_ckpt in fuzz_entry.h.  Clean
 * errors are expected; crashes, sanitizer reports, leaks, hangs (-timeout),
 * huge allocations (-malloc_limit_mb) and broken contracts (abort: an error
 * without a message, an inconsistent listing, a round trip that differs)
 * are findings.  Seeds: the corpus's *.index files (fuzz/seeds.py).
 */
#include "fuzz/fuzz_entry.h"
#include "fuzz/fuzz_scratch.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_scratch_init("ckpt");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    if (fuzz_run_ckpt(fuzz_dir, data, size, err, sizeof err) < 0)
        abort();
    return 0;
}
