package wire

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/topology"
)

// maxPaths bounds a declared path count.
const maxPaths = 1 << 28

// SendRoutes streams r, computed for topology t, as a routes header and
// plane or path batches; routes with a Base and Edits (not nil) as a
// header and their edits.
func SendRoutes(send Send, t *topology.Topology, r *plan.Routes) error {
	if r == nil {
		return fmt.Errorf("routes are nil")
	}
	h := &pb.RoutesHeader{}
	if r.IsPlanes() {
		h.Form = pb.RoutesHeader_FORM_PLANES
		h.NumDestinations = uint32(len(r.Planes))
		h.Token = r.Token
		if r.Base != 0 {
			h.Base, h.NumChanged = r.Base, uint32(len(r.Changed))
			if r.Edits != nil {
				h.Edits, h.NumEdits = true, uint32(len(r.Edits))
			}
		}
	} else {
		h.Form = pb.RoutesHeader_FORM_PATHS
		h.NumPaths = uint32(len(r.Paths))
	}
	if err := send(&pb.Chunk{Part: &pb.Chunk_RoutesHeader{RoutesHeader: h}}); err != nil {
		return err
	}
	if h.Edits {
		return sendEdits(send, r, EditBatchEntries)
	}
	if r.IsPlanes() {
		var changed []int32
		if r.Base != 0 {
			changed = r.Changed
			if changed == nil {
				changed = []int32{} // a change to nothing: no batch follows
			}
		}
		return sendPlanes(send, t, r.Planes, changed, PlaneBatchBytes)
	}
	batch := &pb.PathBatch{}
	size := 0
	for i := range r.Paths {
		p := &r.Paths[i]
		m := &pb.Path{Src: p.Src, Dst: p.Dst, HopSwitch: make([]int32, len(p.Hops)), HopIn: make([]byte, len(p.Hops)), HopOut: make([]byte, len(p.Hops))}
		for k, hp := range p.Hops {
			m.HopSwitch[k], m.HopIn[k], m.HopOut[k] = hp.Switch, hp.In, hp.Out
		}
		batch.Paths = append(batch.Paths, m)
		size += 16 + 7*len(p.Hops)
		if size >= BatchBytes {
			if err := send(&pb.Chunk{Part: &pb.Chunk_Paths{Paths: batch}}); err != nil {
				return err
			}
			batch, size = &pb.PathBatch{}, 0
		}
	}
	if len(batch.Paths) > 0 {
		return send(&pb.Chunk{Part: &pb.Chunk_Paths{Paths: batch}})
	}
	return nil
}

// SendRoutesShape sends only the routes' form and counts (a header with
// shape_only), for a plugin that declared it does not read the routes.
func SendRoutesShape(send Send, r *plan.Routes) error {
	if r == nil {
		return fmt.Errorf("routes are nil")
	}
	h := &pb.RoutesHeader{ShapeOnly: true, Form: pb.RoutesHeader_FORM_PATHS, NumPaths: uint32(len(r.Paths))}
	if r.IsPlanes() {
		h = &pb.RoutesHeader{ShapeOnly: true, Form: pb.RoutesHeader_FORM_PLANES, NumDestinations: uint32(len(r.Planes))}
	}
	return send(&pb.Chunk{Part: &pb.Chunk_RoutesHeader{RoutesHeader: h}})
}

// RecvRoutes reads and validates routes for topology t: planes need one
// entry per endpoint with 1..2^lmc planes of one existing out-port (or
// NoPort) per switch; paths need valid endpoint indices, switch nodes and
// ports. A shape-only header is an error: the routes were expected.
func RecvRoutes(recv Recv, t *topology.Topology, lmc uint8) (*plan.Routes, error) {
	return recvRoutes(recv, t, lmc, false, false)
}

// RecvRouteAnswer is RecvRoutes for a routing engine's answer, which may
// carry only the destinations changed since the answer the request named
// (plan.Routes.Base), their planes whole or as edits (plan.Routes.Edits:
// the planes of those destinations are then left empty, and each edit's
// plane is only known to be below 2^lmc; the caller checks it against
// the answer named Base).
func RecvRouteAnswer(recv Recv, t *topology.Topology, lmc uint8) (*plan.Routes, error) {
	return recvRoutes(recv, t, lmc, false, true)
}

