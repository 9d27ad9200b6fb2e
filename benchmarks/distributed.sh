#!/bin/bash
# distributed.sh: `make bench-dist` (also the last part of `make bench`). Step time and bytes
# transferred per step of one training step run as 1, 2 and 3 MPI ranks (docs/distributed.md):
# the single-process executable; parameter-server training (--cluster ps=1,worker=W --replicas
# worker) with and without --transfer-compress trunc16; data-parallel training (--data-parallel,
# mpirun -np N).  The model is an MLP generated here (784-256-256-10, softmax cross entropy,
# 269k float32 parameters, 1.03 MiB) with a global batch of 64 rows (PS: 64/W rows per worker;
# data-parallel: 64/N rows per rank, so every configuration trains on the same 64 rows per step).
# Each configuration runs STEPS steps ROUNDS times, rounds interleaved (A B C ... A B C ...); the
# step time is rank 0's median ms_per_step (the run function only, rank 0 being the ps task or
# replica 0: it waits for every worker), bytes per step the runtime's own count (`mpi:` line:
# payload bytes every rank sent, per run).  Writes its section of benchmarks/RESULTS.md (between
# the distributed markers; appended when absent).
#
# usage: [BUILD=build] [STEPS=200] [ROUNDS=5] benchmarks/distributed.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD:-build}
steps=${STEPS:-200}
rounds=${ROUNDS:-5}
command -v mpirun >/dev/null || { echo "bench-dist: mpirun not found (scripts/setup.sh installs Open MPI)" >&2; exit 1; }
[ -f "$build/build.ninja" ] || meson setup "$build"
ninja -C "$build" compiler/tfcc >/dev/null
tfcc=$(cd "$build" && pwd)/compiler/tfcc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpirun="mpirun --allow-run-as-root --oversubscribe --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"

# the model (pseudo-random weights) and 4 batches of 64 rows (x in [-1, 1), one-hot labels)
python3 - "$work" "$root/tools" <<'PY'
import random, sys
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from npyw import npy
random.seed(3)
def const(name, dims, scale):
    n = 1
    for x in dims:
        n *= x
    vals = " ".join("float_val: %.5g" % random.uniform(-scale, scale) for _ in range(n))
    shp = " ".join("dim { size: %d }" % x for x in dims)
    return ('node { name: "%s" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "value" '
            'value { tensor { dtype: DT_FLOAT tensor_shape { %s } %s } } } }\n' % (name, shp, vals))
def op(name, o, ins, extra=""):
    i = " ".join('input: "%s"' % x for x in ins)
    return 'node { name: "%s" op: "%s" %s attr { key: "T" value { type: DT_FLOAT } }%s }\n' % (name, o, i, extra)
ph = lambda n, dims: ('node { name: "%s" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } attr { '
                      'key: "shape" value { shape { %s } } } }\n' % (n, " ".join("dim { size: %d }" % x for x in dims)))
s = ph("x", [-1, 784]) + ph("y", [-1, 10])  # the batch is given with --feed
s += const("w1", [784, 256], 0.05) + const("b1", [256], 0.01) + const("w2", [256, 256], 0.09)
s += const("b2", [256], 0.01) + const("w3", [256, 10], 0.15) + const("b3", [10], 0.01)
s += op("h1m", "MatMul", ["x", "w1"]) + op("h1b", "BiasAdd", ["h1m", "b1"]) + op("h1", "Relu", ["h1b"])
s += op("h2m", "MatMul", ["h1", "w2"]) + op("h2b", "BiasAdd", ["h2m", "b2"]) + op("h2", "Relu", ["h2b"])
s += op("lm", "MatMul", ["h2", "w3"]) + op("logits", "BiasAdd", ["lm", "b3"])
s += op("xent", "SoftmaxCrossEntropyWithLogits", ["logits", "y"])
s += ('node { name: "ax" op: "Const" attr { key: "dtype" value { type: DT_INT32 } } attr { key: "value" value { '
      'tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 0 } } } }\n')
s += op("loss", "Mean", ["xent", "ax"], ' attr { key: "Tidx" value { type: DT_INT32 } }')
open(d + "/mlp.pbtxt", "w").write(s)
x = [random.uniform(-1, 1) for _ in range(256 * 784)]
y = []
for i in range(256):
    k = random.randrange(10)
    y += [1.0 if j == k else 0.0 for j in range(10)]
npy(d + "/x.npy", (256, 784), x)
npy(d + "/y.npy", (256, 10), y)
PY
opts="--feed x:64x784 --feed y:64x10 --trainable all --loss loss --optimizer sgd:lr=0.05"
m="$work/mlp.pbtxt"
feeds="--feed x=$work/x.npy --feed y=$work/y.npy"
"$tfcc" compile "$m" $opts -o "$work/single" >/dev/null
"$tfcc" compile "$m" $opts --cluster ps=1,worker=1 --replicas worker -o "$work/ps1" >/dev/null
"$tfcc" compile "$m" $opts --cluster ps=1,worker=2 --replicas worker -o "$work/ps2" >/dev/null
"$tfcc" compile "$m" $opts --cluster ps=1,worker=1 --replicas worker --transfer-compress trunc16 -o "$work/ps1t" >/dev/null
"$tfcc" compile "$m" $opts --cluster ps=1,worker=2 --replicas worker --transfer-compress trunc16 -o "$work/ps2t" >/dev/null
# data-parallel: 32 rows per rank (the model's batch given with --feed x:ROWS,784), 2 ranks
"$tfcc" compile "$m" --feed x:32x784 --feed y:32x10 --trainable all --loss loss --optimizer sgd:lr=0.05 \
    --data-parallel -o "$work/dp2" >/dev/null 2>"$work/dp.err" || { cat "$work/dp.err"; exit 1; }

