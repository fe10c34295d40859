package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestMulticastScale measures multicast on a large embedded fat tree
// (IBSM_MCAST_BENCH=ft3 for ft3-36, 11,664 CAs; =ft2 for ft2-36, 648)
// with 8 partitions (P_Keys 0x1000-0x1007, an eighth of the CAs each, by
// port GUID; every CA also in the default partition), each marked IPoIB:
// the SM programs the P_Key tables and creates the partitions' broadcast
// groups, every CA joins its partition's IPv4 broadcast group with the
// partition's P_Key. Measured: the P_Key programming of the first sweep,
// the SA latency of each join, the time until the MFTs hold all of it, the
// router calls and MFT blocks that took; then the cost of one more leave
// and join (latency to programmed, blocks sent). Numbers go to
// BENCHMARKS.md "Multicast".
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
	if _, err := topogen.Write(args, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	const groups = 8
	pkeyOf := func(k int) uint16 { return 0x1000 + uint16(k) }
	nf, err := netfile.ParseFile(net)
	if err != nil {
		t.Fatal(err)
	}
	part := map[uint64]int{} // CA port GUID -> partition
	var blocks strings.Builder
	for k := range groups {
		fmt.Fprintf(&blocks, "partition \"p%d\" {\n  pkey = \"%#04x\"\n  members = [", k, pkeyOf(k))
		for i, n := range caNodes(nf) {
			if i%groups == k {
				part[n.Ports[1].GUID] = k
				fmt.Fprintf(&blocks, "\"%#016x\",", n.Ports[1].GUID)
			}
		}
		blocks.WriteString("]\n  ipoib {}\n}\n")
	}
	cfg := mcastConfigOn(t, dir, net)
	appendConfig(t, cfg, blocks.String())
	t0 := time.Now()
	a := start(t, cfg)
	runMcastApp(t, a)
	pst := a.SM.PKeyStats()
	t.Logf("SUBNET UP after %v; P_Keys: %d ports, %d blocks read, %d sent, %d enforcement Sets",
		time.Since(t0).Round(time.Millisecond), pst.Ports, pst.BlocksRead, pst.BlocksSent, pst.EnforceSets)
	ap := a.SM.Applied()
	topo := ap.Topo
	smLID := ap.Result.LIDs.Ports[topo.EndpointIndex(topo.SM)].Base
	guids, at := caEndpoints(topo)
	// Clients attach for their own operations only: 11,664 transports
	// held at once cost gigabytes.
	client := func(i int) (*ipoibClient, func()) {
		pkey := smp.PKeyFullMember | pkeyOf(part[guids[i]])
		conn, err := a.Sim.Attach(at[i].GUID, at[i].Port)
		if err != nil { // the SM's own port
			return &ipoibClient{t: a.T, guid: guids[i], smLID: smLID, pkey: pkey}, func() {}
		}
		ct := transport.New(conn, transport.Options{Timeout: 5 * time.Second, Retries: 3, UnsolicitedBuffer: 1})
		return &ipoibClient{t: ct, guid: guids[i], smLID: smLID, pkey: pkey}, func() { ct.Close() }
	}
	// mgid is partition k's IPv4 broadcast group, which the SM created.
	mgid := func(k int) [16]byte {
		pk := smp.PKeyFullMember | pkeyOf(k)
		return [16]byte{0xff, 0x12, 0x40, 0x1b, byte(pk >> 8), byte(pk), 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	lat := make([]time.Duration, len(guids))
	join := func(i int) error {
		c, done := client(i)
		defer done()
		t0 := time.Now()
		_, st, err := c.join(ctx, mgid(part[guids[i]]), false)
		lat[i] = time.Since(t0)
		if err == nil && st != 0 {
			err = fmt.Errorf("status %#x", st)
		}
		return err
	}
	st0 := a.SM.MulticastStats()
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	var mu sync.Mutex
	var firstErr error
	for i := range guids {
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
	one := slices.IndexFunc(guids, func(g uint64) bool { return part[g] == 0 && g != topo.PortGUID(topo.SM) })
	c, done := client(one)
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
	// Each group delivers, probed from a few of its members, to its
	// members only.
	for k := range groups {
		var members []sim.Delivery
		for i := range at {
			if part[guids[i]] == k {
				members = append(members, at[i])
			}
		}
		g, ok := a.SM.MulticastStore().Get(mgid(k))
		if !ok {
			t.Fatalf("partition %d's broadcast group is gone", k)
		}
		if err := a.Sim.CheckMulticastGroup(g.MLID, members[:4], members); err != nil {
			t.Fatal(err)
		}
	}
}

// appendConfig adds HCL blocks to the config file at path.
func appendConfig(t *testing.T, path, blocks string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(blocks)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}
