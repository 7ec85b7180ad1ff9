#!/usr/bin/python3
"""Make tests/data/activations/views_qdq.onnx for tests/test_activations.c
(test_views): a QDQ graph whose weights' DequantizeLinear nodes cover each
case of the executor's views (qr_exec_opts.views), opset 21:

  x [1,4,6,6] -> QuantizeLinear/DequantizeLinear (uint8, per tensor) "xd"
  "a"  Conv 3x3 pad 1 of xd, int8 weights per channel (axis 0), bias:
       a view, dequantized by the GEMM 64 rows at a time
  "b"  Conv 1x1 of a, uint8 weights per tensor with a zero point: a view
  "c1", "c2"  Conv 3x3 pad 1 of b and of a, both reading one
       DequantizeLinear (two readers: not a view)
  "d"  depthwise Conv 3x3 pad 1 of b (group 8), int8 per channel: a view,
       dequantized whole by the kernel's pack
  "e"  Conv 1x1 of b, int8 weights with scales along axis 1 (the input
       channels): a view the Conv cannot read row by row, so it
       dequantizes it whole for the run
  "f"  Conv 1x1 of b whose weights' DequantizeLinear output "wf_dq" is
       also a graph output (kept: not a view)
  "g"  1-D Conv (kernel 3, pad 1) of b reshaped to [1,8,36], int8 per
       channel: a view
  "h"  Conv 1x1 of b, int8 weights blocked along axis 1 (block_size 4:
       DequantizeLinear-21's blocked scales): no view is offered

Graph outputs: c1, c2, d, e, f, g, h and wf_dq. Values are seeded, so the
file is the same on every run.

views_mm_qdq.onnx: the same for MatMul and Gemm weights (B), nothing
but views with a fold budget of 1 byte: x [1,3,16] -> Q/DQ "xd" ->
MatMul "m1" (int8 [16,40], scales per column: axis 1) -> MatMul "m2"
(uint8 [40,8] per tensor, zero point) -> Reshape [3,8] -> Gemm "g1"
(transB, int8 [12,8] per row of W: axis 0, bias) -> Gemm "g2" (int8
[12,5], axis 1) -> MatMul "m3" (int8 [5,6] with scales along K, axis 0:
dequantized whole) -> Reshape [1,18] -> Gemm "g3" (one row: the row
kernel, which dequantizes B whole) and Gemm "g4" (alpha 0.5: OpenBLAS on
B dequantized whole). Outputs m1, g1, m3, g3, g4.

And views_big_qdq.onnx, for the executor's fold policy with views on: x
[1,768,2,2] -> QuantizeLinear/DequantizeLinear "xd" -> Conv 1x1 "big"
(int8 [800,768,1,1] per channel, 2.3 MiB as floats) -> Conv 3x3 pad 1
"k3" (int8 [8,800,3,3]: Winograd could take it, so Conv's view_fold
wants it folded) and Conv 1x1 "p1" (int8 [8,800,1,1]: small, but a view
does as well). The big weight's codes are a repeating pattern, so the
file compresses in git.

    /usr/bin/python3 tests/data/make_view_fixtures.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "activations")
rng = np.random.default_rng(21)
inits = []
nodes = []


def const(name, a):
    inits.append(numpy_helper.from_array(a, name))
    return name


def dq_weight(name, shape, dtype, axis=None, block=None, zp=True):
    """Codes, scales and zero points of a weight and its DequantizeLinear;
    returns the DequantizeLinear's output name."""
    lo, hi = (-128, 127) if dtype == np.int8 else (0, 255)
    q = rng.integers(lo, hi + 1, size=shape).astype(dtype)
    if block is not None:
        sshape = list(shape)
        sshape[axis] = (shape[axis] + block - 1) // block
    elif axis is not None:
        sshape = [shape[axis]]
    else:
        sshape = []
    s = (rng.random(sshape) * 0.02 + 0.005).astype(np.float32)
    ins = [const(name + "_q", q), const(name + "_s", s)]
    if zp:
        z = rng.integers(lo // 4, hi // 4 + 1, size=sshape).astype(dtype)
        ins.append(const(name + "_z", z))
    attrs = {}
    if axis is not None:
        attrs["axis"] = axis
    if block is not None:
        attrs["block_size"] = block
    nodes.append(helper.make_node("DequantizeLinear", ins, [name + "_dq"],
                                  name=name + "_DequantizeLinear", **attrs))
    return name + "_dq"


def x_qdq():
    """x -> QuantizeLinear/DequantizeLinear (uint8, per tensor) -> "xd"."""
    nodes.append(helper.make_node(
        "QuantizeLinear", ["x", const("x_s", np.float32(0.02)),
                           const("x_z", np.uint8(128))], ["xq"], name="xq"))
    nodes.append(helper.make_node("DequantizeLinear", ["xq", "x_s", "x_z"],
                                  ["xd"], name="xd"))


def conv(name, x, w, **attrs):
    nodes.append(helper.make_node("Conv", [x, w], [name], name=name,
                                  **attrs))
    return name


x_qdq()
wa = dq_weight("wa", [8, 4, 3, 3], np.int8, axis=0)
nodes.append(helper.make_node(
    "Conv", ["xd", wa, const("ba", rng.standard_normal(8).astype(
        np.float32))], ["a"], name="a", pads=[1, 1, 1, 1]))
conv("b", "a", dq_weight("wb", [8, 8, 1, 1], np.uint8))
wc = dq_weight("wc", [8, 8, 3, 3], np.int8, axis=0)
conv("c1", "b", wc, pads=[1, 1, 1, 1])
conv("c2", "a", wc, pads=[1, 1, 1, 1])
conv("d", "b", dq_weight("wd", [8, 1, 3, 3], np.int8, axis=0), group=8,
     pads=[1, 1, 1, 1])
conv("e", "b", dq_weight("we", [8, 8, 1, 1], np.int8, axis=1))
conv("f", "b", dq_weight("wf", [8, 8, 1, 1], np.int8, axis=0, zp=False))
nodes.append(helper.make_node(
    "Reshape", ["b", const("shape1d", np.array([1, 8, 36], np.int64))],
    ["b1d"], name="b1d"))
conv("g", "b1d", dq_weight("wg", [4, 8, 3], np.int8, axis=0),
     pads=[1, 1])
conv("h", "b", dq_weight("wh", [4, 8, 1, 1], np.int8, axis=1, block=4))

F = TensorProto.FLOAT
outs = [helper.make_tensor_value_info(n, F, None)
        for n in ("c1", "c2", "d", "e", "f", "g", "h")]
outs.append(helper.make_tensor_value_info("wf_dq", F, [8, 8, 1, 1]))
g = helper.make_graph(nodes, "views",
                      [helper.make_tensor_value_info("x", F, [1, 4, 6, 6])],
                      outs, inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)],
                      producer_name="qreport-fixtures", producer_version="1")
