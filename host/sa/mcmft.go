package sa

import (
	"maps"
	"slices"

	"github.com/ibsm/ibsm/host/mcast"
	"github.com/ibsm/ibsm/transport/smp"
)

// MulticastForwarder is what the agent's Source implements when the SM
// programs MFTs (*sm.SM): the blocks each switch (by GUID) should hold.
type MulticastForwarder interface {
	MulticastForwarding() map[uint64]mcast.Blocks
}

// runMFTRecord answers MulticastForwardingTableRecord (IBA 15.2.5.8) Get
// and GetTable: one record per non-empty block of each switch's MFT as the
// SM computed and programmed it, selected by LID, Position and BlockNum.
func runMFTRecord(q *query, t *table, limit int) (uint16, string) {
	cm := q.req.ComponentMask
	if cm>>4 != 0 {
		return smp.SAStatusReqInvalid, "MFTRecord component mask selects bits beyond the record's fields"
	}
	src, ok := q.a.src.(MulticastForwarder)
	if !ok {
		return 0, ""
	}
	var req smp.MFTRecord
	_ = req.Unmarshal(q.req.Data[:])
	fwd := src.MulticastForwarding()
	var buf [smp.MFTRecordLen]byte
	for _, guid := range slices.Sorted(maps.Keys(fwd)) {
		n := q.x.topo.NodeByGUID(guid)
		if n < 0 {
			continue
		}
		lid := q.x.nodeLID(n, 0)
		if cm&smp.MFTRCompLID != 0 && lid != req.LID {
			continue
		}
		b := fwd[guid]
		keys := slices.SortedFunc(maps.Keys(b), func(a, c mcast.BlockKey) int {
			if a.Block != c.Block {
				return int(a.Block) - int(c.Block)
			}
			return int(a.Position) - int(c.Position)
		})
		for _, k := range keys {
			if b[k] == (smp.MFTBlock{}) ||
				cm&smp.MFTRCompPosition != 0 && k.Position != req.Position ||
				cm&smp.MFTRCompBlockNum != 0 && k.Block != req.BlockNum {
				continue
			}
			rec := smp.MFTRecord{LID: lid, Position: k.Position, BlockNum: k.Block, Block: b[k]}
			if err := rec.MarshalTo(buf[:]); err != nil {
				continue
			}
			if !t.add(buf[:], limit) {
				return 0, ""
			}
		}
	}
	return 0, ""
}
