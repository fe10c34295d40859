package umad

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// The kernel ABI of /dev/infiniband/umadN, from the Linux uapi headers
// rdma/ib_user_mad.h and rdma/rdma_user_ioctl.h (ABI version 5).

// ABIVersion is the umad ABI this package speaks; the kernel publishes its
// own in /sys/class/infiniband_mad/abi_version.
const ABIVersion = 5

// HeaderLen is sizeof(struct ib_user_mad_hdr) with the pkey_index field,
// which the kernel uses once IB_USER_MAD_ENABLE_PKEY has been issued.
const HeaderLen = 64

// regReqLen is sizeof(struct ib_user_mad_reg_req): id, a 128-bit method
// mask of 4-byte-aligned longs, qpn, class, class version, oui[3],
// rmpp_version, padded to 4 bytes. It is 28 on 32- and 64-bit kernels.
const regReqLen = 28

// Linux ioctl request encoding (asm-generic/ioctl.h, used by x86, arm,
// arm64, riscv, s390 and loong64): dir in bits 31..30, size in 29..16,
// type in 15..8, number in 7..0.
const (
	iocNone  = 0
	iocWrite = 1
	iocRead  = 2

	rdmaIoctlMagic = 0x1b
)

func ioc(dir, size, nr uint32) uint32 {
	return dir<<30 | size<<16 | rdmaIoctlMagic<<8 | nr
}

// The three ioctls this package issues.
var (
	// _IOWR(0x1b, 1, struct ib_user_mad_reg_req) = 0xc01c1b01; the kernel
	// writes the new agent's id into the request's first word.
	ioctlRegisterAgent = ioc(iocRead|iocWrite, regReqLen, 0x01)
	// _IOW(0x1b, 2, __u32) = 0x40041b02.
	ioctlUnregisterAgent = ioc(iocWrite, 4, 0x02)
	// _IO(0x1b, 3) = 0x1b03: switch the file to the 64-byte header that
	// carries pkey_index. It must precede every agent registration.
	ioctlEnablePKey = ioc(iocNone, 0, 0x03)
)

// Header is struct ib_user_mad_hdr, the 64 bytes in front of every MAD
// read from or written to a umad file. The first five words are in host
// byte order (the kernel copies them as native u32s); QPN, QKey, LID and
// FlowLabel are big-endian as on the wire; PKeyIndex is host order again.
type Header struct {
	AgentID uint32 // agent the MAD arrived on / is sent with
	// Status is 0 on receive, or ETIMEDOUT for a request whose response
	// never came (the MAD that follows is then the request's 24-byte
	// common header). Ignored on send.
	Status    uint32
	TimeoutMS uint32 // response timeout of a request (send only)
	Retries   uint32 // kernel re-sends of a request (send only)
	// Length is HeaderLen plus the MAD length on receive (after an
	// ENOSPC read, the buffer size needed). The kernel ignores it on send.
	Length       uint32
	QPN          uint32 // remote QP (24 bits)
	QKey         uint32 // remote Q_Key (send only)
	LID          uint16 // remote LID: source on receive, destination on send
	SL           uint8
	PathBits     uint8
	GRHPresent   bool
	GIDIndex     uint8 // local GID index (send only)
	HopLimit     uint8
	TrafficClass uint8
	GID          [16]byte // remote GID
	FlowLabel    uint32
	PKeyIndex    uint16
}

// EncodeTo writes h into b[0:HeaderLen]; the 6 reserved bytes are zeroed.
func (h *Header) EncodeTo(b []byte) error {
	if len(b) < HeaderLen {
		return fmt.Errorf("umad: header needs %d bytes, got %d", HeaderLen, len(b))
	}
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], h.AgentID)
	ne.PutUint32(b[4:], h.Status)
	ne.PutUint32(b[8:], h.TimeoutMS)
	ne.PutUint32(b[12:], h.Retries)
	ne.PutUint32(b[16:], h.Length)
	binary.BigEndian.PutUint32(b[20:], h.QPN)
	binary.BigEndian.PutUint32(b[24:], h.QKey)
	binary.BigEndian.PutUint16(b[28:], h.LID)
	b[30], b[31] = h.SL, h.PathBits
	b[32] = 0
	if h.GRHPresent {
		b[32] = 1
	}
	b[33], b[34], b[35] = h.GIDIndex, h.HopLimit, h.TrafficClass
	copy(b[36:52], h.GID[:])
	binary.BigEndian.PutUint32(b[52:], h.FlowLabel)
	ne.PutUint16(b[56:], h.PKeyIndex)
	clear(b[58:64])
	return nil
}

