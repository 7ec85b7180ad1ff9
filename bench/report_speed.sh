#!/bin/sh
# report_speed.sh: the whole qreport report for a float model and one QDQ
# candidate against the ONNX Runtime script that produces the same
# per-layer numbers, timed in the same run.
#
#   bench/report_speed.sh [QREPORT] [MODELS_DIR]
#
#   qreport:  qreport --float M.onnx --quant M_qdq.onnx --data DIR -o OUT
#             --sensitivity none --quiet (load, weights, CLE, every sample
#             through the float model and the candidate's cumulative and
#             local runs, histograms, charts, HTML and report.json; the
#             what-to-change runs, which ONNX Runtime's script has no
#             counterpart of, are timed by bench/sens_speed.sh)
#   ORT:      node bench/activations_ort.js --no-compare: onnxruntime-node,
#             both models with every intermediate tensor an output (made
#             beforehand by tests/models/expose_all.py, not timed), graph
#             optimisation off, intra-op threads ORT's default (all
#             cores), per-layer cosine and SQNR in JavaScript
#   ORT+local: the same with --local: a third run per sample, of the
#             candidate cut by tests/models/local_cut.py, so ORT also
#             computes the local error the report shows (the goal is
#             stated against ORT alone; this line is for context)
# on the same N samples (bench/make_samples.py). Each side runs RUNS
# times, alternating; the best wall time of each counts (the machine may
# be shared). Prints both, their CPU seconds, and ratio = qreport / ORT
# (the goal is <= 0.5). Environment: MODEL (default resnet18), N (20),
# RUNS (3).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
QREPORT=${1:-${QREPORT:-$top/qreport}}
MODELS_DIR=${2:-${QR_MODELS:-/tmp/tvmodels}}
MODEL=${MODEL:-resnet18}
N=${N:-20}
RUNS=${RUNS:-3}
PY=/usr/bin/python3

die() { echo "report_speed.sh: $*" >&2; exit 1; }
[ -x "$QREPORT" ] || die "no qreport binary at '$QREPORT' (pass it as \$1)"
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (apt-get install time)"
command -v node >/dev/null 2>&1 || die "node is not installed"
[ -d "$top/tests/ort/node_modules/onnxruntime-node" ] ||
	die "onnxruntime-node missing: cd tests/ort && npm ci --ignore-scripts"
if [ ! -f "$MODELS_DIR/${MODEL}_qdq.onnx" ]; then
	mkdir -p "$MODELS_DIR"
	$PY "$top/tests/models/make_torchvision.py" "$MODELS_DIR" \
		>"$MODELS_DIR/make.log" 2>&1 ||
		die "making models failed: see $MODELS_DIR/make.log"
fi
work=$(mktemp -d /tmp/qr-speed-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
f="$MODELS_DIR/$MODEL.onnx"
q="$MODELS_DIR/${MODEL}_qdq.onnx"
$PY "$top/bench/make_samples.py" "$f" "$work/samples" "$N"
$PY "$top/tests/models/expose_all.py" "$f" "$work/float_all.onnx"
$PY "$top/tests/models/expose_all.py" "$q" "$work/quant_all.onnx"
"$QREPORT" --float "$f" --quant "$q" --data "$work/samples" --samples "$N" \
	--sensitivity none -o "$work/report" --quiet || die "qreport failed"
$PY "$top/tests/models/local_cut.py" "$q" "$work/report/report.json" 0 \
	"$work/local_all.onnx" "$work/local.json" || die "local_cut.py failed"

# "wall user sys" of one command (its stdout and stderr dropped)
timed() {
	/usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >/dev/null 2>&1 ||
		die "failed: $*"
	cat "$work/time"
}
best_q="" best_o="" best_l=""
i=0
while [ $i -lt "$RUNS" ]; do
	tq=$(timed "$QREPORT" --float "$f" --quant "$q" --data "$work/samples" \
		--samples "$N" --sensitivity none -o "$work/report" --quiet)
	to=$(timed node "$here/activations_ort.js" "$work/report/report.json" \
		"$work/float_all.onnx" "$work/quant_all.onnx" "$work/samples" \
		--no-compare)
	tl=$(timed node "$here/activations_ort.js" "$work/report/report.json" \
		"$work/float_all.onnx" "$work/quant_all.onnx" "$work/samples" \
		--no-compare --local "$work/local_all.onnx" "$work/local.json")
	echo "# run $((i + 1)): qreport $tq  ORT $to  ORT+local $tl  (wall user sys, s)"
	best_q=$(printf '%s\n%s\n' "$best_q" "$tq" | awk 'NF' | sort -n | head -n 1)
	best_o=$(printf '%s\n%s\n' "$best_o" "$to" | awk 'NF' | sort -n | head -n 1)
	best_l=$(printf '%s\n%s\n' "$best_l" "$tl" | awk 'NF' | sort -n | head -n 1)
	i=$((i + 1))
done
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$best_q" | awk -v m="$MODEL" -v n="$N" '{ printf "qreport  %s + %s_qdq, %s samples: %6.2f s wall, %6.2f s CPU\n", m, m, n, $1, $2 + $3 }'
echo "$best_o" | awk '{ printf "ORT script (activations_ort.js):     %6.2f s wall, %6.2f s CPU\n", $1, $2 + $3 }'
echo "$best_l" | awk '{ printf "ORT script with the local error too:  %6.2f s wall, %6.2f s CPU\n", $1, $2 + $3 }'
awk -v a="$best_q" -v b="$best_o" 'BEGIN { split(a, x, " "); split(b, y, " ");
	printf "ratio qreport / ORT: %.2f wall (goal <= 0.5), %.2f CPU\n", x[1] / y[1], (x[2] + x[3]) / (y[2] + y[3]) }'
awk -v a="$best_q" -v b="$best_l" 'BEGIN { split(a, x, " "); split(b, y, " ");
	printf "ratio qreport / ORT with local error: %.2f wall, %.2f CPU\n", x[1] / y[1], (x[2] + x[3]) / (y[2] + y[3]) }'
