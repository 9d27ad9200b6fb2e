#!/usr/bin/env python3
"""fuzz/seeds.py - builds the seed corpora of the fuzz targets.

Usage: fuzz/seeds.py MODELS_DIR ERRORS_DATA_DIR OUT_DIR [REGRESS_DIR]

Copies small files (<= 64 KiB) from the model corpus (../shared/models) and
from tests/errors/data into OUT_DIR/<target>/, named by a hash of their
content (duplicates collapse).  Nothing is ever written into the repository.
  graphdef_binary  *.pb
  pbtxt            *.pbtxt (not *.config.pbtxt)
  config           *.config.pbtxt
  npy              *.npy
  ckpt             *.index (TensorFlow checkpoint indexes)
  tfjs             TF.js model.json files in fuzz_tfjs's input layout: the
                   JSON with every weight moved into one group whose paths
                   are ["shard.bin"], then a NUL byte and the concatenated
                   shards when they fit in 64 KiB (otherwise the JSON alone,
                   and a copy without weightsManifest).
  op graphs       for every op named in fuzz/pbtxt.dict (the supported
                   ops), a one-op graph built from the op registry
                   (MODELS_DIR/_reference/tf_op_registry/ops.pbtxt): float
                   inputs are placeholders of shape [1,4,4,2], integer inputs
                   small constants picked by argument name, attrs their
                   registry defaults; added to pbtxt, and (encoded with
                   protoc when it is installed) to graphdef_binary.
  model            *.pb, *.meta, saved_model.pb(txt), *.onnx (content-detected
                   loading), plus small ONNX models from ONNX_DIR
                   (/usr/share/libonnx-testdata/data when installed)
  ckpt blocks      data-block contents with a header and entries over
                   fuzz_ckpt's 64-byte shard, CRCs right (ckpt_seeds)
  regressions      REGRESS_DIR/TARGET-*.* (tests/fuzz_regress) go to TARGET.
A missing MODELS_DIR just gives smaller corpora.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

LIMIT = 64 * 1024


def put(out, target, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def tfjs_seeds(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if len(raw) > 4 * LIMIT:
            return []
        j = json.loads(raw)
    except (OSError, ValueError):
        return [raw] if len(raw) <= LIMIT else []
    if not isinstance(j, dict) or "modelTopology" not in j:
        return []
    seeds = []
    man = j.get("weightsManifest")
    if isinstance(man, list) and man:
        weights, shard = [], b""
        folder = os.path.dirname(path)
        for grp in man:
            weights += grp.get("weights", [])
            for p in grp.get("paths", []):
                try:
                    with open(os.path.join(folder, p), "rb") as f:
                        shard += f.read(LIMIT + 1)
                except OSError:
                    pass
        j2 = dict(j, weightsManifest=[{"paths": ["shard.bin"], "weights": weights}])
        text = json.dumps(j2, separators=(",", ":")).encode()
        if len(shard) <= LIMIT:
            seeds.append(text + b"\0" + shard)
        else:
            seeds.append(text)
        del j["weightsManifest"]
    seeds.append(json.dumps(j, separators=(",", ":")).encode())
    return [s for s in seeds if len(s) <= 2 * LIMIT]


INT_TYPE_ATTRS = {"Tidx", "Tshape", "Tpaddings", "Tmultiples", "Tperm", "Taxis", "Index", "Tindices",
                  "TI", "Tblock_shape", "Tcrops", "Tindex", "out_idx", "Tlen", "Tsplits", "Tcomplex"}
INT_VALUES = [  # (argument name pattern, int32 values, shape)
    (r"axis|dim|reduction_indices|split_dim|concat_dim", [1], []),
    (r"^(shape|dims|output_shape|new_shape|sizes?_splits)$", [2, 16], [2]),
    (r"perm", [0, 2, 1, 3], [4]),
    (r"paddings|crops", [0, 0, 1, 1, 1, 1, 0, 0], [4, 2]),
    (r"multiples", [1, 2, 1, 1], [4]),
    (r"begin", [0, 0, 0, 0], [4]),
    (r"^end$|^size$", [1, 2, 2, 2], [4]),
    (r"strides", [1, 1, 1, 1], [4]),
    (r"block_shape", [2, 2], [2]),
    (r"size", [2, 2], [2]),
    (r"", [1], []),
]


def parse_ops(path):
    """op name -> (input args [(name, fields)], attrs [(name, block)]) from an OpList pbtxt."""
    with open(path) as f:
        text = f.read()
    ops = {}
    for block in re.split(r"\nop \{", text):
        m = re.search(r'^\s*name: "([^"]+)"', block)
        if not m:
            continue
        ins = [dict(re.findall(r'(\w+): "?([\w.]+)"?', a)) for a in re.findall(r"input_arg \{(.*?)\n  \}", block, re.S)]
        attrs = re.findall(r"\n  attr \{(.*?)\n  \}", block, re.S)
        ops[m.group(1)] = (ins, attrs)
    return ops


def const_node(name, dtype, vals, shape):
    dims = "".join("dim { size: %d } " % d for d in shape)
    field = {"DT_INT32": "int_val", "DT_INT64": "int64_val", "DT_BOOL": "bool_val"}.get(dtype, "float_val")
    v = " ".join("%s: %s" % (field, ("true" if x else "false") if dtype == "DT_BOOL" else x) for x in vals)
    return ('node { name: "%s" op: "Const" attr { key: "dtype" value { type: %s } } attr { key: "value" '
            'value { tensor { dtype: %s tensor_shape { %s} %s } } } }\n' % (name, dtype, dtype, dims, v))


def op_graph(op, ins, attrs):
    """A one-op graph in text format (or None)."""
    attr_types = {}
    out_attrs = []
    for a in attrs:
        name = re.search(r'name: "(\w+)"', a).group(1)
        typ = re.search(r'type: "([\w()]+)"', a).group(1)
        default = re.search(r"default_value \{\s*(.*?)\s*\}\n", a, re.S)
        if typ == "type":
            t = default.group(1).split(":")[1].strip() if default and default.group(1).startswith("type:") else None
            if t is None:
                t = "DT_INT32" if name in INT_TYPE_ATTRS else "DT_FLOAT"
            attr_types[name] = t
            out_attrs.append('attr { key: "%s" value { type: %s } }' % (name, t))
        elif default and not default.group(1).startswith("list"):
            out_attrs.append('attr { key: "%s" value { %s } }' % (name, default.group(1)))
        elif typ == "int":
            out_attrs.append('attr { key: "%s" value { i: 2 } }' % name)
        elif typ == "list(int)":
            out_attrs.append('attr { key: "%s" value { list { i: 1 i: 2 i: 2 i: 1 } } }' % name)
        elif typ == "string" and name == "padding":
            out_attrs.append('attr { key: "padding" value { s: "SAME" } }')
        elif typ == "list(type)":
            out_attrs.append('attr { key: "%s" value { list { type: DT_FLOAT type: DT_FLOAT } } }' % name)
        elif typ == "float":
            out_attrs.append('attr { key: "%s" value { f: 0.5 } }' % name)
    nodes, inputs = [], []
    for k, arg in enumerate(ins):
        n = 2 if ("number_attr" in arg or "type_list_attr" in arg) else 1
        dtype = arg.get("type") or attr_types.get(arg.get("type_attr"), "DT_FLOAT")
        for j in range(n):
            nm = "in%d_%d" % (k, j)
            if dtype in ("DT_INT32", "DT_INT64"):
                for pat, vals, shape in INT_VALUES:
                    if re.search(pat, arg["name"]):
                        nodes.append(const_node(nm, dtype, vals, shape))
                        break
            elif dtype == "DT_BOOL":
                nodes.append(const_node(nm, dtype, [1], []))
            else:
                nodes.append('node { name: "%s" op: "Placeholder" attr { key: "dtype" value { type: %s } } '
                             'attr { key: "shape" value { shape { dim { size: 1 } dim { size: 4 } dim { size: 4 } '
                             'dim { size: 2 } } } } }\n' % (nm, dtype))
            inputs.append(nm)
    nodes.append('node { name: "op" op: "%s" %s %s }\n' % (
        op, " ".join('input: "%s"' % i for i in inputs), " ".join(out_attrs)))
    return "".join(nodes)


def op_seeds(models, out):
    reg = os.path.join(models, "_reference", "tf_op_registry", "ops.pbtxt")
    dict_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pbtxt.dict")
    if not os.path.isfile(reg) or not os.path.isfile(dict_path):
        return
    ops = parse_ops(reg)
    names = re.findall(r'^"\\"([A-Z]\w*)\\""$', open(dict_path).read(), re.M)
    protoc = shutil.which("protoc")
    proto_root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "compiler", "proto")
    for op in names:
        if op not in ops:
            continue
        text = op_graph(op, *ops[op]).encode()
        put(out, "pbtxt", text)
        if protoc:
            r = subprocess.run([protoc, "--encode=tensorflow.GraphDef", "--proto_path=" + proto_root,
                                "tensorflow/core/framework/graph.proto"], input=text, capture_output=True)
            if r.returncode == 0:
                put(out, "graphdef_binary", r.stdout)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xFFFFFFFF


def varint(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def ckpt_seeds(out):
    """Data-block contents for fuzz_ckpt's wrapped mode: the header and
    entries over its data shard (bytes 0..63), with the right CRCs, so that
    mutations reach reading and the write-back round trip."""
    shard = bytes(range(64))
    masked = lambda c: ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF
    tensors = [  # key, dtype, dims, offset, element size
        [("a", 1, [], 0, 4), ("b", 1, [2], 4, 4), ("c", 9, [1], 12, 8)],
        [("dense/bias", 3, [2], 0, 4), ("dense/kernel", 1, [2, 3], 8, 4), ("empty", 1, [0, 3], 0, 4)],
        [("x", 19, [2, 2], 0, 2), ("y", 10, [3], 8, 1), ("z", 23, [], 16, 8)],
    ]
    for entries in tensors:
        kvs = [(b"", b"\x08\x01\x1a\x02\x08\x01")]
        for key, dt, dims, off, esz in entries:
            n = esz
            for d in dims:
                n *= d
            shape = b"".join(b"\x12" + varint(len(varint(d) if d else b"") + (1 if d else 0)) +
                             ((b"\x08" + varint(d)) if d else b"") for d in dims)
            v = b"\x08" + varint(dt) + b"\x12" + varint(len(shape)) + shape
            if off:
                v += b"\x20" + varint(off)
            if n:
                v += b"\x28" + varint(n)
            v += b"\x35" + masked(crc32c(shard[off:off + n])).to_bytes(4, "little")
            kvs.append((key.encode(), v))
        for interval in (1, 16):
            blk, restarts, prev = b"", [], b""
            for i, (k, v) in enumerate(kvs):
                shared = 0
                if i % interval == 0:
                    restarts.append(len(blk))
                else:
                    while shared < min(len(k), len(prev)) and k[shared] == prev[shared]:
                        shared += 1
                blk += varint(shared) + varint(len(k) - shared) + varint(len(v)) + k[shared:] + v
                prev = k
            blk += b"".join(r.to_bytes(4, "little") for r in restarts) + len(restarts).to_bytes(4, "little")
            put(out, "ckpt", blk)


def main():
    models, errors, out = sys.argv[1:4]
    for root in (models, errors):
        if not os.path.isdir(root):
            continue
        for dirpath, _, files in os.walk(root):
            for fn in sorted(files):
                p = os.path.join(dirpath, fn)
                try:
                    size = os.path.getsize(p)
                except OSError:
                    continue
                if fn.endswith(".json"):
                    for s in tfjs_seeds(p):
                        put(out, "tfjs", s)
                    continue
                if size > LIMIT:
                    continue
                if fn.endswith((".pb", ".meta", ".onnx")) or fn.startswith("saved_model."):
                    with open(p, "rb") as f:
                        put(out, "model", f.read())
                if fn.endswith(".config.pbtxt"):
                    target = "config"
                elif fn.endswith(".pbtxt"):
                    target = "pbtxt"
                elif fn.endswith(".pb"):
                    target = "graphdef_binary"
                elif fn.endswith(".npy"):
                    target = "npy"
                elif fn.endswith(".index"):
                    target = "ckpt"
                else:
                    continue
                with open(p, "rb") as f:
                    put(out, target, f.read())
    op_seeds(models, out)
    ckpt_seeds(out)
    onnx_dir = "/usr/share/libonnx-testdata/data/node"
    if os.path.isdir(onnx_dir):
        for case in sorted(os.listdir(onnx_dir))[::8]:
            p = os.path.join(onnx_dir, case, "model.onnx")
            if os.path.isfile(p) and os.path.getsize(p) <= LIMIT:
                with open(p, "rb") as f:
                    put(out, "model", f.read())
    if len(sys.argv) > 4 and os.path.isdir(sys.argv[4]):
        for fn in sorted(os.listdir(sys.argv[4])):
            target = fn.split("-", 1)[0]
            if "-" in fn and target in ("graphdef_binary", "pbtxt", "config", "npy", "tfjs", "model", "ckpt"):
                with open(os.path.join(sys.argv[4], fn), "rb") as f:
                    put(out, target, f.read())
    for t in ("graphdef_binary", "pbtxt", "config", "npy", "tfjs", "model", "ckpt"):
        d = os.path.join(out, t)
        os.makedirs(d, exist_ok=True)
        print("seeds: %-16s %d files" % (t, len(os.listdir(d))))


if __name__ == "__main__":
    main()
