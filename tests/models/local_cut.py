#!/usr/bin/python3
"""Copy a quantized model so that ONNX Runtime can compute qreport's local
error: every candidate tensor that qreport's local run overwrites with the
float model's value becomes a graph input, and the node that computed it
writes NAME__local instead (made a graph output, with every other
intermediate tensor, as tests/models/expose_all.py does).

    /usr/bin/python3 tests/models/local_cut.py QUANT.onnx REPORT.json K \\
        OUT.onnx OUT.json

The tensors cut are, for every pair of report.json's activations[] with
quant == K, the compared tensor (quant_tensor) and the members of its
QuantizeLinear/DequantizeLinear chain computed after it, as qreport's
src/analysis/act_match.c (fill_also) picks them. OUT.json lists them:

    {"cuts": [{"name", "float", "dtype", "scale", "zero_point"}],
     "local": {quant_tensor: tensor to read for the local value}}

"float" is the float model's tensor whose value is fed (in the cut
tensor's own domain: a float copy, or quantized with scale and zero_point
by the script that runs it); dtype is "float" or the integer type.
"""
import json
import sys

import onnx
from onnx import numpy_helper

QDQ = ("QuantizeLinear", "DequantizeLinear")
# (scale, zero point) inputs of ops whose integer output has its own
# quantization: src/analysis/act_match.c out_param_inputs
OUT_PARAMS = {
    "QuantizeLinear": (1, 2), "QLinearConv": (6, 7), "QLinearMatMul": (6, 7),
    "QLinearAdd": (6, 7), "QLinearMul": (6, 7), "QGemm": (7, 8),
    "QLinearConcat": (0, 1), "QLinearGlobalAveragePool": (3, 4),
    "QLinearAveragePool": (3, 4), "QLinearSigmoid": (3, 4),
    "QLinearLeakyRelu": (3, 4), "QLinearSoftmax": (3, 4),
}
PASSTHROUGH = {
    "MaxPool", "Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze",
    "Identity", "Slice", "Split", "Gather", "Pad", "Resize", "DepthToSpace",
    "SpaceToDepth", "Tile", "Expand",
}
INT_TYPES = {
    "uint8": onnx.TensorProto.UINT8, "int8": onnx.TensorProto.INT8,
    "uint16": onnx.TensorProto.UINT16, "int16": onnx.TensorProto.INT16,
    "int32": onnx.TensorProto.INT32,
}


def array(t):
    """The tensor's values, or None for an element type this onnx cannot
    read (INT4/UINT4 weights to onnx 1.12; only activations' scales and
    zero points are read, and a 4-bit one is then "no scale")."""
    try:
        return numpy_helper.to_array(t)
    except (KeyError, ValueError, TypeError):
        return None


def main():
    qpath, rpath, k, out_model, out_json = sys.argv[1:6]
    k = int(k)
    m = onnx.load(qpath)
    g = m.graph
    consts = {t.name: array(t) for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant" and n.output:
            for a in n.attribute:
                if a.name == "value":
                    consts[n.output[0]] = array(a.t)
    prod, pos = {}, {}
    cons = {}
    for i, n in enumerate(g.node):
        for o in n.output:
            if o:
                prod[o] = n
                pos[o] = i
        for x in n.input:
            cons.setdefault(x, []).append(n)

    # classes: tensors joined through Q/DQ (act_match.c side_classes)
    parent = {}

    def find(t):
        parent.setdefault(t, t)
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    for n in g.node:
        if n.op_type in QDQ and n.input and n.output and n.output[0]:
            parent[find(n.input[0])] = find(n.output[0])
    members = {}
    for t in list(parent):
        members.setdefault(find(t), []).append(t)

    def params_from(n, i_s, i_z):
        if i_s >= len(n.input) or consts.get(n.input[i_s]) is None:
            return None
        s = consts[n.input[i_s]].reshape(-1)
        z = None
        if i_z < len(n.input) and n.input[i_z]:
            z = consts.get(n.input[i_z])
            if z is None:
                return None
            z = z.reshape(-1)
        if s.size != 1:
            raise SystemExit(f"local_cut.py: {n.name}: per-channel "
                             "activation scales are not supported")
        dt = z.dtype.name if z is not None else "uint8"
        if dt not in INT_TYPES:
            raise SystemExit(f"local_cut.py: {n.name}: zero point of "
                             f"type {dt}")
        return float(s[0]), int(z[0]) if z is not None else 0, dt

    # act_match.c qr_am_qparams
    def qparams(name):
        cur = name
        for _ in range(16):
            n = prod.get(cur)
            if n is None:
                break
            if n.op_type == "DequantizeLinear":
                return params_from(n, 1, 2)
            if n.op_type in OUT_PARAMS:
                return params_from(n, *OUT_PARAMS[n.op_type])
            if (n.op_type not in PASSTHROUGH or not n.input or
                    n.input[0] in consts):
                break
            cur = n.input[0]
        for n in cons.get(name, []):
            if n.op_type in QDQ and len(n.input) >= 2 and n.input[0] == name:
                return params_from(n, 1, 2)
        return None

    # element types: ONNX's shape inference where it knows the op, else
    # through integer pass-through ops to the op that made the tensor
    try:
        inferred = onnx.shape_inference.infer_shapes(m).graph.value_info
        etype = {v.name: v.type.tensor_type.elem_type for v in inferred}
    except Exception:  # com.microsoft ops it cannot read
        etype = {}

    def is_float(name):
        if etype.get(name):
            return etype[name] == onnx.TensorProto.FLOAT
        n = prod.get(name)
        while n is not None and n.op_type in PASSTHROUGH and n.input:
            n = prod.get(n.input[0])
        return n is None or n.op_type not in OUT_PARAMS

    report = json.load(open(rpath))
    pairs = [a for a in report["activations"] if a["quant"] == k]
    cuts, local, seen = [], {}, set()
    graph_inputs = {i.name for i in g.input}
    for p in pairs:
        q = p["quant_tensor"]
        if q not in prod:
            local[q] = q  # a graph input: compared before the run
            continue
        local[q] = q + "__local"
        chain = [q] + sorted(
            (t for t in members.get(find(q), []) if t != q and t in prod and
             pos[t] >= pos[q]), key=lambda t: pos[t])
        for t in chain:
            if t in seen or t in graph_inputs:
                continue
            seen.add(t)
            c = {"name": t, "float": p["tensor"], "dtype": "float"}
            if not is_float(t):
                qp = qparams(t)
                if qp is None:
                    raise SystemExit(f"local_cut.py: no scale for {t}")
                c["scale"], c["zero_point"], c["dtype"] = qp
            cuts.append(c)

    cut = {c["name"]: c for c in cuts}
    for n in g.node:
        for i, o in enumerate(n.output):
            if o in cut:
                n.output[i] = o + "__local"
    for c in cuts:
        et = (onnx.TensorProto.FLOAT if c["dtype"] == "float" else
              INT_TYPES[c["dtype"]])
        g.input.append(onnx.helper.make_tensor_value_info(c["name"], et,
                                                          None))
    for o in g.output:
        if o.name in cut:
            o.name = o.name + "__local"
    have = {o.name for o in g.output}
    for n in g.node:
        if n.op_type == "Constant":
            continue
        for t in n.output:
            if t and t not in have:
                g.output.append(onnx.ValueInfoProto(name=t))
                have.add(t)
    onnx.save(m, out_model)
    json.dump({"cuts": cuts, "local": local}, open(out_json, "w"), indent=1)


if __name__ == "__main__":
    main()
