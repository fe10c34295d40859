package umad

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// Addressing constants of the two special QPs (IBA 9.6.1.1, 13.4.6).
const (
	// QP1QKey is the well-known Q_Key of QP1, which every GMP to a GSI
	// carries.
	QP1QKey = 0x80010000
	qpSMI   = 0
	qpGSI   = 1
)

// SA/RMPP layout: 24-byte common header, 12-byte RMPP header, 20-byte SA
// header, then data. With kernel RMPP every segment repeats the 56 header
// bytes and carries up to 200 data bytes.
const (
	rmppHeaderEnd  = 36
	saHeaderEnd    = smp.SADataOffset // 56
	saSegData      = smp.SADataLen    // 200
	saSegPayload   = saSegData + saHeaderEnd - rmppHeaderEnd
	maxRecordBytes = 64 << 20 // refuse reads larger than this (a 64 MiB RMPP message is not an SA answer)
)

// isResponse mirrors the kernel's ib_response_mad: the R bit, or
// TrapRepress (which answers a Trap). Responses are matched to the agent by
// TID and never wait for an answer themselves.
func isResponse(method uint8) bool {
	return method&smp.MethodResponse != 0 || method == smp.MethodTrapRepress
}

// reply is the non-default addressing an unsolicited request arrived with;
// the response must leave the same way (same P_Key, GRH back to the
// requester's GID).
type reply struct {
	pkeyIndex    uint16
	grh          bool
	gid          [16]byte
	flowLabel    uint32
	trafficClass uint8
	hopLimit     uint8
}

// sendFields are the header fields the Conn decides for one packet.
type sendFields struct {
	agent     uint32
	timeoutMS uint32 // 0 for responses
	retries   uint32 // kernel retries: 0 for requests, ResponseRetries for responses
	pkeyIndex uint16
	reply     *reply // nil: default addressing
}

// encodeSend appends the record written to the umad file for p: header,
// then the MAD. SMPs go to QP0 with Q_Key 0; GMPs to p.QP (QP1 when 0) with
// QP1's Q_Key. A directed-route SMP with DLID 0 is sent to the permissive
// LID, where the kernel's SMI expects it.
//
// SA MADs with the RMPP Active flag, SA table responses (GetTableResp,
// GetTraceTableResp, GetMultiResp; IBA 15.2.5 requires RMPP for them) and
// SA MADs longer than 256 bytes are handed to the kernel as one whole
// message, which it segments: see rmppWhole.
func encodeSend(dst []byte, p transport.Packet, f sendFields) ([]byte, error) {
	m := p.MAD
	if len(m) < smp.HeaderLen {
		return nil, fmt.Errorf("umad: MAD of %d bytes is shorter than the %d-byte common header", len(m), smp.HeaderLen)
	}
	h := Header{AgentID: f.agent, TimeoutMS: f.timeoutMS, Retries: f.retries, LID: p.DLID, SL: p.SL, PKeyIndex: f.pkeyIndex}
	if p.SL > 15 {
		return nil, fmt.Errorf("umad: SL %d out of range 0..15", p.SL)
	}
	rmpp := false
	switch class := m[1]; class {
	case smp.ClassSMPLID, smp.ClassSMPDR:
		if len(m) != smp.MADLen {
			return nil, fmt.Errorf("umad: SMP is %d bytes, want %d", len(m), smp.MADLen)
		}
		h.QPN = qpSMI
		if class == smp.ClassSMPDR && h.LID == 0 {
			h.LID = smp.PermissiveLID
		}
	case smp.ClassSA:
		if len(m) < saHeaderEnd {
			return nil, fmt.Errorf("umad: SA MAD is %d bytes, shorter than its %d-byte header", len(m), saHeaderEnd)
		}
		h.QPN, h.QKey = p.QP, QP1QKey
		if h.QPN == 0 {
			h.QPN = qpGSI
		}
		rmpp = m[26]&smp.RMPPFlagActive != 0 || len(m) > smp.MADLen || isTableResp(m[3])
		if !rmpp && len(m) != smp.MADLen {
			return nil, fmt.Errorf("umad: SA MAD without RMPP is %d bytes, want %d", len(m), smp.MADLen)
		}
	default:
		return nil, fmt.Errorf("umad: management class %#02x has no agent here; this port sends SMPs (0x01, 0x81) and SA MADs (0x03)", class)
	}
	if h.QPN > 0xFFFFFF {
		return nil, fmt.Errorf("umad: destination QP %#x is wider than 24 bits", h.QPN)
	}
	if r := f.reply; r != nil {
		h.PKeyIndex = r.pkeyIndex
		if r.grh {
			h.GRHPresent, h.GID, h.FlowLabel = true, r.gid, r.flowLabel
			h.TrafficClass, h.HopLimit = r.trafficClass, r.hopLimit
		}
	}
	n := len(m)
	if rmpp {
		var err error
		if n, err = rmppLength(m); err != nil {
			return nil, err
		}
	}
	h.Length = uint32(HeaderLen + n)
	dst = slices.Grow(dst[:0], HeaderLen+n)[:HeaderLen]
	_ = h.EncodeTo(dst)
	dst = append(dst, m[:n]...)
	if rmpp {
		rmppWhole(dst[HeaderLen:])
	}
	return dst, nil
}

