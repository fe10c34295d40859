package wire

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/topology"
)

// maxSLByDLID is the length of an SL table covering every unicast LID.
const maxSLByDLID = plan.MaxUnicastLID + 1

// SendVLPlan streams v as a header, SL overrides and SL2VL entries.
func SendVLPlan(send Send, v *plan.VLPlan) error {
	if v == nil {
		return fmt.Errorf("VL plan is nil")
	}
	h := &pb.VLPlanHeader{SlByDlid: v.SLByDLID, DefaultSl2Vl: v.Default[:], Vls: uint32(v.VLs), NumOverrides: uint32(len(v.Overrides)), NumSl2Vl: uint32(len(v.SL2VL))}
	if v.VLs < 0 {
		return fmt.Errorf("VL plan: VLs %d < 0", v.VLs)
	}
	if err := send(&pb.Chunk{Part: &pb.Chunk_VlHeader{VlHeader: h}}); err != nil {
		return err
	}
	const per = BatchBytes / 10
	for i := 0; i < len(v.Overrides); i += per {
		j := min(i+per, len(v.Overrides))
		b := &pb.SLOverrideBatch{Src: make([]int32, j-i), Dlid: make([]uint32, j-i), Sl: make([]byte, j-i)}
		for k, o := range v.Overrides[i:j] {
			b.Src[k], b.Dlid[k], b.Sl[k] = o.Src, uint32(o.DLID), o.SL
		}
		if err := send(&pb.Chunk{Part: &pb.Chunk_SlOverrides{SlOverrides: b}}); err != nil {
			return err
		}
	}
	const perE = BatchBytes / 24
	for i := 0; i < len(v.SL2VL); i += perE {
		j := min(i+perE, len(v.SL2VL))
		b := &pb.SL2VLBatch{Node: make([]int32, j-i), In: make([]byte, j-i), Out: make([]byte, j-i), Vl: make([]byte, 0, 16*(j-i))}
		for k, e := range v.SL2VL[i:j] {
			b.Node[k], b.In[k], b.Out[k] = e.Node, e.In, e.Out
			b.Vl = append(b.Vl, e.VL[:]...)
		}
		if err := send(&pb.Chunk{Part: &pb.Chunk_Sl2Vl{Sl2Vl: b}}); err != nil {
			return err
		}
	}
	return nil
}

