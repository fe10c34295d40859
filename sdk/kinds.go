// Package sdk is everything a plugin author needs: the kind interfaces a
// plugin implements, Serve, and (in sub-packages) the topology and plan types,
// config schemas and the sdktest conformance kit. It imports nothing from the
// host, transports or config loader.
package sdk

import (
	"context"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

// Kind names what a plugin does.
type Kind string

const (
	KindRouting   Kind = "routing_engine"
	KindLIDAssign Kind = "lid_assigner"
	KindVLAssign  Kind = "vl_assigner"
	// KindMulticast computes multicast trees (see multicast.go).
	KindMulticast Kind = "multicast_router"
)

// Info describes a plugin binary.
type Info struct {
	Name    string
	Version string
	Kind    Kind
	// Capabilities are minor-feature flags (CapLMC, CapPaths, CapPlanes);
	// the host refuses a pipeline whose plugins' capabilities do not fit
	// together before anything runs (see capabilities.go).
	Capabilities []string
	// SDKVersion is the version of the SDK the plugin was built with. The
	// SDK fills it in on the wire (plugins leave it empty); the host reads
	// it from GetInfo, records it in the lock file and lists it. Plugins
	// built before SDK 0.2.0 report "".
	SDKVersion string
}

// Plugin is what every kind implements.
type Plugin interface {
	Info() Info
	Schema() schema.Block
	// Configure receives the decoded config block (an object of
	// Schema().ObjectType()); it is called before any kind method and again
	// whenever the operator's config changes.
	Configure(cfg cty.Value) error
}

// RouteRequest is a routing engine's input.
type RouteRequest struct {
	Topo *topology.Topology
	// LMC is the configured LID mask control: engines producing planes may
	// return up to 2^LMC planes per destination.
	LMC uint8
	// Since, set by the host only for a remote engine, is the Token of an
	// earlier answer of the engine whose routes the host still holds: the
	// SDK then sends only the destinations whose planes changed since
	// (plan.Routes.Base). Engines need not read it.
	Since uint64
	// Edits, with Since, says the caller takes an answer of changed
	// entries (plan.Routes.Edits) instead of the changed destinations'
	// whole planes; the SDK sends them when it can (it kept the planes
	// of the answer named Since: an engine that declared CapStablePlanes).
	Edits bool
}

// RoutingEngine decides paths; it knows nothing of LIDs.
type RoutingEngine interface {
	Plugin
	Route(ctx context.Context, req RouteRequest) (*plan.Routes, error)
}

// LIDRequest is a LID assigner's input.
type LIDRequest struct {
	Topo   *topology.Topology
	Routes *plan.Routes
	LMC    uint8
	// Previous maps port GUID to the base LID it held before (persisted by
	// the host); assigners should keep these LIDs where they still fit.
	Previous map[uint64]uint16
}

// LIDAssigner turns routes into addresses.
type LIDAssigner interface {
	Plugin
	AssignLIDs(ctx context.Context, req LIDRequest) (*plan.LIDPlan, error)
}

// VLRequest is a VL assigner's input. Realized holds the forwarding tables
// exactly as they will be programmed (nil for an assigner that declared
// CapTablesUnread: plan.Realize or plan.UsedPlanes give them from Routes
// and LIDs).
type VLRequest struct {
	Topo     *topology.Topology
	Routes   *plan.Routes
	LIDs     *plan.LIDPlan
	Realized *plan.Realized
	// MaxVLs is the smallest VLCap over the fabric's active ports.
	MaxVLs int
}

// VLAssigner makes the realised routing deadlock-free with SLs and VLs.
type VLAssigner interface {
	Plugin
	AssignVLs(ctx context.Context, req VLRequest) (*plan.VLPlan, error)
}
