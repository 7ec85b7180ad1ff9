#!/bin/sh
# CLE, measured, on the fixtures of tests/data/cle/ (made by
# tests/data/make_cle_fixtures.py) whose answer is known by construction:
#   unbal   Conv -> BatchNormalization (kept) -> Relu -> Conv, the first
#           conv's output channel ranges 100 times apart: a large measured
#           gain, of the predicted gain's sign; the BN folded
#   bal     Conv -> Relu -> Conv with every channel's range within 5%: a
#           gain near 0
#   dw      Conv -> Relu -> Depthwise -> PRelu -> Conv, the depthwise
#           channels 100 times apart: a triplet, a large gain
#   chain   6 convs, 5 pairs sharing layers: quick measures them all
#           equalized at once, full each alone too, with the same numbers
#   nofold  unbal with the BN's scale not a constant: not measured, why
#   relu6   Conv -> Clip(0,6) -> Conv, unbalanced as unbal, activations far
#           below 6: no set as the model is; with the ReLU6 made ReLU the
#           same function (measured exactly) and a large gain
#   relu6big the same with activations past 6: the swap alone changes the
#           output, measured
# Every set equalized and nothing quantized gives the float model's output
# within 1e-5 relative (SQNR >= 100 dB). For unbal and dw the numbers are
# recomputed independently with torch (BN folded, the equalization,
# symmetric per-tensor 8-bit weights, float64): base and equalized output
# SQNR within 0.05 dB (skipped without torch); for relu6 and relu6big the
# same with the swapped net against the one with ReLU6. --sensitivity none
# measures nothing. With torchvision's resnet18 in $QR_MODELS (default:
# tests/models-cache in the build tree; skipped without it), its form with
# every BatchNormalization kept gives the numbers of its folded form
# within 0.01 dB. JSON is read with /usr/bin/python3 (skipped without).
set -u
qr_test=cle
. "$top_srcdir/tests/report_lib.sh"
C="$top_srcdir/tests/data/cle"

# j NAME EXPR: a Python expression on $work/NAME/report.json (r), its
# cle_measured (m) and cle (c) is true
j() {
	"$PY" - "$work/$1" "$2" <<'PYEOF'
import json, os, sys
d, expr = sys.argv[1], sys.argv[2]
r = json.load(open(os.path.join(d, "report.json")))
m, c = r["cle_measured"], r["cle"]
sys.exit(0 if eval(expr) else 1)
PYEOF
}
report() { # report NAME OUT MODE: qreport on fixture NAME
	"$QREPORT" --float "$C/${1}_float.onnx" --quant "$C/${1}_wo.onnx" \
		--data "$C/input.npy" -o "$work/$2" --quiet --sensitivity "$3" \
		2>"$work/$2.err"
}
# ref NAME OUT: torch's base and equalized output SQNR agree with OUT's
ref() {
	"$PY" - "$C" "$1" "$work/$2/report.json" <<'PYEOF'
import json, sys
import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn.functional as F

d, name, rep = sys.argv[1:4]
m = onnx.load("%s/%s_float.onnx" % (d, name))
w = {t.name: torch.tensor(numpy_helper.to_array(t), dtype=torch.float64)
     for t in m.graph.initializer}
x = torch.tensor(np.load(d + "/input.npy"), dtype=torch.float64)


def q(v):  # symmetric per tensor, 8 bits
    s = v.abs().max() / 127
    return torch.clamp(torch.round(v / s), -127, 127) * s


def sqnr(a, b):
    return 10 * np.log10(float((a * a).sum() / ((a - b) ** 2).sum()))


def rmax(v, axis):  # max |v| per slice along axis
    dims = [i for i in range(v.dim()) if i != axis]
    return v.abs().amax(dim=dims)


def col(s):
    return s[None, :, None, None]


def row(s):
    return s[:, None, None, None]


got_key = ("base", "sets")
if name.startswith("relu6"):
    wa, ba, wb, bb = w["WA"], w["BA"], w["WB"], w["BB"]

    def net(wa, ba, wb, act=F.relu):
        return F.conv2d(act(F.conv2d(x, wa, ba, padding=1)), wb, bb)

    ref = net(wa, ba, wb, lambda v: torch.clamp(v, 0, 6))
    s = torch.sqrt(rmax(wa, 0) / rmax(wb, 1))
    base = net(q(wa), ba, q(wb))
    eq = net(q(wa / row(s)), ba / s, q(wb * col(s)))
    got_key = ("relu6", "relu6")
elif name == "unbal":
    f = w["gamma"] / torch.sqrt(w["var"] + 1e-5)
    wa, ba = w["WA"] * row(f), (w["BA"] - w["mean"]) * f + w["beta"]
    wb, bb = w["WB"], w["BB"]

    def net(wa, ba, wb):
        return F.conv2d(F.relu(F.conv2d(x, wa, ba, padding=1)), wb, bb)

    ref = F.conv2d(F.relu(F.batch_norm(
        F.conv2d(x, w["WA"], w["BA"], padding=1), w["mean"], w["var"],
        w["gamma"], w["beta"], eps=1e-5)), wb, bb)
    s = torch.sqrt(rmax(wa, 0) / rmax(wb, 1))
    base = net(q(wa), ba, q(wb))
    eq = net(q(wa / row(s)), ba / s, q(wb * col(s)))
else:
    w1, b1, w2, b2, w3 = w["W1"], w["B1"], w["W2"], w["B2"], w["W3"]

    def net(w1, b1, w2, b2, w3):
        a = F.relu(F.conv2d(x, w1, b1))
        a = F.prelu(F.conv2d(a, w2, b2, padding=1, groups=16),
                    w["slope"].reshape(16))
        return F.conv2d(a, w3, w["B3"])

    ref = net(w1, b1, w2, b2, w3)
    r0, r1, r2 = rmax(w1, 0), rmax(w2, 0), rmax(w3, 1)
    c = torch.pow(r0 * r1 * r2, 1.0 / 3)
    s12, s23 = r0 / c, c / r2
    base = net(q(w1), b1, q(w2), b2, q(w3))
    eq = net(q(w1 / row(s12)), b1 / s12, q(w2 * row(s12 / s23)), b2 / s23,
             q(w3 * col(s23)))
r = json.load(open(rep))["cle_measured"]
if got_key[0] == "relu6":
    got = (r["relu6"]["base"]["sqnr_db"],
           r["relu6"]["all"]["metric"]["sqnr_db"])
else:
    got = (r["base"]["sqnr_db"], r["sets"][0]["metric"]["sqnr_db"])
want = (sqnr(ref, base), sqnr(ref, eq))
print("# %s: qreport %.3f -> %.3f dB, torch %.3f -> %.3f dB" % (
    name, got[0], got[1], want[0], want[1]))
sys.exit(0 if all(abs(a - b) < 0.05 for a, b in zip(got, want)) else 1)
PYEOF
}

