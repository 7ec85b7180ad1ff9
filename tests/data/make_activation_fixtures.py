#!/usr/bin/python3
"""Make the fixture of tests/data/activations/ for tests/test_activations.c
and tests/test_cli.c:

  unsupported.onnx  a float model qreport's engine cannot run: a 1x1 Conv
                    (so the weight analysis has a layer) followed by an
                    Einsum, which the engine does not implement.

    /usr/bin/python3 tests/data/make_activation_fixtures.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "activations")

w = (np.arange(6, dtype=np.float32).reshape(2, 3, 1, 1) - 2.5) / 4
g = helper.make_graph(
    [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
     helper.make_node("Einsum", ["c"], ["y"], name="einsum",
                      equation="bchw->bchw")],
    "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])],
    [numpy_helper.from_array(w, "w")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                      producer_name="qreport-fixtures", producer_version="1")
m.ir_version = 7
onnx.checker.check_model(m)
os.makedirs(OUT, exist_ok=True)
onnx.save(m, os.path.join(OUT, "unsupported.onnx"))
