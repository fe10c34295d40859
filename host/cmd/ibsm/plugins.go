package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/hashicorp/hcl/v2"
	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/pluginhost"
)

const pluginsUsage = `usage: ibsm plugins <command> --config FILE [flags]

Commands:
  lock    --config FILE           run every declared plugin once and record its kind, name,
                                  version, SDK version, protocol and sha256 in ` + conf.LockFileName + `
                                  beside FILE; from then on run, verify, dump and SIGHUP
                                  refuse any binary that does not match
  verify  --config FILE           check every plugin binary against the lock file (a binary
                                  that does not match is not run) and the plugins' capabilities
                                  against each other; exit 1 on any problem
  list    --config FILE [--json]  every declared plugin: kind, version, SDK version, protocol,
                                  capabilities, sha256 and lock status
`

func cmdPlugins(args []string, w io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, pluginsUsage)
		return errors.New("missing command (lock, verify or list)")
	}
	switch args[0] {
	case "lock":
		return pluginsLock(args[1:], w)
	case "verify":
		return pluginsVerify(args[1:], w)
	case "list":
		return pluginsList(args[1:], w)
	case "-h", "--help", "help":
		fmt.Fprint(w, pluginsUsage)
		return nil
	}
	fmt.Fprint(os.Stderr, pluginsUsage)
	return fmt.Errorf("unknown plugins command %q (want lock, verify or list)", args[0])
}

