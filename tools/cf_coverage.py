#!/usr/bin/env python3
"""tools/cf_coverage.py - the control-flow coverage table of docs/control-flow.md.

For every graph in ../shared/models/manifest.json with control flow (v1
frames, v2 If/While/Case) or function calls, try `tfcc compile`:
  * reference-bearing models use the feeds/fetches of tests/e2e/test_models.c
    (their numbers are checked there against TensorFlow.js);
  * a SavedModel or MetaGraphDef whose `tfcc info` lists signatures is
    compiled as a user would: without --fetch, so tfcc uses the signature
    that info says compile uses (serving_default, or the only one); when
    there is no default, each signature is tried with --signature KEY.  Only
    signature inputs with unknown dims or rank get a --feed (unknown dims as
    1, unknown rank as a scalar);
  * the others use `tfcc info`: every listed input is fed (unknown dims as 1,
    unknown rank as a scalar) and every sink node is fetched.
The result is "compiles" or tfcc's first error message (the file prefix
removed).  Rewrites the table between the coverage markers of
docs/control-flow.md.

usage: tools/cf_coverage.py TFCC MODELS_DIR DOC
"""
import json
import os
import re
import subprocess
import sys
import tempfile

BEGIN = "<!-- coverage:begin (tools/cf_coverage.py writes this table; make cf-coverage) -->"
END = "<!-- coverage:end -->"

# Reference-bearing models: the e2e test's specs ("=name" binds input_K with --const).
E2E = {}


def load_e2e_specs(root):
    src = open(os.path.join(root, "tests/e2e/test_models.c")).read()
    for m in re.finditer(r'\{"([^"]+)", "([^"]+)", "([^"]*)", "([^"]*)"\}', src):
        E2E[m.group(1)] = (m.group(2), m.group(3), m.group(4))


def info(tfcc, path):
    """rc, feeds, fetches, first stderr line, signatures, default signature.

    signatures: [(key, [(tensor, dtype, shape), ...] inputs, n outputs)] in
    info's order, keys starting "__" left out; default: the key compile uses
    without --fetch, or None."""
    r = subprocess.run([tfcc, "info", path], capture_output=True, text=True, timeout=300)
    feeds, fetches, section = [], [], None
    sigs, default = [], None
    for line in r.stdout.splitlines():
        if line.startswith("inputs:"):
            section = "in"
        elif line.startswith("outputs"):
            section = "out"
        elif line.startswith("signatures"):
            section = "sig"
            m = re.match(r"signatures \(\d+, compile uses '(.*)'\):", line)
            default = m.group(1) if m else None
        elif not line.startswith("  "):
            section = None
        elif section == "sig":
            m = re.match(r"  (\S+)", line)
            if m and not line.startswith("   "):
                sigs.append((m.group(1), [], 0))
                continue
            m = re.match(r"\s+(in|out)\s+\S+:\s+(\S+)\s+(\S+)\s+\[(.*)\]", line)
            if m and sigs:
                key, ins, nout = sigs[-1]
                if m.group(1) == "in":
                    ins.append((m.group(2), m.group(3), m.group(4)))
                else:
                    sigs[-1] = (key, ins, nout + 1)
        elif section == "in":
            m = re.match(r"\s+(\S+)\s+(\S+)\s+\[(.*)\]", line)
            if m:
                feeds.append((m.group(1), m.group(2), m.group(3)))
        elif section == "out":
            m = re.match(r"\s+(\S+)\s+\((\S+)\)", line)
            if m:
                fetches.append((m.group(1), m.group(2)))
    sigs = [x for x in sigs if not x[0].startswith("__")]
    return r.returncode, feeds, fetches, (r.stderr.strip().splitlines() or [""])[0], sigs, default


