package main

import (
	"context"
	"fmt"
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
// every node 1 to 4 hops from the attachment (switches near and far, as a
// sweep reaches them), window of them in flight, one Send each, answers
// counted as the Conn's read loop hands them over. It is the at-floor
// rate of the issue-16 ratio (BENCHMARKS.md "ibsim's MAD window"),
// measured beside the bring-ups so that both meet the same machine load.
func floorRate(ctx context.Context, sock string, window, n int) (float64, error) {
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
	for _, node := range fab.Nodes {
		if h := len(node.Path); h < 1 || h > 4 {
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
		reqs = append(reqs, b)
	}
	if len(reqs) == 0 {
		return 0, fmt.Errorf("floor: no node 1 to 4 hops from the attachment")
	}
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
		copy(m, reqs[i%len(reqs)])
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
