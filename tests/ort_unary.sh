#!/bin/sh
# Elu, Selu, Celu, Softplus, Log, Sin and Cos bit for bit against ONNX
# Runtime (onnxruntime-node, graph optimisation off, one thread): each op
# on inputs of 1 to 9 values (every tail of Eigen's packets of 4) and of
# 4099 values of spread magnitudes and edge values (zeros, denormals,
# exp's limits, sin and cos past their huge-argument thresholds,
# infinities, NaN; tests/models/make_unary_fixtures.py). `qreport run`'s
# output must equal ONNX Runtime's, every bit (NaN where it has NaN).
#
# Skipped (never passed) when node, tests/ort/node_modules or Debian's
# python3-onnx/numpy are missing.
set -u
: "${top_srcdir:?}" "${top_builddir:?}" "${QREPORT:?}"

. "$top_srcdir/tests/ort_lib.sh"
ort_ready

work=$(mktemp -d /tmp/qr-unary-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
$PY "$top_srcdir/tests/models/make_unary_fixtures.py" "$work" ||
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
