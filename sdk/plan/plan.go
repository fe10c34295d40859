// Package plan holds what the three plugin kinds produce: Routes (routing
// engines), LIDPlan (LID assigners) and VLPlan (VL assigners), and the one
// function that turns routes and LIDs into linear forwarding tables. Host,
// verifier and plugins all realise tables through Realize so they agree.
package plan

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/cespare/xxhash/v2"
	"github.com/ibsm/ibsm/sdk/topology"
)

// NoPort marks "no route" in a plane or LFT (the LFT's unused value, 0xFF).
const NoPort uint8 = 0xFF

// Plane is one forwarding tree toward a destination: Plane[switchIndex] is
// the out-port that switch uses (0 on the destination switch itself for its
// own port-0 LID), NoPort when the switch has no route.
type Plane []uint8

// DestPlanes are the forwarding trees toward one destination endpoint.
// Several planes give multipath: LID base+i of the destination realises
// plane i mod len(Planes).
type DestPlanes struct {
	Planes []Plane
}

// Hop is one switch traversal of an explicit path. In is the input port
// (0 at the source switch of a switch-originated path); Out the output port.
type Hop struct {
	Switch int32 // node index
	In     uint8
	Out    uint8
}

// Path is an explicit route from endpoint Src to endpoint Dst (indices into
// Topology.Endpoints()). Several paths may exist for one pair.
type Path struct {
	Src, Dst int32
	Hops     []Hop
}

// Routes is a routing engine's answer, in one of two forms: Planes (indexed
// like Topology.Endpoints(); destination-based engines) or Paths (explicit
// per-pair hop lists, for path-based engines and LID assigners).
type Routes struct {
	Planes []DestPlanes
	Paths  []Path
	// Token names a remote engine's planes answer for a later
	// RouteRequest.Since (0: the plugin keeps nothing of it). The SDK sets
	// it; engines leave it alone.
	Token uint64
	// Base, when non-zero, makes the routes a change to an earlier answer
	// (the request's Since): only the destinations in Changed (ascending)
	// carry planes; every other destination keeps its planes of the answer
	// named Base. Only a caller that asked with Since gets such routes.
	Base    uint64
	Changed []int32
	// Edits, when not nil in routes with a Base, replace the changed
	// destinations' planes: each destination in Changed keeps the planes
	// of the answer named Base, as many as it had, with the entries named
	// here changed (Planes holds nothing for it). Sorted by destination,
	// plane and switch, each entry once. After one cable of the largest
	// fat tree in the LID space that is a few thousand entries where the
	// changed planes are 18 MB, and the tables take them without reading
	// a plane (RealizeChanged). Only a caller that asked for them
	// (the SDK's RouteRequest.Edits) gets them.
	Edits []Edit
}

// Edit is one changed entry of a plane: switch Switch's out-port toward
// destination Dest in its plane Plane is now Port (NoPort: no route).
type Edit struct {
	Dest   int32
	Switch int32
	Plane  uint8
	Port   uint8
}

// IsPlanes reports whether the routes are destination-based planes.
func (r *Routes) IsPlanes() bool { return r.Planes != nil }

// Hash is a 64-bit digest of the destination's planes (their count and
// bytes): two answers' destinations with equal hashes are taken as equal
// when only the changes between them cross the wire.
func (d DestPlanes) Hash() uint64 {
	h := xxhash.New()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(d.Planes)))
	h.Write(n[:])
	for _, pl := range d.Planes {
		binary.LittleEndian.PutUint64(n[:], uint64(len(pl)))
		h.Write(n[:])
		h.Write(pl)
	}
	return h.Sum64()
}

// DestHashes returns the Hash of every destination's planes, spread over
// GOMAXPROCS goroutines (187 M entries at the edge of the LID space).
func DestHashes(dests []DestPlanes) []uint64 {
	return HashDests(dests, DestPlanes.Hash)
}

// HashDests is DestHashes with another hash of a destination's planes.
func HashDests(dests []DestPlanes, hash func(DestPlanes) uint64) []uint64 {
	out := make([]uint64, len(dests))
	n := min(runtime.GOMAXPROCS(0), max(1, len(dests)/256))
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := w; e < len(dests); e += n {
				out[e] = hash(dests[e])
			}
		}()
	}
	wg.Wait()
	return out
}

