package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ibsm/ibsm/sdk/internal/wire"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/topology"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// mcastBatchEntries bounds the members (or tree ports) one batch carries:
// about wire.BatchBytes at ~6 bytes an entry.
const mcastBatchEntries = wire.BatchBytes / 6

// RouteMulticast runs the plugin's multicast router. The request and the
// answer are both checked (MulticastRequest.Check, CheckTrees).
func (c *RemoteClient) RouteMulticast(ctx context.Context, req MulticastRequest) ([]MulticastTree, error) {
	if err := req.Check(); err != nil {
		return nil, fmt.Errorf("multicast request: %w", err)
	}
	return exchange(ctx, c, func(ctx context.Context) (chunkStream, error) { return c.mcast.RouteMulticast(ctx) },
		&pb.Start{NumGroups: uint32(len(req.Groups))}, req.Topo,
		func(send wire.Send) error { return sendGroups(send, req.Groups, mcastBatchEntries) },
		func(recv wire.Recv) ([]MulticastTree, error) { return recvTrees(recv, &req) })
}

func (s *server) RouteMulticast(stream pb.MulticastRouter_RouteMulticastServer) error {
	return s.guard("RouteMulticast", func() error {
		st, err := wire.RecvStart(stream.Recv)
		if err != nil {
			return badInput(err)
		}
		topo, err := s.recvTopology(stream.Recv)
		if err != nil {
			return err
		}
		groups, err := recvGroups(stream.Recv, topo, st.NumGroups)
		if err != nil {
			return badInput(err)
		}
		if err := wire.ExpectEnd(stream.Recv); err != nil {
			return badInput(err)
		}
		req := MulticastRequest{Topo: topo, Groups: groups}
		if err := req.Check(); err != nil {
			return status.Errorf(codes.InvalidArgument, "multicast request: %v", err)
		}
		ctx, done := s.callCtx(stream.Context())
		defer done()
		trees, err := s.impl.(MulticastRouter).RouteMulticast(ctx, req)
		if err != nil {
			return implErr("route multicast", err)
		}
		if err := CheckTrees(&req, trees); err != nil {
			return status.Errorf(codes.Internal, "plugin answered malformed trees: %v", err)
		}
		return implErr("sending trees", sendTrees(stream.Send, trees, mcastBatchEntries))
	})
}

