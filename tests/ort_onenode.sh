# ort_onenode.sh: one-node models bit for bit against ONNX Runtime
# (sourced by tests/ort_norm.sh and tests/ort_unary.sh, after
# tests/ort_lib.sh, with top_srcdir and QREPORT set).
#
#   ort_onenode GENERATOR   run GENERATOR (a tests/models/make_*.py that
#                           writes DIR/NAME/model.onnx and DIR/NAME/in/*.npy)
#                           into a temporary directory; then, for each
#                           model, `qreport run` on its inputs against
#                           onnxruntime-node (tests/ort/crosscheck.js,
#                           graph optimisation off): one TAP line, ok when
#                           every output is ONNX Runtime's, bit for bit
#                           (NaN where it has NaN). Prints the plan; its
#                           status is 0 when every model agrees.

ort_onenode() {
	work=$(mktemp -d /tmp/qr-onenode-XXXXXX)
	trap 'rm -rf "$work"' EXIT INT TERM
	$PY "$1" "$work" ||
		{ echo "Bail out! making the fixtures ($1) failed"; exit 1; }
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
		(cd "$top_srcdir/tests/ort" && node crosscheck.js \
			"$d/model.onnx" "$d/in" "$d/qr" --float-tol 0 \
			--int-max-diff 0 --int-max-frac 0) >"$d/cmp.log" 2>&1
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
}
