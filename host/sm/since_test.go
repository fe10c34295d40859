package sm

import (
	"reflect"
	"testing"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
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