// PortLID is the base LID and LMC of one endpoint.
type PortLID struct {
	Base uint16
	LMC  uint8
}

// Count is the number of LIDs of the range (2^LMC).
func (p PortLID) Count() int { return 1 << p.LMC }

// Contains reports whether lid is in the port's range.
func (p PortLID) Contains(lid uint16) bool {
	return p.Base != 0 && lid >= p.Base && int(lid) < int(p.Base)+p.Count()
}

// DLIDRule is the default choice of DLID offset (0..2^LMC-1) a source uses
// toward a destination.
type DLIDRule uint8

const (
	// DLIDBase: every source uses the destination's base LID.
	DLIDBase DLIDRule = iota
	// DLIDSpread: source endpoint index s uses offset s mod 2^LMC.
	DLIDSpread
)

// DLIDOverride is a sparse exception to the DLID rule.
type DLIDOverride struct {
	Src, Dst int32 // endpoint indices
	Offset   uint8
}

// LIDPlan is a LID assigner's answer.
type LIDPlan struct {
	// Ports is indexed like Topology.Endpoints().
	Ports []PortLID
	// Planes, when non-nil, replaces Routes.Planes (paths-form routes
	// partitioned into per-LID trees): indexed like Endpoints(), with
	// exactly 2^LMC planes each, plane i realised by LID base+i.
	Planes    []DestPlanes
	Rule      DLIDRule
	Overrides []DLIDOverride
}

// SLOverride is a sparse exception to VLPlan.SLByDLID.
type SLOverride struct {
	Src  int32 // endpoint index
	DLID uint16
	SL   uint8
}

// SL2VLEntry is the SL-to-VL table of one (node, in-port, out-port). For a
// CA port (or a switch's port 0) In and Out are both that port.
type SL2VLEntry struct {
	Node    int32
	In, Out uint8
	VL      [16]uint8
}

// VLPlan is a VL assigner's answer.
type VLPlan struct {
	// SLByDLID[lid] is the SL sources use toward lid; nil means SL 0.
	SLByDLID  []uint8
	Overrides []SLOverride
	// Default is the SL2VL table of every port pair not listed in SL2VL.
	Default [16]uint8
	SL2VL   []SL2VLEntry
	// VLs is the number of data VLs the plan uses (for reports).
	VLs int
}

// OneVL is the plan that puts every SL on VL 0 with SL 0 everywhere: what
// an assigner for routings that need no VL separation answers.
func OneVL() *VLPlan { return &VLPlan{VLs: 1} }

// IsOneVL reports whether v is the plan OneVL returns (empty lists and
// nil ones alike: a plan that crossed the wire holds empty ones).
func (v *VLPlan) IsOneVL() bool {
	return v != nil && len(v.SLByDLID) == 0 && len(v.Overrides) == 0 && v.Default == [16]uint8{} && len(v.SL2VL) == 0 && v.VLs == 1
}

// SL returns the SL that endpoint src uses toward dlid (overrides are few;
// callers on hot paths should index overrides themselves).
func (v *VLPlan) SL(src int32, dlid uint16) uint8 {
	for _, o := range v.Overrides {
		if o.Src == src && o.DLID == dlid {
			return o.SL
		}
	}
	if int(dlid) < len(v.SLByDLID) {
		return v.SLByDLID[dlid]
	}
	return 0
}

// MaxUnicastLID is the top of the unicast LID space.
const MaxUnicastLID = 0xBFFF

// Realized is the routing as the fabric will hold it.
type Realized struct {
	Topo *topology.Topology
	// LFT[switchIndex][lid] = out-port, NoPort if unrouted. Every table is
	// TopLID+1 long.
	LFT    [][]uint8
	TopLID uint16
	// LIDOwner[lid] = endpoint index + 1 (0: unassigned).
	LIDOwner []int32
	LIDs     *LIDPlan

	changes *realizedChanges // RealizeChanged's; see ChangedSince
}

// realizedChanges records which tables RealizeChanged started from (weakly:
// a chain of cable events must not keep every earlier copy alive) and the
// LIDs it may have written.
type realizedChanges struct {
	from weak.Pointer[Realized]
	lft  *[]uint8 // &LFT[0]: a copy given other tables does not inherit the claim
	lids []int32
	rows *RowChanges // the LIDs written per switch, for changes made from Edits
}

