#!/usr/bin/python3
"""Make the fixtures of tests/ort_rnn.sh: two small PyTorch recurrent
classifiers (and one of them as onnxruntime.quantization.quantize_dynamic
writes it) in tests/data/activations/, and single-node models of ONNX RNN,
GRU, LSTM and com.microsoft DynamicQuantizeLSTM in tests/data/ort-ops/rnn/
(a subfolder, so that tests/ort_crosscheck.sh, which runs every
tests/data/ort-ops/*.onnx with one float input x, does not pick them up).

    /usr/bin/python3 tests/data/make_rnn_fixtures.py [--no-check]

Unless --no-check, every model is then run with onnxruntime-node
(tests/ort/node_modules, graph optimisation off, one thread) and compared:
the PyTorch models with PyTorch, lstm_dyn.onnx with lstm_float.onnx
(cosine of the logits), each single-node model with a NumPy reading of the
ONNX spec (float64; DynamicQuantizeLSTM emulated in float32 the way ONNX
Runtime's CPU kernel quantizes, see below). The numbers are printed; the
script fails when one is out of bounds (relative L2 1e-5 for the float
operators, 1e-4 for DynamicQuantizeLSTM, whose emulation uses exact
sigmoid/tanh where ONNX Runtime uses MLAS's approximations, which can move
a rounding of the quantized hidden state).

tests/data/activations/ (seed 0 for PyTorch, 1 for the checks' inputs):

  lstm_float.onnx  a keyword-spotting-like classifier: x float [1,20,12]
                   (batch first) -> nn.LSTM(12, 32) -> nn.LSTM(32, 32,
                   bidirectional) -> Linear(64, 5) on the last step ->
                   logits [1,5]. torch.onnx.export (PyTorch 1.13, opset
                   14) as it writes it: Transpose to [T,B,F]; per LSTM an
                   initial_h and initial_c of zeros made by Shape ->
                   Gather -> Unsqueeze -> Concat -> Expand, LSTM
                   "/lstm1/LSTM" (W [1,128,12], R [1,128,32], B [1,256]
                   initializers "onnx::LSTM_*", outputs
                   /lstm1/LSTM_output_0..2), Squeeze; "/lstm2/LSTM"
                   bidirectional (W [2,128,32]), Transpose -> Reshape ->
                   Transpose to [1,20,64]; Slice of the last step [1,1,64],
                   MatMul "/fc/MatMul" (onnx::MatMul_*) -> Add (fc.bias) ->
                   Squeeze -> logits. LSTM weights are PyTorch's default
                   initialisation times 2 (gates that saturate).
  lstm_dyn.onnx    lstm_float.onnx as quantize_dynamic (default options,
                   weight type int8) writes it: each LSTM becomes
                   com.microsoft DynamicQuantizeLSTM "NAME_quant" with the
                   LSTM's inputs and output names and attributes, inputs
                   X, W_quantized, R_quantized, B, "" (sequence_lens),
                   initial_h, initial_c, "" (P), W_scale, W_zero_point,
                   R_scale, R_zero_point: W and R quantized per direction
                   (quantize_weight_per_channel on axis 0 of the LSTM's
                   [dirs,4H,K]: int8 symmetric, scale 2 max|w| / 254, zero
                   point 0, scale and zero point of shape [dirs]) and then
                   transposed to [dirs,K,4H]. The MatMul becomes
                   DynamicQuantizeLinear "/Slice_output_0_QuantizeLinear"
                   -> MatMulInteger "/fc/MatMul_quant" (int8 per-tensor
                   weight) -> Cast -> Mul by x_scale * w_scale writing
                   "/fc/MatMul_output_0" (the layout of
                   make_activation_fixtures.py's dyn_quant.onnx and
                   make_bert_fixtures.py's bert_opt_dyn.onnx); the Add
                   and the glue stay float. (quantize_dynamic leaves a
                   Gemm float, and PyTorch writes a Linear on the 3-D
                   last step [1,1,64] as MatMul + Add, not Gemm.)
  gru_float.onnx   x float [1,20,12] -> nn.GRU(12, 24, bidirectional) ->
                   Linear(48, 5) on the last step -> logits [1,5];
                   exported the same way (GRU "/gru/GRU" with
                   linear_before_reset 1, as PyTorch's GRU is). No
                   quantized form: ONNX Runtime has no DynamicQuantizeGRU
                   and quantize_dynamic leaves a GRU float.

tests/data/ort-ops/rnn/NAME.onnx, its inputs in NAME/INPUT.npy (seeded;
X, sequence_lens (int32), initial_h and initial_c are graph inputs, W, R,
B, P and DynamicQuantizeLSTM's quantized weights, scales and zero points
initializers; outputs Y, Y_h, Y_c where named). ONNX Runtime's CPU
kernels refuse layout 1 ("Batchwise recurrent operations (layout == 1)
are not supported"), so each layout 1 model has a twin NAME/ort.onnx for
ONNX Runtime: the same node with layout 0 between Transposes ([1,0,2] of
X, initial_h, initial_c; [2,0,1,3] of Y, [1,0,2] of Y_h, Y_c), the same
input and output names.

  LSTM (seq 6, batch 3, input 5, hidden 4, with B unless said):
    lstm_fwd            forward, default activations
    lstm_nobias         forward, no B
    lstm_rev            reverse
    lstm_bidi           bidirectional
    lstm_seqlens        forward, sequence_lens [3,1,6]
    lstm_seqlens_bidi   bidirectional, sequence_lens [3,1,5] (no batch
                        uses step 5: Y is zero there for every batch)
    lstm_seqlens0       forward, sequence_lens [0,4,6], initial_h and
                        initial_c (ONNX Runtime: the empty batch's Y, Y_h
                        and Y_c all zero, not initial_h/initial_c)
    lstm_init           bidirectional, initial_h and initial_c
    lstm_peep           forward, peepholes P [1,12] (i, o, f) and
                        initial_c
    lstm_clip           bidirectional, clip 0.5
    lstm_input_forget   forward, input_forget 1 (f = 1 - i)
    lstm_layout1        bidirectional, layout 1 (X [3,6,5], Y [3,6,2,4],
                        Y_h and Y_c [3,2,4]), initial_h, initial_c and
                        sequence_lens [2,6,4]
    lstm_act            forward, activations HardSigmoid (default alpha
                        0.2, beta 0.5), Tanh, Relu
    lstm_act_ab         bidirectional, activations HardSigmoid,
                        ScaledTanh, Affine, LeakyRelu, Tanh, Softsign with
                        activation_alpha [0.3, 1.2, 0.8, 0.1] and
                        activation_beta [0.4, 0.7, 0.1]: the values are
                        taken in order by the functions that have them
                        (HardSigmoid 0.3/0.4, ScaledTanh 1.2/0.7, Affine
                        0.8/0.1, LeakyRelu 0.1), as ONNX Runtime reads them
    lstm_yh_only        forward, outputs "" and Y_h only
    lstm_yh_seqlens     bidirectional, sequence_lens [3,1,6], outputs "",
                        Y_h, Y_c
  GRU (seq 5, batch 3, input 5, hidden 4, with B unless said):
    gru_fwd             forward, linear_before_reset 0
    gru_nobias          forward, no B
    gru_rev             reverse
    gru_bidi            bidirectional
    gru_lbr1            forward, linear_before_reset 1
    gru_lbr1_bidi       bidirectional, linear_before_reset 1,
                        sequence_lens [5,2,4] and initial_h
    gru_seqlens         bidirectional, sequence_lens [2,5,3]
    gru_init            forward, initial_h
    gru_layout1         bidirectional, layout 1, initial_h
    gru_act             bidirectional, activations HardSigmoid, Relu,
                        Sigmoid, Softsign
    gru_clip            forward, clip 0.7
    gru_yh_only         reverse, sequence_lens [4,1,5], outputs "", Y_h
  RNN (seq 5, batch 3, input 5, hidden 4):
    rnn_fwd             forward, Tanh
    rnn_relu            forward, activations Relu
    rnn_bidi            bidirectional
    rnn_seqlens         bidirectional, sequence_lens [5,3,1]
    rnn_init            reverse, initial_h, no B
    rnn_layout1         forward, layout 1, sequence_lens [4,5,2]
    rnn_clip            bidirectional, activations LeakyRelu (alpha 0.2)
                        and Tanh, clip 0.8
  DynamicQuantizeLSTM (seq 6, batch 3, input 5, hidden 4; weights drawn
  as integer codes, W [dirs,5,16] and R [dirs,4,16]; B float):
    dqlstm_fwd          int8, scales and zero points (0) of shape [1]
    dqlstm_bidi         int8, bidirectional, scales [2]
    dqlstm_col          int8, bidirectional, W_scale and R_scale [2,16]
                        per column, zero points [2,16] of zeros
    dqlstm_u8           uint8, bidirectional, zero points W [131,119] and
                        R [125,140] per direction
    dqlstm_u8_col       uint8, forward, per-column scales [1,16], zero
                        points [1,16] all 128 (ONNX Runtime wants them
                        constant: "Weight point must be constant")
    dqlstm_full         int8, bidirectional, sequence_lens [3,1,5],
                        initial_h, initial_c, peepholes P [2,12]
    dqlstm_seqlens      int8, forward, sequence_lens [2,6,3], outputs Y,
                        Y_h, Y_c
    dqlstm_seqlens_yh   the same model and inputs with outputs "", Y_h,
                        Y_c: the results differ (see below)

How ONNX Runtime's CPU DynamicQuantizeLSTM computes (as the emulation
here does, and as its numbers confirm): per direction, X's rows of steps
0 .. max(sequence_lens)-1 (all batches) are quantized at once to uint8
(asymmetric, min and max over those rows widened to include 0, scale
(max-min)/255, zero point round-half-even(-min/scale)) and multiplied by
the weight codes minus their zero point in int32; then at each step the
previous hidden state of all batches [batch, hidden] is quantized the
same way (one scale per step and direction) and multiplied by R; each
product is scaled by x_scale * w_scale (per tensor or per column) in
float and summed with the other and the bias Wb + Rb. Finished batches
(step >= their length) are skipped; their row of that previous hidden
state is 0 when Y is an output (the row of Y just written) but keeps its
last hidden state when Y is not (ONNX Runtime then steps through Y_h's
buffer), so it still widens the range of the step's quantization:
dqlstm_seqlens and dqlstm_seqlens_yh give different Y_h for the same
inputs.
"""
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_bert_fixtures as bert  # noqa: E402
from make_bert_fixtures import Ort, rel, sym_int8, vi  # noqa: E402

