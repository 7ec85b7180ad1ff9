#!/bin/sh
# What to change, on fixtures whose answer is known by construction
# (tests/data/diag/ from make_diag_fixtures.py, tests/data/sens/ from
# make_sens_fixtures.py): the chain of 8 Gemm+Relu and a last Gemm,
#   chain_bad   QDQ with r4's scale 20 times too large: gemm4 (whose
#               output r4 is) must rank first kept float, and be alone in
#               the fallback plan for output.cosine>=0.999, in full and in
#               quick mode; the plan is verified by a run
#   chain_w2    QDQ with every weight in 2 bits: weights vs activations
#               must name the weights
#   chain_qop   QOperator (com.microsoft QGemm): every layer can be kept
#               float and is measured; its per-tensor weights read per
#               channel (a group what-if) gain
#   res_qdq     residual Adds whose ReLU the QDQ form folded into their
#               QuantizeLinear: their outputs in float (a group what-if)
#               keep the ReLU
#   bn_qdq      Conv+BatchNormalization folded by the QDQ form: the same
#               numbers with the float model's BatchNormalization kept or
#               folded beforehand; bn_qdq16 its A16W8 form (com.microsoft
#               QuantizeLinear/DequantizeLinear)
# and tests/data/activations/: dyn_quant (dynamic: ConvInteger,
# MatMulInteger) and wo_nbits (weight-only: MatMulNBits), every layer
# kept float. --write-fallback, for QDQ (chain_bad), QOperator
# (chain_qop), dynamic and weight-only: the written model, run in
# onnxruntime-node with the float model on the same 8 samples, gives the
# output cosine fallback.json claims within 1e-6 (skipped without node
# and tests/ort/node_modules). --sensitivity none runs nothing; a bad
# --target is a usage error (exit 1). JSON is read with /usr/bin/python3
# (skipped without it).
set -u
qr_test=sens
. "$top_srcdir/tests/report_lib.sh"
D="$top_srcdir/tests/data/diag"
S="$top_srcdir/tests/data/sens"

# j DIR EXPR: a Python expression on report.json (r) and fallback.json
# (f, None when absent) is true
j() {
	"$PY" - "$1" "$2" <<'PYEOF'
import json, os, sys
d, expr = sys.argv[1], sys.argv[2]
r = json.load(open(os.path.join(d, "report.json")))
fp = os.path.join(d, "fallback.json")
f = json.load(open(fp)) if os.path.exists(fp) else None
s = r["sensitivity"][0] if r["sensitivity"] else None
sys.exit(0 if eval(expr) else 1)
PYEOF
}
report() { # report OUT QUANT [options]: qreport on the chain's data
	out=$1 q=$2; shift 2
	"$QREPORT" --float "$D/chain_float.onnx" --quant "$q" \
		--data "$D/chain_input.npy" -o "$work/$out" --quiet "$@" \
		2>"$work/$out.err"
}

echo "1..33"
report full "$D/chain_bad.onnx" --sensitivity full \
	--target 'output.cosine>=0.999' --write-fallback "$work/fb.onnx"
t "chain_bad full: qreport exits 0" test $? -eq 0
t "chain_bad full: gemm4 ranks first kept float" \
	j "$work/full" 's["layers"][0]["layer"] == "gemm4" and s["mode"] == "full"'
t "chain_bad full: every layer measured both ways" \
	j "$work/full" 's["measured"] == 9 and all(l["kept_float"] and l["quant_only"] for l in s["layers"])'
t "chain_bad full: the plan is gemm4 alone and meets the target" \
	j "$work/full" 'f["candidates"][0]["nodes_to_exclude"] == ["gemm4"] and f["candidates"][0]["float_nodes"] == ["gemm4"] and f["candidates"][0]["met"] and f["target"] == "output.cosine>=0.999"'
t "chain_bad full: the plan's run reached the target, the candidate did not" \
	j "$work/full" 'f["candidates"][0]["reached"]["cosine"] >= 0.999 > s["base"]["cosine"]'
t "chain_bad full: group what-ifs: first and last layer float run, no elementwise op to change" \
	j "$work/full" '[g["name"] for g in s["groups"]] == ["elementwise", "sensitive", "first_last", "per_channel"] and s["groups"][2]["changed"] == 2 and s["groups"][2]["metric"] and s["groups"][0]["why"] and s["groups"][0]["metric"] is None'
report quick "$D/chain_bad.onnx" --target 'output.cosine>=0.999'
t "chain_bad quick (default): gemm4 first, the plan gemm4 alone" \
	j "$work/quick" 's["mode"] == "quick" and s["layers"][0]["layer"] == "gemm4" and f["candidates"][0]["nodes_to_exclude"] == ["gemm4"]'
