package sm

import (
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ibsm/ibsm/host/lidstore"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
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
	// ofTopo, ofLIDs: the plan whose endpoints m holds exactly, each by
	// its port GUID (none without one), as saveLIDs last wrote or kept
	// it; bases is m's base LIDs, made on first use. A sweep after a
	// cable event that kept every LID then neither builds nor compares
	// 47,824 entries (holds, basesOf).
	ofTopo *topology.Topology
	ofLIDs []plan.PortLID
	bases  map[uint64]uint16
}

// same reports whether path is still the file f knows.
func (f *lidFile) same(path string) bool {
	st, err := os.Stat(path)
	return err == nil && f.m != nil && st.Size() == f.size && st.ModTime().Equal(f.mtime)
}

// remember records m as path's content now.
func (f *lidFile) remember(path string, m map[uint64]lidstore.Range) {
	f.m, f.ofTopo, f.ofLIDs, f.bases = nil, nil, nil, nil
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

// saveOf is save of the LIDs of plan lids for t (Endpoints() order);
// whole: every endpoint has a port GUID.
func (f *lidFile) saveOf(path string, m map[uint64]lidstore.Range, t *topology.Topology, lids []plan.PortLID, whole bool) error {
	if err := f.save(path, m); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if whole && f.m != nil {
		f.ofTopo, f.ofLIDs = t, lids
	}
	return nil
}

// holds reports whether path holds what saveOf would write for t and
// lids, known without building it: the file is the one last saved, for a
// plan with the same endpoints (port GUIDs included) and LIDs. It then
// records t and lids as the plan the file holds.
func (f *lidFile) holds(path string, t *topology.Topology, lids []plan.PortLID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ofTopo == nil || !slices.Equal(f.ofLIDs, lids) || !slices.Equal(f.ofTopo.Endpoints(), t.Endpoints()) {
		return false
	}
	changed, ok := t.Unshared(f.ofTopo)
	if !ok {
		return false
	}
	for _, i := range changed {
		for _, ep := range t.NodeEndpoints(i) {
			if t.Port(ep).GUID != f.ofTopo.Port(ep).GUID {
				return false
			}
		}
	}
	if !f.same(path) {
		return false
	}
	f.ofTopo, f.ofLIDs = t, lids
	return true
}

// basesOf returns the file's base LIDs by port GUID if it holds exactly
// the LIDs lids of plan t (nil if not). The map is shared: do not change
// it.
func (f *lidFile) basesOf(path string, t *topology.Topology, lids []plan.PortLID) map[uint64]uint16 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ofTopo != t || !slices.Equal(f.ofLIDs, lids) || !f.same(path) {
		return nil
	}
	if f.bases == nil {
		f.bases = make(map[uint64]uint16, len(f.m))
		for g, r := range f.m {
			f.bases[g] = r.Min
		}
	}
	return f.bases
}
