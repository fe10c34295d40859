//go:build !linux

package pluginhost

import "os/exec"

// setParentDeath has no equivalent here; the SDK's parent watchdog covers it.
func setParentDeath(*exec.Cmd) {}
