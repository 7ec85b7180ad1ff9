#!/bin/sh
# Quantized models from toolchains other than ONNX Runtime's quantizer
# (tests/models/make_toolchains.py: PyTorch eager and FX post-training
# quantization with qnnpack and onednn, PyTorch QAT, TensorRT-style fake
# quant with BatchNormalization kept and folded, ONNX Runtime's QDQ and
# QOperator, a Paddle2ONNX-like CNN, and renamed-tensor copies), each
# against its float model, in one report with its renamed copy when it
# has one:
#   $QREPORT --float F --quant Q [--quant Q_renamed] --data SAMPLES \
#            --samples 4 -o DIR --quiet
# and, per candidate k, from DIR/report.json:
#   format   quant_summaries[k].format is the manifest's
#   pairs    every float compute layer's output is paired with the
#            candidate tensor the manifest names (or one equally right:
#            another DequantizeLinear of the same QuantizeLinear)
#   verified every right pair is marked verified in report.json (not
#            flagged a suspect pairing, shapes agree)
#   wrong    no float tensor is paired with a tensor holding another
#            value, nor is one the manifest says has no counterpart (a
#            tensor of the right value that is not the one to compare,
#            such as the QuantizeLinear output before a Cast and its
#            DequantizeLinear, fails "pairs" only)
#   renamed  (renamed copies) the same pairs as candidate 0, the
#            original, tensor names mapped back
#   weights  every float weight is paired with the candidate's weight
#   sqnr     their SQNR within 0.01 dB of the manifest's (numpy, BN folded
#            on both sides)
#   ort      every pair's cosine and SQNR equal those onnxruntime-node
#            computes (bench/activations_ort.js, bound 1e-6, graph
#            optimisation off), whatever the pairs are
# The manifest's pairs are worked out by make_toolchains.py from the two
# graphs' structure, not from qreport.
#
# Checks known to fail until qreport handles a toolchain are listed in
# TODO below, one "FIXTURE CHECK [WHY]" a line (FIXTURE a shell pattern,
# CHECK one of the names above, WHY by default "pairing of <toolchain>"):
# they print "not ok ... # TODO WHY" and do not fail make check. One
# that passes prints "ok ... # TODO WHY", which automake counts as an
# unexpected pass and fails make check: remove its entry. Fixtures of
# ONNX Runtime's quantizer are never listed.
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-torch/torchvision/onnx are missing. The models are made once
# into $QR_MODELS/toolchains (default: tests/models-cache/toolchains in
# the build tree) and remade when make_toolchains.py's VERSION changes.
set -u
: "${top_srcdir:?}" "${top_builddir:?}" "${QREPORT:?}"

TODO='
'

. "$top_srcdir/tests/ort_lib.sh"
# 35 candidates through an instrumented binary would take most of the
# sanitizer stage; the paths they take are covered there by the other
# tests, and the matrix itself runs in the plain make check.
[ -z "${QR_SANITIZE:-}" ] ||
	skip "the toolchain matrix runs in the plain make check, not under the sanitizers"
ort_ready
$PY -c "import torch, torchvision" 2>/dev/null ||
	skip "Debian's python3-torch and python3-torchvision are needed to make the models"

gen="$top_srcdir/tests/models/make_toolchains.py"
MODELS="${QR_MODELS:-$top_builddir/tests/models-cache}/toolchains"
version=$(sed -n 's/^VERSION = \([0-9]*\).*/\1/p' "$gen")
current() {
	grep -q "^ \"version\": $version,\$" "$MODELS/manifest.json" 2>/dev/null
}
if ! current; then
	# made aside and moved in, unless a concurrent run was quicker
	mkdir -p "$(dirname "$MODELS")"
	tmp=$(mktemp -d "$MODELS.new-XXXXXX")
	if ! $PY "$gen" "$tmp" >"$tmp.log" 2>&1; then
		echo "Bail out! making the models failed: $(tail -5 "$tmp.log")"
		rm -rf "$tmp" "$tmp.log"
		exit 1
	fi
	mv "$tmp.log" "$tmp/make.log"
	if ! current; then
		rm -rf "$MODELS"
		mv -T "$tmp" "$MODELS" 2>/dev/null
	fi
	rm -rf "$tmp"
