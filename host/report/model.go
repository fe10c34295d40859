// Package report turns a plan into one self-contained HTML page (`ibsm
// report`): the fabric drawn by tier when it is a fat tree and with a
// force-directed layout otherwise, every link coloured by its all-to-all
// load or, selectable, its worst load over shift permutations, the hop
// histogram, VL and SL usage and the unreachable pairs. Large fabrics are
// aggregated (one box per group of like switches, CAs counted, not
// drawn) so the page stays readable and loads in seconds.
package report

import (
	"fmt"
	"sort"

	"github.com/ibsm/ibsm/host/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Options shape the model.
type Options struct {
	Title string
	// MaxBoxes is the most switches drawn one by one; beyond it (or with
	// more CAs than MaxCAs) switches are aggregated into groups
	// (default 400).
	MaxBoxes int
	// MaxCAs is the most CAs drawn (default 256); more are counted on
	// their switch.
	MaxCAs int
	// Shifts is how many shift permutations the worst-shift load takes
	// (default: all of them up to 1,024 CAs, else 64 evenly spaced).
	Shifts int
}

// Model is what the page draws; it is embedded in the page as JSON.
type Model struct {
	Title      string  `json:"title"`
	Engine     string  `json:"engine"`
	Layout     string  `json:"layout"` // "tiers" or "force"
	Aggregated bool    `json:"aggregated"`
	Nodes      []Box   `json:"nodes"`
	Links      []Wire  `json:"links"`
	MaxLoad    int64   `json:"max_load"`
	MaxWorst   int64   `json:"max_worst"`
	Shifts     int     `json:"shifts"`
	Switches   int     `json:"switches"`
	CAs        int     `json:"cas"`
	Hops       []int64 `json:"hops"`
	VLsUsed    []int   `json:"vls_used"`
	SLsUsed    []int   `json:"sls_used"`
	// VLChannels[i] is how many channels carry VLsUsed[i].
	VLChannels   []int                  `json:"vl_channels"`
	DeadlockFree bool                   `json:"deadlock_free"`
	CAPairs      analysis.PairStats     `json:"ca_pairs"`
	SwitchPairs  analysis.PairStats     `json:"switch_pairs"`
	Unreachable  []analysis.Unreachable `json:"unreachable"`
	LoadNorm     float64                `json:"max_load_normalized"`
}

// Box is one switch, one CA or one group of switches.
type Box struct {
	ID    int    `json:"id"`
	Label string `json:"label"`
	Kind  string `json:"kind"` // switch, ca, group
	Tier  int    `json:"tier"` // 0: CAs, 1: leaves, …; -1 when not a fat tree
	// Members is how many switches a group holds; CAs how many CAs hang
	// off this box without being drawn.
	Members int `json:"members,omitempty"`
	CAs     int `json:"cas,omitempty"`
}

// Wire is one link (or all links between two groups), both directions.
type Wire struct {
	A int `json:"a"`
	B int `json:"b"`
	// Load and Worst are the larger of the two directions' all-to-all and
	// worst-shift loads; for a group wire, the largest over its links.
	Load  int64 `json:"load"`
	Worst int64 `json:"worst"`
	Links int   `json:"links"`
}

func (o Options) withDefaults() Options {
	if o.MaxBoxes <= 0 {
		o.MaxBoxes = 400
	}
	if o.MaxCAs <= 0 {
		o.MaxCAs = 256
	}
	return o
}

// Build computes the model of plan rz (with VL plan vls and engine name).
func Build(rz *plan.Realized, vls *plan.VLPlan, engine string, o Options) (*Model, error) {
	o = o.withDefaults()
	t := rz.Topo
	rep, err := analysis.Analyse(rz, vls, analysis.Options{Samples: 50})
	if err != nil {
		return nil, err
	}
	ld := computeLoads(rz, o.Shifts)
	m := &Model{Title: o.Title, Engine: engine, Hops: rep.Hops, VLsUsed: rep.VLsUsed, SLsUsed: rep.SLsUsed,
		DeadlockFree: rep.DeadlockFree, CAPairs: rep.CAPairs, SwitchPairs: rep.SwitchPairs, Unreachable: rep.Unreachable,
		LoadNorm: rep.Load.MaxNormalized, Shifts: ld.shifts}
	for _, v := range rep.VLs {
		m.VLChannels = append(m.VLChannels, v.Channels)
	}
	tiers, isTree := fatTreeTiers(t)
	m.Layout = "force"
	if isTree {
		m.Layout = "tiers"
	}
	for i := range t.Nodes {
		if t.Nodes[i].Type == topology.Switch {
			m.Switches++
		} else {
			m.CAs++
		}
	}
	drawCAs := m.CAs <= o.MaxCAs
	group := make([]int, len(t.Nodes)) // node → box id, -1 not drawn
	for i := range group {
		group[i] = -1
	}
	if m.Switches > o.MaxBoxes && isTree {
		m.Aggregated = true
		groupSwitches(t, tiers, m, group)
	} else {
		for i := range t.Nodes {
			n := &t.Nodes[i]
			if n.Type != topology.Switch {
				continue
			}
			group[i] = len(m.Nodes)
			m.Nodes = append(m.Nodes, Box{ID: len(m.Nodes), Label: label(n), Kind: "switch", Tier: tierOf(tiers, isTree, i)})
		}
	}
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if n.Type == topology.Switch {
			continue
		}
		if drawCAs {
			group[i] = len(m.Nodes)
			m.Nodes = append(m.Nodes, Box{ID: len(m.Nodes), Label: label(n), Kind: "ca", Tier: 0})
			continue
		}
		for p := 1; p < len(n.Ports); p++ { // counted on the switch it hangs off
			if pr := n.Ports[p].Peer; pr.Connected() && group[pr.Node] >= 0 {
				m.Nodes[group[pr.Node]].CAs++
				break
			}
		}
	}
	wires := map[[2]int]*Wire{}
	for i := range t.Nodes {
		n := &t.Nodes[i]
		for p := 1; p < len(n.Ports); p++ {
			pr := n.Ports[p].Peer
			if !pr.Connected() || pr.Node < int32(i) || (pr.Node == int32(i) && pr.Port < uint8(p)) {
				continue // each cable once
			}
			a, b := group[i], group[pr.Node]
			if a < 0 || b < 0 || a == b {
				continue
			}
			if a > b {
				a, b = b, a
			}
			here, there := topology.PortRef{Node: int32(i), Port: uint8(p)}, pr
			load := max(ld.load[here], ld.load[there])
			worst := max(ld.worst[here], ld.worst[there])
			w := wires[[2]int{a, b}]
			if w == nil {
				w = &Wire{A: a, B: b}
				wires[[2]int{a, b}] = w
			}
			w.Links++
			w.Load, w.Worst = max(w.Load, load), max(w.Worst, worst)
		}
	}
	for _, w := range wires {
		m.Links = append(m.Links, *w)
		m.MaxLoad, m.MaxWorst = max(m.MaxLoad, w.Load), max(m.MaxWorst, w.Worst)
	}
	sort.Slice(m.Links, func(i, j int) bool {
		if m.Links[i].A != m.Links[j].A {
			return m.Links[i].A < m.Links[j].A
		}
		return m.Links[i].B < m.Links[j].B
	})
	return m, nil
}

func label(n *topology.Node) string {
	if n.Desc != "" {
		return n.Desc
	}
	return fmt.Sprintf("0x%016x", n.GUID)
}

func tierOf(tiers []int, isTree bool, i int) int {
	if !isTree {
		return -1
	}
	return tiers[i]
}
