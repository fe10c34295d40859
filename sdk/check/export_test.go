package check

import "reflect"

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
