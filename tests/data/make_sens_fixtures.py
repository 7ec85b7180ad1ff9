#!/usr/bin/python3
"""Make the fixtures of tests/data/sens/ for tests/sens.sh, from the chain
of tests/data/diag/ (make_diag_fixtures.py: 8 x Gemm [32,32] + Relu, then
Gemm [32,8]; its QDQ form; that form with r4's scale 20 times too large):

  chain_w2.onnx   chain_qdq.onnx with every weight requantized with 2
                  bits (symmetric, codes -1..1 in int8, scale max|w|, one
                  per tensor), the activations left as they are (8 bits):
                  the weights are where the error is
  chain_qop.onnx  the chain's QOperator form (com.microsoft QGemm, as
                  samples/qdq_quantize.py writes it)
  res_float.onnx  x [4,32] -> 3 x (Gemm [32,32] "g<i>" -> Add of the
                  block's input -> Relu) -> Gemm [32,8] "y": residual
                  Adds whose ReLU the QDQ form folds into the Add's
                  QuantizeLinear
  res_qdq.onnx    its QDQ form, the graph input left float
  res_input.npy   40 rows [40,32] of N(0,1)
  bn_float.onnx   x [1,4,8,8] -> 3 x (Conv 3x3 pad 1 -> BatchNormalization
                  with random gamma, beta, mean and variance -> Relu) ->
                  Flatten -> Gemm [256,10]
  bn_folded.onnx  the same with each BatchNormalization folded into its
                  Conv (samples/qdq_quantize.py's prepare)
  bn_qdq.onnx     its QDQ form (folded as well), the graph input float
  bn_qdq16.onnx   its A16W8 form: com.microsoft QuantizeLinear and
                  DequantizeLinear, uint16 activations
  bn_input.npy    6 samples [6,4,8,8] of N(0,1)

    /usr/bin/python3 tests/data/make_sens_fixtures.py
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DIAG = os.path.join(HERE, "diag")
OUT = os.path.join(HERE, "sens")
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                "samples"))
import qdq_quantize as qq  # noqa: E402
sys.path.insert(0, HERE)
from make_diag_fixtures import float_input, model  # noqa: E402


def save(m, name):
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name))


def w2():
    f = onnx.load(os.path.join(DIAG, "chain_float.onnx"))
    q = onnx.load(os.path.join(DIAG, "chain_qdq.onnx"))
    fw = {t.name: numpy_helper.to_array(t) for t in f.graph.initializer}
    inits = {t.name: t for t in q.graph.initializer}
    done = 0
    for i in range(9):
        w = fw["W%d" % i].astype(np.float64)
        s = np.float32(np.abs(w).max())
        codes = np.clip(np.round(w / s), -1, 1).astype(np.int8)
        inits["W%d_quantized" % i].CopyFrom(
            numpy_helper.from_array(codes, "W%d_quantized" % i))
        inits["W%d_scale" % i].CopyFrom(
            numpy_helper.from_array(np.array(s, np.float32), "W%d_scale" % i))
        done += 1
    assert done == 9
    save(q, "chain_w2.onnx")


def res():
    rng = np.random.RandomState(7)
    w = rng.normal(0, np.sqrt(1 / 32), (4, 32, 32)).astype(np.float32)
    inits = {"W3": w[3][:, :8].copy(), "B3": np.zeros(8, np.float32)}
    nodes, prev = [], "x"
    for i in range(3):
        inits["W%d" % i] = w[i]
        inits["B%d" % i] = rng.normal(0, 0.05, (32,)).astype(np.float32)
        nodes += [
            helper.make_node("Gemm", [prev, "W%d" % i, "B%d" % i],
                             ["g%d" % i], name="g%d" % i),
            helper.make_node("Add", ["g%d" % i, prev], ["a%d" % i],
                             name="add%d" % i),
            helper.make_node("Relu", ["a%d" % i], ["r%d" % i],
                             name="relu%d" % i)]
        prev = "r%d" % i
    nodes.append(helper.make_node("Gemm", [prev, "W3", "B3"], ["y"],
                                  name="y"))
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4, c])
          for n, c in (("x", 32), ("y", 8))]
    m = model(nodes, "res", io[:1], io[1:], inits)
    save(m, "res_float.onnx")
    rows = rng.normal(0, 1, (40, 32)).astype(np.float32)
    np.save(os.path.join(OUT, "res_input.npy"), rows)
    q = qq.quantize_qdq(m, list(rows.reshape(10, 4, 32)))
    save(float_input(q, "x"), "res_qdq.onnx")


def bn():
    rng = np.random.RandomState(11)
    nodes, inits, prev = [], {}, "x"
    for i in range(3):
        inits["W%d" % i] = rng.normal(0, 0.3, (4, 4, 3, 3)).astype(np.float32)
        inits["B%d" % i] = rng.normal(0, 0.1, (4,)).astype(np.float32)
        for k, (lo, hi) in zip(("gamma", "beta", "mean", "var"),
                               ((0.5, 2), (-0.5, 0.5), (-0.3, 0.3),
                                (0.2, 3))):
            inits["%s%d" % (k, i)] = rng.uniform(lo, hi, 4).astype(
                np.float32)
        nodes += [
            helper.make_node("Conv", [prev, "W%d" % i, "B%d" % i],
                             ["c%d" % i], name="conv%d" % i, pads=[1] * 4),
            helper.make_node("BatchNormalization",
                             ["c%d" % i] + ["%s%d" % (k, i) for k in
                                            ("gamma", "beta", "mean", "var")],
                             ["n%d" % i], name="bn%d" % i),
            helper.make_node("Relu", ["n%d" % i], ["r%d" % i],
                             name="relu%d" % i)]
        prev = "r%d" % i
    inits["Wf"] = rng.normal(0, 0.06, (256, 10)).astype(np.float32)
    inits["Bf"] = np.zeros(10, np.float32)
    nodes += [helper.make_node("Flatten", [prev], ["f"], name="flat"),
              helper.make_node("Gemm", ["f", "Wf", "Bf"], ["y"], name="fc")]
    io = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8]),
          helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])]
    m = model(nodes, "bn", io[:1], io[1:], inits)
    save(m, "bn_float.onnx")
    save(qq.prepare(m), "bn_folded.onnx")
    data = rng.normal(0, 1, (6, 4, 8, 8)).astype(np.float32)
    np.save(os.path.join(OUT, "bn_input.npy"), data)
    q = qq.quantize_qdq(m, [data[i:i + 1] for i in range(6)])
    save(float_input(q, "x"), "bn_qdq.onnx")
    q = qq.quantize_qdq(m, [data[i:i + 1] for i in range(6)],
                        activation_type="uint16")
    save(float_input(q, "x"), "bn_qdq16.onnx")


def qop():
    f = onnx.load(os.path.join(DIAG, "chain_float.onnx"))
    data = np.load(os.path.join(DIAG, "chain_input.npy"))
    calib = [data[i:i + 4] for i in range(0, 40, 4)]
    save(qq.quantize_qoperator(f, calib), "chain_qop.onnx")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    w2()
    qop()
    res()
    bn()
