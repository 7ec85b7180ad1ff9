#!/usr/bin/python3
"""Make quantized models as toolchains other than ONNX Runtime's quantizer
write them, with what qreport must pair in each (tests/toolchains.sh).

    /usr/bin/python3 tests/models/make_toolchains.py OUT_DIR [--no-verify]

Models: torchvision's quantizable resnet18 and mobilenet_v2 (weights=None,
torch.manual_seed(0); mobilenet_v2's ReLU6 are ReLU, as
torchvision.models.quantization makes them), input "input" [1,3,64,64],
output "logits" [1,1000]. BatchNorm running statistics are estimated from
4 batches of random-normal images, as tests/models/make_torchvision.py
does. Calibration: 8 random-normal inputs (torch.Generator seed 1234).
Written into OUT_DIR, per model <m>:

  <m>_float.onnx              float, torch's eval export (BN folded), opset 13
  <m>_float_bn.onnx           float, BatchNormalization kept (TrainingMode.PRESERVE)
  <m>_ptq_eager_qnnpack.onnx  torch.ao.quantization eager mode (fused modules,
  <m>_ptq_eager_onednn.onnx   QuantStub/DeQuantStub, prepare/calibrate/convert)
                              with the engine's default qconfig: qnnpack
                              per-tensor, onednn per-channel weights; exported
                              by torch.onnx (Q -> Cast -> DQ chains, weights as
                              Constant int8 -> DequantizeLinear, int32 biases)
  <m>_ptq_fx_qnnpack.onnx     the same with FX graph mode (prepare_fx/convert_fx
  <m>_ptq_fx_onednn.onnx      on torchvision's plain model holding the same weights)
  <m>_qat.onnx                prepare_qat with get_default_qat_qconfig('qnnpack',
                              version=0), 3 SGD steps on random data, then eval,
                              BN statistics frozen, the observers seeded again
                              from one pass over the calibration inputs and
                              turned off; torch's export
                              of the fused ConvBn modules: float weight*gamma/std
                              -> QuantizeLinear -> DequantizeLinear -> Conv -> Div
                              -> BatchNormalization
  <m>_qat_float.onnx          its float reference: the trained weights and BN
                              statistics in the float model, BN folded
  <m>_trt_bn.onnx             TensorRT-style fake quant (as NVIDIA's
                              pytorch-quantization exports it): int8 symmetric
                              Q/DQ on every Conv/Gemm input (max calibration) and
                              on its float weight per output channel (axis 0,
                              zero point int8 0); BatchNormalization left after
                              the Conv (made from <m>_float_bn.onnx)
  <m>_trt.onnx                the same on <m>_float.onnx (BN folded before export)
  <m>_ortqdq.onnx, <m>_ortqop.onnx
                              ONNX Runtime's quantizer's QDQ and QOperator forms of
                              <m>_float_bn.onnx (samples/qdq_quantize.py)
  <m>_..._renamed.onnx        each PTQ, QAT and TRT candidate with every tensor
                              renamed t0..tN (inputs and outputs included) and
                              node names removed
  resnet18_ptq_eager_qnnpack_op17.onnx, resnet18_qat_op17.onnx
                              the same exports at opset 17 (torch 1.13 writes
                              the other PTQ graphs at opset 17 as at 13 but
                              for the opset number, the QAT ones but for
                              BatchNormalization's training_mode=0; the
                              manifest lists them as not made)

and a Paddle2ONNX-like CNN: input "x" [1,48,48,3] NHWC -> Transpose (as
tf2onnx writes around NHWC graphs) -> Conv -> BatchNormalization ->
HardSwish decomposed as Add(3) -> Clip(0,6) -> Mul -> Div(6), a residual
Add, a two-branch Concat -> Transpose back to NHWC -> ReduceMean(1,2) ->
MatMul + Add -> "logits" [1,10]:
  paddle_float.onnx, paddle_qdq.onnx (ONNX Runtime-style QDQ of it)

Torch exports the exporter refuses are recorded as skipped, with its
message. Every model is loaded and run once by ONNX Runtime
(onnxruntime-node, graph optimisation off; tests/ort/run_once.js) unless
--no-verify or node is missing.

OUT_DIR/manifest.json:
  {"version", "input_size", "seconds", "skipped": [{"fixture", "reason"}],
   "models": {file: {"ort_ran", "ort_error",
                     "ort_logits_cosine"   a candidate's first output against
                                           its float model's, on one random
                                           input, in ONNX Runtime}},
   "fixtures": [{
     "name", "float", "candidate", "toolchain", "engine", "opset",
     "format"          qreport's report.json quant_summaries[].format,
     "bn_folded"       {"float": bool, "candidate": bool},
     "renamed_of"      the fixture this is a renamed copy of, or null,
     "rename"          {original candidate tensor: new name} (renamed only),
     "layers": [{      one per float node (Q/DQ, Constant, Identity aside),
        "index"        its position among them (graph order),
        "layer", "op", "tensor"   float node, op and output tensor,
        "required"     a compute layer (false for Flatten/Reshape/Transpose...),
        "quant_tensor" the candidate tensor holding the same value (after its
                       DequantizeLinear when quantized), or null,
        "accept"       every candidate tensor equally right (all the
                       DequantizeLinear outputs of one QuantizeLinear),
        "same_class"   the class's other tensors (the QuantizeLinear's
                       float input, its integer output, a Cast of it): the
                       value before or after quantization, but not the
                       tensor to compare,
        "quant_op"     the candidate op that computes it,
        "reason"       why there is no counterpart (when quant_tensor is null)}],
     "weights": [{     one per float Conv/Gemm/MatMul weight,
        "layer", "weight"          float node and weight initializer,
        "quant_weight", "accept"   the candidate's quantized weight (the input
                                   of its DequantizeLinear; accept: every
                                   tensor of that chain),
        "sqnr_db"      SQNR of the dequantized candidate weight against the
                       float weight, both with the BatchNormalization (and,
                       in QAT exports, the Div) after the layer folded in,
                       in float64; null when exact}]}]}

The pairs are worked out here from the two graphs' structure, not from
qreport: tensors linked by QuantizeLinear, DequantizeLinear, Identity and
type-preserving Cast hold one value; the remaining nodes of both graphs
are aligned from the graph inputs forward (same op reading the same
values; weighted ops also by attributes and weight shape); a
BatchNormalization or Relu/Clip the candidate folded or fused moves the
float pair to its output; a Div/BatchNormalization chain the candidate
keeps after a layer (QAT) moves the candidate side to its end.
"""

