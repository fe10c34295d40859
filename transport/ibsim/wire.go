package ibsim

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Wire sizes of ibsim's messages (amd64/arm64 layout, which is what the
// Debian ibsim binary uses).
const (
	// CtlLen is the size of every control message, request and reply.
	CtlLen = 80
	// CtlDataLen is the payload area inside a control message.
	CtlDataLen = 64
	// ClientInfoLen is the CONNECT payload.
	ClientInfoLen = 44
	// NodeIDLen is the NUL-terminated node name field of CONNECT, so a
	// name is at most NodeIDLen-1 bytes.
	NodeIDLen = 32
	// RequestLen is the size of every data datagram (sim header + MAD).
	RequestLen = 288
	// MADLen is the one MAD a data datagram carries; ibsim has no RMPP.
	MADLen = 256
	// requestHdrLen is where the MAD starts in a data datagram.
	requestHdrLen = RequestLen - MADLen
)

// ctlMagic opens every control message.
const ctlMagic = 0xDEADBEEF

// CtlType is a control message type.
type CtlType uint32

// Control message types. A reply carries the request's type on success and
// CtlError on failure.
const (
	CtlError       CtlType = 0
	CtlConnect     CtlType = 1
	CtlDisconnect  CtlType = 2
	CtlGetPort     CtlType = 3
	CtlGetVendor   CtlType = 4
	CtlGetGID      CtlType = 5
	CtlGetGUID     CtlType = 6
	CtlGetNodeInfo CtlType = 7
	CtlGetPortInfo CtlType = 8
	CtlSetIsSM     CtlType = 9
	CtlGetPKeys    CtlType = 10
)

var ctlNames = [...]string{"ERROR", "CONNECT", "DISCONNECT", "GET_PORT", "GET_VENDOR", "GET_GID", "GET_GUID", "GET_NODEINFO", "GET_PORTINFO", "SET_ISSM", "GET_PKEYS"}

func (t CtlType) String() string {
	if int(t) < len(ctlNames) {
		return ctlNames[t]
	}
	return fmt.Sprintf("CtlType(%d)", uint32(t))
}

// MaxClients is ibsim's compile-time number of client slots.
const MaxClients = 10

// StatusBounced is the sim-header status of a datagram ibsim handed back
// undelivered (ETIMEDOUT): no route, link down, injected error, or no
// client at the destination to forward it to.
const StatusBounced = 110

// Control messages and client_info use the host byte order of the machine
// ibsim runs on; local mode means that is ours.
var host = binary.NativeEndian

// Ctl is one control message.
type Ctl struct {
	Magic    uint32
	ClientID uint32 // client slot from CONNECT (0 in CONNECT itself)
	Type     CtlType
	Len      uint32 // payload length; ibsim ignores and echoes it
	Data     [CtlDataLen]byte
}

// newCtl builds a request carrying payload.
func newCtl(client uint32, t CtlType, payload []byte) Ctl {
	c := Ctl{Magic: ctlMagic, ClientID: client, Type: t, Len: uint32(len(payload))}
	copy(c.Data[:], payload)
	return c
}

// MarshalTo writes the 80-byte message into b.
func (c *Ctl) MarshalTo(b []byte) error {
	if len(b) < CtlLen {
		return fmt.Errorf("ibsim: control message needs %d bytes, buffer has %d", CtlLen, len(b))
	}
	host.PutUint32(b[0:], c.Magic)
	host.PutUint32(b[4:], c.ClientID)
	host.PutUint32(b[8:], uint32(c.Type))
	host.PutUint32(b[12:], c.Len)
	copy(b[16:CtlLen], c.Data[:])
	return nil
}

