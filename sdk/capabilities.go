package sdk

import "slices"

// Capabilities a plugin reports in Info.Capabilities. They announce what a
// plugin does within the protocol (the protocol major itself is the
// go-plugin handshake version). The host reads them at launch and refuses,
// before any plugin is asked for a plan, a pipeline whose plugins cannot
// work together: a routing engine that returns explicit paths with a LID
// assigner that only numbers planes, or an LMC the LID assigner cannot
// give. What a plugin does not declare, the host does not assume; the
// inferences below keep plugins built before these constants were written
// down working as they did.
const (
	// CapLMC: a routing engine returns up to 2^LMC planes per destination
	// (RouteRequest.LMC); a LID assigner gives ports 2^LMC LIDs. A LID
	// assigner without it is refused when sm.lmc > 0.
	CapLMC = "lmc"
	// CapPaths: a routing engine returns paths-form routes (plan.Routes.
	// Paths); a LID assigner numbers paths-form routes (it turns each
	// destination's paths into LIDs). A LID assigner without it numbers
	// planes-form routes only.
	CapPaths = "paths"
	// CapPlanes: a routing engine returns planes-form routes
	// (plan.Routes.Planes). Engines that declare CapLMC and not CapPaths
	// are taken to return planes too (what every planes engine declared
	// before CapPlanes existed). LID assigners number planes whatever they
	// declare (path assigners split planes into paths).
	CapPlanes = "planes"
	// CapRoutesUnread: a LID assigner numbers endpoints from the topology
	// (and the previous LIDs and LMC) without reading the routes. The host
	// then sends only the routes' form and counts: LIDRequest.Routes holds
	// one empty DestPlanes per endpoint for planes-form routes, an empty
	// path list for paths-form ones. On ft3-56 that spares shipping 172 MB
	// of planes the assigner would decode and drop. Assigners without it
	// get the routes in full, as before.
	CapRoutesUnread = "routes-unread"
	// CapEndpointsOnly: a LID assigner (declaring CapRoutesUnread too)
	// whose plan depends on the topology's endpoints alone (each one's
	// port GUID and whether it is a switch's, in Endpoints() order), the
	// LMC, the previous LIDs and its config: not on cables, port states or
	// routes. The host then files its plan under those alone, so a cable
	// going down or up asks it nothing. sdktest checks that two fabrics
	// differing in one cable get the same plan.
	CapEndpointsOnly = "endpoints-only"
	// CapTablesUnread: a VL assigner reads the routes and the LID plan but
	// not the realised forwarding tables, so the SDK does not realise them
	// in the plugin (VLRequest.Realized is nil): on ft3-56 that spares
	// transposing 187 M entries into a second copy of the routes. It
	// concerns the plugin's own SDK only; the host sends the same request.
	CapTablesUnread = "tables-unread"
	// CapOneVL: a VL assigner whose every plan is plan.OneVL() (it only
	// proves that the routing needs no VL separation, or refuses). Its
	// answer is then known once the host's own check of that plan passes,
	// and the host does not ask it (at ft3-56 the call ships 172 MB of
	// planes to prove what the host just proved); it asks when the check
	// fails, and verifies any other answer as usual. sdktest fails a
	// plugin that declares it and answers otherwise.
	CapOneVL = "one-vl"
	// CapStablePlanes: a routing engine that never writes to planes it
	// has returned, so that a destination whose planes are the very
	// slices of its previous answer's is unchanged (an engine that repairs
	// its last routing copy-on-write, as sftree's incremental re-route
	// does). The SDK then hashes only the other destinations to find what
	// changed since the answer the host holds: at the edge of the LID space
	// that is a few thousand planes instead of 187 M entries (~50 ms of CPU
	// a call). sdktest fails an engine that declares it and whose answer of
	// changes misses a change.
	CapStablePlanes = "stable-planes"
)

// HasCapability reports whether the plugin declared capability c.
func (i Info) HasCapability(c string) bool { return slices.Contains(i.Capabilities, c) }

// RouteForm is the form of the routes a routing engine returns.
type RouteForm int

const (
	// FormUnknown: the engine declares neither form; the host cannot
	// check its pairing before it runs.
	FormUnknown RouteForm = iota
	// FormPlanes: destination-based forwarding trees.
	FormPlanes
	// FormPaths: explicit hop lists per (source, destination).
	FormPaths
	// FormBoth: the engine may return either, depending on its config.
	FormBoth
)

func (f RouteForm) String() string {
	switch f {
	case FormPlanes:
		return "planes"
	case FormPaths:
		return "paths"
	case FormBoth:
		return "planes or paths"
	}
	return "unknown"
}

// RouteForm is the form of routes a routing engine's Info says it
// returns: CapPaths and CapPlanes name it; CapLMC alone means planes.
func (i Info) RouteForm() RouteForm {
	paths, planes := i.HasCapability(CapPaths), i.HasCapability(CapPlanes)
	switch {
	case paths && planes:
		return FormBoth
	case paths:
		return FormPaths
	case planes, i.HasCapability(CapLMC):
		return FormPlanes
	}
	return FormUnknown
}

// Numbers reports whether a LID assigner's Info says it numbers routes of
// form f: planes always, paths with CapPaths.
func (i Info) Numbers(f RouteForm) bool {
	switch f {
	case FormPaths:
		return i.HasCapability(CapPaths)
	case FormBoth:
		return i.HasCapability(CapPaths) // it may be handed paths
	}
	return true
}
