package smp

// Port states (PortInfo.PortState).
const (
	PortStateNoChange = 0
	PortStateDown     = 1
	PortStateInit     = 2
	PortStateArmed    = 3
	PortStateActive   = 4
)

// DataVLs decodes PortInfo.VLCap (and OperationalVLs): 1 = VL0, 2 = VL0-1,
// 3 = VL0-3, 4 = VL0-7, 5 = VL0-14; anything else is 0 (reserved).
func DataVLs(code uint8) uint8 {
	switch code {
	case 1, 2, 3, 4:
		return 1 << (code - 1)
	case 5:
		return 15
	}
	return 0
}

// Port physical states (PortInfo.PortPhysicalState).
const (
	PhysStateNoChange           = 0
	PhysStateSleep              = 1
	PhysStatePolling            = 2
	PhysStateDisabled           = 3
	PhysStatePortConfigTraining = 4
	PhysStateLinkUp             = 5
	PhysStateLinkErrorRecovery  = 6
	PhysStatePhyTest            = 7
)

// MTU codes (PortInfo.NeighborMTU, MTUCap; PathRecord.MTU).
const (
	MTU256  = 1
	MTU512  = 2
	MTU1024 = 3
	MTU2048 = 4
	MTU4096 = 5
)

// Link width bits (PortInfo.LinkWidth*).
const (
	LinkWidth1X  = 0x01
	LinkWidth4X  = 0x02
	LinkWidth8X  = 0x04
	LinkWidth12X = 0x08
	LinkWidth2X  = 0x10
)

// CapabilityMask bits used by an SM (IBA 14.2.5.6, table 146).
const (
	CapIsSM                      = 1 << 1
	CapIsNoticeSupported         = 1 << 2
	CapIsTrapSupported           = 1 << 3
	CapIsAutomaticMigration      = 1 << 5
	CapIsSLMappingSupported      = 1 << 6
	CapIsMKeyNVRAM               = 1 << 7
	CapIsPKeyNVRAM               = 1 << 8
	CapIsLEDInfoSupported        = 1 << 9
	CapIsSMDisabled              = 1 << 10
	CapIsSystemImageGUID         = 1 << 11
	CapIsPKeySwitchExtPortTrap   = 1 << 12
	CapIsCableInfo               = 1 << 13
	CapIsExtendedSpeeds          = 1 << 14
	CapIsCapabilityMask2         = 1 << 15
	CapIsCommunicationManagement = 1 << 16
	CapIsSNMPTunneling           = 1 << 17
	CapIsReinit                  = 1 << 18
	CapIsDeviceManagement        = 1 << 19
	CapIsVendorClass             = 1 << 20
	CapIsDRNotice                = 1 << 21
	CapIsCapabilityMaskNotice    = 1 << 22
	CapIsBootManagement          = 1 << 23
	CapIsLinkRoundTripLatency    = 1 << 24
	CapIsClientReregistration    = 1 << 25
	CapIsOtherLocalChanges       = 1 << 26
	CapIsLinkSpeedWidthPairs     = 1 << 27
)

// PortInfo is the 64-byte PortInfo attribute (IBA 14.2.5.6, with the 1.3
// CapabilityMask2 and LinkSpeedExt fields). The attribute modifier is the
// port number (switches; 0 addresses switch port 0) and is ignored by CAs.
// Bit offsets in the comments are the spec's (bit 0 = MSB of byte 0).
type PortInfo struct {
	MKey                                uint64 // 0, 64
	GIDPrefix                           uint64 // 64, 64
	LID                                 uint16 // 128, 16
	MasterSMLID                         uint16 // 144, 16
	CapabilityMask                      uint32 // 160, 32
	DiagCode                            uint16 // 192, 16
	MKeyLeasePeriod                     uint16 // 208, 16
	LocalPortNum                        uint8  // 224, 8
	LinkWidthEnabled                    uint8  // 232, 8
	LinkWidthSupported                  uint8  // 240, 8
	LinkWidthActive                     uint8  // 248, 8
	LinkSpeedSupported                  uint8  // 256, 4
	PortState                           uint8  // 260, 4
	PortPhysicalState                   uint8  // 264, 4
	LinkDownDefaultState                uint8  // 268, 4
	MKeyProtectBits                     uint8  // 272, 2
	LMC                                 uint8  // 277, 3
	LinkSpeedActive                     uint8  // 280, 4
	LinkSpeedEnabled                    uint8  // 284, 4
	NeighborMTU                         uint8  // 288, 4
	MasterSMSL                          uint8  // 292, 4
	VLCap                               uint8  // 296, 4
	InitType                            uint8  // 300, 4
	VLHighLimit                         uint8  // 304, 8
	VLArbitrationHighCap                uint8  // 312, 8
	VLArbitrationLowCap                 uint8  // 320, 8
	InitTypeReply                       uint8  // 328, 4
	MTUCap                              uint8  // 332, 4
	VLStallCount                        uint8  // 336, 3
	HOQLife                             uint8  // 339, 5
	OperationalVLs                      uint8  // 344, 4
	PartitionEnforcementInbound         bool   // 348
	PartitionEnforcementOutbound        bool   // 349
	FilterRawInbound                    bool   // 350
	FilterRawOutbound                   bool   // 351
	MKeyViolations                      uint16 // 352, 16
	PKeyViolations                      uint16 // 368, 16
	QKeyViolations                      uint16 // 384, 16
	GUIDCap                             uint8  // 400, 8
	ClientReregister                    bool   // 408
	MulticastPKeyTrapSuppressionEnabled uint8  // 409, 2
	SubnetTimeOut                       uint8  // 411, 5
	RespTimeValue                       uint8  // 419, 5
	LocalPhyErrors                      uint8  // 424, 4
	OverrunErrors                       uint8  // 428, 4
	MaxCreditHint                       uint16 // 432, 16
	LinkRoundTripLatency                uint32 // 456, 24
	CapabilityMask2                     uint16 // 480, 16
	LinkSpeedExtActive                  uint8  // 496, 4
	LinkSpeedExtSupported               uint8  // 500, 4
	LinkSpeedExtEnabled                 uint8  // 507, 5
}

