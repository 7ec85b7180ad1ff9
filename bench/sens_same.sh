#!/bin/sh
# sens_same.sh: two qreport binaries give the same "What to change"
# numbers. Runs both on resnet18 and mobilenet_v2 against their QDQ and
# QOperator candidates, with --sensitivity quick and full, and compares
# report.json's sensitivity objects value for value (doubles as JSON
# writes them, to the last bit), leaving out only the seconds they took
# and the run counts. A speed change to the sensitivity runs must pass
# it against the binary before the change.
#
#   bench/sens_same.sh QREPORT_REF QREPORT [MODELS_DIR]
#
# Environment: MODELS (default "resnet18 mobilenet_v2"), FORMS ("qdq
# qop"), MODES ("quick full"), N (data samples, default 8). Exit 0 when
# every pair is the same, 1 when one differs (the first differences are
# printed). The models are made by tests/models/make_torchvision.py.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
REF=${1:?usage: sens_same.sh QREPORT_REF QREPORT [MODELS_DIR]}
NEW=${2:?usage: sens_same.sh QREPORT_REF QREPORT [MODELS_DIR]}
DIR=${3:-${QR_MODELS:-/tmp/tvmodels}}
MODELS=${MODELS:-resnet18 mobilenet_v2}
FORMS=${FORMS:-qdq qop}
MODES=${MODES:-quick full}
N=${N:-8}

die() { echo "sens_same.sh: $*" >&2; exit 2; }
[ -x "$REF" ] || die "no qreport binary at '$REF'"
[ -x "$NEW" ] || die "no qreport binary at '$NEW'"
work=$(mktemp -d /tmp/qr-sens-same-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
bad=0
for m in $MODELS; do
	[ -f "$DIR/$m.onnx" ] || die "no $DIR/$m.onnx"
	/usr/bin/python3 "$here/make_samples.py" "$DIR/$m.onnx" \
		"$work/$m-samples" "$N"
	for f in $FORMS; do
		for mode in $MODES; do
			for b in ref new; do
				if [ $b = ref ]; then q=$REF; else q=$NEW; fi
				"$q" --float "$DIR/$m.onnx" \
					--quant "$DIR/${m}_$f.onnx" \
					--data "$work/$m-samples" --samples "$N" \
					--sensitivity "$mode" --quiet \
					-o "$work/$b" >/dev/null 2>&1 ||
					die "$q failed on ${m}_$f ($mode)"
			done
			if /usr/bin/python3 - "$work/ref" "$work/new" <<'EOF'
import json, sys

def load(d):
    s = json.load(open(d + "/report.json"))["sensitivity"]
    for c in s:
        for k in ("seconds", "runs", "cut_runs"):
            c.pop(k, None)
    return s

def diff(a, b, path, out):
    if type(a) != type(b):
        out.append("%s: %r != %r" % (path, a, b))
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            diff(a.get(k), b.get(k), path + "." + k, out)
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append("%s: %d entries != %d" % (path, len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, "%s[%d]" % (path, i), out)
    elif a != b and not (a != a and b != b):
        out.append("%s: %r != %r" % (path, a, b))

a, b = load(sys.argv[1]), load(sys.argv[2])
out = []
diff(a, b, "sensitivity", out)
if not a or not a[0].get("ran"):
    out.append("the reference did not run the sensitivity")
for line in out[:10]:
    print("  " + line)
sys.exit(1 if out else 0)
EOF
			then
				n=$(/usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['sensitivity'][0]; print(len(s['layers']), s['measured'])" "$work/new/report.json")
				echo "same: ${m}_$f --sensitivity $mode (layers, measured: $n)"
			else
				echo "DIFFERENT: ${m}_$f --sensitivity $mode"
				bad=1
			fi
		done
	done
done
exit $bad
