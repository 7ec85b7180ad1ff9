#!/usr/bin/python3
"""Make the weight-only (blockwise) fixtures of tests/data/activations/
for tests/ort_weightonly.sh and the C tests:

  wo_float.onnx      PyTorch's export (opset 17, constants folded) of
                     x [1,16,72] -> fc1 Linear(72,96) -> GELU -> fc2
                     Linear(96,72) -> + x -> LayerNorm(72) -> head
                     Linear(72,10) "logits": each Linear is a MatMul of a
                     2-D [K,N] float initializer (onnx::MatMul_28 [72,96],
                     onnx::MatMul_29 [96,72], onnx::MatMul_30 [72,10]) and
                     an Add of the bias
  wo_nbits.onnx      its weights quantized as ONNX Runtime's
                     MatMul4BitsQuantizer writes them (QOperator format,
                     asymmetric, block_size 32): each MatMul replaced by a
                     com.microsoft MatMulNBits NAME_Q4 (attributes K, N,
                     bits 4, block_size 32) reading A, W_Q4 (uint8
                     [N, k_blocks, 16]: column n's K values in blocks of
                     32, element 2j of a block in the low nibble of byte
                     j, the last block's padding codes 0 as ORT leaves
                     them), W_scales (float [N*k_blocks], index
                     n*k_blocks+b) and W_zero_points (uint8
                     [N*ceil(k_blocks/2)], column n's zero points 4-bit,
                     low nibble first, each column on a fresh byte, the
                     unused nibble 8 as ORT writes it); k_blocks =
                     ceil(K/32) = 3 for K 72, so the last block of fc1 and
                     head holds 8 values. Its output keeps the MatMul's
                     name; the float weight is gone.
  wo_nbits_sym.onnx  the same without zero points (MatMulNBits then uses
                     8), symmetric as ORT's quantizer does it: s = -m/8
                     for m the block's value of largest magnitude (1 for
                     an all-zero block), so about half the scales are
                     negative and m itself gets code 0; q = clip(round(w/s
                     + 8), 0, 15).
  wo_dq4.onnx        the QDQ form of the same asymmetric quantizer
                     (opset 21, IR 10): W_DQ_Q4 UINT4 [K,N] (row-major,
                     two a byte, low nibble first), W_DQ_scales float
                     [k_blocks,N], W_DQ_zero_points UINT4 [k_blocks,N];
                     DequantizeLinear NAME_DQ_Q4 (axis 0, block_size 32)
                     -> W_DQ_Q4_output, MatMul NAME_matmul_Q4 keeping the
                     MatMul's output name. Same codes, scales and zero
                     points as wo_nbits.onnx.
  wo_nbits8.onnx     MatMulNBits NAME_Q8 with bits 8 (what
                     MatMulNBitsQuantizer writes for bits=8): W_Q8 uint8
                     [N, k_blocks, 32] (one code a byte, padding 0),
                     W_zero_points uint8 [N*k_blocks] (one a byte);
                     asymmetric RTN as below with 255 for 15
  wo_nbits_al4.onnx  wo_nbits.onnx with accuracy_level 4: ONNX Runtime's
                     CPU kernel then quantizes A to int8 per block of 32
                     (the weights, and their numbers, are wo_nbits')
  wo_nbits_fzp.onnx  MatMulNBits 4-bit whose W_zero_points is float
                     [N*k_blocks], shaped and indexed like the scales (as
                     HQQ writes it): zp = -lo/s unrounded (float32), q =
                     clip(round(w/s + zp), 0, 15), w' = (q - zp) * s

Asymmetric round-to-nearest per block of 32 along K (a column's block b
holds rows 32b .. 32b+31 of [K,N]): lo = min(0, min w), hi = max(0, max
w) over the block's real values, s = float32((hi - lo) / 15) (1 when 0),
zp = clip(round(-lo / s), 0, 15), q = clip(round(w / s) + zp, 0, 15)
(numpy's round, half to even; for these weights every code, 4- and 8-bit,
equals what ONNX Runtime's MLAS quantizer, roundf(w * (1/s) + zp),
gives).
Dequantized w' = (q - zp) * s in float32.

Printed (and checked by tests/ort_weightonly.sh): per candidate and
MatMul weight, SQNR = 10 log10(sum w^2 / sum (w - w')^2) (sums in
float64) and "clipped", the number of the weight's K*N codes at 0 or
qmax (15; 255 for wo_nbits8), the padding not counted:

  wo_nbits      /fc1/MatMul  onnx::MatMul_28  sqnr 24.189028 clipped 1019
  wo_nbits      /fc2/MatMul  onnx::MatMul_29  sqnr 23.970472 clipped 854
  wo_nbits      /head/MatMul onnx::MatMul_30  sqnr 24.305995 clipped 100
  wo_nbits_sym  /fc1/MatMul  onnx::MatMul_28  sqnr 23.916006 clipped 1119
  wo_nbits_sym  /fc2/MatMul  onnx::MatMul_29  sqnr 23.774075 clipped 1051
  wo_nbits_sym  /head/MatMul onnx::MatMul_30  sqnr 23.782931 clipped 107
  wo_dq4        (the same as wo_nbits)
  wo_nbits_al4  (the same as wo_nbits)
  wo_nbits8     /fc1/MatMul  onnx::MatMul_28  sqnr 48.952181 clipped 603
  wo_nbits8     /fc2/MatMul  onnx::MatMul_29  sqnr 48.654079 clipped 460
  wo_nbits8     /head/MatMul onnx::MatMul_30  sqnr 49.021845 clipped 61
  wo_nbits_fzp  /fc1/MatMul  onnx::MatMul_28  sqnr 24.529831 clipped 1009
  wo_nbits_fzp  /fc2/MatMul  onnx::MatMul_29  sqnr 24.350943 clipped 852
  wo_nbits_fzp  /head/MatMul onnx::MatMul_30  sqnr 24.255150 clipped 93

    /usr/bin/python3 tests/data/make_weightonly_fixtures.py

onnx 1.12 knows neither UINT4 (21) nor opset 21: wo_dq4.onnx's 4-bit
tensors are written by hand, and no model here goes through
onnx.checker. ONNX Runtime 1.30 (onnxruntime-node, graph optimisation
off) runs every candidate and gives, for logits and every MatMul output,
the float model's values with the dequantized weights substituted (the
same bits for all but wo_nbits_fzp, within 3e-7 relative for that one).
"""
import copy
import os

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "activations")
BLOCK = 32
UINT4 = 21  # TensorProto.UINT4, unknown to onnx 1.12


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(72, 96)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(96, 72)
        self.norm = torch.nn.LayerNorm(72)
        self.head = torch.nn.Linear(72, 10)

    def forward(self, x):
        return self.head(self.norm(x + self.fc2(self.act(self.fc1(x)))))


