#!/bin/sh
# The layer norms bit for bit against ONNX Runtime (onnxruntime-node,
# graph optimisation off, one thread): LayerNormalization (with and
# without bias, over one dim and two, scale and bias whole and
# broadcast), SimplifiedLayerNormalization and
# com.microsoft SkipLayerNormalization and SkipSimplifiedLayerNormalization
# (with and without beta and bias, a skip per batch row and one shared),
# each on rows of 1 to 2049 values (every length where ONNX Runtime's
# order changes, tests/models/make_norm_fixtures.py) of spread scales,
# offsets and cancelling values. Every output (y, mean, inverse standard
# deviation, the skip sum) of `qreport run` must equal ONNX Runtime's,
# every bit.
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-onnx/numpy are missing.
set -u
: "${top_srcdir:?}" "${top_builddir:?}" "${QREPORT:?}"

. "$top_srcdir/tests/ort_lib.sh"
ort_ready

work=$(mktemp -d /tmp/qr-norm-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
$PY "$top_srcdir/tests/models/make_norm_fixtures.py" "$work" ||
	{ echo "Bail out! making the fixtures failed"; exit 1; }
n=0
fail=0
for d in "$work"/*/; do
	d=${d%/}
	label=$(basename "$d")
	n=$((n + 1))
	set --
	for f in "$d"/in/*.npy; do
		set -- "$@" --input "$(basename "$f" .npy)=$f"
	done
	if ! "$QREPORT" run "$d/model.onnx" "$@" -o "$d/qr" \
		>"$d/run.log" 2>&1; then
		echo "not ok $n - $label: qreport run failed: $(head -c 300 "$d/run.log")"
		fail=$((fail + 1))
		continue
	fi
	(cd "$top_srcdir/tests/ort" && node crosscheck.js "$d/model.onnx" \
		"$d/in" "$d/qr" --float-tol 0 --int-max-diff 0 \
		--int-max-frac 0) >"$d/cmp.log" 2>&1
	if [ $? -eq 0 ]; then
		echo "ok $n - $label matches ONNX Runtime bit for bit$(sed -n '$s/^#[^:]*:/:/p' "$d/cmp.log")"
	else
		grep '^not ok' "$d/cmp.log" | head -5 | sed 's/^/# /'
		echo "not ok $n - $label differs from ONNX Runtime"
		fail=$((fail + 1))
	fi
done
echo "1..$n"
[ $fail -eq 0 ]
