package netfile

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIbsimAcceptsWrite loads written files into the real ibsim (when it is
// installed) and checks with its Dump command that it built the same nodes,
// GUIDs and cables.
func TestIbsimAcceptsWrite(t *testing.T) {
	bin, err := exec.LookPath("ibsim")
	if err != nil {
		t.Skip("ibsim not installed")
	}
	for i, in := range []string{discovered, handWritten} {
		f, err := Parse("in.net", strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, f); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "w.net")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		cmd := exec.CommandContext(ctx, bin, "-s", path)
		cmd.Env = append(os.Environ(), fmt.Sprintf("IBSIM_SOCKNAME=netfiletest%d-%d", os.Getpid(), i))
		cmd.Stdin = strings.NewReader("Dump\nQuit\n")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		cancel()
		dump := out.String()
		if err != nil {
			t.Fatalf("ibsim: %v\n%s", err, dump)
		}
		for _, n := range f.Nodes {
			want := fmt.Sprintf("%q\tnodeguid %x", n.Name, n.GUID)
			if !strings.Contains(dump, want) {
				t.Errorf("ibsim dump lacks %q\n%s", want, dump)
			}
			for p := 1; p < len(n.Ports); p++ {
				if pt := n.Ports[p]; pt.Peer != nil {
					want := fmt.Sprintf("[%d]\t%q[%d]", p, pt.Peer.Name, pt.PeerPort)
					if !strings.Contains(dump, want) {
						t.Errorf("ibsim dump lacks link %s on %s", want, n.Name)
					}
				}
			}
		}
		if t.Failed() {
			t.Fatalf("file:\n%s\nibsim:\n%s", buf.String(), dump)
		}
	}
}
