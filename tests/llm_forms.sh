#!/bin/sh
# Reports across the two forms a Llama decoder is exported in: the small
# Llama of tests/models/make_llama.py in onnxruntime-genai's form
# (GroupQueryAttention, SkipSimplifiedLayerNormalization, MatMulNBits)
# and in plain ONNX ops as torch.onnx.export writes it (the _std
# variants: attention decomposed, RMSNorm as Pow/ReduceMean/..., int4
# weights as blocked DequantizeLinear -> MatMul), float in one form
# against int4 in the other, and both in plain ops:
#   $QREPORT --float F --quant Q --data input_ids=tokens.npy -o DIR --quiet
# for F:Q in FORMS. The int4 models hold the same codes and scales, so
# every report compares the same two functions as the GenAI pair
# llama_f32 : llama_q4_b32_sym_al0 (the reference report, run too).
#
# Checks, from DIR/report.json, the expected tensors worked out from the
# two graphs' structure (the k-th MatMul with a constant weight of one
# is the k-th of the other, MatMulNBits or MatMul of a DequantizeLinear
# of a constant in an int4 one; 7 a block: q, k, v, o, gate, up, down,
# then lm_head):
#   exit       the report exits 0
#   matmul     each float MatMul with a constant weight (29) is paired
#              with the candidate's k-th linear's output
#   attention  each block's attention output, the o_proj linear's input,
#              is paired with the candidate's o_proj input
#   blocks     each block's output, the residual sum after its MLP (the
#              Add of the down projection, or output 3 of the
#              SkipSimplifiedLayerNormalization that takes it), is paired
#              with the candidate's
#   verified   every pair is marked verified
#   llm        the next-token metrics (KL, top-1, top-5 per sample and
#              overall, both perplexities) are there
#   same       the linears' SQNR within 0.01 dB, the mean KL within 1e-3
#              and the perplexities within 1e-5 (relative) of the
#              reference report's: the forms compute the same functions
# and, informational, how many float tensors are paired and each
# unpaired one with qreport's reason.
#
# Checks known to fail until qreport pairs across the forms are listed
# in TODO below, one "FLOAT:QUANT CHECK [WHY]" a line (a shell pattern
# each): they print "not ok ... # TODO WHY" and do not fail make check.
# One that passes prints "ok ... # TODO WHY", which automake counts as
# an unexpected pass and fails make check: remove its entry.
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-onnx/numpy are missing. Models are made once into
# $QR_MODELS/llm (default: tests/models-cache/llm in the build tree).
set -u
: "${top_srcdir:?}" "${top_builddir:?}" "${QREPORT:?}"

FORMS="llama_f32:llama_q4_std llama_f32_std:llama_q4_b32_sym_al0 llama_f32_std:llama_q4_std"
REF=llama_f32:llama_q4_b32_sym_al0

TODO='
'

. "$top_srcdir/tests/ort_lib.sh"
ort_ready

