#!/bin/sh
# test_ps.sh - parameter-server training: --cluster with --replicas (docs/distributed.md).
#
# usage: test_ps.sh TFCC DATA_DIR CASE [MODELS_DIR]
#   linear   data/ps_linear.pbtxt (linear regression, batch 8) trained 60 steps over 4 batches
#            with --cluster ps=1,worker=2 --replicas worker under mpirun -np 3: every step's
#            loss agrees with the single-process full-batch run (relative 1e-5: only the
#            summation order differs), the final loss reaches 1e-4 of the first (the targets
#            are exactly linear, y = x.[1,-2,0.5], so the minimum is 0), and the
#            checkpoint rank 0 writes (variables gathered from the ps task) holds the same
#            variables as the single-process one (relative 1e-5)
#   cnn      data/ps_cnn.pbtxt (conv, pool, dense, softmax cross entropy) with
#            --cluster ps=2,worker=2 (variables spread over two ps tasks) under -np 4: the
#            losses and the final variables (the checkpoint rank 0 writes after gathering
#            ps:1's variables) agree with the single-process run (relative 1e-3) and the loss
#            falls below half the first
#   restart  the linear job with --save-every 10 is killed (worker:1, SIGKILL) after its
#            step-20 checkpoint; the job is restarted with --restore: the final variables
#            and loss are bitwise equal to an uninterrupted 3-rank run
#   trunc16  the linear job with --transfer-compress trunc16: half the bytes per step (28
#            against 56, hand-derived), the reported largest relative error in (0, 2^-7), and
#            the losses within 5% of the uncompressed run's, still converging
#   dp_tf    --data-parallel for a TensorFlow training graph with its own optimizer op (ML.NET's
#            mnist_lr SavedModel from MODELS_DIR, --train-op SGDOptimizer): 8 rows per replica
#            under mpirun -np 2 against the same graph with 16 rows in one process on the same
#            batches: losses and final variables agree (relative 1e-5), the loss falls; SKIP
#            when the corpus is absent
#   errors   --replicas without --cluster, an unknown job, a batch that does not split
# Exit 77 (SKIP) without mpirun/mpicc or an MPI build (not for errors).
set -u
tfcc=$1
data=$2
case_=$3
models=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/common.sh"
lin="$data/ps_linear.pbtxt"
lopts="--feed x --feed y --trainable all --loss loss --optimizer sgd:lr=0.3"

if [ "$case_" = errors ]; then
    check_err() { # EXPECTED-EXIT EXPECTED-TEXT ARGS...
        want=$1 text=$2
        shift 2
        "$tfcc" compile "$@" -o "$work/bad" 2>"$work/err"
        rc=$?
        [ $rc -eq "$want" ] || fail "$*: exit $rc, expected $want ($(cat "$work/err"))"
        grep -qF -- "$text" "$work/err" || fail "$*: expected '$text', got: $(cat "$work/err")"
        [ ! -e "$work/bad" ] || fail "$*: wrote an output"
    }
    check_err 2 "error: --replicas needs --cluster and --loss" "$lin" $lopts --replicas worker
    check_err 2 "error: --replicas needs --cluster and --loss" "$lin" --feed x,y --fetch loss \
        --cluster ps=1,worker=2 --replicas worker
    check_err 1 "--replicas gpu: the --cluster has no job 'gpu'" "$lin" $lopts --cluster ps=1,worker=2 \
        --replicas gpu
    check_err 1 "--replicas worker: feed 'x' has 8 rows (dimension 0), which does not split into 3 equal replica batches" \
        "$lin" $lopts --cluster ps=1,worker=3 --replicas worker
    check_err 2 "error: --transfer-compress 'fp8': expected none or trunc16" "$lin" $lopts --cluster ps=1,worker=2 \
        --transfer-compress fp8
    check_err 2 "error: --transfer-compress needs --cluster" "$lin" $lopts --transfer-compress trunc16
    check_err 2 "error: --data-parallel needs --loss/--optimizer" "$lin" --feed x --feed y --fetch loss \
        --data-parallel
    echo "--replicas errors ok"
    exit 0
fi

require_mpi

# batches (float32 .npy, standard library only): pseudo-random x in [-1, 1); linear targets
python3 - "$work" "$npyw" <<'PY' || fail "cannot write the batches"
import sys
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from npyw import npy, lcg
u = lcg(12345)
rnd = lambda: u() - 1.0  # in [-1, 1)
x = [rnd() for _ in range(32 * 3)]
y = [x[3 * i] * 1 - 2 * x[3 * i + 1] + 0.5 * x[3 * i + 2] for i in range(32)]
npy(d + "/x.npy", (32, 3), x)
npy(d + "/y.npy", (32, 1), y)
cx = [rnd() for _ in range(16 * 36)]
cy = []
for i in range(16):  # label: whether the left half of the image is brighter than the right half
    left = sum(cx[36 * i + 6 * r + c] for r in range(6) for c in range(3))
    right = sum(cx[36 * i + 6 * r + c] for r in range(6) for c in range(3, 6))
    cy += [1.0, 0.0] if left > right else [0.0, 1.0]