// pluginsFlags parses the flags every plugins command takes; plugin logs
// are quiet (warn) unless --log-level says otherwise.
func pluginsFlags(name string, args []string, extra func(*flag.FlagSet)) (*common, error) {
	var c common
	fs := flag.NewFlagSet("plugins "+name, flag.ContinueOnError)
	c.flags(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	levelSet := false
	fs.Visit(func(f *flag.Flag) { levelSet = levelSet || f.Name == "log-level" })
	if !levelSet {
		c.logLevel = "warn"
	}
	if c.config == "" {
		return nil, errors.New("--config FILE is required (see conf/examples/)")
	}
	return &c, nil
}

// loadForPlugins loads the configuration; the fabric is not touched.
func loadForPlugins(c *common) (*conf.Config, error) {
	cfg, diags := conf.Load(c.config)
	if diags.HasErrors() {
		return nil, fmt.Errorf("invalid configuration:\n%s", conf.FormatDiagnostics(diags))
	}
	return cfg, nil
}

// probe is what ibsm learned about one declared plugin.
type probe struct {
	p    *conf.Plugin
	role string // routing.engine, routing.fallback, ..., or "unused"
	sum  string // sha256 of the binary, "" if unreadable
	// entry is its lock entry (nil: no lock file or not locked).
	entry *conf.LockEntry
	// status is the lock status: locked, mismatch, not locked, no lock file.
	status string
	why    string // what does not match
	pl     *pluginhost.Plugin
	err    error // hashing or launching failed
}

const (
	statusLocked     = "locked"
	statusMismatch   = "mismatch"
	statusNotLocked  = "not locked"
	statusNoLockFile = "no lock file"
)

func roles(cfg *conf.Config) map[*conf.Plugin]string {
	r := map[*conf.Plugin]string{}
	for i, p := range cfg.Engines() {
		if i == 0 {
			r[p] = "routing.engine"
		} else {
			r[p] = "routing.fallback"
		}
	}
	r[cfg.LIDAssigner()] = "routing.lid_assigner"
	r[cfg.VLAssigner()] = "routing.vl_assigner"
	return r
}

// probeAll hashes every declared plugin binary, compares it with the lock
// (when lock is not nil) and runs the ones allowed to run: all of them
// when trustAll (ibsm plugins lock), else every binary that matches its
// lock entry, or every binary when there is no lock file (ibsm run would
// run them too). Launched plugins are pinned to the hash just taken. The
// caller closes mgr.
func probeAll(ctx context.Context, cfg *conf.Config, lock *conf.Lock, trustAll bool, mgr *pluginhost.Manager) []*probe {
	rs := roles(cfg)
	out := make([]*probe, 0, len(cfg.Plugins))
	for _, p := range cfg.Plugins {
		pr := &probe{p: p, role: rs[p], status: statusNoLockFile}
		if pr.role == "" {
			pr.role = "unused"
		}
		out = append(out, pr)
		pr.sum, pr.err = conf.FileSHA256(p.Path)
		if lock != nil {
			pr.entry = lock.Find(p)
			switch {
			case pr.entry == nil:
				pr.status = statusNotLocked
			case pr.err != nil:
				pr.status = statusMismatch
				pr.why = "binary unreadable"
			case pr.sum != pr.entry.SHA256:
				pr.status, pr.why = statusMismatch, fmt.Sprintf("sha256 %s, the lock entry at %s records %s", pr.sum, pr.entry.DeclRange, pr.entry.SHA256)
			default:
				pr.status = statusLocked
			}
		}
		if pr.err != nil {
			continue
		}
		if p.SHA256 != "" && p.SHA256 != pr.sum {
			pr.err = fmt.Errorf("%s: %s has sha256 %s, the configuration pins %s; not run", p.SHA256Range, p.Path, pr.sum, p.SHA256)
			continue
		}
		if pr.status == statusMismatch && !trustAll {
			continue // never run a binary the lock refuses
		}
		pl, err := mgr.Launch(ctx, pluginhost.Config{Name: p.Name, Kind: p.Kind, Path: p.Path, SHA256: pr.sum})
		if err != nil {
			pr.err = fmt.Errorf("%s: %w", p.DeclRange, err)
			continue
		}
		pr.pl = pl
		if pr.entry != nil && pr.status == statusLocked {
			if err := pr.entry.CheckReported(pl.Info(), pl.Protocol()); err != nil {
				pr.status, pr.why = statusMismatch, err.Error()
			}
		}
	}
	return out
}

// compat checks the routing pipeline's plugins against each other when
// all of them could be run.
func compat(cfg *conf.Config, probes []*probe) error {
	launched := map[*conf.Plugin]*pluginhost.Plugin{}
	for _, pr := range probes {
		if pr.role == "unused" {
			continue
		}
		if pr.pl == nil {
			return fmt.Errorf("not checked: plugin %q %q did not run", pr.p.Kind, pr.p.Name)
		}
		launched[pr.p] = pr.pl
	}
	return app.CheckCompat(cfg, launched)
}

func newProbeManager(c *common) (*pluginhost.Manager, error) {
	return pluginhost.New(pluginhost.Options{Logger: c.logger().Named("plugin")})
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
}

func pluginsLock(args []string, w io.Writer) error {
	c, err := pluginsFlags("lock", args, nil)
	if err != nil {
		return err
	}
	cfg, err := loadForPlugins(c)
	if err != nil {
		return err
	}
	// The previous lock, to show what changes; a broken one is replaced.
	var prev *conf.Lock
	if l, diags := cfg.ReadLockFile(); diags.HasErrors() {
		fmt.Fprintf(w, "replacing the unreadable lock file:\n%s", conf.FormatDiagnostics(diags))
	} else {
		prev = l
	}
	ctx, stop := signalContext()
	defer stop()
	mgr, err := newProbeManager(c)
	if err != nil {
		return err
	}
	defer mgr.Close()
	probes := probeAll(ctx, cfg, nil, true, mgr)
	var entries []conf.LockEntry
	var errs []string
	for _, pr := range probes {
		if pr.err != nil {
			errs = append(errs, pr.err.Error())
			continue
		}
		info := pr.pl.Info()
		entries = append(entries, conf.LockEntry{Kind: pr.p.Kind, Name: pr.p.Name, Version: info.Version,
			SDKVersion: info.SDKVersion, Protocol: pr.pl.Protocol(), SHA256: pr.sum})
	}
	if len(errs) > 0 {
		return fmt.Errorf("lock file not written:\n  %s", strings.Join(errs, "\n  "))
	}
	if err := conf.WriteLock(cfg.LockPath(), entries); err != nil {
		return err
	}
	for _, e := range entries {
		change := "new"
		if prev == nil {
			change = "locked"
		} else if old := conf.FindLock(prev.Entries, e.Kind, e.Name); old != nil {
			switch {
			case old.SHA256 != e.SHA256:
				change = fmt.Sprintf("changed (sha256 was %s, version %s)", old.SHA256, orDash(old.Version))
			case old.Version != e.Version || old.SDKVersion != e.SDKVersion || old.Protocol != e.Protocol:
				change = "updated"
			default:
				change = "unchanged"
			}
		}
		fmt.Fprintf(w, "%-14s %-16s %-8s sdk %-7s protocol %d  %s  %s\n", e.Kind, e.Name, orDash(e.Version), orDash(e.SDKVersion), e.Protocol, e.SHA256, change)
	}
	if prev != nil {
		for _, old := range prev.Entries {
			if conf.FindLock(entries, old.Kind, old.Name) == nil {
				fmt.Fprintf(w, "%-14s %-16s dropped (no longer declared)\n", old.Kind, old.Name)
			}
		}
	}
	fmt.Fprintf(w, "wrote %s (%d plugins)\n", cfg.LockPath(), len(entries))
	if err := compat(cfg, probes); err != nil {
		fmt.Fprintf(w, "warning: %v\n", err)
	}
	return nil
}

func pluginsVerify(args []string, w io.Writer) error {
	c, err := pluginsFlags("verify", args, nil)
	if err != nil {
		return err
	}
	cfg, err := loadForPlugins(c)
	if err != nil {
		return err
	}
	lock, diags := cfg.ReadLockFile()
	if diags.HasErrors() {
		return fmt.Errorf("the lock file cannot be used:\n%s", conf.FormatDiagnostics(diags))
	}
	if lock == nil {
		return fmt.Errorf("no lock file at %s: run \"ibsm plugins lock --config %s\" to create it", cfg.LockPath(), c.config)
	}
	var problems []string
	for _, d := range cfg.CheckLock(lock) {
		line := strings.TrimSpace(conf.FormatDiagnostics([]*hcl.Diagnostic{d}))
		if d.Severity == hcl.DiagError {
			problems = append(problems, line)
		} else {
			fmt.Fprintln(w, line)
		}
	}
	ctx, stop := signalContext()
	defer stop()
	mgr, err := newProbeManager(c)
	if err != nil {
		return err
	}
	defer mgr.Close()
	probes := probeAll(ctx, cfg, lock, false, mgr)
	for _, pr := range probes {
		switch {
		case pr.status == statusLocked && pr.err == nil:
			info := pr.pl.Info()
			fmt.Fprintf(w, "ok  %s %s %s (sdk %s, protocol %d) sha256 %s\n", pr.p.Kind, pr.p.Name, orDash(info.Version), orDash(info.SDKVersion), pr.pl.Protocol(), pr.sum)
		case pr.status == statusMismatch && pr.pl != nil: // ran, but reports other than the lock
			problems = append(problems, pr.why)
		case pr.err != nil && pr.status == statusLocked:
			problems = append(problems, pr.err.Error())
		}
		// mismatched and unlocked binaries are in CheckLock's diagnostics
	}
	if err := compat(cfg, probes); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s) with %s:\n%s", len(problems), cfg.LockPath(), strings.Join(problems, "\n"))
	}
	fmt.Fprintf(w, "all %d plugins match %s\n", len(probes), cfg.LockPath())
	return nil
}

