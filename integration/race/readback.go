package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// Programmed is what an SM left in the fabric, read back with our own
// SMPs: the topology, every port's LID and every switch's LFT up to the
// highest assigned LID, as a plan.Realized the analysis package measures.
// Nothing here comes from the SM that programmed it.
type Programmed struct {
	Topo *topology.Topology
	RZ   *plan.Realized
	// Unassigned counts endpoints whose LID is 0; Duplicate counts LIDs
	// claimed by more than one endpoint (a broken SM leaves either).
	Unassigned, Duplicate int
	// NotActive counts linked ports that are not ACTIVE.
	NotActive int
	SMPs      int64
	Warnings  []string
}

// ReadBack discovers the fabric behind t and reads every switch's LFT
// blocks. parallel bounds the goroutines reading LFT blocks (the transport's
// window bounds what is on the wire).
func ReadBack(ctx context.Context, t transport.Transport, parallel int) (*Programmed, error) {
	c := &mad.Client{T: t}
	fab, err := (&discovery.Discoverer{C: c, Log: hclog.NewNullLogger()}).Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("read-back discovery: %w", err)
	}
	topo, err := fab.Topology()
	if err != nil {
		return nil, fmt.Errorf("read-back topology: %w", err)
	}
	p := &Programmed{Topo: topo, SMPs: fab.SMPs, Warnings: fab.Warnings}

	eps := topo.Endpoints()
	lids := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps)), Rule: plan.DLIDBase}
	var top uint16
	for e, ep := range eps {
		n := fab.Nodes[topo.Nodes[ep.Node].GUID]
		pt := &n.Ports[ep.Port]
		if !pt.Valid || pt.Info.LID == 0 {
			p.Unassigned++
			continue
		}
		pl := plan.PortLID{Base: pt.Info.LID, LMC: pt.Info.LMC}
		if end := int(pl.Base) + pl.Count() - 1; end > plan.MaxUnicastLID {
			return nil, fmt.Errorf("read-back: %s holds LIDs %d..%d, beyond the unicast range", epName(topo, ep), pl.Base, end)
		}
		lids.Ports[e] = pl
		top = max(top, pl.Base+uint16(pl.Count())-1)
	}
	for ni := range topo.Nodes {
		for pn := 1; pn < len(topo.Nodes[ni].Ports); pn++ {
			r := topology.PortRef{Node: int32(ni), Port: uint8(pn)}
			if topo.IsLinkUp(r) && topo.Port(r).State != topology.StateActive {
				p.NotActive++
			}
		}
	}
	owner := make([]int32, int(top)+1)
	for e, pl := range lids.Ports {
		for k := 0; pl.Base != 0 && k < pl.Count(); k++ {
			l := int(pl.Base) + k
			if owner[l] != 0 {
				p.Duplicate++
				continue
			}
			owner[l] = int32(e) + 1
		}
	}
	// Unassigned endpoints and duplicates cannot be indexed by LID; the
	// analysis needs every endpoint to own a range, so they are an error
	// the caller reports instead of metrics.
	if p.Unassigned > 0 || p.Duplicate > 0 {
		return p, fmt.Errorf("read-back: %d endpoints without a LID, %d LIDs claimed twice; the SM did not finish programming", p.Unassigned, p.Duplicate)
	}

	sw := topo.Switches()
	lft := make([][]uint8, len(sw))
	back := make([]uint8, len(sw)*(int(top)+1))
	for i := range back {
		back[i] = plan.NoPort
	}
	var (
		mu    sync.Mutex
		first error
		smps  int64
	)
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for s, node := range sw {
		lft[s] = back[s*(int(top)+1) : (s+1)*(int(top)+1)]
		n := fab.Nodes[topo.Nodes[node].GUID]
		if n.Switch == nil {
			return nil, fmt.Errorf("read-back: switch 0x%016x: SwitchInfo was not read", n.Info.NodeGUID)
		}
		// Entries above LinearFDBTop are not used for forwarding: leave
		// them unrouted rather than read what the switch would ignore.
		limit := min(top, n.Switch.LinearFDBTop)
		for b := 0; b <= int(limit)/smp.LFTBlockLen; b++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(row []uint8, path mad.Path, guid uint64, b int) {
				defer wg.Done()
				defer func() { <-sem }()
				var blk smp.LFTBlock
				err := c.Get(ctx, path, smp.AttrLinearForwardingTable, uint32(b), &blk)
				mu.Lock()
				defer mu.Unlock()
				smps++
				if err != nil {
					if first == nil {
						first = fmt.Errorf("read-back: switch 0x%016x LFT block %d: %w", guid, b, err)
					}
					return
				}
				lo := b * smp.LFTBlockLen
				hi := min(lo+smp.LFTBlockLen, int(limit)+1)
				copy(row[lo:hi], blk[:hi-lo])
			}(lft[s], n.Path, n.Info.NodeGUID, b)
		}
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	p.SMPs += smps
	p.RZ = &plan.Realized{Topo: topo, LFT: lft, TopLID: top, LIDOwner: owner, LIDs: lids}
	return p, nil
}

