package benchutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// Plugins lists the plugin binaries of the repository: one per directory
// plugins/<name> holding a main package, built as ibsm-plugin-<name> (the
// Makefile's naming).
func Plugins(repoRoot string) ([]string, error) {
	mains, err := filepath.Glob(filepath.Join(repoRoot, "plugins", "*", "main.go"))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(mains))
	for i, m := range mains {
		names[i] = filepath.Base(filepath.Dir(m))
	}
	return names, nil
}

// Build compiles ibsm and every plugin into dir the way `make build` does
// (static, -trimpath). repoRoot is the module root.
func Build(goTool, repoRoot, dir string) error {
	names, err := Plugins(repoRoot)
	if err != nil {
		return err
	}
	return BuildPlugins(goTool, repoRoot, dir, names)
}

// BuildPlugins compiles ibsm and the named plugins (repeats and "" are
// skipped) into dir as Build does. One go build for all of them lets the
// toolchain compile packages in parallel.
func BuildPlugins(goTool, repoRoot, dir string, plugins []string) error {
	var names []string
	for _, p := range plugins {
		if p != "" && !slices.Contains(names, p) {
			names = append(names, p)
		}
	}
	stage, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	args := []string{"build", "-trimpath", "-o", stage + string(filepath.Separator), "./host/cmd/ibsm"}
	for _, p := range names {
		args = append(args, "./plugins/"+p)
	}
	cmd := exec.Command(goTool, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	if err := os.Rename(filepath.Join(stage, "ibsm"), filepath.Join(dir, "ibsm")); err != nil {
		return err
	}
	for _, p := range names {
		if err := os.Rename(filepath.Join(stage, p), filepath.Join(dir, "ibsm-plugin-"+p)); err != nil {
			return err
		}
	}
	return nil
}

// Summary is what `ibsm run --once` prints at SUBNET UP.
type Summary struct {
	SubnetUp                         time.Duration
	Nodes, Switches, CAs, Links      int
	Engine                           string
	Discovery, Routing, Distribution time.Duration
	DiscoveryGets, DiscoverySets     int64
	PluginCalls                      int
	Route, LIDs, VLs, Verify         time.Duration
	DistributionGets                 int64
	DistributionSets                 int64
	LFTBlocksSent, LFTBlocksTotal    int64
	// Partitions is the P_Key programming after distribution (zero when
	// the summary has no partitions line: partitions not managed).
	Partitions                   time.Duration
	PartitionGets, PartitionSets int64
	Retries, Timeouts            int64
	// PeakRSSKiB is ibsm's own VmHWM as it printed it.
	PeakRSSKiB int64
}

var (
	reUp    = regexp.MustCompile(`(?m)^SUBNET UP in (\S+): (\d+) nodes \((\d+) switches, (\d+) CAs\), (\d+) links, engine (\S+)$`)
	reDisc  = regexp.MustCompile(`(?m)^\s+discovery\s+(\S+)\s+(\d+) Get\s+(\d+) Set$`)
	reRoute = regexp.MustCompile(`(?m)^\s+routing\s+(\S+)\s+(\d+) plugin calls \(route (\S+), LIDs (\S+), VLs (\S+), verify (\S+)\)$`)
	reDist  = regexp.MustCompile(`(?m)^\s+distribution\s+(\S+)\s+(\d+) Get\s+(\d+) Set \(LFT blocks (\d+) of (\d+),`)
	rePart  = regexp.MustCompile(`(?m)^\s+partitions\s+(\S+)\s+(\d+) Get\s+(\d+) Set \(`)
	reMAD   = regexp.MustCompile(`(?m)^\s+MAD retries (\d+), timeouts (\d+); peak RSS (\d+) kB$`)
)

// ParseSummary reads the SUBNET UP block of `ibsm run --once` output.
func ParseSummary(out string) (*Summary, error) {
	var s Summary
	p := &parser{}
	if m := p.match(reUp, out, "SUBNET UP line"); m != nil {
		s.SubnetUp = p.dur(m[1])
		s.Nodes, s.Switches, s.CAs, s.Links = p.int(m[2]), p.int(m[3]), p.int(m[4]), p.int(m[5])
		s.Engine = m[6]
	}
	if m := p.match(reDisc, out, "discovery line"); m != nil {
		s.Discovery, s.DiscoveryGets, s.DiscoverySets = p.dur(m[1]), p.int64(m[2]), p.int64(m[3])
	}
	if m := p.match(reRoute, out, "routing line"); m != nil {
		s.Routing, s.PluginCalls = p.dur(m[1]), p.int(m[2])
		s.Route, s.LIDs, s.VLs, s.Verify = p.dur(m[3]), p.dur(m[4]), p.dur(m[5]), p.dur(m[6])
	}
	if m := p.match(reDist, out, "distribution line"); m != nil {
		s.Distribution, s.DistributionGets, s.DistributionSets = p.dur(m[1]), p.int64(m[2]), p.int64(m[3])
		s.LFTBlocksSent, s.LFTBlocksTotal = p.int64(m[4]), p.int64(m[5])
	}
	if m := rePart.FindStringSubmatch(out); m != nil {
		s.Partitions, s.PartitionGets, s.PartitionSets = p.dur(m[1]), p.int64(m[2]), p.int64(m[3])
	}
	if m := p.match(reMAD, out, "MAD/peak RSS line"); m != nil {
		s.Retries, s.Timeouts, s.PeakRSSKiB = p.int64(m[1]), p.int64(m[2]), p.int64(m[3])
	}
	if p.err != nil {
		return nil, fmt.Errorf("ibsm summary: %w (did the output format of printSummary in host/cmd/ibsm change?)", p.err)
	}
	return &s, nil
}

// parser keeps the first error so ParseSummary reads as a list of fields.
type parser struct{ err error }

func (p *parser) match(re *regexp.Regexp, s, what string) []string {
	m := re.FindStringSubmatch(s)
	if m == nil && p.err == nil {
		p.err = fmt.Errorf("no %s", what)
	}
	return m
}

func (p *parser) dur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil && p.err == nil {
		p.err = err
	}
	return d
}

func (p *parser) int64(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil && p.err == nil {
		p.err = err
	}
	return n
}

func (p *parser) int(s string) int { return int(p.int64(s)) }
