#!/usr/bin/python3
"""Copy a model with every intermediate tensor made a graph output, the way
ONNX Runtime's qdq_loss_debug does (outputs carry only a name; ORT infers
their types), so ONNX Runtime can be compared layer by layer.

    /usr/bin/python3 tests/models/expose_all.py IN.onnx OUT.onnx
"""
import sys

import onnx


def main():
    m = onnx.load(sys.argv[1])
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        if n.op_type == "Constant":
            continue
        for t in n.output:
            if t and t not in have:
                m.graph.output.append(onnx.ValueInfoProto(name=t))
                have.add(t)
    onnx.save(m, sys.argv[2])


if __name__ == "__main__":
    main()
