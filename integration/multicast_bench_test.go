package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestMulticastScale measures multicast on a large embedded fat tree
// (IBSM_MCAST_BENCH=ft3 for ft3-36, 11,664 CAs; =ft2 for ft2-36, 648):
// every CA joins one of 8 groups (one per would-be partition, all in the
// default P_Key: the 8 groups of 1/8 of the CAs each, not 8 P_Keys), the
// SA latency of each join, the time until the MFTs hold all of it, the
// router calls and MFT blocks that took; then the cost of one more join
// (latency to programmed, blocks sent). Numbers go to BENCHMARKS.md
// "Multicast".
func TestMulticastScale(t *testing.T) {
	which := os.Getenv("IBSM_MCAST_BENCH")
	args := map[string][]string{
		"ft3": {"fat-tree", "--radix", "36", "--levels", "3"},
		"ft2": {"fat-tree", "--radix", "36", "--levels", "2"},
	}[which]
	if args == nil {
		t.Skip("set IBSM_MCAST_BENCH=ft3 (11,664 CAs) or ft2 (648 CAs)")
	}
	dir := t.TempDir()
	net := filepath.Join(dir, "fabric.net")
	f, err := os.Create(net)
	if err != nil {
		t.Fatal(err)
	}
	if err := topogen.Run(args, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t0 := time.Now()
	a := start(t, mcastConfigOn(t, dir, net))
	runMcastApp(t, a)
	t.Logf("SUBNET UP after %v", time.Since(t0).Round(time.Millisecond))
	ap := a.SM.Applied()
	topo := ap.Topo
	smLID := ap.Result.LIDs.Ports[topo.EndpointIndex(topo.SM)].Base
	guids, at := caEndpoints(topo)
	// Clients attach for their own operations only: 11,664 transports
	// held at once cost gigabytes.
	client := func(i int) (*ipoibClient, func()) {
		conn, err := a.Sim.Attach(at[i].GUID, at[i].Port)
		if err != nil { // the SM's own port
			return &ipoibClient{t: a.T, guid: guids[i], smLID: smLID}, func() {}
		}
		ct := transport.New(conn, transport.Options{Timeout: 5 * time.Second, Retries: 3, UnsolicitedBuffer: 1})
		return &ipoibClient{t: ct, guid: guids[i], smLID: smLID}, func() { ct.Close() }
	}
	const groups = 8
	mgid := func(k int) [16]byte { return [16]byte{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 13: 0x88, 15: byte(k)} }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	lat := make([]time.Duration, len(guids))
	join := func(i int) error {
		c, done := client(i)
		defer done()
		t0 := time.Now()
		_, st, err := c.join(ctx, mgid(i%groups), i < groups)
		lat[i] = time.Since(t0)
		if err == nil && st != 0 {
			err = fmt.Errorf("status %#x", st)
		}
		return err
	}
	for i := range groups { // the creating joins first
		if err := join(i); err != nil {
			t.Fatal(err)
		}
	}
	st0 := a.SM.MulticastStats()
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	var mu sync.Mutex
	var firstErr error
	for i := groups; i < len(guids); i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := join(i); err != nil {
				mu.Lock()
				firstErr = fmt.Errorf("client %d: %w", i, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	joined := time.Since(start)
	a.SM.MulticastWait()
	programmed := time.Since(start)
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	st1 := a.SM.MulticastStats()
	t.Logf("%d joins (16 in flight) in %v: SA latency median %v p99 %v; MFTs complete %v after the first; %d router calls for %d group computations, %d MFT blocks sent",
		len(guids), joined.Round(time.Millisecond), percentile(lat, 0.5), percentile(lat, 0.99), programmed.Round(time.Millisecond),
		st1.Recomputes-st0.Recomputes, st1.Groups-st0.Groups, st1.BlocksSent-st0.BlocksSent)

	// One leave and one re-join of a member, each waited for until programmed.
	c, done := client(groups)
	defer done()
	for _, op := range []string{"leave", "join"} {
		s0 := a.SM.MulticastStats()
		t0 := time.Now()
		var code uint16
		if op == "leave" {
			code, err = c.leave(ctx, mgid(0))
		} else {
			_, code, err = c.join(ctx, mgid(0), false)
		}
		answered := time.Since(t0)
		a.SM.MulticastWait()
		done := time.Since(t0)
		s1 := a.SM.MulticastStats()
		if err != nil || code != 0 {
			t.Fatalf("%s: %v status %#x", op, err, code)
		}
		t.Logf("one %s in a group of %d: SA answer %v, MFTs programmed after %v, %d MFT blocks sent (router+verify+push %v)",
			op, len(guids)/groups, answered.Round(time.Microsecond), done.Round(time.Microsecond), s1.BlocksSent-s0.BlocksSent, s1.LastDuration.Round(time.Microsecond))
	}
	// Each group delivers, probed from a few of its members.
	for k := range groups {
		var members []sim.Delivery
		for i := k; i < len(at); i += groups {
			members = append(members, at[i])
		}
		if err := a.Sim.CheckMulticastGroup(smp.MulticastLIDBase+uint16(k)+2, members[:4], members); err != nil {
			t.Fatal(err)
		}
	}
}
