package wire

import (
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
)

// TestRoutesShape: a shape-only header carries form and count and nothing
// else; only RecvRoutesOrShape (LID assigners) accepts it, and the count
// must still match the topology.
func TestRoutesShape(t *testing.T) {
	topo := fuzzTopo(t)
	eps := len(topo.Endpoints())
	planes := &plan.Routes{Planes: make([]plan.DestPlanes, eps)}
	for e := range planes.Planes {
		planes.Planes[e].Planes = []plan.Plane{make(plan.Plane, len(topo.Switches()))}
	}
	cases := []struct {
		name      string
		routes    *plan.Routes
		orShape   bool
		wantErr   string
		wantDests int // -1: paths form
	}{
		{"planes to a LID assigner", planes, true, "", eps},
		{"paths to a LID assigner", &plan.Routes{Paths: []plan.Path{{Src: 0, Dst: 1}}}, true, "", -1},
		{"wrong destination count", &plan.Routes{Planes: make([]plan.DestPlanes, eps+1)}, true, "topology has", 0},
		{"shape where routes are needed", planes, false, "only their shape", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var chunks []*pb.Chunk
			if err := SendRoutesShape(func(c *pb.Chunk) error { chunks = append(chunks, c); return nil }, tc.routes); err != nil {
				t.Fatal(err)
			}
			if len(chunks) != 1 {
				t.Fatalf("shape took %d messages, want the header alone", len(chunks))
			}
			recv := RecvRoutes
			if tc.orShape {
				recv = RecvRoutesOrShape
			}
			got, err := recv(unframe(frame(chunks)), topo, 0)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantDests < 0 {
				if got.IsPlanes() || got.Paths == nil || len(got.Paths) != 0 {
					t.Fatalf("paths shape decoded as %+v", got)
				}
				return
			}
			if !got.IsPlanes() || len(got.Planes) != tc.wantDests {
				t.Fatalf("planes shape: %d destinations (planes form %v), want %d", len(got.Planes), got.IsPlanes(), tc.wantDests)
			}
			for e, dp := range got.Planes {
				if dp.Planes != nil {
					t.Fatalf("destination %d carries planes in a shape", e)
				}
			}
		})
	}
}