import argparse
import copy
import io
import json
import math
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections import defaultdict

import numpy as np
import onnx
import torch
import torchvision
from onnx import TensorProto, helper, numpy_helper
from torch.ao import quantization as tq
from torch.ao.quantization import quantize_fx

sys.dont_write_bytecode = True  # keep samples/ free of __pycache__
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "samples"))
import qdq_quantize as qq  # noqa: E402

VERSION = 1       # bump when the fixtures or the manifest change
SEED = 0
SIZE = 64
MODELS = ("resnet18", "mobilenet_v2")
# torch 1.13 writes the same graph at opset 17 as at 13 apart from the
# opset number (and BatchNormalization's training_mode=0): to keep the
# generation and the test short, opset 17 is made for these only
OPSET17 = {"resnet18": ("ptq_eager_qnnpack", "qat")}
PT_TOOLCHAINS = ("ptq_eager_qnnpack", "ptq_eager_onednn", "ptq_fx_qnnpack",
                 "ptq_fx_onednn", "qat")


# --------------------------------------------------------------------------
# torch models
# --------------------------------------------------------------------------

def estimate_bn(m, size):
    """Running statistics from 4 batches of random images (cumulative)."""
    g = torch.Generator().manual_seed(SEED + 1)
    bns = [x for x in m.modules() if isinstance(x, torch.nn.BatchNorm2d)]
    for b in bns:
        b.reset_running_stats()
        b.momentum = None
    m.train()
    with torch.no_grad():
        for _ in range(4):
            m(torch.randn(8, 3, size, size, generator=g))
    m.eval()


def build(name):
    """torchvision's quantizable model (quantize=False), seeded."""
    torch.manual_seed(SEED)
    m = getattr(torchvision.models.quantization, name)(weights=None, quantize=False)
    estimate_bn(m, SIZE)
    return m


def plain(name, state):
    """torchvision's plain model with the same weights (ReLU6 -> ReLU)."""
    from torchvision.models.quantization.utils import _replace_relu
    m = getattr(torchvision.models, name)(weights=None)
    _replace_relu(m)
    m.load_state_dict(state)
    return m.eval()


def export_float(m, path, keep_bn, opset=13, shape=(1, 3, SIZE, SIZE)):
    f = io.BytesIO()
    kw = dict(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False) if keep_bn else {}
    torch.onnx.export(m, torch.zeros(*shape), f, opset_version=opset,
                      input_names=["input"], output_names=["logits"], **kw)
    model = onnx.load_from_string(f.getvalue())
    if keep_bn:
        # torch de-duplicates equal parameters through Identity nodes; undo
        # that, as tests/models/make_torchvision.py does
        model = qq.inline_constants(model)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return model


def export_quant(m, path, opset):
    """torch's own export of a quantized or fake-quantized model, as it
    writes it. Returns None, or why the exporter refused."""
    f = io.BytesIO()
    try:
        torch.onnx.export(m, torch.zeros(1, 3, SIZE, SIZE), f, opset_version=opset,
                          input_names=["input"], output_names=["logits"])
    except Exception as e:  # noqa: BLE001 - the exporter's refusal is the data
        return "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300])
    with open(path, "wb") as fp:
        fp.write(f.getvalue())
    return None


def calibrate(m, calib):
    """one batch of every calibration input (observers see them all)"""
    with torch.no_grad():
        m(torch.from_numpy(np.concatenate(calib)))


def ptq_eager(qfloat, engine, calib):
    torch.backends.quantized.engine = engine
    m = copy.deepcopy(qfloat).eval()
    m.fuse_model(is_qat=False)
    m.qconfig = tq.get_default_qconfig(engine)
    tq.prepare(m, inplace=True)
    calibrate(m, calib)
    return tq.convert(m, inplace=True)


def ptq_fx(name, qfloat, engine, calib):
    torch.backends.quantized.engine = engine
    m = plain(name, qfloat.state_dict())
    ex = (torch.zeros(1, 3, SIZE, SIZE),)
    p = quantize_fx.prepare_fx(m, tq.get_default_qconfig_mapping(engine), ex)
    calibrate(p, calib)
    return quantize_fx.convert_fx(p)


def bn_path(conv_path):
    """The BatchNorm2d fused into the conv at conv_path (torchvision's
    quantizable resnet and mobilenet_v2: convK -> bnK, i -> i+1)."""
    head, _, last = conv_path.rpartition(".")
    new = "bn" + last[4:] if last.startswith("conv") else str(int(last) + 1)
    return head + "." + new if head else new


