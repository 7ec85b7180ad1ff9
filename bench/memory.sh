#!/bin/sh
# memory.sh: peak RSS of the whole qreport report for a float model and
# its QDQ candidate with 20 and with 200 samples, against the memory
# goals: RSS(200) <= 1.1 x RSS(20), and RSS <= float + quant model bytes
# + 256 MiB (results: bench/RESULTS.md).
#
#   bench/memory.sh [QREPORT] [MODELS_DIR]
#
# Peak RSS is /usr/bin/time -v's "Maximum resident set size". Samples are
# random-normal .npy files (bench/make_samples.py; the 20 are the first
# 20 of the 200). Also prints `qreport run` of each model alone (the
# engine's share). Environment: MODEL (default resnet18), SENS (the
# report's --sensitivity, default quick as users get it; none leaves the
# what-to-change runs out).
set -eu
SENS=${SENS:-quick}
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
QREPORT=${1:-${QREPORT:-$top/qreport}}
MODELS_DIR=${2:-${QR_MODELS:-/tmp/tvmodels}}
MODEL=${MODEL:-resnet18}
PY=/usr/bin/python3

die() { echo "memory.sh: $*" >&2; exit 1; }
[ -x "$QREPORT" ] || die "no qreport binary at '$QREPORT' (pass it as \$1)"
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (apt-get install time)"
if [ ! -f "$MODELS_DIR/${MODEL}_qdq.onnx" ]; then
	mkdir -p "$MODELS_DIR"
	$PY "$top/tests/models/make_torchvision.py" "$MODELS_DIR" \
		>"$MODELS_DIR/make.log" 2>&1 ||
		die "making models failed: see $MODELS_DIR/make.log"
fi
work=$(mktemp -d /tmp/qr-mem-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
f="$MODELS_DIR/$MODEL.onnx"
q="$MODELS_DIR/${MODEL}_qdq.onnx"
$PY "$top/bench/make_samples.py" "$f" "$work/samples" 200

# peak RSS in KiB of one command
peak() {
	/usr/bin/time -v -o "$work/tv" "$@" >/dev/null 2>&1 || die "failed: $*"
	sed -n 's/.*Maximum resident set size (kbytes): *//p' "$work/tv"
}
r20=$(peak "$QREPORT" --float "$f" --quant "$q" --data "$work/samples" \
	--samples 20 --sensitivity "$SENS" -o "$work/r20" --quiet)
r200=$(peak "$QREPORT" --float "$f" --quant "$q" --data "$work/samples" \
	--samples 200 --sensitivity "$SENS" -o "$work/r200" --quiet)
in=$(ls "$work"/samples/*.npy | head -n 1)
rf=$(peak "$QREPORT" run "$f" --input "$in" -o "$work/runf")
rq=$(peak "$QREPORT" run "$q" --input "$in" -o "$work/runq")
fb=$(stat -c %s "$f")
qb=$(stat -c %s "$q")
awk -v r20="$r20" -v r200="$r200" -v rf="$rf" -v rq="$rq" -v fb="$fb" \
	-v qb="$qb" -v m="$MODEL" 'BEGIN {
	mib = 1048576
	budget = fb + qb + 256 * mib
	printf "models: %s.onnx %.1f MiB, %s_qdq.onnx %.1f MiB\n", m, fb / mib, m, qb / mib
	printf "qreport run %s.onnx alone:       %7.1f MiB\n", m, rf / 1024
	printf "qreport run %s_qdq.onnx alone:   %7.1f MiB\n", m, rq / 1024
	printf "report, 20 samples:   peak RSS %7.1f MiB\n", r20 / 1024
	printf "report, 200 samples:  peak RSS %7.1f MiB\n", r200 / 1024
	ratio = r200 / r20
	printf "ratio 200/20: %.3f (goal <= 1.1): %s\n", ratio, ratio <= 1.1 ? "ok" : "OVER"
	worst = r20 > r200 ? r20 : r200
	printf "budget float + quant + 256 MiB = %.1f MiB; worst peak %.1f MiB (%.0f%% of it): %s\n",
		budget / mib, worst / 1024, 100 * worst * 1024 / budget,
		worst * 1024 <= budget ? "ok" : "OVER"
}'
