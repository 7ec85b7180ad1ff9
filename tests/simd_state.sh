#!/bin/sh
# Every function of the qreport binary that touches 256- or 512-bit
# registers clears their upper halves (vzeroupper) before it returns.
# GCC leaves that out of a static AVX-512 function that only AVX-512
# code calls; when the caller then calls plain SSE code (any function
# built for baseline x86-64), every SSE instruction waits on the dirty
# upper halves: on an Intel Xeon, MatMulNBits ran three times slower so.
# A kernel that ends with _mm256_zeroupper() passes. Needs objdump
# (binutils); skipped elsewhere than x86-64.
set -u
echo "1..1"
case $(uname -m) in
x86_64) ;;
*) echo "ok 1 # SKIP not x86-64"; exit 0 ;;
esac
if ! command -v objdump >/dev/null 2>&1; then
	echo "ok 1 # SKIP objdump is not installed"
	exit 0
fi
bad=$(objdump -d --no-show-raw-insn "$QREPORT" | awk '
	/^[0-9a-f]+ <.*>:$/ {
		if (fn != "" && wide && !vz)
			print fn
		fn = $2; wide = 0; vz = 0; next
	}
	/%[yz]mm[0-9]/ { wide = 1 }
	/vzeroupper/ { vz = 1 }
	END { if (fn != "" && wide && !vz) print fn }')
if [ -z "$bad" ]; then
	echo "ok 1 - every function using ymm/zmm registers issues vzeroupper"
else
	echo "not ok 1 - functions using ymm/zmm without vzeroupper:" $bad
fi
