// Package conf loads ibsm's HCL configuration.
//
// The host owns the fabric {}, sm {}, plugin "<kind>" "<name>" {} and
// routing {} blocks and decodes them here; each plugin owns the attributes
// of its nested config {} block, which are kept as an undecoded hcl.Body and
// decoded later with the schema the plugin reports (Plugin.DecodeConfig).
// Every problem is an hcl.Diagnostic whose Subject points at the operator's
// file, line and column; a configuration with any error yields no Config.
//
// Relative paths (fabric.topology, sm.state_dir, plugin paths) are resolved
// against the directory of the configuration file, not the process's
// working directory, so a config file and the files it names can move
// together.
//
// The file is plain HCL: no variables and no functions are available, which
// keeps decoded values, and so their hashes, a pure function of the file.
package conf

import (
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/ibsm/ibsm/sdk"
)

// Transport names how the host reaches the fabric.
type Transport string

const (
	// TransportSim is the embedded in-process fabric built from a topology file.
	TransportSim Transport = "sim"
	// TransportIBSim talks to a running ibsim process over its sockets.
	TransportIBSim Transport = "ibsim"
	// TransportUMAD uses real hardware through /dev/infiniband/umadN.
	TransportUMAD Transport = "umad"
)

// Defaults applied when an attribute is absent.
const (
	DefaultSweepInterval = 10 * time.Second
	DefaultStateDir      = "/var/lib/ibsm"
	// DefaultMADWindow suits the embedded fabric; on hardware (umad) the
	// default is DefaultMADWindowUMAD, as OpenSM's max_wire_smps: switch
	// management traffic has no flow control, so more in flight means
	// more drops on real switches.
	DefaultMADWindow     = 16
	DefaultMADWindowUMAD = 4
	// DefaultMADWindowIBSim is the window on ibsim, a separate process
	// behind a socket: a window of 16 leaves it waiting on the round trip.
	// Its own floor sweep on ft3-36 gives 214,743 SMPs/s at 16 in flight,
	// 296,793 at 32, 347,043 at 128 and 260,468 at 256 (BENCHMARKS.md).
	DefaultMADWindowIBSim = 128
	// Election defaults, as OpenSM's sminfo_polling_timeout and
	// polling_retry_number.
	DefaultPollingInterval = 10 * time.Second
	DefaultPollingRetries  = 4
	DefaultMADTimeout      = 200 * time.Millisecond
	DefaultMADRetries      = 3
	DefaultPluginTimeout   = 60 * time.Second
	DefaultPriority        = 15
	// DefaultSMKey is OpenSM's default sm_key: two SMs left at their
	// defaults speak the same key (with 0 OpenSM ignores our SMInfo, ERR
	// 2F18, and drops SA requests from tools that send its default, such
	// as osmtest).
	DefaultSMKey       = 1
	DefaultSMPort      = 1
	DefaultUMADPort    = 1
	DefaultIBSimSocket = "sim"
)

// Config is a fully validated configuration.
type Config struct {
	// File is the configuration file's name as given to Load (used in
	// diagnostics); Dir is the absolute directory relative paths resolve
	// against.
	File string
	Dir  string

	Fabric  Fabric
	SM      SM
	Plugins []*Plugin // in declaration order
	Routing Routing
	// Candidate is the candidate {} block (nil when absent).
	Candidate *Candidate
	// Multicast is the multicast {} block (multicast.go).
	Multicast Multicast
	// Partitions are the partition blocks in order, the implicit default
	// partition first when none declares P_Key 0x7fff (partition.go).
	Partitions []Partition
}

// Fabric is the fabric {} block.
type Fabric struct {
	Transport Transport
	// Topology is the absolute path of the topology file (sim only).
	Topology      string
	TopologyRange hcl.Range
	// SMNode is the GUID of the node the SM attaches through (sim and
	// ibsim); 0 lets the transport choose. SMPort is the port on that node
	// (default 1; 0 for a switch's management port).
	SMNode uint64
	SMPort uint8
	// Socket is ibsim's socket base name (IBSIM_SOCKNAME, default "sim");
	// Attach is the ibsim node id or description to attach to ("" = ibsim's
	// default, the first node).
	Socket string
	Attach string
	// Device and Port select the HCA port for umad.
	Device string
	Port   uint8

	DeclRange hcl.Range
}

