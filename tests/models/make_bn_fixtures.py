#!/usr/bin/python3
"""Small float graphs for tests/ort_bn.sh: the ops whose last bits depend on
how ONNX Runtime orders its arithmetic, written as exporters write them.

    /usr/bin/python3 tests/models/make_bn_fixtures.py OUT_DIR

Each OUT_DIR/NAME.onnx has one graph input x, float [2, 64, 5, 7]:

  bn        BatchNormalization on 64 channels with spread statistics
            (variances from 1e-4 to 1e3), after Conv and after a QAT
            export's per-channel Div (Conv -> Div -> BatchNormalization)
  decomp    activations written as elementwise chains: HardSwish as
            x * Clip(x + 3, 0, 6) / 6 and with Mul by 1/6, HardSigmoid as
            Clip(x / 6 + 0.5), Swish x * Sigmoid(x), the erf GELU
            0.5 x (1 + Erf(x / sqrt 2)), the tanh GELU
            0.5 x (1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3))), Gelu-20 in
            both forms, Tanh, Softsign, Sign and Exp
  reduce    ReduceMean and ReduceSum over every shape of axes ONNX Runtime
            treats apart: trailing (KR), leading (RK, short and long),
            middle with one and two outer rows (KRK), outer and inner
            (RKR), not contiguous, and all
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = [2, 64, 5, 7]
RNG = np.random.default_rng(3)


def const(name, a, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(a, dtype=dtype), name)


def save(path, nodes, inits, opset=20):
    g = helper.make_graph(
        nodes, os.path.basename(path)[:-5],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info(nodes[-1].output[0],
                                       TensorProto.FLOAT, None)],
        inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8  # the newest Debian's python3-onnx knows
    onnx.save(m, path)


def bn_stats(c, prefix):
    return [const(prefix + "_scale", RNG.uniform(0.2, 3.0, c)),
            const(prefix + "_bias", RNG.normal(0, 1, c)),
            const(prefix + "_mean", RNG.normal(0, 2, c)),
            const(prefix + "_var", 10.0 ** RNG.uniform(-4, 3, c))]


def bn(out):
    c = SHAPE[1]
    w = const("w", RNG.normal(0, 0.2, (c, c, 3, 3)))
    inits = [w, const("div", RNG.uniform(0.5, 2.0, (1, c, 1, 1)))]
    inits += bn_stats(c, "b0") + bn_stats(c, "b1")
    nodes = [
        helper.make_node("BatchNormalization",
                         ["x", "b0_scale", "b0_bias", "b0_mean", "b0_var"],
                         ["bn0"], epsilon=1e-5),
        helper.make_node("Conv", ["bn0", "w"], ["conv"], pads=[1, 1, 1, 1]),
        helper.make_node("Div", ["conv", "div"], ["qat_div"]),
        helper.make_node("BatchNormalization",
                         ["qat_div", "b1_scale", "b1_bias", "b1_mean",
                          "b1_var"], ["bn1"], epsilon=1e-3),
    ]
    save(os.path.join(out, "bn.onnx"), nodes, inits)


def decomp(out):
    n = helper.make_node
    inits = [const("k4", 4.0), const("three", 3.0), const("zero", 0.0),
             const("six", 6.0), const("one", 1.0), const("half", 0.5),
             const("sixth", 1.0 / 6.0), const("rsqrt2", 2 ** -0.5),
             const("sqrt2", 2 ** 0.5), const("c3", 0.044715),
             const("s2pi", (2 / np.pi) ** 0.5)]
    nodes = [
        n("Mul", ["x", "k4"], ["v"]),
        # HardSwish, Paddle2ONNX's form and the Mul-by-1/6 form
        n("Add", ["v", "three"], ["hs_add"]),
        n("Clip", ["hs_add", "zero", "six"], ["hs_clip"]),
        n("Mul", ["v", "hs_clip"], ["hs_mul"]),
        n("Div", ["hs_mul", "six"], ["hs_div"]),
        n("Mul", ["hs_mul", "sixth"], ["hs_mul6"]),
        # HardSigmoid as Clip(x / 6 + 0.5, 0, 1)
        n("Div", ["v", "six"], ["hsig_div"]),
        n("Add", ["hsig_div", "half"], ["hsig_add"]),
        n("Clip", ["hsig_add", "zero", "one"], ["hsig"]),
        # Swish
        n("Sigmoid", ["v"], ["sig"]),
        n("Mul", ["v", "sig"], ["swish"]),
        # erf GELU as torch exports it
        n("Div", ["v", "sqrt2"], ["ge_div"]),
        n("Erf", ["ge_div"], ["ge_erf"]),
        n("Add", ["ge_erf", "one"], ["ge_add"]),
        n("Mul", ["v", "ge_add"], ["ge_mul"]),
        n("Mul", ["ge_mul", "half"], ["gelu_erf"]),
        n("Mul", ["v", "rsqrt2"], ["ge_mul2"]),
        # tanh GELU decomposed
        n("Mul", ["v", "v"], ["gt_sq"]),
        n("Mul", ["gt_sq", "v"], ["gt_cube"]),
        n("Mul", ["gt_cube", "c3"], ["gt_c"]),
        n("Add", ["v", "gt_c"], ["gt_in"]),
        n("Mul", ["gt_in", "s2pi"], ["gt_s"]),
        n("Tanh", ["gt_s"], ["gt_tanh"]),
        n("Add", ["gt_tanh", "one"], ["gt_add"]),
        n("Mul", ["v", "gt_add"], ["gt_mul"]),
        n("Mul", ["gt_mul", "half"], ["gelu_tanh"]),
        # the ONNX ops themselves
        n("Gelu", ["v"], ["gelu20"]),
        n("Gelu", ["v"], ["gelu20_tanh"], approximate="tanh"),
        n("Tanh", ["v"], ["tanh"]),
        n("Softsign", ["v"], ["softsign"]),
        n("Sign", ["v"], ["sign"]),
        n("Exp", ["v"], ["exp"]),
        n("HardSwish", ["v"], ["hardswish"]),
        n("HardSigmoid", ["v"], ["hardsigmoid"], alpha=1 / 6.0, beta=0.5),
        n("Sum", ["hs_div", "hsig", "swish", "gelu_erf", "gelu_tanh",
                  "gelu20", "gelu20_tanh", "softsign", "hardswish"],
          ["y"]),
    ]
    save(os.path.join(out, "decomp.onnx"), nodes, inits)


def reduce(out):
    # (reshape to, axes): the cases reduction_ops.cc tells apart
    cases = [
        (SHAPE, [2, 3]),         # KR
        ([280, 16], [0]),        # RK, long: the fast path
        ([35, 128], [0]),        # RK, short: the generic loop
        ([2, 64, 35], [1]),      # KRK, two outer rows: a GEMM by ones
        ([1, 64, 70], [1]),      # KRK, one outer row: the generic loop
        ([2, 64, 35], [0, 2]),   # RKR
        (SHAPE, [1, 3]),         # not contiguous
        (SHAPE, None),           # all axes (kept as [1, 1, 1, 1])
    ]
    nodes, inits, last = [], [], []
    for i, (shape, axes) in enumerate(cases):
        inits.append(const(f"shape{i}", shape, np.int64))
        nodes.append(helper.make_node("Reshape", ["x", f"shape{i}"],
                                      [f"r{i}"]))
        for op in ("ReduceMean", "ReduceSum"):
            ins = [f"r{i}"]
            if axes is not None:  # an input from opset 18 for both
                inits.append(const(f"{op}_axes{i}", axes, np.int64))
                ins.append(f"{op}_axes{i}")
            nodes.append(helper.make_node(op, ins, [f"{op}{i}"],
                                          keepdims=int(axes is None)))
            if axes is None:
                last.append(f"{op}{i}")
    nodes.append(helper.make_node("Concat", last, ["y"], axis=0))
    save(os.path.join(out, "reduce.onnx"), nodes, inits)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    bn(out)
    decomp(out)
    reduce(out)


if __name__ == "__main__":
    main()
