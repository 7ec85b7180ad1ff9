#!/usr/bin/env python3
"""Make the fixtures of tests/test_llm_ops.c: single-node models of the
com.microsoft ops an int4 LLM decoder from onnxruntime-genai's model
builder uses (GroupQueryAttention, RotaryEmbedding, GatherBlockQuantized,
MultiHeadAttention), each with one data set whose expected outputs come
from onnxruntime-node (graph optimisation off, one thread), in ONNX's
node-test layout:

    tests/data/llm-ops/NAME/model.onnx
    tests/data/llm-ops/NAME/test_data_set_0/input_K.pb, output_K.pb
    tests/data/llm-ops/cases.txt   one line per case: NAME TOL, TOL
                                   "exact" (every bit) or a relative
                                   L2 bound per output

Run from anywhere (needs numpy, onnx and tests/ort/node_modules):

    /usr/bin/python3 tests/data/make_llm_op_fixtures.py

Seeds are fixed; shapes are small. The cases:

  gqa_*    GroupQueryAttention: prefill (empty past, or none) and one
           decode step, separate and packed QKV, kv_num_heads below
           num_heads, do_rotary with cos/sin caches (interleaved or
           not), local_window_size, softcap, scale, a ragged batch
           (seqlens_k below total_sequence_length - 1 for one row), a
           second chunk of a prompt (S > 1 after a past)
  rope_*   RotaryEmbedding: 3-D [B,S,H*D] and 4-D [B,N,S,D] input,
           interleaved or not, position_ids [B,S] or [1],
           rotary_embedding_dim below the head size
  gbq_*    GatherBlockQuantized: uint8 with bits 4 (two codes a byte)
           and 8, int4 and uint4 data, with and without zero points,
           int32 and int64 indices of rank 1 and 2, gather_axis and
           quantize_axis both ways for int4
  mha_*    MultiHeadAttention: separate Q/K/V, bias, cross attention
           (more keys than queries), scale, one query row, several
           query tiles
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "llm-ops")
RUN = os.path.join(HERE, "ort_llm_run.js")
MS = "com.microsoft"

DT = {np.dtype(np.float32): TensorProto.FLOAT,
      np.dtype(np.int32): TensorProto.INT32,
      np.dtype(np.int64): TensorProto.INT64,
      np.dtype(np.uint8): TensorProto.UINT8}

cases = []  # (name, model, {input name: array}, tol)


def vi(name, a):
    return helper.make_tensor_value_info(name, DT[a.dtype], list(a.shape))


def add(name, node, feeds, outs, inits=(), tol="exact", ir=8):
    """One case: node run on feeds (graph inputs, in order), outputs
    named outs, initializers inits."""
    g = helper.make_graph([node], name, [vi(k, v) for k, v in feeds],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                           for o in outs],
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid(MS, 1)])
    m.ir_version = ir
    cases.append((name, m, feeds, tol))


def rotary_cache(max_seq, half, base=10000.0):
    inv = 1.0 / (base ** (np.arange(half, dtype=np.float64) * 2 / (2 * half)))
    ang = np.outer(np.arange(max_seq, dtype=np.float64), inv)
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


# ---- GroupQueryAttention ----

def gqa(name, b=2, s=5, past=0, heads=4, kv=2, hs=8, packed=False,
        rotary=False, interleaved=False, window=None, softcap=None,
        scale=None, has_past=True, seqlens=None, seed=0, tol="exact"):
    rng = np.random.RandomState(seed)
    feeds = []
    if packed:
        feeds.append(("query", rng.randn(b, s, (heads + 2 * kv) * hs).astype(np.float32)))
    else:
        feeds.append(("query", rng.randn(b, s, heads * hs).astype(np.float32)))
        feeds.append(("key", rng.randn(b, s, kv * hs).astype(np.float32)))
        feeds.append(("value", rng.randn(b, s, kv * hs).astype(np.float32)))
    if has_past:
        feeds.append(("past_key", rng.randn(b, kv, past, hs).astype(np.float32)))
        feeds.append(("past_value", rng.randn(b, kv, past, hs).astype(np.float32)))
    if seqlens is None:
        seqlens = [past + s - 1] * b
    feeds.append(("seqlens_k", np.array(seqlens, np.int32)))
    feeds.append(("total_sequence_length", np.array(past + s, np.int32)))
    inits = []
    if rotary:
        cos, sin = rotary_cache(64, hs // 2)
        inits = [numpy_helper.from_array(cos, "cos_cache"),
                 numpy_helper.from_array(sin, "sin_cache")]
    names = [k for k, _ in feeds]
    ins = ["query",
           "" if packed else "key", "" if packed else "value",
           "past_key" if has_past else "", "past_value" if has_past else "",
           "seqlens_k", "total_sequence_length"]
    if rotary:
        ins += ["cos_cache", "sin_cache"]
    assert all(i in names for i in ins if i and i not in ("cos_cache", "sin_cache"))
    attrs = dict(num_heads=heads, kv_num_heads=kv)
    if rotary:
        attrs["do_rotary"] = 1
        attrs["rotary_interleaved"] = int(interleaved)
    if window is not None:
        attrs["local_window_size"] = window
    if softcap is not None:
        attrs["softcap"] = softcap
    if scale is not None:
        attrs["scale"] = scale
    node = helper.make_node("GroupQueryAttention", ins,
                            ["output", "present_key", "present_value"],
                            name=name, domain=MS, **attrs)
    add(name, node, feeds, ["output", "present_key", "present_value"], inits,
        tol)


def gqa_cases():
    gqa("gqa_prefill")
    gqa("gqa_prefill_nopast", has_past=False, seed=1)
    gqa("gqa_prefill_packed", packed=True, seed=2)
    gqa("gqa_prefill_rotary", rotary=True, hs=16, seed=3)
    gqa("gqa_prefill_rotary_il", rotary=True, interleaved=True, hs=16,
        seed=4)
    gqa("gqa_prefill_packed_rotary", packed=True, rotary=True, hs=16,
        seed=5)
    gqa("gqa_prefill_window", s=7, window=3, seed=6)
    gqa("gqa_prefill_scale", scale=0.3, seed=7)
    gqa("gqa_prefill_group4", heads=8, kv=2, seed=8)
    gqa("gqa_prefill_mha", heads=2, kv=2, hs=32, seed=9)
    gqa("gqa_prefill_ragged", b=2, s=5, seqlens=[4, 2], seed=10)
    gqa("gqa_prefill_long", b=1, s=40, heads=2, kv=1, hs=16, rotary=True,
        seed=11)
    gqa("gqa_decode", s=1, past=5, seed=12)
    gqa("gqa_decode_rotary", s=1, past=6, rotary=True, hs=16, seed=13)
    gqa("gqa_decode_rotary_il", s=1, past=6, rotary=True,
        interleaved=True, hs=16, seed=14)
    gqa("gqa_decode_packed_rotary", s=1, past=4, packed=True, rotary=True,
        hs=16, seed=15)
    gqa("gqa_decode_window", s=1, past=6, window=3, seed=16)
    gqa("gqa_decode_group4", s=1, past=3, heads=8, kv=2, hs=32, seed=17)
    gqa("gqa_decode_hs24", s=1, past=9, heads=2, kv=1, hs=24, seed=18)
    gqa("gqa_chunk", b=1, s=3, past=4, rotary=True, hs=16, seed=19)
    gqa("gqa_prefill_softcap", softcap=2.0, seed=20, tol="1e-6")
    gqa("gqa_decode_softcap", s=1, past=5, softcap=1.5, seed=21,
        tol="1e-6")


# ---- RotaryEmbedding ----

def rope(name, shape4=None, b=2, s=3, heads=2, hs=16, interleaved=False,
         pos_one=False, rdim=None, attr_heads=False, seed=0):
    rng = np.random.RandomState(seed)
    if shape4:
        x = rng.randn(b, heads, s, hs).astype(np.float32)
    else:
        x = rng.randn(b, s, heads * hs).astype(np.float32)
    half = (rdim or hs) // 2
    cos, sin = rotary_cache(16, half)
    if pos_one:
        pos = np.array([2], np.int64)
    else:
        pos = rng.randint(0, 16, (b, s)).astype(np.int64)
    attrs = dict(interleaved=int(interleaved))
    if rdim is not None:
        attrs["rotary_embedding_dim"] = rdim
    if rdim is not None or attr_heads:
        attrs["num_heads"] = heads
    node = helper.make_node("RotaryEmbedding",
                            ["input", "position_ids", "cos_cache",
                             "sin_cache"], ["output"], name=name, domain=MS,
                            **attrs)
    add(name, node, [("input", x), ("position_ids", pos)], ["output"],
        [numpy_helper.from_array(cos, "cos_cache"),
         numpy_helper.from_array(sin, "sin_cache")])


def rope_cases():
    rope("rope_3d")
    rope("rope_3d_il", interleaved=True, seed=1)
    rope("rope_4d", shape4=True, seed=2)
    rope("rope_4d_il", shape4=True, interleaved=True, seed=3)
    rope("rope_pos1", pos_one=True, seed=4)
    rope("rope_heads", attr_heads=True, hs=12, seed=5)
    rope("rope_partial", rdim=8, seed=6)
    rope("rope_partial_il", rdim=8, interleaved=True, seed=7)
    rope("rope_4d_partial", shape4=True, rdim=8, seed=8)
    rope("rope_long", b=1, s=4, heads=3, hs=40, seed=9)
    rope("rope_long_il", b=1, s=4, heads=3, hs=40, interleaved=True,
         seed=10)


# ---- GatherBlockQuantized ----

def pack_u4(codes):
    """uint4 codes [..., n] (n even) into bytes along the last axis, low
    nibble first."""
    c = codes.astype(np.uint8)
    return (c[..., 0::2] | (c[..., 1::2] << 4)).astype(np.uint8)


def pack_u4_odd(codes):
    """pack_u4 padding an odd last axis with a 0 code."""
    if codes.shape[-1] % 2:
        pad = np.zeros(codes.shape[:-1] + (1,), codes.dtype)
        codes = np.concatenate([codes, pad], -1)
    return pack_u4(codes)


def int4_tensor(name, codes, signed):
    """An INT4 / UINT4 initializer (two codes a byte, low first, in flat
    order), which onnx 1.12's helpers do not know."""
    flat = codes.reshape(-1).astype(np.int64) & 15
    if flat.size % 2:
        flat = np.concatenate([flat, [0]])
    t = TensorProto()
    t.name = name
    t.data_type = 22 if signed else 21
    t.dims.extend(codes.shape)
    t.raw_data = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8).tobytes()
    return t


