package integration

// Multicast end to end: IPoIB-like clients join their partition's
// broadcast group through SA MCMemberRecord Sets and resolve PathRecords;
// the MFTs the SM programmed, computed by the mcast-spanning plugin, must
// deliver a packet from every member to every other member exactly once
// and to nobody else. On the embedded fabric probes travel the MFTs; on
// ibsim (which stores MFTs but never forwards multicast) dump_mfts reads
// them back and diags walks them. A join/leave storm checks that the SA
// keeps answering, that no MFT state ever loops and that the final MFTs
// equal a fresh computation.

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/dump"
	"github.com/ibsm/ibsm/host/mcast"
	"github.com/ibsm/ibsm/host/sa"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

// ipoibBcast is the IPv4 broadcast group of the default partition (P_Key
// 0xFFFF, link-local scope), which the SM creates at start.
var ipoibBcast = [16]byte{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff}

// ipoibClient is what an IPoIB driver does with the SA: join the
// broadcast group, resolve paths to peers, leave.
type ipoibClient struct {
	t     transport.Transport
	guid  uint64 // port GUID
	smLID uint16
	pkey  uint16 // the partition's P_Key (full); 0: the default, 0xFFFF
}

func gidOf(guid uint64) [16]byte {
	var g [16]byte
	binary.BigEndian.PutUint64(g[:8], sa.DefaultGIDPrefix)
	binary.BigEndian.PutUint64(g[8:], guid)
	return g
}

// sa sends one SA request and returns the decoded answer.
func (c *ipoibClient) sa(ctx context.Context, method uint8, attr uint16, cm uint64, rec smp.Attribute) (*smp.SAMAD, error) {
	m := smp.NewSAMAD(method, attr)
	m.ComponentMask = cm
	if err := rec.MarshalTo(m.Data[:]); err != nil {
		return nil, err
	}
	b := make([]byte, smp.MADLen)
	if err := m.EncodeTo(b); err != nil {
		return nil, err
	}
	p, err := c.t.Do(ctx, transport.Packet{DLID: c.smLID, QP: 1, MAD: b})
	if err != nil {
		return nil, err
	}
	var resp smp.SAMAD
	if err := resp.Decode(p.MAD); err != nil {
		return nil, err
	}
	return &resp, nil
}

const mcJoin = smp.MCMCompMGID | smp.MCMCompPortGID | smp.MCMCompJoinState

// join joins mgid as a full member with IPoIB's Q_Key and P_Key; create
// adds the components a group's creation needs.
func (c *ipoibClient) join(ctx context.Context, mgid [16]byte, create bool) (smp.MCMemberRecord, uint16, error) {
	pkey := c.pkey
	if pkey == 0 {
		pkey = 0xFFFF
	}
	r := smp.MCMemberRecord{MGID: mgid, PortGID: gidOf(c.guid), QKey: 0x0B1B, PKey: pkey, JoinState: smp.JoinFullMember}
	cm := uint64(mcJoin | smp.MCMCompQKey | smp.MCMCompPKey)
	if create {
		cm |= smp.MCMCompSL | smp.MCMCompFlowLabel | smp.MCMCompTClass
	}
	resp, err := c.sa(ctx, smp.MethodSet, smp.SAAttrMCMemberRecord, cm, &r)
	if err != nil {
		return r, 0, err
	}
	var out smp.MCMemberRecord
	_ = out.Unmarshal(resp.Data[:])
	return out, resp.Status, nil
}

func (c *ipoibClient) leave(ctx context.Context, mgid [16]byte) (uint16, error) {
	r := smp.MCMemberRecord{MGID: mgid, PortGID: gidOf(c.guid), JoinState: smp.JoinFullMember}
	resp, err := c.sa(ctx, smp.MethodDelete, smp.SAAttrMCMemberRecord, mcJoin, &r)
	if err != nil {
		return 0, err
	}
	return resp.Status, nil
}

