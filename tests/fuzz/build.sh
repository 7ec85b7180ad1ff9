#!/bin/sh
# Build qreport's libFuzzer harnesses with Debian's clang.
#
#   tests/fuzz/build.sh [OUTDIR]        (default /tmp/qr-fuzz)
#
# Compiles the library sources the loaders and the executor need (util,
# onnx, graph, kernels, ops, run; never report/chart/analysis/cli) with
# -fsanitize=fuzzer-no-link,address,undefined into OUTDIR/libqrfuzz.a,
# generates onnx.pb-c.c with protoc-c into OUTDIR/gen, and links
# OUTDIR/fuzz_<name> for every harness. fuzz_image is built only once
# a file in src/run/ defines qr_image_decode. The harnesses built are
# listed, one a line, in OUTDIR/harnesses. Environment: CC (default
# clang), JOBS (default 2),
# ONNX_PROTO (default /usr/include/onnx/onnx.proto).
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-/tmp/qr-fuzz}
CC=${CC:-clang}
JOBS=${JOBS:-2}
ONNX_PROTO=${ONNX_PROTO:-/usr/include/onnx/onnx.proto}

die() { echo "fuzz/build.sh: $*" >&2; exit 1; }
command -v "$CC" >/dev/null || die "$CC not found: apt-get install clang"
command -v protoc-c >/dev/null ||
	die "protoc-c not found: apt-get install protobuf-c-compiler"
[ -f "$ONNX_PROTO" ] || die "$ONNX_PROTO not found: apt-get install libonnx-dev"
pkgs="libprotobuf-c libpng openblas stb"
pkg-config --exists $pkgs || die "pkg-config cannot find: $pkgs"

mkdir -p "$out/gen/onnx" "$out/obj"
out=$(cd "$out" && pwd)
protoc-c --c_out="$out/gen/onnx" -I"$(dirname "$ONNX_PROTO")" "$ONNX_PROTO"

SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
CFLAGS="-std=gnu11 -g -O1 -fno-omit-frame-pointer $SAN -w"
CPPFLAGS="-I$top/src -I$out/gen -I$top/tests/fuzz $(pkg-config --cflags $pkgs)
	-DQR_VERSION=\"fuzz\""
LIBS="$(pkg-config --libs $pkgs) -lm -lpthread"

# The image harness comes in with the source that defines qr_image_decode
# (src/run/image.c); the rest of the dataset code is not needed.
image=$(grep -l '^qr_image_decode(' "$top"/src/run/*.c 2>/dev/null || true)

srcs=$(ls "$top"/src/util/*.c "$top"/src/onnx/*.c "$top"/src/graph/*.c \
	"$top"/src/kernels/*.c "$top"/src/ops/*.c "$top"/src/run/exec_*.c \
	"$top"/src/run/npy.c)
[ -n "$image" ] && srcs="$srcs $image"
srcs="$srcs $out/gen/onnx/onnx.pb-c.c"

# One object per source, named after its path, JOBS at a time.
rm -f "$out"/obj/*.o "$out/libqrfuzz.a"
export CC CFLAGS CPPFLAGS out top
echo "$srcs" | tr ' \t' '\n\n' | grep . | xargs -P "$JOBS" -n 1 sh -c '
	rel=${1#"$top"/}; rel=${rel#"$out"/}
	obj="$out/obj/$(echo "$rel" | tr / _ | sed "s/\.c$/.o/")"
	$CC $CFLAGS -fsanitize=fuzzer-no-link $CPPFLAGS -c "$1" -o "$obj" ||
		{ echo "fuzz/build.sh: cannot compile $rel" >&2; exit 255; }
' sh || die "library sources failed to compile"
ar rcs "$out/libqrfuzz.a" "$out"/obj/*.o

harnesses="onnx npy pb exec"
[ -n "$image" ] && harnesses="$harnesses image"
: >"$out/harnesses"
for h in $harnesses; do
	$CC $CFLAGS -fsanitize=fuzzer $CPPFLAGS -o "$out/fuzz_$h" \
		"$top/tests/fuzz/fuzz_$h.c" "$top/tests/fuzz/fuzz_common.c" \
		"$out/libqrfuzz.a" $LIBS || die "cannot link fuzz_$h"
	echo "$h" >>"$out/harnesses"
done
[ -n "$image" ] ||
	echo "fuzz/build.sh: qr_image_decode not defined yet; fuzz_image skipped" >&2
echo "fuzz/build.sh: built $(echo $harnesses | sed 's/[a-z]*/fuzz_&/g') in $out"
