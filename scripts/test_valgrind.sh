#!/bin/bash
# test_valgrind.sh BUILD: the runtime's portable build under valgrind memcheck
# (make test-valgrind; docs/robustness.md).
#
# BUILD is a meson build configured with -Druntime_march=-march=x86-64-v3, so
# that libtcrt, the Eigen kernels and every executable tfcc compiles with it
# (targets/ passes the same flags to cc) use AVX2 at most: valgrind 3.19
# cannot execute AVX-512 instructions.  Steps:
#   1. build the runtime's unit tests and tfcc (nothing else);
#   2. run the runtime unit tests under memcheck (meson test --wrapper,
#      CK_FORK=no so that each suite is one process and its leaks are seen);
#   3. compile small models with tfcc, itself under memcheck, and run the
#      executables under memcheck: tests/errors/data/tiny.pbtxt (y = x*x + 1,
#      values checked by hand) with good and bad feeds and 2 threads, and,
#      when ../shared/models is present, github-ml-kws LSTM_S (while loop) and
#      DS_CNN_S (convolutions on the fast kernels, 2 threads) on their
#      reference inputs, compared with the reference outputs
#      (|got - want| <= 1e-4 + 1e-3 |want|).
# Every valgrind run uses --leak-check=full and --error-exitcode=99 (not 1,
# so that a memcheck error is never mistaken for an executable's own exit
# code 1 or 2); scripts/valgrind.supp lists the known, explained leaks.
# --fair-sched=yes: valgrind runs one thread at a time, and its default lock
# let the thread that posts the pool's jobs take it back again and again, so
# the worker never ran a task (test_pool's pool_workers_take_tasks failed in
# 3 of 3 runs on a 2-vCPU VM; with the fair lock it passed).
# Exits non-zero when any step fails; prints the time each step took.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: scripts/test_valgrind.sh BUILD_DIR}
build=$(cd "$build" && pwd)
shared="$root/../shared/models"
VG=(valgrind -q --fair-sched=yes --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,possible
    --suppressions="$root/scripts/valgrind.supp")
RT_TESTS=(runtime_npy runtime_main runtime_guards runtime_kernels runtime_nms runtime_fast runtime_nomalloc
          runtime_pool runtime_fast_pool runtime_fast_conv runtime_fast_conv_wino)
t0=$(date +%s)
fails=0
step() { echo; echo "=== valgrind: $* ($(( $(date +%s) - t0 )) s)"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

command -v valgrind >/dev/null || { echo "valgrind not installed (scripts/setup.sh installs it)"; exit 1; }
march=$(meson introspect --buildoptions "$build" 2>/dev/null | python3 -c \
    'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="runtime_march"))')
case "$march" in
    *avx512*|*native*|*x86-64-v4*) echo "runtime_march '$march' may emit AVX-512, which valgrind cannot run"; exit 1;;
esac

step "build (runtime_march=$march)"
targets=(compiler/tfcc)
for t in "${RT_TESTS[@]}"; do
    [ "$t" = runtime_fast_conv_wino ] && continue # the second test of test_runtime_fast_conv
    targets+=("tests/runtime/test_$t")
done
ninja -C "$build" "${targets[@]}" >/dev/null || { echo "FAIL: build"; exit 1; }

step "runtime unit tests under memcheck"
CK_FORK=no meson test -C "$build" --no-rebuild --print-errorlogs --timeout-multiplier 5 \
    --wrapper "${VG[*]}" "${RT_TESTS[@]}" || fail "runtime unit tests"

work=$(mktemp -d /tmp/tfcc-valgrind-XXXXXX)
trap 'rm -rf "$work"' EXIT
tfcc="$build/compiler/tfcc"

# run_vg WANT_RC LABEL CMD...: CMD under memcheck must exit WANT_RC.
run_vg() {
    local want=$1 label=$2
    shift 2
    "${VG[@]}" "$@" >"$work/last.out" 2>"$work/last.err"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$label: exit $rc, expected $want$([ "$rc" -eq 99 ] && echo ' (memcheck errors)')"
        sed 's/^/    /' "$work/last.err" | head -40
        return 1
    fi
    echo "ok: $label"
}

