#!/usr/bin/python3
"""Make the float transformer fixtures of tests/data/activations/ whose
ONNX Runtime-optimised copies (tests/data/make_ort_fused.js) hold the
float fusions of src/ops/op_fused.c, and one hand-made model of the rest.

    /usr/bin/python3 tests/data/make_fused_fixtures.py
    node tests/data/make_ort_fused.js
    /usr/bin/python3 tests/data/make_fused_fixtures.py --qdq

  tfm_float.onnx  a PyTorch (torch.onnx.export, opset 17) attention block,
                  x [1,16,32]: LayerNorm, qkv Linear, 4 heads, softmax
                  attention, projection, residual; an MLP with GELU (erf)
                  and one with GELU (tanh); mean over tokens; head [10].
                  ORT fuses q k^T * scale into FusedMatMul (alpha) and the
                  erf GELU into com.microsoft Gelu (tfm_ortopt.onnx)
  fz_float.onnx   x [1,16,32]: RMS norms (x rsqrt(mean x^2 + eps) w) and a
                  LayerNorm of a residual sum, MLPs with GELU (tanh, erf);
                  ORT fuses SimplifiedLayerNormalization,
                  SkipLayerNormalization and Gelu (fz_ortopt.onnx)
  msops.onnx      the ops ORT's optimiser did not write here, by hand
                  (opset 20, com.microsoft 1), x [2,5,8] ->
                  Gelu(approximate tanh) -> BiasGelu(b1) -> FastGelu(b2)
                  -> SkipSimplifiedLayerNormalization(skip x, gamma,
                  bias b3; epsilon 1e-6) -> Gelu -> y
  tfm_pre_qdq.onnx  (--qdq) tfm_basic.onnx, ORT's "basic" optimisation of
                  tfm_float.onnx (what quant_pre_process does), quantized
                  QDQ by samples/qdq_quantize.py (8 seeded calibration
                  inputs): its Linears are Gemms that add their bias, where
                  tfm_float.onnx adds it after the MatMul
"""
import os

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "activations")


class Block(nn.Module):
    def __init__(self, d=32, h=4):
        super().__init__()
        self.h = h
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.act = nn.GELU()
        self.act2 = nn.GELU(approximate="tanh")
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).reshape(
            b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = ((q @ k.transpose(-2, -1)) * (d // self.h) ** -0.5).softmax(-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, t, d))
        x = x + self.fc2(self.act(self.fc1(self.ln2(x))))
        x = x + self.fc2(self.act2(self.fc1(self.ln2(x))))
        return self.head(x.mean(1))


class RMS(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w


class Fz(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.n1, self.n3 = RMS(d), RMS(d)
        self.n2 = nn.LayerNorm(d)
        self.f1, self.f2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.f3, self.f4 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.g1, self.g2 = nn.GELU(approximate="tanh"), nn.GELU()
        self.h = nn.Linear(d, 10)

    def forward(self, x):
        h = x + self.f2(self.g1(self.f1(self.n1(x))))
        y = self.n2(h + x)
        h2 = y + self.f4(self.g2(self.f3(y)))
        return self.h(self.n3(h2 + h))


def export(model, name, seed):
    torch.manual_seed(seed)
    m = model().eval()
    torch.onnx.export(m, torch.randn(1, 16, 32), os.path.join(OUT, name),
                      opset_version=17, input_names=["x"],
                      output_names=["logits"], do_constant_folding=True)


def msops():
    rng = np.random.RandomState(7)
    f = TensorProto.FLOAT
    inits = [numpy_helper.from_array(
        rng.normal(0, s, (8,)).astype(np.float32), n)
        for n, s in (("b1", 0.5), ("b2", 0.5), ("b3", 0.2))]
    inits.append(numpy_helper.from_array(
        (rng.rand(8) + 0.5).astype(np.float32), "gamma"))
    ms = "com.microsoft"
    nodes = [
        helper.make_node("Gelu", ["x"], ["g0"], approximate="tanh"),
        helper.make_node("BiasGelu", ["g0", "b1"], ["g1"], domain=ms),
        helper.make_node("FastGelu", ["g1", "b2"], ["g2"], domain=ms),
        helper.make_node("SkipSimplifiedLayerNormalization",
                         ["g2", "x", "gamma", "b3"], ["n"], domain=ms,
                         epsilon=1e-6),
        helper.make_node("Gelu", ["n"], ["y"])]
    g = helper.make_graph(nodes, "msops",
                          [helper.make_tensor_value_info("x", f, [2, 5, 8])],
                          [helper.make_tensor_value_info("y", f, [2, 5, 8])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20),
                                            helper.make_opsetid(ms, 1)],
                          producer_name="qreport-fixtures")
    m.ir_version = 9
    onnx.save(m, os.path.join(OUT, "msops.onnx"))


def pre_qdq():
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "samples"))
    import qdq_quantize as qq
    rng = np.random.RandomState(0)
    m = qq.prepare(onnx.load(os.path.join(OUT, "tfm_basic.onnx")))
    calib = [{"x": rng.randn(1, 16, 32).astype(np.float32)} for _ in range(8)]
    onnx.save(qq.quantize_qdq(m, calib), os.path.join(OUT, "tfm_pre_qdq.onnx"))


if __name__ == "__main__":
    import sys
    if "--qdq" in sys.argv[1:]:
        pre_qdq()
    else:
        export(Block, "tfm_float.onnx", 0)
        export(Fz, "fz_float.onnx", 1)
        msops()
