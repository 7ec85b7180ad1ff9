#!/bin/sh
# llm.sh: the report on a TinyLlama-shaped decoder against ONNX Runtime.
#
#   bench/llm.sh [QREPORT] [DIR]
#
# Models (made once into DIR, default /tmp/qr-llm-bench, by
# tests/models/make_llama.py with EXTERNAL data): a Llama in
# onnxruntime-genai's form, 22 layers, hidden 2048, 32 query / 4 key-value
# heads of 64, vocabulary 32000, MLP 5632, random weights (about 1.1 G
# parameters, 4.4 GB in float), float (llama_f32) and int4
# (llama_q4_b32_asym_al4: MatMulNBits block 32 with zero points,
# accuracy_level 4, a GatherBlockQuantized embedding). Environment
# LAYERS, HIDDEN, HEADS, KV_HEADS, VOCAB, INTER scale it down.
#
# Rows, each on SAMPLES (4) sequences of TOKENS (128) seeded token ids,
# prefill (an empty KV cache):
#   report   the whole report, `qreport --float --quant --data
#            input_ids=tokens.npy --sensitivity none` (loading, weights,
#            every sample through the float model and the int4 one's
#            cumulative and local runs, the LLM metrics, charts, pages),
#            against
#            bench/llm_ort.js compare: both models with every tensor an
#            output (tests/models/expose_all.py's way, done beforehand
#            and not timed), graph optimisation off, each sample through
#            both and every common output compared. Wall time and peak
#            RSS from /usr/bin/time.
#   quick    the same report as users get it by default, with the quick
#            what-to-change runs (--sensitivity quick), against the same
#            ORT script (which has nothing like them).
#   engine   `qreport run` of the int4 model on one sequence (--repeat
#            RUNS: the median) against bench/llm_ort.js time with graph
#            optimisation on and off, THREADS (2) threads each.
# ratio = qreport / ORT; per token = time / (SAMPLES x TOKENS) for the
# report, / TOKENS for one run. The check: each report's peak RSS is at
# most the float + int4 model bytes (with their data) + 512 MiB.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
QREPORT=${1:-${QREPORT:-$top/qreport}}
DIR=${2:-/tmp/qr-llm-bench}
LAYERS=${LAYERS:-22} HIDDEN=${HIDDEN:-2048} HEADS=${HEADS:-32}
KV_HEADS=${KV_HEADS:-4} VOCAB=${VOCAB:-32000} INTER=${INTER:-5632}
SAMPLES=${SAMPLES:-4} TOKENS=${TOKENS:-128} RUNS=${RUNS:-3}
THREADS=${THREADS:-2}
PY=/usr/bin/python3
F=llama_f32 Q=llama_q4_b32_asym_al4

die() { echo "llm.sh: $*" >&2; exit 1; }
[ -x "$QREPORT" ] || die "no qreport binary at '$QREPORT' (pass it as \$1)"
command -v node >/dev/null 2>&1 || die "node is not installed"
[ -d "$top/tests/ort/node_modules/onnxruntime-node" ] ||
	die "onnxruntime-node missing: cd tests/ort && npm ci --ignore-scripts"
