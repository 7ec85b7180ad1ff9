#!/usr/bin/python3
"""Regenerate qreport's sample models and data (samples/).

Run with Debian's interpreter (torch 1.13, torchvision, onnx 1.12, sklearn):

    /usr/bin/python3 samples/make_samples.py [OUT_DIR]     # default: this directory

Python only makes the test inputs; qreport itself never needs it. The output is
deterministic: fixed seeds, torch deterministic algorithms, one thread. Re-running
gives byte-identical .onnx files on the same torch/onnx versions.

What it writes (see README.md for the details):
  digits_float.onnx           trained float CNN, BatchNormalization kept as nodes
  digits_qdq.onnx             ORT-style QDQ: uint8 activations, int8 per-channel Conv
                              weights, per-tensor Gemm, int32 bias, BN folded
  digits_qdq_pertensor.onnx   same, but Conv weights per-tensor (a second candidate)
  digits_qop.onnx             ORT-style QOperator (QLinearConv, com.microsoft QGemm,
                              QLinearGlobalAveragePool)
  digits_qdq_renamed.onnx     digits_qdq.onnx with every tensor/node renamed t<i>/n<i>
  digits/<class>/<n>.png      30 real 8x8 test digits (3 per class), 8-bit grayscale
  digits_test.npy             20 test samples, float32 [20,1,8,8], already normalised
  digits_labels.txt           their labels, one per line
  MANIFEST.txt                accuracies, op histograms and sizes of the above

The model: sklearn's digits (1797 8x8 images, 17 grey levels 0..16), split
80/20 stratified (random_state=0). Preprocessing, identical for training and
for the sample files:
    p = round(v * 255 / 16)           # the PNG pixel, 0..255
    x = (p * (1/255) - 0.5) / 0.5     # i.e. --scale 0.00392156862745098 --mean 0.5 --std 0.5

Architecture (names are the torch module names, which torch 1.13 puts into the
ONNX node names, e.g. /conv1/Conv):
    conv1 Conv(1->16,3x3,pad 1) + bn1 + ReLU          \
    conv2 Conv(16->16,3x3,dw)   + bn2 + ReLU           } Conv->DW->Conv CLE triplet
    conv3 Conv(16->32,1x1)            + ReLU          /  } conv3->ReLU->conv4 CLE pair
    conv4 Conv(32->32,3x3,s2,pad 1)   + ReLU6 (Clip 0..6)  } conv4->Clip->conv5: CLE blocker
    conv5 Conv(32->32,1x1)            + ReLU
    GlobalAveragePool -> Flatten -> fc Gemm(32->10) -> "logits"
"""

import hashlib
import os
import struct
import sys
import time
import zlib

import numpy as np
import onnx
import torch
import torch.nn as nn

sys.dont_write_bytecode = True  # keep samples/ free of __pycache__
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qdq_quantize as qq  # noqa: E402

SEED = 0
PNG_SCALE = 1.0 / 255.0
MEAN = 0.5
STD = 0.5
N_CALIB = 100
N_TEST_NPY = 20
PNG_PER_CLASS = 3


def set_determinism():
    torch.manual_seed(SEED)
    np.random.seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.relu2 = nn.ReLU()
        self.conv3 = nn.Conv2d(16, 32, 1)
        self.relu3 = nn.ReLU()
        self.conv4 = nn.Conv2d(32, 32, 3, stride=2, padding=1)
        self.relu4 = nn.ReLU6()
        self.conv5 = nn.Conv2d(32, 32, 1)
        self.relu5 = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.relu1(self.bn1(self.conv1(x)))
        x = self.relu2(self.bn2(self.conv2(x)))
        x = self.relu3(self.conv3(x))
        x = self.relu4(self.conv4(x))
        x = self.relu5(self.conv5(x))
        x = torch.flatten(self.pool(x), 1)
        return self.fc(x)


def load_digits():
    from sklearn.datasets import load_digits as _ld
    from sklearn.model_selection import train_test_split
    d = _ld()
    pix = np.round(d.images * 255.0 / 16.0).astype(np.uint8)        # [N,8,8] 0..255
    idx = np.arange(len(pix))
    tr, te = train_test_split(idx, test_size=0.2, random_state=SEED, stratify=d.target)
    return pix, d.target.astype(np.int64), tr, te


def normalise(pix):
    return ((pix.astype(np.float32) * np.float32(PNG_SCALE) - np.float32(MEAN)) / np.float32(STD))[:, None, :, :]


def train(model, x, y, epochs=60, bs=64, lr=0.01):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    g = torch.Generator().manual_seed(SEED)
    X, Y = torch.from_numpy(x), torch.from_numpy(y)
    for ep in range(epochs):
        model.train()
        perm = torch.randperm(len(X), generator=g)
        for i in range(0, len(X), bs):
            b = perm[i:i + bs]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(X[b]), Y[b])
            loss.backward()
            opt.step()
        sched.step()
    model.eval()
    return model


