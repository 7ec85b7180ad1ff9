#!/bin/sh
# Group a harness's saved crashes by cause.
#
#   tests/fuzz/triage.sh HARNESS [OUTDIR]     (OUTDIR default /tmp/qr-fuzz)
#
# Replays every OUTDIR/artifacts/HARNESS/* through OUTDIR/fuzz_HARNESS and
# prints, per distinct signature (the sanitizer's first line plus the first
# frame in src/), the count and the smallest artifact that shows it.
set -u
h=${1:?usage: tests/fuzz/triage.sh HARNESS [OUTDIR]}
out=${2:-${QR_FUZZ_DIR:-/tmp/qr-fuzz}}
bin="$out/fuzz_$h"
tab=$(mktemp)
trap 'rm -f "$tab"' EXIT

for a in "$out/artifacts/$h"/*; do
	[ -f "$a" ] || continue
	log=$(ASAN_OPTIONS=detect_leaks=1 timeout 60 "$bin" -timeout=10 \
		-rss_limit_mb=2048 "$a" 2>&1)
	rc=$?
	what=$(printf '%s\n' "$log" | grep -m 1 -E 'runtime error|ERROR: |broken at|fatal:|out-of-memory|timeout after' |
		sed -e 's/0x[0-9a-f]*/ADDR/g' -e 's/[0-9]\{4,\}/N/g' \
		    -e 's/^==[0-9]*==//' -e 's/ (pid [0-9]*)//')
	frame=$(printf '%s\n' "$log" | grep -m 1 -E '#[0-9]+ .* in [a-z_0-9]+ .*/src/' |
		sed 's/.* in \([a-z_0-9]*\) .*\/\(src\/[^ ]*\).*/\1 \2/')
	[ $rc -eq 0 ] && [ -z "$what" ] && what="no longer crashes"
	[ -z "$what" ] && what="exit $rc"
	printf '%s\t%s | %s\t%s\n' "$(wc -c <"$a")" "$what" "$frame" "$a" >>"$tab"
done
# Smallest artifact first within each signature.
sort -t "$(printf '\t')" -k1,1n "$tab" |
	awk -F '\t' '{ n[$2]++; if (!($2 in best)) best[$2] = $3 }
		END { for (k in n) printf "%4d  %s\n      %s\n", n[k], k, best[k] }'
