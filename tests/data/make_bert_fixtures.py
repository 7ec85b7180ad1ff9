#!/usr/bin/python3
"""Make the fixtures of tests/ort_attention.sh: a small BERT in three forms
(tests/data/activations/) and single-node models of ONNX Runtime's
com.microsoft Attention, QAttention and EmbedLayerNormalization
(tests/data/ort-ops/attention/, a subfolder so that tests/ort_crosscheck.sh,
which runs every tests/data/ort-ops/*.onnx with one float input x, does
not pick them up).

    /usr/bin/python3 tests/data/make_bert_fixtures.py [--no-check]

Unless --no-check, every model is then run with onnxruntime-node
(tests/ort/node_modules, graph optimisation off) and compared: the BERT's
three forms with PyTorch and with each other, each single-node model with
a NumPy reading of ONNX Runtime's contrib-op spec (the numbers are
printed; the script fails when one is out of bounds).

tests/data/activations/ (seed 0 for PyTorch, 1 for the checks' inputs):

  bert_float.onnx    a BERT written the way HuggingFace's BertModel is:
                     word (vocab 100), position (32) and token-type (2)
                     embeddings summed, LayerNorm (eps 1e-12); 2 layers of
                     self-attention (query/key/value Linear, 4 heads of
                     16, q k^T / sqrt(16) + the extended attention mask
                     (1 - mask) * -10000, softmax, context, output Linear,
                     residual LayerNorm) and feed-forward (Linear 64->256,
                     GELU (erf), Linear 256->64, residual LayerNorm); a
                     classifier Linear(64, 3) on token 0.
                     torch.onnx.export, opset 14, inputs input_ids,
                     attention_mask, token_type_ids int64 [1,16], output
                     logits [1,3]
  bert_opt.onnx      the same weights as ONNX Runtime's BERT optimiser
                     (onnxruntime.transformers.optimizer) writes the model
                     (opset 14, com.microsoft 1): the int64 inputs Cast to
                     int32 (input_ids_int32, ...), EmbedLayerNormalization
                     "embeddings" -> embeddings_out, mask_index; per layer
                     L: Attention "layerL_attention" (qkv weight [64,192]
                     = [Wq^T | Wk^T | Wv^T], bias [192], mask_index,
                     num_heads 4) -> layerL_attention_out, MatMul by Wo^T
                     -> layerL_attention_output_matmul_out,
                     SkipLayerNormalization (residual, gamma, beta, bias
                     bo; epsilon 1e-12) -> layerL_attention_ln_out, MatMul
                     -> layerL_intermediate_matmul_out, BiasGelu ->
                     layerL_intermediate_gelu_out, MatMul ->
                     layerL_output_matmul_out, SkipLayerNormalization ->
                     layerL_output_ln_out; Gather (token 0, axis 1) ->
                     cls_token, Gemm (transB) -> logits
  bert_opt_dyn.onnx  bert_opt.onnx dynamically quantized as
                     onnxruntime.quantization.quantize_dynamic (default
                     options: int8 symmetric per-tensor weights, zero
                     point 0, scale max|w| / 127) writes it: each
                     Attention becomes DynamicQuantizeLinear of its input
                     (X_quantized, X_scale, X_zero_point; node
                     X_QuantizeLinear) -> QAttention "layerL_attention_quant"
                     (inputs X_quantized, W_quantized, bias, X_scale,
                     W_scale, mask_index, X_zero_point, W_zero_point)
                     writing the Attention's output name; each MatMul
                     DynamicQuantizeLinear -> MatMulInteger
                     (OUT_output_quantized) -> Cast
                     (OUT_output_quantized_cast_output) -> Mul by
                     X_scale * W_scale writing the MatMul's output name
                     (the layout of make_activation_fixtures.py's
                     dyn_quant.onnx). EmbedLayerNormalization,
                     SkipLayerNormalization, BiasGelu, Gather and Gemm
                     stay float.

tests/data/ort-ops/attention/NAME.onnx, its inputs in NAME/INPUT.npy
(seeded per model; weights and biases are initializers; B 2, S 8):

  Attention (input [2,8,16], weights [16,96], bias [96], 4 heads of 8
  unless said):
    att_nomask        no mask_index
    att_mask1d        mask_index [2] = [5, 8] (right padding: keys >= end
                      are masked)
    att_mask1d_2b     mask_index [4] = ends [8, 7] then starts [3, 1]
                      (left padding, and one right-padded key)
    att_mask2d        raw mask [2,8] of 0/1 with holes, mask_filter_value
                      -50 (so masked keys keep some weight: the filter
                      value is added, not substituted)
    att_mask3d        raw mask [2,8,8] of 0/1, every row with a 1
    att_unidir        unidirectional 1, no mask
    att_unidir_mask1d unidirectional 1 and mask_index [2] = [6, 8]
    att_scale         scale 0.3 with mask_index [2] = [8, 4]
    att_qkv_sizes     qkv_hidden_sizes [32, 32, 16] (head sizes 8 and 4),
                      input [2,8,24], weights [24,80], output [2,8,16]
    att_bias          attention_bias [1,4,8,8] (input 5; past "" ) and
                      mask_index [2] = [7, 8]
    att_bias_b1       attention_bias [2,1,8,8] (broadcast over heads)
  QAttention (hidden 32, 4 heads; input uint8 [2,8,16], bias float [96],
  input_scale and input_zero_point scalars):
    qatt_u8s8         int8 weights, per-tensor scale, zero points 137 and
                      0, no mask
    qatt_u8s8_mask    the same with mask_index [2] = [5, 8]
    qatt_u8s8_col     int8 weights with weight_scale [96] per column and
                      weight_zero_point [96] per column (-8..8), raw mask
                      [2,8]
    qatt_u8u8_col     uint8 weights, scale and zero point (100..155) per
                      column, no mask
    qatt_u8u8         uint8 weights with zero point 121, mask_index [2]
                      = [8, 3]
    qatt_u8u8_nomask  uint8 weights with zero point 121, no mask
    qatt_nozp         int8 weights, both zero points left out (0),
                      unidirectional 1
  (ONNX Runtime's CPU QAttention takes a uint8 input only: "Could not find
  an implementation" for int8.)
  EmbedLayerNormalization (vocab 30, 16 positions, 2 segments, hidden 32;
  outputs output, mask_index, embedding_sum where named):
    eln_full          segment ids, mask [2,8] = lengths 5 and 8 -> output,
                      mask_index, embedding_sum
    eln_mask_holes    the mask has zeros in the middle ([1,1,0,1,1,0,0,0]
                      and [0,1,1,1,1,1,1,1]): mask_index is the count of
                      ones, not the first zero
    eln_noseg         no segment ids or embedding, with mask; epsilon 1e-5
    eln_nomask        segment ids, no mask; mask_index still asked for
    eln_posids        position_ids [2,8] (shuffled positions), no mask,
                      outputs output, "" and embedding_sum
    eln_posids_1s     position_ids [1,8] (broadcast over the batch), mask
  Models qreport must refuse (exit 2, one line naming the node); not run
  in ONNX Runtime:
    bad_qatt_past     qatt_u8s8 with a past input [2,2,4,3,8] (node
                      "qattention_past")
    bad_att_rotary    att_nomask with do_rotary 1 (node "attention_rotary")
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ACT = os.path.join(HERE, "activations")
OPS = os.path.join(HERE, "ort-ops", "attention")
ORT_DIR = os.path.join(HERE, "..", "ort")
F = TensorProto.FLOAT
I32 = TensorProto.INT32
I64 = TensorProto.INT64
MS = "com.microsoft"

H, NH, LAYERS, VOCAB, POS, SEQ, CLASSES = 64, 4, 2, 100, 32, 16, 3


# ---------------------------------------------------------------- BERT
class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, H)
        self.position_embeddings = nn.Embedding(POS, H)
        self.token_type_embeddings = nn.Embedding(2, H)
        self.LayerNorm = nn.LayerNorm(H, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(POS).unsqueeze(0))

    def forward(self, input_ids, token_type_ids):
        pos = self.position_ids[:, :input_ids.size(1)]
        e = (self.word_embeddings(input_ids) + self.position_embeddings(pos)
             + self.token_type_embeddings(token_type_ids))
        return self.LayerNorm(e)


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = nn.Linear(H, H)
        self.key = nn.Linear(H, H)
        self.value = nn.Linear(H, H)
        self.d = H // NH

    def split(self, x):
        b, t, _ = x.size()
        return x.view(b, t, NH, self.d).permute(0, 2, 1, 3)

    def forward(self, x, ext_mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / (self.d ** 0.5)
        p = nn.functional.softmax(scores + ext_mask, dim=-1)
        c = torch.matmul(p, v).permute(0, 2, 1, 3).contiguous()
        return c.view(c.size(0), c.size(1), H)


class AddNorm(nn.Module):
    """BertSelfOutput / BertOutput: LayerNorm(dense(h) + residual)."""

    def __init__(self, din):
        super().__init__()
        self.dense = nn.Linear(din, H)
        self.LayerNorm = nn.LayerNorm(H, eps=1e-12)

    def forward(self, h, residual):
        return self.LayerNorm(self.dense(h) + residual)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = SelfAttention()
        self.attention_output = AddNorm(H)
        self.intermediate = nn.Linear(H, 4 * H)
        self.output = AddNorm(4 * H)

    def forward(self, x, ext_mask):
        a = self.attention_output(self.attention(x, ext_mask), x)
        return self.output(nn.functional.gelu(self.intermediate(a)), a)


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = Embeddings()
        self.layer = nn.ModuleList([Layer() for _ in range(LAYERS)])
        self.classifier = nn.Linear(H, CLASSES)

    def forward(self, input_ids, attention_mask, token_type_ids):
        x = self.embeddings(input_ids, token_type_ids)
        m = attention_mask[:, None, None, :].to(torch.float32)
        m = (1.0 - m) * -10000.0
        for lay in self.layer:
            x = lay(x, m)
        return self.classifier(x[:, 0])


def make_bert():
    torch.manual_seed(0)
    model = Bert().eval()
    with torch.no_grad():
        # weights of a scale that gives peaked attention (q k^T / 4 of a
        # few units) and LayerNorms that are not the identity
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
            elif "query" in name or "key" in name:
                p.copy_(0.25 * torch.randn_like(p))
            elif "embeddings" in name:
                p.copy_(torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / p.shape[1] ** 0.5)
    ids = torch.randint(0, VOCAB, (1, SEQ))
    mask = torch.ones(1, SEQ, dtype=torch.long)
    tt = torch.zeros(1, SEQ, dtype=torch.long)
    path = os.path.join(ACT, "bert_float.onnx")
    torch.onnx.export(model, (ids, mask, tt), path,
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["logits"], opset_version=14)
    m = onnx.load(path)
    m.producer_name, m.producer_version = "qreport-fixtures", "1"
    onnx.save(m, path)
    return model


def arr(t):
    return t.detach().numpy().astype(np.float32)


def make_bert_opt(model):
    sd = model.state_dict()
    inits = []

    def init(name, a):
        inits.append(numpy_helper.from_array(np.array(a, order="C"), name))
        return name

    nodes = [helper.make_node("Cast", [n], [n + "_int32"], name=n + "_cast", to=I32)
             for n in ("input_ids", "token_type_ids", "attention_mask")]
    e = "embeddings."
    nodes.append(helper.make_node(
        "EmbedLayerNormalization",
        ["input_ids_int32", "token_type_ids_int32",
         init("word_embeddings", arr(sd[e + "word_embeddings.weight"])),
         init("position_embeddings", arr(sd[e + "position_embeddings.weight"])),
         init("token_type_embeddings", arr(sd[e + "token_type_embeddings.weight"])),
         init("embeddings_ln_gamma", arr(sd[e + "LayerNorm.weight"])),
         init("embeddings_ln_beta", arr(sd[e + "LayerNorm.bias"])),
         "attention_mask_int32"],
        ["embeddings_out", "mask_index"], name="embeddings", domain=MS,
        epsilon=1e-12))
    x = "embeddings_out"
    for li in range(LAYERS):
        p, L = "layer.%d." % li, "layer%d_" % li
        wq, wk, wv = (arr(sd[p + "attention.%s.weight" % n]).T for n in ("query", "key", "value"))
        bq, bk, bv = (arr(sd[p + "attention.%s.bias" % n]) for n in ("query", "key", "value"))
        nodes.append(helper.make_node(
            "Attention", [x, init(L + "attention_qkv_weight", np.concatenate([wq, wk, wv], 1)),
                          init(L + "attention_qkv_bias", np.concatenate([bq, bk, bv])),
                          "mask_index"],
            [L + "attention_out"], name=L + "attention", domain=MS, num_heads=NH))

        def matmul(src, wname, key, out):
            nodes.append(helper.make_node(
                "MatMul", [src, init(wname, arr(sd[key]).T)], [out], name=out[:-4]))
            return out

        def skipln(src, skip, key, out, name):
            nodes.append(helper.make_node(
                "SkipLayerNormalization",
                [src, skip, init(name + "_gamma", arr(sd[key + "LayerNorm.weight"])),
                 init(name + "_beta", arr(sd[key + "LayerNorm.bias"])),
                 init(name + "_bias", arr(sd[key + "dense.bias"]))],
                [out], name=name, domain=MS, epsilon=1e-12))
            return out

        h = matmul(L + "attention_out", L + "attention_output_weight",
                   p + "attention_output.dense.weight", L + "attention_output_matmul_out")
        a = skipln(h, x, p + "attention_output.", L + "attention_ln_out", L + "attention_skipln")
        h = matmul(a, L + "intermediate_weight", p + "intermediate.weight",
                   L + "intermediate_matmul_out")
        nodes.append(helper.make_node(
            "BiasGelu", [h, init(L + "intermediate_bias", arr(sd[p + "intermediate.bias"]))],
            [L + "intermediate_gelu_out"], name=L + "intermediate_gelu", domain=MS))
        h = matmul(L + "intermediate_gelu_out", L + "output_weight", p + "output.dense.weight",
                   L + "output_matmul_out")
        x = skipln(h, a, p + "output.", L + "output_ln_out", L + "output_skipln")
    nodes.append(helper.make_node("Gather", [x, init("cls_index", np.array(0, np.int64))],
                                  ["cls_token"], name="cls_gather", axis=1))
    nodes.append(helper.make_node(
        "Gemm", ["cls_token", init("classifier_weight", arr(sd["classifier.weight"])),
                 init("classifier_bias", arr(sd["classifier.bias"]))],
        ["logits"], name="classifier", transB=1))
    g = helper.make_graph(
        nodes, "bert_opt",
        [helper.make_tensor_value_info(n, I64, [1, SEQ])
         for n in ("input_ids", "attention_mask", "token_type_ids")],
        [helper.make_tensor_value_info("logits", F, [1, CLASSES])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14),
                                            helper.make_opsetid(MS, 1)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(ACT, "bert_opt.onnx"))
    return m


def sym_int8(w):
    """quantize_dynamic's int8 symmetric per-tensor weight: scale
    2 max|w| / 254 (in double, stored as float), zero point 0, codes
    round(w / scale) clipped to [-127, 127] (onnxruntime.quantization
    quant_utils compute_scale_zp / quantize_nparray)."""
    absmax = max(abs(float(w.min())), abs(float(w.max())), 0.0)
    scale = np.float32(2 * absmax / 254.0)
    q = np.clip(np.round(w.astype(np.float32) / scale), -127, 127).astype(np.int8)
    return q, scale


def int8_weight(w, a):
    """w quantized as quantize_dynamic does it (sym_int8): the initializers
    w_quantized, w_scale and w_zero_point."""
    q, s = sym_int8(a)
    return [numpy_helper.from_array(q, w + "_quantized"),
            numpy_helper.from_array(np.array(s, np.float32), w + "_scale"),
            numpy_helper.from_array(np.array(0, np.int8), w + "_zero_point")]


def matmul_integer(n, xq, xs, xz, wq, ws, wz):
    """quantize_dynamic's nodes for MatMul n after its input's
    DynamicQuantizeLinear: MatMulInteger -> Cast -> Mul by the two scales,
    writing n's output name."""
    out = n.output[0]
    return [
        helper.make_node("MatMulInteger", [xq, wq, xz, wz], [out + "_output_quantized"],
                         name=n.name + "_quant"),
        helper.make_node("Cast", [out + "_output_quantized"],
                         [out + "_output_quantized_cast_output"],
                         name=out + "_output_quantized_cast", to=F),
        helper.make_node("Mul", [xs, ws], [n.name + "_quant_scales_mul:0"],
                         name=n.name + "_quant_scales_mul"),
        helper.make_node("Mul", [out + "_output_quantized_cast_output",
                                 n.name + "_quant_scales_mul:0"], [out],
                         name=n.name + "_quant_output_scale_mul")]


