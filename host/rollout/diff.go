package rollout

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Tables is what a fabric holds, or would hold under a plan: per switch
// its LFT and SL2VL tables, per endpoint its LIDs. Diffs compare two of
// them on one topology.
type Tables struct {
	Topo *topology.Topology
	// LFT is indexed like Topo.Switches(); a nil row is unknown (it
	// differs from anything).
	LFT [][]uint8
	// SL2VL is the switches' SL-to-VL tables (nil: not compared).
	SL2VL SL2VLTables
	// LIDs is indexed like Topo.Endpoints() (nil: not compared).
	LIDs []plan.PortLID
}

// SL2VLTables answers which SL-to-VL table a switch holds, or would hold,
// for a pair of its ports.
type SL2VLTables interface {
	// Table is switch node's table for (in, out); false when unknown.
	Table(node int32, in, out uint8) ([16]uint8, bool)
	// Pairs lists the (in, out) pairs of node that are programmed (a
	// plan) or were read (a read-back), sorted.
	Pairs(node int32) [][2]uint8
}

// TablesOf returns what plan p programs.
func TablesOf(p Plan) Tables {
	t := p.Rz.Topo
	return Tables{Topo: t, LFT: p.Rz.LFT, SL2VL: PlanSL2VL(t, p.VLs), LIDs: p.Rz.LIDs.Ports}
}

// PlanSL2VL returns the switch SL2VL tables plan vls has the programmer
// write (host/program): every (in, out) pair of a switch's ports, (in, 0)
// only where the plan lists it, an unlisted pair the plan's default
// table; none at all when the plan carries SL 0 on VL 0 only (every table
// already maps SL 0 to VL 0, so nothing is sent).
func PlanSL2VL(t *topology.Topology, vls *plan.VLPlan) SL2VLTables {
	p := &planSL2VL{t: t, listed: map[[3]int32][16]uint8{}}
	if vls == nil || onlySL0(vls) {
		p.none = true
		return p
	}
	p.def = vls.Default
	for _, e := range vls.SL2VL {
		if t.Nodes[e.Node].Type == topology.Switch {
			p.listed[[3]int32{e.Node, int32(e.In), int32(e.Out)}] = e.VL
		}
	}
	return p
}

type planSL2VL struct {
	t      *topology.Topology
	listed map[[3]int32][16]uint8
	def    [16]uint8
	none   bool
}

func (p *planSL2VL) Table(node int32, in, out uint8) ([16]uint8, bool) {
	if p.none {
		return [16]uint8{}, false // whatever the switch holds: nothing is sent
	}
	if v, ok := p.listed[[3]int32{node, int32(in), int32(out)}]; ok {
		return v, true
	}
	return p.def, true
}

func (p *planSL2VL) Pairs(node int32) [][2]uint8 {
	if p.none {
		return nil
	}
	np := len(p.t.Nodes[node].Ports)
	var out [][2]uint8
	for in := 0; in < np; in++ {
		for o := 0; o < np; o++ {
			if _, listed := p.listed[[3]int32{node, int32(in), 0}]; o == 0 && !listed {
				continue
			}
			out = append(out, [2]uint8{uint8(in), uint8(o)})
		}
	}
	return out
}

// onlySL0 reports whether a plan carries SL 0 on VL 0 only (host/program
// sends no SL2VL table for it).
func onlySL0(v *plan.VLPlan) bool {
	if v.Default[0] != 0 || slices.ContainsFunc(v.SLByDLID, func(sl uint8) bool { return sl != 0 }) ||
		slices.ContainsFunc(v.Overrides, func(o plan.SLOverride) bool { return o.SL != 0 }) {
		return false
	}
	return !slices.ContainsFunc(v.SL2VL, func(e plan.SL2VLEntry) bool { return e.VL[0] != 0 })
}

// ReadSL2VL is SL2VL tables as read back: by switch node index, by
// (in, out) pair. A pair not read is unknown.
type ReadSL2VL map[int32]map[[2]uint8][16]uint8

func (r ReadSL2VL) Table(node int32, in, out uint8) ([16]uint8, bool) {
	v, ok := r[node][[2]uint8{in, out}]
	return v, ok
}

func (r ReadSL2VL) Pairs(node int32) [][2]uint8 {
	out := slices.Collect(maps.Keys(r[node]))
	slices.SortFunc(out, comparePair)
	return out
}

func comparePair(x, y [2]uint8) int {
	if x[0] != y[0] {
		return int(x[0]) - int(y[0])
	}
	return int(x[1]) - int(y[1])
}

// SwitchDiff is what one switch would be sent.
type SwitchDiff struct {
	GUID      uint64 `json:"guid"`
	Desc      string `json:"desc"`
	LFTBlocks []int  `json:"lft_blocks,omitempty"`
	// SL2VL lists the (in, out) port pairs whose table changes.
	SL2VL [][2]uint8 `json:"sl2vl,omitempty"`
}

