#!/usr/bin/python3
"""Make a PP-OCR-sized text detector and its QDQ candidate (nothing here is
committed), for bench/sens_speed.sh's MODEL=ppocr_det.

    /usr/bin/python3 tests/models/make_ppocr_det.py OUT_DIR [--no-verify]

A DBNet as PP-OCR's detectors are built, from torch and torchvision, random
seeded weights: torchvision's mobilenet_v3_large (width 0.5, as PP-OCR's
MobileNetV3 large x0.5) for the backbone, its features at strides 4, 8, 16
and 32; an FPN neck with a residual squeeze-and-excitation on each of its
convs (PP-OCRv3's RSEFPN, 96 channels): lateral 1x1 convs, the top-down
path by nearest 2x upsampling (Resize) and Add, a 3x3 conv per level, the
levels upsampled to stride 4 and concatenated; the DB head's probability
branch: 3x3 conv + BatchNorm + ReLU, ConvTranspose 2x2 stride 2 + BN +
ReLU, ConvTranspose 2x2 stride 2 to one channel, Sigmoid. One image
"image" [1,3,320,320] in, "maps" [1,1,320,320] out, opset 13 (HardSwish
exported as HardSigmoid and Mul). Writes:

  ppocr_det.onnx       float, torch's eval export (BN folded into Conv)
  ppocr_det_bn.onnx    float, BatchNormalization kept (what is quantized)
  ppocr_det_qdq.onnx   QDQ by samples/qdq_quantize.py (uint8 activations,
                       int8 per-channel Conv; ConvTranspose and Resize,
                       which it does not quantize, stay float)

The BN statistics are estimated from 4 random-normal batches (seeded,
make_toolchains.py's estimate_bn). Calibration: 8 random-normal images, seed 1234.
Unless --no-verify: the float model in onnxruntime-node (tests/ort,
graph optimisation off) against torch on one image (max |diff| <= 1e-4,
else exit 1), and the QDQ model's output cosine to the float one.
"""

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
import torch.nn.functional as F
import torchvision

sys.dont_write_bytecode = True  # keep samples/ free of __pycache__
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "samples"))
import qdq_quantize as qq  # noqa: E402
from make_toolchains import estimate_bn  # noqa: E402
from make_torchvision import cosine  # noqa: E402

SEED = 0
SIZE = 320
FPN_CH = 96


