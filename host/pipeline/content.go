package pipeline

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Content hashes name what a stage produced, not what it was asked: the
// verdict on a plan and every downstream stage's key are bound to the exact
// routes, LIDs and VLs that will be programmed, so a cache entry that was
// altered (and re-checksummed) or computed for other inputs can never carry
// an old verdict onto the fabric.

// digest writes integers and byte runs into an xxhash unambiguously
// (every variable-length run is preceded by its length).
type digest struct {
	h   *xxhash.Digest
	buf [8]byte
}

func newDigest(kind string) *digest {
	d := &digest{h: xxhash.New()}
	d.h.WriteString("ibsm-content-v2:" + kind)
	return d
}

func (d *digest) u64(v uint64) {
	binary.LittleEndian.PutUint64(d.buf[:], v)
	d.h.Write(d.buf[:])
}

func (d *digest) bytes(b []byte) {
	d.u64(uint64(len(b)))
	d.h.Write(b)
}

func (d *digest) sum() uint64 { return d.h.Sum64() }

// planes writes per-destination forwarding trees (nil and empty differ)
// as each destination's plan.DestPlanes.Hash: a LID assigner's own planes
// (routes are hashed by planeHasher, see hashRoutesFrom).
func (d *digest) planes(dps []plan.DestPlanes) {
	if dps == nil {
		d.u64(0)
		return
	}
	d.hashes(plan.DestHashes(dps))
}

// hashes writes the per-destination hashes of non-nil planes.
func (d *digest) hashes(hs []uint64) {
	d.u64(1)
	d.u64(uint64(len(hs)))
	for _, h := range hs {
		d.u64(h)
	}
}

// hashRoutes is the content hash of a routing engine's whole answer,
// its planes hashed by planeHasher.
func hashRoutes(r *plan.Routes) uint64 {
	var hs []uint64
	if r.Planes != nil {
		hs = destHashes(r.Planes)
	}
	return hashRoutesFrom(r, hs)
}

// hashRoutesFrom is hashRoutes given the per-destination hashes of
// planes-form routes (nil for paths).
func hashRoutesFrom(r *plan.Routes, planeHashes []uint64) uint64 {
	d := newDigest("routes")
	if r.Planes == nil {
		d.u64(0)
	} else {
		d.hashes(planeHashes)
	}
	d.u64(uint64(len(r.Paths)))
	for _, p := range r.Paths {
		d.u64(uint64(uint32(p.Src))<<32 | uint64(uint32(p.Dst)))
		d.u64(uint64(len(p.Hops)))
		for _, h := range p.Hops {
			d.u64(uint64(uint32(h.Switch))<<16 | uint64(h.In)<<8 | uint64(h.Out))
		}
	}
	return d.sum()
}

// hashLIDs is the content hash of a LID plan.
func hashLIDs(l *plan.LIDPlan) uint64 {
	d := newDigest("lids")
	d.u64(uint64(len(l.Ports)))
	for _, p := range l.Ports {
		d.u64(uint64(p.Base)<<8 | uint64(p.LMC))
	}
	d.planes(l.Planes)
	d.u64(uint64(l.Rule))
	d.u64(uint64(len(l.Overrides)))
	for _, o := range l.Overrides {
		d.u64(uint64(uint32(o.Src))<<32 | uint64(uint32(o.Dst)))
		d.u64(uint64(o.Offset))
	}
	return d.sum()
}

// hashVLs is the content hash of a VL plan.
func hashVLs(v *plan.VLPlan) uint64 {
	d := newDigest("vls")
	d.bytes(v.SLByDLID)
	d.u64(uint64(len(v.Overrides)))
	for _, o := range v.Overrides {
		d.u64(uint64(uint32(o.Src))<<32 | uint64(o.DLID)<<8 | uint64(o.SL))
	}
	d.bytes(v.Default[:])
	d.u64(uint64(len(v.SL2VL)))
	for _, e := range v.SL2VL {
		d.u64(uint64(uint32(e.Node))<<16 | uint64(e.In)<<8 | uint64(e.Out))
		d.bytes(e.VL[:])
	}
	d.u64(uint64(v.VLs))
	return d.sum()
}

// hashPrevious is the content hash of the persisted LIDs a LID assigner is
// given, restricted to the topology's endpoints (entries for ports that are
// not there cannot shape the plan) in endpoint order.
func hashPrevious(t *topology.Topology, prev map[uint64]uint16) uint64 {
	d := newDigest("previous")
	if len(prev) == 0 {
		return d.sum()
	}
	for i, ep := range t.Endpoints() {
		if lid, ok := prev[t.PortGUID(ep)]; ok {
			d.u64(uint64(i)<<16 | uint64(lid))
		}
	}
	return d.sum()
}

// hashEndpoints names what an endpoints-only LID assigner reads of the
// topology: each endpoint's port GUID and whether it is a switch's, in
// order.
func hashEndpoints(t *topology.Topology) uint64 {
	d := newDigest("endpoints")
	eps := t.Endpoints()
	d.u64(uint64(len(eps)))
	for _, ep := range eps {
		sw := uint64(0)
		if t.SwitchIndex(ep.Node) >= 0 {
			sw = 1
		}
		d.u64(t.PortGUID(ep))
		d.u64(sw)
	}
	return d.sum()
}

// ownLIDs is the Previous map a LID plan would leave behind in guid2lid
// (what the SM persists after programming it).
func ownLIDs(t *topology.Topology, l *plan.LIDPlan) map[uint64]uint16 {
	m := make(map[uint64]uint16, len(l.Ports))
	for i, ep := range t.Endpoints() {
		if i < len(l.Ports) && l.Ports[i].Base != 0 {
			m[t.PortGUID(ep)] = l.Ports[i].Base
		}
	}
	return m
}
