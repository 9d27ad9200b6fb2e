#!/bin/bash
# run.sh: `make bench`. Installs what is missing (scripts/setup.sh --bench: PyTorch, /usr/bin/time,
# onnxruntime-node), builds tfcc (and benchmarks/sgemm when the build defines it), runs
# benchmarks/bench.js and writes benchmarks/RESULTS.md, then benchmarks/distributed.sh appends the
# distributed-training section. Needs ../shared/models.
#
# usage: [BUILD=build] benchmarks/run.sh [bench.js options, e.g. --quick, --rounds 9 --repeat 20, --only resnet]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD:-build}
models="$root/../shared/models"
[ -f "$models/manifest.json" ] || { echo "bench: $models/manifest.json not found (the corpus is needed)" >&2; exit 1; }
scripts/setup.sh --bench
[ -f "$build/build.ninja" ] || meson setup "$build"
targets=(compiler/tfcc)
ninja -C "$build" -t targets all 2>/dev/null | grep -q '^benchmarks/sgemm:' && targets+=(benchmarks/sgemm)
ninja -C "$build" "${targets[@]}"
build=$(cd "$build" && pwd)
node benchmarks/bench.js --tfcc "$build/compiler/tfcc" --sgemm "$build/benchmarks/sgemm" --models "$models" \
    --out "$root/benchmarks/RESULTS.md" "$@"
# the distributed-training section (MPI ranks), appended to RESULTS.md
BUILD="$build" benchmarks/distributed.sh
