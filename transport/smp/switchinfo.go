package smp

import "encoding/binary"

// SwitchInfo is the SwitchInfo attribute (IBA 14.2.5.4; MulticastFDBTop
// from 1.2.1). Only switches implement it.
type SwitchInfo struct {
	LinearFDBCap                      uint16 // 0, 16
	RandomFDBCap                      uint16 // 16, 16
	MulticastFDBCap                   uint16 // 32, 16
	LinearFDBTop                      uint16 // 48, 16
	DefaultPort                       uint8  // 64, 8
	DefaultMulticastPrimaryPort       uint8  // 72, 8
	DefaultMulticastNotPrimaryPort    uint8  // 80, 8
	LifeTimeValue                     uint8  // 88, 5
	PortStateChange                   bool   // 93: write 1 to clear
	OptimizedSLtoVLMappingProgramming uint8  // 94, 2
	LIDsPerPort                       uint16 // 96, 16
	PartitionEnforcementCap           uint16 // 112, 16
	InboundEnforcementCap             bool   // 128
	OutboundEnforcementCap            bool   // 129
	FilterRawInboundCap               bool   // 130
	FilterRawOutboundCap              bool   // 131
	EnhancedPort0                     bool   // 132
	MulticastFDBTop                   uint16 // 144, 16
}

// SwitchInfoLen is the number of meaningful bytes; the rest of the 64-byte
// data area is reserved.
const SwitchInfoLen = 20

func (*SwitchInfo) AttrID() uint16 { return AttrSwitchInfo }

func (s *SwitchInfo) MarshalTo(b []byte) error {
	if err := need("SwitchInfo", b, SwitchInfoLen); err != nil {
		return err
	}
	clear64(b[:SwitchInfoLen])
	w := bitWriter{b: b, attr: "SwitchInfo"}
	w.put("LinearFDBCap", 0, 16, uint64(s.LinearFDBCap))
	w.put("RandomFDBCap", 16, 16, uint64(s.RandomFDBCap))
	w.put("MulticastFDBCap", 32, 16, uint64(s.MulticastFDBCap))
	w.put("LinearFDBTop", 48, 16, uint64(s.LinearFDBTop))
	w.put("DefaultPort", 64, 8, uint64(s.DefaultPort))
	w.put("DefaultMulticastPrimaryPort", 72, 8, uint64(s.DefaultMulticastPrimaryPort))
	w.put("DefaultMulticastNotPrimaryPort", 80, 8, uint64(s.DefaultMulticastNotPrimaryPort))
	w.put("LifeTimeValue", 88, 5, uint64(s.LifeTimeValue))
	w.bool("PortStateChange", 93, s.PortStateChange)
	w.put("OptimizedSLtoVLMappingProgramming", 94, 2, uint64(s.OptimizedSLtoVLMappingProgramming))
	w.put("LIDsPerPort", 96, 16, uint64(s.LIDsPerPort))
	w.put("PartitionEnforcementCap", 112, 16, uint64(s.PartitionEnforcementCap))
	w.bool("InboundEnforcementCap", 128, s.InboundEnforcementCap)
	w.bool("OutboundEnforcementCap", 129, s.OutboundEnforcementCap)
	w.bool("FilterRawInboundCap", 130, s.FilterRawInboundCap)
	w.bool("FilterRawOutboundCap", 131, s.FilterRawOutboundCap)
	w.bool("EnhancedPort0", 132, s.EnhancedPort0)
	w.put("MulticastFDBTop", 144, 16, uint64(s.MulticastFDBTop))
	return w.err
}

func (s *SwitchInfo) Unmarshal(b []byte) error {
	if err := need("SwitchInfo", b, SwitchInfoLen); err != nil {
		return err
	}
	*s = SwitchInfo{
		LinearFDBCap:                      binary.BigEndian.Uint16(b[0:]),
		RandomFDBCap:                      binary.BigEndian.Uint16(b[2:]),
		MulticastFDBCap:                   binary.BigEndian.Uint16(b[4:]),
		LinearFDBTop:                      binary.BigEndian.Uint16(b[6:]),
		DefaultPort:                       b[8],
		DefaultMulticastPrimaryPort:       b[9],
		DefaultMulticastNotPrimaryPort:    b[10],
		LifeTimeValue:                     uint8(getBits(b, 88, 5)),
		PortStateChange:                   getBits(b, 93, 1) == 1,
		OptimizedSLtoVLMappingProgramming: uint8(getBits(b, 94, 2)),
		LIDsPerPort:                       binary.BigEndian.Uint16(b[12:]),
		PartitionEnforcementCap:           binary.BigEndian.Uint16(b[14:]),
		InboundEnforcementCap:             getBits(b, 128, 1) == 1,
		OutboundEnforcementCap:            getBits(b, 129, 1) == 1,
		FilterRawInboundCap:               getBits(b, 130, 1) == 1,
		FilterRawOutboundCap:              getBits(b, 131, 1) == 1,
		EnhancedPort0:                     getBits(b, 132, 1) == 1,
		MulticastFDBTop:                   binary.BigEndian.Uint16(b[18:]),
	}
	return nil
}
