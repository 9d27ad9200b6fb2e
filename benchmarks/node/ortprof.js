// scratch (not committed): ORT per-node profile, min over runs, in ms
'use strict';
const path = require('path');
const P = require('/work/main/benchmarks/peer_util');
async function main() {
  const [model, feed, threads, reps] = process.argv.slice(2);
  const ort = P.reqBench('onnxruntime-node');
  const k = feed.indexOf('=');
  const x = P.U.readNpy(feed.slice(k + 1));
  const feeds = { [feed.slice(0, k)]: new ort.Tensor(x.dtype, x.data, x.shape) };
  const s = await ort.InferenceSession.create(model, { executionProviders: ['cpu'], intraOpNumThreads: Number(threads), interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential', enableProfiling: true, profileFilePrefix: '/tmp/rss/ortprof' });
  for (let i = 0; i < 2; i++) await s.run(feeds);
  const t = [];
  for (let i = 0; i < Number(reps); i++) { const t0 = process.hrtime.bigint(); await s.run(feeds); t.push(Number(process.hrtime.bigint() - t0) / 1e6); }
  const f = s.endProfiling();
  t.sort((a, b) => a - b);
  console.log('median_ms', t[t.length >> 1], 'profile', f);
}
main();
