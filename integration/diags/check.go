package diags

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/ibsm/ibsm/host/lidstore"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// Plan is what an SM says it programmed: a base LID per port GUID (a
// switch's node GUID for its port 0) and an LFT per switch GUID.
type Plan struct {
	LIDs map[uint64]uint16
	LFTs map[uint64]*LFT
}

// LoadPlan reads an OpenSM-format plan: a guid2lid file (OpenSM's cache,
// ibsm's state_dir/guid2lid) and an opensm-lfts.dump (OpenSM's
// --dump_files_dir, `ibsm dump --out`).
func LoadPlan(guid2lid, lftDump string) (*Plan, error) {
	ranges, err := lidstore.Load(guid2lid)
	if err != nil {
		return nil, err
	}
	if len(ranges) == 0 {
		return nil, fmt.Errorf("%s: no LIDs (missing or empty file)", guid2lid)
	}
	f, err := os.Open(lftDump)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lfts, err := ParseLFTs(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(lftDump), err)
	}
	p := &Plan{LIDs: make(map[uint64]uint16, len(ranges)), LFTs: lfts}
	for g, r := range ranges {
		p.LIDs[g] = r.Min
	}
	return p, nil
}

// MaxLID is the highest LID the plan gives any port.
func (p *Plan) MaxLID() uint16 {
	var m uint16
	for _, l := range p.LIDs {
		m = max(m, l)
	}
	return m
}

// maxErrs caps how many mismatches one check lists; the rest are counted.
const maxErrs = 10

type errList struct {
	errs []error
	more int
}

func (e *errList) add(format string, a ...any) {
	if len(e.errs) == maxErrs {
		e.more++
		return
	}
	e.errs = append(e.errs, fmt.Errorf(format, a...))
}

func (e *errList) err() error {
	if e.more > 0 {
		e.errs = append(e.errs, fmt.Errorf("… and %d more", e.more))
	}
	return errors.Join(e.errs...)
}

// CheckLIDs checks that every LID-bearing port ibnetdiscover found has
// exactly the LID the plan gives it, and that every port of the plan that
// exists in the fabric was found. Plan entries for ports not in the fabric
// are not errors: guid2lid files keep LIDs of ports that left.
func CheckLIDs(d *Discovery, want map[uint64]uint16) error {
	var el errList
	guids := sortedKeys(d.LIDs)
	for _, g := range guids {
		got := d.LIDs[g]
		w, ok := want[g]
		switch {
		case !ok:
			el.add("port %#016x has LID %d but the plan gives it none", g, got)
		case got != w:
			el.add("port %#016x: ibnetdiscover shows LID %d, plan %d", g, got, w)
		}
	}
	return el.err()
}

// CheckLFTs compares the LFTs read from the fabric with the planned ones
// for LIDs 1..maxLID of every planned switch. Both sides treat absent
// entries as NoPort.
func CheckLFTs(got, want map[uint64]*LFT, maxLID uint16) error {
	var el errList
	for _, g := range sortedKeys(want) {
		w := want[g]
		gl, ok := got[g]
		if !ok {
			el.add("switch %#016x (%s): no LFT read from the fabric", g, w.Desc)
			continue
		}
		for lid := uint16(1); lid <= maxLID; lid++ {
			if a, b := gl.Port(lid), w.Port(lid); a != b {
				el.add("switch %#016x (%s) LID %d: fabric port %s, plan port %s", g, w.Desc, lid, portStr(a), portStr(b))
			}
		}
	}
	for _, g := range sortedKeys(got) {
		if _, ok := want[g]; !ok {
			el.add("switch %#016x (%s) is in the fabric but not in the plan", g, got[g].Desc)
		}
	}
	return el.err()
}

func portStr(p uint8) string {
	if p == NoPort {
		return "none"
	}
	return fmt.Sprint(p)
}

