#!/usr/bin/env node
// bench.js: tfcc's benchmarks (`make bench` runs it through benchmarks/run.sh).
//
// usage: node benchmarks/bench.js --tfcc build/compiler/tfcc [--models ../shared/models]
//                                [--work DIR] [--rounds K] [--repeat M] [--out benchmarks/RESULTS.md]
//
// (a) Compile time: every model of the corpus manifest that has a reference and no control flow
//     (no Switch/Merge/Enter/Exit/NextIteration/LoopCond/While/If op) is compiled once with
//     `tfcc compile ... --stats`; tfcc's own time (load + import + passes + codegen) and the C compiler's
//     time (cc_ms) come from the stats line, the wall time from here. The executable then runs once
//     on the reference inputs and its outputs are compared with the reference outputs.
// (b) Run time: nsfwjs MobileNetV2 compiled by tfcc versus TF.js 4.22 with the wasm backend (in
//     this process), on the same reference input. Interleaved rounds: exe --repeat M --threads 1
//     (it prints its median), then M timed TF.js runs, then exe --threads 2; after 3 untimed warm-up
//     runs of each. Reported: median and min over rounds of the per-round medians. The two outputs
//     are compared (max abs difference).
// (c) Memory: planned arena bytes versus the sum of all intermediate tensors, per model (stats).
// Results go to a Markdown file with the method, the machine, the date and the load before runs.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync, spawnSync } = require('child_process');
const U = require('../tools/tfjs_util');

const CONTROL_FLOW = new Set(['Switch', 'Merge', 'Enter', 'Exit', 'NextIteration', 'LoopCond', 'While', 'If',
  'StatelessWhile', 'StatelessIf', 'RefSwitch', 'RefMerge', 'RefEnter', 'RefExit', 'RefNextIteration']);
const RUN_MODEL = 'npm-nsfwjs/mobilenet_v2_mid/model.json';
const RUN_REF = 'npm-nsfwjs/mobilenet_v2_mid/reference/model';

function args() {
  const a = { tfcc: 'build/compiler/tfcc', models: path.join(__dirname, '..', '..', 'shared', 'models'),
    work: path.join(os.tmpdir(), 'tfcc-bench'), rounds: 7, repeat: 10, out: path.join(__dirname, 'RESULTS.md'), only: null };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    const k = v[i].replace(/^--/, '');
    if (!(k in a)) throw new Error(`unknown argument ${v[i]}`);
    a[k] = ['rounds', 'repeat'].includes(k) ? Number(v[++i]) : v[++i];
  }
  return a;
}

function parseStats(stderr) {
  const line = stderr.split('\n').find((l) => l.startsWith('stats:'));
  if (!line) return null;
  const s = {};
  for (const m of line.matchAll(/(\w+)=([-0-9.eE+]+)/g)) s[m[1]] = Number(m[2]);
  return s;
}

const stripPort = (t) => t.replace(/:0$/, '');
const firstLine = (s) => (s || '').split('\n').map((l) => l.trim()).filter((l) => l)[0] || '';

function compile(a, model, io, exe) {
  const argv = ['compile', model];
  // NAME:k:DIMS (tfcc's unambiguous form; 'scalar' for rank 0)
  for (const i of io.inputs) argv.push('--feed', `${/:\d+$/.test(i.tensor) ? i.tensor : i.tensor + ':0'}:${i.shape.length ? i.shape.join('x') : 'scalar'}`);
  for (const o of io.outputs) argv.push('--fetch', o.tensor);
  argv.push('-o', exe, '--stats');
  const t0 = process.hrtime.bigint();
  const r = spawnSync(a.tfcc, argv, { encoding: 'utf8', maxBuffer: 64 << 20 });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  return { ok: r.status === 0, wallMs, stats: parseStats(r.stderr || ''), err: r.status === 0 ? '' : firstLine(r.stderr) || `exit ${r.status}`, argv };
}

