package discovery_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// builder makes a hand-written netfile; every node gets a distinct GUID
// leaving room for CA port GUIDs (guid+p).
type builder struct {
	t *testing.T
	f *netfile.File
}

func newBuilder(t *testing.T) *builder { return &builder{t: t, f: netfile.New()} }

func (b *builder) sw(name string, guid uint64, ports int) *netfile.Node {
	n, err := b.f.AddSwitch(name, guid, ports)
	must(b.t, err)
	return n
}

func (b *builder) ca(name string, guid uint64, ports int) *netfile.Node {
	n, err := b.f.AddCA(name, guid, ports)
	must(b.t, err)
	return n
}

func (b *builder) link(a *netfile.Node, pa int, c *netfile.Node, pc int) {
	must(b.t, b.f.Connect(a, pa, c, pc, netfile.Width4x, netfile.QDR))
}

// line: H1 - S1 - S2 - S3 - H2, S1[3] unconnected.
func line(t *testing.T) *netfile.File {
	b := newBuilder(t)
	h1, h2 := b.ca("H1", 0x1000, 1), b.ca("H2", 0x2000, 1)
	s1, s2, s3 := b.sw("S1", 0x10, 3), b.sw("S2", 0x20, 3), b.sw("S3", 0x30, 3)
	b.link(h1, 1, s1, 1)
	b.link(s1, 2, s2, 1)
	b.link(s2, 2, s3, 1)
	b.link(s3, 2, h2, 1)
	return b.f
}

// dualRail: H1 (SM host) on S1; a two-port CA D with port 1 on S1 and port 2
// on S2; S1 and S2 joined by two parallel cables.
func dualRail(t *testing.T) *netfile.File {
	b := newBuilder(t)
	h1 := b.ca("H1", 0x1000, 1)
	d := b.ca("D", 0x3000, 2)
	s1, s2 := b.sw("S1", 0x10, 4), b.sw("S2", 0x20, 4)
	b.link(h1, 1, s1, 1)
	b.link(d, 1, s1, 2)
	b.link(d, 2, s2, 2)
	b.link(s1, 3, s2, 3)
	b.link(s1, 4, s2, 4)
	return b.f
}

func gen(t *testing.T, g interface {
	Generate() (*netfile.File, error)
}) *netfile.File {
	f, err := g.Generate()
	must(t, err)
	return f
}

type rig struct {
	fab *sim.Fabric
	tr  transport.Transport
	c   *mad.Client
	sm  uint64
	smP uint8
}

// attach builds the sim fabric for f and attaches an SM transport at
// (guid, port), or at the default SM port when guid is 0. wrap may
// interpose on the raw connection.
func attach(t *testing.T, f *netfile.File, guid uint64, port uint8, topts transport.Options, wrap func(transport.Conn) transport.Conn) *rig {
	t.Helper()
	fab, err := sim.New(f, sim.Options{})
	must(t, err)
	if guid == 0 {
		guid, port = fab.DefaultSMPort()
	}
	conn, err := fab.Attach(guid, port)
	must(t, err)
	if wrap != nil {
		conn = wrap(conn)
	}
	if topts.Timeout == 0 {
		topts.Timeout = 50 * time.Millisecond
	}
	tr := transport.New(conn, topts)
	t.Cleanup(func() { tr.Close() })
	return &rig{fab: fab, tr: tr, c: &mad.Client{T: tr}, sm: guid, smP: port}
}

func (r *rig) discover(t *testing.T) (*discovery.Fabric, *topology.Topology) {
	t.Helper()
	d := &discovery.Discoverer{C: r.c}
	fab, err := d.Run(context.Background())
	must(t, err)
	topo, err := fab.Topology()
	must(t, err)
	return fab, topo
}

// sameAsFile checks that the discovered snapshot has the file's nodes,
// types, descriptions, port counts, links and, on cabled ports, port GUIDs,
// states, widths, speeds and VLCap.
func sameAsFile(t *testing.T, got *topology.Topology, f *netfile.File) {
	t.Helper()
	want, err := f.Topology()
	must(t, err)
	if len(got.Nodes) != len(want.Nodes) {
		t.Fatalf("discovered %d nodes, file has %d", len(got.Nodes), len(want.Nodes))
	}
	for i := range want.Nodes {
		g, w := &got.Nodes[i], &want.Nodes[i]
		if g.GUID != w.GUID || g.Type != w.Type || g.Desc != w.Desc || len(g.Ports) != len(w.Ports) {
			t.Fatalf("node %d: got %#x %v %q %d ports, want %#x %v %q %d ports", i, g.GUID, g.Type, g.Desc, len(g.Ports), w.GUID, w.Type, w.Desc, len(w.Ports))
		}
		for p := 1; p < len(w.Ports); p++ {
			gp, wp := g.Ports[p], w.Ports[p]
			if gp.Peer != wp.Peer {
				t.Fatalf("node %#x port %d: peer %+v, want %+v", w.GUID, p, gp.Peer, wp.Peer)
			}
			if !wp.Peer.Connected() {
				continue
			}
			if gp.GUID != wp.GUID || gp.State != wp.State || gp.Width != wp.Width || gp.Speed != wp.Speed || gp.VLCap != wp.VLCap {
				t.Fatalf("node %#x port %d: got %+v, want %+v", w.GUID, p, gp, wp)
			}
		}
	}
	if len(got.Endpoints()) != len(want.Endpoints()) {
		t.Fatalf("%d endpoints, want %d", len(got.Endpoints()), len(want.Endpoints()))
	}
}

