#!/bin/sh
# fma_peak.sh: the float FMA peak of this machine, one thread alone and
# one thread per core at once (bench/fma_peak.c), so conv GFLOPS can be
# read as a share of what the CPU can do. Needs cc and an AVX-512 CPU.
#
#   bench/fma_peak.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/qr-fma-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
grep -q avx512f /proc/cpuinfo || { echo "fma_peak.sh: no AVX-512" >&2; exit 1; }
cc -O2 -mavx512f -o "$work/fma_peak" "$here/fma_peak.c"
echo "alone:"
"$work/fma_peak"
n=$(nproc)
echo "$n at once:"
i=0
while [ $i -lt "$n" ]; do
	"$work/fma_peak" >"$work/out.$i" &
	i=$((i + 1))
done
wait
cat "$work"/out.*