def qat(name, qfloat, calib):
    """(fake-quantized model ready to export, the float model it trained)"""
    torch.backends.quantized.engine = "qnnpack"
    m = copy.deepcopy(qfloat).train()
    m.fuse_model(is_qat=True)
    m.qconfig = tq.get_default_qat_qconfig("qnnpack", version=0)
    tq.prepare_qat(m, inplace=True)
    for b in m.modules():
        if isinstance(b, torch.nn.BatchNorm2d):
            b.momentum = 0.1
    opt = torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9)
    g = torch.Generator().manual_seed(SEED + 2)
    for _ in range(3):
        x = torch.randn(2, 3, SIZE, SIZE, generator=g)
        y = torch.randint(0, 1000, (2,), generator=g)
        loss = torch.nn.functional.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    # the observers' moving averages have barely moved in 3 steps: seed
    # them again from one eval pass over the calibration inputs, as a
    # longer run would have settled them, then freeze them and the BN
    # statistics for export
    m.eval()
    m.apply(torch.nn.intrinsic.qat.freeze_bn_stats)
    for mod in m.modules():
        if isinstance(mod, tq.FakeQuantize):
            mod.activation_post_process.reset_min_max_vals()
    calibrate(m, calib)
    m.apply(tq.disable_observer)
    # the float model with the trained parameters
    fused = {k[:-len(".bn.weight")] for k in m.state_dict() if k.endswith(".bn.weight")}
    state = {}
    for k, v in m.state_dict().items():
        if "fake_quant" in k or "activation_post_process" in k:
            continue
        conv = next((c for c in fused if k.startswith(c + ".bn.")), None)
        if conv is not None:
            k = bn_path(conv) + k[len(conv) + 3:]
        state[k] = v.detach().clone()
    f = copy.deepcopy(qfloat)
    f.load_state_dict(state)
    return m, f.eval()


# --------------------------------------------------------------------------
# graph editing: TensorRT-style fake quant, Paddle2ONNX-like CNN, renaming
# --------------------------------------------------------------------------

def input_name(model):
    inits = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in inits][0]


def trt_quantize(model, calib):
    """Q/DQ as pytorch-quantization's QuantConv2d/QuantLinear export: int8
    symmetric, scale amax/127, zero point int8 0; inputs per tensor (max
    calibration), float weights per output channel (axis 0)."""
    model = copy.deepcopy(model)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    targets = [n for n in model.graph.node
               if n.op_type in ("Conv", "Gemm") and n.input[1] in inits]
    runner = qq.Runner(model)
    amax = {}
    for x in calib:
        env = runner.run({input_name(model): x})
        for n in targets:
            a = float(np.abs(env[n.input[0]]).max())
            amax[n.input[0]] = max(amax.get(n.input[0], 0.0), a)
    k = [0]

    def const(arr):
        k[0] += 1
        name = "onnx::QuantizeLinear_%d" % (10000 + k[0])
        model.graph.initializer.append(numpy_helper.from_array(arr, name))
        return name

    nodes = []
    for n in model.graph.node:
        if n in targets:
            scope = n.name.rsplit("/", 1)[0] if "/" in n.name else "/" + n.name
            s = const(np.array(max(amax[n.input[0]], 1e-8) / 127.0, np.float32))
            z = const(np.array(0, np.int8))
            q = scope + "/_input_quantizer/QuantizeLinear"
            nodes.append(helper.make_node("QuantizeLinear", [n.input[0], s, z], [q + "_output_0"], q))
            dq = scope + "/_input_quantizer/DequantizeLinear"
            nodes.append(helper.make_node("DequantizeLinear", [q + "_output_0", s, z], [dq + "_output_0"], dq))
            w = inits[n.input[1]]
            wa = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
            ws = const((np.maximum(wa, 1e-8) / 127.0).astype(np.float32))
            wz = const(np.zeros(w.shape[0], np.int8))
            q = scope + "/_weight_quantizer/QuantizeLinear"
            nodes.append(helper.make_node("QuantizeLinear", [n.input[1], ws, wz], [q + "_output_0"], q, axis=0))
            dqw = scope + "/_weight_quantizer/DequantizeLinear"
            nodes.append(helper.make_node("DequantizeLinear", [q + "_output_0", ws, wz], [dqw + "_output_0"],
                                          dqw, axis=0))
            n.input[0] = dq + "_output_0"
            n.input[1] = dqw + "_output_0"
        nodes.append(n)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.producer_name = "pytorch"
    onnx.checker.check_model(model)
    return model


