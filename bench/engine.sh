#!/bin/sh
# engine.sh: time qreport's engine against ONNX Runtime side by side.
#
#   bench/engine.sh [QREPORT] [MODELS_DIR]
#
# Models: torchvision's resnet18 and mobilenet_v2 (random weights) at
# 224x224, batch 1, in float, QDQ and QOperator form, made once by
# tests/models/make_torchvision.py into MODELS_DIR (default: $QR_MODELS,
# else /tmp/tvmodels); MODELS names others it makes the same way (any
# torchvision classifier with a 224x224 input). Each row runs the
# engines on the same input in the same minute, 1 and 2 threads:
#   qreport:  qreport run MODEL --threads T --repeat RUNS (2 warm-up runs,
#             then the median of RUNS)
#   ORT:      bench/ort_time.js (onnxruntime-node, graph optimisation on,
#             which fuses QDQ pairs into QLinearConv; 3 warm-up runs,
#             median of RUNS)
#   ORT lit.: the same with graph optimisation off: the graph run
#             literally, as qreport runs it and as the report compares
# ratio = qreport ms / ORT ms (below 1: qreport is faster), and the same
# against the literal run. Environment: RUNS (default 20), THREADS
# (default "1 2"), MODELS (default "resnet18 mobilenet_v2"), VARIANTS
# (default "float qdq qop").
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
QREPORT=${1:-${QREPORT:-$top/qreport}}
MODELS_DIR=${2:-${QR_MODELS:-/tmp/tvmodels}}
RUNS=${RUNS:-20}
THREADS=${THREADS:-"1 2"}
MODELS=${MODELS:-"resnet18 mobilenet_v2"}
VARIANTS=${VARIANTS:-"float qdq qop"}
PY=/usr/bin/python3

die() { echo "engine.sh: $*" >&2; exit 1; }
[ -x "$QREPORT" ] || die "no qreport binary at '$QREPORT' (pass it as \$1)"
command -v node >/dev/null 2>&1 || die "node is not installed"
[ -d "$top/tests/ort/node_modules/onnxruntime-node" ] ||
	die "onnxruntime-node missing: cd tests/ort && npm ci --ignore-scripts"
missing=
for m in $MODELS; do
	[ -f "$MODELS_DIR/${m}_qop.onnx" ] || missing="$missing${missing:+,}$m"
done
if [ -n "$missing" ]; then
	mkdir -p "$MODELS_DIR"
	echo "making $missing in $MODELS_DIR ..." >&2
	$PY "$top/tests/models/make_torchvision.py" "$MODELS_DIR" \
		--models "$missing" --no-verify >"$MODELS_DIR/make.log" 2>&1 ||
		die "making models failed: see $MODELS_DIR/make.log"
fi
work=$(mktemp -d /tmp/qr-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
set -- $MODELS
$PY "$top/tests/models/make_input.py" "$MODELS_DIR/$1.onnx" "$work/in"
input=$(ls "$work"/in/*.npy | head -n 1)

printf '%-18s %-8s %7s %12s %10s %7s %12s %7s\n' model variant threads \
	"qreport ms" "ORT ms" ratio "ORT lit. ms" ratio
for m in $MODELS; do
	for v in $VARIANTS; do
		case $v in
		float) f="$MODELS_DIR/$m.onnx" ;;
		*) f="$MODELS_DIR/${m}_$v.onnx" ;;
		esac
		[ -f "$f" ] || die "missing $f"
		for t in $THREADS; do
			q=$("$QREPORT" run "$f" --input "$input" -o "$work/out" \
				--threads "$t" --repeat "$RUNS" 2>&1 >/dev/null |
				tail -n 1 | cut -d' ' -f1)
			o=$(node "$here/ort_time.js" "$f" "$input" "$t" "$RUNS" |
				cut -d' ' -f1)
			l=$(node "$here/ort_time.js" "$f" "$input" "$t" "$RUNS" \
				disabled | cut -d' ' -f1)
			r=$(awk -v a="$q" -v b="$o" 'BEGIN { printf "%.2f", a / b }')
			rl=$(awk -v a="$q" -v b="$l" 'BEGIN { printf "%.2f", a / b }')
			printf '%-18s %-8s %7s %12s %10s %7s %12s %7s\n' "$m" \
				"$v" "$t" "$q" "$o" "$r" "$l" "$rl"
		done
	done
done
