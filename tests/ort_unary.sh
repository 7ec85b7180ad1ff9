#!/bin/sh
# Elu, Selu, Celu, Softplus, Log, Sin and Cos bit for bit against ONNX
# Runtime (onnxruntime-node, graph optimisation off, one thread): each op
# on inputs of 1 to 9 values (every tail of Eigen's packets of 4) and of
# 4099 values of spread magnitudes and edge values (zeros, denormals,
# exp's limits, sin and cos past their huge-argument thresholds,
# infinities, NaN; tests/models/make_unary_fixtures.py). `qreport run`'s
# output must equal ONNX Runtime's, every bit (NaN where it has NaN).
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-onnx/numpy are missing.
set -u
: "${top_srcdir:?}" "${top_builddir:?}" "${QREPORT:?}"

. "$top_srcdir/tests/ort_lib.sh"
. "$top_srcdir/tests/ort_onenode.sh"
ort_ready
ort_onenode "$top_srcdir/tests/models/make_unary_fixtures.py"
