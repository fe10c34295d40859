package topogen

import (
	"bytes"
	"fmt"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
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

// Written runs 'ibsm topo args' into memory and reads the file back as the
// SM would load it: the snapshot a reader of that file routes. Programs
// that generate their instances in process test with it that the command
// line they print writes the same fabric (equal Hash).
func Written(args []string) (*topology.Topology, error) {
	var buf bytes.Buffer
	if _, err := Write(args, &buf); err != nil {
		return nil, err
	}
	f, err := netfile.Parse("ibsm-topo.net", &buf)
	if err != nil {
		return nil, fmt.Errorf("topogen: reading back the written file: %w", err)
	}
	t, err := f.Topology()
	if err != nil {
		return nil, fmt.Errorf("topogen: written fabric is not a valid topology: %w", err)
	}
	return t, nil
}