// Unmarshal decodes an 80-byte control message. ibsim only ever sends that
// size; anything else, or a wrong magic, is not an ibsim reply.
func (c *Ctl) Unmarshal(b []byte) error {
	if len(b) != CtlLen {
		return fmt.Errorf("ibsim: control message is %d bytes, want %d", len(b), CtlLen)
	}
	c.Magic = host.Uint32(b[0:])
	if c.Magic != ctlMagic {
		return fmt.Errorf("ibsim: control message magic %#08x, want %#08x", c.Magic, uint32(ctlMagic))
	}
	c.ClientID = host.Uint32(b[4:])
	c.Type = CtlType(host.Uint32(b[8:]))
	c.Len = host.Uint32(b[12:])
	copy(c.Data[:], b[16:CtlLen])
	return nil
}

// ClientInfo is the CONNECT payload. In the reply ID is the client slot
// ibsim assigned and NodeID the canonical id of the node attached to.
type ClientInfo struct {
	ID uint32 // request: the number naming our data socket <base>:in<ID>
	// QP, when > 1, asks for requests arriving with that destination QP.
	QP uint32
	// IsSM asks for the unsolicited QP0/QP1 requests (traps, SMInfo, SA)
	// that reach the attached node. One such client per node.
	IsSM   bool
	NodeID string // node id or description; "" = ibsim's default port
}

// MarshalTo writes the 44-byte client_info into b.
func (ci *ClientInfo) MarshalTo(b []byte) error {
	if len(b) < ClientInfoLen {
		return fmt.Errorf("ibsim: client_info needs %d bytes, buffer has %d", ClientInfoLen, len(b))
	}
	if len(ci.NodeID) > NodeIDLen-1 || bytes.IndexByte([]byte(ci.NodeID), 0) >= 0 {
		return fmt.Errorf("ibsim: node id %q must be at most %d bytes without NUL", ci.NodeID, NodeIDLen-1)
	}
	host.PutUint32(b[0:], ci.ID)
	host.PutUint32(b[4:], ci.QP)
	var sm uint32
	if ci.IsSM {
		sm = 1
	}
	host.PutUint32(b[8:], sm)
	n := copy(b[12:12+NodeIDLen], ci.NodeID)
	clear(b[12+n : 12+NodeIDLen])
	return nil
}

// Unmarshal decodes client_info from a control payload.
func (ci *ClientInfo) Unmarshal(b []byte) error {
	if len(b) < ClientInfoLen {
		return fmt.Errorf("ibsim: client_info is %d bytes, want %d", len(b), ClientInfoLen)
	}
	ci.ID = host.Uint32(b[0:])
	ci.QP = host.Uint32(b[4:])
	ci.IsSM = host.Uint32(b[8:]) != 0
	id := b[12 : 12+NodeIDLen]
	if i := bytes.IndexByte(id, 0); i >= 0 {
		id = id[:i]
	}
	ci.NodeID = string(id)
	return nil
}

// Header is the sim header in front of every MAD on a data socket.
type Header struct {
	// DLID 0xFFFF means directed route; otherwise ibsim LID-routes
	// through the switches' programmed LFTs.
	DLID uint16
	// SLID 0 on a LID-routed request means "my port's LID"; DR needs 0xFFFF.
	SLID   uint16
	DQP    uint32
	SQP    uint32
	Status uint32 // 0, or StatusBounced
	Length uint64 // MAD length; ibsim ignores it and sends 256
}

// putLID stores a LID the way ibsim does: htons(lid) kept in a host-order
// u32, i.e. the big-endian LID in the first two bytes on little-endian
// hosts.
func putLID(b []byte, lid uint16) {
	var be [2]byte
	binary.BigEndian.PutUint16(be[:], lid)
	host.PutUint32(b, uint32(host.Uint16(be[:])))
}

func getLID(b []byte) uint16 {
	var be [2]byte
	host.PutUint16(be[:], uint16(host.Uint32(b)))
	return binary.BigEndian.Uint16(be[:])
}

