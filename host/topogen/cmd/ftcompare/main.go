// Command ftcompare tabulates fat-tree routing quality: for full and
// degraded fat trees it runs `ibsm verify --json` once per routing engine
// and prints all-to-all max channel load, worst shift-permutation load and
// effective bisection bandwidth as a Markdown table.
//
//	go build -o bin/ibsm ./host/cmd/ibsm && make plugins
//	go run ./host/topogen/cmd/ftcompare --ibsm bin/ibsm --plugins bin
//
// Engines whose plugin binary is missing are skipped (listed on stderr).
// Every run gets its own config and state directory under --work.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ibsm/ibsm/host/analysis"
	"github.com/ibsm/ibsm/host/topogen"
)

// trees are the fabrics compared, as `ibsm topo` arguments.
var trees = map[string][]string{
	"ft2-648":  {"ft", "--radix", "36", "--levels", "2"},
	"ft3-3456": {"ft", "--radix", "24", "--levels", "3"},
	"ft3-36":   {"ft", "--radix", "36", "--levels", "3"},
	"ft2-8":    {"ft", "--radix", "8", "--levels", "2"},
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "ftcompare: %v\n", err)
		}
		os.Exit(1)
	}
}

type options struct {
	ibsm, plugins, work  string
	trees, engines, frac string
	seed                 int64
	bisections           int
	shifts               string
}

