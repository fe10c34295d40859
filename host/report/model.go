// Package report turns a plan into one self-contained HTML page (`ibsm
// report`): the fabric drawn by tier when it is a fat tree and with a
// force-directed layout otherwise, every link coloured by its all-to-all
// load or, selectable, its worst load over shift permutations, the hop
// histogram, VL and SL usage and the unreachable pairs. When a candidate
// plan exists (candidate {} block) both plans are drawn side by side on
// the same layout, so a link's two colours compare. Large fabrics are
// aggregated (one box per group of like switches, CAs counted, not drawn)
// so the page stays readable and loads in seconds.
package report

import (
	"fmt"
	"sort"

	"github.com/ibsm/ibsm/host/rollout"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Options shape the model.
type Options struct {
	Title string
	// MaxBoxes is the most switches drawn one by one; beyond it switches
	// of a fat tree are aggregated into groups (default 400).
	MaxBoxes int
	// MaxCAs is the most CAs drawn (default 256); more are counted on
	// their switch.
	MaxCAs int
	// Shifts is how many shift permutations the worst-shift load takes
	// (default: all of them up to 1,024 CAs, else 64 evenly spaced).
	Shifts int
}

// Plan is one plan to draw.
type Plan struct {
	// Name says which plan it is: "active" or "candidate".
	Name   string
	Engine string
	// Key is the pipeline's plan key (the cache key of its result).
	Key string
	Rz  *plan.Realized
	VLs *plan.VLPlan
}

// Model is what the page draws; it is embedded in the page as JSON.
type Model struct {
	Title      string `json:"title"`
	Layout     string `json:"layout"` // "tiers" or "force"
	Aggregated bool   `json:"aggregated"`
	Switches   int    `json:"switches"`
	CAs        int    `json:"cas"`
	Nodes      []Box  `json:"nodes"`
	Links      []Wire `json:"links"`
	// IdealLoad is the all-to-all load of a channel in a full-bisection
	// fabric (N−1 routes): the colour scale's yellow. A shift's ideal is 1.
	IdealLoad int64 `json:"ideal_load"`
	// Scale is the colour ramp at 0, ½, 1, 1½ and 2 × the ideal (legend).
	Scale []string `json:"scale"`
	// Plans are the active plan and, when there is one, the candidate.
	Plans []PlanView `json:"plans"`
	// CandidateError says why the candidate plan is missing although the
	// configuration has a candidate {} block.
	CandidateError string `json:"candidate_error,omitempty"`
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

// Wire is one link (or all links between two groups) between boxes A < B.
type Wire struct {
	A     int `json:"a"`
	B     int `json:"b"`
	Links int `json:"links"`
}

// PlanView is one plan's figures; its per-wire slices are indexed like
// Model.Links.
type PlanView struct {
	Name string `json:"name"`
	// Metrics are the figures `ibsm rollout status` compares, so the page
	// and the shadow never disagree on what a plan measures.
	Metrics *rollout.Metrics `json:"metrics"`
	// Load and Worst are, per wire, the larger of the two directions'
	// all-to-all and worst-shift loads; for a group wire, the largest
	// over its links. LoadColour and WorstColour draw them.
	Load        []int64                `json:"load"`
	Worst       []int64                `json:"worst"`
	LoadColour  []string               `json:"load_colour"`
	WorstColour []string               `json:"worst_colour"`
	MaxLoad     int64                  `json:"max_load"`
	MaxWorst    int64                  `json:"max_worst"`
	Hops        []int64                `json:"hops"`
	VLChannels  []int                  `json:"vl_channels"` // [i]: channels carrying Metrics.VLsUsed[i]
	Unreachable []analysis.Unreachable `json:"unreachable"`
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

// cable is one link of the fabric and the wire that draws it.
type cable struct {
	wire        int
	here, there topology.PortRef
}

// Build computes the model of plans (the active plan first, then the
// candidate if any), which must share one topology: they are drawn on the
// same layout.
func Build(plans []Plan, o Options) (*Model, error) {
	if len(plans) == 0 {
		return nil, fmt.Errorf("report: no plan to draw")
	}
	o = o.withDefaults()
	t := plans[0].Rz.Topo
	for _, p := range plans[1:] {
		if p.Rz.Topo != t && p.Rz.Topo.Hash() != t.Hash() {
			return nil, fmt.Errorf("report: the %s plan was computed on another topology than the %s plan; compute both on one discovery", p.Name, plans[0].Name)
		}
	}
	m := &Model{Title: o.Title}
	cables := m.boxes(t, o)
	m.IdealLoad = max(1, int64(m.CAs)-1)
	for f := range int64(5) { // f/2 × the ideal, in integers
		m.Scale = append(m.Scale, Colour(f*m.IdealLoad, 2*m.IdealLoad))
	}
	for _, p := range plans {
		v, err := m.view(p, cables, o)
		if err != nil {
			return nil, fmt.Errorf("report: the %s plan: %w", p.Name, err)
		}
		m.Plans = append(m.Plans, *v)
	}
	return m, nil
}

// boxes lays the topology out: the boxes drawn, the wires between them
// (sorted by their ends) and every cable's wire.
func (m *Model) boxes(t *topology.Topology, o Options) []cable {
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
	group := make([]int, len(t.Nodes)) // node → box, -1: not drawn
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
	drawCAs := m.CAs <= o.MaxCAs
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
	var cables []cable
	wires := map[[2]int]int{}
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
			k := [2]int{min(a, b), max(a, b)}
			w, ok := wires[k]
			if !ok {
				w = len(m.Links)
				wires[k] = w
				m.Links = append(m.Links, Wire{A: k[0], B: k[1]})
			}
			m.Links[w].Links++
			cables = append(cables, cable{wire: w, here: topology.PortRef{Node: int32(i), Port: uint8(p)}, there: pr})
		}
	}
	// Sort the wires by their ends and renumber the cables' wires.
	order := make([]int, len(m.Links))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := m.Links[order[i]], m.Links[order[j]]
		return a.A < b.A || (a.A == b.A && a.B < b.B)
	})
	sorted, at := make([]Wire, len(order)), make([]int, len(order))
	for i, w := range order {
		sorted[i], at[w] = m.Links[w], i
	}
	m.Links = sorted
	for i := range cables {
		cables[i].wire = at[cables[i].wire]
	}
	return cables
}

