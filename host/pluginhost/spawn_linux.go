package pluginhost

import (
	"os/exec"
	"syscall"
)

// setParentDeath makes the kernel SIGKILL the plugin when the thread that
// spawned it exits, so a crashed host leaves no orphans. The signal follows
// the spawning OS thread, not the process (golang/go#27505): the Manager
// therefore starts plugins from one locked thread that lives as long as it.
func setParentDeath(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
