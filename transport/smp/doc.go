// Package smp encodes and decodes InfiniBand management datagrams byte for
// byte as IBA vol 1 lays them out: the common MAD header (13.4), subnet
// management packets in both LID-routed and directed-route form (14.2.1),
// the SM attributes an SM and an SMA need (14.2.5), Notice/traps (13.4.8),
// and the SA MAD framing with PathRecord (15.2). All fields are big-endian.
//
// # Building and parsing SMPs
//
//	s, err := smp.NewDRGet(smp.AttrNodeInfo, 0, []uint8{1, 3, 2}) // 3 hops
//	buf := make([]byte, smp.MADLen)
//	err = s.EncodeTo(buf) // no allocation; reuse buf
//	pkt := transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, MAD: buf}
//	resp, err := tr.Do(ctx, pkt)
//	var r smp.SMP
//	err = r.Decode(resp.MAD)          // validates versions, class, hop fields
//	var ni smp.NodeInfo
//	err = r.Attr(&ni)                 // checks AttrID, unmarshals the 64-byte data
//
// A DR path lists the port to leave by at each hop: path[0] is the
// originator's egress port, path[i] the egress port of the i-th switch.
// It is stored in InitialPath[1..HopCount] (index 0 is reserved by the spec).
// SMP.InitDR / InitLID reuse an existing SMP without allocating.
//
// To set an attribute: s, _ := smp.NewDRSet(attr, mod, path, nil); s.SetAttr(&pi).
// Every attribute type implements Attribute (AttrID, MarshalTo, Unmarshal).
// MarshalTo rejects values that do not fit their bit width instead of
// truncating them. Attribute modifiers with structure have helpers:
// LFTBlockMod/PKeyBlockMod/SL2VLMod and their inverses.
//
// # Implementing an SMA (simulators)
//
// Directed-route forwarding follows IBA 14.2.2 exactly; see dr.go for the
// full walk. In short, for each node that receives an SMP on port in:
//
//	switch s.DRReceive(in, isSwitch, numPorts) {
//	case smp.DRForward:
//		_, out := s.DRSend(isSwitch) // moves the hop pointer, names the egress port
//		// transmit on out
//	case smp.DRLocal:
//		if s.Outbound() { /* SMA: answer */ s.TurnAround(status); act, out := s.DRSend(isSwitch) }
//		else { /* back at the originator: deliver to the SM */ }
//	case smp.DRLIDRoute: // combined DR/LID routes; ibsim does not use them
//	case smp.DRDiscard:  // drop silently
//	}
//
// The originator calls s.DRSend once before transmitting (hop pointer 0 → 1).
// A response reaches the SM with hop pointer 0 and Direction set, exactly as
// ibsim delivers it. Responses to Get and Set are both GetResp (0x81).
//
// # Subnet administration
//
// SAMAD frames a class 0x03 MAD (common header, RMPP header, SM_Key,
// AttributeOffset, ComponentMask, 200 data bytes); NewSAMAD fills in the
// versions. Records: PathRecord (with PRComp* component-mask bits),
// NodeRecord, PortInfoRecord, SMInfoRecord; SARecordStride gives the
// AttributeOffset for GetTableResp. Without RMPP only 200 bytes of records
// fit one MAD, which is all umad2sim-based tools accept (notes/ibsim-protocol).
//
// # Traps
//
// Notice decodes the Trap data area (64 bytes in an SMP, 80 with IssuerGID).
// NewTrap128/Trap128, NewLinkTrap/LinkTrap (129..131) and NewTrap144/Trap144
// build and read the DataDetails of the traps an SM acts on.
//
// # Transport helpers
//
// PeekTID, PutTID, PeekMethod, PeekClass and PeekAttrID read and patch raw
// 256-byte MADs without decoding them; they never panic on short input.
package smp