// RecvVLPlan reads and validates a VL plan for t: SLs 0..15 and at most one
// per unicast LID, VLs 0..15 in SL2VL tables (VL 15 is the spec's "drop"),
// overrides naming existing endpoints and unicast DLIDs, SL2VL entries naming
// existing nodes and ports.
func RecvVLPlan(recv Recv, t *topology.Topology) (*plan.VLPlan, error) {
	c, err := next(recv, "vl_header")
	if err != nil {
		return nil, err
	}
	h := c.GetVlHeader()
	if h == nil {
		return nil, unexpected(c, "vl_header")
	}
	if len(h.SlByDlid) > maxSLByDLID {
		return nil, fmt.Errorf("VL plan: SL table has %d entries, at most %d unicast LIDs exist", len(h.SlByDlid), maxSLByDLID)
	}
	for lid, sl := range h.SlByDlid {
		if sl > 15 {
			return nil, fmt.Errorf("VL plan: SL %d for DLID %d is out of range 0..15", sl, lid)
		}
	}
	if len(h.DefaultSl2Vl) != 16 {
		return nil, fmt.Errorf("VL plan: default SL2VL table has %d entries, want 16", len(h.DefaultSl2Vl))
	}
	if h.Vls > 15 {
		return nil, fmt.Errorf("VL plan: uses %d data VLs, InfiniBand has at most 15", h.Vls)
	}
	v := &plan.VLPlan{VLs: int(h.Vls)}
	if len(h.SlByDlid) > 0 {
		v.SLByDLID = h.SlByDlid
	}
	if sl, vl := copyVLs(&v.Default, h.DefaultSl2Vl); sl >= 0 {
		return nil, badVL("default SL2VL", sl, vl)
	}
	neps := int32(len(t.Endpoints()))
	if h.NumOverrides > maxPaths || h.NumSl2Vl > maxPaths {
		return nil, fmt.Errorf("VL plan: %d overrides / %d SL2VL entries declared, limit is %d", h.NumOverrides, h.NumSl2Vl, maxPaths)
	}
	for uint32(len(v.Overrides)) < h.NumOverrides {
		c, err := next(recv, fmt.Sprintf("sl_overrides (have %d of %d)", len(v.Overrides), h.NumOverrides))
		if err != nil {
			return nil, err
		}
		b := c.GetSlOverrides()
		if b == nil {
			return nil, unexpected(c, "sl_overrides")
		}
		if len(b.Src) != len(b.Dlid) || len(b.Src) != len(b.Sl) || uint32(len(v.Overrides)+len(b.Src)) > h.NumOverrides {
			return nil, fmt.Errorf("VL plan: malformed sl_overrides batch")
		}
		for k := range b.Src {
			if b.Src[k] < 0 || b.Src[k] >= neps || b.Dlid[k] == 0 || b.Dlid[k] > plan.MaxUnicastLID || b.Sl[k] > 15 {
				return nil, fmt.Errorf("VL plan: SL override %d (source endpoint %d, DLID %d, SL %d) is out of range", len(v.Overrides), b.Src[k], b.Dlid[k], b.Sl[k])
			}
			v.Overrides = append(v.Overrides, plan.SLOverride{Src: b.Src[k], DLID: uint16(b.Dlid[k]), SL: b.Sl[k]})
		}
	}
	// The declared count sizes the table up to a bound, so a plugin's
	// header alone cannot make the host allocate much.
	v.SL2VL = make([]plan.SL2VLEntry, 0, min(h.NumSl2Vl, 1<<20))
	for uint32(len(v.SL2VL)) < h.NumSl2Vl {
		c, err := next(recv, fmt.Sprintf("sl2vl (have %d of %d)", len(v.SL2VL), h.NumSl2Vl))
		if err != nil {
			return nil, err
		}
		b := c.GetSl2Vl()
		if b == nil {
			return nil, unexpected(c, "sl2vl")
		}
		n := len(b.Node)
		if len(b.In) != n || len(b.Out) != n || len(b.Vl) != 16*n || uint32(len(v.SL2VL)+n) > h.NumSl2Vl {
			return nil, fmt.Errorf("VL plan: malformed sl2vl batch")
		}
		for k := 0; k < n; k++ {
			i := len(v.SL2VL)
			node := b.Node[k]
			if node < 0 || int(node) >= len(t.Nodes) {
				return nil, fmt.Errorf("VL plan: SL2VL entry %d names node %d of %d", i, node, len(t.Nodes))
			}
			np := uint8(t.Nodes[node].NumPorts())
			if b.In[k] > np || b.Out[k] > np {
				return nil, fmt.Errorf("VL plan: SL2VL entry %d: ports %d -> %d on node 0x%016x with %d ports", i, b.In[k], b.Out[k], t.Nodes[node].GUID, np)
			}
			e := plan.SL2VLEntry{Node: node, In: b.In[k], Out: b.Out[k]}
			if sl, vl := copyVLs(&e.VL, b.Vl[16*k:16*k+16]); sl >= 0 {
				return nil, badVL(fmt.Sprintf("SL2VL entry %d", i), sl, vl)
			}
			v.SL2VL = append(v.SL2VL, e)
		}
	}
	return v, nil
}

// copyVLs copies an SL2VL table; sl is the first SL mapped beyond VL 15
// and vl its VL, or sl -1. The caller names the table only on failure:
// a plan has tens of thousands of tables.
func copyVLs(dst *[16]uint8, src []byte) (sl int, vl byte) {
	for sl, vl := range src {
		if vl > 15 {
			return sl, vl
		}
		dst[sl] = vl
	}
	return -1, 0
}

func badVL(what string, sl int, vl byte) error {
	return fmt.Errorf("VL plan: %s maps SL %d to VL %d, want 0..15", what, sl, vl)
}
