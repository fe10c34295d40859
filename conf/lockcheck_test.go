package conf

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/ibsm/ibsm/sdk"
)

// lockedSetup writes a configuration with three plugin binaries (small
// executable files) into a fresh directory and returns it loaded.
func lockedSetup(t *testing.T) *Config {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{"e", "s", "v"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n# plugin "+n+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "f.net"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ibsm.hcl")
	if err := os.WriteFile(path, []byte(pluginSrc(`path = "e"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := Load(path)
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics(diags))
	}
	return cfg
}

// lockAll writes a lock with the binaries' real hashes.
func lockAll(t *testing.T, cfg *Config) []LockEntry {
	t.Helper()
	var es []LockEntry
	for _, p := range cfg.Plugins {
		sum, err := FileSHA256(p.Path)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, LockEntry{Kind: p.Kind, Name: p.Name, Version: "1.0.0", SDKVersion: sdk.SDKVersion, Protocol: sdk.ProtocolVersion, SHA256: sum})
	}
	if err := WriteLock(cfg.LockPath(), es); err != nil {
		t.Fatal(err)
	}
	return es
}

func TestReadLockFileAbsent(t *testing.T) {
	cfg := lockedSetup(t)
	l, diags := cfg.ReadLockFile()
	if l != nil || len(diags) != 0 {
		t.Fatalf("no lock file: %+v %s", l, FormatDiagnostics(diags))
	}
}

func TestLockSDKVersionAndProtocolRoundTrip(t *testing.T) {
	cfg := lockedSetup(t)
	lockAll(t, cfg)
	src, _ := os.ReadFile(cfg.LockPath())
	for _, want := range []string{`sdk_version = "` + sdk.SDKVersion + `"`, fmt.Sprintf("protocol    = %d", sdk.ProtocolVersion)} {
		if !strings.Contains(string(src), want) {
			t.Errorf("lock file lacks %q:\n%s", want, src)
		}
	}
	l, diags := cfg.ReadLockFile()
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics(diags))
	}
	e := l.Find(cfg.Plugin(sdk.KindRouting, "e"))
	if e == nil || e.SDKVersion != sdk.SDKVersion || e.Protocol != sdk.ProtocolVersion || e.Version != "1.0.0" {
		t.Fatalf("entry read back: %+v", e)
	}
	if d := cfg.CheckLock(l); len(d) != 0 {
		t.Fatalf("a fresh lock does not check: %s", FormatDiagnostics(d))
	}
}

// TestTamperedBinaryNamesLockEntry: the diagnostic points at the lock
// entry (file:line) and carries both hashes.
func TestTamperedBinaryNamesLockEntry(t *testing.T) {
	cfg := lockedSetup(t)
	es := lockAll(t, cfg)
	p := cfg.Plugin(sdk.KindRouting, "e")
	if err := os.WriteFile(p.Path, []byte("#!/bin/sh\n# tampered\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	now, _ := FileSHA256(p.Path)
	l, _ := cfg.ReadLockFile()
	e := l.Find(p)
	diags := cfg.CheckLock(l)
	if !diags.HasErrors() || len(diags) != 1 {
		t.Fatalf("tampered binary: %s", FormatDiagnostics(diags))
	}
	msg := FormatDiagnostics(diags)
	var old string
	for _, x := range es {
		if x.Name == "e" {
			old = x.SHA256
		}
	}
	where := fmt.Sprintf("%s:%d,", cfg.LockPath(), e.DeclRange.Start.Line)
	for _, want := range []string{where, "does not match the lock file", now, old, p.Path, "was not run", "ibsm plugins lock"} {
		if !strings.Contains(msg, want) {
			t.Errorf("diagnostic lacks %q:\n%s", want, msg)
		}
	}
}

func TestMissingLockEntry(t *testing.T) {
	cfg := lockedSetup(t)
	es := lockAll(t, cfg)
	var kept []LockEntry
	for _, e := range es {
		if e.Name != "s" {
			kept = append(kept, e)
		}
	}
	if err := WriteLock(cfg.LockPath(), kept); err != nil {
		t.Fatal(err)
	}
	l, _ := cfg.ReadLockFile()
	msg := FormatDiagnostics(cfg.CheckLock(l))
	for _, want := range []string{"ibsm.hcl:7,", "Plugin not locked", `plugin "lid_assigner" "s" has no entry`, "ibsm plugins lock"} {
		if !strings.Contains(msg, want) {
			t.Errorf("diagnostic lacks %q:\n%s", want, msg)
		}
	}
}

func TestStaleLockEntryWarns(t *testing.T) {
	cfg := lockedSetup(t)
	es := lockAll(t, cfg)
	es = append(es, LockEntry{Kind: sdk.KindRouting, Name: "gone", SHA256: strings.Repeat("c", 64)})
	if err := WriteLock(cfg.LockPath(), es); err != nil {
		t.Fatal(err)
	}
	l, _ := cfg.ReadLockFile()
	diags := cfg.CheckLock(l)
	if diags.HasErrors() || len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || !strings.Contains(diags[0].Detail, `"gone" is locked but not declared`) {
		t.Fatalf("stale entry: %s", FormatDiagnostics(diags))
	}
}

func TestMalformedLockFile(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"syntax", "plugin \"routing_engine\" \"e\" {\n  sha256 = \n}\n", "plugins.lock.hcl:2,"},
		{"bad hash", "plugin \"routing_engine\" \"e\" {\n  sha256 = \"abc\"\n}\n", "Invalid sha256"},
		{"bad protocol", "plugin \"routing_engine\" \"e\" {\n  protocol = 0\n  sha256 = \"" + strings.Repeat("a", 64) + "\"\n}\n", "Invalid protocol"},
		{"unknown attribute", "plugin \"routing_engine\" \"e\" {\n  sha = \"x\"\n}\n", "Unsupported argument"},
		{"missing label", "plugin \"routing_engine\" {\n}\n", "plugins.lock.hcl:1,"},
	}
	for _, tc := range cases {
		cfg := lockedSetup(t)
		if err := os.WriteFile(cfg.LockPath(), []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		l, diags := cfg.ReadLockFile()
		if l != nil || !diags.HasErrors() || !strings.Contains(FormatDiagnostics(diags), tc.want) {
			t.Errorf("%s: lock %+v, diagnostics %s (want %q)", tc.name, l, FormatDiagnostics(diags), tc.want)
		}
	}
	// Present but unreadable is an error, not "no lock".
	cfg := lockedSetup(t)
	if err := os.Mkdir(cfg.LockPath(), 0o755); err != nil {
		t.Fatal(err)
	}
	if l, diags := cfg.ReadLockFile(); l != nil || !diags.HasErrors() || !strings.Contains(FormatDiagnostics(diags), "Cannot read plugin lock file") {
		t.Errorf("lock file is a directory: %+v %s", l, FormatDiagnostics(diags))
	}
}

func TestCheckReported(t *testing.T) {
	e := &LockEntry{Kind: sdk.KindRouting, Name: "e", Version: "1.0.0", SDKVersion: "0.2.0", Protocol: 2, SHA256: strings.Repeat("a", 64),
		DeclRange: hcl.Range{Filename: "plugins.lock.hcl", Start: hcl.Pos{Line: 4, Column: 1}, End: hcl.Pos{Line: 4, Column: 30}}}
	ok := sdk.Info{Version: "1.0.0", SDKVersion: "0.2.0"}
	if err := e.CheckReported(ok, 2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		info  sdk.Info
		proto int
		want  string
	}{
		{sdk.Info{Version: "1.0.1", SDKVersion: "0.2.0"}, 2, `version "1.0.0", the plugin reports "1.0.1"`},
		{sdk.Info{Version: "1.0.0", SDKVersion: "0.3.0"}, 2, `SDK version "0.2.0", the plugin reports "0.3.0"`},
		{ok, 3, "plugin protocol 2, the host negotiated 3"},
	} {
		err := e.CheckReported(tc.info, tc.proto)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "plugins.lock.hcl:4,") {
			t.Errorf("CheckReported(%+v, %d) = %v, want %q", tc.info, tc.proto, err, tc.want)
		}
	}
	// An old lock entry (no SDK version, no protocol) checks the version only.
	old := &LockEntry{Kind: sdk.KindRouting, Name: "e", Version: "1.0.0"}
	if err := old.CheckReported(sdk.Info{Version: "1.0.0", SDKVersion: "9.9.9"}, 7); err != nil {
		t.Errorf("old entry: %v", err)
	}
}
