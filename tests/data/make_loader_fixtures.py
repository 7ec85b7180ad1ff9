#!/usr/bin/python3
"""Write the small .onnx fixtures of tests/data/loader/ (loader and graph
tests). The output is committed, so CI needs no Python; rerun this after
changing it:  /usr/bin/python3 tests/data/make_loader_fixtures.py
Needs python3-onnx (Debian 12: onnx 1.12)."""
import os
import struct
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "loader")
F = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits=(), value_info=(), opsets=None,
          name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits),
                          value_info=list(value_info))
    m = helper.make_model(g, producer_name="qreport-fixtures",
                          opset_imports=opsets or [helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def save(name, m):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(m.SerializeToString() if hasattr(m, "SerializeToString") else m)


def raw_tensor(name, dtype, dims, raw):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def one_init(t, x_shape=(2, 3)):
    """A model whose only node adds initializer t to input x."""
    return model([helper.make_node("Add", ["x", t.name], ["y"], name="add")],
                 [vi("x", list(x_shape))], [vi("y", list(x_shape))], [t])


def ext_tensor(name, dtype, dims, location, offset, length):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset),
                 ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key = k
            e.value = str(v)
    return t


def varint(n):
    out = b""
    while True:
        b = n & 0x7f
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def field(num, payload):
    """A length-delimited protobuf field, written by hand."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def tensor_raws(name, dims, raws):
    """A float TensorProto whose raw_data field appears once per raws
    entry (protobuf keeps the last)."""
    t = TensorProto()
    t.name = name
    t.data_type = F
    t.dims.extend(dims)
    return t.SerializeToString() + b"".join(field(9, r) for r in raws)


def model_graphs(m, graphs):
    """m's bytes with its graph field written once per graphs entry, each
    a (GraphProto, [initializer bytes]) pair (protobuf merges them)."""
    m = type(m).FromString(m.SerializeToString())
    m.ClearField("graph")
    out = m.SerializeToString()
    for g, inits in graphs:
        gb = g.SerializeToString() + b"".join(field(5, t) for t in inits)
        out += field(7, gb)
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3),
                                "w")

    # Hostile files.
    good = one_init(numpy_helper.from_array(
        np.arange(64, dtype=np.float32), "w")).SerializeToString()
    save("truncated.onnx", good[:len(good) // 2])
    save("not_onnx.onnx", b"this is not an onnx model, just some text\n")
    save("empty.onnx", b"")
    save("no_graph.onnx", b"\x08\x08")  # ir_version 8, no graph
    m = one_init(w)
    m.ClearField("ir_version")
    save("no_ir.onnx", m)
    save("bad_dtype.onnx", one_init(raw_tensor("w_bad", 99, [1], b"\0" * 4),
                                    (1,)))
    save("raw_len.onnx", one_init(raw_tensor("w_len", F, [2, 3], b"\0" * 20)))
    save("neg_dim.onnx", one_init(raw_tensor("w_neg", F, [-1, 2], b"")))
    save("overflow.onnx", one_init(raw_tensor("w_big", F,
                                              [1 << 40] * 3, b"")))
    cbad = TensorProto()
    cbad.CopyFrom(raw_tensor("", F, [4], b"\0" * 3))
    save("const_bad.onnx", model(
        [helper.make_node("Constant", [], ["k"], name="kbad", value=cbad)],
        [], [vi("k", [4])]))

    # Subgraphs nested too deep: 70 levels pass the wire check and hit the
    # loader's graph limit (64); 100 levels are refused before decoding.
    for name, levels in (("deep_graph.onnx", 70), ("deep_wire.onnx", 100)):
        g = helper.make_graph([], "leaf", [], [])
        for _ in range(levels):
            g = helper.make_graph(
                [helper.make_node("If", ["c"], ["o"], then_branch=g,
                                  else_branch=helper.make_graph([], "e",
                                                                [], []))],
                "g", [], [])
        m = helper.make_model(g)
        m.ir_version = 8
        save(name, m)

    # External data.
    with open(os.path.join(OUT, "ext_ok.bin"), "wb") as f:
        f.write(struct.pack("<6f", 0.5, 1.5, 2.5, 3.5, 4.5, 5.5))  # 0..24
        f.write(struct.pack("<4b", -1, 2, -3, 4))                   # 24..28
        f.write(b"\xee")                                           # 28
        f.write(struct.pack("<2f", -7.25, 8.0))                    # 29..37
    save("ext_ok.onnx", model(
        [helper.make_node("Add", ["x", "e_w"], ["y"], name="add"),
         helper.make_node("Cast", ["e_q"], ["q"], name="cast", to=F),
         helper.make_node("Cast", ["e_odd"], ["o"], name="cast2", to=F)],
        [vi("x", [2, 3])], [vi("y", [2, 3]), vi("q", [4]), vi("o", [2])],
        [ext_tensor("e_w", F, [2, 3], "ext_ok.bin", 0, 24),
         ext_tensor("e_q", TensorProto.INT8, [4], "ext_ok.bin", 24, 4),
         ext_tensor("e_odd", F, [2], "ext_ok.bin", 29, None)]))
    with open(os.path.join(OUT, "ext_small.bin"), "wb") as f:
        f.write(b"\0" * 8)
    save("ext_past_end.onnx", one_init(
        ext_tensor("w_far", F, [2], "ext_small.bin", 100, 8), (2,)))
    save("ext_too_long.onnx", one_init(
        ext_tensor("w_long", F, [4], "ext_small.bin", 0, 16), (4,)))
    save("ext_len.onnx", one_init(
        ext_tensor("w_short", F, [2], "ext_small.bin", 0, 4), (2,)))
    save("ext_dotdot.onnx", one_init(
        ext_tensor("w_up", F, [2], "../ext_small.bin", 0, 8), (2,)))
    save("ext_dotdot2.onnx", one_init(
        ext_tensor("w_up2", F, [2], "sub/../../x.bin", 0, 8), (2,)))
    save("ext_abs.onnx", one_init(
        ext_tensor("w_abs", F, [2], "/etc/hostname", 0, 8), (2,)))
    save("ext_missing.onnx", one_init(
        ext_tensor("w_gone", F, [2], "no_such_file.bin", 0, 8), (2,)))
    # The test creates link.bin -> a file outside the folder at run time.
    save("ext_symlink.onnx", one_init(
        ext_tensor("w_link", F, [2], "link.bin", 0, 8), (2,)))

    # Typed fields instead of raw_data.
    f16 = TensorProto(name="t_f16", data_type=TensorProto.FLOAT16, dims=[3])
    f16.int32_data.extend(int(v) for v in
                          np.array([1.0, -2.5, 65504.0], np.float16)
                          .view(np.uint16))
    i4 = raw_tensor("t_i4", 22, [3], bytes([0x7f, 0x08]))  # 0xf,0x7,0x8
    u4 = TensorProto(name="t_u4", data_type=21, dims=[3])
    u4.int32_data.extend([0x5a, 0x0f])                        # 10,5,15
    bf16 = raw_tensor("t_bf16", TensorProto.BFLOAT16, [2],
                      struct.pack("<2H", 0x3fc0, 0xc100))     # 1.5, -8
    inits = [
        helper.make_tensor("t_f32", F, [2, 2], [1.0, -2.0, 3.5, 4.25]),
        helper.make_tensor("t_i8", TensorProto.INT8, [4], [-128, -1, 0, 127]),
        f16,
        helper.make_tensor("t_u8", TensorProto.UINT8, [2], [0, 255]),
        helper.make_tensor("t_bool", TensorProto.BOOL, [3], [1, 0, 1]),
        helper.make_tensor("t_i64", TensorProto.INT64, [2], [-5, 1 << 40]),
        helper.make_tensor("t_f64", TensorProto.DOUBLE, [1], [0.125]),
        helper.make_tensor("t_u32", TensorProto.UINT32, [2], [7, 4000000000]),
        helper.make_tensor("t_str", TensorProto.STRING, [2], [b"a", b"bc"]),
        i4, u4, bf16,
    ]
    save("typed.onnx", model(
        [helper.make_node("Identity", [t.name], ["o_" + t.name])
         for t in inits],
        [], [vi("o_" + t.name, None, t.data_type) for t in inits], inits))

    # Constant nodes (value, value_floats, value_int), seen through
    # Identity; unnamed nodes; metadata, dim_param, opsets, value_info.
    m = model(
        [helper.make_node("Constant", [], ["cw"], name="const_w", value=w),
         helper.make_node("Constant", [], ["cb"], value_floats=[0.5, -0.5]),
         helper.make_node("Constant", [], ["ci"], value_int=42),
         helper.make_node("Identity", ["cw"], ["cw_id"]),
         helper.make_node("Identity", ["cw_id"], ["cw_id2"]),
         helper.make_node("Gemm", ["x", "cw_id2", "cb"], ["y"], name="gemm",
                          transB=1, alpha=0.5),
         helper.make_node("Clip", ["y", "", "clip_max"], ["z"], name="clip")],
        [vi("x", ["batch", 3])], [vi("z", ["batch", 2]), vi("ci", [])],
        [numpy_helper.from_array(np.array(6.0, np.float32), "clip_max")],
        value_info=[vi("y", ["batch", 2])],
        opsets=[helper.make_opsetid("ai.onnx", 13),
                helper.make_opsetid("com.microsoft", 1)])
    helper.set_model_props(m, {"author": "qreport", "purpose": "tests"})
    save("const.onnx", m)

    # Graph errors (the loader accepts these; qr_graph_new refuses them).
    save("cycle.onnx", model(
        [helper.make_node("Relu", ["x"], ["a"], name="entry"),
         helper.make_node("Add", ["a", "t2"], ["t1"], name="loop_add"),
         helper.make_node("Relu", ["t1"], ["t2"], name="loop_relu"),
         helper.make_node("Relu", ["t2"], ["y"], name="after")],
        [vi("x", [1])], [vi("y", [1])]))
    save("undef.onnx", model(
        [helper.make_node("Relu", ["x"], ["a"], name="ok"),
         helper.make_node("Add", ["a", "ghost"], ["y"], name="haunted")],
        [vi("x", [1])], [vi("y", [1])]))
    save("dup.onnx", model(
        [helper.make_node("Relu", ["x"], ["t"], name="first"),
         helper.make_node("Sigmoid", ["x"], ["t"], name="second"),
         helper.make_node("Relu", ["t"], ["y"], name="last")],
        [vi("x", [1])], [vi("y", [1])]))

    # Out-of-order DAG with an If whose branches read outer tensors.
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["s"], ["then_out"], name="then_relu")],
        "then", [], [vi("then_out", [2])])
    else_g = helper.make_graph([], "else", [], [vi("r", [2])])
    save("order.onnx", model(
        [helper.make_node("Add", ["r", "s"], ["y"], name="n_add"),
         helper.make_node("If", ["c"], ["z"], name="n_if",
                          then_branch=then_g, else_branch=else_g),
         helper.make_node("Relu", ["x"], ["r"], name="n_relu"),
         helper.make_node("Sigmoid", ["r"], ["s"], name="n_sig"),
         helper.make_node("Greater", ["x", "zero"], ["c0"], name="n_gt"),
         helper.make_node("ReduceMin", ["c0"], ["c"], name="n_all",
                          keepdims=0)],
        [vi("x", [2])], [vi("y", [2]), vi("z", [2])],
        [numpy_helper.from_array(np.zeros(2, np.float32), "zero")]))
    # Initializers written by hand the way protobuf allows and a
    # copying-free loader must still read right: raw_data twice (the last
    # counts), and the graph field twice (merged: initializers appended).
    ar = np.arange(2048, dtype=np.float32)
    base = one_init(numpy_helper.from_array(np.zeros(4, np.float32), "w"),
                    x_shape=(4,))
    g = type(base.graph).FromString(base.graph.SerializeToString())
    g.ClearField("initializer")
    save("raw_twice_small.onnx", model_graphs(base, [(g, [tensor_raws(
        "w", [4], [np.full(2048, 7, np.float32).tobytes(),
                   np.array([1, 2, 3, 4], np.float32).tobytes()])])]))
    base = one_init(numpy_helper.from_array(ar, "w"), x_shape=(2048,))
    g = type(base.graph).FromString(base.graph.SerializeToString())
    g.ClearField("initializer")
    save("raw_twice_big.onnx", model_graphs(base, [(g, [tensor_raws(
        "w", [2048], [np.full(4, 7, np.float32).tobytes(), ar.tobytes()])])]))
    g2 = type(g)()
    g2.name = "g"
    save("two_graphs.onnx", model_graphs(base, [
        (g, [tensor_raws("w", [2048], [ar.tobytes()])]),
        (g2, [tensor_raws("v", [2048], [(2 * ar).tobytes()])])]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
