#!/bin/sh
# sens_speed.sh: what the "What to change" runs cost. The whole qreport
# report for a float model and its QDQ candidate with N samples, timed
# with --sensitivity none, quick (the default) and, with FULL=1, full;
# the runs alternate and the best wall time of each counts (the machine
# may be shared). Prints each (wall and CPU time, the largest peak RSS)
# and the ratios to none (the goal for quick is <= 2), the memory budget
# (the two model files + 256 MiB), and each mode's model runs from
# report.json.
#
#   bench/sens_speed.sh [QREPORT] [MODELS_DIR]
#
# Environment: MODEL (default resnet18), N (20), RUNS (3), FULL (0). The
# models are made by tests/models/make_torchvision.py (as
# bench/report_speed.sh makes them on first use); MODEL=ppocr_det, the
# PP-OCR-sized text detector (the goal for its full mode: under 2
# minutes on 2 cores), by tests/models/make_ppocr_det.py.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
QREPORT=${1:-${QREPORT:-$(dirname "$here")/qreport}}
M=${2:-${QR_MODELS:-/tmp/tvmodels}}/${MODEL:-resnet18}
N=${N:-20} RUNS=${RUNS:-3} FULL=${FULL:-0}

die() { echo "sens_speed.sh: $*" >&2; exit 1; }
[ -x "$QREPORT" ] || die "no qreport binary at '$QREPORT' (pass it as \$1)"
[ -f "${M}_qdq.onnx" ] || die "no ${M}_qdq.onnx: make it with" \
	"tests/models/make_torchvision.py DIR (bench/report_speed.sh does)" \
	"or, for ppocr_det, tests/models/make_ppocr_det.py DIR"
work=$(mktemp -d /tmp/qr-sens-speed-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
/usr/bin/python3 "$here/make_samples.py" "$M.onnx" "$work/samples" "$N"

modes="none quick"
[ "$FULL" = 1 ] && modes="$modes full"
i=0
while [ $i -lt "$RUNS" ]; do
	for m in $modes; do
		/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$QREPORT" \
			--float "$M.onnx" --quant "${M}_qdq.onnx" \
			--data "$work/samples" \
			--samples "$N" --sensitivity "$m" -o "$work/r-$m" \
			--quiet >/dev/null 2>&1 || die "qreport --sensitivity $m failed"
		t=$(cat "$work/time")
		echo "# run $((i + 1)): --sensitivity $m: $t (wall user sys, s; peak RSS, KiB)"
		echo "$t" >>"$work/all-$m"
	done
	i=$((i + 1))
done
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
base=$(sort -n "$work/all-none" | head -n 1)
for m in $modes; do
	b=$(sort -n "$work/all-$m" | head -n 1)
	rss=$(awk '$4 > r { r = $4 } END { print r }' "$work/all-$m")
	echo "$b" | awk -v m="$m" -v base="$base" -v model="${M##*/}" -v n="$N" \
		-v rss="$rss" '{
		split(base, z, " ");
		printf "%s + %s_qdq, %s samples, --sensitivity %-5s %6.2f s wall, %6.2f s CPU, %.2fx none (CPU %.2fx), peak RSS %.0f MiB\n",
			model, model, n, m, $1, $2 + $3, $1 / z[1], ($2 + $3) / (z[2] + z[3]), rss / 1024 }'
done
awk -v f="$(stat -L -c %s "$M.onnx")" -v q="$(stat -L -c %s "${M}_qdq.onnx")" 'BEGIN {
	printf "memory budget (float + quant + 256 MiB): %.1f MiB\n", (f + q) / 1048576 + 256 }'
for m in $modes; do
	[ "$m" = none ] && continue
	/usr/bin/python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))['sensitivity'][0]
print('%s: %d model runs (%d samples each; %d of cuts), %.2f s in them, %d layers measured'
      % (sys.argv[2], s['runs'], s['samples'], s['cut_runs'], s['seconds'], s['measured']))
" "$work/r-$m/report.json" "$m"
done
