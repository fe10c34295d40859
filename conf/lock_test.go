package conf

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/ibsm/ibsm/sdk"
)

var (
	shaA = strings.Repeat("a", 64)
	shaB = strings.Repeat("0123456789abcdef", 4)
)

func TestLockRoundTrip(t *testing.T) {
	entries := []LockEntry{
		{Kind: sdk.KindVLAssign, Name: "single", Version: "0.1.0", SHA256: shaA},
		{Kind: sdk.KindRouting, Name: "updn", Version: "1.2.3", SHA256: strings.ToUpper(shaB)},
		{Kind: sdk.KindRouting, Name: "minhop", SHA256: shaA},
		{Kind: sdk.KindLIDAssign, Name: "sequential", Version: "0.1.0", SHA256: shaB},
	}
	path := filepath.Join(t.TempDir(), LockFileName)
	if err := WriteLock(path, entries); err != nil {
		t.Fatal(err)
	}
	got, diags := ReadLock(path)
	if diags.HasErrors() {
		t.Fatalf("ReadLock: %s", FormatDiagnostics(diags))
	}
	for i := range got {
		if got[i].DeclRange.Filename != path || got[i].DeclRange.Start.Line == 0 {
			t.Errorf("entry %d range %v", i, got[i].DeclRange)
		}
		got[i].DeclRange = hcl.Range{}
	}
	want := []LockEntry{ // sorted by kind, then name; sha256 lower-cased
		{Kind: sdk.KindLIDAssign, Name: "sequential", Version: "0.1.0", SHA256: shaB},
		{Kind: sdk.KindRouting, Name: "minhop", SHA256: shaA},
		{Kind: sdk.KindRouting, Name: "updn", Version: "1.2.3", SHA256: shaB},
		{Kind: sdk.KindVLAssign, Name: "single", Version: "0.1.0", SHA256: shaA},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n%+v\nwant\n%+v", got, want)
	}
	if e := FindLock(got, sdk.KindRouting, "updn"); e == nil || e.Version != "1.2.3" {
		t.Errorf("FindLock = %+v", e)
	}
	if e := FindLock(got, sdk.KindLIDAssign, "updn"); e != nil {
		t.Errorf("FindLock matched across kinds: %+v", e)
	}

	// The file is stable: rewriting what was read gives the same bytes.
	first, _ := os.ReadFile(path)
	if err := WriteLock(path, got); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(path)
	if string(first) != string(second) {
		t.Errorf("rewrite changed the file:\n%s\n---\n%s", first, second)
	}
	wantText := `# This file is maintained by "ibsm plugins lock". Do not edit it by hand:
# rebuild or reinstall plugins, then run "ibsm plugins lock" again.

plugin "lid_assigner" "sequential" {
  version = "0.1.0"
  sha256  = "` + shaB + `"
}
`
	if !strings.HasPrefix(string(first), wantText) {
		t.Errorf("lock file starts:\n%s\nwant:\n%s", first, wantText)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("lock file mode %v, %v", st.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestLockEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), LockFileName)
	if err := WriteLock(path, nil); err != nil {
		t.Fatal(err)
	}
	got, diags := ReadLock(path)
	if diags.HasErrors() || len(got) != 0 {
		t.Errorf("ReadLock(empty) = %v, %s", got, FormatDiagnostics(diags))
	}
}

