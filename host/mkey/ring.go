package mkey

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport/smp"
)

// Options configure a Ring.
type Options struct {
	Policy Policy
	// Dir holds guid2mkey and neighbors ("" = nothing persisted). Open
	// creates it with mode 0700.
	Dir string
	// Self is the GUID of the SM's own port (its M_Key guards SMPs with an
	// empty directed route); 0: learnt from its first NodeInfo answer,
	// which a port at protection level 2 gives only with its key.
	Self uint64
	Log  hclog.Logger
	// FlushDelay is how long changes wait before the files are rewritten
	// (default 1s, so a sweep that keys a thousand ports writes once);
	// negative: at once.
	FlushDelay time.Duration
	// ReadOnly loads the store but never writes it (a read-only state
	// directory).
	ReadOnly bool
}

// portState is what the Ring knows of one port's M_Key (a switch: its
// port 0's, for the whole switch).
type portState struct {
	key   uint64 // the M_Key the port holds, if known
	known bool   // from an answer that showed it, an answered Set, or the store
	// From the port's last PortInfo answer this run (seen):
	seen    bool
	protect uint8
	lease   uint16
	viol    uint16
	// hidden: the last PortInfo Get hid the key from every key tried (a
	// port at protection level 1 with a key ibsm does not know).
	hidden bool
	// noMKey: the port answered a PortInfo Set with a key and still shows
	// M_Key 0 — it does not implement M_Keys (ibsim ignores them): it
	// cannot be protected, and is not re-keyed over and over.
	noMKey bool
}

// Ring is the SM's M_Key ring. It implements mad.Keys; all methods are
// safe for concurrent use.
type Ring struct {
	dir   string
	log   hclog.Logger
	delay time.Duration

	mu     sync.Mutex
	policy Policy
	keyFor map[uint64]uint64 // policy.KeyFor, memoised (an HMAC per SMP is not free)
	self   uint64
	ports  map[uint64]*portState
	sw     map[uint64]bool   // port GUID is a switch's
	paths  map[string]uint64 // directed route → port GUID, answered this run
	links  map[End]End

	// Recovery after a lost store (see Recovering).
	opened     time.Time
	freshLinks bool // no neighbors were stored
	evidence   bool // the SM's port holds the policy's key at level 2 or 3
	settled    bool // a discovery since reached every port

	keysDirty, linksDirty bool
	timer                 *time.Timer
	closed                bool
	saveFailed            bool
	violLogged            int
	violWindow            time.Time
	noMKeyPorts           int
}

var _ mad.Keys = (*Ring)(nil)

// Open makes a Ring and loads the store in opts.Dir.
func Open(opts Options) (*Ring, error) {
	r := &Ring{dir: opts.Dir, log: opts.Log, delay: opts.FlushDelay, policy: opts.Policy, self: opts.Self,
		ports: map[uint64]*portState{}, sw: map[uint64]bool{}, paths: map[string]uint64{}, links: map[End]End{}}
	if r.log == nil {
		r.log = hclog.NewNullLogger()
	}
	if r.delay == 0 {
		r.delay = time.Second
	}
	r.opened, r.freshLinks = time.Now(), true
	if r.dir == "" {
		return r, nil
	}
	if !opts.ReadOnly {
		if err := os.MkdirAll(r.dir, 0o700); err != nil {
			return nil, fmt.Errorf("M_Key store: %w (sm.state_dir must be writable)", err)
		}
		_ = os.Chmod(r.dir, 0o700) // it may predate us with a wider mode
	}
	keys, err := readFile(r.dir, KeysFile, ParseKeys, nil)
	if err != nil {
		return nil, fmt.Errorf("M_Key store: %w", err)
	}
	links, err := readFile(r.dir, NeighborsFile, ParseNeighbors, nil)
	if err != nil {
		return nil, fmt.Errorf("M_Key store: %w", err)
	}
	for g, k := range keys {
		r.ports[g] = &portState{key: k, known: true}
	}
	for a, b := range links {
		r.links[a] = b
	}
	if opts.ReadOnly {
		r.dir = "" // loaded; never written
	}
	r.opened, r.freshLinks = time.Now(), len(r.links) == 0
	return r, nil
}

// SetPolicy replaces the policy (SIGHUP); ports are re-keyed as the
// programmer and the audit next reach them.
func (r *Ring) SetPolicy(p Policy) {
	r.mu.Lock()
	r.policy, r.keyFor = p, nil
	r.mu.Unlock()
}

