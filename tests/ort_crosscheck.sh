#!/bin/sh
# Cross-check qreport's engine against ONNX Runtime (onnxruntime-node,
# graph optimisation off) on torchvision's resnet18 and mobilenet_v2
# (random weights) and their QDQ, QOperator and A16W8 QDQ (com.microsoft
# Q/DQ, uint16 activations) versions, layer by layer:
# every intermediate tensor is made an output (tests/models/expose_all.py)
# and compared with `qreport run --dump-all`.
#
# Target: every tensor identical, float and integer, in all eight models,
# and in the single-op models of tests/data/ort-ops/ (ops the networks
# above do not use, whose last bits other architectures showed:
# QLinearSoftmax, QLinearMul, AveragePool after DequantizeLinear, float Softmax,
# ReduceMean/ReduceSum over trailing axes, NonMaxSuppression, TopK with
# ties, Pad in its three modes, Pow, RoiAlign,
# the 3-D Conv, MaxPool and AveragePool of video models, If, and Exp,
# Sigmoid, HardSigmoid, HardSwish, Erf and the erf GELUs on NaN,
# infinities and their clamp points), and
# torchvision's ssdlite320_mobilenet_v3_large, whose NMS runs in an If.
# qreport sums floats in the order ONNX Runtime's MLAS does on x86-64
# (kernels/sgemm.c: GEMM slices, the M = 1 kernels, pre-packed weights,
# depthwise taps, the global average pool), so even a QDQ model, whose
# float convs feed QuantizeLinear and would turn any last-bit difference
# into a whole quantization step, matches bit for bit. This holds for the
# pinned onnxruntime-node (tests/ort/package-lock.json) on CPUs with FMA;
# a different ORT release or a CPU where MLAS picks other kernels may add
# in another order, and this test is then the place that says so.
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-torch/torchvision/onnx are missing. Models are made once into
# $QR_MODELS (default: tests/models-cache in the build tree).
set -u
: "${top_srcdir:?}" "${top_builddir:?}" "${QREPORT:?}"
PY=/usr/bin/python3
ORT="$top_srcdir/tests/ort"
MODELS="${QR_MODELS:-$top_builddir/tests/models-cache}"

skip() { echo "1..0 # SKIP $*"; exit 0; }
command -v node >/dev/null 2>&1 || skip "node is not installed"
[ -d "$ORT/node_modules/onnxruntime-node" ] ||
	skip "onnxruntime-node missing: cd tests/ort && npm ci --ignore-scripts"
$PY -c "import torch, torchvision, onnx" 2>/dev/null ||
	skip "Debian's python3-torch, python3-torchvision and python3-onnx are needed to make the models"

if [ ! -f "$MODELS/mobilenet_v2_qdq16.onnx" ]; then
	mkdir -p "$MODELS"
	$PY "$top_srcdir/tests/models/make_torchvision.py" "$MODELS" \
		--no-verify >"$MODELS/make.log" 2>&1 ||
		{ echo "Bail out! making models failed: see $MODELS/make.log"; exit 1; }
fi

work=$(mktemp -d /tmp/qr-ort-XXXXXX)
trap 'rm -rf "$work"' EXIT
n=0
fail=0
args="--float-tol 0 --int-max-diff 0 --int-max-frac 0"

# check MODEL DIR LABEL INPUT SEED: every tensor of MODEL, run by qreport
# and by ORT on one seeded input for graph input INPUT, compared exactly.
check() {
	d="$work/$2"
	mkdir -p "$d/in" "$d/qr"
	$PY "$top_srcdir/tests/models/expose_all.py" "$1" "$d/all.onnx"
	$PY "$top_srcdir/tests/models/make_input.py" "$1" "$d/in" 1 "$5"
	n=$((n + 1))
	if ! "$QREPORT" run "$d/all.onnx" --input "$4=$d/in/$4.npy" \
		-o "$d/qr" --dump-all >"$d/run.log" 2>&1; then
		echo "not ok $n - $3: qreport run failed: $(head -c 300 "$d/run.log")"
		fail=$((fail + 1))
		return
	fi
	(cd "$ORT" && node crosscheck.js "$d/all.onnx" "$d/in" "$d/qr" \
		$args) >"$d/cmp.log" 2>&1
	rc=$?
	sed -n '$p' "$d/cmp.log"
	if [ $rc -eq 0 ]; then
		echo "ok $n - $3 matches ONNX Runtime ($args)"
	else
		grep '^not ok' "$d/cmp.log" | head -5 | sed 's/^/# /'
		echo "not ok $n - $3 differs from ONNX Runtime ($args)"
		fail=$((fail + 1))
	fi
}

for m in resnet18 mobilenet_v2; do
	for v in "" _qdq _qop _qdq16; do
		check "$MODELS/$m$v.onnx" "$m$v" "$m$v" input 7
	done
done
# a detector as torchvision exports it (tests/models/make_detector.py):
# its batched NMS sits in an If, HardSwish throughout the backbone
if [ ! -f "$MODELS/ssdlite.onnx" ]; then
	$PY "$top_srcdir/tests/models/make_detector.py" "$MODELS" \
		>"$MODELS/make_detector.log" 2>&1 ||
		{ echo "Bail out! making the detector failed: see $MODELS/make_detector.log"; exit 1; }
fi
check "$MODELS/ssdlite.onnx" ssdlite "ssdlite320_mobilenet_v3_large (If)" image 4
# single-op models (tests/data/make_ort_op_fixtures.py), three inputs each
for f in "$top_srcdir"/tests/data/ort-ops/*.onnx; do
	name=$(basename "$f" .onnx)
	for seed in 1 2 3; do
		check "$f" "op-$name-$seed" "$name (input $seed)" x "$seed"
	done
done
# Ops whose ONNX Runtime kernels sum or approximate in their own way
# (tanh, layer statistics, blocked 4-bit products, fused GEMMs):
# every tensor within a relative L2 error of 1e-6, integers exact. The
# models: ONNX Runtime's own optimised copies of small PyTorch
# transformer blocks (FusedMatMul, com.microsoft Gelu,
# SimplifiedLayerNormalization, SkipLayerNormalization), the hand-made
# rest (opset-20 Gelu, BiasGelu, FastGelu,
# SkipSimplifiedLayerNormalization), its fused dynamic quantization
# (DynamicQuantizeMatMul, MatMulIntegerToFloat) and the weight-only
# candidates (MatMulNBits, blocked uint4 DequantizeLinear), and GridSample
# and cubic Resize in every mode (resample.onnx), and Einsum, which ORT
# turns into matrix products (einsum.onnx).
args="--float-tol 1e-6 --int-max-diff 0 --int-max-frac 0"
for name in tfm_ortopt fz_ortopt msops dyn_fused dyn2_fused wo_nbits \
	wo_nbits_sym wo_nbits8 wo_nbits_fzp wo_nbits_al4 wo_dq4 resample \
	einsum; do
	check "$top_srcdir/tests/data/activations/$name.onnx" "fx-$name" \
		"$name" x 3
done
echo "1..$n"
[ $fail -eq 0 ]