function runExe(exe, feeds, outDir, extra) {
  fs.mkdirSync(outDir, { recursive: true });
  const argv = [];
  for (const [n, f] of feeds) argv.push('--feed', `${n}=${f}`);
  argv.push('--out-dir', outDir, ...(extra || []));
  const r = spawnSync(exe, argv, { encoding: 'utf8', maxBuffer: 64 << 20 });
  return { ok: r.status === 0, out: r.stdout || '', err: firstLine(r.stderr) || `exit ${r.status}` };
}

function compareOutputs(io, refDir, outDir) {
  let worst = 0;
  for (let k = 0; k < io.outputs.length; k++) {
    const o = io.outputs[k];
    const got = path.join(outDir, U.npyName(o.tensor));
    if (!fs.existsSync(got)) return { ok: false, diff: NaN, note: `missing ${path.basename(got)}` };
    const ref = U.readNpy(path.join(refDir, o.file));
    const d = U.maxAbsDiff(U.readNpy(got).data, ref.data);
    worst = Math.max(worst, d);
  }
  return { ok: true, diff: worst };
}

function median(v) { const s = [...v].sort((x, y) => x - y); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; }
const fmt = (x, d = 1) => (x === undefined || x === null || Number.isNaN(x) ? '-' : Number(x).toFixed(d));
const fmtBytes = (b) => (b === undefined ? '-' : b >= 1 << 20 ? `${(b / (1 << 20)).toFixed(2)} MiB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${b} B`);

function machine() {
  let model = 'unknown'; let cores = os.cpus().length;
  try {
    const l = execFileSync('lscpu', { encoding: 'utf8' });
    const m = /Model name:\s*(.+)/.exec(l); if (m) model = m[1].trim();
    const c = /^CPU\(s\):\s*(\d+)/m.exec(l); if (c) cores = Number(c[1]);
  } catch (e) { /* lscpu missing: keep os.cpus() */ }
  return { model, cores, mem: `${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`, kernel: os.release(), node: process.version };
}

function load() {
  const loadavg = fs.readFileSync('/proc/loadavg', 'utf8').trim();
  let top = '';
  try { top = execFileSync('top', ['-b', '-n', '1', '-w', '120'], { encoding: 'utf8' }).split('\n').slice(0, 14).join('\n'); } catch (e) { top = '(top not available)'; }
  return { loadavg, top };
}

async function benchRun(a) {
  const model = path.join(a.models, RUN_MODEL);
  const refDir = path.join(a.models, RUN_REF);
  const io = JSON.parse(fs.readFileSync(path.join(refDir, 'io.json'), 'utf8'));
  const exe = path.join(a.work, 'nsfwjs_mobilenet_v2');
  const c = compile(a, model, io, exe);
  if (!c.ok) return { error: `tfcc compile failed: ${c.err}` };
  const inFile = path.join(refDir, io.inputs[0].file);
  const feeds = [[stripPort(io.inputs[0].tensor), inFile]];
  const outDir = path.join(a.work, 'nsfwjs_out');
  const fetch = io.outputs[0].tensor;

  const tf = await U.loadTf('wasm');
  const gm = await U.loadGraphModel(tf, model);
  const x = U.readNpy(inFile);
  const input = tf.tensor(x.data, x.shape, 'float32');
  const feedObj = { [io.inputs[0].tensor]: input };
  const once = () => { const t0 = process.hrtime.bigint(); const y = gm.execute(feedObj, fetch); const d = y.dataSync(); const ms = Number(process.hrtime.bigint() - t0) / 1e6; y.dispose(); return { ms, d }; };
  let tfOut = null;
  for (let i = 0; i < 3; i++) tfOut = once().d; // warm-up (wasm compile, weight upload)
  const exeMedian = (threads) => {
    const r = runExe(exe, feeds, outDir, ['--repeat', String(a.repeat), '--threads', String(threads)]);
    if (!r.ok) throw new Error(`${exe} failed: ${r.err}`);
    const m = /median_ms=([0-9.eE+-]+)/.exec(r.out);
    if (!m) throw new Error(`${exe} printed no median_ms= (stdout: ${firstLine(r.out)})`);
    return Number(m[1]);
  };
  exeMedian(1); exeMedian(2); // warm-up (page cache)
  const rows = { tfcc1: [], tfjs: [], tfcc2: [] };
  const ld = load();
  for (let r = 0; r < a.rounds; r++) {
    rows.tfcc1.push(exeMedian(1));
    const t = []; for (let i = 0; i < a.repeat; i++) t.push(once().ms);
    rows.tfjs.push(median(t));
    rows.tfcc2.push(exeMedian(2));
  }
  const after = load();
  // agreement: tfcc's output (last run) vs TF.js wasm and vs the reference (TF.js cpu)
  const mine = U.readNpy(path.join(outDir, U.npyName(fetch))).data;
  const ref = U.readNpy(path.join(refDir, io.outputs[0].file)).data;
  return { rows, load: ld, loadAfter: after, stats: c.stats, compileWall: c.wallMs, diffWasm: U.maxAbsDiff(mine, tfOut), diffRef: U.maxAbsDiff(mine, ref), backend: tf.getBackend(), tfVersion: tf.version_core };
}

