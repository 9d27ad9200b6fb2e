#!/usr/bin/env node
// peer_ort.js: ONNX Runtime (npm onnxruntime-node, CPU execution provider) as a long-lived benchmark
// peer for benchmarks/bench.js. It loads the model once; then, per request, runs it after a warm-up and
// reports the median run time, so the harness can interleave engines (A B A B ...) without reloading.
//
// usage: node benchmarks/peer_ort.js MODEL.onnx NAME=FILE.npy...
// Protocol (JSON, one object per line): on start it prints {"ready":true,"engine":...,"version":...}
// (or {"error":...} and exits 1). Each request line {"threads":T,"warmup":W,"repeat":N,"out":DIR}
// creates (once per T) a session with intraOpNumThreads T, interOpNumThreads 1, graph optimization
// level 'all', sequential execution, CPU provider; runs W untimed and N timed inferences (session.run
// only: the input tensors are built once) and answers {"median_ms","min_ms","times","outputs"}, after
// writing each output to DIR/NAME.npy (float32). Closing stdin ends the process.
// onnxruntime-node comes from benchmarks/node/node_modules (scripts/setup.sh --bench).
'use strict';
const path = require('path');
const P = require('./peer_util');

async function main() {
  const [model, ...feedArgs] = process.argv.slice(2);
  if (!model) throw new Error('usage: peer_ort.js MODEL.onnx NAME=FILE.npy...');
  const ort = P.reqBench('onnxruntime-node');
  const version = P.reqBench('onnxruntime-node/package.json').version;
  const feeds = {};
  for (const f of feedArgs) {
    const k = f.indexOf('=');
    const x = P.U.readNpy(f.slice(k + 1));
    feeds[f.slice(0, k)] = new ort.Tensor(x.dtype, x.data, x.shape);
  }
  const sessions = new Map();
  const session = async (threads) => {
    if (!sessions.has(threads)) {
      sessions.set(threads, await ort.InferenceSession.create(model, {
        executionProviders: ['cpu'], intraOpNumThreads: threads, interOpNumThreads: 1,
        graphOptimizationLevel: 'all', executionMode: 'sequential',
      }));
    }
    return sessions.get(threads);
  };
  await session(1); // a model ORT cannot load fails here, before the first round
  P.serve({ engine: 'onnxruntime-node', version }, async (req) => {
    const s = await session(req.threads);
    let res = null;
    const times = await P.timeRuns(req, async () => { res = await s.run(feeds); });
    const outputs = [];
    for (const name of s.outputNames) {
      const t = res[name];
      P.U.writeNpy(path.join(req.out, P.U.npyName(name)), 'float32', t.dims, t.data);
      outputs.push(name);
    }
    return { times, outputs };
  });
}

main().catch((e) => { P.fail(e); });
