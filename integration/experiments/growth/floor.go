package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/ibsim"
	"github.com/ibsm/ibsm/transport/smp"
)

// floorRate is ibsim's SMP rate for one client that does nothing else, on
// the ibsim behind sock: n SubnGet(NodeInfo) along the directed routes to
// every node 1 to fl.hops hops from the attachment (4: switches near and
// far, integration/race's floor; a bring-up's SMPs go up to 6 deep on a
// 3-level tree, and ibsim's cost grows with the hops), or (fl.hops 0) to
// every node as often as a cold bring-up addresses it (bringUpSMPs),
// fl.window of them in flight, one Send each, answers
// counted as the Conn's read loop hands them over. It is the at-floor
// rate of the issue-16 ratio (BENCHMARKS.md "ibsim's MAD window"),
// measured beside the bring-ups so that both meet the same machine load.
func floorRate(ctx context.Context, sock string, fl floorOpts) (float64, error) {
	window, n := fl.window, fl.n
	dial := func() (*ibsim.Conn, error) {
		return ibsim.Dial(ctx, ibsim.Options{SockName: sock, RecvBuffer: 8192})
	}
	c, err := dial()
	if err != nil {
		return 0, err
	}
	tr := transport.New(c, transport.Options{Window: window})
	fab, err := (&discovery.Discoverer{C: &mad.Client{T: tr}, Log: hclog.NewNullLogger()}).Run(ctx)
	tr.Close()
	if err != nil {
		return 0, fmt.Errorf("floor: discovering the paths: %w", err)
	}
	var reqs [][]byte
	var mix []int32 // request indices, each as often as its node's weight
	lids := len(fab.Nodes)
	for _, node := range fab.Nodes {
		h := len(node.Path)
		if h < 1 || (fl.hops > 0 && h > fl.hops) {
			continue
		}
		s, err := smp.NewDRGet(smp.AttrNodeInfo, 0, node.Path)
		if err != nil {
			return 0, err
		}
		b, err := s.Encode()
		if err != nil {
			return 0, err
		}
		w := 1
		if fl.hops == 0 {
			w = bringUpSMPs(node, lids)
		}
		for range w {
			mix = append(mix, int32(len(reqs)))
		}
		reqs = append(reqs, b)
	}
	if len(reqs) == 0 {
		return 0, fmt.Errorf("floor: no node 1 to %d hops from the attachment", fl.hops)
	}
	// Spread each node's turns over the run, the same order every time.
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(mix), func(i, j int) { mix[i], mix[j] = mix[j], mix[i] })
	raw, err := dial()
	if err != nil {
		return 0, err
	}
	defer raw.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	slots := make(chan struct{}, window)
	answered := make(chan struct{})
	var got, bad atomic.Int64
	go raw.Deliver(ctx, func(p transport.Packet, err error) {
		if err != nil || smp.PeekMethod(p.MAD) != smp.MethodGetResp {
			bad.Add(1)
		}
		raw.Recycle(p.MAD)
		select {
		case <-slots:
		default: // not an answer of ours (a trap): the read loop must not wait
			return
		}
		if got.Add(1) == int64(n) {
			close(answered)
		}
	})
	start := time.Now()
	m := make([]byte, smp.MADLen)
	for i := range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return 0, fmt.Errorf("floor: %d of %d answered: %w", got.Load(), n, ctx.Err())
		}
		copy(m, reqs[mix[i%len(mix)]])
		smp.PutTID(m, uint64(i+1))
		if err := raw.Send(transport.Packet{DLID: smp.PermissiveLID, MAD: m}); err != nil {
			return 0, err
		}
	}
	select {
	case <-answered:
	case <-ctx.Done():
		return 0, fmt.Errorf("floor: answers missing: %w", ctx.Err())
	}
	rate := float64(n) / time.Since(start).Seconds()
	cancel()
	if k := bad.Load(); k > 0 {
		return 0, fmt.Errorf("floor: %d of %d answers were errors", k, n)
	}
	return rate, nil
}

// bringUpSMPs is about how many SMPs a cold bring-up sends to node on a
// fabric of lids LIDs: a switch its discovery Gets (NodeInfo,
// NodeDescription, SwitchInfo, a PortInfo per port), its LinearFDBTop and
// port 0 LID Sets, an LFT block per 64 LIDs and an Armed and an Active
// Set per port; a CA its three discovery Gets, the LID Set that arms it,
// the Active Set, a P_Key block read and the distribution's PortInfo read
// (ft3-36: 322 per switch and 6 per CA, 592 k of the summary's 653 k SMPs,
// 88 % to switches; the P_Key reads are left out).
func bringUpSMPs(node *discovery.Node, lids int) int {
	ports := int(node.Info.NumPorts)
	if node.Info.NodeType != smp.NodeTypeSwitch {
		return 3 + 3*ports
	}
	return 3 + (ports + 1) + 2 + (lids/64 + 1) + 2*ports
}