m.ir_version = 10  # opset 21; onnx 1.12's checker knows neither
os.makedirs(OUT, exist_ok=True)
onnx.save(m, os.path.join(OUT, "views_qdq.onnx"))

# ---- views_big_qdq.onnx ----
inits = []
nodes = []
x_qdq()
big = (np.arange(800 * 768) * 37 % 255 - 127).astype(np.int8)
nodes.append(helper.make_node(
    "DequantizeLinear",
    [const("wbig_q", big.reshape(800, 768, 1, 1)),
     const("wbig_s", (np.arange(800) % 7 * 0.001 + 0.004).astype(
         np.float32))], ["wbig_dq"], name="wbig_DequantizeLinear", axis=0))
conv("big", "xd", "wbig_dq")
conv("k3", "big", dq_weight("wk3", [8, 800, 3, 3], np.int8, axis=0),
     pads=[1, 1, 1, 1])
conv("p1", "big", dq_weight("wp1", [8, 800, 1, 1], np.int8, axis=0))
g = helper.make_graph(nodes, "views_big",
                      [helper.make_tensor_value_info("x", F, [1, 768, 2, 2])],
                      [helper.make_tensor_value_info(n, F, None)
                       for n in ("k3", "p1")], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)],
                      producer_name="qreport-fixtures", producer_version="1")
m.ir_version = 10
onnx.save(m, os.path.join(OUT, "views_big_qdq.onnx"))

# ---- views_mm_qdq.onnx ----
inits = []
nodes = []
x_qdq()


def mm(op, name, a, b, **attrs):
    ins = [a, b] + ([attrs.pop("c")] if "c" in attrs else [])
    nodes.append(helper.make_node(op, ins, [name], name=name, **attrs))
    return name


mm("MatMul", "m1", "xd", dq_weight("w1", [16, 40], np.int8, axis=1))
mm("MatMul", "m2", "m1", dq_weight("w2", [40, 8], np.uint8))
nodes.append(helper.make_node(
    "Reshape", ["m2", const("s38", np.array([3, 8], np.int64))], ["r"],
    name="r"))
mm("Gemm", "g1", "r", dq_weight("w3", [12, 8], np.int8, axis=0),
   c=const("b3", rng.standard_normal(12).astype(np.float32)), transB=1)
mm("Gemm", "g2", "g1", dq_weight("w4", [12, 5], np.int8, axis=1))
mm("MatMul", "m3", "g2", dq_weight("w5", [5, 6], np.int8, axis=0))
nodes.append(helper.make_node(
    "Reshape", ["m3", const("s118", np.array([1, 18], np.int64))], ["r2"],
    name="r2"))
mm("Gemm", "g3", "r2", dq_weight("w6", [18, 4], np.int8, axis=1))
mm("Gemm", "g4", "r2", dq_weight("w7", [18, 4], np.int8, axis=1),
   alpha=0.5)
g = helper.make_graph(nodes, "views_mm",
                      [helper.make_tensor_value_info("x", F, [1, 3, 16])],
                      [helper.make_tensor_value_info(n, F, None)
                       for n in ("m1", "g1", "m3", "g3", "g4")], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)],
                      producer_name="qreport-fixtures", producer_version="1")
m.ir_version = 10
onnx.save(m, os.path.join(OUT, "views_mm_qdq.onnx"))