// listEntry is one plugin in `ibsm plugins list --json`.
type listEntry struct {
	Kind         string   `json:"kind"`
	Name         string   `json:"name"`
	Role         string   `json:"role"`
	Path         string   `json:"path"`
	Version      string   `json:"version,omitempty"`
	SDKVersion   string   `json:"sdk_version,omitempty"`
	Protocol     int      `json:"protocol,omitempty"`
	Capabilities []string `json:"capabilities"`
	SHA256       string   `json:"sha256,omitempty"`
	Lock         string   `json:"lock"`
	LockEntry    string   `json:"lock_entry,omitempty"`
	LockSHA256   string   `json:"lock_sha256,omitempty"`
	LockDetail   string   `json:"lock_detail,omitempty"`
	Error        string   `json:"error,omitempty"`
}

type listReport struct {
	Config   string      `json:"config"`
	LockFile string      `json:"lock_file"`
	Locked   bool        `json:"lock_file_present"`
	Plugins  []listEntry `json:"plugins"`
	// Compatible is false when the routing pipeline's plugins cannot work
	// together (Problem says why) or could not all be run.
	Compatible bool   `json:"compatible"`
	Problem    string `json:"problem,omitempty"`
}

func pluginsList(args []string, w io.Writer) error {
	var asJSON bool
	c, err := pluginsFlags("list", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "print the list as JSON")
	})
	if err != nil {
		return err
	}
	cfg, err := loadForPlugins(c)
	if err != nil {
		return err
	}
	lock, diags := cfg.ReadLockFile()
	if diags.HasErrors() {
		return fmt.Errorf("the lock file cannot be used:\n%s", conf.FormatDiagnostics(diags))
	}
	ctx, stop := signalContext()
	defer stop()
	mgr, err := newProbeManager(c)
	if err != nil {
		return err
	}
	defer mgr.Close()
	probes := probeAll(ctx, cfg, lock, false, mgr)
	rep := listReport{Config: c.config, LockFile: cfg.LockPath(), Locked: lock != nil, Compatible: true}
	for _, pr := range probes {
		e := listEntry{Kind: string(pr.p.Kind), Name: pr.p.Name, Role: pr.role, Path: pr.p.Path, SHA256: pr.sum,
			Capabilities: []string{}, Lock: pr.status, LockDetail: pr.why}
		if pr.entry != nil {
			e.LockEntry, e.LockSHA256 = pr.entry.DeclRange.String(), pr.entry.SHA256
		}
		if pr.pl != nil {
			info := pr.pl.Info()
			e.Version, e.SDKVersion, e.Protocol = info.Version, info.SDKVersion, pr.pl.Protocol()
			e.Capabilities = append(e.Capabilities, info.Capabilities...)
		}
		if pr.err != nil {
			e.Error = pr.err.Error()
		} else if pr.pl == nil {
			e.Error = "not run: the binary does not match its lock entry"
		}
		rep.Plugins = append(rep.Plugins, e)
	}
	if err := compat(cfg, probes); err != nil {
		rep.Compatible, rep.Problem = false, err.Error()
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tROLE\tVERSION\tSDK\tPROTOCOL\tCAPABILITIES\tLOCK\tSHA256")
	for _, e := range rep.Plugins {
		proto := "-"
		if e.Protocol != 0 {
			proto = fmt.Sprint(e.Protocol)
		}
		caps := strings.Join(e.Capabilities, ",")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Kind, e.Name, e.Role, orDash(e.Version), orDash(e.SDKVersion), proto, orDash(caps), e.Lock, orDash(e.SHA256))
	}
	tw.Flush()
	if lock == nil {
		fmt.Fprintf(w, "no lock file at %s: run \"ibsm plugins lock --config %s\" to pin these binaries\n", cfg.LockPath(), c.config)
	}
	for _, e := range rep.Plugins {
		switch {
		case e.LockDetail != "":
			fmt.Fprintf(w, "%s %s: %s: %s\n", e.Kind, e.Name, e.Lock, e.LockDetail)
		case e.Error != "":
			fmt.Fprintf(w, "%s %s: %s\n", e.Kind, e.Name, e.Error)
		}
	}
	if !rep.Compatible {
		fmt.Fprintf(w, "pipeline: %s\n", rep.Problem)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
