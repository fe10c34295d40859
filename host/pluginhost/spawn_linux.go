package pluginhost

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setProcAttrs puts the plugin in a process group of its own, so that a
// kill reaches whatever it forked too, and makes the kernel SIGKILL it when
// the thread that spawned it exits, so a crashed host leaves no orphans. The
// parent-death signal follows the spawning OS thread, not the process
// (golang/go#27505): the Manager therefore execs plugins from one locked
// thread that lives as long as it (spawner).
func setProcAttrs(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
}

// killGroup SIGKILLs the plugin's process group and the plugin itself (in
// case it left the group). SIGKILL ends stopped processes too. The caller
// guarantees p was not reaped yet, so its pid (= pgid) is not reused.
func killGroup(p *os.Process) error {
	gerr := syscall.Kill(-p.Pid, syscall.SIGKILL)
	err := p.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		err = nil
	}
	if err == nil && gerr != nil && !errors.Is(gerr, syscall.ESRCH) {
		err = gerr
	}
	return err
}
