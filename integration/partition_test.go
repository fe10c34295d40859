package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/integration/diags"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/ibsim"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestPartitionsIBSim: ibsm on ibsim (rand8: 8 switches, 16 CAs) with two
// partitions and a default partition in which the CAs are limited
// members. The stock tools check what it did: `smpquery pkeys` of every CA
// port shows exactly the keys the config gives it, with the right
// membership bits; `saquery -p` finds no path between members of
// different partitions, and paths carrying the partition's P_Key within
// one. A reload that moves one port to the other partition sends that
// port's block and nothing else.
func TestPartitionsIBSim(t *testing.T) {
	cas := casByName(t, rand8Net)
	smNode, toolNode := cas[0], cas[len(cas)-1]
	port := func(n *netfile.Node) uint64 { return n.Ports[1].GUID }
	red := []*netfile.Node{cas[1], cas[2]} // full
	redLimited := cas[3]
	blue := []*netfile.Node{cas[4], cas[5], toolNode} // full; cas[5] by description
	outsider := cas[6]                                // only in the default partition, limited

	redBlue := func(redLim, blueExtra string) string {
		return fmt.Sprintf(`partition "red" {
  pkey            = "0x0010"
  members         = ["%#016x", "%#016x"]
  limited_members = [%s]
}
partition "blue" {
  pkey    = "0x8020"
  members = ["%#016x", "desc:%s", "%#016x"%s]
  ipoib {}
}
`, port(red[0]), port(red[1]), redLim, port(blue[0]), blue[1].Desc, port(blue[2]), blueExtra)
	}
	pr := startPartitionRig(t, rand8Net, smNode, toolNode, redBlue(fmt.Sprintf("%q", fmt.Sprintf("%#016x", port(redLimited))), ""), 3*time.Minute)
	r, a, ctx, sweep, write := pr.r, pr.a, pr.ctx, pr.sweep, pr.write
	rep := sweep(t, false)
	st := a.SM.PKeyStats()
	t.Logf("first sweep: %d ports, %d P_Key blocks read, %d sent, %d enforcement Sets; warnings %q", st.Ports, st.BlocksRead, st.BlocksSent, st.EnforceSets, rep.Warnings)

	lid := map[uint64]uint16{} // port GUID -> LID, from the plan in force
	ap := a.SM.Applied()
	for i, ep := range ap.Topo.Endpoints() {
		lid[ap.Topo.Port(ep).GUID] = ap.Result.LIDs.Ports[i].Base
	}

	// What each CA port must hold: the default partition limited (the SM's
	// port full), plus red/blue.
	want := map[uint64][]uint16{}
	for _, n := range cas {
		k := uint16(0x7FFF)
		if n == smNode {
			k = 0xFFFF
		}
		want[port(n)] = []uint16{k}
	}
	add := func(ns []*netfile.Node, key uint16) {
		for _, n := range ns {
			want[port(n)] = append(want[port(n)], key)
		}
	}
	add(red, 0x8010)
	add([]*netfile.Node{redLimited}, 0x0010)
	add(blue, 0x8020)
	add([]*netfile.Node{smNode}, 0x8010) // the SM's port is a full member of every partition
	add([]*netfile.Node{smNode}, 0x8020)
	checkPKeys := func(t *testing.T) {
		t.Helper()
		for _, n := range cas {
			got := smpPKeys(t, ctx, r.env, lid[port(n)])
			if !sameKeySet(got, want[port(n)]) {
				t.Errorf("%s (LID %d): smpquery pkeys shows %#04x, want %#04x", n.Name, lid[port(n)], got, want[port(n)])
			}
		}
	}
	checkPKeys(t)

	pathKey := func(t *testing.T, from, to *netfile.Node) (uint16, bool) {
		t.Helper()
		prs, err := r.env.PathRecords(ctx, lid[port(from)], lid[port(to)])
		if err != nil {
			t.Fatalf("saquery -p %s -> %s: %v", from.Name, to.Name, err)
		}
		if len(prs) == 0 {
			return 0, false
		}
		v, err := strconv.ParseUint(prs[0].Fields["pkey"], 0, 16)
		if err != nil {
			t.Fatalf("saquery PathRecord pkey %q: %v", prs[0].Fields["pkey"], err)
		}
		return uint16(v), true
	}
	for _, c := range []struct {
		from, to *netfile.Node
		pkey     uint16 // 0: no path
	}{
		{red[0], red[1], 0x8010},
		{redLimited, red[0], 0x0010},
		{red[1], redLimited, 0x8010},
		{blue[0], blue[1], 0x8020},
		{blue[2], blue[0], 0x8020},
		{red[0], blue[0], 0},
		{blue[1], red[1], 0},
		{redLimited, blue[2], 0},
		{outsider, red[0], 0}, // both limited in the default partition
		{red[0], outsider, 0},
		{outsider, smNode, 0x7FFF}, // the SM's port is a full member
	} {
		got, ok := pathKey(t, c.from, c.to)
		switch {
		case c.pkey == 0 && ok:
			t.Errorf("saquery -p %s -> %s: a path with P_Key %#04x; they share no partition", c.from.Name, c.to.Name, got)
		case c.pkey != 0 && (!ok || got != c.pkey):
			t.Errorf("saquery -p %s -> %s: P_Key %#04x (path %v), want %#04x", c.from.Name, c.to.Name, got, ok, c.pkey)
		}
	}

	// The SA's PKeyTableRecord (saquery PKTR lid/port/block) shows the
	// table the port holds to a trusted requester (ibsm's default SM_Key,
	// OpenSM's, is 1), and refuses anyone else, as OpenSM does.
	if out, err := r.env.Run(ctx, "saquery", "PKTR", fmt.Sprintf("%d/1/0", lid[port(red[0])])); err == nil {
		t.Errorf("saquery PKTR without the SM_Key was answered:\n%s", out)
	}
	for _, n := range []*netfile.Node{red[0], blue[0]} {
		out, err := r.env.Run(ctx, "saquery", "--smkey", "1", "PKTR", fmt.Sprintf("%d/1/0", lid[port(n)]))
		if err != nil {
			t.Fatalf("saquery PKTR %s: %v", n.Name, err)
		}
		has := strings.Contains(strings.ToLower(out), "0x8010")
		if has != (n == red[0]) || !strings.Contains(strings.ToLower(out), "0x7fff") {
			t.Errorf("saquery PKTR %d/1/0 (%s):\n%s", lid[port(n)], n.Name, out)
		}
	}

	// An unchanged sweep reads and sends nothing.
	sweep(t, true)
	if st := a.SM.PKeyStats(); st.BlocksRead+st.BlocksSent+st.EnforceSets != 0 {
		t.Errorf("unchanged sweep: %+v, want no P_Key SMP", st)
	}

	// Reload: the red limited member moves to blue as a full member. Only
	// its own block changes (ibsim's switch ports do not keep the
	// enforcement bits, so they carry no table).
	cfg2 := write("ibsm2.hcl", redBlue("", fmt.Sprintf(", \"%#016x\"", port(redLimited))))
	if err := a.Reload(ctx, loadConfig(t, cfg2)); err != nil {
		t.Fatal(err)
	}
	sweep(t, true)
	if st := a.SM.PKeyStats(); st.BlocksSent != 1 || st.BlocksRead != 0 {
		t.Errorf("reload moving one port: %+v, want exactly 1 block sent, none read", st)
	}
	want[port(redLimited)] = []uint16{0x7FFF, 0x8020}
	checkPKeys(t)
	if k, ok := pathKey(t, redLimited, blue[0]); !ok || k != 0x8020 {
		t.Errorf("after the reload: %s -> %s P_Key %#04x %v, want 0x8020", redLimited.Name, blue[0].Name, k, ok)
	}
	if _, ok := pathKey(t, redLimited, red[0]); ok {
		t.Errorf("after the reload: %s still has a path to red", redLimited.Name)
	}
}

