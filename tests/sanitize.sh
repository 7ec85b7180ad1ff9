#!/bin/sh
# Run the whole test suite under AddressSanitizer and UBSan.
#
#   tests/sanitize.sh [BUILDDIR]        (default /tmp/qr-sanitize)
#
# Configures a separate build folder with --enable-asan --enable-ubsan
# (UBSan is built with -fno-sanitize-recover: any report aborts), builds and
# runs `make check` there. ASan checks leaks and aborts on its first
# report; tests/lsan.supp names the system libraries whose own one-time
# allocations are not leaks. Exits non-zero when a test fails, printing the failing logs.
# Environment: CC (default gcc), JOBS (default 2), CONFIGURE_FLAGS.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-/tmp/qr-sanitize}
JOBS=${JOBS:-2}

mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || ! grep -q -- '-fsanitize=address' Makefile; then
	"$top/configure" -q --enable-asan --enable-ubsan CC="${CC:-gcc}" \
		${CONFIGURE_FLAGS:-}
fi

ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Leaks inside system libraries (fontconfig, graphviz) only.
LSAN_OPTIONS=suppressions=$top/tests/lsan.supp:print_suppressions=0
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS

make -j"$JOBS" >make.out 2>&1 || { tail -n 40 make.out; exit 1; }
rc=0
make -j"$JOBS" check >check.out 2>&1 || rc=$?
grep -E '^(# )?(TOTAL|PASS|FAIL|XFAIL|XPASS|ERROR|SKIP):' check.out || true
if [ "$rc" -ne 0 ]; then
	# The logs of failing tests hold the sanitizer reports.
	for trs in tests/*.trs; do
		grep -q '^:test-result: \(FAIL\|ERROR\|XPASS\)' "$trs" || continue
		log=${trs%.trs}.log
		echo "==== $log"
		grep -v '^ok ' "$log" | head -n 80
	done
	echo "sanitize.sh: make check failed under ASan/UBSan (build in $build)"
	exit 1
fi
echo "sanitize.sh: make check passed under ASan/UBSan"
