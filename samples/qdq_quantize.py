"""Static post-training quantizer for ONNX models, in the style of ONNX Runtime.

Test-model generator for qreport. It is NOT part of qreport, which is a C
program and never runs Python. It exists because onnxruntime's Python package
is not available in the build environment. With numpy + onnx.helper it writes
models laid out the way `onnxruntime.quantization.quantize_static` lays them
out after `quant_pre_process`, tensor names included.

Public API
----------
    prepare(model)                    -> model   Constant/Identity-of-initializer
                                                 inlined, BatchNormalization folded
                                                 into the preceding Conv (the ORT
                                                 optimizer does this in pre-processing)
    calibrate_minmax(model, inputs)   -> {tensor: (min, max)}
    quantize_qdq(model, calib_inputs, per_channel=True, gemm_per_channel=False)
    quantize_qoperator(model, calib_inputs, per_channel=True)
    rename_opaque(model)              -> model   every tensor/node renamed t<i>/n<i>
    Runner(model).run({"input": x})   -> {tensor: ndarray} (every tensor)

`calib_inputs` is a list of dicts {input_name: ndarray}, or a list of arrays
for a model with one input.

Conventions copied from ORT (onnxruntime/python/tools/quantization)
--------------------------------------------------------------------
* activations: uint8, asymmetric MinMax; rmin=min(min,0), rmax=max(max,0),
  scale=(rmax-rmin)/255, zp=round(-rmin/scale).
* weights: int8, symmetric, range [-127,127]; scale=max|w|/127, zp=0;
  per-channel along axis 0 for Conv (DequantizeLinear gets axis=0);
  per-tensor for Gemm (the default here, as the brief asks; ORT itself would
  go per-channel when per_channel=True, see gemm_per_channel).
* bias: int32, scale = input_scale * weight_scale (* beta for Gemm), zp=0.
* QDQ names:
    activation X: X_QuantizeLinear (node) -> X_QuantizeLinear_Output ->
                  X_DequantizeLinear (node) -> X_DequantizeLinear_Output;
                  initializers X_scale, X_zero_point.
                  A graph output Y becomes: producer -> Y_QuantizeLinear_Input ->
                  Q -> Y_QuantizeLinear_Output -> DQ -> Y.
    weight W:     W_quantized, W_scale, W_zero_point -> W_DequantizeLinear (node)
                  -> W_DequantizeLinear_Output.
    bias B:       B_quantized, B_quantized_scale, B_quantized_zero_point ->
                  B_DequantizeLinear (node) -> B (the original name).
    Relu/Clip straight after a quantized op are removed (QDQRemovableActivation):
    the producer writes the activation's output tensor name directly.
    MaxPool/AveragePool outputs share the input's scale/zero-point initializers.
* QOperator names (ONNXQuantizer):
    float input X  -> X_QuantizeLinear (node) -> X_quantized; X_scale, X_zero_point
    node N, output Y -> N_quant (QLinearConv / com.microsoft QGemm /
                        QLinearGlobalAveragePool / QLinearAdd ...) -> Y_quantized;
                        Y_scale, Y_zero_point
    quantized Y needed by a float op or graph output -> Y_DequantizeLinear -> Y
    Relu/Clip after a quantized op are dropped (their range is used for the
    producer's output).
* BN folding (ORT ConvBNFusion): W -> ConvBnFusion_W_<W>,
  bias -> ConvBnFusion_BN_B_<bn bias>; the Conv takes over the BN output name.
* producer_name "onnx.quantize", producer_version "0.1.0".
"""

import copy
from collections import OrderedDict

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

PRODUCER_NAME = "onnx.quantize"
PRODUCER_VERSION = "0.1.0"
MS_DOMAIN = "com.microsoft"


# --------------------------------------------------------------------------
# small graph helpers
# --------------------------------------------------------------------------

def _attrs(node):
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, TensorProto):
            v = numpy_helper.to_array(v)
        out[a.name] = v
    return out


def _inits(model):
    return {i.name: i for i in model.graph.initializer}


def _consumers(model):
    cons = {}
    for n in model.graph.node:
        for i in n.input:
            if i:
                cons.setdefault(i, []).append(n)
    return cons


def _graph_outputs(model):
    return {o.name for o in model.graph.output}


def _graph_inputs(model):
    inits = _inits(model)
    return {i.name for i in model.graph.input if i.name not in inits}


def _set_initializer(model, name, array):
    for i, t in enumerate(model.graph.initializer):
        if t.name == name:
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(array, name))
            return
    model.graph.initializer.append(numpy_helper.from_array(array, name))


def _scalar_init(name, array_value, dtype):
    return numpy_helper.from_array(np.array(array_value, dtype=dtype).reshape(()), name)


def _unique_name(existing, base):
    if base not in existing:
        return base
    k = 1
    while "%s_token_%d" % (base, k) in existing:
        k += 1
    return "%s_token_%d" % (base, k)


def _all_names(model):
    names = {i.name for i in model.graph.initializer}
    names |= {i.name for i in model.graph.input}
    for n in model.graph.node:
        names.update(n.input)
        names.update(n.output)
    return names


