#!/bin/sh
# ONNX RNN, GRU and LSTM and ONNX Runtime's com.microsoft
# DynamicQuantizeLSTM (src/ops/op_rnn.c) against onnxruntime-node (graph
# optimisation off, one thread). Fixtures: tests/data/make_rnn_fixtures.py.
#
#   - every single-node model of tests/data/ort-ops/rnn/ (LSTM forward,
#     reverse, bidirectional, without bias, sequence_lens (ragged, with a
#     0, with the last step unused), initial_h/initial_c, peepholes,
#     clip, input_forget, layout 1, custom activations with and without
#     alpha/beta, Y_h alone; GRU linear_before_reset 0 and 1, the same
#     variants; RNN Tanh, Relu, bidirectional, sequence_lens,
#     initial_h, layout 1, clip; DynamicQuantizeLSTM int8 and uint8
#     weights, scales per direction and per column, sequence_lens, initial
#     states, peepholes, with and without Y), run by `qreport run` on its
#     NAME/*.npy inputs and by tests/ort/crosscheck.js: every output
#     within a relative L2 error of 1e-5. ONNX Runtime's CPU kernels
#     refuse layout 1 ("Batchwise recurrent operations (layout == 1) are
#     not supported"), so for the layout 1 models ONNX Runtime runs
#     NAME/ort.onnx, the same node with layout 0 between Transposes (same
#     input and output names);
#   - tests/data/activations/lstm_float.onnx (PyTorch's export of a
#     2-layer LSTM classifier, the second layer bidirectional), lstm_dyn.onnx
#     (quantize_dynamic's: DynamicQuantizeLSTM, MatMulInteger) and
#     gru_float.onnx (a bidirectional GRU) with every tensor an output
#     (tests/models/expose_all.py), on two samples, tensor by tensor with
#     the same bound (integers identical);
#   - the whole report of lstm_dyn against lstm_float on 6 seeded samples
#     [1,20,12]: it exits 0, every output of each LSTM (Y, Y_h, Y_c) is
#     paired by name with the DynamicQuantizeLSTM's, the classifier's
#     MatMul with the Mul after MatMulInteger, and cosine and SQNR,
#     cumulative and local, are within 1e-4 of ONNX Runtime's (ort_agree).
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-onnx/numpy are missing.
set -u
: "${top_srcdir:?}" "${QREPORT:?}"
. "$top_srcdir/tests/ort_lib.sh"
ort_ready

fx="$top_srcdir/tests/data/activations"
ops="$top_srcdir/tests/data/ort-ops/rnn"
work=$(mktemp -d /tmp/qr-rnn-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
n=0

# the single-node models, on their own inputs
for f in "$ops"/*.onnx; do
	name=$(basename "$f" .onnx)
	ortm=$f
	[ -f "$ops/$name/ort.onnx" ] && ortm="$ops/$name/ort.onnx"
	set --
	for i in "$ops/$name"/*.npy; do
		set -- "$@" --input "$(basename "$i" .npy)=$i"
	done
	ort_run_check "$f" "$ortm" "$ops/$name" "$name" "$@"
done

# 6 seeded samples x [1,20,12]; in$k/x.npy for run, samples/s$k.npy for
# the report
$PY - "$work" <<'PYEOF' || { echo "Bail out! could not write samples"; exit 1; }
import os, sys
import numpy as np
rng = np.random.RandomState(11)
os.makedirs(os.path.join(sys.argv[1], "samples"))
for k in range(6):
    x = rng.randn(1, 20, 12).astype(np.float32)
    np.save(os.path.join(sys.argv[1], "samples", "s%d.npy" % k), x)
    os.makedirs(os.path.join(sys.argv[1], "in%d" % k))
    np.save(os.path.join(sys.argv[1], "in%d" % k, "x.npy"), x)
PYEOF

# the whole models, every tensor, on samples 0 and 1
for m in lstm_float lstm_dyn gru_float; do
	$PY "$top_srcdir/tests/models/expose_all.py" "$fx/$m.onnx" \
		"$work/$m.all.onnx" ||
		{ echo "Bail out! could not expose $m.onnx's tensors"; exit 1; }
	for k in 0 1; do
		ort_run_check "$work/$m.all.onnx" "$work/$m.all.onnx" "$work/in$k" \
			"$m every tensor (sample $k)" --input "x=$work/in$k/x.npy"
	done
done

# the whole report
"$QREPORT" --float "$fx/lstm_float.onnx" --quant "$fx/lstm_dyn.onnx" \
	--data "$work/samples" -o "$work/rep" --quiet 2>"$work/rep.err"
rc=$?
n=$((n + 1))
if [ $rc -eq 0 ]; then
	echo "ok $n - report of lstm_dyn against lstm_float: exit 0"
else
	echo "not ok $n - report of lstm_dyn against lstm_float: exit $rc: $(head -c 300 "$work/rep.err")"
fi
# every output of each LSTM of lstm_float paired by name with the
# DynamicQuantizeLSTM's, the MatMul's with the Mul after MatMulInteger
$PY "$top_srcdir/tests/models/pairs_by_name.py" "$fx/lstm_float.onnx" "$fx/lstm_dyn.onnx" \
	"$work/rep/report.json" LSTM=DynamicQuantizeLSTM MatMul=Mul >"$work/pairs" 2>&1
rc=$?
n=$((n + 1))
if [ $rc -eq 0 ]; then
	echo "ok $n - every LSTM and MatMul output paired by name ($(grep -c '^ok' "$work/pairs") tensors)"
else
	echo "not ok $n - some LSTM or MatMul output not paired by name"
	grep -v '^ok' "$work/pairs" | sed 's/^/# /'
fi
# against ONNX Runtime
$PY "$top_srcdir/tests/models/expose_all.py" "$fx/lstm_float.onnx" \
	"$work/f.all.onnx" ||
	{ echo "Bail out! preparing the ONNX Runtime models failed"; exit 1; }
mkdir "$work/agree"
ort_agree "$work/f.all.onnx" "$fx/lstm_dyn.onnx" "$work/rep/report.json" \
	"$work/samples" "$work/agree"
rc=$?
n=$((n + 1))
case $rc in
0) echo "ok $n - report: cosine and SQNR, cumulative and local, within 1e-4 of ONNX Runtime ($(grep -c '^ok' "$work/agree/ort") pairs)" ;;
2) echo "Bail out! preparing the ONNX Runtime models failed: $(head -c 300 "$work/agree/cut")"; exit 1 ;;
*) echo "not ok $n - report: differs from ONNX Runtime"
	grep '^not ok' "$work/agree/ort" | head -20 | sed 's/^/# /'
	grep -v '^ok\|^not ok' "$work/agree/ort" | head -5 | sed 's/^/# /' ;;
esac
tail -1 "$work/agree/ort"
echo "1..$n"