// keyForLocked is policy.KeyFor(g), memoised. r.mu held.
func (r *Ring) keyForLocked(g uint64) uint64 {
	if r.policy.Secret == "" {
		return r.policy.Key
	}
	if k, ok := r.keyFor[g]; ok {
		return k
	}
	if r.keyFor == nil {
		r.keyFor = map[uint64]uint64{}
	}
	k := r.policy.KeyFor(g)
	r.keyFor[g] = k
	return k
}

// Policy returns the policy in force.
func (r *Ring) Policy() Policy {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.policy
}

// SetSelf names the SM's own port.
func (r *Ring) SetSelf(guid uint64) {
	r.mu.Lock()
	r.self = guid
	r.mu.Unlock()
}

// resolveLocked returns the GUID of the port whose M_Key guards SMPs to
// path: the one that answered there this run, else the cable walk from
// the SM's port through the neighbors the SM has seen.
func (r *Ring) resolveLocked(path mad.Path) (uint64, bool) {
	if g, ok := r.paths[string(path)]; ok {
		return g, true
	}
	return r.walkLocked(path)
}

func (r *Ring) walkLocked(path mad.Path) (uint64, bool) {
	g := r.self
	if g == 0 {
		return 0, false
	}
	for _, p := range path {
		e, ok := r.links[End{g, p}]
		if !ok {
			return 0, false
		}
		g = e.GUID
	}
	return g, true
}

// Candidates implements mad.Keys: the key the port is known to hold, then
// the key the policy gives it; for a route whose port is not known yet,
// the configured single key (a per-port key needs the port's GUID), else
// 0 (a port without protection takes any key).
func (r *Ring) Candidates(path mad.Path) ([]uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []uint64
	add := func(k uint64) {
		for _, o := range out {
			if o == k {
				return
			}
		}
		out = append(out, k)
	}
	g, ok := r.resolveLocked(path)
	if ok {
		if st := r.ports[g]; st != nil && st.known {
			add(st.key)
		}
		if _, answered := r.paths[string(path)]; answered {
			// A route that answered this run but now walks elsewhere
			// (re-cabled): try both ports' keys.
			if g2, ok := r.walkLocked(path); ok && g2 != g {
				if st := r.ports[g2]; st != nil && st.known {
					add(st.key)
				}
				add(r.keyForLocked(g2))
			}
		}
		add(r.keyForLocked(g))
	} else {
		if r.policy.Secret == "" {
			add(r.policy.Key)
		}
		// A store with a few distinct keys (one subnet-wide key, another
		// SM's, an earlier policy's) is worth trying on a port nobody
		// named yet; a store of per-port keys is not (one try each).
		for _, k := range r.storedLocked() {
			add(k)
		}
	}
	if len(out) == 0 {
		out = append(out, 0)
	}
	return out, ok
}

// maxSharedKeys bounds the distinct stored keys tried on an unknown port.
const maxSharedKeys = 4

// storedLocked returns the distinct non-zero keys the store holds if there
// are at most maxSharedKeys of them, else nil.
func (r *Ring) storedLocked() []uint64 {
	var out []uint64
	for _, st := range r.ports {
		if !st.known || st.key == 0 {
			continue
		}
		dup := false
		for _, k := range out {
			dup = dup || k == st.key
		}
		if dup {
			continue
		}
		if len(out) == maxSharedKeys {
			return nil
		}
		out = append(out, st.key)
	}
	return out
}