def make_bert_dyn(opt):
    g = opt.graph
    inits = {t.name: t for t in g.initializer}
    new_inits = []
    nodes = []
    done_x = set()

    def quant_x(x):
        if x not in done_x:
            done_x.add(x)
            nodes.append(helper.make_node(
                "DynamicQuantizeLinear", [x], [x + "_quantized", x + "_scale", x + "_zero_point"],
                name=x + "_QuantizeLinear"))
        return x + "_quantized", x + "_scale", x + "_zero_point"

    def quant_w(w):
        new_inits.extend(int8_weight(w, numpy_helper.to_array(inits.pop(w))))
        return w + "_quantized", w + "_scale", w + "_zero_point"

    for n in g.node:
        if n.op_type == "Attention":
            xq, xs, xz = quant_x(n.input[0])
            wq, ws, wz = quant_w(n.input[1])
            q = helper.make_node("QAttention", [xq, wq, n.input[2], xs, ws, n.input[3], xz, wz],
                                 list(n.output), name=n.name + "_quant", domain=MS)
            q.attribute.extend(n.attribute)
            nodes.append(q)
        elif n.op_type == "MatMul":
            xq, xs, xz = quant_x(n.input[0])
            wq, ws, wz = quant_w(n.input[1])
            nodes += matmul_integer(n, xq, xs, xz, wq, ws, wz)
        else:
            nodes.append(n)
    qg = helper.make_graph(nodes, "bert_opt_dyn", list(g.input), list(g.output),
                           list(inits.values()) + new_inits)
    m = helper.make_model(qg, opset_imports=list(opt.opset_import),
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(ACT, "bert_opt_dyn.onnx"))


