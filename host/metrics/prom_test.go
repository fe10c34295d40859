package metrics

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// scrape reads url as a Prometheus server would and parses it.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); expfmt.ResponseFormat(resp.Header).FormatType() != expfmt.TypeTextPlain {
		t.Fatalf("content type %q", ct)
	}
	b, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("exposition not parseable: %v\n%s", err, b)
	}
	return fams
}

// value finds the sample of family name whose labels include want.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric family %s", name)
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("%s has no sample with labels %v", name, want)
	return 0
}

func TestExposition(t *testing.T) {
	r := NewRecorder()
	st := &Status{
		SM:     SMStatus{State: "master", Priority: 11, MADWindow: 16},
		Fabric: FabricStatus{Switches: 3, CAs: 5, Links: 7, PortsByState: map[string]int{"active": 14}},
		Plan: &PlanStatus{AppliedAt: time.Unix(1700000000, 0), Metrics: PlanMetrics{LIDsUsed: 8, CAPairs: 20, UnreachableCAPairs: 2,
			SwitchPairs: 6, MaxChannelLoad: 9, MaxChannelLoadNorm: 2.25, VLsUsed: []int{0, 1}, DeadlockFree: true}},
		Plugins: []PluginState{{Name: "updn", Kind: "routing_engine", Health: "running", Calls: 4, Restarts: 1}},
		Errors:  ErrorCounts{MADRetries: 5},
	}
	srv := httptest.NewServer(Handler(r.Registry(func() *Status { return st }))) // events from now on are counted
	defer srv.Close()
	if fams := scrape(t, srv.URL); fams["ibsm_sweeps_total"] != nil {
		t.Errorf("sweeps counted before any: %v", fams["ibsm_sweeps_total"])
	}

	r.Sweep(&sm.Report{Rerouted: true, Total: time.Second, Discovery: sm.Phase{Time: 300 * time.Millisecond}}, nil)
	r.Sweep(&sm.Report{Incremental: true, Total: time.Millisecond}, nil)
	r.Sweep(nil, errors.New("boom"))
	r.LightSweep(2*time.Millisecond, 10, nil)
	r.LightSweep(2*time.Millisecond, 10, errors.New("lost"))
	r.Trap(128, 3)
	r.Trap(128, 4)
	r.Trap(0, 4)
	for _, ev := range []transport.MADEvent{transport.MADRequest, transport.MADRequest, transport.MADRetry, transport.MADTimeout} {
		r.MAD(ev, smp.ClassSMPDR, smp.AttrPortInfo)
	}
	r.MAD(transport.MADRequest, smp.ClassSMPLID, 0x7777)
	r.PluginCall("updn", "Route", 20*time.Millisecond, nil)
	r.PluginCall("updn", "Route", time.Millisecond, errors.New("crashed"))
	r.SAQuery(smp.SAAttrPathRecord, 0x81, 0)
	r.SAQuery(smp.SAAttrPathRecord, 0x81, 0x0300)
	r.SAQuery(smp.SAAttrNodeRecord, 0x92, 0)

	fams := scrape(t, srv.URL)
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"ibsm_sweeps_total", map[string]string{"kind": "heavy", "outcome": "rerouted"}, 1},
		{"ibsm_sweeps_total", map[string]string{"kind": "heavy", "outcome": "failed"}, 1},
		{"ibsm_sweeps_total", map[string]string{"kind": "incremental", "outcome": "ok"}, 1},
		{"ibsm_sweeps_total", map[string]string{"kind": "light", "outcome": "failed"}, 1},
		{"ibsm_sweep_phase_seconds", map[string]string{"kind": "heavy", "phase": "discovery"}, 1},
		{"ibsm_light_sweep_seconds", nil, 2},
		{"ibsm_traps_total", map[string]string{"number": "128"}, 2},
		{"ibsm_traps_total", map[string]string{"number": "0"}, 1},
		{"ibsm_mads_total", map[string]string{"class": "smp_dr", "attribute": "PortInfo", "event": "sent"}, 2},
		{"ibsm_mads_total", map[string]string{"class": "smp_dr", "attribute": "PortInfo", "event": "retried"}, 1},
		{"ibsm_mads_total", map[string]string{"class": "smp_dr", "attribute": "PortInfo", "event": "timed_out"}, 1},
		{"ibsm_mads_total", map[string]string{"class": "smp_lid", "attribute": "0x7777"}, 1},
		{"ibsm_plugin_call_seconds", map[string]string{"plugin": "updn", "method": "Route"}, 2},
		{"ibsm_plugin_call_failures_total", map[string]string{"plugin": "updn"}, 1},
		{"ibsm_sa_queries_total", map[string]string{"record": "PathRecord", "status": "ok"}, 1},
		{"ibsm_sa_queries_total", map[string]string{"record": "PathRecord", "status": "no_records"}, 1},
		{"ibsm_sa_queries_total", map[string]string{"record": "NodeRecord", "status": "ok"}, 1},
		{"ibsm_sm_state", map[string]string{"state": "master"}, 1},
		{"ibsm_sm_state", map[string]string{"state": "standby"}, 0},
		{"ibsm_sm_priority", nil, 11},
		{"ibsm_fabric_nodes", map[string]string{"type": "switch"}, 3},
		{"ibsm_fabric_nodes", map[string]string{"type": "ca"}, 5},
		{"ibsm_fabric_ports", map[string]string{"state": "active"}, 14},
		{"ibsm_fabric_ports", map[string]string{"state": "down"}, 0},
		{"ibsm_plan_unreachable_pairs", map[string]string{"kind": "ca"}, 2},
		{"ibsm_plan_max_channel_load", nil, 9},
		{"ibsm_plan_max_channel_load_normalized", nil, 2.25},
		{"ibsm_plan_vls_used", nil, 2},
		{"ibsm_plan_deadlock_free", nil, 1},
		{"ibsm_plugin_up", map[string]string{"plugin": "updn"}, 1},
		{"ibsm_plugin_restarts_total", map[string]string{"plugin": "updn"}, 1},
		{"ibsm_mad_errors_total", map[string]string{"kind": "retry"}, 5},
	}
	for _, tc := range tests {
		if got := value(t, fams, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	if fams["go_goroutines"] == nil || fams["process_resident_memory_bytes"] == nil {
		t.Error("runtime and process collectors missing")
	}
}

// TestRecorderStatus: status's part from the Recorder (last sweeps,
// counters, the trap ring).
func TestRecorderStatus(t *testing.T) {
	r := NewRecorder()
	for i := 0; i < RecentTraps+5; i++ {
		r.Trap(uint16(i), 1)
	}
	r.Sweep(&sm.Report{Rerouted: true}, nil)
	r.Sweep(&sm.Report{Incremental: true}, errors.New("x"))
	var st Status
	r.Fill(&st)
	if len(st.Traps.Recent) != RecentTraps || st.Traps.Recent[0].Number != 5 || st.Traps.Recent[RecentTraps-1].Number != RecentTraps+4 {
		t.Errorf("trap ring: %d kept, first %d, last %d", len(st.Traps.Recent), st.Traps.Recent[0].Number, st.Traps.Recent[len(st.Traps.Recent)-1].Number)
	}
	if st.Sweeps.HeavyCount != 1 || st.Sweeps.Reroutes != 1 || st.Sweeps.IncrementalFailures != 1 || st.Sweeps.Incremental.Error != "x" {
		t.Errorf("sweeps %+v", st.Sweeps)
	}
}
