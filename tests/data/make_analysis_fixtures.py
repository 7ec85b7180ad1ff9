#!/usr/bin/python3
"""Make the tiny models of tests/data/analysis/ for tests/test_analysis_models.c.

Run with Debian's python3-onnx and python3-numpy:

    /usr/bin/python3 tests/data/make_analysis_fixtures.py

The models are deterministic (fixed seed). The numbers the C test checks
(SQNR of dequantized weights, clipped counts, CLE scales) are printed at the
end and hard-coded in the test; rerunning must print the same values.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "analysis")
rng = np.random.default_rng(20240611)
expected = []


def save(model, name):
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(OUT, name))


def model(nodes, inputs, outputs, inits, opset=13, ms=False, vi=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits, value_info=list(vi))
    ops = [helper.make_opsetid("", opset)]
    if ms:
        ops.append(helper.make_opsetid("com.microsoft", 1))
    m = helper.make_model(g, opset_imports=ops, producer_name="qreport-fixtures",
                          producer_version="1")
    m.ir_version = 7
    return m


def t(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def vinfo(name, shape, dt=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


def f32(a):
    return np.asarray(a, dtype=np.float32)


def sqnr(x, y):
    x = x.astype(np.float64)
    e = ((x - y.astype(np.float64)) ** 2).sum()
    return float("inf") if e == 0 else 10 * np.log10((x ** 2).sum() / e)


def quant_sym(w, axis, shrink=1.0):
    """ORT symmetric int8: scale = max|w|/127 (times shrink, to force
    clipping), q = clip(round(w/scale), -127, 127). Per channel along axis
    when axis is not None."""
    if axis is None:
        s = f32(np.abs(w).max() / np.float32(127) * np.float32(shrink))
        sb = s
    else:
        red = tuple(i for i in range(w.ndim) if i != axis)
        s = f32(np.abs(w).max(axis=red) / np.float32(127) * np.float32(shrink))
        shp = [1] * w.ndim
        shp[axis] = -1
        sb = s.reshape(shp)
    q = np.clip(np.rint(w / sb), -127, 127).astype(np.int8)
    return q, s, sb


def measure(tag, w, q, sb, zb, qlo, qhi):
    """SQNR of w vs (q-zp)*scale, clipped (q at qlo/qhi), out of range."""
    deq = ((q.astype(np.float32) - zb) * sb).astype(np.float32)
    clipped = int(((q <= qlo) | (q >= qhi)).sum())
    lo = (np.float32(qlo) - zb) * sb - np.float32(0.5) * np.abs(sb)
    hi = (np.float32(qhi) - zb) * sb + np.float32(0.5) * np.abs(sb)
    oor = int(((w < lo) | (w > hi)).sum())
    expected.append("%s: sqnr %.6f clipped %d out_of_range %d" %
                    (tag, sqnr(w, deq), clipped, oor))


# ---- CLE pair: conv c1 -> Relu -> conv c2, literal weights ----
# r1 (max|W1| per output channel) = 4, 1, 0.5; r2 (max|W2| per input
# channel) = 1, 4, 2 -> s = sqrt(r1/r2) = 2, 0.5, 0.5.
W1 = f32([[4, -1], [1, 0.5], [0.5, -0.5]]).reshape(3, 2, 1, 1)
W2 = f32([[1, -4, 2], [0.5, 2, -1]]).reshape(2, 3, 1, 1)
save(model([helper.make_node("Conv", ["x", "w1"], ["a"], name="c1"),
            helper.make_node("Relu", ["a"], ["b"], name="r1"),
            helper.make_node("Conv", ["b", "w2"], ["y"], name="c2")],
           [vinfo("x", [1, 2, 4, 4])], [vinfo("y", [1, 2, 4, 4])],
           [t("w1", W1), t("w2", W2)]), "cle_pair.onnx")

# ---- CLE triplet: conv -> BN -> Relu -> depthwise -> Relu -> conv ----
W0 = f32(rng.normal(0, 1, (4, 2, 1, 1)) * f32([[[[3]]], [[[0.2]]], [[[1]]], [[[0.05]]]]))
gamma = f32([1.5, 0.5, 2.0, 1.0])
beta = f32([0.1, 0.0, -0.1, 0.2])
mean = f32([0.0, 0.1, 0.2, 0.0])
var = f32([1.0, 4.0, 0.25, 9.0])
eps = 1e-5
Wd = f32(rng.normal(0, 1, (4, 1, 3, 3)))
Wp = f32(rng.normal(0, 1, (3, 4, 1, 1)))
save(model([helper.make_node("Conv", ["x", "w0"], ["a"], name="t0"),
            helper.make_node("BatchNormalization",
                             ["a", "g", "be", "mu", "var"], ["b"],
                             name="bn0", epsilon=eps),
            helper.make_node("Relu", ["b"], ["c"], name="r0"),
            helper.make_node("Conv", ["c", "wd"], ["d"], name="t1", group=4,
                             pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["d"], ["e"], name="r1"),
            helper.make_node("Conv", ["e", "wp"], ["y"], name="t2")],
           [vinfo("x", [1, 2, 4, 4])], [vinfo("y", [1, 3, 4, 4])],
           [t("w0", W0), t("g", gamma), t("be", beta), t("mu", mean),
            t("var", var), t("wd", Wd), t("wp", Wp)]), "cle_triplet.onnx")
fold = f32(gamma / np.sqrt(var.astype(np.float64) + np.float32(eps)))
W0f = W0 * fold.reshape(-1, 1, 1, 1)
r0 = np.abs(W0f).max(axis=(1, 2, 3))
r1 = np.abs(Wd).max(axis=(1, 2, 3))
r2 = np.abs(Wp).max(axis=(0, 2, 3))
c = np.cbrt(r0.astype(np.float64) * r1 * r2)
expected.append("triplet s12 %s" % ", ".join("%.6f" % v for v in r0 / c))
expected.append("triplet s23 %s" % ", ".join("%.6f" % v for v in c / r2))
expected.append("triplet max_rel_range_before %.6f" % max(
    (lambda r: r.max() / r[r > 0].min())(w.max(axis=(1, 2, 3)) - w.min(axis=(1, 2, 3)))
    for w in (W0f, Wd, Wp)))

# ---- blocker: conv -> Clip(0,6) -> conv (opset 13: min/max inputs) ----
save(model([helper.make_node("Conv", ["x", "w1"], ["a"], name="k1"),
            helper.make_node("Clip", ["a", "lo", "hi"], ["b"], name="relu6"),
            helper.make_node("Conv", ["b", "w2"], ["y"], name="k2")],
           [vinfo("x", [1, 2, 4, 4])], [vinfo("y", [1, 2, 4, 4])],
           [t("w1", W1), t("w2", W2), t("lo", f32(0)), t("hi", f32(6))]),
     "cle_relu6.onnx")

# ---- Constant-node weights (paddle2onnx style), Gemm transB, MatMul ----
Wc = f32(rng.normal(0, 1, (4, 2, 3, 3)))
Wg = f32(rng.normal(0, 1, (5, 4)))      # Gemm transB=1: [N=5, K=4]
Wm = f32(rng.normal(0, 1, (5, 6)))      # MatMul [K=5, N=6]
save(model([helper.make_node("Constant", [], ["wc"], name="wconst",
                             value=t("wc_value", Wc)),
            helper.make_node("Conv", ["x", "wc"], ["a"], name="conv",
                             pads=[1, 1, 1, 1]),
            helper.make_node("GlobalAveragePool", ["a"], ["b"], name="gap"),
            helper.make_node("Flatten", ["b"], ["c"], name="flat"),
            helper.make_node("Gemm", ["c", "wg"], ["d"], name="fc", transB=1),
            helper.make_node("MatMul", ["d", "wm"], ["y"], name="mm")],
           [vinfo("x", ["batch", 2, 4, 4])], [vinfo("y", ["batch", 6])],
           [t("wg", Wg), t("wm", Wm)]), "const_weight.onnx")

# ---- float model for the quantized candidates ----
F1 = f32(rng.normal(0, 0.5, (8, 3, 3, 3)))
F1[3] *= 8  # an outlier channel
F1b = f32(rng.normal(0, 0.1, (8,)))
G1 = f32(rng.uniform(0.5, 2.0, (8,)))
B1 = f32(rng.normal(0, 0.1, (8,)))
M1 = f32(rng.normal(0, 0.1, (8,)))
V1 = f32(rng.uniform(0.5, 2.0, (8,)))
F2 = f32(rng.normal(0, 0.3, (4, 8, 3, 3)))
FC = f32(rng.normal(0, 0.5, (10, 4)))
FCb = f32(rng.normal(0, 0.1, (10,)))


def float_net():
    return model([
        helper.make_node("Conv", ["input", "conv1.weight", "conv1.bias"], ["c1"],
                         name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization",
                         ["c1", "bn1.weight", "bn1.bias", "bn1.mean", "bn1.var"],
                         ["b1"], name="bn1"),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "conv2.weight"], ["c2"], name="conv2",
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="gap"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["output"],
                         name="fc", transB=1)],
        [vinfo("input", ["batch", 3, 8, 8])], [vinfo("output", ["batch", 10])],
        [t("conv1.weight", F1), t("conv1.bias", F1b), t("bn1.weight", G1),
         t("bn1.bias", B1), t("bn1.mean", M1), t("bn1.var", V1),
         t("conv2.weight", F2), t("fc.weight", FC), t("fc.bias", FCb)])


save(float_net(), "net_float.onnx")

fold1 = f32(G1 / np.sqrt(V1.astype(np.float64) + np.float32(1e-5)))
F1f = (F1 * fold1.reshape(-1, 1, 1, 1)).astype(np.float32)
Q1, S1, S1b = quant_sym(F1f, 0)
Q2, S2, S2b = quant_sym(F2, 0, shrink=0.8)
QF, SF, SFb = quant_sym(FC, None)
measure("qdq conv1 (bn folded)", F1f, Q1, S1b, np.float32(0), -128, 127)
measure("qdq conv2 (shrunk scale)", F2, Q2, S2b, np.float32(0), -128, 127)
measure("qdq fc", FC, QF, SFb, np.float32(0), -128, 127)


def qdq(x, scale, zp, out, name):
    return [helper.make_node("QuantizeLinear", [x, scale, zp], [out + "_q"],
                             name=name + "_QuantizeLinear"),
            helper.make_node("DequantizeLinear", [out + "_q", scale, zp], [out],
                             name=name + "_DequantizeLinear")]


def act_inits():
    return [t("act_scale", f32(0.05)), t("act_zp", np.uint8(128))]


def qdq_net(names):
    """ORT-style QDQ net; names maps float names to the candidate's."""
    n = names
    return model(
        qdq("input", "act_scale", "act_zp", "input_dq", "input") +
        [helper.make_node("DequantizeLinear",
                          [n["w1q"], n["w1s"], n["w1z"]], ["w1_dq"],
                          name=n["w1q"] + "_DequantizeLinear", axis=0),
         helper.make_node("Conv", ["input_dq", "w1_dq", "conv1.bias_f"], ["c1"],
                          name=n["conv1"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c1"], ["r1"], name=n["relu1"])] +
        (qdq("r1", "act_scale", "act_zp", "r1_dq", "r1") if n["w2q"] else []) +
        ([helper.make_node("DequantizeLinear",
                           [n["w2q"], n["w2s"], n["w2z"]], ["w2_dq"],
                           name=n["w2q"] + "_DequantizeLinear", axis=0),
          helper.make_node("Conv", ["r1_dq", "w2_dq"], ["c2"], name=n["conv2"],
                           pads=[1, 1, 1, 1])] if n["w2q"] else
         [helper.make_node("Conv", ["r1", n["w2f"]], ["c2"], name=n["conv2"],
                           pads=[1, 1, 1, 1])]) +
        [helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
         helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="gap"),
         helper.make_node("Flatten", ["p"], ["f"], name="flatten")] +
        qdq("f", "act_scale", "act_zp", "f_dq", "f") +
        [helper.make_node("DequantizeLinear", [n["fcq"], n["fcs"], n["fcz"]],
                          ["fc_dq"], name=n["fcq"] + "_DequantizeLinear"),
         helper.make_node("Gemm", ["f_dq", "fc_dq", "fc.bias"], ["output"],
                          name=n["fc"], transB=1)],
        [vinfo("input", ["batch", 3, 8, 8])], [vinfo("output", ["batch", 10])],
        act_inits() +
        [t(n["w1q"], Q1), t(n["w1s"], S1), t(n["w1z"], np.zeros(8, np.int8)),
         t("conv1.bias_f", (F1b - M1) * fold1 + B1),
         t(n["fcq"], QF), t(n["fcs"], SF), t(n["fcz"], np.int8(0)),
         t("fc.bias", FCb)] +
        ([t(n["w2q"], Q2), t(n["w2s"], S2), t(n["w2z"], np.zeros(4, np.int8))]
         if n["w2q"] else [t(n["w2f"], F2)]))


ort = {"conv1": "conv1", "relu1": "relu1", "conv2": "conv2", "fc": "fc",
       "w1q": "conv1.weight_quantized", "w1s": "conv1.weight_scale",
       "w1z": "conv1.weight_zero_point",
       "w2q": "conv2.weight_quantized", "w2s": "conv2.weight_scale",
       "w2z": "conv2.weight_zero_point",
       "fcq": "fc.weight_quantized", "fcs": "fc.weight_scale",
       "fcz": "fc.weight_zero_point"}
save(qdq_net(ort), "net_qdq.onnx")
# Renamed by another toolchain, and conv2 left in float: structure matching
# must pair conv1 and fc and leave conv2 unmatched.
ren = {"conv1": "n17", "relu1": "n18", "conv2": "n19", "fc": "n20",
       "w1q": "p0", "w1s": "p0s", "w1z": "p0z", "w2q": None, "w2f": "p1",
       "fcq": "p2", "fcs": "p2s", "fcz": "p2z"}
save(qdq_net(ren), "net_qdq_renamed.onnx")

# ---- QOperator: QLinearConv for conv1, the rest float ----
save(model([
    helper.make_node("QuantizeLinear", ["input", "act_scale", "act_zp"], ["xq"],
                     name="input_QuantizeLinear"),
    helper.make_node("QLinearConv",
                     ["xq", "act_scale", "act_zp", "conv1.weight_quantized",
                      "conv1.weight_scale", "conv1.weight_zero_point",
                      "act_scale", "act_zp", "conv1.bias_quantized"], ["c1q"],
                     name="conv1_quant", pads=[1, 1, 1, 1]),
    helper.make_node("DequantizeLinear", ["c1q", "act_scale", "act_zp"], ["c1"],
                     name="c1_DequantizeLinear"),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("Conv", ["r1", "conv2.weight"], ["c2"], name="conv2",
                     pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="gap"),
    helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
    helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["output"],
                     name="fc", transB=1)],
    [vinfo("input", ["batch", 3, 8, 8])], [vinfo("output", ["batch", 10])],
    act_inits() +
    [t("conv1.weight_quantized", Q1), t("conv1.weight_scale", S1),
     t("conv1.weight_zero_point", np.zeros(8, np.int8)),
     t("conv1.bias_quantized", np.zeros(8, np.int32)),
     t("conv2.weight", F2), t("fc.weight", FC), t("fc.bias", FCb)]),
    "net_qop.onnx")

# ---- MatMul float model, dynamic and weight-only candidates ----
WM = f32(rng.normal(0, 0.4, (16, 8)))
BM = f32(rng.normal(0, 0.1, (8,)))
save(model([helper.make_node("MatMul", ["x", "W"], ["m"], name="mm"),
            helper.make_node("Add", ["m", "bias"], ["y"], name="add")],
           [vinfo("x", ["batch", 16])], [vinfo("y", ["batch", 8])],
           [t("W", WM), t("bias", BM)]), "mm_float.onnx")

# ORT dynamic: uint8 weights, asymmetric per tensor.
lo, hi = min(0.0, float(WM.min())), max(0.0, float(WM.max()))
DS = f32((hi - lo) / 255)
DZ = np.uint8(np.clip(np.rint(-lo / DS), 0, 255))
DQ = np.clip(np.rint(WM / DS) + DZ, 0, 255).astype(np.uint8)
measure("dynamic mm", WM, DQ, DS, np.float32(DZ), 0, 255)
save(model([
    helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"],
                     name="x_QuantizeLinear"),
    helper.make_node("MatMulInteger", ["xq", "W_quantized", "xz",
                                       "W_zero_point"], ["mi"],
                     name="mm_quant"),
    helper.make_node("Cast", ["mi"], ["mf"], name="cast", to=TensorProto.FLOAT),
    helper.make_node("Mul", ["xs", "W_scale"], ["sc"], name="scale_mul"),
    helper.make_node("Mul", ["mf", "sc"], ["m"], name="out_mul"),
    helper.make_node("Add", ["m", "bias"], ["y"], name="add")],
    [vinfo("x", ["batch", 16])], [vinfo("y", ["batch", 8])],
    [t("W_quantized", DQ), t("W_scale", DS), t("W_zero_point", DZ),
     t("bias", BM)]), "mm_dynamic.onnx")

