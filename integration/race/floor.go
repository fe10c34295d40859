package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// FloorPoint is the sustained rate at one window of outstanding SMPs.
type FloorPoint struct {
	Window int
	MADs   int
	Rate   float64 // completed SMPs per second
}

// Floor is the fastest SMP rate ibsim sustained for one client: the lower
// bound on the wire time of any SM that sends a given number of SMPs.
type Floor struct {
	Best   FloorPoint
	Points []FloorPoint
	// Hops are the DR path lengths cycled through (1..4 where the fabric
	// has nodes that far).
	Hops []int
}

// Seconds is the time n SMPs need at the floor rate.
func (f *Floor) Seconds(n int64) float64 {
	if f == nil || f.Best.Rate == 0 {
		return 0
	}
	return float64(n) / f.Best.Rate
}

// floorPaths discovers the fabric through t and picks up to perHop DR
// paths of each length 1..4, so the probe resembles an SM's traffic
// (switches near and far) without knowing the topology in advance.
func floorPaths(ctx context.Context, t transport.Transport, perHop int) ([]mad.Path, []int, error) {
	fab, err := (&discovery.Discoverer{C: &mad.Client{T: t}, Log: hclog.NewNullLogger()}).Run(ctx)
	if err != nil {
		return nil, nil, err
	}
	byHop := map[int][]mad.Path{}
	for _, n := range fab.Nodes {
		h := len(n.Path)
		if h >= 1 && h <= 4 && len(byHop[h]) < perHop {
			byHop[h] = append(byHop[h], n.Path)
		}
	}
	var hops []int
	for h := range byHop {
		hops = append(hops, h)
	}
	sort.Ints(hops)
	// Interleave the lengths so every window sees the same mix.
	var paths []mad.Path
	for i := 0; i < perHop; i++ {
		for _, h := range hops {
			if i < len(byHop[h]) {
				paths = append(paths, byHop[h][i])
			}
		}
	}
	if len(paths) == 0 {
		return nil, nil, errors.New("floor: the fabric has no node 1..4 hops away")
	}
	return paths, hops, nil
}

// MeasureFloor pipelines SubnGet(NodeInfo) over conn, which must be a raw
// attachment nothing else reads: for each window it keeps that many SMPs
// outstanding until perWindow have completed, and reports the completion
// rate. paths are cycled. Bypassing the dispatcher keeps our own overhead
// (TID map, timers) out of the figure; ibsim never drops, so a lost
// response is an error, not a retry.
func MeasureFloor(ctx context.Context, conn transport.Conn, paths []mad.Path, windows []int, perWindow int) ([]FloorPoint, error) {
	reqs := make([][]byte, len(paths))
	for i, p := range paths {
		s, err := smp.NewDRGet(smp.AttrNodeInfo, 0, p)
		if err != nil {
			return nil, err
		}
		b, err := s.Encode()
		if err != nil {
			return nil, err
		}
		reqs[i] = b
	}
	var tid uint64
	var out []FloorPoint
	for _, w := range windows {
		pt, err := floorWindow(ctx, conn, reqs, w, perWindow, &tid)
		if err != nil {
			return out, fmt.Errorf("floor at window %d: %w", w, err)
		}
		out = append(out, pt)
	}
	return out, nil
}

func floorWindow(ctx context.Context, conn transport.Conn, reqs [][]byte, window, n int, tid *uint64) (FloorPoint, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	slots := make(chan struct{}, window)
	var done atomic.Int64
	recvErr := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			p, err := conn.Recv(ctx)
			if err != nil {
				recvErr <- fmt.Errorf("after %d responses: %w", i, err)
				return
			}
			if smp.PeekMethod(p.MAD) != smp.MethodGetResp {
				recvErr <- fmt.Errorf("unexpected method %#02x in response %d", smp.PeekMethod(p.MAD), i)
				return
			}
			done.Add(1)
			<-slots
		}
		recvErr <- nil
	}()
	start := time.Now()
	for i := 0; i < n; i++ {
		select {
		case slots <- struct{}{}:
		case err := <-recvErr:
			return FloorPoint{}, err
		case <-ctx.Done():
			return FloorPoint{}, ctx.Err()
		}
		m := make([]byte, len(reqs[0]))
		copy(m, reqs[i%len(reqs)])
		*tid++
		smp.PutTID(m, *tid)
		if err := conn.Send(transport.Packet{DLID: smp.PermissiveLID, MAD: m}); err != nil {
			return FloorPoint{}, err
		}
	}
	if err := <-recvErr; err != nil {
		return FloorPoint{}, err
	}
	el := time.Since(start)
	return FloorPoint{Window: window, MADs: n, Rate: float64(done.Load()) / el.Seconds()}, nil
}

// Best returns the fastest point.
func Best(pts []FloorPoint) FloorPoint {
	var b FloorPoint
	for _, p := range pts {
		if p.Rate > b.Rate {
			b = p
		}
	}
	return b
}
