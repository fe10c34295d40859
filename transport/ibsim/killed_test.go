package ibsim_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/transport/ibsim"
)

// smHelperEnv makes the test binary a second process that attaches to the
// ibsim named by the variable as SM on h1, says "attached" and waits to be
// killed.
const smHelperEnv = "IBSM_IBSIM_SM_HELPER"

func TestMain(m *testing.M) {
	if sock := os.Getenv(smHelperEnv); sock != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := ibsim.Dial(ctx, ibsim.Options{SockName: sock, Attach: "h1", IsSM: true})
		cancel()
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Printf("attached slot %d\n", c.Attachment().Slot)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestKilledSMIsReplaced: ibsim keeps the slot and the SM registration of
// an SM client killed with SIGKILL (it drops a client only when a write to
// it fails), so a restarted SM's CONNECT on the same node is refused. Dial
// makes ibsim write to the dead client (an SMInfo query), which drops it,
// and attaches in its place.
func TestKilledSMIsReplaced(t *testing.T) {
	sim := startSim(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), smHelperEnv+"="+sim.Sockname)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "attached slot ") {
		t.Fatalf("SM process said %q, %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// What ibsim does about it: nothing yet.
	if l := attached(t, sim); len(l) != 1 || !strings.Contains(l[0], `"h1"`) || !strings.HasSuffix(strings.TrimSpace(l[0]), "SM") {
		t.Errorf("after kill -9 ibsim lists %q, want the dead SM client still attached on h1", l)
	}

	var log syncBuffer
	c := dial(t, sim, ibsim.Options{Attach: "h1", IsSM: true,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Warn})})
	if !strings.Contains(log.String(), "exited without detaching") {
		t.Errorf("no warning about the dead SM's registration; log:\n%s", log.String())
	}
	l := attached(t, sim)
	want := fmt.Sprintf("Client %d: ", c.Attachment().Slot)
	if len(l) != 1 || !strings.HasPrefix(l[0], want) || !strings.Contains(l[0], `"h1"`) || !strings.HasSuffix(strings.TrimSpace(l[0]), "SM") {
		t.Errorf("ibsim lists %q, want only us (%s...) as SM on h1", l, want)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
