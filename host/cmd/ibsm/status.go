package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/control"
	"github.com/ibsm/ibsm/host/metrics"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/transport/smp"
	"github.com/zclconf/go-cty/cty"
)

// daemonState is what the running daemon's control commands and metrics
// read: the App, the Recorder and the configuration in force.
type daemonState struct {
	a       *app.App
	rec     *metrics.Recorder
	log     hclog.Logger
	started time.Time
	cfgPath string

	mu  sync.Mutex
	cfg *conf.Config // replaced by a successful reload

	planMu   sync.Mutex
	planKey  pipeline.Key
	planStat *metrics.PlanMetrics
}

func newDaemonState(a *app.App, rec *metrics.Recorder, cfgPath string, log hclog.Logger) *daemonState {
	return &daemonState{a: a, rec: rec, log: log, started: time.Now(), cfgPath: cfgPath, cfg: a.Config}
}

func (d *daemonState) config() *conf.Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg
}

func (d *daemonState) setConfig(c *conf.Config) {
	d.mu.Lock()
	d.cfg = c
	d.mu.Unlock()
}

var smStateNames = map[uint8]string{
	smp.SMStateNotActive:   "not-active",
	smp.SMStateDiscovering: "discovering",
	smp.SMStateStandby:     "standby",
	smp.SMStateMaster:      "master",
}

var portStateNames = map[uint8]string{
	smp.PortStateDown: "down", smp.PortStateInit: "init", smp.PortStateArmed: "armed", smp.PortStateActive: "active",
}

// status takes one snapshot of the daemon.
func (d *daemonState) status() *metrics.Status {
	cfg := d.config()
	a := d.a
	st := &metrics.Status{Time: time.Now(), Version: strings.TrimSpace(versionString()), Config: d.cfgPath, Started: d.started}
	es := a.SM.ElectionStats()
	si := a.SM.SMInfo(false)
	st.SM = metrics.SMStatus{
		State: smStateNames[es.State], Role: smStateNames[es.State], Priority: si.Priority,
		Contested: es.Contested, Takeovers: es.Takeovers, StepDowns: es.StepDowns, Handovers: es.Handovers,
		SweepEvery: cfg.SM.SweepInterval.String(), MADWindow: cfg.SM.MADWindow, MADTimeout: cfg.SM.MADTimeout.String(),
		MADRetries: cfg.SM.MADRetries, LogLevel: levelName(d.log.GetLevel()),
	}
	if w, to, r, ok := a.MADLimits(); ok { // what the transport uses, not what was asked
		st.SM.MADWindow, st.SM.MADTimeout, st.SM.MADRetries = w, to.String(), r
	}
	if w, ok := a.MADWindowNow(); ok {
		st.SM.MADWindowNow = w
	}
	if si.GUID != 0 {
		st.SM.PortGUID = fmt.Sprintf("0x%016x", si.GUID)
	}
	if es.Master != 0 {
		st.SM.Master = fmt.Sprintf("0x%016x", es.Master)
	}
	st.Fabric.PortsByState = map[string]int{}
	if fab := a.SM.Fabric(); fab != nil {
		for _, n := range fab.Nodes {
			st.Fabric.Nodes++
			if n.Info.NodeType == smp.NodeTypeSwitch {
				st.Fabric.Switches++
			} else {
				st.Fabric.CAs++
			}
			for p := 1; p < len(n.Ports); p++ {
				pt := &n.Ports[p]
				if !pt.Valid || pt.PeerGUID == 0 {
					continue
				}
				st.Fabric.PortsByState[portStateNames[pt.Info.PortState]]++
				if pt.PeerGUID > n.Info.NodeGUID || (pt.PeerGUID == n.Info.NodeGUID && pt.PeerPort > uint8(p)) {
					st.Fabric.Links++
				}
			}
		}
		if sn := fab.Nodes[fab.SMGUID]; sn != nil && int(fab.SMPort) < len(sn.Ports) {
			st.SM.LID = sn.Ports[fab.SMPort].Info.LID
		}
	}
	d.rec.Fill(st)
	ts := a.T.Stats()
	st.Errors.MADRetries, st.Errors.MADTimeouts, st.Errors.MADUnmatched = ts.Retries, ts.Timeouts, ts.Unmatched
	st.Errors.SMInfoRefused = es.Refused
	au := a.SM.AuditStats()
	st.Errors.AuditDifferences, st.Errors.AuditRepairFailures = au.Differences, au.RepairFailures
	st.Plugins = d.plugins(cfg)
	for _, p := range st.Plugins {
		st.Errors.PluginFailures += p.Failures
	}
	st.Plan = d.plan()
	return st
}

