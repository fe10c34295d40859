// Package mad is the host's typed view of the fabric: directed-route SMP Get
// and Set of one attribute, with status checking, over a transport.Transport.
// Discovery, the programmer and the sweep loop all go through it, so SMP
// counting and error wording live in one place.
package mad

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// Attribute is an SMP attribute payload.
type Attribute interface {
	MarshalTo(b []byte) error
	Unmarshal(b []byte) error
}

// Client sends directed-route SMPs.
type Client struct {
	T transport.Transport
	// MKey is sent in every SMP when there are no Keys (0 when M_Key
	// protection is not used).
	MKey uint64
	// K, when set, supplies each SMP's M_Key by destination; nil: the
	// transport's (WithKeys), if any.
	K Keys

	dead deadRoutes
}

// Path is a directed route: the out-port at each hop, starting with the
// SM's own port. An empty path addresses the SM's own node.
type Path []uint8

func (p Path) String() string {
	s := "["
	for i, h := range p {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(h)
	}
	return s + "]"
}

// Extend returns a new path with one more hop.
func (p Path) Extend(port uint8) Path {
	q := make(Path, len(p)+1)
	copy(q, p)
	q[len(p)] = port
	return q
}

// Error is an SMP that came back with a non-zero status.
type Error struct {
	Method uint8
	Attr   uint16
	Mod    uint32
	Path   Path
	Status uint16
}

func (e *Error) Error() string {
	what := "status"
	switch e.Status & smp.StatusCodeMask {
	case smp.StatusBadVersion:
		what = "bad version"
	case smp.StatusUnsupportedMethod:
		what = "unsupported method"
	case smp.StatusUnsupportedMethodAttr:
		what = "unsupported method/attribute"
	case smp.StatusInvalidField:
		what = "invalid attribute or modifier"
	}
	return fmt.Sprintf("SMP method %#02x attr %#04x mod %d via DR %s: %s (status %#04x)", e.Method, e.Attr, e.Mod, e.Path, what, e.Status)
}

func (c *Client) do(ctx context.Context, method uint8, path Path, attrID uint16, mod uint32, a Attribute, out Attribute) error {
	if len(path) > smp.MaxHops {
		return fmt.Errorf("DR path %s longer than %d hops", path, smp.MaxHops)
	}
	if dead, found, ok := c.dead.through(path); ok {
		return behindDead(attrID, mod, path, dead, found)
	}
	epoch := c.dead.epoch.Load()
	var sentKey, setKey uint64 // the key the answered SMP carried; a PortInfo Set's new M_Key
	send := func(method uint8, key uint64, a Attribute) (*smp.SMP, error) {
		sentKey = key
		buf := make([]byte, smp.MADLen)
		payloadKey, err := encodeDR(buf, method, path, attrID, mod, key, a)
		if err != nil {
			return nil, err
		}
		if a != nil {
			setKey = payloadKey
		}
		resp, err := c.T.Do(ctx, transport.Packet{DLID: smp.PermissiveLID, MAD: buf})
		if err != nil {
			return nil, sendErr(attrID, mod, path, err)
		}
		r := new(smp.SMP)
		if err := r.Decode(resp.MAD); err != nil {
			return nil, malformed(attrID, path, err)
		}
		return r, nil
	}
	r, err := c.keyAttempts(ctx, method, path, func(key uint64) (*smp.SMP, error) { return send(method, key, a) })
	switch {
	case err == nil:
		c.dead.answered(path)
	case c.unanswered(ctx, err):
		go c.probe(ctx, path, epoch) // the caller need not wait out its timeout too
	}
	if err != nil {
		return err
	}
	if err := answerErr(r, method, path, attrID, mod); err != nil {
		return err
	}
	if k := c.Keys(); keyChanged(k, method, attrID, sentKey, setKey, r) {
		c.stopLease(ctx, k, path, mod, setKey)
	}
	if out != nil {
		return unmarshal(out, r, attrID, path)
	}
	return nil
}

// unmarshal reads r's attribute into out.
func unmarshal(out Attribute, r *smp.SMP, attrID uint16, path Path) error {
	if err := out.Unmarshal(r.Data[:]); err != nil {
		return fmt.Errorf("SMP attr %#04x via DR %s: %w", attrID, path, err)
	}
	return nil
}

