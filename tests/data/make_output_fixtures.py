#!/usr/bin/python3
"""Make the fixtures of tests/data/outputs/ for tests/test_outputs.c:

  logits_float.onnx  x [1,10] -> Add 0 -> "y" [1,10]: logits as given
  logits_cand.onnx   the same with Add bias: bias[7] = 1, bias[4] = 0.5;
                     logits_input.npy is made so that exactly samples 2
                     and 5 flip from class 3 to 7 and sample 9 from 1 to
                     4 (their float winner leads by 0.3 and the runner-up
                     gains the bias); every other sample's winner leads
                     by 3 or more
  logits_input.npy   12 samples [12,10]
  probs_float.onnx   x [2,30] -> Add 0 -> Reshape [2,30,1,1] "p": a
                     classifier whose values are probabilities (the input
                     rows are softmaxes), 30 classes (no full matrix), 2
                     rows a sample
  probs_cand.onnx    the same with Add bias (bias[11] = 0.15: the rows no
                     longer sum to 1), then rounded to multiples of 1/256
                     (a uint8 softmax: small ones become 0)
  probs_input.npy    5 samples of 2 rows [10,30]
  seg_float.onnx     x [1,3,4,5] -> Add 0 -> "s" [1,3,4,5] (class scores
                     per pixel) and x -> Reshape [1,6,10] "d" (a
                     detector-shaped output: neither kind)
  seg_cand.onnx      the same with a fixed noise added to each
  seg_input.npy      4 samples [4,3,4,5]
  expected.json      per case, computed here with numpy from the models'
                     own arithmetic: per-sample KL, top-1, top-5, flips and
                     flip matrix; per-sample SQNR and cosine, pixel
                     agreement and per-class IoU

    /usr/bin/python3 tests/data/make_output_fixtures.py
"""
import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "outputs")
FLOOR = 1e-7


def save(m, name):
    m.ir_version = 7
    m.opset_import[0].version = 13
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name))


def add_model(shape, bias, out, extra=None):
    """x -> Add bias -> out; extra: more nodes after (list, outputs)."""
    nodes = [helper.make_node("Add", ["x", "b"], [out if extra is None
                                                 else "a"])]
    inits = [numpy_helper.from_array(bias.astype(np.float32), "b")]
    outs = [helper.make_tensor_value_info(out, TensorProto.FLOAT, shape)]
    if extra is not None:
        n, i, outs = extra
        nodes += n
        inits += i
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, shape)], outs, inits)
    return helper.make_model(g)


def log_dist(v, probs):
    v = v.astype(np.float64)
    if probs:
        p = np.where(v > 0, v, 0)
        s = p.sum(-1, keepdims=True)
        p = np.where(s > 0, p / np.where(s > 0, s, 1), 0)
        return np.log(np.maximum(p, FLOOR))
    m = v.max(-1, keepdims=True)
    return v - m - np.log(np.exp(v - m).sum(-1, keepdims=True))


def topk(v, k):
    # by value descending, ties to the lower index (a stable sort)
    return list(np.argsort(-v, kind="stable")[:k])


