#!/usr/bin/python3
"""Make the small models of tests/data/ort-ops/, which tests/ort_crosscheck.sh
runs with qreport and with onnxruntime-node and compares bit for bit.

    /usr/bin/python3 tests/data/make_ort_op_fixtures.py

The QLinearSoftmax models are x * gain -> QuantizeLinear -> com.microsoft QLinearSoftmax ->
DequantizeLinear, with y_scale 1/256 and the zero point ONNX Runtime's
quantizer gives a softmax output (0 for uint8, -128 for int8):

  qsm_u8_last   uint8, [2,3,10], opset 13, axis absent (-1)
  qsm_s8_last   int8, [2,3,10], opset 13
  qsm_u8_mid    uint8, [2,5,7], opset 13, axis 1 (a strided row)
  qsm_u8_op11   uint8, [2,3,10], opset 11, axis 1 (rows dims[1..] flattened)
  qsm_s8_op11   int8, [4,6,5], opset 11, axis absent: ORT takes the schema's
                -1 (the last dim), not Softmax-11's default of 1
  qsm_u8_1000   uint8, [1,1000], a classifier's softmax
  qsm_s8_1000   int8, [1,1000]
  qsm_s8_sat    int8, [16,2], gain 20 and x_scale 7: many rows put a
                probability of 1 on one value (256 - 128 = 128, which the
                pinned ORT saturates to 127)
  qsm_u8_sat    uint8, [16,2], the same with zero point 0 (256 -> 255)

and x -> QuantizeLinear -> DequantizeLinear -> AveragePool -> QuantizeLinear
-> DequantizeLinear (scale 0.05, zero point 128), as a QDQ model pools:
values on the quantization grid make window means that sit on .5 ties,
so the float sum's order decides the quantized result:

  avg_2s2       [1,8,32,32], 2x2 stride 2 (densenet's transitions)
  avg_3s1p1     3x3 stride 1, pads 1, count_include_pad 0
  avg_3s2p1_cip 3x3 stride 2, pads 1, count_include_pad 1

and float Softmax (x * gain -> Softmax), whose exp and sum order decide
which side of a quantization step an attention probability lands on:

  sm_49         [12,49], opset 13, last axis (a 7x7 attention window)
  sm_1000       [2,1000], opset 13
  sm_mid        [2,17,5], opset 13, axis 1 (rows gathered along a middle axis)
  sm_op11       [2,3,10], opset 11, axis 1 (rows of dims[1..] flattened)
  sm_mask       [4,49] plus a constant mask of 0 and -100 (swin's shifted
                windows), gain 3: the masked scores' exps are denormal,
                not 0, in ORT's AVX-512 kernel (VSCALEFPS, clamp at -103.97)

and x * gain -> ReduceMean/ReduceSum over trailing axes (a decomposed
LayerNorm's mean), whose float sum order shows in the last bits:

  rm_96         ReduceMean [8,49,96], axes [-1]
  rm_5          ReduceMean [64,5], axes [-1] (rows at every 16-byte phase)
  rm_1000       ReduceMean [4,1000], axes [-1]
  rs_7          ReduceSum [16,7], axes [-1], keepdims 0
  rm_2ax        ReduceMean [4,6,10], axes [-2,-1]
  rm_all        ReduceMean [3,5,7], no axes (all)

and NonMaxSuppression on x as the scores [2,3,120] of 120 seeded constant
boxes (x, the only input, is random normal per check):

  nms_corner    [y1,x1,y2,x2] boxes, some with their corners swapped,
                iou_threshold 0.45, score_threshold 0, at most 30 a class
  nms_center_ties  [xc,yc,w,h] boxes, scores rounded to halves first
                (Round(2x)/2, so many tie and the lower box index must
                win), iou_threshold 0.3, no score_threshold, at most 100

and 3-D pools (video models), x [1,4,6,9,10] unless said, the QDQ ones
as the avg_ models above (AveragePool between DequantizeLinear and
QuantizeLinear, so the sum's order shows), the uint8/int8 MaxPools on
the QuantizeLinear output itself:

  mp3_pads_ceil  MaxPool 2x3x3, strides 1,2,2, asymmetric pads, ceil_mode
  mp3_dil_idx    MaxPool 2x2x3 with Indices, dilations 2,2,1
  mp3_idx_cm     MaxPool 3x2x2 with Indices, storage_order 1, x [2,3,5,6,7]
  mp3_u8         uint8 MaxPool 3x3x3, stride 2, pads 1
  mp3_s8         int8 MaxPool 1x3x3, strides 1,2,2
  ap3_2s2        2x2x2 stride 2, x [1,8,8,16,16]
  ap3_3s1p1_cip  3x3x3, pads 1, count_include_pad
  ap3_ceil       3x3x3 stride 2, ceil_mode
  ap3_ceil_cip   2x3x3 stride 2, ceil_mode and count_include_pad: ORT
                 sums these in plain order, not by columns
  ap3_s3         2x3x4, stride 3 across (plain order too), x [1,4,6,9,20]

and the same two plain-order cases with 2-D windows: avg_ceil_cip (2x3,
stride 2, ceil_mode, count_include_pad, x [1,4,9,10]) and avg_s3 (3x4,
strides 1,3, x [1,4,9,20]).

and RoiAlign on x [2,3,10,12] with 6 constant rois, some reaching past
the edges:

  roi_avg       opset 16, avg, half_pixel, 3x4 bins, spatial_scale 0.8
  roi_max_out   opset 16, max (each sample the largest weighted corner,
                as ONNX Runtime), output_half_pixel, 2x5 bins, 3x3
                samples a bin

and float activations whose ONNX Runtime kernels approximate or round
in their own way (MLAS's exp and logistic polynomials, HardSwish's
x * (1/6)), on x [4,1000] times a gain, with 16 special values
appended to each row (NaN, infinities, signed zeros, the kernels' clamp
points), so each row has a 16-wide tail and a scalar one:

  act_ort       Exp (gain 30), Sigmoid (gain 8), HardSigmoid (alpha 0.2,
                beta 0.5) and HardSwish (gain 1)
  topk_ties     x [3,500] rounded to halves (many ties: the lower index
                first) through TopK: the largest 20 and the smallest 300
                along the rows, the largest 2 down the columns
  qlmul_ties    com.microsoft QLinearMul on x [2,16,6,6] quantized to uint8
                (scale 0.5, zero point 100) and int8 (zero point -3), times
                itself and times its per-channel mean (an SE block's
                broadcast), output scale 1 and an odd zero point: the
                products fall on .5 and ORT adds the zero point before
                rounding
  pow_exps      x [4,1000] (gain 3) through Pow with exponents 2 and 3 (ORT
                multiplies: correctly rounded, where powf can be an ulp
                off), and |x| through 0.5 and 1.7 (powf)
  pad_modes     x [2,3,5,7] through Pad: constant 2.5 with negative pads
                (cropping) on some axes, edge, and reflect
  erf_gelu      the same rows (gain 2.5) through Erf, Gelu (opset 20),
                com.microsoft Gelu and BiasGelu (MLAS's erf polynomial;
                |x| clamped to 3.925)

and, in tests/data/activations/ (compared within a relative L2 error of
1e-6 by tests/ort_crosscheck.sh: ONNX Runtime's cubic weights and
interpolations round differently in the last bits):

  resample.onnx  x [2,3,5,7] through GridSample (opset 16) in every mode
                (bilinear, nearest, bicubic) x padding (zeros, border,
                reflection) x align_corners (0, 1) on one constant grid
                whose points reach 0.7 past each edge, and Resize cubic
                (up and down; half_pixel, align_corners, asymmetric with
                exclude_outside and cubic_coeff_a -0.5, pytorch_half_pixel)
                and nearest with tf_half_pixel_for_nn: 24 outputs
  einsum.onnx   x [2,3,8,8] through Einsum (opset 12): attention scores
                (bhqd,bhkd->bhqk on x twice), a batched product with a
                constant (...ij,jk->...ik), a broadcast "..." (a 1 against
                3), diagonals (bhii->bhi), a trace summed to a scalar
                (bhii), a transpose (bhij->jibh), an outer product and
                three operands (bhij,jk,kl->bhil), and products written
                in another axis order (bhij,jk->kbih; bhij,bhkj->ikhb):
                10 outputs
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort-ops")


def save_graph(name, nodes, x_shape, outs, inits, opsets=(("", 13),), ir=7, check=False):
    """Save OUT/name.onnx: float input x of x_shape, outputs as (name,
    element type, dims or None), the given opsets (domain, version)."""
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info(o, t, d) for o, t, d in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(dom, v) for dom, v in opsets],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = ir
    if check:
        onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


def qsoftmax(name, shape, signed, opset, axis, xs, gain=1.0):
    qt = np.int8 if signed else np.uint8
    inits = [numpy_helper.from_array(np.array(gain, np.float32), "gain"),
             numpy_helper.from_array(np.array(xs, np.float32), "xs"),
             numpy_helper.from_array(np.array(0 if signed else 128, qt), "xz"),
             numpy_helper.from_array(np.array(1 / 256, np.float32), "ys"),
             numpy_helper.from_array(np.array(-128 if signed else 0, qt), "yz")]
    attrs = {"opset": opset}
    if axis is not None:
        attrs["axis"] = axis
    nodes = [helper.make_node("Mul", ["x", "gain"], ["xg"], name="gain"),
             helper.make_node("QuantizeLinear", ["xg", "xs", "xz"], ["xq"], name="q"),
             helper.make_node("QLinearSoftmax", ["xq", "xs", "xz", "ys", "yz"], ["yq"],
                              name="softmax", domain="com.microsoft", **attrs),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dq")]
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid("com.microsoft", 1)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 7
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


os.makedirs(OUT, exist_ok=True)
qsoftmax("qsm_u8_last", [2, 3, 10], False, 13, None, 0.05)
qsoftmax("qsm_s8_last", [2, 3, 10], True, 13, None, 0.05)
qsoftmax("qsm_u8_mid", [2, 5, 7], False, 13, 1, 0.08)
qsoftmax("qsm_u8_op11", [2, 3, 10], False, 11, 1, 0.05)
qsoftmax("qsm_s8_op11", [4, 6, 5], True, 11, None, 0.1)
qsoftmax("qsm_u8_1000", [1, 1000], False, 13, -1, 0.02)
qsoftmax("qsm_s8_1000", [1, 1000], True, 13, -1, 0.2)
qsoftmax("qsm_s8_sat", [16, 2], True, 13, -1, 7.0, gain=20.0)
qsoftmax("qsm_u8_sat", [16, 2], False, 13, -1, 7.0, gain=20.0)


def qdq_avgpool(name, k, stride, pad, cip):
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
             numpy_helper.from_array(np.array(128, np.uint8), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq"),
             helper.make_node("AveragePool", ["xd"], ["p"], name="pool", kernel_shape=[k, k],
                              strides=[stride, stride], pads=[pad] * 4, count_include_pad=cip),
             helper.make_node("QuantizeLinear", ["p", "s", "z"], ["pq"], name="q2"),
             helper.make_node("DequantizeLinear", ["pq", "s", "z"], ["y"], name="dq2")]
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, None, None])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


qdq_avgpool("avg_2s2", 2, 2, 0, 0)
qdq_avgpool("avg_3s1p1", 3, 1, 1, 0)
qdq_avgpool("avg_3s2p1_cip", 3, 2, 1, 1)


def softmax(name, shape, opset, axis, gain):
    nodes = [helper.make_node("Mul", ["x", "gain"], ["xg"], name="gain"),
             helper.make_node("Softmax", ["xg"], ["y"], name="softmax", axis=axis)]
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                          [numpy_helper.from_array(np.array(gain, np.float32), "gain")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


softmax("sm_49", [12, 49], 13, -1, 3.0)
softmax("sm_1000", [2, 1000], 13, -1, 4.0)
softmax("sm_mid", [2, 17, 5], 13, 1, 2.0)
softmax("sm_op11", [2, 3, 10], 11, 1, 2.0)


def softmax_mask():
    mask = np.where(np.random.RandomState(21).rand(4, 49) < 0.4, -100.0, 0.0).astype(np.float32)
    nodes = [helper.make_node("Mul", ["x", "gain"], ["xg"], name="gain"),
             helper.make_node("Add", ["xg", "mask"], ["xm"], name="mask"),
             helper.make_node("Softmax", ["xm"], ["y"], name="softmax", axis=-1)]
    save_graph("sm_mask", nodes, [4, 49], [("y", TensorProto.FLOAT, [4, 49])],
               [numpy_helper.from_array(np.array(3.0, np.float32), "gain"),
                numpy_helper.from_array(mask, "mask")], check=True)


softmax_mask()


def reduce(name, op, shape, axes, keepdims=1):
    attrs = {"keepdims": keepdims}
    ins = ["xg"]
    inits = [numpy_helper.from_array(np.array(3.0, np.float32), "gain")]
    if axes is not None and op == "ReduceSum":  # an input from opset 13
        ins.append("axes")
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
    elif axes is not None:
        attrs["axes"] = axes
    nodes = [helper.make_node("Mul", ["x", "gain"], ["xg"], name="gain"),
             helper.make_node(op, ins, ["y"], name="reduce", **attrs)]
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 7
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


reduce("rm_96", "ReduceMean", [8, 49, 96], [-1])
reduce("rm_5", "ReduceMean", [64, 5], [-1])
reduce("rm_1000", "ReduceMean", [4, 1000], [-1])
reduce("rs_7", "ReduceSum", [16, 7], [-1], keepdims=0)
reduce("rm_2ax", "ReduceMean", [4, 6, 10], [-2, -1])
reduce("rm_all", "ReduceMean", [3, 5, 7], None)


def nms(name, center, ties, iou, score_thr, max_out):
    rng = np.random.RandomState(11)
    if center:
        boxes = np.concatenate([rng.rand(2, 120, 2) * 20,
                                rng.rand(2, 120, 2) * 6 + 0.5], axis=2)
    else:
        boxes = rng.rand(2, 120, 4) * 20
        swap = rng.rand(2, 120) < 0.3
        boxes[swap] = boxes[swap][:, [2, 3, 0, 1]]
    inits = [numpy_helper.from_array(boxes.astype(np.float32), "boxes"),
             numpy_helper.from_array(np.array([max_out], np.int64), "max_out"),
             numpy_helper.from_array(np.array([iou], np.float32), "iou")]
    ins = ["boxes", "scores", "max_out", "iou"]
    if score_thr is not None:
        inits.append(numpy_helper.from_array(np.array([score_thr], np.float32),
                                             "score_thr"))
        ins.append("score_thr")
    nodes = []
    if ties:
        inits += [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
                  numpy_helper.from_array(np.array(0.5, np.float32), "half")]
        nodes += [helper.make_node("Mul", ["x", "two"], ["x2"], name="x2"),
                  helper.make_node("Round", ["x2"], ["xr"], name="round"),
                  helper.make_node("Mul", ["xr", "half"], ["scores"], name="halves")]
    else:
        nodes.append(helper.make_node("Identity", ["x"], ["scores"], name="scores"))
    nodes.append(helper.make_node("NonMaxSuppression", ins, ["selected"], name="nms",
                                  center_point_box=int(center)))
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 120])],
                          [helper.make_tensor_value_info("selected", TensorProto.INT64, None)],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 7
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


nms("nms_corner", False, False, 0.45, 0.0, 30)
nms("nms_center_ties", True, True, 0.3, None, 100)


def resample():
    rng = np.random.RandomState(12)
    grid = (rng.rand(2, 4, 6, 2) * 3.4 - 1.7).astype(np.float32)
    nodes, outs = [], []
    inits = [numpy_helper.from_array(grid, "grid")]
    for mode in ("bilinear", "nearest", "bicubic"):
        for pad in ("zeros", "border", "reflection"):
            for ac in (0, 1):
                y = "gs_%s_%s_%d" % (mode, pad, ac)
                nodes.append(helper.make_node("GridSample", ["x", "grid"], [y], name=y,
                                              mode=mode, padding_mode=pad, align_corners=ac))
                outs.append(y)
    for name, sizes, attrs in (
            ("rs_up_hp", [2, 3, 13, 11], {"mode": "cubic"}),
            ("rs_down_hp", [2, 3, 3, 4], {"mode": "cubic"}),
            ("rs_up_ac", [2, 3, 9, 9], {"mode": "cubic",
                                        "coordinate_transformation_mode": "align_corners"}),
            ("rs_up_asym_ex", [2, 3, 12, 8], {"mode": "cubic",
                                              "coordinate_transformation_mode": "asymmetric",
                                              "exclude_outside": 1, "cubic_coeff_a": -0.5}),
            ("rs_down_pt", [2, 3, 2, 3], {"mode": "cubic",
                                          "coordinate_transformation_mode": "pytorch_half_pixel"}),
            ("rs_tfnn", [2, 3, 3, 4], {"mode": "nearest",
                                       "coordinate_transformation_mode": "tf_half_pixel_for_nn"})):
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), name + "_sizes"))
        nodes.append(helper.make_node("Resize", ["x", "", "", name + "_sizes"], [name],
                                      name=name, **attrs))
        outs.append(name)
    g = helper.make_graph(nodes, "resample",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5, 7])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 8
    onnx.save(m, os.path.join(os.path.dirname(OUT), "activations", "resample.onnx"))


resample()


def einsum():
    rng = np.random.RandomState(13)
    inits = [numpy_helper.from_array(rng.randn(8, 5).astype(np.float32), "w"),
             numpy_helper.from_array(rng.randn(2, 1, 8, 4).astype(np.float32), "wb"),
             numpy_helper.from_array(rng.randn(5, 3).astype(np.float32), "w2"),
             numpy_helper.from_array(rng.randn(4).astype(np.float32), "v")]
    cases = (("scores", ["x", "x"], "bhqd,bhkd->bhqk"),
             ("matmul", ["x", "w"], "...ij,jk->...ik"),
             ("bcast", ["x", "wb"], "...ij,...jk->...ik"),
             ("diag", ["x"], "bhii->bhi"),
             ("trace", ["x"], "bhii"),
             ("transpose", ["x"], "bhij->jibh"),
             ("outer", ["x", "v"], "bhij,k->bhijk"),
             ("three", ["x", "w", "w2"], "bhij,jk,kl->bhil"),
             ("permuted", ["x", "w"], "bhij,jk->kbih"),
             ("batch_last", ["x", "x"], "bhij,bhkj->ikhb"))
    nodes = [helper.make_node("Einsum", ins, [name], name=name, equation=eq)
             for name, ins, eq in cases]
    g = helper.make_graph(nodes, "einsum",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                           for n, _, _ in cases],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 7
    onnx.save(m, os.path.join(os.path.dirname(OUT), "activations", "einsum.onnx"))


einsum()


def roi_align(name, opset, **attrs):
    rng = np.random.RandomState(14)
    rois = np.concatenate([rng.rand(6, 2) * 8 - 1, rng.rand(6, 2) * 8 + 4],
                          axis=1).astype(np.float32)
    inits = [numpy_helper.from_array(rois, "rois"),
             numpy_helper.from_array(np.array([0, 1, 1, 0, 1, 0], np.int64), "batch")]
    g = helper.make_graph([helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"],
                                            name="roi_align", **attrs)],
                          name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 10, 12])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


roi_align("roi_avg", 16, output_height=3, output_width=4, spatial_scale=0.8)
roi_align("roi_max_out", 16, mode="max", output_height=2, output_width=5,
          coordinate_transformation_mode="output_half_pixel", sampling_ratio=3)


def pool(name, op, shape, qdq=None, n_out=1, opset=13, **attrs):
    """x -> [Q -> DQ] -> op -> [Q -> DQ]; qdq is None (float),
    "grid" (DequantizeLinear'd input and a requantized output: .5 ties) or
    "u8"/"s8" (the pool runs on the quantized tensor itself)."""
    signed = qdq == "s8"
    zt = np.int8 if signed else np.uint8
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
             numpy_helper.from_array(np.array(0 if signed else 128, zt), "z")]
    outs = ["p", "idx"][:n_out]
    if qdq is None:
        nodes = [helper.make_node(op, ["x"], outs, name="pool", **attrs)]
        last = "p"
    elif qdq == "grid":
        nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q"),
                 helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq"),
                 helper.make_node(op, ["xd"], outs, name="pool", **attrs),
                 helper.make_node("QuantizeLinear", ["p", "s", "z"], ["pq"], name="q2"),
                 helper.make_node("DequantizeLinear", ["pq", "s", "z"], ["y"], name="dq2")]
        last = "y"
    else:
        nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q"),
                 helper.make_node(op, ["xq"], ["pq"], name="pool", **attrs),
                 helper.make_node("DequantizeLinear", ["pq", "s", "z"], ["y"], name="dq")]
        last = "y"
    outputs = [helper.make_tensor_value_info(last, TensorProto.FLOAT, None)]
    if n_out > 1:
        outputs.append(helper.make_tensor_value_info("idx", TensorProto.INT64, None))
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


# 3-D pools (video models: s3d, r3d): x [N, C, D, H, W]
V = [1, 4, 6, 9, 10]
pool("mp3_pads_ceil", "MaxPool", V, kernel_shape=[2, 3, 3], strides=[1, 2, 2],
       pads=[0, 1, 1, 1, 1, 0], ceil_mode=1)
pool("mp3_dil_idx", "MaxPool", V, n_out=2, kernel_shape=[2, 2, 3], strides=[2, 1, 2],
       dilations=[2, 2, 1], pads=[1, 0, 1, 0, 1, 1])
pool("mp3_idx_cm", "MaxPool", [2, 3, 5, 6, 7], n_out=2, kernel_shape=[3, 2, 2],
       strides=[2, 2, 2], pads=[1, 1, 0, 1, 0, 1], storage_order=1)
pool("mp3_u8", "MaxPool", V, qdq="u8", kernel_shape=[3, 3, 3], strides=[2, 2, 2],
       pads=[1, 1, 1, 1, 1, 1])
pool("mp3_s8", "MaxPool", V, qdq="s8", kernel_shape=[1, 3, 3], strides=[1, 2, 2],
       pads=[0, 1, 1, 0, 1, 1])
pool("ap3_2s2", "AveragePool", [1, 8, 8, 16, 16], qdq="grid", kernel_shape=[2, 2, 2],
       strides=[2, 2, 2])
pool("ap3_3s1p1_cip", "AveragePool", V, qdq="grid", kernel_shape=[3, 3, 3],
       pads=[1, 1, 1, 1, 1, 1], count_include_pad=1)
pool("ap3_ceil", "AveragePool", V, qdq="grid", kernel_shape=[3, 3, 3], strides=[2, 2, 2],
       pads=[1, 0, 1, 0, 1, 0], ceil_mode=1)
pool("ap3_ceil_cip", "AveragePool", V, qdq="grid", kernel_shape=[2, 3, 3],
       strides=[2, 2, 2], pads=[0, 1, 1, 0, 1, 1], ceil_mode=1, count_include_pad=1)
# stride 3 across: MLAS sums in plain order instead of by columns
pool("ap3_s3", "AveragePool", [1, 4, 6, 9, 20], qdq="grid", kernel_shape=[2, 3, 4],
       strides=[1, 1, 3], pads=[1, 1, 1, 1, 1, 1])
# 2-D windows where MLAS's vector kernel does not run
pool("avg_ceil_cip", "AveragePool", [1, 4, 9, 10], qdq="grid", kernel_shape=[2, 3],
     strides=[2, 2], pads=[0, 1, 0, 1], ceil_mode=1, count_include_pad=1)
pool("avg_s3", "AveragePool", [1, 4, 9, 20], qdq="grid", kernel_shape=[3, 4], strides=[1, 3],
     pads=[1, 1, 1, 1])
# a window that is the whole volume: MLAS's global kernel and its order
pool("ap3_whole", "AveragePool", [1, 8, 2, 7, 7], qdq="grid", kernel_shape=[2, 7, 7])
pool("avg_whole", "AveragePool", [1, 8, 7, 7], qdq="grid", kernel_shape=[7, 7])


def save_xy(name, nodes, shape, inits):
    """Save OUT/name.onnx: float x of shape in, float y out, opset 13."""
    save_graph(name, nodes, shape, [("y", TensorProto.FLOAT, None)], inits, ir=8)


def conv3d(name, shape, cout, k, qdq=False, **attrs):
    """x -> Conv (3-D, seeded constant weights and bias); qdq: input and
    weights through QuantizeLinear -> DequantizeLinear (per-channel int8
    weights) and the output requantized, as a QDQ video model."""
    rng = np.random.RandomState(sum(map(ord, name)))
    group = attrs.get("group", 1)
    w = (rng.randn(cout, shape[1] // group, *k) * 0.2).astype(np.float32)
    b = (rng.randn(cout) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(b, "b")]
    if qdq:
        ws = (np.abs(w).reshape(cout, -1).max(axis=1) / 127).astype(np.float32)
        wq = np.clip(np.round(w / ws.reshape((-1,) + (1,) * (len(k) + 1))), -127,
                 127).astype(np.int8)
        inits += [numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(ws, "ws"),
                  numpy_helper.from_array(np.zeros(cout, np.int8), "wz"),
                  numpy_helper.from_array(np.array(0.05, np.float32), "s"),
                  numpy_helper.from_array(np.array(128, np.uint8), "z")]
        nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q"),
                 helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq"),
                 helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], name="wdq",
                                  axis=0),
                 helper.make_node("Conv", ["xd", "w", "b"], ["c"], name="conv", **attrs),
                 helper.make_node("QuantizeLinear", ["c", "s", "z"], ["cq"], name="q2"),
                 helper.make_node("DequantizeLinear", ["cq", "s", "z"], ["y"], name="dq2")]
    else:
        inits.append(numpy_helper.from_array(w, "w"))
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", **attrs)]
    save_xy(name, nodes, shape, inits)


# 3-D convs (r3d, r2plus1d, s3d): im2col over the volume, then ORT's GEMM
conv3d("c3_333", [1, 8, 6, 10, 12], 16, [3, 3, 3], pads=[1, 1, 1, 1, 1, 1])
conv3d("c3_stem", [1, 3, 8, 16, 16], 24, [3, 7, 7], strides=[1, 2, 2],
       pads=[1, 3, 3, 1, 3, 3])
conv3d("c3_t1", [2, 16, 5, 7, 9], 12, [3, 1, 1], strides=[2, 1, 1], pads=[1, 0, 0, 1, 0, 0])
conv3d("c3_pw", [1, 32, 4, 6, 6], 24, [1, 1, 1])
conv3d("c3_dil_grp", [1, 12, 7, 9, 9], 12, [2, 3, 3], dilations=[2, 1, 2], group=3,
       pads=[1, 2, 0, 0, 1, 2])
conv3d("c3_dw", [1, 8, 5, 8, 8], 8, [3, 3, 3], group=8, pads=[1, 1, 1, 1, 1, 1])
conv3d("c3_qdq", [1, 16, 6, 10, 10], 32, [3, 3, 3], qdq=True, strides=[1, 2, 2],
       pads=[1, 1, 1, 1, 1, 1])


def qlinear_conv3d(name, shape, cout, k, integer=False, **attrs):
    """x -> QuantizeLinear (uint8) -> QLinearConv (3-D, int8 weights per
    output channel, int32 bias) -> DequantizeLinear, as ORT's QOperator
    quantizer writes a Conv3d; integer: ConvInteger -> Cast -> Mul
    instead, as its dynamic quantization does."""
    rng = np.random.RandomState(sum(map(ord, name)))
    group = attrs.get("group", 1)
    w = (rng.randn(cout, shape[1] // group, *k) * 0.2).astype(np.float32)
    ws = (np.abs(w).reshape(cout, -1).max(axis=1) / 127).astype(np.float32)
    wq = np.clip(np.round(w / ws.reshape((-1,) + (1,) * (len(k) + 1))), -127,
                 127).astype(np.int8)
    inits = [numpy_helper.from_array(wq, "wq"),
             numpy_helper.from_array(np.array(0.05, np.float32), "xs"),
             numpy_helper.from_array(np.array(128, np.uint8), "xz")]
    if integer:
        inits += [numpy_helper.from_array(np.array(0, np.int8), "wz"),
                  numpy_helper.from_array(np.float32(0.05) * ws.max(keepdims=True).astype(np.float32),
                                          "sc")]
        nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q"),
                 helper.make_node("ConvInteger", ["xq", "wq", "xz", "wz"], ["acc"], name="conv",
                                  **attrs),
                 helper.make_node("Cast", ["acc"], ["accf"], name="cast", to=TensorProto.FLOAT),
                 helper.make_node("Mul", ["accf", "sc"], ["y"], name="scale")]
    else:
        b = (rng.randn(cout) * 0.1).astype(np.float32)
        bq = np.round(b / (0.05 * ws)).astype(np.int32)
        inits += [numpy_helper.from_array(ws, "ws"),
                  numpy_helper.from_array(np.zeros(cout, np.int8), "wz"),
                  numpy_helper.from_array(bq, "bq"),
                  numpy_helper.from_array(np.array(0.08, np.float32), "ys"),
                  numpy_helper.from_array(np.array(120, np.uint8), "yz")]
        nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q"),
                 helper.make_node("QLinearConv", ["xq", "xs", "xz", "wq", "ws", "wz", "ys",
                                                  "yz", "bq"], ["yq"], name="conv", **attrs),
                 helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dq")]
    save_xy(name, nodes, shape, inits)


qlinear_conv3d("qc3_333", [1, 8, 6, 10, 12], 16, [3, 3, 3], pads=[1, 1, 1, 1, 1, 1])
qlinear_conv3d("qc3_stem", [1, 3, 8, 16, 16], 24, [3, 7, 7], strides=[1, 2, 2],
               pads=[1, 3, 3, 1, 3, 3])
qlinear_conv3d("qc3_pw_grp", [1, 16, 4, 6, 6], 24, [1, 1, 1], group=2)
qlinear_conv3d("ci3_333", [1, 8, 5, 9, 9], 12, [3, 3, 3], integer=True, strides=[2, 1, 1],
               pads=[1, 1, 1, 1, 1, 1])
# 2-D, depthwise with two outputs per channel: ORT runs it as grouped GEMMs,
# whose u8 x s8 taps saturate in pairs on CPUs without VNNI
qlinear_conv3d("qc_dw_mult2", [1, 8, 12, 12], 16, [3, 3], group=8,
               pads=[1, 1, 1, 1])


def if_model(name, flip):
    """If, as torchvision's detectors export it: x [3,5] -> y = x * 2 ->
    If(sum(x) > 0, or <= 0 when flip): the then branch adds a constant to
    y (a name from the outer graph); the else branch holds a nested If
    (max(x) > 1) whose branches read x and y and give outputs of other
    shapes (a [5] reduction) and dtypes are the same; a second output is
    an int64 ArgMax taken inside the branches."""
    def graph(gname, nodes, outs, inits=()):
        return helper.make_graph(nodes, gname, [], [helper.make_tensor_value_info(
            o, t, None) for o, t in outs], list(inits))
    c1 = numpy_helper.from_array(np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5), "c1")
    then_g = graph("then", [helper.make_node("Add", ["y", "c1"], ["t_out"], name="t_add"),
                            helper.make_node("ArgMax", ["t_out"], ["t_idx"], name="t_arg",
                                             axis=1, keepdims=0)],
                   [("t_out", TensorProto.FLOAT), ("t_idx", TensorProto.INT64)], [c1])
    in_then = graph("in_then", [helper.make_node("Sub", ["x", "y"], ["it_out"], name="it_sub"),
                                helper.make_node("ArgMax", ["x"], ["it_idx"], name="it_arg",
                                                 axis=1, keepdims=0)],
                    [("it_out", TensorProto.FLOAT), ("it_idx", TensorProto.INT64)])
    in_else = graph("in_else", [helper.make_node("ReduceSum", ["y"], ["ie_out"], name="ie_sum",
                                                 keepdims=0),
                                helper.make_node("ArgMax", ["y"], ["ie_idx"], name="ie_arg",
                                                 axis=0, keepdims=0)],
                    [("ie_out", TensorProto.FLOAT), ("ie_idx", TensorProto.INT64)])
    else_g = graph("else", [helper.make_node("ReduceMax", ["x"], ["mx"], name="e_max",
                                             keepdims=0),
                            helper.make_node("Greater", ["mx", "one"], ["c2"], name="e_gt"),
                            helper.make_node("If", ["c2"], ["e_out", "e_idx"], name="inner_if",
                                             then_branch=in_then, else_branch=in_else)],
                   [("e_out", TensorProto.FLOAT), ("e_idx", TensorProto.INT64)],
                   [numpy_helper.from_array(np.array(1.0, np.float32), "one")])
    nodes = [helper.make_node("Mul", ["x", "two"], ["y"], name="double"),
             helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
             helper.make_node("LessOrEqual" if flip else "Greater", ["s", "zero"], ["c"],
                              name="cond"),
             helper.make_node("If", ["c"], ["out", "idx"], name="if", then_branch=then_g,
                              else_branch=else_g),
             helper.make_node("Neg", ["out"], ["z"], name="after")]
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("idx", TensorProto.INT64, None)],
                          [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
                           numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


if_model("if_nested", False)
if_model("if_nested_flip", True)


def loop_model(name, trip):
    """Loop, as torchvision's mask and keypoint heads export it: x [3,4];
    carried acc (acc * 0.5 + y, y = x * 0.1 read from the outer graph)
    and grow (a row, max(acc) over axis 0, appended per iteration: the
    carried value changes shape); a scan output (acc * the iteration
    number, stacked); the body's condition max(acc) > lim, lim = 0.25 +
    2 max(y) from the outer graph, ends it after a number of iterations
    that depends on x (acc tends to 2y; 3 or 4 on the test inputs). trip:
    the trip count (2: it ends first), or None
    for none (the condition alone)."""
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Mul", ["acc_in", "half"], ["acc_h"], name="b_half"),
         helper.make_node("Add", ["acc_h", "y"], ["acc_out"], name="b_add"),
         helper.make_node("ReduceMax", ["acc_out"], ["row"], name="b_rowmax", axes=[0],
                          keepdims=1),
         helper.make_node("Concat", ["grow_in", "row"], ["grow_out"], name="b_cat", axis=0),
         helper.make_node("Cast", ["i"], ["i_f"], name="b_cast", to=f),
         helper.make_node("Mul", ["acc_out", "i_f"], ["scan"], name="b_scan"),
         helper.make_node("ReduceMax", ["acc_out"], ["mx"], name="b_max", keepdims=0),
         helper.make_node("Greater", ["mx", "lim"], ["cond_out"], name="b_gt")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", f, None),
         helper.make_tensor_value_info("grow_in", f, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", f, None),
         helper.make_tensor_value_info("grow_out", f, None),
         helper.make_tensor_value_info("scan", f, None)],
        [numpy_helper.from_array(np.array(0.5, np.float32), "half")])
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "tenth"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(0.25, np.float32), "quarter"),
             numpy_helper.from_array(np.array(True), "go"),
             numpy_helper.from_array(np.array([0], np.int64), "zero"),
             numpy_helper.from_array(np.array(trip or 0, np.int64), "m")]
    nodes = [helper.make_node("Abs", ["x"], ["ax"], name="abs"),
             helper.make_node("Mul", ["ax", "tenth"], ["y"], name="tenth_of"),
             helper.make_node("ReduceMax", ["y"], ["ymax"], name="ymax", keepdims=0),
             helper.make_node("Mul", ["ymax", "two"], ["y2"], name="twice"),
             helper.make_node("Add", ["y2", "quarter"], ["lim"], name="lim"),
             helper.make_node("Slice", ["ax", "zero", "zero", "zero"], ["empty"], name="none"),
             helper.make_node("Loop", ["m" if trip else "", "go", "ax", "empty"],
                              ["acc", "grow", "stack"], name="loop", body=body),
             helper.make_node("Neg", ["grow"], ["after"], name="after")]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", f, [3, 4])],
                          [helper.make_tensor_value_info("acc", f, None),
                           helper.make_tensor_value_info("after", f, None),
                           helper.make_tensor_value_info("stack", f, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="qreport-fixtures", producer_version="1")
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


loop_model("loop_trip", 2)
loop_model("loop_cond", None)


ACT_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 18.0, -18.0, 88.7762626647950,
                        -103.9720840454, 89.0, -104.0, 3.0, -3.0, 1e30, -1e30, 0.1], np.float32)


def act_ort():
    inits = [numpy_helper.from_array(np.tile(ACT_SPECIAL, (4, 1)), "special")]
    nodes = []
    for op, gain, attrs in [("Exp", 30.0, {}), ("Sigmoid", 8.0, {}),
                            ("HardSigmoid", 1.0, {"alpha": 0.2, "beta": 0.5}),
                            ("HardSwish", 1.0, {})]:
        low = op.lower()
        inits.append(numpy_helper.from_array(np.array(gain, np.float32), low + "_gain"))
        nodes += [helper.make_node("Mul", ["x", low + "_gain"], [low + "_xg"], name=low + "_gain"),
                  helper.make_node("Concat", [low + "_xg", "special"], [low + "_in"],
                                   name=low + "_in", axis=1),
                  helper.make_node(op, [low + "_in"], [low], name=low, **attrs)]
    save_graph("act_ort", nodes, [4, 1000],
               [(op.lower(), TensorProto.FLOAT, [4, 1016])
                for op in ("Exp", "Sigmoid", "HardSigmoid", "HardSwish")],
               inits, opsets=(("", 14),), ir=8, check=True)


act_ort()


def erf_gelu():
    f = TensorProto.FLOAT
    inits = [numpy_helper.from_array(np.tile(ACT_SPECIAL, (4, 1)), "special"),
             numpy_helper.from_array(np.array(2.5, np.float32), "gain"),
             numpy_helper.from_array(np.linspace(-2, 2, 1016).astype(np.float32), "bias")]
    nodes = [helper.make_node("Mul", ["x", "gain"], ["xg"], name="gain"),
             helper.make_node("Concat", ["xg", "special"], ["xs"], name="rows", axis=1),
             helper.make_node("Erf", ["xs"], ["erf"], name="erf"),
             helper.make_node("Gelu", ["xs"], ["gelu"], name="gelu"),
             helper.make_node("Gelu", ["xs"], ["ms_gelu"], name="ms_gelu", domain="com.microsoft"),
             helper.make_node("BiasGelu", ["xs", "bias"], ["bias_gelu"], name="bias_gelu",
                              domain="com.microsoft")]
    outs = ["erf", "gelu", "ms_gelu", "bias_gelu"]
    save_graph("erf_gelu", nodes, [4, 1000], [(o, f, [4, 1016]) for o in outs], inits,
               opsets=(("", 20), ("com.microsoft", 1)), ir=9)


erf_gelu()


def topk_ties():
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    inits = [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(np.array([20], np.int64), "k20"),
             numpy_helper.from_array(np.array([300], np.int64), "k300"),
             numpy_helper.from_array(np.array([2], np.int64), "k2")]
    nodes = [helper.make_node("Mul", ["x", "two"], ["x2"], name="x2"),
             helper.make_node("Round", ["x2"], ["xr"], name="round"),
             helper.make_node("Mul", ["xr", "half"], ["xh"], name="halves"),
             helper.make_node("TopK", ["xh", "k20"], ["top20", "top20_i"], name="top20", axis=1),
             helper.make_node("TopK", ["xh", "k300"], ["low300", "low300_i"], name="low300",
                              axis=-1, largest=0),
             helper.make_node("TopK", ["xh", "k2"], ["col2", "col2_i"], name="col2", axis=0)]
    outs = [("top20", f, [3, 20]), ("top20_i", i64, [3, 20]), ("low300", f, [3, 300]),
            ("low300_i", i64, [3, 300]), ("col2", f, [2, 500]), ("col2_i", i64, [2, 500])]
    save_graph("topk_ties", nodes, [3, 500], outs, inits, check=True)


topk_ties()


def pad_modes():
    f = TensorProto.FLOAT
    inits = [numpy_helper.from_array(np.array([0, -1, 2, 3, 1, 0, -2, -1], np.int64), "p_const"),
             numpy_helper.from_array(np.array([1, 0, 2, 1, 0, 2, 1, 3], np.int64), "p_edge"),
             numpy_helper.from_array(np.array([0, 1, 4, 6, 1, 2, 3, 5], np.int64), "p_reflect"),
             numpy_helper.from_array(np.array(2.5, np.float32), "value")]
    nodes = [helper.make_node("Pad", ["x", "p_const", "value"], ["constant"], name="constant"),
             helper.make_node("Pad", ["x", "p_edge"], ["edge"], name="edge", mode="edge"),
             helper.make_node("Pad", ["x", "p_reflect"], ["reflect"], name="reflect",
                              mode="reflect")]
    save_graph("pad_modes", nodes, [2, 3, 5, 7],
               [(n, f, None) for n in ("constant", "edge", "reflect")], inits)


pad_modes()


def pow_exps():
    f = TensorProto.FLOAT
    inits = [numpy_helper.from_array(np.array(3.0, np.float32), "gain")]
    nodes = [helper.make_node("Mul", ["x", "gain"], ["xg"], name="gain"),
             helper.make_node("Abs", ["xg"], ["ax"], name="abs")]
    outs = []
    for e, src in ((2.0, "xg"), (3.0, "xg"), (0.5, "ax"), (1.7, "ax")):
        name = "pow_" + str(e).replace(".", "_")
        inits.append(numpy_helper.from_array(np.array(e, np.float32), name + "_e"))
        nodes.append(helper.make_node("Pow", [src, name + "_e"], [name], name=name))
        outs.append(name)
    save_graph("pow_exps", nodes, [4, 1000], [(o, f, [4, 1000]) for o in outs], inits)


pow_exps()


def qlmul_ties():
    f = TensorProto.FLOAT
    inits = [numpy_helper.from_array(np.array(4.0, np.float32), "gain"),
             numpy_helper.from_array(np.array(0.5, np.float32), "s_in"),
             numpy_helper.from_array(np.array(1.0, np.float32), "s_out")]
    nodes = [helper.make_node("Mul", ["x", "gain"], ["xg"], name="gain"),
             helper.make_node("ReduceMean", ["xg"], ["xm"], name="mean", axes=[2, 3])]
    outs = []
    for tname, npt, zin, zout in (("u8", np.uint8, 100, 7), ("s8", np.int8, -3, 5)):
        inits += [numpy_helper.from_array(np.array(zin, npt), "z_in_" + tname),
                  numpy_helper.from_array(np.array(zout, npt), "z_out_" + tname)]
        q = ["s_in", "z_in_" + tname]
        nodes += [helper.make_node("QuantizeLinear", ["xg"] + q, ["a_" + tname], name="qa_" + tname),
                  helper.make_node("QuantizeLinear", ["xm"] + q, ["m_" + tname], name="qm_" + tname),
                  helper.make_node("QLinearMul", ["a_" + tname] + q + ["a_" + tname] + q +
                                   ["s_out", "z_out_" + tname], ["sq_" + tname],
                                   name="sq_" + tname, domain="com.microsoft"),
                  helper.make_node("QLinearMul", ["m_" + tname] + q + ["a_" + tname] + q +
                                   ["s_out", "z_out_" + tname], ["se_" + tname],
                                   name="se_" + tname, domain="com.microsoft")]
        outs += ["sq_" + tname, "se_" + tname]
    save_graph("qlmul_ties", nodes, [2, 16, 6, 6],
               [(o, TensorProto.UINT8 if "u8" in o else TensorProto.INT8, None) for o in outs],
               inits, opsets=(("", 13), ("com.microsoft", 1)))


qlmul_ties()