// LIDChange is an endpoint whose LIDs change.
type LIDChange struct {
	GUID uint64 `json:"port_guid"`
	Node uint64 `json:"node_guid"`
	Port uint8  `json:"port"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// Diff is what moving from one set of tables to another sends.
type Diff struct {
	Switches    []SwitchDiff `json:"switches,omitempty"`
	LIDs        []LIDChange  `json:"lids,omitempty"`
	LFTBlocks   int          `json:"lft_blocks"`
	SL2VLTables int          `json:"sl2vl_tables"`
	// SwitchesChanged counts switches with any block or table to send.
	SwitchesChanged int `json:"switches_changed"`
	// LIDsChanged counts endpoints whose LID or LMC changes.
	LIDsChanged int `json:"lids_changed"`
}

// Changed reports, per switch index, whether the switch has anything to
// send.
func (d *Diff) Changed(t *topology.Topology) []bool {
	out := make([]bool, len(t.Switches()))
	for _, s := range d.Switches {
		out[t.SwitchIndex(t.NodeByGUID(s.GUID))] = true
	}
	return out
}

// Compare diffs the tables of a (as held) against b (as wanted), per
// 64-entry LFT block (IBA 14.2.5.10) and per SL2VL table (IBA 14.2.5.8).
// Blocks past b's top LID do not count: programming b moves the switch's
// LinearFDBTop below them.
func Compare(a, b Tables) *Diff {
	d := &Diff{}
	for s := range b.Topo.Switches() {
		d.compareSwitch(a, b, s)
	}
	d.SwitchesChanged = len(d.Switches)
	d.compareLIDs(a, b)
	return d
}

// CompareSwitches is Compare on switches ws (indices in Topo.Switches())
// only, without the LIDs.
func CompareSwitches(a, b Tables, ws []int32) *Diff {
	d := &Diff{}
	for _, s := range ws {
		d.compareSwitch(a, b, int(s))
	}
	d.SwitchesChanged = len(d.Switches)
	return d
}

func (d *Diff) compareSwitch(a, b Tables, s int) {
	t := b.Topo
	node := t.Switches()[s]
	sd := SwitchDiff{GUID: t.Nodes[node].GUID, Desc: t.Nodes[node].Desc}
	var ra []uint8
	if s < len(a.LFT) {
		ra = a.LFT[s]
	}
	rb := b.LFT[s]
	for blk := 0; blk*64 < len(rb); blk++ {
		if ra == nil || !sameBlock(ra, rb, blk) {
			sd.LFTBlocks = append(sd.LFTBlocks, blk)
		}
	}
	if a.SL2VL != nil && b.SL2VL != nil {
		sd.SL2VL = tableDiff(a.SL2VL, b.SL2VL, int32(node))
	}
	if len(sd.LFTBlocks) > 0 || len(sd.SL2VL) > 0 {
		d.Switches = append(d.Switches, sd)
		d.LFTBlocks += len(sd.LFTBlocks)
		d.SL2VLTables += len(sd.SL2VL)
	}
}

func (d *Diff) compareLIDs(a, b Tables) {
	t := b.Topo
	if a.LIDs == nil || b.LIDs == nil {
		return
	}
	for e, ep := range t.Endpoints() {
		var la plan.PortLID
		if e < len(a.LIDs) {
			la = a.LIDs[e]
		}
		if lb := b.LIDs[e]; la != lb {
			d.LIDs = append(d.LIDs, LIDChange{GUID: t.PortGUID(ep), Node: t.Nodes[ep.Node].GUID, Port: ep.Port, Old: lidText(la), New: lidText(lb)})
		}
	}
	d.LIDsChanged = len(d.LIDs)
}

// entry returns the LFT entry of lid, NoPort beyond the table.
func entry(row []uint8, lid int) uint8 {
	if lid < len(row) {
		return row[lid]
	}
	return plan.NoPort
}

func sameBlock(a, b []uint8, blk int) bool {
	for lid := blk * 64; lid < (blk+1)*64; lid++ {
		if entry(a, lid) != entry(b, lid) {
			return false
		}
	}
	return true
}

// tableDiff lists the pairs of switch node whose table b programs and a
// does not hold (or is not known to hold).
func tableDiff(a, b SL2VLTables, node int32) [][2]uint8 {
	var out [][2]uint8
	for _, p := range b.Pairs(node) {
		want, _ := b.Table(node, p[0], p[1])
		if have, ok := a.Table(node, p[0], p[1]); !ok || have != want {
			out = append(out, p)
		}
	}
	return out
}

func lidText(l plan.PortLID) string {
	if l.Base == 0 {
		return "none"
	}
	if l.LMC == 0 {
		return fmt.Sprint(l.Base)
	}
	return fmt.Sprintf("%d-%d (LMC %d)", l.Base, int(l.Base)+l.Count()-1, l.LMC)
}

// Text writes the diff per switch, then the LID changes.
func (d *Diff) Text(w io.Writer) {
	fmt.Fprintf(w, "%d LFT blocks and %d SL2VL tables on %d switches, %d endpoint LIDs would change\n",
		d.LFTBlocks, d.SL2VLTables, d.SwitchesChanged, d.LIDsChanged)
	for _, s := range d.Switches {
		fmt.Fprintf(w, "switch 0x%016x %q: LFT blocks %s", s.GUID, s.Desc, ranges(s.LFTBlocks))
		if len(s.SL2VL) > 0 {
			fmt.Fprintf(w, "; SL2VL (in,out) %v", s.SL2VL)
		}
		fmt.Fprintln(w)
	}
	for _, l := range d.LIDs {
		fmt.Fprintf(w, "port 0x%016x (node 0x%016x port %d): LID %s -> %s\n", l.GUID, l.Node, l.Port, l.Old, l.New)
	}
}

// ranges prints sorted integers as "0-3,7".
func ranges(xs []int) string {
	if len(xs) == 0 {
		return "none"
	}
	s := ""
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if s != "" {
			s += ","
		}
		if i == j {
			s += fmt.Sprint(xs[i])
		} else {
			s += fmt.Sprintf("%d-%d", xs[i], xs[j])
		}
		i = j + 1
	}
	return s
}