torch.manual_seed(0)
os.makedirs(OUT, exist_ok=True)
path = os.path.join(OUT, "wo_float.onnx")
torch.onnx.export(Net().eval(), torch.randn(1, 16, 72), path,
                  input_names=["x"], output_names=["logits"],
                  opset_version=17, do_constant_folding=True)
fm = onnx.load(path)
inits = {t.name: t for t in fm.graph.initializer}
# the MatMuls whose B is a 2-D float initializer: what the quantizer takes
mms = [n for n in fm.graph.node if n.op_type == "MatMul" and
       n.input[1] in inits and len(inits[n.input[1]].dims) == 2 and
       inits[n.input[1]].data_type == TensorProto.FLOAT]
assert [tuple(inits[n.input[1]].dims) for n in mms] == \
    [(72, 96), (96, 72), (72, 10)], "unexpected export"
assert len([n for n in fm.graph.node if n.op_type == "MatMul"]) == 3


def pack4(codes):
    """Two 4-bit codes a byte, element 0 in the low nibble (odd count:
    the last high nibble 0)."""
    c = np.asarray(codes, np.uint8).reshape(-1)
    if c.size % 2:
        c = np.append(c, np.uint8(0))
    return ((c[0::2] & 0xF) | ((c[1::2] & 0xF) << 4)).astype(np.uint8)


def rtn(w, kind):
    """Blockwise RTN of w [K,N] along K for candidate kind: codes q [K,N]
    (uint8), scales s [k_blocks,N] (float32), zero points zp [k_blocks,N]
    (float32, integer-valued but for "nbits_fzp"; 8 for "nbits_sym")."""
    k, n = w.shape
    kb = (k + BLOCK - 1) // BLOCK
    qmax = 255 if kind == "nbits8" else 15
    q = np.zeros((k, n), np.uint8)
    s = np.zeros((kb, n), np.float32)
    zp = np.full((kb, n), 8, np.float32)
    for b in range(kb):
        blk = w[b * BLOCK:(b + 1) * BLOCK].astype(np.float32)
        if kind == "nbits_sym":
            m = blk[np.abs(blk).argmax(axis=0), np.arange(n)]
            sc = (m / np.float32(-8)).astype(np.float32)
            sc[sc == 0] = 1
            v = np.clip(np.round((blk / sc).astype(np.float32) + 8), 0, 15)
        else:
            lo = np.minimum(blk.min(axis=0), np.float32(0))
            hi = np.maximum(blk.max(axis=0), np.float32(0))
            sc = ((hi - lo) / np.float32(qmax)).astype(np.float32)
            sc[sc == 0] = 1
            if kind == "nbits_fzp":
                zp[b] = (-lo / sc).astype(np.float32)
                v = np.clip(np.round((blk / sc).astype(np.float32) + zp[b]),
                            0, qmax)
            else:
                zp[b] = np.clip(np.round(-lo / sc), 0, qmax)
                v = np.clip(np.round(blk / sc) + zp[b], 0, qmax)
        s[b] = sc
        q[b * BLOCK:(b + 1) * BLOCK] = v.astype(np.uint8)
    return q, s, zp


