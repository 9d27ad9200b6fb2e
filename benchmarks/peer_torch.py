#!/usr/bin/env python3
"""benchmarks/peer_torch.py - PyTorch (Debian's python3-torch, eager mode) as a
long-lived benchmark peer for benchmarks/bench.js.

Usage: /usr/bin/python3 benchmarks/peer_torch.py NAME INPUT.npy [EXPECTED.npy] [--mode jit|eager]

Builds the network NAME exactly as tests/onnx/torchvision_export.py does
(its make() and calibrate(), after torch.manual_seed(0)), so it has the
same weights as the ONNX file that script exported; with EXPECTED.npy (the
export's NAME_out.npy) the output is checked against it and the largest
difference is reported in the ready line.  Mode jit (default): the eval-mode
model traced, frozen and passed through torch.jit.optimize_for_inference
(oneDNN convolutions; Debian's build has a generic BLAS, and eager
MobileNetV2 is ~15x slower than this); if tracing fails or its output
differs from eager's, eager is used and the ready line says why.  Mode eager:
the module itself under torch.inference_mode() (for nn.TransformerEncoder
torch's fused fast path).  Inter-op threads 1; intra-op threads per request.

Protocol (JSON, one object per line), the same as peer_ort.js: prints
{"ready": true, "engine", "version", "weights_check"} once, then answers
each request {"threads": T, "warmup": W, "repeat": N, "out": DIR} with
{"times", "median_ms", "min_ms", "outputs"} after W untimed and N timed
forward passes (torch.set_num_threads(T) first), writing DIR/output.npy.
Closing stdin ends it.  Exits 77 when torch cannot be imported.
"""
import json
import os
import statistics
import sys
import time
import warnings


def send(o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()


def main():
    if len(sys.argv) < 3:
        send({"error": "usage: peer_torch.py NAME INPUT.npy [EXPECTED.npy]"})
        return 2
    argv = sys.argv[1:]
    mode = "jit"
    if "--mode" in argv:
        k = argv.index("--mode")
        mode = argv[k + 1] if k + 1 < len(argv) else "jit"
        del argv[k:k + 2]
    name, inp = argv[0], argv[1]
    warnings.filterwarnings("ignore")
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "tests", "onnx"))
    try:
        import numpy as np
        import torch
        import torchvision_export as tv
    except (Exception, SystemExit) as e:  # torchvision_export exits 77 without torch
        send({"error": "cannot import torch/torchvision/numpy: %s" % e})
        return 77
    torch.set_num_interop_threads(1)
    torch.manual_seed(0)
    model, shape = tv.make(name)
    tv.calibrate(model, shape)
    model.eval()
    x = torch.from_numpy(np.load(inp))
    check = None
    with torch.inference_mode():
        y = model(x)
    run, used = model, "eager, inference_mode"
    if mode == "jit":
        try:
            with torch.no_grad():
                j = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, x).eval()))
                yj = j(x)
            d = float(torch.max(torch.abs(yj - y)))
            if d <= 1e-3 * (1 + float(torch.max(torch.abs(y)))):
                run, used, y = j, "jit: trace + freeze + optimize_for_inference", yj
            else:
                used = "eager (the jit model's output differs by %.1e)" % d
        except Exception as e:  # traced model unusable: eager, said in the ready line
            used = "eager (jit failed: %s)" % (str(e).strip().splitlines() or [type(e).__name__])[0][:100]
    if len(argv) > 2:
        ref = np.load(argv[2])
        check = float(np.max(np.abs(y.numpy() - ref))) if ref.shape == tuple(y.shape) else float("inf")
    send({"ready": True, "engine": "torch", "version": torch.__version__,
          "weights_check": check, "mode": used})
    for line in sys.stdin:
        try:
            req = json.loads(line)
            torch.set_num_threads(int(req.get("threads", 1)))
            with torch.inference_mode():
                for _ in range(int(req.get("warmup", 1))):
                    y = run(x)
                times = []
                for _ in range(max(1, int(req.get("repeat", 1)))):
                    t0 = time.perf_counter()
                    y = run(x)
                    times.append((time.perf_counter() - t0) * 1e3)
            np.save(os.path.join(req["out"], "output.npy"), y.numpy().astype(np.float32))
            send({"times": times, "median_ms": statistics.median(times), "min_ms": min(times),
                  "outputs": ["output"]})
        except Exception as e:  # reported to the harness, which marks the row
            send({"error": "%s: %s" % (type(e).__name__, e)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