// casByName returns the CA nodes of the topology file net sorted by name
// (the tests attach the SM at the first and the tools at the last).
func casByName(t *testing.T, net string) []*netfile.Node {
	t.Helper()
	nf, err := netfile.ParseFile(net)
	if err != nil {
		t.Fatal(err)
	}
	cas := caNodes(nf)
	sort.Slice(cas, func(i, j int) bool { return cas[i].Name < cas[j].Name })
	return cas
}

// partitionRig is ibsm in process on ibsim with partitions: the default
// partition has the CAs as limited members (switches and the SM full), so
// only the partitions given connect CAs. Run answers the SA (saquery)
// while it sweeps; sweep(t, true) asks for a heavy sweep, as SIGHUP does.
type partitionRig struct {
	r     *rig
	a     *app.App
	ctx   context.Context
	sweep func(t *testing.T, heavy bool) *sm.Report
	// write writes a config with these partition blocks into the rig's
	// directory and returns its path (for a.Reload).
	write func(name, partitions string) string
}

func startPartitionRig(t *testing.T, net string, smNode, toolNode *netfile.Node, partitions string, within time.Duration) *partitionRig {
	t.Helper()
	// ibsim and the tools are started with Pdeathsig, which fires when the
	// OS thread that forked them exits; the in-process App's plugin
	// manager locks a thread for its spawner and lets it exit when a
	// reload closes the old manager. Pin this goroutine to its thread
	// until every cleanup (ibsim's stop included) has run, so the thread
	// that forks ibsim can never be that one.
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	r := startRig(t, net, toolNode.Name)
	stateDir := filepath.Join(r.dir, "state")
	write := func(name, partitions string) string {
		src := fmt.Sprintf(`fabric {
  transport = "ibsim"
  socket    = %q
  attach    = %q
}
sm {
  state_dir   = %q
  mad_timeout = "200ms"
  priority    = 14
}
plugin "routing_engine" "updn" { path = %q }
plugin "lid_assigner" "sequential" { path = %q }
plugin "vl_assigner" "single" { path = %q }
routing {
  engine       = "updn"
  lid_assigner = "sequential"
  vl_assigner  = "single"
}
partition "default" {
  pkey            = "0x7fff"
  members         = ["all_switches", "self"]
  limited_members = ["all_cas"]
}
%s`, r.env.Sockname, smNode.Name, stateDir, filepath.Join(binDir, "ibsm-plugin-updn"),
			filepath.Join(binDir, "ibsm-plugin-sequential"), filepath.Join(binDir, "ibsm-plugin-single"), partitions)
		path := filepath.Join(r.dir, name)
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	t.Cleanup(cancel)
	log := &lockedBuffer{}
	a, err := app.New(ctx, loadConfig(t, write("ibsm.hcl", partitions)), hclog.New(&hclog.LoggerOptions{Output: log, Level: hclog.Info}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ibsm log:\n%s", tail(log.String(), 4000))
		}
	})
	t.Cleanup(a.Close)
	reps := make(chan *sm.Report, 16)
	trigger := make(chan struct{}, 1)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		_ = a.SM.Run(runCtx, trigger, func(rep *sm.Report, err error) {
			if err != nil {
				t.Errorf("sweep: %v", err)
				return
			}
			reps <- rep
		})
	}()
	t.Cleanup(func() { stop(); <-ran })
	sweep := func(t *testing.T, heavy bool) *sm.Report {
		t.Helper()
		if heavy {
			trigger <- struct{}{}
		}
		select {
		case rep := <-reps:
			return rep
		case <-time.After(within):
			t.Fatalf("no sweep within %v", within)
			return nil
		}
	}
	return &partitionRig{r: r, a: a, ctx: ctx, sweep: sweep, write: write}
}