// Decode parses the header at the start of b.
func (h *Header) Decode(b []byte) error {
	if len(b) < HeaderLen {
		return fmt.Errorf("umad: record of %d bytes is shorter than the %d-byte header", len(b), HeaderLen)
	}
	ne := binary.NativeEndian
	h.AgentID = ne.Uint32(b[0:])
	h.Status = ne.Uint32(b[4:])
	h.TimeoutMS = ne.Uint32(b[8:])
	h.Retries = ne.Uint32(b[12:])
	h.Length = ne.Uint32(b[16:])
	h.QPN = binary.BigEndian.Uint32(b[20:])
	h.QKey = binary.BigEndian.Uint32(b[24:])
	h.LID = binary.BigEndian.Uint16(b[28:])
	h.SL, h.PathBits = b[30], b[31]
	h.GRHPresent = b[32] != 0
	h.GIDIndex, h.HopLimit, h.TrafficClass = b[33], b[34], b[35]
	copy(h.GID[:], b[36:52])
	h.FlowLabel = binary.BigEndian.Uint32(b[52:])
	h.PKeyIndex = ne.Uint16(b[56:])
	return nil
}

// MethodMask is the 128-bit set of methods an agent receives unsolicited
// requests for (bit m = method m).
type MethodMask [2]uint64

// Set adds request methods (0..127) to the mask; a response method is a
// programming error, as the kernel routes responses by TID.
func (m *MethodMask) Set(methods ...uint8) {
	for _, x := range methods {
		if x >= 128 {
			panic(fmt.Sprintf("umad: method %#02x has the response bit; agents register request methods", x))
		}
		m[x/64] |= 1 << (x % 64)
	}
}

// Has reports whether method x is in the mask.
func (m MethodMask) Has(x uint8) bool { return x < 128 && m[x/64]&(1<<(x%64)) != 0 }

// regReq is struct ib_user_mad_reg_req.
type regReq struct {
	ID           uint32 // written back by the kernel
	Methods      MethodMask
	QPN          uint8 // 0 for SMI (SMPs), 1 for GSI (GMPs)
	MgmtClass    uint8
	ClassVersion uint8
	OUI          [3]byte
	RMPPVersion  uint8 // 1: the kernel does RMPP for this agent
}

// encode returns the 28 bytes the ioctl passes. method_mask is an array of
// C longs in host order, so the mask's byte layout depends on the word size
// (identical on little-endian machines).
func (r *regReq) encode() []byte {
	b := make([]byte, regReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], r.ID)
	if strconv.IntSize == 64 {
		ne.PutUint64(b[4:], r.Methods[0])
		ne.PutUint64(b[12:], r.Methods[1])
	} else {
		ne.PutUint32(b[4:], uint32(r.Methods[0]))
		ne.PutUint32(b[8:], uint32(r.Methods[0]>>32))
		ne.PutUint32(b[12:], uint32(r.Methods[1]))
		ne.PutUint32(b[16:], uint32(r.Methods[1]>>32))
	}
	b[20], b[21], b[22] = r.QPN, r.MgmtClass, r.ClassVersion
	copy(b[23:26], r.OUI[:])
	b[26] = r.RMPPVersion
	return b
}

// decodeRegReq is the inverse of encode (used by fake kernels in tests and
// to read back the agent id).
func decodeRegReq(b []byte) (regReq, error) {
	var r regReq
	if len(b) < regReqLen {
		return r, fmt.Errorf("umad: registration request of %d bytes, want %d", len(b), regReqLen)
	}
	ne := binary.NativeEndian
	r.ID = ne.Uint32(b[0:])
	if strconv.IntSize == 64 {
		r.Methods[0], r.Methods[1] = ne.Uint64(b[4:]), ne.Uint64(b[12:])
	} else {
		r.Methods[0] = uint64(ne.Uint32(b[4:])) | uint64(ne.Uint32(b[8:]))<<32
		r.Methods[1] = uint64(ne.Uint32(b[12:])) | uint64(ne.Uint32(b[16:]))<<32
	}
	r.QPN, r.MgmtClass, r.ClassVersion = b[20], b[21], b[22]
	copy(r.OUI[:], b[23:26])
	r.RMPPVersion = b[26]
	return r, nil
}
