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

// deadHold is how long a directed route found dead stops every SMP routed
// over it or through it; then one SMP goes out as a trial, the others
// still stopped, and a trial that goes unanswered holds it again. A push
// of blocks to the switches behind a cable that died under it thus fails
// at once instead of waiting out one timeout per destination (the
// transport's window shrinks on them, so one after another: 12 hours for
// the ~1,600 switches behind one cable of an ft3-56 pod), and a cable back
// up is found within a hold. Any answer over the route or a longer one
// through it, and Forget, end it.
const deadHold = 2 * time.Second

// deadRoutes remembers directed routes found dead: an SMP went unanswered
// on every attempt, and a probe (Client.probe) found a port on its route
// Down. An SMP whose route is, or runs on
// through, one of them crosses the same links and switches, so it is not
// sent while the memory holds: it fails as a timeout at once.
type deadRoutes struct {
	n       atomic.Int32 // routes held; 0 (the usual case) skips the lookup
	mu      sync.Mutex
	held    map[string]*deadRoute
	probing map[string]bool
	// epoch counts Forgets: a probe of an SMP sent before the last one
	// holds nothing (the sweep that forgot may have seen the cable back).
	epoch atomic.Uint64
}

type deadRoute struct {
	found time.Time // when a probe found it dead
	until time.Time // SMPs over it are stopped until then
}

// ErrBehindDead is the error of an SMP not sent because its route is, or
// runs through, one found dead; it is a timeout (errors.Is(err,
// transport.ErrTimeout)).
var ErrBehindDead = fmt.Errorf("%w: not sent, a route it takes was found dead (a cable or switch on the way is down; the next sweep tries it again)", transport.ErrTimeout)

// through returns the prefix of p (p itself included) held dead, if any,
// and when it was found dead. A held route whose hold ran out lets this
// SMP through as its trial and stops the others for another hold.
func (d *deadRoutes) through(p Path) (Path, time.Time, bool) {
	if d.n.Load() == 0 {
		return nil, time.Time{}, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.throughLocked(p, time.Now(), true)
}

func (d *deadRoutes) throughLocked(p Path, now time.Time, trial bool) (Path, time.Time, bool) {
	for k := 1; k <= len(p); k++ {
		r := d.held[string(p[:k])]
		if r == nil {
			continue
		}
		if now.Before(r.until) {
			return p[:k], r.found, true
		}
		if trial {
			r.until = now.Add(deadHold)
		}
	}
	return nil, time.Time{}, false
}

// answered frees p and every route it runs through: something came back
// over them.
func (d *deadRoutes) answered(p Path) {
	if d.n.Load() == 0 {
		return
	}
	d.mu.Lock()
	for k := 1; k <= len(p); k++ {
		if _, ok := d.held[string(p[:k])]; ok {
			delete(d.held, string(p[:k]))
			d.n.Add(-1)
		}
	}
	d.mu.Unlock()
}

// hold holds p dead, unless a Forget came after epoch.
func (d *deadRoutes) hold(p Path, epoch uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if epoch != d.epoch.Load() {
		return
	}
	if d.held == nil {
		d.held = map[string]*deadRoute{}
	}
	now := time.Now()
	if _, ok := d.held[string(p)]; !ok {
		d.n.Add(1)
	}
	d.held[string(p)] = &deadRoute{found: now, until: now.Add(deadHold)}
}

// startProbe claims the probe of route p: false if p or a prefix is held
// already (its trial included), or another probe is asking p.
func (d *deadRoutes) startProbe(p Path) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, _, held := d.throughLocked(p, time.Now(), false); held || d.probing[string(p)] {
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

// unanswered reports whether an SMP that ended with err went unanswered on
// every attempt, so that its route is worth a probe: a timeout, ctx still
// live, and not an SMP the memory stopped. Only without M_Keys (neither
// Keys nor a static one): a port that holds another key stays silent
// too, and the switches a route only crosses do not check it.
func (c *Client) unanswered(ctx context.Context, err error) bool {
	return err != nil && c.MKey == 0 && c.Keys() == nil && ctx.Err() == nil &&
		errors.Is(err, transport.ErrTimeout) && !errors.Is(err, ErrBehindDead)
}

// probe follows an SMP over p, sent in epoch, that went unanswered on
// every attempt: it asks the switches along p, nearest the SM first, for
// the PortInfo of the port p leaves them by, and holds the route up to the
// first such port that is Down (a dead cable, or a dead switch beyond it):
// every route through it then fails at once. Nothing is held on silence
// alone, only on a switch's answer: a switch that does not answer may hold
// an M_Key this client lacks (routes through it still work, as only the
// destination checks the key), and an SMP lost on a route whose ports are
// all up was lost, not the route. The SM's own port is not asked (with it
// down nothing answers). Costs a few prompt answers per route probed.
//
// A port another probe is asking ends this one: the SMPs of a window that
// time out together behind one dead cable share their first hops, and one
// probe finds it (one whose route turns off further on, when the other's
// port was up, probes again on its next timeout).
func (c *Client) probe(ctx context.Context, p Path, epoch uint64) {
	buf := make([]byte, smp.MADLen)
	for k := 2; k <= len(p); k++ {
		if !c.dead.startProbe(p[:k]) {
			return
		}
		down, err := c.probeOne(ctx, buf, p[:k-1], p[k-1])
		c.dead.endProbe(p[:k])
		if err != nil {
			return
		}
		if down {
			c.dead.hold(p[:k], epoch)
			return
		}
	}
}

// probeOne asks the switch at route sw for the PortInfo of its port out and
// reports whether that port is Down.
func (c *Client) probeOne(ctx context.Context, buf []byte, sw Path, out uint8) (down bool, err error) {
	if _, err := encodeDR(buf, smp.MethodGet, sw, smp.AttrPortInfo, uint32(out), c.MKey, nil); err != nil {
		return false, err
	}
	resp, err := c.T.Do(ctx, transport.Packet{DLID: smp.PermissiveLID, MAD: buf})
	if err != nil {
		return false, err
	}
	c.dead.answered(sw)
	var r smp.SMP
	var pi smp.PortInfo
	if err := r.Decode(resp.MAD); err != nil {
		return false, err
	}
	if err := answerErr(&r, smp.MethodGet, sw, smp.AttrPortInfo, uint32(out)); err != nil {
		return false, err
	}
	if err := pi.Unmarshal(r.Data[:]); err != nil {
		return false, err
	}
	return pi.PortState == smp.PortStateDown, nil
}

// behindDead is the error of an SMP over p not sent because route dead
// was found dead at found.
func behindDead(attrID uint16, mod uint32, p, dead Path, found time.Time) error {
	return fmt.Errorf("SMP attr %#04x mod %d via DR %s: route %s found dead %v ago (its last port Down): %w",
		attrID, mod, p, dead, time.Since(found).Round(time.Millisecond), ErrBehindDead)
}

// Forget drops every route held dead and what probes still running would
// hold: the SM calls it when a sweep begins, as the fabric may have
// changed since (a cable back up answers nothing over a route no SMP is
// sent on).
func (c *Client) Forget() {
	d := &c.dead
	d.mu.Lock()
	clear(d.held)
	d.n.Store(0)
	d.epoch.Add(1)
	d.mu.Unlock()
}