// RowChanges names, switch by switch, the LIDs whose entries
// RealizeChanged wrote (from Edits: it knows each entry it wrote).
type RowChanges struct {
	at   []int32 // switch s's LIDs are lids[at[s]:at[s+1]]
	lids []int32
}

// Of returns the LIDs written in switch s's table, ascending.
func (c *RowChanges) Of(s int) []int32 { return c.lids[c.at[s]:c.at[s+1]] }

// ChangedRows returns, for tables RealizeChanged made from base by Edits,
// the LIDs it wrote in each switch's table (every other entry is base's),
// and false for any other tables (see ChangedSince). Where ChangedSince
// names every LID that changed anywhere, this says in which rows: after
// one cable of ft3-56 ~7,000 entries, where the LIDs times the rows copied
// are millions.
func (r *Realized) ChangedRows(base *Realized) (*RowChanges, bool) {
	if _, ok := r.ChangedSince(base); !ok || r.changes.rows == nil {
		return nil, false
	}
	return r.changes.rows, true
}

// ChangedSince returns, for tables RealizeChanged made from base, the
// LIDs whose entries may differ from base's (ascending; every other entry
// is base's), and false for any other tables, including a copy of these
// given new LFT rows.
func (r *Realized) ChangedSince(base *Realized) ([]int32, bool) {
	c := r.changes
	if c == nil || base == nil || len(r.LFT) == 0 || c.lft != &r.LFT[0] || c.from.Value() != base {
		return nil, false
	}
	return c.lids, true
}

// ChangedBetween returns the LIDs in which tables a and b may differ
// (ascending) when RealizeChanged made both from common tables, each
// through up to a few steps (one from the other; both from the same; a
// cable's return realised from the tables kept and the next cable's
// changes from the tables before those), and false otherwise.
func ChangedBetween(a, b *Realized) ([]int32, bool) {
	if a == nil || b == nil {
		return nil, false
	}
	ca, cb := a.ancestors(), b.ancestors()
	for _, x := range ca {
		for _, y := range cb {
			if x.r == y.r {
				out := append(slices.Clone(x.lids), y.lids...)
				slices.Sort(out)
				return slices.Compact(out), true
			}
		}
	}
	return nil, false
}

// maxAncestors bounds how far back ChangedBetween follows RealizeChanged.
const maxAncestors = 4

// ancestor is tables r was made from and the LIDs changed since them.
type ancestor struct {
	r    *Realized
	lids []int32
}

// ancestors lists r itself and the tables RealizeChanged made it from,
// as far as they are alive and up to maxAncestors steps back.
func (r *Realized) ancestors() []ancestor {
	out := []ancestor{{r: r}}
	for x, lids := r, []int32(nil); len(out) <= maxAncestors; {
		c := x.changes
		if c == nil || len(x.LFT) == 0 || c.lft != &x.LFT[0] {
			break
		}
		p := c.from.Value()
		if p == nil {
			break
		}
		lids = append(slices.Clone(lids), c.lids...)
		out = append(out, ancestor{p, lids})
		x = p
	}
	return out
}

// PlanesOf returns the planes that realise endpoint e's LIDs.
func PlanesOf(r *Routes, l *LIDPlan, e int) []Plane {
	if l.Planes != nil {
		return l.Planes[e].Planes
	}
	if r != nil && r.Planes != nil {
		return r.Planes[e].Planes
	}
	return nil
}

