package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadShowsTheLine: a configuration error names file:line,col and
// shows the offending source line with a caret under the spot; nothing
// loads.
func TestLoadShowsTheLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ibsm.hcl")
	src := "fabric {\n  transport = \"sim\"\n  no_such_attribute = 1\n}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := (&common{config: path}).load()
	if err == nil || cfg != nil {
		t.Fatalf("load = %v, %v; want an error and no configuration", cfg, err)
	}
	msg := err.Error()
	for _, want := range []string{"invalid configuration, nothing applied", path + ":3,3-", "  3:   no_such_attribute = 1\n", "\n       ^\n"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}
