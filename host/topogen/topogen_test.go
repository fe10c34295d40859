package topogen

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

func generate(t testing.TB, args ...string) *netfile.File {
	t.Helper()
	g, err := Parse(args)
	if err != nil {
		t.Fatalf("Parse(%q): %v", args, err)
	}
	f, err := g.Generate()
	if err != nil {
		t.Fatalf("Generate(%q): %v", args, err)
	}
	return f
}

type census struct{ switches, cas, links int }

func count(f *netfile.File) census {
	var c census
	for _, n := range f.Nodes {
		if n.Type == topology.Switch {
			c.switches++
		} else {
			c.cas++
		}
	}
	c.links = len(f.Links())
	return c
}

// checkInvariants verifies what every generated fabric must satisfy: ports
// within the declared count, symmetric cables, one-port CAs cabled to a
// switch on port 1, switches all declared with the same port count, short
// descriptions, and one connected component.
func checkInvariants(t *testing.T, f *netfile.File, switchPorts int) {
	t.Helper()
	for _, n := range f.Nodes {
		if len(n.Desc) == 0 || len(n.Desc) > 64 {
			t.Fatalf("%s: description %q is empty or longer than 64 bytes", n.Name, n.Desc)
		}
		switch n.Type {
		case topology.Switch:
			if n.NumPorts() != switchPorts {
				t.Fatalf("switch %s declares %d ports, want %d", n.Name, n.NumPorts(), switchPorts)
			}
		case topology.CA:
			if n.NumPorts() != 1 || n.Ports[1].Peer == nil || n.Ports[1].Peer.Type != topology.Switch {
				t.Fatalf("CA %s: want one port cabled to a switch", n.Name)
			}
		}
		for p := 1; p < len(n.Ports); p++ {
			pt := n.Ports[p]
			if pt.Peer == nil {
				continue
			}
			if pt.PeerPort < 1 || pt.PeerPort > pt.Peer.NumPorts() {
				t.Fatalf("%s[%d] -> %s[%d] is beyond the peer's %d ports", n.Name, p, pt.Peer.Name, pt.PeerPort, pt.Peer.NumPorts())
			}
			back := pt.Peer.Ports[pt.PeerPort]
			if back.Peer != n || back.PeerPort != p {
				t.Fatalf("%s[%d] -> %s[%d] is not symmetric", n.Name, p, pt.Peer.Name, pt.PeerPort)
			}
			if pt.Peer == n {
				t.Fatalf("%s[%d] is cabled to its own port %d", n.Name, p, pt.PeerPort)
			}
		}
	}
	if !fileConnected(f) {
		t.Fatalf("fabric is not connected")
	}
}

