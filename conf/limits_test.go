package conf

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// nesting is one construct that recurses in HCL's parser: n levels of it
// are n openers, the innermost value and n closers; opener is the token
// that opens a level.
type nesting struct {
	name        string
	open, close string
	inner       string
	opener      string
}

var nestings = []nesting{
	{"brackets", "[", "]", "", "["},
	{"object braces", "{a=", "}", "1", "{"},
	{"parentheses", "(", ")", "1", "("},
	{"function calls", "f(", ")", "1", "("},
	{"index brackets", "a[", "]", "0", "["},
	{"interpolations", `"${`, `}"`, "1", "${"},
	{"heredoc interpolations", "<<E\n${", "}\nE\n", "1", "${"},
	{"bang", "!", "", "true", "!"},
	{"unary minus", "-", "", "1", "-"},
	{"conditionals", "true ? 1 : ", "", "1", "?"},
	{"conditionals in the true branch", "true ? ", " : 1", "1", "?"},
}

// nested is n levels of x around its innermost value.
func (x nesting) nested(n int) string {
	return strings.Repeat(x.open, n) + x.inner + strings.Repeat(x.close, n)
}

// configDepth is how deeply plugin "routing_engine" "e" { config { v = ... } }
// nests its value: the plugin and config blocks take two levels.
const configDepth = 2

func configWith(value string) string {
	return pluginSrc("  path = \"e\"\n  config {\n    v = " + value + "\n  }")
}

// nthRange is the source range of the n-th (1-based) occurrence of tok at
// or after byte from in src.
func nthRange(t *testing.T, src string, from int, tok string, n int) hcl.Range {
	t.Helper()
	at := from
	for i := 0; i < n; i++ {
		j := strings.Index(src[at:], tok)
		if j < 0 {
			t.Fatalf("fewer than %d %q in source", n, tok)
		}
		at += j
		if i < n-1 {
			at += len(tok)
		}
	}
	return rangeAt([]byte(src), "ibsm.hcl", at, at+len(tok))
}

// wantNestingError checks that diags is exactly one "Nested too deeply"
// error at want.
func wantNestingError(t *testing.T, diags hcl.Diagnostics, want hcl.Range) {
	t.Helper()
	if len(diags) != 1 || diags[0].Summary != "Nested too deeply" || diags[0].Subject == nil {
		t.Fatalf("want one nesting error, got:\n%s", FormatDiagnostics(diags))
	}
	if got := *diags[0].Subject; got.Filename != want.Filename || got.Start.Line != want.Start.Line ||
		got.Start.Column != want.Start.Column || got.Start.Byte != want.Start.Byte {
		t.Errorf("subject %s (byte %d), want %s (byte %d)", got, got.Start.Byte, want, want.Start.Byte)
	}
	if d := diags[0].Detail; !strings.Contains(d, fmt.Sprint(MaxNesting)) || !strings.Contains(d, "flatten") {
		t.Errorf("detail does not give the limit and what to do: %s", d)
	}
}

// TestNestingLimit: for every construct that recurses in HCL's parser, a
// plugin config nested exactly MaxNesting levels deep loads, one level
// more is refused at the opener that crossed the limit, and 100,000 levels
// are refused the same way without a crash.
func TestNestingLimit(t *testing.T) {
	for _, x := range nestings {
		t.Run(x.name, func(t *testing.T) {
			under := configWith(x.nested(MaxNesting - configDepth))
			if _, diags := LoadBytes("ibsm.hcl", []byte(under)); diags.HasErrors() {
				t.Fatalf("%d levels refused:\n%s", MaxNesting, FormatDiagnostics(diags))
			}
			for _, n := range []int{MaxNesting - configDepth + 1, 100_000} {
				src := configWith(x.nested(n))
				_, diags := LoadBytes("ibsm.hcl", []byte(src))
				v := strings.Index(src, "v = ")
				wantNestingError(t, diags, nthRange(t, src, v, x.opener, MaxNesting-configDepth+1))
			}
		})
	}
}

