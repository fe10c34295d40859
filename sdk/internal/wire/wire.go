// Package wire converts between the SDK's Go types (topology, plan, schema,
// cty config) and the plugin protocol's protobuf messages (protocol
// sdk.ProtocolVersion), in both directions. The bulk data, nodes and planes,
// travels as column blocks: a few large byte strings per ~MiB batch rather
// than a message per node or plane.
//
// Everything decoded here comes from another process that may be buggy or
// hostile, so decoders check every count, length and range and return an
// error naming what was wrong; they never panic and never allocate more than
// the declared input justifies.
package wire

import (
	"errors"
	"fmt"
	"io"

	pb "github.com/ibsm/ibsm/sdk/pluginv1"
)

// BatchBytes is the approximate payload of one streamed batch message: big
// enough to amortise per-message cost, far below any gRPC message limit.
const BatchBytes = 1 << 20

// MaxMessageBytes is the gRPC message size limit both sides configure. The
// streams rarely need it (batches are 1-2 MiB); it covers the one batch that
// cannot be split, a single destination's 128 planes of a huge fabric.
const MaxMessageBytes = 256 << 20

// Send writes one chunk to a stream.
type Send func(*pb.Chunk) error

// Recv reads the next chunk from a stream; it returns io.EOF at the end.
type Recv func() (*pb.Chunk, error)

// partName names a chunk's part for error messages.
func partName(c *pb.Chunk) string {
	switch c.GetPart().(type) {
	case *pb.Chunk_Start:
		return "start"
	case *pb.Chunk_TopologyHeader:
		return "topology_header"
	case *pb.Chunk_Nodes:
		return "nodes"
	case *pb.Chunk_RoutesHeader:
		return "routes_header"
	case *pb.Chunk_Planes:
		return "planes"
	case *pb.Chunk_Paths:
		return "paths"
	case *pb.Chunk_Previous:
		return "previous"
	case *pb.Chunk_LidHeader:
		return "lid_header"
	case *pb.Chunk_PortLids:
		return "port_lids"
	case *pb.Chunk_DlidOverrides:
		return "dlid_overrides"
	case *pb.Chunk_VlHeader:
		return "vl_header"
	case *pb.Chunk_SlOverrides:
		return "sl_overrides"
	case *pb.Chunk_Sl2Vl:
		return "sl2vl"
	case *pb.Chunk_Edits:
		return "edits"
	}
	return "empty chunk"
}

// next reads the next chunk, turning a premature end into a precise error.
func next(recv Recv, want string) (*pb.Chunk, error) {
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

func unexpected(c *pb.Chunk, want string) error {
	return fmt.Errorf("protocol error: got %s chunk, want %s", partName(c), want)
}

// ExpectEnd checks that the peer sends nothing more.
func ExpectEnd(recv Recv) error {
	c, err := recv()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("protocol error: unexpected %s chunk after the last expected one", partName(c))
}

// RecvStart reads the Start chunk that opens every kind request.
func RecvStart(recv Recv) (*pb.Start, error) {
	c, err := next(recv, "start")
	if err != nil {
		return nil, err
	}
	s := c.GetStart()
	if s == nil {
		return nil, unexpected(c, "start")
	}
	return s, nil
}

// SendStart writes the Start chunk.
func SendStart(send Send, s *pb.Start) error {
	return send(&pb.Chunk{Part: &pb.Chunk_Start{Start: s}})
}

// prealloc bounds a capacity taken from a peer-declared count.
func prealloc(n uint32) int {
	if n > 1<<16 {
		return 1 << 16
	}
	return int(n)
}
