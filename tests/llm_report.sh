#!/bin/sh
# The report on a decoder LLM: the small Llama of tests/models/make_llama.py
# in onnxruntime-genai's form, float against int4 (MatMulNBits and a
# GatherBlockQuantized embedding), fed token sequences with
# `--data input_ids=tokens.npy` (one row a sample; the attention mask, the
# positions and the empty KV cache follow from them).
#
# Checks: the report exits 0; report.json's activation_runs[0].llm has the
# next-token metrics (KL, top-1, top-5, per sample and over every
# position) and the perplexities of both models, each within 1e-6
# (relative) of numpy's from the logits of the two models on the same
# inputs given whole (ONNX Runtime's, tests/data/ort_llm_run.js with graph
# optimisation off, or `qreport run`'s: see PAIRS);
# the data description says the past is empty by default; a block chart
# and per-block rows exist; a copy of the candidate with every tensor
# and node renamed pairs the same tensors (by structure) to the same
# SQNR; the what-to-change runs give the candidate the same next-token
# KL and top-1 agreement, and each measured layer a KL. Run for the plain
# and the RotaryEmbedding (position_ids input) variants.
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-onnx/numpy are missing. Models are made once into
# $QR_MODELS/llm (default: tests/models-cache/llm in the build tree).
set -u
: "${top_srcdir:?}" "${top_builddir:?}" "${QREPORT:?}"
. "$top_srcdir/tests/ort_lib.sh"
ort_ready

