#!/bin/sh
# make unit: every test package but integration/'s, in -short mode.
#
# go test links every test binary again on every run, and with 72 of them
# (47 pulling in gRPC) the links were four fifths of the CPU a run took, so
# a run could not get under a minute on two cores. Here `go test -c -o DIR/`
# writes the binaries into $UNIT_BIN and leaves any that are up to date
# alone (the build ID says so), so a run relinks only what changed; then
# the binaries run, UNIT_P at a time, each in its package's directory as
# go test would run it.
#
# Environment: GO (go), UNIT_BIN (bin/unit), UNIT_P (8 binaries at once),
# UNIT_ARGS (more flags for every binary, e.g. -test.run=Election).
set -eu
GO=${GO:-go}
out=${UNIT_BIN:-bin/unit}
par=${UNIT_P:-8}
# The packages whose tests take longest (MAD timeouts, elections) are
# built and started first, and run while the others link.
first="./host/sm ./host/pluginhost ./transport ./host/sa ./host/mkey ./conf"

mkdir -p "$out"
bins=$(cd "$out" && pwd)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
export bins logs UNIT_ARGS="${UNIT_ARGS:-}"

tests='{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}'
$GO list -f "$tests" $first | grep . >"$logs/first"
$GO list -f "$tests" ./... github.com/ibsm/ibsm/sdk/... | grep -v '/integration' | grep . |
	grep -vxF -f "$logs/first" >"$logs/rest"

# build TAG: links the test binaries of the packages listed in $logs/TAG
# and writes $logs/TAG.run, a line per package: id, import path,
# directory, binary. go test -c -o DIR/ names a binary after the last
# element of its import path and refuses two of one name, so plugins/ftree
# and plugins/lib/ftree go to different directories (TAG1, TAG2, ...).
build() {
	awk -v t="$1" '{ n = split($1, e, "/"); g = ++seen[e[n]]; print t NR, $1, $2, t g, e[n] }' "$logs/$1" >"$logs/$1.groups"
	for g in $(awk '{ print $4 }' "$logs/$1.groups" | sort -u); do
		mkdir -p "$bins/$g"
		# shellcheck disable=SC2046 # one word per package
		$GO test -c -o "$bins/$g/" $(awk -v g="$g" '$4 == g { print $2 }' "$logs/$1.groups") || return 1
	done
	awk -v b="$bins" '{ print $1, $2, $3, b "/" $4 "/" $5 ".test" }' "$logs/$1.groups" >"$logs/$1.run"
}

# run TAG: runs the binaries in $logs/TAG.run, UNIT_P at a time, and
# prints a line per package as go test does; a failed one leaves
# $logs/ID.failed behind.
run() {
	# shellcheck disable=SC2016 # expanded by the inner sh
	xargs -P "$par" -L 1 sh -c '
		id=$0 pkg=$1 dir=$2 bin=$3
		start=$(date +%s.%N)
		st=ok
		(cd "$dir" && "$bin" -test.short -test.count=1 -test.parallel=8 -test.timeout=10m -test.paniconexit0 $UNIT_ARGS) >"$logs/$id.log" 2>&1 || st=FAIL
		took=$(awk -v a="$start" -v b="$(date +%s.%N)" "BEGIN { printf \"%.3fs\", b - a }")
		printf "%-4s\t%s\t%s\n" "$st" "$pkg" "$took"
		[ "$st" = ok ] || echo "$pkg" >"$logs/$id.failed"' <"$logs/$1.run"
}

build first || exit 1
run first &
early=$!
if ! build rest; then
	wait "$early"
	echo "FAIL: the test binaries did not build"
	exit 1
fi
run rest
wait "$early"

failed=0
for f in "$logs"/*.failed; do
	[ -e "$f" ] || continue
	failed=$((failed + 1))
	echo "=== FAIL $(cat "$f")"
	cat "${f%.failed}.log"
done
total=$(cat "$logs/first" "$logs/rest" | wc -l)
if [ "$failed" -gt 0 ]; then
	echo "FAIL: $failed of $total packages"
	exit 1
fi
echo "ok: $total packages"