echo "1..30"
report unbal unbal full
t "unbal: qreport exits 0" test $? -eq 0
t "unbal: one pair, BN folded, measured in full mode on 8 samples" \
	j unbal 'len(c) == 1 and c[0]["layer_details"][0]["bn_folded"] and m["ran"] and m["mode"] == "full" and m["samples"] == 8 and m["layers_quantized"] == 2 and m["bits"] == 8'
t "unbal: the measured gain is large and of the predicted gain's sign" \
	j unbal 'm["sets"][0]["gain_db"] > 15 and m["sets"][0]["predicted_gain_db"] > 1'
t "unbal: every set equalized is that set alone" \
	j unbal 'm["all"]["gain_db"] == m["sets"][0]["gain_db"]'
t "unbal: equalized, not quantized: the float model's output within 1e-5 relative" \
	j unbal 'm["float_check"]["sqnr_db"] >= 100'
report bal bal full
t "bal: qreport exits 0" test $? -eq 0
t "bal: balanced channels: measured and predicted gains near 0" \
	j bal 'abs(m["sets"][0]["gain_db"]) < 1 and abs(m["sets"][0]["predicted_gain_db"]) < 0.5'
t "bal: equalized, not quantized: the float model's output" \
	j bal 'm["float_check"]["sqnr_db"] >= 100'
report dw dw full
t "dw: qreport exits 0" test $? -eq 0
t "dw: a Conv -> Depthwise -> Conv triplet through Relu and PRelu" \
	j dw 'len(c) == 1 and [l["depthwise"] for l in c[0]["layer_details"]] == [False, True, False] and c[0]["joins"] == ["Relu", "PRelu"]'
t "dw: the measured gain is large and of the predicted gain's sign" \
	j dw 'm["sets"][0]["gain_db"] > 15 and m["sets"][0]["predicted_gain_db"] > 1'
t "dw: equalized through PRelu, not quantized: the float model's output" \
	j dw 'm["float_check"]["sqnr_db"] >= 100'
if "$PY" -c "import torch" 2>/dev/null; then
	t "unbal: torch's base and equalized output SQNR agree within 0.05 dB" \
		ref unbal unbal
	t "dw: torch's base and equalized output SQNR agree within 0.05 dB" \
		ref dw dw
else
	echo "ok 13 # SKIP no torch"
	echo "ok 14 # SKIP no torch"
fi
report chain quick quick
report chain full full
t "chain quick: every set equalized at once measured, each set alone says full measures it" \
	j quick 'len(c) == 5 and m["mode"] == "quick" and m["all"]["metric"] and m["float_check"] and all(s["metric"] is None and "--sensitivity full" in s["why"] for s in m["sets"])'
t "chain full: every set measured, quick's numbers the same" \
	"$PY" -c "
