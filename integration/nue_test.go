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
			r := startRig(t, torus555Net, nthCA(t, nf, len(caNodes(nf))-1).Name)
			budget := fmt.Sprintf("  config {\n    vls = %d\n  }\n", vls)
			_, dumps := upOnIBSim(t, r, nthCA(t, nf, 0).Name, [3][2]string{{"nue", budget}, {"sequential", ""}, {"nue-vl", budget}})
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

// upOnIBSim writes an ibsm config for rig r with the SM attached at node
// smNode and the routing engine, LID assigner and VL assigner of
// plugins ({name, config block or ""} each), runs `ibsm run --dump-dir`,
// waits for SUBNET UP and the dumps, and checks the engine in force. It
// returns the daemon and the dump directory.
func upOnIBSim(t *testing.T, r *rig, smNode string, plugins [3][2]string) (*daemon, string) {
	t.Helper()
	cfg := filepath.Join(r.dir, "ibsm.hcl")
	var b strings.Builder
	b.WriteString("fabric {\n  transport = \"ibsim\"\n  socket = \"" + r.env.Sockname + "\"\n  attach = \"" + smNode + "\"\n}\n")
	b.WriteString("sm {\n  state_dir = \"" + filepath.Join(r.dir, "state") + "\"\n  mad_timeout = \"200ms\"\n  sweep_interval = \"500ms\"\n  plugin_timeout = \"120s\"\n}\n")
	for i, kind := range []string{"routing_engine", "lid_assigner", "vl_assigner"} {
		name := plugins[i][0]
		b.WriteString("plugin \"" + kind + "\" \"" + name + "\" {\n  path = \"" + filepath.Join(binDir, "ibsm-plugin-"+name) + "\"\n" + plugins[i][1] + "}\n")
	}
	b.WriteString("routing {\n  engine = \"" + plugins[0][0] + "\"\n  lid_assigner = \"" + plugins[1][0] + "\"\n  vl_assigner = \"" + plugins[2][0] + "\"\n}\n")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dumps := filepath.Join(r.dir, "dump")
	start := time.Now()
	d := startIBSM(t, cfg, "--dump-dir", dumps)
	d.waitUp(t, 1, 120*time.Second)
	waitDump(t, dumps, start)
	if log := d.log.String(); !strings.Contains(log, "engine "+plugins[0][0]) && !strings.Contains(log, "engine="+plugins[0][0]) {
		t.Fatalf("the %s engine is not the one in force:\n%s", plugins[0][0], tail(log, 3000))
	}
	t.Logf("SUBNET UP after %s", time.Since(start).Round(time.Millisecond))
	return d, dumps
}
