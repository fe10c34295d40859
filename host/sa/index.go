package sa

import (
	"errors"
	"fmt"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// DefaultGIDPrefix is the subnet prefix the SM gives every end port,
// used when the SM port reports none.
const DefaultGIDPrefix = program.SubnetPrefix

// index holds the lookups queries need, built once per (plan, fabric):
// O(endpoints + overrides), never per pair.
type index struct {
	applied *sm.Applied
	fabric  *discovery.Fabric

	topo *topology.Topology
	eps  []topology.PortRef
	lids *plan.LIDPlan
	vls  *plan.VLPlan
	rz   *plan.Realized
	// nodes[i] is what discovery read of topo.Nodes[i] (nil if the last
	// discovery did not see it).
	nodes  []*discovery.Node
	byGUID map[uint64]int32 // port GUID → endpoint index
	dlidOv map[[2]int32]uint8
	slOv   map[slKey]uint8

	// vlarb holds the VLArbitration blocks queries read (vlarb.go).
	vlarb vlarbCache

	smEP   int32
	smLID  uint16
	smGUID uint64
	prefix uint64
}

type slKey struct {
	src  int32
	dlid uint16
}

func buildIndex(ap *sm.Applied, fab *discovery.Fabric) (*index, error) {
	if ap.Topo == nil || ap.Result == nil || ap.Result.LIDs == nil || ap.Result.Realized == nil {
		return nil, errors.New("the applied plan lacks its topology, LID plan or realised tables")
	}
	t, res := ap.Topo, ap.Result
	eps := t.Endpoints()
	if len(res.LIDs.Ports) != len(eps) {
		return nil, fmt.Errorf("LID plan has %d ports for %d endpoints", len(res.LIDs.Ports), len(eps))
	}
	if len(res.Realized.LFT) != len(t.Switches()) {
		return nil, fmt.Errorf("realised plan has %d tables for %d switches", len(res.Realized.LFT), len(t.Switches()))
	}
	x := &index{
		applied: ap, fabric: fab, topo: t, eps: eps, lids: res.LIDs, vls: res.VLs, rz: res.Realized,
		nodes:  make([]*discovery.Node, len(t.Nodes)),
		byGUID: make(map[uint64]int32, len(eps)),
		smEP:   -1,
		prefix: DefaultGIDPrefix,
		vlarb:  vlarbCache{m: map[vlarbKey]vlarbRead{}},
	}
	if x.vls == nil {
		x.vls = &plan.VLPlan{}
	}
	if fab != nil {
		for i := range t.Nodes {
			x.nodes[i] = fab.Nodes[t.Nodes[i].GUID]
		}
	}
	for i, ep := range eps {
		x.byGUID[t.Port(ep).GUID] = int32(i)
	}
	if len(res.LIDs.Overrides) > 0 {
		x.dlidOv = make(map[[2]int32]uint8, len(res.LIDs.Overrides))
		for _, o := range res.LIDs.Overrides {
			x.dlidOv[[2]int32{o.Src, o.Dst}] = o.Offset
		}
	}
	if len(x.vls.Overrides) > 0 {
		x.slOv = make(map[slKey]uint8, len(x.vls.Overrides))
		for _, o := range x.vls.Overrides {
			x.slOv[slKey{o.Src, o.DLID}] = o.SL
		}
	}
	if t.SM.Connected() {
		x.smEP = t.EndpointIndex(t.SM)
	}
	if x.smEP >= 0 {
		x.smLID = x.lids.Ports[x.smEP].Base
		x.smGUID = t.Port(eps[x.smEP]).GUID
		if pi, ok := x.portInfo(eps[x.smEP].Node, eps[x.smEP].Port); ok && pi.GIDPrefix != 0 {
			x.prefix = pi.GIDPrefix
		}
	}
	return x, nil
}

// portInfo is the PortInfo discovery read, if it did.
func (x *index) portInfo(node int32, port uint8) (*smp.PortInfo, bool) {
	n := x.nodes[node]
	if n == nil || int(port) >= len(n.Ports) || !n.Ports[port].Valid {
		return nil, false
	}
	return &n.Ports[port].Info, true
}

// owner is the endpoint whose LID range holds lid, or -1.
func (x *index) owner(lid uint16) int32 {
	if int(lid) >= len(x.rz.LIDOwner) {
		return -1
	}
	return x.rz.LIDOwner[lid] - 1
}

// dlid is the DLID endpoint src uses toward dst in the plan.
func (x *index) dlid(src, dst int32) uint16 {
	if off, ok := x.dlidOv[[2]int32{src, dst}]; ok {
		return x.lids.Ports[dst].Base + uint16(off)
	}
	return x.lids.DLID(src, dst)
}

// sl is the SL endpoint src uses toward dlid in the plan.
func (x *index) sl(src int32, dlid uint16) uint8 {
	if sl, ok := x.slOv[slKey{src, dlid}]; ok {
		return sl
	}
	if int(dlid) < len(x.vls.SLByDLID) {
		return x.vls.SLByDLID[dlid]
	}
	return 0
}

// gid is the port GID of endpoint e.
func (x *index) gid(e int32) [16]byte {
	var g [16]byte
	putU64(g[:8], x.prefix)
	putU64(g[8:], x.topo.Port(x.eps[e]).GUID)
	return g
}

func putU64(b []byte, v uint64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

func getU64(b []byte) uint64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return v
}
