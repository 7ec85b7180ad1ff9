#!/bin/sh
# Cross-check qreport's engine against ONNX Runtime (onnxruntime-node,
# graph optimisation off) on torchvision's resnet18 and mobilenet_v2
# (random weights) and their QDQ and QOperator versions, layer by layer:
# every intermediate tensor is made an output (tests/models/expose_all.py)
# and compared with `qreport run --dump-all`.
#
# Targets:
# - float models: relative L2 <= 1e-5 on the model's output, <= 1e-4 on
#   intermediate tensors (float32 sums in a different order drift by about
#   1e-5 over 50 layers);
# - QOperator models: every int8/uint8 tensor identical, floats <= 1e-5;
# - QDQ models run float convs between DQ and Q, so a conv result within
#   float rounding of a .5 tie quantizes one step apart in the two engines
#   (2 of 802,816 values after resnet18's first conv) and the step then
#   spreads and grows through later layers (in resnet18, 30% of layer4's
#   values end up a few steps apart). Bounds: the model's output within
#   relative L2 5e-2, every float tensor within 0.1; integer differences
#   are printed, not bounded. The exact-integer target is the QOperator
#   one above.
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

if [ ! -f "$MODELS/mobilenet_v2_qop.onnx" ]; then
	mkdir -p "$MODELS"
	$PY "$top_srcdir/tests/models/make_torchvision.py" "$MODELS" \
		--no-verify >"$MODELS/make.log" 2>&1 ||
		{ echo "Bail out! making models failed: see $MODELS/make.log"; exit 1; }
fi

work=$(mktemp -d /tmp/qr-ort-XXXXXX)
trap 'rm -rf "$work"' EXIT
n=0
fail=0
for m in resnet18 mobilenet_v2; do
	for v in "" _qdq _qop; do
		case $v in
		"") args="--float-tol 1e-4 --n-final 1 --final-tol 1e-5" ;;
		_qdq) args="--float-tol 0.1 --n-final 1 --final-tol 5e-2 --int-max-diff 255 --int-max-frac 1" ;;
		_qop) args="--float-tol 1e-5 --int-max-diff 0 --int-max-frac 0" ;;
		esac
		name="$m$v"
		d="$work/$name"
		mkdir -p "$d/in" "$d/qr"
		$PY "$top_srcdir/tests/models/expose_all.py" "$MODELS/$name.onnx" \
			"$d/all.onnx"
		$PY "$top_srcdir/tests/models/make_input.py" "$MODELS/$name.onnx" \
			"$d/in" 1 7
		n=$((n + 1))
		if ! "$QREPORT" run "$d/all.onnx" --input "input=$d/in/input.npy" \
			-o "$d/qr" --dump-all >"$d/run.log" 2>&1; then
			echo "not ok $n - $name: qreport run failed: $(head -c 300 "$d/run.log")"
			fail=$((fail + 1))
			continue
		fi
		(cd "$ORT" && node crosscheck.js "$d/all.onnx" "$d/in" "$d/qr" \
			$args) >"$d/cmp.log" 2>&1
		rc=$?
		sed -n '$p' "$d/cmp.log"
		if [ $rc -eq 0 ]; then
			echo "ok $n - $name matches ONNX Runtime ($args)"
		else
			grep '^not ok' "$d/cmp.log" | head -5 | sed 's/^/# /'
			echo "not ok $n - $name differs from ONNX Runtime ($args)"
			fail=$((fail + 1))
		fi
	done
done
echo "1..$n"
[ $fail -eq 0 ]
