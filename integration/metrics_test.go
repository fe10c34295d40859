package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ibsm/ibsm/integration/diags"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

var reMetricsURL = regexp.MustCompile(`serving Prometheus metrics: url=(\S+)`)

// promScrape reads the metrics endpoint and parses the exposition format.
func promScrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s is not in the exposition format: %v", url, err)
	}
	return fams
}

// promSum adds up the samples of name whose labels include want.
func promSum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.Metric {
		for k, v := range want {
			found := false
			for _, l := range m.Label {
				found = found || (l.GetName() == k && l.GetValue() == v)
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// TestMetricsOnIBSim: a daemon on ibsim with the 648-CA fat tree. Its
// status and metrics agree with sminfo, ibnetdiscover and dump_fts; an
// unlink on ibsim's console moves the sweep and trap counters and the
// fabric and plan figures; SIGHUP with another priority reaches sminfo;
// a new MAD window is what the next sweep runs with.
func TestMetricsOnIBSim(t *testing.T) {
	nf, err := netfile.ParseFile(ft2Net)
	if err != nil {
		t.Fatal(err)
	}
	smNode := nthCA(t, nf, 0)
	r := startRig(t, ft2Net, nthCA(t, nf, len(caNodes(nf))-1).Name)
	ctx := context.Background()
	stateDir := r.dir + "/state"
	cfg := ibsimConfig(t, r.dir, "ibsm.hcl", "ibsim", r, smNode.Name, stateDir, 5)
	src := mustRead(t, cfg)
	withMetrics := strings.Replace(string(src), "priority = 14", "priority = 14\n  metrics_listen = \"127.0.0.1:0\"", 1)
	os.WriteFile(cfg, []byte(withMetrics), 0o644)
	d := startIBSM(t, cfg)
	d.waitUp(t, 1, 90*time.Second)
	m := reMetricsURL.FindStringSubmatch(d.log.String())
	if m == nil {
		t.Fatalf("no metrics URL in the log:\n%s", tail(d.log.String(), 3000))
	}
	url := m[1]

	st := statusOf(t, cfg)
	si, err := r.env.SMInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if si.State != 3 || si.Priority != int(st.SM.Priority) || si.LID != st.SM.LID || st.SM.State != "master" || st.SM.PortGUID != hex64(si.GUID) {
		t.Errorf("sminfo %+v vs status %+v", si, st.SM)
	}
	disc, _, err := r.env.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sw, cas, links int
	for _, n := range disc.File.Nodes {
		if n.Type == topology.Switch {
			sw++
		} else {
			cas++
		}
		for p := 1; p < len(n.Ports); p++ {
			if n.Ports[p].Peer != nil {
				links++
			}
		}
	}
	links /= 2
	if st.Fabric.Switches != sw || st.Fabric.CAs != cas || st.Fabric.Links != links || st.Fabric.PortsByState["active"] != 2*links {
		t.Errorf("status fabric %+v; ibnetdiscover: %d switches, %d CAs, %d links", st.Fabric, sw, cas, links)
	}
	lids := 0
	for _, l := range disc.LIDs {
		if l != 0 {
			lids++
		}
	}
	fts, _, err := r.env.DumpFTs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Plan == nil || st.Plan.Metrics.LIDsUsed != lids || len(fts) != sw || st.Plan.Metrics.UnreachableCAPairs != 0 {
		t.Fatalf("status plan %+v; ibnetdiscover: %d LIDs, dump_fts: %d switches", st.Plan, lids, len(fts))
	}
	for guid, lft := range fts {
		for _, l := range disc.LIDs {
			if l != 0 && lft.Port(l) == diags.NoPort {
				t.Fatalf("dump_fts: switch %#x has no route to LID %d although status counts no unreachable pair", guid, l)
			}
		}
	}

	fams := promScrape(t, url)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"ibsm_fabric_nodes", map[string]string{"type": "switch"}, float64(sw)},
		{"ibsm_fabric_nodes", map[string]string{"type": "ca"}, float64(cas)},
		{"ibsm_fabric_links", nil, float64(links)},
		{"ibsm_plan_lids_used", nil, float64(lids)},
		{"ibsm_plan_unreachable_pairs", map[string]string{"kind": "ca"}, 0},
		{"ibsm_plan_max_channel_load", nil, float64(st.Plan.Metrics.MaxChannelLoad)},
		{"ibsm_sm_priority", nil, float64(si.Priority)},
		{"ibsm_sm_state", map[string]string{"state": "master"}, 1},
		{"ibsm_sweeps_total", map[string]string{"kind": "heavy", "outcome": "rerouted"}, 1},
	} {
		if got := promSum(fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := promSum(fams, "ibsm_mads_total", map[string]string{"class": "smp_dr", "attribute": "NodeInfo", "event": "sent"}); n < float64(sw+cas) {
		t.Errorf("%v directed-route NodeInfo requests counted, fewer than the %d nodes", n, sw+cas)
	}
	if n := promSum(fams, "ibsm_mads_total", map[string]string{"attribute": "LinearForwardingTable", "event": "sent"}); n == 0 {
		t.Error("no LFT Sets counted")
	}
	if n := promSum(fams, "ibsm_plugin_call_seconds", map[string]string{"plugin": "updn", "method": "Route"}); n != 1 {
		t.Errorf("updn Route calls %v, want 1", n)
	}
	// saquery's PathRecord query is counted by record and status.
	if _, err := r.env.PathRecords(ctx, disc.LIDs[smNode.Ports[1].GUID], disc.LIDs[nthCA(t, nf, len(caNodes(nf))-1).Ports[1].GUID]); err != nil {
		t.Fatalf("saquery: %v", err)
	}
	if n := promSum(promScrape(t, url), "ibsm_sa_queries_total", map[string]string{"record": "PathRecord", "status": "ok"}); n < 1 {
		t.Errorf("SA PathRecord queries counted: %v", n)
	}

	// Unlink a leaf–spine link.
	var leaf *netfile.Node
	port := 0
	for _, n := range nf.Nodes {
		if n.Type != topology.Switch {
			continue
		}
		for p := 1; p < len(n.Ports) && leaf == nil; p++ {
			if pr := n.Ports[p].Peer; pr != nil && pr.Type == topology.Switch && switchesConnectedWithout(nf, n, p) {
				leaf, port = n, p
			}
		}
		if leaf != nil {
			break
		}
	}
	before := promScrape(t, url)
	if err := r.sim.Unlink(leaf.Name, port); err != nil {
		t.Fatal(err)
	}
	d.waitUp(t, 2, 60*time.Second)
	var after map[string]*dto.MetricFamily
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		after = promScrape(t, url)
		if promSum(after, "ibsm_fabric_links", nil) == float64(links-1) || time.Now().After(end) {
			break
		}
	}
	st2 := statusOf(t, cfg)
	changed := func(name string, labels map[string]string) (float64, float64) {
		return promSum(before, name, labels), promSum(after, name, labels)
	}
	if b, a := changed("ibsm_fabric_links", nil); a != b-1 {
		t.Errorf("links %v → %v after one unlink", b, a)
	}
	if b, a := changed("ibsm_fabric_ports", map[string]string{"state": "active"}); a != b-2 {
		t.Errorf("active ports %v → %v after one unlink", b, a)
	}
	rerouted := map[string]string{"outcome": "rerouted"}
	if b, a := changed("ibsm_sweeps_total", rerouted); a != b+1 {
		t.Errorf("re-routing sweeps %v → %v after one unlink", b, a)
	}
	b, a := changed("ibsm_traps_total", nil)
	bl, al := changed("ibsm_sweeps_total", map[string]string{"kind": "light"})
	t.Logf("after the unlink: traps %v → %v, light sweeps %v → %v; max channel load %d → %d", b, a, bl, al,
		st.Plan.Metrics.MaxChannelLoad, st2.Plan.Metrics.MaxChannelLoad)
	if a <= b {
		t.Errorf("no trap counted after the unlink (ibsim reports the port change with trap 128): %v → %v", b, a)
	}
	if st2.Plan.Key == st.Plan.Key || !st2.Plan.AppliedAt.After(st.Plan.AppliedAt) {
		t.Errorf("the plan in force did not change after the unlink: %s at %s", st2.Plan.Key, st2.Plan.AppliedAt)
	}
	if bm, am := changed("ibsm_plan_applied_timestamp_seconds", nil); am <= bm {
		t.Errorf("plan timestamp metric %v → %v", bm, am)
	}
	if st2.Plan.Metrics.MaxChannelLoad < st.Plan.Metrics.MaxChannelLoad || st2.Plan.Metrics.UnreachableCAPairs != 0 {
		t.Errorf("plan after losing a link: max channel load %d (was %d), unreachable CA pairs %d",
			st2.Plan.Metrics.MaxChannelLoad, st.Plan.Metrics.MaxChannelLoad, st2.Plan.Metrics.UnreachableCAPairs)
	}

	// SIGHUP: priority 14 → 9 and MAD window 16 → 3.
	os.WriteFile(cfg, []byte(strings.Replace(strings.Replace(withMetrics, "priority = 14", "priority = 9", 1), "mad_retries", "mad_window = 3\n  mad_retries", 1)), 0o644)
	d.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, d.log, "configuration reloaded", 1, 30*time.Second)
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		si, err = r.env.SMInfo(ctx)
		if err == nil && si.Priority == 9 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("sminfo after SIGHUP with priority 9: %+v, %v", si, err)
		}
	}
	out, err := ibsmBoth(t, "sweep", "--config", cfg)
	if err != nil || !strings.Contains(out, "heavy sweep done") {
		t.Errorf("ibsm sweep after the reload: %v\n%s", err, out)
	}
	if st3 := statusOf(t, cfg); st3.SM.MADWindow != 3 || st3.SM.Priority != 9 {
		t.Errorf("after SIGHUP: MAD window %d, priority %d; want 3, 9", st3.SM.MADWindow, st3.SM.Priority)
	}
	if got := promSum(promScrape(t, url), "ibsm_mad_window", nil); got != 3 {
		t.Errorf("ibsm_mad_window %v after SIGHUP, want 3", got)
	}
}

func hex64(v uint64) string { return fmt.Sprintf("0x%016x", v) }
