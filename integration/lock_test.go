package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/sdk"
)

// lockSetup is a ring6 (or other) configuration whose plugin binaries are
// private copies in the test's directory, so a test may tamper with them.
type lockSetup struct {
	net      string
	engine   string // a routing engine among plugins
	lid      string // LID assigner name (default sequential)
	lmc      int
	sweep    string
	updnRoot string
	// plugins maps binary name (ibsm-plugin-<name>) to kind; default
	// updn, sequential, single.
	plugins map[string]sdk.Kind
	// ftreeConfig is ftree's config block body, if ftree is a plugin.
	ftreeConfig string
	// bestEffort sets routing.switch_to_switch = "best_effort" (ftree
	// leaves spine-to-spine pairs unrouted).
	bestEffort bool
}

var capsOnce sync.Once
var capsErr error

// capsPlugins builds testdata/capsplugin under its two names.
func capsPlugins(t *testing.T) {
	t.Helper()
	capsOnce.Do(func() {
		out := filepath.Join(binDir, "ibsm-plugin-pathsengine")
		if b, err := exec.Command("go", "build", "-o", out, "./testdata/capsplugin").CombinedOutput(); err != nil {
			capsErr = fmt.Errorf("go build ./testdata/capsplugin: %v\n%s", err, b)
			return
		}
		capsErr = copyFile(out, filepath.Join(binDir, "ibsm-plugin-nolmc"))
	})
	if capsErr != nil {
		t.Fatal(capsErr)
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := to + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, to) // a running binary is replaced, never written over
}

// writeLockConfig copies the binaries into dir/bin and writes dir/ibsm.hcl.
func writeLockConfig(t *testing.T, dir string, s lockSetup) string {
	t.Helper()
	if s.net == "" {
		s.net = ring6Net
	}
	if s.lid == "" {
		s.lid = "sequential"
	}
	if s.sweep == "" {
		s.sweep = "10s"
	}
	if s.plugins == nil {
		s.plugins = map[string]sdk.Kind{"updn": sdk.KindRouting, "sequential": sdk.KindLIDAssign, "single": sdk.KindVLAssign}
	}
	src, err := os.ReadFile(s.net)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fabric.net"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range s.plugins {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "fabric {\n  transport = \"sim\"\n  topology = \"fabric.net\"\n}\n")
	fmt.Fprintf(&b, "sm {\n  state_dir = \"state\"\n  lmc = %d\n  mad_timeout = \"100ms\"\n  sweep_interval = %q\n}\n", s.lmc, s.sweep)
	for _, n := range names {
		bin := filepath.Join(dir, "bin", "ibsm-plugin-"+n)
		if _, err := os.Stat(bin); err != nil {
			if err := copyFile(filepath.Join(binDir, "ibsm-plugin-"+n), bin); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintf(&b, "plugin %q %q {\n  path = \"bin/ibsm-plugin-%s\"\n", s.plugins[n], n, n)
		switch {
		case n == "updn" && s.updnRoot != "":
			fmt.Fprintf(&b, "  config {\n    root_guids = [%q]\n  }\n", s.updnRoot)
		case n == "ftree" && s.ftreeConfig != "":
			fmt.Fprintf(&b, "  config {\n%s\n  }\n", s.ftreeConfig)
		}
		b.WriteString("}\n")
	}
	policy := "required"
	if s.bestEffort {
		policy = "best_effort"
	}
	fmt.Fprintf(&b, "routing {\n  engine = %q\n  lid_assigner = %q\n  vl_assigner = \"single\"\n  switch_to_switch = %q\n}\n", s.engine, s.lid, policy)
	path := filepath.Join(dir, "ibsm.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ibsm runs the ibsm binary and returns its combined output and exit code.
func ibsm(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "ibsm"), args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("ibsm %v: %v\n%s", args, err, out)
	return "", -1
}

func mustContain(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, tail(out, 4000))
		}
	}
}

// markerBinary replaces path with a script that leaves a file behind when
// it is run, and returns that file's path.
func markerBinary(t *testing.T, path string) string {
	t.Helper()
	marker := path + ".ran"
	tmp := path + ".new"
	script := "#!/bin/sh\ntouch '" + marker + "'\nexit 1\n"
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return marker
}

