package sm

import (
	"maps"
	"os"
	"sync"
	"time"

	"github.com/ibsm/ibsm/host/lidstore"
)

// lidFile remembers the guid2lid file as this SM last read or wrote it,
// so that a sweep whose LIDs did not change neither parses nor rewrites
// 47,824 lines (ft3-56: ~0.05 s a cable event). The file's size and
// modification time tell whether someone else changed it since.
type lidFile struct {
	mu    sync.Mutex
	m     map[uint64]lidstore.Range
	size  int64
	mtime time.Time
}

// same reports whether path is still the file f knows.
func (f *lidFile) same(path string) bool {
	st, err := os.Stat(path)
	return err == nil && f.m != nil && st.Size() == f.size && st.ModTime().Equal(f.mtime)
}

// remember records m as path's content now.
func (f *lidFile) remember(path string, m map[uint64]lidstore.Range) {
	f.m = nil
	if st, err := os.Stat(path); err == nil {
		f.m, f.size, f.mtime = m, st.Size(), st.ModTime()
	}
}

// load returns path's ranges (lidstore.Load), from memory if the file is
// the one last read or written. The map is shared: do not change it.
func (f *lidFile) load(path string) (map[uint64]lidstore.Range, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.same(path) {
		return f.m, nil
	}
	m, err := lidstore.Load(path)
	if err != nil {
		return nil, err
	}
	f.remember(path, m)
	return m, nil
}

// save writes m to path (lidstore.Save) unless the file already holds it.
func (f *lidFile) save(path string, m map[uint64]lidstore.Range) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.same(path) && maps.Equal(f.m, m) {
		return nil
	}
	if err := lidstore.Save(path, m); err != nil {
		return err
	}
	f.remember(path, m)
	return nil
}