t "chain_bad: the page and the overview show what to change" \
	sh -c "grep -q 'Fallback plan' '$work/quick/change.html' && grep -q 'id=\"change\"' '$work/quick/index.html' && grep -q '## What to change' '$work/quick/summary.md'"
report far "$D/chain_bad.onnx" --target 'output.sqnr>=200'
t "an out-of-reach target: every layer that helped alone, not met; the curve at 1, 2, 4, ... and the last" \
	j "$work/far" '(lambda n: n >= 3 and not f["candidates"][0]["met"] and n == sum(1 for l in s["layers"] if l["kept_float"] and l["kept_float"]["sqnr_db"] > s["base"]["sqnr_db"]) and [c["kept_float"] for c in s["fallback"]["curve"]] == [k for k in (1, 2, 4, 8, 16, 32) if k < n] + [n] and s["fallback"]["reached"] == {k: v for k, v in s["fallback"]["curve"][-1].items() if k not in ("kept_float", "layer")})(len(s["fallback"]["layers"]))'
t "an out-of-reach target: its first step measures what the reachable target's plan did" \
	"$PY" -c "
import json, sys
a, b = (json.load(open(p))['sensitivity'][0]['fallback'] for p in sys.argv[1:3])
sys.exit(0 if a['curve'][0] == b['curve'][0] and a['curve'][0]['layer'] == 'gemm4' else 1)
" "$work/far/report.json" "$work/quick/report.json"
report w2 "$S/chain_w2.onnx" --sensitivity full
t "chain_w2: qreport exits 0" test $? -eq 0
t "chain_w2: weights vs activations names the weights" \
	j "$work/w2" 's["verdict"].startswith("work on the weights") and s["weights_only"]["cosine"] < s["activations_only"]["cosine"]'
t "chain_w2: per-channel 2-bit weights, requantized from the float ones, all 9 changed and better than per tensor" \
	j "$work/w2" 's["groups"][3]["changed"] == 9 and s["groups"][3]["metric"]["sqnr_db"] > s["base"]["sqnr_db"] + 3'
report qop "$S/chain_qop.onnx" --sensitivity full
t "chain_qop: qreport exits 0" test $? -eq 0
t "chain_qop: every QGemm kept float and quantized alone" \
	j "$work/qop" 's["ran"] and all(l["kept_float"] and l["quant_only"] and l["why"] is None for l in s["layers"]) and len(s["layers"]) == 9'
t "chain_qop: per-channel weights, requantized from the float ones, all 9 QGemm changed and better than per tensor" \
	j "$work/qop" 's["groups"][3]["changed"] == 9 and s["groups"][3]["why"] is None and s["groups"][3]["metric"]["sqnr_db"] > s["base"]["sqnr_db"] + 2'
"$QREPORT" --float "$S/res_float.onnx" --quant "$S/res_qdq.onnx" \
	--data "$S/res_input.npy" -o "$work/res" --quiet --sensitivity full
t "res (residual Adds, ReLU folded into their QuantizeLinear): qreport exits 0" \
	test $? -eq 0
t "res: elementwise outputs in float change the 3 Adds, keep their ReLU and do not lose accuracy" \
	j "$work/res" 's["groups"][0]["changed"] == 3 and s["groups"][0]["metric"]["cosine"] >= s["base"]["cosine"] and s["groups"][0]["metric"]["sqnr_db"] >= s["base"]["sqnr_db"]'
report none "$D/chain_bad.onnx" --sensitivity none
t "--sensitivity none: no runs, no fallback.json" \
	j "$work/none" 'r["sensitivity"] == [] and f is None'
report nofb "$D/chain_bad.onnx" --sensitivity none \
	--write-fallback "$work/nofb.onnx"
t "--write-fallback with --sensitivity none: exit 1 before any run" \
	sh -c "test $? -eq 1 && grep -q 'needs a --quant candidate' '$work/nofb.err' && test ! -e '$work/nofb'"
report bad "$D/chain_bad.onnx" --target 'output.cosine=0.9'
t "--target without >=: exit 1 naming it" \
	sh -c "test $? -eq 1 && grep -q \"target 'output.cosine=0.9'\" '$work/bad.err'"
t "--write-fallback: a model ONNX checks" \
	"$PY" -c "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]))" "$work/fb.onnx"

A="$top_srcdir/tests/data/activations"
"$PY" -c "
import numpy as np, sys
r = np.random.RandomState(1)
np.save(sys.argv[1], r.randn(8, 3, 8, 8).astype(np.float32))
np.save(sys.argv[2], r.randn(8, 16, 72).astype(np.float32))
" "$work/dyn.npy" "$work/wo.npy"
# act NAME QUANT TARGET: tests/data/activations/'s float model NAME and
# candidate QUANT on $work/NAME.npy, full, writing $work/NAME.onnx
act() {
	"$QREPORT" --float "$A/${1}_float.onnx" --quant "$A/$2.onnx" \
		--data "$work/$1.npy" -o "$work/$1" --quiet --sensitivity full \
		--target "output.cosine>=$3" --write-fallback "$work/$1.onnx"
}
act dyn dyn_quant 0.99999999
t "dynamic: qreport exits 0" test $? -eq 0
t "dynamic: ConvInteger and MatMulInteger kept float, the plan both" \
	j "$work/dyn" 'len(s["layers"]) == 2 and all(l["kept_float"] for l in s["layers"]) and len(f["candidates"][0]["nodes_to_exclude"]) == 2 and s["activations_only"]'