var rePKeyLine = regexp.MustCompile(`^\s*\d+:((?:\s+0x[0-9a-f]{4})+)\s*$`)

// smpPKeys reads a port's P_Key table with smpquery (LID-routed) and
// returns its non-empty entries in table order.
func smpPKeys(t *testing.T, ctx context.Context, env *diags.Env, lid uint16) []uint16 {
	t.Helper()
	out, err := env.Run(ctx, "smpquery", "pkeys", strconv.Itoa(int(lid)))
	if err != nil {
		t.Fatalf("smpquery pkeys %d: %v", lid, err)
	}
	var keys []uint16
	lines := 0
	for _, l := range strings.Split(out, "\n") {
		m := rePKeyLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		lines++
		for _, f := range strings.Fields(m[1]) {
			v, _ := strconv.ParseUint(f, 0, 16)
			if v != 0 {
				keys = append(keys, uint16(v))
			}
		}
	}
	if lines == 0 {
		t.Fatalf("smpquery pkeys %d printed no table:\n%s", lid, out)
	}
	return keys
}

func sameKeySet(got, want []uint16) bool {
	if len(got) != len(want) {
		return false
	}
	g := append([]uint16(nil), got...)
	w := append([]uint16(nil), want...)
	sort.Slice(g, func(i, j int) bool { return g[i] < g[j] })
	sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
	for i := range g {
		if g[i] != w[i] {
			return false
		}
	}
	return true
}

