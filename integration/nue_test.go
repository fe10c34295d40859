package integration

// The nue engine and its VL assigner on a real ibsim: the 5x5x5 torus of
// TestTorusIBSim (conf/examples/torus555.net, where min-hop routes on one
// VL close credit loops, as that test shows ibdmchk finding) brought up by
// `ibsm run --dump-dir` at vls = 1 and 2, then ibdmchk's credit-loop check
// on the path-SL and SL2VL dumps: no loop, within the budget's SLs and VLs
// (and at 2 VLs a loop once every path is put on VL 0).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/dump"
	"github.com/ibsm/ibsm/transport/netfile"
)

func TestNueIBSim(t *testing.T) {
	nf, err := netfile.ParseFile(torus555Net)
	if err != nil {
		t.Fatal(err)
	}
	for _, vls := range []int{1, 2} {
		t.Run(fmt.Sprintf("%dvl", vls), func(t *testing.T) {
			smNode := nthCA(t, nf, 0)
			r := startRig(t, torus555Net, nthCA(t, nf, len(caNodes(nf))-1).Name)
			cfg := filepath.Join(r.dir, "ibsm.hcl")
			var b strings.Builder
			b.WriteString("fabric {\n  transport = \"ibsim\"\n  socket = \"" + r.env.Sockname + "\"\n  attach = \"" + smNode.Name + "\"\n}\n")
			b.WriteString("sm {\n  state_dir = \"" + filepath.Join(r.dir, "state") + "\"\n  mad_timeout = \"200ms\"\n  sweep_interval = \"500ms\"\n  plugin_timeout = \"120s\"\n}\n")
			budget := fmt.Sprintf("  config {\n    vls = %d\n  }\n", vls)
			for _, p := range [][3]string{{"routing_engine", "nue", budget}, {"lid_assigner", "sequential", ""}, {"vl_assigner", "nue-vl", budget}} {
				b.WriteString("plugin \"" + p[0] + "\" \"" + p[1] + "\" {\n  path = \"" + filepath.Join(binDir, "ibsm-plugin-"+p[1]) + "\"\n" + p[2] + "}\n")
			}
			b.WriteString("routing {\n  engine = \"nue\"\n  lid_assigner = \"sequential\"\n  vl_assigner = \"nue-vl\"\n}\n")
			if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			dumps := filepath.Join(r.dir, "dump")
			start := time.Now()
			d := startIBSM(t, cfg, "--dump-dir", dumps)
			d.waitUp(t, 1, 120*time.Second)
			waitDump(t, dumps, start)
			if log := d.log.String(); !strings.Contains(log, "engine=nue") && !strings.Contains(log, "engine nue") {
				t.Fatalf("the nue engine is not the one in force:\n%s", tail(log, 3000))
			}
			t.Logf("SUBNET UP after %s", time.Since(start).Round(time.Millisecond))
			out := ibdmchkVL(t, dumps, dump.PathSLFile)
			sls, used, loop := ibdmchkVerdict(t, out)
			if loop || sls != vls || used != vls {
				t.Errorf("ibdmchk: %d SLs, %d VLs (want %d of each: one SL and VL per layer), credit loop %v:\n%s", sls, used, vls, loop, tail(out, 2000))
			}
			t.Logf("ibdmchk: %d SLs on %d VLs, no credit loop", sls, used)
			// The 2-layer routes all on VL 0 loop: the layers are needed,
			// and this ibdmchk run sees a loop when there is one.
			if vls > 1 {
				if _, _, loop := ibdmchkVerdict(t, ibdmchkVL(t, withAllSL0(t, dumps, true), dump.PathSLFile)); !loop {
					t.Errorf("ibdmchk finds no credit loop with the %d-layer routes all on VL 0: the check above proves nothing", vls)
				}
			}
		})
	}
}
