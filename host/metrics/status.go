package metrics

import (
	"time"
)

// Status is what `ibsm status` prints and the gauges of the metrics
// endpoint read: one snapshot of the daemon.
type Status struct {
	Time    time.Time `json:"time"`
	Version string    `json:"version"`
	Config  string    `json:"config"`
	Started time.Time `json:"started"`

	SM      SMStatus      `json:"sm"`
	Fabric  FabricStatus  `json:"fabric"`
	Sweeps  SweepStatus   `json:"sweeps"`
	Plan    *PlanStatus   `json:"plan,omitempty"`
	Plugins []PluginState `json:"plugins"`
	Traps   TrapStatus    `json:"traps"`
	Errors  ErrorCounts   `json:"errors"`
}

// SMStatus is the SM's place in the SMInfo protocol.
type SMStatus struct {
	State      string `json:"state"` // discovering, standby, not-active, master
	Role       string `json:"role"`  // master or standby (or the state when neither)
	Priority   uint8  `json:"priority"`
	PortGUID   string `json:"port_guid,omitempty"`
	LID        uint16 `json:"lid,omitempty"`
	Master     string `json:"following,omitempty"` // the master a standby follows
	Contested  bool   `json:"contested,omitempty"`
	Takeovers  int    `json:"takeovers"`
	StepDowns  int    `json:"step_downs"`
	Handovers  int    `json:"handovers"`
	SweepEvery string `json:"sweep_interval"`
	MADWindow  int    `json:"mad_window"`
	// MADWindowNow is the adaptive window in force (1..MADWindow): below
	// MADWindow after timeouts.
	MADWindowNow int    `json:"mad_window_now,omitempty"`
	MADTimeout   string `json:"mad_timeout"`
	MADRetries   int    `json:"mad_retries"`
	LogLevel     string `json:"log_level"`
}

// FabricStatus is the fabric as last discovered.
type FabricStatus struct {
	Nodes    int `json:"nodes"`
	Switches int `json:"switches"`
	CAs      int `json:"cas"`
	Links    int `json:"links"`
	// PortsByState counts physical ports with a peer (switch port 0
	// aside) by PortState: down, init, armed, active.
	PortsByState map[string]int `json:"ports_by_state"`
}

// SweepStatus is the last sweeps of each kind and the counters.
type SweepStatus struct {
	Heavy               *Sweep `json:"last_heavy,omitempty"`
	Incremental         *Sweep `json:"last_incremental,omitempty"`
	Light               *Light `json:"last_light,omitempty"`
	HeavyCount          uint64 `json:"heavy"`
	HeavyFailures       uint64 `json:"heavy_failures"`
	IncrementalCount    uint64 `json:"incremental"`
	IncrementalFailures uint64 `json:"incremental_failures"`
	LightCount          uint64 `json:"light"`
	LightFailures       uint64 `json:"light_failures"`
	Reroutes            uint64 `json:"reroutes"`
}

// PlanStatus is the plan in force.
type PlanStatus struct {
	Key       string       `json:"key"`
	AppliedAt time.Time    `json:"applied_at"`
	Engine    string       `json:"engine"`
	Stages    []StageIdent `json:"stages"`
	Warnings  []string     `json:"warnings,omitempty"`
	Metrics   PlanMetrics  `json:"metrics"`
}

// StageIdent names the plugin behind one pipeline stage.
type StageIdent struct {
	Role    string `json:"role"` // engine, fallback, lid_assigner, vl_assigner
	Name    string `json:"name"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
}

// PlanMetrics are the analysis figures of the plan in force.
type PlanMetrics struct {
	LIDsUsed              int     `json:"lids_used"`
	TopLID                uint16  `json:"top_lid"`
	CAPairs               int64   `json:"ca_pairs"`
	UnreachableCAPairs    int64   `json:"unreachable_ca_pairs"`
	SwitchPairs           int64   `json:"switch_pairs"`
	UnreachableSwitchPair int64   `json:"unreachable_switch_pairs"`
	MaxChannelLoad        int64   `json:"max_channel_load"`
	MaxChannelLoadNorm    float64 `json:"max_channel_load_normalized"`
	MaxHops               int     `json:"max_hops"`
	AvgHops               float64 `json:"avg_hops"`
	VLsUsed               []int   `json:"vls_used"`
	SLsUsed               []int   `json:"sls_used"`
	DeadlockFree          bool    `json:"deadlock_free"`
	Error                 string  `json:"error,omitempty"`
}

// PluginState is one plugin process.
type PluginState struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Version    string `json:"version"`
	SDKVersion string `json:"sdk_version,omitempty"`
	PID        int    `json:"pid"`
	// Health: "running" (process alive), "idle" (not started or
	// stopped; it is launched at the next call) or "dead" (its PID is
	// gone; the next call relaunches it).
	Health   string `json:"health"`
	Calls    uint64 `json:"calls"`
	Restarts uint64 `json:"restarts"`
	Failures uint64 `json:"failures"`
}

// TrapStatus is the recent traps and the counts by trap number.
type TrapStatus struct {
	Recent   []Trap            `json:"recent"`
	ByNumber map[uint16]uint64 `json:"by_number"`
}

// ErrorCounts are the daemon's error counters since it started.
type ErrorCounts struct {
	MADRetries          uint64 `json:"mad_retries"`
	MADTimeouts         uint64 `json:"mad_timeouts"`
	MADUnmatched        uint64 `json:"mad_unmatched"`
	HeavyFailures       uint64 `json:"heavy_sweep_failures"`
	IncrementalFailures uint64 `json:"incremental_sweep_failures"`
	LightFailures       uint64 `json:"light_sweep_failures"`
	SMInfoRefused       int    `json:"sminfo_sets_refused"`
	AuditDifferences    uint64 `json:"audit_differences"`
	AuditRepairFailures uint64 `json:"audit_repair_failures"`
	PluginFailures      uint64 `json:"plugin_failures"`
}

// Fill copies the Recorder's part into st.
func (r *Recorder) Fill(st *Status) {
	c := r.Counts()
	st.Sweeps.Heavy, st.Sweeps.Incremental, st.Sweeps.Light = r.Last()
	st.Sweeps.HeavyCount, st.Sweeps.HeavyFailures = c.HeavySweeps, c.HeavyFailures
	st.Sweeps.IncrementalCount, st.Sweeps.IncrementalFailures = c.IncrementalSweeps, c.IncrementalFailures
	st.Sweeps.LightCount, st.Sweeps.LightFailures = c.LightSweeps, c.LightFailures
	st.Sweeps.Reroutes = c.Reroutes
	st.Traps = TrapStatus{Recent: r.Traps(), ByNumber: c.Traps}
	st.Errors.HeavyFailures, st.Errors.IncrementalFailures, st.Errors.LightFailures = c.HeavyFailures, c.IncrementalFailures, c.LightFailures
}
