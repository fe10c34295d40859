package conf

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// FuzzLoadBytes: arbitrary input never panics, a Config comes back exactly
// when there is no error, and a returned Config is internally consistent.
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
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, diags := LoadBytes("/x/ibsm.hcl", src)
		if (cfg == nil) != diags.HasErrors() {
			t.Fatalf("cfg nil = %v but errors = %v", cfg == nil, diags.HasErrors())
		}
		for _, d := range diags {
			if d.Severity == hcl.DiagError && d.Subject == nil {
				t.Errorf("error without a source range: %s", d.Summary)
			}
		}
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
		if cfg.RoutingHash() == 0 {
			t.Fatal("routing hash 0")
		}
		for _, p := range cfg.Plugins {
			if v, d := p.DecodeConfig(engineSchema()); d.HasErrors() != (v == cty.NilVal) {
				t.Fatalf("DecodeConfig: value %#v with errors %v", v, d.HasErrors())
			}
		}
	})
}

// FuzzParseLock: arbitrary input never panics, and whatever parses writes
// back to a file that parses to the same entries.
func FuzzParseLock(f *testing.F) {
	src, _ := FormatLock([]LockEntry{{Kind: "routing_engine", Name: "updn", Version: "1", SHA256: shaA}})
	f.Add(src)
	f.Add([]byte("plugin \"vl_assigner\" \"x\" {\n  sha256 = \"" + shaB + "\"\n}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		entries, diags := ParseLock("l.hcl", src)
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
