package sa

import (
	"encoding/binary"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// Records read from the fabric model and the plan in force: links,
// GUIDInfo, SwitchInfo, LFT blocks and SL-to-VL tables (IBA 15.2.5.4,
// .6, .8, .13, .18). Nothing here queries the fabric.

var moreKinds = map[uint16]queryKind{
	smp.SAAttrLinkRecord:       {name: "LinkRecord", stride: stride(smp.LinkRecordLen), table: true, run: runLinkRecord},
	smp.SAAttrGUIDInfoRecord:   {name: "GUIDInfoRecord", stride: stride(smp.GUIDInfoRecordLen), table: true, run: runGUIDInfoRecord},
	smp.SAAttrSwitchInfoRecord: {name: "SwitchInfoRecord", stride: stride(smp.SwitchInfoRecordLen), table: true, run: runSwitchInfoRecord},
	smp.SAAttrLFTRecord:        {name: "LinearForwardingTableRecord", stride: stride(smp.LFTRecordLen), table: true, run: runLFTRecord},
	smp.SAAttrSL2VLRecord:      {name: "SLtoVLMappingTableRecord", stride: stride(smp.SL2VLRecordLen), table: true, run: runSL2VLRecord},
}

var (
	linkRecordFields = []field{{0, 16}, {16, 8}, {24, 8}, {32, 16}} // FromLID FromPort ToPort ToLID
	guidInfoFields   = func() []field {
		f := []field{{0, 16}, {16, 8}, {24, 8}, {32, 32}} // LID BlockNum reserved reserved
		for i := 0; i < 8; i++ {
			f = append(f, field{64 + 64*i, 64})
		}
		return f
	}()
	switchInfoRecordFields = func() []field {
		f := []field{{0, 16}, {16, 16}} // LID reserved
		for _, p := range []field{
			{0, 16}, {16, 16}, {32, 16}, {48, 16}, {64, 8}, {72, 8}, {80, 8}, // caps, tops, default ports
			{88, 5}, {93, 1}, {94, 2}, {96, 16}, {112, 16}, // LifeTime PortStateChange OptSL2VL LIDsPerPort PartEnfCap
			{128, 1}, {129, 1}, {130, 1}, {131, 1}, {132, 1}, {133, 11}, {144, 16}, // enforcement caps, EnhancedPort0, reserved, MFDBTop
		} {
			f = append(f, field{p.off + 32, p.width})
		}
		return f
	}()
	lftRecordFields   = []field{{0, 16}, {16, 16}, {32, 32}, {64, 512}}        // LID BlockNum reserved LFT
	sl2vlRecordFields = []field{{0, 16}, {16, 8}, {24, 8}, {32, 32}, {64, 64}} // LID InPort OutPort reserved table
)

// Component mask bits handled outside matches.
const (
	compToLID    = 1 << 3 // LinkRecord ToLID: matched by range, like compLID
	compLFTBlock = 1 << 1 // LFTRecord BlockNum: picks the block
)

// nodeLID is the LID the SA names node n by in records: a switch's port-0
// LID, or for a CA the LID of port p (0 if the port has none).
func (x *index) nodeLID(n int32, p uint8) uint16 {
	r := topology.PortRef{Node: n, Port: p}
	if x.topo.Nodes[n].Type == topology.Switch {
		r.Port = 0
	}
	if e := x.topo.EndpointIndex(r); e >= 0 {
		return x.lids.Ports[e].Base
	}
	return 0
}

// lidIs reports whether lid is one of endpoint ref's LIDs (its LMC range).
func (x *index) lidIs(lid uint16, ref topology.PortRef) bool {
	if x.topo.Nodes[ref.Node].Type == topology.Switch {
		ref.Port = 0
	}
	e := x.topo.EndpointIndex(ref)
	return e >= 0 && x.owner(lid) == e
}

// runLinkRecord: one record per direction of every trained link. FromLID
// and ToLID select by any LID of the port (LMC); the record holds the
// base LID.
func runLinkRecord(q *query, t *table, limit int) (uint16, string) {
	cm := q.req.ComponentMask
	if st, why := checkMask("LinkRecord", linkRecordFields, cm); st != 0 {
		return st, why
	}
	var req smp.LinkRecord
	_ = req.Unmarshal(q.req.Data[:])
	x := q.x
	var buf [8]byte
	for n := range x.topo.Nodes {
		for p := 1; p < len(x.topo.Nodes[n].Ports); p++ {
			from := topology.PortRef{Node: int32(n), Port: uint8(p)}
			if !x.topo.IsLinkUp(from) {
				continue
			}
			to := x.topo.Port(from).Peer
			if cm&compLID != 0 && !x.lidIs(req.FromLID, from) || cm&compToLID != 0 && !x.lidIs(req.ToLID, to) {
				continue
			}
			rec := smp.LinkRecord{FromLID: x.nodeLID(from.Node, from.Port), FromPort: from.Port, ToPort: to.Port, ToLID: x.nodeLID(to.Node, to.Port)}
			_ = rec.MarshalTo(buf[:])
			if !matches(linkRecordFields, cm&^compToLID, q.req.Data[:], buf[:]) {
				continue
			}
			if !t.add(buf[:], limit) {
				return 0, ""
			}
		}
	}
	return 0, ""
}

// runGUIDInfoRecord: the SM assigns no alias GUIDs, so each port's table
// holds its port GUID at index 0 and zeros (the reset value) elsewhere;
// one record per block of GUIDCap (PortInfo), block 0 if unknown.
func runGUIDInfoRecord(q *query, t *table, limit int) (uint16, string) {
	cm := q.req.ComponentMask
	if st, why := checkMask("GUIDInfoRecord", guidInfoFields, cm); st != 0 {
		return st, why
	}
	x := q.x
	var buf [72]byte
	q.lidEndpoints(func(e int32) bool {
		ep := x.eps[e]
		blocks := 1
		if pi, ok := x.portInfo(ep.Node, ep.Port); ok && pi.GUIDCap > 8 {
			blocks = (int(pi.GUIDCap) + 7) / 8
		}
		for b := 0; b < blocks; b++ {
			rec := smp.GUIDInfoRecord{LID: x.lids.Ports[e].Base, BlockNum: uint8(b)}
			if b == 0 {
				rec.GUIDs[0] = x.topo.Port(ep).GUID
			}
			_ = rec.MarshalTo(buf[:])
			if !matches(guidInfoFields, cm, q.req.Data[:], buf[:]) {
				continue
			}
			if !t.add(buf[:], limit) {
				return false
			}
		}
		return true
	})
	return 0, ""
}

// switchEndpoints calls f for the port-0 endpoint of every switch the
// request's LID (if selected) names, with the switch's index.
func (q *query) switchEndpoints(f func(e, node, sw int32) bool) {
	x := q.x
	q.lidEndpoints(func(e int32) bool {
		ep := x.eps[e]
		if x.topo.Nodes[ep.Node].Type != topology.Switch {
			return true
		}
		return f(e, ep.Node, x.topo.SwitchIndex(ep.Node))
	})
}

// runSwitchInfoRecord: SwitchInfo as discovered, with the LinearFDBTop the
// plan programmed.
func runSwitchInfoRecord(q *query, t *table, limit int) (uint16, string) {
	cm := q.req.ComponentMask
	if st, why := checkMask("SwitchInfoRecord", switchInfoRecordFields, cm); st != 0 {
		return st, why
	}
	x := q.x
	var buf [24]byte
	q.switchEndpoints(func(e, node, _ int32) bool {
		dn := x.nodes[node]
		if dn == nil || dn.Switch == nil {
			return true // not read by the last discovery: nothing to report
		}
		rec := smp.SwitchInfoRecord{LID: x.lids.Ports[e].Base, SwitchInfo: *dn.Switch}
		rec.SwitchInfo.LinearFDBTop = x.rz.TopLID
		if rec.MarshalTo(buf[:]) != nil || !matches(switchInfoRecordFields, cm, q.req.Data[:], buf[:]) {
			return true
		}
		return t.add(buf[:], limit)
	})
	return 0, ""
}

// runLFTRecord: the blocks of each switch's programmed LFT up to the top
// LID; entries without a route read 0xFF, as the switch holds them.
func runLFTRecord(q *query, t *table, limit int) (uint16, string) {
	cm := q.req.ComponentMask
	if st, why := checkMask("LinearForwardingTableRecord", lftRecordFields, cm); st != 0 {
		return st, why
	}
	x := q.x
	first, last := 0, int(x.rz.TopLID)/smp.LFTBlockLen
	if cm&compLFTBlock != 0 {
		b := int(binary.BigEndian.Uint16(q.req.Data[2:]))
		if b > last {
			return 0, ""
		}
		first, last = b, b
	}
	var buf [72]byte
	q.switchEndpoints(func(e, _, sw int32) bool {
		lft := x.rz.LFT[sw]
		for b := first; b <= last; b++ {
			rec := smp.LFTRecord{LID: x.lids.Ports[e].Base, BlockNum: uint16(b)}
			for i := range rec.Block {
				rec.Block[i] = smp.LFTUnreachable
				if l := b*smp.LFTBlockLen + i; l < len(lft) {
					rec.Block[i] = lft[l]
				}
			}
			_ = rec.MarshalTo(buf[:])
			if !matches(lftRecordFields, cm, q.req.Data[:], buf[:]) {
				continue
			}
			if !t.add(buf[:], limit) {
				return false
			}
		}
		return true
	})
	return 0, ""
}

// runSL2VLRecord: the plan's SL-to-VL table of every (input, output) pair
// of each switch, port 0 included (switches hold those tables, as OpenSM's
// SA and osmtest's flow q expect), and of each CA port (ports 0, 0 in the
// record, as a CA's table is its port's). A plan that uses only SL 0
// writes no table, and a multi-VL plan only the output port 0 pairs it
// lists (see host/program): the other records show the plan's default, of
// which only SL 0 → VL 0 is certain to be in the hardware.
func runSL2VLRecord(q *query, t *table, limit int) (uint16, string) {
	cm := q.req.ComponentMask
	if st, why := checkMask("SLtoVLMappingTableRecord", sl2vlRecordFields, cm); st != 0 {
		return st, why
	}
	x := q.x
	entries := make(map[[3]int32][16]uint8, len(x.vls.SL2VL))
	for _, en := range x.vls.SL2VL {
		entries[[3]int32{en.Node, int32(en.In), int32(en.Out)}] = en.VL
	}
	tableOf := func(node int32, in, out int) smp.SL2VLTable {
		if tb, ok := entries[[3]int32{node, int32(in), int32(out)}]; ok {
			return tb
		}
		return x.vls.Default
	}
	var buf [16]byte
	emit := func(r smp.SL2VLRecord) bool {
		if r.MarshalTo(buf[:]) != nil || !matches(sl2vlRecordFields, cm, q.req.Data[:], buf[:]) {
			return true
		}
		return t.add(buf[:], limit)
	}
	q.lidEndpoints(func(e int32) bool {
		ep := x.eps[e]
		lid := x.lids.Ports[e].Base
		if x.topo.Nodes[ep.Node].Type != topology.Switch {
			return emit(smp.SL2VLRecord{LID: lid, Table: tableOf(ep.Node, int(ep.Port), int(ep.Port))})
		}
		np := len(x.topo.Nodes[ep.Node].Ports)
		for in := 0; in < np; in++ {
			for out := 0; out < np; out++ {
				if !emit(smp.SL2VLRecord{LID: lid, InPort: uint8(in), OutPort: uint8(out), Table: tableOf(ep.Node, in, out)}) {
					return false
				}
			}
		}
		return true
	})
	return 0, ""
}