def dequant(q, s, zp):
    rows = np.arange(q.shape[0]) // BLOCK
    return ((q.astype(np.float32) - zp[rows]) * s[rows]).astype(np.float32)


def sqnr(w, d):
    w = w.astype(np.float64)
    e = ((w - d.astype(np.float64)) ** 2).sum()
    return float("inf") if e == 0 else 10 * np.log10((w ** 2).sum() / e)


def nbits_blob(q, bits):
    """[K,N] codes -> MatMulNBits' B: uint8 [N, k_blocks, 32*bits/8],
    column n's codes blockwise (the last block's padding code 0)."""
    k, n = q.shape
    kb = (k + BLOCK - 1) // BLOCK
    pad = np.zeros((kb * BLOCK, n), np.uint8)
    pad[:k] = q
    if bits == 8:
        return pad.T.reshape(n, kb, BLOCK).copy()
    return pack4(pad.T).reshape(n, kb, BLOCK // 2)


def nbits_zp(zp, bits):
    """[k_blocks,N] zero points -> uint8 [N*ceil(k_blocks*bits/8)], each
    column on a fresh byte; 4-bit: an odd column's unused nibble 8 (ORT's
    default zero point, which its quantizer writes there)."""
    kb, n = zp.shape
    if bits == 8:
        return zp.T.reshape(-1).astype(np.uint8)
    col = np.full((n, (kb + 1) // 2 * 2), 8, np.uint8)
    col[:, :kb] = zp.T
    return pack4(col)


def tensor4(name, dims, codes):
    t = TensorProto()
    t.name = name
    t.data_type = UINT4
    t.dims.extend(dims)
    t.raw_data = pack4(codes).tobytes()
    return t


def quantize(kind):
    """A copy of the float model with every MatMul of mms quantized as
    candidate wo_KIND.onnx. Returns the model and the printed lines."""
    m = copy.deepcopy(fm)
    g = m.graph
    lines = []
    drop = set()
    new_nodes = []
    names = {nd.name for nd in mms}
    bits = 8 if kind == "nbits8" else 4
    qmax = (1 << bits) - 1
    for node in g.node:
        if node.name not in names:
            new_nodes.append(node)
            continue
        wn = node.input[1]
        w = numpy_helper.to_array(inits[wn])
        k, n = w.shape
        kb = (k + BLOCK - 1) // BLOCK
        q, s, zp = rtn(w, kind)
        lines.append("%-13s %-12s %-16s sqnr %.6f clipped %d" % (
            "wo_" + kind, node.name, wn, sqnr(w, dequant(q, s, zp)),
            int(((q == 0) | (q == qmax)).sum())))
        drop.add(wn)
        if kind == "dq4":
            g.initializer.extend([
                tensor4(wn + "_DQ_Q4", [k, n], q),
                numpy_helper.from_array(s, wn + "_DQ_scales"),
                tensor4(wn + "_DQ_zero_points", [kb, n], zp.astype(np.uint8))])
            new_nodes.append(helper.make_node(
                "DequantizeLinear",
                [wn + "_DQ_Q4", wn + "_DQ_scales", wn + "_DQ_zero_points"],
                [wn + "_DQ_Q4_output"], name=node.name + "_DQ_Q4",
                axis=0, block_size=BLOCK))
            new_nodes.append(helper.make_node(
                "MatMul", [node.input[0], wn + "_DQ_Q4_output"],
                [node.output[0]], name=node.name + "_matmul_Q4"))
            continue
        tag = "_Q%d" % bits
        ins = [node.input[0], wn + tag, wn + "_scales"]
        g.initializer.extend([
            numpy_helper.from_array(nbits_blob(q, bits), wn + tag),
            numpy_helper.from_array(s.T.reshape(-1).copy(), wn + "_scales")])
        if kind != "nbits_sym":
            ins.append(wn + "_zero_points")
            z = (zp.T.reshape(-1).copy() if kind == "nbits_fzp" else
                 nbits_zp(zp.astype(np.uint8), bits))
            g.initializer.append(numpy_helper.from_array(
                z, wn + "_zero_points"))
        extra = {"accuracy_level": 4} if kind == "nbits_al4" else {}
        new_nodes.append(helper.make_node(
            "MatMulNBits", ins, [node.output[0]], name=node.name + tag,
            domain="com.microsoft", K=k, N=n, bits=bits, block_size=BLOCK,
            **extra))
    del g.node[:]
    g.node.extend(new_nodes)
    keep = [t for t in g.initializer if t.name not in drop]
    del g.initializer[:]
    g.initializer.extend(keep)
    if kind == "dq4":
        for o in m.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = 21
        m.ir_version = 10
    else:
        m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m, lines


expected = []
for kind in ("nbits", "nbits_sym", "dq4", "nbits8", "nbits_fzp",
             "nbits_al4"):
    qm, lines = quantize(kind)
    onnx.save(qm, os.path.join(OUT, "wo_%s.onnx" % kind))
    expected.extend(lines)
print("\n".join(expected))
