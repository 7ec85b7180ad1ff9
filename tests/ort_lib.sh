# ort_lib.sh: what the ONNX Runtime test scripts share (sourced, with
# top_srcdir set).
#
#   ort_ready       print a TAP skip and exit unless node, onnxruntime-node
#                   and Debian's python3-onnx/numpy are there
#   ort_agree FLOAT_ALL QUANT REPORT SAMPLES DIR
#                   check REPORT's pairs of candidate QUANT against ONNX
#                   Runtime: QUANT with every tensor an output
#                   (tests/models/expose_all.py) and cut for the local
#                   run (tests/models/local_cut.py), then
#                   bench/activations_ort.js with FLOAT_ALL (the float
#                   model already exposed) on SAMPLES. Its output goes to
#                   DIR/ort, local_cut.py's to DIR/cut. Returns 0 when
#                   every pair agrees, 1 when one does not (or node
#                   fails), 2 when the models could not be prepared.
#   ort_run_check MODEL ORT_MODEL INPUT_DIR LABEL [--input NAME=FILE ...]
#                   one TAP line (numbered from the caller's $n, which it
#                   increments; files go under $work): `qreport run
#                   --dump-all` of MODEL against ONNX Runtime's run of
#                   ORT_MODEL (usually MODEL) on INPUT_DIR/<input>.npy,
#                   every output within a relative L2 error of 1e-5
#                   (floats) or identical (integers)

PY=/usr/bin/python3

skip() { echo "1..0 # SKIP $*"; exit 0; }

ort_ready() {
	command -v node >/dev/null 2>&1 || skip "node is not installed"
	[ -d "$top_srcdir/tests/ort/node_modules/onnxruntime-node" ] ||
		skip "onnxruntime-node missing: cd tests/ort && npm ci --ignore-scripts"
	$PY -c "import onnx, numpy" 2>/dev/null ||
		skip "Debian's python3-onnx and python3-numpy are needed"
}

ort_agree() {
	$PY "$top_srcdir/tests/models/expose_all.py" "$2" "$5/q.onnx" &&
		$PY "$top_srcdir/tests/models/local_cut.py" "$2" "$3" 0 \
			"$5/l.onnx" "$5/l.json" >"$5/cut" 2>&1 || return 2
	node "$top_srcdir/bench/activations_ort.js" "$3" "$1" "$5/q.onnx" "$4" \
		--local "$5/l.onnx" "$5/l.json" >"$5/ort" 2>&1 || return 1
}

ort_run_check() {
	model=$1 ortmodel=$2 in=$3 label=$4
	shift 4
	d="$work/run-$n"
	n=$((n + 1))
	if ! "$QREPORT" run "$model" "$@" -o "$d" --dump-all \
		>"$d.log" 2>&1; then
		echo "not ok $n - $label: qreport run failed: $(head -c 300 "$d.log")"
		return
	fi
	(cd "$top_srcdir/tests/ort" && node crosscheck.js "$ortmodel" "$in" \
		"$d" --float-tol 1e-5 --int-max-diff 0 --int-max-frac 0) \
		>"$d.cmp" 2>&1
	if [ $? -eq 0 ]; then
		echo "ok $n - $label matches ONNX Runtime$(sed -n '$s/^#[^:]*:/:/p' "$d.cmp")"
	else
		echo "not ok $n - $label differs from ONNX Runtime"
		grep -v '^ok' "$d.cmp" | grep -v '^1\.\.' | head -20 | sed 's/^/# /'
	fi
}
