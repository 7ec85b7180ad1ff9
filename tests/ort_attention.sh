#!/bin/sh
# ONNX Runtime's com.microsoft Attention, QAttention and
# EmbedLayerNormalization (src/ops/op_attention.c) against onnxruntime-node
# (graph optimisation off). Fixtures: tests/data/make_bert_fixtures.py.
#
#   - every single-node model of tests/data/ort-ops/attention/ (masks 1-D
#     right and left padding, 2-D, 3-D, none; unidirectional, scale,
#     qkv_hidden_sizes, attention_bias; QAttention u8s8 per tensor and per
#     column, u8u8 with a zero point; EmbedLayerNormalization with and
#     without segments, mask, position_ids, embedding_sum), run by
#     `qreport run` on its NAME/*.npy inputs and by tests/ort/crosscheck.js:
#     floats within a relative L2 error of 1e-5, integers (mask_index)
#     identical (with the pinned onnxruntime-node they match bit for bit;
#     the BERTs below differ in the last bits from SkipLayerNormalization
#     on, relative L2 below 1e-6 as in tests/ort_crosscheck.sh);
#   - tests/data/activations/bert_opt.onnx (ORT's BERT optimiser's layout)
#     and bert_opt_dyn.onnx (quantize_dynamic's: QAttention, MatMulInteger)
#     with every tensor an output (tests/models/expose_all.py), on a full
#     and a padded input, tensor by tensor with the same bounds;
#   - the whole report of bert_opt_dyn against bert_opt on 6 seeded
#     samples (--data NAME=DIR for each of the three int64 inputs): it
#     exits 0, every Attention (QAttention) and MatMul (MatMulInteger ->
#     Cast -> Mul) output is paired by name, and cosine and SQNR,
#     cumulative and local, are within 1e-4 of ONNX Runtime's (ort_agree).
#     bench/activations_ort.js feeds one input, so both models are run
#     there behind a Split of one stacked int64 input [3,1,16] into the
#     three (same tensor names), and the integer pairs that carry no
#     scale (the ids, their Casts, mask_index), which
#     tests/models/local_cut.py cannot cut and the per-tensor check above
#     already compares exactly, are left out of that comparison;
#   - the same report with the candidate's tensors and nodes renamed
#     (tests/models/make_renamed.py): the same pairs, each found by
#     structure (Attention and QAttention aligned as compute ops), with
#     the same numbers;
#   - models qreport refuses (exit 2, one line naming the node): a
#     QAttention with past, an Attention with do_rotary 1.
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-onnx/numpy are missing.
set -u
: "${top_srcdir:?}" "${QREPORT:?}"
. "$top_srcdir/tests/ort_lib.sh"
ort_ready

