/* fuzz/fuzz_config.c - libFuzzer target: tf2xla.Config file -> fe_config_load -> --config specs -> tf_import.
 *
 * A thin wrapper: the pipeline is fuzz_run_config in fuzz_entry.h (shared with
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
    fuzz_scratch_init("config");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Status st = ST_INIT;
    if (fuzz_run_config(fuzz_dir, data, size, &st) < 0)
        abort();
    return 0;
}
