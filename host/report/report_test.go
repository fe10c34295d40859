package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

func fab(t *testing.T, build func() (*topology.Topology, error)) *topology.Topology {
	t.Helper()
	topo, err := build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func minhop(t *testing.T, topo *topology.Topology) Plan {
	t.Helper()
	rz, err := analysistest.Realize(topo, analysistest.MinHop(topo), 0, plan.DLIDBase)
	if err != nil {
		t.Fatal(err)
	}
	return Plan{Name: "active", Engine: "minhop", Key: "k1", Rz: rz}
}

func updown(t *testing.T, topo *topology.Topology, root int32) Plan {
	t.Helper()
	rz, err := analysistest.Realize(topo, analysistest.UpDown(topo, root), 0, plan.DLIDBase)
	if err != nil {
		t.Fatal(err)
	}
	return Plan{Name: "candidate", Engine: "updn", Key: "k2", Rz: rz}
}

func ft2(leaves, spines, cas int) func() (*topology.Topology, error) {
	return func() (*topology.Topology, error) { return analysistest.FatTree2(leaves, spines, cas, 1) }
}

func ft3(k int) func() (*topology.Topology, error) {
	return func() (*topology.Topology, error) { return analysistest.FatTree3(k, 1) }
}

// twoLeaves is two leaf switches with a CA each under one spine, which
// it returns for the caller to add to.
func twoLeaves() (*analysistest.Fab, uint64) {
	f := analysistest.NewFab(1)
	l1, l2, spine := f.Switch(4), f.Switch(4), f.Switch(4)
	f.Link(l1, 3, spine, 1)
	f.Link(l2, 3, spine, 2)
	f.CAOn(l1, 1)
	f.CAOn(l2, 1)
	return f, spine
}

// TestTiers: fat trees get their tiers (leaves 1, then one per hop up);
// anything else is drawn force-directed.
func TestTiers(t *testing.T) {
	caOnSpine := func() (*topology.Topology, error) {
		f, spine := twoLeaves()
		f.CAOn(spine, 3) // a CA two tiers up: not a fat tree
		return f.Build()
	}
	cases := []struct {
		name  string
		build func() (*topology.Topology, error)
		tree  bool
		// perTier counts switches per tier (index 1 = leaves).
		perTier []int
	}{
		{"2-level fat tree", ft2(4, 2, 3), true, []int{0, 4, 2}},
		{"3-level fat tree k=4", ft3(4), true, []int{0, 8, 8, 4}},
		{"3-level fat tree k=8", ft3(8), true, []int{0, 32, 32, 16}},
		{"ring", func() (*topology.Topology, error) { return analysistest.Ring(6, 1, 1) }, false, nil},
		{"torus", func() (*topology.Topology, error) { return analysistest.Torus2D(3, 3, 1, 1) }, false, nil},
		{"CA above the leaves", caOnSpine, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topo := fab(t, c.build)
			tiers, tree := fatTreeTiers(topo)
			if tree != c.tree {
				t.Fatalf("fat tree = %v, want %v", tree, c.tree)
			}
			if !tree {
				return
			}
			got := make([]int, len(c.perTier))
			for i, n := range topo.Nodes {
				if n.Type == topology.Switch {
					if tiers[i] >= len(got) {
						t.Fatalf("switch %s at tier %d, want at most %d", n.Desc, tiers[i], len(got)-1)
					}
					got[tiers[i]]++
				}
			}
			for i := range got {
				if got[i] != c.perTier[i] {
					t.Fatalf("switches per tier %v, want %v", got, c.perTier)
				}
			}
		})
	}
}

