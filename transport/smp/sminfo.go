package smp

import (
	"encoding/binary"
	"fmt"
)

// SM states (SMInfo.SMState).
const (
	SMStateNotActive   = 0
	SMStateDiscovering = 1
	SMStateStandby     = 2
	SMStateMaster      = 3
)

// SMInfo is the SMInfo attribute (IBA 14.2.5.13). It is answered by SMs,
// not SMAs; the modifier of a Set carries the SM control command
// (Handover 1, Acknowledge 2, Disable 3, Standby 4, Discover 5).
type SMInfo struct {
	GUID     uint64
	SMKey    uint64
	ActCount uint32
	Priority uint8 // 4 bits
	SMState  uint8 // 4 bits
}

// SMInfoLen is the wire size of SMInfo.
const SMInfoLen = 21

func (*SMInfo) AttrID() uint16 { return AttrSMInfo }

func (s *SMInfo) MarshalTo(b []byte) error {
	if err := need("SMInfo", b, SMInfoLen); err != nil {
		return err
	}
	if s.Priority > 15 || s.SMState > 15 {
		return fmt.Errorf("smp: SMInfo Priority %d / SMState %d must each fit in 4 bits", s.Priority, s.SMState)
	}
	binary.BigEndian.PutUint64(b[0:], s.GUID)
	binary.BigEndian.PutUint64(b[8:], s.SMKey)
	binary.BigEndian.PutUint32(b[16:], s.ActCount)
	b[20] = s.Priority<<4 | s.SMState
	return nil
}

func (s *SMInfo) Unmarshal(b []byte) error {
	if err := need("SMInfo", b, SMInfoLen); err != nil {
		return err
	}
	s.GUID = binary.BigEndian.Uint64(b[0:])
	s.SMKey = binary.BigEndian.Uint64(b[8:])
	s.ActCount = binary.BigEndian.Uint32(b[16:])
	s.Priority, s.SMState = b[20]>>4, b[20]&0x0F
	return nil
}