func epName(t *topology.Topology, r topology.PortRef) string {
	return fmt.Sprintf("0x%016x/%d", t.Nodes[r.Node].GUID, r.Port)
}

// Quality is the routing quality of what an SM programmed, under one SL
// and one VL (neither SM here assigns SLs for these engines).
type Quality struct {
	CAPairs, SwitchPairs analysis.PairStats
	// Unreachable is CA→CA plus switch→switch pairs that do not arrive.
	Unreachable int64
	LoopLIDs    int
	A2AMax      int64   // all-to-all: most routes on one channel
	A2ANorm     float64 // A2AMax / (CAs-1)
	ShiftWorst  int64
	Shifts      int
	ShiftAll    bool
	EBB         float64
	// Acyclic: the channel dependency graph of all traffic on one VL has
	// no cycle (deadlock-free without VLs).
	Acyclic bool
	// Cycle is one dependency cycle when not Acyclic (out-ports).
	Cycle    []string
	AvgHops  float64
	MaxHops  int
	NotActve int
}

// QualityOptions are the seeded traffic metrics both SMs are measured with.
func QualityOptions(seed int64) analysis.Options {
	return analysis.Options{Shifts: analysis.ShiftsAuto, Bisections: analysis.DefaultBisections, Seed: seed}
}

// Measure analyses p identically for every SM.
func Measure(p *Programmed, opt analysis.Options) (*Quality, *analysis.Report, error) {
	rep, err := analysis.Analyse(p.RZ, nil, opt)
	if err != nil {
		return nil, nil, err
	}
	q := &Quality{
		CAPairs: rep.CAPairs, SwitchPairs: rep.SwitchPairs,
		Unreachable: (rep.CAPairs.Total - rep.CAPairs.Reachable) + (rep.SwitchPairs.Total - rep.SwitchPairs.Reachable),
		LoopLIDs:    rep.LoopLIDs,
		A2AMax:      rep.Load.Max, A2ANorm: rep.Load.MaxNormalized,
		AvgHops: rep.AvgHops, MaxHops: rep.MaxHops,
		Acyclic:  len(rep.VLs) > 0,
		NotActve: p.NotActive,
	}
	for _, v := range rep.VLs {
		q.Acyclic = q.Acyclic && v.Acyclic
		if !v.Acyclic && q.Cycle == nil {
			q.Cycle = v.Cycle
		}
	}
	if rep.Shift != nil {
		q.ShiftWorst, q.Shifts, q.ShiftAll = rep.Shift.Worst, rep.Shift.Shifts, rep.Shift.All
	}
	if rep.EBB != nil {
		q.EBB = rep.EBB.EBB
	}
	return q, rep, nil
}