def topological_sort(model):
    """Stable Kahn sort: among ready nodes, always emit the earliest-listed."""
    import heapq
    nodes = list(model.graph.node)
    available = {i.name for i in model.graph.initializer} | {i.name for i in model.graph.input} | {""}
    producers = {}
    for idx, n in enumerate(nodes):
        for o in n.output:
            producers[o] = idx
    deps = []
    users = {}
    for idx, n in enumerate(nodes):
        d = {producers[i] for i in n.input if i not in available and i in producers}
        deps.append(d)
        for p in d:
            users.setdefault(p, []).append(idx)
    ready = [i for i, d in enumerate(deps) if not d]
    heapq.heapify(ready)
    order = []
    remaining = [len(d) for d in deps]
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users.get(i, []):
            remaining[u] -= 1
            if remaining[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(nodes):
        raise RuntimeError("graph has a cycle or undefined inputs")
    del model.graph.node[:]
    model.graph.node.extend([nodes[i] for i in order])
    return model


def remove_unused(model):
    """Drop nodes whose outputs nobody uses (except graph outputs) and unused initializers."""
    outs = _graph_outputs(model)
    changed = True
    while changed:
        changed = False
        used = set(outs)
        for n in model.graph.node:
            used.update(n.input)
        keep = [n for n in model.graph.node if any(o in used for o in n.output)]
        if len(keep) != len(model.graph.node):
            del model.graph.node[:]
            model.graph.node.extend(keep)
            changed = True
    used = set(outs)
    for n in model.graph.node:
        used.update(n.input)
    keep = [i for i in model.graph.initializer if i.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep)
    keep_in = [i for i in model.graph.input if i.name in used or i.name not in _inits(model)]
    del model.graph.input[:]
    model.graph.input.extend(keep_in)
    return model


# --------------------------------------------------------------------------
# pre-processing (what ORT's quant_pre_process / basic optimizer does to us)
# --------------------------------------------------------------------------

def inline_constants(model):
    """Constant nodes -> initializers; Identity(initializer) -> initializer copy."""
    model = copy.deepcopy(model)
    inits = _inits(model)
    keep = []
    for n in model.graph.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            val = _attrs(n)["value"]
            model.graph.initializer.append(numpy_helper.from_array(np.asarray(val), n.output[0]))
            inits = _inits(model)
        elif n.op_type == "Identity" and n.input[0] in inits:
            arr = numpy_helper.to_array(inits[n.input[0]])
            model.graph.initializer.append(numpy_helper.from_array(arr.copy(), n.output[0]))
            inits = _inits(model)
        else:
            keep.append(n)
    del model.graph.node[:]
    model.graph.node.extend(keep)
    return remove_unused(model)


def fold_batchnorm(model):
    """Fold Conv -> BatchNormalization into one Conv, with ORT's ConvBNFusion names."""
    model = copy.deepcopy(model)
    inits = _inits(model)
    cons = _consumers(model)
    gouts = _graph_outputs(model)
    names = _all_names(model)
    remove = set()
    for conv in list(model.graph.node):
        if conv.op_type != "Conv" or conv.output[0] in gouts:
            continue
        c = cons.get(conv.output[0], [])
        if len(c) != 1 or c[0].op_type != "BatchNormalization":
            continue
        bn = c[0]
        if not all(x in inits for x in bn.input[1:5]) or conv.input[1] not in inits:
            continue
        if len(conv.input) > 2 and conv.input[2] and conv.input[2] not in inits:
            continue
        eps = _attrs(bn).get("epsilon", 1e-5)
        scale, b, mean, var = [numpy_helper.to_array(inits[x]).astype(np.float64) for x in bn.input[1:5]]
        w = numpy_helper.to_array(inits[conv.input[1]]).astype(np.float64)
        has_bias = len(conv.input) > 2 and conv.input[2]
        cb = numpy_helper.to_array(inits[conv.input[2]]).astype(np.float64) if has_bias else np.zeros(w.shape[0])
        alpha = scale / np.sqrt(var + eps)
        w_new = (w * alpha.reshape([-1] + [1] * (w.ndim - 1))).astype(np.float32)
        b_new = ((cb - mean) * alpha + b).astype(np.float32)
        w_name = _unique_name(names, "ConvBnFusion_W_" + conv.input[1])
        names.add(w_name)
        b_name = _unique_name(names, "ConvBnFusion_BN_B_" + bn.input[2])
        names.add(b_name)
        model.graph.initializer.extend([numpy_helper.from_array(w_new, w_name),
                                        numpy_helper.from_array(b_new, b_name)])
        inputs = [conv.input[0], w_name, b_name]
        del conv.input[:]
        conv.input.extend(inputs)
        conv.output[0] = bn.output[0]
        remove.add(id(bn))
    keep = [n for n in model.graph.node if id(n) not in remove]
    del model.graph.node[:]
    model.graph.node.extend(keep)
    return remove_unused(model)


def prepare(model):
    return fold_batchnorm(inline_constants(model))


# --------------------------------------------------------------------------
# a tiny ONNX interpreter (numpy + torch.nn.functional), covers our op set
# --------------------------------------------------------------------------

def _t(x, dtype=torch.float32):
    x = np.ascontiguousarray(x)
    if not x.flags.writeable:
        x = x.copy()
    return torch.from_numpy(x).to(dtype)


def _bcast(s, ndim, axis):
    s = np.asarray(s)
    if s.ndim == 0 or s.size == 1:
        return s.reshape(())
    shape = [1] * ndim
    shape[axis] = -1
    return s.reshape(shape)


def _qrange(dtype):
    info = np.iinfo(dtype)
    return info.min, info.max


def quantize_linear(x, scale, zp=None, axis=1):
    zp = np.array(0, np.uint8) if zp is None else np.asarray(zp)
    ax = axis if axis >= 0 else axis + x.ndim
    s = _bcast(scale, x.ndim, ax).astype(np.float32)
    z = _bcast(zp, x.ndim, ax).astype(np.int64)
    q = np.rint(x.astype(np.float32) / s).astype(np.int64) + z
    lo, hi = _qrange(zp.dtype)
    return np.clip(q, lo, hi).astype(zp.dtype)


def dequantize_linear(x, scale, zp=None, axis=1):
    x = np.asarray(x)
    ax = axis if axis >= 0 else axis + x.ndim
    s = _bcast(scale, x.ndim, ax).astype(np.float32)
    z = 0 if zp is None else _bcast(zp, x.ndim, ax).astype(np.int64)
    return ((x.astype(np.int64) - z).astype(np.float32) * s).astype(np.float32)


def _conv(x, w, b, a, dtype=torch.float32):
    nd = w.ndim - 2
    pads = list(a.get("pads", [0] * 2 * nd))
    strides = list(a.get("strides", [1] * nd))
    dil = list(a.get("dilations", [1] * nd))
    group = a.get("group", 1)
    if a.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise NotImplementedError("auto_pad")
    X = _t(x, dtype)
    if pads[:nd] != pads[nd:]:
        fp = []
        for d in reversed(range(nd)):
            fp += [pads[d], pads[d + nd]]
        X = F.pad(X, fp)
        pads = [0] * 2 * nd
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    Y = fn(X, _t(w, dtype), None if b is None else _t(b, dtype), strides, pads[:nd], dil, group)
    return Y.numpy()


def w_pads_asym(a):
    pads = list(a.get("pads", [0, 0, 0, 0]))
    return pads[:len(pads) // 2] != pads[len(pads) // 2:]


def _pool(x, a, kind):
    k = list(a["kernel_shape"])
    nd = len(k)
    pads = list(a.get("pads", [0] * 2 * nd))
    strides = list(a.get("strides", [1] * nd))
    ceil = bool(a.get("ceil_mode", 0))
    X = _t(x.astype(np.float32))
    if pads[:nd] != pads[nd:]:
        raise NotImplementedError("asymmetric pool pads")
    if kind == "max":
        Y = F.max_pool2d(X, k, strides, pads[:nd], a.get("dilations", [1] * nd), ceil)
    else:
        Y = F.avg_pool2d(X, k, strides, pads[:nd], ceil, bool(a.get("count_include_pad", 0)))
    return Y.numpy()


def _requant(acc, multiplier, zp):
    y = np.rint(acc.astype(np.float32) * multiplier.astype(np.float32)).astype(np.int64) + np.asarray(zp).astype(np.int64)
    lo, hi = _qrange(np.asarray(zp).dtype)
    return np.clip(y, lo, hi).astype(np.asarray(zp).dtype)


def _gemm_int(a, b, a_zp, b_zp, trans_a, trans_b):
    A = a.astype(np.float64) - np.asarray(a_zp, np.float64)
    B = b.astype(np.float64) - np.asarray(b_zp, np.float64)
    if trans_a:
        A = A.T
    if trans_b:
        B = B.T
    return A @ B


def _op(node, ins, a):
    t = node.op_type
    x = ins[0] if ins else None
    if t == "Conv":
        return [_conv(x, ins[1], ins[2] if len(ins) > 2 else None, a).astype(np.float32)]
    if t == "ConvTranspose":
        # 2-D, symmetric pads, no output_padding (what the test detectors use)
        if any(a.get("output_padding", [0])) or "output_shape" in a or w_pads_asym(a):
            raise NotImplementedError("ConvTranspose with output_padding, output_shape or asymmetric pads")
        pads = list(a.get("pads", [0, 0, 0, 0]))
        Y = F.conv_transpose2d(_t(x), _t(ins[1]), None if len(ins) < 3 or ins[2] is None else _t(ins[2]),
                               list(a.get("strides", [1, 1])), pads[:2], 0, a.get("group", 1),
                               list(a.get("dilations", [1, 1])))
        return [Y.numpy().astype(np.float32)]
    if t == "Resize":
        # nearest, integer scales given as the scales input (torch's export
        # of F.interpolate(scale_factor=k, mode="nearest"))
        scales = ins[2] if len(ins) > 2 and ins[2] is not None and np.size(ins[2]) else None
        if a.get("mode", b"nearest") not in (b"nearest", "nearest") or scales is None or \
                any(float(s) != int(s) for s in scales):
            raise NotImplementedError("Resize other than nearest by integer scales")
        y = x
        for ax, k in enumerate(int(s) for s in scales):
            if k != 1:
                y = np.repeat(y, k, axis=ax)
        return [y]
    if t == "BatchNormalization":
        s, b, m, v = ins[1:5]
        shp = [1, -1] + [1] * (x.ndim - 2)
        eps = a.get("epsilon", 1e-5)
        y = (x - m.reshape(shp)) / np.sqrt(v.reshape(shp) + eps) * s.reshape(shp) + b.reshape(shp)
        return [y.astype(np.float32)]
    if t == "Relu":
        return [np.maximum(x, 0).astype(x.dtype)]
    if t == "Clip":
        lo = ins[1] if len(ins) > 1 and ins[1] is not None else a.get("min", None)
        hi = ins[2] if len(ins) > 2 and ins[2] is not None else a.get("max", None)
        y = x
        if lo is not None:
            y = np.maximum(y, np.asarray(lo, dtype=x.dtype))
        if hi is not None:
            y = np.minimum(y, np.asarray(hi, dtype=x.dtype))
        return [y]
    if t == "GlobalAveragePool":
        return [x.mean(axis=tuple(range(2, x.ndim)), keepdims=True, dtype=np.float64).astype(np.float32)]
    if t == "MaxPool":
        return [_pool(x, a, "max").astype(x.dtype)]
    if t == "AveragePool":
        return [_pool(x, a, "avg")]
    if t == "Flatten":
        ax = a.get("axis", 1)
        ax = ax if ax >= 0 else ax + x.ndim
        return [x.reshape(int(np.prod(x.shape[:ax])), -1)]
    if t == "Gemm":
        A, B = ins[0], ins[1]
        if a.get("transA", 0):
            A = A.T
        if a.get("transB", 0):
            B = B.T
        y = a.get("alpha", 1.0) * (A.astype(np.float32) @ B.astype(np.float32))
        if len(ins) > 2 and ins[2] is not None:
            y = y + a.get("beta", 1.0) * ins[2]
        return [y.astype(np.float32)]
    if t == "MatMul":
        return [np.matmul(ins[0], ins[1]).astype(np.float32)]
    if t in ("Add", "Sub", "Mul", "Div"):
        f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[t]
        return [f(ins[0], ins[1]).astype(np.result_type(ins[0], ins[1]))]
    if t in ("Identity", "Dropout"):
        return [x] + ([np.ones_like(x, dtype=bool)] if len(node.output) > 1 else [])
    if t == "Constant":
        return [np.asarray(a["value"])]
    if t == "Shape":
        return [np.array(x.shape, dtype=np.int64)]
    if t == "Gather":
        return [np.take(x, ins[1], axis=a.get("axis", 0))]
    if t == "Unsqueeze":
        y = x
        for ax in sorted(int(v) for v in ins[1]):
            y = np.expand_dims(y, ax)
        return [y]
    if t == "Squeeze":
        axes = tuple(int(v) for v in ins[1]) if len(ins) > 1 else None
        return [np.squeeze(x, axis=axes)]
    if t == "Concat":
        return [np.concatenate([np.atleast_1d(i) for i in ins], axis=a["axis"])]
    if t == "Split":
        ax = a.get("axis", 0)
        sizes = ins[1] if len(ins) > 1 and ins[1] is not None else None
        if sizes is None:
            return list(np.split(x, len(node.output), axis=ax))
        return list(np.split(x, np.cumsum([int(v) for v in sizes])[:-1], axis=ax))
    if t == "Reshape":
        shape = [int(v) for v in ins[1]]
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
        return [x.reshape(shape)]
    if t == "Transpose":
        return [np.transpose(x, a.get("perm"))]
    if t in ("Sqrt", "Erf", "Tanh", "Sigmoid", "Exp"):
        if t == "Erf":
            return [torch.erf(_t(x)).numpy().astype(x.dtype)]
        f = {"Sqrt": np.sqrt, "Tanh": np.tanh, "Exp": np.exp,
             "Sigmoid": lambda v: 1 / (1 + np.exp(-v))}[t]
        return [f(x).astype(x.dtype)]
    if t in ("HardSigmoid", "HardSwish"):
        al, be = (a.get("alpha", 0.2), a.get("beta", 0.5)) if t == "HardSigmoid" else (1 / 6, 0.5)
        h = np.clip(x * np.float32(al) + np.float32(be), 0, 1).astype(x.dtype)
        return [h if t == "HardSigmoid" else (x * h).astype(x.dtype)]
    if t == "Pow":
        return [np.power(x, ins[1]).astype(x.dtype)]
    if t == "ReduceMean":
        axes = a.get("axes")
        axes = tuple(int(v) for v in axes) if axes is not None else None
        y = x.mean(axis=axes, keepdims=bool(a.get("keepdims", 1)), dtype=np.float64)
        return [np.asarray(y, dtype=x.dtype)]
    if t == "Slice":
        starts, ends = ins[1], ins[2]
        axes = ins[3] if len(ins) > 3 and ins[3] is not None else range(len(starts))
        steps = ins[4] if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
        sl = [slice(None)] * x.ndim
        for st, en, ax, sp in zip(starts, ends, axes, steps):
            sl[int(ax)] = slice(int(st), int(en), int(sp))
        return [x[tuple(sl)]]
    if t == "LayerNormalization":
        ax = a.get("axis", -1) % x.ndim
        red = tuple(range(ax, x.ndim))
        xd = x.astype(np.float64)
        mu = xd.mean(axis=red, keepdims=True)
        var = ((xd - mu) ** 2).mean(axis=red, keepdims=True)
        y = (xd - mu) / np.sqrt(var + a.get("epsilon", 1e-5)) * ins[1]
        if len(ins) > 2 and ins[2] is not None:
            y = y + ins[2]
        return [y.astype(np.float32)]
    if t == "Softmax":
        ax = a.get("axis", -1)
        e = np.exp(x - x.max(axis=ax, keepdims=True))
        return [(e / e.sum(axis=ax, keepdims=True)).astype(np.float32)]
    if t == "QuantizeLinear":
        return [quantize_linear(x, ins[1], ins[2] if len(ins) > 2 else None, a.get("axis", 1))]
    if t == "DequantizeLinear":
        return [dequantize_linear(x, ins[1], ins[2] if len(ins) > 2 else None, a.get("axis", 1))]
    if t == "QLinearConv":
        xq, xs, xz, wq, ws, wz, ys, yz = ins[:8]
        b = ins[8] if len(ins) > 8 else None
        xi = xq.astype(np.float64) - np.asarray(xz, np.float64)
        wi = wq.astype(np.float64) - _bcast(wz, wq.ndim, 0).astype(np.float64)
        acc = _conv(xi, wi, None, a, torch.float64)
        if b is not None:
            acc = acc + b.astype(np.float64).reshape([1, -1] + [1] * (acc.ndim - 2))
        mult = (np.float32(xs) * np.asarray(ws, np.float32) / np.float32(ys)).astype(np.float32)
        mult = _bcast(mult, acc.ndim, 1)
        return [_requant(acc, mult, yz)]
    if t == "QGemm":
        aq, as_, az, bq, bs, bz = ins[:6]
        c = ins[6] if len(ins) > 6 else None
        ys = ins[7] if len(ins) > 7 else None
        yz = ins[8] if len(ins) > 8 else None
        trans_b = a.get("transB", 0)
        bzv = np.asarray(bz)
        acc = _gemm_int(aq, bq, az, bzv if bzv.size == 1 else bzv.reshape((-1, 1) if trans_b else (1, -1)),
                        a.get("transA", 0), trans_b)
        if c is not None:
            acc = acc + c.astype(np.float64)
        mult = a.get("alpha", 1.0) * np.float32(as_) * np.asarray(bs, np.float32)
        if ys is None:
            return [(acc * mult).astype(np.float32)]
        return [_requant(acc, (mult / np.float32(ys)).astype(np.float32), yz)]
    if t == "QLinearMatMul":
        aq, as_, az, bq, bs, bz, ys, yz = ins
        acc = _gemm_int(aq, bq, az, bz, 0, 0)
        return [_requant(acc, np.float32(as_) * np.asarray(bs, np.float32) / np.float32(ys), yz)]
    if t == "QLinearAdd":
        A = dequantize_linear(ins[0], ins[1], ins[2])
        B = dequantize_linear(ins[3], ins[4], ins[5])
        return [quantize_linear(A + B, ins[6], ins[7])]
    if t == "QLinearGlobalAveragePool":
        X = dequantize_linear(ins[0], ins[1], ins[2])
        axes = tuple(range(1, X.ndim - 1)) if a.get("channels_last", 0) else tuple(range(2, X.ndim))
        return [quantize_linear(X.mean(axis=axes, keepdims=True), ins[3], ins[4])]
    # torch's export of nn.MultiheadAttention's mask handling (vit_b_16)
    if t == "ConstantOfShape":
        v = np.asarray(a.get("value", np.zeros(1, np.float32))).ravel()
        return [np.full([int(d) for d in x], v[0], dtype=v.dtype)]
    if t == "Equal":
        return [np.equal(ins[0], ins[1])]
    if t == "Where":
        return [np.where(ins[0], ins[1], ins[2])]
    if t == "Expand":
        shape = np.broadcast_shapes(x.shape, tuple(int(v) for v in ins[1]))
        return [np.broadcast_to(x, shape).copy()]
    raise NotImplementedError("op %s (%s)" % (t, node.name))


class Runner:
    """Executes an ONNX graph node by node, keeping every intermediate tensor."""

    def __init__(self, model):
        self.model = model
        self.consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        self.nodes = [(n, _attrs(n)) for n in model.graph.node]
        self.input_names = [i.name for i in model.graph.input if i.name not in self.consts]
        self.output_names = [o.name for o in model.graph.output]

    def run(self, feeds, keep_all=True):
        if not isinstance(feeds, dict):
            feeds = {self.input_names[0]: feeds}
        env = dict(self.consts)
        env.update(feeds)
        for node, a in self.nodes:
            ins = [env[i] if i else None for i in node.input]
            outs = _op(node, ins, a)
            for name, v in zip(node.output, outs):
                if name:
                    env[name] = v
        if keep_all:
            return env
        return {o: env[o] for o in self.output_names}


def _as_feeds(model, calib_inputs):
    names = [i.name for i in model.graph.input if i.name not in _inits(model)]
    return [c if isinstance(c, dict) else {names[0]: c} for c in calib_inputs]


def calibrate_minmax(model, calib_inputs):
    """ORT MinMaxCalibrater (no moving average): global min/max of every float activation."""
    runner = Runner(model)
    inits = set(runner.consts)
    float_tensors = set(runner.input_names)
    for n in model.graph.node:
        float_tensors.update(o for o in n.output if o)
    ranges = {}
    for feeds in _as_feeds(model, calib_inputs):
        env = runner.run(feeds)
        for name in float_tensors:
            if name in inits or name not in env:
                continue
            v = env[name]
            if not (isinstance(v, np.ndarray) and v.dtype == np.float32) or v.size == 0:
                continue
            lo, hi = float(v.min()), float(v.max())
            if name in ranges:
                lo, hi = min(lo, ranges[name][0]), max(hi, ranges[name][1])
            ranges[name] = (lo, hi)
    return ranges


# --------------------------------------------------------------------------
# scale / zero-point computation (ORT quant_utils.compute_scale_zp)
# --------------------------------------------------------------------------

def compute_scale_zp(rmin, rmax, qmin, qmax, symmetric):
    rmin = min(float(rmin), 0.0)
    rmax = max(float(rmax), 0.0)
    if symmetric:
        absmax = max(abs(rmin), abs(rmax))
        rmin, rmax = -absmax, absmax
    scale = np.float32((rmax - rmin) / float(qmax - qmin))
    if scale < np.finfo(np.float32).tiny:
        return np.float32(1.0), 0
    zp = int(np.round(qmin - rmin / float(scale)))
    return scale, zp


def activation_params(rng, dtype=np.uint8):
    """Asymmetric over the whole range of dtype (uint8, or uint16)."""
    s, z = compute_scale_zp(rng[0], rng[1], 0, np.iinfo(dtype).max, symmetric=False)
    return np.float32(s), dtype(z)


def quantize_weight(w, per_channel, axis=0):
    """int8 symmetric in [-127,127]. Returns (q, scale, zp) — scale/zp 1-D if per-channel else 0-d."""
    w = np.asarray(w, np.float32)
    if per_channel:
        wc = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
        scales, zps = [], []
        for ch in wc:
            s, z = compute_scale_zp(ch.min(), ch.max(), -127, 127, symmetric=True)
            scales.append(s)
            zps.append(z)
        scale = np.array(scales, np.float32)
        zp = np.array(zps, np.int8)
        q = quantize_linear(w, scale, zp, axis=axis)
    else:
        s, z = compute_scale_zp(w.min(), w.max(), -127, 127, symmetric=True)
        scale = np.array(s, np.float32)
        zp = np.array(z, np.int8)
        q = quantize_linear(w, scale, zp)
    return q.astype(np.int8), scale, zp


def quantize_bias(b, input_scale, weight_scale, beta=1.0):
    bias_scale = (np.float32(input_scale) * np.asarray(weight_scale, np.float32) * np.float32(beta)).astype(np.float32)
    q = np.rint(np.asarray(b, np.float64) / bias_scale.astype(np.float64))
    q = np.clip(q, np.iinfo(np.int32).min, np.iinfo(np.int32).max).astype(np.int32)
    return q, bias_scale


def _finish(model, opset_ms=False):
    model = topological_sort(remove_unused(model))
    model.producer_name = PRODUCER_NAME
    model.producer_version = PRODUCER_VERSION
    if opset_ms and not any(o.domain == MS_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    # value_info from the float model may describe tensors that no longer exist
    del model.graph.value_info[:]
    return model


# --------------------------------------------------------------------------
# QDQ quantizer (ORT QDQQuantizer)
# --------------------------------------------------------------------------

ACT, WEIGHT = "activation", "weight"
QDQ_SHARED_OPS = {"MaxPool", "AveragePool", "Reshape", "Transpose", "Squeeze", "Unsqueeze"}
QDQ_GENERIC_OPS = {"Add", "Mul", "GlobalAveragePool", "Concat", "Softmax", "Sigmoid", "LeakyRelu", "MatMul", "Pad"}


def quantize_qdq(model, calib_inputs, per_channel=True, gemm_per_channel=False, ranges=None,
                 activation_type="uint8"):
    """QDQ (QuantizeLinear/DequantizeLinear around float ops) static quantization.

    activation_type "uint16" gives A16W8 as ORT writes it before opset 21:
    every Q/DQ node in the com.microsoft domain (its contrib ops, which
    take 16-bit types), zero points uint16."""
    act_dtype = {"uint8": np.uint8, "uint16": np.uint16}[activation_type]
    dom = MS_DOMAIN if act_dtype is np.uint16 else ""
    model = prepare(model)
    if ranges is None:
        ranges = calibrate_minmax(model, calib_inputs)
    inits = _inits(model)
    gouts = _graph_outputs(model)
    ginps = _graph_inputs(model)

    to_quant = OrderedDict()   # tensor -> (kind, axis, shared_provider)
    biases = OrderedDict()     # bias -> (input, weight, beta)
    remove_nodes = set()

    def is_marked(name):
        return name in to_quant or name in biases

    def mark(name, kind=ACT, axis=None, provider=None):
        if name in inits and kind == ACT and provider is None:
            if numpy_helper.to_array(inits[name]).dtype != np.float32:
                return
        # as ORT, only float tensors are quantized: an integer shape
        # computation (Shape -> Gather -> Mul) has no calibrated range
        if name not in inits and name not in ranges:
            return
        if provider is not None or name not in to_quant:
            to_quant[name] = (kind, axis, provider)

    def mark_weight(name, axis):
        if name in inits:
            to_quant[name] = (WEIGHT, axis, None)
        else:
            mark(name)

    for node in list(model.graph.node):
        t = node.op_type
        cons = _consumers(model)
        if t == "Conv":
            mark(node.input[0])
            mark_weight(node.input[1], 0 if per_channel else None)
            if len(node.input) > 2 and node.input[2]:
                biases[node.input[2]] = (node.input[0], node.input[1], 1.0)
            mark(node.output[0])
        elif t == "Gemm":
            a = _attrs(node)
            mark(node.input[0])
            axis = (0 if a.get("transB", 0) else 1) if gemm_per_channel else None
            mark_weight(node.input[1], axis)
            if len(node.input) > 2 and node.input[2] and node.input[2] in inits:
                biases[node.input[2]] = (node.input[0], node.input[1], a.get("beta", 1.0))
            mark(node.output[0])
        elif t in ("Relu", "Clip"):
            src, dst = node.input[0], node.output[0]
            if not is_marked(src):
                continue
            if (dst in ranges and len(cons.get(src, [])) == 1 and src not in gouts and src not in ginps):
                for n in model.graph.node:
                    for k, o in enumerate(n.output):
                        if o == src:
                            n.output[k] = dst
                to_quant.pop(src, None)
                ranges[dst] = ranges[dst]
                remove_nodes.add(node.name or id(node))
            else:
                mark(src)
            mark(dst)
        elif t in QDQ_SHARED_OPS:
            if is_marked(node.input[0]):
                mark(node.output[0], provider=node.input[0])
        elif t in QDQ_GENERIC_OPS:
            for i in node.input:
                if i:
                    mark(i)
            for o in node.output:
                mark(o)

    keep = [n for n in model.graph.node if (n.name or id(n)) not in remove_nodes]
    del model.graph.node[:]
    model.graph.node.extend(keep)

    new_nodes, new_inits = [], []
    qparams = {}  # activation tensor -> (scale_name, zp_name, scale, zp)
    wscale = {}   # weight -> scale array

    def replace_input(old, new):
        for n in model.graph.node:
            for k, i in enumerate(n.input):
                if i == old:
                    n.input[k] = new

    def add_pair(name, scale_name, zp_name):
        q_in, dq_out = name, name + "_DequantizeLinear_Output"
        if name in gouts:
            q_in, dq_out = name + "_QuantizeLinear_Input", name
            for n in model.graph.node:
                for k, o in enumerate(n.output):
                    if o == name:
                        n.output[k] = q_in
        else:
            replace_input(name, dq_out)
        new_nodes.append(helper.make_node("QuantizeLinear", [q_in, scale_name, zp_name],
                                          [name + "_QuantizeLinear_Output"], name + "_QuantizeLinear",
                                          domain=dom or None))
        new_nodes.append(helper.make_node("DequantizeLinear", [name + "_QuantizeLinear_Output", scale_name, zp_name],
                                          [dq_out], name + "_DequantizeLinear", domain=dom or None))

    # normal tensors
    for name, (kind, axis, provider) in to_quant.items():
        if provider is not None:
            continue
        if name in inits:
            w = numpy_helper.to_array(inits[name])
            q, s, z = quantize_weight(w, axis is not None, axis if axis is not None else 0)
            new_inits += [numpy_helper.from_array(q, name + "_quantized"),
                          numpy_helper.from_array(s, name + "_scale"),
                          numpy_helper.from_array(z, name + "_zero_point")]
            wscale[name] = s
            dq_out = name + "_DequantizeLinear_Output"
            replace_input(name, dq_out)
            new_nodes.append(helper.make_node("DequantizeLinear", [name + "_quantized", name + "_scale", name + "_zero_point"],
                                              [dq_out], name + "_DequantizeLinear", axis=axis, domain=dom or None))
        else:
            if name not in ranges:
                raise ValueError("no calibration range for %s" % name)
            s, z = activation_params(ranges[name], act_dtype)
            new_inits += [_scalar_init(name + "_scale", s, np.float32), _scalar_init(name + "_zero_point", z, act_dtype)]
            qparams[name] = (name + "_scale", name + "_zero_point", s, z)
            add_pair(name, name + "_scale", name + "_zero_point")
    # shared tensors (output takes the scale/zp initializers of the input)
    pending = [(n, p) for n, (k, a, p) in to_quant.items() if p is not None]
    while pending:
        rest = []
        for name, prov in pending:
            if prov in qparams:
                qparams[name] = qparams[prov]
                add_pair(name, qparams[prov][0], qparams[prov][1])
            else:
                rest.append((name, prov))
        if len(rest) == len(pending):
            raise RuntimeError("unresolved shared quantization params: %s" % rest)
        pending = rest
    # biases
    for bname, (inp, wname, beta) in biases.items():
        b = numpy_helper.to_array(inits[bname])
        q, bs = quantize_bias(b, qparams[inp][2], wscale[wname], beta)
        zp = np.zeros(bs.shape, np.int32)
        new_inits += [numpy_helper.from_array(q, bname + "_quantized"),
                      numpy_helper.from_array(bs.reshape(-1) if bs.size > 1 else bs.reshape(()), bname + "_quantized_scale"),
                      numpy_helper.from_array(zp.reshape(-1) if bs.size > 1 else zp.reshape(()), bname + "_quantized_zero_point")]
        new_nodes.append(helper.make_node("DequantizeLinear",
                                          [bname + "_quantized", bname + "_quantized_scale", bname + "_quantized_zero_point"],
                                          [bname], bname + "_DequantizeLinear", axis=0 if bs.size > 1 else None,
                                          domain=dom or None))
        # the float bias initializer is replaced by the DQ output of the same name
        model.graph.initializer.remove(inits[bname])

    model.graph.node.extend(new_nodes)
    model.graph.initializer.extend(new_inits)
    return _finish(model, opset_ms=bool(dom))


# --------------------------------------------------------------------------
# QOperator quantizer (ORT ONNXQuantizer, QLinearOps mode)
# --------------------------------------------------------------------------

def quantize_qoperator(model, calib_inputs, per_channel=True, ranges=None):
    """QOperator format: QLinearConv, com.microsoft QGemm / QLinearAdd / QLinearGlobalAveragePool."""
    model = prepare(model)
    if ranges is None:
        ranges = calibrate_minmax(model, calib_inputs)
    ranges = dict(ranges)
    cons = _consumers(model)
    # ORT: "adjust tensor_ranges for input of Clip and Relu node"
    for n in model.graph.node:
        if n.op_type in ("Relu", "Clip") and len(cons.get(n.input[0], [])) == 1 \
                and n.input[0] in ranges and n.output[0] in ranges:
            ranges[n.input[0]] = ranges[n.output[0]]

    inits = _inits(model)
    gouts = _graph_outputs(model)
    qmap = {}          # float tensor -> (q_name, scale_name, zp_name, scale, zp)
    dequantized = set()
    out_nodes, new_inits = [], {}
    wq_cache = {}

    def add_init(t):
        new_inits[t.name] = t

    def act_params(name):
        s, z = activation_params(ranges[name])
        add_init(_scalar_init(name + "_scale", s, np.float32))
        add_init(_scalar_init(name + "_zero_point", z, np.uint8))
        return name + "_scale", name + "_zero_point", s, z

    def quant_input(name):
        if name in qmap:
            return qmap[name]
        sn, zn, s, z = act_params(name)
        out_nodes.append(helper.make_node("QuantizeLinear", [name, sn, zn], [name + "_quantized"], name + "_QuantizeLinear"))
        qmap[name] = (name + "_quantized", sn, zn, s, z)
        return qmap[name]

    def quant_weight(name, axis):
        if name in wq_cache:
            return wq_cache[name]
        w = numpy_helper.to_array(inits[name])
        q, s, z = quantize_weight(w, axis is not None, axis or 0)
        add_init(numpy_helper.from_array(q, name + "_quantized"))
        add_init(numpy_helper.from_array(s, name + "_scale"))
        add_init(numpy_helper.from_array(z, name + "_zero_point"))
        wq_cache[name] = (name + "_quantized", name + "_scale", name + "_zero_point", s, z)
        return wq_cache[name]

    def quant_bias(name, in_scale, w_scale, beta=1.0):
        q, _ = quantize_bias(numpy_helper.to_array(inits[name]), in_scale, w_scale, beta)
        add_init(numpy_helper.from_array(q, name + "_quantized"))
        return name + "_quantized"

    def dequant(name):
        if name in qmap and name not in dequantized:
            q, sn, zn = qmap[name][:3]
            out_nodes.append(helper.make_node("DequantizeLinear", [q, sn, zn], [name], name + "_DequantizeLinear"))
            dequantized.add(name)

    def keep_float(node):
        for i in node.input:
            dequant(i)
        out_nodes.append(node)

    for node in model.graph.node:
        t, a = node.op_type, _attrs(node)
        out = node.output[0] if node.output else None
        qname = node.name + "_quant" if node.name else ""
        if t == "Conv" and node.input[1] in inits and out in ranges:
            x = quant_input(node.input[0])
            w = quant_weight(node.input[1], 0 if per_channel else None)
            sn, zn, s, z = act_params(out)
            ins = [x[0], x[1], x[2], w[0], w[1], w[2], sn, zn]
            if len(node.input) > 2 and node.input[2]:
                ins.append(quant_bias(node.input[2], x[3], w[3]))
            out_nodes.append(helper.make_node("QLinearConv", ins, [out + "_quantized"], qname, **a))
            qmap[out] = (out + "_quantized", sn, zn, s, z)
        elif t == "Gemm" and node.input[1] in inits and out in ranges:
            x = quant_input(node.input[0])
            w = quant_weight(node.input[1], None)
            sn, zn, s, z = act_params(out)
            beta = a.get("beta", 1.0)
            ins = [x[0], x[1], x[2], w[0], w[1], w[2]]
            ins.append(quant_bias(node.input[2], x[3], w[3], beta) if len(node.input) > 2 and node.input[2] else "")
            ins += [sn, zn]
            kw = {k: v for k, v in a.items() if k in ("alpha", "transA", "transB")}
            out_nodes.append(helper.make_node("QGemm", ins, [out + "_quantized"], qname, domain=MS_DOMAIN, **kw))
            qmap[out] = (out + "_quantized", sn, zn, s, z)
        elif t in ("Relu", "Clip") and node.input[0] in qmap:
            qmap[out] = qmap[node.input[0]]
        elif t == "GlobalAveragePool" and node.input[0] in qmap and out in ranges:
            x = qmap[node.input[0]]
            sn, zn, s, z = act_params(out)
            out_nodes.append(helper.make_node("QLinearGlobalAveragePool", [x[0], x[1], x[2], sn, zn], [out + "_quantized"],
                                              qname, domain=MS_DOMAIN, channels_last=0))
            qmap[out] = (out + "_quantized", sn, zn, s, z)
        elif t in ("Add", "Mul") and out in ranges and all(i not in inits for i in node.input):
            A = quant_input(node.input[0])
            B = quant_input(node.input[1])
            sn, zn, s, z = act_params(out)
            out_nodes.append(helper.make_node("QLinear" + t, [A[0], A[1], A[2], B[0], B[1], B[2], sn, zn],
                                              [out + "_quantized"], qname, domain=MS_DOMAIN))
            qmap[out] = (out + "_quantized", sn, zn, s, z)
        elif t in ("MaxPool",) and node.input[0] in qmap:
            x = qmap[node.input[0]]
            out_nodes.append(helper.make_node(t, [x[0]], [out + "_quantized"], qname, **a))
            qmap[out] = (out + "_quantized",) + tuple(x[1:])
        else:
            keep_float(node)

    for o in gouts:
        dequant(o)

    del model.graph.node[:]
    model.graph.node.extend(out_nodes)
    model.graph.initializer.extend(new_inits.values())
    return _finish(model, opset_ms=True)


# --------------------------------------------------------------------------
# opaque renaming (for structure-matching tests)
# --------------------------------------------------------------------------

def rename_opaque(model):
    """Every tensor (inputs, outputs, initializers, intermediates) -> t<i>, every node -> n<i>."""
    model = copy.deepcopy(model)
    g = model.graph
    mapping = {}

    def m(name):
        if not name:
            return name
        if name not in mapping:
            mapping[name] = "t%d" % len(mapping)
        return mapping[name]

    for i in g.input:
        i.name = m(i.name)
    for k, n in enumerate(g.node):
        n.name = "n%d" % k
        n.doc_string = ""
        for j, x in enumerate(n.input):
            n.input[j] = m(x)
        for j, x in enumerate(n.output):
            n.output[j] = m(x)
    for t in g.initializer:
        t.name = m(t.name)
    for o in g.output:
        o.name = m(o.name)
    for v in g.value_info:
        v.name = m(v.name)
    g.name = "g"
    g.doc_string = ""
    return model


def op_histogram(model):
    h = OrderedDict()
    for n in model.graph.node:
        key = n.op_type if n.domain in ("", "ai.onnx") else "%s:%s" % (n.domain, n.op_type)
        h[key] = h.get(key, 0) + 1
    return h
