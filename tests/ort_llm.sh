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
#     being ONNX Runtime's present from the prompt;
#
# logits and every present key and value equal to ONNX Runtime's, bit
# for bit, for the float models and those at accuracy_level 4: the
# attention ops (tests/test_llm_ops.c), the RMS norms
# (tests/ort_norm.sh), float MatMul and MatMulNBits at level 4 all give
# ORT's bits. That matters at level 4 beyond neatness: MatMulNBits rounds
# A to int8, so one last-bit difference in its input (an RMS norm's)
# would move a code by a step, about 1/254 of that element's weight. At
# accuracy_level 0 MatMulNBits agrees to rounding, and those few ulps are
# all that reaches the logits: within a relative L2 error of 1e-6 (about
# 3e-7 to 7e-7). Then, for the level-4 models' prompts of 16 and 128
# tokens (one sequence), every MatMulNBits node is cut out and fed the
# input ONNX Runtime gives it in the whole model: its output must be
# ONNX Runtime's, bit for bit.
#
# Then MatMulNBits alone (4 bits, accuracy_level 4, random codes, scales
# of both signs, A of rows of different magnitudes), for M = 1, 16, 17
# and 128 rows, blocks of 32 (K 192: a group of four blocks and two
# more) and 128, with and without zero points and bias, N not a multiple
# of 4: qreport's Y identical to ONNX Runtime's, bit for bit, with graph
# optimisation off (one thread) and on (two threads); blocks of 16 and
# 64, 2 and 8 bits within a relative L2 error of 1e-6.
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
	tol=0
	case $model in *_al0*) tol=1e-6 ;; esac
	(cd "$top_srcdir/tests/ort" && node crosscheck.js "$model" "$in" \
		"$in.qr" --float-tol $tol) >"$in.cmp" 2>&1
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
# nodes MODEL DIR LABEL: each MatMulNBits of MODEL cut out alone
# (DIR/node<i>.onnx) and fed the input ONNX Runtime gives it in the whole
# model on DIR/in/*.npy (written by ONNX Runtime as DIR/n<i>/A.npy, its
# output as DIR/n<i>/Y.npy); qreport's output identical to ONNX
# Runtime's, bit for bit, for every node
nodes() {
	model=$1 d=$2 label=$3
	n=$((n + 1))
	if ! $PY - "$model" "$d" >"$d/cut.log" 2>&1 <<'PYEOF'
import os, sys
import onnx
from onnx import helper
m = onnx.load(sys.argv[1])
d = sys.argv[2]
inits = {t.name: t for t in m.graph.initializer}
names = []
for i, nd in enumerate(x for x in m.graph.node if x.op_type == "MatMulNBits"):
    g = helper.make_graph(
        [nd], "node",
        [helper.make_tensor_value_info(nd.input[0], onnx.TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info(nd.output[0], onnx.TensorProto.FLOAT, None)],
        [inits[t] for t in nd.input[1:] if t in inits])
    onnx.save(helper.make_model(g, opset_imports=m.opset_import,
                                ir_version=m.ir_version),
              os.path.join(d, "node%d.onnx" % i))
    names.append("%s %s" % (nd.input[0], nd.output[0]))
    m.graph.output.append(onnx.ValueInfoProto(name=nd.input[0]))
    m.graph.output.append(onnx.ValueInfoProto(name=nd.output[0]))
onnx.save(m, os.path.join(d, "all.onnx"))
open(os.path.join(d, "nodes.txt"), "w").write("\n".join(names) + "\n")
PYEOF
	then
		echo "not ok $n - $label: cutting the nodes failed: $(tail -n 2 "$d/cut.log")"
		return
	fi
	if ! node - "$top_srcdir" "$d" >"$d/ort.log" 2>&1 <<'JSEOF'
const fs = require('fs');
const path = require('path');
const [top, d] = process.argv.slice(2);
const ort = require(path.join(top, 'tests', 'ort', 'node_modules', 'onnxruntime-node'));
const npy = require(path.join(top, 'tests', 'ort', 'npy'));
(async () => {
  const s = await ort.InferenceSession.create(path.join(d, 'all.onnx'),
    { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
  const feeds = {};
  for (const n of s.inputNames) {
    const a = npy.read(path.join(d, 'in', `${n}.npy`));
    feeds[n] = new ort.Tensor(a.type, a.data, a.dims);
  }
  const out = await s.run(feeds);
  const lines = fs.readFileSync(path.join(d, 'nodes.txt'), 'utf8').trim().split('\n');
  lines.forEach((l, i) => {
    const [a, y] = l.split(' ');
    fs.mkdirSync(path.join(d, `n${i}`));
    for (const [name, file] of [[a, 'A'], [y, 'Y']]) {
      const t = out[name];
      npy.write(path.join(d, `n${i}`, `${file}.npy`), t.type, t.dims, t.data);
    }
  });
})().catch((e) => { console.error(e.message); process.exit(1); });
JSEOF
	then
		echo "not ok $n - $label: ONNX Runtime failed: $(head -c 300 "$d/ort.log")"
		return
	fi
	i=0 bad=
	while read -r a y; do
		if ! "$QREPORT" run "$d/node$i.onnx" --input "$a=$d/n$i/A.npy" \
			-o "$d/q$i" >"$d/q$i.log" 2>&1; then
			bad="$bad node$i (qreport failed)"
		else
			bad="$bad$($PY - "$d/n$i/Y.npy" "$d/q$i" "$i" <<'PYEOF'
import os, sys
import numpy as np
o = np.load(sys.argv[1])
q = np.load(os.path.join(sys.argv[2], os.listdir(sys.argv[2])[0]))
if q.shape != o.shape or not np.array_equal(q.view(np.uint32), o.view(np.uint32)):
    r = np.linalg.norm(q.astype(np.float64) - o) / np.linalg.norm(o)
    print(" node%s (%d of %d differ, rel L2 %.2e)" % (
        sys.argv[3], (q != o).sum(), o.size, r), end="")
PYEOF
)"
		fi
		i=$((i + 1))
	done <"$d/nodes.txt"
	if [ -z "$bad" ]; then
		echo "ok $n - $label: $i MatMulNBits nodes on ONNX Runtime's inputs, bit for bit"
	else
		echo "not ok $n - $label: MatMulNBits differs from ONNX Runtime:$bad" | head -c 600
		echo
	fi
}

for m in llama_q4_b32_asym_al4 llama_q4_b128_sym_al4; do
	for s in 16 128; do
		d="$work/$m-$s"
		inputs "$d/in" 1 "$s" 0 0 ||
			{ echo "Bail out! could not write inputs"; exit 1; }
		nodes "$MODELS/$m.onnx" "$d" "$m prompt ($s tokens, empty past)"
	done
done

# MatMulNBits alone: nbits_model DIR M K N BLOCK ZP BIAS BITS SEED writes
# DIR/m.onnx and DIR/A.npy
nbits_model() {
	$PY - "$@" <<'PYEOF'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
m, k, n, bs, zp, bias, bits, seed = map(int, sys.argv[2:10])
os.makedirs(d, exist_ok=True)
rng = np.random.RandomState(seed)
kb, per = (k + bs - 1) // bs, 8 // bits
codes = rng.randint(0, 1 << bits, (n, kb, bs)).astype(np.uint8)
b = np.zeros((n, kb, bs // per), np.uint8)
for j in range(per):
    b |= codes[..., j::per] << (bits * j)
sc = (rng.rand(n * kb) * 0.02 + 0.001).astype(np.float32)
sc[::7] *= -1
inits = [numpy_helper.from_array(b, "B"), numpy_helper.from_array(sc, "S")]
ins = ["A", "B", "S"]
if zp:
    z = rng.randint(0, 1 << bits, (n, (kb + per - 1) // per * per))
    zz = np.zeros((n, z.shape[1] // per), np.uint8)
    for j in range(per):
        zz |= (z[:, j::per] << (bits * j)).astype(np.uint8)
    inits.append(numpy_helper.from_array(zz.reshape(-1), "Z"))
    ins.append("Z")
if bias:
    ins += [""] * (5 - len(ins)) + ["bias"]
    inits.append(numpy_helper.from_array(rng.randn(n).astype(np.float32),
                                         "bias"))
node = helper.make_node("MatMulNBits", ins, ["Y"], domain="com.microsoft",
                        K=k, N=n, bits=bits, block_size=bs,
                        accuracy_level=4)
g = helper.make_graph(
    [node], "nbits",
    [helper.make_tensor_value_info("A", TensorProto.FLOAT, [1, m, k])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, m, n])],
    inits)
mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                         helper.make_opsetid("com.microsoft", 1)])
mo.ir_version = 8
onnx.save(mo, os.path.join(d, "m.onnx"))
a = rng.randn(1, m, k) * np.exp(rng.randn(1, m, 1))
np.save(os.path.join(d, "A.npy"), a.astype(np.float32))
PYEOF
}

# nbits_check DIR TOL LABEL: Y of qreport run against ONNX Runtime's,
# optimisation off on one thread and on (all) on two; TOL 0: identical
nbits_check() {
	n=$((n + 1))
	if ! "$QREPORT" run "$1/m.onnx" --input "A=$1/A.npy" -o "$1/qr" \
		>"$1/log" 2>&1; then
		echo "not ok $n - $3: qreport run failed: $(head -c 300 "$1/log")"
		return
	fi
	if r=$(node - "$top_srcdir" "$1" "$2" 2>&1 <<'JSEOF'
const path = require('path');
const [top, dir, tol] = process.argv.slice(2);
const ort = require(path.join(top, 'tests', 'ort', 'node_modules', 'onnxruntime-node'));
const npy = require(path.join(top, 'tests', 'ort', 'npy'));
(async () => {
  const a = npy.read(path.join(dir, 'A.npy'));
  const q = npy.read(path.join(dir, 'qr', 'Y.npy')).data;
  const out = [];
  for (const [opt, th] of [['disabled', 1], ['all', 2]]) {
    const s = await ort.InferenceSession.create(path.join(dir, 'm.onnx'),
      { graphOptimizationLevel: opt, intraOpNumThreads: th });
    const o = (await s.run({ A: new ort.Tensor(a.type, a.data, a.dims) })).Y.data;
    let diff = 0, see = 0, soo = 0;
    for (let i = 0; i < o.length; i++) {
      if (!Object.is(o[i], q[i])) diff++;
      see += (o[i] - q[i]) ** 2; soo += o[i] ** 2;
    }
    const rel = Math.sqrt(see / soo);
    out.push(`${opt}: ${diff} of ${o.length} differ, rel L2 ${rel.toExponential(2)}`);
    if (Number(tol) === 0 ? diff > 0 : !(rel <= Number(tol))) {
      console.log(out.join('; '));
      process.exit(1);
    }
  }
  console.log(out.join('; '));
})().catch((e) => { console.log(e.message); process.exit(2); });
JSEOF
	); then
		echo "ok $n - $3: $r"
	else
		echo "not ok $n - $3: $r"
	fi
}

i=0
for c in "1 192 70 32 1 0 4" "16 192 70 32 0 1 4" "17 192 70 32 1 1 4" \
	"128 192 70 32 1 0 4" "1 384 66 128 0 0 4" "16 384 66 128 1 1 4" \
	"17 384 66 128 0 1 4" "128 384 66 128 1 0 4" "16 512 36 256 1 0 4"; do
	i=$((i + 1))
	set -- $c
	nbits_model "$work/nb$i" "$@" "$i" ||
		{ echo "Bail out! making a MatMulNBits model failed"; exit 1; }
	zl="no zero points"
	[ "$5" = 1 ] && zl="zero points"
	[ "$6" = 1 ] && zl="$zl, bias"
	nbits_check "$work/nb$i" 0 \
		"MatMulNBits M $1 K $2 N $3 block $4, $zl: bit for bit"
done
for c in "16 256 40 16 1 0 4" "16 256 40 64 0 1 4" "16 256 40 32 1 0 8" \
	"16 256 40 32 1 1 2"; do
	i=$((i + 1))
	set -- $c
	nbits_model "$work/nb$i" "$@" "$i" ||
		{ echo "Bail out! making a MatMulNBits model failed"; exit 1; }
	nbits_check "$work/nb$i" 1e-6 \
		"MatMulNBits M $1 K $2 N $3 block $4, $7 bits: within 1e-6"
done
echo "1..$n"