class RSE(torch.nn.Module):
    """A conv with a residual squeeze-and-excitation (PP-OCRv3 RSELayer)."""

    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = torch.nn.Conv2d(cin, cout, k, padding=k // 2, bias=False)
        self.fc1 = torch.nn.Conv2d(cout, cout // 4, 1)
        self.fc2 = torch.nn.Conv2d(cout // 4, cout, 1)

    def forward(self, x):
        y = self.conv(x)
        s = F.adaptive_avg_pool2d(y, 1)
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))
        return y + y * s


class DBNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        mb = torchvision.models.mobilenet_v3_large(weights=None, width_mult=0.5)
        self.features = mb.features
        self.taps = (3, 6, 12, 16)  # strides 4, 8, 16, 32
        chans = [self.features[i].out_channels for i in self.taps]
        self.ins = torch.nn.ModuleList(RSE(c, FPN_CH, 1) for c in chans)
        self.outs = torch.nn.ModuleList(RSE(FPN_CH, FPN_CH // 4, 3) for _ in chans)
        c = FPN_CH
        self.head = torch.nn.Sequential(
            torch.nn.Conv2d(c, c // 4, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(c // 4), torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(c // 4, c // 4, 2, stride=2),
            torch.nn.BatchNorm2d(c // 4), torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(c // 4, 1, 2, stride=2),
            torch.nn.Sigmoid())

    def forward(self, x):
        feats = []
        for i, f in enumerate(self.features):
            x = f(x)
            if i in self.taps:
                feats.append(x)
        lat = [m(f) for m, f in zip(self.ins, feats)]
        for i in range(len(lat) - 1, 0, -1):  # top-down
            lat[i - 1] = lat[i - 1] + F.interpolate(lat[i], scale_factor=2.0, mode="nearest")
        outs = [m(l) for m, l in zip(self.outs, lat)]
        ups = [outs[0]] + [F.interpolate(o, scale_factor=float(2 ** i), mode="nearest")
                           for i, o in enumerate(outs[1:], 1)]
        return self.head(torch.cat(ups[::-1], dim=1))


def build():
    torch.manual_seed(SEED)
    m = DBNet()
    estimate_bn(m, SIZE)
    return m


def export(m, path, keep_bn):
    f = io.BytesIO()
    kw = dict(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False) if keep_bn else {}
    torch.onnx.export(m, torch.zeros(1, 3, SIZE, SIZE), f, opset_version=13,
                      input_names=["image"], output_names=["maps"], **kw)
    model = onnx.load_from_string(f.getvalue())
    # inline Constant nodes and the Concat of them that makes Resize's
    # scales (the quantizer would quantize a float Concat) and, with BN
    # kept, undo torch's de-duplication of equal parameters through
    # Identity nodes
    consts = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    keep = []
    for n in model.graph.node:
        if n.op_type == "Constant":
            consts[n.output[0]] = onnx.numpy_helper.to_array(n.attribute[0].t)
        elif n.op_type == "Identity" and n.input[0] in consts:
            consts[n.output[0]] = consts[n.input[0]].copy()
        elif n.op_type == "Concat" and all(i in consts for i in n.input):
            consts[n.output[0]] = np.concatenate([consts[i] for i in n.input],
                                                 axis=n.attribute[0].i)
        else:
            keep.append(n)
    used = {i for n in keep for i in n.input}
    old = {i.name for i in model.graph.initializer}
    for name, arr in consts.items():
        if name not in old and name in used:
            model.graph.initializer.append(onnx.numpy_helper.from_array(arr, name))
    del model.graph.node[:]
    model.graph.node.extend(keep)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return model


def ort_run(model_path, x):
    """The first output of model_path on x in onnxruntime-node, or None
    when node or onnxruntime-node is not there."""
    ort_dir = os.path.join(ROOT, "tests", "ort")
    if not os.path.isdir(os.path.join(ort_dir, "node_modules", "onnxruntime-node")):
        return None
    with tempfile.TemporaryDirectory() as d:
        np.save(os.path.join(d, "x.npy"), x)
        with open(os.path.join(d, "jobs.json"), "w") as f:
            json.dump([{"model": model_path, "input": os.path.join(d, "x.npy")}], f)
        try:
            subprocess.run(["node", os.path.join(ort_dir, "run_once.js"),
                            os.path.join(d, "jobs.json"), os.path.join(d, "out.json")],
                           check=True)
        except (OSError, subprocess.CalledProcessError):
            return None
        r = json.load(open(os.path.join(d, "out.json")))[model_path]
    if not r["ran"]:
        sys.exit("make_ppocr_det.py: ONNX Runtime cannot run %s: %s" % (model_path, r["error"]))
    return np.asarray(r["output"], dtype=np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--no-verify", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    p = {k: os.path.abspath(os.path.join(args.out_dir, "ppocr_det" + s + ".onnx"))
         for k, s in (("float", ""), ("bn", "_bn"), ("qdq", "_qdq"))}
    m = build()
    export(m, p["float"], keep_bn=False)
    fbn = export(m, p["bn"], keep_bn=True)
    g = torch.Generator().manual_seed(1234)
    calib = [torch.randn(1, 3, SIZE, SIZE, generator=g).numpy() for _ in range(8)]
    test = torch.randn(1, 3, SIZE, SIZE, generator=g).numpy()
    qdq = qq.quantize_qdq(fbn, calib, per_channel=True)
    onnx.checker.check_model(qdq)
    onnx.save(qdq, p["qdq"])
    for k in ("float", "bn", "qdq"):
        mm = onnx.load(p[k])
        print("%-20s %9d B  nodes %4d  %s" % (os.path.basename(p[k]), os.path.getsize(p[k]),
                                             len(mm.graph.node),
                                             ", ".join("%s x%d" % kv for kv in qq.op_histogram(mm).items())))
    if args.no_verify:
        return
    with torch.no_grad():
        ref = m(torch.from_numpy(test)).numpy()
    of = ort_run(p["float"], test)
    if of is None:
        print("onnxruntime-node not found (tests/ort/node_modules): not checked against ONNX Runtime")
        return
    diff = float(np.abs(of - ref.ravel()).max())
    print("ONNX Runtime (float) vs torch: max |diff| %.2e" % diff)
    if not diff <= 1e-4:
        sys.exit("make_ppocr_det.py: ONNX Runtime and torch disagree on %s" % p["float"])
    oq = ort_run(p["qdq"], test)
    print("ONNX Runtime: QDQ vs float output cosine %.5f" % cosine(oq, of))


if __name__ == "__main__":
    main()
