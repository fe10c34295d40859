package sim

import (
	"sync/atomic"

	"github.com/ibsm/ibsm/transport/smp"
)

// Stats counts what the fabric saw.
type Stats struct {
	// Received counts every MAD agents sent into the fabric.
	Received uint64
	// Gets, Sets and Others count SMP requests by method.
	Gets, Sets, Others uint64
	// ByAttr counts SMP requests per attribute ID.
	ByAttr map[uint16]uint64
	// Answered counts responses the SMAs produced (delivered or not).
	Answered uint64
	// Dropped counts MADs discarded by SetDropRate.
	Dropped uint64
	// Lost counts MADs that could not be delivered: a link down, a port
	// that does not exist, an LFT hole, the hop limit, nobody attached.
	Lost uint64
	// Traps counts trap 128 notices delivered to an agent; TrapsLost those
	// that found no route or no agent.
	Traps, TrapsLost uint64
	// Malformed counts undecodable MADs; Overruns packets dropped because
	// an agent's receive queue was full.
	Malformed, Overruns uint64
	// MKeyRefused counts SMPs an SMA dropped because they failed its M_Key
	// check (each also counts in the port's M_KeyViolations).
	MKeyRefused uint64
}

const attrSlots = 0x40

type counters struct {
	received, gets, sets, others atomic.Uint64
	answered, dropped, lost      atomic.Uint64
	traps, trapsLost             atomic.Uint64
	malformed, overruns          atomic.Uint64
	mkeyRefused                  atomic.Uint64
	byAttr                       [attrSlots]atomic.Uint64
	otherAttr                    sync64map
}

// sync64map counts rare attribute IDs beyond the fixed slots.
type sync64map struct {
	vendor atomic.Uint64 // every ID >= attrSlots
}

func (c *counters) count(s *smp.SMP) {
	switch s.Method {
	case smp.MethodGet:
		c.gets.Add(1)
	case smp.MethodSet:
		c.sets.Add(1)
	default:
		c.others.Add(1)
	}
	if s.AttrID < attrSlots {
		c.byAttr[s.AttrID].Add(1)
	} else {
		c.otherAttr.vendor.Add(1)
	}
}

// VendorAttrs is the ByAttr key under which requests for attribute IDs of
// 0x40 and above are counted together.
const VendorAttrs = 0xFFFF

// Stats returns a snapshot of the counters.
func (f *Fabric) Stats() Stats {
	c := &f.st
	s := Stats{
		Received: c.received.Load(), Gets: c.gets.Load(), Sets: c.sets.Load(), Others: c.others.Load(),
		Answered: c.answered.Load(), Dropped: c.dropped.Load(), Lost: c.lost.Load(),
		Traps: c.traps.Load(), TrapsLost: c.trapsLost.Load(), Malformed: c.malformed.Load(), Overruns: c.overruns.Load(),
		MKeyRefused: c.mkeyRefused.Load(),
		ByAttr:      map[uint16]uint64{},
	}
	for i := range c.byAttr {
		if v := c.byAttr[i].Load(); v != 0 {
			s.ByAttr[uint16(i)] = v
		}
	}
	if v := c.otherAttr.vendor.Load(); v != 0 {
		s.ByAttr[VendorAttrs] = v
	}
	return s
}