fi

work=$(mktemp -d /tmp/qr-tc-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM

# one line per run: the fixture, its float model, its candidate and its
# renamed copy's (both compared in one report, candidates 0 and 1)
$PY - "$MODELS/manifest.json" >"$work/list" <<'PYEOF' ||
import json, sys
fx = json.load(open(sys.argv[1]))["fixtures"]
for f in fx:
    if not f["renamed_of"]:
        print(f["name"], f["float"], " ".join([f["candidate"]] + [r["candidate"] for r in fx
                                                                  if r["renamed_of"] == f["name"]]))
PYEOF
	{ echo "Bail out! cannot read $MODELS/manifest.json"; exit 1; }

# samples and the exposed model of each float model, then the runs in
# two lanes
cut -d' ' -f2 "$work/list" | sort -u >"$work/floats"
while read -r fl; do
	f=${fl%.onnx}
	$PY "$top_srcdir/bench/make_samples.py" "$MODELS/$fl" "$work/$f/samples" 4 &&
		$PY "$top_srcdir/tests/models/expose_all.py" "$MODELS/$fl" "$work/$f/all.onnx" ||
		{ echo "Bail out! preparing $fl failed"; exit 1; }
done <"$work/floats"

run() {
	while read -r name fl cands; do
		d="$work/$name"
		f=${fl%.onnx}
		mkdir -p "$d"
		qargs=""
		for c in $cands; do
			qargs="$qargs --quant $MODELS/$c"
		done
		# shellcheck disable=SC2086
		"$QREPORT" --float "$MODELS/$fl" $qargs --data "$work/$f/samples" \
			--samples 4 -o "$d/rep" --quiet >"$d/qreport.log" 2>&1
		echo $? >"$d/rc"
		k=0
		for c in $cands; do
			if [ -f "$d/rep/report.json" ] &&
				$PY "$top_srcdir/tests/models/expose_all.py" "$MODELS/$c" "$d/q.onnx"; then
				node "$top_srcdir/bench/activations_ort.js" "$d/rep/report.json" \
					"$work/$f/all.onnx" "$d/q.onnx" "$work/$f/samples" \
					--quant $k --tol 1e-6 >"$d/ort$k" 2>&1
				echo $? >"$d/ort$k.rc"
				rm -f "$d/q.onnx"
			fi
			k=$((k + 1))
		done
	done <"$1"
}
awk 'NR % 2 == 1' "$work/list" >"$work/lane0"
awk 'NR % 2 == 0' "$work/list" >"$work/lane1"
run "$work/lane0" &
run "$work/lane1"
wait

TODO="$TODO" $PY - "$MODELS/manifest.json" "$work" <<'PYEOF'
import fnmatch, json, os, sys

manifest, work = json.load(open(sys.argv[1])), sys.argv[2]
todo = [l.split() for l in os.environ["TODO"].splitlines() if l.strip() and not l.startswith("#")]
n = 0
table = []


def read(path):
    try:
        with open(path) as fp:
            return fp.read()
    except OSError:
        return None


def tap(fx, check, good, msg, details=()):
    global n
    n += 1
    line = "%s %d - %s %s: %s" % ("ok" if good else "not ok", n, fx["name"], check, msg)
    why = [t[2:] for t in todo if fnmatch.fnmatchcase(fx["name"], t[0]) and t[1] == check]
    if why and "onnxruntime" not in fx["toolchain"]:  # ONNX Runtime's quantizer's must pass
        line += " # TODO " + (" ".join(why[0]) or "pairing of " + fx["toolchain"])
    print(line)
    if not good:
        for d in details:
            print("#   " + d)


def pairs_of(rep, k):
    return {p["tensor"]: p for p in rep.get("activations", []) if p.get("quant") == k}


def check(fx, d, k, rep, rc, orig):
    """the TAP lines of fixture fx, candidate k of the report in d"""
    row = {"name": fx["name"], "renamed": ""}
    table.append(row)
    checks = ["format", "pairs", "wrong", "verified"] + (["renamed"] if orig else []) + ["weights", "sqnr", "ort"]
    if rep is None:
        log = (read(os.path.join(d, "qreport.log")) or "").strip().replace("\n", " ")[:300]
        for c in checks:
            tap(fx, c, False, "qreport exited %s without report.json: %s" % (rc, log))
            row[c] = "-"
        return

    fmt = (rep.get("quant_summaries") or [{}] * (k + 1))[k].get("format")
    tap(fx, "format", fmt == fx["format"], "format %s%s" % (
        fmt, "" if fmt == fx["format"] else ", expected %s (qreport exited %s)" % (fx["format"], rc)))
    row["format"] = fmt if fmt == fx["format"] else "%s (want %s)" % (fmt, fx["format"])

    # every expected pair, and no pair with another layer's tensor
    pairs = pairs_of(rep, k)
    exp = {e["tensor"]: e for e in fx["layers"]}
    want = [e for e in fx["layers"] if e["quant_tensor"] is not None and e["required"]]
    missing, wrong = [], []
    for e in want:
        p = pairs.get(e["tensor"])
        if p is None or p["quant_tensor"] not in e["accept"]:
            if p is None:
                got = "no pair"
            else:
                got = "%s by %s%s" % (p["quant_tensor"], p.get("match"),
                                      " (same class: the value before or after quantization, not the tensor to compare)"
                                      if p["quant_tensor"] in e["same_class"] else "")
            missing.append("layer #%d %s (%s) output %s: expected %s (by its %s), found %s" % (
                e["index"], e["layer"], e["op"], e["tensor"], e["quant_tensor"], e["quant_op"], got))
    for t, p in pairs.items():
        e = exp.get(t)
        if e is None:
            continue
        if e["quant_tensor"] is None:
            wrong.append("layer #%d %s (%s) output %s: paired with %s by %s, expected no counterpart (%s)" % (
                e["index"], e["layer"], e["op"], t, p["quant_tensor"], p.get("match"), e["reason"]))
        elif p["quant_tensor"] not in e["accept"] + e["same_class"]:
            wrong.append("layer #%d %s (%s) output %s: paired with %s by %s, expected %s" % (
                e["index"], e["layer"], e["op"], t, p["quant_tensor"], p.get("match"), e["quant_tensor"]))
    same = sum(1 for t, p in pairs.items() if t in exp and p["quant_tensor"] in exp[t]["same_class"])
    found = len(want) - len(missing)
    tap(fx, "pairs", not missing, "%d of %d expected activation pairs found" % (found, len(want)), missing)
    tap(fx, "wrong", not wrong, "%d float tensors paired with another layer's tensor" % len(wrong), wrong)
    # a right pair is not called suspect
    false = ["%s ~ %s: flagged %s" % (t, p["quant_tensor"], ", ".join(p.get("flags", [])))
             for t, p in pairs.items()
             if t in exp and p["quant_tensor"] in exp[t]["accept"] and not p.get("verified")]
    tap(fx, "verified", not false, "%d right pairs not verified" % len(false), false)
    row["pairs"] = "%d/%d" % (found, len(want))
    row["same"] = same
    row["wrong"] = len(wrong)

    # the renamed copy pairs the same layers as the original (candidate 0)
    if orig:
        back = {v: k_ for k_, v in fx["rename"].items()}
        mine = {(t, back.get(p["quant_tensor"], p["quant_tensor"])) for t, p in pairs.items()}
        theirs = {(t, p["quant_tensor"]) for t, p in pairs_of(rep, 0).items()}
        diff = ["only in the renamed copy: %s -> %s" % x for x in sorted(mine - theirs)] + \
               ["only in %s: %s -> %s" % ((orig,) + x) for x in sorted(theirs - mine)]
        tap(fx, "renamed", not diff, "%d of %d pairs differ from %s's (names mapped back)" % (
            len(diff), len(mine | theirs), orig), diff)
        row["renamed"] = "same" if not diff else "%d differ" % len(diff)

    # weights and their SQNR
    qw = {w.get("weight"): w for w in rep.get("quant_weights", []) if w.get("quant") == k}
    wbad, sbad, wn = [], [], 0
    for w in fx["weights"]:
        if w["quant_weight"] is None:
            continue
        wn += 1
        got = qw.get(w["weight"])
        if got is None or got.get("quant_weight") not in w["accept"]:
            wbad.append("%s %s: expected %s, found %s" % (
                w["layer"], w["weight"], w["quant_weight"],
                "no pair" if got is None else got.get("quant_weight")))
            continue
        a, b = got.get("sqnr_db"), w["sqnr_db"]
        if (a is None) != (b is None) or (a is not None and abs(a - b) > 0.01):
            sbad.append("%s %s: sqnr_db %s, expected %s" % (w["layer"], w["weight"], a,
                                                           "null" if b is None else "%.4f" % b))
    tap(fx, "weights", not wbad, "%d of %d weights paired" % (wn - len(wbad), wn), wbad)
    tap(fx, "sqnr", not sbad, "%d of %d paired weights' SQNR off by more than 0.01 dB" % (
        len(sbad), wn - len(wbad)), sbad)
    row["weights"] = "%d/%d" % (wn - len(wbad), wn)
    row["sqnr"] = len(sbad)

    # cosine and SQNR against ONNX Runtime
    ort = read(os.path.join(d, "ort%d" % k))
    orc = (read(os.path.join(d, "ort%d.rc" % k)) or "").strip()
    if ort is None:
        tap(fx, "ort", False, "not run")
        row["ort"] = "-"
        return
    lines = ort.splitlines()
    bad = [l for l in lines if l.startswith("not ok")]
    tot = len([l for l in lines if l.startswith(("ok", "not ok"))])
    last = lines[-1] if lines else ""
    ran = manifest["models"].get(fx["candidate"], {})
    note = [] if ran.get("ort_ran") is not False else [
        "the generator could not run %s with ONNX Runtime: %s" % (fx["candidate"], ran.get("ort_error"))]
    tap(fx, "ort", orc == "0", "%d of %d pairs differ from ONNX Runtime%s" % (
        len(bad), tot, "" if orc in ("0", "1") else " (activations_ort.js: %s)" % last[:200]),
        bad + [last] + note)
    row["ort"] = "%d/%d" % (len(bad), tot) if orc in ("0", "1") else "error"


fixtures = manifest["fixtures"]
for fx in fixtures:
    if fx["renamed_of"]:
        continue
    d = os.path.join(work, fx["name"])
    rc = (read(os.path.join(d, "rc")) or "?").strip()
    try:
        rep = json.load(open(os.path.join(d, "rep", "report.json")))
    except (OSError, ValueError):
        rep = None
    check(fx, d, 0, rep, rc, None)
    for k, r in enumerate([r for r in fixtures if r["renamed_of"] == fx["name"]], 1):
        check(r, d, k, rep, rc, fx["name"])

print("1..%d" % n)
# pairs: expected pairs found; same: pairs with a tensor of the right
# value that is not the one to compare; wrong: pairs with another value
fmt = "# %-38s %-22s %-8s %-4s %-5s %-9s %-7s %-4s %s"
print(fmt % ("fixture", "format", "pairs", "same", "wrong", "renamed", "weights", "sqnr", "ort differ"))
for r in table:
    print(fmt % (r["name"], r.get("format"), r.get("pairs"), r.get("same", "-"), r.get("wrong"),
                 r.get("renamed"), r.get("weights"), r.get("sqnr"), r.get("ort")))
PYEOF
