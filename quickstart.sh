#!/bin/sh
# quickstart.sh: set up a fresh Debian machine, build qreport and write the
# sample report to report/index.html.
#
#   ./quickstart.sh          install what is missing, build, write the report
#   ./quickstart.sh --check  the same, then run the test suite (make check)
#
# Installs Debian packages with apt-get (through sudo when not root) only
# when some are missing. Never downloads anything else.
set -eu
cd "$(dirname "$0")"

check=no
case "${1:-}" in
--check) check=yes ;;
"") ;;
*) echo "usage: $0 [--check]" >&2; exit 1 ;;
esac

# Build and run dependencies.
pkgs="build-essential autoconf automake pkg-config protobuf-c-compiler
libprotobuf-c-dev libonnx-dev libcjson-dev libpng-dev libstb-dev
libcairo2-dev libopenblas-dev libgraphviz-dev fonts-dejavu-core"
# Test dependencies: ONNX's conformance data, valgrind.
[ "$check" = yes ] && pkgs="$pkgs libonnx-testdata valgrind"

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "quickstart: installing:$missing"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -q
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q $missing
fi

[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure -q
make -j"$(nproc)"

./qreport --float samples/digits_float.onnx --quant samples/digits_qdq.onnx \
	-o report
echo "quickstart: open report/index.html"

if [ "$check" = yes ]; then
	make -j"$(nproc)" check
fi
