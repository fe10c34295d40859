package check

import (
	"reflect"

	"github.com/ibsm/ibsm/sdk/topology"
)

// BasisCountsAfresh reports whether d's basis holds the dependency counts
// that counting its plan afresh gives (true while it holds none): what a
// plan checked by its changes and then not kept must leave behind.
func BasisCountsAfresh(d *Delta) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.b == nil || d.b.counts == nil {
		return true
	}
	fresh := &basis{p: d.b.p}
	fresh.build()
	a := reflect.ValueOf(d.b.counts).Elem().FieldByName("n")
	b := reflect.ValueOf(fresh.counts).Elem().FieldByName("n")
	if a.Len() != b.Len() {
		return false
	}
	for i := range a.Len() {
		if a.Index(i).Uint() != b.Index(i).Uint() {
			return false
		}
	}
	return true
}

// BasisTopology is the topology of d's basis (nil for none).
func BasisTopology(d *Delta) *topology.Topology {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.b == nil {
		return nil
	}
	return d.b.p.Topo
}
