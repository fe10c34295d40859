package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/plugins/lib/sftree"
	"github.com/ibsm/ibsm/sdk/route"
)

// TestSftreeReachSweep measures sftree's switch-pair reachability on
// topogen's degraded trees over seeds 1..5. It is a measurement, not a
// check of numbers: run with SFTREE_REACH="ft3-24,ft3-36,ft2-648".
func TestSftreeReachSweep(t *testing.T) {
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
				topo, err := topogen.Written(append(append([]string(nil), args[name]...), "--remove-links", frac, "--seed", fmt.Sprint(seed)))
				if err != nil {
					t.Fatal(err)
				}
				g := route.NewGraph(topo)
				base, res, err := ftree.Route(context.Background(), topo, 0, ftree.Config{})
				if err != nil {
					t.Fatal(err)
				}
				_, rep, err := sftree.Route(context.Background(), g, sftree.FromFtree(res.Tree), base, sftree.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s %s seed %d: reach %.4f%% unreachable %d withdrawn %d backed-off %d | roots %d | updown %d subtree %d extra %d sibling %d | times %v %v %v %v",
					name, frac, seed, rep.Reachability(), rep.Unreachable, rep.Withdrawn, rep.BackedOff, len(rep.Roots), rep.UpDown, rep.ViaSubtree, rep.ViaExtraRoots, rep.ViaSibling, rep.UpDownTime, rep.CombineTime, rep.VerifyTime, rep.ExtendTime)
			}
		}
	}
}