// TestNestingLimitBlocks: nested blocks count like any brace.
func TestNestingLimitBlocks(t *testing.T) {
	blocks := func(n int) string {
		return pluginSrc("  path = \"e\"\n  config {\n" + strings.Repeat("b {\n", n) + strings.Repeat("}\n", n) + "  }")
	}
	if _, diags := LoadBytes("ibsm.hcl", []byte(blocks(MaxNesting-configDepth))); diags.HasErrors() {
		t.Fatalf("%d levels refused:\n%s", MaxNesting, FormatDiagnostics(diags))
	}
	src := blocks(MaxNesting - configDepth + 1)
	_, diags := LoadBytes("ibsm.hcl", []byte(src))
	c := strings.Index(src, "config {")
	wantNestingError(t, diags, nthRange(t, src, c+len("config {"), "{", MaxNesting-configDepth+1))
}

// TestNestingLimitDirectives: open %{ if } and %{ for } directives nest.
func TestNestingLimitDirectives(t *testing.T) {
	for _, d := range []struct{ open, close string }{
		{"%{ if true }", "%{ endif }"},
		{"%{~ for x in xs ~}", "%{~ endfor ~}"},
	} {
		value := func(n int) string {
			return `"` + strings.Repeat(d.open, n) + "x" + strings.Repeat(d.close, n) + `"`
		}
		if _, diags := LoadBytes("ibsm.hcl", []byte(configWith(value(MaxNesting-configDepth)))); diags.HasErrors() {
			t.Fatalf("%s: %d levels refused:\n%s", d.open, MaxNesting, FormatDiagnostics(diags))
		}
		// The "%{" that opens level MaxNesting+1 is the last one's.
		src := configWith(value(MaxNesting - configDepth + 1))
		_, diags := LoadBytes("ibsm.hcl", []byte(src))
		wantNestingError(t, diags, nthRange(t, src, strings.Index(src, "v = "), "%{", MaxNesting-configDepth+1))
	}
}

// TestNestingInsideInterpolation: nesting that starts inside a "${...}" in
// a string or heredoc is code, and counts.
func TestNestingInsideInterpolation(t *testing.T) {
	n := MaxNesting - configDepth // the "${" itself is one level
	for _, value := range []string{
		`"x ${` + strings.Repeat("[", n) + strings.Repeat("]", n) + `} y"`,
		`"${"${"${` + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) + `}"}"}"`,
		"<<-E\n  x ${" + strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n) + "}\n  E\n",
		`"${[for x in y: ` + strings.Repeat("!", n) + `x]}"`,
	} {
		src := configWith(value)
		_, diags := LoadBytes("ibsm.hcl", []byte(src))
		if len(diags) != 1 || diags[0].Summary != "Nested too deeply" {
			t.Errorf("%.60s…: want a nesting error, got:\n%s", value, FormatDiagnostics(diags))
		}
	}
}

// TestNestingIgnoresText: brackets in strings, heredocs and comments are
// text, and operators that end with their expression do not add up, so
// legitimate configurations far "deeper" in characters load.
func TestNestingIgnoresText(t *testing.T) {
	deep := strings.Repeat("[{(", 1000)
	negatives := make([]string, 1000)
	for i := range negatives {
		negatives[i] = fmt.Sprint(-i)
	}
	body := `  path = "e"
  config {
    s = "` + deep + `"
    e = "\"` + deep + ` \\ $${` + deep + ` %%{` + deep + `"
    h = <<EOT
` + deep + ` $${` + deep + `
  EOTX
EOT
    # ` + deep + `
    // ` + deep + `
    /* ` + deep + "\n" + deep + ` */
    t = "${"` + deep + `"}"
    l = [` + strings.Join(negatives, ", ") + `]
    m = [
` + strings.Repeat("      -1,\n", 1000) + `    ]
` + strings.Repeat("    n = !true\n", 1) + strings.Repeat("    o = -1 # neg\n", 1) + `
    p = {
` + strings.Repeat("      k = -1\n", 1000) + `    }
  }`
	src := pluginSrc(body)
	if diags := checkLimits("configuration file", "ibsm.hcl", []byte(src), false); diags.HasErrors() {
		t.Fatalf("refused:\n%s", FormatDiagnostics(diags))
	}
	if _, diags := LoadBytes("ibsm.hcl", []byte(src)); diags.HasErrors() {
		t.Fatalf("LoadBytes:\n%s", FormatDiagnostics(diags))
	}
}