// TestPartitionsIBSimFT2: the 648-CA two-level
// fat tree on ibsim split into two partitions by node description — red
// (0x0010) the hosts of leaves 0-17, blue (0x0020) those of leaves 18-35 —
// with every CA a limited member of the default partition. `smpquery
// pkeys` of every CA port must show exactly its keys, and no member of one
// partition gets a PathRecord to a member of the other (each CA asks for
// a path to three of the other side and to a peer of its own, which must
// carry its partition's P_Key). About 50 s here, most of it smpquery.
func TestPartitionsIBSimFT2(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 648 smpquery runs take most of a minute")
	}
	cas := casByName(t, ft2Net)
	smNode, toolNode := cas[0], cas[len(cas)-1]
	const parts = `partition "red" {
  pkey    = "0x0010"
  members = ["desc:ft2 leaf [0-9] host *", "desc:ft2 leaf 1[0-7] host *"]
}
partition "blue" {
  pkey    = "0x0020"
  members = ["desc:ft2 leaf 1[89] host *", "desc:ft2 leaf [23][0-9] host *"]
}
`
	side := map[uint16][]*netfile.Node{}
	keyOf := map[*netfile.Node]uint16{}
	for _, n := range cas {
		var leaf int
		if _, err := fmt.Sscanf(n.Name, "ft2-leaf-%d-", &leaf); err != nil {
			t.Fatalf("CA name %q: %v", n.Name, err)
		}
		k := uint16(0x0010)
		if leaf >= 18 {
			k = 0x0020
		}
		keyOf[n] = k
		side[k] = append(side[k], n)
	}
	t0 := time.Now()
	pr := startPartitionRig(t, ft2Net, smNode, toolNode, parts, 10*time.Minute)
	rep := pr.sweep(t, false)
	st := pr.a.SM.PKeyStats()
	t.Logf("SUBNET UP after %v: %d ports, %d P_Key blocks read, %d sent, %d enforcement Sets; warnings %q",
		time.Since(t0).Round(time.Millisecond), st.Ports, st.BlocksRead, st.BlocksSent, st.EnforceSets, rep.Warnings)
	ap := pr.a.SM.Applied()
	lid := map[uint64]uint16{}
	for i, ep := range ap.Topo.Endpoints() {
		lid[ap.Topo.Port(ep).GUID] = ap.Result.LIDs.Ports[i].Base
	}
	port := func(n *netfile.Node) uint64 { return n.Ports[1].GUID }

	t1 := time.Now()
	for _, n := range cas {
		want := []uint16{0x7FFF, 0x8000 | keyOf[n]}
		if n == smNode {
			want = []uint16{0xFFFF, 0x8010, 0x8020} // the SM's port is a full member of every partition
		}
		if got := smpPKeys(t, pr.ctx, pr.r.env, lid[port(n)]); !sameKeySet(got, want) {
			t.Errorf("%s (LID %d): smpquery pkeys shows %#04x, want %#04x", n.Name, lid[port(n)], got, want)
		}
	}
	t.Logf("smpquery pkeys of %d CA ports: %v", len(cas), time.Since(t1).Round(time.Millisecond))

	// PathRecords through one Go SA client (ibsim's transport) on a CA
	// that is neither the SM's nor the tools'.
	si, err := pr.r.env.SMInfo(pr.ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ibsim.Dial(pr.ctx, ibsim.Options{SockName: pr.r.env.Sockname, Attach: cas[1].Name})
	if err != nil {
		t.Fatal(err)
	}
	ct := transport.New(conn, transport.Options{Timeout: 2 * time.Second, Retries: 3})
	t.Cleanup(func() { ct.Close() })
	t2 := time.Now()
	asked, crossed := 0, 0
	for _, n := range cas {
		if n == smNode {
			continue
		}
		c := &ipoibClient{t: ct, guid: port(n), smLID: si.LID}
		mine, other := side[keyOf[n]], side[keyOf[n]^0x0030]
		peer := mine[(slices.Index(mine, n)+1)%len(mine)]
		if peer == smNode {
			peer = mine[(slices.Index(mine, n)+2)%len(mine)]
		}
		rec, code, err := c.path(pr.ctx, gidOf(port(peer)))
		if err != nil || code != 0 || rec.PKey&0x7FFF != keyOf[n] {
			t.Fatalf("%s -> %s (same partition): %v status %#x P_Key %#04x, want %#04x", n.Name, peer.Name, err, code, rec.PKey, keyOf[n])
		}
		for k := 0; k < 3; k++ {
			to := other[(slices.Index(cas, n)*7+k*101)%len(other)]
			if to == smNode {
				continue
			}
			rec, code, err := c.path(pr.ctx, gidOf(port(to)))
			asked++
			switch {
			case err != nil:
				t.Fatalf("%s -> %s: %v", n.Name, to.Name, err)
			case code == 0:
				crossed++
				t.Errorf("%s -> %s: a PathRecord (P_Key %#04x, DLID %d) between partitions", n.Name, to.Name, rec.PKey, rec.DLID)
			case code != smp.SAStatusNoRecords:
				t.Errorf("%s -> %s: status %#x, want no record", n.Name, to.Name, code)
			}
		}
	}
	t.Logf("%d PathRecord queries across partitions (%d answered with a path), %d within: %v",
		asked, crossed, len(cas)-1, time.Since(t2).Round(time.Millisecond))
}
