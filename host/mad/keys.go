package mad

import (
	"context"
	"errors"
	"fmt"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// KeySetting is a port's M_Key fields (PortInfo M_Key, M_KeyProtectBits,
// M_KeyLeasePeriod): what it holds, or what the SM wants it to hold.
type KeySetting struct {
	Key     uint64
	Protect uint8  // 0..3
	Lease   uint16 // seconds; 0: the lease never expires
}

// Keys supplies the M_Key of every SMP a Client sends (the key of the port
// the SMP is checked at: the CA port it arrives on, or a switch's port 0)
// and learns from the answers. host/mkey implements it.
type Keys interface {
	// Candidates returns the M_Keys to try for an SMP to the node at path,
	// best first (never empty), and whether the port at the end of path is
	// known (false: the keys are guesses, e.g. a route no port has
	// answered on yet). The Client sends the next key only when the
	// previous got no answer: a port drops an SMP that fails its M_Key
	// check.
	Candidates(path Path) (keys []uint64, known bool)
	// Observe is told of every answer: the request's method (a Set is
	// answered with GetResp) and the key it carried, and the response. It returns true when the answer shows that the key
	// is not the port's (a PortInfo Get at protection level 1 hides the
	// M_Key from a wrong key but is answered), so that the Client asks
	// again with the next candidate. It must not keep resp, which a
	// batch reuses for the next answer.
	Observe(path Path, method uint8, key uint64, resp *smp.SMP) (wrongKey bool)
	// Want returns the M_Key settings the SM wants on the port with this
	// GUID (a switch: its port GUID) and whether it manages M_Keys at
	// all.
	Want(portGUID uint64) (KeySetting, bool)
	// Holds reports whether the port, as it last answered, holds Want.
	Holds(portGUID uint64) bool
}

// WithKeys returns t carrying k: every Client built on the result puts
// k's M_Keys in its SMPs (the sweep loop builds its Clients itself, so the
// keys travel with the transport). Everything else is t's.
func WithKeys(t transport.Transport, k Keys) transport.Transport {
	if k == nil {
		return t
	}
	return &keyed{Transport: t, keys: k}
}

// KeyedTransport is a Transport made by WithKeys.
type KeyedTransport interface {
	transport.Transport
	MKeys() Keys
}

type keyed struct {
	transport.Transport
	keys Keys
}

func (k *keyed) MKeys() Keys { return k.keys }

// Done and Err pass on those of a transport that can end on its own
// (umad: the HCA was removed); Done is nil (never ready) otherwise.
func (k *keyed) Done() <-chan struct{} {
	if e, ok := k.Transport.(interface{ Done() <-chan struct{} }); ok {
		return e.Done()
	}
	return nil
}

func (k *keyed) Err() error {
	if e, ok := k.Transport.(interface{ Err() error }); ok {
		return e.Err()
	}
	return nil
}

// Unwrap returns the transport under the keys.
func (k *keyed) Unwrap() transport.Transport { return k.Transport }

// Keys returns the M_Keys the Client uses: its own, else its transport's
// (nil: M_Keys are not managed; every SMP carries Client.MKey).
func (c *Client) Keys() Keys {
	if c.K != nil {
		return c.K
	}
	if kt, ok := c.T.(KeyedTransport); ok {
		return kt.MKeys()
	}
	return nil
}

// keyAttempts sends send(key) with each candidate key in turn until one is
// answered (or the answer shows the key is right), and returns that answer.
func (c *Client) keyAttempts(ctx context.Context, method uint8, path Path, send func(key uint64) (*smp.SMP, error)) (*smp.SMP, error) {
	k := c.Keys()
	if k == nil {
		return send(c.MKey)
	}
	cands, known := k.Candidates(path)
	if len(cands) == 0 {
		cands = []uint64{c.MKey}
	}
	var (
		first *smp.SMP
		err   error
	)
	for i, key := range cands {
		var r *smp.SMP
		r, err = send(key)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			continue // dropped: perhaps the wrong key
		}
		wrong := k.Observe(path, method, key, r)
		if first == nil {
			first = r
		}
		if !wrong || i == len(cands)-1 {
			if wrong {
				return first, nil // every key hidden from: keep the first answer
			}
			return r, nil
		}
	}
	if first != nil {
		return first, nil
	}
	if errors.Is(err, transport.ErrTimeout) {
		return nil, &KeyError{Path: path, Tried: len(cands), Known: known, Err: err}
	}
	return nil, err
}

// KeyError is an SMP that got no answer with any M_Key the SM knows for
// its destination: the port drops it if it holds another key (set by
// another SM, or changed behind this one's back), or the MAD was lost.
type KeyError struct {
	Path  Path
	Tried int
	// Known is false when the SM did not know which port the route leads
	// to, so the keys tried were guesses.
	Known bool
	Err   error
}

func (e *KeyError) Error() string {
	if !e.Known {
		return fmt.Sprintf("%v (the port at the end of this route is not known yet, so its M_Key could only be guessed: a port protected at level 2 or 3 answers nothing without its key; ibsm's state directory (mkey/guid2mkey, mkey/neighbors) lets it find the key, or the port's M_Key lease expires)", e.Err)
	}
	return fmt.Sprintf("%v (no answer with any of the %d M_Key(s) known for this port: if it holds a key set by another SM, add that key to guid2mkey in the state directory, or wait for the port's M_Key lease to expire)", e.Err, e.Tried)
}

func (e *KeyError) Unwrap() error { return e.Err }