// TestNestingManyBlocks: blocks in every legitimate shape (one-line,
// empty, commented, nested) close where HCL closes them, however many
// there are.
func TestNestingManyBlocks(t *testing.T) {
	var b strings.Builder
	b.WriteString("  path = \"e\"\n  config {\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "    one { x = [%d, {a = -1}] }\n", i)
		b.WriteString("    empty {}\n    empty2 {\n    }\n")
		b.WriteString("    labelled \"a\" b { y = \"${1 + 2}\" }\n")
		b.WriteString("    outer { # comment\n      inner {\n        z = <<EOT\n  }\n  EOT\n      }\n      o = { k = { v = 1 } }\n    }\n")
		b.WriteString("    multi { w = [\n      1,\n    ] }\n")
	}
	b.WriteString("  }")
	src := pluginSrc(b.String())
	start := time.Now()
	diags := checkLimits("configuration file", "ibsm.hcl", []byte(src), false)
	t.Logf("checked %d bytes with 10,000 one-line blocks in %v", len(src), time.Since(start))
	if diags.HasErrors() {
		t.Fatalf("refused:\n%s", FormatDiagnostics(diags))
	}
	if d := lexerDepth([]byte(src)); d != configDepth+4 {
		t.Errorf("depth %d, want %d", d, configDepth+4)
	}
}

// TestNestingJSON: JSON configurations nest through arrays and objects,
// and through the templates in their strings.
func TestNestingJSON(t *testing.T) {
	doc := func(v string) string {
		return `{
  "fabric": {"topology": "f.net"},
  "plugin": {
    "routing_engine": {"e": {"path": "e", "config": {"v": ` + v + `}}},
    "lid_assigner": {"s": {"path": "s"}},
    "vl_assigner": {"v": {"path": "v"}}
  },
  "routing": {"engine": "e", "lid_assigner": "s", "vl_assigner": "v"}
}`
	}
	// The document, "plugin", "routing_engine", "e" and "config": 5 levels.
	const base = 5
	arrays := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	if _, diags := LoadBytes("ibsm.json", []byte(doc(arrays(MaxNesting-base)))); diags.HasErrors() {
		t.Fatalf("%d levels refused:\n%s", MaxNesting, FormatDiagnostics(diags))
	}
	for _, n := range []int{MaxNesting - base + 1, 100_000} {
		src := doc(arrays(n))
		_, diags := LoadBytes("ibsm.json", []byte(src))
		r := nthRange(t, src, strings.Index(src, `"v": `), "[", MaxNesting-base+1)
		r.Filename = "ibsm.json"
		wantNestingError(t, diags, r)
	}
	for _, v := range []string{
		`"${` + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + `}"`,
		`"\u0024{` + strings.Repeat("(", MaxNesting) + "1" + strings.Repeat(")", MaxNesting) + `}"`,
		`"${\"${` + strings.Repeat("!", MaxNesting) + `x}\"}"`,
	} {
		_, diags := LoadBytes("ibsm.json", []byte(doc(v)))
		if len(diags) != 1 || diags[0].Summary != "Nested too deeply" {
			t.Errorf("%.40s…: want a nesting error, got:\n%s", v, FormatDiagnostics(diags))
		}
	}
	if _, diags := LoadBytes("ibsm.json", []byte(doc(`"`+strings.Repeat("[", 1000)+` $${[[[[[[ %%{[[[[["`))); diags.HasErrors() {
		t.Errorf("brackets in JSON strings refused:\n%s", FormatDiagnostics(diags))
	}
}

// TestHundredThousandBrackets is the reported crash: 100,000 nested "["
// in a plugin config block (a 200 KB file). Load, LoadBytes and the lock
// parser refuse it with file:line,column instead of overflowing the stack.
func TestHundredThousandBrackets(t *testing.T) {
	src := configWith(strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000))
	path := filepath.Join(t.TempDir(), "ibsm.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cfg, diags := Load(path)
	t.Logf("Load refused %d bytes in %v", len(src), time.Since(start))
	if cfg != nil {
		t.Fatal("loaded")
	}
	want := nthRange(t, src, strings.Index(src, "v = "), "[", MaxNesting-configDepth+1)
	want.Filename = path
	wantNestingError(t, diags, want)
	if line := FormatDiagnostics(diags); !strings.HasPrefix(line, fmt.Sprintf("%s:%d,%d-", path, want.Start.Line, want.Start.Column)) {
		t.Errorf("formatted: %s", line)
	}

	lock := "plugin \"routing_engine\" \"e\" {\n  sha256 = " + strings.Repeat("[", 100_000) + "\n}\n"
	start = time.Now()
	_, diags = ParseLock("plugins.lock.hcl", []byte(lock))
	t.Logf("ParseLock refused %d bytes in %v", len(lock), time.Since(start))
	want = nthRange(t, lock, 0, "[", MaxNesting)
	want.Filename = "plugins.lock.hcl"
	wantNestingError(t, diags, want)
}