// TestBuild checks the model's shape: layout, aggregation, which boxes are
// drawn, that every cable is on exactly one wire and every CA is drawn or
// counted on a box.
func TestBuild(t *testing.T) {
	cases := []struct {
		name       string
		build      func() (*topology.Topology, error)
		opt        Options
		layout     string
		aggregated bool
		// boxes by kind
		switches, cas, groups int
		// groupsPerTier, when aggregated (index 1 = leaves)
		groupsPerTier []int
	}{
		{name: "small fat tree, everything drawn", build: ft2(4, 2, 3), layout: "tiers", switches: 6, cas: 12},
		{name: "CAs beyond MaxCAs are counted", build: ft2(4, 2, 3), opt: Options{MaxCAs: 5}, layout: "tiers", switches: 6},
		{name: "ring, force-directed", build: func() (*topology.Topology, error) { return analysistest.Ring(6, 2, 1) },
			layout: "force", switches: 6, cas: 12},
		{name: "ring beyond MaxBoxes is not aggregated (no tiers)", build: func() (*topology.Topology, error) { return analysistest.Ring(6, 2, 1) },
			opt: Options{MaxBoxes: 3}, layout: "force", switches: 6, cas: 12},
		// k=12: 72 leaves in 12 pods, 72 aggregation switches in 6 index
		// classes, 36 cores by the aggregation index they hang off.
		{name: "3-level fat tree aggregated", build: ft3(12), opt: Options{MaxBoxes: 50}, layout: "tiers", aggregated: true,
			groups: 24, groupsPerTier: []int{0, 12, 6, 6}},
		{name: "3-level fat tree drawn switch by switch", build: ft3(12), layout: "tiers", switches: 180},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topo := fab(t, c.build)
			m, err := Build([]Plan{minhop(t, topo)}, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			if m.Layout != c.layout || m.Aggregated != c.aggregated {
				t.Fatalf("layout %q aggregated %v, want %q %v", m.Layout, m.Aggregated, c.layout, c.aggregated)
			}
			kinds := map[string]int{}
			perTier := map[int]int{}
			members, counted := 0, 0
			for i, b := range m.Nodes {
				if b.ID != i {
					t.Fatalf("box %d has id %d", i, b.ID)
				}
				kinds[b.Kind]++
				if b.Kind == "group" {
					perTier[b.Tier]++
					members += b.Members
				}
				counted += b.CAs
			}
			if kinds["switch"] != c.switches || kinds["ca"] != c.cas || kinds["group"] != c.groups {
				t.Fatalf("boxes %v, want %d switches, %d CAs, %d groups", kinds, c.switches, c.cas, c.groups)
			}
			if c.aggregated && members != m.Switches {
				t.Errorf("groups hold %d switches, the fabric has %d", members, m.Switches)
			}
			labels := map[string]bool{}
			for _, b := range m.Nodes {
				if b.Kind == "group" && labels[b.Label] {
					t.Errorf("two groups are labelled %q", b.Label)
				}
				labels[b.Label] = true
			}
			for tier, n := range c.groupsPerTier {
				if perTier[tier] != n {
					t.Errorf("tier %d: %d groups, want %d (%v)", tier, perTier[tier], n, perTier)
				}
			}
			if kinds["ca"]+counted != m.CAs {
				t.Errorf("%d CAs drawn + %d counted on boxes, the fabric has %d", kinds["ca"], counted, m.CAs)
			}
			// Every cable between two different boxes is on one wire.
			drawn := map[int32]bool{}
			for i, n := range topo.Nodes {
				drawn[int32(i)] = n.Type == topology.Switch || kinds["ca"] > 0
			}
			want, got := 0, 0
			for i, n := range topo.Nodes {
				for p := 1; p < len(n.Ports); p++ {
					if pr := n.Ports[p].Peer; pr.Connected() && drawn[int32(i)] && drawn[pr.Node] {
						want++
					}
				}
			}
			for i, w := range m.Links {
				if w.A >= w.B || w.B >= len(m.Nodes) {
					t.Fatalf("wire %d joins %d and %d", i, w.A, w.B)
				}
				if i > 0 && (m.Links[i-1].A > w.A || (m.Links[i-1].A == w.A && m.Links[i-1].B >= w.B)) {
					t.Fatalf("wires not sorted at %d", i)
				}
				got += w.Links
			}
			if !m.Aggregated && got != want/2 {
				t.Errorf("%d cables on wires, want %d", got, want/2)
			}
			p := m.Plans[0]
			if len(p.Load) != len(m.Links) || len(p.Worst) != len(m.Links) || len(p.LoadColour) != len(m.Links) || len(p.WorstColour) != len(m.Links) {
				t.Fatalf("per-wire slices %d/%d/%d/%d, want %d", len(p.Load), len(p.Worst), len(p.LoadColour), len(p.WorstColour), len(m.Links))
			}
			if !p.Metrics.CAPairs.Complete() {
				t.Errorf("minhop leaves CA pairs unreachable: %+v", p.Metrics.CAPairs)
			}
		})
	}
}

// bruteLoads walks every CA→CA route hop by hop: the reference the
// per-destination tree accumulation must equal.
func bruteLoads(rz *plan.Realized) map[topology.PortRef]int64 {
	t := rz.Topo
	eps, lids := caDests(rz)
	out := map[topology.PortRef]int64{}
	for _, src := range eps {
		for j, dst := range eps {
			if src == dst {
				continue
			}
			out[src]++
			node := t.Port(src).Peer.Node
			for hops := 0; hops < 64; hops++ {
				si := t.SwitchIndex(node)
				port := rz.LFT[si][lids[j]]
				ch := topology.PortRef{Node: node, Port: port}
				out[ch]++
				peer := t.Port(ch).Peer
				if peer == dst {
					break
				}
				node = peer.Node
			}
		}
	}
	return out
}