func TestCounts(t *testing.T) {
	tests := []struct {
		args  []string
		want  census
		ports int
	}{
		{[]string{"fat-tree", "--radix", "36", "--levels", "2"}, census{54, 648, 648 + 36*18}, 36},
		{[]string{"ft", "--radix", "36"}, census{54, 648, 648 + 36*18}, 36},
		{[]string{"ft", "--radix", "36", "--levels", "3"}, census{1620, 11664, 3 * 11664}, 36},
		{[]string{"ft", "--radix", "24", "--levels", "3"}, census{24*12*2 + 144, 3456, 3 * 3456}, 24},
		{[]string{"ft", "--radix", "48", "--levels", "3"}, census{2880, 27648, 3 * 27648}, 48},
		{[]string{"ft", "--radix", "8", "--levels", "4"}, census{3*128 + 64, 2 * 256, 4 * 512}, 8},
		{[]string{"ft", "--radix", "8", "--levels", "1"}, census{1, 8, 8}, 8},
		{[]string{"ft", "--radix", "36", "--levels", "2", "--cas", "10"}, census{54, 360, 360 + 36*18}, 36},
		{[]string{"ft", "--radix", "36", "--levels", "2", "--parallel", "2"}, census{27, 324, 324 + 18*18}, 36},
		{[]string{"ft", "--radix", "12", "--levels", "3", "--parallel", "3"}, census{8 + 8 + 4, 6 * 2 * 4, 3 * 48}, 12},
		{[]string{"ft", "--arity", "4", "--levels", "3"}, census{48, 64, 3 * 64}, 8},
		{[]string{"ft", "--arity", "2", "--levels", "5"}, census{5 * 16, 32, 5 * 32}, 4},
		{[]string{"ft", "--arity", "3", "--levels", "2", "--parallel", "2"}, census{6, 9, 9 + 2*9}, 9},
		{[]string{"ft", "--children", "8,16", "--parents", "1,4", "--cas", "6"}, census{20, 96, 96 + 64}, 16},
		{[]string{"ft", "--radix", "36", "--levels", "2", "--switch-ports", "40"}, census{54, 648, 1296}, 40},
		{[]string{"ring", "--switches", "6", "--cas", "1"}, census{6, 6, 12}, 3},
		{[]string{"ring", "--switches", "2", "--cas", "2"}, census{2, 4, 4 + 2}, 4},
		{[]string{"ring", "--switches", "1", "--cas", "3"}, census{1, 3, 3}, 5},
		{[]string{"torus", "--dims", "4x4x4", "--cas", "2"}, census{64, 128, 128 + 3*64}, 8},
		{[]string{"torus", "--dims", "2,3"}, census{6, 6, 6 + 6 + 6}, 5},
		{[]string{"mesh", "--dims", "4x4x4", "--cas", "2"}, census{64, 128, 128 + 3*48}, 8},
		{[]string{"mesh", "--dims", "8x1", "--cas", "0"}, census{8, 0, 7}, 4},
		{[]string{"random", "--switches", "32", "--degree", "8", "--cas", "256", "--seed", "7"}, census{32, 256, 256 + 128}, -1},
		{[]string{"random", "--switches", "64", "--degree", "3.5", "--cas", "128", "--switch-ports", "32"}, census{64, 128, 128 + 112}, 32},
		{[]string{"rrg", "--switches", "512", "--ports", "12", "--cas", "4", "--seed", "1"}, census{512, 2048, 2048 + 3072}, 16},
		{[]string{"rrg", "--switches", "5", "--ports", "3", "--cas", "1"}, census{5, 5, 5 + 7}, 4},
		{[]string{"rrg", "--switches", "8", "--ports", "7", "--cas", "0"}, census{8, 0, 28}, 7},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			f := generate(t, tt.args...)
			if got := count(f); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			ports := tt.ports
			if ports < 0 { // random: whatever the busiest switch needs
				ports = f.Nodes[len(f.Nodes)-1].NumPorts()
			}
			checkInvariants(t, f, ports)
		})
	}
}

// TestFatTreePorts pins the port convention of the 3-level radix-k tree:
// leaves use 1..k/2 for CAs and k/2+1..k for spines of their own pod;
// spines use 1..k/2 for the leaves of their pod (leaf j on port j+1) and
// k/2+1..k for cores; core port p+1 goes to pod p.
func TestFatTreePorts(t *testing.T) {
	const k = 12
	f := generate(t, "ft", "--radix", "12", "--levels", "3")
	level := func(n *netfile.Node) string {
		if n.Type == topology.CA {
			return "ca"
		}
		return strings.Split(n.Name, "-")[1]
	}
	var pod func(n *netfile.Node) int
	pod = func(n *netfile.Node) int {
		switch level(n) {
		case "ca":
			return pod(n.Ports[1].Peer)
		case "leaf", "spine":
			var p, i int
			var name string
			if _, err := fmt.Sscanf(n.Desc, "ft3 pod %d %s %d", &p, &name, &i); err != nil {
				t.Fatalf("%s: description %q: %v", n.Name, n.Desc, err)
			}
			return p
		}
		return -1
	}
	for _, n := range f.Nodes {
		if n.Type != topology.Switch {
			continue
		}
		for p := 1; p <= k; p++ {
			peer := n.Ports[p].Peer
			if peer == nil {
				t.Fatalf("%s[%d] unconnected in a full tree", n.Name, p)
			}
			var want string
			switch lv := level(n); {
			case lv == "leaf" && p <= k/2:
				want = "ca"
			case lv == "leaf", lv == "core":
				want = "spine"
			case lv == "spine" && p <= k/2:
				want = "leaf"
			default:
				want = "core"
			}
			if got := level(peer); got != want {
				t.Fatalf("%s[%d] -> %s (%s), want a %s", n.Name, p, peer.Name, got, want)
			}
			if level(n) == "core" && pod(peer) != p-1 {
				t.Fatalf("core %s port %d reaches pod %d, want pod %d", n.Name, p, pod(peer), p-1)
			}
			if want == "ca" || want == "leaf" || (level(n) == "leaf" && want == "spine") {
				if pod(peer) != pod(n) {
					t.Fatalf("%s (pod %d) port %d leaves its pod to %s (pod %d)", n.Name, pod(n), p, peer.Name, pod(peer))
				}
			}
			if want == "ca" && n.Ports[p].PeerPort != 1 {
				t.Fatalf("%s[%d] reaches CA port %d, want 1", n.Name, p, n.Ports[p].PeerPort)
			}
		}
	}
}