// UsedPlanes returns the planes Realize puts in the tables, each once:
// for every endpoint the first min(2^LMC, number of planes) of its planes
// (LID base+k realises plane k mod that number). Code that derives
// something per destination tree (a channel dependency graph) reads them
// in the order they are held, where the tables hold them transposed. It
// checks the shapes it indexes; LID values are the verifier's.
func UsedPlanes(t *topology.Topology, r *Routes, l *LIDPlan) ([]Plane, error) {
	eps := t.Endpoints()
	if len(l.Ports) != len(eps) {
		return nil, fmt.Errorf("LID plan has %d ports, topology has %d endpoints", len(l.Ports), len(eps))
	}
	switch {
	case l.Planes != nil && len(l.Planes) != len(eps):
		return nil, fmt.Errorf("LID plan has planes for %d destinations, topology has %d endpoints", len(l.Planes), len(eps))
	case l.Planes == nil && (r == nil || !r.IsPlanes()):
		return nil, fmt.Errorf("routes are explicit paths but the LID plan carries no planes")
	case l.Planes == nil && len(r.Planes) != len(eps):
		return nil, fmt.Errorf("routes have %d destinations, topology has %d endpoints", len(r.Planes), len(eps))
	}
	nsw := len(t.Switches())
	out := make([]Plane, 0, len(eps))
	for e, p := range l.Ports {
		if p.LMC > 7 {
			return nil, fmt.Errorf("endpoint %d: LMC %d > 7", e, p.LMC)
		}
		planes := PlanesOf(r, l, e)
		if len(planes) == 0 {
			return nil, fmt.Errorf("destination endpoint %d has no plane", e)
		}
		for k, pl := range planes[:min(p.Count(), len(planes))] {
			if len(pl) != nsw {
				return nil, fmt.Errorf("destination endpoint %d plane %d has %d entries, want one per switch (%d)", e, k, len(pl), nsw)
			}
			out = append(out, pl)
		}
	}
	return out, nil
}

// Realize turns routes and a LID plan into per-switch linear forwarding
// tables. It checks only what it needs to index safely (LID ranges and plane
// shapes); semantic checks (ports up, no loops) are the verifier's.
func Realize(t *topology.Topology, r *Routes, l *LIDPlan) (*Realized, error) {
	eps := t.Endpoints()
	if len(l.Ports) != len(eps) {
		return nil, fmt.Errorf("LID plan has %d ports, topology has %d endpoints", len(l.Ports), len(eps))
	}
	if l.Planes == nil && (r == nil || !r.IsPlanes()) {
		return nil, fmt.Errorf("routes are explicit paths but the LID plan carries no planes")
	}
	var top uint16
	for i, p := range l.Ports {
		if p.LMC > 7 {
			return nil, fmt.Errorf("endpoint %d: LMC %d > 7", i, p.LMC)
		}
		if p.Base == 0 {
			return nil, fmt.Errorf("endpoint %d (node 0x%016x port %d) has no LID", i, t.Nodes[eps[i].Node].GUID, eps[i].Port)
		}
		if int(p.Base)+p.Count()-1 > MaxUnicastLID {
			return nil, fmt.Errorf("endpoint %d: LIDs %d..%d exceed 0x%X", i, p.Base, int(p.Base)+p.Count()-1, MaxUnicastLID)
		}
		if p.Base&uint16(p.Count()-1) != 0 {
			return nil, fmt.Errorf("endpoint %d: base LID %d not aligned to 2^LMC=%d", i, p.Base, p.Count())
		}
		if end := p.Base + uint16(p.Count()) - 1; end > top {
			top = end
		}
	}
	owner := make([]int32, int(top)+1)
	for i, p := range l.Ports {
		for k := 0; k < p.Count(); k++ {
			lid := int(p.Base) + k
			if owner[lid] != 0 {
				return nil, fmt.Errorf("LID %d assigned to endpoints %d and %d", lid, owner[lid]-1, i)
			}
			owner[lid] = int32(i) + 1
		}
	}
	if r != nil && r.Planes != nil && len(r.Planes) != len(eps) && l.Planes == nil {
		return nil, fmt.Errorf("routes have %d destinations, topology has %d endpoints", len(r.Planes), len(eps))
	}
	if l.Planes != nil && len(l.Planes) != len(eps) {
		return nil, fmt.Errorf("LID plan has planes for %d destinations, topology has %d endpoints", len(l.Planes), len(eps))
	}
	sw := t.Switches()
	// Every LID's plane, checked in endpoint order before any table is
	// written (so the first bad destination is the one reported).
	src := make([]Plane, int(top)+1)
	for e, p := range l.Ports {
		planes := PlanesOf(r, l, e)
		if len(planes) == 0 {
			return nil, fmt.Errorf("destination endpoint %d has no plane", e)
		}
		for k := 0; k < p.Count(); k++ {
			pl := planes[k%len(planes)]
			if len(pl) != len(sw) {
				return nil, fmt.Errorf("destination endpoint %d plane %d has %d entries, want one per switch (%d)", e, k%len(planes), len(pl), len(sw))
			}
			src[int(p.Base)+k] = pl
		}
	}
	lft := make([][]uint8, len(sw))
	back := make([]uint8, len(sw)*(int(top)+1))
	for s := range lft {
		lft[s] = back[s*(int(top)+1) : (s+1)*(int(top)+1)]
	}
	transpose(lft, src)
	return &Realized{Topo: t, LFT: lft, TopLID: top, LIDOwner: owner, LIDs: l}, nil
}

