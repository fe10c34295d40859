package sm

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mcast"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// multicastTimeout bounds one recomputation and push started by a join or
// leave (heavy sweeps use their own context).
const multicastTimeout = 60 * time.Second

// multicast is the SM's multicast side: the SA changes the store, the SM
// asks the router for the changed groups' trees, verifies them and
// programs the MFT blocks that changed.
type multicast struct {
	router sdk.MulticastRouter
	store  *mcast.Store

	// mu serialises recomputation and programming.
	mu   sync.Mutex
	prog *program.MFTProgrammer
	fwd  *mcast.Forwarding
	topo *topology.Topology // the topology fwd was computed on
	// failed MLIDs are retried by the next heavy sweep.
	failed []uint16
	stats  MulticastStats

	// run guards the background worker started by joins and leaves.
	run     sync.Mutex
	running bool
	idle    *sync.Cond
}

// MulticastStats says what multicast programming did so far.
type MulticastStats struct {
	Recomputes   int // router calls
	Groups       int // groups routed, summed over calls
	Rejected     int // router answers the verifier refused
	BlocksSent   int64
	BlocksKept   int64
	LastDuration time.Duration
	LastError    string
}

// EnableMulticast gives the SM a multicast router and the group store the
// SA changes. Call it before Run; without it the SM programs no MFTs.
// Called again with the same store (a reload) it only swaps the router:
// the trees and what the switches hold are kept.
func (s *SM) EnableMulticast(router sdk.MulticastRouter, store *mcast.Store) {
	if cur := s.multicastState(); cur != nil && cur.store == store {
		cur.mu.Lock()
		cur.router = router
		cur.mu.Unlock()
		return
	}
	mc := &multicast{router: router, store: store, fwd: mcast.NewForwarding(),
		prog: &program.MFTProgrammer{C: s.client, Log: s.Log.Named("mft"), Parallel: s.Opts.Parallel}}
	mc.idle = sync.NewCond(&mc.run)
	s.mu.Lock()
	s.mc = mc
	s.mu.Unlock()
	store.OnChange(s.kickMulticast)
}

func (s *SM) multicastState() *multicast {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mc
}

// MulticastStore is the group store (nil when multicast is not enabled).
func (s *SM) MulticastStore() *mcast.Store {
	if mc := s.multicastState(); mc != nil {
		return mc.store
	}
	return nil
}

// MulticastStats returns the multicast counters.
func (s *SM) MulticastStats() MulticastStats {
	mc := s.multicastState()
	if mc == nil {
		return MulticastStats{}
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return mc.stats
}

// MulticastForwarding returns, by switch GUID, the MFT blocks the SM last
// computed (what it programs), for dumps and tests.
func (s *SM) MulticastForwarding() map[uint64]mcast.Blocks {
	mc := s.multicastState()
	if mc == nil {
		return nil
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	out := make(map[uint64]mcast.Blocks, len(mc.fwd.Switches))
	for g, b := range mc.fwd.Switches {
		c := mcast.Blocks{}
		for k, v := range b {
			c[k] = v
		}
		out[g] = c
	}
	return out
}

// kickMulticast starts the background worker that recomputes the groups
// joins and leaves changed, unless it runs already.
func (s *SM) kickMulticast() {
	mc := s.multicastState()
	if mc == nil {
		return
	}
	mc.run.Lock()
	defer mc.run.Unlock()
	if mc.running {
		return
	}
	mc.running = true
	go func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), multicastTimeout)
			progressed, err := s.updateMulticast(ctx, false)
			cancel()
			if err != nil {
				s.Log.Error("multicast trees not updated; the last good MFTs stay in force and the next sweep retries", "error", err)
			}
			mc.run.Lock()
			if !progressed || !mc.store.Dirty() {
				mc.running = false
				mc.idle.Broadcast()
				mc.run.Unlock()
				return
			}
			mc.run.Unlock()
		}
	}()
}

// MulticastWait blocks until no join or leave waits to be programmed (or
// the SM cannot program: not master, no plan yet).
func (s *SM) MulticastWait() {
	mc := s.multicastState()
	if mc == nil {
		return
	}
	mc.run.Lock()
	defer mc.run.Unlock()
	for mc.running {
		mc.idle.Wait()
	}
}

// multicastAfterRoute is the heavy sweep's hook: after the unicast plan is
// in force, a new topology recomputes every group; otherwise only the
// changed ones.
func (s *SM) multicastAfterRoute(ctx context.Context) {
	if s.multicastState() == nil {
		return
	}
	if _, err := s.updateMulticast(ctx, true); err != nil {
		s.Log.Error("multicast trees not updated; the last good MFTs stay in force and the next sweep retries", "error", err)
	}
}