// TestLockTamperedBinaryRefusedBeforeLaunch: ibsm plugins lock records
// what each plugin reports; a binary changed afterwards is refused by run,
// verify and dump before anything is launched, with the lock entry's
// file:line and both hashes; ibsm plugins verify and list never run it.
func TestLockTamperedBinaryRefusedBeforeLaunch(t *testing.T) {
	dir := t.TempDir()
	cfg := writeLockConfig(t, dir, lockSetup{engine: "updn"})
	out, code := ibsm(t, "plugins", "lock", "--config", cfg)
	if code != 0 {
		t.Fatalf("plugins lock exited %d:\n%s", code, out)
	}
	lockPath := filepath.Join(dir, conf.LockFileName)
	lockSrc, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "lock file", string(lockSrc), `plugin "routing_engine" "updn"`, `version     = "0.1.0"`,
		`sdk_version = "`+sdk.SDKVersion+`"`, fmt.Sprintf("protocol    = %d", sdk.ProtocolVersion))
	if out, code := ibsm(t, "plugins", "verify", "--config", cfg); code != 0 || !strings.Contains(out, "all 3 plugins match") {
		t.Fatalf("plugins verify on a fresh lock exited %d:\n%s", code, out)
	}
	if out, code := ibsm(t, "run", "--once", "--config", cfg); code != 0 || !strings.Contains(out, "SUBNET UP") {
		t.Fatalf("run with a matching lock exited %d:\n%s", code, out)
	}

	entries, diags := conf.ReadLock(lockPath)
	if diags.HasErrors() {
		t.Fatal(conf.FormatDiagnostics(diags))
	}
	e := conf.FindLock(entries, sdk.KindRouting, "updn")
	bin := filepath.Join(dir, "bin", "ibsm-plugin-updn")
	marker := markerBinary(t, bin)
	now, err := conf.FileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	where := fmt.Sprintf("%s:%d,", lockPath, e.DeclRange.Start.Line)
	for _, cmd := range [][]string{{"run", "--once"}, {"verify"}, {"dump", "--out", filepath.Join(dir, "dump")}} {
		out, code := ibsm(t, append(cmd, "--config", cfg)...)
		if code == 0 {
			t.Fatalf("ibsm %s ran a tampered plugin binary:\n%s", cmd[0], out)
		}
		mustContain(t, "ibsm "+cmd[0], out, where, "does not match the lock file", now, e.SHA256, "no plugin was started")
	}
	out, code = ibsm(t, "plugins", "verify", "--config", cfg)
	if code != 1 {
		t.Fatalf("plugins verify with a tampered binary exited %d:\n%s", code, out)
	}
	mustContain(t, "plugins verify", out, where, now, e.SHA256)
	out, code = ibsm(t, "plugins", "list", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("plugins list exited %d:\n%s", code, out)
	}
	var rep struct {
		Plugins []struct {
			Name, Lock, SHA256, Version string
			LockSHA256                  string `json:"lock_sha256"`
			SDKVersion                  string `json:"sdk_version"`
			Protocol                    int
			Capabilities                []string
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("plugins list --json: %v\n%s", err, out)
	}
	for _, p := range rep.Plugins {
		switch p.Name {
		case "updn":
			if p.Lock != "mismatch" || p.SHA256 != now || p.LockSHA256 != e.SHA256 || p.Version != "" {
				t.Errorf("updn listed as %+v", p)
			}
		case "sequential":
			if p.Lock != "locked" || p.Version != "0.1.0" || p.SDKVersion != sdk.SDKVersion || p.Protocol != sdk.ProtocolVersion || !slices.Contains(p.Capabilities, "lmc") {
				t.Errorf("sequential listed as %+v", p)
			}
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the tampered binary was run")
	}
}

// TestLockMismatchOnSIGHUPKeepsRunningConfig: a running daemon is sent
// SIGHUP after a plugin binary was replaced (and the config changed): the
// reload is refused with the lock entry named, the running plugins and
// plan stay, and once the binary is back the next SIGHUP applies.
func TestLockMismatchOnSIGHUPKeepsRunningConfig(t *testing.T) {
	dir := t.TempDir()
	s := lockSetup{engine: "updn", sweep: "200ms"}
	cfg := writeLockConfig(t, dir, s)
	if out, code := ibsm(t, "plugins", "lock", "--config", cfg); code != 0 {
		t.Fatalf("plugins lock exited %d:\n%s", code, out)
	}
	cmd := exec.Command(filepath.Join(binDir, "ibsm"), "run", "--config", cfg)
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	waitFor(t, log, "SUBNET UP", 1, 20*time.Second)
	before := children(cmd.Process.Pid)
	slices.Sort(before)

	bin := filepath.Join(dir, "bin", "ibsm-plugin-updn")
	if err := os.Rename(bin, bin+".good"); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(filepath.Join(binDir, "ibsm-plugin-minhop"), bin); err != nil { // a real plugin, another binary
		t.Fatal(err)
	}
	s.updnRoot = "0x0002c90000000004"
	writeLockConfig(t, dir, s)
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, log, "reload failed", 1, 20*time.Second)
	mustContain(t, "daemon log", log.String(), conf.LockFileName+":", "does not match the lock file", "the running configuration stays in force")
	time.Sleep(700 * time.Millisecond)
	if n := strings.Count(log.String(), "SUBNET UP"); n != 1 {
		t.Fatalf("a refused reload re-routed: %d SUBNET UP lines:\n%s", n, tail(log.String(), 3000))
	}
	after := children(cmd.Process.Pid)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Fatalf("plugin processes changed across a refused reload: %v -> %v", before, after)
	}

	// The good binary back: the changed config is applied and re-routes.
	if err := os.Rename(bin+".good", bin); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, log, "SUBNET UP", 2, 20*time.Second)
	if n := strings.Count(log.String(), "reload failed"); n != 1 {
		t.Fatalf("the reload with the locked binary failed:\n%s", tail(log.String(), 3000))
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ibsm exited with %v:\n%s", err, tail(log.String(), 3000))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("ibsm did not stop on SIGTERM")
	}
}

