package benchutil

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// StartIBSimTest starts ibsim as o says for a test and stops it in t's
// Cleanup, logging the tail of its log when t failed. t is skipped when
// ibsim is not installed. An empty o.Path is ibsim from PATH, an empty
// o.Dir a t.TempDir(); ibsim gets 20 s to get ready.
func StartIBSimTest(t testing.TB, o IBSimOptions) *IBSim {
	t.Helper()
	if o.Path == "" {
		bin, err := exec.LookPath("ibsim")
		if err != nil {
			t.Skip("ibsim not installed (Debian package ibsim-utils; run integration/setup.sh as root)")
		}
		o.Path = bin
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sim, err := StartIBSimWith(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(sim.LogPath)
			t.Logf("ibsim log tail:\n%s", TailLines(string(b), 15))
		}
		sim.Stop()
	})
	return sim
}
