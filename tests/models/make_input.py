#!/usr/bin/python3
"""Write a seeded random-normal input for each graph input of a model.

    /usr/bin/python3 tests/models/make_input.py MODEL.onnx OUT_DIR [BATCH] [SEED]

Each input NAME becomes OUT_DIR/NAME.npy (float32; dynamic dims become
BATCH for the first dim and 1 elsewhere).
"""
import os
import sys

import numpy as np
import onnx


def main():
    m = onnx.load(sys.argv[1], load_external_data=False)
    out = sys.argv[2]
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    rng = np.random.default_rng(int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    inits = {i.name for i in m.graph.initializer}
    os.makedirs(out, exist_ok=True)
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else (batch if k == 0 else 1)
                for k, d in enumerate(vi.type.tensor_type.shape.dim)]
        x = rng.standard_normal(dims).astype(np.float32)
        np.save(os.path.join(out, vi.name + ".npy"), x)


if __name__ == "__main__":
    main()
