package testfab

import (
	"syscall"
	"time"
)

// CPUTime is the user+system CPU time this process has used. Benchmarks
// report it per op next to wall time because wall time on a shared 2-core
// machine mostly measures the neighbours.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
