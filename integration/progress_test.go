package integration

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: what a process writes to tty the
// test reads from ptm, as a terminal emulator would.
func openPTY(t *testing.T) (ptm, tty *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(ptm.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: 200}); err != nil {
		t.Fatal(err)
	}
	return ptm, tty
}

// visibleLines is what a terminal shows of out, line by line: the
// progress drawer and the log both start with "\r\x1b[K" (back to the
// line's start, erase it), so a line shows what follows the last one.
func visibleLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSuffix(l, "\r") // the terminal's \n → \r\n
		if i := strings.LastIndex(l, "\r\x1b[K"); i >= 0 {
			l = l[i+len("\r\x1b[K"):]
		}
		lines = append(lines, l)
	}
	return lines
}

var reLogLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT[0-9:.]+Z \[(TRACE|DEBUG|INFO|WARN|ERROR)\] `)

// TestProgressOnTerminal runs `ibsm run --once` and `ibsm verify` with
// stderr on a pseudo-terminal: every phase (discovery with its node count,
// routing with the plugin called, verification, programming with its LFT
// blocks) is drawn on one line redrawn in place, log lines stay whole
// lines, and the line is gone when the command prints its result. With
// stderr on a pipe nothing of it appears.
func TestProgressOnTerminal(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		phases []string // must each be drawn
	}{
		{"run --once", []string{"run", "--once"}, []string{
			"ibsm: discovery, nodes found ", "ibsm: routing: plugin updn: Route", "ibsm: routing: plugin sequential: AssignLIDs",
			"ibsm: verification", "ibsm: programming"}}, // single (one-vl) is not asked: the check proved its plan
		{"verify", []string{"verify", "--shifts", "0", "--bisections", "0"}, []string{
			"ibsm: discovery", "ibsm: routing: plugin updn: Route", "ibsm: verification", "ibsm: analysis"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writeConfig(t, dir, setup{net: ft2Net, engine: "updn"})
			ptm, tty := openPTY(t)
			defer ptm.Close()
			cmd := exec.Command(filepath.Join(binDir, "ibsm"), append(c.args, "--config", cfg)...)
			var stdout bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, tty
			cmd.Env = append(os.Environ(), "TERM=xterm")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			tty.Close() // the child holds it: EOF (EIO) on ptm when it exits
			read := make(chan []byte)
			go func() { b, _ := io.ReadAll(ptm); read <- b }()
			err := cmd.Wait()
			raw := string(<-read)
			if err != nil {
				t.Fatalf("ibsm %s: %v\n%s\n%s", c.name, err, stdout.String(), tail(raw, 3000))
			}
			for _, ph := range c.phases {
				if !strings.Contains(raw, "\r\x1b[K"+ph) {
					t.Errorf("phase %q was not drawn on the terminal:\n%q", ph, tail(raw, 3000))
				}
			}
			if !regexp.MustCompile(`programming, LFT blocks written or unchanged \d+/\d+`).MatchString(raw) && c.name == "run --once" {
				t.Logf("no LFT block count was drawn (the ticker may not have run during programming): %q", tail(raw, 2000))
			}
			lines := visibleLines(raw)
			if last := lines[len(lines)-1]; last != "" {
				t.Errorf("the progress line is left on the terminal: %q", last)
			}
			for _, l := range lines[:len(lines)-1] {
				if l != "" && !reLogLine.MatchString(l) {
					t.Errorf("a terminal line is neither a log line nor empty (progress and log mixed?): %q", l)
				}
			}
			if strings.Contains(stdout.String(), "\x1b[K") {
				t.Errorf("progress drawn on stdout: %q", stdout.String())
			}
			want := map[string]string{"run --once": "SUBNET UP in ", "verify": "engine: updn"}[c.name]
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
			}

			// The same command with stderr on a pipe: the log alone.
			out, errOut, err := ibsmOut(t, append(c.args, "--config", cfg)...)
			if err != nil {
				t.Fatalf("ibsm %s (pipe): %v\n%s", c.name, err, errOut)
			}
			if strings.Contains(errOut, "\x1b[K") || strings.Contains(errOut, "\r") || strings.Contains(errOut, "ibsm: discovery") {
				t.Errorf("progress written to a pipe:\n%q", tail(errOut, 2000))
			}
			if !strings.Contains(out, want) {
				t.Errorf("stdout (pipe) lacks %q:\n%s", want, out)
			}
		})
	}
}
