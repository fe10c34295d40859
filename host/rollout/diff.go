package rollout

import (
	"fmt"
	"io"
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
	// SL2VL holds each switch's tables by node index (nil: not compared).
	SL2VL map[int32][]plan.SL2VLEntry
	// LIDs is indexed like Topo.Endpoints() (nil: not compared).
	LIDs []plan.PortLID
}

// TablesOf returns what plan p programs.
func TablesOf(p Plan) Tables {
	t := p.Rz.Topo
	return Tables{Topo: t, LFT: p.Rz.LFT, SL2VL: switchTables(p.VLs, t), LIDs: p.Rz.LIDs.Ports}
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
func Compare(a, b Tables) *Diff {
	t := b.Topo
	d := &Diff{}
	for s, node := range t.Switches() {
		sd := SwitchDiff{GUID: t.Nodes[node].GUID, Desc: t.Nodes[node].Desc}
		var ra []uint8
		if s < len(a.LFT) {
			ra = a.LFT[s]
		}
		rb := b.LFT[s]
		n := max(len(ra), len(rb))
		for blk := 0; blk*64 < n; blk++ {
			if ra == nil || !sameBlock(ra, rb, blk) {
				sd.LFTBlocks = append(sd.LFTBlocks, blk)
			}
		}
		if a.SL2VL != nil && b.SL2VL != nil {
			sd.SL2VL = tableDiff(a.SL2VL[node], b.SL2VL[node])
		}
		if len(sd.LFTBlocks) > 0 || len(sd.SL2VL) > 0 {
			d.Switches = append(d.Switches, sd)
			d.LFTBlocks += len(sd.LFTBlocks)
			d.SL2VLTables += len(sd.SL2VL)
		}
	}
	d.SwitchesChanged = len(d.Switches)
	if a.LIDs != nil && b.LIDs != nil {
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
	return d
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

func tableDiff(a, b []plan.SL2VLEntry) [][2]uint8 {
	key := func(e plan.SL2VLEntry) [2]uint8 { return [2]uint8{e.In, e.Out} }
	am := map[[2]uint8][16]uint8{}
	for _, e := range a {
		am[key(e)] = e.VL
	}
	var out [][2]uint8
	for _, e := range b {
		if v, ok := am[key(e)]; !ok || v != e.VL {
			out = append(out, key(e))
		}
	}
	slices.SortFunc(out, func(x, y [2]uint8) int {
		if x[0] != y[0] {
			return int(x[0]) - int(y[0])
		}
		return int(x[1]) - int(y[1])
	})
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