// SM is the sm {} block.
type SM struct {
	SweepInterval time.Duration // light sweep period
	LMC           uint8         // 0..7
	StateDir      string        // absolute
	MADWindow     int           // outstanding MADs, >= 1
	MADTimeout    time.Duration
	MADRetries    int
	PluginTimeout time.Duration
	Priority      uint8 // SMInfo priority 0..15
	// AuditSMPs is audit_smps as sm.Options takes it: 0 when not set (the
	// SM's default budget), -1 when set to 0 (audit off).
	AuditSMPs int
	// SMKey is the SM_Key (sm_key): SMInfo Sets must carry it, and only
	// who presents it sees it. Default DefaultSMKey; 0: none.
	SMKey uint64
	// PollingInterval and PollingRetries: a standby polls the master this
	// often and takes over after this many failed polls in a row.
	PollingInterval time.Duration
	PollingRetries  int
	// HonorPriority: a master hands over to a better SM that appears.
	HonorPriority bool
	// ArmAhead (arm_ahead, default false) moves the switch ports of
	// Init–Init links to Armed while a cold bring-up's plan is computed
	// (sm.Options.ArmAhead). Off, a refused plan leaves the fabric without
	// a single Set.
	ArmAhead bool
	// MKey (m_key) is the one M_Key every port gets; MKeySecret
	// (m_key_secret) instead gives each port its own key derived from the
	// secret and the port GUID (host/mkey.Derive). At most one is set;
	// neither: ibsm sets no M_Keys.
	MKey       uint64
	MKeySecret string
	// MKeyProtectBits (m_key_protect_bits, 0..3, default 1) and
	// MKeyLeasePeriod (m_key_lease_period, whole seconds up to 65535 s,
	// default 0 = never expires) are what every protected port gets.
	MKeyProtectBits uint8
	MKeyLeasePeriod time.Duration
	// LogLevel (log_level) overrides --log-level; "" keeps the flag's.
	// MetricsListen (metrics_listen) is the Prometheus endpoint's
	// address; "" (the default) serves none. See metrics.go.
	LogLevel, MetricsListen string
}

// DefaultMKeyProtectBits is m_key_protect_bits when keys are configured:
// level 1 hides the key from readers and refuses Sets without it, while
// Gets (ibnetdiscover, smpquery) still work for diagnosis.
const DefaultMKeyProtectBits = 1

// MinMKeySecret is the shortest m_key_secret accepted (bytes).
const MinMKeySecret = 16

// MKeysEnabled reports whether the config sets M_Keys on ports.
func (s *SM) MKeysEnabled() bool { return s.MKey != 0 || s.MKeySecret != "" }

// Plugin is one plugin "<kind>" "<name>" {} block.
type Plugin struct {
	Kind sdk.Kind
	Name string
	// Path is the absolute path of the plugin binary.
	Path      string
	PathRange hcl.Range
	// SHA256 is an optional pin, 64 lower-case hex digits ("" = unpinned).
	SHA256      string
	SHA256Range hcl.Range

	// Body is the plugin's config {} body, undecoded. When the block is
	// absent Body is an empty body located at the plugin block, so
	// DecodeConfig reports missing required attributes there.
	Body      hcl.Body
	HasConfig bool
	// DeclRange is the plugin block's header; ConfigRange the config
	// block's header (DeclRange when absent).
	DeclRange   hcl.Range
	ConfigRange hcl.Range
}

// Routing is the routing {} block. Every name refers to a declared plugin of
// the matching kind.
type Routing struct {
	Engine      string
	Fallback    []string // tried in order when the engine's plan is rejected
	LIDAssigner string
	VLAssigner  string
	// SwitchToSwitch is routing.switch_to_switch: whether the verifier
	// rejects a plan that leaves switch->switch pairs unreachable.
	SwitchToSwitch SwitchToSwitch
	DeclRange      hcl.Range
}

// SwitchToSwitch is the verifier's policy for unreachable switch->switch
// (source switch, DLID of another switch) pairs, routing.switch_to_switch.
//
// Only management traffic travels between switches (an SM or tool on one
// switch's port 0 talking to another's, e.g. vendor switch management,
// perfquery from a managed switch); CA->CA traffic never needs these
// routes. Engines in the OpenSM ftree tradition leave a share of them
// unrouted on purpose, so an operator may accept that. Whatever the policy,
// unreachable CA->CA pairs, forwarding loops and cyclic channel dependency
// graphs always reject a plan.
type SwitchToSwitch string

const (
	// SwitchToSwitchRequired rejects a plan with any unreachable
	// switch->switch pair (the default).
	SwitchToSwitchRequired SwitchToSwitch = "required"
	// SwitchToSwitchBestEffort accepts such a plan; the unreachable pairs
	// are counted, sampled and logged as a warning when it is applied.
	SwitchToSwitchBestEffort SwitchToSwitch = "best_effort"
)

// DefaultSwitchToSwitch applies when routing.switch_to_switch is absent.
const DefaultSwitchToSwitch = SwitchToSwitchRequired

// Plugin returns the declared plugin of kind and name, or nil.
func (c *Config) Plugin(kind sdk.Kind, name string) *Plugin {
	for _, p := range c.Plugins {
		if p.Kind == kind && p.Name == name {
			return p
		}
	}
	return nil
}

// Engines returns the routing engine followed by its fallbacks, in the
// order the host tries them.
func (c *Config) Engines() []*Plugin {
	out := []*Plugin{c.Plugin(sdk.KindRouting, c.Routing.Engine)}
	for _, n := range c.Routing.Fallback {
		out = append(out, c.Plugin(sdk.KindRouting, n))
	}
	return out
}

// LIDAssigner returns the plugin routing.lid_assigner names.
func (c *Config) LIDAssigner() *Plugin { return c.Plugin(sdk.KindLIDAssign, c.Routing.LIDAssigner) }

// VLAssigner returns the plugin routing.vl_assigner names.
func (c *Config) VLAssigner() *Plugin { return c.Plugin(sdk.KindVLAssign, c.Routing.VLAssigner) }
