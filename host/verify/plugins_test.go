package verify_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ibsm/ibsm/host/pluginhost"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/zclconf/go-cty/cty"
)

// repoRoot is the module root, two levels above this package.
func repoRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestVLAssignerPlugins runs the multi-VL assigners' real binaries on the
// fabrics plugins/lib/vl tests them on (ring, torus, random regular)
// and on the rrg16 example fabric with sssp routes, and verifies their
// plans as the host does before programming. acro's plans change VL along
// paths; the host must accept every deadlock-free plan (no false cycles).
func TestVLAssignerPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugin binaries")
	}
	root := repoRoot(t)
	bin := t.TempDir()
	names := []string{"acro", "dfsssp", "layered", "sssp"}
	args := []string{"build", "-o", bin + "/"}
	for _, n := range names {
		args = append(args, "./plugins/"+n)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build plugins: %v\n%s", err, out)
	}
	m, err := pluginhost.New(pluginhost.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ctx := context.Background()
	launch := func(name string, k sdk.Kind) *pluginhost.Plugin {
		p, err := m.Launch(ctx, pluginhost.Config{Name: name, Kind: k, Path: filepath.Join(bin, name)})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Configure(cty.NullVal(cty.EmptyObject)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sssp := launch("sssp", sdk.KindRouting)
	minhop := func(topo *topology.Topology) (*plan.Routes, error) { return analysistest.MinHop(topo), nil }
	ssspRoutes := func(topo *topology.Topology) (*plan.Routes, error) {
		return sssp.Route(ctx, sdk.RouteRequest{Topo: topo})
	}
	fabrics := []struct {
		name  string
		build func() (*topology.Topology, error)
		route func(*topology.Topology) (*plan.Routes, error)
	}{
		{"ring6 minhop", func() (*topology.Topology, error) { return analysistest.Ring(6, 1, 8) }, minhop},
		{"torus4x4 minhop", func() (*topology.Topology, error) { return analysistest.Torus2D(4, 4, 1, 8) }, minhop},
		{"torus4x4 sssp", func() (*topology.Topology, error) { return analysistest.Torus2D(4, 4, 1, 8) }, ssspRoutes},
		{"rrg16 sssp", func() (*topology.Topology, error) {
			return activeNetFile(filepath.Join(root, "conf/examples/rrg16.net"))
		}, ssspRoutes},
	}
	for _, vlName := range []string{"acro", "dfsssp", "layered"} {
		assigner := launch(vlName, sdk.KindVLAssign)
		for _, fb := range fabrics {
			t.Run(vlName+"/"+fb.name, func(t *testing.T) {
				topo, err := fb.build()
				if err != nil {
					t.Fatal(err)
				}
				routes, err := fb.route(topo)
				if err != nil {
					t.Fatal(err)
				}
				lids := analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)
				r, err := plan.Realize(topo, routes, lids)
				if err != nil {
					t.Fatal(err)
				}
				v, err := assigner.AssignVLs(ctx, sdk.VLRequest{Topo: topo, Routes: routes, LIDs: lids, Realized: r, MaxVLs: 8})
				if err != nil {
					t.Fatalf("%s refuses: %v", vlName, err)
				}
				verdict, err := check.Check(check.Plan{Topo: topo, LIDs: lids, VLs: v, Realized: r}, check.Options{})
				if err != nil {
					if on := analysistest.Exact(r, v, false).OnCycle(); len(on) > 0 {
						t.Fatalf("%s's plan has a real credit loop (%d (channel, VL) nodes on cycles in the exact graph); the host is right to refuse it: %v", vlName, len(on), err)
					}
					t.Fatalf("host rejects %s's plan, which the exact graph finds deadlock-free: %v", vlName, err)
				}
				rep := verdict.Report
				// The host's graph is the exact hop-by-hop one.
				for _, e := range analysistest.Exact(r, v, false).Compare(r, rep) {
					t.Error(e)
				}
				cross := 0
				for _, s := range rep.VLs {
					cross += s.FromOtherVLs
				}
				t.Logf("%s: VLs %v, SLs %v, %d SL overrides, %d SL2VL entries, %d dependencies change VL", vlName, rep.VLsUsed, rep.SLsUsed, len(v.Overrides), len(v.SL2VL), cross)
			})
		}
	}
}

// activeNetFile reads an ibnetdiscover file with every cabled link up.
func activeNetFile(path string) (*topology.Topology, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	nf, err := netfile.ParseFile(path)
	if err != nil {
		return nil, err
	}
	topo, err := nf.Topology()
	if err != nil {
		return nil, err
	}
	for i := range topo.Nodes {
		for j := range topo.Nodes[i].Ports {
			if j > 0 && topo.Nodes[i].Ports[j].Peer.Connected() {
				topo.Nodes[i].Ports[j].State = topology.StateActive
			}
		}
	}
	return topo, nil
}
