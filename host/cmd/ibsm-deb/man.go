package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// manCommands are the commands whose help the man page reproduces: the
// section name and the arguments that print it.
var manCommands = []struct {
	name string
	args []string
}{
	{"run", []string{"run", "-h"}},
	{"status", []string{"status", "-h"}},
	{"sweep", []string{"sweep", "-h"}},
	{"reload", []string{"reload", "-h"}},
	{"rollout", []string{"rollout", "-h"}},
	{"plan diff", []string{"plan", "diff", "-h"}},
	{"report", []string{"report", "-h"}},
	{"verify", []string{"verify", "-h"}},
	{"dump", []string{"dump", "-h"}},
	{"plugins", []string{"plugins", "-h"}},
	{"topo", []string{"topo", "-h"}},
}

// runHelp runs ibsm with args and returns what it printed (help goes to
// stderr and exits non-zero: that is not an error here).
func runHelp(ibsm string, args ...string) (string, error) {
	cmd := exec.Command(ibsm, args...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); ok {
		err = nil
	}
	return b.String(), err
}

// roff escapes text for a troff .nf block.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			l = `\&` + l
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// writeMan writes ibsm.8 (gzipped) from `ibsm --help` and every
// command's -h, so the page says what the binary does.
func writeMan(ibsm, version, path string) error {
	top, err := runHelp(ibsm, "--help")
	if err != nil {
		return fmt.Errorf("ibsm --help: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, ".TH IBSM 8 %q \"ibsm %s\" \"System Administration\"\n", time.Now().UTC().Format("2006-01-02"), version)
	b.WriteString(".SH NAME\nibsm \\- InfiniBand subnet manager with plugin routing\n")
	b.WriteString(".SH SYNOPSIS\n.nf\n" + roff(top) + "\n.fi\n")
	b.WriteString(".SH DESCRIPTION\nibsm discovers an InfiniBand fabric, assigns LIDs, programs forwarding and SL-to-VL tables and answers SA queries. " +
		"Routing engines, LID assigners and VL assigners run as plugin processes chosen in the HCL configuration " +
		"(\\fI/etc/ibsm/ibsm.hcl\\fR; examples in \\fI/usr/share/ibsm/examples\\fR).\n" +
		"The daemon serves a control socket, \\fIstate_dir/control.sock\\fR, used by \\fBibsm status\\fR, \\fBibsm sweep\\fR and \\fBibsm reload\\fR; " +
		"SIGHUP re-reads the configuration, SIGUSR1 reopens the log file.\n" +
		".PP\nOn a terminal, \\fBibsm verify\\fR, \\fBdump\\fR, \\fBreport\\fR and \\fBrun \\-\\-once\\fR show on one line of standard error " +
		"which phase runs (discovery and the nodes found, the plugin called, verification, the LFT blocks programmed); " +
		"when standard error is not a terminal only the log is written.\n")
	b.WriteString(".SH COMMANDS\n")
	for _, c := range manCommands {
		h, err := runHelp(ibsm, c.args...)
		if err != nil {
			return fmt.Errorf("ibsm %s: %w", strings.Join(c.args, " "), err)
		}
		fmt.Fprintf(&b, ".SS %s\n.nf\n%s\n.fi\n", c.name, roff(h))
	}
	b.WriteString(".SH FILES\n.TP\n/etc/ibsm/ibsm.hcl\nthe configuration of ibsm.service\n.TP\n/var/lib/ibsm\nstate: LIDs, plan cache, control socket\n" +
		".TP\n/usr/lib/ibsm/plugins\nthe first-party plugins\n.SH SEE ALSO\n.BR systemctl (1),\n.BR ibnetdiscover (8),\n.BR sminfo (8)\n")
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(b.String()))
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, z.Bytes(), 0o644)
}