func TestDiscoverMatchesFile(t *testing.T) {
	tests := []struct {
		name string
		file func(t *testing.T) *netfile.File
		// SM attachment (0: the sim's default).
		smGUID uint64
		smPort uint8
		links  int
	}{
		{"line", line, 0, 0, 4},
		{"line from a switch", line, 0x20, 0, 4},
		{"fat tree 2 levels", func(t *testing.T) *netfile.File { return gen(t, topogen.FatTree{Radix: 4, Levels: 2}) }, 0, 0, 16},
		{"ring", func(t *testing.T) *netfile.File { return gen(t, topogen.Ring(5, 2)) }, 0, 0, 15},
		{"two-port CA", dualRail, 0, 0, 5},
		{"SM on a two-port CA, port 2", dualRail, 0x3000, 2, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.file(t)
			r := attach(t, f, tc.smGUID, tc.smPort, transport.Options{}, nil)
			fab, topo := r.discover(t)
			if len(fab.Warnings) != 0 {
				t.Fatalf("warnings on a healthy fabric: %q", fab.Warnings)
			}
			sameAsFile(t, topo, f)
			links := 0
			for i := range topo.Nodes {
				for p, pt := range topo.Nodes[i].Ports {
					if pt.Peer.Connected() && (pt.Peer.Node > int32(i) || (pt.Peer.Node == int32(i) && pt.Peer.Port > uint8(p))) {
						links++
					}
				}
			}
			if links != tc.links {
				t.Fatalf("%d links, want %d", links, tc.links)
			}
			// The SM's own node and port.
			if fab.SMGUID != r.sm || fab.SMPort != r.smP {
				t.Fatalf("SM at %#x/%d, attached at %#x/%d", fab.SMGUID, fab.SMPort, r.sm, r.smP)
			}
			if want := (topology.PortRef{Node: topo.NodeByGUID(r.sm), Port: r.smP}); topo.SM != want {
				t.Fatalf("topology SM = %+v, want %+v", topo.SM, want)
			}
			if n := fab.Nodes[r.sm]; n == nil || len(n.Path) != 0 {
				t.Fatalf("SM node missing or not at the empty path: %+v", n)
			}
			// Every recorded path leads to its node.
			for guid, n := range fab.Nodes {
				var ni smp.NodeInfo
				must(t, r.c.Get(context.Background(), n.Path, smp.AttrNodeInfo, 0, &ni))
				if ni.NodeGUID != guid {
					t.Fatalf("path %s of node %#x leads to %#x", n.Path, guid, ni.NodeGUID)
				}
				if (n.Switch != nil) != (ni.NodeType == smp.NodeTypeSwitch) {
					t.Fatalf("node %#x: SwitchInfo recorded %v for node type %d", guid, n.Switch != nil, ni.NodeType)
				}
			}
		})
	}
}

func TestSMPCountMatchesTransport(t *testing.T) {
	r := attach(t, line(t), 0, 0, transport.Options{}, nil)
	fab, _ := r.discover(t)
	if st := r.tr.Stats(); uint64(fab.SMPs) != st.Gets || st.Sets != 0 {
		t.Fatalf("discovery says %d SMPs, transport sent %d Gets %d Sets", fab.SMPs, st.Gets, st.Sets)
	}
	// line (a tree, so each cable is probed from one end only): 5 nodes
	// (NodeInfo + NodeDescription each), 3 switches (SwitchInfo + 4
	// PortInfo each), 2 CAs (1 PortInfo each).
	if want := int64(5*2 + 3*(1+4) + 2); fab.SMPs != want {
		t.Fatalf("SMPs = %d, want %d", fab.SMPs, want)
	}
}

func TestHashIndependentOfWindow(t *testing.T) {
	tests := []struct {
		name string
		file func(t *testing.T) *netfile.File
	}{
		{"fat tree", func(t *testing.T) *netfile.File { return gen(t, topogen.FatTree{Radix: 6, Levels: 2}) }},
		{"ring", func(t *testing.T) *netfile.File { return gen(t, topogen.Ring(6, 1)) }},
		{"two-port CA", dualRail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.file(t)
			var hashes []uint64
			for _, win := range []int{1, 64, 1, 64} {
				r := attach(t, f, 0, 0, transport.Options{Window: win}, nil)
				_, topo := r.discover(t)
				sameAsFile(t, topo, f)
				hashes = append(hashes, topo.Hash())
			}
			for i, h := range hashes {
				if h != hashes[0] {
					t.Fatalf("hashes differ across MAD windows 1/64: %x", hashes)
				}
				_ = i
			}
		})
	}
}

