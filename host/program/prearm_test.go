package program_test

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestPrearm: Prearm arms every cabled switch port of a fresh fabric and
// nothing else; the Apply that follows with the same discovery sends the
// rest (no second Armed Set, which the fabric would refuse: a port moves
// one state at a time), gives the armed ports of a multi-VL plan their
// OperationalVLs in a Set of their own, and leaves the fabric as an Apply
// alone does.
func TestPrearm(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.file(t))
			fab, topo := r.discover(t)
			rz := realize(t, topo, tc.route(topo), tc.lmc)
			var vls *plan.VLPlan
			if tc.vls {
				vls = analysistest.RingVLs(rz)
			}
			p := &program.Programmer{C: r.c, Parallel: 4}
			swPorts := switchLinks(topo)
			if n := p.Prearm(context.Background(), fab, nil); n != swPorts {
				t.Fatalf("Prearm sent %d Sets, want one per cabled switch port (%d)", n, swPorts)
			}
			links, caPorts := int64(0), int64(0)
			for i := range topo.Nodes {
				n := &topo.Nodes[i]
				for q := 1; q < len(n.Ports); q++ {
					if !n.Ports[q].Peer.Connected() {
						continue
					}
					links++
					want := uint8(smp.PortStateArmed)
					if n.Type != topology.Switch {
						want, caPorts = smp.PortStateInit, caPorts+1
					}
					snap, err := r.fab.PortInfo(n.GUID, uint8(q))
					must(t, err)
					if snap.State != want {
						t.Fatalf("after Prearm port %#x/%d is in state %d, want %d", n.GUID, q, snap.State, want)
					}
				}
			}
			st, err := p.Apply(context.Background(), fab, topo, rz, vls)
			must(t, err)
			if st.StateSets != 2*links-caPorts || st.Prearmed != swPorts || st.ArmedWithLID != caPorts {
				t.Fatalf("Apply after Prearm: %d state Sets (%d before the plan), %d CA ports armed with their LID; want %d, %d, %d",
					st.StateSets, st.Prearmed, st.ArmedWithLID, 2*links-caPorts, swPorts, caPorts)
			}
			if wantOpVLs := map[bool]int64{false: 0, true: swPorts}[tc.vls]; st.OpVLsSets != wantOpVLs {
				t.Fatalf("Apply after Prearm sent %d OperationalVLs Sets, want %d (one per armed port of a multi-VL plan)", st.OpVLsSets, wantOpVLs)
			}
			checkFabric(t, r, topo, rz, vls)

			// A fabric that is up has no Init–Init link.
			fab2, _ := r.discover(t)
			if n := p.Prearm(context.Background(), fab2, nil); n != 0 {
				t.Fatalf("Prearm on the programmed fabric sent %d Sets", n)
			}

			// An Apply of another discovery does not take a Prearm: it
			// reads the ports Armed itself.
			r = newRig(t, tc.file(t))
			p = &program.Programmer{C: r.c, Parallel: 4}
			fab, _ = r.discover(t)
			p.Prearm(context.Background(), fab, nil)
			st = apply(t, p, r, rz, vls)
			if st.Prearmed != 0 || st.StateSets != links {
				t.Fatalf("Apply of a discovery after Prearm: %d state Sets, %d taken from Prearm; want %d (Active only), 0", st.StateSets, st.Prearmed, links)
			}
			checkFabric(t, r, topo, rz, vls)
		})
	}
}
