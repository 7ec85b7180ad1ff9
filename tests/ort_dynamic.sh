#!/bin/sh
# ONNX Runtime's dynamic quantization (DynamicQuantizeLinear,
# ConvInteger/MatMulInteger, a Cast and a Mul by the scales, the conv's
# bias added after) through the whole report: every pair is matched by
# name to the layer's float output (not to the integer accumulator or
# the uint8 input), and its cosine and SQNR, cumulative and local, equal
# those onnxruntime-node computes (bench/activations_ort.js, bound 1e-4
# as in tests/ort_activations.sh). Fixture:
# tests/data/activations/dyn_{float,quant}.onnx, laid out as
# quantize_dynamic writes it (tests/data/make_activation_fixtures.py).
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-onnx/numpy are missing.
set -u
: "${top_srcdir:?}" "${QREPORT:?}"
PY=/usr/bin/python3

skip() { echo "1..0 # SKIP $*"; exit 0; }
command -v node >/dev/null 2>&1 || skip "node is not installed"
[ -d "$top_srcdir/tests/ort/node_modules/onnxruntime-node" ] ||
	skip "onnxruntime-node missing: cd tests/ort && npm ci --ignore-scripts"
$PY -c "import onnx, numpy" 2>/dev/null ||
	skip "Debian's python3-onnx and python3-numpy are needed"

fx="$top_srcdir/tests/data/activations"
work=$(mktemp -d /tmp/qr-dyn-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
echo "1..3"
$PY -c "
import numpy as np, os, sys
rng = np.random.RandomState(5)
os.makedirs(sys.argv[1])
for i in range(6):
    np.save(os.path.join(sys.argv[1], 's%d.npy' % i),
            rng.randn(1, 3, 8, 8).astype(np.float32))
" "$work/samples" || { echo "Bail out! could not write samples"; exit 1; }
"$QREPORT" --float "$fx/dyn_float.onnx" --quant "$fx/dyn_quant.onnx" \
	--data "$work/samples" -o "$work/rep" --quiet 2>"$work/err"
rc=$?
$PY - "$work/rep/report.json" >"$work/pairs" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
for p in r["activations"]:
    print(p["tensor"], p["quant_tensor"], p["match"])
PYEOF
want="x x name
c c name
r r name
f f name
m m name
out out name"
if [ $rc -eq 0 ] && [ "$(cat "$work/pairs")" = "$want" ]; then
	echo "ok 1 - dynamic: every layer's float output matched by name (x c r f m out)"
else
	echo "not ok 1 - dynamic: pairs (exit $rc): $(tr '\n' ';' <"$work/pairs") $(head -c 300 "$work/err")"
fi
$PY "$top_srcdir/tests/models/expose_all.py" "$fx/dyn_float.onnx" "$work/f.onnx" &&
$PY "$top_srcdir/tests/models/expose_all.py" "$fx/dyn_quant.onnx" "$work/q.onnx" &&
$PY "$top_srcdir/tests/models/local_cut.py" "$fx/dyn_quant.onnx" \
	"$work/rep/report.json" 0 "$work/l.onnx" "$work/l.json" ||
	{ echo "Bail out! preparing the ONNX Runtime models failed"; exit 1; }
if node "$top_srcdir/bench/activations_ort.js" "$work/rep/report.json" \
	"$work/f.onnx" "$work/q.onnx" "$work/samples" \
	--local "$work/l.onnx" "$work/l.json" >"$work/ort" 2>&1; then
	echo "ok 2 - dynamic: cosine and SQNR, cumulative and local, within 1e-4 of ONNX Runtime"
else
	echo "not ok 2 - dynamic: differs from ONNX Runtime"
	sed 's/^/# /' "$work/ort"
fi
tail -1 "$work/ort"
if grep -q "^ok 2 - c <-> c" "$work/ort" && grep -q "^ok 5 - m <-> m" "$work/ort"; then
	echo "ok 3 - dynamic: the conv (bias added after ConvInteger) and the MatMul were both compared"
else
	echo "not ok 3 - dynamic: the conv or the MatMul pair is missing from ONNX Runtime's check"
fi