// TestLimitsLinear: the check reads a file of the largest size once,
// whatever it holds (quadratic rescans would take hours here).
func TestLimitsLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("reads ten files of the largest size (make test runs it)")
	}
	fill := func(unit string) []byte {
		return []byte(strings.Repeat(unit, (MaxFileSize-100)/len(unit)))
	}
	for name, src := range map[string][]byte{
		"heredoc introducers": fill("<"),
		"long markers":        fill("<<" + strings.Repeat("é", 100) + "<"),
		"unclosed comments":   fill("/*"),
		"unclosed heredoc":    append([]byte("a = <<E\n"), fill("x $ %")...),
		"unclosed string":     append([]byte("a = \""), fill("\\\" $$ %%{")...),
		"objects":             fill("a = {b = [-1]}\n"),
		"one-line blocks":     fill("a { b = [-1] }\n"),
		"broken blocks":       fill("a { b }\n"),
		"JSON strings":        append([]byte("["), fill(`"${1}", `)...),
		"words":               fill("word "),
	} {
		asJSON := name == "JSON strings"
		start := time.Now()
		diags := checkLimits("configuration file", "x", src, asJSON)
		t.Logf("%-20s %v (%d diagnostics)", name, time.Since(start), len(diags))
	}
}

// TestFileSizeLimit: a file of exactly MaxFileSize bytes loads; one byte
// more is refused at that byte, whether read from disk or given.
func TestFileSizeLimit(t *testing.T) {
	pad := func(size int) []byte {
		b := []byte(minimal + "#")
		b = append(b, strings.Repeat("x", size-len(b)-1)...)
		return append(b, '\n')
	}
	dir := t.TempDir()
	for _, size := range []int{MaxFileSize, MaxFileSize + 1, 10 << 20} {
		src := pad(size)
		path := filepath.Join(dir, fmt.Sprintf("%d.hcl", size))
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		_, fromBytes := LoadBytes(path, src)
		_, fromFile := Load(path)
		_, lock := ParseLock(path, src)
		for _, diags := range []hcl.Diagnostics{fromBytes, fromFile, lock} {
			if size <= MaxFileSize {
				for _, d := range diags {
					if d.Summary == "File too large" {
						t.Errorf("%d bytes refused: %s", size, FormatDiagnostics(diags))
					}
				}
				continue
			}
			if len(diags) != 1 || diags[0].Summary != "File too large" {
				t.Fatalf("%d bytes: want one size error, got:\n%.2000s", size, FormatDiagnostics(diags))
			}
			want := rangeAt(src, path, MaxFileSize, MaxFileSize+1)
			if s := *diags[0].Subject; s.Start != want.Start {
				t.Errorf("%d bytes: subject %s, want %s", size, s, want)
			}
			if !strings.Contains(diags[0].Detail, "4 MiB") {
				t.Errorf("detail: %s", diags[0].Detail)
			}
		}
	}
}

