#!/bin/sh
# fuzz/build.sh - builds the libFuzzer targets with clang (ASan + UBSan).
#
# Usage: fuzz/build.sh [OUT_DIR]        (default: build-fuzz, next to this folder)
#
# Plain clang command lines, no meson: the protobuf-c sources are generated
# with protoc-c into OUT_DIR/proto, the project sources the targets need
# (runtime .npy reader, checkpoint reader/writer and reference kernels, IR, frontends, TF import) are
# compiled once into OUT_DIR/obj with -fsanitize=fuzzer-no-link,address,
# undefined, and each fuzz/fuzz_*.c is linked with -fsanitize=fuzzer.
# UBSan does not recover (-fno-sanitize-recover=all): undefined behaviour is a
# crash the fuzzer reports.  Assertions stay on (no -DNDEBUG), as in the
# default debugoptimized build, so an ALWAYS() that fires is a finding too.
# Objects are rebuilt only when their source is newer (or a header changed:
# any header newer than the object rebuilds everything, kept simple).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
OUT=${1:-$ROOT/build-fuzz}
CC=${CC:-clang}
JOBS=${JOBS:-2}

SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CFLAGS="-g -O1 -std=gnu11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wno-unused-parameter \
 -Wno-missing-braces -I$ROOT -I$ROOT/runtime/include -I$OUT/proto"

mkdir -p "$OUT/proto" "$OUT/obj"

# 1. protobuf-c sources
for p in core/framework/types core/framework/tensor_shape core/framework/resource_handle \
         core/framework/tensor core/framework/attr_value core/framework/node_def core/framework/op_def \
         core/framework/function core/framework/versions core/framework/graph compiler/tf2xla/tf2xla \
         core/protobuf/saver core/protobuf/meta_graph core/protobuf/saved_model; do
    src=$ROOT/compiler/proto/tensorflow/$p.proto
    gen=$OUT/proto/tensorflow/$p.pb-c.c
    if [ ! -f "$gen" ] || [ "$src" -nt "$gen" ]; then
        protoc-c --proto_path="$ROOT/compiler/proto" --c_out="$OUT/proto" "$src"
    fi
done
for p in onnx/onnx; do
    src=$ROOT/compiler/proto/$p.proto
    gen=$OUT/proto/$p.pb-c.c
    if [ ! -f "$gen" ] || [ "$src" -nt "$gen" ]; then
        protoc-c --proto_path="$ROOT/compiler/proto" --c_out="$OUT/proto" "$src"
    fi
done

# 2. library objects
SRCS=$(cd "$ROOT" && ls runtime/tcrt.c runtime/npy.c runtime/ckpt.c runtime/crc32c.c runtime/pool.c runtime/kernels/ref_*.c ir/*.c \
       compiler/frontend/*.c compiler/tf/*.c compiler/onnx/*.c)
GEN=$(cd "$OUT/proto" && find tensorflow onnx -name '*.pb-c.c' | sort)
newest_h=$(find "$ROOT/ir" "$ROOT/runtime" "$ROOT/compiler" "$OUT/proto" -name '*.h' -o -name '*.def' |
           xargs ls -t | head -1)
list=$OUT/obj/todo.txt
: > "$list"
for s in $SRCS; do
    o=$OUT/obj/$(echo "$s" | tr / _ | sed 's/\.c$/.o/')
    if [ ! -f "$o" ] || [ "$ROOT/$s" -nt "$o" ] || [ "$newest_h" -nt "$o" ]; then
        echo "$ROOT/$s $o" >> "$list"
    fi
done
for s in $GEN; do
    o=$OUT/obj/proto_$(echo "$s" | tr / _ | sed 's/\.c$/.o/')
    if [ ! -f "$o" ] || [ "$OUT/proto/$s" -nt "$o" ]; then
        echo "$OUT/proto/$s $o" >> "$list"
    fi
done
if [ -s "$list" ]; then
    echo "fuzz/build.sh: compiling $(wc -l < "$list") sources"
    # shellcheck disable=SC2086
    xargs -P "$JOBS" -L 1 sh -c "$CC $CFLAGS $SAN -fsanitize=fuzzer-no-link -c \"\$0\" -o \"\$1\"" < "$list"
    rm -f "$OUT/libtfcc_fuzz.a"
fi
if [ ! -f "$OUT/libtfcc_fuzz.a" ]; then
    ar rcs "$OUT/libtfcc_fuzz.a" "$OUT"/obj/*.o
fi

# 3. targets
newest_fh=$(ls -t "$HERE"/*.h | head -1)
for t in "$HERE"/fuzz_*.c; do
    name=$(basename "$t" .c)
    exe=$OUT/$name
    if [ ! -f "$exe" ] || [ "$t" -nt "$exe" ] || [ "$OUT/libtfcc_fuzz.a" -nt "$exe" ] ||
       [ "$newest_fh" -nt "$exe" ]; then
        echo "fuzz/build.sh: linking $name"
        # shellcheck disable=SC2086
        $CC $CFLAGS $SAN -fsanitize=fuzzer "$t" "$OUT/libtfcc_fuzz.a" -lprotobuf-c -lm -o "$exe"
    fi
done