func run(t *testing.T, args ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := Write(args, &b); err != nil {
		t.Fatalf("Write(%q): %v", args, err)
	}
	return b.Bytes()
}

func TestDeterminism(t *testing.T) {
	tests := []struct {
		args   []string
		seeded bool
	}{
		{[]string{"random", "--switches", "32", "--degree", "8", "--cas", "256"}, true},
		{[]string{"rrg", "--switches", "64", "--ports", "6", "--cas", "2"}, true},
		{[]string{"ft", "--radix", "8", "--levels", "3"}, false},
		{[]string{"torus", "--dims", "3x3"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.args[0], func(t *testing.T) {
			seed := func(s string) []string {
				if !tt.seeded {
					return tt.args
				}
				return append(append([]string(nil), tt.args...), "--seed", s)
			}
			a := run(t, seed("7")...)
			b := run(t, seed("7")...)
			if !bytes.Equal(a, b) {
				t.Fatalf("same seed gave different files")
			}
			if !tt.seeded {
				return
			}
			c := run(t, seed("8")...)
			// Only the command line in the first comment may not differ.
			body := func(x []byte) []byte { return x[bytes.IndexByte(x, '\n'):] }
			if bytes.Equal(body(a), body(c)) {
				t.Fatalf("seeds 7 and 8 gave the same fabric")
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	for _, args := range [][]string{
		{"ft", "--radix", "36", "--levels", "2"},
		{"ft", "--arity", "3", "--levels", "3", "--parallel", "2", "--speed", "EDR"},
		{"ring", "--switches", "6", "--cas", "1", "--width", "12x"},
		{"torus", "--dims", "2x2x2", "--cas", "1"},
		{"mesh", "--dims", "3x4"},
		{"random", "--switches", "32", "--degree", "8", "--cas", "256", "--seed", "7"},
		{"rrg", "--switches", "40", "--ports", "5", "--cas", "3"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			f := generate(t, args...)
			text := run(t, args...)
			back, err := netfile.Parse("gen.net", bytes.NewReader(text))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got, want := count(back), count(f); got != want {
				t.Fatalf("parsed %+v, generated %+v", got, want)
			}
			ta, err := f.Topology()
			if err != nil {
				t.Fatal(err)
			}
			tb, err := back.Topology()
			if err != nil {
				t.Fatal(err)
			}
			if ta.Hash() != tb.Hash() {
				t.Fatalf("topology hash changed across write and parse")
			}
			for _, n := range f.Nodes {
				m := back.NodeByGUID(n.GUID)
				if m == nil || m.Name != n.Name || m.Desc != n.Desc || m.NumPorts() != n.NumPorts() {
					t.Fatalf("node %s (0x%016x) did not survive the round trip", n.Name, n.GUID)
				}
			}
		})
	}
}

func TestGUIDs(t *testing.T) {
	f := generate(t, "ft", "--radix", "4", "--levels", "2")
	if g := f.Node("ft2-leaf-0").GUID; g != SwitchGUIDBase {
		t.Fatalf("first switch GUID 0x%016x, want 0x%016x", g, SwitchGUIDBase)
	}
	ca := f.Node("ft2-leaf-0-host-1")
	if ca.GUID != CAGUIDBase+2 || ca.Ports[1].GUID != CAGUIDBase+3 {
		t.Fatalf("second CA GUIDs 0x%016x/0x%016x, want node 0x%016x, port +1", ca.GUID, ca.Ports[1].GUID, CAGUIDBase+2)
	}
	if f.Nodes[0].Type != topology.CA {
		t.Fatalf("first node is a %v; ibsim's default attach point should be a CA", f.Nodes[0].Type)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "missing topology kind"},
		{[]string{"hypercube"}, "unknown topology kind"},
		{[]string{"ft", "--radix", "35"}, "must be even"},
		{[]string{"ft", "--radix", "36", "--arity", "4"}, "exactly one of"},
		{[]string{"ft"}, "exactly one of"},
		{[]string{"ft", "--arity", "4"}, "--levels"},
		{[]string{"ft", "--radix", "36", "--cas", "19"}, "give 1..18"},
		{[]string{"ft", "--radix", "36", "--cas", "0"}, "without CAs"},
		{[]string{"ft", "--radix", "36", "--parallel", "4"}, "does not divide"},
		{[]string{"ft", "--radix", "36", "--switch-ports", "20"}, "raise --switch-ports"},
		{[]string{"ft", "--radix", "64", "--levels", "3"}, "unicast LIDs"},
		{[]string{"ft", "--radix", "36", "--levels", "9"}, "unicast LIDs"},
		{[]string{"ft", "--children", "4,4", "--parents", "2,4"}, "first entry must be 1"},
		{[]string{"ft", "--children", "4,4", "--parents", "1"}, "one per level"},
		{[]string{"ft", "--children", "4,x"}, "list of integers"},
		{[]string{"ft", "--radix", "36", "extra"}, "unexpected argument"},
		{[]string{"ft", "--bogus", "1"}, "ibsm topo fat-tree -h"},
		{[]string{"ring"}, "give --switches"},
		{[]string{"ring", "--switches", "4", "--cas", "-1"}, "give 0 to 254"},
		{[]string{"torus"}, "give --dims"},
		{[]string{"torus", "--dims", "4x0"}, "needs 1 to"},
		{[]string{"torus", "--dims", "4xq"}, "list of integers"},
		{[]string{"torus", "--dims", "2x2", "--width", "3x"}, "not one of"},
		{[]string{"torus", "--dims", "2x2", "--speed", "fast"}, "not one of"},
		{[]string{"torus", "--dims", "2x2x2", "--cas", "252"}, "258 ports"},
		{[]string{"random", "--switches", "32", "--degree", "8"}, "give --cas"},
		{[]string{"random", "--switches", "32", "--degree", "1", "--cas", "4"}, "raise --degree"},
		{[]string{"random", "--switches", "8", "--degree", "8", "--cas", "4"}, "between 0 and 7"},
		{[]string{"random", "--switches", "8", "--degree", "4", "--cas", "4", "--switch-ports", "3"}, "--switch-ports"},
		{[]string{"random", "--switches", "0", "--degree", "4", "--cas", "4"}, "--switches"},
		{[]string{"rrg", "--switches", "4", "--ports", "4"}, "1..3"},
		{[]string{"rrg", "--switches", "8", "--ports", "1"}, "cannot connect"},
		{[]string{"rrg", "--ports", "4"}, "give --switches"},
		{[]string{"rrg", "--switches", "8", "--ports", "3", "--switch-ports", "2"}, "--switch-ports"},
		{[]string{"rrg", "--switches", "8", "--ports", "3", "--cas", "9223372036854775807"}, "CAs per switch"},
		{[]string{"torus", "--dims", "9223372036854775807x9223372036854775807"}, "switches"},
		{[]string{"torus", "--dims", "4x4", "--cas", "9223372036854775807"}, "CAs per switch"},
		{[]string{"ft", "--arity", "2", "--levels", "2", "--parallel", "9223372036854775807"}, "cables per switch pair"},
		{[]string{"ft", "--arity", "300", "--levels", "2"}, "give 1 to 254"},
		{[]string{"ft", "--arity", "200", "--levels", "2"}, "ports"},
		{[]string{"ft", "--children", "4,1000000", "--parents", "1,2"}, "must be 1 to 254"},
		{[]string{"ft", "--levels", "-3", "--radix", "4"}, "1 to 16"},
		{[]string{"random", "--switches", "8", "--degree", "+Inf", "--cas", "1"}, "--degree"},
		{[]string{"random", "--switches", "8", "--degree", "NaN", "--cas", "1"}, "--degree"},
		{[]string{"random", "--switches", "8", "--degree", "4", "--cas", "99999999999"}, "unicast LIDs"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var b bytes.Buffer
			_, err := Write(tt.args, &b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Write(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
			if b.Len() != 0 {
				t.Fatalf("Write wrote %d bytes despite failing", b.Len())
			}
		})
	}
}

// TestParseHelp: -h after a kind is flag.ErrHelp, for the command to
// print that kind's help.
func TestParseHelp(t *testing.T) {
	if _, err := Parse([]string{"ring", "-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("Parse(ring -h) = %v, want flag.ErrHelp", err)
	}
}

func BenchmarkFatTree48x3(b *testing.B) {
	for b.Loop() {
		if _, err := (FatTree{Radix: 48, Levels: 3}).Generate(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFatTree48x3Write(b *testing.B) {
	f, err := FatTree{Radix: 48, Levels: 3}.Generate()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var buf bytes.Buffer
		if err := netfile.Write(&buf, f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRRG512(b *testing.B) {
	for b.Loop() {
		if _, err := (RRG{Switches: 512, NetPorts: 12, CAsPerSwitch: 4, Seed: 1}).Generate(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGridPorts pins the torus/mesh/ring convention: CAs on 1..h, then per
// dimension d the "+" neighbour on h+2d+1 and the "−" one on h+2d+2.
func TestGridPorts(t *testing.T) {
	tests := []struct {
		args       []string
		from       string
		port       int
		to         string // "" = unconnected
		remotePort int
	}{
		{[]string{"torus", "--dims", "3x3", "--cas", "1"}, "torus-0-0", 2, "torus-1-0", 3},
		{[]string{"torus", "--dims", "3x3", "--cas", "1"}, "torus-0-0", 4, "torus-0-1", 5},
		{[]string{"torus", "--dims", "3x3", "--cas", "1"}, "torus-2-1", 2, "torus-0-1", 3},
		{[]string{"torus", "--dims", "3x3", "--cas", "1"}, "torus-1-0", 5, "torus-1-2", 4},
		{[]string{"torus", "--dims", "3x3", "--cas", "1"}, "torus-1-2", 1, "torus-1-2-host-0", 1},
		{[]string{"mesh", "--dims", "3x3", "--cas", "1"}, "mesh-2-1", 2, "", 0},
		{[]string{"mesh", "--dims", "3x3", "--cas", "1"}, "mesh-1-0", 5, "", 0},
		{[]string{"mesh", "--dims", "3x3", "--cas", "1"}, "mesh-1-1", 4, "mesh-1-2", 5},
		{[]string{"ring", "--switches", "6", "--cas", "2"}, "ring-5", 3, "ring-0", 4},
		{[]string{"ring", "--switches", "6", "--cas", "2"}, "ring-0", 4, "ring-5", 3},
		{[]string{"ring", "--switches", "2", "--cas", "1"}, "ring-0", 2, "ring-1", 3},
		{[]string{"ring", "--switches", "2", "--cas", "1"}, "ring-1", 2, "ring-0", 3},
		{[]string{"torus", "--dims", "2x1"}, "torus-0-0", 4, "", 0},
	}
	for _, tt := range tests {
		f := generate(t, tt.args...)
		n := f.Node(tt.from)
		if n == nil {
			t.Fatalf("%q: no node %s", tt.args, tt.from)
		}
		pt := n.Ports[tt.port]
		switch {
		case tt.to == "" && pt.Peer != nil:
			t.Errorf("%q: %s[%d] -> %s[%d], want unconnected", tt.args, tt.from, tt.port, pt.Peer.Name, pt.PeerPort)
		case tt.to != "" && (pt.Peer == nil || pt.Peer.Name != tt.to || pt.PeerPort != tt.remotePort):
			t.Errorf("%q: %s[%d] -> %v, want %s[%d]", tt.args, tt.from, tt.port, pt.Peer, tt.to, tt.remotePort)
		}
	}
}

// TestNeighbourPorts pins the random kinds' convention: CAs on 1..h_s,
// then the neighbours in ascending switch order on consecutive ports.
func TestNeighbourPorts(t *testing.T) {
	for _, args := range [][]string{
		{"rrg", "--switches", "30", "--ports", "5", "--cas", "3"},
		{"random", "--switches", "30", "--degree", "5", "--cas", "70"},
	} {
		f := generate(t, args...)
		for _, n := range f.Nodes {
			if n.Type != topology.Switch {
				continue
			}
			cas, last := 0, uint64(0)
			for p := 1; p <= n.NumPorts(); p++ {
				peer := n.Ports[p].Peer
				switch {
				case peer == nil:
					last = ^uint64(0)
				case peer.Type == topology.CA:
					if p != cas+1 {
						t.Fatalf("%q: %s has a CA on port %d after switch ports", args, n.Name, p)
					}
					cas++
				case peer.GUID <= last:
					t.Fatalf("%q: %s port %d: neighbour %s out of order or after a gap", args, n.Name, p, peer.Name)
				default:
					last = peer.GUID
				}
			}
		}
	}
}