[ -x /usr/bin/time ] || die "/usr/bin/time is missing (Debian's time)"
size="--vocab $VOCAB --hidden $HIDDEN --layers $LAYERS --heads $HEADS"
size="$size --kv-heads $KV_HEADS --inter $INTER --max-pos 2048"
mkdir -p "$DIR"
if [ ! -f "$DIR/$Q.onnx" ] || [ "$(cat "$DIR/size" 2>/dev/null)" != "$size" ]; then
	echo "making the models in $DIR ($size) ..." >&2
	$PY "$top/tests/models/make_llama.py" "$DIR" $F $Q $size --external \
		>"$DIR/make.log" 2>&1 || die "making the models failed: see $DIR/make.log"
	rm -f "$DIR"/*_all.onnx
	echo "$size" >"$DIR/size"
fi
# every intermediate tensor an output, the weights left in the data file
for m in $F $Q; do
	[ -f "$DIR/${m}_all.onnx" ] && continue
	$PY - "$DIR/$m.onnx" "$DIR/${m}_all.onnx" <<'PYEOF' || die "exposing $m failed"
import sys
import onnx
m = onnx.load(sys.argv[1], load_external_data=False)
have = {o.name for o in m.graph.output}
for n in m.graph.node:
    for t in n.output:
        if n.op_type != "Constant" and t and t not in have:
            m.graph.output.append(onnx.ValueInfoProto(name=t))
            have.add(t)
onnx.save(m, sys.argv[2])
PYEOF
done
work=$(mktemp -d /tmp/qr-llm-bench-run-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
$PY - "$work" "$SAMPLES" "$TOKENS" "$VOCAB" "$LAYERS" "$KV_HEADS" \
	"$((HIDDEN / HEADS))" <<'PYEOF' || die "writing the tokens failed"
import os, sys
import numpy as np
d = sys.argv[1]
n, s, vocab, layers, kv, head = map(int, sys.argv[2:])
ids = np.random.RandomState(7).randint(0, vocab, (n, s)).astype(np.int64)
np.save(os.path.join(d, "tokens.npy"), ids)
for r in range(n):
    row = os.path.join(d, "row%d" % r)
    os.makedirs(row)
    np.save(os.path.join(row, "input_ids.npy"), ids[r:r + 1])
    np.save(os.path.join(row, "attention_mask.npy"), np.ones((1, s), np.int64))
    for i in range(layers):
        for k in ("key", "value"):
            np.save(os.path.join(row, "past_key_values.%d.%s.npy" % (i, k)),
                    np.zeros((1, kv, 0, head), np.float32))
PYEOF

bytes() { # a model and its data file
	echo $(( $(stat -c %s "$1") + $(stat -c %s "$1.data" 2>/dev/null || echo 0) ))
}
fb=$(bytes "$DIR/$F.onnx") qb=$(bytes "$DIR/$Q.onnx")

/usr/bin/time -f "%e %M" -o "$work/t.qr" "$QREPORT" --float "$DIR/$F.onnx" \
	--quant "$DIR/$Q.onnx" --data input_ids="$work/tokens.npy" \
	--samples "$SAMPLES" --sensitivity none -o "$work/report" --quiet \
	>"$work/qr.log" 2>&1 ||
	die "the report failed: $(tail -n 3 "$work/qr.log")"
/usr/bin/time -f "%e %M" -o "$work/t.qs" "$QREPORT" --float "$DIR/$F.onnx" \
	--quant "$DIR/$Q.onnx" --data input_ids="$work/tokens.npy" \
	--samples "$SAMPLES" -o "$work/report_quick" --quiet \
	>"$work/qs.log" 2>&1 ||
	die "the report with its what-to-change runs failed: $(tail -n 3 "$work/qs.log")"
/usr/bin/time -f "%e %M" -o "$work/t.ort" node "$here/llm_ort.js" compare \
	"$DIR/${F}_all.onnx" "$DIR/${Q}_all.onnx" "$work" "$SAMPLES" \
	>"$work/ort.log" 2>&1 || die "ORT failed: $(tail -n 3 "$work/ort.log")"
set -- $(cat "$work/t.qr") $(cat "$work/t.ort") $(cat "$work/t.qs")
qs=$1 qk=$2 os=$3 ok=$4 ss=$5 sk=$6
ntok=$((SAMPLES * TOKENS))
limit=$(( (fb + qb) / 1024 + 512 * 1024 ))
check=FAILED
[ "$qk" -le "$limit" ] && check=ok
scheck=FAILED
[ "$sk" -le "$limit" ] && scheck=ok

set --
for f in "$work"/row0/*.npy; do
	set -- "$@" --input "$(basename "$f" .npy)=$f"
done
qrun=$("$QREPORT" run "$DIR/$Q.onnx" "$@" -o "$work/run" --threads "$THREADS" \
	--repeat "$RUNS" 2>&1 >/dev/null | tail -n 1 | cut -d' ' -f1)
oon=$(node "$here/llm_ort.js" time "$DIR/$Q.onnx" "$work/row0" "$RUNS" all \
	"$THREADS" | cut -d' ' -f1)
ooff=$(node "$here/llm_ort.js" time "$DIR/$Q.onnx" "$work/row0" "$RUNS" \
	disabled "$THREADS" | cut -d' ' -f1)

echo "models: float $((fb >> 20)) MiB, int4 $((qb >> 20)) MiB ($size)"
echo "data: $SAMPLES x $TOKENS tokens, prefill; $(sed -n 's/^# //p' "$work/ort.log")"
awk -v qs="$qs" -v os="$os" -v qk="$qk" -v ok="$ok" -v nt="$ntok" \
    -v ss="$ss" -v sk="$sk" \
    -v t="$TOKENS" -v qr="$qrun" -v on="$oon" -v off="$ooff" 'BEGIN {
	printf "| | qreport | ORT | ratio | qreport per token | ORT per token |\n"
	printf "|---|---:|---:|---:|---:|---:|\n"
	printf "| whole report vs ORT script, wall | %.1f s | %.1f s | %.2f | %.1f ms | %.1f ms |\n",
		qs, os, qs / os, 1000 * qs / nt, 1000 * os / nt
	printf "| whole report vs ORT script, peak RSS | %.0f MiB | %.0f MiB | %.2f | | |\n",
		qk / 1024, ok / 1024, qk / ok
	printf "| with the quick what-to-change runs, wall | %.1f s | %.1f s | %.2f | %.1f ms | %.1f ms |\n",
		ss, os, ss / os, 1000 * ss / nt, 1000 * os / nt
	printf "| with the quick what-to-change runs, peak RSS | %.0f MiB | %.0f MiB | %.2f | | |\n",
		sk / 1024, ok / 1024, sk / ok
	printf "| int4 run, ORT optimised | %.0f ms | %.0f ms | %.2f | %.2f ms | %.2f ms |\n",
		qr, on, qr / on, qr / t, on / t
	printf "| int4 run, ORT literal | %.0f ms | %.0f ms | %.2f | %.2f ms | %.2f ms |\n",
		qr, off, qr / off, qr / t, off / t
}'
echo "peak RSS check: $((qk / 1024)) MiB <= float + int4 + 512 MiB = $((limit / 1024)) MiB: $check"
echo "peak RSS check, quick what-to-change runs: $((sk / 1024)) MiB: $scheck"
grep -o '"kl_mean":[^,]*,"kl_max":[^,]*,"top1_agree":[^,]*,"top5_overlap":[^,]*' \
	"$work/report/report.json" | head -n 1
[ "$check" = ok ] && [ "$scheck" = ok ]