// RealizeChanged is Realize for routes that change an earlier answer
// (r.Base != 0) whose tables base are, with the same LID plan (the caller
// checks the LIDs are equal): the tables of the destinations in r.Changed
// are rewritten and every other entry is base's. A switch's table that
// changes is copied first; the others are shared with base, so neither
// may be written to afterwards (nothing in the SDK or host writes a
// realised table). Routes whose changes are Edits change only the entries
// they name; each edited destination must have had one plane per LID of
// its port (PortLID.Count) in the answer base realises, so that plane k
// is LID base+k's alone (the caller checks: with fewer planes a plane
// feeds several LIDs, and an edit would change only one of them).
func RealizeChanged(base *Realized, t *topology.Topology, r *Routes, l *LIDPlan) (*Realized, error) {
	sw := t.Switches()
	eps := t.Endpoints()
	switch {
	case r == nil || r.Base == 0:
		return nil, fmt.Errorf("routes are not a change to an earlier answer")
	case len(base.LFT) != len(sw) || len(r.Planes) != len(eps) || len(l.Ports) != len(eps) || l.Planes != nil:
		return nil, fmt.Errorf("the earlier tables are for %d switches, the routes for %d destinations: realise them in full", len(base.LFT), len(r.Planes))
	case r.Edits != nil:
		return realizeEdits(base, t, r.Edits, l)
	}
	// Every changed LID's plane, in LID order, checked before any table
	// is written (so the first bad destination is the one reported).
	var cols []lidPlane
	for _, e := range r.Changed {
		if e < 0 || int(e) >= len(eps) {
			return nil, fmt.Errorf("changed destination %d out of range (%d endpoints)", e, len(eps))
		}
		p, planes := l.Ports[e], r.Planes[e].Planes
		if len(planes) == 0 {
			return nil, fmt.Errorf("destination endpoint %d has no plane", e)
		}
		for k := 0; k < p.Count(); k++ {
			pl, lid := planes[k%len(planes)], int(p.Base)+k
			if len(pl) != len(sw) {
				return nil, fmt.Errorf("destination endpoint %d plane %d has %d entries, want one per switch (%d)", e, k%len(planes), len(pl), len(sw))
			}
			if lid > int(base.TopLID) {
				return nil, fmt.Errorf("destination endpoint %d: LID %d above the earlier tables' top %d", e, lid, base.TopLID)
			}
			cols = append(cols, lidPlane{int32(lid), pl})
		}
	}
	slices.SortFunc(cols, func(a, b lidPlane) int { return int(a.lid - b.lid) })
	lft := slices.Clone(base.LFT)
	rewrite(lft, cols)
	lids := make([]int32, len(cols))
	for k, c := range cols {
		lids[k] = c.lid
	}
	return changedFrom(base, t, lft, l, lids), nil
}

