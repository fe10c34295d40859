#!/bin/sh
# The hygiene gate (`make hygiene`, run by `make test`): gofmt, go mod tidy,
# staticcheck and deadcode over the three modules (main, sdk, the example
# plugin), and no plugin code linked by the host, transports or conf. Tool versions are pinned by the Makefile and run with `go run
# tool@version` (the Go build cache keeps the binaries, so only a new machine
# compiles them). Exits non-zero with every finding listed.
#
#   STATICCHECK  module@version of honnef.co/go/tools/cmd/staticcheck
#   DEADCODE     module@version of golang.org/x/tools/cmd/deadcode
#   SKIP_PATHS   temporary: an extended regexp of paths whose findings are
#                not failures yet (see the Makefile); empty for none
set -u
cd "$(dirname "$0")/../.."
GO=${GO:-go}
: "${STATICCHECK:?set STATICCHECK=module@version}" "${DEADCODE:?set DEADCODE=module@version}"
export SKIP_PATHS="${SKIP_PATHS:-}"
ALLOW=integration/hygiene/deadcode-allow.txt
MODULES=". sdk sdk/examples/minimal-engine"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

# skip drops findings in SKIP_PATHS (their files belong to work in progress).
skip() {
	if [ -n "$SKIP_PATHS" ]; then grep -Ev "$SKIP_PATHS" || true; else cat; fi
}
report() { # report NAME FILE: print the findings in FILE, if any, under NAME
	if [ -s "$2" ]; then
		echo "hygiene: $1:"
		sed 's/^/  /' "$2"
		fail=1
	fi
}

gofmt -l host plugins sdk transport conf integration | skip >"$tmp/gofmt"
report "gofmt -l (run gofmt -w on these)" "$tmp/gofmt"

for m in $MODULES; do
	(cd "$m" && $GO mod tidy -diff) >"$tmp/tidy" 2>&1 || {
		echo "hygiene: go mod tidy -diff in $m (run go mod tidy there):"
		sed 's/^/  /' "$tmp/tidy"
		fail=1
	}
done

# The main module reaches the sdk module's packages (and their tests) through
# its replace directive: one pass over both shares the loading. The example
# plugin is a module of its own.
SDK=github.com/ibsm/ibsm/sdk/...
{
	$GO run "$STATICCHECK" ./... "$SDK" 2>&1
	(cd sdk/examples/minimal-engine && $GO run "$STATICCHECK" ./... 2>&1 | sed 's#^#sdk/examples/minimal-engine/#')
} | sed "s#$(pwd)/##" >"$tmp/sc"
skip <"$tmp/sc" >"$tmp/sc.kept"
report "staticcheck $STATICCHECK" "$tmp/sc.kept"

# Plugin libraries (plugins/lib) are for plugins and the experiments: the
# host, the transports and conf must not link them.
$GO list -deps -test ./host/... ./transport/... ./conf/... 2>&1 | grep '^github.com/ibsm/ibsm/plugins/' | sort -u >"$tmp/leak"
report "host, transport or conf depend on plugin code" "$tmp/leak"

# deadcode twice over the main and sdk modules: from the binaries alone,
# where test-only API shows (what the allow-list's test-only entries
# excuse), and from the binaries and every test, where nothing may show but
# the allow-list's other entries. The example plugin is a binary: nothing in
# it may be unreachable from its main.
tpl='{{range .Funcs}}{{$.Path}} {{.Name}} {{.Position.File}}{{"\n"}}{{end}}'
{ $GO run "$DEADCODE" -f "$tpl" ./... "$SDK" >"$tmp/dc.bin" &&
	$GO run "$DEADCODE" -test -f "$tpl" ./... "$SDK" >"$tmp/dc.test" &&
	(cd sdk/examples/minimal-engine && $GO run "$DEADCODE" -f "$tpl" ./...) >>"$tmp/dc.bin"; } 2>"$tmp/dc.err" || {
	echo "hygiene: deadcode failed:"
	sed 's/^/  /' "$tmp/dc.err"
	fail=1
}
here=$(pwd)/
awk -v allow="$ALLOW" -v here="$here" '
function rel(p) { sub("^github.com/ibsm/ibsm/", "", p); return p }
function match_entry(run, pkg, fn,   i) {
	for (i = 1; i <= n; i++)
		if (pkg == epkg[i] && fn ~ ("^(" efn[i] ")$") && (run == "bin" || !testonly[i])) {
			used[i] = 1
			return 1
		}
	return 0
}
FILENAME == allow {
	if ($0 ~ /^[ \t]*(#|$)/) next
	if (NF < 3) { printf "  %s:%d: want <package> <function regexp> <why>\n", allow, FNR; bad = 1; next }
	n++; epkg[n] = $1; efn[n] = $2; line[n] = FNR
	why = $0; sub(/^[^ \t]+[ \t]+[^ \t]+[ \t]+/, "", why)
	testonly[n] = (why ~ /^test-only:/)
	next
}
{
	run = (FILENAME ~ /dc\.bin$/) ? "bin" : "test"
	pkg = rel($1); file = $3; sub("^" here, "", file)
	if (ENVIRON["SKIP_PATHS"] != "" && file ~ ENVIRON["SKIP_PATHS"]) next
	if (match_entry(run, pkg, $2)) next
	if (seen[pkg " " $2]++) next
	printf "  %s: %s.%s is unreachable%s\n", file, pkg, $2, run == "bin" ? " from the binaries (only tests call it)" : ""
	bad = 1
}
END {
	for (i = 1; i <= n; i++)
		if (!used[i]) { printf "  %s:%d: %s %s matches nothing unreachable now: drop the entry\n", allow, line[i], epkg[i], efn[i]; bad = 1 }
	exit bad
}' "$ALLOW" "$tmp/dc.bin" "$tmp/dc.test" >"$tmp/dc" || true
report "deadcode $DEADCODE (delete it, wire it, or add it to $ALLOW with the reason)" "$tmp/dc"

[ "$fail" = 0 ] && echo "hygiene ok"
exit "$fail"