// handleStatus serves the "status" control command.
func (d *daemonState) handleStatus(_ context.Context, raw json.RawMessage) (any, error) {
	if err := control.Decode(raw, &struct{}{}); err != nil {
		return nil, err
	}
	return d.status(), nil
}

func levelName(l hclog.Level) string { return strings.ToLower(l.String()) }

func (d *daemonState) plugins(cfg *conf.Config) []metrics.PluginState {
	var out []metrics.PluginState
	for _, p := range cfg.Plugins {
		pl, ok := d.a.Plugin(p.Kind, p.Name)
		if !ok {
			continue
		}
		info := pl.Info()
		ps := metrics.PluginState{Name: p.Name, Kind: string(p.Kind), Version: info.Version, SDKVersion: info.SDKVersion,
			PID: pl.PID(), Calls: pl.Calls(), Restarts: pl.Restarts(), Failures: d.rec.PluginFailures(p.Name)}
		switch {
		case ps.PID == 0:
			ps.Health = "idle"
		case syscall.Kill(ps.PID, 0) == nil:
			ps.Health = "running"
		default:
			ps.Health = "dead"
		}
		out = append(out, ps)
	}
	return out
}

// plan describes the plan in force; its analysis is computed once per
// plan (the figures of `ibsm verify` without the shift and bisection
// sampling).
func (d *daemonState) plan() *metrics.PlanStatus {
	ap := d.a.SM.Applied()
	if ap == nil || ap.Result == nil {
		return nil
	}
	res := ap.Result
	ps := &metrics.PlanStatus{Key: res.Key.String(), AppliedAt: ap.At, Engine: res.Engine, Warnings: res.Warnings}
	if r := d.a.SM.Pipeline(); r != nil {
		for i, e := range r.Engines {
			role := "engine"
			if i > 0 {
				role = "fallback"
			}
			ps.Stages = append(ps.Stages, stage(role, e.Identity))
		}
		ps.Stages = append(ps.Stages, stage("lid_assigner", r.LID.Identity), stage("vl_assigner", r.VL.Identity))
	}
	ps.Metrics = d.planMetrics(res)
	return ps
}

func stage(role string, id pipeline.Identity) metrics.StageIdent {
	return metrics.StageIdent{Role: role, Name: id.Name, Version: id.Version, SHA256: id.SHA256}
}

func (d *daemonState) planMetrics(res *pipeline.Result) metrics.PlanMetrics {
	d.planMu.Lock()
	defer d.planMu.Unlock()
	if d.planStat != nil && d.planKey == res.Key {
		return *d.planStat
	}
	m := planMetrics(res)
	d.planKey, d.planStat = res.Key, &m
	return m
}

func planMetrics(res *pipeline.Result) metrics.PlanMetrics {
	rep, err := analysis.Analyse(res.Realized, res.VLs, analysis.Options{})
	if err != nil {
		return metrics.PlanMetrics{Error: err.Error()}
	}
	return metrics.PlanMetrics{
		LIDsUsed: rep.LIDsUsed, TopLID: rep.TopLID,
		CAPairs: rep.CAPairs.Total, UnreachableCAPairs: rep.CAPairs.Total - rep.CAPairs.Reachable,
		SwitchPairs: rep.SwitchPairs.Total, UnreachableSwitchPair: rep.SwitchPairs.Total - rep.SwitchPairs.Reachable,
		MaxChannelLoad: rep.Load.Max, MaxChannelLoadNorm: rep.Load.MaxNormalized,
		MaxHops: rep.MaxHops, AvgHops: rep.AvgHops, VLsUsed: rep.VLsUsed, SLsUsed: rep.SLsUsed, DeadlockFree: rep.DeadlockFree,
	}
}

// socketFlags are how a client command finds the daemon.
type socketFlags struct {
	config, socket string
	timeout        time.Duration
}