// Observe implements mad.Keys: NodeInfo answers name the port behind a
// route (and the cable to it), PortInfo answers show a port's M_Key
// fields, an answered Set proves the key it carried.
func (r *Ring) Observe(path mad.Path, method uint8, key uint64, resp *smp.SMP) bool {
	ok := resp.Status&smp.StatusCodeMask == 0
	var ni smp.NodeInfo
	isNI := ok && resp.AttrID == smp.AttrNodeInfo && resp.Attr(&ni) == nil && ni.PortGUID != 0
	var pi smp.PortInfo
	isPI := ok && resp.AttrID == smp.AttrPortInfo && resp.Attr(&pi) == nil

	r.mu.Lock()
	defer r.mu.Unlock()
	if isNI {
		r.learnNodeLocked(path, &ni)
	}
	g, found := r.resolveLocked(path)
	if !found {
		return false
	}
	st := r.ports[g]
	if st == nil {
		st = &portState{}
		r.ports[g] = st
	}
	set := method == smp.MethodSet
	if isPI && r.describesGuardLocked(g, resp.AttrMod, &pi) {
		if pi.MKeyViolations > st.viol && st.seen {
			r.logViolationsLocked(g, st.viol, pi.MKeyViolations)
		}
		st.seen, st.protect, st.lease, st.viol = true, pi.MKeyProtectBits, pi.MKeyLeasePeriod, pi.MKeyViolations
		if !set && pi.MKey == 0 && pi.MKeyProtectBits >= 1 && (key != 0 || !st.known || st.key != 0) {
			// Level 1 and up hide the key from a Get without it. (Or the
			// port holds 0, which takes any key; trying others is
			// harmless, and a Set shows it.)
			st.hidden = true
			return true
		}
		st.hidden = false
		if set && pi.MKey == 0 && r.wantLocked(g).Key != 0 {
			if !st.noMKey {
				r.noMKeyPorts++
				if r.noMKeyPorts == 1 {
					r.log.Warn("a port ignores M_Keys: it took a PortInfo Set carrying a key and still holds M_Key 0 (the device does not implement M_Key protection; ibsim does not); such ports are not protected",
						"port_guid", fmt.Sprintf("0x%016x", g))
				}
			}
			st.noMKey = true
		}
		r.learnKeyLocked(st, pi.MKey)
		if g == r.self && r.policy.Enabled() && pi.MKey == r.keyForLocked(g) && pi.MKeyProtectBits >= 2 {
			r.evidence = true
		}
		return false
	}
	if set || (st.seen && st.protect >= 2) {
		// Answered although protected: the key passed the check (or the
		// port holds 0).
		if !st.known || st.key != key {
			r.learnKeyLocked(st, key)
		}
	}
	return false
}

func (r *Ring) learnKeyLocked(st *portState, k uint64) {
	if st.known && st.key == k {
		return
	}
	st.key, st.known = k, true
	r.keysDirty = true
	r.scheduleLocked()
}

// describesGuardLocked reports whether a PortInfo answer for modifier mod
// shows the M_Key fields of the guarding port g: a switch's port 0, or the
// CA port the SMP arrived on.
func (r *Ring) describesGuardLocked(g uint64, mod uint32, pi *smp.PortInfo) bool {
	if r.sw[g] {
		return mod == 0
	}
	return mod == 0 || mod == uint32(pi.LocalPortNum)
}

func (r *Ring) learnNodeLocked(path mad.Path, ni *smp.NodeInfo) {
	g := ni.PortGUID
	r.paths[string(path)] = g
	r.sw[g] = ni.NodeType == smp.NodeTypeSwitch
	if len(path) == 0 {
		if r.self == 0 {
			r.self = g
		}
		return
	}
	near, ok := r.resolveLocked(path[:len(path)-1])
	if !ok {
		return
	}
	a, b := End{near, path[len(path)-1]}, End{g, ni.LocalPortNum}
	if r.links[a] != b || r.links[b] != a {
		// A re-cabled end: drop what it was linked to before.
		if old, ok := r.links[a]; ok && old != b {
			delete(r.links, old)
		}
		if old, ok := r.links[b]; ok && old != a {
			delete(r.links, old)
		}
		r.links[a], r.links[b] = b, a
		r.linksDirty = true
		r.scheduleLocked()
	}
}

// logViolationsLocked reports a rise of a port's M_KeyViolations: SMPs
// without the key reached it (another agent, a tool, a rogue SM). At most
// 20 lines a minute.
func (r *Ring) logViolationsLocked(g uint64, from, to uint16) {
	now := time.Now()
	if now.Sub(r.violWindow) > time.Minute {
		r.violWindow, r.violLogged = now, 0
	}
	if r.violLogged++; r.violLogged > 20 {
		return
	}
	r.log.Warn("a port refused SMPs without its M_Key", "port_guid", fmt.Sprintf("0x%016x", g), "m_key_violations", to, "new", int(to)-int(from))
}

// Recovering reports whether discovery should refuse to route a partial
// fabric because of ports it cannot identify: ports behind routes it has
// no key for, which are probably this policy's, locked at protection level
// 2 or 3 by an earlier run whose state directory (neighbors) was lost —
// the evidence is the SM's own port, found holding the key the policy
// gives it at level 2 or more. Such ports answer nothing until their lease
// expires, one hop further from the SM each lease period; routing the part
// of the fabric that answers meanwhile would rewrite the reachable
// switches without routes to the rest, so the tables in place are kept.
// Recovery ends when a discovery reaches every port (Settle), or after ten
// lease periods and a minute (then ibsm routes what it can see, as for any
// unreachable part of a fabric); a policy without a lease cannot recover.
func (r *Ring) Recovering() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.policy
	return r.freshLinks && r.evidence && !r.settled && p.Protect >= 2 && p.Lease > 0 &&
		time.Since(r.opened) < 10*p.Lease+time.Minute
}

