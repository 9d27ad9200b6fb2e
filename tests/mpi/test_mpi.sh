#!/bin/sh
# test_mpi.sh - --cluster and the MPI runtime (docs/distributed.md).
#
# usage: test_mpi.sh TFCC DATA_DIR CASE
#   run       compile data/cluster.pbtxt with --cluster ps=1,worker=2, run it under
#             mpirun -np 3 (loopback only) and check the results: bitwise equal to
#             the same graph compiled without placement, and to hand-derived values
#   ranks     the same executable under mpirun -np 2: an error on every rank, no results;
#             under -np 3 with a missing feed: the failing rank aborts the job
#   dead      a long run whose rank 1 is killed (SIGKILL): mpirun ends the job (no hang)
#   train     data/train.pbtxt (variable and update on ps:0, forward on the workers) trained
#             5 steps under mpirun -np 3: loss and step lines equal to the single-process
#             run; the checkpoint --save writes (rank 0) is byte-identical too
#   spec      malformed --cluster values: exit 2 with the message; --emit c and --static
#             with edges between tasks: exit 1 with the message (needs no MPI)
#   dp        --data-parallel: data/dp_b2.pbtxt (batch 2 per replica) trained under mpirun -np 2
#             on k=4 batches: the step lines and the saved weights agree (1e-5 relative) with
#             data/dp_b4.pbtxt (batch 4) trained in one process on the same .npy; -np 1 and a
#             run without mpirun are bitwise equal to dp_b2 compiled without --data-parallel;
#             --restore continues the same sequence; the loss drops; errors: no --loss,
#             --cluster, --emit c (these need no MPI), a batch count -np 3 does not divide
# Exit 77 (SKIP) when mpirun or mpicc is missing or tfcc was built without MPI (cases run,
# ranks, dead, train, dp after its compile errors).
set -u
tfcc=$1
data=$2
case_=$3
model=$data/cluster.pbtxt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/common.sh"

if [ "$case_" = spec ]; then
    check_spec() { # SPEC EXPECTED-TEXT
        "$tfcc" compile "$model" --cluster "$1" --feed x --fetch y -o "$work/bad" 2>"$work/err"
        rc=$?
        [ $rc -eq 2 ] || fail "--cluster '$1': exit $rc, expected 2"
        grep -qF -- "$2" "$work/err" || fail "--cluster '$1': expected '$2', got: $(cat "$work/err")"
        [ ! -e "$work/bad" ] || fail "--cluster '$1' wrote an output"
    }
    check_spec 'ps=0,worker=2' "--cluster 'ps=0,worker=2': task count of job 'ps' is not a number from 1 to 64"
    check_spec 'ps' "--cluster 'ps': expected JOB=COUNT[,JOB=COUNT...] (e.g. ps=1,worker=2)"
    check_spec 'ps=1,ps=2' "--cluster 'ps=1,ps=2': job 'ps' named twice"
    check_spec '1ps=1' "--cluster '1ps=1': bad job name '1ps'"
    check_spec 'localhost=1' "--cluster 'localhost=1': bad job name 'localhost'"
    check_spec 'ps=1,' "--cluster 'ps=1,': trailing ','"
    check_spec 'ps=x' "--cluster 'ps=x': task count of job 'ps' is not a number"
    check_spec 'ps=40,worker=40' "--cluster 'ps=40,worker=40': more than 64 tasks in all"
    # edges between tasks need the host executable (no MPI needed to get this error)
    "$tfcc" compile "$model" --cluster ps=1,worker=2 --feed x --fetch y --emit c -o "$work/bad" 2>"$work/err"
    [ $? -eq 1 ] || fail "--cluster --emit c: expected exit 1"
    grep -qF "only the host executable (--emit exe, --backend c, no --target) links MPI so far" "$work/err" \
        || fail "--cluster --emit c: got: $(cat "$work/err")"
    # an executable that links MPI cannot be static (no MPI needed to get this error)
    "$tfcc" compile "$model" --cluster ps=1,worker=2 --feed x --fetch y --static -o "$work/bad_static" 2>"$work/err"
    [ $? -eq 1 ] || fail "--cluster --static: expected exit 1"
    grep -qF "an executable that links MPI (--cluster with edges between tasks) cannot be static" "$work/err" \
        || fail "--cluster --static: got: $(cat "$work/err")"
    [ ! -e "$work/bad_static" ] || fail "--cluster --static wrote an output"
    # a task outside the cluster is a placement error naming the node
    "$tfcc" compile "$model" --cluster ps=1 --feed x --fetch y -o "$work/bad" 2>"$work/err"
    [ $? -eq 1 ] || fail "--cluster ps=1: expected exit 1"
    grep -qF "node 'mm' (MatMul) requests device '/job:worker/replica:0/task:0', which is not in the cluster" \
        "$work/err" || fail "--cluster ps=1: got: $(cat "$work/err")"
    echo "spec errors ok"
    exit 0