// MarshalRequest writes a 288-byte data datagram: h followed by mad,
// zero-padded to 256 bytes.
func MarshalRequest(b []byte, h *Header, mad []byte) error {
	if len(b) < RequestLen {
		return fmt.Errorf("ibsim: data datagram needs %d bytes, buffer has %d", RequestLen, len(b))
	}
	if len(mad) > MADLen {
		return fmt.Errorf("ibsim: MAD is %d bytes; ibsim carries one %d-byte MAD per datagram and no RMPP, so split it", len(mad), MADLen)
	}
	putLID(b[0:], h.DLID)
	putLID(b[4:], h.SLID)
	binary.BigEndian.PutUint32(b[8:], h.DQP)
	binary.BigEndian.PutUint32(b[12:], h.SQP)
	binary.BigEndian.PutUint32(b[16:], h.Status)
	clear(b[20:24]) // alignment padding before the u64
	binary.BigEndian.PutUint64(b[24:], h.Length)
	n := copy(b[requestHdrLen:], mad)
	clear(b[requestHdrLen+n : RequestLen])
	return nil
}

// UnmarshalRequest decodes a data datagram; the returned MAD aliases b.
func UnmarshalRequest(b []byte) (Header, []byte, error) {
	if len(b) != RequestLen {
		return Header{}, nil, fmt.Errorf("ibsim: data datagram is %d bytes, want %d", len(b), RequestLen)
	}
	h := Header{
		DLID:   getLID(b[0:]),
		SLID:   getLID(b[4:]),
		DQP:    binary.BigEndian.Uint32(b[8:]),
		SQP:    binary.BigEndian.Uint32(b[12:]),
		Status: binary.BigEndian.Uint32(b[16:]),
		Length: binary.BigEndian.Uint64(b[24:]),
	}
	return h, b[requestHdrLen:RequestLen], nil
}

// PortState is the GET_PORT reply.
type PortState struct {
	LID   uint16
	State uint8 // IBA PortState: 1 Down, 2 Init, 3 Armed, 4 Active
}

func (p *PortState) Unmarshal(b []byte) error {
	if len(b) < 3 {
		return fmt.Errorf("ibsim: GET_PORT reply is %d bytes, want 3", len(b))
	}
	p.LID = host.Uint16(b[0:])
	p.State = b[2]
	return nil
}

// Vendor is the GET_VENDOR reply.
type Vendor struct {
	VendorID, DeviceID, Revision uint32
	FirmwareVersion              uint64
}

// vendorLen: three u32, padding to align the u64, the u64.
const vendorLen = 24

func (v *Vendor) Unmarshal(b []byte) error {
	if len(b) < vendorLen {
		return fmt.Errorf("ibsim: GET_VENDOR reply is %d bytes, want %d", len(b), vendorLen)
	}
	v.VendorID = host.Uint32(b[0:])
	v.DeviceID = host.Uint32(b[4:])
	v.Revision = host.Uint32(b[8:])
	v.FirmwareVersion = host.Uint64(b[16:])
	return nil
}

// GID is the GET_GID reply. ibsim fills the interface half with the node
// GUID in host order, not a proper port GUID in network order; decoding
// undoes the byte order so NodeGUID is the number.
type GID struct {
	Prefix   uint64
	NodeGUID uint64
}

func (g *GID) Unmarshal(b []byte) error {
	if len(b) < 16 {
		return fmt.Errorf("ibsim: GET_GID reply is %d bytes, want 16", len(b))
	}
	g.Prefix = binary.BigEndian.Uint64(b[0:])
	g.NodeGUID = host.Uint64(b[8:])
	return nil
}

// PKeys decodes a GET_PKEYS reply: up to 32 big-endian P_Keys, zero
// entries (unused) dropped.
func PKeys(b []byte) ([]uint16, error) {
	if len(b) < CtlDataLen {
		return nil, fmt.Errorf("ibsim: GET_PKEYS reply is %d bytes, want %d", len(b), CtlDataLen)
	}
	var out []uint16
	for i := 0; i+1 < CtlDataLen; i += 2 {
		if k := binary.BigEndian.Uint16(b[i:]); k != 0 {
			out = append(out, k)
		}
	}
	return out, nil
}

// issmPayload is the SET_ISSM request: an int in host order.
func issmPayload(on bool) []byte {
	b := make([]byte, 4)
	if on {
		host.PutUint32(b, 1)
	}
	return b
}
