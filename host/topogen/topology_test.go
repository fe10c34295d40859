package topogen

import (
	"strings"
	"testing"
)

// Written reads back what Write wrote: the same snapshot Topology builds
// in process, and Parse's error for a bad command line.
func TestWritten(t *testing.T) {
	args := []string{"paper", "--set", "001", "--switches", "64", "--degree", "4", "--seed", "3"}
	got, err := Written(args)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Topology(Paper{Set: "001", Switches: 64, Degree: 4, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash() != want.Hash() || len(got.Nodes) != 128 {
		t.Fatalf("written fabric: %d nodes, hash %x; in process %x", len(got.Nodes), got.Hash(), want.Hash())
	}
	if _, err := Written([]string{"paper", "--set", "001", "--switches", "100", "--degree", "4"}); err == nil || !strings.Contains(err.Error(), "64 or 256") {
		t.Fatalf("bad size: err = %v, want the preset's size error", err)
	}
}
