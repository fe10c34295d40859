package mad

import (
	"context"
	"errors"
	"sync"

	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// Req is one SMP of SetAll or GetAll: Val is what a Set writes; Out, if
// set, receives the answer's attribute before done hears of it.
type Req struct {
	Path Path
	Attr uint16
	Mod  uint32
	Val  Attribute
	Out  Attribute
}

// batchDoer is a transport that keeps many requests in flight from one
// goroutine (transport.Dispatcher.DoEach).
type batchDoer interface {
	DoEach(ctx context.Context, first int, n func() int, build func(i int, buf []byte) (transport.Packet, error), done func(i int, resp transport.Packet, err error)) int
}

// SetAll sends n Sets, the i-th as req(i) describes it, and calls done(i,
// err) as each ends, one call at a time. Each ends as Set would end, but
// over a transport with DoAll they travel without a goroutine each: a
// sweep's LFT blocks, millions on the largest fabrics. req is called once per
// SMP, from one goroutine at a time. With M_Keys an SMP goes out with its
// destination's best candidate key; one that gets no answer with it while
// there are others, or whose answer shows the key was wrong, is sent again
// through Set, which tries them all; a PortInfo Set that changed the
// port's M_Key is followed by Set's Get with the new key (see stopLease)
// before SetAll returns.
func (c *Client) SetAll(ctx context.Context, n int, req func(i int) Req, done func(i int, err error)) {
	c.all(ctx, smp.MethodSet, func() int { return n }, req, done)
}

// SetEach is SetAll over a list whose length n() may change while it
// runs: every i below n() is sent; a caller that lowers n to the number
// it was asked for stops it (Sets in flight still end as SetAll's).
func (c *Client) SetEach(ctx context.Context, n func() int, req func(i int) Req, done func(i int, err error)) {
	c.all(ctx, smp.MethodSet, n, req, done)
}

// GetAll is SetAll's Gets: req(i).Out receives each answer.
func (c *Client) GetAll(ctx context.Context, n int, req func(i int) Req, done func(i int, err error)) {
	c.all(ctx, smp.MethodGet, func() int { return n }, req, done)
}

// GetEach is GetAll over a list that grows while it runs: every i below
// n() is asked, and done may raise n (a walk whose answers tell it what to
// read next: discovery). n is called from one goroutine at a time, done
// may be running meanwhile. GetEach returns once every Get below n() has
// ended.
func (c *Client) GetEach(ctx context.Context, n func() int, req func(i int) Req, done func(i int, err error)) {
	c.all(ctx, smp.MethodGet, n, req, done)
}

func (c *Client) all(ctx context.Context, method uint8, n func() int, set func(i int) Req, done func(i int, err error)) {
	var mu sync.Mutex
	report := func(i int, err error) {
		mu.Lock()
		defer mu.Unlock()
		done(i, err)
	}
	slow := fanout.New(0)
	viaSet := func(i int, r Req) {
		slow.Go(func() error {
			report(i, c.do(ctx, method, r.Path, r.Attr, r.Mod, r.Val, r.Out))
			return nil
		})
	}
	t := c.T
	if u, ok := t.(interface{ Unwrap() transport.Transport }); ok {
		t = u.Unwrap() // WithKeys: the keys come from c.Keys
	}
	bd, ok := t.(batchDoer)
	if !ok {
		for from := 0; from < n(); {
			for end := n(); from < end; from++ {
				viaSet(from, set(from))
			}
			_ = slow.Wait("") // every error went to done, which may add more
		}
		return
	}
	keys := c.Keys()
	epoch := c.dead.epoch.Load() // a Forget under the batch: its probes hold nothing
	// Each SMP in flight and the keys it carried (DoAll keeps at most a
	// window's worth), so set is called once per SMP.
	var inFlight slots[sent]
	// done runs on DoAll's goroutine one call at a time, so one SMP
	// holds every answer in turn (Observe keeps none): one allocation
	// per batch, not per SMP.
	m := new(smp.SMP)
	build := func(i int, buf []byte) (transport.Packet, error) {
		r := set(i)
		key, cands, known := c.MKey, 1, false
		if keys != nil {
			var ks []uint64
			ks, known = keys.Candidates(r.Path)
			key, cands = ks[0], len(ks)
		}
		if dead, found, ok := c.dead.through(r.Path); ok {
			inFlight.put(i, sent{r, key, 0, 1, known})
			return transport.Packet{}, behindDead(r.Attr, r.Mod, r.Path, dead, found)
		}
		payloadKey, err := encodeDR(buf, method, r.Path, r.Attr, r.Mod, key, r.Val)
		inFlight.put(i, sent{r, key, payloadKey, cands, known})
		if err != nil {
			return transport.Packet{}, err
		}
		return transport.Packet{DLID: smp.PermissiveLID, MAD: buf}, nil
	}
	answer := func(i int, resp transport.Packet, err error) {
		s := inFlight.take(i)
		r := s.r
		switch {
		case err == nil:
			c.dead.answered(r.Path)
		case c.unanswered(ctx, err):
			go c.probe(ctx, r.Path, epoch) // the batch need not wait out its timeout too
		}
		if errors.Is(err, ErrBehindDead) {
			report(i, err) // behindDead named the SMP
			return
		}
		if err != nil {
			if s.cands > 1 && ctx.Err() == nil && errors.Is(err, transport.ErrTimeout) {
				viaSet(i, r) // perhaps the wrong key: Set tries the others
				return
			}
			err = sendErr(r.Attr, r.Mod, r.Path, err)
			if keys != nil && ctx.Err() == nil && errors.Is(err, transport.ErrTimeout) {
				// As Set says it: perhaps the port holds another key.
				err = &KeyError{Path: r.Path, Tried: s.cands, Known: s.known, Err: err}
			}
			report(i, err)
			return
		}
		if err := m.Decode(resp.MAD); err != nil {
			report(i, malformed(r.Attr, r.Path, err))
			return
		}
		if keys != nil && keys.Observe(r.Path, method, s.key, m) && s.cands > 1 {
			viaSet(i, r)
			return
		}
		err = answerErr(m, method, r.Path, r.Attr, r.Mod)
		if err == nil && r.Out != nil {
			err = unmarshal(r.Out, m, r.Attr, r.Path)
		}
		if err != nil || !keyChanged(keys, method, r.Attr, s.key, s.payloadKey, m) {
			report(i, err)
			return
		}
		slow.Go(func() error {
			c.stopLease(ctx, keys, r.Path, r.Mod, s.payloadKey)
			report(i, nil)
			return nil
		})
	}
	// The SMPs sent again through Set end on their own goroutines after
	// DoEach returned, and their done may add more.
	for from := 0; from < n(); {
		if ctx.Err() != nil {
			for end := n(); from < end; from++ {
				r := set(from)
				report(from, sendErr(r.Attr, r.Mod, r.Path, ctx.Err()))
			}
		} else {
			from = bd.DoEach(ctx, from, n, build, answer)
		}
		_ = slow.Wait("") // every error went to done
	}
}

// sent is an SMP of a batch in flight and the keys it carried.
type sent struct {
	r               Req
	key, payloadKey uint64
	cands           int
	known           bool // the port at the end of the path answered before
}

// slotsLen is how many of a batch's SMPs slots holds without its map:
// DoEach keeps a window's worth in flight, all but a late one (retrying
// towards a slow or dead port) among the last few hundred indices.
const slotsLen = 1024

// slots keeps the SMPs of a batch in flight by index: in a ring where
// index i's slot (i mod slotsLen) is free, else in a map. A map alone
// cost an insert, a lookup and a delete per SMP (0.4 CPU-s of the 3.5 M
// SMPs of an ft3-56 bring-up).
type slots[T any] struct {
	idx  []int // the index in each ring slot, -1 when free
	val  []T
	over map[int]T
}

func (s *slots[T]) put(i int, v T) {
	if s.idx == nil {
		s.idx, s.val = make([]int, slotsLen), make([]T, slotsLen)
		for j := range s.idx {
			s.idx[j] = -1
		}
	}
	if j := i % slotsLen; s.idx[j] < 0 {
		s.idx[j], s.val[j] = i, v
		return
	}
	if s.over == nil {
		s.over = map[int]T{}
	}
	s.over[i] = v
}

// take returns and forgets what put(i) kept (the zero T if nothing).
func (s *slots[T]) take(i int) T {
	var zero T
	if j := i % slotsLen; s.idx != nil && s.idx[j] == i {
		v := s.val[j]
		s.idx[j], s.val[j] = -1, zero
		return v
	}
	v := s.over[i]
	delete(s.over, i)
	return v
}