import json, sys
q, f = (json.load(open(p))['cle_measured'] for p in sys.argv[1:3])
sys.exit(0 if all(s['metric'] for s in f['sets']) and q['all'] == f['all'] and
         all(a['metric'] is None or a['gain_db'] == b['gain_db']
             for a, b in zip(q['sets'], f['sets'])) else 1)
" "$work/quick/report.json" "$work/full/report.json"
t "chain: the 5 sets equalized in turn, not quantized: the float model's output" \
	j full 'm["float_check"]["sqnr_db"] >= 100 and m["equalizable_sets"] == 5'
t "chain: the CLE page's measured table and summary.md's line" \
	sh -c "grep -q 'Measured gain (dB, output)' '$work/full/cle.html' && grep -q 'All sets together' '$work/full/cle.html' && grep -q 'every set equalized: [+-][0-9.]* dB output SQNR, measured' '$work/full/summary.md'"
report nofold nofold full
t "nofold: qreport exits 0" test $? -eq 0
t "nofold: the BN that cannot be folded stops its set, which says why" \
	j nofold 'm["ran"] and m["equalizable_sets"] == 0 and m["sets"][0]["metric"] is None and "cannot be folded" in m["sets"][0]["why"] and m["all"]["metric"] is None and m["all"]["why"] and m["float_check"] is None'
report relu6 relu6 quick
t "relu6: qreport exits 0" test $? -eq 0
t "relu6: ReLU6 blocks the only set: nothing measured as the model is, why" \
	j relu6 'len(c) == 0 and len(r["cle_blockers"]) == 1 and not m["ran"] and "as the model is" in m["why"]'
t "relu6: made ReLU, one set of 2 layers, the same function, a large gain" \
	j relu6 'm["relu6"]["why"] is None and m["relu6"]["clips"] == 1 and m["relu6"]["sets"] == 1 and m["relu6"]["layers_quantized"] == 2 and m["relu6"]["swap_only"]["cosine"] >= 1 - 1e-12 and m["relu6"]["all"]["gain_db"] > 15'
t "relu6: the CLE page's fix measured and summary.md's line" \
	sh -c "grep -q 'The fix, measured' '$work/relu6/cle.html' && grep -q 'with the 1 blocking ReLU6 made ReLU (alone: the same output), its 1 set equalized: [+-][0-9.]* dB' '$work/relu6/summary.md'"
report relu6big relu6big quick
t "relu6big: activations past 6: the swap alone changes the output, measured" \
	j relu6big 'm["relu6"]["swap_only"]["sqnr_db"] < 30 and m["relu6"]["all"]["metric"]["sqnr_db"] <= m["relu6"]["swap_only"]["sqnr_db"] + 0.5'
if "$PY" -c "import torch" 2>/dev/null; then
	t "relu6: torch's swapped base and equalized output SQNR agree within 0.05 dB" \
		ref relu6 relu6
	t "relu6big: torch's swapped base and equalized output SQNR agree within 0.05 dB" \
		ref relu6big relu6big
else
	echo "ok 26 # SKIP no torch"
	echo "ok 27 # SKIP no torch"
fi
report unbal none none
t "--sensitivity none: nothing measured" \
	j none 'm is None and len(c) == 1'

M="${QR_MODELS:-$top_builddir/tests/models-cache}"
if [ -f "$M/resnet18.onnx" ] && [ -f "$M/resnet18_bn.onnx" ] &&
	[ -f "$M/resnet18_qdq.onnx" ]; then
	for f in resnet18 resnet18_bn; do
		"$QREPORT" --float "$M/$f.onnx" --quant "$M/resnet18_qdq.onnx" \
			-o "$work/$f" --quiet --samples 4 \
			--sensitivity-samples 4 2>"$work/$f.err"
	done
	t "resnet18: 8 sets, every set equalized gains, the float check holds" \
		j resnet18 'len(m["sets"]) == 8 and m["all"]["gain_db"] > 0 and m["float_check"]["sqnr_db"] >= 100'
	t "resnet18 with its BatchNormalization kept: the folded form's numbers within 0.01 dB" \
		"$PY" -c "
import json, sys
a, b = (json.load(open(p))['cle_measured'] for p in sys.argv[1:3])
g = lambda m: [m['base']['sqnr_db'], m['all']['gain_db']] + [
    s['gain_db'] for s in m['sets'] if s['metric']]
x, y = g(a), g(b)
sys.exit(0 if len(x) == len(y) == 2 and
         all(abs(p - q) < 0.01 for p, q in zip(x, y)) else 1)
" "$work/resnet18/report.json" "$work/resnet18_bn/report.json"
else
	echo "ok 29 # SKIP no resnet18, resnet18_bn and resnet18_qdq in $M"
	echo "ok 30 # SKIP no resnet18, resnet18_bn and resnet18_qdq in $M"
fi
