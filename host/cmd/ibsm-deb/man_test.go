package main

import (
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// stubIBSM writes a shell script that answers like ibsm: its help names
// the arguments it got, with lines troff would take for requests.
func stubIBSM(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "ibsm")
	script := `#!/bin/sh
echo "usage: ibsm $*"
echo ".config is not a request"
echo "'quoted' neither"
echo 'a back\slash'
[ "$1" = "--help" ] && exit 0
exit 2
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWriteMan: the page carries every command's help, escaped for troff,
// and (where groff is installed) formats without a warning.
func TestWriteMan(t *testing.T) {
	dir := t.TempDir()
	ibsm := stubIBSM(t, dir)
	page := filepath.Join(dir, "ibsm.8.gz")
	if err := writeMan(ibsm, "1.2.3", page); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("not gzipped: %v", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	man := string(b)
	checks := []struct{ what, want string }{
		{"title", `.TH IBSM 8 `},
		{"version", `"ibsm 1.2.3"`},
		{"synopsis from --help", "usage: ibsm --help"},
		{"a leading dot escaped", `\&.config is not a request`},
		{"a leading quote escaped", `\&'quoted' neither`},
		{"a backslash escaped", `a back\eslash`},
		{"files", "/etc/ibsm/ibsm.hcl"},
	}
	for _, c := range manCommands {
		checks = append(checks, struct{ what, want string }{"section " + c.name, ".SS " + c.name + "\n.nf\nusage: ibsm " + strings.Join(c.args, " ")})
	}
	for _, c := range checks {
		if !strings.Contains(man, c.want) {
			t.Errorf("%s: the page lacks %q", c.what, c.want)
		}
	}
	for _, l := range strings.Split(man, "\n") {
		if strings.HasPrefix(l, ".config") || strings.HasPrefix(l, "'quoted") {
			t.Errorf("an unescaped help line troff would read as a request: %q", l)
		}
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Log("groff is not installed: the page is not formatted")
		return
	}
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = strings.NewReader(man)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("groff -man -ww: %v\n%s", err, out)
	}
}