def bert_samples(n, seed):
    """n seeded (input_ids, attention_mask, token_type_ids) of [1,SEQ]
    int64: ids below VOCAB (token 0 a [CLS]-like 1), the mask ones then
    zeros (none for the first sample), token types 0 then 1."""
    rng = np.random.RandomState(seed)
    out = []
    for i in range(n):
        ids = rng.randint(2, VOCAB, (1, SEQ)).astype(np.int64)
        ids[0, 0] = 1
        length = SEQ if i == 0 else int(rng.randint(4, SEQ))
        mask = (np.arange(SEQ) < length).astype(np.int64)[None]
        ids[0, length:] = 0
        split = int(rng.randint(1, length))
        tt = (np.arange(SEQ) >= split).astype(np.int64)[None] * mask
        out.append({"input_ids": ids, "attention_mask": mask, "token_type_ids": tt})
    return out


# ------------------------------------------------- single-node models
def save_model(name, nodes, inputs, outputs, inits, opset=14, folder=OPS):
    """folder/name.onnx (make_rnn_fixtures.py passes its own folder)."""
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset),
                                            helper.make_opsetid(MS, 1)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(folder, name + ".onnx"))


def save_inputs(name, feeds, folder=OPS):
    d = os.path.join(folder, name)
    os.makedirs(d, exist_ok=True)
    for k, v in feeds.items():
        np.save(os.path.join(d, k + ".npy"), v)