// TestShorten: values and words longer than maxValueChars are cut with
// their size; prose is kept; the result is stable.
func TestShorten(t *testing.T) {
	long := strings.Repeat("a", 1<<20)
	tests := []struct {
		in, want string
	}{
		{"short", "short"},
		{`x = "` + strings.Repeat("b", 300) + `" is bad`, `x = "` + strings.Repeat("b", 200) + `…" (300 bytes) is bad`},
		{`"` + long + `" is not a kind. Use one of a, b.`, `"` + long[:200] + `…" (1048576 bytes) is not a kind. Use one of a, b.`},
		{`escaped "` + strings.Repeat(`\"`, 150) + `" end`, `escaped "` + strings.Repeat(`\"`, 100) + `…" (300 bytes) end`},
		{"word " + long + " tail", "word " + long[:200] + "… (1048576 bytes) tail"},
		{`open "` + strings.Repeat("c", 250), `open "` + strings.Repeat("c", 199) + "… (251 bytes)"},
		{strings.Repeat("é", 300), strings.Repeat("é", 200) + "… (600 bytes)"},
	}
	for _, tt := range tests {
		got := shorten(tt.in)
		if got != tt.want {
			t.Errorf("shorten(%.50q…) =\n%.400s\nwant\n%.400s", tt.in, got, tt.want)
		}
		if again := shorten(got); again != got {
			t.Errorf("shorten not idempotent:\n%.400s\n%.400s", got, again)
		}
	}
	many := strings.Repeat("word ", 2000)
	if got := shorten(many); len(got) > maxMessageChars+40 || !strings.HasSuffix(got, "… (10000 bytes)") {
		t.Errorf("long message: %d bytes, ends %q", len(got), got[len(got)-30:])
	}
}

// TestDiagnosticsCutValues: megabyte values never reach a message, whether
// ibsm wrote it, HCL did, or a plugin schema decode did.
func TestDiagnosticsCutValues(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 1 MiB values into six configurations (make test runs it)")
	}
	long := strings.Repeat("z", 10<<20)
	type source struct {
		src    string
		quoted bool // a message quotes the value
	}
	long = long[:1<<20] // files over MaxFileSize are refused whole (TestFileSizeLimit)
	srcs := map[string]source{
		"plugin kind (ours)":        {strings.Replace(minimal, `"vl_assigner"`, `"`+long+`"`, 1), true},
		"engine name (ours)":        {strings.Replace(minimal, `engine       = "minhop"`, `engine       = "`+long+`"`, 1), true},
		"sha256 (ours)":             {strings.Replace(minimal, `{ path = "seq" }`, "{\n  path = \"seq\"\n  sha256 = \""+long+"\"\n}", 1), true},
		"duration (sm.go)":          {strings.Replace(minimal, "routing {", "sm {\n  sweep_interval = \""+long+"\"\n}\nrouting {", 1), true},
		"attribute name (HCL)":      {strings.Replace(minimal, "routing {", "sm {\n  "+long+" = 1\n}\nrouting {", 1), true},
		"value in a bad line (HCL)": {strings.Replace(minimal, "routing {", "sm {\n  lmc = 1 \""+long+"\"\n}\nrouting {", 1), false},
	}
	for name, s := range srcs {
		l := NewLoader()
		_, diags := l.LoadBytes("ibsm.hcl", []byte(s.src))
		if !diags.HasErrors() {
			t.Errorf("%s: no error", name)
			continue
		}
		for _, out := range []string{FormatDiagnostics(diags), l.FormatDiagnostics(diags)} {
			if len(out) > 4*(maxMessageChars+100) {
				t.Errorf("%s: %d bytes of diagnostics:\n%.600s", name, len(out), out)
			}
			if s.quoted && !strings.Contains(out, "bytes)") {
				t.Errorf("%s: no cut marker:\n%.600s", name, out)
			}
		}
		for _, d := range diags {
			if len(d.Summary)+len(d.Detail) > 2*(maxMessageChars+100) {
				t.Errorf("%s: diagnostic itself holds %d bytes", name, len(d.Summary)+len(d.Detail))
			}
		}
	}

	// A plugin's own schema decoding (hcldec) quotes the attribute name.
	src := configWith(`1`)
	src = strings.Replace(src, "v = 1", long[:1<<20]+" = 1", 1)
	cfg, diags := LoadBytes("ibsm.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics(diags))
	}
	_, diags = cfg.Plugins[0].DecodeConfig(engineSchema())
	if !diags.HasErrors() || len(FormatDiagnostics(diags)) > 4*(maxMessageChars+100) {
		t.Errorf("DecodeConfig diagnostics (%d bytes):\n%.600s", len(FormatDiagnostics(diags)), FormatDiagnostics(diags))
	}
}