// PortInfoLen is the wire size of PortInfo.
const PortInfoLen = 64

func (*PortInfo) AttrID() uint16 { return AttrPortInfo }

func (p *PortInfo) MarshalTo(b []byte) error {
	if err := need("PortInfo", b, PortInfoLen); err != nil {
		return err
	}
	b = b[:PortInfoLen]
	clear64(b) // reserved bits 274-276, 416-418, 448-455, 504-506
	w := bitWriter{b: b, attr: "PortInfo"}
	w.put("MKey", 0, 64, p.MKey)
	w.put("GIDPrefix", 64, 64, p.GIDPrefix)
	w.put("LID", 128, 16, uint64(p.LID))
	w.put("MasterSMLID", 144, 16, uint64(p.MasterSMLID))
	w.put("CapabilityMask", 160, 32, uint64(p.CapabilityMask))
	w.put("DiagCode", 192, 16, uint64(p.DiagCode))
	w.put("MKeyLeasePeriod", 208, 16, uint64(p.MKeyLeasePeriod))
	w.put("LocalPortNum", 224, 8, uint64(p.LocalPortNum))
	w.put("LinkWidthEnabled", 232, 8, uint64(p.LinkWidthEnabled))
	w.put("LinkWidthSupported", 240, 8, uint64(p.LinkWidthSupported))
	w.put("LinkWidthActive", 248, 8, uint64(p.LinkWidthActive))
	w.put("LinkSpeedSupported", 256, 4, uint64(p.LinkSpeedSupported))
	w.put("PortState", 260, 4, uint64(p.PortState))
	w.put("PortPhysicalState", 264, 4, uint64(p.PortPhysicalState))
	w.put("LinkDownDefaultState", 268, 4, uint64(p.LinkDownDefaultState))
	w.put("MKeyProtectBits", 272, 2, uint64(p.MKeyProtectBits))
	w.put("LMC", 277, 3, uint64(p.LMC))
	w.put("LinkSpeedActive", 280, 4, uint64(p.LinkSpeedActive))
	w.put("LinkSpeedEnabled", 284, 4, uint64(p.LinkSpeedEnabled))
	w.put("NeighborMTU", 288, 4, uint64(p.NeighborMTU))
	w.put("MasterSMSL", 292, 4, uint64(p.MasterSMSL))
	w.put("VLCap", 296, 4, uint64(p.VLCap))
	w.put("InitType", 300, 4, uint64(p.InitType))
	w.put("VLHighLimit", 304, 8, uint64(p.VLHighLimit))
	w.put("VLArbitrationHighCap", 312, 8, uint64(p.VLArbitrationHighCap))
	w.put("VLArbitrationLowCap", 320, 8, uint64(p.VLArbitrationLowCap))
	w.put("InitTypeReply", 328, 4, uint64(p.InitTypeReply))
	w.put("MTUCap", 332, 4, uint64(p.MTUCap))
	w.put("VLStallCount", 336, 3, uint64(p.VLStallCount))
	w.put("HOQLife", 339, 5, uint64(p.HOQLife))
	w.put("OperationalVLs", 344, 4, uint64(p.OperationalVLs))
	w.bool("PartitionEnforcementInbound", 348, p.PartitionEnforcementInbound)
	w.bool("PartitionEnforcementOutbound", 349, p.PartitionEnforcementOutbound)
	w.bool("FilterRawInbound", 350, p.FilterRawInbound)
	w.bool("FilterRawOutbound", 351, p.FilterRawOutbound)
	w.put("MKeyViolations", 352, 16, uint64(p.MKeyViolations))
	w.put("PKeyViolations", 368, 16, uint64(p.PKeyViolations))
	w.put("QKeyViolations", 384, 16, uint64(p.QKeyViolations))
	w.put("GUIDCap", 400, 8, uint64(p.GUIDCap))
	w.bool("ClientReregister", 408, p.ClientReregister)
	w.put("MulticastPKeyTrapSuppressionEnabled", 409, 2, uint64(p.MulticastPKeyTrapSuppressionEnabled))
	w.put("SubnetTimeOut", 411, 5, uint64(p.SubnetTimeOut))
	w.put("RespTimeValue", 419, 5, uint64(p.RespTimeValue))
	w.put("LocalPhyErrors", 424, 4, uint64(p.LocalPhyErrors))
	w.put("OverrunErrors", 428, 4, uint64(p.OverrunErrors))
	w.put("MaxCreditHint", 432, 16, uint64(p.MaxCreditHint))
	w.put("LinkRoundTripLatency", 456, 24, uint64(p.LinkRoundTripLatency))
	w.put("CapabilityMask2", 480, 16, uint64(p.CapabilityMask2))
	w.put("LinkSpeedExtActive", 496, 4, uint64(p.LinkSpeedExtActive))
	w.put("LinkSpeedExtSupported", 500, 4, uint64(p.LinkSpeedExtSupported))
	w.put("LinkSpeedExtEnabled", 507, 5, uint64(p.LinkSpeedExtEnabled))
	return w.err
}