// keyChanged reports whether r answers a Set that changed the M_Key of
// the port that checks it: r shows the new key setKey, which the Set did
// not carry (sentKey). A Set of a switch's external port shows port 0's,
// unchanged.
func keyChanged(k Keys, method uint8, attrID uint16, sentKey, setKey uint64, r *smp.SMP) bool {
	return k != nil && method == smp.MethodSet && attrID == smp.AttrPortInfo && setKey != sentKey && binary.BigEndian.Uint64(r.Data[:8]) == setKey
}

// stopLease follows a Set that changed a port's M_Key to key: if the
// Set's first answer came late, the transport's retry (the same bytes,
// the old key) reached the port after the change, failed the M_Key check
// and started the lease timer; nothing else may reach the port before the
// lease ends and the protection drops. One Get with the new key, sent
// after any such retry, passes the check and stops the timer.
func (c *Client) stopLease(ctx context.Context, k Keys, path Path, mod uint32, key uint64) {
	buf := make([]byte, smp.MADLen)
	if _, err := encodeDR(buf, smp.MethodGet, path, smp.AttrPortInfo, mod, key, nil); err != nil {
		return
	}
	resp, err := c.T.Do(ctx, transport.Packet{DLID: smp.PermissiveLID, MAD: buf})
	if err != nil {
		return
	}
	var g smp.SMP
	if g.Decode(resp.MAD) == nil {
		k.Observe(path, smp.MethodGet, key, &g)
	}
}

// encodeDR writes a directed-route SMP into buf (smp.MADLen bytes) and
// returns the first 8 bytes of a's payload (a PortInfo's M_Key). a is
// marshalled straight into buf's data field: through a copy in an smp.SMP
// the interface call moved that SMP to the heap, one allocation per SMP.
func encodeDR(buf []byte, method uint8, path Path, attrID uint16, mod uint32, key uint64, a Attribute) (uint64, error) {
	s := smp.SMP{
		MgmtClass:    smp.ClassSMPDR,
		ClassVersion: smp.SMPClassVersion,
		Method:       method,
		HopCount:     uint8(len(path)),
		AttrID:       attrID,
		AttrMod:      mod,
		MKey:         key,
		DrSLID:       smp.PermissiveLID,
		DrDLID:       smp.PermissiveLID,
	}
	copy(s.InitialPath[1:], path)
	if err := s.EncodeTo(buf); err != nil {
		return 0, err
	}
	if a == nil {
		return 0, nil
	}
	data := buf[smp.DataOffset : smp.DataOffset+smp.DataLen] // zeroed by EncodeTo
	if err := a.MarshalTo(data); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(data[:8]), nil
}

// sendErr is the error of an SMP the transport got no answer to.
func sendErr(attrID uint16, mod uint32, path Path, err error) error {
	return fmt.Errorf("SMP attr %#04x mod %d via DR %s: %w", attrID, mod, path, err)
}

func malformed(attrID uint16, path Path, err error) error {
	return fmt.Errorf("SMP attr %#04x via DR %s: malformed response: %w", attrID, path, err)
}

// answerErr is the error an answer r to an SMP reports: a non-zero status,
// or another attribute than asked.
func answerErr(r *smp.SMP, method uint8, path Path, attrID uint16, mod uint32) error {
	if r.Status&smp.StatusCodeMask != 0 {
		return &Error{Method: method, Attr: attrID, Mod: mod, Path: path, Status: r.Status}
	}
	if r.AttrID != attrID {
		return fmt.Errorf("SMP via DR %s: response carries attribute %#04x, asked %#04x", path, r.AttrID, attrID)
	}
	return nil
}

// Get reads attribute attrID (modifier mod) of the node at path into out.
func (c *Client) Get(ctx context.Context, path Path, attrID uint16, mod uint32, out Attribute) error {
	return c.do(ctx, smp.MethodGet, path, attrID, mod, nil, out)
}

// Set writes a and reads the node's answer back into out (may be nil).
func (c *Client) Set(ctx context.Context, path Path, attrID uint16, mod uint32, a Attribute, out Attribute) error {
	return c.do(ctx, smp.MethodSet, path, attrID, mod, a, out)
}
