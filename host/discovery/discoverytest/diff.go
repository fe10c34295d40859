// Package discoverytest holds what tests of discovery's users compare
// fabrics with.
package discoverytest

import (
	"fmt"
	"sort"

	"github.com/ibsm/ibsm/host/discovery"
)

// Diff lists how a and b differ in what the SM acts on: nodes, node types,
// descriptions, port GUIDs, links, and of every port read the state,
// width, speed, VLCap, LID, LMC and MasterSMLID. Routes, PortStateChange
// and the fields that depend on the port an SMP arrived on are ignored.
// An empty result means a and b describe the same fabric.
func Diff(a, b *discovery.Fabric) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if a.SMGUID != b.SMGUID || a.SMPort != b.SMPort {
		add("SM at 0x%016x/%d vs 0x%016x/%d", a.SMGUID, a.SMPort, b.SMGUID, b.SMPort)
	}
	guids := make([]uint64, 0, len(a.Nodes)+len(b.Nodes))
	for g := range a.Nodes {
		guids = append(guids, g)
	}
	for g := range b.Nodes {
		if a.Nodes[g] == nil {
			guids = append(guids, g)
		}
	}
	sort.Slice(guids, func(i, j int) bool { return guids[i] < guids[j] })
	for _, g := range guids {
		x, y := a.Nodes[g], b.Nodes[g]
		if x == nil || y == nil {
			add("node 0x%016x only in one fabric (first has it: %v)", g, x != nil)
			continue
		}
		if x.Info.NodeType != y.Info.NodeType || x.Desc != y.Desc || len(x.Ports) != len(y.Ports) {
			add("node 0x%016x: type/desc/ports %d %q %d vs %d %q %d", g, x.Info.NodeType, x.Desc, len(x.Ports), y.Info.NodeType, y.Desc, len(y.Ports))
			continue
		}
		if (x.Switch == nil) != (y.Switch == nil) || (x.Switch != nil && x.Switch.LinearFDBTop != y.Switch.LinearFDBTop) {
			add("node 0x%016x: SwitchInfo %+v vs %+v", g, x.Switch, y.Switch)
		}
		for p := range x.Ports {
			u, v := &x.Ports[p], &y.Ports[p]
			if u.Valid != v.Valid || u.GUID != v.GUID || u.PeerGUID != v.PeerGUID || u.PeerPort != v.PeerPort {
				add("node 0x%016x port %d: valid %v guid %#x peer 0x%016x/%d vs valid %v guid %#x peer 0x%016x/%d",
					g, p, u.Valid, u.GUID, u.PeerGUID, u.PeerPort, v.Valid, v.GUID, v.PeerGUID, v.PeerPort)
				continue
			}
			ui, vi := u.Info, v.Info
			if ui.PortState != vi.PortState || ui.LinkWidthActive != vi.LinkWidthActive || ui.LinkSpeedActive != vi.LinkSpeedActive ||
				ui.VLCap != vi.VLCap || ui.LID != vi.LID || ui.LMC != vi.LMC || ui.MasterSMLID != vi.MasterSMLID {
				add("node 0x%016x port %d: state %d width %d speed %d vlcap %d lid %d lmc %d sm %d vs state %d width %d speed %d vlcap %d lid %d lmc %d sm %d",
					g, p, ui.PortState, ui.LinkWidthActive, ui.LinkSpeedActive, ui.VLCap, ui.LID, ui.LMC, ui.MasterSMLID,
					vi.PortState, vi.LinkWidthActive, vi.LinkSpeedActive, vi.VLCap, vi.LID, vi.LMC, vi.MasterSMLID)
			}
		}
	}
	return out
}