def paddle_float():
    """A small CNN laid out as Paddle2ONNX writes one (parameter names
    conv2d_<i>.w_0, batch_norm_<i>.w_0.., HardSwish decomposed), wrapped in
    tf2onnx's NHWC Transposes."""
    rng = np.random.RandomState(SEED + 7)
    inits, nodes = [], []
    k = defaultdict(int)

    def init(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), name))
        return name

    def tmp(kind):
        name = "p2o.%s.%d" % (kind, k[kind])
        k[kind] += 1
        return name

    def conv_bn_hs(x, cin, cout, ksize, i, stride=1):
        w = init("conv2d_%d.w_0" % i, rng.randn(cout, cin, ksize, ksize) * math.sqrt(2.0 / (cin * ksize * ksize)))
        c = "conv2d_%d.tmp_0" % i
        nodes.append(helper.make_node("Conv", [x, w], [c], "conv2d_%d" % i, kernel_shape=[ksize, ksize],
                                      pads=[ksize // 2] * 4, strides=[stride, stride], group=1,
                                      dilations=[1, 1]))
        g = init("batch_norm_%d.w_0" % i, 1.0 + 0.2 * rng.randn(cout))
        b = init("batch_norm_%d.b_0" % i, 0.5 + 0.2 * rng.randn(cout))
        mu = init("batch_norm_%d.w_1" % i, 0.1 * rng.randn(cout))
        var = init("batch_norm_%d.w_2" % i, (cin * ksize * ksize / 9.0) * np.exp(0.3 * rng.randn(cout)))
        bn = "batch_norm_%d.tmp_2" % i
        nodes.append(helper.make_node("BatchNormalization", [c, g, b, mu, var], [bn], "batch_norm_%d" % i,
                                      epsilon=1e-5, momentum=0.9))
        a = tmp("Add")
        nodes.append(helper.make_node("Add", [bn, "p2o.Constant.3"], [a], a))
        cl = tmp("Clip")
        nodes.append(helper.make_node("Clip", [a, "p2o.Constant.0", "p2o.Constant.6"], [cl], cl))
        mu_ = tmp("Mul")
        nodes.append(helper.make_node("Mul", [bn, cl], [mu_], mu_))
        out = "hardswish_%d.tmp_0" % i
        nodes.append(helper.make_node("Div", [mu_, "p2o.Constant.6"], [out], "hardswish_%d" % i))
        return out

    init("p2o.Constant.3", np.array(3.0))
    init("p2o.Constant.0", np.array(0.0))
    init("p2o.Constant.6", np.array(6.0))
    nodes.append(helper.make_node("Transpose", ["x"], ["x_nchw"], "Transpose__0", perm=[0, 3, 1, 2]))
    h = conv_bn_hs("x_nchw", 3, 16, 3, 0, stride=2)
    r = conv_bn_hs(h, 16, 16, 3, 1)
    r = conv_bn_hs(r, 16, 16, 3, 2)
    nodes.append(helper.make_node("Add", [h, r], ["elementwise_add_0"], "elementwise_add_0"))
    b1 = conv_bn_hs("elementwise_add_0", 16, 16, 1, 3)
    b2 = conv_bn_hs("elementwise_add_0", 16, 16, 3, 4)
    nodes.append(helper.make_node("Concat", [b1, b2], ["concat_0.tmp_0"], "concat_0", axis=1))
    h = conv_bn_hs("concat_0.tmp_0", 32, 32, 3, 5, stride=2)
    nodes.append(helper.make_node("Transpose", [h], ["transpose_1.tmp_0"], "Transpose__1", perm=[0, 2, 3, 1]))
    nodes.append(helper.make_node("ReduceMean", ["transpose_1.tmp_0"], ["reduce_mean_0.tmp_0"], "reduce_mean_0",
                                  axes=[1, 2], keepdims=0))
    w = init("linear_0.w_0", rng.randn(32, 10) * math.sqrt(1.0 / 32))
    bias = init("linear_0.b_0", 0.1 * rng.randn(10))
    nodes.append(helper.make_node("MatMul", ["reduce_mean_0.tmp_0", w], ["linear_0.tmp_0"], "linear_0"))
    nodes.append(helper.make_node("Add", ["linear_0.tmp_0", bias], ["logits"], "linear_0.add"))
    graph = helper.make_graph(nodes, "paddle-infer",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 48, 48, 3])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="PaddlePaddle",
                              producer_version="2.5")
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def rename(model):
    """(copy with every tensor t<i> and node names removed, {old: new}),
    samples/qdq_quantize.py's rename_opaque"""
    r = qq.rename_opaque(model)
    mapping = {}
    for a, b in zip(model.graph.input, r.graph.input):
        mapping[a.name] = b.name
    for a, b in zip(model.graph.node, r.graph.node):
        for x, y in zip(list(a.input) + list(a.output), list(b.input) + list(b.output)):
            if x:
                mapping[x] = y
        b.name = ""
    for a, b in zip(list(model.graph.initializer) + list(model.graph.output),
                    list(r.graph.initializer) + list(r.graph.output)):
        mapping[a.name] = b.name
    return r, mapping


# --------------------------------------------------------------------------
# structure: which candidate tensor holds each float tensor's value
# --------------------------------------------------------------------------

QOPS = {  # QOperator op -> (float op, data inputs, weight input)
    "QLinearConv": ("Conv", (0,), 3), "QGemm": ("Gemm", (0,), 3),
    "QLinearMatMul": ("MatMul", (0, 3), None), "QLinearAdd": ("Add", (0, 3), None),
    "QLinearMul": ("Mul", (0, 3), None), "QLinearGlobalAveragePool": ("GlobalAveragePool", (0,), None),
    "QLinearAveragePool": ("AveragePool", (0,), None), "QLinearSigmoid": ("Sigmoid", (0,), None),
    "QLinearLeakyRelu": ("LeakyRelu", (0,), None),
}
WEIGHTED = ("Conv", "ConvTranspose", "Gemm", "MatMul")
COMMUTATIVE = ("Add", "Mul", "Sum", "Max", "Min")
FUSABLE_ACT = ("Relu", "Clip")
SHAPE_OPS = ("Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze")
CONV_ATTRS = ("kernel_shape", "strides", "pads", "group", "dilations", "transB", "perm", "axis", "axes")


def np_type(t):
    return onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t]


def eval_const(node, ins):
    t, a = node.op_type, qq._attrs(node)
    if t == "Constant":
        for key in ("value_float", "value_int", "value_floats", "value_ints"):
            if key in a:
                return [np.asarray(a[key], np.float32 if "float" in key else np.int64)]
        return [np.asarray(a["value"])]
    if t == "Cast":
        return [np.asarray(ins[0]).astype(np_type(a["to"]))]
    if t in ("Identity", "Dropout"):
        return [ins[0]]
    if t == "ConstantOfShape":
        v = np.asarray(a.get("value", np.zeros(1, np.float32))).ravel()
        return [np.full([int(d) for d in ins[0]], v[0], dtype=v.dtype)]
    return qq._op(node, ins, a)


