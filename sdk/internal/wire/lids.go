package wire

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/topology"
)

// SendLIDPlan streams l, computed for topology t, as a header, port LIDs,
// optional planes and overrides.
func SendLIDPlan(send Send, t *topology.Topology, l *plan.LIDPlan) error {
	if l == nil {
		return fmt.Errorf("LID plan is nil")
	}
	h := &pb.LIDPlanHeader{NumPorts: uint32(len(l.Ports)), HasPlanes: l.Planes != nil, NumOverrides: uint32(len(l.Overrides))}
	switch l.Rule {
	case plan.DLIDBase:
		h.Rule = pb.LIDPlanHeader_RULE_BASE
	case plan.DLIDSpread:
		h.Rule = pb.LIDPlanHeader_RULE_SPREAD
	default:
		return fmt.Errorf("LID plan: unknown DLID rule %d", l.Rule)
	}
	if l.Planes != nil && len(l.Planes) != len(l.Ports) {
		return fmt.Errorf("LID plan: planes for %d destinations but %d ports", len(l.Planes), len(l.Ports))
	}
	if err := send(&pb.Chunk{Part: &pb.Chunk_LidHeader{LidHeader: h}}); err != nil {
		return err
	}
	const per = BatchBytes / 4
	for i := 0; i < len(l.Ports); i += per {
		j := min(i+per, len(l.Ports))
		b := &pb.PortLIDBatch{Base: make([]uint32, j-i), Lmc: make([]byte, j-i)}
		for k, p := range l.Ports[i:j] {
			b.Base[k], b.Lmc[k] = uint32(p.Base), p.LMC
		}
		if err := send(&pb.Chunk{Part: &pb.Chunk_PortLids{PortLids: b}}); err != nil {
			return err
		}
	}
	if l.Planes != nil {
		if err := sendPlanes(send, t, l.Planes, nil, PlaneBatchBytes); err != nil {
			return err
		}
	}
	const perOv = BatchBytes / 10
	for i := 0; i < len(l.Overrides); i += perOv {
		j := min(i+perOv, len(l.Overrides))
		b := &pb.DLIDOverrideBatch{Src: make([]int32, j-i), Dst: make([]int32, j-i), Offset: make([]byte, j-i)}
		for k, o := range l.Overrides[i:j] {
			b.Src[k], b.Dst[k], b.Offset[k] = o.Src, o.Dst, o.Offset
		}
		if err := send(&pb.Chunk{Part: &pb.Chunk_DlidOverrides{DlidOverrides: b}}); err != nil {
			return err
		}
	}
	return nil
}

// RecvLIDPlan reads and validates a LID plan for t: one PortLID per endpoint
// with LMC <= 7, base LID aligned to 2^LMC and the range inside the unicast
// space (base 0 is passed through as "unassigned" for the verifier to
// report); exactly 2^LMC valid planes per endpoint when planes are present;
// overrides naming existing endpoints and an offset below the destination's
// 2^LMC. Uniqueness of LIDs is left to plan.Realize and the host verifier.
func RecvLIDPlan(recv Recv, t *topology.Topology) (*plan.LIDPlan, error) {
	c, err := next(recv, "lid_header")
	if err != nil {
		return nil, err
	}
	h := c.GetLidHeader()
	if h == nil {
		return nil, unexpected(c, "lid_header")
	}
	neps := len(t.Endpoints())
	if int(h.NumPorts) != neps {
		return nil, fmt.Errorf("LID plan: %d ports, topology has %d endpoints", h.NumPorts, neps)
	}
	l := &plan.LIDPlan{Ports: make([]plan.PortLID, 0, neps)}
	switch h.Rule {
	case pb.LIDPlanHeader_RULE_BASE:
		l.Rule = plan.DLIDBase
	case pb.LIDPlanHeader_RULE_SPREAD:
		l.Rule = plan.DLIDSpread
	default:
		return nil, fmt.Errorf("LID plan: unknown DLID rule %d", h.Rule)
	}
	for len(l.Ports) < neps {
		c, err := next(recv, fmt.Sprintf("port_lids (have %d of %d)", len(l.Ports), neps))
		if err != nil {
			return nil, err
		}
		b := c.GetPortLids()
		if b == nil {
			return nil, unexpected(c, "port_lids")
		}
		if len(b.Base) != len(b.Lmc) || len(l.Ports)+len(b.Base) > neps {
			return nil, fmt.Errorf("LID plan: malformed port_lids batch (%d bases, %d LMCs, %d of %d ports so far)", len(b.Base), len(b.Lmc), len(l.Ports), neps)
		}
		for k, base := range b.Base {
			e := len(l.Ports)
			lmc := b.Lmc[k]
			if lmc > 7 {
				return nil, fmt.Errorf("LID plan: endpoint %d: LMC %d > 7", e, lmc)
			}
			n := uint32(1) << lmc
			if base != 0 && (base+n-1 > plan.MaxUnicastLID || base&(n-1) != 0) {
				return nil, fmt.Errorf("LID plan: endpoint %d: LIDs %d..%d with LMC %d are outside 1..0x%X or not aligned to %d", e, base, base+n-1, lmc, plan.MaxUnicastLID, n)
			}
			l.Ports = append(l.Ports, plan.PortLID{Base: uint16(base), LMC: lmc})
		}
	}
	if h.HasPlanes {
		planes, err := recvPlanes(recv, t, neps, func(e int) (int, int) { n := l.Ports[e].Count(); return n, n })
		if err != nil {
			return nil, fmt.Errorf("LID plan: %w", err)
		}
		l.Planes = planes
	}
	if h.NumOverrides > maxPaths {
		return nil, fmt.Errorf("LID plan: %d overrides declared, limit is %d", h.NumOverrides, maxPaths)
	}
	for uint32(len(l.Overrides)) < h.NumOverrides {
		c, err := next(recv, fmt.Sprintf("dlid_overrides (have %d of %d)", len(l.Overrides), h.NumOverrides))
		if err != nil {
			return nil, err
		}
		b := c.GetDlidOverrides()
		if b == nil {
			return nil, unexpected(c, "dlid_overrides")
		}
		if len(b.Src) != len(b.Dst) || len(b.Src) != len(b.Offset) || uint32(len(l.Overrides)+len(b.Src)) > h.NumOverrides {
			return nil, fmt.Errorf("LID plan: malformed dlid_overrides batch")
		}
		for k := range b.Src {
			o := plan.DLIDOverride{Src: b.Src[k], Dst: b.Dst[k], Offset: b.Offset[k]}
			if o.Src < 0 || int(o.Src) >= neps || o.Dst < 0 || int(o.Dst) >= neps {
				return nil, fmt.Errorf("LID plan: DLID override %d names endpoints %d -> %d of %d", len(l.Overrides), o.Src, o.Dst, neps)
			}
			if int(o.Offset) >= l.Ports[o.Dst].Count() {
				return nil, fmt.Errorf("LID plan: DLID override %d: offset %d >= 2^LMC=%d of endpoint %d", len(l.Overrides), o.Offset, l.Ports[o.Dst].Count(), o.Dst)
			}
			l.Overrides = append(l.Overrides, o)
		}
	}
	return l, nil
}
