# Thin wrapper around meson/ninja (the real build is meson.build).
#
#   make            install missing packages (first time), configure build/, build
#   make test       build, run the whole suite, print Check's closing lines
#   make test-asan  the same suite in build-asan/ under AddressSanitizer + UBSan
#   make test-valgrind  the runtime's unit tests and a few compiled models under valgrind
#                   memcheck, from build-valgrind/ (portable x86-64-v3 runtime: no AVX-512)
#   make demo       compile a real face model with tfcc and run it on a photo (scripts/demo.sh)
#   make bench      compile-time, run-time and memory benchmarks -> benchmarks/RESULTS.md
#   make bench-dist only the distributed-training numbers (1-3 MPI ranks) -> benchmarks/RESULTS.md
#   make docs       regenerate docs/ops.md from the op tables
#   make clean      remove build directories and demo output
#
# Variables: MESON_TEST_ARGS (extra args for `meson test`, e.g. --suite unit),
#            BUILD / ASAN_BUILD / VG_BUILD (build directories), ASAN_OPTS (ASAN_OPTIONS for test-asan),
#            VG_MARCH (runtime ISA flags of the valgrind build).

BUILD      ?= build
ASAN_BUILD ?= build-asan
VG_BUILD   ?= build-valgrind
VG_MARCH   ?= -march=x86-64-v3
MESON_TEST_ARGS ?=
SAN_FLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer
REAL_CC    := $(shell command -v cc || echo /usr/bin/cc)
# LeakSanitizer is on: the compiler and compiled executables must free what they allocate
# (known exceptions, each explained, in scripts/lsan.supp).
ASAN_OPTS  ?= abort_on_error=0:detect_leaks=1

.PHONY: all setup test test-asan test-valgrind demo bench bench-dist docs cf-coverage onnx-conformance clean

all: $(BUILD)/build.ninja
	ninja -C $(BUILD)

setup:
	scripts/setup.sh

# Configuring is the "setup needed" stamp: a fresh checkout gets its packages first.
$(BUILD)/build.ninja:
	scripts/setup.sh --no-node
	meson setup $(BUILD)

test: all
	@rc=0; meson test -C $(BUILD) --print-errorlogs $(MESON_TEST_ARGS) || rc=$$?; \
	scripts/check_lines.sh $(BUILD)/meson-logs/testlog.txt; exit $$rc

# Generated executables link the sanitized runtime from build-asan, so the C compiler
# that tfcc calls (`cc`, found on PATH) needs the sanitizer flags too: a `cc` wrapper that
# adds them goes first on PATH while the tests run.
# -Dwerror=false: warnings are enforced by the normal build; gcc's sanitizer instrumentation
# adds false positives (e.g. -Wformat-truncation) that must not stop this build.
$(ASAN_BUILD)/build.ninja:
	scripts/setup.sh --no-node
	meson setup $(ASAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized -Dwerror=false

test-asan: $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)
	@mkdir -p $(ASAN_BUILD)/ccwrap; \
	printf '#!/bin/sh\nexec %s %s "$$@"\n' '$(REAL_CC)' '$(SAN_FLAGS)' > $(ASAN_BUILD)/ccwrap/cc; \
	chmod +x $(ASAN_BUILD)/ccwrap/cc
	@rc=0; PATH="$(abspath $(ASAN_BUILD))/ccwrap:$$PATH" \
	ASAN_OPTIONS='$(ASAN_OPTS)' LSAN_OPTIONS=suppressions='$(CURDIR)/scripts/lsan.supp' UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	meson test -C $(ASAN_BUILD) --print-errorlogs --timeout-multiplier 4 $(MESON_TEST_ARGS) || rc=$$?; \
	scripts/check_lines.sh $(ASAN_BUILD)/meson-logs/testlog.txt; exit $$rc

# Valgrind 3.19 cannot run AVX-512 code: the runtime (and, through targets/, every
# executable tfcc compiles in this build) gets VG_MARCH, AVX2 at most, and the packed
# conv/GEMM micro-kernels are capped at AVX2 (runtime_isa).
# scripts/test_valgrind.sh builds only the runtime tests and tfcc, runs them and a few
# compiled models under memcheck (details and timings: docs/robustness.md).
$(VG_BUILD)/build.ninja:
	scripts/setup.sh --no-node
	meson setup $(VG_BUILD) -Druntime_march=$(VG_MARCH) -Druntime_isa=avx2 -Dbuildtype=debugoptimized

test-valgrind: $(VG_BUILD)/build.ninja
	scripts/test_valgrind.sh $(VG_BUILD)

demo:
	scripts/demo.sh

# BENCH_ARGS: options of benchmarks/bench.js, e.g. BENCH_ARGS=--quick or "--rounds 9 --only resnet"
BENCH_ARGS ?=
bench: all
	BUILD=$(BUILD) benchmarks/run.sh $(BENCH_ARGS)

# STEPS / ROUNDS: steps per run and interleaved rounds of benchmarks/distributed.sh
bench-dist: all
	BUILD=$(BUILD) benchmarks/distributed.sh

docs: all
	mkdir -p docs
	$(BUILD)/compiler/tfcc ops --markdown > docs/ops.md

# The control-flow coverage table of docs/control-flow.md (every corpus graph
# with control flow: compiles, or the error that stops it).
cf-coverage: all
	python3 tools/cf_coverage.py $(BUILD)/compiler/tfcc ../shared/models docs/control-flow.md

# ONNX backend conformance, every folder of libonnx-testdata (the test suite
# runs node/ and simple/ only); pass counts for docs/onnx.md.
ONNX_DATA ?= /usr/share/libonnx-testdata/data
onnx-conformance: all
	for f in node simple pytorch-converted pytorch-operator real; do \
	  $(BUILD)/tests/onnx/test_conformance $(ONNX_DATA) $$f 0 3600 | tail -1; done

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(VG_BUILD) build-fuzz demo-out

# Fuzzing (fuzz/, docs/fuzzing.md): builds the libFuzzer targets with clang
# (ASan + UBSan) into build-fuzz/ and runs each for FUZZ_SECONDS (default 60),
# seeded from ../shared/models and tests/errors/data.  FUZZ_TARGETS picks some.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
.PHONY: fuzz fuzz-smoke
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh $(FUZZ_TARGETS)
# CI's check that the fuzz targets build and take every seed without a
# finding: one pass over the seeds, no mutation (libFuzzer -runs=0; ~1 min).
fuzz-smoke:
	FUZZ_SECONDS=120 FUZZ_FLAGS=-runs=0 fuzz/run.sh $(FUZZ_TARGETS)