fi

if [ "$case_" = dp ]; then # compile errors (no MPI needed)
    dm="$data/dp_b2.pbtxt"
    check_dp() { # EXIT EXPECTED-TEXT ARGS...
        want=$1
        text=$2
        shift 2
        "$tfcc" compile "$dm" --feed x --feed y --fetch loss "$@" -o "$work/bad" 2>"$work/err"
        rc=$?
        [ $rc -eq "$want" ] || fail "$*: exit $rc, expected $want: $(cat "$work/err")"
        grep -qF -- "$text" "$work/err" || fail "$*: expected '$text', got: $(cat "$work/err")"
        [ "$want" -ne 2 ] || [ ! -e "$work/bad" ] || fail "$* wrote an output"
    }
    check_dp 2 "error: --data-parallel needs --loss/--optimizer (tfcc builds the gradients it averages)" \
        --data-parallel
    check_dp 2 "error: --data-parallel cannot be combined with --cluster" --data-parallel --cluster ps=1 \
        --trainable w,b --loss loss --optimizer sgd:lr=0.1
    check_dp 1 "--data-parallel: only the host executable (--emit exe, --backend c, no --target) links MPI" \
        --data-parallel --trainable w,b --loss loss --optimizer sgd:lr=0.1 --emit c
    check_dp 1 "--data-parallel: the --train-op nodes run no optimizer op (Apply*, ResourceApply*)" \
        --data-parallel --train-op loss
fi

require_mpi

# x = [[1, -2, 0.5], [3, -1.5, 2]] (float32 .npy, written with the standard library)
python3 - "$work/x.npy" "$npyw" <<'PY' || fail "cannot write x.npy"
import sys
sys.path.insert(0, sys.argv[2])
from npyw import npy
npy(sys.argv[1], (2, 3), [1, -2, 0.5, 3, -1.5, 2])
PY
if [ "$case_" = dp ]; then
    # x: 8 rows (k=4 batches of 2, or 2 of 4), y = a fixed linear map of x (float32 .npy)
    python3 - "$work/dx.npy" "$work/dy.npy" "$npyw" <<'PY' || fail "cannot write the dp data"
import sys
sys.path.insert(0, sys.argv[3])
from npyw import npy as w
x = [((i * 7 + j * 3) % 11) / 4.0 - 1.25 for i in range(8) for j in range(3)]
y = []
for i in range(8):
    r = x[3 * i:3 * i + 3]
    y += [r[0] - 2 * r[1] + 0.5 * r[2] + 0.25, -0.5 * r[0] + 1.5 * r[2] - 0.75]
