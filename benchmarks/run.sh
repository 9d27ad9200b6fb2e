#!/bin/bash
# run.sh: `make bench`. Installs what is missing, builds tfcc, runs benchmarks/bench.js and
# writes benchmarks/RESULTS.md (compile time per corpus model, nsfwjs MobileNetV2 run time
# against TF.js wasm, planned arena vs intermediates). Needs ../shared/models.
#
# usage: benchmarks/run.sh [bench.js options, e.g. --rounds 9 --repeat 20]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
models="$root/../shared/models"
[ -f "$models/manifest.json" ] || { echo "bench: $models/manifest.json not found (the corpus is needed)" >&2; exit 1; }
scripts/setup.sh
[ -f build/build.ninja ] || meson setup build
ninja -C build compiler/tfcc
exec node benchmarks/bench.js --tfcc "$root/build/compiler/tfcc" --models "$models" --out "$root/benchmarks/RESULTS.md" "$@"
