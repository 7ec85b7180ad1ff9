#!/usr/bin/python3
"""Make the fixtures of tests/data/cle/ for tests/cle_measured.sh: small
conv nets whose CLE sets are unbalanced, or not, by construction. Each
comes with a weight-only form (every Conv weight int8 per tensor through
a DequantizeLinear: the candidate the what-to-change runs need) and 8
samples [8,8,12,12] of N(0,1) in input.npy.

  unbal_*   x [1,8,12,12] -> convA 3x3 (8 -> 16) -> BatchNormalization
            (kept, random parameters) -> Relu -> convB 1x1 (16 -> 8): a
            balanced net with convA's folded output channel i multiplied
            by f_i (f from 0.01 to 1, log-spaced: ranges 100 times apart)
            and convB's input channel i divided by it, the same function.
            Equalization undoes it: a large gain.
  bal_*     x -> convA 3x3 (8 -> 16) -> Relu -> convB 1x1 (16 -> 8), each
            convA output channel's and each convB input channel's max |w|
            within 5% of 1: nothing to equalize, a gain near 0.
  dw_*      x -> conv1 1x1 (8 -> 16) -> Relu -> depthwise 3x3 (16) ->
            PRelu (slope per channel) -> conv3 1x1 (16 -> 8): the
            depthwise conv's channel i multiplied by f_i as above and
            conv3's input channel i divided by it. A Conv -> Depthwise ->
            Conv triplet, joined through PRelu.
  chain_*   x -> 6 x (conv 3x3 8 -> 8 -> Relu), the last without Relu:
            5 pairs sharing layers, each conv's output channels ranges
            spread 10 times (random).
  nofold_*  unbal's net with the BatchNormalization's scale computed by
            a Mul node (not a constant): its set cannot be equalized.
  relu6_*   x -> convA 3x3 (8 -> 16) -> Clip(0, 6) -> convB 1x1 (16 -> 8),
            convA's output channel i multiplied by f_i as in unbal and
            convB's input channel i divided by it; its activations stay
            far below 6. ReLU6 blocks the set; made ReLU, the function is
            the same and equalization gains a lot.
  relu6big_* the same with convA's weights 20 times larger: most of its
            positive activations pass 6, so the swap changes the output.

    /usr/bin/python3 tests/data/make_cle_fixtures.py
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cle")
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
from make_diag_fixtures import model  # noqa: E402

SHAPE = [1, 8, 12, 12]


def save(m, name):
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name))


def write(nodes, inits, name):
    io = [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE),
          helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)]
    save(model(nodes, name, io[:1], io[1:], inits), name + "_float.onnx")
    q = dict(inits)
    qnodes = []
    for n in nodes:
        if n.op_type == "Conv":
            w = inits[n.input[1]]
            s = np.float32(np.abs(w).max() / 127)
            q[n.input[1] + "_q"] = np.clip(np.round(w / s), -127,
                                           127).astype(np.int8)
            q[n.input[1] + "_s"] = np.array(s, np.float32)
            del q[n.input[1]]
            qnodes.append(helper.make_node(
                "DequantizeLinear", [n.input[1] + "_q", n.input[1] + "_s"],
                [n.input[1] + "_dq"], name=n.input[1] + "_DequantizeLinear"))
            n = onnx.NodeProto.FromString(n.SerializeToString())
            n.input[1] = n.input[1] + "_dq"
        qnodes.append(n)
    save(model(qnodes, name, io[:1], io[1:], q), name + "_wo.onnx")


def conv(name, x, w, b, y, **kw):
    return helper.make_node("Conv", [x, w, b], [y], name=name, **kw)


def unbal(rng, nofold=False):
    k = rng.uniform(0.5, 2, 16).astype(np.float32)        # BN's gamma
    beta = rng.uniform(-0.5, 0.5, 16).astype(np.float32)
    mean = rng.uniform(-0.3, 0.3, 16).astype(np.float32)
    var = rng.uniform(0.2, 3, 16).astype(np.float32)
    fold = k / np.sqrt(var + 1e-5)
    f = np.logspace(-2, 0, 16).astype(np.float32)
    wa = rng.normal(0, 0.2, (16, 8, 3, 3)).astype(np.float32)
    ba = rng.normal(0, 0.1, 16).astype(np.float32)
    wb = rng.normal(0, 0.3, (8, 16, 1, 1)).astype(np.float32)
    # convA+BN folded is (wa f, ba f); stored unfolded
    wa_raw = wa * (f / fold)[:, None, None, None]
    ba_raw = (ba * f - beta) / fold + mean
    inits = {"WA": wa_raw, "BA": ba_raw.astype(np.float32),
             "WB": wb / f[None, :, None, None],
             "BB": rng.normal(0, 0.1, 8).astype(np.float32),
             "beta": beta, "mean": mean, "var": var}
    nodes = [conv("convA", "x", "WA", "BA", "a", pads=[1] * 4)]
    if nofold:
        inits["g1"] = k / 2
        inits["g2"] = np.full(16, 2, np.float32)
        nodes.append(helper.make_node("Mul", ["g1", "g2"], ["gamma"],
                                      name="gamma_mul"))
    else:
        inits["gamma"] = k
    nodes += [
        helper.make_node("BatchNormalization",
                         ["a", "gamma", "beta", "mean", "var"], ["n"],
                         name="bn"),
        helper.make_node("Relu", ["n"], ["r"], name="relu"),
        conv("convB", "r", "WB", "BB", "y")]
    write(nodes, inits, "nofold" if nofold else "unbal")


def unit_rows(w, axis, rng):
    """w with each slice along axis scaled to max |w| in [0.95, 1.05]."""
    m = np.abs(w).max(axis=tuple(i for i in range(w.ndim) if i != axis),
                      keepdims=True)
    t = rng.uniform(0.95, 1.05, m.shape).astype(np.float32)
    return (w / m * t).astype(np.float32)


def bal(rng):
    wa = unit_rows(rng.normal(0, 1, (16, 8, 3, 3)), 0, rng) * 0.2
    wb = unit_rows(rng.normal(0, 1, (8, 16, 1, 1)), 1, rng) * 0.3
    inits = {"WA": wa.astype(np.float32),
             "BA": rng.normal(0, 0.1, 16).astype(np.float32),
             "WB": wb.astype(np.float32),
             "BB": rng.normal(0, 0.1, 8).astype(np.float32)}
    nodes = [conv("convA", "x", "WA", "BA", "a", pads=[1] * 4),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             conv("convB", "r", "WB", "BB", "y")]
    write(nodes, inits, "bal")


def dw(rng):
    f = np.logspace(-2, 0, 16).astype(np.float32)
    rng.shuffle(f)
    w2 = rng.normal(0, 0.3, (16, 1, 3, 3)).astype(np.float32)
    b2 = rng.normal(0, 0.1, 16).astype(np.float32)
    inits = {"W1": rng.normal(0, 0.3, (16, 8, 1, 1)).astype(np.float32),
             "B1": rng.normal(0, 0.1, 16).astype(np.float32),
             "W2": w2 * f[:, None, None, None], "B2": b2 * f,
             "slope": rng.uniform(0.05, 0.3, (16, 1, 1)).astype(np.float32),
             "W3": (rng.normal(0, 0.3, (8, 16, 1, 1)) /
                    f[None, :, None, None]).astype(np.float32),
             "B3": rng.normal(0, 0.1, 8).astype(np.float32)}
    nodes = [conv("conv1", "x", "W1", "B1", "a"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             conv("dw2", "r", "W2", "B2", "d", group=16, pads=[1] * 4),
             helper.make_node("PRelu", ["d", "slope"], ["p"], name="prelu"),
             conv("conv3", "p", "W3", "B3", "y")]
    write(nodes, inits, "dw")


def relu6(rng, big=False):
    f = np.logspace(-2, 0, 16).astype(np.float32)
    rng.shuffle(f)
    wa = rng.normal(0, 1.0 if big else 0.05, (16, 8, 3, 3))
    ba = rng.normal(0, 0.1, 16)
    wb = rng.normal(0, 0.3, (8, 16, 1, 1))
    inits = {"WA": (wa * f[:, None, None, None]).astype(np.float32),
             "BA": (ba * f).astype(np.float32),
             "WB": (wb / f[None, :, None, None]).astype(np.float32),
             "BB": rng.normal(0, 0.1, 8).astype(np.float32),
             "lo": np.array(0, np.float32), "hi": np.array(6, np.float32)}
    nodes = [conv("convA", "x", "WA", "BA", "a", pads=[1] * 4),
             helper.make_node("Clip", ["a", "lo", "hi"], ["r"],
                              name="relu6"),
             conv("convB", "r", "WB", "BB", "y")]
    write(nodes, inits, "relu6big" if big else "relu6")


def chain(rng):
    nodes, inits, prev = [], {}, "x"
    for i in range(6):
        s = rng.uniform(0.1, 1, 8).astype(np.float32)
        inits["W%d" % i] = (rng.normal(0, 0.3, (8, 8, 3, 3)) *
                            s[:, None, None, None]).astype(np.float32)
        inits["B%d" % i] = rng.normal(0, 0.1, 8).astype(np.float32)
        out = "y" if i == 5 else "c%d" % i
        nodes.append(conv("conv%d" % i, prev, "W%d" % i, "B%d" % i, out,
                          pads=[1] * 4))
        if i < 5:
            nodes.append(helper.make_node("Relu", [out], ["r%d" % i],
                                          name="relu%d" % i))
            prev = "r%d" % i
    write(nodes, inits, "chain")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.RandomState(7)
    data = rng.normal(0, 1, [8] + SHAPE[1:]).astype(np.float32)
    np.save(os.path.join(OUT, "input.npy"), data)
    unbal(rng)
    bal(rng)
    dw(rng)
    chain(rng)
    unbal(np.random.RandomState(7), nofold=True)
    relu6(np.random.RandomState(11))
    relu6(np.random.RandomState(11), big=True)
