#!/usr/bin/python3
"""qreport's output metrics (src/analysis/outputs.c) recomputed with numpy
from both models' outputs, and compared with report.json.

    /usr/bin/python3 bench/outputs_check.py REPORT.json OUT_DIR [--quant K]

OUT_DIR holds f<i>_<j>.npy and q<i>_<j>.npy, output j of sample i of the
float model and of candidate K (bench/outputs_ort.js writes them from ONNX
Runtime; `qreport run ... --input` gives the engine's own). For every
outputs[] entry of candidate K: per-sample cosine and SQNR (in double,
10 log10(sum x^2 / sum (x-y)^2)); for a classifier the KL of the softmax
(or of the probabilities divided by their sum, floored at 1e-7), top-1,
top-5 overlap and the flips; for a segmenter the pixel agreement and IoU.
Prints the largest difference of each against report.json and the flips
both give; exits 1 when a flip list or count differs.
"""
import json
import os
import sys

import numpy as np

FLOOR = 1e-7


def log_dist(v, probs):
    v = v.astype(np.float64)
    if probs:
        p = np.where(v > 0, v, 0)
        s = p.sum(-1, keepdims=True)
        return np.log(np.maximum(np.where(s > 0, p / np.where(s > 0, s, 1),
                                          0), FLOOR))
    m = v.max(-1, keepdims=True)
    return v - m - np.log(np.exp(v - m).sum(-1, keepdims=True))


def topk(v, k):
    return set(np.argsort(-v, kind="stable")[:k].tolist())


def diff(a, b):
    a = np.array([np.nan if v is None else v for v in a], np.float64)
    b = np.array(b, np.float64)
    both = np.isfinite(a) & np.isfinite(b)
    if (np.isfinite(a) != np.isfinite(b)).any():
        return np.inf
    return float(np.max(np.abs(a[both] - b[both]))) if both.any() else 0.0


def main():
    rep, out = sys.argv[1], sys.argv[2]
    k = int(sys.argv[sys.argv.index("--quant") + 1]) \
        if "--quant" in sys.argv else 0
    j = json.load(open(rep))
    n = len(j["dataset"]["sample_names"])
    bad = 0
    outs = [o for o in j["outputs"] if o["quant"] == k]
    for oi, o in enumerate(outs):
        f = [np.load(os.path.join(out, "f%d_%d.npy" % (i, oi)))
             for i in range(n)]
        q = [np.load(os.path.join(out, "q%d_%d.npy" % (i, oi)))
             for i in range(n)]
        same = [a.size == b.size for a, b in zip(f, q)]
        cos, sq = [], []
        for a, b, s in zip(f, q, same):
            if not s:
                continue
            x = a.astype(np.float64).ravel()
            y = b.astype(np.float64).ravel()
            e = ((x - y) ** 2).sum()
            sq.append(10 * np.log10((x * x).sum() / e) if e > 0 else np.inf)
            nx, ny = np.sqrt((x * x).sum()), np.sqrt((y * y).sum())
            cos.append((x * y).sum() / (nx * ny) if nx > 0 and ny > 0
                       else float(nx == ny))
        print("%s: kind %s, %d of %d samples compared (same size)" %
              (o["name"], o["kind"], sum(same), n))
        print("  per-sample cosine max |diff| %.3g, SQNR max |diff| %.3g dB"
              % (diff(o["cosine"], cos), diff(o["sqnr_db_per_sample"], sq)))
        c = o.get("classification")
        if c:
            probs = c["input"] == "probabilities"
            kk = c["k"]
            kl, t1, t5, flips = [], [], [], {}
            for a, b in zip(f, q):
                a = a.reshape(a.shape[0], -1)
                b = b.reshape(b.shape[0], -1)
                lf, lq = log_dist(a, probs), log_dist(b, probs)
                kl.append(float((np.exp(lf) * (lf - lq)).sum(-1).mean()))
                af, aq = a.argmax(-1), b.argmax(-1)
                t1.append(float((af == aq).mean()))
                t5.append(float(np.mean([len(topk(a[r], kk) & topk(b[r], kk))
                                         / kk for r in range(a.shape[0])])))
                for u, v in zip(af, aq):
                    if u != v:
                        flips[(int(u), int(v))] = flips.get((int(u), int(v)),
                                                            0) + 1
            mine = sorted(([u, v, m] for (u, v), m in flips.items()),
                          key=lambda t: (-t[2], t[0], t[1]))
            theirs = [[x["from"], x["to"], x["count"]] for x in c["flips"]]
            print("  KL per sample max |diff| %.3g (mean %.6g numpy, %.6g "
                  "qreport); top-1 max |diff| %.3g; top-5 max |diff| %.3g"
                  % (diff(c["kl"], kl), np.mean(kl), c["kl_mean"],
                     diff(c["top1"], t1), diff(c["top5"], t5)))
            print("  flips numpy %s, qreport %s" % (mine[:10], theirs[:10]))
            if mine[:len(theirs)] != theirs:
                bad = 1
        s = o.get("segmentation")
        if s:
            ag = []
            for a, b in zip(f, q):
                ag.append(float((a.argmax(1) == b.argmax(1)).mean()))
            print("  pixel agreement per sample max |diff| %.3g"
                  % diff(s["pixel_agreement_per_sample"], ag))
    sys.exit(bad)


main()