npy(d + "/cx.npy", (16, 6, 6, 1), cx)
npy(d + "/cy.npy", (16, 2), cy)
PY

# compare_losses FILE1 FILE2 TOL: the step=S loss=V lines agree (relative TOL), same steps
compare_losses() {
    python3 - "$1" "$2" "$3" <<'PY'
import sys
def losses(p):
    out = {}
    for line in open(p):
        if line.startswith("step="):
            kv = dict(t.split("=", 1) for t in line.split())
            out[int(kv["step"])] = float(kv.get("loss", kv.get("loss:0", "nan")))
    return out
a, b, tol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
if not a or sorted(a) != sorted(b):
    sys.exit("steps differ: %s vs %s" % (sorted(a), sorted(b)))
worst = max(abs(a[s] - b[s]) / max(abs(a[s]), 1e-30) for s in a)
if worst > tol:
    sys.exit("losses differ by %.3g relative (tolerance %g)" % (worst, tol))
first, last = a[min(a)], a[max(a)]
print("max relative loss difference %.3g over %d steps; loss %.6g -> %.6g" % (worst, len(a), first, last))
open(sys.argv[1] + ".range", "w").write("%r %r\n" % (first, last))
PY
}

# compare_ckpt PREFIX1 PREFIX2 TOL: the checkpoints' .data files agree as float32 (relative
# TOL of the largest magnitude); their .index files name the same entries
compare_ckpt() {
    python3 - "$1" "$2" "$3" <<'PY'
import struct, sys
a = open(sys.argv[1] + ".data-00000-of-00001", "rb").read()
b = open(sys.argv[2] + ".data-00000-of-00001", "rb").read()
if len(a) != len(b):
    sys.exit("checkpoint data sizes differ: %d vs %d" % (len(a), len(b)))
n = len(a) // 4
fa, fb = struct.unpack("<%df" % n, a[:4 * n]), struct.unpack("<%df" % n, b[:4 * n])
scale = max(max(abs(v) for v in fa), 1e-30)
worst = max(abs(p - q) for p, q in zip(fa, fb)) / scale
if worst > float(sys.argv[3]):
    sys.exit("checkpoint values differ by %.3g relative" % worst)
print("checkpoints agree (max relative difference %.3g over %d words)" % (worst, n))
PY
}

if [ "$case_" = linear ]; then
    "$tfcc" compile "$lin" $lopts -o "$work/t1" >/dev/null || fail "single-process compile"
    compile_mpi "$work/t3" "$lin" $lopts --cluster ps=1,worker=2 --replicas worker
    "$work/t1" --feed x="$work/x.npy" --feed y="$work/y.npy" --steps 60 --log-every 1 --save "$work/c1/m" \
        --out-dir "$work/o1" >"$work/out1" || fail "single-process training"
    $mpirun -np 3 "$work/t3" --feed x="$work/x.npy" --feed y="$work/y.npy" --steps 60 --log-every 1 \
        --save "$work/c3/m" --out-dir "$work/o3" >"$work/out3" 2>"$work/err3" \
        || fail "mpirun -np 3: $(cat "$work/err3")"
    compare_losses "$work/out1" "$work/out3" 1e-5 || fail "losses: $(cat "$work/out3")"
    read -r first last <"$work/out1.range"
    python3 -c "import sys; sys.exit(0 if $last < 1e-4 * $first else 1)" \
        || fail "no convergence: loss $first -> $last"
    compare_ckpt "$work/c1/m-60" "$work/c3/m-60" 1e-5 || fail "final variables differ"
    # traffic, hand-derived: per step w (3 floats) to each worker, each worker's loss (1) and
    # gradient (3) to ps:0: 2 * (12 + 4 + 12) = 56 bytes; the final --save gathers nothing (w is on ps:0)
    grep -qx "mpi: ranks=3 runs=60 bytes_sent=3360 bytes_per_run=56.0" "$work/out3" \
        || fail "traffic line: $(grep '^mpi:' "$work/out3")"
    echo "ps=1,worker=2 training ok"
    exit 0
fi

