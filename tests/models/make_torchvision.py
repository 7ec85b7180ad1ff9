#!/usr/bin/python3
"""Make larger test models for qreport on demand (nothing here is committed).

    /usr/bin/python3 tests/models/make_torchvision.py OUT_DIR [--models resnet18,mobilenet_v2] [--no-verify]

For each of torchvision's resnet18 and mobilenet_v2 (weights=None, seeded) it
writes, with input "input" [1,3,224,224] and output "logits" [1,1000], opset 13:

  <m>.onnx        float, torch's default eval export (BN folded into Conv by the
                  exporter; weights get names like onnx::Conv_193)
  <m>_bn.onnx     float, BatchNormalization kept as nodes (TrainingMode.PRESERVE)
  <m>_qdq.onnx    ORT-style QDQ of <m>_bn.onnx (BN folded with ORT's names,
                  uint8 activations, int8 per-channel Conv, per-tensor Gemm)
  <m>_qop.onnx    ORT-style QOperator of <m>_bn.onnx (QLinearConv, QLinearAdd,
                  QLinearGlobalAveragePool, QGemm)
  <m>_qdq16.onnx  A16W8: as <m>_qdq.onnx with uint16 activations, every Q/DQ
                  node in the com.microsoft domain (ORT's contrib ops, which
                  its quantizer writes for 16-bit types before opset 21)

The BN running statistics are not left at their init values (0/1): they are
estimated from 4 batches of random-normal images (seeded), so activations stay
in a sane range and folded weights have realistic per-channel spread.

--models takes any torchvision classifier. One without BatchNorm (vit_b_16,
for the memory benchmark on a transformer) is quantized from <m>.onnx, the
exporter's folded graph, as ORT's quantizer is usually fed; <m>_bn.onnx is
then just the unfolded export (each weight behind a Transpose).
Calibration: 8 random-normal inputs, torch.Generator seed 1234.
The quantizer is samples/qdq_quantize.py.
"""

import argparse
import io
import os
import sys
import time

import numpy as np
import onnx
import torch
import torchvision

sys.dont_write_bytecode = True  # keep samples/ free of __pycache__
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "samples"))
import qdq_quantize as qq  # noqa: E402

SEED = 0


def build(name):
    torch.manual_seed(SEED)
    m = getattr(torchvision.models, name)(weights=None)
    # realistic BN statistics from random data (cumulative average)
    g = torch.Generator().manual_seed(SEED + 1)
    bns = [mod for mod in m.modules() if isinstance(mod, torch.nn.BatchNorm2d)]
    for mod in bns:
        mod.reset_running_stats()
        mod.momentum = None
    if bns:
        m.train()
        with torch.no_grad():
            for _ in range(4):
                m(torch.randn(8, 3, 224, 224, generator=g))
    m.eval()
    return m, bool(bns)


def export(m, path, keep_bn):
    f = io.BytesIO()
    kw = dict(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False) if keep_bn else {}
    torch.onnx.export(m, torch.zeros(1, 3, 224, 224), f, opset_version=13,
                      input_names=["input"], output_names=["logits"], **kw)
    model = onnx.load_from_string(f.getvalue())
    if keep_bn:
        # torch de-duplicates equal parameters through Identity nodes; undo that
        inits = {i.name: i for i in model.graph.initializer}
        keep = []
        for n in model.graph.node:
            if n.op_type == "Identity" and n.input[0] in inits:
                arr = onnx.numpy_helper.to_array(inits[n.input[0]]).copy()
                model.graph.initializer.append(onnx.numpy_helper.from_array(arr, n.output[0]))
            else:
                keep.append(n)
        del model.graph.node[:]
        model.graph.node.extend(keep)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return model


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--models", default="resnet18,mobilenet_v2")
    ap.add_argument("--no-verify", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    g = torch.Generator().manual_seed(1234)
    calib = [torch.randn(1, 3, 224, 224, generator=g).numpy() for _ in range(8)]
    tests = [torch.randn(1, 3, 224, 224, generator=g).numpy() for _ in range(4)]

    for name in args.models.split(","):
        t0 = time.time()
        m, has_bn = build(name)
        with torch.no_grad():
            ref = m(torch.from_numpy(tests[0])).numpy()
        p = {k: os.path.join(args.out_dir, name + s + ".onnx")
             for k, s in (("float", ""), ("bn", "_bn"), ("qdq", "_qdq"), ("qop", "_qop"),
                          ("qdq16", "_qdq16"))}
        ffold = export(m, p["float"], keep_bn=False)
        fbn = export(m, p["bn"], keep_bn=True)
        if not has_bn:
            fbn = ffold  # quantize the folded export
        t1 = time.time()
        prepared = qq.prepare(fbn)
        ranges = qq.calibrate_minmax(prepared, calib)
        t2 = time.time()
        qdq = qq.quantize_qdq(fbn, calib, per_channel=True, ranges=dict(ranges))
        onnx.checker.check_model(qdq)
        onnx.save(qdq, p["qdq"])
        qop = qq.quantize_qoperator(fbn, calib, per_channel=True, ranges=dict(ranges))
        onnx.checker.check_model(qop)
        onnx.save(qop, p["qop"])
        qdq16 = qq.quantize_qdq(fbn, calib, per_channel=True, ranges=dict(ranges),
                                activation_type="uint16")
        onnx.save(qdq16, p["qdq16"])  # the checker knows no com.microsoft op
        t3 = time.time()
        print("%s: export %.1fs, calibration %.1fs, quantization %.1fs" % (name, t1 - t0, t2 - t1, t3 - t2))
        for k in ("float", "bn", "qdq", "qop", "qdq16"):
            mm = onnx.load(p[k])
            hist = qq.op_histogram(mm)
            print("  %-26s %10d B  nodes %4d  %s" % (os.path.basename(p[k]), os.path.getsize(p[k]), len(mm.graph.node),
                                                  ", ".join("%s x%d" % kv for kv in hist.items())))
        if not args.no_verify:
            t4 = time.time()
            runners = {k: qq.Runner(onnx.load(p[k])) for k in ("float", "bn", "qdq", "qop", "qdq16")}
            outs = {k: [r.run({"input": x}, keep_all=False)["logits"] for x in tests] for k, r in runners.items()}
            print("  reference runner vs torch (float, bn): max|diff| %.2e, %.2e"
                  % (np.abs(outs["float"][0] - ref).max(), np.abs(outs["bn"][0] - ref).max()))
            for k in ("qdq", "qop", "qdq16"):
                cos = np.mean([cosine(a, b) for a, b in zip(outs[k], outs["float"])])
                agree = np.mean([int(a.argmax() == b.argmax()) for a, b in zip(outs[k], outs["float"])])
                print("  %s vs float on %d random inputs: logits cosine %.4f, top-1 agreement %.2f"
                      % (k, len(tests), cos, agree))
            print("  qdq vs qop logits max|diff|: %.3e" % max(np.abs(a - b).max() for a, b in zip(outs["qdq"], outs["qop"])))
            print("  verification %.1fs" % (time.time() - t4))
        print("  total %.1fs" % (time.time() - t0))


if __name__ == "__main__":
    main()
