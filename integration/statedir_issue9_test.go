package integration

// State-directory faults in a running SM (issue 9, item 4 and 5): a full
// disk costs the cache, never a re-route, and a second ibsm on the same
// state directory is refused naming the first one's PID.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/sdk/topology"
)

// fillUp writes zeros into dir until its file system has no space left.
func fillUp(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	// Small writes may still fit in a partly used block: use those too.
	for {
		if _, err := f.Write(buf[:1]); err != nil {
			return
		}
	}
}

// TestFullStateDirDaemonReroutes: the daemon's state directory (a tmpfs)
// fills up after SUBNET UP; then an upper-tier switch fails. The sweep loop re-routes
// around it although neither the cache nor guid2lid can be written, the
// fabric read back passes the host's own check, and the operator is told
// the path and the errno once in that sweep, not once per write.
func TestFullStateDirDaemonReroutes(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", state).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs as the state directory here (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", state).Run() })
	// A 4-ary 3-tree (64 CAs, 48 switches): spines, and small enough to
	// sweep fast.
	net := filepath.Join(t.TempDir(), "ft.net")
	topo, err := exec.Command(filepath.Join(binDir, "ibsm"), "topo", "ft", "--arity", "4", "--levels", "3").Output()
	if err != nil {
		t.Fatalf("ibsm topo ft: %v", err)
	}
	if err := os.WriteFile(net, topo, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, setup{net: net, engine: "updn", sweep: "300ms"})
	log := &lockedBuffer{}
	a, err := app.New(context.Background(), loadConfig(t, cfg), hclog.New(&hclog.LoggerOptions{Output: log, Level: hclog.Info}))
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	t.Cleanup(a.Close)
	sweeps := runSM(t, a)
	waitReroute(t, sweeps, 60*time.Second)
	a.SM.WaitRecorded()
	if strings.Contains(log.String(), "plan cache:") {
		t.Fatalf("cache problems before the disk filled:\n%s", log)
	}

	fillUp(t, state)
	before := len(log.String())
	applied := a.SM.Applied().Topo
	var spine int32 = -1
	for _, sw := range applied.Switches() {
		n := &applied.Nodes[sw]
		onlySwitches := true
		for p := 1; p < len(n.Ports); p++ {
			if pr := n.Ports[p].Peer; pr.Connected() && applied.Nodes[pr.Node].Type != topology.Switch {
				onlySwitches = false
			}
		}
		if onlySwitches {
			spine = sw
			break
		}
	}
	if spine < 0 {
		t.Fatal("no upper-tier switch (linked to switches only) in the fabric")
	}
	if err := a.Sim.RemoveNode(applied.Nodes[spine].GUID); err != nil {
		t.Fatal(err)
	}
	rep := waitReroute(t, sweeps, 60*time.Second)
	t.Logf("switch %#x removed with the state directory full: re-routed by %s", applied.Nodes[spine].GUID, rep.Engine)
	if got := a.SM.Applied().Topo; got.Hash() == applied.Hash() {
		t.Fatal("the plan in force is still the one with the spine")
	}
	readBackVerified(t, a)

	after := log.String()[before:]
	for _, want := range []string{"plan cache: cannot write", "no space left on device", state} {
		if !strings.Contains(after, want) {
			t.Errorf("after the disk filled the log lacks %q:\n%s", want, tail(after, 3000))
		}
	}
	// One re-route wrote (tried to write) several cache files: the
	// operator hears of it once, with a count, not once per file.
	if n := strings.Count(after, "plan cache: cannot write"); n != 1 {
		t.Errorf("%d cache-write warnings for one re-route, want 1:\n%s", n, tail(after, 3000))
	}
	if !strings.Contains(after, "could not persist LIDs") {
		t.Errorf("the failed guid2lid write was not reported:\n%s", tail(after, 3000))
	}
}

// TestSecondIBSMOnStateDir: while an ibsm daemon holds the state
// directory, a second ibsm (run --once, same config) is refused before it
// touches the fabric, naming the directory and the daemon's PID; the
// daemon goes on.
func TestSecondIBSMOnStateDir(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, setup{net: ring6Net, engine: "updn", sweep: "500ms"})
	d := startIBSM(t, cfg)
	waitFor(t, d.log, "SUBNET UP", 1, 60*time.Second)

	start := time.Now()
	b, err := exec.Command(filepath.Join(binDir, "ibsm"), "run", "--once", "--config", cfg).CombinedOutput()
	took, out := time.Since(start), string(b)
	if err == nil {
		t.Fatalf("a second ibsm on the same state directory ran:\n%s", out)
	}
	for _, want := range []string{filepath.Join(dir, "state"), fmt.Sprintf("locked by process %d", d.cmd.Process.Pid)} {
		if !strings.Contains(out, want) {
			t.Errorf("second ibsm said %q, want it to contain %q", out, want)
		}
	}
	if strings.Contains(out, "SUBNET UP") {
		t.Errorf("the refused ibsm brought a subnet up:\n%s", out)
	}
	t.Logf("second ibsm refused in %v: %s", took.Round(time.Millisecond), strings.TrimSpace(out))
	select {
	case err := <-d.done:
		t.Fatalf("the daemon exited (%v) when a second ibsm was refused:\n%s", err, tail(d.log.String(), 2000))
	case <-time.After(time.Second):
	}
}