// TestLoaderFormatDiagnostics: the snippet form shows the subject's line,
// cut to a window around the subject.
func TestLoaderFormatDiagnostics(t *testing.T) {
	l := NewLoader()
	src := strings.Replace(minimal, `  lid_assigner = "sequential"`, `  lid_assigner = "sequental"`, 1)
	_, diags := l.LoadBytes("ibsm.hcl", []byte(src))
	want := "ibsm.hcl:10,18-29: Unknown plugin; routing.lid_assigner names \"sequental\", but no plugin \"lid_assigner\" \"sequental\" is declared. Declared: sequential.\n" +
		"  10:   lid_assigner = \"sequental\"\n" +
		"                       ^\n"
	if got := l.FormatDiagnostics(diags); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	long := strings.Repeat("q", 1<<20)
	src = strings.Replace(minimal, `engine       = "minhop"`, `engine       = "minhop" "`+long+`" `, 1)
	_, diags = l.LoadBytes("long.hcl", []byte(src))
	out := l.FormatDiagnostics(diags)
	if !diags.HasErrors() || len(out) > 2000 || !strings.Contains(out, "(line of ") {
		t.Errorf("long line (%d bytes):\n%.1000s", len(out), out)
	}

	// The subject far into a long line: the window ends at it.
	src = strings.Replace(minimal, `engine       = "minhop"`, `engine       = "`+long+`" junk`, 1)
	_, diags = l.LoadBytes("long2.hcl", []byte(src))
	out = l.FormatDiagnostics(diags)
	lines := strings.Split(out, "\n")
	if !diags.HasErrors() || len(out) > 2000 || len(lines) < 3 || !strings.HasPrefix(lines[1], "  9: …q") || !strings.HasSuffix(lines[1], strings.Repeat("q", 50)+`" junk`) ||
		strings.Index(lines[2], "^") != utf8.RuneCountInString(lines[1][:strings.Index(lines[1], "junk")]) {
		t.Errorf("subject at the end of a long line (%d bytes):\n%.1000s", len(out), out)
	}
}

// TestLexerMatchesHCL: on valid input the lexer's view of what is code
// agrees with HCL's own scanner: the tracker fed by either reaches the same
// depth.
func TestLexerMatchesHCL(t *testing.T) {
	srcs := []string{
		minimal,
		configWith(`"a${b["c"]}d%{ if e }f%{ else }g%{ endif }"`),
		configWith("<<EOT\n  a ${[1, 2]} $${x}\n  %{ for x in y }${x}%{ endfor }\n  EOT\n"),
		configWith("<<-EOT\n${<<X\ninner ${1}\nX\n}\nEOT\n"),
		configWith(`[-1, - 2, 1 - -3, !true, a ? -b : !c, "\"${-d}\"", 1e-5, a-b, f(-1)...]`),
		configWith(`{for k, v in m: k => -v if !v}`),
		configWith("(\n-1\n# c\n)"),
		configWith(`{ a = 1, b = -2 }`),
		"a = \"${ {a = 1}.a }\"\nb = x ~} y\n",
	}
	for _, f := range []string{"testdata/full.hcl"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, string(b))
	}
	examples, _ := filepath.Glob("examples/*.hcl")
	for _, f := range examples {
		b, _ := os.ReadFile(f)
		srcs = append(srcs, string(b))
	}
	for _, src := range srcs {
		ours, ref := lexerDepth([]byte(src)), hclDepth([]byte(src))
		if ours != ref {
			t.Errorf("depth %d, HCL's scanner gives %d, for:\n%s", ours, ref, src)
		}
	}
}

// lexerDepth is the deepest level the lexer reaches in src.
func lexerDepth(src []byte) int {
	t := newTracker(src)
	t.limit = 1 << 30
	newLexer(src, 0, t, false).run()
	return t.max
}

