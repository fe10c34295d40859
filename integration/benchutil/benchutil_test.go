package benchutil

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Verbatim `ibsm run --once` output on the 3-level fat tree.
const ft3Summary = `SUBNET UP in 4.257s: 13284 nodes (1620 switches, 11664 CAs), 34992 links, engine updn
  discovery      617.389ms   121514 Get        0 Set
  routing         1.45255s        3 plugin calls (route 430.441ms, LIDs 71.941ms, VLs 208.979ms, verify 685.905ms)
  distribution   2.180679s     1620 Get   493452 Set (LFT blocks 336960 of 336960, PortInfo 13284, port state 139968, SwitchInfo 1620, SL2VL 0)
  MAD retries 0, timeouts 0; peak RSS 256092 kB
`

func TestParseSummary(t *testing.T) {
	want := Summary{
		SubnetUp: 4257 * time.Millisecond, Nodes: 13284, Switches: 1620, CAs: 11664, Links: 34992, Engine: "updn",
		Discovery: 617389 * time.Microsecond, DiscoveryGets: 121514,
		Routing: 1452550 * time.Microsecond, PluginCalls: 3,
		Route: 430441 * time.Microsecond, LIDs: 71941 * time.Microsecond, VLs: 208979 * time.Microsecond, Verify: 685905 * time.Microsecond,
		Distribution: 2180679 * time.Microsecond, DistributionGets: 1620, DistributionSets: 493452,
		LFTBlocksSent: 336960, LFTBlocksTotal: 336960, PeakRSSKiB: 256092,
	}
	restart := strings.Replace(strings.Replace(ft3Summary, "3 plugin calls", "0 plugin calls", 1), "VLs 208.979ms", "VLs 142µs", 1)
	tests := []struct {
		name    string
		in      string
		check   func(*Summary) bool
		wantErr string
	}{
		{"full", ft3Summary, func(s *Summary) bool { return *s == want }, ""},
		{"restart with µs", restart, func(s *Summary) bool { return s.PluginCalls == 0 && s.VLs == 142*time.Microsecond }, ""},
		{"with log lines around", "2026-11-21T01:54:50Z [INFO] x\n" + ft3Summary + "  warning: y\n", func(s *Summary) bool { return *s == want }, ""},
		{"with partitions", strings.Replace(ft3Summary, "  MAD retries", "  partitions      812.5ms    47520 Get    11664 Set (P_Key blocks read 47520, sent 0, enforcement 11664)\n  MAD retries", 1),
			func(s *Summary) bool {
				return s.Partitions == 812500*time.Microsecond && s.PartitionGets == 47520 && s.PartitionSets == 11664 && s.PeakRSSKiB == want.PeakRSSKiB
			}, ""},
		{"rejected run", "ibsm run: every routing engine failed; the fabric keeps its last good plan:\n", nil, "no SUBNET UP line"},
		{"truncated", ft3Summary[:strings.Index(ft3Summary, "  distribution")], nil, "no distribution line"},
		{"bad duration", strings.Replace(ft3Summary, "617.389ms", "617.389xs", 1), nil, "unknown unit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSummary(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(s) {
				t.Fatalf("parsed %+v", *s)
			}
		})
	}
}

// Lines as OpenSM 3.3.23 wrote them under ibsim (3-level fat tree, updn).
const osmLog = `Nov 21 01:55:10 972479 [C1E49740] 0x03 -> OpenSM 3.3.23
Nov 21 01:55:10 976869 [C1E49740] 0x80 -> Entering DISCOVERING state
Nov 21 01:55:10 977147 [C1E49740] 0x02 -> osm_opensm_bind: Setting IS_SM on port 0x0002c90100000001
Nov 21 01:55:15 294840 [BEE426C0] 0x80 -> Entering MASTER state
Nov 21 01:55:51 912740 [BEE426C0] 0x02 -> osm_ucast_mgr_process: updn tables configured on all switches
Nov 21 01:56:01 488856 [BEE426C0] 0x02 -> SUBNET UP
Nov 21 01:56:01 523611 [C1E49740] 0x80 -> Exiting SM
`