# name|ranks|command
# (MPI ranks run 1 thread each: 2 ranks fill the 2 cores; the single process is timed with 1 and 2)
configs=(
    "single process, 1 thread|1|$work/single --threads 1"
    "single process, 2 threads|1|$work/single --threads 2"
    "ps=1,worker=1|2|$mpirun -np 2 $work/ps1 --threads 1"
    "ps=1,worker=1 trunc16|2|$mpirun -np 2 $work/ps1t --threads 1"
    "ps=1,worker=2|3|$mpirun -np 3 $work/ps2 --threads 1"
    "ps=1,worker=2 trunc16|3|$mpirun -np 3 $work/ps2t --threads 1"
    "data-parallel -np 2|2|$mpirun -np 2 $work/dp2 --threads 1"
)
load=$(cut -d' ' -f1 /proc/loadavg)
for r in $(seq "$rounds"); do
    for i in "${!configs[@]}"; do
        IFS='|' read -r name ranks cmd <<<"${configs[$i]}"
        $cmd $feeds --steps "$steps" --log-every "$steps" --out-dir "$work/out" >"$work/out.$i.$r" 2>"$work/err.$i.$r" \
            || { echo "bench-dist: $name failed: $(cat "$work/err.$i.$r")" >&2; exit 1; }
    done
done
python3 - "$work" "$rounds" "$steps" "$load" "$root/benchmarks/RESULTS.md" "${configs[@]}" <<'PY'
import os, re, statistics, subprocess, sys, time
work, rounds, steps, load, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
configs = [c.split("|") for c in sys.argv[6:]]
rows, base = [], None
for i, (name, ranks, _) in enumerate(configs):
    ms, bytes_, err, loss = [], None, None, None
    for r in range(1, rounds + 1):
        text = open("%s/out.%d.%d" % (work, i, r)).read()
        ms.append(float(re.search(r"ms_per_step=([0-9.]+)", text).group(1)))
        m = re.search(r"bytes_per_run=([0-9.]+)", text)
        bytes_ = float(m.group(1)) if m else 0.0
        m = re.search(r"trunc16_max_rel_err=([0-9.e-]+)", text)
        err = m.group(1) if m else ""
        m = re.findall(r"^step=%d loss=([0-9.e+-]+)" % steps, text, re.M)
        loss = m[-1] if m else "?"
    med = statistics.median(ms)
    base = base or med
    rows.append("| %s | %s | %.3f | %.2f | %.0f | %s | %s |" % (name, ranks, med, med / base, bytes_, err or "-", loss))
cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True,
                     text=True).stdout.strip()
sec = ["<!-- distributed:begin -->", "## Distributed training (issue 9)", "",
       "Generated by `make bench-dist` (benchmarks/distributed.sh) on %s UTC: %s, %d CPUs, loopback only "
       "(Open MPI shared memory between ranks), 1-minute load %s before the runs." %
       (time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), cpu, os.cpu_count(), load), "",
       "Model: an MLP 784-256-256-10 with softmax cross entropy (269k float32 parameters, 1.03 MiB), SGD, a "
       "global batch of 64 rows per step in every configuration (PS: 64/W rows per worker; data-parallel: 32 "
       "rows per rank).  %d steps per run, %d interleaved rounds, median of rank 0's `ms_per_step` (the run "
       "function only; rank 0 is the ps task or replica 0 and waits for every worker); every MPI rank runs 1 "
       "thread (`--threads 1`).  Bytes: payload every "
       "rank sent per step, counted by the runtime (parameters to the workers and gradients and losses back for "
       "PS; each rank's allreduce contribution for data-parallel).  Ratio: step time / the 1-thread single process's." %
       (steps, rounds), "",
       "| configuration | ranks | ms/step | vs 1 rank | bytes/step | trunc16 max rel. error | loss after %d steps |" % steps,
       "|---|---:|---:|---:|---:|---:|---:|"] + rows + ["",
       "With 2 cores, 3 ranks oversubscribe the machine (a rank waits for a core), and every rank also "
       "spins in MPI's progress loop while it waits for a tensor: the multi-rank rows measure the cost of the "
       "transfers and of the shared cores, not a speed-up, which needs a core (or a machine) per rank.  trunc16 "
       "halves the bytes, but between processes of one machine (shared memory, several GB/s) its packing and "
       "widening loops (one pass over every tensor sent, on one thread, plus the error tracking) cost more than "
       "the saved copy; it pays where the link is slow (TCP between machines), which this machine cannot show.",
       "<!-- distributed:end -->"]
text = open(out).read() if os.path.exists(out) else ""
b, e = text.find("<!-- distributed:begin -->"), text.find("<!-- distributed:end -->")
new = "\n".join(sec) + "\n"
if b >= 0 and e > b:
    text = text[:b] + new + text[e + len("<!-- distributed:end -->") + 1:]
else:
    text = text.rstrip("\n") + "\n\n" + new
open(out, "w").write(text)
print("\n".join(sec))
PY