// hclDepth is the deepest level the tracker reaches on the tokens of HCL's
// own scanner, the reference the lexer mirrors.
func hclDepth(src []byte) int {
	t := newTracker(src)
	t.limit = 1 << 30
	toks, _ := hclsyntax.LexConfig(src, "", hcl.InitialPos)
	modes := 0 // strings, heredocs and sequences the scanner is inside
	braces, retBraces := 0, []int{}
	for _, tok := range toks {
		at, end := tok.Range.Start.Byte, tok.Range.End.Byte
		t.outer = modes == 0
		switch tok.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen:
			if tok.Type == hclsyntax.TokenOBrace {
				braces++
			}
			t.open(tok.Bytes[0], at)
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen:
			if tok.Type == hclsyntax.TokenCBrace {
				braces--
			}
			t.close(tok.Bytes[0], at)
		case hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			t.outer = false
			t.interp(tok.Type == hclsyntax.TokenTemplateControl, at, end)
			braces++
			retBraces = append(retBraces, braces)
			modes++
		case hclsyntax.TokenTemplateSeqEnd:
			t.seqEnd(at, end)
			if len(retBraces) > 0 && retBraces[len(retBraces)-1] == braces {
				retBraces = retBraces[:len(retBraces)-1]
				modes--
			}
			braces--
		case hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			t.openString(tok.Type == hclsyntax.TokenOHeredoc, at)
			modes++
		case hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			modes--
			t.outer = modes == 0
			t.closeString()
		case hclsyntax.TokenQuotedLit, hclsyntax.TokenStringLit, hclsyntax.TokenQuotedNewline:
			// template text
		case hclsyntax.TokenNewline:
			t.newline()
		case hclsyntax.TokenComment:
			t.comment(strings.HasSuffix(string(tok.Bytes), "\n"))
		case hclsyntax.TokenComma:
			t.comma(at)
		case hclsyntax.TokenBang:
			t.bang(at)
		case hclsyntax.TokenMinus:
			t.minus(at)
		case hclsyntax.TokenQuestion:
			t.question(at)
		case hclsyntax.TokenEqual:
			t.equals(at)
		case hclsyntax.TokenIdent:
			t.ident(tok.Bytes, at)
		case hclsyntax.TokenNumberLit:
			t.operand(at, end)
		case hclsyntax.TokenEOF:
		default:
			if modes == 0 || t.top().kind != fString {
				t.other(at)
			}
		}
	}
	return t.max
}

// TestNestingParserRecovery: HCL's parser recovers from a broken body item
// by skipping to the end of the line without leaving the block, so broken
// files can make it nest deeper than their brackets do. Each pattern,
// repeated, would nest a thousand levels if the check missed that; with
// the stack cut to 1 MiB (a thousand levels of blocks need over 3 MiB) a
// miss crashes the test.
func TestNestingParserRecovery(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(1 << 20))
	for _, p := range recoveryPatterns {
		src := strings.Repeat(p, 1000)
		_, diags := LoadBytes("x.hcl", []byte(src))
		if !diags.HasErrors() {
			t.Errorf("%q: no error", p)
		}
	}
}

// recoveryPatterns are broken lines after which HCL's parser may keep a
// block open.
var recoveryPatterns = []string{
	"a {\n b = 1 }\n",
	"a{\nb}\n",
	"a {\n b = 1 }}\n",
	"a {\n b = 1 ]\n",
	"a {\n b = 1 )\n",
	"a {\n b = \"${x}\" }\n",
	"a {\n b = \"${x} }\"\n",
	"a {\n b = <<E\nx\nE\n}\n",
	"a {\n b = x ~}\n",
	"a {\n b = x ~} }\n",
	"a {\n b \"x\" }\n",
	"a {\n b = { c = 1 }}\n",
	"a {\n b c { }}\n",
	"a {\n b = (1 }\n",
	"a {\n b = [1 }\n",
	"a {\n b = 1 ? }\n",
	"a {\n b = !}\n",
	"a {\n b = a.}\n",
	"a {\n b = \"%{if x}\" }\n",
	"a {\n b = 1 = }\n",
	"a {\n b }\n",
	"a {\n 1 }\n",
	"a {\n} x }\n",
	"a {\n b = 1 /* c */ }\n",
	"a {\n b = 1\r}\n",
	"o {\na { b }\n}\n",
	"o {\na { b = 1 + }\n}\n",
	"o {\na { \"b\" = 1 }\n}\n",
	"o {\na { b = (1 }\n}\n",
	"o {\na { b = 1 }}\n",
	"a = ( 1 ]\nc {\nx = 1 }\n",
	"a \"${ ( }\" {\nx = 1 }\n",
	"a = [ 1 )\nc {\nx = 1 }\n",
	"a = \"${ 1 ]}\"\nc {\nx = 1 }\n",
	"a = <<E\n${ ( }\nE\nc {\nx = 1 }\n",
}
