package conf

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// fuzzMaxStack bounds the stack of a fuzzed call: parsing and decoding
// anything within MaxNesting fits in 1 MiB, and a file that got past the
// nesting check while making HCL nest a few hundred levels deeper crashes
// the fuzzer here instead of a daemon in the field.
const fuzzMaxStack = 1 << 20

// limitSeeds are inputs at and around the size and nesting limits, in the
// shape of source (a function of one attribute value).
func limitSeeds(source func(value string) string) [][]byte {
	var out [][]byte
	for _, x := range nestings {
		for _, n := range []int{MaxNesting - configDepth, MaxNesting - configDepth + 1, 1000} {
			out = append(out, []byte(source(x.nested(n))))
		}
	}
	for _, v := range []string{
		`"` + strings.Repeat("%{ if true }", MaxNesting) + strings.Repeat("%{ endif }", MaxNesting) + `"`,
		`"${"${"${` + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + `}"}"}"`,
		"<<EOT\n${<<-X\n  ${" + strings.Repeat("(", MaxNesting) + "1" + strings.Repeat(")", MaxNesting) + "}\n  X\n}\nEOT\n",
		`"` + strings.Repeat("a", 300) + `"`,
		`"` + strings.Repeat("[{(", 1000) + ` $${[ %%{[ \" \\"`,
		`"` + strings.Repeat("x", 64<<10) + `"`,
	} {
		out = append(out, []byte(source(v)))
	}
	// Broken lines after which HCL's parser keeps blocks open, repeated
	// enough to overflow fuzzMaxStack if the check missed them.
	for _, p := range recoveryPatterns {
		out = append(out, []byte(strings.Repeat(p, 400)))
	}
	return out
}

// FuzzLoadBytes: arbitrary input never panics or overflows the stack, a
// Config comes back exactly when there is no error, a returned Config is
// internally consistent, messages stay short, and the nesting check's view
// of the file agrees with HCL's own scanner.
func FuzzLoadBytes(f *testing.F) {
	seeds, _ := filepath.Glob("examples/*.hcl")
	seeds = append(seeds, "testdata/full.hcl")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(minimal))
	f.Add([]byte(pluginSrc("path = \"e\"\nconfig {\n  root_guids = [\"a\"]\n  max_vls = 2\n}")))
	for _, s := range limitSeeds(configWith) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		defer debug.SetMaxStack(debug.SetMaxStack(fuzzMaxStack))
		cfg, diags := LoadBytes("/x/ibsm.hcl", src)
		if (cfg == nil) != diags.HasErrors() {
			t.Fatalf("cfg nil = %v but errors = %v", cfg == nil, diags.HasErrors())
		}
		checkDiagnostics(t, diags)
		checkLexer(t, src, diags)
		if cfg == nil {
			return
		}
		for _, p := range cfg.Engines() {
			if p == nil {
				t.Fatal("routing names an undeclared engine")
			}
		}
		if cfg.LIDAssigner() == nil || cfg.VLAssigner() == nil {
			t.Fatal("routing names an undeclared assigner")
		}
		if cfg.SM.LMC > 7 || cfg.SM.Priority > 15 || cfg.SM.MADWindow < 1 || cfg.SM.SweepInterval <= 0 {
			t.Fatalf("out-of-range SM settings: %+v", cfg.SM)
		}
		for _, p := range cfg.Plugins {
			if v, d := p.DecodeConfig(engineSchema()); d.HasErrors() != (v == cty.NilVal) {
				t.Fatalf("DecodeConfig: value %#v with errors %v", v, d.HasErrors())
			}
		}
	})
}

// FuzzConfigJSON: LoadBytes on JSON syntax never panics or overflows the
// stack, and keeps its messages short.
func FuzzConfigJSON(f *testing.F) {
	doc := func(v string) string {
		return `{
  "fabric": {"topology": "f.net"},
  "plugin": {
    "routing_engine": {"e": {"path": "e", "config": {"root_guids": ["a"], "v": ` + v + `}}},
    "lid_assigner": {"s": {"path": "s"}},
    "vl_assigner": {"v": {"path": "v"}}
  },
  "routing": {"engine": "e", "lid_assigner": "s", "vl_assigner": "v"}
}`
	}
	f.Add([]byte(doc("1")))
	for _, v := range []string{
		strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting),
		strings.Repeat(`{"a":`, MaxNesting) + "1" + strings.Repeat("}", MaxNesting),
		strings.Repeat("[", 1000) + strings.Repeat("]", 1000),
		`"${` + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + `}"`,
		`"${\"${` + strings.Repeat("!", MaxNesting) + `x}\"}"`,
		`"\u0024{` + strings.Repeat("(", MaxNesting) + "1" + strings.Repeat(")", MaxNesting) + `}"`,
		`"` + strings.Repeat("x", 300) + `"`,
	} {
		f.Add([]byte(doc(v)))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		defer debug.SetMaxStack(debug.SetMaxStack(fuzzMaxStack))
		cfg, diags := LoadBytes("/x/ibsm.json", src)
		if (cfg == nil) != diags.HasErrors() {
			t.Fatalf("cfg nil = %v but errors = %v", cfg == nil, diags.HasErrors())
		}
		checkDiagnostics(t, diags)
		if cfg == nil {
			return
		}
		for _, p := range cfg.Plugins {
			if v, d := p.DecodeConfig(engineSchema()); d.HasErrors() != (v == cty.NilVal) {
				t.Fatalf("DecodeConfig: value %#v with errors %v", v, d.HasErrors())
			} else if v != cty.NilVal {
				HashValue(v)
			}
		}
	})
}

