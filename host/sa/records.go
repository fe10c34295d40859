package sa

import (
	"encoding/binary"
	"fmt"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// query is one SA request being answered.
type query struct {
	a       *Agent
	x       *index
	req     *smp.SAMAD
	trusted bool // the request carried our SM_Key
	// src is the request as it arrived (requester's LID, SL, QP): Sets
	// record who registered what.
	src transport.Packet
}

// queryKind is one supported SA attribute.
type queryKind struct {
	name   string
	stride int  // record size rounded up to 8 bytes (AttributeOffset × 8)
	table  bool // GetTable allowed (ClassPortInfo is Get only)
	// run adds the matching records to t (at most limit, 0: no limit,
	// setting t.more when more exist) or returns an SA status and why.
	run func(q *query, t *table, limit int) (uint16, string)
	// set and del, when not nil, handle SubnAdmSet and SubnAdmDelete: the
	// record to answer with (stride bytes), or an SA status and why.
	set, del func(q *query) (rec []byte, status uint16, why string)
	// multi, when not nil, answers SubnAdmGetMulti with PathRecords
	// (MultiPathRecord, multipath.go), as a table of stride-byte records.
	multi func(q *query, t *table, limit int) (uint16, string)
}

func stride(n int) int { return int(smp.SARecordStride(n)) * 8 }

// queryKinds is every attribute this SA answers. Each file that
// implements a group of attributes keeps its own table; they are merged
// here (an attribute in two tables is a bug caught by the tests).
var queryKinds = mergeKinds(coreKinds, moreKinds, serviceKinds, informKinds, multiPathKinds, pkeyKinds, mcKinds, vlarbKinds)

var coreKinds = map[uint16]queryKind{
	smp.SAAttrClassPortInfo:  {name: "ClassPortInfo", stride: stride(smp.ClassPortInfoLen), run: runClassPortInfo},
	smp.SAAttrNodeRecord:     {name: "NodeRecord", stride: stride(smp.NodeRecordLen), table: true, run: runNodeRecord},
	smp.SAAttrPortInfoRecord: {name: "PortInfoRecord", stride: stride(smp.PortInfoRecordLen), table: true, run: runPortInfoRecord},
	smp.SAAttrSMInfoRecord:   {name: "SMInfoRecord", stride: stride(smp.SMInfoRecordLen), table: true, run: runSMInfoRecord},
	smp.SAAttrPathRecord:     {name: "PathRecord", stride: stride(smp.PathRecordLen), table: true, run: runPath},
}

// mergeKinds joins per-file attribute tables; an attribute defined twice
// panics at package initialisation (a build-time bug, never input).
func mergeKinds(tables ...map[uint16]queryKind) map[uint16]queryKind {
	all := map[uint16]queryKind{}
	for _, t := range tables {
		for id, k := range t {
			if _, dup := all[id]; dup {
				panic(fmt.Sprintf("sa: attribute %#04x (%s) defined twice", id, k.name))
			}
			all[id] = k
		}
	}
	return all
}

// field is a record field as (bit offset, bit width), bit 0 being the most
// significant bit of byte 0. Component mask bit i selects fields[i] (IBA
// 15.2.5: one bit per field in layout order, reserved fields included).
type field struct{ off, width int }

var nodeRecordFields = []field{
	{0, 16}, {16, 16}, // LID, reserved
	{32, 8}, {40, 8}, {48, 8}, {56, 8}, // BaseVersion, ClassVersion, NodeType, NumPorts
	{64, 64}, {128, 64}, {192, 64}, // SystemImageGUID, NodeGUID, PortGUID
	{256, 16}, {272, 16}, {288, 32}, // PartitionCap, DeviceID, Revision
	{320, 8}, {328, 24}, {352, 512}, // LocalPortNum, VendorID, NodeDescription
}

// portInfoRecordFields: EndportLID, PortNum, Options, then PortInfo
// (IBA 14.2.5.6) shifted by 32 bits.
var portInfoRecordFields = func() []field {
	f := []field{{0, 16}, {16, 8}, {24, 8}}
	for _, p := range []field{
		{0, 64}, {64, 64}, {128, 16}, {144, 16}, {160, 32}, // MKey GIDPrefix LID MasterSMLID CapabilityMask
		{192, 16}, {208, 16}, {224, 8}, {232, 8}, {240, 8}, {248, 8}, // DiagCode MKeyLease LocalPort Width{En,Sup,Act}
		{256, 4}, {260, 4}, {264, 4}, {268, 4}, {272, 2}, {274, 3}, {277, 3}, // SpeedSup State Phys LinkDownDef MKeyProt resv LMC
		{280, 4}, {284, 4}, {288, 4}, {292, 4}, {296, 4}, {300, 4}, // SpeedAct SpeedEn NeighborMTU MasterSMSL VLCap InitType
		{304, 8}, {312, 8}, {320, 8}, {328, 4}, {332, 4}, // VLHighLimit VLArbHigh VLArbLow InitTypeReply MTUCap
		{336, 3}, {339, 5}, {344, 4}, {348, 1}, {349, 1}, {350, 1}, {351, 1}, // VLStall HOQLife OpVLs PartEnf{In,Out} FilterRaw{In,Out}
		{352, 16}, {368, 16}, {384, 16}, {400, 8}, // M/P/Q_Key violations, GUIDCap
		{408, 1}, {409, 2}, {411, 5}, {416, 3}, {419, 5}, // ClientRereg McastPKeyTrapSupp SubnetTimeOut resv RespTime
		{424, 4}, {428, 4}, {432, 16}, {448, 8}, {456, 24}, // LocalPhyErr Overrun MaxCreditHint resv LinkRoundTripLatency
		{480, 16}, {496, 4}, {500, 4}, {504, 3}, {507, 5}, // CapabilityMask2 SpeedExt{Act,Sup} resv SpeedExtEn
	} {
		f = append(f, field{p.off + 32, p.width})
	}
	return f
}()

var smInfoRecordFields = []field{
	{0, 16}, {16, 16}, {32, 64}, {96, 64}, {160, 32}, {192, 4}, {196, 4},
}

// Component mask bits with special meaning.
const (
	compLID        = 1 << 0 // every record here starts with a LID: matched by range (LMC)
	compPIRCapMask = 1 << 7
	// pirCapMaskAny: AttributeModifier bit 31 on a PortInfoRecord query asks
	// for ports whose CapabilityMask has any of the requested bits (what
	// saquery -s sends; an OpenSM extension tools rely on).
	pirCapMaskAny = 1 << 31
)

func sameBits(a, b []byte, f field) bool {
	for i := f.off; i < f.off+f.width; {
		if i%8 == 0 && f.off+f.width-i >= 8 {
			if a[i/8] != b[i/8] {
				return false
			}
			i += 8
			continue
		}
		m := byte(0x80) >> (i % 8)
		if a[i/8]&m != b[i/8]&m {
			return false
		}
		i++
	}
	return true
}

// matches compares the fields cm selects (except the LID) of request and
// candidate records.
func matches(fields []field, cm uint64, req, cand []byte) bool {
	cm &^= compLID
	for i := 1; cm != 0 && i < len(fields); i++ {
		if cm&(1<<i) != 0 && !sameBits(req, cand, fields[i]) {
			return false
		}
		cm &^= 1 << i
	}
	return true
}

// checkMask refuses component mask bits beyond the record's fields.
func checkMask(kind string, fields []field, cm uint64) (uint16, string) {
	if cm>>len(fields) != 0 {
		return smp.SAStatusReqInvalid, kind + " component mask selects bits beyond the record's fields"
	}
	return 0, ""
}

// lidEndpoints narrows candidates to the owner of the requested LID.
func (q *query) lidEndpoints(f func(e int32) bool) {
	x := q.x
	if q.req.ComponentMask&compLID != 0 {
		lid := binary.BigEndian.Uint16(q.req.Data[0:])
		if e := x.owner(lid); e >= 0 {
			f(e)
		}
		return
	}
	for e := range x.eps {
		if !f(int32(e)) {
			return
		}
	}
}

func runNodeRecord(q *query, t *table, limit int) (uint16, string) {
	cm := q.req.ComponentMask
	if st, why := checkMask("NodeRecord", nodeRecordFields, cm); st != 0 {
		return st, why
	}
	var buf [112]byte
	q.lidEndpoints(func(e int32) bool {
		q.x.nodeRecord(e, buf[:])
		if !matches(nodeRecordFields, cm, q.req.Data[:], buf[:]) {
			return true
		}
		return t.add(buf[:], limit)
	})
	return 0, ""
}

// nodeRecord writes the NodeRecord of endpoint e (one per port that has a
// LID, as SAs report CAs) into b[:NodeRecordLen] and zeroes b's tail.
func (x *index) nodeRecord(e int32, b []byte) {
	clear(b)
	ep := x.eps[e]
	tn := &x.topo.Nodes[ep.Node]
	ni := smp.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: uint8(tn.Type), NumPorts: uint8(tn.NumPorts()), NodeGUID: tn.GUID}
	desc := tn.Desc
	if dn := x.nodes[ep.Node]; dn != nil {
		ni, desc = dn.Info, dn.Desc
	}
	ni.PortGUID = x.topo.Port(ep).GUID
	ni.LocalPortNum = ep.Port
	binary.BigEndian.PutUint16(b[0:], x.lids.Ports[e].Base)
	_ = ni.MarshalTo(b[4:44]) // decoded NodeInfo always fits
	// Descriptions are copied as the node sent them (devices do send
	// invalid UTF-8); NodeDescription.MarshalTo would refuse those.
	copy(b[44:108], desc)
}

