#!/usr/bin/python3
"""Make the fixtures of tests/data/hazards/ for tests/test_hazards.c.

Run with Debian's python3-onnx and python3-numpy:

    /usr/bin/python3 tests/data/make_hazard_fixtures.py

Everything is deterministic (fixed seeds). Activation scales are
calibrated with numpy on 256 samples of N(0, 1), the distribution of
qreport's random data, so the candidates fit the data the test runs.

  dead.onnx         x [1,2,4,4] -> Conv(W [4,2,1,1]) -> y. Channel ranges
                    2, 2e-30, 4 and 0: channels 1 and 3 are dead, the
                    live relative ranges are 1 and 2.
  float.onnx        x [1,4,8,8] -> c1 (Conv 4->8) -> r1 (Relu) -> ca, cb
                    (Conv 8->8 each, their weights with one channel 50x
                    the others) -> cat (Concat) -> cl (Conv 16->4) -> y;
                    cm (Conv 8->8 of r1, balanced weights, an output);
                    add = ca + cb -> sm (Softmax, output); hs_add, hs_clip,
                    hs_mul, hs_div: a HardSwish of add written out
                    (add * clip(add + 3, 0, 6) / 6, output t4).
  clean_qdq.onnx    its QDQ form with no hazard: the first and last convs,
                    the Softmax and the HardSwish's Mul and Div left in
                    float; r1, ca, cb, add and the HardSwish's Add and
                    Clip (a chain of two) in uint8 (asymmetric,
                    calibrated); ca's and cb's weights int8 per channel,
                    cm's per tensor (per channel would gain under 6 dB).
  first_last.onnx   clean, plus x, cat, and the first and last weights
                    quantized: the first and last compute layers run
                    quantized.
  per_tensor.onnx   clean with both middle weights per tensor: their big
                    channel makes per-channel scales some 20 dB better.
  sensitive.onnx    clean with the Softmax output quantized to uint8.
  chain.onnx        clean with hs_mul requantized too: hs_add, hs_clip
                    and hs_mul make a chain of three (add, which they
                    read, has other readers: not part of it).
  half_range.onnx   clean with r1 (a Relu output) in int8 with zero point
                    0: half its codes are for negative values.
  saturation.onnx   clean with r1's scale a fifth of what it needs.
  wide_scale.onnx   clean with r1's scale 8x what it needs.
  bad_scale.onnx    clean with ca's weight scale 0 in channel 0 and
                    1e-41 (denormal) in channel 1.
  bad_zp.onnx       clean with ca's weight per tensor, its zero point a
                    uint8 200 for int8 values.
  skew_float.onnx   float.onnx with cb's weight divided by 40: ca and cb
                    ranges 40x apart at the Concat and the Add.
  skew_apart.onnx   its QDQ form, ca and cb each with its own scale: the
                    Concat's and the Add's input scales are 40x apart.
  skew_shared.onnx  the same with one scale for ca and cb: shared, and
                    their ranges 40x apart.
  qop_float.onnx    x1, x2 [1,4,4,4] -> add (Add), cat (Concat).
  qop.onnx          its QOperator form: com.microsoft QLinearAdd and
                    QLinearConcat reading x1 and x2 quantized with scales
                    32x apart.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hazards")


def f32(a):
    return np.asarray(a, dtype=np.float32)


def save(m, name):
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name))


def model(nodes, inputs, outputs, inits, ms=False):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    ops = [helper.make_opsetid("", 13)]
    if ms:
        ops.append(helper.make_opsetid("com.microsoft", 1))
    m = helper.make_model(g, opset_imports=ops,
                          producer_name="qreport-fixtures",
                          producer_version="1")
    m.ir_version = 7
    return m


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


# ---- dead channels ----

def make_dead():
    w = f32([[1, -1], [1e-30, -1e-30], [2, -2], [0, 0]]).reshape(4, 2, 1, 1)
    nodes = [helper.make_node("Conv", ["x", "W"], ["y"], name="conv")]
    save(model(nodes, [vi("x", [1, 2, 4, 4])], [vi("y", [1, 4, 4, 4])],
               [init("W", w)]), "dead.onnx")


# ---- the main float model ----

rng = np.random.default_rng(20250301)
W1 = f32(rng.normal(0, 0.5, (8, 4, 1, 1)))
WA = f32(rng.normal(0, 0.3, (8, 8, 1, 1)))
WB = f32(rng.normal(0, 0.3, (8, 8, 1, 1)))
WL = f32(rng.normal(0, 0.3, (4, 16, 1, 1)))
WM = f32(rng.normal(0, 0.3, (8, 8, 1, 1)))
WA[0] *= 50
WB[0] *= 50
CONSTS = {"three": f32(3), "zero": f32(0), "six": f32(6)}

# (name, op, inputs, output, attributes); tensors are "<name>_out"
NODES = [
    ("c1", "Conv", ["x", "W1"], {}),
    ("r1", "Relu", ["c1_out"], {}),
    ("ca", "Conv", ["r1_out", "WA"], {}),
    ("cb", "Conv", ["r1_out", "WB"], {}),
    ("cm", "Conv", ["r1_out", "WM"], {}),
    ("cat", "Concat", ["ca_out", "cb_out"], {"axis": 1}),
    ("cl", "Conv", ["cat_out", "WL"], {}),
    ("add", "Add", ["ca_out", "cb_out"], {}),
    ("sm", "Softmax", ["add_out"], {"axis": 1}),
    ("hs_add", "Add", ["add_out", "three"], {}),
    ("hs_clip", "Clip", ["hs_add_out", "zero", "six"], {}),
    ("hs_mul", "Mul", ["add_out", "hs_clip_out"], {}),
    ("hs_div", "Div", ["hs_mul_out", "six"], {}),
]
OUTPUTS = [("cl_out", [1, 4, 8, 8]), ("cm_out", [1, 8, 8, 8]),
           ("sm_out", [1, 8, 8, 8]),
           ("hs_div_out", [1, 8, 8, 8])]


def weights(skew):
    return {"W1": W1, "WA": WA, "WB": WB / 40 if skew else WB, "WL": WL,
            "WM": WM}


def forward(x, w):
    """Every tensor of the float model for input batch x [N,4,8,8]."""
    def conv(v, k):
        return np.einsum("nchw,oc->nohw", v, k[:, :, 0, 0])
    t = {"x": x}
    t["c1_out"] = conv(x, w["W1"])
    t["r1_out"] = np.maximum(t["c1_out"], 0)
    t["ca_out"] = conv(t["r1_out"], w["WA"])
    t["cb_out"] = conv(t["r1_out"], w["WB"])
    t["cm_out"] = conv(t["r1_out"], w["WM"])
    t["cat_out"] = np.concatenate([t["ca_out"], t["cb_out"]], axis=1)
    t["cl_out"] = conv(t["cat_out"], w["WL"])
    t["add_out"] = t["ca_out"] + t["cb_out"]
    e = np.exp(t["add_out"] - t["add_out"].max(axis=1, keepdims=True))
    t["sm_out"] = e / e.sum(axis=1, keepdims=True)
    t["hs_add_out"] = t["add_out"] + 3
    t["hs_clip_out"] = np.clip(t["hs_add_out"], 0, 6)
    t["hs_mul_out"] = t["add_out"] * t["hs_clip_out"]
    t["hs_div_out"] = t["hs_mul_out"] / 6
    return t


def float_model(skew):
    w = weights(skew)
    nodes = [helper.make_node(op, ins, [n + "_out"], name=n, **attrs)
             for n, op, ins, attrs in NODES]
    inits = [init(k, v) for k, v in w.items()]
    inits += [init(k, v) for k, v in CONSTS.items()]
    return model(nodes, [vi("x", [1, 4, 8, 8])],
                 [vi(n, s) for n, s in OUTPUTS], inits)


def u8(lo, hi):
    """ONNX Runtime's asymmetric uint8 MinMax: the range with 0 in it."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    s = (hi - lo) / 255
    return (np.float32(s), np.uint8(round(-lo / s)))


