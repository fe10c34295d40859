package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/topology"
)

// PlaneBatchBytes is the target plane payload of one PlaneBatch: large enough
// that per-message costs vanish next to the copying, small enough to stay
// under gRPC's default 4 MiB message limit (test harnesses such as
// plugin.TestPluginGRPCConn keep it) and to let encoding, transfer and
// decoding overlap.
const PlaneBatchBytes = 2 << 20

// maxPlanesPerDest is the most planes a destination can have (LMC 7).
const maxPlanesPerDest = 1 << 7

// sendPlanes streams every destination's planes in PlaneBatch blocks of
// about batchBytes (PlaneBatchBytes; tests pass less), or only those of
// the destinations in changed (ascending) when it is not nil, each block
// then naming its destinations. Each block is a fresh buffer: gRPC forbids
// touching a message after Send (stats handlers may still read it), so one
// copy into the block is the floor. Every plane must be one byte per
// switch of t.
func sendPlanes(send Send, t *topology.Topology, dests []plan.DestPlanes, changed []int32, batchBytes int) error {
	width := len(t.Switches())
	n := len(dests)
	dest := func(i int) int { return i }
	if changed != nil {
		n = len(changed)
		dest = func(i int) int { return int(changed[i]) }
	}
	for first := 0; first < n; {
		// Size the block first so it is allocated once, exactly.
		end, total := first, 0
		for end < n && (end == first || total*width < batchBytes) {
			e := dest(end)
			if e < 0 || e >= len(dests) {
				return fmt.Errorf("routes: changed destination %d out of range (%d destinations)", e, len(dests))
			}
			k := len(dests[e].Planes)
			if k > maxPlanesPerDest {
				return fmt.Errorf("routes: destination endpoint %d has %d planes, at most %d (LMC 7) can be sent", e, k, maxPlanesPerDest)
			}
			total += k
			end++
		}
		b := &pb.PlaneBatch{First: uint32(first), Width: uint32(width), Counts: make([]byte, end-first), Planes: make([]byte, 0, total*width)}
		if changed != nil {
			b.First = 0
			b.Changed = make([]uint32, end-first)
		}
		for i := first; i < end; i++ {
			e := dest(i)
			b.Counts[i-first] = uint8(len(dests[e].Planes))
			if changed != nil {
				b.Changed[i-first] = uint32(e)
			}
			for k, pl := range dests[e].Planes {
				if len(pl) != width {
					return fmt.Errorf("routes: destination endpoint %d plane %d has %d entries, want one per switch (%d)", e, k, len(pl), width)
				}
				b.Planes = append(b.Planes, pl...)
			}
		}
		if err := send(&pb.Chunk{Part: &pb.Chunk_Planes{Planes: b}}); err != nil {
			return err
		}
		first = end
	}
	return nil
}

// recvPlanes reads n destinations' planes for topology t. planeCount(e)
// gives the allowed number of planes of destination e as [min, max]. The
// planes alias the received blocks (one allocation per block, none per
// plane); each is capped at its own length so an append cannot spill into
// its neighbour.
func recvPlanes(recv Recv, t *topology.Topology, n int, planeCount func(e int) (int, int)) ([]plan.DestPlanes, error) {
	out, _, err := recvSomePlanes(recv, t, n, -1, planeCount)
	return out, err
}

