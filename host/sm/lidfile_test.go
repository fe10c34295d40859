package sm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/lidstore"
)

// TestLIDFile: the guid2lid file is written only when its LIDs change or
// it changed on disk, and read again only when it changed on disk.
func TestLIDFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "guid2lid")
	a := map[uint64]lidstore.Range{0x10: {Min: 1, Max: 1}, 0x20: {Min: 2, Max: 3}}
	b := map[uint64]lidstore.Range{0x10: {Min: 1, Max: 1}, 0x20: {Min: 4, Max: 5}}
	var f lidFile
	mtime := func() time.Time {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.ModTime()
	}
	steps := []struct {
		name    string
		do      func() error
		written bool // the file was (re)written
	}{
		{"first save writes", func() error { return f.save(path, a) }, true},
		{"same LIDs: nothing written", func() error { return f.save(path, a) }, false},
		{"other LIDs are written", func() error { return f.save(path, b) }, true},
		{"the file removed: written again", func() error {
			if err := os.Remove(path); err != nil {
				return err
			}
			return f.save(path, b)
		}, true},
	}
	for _, st := range steps {
		before, _ := os.Stat(path)
		time.Sleep(2 * time.Millisecond) // a rewrite moves the modification time
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		written := before == nil || !mtime().Equal(before.ModTime())
		if written != st.written {
			t.Errorf("%s: written %v, want %v", st.name, written, st.written)
		}
	}
	// Someone else's edit is read, not the remembered map.
	time.Sleep(2 * time.Millisecond)
	if err := lidstore.Save(path, a); err != nil {
		t.Fatal(err)
	}
	got, err := f.load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got[0x20] != a[0x20] {
		t.Fatalf("load after an outside edit gave %v, want the file's %v", got[0x20], a[0x20])
	}
}