def s8sym(lo, hi):
    """Symmetric int8, zero point 0."""
    return (np.float32(max(abs(lo), abs(hi)) / 127), np.int8(0))


def calibrate(skew):
    x = f32(np.random.default_rng(99).normal(0, 1, (256, 4, 8, 8)))
    t = forward(x, weights(skew))
    return {k: (float(v.min()), float(v.max())) for k, v in t.items()}


def qweight(w, per_channel=True, scale_fix=None, zp=None):
    """Symmetric int8 weight codes and scale (per output channel or per
    tensor); scale_fix edits the scales after the codes are made."""
    if per_channel:
        amax = np.abs(w).reshape(w.shape[0], -1).max(axis=1)
        s = f32(amax / 127)
        q = np.round(w / s.reshape(-1, 1, 1, 1))
    else:
        s = f32(np.abs(w).max() / 127)
        q = np.round(w / s)
    q = np.clip(q, -127, 127).astype(np.int8)
    if scale_fix is not None:
        s = scale_fix(s.copy())
    z = zp if zp is not None else (np.zeros(s.shape, np.int8)
                                   if s.ndim else np.int8(0))
    return q, s, z


def qdq_model(skew, acts, wts):
    """The float model with QuantizeLinear/DequantizeLinear as ONNX
    Runtime writes them: a quantized tensor X becomes X ->
    X_QuantizeLinear_Output -> X_DequantizeLinear_Output, read by every
    consumer (a graph output keeps its name on the DequantizeLinear's
    output and the producer's becomes X_QuantizeLinear_Input); a
    quantized weight W becomes W_quantized -> W_DequantizeLinear_Output.
    acts: tensor -> (scale, zero point); wts: weight -> qweight()."""
    w = weights(skew)
    outs = {n for n, _ in OUTPUTS}
    nodes, inits = [], []
    read = {}
    for k, v in w.items():
        if k in wts:
            q, s, z = wts[k]
            inits += [init(k + "_quantized", q), init(k + "_scale", s),
                      init(k + "_zero_point", z)]
            attrs = {"axis": 0} if np.ndim(s) else {}
            nodes.append(helper.make_node(
                "DequantizeLinear",
                [k + "_quantized", k + "_scale", k + "_zero_point"],
                [k + "_DequantizeLinear_Output"],
                name=k + "_DequantizeLinear", **attrs))
            read[k] = k + "_DequantizeLinear_Output"
        else:
            inits.append(init(k, v))
    inits += [init(k, v) for k, v in CONSTS.items()]

    def quantize(name):
        s, z = acts[name]
        src = name + "_QuantizeLinear_Input" if name in outs else name
        dq = name if name in outs else name + "_DequantizeLinear_Output"
        inits.extend([init(name + "_scale", f32(s)),
                      init(name + "_zero_point", z)])
        nodes.append(helper.make_node(
            "QuantizeLinear", [src, name + "_scale", name + "_zero_point"],
            [name + "_QuantizeLinear_Output"],
            name=name + "_QuantizeLinear"))
        nodes.append(helper.make_node(
            "DequantizeLinear",
            [name + "_QuantizeLinear_Output", name + "_scale",
             name + "_zero_point"], [dq], name=name + "_DequantizeLinear"))
        read[name] = dq
        return src

    if "x" in acts:
        quantize("x")
    for n, op, ins, attrs in NODES:
        out = n + "_out"
        dst = out + "_QuantizeLinear_Input" if (out in acts and
                                                 out in outs) else out
        nodes.append(helper.make_node(op, [read.get(i, i) for i in ins],
                                      [dst], name=n, **attrs))
        if out in acts:
            quantize(out)
    return model(nodes, [vi("x", [1, 4, 8, 8])],
                 [vi(n, s) for n, s in OUTPUTS], inits)


