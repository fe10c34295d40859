package sdktest

import (
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// BFSRoutes is a deliberately simple reference router for tests and
// examples: one min-hop tree per destination over active inter-switch
// links, lowest port first (route.MinHop with route.LowestPort).
func BFSRoutes(t *topology.Topology) *plan.Routes { return route.MinHop(t, route.LowestPort) }
