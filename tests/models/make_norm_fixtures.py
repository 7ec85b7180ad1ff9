#!/usr/bin/python3
"""One-node layer norm models for tests/ort_norm.sh, each with its input.

    /usr/bin/python3 tests/models/make_norm_fixtures.py OUT_DIR

ONNX Runtime sums a layer norm's statistics in an order that depends on
the op and on the row length (src/kernels/norm.c), so every op is made
for row lengths on both sides of its thresholds (8 and 16) and with every
tail of 4-value steps and 8-value steps: 1, 4, 7, 8, 12, 15, 16, 17, 23,
64, 256, 2048 and 2049. Each OUT_DIR/NAME/ holds model.onnx and
in/<input>.npy:

  ln_H        LayerNormalization (opset 17), scale and bias, outputs Y,
              Mean and InvStdDev; epsilon 1e-5
  lnnob_H     the same without bias, epsilon 1e-6
  ln3d_H      LayerNormalization over the last two dims (axis -2) of
              [2, 5, 3, H]
  lnbc_H      the same with scale [H] and bias [3, 1], broadcast over the
              normalized dims (ONNX Runtime then computes in double)
  lnc1_H      LayerNormalization with scale [1, H] and bias [1, 1, H]
              (dims of 1 before the axis)
  sln_H       SimplifiedLayerNormalization (ONNX Runtime's, in the ONNX
              domain), outputs Y and inv_std_var
  skln_H      com.microsoft SkipLayerNormalization with beta and bias,
              every output (output, mean, inv_std_var, the sum)
  sklnnb_H    the same with gamma only and skip [S, H] shared by the
              batch, epsilon left at its default (1e-12)
  sksln_H     com.microsoft SkipSimplifiedLayerNormalization, outputs
              output, inv_std_var and the sum (ONNX Runtime leaves its
              mean output unwritten, so it is not asked for)
  skslnb_H    the same with bias

The inputs' rows spread over scales (1e-4 to 1e4 and beyond), offsets
(means far larger than the spread, where the mean's rounding decides the
deviations), constant rows, and rows whose large values cancel in pairs
(so far apart that a mean summed in double in one order differs from
one summed in another).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN = (1, 4, 7, 8, 12, 15, 16, 17, 23, 64, 256, 2048, 2049)
RNG = np.random.default_rng(11)


def rows(n, h):
    """n rows of h values, of many kinds (see the module's comment)."""
    x = RNG.standard_normal((n, h)) * np.exp(RNG.normal(0, 3, (n, 1)))
    x += RNG.normal(0, 1, (n, 1)) * np.exp(RNG.normal(0, 3, (n, 1)))
    x[0] = 0.0
    x[1] = 3.25
    for i in range(2, n, 4):  # cancelling pairs, 2^50 to 2^70 apart
        k = RNG.integers(0, h // 2 + 1)
        if k == 0:
            continue
        x[i] = RNG.standard_normal(h) * 2.0 ** RNG.uniform(-30, 0)
        pos = RNG.permutation(h)[:2 * k]
        big = RNG.choice([-1, 1], k) * 2.0 ** RNG.uniform(20, 40, k)
        x[i, pos[:k]] = big
        x[i, pos[k:]] = -big * RNG.choice([1.0, 1.0, 0.999], k)
    return x.astype(np.float32)


def vec(name, h, lo, hi):
    return numpy_helper.from_array(
        RNG.uniform(lo, hi, h).astype(np.float32), name)


def save(out, name, node, inputs, outputs, inits):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    g = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(a.shape))
         for n, a in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
         for n in outputs if n],
        inits)
    m = helper.make_model(g, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8  # the newest Debian's python3-onnx knows
    onnx.save(m, os.path.join(d, "model.onnx"))
    for n, a in inputs:
        np.save(os.path.join(d, "in", n + ".npy"), a)


def main():
    out = sys.argv[1]
    for h in HIDDEN:
        x = rows(24, h).reshape(2, 12, h)
        g, b = vec("g", h, -0.5, 1.5), vec("b", h, -1, 1)
        bias = vec("bias", h, -2, 2)
        save(out, "ln_%d" % h, helper.make_node(
            "LayerNormalization", ["x", "g", "b"], ["y", "mean", "inv"],
            axis=-1, epsilon=1e-5), [("x", x)], ["y", "mean", "inv"], [g, b])
        save(out, "lnnob_%d" % h, helper.make_node(
            "LayerNormalization", ["x", "g"], ["y", "mean", "inv"],
            axis=-1, epsilon=1e-6), [("x", x)], ["y", "mean", "inv"], [g])
        g3 = numpy_helper.from_array(
            RNG.uniform(-0.5, 1.5, (3, h)).astype(np.float32), "g")
        b3 = numpy_helper.from_array(
            RNG.uniform(-1, 1, (3, h)).astype(np.float32), "b")
        save(out, "ln3d_%d" % h, helper.make_node(
            "LayerNormalization", ["x", "g", "b"], ["y", "mean", "inv"],
            axis=-2, epsilon=1e-5), [("x", rows(30, h).reshape(2, 5, 3, h))],
            ["y", "mean", "inv"], [g3, b3])
        save(out, "lnbc_%d" % h, helper.make_node(
            "LayerNormalization", ["x", "g", "b"], ["y", "mean", "inv"],
            axis=-2, epsilon=1e-5), [("x", rows(30, h).reshape(2, 5, 3, h))],
            ["y", "mean", "inv"],
            [g, numpy_helper.from_array(
                RNG.uniform(-1, 1, (3, 1)).astype(np.float32), "b")])
        save(out, "lnc1_%d" % h, helper.make_node(
            "LayerNormalization", ["x", "g", "b"], ["y", "mean", "inv"],
            axis=-1, epsilon=1e-5), [("x", x)], ["y", "mean", "inv"],
            [numpy_helper.from_array(
                RNG.uniform(-0.5, 1.5, (1, h)).astype(np.float32), "g"),
             numpy_helper.from_array(
                 RNG.uniform(-1, 1, (1, 1, h)).astype(np.float32), "b")])
        save(out, "sln_%d" % h, helper.make_node(
            "SimplifiedLayerNormalization", ["x", "g"], ["y", "inv"],
            axis=-1, epsilon=1e-5), [("x", x)], ["y", "inv"], [g])
        skip = rows(24, h).reshape(2, 12, h)
        save(out, "skln_%d" % h, helper.make_node(
            "SkipLayerNormalization", ["x", "skip", "g", "b", "bias"],
            ["y", "mean", "inv", "sum"], domain="com.microsoft",
            epsilon=1e-5), [("x", x), ("skip", skip)],
            ["y", "mean", "inv", "sum"], [g, b, bias])
        save(out, "sklnnb_%d" % h, helper.make_node(
            "SkipLayerNormalization", ["x", "skip", "g"],
            ["y", "mean", "inv", "sum"], domain="com.microsoft"),
            [("x", x), ("skip", skip[0])], ["y", "mean", "inv", "sum"], [g])
        save(out, "sksln_%d" % h, helper.make_node(
            "SkipSimplifiedLayerNormalization", ["x", "skip", "g"],
            ["y", "", "inv", "sum"], domain="com.microsoft", epsilon=1e-5),
            [("x", x), ("skip", skip)], ["y", "", "inv", "sum"], [g])
        save(out, "skslnb_%d" % h, helper.make_node(
            "SkipSimplifiedLayerNormalization", ["x", "skip", "g", "bias"],
            ["y", "", "inv", "sum"], domain="com.microsoft", epsilon=1e-6),
            [("x", x), ("skip", skip)], ["y", "", "inv", "sum"], [g, bias])


if __name__ == "__main__":
    main()
