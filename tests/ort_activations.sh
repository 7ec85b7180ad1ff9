#!/bin/sh
# Per-layer float<->quant cosine and SQNR from report.json against the
# same numbers computed with ONNX Runtime (onnxruntime-node, graph
# optimisation off, every intermediate tensor an output), on resnet18 and
# mobilenet_v2 in QDQ, QOperator and renamed-tensor form, with 4 samples:
# bench/agreement.sh with N=4 (N=20 gives bench/RESULTS.md's table).
# The local error is checked too: ONNX Runtime runs each candidate with
# the tensors qreport's local run overwrites cut into inputs fed with the
# float model's values (tests/models/local_cut.py).
#
# Bound per pair and metric: |qreport - ORT| <= 1e-4 * max(1, |ORT|), for
# every candidate. QDQ candidates run float convs between DQ and Q; since
# qreport's float and cumulative runs sum floats in ONNX Runtime's order
# (kernels/sgemm.c) their tensors are ORT's bits, and the measured worst
# difference is about 4e-13 (tests/ort_crosscheck.sh checks the tensors
# themselves). The local runs' 3x3 convs take Winograd (qreport --exact
# turns it off): a value at a rounding tie then lands one step away, and
# resnet18 QDQ's local SQNR differs by up to about 3e-4 dB (6e-6 of it).
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-torch/torchvision/onnx are missing. Models are made once into
# $QR_MODELS (default: tests/models-cache in the build tree, shared with
# tests/ort_crosscheck.sh).
set -u
: "${top_srcdir:?}" "${top_builddir:?}" "${QREPORT:?}"
PY=/usr/bin/python3

skip() { echo "1..0 # SKIP $*"; exit 0; }
command -v node >/dev/null 2>&1 || skip "node is not installed"
[ -d "$top_srcdir/tests/ort/node_modules/onnxruntime-node" ] ||
	skip "onnxruntime-node missing: cd tests/ort && npm ci --ignore-scripts"
$PY -c "import torch, torchvision, onnx, numpy" 2>/dev/null ||
	skip "Debian's python3-torch, python3-torchvision and python3-onnx are needed to make the models"

N=${N:-4} TOL=${TOL:-1e-4} QDQ_TOL=${QDQ_TOL:-1e-4} \
	exec "$top_srcdir/bench/agreement.sh" "$QREPORT" \
	"${QR_MODELS:-$top_builddir/tests/models-cache}"
