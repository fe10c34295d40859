// Package mkey holds the M_Keys ibsm protects the subnet's ports with
// (IBA vol 1 §14.2.4): which key each port should hold (one configured key,
// or a key derived per port from a secret), which key each port holds as
// far as ibsm knows, and the guid2mkey and neighbors files in the state
// directory that let a restarted ibsm find its ports again.
//
// A Ring implements mad.Keys: every SMP the SM sends carries the key of the
// port it is checked at (a CA port, or a switch's port 0), resolved from
// the SMP's directed route; the answers teach the Ring which key each port
// holds. Ports that hold a key ibsm does not know are tried with the key
// from the store, then the key the policy gives the port; one that answers
// none is reported (mad.KeyError), and becomes manageable again when its
// lease expires (its protection drops to 0 and a Get shows its key).
package mkey

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// Policy is the M_Key configuration: which key each port gets, its
// protection level and its lease period.
type Policy struct {
	// Key is the one M_Key every port gets (used when Secret is empty).
	Key uint64
	// Secret, when set, gives each port its own key, Derive(Secret, port
	// GUID).
	Secret string
	// Protect is M_KeyProtectBits (0..3): 0 lets anyone read the key
	// with a Get; 1 hides it; 2 and 3 refuse every Get without it too.
	// Sets without the key are refused at every level.
	Protect uint8
	// Lease is M_KeyLeasePeriod: how long after a refused SMP a port
	// keeps its protection if no SMP with the key arrives; then its
	// protection drops to 0. 0: never.
	Lease time.Duration
}

// Enabled reports whether the policy protects ports at all.
func (p Policy) Enabled() bool { return p.Key != 0 || p.Secret != "" }

// KeyFor returns the M_Key port portGUID should hold (0: none).
func (p Policy) KeyFor(portGUID uint64) uint64 {
	if p.Secret != "" {
		return Derive(p.Secret, portGUID)
	}
	return p.Key
}

// LeaseSeconds is Lease as PortInfo carries it (whole seconds, at most
// 65535).
func (p Policy) LeaseSeconds() uint16 {
	s := p.Lease / time.Second
	if s > 0xFFFF {
		return 0xFFFF
	}
	return uint16(s)
}

// Derive returns the M_Key of the port with GUID portGUID under secret:
// the first 64 bits of HMAC-SHA256(secret, "ibsm m_key v1" | GUID), never
// 0 (0 means "no protection").
//
// Why an HMAC: the key must be a function of the port alone, so that a
// restarted ibsm (or a standby with the same secret) recomputes every key
// without any stored state; it must not reveal the secret or other ports'
// keys to whoever learns one port's key (a host owner can read its own
// port's key at protection level 0, or sniff it on a compromised node), so
// a plain hash of the GUID, a counter or GUID XOR secret will not do; and
// HMAC is the standard keyed pseudo-random function for this (SHA-256 is in
// the standard library, fast, and truncating its output to the 64 bits of
// an M_Key keeps it pseudo-random). Guessing one port's key still takes
// 2^63 tries on average, and every wrong try is an M_Key violation.
func Derive(secret string, portGUID uint64) uint64 {
	m := hmac.New(sha256.New, []byte(secret))
	var msg [21]byte
	copy(msg[:], "ibsm m_key v1")
	binary.BigEndian.PutUint64(msg[13:], portGUID)
	m.Write(msg[:])
	sum := m.Sum(nil)
	for i := 0; i+8 <= len(sum); i += 8 {
		if k := binary.BigEndian.Uint64(sum[i:]); k != 0 {
			return k
		}
	}
	return 1
}