# Graphs where the generic choice (every sink, unknown dims as 1) is not a
# meaningful inference: the fetch or feed shape used instead, and why.
OVERRIDES = {
    # while/Exit_1 is a loop variable that grows by concat each iteration
    "github-tensorflow/grappler_graph_properties/while_loop.pbtxt": ["--fetch", "while/Exit"],
    "github-tensorflow/grappler_graph_properties/nested_loop.pbtxt": ["--fetch", "while/Exit"],
    # the If's branches agree only for a rank-1 input of 2 elements
    "github-tensorflow/mlir_graphdef2mlir/graph-function-static-output.pbtxt": ["--feed", "Placeholder:0:scalar",
                                                                                 "--feed", "Placeholder_1:0:2",
                                                                                 "--fetch", "If"],
    # TensorFlow.NET training graphs: their inference part (the class prediction)
    "github-tfnet/att_rnn_untrained/att_rnn_untrained.meta": ["--feed", "x:0:1x100", "--feed", "is_training:0:scalar",
                                                             "--fetch", "output/ArgMax"],
    "github-tfnet/rcnn_untrained/rcnn_untrained.meta": ["--feed", "x:0:1x100", "--feed", "is_training:0:scalar",
                                                       "--fetch", "output/ArgMax"],
    "github-tfnet/word_rnn_untrained/word_rnn_untrained.meta": ["--feed", "x:0:1x100", "--feed",
                                                               "is_training:0:scalar", "--fetch", "output/ArgMax"],
    "github-tfnet/vd_cnn/vd_cnn.meta": ["--feed", "x:0:1x1014", "--feed", "is_training:0:scalar",
                                        "--fetch", "fc-3/ArgMax"],
    "github-tfnet/lstm_crf_ner/lstm_crf_ner.meta": ["--feed", "word_ids:0:1x20", "--feed", "sequence_lengths:0:1",
                                                    "--feed", "char_ids:0:1x20x10", "--feed", "word_lengths:0:1x20",
                                                    "--feed", "dropout:0:scalar", "--fetch", "proj/Reshape"],
}

# Sink ops that are training or checkpoint side effects, not results.
SIDE_EFFECTS = {"NoOp", "Assign", "AssignAdd", "AssignSub", "AssignVariableOp", "SaveV2", "RestoreV2",
                "MergeV2Checkpoints", "ApplyGradientDescent", "ApplyAdam", "ApplyMomentum",
                "ResourceApplyAdam", "ResourceApplyGradientDescent", "ResourceApplyMomentum",
                "AssignAddVariableOp", "AssignSubVariableOp", "VarIsInitializedOp", "Save", "Restore",
                "ControlTrigger", "Assert", "Print", "PrintV2", "SaveSlices", "ShardedFilename"}


def dims_arg(shape):
    if shape in ("unknown rank", "", "?"):
        return "scalar"
    parts = [p for p in shape.split(",") if p != ""]
    return "x".join("1" if p.strip() in ("-1", "?") else p.strip() for p in parts) or "scalar"


# Dtypes tfcc cannot take as a fed tensor.
NOT_FEEDABLE = ("string", "resource", "variant", "invalid", "?")


def run_compile(args, path):
    """("yes", "") or ("no", tfcc's first error without the file prefix)."""
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if r.returncode == 0:
        return "yes", ""
    lines = [l for l in r.stderr.splitlines() if l.startswith("error:")] or r.stderr.splitlines() or [""]
    msg = lines[0].replace("error: ", "", 1).replace(path + ": ", "")
    if len(lines) > 1:
        msg += " (+%d more)" % (len(lines) - 1)
    return "no", msg


def sig_feeds(ins):
    """--feed for the signature inputs whose shape is not fully known."""
    args = []
    for name, dtype, shape in ins:
        if dtype in NOT_FEEDABLE:
            continue  # the compile reports it if it is needed
        unknown = shape in ("unknown rank", "?") or any(p.strip() in ("-1", "?") for p in shape.split(","))
        if unknown:
            args += ["--feed", "%s:%s" % (name, dims_arg(shape))]
    return args