# npy_cmp GOT WANT: float32 arrays equal within 1e-4 + 1e-3 |want| (no numpy needed).
npy_cmp() {
    python3 - "$1" "$2" <<'PY'
import struct, sys
def load(p):
    b = open(p, "rb").read()
    assert b[:6] == b"\x93NUMPY", p
    hl, pre = (struct.unpack("<H", b[8:10])[0], 10) if b[6] == 1 else (struct.unpack("<I", b[8:12])[0], 12)
    hdr = b[pre:pre + hl].decode("latin1")
    assert "'<f4'" in hdr, (p, hdr)
    shape = hdr.split("'shape':")[1].split(")")[0] + ")"
    d = b[pre + hl:]
    return shape.replace(" ", ""), struct.unpack("<%df" % (len(d) // 4), d)
(gs, g), (ws, w) = load(sys.argv[1]), load(sys.argv[2])
bad = [i for i, (x, y) in enumerate(zip(g, w)) if not abs(x - y) <= 1e-4 + 1e-3 * abs(y)]
if gs != ws or len(g) != len(w) or bad:
    sys.exit("%s: shape %s vs %s, %d values differ (first at %s)" % (sys.argv[1], gs, ws, len(bad), bad[:1]))
PY
}

step "tiny.pbtxt: tfcc and the executable under memcheck"
run_vg 0 "tfcc compile tiny.pbtxt" "$tfcc" compile "$root/tests/errors/data/tiny.pbtxt" \
    --feed x:0 --fetch y:0 -o "$work/tiny" --name tiny
# x = [[1,2],[3,4]] float32 -> y = x*x + 1 = [[2,5],[10,17]] (by hand)
python3 - "$work" <<'PY'
import struct, sys
def npy(path, shape, vals, descr="<f4", fmt="f", extra=b""):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    d += " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode()
                           + struct.pack("<%d%s" % (len(vals), fmt), *vals) + extra)
w = sys.argv[1]
npy(w + "/x.npy", "(2, 2)", [1, 2, 3, 4])
npy(w + "/want.npy", "(2, 2)", [2, 5, 10, 17])
npy(w + "/x_shape.npy", "(4,)", [1, 2, 3, 4])
npy(w + "/x_dtype.npy", "(2, 2)", [1, 2, 3, 4], "<i4", "i")
npy(w + "/x_short.npy", "(2, 2)", [1, 2, 3])
open(w + "/x_magic.npy", "wb").write(b"\x93NUMPX\x01\x00" + bytes(60))
PY
run_vg 0 "tiny: run" "$work/tiny" --feed x="$work/x.npy" --out-dir "$work/out"
npy_cmp "$work/out/y_0.npy" "$work/want.npy" || fail "tiny: output"
run_vg 0 "tiny: run, 2 threads, --repeat 2" "$work/tiny" --feed x="$work/x.npy" --out-dir "$work/out" --threads 2 --repeat 2
run_vg 2 "tiny: wrong shape refused" "$work/tiny" --feed x="$work/x_shape.npy" --out-dir "$work/bad"
run_vg 2 "tiny: wrong dtype refused" "$work/tiny" --feed x="$work/x_dtype.npy" --out-dir "$work/bad"
run_vg 2 "tiny: missing feed refused" "$work/tiny" --out-dir "$work/bad"
run_vg 1 "tiny: bad magic refused" "$work/tiny" --feed x="$work/x_magic.npy" --out-dir "$work/bad"
run_vg 1 "tiny: data shorter than the shape refused" "$work/tiny" --feed x="$work/x_short.npy" --out-dir "$work/bad"
[ ! -e "$work/bad" ] || fail "tiny: a refused run created its output folder"

if [ -d "$shared/github-ml-kws" ]; then
    for m in LSTM_S:250 DS_CNN_S:490; do
        name=${m%%:*} n=${m##*:}
        ref="$shared/github-ml-kws/$name/reference/$name"
        step "$name: tfcc and the executable under memcheck"
        run_vg 0 "tfcc compile $name" "$tfcc" compile "$shared/github-ml-kws/$name/$name.pb" \
            --feed "Reshape:0:1x$n" --fetch labels_softmax -o "$work/$name" || continue
        run_vg 0 "$name: run (2 threads)" "$work/$name" --feed Reshape="$ref/input_0.npy" \
            --out-dir "$work/out_$name" --threads 2 || continue
        npy_cmp "$work/out_$name/labels_softmax.npy" "$ref/output_0.npy" && echo "ok: $name matches its reference" ||
            fail "$name: output differs from the reference"
    done
else
    echo "SKIP: ML-KWS models ($shared absent)"
fi

step "done: $fails failure(s)"
[ "$fails" -eq 0 ]