ACT = os.path.join(HERE, "activations")
OPS = os.path.join(HERE, "ort-ops", "rnn")
F = TensorProto.FLOAT
MS = "com.microsoft"
T_KWS, F_KWS, CLASSES = 20, 12, 5


# ------------------------------------------------------ PyTorch models
class KWS(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTM(F_KWS, 32, batch_first=True)
        self.lstm2 = nn.LSTM(32, 32, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(64, CLASSES)

    def forward(self, x):
        y, _ = self.lstm1(x)
        y, _ = self.lstm2(y)
        return self.fc(y[:, -1:, :]).squeeze(1)


class GRUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(F_KWS, 24, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(48, CLASSES)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.fc(y[:, -1:, :]).squeeze(1)


def export(model, name):
    x = torch.randn(1, T_KWS, F_KWS)
    path = os.path.join(ACT, name)
    torch.onnx.export(model, x, path, input_names=["x"], output_names=["logits"],
                      opset_version=14)
    m = onnx.load(path)
    m.producer_name, m.producer_version = "qreport-fixtures", "1"
    onnx.save(m, path)


def make_torch():
    torch.manual_seed(0)
    kws = KWS().eval()
    with torch.no_grad():
        for name, p in kws.named_parameters():
            if name.startswith("lstm") and "weight" in name:
                p.mul_(2)
    export(kws, "lstm_float.onnx")
    gru = GRUNet().eval()
    with torch.no_grad():
        for name, p in gru.named_parameters():
            if name.startswith("gru") and "weight" in name:
                p.mul_(2)
    export(gru, "gru_float.onnx")
    return kws, gru


def make_lstm_dyn():
    """lstm_float.onnx as quantize_dynamic writes it (see the docstring)."""
    fm = onnx.load(os.path.join(ACT, "lstm_float.onnx"))
    g = fm.graph
    inits = {t.name: t for t in g.initializer}
    new_inits = []
    nodes = []

    def quant_dirs(w):
        a = numpy_helper.to_array(inits.pop(w))
        qs, ss = zip(*(sym_int8(a[d]) for d in range(a.shape[0])))
        q = np.ascontiguousarray(np.stack(qs).transpose(0, 2, 1))
        new_inits.extend([
            numpy_helper.from_array(q, w + "_quantized"),
            numpy_helper.from_array(np.array(ss, np.float32), w + "_scale"),
            numpy_helper.from_array(np.zeros(len(ss), np.int8), w + "_zero_point")])
        return w + "_quantized", w + "_scale", w + "_zero_point"

    for n in g.node:
        if n.op_type == "LSTM":
            wq, ws, wz = quant_dirs(n.input[1])
            rq, rs, rz = quant_dirs(n.input[2])
            ins = list(n.input) + [""] * (8 - len(n.input))
            q = helper.make_node("DynamicQuantizeLSTM",
                                 [ins[0], wq, rq] + ins[3:8] + [ws, wz, rs, rz],
                                 list(n.output), name=n.name + "_quant", domain=MS)
            q.attribute.extend(n.attribute)
            nodes.append(q)
        elif n.op_type == "MatMul":
            x, w = n.input[0], n.input[1]
            nodes.append(helper.make_node(
                "DynamicQuantizeLinear", [x], [x + "_quantized", x + "_scale", x + "_zero_point"],
                name=x + "_QuantizeLinear"))
            new_inits.extend(bert.int8_weight(w, numpy_helper.to_array(inits.pop(w))))
            nodes += bert.matmul_integer(n, x + "_quantized", x + "_scale", x + "_zero_point",
                                         w + "_quantized", w + "_scale", w + "_zero_point")
        else:
            nodes.append(n)
    qg = helper.make_graph(nodes, g.name, list(g.input), list(g.output),
                           list(inits.values()) + new_inits)
    m = helper.make_model(qg, opset_imports=list(fm.opset_import) + [helper.make_opsetid(MS, 1)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = fm.ir_version
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(ACT, "lstm_dyn.onnx"))


# ------------------------------------------------ the NumPy references
def act(name, x, alpha, beta):
    n = name.lower()
    if n == "sigmoid":
        return 1 / (1 + np.exp(-x))
    if n == "tanh":
        return np.tanh(x)
    if n == "relu":
        return np.maximum(x, 0)
    if n == "hardsigmoid":
        return np.clip(alpha * x + beta, 0, 1)
    if n == "scaledtanh":
        return alpha * np.tanh(beta * x)
    if n == "affine":
        return alpha * x + beta
    if n == "leakyrelu":
        return np.where(x >= 0, x, alpha * x)
    if n == "softsign":
        return x / (1 + np.abs(x))
    raise ValueError(name)


# which activations take alpha, beta; ONNX Runtime's defaults when missing
NEEDS = {"hardsigmoid": (True, True, 0.2, 0.5), "scaledtanh": (True, True, 0, 0),
         "affine": (True, True, 0, 0), "leakyrelu": (True, False, 0.01, 0),
         "sigmoid": (False, False, 0, 0), "tanh": (False, False, 0, 0),
         "relu": (False, False, 0, 0), "softsign": (False, False, 0, 0)}
DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def activations(kind, ndir, attrs):
    names = attrs.get("activations", DEFAULT_ACTS[kind] * ndir)
    alphas = list(attrs.get("activation_alpha", []))
    betas = list(attrs.get("activation_beta", []))
    out = []
    for n in names:
        na, nb, da, db = NEEDS[n.lower()]
        a = alphas.pop(0) if na and alphas else da
        b = betas.pop(0) if nb and betas else db
        out.append((n, a, b))
    per = len(out) // ndir
    return [out[d * per:(d + 1) * per] for d in range(ndir)]


def rnn_ref(kind, X, W, R, B, lens, h0, c0, P, attrs):
    """RNN, GRU or LSTM as the ONNX spec reads (float64), with ONNX
    Runtime's handling of sequence_lens: Y zero past a batch's length, Y_h
    and Y_c the state after its last step (zero for a length of 0)."""
    layout = attrs.get("layout", 0)
    X = np.asarray(X, np.float64)
    if layout:
        X = X.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    T, NB, _ = X.shape
    ndir, G, H = W.shape[0], W.shape[1] // attrs["hidden_size"], attrs["hidden_size"]
    lens = np.full(NB, T) if lens is None else lens
    clip = attrs.get("clip")
    acts = activations(kind, ndir, attrs)
    Y = np.zeros((T, ndir, NB, H))
    Yh = np.zeros((ndir, NB, H))
    Yc = np.zeros((ndir, NB, H))
    rev = attrs.get("direction", "forward") == "reverse"

    def cl(v):
        return v if clip is None else np.clip(v, -clip, clip)

    for d in range(ndir):
        Wd, Rd = W[d].astype(np.float64), R[d].astype(np.float64)
        Wb = B[d, :G * H] if B is not None else np.zeros(G * H)
        Rb = B[d, G * H:] if B is not None else np.zeros(G * H)
        f = acts[d]
        for b in range(NB):
            h = np.zeros(H) if h0 is None else h0[d, b].astype(np.float64)
            c = np.zeros(H) if c0 is None else c0[d, b].astype(np.float64)
            L = int(lens[b])
            steps = range(L - 1, -1, -1) if (rev or d == 1) else range(L)
            for t in steps:
                gx = Wd @ X[t, b] + Wb
                gh = Rd @ h + Rb
                if kind == "RNN":
                    h = act(*f[0][:1], cl(gx + gh), *f[0][1:])
                elif kind == "GRU":
                    z = act(f[0][0], cl(gx[:H] + gh[:H]), *f[0][1:])
                    r = act(f[0][0], cl(gx[H:2 * H] + gh[H:2 * H]), *f[0][1:])
                    if attrs.get("linear_before_reset", 0):
                        hh = gx[2 * H:] + r * gh[2 * H:]
                    else:
                        hh = gx[2 * H:] + Rd[2 * H:] @ (r * h) + Rb[2 * H:]
                    hh = act(f[1][0], cl(hh), *f[1][1:])
                    h = (1 - z) * hh + z * h
                else:
                    g = gx + gh
                    p = np.zeros(3 * H) if P is None else P[d].astype(np.float64)
                    i = act(f[0][0], cl(g[:H] + p[:H] * c), *f[0][1:])
                    if attrs.get("input_forget", 0):
                        fg = 1 - i
                    else:
                        fg = act(f[0][0], cl(g[2 * H:3 * H] + p[2 * H:] * c), *f[0][1:])
                    cc = act(f[1][0], cl(g[3 * H:]), *f[1][1:])
                    c = fg * c + i * cc
                    o = act(f[0][0], cl(g[H:2 * H] + p[H:2 * H] * c), *f[0][1:])
                    h = o * act(f[2][0], c, *f[2][1:])
                Y[t, d, b] = h
            Yh[d, b] = h if L else 0
            Yc[d, b] = c if L else 0
    if layout:
        return {"Y": Y.transpose(2, 0, 1, 3), "Y_h": Yh.transpose(1, 0, 2),
                "Y_c": Yc.transpose(1, 0, 2)}
    return {"Y": Y, "Y_h": Yh, "Y_c": Yc}


def f32(x):
    return np.asarray(x, np.float32)


def qparams(a):
    """ONNX Runtime's GetQuantizationParameter (uint8, float32)."""
    lo = min(np.float32(a.min()), np.float32(0))
    hi = max(np.float32(a.max()), np.float32(0))
    s = np.float32(1) if hi == lo else np.float32((hi - lo) / np.float32(255))
    z = np.float32(np.clip(np.float32(0) - lo / s, 0, 255))
    return s, int(np.rint(z))


def quant(a, s, z):
    return np.clip(np.rint(f32(a) / s) + z, 0, 255).astype(np.int64)


def dqlstm_ref(X, Wq, Rq, B, lens, h0, c0, P, ws, wz, rs, rz, attrs, want_y):
    """ONNX Runtime's CPU DynamicQuantizeLSTM emulated in float32 (layout
    0; see the docstring)."""
    T, NB, _ = X.shape
    ndir, H = Wq.shape[0], attrs["hidden_size"]
    lens = np.full(NB, T) if lens is None else np.asarray(lens)
    maxlen, minlen = int(lens.max()), min(T, int(lens.min()))
    Y = np.zeros((T, ndir, NB, H), np.float32)
    Yh = np.zeros((ndir, NB, H), np.float32)
    Yc = np.zeros((ndir, NB, H), np.float32)
    sig = lambda v: f32(1 / (1 + np.exp(-v.astype(np.float64))))  # noqa: E731
    th = lambda v: f32(np.tanh(v.astype(np.float64)))  # noqa: E731
    for d in range(ndir):
        rev = attrs.get("direction", "forward") == "reverse" or d == 1
        wzd = int(np.asarray(wz[d]).ravel()[0])
        rzd = int(np.asarray(rz[d]).ravel()[0])
        Wd = Wq[d].astype(np.int64) - wzd
        Rd = Rq[d].astype(np.int64) - rzd
        x = X.copy()
        if rev:
            for b in range(NB):
                x[:lens[b], b] = X[:lens[b], b][::-1]
        xa = x[:maxlen].reshape(-1, x.shape[2])
        s, z = qparams(xa)
        gx = ((quant(xa, s, z) - z) @ Wd).astype(np.float32) * (s * f32(ws[d]))
        gx = gx.reshape(maxlen, NB, 4 * H)
        bias = (f32(B[d, :4 * H]) + f32(B[d, 4 * H:])) if B is not None else \
            np.zeros(4 * H, np.float32)
        p = f32(P[d]) if P is not None else None
        hprev = f32(h0[d]) if h0 is not None else np.zeros((NB, H), np.float32)
        c = f32(c0[d]).copy() if c0 is not None else np.zeros((NB, H), np.float32)
        ybuf = np.zeros((T, NB, H), np.float32)
        yh = np.zeros((NB, H), np.float32)
        for t in range(maxlen):
            s, z = qparams(hprev)
            g = gx[t] + ((quant(hprev, s, z) - z) @ Rd).astype(np.float32) * (s * f32(rs[d]))
            out = ybuf[t] if want_y else yh
            for b in range(NB):
                if t >= minlen and t >= lens[b]:
                    if want_y:
                        out[b] = 0
                    continue
                gi, go, gf, gc = (g[b, k * H:(k + 1) * H].copy() for k in range(4))
                if p is not None:
                    gi += c[b] * p[:H]
                i = sig(gi + bias[:H])
                if attrs.get("input_forget", 0):
                    fg = np.float32(1) - i
                else:
                    if p is not None:
                        gf += c[b] * p[2 * H:]
                    fg = sig(gf + bias[2 * H:3 * H])
                cc = th(gc + bias[3 * H:])
                c[b] = c[b] * fg + i * cc
                if p is not None:
                    go += c[b] * p[H:2 * H]
                o = sig(go + bias[H:2 * H])
                out[b] = th(c[b]) * o
                if t + 1 == lens[b]:
                    Yc[d, b] = c[b]
            hprev = out.copy()
        for b in range(NB):
            L = int(lens[b])
            if want_y:
                Yh[d, b] = ybuf[L - 1, b] if L else 0
                steps = ybuf[:L, b][::-1] if rev else ybuf[:L, b]
                Y[:L, d, b] = steps
            else:
                Yh[d, b] = yh[b]
    return {"Y": Y, "Y_h": Yh, "Y_c": Yc}


# ------------------------------------------------- single-node models
CASES = []   # (name, feeds, reference outputs {name: array}, bound)


def save_model(name, nodes, inputs, outputs, inits):
    bert.save_model(name, nodes, inputs, outputs, inits, folder=OPS)


def save_inputs(name, feeds):
    bert.save_inputs(name, feeds, folder=OPS)


def save_twin(name, node, feeds, node_outs, shapes, inits):
    """NAME/ort.onnx: the layout 1 model as ONNX Runtime can run it (its
    CPU kernels refuse layout 1): the same node with layout 0 between
    Transposes, the same input and output names."""
    tw = helper.make_node(node.op_type, [], [], name=node.name, domain=node.domain)
    tw.attribute.extend(a for a in node.attribute if a.name != "layout")
    nodes = []
    for k, t in enumerate(node.input):
        if t in ("X", "initial_h", "initial_c"):
            nodes.append(helper.make_node("Transpose", [t], [t + "_t"], name=t + "_t",
                                          perm=[1, 0, 2]))
            t += "_t"
        tw.input.append(t)
    nodes.append(tw)
    for t in node_outs:
        tw.output.append(t + "_t" if t else "")
        if t:
            perm = [2, 0, 1, 3] if t == "Y" else [1, 0, 2]
            nodes.append(helper.make_node("Transpose", [t + "_t"], [t], name=t + "_t",
                                          perm=perm))
    g = helper.make_graph(nodes, name + "_ort", [vi(k, v) for k, v in feeds.items()],
                          [helper.make_tensor_value_info(o, F, list(shapes[o]))
                           for o in node_outs if o], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14),
                                            helper.make_opsetid(MS, 1)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OPS, name, "ort.onnx"))


def rnn_case(kind, name, rng, T, NB, I, H, direction="forward", bias=True, lens=None,
             init_h=False, init_c=False, peep=False, outs=("Y", "Y_h", "Y_c"), dq=None,
             **attrs):
    """One single-node model. dq: None for RNN/GRU/LSTM, else a dict for
    DynamicQuantizeLSTM (wtype "int8"/"uint8", per_col, wz, rz)."""
    ndir = 2 if direction == "bidirectional" else 1
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    layout = attrs.get("layout", 0)
    if kind == "RNN":
        outs = tuple(o for o in outs if o != "Y_c")
    X = rng.randn(*((NB, T, I) if layout else (T, NB, I))).astype(np.float32)
    feeds = {"X": X}
    inits = []
    ws = wz = rs = rz = None
    if dq is None:
        W = (0.6 * rng.randn(ndir, G * H, I)).astype(np.float32)
        R = (0.6 * rng.randn(ndir, G * H, H)).astype(np.float32)
        inits += [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R")]
    else:
        per_col = dq.get("per_col", False)
        shape = (ndir, G * H) if per_col else (ndir,)
        if dq["wtype"] == "int8":
            W = rng.randint(-127, 128, (ndir, I, G * H)).astype(np.int8)
            R = rng.randint(-127, 128, (ndir, H, G * H)).astype(np.int8)
            wz = np.zeros(shape, np.int8)
            rz = np.zeros(shape, np.int8)
        else:
            W = rng.randint(0, 256, (ndir, I, G * H)).astype(np.uint8)
            R = rng.randint(0, 256, (ndir, H, G * H)).astype(np.uint8)
            wz = np.broadcast_to(np.asarray(dq["wz"], np.uint8).reshape(
                (ndir, 1) if per_col else (ndir,)), shape).copy()
            rz = np.broadcast_to(np.asarray(dq["rz"], np.uint8).reshape(
                (ndir, 1) if per_col else (ndir,)), shape).copy()
        ws = (0.006 * (1 + rng.rand(*shape))).astype(np.float32)
        rs = (0.006 * (1 + rng.rand(*shape))).astype(np.float32)
        inits += [numpy_helper.from_array(W, "W_quantized"),
                  numpy_helper.from_array(R, "R_quantized")]
    ins = ["X", "W_quantized" if dq else "W", "R_quantized" if dq else "R"]
    Bv = None
    if bias:
        Bv = (0.3 * rng.randn(ndir, 2 * G * H)).astype(np.float32)
        inits.append(numpy_helper.from_array(Bv, "B"))
        ins.append("B")
    else:
        ins.append("")
    if lens is not None:
        feeds["sequence_lens"] = np.asarray(lens, np.int32)
        ins.append("sequence_lens")
    else:
        ins.append("")
    hshape = (NB, ndir, H) if layout else (ndir, NB, H)
    h0 = c0 = Pv = None
    if init_h:
        h0 = (0.5 * rng.randn(*hshape)).astype(np.float32)
        feeds["initial_h"] = h0
        ins.append("initial_h")
    else:
        ins.append("")
    if kind == "LSTM":
        if init_c:
            c0 = (0.5 * rng.randn(*hshape)).astype(np.float32)
            feeds["initial_c"] = c0
            ins.append("initial_c")
        else:
            ins.append("")
        if peep:
            Pv = (0.5 * rng.randn(ndir, 3 * H)).astype(np.float32)
            inits.append(numpy_helper.from_array(Pv, "P"))
            ins.append("P")
        else:
            ins.append("")
    if dq is not None:
        inits += [numpy_helper.from_array(ws, "W_scale"), numpy_helper.from_array(wz, "W_zero_point"),
                  numpy_helper.from_array(rs, "R_scale"), numpy_helper.from_array(rz, "R_zero_point")]
        ins += ["W_scale", "W_zero_point", "R_scale", "R_zero_point"]
    while ins and ins[-1] == "":
        ins.pop()
    node_outs = [o if o in outs else "" for o in ("Y", "Y_h", "Y_c")[:(3 if kind == "LSTM" else 2)]]
    while node_outs[-1] == "":
        node_outs.pop()
    op = "DynamicQuantizeLSTM" if dq is not None else kind
    nattrs = dict(attrs, hidden_size=H)
    if direction != "forward":
        nattrs["direction"] = direction
    nodes = [helper.make_node(op, ins, node_outs, name=name, domain=MS if dq else "", **nattrs)]
    yshape = (NB, T, ndir, H) if layout else (T, ndir, NB, H)
    shapes = {"Y": yshape, "Y_h": hshape, "Y_c": hshape}
    save_model(name, nodes, [vi(k, v) for k, v in feeds.items()],
               [helper.make_tensor_value_info(o, F, list(shapes[o])) for o in node_outs if o],
               inits)
    save_inputs(name, feeds)
    if layout:
        save_twin(name, nodes[0], feeds, node_outs, shapes, inits)
    nattrs["direction"] = direction
    if dq is None:
        ref = rnn_ref(kind, X, W, R, Bv, lens, h0, c0, Pv, nattrs)
        bound = 1e-5
    else:
        ref = dqlstm_ref(X, W, R, Bv, lens, h0, c0, Pv, ws, wz, rs, rz, nattrs,
                         "Y" in node_outs)
        bound = 1e-4
    CASES.append((name, feeds, {o: ref[o] for o in node_outs if o}, bound))


def make_lstm():
    rng = np.random.RandomState(40)
    c = dict(T=6, NB=3, I=5, H=4)
    rnn_case("LSTM", "lstm_fwd", rng, **c)
    rnn_case("LSTM", "lstm_nobias", rng, bias=False, **c)
    rnn_case("LSTM", "lstm_rev", rng, direction="reverse", **c)
    rnn_case("LSTM", "lstm_bidi", rng, direction="bidirectional", **c)
    rnn_case("LSTM", "lstm_seqlens", rng, lens=[3, 1, 6], **c)
    rnn_case("LSTM", "lstm_seqlens_bidi", rng, direction="bidirectional", lens=[3, 1, 5], **c)
    rnn_case("LSTM", "lstm_seqlens0", rng, lens=[0, 4, 6], init_h=True, init_c=True, **c)
    rnn_case("LSTM", "lstm_init", rng, direction="bidirectional", init_h=True, init_c=True,
             **c)
    rnn_case("LSTM", "lstm_peep", rng, peep=True, init_c=True, **c)
    rnn_case("LSTM", "lstm_clip", rng, direction="bidirectional", clip=0.5, **c)
    rnn_case("LSTM", "lstm_input_forget", rng, input_forget=1, **c)
    rnn_case("LSTM", "lstm_layout1", rng, direction="bidirectional", layout=1, init_h=True,
             init_c=True, lens=[2, 6, 4], **c)
    rnn_case("LSTM", "lstm_act", rng, activations=["HardSigmoid", "Tanh", "Relu"], **c)
    rnn_case("LSTM", "lstm_act_ab", rng, direction="bidirectional",
             activations=["HardSigmoid", "ScaledTanh", "Affine", "LeakyRelu", "Tanh",
                          "Softsign"],
             activation_alpha=[0.3, 1.2, 0.8, 0.1], activation_beta=[0.4, 0.7, 0.1], **c)
    rnn_case("LSTM", "lstm_yh_only", rng, outs=("Y_h",), **c)
    rnn_case("LSTM", "lstm_yh_seqlens", rng, direction="bidirectional", lens=[3, 1, 6],
             outs=("Y_h", "Y_c"), **c)


def make_gru():
    rng = np.random.RandomState(50)
    c = dict(T=5, NB=3, I=5, H=4)
    rnn_case("GRU", "gru_fwd", rng, **c)
    rnn_case("GRU", "gru_nobias", rng, bias=False, **c)
    rnn_case("GRU", "gru_rev", rng, direction="reverse", **c)
    rnn_case("GRU", "gru_bidi", rng, direction="bidirectional", **c)
    rnn_case("GRU", "gru_lbr1", rng, linear_before_reset=1, **c)
    rnn_case("GRU", "gru_lbr1_bidi", rng, direction="bidirectional", linear_before_reset=1,
             lens=[5, 2, 4], init_h=True, **c)
    rnn_case("GRU", "gru_seqlens", rng, direction="bidirectional", lens=[2, 5, 3], **c)
    rnn_case("GRU", "gru_init", rng, init_h=True, **c)
    rnn_case("GRU", "gru_layout1", rng, direction="bidirectional", layout=1, init_h=True, **c)
    rnn_case("GRU", "gru_act", rng, direction="bidirectional",
             activations=["HardSigmoid", "Relu", "Sigmoid", "Softsign"], **c)
    rnn_case("GRU", "gru_clip", rng, clip=0.7, **c)
    rnn_case("GRU", "gru_yh_only", rng, direction="reverse", lens=[4, 1, 5], outs=("Y_h",), **c)


def make_rnn():
    rng = np.random.RandomState(60)
    c = dict(T=5, NB=3, I=5, H=4)
    rnn_case("RNN", "rnn_fwd", rng, **c)
    rnn_case("RNN", "rnn_relu", rng, activations=["Relu"], **c)
    rnn_case("RNN", "rnn_bidi", rng, direction="bidirectional", **c)
    rnn_case("RNN", "rnn_seqlens", rng, direction="bidirectional", lens=[5, 3, 1], **c)
    rnn_case("RNN", "rnn_init", rng, direction="reverse", init_h=True, bias=False, **c)
    rnn_case("RNN", "rnn_layout1", rng, layout=1, lens=[4, 5, 2], **c)
    rnn_case("RNN", "rnn_clip", rng, direction="bidirectional",
             activations=["LeakyRelu", "Tanh"], activation_alpha=[0.2], clip=0.8, **c)


def make_dqlstm():
    rng = np.random.RandomState(70)
    c = dict(T=6, NB=3, I=5, H=4)
    rnn_case("LSTM", "dqlstm_fwd", rng, dq={"wtype": "int8"}, **c)
    rnn_case("LSTM", "dqlstm_bidi", rng, direction="bidirectional", dq={"wtype": "int8"}, **c)
    rnn_case("LSTM", "dqlstm_col", rng, direction="bidirectional",
             dq={"wtype": "int8", "per_col": True}, **c)
    rnn_case("LSTM", "dqlstm_u8", rng, direction="bidirectional",
             dq={"wtype": "uint8", "wz": [131, 119], "rz": [125, 140]}, **c)
    rnn_case("LSTM", "dqlstm_u8_col", rng,
             dq={"wtype": "uint8", "per_col": True, "wz": [128], "rz": [128]}, **c)
    rnn_case("LSTM", "dqlstm_full", rng, direction="bidirectional", dq={"wtype": "int8"},
             lens=[3, 1, 5], init_h=True, init_c=True, peep=True, **c)
    st = rng.get_state()
    rnn_case("LSTM", "dqlstm_seqlens", rng, dq={"wtype": "int8"}, lens=[2, 6, 3], **c)
    rng.set_state(st)
    rnn_case("LSTM", "dqlstm_seqlens_yh", rng, dq={"wtype": "int8"}, lens=[2, 6, 3],
             outs=("Y_h", "Y_c"), **c)


# ---------------------------------------------------------- the checks
def samples(n, seed):
    rng = np.random.RandomState(seed)
    return [rng.randn(1, T_KWS, F_KWS).astype(np.float32) for _ in range(n)]


def check(kws, gru):
    ort = Ort()
    bad = 0
    try:
        cos = []
        worst = 0.0
        for i, x in enumerate(samples(6, 1)):
            with torch.no_grad():
                rk = kws(torch.from_numpy(x)).numpy()
                rg = gru(torch.from_numpy(x)).numpy()
            lf = ort.run(os.path.join(ACT, "lstm_float.onnx"), {"x": x})["logits"]
            lq = ort.run(os.path.join(ACT, "lstm_dyn.onnx"), {"x": x})["logits"]
            lg = ort.run(os.path.join(ACT, "gru_float.onnx"), {"x": x})["logits"]
            c = float(np.dot(lq.ravel(), lf.ravel()) / np.linalg.norm(lq) / np.linalg.norm(lf))
            cos.append(c)
            r1, r2 = rel(lf, rk), rel(lg, rg)
            worst = max(worst, r1, r2)
            print("sample %d: rel L2 vs PyTorch lstm_float %.2e gru_float %.2e; lstm_dyn "
                  "logits cosine %.6f, rel L2 %.2e" % (i, r1, r2, c, rel(lq, lf)))
            bad += max(r1, r2) > 1e-4 or c < 0.99
        print("lstm_float, gru_float: worst relative L2 of the logits vs PyTorch %.2e (bound "
              "1e-4); lstm_dyn: cosine min %.6f mean %.6f (bound 0.99)"
              % (worst, min(cos), sum(cos) / len(cos)))
        for name, feeds, ref, bound in CASES:
            model = os.path.join(OPS, name + ".onnx")
            if os.path.exists(os.path.join(OPS, name, "ort.onnx")):
                model = os.path.join(OPS, name, "ort.onnx")
            try:
                out = ort.run(model, feeds)
            except RuntimeError as e:
                print("%s: %s" % (name, e))
                bad += 1
                continue
            msg = []
            for k, v in ref.items():
                e = rel(out[k], v)
                msg.append("%s rel L2 %.2e" % (k, e))
                bad += not e <= bound
            print("%s: ONNX Runtime vs NumPy (bound %g): %s" % (name, bound, ", ".join(msg)))
    finally:
        ort.close()
    return bad


def main():
    os.makedirs(OPS, exist_ok=True)
    kws, gru = make_torch()
    make_lstm_dyn()
    make_lstm()
    make_gru()
    make_rnn()
    make_dqlstm()
    if "--no-check" in sys.argv[1:]:
        return 0
    bad = check(kws, gru)
    if bad:
        print("%d check(s) failed" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