func (s *socketFlags) flags(fs *flag.FlagSet, timeout time.Duration) {
	fs.StringVar(&s.config, "config", "", "the daemon's HCL configuration: its sm.state_dir holds the control socket")
	fs.StringVar(&s.socket, "socket", "", "the control socket itself (default: state_dir/"+control.SocketName+", state_dir "+conf.DefaultStateDir+" without --config)")
	fs.DurationVar(&s.timeout, "timeout", timeout, "how long to wait for the daemon's answer")
}

func (s *socketFlags) path() (string, error) {
	switch {
	case s.socket != "":
		return s.socket, nil
	case s.config != "":
		if cfg, diags := conf.Load(s.config); !diags.HasErrors() {
			return control.SocketPath(cfg.SM.StateDir), nil
		}
		// A file being edited may be invalid elsewhere (that is what
		// `ibsm reload` then reports): only sm.state_dir matters here.
		dir, err := stateDirOnly(s.config)
		if err != nil {
			return "", err
		}
		return control.SocketPath(dir), nil
	}
	return control.SocketPath(conf.DefaultStateDir), nil
}

func (s *socketFlags) call(cmd string, args, out any) error {
	path, err := s.path()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	return control.Call(ctx, path, cmd, args, out)
}

func cmdStatus(args []string, w io.Writer) error {
	var s socketFlags
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	s.flags(fs, 30*time.Second)
	asJSON := fs.Bool("json", false, "print the status as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var raw json.RawMessage
	if err := s.call("status", nil, &raw); err != nil {
		return err
	}
	if *asJSON {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	var st metrics.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("status from the daemon: %w (is the daemon a different ibsm version?)", err)
	}
	return printStatus(w, &st)
}

func printStatus(out io.Writer, st *metrics.Status) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	ago := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return st.Time.Sub(t).Round(time.Second).String() + " ago"
	}
	fmt.Fprintf(w, "%s\n", st.Version)
	fmt.Fprintf(w, "config\t%s (up %s)\n", st.Config, st.Time.Sub(st.Started).Round(time.Second))
	sm := st.SM
	fmt.Fprintf(w, "SM\t%s, priority %d, port %s LID %d", sm.State, sm.Priority, sm.PortGUID, sm.LID)
	if sm.Master != "" {
		fmt.Fprintf(w, ", following master %s", sm.Master)
	}
	if sm.Contested {
		fmt.Fprint(w, ", CONTESTED (another master is on the subnet)")
	}
	fmt.Fprintf(w, "\n\ttakeovers %d, step-downs %d, handovers %d\n", sm.Takeovers, sm.StepDowns, sm.Handovers)
	now := ""
	if sm.MADWindowNow > 0 && sm.MADWindowNow < sm.MADWindow {
		now = fmt.Sprintf(" (%d now, after timeouts)", sm.MADWindowNow)
	}
	fmt.Fprintf(w, "settings\tsweep every %s, MAD window %d%s, timeout %s, retries %d, log level %s\n", sm.SweepEvery, sm.MADWindow, now, sm.MADTimeout, sm.MADRetries, sm.LogLevel)
	f := st.Fabric
	fmt.Fprintf(w, "fabric\t%d nodes (%d switches, %d CAs), %d links; ports %s\n", f.Nodes, f.Switches, f.CAs, f.Links, countsText(f.PortsByState))
	sw := st.Sweeps
	for _, s := range []*metrics.Sweep{sw.Heavy, sw.Incremental} {
		if s == nil {
			continue
		}
		fmt.Fprintf(w, "last %s sweep\t%s", s.Kind, ago(s.At))
		if s.Error != "" {
			fmt.Fprintf(w, ", FAILED: %s", s.Error)
		}
		if r := s.Report; r != nil {
			fmt.Fprintf(w, "; took %s, rerouted %v", r.Total.Round(time.Microsecond), r.Rerouted)
			if r.Traps > 0 {
				fmt.Fprintf(w, ", answering %d traps", r.Traps)
			}
			fmt.Fprintf(w, "\n\tdiscovery %s (%d Get, %d Set), routing %s (%d plugin calls), distribution %s (%d Get, %d Set; LFT blocks %d of %d)",
				r.Discovery.Time.Round(time.Microsecond), r.Discovery.Gets, r.Discovery.Sets, r.Routing.Time.Round(time.Microsecond), r.PluginCalls,
				r.Distribution.Time.Round(time.Microsecond), r.Distribution.Gets, r.Distribution.Sets, r.Program.LFTBlocksSent, r.Program.LFTBlocksTotal)
		}
		fmt.Fprintln(w)
	}
	if l := sw.Light; l != nil {
		fmt.Fprintf(w, "last light sweep\t%s; took %s, %d SMPs", ago(l.At), l.Took.Round(time.Microsecond), l.SMPs)
		if l.Error != "" {
			fmt.Fprintf(w, ", FAILED: %s", l.Error)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "sweeps\theavy %d (%d failed), incremental %d (%d failed), light %d (%d failed), re-routes %d\n",
		sw.HeavyCount, sw.HeavyFailures, sw.IncrementalCount, sw.IncrementalFailures, sw.LightCount, sw.LightFailures, sw.Reroutes)
	if p := st.Plan; p != nil {
		fmt.Fprintf(w, "plan\t%s by %s, in force since %s\n", p.Key, p.Engine, ago(p.AppliedAt))
		for _, s := range p.Stages {
			fmt.Fprintf(w, "\t%s %s %s (sha256 %.12s)\n", s.Role, s.Name, s.Version, s.SHA256)
		}
		m := p.Metrics
		if m.Error != "" {
			fmt.Fprintf(w, "\tanalysis failed: %s\n", m.Error)
		} else {
			fmt.Fprintf(w, "\t%d LIDs (top %d); unreachable CA pairs %d of %d, switch pairs %d of %d\n", m.LIDsUsed, m.TopLID, m.UnreachableCAPairs, m.CAPairs, m.UnreachableSwitchPair, m.SwitchPairs)
			fmt.Fprintf(w, "\tmax channel load %d (%.3f normalised), hops max %d avg %.2f, VLs %v, SLs %v, deadlock-free %v\n", m.MaxChannelLoad, m.MaxChannelLoadNorm, m.MaxHops, m.AvgHops, m.VLsUsed, m.SLsUsed, m.DeadlockFree)
		}
		for _, wn := range p.Warnings {
			fmt.Fprintf(w, "\twarning: %s\n", wn)
		}
	} else {
		fmt.Fprintf(w, "plan\tnone in force yet\n")
	}
	for _, p := range st.Plugins {
		fmt.Fprintf(w, "plugin %s\t%s %s, %s (pid %d), %d calls, %d failures, %d restarts\n", p.Name, p.Kind, p.Version, p.Health, p.PID, p.Calls, p.Failures, p.Restarts)
	}
	byNum := map[string]int{}
	for n, c := range st.Traps.ByNumber {
		byNum[fmt.Sprint(n)] = int(c)
	}
	fmt.Fprintf(w, "traps\t%s\n", countsText(byNum))
	for _, t := range st.Traps.Recent[max(0, len(st.Traps.Recent)-5):] {
		fmt.Fprintf(w, "\ttrap %d from LID %d, %s\n", t.Number, t.FromLID, ago(t.At))
	}
	e := st.Errors
	fmt.Fprintf(w, "errors\tMAD retries %d, timeouts %d, unmatched %d; sweep failures heavy %d incremental %d light %d; SMInfo Sets refused %d; audit differences %d (repair failures %d); plugin failures %d\n",
		e.MADRetries, e.MADTimeouts, e.MADUnmatched, e.HeavyFailures, e.IncrementalFailures, e.LightFailures, e.SMInfoRefused, e.AuditDifferences, e.AuditRepairFailures, e.PluginFailures)
	return w.Flush()
}

// countsText prints a count map as "a 3, b 1" (sorted), "none" if empty.
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// stateDirOnly reads sm.state_dir from the HCL file at path without
// validating the rest.
func stateDirOnly(path string) (string, error) {
	f, diags := hclparse.NewParser().ParseHCLFile(path)
	if diags.HasErrors() {
		return "", fmt.Errorf("reading %s for its state_dir:\n%s", path, conf.FormatDiagnostics(diags))
	}
	dir := conf.DefaultStateDir
	root, _, _ := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "sm"}}})
	for _, b := range root.Blocks {
		c, _, _ := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "state_dir"}}})
		if a, ok := c.Attributes["state_dir"]; ok {
			v, d := a.Expr.Value(nil)
			if d.HasErrors() || v.Type() != cty.String || v.IsNull() {
				return "", fmt.Errorf("%s: sm.state_dir is not a string; give --socket PATH instead", a.Range)
			}
			dir = v.AsString()
		}
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(path), dir)
	}
	return dir, nil
}