def export_float(model, path, example):
    """Export keeping BatchNormalization as nodes (TrainingMode.PRESERVE on an eval model).

    torch 1.13 + PRESERVE de-duplicates equal-valued parameters through Identity
    nodes; those are turned back into plain initializers so the graph is clean.
    """
    import io
    f = io.BytesIO()
    torch.onnx.export(model, example, f, opset_version=13, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    m = onnx.load_from_string(f.getvalue())
    m = materialize_identity_params(m)
    onnx.checker.check_model(m)
    onnx.save(m, path)
    return m


def materialize_identity_params(m):
    inits = {i.name: i for i in m.graph.initializer}
    keep = []
    for n in m.graph.node:
        if n.op_type == "Identity" and n.input[0] in inits:
            arr = onnx.numpy_helper.to_array(inits[n.input[0]]).copy()
            m.graph.initializer.append(onnx.numpy_helper.from_array(arr, n.output[0]))
        else:
            keep.append(n)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    return m


def write_png_gray(path, img):
    """Minimal 8-bit grayscale PNG writer (no dependencies)."""
    img = np.asarray(img, np.uint8)
    h, w = img.shape

    def chunk(tag, data):
        c = struct.pack(">I", len(data)) + tag + data
        return c + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(h))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) \
        + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def run_logits(model_proto, x):
    r = qq.Runner(model_proto)
    out = r.output_names[0]
    return r.run({r.input_names[0]: x}, keep_all=False)[out]


def main(out_dir):
    t0 = time.time()
    set_determinism()
    os.makedirs(out_dir, exist_ok=True)
    pix, y, tr, te = load_digits()
    xtr, xte = normalise(pix[tr]), normalise(pix[te])
    ytr, yte = y[tr], y[te]
    print("digits: %d train, %d test" % (len(tr), len(te)))

    model = train(DigitsCNN(), xtr, ytr)
    with torch.no_grad():
        torch_logits = model(torch.from_numpy(xte)).numpy()
    acc_torch = float((torch_logits.argmax(1) == yte).mean())
    print("torch float test accuracy: %.4f" % acc_torch)
    assert acc_torch > 0.90, "training did not reach 90%"

    paths = {k: os.path.join(out_dir, "digits_%s.onnx" % k)
             for k in ("float", "qdq", "qdq_pertensor", "qop", "qdq_renamed")}
    fm = export_float(model, paths["float"], torch.from_numpy(xte[:1]))

    # calibration: the first 100 training images (ORT MinMax on the BN-folded model)
    calib = [xtr[i:i + 1] for i in range(N_CALIB)]
    prepared = qq.prepare(fm)
    ranges = qq.calibrate_minmax(prepared, calib)

    qdq = qq.quantize_qdq(fm, calib, per_channel=True, ranges=dict(ranges))
    qdq_pt = qq.quantize_qdq(fm, calib, per_channel=False, ranges=dict(ranges))
    qop = qq.quantize_qoperator(fm, calib, per_channel=True, ranges=dict(ranges))
    ren = qq.rename_opaque(qdq)
    for key, m in (("qdq", qdq), ("qdq_pertensor", qdq_pt), ("qop", qop), ("qdq_renamed", ren)):
        onnx.checker.check_model(m)
        onnx.save(m, paths[key])

    # ---- verification: every model through the numpy/torch reference ----
    lines = []
    float_logits = run_logits(fm, xte)
    err = float(np.abs(float_logits - torch_logits).max())
    print("reference runner vs torch on float model: max |diff| = %.2e" % err)
    assert err < 1e-4
    fpred = float_logits.argmax(1)
    lines.append("test set: %d images (sklearn digits, 20%% stratified split, random_state=0)" % len(te))
    lines.append("calibration: first %d training images, MinMax" % N_CALIB)
    for key in ("float", "qdq", "qdq_pertensor", "qop", "qdq_renamed"):
        m = onnx.load(paths[key])
        onnx.checker.check_model(m)
        logits = run_logits(m, xte)
        pred = logits.argmax(1)
        acc = float((pred == yte).mean())
        agree = float((pred == fpred).mean())
        cos = float(np.mean(np.sum(logits * float_logits, 1) /
                            (np.linalg.norm(logits, axis=1) * np.linalg.norm(float_logits, axis=1) + 1e-12)))
        size = os.path.getsize(paths[key])
        hist = qq.op_histogram(m)
        msg = ("%-26s %6d B  nodes %3d  inits %3d  acc %.4f  top1-agree-w/-float %.4f  logits-cos %.5f"
               % (os.path.basename(paths[key]), size, len(m.graph.node), len(m.graph.initializer), acc, agree, cos))
        print(msg)
        print("    ops: " + ", ".join("%s x%d" % kv for kv in hist.items()))
        lines.append(msg)
        lines.append("    ops: " + ", ".join("%s x%d" % kv for kv in hist.items()))

    # ---- sample data ----
    img_dir = os.path.join(out_dir, "digits")
    for c in range(10):
        os.makedirs(os.path.join(img_dir, str(c)), exist_ok=True)
        ids = [i for i in te if y[i] == c][:PNG_PER_CLASS]
        for k, i in enumerate(ids):
            write_png_gray(os.path.join(img_dir, str(c), "%d.png" % k), pix[i])
    np.save(os.path.join(out_dir, "digits_test.npy"), xte[:N_TEST_NPY].astype(np.float32))
    with open(os.path.join(out_dir, "digits_labels.txt"), "w") as f:
        f.write("".join("%d\n" % v for v in yte[:N_TEST_NPY]))
    npy_pred = fpred[:N_TEST_NPY]
    lines.append("digits_test.npy: float model gets %d/%d right" % (int((npy_pred == yte[:N_TEST_NPY]).sum()), N_TEST_NPY))

    lines.append("")
    lines.append("sha256:")
    for root, _, files in sorted(os.walk(out_dir)):
        for fn in sorted(files):
            if fn.endswith((".onnx", ".npy", ".txt", ".png")) and fn != "MANIFEST.txt":
                p = os.path.join(root, fn)
                with open(p, "rb") as fh:
                    lines.append("  %s  %s" % (hashlib.sha256(fh.read()).hexdigest()[:16], os.path.relpath(p, out_dir)))
    with open(os.path.join(out_dir, "MANIFEST.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("done in %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else HERE)
