/* fuzz/fuzz_graphdef_binary.c - libFuzzer target: bytes -> binary GraphDef -> tf_import.
 *
 * A thin wrapper: the pipeline is fuzz_run_graphdef_binary in fuzz_entry.h (shared with
 * tests/fuzz_regress, which replays saved inputs through it).  Clean errors
 * are expected; crashes, sanitizer reports, leaks, hangs (-timeout), huge
 * allocations (-malloc_limit_mb) and broken contracts (abort) are findings.
 */
#include "fuzz/fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Status st = ST_INIT;
    if (fuzz_run_graphdef_binary(data, size, &st) < 0)
        abort();
    return 0;
}
