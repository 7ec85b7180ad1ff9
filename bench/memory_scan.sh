#!/bin/sh
# memory_scan.sh: peak RSS of the whole qreport report, float model and
# its QDQ candidate, for every model of a folder, against the memory
# budget (float + quant model bytes + 256 MiB). bench/memory.sh measures
# one model at 20 and 200 samples; this one runs N samples (default 4:
# the sample count does not move the peak, memory.sh shows) over many
# architectures, where the model's size and width do.
#
#   bench/memory_scan.sh [QREPORT] [MODELS_DIR] [MODEL ...]
#
# MODELS_DIR holds NAME.onnx and NAME_qdq.onnx pairs, as
# tests/models/make_torchvision.py writes them (--models picks which;
# --no-verify skips the PyTorch comparison). Without MODEL arguments
# every pair in the folder is run. Samples are random-normal .npy files
# (bench/make_samples.py). Environment: N (4).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
QREPORT=${1:-${QREPORT:-$top/qreport}}
MODELS_DIR=${2:-${QR_MODELS:-/tmp/tvmodels}}
N=${N:-4}
PY=/usr/bin/python3
[ $# -ge 2 ] && shift 2 || shift $#

die() { echo "memory_scan.sh: $*" >&2; exit 1; }
[ -x "$QREPORT" ] || die "no qreport binary at '$QREPORT' (pass it as \$1)"
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (apt-get install time)"
[ -d "$MODELS_DIR" ] || die "no folder '$MODELS_DIR'"
if [ $# -eq 0 ]; then
	for q in "$MODELS_DIR"/*_qdq.onnx; do
		[ -f "$q" ] || continue
		n=$(basename "$q" _qdq.onnx)
		[ -f "$MODELS_DIR/$n.onnx" ] && set -- "$@" "$n"
	done
fi
[ $# -gt 0 ] || die "no NAME.onnx + NAME_qdq.onnx pair in '$MODELS_DIR'"
work=$(mktemp -d /tmp/qr-memscan-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM

printf '%-22s %10s %10s %7s %8s\n' model "peak MiB" "budget" share "wall s"
over=0
for n in "$@"; do
	f="$MODELS_DIR/$n.onnx"
	q="$MODELS_DIR/${n}_qdq.onnx"
	[ -f "$f" ] && [ -f "$q" ] || die "no $n.onnx + ${n}_qdq.onnx"
	rm -rf "$work/samples" "$work/report"
	$PY "$here/make_samples.py" "$f" "$work/samples" "$N" >/dev/null ||
		die "make_samples.py failed on $f"
	/usr/bin/time -f '%M %e' -o "$work/t" "$QREPORT" --float "$f" \
		--quant "$q" --data "$work/samples" --samples "$N" \
		-o "$work/report" --quiet >/dev/null 2>&1 ||
		die "qreport failed on $n"
	read -r kib secs <"$work/t"
	fb=$(stat -c %s "$f")
	qb=$(stat -c %s "$q")
	line=$(awk -v n="$n" -v fb="$fb" -v qb="$qb" -v kib="$kib" \
		-v secs="$secs" 'BEGIN {
		peak = kib / 1024
		budget = (fb + qb) / 1048576 + 256
		printf "%-22s %10.1f %10.1f %6.0f%% %8.2f%s", n, peak, budget,
			100 * peak / budget, secs, (peak > budget ? "  OVER" : "")
	}')
	echo "$line"
	case $line in *OVER) over=$((over + 1)) ;; esac
done
echo "$# models, $over over the budget"
