#!/usr/bin/python3
"""Independent reference numbers for tests/test_cli.c.

Computes, with numpy and none of qreport's code, what report.json must say
about samples/digits_float.onnx and samples/digits_qdq.onnx:

  weights[]        per-output-channel min/max/mean/std, relative range,
                   Tukey outliers (numpy-linear quartiles, k = 1.5),
                   predicted int8 symmetric SQNR per-tensor / per-channel
  quant_weights[]  SQNR of the dequantized weights against the float ones
                   (BatchNormalization folded first where the float model
                   has it), values at the int8 limits, granularity
  cle[]            scales of the cross-layer-equalization sets, found and
                   applied as AIMET does (BN folded, Conv->Conv pairs and
                   Conv->Depthwise->Conv triplets joined by Relu/PRelu or
                   directly; sets applied in order, each on the weights the
                   previous set left)
  activations      samples/digits (30 PNGs, labels from the class folders,
                   x = (p/255 - 0.5)/0.5) through digits_float and
                   digits_qdq with the numpy reference runner of
                   samples/qdq_quantize.py: per matched tensor (ORT names:
                   X <-> X_DequantizeLinear_Output, graph outputs by name)
                   cosine mean/min over samples and SQNR with samples
                   concatenated, cumulative and local (local: every matched
                   quant tensor replaced by the float value after it is
                   compared); the output's top-1 agreement and accuracy

Usage: /usr/bin/python3 tests/data/make_expected.py > tests/data/expected_digits.json
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = sys.argv[1] if len(sys.argv) > 1 else "samples"


def constants(g):
    c = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    c[n.output[0]] = numpy_helper.to_array(a.t)
    return c


def weighted(g, c):
    """(node, weight name, output-channel axis) of every weighted layer."""
    out = []
    for n in g.node:
        if n.op_type in ("Conv", "ConvTranspose") and n.input[1] in c:
            out.append((n, n.input[1], 0 if n.op_type == "Conv" else 1))
        elif n.op_type == "Gemm" and n.input[1] in c:
            tb = next((a.i for a in n.attribute if a.name == "transB"), 0)
            out.append((n, n.input[1], 0 if tb else 1))
        elif n.op_type == "MatMul" and n.input[1] in c:
            out.append((n, n.input[1], c[n.input[1]].ndim - 1))
    return out


def rows(w, axis):
    return np.moveaxis(w.astype(np.float64), axis, 0).reshape(w.shape[axis], -1)


def sqnr_db(x, y):
    e = np.sum((x - y) ** 2)
    return None if e == 0 else float(10 * np.log10(np.sum(x ** 2) / e))


def sym_sqnr(w, axis, per_channel):
    r = rows(w, axis)
    m = np.abs(r).max(axis=1, keepdims=True) if per_channel else np.abs(r).max()
    s = np.where(m > 0, m / 127.0, 1.0)
    q = np.clip(np.round(r / s), -127, 127)
    return sqnr_db(r, q * s)


def weight_entry(node, wname, w, axis):
    r = rows(w, axis)
    mn, mx = r.min(axis=1), r.max(axis=1)
    rng = mx - mn
    pos = rng[rng > 0]
    rel = np.where(rng > 0, rng / pos.min(), 0.0) if pos.size else np.zeros_like(rng)
    q1, q3 = np.percentile(rel, [25, 75])
    fence = q3 + 1.5 * (q3 - q1)
    return {
        "layer": node.name, "op": node.op_type, "weight": wname,
        "channels": int(w.shape[axis]),
        "ch_min": mn.tolist(), "ch_max": mx.tolist(),
        "ch_mean": r.mean(axis=1).tolist(), "ch_std": r.std(axis=1).tolist(),
        "rel_range": rel.tolist(), "max_rel_range": float(rel.max()),
        "outlier_channels": [int(i) for i in np.nonzero(rel > fence)[0]],
        "sqnr_per_tensor_db": sym_sqnr(w, axis, False),
        "sqnr_per_channel_db": sym_sqnr(w, axis, True),
    }


def consumers(g, name):
    return [n for n in g.node if name in n.input]


def bn_after(g, c, node):
    """Per-channel (mul, add) of a BatchNormalization right after node."""
    cons = consumers(g, node.output[0])
    if len(cons) == 1 and cons[0].op_type == "BatchNormalization":
        bn = cons[0]
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        gamma, beta, mean, var = (c[i].astype(np.float64) for i in bn.input[1:5])
        mul = gamma / np.sqrt(var + eps)
        return bn, mul, beta - mean * mul
    return None, None, None


def folded_weight(g, c, node):
    w = c[node.input[1]].astype(np.float64)
    b = (c[node.input[2]].astype(np.float64) if len(node.input) > 2 and node.input[2]
         else np.zeros(w.shape[0]))
    bn, mul, add = bn_after(g, c, node)
    if bn is not None:
        w = w * mul.reshape(-1, *([1] * (w.ndim - 1)))
        b = b * mul + add
    return w, b, (bn.output[0] if bn is not None else node.output[0])


def quant_entries(fg, fc, qg, qc):
    """Pair float and quant compute layers in order (they align 1:1 in the
    digits sample) and compare the dequantized weights."""
    fl = weighted(fg, fc)
    prod = {o: n for n in qg.node for o in n.output}
    ql = []
    for n in qg.node:
        if n.op_type in ("Conv", "Gemm", "MatMul") and n.input[1] in prod:
            dq = prod[n.input[1]]
            if dq.op_type == "DequantizeLinear" and dq.input[0] in qc:
                ql.append((n, dq))
    out = []
    for (fn, wname, axis), (qn, dq) in zip(fl, ql):
        q = qc[dq.input[0]].astype(np.int64)
        s = qc[dq.input[1]].astype(np.float64)
        zp = (qc[dq.input[2]].astype(np.int64) if len(dq.input) > 2 and dq.input[2]
              else np.zeros_like(s, dtype=np.int64))
        qaxis = next((a.i for a in dq.attribute if a.name == "axis"), 1)
        if s.size > 1:
            shape = [1] * q.ndim
            shape[qaxis] = -1
            deq = (q - zp.reshape(shape)) * s.reshape(shape)
        else:
            deq = (q - zp) * s
        if fn.op_type == "Conv":
            w, _, _ = folded_weight(fg, fc, fn)
        else:
            w = fc[wname].astype(np.float64)
        info = np.iinfo(qc[dq.input[0]].dtype)
        out.append({
            "quant": 0, "layer": fn.name, "quant_layer": qn.name,
            "granularity": "per-channel" if s.size > 1 else "per-tensor",
            "bits": 8, "sqnr_db": sqnr_db(w, deq),
            "clipped": int(np.sum((q == info.min) | (q == info.max))),
        })
    return out


def cle_sets(g, c):
    """AIMET's layer groups: chains of convs whose output has one consumer,
    joined by Relu/PRelu or directly (after a folded BN); then split into
    triplets around depthwise convs and pairs otherwise."""
    convs = {n.name: n for n in g.node if n.op_type == "Conv" and n.input[1] in c}

    def group(n):
        return next((a.i for a in n.attribute if a.name == "group"), 1)

    def is_dw(n):
        w = c[n.input[1]]
        return group(n) > 1 and group(n) == w.shape[0] and w.shape[1] == 1

    def next_conv(n):
        _, _, t = folded_weight(g, c, n)
        cons = consumers(g, t)
        if len(cons) == 1 and cons[0].op_type in ("Relu", "PRelu"):
            cons = consumers(g, cons[0].output[0])
        if len(cons) == 1 and cons[0].name in convs:
            m = cons[0]
            if group(m) == 1 or is_dw(m):
                return m
        return None

    started, groups = set(), []
    preds = {}
    for n in convs.values():
        m = next_conv(n)
        if m is not None and (group(n) == 1 or is_dw(n)):
            preds[m.name] = n
    for n in g.node:
        if n.name not in convs or n.name in preds or n.name in started:
            continue
        chain = [n]
        while True:
            m = next_conv(chain[-1])
            if m is None or preds.get(m.name) is not chain[-1]:
                break
            chain.append(m)
        for x in chain:
            started.add(x.name)
        if len(chain) > 1:
            groups.append(chain)
    sets = []
    for chain in groups:
        i = 0
        while i < len(chain) - 1:
            if i + 2 < len(chain) and is_dw(chain[i + 1]):
                sets.append(chain[i:i + 3])
                i += 2
            else:
                sets.append(chain[i:i + 2])
                i += 1
    return sets


def cle_entries(g, c):
    weights = {n.name: folded_weight(g, c, n)[0]
               for n in g.node if n.op_type == "Conv" and n.input[1] in c}
    out = []

    def out_range(w):
        return np.abs(w).reshape(w.shape[0], -1).max(axis=1)

    def in_range(w):
        return np.abs(np.moveaxis(w, 1, 0)).reshape(w.shape[1], -1).max(axis=1)

    def safe(r):
        return r > 0

    for s in cle_sets(g, c):
        ws = [weights[n.name] for n in s]
        if len(s) == 2:
            r1, r2 = out_range(ws[0]), in_range(ws[1])
            ok = safe(r1) & safe(r2)
            sc = np.where(ok, np.sqrt(np.where(ok, r1 / np.where(ok, r2, 1), 1)), 1.0)
            ws[0] = ws[0] / sc.reshape(-1, 1, 1, 1)
            ws[1] = ws[1] * sc.reshape(1, -1, 1, 1)
            scales = [sc.tolist()]
        else:
            r0, r1, r2 = out_range(ws[0]), out_range(ws[1]), in_range(ws[2])
            ok = safe(r0) & safe(r1) & safe(r2)
            cb = np.cbrt(np.where(ok, r0 * r1 * r2, 1))
            s12 = np.where(ok, np.where(ok, r0, 1) / cb, 1.0)
            s23 = np.where(ok, cb / np.where(ok, r2, 1), 1.0)
            ws[0] = ws[0] / s12.reshape(-1, 1, 1, 1)
            ws[1] = ws[1] * s12.reshape(-1, 1, 1, 1) / s23.reshape(-1, 1, 1, 1)
            ws[2] = ws[2] * s23.reshape(1, -1, 1, 1)
            scales = [s12.tolist(), s23.tolist()]
        for n, w in zip(s, ws):
            weights[n.name] = w
        out.append({"layers": [n.name for n in s], "scales": scales})
    return out


def digits_images(root):
    """The 30 sample PNGs in the order qreport reads them (class folders
    and files sorted by name), preprocessed as the CLI test asks."""
    from PIL import Image
    out = []
    base = os.path.join(root, "digits")
    for label, cls in enumerate(sorted(os.listdir(base))):
        for f in sorted(os.listdir(os.path.join(base, cls))):
            p = np.asarray(Image.open(os.path.join(base, cls, f)).convert("L"),
                           dtype=np.float32)
            x = (p * np.float32(1 / 255) - np.float32(0.5)) / np.float32(0.5)
            out.append((x.reshape(1, 1, 8, 8).astype(np.float32), label))
    return out


class Acc:
    """Streaming cosine/SQNR, as defined in src/analysis/act_stats.c."""

    def __init__(self):
        self.cos, self.sxx, self.see = [], 0.0, 0.0

    def add(self, x, y):
        x = x.astype(np.float64).ravel()
        y = y.astype(np.float64).ravel()
        nx, ny = np.sum(x * x), np.sum(y * y)
        if nx == 0 and ny == 0:
            c = 1.0
        elif nx == 0 or ny == 0:
            c = 0.0
        else:
            c = float(np.sum(x * y) / (np.sqrt(nx) * np.sqrt(ny)))
        self.cos.append(c)
        self.sxx += nx
        self.see += float(np.sum((x - y) ** 2))

    def sqnr(self):
        return None if self.see == 0 else float(10 * np.log10(self.sxx / self.see))


def activation_entries(root):
    sys.path.insert(0, root)
    import qdq_quantize as qq
    f = onnx.load(f"{root}/digits_float.onnx")
    q = onnx.load(f"{root}/digits_qdq.onnx")
    fr, qr = qq.Runner(f), qq.Runner(q)
    qnodes = [(n, qq._attrs(n)) for n in q.graph.node]
    qnames = {o for n in q.graph.node for o in n.output} | set(qr.input_names)
    qouts = [o.name for o in q.graph.output]
    ftensors = list(fr.input_names) + [o for n in f.graph.node
                                       if n.op_type != "Constant" for o in n.output]
    pairs = []
    for t in ftensors:
        if t + "_DequantizeLinear_Output" in qnames:
            pairs.append((t, t + "_DequantizeLinear_Output"))
        elif t in qouts:
            pairs.append((t, t))
    by_q = {qt: ft for ft, qt in pairs}
    cum = {ft: Acc() for ft, _ in pairs}
    loc = {ft: Acc() for ft, _ in pairs}
    agree = fcorrect = qcorrect = 0
    data = digits_images(root)
    for x, label in data:
        fenv = fr.run({"input": x})
        for local in (0, 1):
            env = dict(qr.consts)
            env["input"] = x
            for node, a in qnodes:
                outs = qq._op(node, [env[i] if i else None for i in node.input], a)
                for name, v in zip(node.output, outs):
                    env[name] = v
                    if name in by_q:
                        ft = by_q[name]
                        (loc if local else cum)[ft].add(fenv[ft], v)
                        if local:
                            env[name] = fenv[ft].astype(v.dtype)
            if not local:
                af = int(np.argmax(fenv["logits"]))
                aq = int(np.argmax(env["logits"]))
                agree += af == aq
                fcorrect += af == label
                qcorrect += aq == label
    rows = []
    for ft, qt in pairs:
        rows.append({"tensor": ft, "quant_tensor": qt,
                     "cosine_mean": float(np.mean(cum[ft].cos)),
                     "cosine_min": float(np.min(cum[ft].cos)),
                     "sqnr_db": cum[ft].sqnr(),
                     "local_sqnr_db": loc[ft].sqnr()})
    n = len(data)
    return {"samples": n, "pairs": rows,
            "output": {"name": "logits", "top1_agreement": agree / n,
                       "accuracy": qcorrect / n, "float_accuracy": fcorrect / n}}


def main():
    f = onnx.load(f"{ROOT}/digits_float.onnx")
    q = onnx.load(f"{ROOT}/digits_qdq.onnx")
    fc, qc = constants(f.graph), constants(q.graph)
    doc = {
        "weights": [weight_entry(n, w, fc[w], a) for n, w, a in weighted(f.graph, fc)],
        "quant_weights": quant_entries(f.graph, fc, q.graph, qc),
        "cle": cle_entries(f.graph, fc),
        "activations": activation_entries(ROOT),
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
