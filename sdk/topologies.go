package sdk

import (
	"math/rand/v2"
	"sync"

	"github.com/ibsm/ibsm/sdk/topology"
)

// FeatureTopologyPatch is the SDK feature (Info.sdk_features on the wire)
// that lets the host send a kind call's topology as a patch of one it sent
// the same plugin before: the nodes that changed, not the 47,824 nodes of
// the largest fat tree in the LID space (~12 MB encoded, decoded and
// rebuilt per call, 0.1-0.2 s of a cable event). Plugin authors need do
// nothing: the SDK keeps what it was sent and patches it.
const FeatureTopologyPatch = "topology-patch"

// sdkFeatures are the protocol features this SDK's server offers.
var sdkFeatures = []string{FeatureTopologyPatch}

// keptTopologies are the last topologies a plugin was sent under a token,
// for patches against them. More than one: the host may run a shadow
// pipeline beside the one in force, each sending its own snapshots.
type keptTopologies struct {
	mu   sync.Mutex
	kept [keptTopos]namedTopology // the most recent first
}

// keptTopos is how many topologies a plugin keeps for patches (they share
// every node a patch did not replace).
const keptTopos = 4

type namedTopology struct {
	token uint64
	topo  *topology.Topology
}

// get returns the topology sent under token, or nil.
func (k *keptTopologies) get(token uint64) *topology.Topology {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range k.kept {
		if n.token == token && token != 0 {
			return n.topo
		}
	}
	return nil
}

// put remembers t under token (0: nothing to remember).
func (k *keptTopologies) put(token uint64, t *topology.Topology) {
	if token == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	copy(k.kept[1:], k.kept[:keptTopos-1])
	k.kept[0] = namedTopology{token, t}
}

// sentTopology is the host side: the last topology a plugin accepted (its
// call succeeded) and its token, the base of the next call's patch.
type sentTopology struct {
	mu    sync.Mutex
	topo  *topology.Topology
	token uint64
}

// next returns a fresh token for t and the base to patch against (nil
// when none is known).
func (s *sentTopology) next() (token uint64, base *topology.Topology, baseToken uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return rand.Uint64() | 1, s.topo, s.token
}

// accepted records that the plugin now holds t under token.
func (s *sentTopology) accepted(t *topology.Topology, token uint64) {
	s.mu.Lock()
	s.topo, s.token = t, token
	s.mu.Unlock()
}

// forget drops the base (the plugin no longer holds it).
func (s *sentTopology) forget() {
	s.mu.Lock()
	s.topo, s.token = nil, 0
	s.mu.Unlock()
}