// sendGroups writes groups in batches of about limit members; a group is
// never split.
func sendGroups(send wire.Send, groups []MulticastGroup, limit int) error {
	b := &pb.McastGroupBatch{}
	flush := func() error {
		if len(b.Mlid) == 0 {
			return nil
		}
		err := send(&pb.Chunk{Part: &pb.Chunk_McastGroups{McastGroups: b}})
		b = &pb.McastGroupBatch{}
		return err
	}
	for _, g := range groups {
		b.Mlid = append(b.Mlid, uint32(g.MLID))
		b.NumMembers = append(b.NumMembers, uint32(len(g.Members)))
		for _, m := range g.Members {
			b.MemberNode = append(b.MemberNode, m.Port.Node)
			b.MemberPort = append(b.MemberPort, m.Port.Port)
			b.JoinState = append(b.JoinState, uint8(m.State))
		}
		if len(b.MemberNode) >= limit {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// recvGroups reads n groups; the columns must agree in length.
func recvGroups(recv wire.Recv, topo *topology.Topology, n uint32) ([]MulticastGroup, error) {
	if n > MaxMLID-MinMLID+1 {
		return nil, fmt.Errorf("%d groups: more than there are MLIDs", n)
	}
	groups := make([]MulticastGroup, 0, n)
	for uint32(len(groups)) < n {
		c, err := recvChunk(recv, "mcast_groups")
		if err != nil {
			return nil, err
		}
		b := c.GetMcastGroups()
		if b == nil || len(b.Mlid) == 0 {
			return nil, fmt.Errorf("protocol error: want a non-empty mcast_groups chunk")
		}
		if len(b.NumMembers) != len(b.Mlid) || len(b.MemberPort) != len(b.MemberNode) || len(b.JoinState) != len(b.MemberNode) {
			return nil, fmt.Errorf("mcast_groups: column lengths disagree (%d mlid, %d num_members, %d/%d/%d member columns)",
				len(b.Mlid), len(b.NumMembers), len(b.MemberNode), len(b.MemberPort), len(b.JoinState))
		}
		if uint32(len(groups)+len(b.Mlid)) > n {
			return nil, fmt.Errorf("mcast_groups: more groups than the %d announced", n)
		}
		at := 0
		for i, mlid := range b.Mlid {
			k := int(b.NumMembers[i])
			if mlid > MaxMLID || k > len(b.MemberNode)-at {
				return nil, fmt.Errorf("mcast_groups: group %d: MLID %#x or member count %d out of range", len(groups), mlid, k)
			}
			g := MulticastGroup{MLID: uint16(mlid), Members: make([]MulticastMember, k)}
			for j := range k {
				g.Members[j] = MulticastMember{Port: topology.PortRef{Node: b.MemberNode[at+j], Port: b.MemberPort[at+j]}, State: JoinState(b.JoinState[at+j])}
			}
			at += k
			groups = append(groups, g)
		}
		if at != len(b.MemberNode) {
			return nil, fmt.Errorf("mcast_groups: %d members left over", len(b.MemberNode)-at)
		}
	}
	return groups, nil
}

func sendTrees(send wire.Send, trees []MulticastTree, limit int) error {
	b := &pb.McastTreeBatch{}
	flush := func() error {
		if len(b.Mlid) == 0 {
			return nil
		}
		err := send(&pb.Chunk{Part: &pb.Chunk_McastTrees{McastTrees: b}})
		b = &pb.McastTreeBatch{}
		return err
	}
	for _, t := range trees {
		b.Mlid = append(b.Mlid, uint32(t.MLID))
		b.NumSwitches = append(b.NumSwitches, uint32(len(t.Switches)))
		for _, s := range t.Switches {
			b.Node = append(b.Node, s.Node)
			b.NumPorts = append(b.NumPorts, uint32(len(s.Out)))
			b.Ports = append(b.Ports, s.Out...)
		}
		if len(b.Ports)+len(b.Node) >= limit {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// recvTrees reads one tree per group of req and checks them (CheckTrees).
func recvTrees(recv wire.Recv, req *MulticastRequest) ([]MulticastTree, error) {
	n := len(req.Groups)
	trees := make([]MulticastTree, 0, n)
	for len(trees) < n {
		c, err := recvChunk(recv, "mcast_trees")
		if err != nil {
			return nil, err
		}
		b := c.GetMcastTrees()
		if b == nil || len(b.Mlid) == 0 {
			return nil, fmt.Errorf("protocol error: want a non-empty mcast_trees chunk")
		}
		if len(b.NumSwitches) != len(b.Mlid) || len(b.NumPorts) != len(b.Node) {
			return nil, fmt.Errorf("mcast_trees: column lengths disagree (%d mlid, %d num_switches, %d node, %d num_ports)",
				len(b.Mlid), len(b.NumSwitches), len(b.Node), len(b.NumPorts))
		}
		if len(trees)+len(b.Mlid) > n {
			return nil, fmt.Errorf("mcast_trees: more trees than the %d groups", n)
		}
		sw, port := 0, 0
		for i, mlid := range b.Mlid {
			k := int(b.NumSwitches[i])
			if mlid > MaxMLID || k > len(b.Node)-sw {
				return nil, fmt.Errorf("mcast_trees: tree %d: MLID %#x or switch count %d out of range", len(trees), mlid, k)
			}
			t := MulticastTree{MLID: uint16(mlid), Switches: make([]TreeSwitch, k)}
			for j := range k {
				np := int(b.NumPorts[sw])
				if np > len(b.Ports)-port || np > 256 {
					return nil, fmt.Errorf("mcast_trees: tree %#04x: port count %d out of range", mlid, np)
				}
				t.Switches[j] = TreeSwitch{Node: b.Node[sw], Out: append([]uint8(nil), b.Ports[port:port+np]...)}
				sw, port = sw+1, port+np
			}
			trees = append(trees, t)
		}
		if sw != len(b.Node) || port != len(b.Ports) {
			return nil, fmt.Errorf("mcast_trees: %d switch entries and %d ports left over", len(b.Node)-sw, len(b.Ports)-port)
		}
	}
	if err := CheckTrees(req, trees); err != nil {
		return nil, fmt.Errorf("plugin answered malformed trees: %w", err)
	}
	return trees, nil
}

func recvChunk(recv wire.Recv, want string) (*pb.Chunk, error) {
	c, err := recv()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("stream ended while expecting %s", want)
	}
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("nil chunk while expecting %s", want)
	}
	return c, nil
}