// view measures one plan and colours the wires by its loads.
func (m *Model) view(p Plan, cables []cable, o Options) (*PlanView, error) {
	rep, err := analysis.Analyse(p.Rz, p.VLs, analysis.Options{Samples: 50})
	if err != nil {
		return nil, err
	}
	ld := computeLoads(p.Rz, o.Shifts)
	v := &PlanView{Name: p.Name, Metrics: rollout.MetricsOf(rep, p.Engine, p.Key), Hops: rep.Hops, Unreachable: rep.Unreachable,
		Load: make([]int64, len(m.Links)), Worst: make([]int64, len(m.Links))}
	for _, c := range cables {
		v.Load[c.wire] = max(v.Load[c.wire], ld.load[c.here], ld.load[c.there])
		v.Worst[c.wire] = max(v.Worst[c.wire], ld.worst[c.here], ld.worst[c.there])
	}
	for i := range m.Links {
		v.MaxLoad, v.MaxWorst = max(v.MaxLoad, v.Load[i]), max(v.MaxWorst, v.Worst[i])
		v.LoadColour = append(v.LoadColour, Colour(v.Load[i], m.IdealLoad))
		v.WorstColour = append(v.WorstColour, Colour(v.Worst[i], 1))
	}
	// The page's worst-shift figure is the loads' own (every channel,
	// o.Shifts shifts); the shadow samples fewer.
	v.Metrics.WorstShift, v.Metrics.Shifts = 0, ld.shifts
	for _, w := range ld.worst {
		v.Metrics.WorstShift = max(v.Metrics.WorstShift, w)
	}
	for _, s := range rep.VLs {
		v.VLChannels = append(v.VLChannels, s.Channels)
	}
	return v, nil
}

// Colour maps a channel's route count v against ideal, the load a
// full-bisection fabric puts on every channel: green up to half the
// ideal, through yellow at the ideal, to red at twice the ideal and above.
func Colour(v, ideal int64) string {
	x := 0.0
	if ideal > 0 {
		x = min(1, float64(v)/float64(2*ideal))
	}
	var r, g float64
	if x < 0.5 {
		r, g = 42+(233-42)*x*2, 157+(196-157)*x*2
	} else {
		r, g = 233+(214-233)*(x-0.5)*2, 196+(40-196)*(x-0.5)*2
	}
	return fmt.Sprintf("#%02x%02x28", int(r+0.5), int(g+0.5))
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