// path resolves the PathRecord from this port to dgid (a port or a group).
func (c *ipoibClient) path(ctx context.Context, dgid [16]byte) (smp.PathRecord, uint16, error) {
	r := smp.PathRecord{DGID: dgid, SGID: gidOf(c.guid), NumbPath: 1}
	resp, err := c.sa(ctx, smp.MethodGetTable, smp.SAAttrPathRecord, smp.PRCompDGID|smp.PRCompSGID|smp.PRCompNumbPath, &r)
	if err != nil {
		return r, 0, err
	}
	var out smp.PathRecord
	if resp.Status == 0 && resp.PayloadLength <= 20 {
		return out, smp.SAStatusNoRecords, nil
	}
	_ = out.Unmarshal(resp.Data[:])
	return out, resp.Status, nil
}

// mcastConfig writes a sim config on ft2-648 with sftree and mcast-spanning.
func mcastConfig(t *testing.T, dir string) string {
	t.Helper()
	net, err := filepath.Abs(ft2Net)
	if err != nil {
		t.Fatal(err)
	}
	return mcastConfigOn(t, dir, net)
}

// mcastConfigOn is mcastConfig on the topology file net.
func mcastConfigOn(t *testing.T, dir, net string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "fabric {\n  transport = \"sim\"\n  topology = %q\n}\n", net)
	b.WriteString("sm {\n  state_dir = \"state\"\n  plugin_timeout = \"30s\"\n  mad_timeout = \"100ms\"\n  sweep_interval = \"1h\"\n}\n")
	for _, p := range [][2]string{{"routing_engine", "sftree"}, {"lid_assigner", "sequential"}, {"vl_assigner", "single"}, {"multicast_router", "mcast-spanning"}} {
		fmt.Fprintf(&b, "plugin %q %q {\n  path = %q\n}\n", p[0], p[1], filepath.Join(binDir, "ibsm-plugin-"+p[1]))
	}
	b.WriteString("routing {\n  engine = \"sftree\"\n  lid_assigner = \"sequential\"\n  vl_assigner = \"single\"\n}\n")
	b.WriteString("multicast {\n  router = \"mcast-spanning\"\n}\n")
	path := filepath.Join(dir, "ibsm.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runMcastApp runs a's SM until test end (runApp) and waits for SUBNET UP.
func runMcastApp(t *testing.T, a *app.App) {
	t.Helper()
	r := runApp(t, a)
	select {
	case res := <-r.sweeps:
		if res.err != nil {
			t.Fatalf("first sweep: %v", res.err)
		}
	case <-time.After(10 * time.Minute):
		t.Fatal("no SUBNET UP within 10 min")
	}
}

// caEndpoints lists the CA ports of topo with their probe addresses.
func caEndpoints(topo *topology.Topology) ([]uint64, []sim.Delivery) {
	var guids []uint64
	var at []sim.Delivery
	for _, ep := range topo.Endpoints() {
		if topo.Nodes[ep.Node].Type == topology.CA {
			guids = append(guids, topo.PortGUID(ep))
			at = append(at, sim.Delivery{GUID: topo.Nodes[ep.Node].GUID, Port: ep.Port})
		}
	}
	return guids, at
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// TestMulticastIPoIBEmbedded: every CA of ft2-648 joins the broadcast
// group and resolves a path to a peer; probes from every member reach
// every other member exactly once and nobody else. Then a join/leave storm
// (1,000 operations/s; 2 s by default, 10 s with IBSM_MCAST_STORM=1).
func TestMulticastIPoIBEmbedded(t *testing.T) {
	dir := t.TempDir()
	a := start(t, mcastConfig(t, dir))
	runMcastApp(t, a)
	ap := a.SM.Applied()
	topo := ap.Topo
	smLID := ap.Result.LIDs.Ports[topo.EndpointIndex(topo.SM)].Base
	guids, at := caEndpoints(topo)
	if len(guids) != ft2CAs {
		t.Fatalf("%d CA ports, want %d", len(guids), ft2CAs)
	}
	clients := make([]*ipoibClient, len(guids))
	for i, g := range guids {
		conn, err := a.Sim.Attach(at[i].GUID, at[i].Port)
		if err != nil {
			if at[i].GUID == topo.Nodes[topo.SM.Node].GUID {
				// The SM's own port: its SA is local, it joins like the others
				// through its own transport.
				clients[i] = &ipoibClient{t: a.T, guid: g, smLID: smLID}
				continue
			}
			t.Fatal(err)
		}
		ct := transport.New(conn, transport.Options{Timeout: 2 * time.Second, Retries: 2, UnsolicitedBuffer: 1})
		t.Cleanup(func() { ct.Close() })
		clients[i] = &ipoibClient{t: ct, guid: g, smLID: smLID}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Joins, 16 at a time, each timed from Set to answer.
	lat := make([]time.Duration, len(clients))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errs := make(chan error, len(clients))
	start := time.Now()
	for i, c := range clients {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t0 := time.Now()
			rec, st, err := c.join(ctx, ipoibBcast, false)
			lat[i] = time.Since(t0)
			switch {
			case err != nil:
				errs <- fmt.Errorf("client %d join: %w", i, err)
			case st != 0 || rec.MLID != smp.MulticastLIDBase || rec.QKey != 0x0B1B || rec.MTU != 4:
				errs <- fmt.Errorf("client %d join: status %#x record %+v", i, st, rec)
			}
		}()
	}
	wg.Wait()
	joins := time.Since(start)
	a.SM.MulticastWait()
	programmed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := a.SM.MulticastStats()
	t.Logf("648 joins in %v (median %v, p99 %v), MFTs programmed %v after the first join; %d router calls, %d MFT blocks sent",
		joins.Round(time.Millisecond), percentile(lat, 0.5), percentile(lat, 0.99), programmed.Round(time.Millisecond), st.Recomputes, st.BlocksSent)

	if err := a.Sim.CheckMulticastGroup(smp.MulticastLIDBase, at, at); err != nil {
		t.Fatal(err)
	}
	// ibdmchk reads the same MFTs from opensm.mcfdbs.
	dumpDir := t.TempDir()
	if err := dump.WriteAll(dumpDir, ap.Result.Realized, nil); err != nil {
		t.Fatal(err)
	}
	if err := dump.WriteMCFDBFile(dumpDir, a.SM.MulticastForwarding()); err != nil {
		t.Fatal(err)
	}
	chk := ibdmchk(t, dumpDir)
	if !strings.Contains(chk, "Multicast Group:0xC000 has:37 switches and:648 HCAs") {
		t.Fatalf("ibdmchk did not see the broadcast group over 36 leaves and one spine with all 648 CAs:\n%s", tail(chk, 3000))
	}
	for _, l := range strings.Split(chk, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "-E-") {
			t.Fatalf("ibdmchk: %s\n%s", l, tail(chk, 3000))
		}
	}
	// A PathRecord to a peer (the next CA) and to the group.
	for i, c := range clients {
		peer := guids[(i+1)%len(guids)]
		pr, st, err := c.path(ctx, gidOf(peer))
		if err != nil || st != 0 || pr.DLID == 0 || pr.DGID != gidOf(peer) {
			t.Fatalf("client %d: PathRecord to %#x: %v status %#x %+v", i, peer, err, st, pr)
		}
	}
	pr, code, err := clients[0].path(ctx, ipoibBcast)
	if err != nil || code != 0 || pr.DLID != smp.MulticastLIDBase || pr.PKey != 0xFFFF {
		t.Fatalf("PathRecord to the broadcast group: %v status %#x %+v", err, code, pr)
	}

	storm(t, a, clients, at)
}

// storm runs joins and leaves of 16 groups from 32 goroutines at 1,000
// operations per second in total while a watcher probes every group for
// loops; afterwards the fabric must hold exactly a fresh computation.
func storm(t *testing.T, a *app.App, clients []*ipoibClient, at []sim.Delivery) {
	d := 2 * time.Second
	if os.Getenv("IBSM_MCAST_STORM") != "" {
		d = 10 * time.Second
	}
	const workers, groups, rate = 32, 16, 1000
	mgid := func(g int) [16]byte {
		return [16]byte{0xff, 0x12, 0xa0, 0x1c, 0xff, 0xff, 13: 0x77, 14: byte(g >> 8), 15: byte(g)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	var ops, refused, failed atomic.Int64
	var lat []time.Duration
	var latMu sync.Mutex
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			tick := time.NewTicker(time.Second * workers / rate)
			defer tick.Stop()
			for time.Now().Before(stop) {
				<-tick.C
				c := clients[(w+workers*rng.IntN(len(clients)/workers))%len(clients)]
				g := mgid(rng.IntN(groups))
				t0 := time.Now()
				var code uint16
				var err error
				if rng.IntN(2) == 0 {
					_, code, err = c.join(ctx, g, true)
				} else {
					code, err = c.leave(ctx, g)
				}
				el := time.Since(t0)
				ops.Add(1)
				switch {
				case err != nil:
					failed.Add(1)
				case code != 0:
					refused.Add(1) // a leave of a group one is not in: ERR_REQ_INVALID
				}
				latMu.Lock()
				lat = append(lat, el)
				latMu.Unlock()
			}
		}()
	}
	// The watcher: every group, from its first member, must never loop nor
	// deliver a copy twice, whatever state the MFTs are in.
	var loops []string
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		store := a.SM.MulticastStore()
		for time.Now().Before(stop) {
			for _, g := range store.Groups() {
				for guid := range g.Members {
					i := slices.IndexFunc(clients, func(c *ipoibClient) bool { return c.guid == guid })
					got, _, err := a.Sim.ProbeMulticast(at[i].GUID, at[i].Port, g.MLID)
					if err != nil {
						loops = append(loops, err.Error())
					}
					for dlv, n := range got {
						if n > 1 {
							loops = append(loops, fmt.Sprintf("group %#x: %v got %d copies", g.MLID, dlv, n))
						}
					}
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	wg.Wait()
	<-watchDone
	if len(loops) > 0 {
		t.Fatalf("MFTs looped or duplicated during the storm: %v", loops[:min(5, len(loops))])
	}
	if failed.Load() != 0 {
		t.Fatalf("%d of %d storm operations got no answer", failed.Load(), ops.Load())
	}
	t.Logf("storm: %d operations in %v (%d refused leaves), SA latency median %v p99 %v",
		ops.Load(), d, refused.Load(), percentile(lat, 0.5), percentile(lat, 0.99))
	if ops.Load() < int64(d.Seconds()*rate/2) {
		t.Errorf("only %d operations in %v", ops.Load(), d)
	}

	// Final MFTs: the fabric holds exactly what a fresh computation of
	// every group by the same router gives.
	a.SM.MulticastWait()
	ap := a.SM.Applied()
	req, missing := mcast.Request(ap.Topo, a.SM.MulticastStore().Groups())
	if missing != 0 {
		t.Fatalf("%d members not in the fabric", missing)
	}
	pl, ok := a.Plugin(sdk.KindMulticast, "mcast-spanning")
	if !ok {
		t.Fatal("no mcast-spanning plugin")
	}
	trees, err := pl.RouteMulticast(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := mcast.Verify(&req, trees); err != nil {
		t.Fatal(err)
	}
	fresh := mcast.NewForwarding()
	fresh.Apply(ap.Topo, trees, nil)
	for _, sw := range ap.Topo.Switches() {
		g := ap.Topo.Nodes[sw].GUID
		held, err := a.Sim.MFT(g)
		if err != nil {
			t.Fatal(err)
		}
		want := map[uint16][]uint8{}
		if b := fresh.Switches[g]; b != nil {
			for _, m := range b.MLIDs() {
				want[m] = b.Ports(m)
			}
		}
		if fmt.Sprint(sortedMFT(held)) != fmt.Sprint(sortedMFT(want)) {
			t.Fatalf("switch %#x holds %v, a fresh computation gives %v", g, sortedMFT(held), sortedMFT(want))
		}
	}
	for _, g := range a.SM.MulticastStore().Groups() {
		var members []sim.Delivery
		for guid := range g.Members {
			members = append(members, at[slices.IndexFunc(clients, func(c *ipoibClient) bool { return c.guid == guid })])
		}
		if err := a.Sim.CheckMulticastGroup(g.MLID, members, members); err != nil {
			t.Fatal(err)
		}
	}
}

func sortedMFT(m map[uint16][]uint8) []string {
	var out []string
	for mlid, ports := range m {
		out = append(out, fmt.Sprintf("%#x:%v", mlid, ports))
	}
	sort.Strings(out)
	return out
}
