#!/usr/bin/python3
"""Copy a model with every tensor renamed t<i> and every node n<i>, as an
obfuscating tool would, so qreport must match float and quant tensors by
structure rather than by name (samples/qdq_quantize.py's rename_opaque).

    /usr/bin/python3 tests/models/make_renamed.py IN.onnx OUT.onnx
"""
import os
import sys

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "samples"))
from qdq_quantize import rename_opaque  # noqa: E402


def main():
    onnx.save(rename_opaque(onnx.load(sys.argv[1])), sys.argv[2])


if __name__ == "__main__":
    main()