func TestLinkDownBeforeDiscovery(t *testing.T) {
	tests := []struct {
		name    string
		guid    uint64
		port    uint8
		missing []uint64
		nodes   int
	}{
		{"middle of the line", 0x20, 2, []uint64{0x30, 0x2000}, 3},
		{"host link", 0x30, 2, []uint64{0x2000}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := attach(t, line(t), 0, 0, transport.Options{}, nil)
			must(t, r.fab.LinkDown(tc.guid, tc.port))
			fab, topo := r.discover(t)
			if len(topo.Nodes) != tc.nodes {
				t.Fatalf("%d nodes, want %d", len(topo.Nodes), tc.nodes)
			}
			for _, g := range tc.missing {
				if topo.NodeByGUID(g) != topology.NoNode {
					t.Fatalf("node %#x behind the down link was discovered", g)
				}
			}
			i := topo.NodeByGUID(tc.guid)
			pt := topo.Nodes[i].Ports[tc.port]
			if pt.Peer.Connected() || pt.State != topology.StateDown {
				t.Fatalf("down port %#x/%d: %+v", tc.guid, tc.port, pt)
			}
			// A port that is simply down is not a problem worth a warning.
			if len(fab.Warnings) != 0 {
				t.Fatalf("warnings: %q", fab.Warnings)
			}
		})
	}
}

func TestDropRateWithRetries(t *testing.T) {
	f := gen(t, topogen.FatTree{Radix: 4, Levels: 2})
	r := attach(t, f, 0, 0, transport.Options{Timeout: 5 * time.Millisecond, Retries: 12, Window: 64}, nil)
	clean, _ := r.discover(t)
	must(t, r.fab.SetDropRate(0.1, 42))
	fab, topo := r.discover(t)
	sameAsFile(t, topo, f)
	if len(fab.Warnings) != 0 {
		t.Fatalf("warnings despite retries: %q", fab.Warnings)
	}
	if st := r.fab.Stats(); st.Dropped == 0 {
		t.Fatal("the fabric dropped nothing; the test proves nothing")
	}
	if r.tr.Stats().Retries == 0 {
		t.Fatal("no retries counted")
	}
	// Retries are the transport's business: discovery counts requests, so
	// loss must not inflate its count much (only the order in which the
	// two ends of a switch-switch cable probe each other may change).
	if fab.SMPs > clean.SMPs+int64(len(topo.Switches()))*4 {
		t.Fatalf("discovery made %d SMPs under loss, %d without", fab.SMPs, clean.SMPs)
	}
}

// blackhole drops every outbound DR SMP whose path starts with prefix: a
// cable that trained (ports Init) but passes no packets.
type blackhole struct {
	transport.Conn
	prefix []uint8
}

func (b *blackhole) Send(p transport.Packet) error {
	var s smp.SMP
	if err := s.Decode(p.MAD); err == nil && s.IsDR() && len(s.Path()) >= len(b.prefix) && bytes.Equal(s.Path()[:len(b.prefix)], b.prefix) {
		return nil
	}
	return b.Conn.Send(p)
}

func TestNodeBehindDeadLink(t *testing.T) {
	// Default SM port is H1[1]; path [1,2] crosses S1[2] to S2.
	f := line(t)
	r := attach(t, f, 0, 0, transport.Options{Timeout: 100 * time.Millisecond, Retries: transport.NoRetries},
		func(c transport.Conn) transport.Conn { return &blackhole{Conn: c, prefix: []uint8{1, 2}} })
	fab, topo := r.discover(t)
	if len(topo.Nodes) != 2 {
		t.Fatalf("found %d nodes, want H1 and S1", len(topo.Nodes))
	}
	if topo.NodeByGUID(0x20) != topology.NoNode {
		t.Fatal("S2 behind the dead link was found")
	}
	if len(fab.Warnings) != 1 {
		t.Fatalf("warnings = %q, want one", fab.Warnings)
	}
	w := fab.Warnings[0]
	if !strings.Contains(w, "0x0000000000000010 port 2") || !strings.Contains(w, transport.ErrTimeout.Error()) {
		t.Fatalf("warning %q does not name S1 port 2 and the timeout", w)
	}
	// The live port stays up in the snapshot but has no peer.
	if pt := topo.Nodes[topo.NodeByGUID(0x10)].Ports[2]; pt.Peer.Connected() || pt.State != topology.StateInit {
		t.Fatalf("S1 port 2: %+v", pt)
	}
}

func TestOwnNodeUnreadable(t *testing.T) {
	r := attach(t, line(t), 0, 0, transport.Options{Timeout: 100 * time.Millisecond, Retries: transport.NoRetries},
		func(c transport.Conn) transport.Conn { return &blackhole{Conn: c, prefix: nil} })
	_, err := (&discovery.Discoverer{C: r.c}).Run(context.Background())
	if !errors.Is(err, transport.ErrTimeout) || !strings.Contains(err.Error(), "SM's own node") {
		t.Fatalf("err = %v", err)
	}
}

func TestCancelled(t *testing.T) {
	r := attach(t, line(t), 0, 0, transport.Options{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&discovery.Discoverer{C: r.c}).Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