class Graph:
    """A model's nodes, constants, value classes and compute nodes."""

    def __init__(self, model):
        self.model = model
        g = model.graph
        self.nodes = list(g.node)
        self.const = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        self.inputs = [i.name for i in g.input if i.name not in self.const]
        self.outputs = [o.name for o in g.output]
        self.producer = {}
        self.consumers = defaultdict(list)
        for k, n in enumerate(self.nodes):
            for o in n.output:
                if o:
                    self.producer[o] = k
            for i in n.input:
                if i:
                    self.consumers[i].append(k)
        self.is_const = [False] * len(self.nodes)
        for k, n in enumerate(self.nodes):
            if n.op_type in ("RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike"):
                continue
            if all(i in self.const for i in n.input if i):
                try:
                    outs = eval_const(n, [self.const[i] if i else None for i in n.input])
                except (NotImplementedError, KeyError, ValueError):
                    continue
                for o, v in zip(n.output, outs):
                    if o:
                        self.const[o] = np.asarray(v)
                self.is_const[k] = True
        self.dtype = self._dtypes()
        # value classes: tensors linked by Q/DQ/Identity/type-preserving Cast
        self.parent = {}
        self.link = [False] * len(self.nodes)
        for k, n in enumerate(self.nodes):
            if self.is_const[k] or not self._is_link(n):
                continue
            self.link[k] = True
            self._union(n.input[0], n.output[0])
        self.sem = [k for k in range(len(self.nodes)) if not self.is_const[k] and not self.link[k]]
        self.cls_consumers = defaultdict(list)
        for k in self.sem:
            for i in self.data_inputs(k):
                c = self.cls(i)
                if k not in self.cls_consumers[c]:
                    self.cls_consumers[c].append(k)
        self.members = defaultdict(list)
        for t in list(self.producer) + self.inputs:
            if t not in self.const:
                self.members[self.cls(t)].append(t)

    def _dtypes(self):
        d = {k: v.dtype for k, v in self.const.items()}
        try:
            inf = onnx.shape_inference.infer_shapes(self.model)
            for vi in list(inf.graph.value_info) + list(inf.graph.input) + list(inf.graph.output):
                t = vi.type.tensor_type.elem_type
                if t and vi.name not in d:
                    d[vi.name] = np.dtype(np_type(t))
        except Exception:  # noqa: BLE001 - inference is only a hint
            pass
        for n in self.nodes:  # what inference may miss
            if n.op_type == "QuantizeLinear" and n.output[0] not in d:
                zp = self.const.get(n.input[2]) if len(n.input) > 2 and n.input[2] else None
                d[n.output[0]] = zp.dtype if zp is not None else np.dtype(np.uint8)
            elif n.op_type == "Cast" and n.output[0] not in d:
                d[n.output[0]] = np.dtype(np_type(qq._attrs(n)["to"]))
            elif n.op_type in ("Identity", "Dropout") and n.output[0] not in d and n.input[0] in d:
                d[n.output[0]] = d[n.input[0]]
        return d

    def _is_link(self, n):
        t = n.op_type
        if t in ("QuantizeLinear", "DequantizeLinear", "Identity", "Dropout"):
            return True
        if t == "Cast":
            a = self.dtype.get(n.input[0])
            return a is not None and a == np.dtype(np_type(qq._attrs(n)["to"]))
        return False

    def _find(self, t):
        while self.parent.get(t, t) != t:
            t = self.parent[t]
        return t

    def _union(self, a, b):
        ra, rb = self._find(a), self._find(b)
        if ra != rb:
            self.parent[rb] = ra

    def cls(self, t):
        return self._find(t)

    def op(self, k):
        n = self.nodes[k]
        return QOPS[n.op_type][0] if n.op_type in QOPS else n.op_type

    def data_inputs(self, k):
        n = self.nodes[k]
        if n.op_type in QOPS:
            return [n.input[i] for i in QOPS[n.op_type][1]]
        return [i for i in n.input if i and i not in self.const]

    def weight_input(self, k):
        n = self.nodes[k]
        if n.op_type in QOPS:
            return QOPS[n.op_type][2]
        if self.op(k) not in WEIGHTED:
            return None
        idx = [j for j, i in enumerate(n.input[:2]) if i in self.const]
        return idx[-1] if len(idx) == 1 else None

    def weight(self, k):
        """(dequantized weight, output-channel axis) of compute node k"""
        n = self.nodes[k]
        j = self.weight_input(k)
        w = self.const[n.input[j]]
        if n.op_type in QOPS:
            s, z = self.const[n.input[j + 1]], self.const[n.input[j + 2]]
            w = qq.dequantize_linear(w, s, z, axis=0 if np.asarray(s).size > 1 else 1)
        a = qq._attrs(n)
        axis = 0
        if self.op(k) == "Gemm" and not a.get("transB", 0) or self.op(k) == "MatMul":
            axis = 1
        return w.astype(np.float64), axis

    def weight_chain(self, k):
        """the tensors a quantized weight goes through up to the layer:
        (the DequantizeLinear's input or the weight itself, all of them)"""
        n = self.nodes[k]
        t = n.input[self.weight_input(k)]
        chain, primary = [t], t
        while t in self.producer:
            p = self.nodes[self.producer[t]]
            if p.op_type not in ("QuantizeLinear", "DequantizeLinear", "Identity", "Cast") or not p.input:
                break
            if p.op_type == "DequantizeLinear" and primary == chain[0]:
                primary = p.input[0]
            t = p.input[0]
            chain.append(t)
        return primary, chain

    def post_scale(self, k):
        """Per-channel factor of the BatchNormalization/Div/Mul chain after
        compute node k (each the only consumer), and the chain's nodes."""
        f, chain = 1.0, []
        t = self.nodes[k].output[0]
        while True:
            cons = self.cls_consumers.get(self.cls(t), [])
            if len(cons) != 1 or t in self.outputs:
                break
            m = self.nodes[cons[0]]
            ins = [i for i in m.input if i]
            if m.op_type == "BatchNormalization" and all(i in self.const for i in ins[1:5]):
                g, v = self.const[ins[1]], self.const[ins[4]]
                eps = qq._attrs(m).get("epsilon", 1e-5)
                f = f * (g.astype(np.float64) / np.sqrt(v.astype(np.float64) + eps))
            elif m.op_type in ("Div", "Mul", "Add", "Sub") and len(ins) == 2:
                cst = [i for i in ins if i in self.const]
                if len(cst) != 1 or (m.op_type in ("Div", "Sub") and ins[1] not in self.const):
                    break  # c / x and c - x are no scale and shift of x
                c = self.const[cst[0]].astype(np.float64).ravel()
                f = f / c if m.op_type == "Div" else f * c if m.op_type == "Mul" else f
            else:
                break
            chain.append(cons[0])
            t = m.output[0]
        return f, chain, t

    def class_op(self, c):
        """the op that computes class c (its first member not made by a link)"""
        for t in sorted(self.members[c], key=lambda t: self.producer.get(t, -1)):
            k = self.producer.get(t)
            if k is None:
                return "input"
            if not self.link[k]:
                return self.nodes[k].op_type
        return "?"

    def accept(self, c):
        """The class's tensors a pair should name: its DequantizeLinear
        outputs, else its integer tensors, else its float ones."""
        mem = sorted(self.members[c], key=lambda t: self.producer.get(t, -1))
        dq = [t for t in mem if t in self.producer and self.nodes[self.producer[t]].op_type == "DequantizeLinear"]
        if dq:
            return dq
        ints = [t for t in mem if t in self.dtype and self.dtype[t].kind in "iu"]
        return ints or mem


