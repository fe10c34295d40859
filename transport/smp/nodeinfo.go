package smp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Node types (NodeInfo.NodeType).
const (
	NodeTypeCA     = 1
	NodeTypeSwitch = 2
	NodeTypeRouter = 3
)

// NodeInfo is the NodeInfo attribute (IBA 14.2.5.3, 40 bytes).
type NodeInfo struct {
	BaseVersion     uint8
	ClassVersion    uint8
	NodeType        uint8
	NumPorts        uint8
	SystemImageGUID uint64
	NodeGUID        uint64
	PortGUID        uint64
	PartitionCap    uint16
	DeviceID        uint16
	Revision        uint32
	LocalPortNum    uint8
	VendorID        uint32 // 24 bits
}

// NodeInfoLen is the wire size of NodeInfo.
const NodeInfoLen = 40

func (*NodeInfo) AttrID() uint16 { return AttrNodeInfo }

func (n *NodeInfo) MarshalTo(b []byte) error {
	if err := need("NodeInfo", b, NodeInfoLen); err != nil {
		return err
	}
	if n.VendorID > 0xFFFFFF {
		return fmt.Errorf("smp: NodeInfo.VendorID %#x does not fit in 24 bits", n.VendorID)
	}
	b[0], b[1], b[2], b[3] = n.BaseVersion, n.ClassVersion, n.NodeType, n.NumPorts
	binary.BigEndian.PutUint64(b[4:], n.SystemImageGUID)
	binary.BigEndian.PutUint64(b[12:], n.NodeGUID)
	binary.BigEndian.PutUint64(b[20:], n.PortGUID)
	binary.BigEndian.PutUint16(b[28:], n.PartitionCap)
	binary.BigEndian.PutUint16(b[30:], n.DeviceID)
	binary.BigEndian.PutUint32(b[32:], n.Revision)
	binary.BigEndian.PutUint32(b[36:], n.VendorID) // b[36] rewritten below
	b[36] = n.LocalPortNum
	return nil
}

func (n *NodeInfo) Unmarshal(b []byte) error {
	if err := need("NodeInfo", b, NodeInfoLen); err != nil {
		return err
	}
	n.BaseVersion, n.ClassVersion, n.NodeType, n.NumPorts = b[0], b[1], b[2], b[3]
	n.SystemImageGUID = binary.BigEndian.Uint64(b[4:])
	n.NodeGUID = binary.BigEndian.Uint64(b[12:])
	n.PortGUID = binary.BigEndian.Uint64(b[20:])
	n.PartitionCap = binary.BigEndian.Uint16(b[28:])
	n.DeviceID = binary.BigEndian.Uint16(b[30:])
	n.Revision = binary.BigEndian.Uint32(b[32:])
	n.LocalPortNum = b[36]
	n.VendorID = binary.BigEndian.Uint32(b[36:]) & 0xFFFFFF
	return nil
}

var errNotUTF8 = errors.New("not valid UTF-8; fix the name before writing it")

// NodeDescription is the NodeDescription attribute (IBA 14.2.5.2): 64
// bytes of UTF-8, NUL padded. Text holds the string up to the first NUL.
type NodeDescription struct {
	Text string
}

func (*NodeDescription) AttrID() uint16 { return AttrNodeDescription }

func (d *NodeDescription) MarshalTo(b []byte) error {
	if err := need("NodeDescription", b, DataLen); err != nil {
		return err
	}
	if len(d.Text) > DataLen {
		return fmt.Errorf("smp: NodeDescription is %d bytes, at most %d fit; shorten it", len(d.Text), DataLen)
	}
	if !utf8.ValidString(d.Text) {
		return fmt.Errorf("smp: NodeDescription %q: %w", d.Text, errNotUTF8)
	}
	for i := 0; i < len(d.Text); i++ {
		if d.Text[i] == 0 {
			return fmt.Errorf("smp: NodeDescription %q contains a NUL byte", d.Text)
		}
	}
	n := copy(b, d.Text)
	clear64(b[n:DataLen])
	return nil
}

// Unmarshal takes the bytes before the first NUL. Invalid UTF-8 (which
// real devices do send) is kept as is rather than rejected, so discovery
// does not fail on a bad name; re-marshalling such a value reports it.
func (d *NodeDescription) Unmarshal(b []byte) error {
	if err := need("NodeDescription", b, DataLen); err != nil {
		return err
	}
	n := 0
	for n < DataLen && b[n] != 0 {
		n++
	}
	d.Text = string(b[:n])
	return nil
}