# Weight-only: int8 per column through DequantizeLinear's default axis 1.
WQ, WS, WSb = quant_sym(WM, 1)
measure("weight-only mm", WM, WQ, WSb, np.float32(0), -128, 127)
save(model([
    helper.make_node("DequantizeLinear", ["Wq8", "Ws8"], ["Wd"],
                     name="W_DequantizeLinear"),
    helper.make_node("MatMul", ["x", "Wd"], ["m"], name="mm"),
    helper.make_node("Add", ["m", "bias"], ["y"], name="add")],
    [vinfo("x", ["batch", 16])], [vinfo("y", ["batch", 8])],
    [t("Wq8", WQ), t("Ws8", WS), t("bias", BM)]), "mm_weightonly.onnx")

# ---- a Conv weight that disagrees with its input: 5 channels vs 3 ----
bad = model([helper.make_node("Conv", ["x", "wbad"], ["y"], name="convbad")],
            [vinfo("x", [1, 3, 8, 8])], [vinfo("y", [1, 4, 6, 6])],
            [t("wbad", f32(np.ones((4, 5, 3, 3))))])
onnx.save(bad, os.path.join(OUT, "bad_shape.onnx"))

# ---- fake-quantized weights (TensorRT / pytorch-quantization style) ----
# net_qdq.onnx with conv1's and fc's weights kept float and quantized in
# the graph by a QuantizeLinear of the same scale: the integers, hence
# every weight number, must equal net_qdq.onnx's.
fq = onnx.load(os.path.join(OUT, "net_qdq.onnx"))
keep = [i for i in fq.graph.initializer
        if i.name not in ("conv1.weight_quantized", "fc.weight_quantized")]
