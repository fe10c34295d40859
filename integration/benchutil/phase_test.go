package benchutil

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPhaseMark: only the "routing" phase starts the clock, the CPU
// sample and the profile; later routing marks move the start (the last
// one counts), the profile is written once and closed by stopProfile.
func TestPhaseMark(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	m := &phaseMark{profile: prof}
	m.Phase("discovery", "")
	if m.set || m.prof != nil {
		t.Fatalf("discovery started the routing phase (set %v, profiling %v)", m.set, m.prof != nil)
	}
	before := time.Now()
	m.Phase("routing", "route")
	first := m.began
	if !m.set || first.Before(before) || m.prof == nil {
		t.Fatalf("routing mark: set %v at %v (mark made after %v), profiling %v", m.set, first, before, m.prof != nil)
	}
	if m.at.Self <= 0 {
		t.Errorf("CPU sample at the mark: this process used %v", m.at.Self)
	}
	f := m.prof
	m.Phase("routing", "verify")
	if m.prof != f || !m.began.After(first) {
		t.Errorf("second routing mark: profile file replaced %v, start moved %v -> %v", m.prof != f, first, m.began)
	}
	if err := m.stopProfile(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(prof); err != nil || st.Size() == 0 {
		t.Errorf("profile %s: %v (size %v)", prof, err, st)
	}
	if err := m.stopProfile(); err != nil {
		t.Errorf("second stopProfile: %v", err)
	}
}

// TestCPUSample: Total counts this process and the plugins only, Plugin
// one plugin by its name.
func TestCPUSample(t *testing.T) {
	s := CPUSample{Self: time.Second, Children: map[string]time.Duration{
		"ibsm-plugin-nue": 2 * time.Second, "ibsm-plugin-nue-vl": 4 * time.Second, "ibsim": 8 * time.Second}}
	if got := s.Total(); got != 7*time.Second {
		t.Errorf("Total %v, want 7s (ibsim is not a plugin)", got)
	}
	if got := s.Plugin("nue"); got != 2*time.Second {
		t.Errorf("Plugin(nue) %v, want 2s", got)
	}
	if got := s.Plugin("sssp"); got != 0 {
		t.Errorf("Plugin(sssp) %v, want 0 (not running)", got)
	}
	if l := LoadAvg(); l < 0 {
		t.Errorf("LoadAvg %v: /proc/loadavg unreadable", l)
	}
}