def fold(w, axis, f):
    f = np.asarray(f, np.float64).ravel()
    if f.size == 1:
        return w * f[0]
    shape = [1] * w.ndim
    shape[axis] = -1
    return w * f.reshape(shape)


def sqnr(x, y):
    x, y = x.ravel().astype(np.float64), y.ravel().astype(np.float64)
    e = float(np.sum((x - y) ** 2))
    return None if e == 0 else 10.0 * math.log10(float(np.sum(x * x)) / e)


def attrs_key(n):
    a = qq._attrs(n)
    return tuple((k, str(a[k])) for k in CONV_ATTRS if k in a)


def expected(fmodel, cmodel):
    """(layers, weights) of the manifest for float fmodel and candidate cmodel"""
    F, C = Graph(fmodel), Graph(cmodel)
    fmap = {}      # float class -> candidate class
    moved = {}     # float tensor -> reason it has no counterpart after all
    reason = {}    # float class -> reason it has none
    match = {}     # float node -> candidate node
    used = set()
    for a, b in zip(F.inputs, C.inputs):
        fmap[F.cls(a)] = C.cls(b)
    for k in F.sem:
        n, op = F.nodes[k], F.op(k)
        outs = [o for o in n.output if o]
        ins = [fmap.get(F.cls(i)) for i in F.data_inputs(k)]
        if not ins or any(c is None for c in ins):
            for o in outs:
                reason[F.cls(o)] = "an input has no counterpart in the candidate"
            continue
        found = []
        for m in C.cls_consumers.get(ins[0], []):
            if m in used or C.op(m) != op:
                continue
            cins = [C.cls(i) for i in C.data_inputs(m)]
            if cins == ins or (op in COMMUTATIVE and sorted(cins) == sorted(ins)):
                found.append(m)
        if found:
            def score(m):
                s = 0
                if op in WEIGHTED:
                    s += 2 * (F.weight(k)[0].shape == C.weight(m)[0].shape)
                s += attrs_key(n) == attrs_key(C.nodes[m])
                return -s
            m = min(found, key=lambda m: (score(m), m))
            used.add(m)
            match[k] = m
            for o, co in zip(n.output, C.nodes[m].output):
                if o and co:
                    fmap[F.cls(o)] = C.cls(co)
            if op in WEIGHTED and not F.post_scale(k)[1]:
                _, chain, end = C.post_scale(m)
                if chain:  # the candidate keeps Div/BatchNormalization after it (QAT)
                    used.update(chain)
                    fmap[F.cls(outs[0])] = C.cls(end)
            continue
        src = F.data_inputs(k)[0]
        alone = F.cls_consumers.get(F.cls(src)) == [k]
        prod = F.nodes[F.producer[src]].op_type if src in F.producer else "input"
        if op == "BatchNormalization" and alone:
            fmap[F.cls(outs[0])] = ins[0]
            moved[src] = "BatchNormalization %s folded into the %s by the candidate" % (n.name, prod)
        elif op in FUSABLE_ACT and alone and prod != "input":
            fmap[F.cls(outs[0])] = ins[0]
            moved[src] = "the candidate applies %s %s inside its %s: its output is after it" % (
                op, n.name, C.class_op(ins[0]))
        else:
            for o in outs:
                reason[F.cls(o)] = "no %s of the candidate reads the counterparts of its inputs" % op

    layers = []
    for idx, k in enumerate(F.sem):
        n, op = F.nodes[k], F.op(k)
        for o in n.output:
            if not o:
                continue
            e = {"index": idx, "layer": n.name, "op": op, "tensor": o,
                 "required": op not in SHAPE_OPS}
            c = fmap.get(F.cls(o))
            if o in moved:
                e.update(quant_tensor=None, accept=[], reason=moved[o])
            elif c is None:
                e.update(quant_tensor=None, accept=[],
                         reason=reason.get(F.cls(o), "no counterpart in the candidate"))
            else:
                acc = C.accept(c)
                e.update(quant_tensor=acc[0], accept=acc,
                         same_class=[t for t in C.members[c] if t not in acc], quant_op=C.class_op(c))
            layers.append(e)

    weights = []
    for k in F.sem:
        if F.op(k) not in WEIGHTED or F.weight_input(k) is None:
            continue
        n = F.nodes[k]
        e = {"layer": n.name, "op": F.op(k), "weight": n.input[F.weight_input(k)]}
        m = match.get(k)
        if m is None or C.weight_input(m) is None:
            e.update(quant_weight=None, accept=[], sqnr_db=None, reason="layer not matched")
        else:
            wf, axis = F.weight(k)
            wq, _ = C.weight(m)
            wf = fold(wf, axis, F.post_scale(k)[0])
            wq = fold(wq, axis, C.post_scale(m)[0])
            primary, chain = C.weight_chain(m)
            e.update(quant_weight=primary, accept=chain, sqnr_db=sqnr(wf, wq))
        weights.append(e)
    return layers, weights


