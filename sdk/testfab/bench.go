package testfab

import "testing"

// Bench times run b.N times, failing on its first error, and reports
// allocations and the process CPU time per run (cpu-ns/op), which unlike
// wall time counts every worker goroutine. Setup done before Bench is not
// timed.
func Bench(b *testing.B, run func() error) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := CPUTime()
	for i := 0; i < b.N; i++ {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
}
