package sm

import (
	"context"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/transport/smp"
)

// ReadVLArb reads one VLArbitrationTable block of a port of fab (see
// program.Programmer.ReadVLArb); the SA answers VLArbitrationTableRecord
// queries with it.
func (s *SM) ReadVLArb(ctx context.Context, fab *discovery.Fabric, guid uint64, port, block uint8) (smp.VLArbBlock, error) {
	return s.prog.ReadVLArb(ctx, fab, guid, port, block)
}