# --------------------------------------------------------------------------
# ONNX Runtime: load and run every model once
# --------------------------------------------------------------------------

def ort_verify(out_dir, files):
    """{file: (ran, error, first output)} from tests/ort/run_once.js"""
    script = os.path.join(ROOT, "tests", "ort", "run_once.js")
    if shutil.which("node") is None or not os.path.isdir(os.path.join(ROOT, "tests", "ort", "node_modules",
                                                                       "onnxruntime-node")):
        return None
    tmp = tempfile.mkdtemp(prefix="qr-tc-")
    try:
        jobs, inputs = [], set()
        for f in files:
            m = onnx.load(os.path.join(out_dir, f), load_external_data=False)
            inp = [i for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}][0]
            dims = tuple(d.dim_value for d in inp.type.tensor_type.shape.dim)
            path = os.path.join(tmp, "x_%s.npy" % "_".join(map(str, dims)))
            if path not in inputs:
                np.save(path, np.random.default_rng(SEED).standard_normal(dims).astype(np.float32))
                inputs.add(path)
            jobs.append({"model": os.path.join(out_dir, f), "input": path})
        with open(os.path.join(tmp, "jobs.json"), "w") as fp:
            json.dump(jobs, fp)
        subprocess.run(["node", script, os.path.join(tmp, "jobs.json"), os.path.join(tmp, "out.json")],
                       check=True)
        with open(os.path.join(tmp, "out.json")) as fp:
            res = json.load(fp)
        return {os.path.basename(k): v for k, v in res.items()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cosine(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


# --------------------------------------------------------------------------

class Fixtures:
    """The fixtures written into out, with their manifest entries."""

    def __init__(self, out):
        self.out = out
        self.list = []
        self.skipped = []
        self.cache = {}

    def load(self, f):
        if f not in self.cache:
            self.cache[f] = onnx.load(os.path.join(self.out, f))
        return self.cache[f]

    def save(self, model, f):
        onnx.save(model, os.path.join(self.out, f))
        self.cache[f] = model

    def add(self, name, float_file, cand_file, toolchain, fmt, engine=None, opset=13, renamed_of=None,
            rename_map=None):
        t0 = time.time()
        fm, cm = self.load(float_file), self.load(cand_file)
        layers, weights = expected(fm, cm)
        fbn = any(n.op_type == "BatchNormalization" for n in fm.graph.node)
        cbn = any(n.op_type == "BatchNormalization" for n in cm.graph.node)
        self.list.append({"name": name, "float": float_file, "candidate": cand_file, "toolchain": toolchain,
                          "engine": engine, "opset": opset, "format": fmt,
                          "bn_folded": {"float": not fbn, "candidate": not cbn},
                          "renamed_of": renamed_of, "rename": rename_map, "layers": layers, "weights": weights})
        got = sum(e["quant_tensor"] is not None for e in layers)
        print("  %-38s %3d/%3d float tensors paired, %2d weights (%.1fs)"
              % (name, got, len(layers), len(weights), time.time() - t0), flush=True)

    def add_renamed(self, name):
        src = next(f for f in self.list if f["name"] == name)
        rm, mapping = rename(self.load(src["candidate"]))
        f = src["candidate"][:-5] + "_renamed.onnx"
        self.save(rm, f)
        self.add(name + "_renamed", src["float"], f, src["toolchain"], src["format"], src["engine"],
                 src["opset"], renamed_of=name, rename_map=mapping)


def calibration(shape):
    g = torch.Generator().manual_seed(1234)
    return [torch.randn(*shape, generator=g).numpy() for _ in range(8)]


def make_model(name, out):
    """Every fixture of torchvision model name: (manifest entries, skipped)"""
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    calib = calibration((1, 3, SIZE, SIZE))
    fx = Fixtures(out)
    t0 = time.time()
    qf = build(name)
    export_float(qf, os.path.join(out, name + "_float.onnx"), keep_bn=False)
    export_float(qf, os.path.join(out, name + "_float_bn.onnx"), keep_bn=True)
    print("%s: float exports %.1fs" % (name, time.time() - t0), flush=True)

    # PyTorch post-training quantization and QAT, torch's exporter
    for tc in PT_TOOLCHAINS:
        t1 = time.time()
        float_file = name + "_float.onnx"
        engine = tc.rsplit("_", 1)[1] if tc.startswith("ptq") else "qnnpack"
        if tc.startswith("ptq_eager"):
            qm = ptq_eager(qf, engine, calib)
        elif tc.startswith("ptq_fx"):
            qm = ptq_fx(name, qf, engine, calib)
        else:
            qm, trained = qat(name, qf, calib)
            float_file = name + "_qat_float.onnx"
            export_float(trained, os.path.join(out, float_file), keep_bn=False)
        toolchain = "pytorch-" + ("-".join(tc.split("_")[:2]) if tc.startswith("ptq") else tc)
        for opset in (13, 17) if tc in OPSET17.get(name, ()) else (13,):
            f = "%s_%s%s" % (name, tc, "" if opset == 13 else "_op17")
            why = export_quant(qm, os.path.join(out, f + ".onnx"), opset)
            if why:
                fx.skipped.append({"fixture": f, "reason": "torch.onnx.export refused: " + why})
                print("  %s skipped: %s" % (f, why), flush=True)
                continue
            fx.add(f, float_file, f + ".onnx", toolchain, "qdq", engine, opset)
            if opset == 13:
                fx.add_renamed(f)
        print("%s %s: %.1fs" % (name, tc, time.time() - t1), flush=True)

    # TensorRT-style fake quant, BN kept and folded
    t1 = time.time()
    for suffix, src in (("_trt_bn", "_float_bn.onnx"), ("_trt", "_float.onnx")):
        fx.save(trt_quantize(fx.load(name + src), calib), name + suffix + ".onnx")
        fx.add(name + suffix, name + src, name + suffix + ".onnx", "tensorrt-fakequant", "qdq")
        fx.add_renamed(name + suffix)
    print("%s trt: %.1fs" % (name, time.time() - t1), flush=True)

    # ONNX Runtime's quantizer (samples/qdq_quantize.py)
    t1 = time.time()
    fbn = fx.load(name + "_float_bn.onnx")
    ranges = qq.calibrate_minmax(qq.prepare(fbn), calib)
    fx.save(qq.quantize_qdq(fbn, calib, per_channel=True, ranges=dict(ranges)), name + "_ortqdq.onnx")
    fx.save(qq.quantize_qoperator(fbn, calib, per_channel=True, ranges=dict(ranges)), name + "_ortqop.onnx")
    fx.add(name + "_ortqdq", name + "_float_bn.onnx", name + "_ortqdq.onnx", "onnxruntime-qdq", "qdq")
    fx.add(name + "_ortqop", name + "_float_bn.onnx", name + "_ortqop.onnx", "onnxruntime-qoperator",
           "qoperator")
    print("%s ort: %.1fs" % (name, time.time() - t1), flush=True)
    return fx.list, fx.skipped


def make_paddle(out):
    """The Paddle2ONNX-like CNN and ONNX Runtime's QDQ of it"""
    fx = Fixtures(out)
    pf = paddle_float()
    fx.save(pf, "paddle_float.onnx")
    fx.save(qq.quantize_qdq(pf, calibration((1, 48, 48, 3)), per_channel=True), "paddle_qdq.onnx")
    fx.add("paddle_qdq", "paddle_float.onnx", "paddle_qdq.onnx", "paddle2onnx+onnxruntime-qdq", "qdq")
    return fx.list, fx.skipped


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--no-verify", action="store_true")
    args = ap.parse_args()
    out = args.out_dir
    os.makedirs(out, exist_ok=True)
    warnings.filterwarnings("ignore")
    t_start = time.time()
    skipped = [{"fixture": "%s_%s_op17" % (m, tc),
                "reason": "not made, to keep the generation and the test short: torch 1.13 writes the "
                          "same graph at opset 17 as at 13 apart from the opset number (and "
                          "BatchNormalization's training_mode=0), as %s_op17 shows"
                          % ", ".join("resnet18_" + t for t in OPSET17["resnet18"])}
               for m in MODELS for tc in PT_TOOLCHAINS if tc not in OPSET17.get(m, ())]
    # one process per model (torch's exporter is single-threaded)
    jobs = max(1, min(len(MODELS), os.cpu_count() or 1))
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        res = pool.starmap_async(make_model, [(m, out) for m in MODELS])
        res = [make_paddle(out)] + res.get()
    fixtures = [f for r in res[1:] + res[:1] for f in r[0]]
    skipped += [s for r in res for s in r[1]]

    files = sorted(f for f in os.listdir(out) if f.endswith(".onnx"))
    models = {f: {"ort_ran": None, "ort_error": None, "ort_logits_cosine": None} for f in files}
    if not args.no_verify:
        t1 = time.time()
        res = ort_verify(out, files)
        if res is None:
            print("ONNX Runtime verification skipped: node or tests/ort/node_modules missing")
        else:
            for f in files:
                r = res.get(f, {"ran": False, "error": "not run"})
                models[f]["ort_ran"] = r["ran"]
                models[f]["ort_error"] = r.get("error")
            for fx in fixtures:
                a, b = res.get(fx["float"], {}), res.get(fx["candidate"], {})
                if a.get("ran") and b.get("ran"):
                    models[fx["candidate"]]["ort_logits_cosine"] = cosine(a["output"], b["output"])
            bad = [f for f in files if not models[f]["ort_ran"]]
            print("ONNX Runtime ran %d of %d models (%.1fs)%s" % (len(files) - len(bad), len(files),
                                                                   time.time() - t1,
                                                                   ": failed " + ", ".join(bad) if bad else ""))
    manifest = {"version": VERSION, "input_size": SIZE, "seconds": round(time.time() - t_start, 1),
                "skipped": skipped, "models": models, "fixtures": fixtures}
    with open(os.path.join(out, "manifest.json"), "w") as fp:
        json.dump(manifest, fp, indent=1)
    print("%d fixtures, %d skipped, %.1fs" % (len(fixtures), len(skipped), time.time() - t_start))


if __name__ == "__main__":
    main()