fx="$top_srcdir/tests/data/activations"
ops="$top_srcdir/tests/data/ort-ops/attention"
work=$(mktemp -d /tmp/qr-att-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
n=0

# the single-node models, on their own inputs
for f in "$ops"/*.onnx; do
	name=$(basename "$f" .onnx)
	case $name in bad_*) continue ;; esac
	set --
	for i in "$ops/$name"/*.npy; do
		set -- "$@" --input "$(basename "$i" .npy)=$i"
	done
	ort_run_check "$f" "$f" "$ops/$name" "$name" "$@"
done

# the BERT's inputs: 6 seeded samples, token ids below 100 (1 first, 0
# after the end), the mask ones then zeros (s0 unpadded), token types 0
# then 1; one folder per input for the report, one per sample for run
$PY - "$work" <<'PYEOF' || { echo "Bail out! could not write samples"; exit 1; }
import os, sys
import numpy as np
rng = np.random.RandomState(9)
S = 16
for k in range(6):
    ids = rng.randint(2, 100, (1, S)).astype(np.int64)
    ids[0, 0] = 1
    length = S if k == 0 else int(rng.randint(4, S))
    mask = (np.arange(S) < length).astype(np.int64)[None]
    ids[0, length:] = 0
    tt = (np.arange(S) >= rng.randint(1, length)).astype(np.int64)[None] * mask
    for name, a in (("input_ids", ids), ("attention_mask", mask), ("token_type_ids", tt)):
        for d, f in ((name, "s%d.npy" % k), ("in%d" % k, name + ".npy")):
            os.makedirs(os.path.join(sys.argv[1], d), exist_ok=True)
            np.save(os.path.join(sys.argv[1], d, f), a)
PYEOF

# bert_opt and bert_opt_dyn, every tensor, on s0 (no padding) and s1
for m in bert_opt bert_opt_dyn; do
	$PY "$top_srcdir/tests/models/expose_all.py" "$fx/$m.onnx" \
		"$work/$m.all.onnx" ||
		{ echo "Bail out! could not expose $m.onnx's tensors"; exit 1; }
	for k in 0 1; do
		in="$work/in$k"
		ort_run_check "$work/$m.all.onnx" "$work/$m.all.onnx" "$in" \
			"$m every tensor (sample $k, $($PY -c "import numpy, sys; print(int(numpy.load(sys.argv[1]).sum()))" "$in/attention_mask.npy") tokens)" \
			--input "input_ids=$in/input_ids.npy" \
			--input "attention_mask=$in/attention_mask.npy" \
			--input "token_type_ids=$in/token_type_ids.npy"
	done
done

# the whole report
"$QREPORT" --float "$fx/bert_opt.onnx" --quant "$fx/bert_opt_dyn.onnx" \
	--data "input_ids=$work/input_ids" \
	--data "attention_mask=$work/attention_mask" \
	--data "token_type_ids=$work/token_type_ids" \
	-o "$work/rep" --quiet 2>"$work/rep.err"
rc=$?
n=$((n + 1))
if [ $rc -eq 0 ]; then
	echo "ok $n - report of bert_opt_dyn against bert_opt: exit 0"
else
	echo "not ok $n - report of bert_opt_dyn against bert_opt: exit $rc: $(head -c 300 "$work/rep.err")"
fi
# every Attention and MatMul output of bert_opt paired by name (in
# bert_opt_dyn a QAttention's, and a Mul's after MatMulInteger)
$PY "$top_srcdir/tests/models/pairs_by_name.py" "$fx/bert_opt.onnx" "$fx/bert_opt_dyn.onnx" \
	"$work/rep/report.json" Attention=QAttention MatMul=Mul >"$work/pairs" 2>&1
rc=$?
n=$((n + 1))
if [ $rc -eq 0 ]; then
	echo "ok $n - every Attention and MatMul output paired by name ($(grep -c '^ok' "$work/pairs") tensors)"
else
	echo "not ok $n - some Attention or MatMul output not paired by name"
	grep -v '^ok' "$work/pairs" | sed 's/^/# /'
fi
# the candidate with every tensor and node renamed (as an obfuscating
# tool would): each pair found by structure instead, with the same numbers
$PY "$top_srcdir/tests/models/make_renamed.py" "$fx/bert_opt_dyn.onnx" \
	"$work/renamed.onnx" ||
	{ echo "Bail out! could not rename bert_opt_dyn.onnx"; exit 1; }
"$QREPORT" --float "$fx/bert_opt.onnx" --quant "$work/renamed.onnx" \
	--data "input_ids=$work/input_ids" \
	--data "attention_mask=$work/attention_mask" \
	--data "token_type_ids=$work/token_type_ids" \
	-o "$work/rep_renamed" --quiet 2>"$work/rep_renamed.err"
$PY - "$work/rep/report.json" "$work/rep_renamed/report.json" \
	>"$work/renamed" 2>&1 <<'PYEOF'
import json, sys
a, b = ({p["tensor"]: p for p in json.load(open(f))["activations"]}
        for f in sys.argv[1:3])
keys = ("cosine_mean", "cosine_min", "sqnr_db", "local_sqnr_db")
bad = sorted(set(a) ^ set(b))
bad += [t for t in b if t in a and (b[t]["match"] != "structure" or
                                     any(a[t][k] != b[t][k] for k in keys))]
print(len(b), "pairs;", "differ: " + " ".join(bad) if bad else "all equal")
sys.exit(1 if bad or not any("attention_out" in t for t in b) else 0)
PYEOF
rc=$?
n=$((n + 1))
if [ $rc -eq 0 ]; then
	echo "ok $n - renamed candidate: every pair found by structure, same numbers ($(cat "$work/renamed"))"
else
	echo "not ok $n - renamed candidate: $(cat "$work/renamed") $(head -c 300 "$work/rep_renamed.err")"
fi
# without --data: token ids over the vocabulary's 100 rows, token types
# over 2, the mask ones (every key attends), and no warning about it
"$QREPORT" --float "$fx/bert_float.onnx" --quant "$fx/bert_opt_dyn.onnx" \
	--samples 4 -o "$work/rep_random" --quiet 2>"$work/rep_random.err"
rc=$?
$PY - "$work/rep_random/report.json" >"$work/random" 2>&1 <<'PYEOF'
import json, sys
ds = json.load(open(sys.argv[1]))["dataset"]
want = ["input_ids: random uniform 0..99 int64 (rows looked up by "
        "'/embeddings/word_embeddings/Gather')",
        "attention_mask: ones int64 (an attention mask: every position "
        "attends)", "token_type_ids: random uniform 0..1 int64"]
missing = [w for w in want if w not in ds["preprocessing"]]
print(ds["preprocessing"], "; warnings:", ds["warnings"])
sys.exit(1 if missing or ds["warnings"] or not ds["random"] else 0)
PYEOF
rc2=$?
n=$((n + 1))
if [ $rc -eq 0 ] && [ $rc2 -eq 0 ]; then
	echo "ok $n - random data for BERT: ids over the vocabulary, mask ones, no warning"
else
	echo "not ok $n - random data for BERT: exit $rc: $(cat "$work/random") $(head -c 300 "$work/rep_random.err")"
fi
# against ONNX Runtime: both models behind one stacked input, the samples
# stacked under the report's sample names, the report without the
# integer pairs that carry no scale
$PY - "$work" "$fx" <<'PYEOF' ||
import json, os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
work, fx = sys.argv[1:3]
names = ["input_ids", "attention_mask", "token_type_ids"]
for m, out in (("bert_opt", "f.onnx"), ("bert_opt_dyn", "q.onnx")):
    model = onnx.load(os.path.join(fx, m + ".onnx"))
    g = model.graph
    assert [i.name for i in g.input] == names
    nodes = [helper.make_node("Split", ["x"], [t + "_stacked" for t in names],
                              name="x_split", axis=0)]
    nodes += [helper.make_node("Squeeze", [t + "_stacked", "x_axes"], [t],
                               name=t + "_unstack") for t in names]
    old = list(g.node)
    del g.node[:]
    g.node.extend(nodes + old)
    del g.input[:]
    g.input.append(helper.make_tensor_value_info("x", TensorProto.INT64, [3, 1, 16]))
    g.initializer.append(numpy_helper.from_array(np.array([0], np.int64), "x_axes"))
    onnx.save(model, os.path.join(work, out))
r = json.load(open(os.path.join(work, "rep", "report.json")))
os.makedirs(os.path.join(work, "stacked"))
for k, s in enumerate(r["dataset"]["sample_names"]):
    np.save(os.path.join(work, "stacked", s),
            np.stack([np.load(os.path.join(work, t, "s%d.npy" % k)) for t in names]))
r["activations"] = [p for p in r["activations"]
                    if p["quant_dtype"] in ("float", "float16") or p["scale"] is not None]
json.dump(r, open(os.path.join(work, "report.json"), "w"))
PYEOF
	{ echo "Bail out! preparing the ONNX Runtime models failed"; exit 1; }
$PY "$top_srcdir/tests/models/expose_all.py" "$work/f.onnx" "$work/f.all.onnx" ||
	{ echo "Bail out! preparing the ONNX Runtime models failed"; exit 1; }
mkdir "$work/agree"
ort_agree "$work/f.all.onnx" "$work/q.onnx" "$work/report.json" \
	"$work/stacked" "$work/agree"
rc=$?
n=$((n + 1))
case $rc in
0) echo "ok $n - report: cosine and SQNR, cumulative and local, within 1e-4 of ONNX Runtime ($(grep -c '^ok' "$work/agree/ort") pairs)" ;;
2) echo "Bail out! preparing the ONNX Runtime models failed: $(head -c 300 "$work/agree/cut")"; exit 1 ;;
*) echo "not ok $n - report: differs from ONNX Runtime"
	grep '^not ok' "$work/agree/ort" | sed 's/^/# /' ;;
esac
tail -1 "$work/agree/ort"

# models qreport must refuse: exit 2 and one line that names the node
for bad in bad_qatt_past:qattention_past bad_att_rotary:attention_rotary; do
	name=${bad%%:*} node=${bad#*:}
	set --
	for i in "$ops/$name"/*.npy; do
		set -- "$@" --input "$(basename "$i" .npy)=$i"
	done
	"$QREPORT" run "$ops/$name.onnx" "$@" -o "$work/$name" \
		>"$work/$name.out" 2>"$work/$name.err"
	rc=$?
	lines=$(wc -l <"$work/$name.err")
	n=$((n + 1))
	if [ $rc -eq 2 ] && [ "$lines" -eq 1 ] &&
	   grep -q "'$node'" "$work/$name.err"; then
		echo "ok $n - $name refused: $(cat "$work/$name.err")"
	else
		echo "not ok $n - $name: exit $rc (want 2), $lines line(s) naming '$node' wanted: $(head -c 300 "$work/$name.err")"
	fi
done
echo "1..$n"
