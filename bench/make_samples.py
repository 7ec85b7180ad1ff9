#!/usr/bin/python3
"""Write N seeded random-normal samples for a one-input model, one .npy
file per sample, as a dataset folder for `qreport --data DIR`.

    /usr/bin/python3 bench/make_samples.py MODEL.onnx OUT_DIR N [SEED]

Files are OUT_DIR/sample_000.npy ... (float32, the input's declared
shape; a dynamic dim becomes 1). Sample i uses seed SEED + i, so a
folder of 4 is the first 4 of a folder of 20.
"""
import os
import sys

import numpy as np
import onnx


def main():
    m = onnx.load(sys.argv[1], load_external_data=False)
    out, n = sys.argv[2], int(sys.argv[3])
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    inits = {i.name for i in m.graph.initializer}
    ins = [vi for vi in m.graph.input if vi.name not in inits]
    if len(ins) != 1:
        sys.exit("make_samples.py: %s has %d inputs, expected 1"
                 % (sys.argv[1], len(ins)))
    dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1
            for d in ins[0].type.tensor_type.shape.dim]
    os.makedirs(out, exist_ok=True)
    for i in range(n):
        x = np.random.default_rng(seed + i).standard_normal(dims)
        np.save(os.path.join(out, "sample_%03d.npy" % i), x.astype(np.float32))


if __name__ == "__main__":
    main()
