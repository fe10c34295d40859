package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ibsm/ibsm/integration/benchutil"
	"github.com/ibsm/ibsm/integration/diags"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// osmRun is one OpenSM bring-up on a fresh ibsim: its routing time from
// the log, the CPU it used meanwhile, the engine it says it used, and the
// hash of the LFTs read back (when read).
type osmRun struct {
	route, build, subnetUp float64 // seconds, from the log
	routeCPU, cpu          float64 // user+sys: routing marks; whole run
	engine                 string
	lftHash                string
	load                   float64
}

// tools are the executables the OpenSM side runs.
type tools struct {
	ibsim, opensm, preload string
	diag                   map[string]string
}

func findTools() (*tools, error) {
	ibsim, opensm, preload, err := benchutil.OpenSMTools()
	if err != nil {
		return nil, err
	}
	_, paths, err := diags.FindTools()
	if err != nil {
		return nil, err
	}
	return &tools{ibsim: ibsim, opensm: opensm, preload: preload, diag: paths}, nil
}

// measureOpenSM brings net up once with OpenSM on a fresh ibsim, capped at
// limit, and reads the tables back with dump_fts when readBack is set
// (then rz holds them for scoring).
func measureOpenSM(ctx context.Context, t *tools, work, net, torusConf string, nf *netfile.File, topo *topology.Topology,
	c osmCfg, logLevel string, limit time.Duration, readBack bool) (osmRun, *plan.Realized, error) {
	var r osmRun
	dir, err := os.MkdirTemp(work, "opensm-"+c.key+"-")
	if err != nil {
		return r, nil, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	sim, err := benchutil.StartIBSimWith(ctx, benchutil.IBSimOptions{Path: t.ibsim, NetFile: net, Dir: dir, Ready: 5 * time.Minute})
	if err != nil {
		return r, nil, err
	}
	defer sim.Stop()
	args := c.args
	if c.engine == "torus-2QoS" {
		args = append(slices.Clone(args), "--torus_config", torusConf)
	}
	r.load = benchutil.LoadAvg()
	o, err := benchutil.RunOpenSMWith(ctx, t.opensm, t.preload, sim, dir,
		benchutil.OpenSMOptions{Engine: c.engine, Args: args, LogLevel: logLevel, CPUEvery: 20 * time.Millisecond})
	if err != nil {
		if ctx.Err() != nil {
			return r, nil, fmt.Errorf("capped: no SUBNET UP within %s (%w)", limit, err)
		}
		return r, nil, err
	}
	r.route, r.build, r.subnetUp = o.Phases.Routing.Seconds(), o.Phases.Build.Seconds(), o.Phases.SubnetUp.Seconds()
	r.routeCPU = o.RouteCPU.Seconds()
	r.cpu = (o.Result.UserCPU + o.Result.SysCPU).Seconds()
	r.engine = o.Phases.Engine
	if !readBack {
		return r, nil, nil
	}
	rz, hash, err := readLFTs(ctx, t, sim, dir, nf, topo)
	if err != nil {
		return r, nil, fmt.Errorf("read-back: %w", err)
	}
	r.lftHash = hash
	return r, rz, nil
}

// readLFTs reads every switch's LFT with dump_fts (plus smpdump of the
// block holding the top LID, which dump_fts can leave out) and the LIDs
// from OpenSM's guid2lid, and realises them on topo for the analysis.
func readLFTs(ctx context.Context, t *tools, sim *benchutil.IBSim, dir string, nf *netfile.File, topo *topology.Topology) (*plan.Realized, string, error) {
	// Attach the tools at the last CA: OpenSM attached at the first node.
	host := ""
	for _, n := range nf.Nodes {
		if n.Type != topology.Switch {
			host = n.Name
		}
	}
	env := &diags.Env{Preload: t.preload, Paths: t.diag, Sockname: sim.Sockname, Host: host, Dir: dir, Timeout: 30 * time.Minute}
	fts, out, err := env.DumpFTs(ctx)
	if err != nil {
		return nil, "", err
	}
	dump := filepath.Join(dir, "dump_fts.out")
	if err := os.WriteFile(dump, []byte(out), 0o644); err != nil {
		return nil, "", err
	}
	p, err := diags.LoadPlan(filepath.Join(dir, "guid2lid"), dump)
	if err != nil {
		return nil, "", err
	}
	p.LFTs = fts
	top := p.MaxLID()
	for g, l := range fts {
		data, err := env.LFTBlock(ctx, p.LIDs[g], int(top/64))
		if err != nil {
			return nil, "", fmt.Errorf("smpdump of switch %#016x LFT block %d: %w", g, top/64, err)
		}
		if _, err := diags.MergeBlock(l, int(top/64), data, top); err != nil {
			return nil, "", err
		}
	}
	eps := topo.Endpoints()
	lids := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps))}
	for e, ep := range eps {
		lid, ok := p.LIDs[topo.PortGUID(ep)]
		if !ok {
			return nil, "", fmt.Errorf("endpoint 0x%016x port %d has no LID in guid2lid", topo.Nodes[ep.Node].GUID, ep.Port)
		}
		lids.Ports[e] = plan.PortLID{Base: lid}
	}
	// Every switch's table as read; Realize only shapes the arrays.
	sw := topo.Switches()
	h := sha256.New()
	routes := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	for e := range eps {
		pl := make(plan.Plane, len(sw))
		for s, n := range sw {
			l := fts[topo.Nodes[n].GUID]
			if l == nil {
				return nil, "", fmt.Errorf("dump_fts printed no LFT for switch 0x%016x", topo.Nodes[n].GUID)
			}
			pl[s] = l.Port(lids.Ports[e].Base)
		}
		h.Write(pl)
		routes.Planes[e].Planes = []plan.Plane{pl}
	}
	rz, err := plan.Realize(topo, routes, lids)
	if err != nil {
		return nil, "", err
	}
	return rz, fmt.Sprintf("%x", h.Sum(nil)[:8]), nil
}

// caDeadlockFree says whether the CA→CA traffic of rz on one VL has an
// acyclic channel dependency graph. OpenSM's single-VL engines make only
// that traffic deadlock-free (nue_include_switches is off by default:
// switches' own LIDs get SMP traffic, which VL15 carries), while the
// analysis's CDG also holds the routes to switch LIDs.
func caDeadlockFree(rz *plan.Realized) (bool, error) {
	t := rz.Topo
	sw := t.Switches()
	routes := &plan.Routes{Planes: make([]plan.DestPlanes, len(t.Endpoints()))}
	for e, ep := range t.Endpoints() {
		pl := make(plan.Plane, len(sw))
		for s := range sw {
			pl[s] = plan.NoPort
			if t.Nodes[ep.Node].Type != topology.Switch {
				pl[s] = rz.LFT[s][rz.LIDs.Ports[e].Base]
			}
		}
		routes.Planes[e].Planes = []plan.Plane{pl}
	}
	ca, err := plan.Realize(t, routes, rz.LIDs)
	if err != nil {
		return false, err
	}
	rep, err := analysis.Analyse(ca, nil, analysis.Options{})
	if err != nil {
		return false, err
	}
	return rep.DeadlockFree, nil
}
