#!/bin/sh
# Build and run every libFuzzer harness for a bounded time.
#
#   tests/fuzz/run.sh [SECONDS_PER_HARNESS [OUTDIR]]
#
# SECONDS defaults to 60 (CI: 5 harnesses x 60 s plus ~1 min of build);
# OUTDIR to $QR_FUZZ_DIR or /tmp/qr-fuzz. Seed corpora come from Debian's
# libonnx-testdata (model.onnx, input_*.pb), samples/ (*.onnx, *.npy,
# digits/*/*.png), tests/data, tests/fuzz/seeds and tests/fuzz/regress;
# what the fuzzers find grows OUTDIR/corpus/<harness>, which later runs
# reuse. Crashes, hangs and OOMs are saved as OUTDIR/artifacts/<harness>/
# crash-*|timeout-*|oom-*|leak-*: minimize one with
#   OUTDIR/fuzz_<h> -minimize_crash=1 -runs=10000 ARTIFACT
# and add the result to tests/fuzz/regress/<h>/ (tests/test_fuzz_regress
# replays that folder in `make check`).
#
# Each harness fuzzes for the whole time (-fork=1: a crash is saved and
# fuzzing goes on). Every crash is replayed and its first frame in src/ (or
# stb) looked up in tests/fuzz/regress/OPEN: a function listed there for
# that harness is a known open bug. Prints one line per harness
# (executions, new and known crashes) and exits 1 when any crash is new.
# FUZZ_HARNESSES="onnx exec" runs only those; FUZZ_ARGS adds libFuzzer
# flags.
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-60}
out=${2:-${QR_FUZZ_DIR:-/tmp/qr-fuzz}}
testdata=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}

case $secs in
''|*[!0-9]*) echo "usage: tests/fuzz/run.sh [SECONDS_PER_HARNESS [OUTDIR]]" >&2
	exit 1 ;;
esac

"$top/tests/fuzz/build.sh" "$out" || exit 1
out=$(cd "$out" && pwd)
harnesses=${FUZZ_HARNESSES:-$(cat "$out/harnesses")}

# Copy files into a seed folder under their content hash (no duplicates).
seed() {
	dir=$1
	shift
	for f in "$@"; do
		[ -f "$f" ] || continue
		cp "$f" "$dir/$(sha1sum <"$f" | cut -c1-40)"
	done
}

seed_dir() {
	h=$1
	dir="$out/seeds/$h"
	rm -rf "$dir"
	mkdir -p "$dir" "$out/corpus/$h" "$out/artifacts/$h"
	case $h in
	onnx|exec)
		if [ -d "$testdata" ]; then
			find "$testdata" -name model.onnx -size -1024k |
				while read -r f; do seed "$dir" "$f"; done
		fi
		seed "$dir" "$top"/samples/*.onnx
		find "$top/tests/data" -name '*.onnx' |
			while read -r f; do seed "$dir" "$f"; done ;;
	pb)
		if [ -d "$testdata" ]; then
			find "$testdata" -name 'input_*.pb' -size -256k |
				while read -r f; do seed "$dir" "$f"; done
		fi
		find "$top/tests/data" -name '*.pb' |
			while read -r f; do seed "$dir" "$f"; done ;;
	npy)
		seed "$dir" "$top"/samples/*.npy
		find "$top/tests/data" -name '*.npy' |
			while read -r f; do seed "$dir" "$f"; done ;;
	image)
		seed "$dir" "$top"/samples/digits/*/*.png
		find "$top/tests/data" -name '*.png' -o -name '*.jpg' \
			-o -name '*.jpeg' -o -name '*.bmp' |
			while read -r f; do seed "$dir" "$f"; done ;;
	esac
	for extra in "$top/tests/fuzz/seeds/$h" "$top/tests/fuzz/regress/$h"; do
		[ -d "$extra" ] && seed "$dir" "$extra"/*
	done
	echo "$dir"
}

# The first frame in qreport's sources (or stb's) of a crash replayed.
crash_site() {
	ASAN_OPTIONS=detect_leaks=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	timeout 60 "$out/fuzz_$1" -timeout=10 -rss_limit_mb=2048 "$2" 2>&1 |
		grep -E '^ +#[0-9]+ 0x[0-9a-f]+ in [A-Za-z_0-9]+ .*(/src/|/stb/)' |
		head -n 1 | sed 's/.* in \([A-Za-z_0-9]*\) \(.*\)/\1 \2/'
}

failed=0
total_execs=0
open_list="$top/tests/fuzz/regress/OPEN"
for h in $harnesses; do
	seeds=$(seed_dir "$h")
	log="$out/logs/fuzz_$h.log"
	mkdir -p "$out/logs"
	ls "$out/artifacts/$h" | sort >"$out/logs/before_$h"
	start=$(date +%s)
	# -fork=1: one child at a time fuzzes; a crash is saved and fuzzing
	# goes on, so that one known bug does not hide the rest.
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
	"$out/fuzz_$h" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 \
		-ignore_ooms=1 -max_total_time="$secs" -rss_limit_mb=2048 \
		-timeout=10 -print_final_stats=1 \
		-artifact_prefix="$out/artifacts/$h/" ${FUZZ_ARGS:-} \
		"$out/corpus/$h" "$seeds" >"$log" 2>&1
	end=$(date +%s)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" |
		tail -n 1)
	# -fork mode prints no final stats: take the last "#N" progress line.
	[ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9][0-9]*\)[^0-9].*/\1/p' \
		"$log" | tail -n 1)
	execs=${execs:-0}
	total_execs=$((total_execs + execs))
	new=0
	known=0
	sites=""
	for a in $(ls "$out/artifacts/$h" | sort | comm -13 "$out/logs/before_$h" -); do
		site=$(crash_site "$h" "$out/artifacts/$h/$a")
		fn=${site%% *}
		if [ -z "$site" ]; then
			site="(does not replay)"
		elif grep -q "^$h/[^ ]* $fn " "$open_list" 2>/dev/null; then
			known=$((known + 1))
			continue
		fi
		new=$((new + 1))
		case $sites in *"$site"*) ;; *) sites="$sites
    NEW: $site ($out/artifacts/$h/$a)" ;; esac
	done
	corpus=$(ls "$out/corpus/$h" | wc -l)
	printf 'fuzz_%s: %s executions in %s s, corpus %s, %s new crashes, %s known (tests/fuzz/regress/OPEN)\n' \
		"$h" "$execs" "$((end - start))" "$corpus" "$new" "$known"
	if [ "$new" -ne 0 ]; then
		failed=1
		echo "$sites" | grep .
		echo "    log: $log"
	fi
done
echo "fuzz: $total_execs executions in all"
# FUZZ_STRICT=0 (as .ci/run sets): new crashes are printed, with their
# inputs, but do not fail the run. Bounded fuzzing finds different things
# on every run, so it must not decide whether a change lands; the inputs it
# finds become files in regress/, which tests/test_fuzz_regress replays
# strictly in make check.
if [ "$failed" -ne 0 ] && [ "${FUZZ_STRICT:-1}" = 0 ]; then
	echo "fuzz: NEW CRASHES FOUND (listed above): minimize them into tests/fuzz/regress/ and fix"
	exit 0
fi
exit $failed