// MergeBlock folds one 64-entry LFT block read with smpdump into l,
// returning the LIDs (≤ maxLID) whose entry the block adds because the
// tool that printed l left them out. An entry both list differently is an
// error: the two reads disagree about the same table.
func MergeBlock(l *LFT, block int, data []byte, maxLID uint16) (added []uint16, err error) {
	if len(data) != 64 {
		return nil, fmt.Errorf("LFT block %d: %d bytes, want 64", block, len(data))
	}
	for i, port := range data {
		lid := uint16(block*64 + i)
		if lid == 0 || lid > maxLID {
			continue
		}
		have := l.Port(lid)
		switch {
		case have == port:
		case have == NoPort:
			l.set(lid, port)
			added = append(added, lid)
		default:
			return added, fmt.Errorf("switch %#016x LID %d: dump_fts says port %s, smpdump of block %d says %s", l.GUID, lid, portStr(have), block, portStr(port))
		}
	}
	return added, nil
}

// Walk follows the LFTs from the CA port srcPort (GUID) to dlid over the
// discovered links and returns the switches crossed. It fails on a hole
// (NoPort), a dead port, a loop or a wrong destination.
func Walk(d *Discovery, lfts map[uint64]*LFT, srcPort uint64, dlid uint16) ([]Step, error) {
	src, p := d.portByGUID(srcPort)
	if src == nil {
		return nil, fmt.Errorf("no CA port %#016x in the discovered fabric (walks start at a CA port)", srcPort)
	}
	if d.LIDs[srcPort] == dlid {
		return nil, nil
	}
	node, in, ok := d.Peer(src.GUID, p)
	if !ok {
		return nil, fmt.Errorf("port %#016x is not connected", srcPort)
	}
	var steps []Step
	for hops := 0; ; hops++ {
		if hops > 64 {
			return steps, fmt.Errorf("LID %d: more than 64 hops (a loop) from %#016x", dlid, srcPort)
		}
		if node.Type != topology.Switch {
			if got := d.LIDs[node.Ports[in].GUID]; got != dlid {
				return steps, fmt.Errorf("LID %d: the LFTs deliver to %s port %d (LID %d)", dlid, node.Name, in, got)
			}
			return steps, nil
		}
		l := lfts[node.GUID]
		if l == nil {
			return steps, fmt.Errorf("LID %d: no LFT for switch %#016x (%s)", dlid, node.GUID, node.Desc)
		}
		out := l.Port(dlid)
		steps = append(steps, Step{Switch: node.GUID, In: in, Out: int(out)})
		switch {
		case out == NoPort:
			return steps, fmt.Errorf("LID %d: switch %#016x (%s) has no entry", dlid, node.GUID, node.Desc)
		case out == 0:
			if d.LIDs[node.GUID] != dlid {
				return steps, fmt.Errorf("LID %d: switch %#016x (%s, LID %d) keeps it (port 0)", dlid, node.GUID, node.Desc, d.LIDs[node.GUID])
			}
			return steps, nil
		}
		next, nin, ok := d.Peer(node.GUID, int(out))
		if !ok {
			return steps, fmt.Errorf("LID %d: switch %#016x (%s) forwards to unconnected port %d", dlid, node.GUID, node.Desc, out)
		}
		node, in = next, nin
	}
}

// CompareSteps says where two switch paths first differ.
func CompareSteps(got, want []Step) error {
	for i := 0; i < max(len(got), len(want)); i++ {
		switch {
		case i >= len(got):
			return fmt.Errorf("path ends after %d switches; want %d more, next %s", len(got), len(want)-i, want[i])
		case i >= len(want):
			return fmt.Errorf("path has %d extra switches from %s", len(got)-i, got[i])
		case got[i] != want[i]:
			return fmt.Errorf("hop %d: %s, want %s", i+1, got[i], want[i])
		}
	}
	return nil
}

func (s Step) String() string {
	return fmt.Sprintf("switch %#016x in %d out %d", s.Switch, s.In, s.Out)
}

// portByGUID finds the CA or router node and port number of a port GUID.
func (d *Discovery) portByGUID(g uint64) (*netfile.Node, int) {
	r, ok := d.caPorts[g]
	if !ok {
		return nil, 0
	}
	return r.node, r.port
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	k := make([]uint64, 0, len(m))
	for g := range m {
		k = append(k, g)
	}
	sort.Slice(k, func(i, j int) bool { return k[i] < k[j] })
	return k
}