if [ "$case_" = trunc16 ]; then
    compile_mpi "$work/t3" "$lin" $lopts --cluster ps=1,worker=2 --replicas worker
    compile_mpi "$work/t16" "$lin" $lopts --cluster ps=1,worker=2 --replicas worker --transfer-compress trunc16
    feeds="--feed x=$work/x.npy --feed y=$work/y.npy"
    $mpirun -np 3 "$work/t3" $feeds --steps 60 --log-every 1 --out-dir "$work/o3" >"$work/out3" 2>"$work/err" \
        || fail "uncompressed run: $(cat "$work/err")"
    $mpirun -np 3 "$work/t16" $feeds --steps 60 --log-every 1 --out-dir "$work/o16" >"$work/out16" 2>"$work/err" \
        || fail "trunc16 run: $(cat "$work/err")"
    # half the bytes of the uncompressed run (56 per step, see linear); the largest relative
    # error of truncating a float32 to 8 significant bits is below 2^-7
    line=$(grep '^mpi:' "$work/out16")
    echo "$line" | grep -q "^mpi: ranks=3 runs=60 bytes_sent=1680 bytes_per_run=28.0 trunc16_max_rel_err=" \
        || fail "trunc16 traffic line: $line"
    err=${line##*=}
    python3 -c "import sys; sys.exit(0 if 0 < $err < 2 ** -7 else 1)" || fail "trunc16 error $err out of (0, 2^-7)"
    # the losses of the first 10 steps follow the uncompressed run to within 5% (later ones are
    # rounding noise near 0), and training still converges
    python3 - "$work/out3" "$work/out16" <<'PY' || fail "trunc16 losses: $(cat "$work/out16")"
import sys
def losses(p):
    return {int(l.split()[0][5:]): float(l.split()[1][5:]) for l in open(p) if l.startswith("step=")}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
worst = max(abs(a[s] - b[s]) / a[s] for s in range(1, 11))
if worst > 0.05 or not b[60] < 1e-3 * b[1]:
    sys.exit("steps 1-10 differ by %.3g relative; loss %g -> %g" % (worst, b[1], b[60]))
print("trunc16: steps 1-10 within %.3g of the uncompressed losses; loss %g -> %g" % (worst, b[1], b[60]))
PY
    echo "trunc16 ok: $line"
    exit 0
fi

if [ "$case_" = dp_tf ]; then
    sm="$models/github-mlnet-testdata/mnist_lr_model/saved_model.pb"
    [ -f "$sm" ] || { echo "SKIP: $sm not found"; exit 77; }
    # one-hot "images": class c lights pixels 70c..70c+69 (plus noise), labels one-hot; 4 batches of 8
    python3 - "$work" "$npyw" <<'PY' || fail "cannot write the batches"
import sys
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from npyw import npy, lcg
u = lcg(99)
rnd = lambda: u() / 2  # in [0, 1)
x, y = [], []
for i in range(32):
    c = (i * 7 + 3) % 10
    x += [(1.0 if 70 * c <= p < 70 * c + 70 else 0.0) + 0.1 * rnd() for p in range(784)]
    y += [1.0 if k == c else 0.0 for k in range(10)]
npy(d + "/f.npy", (32, 784), x)
npy(d + "/l.npy", (32, 10), y)
PY
    common="--train-op SGDOptimizer --fetch Loss"
    "$tfcc" compile "$sm" --feed Features:0:16x784 --feed Label:0:16x10 $common -o "$work/t1" >/dev/null \
        2>"$work/err" || fail "single-process compile: $(cat "$work/err")"
    compile_mpi "$work/t2" "$sm" --feed Features:0:8x784 --feed Label:0:8x10 $common --data-parallel
    feeds="--feed Features:0=$work/f.npy --feed Label:0=$work/l.npy"
    "$work/t1" $feeds --steps 30 --log-every 1 --save "$work/c1/m" --out-dir "$work/o1" >"$work/out1" \
        || fail "single-process training"
    $mpirun -np 2 "$work/t2" $feeds --steps 30 --log-every 1 --save "$work/c2/m" --out-dir "$work/o2" \
        >"$work/out2" 2>"$work/err" || fail "mpirun -np 2: $(cat "$work/err")"
    sed -i 's/ Loss:0=/ loss=/; s/ Loss=/ loss=/' "$work/out1" "$work/out2"
    compare_losses "$work/out1" "$work/out2" 1e-5 || fail "losses: $(cat "$work/out2")"
    read -r first last <"$work/out1.range"
    python3 -c "import sys; sys.exit(0 if $last < 0.5 * $first else 1)" || fail "no convergence: $first -> $last"
    compare_ckpt "$work/c1/m-30" "$work/c2/m-30" 1e-5 || fail "final variables differ"
    echo "data-parallel TF graph (mnist_lr, SGDOptimizer) ok"
    exit 0
fi

if [ "$case_" = cnn ]; then
    cnn="$data/ps_cnn.pbtxt"
    copts="--feed x --feed y --trainable all --loss loss --optimizer momentum:lr=0.2"
    "$tfcc" compile "$cnn" $copts -o "$work/t1" >/dev/null || fail "single-process compile"
    compile_mpi "$work/t4" "$cnn" $copts --cluster ps=2,worker=2 --replicas worker
    "$work/t1" --feed x="$work/cx.npy" --feed y="$work/cy.npy" --steps 40 --log-every 1 --out-dir "$work/o1" \
        --save "$work/c1/m" >"$work/out1" || fail "single-process training"
    $mpirun -np 4 "$work/t4" --feed x="$work/cx.npy" --feed y="$work/cy.npy" --steps 40 --log-every 1 \
        --out-dir "$work/o4" --save "$work/c4/m" >"$work/out4" 2>"$work/err4" || fail "mpirun -np 4: $(cat "$work/err4")"
    compare_losses "$work/out1" "$work/out4" 1e-3 || fail "losses: $(cat "$work/out4")"
    # the variables live on ps:0 and ps:1; rank 0 gathers them into one checkpoint
    "$tfcc" info "$cnn" $copts --cluster ps=2,worker=2 --replicas worker --placement >"$work/place" 2>&1 \
        || fail "info --placement"
    grep -q "assign -> \[[0-9]*\] requested: '/job:ps/replica:0/task:1'" "$work/place" \
        || fail "no variable update on ps:1: $(grep assign "$work/place")"
    compare_ckpt "$work/c1/m-40" "$work/c4/m-40" 1e-3 || fail "final variables differ"
    read -r first last <"$work/out1.range"
    python3 -c "import sys; sys.exit(0 if $last < 0.5 * $first else 1)" \
        || fail "no convergence: loss $first -> $last"
    echo "ps=2,worker=2 CNN training ok"
    exit 0
fi

if [ "$case_" = restart ]; then
    compile_mpi "$work/t3" "$lin" $lopts --cluster ps=1,worker=2 --replicas worker
    feeds="--feed x=$work/x.npy --feed y=$work/y.npy"
    $mpirun -np 3 "$work/t3" $feeds --steps 3000 --save "$work/ref/m" --out-dir "$work/oref" >/dev/null \
        2>"$work/err" || fail "uninterrupted run: $(cat "$work/err")"
    $mpirun -np 3 "$work/t3" $feeds --steps 3000 --save "$work/ck/m" --save-every 10 --log-every 1 \
        --out-dir "$work/ok" >"$work/out" 2>&1 &
    mp=$!
    for _ in $(seq 300); do # until the step-20 checkpoint is complete (its pointer names it)
        grep -q "m-20\$" "$work/ck/m.latest" 2>/dev/null && break
        grep -q "m-[3-9]0\$\|m-[0-9][0-9][0-9]" "$work/ck/m.latest" 2>/dev/null && break
        kill -0 "$mp" 2>/dev/null || break
        sleep 0.02
    done
    kids=$(awk -v p=$mp '$4 == p { print $1 }' /proc/[0-9]*/stat 2>/dev/null | sort -n)
    kill -9 "$(echo "$kids" | sed -n 3p)" 2>/dev/null || { kill "$mp"; fail "no worker:1 process to kill"; }
    for _ in $(seq 300); do
        kill -0 "$mp" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$mp" 2>/dev/null && { kill "$mp"; fail "the job still runs 30 s after a worker was killed"; }
    wait "$mp" && fail "the killed job succeeded (it finished before the kill: make --steps larger)"
    saved=$(sed 's/.*m-//' "$work/ck/m.latest")
    [ "$saved" -ge 20 ] && [ "$saved" -lt 3000 ] || fail "unexpected checkpoint step after the kill: $saved"
    $mpirun -np 3 "$work/t3" $feeds --steps 3000 --save "$work/ck/m" --restore "$work/ck/m" \
        --out-dir "$work/ok" >"$work/out2" 2>"$work/err" || fail "restarted run: $(cat "$work/err")"
    cmp "$work/ref/m-3000.data-00000-of-00001" "$work/ck/m-3000.data-00000-of-00001" \
        || fail "final variables after the restart differ from the uninterrupted run"
    cmp "$work/oref/loss.npy" "$work/ok/loss.npy" || fail "final loss after the restart differs"
    echo "killed at step >= 20 (last checkpoint $saved), restarted: final variables bitwise equal"
    exit 0
fi
fail "unknown case '$case_'"
