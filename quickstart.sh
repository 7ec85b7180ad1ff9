#!/bin/sh
# quickstart.sh: set up a fresh Debian machine, build qreport and write the
# sample report to report/index.html.
#
#   ./quickstart.sh          install what is missing, build, write the report
#   ./quickstart.sh --check  the same, then run the test suite (make check)
#
# Installs Debian packages with apt-get (through sudo when not root) only
# when some are missing; with --check, also the npm packages of tests/ort
# and tests/browser (npm ci --ignore-scripts). Downloads nothing else.
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
libprotobuf-c-dev libonnx-dev libcjson-dev libpng-dev zlib1g-dev libstb-dev
libcairo2-dev libopenblas-dev libgraphviz-dev fonts-dejavu-core"
# Test dependencies: ONNX's conformance data, valgrind, clang with its
# libFuzzer runtime (tests/fuzz), Chromium (tests/browser.sh), and what makes the
# torchvision test models (Python is only for making models). Node and npm
# come from Debian unless the machine already has them.
if [ "$check" = yes ]; then
	pkgs="$pkgs libonnx-testdata valgrind python3-torch python3-torchvision
python3-onnx python3-numpy chromium clang libclang-rt-14-dev"
	command -v node >/dev/null 2>&1 || pkgs="$pkgs nodejs"
	command -v npm >/dev/null 2>&1 || pkgs="$pkgs npm"
fi

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

# the sample report: the digits CNN against its QDQ and QOperator versions,
# on the 30 real digit images (class folders, so accuracy is shown), with
# the preprocessing the model was trained with; the fallback plan aims at
# an output cosine of 0.9999, which the candidates miss as they are
./qreport --float samples/digits_float.onnx --quant samples/digits_qdq.onnx \
	--quant samples/digits_qop.onnx --data samples/digits --samples 30 \
	--scale 0.00392156862745098 --mean 0.5 --std 0.5 \
	--target 'output.cosine>=0.9999' -o report
echo "quickstart: open report/index.html"

if [ "$check" = yes ]; then
	# ONNX Runtime for the cross-check only (never linked into qreport).
	# --ignore-scripts: its install script would try to download more.
	[ -d tests/ort/node_modules/onnxruntime-node ] ||
		(cd tests/ort && npm ci --ignore-scripts --no-audit --no-fund) ||
		echo "quickstart: npm ci failed; the ONNX Runtime cross-check will be skipped" >&2
	# playwright-core drives Debian's chromium for the browser test; it
	# downloads no browser (and --ignore-scripts runs nothing).
	[ -d tests/browser/node_modules/playwright-core ] ||
		(cd tests/browser && npm ci --ignore-scripts --no-audit --no-fund) ||
		echo "quickstart: npm ci failed; the browser test will be skipped" >&2
	make -j"$(nproc)" check
fi
