package sa

import (
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// maxHops bounds a path walk (a loop in a verified plan is a bug, but the
// walk must end anyway).
const maxHops = 64

// pathParams is what a walk through the programmed tables found.
type pathParams struct {
	mtu  uint8 // smallest MTUCap on the path (MTU code)
	rate int   // slowest link, deci-Gb/s
}

// walk follows the programmed forwarding tables from endpoint src toward
// dlid and reports whether it arrives at dlid's owner, with the path's MTU
// and rate. Unknown port data does not constrain the result; a path about
// which nothing is known reports 256 bytes and 2.5 Gb/s.
func (x *index) walk(src int32, dlid uint16) (pathParams, bool) {
	dst := x.owner(dlid)
	if dst < 0 {
		return pathParams{}, false
	}
	var pp pathParams
	link := func(r topology.PortRef) {
		peer := x.topo.Port(r).Peer
		for _, m := range [2]uint8{x.portMTU(r), x.portMTU(peer)} {
			if m != 0 && (pp.mtu == 0 || m < pp.mtu) {
				pp.mtu = m
			}
		}
		rate := x.portRate(r)
		if rate == 0 {
			rate = x.portRate(peer)
		}
		if rate != 0 && (pp.rate == 0 || rate < pp.rate) {
			pp.rate = rate
		}
	}
	ep := x.eps[src]
	cur, in := ep.Node, ep.Port
	ok := false
	if x.topo.Nodes[cur].Type != topology.Switch {
		if src == dst {
			ok = true
			link(ep)
		} else if x.topo.IsLinkUp(ep) {
			link(ep)
			peer := x.topo.Port(ep).Peer
			cur, in = peer.Node, peer.Port
		} else {
			return pathParams{}, false
		}
	}
	for hops := 0; !ok && hops <= maxHops; hops++ {
		n := &x.topo.Nodes[cur]
		if n.Type != topology.Switch {
			if x.topo.EndpointIndex(topology.PortRef{Node: cur, Port: in}) != dst {
				return pathParams{}, false
			}
			ok = true
			break
		}
		if x.eps[dst] == (topology.PortRef{Node: cur, Port: 0}) {
			ok = true
			break
		}
		lft := x.rz.LFT[x.topo.SwitchIndex(cur)]
		if int(dlid) >= len(lft) {
			return pathParams{}, false
		}
		out := lft[dlid]
		r := topology.PortRef{Node: cur, Port: out}
		if out == 0 || out == plan.NoPort || int(out) >= len(n.Ports) || !x.topo.IsLinkUp(r) {
			return pathParams{}, false
		}
		link(r)
		peer := n.Ports[out].Peer
		cur, in = peer.Node, peer.Port
	}
	if !ok {
		return pathParams{}, false
	}
	if pp.mtu == 0 {
		pp.mtu = x.portMTU(x.eps[dst])
		if pp.mtu == 0 {
			pp.mtu = smp.MTU256
		}
	}
	if pp.rate == 0 {
		pp.rate = rateOf(2)
	}
	return pp, true
}

// end is one side of a PathRecord query: one endpoint (ep ≥ 0) or all
// (ep < 0), with a fixed LID or any of the port's LIDs (lid 0); none is set
// when the request names nothing that exists.
type end struct {
	ep   int32
	lid  uint16
	none bool
}

// resolve turns a GID and/or LID from a request into an end.
func (x *index) resolve(gidSet bool, gid [16]byte, lidSet bool, lid uint16) (end, uint16, string) {
	e := end{ep: -1}
	if gidSet {
		if getU64(gid[:8]) != x.prefix {
			return e, smp.SAStatusInvalidGID, "GID prefix is not this subnet's"
		}
		i, ok := x.byGUID[getU64(gid[8:])]
		if !ok {
			return e, smp.SAStatusInvalidGID, "no port has this GID"
		}
		e.ep = i
	}
	if lidSet {
		o := x.owner(lid)
		if o < 0 || (e.ep >= 0 && o != e.ep) {
			e.none = true
			return e, 0, ""
		}
		e.ep, e.lid = o, lid
	}
	return e, 0, ""
}

// each calls f for the endpoints of e until f returns false.
func (x *index) each(e end, f func(int32) bool) bool {
	if e.none {
		return true
	}
	if e.ep >= 0 {
		return f(e.ep)
	}
	for i := range x.eps {
		if !f(int32(i)) {
			return false
		}
	}
	return true
}

// runPath answers PathRecord queries. Every (SLID, DLID) pair of the two
// ports' LID ranges is a path (the DLID picks the plane, the SLID only
// names the source); the plan's DLID comes first with Preference 0.
func runPath(q *query, t *table, limit int) (uint16, string) {
	var pr smp.PathRecord
	_ = pr.Unmarshal(q.req.Data[:]) // 200 bytes: cannot fail
	cm := q.req.ComponentMask
	if cm>>23 != 0 {
		return smp.SAStatusReqInvalid, "PathRecord component mask has bits above 22"
	}
	if cm&smp.PRCompDGID != 0 && pr.DGID[0] == 0xFF {
		return runMulticastPath(q, t, limit, &pr) // mcpath.go
	}
	x := q.x
	srcEnd, st, why := x.resolve(cm&smp.PRCompSGID != 0, pr.SGID, cm&smp.PRCompSLID != 0, pr.SLID)
	if st != 0 {
		return st, why
	}
	dstEnd, st, why := x.resolve(cm&smp.PRCompDGID != 0, pr.DGID, cm&smp.PRCompDLID != 0, pr.DLID)
	if st != 0 {
		return st, why
	}
	perPair := 0
	if cm&smp.PRCompNumbPath != 0 && pr.NumbPath > 0 {
		perPair = int(pr.NumbPath)
	}
	if q.req.Method == smp.MethodGet {
		perPair = 1 // a Get returns one path; a second pair is "too many"
	}
	var buf [smp.PathRecordLen]byte
	stop := false // the table is full (or a record did not encode)
	pl := q.pkeyPlan()
	x.each(srcEnd, func(src int32) bool {
		return x.each(dstEnd, func(dst int32) bool {
			n := 0
			pkey, shared := q.pathPKey(pl, src, dst, cm&smp.PRCompPKey != 0, pr.PKey)
			if !shared {
				return true // no partition in common: no path (IBA 10.9.3)
			}
			q.pairPaths(src, dst, srcEnd.lid, dstEnd.lid, pkey, &pr, cm, func(r *smp.PathRecord) bool {
				if err := r.MarshalTo(buf[:]); err != nil {
					q.a.log.Error("BUG: PathRecord does not encode", "error", err)
					stop = true
					return false
				}
				if !t.add(buf[:], limit) {
					stop = true
					return false
				}
				n++
				return perPair == 0 || n < perPair
			})
			return !stop
		})
	})
	return 0, ""
}

// pairPaths emits the paths from src to dst that satisfy the request, in
// partition pkey (see pathPKey), until emit returns false; it returns false
// if emit did.
func (q *query) pairPaths(src, dst int32, slid, dlid, pkey uint16, req *smp.PathRecord, cm uint64, emit func(*smp.PathRecord) bool) bool {
	x := q.x
	srcL, dstL := x.lids.Ports[src], x.lids.Ports[dst]
	pref := x.dlid(src, dst)
	dlids := []uint16{dlid}
	if dlid == 0 {
		dlids = dlids[:0]
		dlids = append(dlids, pref)
		for i := 0; i < dstL.Count(); i++ {
			if l := dstL.Base + uint16(i); l != pref {
				dlids = append(dlids, l)
			}
		}
	}
	slids := []uint16{slid}
	if slid == 0 {
		slids = slids[:0]
		for i := 0; i < srcL.Count(); i++ {
			slids = append(slids, srcL.Base+uint16(i))
		}
	}
	for _, d := range dlids {
		pp, ok := x.walk(src, d)
		if !ok {
			continue
		}
		rec, ok := q.pathRecord(src, dst, d, pkey, pp, req, cm)
		if !ok {
			continue
		}
		if d != pref {
			rec.Preference = 1
		}
		for _, s := range slids {
			_, rev := x.walk(dst, s)
			if cm&smp.PRCompReversible != 0 && req.Reversible && !rev {
				continue
			}
			r := rec
			r.SLID, r.Reversible = s, rev
			if !emit(&r) {
				return false
			}
		}
	}
	return true
}

// pathRecord builds the record of the path src→dlid in partition pkey and
// applies the request's selectors; false if the path does not satisfy
// them.
func (q *query) pathRecord(src, dst int32, dlid, pkey uint16, pp pathParams, req *smp.PathRecord, cm uint64) (smp.PathRecord, bool) {
	x := q.x
	r := smp.PathRecord{
		DGID: x.gid(dst), SGID: x.gid(src), DLID: dlid,
		PKey: pkey, SL: x.sl(src, dlid),
		MTUSelector: 2, RateSelector: 2, PacketLifeTimeSelector: 2,
		PacketLifeTime: q.a.opts.PacketLifeTime,
	}
	// Fields the requester chooses are echoed (IBA 15.2.5.16).
	if cm&smp.PRCompServiceID != 0 {
		r.ServiceID = req.ServiceID
	}
	if cm&smp.PRCompFlowLabel != 0 {
		r.FlowLabel = req.FlowLabel
	}
	if cm&smp.PRCompHopLimit != 0 {
		r.HopLimit = req.HopLimit
	}
	if cm&smp.PRCompTClass != 0 {
		r.TClass = req.TClass
	}
	if cm&smp.PRCompQoSClass != 0 && req.QoSClass != 0 {
		return r, false
	}
	if cm&smp.PRCompSL != 0 && req.SL != r.SL {
		return r, false // the plan's SL is the only deadlock-free one
	}
	var ok bool
	if r.MTU, ok = selectMTU(cm, req, pp.mtu); !ok {
		return r, false
	}
	if r.Rate, ok = selectRate(cm, req, pp.rate); !ok {
		return r, false
	}
	if cm&smp.PRCompPktLifeTime != 0 {
		sel := uint8(2)
		if cm&smp.PRCompPktLifeTimeSelector != 0 {
			sel = req.PacketLifeTimeSelector
		}
		l, w := r.PacketLifeTime, req.PacketLifeTime
		if (sel == 0 && l <= w) || (sel == 1 && l >= w) || (sel == 2 && l != w) {
			return r, false
		}
	}
	return r, true
}

// selectMTU applies an MTU selector: a smaller MTU than the path's is
// always usable, a larger one never.
func selectMTU(cm uint64, req *smp.PathRecord, path uint8) (uint8, bool) {
	if cm&smp.PRCompMTU == 0 {
		return path, true
	}
	sel := uint8(2)
	if cm&smp.PRCompMTUSelector != 0 {
		sel = req.MTUSelector
	}
	w := req.MTU
	switch sel {
	case 0:
		return path, path > w
	case 1:
		if path < w {
			return path, true
		}
		return w - 1, w > smp.MTU256 && w <= smp.MTU4096+1
	case 2:
		return w, w >= smp.MTU256 && w <= path
	}
	return path, true
}

// selectRate applies a rate selector, comparing data rates, not codes.
func selectRate(cm uint64, req *smp.PathRecord, path int) (uint8, bool) {
	code := rateCode(path)
	if cm&smp.PRCompRate == 0 {
		return code, true
	}
	sel := uint8(2)
	if cm&smp.PRCompRateSelector != 0 {
		sel = req.RateSelector
	}
	w := rateOf(req.Rate)
	switch sel {
	case 0:
		return code, w != 0 && path > w
	case 1:
		if w == 0 {
			return 0, false
		}
		if path < w {
			return code, true
		}
		c := rateBelow(w)
		return c, c != 0
	case 2:
		return req.Rate, w != 0 && w <= path
	}
	return code, true
}
