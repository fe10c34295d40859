package sa

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// VLArbitrationTableRecord (IBA 15.2.5.9). ibsm writes VLArbitration
// tables only for plans with more than one data VL, and what a port holds
// otherwise is the vendor's reset value, so the records show what each
// port holds: the SA reads the blocks a query selects (VLArbitrationTable
// Gets through the SM's SMP client) and keeps them until the plan or the
// fabric changes. This is the one record read from the fabric per query;
// a narrow Get costs one SMP, once. Every port has blocks 1..4 (as with
// OpenSM): a block past the port's VLArbitrationLowCap/HighCap (PortInfo)
// holds no entry, so its record is all zeros (weight 0: unused) and costs
// no SMP; an SMA that refuses a block within its caps has no record.

// VLArbReader is what a Source implements when it can read ports'
// VLArbitration tables (*sm.SM). An SMP answered with an error status
// (*mad.Error) means the port has no such block; any other error, that it
// did not answer. Without a VLArbReader there are no records.
type VLArbReader interface {
	ReadVLArb(ctx context.Context, fab *discovery.Fabric, guid uint64, port, block uint8) (smp.VLArbBlock, error)
}

var _ VLArbReader = (*sm.SM)(nil)

var vlarbKinds = map[uint16]queryKind{
	smp.SAAttrVLArbRecord: {name: "VLArbitrationTableRecord", stride: stride(smp.VLArbRecordLen), table: true, run: runVLArbRecord},
}

// LID OutputPortNum BlockNum reserved VLArbitrationTable
var vlarbRecordFields = []field{{0, 16}, {16, 8}, {24, 8}, {32, 32}, {64, 512}}

const (
	compVLArbPort  = 1 << 1
	compVLArbBlock = 1 << 2

	// vlarbWindow is how many blocks one query reads at a time.
	vlarbWindow = 16
	// vlarbTimeout bounds one query's reads (the SMP client retries each).
	vlarbTimeout = 10 * time.Second
)

// maxVLArbReads bounds the blocks not read before that one GetTable may
// read (the agent answers nothing else meanwhile): blocks 1..4 of about
// 1,000 ports. A wider query is refused with ERR_NO_RESOURCES; narrowing
// it by LID answers it. A variable for the tests.
var maxVLArbReads = 4096

type vlarbKey struct {
	guid        uint64
	port, block uint8
}

// vlarbRead is one block as read: err is nil or a *mad.Error (the port
// has no such block).
type vlarbRead struct {
	blk smp.VLArbBlock
	err error
}

// vlarbCache holds the blocks read for one index (plan and fabric).
type vlarbCache struct {
	mu sync.Mutex
	m  map[vlarbKey]vlarbRead
}

func (c *vlarbCache) get(k vlarbKey) (vlarbRead, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[k]
	return r, ok
}

// fill reads the blocks of keys not read yet, in parallel, and returns
// the ones that got no answer (not kept: the next query asks again).
func (c *vlarbCache) fill(ctx context.Context, rd VLArbReader, fab *discovery.Fabric, keys []vlarbKey) map[vlarbKey]error {
	var wg sync.WaitGroup
	failed := map[vlarbKey]error{}
	for _, k := range keys {
		if _, ok := c.get(k); ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := rd.ReadVLArb(ctx, fab, k.guid, k.port, k.block)
			var me *mad.Error
			c.mu.Lock()
			defer c.mu.Unlock()
			if err != nil && !errors.As(err, &me) {
				failed[k] = err
				return
			}
			c.m[k] = vlarbRead{blk: b, err: err}
		}()
	}
	wg.Wait()
	return failed
}

// beyondCap reports whether block b of port p of node n lies past the
// entries its PortInfo (as discovered) says the table has.
func (x *index) beyondCap(n int32, p, b uint8) bool {
	pi, ok := x.portInfo(n, p)
	if !ok {
		return false
	}
	capacity := pi.VLArbitrationLowCap
	if b >= smp.VLArbHighBlock0 {
		capacity = pi.VLArbitrationHighCap
	}
	return smp.VLArbBlockLen*int((b-1)%2) >= int(capacity)
}

// vlarbCandidate is a (port, block) a query selects, with the LID its
// record names.
type vlarbCandidate struct {
	key   vlarbKey
	lid   uint16
	ca    bool
	empty bool // past the port's caps: no SMP, no entry
}