def make_main():
    save(float_model(False), "float.onnx")
    save(float_model(True), "skew_float.onnx")
    r = calibrate(False)
    acts = {k: u8(*r[k]) for k in ("r1_out", "ca_out", "cb_out", "add_out",
                                    "hs_add_out", "hs_clip_out")}
    wts = {"WA": qweight(WA), "WB": qweight(WB), "WM": qweight(WM, False)}

    def variant(name, acts_more=None, wts_more=None, skew=False):
        a = dict(acts)
        a.update(acts_more or {})
        ww = dict(wts)
        ww.update(wts_more or {})
        save(qdq_model(skew, a, ww), name)

    variant("clean_qdq.onnx")
    variant("first_last.onnx",
            {"x": u8(*r["x"]), "cat_out": u8(*r["cat_out"])},
            {"W1": qweight(W1), "WL": qweight(WL)})
    variant("per_tensor.onnx", None,
            {"WA": qweight(WA, False), "WB": qweight(WB, False)})
    variant("sensitive.onnx", {"sm_out": u8(*r["sm_out"])})
    variant("chain.onnx", {"hs_mul_out": u8(*r["hs_mul_out"])})
    variant("half_range.onnx", {"r1_out": s8sym(*r["r1_out"])})
    s, z = acts["r1_out"]
    variant("saturation.onnx", {"r1_out": (np.float32(s / 5), z)})
    variant("wide_scale.onnx", {"r1_out": (np.float32(s * 8), z)})

    def zero_denormal(sc):
        sc[0] = 0
        sc[1] = np.float32(1e-41)
        return sc
    variant("bad_scale.onnx", None,
            {"WA": qweight(WA, scale_fix=zero_denormal)})
    variant("bad_zp.onnx", None,
            {"WA": qweight(WA, False, zp=np.uint8(200))})

    r = calibrate(True)
    acts = {k: u8(*r[k]) for k in ("r1_out", "ca_out", "cb_out", "add_out",
                                    "hs_add_out", "hs_clip_out")}
    wts = {"WA": qweight(WA), "WB": qweight(WB / 40), "WM": qweight(WM, False)}
    variant("skew_apart.onnx", skew=True)
    lo = min(r["ca_out"][0], r["cb_out"][0])
    hi = max(r["ca_out"][1], r["cb_out"][1])
    variant("skew_shared.onnx", {"ca_out": u8(lo, hi), "cb_out": u8(lo, hi)},
            skew=True)
    amax = np.abs(WM).reshape(8, -1).max(axis=1)
    print("cm: per-channel absmax spread %.2fx" % (amax.max() / amax.min()))
    ra, rb = r["ca_out"][1] - r["ca_out"][0], r["cb_out"][1] - r["cb_out"][0]
    print("skew: ca range %.4g, cb range %.4g (%.1fx)" % (ra, rb, ra / rb))


