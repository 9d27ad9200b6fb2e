// peer_util.js: what the Node benchmark peers (peer_ort.js, peer_tfjs.js) share: the line protocol
// spoken with benchmarks/bench.js (see peer_ort.js for its description), the timing loop (W untimed
// runs, then N timed ones, each timed with process.hrtime), and require() from benchmarks/node.
'use strict';
const path = require('path');
const readline = require('readline');
const U = require('../tools/tfjs_util');

const BENCH_NODE = path.join(__dirname, 'node', 'node_modules');
function reqBench(name) { return require(require.resolve(name, { paths: [BENCH_NODE] })); }

function median(v) { const s = [...v].sort((x, y) => x - y); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; }

// Runs fn warmup times untimed, then repeat times timed; returns the run times in milliseconds.
async function timeRuns(req, fn) {
  for (let i = 0; i < (req.warmup ?? 1); i++) await fn();
  const times = [];
  for (let i = 0; i < Math.max(1, req.repeat || 1); i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return times;
}

const send = (o) => process.stdout.write(JSON.stringify(o) + '\n');

// Announces readiness with info, then answers each request line with handle(req) -> {times, ...}.
function serve(info, handle) {
  send({ ready: true, ...info });
  const rl = readline.createInterface({ input: process.stdin });
  let chain = Promise.resolve();
  rl.on('line', (line) => {
    chain = chain.then(async () => {
      try {
        const req = JSON.parse(line);
        const r = await handle(req);
        send({ ...r, median_ms: median(r.times), min_ms: Math.min(...r.times) });
      } catch (e) {
        send({ error: String(e && e.message ? e.message : e) });
      }
    });
  });
  rl.on('close', () => { chain.then(() => process.exit(0)); });
}

function fail(e) { send({ error: String(e && e.message ? e.message : e) }); process.exit(1); }

module.exports = { U, reqBench, median, timeRuns, serve, fail, BENCH_NODE };