w(sys.argv[1], (8, 3), x)
w(sys.argv[2], (8, 2), y)
PY
    dopts="--feed x --feed y --fetch loss --trainable w,b --loss loss --optimizer sgd:lr=0.1"
    feeds="--feed x=$work/dx.npy --feed y=$work/dy.npy"
    compile_mpi "$work/dp" "$data/dp_b2.pbtxt" $dopts --data-parallel --keep-dir "$work/kdp"
    grep -q 'tcrt_mpi_main(&dp_model, 0, "", argc, argv)' "$work/kdp/dp_main.c" \
        || fail "the data-parallel executable does not start MPI in data-parallel mode"
    [ "$(grep -c 'tcrt_mpi_allreduce_mean(' "$work/kdp/dp.c")" -eq 4 ] \
        || fail "expected 3 allreduce calls (w, b, the loss) and a declaration in dp.c"
    "$tfcc" compile "$data/dp_b2.pbtxt" $dopts -o "$work/p2" >/dev/null || fail "compile dp_b2"
    "$tfcc" compile "$data/dp_b4.pbtxt" $dopts -o "$work/p4" >/dev/null || fail "compile dp_b4"
    "$work/p4" $feeds --steps 20 --save "$work/c4/c" >"$work/out4" || fail "single-process batch-4 run"
    $mpirun -np 2 "$work/dp" $feeds --steps 20 --save "$work/cd/c" --out-dir "$work/od" >"$work/outd" \
        2>"$work/errd" || fail "mpirun -np 2 --data-parallel: $(cat "$work/errd")"
    [ "$(ls "$work/cd")" = "$(ls "$work/c4")" ] || fail "checkpoint files: $(ls "$work/cd")"
    [ -e "$work/od/loss.npy" ] || fail "rank 0 wrote no loss.npy"
    # the loss lines and the weights (the checkpoints' .data: b, the global step, w) agree
    python3 - "$work/out4" "$work/outd" "$work/c4/c-20.data-00000-of-00001" \
        "$work/cd/c-20.data-00000-of-00001" <<'PY' || fail "data-parallel run differs from batch 4"
import struct, sys
def steps(p):
    return [float(l.split("loss=")[1]) for l in open(p) if l.startswith("step=")]
