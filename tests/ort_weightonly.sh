#!/bin/sh
# ONNX Runtime's weight-only blockwise quantization (its
# MatMul4BitsQuantizer / MatMulNBitsQuantizer, block_size 32) through the
# whole report, one candidate at a time against wo_float.onnx:
#   wo_nbits      com.microsoft MatMulNBits, 4-bit, asymmetric (packed
#                 uint8 zero points)
#   wo_nbits_sym  the same without zero points (ORT's default 8),
#                 symmetric with negative scales as ORT's quantizer writes
#   wo_dq4        the QDQ form: DequantizeLinear of UINT4 [K,N] weights
#                 (opset 21, axis 0, block_size 32) -> MatMul
#   wo_nbits8     MatMulNBits bits 8 (one code and zero point a byte)
#   wo_nbits_fzp  MatMulNBits 4-bit with float zero points (non-integer,
#                 shaped like the scales: w = (q - zp) * s)
#   wo_nbits_al4  wo_nbits with accuracy_level 4: A quantized to int8 per
#                 block inside the op, as ONNX Runtime's CPU kernel does
#                 (in float, its outputs differ by ~5e-3 of themselves)
# Per candidate: qreport exits 0 and pairs each MatMul's output (and
# logits) with the candidate's same-named tensor; report.json's
# quant_weights[] has the three weights with their bits, granularity
# "per-block", block_size 32 and the SQNR of the dequantized weight
# within 0.01 dB of tests/data/make_weightonly_fixtures.py's; and every
# pair's cosine and SQNR, cumulative and local, equal those
# onnxruntime-node computes (bench/activations_ort.js, bound 1e-4 as in
# tests/ort_activations.sh). ONNX Runtime runs with graph optimisation
# off: at its default level it fuses wo_dq4's DequantizeLinear + MatMul
# into a MatMulNBits of accuracy_level 4 (int8 activations), a few 1e-3
# (relative) away from the float math.
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-onnx/numpy are missing.
set -u
: "${top_srcdir:?}" "${QREPORT:?}"
. "$top_srcdir/tests/ort_lib.sh"
ort_ready

fx="$top_srcdir/tests/data/activations"
work=$(mktemp -d /tmp/qr-wo-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM

# bits and the SQNR (dB) of onnx::MatMul_28, _29 and _30 dequantized, as
# tests/data/make_weightonly_fixtures.py prints them
want() {
	case $1 in
	wo_nbits | wo_dq4 | wo_nbits_al4) echo "4 24.189028 23.970472 24.305995" ;;
	wo_nbits_sym) echo "4 23.916006 23.774075 23.782931" ;;
	wo_nbits8) echo "8 48.952181 48.654079 49.021845" ;;
	wo_nbits_fzp) echo "4 24.529831 24.350943 24.255150" ;;
	esac
}
cands="wo_nbits wo_nbits_sym wo_dq4 wo_nbits8 wo_nbits_fzp wo_nbits_al4"

echo "1..18"
$PY -c "
import numpy as np, os, sys
rng = np.random.RandomState(5)
os.makedirs(sys.argv[1])
for i in range(6):
    np.save(os.path.join(sys.argv[1], 's%d.npy' % i),
            rng.randn(1, 16, 72).astype(np.float32))
" "$work/samples" || { echo "Bail out! could not write samples"; exit 1; }
$PY "$top_srcdir/tests/models/expose_all.py" "$fx/wo_float.onnx" "$work/f.onnx" ||
	{ echo "Bail out! preparing the float model for ONNX Runtime failed"; exit 1; }

n=0
for c in $cands; do
	d="$work/$c"
	mkdir "$d"
	"$QREPORT" --float "$fx/wo_float.onnx" --quant "$fx/$c.onnx" \
		--data "$work/samples" -o "$d/rep" --quiet 2>"$d/err"
	rc=$?
	# shellcheck disable=SC2046
	$PY - "$d/rep/report.json" $(want "$c") >"$d/check" 2>&1 <<'PYEOF'
import json, sys
path, bits = sys.argv[1], int(sys.argv[2])
sqnr = [float(v) for v in sys.argv[3:6]]
try:
    r = json.load(open(path))
except (OSError, ValueError) as e:
    print("pairs no report.json (%s)" % e)
    print("weights no report.json")
    sys.exit(0)
have = {(p["tensor"], p["quant_tensor"], p["match"])
        for p in r.get("activations", []) if p.get("quant") == 0}
names = ["/fc1/MatMul_output_0", "/fc2/MatMul_output_0",
         "/head/MatMul_output_0", "logits"]
miss = [t for t in names if (t, t, "name") not in have]
print("pairs ok" if not miss else "pairs missing " + " ".join(miss) +
      " among " + ";".join(sorted(" ".join(p) for p in have)))
qw = {w.get("weight"): w for w in r.get("quant_weights", [])
      if w.get("quant") == 0}
bad = []
for wn, s in zip(["onnx::MatMul_28", "onnx::MatMul_29", "onnx::MatMul_30"],
                 sqnr):
    w = qw.get(wn)
    if w is None:
        bad.append("%s absent" % wn)
        continue
    got = (w.get("bits"), w.get("granularity"), w.get("block_size"),
           w.get("sqnr_db"))
    if (got[:3] != (bits, "per-block", 32) or
            not isinstance(got[3], (int, float)) or abs(got[3] - s) > 0.01):
        bad.append("%s bits %s granularity %s block_size %s sqnr_db %s "
                   "(want %d per-block 32 %.6f)" % ((wn,) + got + (bits, s)))
print("weights ok" if not bad and len(qw) == 3 else
      "weights %d entries: %s" % (len(qw), "; ".join(bad)))
PYEOF
	n=$((n + 1))
	if [ $rc -eq 0 ] && grep -q "^pairs ok$" "$d/check"; then
		echo "ok $n - $c: every MatMul's output and logits matched by name"
	else
		echo "not ok $n - $c: exit $rc, $(grep '^pairs' "$d/check" | head -c 600) $(head -c 300 "$d/err")"
	fi
	n=$((n + 1))
	if grep -q "^weights ok$" "$d/check"; then
		echo "ok $n - $c: 3 weights, $(want "$c" | cut -d' ' -f1)-bit per-block (32), weight SQNR as the generator's"
	else
		echo "not ok $n - $c: $(sed -n 's/^weights //p' "$d/check" | head -c 800)"
	fi
	n=$((n + 1))
	if ort_agree "$work/f.onnx" "$fx/$c.onnx" "$d/rep/report.json" \
		"$work/samples" "$d" &&
		grep -q "^ok [0-9]* - /fc1/MatMul_output_0 <-> /fc1/MatMul_output_0 " "$d/ort" &&
		grep -q "^ok [0-9]* - /fc2/MatMul_output_0 <-> /fc2/MatMul_output_0 " "$d/ort" &&
		grep -q "^ok [0-9]* - /head/MatMul_output_0 <-> /head/MatMul_output_0 " "$d/ort"; then
		echo "ok $n - $c: cosine and SQNR, cumulative and local, within 1e-4 of ONNX Runtime (the 3 MatMuls among them)"
	else
		echo "not ok $n - $c: differs from ONNX Runtime (or could not be run there)"
		cat "$d/cut" "$d/ort" 2>/dev/null | sed 's/^/# /'
	fi
	if [ -f "$d/ort" ]; then
		sed -n "\$s/^# /# $c: /p" "$d/ort"
	fi
done