// vlarbCandidates lists, in record order, the blocks the request's LID,
// OutputPortNum and BlockNum select: blocks 1..4 of every port of a switch
// (port 0 included) and of each CA port. A CA's table is its port's, so
// OutputPortNum does not narrow a CA (OpenSM does the same; osmtest asks
// with port 0).
func (q *query) vlarbCandidates(cm uint64) []vlarbCandidate {
	x := q.x
	reqPort, reqBlock := q.req.Data[2], q.req.Data[3]
	var out []vlarbCandidate
	q.lidEndpoints(func(e int32) bool {
		ep := x.eps[e]
		node := &x.topo.Nodes[ep.Node]
		first, last, ca := int(ep.Port), int(ep.Port), node.Type != topology.Switch
		if !ca {
			first, last = 0, node.NumPorts()
			if cm&compVLArbPort != 0 {
				if int(reqPort) > last {
					return true
				}
				first, last = int(reqPort), int(reqPort)
			}
		}
		for p := first; p <= last; p++ {
			for b := uint8(smp.VLArbLowBlock0); b <= smp.VLArbHighBlock1; b++ {
				if cm&compVLArbBlock != 0 && b != reqBlock {
					continue
				}
				out = append(out, vlarbCandidate{key: vlarbKey{node.GUID, uint8(p), b}, lid: x.lids.Ports[e].Base, ca: ca,
					empty: x.beyondCap(ep.Node, uint8(p), b)})
			}
		}
		return true
	})
	return out
}

// runVLArbRecord answers VLArbitrationTableRecord Get and GetTable.
func runVLArbRecord(q *query, t *table, limit int) (uint16, string) {
	cm := q.req.ComponentMask
	if st, why := checkMask("VLArbitrationTableRecord", vlarbRecordFields, cm); st != 0 {
		return st, why
	}
	rd, ok := q.a.src.(VLArbReader)
	if !ok || q.x.fabric == nil {
		return 0, ""
	}
	x := q.x
	cands := q.vlarbCandidates(cm)
	if limit == 0 {
		unread := 0
		for _, c := range cands {
			if _, ok := x.vlarb.get(c.key); !ok && !c.empty {
				unread++
			}
		}
		if unread > maxVLArbReads {
			return smp.SAStatusNoResources, fmt.Sprintf("VLArbitrationTableRecord query selects %d blocks not read yet (at most %d per query): select a LID", unread, maxVLArbReads)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), vlarbTimeout)
	defer cancel()
	step := vlarbWindow
	if limit > 0 {
		step = min(step, limit+1) // a Get stops at the second match
	}
	var buf [smp.VLArbRecordLen]byte
	failed := 0
	var failure error
	for start := 0; start < len(cands); start += step {
		chunk := cands[start:min(start+step, len(cands))]
		keys := make([]vlarbKey, 0, len(chunk))
		for _, c := range chunk {
			if !c.empty {
				keys = append(keys, c.key)
			}
		}
		lost := x.vlarb.fill(ctx, rd, x.fabric, keys)
		for _, c := range chunk {
			if err, ok := lost[c.key]; ok {
				failed, failure = failed+1, err
				continue
			}
			var r vlarbRead // past the caps: all entries unused
			if !c.empty {
				if r, _ = x.vlarb.get(c.key); r.err != nil {
					continue // the port refuses the block
				}
			}
			rec := smp.VLArbRecord{LID: c.lid, OutPort: c.key.port, BlockNum: c.key.block, Block: r.blk}
			if rec.MarshalTo(buf[:]) != nil {
				continue
			}
			m := cm
			if c.ca {
				m &^= compVLArbPort
			}
			if matches(vlarbRecordFields, m, q.req.Data[:], buf[:]) && !t.add(buf[:], limit) {
				return q.vlarbFailures(failed, failure, t)
			}
		}
	}
	return q.vlarbFailures(failed, failure, t)
}

// vlarbFailures logs blocks that could not be read; when that left
// nothing to answer, the answer is Busy (the requester retries).
func (q *query) vlarbFailures(failed int, failure error, t *table) (uint16, string) {
	if failed == 0 {
		return 0, ""
	}
	q.a.warnOnce("VLArbitrationTable reads", "VLArbitrationTableRecord: ports did not answer VLArbitrationTable Gets; their records are missing from the answer",
		"blocks", failed, "error", failure)
	if t.n == 0 {
		return smp.StatusBusy, "the selected ports did not answer VLArbitrationTable Gets; retry"
	}
	return 0, ""
}