func TestParseOpenSMLog(t *testing.T) {
	us := func(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
	tests := []struct {
		name    string
		in      string
		want    OpenSMPhases
		wantErr string
	}{
		{"ft3 updn", osmLog, OpenSMPhases{
			Discovery: us(4317971), Routing: us(36617900), Distribution: us(9576116), SubnetUp: us(50511987), Engine: "updn",
		}, ""},
		{"fallback engine named", strings.Replace(osmLog, "updn tables", "minhop tables", 1), OpenSMPhases{
			Discovery: us(4317971), Routing: us(36617900), Distribution: us(9576116), SubnetUp: us(50511987), Engine: "minhop",
		}, ""},
		{"VERBOSE build line", strings.Replace(osmLog, "Nov 21 01:55:51 912740", "Nov 21 01:55:50 912740 [BEE426C0] 0x04 -> osm_ucast_mgr_process: building routing with 'updn' routing algorithm...\nNov 21 01:55:51 912740", 1), OpenSMPhases{
			Discovery: us(4317971), Routing: us(36617900), Build: us(1000000), Distribution: us(9576116), SubnetUp: us(50511987), Engine: "updn",
		}, ""},
		{"across New Year", `Dec 31 23:59:59 900000 [1] 0x80 -> Entering DISCOVERING state
Dec 31 23:59:59 950000 [1] 0x80 -> Entering MASTER state
Jan  1 00:00:00 050000 [1] 0x02 -> osm_ucast_mgr_process: updn tables configured on all switches
Jan  1 00:00:00 150000 [1] 0x02 -> SUBNET UP
`, OpenSMPhases{Discovery: us(50000), Routing: us(100000), Distribution: us(100000), SubnetUp: us(250000), Engine: "updn"}, ""},
		{"no SUBNET UP", strings.Replace(osmLog, "SUBNET UP", "SUBNET DOWN", 1), OpenSMPhases{}, `no "SUBNET UP" line`},
		{"log level without INFO", "Nov 21 01:55:10 976869 [C1E49740] 0x80 -> Entering DISCOVERING state\n", OpenSMPhases{}, "Entering MASTER state"},
		{"empty", "", OpenSMPhases{}, "Entering DISCOVERING state"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseOpenSMLog(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestIBSimFlags(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, head string
		want       string
	}{
		{"ft3 header", "# ibsm topo fat-tree --radix 36 --levels 3\n# 1620 switches, 11664 CAs, 34992 links\n# ibsim 0.10: ibsim -s -N 13284 -S 1620 -P 83268 -L 49152 <file>\n", "-N 13284 -S 1620 -P 83268 -L 49152"},
		{"hand-written file", "Switch 36 \"S-1\"\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "f.net")
			if err := os.WriteFile(p, []byte(tc.head+"\nSwitch 36 \"S-1\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := IBSimFlags(p)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseVmHWM(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"Name:\tx\nVmPeak:\t  9 kB\nVmHWM:\t   256092 kB\nVmRSS:\t 1 kB\n", 256092, true},
		{"Name:\tkthread\n", 0, false},
		{"VmHWM:\t 12 MB\n", 0, false},
	}
	for _, tc := range tests {
		got, ok := ParseVmHWM(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseVmHWM(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}}
	for _, tc := range tests {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestRunMeasuresDescendants checks the RSS plumbing on a real process
// tree: a shell whose child touches a known amount of memory.
func TestRunMeasuresDescendants(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to allocate memory in a child")
	}
	// The child holds 64 MiB for 300 ms.
	cmd := exec.Command("sh", "-c", py+` -c 'import time; b=bytearray(64<<20); time.sleep(0.3)'; exit 3`)
	res, err := Run(context.Background(), cmd, RunOptions{SampleEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 {
		t.Fatalf("exit code %d, want 3", res.ExitCode)
	}
	got := res.DescendantHWMKiB[filepath.Base(py)]
	if got < 64<<10 {
		t.Fatalf("child %s HWM %d KiB, want ≥ 65536 (samples: %v)", filepath.Base(py), got, res.DescendantHWMKiB)
	}
	// Linux folds reaped children into wait4's ru_maxrss: the shell waited
	// for python, so the tree's peak is at least the child's.
	if res.MaxRSSKiB < 64<<10 {
		t.Fatalf("maxrss %d KiB, want ≥ 65536 (the reaped child's peak)", res.MaxRSSKiB)
	}
}

func TestRunKillsGroupOnCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Run(ctx, exec.Command("sh", "-c", "sleep 30 & sleep 30"), RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("Run took %s after cancel", time.Since(start))
	}
}

func TestRouteCPUWatchMarks(t *testing.T) {
	const (
		master = "x 0x80 -> Entering MASTER state\n"
		build  = "x 0x04 -> osm_ucast_mgr_process: building routing with 'nue' routing algorithm...\n"
		tables = "x 0x02 -> osm_ucast_mgr_process: nue tables configured on all switches\n"
	)
	tests := []struct {
		name  string
		polls []string // one poll's lines each; poll i sees CPU i seconds
		want  time.Duration
		seen  int
	}{
		{"INFO log, one mark per poll", []string{master, "y\n", tables}, 2 * time.Second, 2},
		{"VERBOSE log: the build line restarts", []string{master, build, "y\n", tables}, 2 * time.Second, 2},
		{"both marks in one poll", []string{"y\n", master + tables}, 0, 2},
		{"no end mark", []string{master, build}, 0, 1},
		{"end before start is ignored", []string{tables, master}, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &routeCPUWatch{}
			for i, p := range tc.polls {
				w.scan([]byte(p), time.Duration(i)*time.Second)
			}
			if w.seen != tc.seen || (w.seen == 2 && w.end-w.start != tc.want) {
				t.Fatalf("seen %d, route CPU %v; want %d, %v", w.seen, w.end-w.start, tc.seen, tc.want)
			}
		})
	}
}