// Settle records that a discovery reached every port it found a route
// to: recovery (see Recovering) is over.
func (r *Ring) Settle() {
	r.mu.Lock()
	r.settled = true
	r.mu.Unlock()
}

// Want implements mad.Keys.
func (r *Ring) Want(g uint64) (mad.KeySetting, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wantLocked(g), true
}

func (r *Ring) wantLocked(g uint64) mad.KeySetting {
	p := r.policy
	if !p.Enabled() {
		return mad.KeySetting{} // keys off: take ibsm's keys off the ports
	}
	return mad.KeySetting{Key: r.keyForLocked(g), Protect: p.Protect, Lease: p.LeaseSeconds()}
}

// Holds implements mad.Keys.
func (r *Ring) Holds(g uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.ports[g]
	if st == nil || !st.seen || !st.known || st.hidden {
		return false
	}
	if st.noMKey {
		return true // nothing to set: it would not take the key
	}
	w := r.wantLocked(g)
	return st.key == w.Key && st.protect == w.Protect && st.lease == w.Lease
}

// Hidden reports whether port g hid its M_Key from every key ibsm tried
// (it holds a key ibsm does not know, at protection level 1 or more):
// ibsm cannot change it until its lease expires.
func (r *Ring) Hidden(g uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.ports[g]
	return st != nil && st.hidden
}

// Status sums up what the ring knows.
type Status struct {
	// Ports is how many ports showed their M_Key fields this run;
	// Holding how many of them hold what the policy wants.
	Ports, Holding int
	// Hidden lists the ports that hid their key from every key ibsm knows
	// (sorted): they cannot be managed until their lease expires or their
	// key is added to guid2mkey.
	Hidden []uint64
	// Violations sums M_KeyViolations as last read.
	Violations uint64
	// Known is how many ports' keys the store holds.
	Known int
	// NoMKey is how many ports ignore M_Keys (took a Set with a key and
	// still hold 0): they cannot be protected.
	NoMKey int
}

// Status returns the ring's summary.
func (r *Ring) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s Status
	for g, st := range r.ports {
		if st.known {
			s.Known++
		}
		if !st.seen {
			continue
		}
		s.Ports++
		s.Violations += uint64(st.viol)
		if st.hidden {
			s.Hidden = append(s.Hidden, g)
			continue
		}
		if st.noMKey {
			s.NoMKey++
			continue
		}
		w := r.wantLocked(g)
		if st.known && st.key == w.Key && st.protect == w.Protect && st.lease == w.Lease {
			s.Holding++
		}
	}
	sort.Slice(s.Hidden, func(i, j int) bool { return s.Hidden[i] < s.Hidden[j] })
	return s
}

// Key returns the M_Key port g is known to hold.
func (r *Ring) Key(g uint64) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.ports[g]
	if st == nil || !st.known {
		return 0, false
	}
	return st.key, true
}

func (r *Ring) scheduleLocked() {
	if r.dir == "" || r.closed {
		return
	}
	if r.delay < 0 {
		r.flushLocked()
		return
	}
	if r.timer == nil {
		r.timer = time.AfterFunc(r.delay, func() {
			r.mu.Lock()
			r.timer = nil
			r.flushLocked()
			r.mu.Unlock()
		})
	}
}

// Flush writes what changed to the store now.
func (r *Ring) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flushLocked()
}

func (r *Ring) flushLocked() error {
	if r.dir == "" {
		return nil
	}
	var errs []error
	if r.keysDirty {
		m := make(map[uint64]uint64, len(r.ports))
		for g, st := range r.ports {
			if st.known {
				m[g] = st.key
			}
		}
		if err := writeFile(r.dir, KeysFile, FormatKeys(m)); err != nil {
			errs = append(errs, err)
		} else {
			r.keysDirty = false
		}
	}
	if r.linksDirty {
		if err := writeFile(r.dir, NeighborsFile, FormatNeighbors(r.links)); err != nil {
			errs = append(errs, err)
		} else {
			r.linksDirty = false
		}
	}
	err := errors.Join(errs...)
	if err != nil && !r.saveFailed {
		r.saveFailed = true
		r.log.Error("M_Key store not written; a restart may not find every port's key", "dir", r.dir, "error", err)
	}
	if err == nil {
		r.saveFailed = false
	}
	return err
}

// Close writes what is pending and stops the flush timer.
func (r *Ring) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.closed = true
	return r.flushLocked()
}