// recvSomePlanes is recvPlanes for an answer that carries only changes
// (changes >= 0 destinations, named by the batches, ascending; the others
// are left without planes); changes < 0 reads all n in order. It returns
// the destinations received when changes >= 0.
func recvSomePlanes(recv Recv, t *topology.Topology, n, changes int, planeCount func(e int) (int, int)) ([]plan.DestPlanes, []int32, error) {
	check := newPortCheck(t)
	width := len(check.lim)
	out := make([]plan.DestPlanes, n)
	want := n
	var got []int32
	if changes >= 0 {
		want, got = changes, make([]int32, 0, changes)
	}
	for have := 0; have < want; {
		c, err := next(recv, fmt.Sprintf("planes (have %d of %d destinations)", have, want))
		if err != nil {
			return nil, nil, err
		}
		b := c.GetPlanes()
		if b == nil {
			return nil, nil, unexpected(c, "planes")
		}
		if changes < 0 && int(b.First) != have {
			return nil, nil, fmt.Errorf("routes: plane batch starts at destination %d, expected %d", b.First, have)
		}
		if int(b.Width) != width {
			return nil, nil, fmt.Errorf("routes: planes are %d entries wide, want one per switch (%d); was the plugin built for another topology?", b.Width, width)
		}
		if len(b.Counts) == 0 {
			return nil, nil, fmt.Errorf("routes: empty plane batch at destination %d", have)
		}
		if len(b.Counts) > want-have {
			return nil, nil, fmt.Errorf("routes: planes for more than the %d destinations declared", want)
		}
		dest := func(i int) int { return have + i }
		if changes >= 0 {
			if len(b.Changed) != len(b.Counts) {
				return nil, nil, fmt.Errorf("routes: a batch of changes names %d destinations for %d plane counts", len(b.Changed), len(b.Counts))
			}
			for i, e := range b.Changed {
				if int64(e) >= int64(n) || (len(got)+i > 0 && int64(e) <= int64(lastOf(got, b.Changed, i))) {
					return nil, nil, fmt.Errorf("routes: changed destination %d out of order or range (%d endpoints)", e, n)
				}
			}
			dest = func(i int) int { return int(b.Changed[i]) }
		} else if len(b.Changed) != 0 {
			return nil, nil, fmt.Errorf("routes: a batch names changed destinations in a whole answer")
		}
		total := 0
		for i, cnt := range b.Counts {
			e := dest(i)
			lo, hi := planeCount(e)
			if int(cnt) < lo || int(cnt) > hi {
				if lo == hi {
					return nil, nil, fmt.Errorf("routes: destination endpoint %d has %d planes, want %d", e, cnt, lo)
				}
				return nil, nil, fmt.Errorf("routes: destination endpoint %d has %d planes, want %d..%d", e, cnt, lo, hi)
			}
			total += int(cnt)
		}
		if len(b.Planes) != total*width {
			return nil, nil, fmt.Errorf("routes: plane batch for destinations %d..%d carries %d bytes, want %d (%d planes of %d switches)",
				dest(0), dest(len(b.Counts)-1), len(b.Planes), total*width, total, width)
		}
		headers := make([]plan.Plane, total)
		off, k0 := 0, 0
		for i, cnt := range b.Counts {
			e := dest(i)
			for k := 0; k < int(cnt); k++ {
				pl := b.Planes[off : off+width : off+width]
				if s := check.firstBad(pl); s >= 0 {
					return nil, nil, fmt.Errorf("routes: destination endpoint %d plane %d: switch %d (0x%016x) out-port %d does not exist (switch has %d ports)",
						e, k, s, t.Nodes[t.Switches()[s]].GUID, pl[s], check.lim[s])
				}
				headers[k0+k] = pl
				off += width
			}
			out[e].Planes = headers[k0 : k0+int(cnt) : k0+int(cnt)]
			k0 += int(cnt)
		}
		if changes >= 0 {
			for _, e := range b.Changed {
				got = append(got, int32(e))
			}
		}
		have += len(b.Counts)
	}
	return out, got, nil
}

// lastOf is the destination named just before entry i of batch: the
// batch's previous entry, or the last of those received before it.
func lastOf(got []int32, batch []uint32, i int) uint32 {
	if i > 0 {
		return batch[i-1]
	}
	return uint32(got[len(got)-1])
}

// portCheck validates planes of one topology: byte s must be NoPort or a
// port number of switch s (0..NumPorts). The bulk test runs eight switches
// at a time; only a failing plane is rescanned byte by byte for the error.
type portCheck struct {
	lim []uint8 // per switch, its highest port number
	// even, odd hold 256+lim+1 of switches 8w+0,2,4,6 and 8w+1,3,5,7 in
	// the four 16-bit lanes of word w (see ok).
	even, odd []uint64
}

const (
	lanes   = 0x00FF00FF00FF00FF
	laneOne = 0x0001000100010001
	lane256 = 0x0100010001000100
)

func newPortCheck(t *topology.Topology) *portCheck {
	sw := t.Switches()
	c := &portCheck{lim: make([]uint8, len(sw)), even: make([]uint64, len(sw)/8), odd: make([]uint64, len(sw)/8)}
	for s, n := range sw {
		// NumPorts <= 254 (a node has at most 255 port entries), so lim+1
		// below never wraps.
		c.lim[s] = uint8(t.Nodes[n].NumPorts())
	}
	for w := range c.even {
		for j := 0; j < 4; j++ {
			c.even[w] |= (256 + uint64(c.lim[8*w+2*j]) + 1) << (16 * j)
			c.odd[w] |= (256 + uint64(c.lim[8*w+2*j+1]) + 1) << (16 * j)
		}
	}
	return c
}

// ok reports whether every entry of pl (len(pl) == len(c.lim)) is valid.
//
// An entry p is valid iff q = (p+1) mod 256 <= lim+1: NoPort (0xFF) maps to
// 0, ports 0..lim to 1..lim+1. Spreading the bytes of a 64-bit word into
// 16-bit lanes, (256+lim+1) - q stays within its lane and keeps bit 8 set
// exactly when q <= lim+1; one AND over all words collects the verdict.
func (c *portCheck) ok(pl []byte) bool {
	acc := uint64(lane256)
	for w := range c.even {
		x := binary.LittleEndian.Uint64(pl[8*w:])
		qe := ((x & lanes) + laneOne) & lanes
		qo := (((x >> 8) & lanes) + laneOne) & lanes
		acc &= (c.even[w] - qe) & (c.odd[w] - qo)
	}
	if acc&lane256 != lane256 {
		return false
	}
	for s := 8 * len(c.even); s < len(pl); s++ {
		if uint8(pl[s]+1) > c.lim[s]+1 {
			return false
		}
	}
	return true
}

// firstBad returns the first switch whose entry in pl is invalid, -1 if none.
func (c *portCheck) firstBad(pl []byte) int {
	if c.ok(pl) {
		return -1
	}
	for s, p := range pl {
		if p != plan.NoPort && p > c.lim[s] {
			return s
		}
	}
	return -1 // unreachable: ok and this loop test the same condition
}
