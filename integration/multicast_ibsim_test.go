package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/integration/diags"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/ibsim"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestMulticastIBSim: ibsm on ibsim (rand8, 16 CAs; ft2-648 with
// IBSM_MCAST_IBSIM=ft2) with mcast-spanning.
// IPoIB-like Go clients over the ibsim transport, one CA at a time (ibsim
// has 10 client slots), join the broadcast group and resolve a PathRecord
// to a peer; then dump_mfts (infiniband-diags, nobody's code here) reads
// the MFTs back and a walk of them delivers from every member to every
// other member exactly once and to no other CA.
func TestMulticastIBSim(t *testing.T) {
	netPath := rand8Net
	if os.Getenv("IBSM_MCAST_IBSIM") == "ft2" {
		netPath = ft2Net
	}
	cas := casByName(t, netPath)
	smNode, toolNode := cas[0], cas[len(cas)-1]
	r := startRig(t, netPath, toolNode.Name)
	stateDir := filepath.Join(r.dir, "state")
	var b strings.Builder
	fmt.Fprintf(&b, "fabric {\n  transport = \"ibsim\"\n  socket = %q\n  attach = %q\n}\n", r.env.Sockname, smNode.Name)
	fmt.Fprintf(&b, "sm {\n  state_dir = %q\n  mad_timeout = \"200ms\"\n  sweep_interval = \"1s\"\n  priority = 14\n}\n", stateDir)
	for _, p := range [][2]string{{"routing_engine", "updn"}, {"lid_assigner", "sequential"}, {"vl_assigner", "single"}, {"multicast_router", "mcast-spanning"}} {
		fmt.Fprintf(&b, "plugin %q %q {\n  path = %q\n}\n", p[0], p[1], filepath.Join(binDir, "ibsm-plugin-"+p[1]))
	}
	b.WriteString("routing {\n  engine = \"updn\"\n  lid_assigner = \"sequential\"\n  vl_assigner = \"single\"\n}\n")
	cfg := filepath.Join(r.dir, "ibsm.hcl")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startIBSM(t, cfg)
	d.waitUp(t, 1, 5*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	si, err := r.env.SMInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Every CA but the tools' joins, one client at a time.
	var members []uint64
	var lat []time.Duration
	for i, n := range cas[:len(cas)-1] {
		if n == smNode {
			continue // the SM's own node holds the SM's client slot
		}
		conn, err := ibsim.Dial(ctx, ibsim.Options{SockName: r.env.Sockname, Attach: n.Name})
		if err != nil {
			t.Fatalf("client on %s: %v", n.Name, err)
		}
		ct := transport.New(conn, transport.Options{Timeout: time.Second, Retries: 3})
		c := &ipoibClient{t: ct, guid: n.Ports[1].GUID, smLID: si.LID}
		t0 := time.Now()
		rec, st, err := c.join(ctx, ipoibBcast, false)
		lat = append(lat, time.Since(t0))
		if err != nil || st != 0 || rec.MLID != smp.MulticastLIDBase {
			ct.Close()
			t.Fatalf("%s: join: %v status %#x %+v\n%s", n.Name, err, st, rec, tail(d.log.String(), 3000))
		}
		peer := cas[(i+1)%(len(cas)-1)].Ports[1].GUID
		pr, st, err := c.path(ctx, gidOf(peer))
		ct.Close()
		if err != nil || st != 0 || pr.DLID == 0 {
			t.Fatalf("%s: PathRecord to %#x: %v status %#x %+v", n.Name, peer, err, st, pr)
		}
		members = append(members, n.Ports[1].GUID)
	}

	// dump_mfts until the walk passes (the daemon programs after the
	// last join; nothing tells the test when).
	disc, _, err := r.env.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var last error
	var out string
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		var mfts map[uint64]map[uint16][]uint8
		mfts, out, last = r.env.DumpMFTs(ctx)
		if last == nil {
			last = diags.CheckMulticast(disc, mfts, smp.MulticastLIDBase, members, members)
		}
		if last == nil {
			break
		}
	}
	if last != nil {
		t.Fatalf("MFTs read back with dump_mfts: %v\n%s", last, tail(out, 3000))
	}
	t.Logf("%d joins over ibsim: SA latency median %v p99 %v", len(lat), percentile(lat, 0.5), percentile(lat, 0.99))
}
