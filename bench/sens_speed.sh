#!/bin/sh
# sens_speed.sh: what the "What to change" runs cost. The whole qreport
# report for a float model and its QDQ candidate with N samples, timed
# with --sensitivity none, quick (the default) and, with FULL=1, full;
# the runs alternate and the best wall time of each counts (the machine
# may be shared). Prints each and the ratio to none (the goal for quick
# is <= 2), and quick's model runs from report.json.
#
#   bench/sens_speed.sh [QREPORT] [MODELS_DIR]
#
# Environment: MODEL (default resnet18), N (20), RUNS (3), FULL (0).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
QREPORT=${1:-${QREPORT:-$top/qreport}}
MODELS_DIR=${2:-${QR_MODELS:-/tmp/tvmodels}}
MODEL=${MODEL:-resnet18}
N=${N:-20}
RUNS=${RUNS:-3}
FULL=${FULL:-0}
PY=/usr/bin/python3

die() { echo "sens_speed.sh: $*" >&2; exit 1; }
[ -x "$QREPORT" ] || die "no qreport binary at '$QREPORT' (pass it as \$1)"
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (apt-get install time)"
if [ ! -f "$MODELS_DIR/${MODEL}_qdq.onnx" ]; then
	mkdir -p "$MODELS_DIR"
	$PY "$top/tests/models/make_torchvision.py" "$MODELS_DIR" \
		>"$MODELS_DIR/make.log" 2>&1 ||
		die "making models failed: see $MODELS_DIR/make.log"
fi
work=$(mktemp -d /tmp/qr-sens-speed-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
f="$MODELS_DIR/$MODEL.onnx"
q="$MODELS_DIR/${MODEL}_qdq.onnx"
$PY "$here/make_samples.py" "$f" "$work/samples" "$N"

modes="none quick"
[ "$FULL" = 1 ] && modes="$modes full"
i=0
while [ $i -lt "$RUNS" ]; do
	for m in $modes; do
		/usr/bin/time -f '%e %U %S' -o "$work/time" "$QREPORT" \
			--float "$f" --quant "$q" --data "$work/samples" \
			--samples "$N" --sensitivity "$m" -o "$work/r-$m" \
			--quiet >/dev/null 2>&1 || die "qreport --sensitivity $m failed"
		t=$(cat "$work/time")
		echo "# run $((i + 1)): --sensitivity $m: $t (wall user sys, s)"
		echo "$t" >>"$work/all-$m"
	done
	i=$((i + 1))
done
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
base=$(sort -n "$work/all-none" | head -n 1)
for m in $modes; do
	b=$(sort -n "$work/all-$m" | head -n 1)
	echo "$b" | awk -v m="$m" -v base="$base" -v model="$MODEL" -v n="$N" '{
		split(base, z, " ");
		printf "%s + %s_qdq, %s samples, --sensitivity %-5s %6.2f s wall, %6.2f s CPU, %.2fx none\n",
			model, model, n, m, $1, $2 + $3, $1 / z[1] }'
done
$PY -c "
import json, sys
s = json.load(open(sys.argv[1]))['sensitivity'][0]
print('quick: %d model runs (%d samples each), %.2f s in them, %d layers measured'
      % (s['runs'], s['samples'], s['seconds'], s['measured']))
" "$work/r-quick/report.json"
