package benchutil

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/topogen"
)

// TestPlanTimed plans a small fat tree through the host with the real
// plugins, as the experiments do: the routing phase is timed from after
// discovery to the plan's return and holds the pipeline's own stage times.
func TestPlanTimed(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the plugins")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := BuildPlugins(goTool, root, bin, []string{"updn", "sequential", "single"}); err != nil {
		t.Fatal(err)
	}
	var net bytes.Buffer
	if _, err := topogen.Write([]string{"ft", "--radix", "8", "--levels", "2"}, &net); err != nil {
		t.Fatal(err)
	}
	netFile := filepath.Join(dir, "ft2-8.net")
	if err := os.WriteFile(netFile, net.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Config{Topology: netFile, StateDir: filepath.Join(dir, "state"), BinDir: bin, Engine: "updn", PluginTimeout: "120s"}.
		Load(filepath.Join(dir, "ibsm.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := app.New(ctx, cfg, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	start := time.Now()
	topo, res, phase, err := PlanTimed(ctx, a.SM, "")
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if topo == nil || res == nil || res.Realized == nil {
		t.Fatalf("no plan: topology %v, result %v", topo != nil, res != nil)
	}
	tm := res.Timings
	stages := tm.Routing + tm.LIDs + tm.VLs + tm.Verify
	if phase.Began.Before(start) || phase.Wall() <= 0 || phase.Wall() > took || stages > phase.Wall() {
		t.Errorf("routing phase %v (began %v after the call, whole plan %v), stages sum %v",
			phase.Wall(), phase.Began.Sub(start), took, stages)
	}
	if phase.After.Self < phase.Before.Self || phase.After.Total() < phase.Before.Total() {
		t.Errorf("CPU went back: %+v -> %+v", phase.Before, phase.After)
	}
	for _, p := range []string{"updn", "sequential", "single"} {
		if _, ok := phase.After.Children["ibsm-plugin-"+p]; !ok {
			t.Errorf("plugin %s not among the sampled children %v", p, phase.After.Children)
		}
	}
}
