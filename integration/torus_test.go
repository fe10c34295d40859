package integration

// The torus engine and its dateline VL assigner on a real ibsim: a 5x5x5
// torus with one CA per switch (conf/examples/torus555.net) brought up by
// `ibsm run --dump-dir` over the ibsim transport, checked by ibdmchk's
// credit-loop check on the path-SL and SL2VL dumps; then a switch-to-switch
// cable is pulled in ibsim, ibsm re-routes around it with the first-hop VL,
// ibdmchk checks again, and every CA pair keeps the SL it had.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/dump"
	"github.com/ibsm/ibsm/transport/netfile"
)

const torus555Net = "../conf/examples/torus555.net"

// pathSLs reads the path-SL dump: "0x<src port guid> <dlid> <sl>" per line.
func pathSLs(t *testing.T, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, dump.PathSLFile))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("path-SL line %q: want 0x<guid> <dlid> <sl>", l)
		}
		out[f[0]+" "+f[1]] = f[2]
	}
	return out
}

// waitDump waits until the dump directory holds a path-SL file newer than
// since (the daemon writes it after the SUBNET UP line).
func waitDump(t *testing.T, dir string, since time.Time) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if st, err := os.Stat(filepath.Join(dir, dump.SL2VLFile)); err == nil && st.ModTime().After(since) {
			if st2, err := os.Stat(filepath.Join(dir, dump.PathSLFile)); err == nil && st2.ModTime().After(since) {
				time.Sleep(200 * time.Millisecond) // let the last file be written out
				return
			}
		}
	}
	t.Fatalf("no dumps in %s after %s", dir, since)
}

func TestTorusIBSim(t *testing.T) {
	checkGenerated(t, torus555Net, []string{"topo", "torus", "--dims", "5x5x5", "--cas", "1"})
	nf, err := netfile.ParseFile(torus555Net)
	if err != nil {
		t.Fatal(err)
	}
	r := startRig(t, torus555Net, nthCA(t, nf, len(caNodes(nf))-1).Name)
	d, dumps := upOnIBSim(t, r, nthCA(t, nf, 0).Name, [3][2]string{{"torus", ""}, {"sequential", ""}, {"torus-vl", ""}})

	// ibdmchk: 8 SLs (one bit per dimension) on 2 VLs, no credit loop;
	// the same paths all on VL 0 loop (the check can fail).
	check := func(dir string, wantVLs int) {
		t.Helper()
		out := ibdmchkVL(t, dir, dump.PathSLFile)
		sls, vls, loop := ibdmchkVerdict(t, out)
		if loop || sls != 8 || vls != wantVLs {
			t.Errorf("ibdmchk: %d SLs, %d VLs (want 8 and %d), credit loop %v:\n%s", sls, vls, wantVLs, loop, tail(out, 2000))
		}
		if _, _, loop := ibdmchkVerdict(t, ibdmchkVL(t, withAllSL0(t, dir, true), dump.PathSLFile)); !loop {
			t.Errorf("ibdmchk finds no credit loop with every path on VL 0: the check above proves nothing")
		}
	}
	check(dumps, 2)
	before := pathSLs(t, dumps)

	// Pull the dimension-0 "+" cable of switch (1,2,3) (port 2: after its
	// CA). ibsm re-routes; the path SLs stay, one VL more for first hops.
	pulled := time.Now()
	if err := r.sim.Unlink("torus-1-2-3", 2); err != nil {
		t.Fatal(err)
	}
	d.waitUp(t, 2, 30*time.Second)
	waitDump(t, dumps, pulled)
	t.Logf("re-routed %s after the unlink", time.Since(pulled).Round(time.Millisecond))
	check(dumps, 3)
	after := pathSLs(t, dumps)
	if len(after) != len(before) {
		t.Errorf("%d path SLs after the unlink, %d before", len(after), len(before))
	}
	for k, sl := range after {
		if before[k] != sl {
			t.Fatalf("path %s: SL %s after the unlink, %s before", k, sl, before[k])
		}
	}
}
