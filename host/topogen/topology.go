package topogen

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/topology"
)

// Topology generates g and converts it to a routing snapshot, as the SM
// would see the fabric before activating it (netfile.File.Topology). It is
// for programs and tests that route generated fabrics in process; the
// snapshot of 'ibsm topo' output read back from its file has the same Hash.
func Topology(g Generator) (*topology.Topology, error) {
	f, err := g.Generate()
	if err != nil {
		return nil, err
	}
	t, err := f.Topology()
	if err != nil {
		return nil, fmt.Errorf("topogen: generated fabric is not a valid topology: %w", err)
	}
	return t, nil
}
