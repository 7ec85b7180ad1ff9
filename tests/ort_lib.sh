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