def floats(p):
    d = open(p, "rb").read()
    return struct.unpack("<%df" % (len(d) // 4), d)
def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-30)
l4, ld = steps(sys.argv[1]), steps(sys.argv[2])
w4, wd = floats(sys.argv[3]), floats(sys.argv[4])
if len(l4) != 20 or len(ld) != 20 or len(w4) != len(wd) or len(w4) != 10:
    sys.exit("got %d/%d step lines, %d/%d checkpoint words" % (len(l4), len(ld), len(w4), len(wd)))
dl = max(rel(a, b) for a, b in zip(l4, ld))
dw = max(rel(a, b) for a, b in zip(w4, wd))
if dl > 1e-5 or dw > 1e-5:
    sys.exit("max relative difference: loss %.3g, weights %.3g" % (dl, dw))
if not ld[-1] < ld[0] / 10:
    sys.exit("the loss did not drop by 10x: %s" % ld)
print("-np 2 vs batch 4: max relative difference loss %.3g, weights %.3g; loss %.4g -> %.4g"
      % (dl, dw, ld[0], ld[-1]))
PY
    # one replica is the plain batch-2 run, bit for bit (under mpirun and as an MPI singleton)
    "$work/p2" $feeds --steps 20 --save "$work/c2/c" >"$work/out2" || fail "single-process batch-2 run"
    $mpirun -np 1 "$work/dp" $feeds --steps 20 --save "$work/c1/c" >"$work/out1" 2>"$work/err1" \
        || fail "mpirun -np 1: $(cat "$work/err1")"
    env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$work/dp" $feeds --steps 20 >"$work/outs" \
        2>"$work/errs" || fail "run without mpirun (Open MPI singleton): $(cat "$work/errs")"
    grep '^step=' "$work/out2" >"$work/s2"
    for o in out1 outs; do
        grep '^step=' "$work/$o" >"$work/s_$o"
        cmp "$work/s2" "$work/s_$o" || fail "$o: step lines differ from the batch-2 run"
    done
    cmp "$work/c2/c-20.data-00000-of-00001" "$work/c1/c-20.data-00000-of-00001" \
        || fail "-np 1: weights differ from the batch-2 run"
    # --restore on every rank continues the same batch sequence
    $mpirun -np 2 "$work/dp" $feeds --steps 10 --save "$work/cr/c" >/dev/null 2>"$work/err" \
        || fail "resume part 1: $(cat "$work/err")"
    $mpirun -np 2 "$work/dp" $feeds --steps 20 --restore "$work/cr/c" --save "$work/cr/c" >"$work/outr" \
        2>"$work/err" || fail "resume part 2: $(cat "$work/err")"
    grep '^step=' "$work/outd" | tail -n 10 >"$work/sd"
    grep '^step=' "$work/outr" >"$work/sr"
    cmp "$work/sd" "$work/sr" || fail "resumed steps 11-20 differ: $(cat "$work/outr")"
    cmp "$work/cd/c-20.data-00000-of-00001" "$work/cr/c-20.data-00000-of-00001" \
        || fail "resumed weights differ"
    # a batch count the replicas do not divide: an error naming the feed, k and N
    $mpirun -np 3 "$work/dp" $feeds --steps 2 --out-dir "$work/o3" >"$work/out" 2>&1 \
        && fail "-np 3 with 4 batches succeeded"
    grep -qF "error: feed 'x': $work/dx.npy holds 4 batches of 2 rows but --data-parallel with 3 replicas needs a multiple of 3 batches" \
        "$work/out" || fail "no batch count error: $(cat "$work/out")"
    [ ! -e "$work/o3" ] || fail "results written after the batch count error"
    echo "data-parallel ok"
    exit 0
fi
if [ "$case_" = train ]; then
    tr="$data/train.pbtxt"
    topts="--feed x --trainable all --loss loss --optimizer sgd:lr=0.01 --fetch loss"
    "$tfcc" compile "$tr" $topts -o "$work/t1" >/dev/null || fail "compile the training graph"
    compile_mpi "$work/t3" "$tr" $topts --cluster ps=1,worker=2
    "$work/t1" --feed x="$work/x.npy" --steps 5 --out-dir "$work/o1" >"$work/out1" || fail "single-process training"
    $mpirun -np 3 "$work/t3" --feed x="$work/x.npy" --steps 5 --out-dir "$work/o3" >"$work/out3" 2>"$work/err3" \
        || fail "mpirun -np 3 training: $(cat "$work/err3")"
    cmp "$work/o1/loss.npy" "$work/o3/loss.npy" || fail "the loss after 5 steps differs from the single-process run"
    # only rank 0 reports: the same step lines as the single-process run
    grep '^step=' "$work/out1" >"$work/s1"
    grep '^step=' "$work/out3" >"$work/s3"
    cmp "$work/s1" "$work/s3" || fail "step lines differ: $(cat "$work/out3")"
    # --save: rank 0 gathers the ps task's variables and writes the checkpoint, equal to the
    # single-process one byte for byte
    "$work/t1" --feed x="$work/x.npy" --steps 5 --save "$work/ck1/m" >/dev/null || fail "single-process --save"
    $mpirun -np 3 "$work/t3" --feed x="$work/x.npy" --steps 5 --save "$work/ck3/m" >/dev/null 2>"$work/err" \
        || fail "--save under --cluster: $(cat "$work/err")"
    for f in index data-00000-of-00001; do
        cmp "$work/ck1/m-5.$f" "$work/ck3/m-5.$f" || fail "checkpoint .$f differs from the single-process one"
    done
    echo "3-rank training ok: the loss after 5 steps and the checkpoint are bitwise equal to the single-process run"
    exit 0
fi

compile_mpi "$work/c3" "$model" --cluster ps=1,worker=2 --feed x --fetch y,r --keep-dir "$work/k3"
grep -q tcrt_mpi_main "$work/k3/c3_main.c" || fail "the cluster executable does not start MPI"

if [ "$case_" = ranks ]; then
    $mpirun -np 2 "$work/c3" --feed x="$work/x.npy" --out-dir "$work/o2" >"$work/out" 2>&1
    rc=$?
    [ $rc -ne 0 ] || fail "mpirun -np 2 for 3 tasks succeeded"
    for r in 0 1; do
        grep -qF "error: rank $r: this model was compiled for --cluster ps=1,worker=2 (3 ranks) but MPI started 2; run it with mpirun -np 3" \
            "$work/out" || fail "no rank count error on rank $r: $(cat "$work/out")"
    done
    [ ! -e "$work/o2" ] || fail "results written after the rank count error"
    # a failing rank aborts the whole job (no rank is left waiting for a tensor)
    $mpirun -np 3 "$work/c3" --feed x="$work/missing.npy" --out-dir "$work/o2" >"$work/out" 2>&1 \
        && fail "a run with a missing feed succeeded"
    grep -qF "failed (exit 1): aborting the MPI job" "$work/out" || fail "no abort message: $(cat "$work/out")"
    echo "rank count error ok (exit $rc)"
    exit 0
fi

if [ "$case_" = dead ]; then
    # a long run (--repeat) whose rank 1 is killed: mpirun must end the job, not hang
    $mpirun -np 3 "$work/c3" --feed x="$work/x.npy" --out-dir "$work/od" --repeat 2000000 \
        >"$work/out" 2>&1 &
    mp=$!
    kids=""
    for _ in $(seq 200); do # the three ranks: mpirun's children (ppid, field 4 of /proc/PID/stat)
        kids=$(awk -v p=$mp '$4 == p { print $1 }' /proc/[0-9]*/stat 2>/dev/null | sort -n)
        [ "$(echo "$kids" | grep -c .)" -ge 3 ] && break
        sleep 0.1
    done
    [ "$(echo "$kids" | grep -c .)" -ge 3 ] || { kill "$mp"; fail "the 3 ranks did not start: $(cat "$work/out")"; }
    sleep 0.5
    kill -9 "$(echo "$kids" | sed -n 2p)"
    for _ in $(seq 300); do
        kill -0 "$mp" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$mp" 2>/dev/null; then
        kill "$mp"
        fail "the job still runs 30 s after a rank was killed"
    fi
    wait "$mp" && fail "the job succeeded after a rank was killed"
    [ ! -e "$work/od" ] || fail "results written after a rank was killed"
    echo "dead rank ok: mpirun ended the job"
    exit 0
fi

"$tfcc" compile "$model" --feed x --fetch y,r -o "$work/c1" --keep-dir "$work/k1" >/dev/null \
    || fail "compile without placement"
! grep -q tcrt_mpi "$work/k1/c1.c" "$work/k1/c1_main.c" || fail "a single-process compile references MPI"
"$work/c1" --feed x="$work/x.npy" --out-dir "$work/o1" >/dev/null || fail "single-process run"
$mpirun -np 3 "$work/c3" --feed x="$work/x.npy" --out-dir "$work/o3" >"$work/out" 2>&1 \
    || fail "mpirun -np 3: $(cat "$work/out")"
for f in y r; do
    cmp "$work/o1/$f.npy" "$work/o3/$f.npy" || fail "$f differs from the single-process run"
done
# hand-derived: mm = x.w = [[1.5, -1.5, -6.5, 1.0625], [5, 0.5, -12, 2.125]],
# r = relu(mm + b) = [[0, 0, 0, 0.0625], [3, 1, 0, 1.125]], y = r + mm
python3 - "$work/o3" <<'PY' || fail "values"
import struct, sys
def load(p):
    d = open(p, "rb").read()
    n = struct.unpack("<H", d[8:10])[0]
    return list(struct.unpack("<8f", d[10 + n:]))
want = {"r": [0, 0, 0, 0.0625, 3, 1, 0, 1.125], "y": [1.5, -1.5, -6.5, 1.125, 8, 1.5, -12, 3.25]}
for k, v in want.items():
    got = load(sys.argv[1] + "/" + k + ".npy")
    if got != v:
        sys.exit("%s: got %s, want %s" % (k, got, v))
PY
echo "3-rank run ok: y and r bitwise equal to the single-process run and to the hand-derived values"
