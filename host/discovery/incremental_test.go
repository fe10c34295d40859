package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/discovery/discoverytest"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/smp"
)

// clearPSC clears PortStateChange on every switch of fab, as the SM does
// after a sweep, so that the next fault leaves the bit only where it hit.
func (r *rig) clearPSC(t *testing.T, fab *discovery.Fabric) {
	t.Helper()
	for _, n := range fab.Nodes {
		if n.Info.NodeType != smp.NodeTypeSwitch {
			continue
		}
		var si smp.SwitchInfo
		must(t, r.c.Get(context.Background(), n.Path, smp.AttrSwitchInfo, 0, &si))
		if si.PortStateChange {
			must(t, r.c.Set(context.Background(), n.Path, smp.AttrSwitchInfo, 0, &si, nil))
		}
	}
}

// changed lists the switches of the model whose PortStateChange bit is set
// in the simulator (what traps and a light sweep report).
func (r *rig) changed(t *testing.T, f *netfile.File, model *discovery.Fabric) discovery.Changes {
	t.Helper()
	var ch discovery.Changes
	for _, n := range f.Nodes {
		if n.Type != topology.Switch || model.Nodes[n.GUID] == nil {
			continue
		}
		if _, psc, err := r.fab.SwitchInfo(n.GUID); err == nil && psc {
			ch.Switches = append(ch.Switches, n.GUID)
		}
	}
	return ch
}

// checkPaths asserts every recorded route leads to its node.
func (r *rig) checkPaths(t *testing.T, fab *discovery.Fabric) {
	t.Helper()
	for guid, n := range fab.Nodes {
		var ni smp.NodeInfo
		if err := r.c.Get(context.Background(), n.Path, smp.AttrNodeInfo, 0, &ni); err != nil || ni.NodeGUID != guid {
			t.Fatalf("route %s of node %#x: %v, reaches %#x", n.Path, guid, err, ni.NodeGUID)
		}
	}
}

// deepCopy copies every node of f (Update must leave them as they were).
func deepCopy(f *discovery.Fabric) *discovery.Fabric {
	c := f.ShallowCopy()
	for g, n := range c.Nodes {
		c.Nodes[g] = n.Clone()
	}
	return c
}

// untouched asserts that model still holds what its copy before holds:
// the same node pointers, and in them the same ports and routes.
func untouched(t *testing.T, model, before *discovery.Fabric) {
	t.Helper()
	if d := discoverytest.Diff(model, before); len(d) != 0 {
		t.Fatalf("the update changed the model it started from: %q", d)
	}
	for g, n := range before.Nodes {
		if m := model.Nodes[g]; !reflect.DeepEqual(n.Ports, m.Ports) || n.Path.String() != m.Path.String() || !reflect.DeepEqual(n.Switch, m.Switch) {
			t.Fatalf("the update changed node %#x of the model it started from", g)
		}
	}
}

// changedCovers asserts that every node of inc that sum.Changed does not
// list holds the ports it had in model.
func changedCovers(t *testing.T, name string, model, inc *discovery.Fabric, sum discovery.UpdateSummary) {
	t.Helper()
	for g, n := range inc.Nodes {
		if slices.Contains(sum.Changed, g) {
			continue
		}
		if m := model.Nodes[g]; m == nil || !reflect.DeepEqual(m.Ports, n.Ports) {
			t.Fatalf("%s: node %#x changed but is not in the summary's Changed %x", name, g, sum.Changed)
		}
	}
}

// samePaths asserts that inc routes every node as full does: both hold
// canonical routes (the shortest, lowest port by port), whatever order
// the walk found the nodes in.
func samePaths(t *testing.T, name string, inc, full *discovery.Fabric) {
	t.Helper()
	for g, n := range full.Nodes {
		if m := inc.Nodes[g]; m == nil || m.Path.String() != n.Path.String() {
			var got mad.Path
			if m != nil {
				got = m.Path
			}
			t.Fatalf("%s: node %#x: update's route %s, a full discovery's %s", name, g, got, n.Path)
		}
	}
}

func switchLinks(f *netfile.File) []netfile.Link {
	var out []netfile.Link
	for _, l := range f.Links() {
		if l.A.Type == topology.Switch && l.B.Type == topology.Switch {
			out = append(out, l)
		}
	}
	return out
}

func caLink(f *netfile.File, skip uint64) netfile.Link {
	for _, l := range f.Links() {
		if l.A.Type != topology.Switch && l.A.GUID != skip {
			return l
		}
		if l.B.Type != topology.Switch && l.B.GUID != skip {
			return netfile.Link{A: l.B, PA: l.PB, B: l.A, PB: l.PA}
		}
	}
	return netfile.Link{}
}

