#!/usr/bin/python3
"""Write the hostile models of tests/data/hostile/, which tests/test_hostile
feeds to the real qreport binary: every broken or malicious input must
end in a one-line error naming the file or node, or in a report that shows
the hostile strings inertly. The output is committed, so CI needs no
Python; rerun after changing this:
    /usr/bin/python3 tests/data/make_hostile_fixtures.py
Needs python3-onnx (Debian 12: onnx 1.12); the checker is never run, and
cases onnx refuses to build are written as raw protobuf bytes."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hostile")
F = TensorProto.FLOAT

# The strings a hostile model hides in its names. test_hostile.c looks for
# the "alert(" payloads in the report.
SCRIPT = "<script>alert(1)</script>"
QUOTES = "q\"uo'te&<b>amp</b>"
NEWLINE = "line1\nline2\r\n<script>alert(3)</script>"
BAD_UTF8 = b"\xff\xfe\xc3(<script>alert(2)</script>\xed\xa0\x80"
# Payloads a browser would act on: test_hostile renders the report in
# headless Chromium and looks for the elements they would create.
DOM = "<script>document.body.appendChild(document.createElement('qr'+'pwned'))</script>"
ATTR = "\"'><img src=x onerror=\"document.body.appendChild(document.createElement('qr'+'pwned'))\">"


def model(nodes, inputs, outputs, inits=(), name="g", opset=13, **kw):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, producer_name="qreport-hostile",
                          opset_imports=[helper.make_opsetid("", opset)],
                          **kw)
    m.ir_version = 8
    return m


def vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def save(name, m):
    data = m if isinstance(m, bytes) else m.SerializeToString()
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def raw_tensor(name, dtype, dims, raw):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def ext_tensor(name, dims, location, offset, length):
    t = TensorProto(name=name, data_type=F, dims=dims,
                    data_location=TensorProto.EXTERNAL)
    for k, v in (("location", location), ("offset", offset),
                 ("length", length)):
        e = t.external_data.add()
        e.key = k
        e.value = str(v)
    return t


def conv_net(w, b=None, wname="conv.weight", node="conv", x="x", y="y",
             extra_nodes=(), extra_inits=(), **kw):
    """x [1, C, 6, 6] -> Conv(w) -> Relu -> y: one weighted layer."""
    c_out, c_in, kh, kw_ = w.shape
    inits = [numpy_helper.from_array(w, wname)]
    ins = [x, wname]
    if b is not None:
        inits.append(numpy_helper.from_array(b, wname + "_b"))
        ins.append(wname + "_b")
    nodes = [helper.make_node("Conv", ins, [node + "_out"], name=node,
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", [node + "_out"], [y],
                              name=node + "_relu")]
    return model(nodes + list(extra_nodes), [vi(x, [1, c_in, 6, 6])],
                 [vi(y, [1, c_out, 6, 6])], inits + list(extra_inits), **kw)


def good_bytes():
    rng = np.random.default_rng(0)
    return conv_net(rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
                    np.zeros(4, np.float32)).SerializeToString()


def corrupt():
    good = good_bytes()
    save("good.onnx", good)
    save("truncated.onnx", good[:len(good) // 2])
    # A zip (a PyTorch checkpoint given by mistake), and a PNG.
    save("wrong_magic.onnx", b"PK\x03\x04\x14\x00\x00\x00\x08\x00" +
         bytes(range(256)) * 2)
    save("png_magic.onnx", b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    save("empty.onnx", b"")
    # ir_version 8, then graph (field 7, length-delimited) claiming
    # 2^62 bytes, and a few bytes of it.
    huge = 1 << 62
    varint = bytearray()
    while True:
        byte = huge & 0x7f
        huge >>= 7
        varint.append(byte | (0x80 if huge else 0))
        if not huge:
            break
    save("huge_length.onnx", b"\x08\x08\x3a" + bytes(varint) +
         b"\x0a\x01x" * 8)
    # Same with a length just under 2 GiB, and inside a node's name.
    save("huge_length2.onnx", b"\x08\x08\x3a\x10\x0a\xff\xff\xff\xff\x07" +
         b"abc")


def shapes():
    relu = [helper.make_node("Add", ["x", "w"], ["y"], name="add_w")]

    def one(name, t, xshape=(2,)):
        save(name, model([helper.make_node("Add", ["x", t.name], ["y"],
                                           name="add_" + t.name)],
                         [vi("x", list(xshape))], [vi("y", list(xshape))],
                         [t]))
    one("dims_overflow.onnx", raw_tensor("w_overflow", F, [1 << 40] * 3,
                                         b"\0" * 8))
    one("dims_overflow2.onnx", raw_tensor("w_overflow2", F,
                                          [(1 << 62) + 1, 4], b""))
    one("neg_dims.onnx", raw_tensor("w_neg", F, [-1, 2], b"\0" * 8))
    # 1e9 float elements claimed by a file of about a hundred bytes, once
    # with 100 bytes of raw_data and once with no data at all.
    one("claim_1e9.onnx", raw_tensor("w_1e9", F, [1000000000], b"\0" * 100))
    t = TensorProto(name="w_1e9_empty", data_type=F, dims=[1000000000])
    one("claim_1e9_nodata.onnx", t)
    one("raw_len.onnx", raw_tensor("w_rawlen", F, [2, 3], b"\0" * 20),
        (2, 3))
    # A graph input claiming 1e9 x 1e9 elements: the data must never be
    # allocated from it.
    save("input_1e18.onnx", model(relu, [vi("x", [10 ** 9, 10 ** 9])],
                                  [vi("y", [10 ** 9, 10 ** 9])],
                                  [numpy_helper.from_array(
                                      np.ones(1, np.float32), "w")]))


def graphs():
    save("cycle.onnx", model(
        [helper.make_node("Relu", ["x"], ["a"], name="entry"),
         helper.make_node("Add", ["a", "t2"], ["t1"], name="loop_add"),
         helper.make_node("Relu", ["t1"], ["t2"], name="loop_relu"),
         helper.make_node("Relu", ["t2"], ["y"], name="after")],
        [vi("x", [1])], [vi("y", [1])]))
    save("self_loop.onnx", model(
        [helper.make_node("Add", ["x", "s"], ["s"], name="ouroboros"),
         helper.make_node("Relu", ["s"], ["y"], name="after")],
        [vi("x", [1])], [vi("y", [1])]))
    save("undefined_input.onnx", model(
        [helper.make_node("Relu", ["x"], ["a"], name="ok"),
         helper.make_node("Add", ["a", "ghost"], ["y"], name="haunted")],
        [vi("x", [1])], [vi("y", [1])]))
    save("dup_output.onnx", model(
        [helper.make_node("Relu", ["x"], ["t"], name="first"),
         helper.make_node("Sigmoid", ["x"], ["t"], name="second"),
         helper.make_node("Relu", ["t"], ["y"], name="last")],
        [vi("x", [1])], [vi("y", [1])]))
    save("dup_graph_output.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="only")],
        [vi("x", [1])], [vi("y", [1]), vi("y", [1])]))
    # If: a branch holding an op qreport cannot run (refused at load,
    # naming the If and the op), and a condition of two values (refused
    # at run, naming the If).
    true = numpy_helper.from_array(np.array(True), "t")
    m = model(
        [helper.make_node("Constant", [], ["c"], name="cond", value=true),
         helper.make_node("If", ["c"], ["y"], name="branchy",
                          then_branch=helper.make_graph(
                              [helper.make_node("Relu", ["x"], ["ty"], name="fine")],
                              "then", [], [vi("ty", [1])]),
                          else_branch=helper.make_graph(
                              [helper.make_node("Frobnicate", ["x"], ["ey"], name="odd",
                                                domain="com.example")],
                              "else", [], [vi("ey", [1])]))],
        [vi("x", [1])], [vi("y", [1])])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    save("if_unsupported.onnx", m)
    two = numpy_helper.from_array(np.array([True, False]), "t2")
    one = numpy_helper.from_array(np.array([1.0], np.float32), "v")
    save("if_bad_cond.onnx", model(
        [helper.make_node("Constant", [], ["c"], name="cond", value=two),
         helper.make_node("If", ["c"], ["y"], name="two_conds",
                          then_branch=helper.make_graph(
                              [helper.make_node("Constant", [], ["ty"], name="tc", value=one)],
                              "then", [], [vi("ty", [1])]),
                          else_branch=helper.make_graph(
                              [helper.make_node("Constant", [], ["ey"], name="ec", value=one)],
                              "else", [], [vi("ey", [1])]))],
        [], [vi("y", [1])]))
    # A Loop without a trip count whose condition stays true: refused
    # after qreport's iteration limit, naming the node.
    body = helper.make_graph(
        [helper.make_node("Identity", ["go_in"], ["go_out"], name="still"),
         helper.make_node("Add", ["v_in", "v_in"], ["v_out"], name="twice")],
        "body", [vi("i", [], TensorProto.INT64), vi("go_in", [], TensorProto.BOOL),
                 vi("v_in", [1])],
        [vi("go_out", [], TensorProto.BOOL), vi("v_out", [1])])
    save("loop_forever.onnx", model(
        [helper.make_node("Constant", [], ["go"], name="cond", value=true),
         helper.make_node("Constant", [], ["v0"], name="start", value=one),
         helper.make_node("Loop", ["", "go", "v0"], ["y"], name="forever", body=body)],
        [], [vi("y", [1])]))
    # 10,000 inputs: a Sum (legal) and a Relu (one input expected).
    save("wide_sum.onnx", model(
        [helper.make_node("Sum", ["x"] * 10000, ["y"], name="wide_sum")],
        [vi("x", [4])], [vi("y", [4])]))
    save("wide_relu.onnx", model(
        [helper.make_node("Relu", ["x"] * 10000, ["y"], name="wide_relu")],
        [vi("x", [4])], [vi("y", [4])]))


def external():
    with open(os.path.join(OUT, "ext_small.bin"), "wb") as f:
        f.write(b"\0" * 8)

    def one(name, t):
        save(name, model([helper.make_node("Add", ["x", t.name], ["y"],
                                           name="add_" + t.name)],
                         [vi("x", [2])], [vi("y", [2])], [t]))
    one("ext_dotdot.onnx", ext_tensor("w_dotdot", [2],
                                      "../hostile/ext_small.bin", 0, 8))
    one("ext_abs.onnx", ext_tensor("w_abs", [2], "/etc/passwd", 0, 8))
    # test_hostile makes link.bin -> a file outside the model's folder.
    one("ext_symlink.onnx", ext_tensor("w_link", [2], "link.bin", 0, 8))
    one("ext_past_end.onnx", ext_tensor("w_far", [2], "ext_small.bin",
                                        1 << 40, 8))


def strings():
    """Hostile names everywhere the report shows a string."""
    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((2, 4, 1, 1)).astype(np.float32)
    xin = "input" + SCRIPT
    t1 = "act" + QUOTES + ATTR
    inits = [numpy_helper.from_array(w1, "w" + SCRIPT),
             numpy_helper.from_array(w2, "w2" + NEWLINE)]
    nodes = [helper.make_node("Conv", [xin, "w" + SCRIPT], [t1],
                              name="conv" + SCRIPT, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", [t1], ["r" + NEWLINE],
                              name="relu" + QUOTES + DOM),
             helper.make_node("Conv", ["r" + NEWLINE, "w2" + NEWLINE],
                              ["out" + SCRIPT], name="conv2" + NEWLINE)]
    m = model(nodes, [vi(xin, [1, 3, 6, 6])], [vi("out" + SCRIPT,
                                                  [1, 2, 6, 6])],
              inits, name="graph" + SCRIPT)
    m.producer_name = "producer" + SCRIPT
    m.producer_version = QUOTES
    m.doc_string = "doc" + NEWLINE
    m.domain = "domain" + SCRIPT
    helper.set_model_props(m, {"key" + SCRIPT: "value" + SCRIPT,
                               "quotes": QUOTES, "newline": NEWLINE,
                               "dom": DOM, "attr" + ATTR: ATTR})
    save("strings.onnx", m)
    # python-onnx only takes valid UTF-8: placeholders of the same length
    # are patched with invalid bytes in the serialized model.
    m2 = model([helper.make_node("Conv", ["x", "WBADUTF8" + "_" * 30],
                                 ["y"], name="NBADUTF8" + "_" * 30,
                                 pads=[1, 1, 1, 1])],
               [vi("x", [1, 3, 6, 6])], [vi("y", [1, 4, 6, 6])],
               [numpy_helper.from_array(w1, "WBADUTF8" + "_" * 30)])
    helper.set_model_props(m2, {"MBADUTF8" + "_" * 30: "x"})
    data = m2.SerializeToString()
    for tag in (b"WBADUTF8", b"NBADUTF8", b"MBADUTF8"):
        placeholder = tag + b"_" * 30
        repl = (tag[:1] + BAD_UTF8).ljust(len(placeholder), b"_")
        assert len(repl) == len(placeholder)
        data = data.replace(placeholder, repl)
    save("bad_utf8.onnx", data)


def values():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    w[0, 0, 0, 0] = np.nan
    w[1, 1, 1, 1] = np.inf
    w[2, 2, 2, 2] = -np.inf
    save("nan_weights.onnx", conv_net(w, np.array([np.nan, 0, 1, np.inf],
                                                  np.float32)))
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    w[0] = 0.0          # an all-zero output channel
    w[1] = 0.25         # a constant (zero-range) output channel
    w[2, 0] = -1.5      # a constant input slice
    save("zero_range.onnx", conv_net(w, np.zeros(4, np.float32)))
    save("all_zero.onnx", conv_net(np.zeros((4, 3, 3, 3), np.float32),
                                   np.zeros(4, np.float32)))
    # The output ignores the input: x * 0 + c, and a Conv whose input is a
    # constant.
    c = numpy_helper.from_array(np.full((1, 3, 6, 6), 2.0, np.float32), "c")
    zero = numpy_helper.from_array(np.zeros(1, np.float32), "zero")
    # conv_net declares "xc" as the graph input; x is the input instead.
    m = conv_net(rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
                 x="xc",
                 extra_nodes=[helper.make_node("Mul", ["x", "zero"], ["x0"],
                                               name="times_zero"),
                              helper.make_node("Add", ["x0", "c"], ["xc"],
                                               name="plus_c")],
                 extra_inits=[c, zero])
    del m.graph.input[:]
    m.graph.input.extend([vi("x", [1, 3, 6, 6])])
    save("const_output.onnx", m)


def dataset():
    """Files test_hostile mixes into --data folders."""
    import struct
    import zlib

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data)))
    ihdr = struct.pack(">IIBBBBB", 0, 0, 8, 0, 0, 0, 0)  # 0x0, gray 8
    with open(os.path.join(OUT, "zero_size.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) +
                chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b""))
    with open(os.path.join(OUT, "garbage.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    with open(os.path.join(OUT, "notes.txt"), "w") as f:
        f.write("not an image\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    corrupt()
    shapes()
    graphs()
    external()
    strings()
    values()
    dataset()
    return 0


if __name__ == "__main__":
    sys.exit(main())