MODELS="${QR_MODELS:-$top_builddir/tests/models-cache}/llm"
# FLOAT:QUANT:WHO, WHO the runtime whose logits numpy starts from: ONNX
# Runtime, or `qreport run` where ONNX Runtime's MatMulNBits at
# accuracy_level 4 (int8 activations) rounds differently from the engine
# on these inputs (o_proj about 1e-4 apart, the logits 4e-3: an engine
# difference, not the metrics').
PAIRS="llama_f32:llama_q4_b32_sym_al0:ort llama_f32_rope:llama_q4_b32_asym_al4_rope:qreport"
missing=$(for p in $PAIRS; do p=${p%:*}; for m in ${p%%:*} ${p#*:}; do
	[ -f "$MODELS/$m.onnx" ] || echo "$m"; done; done)
[ -z "$missing" ] || { mkdir -p "$MODELS" && $PY \
	"$top_srcdir/tests/models/make_llama.py" "$MODELS" $missing \
	>"$MODELS/make.log" 2>&1; } ||
	{ echo "Bail out! making the models failed: see $MODELS/make.log"; exit 1; }

work=$(mktemp -d /tmp/qr-llmrep-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
n=0

# Token ids that look like text: the bytes of English sentences (the
# vocabulary has 512 entries), 3 rows of 16.
$PY - "$work" <<'PYEOF' || { echo "Bail out! could not write the tokens"; exit 1; }
import os, sys
import numpy as np
d = sys.argv[1]
text = ["The quick brown fox jumps over", "Quantized weights keep the ",
        "onnxruntime genai runs models"]
ids = np.array([[ord(c) for c in t[:16]] for t in text], np.int64)
np.save(os.path.join(d, "tokens.npy"), ids)
for r in range(ids.shape[0]):
    s = os.path.join(d, "row%d" % r)
    os.makedirs(s)
    S = ids.shape[1]
    np.save(os.path.join(s, "input_ids.npy"), ids[r:r + 1])
    np.save(os.path.join(s, "attention_mask.npy"), np.ones((1, S), np.int64))
    np.save(os.path.join(s, "position_ids.npy"),
            np.arange(S, dtype=np.int64)[None])
    for i in range(4):
        for kv in ("key", "value"):
            np.save(os.path.join(s, "past_key_values.%d.%s.npy" % (i, kv)),
                    np.zeros((1, 2, 0, 32), np.float32))
PYEOF

# logits WHO MODEL IN OUT: MODEL's logits on IN/*.npy as OUT/output_0.npy
logits() {
	if [ "$1" = ort ]; then
		node "$top_srcdir/tests/data/ort_llm_run.js" "$2" "$3" "$4"
		return
	fi
	set -- "$1" "$2" "$3" "$4" $(for i in "$3"/*.npy; do
		printf -- '--input %s=%s ' "$(basename "$i" .npy)" "$i"; done)
	w=$1 m=$2 in=$3 out=$4
	shift 4
	"$QREPORT" run "$m" "$@" -o "$out.qr" && cp "$out.qr/logits.npy" \
		"$out/output_0.npy"
}

for p in $PAIRS; do
	who=${p##*:}
	p=${p%:*}
	f=${p%%:*} q=${p#*:}
	d="$work/$q"
	mkdir -p "$d"
	n=$((n + 1))
	"$QREPORT" --float "$MODELS/$f.onnx" --quant "$MODELS/$q.onnx" \
		--data input_ids="$work/tokens.npy" -o "$d/report" --quiet \
		>"$d/log" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "not ok $n - $q: the report exits $rc: $(head -c 300 "$d/log")"
		continue
	fi
	echo "ok $n - $q: the report on 3 token sequences exits 0"
	bad=
	for r in 0 1 2; do
		for m in $f $q; do
			mkdir -p "$d/ort-$m-$r"
			logits $who "$MODELS/$m.onnx" "$work/row$r" \
				"$d/ort-$m-$r" >"$d/ort.log" 2>&1 ||
				bad="$m row $r"
		done
	done
	n=$((n + 1))
	if [ -n "$bad" ]; then
		echo "not ok $n - $q: $who failed on $bad: $(head -c 300 "$d/ort.log")"
		continue
	fi
	$PY - "$d" "$f" "$q" "$work/tokens.npy" >"$d/check" 2>&1 <<'PYEOF'
import json, os, sys
import numpy as np
d, f, q, tokens = sys.argv[1:5]
ids = np.load(tokens)
r = json.load(open(os.path.join(d, "report", "report.json")))
run = r["activation_runs"][0]
llm = run.get("llm")
bad = []
def close(what, got, want, rel=1e-6):
    if got is None or not np.isfinite(want) or \
       abs(got - want) > rel * max(abs(want), 1e-12):
        bad.append("%s: report %r, numpy %r" % (what, got, want))
def logsoftmax(x):
    x = x.astype(np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))
if llm is None:
    print("no llm object in activation_runs[0]")
    sys.exit(1)
kl_all, t1_all, t5_all, nf_all, nq_all = [], [], [], [], []
for s in range(ids.shape[0]):
    xf = np.load(os.path.join(d, "ort-%s-%d" % (f, s), "output_0.npy"))[0]
    xq = np.load(os.path.join(d, "ort-%s-%d" % (q, s), "output_0.npy"))[0]
    lf, lq = logsoftmax(xf), logsoftmax(xq)
    kl = (np.exp(lf) * (lf - lq)).sum(-1)
    t1 = (xf.argmax(-1) == xq.argmax(-1)).astype(np.float64)
    tf = np.argsort(-xf, -1, kind="stable")[:, :5]
    tq = np.argsort(-xq, -1, kind="stable")[:, :5]
    t5 = np.array([len(set(a) & set(b)) / 5.0 for a, b in zip(tf, tq)])
    nxt = ids[s, 1:]
    nf = -lf[np.arange(len(nxt)), nxt]
    nq = -lq[np.arange(len(nxt)), nxt]
    close("kl[%d]" % s, llm["kl"][s], kl.mean())
    close("top1[%d]" % s, llm["top1"][s], t1.mean(), 1e-9)
    close("top5[%d]" % s, llm["top5"][s], t5.mean(), 1e-9)
    ppl = llm["perplexity"] or {}
    close("ppl float[%d]" % s, (ppl.get("float_per_sample") or [None] * 9)[s],
          np.exp(nf.mean()))
    close("ppl quant[%d]" % s, (ppl.get("quant_per_sample") or [None] * 9)[s],
          np.exp(nq.mean()))
    kl_all += list(kl); t1_all += list(t1); t5_all += list(t5)
    nf_all += list(nf); nq_all += list(nq)
close("kl_mean", llm["kl_mean"], np.mean(kl_all))
close("kl_max", llm["kl_max"], np.max(kl_all))
close("top1_agree", llm["top1_agree"], np.mean(t1_all), 1e-9)
close("top5_overlap", llm["top5_overlap"], np.mean(t5_all), 1e-9)
ppl = llm["perplexity"] or {}
pf, pq = np.exp(np.mean(nf_all)), np.exp(np.mean(nq_all))
close("perplexity.float", ppl.get("float"), pf)
close("perplexity.quant", ppl.get("quant"), pq)
close("perplexity.change", ppl.get("change"), pq / pf - 1, 1e-5)
if ppl.get("tokens") != len(nf_all):
    bad.append("perplexity.tokens %r, want %d" % (ppl.get("tokens"), len(nf_all)))
if llm["positions"] != ids.size or llm["samples"] != ids.shape[0]:
    bad.append("positions %r samples %r" % (llm["positions"], llm["samples"]))
# the what-to-change runs (quick, on the same 3 samples): the candidate
# as it is has the same next-token KL and top-1 agreement, and every
# measured layer has a KL
sens = (r.get("sensitivity") or [{}])[0]
base = sens.get("base") or {}
close("sensitivity base kl", base.get("kl"), np.mean(kl_all))
close("sensitivity base top1", base.get("top1"), np.mean(t1_all), 1e-9)
for l in sens.get("layers") or []:
    for way in ("kept_float", "quant_only"):
        m = l.get(way)
        if m and not (isinstance(m.get("kl"), float) and m["kl"] >= 0):
            bad.append("sensitivity %s %s: kl %r" % (l["layer"], way, m.get("kl")))
if "KL (nats)" not in open(os.path.join(d, "report", "change.html")).read():
    bad.append("change.html has no KL column")
if [b["block"] for b in llm["blocks"]] != [0, 1, 2, 3]:
    bad.append("blocks %r" % [b["block"] for b in llm["blocks"]])
if "empty" not in (r["dataset"]["preprocessing"] or ""):
    bad.append("the data description does not say the past is empty")
charts = os.listdir(os.path.join(d, "report", "charts"))
for want in ("llm-blocks-q1.png", "int4-scales-q1.png", "int4-sqnr-q1.png"):
    if not [c for c in charts if c.endswith(want)]:
        bad.append("no charts/*%s" % want)
summary = open(os.path.join(d, "report", "summary.md")).read()
if "next token" not in summary or "perplexity" not in summary:
    bad.append("summary.md says nothing of the next token or perplexity")
index = open(os.path.join(d, "report", "index.html")).read()
if "top-1 agreement" not in index:
    bad.append("index.html says nothing of the next token")
print("# kl_mean %.6g top1 %.4g top5 %.4g ppl %.6g -> %.6g" % (
    np.mean(kl_all), np.mean(t1_all), np.mean(t5_all), pf, pq))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PYEOF
	if [ $? -eq 0 ]; then
		echo "ok $n - $q: next-token metrics and perplexities equal numpy's from $who's logits $(sed -n '1s/^# //p' "$d/check")"
	else
		echo "not ok $n - $q: the report's LLM metrics differ from numpy's"
		grep -v '^#' "$d/check" | head -12 | sed 's/^/# /'
	fi
	# the same candidate with every tensor and node renamed (inputs and
	# outputs kept): paired by structure, the same pairs and numbers
	n=$((n + 1))
	$PY - "$MODELS/$q.onnx" "$d/renamed.onnx" <<'PYEOF' &&
import sys
import onnx
m = onnx.load(sys.argv[1])
io = {v.name for v in m.graph.input} | {v.name for v in m.graph.output}
names = {}
def new(t):
    if t == "" or t in io:
        return t
    return names.setdefault(t, "t%d" % len(names))
for node in m.graph.node:
    node.input[:] = [new(t) for t in node.input]
    node.output[:] = [new(t) for t in node.output]
    node.name = ""
for t in m.graph.initializer:
    t.name = new(t.name)
del m.graph.value_info[:]
onnx.save(m, sys.argv[2])
PYEOF
	"$QREPORT" --float "$MODELS/$f.onnx" --quant "$d/renamed.onnx" \
		--data input_ids="$work/tokens.npy" -o "$d/renamed" --quiet \
		>"$d/renamed.log" 2>&1
	msg=$($PY - "$d/report/report.json" "$d/renamed/report.json" <<'PYEOF'
import json, sys
a, b = [{p["tensor"]: p for p in json.load(open(f))["activations"]}
        for f in sys.argv[1:3]]
mm = [t for t, p in a.items() if p["op"] == "MatMul"]
def same(x, y):
    return x == y or (x is not None and y is not None and abs(x - y) <= 1e-9)
diff = [t for t in a if t not in b or not same(a[t]["sqnr_db"], b[t]["sqnr_db"])]
diff += [t for t in b if t not in a]
print("%d of %d pairs (%d MatMul outputs) the same by structure%s" % (
    len(a) - len(diff), len(a), len([t for t in mm if t in b]),
    "; differ: " + ", ".join(diff[:5]) if diff else ""))
sys.exit(1 if diff or len(a) < 20 else 0)
PYEOF
	2>&1) && echo "ok $n - $q renamed: $msg" ||
		echo "not ok $n - $q renamed: ${msg:-no report: $(head -c 300 "$d/renamed.log")}"
done
echo "1..$n"
