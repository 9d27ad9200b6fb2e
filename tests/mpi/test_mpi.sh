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
#             run; --save is rejected
#   spec      malformed --cluster values: exit 2 with the message (needs no MPI)
# Exit 77 (SKIP) when mpirun or mpicc is missing or tfcc was built without MPI (cases run,
# ranks, dead, train).
set -u
tfcc=$1
data=$2
case_=$3
model=$data/cluster.pbtxt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

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
    # a task outside the cluster is a placement error naming the node
    "$tfcc" compile "$model" --cluster ps=1 --feed x --fetch y -o "$work/bad" 2>"$work/err"
    [ $? -eq 1 ] || fail "--cluster ps=1: expected exit 1"
    grep -qF "node 'mm' (MatMul) requests device '/job:worker/replica:0/task:0', which is not in the cluster" \
        "$work/err" || fail "--cluster ps=1: got: $(cat "$work/err")"
    echo "spec errors ok"
    exit 0
fi

command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun not found"; exit 77; }
command -v mpicc >/dev/null 2>&1 || { echo "SKIP: mpicc not found"; exit 77; }
# compile_mpi OUT ARGS...: a compile that links MPI; SKIP when this tfcc was built without it
compile_mpi() {
    out=$1
    shift
    "$tfcc" compile "$@" -o "$out" >/dev/null 2>"$work/cerr" && return 0
    grep -q "this tfcc was built without MPI" "$work/cerr" && { cat "$work/cerr"; echo "SKIP: no MPI build"; exit 77; }
    fail "compile $*: $(cat "$work/cerr")"
}
# Open MPI's own allocations outlive MPI_Finalize: under `make test-asan` (the executables
# link the sanitized runtime) LeakSanitizer would report them, so leak checking is off for
# the MPI processes (AddressSanitizer and UBSan still run).
mpirun="env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 mpirun --allow-run-as-root --oversubscribe --mca btl self,vader,tcp --mca btl_tcp_if_include lo \
--mca oob_tcp_if_include lo"

# x = [[1, -2, 0.5], [3, -1.5, 2]] (float32 .npy, written with the standard library)
python3 - "$work/x.npy" <<'PY' || fail "cannot write x.npy"
import struct, sys
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
h += " " * (63 - (10 + len(h)) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())
    f.write(struct.pack("<6f", 1, -2, 0.5, 3, -1.5, 2))
PY
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
    $mpirun -np 3 "$work/t3" --feed x="$work/x.npy" --steps 1 --save "$work/ck" >/dev/null 2>"$work/err" \
        && fail "--save under --cluster was accepted"
    grep -qF "error: --save is not supported with --cluster yet" "$work/err" || fail "--save: $(cat "$work/err")"
    echo "3-rank training ok: the loss after 5 steps is bitwise equal to the single-process run"
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
