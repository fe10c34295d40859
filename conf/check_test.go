package conf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // WriteFile keeps an existing file's mode
			t.Fatal(err)
		}
	}
	write("f.net", "# topology\n", 0o644)
	write("minhop", "binary", 0o755)
	write("seq", "binary", 0o644) // not executable
	// "single" is missing.
	pin := "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" // sha256("abc")
	src := strings.Replace(minimal, `{ path = "minhop" }`, "{\n  path = \"minhop\"\n  sha256 = \""+pin+"\"\n}", 1)
	cfgPath := filepath.Join(dir, "ibsm.hcl")
	write("ibsm.hcl", src, 0o644)
	cfg, diags := Load(cfgPath)
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics(diags))
	}
	got := map[string]int{}
	for _, d := range cfg.CheckFiles() {
		got[d.Summary] = d.Subject.Start.Line
	}
	want := map[string]int{
		"Plugin checksum mismatch":     7,
		"Plugin binary not executable": 9,
		"Plugin binary not found":      10,
	}
	if len(got) != len(want) {
		t.Errorf("CheckFiles = %v, want %v", got, want)
	}
	for s, l := range want {
		if got[s] != l {
			t.Errorf("%q on line %d, want %d (all: %v)", s, got[s], l, got)
		}
	}

	// Fix everything: no diagnostics.
	write("minhop", "abc", 0o755)
	write("seq", "binary", 0o755)
	write("single", "binary", 0o755)
	if diags := cfg.CheckFiles(); len(diags) != 0 {
		t.Errorf("CheckFiles after fixing = %s", FormatDiagnostics(diags))
	}
	os.Remove(filepath.Join(dir, "f.net"))
	if diags := cfg.CheckFiles(); len(diags) != 1 || diags[0].Summary != "Topology file not found" || diags[0].Subject.Start.Line != 3 {
		t.Errorf("CheckFiles without topology = %s", FormatDiagnostics(diags))
	}
}
