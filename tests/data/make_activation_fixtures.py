#!/usr/bin/python3
"""Make the fixture of tests/data/activations/ for tests/test_activations.c
and tests/test_cli.c:

  unsupported.onnx  a float model qreport's engine cannot run: a 1x1 Conv
                    (so the weight analysis has a layer) followed by an
                    Einsum, which the engine does not implement.
  attn_float.onnx   PyTorch's export of one nn.TransformerEncoderLayer
                    (d_model 8, 2 heads, feed-forward 16) after a Linear,
                    input [1,4,6]: attention reshapes through
                    Shape -> Gather -> Mul/Div -> Concat arithmetic on int64
                    tensors, which are not activations.
  attn_qdq.onnx     its QDQ form by samples/qdq_quantize.py (MatMul of two
                    activations, per-tensor Gemm weights).
  mha_fold.onnx     torch's default export of nn.MultiheadAttention(16, 2,
                    batch_first=True) and a Linear, input [1,5,16]
                    (constants folded)
  mha_nofold.onnx   the same module exported with do_constant_folding=False:
                    one Transpose more per weight, so every later
                    /a/Transpose_N names another tensor than in
                    mha_fold.onnx (the same values otherwise)
  digits_qdq16.onnx samples/digits_float.onnx quantized A16W8 as ONNX
                    Runtime writes it before opset 21: uint16 activations,
                    int8 per-channel weights, every Q/DQ node the
                    com.microsoft contrib op; calibrated on the 20 rows of
                    samples/digits_test.npy.

    /usr/bin/python3 tests/data/make_activation_fixtures.py
"""
import os

import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "activations")

w = (np.arange(6, dtype=np.float32).reshape(2, 3, 1, 1) - 2.5) / 4
g = helper.make_graph(
    [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
     helper.make_node("Einsum", ["c"], ["y"], name="einsum",
                      equation="bchw->bchw")],
    "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])],
    [numpy_helper.from_array(w, "w")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                      producer_name="qreport-fixtures", producer_version="1")
m.ir_version = 7
onnx.checker.check_model(m)
os.makedirs(OUT, exist_ok=True)
onnx.save(m, os.path.join(OUT, "unsupported.onnx"))


# attention: a real exporter's shape arithmetic
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))), "samples"))
import qdq_quantize as qq  # noqa: E402


class Attn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Linear(6, 8)
        self.enc = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                    batch_first=True)

    def forward(self, x):
        return self.enc(self.emb(x))


torch.manual_seed(0)
path = os.path.join(OUT, "attn_float.onnx")
torch.onnx.export(Attn().eval(), torch.randn(1, 4, 6), path,
                  input_names=["input"], output_names=["out"],
                  opset_version=13)
f = onnx.load(path)
rng = np.random.RandomState(0)
calib = [rng.randn(1, 4, 6).astype(np.float32) for _ in range(8)]
onnx.save(qq.quantize_qdq(f, calib), os.path.join(OUT, "attn_qdq.onnx"))


# A16W8 with com.microsoft Q/DQ
samples = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "samples")
digits = onnx.load(os.path.join(samples, "digits_float.onnx"))
rows = np.load(os.path.join(samples, "digits_test.npy"))
onnx.save(qq.quantize_qdq(digits, [rows[i:i + 1] for i in range(len(rows))],
                          activation_type="uint16"),
          os.path.join(OUT, "digits_qdq16.onnx"))


# one module, two exports whose node numbering differs
class MHA(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.MultiheadAttention(16, 2, batch_first=True)
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        y, _ = self.a(x, x, x, need_weights=False)
        return self.fc(y)


torch.manual_seed(0)
mha = MHA().eval()
for name, kw in (("mha_fold.onnx", {}),
                 ("mha_nofold.onnx", {"do_constant_folding": False})):
    torch.onnx.export(mha, torch.zeros(1, 5, 16), os.path.join(OUT, name),
                      opset_version=13, input_names=["input"],
                      output_names=["logits"], **kw)