// TestLoads: the all-to-all loads equal a route-by-route count, and the
// worst shift is right on a fabric small enough to reason about.
func TestLoads(t *testing.T) {
	cases := []struct {
		name  string
		build func() (*topology.Topology, error)
	}{
		{"2-level fat tree", ft2(4, 2, 3)},
		{"3-level fat tree", ft3(4)},
		{"ring", func() (*topology.Topology, error) { return analysistest.Ring(5, 2, 1) }},
		{"torus", func() (*topology.Topology, error) { return analysistest.Torus2D(3, 4, 1, 1) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := minhop(t, fab(t, c.build))
			got := computeLoads(p.Rz, 0)
			want := bruteLoads(p.Rz)
			for ch, v := range want {
				if got.load[ch] != v {
					t.Errorf("channel %v: load %d, walking every route gives %d", ch, got.load[ch], v)
				}
			}
			for ch, v := range got.load {
				if v != 0 && want[ch] == 0 {
					t.Errorf("channel %v: load %d, no route crosses it", ch, v)
				}
			}
		})
	}
	// Two leaves of two CAs under one spine: 4 CAs. Every CA sends 3
	// routes; each uplink carries the 4 routes from its leaf's CAs to the
	// other leaf's. Shift 2 sends every flow across: 2 per uplink.
	topo := fab(t, ft2(2, 1, 2))
	m, err := Build([]Plan{minhop(t, topo)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := m.Plans[0]
	for i, w := range m.Links {
		up := m.Nodes[w.A].Kind == "switch" && m.Nodes[w.B].Kind == "switch"
		wantLoad, wantWorst := int64(3), int64(1)
		if up {
			wantLoad, wantWorst = 4, 2
		}
		if v.Load[i] != wantLoad || v.Worst[i] != wantWorst {
			t.Errorf("%s — %s: load %d worst %d, want %d %d", m.Nodes[w.A].Label, m.Nodes[w.B].Label, v.Load[i], v.Worst[i], wantLoad, wantWorst)
		}
		if v.LoadColour[i] != Colour(wantLoad, 3) || v.WorstColour[i] != Colour(wantWorst, 1) {
			t.Errorf("wire %d coloured %s/%s", i, v.LoadColour[i], v.WorstColour[i])
		}
	}
	if m.IdealLoad != 3 || v.MaxLoad != 4 || v.MaxWorst != 2 || v.Metrics.WorstShift != 2 || v.Metrics.Shifts != 3 {
		t.Errorf("ideal %d, max load %d, max worst %d, metrics worst %d over %d shifts; want 3, 4, 2, 2 over 3", m.IdealLoad, v.MaxLoad, v.MaxWorst, v.Metrics.WorstShift, v.Metrics.Shifts)
	}
}

// TestColour: green below half the ideal, yellow at it, red from twice it.
func TestColour(t *testing.T) {
	cases := []struct {
		v, ideal int64
		want     string
	}{
		{0, 10, "#2a9d28"},
		{5, 10, "#8ab128"}, // a quarter of the way: between green and yellow
		{10, 10, "#e9c428"},
		{15, 10, "#e07628"},
		{20, 10, "#d62828"},
		{1000, 10, "#d62828"}, // saturates
		{7, 0, "#2a9d28"},     // no ideal: nothing to compare with
	}
	for _, c := range cases {
		if got := Colour(c.v, c.ideal); got != c.want {
			t.Errorf("Colour(%d, %d) = %s, want %s", c.v, c.ideal, got, c.want)
		}
	}
	// Redder as the load grows.
	prev := -1
	for v := int64(0); v <= 40; v++ {
		var r, g, b int
		if _, err := fmt.Sscanf(Colour(v, 10), "#%02x%02x%02x", &r, &g, &b); err != nil {
			t.Fatal(err)
		}
		if r < prev && v <= 10 {
			t.Fatalf("red falls from %d to %d at %d", prev, r, v)
		}
		if v > 10 && g > 196 {
			t.Fatalf("green %d above the ideal at %d", g, v)
		}
		prev = r
	}
}

// TestSideBySide: the candidate is measured on the same layout; plans on
// different topologies are refused.
func TestSideBySide(t *testing.T) {
	topo := fab(t, ft3(4))
	act, cand := minhop(t, topo), updown(t, topo, topo.Switches()[0]) // rooted at a leaf: unbalanced
	m, err := Build([]Plan{act, cand}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	solo, err := Build([]Plan{act}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Plans) != 2 || m.Plans[0].Name != "active" || m.Plans[1].Name != "candidate" ||
		m.Plans[0].Metrics.Engine != "minhop" || m.Plans[1].Metrics.Engine != "updn" || m.Plans[1].Metrics.Key != "k2" {
		t.Fatalf("plans %+v", m.Plans)
	}
	// The active plan's figures do not depend on the candidate beside it.
	a, b := mustJSON(t, m.Plans[0]), mustJSON(t, solo.Plans[0])
	if a != b {
		t.Errorf("the active plan's view changed with a candidate beside it")
	}
	if mustJSON(t, m.Links) != mustJSON(t, solo.Links) || mustJSON(t, m.Nodes) != mustJSON(t, solo.Nodes) {
		t.Errorf("the layout changed with a candidate beside it")
	}
	differ := false
	for i := range m.Links {
		differ = differ || m.Plans[0].Load[i] != m.Plans[1].Load[i]
	}
	if !differ {
		t.Errorf("updn rooted at a leaf loads every wire as minhop does")
	}
	if m.Plans[1].MaxLoad <= m.Plans[0].MaxLoad {
		t.Errorf("updn rooted at a leaf: max load %d, minhop %d; want it higher", m.Plans[1].MaxLoad, m.Plans[0].MaxLoad)
	}
	other := minhop(t, fab(t, ft3(6)))
	other.Name = "candidate"
	if _, err := Build([]Plan{act, other}, Options{}); err == nil || !strings.Contains(err.Error(), "another topology") {
		t.Errorf("plans on different topologies: %v", err)
	}
	if _, err := Build(nil, Options{}); err == nil {
		t.Errorf("no plan: no error")
	}
}

var (
	// External references a browser would fetch. The SVG namespace is a
	// name, not a fetch, and is allowed.
	reExternal = regexp.MustCompile(`(?i)(\b(src|href|action|poster|data)\s*=|url\s*\(|@import|<link\b|<iframe|<object|<embed|fetch\s*\(|XMLHttpRequest|\bimport\s*\(|https?://|//[a-z0-9.-]+\.[a-z]{2,}/)`)
	reData     = regexp.MustCompile(`(?s)var M = (.*?);\nvar NS`)
)

// TestPageSelfContained: the page fetches nothing, carries its data as
// JSON that round-trips, and node descriptions cannot break out of it.
func TestPageSelfContained(t *testing.T) {
	hostile := func() (*topology.Topology, error) {
		f, _ := twoLeaves()
		topo, err := f.Build()
		if err == nil {
			for i := range topo.Nodes {
				topo.Nodes[i].Desc = `</script><script src="https://evil.example/x.js">alert(1)</script>` + topo.Nodes[i].Desc
			}
		}
		return topo, err
	}
	cases := []struct {
		name  string
		build func() (*topology.Topology, error)
		cand  bool
	}{
		{"one plan", ft2(4, 2, 3), false},
		{"active and candidate", ft3(4), true},
		{"aggregated", ft3(12), false},
		{"hostile node descriptions", hostile, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topo := fab(t, c.build)
			plans := []Plan{minhop(t, topo)}
			if c.cand {
				plans = append(plans, updown(t, topo, topo.Switches()[0]))
			}
			m, err := Build(plans, Options{Title: `<b>"title"</b>`, MaxBoxes: 50})
			if err != nil {
				t.Fatal(err)
			}
			m.CandidateError = `</script><img src=x onerror=alert(1)>`
			var b bytes.Buffer
			if err := Write(&b, m); err != nil {
				t.Fatal(err)
			}
			page := b.String()
			d := reData.FindStringSubmatch(page)
			if d == nil {
				t.Fatal("no model in the page")
			}
			// The model is data (labels reach the page as text only); the
			// rest is the page's own markup and code.
			if strings.ContainsAny(d[1], "<>&") {
				t.Errorf("the model carries raw <, > or & into the script")
			}
			rest := strings.Replace(page, d[1], "{}", 1)
			rest = strings.ReplaceAll(rest, `"http://www.w3.org/2000/svg"`, `""`)
			if loc := reExternal.FindStringIndex(rest); loc != nil {
				t.Fatalf("the page refers to something outside itself: %q", rest[max(0, loc[0]-60):min(len(rest), loc[1]+60)])
			}
			if n := strings.Count(page, "</script>"); n != 2 {
				t.Errorf("%d </script> in the page, want 2 (the error hook and the drawing)", n)
			}
			if strings.Contains(page, `<b>"title"</b>`) {
				t.Errorf("the title is not escaped")
			}
			var back Model
			if err := json.Unmarshal([]byte(d[1]), &back); err != nil {
				t.Fatalf("the page's model is not JSON: %v", err)
			}
			if mustJSON(t, &back) != mustJSON(t, m) {
				t.Errorf("the page's model differs from the one written")
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
