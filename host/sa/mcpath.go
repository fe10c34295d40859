package sa

import (
	"github.com/ibsm/ibsm/transport/smp"
)

// runMulticastPath answers a PathRecord query whose DGID is a multicast
// GID (IBA 15.2.5.16): the path from the source port to the group, with
// the group's MLID as DLID and its MTU, rate, SL, P_Key, FlowLabel, TClass
// and HopLimit. Only members of the group get one.
func runMulticastPath(q *query, t *table, limit int, pr *smp.PathRecord) (uint16, string) {
	store := q.mcStore()
	if store == nil {
		return 0, ""
	}
	g, ok := store.Get(pr.DGID)
	if !ok {
		return 0, ""
	}
	cm := q.req.ComponentMask
	x := q.x
	src, st, why := x.resolve(cm&smp.PRCompSGID != 0, pr.SGID, cm&smp.PRCompSLID != 0, pr.SLID)
	if st != 0 {
		return st, why
	}
	if cm&smp.PRCompDLID != 0 && pr.DLID != g.MLID {
		return 0, ""
	}
	if cm&smp.PRCompPKey != 0 && pr.PKey&0x7FFF != g.PKey&0x7FFF {
		return 0, ""
	}
	if cm&smp.PRCompSL != 0 && pr.SL != g.SL {
		return 0, ""
	}
	var buf [smp.PathRecordLen]byte
	x.each(src, func(e int32) bool {
		guid := x.topo.PortGUID(x.eps[e])
		if _, member := g.Members[guid]; !member {
			return true
		}
		r := smp.PathRecord{DGID: g.MGID, SGID: x.gid(e), DLID: g.MLID, SLID: x.lids.Ports[e].Base,
			FlowLabel: g.FlowLabel, HopLimit: g.HopLimit, TClass: g.TClass, NumbPath: 1, PKey: g.PKey, SL: g.SL,
			MTUSelector: selExactly, MTU: g.MTU, RateSelector: selExactly, Rate: g.Rate,
			PacketLifeTimeSelector: selExactly, PacketLifeTime: g.PacketLifeTime}
		if err := r.MarshalTo(buf[:]); err != nil {
			q.a.log.Error("BUG: multicast PathRecord does not encode", "error", err)
			return false
		}
		return t.add(buf[:], limit)
	})
	return 0, ""
}