func run(args []string, out, logw io.Writer) error {
	var o options
	fs := flag.NewFlagSet("ftcompare", flag.ContinueOnError)
	fs.SetOutput(logw)
	fs.StringVar(&o.ibsm, "ibsm", "bin/ibsm", "ibsm binary")
	fs.StringVar(&o.plugins, "plugins", "bin", "directory of ibsm-plugin-<name> binaries")
	fs.StringVar(&o.work, "work", "", "directory for topologies, configs and state (default: a new temporary directory)")
	fs.StringVar(&o.trees, "trees", "ft2-648,ft3-3456", "fabrics: ft2-648, ft3-3456, ft3-36, ft2-8")
	fs.StringVar(&o.engines, "engines", "minhop,updn,ftree,sftree", "routing engines (plugins)")
	fs.StringVar(&o.frac, "remove-links", "0,0.01,0.05", "fractions of switch-to-switch cables removed")
	fs.Int64Var(&o.seed, "seed", 7, "seed of the degradation, the shift sample and the bisections")
	fs.IntVar(&o.bisections, "bisections", analysis.DefaultBisections, "bisections for eBB")
	fs.StringVar(&o.shifts, "shifts", "auto", "shifts: auto, all or a sample size")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ibsm, err := filepath.Abs(o.ibsm)
	if err != nil {
		return err
	}
	if _, err := os.Stat(ibsm); err != nil {
		return fmt.Errorf("ibsm binary: %v; build it with 'go build -o bin/ibsm ./host/cmd/ibsm' or pass --ibsm", err)
	}
	plugins, err := filepath.Abs(o.plugins)
	if err != nil {
		return err
	}
	for _, p := range []string{"sequential", "single"} {
		if _, err := os.Stat(filepath.Join(plugins, "ibsm-plugin-"+p)); err != nil {
			return fmt.Errorf("plugin %s: %v; run 'make plugins' or pass --plugins", p, err)
		}
	}
	work := o.work
	if work == "" {
		if work, err = os.MkdirTemp("", "ftcompare-"); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	var engines []string
	for _, e := range strings.Split(o.engines, ",") {
		if _, err := os.Stat(filepath.Join(plugins, "ibsm-plugin-"+e)); err != nil {
			fmt.Fprintf(logw, "ftcompare: skipping engine %s: no plugin binary in %s\n", e, plugins)
			continue
		}
		engines = append(engines, e)
	}
	fmt.Fprintf(out, "| fabric | removed cables | engine | verify s | a2a max (sw-sw) | shift worst / mean | eBB (min..max) | note |\n|---|---|---|---|---|---|---|---|\n")
	for _, tree := range strings.Split(o.trees, ",") {
		targs, ok := trees[tree]
		if !ok {
			return fmt.Errorf("unknown fabric %q; choose from ft2-648, ft3-3456, ft3-36, ft2-8", tree)
		}
		for _, fs := range strings.Split(o.frac, ",") {
			frac, err := strconv.ParseFloat(fs, 64)
			if err != nil {
				return fmt.Errorf("--remove-links %q: %v", fs, err)
			}
			name := fmt.Sprintf("%s-%s", tree, fs)
			net := filepath.Join(work, name+".net")
			a := append([]string(nil), targs...)
			if frac > 0 {
				a = append(a, "--remove-links", fs, "--seed", strconv.FormatInt(o.seed, 10))
			}
			removed, err := writeTopo(net, a)
			if err != nil {
				return err
			}
			for _, eng := range engines {
				row, err := verify(ibsm, plugins, work, name, net, eng, o)
				note := ""
				if err != nil {
					note = err.Error()
				}
				fmt.Fprintf(out, "| %s | %s | %s | %s |\n", tree, removed, eng, strings.Join(append(row, note), " | "))
			}
		}
	}
	return nil
}

// writeTopo generates a fabric file and says what was removed.
func writeTopo(path string, args []string) (string, error) {
	var b bytes.Buffer
	if err := topogen.Run(args, &b); err != nil {
		return "", err
	}
	removed := "0"
	for _, l := range strings.Split(b.String(), "\n") {
		if rest, ok := strings.CutPrefix(l, "# degraded with seed "); ok {
			if i := strings.Index(rest, " and "); i >= 0 {
				removed = strings.Fields(rest[i+len(" and "):])[0] + " of " + strings.Fields(rest[i+len(" and "):])[2]
			}
		}
	}
	return removed, os.WriteFile(path, b.Bytes(), 0o644)
}

const config = `fabric {
  transport = "sim"
  topology  = %q
}
sm {
  lmc            = 0
  state_dir      = %q
  plugin_timeout = "600s"
}
plugin "routing_engine" %q {
  path = %q
}
plugin "lid_assigner" "sequential" {
  path = %q
}
plugin "vl_assigner" "single" {
  path = %q
}
routing {
  engine       = %q
  lid_assigner = "sequential"
  vl_assigner  = "single"
}
`

// verify runs one `ibsm verify --json` and returns the table cells.
func verify(ibsm, plugins, work, name, net, eng string, o options) ([]string, error) {
	empty := []string{"-", "-", "-", "-"}
	cfg := filepath.Join(work, name+"-"+eng+".hcl")
	state := filepath.Join(work, "state", name+"-"+eng)
	if err := os.RemoveAll(state); err != nil {
		return empty, err
	}
	pl := func(p string) string { return filepath.Join(plugins, "ibsm-plugin-"+p) }
	if err := os.WriteFile(cfg, fmt.Appendf(nil, config, net, state, eng, pl(eng), pl("sequential"), pl("single"), eng), 0o644); err != nil {
		return empty, err
	}
	cmd := exec.Command(ibsm, "verify", "--config", cfg, "--json", "--log-level", "error",
		"--seed", strconv.FormatInt(o.seed, 10), "--bisections", strconv.Itoa(o.bisections), "--shifts", o.shifts)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	secs := time.Since(start).Seconds()
	if err != nil {
		// The engine's own reason, without the RPC wrapping.
		msg := strings.TrimSpace(stderr.String())
		for _, l := range strings.Split(msg, "\n") {
			if r, ok := strings.CutPrefix(strings.TrimSpace(l), eng+": "); ok {
				msg = r
				break
			}
		}
		if i := strings.LastIndex(msg, "desc = "); i >= 0 {
			msg = msg[i+len("desc = "):]
		}
		msg = strings.Join(strings.Fields(msg), " ")
		if len(msg) > 160 {
			msg = msg[:160] + "…"
		}
		return []string{fmt.Sprintf("%.2f", secs), "-", "-", "-"}, fmt.Errorf("rejected: %s", strings.ReplaceAll(msg, "|", "/"))
	}
	var rep analysis.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return empty, fmt.Errorf("reading ibsm verify --json: %v", err)
	}
	if rep.Shift == nil || rep.EBB == nil {
		return empty, errors.New("ibsm verify printed no shift/eBB metrics; rebuild ibsm")
	}
	note := ""
	if !rep.OK() {
		note = "report not OK"
	}
	shift := fmt.Sprintf("%d / %.2f", rep.Shift.Worst, rep.Shift.Mean)
	if !rep.Shift.All {
		shift += fmt.Sprintf(" (%d sampled)", rep.Shift.Shifts)
	}
	return []string{
		fmt.Sprintf("%.2f", secs),
		fmt.Sprintf("%d (%d)", rep.Load.Max, rep.Load.MaxSwitchLink),
		shift,
		fmt.Sprintf("%.4f (%.4f..%.4f)", rep.EBB.EBB, rep.EBB.Min, rep.EBB.Max),
	}, errOrNil(note)
}

func errOrNil(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}
