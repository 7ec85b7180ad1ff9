#!/usr/bin/python3
"""Make the fixtures of tests/data/diag/ for tests/test_diag.c:

  chain_float.onnx  x [4,32] -> 8 x (Gemm [32,32] + bias, He-initialised
                    -> Relu "r<i>") -> Gemm [32,8] "y": every layer alike
  chain_qdq.onnx    its QDQ form by samples/qdq_quantize.py, the graph
                    input left float (its Q/DQ pair taken out): every
                    layer makes about as much noise, none half of it
  chain_bad.onnx    chain_qdq.onnx with the scale of r4 (shared by its
                    QuantizeLinear and DequantizeLinear) 20 times too
                    large: r4 makes nearly all the noise. The first layer
                    reads the exact input and makes little: cumulative
                    SQNR falls most there (from exact to about 40 dB),
                    which is not where the error comes from
  chain_input.npy   40 rows [40,32] of N(0,1) for the chain: 10 samples
                    of 4 rows
  amp_float.onnx    x [4,16] -> Gemm [16,16] + 30 "l" (logits about 30,
                    spread about 1) -> Softmax "p" -> Gemm [16,8] "y": the
                    Softmax takes the common 30 away, not the logits'
                    quantization error, so their small relative error
                    becomes a large one
  amp_qdq.onnx      its QDQ form, the graph input left float
  amp_input.npy     24 rows [24,16] of N(0,1): 6 samples of 4 rows
  swap_float.onnx   x [4,32] -> two parallel Gemm [32,32] "ga", "gb"
                    -> Relu "ra", "rb" -> Add "s" -> Gemm [32,8] "y"
  swap_qdq.onnx     its QDQ form, the graph input left float
  swap_bad.onnx     swap_qdq.onnx with every name of the two branches
                    exchanged (ga... <-> gb..., ra... <-> rb...): the same
                    function, but matching by name pairs float ga with
                    the candidate's gb and so on, a wrong pairing that no
                    check of names or inputs can see
  swap_input.npy    24 rows [24,32] of N(0,1): 6 samples of 4 rows
  sq_float.onnx     x [1,6,5,5] -> Mul by per-channel gains (channel 2
                    x 40, channel 4 x 12: outlier channels) "h" ->
                    Conv [4,6,3,3] pad 1 "c"; h -> grouped Conv [6,3,3,3]
                    group 2 "d"; h -> Transpose [0,2,3,1] -> Reshape
                    [1,25,6] "r1" -> MatMul [6,5] "m"; h -> Transpose ->
                    Reshape [25,6] "r2" -> Gemm (B [5,6], transB) "g"
  sq_input.npy      3 samples [3,6,5,5] of N(0,1)
  sq_expected.json  per layer, computed here with numpy from the float
                    model's own values: the input's per-channel max |x|,
                    its kurtosis, the weight's per-input-channel range and
                    the predicted SQNR of the int8 product as it is, at
                    each alpha of 0, 0.1, ..., 1 and the best (the model
                    of src/analysis/outliers.c)

    /usr/bin/python3 tests/data/make_diag_fixtures.py
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "diag")
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                "samples"))
import qdq_quantize as qq  # noqa: E402


def save(m, name):
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name))


def model(nodes, name, inputs, outputs, inits):
    g = helper.make_graph(nodes, name, inputs, outputs,
                          [numpy_helper.from_array(v, k)
                           for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="qreport-fixtures",
                             producer_version="1")


def float_input(m, name):
    """Take the graph input's QuantizeLinear/DequantizeLinear pair out:
    its readers read the float input."""
    dq_out = name + "_DequantizeLinear_Output"
    keep = [n for n in m.graph.node
            if not (n.op_type in ("QuantizeLinear", "DequantizeLinear") and
                    n.input[0] in (name, name + "_QuantizeLinear_Output"))]
    for n in keep:
        for k, i in enumerate(n.input):
            if i == dq_out:
                n.input[k] = name
    del m.graph.node[:]
    m.graph.node.extend(keep)
    used = {i for n in keep for i in n.input}
    inits = [t for t in m.graph.initializer if t.name in used]
    del m.graph.initializer[:]
    m.graph.initializer.extend(inits)
    return m


def chain():
    rng = np.random.RandomState(5)
    nodes, inits, prev = [], {}, "x"
    for i in range(8):
        inits["W%d" % i] = rng.normal(0, np.sqrt(2 / 32), (32, 32)).astype(
            np.float32)
        inits["B%d" % i] = rng.normal(0, 0.05, (32,)).astype(np.float32)
        nodes.append(helper.make_node("Gemm", [prev, "W%d" % i, "B%d" % i],
                                      ["g%d" % i], name="gemm%d" % i))
        nodes.append(helper.make_node("Relu", ["g%d" % i], ["r%d" % i],
                                      name="relu%d" % i))
        prev = "r%d" % i
    inits["W8"] = rng.normal(0, np.sqrt(1 / 32), (32, 8)).astype(np.float32)
    inits["B8"] = np.zeros(8, np.float32)
    nodes.append(helper.make_node("Gemm", [prev, "W8", "B8"], ["y"],
                                  name="gemm8"))
    m = model(nodes, "chain",
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
              inits)
    save(m, "chain_float.onnx")
    data = rng.normal(0, 1, (40, 32)).astype(np.float32)
    np.save(os.path.join(OUT, "chain_input.npy"), data)
    calib = [data[i:i + 4] for i in range(0, 40, 4)]
    q = float_input(qq.quantize_qdq(m, calib), "x")
    save(q, "chain_qdq.onnx")
    for t in q.graph.initializer:
        if t.name == "r4_scale":
            v = numpy_helper.to_array(t) * np.float32(20)
            t.CopyFrom(numpy_helper.from_array(v.astype(np.float32),
                                               "r4_scale"))
            break
    else:
        raise SystemExit("no r4_scale in chain_qdq.onnx")
    save(q, "chain_bad.onnx")


def predicted(w, groups, amax, msq, s):
    """outliers.c's predicted SQNR of the int8 product: w [out, in/g,
    taps] float64, amax and msq per input channel, s the scales (None: as
    it is)."""
    out, ig, taps = w.shape
    og = out // groups
    s = np.ones(len(amax)) if s is None else s
    dx2 = (np.max(amax / s) / 127.0) ** 2 / 12.0
    sig = noise = 0.0
    for o in range(out):
        base = (o // og) * ig
        sj = s[base:base + ig][:, None]
        ws = w[o] * sj
        dw = np.max(np.abs(ws)) / 127.0
        e = ws - np.rint(ws * (1.0 / dw)) * dw if dw > 0 else np.zeros_like(ws)
        m = msq[base:base + ig]
        sig += np.sum(m * np.sum(w[o] ** 2, axis=1))
        noise += np.sum(dx2 * np.sum(ws ** 2, axis=1) +
                        m / s[base:base + ig] ** 2 * np.sum(e ** 2, axis=1))
    return 10 * np.log10(sig / noise)


def layer_expect(name, x, axis, w, groups):
    """x the layer's float input over every sample (float32), axis its
    input-channel axis, w [out, in/g, taps]."""
    xc = np.moveaxis(x.astype(np.float64), axis, -1).reshape(-1, x.shape[axis])
    amax = np.max(np.abs(xc), axis=0)
    msq = np.mean(xc ** 2, axis=0)
    w = w.astype(np.float64)
    out, ig, taps = w.shape
    og = out // groups
    wr = np.zeros(x.shape[axis])
    for o in range(out):
        base = (o // og) * ig
        wr[base:base + ig] = np.maximum(wr[base:base + ig],
                                        np.max(np.abs(w[o]), axis=1))
    v = xc.ravel()
    mu = v.mean()
    kurt = np.mean((v - mu) ** 4) / np.mean((v - mu) ** 2) ** 2
    by_alpha = []
    for k in range(11):
        al = k / 10.0
        s = np.where((amax > 0) & (wr > 0),
                     amax ** al / wr ** (1 - al), 1.0)
        by_alpha.append(predicted(w, groups, amax, msq, s))
    best = int(np.argmax(by_alpha))
    return {"layer": name, "channels": int(x.shape[axis]),
            "act_absmax": amax.tolist(), "w_range": wr.tolist(),
            "max_over_median": float(amax.max() / np.median(amax)),
            "top_channel": int(np.argmax(amax)), "kurtosis": float(kurt),
            "sqnr_db": float(predicted(w, groups, amax, msq, None)),
            "sqnr_by_alpha_db": [float(v) for v in by_alpha],
            "best_alpha": best / 10.0, "best_sqnr_db": float(by_alpha[best])}


def smooth():
    rng = np.random.RandomState(9)
    gain = np.array([1.0, 0.8, 40.0, 1.2, 12.0, 0.9], np.float32)
    wc = rng.normal(0, 0.3, (4, 6, 3, 3)).astype(np.float32)
    wd = rng.normal(0, 0.3, (6, 3, 3, 3)).astype(np.float32)
    wm = rng.normal(0, 0.3, (6, 5)).astype(np.float32)
    wg = rng.normal(0, 0.3, (5, 6)).astype(np.float32)
    wc[1, 4] *= 8  # a weight channel wider than the rest
    inits = {"gain": gain.reshape(1, 6, 1, 1), "Wc": wc, "Wd": wd, "Wm": wm,
             "Wg": wg, "s1": np.array([1, 25, 6], np.int64),
             "s2": np.array([25, 6], np.int64)}
    nodes = [
        helper.make_node("Mul", ["x", "gain"], ["h"], name="mul"),
        helper.make_node("Conv", ["h", "Wc"], ["c"], name="conv",
                         pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["h", "Wd"], ["d"], name="gconv",
                         pads=[1, 1, 1, 1], group=2),
        helper.make_node("Transpose", ["h"], ["t"], name="tr",
                         perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["t", "s1"], ["r1"], name="rs1"),
        helper.make_node("MatMul", ["r1", "Wm"], ["m"], name="matmul"),
        helper.make_node("Reshape", ["t", "s2"], ["r2"], name="rs2"),
        helper.make_node("Gemm", ["r2", "Wg"], ["g"], name="gemm",
                         transB=1),
    ]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, d)
            for n, d in (("c", [1, 4, 5, 5]), ("d", [1, 6, 5, 5]),
                         ("m", [1, 25, 5]), ("g", [25, 5]))]
    m = model(nodes, "smooth",
              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                             [1, 6, 5, 5])], outs, inits)
    save(m, "sq_float.onnx")
    x = rng.normal(0, 1, (3, 6, 5, 5)).astype(np.float32)
    np.save(os.path.join(OUT, "sq_input.npy"), x)
    h = x * inits["gain"]                       # float32, as the model
    t = np.transpose(h, (0, 2, 3, 1))           # [3,5,5,6]
    exp = [layer_expect("conv", h, 1, wc.reshape(4, 6, 9), 1),
           layer_expect("gconv", h, 1, wd.reshape(6, 3, 9), 2),
           layer_expect("matmul", t.reshape(3, 25, 6), 2,
                        wm.T.reshape(5, 6, 1), 1),
           layer_expect("gemm", t.reshape(75, 6), 1,
                        wg.reshape(5, 6, 1), 1)]
    with open(os.path.join(OUT, "sq_expected.json"), "w") as f:
        json.dump(exp, f, indent=1)
        f.write("\n")


def amplifier():
    rng = np.random.RandomState(3)
    inits = {"W0": rng.normal(0, 0.3, (16, 16)).astype(np.float32),
             "B0": np.full(16, 30.0, np.float32),
             "W1": rng.normal(0, 0.3, (16, 8)).astype(np.float32),
             "B1": np.zeros(8, np.float32)}
    nodes = [helper.make_node("Gemm", ["x", "W0", "B0"], ["l"],
                              name="logits"),
             helper.make_node("Softmax", ["l"], ["p"], name="softmax",
                              axis=1),
             helper.make_node("Gemm", ["p", "W1", "B1"], ["y"],
                              name="head")]
    m = model(nodes, "amp",
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
              inits)
    save(m, "amp_float.onnx")
    calib = [rng.normal(0, 1, (4, 16)).astype(np.float32) for _ in range(5)]
    np.save(os.path.join(OUT, "amp_input.npy"),
            rng.normal(0, 1, (24, 16)).astype(np.float32))
    save(float_input(qq.quantize_qdq(m, calib), "x"), "amp_qdq.onnx")


def swap():
    rng = np.random.RandomState(11)
    inits, nodes = {}, []
    for b in "ab":
        inits["W" + b] = rng.normal(0, np.sqrt(2 / 32), (32, 32)).astype(
            np.float32)
        inits["B" + b] = rng.normal(0, 0.05, (32,)).astype(np.float32)
        nodes += [helper.make_node("Gemm", ["x", "W" + b, "B" + b],
                                   ["g" + b], name="gemm_" + b),
                  helper.make_node("Relu", ["g" + b], ["r" + b],
                                   name="relu_" + b)]
    inits["Wy"] = rng.normal(0, np.sqrt(1 / 32), (32, 8)).astype(np.float32)
    inits["By"] = np.zeros(8, np.float32)
    nodes += [helper.make_node("Add", ["ra", "rb"], ["s"], name="add"),
              helper.make_node("Gemm", ["s", "Wy", "By"], ["y"], name="head")]
    m = model(nodes, "swap",
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
              inits)
    save(m, "swap_float.onnx")
    data = rng.normal(0, 1, (24, 32)).astype(np.float32)
    np.save(os.path.join(OUT, "swap_input.npy"), data)
    q = float_input(qq.quantize_qdq(m, [data[i:i + 4]
                                        for i in range(0, 24, 4)]), "x")
    save(q, "swap_qdq.onnx")

    def other(name):
        for a, b in (("ga", "gb"), ("gb", "ga"), ("ra", "rb"), ("rb", "ra")):
            if name.startswith(a):
                return b + name[2:]
        return name
    for n in q.graph.node:
        n.input[:] = [other(i) for i in n.input]
        n.output[:] = [other(o) for o in n.output]
    for t in q.graph.initializer:
        t.name = other(t.name)
    save(q, "swap_bad.onnx")


os.makedirs(OUT, exist_ok=True)
chain()
smooth()
amplifier()
swap()