// realizeEdits is RealizeChanged for changes named entry by entry: only
// the tables of the switches they name are copied and written, and only
// the LIDs whose entries they change are claimed as changed.
func realizeEdits(base *Realized, t *topology.Topology, edits []Edit, l *LIDPlan) (*Realized, error) {
	// Checked, and the tables to copy marked, first; then copied on every
	// core: a cable's changes touch hundreds to ~1,700 of ft3-56's 48 KB
	// tables, and a table new to the heap costs a page fault every 4 KB
	// (~11 µs each on the VM measured: 0.2 s for 1,700 tables).
	var written []entry
	copied := make([]bool, len(base.LFT))
	for _, x := range edits {
		if x.Dest < 0 || int(x.Dest) >= len(l.Ports) || x.Switch < 0 || int(x.Switch) >= len(base.LFT) {
			return nil, fmt.Errorf("changed entry (destination %d, switch %d) out of range (%d endpoints, %d switches)", x.Dest, x.Switch, len(l.Ports), len(base.LFT))
		}
		p := l.Ports[x.Dest]
		if int(x.Plane) >= p.Count() {
			return nil, fmt.Errorf("destination endpoint %d: changed entry of plane %d, which no LID of its %d realises alone", x.Dest, x.Plane, p.Count())
		}
		lid := int(p.Base) + int(x.Plane)
		if lid > int(base.TopLID) {
			return nil, fmt.Errorf("destination endpoint %d: LID %d above the earlier tables' top %d", x.Dest, lid, base.TopLID)
		}
		if base.LFT[x.Switch][lid] != x.Port {
			copied[x.Switch] = true
			written = append(written, entry{x.Switch, int32(lid)})
		}
	}
	lft := slices.Clone(base.LFT)
	inBlocks((len(lft)+rewriteBlock-1)/rewriteBlock, func() func(int) {
		return func(b int) {
			for s := b * rewriteBlock; s < min((b+1)*rewriteBlock, len(lft)); s++ {
				if copied[s] {
					lft[s] = slices.Clone(lft[s])
				}
			}
		}
	})
	for _, x := range edits {
		if copied[x.Switch] {
			lft[x.Switch][int(l.Ports[x.Dest].Base)+int(x.Plane)] = x.Port
		}
	}
	slices.SortFunc(written, func(a, b entry) int { return cmp.Or(cmp.Compare(a.s, b.s), cmp.Compare(a.lid, b.lid)) })
	written = slices.Compact(written)
	rows := &RowChanges{at: make([]int32, len(lft)+1), lids: make([]int32, len(written))}
	lids := make([]int32, len(written))
	for i, w := range written {
		rows.at[w.s+1]++
		rows.lids[i], lids[i] = w.lid, w.lid
	}
	for s := range len(lft) {
		rows.at[s+1] += rows.at[s]
	}
	slices.Sort(lids)
	rz := changedFrom(base, t, lft, l, lids)
	if rz.changes != nil {
		rz.changes.rows = rows
	}
	return rz, nil
}

// entry is one switch's entry for one LID.
type entry struct{ s, lid int32 }

// changedFrom returns tables lft, made from base's by writing the LIDs
// lids (ascending), as Realized that remember it (ChangedSince).
func changedFrom(base *Realized, t *topology.Topology, lft [][]uint8, l *LIDPlan, lids []int32) *Realized {
	rz := &Realized{Topo: t, LFT: lft, TopLID: base.TopLID, LIDOwner: base.LIDOwner, LIDs: l}
	if len(lft) > 0 {
		rz.changes = &realizedChanges{from: weak.Make(base), lft: &lft[0], lids: slices.Compact(lids)}
	}
	return rz
}

// lidPlane is one LID's plane.
type lidPlane struct {
	lid int32
	pl  Plane
}

// rewriteBlock is the number of switches one worker of rewrite takes at a
// time: their entries of a plane are one cache line, so the planes it
// reads stay in cache while it walks those switches' tables.
const rewriteBlock = 64

// rewrite sets lft[s][c.lid] = c.pl[s] for every column c (ascending LIDs)
// and switch s, copying a switch's table before its first write (the
// tables are shared with the plan in force). Switch by switch, so a
// table is read in LID order; plane by plane it touched another table,
// page and cache line for every entry (0.45 s at ft3-56 for one cable's
// 1,736 destinations, each read across 3,920 tables).
func rewrite(lft [][]uint8, cols []lidPlane) {
	inBlocks((len(lft)+rewriteBlock-1)/rewriteBlock, func() func(int) {
		return func(b int) {
			for s := b * rewriteBlock; s < min((b+1)*rewriteBlock, len(lft)); s++ {
				row, copied := lft[s], false
				for _, c := range cols {
					if port := c.pl[s]; row[c.lid] != port {
						if !copied {
							row, copied = slices.Clone(row), true
							lft[s] = row
						}
						row[c.lid] = port
					}
				}
			}
		}
	})
}

