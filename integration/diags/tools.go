// Package diags runs the stock InfiniBand tools (infiniband-diags:
// ibnetdiscover, dump_fts, smpdump, ibtracert, saquery, sminfo) against an
// ibsim fabric under libumad2sim, parses what they print, and checks it
// against what a subnet manager says it programmed.
//
// The tools are somebody else's code reading the fabric over MADs, so
// agreement between them and an SM's plan is evidence the SM programmed
// what it planned. The parsers are tested on outputs captured from the real
// tools with OpenSM driving ibsim (testdata/), and the same checks are run
// end to end against OpenSM in the integration tests, which shows they
// pass on a correctly programmed fabric and fail on a wrong plan.
package diags

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ibsm/ibsm/integration/benchutil"
)

// Tools are the executables this package runs.
var Tools = []string{"ibsim", "ibnetdiscover", "dump_fts", "smpdump", "smpquery", "ibtracert", "saquery", "sminfo", "opensm"}

// FindTools locates the preload library and every tool (Debian installs
// most of them in /usr/sbin, often not on a user's PATH). The error names
// each missing piece and how to install it.
func FindTools() (preload string, paths map[string]string, err error) {
	paths = map[string]string{}
	var missing []string
	for _, t := range Tools {
		p, lerr := exec.LookPath(t)
		if lerr != nil {
			for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin"} {
				if st, serr := os.Stat(filepath.Join(dir, t)); serr == nil && !st.IsDir() {
					p, lerr = filepath.Join(dir, t), nil
					break
				}
			}
		}
		if lerr != nil {
			missing = append(missing, t)
			continue
		}
		paths[t] = p
	}
	if preload = benchutil.UMAD2Sim(); preload == "" {
		missing = append(missing, "libumad2sim.so")
	}
	if len(missing) > 0 {
		return "", nil, fmt.Errorf("missing %s; run integration/setup.sh as root (Debian packages ibsim-utils infiniband-diags opensm libumad2sim0)", strings.Join(missing, ", "))
	}
	return preload, paths, nil
}

// Env runs tools as a client of one ibsim, attached at one node.
type Env struct {
	Preload string
	Paths   map[string]string
	// Sockname is the ibsim's IBSIM_SOCKNAME.
	Sockname string
	// Host is SIM_HOST: the node id (or description) the tool attaches
	// to. Pick a CA other than the SM's: one node has one issm slot, and
	// ibsim has only 10 client slots in total.
	Host string
	// Dir is the tools' working directory; required, because umad2sim
	// creates a fake sysfs tree ./sys-<pid> in it.
	Dir string
	// Timeout bounds each run (default 60 s).
	Timeout time.Duration
}

// ToolError is a tool that exited non-zero or was killed.
type ToolError struct {
	Tool   string
	Args   []string
	Exit   int
	Stderr string
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("%s %s: exit %d: %s", e.Tool, strings.Join(e.Args, " "), e.Exit, strings.TrimSpace(tail(e.Stderr, 1500)))
}

// Run runs tool with args under umad2sim and returns its stdout. The tool
// runs in its own process group, which is killed when ctx ends or the
// timeout passes, so a hung tool never outlives the test.
func (e *Env) Run(ctx context.Context, tool string, args ...string) (string, error) {
	path := e.Paths[tool]
	if path == "" {
		return "", fmt.Errorf("%s: not located; call FindTools first", tool)
	}
	if e.Dir == "" {
		return "", errors.New("diags.Env.Dir is empty: umad2sim would litter the current directory with sys-<pid> trees; set it to a temporary directory")
	}
	to := e.Timeout
	if to == 0 {
		to = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	cmd := exec.Command(path, args...)
	cmd.Dir = e.Dir
	cmd.Env = append(os.Environ(),
		"LD_PRELOAD="+e.Preload,
		"IBSIM_SOCKNAME="+e.Sockname,
		"SIM_HOST="+e.Host,
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting %s: %w", tool, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return stdout.String(), fmt.Errorf("%s %s: %w (killed; ibsim stalled or the fabric does not answer); stderr: %s", tool, strings.Join(args, " "), ctx.Err(), tail(stderr.String(), 1000))
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything it left behind
	var xe *exec.ExitError
	if errors.As(werr, &xe) {
		return stdout.String(), &ToolError{Tool: tool, Args: args, Exit: xe.ExitCode(), Stderr: stderr.String() + stdout.String()}
	}
	if werr != nil {
		return stdout.String(), werr
	}
	return stdout.String(), nil
}

// Discover runs ibnetdiscover and parses it.
func (e *Env) Discover(ctx context.Context) (*Discovery, string, error) {
	out, err := e.Run(ctx, "ibnetdiscover")
	if err != nil {
		return nil, out, err
	}
	d, err := ParseIBNetDiscover(strings.NewReader(out))
	return d, out, err
}

// DumpFTs runs dump_fts (every switch's unicast LFT) and parses it.
func (e *Env) DumpFTs(ctx context.Context) (map[uint64]*LFT, string, error) {
	out, err := e.Run(ctx, "dump_fts")
	if err != nil {
		return nil, out, err
	}
	l, err := ParseLFTs(strings.NewReader(out))
	return l, out, err
}

// LFTBlock reads one 64-entry LFT block of the switch at lid with smpdump
// (LID-routed SubnGet(LinearForwardingTable)).
func (e *Env) LFTBlock(ctx context.Context, lid uint16, block int) ([]byte, error) {
	out, err := e.Run(ctx, "smpdump", strconv.Itoa(int(lid)), "0x19", strconv.Itoa(block))
	if err != nil {
		return nil, err
	}
	return ParseSMPDump(strings.NewReader(out))
}

// Trace runs ibtracert from one LID to another.
func (e *Env) Trace(ctx context.Context, from, to uint16) (*Trace, error) {
	out, err := e.Run(ctx, "ibtracert", strconv.Itoa(int(from)), strconv.Itoa(int(to)))
	if err != nil {
		return nil, err
	}
	return ParseTrace(strings.NewReader(out))
}

// PathRecords asks the SA for the PathRecords from slid to dlid.
func (e *Env) PathRecords(ctx context.Context, slid, dlid uint16) ([]PathRecord, error) {
	out, err := e.Run(ctx, "saquery", "-p", "--slid", strconv.Itoa(int(slid)), "--dlid", strconv.Itoa(int(dlid)))
	if err != nil {
		return nil, err
	}
	return ParsePathRecords(strings.NewReader(out))
}

// SMInfo asks the master SM (at the attach port's MasterSMLID) for its SMInfo.
func (e *Env) SMInfo(ctx context.Context) (SMInfo, error) {
	out, err := e.Run(ctx, "sminfo")
	if err != nil {
		return SMInfo{}, err
	}
	return ParseSMInfo(out)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