async function main() {
  const a = args();
  fs.rmSync(a.work, { recursive: true, force: true });
  fs.mkdirSync(a.work, { recursive: true });
  const manifest = JSON.parse(fs.readFileSync(path.join(a.models, 'manifest.json'), 'utf8'));
  const entries = manifest.filter((e) => e.reference && !(e.ops || []).some((o) => CONTROL_FLOW.has(o)))
    .filter((e) => !a.only || e.file.includes(a.only));
  const before = load();
  const mach = machine();
  console.log(`machine: ${mach.model}, ${mach.cores} CPUs; load ${before.loadavg}`);

  // (a) + (c)
  const res = [];
  for (const e of entries) {
    const refDir = path.join(a.models, e.reference);
    const io = JSON.parse(fs.readFileSync(path.join(refDir, 'io.json'), 'utf8'));
    const tag = e.file.replace(/[^A-Za-z0-9]+/g, '_');
    const exe = path.join(a.work, tag);
    const c = compile(a, path.join(a.models, e.file), io, exe);
    const r = { file: e.file, nodes: e.nodes, c };
    if (c.ok) {
      const run = runExe(exe, io.inputs.map((i) => [stripPort(i.tensor), path.join(refDir, i.file)]), exe + '_out');
      r.check = run.ok ? compareOutputs(io, refDir, exe + '_out') : { ok: false, note: `run failed: ${run.err}` };
    }
    res.push(r);
    const s = c.stats || {};
    console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${e.file}: wall ${fmt(c.wallMs, 0)} ms, tfcc ${fmt((s.load_ms || 0) + (s.import_ms || 0) + (s.passes_ms || 0) + (s.codegen_ms || 0))} ms, cc ${fmt(s.cc_ms, 0)} ms` +
      (c.ok ? `, max|diff| ${r.check.ok ? r.check.diff.toExponential(1) : r.check.note}` : `: ${c.err}`));
  }

  // (b)
  let rb;
  try { rb = await benchRun(a); } catch (e) { rb = { error: String(e && e.message ? e.message : e) }; }
  if (rb.error) console.log(`run-time benchmark: ${rb.error}`);
  else console.log(`nsfwjs MobileNetV2: tfcc 1 thread ${fmt(median(rb.rows.tfcc1), 2)} ms, 2 threads ${fmt(median(rb.rows.tfcc2), 2)} ms, TF.js wasm ${fmt(median(rb.rows.tfjs), 2)} ms`);

  fs.writeFileSync(a.out, report(a, mach, before, res, rb));
  console.log(`wrote ${a.out}`);
}

function report(a, mach, before, res, rb) {
  const L = [];
  const date = new Date().toISOString().replace('T', ' ').replace(/\..*/, ' UTC');
  L.push('# tfcc benchmarks', '');
  L.push(`Generated by \`make bench\` (benchmarks/run.sh -> benchmarks/bench.js) on ${date}.`, '');
  L.push('## Machine', '');
  L.push(`- CPU: ${mach.model}, ${mach.cores} logical CPUs; memory ${mach.mem}; Linux ${mach.kernel}; Node ${mach.node}`);
  L.push(`- Load before the runs (/proc/loadavg): \`${before.loadavg}\``);
  L.push('- `top` before the runs:', '', '```', before.top, '```', '');
  const busy = Number(before.loadavg.split(' ')[0]);
  if (busy > 0.5) {
    L.push(`**Caveat: the machine was busy when this ran (1-minute load ${busy} on ${mach.cores} CPUs, see \`top\` above).**`,
      'Other processes shared the cores, so every time below is inflated, and the 2-thread row most of all',
      '(its threads wait for each other while a core is taken). Rerun `make bench` on a quiet machine for clean numbers.', '');
  } else {
    L.push('The machine was quiet (load near 0) when this ran.', '');
  }

  L.push('## (a) Compile time', '');
  L.push('Every corpus model (`../shared/models/manifest.json`) with reference outputs and without control-flow ops, compiled once by',
    '`tfcc compile MODEL --feed ... --fetch ... -o EXE --stats` (feeds, shapes and fetches from the reference `io.json`).',
    '*tfcc* = load + import + passes + codegen as reported by `--stats`; *cc* = the C compiler and linker (`cc_ms`); *wall* = the whole command.',
    'Each executable then ran once on the reference inputs; *max |diff|* is the largest absolute difference from the reference outputs',
    '(TF.js 4.22 CPU backend).', '');
  L.push('| model | TF nodes | IR nodes | tfcc ms | cc ms | wall ms | cc share | max \\|diff\\| |');
  L.push('|---|---:|---:|---:|---:|---:|---:|---:|');
  let tt = 0; let tc = 0; let nOk = 0;
  for (const r of res) {
    const s = r.c.stats || {};
    if (!r.c.ok) { L.push(`| ${r.file} | ${r.nodes} | - | - | - | ${fmt(r.c.wallMs, 0)} | - | compile failed: ${r.c.err.replace(/\|/g, '\\|').slice(0, 120)} |`); continue; }
    const own = (s.load_ms || 0) + (s.import_ms || 0) + (s.passes_ms || 0) + (s.codegen_ms || 0);
    tt += own; tc += s.cc_ms || 0; nOk++;
    const chk = r.check.ok ? r.check.diff.toExponential(1) : r.check.note.replace(/\|/g, '\\|').slice(0, 120);
    L.push(`| ${r.file} | ${s.tf_nodes ?? r.nodes} | ${s.ir_nodes ?? '-'} | ${fmt(own)} | ${fmt(s.cc_ms, 0)} | ${fmt(r.c.wallMs, 0)} | ${s.cc_ms !== undefined ? fmt(100 * s.cc_ms / Math.max(1e-9, own + s.cc_ms), 0) + '%' : '-'} | ${chk} |`);
  }
  L.push('', `Compiled ${nOk} of ${res.length} models. Total tfcc time ${fmt(tt, 0)} ms, total C compiler time ${fmt(tc, 0)} ms` +
    (tt > 0 ? ` (cc / tfcc = ${fmt(tc / tt, 1)}x).` : '.'), '');

  L.push('## (b) Run time: nsfwjs MobileNetV2 (224x224x3), tfcc vs TF.js wasm', '');
  if (rb.error) {
    L.push(`Not measured: ${rb.error}`, '');
  } else {
    L.push(`Model \`${RUN_MODEL}\`, input \`${RUN_REF}/input_0.npy\` (seeded uniform noise). Compiled once by tfcc`,
      `(tfcc ${fmt(((rb.stats || {}).load_ms || 0) + ((rb.stats || {}).import_ms || 0) + ((rb.stats || {}).passes_ms || 0) + ((rb.stats || {}).codegen_ms || 0))} ms + cc ${fmt((rb.stats || {}).cc_ms, 0)} ms).`,
      `TF.js ${rb.tfVersion} with the \`${rb.backend}\` backend (single-threaded in Node, SIMD) runs in the benchmark's own Node process.`,
      `Method: 3 untimed warm-up runs of each; then ${a.rounds} interleaved rounds, each = the tfcc executable with \`--repeat ${a.repeat} --threads 1\``,
      `(it prints the median of its ${a.repeat} runs), ${a.repeat} timed TF.js runs (median taken), the executable with \`--threads 2\`.`,
      'Table: median and min over the rounds of the per-round medians, in milliseconds per inference (batch 1).', '');
    L.push(`Load (/proc/loadavg) just before the timed rounds: \`${rb.load.loadavg}\`; just after: \`${rb.loadAfter.loadavg}\`.`,
      'A round far slower than the others (see the per-round medians below) means another process took a core during it;',
      'the medians are robust to a few such rounds.', '');
    const base = median(rb.rows.tfjs);
    L.push('| engine | threads | median ms | min ms | speed-up vs TF.js wasm |', '|---|---:|---:|---:|---:|');
    L.push(`| TF.js wasm | 1 | ${fmt(base, 2)} | ${fmt(Math.min(...rb.rows.tfjs), 2)} | 1.00x |`);
    L.push(`| tfcc | 1 | ${fmt(median(rb.rows.tfcc1), 2)} | ${fmt(Math.min(...rb.rows.tfcc1), 2)} | ${fmt(base / median(rb.rows.tfcc1), 2)}x |`);
    L.push(`| tfcc | 2 | ${fmt(median(rb.rows.tfcc2), 2)} | ${fmt(Math.min(...rb.rows.tfcc2), 2)} | ${fmt(base / median(rb.rows.tfcc2), 2)}x |`);
    L.push('', `Outputs agree: max |tfcc - TF.js wasm| = ${rb.diffWasm.toExponential(2)}, max |tfcc - reference (TF.js cpu)| = ${rb.diffRef.toExponential(2)}` +
      ` (output: 5 class probabilities).`, '');
    L.push(`Per-round medians (ms): tfcc 1 thread ${rb.rows.tfcc1.map((x) => fmt(x, 2)).join(', ')}; TF.js ${rb.rows.tfjs.map((x) => fmt(x, 2)).join(', ')};` +
      ` tfcc 2 threads ${rb.rows.tfcc2.map((x) => fmt(x, 2)).join(', ')}.`, '');
  }

  L.push('## (c) Memory: planned arena vs all intermediates', '');
  L.push('From `--stats`: *arena* = the one buffer the static memory planner lays every intermediate tensor into (reusing dead buffers);',
    '*intermediates* = the sum of the sizes of all intermediate tensors (what one buffer per tensor would take); weights are separate.', '');
  L.push('| model | arena | intermediates | arena / intermediates | weights |', '|---|---:|---:|---:|---:|');
  for (const r of res) {
    const s = r.c.stats;
    if (!r.c.ok || !s) continue;
    const ratio = s.intermediates_bytes > 0 ? `${fmt(100 * s.arena_bytes / s.intermediates_bytes, 1)}%` : '-';
    L.push(`| ${r.file} | ${fmtBytes(s.arena_bytes)} | ${fmtBytes(s.intermediates_bytes)} | ${ratio} | ${fmtBytes(s.weights_bytes)} |`);
  }
  L.push('');
  return L.join('\n');
}

main().catch((e) => { console.error('bench:', e && e.stack ? e.stack : e); process.exit(1); });
