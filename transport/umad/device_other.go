//go:build !linux

package umad

import (
	"fmt"
	"runtime"
)

// Open fails: umad devices exist only on Linux.
func Open(device string, port int, opts Options) (*Conn, PortInfo, error) {
	return nil, PortInfo{}, fmt.Errorf("umad: /dev/infiniband/umad* needs Linux, not %s", runtime.GOOS)
}
