package sdk

import (
	"io"
	"testing"

	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/topology"
)

func fuzzMcastTopo(t testing.TB) *topology.Topology {
	b := topology.NewBuilder()
	sw := func(g uint64) {
		ports := make([]topology.Port, 5)
		for i := range ports {
			ports[i] = topology.Port{GUID: g, State: topology.StateActive, Width: 2, Speed: 1, VLCap: 4}
		}
		if err := b.AddNode(topology.Node{GUID: g, Type: topology.Switch, Ports: ports}); err != nil {
			t.Fatal(err)
		}
	}
	sw(1)
	sw(2)
	for i := uint64(0); i < 3; i++ {
		g := 0x100 + i
		if err := b.AddNode(topology.Node{GUID: g, Type: topology.CA, Ports: []topology.Port{{}, {GUID: g, State: topology.StateActive, Width: 2, Speed: 1, VLCap: 4}}}); err != nil {
			t.Fatal(err)
		}
		b.Link(1+i%2, uint8(2+i), g, 1)
	}
	b.Link(1, 1, 2, 1)
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func recvOf(chunks ...*pb.Chunk) func() (*pb.Chunk, error) {
	return func() (*pb.Chunk, error) {
		if len(chunks) == 0 {
			return nil, io.EOF
		}
		c := chunks[0]
		chunks = chunks[1:]
		return c, nil
	}
}

// FuzzRecvMcast feeds arbitrary columns to both multicast decoders: they
// fail or return values that pass the checks; they never panic.
func FuzzRecvMcast(f *testing.F) {
	f.Add(uint16(0xC000), []byte{2}, []byte{3, 4}, []byte{1, 1}, []byte{1, 2}, []byte{2, 3})
	f.Add(uint16(0xC001), []byte{0}, []byte{}, []byte{}, []byte{}, []byte{})
	f.Add(uint16(0x10), []byte{9}, []byte{3}, []byte{1}, []byte{1}, []byte{200})
	f.Fuzz(func(t *testing.T, mlid uint16, counts, nodes, ports, states, extra []byte) {
		topo := fuzzMcastTopo(t)
		gb := &pb.McastGroupBatch{Mlid: []uint32{uint32(mlid)}, MemberPort: ports, JoinState: states}
		for _, c := range counts {
			gb.NumMembers = append(gb.NumMembers, uint32(c))
		}
		for _, n := range nodes {
			gb.MemberNode = append(gb.MemberNode, int32(n)-2)
		}
		groups, err := recvGroups(recvOf(&pb.Chunk{Part: &pb.Chunk_McastGroups{McastGroups: gb}}), topo, 1)
		if err == nil {
			req := MulticastRequest{Topo: topo, Groups: groups}
			_ = req.Check() // must not panic either way
		}
		tb := &pb.McastTreeBatch{Mlid: []uint32{uint32(mlid)}, Ports: extra}
		for _, c := range counts {
			tb.NumSwitches = append(tb.NumSwitches, uint32(c))
		}
		for i, n := range nodes {
			tb.Node = append(tb.Node, int32(n)-2)
			if i < len(ports) {
				tb.NumPorts = append(tb.NumPorts, uint32(ports[i]))
			}
		}
		req := MulticastRequest{Topo: topo, Groups: []MulticastGroup{{MLID: mlid}}}
		trees, err := recvTrees(recvOf(&pb.Chunk{Part: &pb.Chunk_McastTrees{McastTrees: tb}}), &req)
		if err == nil {
			if err := CheckTrees(&req, trees); err != nil {
				t.Fatalf("decoded trees fail CheckTrees: %v", err)
			}
			_ = VerifyTree(topo, &req.Groups[0], &trees[0])
		}
	})
}
