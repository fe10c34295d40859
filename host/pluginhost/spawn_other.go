//go:build !linux

package pluginhost

import (
	"errors"
	"os"
	"os/exec"
)

// setProcAttrs has no parent-death signal here; the SDK's parent watchdog
// covers it.
func setProcAttrs(*exec.Cmd) {}

// killGroup kills the plugin process.
func killGroup(p *os.Process) error {
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