// updateMulticast recomputes the dirty groups (every group when the
// topology changed since the last computation) and programs what changed.
// progressed is false when nothing could be done (no plan, not master).
func (s *SM) updateMulticast(ctx context.Context, sweep bool) (progressed bool, err error) {
	mc := s.multicastState()
	ap, fab := s.Applied(), s.Fabric()
	if mc == nil || ap == nil || fab == nil || !s.mayProgram() {
		return false, nil
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	start := time.Now()
	dirty := mc.store.TakeDirty()
	if sweep {
		dirty = append(dirty, mc.failed...)
		mc.failed = nil
	}
	topo := ap.Topo
	full := mc.topo != topo
	mc.store.SetLastMLID(lastMLID(fab))
	var groups []mcast.Group
	var gone []uint16
	if full {
		groups = mc.store.Groups()
		present := map[uint16]bool{}
		for _, g := range groups {
			present[g.MLID] = true
		}
		for _, b := range mc.fwd.Switches {
			for _, m := range b.MLIDs() {
				if !present[m] {
					gone = append(gone, m)
				}
			}
		}
		if mc.topo != nil {
			// Switches new to this topology (replaced, reset) get every
			// block rewritten.
			if fresh := newSwitches(mc.topo, topo); len(fresh) > 0 {
				mc.prog.Forget(fresh...)
			}
		}
	} else {
		for _, m := range slices.Compact(slices.Sorted(slices.Values(dirty))) {
			if g, ok := mc.store.ByMLID(m); ok {
				groups = append(groups, g)
			} else {
				gone = append(gone, m)
			}
		}
	}
	if len(groups) == 0 && len(gone) == 0 && !full {
		return true, nil
	}
	req, missing := mcast.Request(topo, groups)
	var trees []sdk.MulticastTree
	if len(req.Groups) > 0 {
		mc.stats.Recomputes++
		mc.stats.Groups += len(req.Groups)
		trees, err = mc.router.RouteMulticast(ctx, req)
		if err == nil {
			if verr := mcast.Verify(&req, trees); verr != nil {
				mc.stats.Rejected++
				err = verr
			}
		}
		if err != nil {
			mc.failed = append(mc.failed, dirty...)
			mc.stats.LastError = err.Error()
			return true, fmt.Errorf("multicast router: %w", err)
		}
	}
	touched := mc.fwd.Apply(topo, trees, gone)
	if full {
		touched = allSwitches(topo)
	}
	mc.topo = topo
	// Break before make: first every switch keeps only the ports both
	// the old and the new trees use (a part of the old tree: no loop),
	// then gets the new tree's. No state in between can loop.
	pst, perr := mc.prog.Apply(ctx, fab, mc.intersect(touched), touched)
	if perr == nil {
		var p2 program.MFTStats
		p2, perr = mc.prog.Apply(ctx, fab, mc.fwd.Switches, touched)
		pst.BlocksSent += p2.BlocksSent
		pst.BlocksSkipped = p2.BlocksSkipped
	}
	mc.stats.BlocksSent += pst.BlocksSent
	mc.stats.BlocksKept += pst.BlocksSkipped
	mc.stats.LastDuration = time.Since(start)
	if perr != nil {
		mc.failed = append(mc.failed, dirty...)
		mc.stats.LastError = perr.Error()
		return true, perr
	}
	mc.stats.LastError = ""
	s.Log.Debug("multicast programmed", "groups", len(req.Groups), "gone", len(gone), "members_not_in_fabric", missing,
		"blocks_sent", pst.BlocksSent, "took", time.Since(start))
	return true, nil
}

// intersect is, for the switches the programmer has written before, the
// blocks of what they hold AND what they should hold; switches never
// written are left out (they get the new blocks directly).
func (mc *multicast) intersect(switches []uint64) map[uint64]mcast.Blocks {
	out := map[uint64]mcast.Blocks{}
	for _, g := range switches {
		held := mc.prog.Known(g)
		if len(held) == 0 {
			continue
		}
		want := mc.fwd.Switches[g]
		both := mcast.Blocks{}
		for k, blk := range held {
			w := want[k]
			for i := range blk {
				blk[i] &= w[i]
			}
			both[k] = blk
		}
		out[g] = both
	}
	return out
}

// lastMLID is the highest MLID every switch's MFT holds, from their
// SwitchInfo.MulticastFDBCap (0: no switch says, no bound).
func lastMLID(fab *discovery.Fabric) uint16 {
	capacity := 0
	for _, n := range fab.Nodes {
		if n.Switch == nil || n.Switch.MulticastFDBCap == 0 {
			continue
		}
		if c := int(n.Switch.MulticastFDBCap); capacity == 0 || c < capacity {
			capacity = c
		}
	}
	if capacity == 0 {
		return 0
	}
	return uint16(min(smp.MulticastLIDBase+capacity-1, smp.MaxMulticastLID))
}

func allSwitches(t *topology.Topology) []uint64 {
	out := make([]uint64, 0, len(t.Switches()))
	for _, n := range t.Switches() {
		out = append(out, t.Nodes[n].GUID)
	}
	return out
}

// newSwitches lists the switches of now that were not in before.
func newSwitches(before, now *topology.Topology) []uint64 {
	had := map[uint64]bool{}
	for _, n := range before.Switches() {
		had[before.Nodes[n].GUID] = true
	}
	var out []uint64
	for _, g := range allSwitches(now) {
		if !had[g] {
			out = append(out, g)
		}
	}
	return out
}