MODELS="${QR_MODELS:-$top_builddir/tests/models-cache}/llm"
missing=$(for p in $FORMS $REF; do for m in ${p%%:*} ${p#*:}; do
	[ -f "$MODELS/$m.onnx" ] || echo "$m"; done; done | sort -u)
if [ -n "$missing" ]; then
	# made aside and moved in, so a concurrent run never reads half a model
	if ! mkdir -p "$MODELS" || ! tmp=$(mktemp -d "$MODELS/.new-XXXXXX"); then
		echo "Bail out! cannot write to $MODELS"
		exit 1
	fi
	# shellcheck disable=SC2086
	if ! $PY "$top_srcdir/tests/models/make_llama.py" "$tmp" $missing \
		>"$MODELS/make.log" 2>&1; then
		rm -rf "$tmp"
		echo "Bail out! making the models failed: see $MODELS/make.log"
		exit 1
	fi
	for m in $missing; do mv -f "$tmp/$m.onnx" "$MODELS/"; done
	rm -rf "$tmp"
fi

work=$(mktemp -d /tmp/qr-llmforms-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM

# the token ids of tests/llm_report.sh: English bytes, 3 rows of 16
$PY - "$work/tokens.npy" <<'PYEOF' || { echo "Bail out! could not write the tokens"; exit 1; }
import sys
import numpy as np
text = ["The quick brown fox jumps over", "Quantized weights keep the ",
        "onnxruntime genai runs models"]
np.save(sys.argv[1], np.array([[ord(c) for c in t[:16]] for t in text], np.int64))
PYEOF

for p in $REF $FORMS; do
	f=${p%%:*} q=${p#*:}
	d="$work/$f-$q"
	mkdir -p "$d"
	"$QREPORT" --float "$MODELS/$f.onnx" --quant "$MODELS/$q.onnx" \
		--data input_ids="$work/tokens.npy" -o "$d/report" --quiet \
		>"$d/log" 2>&1
	echo $? >"$d/rc"
done

# shellcheck disable=SC2086
TODO="$TODO" $PY - "$MODELS" "$work" "$REF" $FORMS <<'PYEOF'
import fnmatch, json, math, os, sys
import onnx
from onnx import numpy_helper

models, work, ref = sys.argv[1:4]
forms = sys.argv[4:]
todo = [l.split(None, 2) for l in os.environ["TODO"].splitlines() if l.strip()]
n = 0
PER_BLOCK = 7  # q, k, v, o, gate, up, down


def tap(form, check, good, msg, details=()):
    global n
    n += 1
    line = "%s %d - %s %s: %s" % ("ok" if good else "not ok", n, form, check, msg)
    why = [t[2] if len(t) > 2 else "pairing across the forms" for t in todo
           if fnmatch.fnmatchcase(form, t[0]) and t[1] == check]
    if why:
        line += " # TODO " + why[0]
    print(line)
    if not good:
        for d in details[:12]:
            print("#   " + d)
        if len(details) > 12:
            print("#   ... and %d more" % (len(details) - 12))


def structure(path):
    """the linears' outputs and inputs, in node order, and the blocks'
    outputs, from the graph alone"""
    g = onnx.load(path, load_external_data=False).graph
    consts = {t.name for t in g.initializer}
    made = {o: nd for nd in g.node for o in nd.output}
    users = {}
    for nd in g.node:
        for i in nd.input:
            users.setdefault(i, []).append(nd)
    def const_weight(nd):
        if nd.op_type == "MatMulNBits":
            return True
        if nd.op_type != "MatMul" or len(nd.input) < 2:
            return False
        w = nd.input[1]
        if w in consts:
            return True
        dq = made.get(w)
        return dq is not None and dq.op_type == "DequantizeLinear" and dq.input[0] in consts
    lin = [nd for nd in g.node if const_weight(nd)]
    blocks = []
    for b in range(len(lin) // PER_BLOCK):
        down = lin[b * PER_BLOCK + PER_BLOCK - 1].output[0]
        res = [u for u in users.get(down, [])
               if u.op_type in ("Add", "SkipSimplifiedLayerNormalization")]
        if len(res) != 1:
            raise SystemExit("%s: block %d: no single residual sum after %s" % (path, b, down))
        blocks.append(res[0].output[0] if res[0].op_type == "Add" else res[0].output[3])
    tensors = [o for nd in g.node for o in nd.output if o]
    return {"linears": [nd.output[0] for nd in lin],
            "attention": [lin[b * PER_BLOCK + 3].input[0] for b in range(len(blocks))],
            "blocks": blocks, "tensors": tensors}


def report(form):
    f, q = form.split(":")
    d = os.path.join(work, "%s-%s" % (f, q))
    rc = int(open(os.path.join(d, "rc")).read())
    try:
        rep = json.load(open(os.path.join(d, "report", "report.json")))
    except (OSError, ValueError):
        rep = None
    return rc, rep, open(os.path.join(d, "log")).read().strip().replace("\n", " ")[:300]


def finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


_, refrep, _ = report(ref)
if refrep is not None:
    rf = structure(os.path.join(models, ref.split(":")[0] + ".onnx"))
    refpairs = {p["tensor"]: p for p in refrep["activations"] if p["quant"] == 0}
    ref_sqnr = [refpairs.get(t, {}).get("sqnr_db") for t in rf["linears"]]
    ref_llm = refrep["activation_runs"][0].get("llm") or {}

for form in forms:
    f, q = form.split(":")
    fs = structure(os.path.join(models, f + ".onnx"))
    qs = structure(os.path.join(models, q + ".onnx"))
    rc, rep, log = report(form)
    tap(form, "exit", rc == 0 and rep is not None, "the report exits %d%s" % (
        rc, "" if rc == 0 else ": " + log))
    if rep is None:
        for c in ("matmul", "attention", "blocks", "verified", "llm", "same"):
            tap(form, c, False, "no report.json")
        continue
    pairs = {p["tensor"]: p for p in rep["activations"] if p["quant"] == 0}

    def expect(check, what, want, have):
        bad = []
        for i, (t, qt) in enumerate(zip(want, have)):
            p = pairs.get(t)
            if p is None or p["quant_tensor"] != qt:
                bad.append("%s %d: %s: expected %s, found %s" % (
                    what, i, t, qt, "no pair" if p is None else
                    "%s by %s" % (p["quant_tensor"], p.get("match"))))
        ok = not bad and len(want) == len(have) and len(want) > 0
        if len(want) != len(have):
            bad.insert(0, "the float model has %d, the candidate %d" % (len(want), len(have)))
        tap(form, check, ok, "%d of %d %s paired" % (len(want) - len(bad), len(want), what), bad)

    expect("matmul", "linear outputs", fs["linears"], qs["linears"])
    expect("attention", "attention outputs", fs["attention"], qs["attention"])
    expect("blocks", "block outputs", fs["blocks"], qs["blocks"])

    unver = ["%s ~ %s: flags %s" % (t, p["quant_tensor"], ", ".join(p.get("flags", [])))
             for t, p in pairs.items() if not p.get("verified")]
    tap(form, "verified", not unver and pairs,
        "%d of %d pairs not verified" % (len(unver), len(pairs)), unver)

    run = rep["activation_runs"][0]
    llm = run.get("llm") or {}
    ppl = llm.get("perplexity") or {}
    miss = [k for k in ("kl_mean", "kl_max", "top1_agree", "top5_overlap") if not finite(llm.get(k))]
    miss += [k for k in ("kl", "top1", "top5") if len(llm.get(k) or []) != 3
             or not all(finite(x) for x in llm[k])]
    miss += ["perplexity." + k for k in ("float", "quant", "change") if not finite(ppl.get(k))]
    tap(form, "llm", not miss, "next-token metrics %s" % (
        "kl_mean %.6g top1 %.4g top5 %.4g ppl %.6g -> %.6g" % (
            llm["kl_mean"], llm["top1_agree"], llm["top5_overlap"], ppl["float"], ppl["quant"])
        if not miss else "missing: " + ", ".join(miss)))

    # the same functions as the reference pair: the same numbers
    diff = []
    if refrep is None:
        diff.append("the reference report %s failed" % ref)
    else:
        for i, t in enumerate(fs["linears"]):
            a, b = pairs.get(t, {}).get("sqnr_db"), ref_sqnr[i] if i < len(ref_sqnr) else None
            if not finite(a) or not finite(b) or abs(a - b) > 0.01:
                diff.append("linear %d %s: sqnr_db %s, reference %s" % (i, t, a, b))
        def rel(k, got, want, tol):
            if not finite(got) or not finite(want) or abs(got - want) > tol * abs(want):
                diff.append("%s %s, reference %s" % (k, got, want))
        rp = ref_llm.get("perplexity") or {}
        rel("kl_mean", llm.get("kl_mean"), ref_llm.get("kl_mean"), 1e-3)
        rel("perplexity.float", ppl.get("float"), rp.get("float"), 1e-5)
        rel("perplexity.quant", ppl.get("quant"), rp.get("quant"), 1e-5)
        if finite(llm.get("top1_agree")) and finite(ref_llm.get("top1_agree")) and \
           abs(llm["top1_agree"] - ref_llm["top1_agree"]) > 1.5 / max(llm.get("positions", 1), 1):
            diff.append("top1_agree %s, reference %s" % (llm["top1_agree"], ref_llm["top1_agree"]))
    tap(form, "same", not diff, "%d linears' SQNR, the KL and perplexities as %s's%s" % (
        len(fs["linears"]), ref, "" if not diff else ": %d differ" % len(diff)), diff)

    # informational: what is paired, what is not and why
    um = run.get("unmatched", [])
    print("# %s: %d float tensors paired (graph inputs too), %d unpaired "
          "(of %d node outputs)" % (form, len(pairs), len(um), len(fs["tensors"])))
    for u in um:
        print("#   unpaired %s: %s" % (u["tensor"], u.get("reason")))

print("1..%d" % n)
PYEOF