// checkDiagnostics: errors point into the file, and no message line
// echoes a long value.
func checkDiagnostics(t *testing.T, diags hcl.Diagnostics) {
	t.Helper()
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Subject == nil {
			t.Errorf("error without a source range: %s", d.Summary)
		}
	}
	for _, line := range strings.Split(FormatDiagnostics(diags), "\n") {
		if len(line) > 2*(maxMessageChars+64)+100 {
			t.Errorf("diagnostic of %d bytes: %.300s", len(line), line)
		}
	}
}

// checkLexer: the nesting check never sees less of src as code than HCL's
// own scanner does, and on valid ASCII input sees exactly as much.
func checkLexer(t *testing.T, src []byte, diags hcl.Diagnostics) {
	t.Helper()
	ours, ref := lexerDepth(src), hclDepth(src)
	if ours < ref {
		t.Fatalf("nesting check counts %d levels where HCL's scanner gives %d", ours, ref)
	}
	for _, d := range diags {
		if d.Summary == "Nested too deeply" || d.Summary == "File too large" {
			return
		}
	}
	for _, c := range src {
		if c >= utf8.RuneSelf {
			return
		}
	}
	if _, pd := hclsyntax.ParseConfig(src, "x", hcl.InitialPos); !pd.HasErrors() && ours != ref {
		t.Fatalf("valid input: nesting check counts %d levels, HCL's scanner gives %d", ours, ref)
	}
}

// FuzzParseLock: arbitrary input never panics or overflows the stack, and
// whatever parses writes back to a file that parses to the same entries.
func FuzzParseLock(f *testing.F) {
	src, _ := FormatLock([]LockEntry{{Kind: "routing_engine", Name: "updn", Version: "1", SHA256: shaA}})
	f.Add(src)
	f.Add([]byte("plugin \"vl_assigner\" \"x\" {\n  sha256 = \"" + shaB + "\"\n}\n"))
	lockWith := func(v string) string { return "plugin \"vl_assigner\" \"x\" {\n  sha256 = " + v + "\n}\n" }
	for _, s := range limitSeeds(lockWith) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		defer debug.SetMaxStack(debug.SetMaxStack(fuzzMaxStack))
		entries, diags := ParseLock("l.hcl", src)
		checkDiagnostics(t, diags)
		if diags.HasErrors() {
			return
		}
		out, err := FormatLock(entries)
		if err != nil {
			t.Fatalf("FormatLock of parsed entries: %v", err)
		}
		again, diags := ParseLock("l.hcl", out)
		if diags.HasErrors() {
			t.Fatalf("reparse: %s\n%s", FormatDiagnostics(diags), out)
		}
		strip := func(es []LockEntry) map[string]LockEntry {
			m := map[string]LockEntry{}
			for _, e := range es {
				e.DeclRange = hcl.Range{}
				m[key(e.Kind, e.Name)] = e
			}
			return m
		}
		if !reflect.DeepEqual(strip(entries), strip(again)) {
			t.Fatalf("round trip changed entries:\n%+v\n%+v", entries, again)
		}
	})
}

// FuzzNestingBound: whatever HCL's parser makes of a broken line, the
// nesting check bounds it. Error recovery can leave one block open per
// occurrence of a line, so the line is repeated 500 times: either the
// check refuses that, or HCL parses it within a stack that 500 levels left
// open would overflow.
func FuzzNestingBound(f *testing.F) {
	for _, p := range recoveryPatterns[:6] {
		f.Add([]byte(p))
	}
	f.Add([]byte("o {\na { b }\n}\n"))
	f.Add([]byte("a = [{x = -1}, \"${!y}\"]\n"))
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(line) > 32 {
			return
		}
		src := bytes.Repeat(line, 500)
		defer debug.SetMaxStack(debug.SetMaxStack(1 << 20))
		if checkLimits("configuration file", "x.hcl", src, false).HasErrors() {
			return
		}
		hclsyntax.ParseConfig(src, "x.hcl", hcl.InitialPos)
	})
}