del fq.graph.initializer[:]
fq.graph.initializer.extend(keep + [t("conv1.weight_folded", F1f),
                                    t("fc.weight", FC)])
fq.graph.node.insert(0, helper.make_node(
    "QuantizeLinear", ["conv1.weight_folded", "conv1.weight_scale",
                       "conv1.weight_zero_point"], ["conv1.weight_quantized"],
    name="conv1.weight_QuantizeLinear", axis=0))
fq.graph.node.insert(1, helper.make_node(
    "QuantizeLinear", ["fc.weight", "fc.weight_scale", "fc.weight_zero_point"],
    ["fc.weight_quantized"], name="fc.weight_QuantizeLinear"))
save(fq, "net_fakeq.onnx")

# ---- CLE chain: conv k1 -> Relu -> conv k2 -> Relu -> conv k3 ----
# Two sets, k1 -> k2 then k2 -> k3: the second sees k2 as the first left
# it (AIMET applies sets in order). Literal weights; rows of k2 far apart.
K1 = f32([[2, -1], [0.5, 0.25], [1, 1]]).reshape(3, 2, 1, 1)
K2 = f32([[1, -2, 0.5], [8, 4, -2], [0.25, 0.5, 1]]).reshape(3, 3, 1, 1)
K3 = f32([[1, 0.5, -4], [2, -1, 0.25]]).reshape(2, 3, 1, 1)
save(model([helper.make_node("Conv", ["x", "k1"], ["a"], name="k1"),
            helper.make_node("Relu", ["a"], ["b"], name="ra"),
            helper.make_node("Conv", ["b", "k2"], ["c"], name="k2"),
            helper.make_node("Relu", ["c"], ["d"], name="rb"),
            helper.make_node("Conv", ["d", "k3"], ["y"], name="k3")],
           [vinfo("x", [1, 2, 4, 4])], [vinfo("y", [1, 2, 4, 4])],
           [t("k1", K1), t("k2", K2), t("k3", K3)]), "cle_chain.onnx")

print("\n".join(expected))
