package mcast

import (
	"fmt"
	"maps"
	"slices"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// BlockKey names one MFT block of a switch: PortMask position and block
// number (the AttributeModifier's two parts, smp.MFTMod).
type BlockKey struct {
	Position uint8
	Block    uint16
}

// Blocks is one switch's MulticastForwardingTable, block by block; a
// block absent is all zero (no port).
type Blocks map[BlockKey]smp.MFTBlock

// SetPorts makes ports the mask of mlid in b (empty: clears it).
func (b Blocks) SetPorts(mlid uint16, ports []uint8) {
	block, i := smp.MFTBlockOf(mlid)
	var masks [smp.MFTMaxPosition + 1]uint16
	for _, p := range ports {
		masks[int(p)/smp.MFTPortsPerPosition] |= 1 << (int(p) % smp.MFTPortsPerPosition)
	}
	for pos := range masks {
		k := BlockKey{uint8(pos), block}
		blk, ok := b[k]
		if !ok && masks[pos] == 0 {
			continue
		}
		blk[i] = masks[pos]
		b[k] = blk
	}
}

// Ports returns the ports mlid goes out of.
func (b Blocks) Ports(mlid uint16) []uint8 {
	block, i := smp.MFTBlockOf(mlid)
	var out []uint8
	for pos := 0; pos <= smp.MFTMaxPosition; pos++ {
		blk, ok := b[BlockKey{uint8(pos), block}]
		if !ok {
			continue
		}
		for bit := 0; bit < smp.MFTPortsPerPosition; bit++ {
			if blk[i]&(1<<bit) != 0 {
				out = append(out, uint8(pos*smp.MFTPortsPerPosition+bit))
			}
		}
	}
	return out
}

// MLIDs lists the MLIDs b forwards somewhere, ascending.
func (b Blocks) MLIDs() []uint16 {
	seen := map[uint16]bool{}
	for k, blk := range b {
		for i, m := range blk {
			if m != 0 {
				seen[uint16(smp.MulticastLIDBase+int(k.Block)*smp.MFTBlockLen+i)] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// Request builds the router's request for groups on topo: members whose
// port is not in topo (gone, or not discovered yet) are left out and
// counted in missing.
func Request(topo *topology.Topology, groups []Group) (req sdk.MulticastRequest, missing int) {
	byGUID := make(map[uint64]topology.PortRef, len(topo.Endpoints()))
	for _, ep := range topo.Endpoints() {
		byGUID[topo.PortGUID(ep)] = ep
	}
	req.Topo = topo
	for _, g := range groups {
		mg := sdk.MulticastGroup{MLID: g.MLID}
		for guid, m := range g.Members {
			ep, ok := byGUID[guid]
			if !ok {
				missing++
				continue
			}
			if _, err := sdk.MemberSwitch(topo, ep); err != nil {
				missing++
				continue
			}
			mg.Members = append(mg.Members, sdk.MulticastMember{Port: ep, State: sdk.JoinState(m.State & 0xF)})
		}
		slices.SortFunc(mg.Members, func(a, b sdk.MulticastMember) int {
			if a.Port.Node != b.Port.Node {
				return int(a.Port.Node - b.Port.Node)
			}
			return int(a.Port.Port) - int(b.Port.Port)
		})
		req.Groups = append(req.Groups, mg)
	}
	return req, missing
}

// Verify checks a router's answer to req: its shape and every tree
// (sdk.CheckTrees, sdk.VerifyTree: the checks sdktest applies too).
func Verify(req *sdk.MulticastRequest, trees []sdk.MulticastTree) error {
	if err := sdk.CheckTrees(req, trees); err != nil {
		return fmt.Errorf("multicast router answer: %w", err)
	}
	for i := range trees {
		if err := sdk.VerifyTree(req.Topo, &req.Groups[i], &trees[i]); err != nil {
			return fmt.Errorf("multicast tree rejected: %w", err)
		}
	}
	return nil
}

// Forwarding is what every switch should hold, by switch node GUID, and
// which switches each MLID's tree uses.
type Forwarding struct {
	Switches map[uint64]Blocks
	trees    map[uint16][]uint64
}

// NewForwarding returns empty forwarding state.
func NewForwarding() *Forwarding {
	return &Forwarding{Switches: map[uint64]Blocks{}, trees: map[uint16][]uint64{}}
}

// Apply replaces the forwarding of each tree's MLID with the tree (on
// topo) and clears the MLIDs in gone (deleted groups, groups without a
// tree). It returns the switches whose blocks changed.
func (f *Forwarding) Apply(topo *topology.Topology, trees []sdk.MulticastTree, gone []uint16) []uint64 {
	touched := map[uint64]bool{}
	clearMLID := func(mlid uint16) {
		for _, g := range f.trees[mlid] {
			f.Switches[g].SetPorts(mlid, nil)
			touched[g] = true
		}
		delete(f.trees, mlid)
	}
	for _, m := range gone {
		clearMLID(m)
	}
	for _, t := range trees {
		clearMLID(t.MLID)
		var used []uint64
		for _, s := range t.Switches {
			g := topo.Nodes[s.Node].GUID
			b := f.Switches[g]
			if b == nil {
				b = Blocks{}
				f.Switches[g] = b
			}
			b.SetPorts(t.MLID, s.Out)
			used = append(used, g)
			touched[g] = true
		}
		f.trees[t.MLID] = used
	}
	return slices.Sorted(maps.Keys(touched))
}
