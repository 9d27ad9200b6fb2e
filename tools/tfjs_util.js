// tfjs_util.js: helpers shared by tools/demo.js and benchmarks/tfjs_bench.js.
//
// - readNpy/writeNpy: NumPy .npy v1/v2 files (little-endian f4/i4/u1/b1/i8/f8) <-> {dtype, shape, data}.
// - loadTf(backend): requires @tensorflow/tfjs-core + the converter from tools/node/node_modules and
//   selects the 'cpu' (pure JS, the corpus' reference backend) or 'wasm' backend (wasm files located
//   on disk with setWasmPaths, see TOOLCHAIN.md section 10).
// - loadGraphModel(tf, modelJson): reads model.json and its weight shards from disk and builds a
//   GraphModel with tf.io.fromMemory (no fetch, no network).
// - maxAbsDiff(a, b): largest |a[i] - b[i]| (Infinity on length mismatch, NaN anywhere -> Infinity).
// Everything here is synchronous file I/O; nothing downloads.
'use strict';
const fs = require('fs');
const path = require('path');

const NODE_DIR = path.join(__dirname, 'node', 'node_modules');
function req(name) { return require(require.resolve(name, { paths: [NODE_DIR] })); }

const DESCR = { '<f4': 'float32', '<i4': 'int32', '|u1': 'uint8', '|b1': 'bool', '<i8': 'int64', '<f8': 'float64' };

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hoff = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hoff, hoff + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const shapeM = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !shapeM || /'fortran_order':\s*True/.test(header)) throw new Error(`${file}: unsupported header ${header}`);
  const dtype = DESCR[descr[1]];
  if (!dtype) throw new Error(`${file}: unsupported dtype ${descr[1]}`);
  const shape = shapeM[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const body = buf.subarray(hoff + hlen);
  const copy = new Uint8Array(body).buffer; // aligned copy
  let data;
  if (dtype === 'float32') data = new Float32Array(copy, 0, count);
  else if (dtype === 'int32') data = new Int32Array(copy, 0, count);
  else if (dtype === 'float64') data = Float32Array.from(new Float64Array(copy, 0, count));
  else if (dtype === 'int64') data = Int32Array.from(new BigInt64Array(copy, 0, count), (v) => Number(v));
  else data = new Uint8Array(copy, 0, count);
  return { dtype, shape, data };
}

function writeNpy(file, dtype, shape, values) {
  const descr = { float32: '<f4', int32: '<i4', uint8: '|u1', bool: '|b1' }[dtype];
  if (!descr) throw new Error(`writeNpy: unsupported dtype ${dtype}`);
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header + ' '.repeat(total - 10 - header.length - 1) + '\n';
  const h = Buffer.alloc(10 + header.length);
  h.write('\x93NUMPY', 0, 'latin1'); h[6] = 1; h[7] = 0; h.writeUInt16LE(header.length, 8); h.write(header, 10, 'latin1');
  let body;
  if (dtype === 'float32') body = Buffer.from(Float32Array.from(values).buffer);
  else if (dtype === 'int32') body = Buffer.from(Int32Array.from(values).buffer);
  else body = Buffer.from(Uint8Array.from(values));
  fs.writeFileSync(file, Buffer.concat([h, body]));
}

async function loadTf(backend) {
  const tf = req('@tensorflow/tfjs-core');
  req('@tensorflow/tfjs-backend-cpu');
  if (backend === 'wasm') {
    const wasm = req('@tensorflow/tfjs-backend-wasm');
    const wasmFile = require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm', { paths: [NODE_DIR] });
    wasm.setWasmPaths(path.dirname(wasmFile) + path.sep);
  }
  if (!(await tf.setBackend(backend || 'cpu'))) throw new Error(`TF.js backend ${backend} failed to initialise`);
  await tf.ready();
  if (tf.getBackend() === 'cpu') tf.backend().firstUse = false; // no "install tfjs-node" banner
  return tf;
}

async function loadGraphModel(tf, modelJson) {
  const tfc = req('@tensorflow/tfjs-converter');
  const mj = JSON.parse(fs.readFileSync(modelJson, 'utf8'));
  const dir = path.dirname(modelJson);
  const specs = []; const bufs = [];
  for (const g of mj.weightsManifest) {
    for (const w of g.weights) specs.push(w);
    for (const p of g.paths) bufs.push(fs.readFileSync(path.join(dir, p)));
  }
  const all = Buffer.concat(bufs);
  const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
  return tfc.loadGraphModel(tf.io.fromMemory({
    modelTopology: mj.modelTopology, weightSpecs: specs, weightData, format: mj.format,
    generatedBy: mj.generatedBy, convertedBy: mj.convertedBy, signature: mj.signature,
    userDefinedMetadata: mj.userDefinedMetadata,
  }));
}

function maxAbsDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = Number.isNaN(d) ? Infinity : d;
  }
  return m;
}

// tensor name -> file name used by tfcc's executables (chars outside [A-Za-z0-9._-] -> '_')
function npyName(tensor) { return tensor.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy'; }

module.exports = { readNpy, writeNpy, loadTf, loadGraphModel, maxAbsDiff, npyName, req, NODE_DIR };
