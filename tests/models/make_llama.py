#!/usr/bin/env python3
"""Make small Llama-style decoders in the form onnxruntime-genai's model
builder writes them, for tests/ort_llm.sh and tests/llm_report.sh, and
the same network in plain ONNX ops, as torch.onnx.export writes it, for
tests/llm_forms.sh.

    make_llama.py OUT_DIR [NAME ...] [--vocab V] [--hidden H]
                  [--layers L] [--heads Q] [--kv-heads K] [--inter I]
                  [--max-pos P] [--external]
                                         (all variants without names)

Each model, unless the options say otherwise: vocabulary 512, hidden
256, 4 layers, 8 query heads and 2 key/value heads of 32 (hidden /
heads), a SiLU-gated MLP of 768, RMS norms
(SimplifiedLayerNormalization first, then SkipSimplifiedLayerNormalization
carrying the residual, epsilon 1e-5), weights N(0, 0.02) from a fixed
seed (norm scales 1 + N(0, 0.02)). --external writes the weights
to NAME.onnx.data beside the model (ONNX external data), as a model over
protobuf's 2 GB must be (bench/llm.sh makes a TinyLlama-sized one:
--vocab 32000 --hidden 2048 --layers 22 --heads 32 --kv-heads 4
--inter 5632 --max-pos 2048).

  inputs   input_ids int64 [B,S], attention_mask int64 [B,T],
           past_key_values.L.key / .value float [B,KV,P,HEAD]
           (and position_ids int64 [B,S] in the _rope variants)
  outputs  logits [B,S,V], present.L.key / .value [B,KV,T,HEAD]

seqlens_k and total_sequence_length are computed in the graph from
attention_mask as the builder does (ReduceSum - 1, Cast int32;
Shape -> Gather -> Cast int32); GroupQueryAttention rotates Q and K
with cos/sin caches (do_rotary 1), or, in the _rope variants, separate
com.microsoft RotaryEmbedding nodes do it at position_ids before a
GroupQueryAttention with do_rotary 0.

Variants (NAME.onnx):
  llama_f32, llama_f32_rope    float: plain MatMul, Gather embedding
  llama_q4_bBS_KIND_alAL       every linear as MatMulNBits (bits 4,
                               block_size BS 32 or 128, KIND sym: no
                               zero points, asym: packed uint8 zero
                               points; accuracy_level AL 0 or 4), the
                               lm_head too, the embedding as
                               GatherBlockQuantized (uint8, bits 4)
  llama_q4_b32_asym_al4_rope   the same with separate RotaryEmbedding
  llama_f32_std                plain ONNX ops only (opset 21, IR 10):
                               Gather embedding; RMSNorm as Pow,
                               ReduceMean, Add, Sqrt, Reciprocal, Mul;
                               MatMul projections; rotary at positions
                               P..P+S-1 (P the past's length) from the
                               same cos/sin caches, Gather, Concat and
                               rotate_half (Slice, Neg, Concat), Mul,
                               Add; the past Concat-ed with the new K/V
                               (an empty past works); KV heads repeated
                               (Unsqueeze, Expand, Reshape); MatMul, Mul
                               by 1/sqrt(head), Add of the float minimum
                               where a key is in the future or masked by
                               attention_mask, Softmax, MatMul; residual
                               Adds; the same inputs and outputs as
                               llama_f32 (no position_ids)
  llama_q4_std                 the same with each linear's weight as
                               INT4 [K, N] blocked DequantizeLinear
                               (axis 0, block_size 32, no zero point)
                               before its MatMul, and the embedding as
                               INT4 [V, H] DequantizeLinear (axis 1)
                               before its Gather: the codes (less 8) and
                               scales of llama_q4_b32_sym_al0

The _std models draw the same weights in the same order as the others,
so llama_f32_std computes llama_f32's function and llama_q4_std
llama_q4_b32_sym_al0's (ONNX Runtime: within 1e-6 relative). Their
names are torch.onnx.export's (/model/layers.N/self_attn/q_proj/MatMul,
tensors NODE_output_0, weights onnx::MatMul_N), not the GenAI forms'.
onnx 1.12 knows neither INT4 nor opset 21: their INT4 tensors are
written by hand and they do not go through onnx.checker.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
VOCAB, HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD = 512, 256, 4, 8, 2, 32
INTER, MAX_POS, EPS = 768, 256, 1e-5


class Builder:
    """Nodes and initializers of one graph, named as the builder does."""

    def __init__(self, name, q4=None):
        self.name = name
        self.q4 = q4  # (block, asym, accuracy_level) or None
        self.nodes = []
        self.inits = []
        self.rng = np.random.RandomState(1234)

    def init(self, name, a):
        self.inits.append(numpy_helper.from_array(a, name))
        return name

    def node(self, op, ins, outs, name, domain="", **attrs):
        self.nodes.append(helper.make_node(op, ins, outs, name=name,
                                           domain=domain, **attrs))
        return outs[0] if len(outs) == 1 else outs

    def weight(self, k, n):
        return (self.rng.randn(k, n) * 0.02).astype(np.float32)

    def quantize(self, w, block, asym):
        """w [K, N] as MatMulNBits' B [N, KB, block/2], scales [N*KB],
        zero points [N, ceil(KB/2)] (asym) or None."""
        k, n = w.shape
        kb = (k + block - 1) // block
        wt = np.zeros((n, kb * block), np.float32)
        wt[:, :k] = w.T
        blocks = wt.reshape(n, kb, block)
        if asym:
            lo = np.minimum(blocks.min(-1), 0)
            hi = np.maximum(blocks.max(-1), 0)
            scale = np.maximum((hi - lo) / 15, 1e-8).astype(np.float32)
            zp = np.clip(np.round(-lo / scale), 0, 15).astype(np.int64)
        else:
            scale = np.maximum(np.abs(blocks).max(-1) / 7, 1e-8)
            scale = scale.astype(np.float32)
            zp = np.full((n, kb), 8, np.int64)
        q = np.clip(np.round(blocks / scale[..., None]) + zp[..., None],
                    0, 15).astype(np.uint8)
        packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
        zpp = None
        if asym:
            z = zp.astype(np.uint8)
            if kb % 2:
                z = np.concatenate([z, np.zeros((n, 1), np.uint8)], 1)
            zpp = (z[:, 0::2] | (z[:, 1::2] << 4)).astype(np.uint8)
        return packed, scale.reshape(-1), zpp

    def linear(self, x, k, n, name):
        w = self.weight(k, n)
        if self.q4 is None:
            return self.node("MatMul", [x, self.init(name + ".weight", w)],
                             [name + "/output_0"], name)
        block, asym, level = self.q4
        b, s, z = self.quantize(w, block, asym)
        ins = [x, self.init(name + ".weight_Q4", b),
               self.init(name + ".weight_scales", s)]
        if z is not None:
            ins.append(self.init(name + ".weight_zp", z))
        return self.node("MatMulNBits", ins, [name + "/output_0"], name,
                         domain=MS, K=k, N=n, bits=4, block_size=block,
                         accuracy_level=level)

    def embedding(self, ids):
        table = (self.rng.randn(VOCAB, HIDDEN) * 0.02).astype(np.float32)
        name = "/model/embed_tokens/Gather"
        if self.q4 is None:
            return self.node("Gather", [self.init("model.embed_tokens.weight",
                                                  table), ids],
                             [name + "/output_0"], name)
        block, asym, _ = self.q4
        b, s, z = self.quantize(table.T.copy(), block, asym)
        nb = (HIDDEN + block - 1) // block
        ins = [self.init("model.embed_tokens.qweight",
                         b.reshape(VOCAB, -1)), ids,
               self.init("model.embed_tokens.scales", s.reshape(VOCAB, nb))]
        if z is not None:
            ins.append(self.init("model.embed_tokens.qzeros", z))
        return self.node("GatherBlockQuantized", ins, [name + "/output_0"],
                         name.replace("Gather", "GatherBlockQuantized"),
                         domain=MS, bits=4, block_size=block,
                         gather_axis=0, quantize_axis=1)

    def norm_scale(self, name):
        return self.init(name, (1 + self.rng.randn(HIDDEN) * 0.02)
                         .astype(np.float32))


def build(name, q4=None, rope=False):
    g = Builder(name, q4)
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                            ["batch_size", "sequence_length"]),
              helper.make_tensor_value_info("attention_mask",
                                            TensorProto.INT64,
                                            ["batch_size",
                                             "total_sequence_length"])]
    if rope:
        inputs.append(helper.make_tensor_value_info(
            "position_ids", TensorProto.INT64,
            ["batch_size", "sequence_length"]))
    outputs = [helper.make_tensor_value_info(
        "logits", TensorProto.FLOAT,
        ["batch_size", "sequence_length", VOCAB])]
    for i in range(LAYERS):
        for kv in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(
                "past_key_values.%d.%s" % (i, kv), TensorProto.FLOAT,
                ["batch_size", KV_HEADS, "past_sequence_length", HEAD]))
            outputs.append(helper.make_tensor_value_info(
                "present.%d.%s" % (i, kv), TensorProto.FLOAT,
                ["batch_size", KV_HEADS, "total_sequence_length", HEAD]))

    # attention mask -> seqlens_k, total_sequence_length
    sub = "/model/attn_mask_reformat/attn_mask_subgraph"
    one = g.init("one_i64", np.array(1, np.int64))
    rs = g.node("ReduceSum", ["attention_mask",
                              g.init("axes_1", np.array([1], np.int64))],
                [sub + "/ReduceSum/output_0"], sub + "/ReduceSum",
                keepdims=0)
    sm = g.node("Sub", [rs, one], [sub + "/Sub/output_0"], sub + "/Sub")
    seqlens = g.node("Cast", [sm], [sub + "/Sub/Cast/output_0"],
                     sub + "/Sub/Cast", to=TensorProto.INT32)
    sh = g.node("Shape", ["attention_mask"], [sub + "/Shape/output_0"],
                sub + "/Shape")
    ga = g.node("Gather", [sh, one], [sub + "/Gather/output_0"],
                sub + "/Gather", axis=0)
    total = g.node("Cast", [ga], [sub + "/Gather/Cast/output_0"],
                   sub + "/Gather/Cast", to=TensorProto.INT32)

    inv = 1.0 / (10000.0 ** (np.arange(0, HEAD, 2, dtype=np.float64) / HEAD))
    ang = np.outer(np.arange(MAX_POS, dtype=np.float64), inv)
    cos = g.init("cos_cache", np.cos(ang).astype(np.float32))
    sin = g.init("sin_cache", np.sin(ang).astype(np.float32))

    x = g.embedding("input_ids")
    residual = None
    normed = None
    mlp_out = None
    for i in range(LAYERS):
        p = "/model/layers.%d" % i
        if i == 0:
            normed = g.node("SimplifiedLayerNormalization",
                            [x, g.norm_scale("model.layers.0.input_layernorm.weight")],
                            [p + "/input_layernorm/output_0"],
                            p + "/input_layernorm/LayerNorm", axis=-1,
                            epsilon=EPS, stash_type=1)
            residual = x
        else:
            outs = [p + "/input_layernorm/output_0", "", "",
                    p + "/input_layernorm/output_3"]
            normed, _, _, residual = g.node(
                "SkipSimplifiedLayerNormalization",
                [mlp_out, residual,
                 g.norm_scale("model.layers.%d.input_layernorm.weight" % i)],
                outs, p + "/input_layernorm/SkipLayerNorm", domain=MS,
                epsilon=EPS)
        a = p + "/attn"
        q = g.linear(normed, HIDDEN, HEADS * HEAD, a + "/q_proj/MatMul")
        k = g.linear(normed, HIDDEN, KV_HEADS * HEAD, a + "/k_proj/MatMul")
        v = g.linear(normed, HIDDEN, KV_HEADS * HEAD, a + "/v_proj/MatMul")
        if rope:
            q = g.node("RotaryEmbedding", [q, "position_ids", cos, sin],
                       [a + "/q_rotary/output_0"], a + "/q_rotary/RotaryEmbedding",
                       domain=MS, interleaved=0)
            k = g.node("RotaryEmbedding", [k, "position_ids", cos, sin],
                       [a + "/k_rotary/output_0"], a + "/k_rotary/RotaryEmbedding",
                       domain=MS, interleaved=0)
        ins = [q, k, v, "past_key_values.%d.key" % i,
               "past_key_values.%d.value" % i, seqlens, total]
        attrs = dict(num_heads=HEADS, kv_num_heads=KV_HEADS,
                     local_window_size=-1, softcap=0.0,
                     do_rotary=0 if rope else 1, rotary_interleaved=0)
        if not rope:
            ins += [cos, sin]
        att, _, _ = g.node("GroupQueryAttention", ins,
                           [a + "/GroupQueryAttention/output_0",
                            "present.%d.key" % i, "present.%d.value" % i],
                           a + "/GroupQueryAttention", domain=MS, **attrs)
        o = g.linear(att, HEADS * HEAD, HIDDEN, a + "/o_proj/MatMul")
        normed, _, _, residual = g.node(
            "SkipSimplifiedLayerNormalization",
            [o, residual,
             g.norm_scale("model.layers.%d.post_attention_layernorm.weight" % i)],
            [p + "/post_attention_layernorm/output_0", "", "",
             p + "/post_attention_layernorm/output_3"],
            p + "/post_attention_layernorm/SkipLayerNorm", domain=MS,
            epsilon=EPS)
        m = p + "/mlp"
        gate = g.linear(normed, HIDDEN, INTER, m + "/gate_proj/MatMul")
        up = g.linear(normed, HIDDEN, INTER, m + "/up_proj/MatMul")
        sg = g.node("Sigmoid", [gate], [m + "/act_fn/Sigmoid/output_0"],
                    m + "/act_fn/Sigmoid")
        act = g.node("Mul", [gate, sg], [m + "/act_fn/Mul/output_0"],
                     m + "/act_fn/Mul")
        prod = g.node("Mul", [act, up], [m + "/Mul/output_0"], m + "/Mul")
        mlp_out = g.linear(prod, INTER, HIDDEN, m + "/down_proj/MatMul")
    fin, _, _, _ = g.node(
        "SkipSimplifiedLayerNormalization",
        [mlp_out, residual, g.norm_scale("model.norm.weight")],
        ["/model/norm/output_0", "", "", "/model/norm/output_3"],
        "/model/norm/SkipLayerNorm", domain=MS, epsilon=EPS)
    g.linear(fin, HIDDEN, VOCAB, "/lm_head/MatMul")
    g.nodes[-1].output[0] = "logits"

    graph = helper.make_graph(g.nodes, name, inputs, outputs, g.inits)
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return model


# The _std variants: the network of build() in plain ONNX ops, as
# torch.onnx.export writes a Hugging Face Llama.
INT4 = 22  # TensorProto.INT4, unknown to onnx 1.12


def int4_tensor(name, codes):
    """An INT4 initializer of codes in [-8, 7] (two a byte, low first)."""
    flat = codes.reshape(-1).astype(np.int64) & 15
    if flat.size % 2:
        flat = np.concatenate([flat, [0]])
    t = TensorProto()
    t.name = name
    t.data_type = INT4
    t.dims.extend(codes.shape)
    t.raw_data = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8).tobytes()
    return t


class StdBuilder(Builder):
    """Builder's weights as plain MatMul / Gather, or blocked
    DequantizeLinear of Builder.quantize's symmetric codes before them."""

    def __init__(self, name, q4=None):
        Builder.__init__(self, name, q4)
        self.n_weights = 0

    def t(self, node):
        return node + "_output_0"

    def op(self, op, ins, node, **attrs):
        """one node named as torch.onnx.export names it, one output"""
        return self.node(op, ins, [self.t(node)], node, **attrs)

    def const(self, name, a):
        return self.init(name, np.asarray(a))

    def dq_codes(self, w, block):
        """w [K, N] as Builder.quantize's sym codes less 8 and scales,
        both [K, N] and [K / block, N] (blocked along axis 0)."""
        k, n = w.shape
        packed, scale, _ = self.quantize(w, block, False)
        q = np.empty(packed.shape[:-1] + (block,), np.int64)
        q[..., 0::2] = packed & 15
        q[..., 1::2] = packed >> 4
        codes = (q.reshape(n, -1)[:, :k] - 8).T.copy()
        return codes, scale.reshape(n, -1).T.copy()

    def dequantized(self, w, name, block):
        codes, scale = self.dq_codes(w, block)
        self.inits.append(int4_tensor(name + "_Q4", codes))
        self.init(name + "_scales", scale)
        return self.node("DequantizeLinear", [name + "_Q4", name + "_scales"],
                         [name + "_DQ_output_0"], name + "_DQ", axis=0,
                         block_size=block)

    def linear(self, x, k, n, name):
        w = self.weight(k, n)
        self.n_weights += 1
        wn = "onnx::MatMul_%d" % (1000 + self.n_weights)
        if self.q4 is None:
            b = self.init(wn, w)
        else:
            b = self.dequantized(w, wn, self.q4[0])
        return self.op("MatMul", [x, b], name)

    def embedding(self, ids):
        table = (self.rng.randn(VOCAB, HIDDEN) * 0.02).astype(np.float32)
        name = "/model/embed_tokens/Gather"
        wn = "model.embed_tokens.weight"
        if self.q4 is None:
            return self.op("Gather", [self.init(wn, table), ids], name)
        codes, scale = self.dq_codes(table.T.copy(), self.q4[0])
        self.inits.append(int4_tensor(wn + "_Q4", codes.T.copy()))
        self.init(wn + "_scales", scale.T.copy())
        dq = self.node("DequantizeLinear", [wn + "_Q4", wn + "_scales"],
                       [wn + "_DQ_output_0"], wn + "_DQ", axis=1,
                       block_size=self.q4[0])
        return self.op("Gather", [dq, ids], name)

    def rms_norm(self, x, scale, p):
        """LlamaRMSNorm: x * (1 / sqrt(mean(x^2) + eps)) * scale"""
        sq = self.op("Pow", [x, self.const(p + "/Constant", np.float32(2))],
                     p + "/Pow")
        ms = self.op("ReduceMean", [sq, self.const(p + "/axes",
                                                   np.array([-1], np.int64))],
                     p + "/ReduceMean", keepdims=1)
        ad = self.op("Add", [ms, self.const(p + "/Constant_1",
                                            np.float32(EPS))], p + "/Add")
        rt = self.op("Sqrt", [ad], p + "/Sqrt")
        rc = self.op("Reciprocal", [rt], p + "/Reciprocal")
        y = self.op("Mul", [x, rc], p + "/Mul")
        return self.op("Mul", [scale, y], p + "/Mul_1")

    def heads(self, x, n, p):
        """[B, S, n * HEAD] -> [B, n, S, HEAD]"""
        r = self.op("Reshape", [x, self.const(p + "/shape",
                                              np.array([0, 0, n, HEAD],
                                                       np.int64))],
                    p + "/Reshape")
        return self.op("Transpose", [r], p + "/Transpose", perm=[0, 2, 1, 3])

    def rotary(self, x, cos, sin, p):
        """x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1]"""
        half = HEAD // 2
        ax = self.const(p + "/axes", np.array([3], np.int64))
        x1 = self.op("Slice", [x, self.const(p + "/starts",
                                             np.array([0], np.int64)),
                               self.const(p + "/ends",
                                          np.array([half], np.int64)), ax],
                     p + "/Slice")
        x2 = self.op("Slice", [x, self.const(p + "/starts_1",
                                             np.array([half], np.int64)),
                               self.const(p + "/ends_1",
                                          np.array([HEAD], np.int64)), ax],
                     p + "/Slice_1")
        ng = self.op("Neg", [x2], p + "/Neg")
        rh = self.op("Concat", [ng, x1], p + "/Concat", axis=-1)
        a = self.op("Mul", [x, cos], p + "/Mul")
        b = self.op("Mul", [rh, sin], p + "/Mul_1")
        return self.op("Add", [a, b], p + "/Add")

    def repeat_kv(self, x, p):
        """[B, KV, T, HEAD] -> [B, HEADS, T, HEAD], head h on h / rep"""
        u = self.op("Unsqueeze", [x, self.const(p + "/axes",
                                                np.array([2], np.int64))],
                    p + "/Unsqueeze")
        e = self.op("Expand", [u, self.const(
            p + "/shape", np.array([1, 1, HEADS // KV_HEADS, 1, 1],
                                   np.int64))], p + "/Expand")
        return self.op("Reshape", [e, self.const(
            p + "/shape_1", np.array([0, HEADS, -1, HEAD], np.int64))],
            p + "/Reshape")


def build_std(name, q4=None):
    """The network of build(name, q4) in plain ONNX ops (q4: (block,
    False, level), symmetric only, level unused)."""
    # the GenAI form's inputs and outputs, so that one feeds both
    twin = build(name).graph
    inputs, outputs = list(twin.input), list(twin.output)
    del twin
    g = StdBuilder(name, q4)

    # positions P .. P+S-1 (P the past's length), the rotary angles'
    # cos and sin there ([S, HEAD], both halves), and the mask: a key
    # after the query's position or where attention_mask is 0 gets the
    # float minimum added to its score
    i64 = lambda v: np.array(v, np.int64)
    s = g.op("Gather", [g.op("Shape", ["input_ids"], "/model/Shape"),
                        g.const("/model/Constant", i64(1))],
             "/model/Gather", axis=0)
    past = g.op("Gather", [g.op("Shape", ["past_key_values.0.key"],
                                "/model/Shape_1"),
                           g.const("/model/Constant_1", i64(2))],
                "/model/Gather_1", axis=0)
    total = g.op("Add", [past, s], "/model/Add")
    one = g.const("/model/Constant_2", i64(1))
    pos = g.op("Range", [past, total, one], "/model/Range")
    inv = 1.0 / (10000.0 ** (np.arange(0, HEAD, 2, dtype=np.float64) / HEAD))
    ang = np.outer(np.arange(MAX_POS, dtype=np.float64), inv)
    r = "/model/rotary_emb"
    cs = []
    for k, (cache, f) in enumerate((("cos_cache", np.cos), ("sin_cache",
                                                          np.sin))):
        c = g.op("Gather", [g.init(cache, f(ang).astype(np.float32)), pos],
                 r + "/Gather_%d" % k, axis=0)
        cs.append(g.op("Concat", [c, c], r + "/Concat_%d" % k, axis=-1))
    cos, sin = cs
    m = "/model/causal_mask"
    keys = g.op("Range", [g.const(m + "/Constant", i64(0)), total, one],
                m + "/Range")
    rows = g.op("Unsqueeze", [pos, g.const(m + "/axes", i64([1]))],
                m + "/Unsqueeze")
    future = g.op("Greater", [keys, rows], m + "/Greater")
    pad = g.op("Equal", ["attention_mask", g.const(m + "/Constant_1",
                                                   i64(0))], m + "/Equal")
    pad = g.op("Unsqueeze", [pad, g.const(m + "/axes_1", i64([1, 2]))],
               m + "/Unsqueeze_1")
    hide = g.op("Or", [future, pad], m + "/Or")
    mask = g.op("Where", [hide, g.const(m + "/Constant_2", np.float32(
        np.finfo(np.float32).min)), g.const(m + "/Constant_3",
                                            np.float32(0))], m + "/Where")

    x = g.embedding("input_ids")
    for i in range(LAYERS):
        p = "/model/layers.%d" % i
        normed = g.rms_norm(x, g.norm_scale(
            "model.layers.%d.input_layernorm.weight" % i),
            p + "/input_layernorm")
        a = p + "/self_attn"
        q = g.linear(normed, HIDDEN, HEADS * HEAD, a + "/q_proj/MatMul")
        k = g.linear(normed, HIDDEN, KV_HEADS * HEAD, a + "/k_proj/MatMul")
        v = g.linear(normed, HIDDEN, KV_HEADS * HEAD, a + "/v_proj/MatMul")
        q = g.rotary(g.heads(q, HEADS, a + "/q"), cos, sin, a + "/q_rot")
        k = g.rotary(g.heads(k, KV_HEADS, a + "/k"), cos, sin, a + "/k_rot")
        v = g.heads(v, KV_HEADS, a + "/v")
        k = g.node("Concat", ["past_key_values.%d.key" % i, k],
                   ["present.%d.key" % i], a + "/Concat_k", axis=2)
        v = g.node("Concat", ["past_key_values.%d.value" % i, v],
                   ["present.%d.value" % i], a + "/Concat_v", axis=2)
        k = g.repeat_kv(k, a + "/repeat_k")
        v = g.repeat_kv(v, a + "/repeat_v")
        kt = g.op("Transpose", [k], a + "/Transpose", perm=[0, 1, 3, 2])
        sc = g.op("MatMul", [q, kt], a + "/MatMul")
        sc = g.op("Mul", [sc, g.const(a + "/Constant", np.float32(
            1 / np.sqrt(HEAD)))], a + "/Mul")
        sc = g.op("Add", [sc, mask], a + "/Add")
        pr = g.op("Softmax", [sc], a + "/Softmax", axis=-1)
        att = g.op("MatMul", [pr, v], a + "/MatMul_1")
        att = g.op("Transpose", [att], a + "/Transpose_1", perm=[0, 2, 1, 3])
        att = g.op("Reshape", [att, g.const(a + "/shape", i64(
            [0, 0, HEADS * HEAD]))], a + "/Reshape")
        o = g.linear(att, HEADS * HEAD, HIDDEN, a + "/o_proj/MatMul")
        h = g.op("Add", [x, o], p + "/Add")
        normed = g.rms_norm(h, g.norm_scale(
            "model.layers.%d.post_attention_layernorm.weight" % i),
            p + "/post_attention_layernorm")
        ml = p + "/mlp"
        gate = g.linear(normed, HIDDEN, INTER, ml + "/gate_proj/MatMul")
        up = g.linear(normed, HIDDEN, INTER, ml + "/up_proj/MatMul")
        sg = g.op("Sigmoid", [gate], ml + "/act_fn/Sigmoid")
        act = g.op("Mul", [gate, sg], ml + "/act_fn/Mul")
        prod = g.op("Mul", [act, up], ml + "/Mul")
        down = g.linear(prod, INTER, HIDDEN, ml + "/down_proj/MatMul")
        x = g.op("Add", [h, down], p + "/Add_1")
    fin = g.rms_norm(x, g.norm_scale("model.norm.weight"), "/model/norm")
    g.linear(fin, HIDDEN, VOCAB, "/lm_head/MatMul")
    g.nodes[-1].output[0] = "logits"

    graph = helper.make_graph(g.nodes, name, inputs, outputs, g.inits)
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def variants():
    v = {"llama_f32": dict(), "llama_f32_rope": dict(rope=True)}
    for block, asym, level in ((32, False, 0), (32, True, 4),
                               (128, True, 0), (128, False, 4)):
        v["llama_q4_b%d_%s_al%d" % (block, "asym" if asym else "sym",
                                    level)] = dict(q4=(block, asym, level))
    v["llama_q4_b32_asym_al4_rope"] = dict(q4=(32, True, 4), rope=True)
    v["llama_f32_std"] = dict()
    v["llama_q4_std"] = dict(q4=(32, False, 0))
    return v


SIZES = {"--vocab": "VOCAB", "--hidden": "HIDDEN", "--layers": "LAYERS",
         "--heads": "HEADS", "--kv-heads": "KV_HEADS", "--inter": "INTER",
         "--max-pos": "MAX_POS"}


def main():
    global HEAD
    args, want, external = sys.argv[2:], [], False
    out = sys.argv[1]
    i = 0
    while i < len(args):
        if args[i] in SIZES:
            globals()[SIZES[args[i]]] = int(args[i + 1])
            i += 2
        elif args[i] == "--external":
            external = True
            i += 1
        else:
            want.append(args[i])
            i += 1
    HEAD = HIDDEN // HEADS
    os.makedirs(out, exist_ok=True)
    for name, kw in variants().items():
        if want and name not in want:
            continue
        model = (build_std if name.endswith("_std") else build)(name, **kw)
        path = os.path.join(out, name + ".onnx")
        if external:
            if os.path.exists(path + ".data"):
                os.remove(path + ".data")
            onnx.save_model(model, path, save_as_external_data=True,
                            all_tensors_to_one_file=True,
                            location=name + ".onnx.data",
                            size_threshold=1024)
        else:
            onnx.save(model, path)
        del model
        print(name)


if __name__ == "__main__":
    main()
