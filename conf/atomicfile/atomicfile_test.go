package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFunc(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		path    string // relative to the test dir
		write   func(io.Writer) error
		wantErr bool
		want    string // content of path afterwards
	}{
		{"replaces", "f", func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err }, false, "new\n"},
		{"creates parents", "a/b/f", func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }, false, "x"},
		{"writer fails: old content stays", "f", func(w io.Writer) error { io.WriteString(w, "half"); return boom }, true, "old\n"},
		{"rename blocked: old content stays", "blocked", func(w io.Writer) error { return nil }, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "f"), []byte("old\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			// A non-empty directory in the way of the rename.
			if err := os.MkdirAll(filepath.Join(dir, "blocked", "x"), 0o755); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, tc.path)
			err := WriteFunc(p, tc.write)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.want != "" {
				b, err := os.ReadFile(p)
				if err != nil || string(b) != tc.want {
					t.Errorf("content %q, %v; want %q", b, err, tc.want)
				}
				if fi, err := os.Stat(p); err == nil && !tc.wantErr && fi.Mode().Perm() != 0o644 {
					t.Errorf("mode %v, want 0644", fi.Mode().Perm())
				}
			}
			// No temp file left behind in the file's directory.
			ents, _ := os.ReadDir(filepath.Dir(p))
			for _, e := range ents {
				if len(e.Name()) > 5 && e.Name()[:5] == ".tmp-" {
					t.Errorf("temp file %s left", e.Name())
				}
			}
		})
	}
}
