// Command deadpush measures a cable that dies under a bring-up's
// distribution, after discovery saw it alive: the aggregation-core cable
// of the SM's pod on the routes of the most switches (1,596 on ft3-56) is
// taken down as the programming phase starts. It times the sweep that
// fails (every SMP for a switch behind the cable would wait out its own
// timeout, the transport's window shrinking on them) and the sweep after
// it, which re-discovers and programs the fabric.
//
//	make build
//	go run ./integration/experiments/deadpush -radix 56
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/integration/benchutil"
	"github.com/ibsm/ibsm/transport/smp"
)

func main() {
	radix := flag.Int("radix", 56, "switch radix of the full 3-level fat tree")
	bin := flag.String("bin", "bin", "directory of the ibsm-plugin-<name> binaries (make build)")
	out := flag.String("out", filepath.Join(os.TempDir(), "deadpush"), "work directory")
	limit := flag.Duration("limit", 10*time.Minute, "bound on the sweep that fails")
	flag.Parse()
	if err := run(*radix, *bin, *out, *limit); err != nil {
		fmt.Fprintln(os.Stderr, "deadpush:", err)
		os.Exit(1)
	}
}

// cutAt takes the cable down when the programming phase starts.
type cutAt struct {
	once sync.Once
	cut  func()
	at   time.Time
}

func (c *cutAt) Phase(name, _ string) {
	if name == "programming" {
		c.once.Do(func() { c.at = time.Now(); c.cut() })
	}
}
func (c *cutAt) Count(string, int64, int64) {}

func run(radix int, bin, out string, limit time.Duration) error {
	bin, err := benchutil.PluginDir(bin, "-bin", "sftree", "sequential", "single")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	name := fmt.Sprintf("ft3-%d", radix)
	net, err := benchutil.WriteFatTree(out, radix)
	if err != nil {
		return err
	}
	ctx := context.Background()
	// A first bring-up finds the routes; the cable is picked on them.
	var (
		parentGUID uint64
		port       uint8
		behind     int
	)
	if err := withApp(ctx, out, name, net, bin, func(a *app.App) error {
		if _, err := a.SM.HeavySweep(ctx); err != nil {
			return fmt.Errorf("bring-up: %w", err)
		}
		cut, parent, n := mostBehind(a.SM.Fabric())
		if cut == nil {
			return fmt.Errorf("no switch has others behind it")
		}
		parentGUID, port, behind = parent.Info.NodeGUID, cut.Path[len(cut.Path)-1], n
		return nil
	}); err != nil {
		return err
	}
	// The same fabric brought up afresh, the cable dying as its tables go
	// out.
	return withApp(ctx, out, name, net, bin, func(a *app.App) error {
		c := &cutAt{cut: func() {
			if err := a.Sim.LinkDown(parentGUID, port); err != nil {
				fmt.Fprintln(os.Stderr, "deadpush: link down:", err)
			}
		}}
		a.SM.SetProgress(c)
		st0 := a.Sim.Stats()
		sweepCtx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		start := time.Now()
		_, err := a.SM.HeavySweep(sweepCtx)
		end := time.Now()
		a.SM.SetProgress(nil)
		fmt.Printf("%s: %d switches behind the cable (switch 0x%016x port %d); the bring-up it died under ended %.2f s after the cable (%.2f s in all)\n  its error: %.300v\n  SMPs lost meanwhile: %d\n",
			name, behind, parentGUID, port, end.Sub(c.at).Seconds(), end.Sub(start).Seconds(), err, a.Sim.Stats().Lost-st0.Lost)
		start = time.Now()
		if _, err := a.SM.HeavySweep(ctx); err != nil {
			return fmt.Errorf("the sweep after: %w", err)
		}
		fmt.Printf("  the sweep after: %.2f s\n", time.Since(start).Seconds())
		return nil
	})
}

// withApp runs f with an ibsm on the embedded fabric of net, from a fresh
// state directory.
func withApp(ctx context.Context, out, name, net, bin string, f func(*app.App) error) error {
	state := filepath.Join(out, "state-"+name)
	if err := os.RemoveAll(state); err != nil {
		return err
	}
	defer os.RemoveAll(state)
	cfg := benchutil.Config{Topology: net, StateDir: state, BinDir: bin, Engine: "sftree", PluginTimeout: "600s"}
	loaded, err := cfg.Load(filepath.Join(out, name+".hcl"))
	if err != nil {
		return err
	}
	a, err := app.New(ctx, loaded, hclog.New(&hclog.LoggerOptions{Name: "deadpush", Level: hclog.Error, Output: os.Stderr}))
	if err != nil {
		return err
	}
	defer a.Close()
	return f(a)
}

// mostBehind returns the switch the most other switches' routes cross,
// the switch before it on its route, and how many cross it.
func mostBehind(model *discovery.Fabric) (cut, parent *discovery.Node, behind int) {
	count := map[*discovery.Node]int{}
	for _, o := range model.Nodes {
		if o.Info.NodeType != smp.NodeTypeSwitch {
			continue
		}
		cur := model.Nodes[model.SMGUID]
		for _, hop := range o.Path {
			if cur != o && cur.Info.NodeType == smp.NodeTypeSwitch {
				count[cur]++
			}
			cur = model.Nodes[cur.Ports[hop].PeerGUID]
		}
	}
	for n, k := range count {
		if len(n.Path) >= 3 && k > behind {
			cut, behind = n, k
		}
	}
	if cut == nil {
		return nil, nil, 0
	}
	parent = model.Nodes[model.SMGUID]
	for _, hop := range cut.Path[:len(cut.Path)-1] {
		parent = model.Nodes[parent.Ports[hop].PeerGUID]
	}
	return cut, parent, behind
}
