package program

import (
	"context"
	"fmt"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/transport/smp"
)

// ReadVLArb reads VLArbitrationTable block (1..4) of port q of node guid
// as the port holds it now, whether or not this programmer wrote it (the
// SA's VLArbitrationTableRecord answers). A switch takes the port from the
// modifier; a CA's table is read through a route arriving on q. An SMP
// answered with an error status comes back as *mad.Error: the port has no
// such block.
func (p *Programmer) ReadVLArb(ctx context.Context, fab *discovery.Fabric, guid uint64, q, block uint8) (smp.VLArbBlock, error) {
	var b smp.VLArbBlock
	n := fab.Nodes[guid]
	if n == nil || int(q) >= len(n.Ports) {
		return b, fmt.Errorf("node %#x port %d is not in the discovered fabric", guid, q)
	}
	path := n.Path
	if n.Switch == nil {
		var err error
		if path, err = fab.PortPath(n, q); err != nil {
			return b, err
		}
	}
	err := p.C.Get(ctx, path, smp.AttrVLArbitrationTable, smp.VLArbMod(q, block), &b)
	return b, err
}
