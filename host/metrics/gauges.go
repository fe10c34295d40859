package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// gauges exports a Status taken at scrape time, so the endpoint and
// `ibsm status` read the same figures.
type gauges struct {
	status func() *Status
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	dSMState       = desc("ibsm_sm_state", "1 for the SM's current SMInfo state.", "state")
	dSMPriority    = desc("ibsm_sm_priority", "The SM's SMInfo priority.")
	dMADWindow     = desc("ibsm_mad_window", "MADs the SM keeps outstanding at most.")
	dMADWindowNow  = desc("ibsm_mad_window_now", "MADs the SM keeps outstanding at most now: the adaptive window, halved by timeouts.")
	dNodes         = desc("ibsm_fabric_nodes", "Nodes in the fabric as last discovered, by type.", "type")
	dLinks         = desc("ibsm_fabric_links", "Links with both ends discovered.")
	dPorts         = desc("ibsm_fabric_ports", "Linked ports by PortState.", "state")
	dPlanLIDs      = desc("ibsm_plan_lids_used", "LIDs the plan in force assigns.")
	dPlanPairs     = desc("ibsm_plan_pairs", "Source-destination pairs of the plan in force, by kind (ca, switch).", "kind")
	dPlanUnreach   = desc("ibsm_plan_unreachable_pairs", "Pairs the plan in force does not deliver, by kind (ca, switch).", "kind")
	dPlanMaxLoad   = desc("ibsm_plan_max_channel_load", "Largest number of all-to-all CA routes crossing one channel.")
	dPlanMaxLoadN  = desc("ibsm_plan_max_channel_load_normalized", "Max channel load divided by CAs-1.")
	dPlanVLs       = desc("ibsm_plan_vls_used", "VLs the plan in force uses.")
	dPlanMaxHops   = desc("ibsm_plan_max_hops", "Most switches a CA-CA route of the plan in force crosses.")
	dPlanDeadlock  = desc("ibsm_plan_deadlock_free", "1 if every VL's channel dependency graph is acyclic.")
	dPlanApplied   = desc("ibsm_plan_applied_timestamp_seconds", "When the plan in force was programmed.")
	dPluginUp      = desc("ibsm_plugin_up", "1 if the plugin's process is running.", "plugin", "kind")
	dPluginCalls   = desc("ibsm_plugin_calls_total", "Calls made to the plugin.", "plugin", "kind")
	dPluginRestart = desc("ibsm_plugin_restarts_total", "Times the plugin's process was relaunched.", "plugin", "kind")
	dMADErrors     = desc("ibsm_mad_errors_total", "MAD retries, timeouts and unmatched answers since start.", "kind")
)

func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dSMState, dSMPriority, dMADWindow, dMADWindowNow, dNodes, dLinks, dPorts, dPlanLIDs, dPlanPairs, dPlanUnreach,
		dPlanMaxLoad, dPlanMaxLoadN, dPlanVLs, dPlanMaxHops, dPlanDeadlock, dPlanApplied, dPluginUp, dPluginCalls, dPluginRestart, dMADErrors} {
		ch <- d
	}
}

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	st := g.status()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for _, s := range []string{"discovering", "standby", "not-active", "master"} {
		gauge(dSMState, b2f(st.SM.State == s), s)
	}
	gauge(dSMPriority, float64(st.SM.Priority))
	gauge(dMADWindow, float64(st.SM.MADWindow))
	gauge(dMADWindowNow, float64(st.SM.MADWindowNow))
	gauge(dNodes, float64(st.Fabric.Switches), "switch")
	gauge(dNodes, float64(st.Fabric.CAs), "ca")
	gauge(dLinks, float64(st.Fabric.Links))
	for _, s := range []string{"down", "init", "armed", "active"} {
		gauge(dPorts, float64(st.Fabric.PortsByState[s]), s)
	}
	if p := st.Plan; p != nil && p.Metrics.Error == "" {
		m := p.Metrics
		gauge(dPlanLIDs, float64(m.LIDsUsed))
		gauge(dPlanPairs, float64(m.CAPairs), "ca")
		gauge(dPlanPairs, float64(m.SwitchPairs), "switch")
		gauge(dPlanUnreach, float64(m.UnreachableCAPairs), "ca")
		gauge(dPlanUnreach, float64(m.UnreachableSwitchPair), "switch")
		gauge(dPlanMaxLoad, float64(m.MaxChannelLoad))
		gauge(dPlanMaxLoadN, m.MaxChannelLoadNorm)
		gauge(dPlanVLs, float64(len(m.VLsUsed)))
		gauge(dPlanMaxHops, float64(m.MaxHops))
		gauge(dPlanDeadlock, b2f(m.DeadlockFree))
		gauge(dPlanApplied, float64(p.AppliedAt.UnixNano())/1e9)
	}
	for _, p := range st.Plugins {
		gauge(dPluginUp, b2f(p.Health == "running"), p.Name, p.Kind)
		counter(dPluginCalls, float64(p.Calls), p.Name, p.Kind)
		counter(dPluginRestart, float64(p.Restarts), p.Name, p.Kind)
	}
	counter(dMADErrors, float64(st.Errors.MADRetries), "retry")
	counter(dMADErrors, float64(st.Errors.MADTimeouts), "timeout")
	counter(dMADErrors, float64(st.Errors.MADUnmatched), "unmatched")
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