def try_signatures(tfcc, path, out, sigs, default):
    """Compile as a user would: the default signature (no --fetch), or with
    no default each signature by --signature KEY."""
    base = [tfcc, "compile", path, "-o", out]
    if default:
        feeds = sig_feeds(next((ins for k, ins, _ in sigs if k == default), []))
        ok, msg = run_compile(base + feeds, path)
        if ok == "yes":
            how = "compiles (signature '%s'" % default
            return "yes", how + (", `%s`)" % " ".join(feeds) if feeds else ")")
        return "no", msg
    good, bad = [], []
    for key, ins, _ in sigs:
        ok, msg = run_compile(base + ["--signature", key] + sig_feeds(ins), path)
        (good if ok == "yes" else bad).append((key, msg))
    note = "no default signature: "
    if good:
        note += "%s compile%s" % (", ".join("`--signature %s`" % k for k, _ in good), "s" if len(good) == 1 else "")
        if bad:
            note += "; `%s`: %s" % bad[0]
            if len(bad) > 1:
                note += " (+%d more failing)" % (len(bad) - 1)
        return "yes", note
    note += "`--signature %s`: %s" % bad[0]
    if len(bad) > 1:
        note += " (+%d more failing)" % (len(bad) - 1)
    return "no", note


def try_compile(tfcc, models, entry, out):
    path = os.path.join(models, entry["file"])
    args = [tfcc, "compile", path, "-o", out]
    how = "info"
    if entry["file"] in E2E:
        _, feeds, fetches = E2E[entry["file"]]
        how = "e2e"
        for i, f in enumerate([x for x in feeds.split(";") if x]):
            if f.startswith("="):
                args += ["--const", "%s=%s/%s/input_%d.npy" % (f[1:], models, E2E[entry["file"]][0], i)]
            else:
                args += ["--feed", f]
        for f in [x for x in fetches.split(";") if x]:
            args += ["--fetch", f]
    elif entry["file"] in OVERRIDES:
        how = "override"
        args += OVERRIDES[entry["file"]]
    else:
        rc, feeds, fetches, err, sigs, default = info(tfcc, path)
        if rc != 0:
            return "no", err.replace("error: ", "", 1).replace(path + ": ", "")
        if sigs:
            return try_signatures(tfcc, path, out, sigs, default)
        for name, dtype, shape in feeds:
            if dtype in NOT_FEEDABLE:
                continue  # not a tensor tfcc can feed; the compile reports if it is needed
            args += ["--feed", "%s:%s" % (name, dims_arg(shape))]
        outs = [n for n, op in fetches if op not in SIDE_EFFECTS]
        if not outs:
            return "no", "no result to fetch (only side-effect sinks)"
        for n in outs:
            args += ["--fetch", n]
    ok, msg = run_compile(args, path)
    if ok == "yes":
        if how == "e2e":
            return "yes", "matches the TF.js reference (tests/e2e)"
        if how == "override":
            return "yes", "compiles with `%s`" % " ".join(OVERRIDES[entry["file"]])
        return "yes", "compiles"
    return "no", msg


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    tfcc, models, doc = sys.argv[1:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    load_e2e_specs(root)
    manifest = json.load(open(os.path.join(models, "manifest.json")))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for e in manifest:
            f = e.get("flags") or {}
            v1, v2, calls = f.get("v1_control_flow"), f.get("v2_control_flow"), f.get("calls")
            if not (v1 or v2 or calls) or e.get("duplicate_of"):
                continue
            kind = ", ".join(x for x in ["v1" if v1 else "", "v2 " + "/".join(v2) if v2 else "",
                                         "calls" if calls else ""] if x)
            ok, note = try_compile(tfcc, models, e, os.path.join(tmp, "m"))
            note = note.replace("|", "\\|")
            if len(note) > 220:
                note = note[:217] + "..."
            rows.append("| `%s` | %s | %s | %s | %s |" % (e["file"], kind, "yes" if e.get("reference") else "",
                                                          ok, note))
    table = [BEGIN, "",
             "%d graphs with control flow or calls; %d compile." % (len(rows), sum(1 for r in rows if r.split(" | ")[3] == "yes")),
             "", "| graph | control flow | reference | compiles | result or what stops it |",
             "|---|---|---|---|---|"] + rows + ["", END]
    text = open(doc).read() if os.path.exists(doc) else ""
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + "\n".join(table) + text[text.index(END) + len(END):]
    else:
        text += "\n## Coverage of the corpus\n\n" + "\n".join(table) + "\n"
    open(doc, "w").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