// RecvRoutesOrShape is RecvRoutes that also accepts what SendRoutesShape
// sends: planes form gives one empty DestPlanes per endpoint, paths form
// an empty (non-nil) path list.
func RecvRoutesOrShape(recv Recv, t *topology.Topology, lmc uint8) (*plan.Routes, error) {
	return recvRoutes(recv, t, lmc, true, false)
}

func recvRoutes(recv Recv, t *topology.Topology, lmc uint8, shapeOK, changesOK bool) (*plan.Routes, error) {
	c, err := next(recv, "routes_header")
	if err != nil {
		return nil, err
	}
	h := c.GetRoutesHeader()
	if h == nil {
		return nil, unexpected(c, "routes_header")
	}
	neps := len(t.Endpoints())
	switch {
	case h.Edits && !changesOK:
		return nil, fmt.Errorf("routes: only edits of an earlier answer were sent where whole routes are needed")
	case h.Edits && (h.ShapeOnly || h.Form != pb.RoutesHeader_FORM_PLANES || h.Base == 0):
		return nil, fmt.Errorf("routes: edits in an answer without a base (form %v, base %#x, shape only %t)", h.Form, h.Base, h.ShapeOnly)
	case !h.Edits && h.NumEdits != 0:
		return nil, fmt.Errorf("routes: %d edits declared in an answer that carries none", h.NumEdits)
	}
	if h.ShapeOnly {
		switch {
		case !shapeOK:
			return nil, fmt.Errorf("routes: only their shape was sent where the routes themselves are needed")
		case h.Form == pb.RoutesHeader_FORM_PLANES && int(h.NumDestinations) == neps:
			return &plan.Routes{Planes: make([]plan.DestPlanes, neps)}, nil
		case h.Form == pb.RoutesHeader_FORM_PLANES:
			return nil, fmt.Errorf("routes: planes for %d destinations, topology has %d endpoints", h.NumDestinations, neps)
		case h.Form == pb.RoutesHeader_FORM_PATHS:
			return &plan.Routes{Paths: []plan.Path{}}, nil
		}
		return nil, fmt.Errorf("routes: unknown form %v", h.Form)
	}
	switch h.Form {
	case pb.RoutesHeader_FORM_PLANES:
		if int(h.NumDestinations) != neps {
			return nil, fmt.Errorf("routes: planes for %d destinations, topology has %d endpoints", h.NumDestinations, neps)
		}
		maxPlanes := 1 << lmc
		changes := -1
		if h.Base != 0 {
			if !changesOK {
				return nil, fmt.Errorf("routes: only changes were sent where whole routes are needed")
			}
			if h.NumChanged > h.NumDestinations {
				return nil, fmt.Errorf("routes: %d destinations changed of %d", h.NumChanged, h.NumDestinations)
			}
			changes = int(h.NumChanged)
		} else if h.NumChanged != 0 {
			return nil, fmt.Errorf("routes: %d destinations changed in an answer that changes none", h.NumChanged)
		}
		if h.Edits {
			edits, changed, err := recvEdits(recv, t, h, maxPlanes)
			if err != nil {
				return nil, err
			}
			return &plan.Routes{Planes: make([]plan.DestPlanes, neps), Token: h.Token, Base: h.Base, Changed: changed, Edits: edits}, nil
		}
		planes, changed, err := recvSomePlanes(recv, t, neps, changes, func(int) (int, int) { return 1, maxPlanes })
		if err != nil {
			return nil, err
		}
		return &plan.Routes{Planes: planes, Token: h.Token, Base: h.Base, Changed: changed}, nil
	case pb.RoutesHeader_FORM_PATHS:
		if h.NumPaths > maxPaths {
			return nil, fmt.Errorf("routes: %d paths declared, limit is %d", h.NumPaths, maxPaths)
		}
		paths := make([]plan.Path, 0, prealloc(h.NumPaths))
		for uint32(len(paths)) < h.NumPaths {
			c, err := next(recv, fmt.Sprintf("paths (have %d of %d)", len(paths), h.NumPaths))
			if err != nil {
				return nil, err
			}
			b := c.GetPaths()
			if b == nil {
				return nil, unexpected(c, "paths")
			}
			if uint32(len(paths)+len(b.Paths)) > h.NumPaths {
				return nil, fmt.Errorf("routes: more paths sent than the %d declared", h.NumPaths)
			}
			for _, m := range b.Paths {
				p, err := pathFromProto(t, len(paths), m)
				if err != nil {
					return nil, err
				}
				paths = append(paths, p)
			}
		}
		return &plan.Routes{Paths: paths}, nil
	}
	return nil, fmt.Errorf("routes: unknown form %v", h.Form)
}

