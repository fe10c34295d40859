package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ibsm/ibsm/conf/atomicfile"
	"github.com/ibsm/ibsm/host/mcast"
	"github.com/ibsm/ibsm/host/sa"
)

// SAStateFile, in the state directory, keeps what clients registered with
// this SM (multicast groups and their members, ServiceRecords, InformInfo
// subscriptions), so that a restarted SM need not ask every port to
// register again: ClientReregister is then sent only to ports another SM
// served (sm.KeepRegistrations).
const SAStateFile = "sa-state.json"

const saStateVersion = 1

type saState struct {
	Version int `json:"version"`
	// SMPortGUID: registrations belong to the SM port they were made with.
	SMPortGUID uint64        `json:"sm_port_guid"`
	Saved      time.Time     `json:"saved"`
	Groups     []mcast.Group `json:"groups"`
	sa.Registrations
}

// saKeeper writes the SA state whenever it changed, at most once a second,
// and once more when the App closes.
type saKeeper struct {
	path  string
	self  uint64
	store func() *mcast.Store
	agent *sa.Agent
	log   interface{ Warn(string, ...any) }

	mu      sync.Mutex
	saved   uint64 // the generation last written
	wrote   bool
	warned  bool
	stop    chan struct{}
	stopped chan struct{}
	closed  sync.Once
}

// loadSAState reads the SA state of the last run (nil when there is none
// or it cannot be used, which the log says).
func (a *App) loadSAState(path string, self uint64) *saState {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var st saState
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	switch {
	case err != nil:
	case st.Version != saStateVersion:
		err = fmt.Errorf("version %d, this ibsm reads %d", st.Version, saStateVersion)
	case st.SMPortGUID != self:
		err = fmt.Errorf("saved by the SM on port %#016x, this SM is on %#016x", st.SMPortGUID, self)
	}
	if err != nil {
		a.Log.Warn("SA state of the last run not used: clients will be asked to re-register", "file", path, "error", err)
		return nil
	}
	return &st
}

// restoreGroups puts the saved multicast groups into store (before the
// IPoIB groups are ensured, so theirs keep their MLIDs). False when some
// could not be restored.
func (a *App) restoreGroups(st *saState, store *mcast.Store) bool {
	if st == nil || len(st.Groups) == 0 {
		return true
	}
	n, err := store.Restore(st.Groups)
	if err != nil {
		a.Log.Warn("multicast groups of the last run partly restored: clients will be asked to re-register", "restored", n, "error", err)
		return false
	}
	return true
}

// restoreSA finishes what New started: the registrations go back into the
// SA agent and, when everything came back, the SM keeps its clients'
// registrations; the keeper starts.
func (a *App) restoreSA(path string, self uint64, st *saState, groupsOK bool) {
	agent, _ := a.SM.Agent.(*sa.Agent)
	if agent == nil {
		return
	}
	if st != nil {
		ok := groupsOK
		if len(st.Groups) > 0 && a.SM.MulticastStore() == nil {
			a.Log.Warn("the last run kept multicast groups but no multicast_router is configured: clients will be asked to re-register", "groups", len(st.Groups))
			ok = false
		}
		if err := agent.Restore(st.Registrations); err != nil {
			a.Log.Warn("SA registrations of the last run partly restored: clients will be asked to re-register", "error", err)
			ok = false
		}
		if ok {
			a.SM.KeepRegistrations()
			a.Log.Info("SA state of the last run restored: only ports another SM served are asked to re-register",
				"file", path, "saved", st.Saved.Format(time.RFC3339), "groups", len(st.Groups),
				"services", len(st.Services), "subscriptions", len(st.Subscriptions))
		}
	}
	k := &saKeeper{path: path, self: self, store: a.SM.MulticastStore, agent: agent, log: a.Log,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	a.saKeeper = k
	go k.run()
}

func (k *saKeeper) generation() uint64 {
	g := k.agent.RegistrationsGeneration()
	if s := k.store(); s != nil {
		g += s.Generation()
	}
	return g
}

func (k *saKeeper) run() {
	defer close(k.stopped)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			k.save()
		case <-k.stop:
			return
		}
	}
}

// save writes the state if it changed since the last write. A failed
// write is a warning, once until a write succeeds: it costs a restart's
// ClientReregister, not routing.
func (k *saKeeper) save() {
	k.mu.Lock()
	defer k.mu.Unlock()
	gen := k.generation()
	if k.wrote && gen == k.saved {
		return
	}
	st := saState{Version: saStateVersion, SMPortGUID: k.self, Saved: time.Now().UTC(), Registrations: k.agent.Registrations()}
	if s := k.store(); s != nil {
		st.Groups = s.Groups()
	}
	b, err := json.Marshal(&st)
	if err == nil {
		err = atomicfile.Write(k.path, b)
	}
	if err != nil {
		if !k.warned {
			k.log.Warn("SA state not saved: a restart will ask every client to re-register", "file", k.path, "error", err)
			k.warned = true
		}
		return
	}
	k.saved, k.wrote, k.warned = gen, true, false
}

// close stops the keeper after a last save.
func (k *saKeeper) close() {
	k.closed.Do(func() {
		close(k.stop)
		<-k.stopped
		k.save()
	})
}

func saStatePath(dir string) string { return filepath.Join(dir, SAStateFile) }
