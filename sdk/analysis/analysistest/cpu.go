package analysistest

import (
	"syscall"
	"testing"
	"time"
)

// ReportCPU runs b's loop over op and reports the CPU time it took per
// op (user and system, every goroutine) as cpu-ms/op: the honest figure
// on a shared machine, where wall time depends on everybody else's load.
func ReportCPU(b *testing.B, op func()) {
	b.Helper()
	before := cpuTime()
	n := 0
	for b.Loop() {
		n++
		op()
	}
	if n > 0 {
		b.ReportMetric(float64((cpuTime()-before).Milliseconds())/float64(n), "cpu-ms/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