def gbq(name, kind="u8", bits=4, rows=12, cols=64, block=16, zp=True,
        idx=None, idx_t=np.int64, axes=(0, 1), seed=0):
    rng = np.random.RandomState(seed)
    gather_axis, quant_axis = axes
    if idx is None:
        idx = np.array([3, 0, 11, 3, 7], idx_t)
    feeds = [("indices", np.asarray(idx).astype(idx_t))]
    attrs = dict(bits=bits, block_size=block, gather_axis=gather_axis,
                 quantize_axis=quant_axis)
    inits = []
    if kind == "u8":
        nb = (cols + block - 1) // block
        codes = rng.randint(0, 1 << bits, (rows, cols))
        data = pack_u4(codes) if bits == 4 else codes.astype(np.uint8)
        inits.append(numpy_helper.from_array(data, "data"))
        inits.append(numpy_helper.from_array(
            (rng.rand(rows, nb) * 0.1 + 0.01).astype(np.float32), "scales"))
        if zp:
            z = rng.randint(0, 1 << bits, (rows, nb))
            inits.append(numpy_helper.from_array(
                pack_u4_odd(z) if bits == 4 else z.astype(np.uint8),
                "zero_points"))
    else:
        signed = kind == "int4"
        shape = (rows, cols) if quant_axis == 1 else (cols, rows)
        lo, hi = (-8, 8) if signed else (0, 16)
        codes = rng.randint(lo, hi, shape)
        inits.append(int4_tensor("data", codes, signed))
        sshape = list(shape)
        sshape[quant_axis] = (shape[quant_axis] + block - 1) // block
        inits.append(numpy_helper.from_array(
            (rng.rand(*sshape) * 0.1 + 0.01).astype(np.float32), "scales"))
        if zp:
            inits.append(int4_tensor("zero_points",
                                     rng.randint(lo, hi, sshape), signed))
    ins = ["data", "indices", "scales"] + (["zero_points"] if zp else [])
    node = helper.make_node("GatherBlockQuantized", ins, ["output"],
                            name=name, domain=MS, **attrs)
    add(name, node, feeds, ["output"], inits, ir=10 if kind != "u8" else 8)


