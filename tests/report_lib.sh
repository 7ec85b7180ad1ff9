# report_lib.sh: what the shell tests of the report share (sourced after
# `set -u`, with top_srcdir, top_builddir and QREPORT set, and qr_test
# naming the test).
#
#   work    a new folder /tmp/qr-$qr_test-XXXXXX, removed on exit
#   PY      /usr/bin/python3, which reads report.json: without it the
#           test prints a TAP skip and exits
#   t NAME COND...  one TAP line, numbered from $n: ok when COND succeeds

: "${top_srcdir:?}" "${top_builddir:?}" "${QREPORT:?}" "${qr_test:?}"
PY=/usr/bin/python3
work=$(mktemp -d "/tmp/qr-$qr_test-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
[ -x "$PY" ] || { echo "1..0 # SKIP no $PY to read report.json"; exit 0; }

n=0
t() {
	name=$1; shift
	n=$((n + 1))
	if "$@"; then echo "ok $n - $name"; else echo "not ok $n - $name"; fi
}
