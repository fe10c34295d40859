package sm

import (
	"reflect"
	"slices"
	"testing"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestRemoteSMsSince checks that the remote SMs of an updated model,
// patched from the old model's with the changed nodes, are those a pass
// over the whole model finds.
func TestRemoteSMsSince(t *testing.T) {
	port := func(sm bool, guid uint64) discovery.Port {
		p := discovery.Port{Valid: true, GUID: guid}
		if sm {
			p.Info.CapabilityMask = smp.CapIsSM
		}
		return p
	}
	node := func(guid uint64, typ uint8, path mad.Path, ports ...discovery.Port) *discovery.Node {
		return &discovery.Node{Info: smp.NodeInfo{NodeGUID: guid, PortGUID: guid, NodeType: typ}, Path: path, Ports: ports}
	}
	old := &discovery.Fabric{SMGUID: 0x100, SMPort: 1, Nodes: map[uint64]*discovery.Node{
		0x100: node(0x100, smp.NodeTypeCA, nil, discovery.Port{}, port(true, 0x101)),
		0x10:  node(0x10, smp.NodeTypeSwitch, mad.Path{1}, port(true, 0x10), port(false, 0x10), port(false, 0x10)),
		0x20:  node(0x20, smp.NodeTypeSwitch, mad.Path{1, 2}, port(false, 0x20), port(false, 0x20), port(false, 0x20)),
		0x200: node(0x200, smp.NodeTypeCA, mad.Path{1, 2}, discovery.Port{}, port(true, 0x201)),
		0x300: node(0x300, smp.NodeTypeCA, mad.Path{1, 3}, discovery.Port{}, port(false, 0x301), port(true, 0x302)),
	}}
	tests := []struct {
		name    string
		edit    func(f *discovery.Fabric)
		changed []uint64
	}{
		{"routes moved, nothing read", func(f *discovery.Fabric) {
			n := f.Nodes[0x10].Clone()
			n.Path = mad.Path{1, 4}
			f.Nodes[0x10] = n
		}, nil},
		{"a CA port became an SM", func(f *discovery.Fabric) {
			n := f.Nodes[0x300].Clone()
			n.Ports[1].Info.CapabilityMask = smp.CapIsSM
			f.Nodes[0x300] = n
		}, []uint64{0x300}},
		{"an SM stopped", func(f *discovery.Fabric) {
			n := f.Nodes[0x200].Clone()
			n.Ports[1].Info.CapabilityMask = 0
			f.Nodes[0x200] = n
		}, []uint64{0x20, 0x200}},
		{"a switch dropped", func(f *discovery.Fabric) { delete(f.Nodes, 0x10) }, nil},
		{"a port unread", func(f *discovery.Fabric) {
			n := f.Nodes[0x200].Clone()
			n.Ports[1].Valid = false
			f.Nodes[0x200] = n
		}, []uint64{0x200}},
	}
	prev := remoteSMs(old)
	if len(prev) != 3 {
		t.Fatalf("old model: %d remote SMs %+v, want 3", len(prev), prev)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fab := old.ShallowCopy()
			tc.edit(fab)
			got, want := remoteSMsSince(prev, old, fab, tc.changed), remoteSMs(fab)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("patched %+v, whole %+v", got, want)
			}
		})
	}
}

// TestTopoCounts: counts carried from one snapshot to the next patched
// from it equal a whole count, links between two changed nodes included.
func TestTopoCounts(t *testing.T) {
	b := topology.NewBuilder()
	up := topology.Port{State: topology.StateActive, VLCap: 1}
	for _, g := range []uint64{0x10, 0x20} {
		if err := b.AddNode(topology.Node{GUID: g, Type: topology.Switch, Ports: []topology.Port{{GUID: g}, up, up, up, up}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AddNode(topology.Node{GUID: 0x100, Type: topology.CA, Ports: []topology.Port{{}, up}}); err != nil {
		t.Fatal(err)
	}
	b.Link(0x10, 1, 0x20, 1)
	b.Link(0x10, 2, 0x20, 2)
	b.Link(0x10, 3, 0x100, 1)
	b.Link(0x20, 3, 0x20, 4) // a loopback cable: one link, one node
	t0, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	cut := func(from *topology.Topology, ends ...[2]int) *topology.Topology {
		var nodes []topology.Node
		for _, e := range ends {
			k := slices.IndexFunc(nodes, func(n topology.Node) bool { return n.GUID == uint64(e[0]) })
			if k < 0 {
				n := from.Nodes[from.NodeByGUID(uint64(e[0]))]
				n.Ports = slices.Clone(n.Ports)
				nodes, k = append(nodes, n), len(nodes)
			}
			nodes[k].Ports[e[1]].Peer = topology.PortRef{Node: topology.NoNode}
		}
		out, err := from.Patch(nodes)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	t1 := cut(t0, [2]int{0x10, 1}, [2]int{0x20, 1})
	t2 := cut(t1, [2]int{0x10, 3}, [2]int{0x100, 1})
	t3 := cut(t2, [2]int{0x20, 3}, [2]int{0x20, 4})
	var c topoCounts
	for i, topo := range []*topology.Topology{t0, t1, t2, t3, t0} {
		var got, want Report
		c = c.count(&got, topo)
		countTopo(&want, topo)
		if got.Nodes != want.Nodes || got.Switches != want.Switches || got.CAs != want.CAs || got.Links != want.Links {
			t.Fatalf("snapshot %d: counted %+v, whole %+v", i, got, want)
		}
	}
}