def classes(xf, xq, rows, probs):
    """Per-sample KL, top-1, top-5; flips; matrix (rows x C each)."""
    c = xf.shape[-1]
    k = min(5, c)
    kl, t1, t5, flips = [], [], [], {}
    mat = np.zeros((c, c), dtype=np.int64)
    allkl = []
    for s in range(xf.shape[0] // rows):
        f = xf[s * rows:(s + 1) * rows]
        q = xq[s * rows:(s + 1) * rows]
        lf, lq = log_dist(f, probs), log_dist(q, probs)
        r_kl = (np.exp(lf) * (lf - lq)).sum(-1)
        af, aq = f.argmax(-1), q.argmax(-1)
        r_t5 = [len(set(topk(f[r], k)) & set(topk(q[r], k))) / k
                for r in range(rows)]
        kl.append(float(r_kl.mean()))
        t1.append(float((af == aq).mean()))
        t5.append(float(np.mean(r_t5)))
        allkl += list(r_kl)
        for a, b in zip(af, aq):
            mat[a, b] += 1
            if a != b:
                flips[(int(a), int(b))] = flips.get((int(a), int(b)), 0) + 1
    fl = sorted(([a, b, n] for (a, b), n in flips.items()),
                key=lambda t: (-t[2], t[0], t[1]))
    n = len(allkl)
    return {"kl": kl, "top1": t1, "top5": t5, "kl_mean": float(np.mean(allkl)),
            "kl_max": float(np.max(allkl)),
            "top1_agreement": float(sum(t * rows for t in t1) / n),
            "top5_overlap": float(sum(t * rows for t in t5) / n),
            "flips": fl, "flipped": int(sum(f[2] for f in fl)),
            "rows": n, "matrix": mat.tolist() if c <= 20 else None}


def sqnr_cos(f, q):
    f = f.astype(np.float64).ravel()
    q = q.astype(np.float64).ravel()
    e = ((f - q) ** 2).sum()
    s = 10 * np.log10((f * f).sum() / e) if e > 0 else None
    c = (f * q).sum() / np.sqrt((f * f).sum() * (q * q).sum())
    return s, float(c)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(7)
    exp = {}

    # logits: flips 3 -> 7 at samples 2 and 5, 1 -> 4 at sample 9
    x = rng.normal(0, 1, (12, 10)).astype(np.float32)
    for s in range(12):
        w = s % 10
        if s in (2, 5):
            w, r = 3, 7
        elif s == 9:
            w, r = 1, 4
        else:
            r = None
        x[s] = np.clip(x[s], -1, 1)
        x[s, w] = 5
        if r is not None:
            x[s, r] = 4.7
        if w in (7, 4) or r is None:
            x[s, w] = 6  # a lead of 3 or more over every other class
    bias = np.zeros(10, np.float32)
    bias[7], bias[4] = 1, 0.5
    save(add_model([1, 10], np.zeros(10), "y"), "logits_float.onnx")
    save(add_model([1, 10], bias, "y"), "logits_cand.onnx")
    np.save(os.path.join(OUT, "logits_input.npy"), x)
    xq = (x + bias).astype(np.float32)
    exp["logits"] = classes(x, xq, 1, False)
    assert [f[:2] for f in exp["logits"]["flips"]] == [[3, 7], [1, 4]]

    # probabilities, [2,30,1,1], 2 rows a sample
    z = rng.normal(0, 1.5, (10, 30))
    xp = (np.exp(z) / np.exp(z).sum(-1, keepdims=True)).astype(np.float32)
    bp = np.zeros(30, np.float32)
    bp[11] = 0.15
    shape = numpy_helper.from_array(np.array([2, 30, 1, 1], np.int64), "sh")
    k256 = numpy_helper.from_array(np.array(256, np.float32), "k")
    fl = ([helper.make_node("Reshape", ["a", "sh"], ["p"])], [shape],
          [helper.make_tensor_value_info("p", TensorProto.FLOAT, [2, 30, 1, 1])])
    save(add_model([2, 30], np.zeros(30), "p", fl), "probs_float.onnx")
    ql = ([helper.make_node("Mul", ["a", "k"], ["m"]),
           helper.make_node("Round", ["m"], ["r"]),
           helper.make_node("Div", ["r", "k"], ["d"]),
           helper.make_node("Reshape", ["d", "sh"], ["p"])], [shape, k256],
          [helper.make_tensor_value_info("p", TensorProto.FLOAT, [2, 30, 1, 1])])
    save(add_model([2, 30], bp, "p", ql), "probs_cand.onnx")
    np.save(os.path.join(OUT, "probs_input.npy"), xp)
    f256 = np.float32(256)
    pq = (np.round((xp + bp).astype(np.float32) * f256) / f256).astype(
        np.float32)
    exp["probs"] = classes(xp, pq, 2, True)
    assert exp["probs"]["flipped"] > 0 and (pq == 0).any()

    # segmenter [1,3,4,5] and a detector-shaped [1,6,10]
    xs = rng.normal(0, 1, (4, 3, 4, 5)).astype(np.float32)
    noise = rng.normal(0, 0.4, (1, 3, 4, 5)).astype(np.float32)
    dshape = numpy_helper.from_array(np.array([1, 6, 10], np.int64), "dsh")
    dn = numpy_helper.from_array(rng.normal(0, 0.1, (1, 6, 10))
                                 .astype(np.float32), "dn")
    dz = numpy_helper.from_array(np.zeros((1, 6, 10), np.float32), "dn")

    def seg_model(b, d):
        return add_model([1, 3, 4, 5], b, "s", (
            [helper.make_node("Reshape", ["x", "dsh"], ["dr"]),
             helper.make_node("Add", ["dr", "dn"], ["d"])], [dshape, d],
            [helper.make_tensor_value_info("s", TensorProto.FLOAT,
                                           [1, 3, 4, 5]),
             helper.make_tensor_value_info("d", TensorProto.FLOAT,
                                           [1, 6, 10])]))
    mf = seg_model(np.zeros((1, 3, 4, 5)), dz)
    mf.graph.node[0].output[0] = "s"
    mq = seg_model(noise[0:1], dn)
    mq.graph.node[0].output[0] = "s"
    save(mf, "seg_float.onnx")
    save(mq, "seg_cand.onnx")
    np.save(os.path.join(OUT, "seg_input.npy"), xs)
    sq = (xs + noise).astype(np.float32)
    dq = (xs.reshape(4, 6, 10) +
          numpy_helper.to_array(dn)).astype(np.float32)
    seg = {"sqnr": [], "cos": [], "agree": [], "d_sqnr": [], "d_cos": []}
    inter = np.zeros(3)
    uni = np.zeros(3)
    for s in range(4):
        v, c = sqnr_cos(xs[s], sq[s])
        seg["sqnr"].append(v)
        seg["cos"].append(c)
        v, c = sqnr_cos(xs[s].reshape(6, 10), dq[s])
        seg["d_sqnr"].append(v)
        seg["d_cos"].append(c)
        af, aq = xs[s].argmax(0).ravel(), sq[s].argmax(0).ravel()
        seg["agree"].append(float((af == aq).mean()))
        for k in range(3):
            inter[k] += ((af == k) & (aq == k)).sum()
            uni[k] += ((af == k) | (aq == k)).sum()
    seg["iou"] = [float(i / u) if u else None for i, u in zip(inter, uni)]
    seg["miou"] = float(np.mean([i / u for i, u in zip(inter, uni) if u]))
    seg["pixel_agreement"] = float(np.mean(seg["agree"]))
    assert 0 < seg["pixel_agreement"] < 1
    exp["seg"] = seg
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(exp, f, indent=1)


main()