// inBlocks runs blocks 0..blocks-1 on GOMAXPROCS goroutines, each taking
// the next block when done with one; worker makes each goroutine's
// function (with its own scratch).
func inBlocks(blocks int, worker func() func(b int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), blocks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work := worker()
			for {
				b := int(next.Add(1) - 1)
				if b >= blocks {
					return
				}
				work(b)
			}
		}()
	}
	wg.Wait()
}

// realizeBlock is the number of LIDs transposed together: a switch's
// entries for them are one cache line, and their planes are read as that
// many sequential streams.
const realizeBlock = 64

// transpose fills lft[s][lid] = src[lid][s] (NoPort where src[lid] is nil)
// block by block of LIDs, the blocks spread over GOMAXPROCS goroutines.
// Writing plane by plane instead touches a different row, page and cache
// line for every entry (1.7 s of CPU for the 187 M entries of the largest
// fat tree in the LID space); entry by entry within a block it was 0.4 s,
// 8 x 8 tiles in eight words each (transposeBlock) take a fraction.
func transpose(lft [][]uint8, src []Plane) {
	blocks := (len(src) + realizeBlock - 1) / realizeBlock
	var none Plane // NoPort for every switch, for LIDs nobody owns
	if slices.ContainsFunc(src, func(p Plane) bool { return p == nil }) {
		none = bytes.Repeat([]uint8{NoPort}, len(lft))
	}
	inBlocks(blocks, func() func(int) {
		var cols [realizeBlock]Plane
		return func(b int) {
			lo := b * realizeBlock
			n := copy(cols[:], src[lo:min(lo+realizeBlock, len(src))])
			for j, pl := range cols[:n] {
				if pl == nil {
					cols[j] = none
				}
			}
			transposeBlock(lft, cols[:n], lo)
		}
	})
}

// transposeBlock writes lft[s][lo+j] = cols[j][s] for every switch s and
// column j: 8 LIDs x 8 switches at a time as eight little-endian words,
// transposed in registers, the edges entry by entry.
func transposeBlock(lft [][]uint8, cols []Plane, lo int) {
	nsw, n := len(lft), len(cols)
	s8, j8 := nsw&^7, n&^7
	le := binary.LittleEndian
	for s := 0; s < s8; s += 8 {
		for j := 0; j < j8; j += 8 {
			var m [8]uint64
			for i := range m {
				m[i] = le.Uint64(cols[j+i][s:])
			}
			transpose8(&m)
			for k := range m {
				le.PutUint64(lft[s+k][lo+j:], m[k])
			}
		}
		for j := j8; j < n; j++ {
			for k := s; k < s+8; k++ {
				lft[k][lo+j] = cols[j][k]
			}
		}
	}
	for s := s8; s < nsw; s++ {
		row := lft[s][lo : lo+n]
		for j, pl := range cols {
			row[j] = pl[s]
		}
	}
}

// transpose8 transposes the 8 x 8 byte matrix whose row i is m[i] (byte k
// = column k): 2 x 2 blocks of bytes, then of 16-bit pairs, then of 32-bit
// halves.
func transpose8(m *[8]uint64) {
	const b8, b16, b32 = 0x00ff00ff00ff00ff, 0x0000ffff0000ffff, 0x00000000ffffffff
	for i := 0; i < 8; i += 2 {
		x, y := m[i], m[i+1]
		m[i], m[i+1] = x&b8|(y&b8)<<8, (x>>8)&b8|y&^b8
	}
	for _, i := range [4]int{0, 1, 4, 5} {
		x, y := m[i], m[i+2]
		m[i], m[i+2] = x&b16|(y&b16)<<16, (x>>16)&b16|y&^b16
	}
	for i := range 4 {
		x, y := m[i], m[i+4]
		m[i], m[i+4] = x&b32|y<<32, x>>32|y&^b32
	}
}

// DLID returns the DLID endpoint src uses toward endpoint dst under the
// plan's rule (overrides are applied by callers that hold an index of them).
func (l *LIDPlan) DLID(src, dst int32) uint16 {
	p := l.Ports[dst]
	switch l.Rule {
	case DLIDSpread:
		return p.Base + uint16(int(src)%p.Count())
	default:
		return p.Base
	}
}
