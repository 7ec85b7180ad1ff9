#!/usr/bin/python3
"""Check that a report pairs each output of the float model's ops of some
types with the candidate tensor of the same name, made by the op it
should be (candidate 0 of report.json).

    /usr/bin/python3 tests/models/pairs_by_name.py FLOAT.onnx QUANT.onnx \\
        report.json FLOAT_OP=QUANT_OP ...

e.g. Attention=QAttention MatMul=Mul (quantize_dynamic's MatMulInteger ->
Cast -> Mul writes the MatMul's output name). Prints "ok" or "NOT OK" and
what was found for each output; exits 1 when any is not paired so.
"""
import json
import sys

import onnx


def main():
    f, q = (onnx.load(p) for p in sys.argv[1:3])
    want = dict(a.split("=", 1) for a in sys.argv[4:])
    prod = {o: n.op_type for n in q.graph.node for o in n.output}
    pairs = {p["tensor"]: p for p in json.load(open(sys.argv[3]))["activations"]
             if p["quant"] == 0}
    bad = 0
    for n in f.graph.node:
        if n.op_type not in want:
            continue
        for t in (o for o in n.output if o):
            p = pairs.get(t)
            got = "none" if p is None else "%s (%s) by %s" % (
                p["quant_tensor"], prod.get(p["quant_tensor"], "?"), p["match"])
            good = (p is not None and p["quant_tensor"] == t and
                    p["match"] == "name" and prod.get(t) == want[n.op_type])
            bad += not good
            print("%s %s %s: %s" % ("ok" if good else "NOT OK", n.op_type, t, got))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