# ---- QOperator ----

def make_qop():
    shape = [1, 4, 4, 4]
    nodes = [helper.make_node("Add", ["x1", "x2"], ["add"], name="add"),
             helper.make_node("Concat", ["x1", "x2"], ["cat"], name="cat",
                              axis=1)]
    save(model(nodes, [vi("x1", shape), vi("x2", shape)],
               [vi("add", shape), vi("cat", [1, 8, 4, 4])], []),
         "qop_float.onnx")
    s1, s2, so = f32(8 / 255), f32(8 / 255 * 32), f32(16 / 255)
    z = np.uint8(128)
    inits = [init("s1", s1), init("s2", s2), init("so", so),
             init("z", z)]
    ms = "com.microsoft"
    nodes = [
        helper.make_node("QuantizeLinear", ["x1", "s1", "z"],
                         ["x1_quantized"], name="x1_QuantizeLinear"),
        helper.make_node("QuantizeLinear", ["x2", "s2", "z"],
                         ["x2_quantized"], name="x2_QuantizeLinear"),
        helper.make_node("QLinearAdd", ["x1_quantized", "s1", "z",
                                        "x2_quantized", "s2", "z", "so",
                                        "z"],
                         ["add_quantized"], name="add_quant", domain=ms),
        helper.make_node("QLinearConcat", ["so", "z", "x1_quantized", "s1",
                                           "z", "x2_quantized", "s2", "z"],
                         ["cat_quantized"], name="cat_quant", domain=ms,
                         axis=1),
        helper.make_node("DequantizeLinear", ["add_quantized", "so", "z"],
                         ["add"], name="add_DequantizeLinear"),
        helper.make_node("DequantizeLinear", ["cat_quantized", "so", "z"],
                         ["cat"], name="cat_DequantizeLinear"),
    ]
    save(model(nodes, [vi("x1", shape), vi("x2", shape)],
               [vi("add", shape), vi("cat", [1, 8, 4, 4])], inits, ms=True),
         "qop.onnx")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    make_dead()
    make_main()
    make_qop()
