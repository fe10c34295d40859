package rollout

import (
	"context"
	"fmt"
	"sync"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// Reader reads back what switches hold, over the directed routes of a
// discovered fabric: SwitchInfo (LinearFDBTop), LinearForwardingTable
// blocks (IBA 14.2.5.10) and SLtoVLMappingTable (IBA 14.2.5.8). It only
// sends Gets.
type Reader struct {
	C   *mad.Client
	Fab *discovery.Fabric
	// Parallel bounds the SMPs in flight (default 8).
	Parallel int
}

// ReadError says what could not be read back; what was read is still
// returned, the rest left unknown.
type ReadError struct {
	// Failed counts the SMPs that failed.
	Failed int
	First  error
}

func (e *ReadError) Error() string {
	if e.Failed == 1 {
		return e.First.Error()
	}
	return fmt.Sprintf("%v (and %d more SMPs failed)", e.First, e.Failed-1)
}

// gets runs Gets on a fanout group and keeps the first failure.
type gets struct {
	ctx   context.Context
	c     *mad.Client
	g     *fanout.Group
	mu    sync.Mutex
	first error
}

func (r Reader) gets(ctx context.Context) *gets {
	return &gets{ctx: ctx, c: r.C, g: fanout.New(max(r.Parallel, 8))}
}

// get reads one attribute and calls done with it under the lock.
func (g *gets) get(path mad.Path, attr uint16, mod uint32, out mad.Attribute, what string, done func()) {
	g.g.Go(func() error {
		err := g.c.Get(g.ctx, path, attr, mod, out)
		g.mu.Lock()
		defer g.mu.Unlock()
		if err != nil {
			if g.first == nil {
				g.first = fmt.Errorf("reading back %s: %w", what, err)
			}
			return err
		}
		done()
		return nil
	})
}

func (g *gets) wait() error {
	g.g.Wait("")
	if n := g.g.Failed(); n > 0 {
		return &ReadError{Failed: int(n), First: g.first}
	}
	return nil
}

// LFTs reads entries 0..top of the forwarding tables of switches ws
// (indices in topo.Switches()). Entries above a switch's LinearFDBTop
// forward nothing and read as plan.NoPort. A switch that is gone or did
// not answer has a nil row; the error (a *ReadError) says what failed.
func (r Reader) LFTs(ctx context.Context, topo *topology.Topology, ws []int32, top int) ([][]uint8, error) {
	out := make([][]uint8, len(ws))
	tops := make([]int, len(ws))
	ok := make([]int, len(ws)) // blocks and SwitchInfo read
	g := r.gets(ctx)
	gone := 0
	var goneErr error
	for i, sw := range ws {
		guid := topo.Nodes[topo.Switches()[sw]].GUID
		n := r.Fab.Nodes[guid]
		if n == nil {
			if gone++; goneErr == nil {
				goneErr = fmt.Errorf("switch 0x%016x is not in the discovered fabric", guid)
			}
			continue
		}
		out[i] = make([]uint8, top+1)
		si := new(smp.SwitchInfo)
		g.get(n.Path, smp.AttrSwitchInfo, 0, si, fmt.Sprintf("switch 0x%016x SwitchInfo", guid), func() {
			tops[i] = int(si.LinearFDBTop)
			ok[i]++
		})
		for b := 0; b*64 <= top; b++ {
			blk := new(smp.LFTBlock)
			g.get(n.Path, smp.AttrLinearForwardingTable, uint32(b), blk, fmt.Sprintf("switch 0x%016x LFT block %d", guid, b), func() {
				copy(out[i][b*64:], blk[:min(64, top+1-b*64)])
				ok[i]++
			})
		}
	}
	err := g.wait()
	for i := range out {
		if out[i] == nil {
			continue
		}
		if ok[i] != top/64+2 {
			out[i] = nil // partly read: unknown
			continue
		}
		for lid := tops[i] + 1; lid <= top; lid++ {
			out[i][lid] = plan.NoPort
		}
	}
	if gone > 0 {
		if err == nil {
			return out, &ReadError{Failed: gone, First: goneErr}
		}
		re := err.(*ReadError)
		re.Failed += gone
	}
	return out, err
}

// SL2VL reads the tables want programs on switches ws: the pairs
// want.Pairs lists. A pair that could not be read is left out (unknown).
func (r Reader) SL2VL(ctx context.Context, topo *topology.Topology, ws []int32, want SL2VLTables) (ReadSL2VL, error) {
	out := ReadSL2VL{}
	g := r.gets(ctx)
	for _, sw := range ws {
		node := topo.Switches()[sw]
		pairs := want.Pairs(node)
		if len(pairs) == 0 {
			continue
		}
		guid := topo.Nodes[node].GUID
		n := r.Fab.Nodes[guid]
		if n == nil {
			continue // unknown; LFTs reports the switch gone
		}
		m := map[[2]uint8][16]uint8{}
		out[node] = m
		for _, p := range pairs {
			var tbl smp.SL2VLTable
			g.get(n.Path, smp.AttrSLtoVLMappingTable, smp.SL2VLMod(p[0], p[1]), &tbl, fmt.Sprintf("switch 0x%016x SL2VL table %d->%d", guid, p[0], p[1]), func() {
				m[p] = tbl
			})
		}
	}
	return out, g.wait()
}

// Held reads back what the fabric holds where want programs something:
// every switch's LFT up to want's top LID, the SL2VL tables want
// programs, and every endpoint's LID and LMC (PortInfo).
// What could not be read stays unknown (it counts as differing) and the
// error says what.
func (r Reader) Held(ctx context.Context, want Tables) (Tables, error) {
	t := want.Topo
	all := make([]int32, len(t.Switches()))
	top := 0
	for i := range all {
		all[i] = int32(i)
		top = max(top, len(want.LFT[i])-1)
	}
	held := Tables{Topo: t}
	var err error
	held.LFT, err = r.LFTs(ctx, t, all, top)
	if want.SL2VL != nil {
		var serr error
		held.SL2VL, serr = r.SL2VL(ctx, t, all, want.SL2VL)
		err = joinRead(err, serr)
	}
	if want.LIDs != nil {
		var lerr error
		held.LIDs, lerr = r.LIDs(ctx, t)
		err = joinRead(err, lerr)
	}
	return held, err
}

// LIDs reads PortInfo of every endpoint of t (indexed like
// t.Endpoints()): a switch's port 0 through the switch, a CA port through
// a route that arrives on it. An endpoint not read has no LID.
func (r Reader) LIDs(ctx context.Context, t *topology.Topology) ([]plan.PortLID, error) {
	out := make([]plan.PortLID, len(t.Endpoints()))
	g := r.gets(ctx)
	missing := 0
	var missErr error
	for e, ep := range t.Endpoints() {
		guid := t.Nodes[ep.Node].GUID
		path, err := r.portPath(guid, ep.Port)
		if err != nil {
			if missing++; missErr == nil {
				missErr = err
			}
			continue
		}
		pi := new(smp.PortInfo)
		g.get(path, smp.AttrPortInfo, uint32(ep.Port), pi, fmt.Sprintf("node 0x%016x port %d PortInfo", guid, ep.Port), func() {
			out[e] = plan.PortLID{Base: pi.LID, LMC: pi.LMC}
		})
	}
	err := g.wait()
	if missing > 0 {
		err = joinRead(err, &ReadError{Failed: missing, First: missErr})
	}
	return out, err
}

// portPath is a directed route that arrives at port q of node guid (a
// CA answers PortInfo for the port an SMP arrives on).
func (r Reader) portPath(guid uint64, q uint8) (mad.Path, error) {
	n := r.Fab.Nodes[guid]
	if n == nil {
		return nil, fmt.Errorf("node 0x%016x is not in the discovered fabric", guid)
	}
	return r.Fab.PortPath(n, q)
}

// joinRead adds b's failures to a's.
func joinRead(a, b error) error {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	ra, rb := a.(*ReadError), b.(*ReadError)
	return &ReadError{Failed: ra.Failed + rb.Failed, First: ra.First}
}