func pathFromProto(t *topology.Topology, i int, m *pb.Path) (plan.Path, error) {
	neps := int32(len(t.Endpoints()))
	if m.Src < 0 || m.Src >= neps || m.Dst < 0 || m.Dst >= neps {
		return plan.Path{}, fmt.Errorf("routes: path %d: endpoints %d -> %d out of range (%d endpoints)", i, m.Src, m.Dst, neps)
	}
	nh := len(m.HopSwitch)
	if len(m.HopIn) != nh || len(m.HopOut) != nh {
		return plan.Path{}, fmt.Errorf("routes: path %d: hop fields have different lengths", i)
	}
	p := plan.Path{Src: m.Src, Dst: m.Dst, Hops: make([]plan.Hop, nh)}
	for k := 0; k < nh; k++ {
		sw := m.HopSwitch[k]
		if sw < 0 || int(sw) >= len(t.Nodes) || t.Nodes[sw].Type != topology.Switch {
			return plan.Path{}, fmt.Errorf("routes: path %d hop %d: node %d is not a switch", i, k, sw)
		}
		np := uint8(t.Nodes[sw].NumPorts())
		if m.HopIn[k] > np || m.HopOut[k] > np {
			return plan.Path{}, fmt.Errorf("routes: path %d hop %d: ports %d -> %d on switch 0x%016x with %d ports", i, k, m.HopIn[k], m.HopOut[k], t.Nodes[sw].GUID, np)
		}
		p.Hops[k] = plan.Hop{Switch: sw, In: m.HopIn[k], Out: m.HopOut[k]}
	}
	return p, nil
}

// SendPrevious streams the previous-LID map in batches (sorted by GUID so the
// stream is deterministic).
func SendPrevious(send Send, prev map[uint64]uint16, guids []uint64) error {
	const per = BatchBytes / 12
	for i := 0; i < len(guids); i += per {
		j := min(i+per, len(guids))
		b := &pb.PreviousLIDBatch{PortGuid: guids[i:j], Lid: make([]uint32, j-i)}
		for k, g := range guids[i:j] {
			b.Lid[k] = uint32(prev[g])
		}
		if err := send(&pb.Chunk{Part: &pb.Chunk_Previous{Previous: b}}); err != nil {
			return err
		}
	}
	return nil
}

// RecvPrevious reads n previous-LID entries.
func RecvPrevious(recv Recv, n uint32) (map[uint64]uint16, error) {
	if n > maxNodes*255 {
		return nil, fmt.Errorf("previous LIDs: %d entries declared", n)
	}
	prev := make(map[uint64]uint16, prealloc(n))
	got := uint32(0)
	for got < n {
		c, err := next(recv, fmt.Sprintf("previous (have %d of %d)", got, n))
		if err != nil {
			return nil, err
		}
		b := c.GetPrevious()
		if b == nil {
			return nil, unexpected(c, "previous")
		}
		if len(b.PortGuid) != len(b.Lid) || got+uint32(len(b.Lid)) > n {
			return nil, fmt.Errorf("previous LIDs: malformed batch")
		}
		for k, g := range b.PortGuid {
			if b.Lid[k] == 0 || b.Lid[k] > plan.MaxUnicastLID {
				return nil, fmt.Errorf("previous LIDs: port 0x%016x has LID %d outside 1..0x%X", g, b.Lid[k], plan.MaxUnicastLID)
			}
			prev[g] = uint16(b.Lid[k])
		}
		got += uint32(len(b.Lid))
	}
	return prev, nil
}
