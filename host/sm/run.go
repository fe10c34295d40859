package sm

import (
	"context"
	"fmt"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/transport/smp"
)

const (
	defaultTrapCoalesce    = 50 * time.Millisecond
	defaultTrapQuiet       = 10 * time.Millisecond
	defaultTrapMinInterval = 500 * time.Millisecond
	defaultCAChecks        = 64
	defaultSweepInterval   = 10 * time.Second
	// trapLogBurst is how many traps per second are logged one by one; the
	// rest are counted and reported with the sweep that answers them.
	trapLogBurst = 20
)

// Run sweeps until ctx is done: a heavy sweep first, then light sweeps every
// SweepInterval. What a light sweep or a trap reports changed is
// re-discovered incrementally and re-routed; Trigger() and failures start
// a heavy sweep. Sweep failures are logged and retried.
func (s *SM) Run(ctx context.Context, trigger <-chan struct{}, onSweep func(*Report, error)) error {
	interval := s.sweepInterval()
	coalesce, minGap, quietGap := s.Opts.TrapCoalesce, s.Opts.TrapMinInterval, s.Opts.TrapQuiet
	if coalesce <= 0 {
		coalesce = defaultTrapCoalesce
	}
	if quietGap <= 0 {
		quietGap = min(defaultTrapQuiet, coalesce)
	}
	if minGap <= 0 {
		minGap = defaultTrapMinInterval
	}
	report := func(rep *Report, err error) {
		s.afterSweep(rep, err) // candidate {}: shadow, rollout health gate
		if onSweep != nil {
			onSweep(rep, err)
		}
	}
	// A transport that can end on its own (umad: the HCA was removed)
	// ends the loop with its error, so ibsm reports it and exits.
	var ended <-chan struct{}
	endable, ok := s.T.(interface {
		Done() <-chan struct{}
		Err() error
	})
	if ok {
		ended = endable.Done()
	}
	heavy := true
	tick := time.NewTicker(interval)
	defer tick.Stop()
	// The election's clock: a standby polls its master; a master checks
	// the SMs it knows and, every PollRetries ticks, reads every end
	// port's IsSM bit to find new ones (an SM that started without a trap
	// 144 reaching us); a second master after a merge comes with a link
	// up, which the light sweep turns into a discovery.
	pollEvery, peerTicks := s.pollSettings()
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	s.learnOwnPort(ctx)
	polls := 0
	lookAgain := false // newSMs gave way to a trap
	// elect: an SM trap asked for an election sweep within the last poll
	// interval; lastElect: when a trap last caused one.
	elect, lastElect := false, time.Time{}
	defer s.notices.start()()
	traps := s.demux(ctx)
	trapsWaiting := func() bool { return len(traps) > 0 }

	// Traps wait in pend until the coalescing timer fires; firstTrap is
	// when the first of them came.
	var (
		pend      trapBatch
		timer     *time.Timer
		timerC    <-chan time.Time
		firstTrap time.Time
		lastTrap  time.Time
		logBudget = newLogBudget(trapLogBurst)
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if heavy {
			rep, err := s.HeavySweep(ctx)
			report(rep, err)
			heavy = err != nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ended:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("the fabric transport ended: %w", endable.Err())
		case <-trigger:
			heavy = true
			if d := s.sweepInterval(); d != interval {
				interval = d
				tick.Reset(d)
			}
			if d, n := s.pollSettings(); d != pollEvery {
				pollEvery, peerTicks = d, n
				poll.Reset(pollEvery)
			} else {
				peerTicks = n
			}
		case <-s.elect.wake:
			heavy = true // handed mastership, or told to discover
		case <-poll.C:
			switch s.State() {
			case smp.SMStateStandby:
				heavy = heavy || s.pollMaster(ctx)
			case smp.SMStateMaster:
				polls++
				found := false
				if polls%peerTicks == 0 || lookAgain {
					var done bool
					found, done = s.newSMs(ctx, trapsWaiting)
					lookAgain = !done // a trap came first: the next tick looks
				}
				if found || elect || s.peersChanged(ctx) {
					heavy = true
				}
			}
			elect = false
		case pkt, ok := <-traps:
			if !ok {
				traps = nil // transport closed: stop selecting on it
				continue
			}
			if !s.mayProgram() {
				continue // traps are the master's; a standby writes nothing, not even TrapRepress
			}
			sweep := s.handleTrap(pkt, &pend, logBudget)
			if lid, ok := smTrapLID(pkt); ok {
				// An SM port came up or an SM's priority changed: know
				// it from now on (peersChanged, checkAlone) and elect at
				// once if it is master or due a handover, at most once
				// per poll interval (else at the next poll tick).
				if s.learnSM(ctx, lid) {
					if time.Since(lastElect) >= pollEvery {
						heavy, lastElect = true, time.Now()
					} else {
						elect = true
					}
				}
			}
			if !sweep {
				continue
			}
			// Sweep once the traps went quiet (a cable's two ends trap
			// together; the sweep re-reads both ends anyway), at the
			// latest coalesce after the first.
			now := time.Now()
			if timer == nil {
				firstTrap = now
			}
			due := now.Add(quietGap)
			if last := firstTrap.Add(coalesce); due.After(last) {
				due = last
			}
			if gap := lastTrap.Add(minGap); gap.After(due) {
				due = gap // rate limit: a flapping link re-routes at most every minGap
			}
			if timer == nil {
				timer = time.NewTimer(time.Until(due))
				timerC = timer.C
			} else {
				timer.Reset(time.Until(due))
			}
		case <-timerC:
			timer, timerC = nil, nil
			b := pend
			pend = trapBatch{}
			lastTrap = time.Now()
			if heavy || !s.mayProgram() {
				continue // a heavy sweep is due anyway
			}
			rep, err := s.trapSweep(ctx, b, logBudget.take())
			report(rep, err)
			heavy = err != nil
		case <-tick.C:
			if heavy || !s.mayProgram() {
				continue
			}
			// Another master may have started since the last check:
			// what it programmed would look like drift to repair.
			if s.peersChanged(ctx) {
				heavy = true
				continue
			}
			heavy = s.periodic(ctx, report, trapsWaiting)
			if !heavy {
				s.rolloutTick(ctx) // candidate {}: requests, stages
			}
		}
	}
}

// periodic is one tick of the sweep loop: the light sweep, the incremental
// sweep it calls for, then the audit over the fabric as it now stands (so
// a re-route after a link loss is not delayed by reads over the dead
// link), and the incremental sweep of switches the audit found reset. It
// reports whether a heavy sweep is due. The audit gives way when
// trapsWaiting says a trap came (the rest of its share waits a tick).
func (s *SM) periodic(ctx context.Context, report func(*Report, error), trapsWaiting func() bool) bool {
	t0, st0 := time.Now(), s.T.Stats()
	ch, full, err := s.pollAndCheck(ctx)
	s.observeLight(time.Since(t0), st0, err)
	if err != nil {
		s.Log.Warn("light sweep failed", "error", err)
	}
	if full != "" {
		s.Log.Info("light sweep: full re-discovery", "reason", full)
		return true
	}
	if !ch.Empty() {
		rep, err := s.IncrementalSweep(ctx, ch)
		report(rep, err)
		if err != nil {
			return true
		}
	}
	if reset := s.audit(ctx, s.Fabric(), auditChunk, trapsWaiting); len(reset) > 0 {
		rep, err := s.IncrementalSweep(ctx, discovery.Changes{Ports: reset})
		report(rep, err)
		return err != nil
	}
	return false
}
