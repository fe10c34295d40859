package dump_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/dump"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// tiny is one 2-port switch with one CA on port 1 (LIDs 1 and 2).
func tiny(t *testing.T) *plan.Realized {
	t.Helper()
	f := analysistest.NewFab(4)
	sw := f.Switch(2)
	f.CAOn(sw, 1)
	topo, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysistest.Realize(topo, analysistest.MinHop(topo), 0, plan.DLIDBase)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFormats(t *testing.T) {
	const (
		swEnd = "{ SW Ports:02 SystemGUID:0002c90000000001 NodeGUID:0002c90000000001 PortGUID:0002c90000000001 VenID:%s DevID:0000 Rev:00000000 {sw1} LID:0001 PN:01 } "
		caEnd = "{ CA-SM Ports:01 SystemGUID:0008f10000000100 NodeGUID:0008f10000000100 PortGUID:0008f10000000101 VenID:%s DevID:0000 Rev:00000000 {hca1} LID:0002 PN:01 } "
	)
	r := tiny(t)
	vls := &plan.VLPlan{Default: [16]uint8{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}}
	cases := []struct {
		name  string
		write func(w *bytes.Buffer) error
		want  string
	}{
		{"subnet list", func(w *bytes.Buffer) error { return dump.WriteSubnetList(w, r.Topo, r.LIDs) },
			strings.Replace(swEnd, "%s", "000000", 1) + strings.Replace(caEnd, "%s", "00000000", 1) + "PHY=4x LOG=ACT SPD=2.5\n" +
				strings.Replace(caEnd, "%s", "000000", 1) + strings.Replace(swEnd, "%s", "00000000", 1) + "PHY=4x LOG=ACT SPD=2.5\n"},
		{"fdbs", func(w *bytes.Buffer) error { return dump.WriteFDBs(w, r) },
			"dump_ucast_routes: Switch 0x0002c90000000001\n" +
				"LID    : Port : Hops : Optimal\n" +
				"0x0001 : 000  : 00   : yes\n" +
				"0x0002 : 001  : 01   : yes\n"},
		{"lfts", func(w *bytes.Buffer) error { return dump.WriteLFTs(w, r) },
			"Unicast lids [0-2] of switch Lid 1 guid 0x0002c90000000001 ('sw1'):\n" +
				"0x0001 000 # Switch portguid 0x0002c90000000001: 'sw1'\n" +
				"0x0002 001 # Channel Adapter portguid 0x0008f10000000101: 'hca1'\n" +
				"2 lids dumped\n"},
		{"sl2vl", func(w *bytes.Buffer) error { return dump.WriteSL2VL(w, r.Topo, r.LIDs, vls) },
			"Switch 0x0002c90000000001, base LID 1, \"sw1\"\n" +
				"#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15\n" +
				"#--------------------------------------------------------\n" +
				"0   1   : 0  1  2  3  0  1  2  3  0  1  2  3  0  1  2  3 \n" +
				"1   1   : 0  1  2  3  0  1  2  3  0  1  2  3  0  1  2  3 \n" +
				"2   1   : 0  1  2  3  0  1  2  3  0  1  2  3  0  1  2  3 \n" +
				"Channel Adapter 0x0008f10000000101, base LID 2, \"hca1\"\n" +
				"#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15\n" +
				"#--------------------------------------------------------\n" +
				"0   0   : 0  1  2  3  0  1  2  3  0  1  2  3  0  1  2  3 \n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := c.write(&b); err != nil {
				t.Fatal(err)
			}
			if b.String() != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), c.want)
			}
		})
	}
}

func TestFDBsMarkUnreachableAndNonOptimal(t *testing.T) {
	topo, err := analysistest.Ring(4, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysistest.Realize(topo, analysistest.MinHop(topo), 0, plan.DLIDBase)
	if err != nil {
		t.Fatal(err)
	}
	// Switch 0 reaches switch 1 (one hop clockwise, port 1) the long way.
	r.LFT[0][2] = 2
	r.LFT[0][3] = plan.NoPort
	var b bytes.Buffer
	if err := dump.WriteFDBs(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0x0002 : 002  : 01   : 3 hop path possible via port 2!\n", "0x0003 : UNREACHABLE\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("fdbs lack %q:\n%s", want, b.String())
		}
	}
}

func TestWriteAllRejectsMalformed(t *testing.T) {
	r := tiny(t)
	bad := *r
	bad.LFT = bad.LFT[:0]
	if err := dump.WriteAll(t.TempDir(), &bad, nil); err == nil {
		t.Error("want an error for tables that do not match the topology")
	}
	if err := dump.WriteAll(filepath.Join(t.TempDir(), "missing"), r, nil); err == nil {
		t.Error("want an error for a missing directory")
	}
}

// ibdmchkResult runs ibdmchk on the dumps in dir and returns its output.
// ibdmchk writes a report under /var/cache/ibutils; as root it runs in a
// private mount namespace with dir bound there, otherwise directly.
func ibdmchk(t *testing.T, dir, extra string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := "ibdmchk -s " + dump.SubnetFile + " -f " + dump.FDBFile + " -m " + dump.MCFDBFile + extra
	run := func(cmd *exec.Cmd) string {
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput() // ibdmchk 1.5.7 segfaults on exit after printing
		return string(out)
	}
	var out string
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("unshare"); err == nil {
			out = run(exec.CommandContext(ctx, "unshare", "-m", "sh", "-c", "mount --bind . /var/cache/ibutils && "+args))
		}
	}
	if !strings.Contains(out, "Analyzing Fabric for Credit Loops") {
		out = run(exec.CommandContext(ctx, "sh", "-c", args))
	}
	if !strings.Contains(out, "Analyzing Fabric for Credit Loops") {
		t.Fatalf("ibdmchk did not get to its credit loop check:\n%s", out)
	}
	return out
}