func isTableResp(method uint8) bool {
	switch method {
	case smp.MethodGetTableResp, smp.MethodResponse | 0x13 /* GetTraceTableResp */, smp.MethodGetMultiResp:
		return true
	}
	return false
}

// rmppLength is how many bytes of an RMPP-active SA message m to hand to
// the kernel: the 56 header bytes plus the data. A nonzero PayloadLength
// (20 SA header bytes plus the records, IBA 13.6.2.3 for a single
// segment) trims the padding of a 256-byte single MAD, so the requester
// sees exactly the records sent; zero means all of m is data.
func rmppLength(m []byte) (int, error) {
	pl := int(binary.BigEndian.Uint32(m[32:]))
	if pl == 0 {
		return len(m), nil
	}
	n := rmppHeaderEnd + pl
	if pl < saHeaderEnd-rmppHeaderEnd || n > len(m) {
		return 0, fmt.Errorf("umad: RMPP PayloadLength %d does not fit a %d-byte SA MAD (want %d..%d: the 20-byte SA header plus the records)",
			pl, len(m), saHeaderEnd-rmppHeaderEnd, len(m)-rmppHeaderEnd)
	}
	return n, nil
}

// rmppWhole sets the RMPP header of a whole SA message m (all data after
// the 56 header bytes) to what the kernel's RMPP sender expects from a
// kernel-RMPP agent: version 1, type DATA, flags Active|First|Last (the
// response time bits kept), status 0, segment 1, and PayloadLength as the
// first segment carries it on the wire: 220 per segment (SA header
// repeated in each) minus the padding of the last.
func rmppWhole(m []byte) {
	data := len(m) - saHeaderEnd
	segs := max(1, (data+saSegData-1)/saSegData)
	pad := segs*saSegData - data
	m[24] = 1 // RMPP version
	m[25] = smp.RMPPTypeData
	m[26] = m[26]&^0x7 | smp.RMPPFlagActive | smp.RMPPFlagFirst | smp.RMPPFlagLast
	m[27] = 0
	binary.BigEndian.PutUint32(m[28:], 1)
	binary.BigEndian.PutUint32(m[32:], uint32(segs*saSegPayload-pad))
}

// decodeRecord splits one record read from the umad file into its header
// and MAD (aliasing b).
func decodeRecord(b []byte) (Header, []byte, error) {
	var h Header
	if err := h.Decode(b); err != nil {
		return h, nil, err
	}
	return h, b[HeaderLen:], nil
}

// packetFrom builds the Packet a record delivers (copying the MAD out of
// the read buffer). The source LID/SL/QP come from the header; DLID is
// left 0 because the kernel does not report it.
func packetFrom(h *Header, mad []byte) transport.Packet {
	return transport.Packet{SLID: h.LID, SL: h.SL, QP: h.QPN, MAD: append([]byte(nil), mad...)}
}