def vi(name, a):
    """A graph input for array a (onnx 1.12 has no np_dtype_to_tensor_dtype)."""
    return helper.make_tensor_value_info(
        name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.asarray(a).dtype],
        list(np.shape(a)))


B, S = 2, 8
CASES = []   # (name, feeds, reference outputs {name: array} or None)


def attention_ref(x, w, b, nh, mask=None, unidir=0, qkv=None, scale=None, mfv=-10000.0,
                  abias=None):
    """ONNX Runtime's Attention as its contrib-op spec reads, in double."""
    x, w, b = (np.asarray(a, np.float64) for a in (x, w, b))
    bsz, s, _ = x.shape
    hq, hk, hv = qkv if qkv else [w.shape[1] // 3] * 3
    p = x @ w + b
    q, k, v = p[..., :hq], p[..., hq:hq + hk], p[..., hq + hk:]
    dq, dv = hq // nh, hv // nh
    q = q.reshape(bsz, s, nh, dq).transpose(0, 2, 1, 3)
    k = k.reshape(bsz, s, nh, dq).transpose(0, 2, 1, 3)
    v = v.reshape(bsz, s, nh, dv).transpose(0, 2, 1, 3)
    sc = scale if scale is not None else 1 / np.sqrt(dq)
    add = np.zeros((bsz, s, s))
    if mask is not None:
        mask = np.asarray(mask)
        for bi in range(bsz):
            if mask.ndim == 1:
                add[bi, :, mask[bi]:] = mfv
                if mask.shape[0] == 2 * bsz:
                    add[bi, :, :mask[bsz + bi]] = mfv
            elif mask.ndim == 2:
                add[bi, :, mask[bi] == 0] = mfv
            else:
                add[bi][mask[bi] == 0] = mfv
    if unidir:
        add[:, np.triu(np.ones((s, s), bool), 1)] = -3.4e38
    sco = sc * q @ k.transpose(0, 1, 3, 2) + add[:, None]
    if abias is not None:
        sco = sco + abias
    sco = np.exp(sco - sco.max(-1, keepdims=True))
    sco /= sco.sum(-1, keepdims=True)
    return (sco @ v).transpose(0, 2, 1, 3).reshape(bsz, s, hv)


def attention_case(name, rng, mask=None, hin=16, qkv=None, bad=None, abias_shape=None,
                   **attrs):
    hq, hk, hv = qkv if qkv else (32, 32, 32)
    x = rng.randn(B, S, hin).astype(np.float32)
    w = (rng.randn(hin, hq + hk + hv) / np.sqrt(hin) * 1.5).astype(np.float32)
    b = (0.1 * rng.randn(hq + hk + hv)).astype(np.float32)
    feeds = {"input": x}
    ins = ["input", "weights", "bias"]
    if mask is not None:
        feeds["mask_index"] = np.asarray(mask, np.int32)
        ins.append("mask_index")
    abias = None
    if abias_shape is not None:
        abias = rng.randn(*abias_shape).astype(np.float32)
        feeds["attention_bias"] = abias
        ins += [""] * (4 - len(ins)) + ["", "attention_bias"]
    if bad == "rotary":
        attrs["do_rotary"] = 1
    if qkv:
        attrs["qkv_hidden_sizes"] = list(qkv)
    nodes = [helper.make_node("Attention", ins, ["output"], domain=MS,
                              name="attention_rotary" if bad else "attention",
                              num_heads=4, **attrs)]
    save_model(name, nodes, [vi(k, v) for k, v in feeds.items()],
               [helper.make_tensor_value_info("output", F, [B, S, hv])],
               [numpy_helper.from_array(w, "weights"), numpy_helper.from_array(b, "bias")])
    save_inputs(name, feeds)
    if bad:
        return
    ref = attention_ref(x, w, b, 4, mask, attrs.get("unidirectional", 0), qkv,
                        attrs.get("scale"), attrs.get("mask_filter_value", -10000.0), abias)
    CASES.append((name, feeds, {"output": ref}))


def make_attention():
    rng = np.random.RandomState(10)
    attention_case("att_nomask", rng)
    attention_case("att_mask1d", rng, mask=[5, 8])
    attention_case("att_mask1d_2b", rng, mask=[8, 7, 3, 1])
    m2 = np.array([[1, 1, 0, 1, 1, 1, 0, 1], [1, 0, 1, 1, 1, 1, 1, 0]])
    attention_case("att_mask2d", rng, mask=m2, mask_filter_value=-50.0)
    m3 = (rng.rand(B, S, S) > 0.4).astype(np.int32)
    m3[:, :, 0] = 1
    attention_case("att_mask3d", rng, mask=m3)
    attention_case("att_unidir", rng, unidirectional=1)
    attention_case("att_unidir_mask1d", rng, mask=[6, 8], unidirectional=1)
    attention_case("att_scale", rng, mask=[8, 4], scale=0.3)
    attention_case("att_qkv_sizes", rng, hin=24, qkv=(32, 32, 16))
    attention_case("att_bias", rng, mask=[7, 8], abias_shape=(1, 4, S, S))
    attention_case("att_bias_b1", rng, abias_shape=(B, 1, S, S))
    attention_case("bad_att_rotary", np.random.RandomState(11), bad="rotary")


def qattention_case(name, rng, wtype, per_col=False, wzp=0, xzp=137, mask=None, zps=True,
                    past=False, **attrs):
    hin, hid = 16, 32
    xs = np.float32(0.03)
    x = rng.randint(0, 256, (B, S, hin)).astype(np.uint8)
    if wtype == "int8":
        w = rng.randint(-127, 128, (hin, 3 * hid)).astype(np.int8)
    else:
        w = rng.randint(0, 256, (hin, 3 * hid)).astype(np.uint8)
    ws = (np.float32(0.004) * (1 + rng.rand(3 * hid)) if per_col
          else np.array(0.005, np.float32)).astype(np.float32)
    wz = (np.broadcast_to(wzp, (3 * hid,)) if per_col else np.array(wzp)).astype(w.dtype)
    b = (0.1 * rng.randn(3 * hid)).astype(np.float32)
    feeds = {"input": x}
    inits = [numpy_helper.from_array(w, "weight"), numpy_helper.from_array(b, "bias"),
             numpy_helper.from_array(np.array(xs, np.float32), "input_scale"),
             numpy_helper.from_array(ws, "weight_scale")]
    ins = ["input", "weight", "bias", "input_scale", "weight_scale", ""]
    if mask is not None:
        feeds["mask_index"] = np.asarray(mask, np.int32)
        ins[5] = "mask_index"
    if zps:
        inits += [numpy_helper.from_array(np.array(xzp, np.uint8), "input_zero_point"),
                  numpy_helper.from_array(wz, "weight_zero_point")]
        ins += ["input_zero_point", "weight_zero_point"]
    if past:
        feeds["past"] = rng.randn(2, B, 4, 3, hid // 4).astype(np.float32)
        ins += [""] * (8 - len(ins)) + ["past"]
    outs = ["output"] + (["present"] if past else [])
    nodes = [helper.make_node("QAttention", ins, outs, domain=MS,
                              name="qattention_past" if past else "qattention",
                              num_heads=4, **attrs)]
    save_model(name, nodes, [vi(k, v) for k, v in feeds.items()],
               [helper.make_tensor_value_info("output", F, [B, S, hid])]
               + [helper.make_tensor_value_info("present", F, [2, B, 4, S + 3, hid // 4])
                  for o in outs[1:]], inits)
    save_inputs(name, feeds)
    if past:
        return
    xf = (x.astype(np.float64) - (xzp if zps else 0)) * float(xs)
    wf = (w.astype(np.float64) - (wz.astype(np.float64) if zps else 0)) * ws.astype(np.float64)
    ref = attention_ref(xf, wf, b, 4, mask, attrs.get("unidirectional", 0))
    CASES.append((name, feeds, {"output": ref}))


def make_qattention():
    rng = np.random.RandomState(20)
    qattention_case("qatt_u8s8", rng, "int8")
    qattention_case("qatt_u8s8_mask", rng, "int8", mask=[5, 8])
    qattention_case("qatt_u8s8_col", rng, "int8", per_col=True, wzp=rng.randint(-8, 9, 96),
                    mask=np.array([[1, 1, 1, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 0, 0]]))
    qattention_case("qatt_u8u8_col", rng, "uint8", per_col=True, wzp=rng.randint(100, 156, 96))
    qattention_case("qatt_u8u8", rng, "uint8", wzp=121, mask=[8, 3])
    qattention_case("qatt_u8u8_nomask", rng, "uint8", wzp=121)
    qattention_case("qatt_nozp", rng, "int8", zps=False, unidirectional=1)
    qattention_case("bad_qatt_past", np.random.RandomState(21), "int8", past=True)


def eln_case(name, rng, seg=True, mask=None, pos_ids=None, outs=("output", "mask_index",
             "embedding_sum"), **attrs):
    vocab, npos, hid = 30, 16, 32
    ids = rng.randint(0, vocab, (B, S)).astype(np.int32)
    word = rng.randn(vocab, hid).astype(np.float32)
    pos = rng.randn(npos, hid).astype(np.float32)
    segw = rng.randn(2, hid).astype(np.float32)
    gamma = (1 + 0.2 * rng.randn(hid)).astype(np.float32)
    beta = (0.1 * rng.randn(hid)).astype(np.float32)
    feeds = {"input_ids": ids}
    inits = [numpy_helper.from_array(word, "word_embedding"),
             numpy_helper.from_array(pos, "position_embedding")]
    ins = ["input_ids", "", "word_embedding", "position_embedding", "", "gamma", "beta"]
    segids = None
    if seg:
        segids = rng.randint(0, 2, (B, S)).astype(np.int32)
        feeds["segment_ids"] = segids
        ins[1] = "segment_ids"
        ins[4] = "segment_embedding"
        inits.append(numpy_helper.from_array(segw, "segment_embedding"))
    inits += [numpy_helper.from_array(gamma, "gamma"), numpy_helper.from_array(beta, "beta")]
    if mask is not None:
        feeds["mask"] = np.asarray(mask, np.int32)
        ins.append("mask")
    if pos_ids is not None:
        feeds["position_ids"] = np.asarray(pos_ids, np.int32)
        ins += [""] * (8 - len(ins)) + ["position_ids"]
    nodes = [helper.make_node("EmbedLayerNormalization", ins, list(outs), name="embed",
                              domain=MS, **attrs)]
    outputs = [helper.make_tensor_value_info("output", F, [B, S, hid])]
    if "mask_index" in outs:
        outputs.append(helper.make_tensor_value_info("mask_index", I32, [B]))
    if "embedding_sum" in outs:
        outputs.append(helper.make_tensor_value_info("embedding_sum", F, [B, S, hid]))
    save_model(name, nodes, [vi(k, v) for k, v in feeds.items()], outputs, inits)
    save_inputs(name, feeds)
    p = (np.broadcast_to(np.asarray(pos_ids), (B, S)) if pos_ids is not None
         else np.broadcast_to(np.arange(S), (B, S)))
    e = word[ids].astype(np.float64) + pos[p]
    if seg:
        e = e + segw[segids]
    mu = e.mean(-1, keepdims=True)
    var = ((e - mu) ** 2).mean(-1, keepdims=True)
    ref = {"output": (e - mu) / np.sqrt(var + attrs.get("epsilon", 1e-12)) * gamma + beta}
    if "mask_index" in outs:
        ref["mask_index"] = (np.asarray(mask).sum(1) if mask is not None
                             else np.zeros(B)).astype(np.int32)
    if "embedding_sum" in outs:
        ref["embedding_sum"] = e
    CASES.append((name, feeds, ref))


def lengths_mask(lengths):
    return (np.arange(S)[None] < np.asarray(lengths)[:, None]).astype(np.int32)


def make_eln():
    rng = np.random.RandomState(30)
    eln_case("eln_full", rng, mask=lengths_mask([5, 8]))
    eln_case("eln_mask_holes", rng, mask=[[1, 1, 0, 1, 1, 0, 0, 0], [0, 1, 1, 1, 1, 1, 1, 1]])
    eln_case("eln_noseg", rng, seg=False, mask=lengths_mask([8, 6]), epsilon=1e-5)
    eln_case("eln_nomask", rng)
    eln_case("eln_posids", rng, pos_ids=np.stack([rng.permutation(S), rng.permutation(S) + 8]),
             outs=("output", "", "embedding_sum"))
    eln_case("eln_posids_1s", rng, pos_ids=[[3, 4, 5, 6, 7, 8, 9, 10]],
             mask=lengths_mask([2, 7]))


# ---------------------------------------------------------- the checks
RUNNER = r"""
'use strict';
// run MODEL on DIR/<input>.npy with onnxruntime-node, graph optimisation
// off; write every output as OUT/<output>.npy
const path = require('path');
const fs = require('fs');
const [ortDir, model, dir, out] = process.argv.slice(2);
const ort = require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));
const npy = require(path.join(ortDir, 'npy'));
(async () => {
  const s = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
  const feeds = {};
  for (const n of s.inputNames) {
    const a = npy.read(path.join(dir, n + '.npy'));
    feeds[n] = new ort.Tensor(a.type, a.data, a.dims);
  }
  const o = await s.run(feeds);
  fs.mkdirSync(out, { recursive: true });
  for (const n of s.outputNames) {
    npy.write(path.join(out, n + '.npy'), o[n].type, o[n].dims, o[n].data);
  }
})().catch((e) => { console.error(e.message); process.exit(1); });
"""


class Ort:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="qr-bert-")
        self.js = os.path.join(self.tmp, "run.js")
        with open(self.js, "w") as f:
            f.write(RUNNER)
        self.k = 0

    def run(self, model, feeds):
        self.k += 1
        d = os.path.join(self.tmp, "in%d" % self.k)
        o = os.path.join(self.tmp, "out%d" % self.k)
        os.makedirs(d)
        for n, v in feeds.items():
            np.save(os.path.join(d, n + ".npy"), v)
        r = subprocess.run(["node", self.js, os.path.abspath(ORT_DIR), model, d, o],
                           capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError("%s: ONNX Runtime failed: %s" % (model, r.stderr.strip()))
        return {f[:-4]: np.load(os.path.join(o, f)) for f in os.listdir(o)}

    def close(self):
        shutil.rmtree(self.tmp)


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def check(model):
    ort = Ort()
    bad = 0
    try:
        worst_opt = 0.0
        cos = []
        for i, feeds in enumerate(bert_samples(6, 1)):
            with torch.no_grad():
                ref = model(*(torch.from_numpy(feeds[n]) for n in
                              ("input_ids", "attention_mask", "token_type_ids"))).numpy()
            lf = ort.run(os.path.join(ACT, "bert_float.onnx"), feeds)["logits"]
            lo = ort.run(os.path.join(ACT, "bert_opt.onnx"), feeds)["logits"]
            lq = ort.run(os.path.join(ACT, "bert_opt_dyn.onnx"), feeds)["logits"]
            r_ft, r_of, r_ot = rel(lf, ref), rel(lo, lf), rel(lo, ref)
            worst_opt = max(worst_opt, r_of, r_ot)
            c = float(np.dot(lq.ravel(), lo.ravel())
                      / np.linalg.norm(lq) / np.linalg.norm(lo))
            cos.append(c)
            print("bert sample %d (length %d): rel L2 float-vs-torch %.2e, opt-vs-float %.2e, "
                  "opt-vs-torch %.2e; dyn cosine %.6f" % (i, feeds["attention_mask"].sum(),
                                                          r_ft, r_of, r_ot, c))
            if max(r_ft, r_of, r_ot) > 1e-4 or c < 0.99:
                bad += 1
        print("bert_opt: worst relative L2 of its logits %.2e (bound 1e-4); bert_opt_dyn: "
              "cosine min %.6f mean %.6f" % (worst_opt, min(cos), sum(cos) / len(cos)))
        for name, feeds, ref in CASES:
            try:
                out = ort.run(os.path.join(OPS, name + ".onnx"), feeds)
            except RuntimeError as e:
                print("%s: %s" % (name, e))
                bad += 1
                continue
            msg = []
            for k, v in ref.items():
                if v.dtype.kind == "i":
                    good = np.array_equal(out[k], v)
                    msg.append("%s %s%s" % (k, out[k].tolist(), "" if good else
                                            " (NumPy %s)" % v.tolist()))
                else:
                    e = rel(out[k], v)
                    good = e < 1e-5
                    msg.append("%s rel L2 %.2e" % (k, e))
                bad += not good
            print("%s: ONNX Runtime vs NumPy: %s" % (name, ", ".join(msg)))
    finally:
        ort.close()
    return bad


def main():
    os.makedirs(OPS, exist_ok=True)
    model = make_bert()
    opt = make_bert_opt(model)
    make_bert_dyn(opt)
    make_attention()
    make_qattention()
    make_eln()
    if "--no-check" in sys.argv[1:]:
        return 0
    bad = check(model)
    if bad:
        print("%d check(s) failed" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
