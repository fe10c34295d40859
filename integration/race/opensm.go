package main

import (
	"bufio"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ibsm/ibsm/integration/benchutil"
)

//go:embed shim/countmad.c
var countmadSource []byte

// BuildCountMAD compiles the umad_send counting shim (countmad.c) into dir
// with cc and returns the path of the shared object.
func BuildCountMAD(cc, dir string) (string, error) {
	src := filepath.Join(dir, "countmad.c")
	if err := os.WriteFile(src, countmadSource, 0o644); err != nil {
		return "", err
	}
	so := filepath.Join(dir, "libcountmad.so")
	cmd := exec.Command(cc, "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o", so, src, "-ldl")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("compiling the MAD counting shim with %s: %v\n%s(install gcc, or pass -cc)", cc, err, out)
	}
	return so, nil
}

// MADKey is one (management class, method, attribute) the shim counted.
// Attr is 0x100 for vendor SMP attributes and 0x101 for non-SMP classes.
type MADKey struct {
	Class, Method uint8
	Attr          uint16
}

// MADCounts is what the shim wrote.
type MADCounts struct {
	ByKey map[MADKey]uint64
	// First and Last are the times of the first and last umad_send.
	First, Last time.Time
}

// SMP method codes counted as Gets and Sets.
const (
	methodGet = 0x01
	methodSet = 0x02
)

func isSMPClass(c uint8) bool { return c == 0x01 || c == 0x81 }

// SMPs sums the SMP requests with the given method.
func (m *MADCounts) SMPs(method uint8) uint64 {
	var n uint64
	for k, v := range m.ByKey {
		if isSMPClass(k.Class) && k.Method == method {
			n += v
		}
	}
	return n
}

// Total is every MAD sent, responses included.
func (m *MADCounts) Total() uint64 {
	var n uint64
	for _, v := range m.ByKey {
		n += v
	}
	return n
}

// AttrSummary lists SMP Get/Set counts per attribute, largest first
// ("Set LinearForwardingTable 38880, ...").
func (m *MADCounts) AttrSummary() string {
	type row struct {
		k MADKey
		n uint64
	}
	var rows []row
	for k, v := range m.ByKey {
		if isSMPClass(k.Class) && (k.Method == methodGet || k.Method == methodSet) {
			rows = append(rows, row{k, v})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].n != rows[j].n {
			return rows[i].n > rows[j].n
		}
		return attrName(rows[i].k.Attr) < attrName(rows[j].k.Attr)
	})
	parts := make([]string, len(rows))
	for i, r := range rows {
		verb := "Get"
		if r.k.Method == methodSet {
			verb = "Set"
		}
		parts[i] = fmt.Sprintf("%s %s %d", verb, attrName(r.k.Attr), r.n)
	}
	return strings.Join(parts, ", ")
}

func attrName(a uint16) string {
	switch a {
	case 0x10:
		return "NodeDescription"
	case 0x11:
		return "NodeInfo"
	case 0x12:
		return "SwitchInfo"
	case 0x14:
		return "GUIDInfo"
	case 0x15:
		return "PortInfo"
	case 0x16:
		return "P_KeyTable"
	case 0x17:
		return "SLtoVLMappingTable"
	case 0x18:
		return "VLArbitrationTable"
	case 0x19:
		return "LinearForwardingTable"
	case 0x1B:
		return "MulticastForwardingTable"
	case 0x20:
		return "SMInfo"
	case 0x100:
		return "vendor"
	}
	return fmt.Sprintf("attr%#04x", a)
}

// ParseMADCounts reads the shim's output file format.
func ParseMADCounts(r io.Reader) (*MADCounts, error) {
	m := &MADCounts{ByKey: map[MADKey]uint64{}}
	sc := bufio.NewScanner(r)
	span := false
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		bad := func(err error) error {
			return fmt.Errorf("countmad output line %d %q: %v", line, sc.Text(), err)
		}
		switch {
		case f[0] == "span" && len(f) == 3:
			a, err1 := strconv.ParseInt(f[1], 10, 64)
			b, err2 := strconv.ParseInt(f[2], 10, 64)
			if err1 != nil || err2 != nil || b < a {
				return nil, bad(fmt.Errorf("want two increasing nanosecond times"))
			}
			m.First, m.Last, span = time.Unix(0, a), time.Unix(0, b), true
		case f[0] == "mad" && len(f) == 5:
			c, err1 := strconv.ParseUint(f[1], 16, 8)
			me, err2 := strconv.ParseUint(f[2], 16, 8)
			at, err3 := strconv.ParseUint(f[3], 16, 16)
			n, err4 := strconv.ParseUint(f[4], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
				return nil, bad(fmt.Errorf("want hex class, method, attribute and a decimal count"))
			}
			m.ByKey[MADKey{uint8(c), uint8(me), uint16(at)}] += n
		default:
			return nil, bad(fmt.Errorf("unknown record"))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !span {
		return nil, fmt.Errorf("countmad output has no span line (did the program exit normally?)")
	}
	return m, nil
}

// OpenSMRun is one `opensm -o` bring-up with its MAD counts.
type OpenSMRun struct {
	Result *benchutil.Result
	Phases benchutil.OpenSMPhases
	MADs   *MADCounts
	Log    string
}

// RunOpenSM brings the fabric behind sim up once with `opensm -o -R engine`
// through libumad2sim, with the counting shim preloaded in front of it. The
// flags are benchutil.RunOpenSM's (log level ERROR|INFO, caches in dir).
func RunOpenSM(ctx context.Context, opensm, umad2sim, shim string, sim *benchutil.IBSim, engine, dir string) (*OpenSMRun, error) {
	logPath := filepath.Join(dir, "osm.log")
	countPath := filepath.Join(dir, "countmad.txt")
	cmd := exec.Command(opensm, "-o", "-D", "0x03", "-f", logPath, "--dump_files_dir", dir, "-s", "0", "-R", engine)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"LD_PRELOAD="+shim+":"+umad2sim,
		"IBSIM_SOCKNAME="+sim.Sockname,
		"OSM_CACHE_DIR="+dir,
		"OSM_TMP_DIR="+dir,
		"COUNTMAD_OUT="+countPath,
	)
	res, err := benchutil.Run(ctx, cmd, benchutil.RunOptions{})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("opensm exited %d; see %s\n%s", res.ExitCode, logPath, benchutil.TailLines(res.Stdout+res.Stderr, 10))
	}
	f, err := os.Open(logPath)
	if err != nil {
		return nil, fmt.Errorf("opensm wrote no log: %w", err)
	}
	defer f.Close()
	ph, err := benchutil.ParseOpenSMLog(f)
	if err != nil {
		return nil, fmt.Errorf("opensm log %s: %w", logPath, err)
	}
	cf, err := os.Open(countPath)
	if err != nil {
		return nil, fmt.Errorf("the MAD counting shim wrote nothing (%w); was it preloaded? LD_PRELOAD=%s:%s", err, shim, umad2sim)
	}
	defer cf.Close()
	mads, err := ParseMADCounts(cf)
	if err != nil {
		return nil, err
	}
	return &OpenSMRun{Result: res, Phases: ph, MADs: mads, Log: logPath}, nil
}
