package mad

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// deadHold is how long a directed route found dead stops the SMPs routed
// over it or through it after the last one it stopped: a push of blocks to
// the switches behind a cable that died under it then fails at once
// instead of waiting out one timeout per destination (the transport's
// window shrinks on them, so one after another: 12 hours for the ~1,600
// switches behind one cable of an ft3-56 pod), and a cable back up is not
// missed for long. Any answer over the route itself, and Forget, end it.
const deadHold = 2 * time.Second

// deadRoutes remembers directed routes found dead: an SMP went unanswered
// on every attempt, and a probe (Client.probe) found the shortest prefix
// of its route that does not answer. An SMP whose route is, or runs on
// through, one of them crosses the same links and switches, so it is not
// sent while the memory holds: it fails as a timeout at once. Only without
// M_Keys: a port sent the wrong key stays silent too.
type deadRoutes struct {
	n       atomic.Int32 // routes held; 0 (the usual case) skips the lookup
	mu      sync.Mutex
	until   map[string]time.Time
	probing map[string]bool
}

// ErrBehindDead is the error of an SMP not sent because its route is, or
// runs through, one found dead moments before; it is a timeout
// (errors.Is(err, transport.ErrTimeout)).
var ErrBehindDead = fmt.Errorf("%w: not sent, a route it takes went unanswered within the last %v (a cable or switch on the way is down; the next sweep re-discovers)", transport.ErrTimeout, deadHold)

// through returns the prefix of p (p itself included) held dead, if any.
func (d *deadRoutes) through(p Path) (Path, bool) {
	if d.n.Load() == 0 {
		return nil, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.throughLocked(p, time.Now())
}

func (d *deadRoutes) throughLocked(p Path, now time.Time) (Path, bool) {
	for k := 1; k <= len(p); k++ {
		until, ok := d.until[string(p[:k])]
		if !ok {
			continue
		}
		if now.Before(until) {
			// Held on while SMPs keep running into it: expiring under a
			// push, it would cost a window of timeouts and a probe again
			// (the sweep's own Forget ends it).
			d.until[string(p[:k])] = now.Add(deadHold)
			return p[:k], true
		}
		delete(d.until, string(p[:k]))
		d.n.Add(-1)
	}
	return nil, false
}

// answered frees p: something came back over it.
func (d *deadRoutes) answered(p Path) {
	if d.n.Load() == 0 {
		return
	}
	d.mu.Lock()
	if _, ok := d.until[string(p)]; ok {
		delete(d.until, string(p))
		d.n.Add(-1)
	}
	d.mu.Unlock()
}

func (d *deadRoutes) hold(p Path) {
	d.mu.Lock()
	if d.until == nil {
		d.until = map[string]time.Time{}
	}
	if _, ok := d.until[string(p)]; !ok {
		d.n.Add(1)
	}
	d.until[string(p)] = time.Now().Add(deadHold)
	d.mu.Unlock()
}

// startProbe claims the probe of route p: false if p or a prefix is held
// already, or another probe is asking p.
func (d *deadRoutes) startProbe(p Path) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, held := d.throughLocked(p, time.Now()); held || d.probing[string(p)] {
		return false
	}
	if d.probing == nil {
		d.probing = map[string]bool{}
	}
	d.probing[string(p)] = true
	return true
}

func (d *deadRoutes) endProbe(p Path) {
	d.mu.Lock()
	delete(d.probing, string(p))
	d.mu.Unlock()
}

// unanswered reports whether an SMP over a route that ended with err went
// unanswered on every attempt, so that its route is worth a probe: a
// timeout, ctx still live, no M_Keys, and not an SMP the memory stopped.
func unanswered(ctx context.Context, keys Keys, err error) bool {
	return err != nil && keys == nil && ctx.Err() == nil && errors.Is(err, transport.ErrTimeout) && !errors.Is(err, ErrBehindDead)
}

// probe follows an SMP over p that went unanswered on every attempt: it
// asks each prefix of p in turn, nearest the SM first, for its NodeInfo
// and holds the first that does not answer either (every route through it
// then fails at once). When all of them answer, p itself included, the SMP
// was lost, not the route, and nothing is held. Costs one timeout, and a
// few prompt answers, per dead route found.
//
// A prefix another probe is asking ends this one: the SMPs of a window
// that time out together behind one dead cable share their first hops,
// and one probe finds it (one whose route turns off further on, when the
// other's prefix answered, probes again on its next timeout).
func (c *Client) probe(ctx context.Context, p Path) {
	buf := make([]byte, smp.MADLen)
	for k := 1; k <= len(p); k++ {
		if !c.dead.startProbe(p[:k]) {
			return
		}
		dead, err := c.probeOne(ctx, buf, p[:k])
		c.dead.endProbe(p[:k])
		if dead || err != nil {
			return
		}
	}
}

// probeOne asks q for its NodeInfo and holds q if nothing came back.
func (c *Client) probeOne(ctx context.Context, buf []byte, q Path) (dead bool, err error) {
	if _, err := encodeDR(buf, smp.MethodGet, q, smp.AttrNodeInfo, 0, c.MKey, nil); err != nil {
		return false, err
	}
	_, err = c.T.Do(ctx, transport.Packet{DLID: smp.PermissiveLID, MAD: buf})
	switch {
	case err == nil:
		c.dead.answered(q)
		return false, nil
	case unanswered(ctx, nil, err):
		c.dead.hold(q)
		return true, nil
	}
	return false, err
}

// behindDead is the error of an SMP over p not sent because of dead.
func behindDead(attrID uint16, mod uint32, p, dead Path) error {
	return fmt.Errorf("SMP attr %#04x mod %d via DR %s (dead: %s): %w", attrID, mod, p, dead, ErrBehindDead)
}

// Forget drops every route held dead: the SM calls it when a sweep begins,
// as what it knew of the fabric's dead routes may have changed since (a
// cable back up answers nothing over a route no SMP is sent on).
func (c *Client) Forget() {
	d := &c.dead
	d.mu.Lock()
	clear(d.until)
	d.n.Store(0)
	d.mu.Unlock()
}