func runPortInfoRecord(q *query, t *table, limit int) (uint16, string) {
	cm := q.req.ComponentMask
	if st, why := checkMask("PortInfoRecord", portInfoRecordFields, cm); st != 0 {
		return st, why
	}
	anyCap := q.req.AttrMod&pirCapMaskAny != 0 && cm&compPIRCapMask != 0
	var want uint32
	if anyCap {
		want = binary.BigEndian.Uint32(q.req.Data[4+20:])
		cm &^= compPIRCapMask
	}
	var buf [72]byte
	x := q.x
	q.lidEndpoints(func(e int32) bool {
		ep := x.eps[e]
		first, last := ep.Port, ep.Port
		if x.topo.Nodes[ep.Node].Type == topology.Switch {
			first, last = 0, uint8(x.topo.Nodes[ep.Node].NumPorts())
		}
		for p := int(first); p <= int(last); p++ {
			if !x.portInfoRecord(e, uint8(p), q.trusted, buf[:]) {
				continue
			}
			if anyCap && binary.BigEndian.Uint32(buf[4+20:])&want == 0 {
				continue
			}
			if !matches(portInfoRecordFields, cm, q.req.Data[:], buf[:]) {
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

// portInfoRecord writes the PortInfoRecord of port p of endpoint e's node
// into b: PortInfo as discovered, with what the plan programmed (LID, LMC,
// MasterSMLID, Active on trained links). M_Key is shown to trusted
// requesters only. False when discovery has no PortInfo for the port.
func (x *index) portInfoRecord(e int32, p uint8, trusted bool, b []byte) bool {
	ep := x.eps[e]
	src, ok := x.portInfo(ep.Node, p)
	if !ok {
		return false
	}
	pi := *src
	if p == ep.Port {
		pl := x.lids.Ports[e]
		pi.LID, pi.LMC, pi.MasterSMLID = pl.Base, pl.LMC, x.smLID
	}
	r := topology.PortRef{Node: ep.Node, Port: p}
	if (p == 0 || x.topo.IsLinkUp(r)) && pi.PortState >= smp.PortStateInit {
		pi.PortState = smp.PortStateActive
	}
	if !trusted {
		pi.MKey = 0
	}
	clear(b)
	rec := smp.PortInfoRecord{EndportLID: x.lids.Ports[e].Base, PortNum: p, PortInfo: pi}
	return rec.MarshalTo(b) == nil
}

func runSMInfoRecord(q *query, t *table, limit int) (uint16, string) {
	cm := q.req.ComponentMask
	if st, why := checkMask("SMInfoRecord", smInfoRecordFields, cm); st != 0 {
		return st, why
	}
	si, lid := q.a.smInfo(q.trusted)
	if cm&compLID != 0 && (q.x.smEP < 0 || q.x.owner(binary.BigEndian.Uint16(q.req.Data[0:])) != q.x.smEP) {
		return 0, ""
	}
	var buf [32]byte
	rec := smp.SMInfoRecord{LID: lid, SMInfo: si}
	if err := rec.MarshalTo(buf[:]); err != nil {
		return smp.SAStatusNoResources, "SMInfoRecord does not encode: " + err.Error()
	}
	if matches(smInfoRecordFields, cm, q.req.Data[:], buf[:]) {
		t.add(buf[:], limit)
	}
	return 0, ""
}

// saRespTimeValue is ClassPortInfo.RespTimeValue: 4.096 µs × 2^18 ≈ 1 s,
// the conventional SA value (answers come from memory, far faster).
const saRespTimeValue = 18

func runClassPortInfo(q *query, t *table, limit int) (uint16, string) {
	cpi := smp.ClassPortInfo{BaseVersion: smp.BaseVersion, ClassVersion: smp.SAClassVersion, RespTimeValue: saRespTimeValue}
	var buf [72]byte
	if err := cpi.MarshalTo(buf[:]); err != nil {
		return smp.SAStatusNoResources, "ClassPortInfo does not encode: " + err.Error()
	}
	t.add(buf[:], limit)
	return 0, ""
}