act wo wo_nbits 0.9999
t "weight-only: qreport exits 0" test $? -eq 0
t "weight-only: every MatMulNBits kept float, the plan met" \
	j "$work/wo" 'len(s["layers"]) == 3 and all(l["kept_float"] for l in s["layers"]) and f["candidates"][0]["met"] and s["verdict"].startswith("work on the weights")'
report qopfb "$S/chain_qop.onnx" --sensitivity full \
	--target 'output.cosine>=0.9999' --write-fallback "$work/qop.onnx"
t "chain_qop: a plan of QGemm layers written" \
	j "$work/qopfb" 'len(f["candidates"][0]["nodes_to_exclude"]) >= 1 and os.path.exists(sys.argv[1] + "/../qop.onnx")'

# bn: Conv+BatchNormalization (random gamma, beta, mean, variance)
# against its QDQ form, which folds them: with the float model as it is
# and with it folded beforehand, hybrid runs fold as the candidate did,
# so every number agrees within rounding; bn_qdq16, the A16W8 form
# (com.microsoft QuantizeLinear and DequantizeLinear)
for f in bn_float bn_folded; do
	"$QREPORT" --float "$S/$f.onnx" --quant "$S/bn_qdq.onnx" \
		--data "$S/bn_input.npy" -o "$work/$f" --quiet \
		--sensitivity full
done
t "bn: BatchNormalization kept or folded beforehand, weights alone and every layer both ways agree within 0.01 dB" \
	"$PY" -c "
import json, sys
a, b = (json.load(open(p))['sensitivity'][0] for p in sys.argv[1:3])
def nums(r):
    d = {'w': r['weights_only']['sqnr_db'], 'a': r['activations_only']['sqnr_db']}
    for l in r['layers']:
        d[l['layer'] + 'k'] = l['kept_float']['sqnr_db']
        d[l['layer'] + 'q'] = l['quant_only']['sqnr_db']
    return d
x, y = nums(a), nums(b)
sys.exit(0 if len(x) == 10 and x.keys() == y.keys() and
         all(abs(x[k] - y[k]) < 0.01 for k in x) else 1)
" "$work/bn_folded/report.json" "$work/bn_float/report.json"
"$QREPORT" --float "$S/bn_float.onnx" --quant "$S/bn_qdq16.onnx" \
	--data "$S/bn_input.npy" -o "$work/bn16" --quiet --sensitivity full
t "bn_qdq16 (com.microsoft Q/DQ): every layer kept float, activations alone measured" \
	j "$work/bn16" 's["ran"] and all(l["kept_float"] for l in s["layers"]) and len(s["layers"]) == 4 and s["activations_only"]["cosine"] > s["weights_only"]["cosine"]'

# ortcheck NAME FLOAT FALLBACK DATA ROWS REPORT: the written model's
# cosine in onnxruntime-node against fallback.json's
ortcheck() {
	ort=$(node "$top_srcdir/tests/ort/sens_fallback.js" "$2" "$3" "$4" \
		"$5" 8)
	t "--write-fallback, $1: onnxruntime-node's output cosine ($ort) is fallback.json's within 1e-6" \
		j "$6" "'$ort' != '' and abs(f['candidates'][0]['reached']['cosine'] - float('$ort' or 'nan')) <= 1e-6"
}

node_ok=0
command -v node >/dev/null 2>&1 &&
	[ -d "$top_srcdir/tests/ort/node_modules/onnxruntime-node" ] && node_ok=1
if [ $node_ok = 1 ]; then
	ortcheck "QDQ" "$D/chain_float.onnx" "$work/fb.onnx" \
		"$D/chain_input.npy" 4 "$work/full"
	ortcheck "QOperator" "$D/chain_float.onnx" "$work/qop.onnx" \
		"$D/chain_input.npy" 4 "$work/qopfb"
	ortcheck "dynamic" "$A/dyn_float.onnx" "$work/dyn.onnx" \
		"$work/dyn.npy" 1 "$work/dyn"
	ortcheck "weight-only" "$A/wo_float.onnx" "$work/wo.onnx" \
		"$work/wo.npy" 1 "$work/wo"
else
	for k in 27 28 29 30; do
		echo "ok $k # SKIP node or tests/ort/node_modules missing"
	done
fi
