#!/usr/bin/python3
"""One-node Elu, Selu, Celu, Softplus, Log, Sin and Cos models for
tests/ort_unary.sh, each with its input.

    /usr/bin/python3 tests/models/make_unary_fixtures.py OUT_DIR

ONNX Runtime computes these ops with Eigen's polynomials on packets of 4
values and with the C library on the last n % 4 (src/kernels/eigen.c), so
each op is made for inputs of 1 to 9 values and of 4099 (every tail) and
3000 values of spread magnitudes: 1e-6 to 1e4 and both signs, values near
exp's limits (-104, 88.7), sin and cos past their Payne-Hanek thresholds
(18838, 25966) up to 3.4e38, zeros of both signs, denormals, infinities
and NaN (Log on their absolute values). OUT_DIR/NAME/ holds model.onnx
and in/x.npy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

RNG = np.random.default_rng(13)
OPS = (("elu", "Elu", {}), ("elu07", "Elu", {"alpha": 0.7}),
       ("selu", "Selu", {}), ("celu", "Celu", {}),
       ("celu03", "Celu", {"alpha": 0.3}), ("softplus", "Softplus", {}),
       ("log", "Log", {}), ("sin", "Sin", {}), ("cos", "Cos", {}))
EDGES = [0.0, -0.0, 1e-45, -1e-45, 1e-38, -1e-38, np.inf, -np.inf, np.nan,
         88.7, 88.75, -87.3, -88.0, -103.0, -104.5, 18838.0, 25966.0,
         1e30, -1e30, 3.4e38, -3.4e38, 1.0, -1.0, 0.5]


def values(n):
    mags = 10.0 ** RNG.uniform(-6, 4, n)
    x = RNG.choice([-1.0, 1.0], n) * mags * RNG.uniform(0.5, 1.0, n)
    return x


def save(out, name, op, attrs, x):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    g = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], **attrs)], name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8  # the newest Debian's python3-onnx knows
    onnx.save(m, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "in", "x.npy"), x)


def main():
    out = sys.argv[1]
    for name, op, attrs in OPS:
        for n in (1, 2, 3, 5, 6, 7, 9):
            x = values(n)
            if name == "log":
                x = np.abs(x)
            save(out, "%s_%d" % (name, n), op, attrs, x.astype(np.float32))
        x = np.concatenate([values(2936), values(1000) * 1e-2,
                            np.array(EDGES), RNG.uniform(-40, 40, 75)])
        x = np.concatenate([x, RNG.uniform(18000, 3e4, 64) *
                            RNG.choice([-1, 1], 64)])[:4099]
        if name == "log":
            x = np.abs(x)
        save(out, "%s_%d" % (name, x.size), op, attrs,
             x.astype(np.float32).reshape(1, -1))


if __name__ == "__main__":
    main()