func (p *PortInfo) Unmarshal(b []byte) error {
	if err := need("PortInfo", b, PortInfoLen); err != nil {
		return err
	}
	g := func(off, width int) uint64 { return getBits(b, off, width) }
	*p = PortInfo{
		MKey:                                g(0, 64),
		GIDPrefix:                           g(64, 64),
		LID:                                 uint16(g(128, 16)),
		MasterSMLID:                         uint16(g(144, 16)),
		CapabilityMask:                      uint32(g(160, 32)),
		DiagCode:                            uint16(g(192, 16)),
		MKeyLeasePeriod:                     uint16(g(208, 16)),
		LocalPortNum:                        uint8(g(224, 8)),
		LinkWidthEnabled:                    uint8(g(232, 8)),
		LinkWidthSupported:                  uint8(g(240, 8)),
		LinkWidthActive:                     uint8(g(248, 8)),
		LinkSpeedSupported:                  uint8(g(256, 4)),
		PortState:                           uint8(g(260, 4)),
		PortPhysicalState:                   uint8(g(264, 4)),
		LinkDownDefaultState:                uint8(g(268, 4)),
		MKeyProtectBits:                     uint8(g(272, 2)),
		LMC:                                 uint8(g(277, 3)),
		LinkSpeedActive:                     uint8(g(280, 4)),
		LinkSpeedEnabled:                    uint8(g(284, 4)),
		NeighborMTU:                         uint8(g(288, 4)),
		MasterSMSL:                          uint8(g(292, 4)),
		VLCap:                               uint8(g(296, 4)),
		InitType:                            uint8(g(300, 4)),
		VLHighLimit:                         uint8(g(304, 8)),
		VLArbitrationHighCap:                uint8(g(312, 8)),
		VLArbitrationLowCap:                 uint8(g(320, 8)),
		InitTypeReply:                       uint8(g(328, 4)),
		MTUCap:                              uint8(g(332, 4)),
		VLStallCount:                        uint8(g(336, 3)),
		HOQLife:                             uint8(g(339, 5)),
		OperationalVLs:                      uint8(g(344, 4)),
		PartitionEnforcementInbound:         g(348, 1) == 1,
		PartitionEnforcementOutbound:        g(349, 1) == 1,
		FilterRawInbound:                    g(350, 1) == 1,
		FilterRawOutbound:                   g(351, 1) == 1,
		MKeyViolations:                      uint16(g(352, 16)),
		PKeyViolations:                      uint16(g(368, 16)),
		QKeyViolations:                      uint16(g(384, 16)),
		GUIDCap:                             uint8(g(400, 8)),
		ClientReregister:                    g(408, 1) == 1,
		MulticastPKeyTrapSuppressionEnabled: uint8(g(409, 2)),
		SubnetTimeOut:                       uint8(g(411, 5)),
		RespTimeValue:                       uint8(g(419, 5)),
		LocalPhyErrors:                      uint8(g(424, 4)),
		OverrunErrors:                       uint8(g(428, 4)),
		MaxCreditHint:                       uint16(g(432, 16)),
		LinkRoundTripLatency:                uint32(g(456, 24)),
		CapabilityMask2:                     uint16(g(480, 16)),
		LinkSpeedExtActive:                  uint8(g(496, 4)),
		LinkSpeedExtSupported:               uint8(g(500, 4)),
		LinkSpeedExtEnabled:                 uint8(g(507, 5)),
	}
	return nil
}
