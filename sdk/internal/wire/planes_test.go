package wire

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/topology"
	"google.golang.org/protobuf/proto"
)

// scalarBad is the obvious per-entry rule portCheck must agree with.
func scalarBad(lim []uint8, pl []byte) int {
	for s, p := range pl {
		if p != plan.NoPort && p > lim[s] {
			return s
		}
	}
	return -1
}

// checkOf builds a portCheck straight from per-switch limits.
func checkOf(lim []uint8) *portCheck {
	c := &portCheck{lim: lim, even: make([]uint64, len(lim)/8), odd: make([]uint64, len(lim)/8)}
	for w := range c.even {
		for j := 0; j < 4; j++ {
			c.even[w] |= (256 + uint64(lim[8*w+2*j]) + 1) << (16 * j)
			c.odd[w] |= (256 + uint64(lim[8*w+2*j+1]) + 1) << (16 * j)
		}
	}
	return c
}

func TestPortCheckMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, nsw := range []int{0, 1, 7, 8, 9, 16, 63, 64, 1000} {
		for trial := 0; trial < 300; trial++ {
			lim := make([]uint8, nsw)
			pl := make([]byte, nsw)
			for s := range lim {
				lim[s] = []uint8{0, 1, 36, 48, 253, 254, uint8(rng.IntN(255))}[rng.IntN(7)]
				switch rng.IntN(4) {
				case 0:
					pl[s] = plan.NoPort
				case 1:
					pl[s] = lim[s] // the highest valid port
				default:
					pl[s] = uint8(rng.IntN(int(lim[s]) + 1))
				}
			}
			if trial%2 == 1 && nsw > 0 {
				// One entry just out of range, or any byte at all.
				s := rng.IntN(nsw)
				if rng.IntN(2) == 0 && lim[s] < 254 {
					pl[s] = lim[s] + 1
				} else {
					pl[s] = uint8(rng.Uint32())
				}
			}
			c := checkOf(lim)
			if got, want := c.firstBad(pl), scalarBad(lim, pl); got != want {
				t.Fatalf("nsw %d: firstBad = %d, scalar says %d (lim %v, plane %v)", nsw, got, want, lim, pl)
			}
		}
	}
}

func FuzzPortCheck(f *testing.F) {
	f.Add([]byte{36, 36, 36, 36, 36, 36, 36, 36, 36}, []byte{1, 2, 255, 36, 0, 5, 6, 7, 37})
	f.Add([]byte{254, 0, 1, 2, 3, 4, 5, 6}, []byte{254, 255, 2, 1, 0, 4, 5, 6})
	f.Fuzz(func(t *testing.T, lim, pl []byte) {
		n := min(len(lim), len(pl))
		lim, pl = lim[:n], pl[:n]
		for s := range lim {
			lim[s] = min(lim[s], 254) // a node has at most 254 external ports
		}
		if got, want := checkOf(lim).firstBad(pl), scalarBad(lim, pl); got != want {
			t.Fatalf("firstBad = %d, scalar says %d", got, want)
		}
	})
}

// TestPlanesRoundTripBatches sends planes with mixed counts through batches
// small enough to split the run many times and checks every byte, the
// aliasing caps and that nothing was split mid-destination.
func TestPlanesRoundTripBatches(t *testing.T) {
	topo := fuzzTopo(t)
	eps := len(topo.Endpoints())
	nsw := len(topo.Switches())
	dests := make([]plan.DestPlanes, eps)
	for e := range dests {
		dests[e].Planes = make([]plan.Plane, 1+e%4)
		for k := range dests[e].Planes {
			pl := make(plan.Plane, nsw)
			for s := range pl {
				pl[s] = uint8((e + k + s) % 4) // ports 0..3 exist on every switch
			}
			if e%3 == 0 {
				pl[k%nsw] = plan.NoPort
			}
			dests[e].Planes[k] = pl
		}
	}
	for _, batch := range []int{1, nsw, 2*nsw + 1, 5 * nsw, PlaneBatchBytes} {
		var chunks []*pb.Chunk
		if err := sendPlanes(func(c *pb.Chunk) error { chunks = append(chunks, c); return nil }, topo, dests, nil, batch); err != nil {
			t.Fatal(err)
		}
		for _, c := range chunks {
			b := c.GetPlanes()
			total := 0
			for _, n := range b.Counts {
				total += int(n)
			}
			if len(b.Planes) != total*nsw || int(b.Width) != nsw {
				t.Fatalf("batch %d: block of %d bytes for %d planes of width %d", batch, len(b.Planes), total, b.Width)
			}
		}
		got, err := recvPlanes(unframe(frame(chunks)), topo, eps, func(int) (int, int) { return 1, 4 })
		if err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
		for e := range dests {
			if len(got[e].Planes) != len(dests[e].Planes) || cap(got[e].Planes) != len(got[e].Planes) {
				t.Fatalf("batch %d: destination %d has %d planes (cap %d), want %d", batch, e, len(got[e].Planes), cap(got[e].Planes), len(dests[e].Planes))
			}
			for k, pl := range got[e].Planes {
				if string(pl) != string(dests[e].Planes[k]) || cap(pl) != nsw {
					t.Fatalf("batch %d: destination %d plane %d = %v (cap %d), want %v", batch, e, k, pl, cap(pl), dests[e].Planes[k])
				}
			}
		}
	}
}