// TestUpdateMatchesFullDiscovery applies fault sequences and checks after
// each step that the incremental update of the previous model equals a
// full discovery, with fewer SMPs.
func TestUpdateMatchesFullDiscovery(t *testing.T) {
	type step struct {
		name  string
		fault func(r *rig, f *netfile.File) error
	}
	down := func(i int) func(r *rig, f *netfile.File) error {
		return func(r *rig, f *netfile.File) error {
			l := switchLinks(f)[i]
			return r.fab.LinkDown(l.A.GUID, uint8(l.PA))
		}
	}
	up := func(i int) func(r *rig, f *netfile.File) error {
		return func(r *rig, f *netfile.File) error {
			l := switchLinks(f)[i]
			return r.fab.LinkUp(l.A.GUID, uint8(l.PA))
		}
	}
	sm := func(r *rig) uint64 { return r.sm }
	caDown := func(r *rig, f *netfile.File) error {
		l := caLink(f, sm(r))
		return r.fab.LinkDown(l.A.GUID, uint8(l.PA))
	}
	caUp := func(r *rig, f *netfile.File) error { l := caLink(f, sm(r)); return r.fab.LinkUp(l.A.GUID, uint8(l.PA)) }
	// leafCut takes down every uplink of the switch at the far end of the
	// last CA link: the leaf and its hosts vanish.
	leaf := func(f *netfile.File) *netfile.Node {
		ls := f.Links()
		for i := len(ls) - 1; i >= 0; i-- {
			if ls[i].A.Type != topology.Switch {
				return ls[i].B
			}
			if ls[i].B.Type != topology.Switch {
				return ls[i].A
			}
		}
		return nil
	}
	leafLinks := func(r *rig, f *netfile.File, isUp bool) error {
		n := leaf(f)
		for p := 1; p < len(n.Ports); p++ {
			if n.Ports[p].Peer != nil && n.Ports[p].Peer.Type == topology.Switch {
				var err error
				if isUp {
					err = r.fab.LinkUp(n.GUID, uint8(p))
				} else {
					err = r.fab.LinkDown(n.GUID, uint8(p))
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	removeSwitch := func(r *rig, f *netfile.File) error { l := switchLinks(f)[0]; return r.fab.RemoveNode(l.B.GUID) }
	removeCA := func(r *rig, f *netfile.File) error { return r.fab.RemoveNode(caLink(f, sm(r)).A.GUID) }

	tests := []struct {
		name  string
		file  func(t *testing.T) *netfile.File
		steps []step
	}{
		{"fat tree 2 levels", func(t *testing.T) *netfile.File { return gen(t, topogen.FatTree{Radix: 4, Levels: 2}) }, []step{
			{"switch link down", down(0)},
			{"second switch link down", down(3)},
			{"first back up", up(0)},
			{"CA link down", caDown},
			{"CA back (a new CA)", caUp},
			{"leaf cut off", func(r *rig, f *netfile.File) error { return leafLinks(r, f, false) }},
			{"leaf back (a new subtree)", func(r *rig, f *netfile.File) error { return leafLinks(r, f, true) }},
			{"second link up", up(3)},
			{"CA removed", removeCA},
			{"switch removed", removeSwitch},
		}},
		{"fat tree 3 levels", func(t *testing.T) *netfile.File { return gen(t, topogen.FatTree{Radix: 4, Levels: 3}) }, []step{
			{"link down", down(0)},
			{"another link down", down(5)},
			{"both up", func(r *rig, f *netfile.File) error {
				if err := up(0)(r, f); err != nil {
					return err
				}
				return up(5)(r, f)
			}},
			{"switch removed", removeSwitch},
		}},
		{"line", line, []step{
			{"middle link down", func(r *rig, f *netfile.File) error { return r.fab.LinkDown(0x20, 2) }},
			{"middle link up", func(r *rig, f *netfile.File) error { return r.fab.LinkUp(0x20, 2) }},
		}},
		{"two-port CA", dualRail, []step{
			{"CA port 1 down", func(r *rig, f *netfile.File) error { return r.fab.LinkDown(0x3000, 1) }},
			{"a parallel cable down", func(r *rig, f *netfile.File) error { return r.fab.LinkDown(0x10, 3) }},
			{"CA port 1 up", func(r *rig, f *netfile.File) error { return r.fab.LinkUp(0x3000, 1) }},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.file(t)
			r := attach(t, f, 0, 0, transport.Options{Window: 32}, nil)
			model, modelTopo := r.discover(t)
			r.clearPSC(t, model)
			for _, st := range tc.steps {
				must(t, st.fault(r, f))
				ch := r.changed(t, f, model)
				if ch.Empty() {
					t.Fatalf("%s: no switch reported a change", st.name)
				}
				d := &discovery.Discoverer{C: r.c}
				before := deepCopy(model)
				inc, sum, err := d.Update(context.Background(), model, ch)
				if err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				untouched(t, model, before)
				changedCovers(t, st.name, model, inc, sum)
				full, fullTopo := r.discover(t)
				if diff := discoverytest.Diff(inc, full); len(diff) != 0 {
					t.Fatalf("%s: incremental model differs from a full discovery:\n%s", st.name, strings.Join(diff, "\n"))
				}
				samePaths(t, st.name, inc, full)
				incTopo, err := inc.Topology()
				must(t, err)
				if incTopo.Hash() != fullTopo.Hash() {
					t.Fatalf("%s: topology hash %x, full discovery %x", st.name, incTopo.Hash(), fullTopo.Hash())
				}
				// The snapshot patched from the last one where the
				// update changed something is the one cut afresh.
				patched, err := inc.PatchTopology(modelTopo, sum, nil)
				must(t, err)
				if !reflect.DeepEqual(patched, incTopo) || patched.Hash() != fullTopo.Hash() {
					t.Fatalf("%s: patched snapshot (hash %x, changed %x) differs from the one cut afresh (%x)", st.name, patched.Hash(), sum.Changed, fullTopo.Hash())
				}
				if inc.SMPs >= full.SMPs {
					t.Fatalf("%s: update used %d SMPs, full discovery %d", st.name, inc.SMPs, full.SMPs)
				}
				if sum.LinksDown+sum.LinksUp == 0 {
					t.Fatalf("%s: summary %+v saw no link change", st.name, sum)
				}
				r.checkPaths(t, inc)
				t.Logf("%s: %d SMPs incremental, %d full; %+v", st.name, inc.SMPs, full.SMPs, sum)
				r.clearPSC(t, inc)
				model, modelTopo = inc, patched
			}
		})
	}
}

func TestUpdateUntrusted(t *testing.T) {
	f := line(t)
	tests := []struct {
		name string
		ch   discovery.Changes
		// wrap interposes on the connection after the first discovery.
		blackhole []uint8
		want      string
	}{
		{"unknown switch", discovery.Changes{Switches: []uint64{0x99}}, nil, "not a switch of the model"},
		{"a CA named as a switch", discovery.Changes{Switches: []uint64{0x1000}}, nil, "not a switch of the model"},
		{"unknown port", discovery.Changes{Ports: []discovery.PortRef{{GUID: 0x2000, Port: 7}}}, nil, "not in the model"},
		// S2 is reached over S1[2]; its SMPs vanish but nothing says the
		// route changed, so the update cannot tell what happened.
		{"switch not answering", discovery.Changes{Switches: []uint64{0x20}}, []uint8{1, 2}, "0x0000000000000020"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var bh *blackhole
			r := attach(t, f, 0, 0, transport.Options{Timeout: 300 * time.Millisecond, Retries: transport.NoRetries},
				func(c transport.Conn) transport.Conn { bh = &blackhole{Conn: c, prefix: []uint8{0xFF}}; return bh })
			model, _ := r.discover(t)
			if tc.blackhole != nil {
				bh.prefix = tc.blackhole
			}
			_, _, err := (&discovery.Discoverer{C: r.c}).Update(context.Background(), model, tc.ch)
			if !errors.Is(err, discovery.ErrUntrusted) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want ErrUntrusted mentioning %q", err, tc.want)
			}
		})
	}
}

// An update with nothing changed reads the named ports, changes nothing and
// leaves the old model untouched.
func TestUpdateNoChange(t *testing.T) {
	f := gen(t, topogen.FatTree{Radix: 4, Levels: 2})
	r := attach(t, f, 0, 0, transport.Options{}, nil)
	model, topo := r.discover(t)
	sw := topo.Nodes[topo.Switches()[0]].GUID
	inc, sum, err := (&discovery.Discoverer{C: r.c}).Update(context.Background(), model, discovery.Changes{Switches: []uint64{sw}})
	must(t, err)
	if d := discoverytest.Diff(inc, model); len(d) != 0 {
		t.Fatalf("diff: %q", d)
	}
	// The ports are in Init (nothing programmed them), so the update
	// re-probes each cable to check what is behind it, but finds the
	// same nodes.
	if n := len(model.Nodes[sw].Ports); sum.PortsRead < n || sum.LinksDown+sum.LinksUp+sum.NewNodes+sum.Dropped != 0 {
		t.Fatalf("summary %+v; want at least %d ports read and no change", sum, n)
	}
	if inc.Nodes[sw] == model.Nodes[sw] {
		t.Fatal("update shares nodes with the old model")
	}
}

// A switch that is removed while the model reaches it the long way (set
// by hand: Run re-routes what its parallel walk found over another spine
// and leaf first, but a model made otherwise may hold it): cutting the
// SM leaf's link to it re-reads it over that route, which still looks
// intact because the leaf on it is not read yet. The failed read waits for
// that leaf instead of declaring the update untrusted, and the switch is
// dropped.
func TestUpdateSwitchGoneOnLongRoute(t *testing.T) {
	f := gen(t, topogen.FatTree{Radix: 4, Levels: 2})
	r := attach(t, f, 0, 0, transport.Options{Timeout: 20 * time.Millisecond, Retries: 1}, nil)
	model, _ := r.discover(t)
	at := func(p mad.Path) *discovery.Node {
		for _, n := range model.Nodes {
			if n.Path.String() == p.String() {
				return n
			}
		}
		t.Fatalf("no node at %s", p)
		return nil
	}
	leaf0, spineA, gone := at(mad.Path{1}), at(mad.Path{1, 3}), at(mad.Path{1, 4})
	// spineA -> another leaf -> gone: a route a parallel walk may record.
	var long mad.Path
	for p := 1; p < len(spineA.Ports) && long == nil; p++ {
		leaf := model.Nodes[spineA.Ports[p].PeerGUID]
		if leaf == nil || leaf == leaf0 {
			continue
		}
		for q := 1; q < len(leaf.Ports); q++ {
			if leaf.Ports[q].PeerGUID == gone.Info.NodeGUID {
				long = mad.Path{1, 3, uint8(p), uint8(q)}
				break
			}
		}
	}
	if long == nil {
		t.Fatal("no long route to the second spine")
	}
	gone.Path = long
	r.clearPSC(t, model)
	must(t, r.fab.RemoveNode(gone.Info.NodeGUID))
	ch := r.changed(t, f, model)
	inc, sum, err := (&discovery.Discoverer{C: r.c}).Update(context.Background(), model, ch)
	if err != nil {
		t.Fatalf("update after removing the switch on route %s: %v", long, err)
	}
	if inc.Nodes[gone.Info.NodeGUID] != nil || sum.Dropped != 1 {
		t.Fatalf("switch still in the model (summary %+v)", sum)
	}
	full, _ := r.discover(t)
	if d := discoverytest.Diff(inc, full); len(d) != 0 {
		t.Fatalf("update differs from a full discovery: %q", d)
	}
	r.checkPaths(t, inc)
}

// TestUpdateRandomCables takes random cables of a 3-level fat tree down
// and up, a few at a time, and checks after each step that the update
// of the last model equals a full discovery, routes included (the
// update re-routes only the nodes behind what changed), and leaves the
// model it started from as it was.
func TestUpdateRandomCables(t *testing.T) {
	f := gen(t, topogen.FatTree{Radix: 6, Levels: 3})
	r := attach(t, f, 0, 0, transport.Options{Window: 32}, nil)
	model, _ := r.discover(t)
	r.clearPSC(t, model)
	links := f.Links()
	rng := rand.New(rand.NewPCG(16, 14))
	down := map[int]bool{}
	for step := 0; step < 60; step++ {
		var what []string
		for k := 1 + rng.IntN(3); k > 0; k-- {
			i := rng.IntN(len(links))
			l := links[i]
			if l.A.GUID == r.sm || l.B.GUID == r.sm {
				continue // the SM's own cable: nothing left to update
			}
			var err error
			if down[i] {
				err = r.fab.LinkUp(l.A.GUID, uint8(l.PA))
			} else {
				err = r.fab.LinkDown(l.A.GUID, uint8(l.PA))
			}
			must(t, err)
			down[i] = !down[i]
			what = append(what, fmt.Sprintf("%#x/%d down=%v", l.A.GUID, l.PA, down[i]))
		}
		name := fmt.Sprintf("step %d (%s)", step, strings.Join(what, ", "))
		ch := r.changed(t, f, model)
		if ch.Empty() {
			continue
		}
		before := deepCopy(model)
		inc, sum, err := (&discovery.Discoverer{C: r.c}).Update(context.Background(), model, ch)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		untouched(t, model, before)
		changedCovers(t, name, model, inc, sum)
		full, _ := r.discover(t)
		if d := discoverytest.Diff(inc, full); len(d) != 0 {
			t.Fatalf("%s: update differs from a full discovery:\n%s", name, strings.Join(d, "\n"))
		}
		samePaths(t, name, inc, full)
		r.clearPSC(t, inc)
		model = inc
	}
}
