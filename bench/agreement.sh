#!/bin/sh
# agreement.sh: qreport's per-layer cosine and SQNR (report.json's
# activations[]) against the same numbers computed with ONNX Runtime
# (bench/activations_ort.js), on resnet18 and mobilenet_v2 in QDQ,
# QOperator, renamed-tensor QDQ / QOperator and A16W8 (com.microsoft
# Q/DQ) form.
#
#   bench/agreement.sh [QREPORT] [MODELS_DIR]
#
# Per model: N random-normal samples (bench/make_samples.py, seeds 0..N-1)
# as a .npy folder; one `qreport --float M.onnx --quant V1 --quant V2 ...
# --data DIR` comparing all four candidates; then, per candidate,
# activations_ort.js on the float and candidate models with every
# intermediate tensor made an output (tests/models/expose_all.py), graph
# optimisation off, and on the candidate cut for the local error
# (tests/models/local_cut.py: the tensors qreport's local run overwrites
# become inputs fed with the float model's values). Prints TAP (one line
# per model/variant) and a table of the largest |qreport - ORT| per
# metric, cumulative and local. Bound per pair and metric:
# |a - b| <= TOL * max(1, |b|) (so absolute for cosine, relative for SQNR
# in dB); QDQ candidates use QDQ_TOL instead (see doc/ort-agreement.md:
# where two engines' float convs round differently, a value at a .5
# quantization tie lands one step apart, and the step spreads through
# later layers). Results: bench/RESULTS.md.
#
# Environment: N (samples, default 20), TOL (default 1e-4), QDQ_TOL
# (default TOL), MODELS (default "resnet18 mobilenet_v2"), VARIANTS
# (default "qdq qop qdq_renamed qop_renamed qdq16"), KEEP=DIR keeps the work
# folder there. Exits 1 when a bound is broken.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
QREPORT=${1:-${QREPORT:-$top/qreport}}
MODELS_DIR=${2:-${QR_MODELS:-/tmp/tvmodels}}
N=${N:-20}
TOL=${TOL:-1e-4}
QDQ_TOL=${QDQ_TOL:-$TOL}
MODELS=${MODELS:-"resnet18 mobilenet_v2"}
VARIANTS=${VARIANTS:-"qdq qop qdq_renamed qop_renamed qdq16"}
PY=/usr/bin/python3

die() { echo "Bail out! agreement.sh: $*"; exit 1; }
[ -x "$QREPORT" ] || die "no qreport binary at '$QREPORT' (pass it as \$1)"
if [ ! -f "$MODELS_DIR/mobilenet_v2_qdq16.onnx" ]; then
	mkdir -p "$MODELS_DIR"
	$PY "$top/tests/models/make_torchvision.py" "$MODELS_DIR" --no-verify \
		>"$MODELS_DIR/make.log" 2>&1 ||
		die "making models failed: see $MODELS_DIR/make.log"
fi
if [ -n "${KEEP:-}" ]; then
	work=$KEEP
	mkdir -p "$work"
else
	work=$(mktemp -d /tmp/qr-agree-XXXXXX)
	trap 'rm -rf "$work"' EXIT INT TERM
fi

n=0
fail=0
table="$work/table.txt"
: >"$table"
for m in $MODELS; do
	d="$work/$m"
	mkdir -p "$d"
	$PY "$top/bench/make_samples.py" "$MODELS_DIR/$m.onnx" "$d/samples" "$N" ||
		die "make_samples.py failed on $m"
	$PY "$top/tests/models/expose_all.py" "$MODELS_DIR/$m.onnx" "$d/float_all.onnx"
	qargs=""
	for v in $VARIANTS; do
		f="$MODELS_DIR/${m}_$v.onnx"
		case $v in
		*_renamed)
			[ -f "$f" ] || $PY "$top/tests/models/make_renamed.py" \
				"$MODELS_DIR/${m}_${v%_renamed}.onnx" "$f" ||
				die "make_renamed.py failed on $m $v" ;;
		esac
		[ -f "$f" ] || die "missing $f"
		qargs="$qargs --quant $f"
	done
	# shellcheck disable=SC2086
	if ! "$QREPORT" --float "$MODELS_DIR/$m.onnx" $qargs --data "$d/samples" \
		--samples "$N" -o "$d/report" --quiet >"$d/qreport.log" 2>&1; then
		for v in $VARIANTS; do
			n=$((n + 1))
			echo "not ok $n - $m $v: qreport failed: $(head -c 300 "$d/qreport.log")"
		done
		fail=$((fail + 1))
		continue
	fi
	k=0
	for v in $VARIANTS; do
		n=$((n + 1))
		$PY "$top/tests/models/expose_all.py" "$MODELS_DIR/${m}_$v.onnx" \
			"$d/${v}_all.onnx"
		$PY "$top/tests/models/local_cut.py" "$MODELS_DIR/${m}_$v.onnx" \
			"$d/report/report.json" "$k" "$d/${v}_local_all.onnx" \
			"$d/${v}_local.json" >"$d/$v.cut.log" 2>&1 ||
			die "local_cut.py failed on $m $v: $(cat "$d/$v.cut.log")"
		case $v in
		qdq*) tol=$QDQ_TOL ;;
		*) tol=$TOL ;;
		esac
		node "$here/activations_ort.js" "$d/report/report.json" \
			"$d/float_all.onnx" "$d/${v}_all.onnx" "$d/samples" \
			--quant "$k" --tol "$tol" \
			--local "$d/${v}_local_all.onnx" "$d/${v}_local.json" \
			>"$d/$v.log" 2>&1
		rc=$?
		last=$(sed -n '$p' "$d/$v.log")
		echo "# $m $v: ${last#\# }"
		if [ $rc -eq 0 ]; then
			echo "ok $n - $m $v: cosine and SQNR, cumulative and local, within $tol of ONNX Runtime"
		else
			grep '^not ok' "$d/$v.log" | head -3 | cut -c1-400 | sed 's/^/# /'
			echo "not ok $n - $m $v: differs from ONNX Runtime (bound $tol)"
			fail=$((fail + 1))
		fi
		printf '%s %s %s\n' "$m" "$v" "$last" >>"$table"
		rm -f "$d/${v}_all.onnx" "$d/${v}_local_all.onnx"
		k=$((k + 1))
	done
done
echo "1..$n"
echo "# largest |qreport - ORT|; local: the same for the local error"
echo "# model         variant       pairs  cos_mean  cos_min   SQNR dB   local cos  local SQNR  needs tol"
awk '{
	for (i = 3; i < NF; i++) v[$i] = $(i + 1)
	for (i = 3; i < NF; i++) if ($(i + 1) == "pairs,") pairs = substr($i, 2)
	printf "# %-13s %-13s %5s  %8s  %8s  %8s  %9s  %10s  %9s\n", $1, $2, pairs,
		v["cosine_mean"], v["cosine_min"], v["sqnr_db"],
		v["local_cosine_mean"], v["local_sqnr_db"], v["|diff|/max(1,|ORT|)"]
}' "$table"
[ $fail -eq 0 ]