func TestSendPlanesRefusesMalformed(t *testing.T) {
	topo := fuzzTopo(t)
	nsw := len(topo.Switches())
	good := func() []plan.DestPlanes {
		d := make([]plan.DestPlanes, len(topo.Endpoints()))
		for e := range d {
			d[e].Planes = []plan.Plane{make(plan.Plane, nsw)}
		}
		return d
	}
	long := good()
	long[2].Planes[0] = append(long[2].Planes[0], 1)
	many := good()
	many[1].Planes = make([]plan.Plane, 129)
	for name, tc := range map[string]struct {
		dests []plan.DestPlanes
		want  string
	}{
		"long plane":      {long, "destination endpoint 2 plane 0 has 4 entries, want one per switch (3)"},
		"too many planes": {many, "destination endpoint 1 has 129 planes, at most 128"},
	} {
		err := sendPlanes(func(*pb.Chunk) error { return nil }, topo, tc.dests, nil, PlaneBatchBytes)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}

// TestRecvPlanesRefusesMalformed feeds hand-made batches, each wrong in one
// way, and wants the error to say which.
func TestRecvPlanesRefusesMalformed(t *testing.T) {
	topo := fuzzTopo(t)
	eps := len(topo.Endpoints()) // 8: 3 switches, 3 CAs, one CA with 2 ports
	nsw := len(topo.Switches())
	ok := func(first, n int) *pb.PlaneBatch {
		return &pb.PlaneBatch{First: uint32(first), Width: uint32(nsw), Counts: repeat(1, n), Planes: repeat(1, n*nsw)}
	}
	planes := func(b *pb.PlaneBatch) *pb.Chunk { return &pb.Chunk{Part: &pb.Chunk_Planes{Planes: b}} }
	tests := []struct {
		name   string
		chunks []*pb.Chunk
		want   string
	}{
		{"all good", []*pb.Chunk{planes(ok(0, 5)), planes(ok(5, eps-5))}, ""},
		{"gap", []*pb.Chunk{planes(ok(0, 5)), planes(ok(6, eps-6))}, "plane batch starts at destination 6, expected 5"},
		{"width", []*pb.Chunk{planes(&pb.PlaneBatch{Width: 4, Counts: repeat(1, eps), Planes: repeat(1, 4*eps)})}, "planes are 4 entries wide, want one per switch (3)"},
		{"empty batch", []*pb.Chunk{planes(&pb.PlaneBatch{Width: uint32(nsw)})}, "empty plane batch at destination 0"},
		{"overlong", []*pb.Chunk{planes(ok(0, eps+1))}, "planes for more than the 8 destinations declared"},
		{"zero planes", []*pb.Chunk{planes(&pb.PlaneBatch{Width: uint32(nsw), Counts: append(repeat(1, 3), 0), Planes: repeat(1, 3*nsw)})}, "destination endpoint 3 has 0 planes, want 1..2"},
		{"three planes", []*pb.Chunk{planes(&pb.PlaneBatch{Width: uint32(nsw), Counts: []byte{3}, Planes: repeat(1, 3*nsw)})}, "destination endpoint 0 has 3 planes, want 1..2"},
		{"short block", []*pb.Chunk{planes(&pb.PlaneBatch{Width: uint32(nsw), Counts: []byte{1, 2}, Planes: repeat(1, 3*nsw-1)})}, "carries 8 bytes, want 9 (3 planes of 3 switches)"},
		{"long block", []*pb.Chunk{planes(&pb.PlaneBatch{Width: uint32(nsw), Counts: []byte{1}, Planes: repeat(1, nsw+1)})}, "carries 4 bytes, want 3"},
		{"bad port", []*pb.Chunk{planes(&pb.PlaneBatch{Width: uint32(nsw), Counts: []byte{1, 1}, Planes: []byte{1, 2, 3, 1, 6, 3}})}, "destination endpoint 1 plane 0: switch 1 (0x0000000000000002) out-port 6 does not exist (switch has 5 ports)"},
		{"wrong chunk", []*pb.Chunk{{Part: &pb.Chunk_Paths{Paths: &pb.PathBatch{}}}}, "got paths chunk, want planes"},
		{"stream ends", []*pb.Chunk{planes(ok(0, 2))}, "stream ended while expecting planes (have 2 of 8 destinations)"},
	}
	for _, tc := range tests {
		_, err := recvPlanes(unframe(frame(tc.chunks)), topo, eps, func(int) (int, int) { return 1, 2 })
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func repeat(b byte, n int) []byte { return []byte(strings.Repeat(string([]byte{b}), n)) }

// TestTopologyBatches round-trips a topology through node batches of every
// size from one node up and checks descriptions survive byte for byte
// (non-UTF-8 included: NodeDescription is raw bytes).
func TestTopologyBatches(t *testing.T) {
	b := topology.NewBuilder()
	up := topology.Port{State: topology.StateActive, VLCap: 4, Width: 2, Speed: 4}
	for s := uint64(1); s <= 40; s++ {
		n := topology.Node{GUID: s, Type: topology.Switch, Desc: "sw\xff" + strings.Repeat("x", int(s)), Ports: []topology.Port{{GUID: s}, up, up, up}}
		if err := b.AddNode(n); err != nil {
			t.Fatal(err)
		}
		if s > 1 {
			b.Link(s-1, 1, s, 2)
		}
	}
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1, 200, BatchBytes} {
		var chunks []*pb.Chunk
		if err := sendTopology(func(c *pb.Chunk) error { chunks = append(chunks, c); return nil }, topo, size); err != nil {
			t.Fatal(err)
		}
		if size == 1 && len(chunks) != 1+len(topo.Nodes) {
			t.Fatalf("one node per batch gave %d chunks for %d nodes", len(chunks), len(topo.Nodes))
		}
		got, err := recvTopology(unframe(frame(chunks)))
		if err != nil {
			t.Fatalf("batch %d: %v", size, err)
		}
		for i := range topo.Nodes {
			if got.Nodes[i].Desc != topo.Nodes[i].Desc {
				t.Fatalf("batch %d: node %d desc %q, want %q", size, i, got.Nodes[i].Desc, topo.Nodes[i].Desc)
			}
		}
	}
}

// TestRecvTopologyRefusesMalformedColumns breaks one column of a valid node
// batch at a time.
func TestRecvTopologyRefusesMalformedColumns(t *testing.T) {
	topo := fuzzTopo(t)
	var chunks []*pb.Chunk
	if err := SendTopology(func(c *pb.Chunk) error { chunks = append(chunks, c); return nil }, topo); err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 2 {
		t.Fatalf("%d chunks, want header and one batch", len(chunks))
	}
	tests := []struct {
		name    string
		breakIt func(b *pb.NodeBatch)
		want    string
	}{
		{"types short", func(b *pb.NodeBatch) { b.Type = b.Type[1:] }, "has 7 GUIDs but 6 types"},
		{"desc bytes", func(b *pb.NodeBatch) { b.DescLen[0]++ }, "lengths say"},
		{"port column", func(b *pb.NodeBatch) { b.PeerPort = b.PeerPort[1:] }, "per-port columns do not all have"},
		{"port count", func(b *pb.NodeBatch) { b.NumPorts[0], b.NumPorts[1] = 1, b.NumPorts[1]+b.NumPorts[0]-1 }, "has 1 port entries, want 2..255"},
		{"node type", func(b *pb.NodeBatch) { b.Type[2] = 9 }, "has node type 9"},
		{"order", func(b *pb.NodeBatch) { b.Guid[1] = b.Guid[0] }, "not in ascending GUID order"},
		{"peer", func(b *pb.NodeBatch) { b.PeerNode[3] = 7 }, "names peer node 7 of 7"},
		{"empty", func(b *pb.NodeBatch) { *b = pb.NodeBatch{} }, "empty node batch after 0 of 7 nodes"},
	}
	for _, tc := range tests {
		b := proto.Clone(chunks[1].GetNodes()).(*pb.NodeBatch)
		tc.breakIt(b)
		_, err := recvTopology(unframe(frame([]*pb.Chunk{chunks[0], {Part: &pb.Chunk_Nodes{Nodes: b}}})))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