def gbq_cases():
    gbq("gbq_u4_zp")
    gbq("gbq_u4_nozp", zp=False, seed=1)
    gbq("gbq_u4_b32_odd", cols=96, block=32, seed=2)
    gbq("gbq_u8_zp", bits=8, seed=3)
    gbq("gbq_u8_nozp", bits=8, zp=False, seed=4)
    gbq("gbq_u4_i32_2d", idx=[[1, 2], [11, 0]], idx_t=np.int32, seed=5)
    gbq("gbq_int4_zp", kind="int4", seed=6)
    gbq("gbq_int4_nozp", kind="int4", zp=False, seed=7)
    gbq("gbq_uint4_zp", kind="uint4", seed=8)
    gbq("gbq_uint4_nozp", kind="uint4", zp=False, seed=9)
    gbq("gbq_int4_axes10", kind="int4", axes=(1, 0), seed=10)
    gbq("gbq_int4_b128", kind="int4", cols=200, block=128, seed=11)


# ---- MultiHeadAttention ----

def mha(name, b=2, s=4, kv_s=None, heads=2, hs=8, bias=False, mask=None,
        past=0, scale=None, unidir=False, seed=0, tol="exact"):
    rng = np.random.RandomState(seed)
    kv_s = s if kv_s is None else kv_s
    d = heads * hs
    feeds = [("query", rng.randn(b, s, d).astype(np.float32)),
             ("key", rng.randn(b, kv_s, d).astype(np.float32)),
             ("value", rng.randn(b, kv_s, d).astype(np.float32))]
    ins = ["query", "key", "value", "", "", "", "", ""]
    outs = ["output"]
    if bias:
        feeds.append(("bias", (rng.randn(3 * d) * 0.5).astype(np.float32)))
        ins[3] = "bias"
    total = past + kv_s
    if mask == "1d":
        feeds.append(("key_padding_mask", np.array([total - 1, total - 2][:b], np.int32)))
        ins[4] = "key_padding_mask"
    elif mask == "2d":
        m = np.ones((b, total), np.int32)
        m[-1, -2:] = 0
        feeds.append(("key_padding_mask", m))
        ins[4] = "key_padding_mask"
    if past:
        feeds.append(("past_key", rng.randn(b, heads, past, hs).astype(np.float32)))
        feeds.append(("past_value", rng.randn(b, heads, past, hs).astype(np.float32)))
        ins[6] = "past_key"
        ins[7] = "past_value"
        outs += ["present_key", "present_value"]
    while ins and ins[-1] == "":
        ins.pop()
    attrs = dict(num_heads=heads)
    if scale is not None:
        attrs["scale"] = scale
    if unidir:
        attrs["unidirectional"] = 1
    node = helper.make_node("MultiHeadAttention", ins, outs, name=name,
                            domain=MS, **attrs)
    add(name, node, feeds, outs, tol=tol)


