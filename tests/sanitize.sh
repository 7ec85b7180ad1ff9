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

# autoconf refuses a second build folder for a source tree configured in
# place (as quickstart.sh does), so build from a copy of the sources: the
# files git tracks plus untracked ones it does not ignore. The npm
# packages of the ONNX Runtime and browser tests are linked, not copied.
# The copy and the build are made afresh every time: reusing a folder an
# earlier run left (as CI's /tmp/qr-ci-sanitize is) tested that run's
# sources, not these.
src="$build/src"
rm -rf "$build/src" "$build/obj"
mkdir -p "$src" "$build/obj"
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 tar -cf -) | tar -xf - -C "$src"
else
	(cd "$top" && tar -cf - --exclude=./.git .) | tar -xf - -C "$src"
	(cd "$src" && { [ ! -f Makefile ] || make distclean >/dev/null; })
fi
for nm in tests/ort/node_modules tests/browser/node_modules; do
	[ -d "$top/$nm" ] && ln -s "$top/$nm" "$src/$nm"
done
(cd "$src" && autoreconf -fi >/dev/null 2>&1)
cd "$build/obj"
"$src/configure" -q --enable-asan --enable-ubsan CC="${CC:-gcc}" \
	${CONFIGURE_FLAGS:-}

ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Leaks inside system libraries (fontconfig, graphviz) only.
LSAN_OPTIONS=suppressions=$top/tests/lsan.supp:print_suppressions=0
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
# tests that are too slow instrumented skip themselves (tests/toolchains.sh)
QR_SANITIZE=1
export QR_SANITIZE

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
	echo "sanitize.sh: make check failed under ASan/UBSan (build in $build/obj)"
	exit 1
fi
echo "sanitize.sh: make check passed under ASan/UBSan"
