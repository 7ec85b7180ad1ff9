#!/usr/bin/python3
"""Make the fixture of tests/data/activations/ for tests/test_activations.c
and tests/test_cli.c:

  run_fails.onnx    samples/digits_qdq.onnx with one node more: a Reshape
                    of conv3's output to [7, -1] (its 2048 values do not
                    divide by 7), as a second graph output. It passes
                    every check at load and fails at run time, on every
                    sample.
  run_fails_float.onnx  the same Reshape in samples/digits_float.onnx,
                    right after conv3's Relu, its target [7, -1] computed
                    from the input's values so that no shape inference
                    sees it: it fails in the middle of the run
  unsupported.onnx  a float model qreport's engine cannot run: a 1x1 Conv
                    (so the weight analysis has a layer) followed by a
                    custom op, com.example Frobnicate, which no engine
                    but its vendor's implements.
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
  mha_nofold_qdq.onnx  mha_nofold.onnx by samples/qdq_quantize.py: each
                    weight goes Transpose -> QuantizeLinear ->
                    DequantizeLinear, all constant (as torchvision's
                    vit_b_16 exported that way)
  twin_a.onnx       x [1,4,6] read by two Gathers (indices 0 and 1 on axis
                    1) and two Transposes (perms [0,2,1] and [2,1,0])
                    whose outputs are summed pairwise
  twin_b.onnx       the same graph with the names of each twin's outputs
                    swapped: a same-named tensor of twin_a.onnx is its
                    sibling, which reads the same input
  lnln_float.onnx   PyTorch's export (opset 13: LayerNorm as ReduceMean,
                    Sub, Pow, ...) of h = n2(n1(fc1(x))); h = h + 0.01 *
                    fc2(h); fc3(n3(h)) (Linear(8, 8) but fc3 (8, 4),
                    LayerNorm(8)), input [1,4,8]: n2's first ReduceMean
                    averages rows n1 centred, so the float model's value
                    is rounding noise (about 1e-8 against inputs about 1);
                    n3's is small (about 1e-3) but real, and its SQNR is
                    low only because the residual's quantization error
                    outweighs it
  lnln_qdq.onnx     its QDQ form by samples/qdq_quantize.py
  digits_qdq16.onnx samples/digits_float.onnx quantized A16W8 as ONNX
                    Runtime writes it before opset 21: uint16 activations,
                    int8 per-channel weights, every Q/DQ node the
                    com.microsoft contrib op; calibrated on the 20 rows of
                    samples/digits_test.npy.

  layout_a.onnx     input [1,4,6]: t = Transpose(input, perm [0,1,2]); r =
                    Reshape(t, shape computed at run time from Shape(t):
                    [1,24]); y = Relu(r); out = Reshape(y, [-1])
  layout_b.onnx     the same names, but t's perm is [0,2,1] and r's shape
                    [6,4]: r reads same-named inputs through a same-typed
                    node in both, as a renumbered export's runtime-shaped
                    Reshape does (torchvision swin_t), yet holds other
                    values in another layout; only its dims ([24] against
                    [6,4], 1s aside) tell them apart
  dyn_float.onnx    x [1,3,8,8] -> Conv (4 filters 3x3, bias) "c" -> Relu
                    -> Flatten "f" -> MatMul [144,5] "m" -> Add (bias)
                    "out"
  dyn_quant.onnx    its dynamic quantization laid out as ONNX Runtime's
                    quantize_dynamic writes it (uint8 weights, per
                    tensor): DynamicQuantizeLinear of x ("x_quantized",
                    "x_scale", "x_zero_point"), ConvInteger
                    ("c_output_quantized"), Cast, Mul by the two scales
                    ("cquant_scaled_output"), Add of the Reshaped bias
                    under the conv's name "c"; the same for the MatMul
                    through MatMulInteger, whose scaled Mul keeps "m"
  dyn2_float.onnx   x [1,4,16] -> MatMul [16,8] "ma" -> Add (bias) "a";
                    x -> MatMul [16,8] "b"; a * b "out"
  dyn2_quant.onnx   the same dynamically quantized, one
                    DynamicQuantizeLinear of x feeding both
                    MatMulIntegers (quantize_dynamic's layout)

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
     helper.make_node("Frobnicate", ["c"], ["y"], name="frobnicate",
                      domain="com.example")],
    "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])],
    [numpy_helper.from_array(w, "w")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                         helper.make_opsetid("com.example", 1)],
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


# two LayerNorms in a row: a cancellation in the float model
class LNLN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 8)
        self.n1 = torch.nn.LayerNorm(8)
        self.n2 = torch.nn.LayerNorm(8)
        self.fc2 = torch.nn.Linear(8, 8)
        self.n3 = torch.nn.LayerNorm(8)
        self.fc3 = torch.nn.Linear(8, 4)

    def forward(self, x):
        h = self.n2(self.n1(self.fc1(x)))
        h = h + 0.01 * self.fc2(h)
        return self.fc3(self.n3(h))


torch.manual_seed(0)
path = os.path.join(OUT, "lnln_float.onnx")
torch.onnx.export(LNLN().eval(), torch.randn(1, 4, 8), path,
                  input_names=["input"], output_names=["out"],
                  opset_version=13)
f = onnx.load(path)
rng = np.random.RandomState(0)
calib = [rng.randn(1, 4, 8).astype(np.float32) for _ in range(8)]
onnx.save(qq.quantize_qdq(f, calib), os.path.join(OUT, "lnln_qdq.onnx"))


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
rng = np.random.RandomState(0)
onnx.save(qq.quantize_qdq(onnx.load(os.path.join(OUT, "mha_nofold.onnx")),
                          [rng.randn(1, 5, 16).astype(np.float32)
                           for _ in range(8)]),
          os.path.join(OUT, "mha_nofold_qdq.onnx"))


# twins: same op, same input, different attribute or constant
def twins(path, swap):
    g0, g1 = ("g1", "g0") if swap else ("g0", "g1")
    t0, t1 = ("t1", "t0") if swap else ("t0", "t1")
    nodes = [
        helper.make_node("Gather", ["x", "i0"], [g0], name="gather_" + g0, axis=1),
        helper.make_node("Gather", ["x", "i1"], [g1], name="gather_" + g1, axis=1),
        helper.make_node("Sub", [g0, g1], ["d"], name="sub"),
        helper.make_node("Transpose", ["x"], [t0], name="tr_" + t0, perm=[0, 2, 1]),
        helper.make_node("Transpose", ["x"], [t1], name="tr_" + t1, perm=[2, 1, 0]),
        helper.make_node("ReduceSum", [t0], ["s0"], name="rs0", keepdims=0),
        helper.make_node("ReduceSum", [t1], ["s1"], name="rs1", keepdims=0),
        helper.make_node("Mul", ["s0", "s1"], ["m"], name="mul"),
        helper.make_node("Add", ["d", "m"], ["y"], name="add")]
    g = helper.make_graph(
        nodes, "twins",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(0, np.int64), "i0"),
         numpy_helper.from_array(np.array(1, np.int64), "i1")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 7
    onnx.save(m, os.path.join(OUT, path))


twins("twin_a.onnx", False)
twins("twin_b.onnx", True)


# a same-named tensor in another layout: only its dims tell
def layout(path, perm, axis):
    nodes = [
        helper.make_node("Transpose", ["input"], ["t"], name="tr", perm=perm),
        helper.make_node("Shape", ["t"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "i"], ["g"], name="gather", axis=0),
        helper.make_node("Concat", ["g", "m1"], ["shp"], name="concat",
                         axis=0),
        helper.make_node("Reshape", ["t", "shp"], ["r"], name="reshape"),
        helper.make_node("Relu", ["r"], ["y"], name="relu"),
        helper.make_node("Reshape", ["y", "m1"], ["out"], name="flat")]
    g = helper.make_graph(
        nodes, "layout",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4, 6])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [24])],
        [numpy_helper.from_array(np.array([axis], np.int64), "i"),
         numpy_helper.from_array(np.array([-1], np.int64), "m1")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 7
    onnx.save(m, os.path.join(OUT, path))


layout("layout_a.onnx", [0, 1, 2], 0)
layout("layout_b.onnx", [0, 2, 1], 1)


# ONNX Runtime's dynamic quantization (quantize_dynamic's QOperator
# layout: DynamicQuantizeLinear, ConvInteger/MatMulInteger, Cast, Mul by
# the scales, the conv's bias added after)
def u8(w):
    lo, hi = min(0.0, float(w.min())), max(0.0, float(w.max()))
    sc = np.float32((hi - lo) / 255)
    zp = np.uint8(np.clip(np.rint(-lo / sc), 0, 255))
    q = np.clip(np.rint(w / sc) + zp, 0, 255).astype(np.uint8)
    return q, sc, zp


rng = np.random.RandomState(3)
W1 = rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32)
B1 = rng.normal(0, 0.1, (4,)).astype(np.float32)
W2 = rng.normal(0, 0.2, (144, 5)).astype(np.float32)
B2 = rng.normal(0, 0.1, (5,)).astype(np.float32)
fl = helper.make_graph(
    [helper.make_node("Conv", ["x", "W1", "B1"], ["c"], name="conv"),
     helper.make_node("Relu", ["c"], ["r"], name="relu"),
     helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
     helper.make_node("MatMul", ["f", "W2"], ["m"], name="mm"),
     helper.make_node("Add", ["m", "B2"], ["out"], name="add")],
    "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
    [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 5])],
    [numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(B1, "B1"),
     numpy_helper.from_array(W2, "W2"), numpy_helper.from_array(B2, "B2")])
m = helper.make_model(fl, opset_imports=[helper.make_opsetid("", 13)],
                      producer_name="qreport-fixtures", producer_version="1")
m.ir_version = 7
onnx.save(m, os.path.join(OUT, "dyn_float.onnx"))

Q1, S1, Z1 = u8(W1)
Q2, S2, Z2 = u8(W2)
F = TensorProto.FLOAT
nodes = [
    helper.make_node("DynamicQuantizeLinear", ["x"],
                     ["x_quantized", "x_scale", "x_zero_point"],
                     name="x_QuantizeLinear"),
    helper.make_node("ConvInteger", ["x_quantized", "W1_quantized",
                                     "x_zero_point", "W1_zero_point"],
                     ["c_output_quantized"], name="conv_quant"),
    helper.make_node("Cast", ["c_output_quantized"],
                     ["c_output_quantized_cast_output"],
                     name="c_output_quantized_cast", to=F),
    helper.make_node("Mul", ["x_scale", "W1_scale"],
                     ["conv_quant_scales_mul:0"], name="conv_quant_scales_mul"),
    helper.make_node("Mul", ["c_output_quantized_cast_output",
                             "conv_quant_scales_mul:0"],
                     ["cquant_scaled_output"], name="conv_quant_output_scale_mul"),
    helper.make_node("Reshape", ["B1", "c_bias_reshape_shape"],
                     ["c_bias_reshape_output"]),
    helper.make_node("Add", ["cquant_scaled_output", "c_bias_reshape_output"],
                     ["c"], name="c_bias_add"),
    helper.make_node("Relu", ["c"], ["r"], name="relu"),
    helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
    helper.make_node("DynamicQuantizeLinear", ["f"],
                     ["f_quantized", "f_scale", "f_zero_point"],
                     name="f_QuantizeLinear"),
    helper.make_node("MatMulInteger", ["f_quantized", "W2_quantized",
                                       "f_zero_point", "W2_zero_point"],
                     ["m_output_quantized"], name="mm_quant"),
    helper.make_node("Cast", ["m_output_quantized"],
                     ["m_output_quantized_cast_output"],
                     name="m_output_quantized_cast", to=F),
    helper.make_node("Mul", ["f_scale", "W2_scale"],
                     ["mm_quant_scales_mul:0"], name="mm_quant_scales_mul"),
    helper.make_node("Mul", ["m_output_quantized_cast_output",
                             "mm_quant_scales_mul:0"],
                     ["m"], name="mm_quant_output_scale_mul"),
    helper.make_node("Add", ["m", "B2"], ["out"], name="add")]
qg = helper.make_graph(
    nodes, "dyn",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
    [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 5])],
    [numpy_helper.from_array(Q1, "W1_quantized"),
     numpy_helper.from_array(np.array(S1, np.float32), "W1_scale"),
     numpy_helper.from_array(np.array(Z1, np.uint8), "W1_zero_point"),
     numpy_helper.from_array(B1, "B1"),
     numpy_helper.from_array(np.array([1, -1, 1, 1], np.int64),
                             "c_bias_reshape_shape"),
     numpy_helper.from_array(Q2, "W2_quantized"),
     numpy_helper.from_array(np.array(S2, np.float32), "W2_scale"),
     numpy_helper.from_array(np.array(Z2, np.uint8), "W2_zero_point"),
     numpy_helper.from_array(B2, "B2")])
m = helper.make_model(qg, opset_imports=[helper.make_opsetid("", 13)],
                      producer_name="qreport-fixtures", producer_version="1")
m.ir_version = 7
onnx.checker.check_model(m)
onnx.save(m, os.path.join(OUT, "dyn_quant.onnx"))

# One DynamicQuantizeLinear feeding two MatMulIntegers (an attention
# block's projections share their input): ONNX Runtime's optimiser then
# fuses each into MatMulIntegerToFloat instead of DynamicQuantizeMatMul
# (tests/data/make_ort_fused.js)
WA = rng.normal(0, 0.3, (16, 8)).astype(np.float32)
WB = rng.normal(0, 0.3, (16, 8)).astype(np.float32)
BA = rng.normal(0, 0.1, (8,)).astype(np.float32)
fl = helper.make_graph(
    [helper.make_node("MatMul", ["x", "WA"], ["ma"], name="mma"),
     helper.make_node("Add", ["ma", "BA"], ["a"], name="adda"),
     helper.make_node("MatMul", ["x", "WB"], ["b"], name="mmb"),
     helper.make_node("Mul", ["a", "b"], ["out"], name="mul")],
    "dyn2", [helper.make_tensor_value_info("x", F, [1, 4, 16])],
    [helper.make_tensor_value_info("out", F, [1, 4, 8])],
    [numpy_helper.from_array(WA, "WA"), numpy_helper.from_array(WB, "WB"),
     numpy_helper.from_array(BA, "BA")])
m = helper.make_model(fl, opset_imports=[helper.make_opsetid("", 13)],
                      producer_name="qreport-fixtures", producer_version="1")
m.ir_version = 7
onnx.save(m, os.path.join(OUT, "dyn2_float.onnx"))
nodes = [helper.make_node("DynamicQuantizeLinear", ["x"],
                          ["x_quantized", "x_scale", "x_zero_point"],
                          name="x_QuantizeLinear")]
inits = []
for w, arr, out in (("WA", WA, "ma"), ("WB", WB, "b")):
    q, sc, zp = u8(arr)
    nodes += [
        helper.make_node("MatMulInteger", ["x_quantized", w + "_quantized",
                                           "x_zero_point", w + "_zero_point"],
                         [out + "_output_quantized"], name=out + "_quant"),
        helper.make_node("Cast", [out + "_output_quantized"],
                         [out + "_output_quantized_cast_output"],
                         name=out + "_output_quantized_cast", to=F),
        helper.make_node("Mul", ["x_scale", w + "_scale"],
                         [out + "_quant_scales_mul:0"],
                         name=out + "_quant_scales_mul"),
        helper.make_node("Mul", [out + "_output_quantized_cast_output",
                                 out + "_quant_scales_mul:0"],
                         [out], name=out + "_quant_output_scale_mul")]
    inits += [numpy_helper.from_array(q, w + "_quantized"),
              numpy_helper.from_array(np.array(sc, np.float32), w + "_scale"),
              numpy_helper.from_array(np.array(zp, np.uint8),
                                      w + "_zero_point")]
nodes += [helper.make_node("Add", ["ma", "BA"], ["a"], name="adda"),
          helper.make_node("Mul", ["a", "b"], ["out"], name="mul")]
qg = helper.make_graph(
    nodes, "dyn2", [helper.make_tensor_value_info("x", F, [1, 4, 16])],
    [helper.make_tensor_value_info("out", F, [1, 4, 8])],
    inits + [numpy_helper.from_array(BA, "BA")])
m = helper.make_model(qg, opset_imports=[helper.make_opsetid("", 13)],
                      producer_name="qreport-fixtures", producer_version="1")
m.ir_version = 7
onnx.checker.check_model(m)
onnx.save(m, os.path.join(OUT, "dyn2_quant.onnx"))


# models that fail in the middle of each run
for src, out in (("digits_qdq.onnx", "run_fails.onnx"),
                 ("digits_float.onnx", "run_fails_float.onnx")):
    m = onnx.load(os.path.join(os.path.dirname(os.path.dirname(OUT)), "..",
                               "samples", src))
    m.graph.initializer.append(numpy_helper.from_array(
        np.array([7, -1], np.int64), "bad_shape"))
    bad = helper.make_node("Reshape", ["/relu3/Relu_output_0", "bad_shape"],
                           ["bad_reshape"], name="bad_reshape")
    if out == "run_fails.onnx":
        m.graph.node.append(bad)
    else:
        # mid-graph, and with its target shape computed from the input's
        # values (7 = max(input) * 0 + 7), so that no shape inference
        # sees it coming: it fails while the run is under way
        m.graph.initializer.extend([
            numpy_helper.from_array(np.array(0, np.float32), "zero_f"),
            numpy_helper.from_array(np.array(7, np.float32), "seven_f"),
            numpy_helper.from_array(np.array([0], np.int64), "axis0"),
            numpy_helper.from_array(np.array([-1], np.int64), "minus1")])
        bad.input[1] = "bad_target"
        at = [i for i, n in enumerate(m.graph.node)
              if "/relu3/Relu_output_0" in n.output][0]
        m.graph.node.insert(at + 1, bad)
        for k, nd in enumerate([
                helper.make_node("ReduceMax", ["input"], ["bad_max"],
                                 name="bad_max", keepdims=0),
                helper.make_node("Mul", ["bad_max", "zero_f"], ["bad_zero"],
                                 name="bad_zero"),
                helper.make_node("Add", ["bad_zero", "seven_f"], ["bad_7"],
                                 name="bad_7"),
                helper.make_node("Cast", ["bad_7"], ["bad_7i"], name="bad_7i",
                                 to=TensorProto.INT64),
                helper.make_node("Unsqueeze", ["bad_7i", "axis0"], ["bad_7v"],
                                 name="bad_7v"),
                helper.make_node("Concat", ["bad_7v", "minus1"],
                                 ["bad_target"], name="bad_target", axis=0)]):
            m.graph.node.insert(at + 1 + k, nd)
    m.graph.output.append(
        helper.make_tensor_value_info("bad_reshape", F, [7, "n"]))
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, out))


# wide: an activation whose channel axis (dim 1) holds 3000 values, as a
# detector's [1, anchors, 4] boxes do: its per-channel chart draws runs of
# channels, not one point each. The candidate is the float model itself.
def wide():
    rng = np.random.RandomState(5)
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "k"], ["boxes"], name="scale"),
         helper.make_node("Relu", ["boxes"], ["y"], name="relu")],
        "wide",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3000, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3000, 4])],
        [numpy_helper.from_array(rng.rand(1, 3000, 1).astype(np.float32), "k")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, "wide.onnx"))


wide()
