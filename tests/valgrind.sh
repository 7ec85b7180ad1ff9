#!/bin/sh
# Run the CLI on samples/ (and one transformer) under valgrind: any memory error or definite
# leak fails.
#
#   tests/valgrind.sh [QREPORT]     (default $QREPORT, then ./qreport)
#
# Cases: the sample report (float vs QDQ with random data), the same with
# --data samples/digits (PNG decoding), a small BERT (Attention,
# EmbedLayerNormalization) against its QAttention form (tests/data), and
# `qreport run` on a .npy batch.
# tests/valgrind.supp holds suppressions for system libraries only
# (fontconfig/cairo/OpenBLAS one-time allocations), never for qreport.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
qr=${1:-${QREPORT:-./qreport}}
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind not found: apt-get install valgrind"; exit 1; }
[ -x "$qr" ] || { echo "valgrind.sh: no qreport binary at '$qr'"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/qr-valgrind-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail=0
check() {
	name=$1
	shift
	if valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite --show-leak-kinds=definite \
		--suppressions="$top/tests/valgrind.supp" \
		--log-file="$tmp/$name.vg" "$@" >"$tmp/$name.out" 2>&1; then
		echo "valgrind.sh: ok $name"
	else
		rc=$?
		echo "valgrind.sh: FAIL $name (exit $rc)"
		sed 's/^/    /' "$tmp/$name.vg" "$tmp/$name.out" | head -n 80
		fail=1
	fi
}

s="$top/samples"
check report "$qr" --quiet --float "$s/digits_float.onnx" \
	--quant "$s/digits_qdq.onnx" -o "$tmp/report"
check report-data "$qr" --quiet --float "$s/digits_float.onnx" \
	--quant "$s/digits_qdq.onnx" --quant "$s/digits_qop.onnx" \
	--data "$s/digits" --samples 4 -o "$tmp/report-data"
b="$top/tests/data/activations"
check report-bert "$qr" --quiet --float "$b/bert_opt.onnx" \
	--quant "$b/bert_opt_dyn.onnx" --samples 2 -o "$tmp/report-bert"
check run "$qr" run "$s/digits_float.onnx" \
	--input "input=$s/digits_test.npy" -o "$tmp/run"
exit $fail