// lftHops parses ibdmchk's "LFT ROUTE HOP HISTOGRAM" (hops = links, so one
// more than the switches traversed).
func lftHops(t *testing.T, out string) map[int]int64 {
	t.Helper()
	i := strings.Index(out, "LFT ROUTE HOP HISTOGRAM")
	if i < 0 {
		t.Fatalf("no route hop histogram in ibdmchk output")
	}
	sec := out[i:]
	sec = sec[strings.Index(sec, "\n"):] // past the title line, itself made of dashes
	sec = sec[:strings.Index(sec, "-----\n")]
	h := map[int]int64{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(\d+)\s+(\d+)$`).FindAllStringSubmatch(sec, -1) {
		hops, _ := strconv.Atoi(m[1])
		n, _ := strconv.ParseInt(m[2], 10, 64)
		h[hops] = n
	}
	return h
}

func TestIbdmchkAgrees(t *testing.T) {
	if _, err := exec.LookPath("ibdmchk"); err != nil {
		t.Skip("ibdmchk not on PATH (Debian package ibutils)")
	}
	cases := []struct {
		name     string
		build    func() (*topology.Topology, error)
		route    func(*topology.Topology) *plan.Routes
		vls      func(*plan.Realized) *plan.VLPlan
		wantLoop bool
	}{
		{"fat tree up/down", func() (*topology.Topology, error) { return analysistest.FatTree2(4, 3, 3, 1) },
			func(t *topology.Topology) *plan.Routes { return analysistest.UpDown(t, int32(len(t.Switches())-1)) }, nil, false},
		{"3-level fat tree up/down", func() (*topology.Topology, error) { return analysistest.FatTree3(4, 1) },
			func(t *topology.Topology) *plan.Routes { return analysistest.UpDown(t, 0) }, nil, false},
		{"ring of 6 minhop", func() (*topology.Topology, error) { return analysistest.Ring(6, 1, 1) }, analysistest.MinHop, nil, true},
		{"ring of 6 minhop on two VLs (path SLs and SL2VL dump)", func() (*topology.Topology, error) { return analysistest.Ring(6, 1, 2) },
			analysistest.MinHop, analysistest.RingVLs, false},
		// The same tables and SL2VL with every DLID on SL 0: the check must
		// be able to fail on a multi-VL plan.
		{"ring of 6 minhop, broken SLs (all on SL 0)", func() (*topology.Topology, error) { return analysistest.Ring(6, 1, 2) },
			analysistest.MinHop, func(r *plan.Realized) *plan.VLPlan {
				v := analysistest.RingVLs(r)
				clear(v.SLByDLID)
				return v
			}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topo, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			r, err := analysistest.Realize(topo, c.route(topo), 0, plan.DLIDBase)
			if err != nil {
				t.Fatal(err)
			}
			var vls *plan.VLPlan
			extra := ""
			if c.vls != nil {
				vls = c.vls(r)
				extra = " -c " + dump.PathSLFile + " -d " + dump.SL2VLFile
			}
			dir := t.TempDir()
			if err := dump.WriteAll(dir, r, vls); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, dump.PathSLFile)); (err == nil) != (vls != nil) {
				t.Fatalf("path-SL file written = %v, want %v", err == nil, vls != nil)
			}
			out := ibdmchk(t, dir, extra)
			t.Log(out[strings.LastIndex(out, "-I- Using"):])
			if vls != nil && !c.wantLoop && !strings.Contains(out, "2 SLs, 2 VLs used") {
				t.Errorf("ibdmchk did not pick up the SLs and SL2VL tables:\n%s", out)
			}
			ibLoop := strings.Contains(out, "Found credit loop")
			if ibLoop != c.wantLoop {
				t.Errorf("ibdmchk credit loop = %v, want %v:\n%s", ibLoop, c.wantLoop, out)
			}
			if !c.wantLoop && (strings.Contains(out, "-E-") || !strings.Contains(out, "no credit loops found")) {
				t.Errorf("ibdmchk reported errors:\n%s", out)
			}
			rep, err := analysis.Analyse(r, vls, analysis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.DeadlockFree == ibLoop {
				t.Errorf("analysis deadlock-free = %v, ibdmchk credit loop = %v", rep.DeadlockFree, ibLoop)
			}
			// Same CA-to-CA routes: ibdmchk counts links, we count switches.
			ib := lftHops(t, out)
			for h, n := range rep.Hops {
				if n != ib[h+1] {
					t.Errorf("pairs traversing %d switches: analysis %d, ibdmchk %d hops: %d", h, n, h+1, ib[h+1])
				}
			}
			if m := regexp.MustCompile(`Scanned:(\d+) CA to CA paths`).FindStringSubmatch(out); m == nil || m[1] != strconv.FormatInt(rep.CAPairs.Reachable, 10) {
				t.Errorf("ibdmchk scanned %v CA to CA paths, analysis reached %d", m, rep.CAPairs.Reachable)
			}
		})
	}
}
