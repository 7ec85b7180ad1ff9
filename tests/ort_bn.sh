#!/bin/sh
# BatchNormalization, the reductions and the activations exporters write
# as elementwise chains, bit for bit against ONNX Runtime
# (onnxruntime-node, graph optimisation off, one thread): every
# intermediate tensor (tests/models/expose_all.py) of
#   - the toolchain fixtures that keep BatchNormalization
#     (tests/models/make_toolchains.py): the Paddle2ONNX-like CNN in float
#     and QDQ form (BatchNormalization, HardSwish as Add/Clip/Mul/Div,
#     ReduceMean over H and W of an NHWC tensor), resnet18 and
#     mobilenet_v2 in float with BatchNormalization, their QAT exports
#     (Conv -> Div -> BatchNormalization) and resnet18's TensorRT-style
#     fake-quant model;
#   - the small graphs of tests/models/make_bn_fixtures.py: spread
#     BatchNormalization statistics, decomposed HardSwish, HardSigmoid,
#     Swish and GELUs, Tanh, Softsign, Gelu-20 in both forms, and
#     ReduceMean/ReduceSum over every shape of axes ONNX Runtime's
#     reduction kernels tell apart;
# compared with `qreport run --dump-all`, floats and integers identical.
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-onnx/numpy are missing; the toolchain models are left out
# without python3-torch/torchvision and under the sanitizers
# (QR_SANITIZE). They are made once into $QR_MODELS/toolchains, as
# tests/toolchains.sh makes them.
set -u
: "${top_srcdir:?}" "${top_builddir:?}" "${QREPORT:?}"

. "$top_srcdir/tests/ort_lib.sh"
ort_ready
# the toolchain models need torch to be made, and take most of the
# sanitizer stage instrumented; the small graphs take the same paths
toolchains=1
[ -z "${QR_SANITIZE:-}" ] || toolchains=0
$PY -c "import torch, torchvision" 2>/dev/null || toolchains=0

gen="$top_srcdir/tests/models/make_toolchains.py"
MODELS="${QR_MODELS:-$top_builddir/tests/models-cache}/toolchains"
version=$(sed -n 's/^VERSION = \([0-9]*\).*/\1/p' "$gen")
current() {
	grep -q "^ \"version\": $version,\$" "$MODELS/manifest.json" 2>/dev/null
}
if [ $toolchains -eq 1 ] && ! current; then
	# made aside and moved in, unless a concurrent run (this test's or
	# tests/toolchains.sh's) was quicker
	mkdir -p "$(dirname "$MODELS")"
	tmp=$(mktemp -d "$MODELS.new-XXXXXX")
	$PY "$gen" "$tmp" >"$tmp.log" 2>&1 || {
		echo "Bail out! making the toolchain models failed: $(tail -3 "$tmp.log")"
		rm -rf "$tmp" "$tmp.log"
		exit 1
	}
	if ! current; then
		rm -rf "$MODELS"
		mv -T "$tmp" "$MODELS" 2>/dev/null
	fi
	rm -rf "$tmp" "$tmp.log"
fi

work=$(mktemp -d /tmp/qr-bn-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
$PY "$top_srcdir/tests/models/make_bn_fixtures.py" "$work/fx" ||
	{ echo "Bail out! making the fixtures failed"; exit 1; }
n=0
fail=0

# check MODEL LABEL INPUT SEED: every tensor of MODEL, run by qreport and
# by ONNX Runtime on one seeded input for graph input INPUT, identical.
check() {
	d="$work/$2"
	mkdir -p "$d/in" "$d/qr"
	n=$((n + 1))
	if ! $PY "$top_srcdir/tests/models/expose_all.py" "$1" "$d/all.onnx" ||
		! $PY "$top_srcdir/tests/models/make_input.py" "$1" "$d/in" 1 "$4"
	then
		echo "not ok $n - $2: preparing $1 failed"
		fail=$((fail + 1))
		return
	fi
	if ! "$QREPORT" run "$d/all.onnx" --input "$3=$d/in/$3.npy" \
		-o "$d/qr" --dump-all >"$d/run.log" 2>&1; then
		echo "not ok $n - $2: qreport run failed: $(head -c 300 "$d/run.log")"
		fail=$((fail + 1))
		return
	fi
	(cd "$top_srcdir/tests/ort" && node crosscheck.js "$d/all.onnx" \
		"$d/in" "$d/qr" --float-tol 0 --int-max-diff 0 \
		--int-max-frac 0) >"$d/cmp.log" 2>&1
	if [ $? -eq 0 ]; then
		echo "ok $n - $2 matches ONNX Runtime bit for bit$(sed -n '$s/^#[^:]*:/:/p' "$d/cmp.log")"
	else
		sed -n '$p' "$d/cmp.log"
		grep '^not ok' "$d/cmp.log" | head -5 | sed 's/^/# /'
		echo "not ok $n - $2 differs from ONNX Runtime"
		fail=$((fail + 1))
	fi
}

if [ $toolchains -eq 1 ]; then
	for m in paddle_float paddle_qdq; do
		check "$MODELS/$m.onnx" "$m" x 7
	done
	for m in resnet18_float_bn mobilenet_v2_float_bn resnet18_qat \
		mobilenet_v2_qat resnet18_trt_bn; do
		check "$MODELS/$m.onnx" "$m" input 7
	done
else
	echo "# the toolchain models are left out (no python3-torch, or instrumented)"
fi
for f in bn decomp reduce; do
	for seed in 1 2; do
		check "$work/fx/$f.onnx" "$f-$seed" x "$seed"
	done
done
echo "1..$n"
[ $fail -eq 0 ]
