package wire

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/topology"
)

// EditBatchEntries is the most entries one PlaneEdits message carries: at
// most 12 bytes an entry on the wire (two 5-byte varints and two bytes),
// 3 MiB, under gRPC's default 4 MiB message limit; 7 bytes an entry at the
// largest fat tree in the LID space.
const EditBatchEntries = 1 << 18

// maxEdits bounds a declared edit count (one entry of every plane of a
// 2-level tree at the edge of the LID space is 187 M).
const maxEdits = 1 << 30

// sendEdits streams r's edits in PlaneEdits messages of at most per
// entries (EditBatchEntries; tests pass less). r.Changed must be the
// destinations the edits name, in order, each once.
func sendEdits(send Send, r *plan.Routes, per int) error {
	k := 0
	for i, e := range r.Edits {
		if i == 0 || e.Dest != r.Edits[i-1].Dest {
			if k >= len(r.Changed) || r.Changed[k] != e.Dest {
				return fmt.Errorf("routes: edit %d names destination %d, not the next changed destination", i, e.Dest)
			}
			k++
		}
	}
	if k != len(r.Changed) {
		return fmt.Errorf("routes: %d destinations changed, the edits name %d", len(r.Changed), k)
	}
	for first := 0; first < len(r.Edits); first += per {
		edits := r.Edits[first:min(first+per, len(r.Edits))]
		b := &pb.PlaneEdits{Dest: make([]uint32, len(edits)), Plane: make([]byte, len(edits)), Switch: make([]uint32, len(edits)), Port: make([]byte, len(edits))}
		for i, e := range edits {
			b.Dest[i], b.Plane[i], b.Switch[i], b.Port[i] = uint32(e.Dest), e.Plane, uint32(e.Switch), e.Port
		}
		if err := send(&pb.Chunk{Part: &pb.Chunk_Edits{Edits: b}}); err != nil {
			return err
		}
	}
	return nil
}

// recvEdits reads the edits an answer's header h declared (h.Edits, with
// a base, h.NumChanged checked) for topology t and destinations with at most maxPlanes planes,
// checking every entry: in range, a port of its switch or NoPort, and in
// strictly ascending (destination, plane, switch) order. It returns the
// edits and the distinct destinations they name, which must number
// h.NumChanged.
func recvEdits(recv Recv, t *topology.Topology, h *pb.RoutesHeader, maxPlanes int) ([]plan.Edit, []int32, error) {
	neps := len(t.Endpoints())
	lim := newPortCheck(t).lim
	switch {
	case h.NumEdits > maxEdits || uint64(h.NumEdits) > uint64(h.NumChanged)*uint64(maxPlanes)*uint64(len(lim)):
		return nil, nil, fmt.Errorf("routes: %d edits declared for %d changed destinations of up to %d planes of %d switches", h.NumEdits, h.NumChanged, maxPlanes, len(lim))
	case h.NumEdits < h.NumChanged:
		return nil, nil, fmt.Errorf("routes: %d edits declared for %d changed destinations", h.NumEdits, h.NumChanged)
	}
	edits := make([]plan.Edit, 0, prealloc(h.NumEdits))
	changed := make([]int32, 0, prealloc(h.NumChanged))
	var last plan.Edit
	for uint32(len(edits)) < h.NumEdits {
		c, err := next(recv, fmt.Sprintf("edits (have %d of %d)", len(edits), h.NumEdits))
		if err != nil {
			return nil, nil, err
		}
		b := c.GetEdits()
		if b == nil {
			return nil, nil, unexpected(c, "edits")
		}
		n := len(b.Dest)
		switch {
		case len(b.Plane) != n || len(b.Switch) != n || len(b.Port) != n:
			return nil, nil, fmt.Errorf("routes: an edits batch has columns of %d destinations, %d planes, %d switches and %d ports", n, len(b.Plane), len(b.Switch), len(b.Port))
		case n == 0:
			return nil, nil, fmt.Errorf("routes: empty edits batch after %d edits", len(edits))
		case uint64(len(edits))+uint64(n) > uint64(h.NumEdits):
			return nil, nil, fmt.Errorf("routes: more edits sent than the %d declared", h.NumEdits)
		}
		for i := range n {
			d, pl, s, p := b.Dest[i], b.Plane[i], b.Switch[i], b.Port[i]
			at := len(edits)
			switch {
			case d >= uint32(neps):
				return nil, nil, fmt.Errorf("routes: edit %d: destination %d out of range (%d endpoints)", at, d, neps)
			case int(pl) >= maxPlanes:
				return nil, nil, fmt.Errorf("routes: edit %d: destination endpoint %d plane %d, at most %d planes", at, d, pl, maxPlanes)
			case s >= uint32(len(lim)):
				return nil, nil, fmt.Errorf("routes: edit %d: destination endpoint %d plane %d: switch %d out of range (%d switches)", at, d, pl, s, len(lim))
			case p != plan.NoPort && p > lim[s]:
				return nil, nil, fmt.Errorf("routes: edit %d: destination endpoint %d plane %d: switch %d (0x%016x) out-port %d does not exist (switch has %d ports)",
					at, d, pl, s, t.Nodes[t.Switches()[s]].GUID, p, lim[s])
			}
			e := plan.Edit{Dest: int32(d), Switch: int32(s), Plane: pl, Port: p}
			if at > 0 && !editBefore(last, e) {
				return nil, nil, fmt.Errorf("routes: edit %d (destination endpoint %d plane %d switch %d) does not follow edit %d (destination endpoint %d plane %d switch %d)",
					at, e.Dest, e.Plane, e.Switch, at-1, last.Dest, last.Plane, last.Switch)
			}
			if at == 0 || e.Dest != last.Dest {
				if uint32(len(changed)) == h.NumChanged {
					return nil, nil, fmt.Errorf("routes: edit %d names destination endpoint %d, more than the %d changed destinations declared", at, d, h.NumChanged)
				}
				changed = append(changed, e.Dest)
			}
			edits, last = append(edits, e), e
		}
	}
	if uint32(len(changed)) != h.NumChanged {
		return nil, nil, fmt.Errorf("routes: the edits name %d destinations, %d changed destinations declared", len(changed), h.NumChanged)
	}
	return edits, changed, nil
}

// editBefore reports whether a comes strictly before b in (destination,
// plane, switch) order.
func editBefore(a, b plan.Edit) bool {
	if a.Dest != b.Dest {
		return a.Dest < b.Dest
	}
	if a.Plane != b.Plane {
		return a.Plane < b.Plane
	}
	return a.Switch < b.Switch
}
