#!/bin/sh
# The sample report in a real browser: writes the digits report (two
# candidates, --fail-if checks and --compare-to, so every page exists)
# into the build tree and runs tests/browser/check.js on it with Debian's
# chromium, headless. Every page is checked for requests leaving the
# report folder, console errors, images that did not load and internal
# links that do not resolve; index.html is saved as a screenshot in
# tests/browser-index.png. A second report, of a model with a segmenter-
# and a detector-shaped output (tests/data/outputs/seg_*.onnx), has its
# Outputs section checked too.
#
# Skipped with a message (never passed) when chromium, node or
# tests/browser/node_modules (npm ci --ignore-scripts) are missing.
set -u
: "${top_srcdir:?}" "${top_builddir:?}" "${QREPORT:?}"
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
B="$top_srcdir/tests/browser"
S="$top_srcdir/samples"
OUT="$top_builddir/tests/browser-report"

skip() { echo "1..0 # SKIP $*"; exit 0; }
[ -x "$CHROMIUM" ] || skip "chromium is not installed (apt-get install chromium)"
command -v node >/dev/null 2>&1 || skip "node is not installed"
[ -d "$B/node_modules/playwright-core" ] ||
	skip "playwright-core missing: cd tests/browser && npm ci --ignore-scripts"

mkdir -p "$top_builddir/tests"
common="--float $S/digits_float.onnx --data $S/digits \
	--scale 0.00392156862745098 --mean 0.5 --std 0.5 --quiet"
# a previous run to compare against, then the report under test
# shellcheck disable=SC2086
"$QREPORT" $common --quant "$S/digits_qdq_pertensor.onnx" \
	-o "$OUT-old" >/dev/null 2>&1 ||
	{ echo "1..1"; echo "not ok 1 - qreport (previous report) failed"; exit 0; }
# shellcheck disable=SC2086
"$QREPORT" $common --quant "$S/digits_qdq.onnx" --quant "$S/digits_qop.onnx" \
	--compare-to "$OUT-old/report.json" \
	--fail-if 'output.cosine<0.99' --fail-if 'layer.local_sqnr_db<45' \
	-o "$OUT" >/dev/null 2>"$OUT.err"
rc=$?
if [ $rc -ne 3 ]; then
	echo "1..1"
	echo "not ok 1 - qreport exit $rc (want 3: one check fails by design)"
	sed 's/^/# /' "$OUT.err"
	exit 0
fi
# a segmenter- and a detector-shaped output (tests/data/outputs/)
D="$top_srcdir/tests/data/outputs"
"$QREPORT" --float "$D/seg_float.onnx" --quant "$D/seg_cand.onnx" \
	--data "x=$D/seg_input.npy" --quiet -o "$OUT-outputs" >/dev/null \
	2>"$OUT.err"
rc=$?
if [ $rc -ne 0 ]; then
	echo "1..1"
	echo "not ok 1 - qreport exit $rc on tests/data/outputs/seg_*.onnx"
	sed 's/^/# /' "$OUT.err"
	exit 0
fi
cd "$B" && exec node check.js "$OUT" "$top_builddir/tests/browser-index.png" \
	"$OUT-outputs"