// newApp builds an App and returns its error (the App is closed).
func newApp(t *testing.T, cfg string) error {
	t.Helper()
	a, err := app.New(context.Background(), loadConfig(t, cfg), nil)
	if err == nil {
		a.Close()
	}
	return err
}

// TestLockBadInputs: a plugin missing from the lock file and a malformed
// lock file are refused before any plugin runs, each with a message that
// points at the line and says what to do.
func TestLockBadInputs(t *testing.T) {
	t.Run("missing entry", func(t *testing.T) {
		dir := t.TempDir()
		cfg := writeLockConfig(t, dir, lockSetup{engine: "updn"})
		if out, code := ibsm(t, "plugins", "lock", "--config", cfg); code != 0 {
			t.Fatalf("plugins lock exited %d:\n%s", code, out)
		}
		// A plugin declared after the lock was written.
		s := lockSetup{engine: "updn", plugins: map[string]sdk.Kind{"updn": sdk.KindRouting, "minhop": sdk.KindRouting, "sequential": sdk.KindLIDAssign, "single": sdk.KindVLAssign}}
		writeLockConfig(t, dir, s)
		src, _ := os.ReadFile(cfg)
		line := strings.Count(string(src[:strings.Index(string(src), `plugin "routing_engine" "minhop"`)]), "\n") + 1
		err := newApp(t, cfg)
		if err == nil {
			t.Fatal("a plugin missing from the lock file was run")
		}
		mustContain(t, "error", err.Error(), fmt.Sprintf("ibsm.hcl:%d,", line), "Plugin not locked", `plugin "routing_engine" "minhop" has no entry`, "ibsm plugins lock", "no plugin was started")
		out, code := ibsm(t, "plugins", "verify", "--config", cfg)
		if code != 1 {
			t.Fatalf("plugins verify exited %d:\n%s", code, out)
		}
		mustContain(t, "plugins verify", out, "Plugin not locked", "minhop")
		out, _ = ibsm(t, "plugins", "list", "--config", cfg)
		mustContain(t, "plugins list", out, "not locked")
	})
	t.Run("malformed lock file", func(t *testing.T) {
		dir := t.TempDir()
		cfg := writeLockConfig(t, dir, lockSetup{engine: "updn"})
		lockPath := filepath.Join(dir, conf.LockFileName)
		for _, tc := range []struct{ src, want string }{
			{"plugin \"routing_engine\" \"updn\" {\n  sha256 = \"not a hash\"\n}\n", conf.LockFileName + ":2,"},
			{"plugin \"routing_engine\" \"updn\" {\n  sha256 = \n", conf.LockFileName + ":"},
			{"this is not a lock file\n", conf.LockFileName + ":1,"},
		} {
			if err := os.WriteFile(lockPath, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			err := newApp(t, cfg)
			if err == nil {
				t.Fatalf("a malformed lock file was accepted:\n%s", tc.src)
			}
			mustContain(t, "error", err.Error(), tc.want, "no plugin was started")
			out, code := ibsm(t, "run", "--once", "--config", cfg)
			if code == 0 {
				t.Fatalf("run accepted a malformed lock file:\n%s", out)
			}
			mustContain(t, "run", out, tc.want)
			out, code = ibsm(t, "plugins", "verify", "--config", cfg)
			if code != 1 {
				t.Fatalf("plugins verify exited %d:\n%s", code, out)
			}
			mustContain(t, "plugins verify", out, "lock file cannot be used", tc.want)
		}
		// plugins lock replaces the broken file.
		out, code := ibsm(t, "plugins", "lock", "--config", cfg)
		if code != 0 {
			t.Fatalf("plugins lock over a broken lock exited %d:\n%s", code, out)
		}
		if err := newApp(t, cfg); err != nil {
			t.Fatalf("after re-locking: %v", err)
		}
	})
}

// TestIncompatiblePluginPairs: plugins whose capabilities cannot work
// together are a configuration error naming both, before any plugin is
// asked for a plan (capsplugin fails every kind call with "called").
func TestIncompatiblePluginPairs(t *testing.T) {
	capsPlugins(t)
	cases := []struct {
		name string
		s    lockSetup
		want []string
	}{
		{"paths engine, planes-only LID assigner", lockSetup{engine: "pathsengine",
			plugins: map[string]sdk.Kind{"pathsengine": sdk.KindRouting, "sequential": sdk.KindLIDAssign, "single": sdk.KindVLAssign}},
			[]string{`routing.engine "pathsengine"`, "returns paths-form routes", `routing.lid_assigner "sequential"`, "numbers planes-form routes only", "ibsm.hcl:"}},
		{"lmc without an lmc LID assigner", lockSetup{engine: "updn", lid: "nolmc", lmc: 1,
			plugins: map[string]sdk.Kind{"updn": sdk.KindRouting, "nolmc": sdk.KindLIDAssign, "single": sdk.KindVLAssign}},
			[]string{"sm.lmc = 1", `routing.engine "updn"`, "up to 2 planes per destination", `routing.lid_assigner "nolmc"`, `does not declare "lmc"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writeLockConfig(t, dir, tc.s)
			err := newApp(t, cfg)
			if err == nil {
				t.Fatal("incompatible plugins accepted")
			}
			mustContain(t, "error", err.Error(), append(tc.want, "cannot work together")...)
			out, code := ibsm(t, "run", "--once", "--config", cfg)
			if code == 0 || strings.Contains(out, "called") || strings.Contains(out, "SUBNET UP") {
				t.Fatalf("run with incompatible plugins exited %d:\n%s", code, out)
			}
			mustContain(t, "run", out, tc.want...)
			// verify reports it too (after locking, which warns).
			out, code = ibsm(t, "plugins", "lock", "--config", cfg)
			if code != 0 {
				t.Fatalf("plugins lock exited %d:\n%s", code, out)
			}
			mustContain(t, "plugins lock", out, "warning:", "cannot work together")
			out, code = ibsm(t, "plugins", "verify", "--config", cfg)
			if code != 1 {
				t.Fatalf("plugins verify exited %d:\n%s", code, out)
			}
			mustContain(t, "plugins verify", out, tc.want...)
			out, _ = ibsm(t, "plugins", "list", "--config", cfg)
			mustContain(t, "plugins list", out, append([]string{"pipeline:"}, tc.want...)...)
		})
	}
}

// spineGUIDs reads the node GUIDs of an ibnetdiscover file's switches whose
// description starts with prefix.
func spineGUIDs(t *testing.T, net, prefix string) []string {
	t.Helper()
	f, err := os.Open(net)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	var guid string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if g, ok := strings.CutPrefix(l, "switchguid="); ok {
			guid, _, _ = strings.Cut(strings.Fields(g)[0], "(")
		}
		if strings.HasPrefix(l, "Switch") && strings.Contains(l, `"`+prefix) {
			out = append(out, guid)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %q switches in %s", prefix, net)
	}
	return out
}

// TestRootGUIDFileEditRecomputes: ftree's root_guid_file is read by the
// host (relative to the config) and its contents enter the cache key: a
// restart with the file unchanged asks no plugin, an edited file is
// routed again, at a restart and at a reload.
func TestRootGUIDFileEditRecomputes(t *testing.T) {
	dir := t.TempDir()
	spines := spineGUIDs(t, ft2Net, "ft2-spine-")
	roots := filepath.Join(dir, "etc", "roots.txt")
	if err := os.MkdirAll(filepath.Dir(roots), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(content string) {
		if err := os.WriteFile(roots, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("# the spines\n" + strings.Join(spines, "\n") + "\n")
	cfg := writeLockConfig(t, dir, lockSetup{net: ft2Net, engine: "ftree",
		plugins:     map[string]sdk.Kind{"ftree": sdk.KindRouting, "sequential": sdk.KindLIDAssign, "single": sdk.KindVLAssign},
		ftreeConfig: `    root_guid_file = "etc/roots.txt"`, bestEffort: true})
	log := &lockedBuffer{}
	a, calls := bringUp(t, cfg, log)
	if calls == 0 {
		t.Fatal("first bring-up made no plugin call")
	}
	a.Close()

	// Unchanged file: nothing to recompute.
	b, calls := bringUp(t, cfg, log)
	if calls != 0 {
		t.Fatalf("restart with an unchanged root GUID file made %d plugin calls", calls)
	}
	b.Close()

	// Edited file (the spines in another order, one comment more): routed
	// again, whatever the plan turns out to be.
	rev := slices.Clone(spines)
	slices.Reverse(rev)
	write("# the spines, reversed\n" + strings.Join(rev, "\n") + "\n")
	c, calls := bringUp(t, cfg, log)
	if calls == 0 {
		t.Fatal("an edited root GUID file was served from the cache: 0 plugin calls")
	}

	// At a reload: unchanged file, no call; edited file, routed again.
	if err := c.Reload(context.Background(), loadConfig(t, cfg)); err != nil {
		t.Fatal(err)
	}
	rep, err := c.SM.HeavySweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.PluginCalls != 0 {
		t.Fatalf("reload with the file unchanged made %d plugin calls", rep.PluginCalls)
	}
	write("# the spines, reversed, edited once more\n" + strings.Join(rev, "\n") + "\n")
	if err := c.Reload(context.Background(), loadConfig(t, cfg)); err != nil {
		t.Fatal(err)
	}
	rep, err = c.SM.HeavySweep(context.Background())
	if err != nil {
		t.Fatalf("sweep after editing the root file: %v\n%s", err, tail(log.String(), 3000))
	}
	if rep.PluginCalls == 0 {
		t.Fatal("reload with an edited root GUID file made no plugin call")
	}

	// A file that cannot be read is a configuration error at the attribute.
	if err := os.Remove(roots); err != nil {
		t.Fatal(err)
	}
	err = c.Reload(context.Background(), loadConfig(t, cfg))
	if err == nil {
		t.Fatal("reload with a missing root GUID file succeeded")
	}
	mustContain(t, "error", err.Error(), "ibsm.hcl:", "Cannot read file", "root_guid_file", roots)
}
