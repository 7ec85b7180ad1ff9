#!/bin/sh
# The layer norms bit for bit against ONNX Runtime (onnxruntime-node,
# graph optimisation off, one thread): LayerNormalization (with and
# without bias, over one dim and two, scale and bias whole and
# broadcast), SimplifiedLayerNormalization and
# com.microsoft SkipLayerNormalization and SkipSimplifiedLayerNormalization
# (with and without beta and bias, a skip per batch row and one shared),
# each on rows of 1 to 2049 values (every length where ONNX Runtime's
# order changes, tests/models/make_norm_fixtures.py) of spread scales,
# offsets and cancelling values. Every output (y, mean, inverse standard
# deviation, the skip sum) of `qreport run` must equal ONNX Runtime's,
# every bit.
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-onnx/numpy are missing.
set -u
: "${top_srcdir:?}" "${top_builddir:?}" "${QREPORT:?}"

. "$top_srcdir/tests/ort_lib.sh"
. "$top_srcdir/tests/ort_onenode.sh"
ort_ready
ort_onenode "$top_srcdir/tests/models/make_norm_fixtures.py"
