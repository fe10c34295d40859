package sftree

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// topoOf generates an `ibsm topo` fabric (seeded degradation included).
func topoOf(t testing.TB, args ...string) *topology.Topology {
	t.Helper()
	g, err := topogen.Parse(args)
	if err != nil {
		t.Fatal(err)
	}
	f, err := g.Generate()
	if err != nil {
		t.Fatal(err)
	}
	topo, err := f.Topology()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// TestReachSweep measures switch-pair reachability on topogen's degraded
// trees over seeds 1..5. It is a measurement, not a check of numbers: run
// with SFTREE_REACH="ft3-24,ft3-36,ft2-648".
func TestReachSweep(t *testing.T) {
	env := os.Getenv("SFTREE_REACH")
	if env == "" {
		t.Skip("measurement: set SFTREE_REACH=ft3-24,ft2-648,...")
	}
	args := map[string][]string{
		"ft2-648": {"ft", "--radix", "36", "--levels", "2"},
		"ft3-24":  {"ft", "--radix", "24", "--levels", "3"},
		"ft3-36":  {"ft", "--radix", "36", "--levels", "3"},
	}
	for _, name := range strings.Split(env, ",") {
		for _, frac := range []string{"0.01", "0.05"} {
			for seed := 1; seed <= 5; seed++ {
				topo := topoOf(t, append(append([]string(nil), args[name]...), "--remove-links", frac, "--seed", fmt.Sprint(seed))...)
				g := route.NewGraph(topo)
				base, tree := ftreeBase(t, topo, 0)
				_, rep, err := Route(context.Background(), g, tree, base, Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s %s seed %d: reach %.4f%% unreachable %d withdrawn %d backed-off %d | roots %d | updown %d subtree %d extra %d sibling %d | times %v %v %v %v",
					name, frac, seed, rep.Reachability(), rep.Unreachable, rep.Withdrawn, rep.BackedOff, len(rep.Roots), rep.UpDown, rep.ViaSubtree, rep.ViaExtraRoots, rep.ViaSibling, rep.UpDownTime, rep.CombineTime, rep.VerifyTime, rep.ExtendTime)
			}
		}
	}
}