func TestParseLockErrors(t *testing.T) {
	tests := []struct {
		name, src, summary string
		line               int
	}{
		{"bad sha256", "plugin \"routing_engine\" \"a\" {\n  sha256 = \"abc\"\n}\n", "Invalid sha256", 2},
		{"missing sha256", "plugin \"routing_engine\" \"a\" {\n  version = \"1\"\n}\n", "Missing required argument", 1},
		{"unknown kind", "plugin \"router\" \"a\" {\n  sha256 = \"" + shaA + "\"\n}\n", "Unknown plugin kind", 1},
		{"duplicate", "plugin \"routing_engine\" \"a\" {\n  sha256 = \"" + shaA + "\"\n}\nplugin \"routing_engine\" \"a\" {\n  sha256 = \"" + shaB + "\"\n}\n", "Duplicate lock entry", 4},
		{"unknown attribute", "plugin \"routing_engine\" \"a\" {\n  sha256 = \"" + shaA + "\"\n  path = \"x\"\n}\n", "Unsupported argument", 3},
		{"syntax", "plugin \"routing_engine\" \"a\" {\n", "Unclosed configuration block", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, diags := ParseLock("plugins.lock.hcl", []byte(tt.src))
			if got != nil {
				t.Errorf("entries despite errors: %+v", got)
			}
			for _, d := range diags {
				if d.Summary == tt.summary {
					if d.Subject == nil || d.Subject.Filename != "plugins.lock.hcl" || d.Subject.Start.Line != tt.line {
						t.Errorf("%q at %v, want line %d", d.Summary, d.Subject, tt.line)
					}
					return
				}
			}
			t.Errorf("no %q diagnostic; got:\n%s", tt.summary, FormatDiagnostics(diags))
		})
	}
	if _, diags := ReadLock(filepath.Join(t.TempDir(), "missing.hcl")); !diags.HasErrors() ||
		!strings.Contains(diags[0].Detail, "ibsm plugins lock") {
		t.Errorf("ReadLock(missing) = %s", FormatDiagnostics(diags))
	}
}

func TestWriteLockRejects(t *testing.T) {
	tests := []struct {
		name    string
		entries []LockEntry
	}{
		{"bad sha", []LockEntry{{Kind: sdk.KindRouting, Name: "a", SHA256: "abc"}}},
		{"bad kind", []LockEntry{{Kind: "router", Name: "a", SHA256: shaA}}},
		{"bad name", []LockEntry{{Kind: sdk.KindRouting, Name: "a b", SHA256: shaA}}},
		{"duplicate", []LockEntry{{Kind: sdk.KindRouting, Name: "a", SHA256: shaA}, {Kind: sdk.KindRouting, Name: "a", SHA256: shaB}}},
	}
	for _, tt := range tests {
		path := filepath.Join(t.TempDir(), LockFileName)
		if err := WriteLock(path, tt.entries); err == nil {
			t.Errorf("%s: WriteLock accepted %+v", tt.name, tt.entries)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s: a lock file was written", tt.name)
		}
	}
}

func TestFileSHA256(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ content, want string }{
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	}
	for i, tt := range tests {
		p := filepath.Join(dir, string(rune('a'+i)))
		if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := FileSHA256(p); err != nil || got != tt.want {
			t.Errorf("FileSHA256(%q) = %s, %v; want %s", tt.content, got, err, tt.want)
		}
	}
	if _, err := FileSHA256(filepath.Join(dir, "missing")); err == nil {
		t.Error("FileSHA256(missing) succeeded")
	}
}

func TestVerifyLock(t *testing.T) {
	src := strings.Replace(minimal, `{ path = "minhop" }`, "{\n  path = \"minhop\"\n  sha256 = \""+shaA+"\"\n}", 1)
	cfg, diags := LoadBytes("ibsm.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics(diags))
	}
	all := []LockEntry{
		{Kind: sdk.KindRouting, Name: "minhop", SHA256: shaA},
		{Kind: sdk.KindLIDAssign, Name: "sequential", SHA256: shaB},
		{Kind: sdk.KindVLAssign, Name: "single", SHA256: shaB},
	}
	if d := cfg.VerifyLock(all); len(d) != 0 {
		t.Errorf("VerifyLock(all) = %s", FormatDiagnostics(d))
	}
	stale := append([]LockEntry{{Kind: sdk.KindRouting, Name: "minhop", SHA256: shaB}}, all[1:2]...)
	d := cfg.VerifyLock(stale)
	got := map[string]int{}
	for _, x := range d {
		got[x.Summary] = x.Subject.Start.Line
	}
	want := map[string]int{"Plugin pin disagrees with lock file": 7, "Plugin not locked": 10}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("VerifyLock(stale) = %v, want %v\n%s", got, want, FormatDiagnostics(d))
	}
}
