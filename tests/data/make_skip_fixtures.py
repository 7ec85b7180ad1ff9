"""Make the fixtures of tests/data/activations/ for tests/test_skip.c:

  skip_float.onnx   x [1,3,h,w] (height and width dynamic) -> Conv (260
                    filters 3x3, bias) "c" -> Relu "r" -> MaxPool 2x2
                    stride 2 "p" -> Conv (6 filters 1x1, bias) "c2" ->
                    GlobalAveragePool "g" -> Flatten "out" [1,6]. An image
                    under 4 pixels high or wide leaves the MaxPool less
                    than its window: the run fails there, after "x", "c"
                    and "r" were made. 260 filters: on an image 3 pixels
                    high and 16384 wide "r" holds 17 MB, more than the
                    float run keeps ahead of the candidate runs in step
                    (16 MiB), so it waits for them to read "r" before its
                    MaxPool fails.
  skip_qdq.onnx     its QDQ form by samples/qdq_quantize.py (per-channel
                    int8 weights, uint8 activations calibrated on images
                    of 8x8 to 12x16 pixels)

    /usr/bin/python3 tests/data/make_skip_fixtures.py
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "activations")
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))), "samples"))
import qdq_quantize as qq  # noqa: E402

rng = np.random.RandomState(11)
W1 = rng.normal(0, 0.4, (260, 3, 3, 3)).astype(np.float32)
B1 = rng.normal(0, 0.1, (260,)).astype(np.float32)
W2 = rng.normal(0, 0.1, (6, 260, 1, 1)).astype(np.float32)
B2 = rng.normal(0, 0.1, (6,)).astype(np.float32)
g = helper.make_graph(
    [helper.make_node("Conv", ["x", "W1", "B1"], ["c"], name="conv"),
     helper.make_node("Relu", ["c"], ["r"], name="relu"),
     helper.make_node("MaxPool", ["r"], ["p"], name="pool",
                      kernel_shape=[2, 2], strides=[2, 2]),
     helper.make_node("Conv", ["p", "W2", "B2"], ["c2"], name="conv2"),
     helper.make_node("GlobalAveragePool", ["c2"], ["g"], name="gap"),
     helper.make_node("Flatten", ["g"], ["out"], name="flatten")],
    "skip",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
    [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 6])],
    [numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(B1, "B1"),
     numpy_helper.from_array(W2, "W2"), numpy_helper.from_array(B2, "B2")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                      producer_name="qreport-fixtures", producer_version="1")
m.ir_version = 7
onnx.checker.check_model(m)
os.makedirs(OUT, exist_ok=True)
onnx.save(m, os.path.join(OUT, "skip_float.onnx"))

calib = [rng.uniform(0, 1, (1, 3, h, w)).astype(np.float32)
         for h, w in ((8, 8), (12, 10), (9, 14), (12, 16))]
onnx.save(qq.quantize_qdq(m, calib), os.path.join(OUT, "skip_qdq.onnx"))
