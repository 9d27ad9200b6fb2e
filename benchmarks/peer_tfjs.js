#!/usr/bin/env node
// peer_tfjs.js: TensorFlow.js with the wasm backend (tools/node/node_modules, the versions pinned in
// tools/node/package.json) as a long-lived benchmark peer for benchmarks/bench.js, for the TF.js graph
// models of ../shared/models. In Node the wasm backend is single-threaded (SIMD), so the request's
// thread count is ignored.
//
// usage: node benchmarks/peer_tfjs.js MODEL.json --feed TENSOR=FILE.npy... --fetch TENSOR...
// Protocol: the same as peer_ort.js. Each timed run is GraphModel.execute plus dataSync() of every
// fetched tensor (TF.js runs lazily; the values exist only once read); the input tensors are built once.
// Outputs are written to DIR/<fetch name>.npy, with the file names tfcc's executables use.
'use strict';
const path = require('path');
const P = require('./peer_util');

async function main() {
  const v = process.argv.slice(2);
  const model = v[0];
  const feedArgs = []; const fetch = [];
  for (let i = 1; i < v.length; i++) {
    if (v[i] === '--feed') feedArgs.push(v[++i]);
    else if (v[i] === '--fetch') fetch.push(v[++i]);
    else throw new Error(`peer_tfjs: unknown argument ${v[i]}`);
  }
  if (!model || !fetch.length) throw new Error('usage: peer_tfjs.js MODEL.json --feed T=FILE.npy... --fetch T...');
  const tf = await P.U.loadTf('wasm');
  const gm = await P.U.loadGraphModel(tf, model);
  const feeds = {};
  for (const f of feedArgs) {
    const k = f.lastIndexOf('=');
    const x = P.U.readNpy(f.slice(k + 1));
    feeds[f.slice(0, k)] = tf.tensor(x.data, x.shape, x.dtype === 'float32' || x.dtype === 'int32' ? x.dtype : 'float32');
  }
  const runOnce = () => {
    const y = gm.execute(feeds, fetch);
    const ys = Array.isArray(y) ? y : [y];
    const out = ys.map((t) => ({ shape: t.shape, dtype: t.dtype, data: t.dataSync() }));
    tf.dispose(ys);
    return out;
  };
  P.serve({ engine: 'tfjs-wasm', version: tf.version_core, backend: tf.getBackend() }, async (req) => {
    let out = null;
    const times = await P.timeRuns(req, async () => { out = runOnce(); });
    const outputs = [];
    out.forEach((o, k) => {
      const name = P.U.npyName(fetch[k]);
      P.U.writeNpy(path.join(req.out, name), o.dtype === 'int32' ? 'int32' : 'float32', o.shape, o.data);
      outputs.push(fetch[k]);
    });
    return { times, outputs };
  });
}

main().catch((e) => { P.fail(e); });
