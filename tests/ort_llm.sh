#!/bin/sh
# Small Llama-style decoders as onnxruntime-genai's model builder writes
# them (tests/models/make_llama.py: GroupQueryAttention with rotary or
# separate RotaryEmbedding, RMS norms, float MatMul or int4 MatMulNBits
# at block 32 and 128, symmetric and with zero points, accuracy_level 0
# and 4, a GatherBlockQuantized embedding), run by `qreport run` and by
# onnxruntime-node (tests/ort/crosscheck.js, graph optimisation off):
#
#   - the prompt: input_ids [2,7], attention_mask of ones, an empty past
#     (past_key_values.L.key/value [2,2,0,32], read from 0-length .npy);
#   - one decode step: input_ids [2,1], attention_mask [2,8], the past
#     being ONNX Runtime's present from the prompt.
#
# logits and every present key and value within a relative L2 error of
# 1e-6 of ONNX Runtime's: the attention ops are bit for bit
# (tests/test_llm_ops.c), the RMS norms and MatMulNBits agree to rounding
# (doc/ort-agreement.md), and those few ulps are all that reaches the
# logits (about 3e-7 to 7e-7).
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-onnx/numpy are missing. Models are made once into
# $QR_MODELS/llm (default: tests/models-cache/llm in the build tree).
set -u
: "${top_srcdir:?}" "${top_builddir:?}" "${QREPORT:?}"
. "$top_srcdir/tests/ort_lib.sh"
ort_ready

MODELS="${QR_MODELS:-$top_builddir/tests/models-cache}/llm"
NAMES="llama_f32 llama_f32_rope llama_q4_b32_sym_al0 llama_q4_b32_asym_al4
llama_q4_b128_asym_al0 llama_q4_b128_sym_al4 llama_q4_b32_asym_al4_rope"
missing=
for m in $NAMES; do
	[ -f "$MODELS/$m.onnx" ] || missing="$missing $m"
done
if [ -n "$missing" ]; then
	mkdir -p "$MODELS"
	$PY "$top_srcdir/tests/models/make_llama.py" "$MODELS" $missing \
		>"$MODELS/make.log" 2>&1 ||
		{ echo "Bail out! making the models failed: see $MODELS/make.log"; exit 1; }
fi

work=$(mktemp -d /tmp/qr-llm-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
n=0

# inputs DIR B S PAST ROPE [PRESENT_DIR]: input_ids (seeded), a mask of
# ones over PAST + S, position_ids (ROPE 1) and the past, empty or
# PRESENT_DIR's output_1.npy ... (ONNX Runtime's presents, in order)
inputs() {
	$PY - "$@" <<'PYEOF'
import os, sys
import numpy as np
d, b, s, past, rope = sys.argv[1], *map(int, sys.argv[2:6])
prev = sys.argv[6] if len(sys.argv) > 6 else None
os.makedirs(d, exist_ok=True)
rng = np.random.RandomState(5 + past)
np.save(os.path.join(d, "input_ids.npy"), rng.randint(0, 512, (b, s)).astype(np.int64))
np.save(os.path.join(d, "attention_mask.npy"), np.ones((b, past + s), np.int64))
if rope:
    np.save(os.path.join(d, "position_ids.npy"),
            np.tile(np.arange(past, past + s, dtype=np.int64), (b, 1)))
for i in range(4):
    for j, kv in enumerate(("key", "value")):
        a = (np.load(os.path.join(prev, "output_%d.npy" % (1 + 2 * i + j)))
             if prev else np.zeros((b, 2, 0, 32), np.float32))
        np.save(os.path.join(d, "past_key_values.%d.%s.npy" % (i, kv)), a)
PYEOF
}

# check MODEL DIR LABEL: qreport run on DIR/*.npy against ONNX Runtime
check() {
	model=$1 in=$2 label=$3
	set --
	for f in "$in"/*.npy; do
		set -- "$@" --input "$(basename "$f" .npy)=$f"
	done
	n=$((n + 1))
	if ! "$QREPORT" run "$model" "$@" -o "$in.qr" >"$in.log" 2>&1; then
		echo "not ok $n - $label: qreport run failed: $(head -c 300 "$in.log")"
		return
	fi
	(cd "$top_srcdir/tests/ort" && node crosscheck.js "$model" "$in" \
		"$in.qr" --float-tol 1e-6) >"$in.cmp" 2>&1
	if [ $? -eq 0 ]; then
		echo "ok $n - $label matches ONNX Runtime$(sed -n '$s/^#[^:]*:/:/p' "$in.cmp")"
	else
		echo "not ok $n - $label differs from ONNX Runtime"
		grep -v '^ok' "$in.cmp" | head -12 | sed 's/^/# /'
	fi
}

for m in $NAMES; do
	rope=0
	case $m in *_rope) rope=1 ;; esac
	d="$work/$m"
	inputs "$d/prompt" 2 7 0 $rope ||
		{ echo "Bail out! could not write inputs"; exit 1; }
	check "$MODELS/$m.onnx" "$d/prompt" "$m prompt (7 tokens, empty past)"
	mkdir -p "$d/ort"
	node "$top_srcdir/tests/data/ort_llm_run.js" "$MODELS/$m.onnx" \
		"$d/prompt" "$d/ort" >"$d/ort.log" 2>&1 &&
		inputs "$d/step" 2 1 7 $rope "$d/ort" ||
		{ echo "Bail out! ONNX Runtime's prompt run failed: $(head -c 300 "$d/ort.log")"; exit 1; }
	check "$MODELS/$m.onnx" "$d/step" "$m decode step (past 7)"
done
echo "1..$n"