def mha_cases():
    mha("mha_basic")
    mha("mha_bias", bias=True, seed=1)
    mha("mha_cross", s=3, kv_s=6, seed=2)
    mha("mha_scale", scale=0.2, seed=5)
    mha("mha_s1", s=1, kv_s=9, bias=True, seed=6)
    mha("mha_long", b=1, s=20, kv_s=70, heads=2, hs=8, seed=8)


def main():
    gqa_cases()
    rope_cases()
    gbq_cases()
    mha_cases()
    want = sys.argv[1:]
    if os.path.isdir(OUT) and not want:
        shutil.rmtree(OUT)
    os.makedirs(OUT, exist_ok=True)
    lines = []
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, m, feeds, tol in cases:
            if want and name not in want:
                continue
            d = os.path.join(OUT, name)
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(os.path.join(d, "test_data_set_0"))
            onnx.save(m, os.path.join(d, "model.onnx"))
            ind = os.path.join(tmp, name + "_in")
            outd = os.path.join(tmp, name + "_out")
            os.makedirs(ind)
            os.makedirs(outd)
            for k, (n, a) in enumerate(feeds):
                np.save(os.path.join(ind, n + ".npy"), a)
                t = numpy_helper.from_array(a, n)
                with open(os.path.join(d, "test_data_set_0",
                                       "input_%d.pb" % k), "wb") as f:
                    f.write(t.SerializeToString())
            r = subprocess.run(["node", RUN, os.path.join(d, "model.onnx"),
                                ind, outd], capture_output=True, text=True)
            if r.returncode != 0:
                bad.append("%s: %s" % (name, r.stderr.strip()))
                shutil.rmtree(d)
                continue
            for k, o in enumerate(m.graph.output):
                a = np.load(os.path.join(outd, "output_%d.npy" % k))
                t = numpy_helper.from_array(a, o.name)
                with open(os.path.join(d, "test_data_set_0",
                                       "output_%d.pb" % k), "wb") as f:
                    f.write(t.SerializeToString())
            lines.append("%s %s\n" % (name, tol))
    if not want:
        with open(os.path.join(OUT, "cases.txt"), "w") as f:
            f.write("".join(lines))
    for b in bad:
        print("ONNX Runtime refused", b, file=sys.stderr)
    print("%d cases" % len(lines))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
