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
. "$top_srcdir/tests/ort_lib.sh"
ort_ready

fx="$top_srcdir/tests/data/activations"
work=$(mktemp -d /tmp/qr-dyn-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
echo "1..9"
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
$PY "$top_srcdir/tests/models/expose_all.py" "$fx/dyn_float.onnx" "$work/f.onnx" ||
	{ echo "Bail out! preparing the ONNX Runtime models failed"; exit 1; }
ort_agree "$work/f.onnx" "$fx/dyn_quant.onnx" "$work/rep/report.json" \
	"$work/samples" "$work"
case $? in
0) echo "ok 2 - dynamic: cosine and SQNR, cumulative and local, within 1e-4 of ONNX Runtime" ;;
2) echo "Bail out! preparing the ONNX Runtime models failed"; exit 1 ;;
*) echo "not ok 2 - dynamic: differs from ONNX Runtime"
	sed 's/^/# /' "$work/ort" ;;
esac
tail -1 "$work/ort"
if grep -q "^ok 2 - c <-> c" "$work/ort" && grep -q "^ok 5 - m <-> m" "$work/ort"; then
	echo "ok 3 - dynamic: the conv (bias added after ConvInteger) and the MatMul were both compared"
else
	echo "not ok 3 - dynamic: the conv or the MatMul pair is missing from ONNX Runtime's check"
fi

# The same quantization after ONNX Runtime's optimiser fused it
# (tests/data/make_ort_fused.js): dyn_fused's MatMul and bias are one
# com.microsoft DynamicQuantizeMatMul; dyn2's two MatMuls share one
# DynamicQuantizeLinear (dyn2_quant, as quantize_dynamic writes it), which
# the optimiser turns into two MatMulIntegerToFloat (dyn2_fused). Each
# report pairs the layers' float outputs by name, and its numbers equal
# ONNX Runtime's. n: the TAP number of the first of two lines.
fused() {
	fm=$1 qm=$2 want=$3 n=$4
	samples=$work/samples
	[ "$fm" = dyn2_float ] && samples=$work/samples2
	rm -rf "$work/rep2"
	"$QREPORT" --float "$fx/$fm.onnx" --quant "$fx/$qm.onnx" \
		--data "$samples" -o "$work/rep2" --quiet 2>"$work/err2"
	rc=$?
	got=$($PY -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join(p["tensor"] + "=" + p["quant_tensor"] + ":" + p["match"]
               for p in r["activations"]))' "$work/rep2/report.json" 2>&1)
	if [ $rc -eq 0 ] && [ "$got" = "$want" ]; then
		echo "ok $n - $qm: every layer's float output paired by name ($want)"
	else
		echo "not ok $n - $qm: exit $rc, pairs '$got' $(head -c 300 "$work/err2")"
	fi
	n=$((n + 1))
	d=$work/$qm
	mkdir -p "$d"
	if $PY "$top_srcdir/tests/models/expose_all.py" "$fx/$fm.onnx" \
		"$d/f.onnx" &&
	   ort_agree "$d/f.onnx" "$fx/$qm.onnx" "$work/rep2/report.json" \
		"$samples" "$d"; then
		echo "ok $n - $qm: cosine and SQNR, cumulative and local, within 1e-4 of ONNX Runtime"
	else
		echo "not ok $n - $qm: differs from ONNX Runtime (or could not be run there)"
		sed 's/^/# /' "$d/ort" 2>/dev/null
	fi
	tail -1 "$d/ort" 2>/dev/null
}
$PY -c "
import numpy as np, os, sys
rng = np.random.RandomState(6)
os.makedirs(sys.argv[1])
for i in range(6):
    np.save(os.path.join(sys.argv[1], 's%d.npy' % i),
            rng.randn(1, 4, 16).astype(np.float32))
" "$work/samples2" || { echo "Bail out! could not write samples"; exit 1; }
fused dyn_float dyn_fused "x=x:name c=c:name r=r:name out=out:name" 4
fused dyn2_float dyn2_quant \
	"x=x:name ma=ma:name a=a:name b=b:name out=out:name" 6
fused dyn2_float dyn2_fused "x=x:name a=a:name b=b:name out=out:name" 8
