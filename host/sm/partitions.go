package sm

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/host/verify"
	"github.com/ibsm/ibsm/sdk/topology"
)

// partitionState is the SM's P_Key side: the configured partitions, the
// programmer of P_Key tables and the plan in force. An SM whose
// SetPartitions was never called leaves P_Key tables alone.
type partitionState struct {
	mu    sync.Mutex
	parts []conf.Partition
	set   bool
	pk    *program.PKeys
	plan  *program.PKeyPlan
	stats program.PKeyStats
	// warned is the last set of warnings logged: the same ones are not
	// logged again every sweep.
	warned string
}

// SetPartitions sets the partitions (at start and on SIGHUP); the next
// heavy sweep programs the P_Key blocks that differ from what the ports
// hold, and nothing else. An empty list stops P_Key management (the
// tables stay as they are): a configuration always has at least the
// default partition, so no list means the caller does not manage them.
func (s *SM) SetPartitions(ps []conf.Partition) {
	s.parts.mu.Lock()
	s.parts.parts, s.parts.set = append([]conf.Partition(nil), ps...), len(ps) > 0
	if !s.parts.set {
		s.parts.plan = nil
	}
	s.parts.mu.Unlock()
}

// PKeyPlan is the P_Key plan in force (nil before the first one was
// programmed, or when partitions are not managed).
func (s *SM) PKeyPlan() *program.PKeyPlan {
	s.parts.mu.Lock()
	defer s.parts.mu.Unlock()
	return s.parts.plan
}

// PKeyStats is what the last P_Key programming read and sent.
func (s *SM) PKeyStats() program.PKeyStats {
	s.parts.mu.Lock()
	defer s.parts.mu.Unlock()
	return s.parts.stats
}

// syncPartitions resolves the partitions on fab (as discovered), checks
// the P_Key plan and programs what differs. A plan the verifier rejects
// is logged and changes nothing (the last one stays in force); a failed
// Set is returned, so the sweep is retried.
func (s *SM) syncPartitions(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology, res *pipeline.Result, rep *Report) error {
	s.parts.mu.Lock()
	parts, set := s.parts.parts, s.parts.set
	if set && s.parts.pk == nil {
		s.parts.pk = &program.PKeys{C: s.client, Log: s.Log.Named("pkey"), Parallel: s.Opts.Parallel}
	}
	pk := s.parts.pk
	s.parts.mu.Unlock()
	if !set {
		return nil
	}
	start, st0 := time.Now(), s.T.Stats()
	defer func() {
		rep.Partitions = Phase{Time: time.Since(start)}
		rep.Partitions.Gets, rep.Partitions.Sets = delta(st0, s.T.Stats())
	}()
	mem, warns := program.ResolvePartitions(parts, fab)
	pl, st := pk.Plan(ctx, fab, mem)
	warns = append(warns, pl.Warnings...)
	s.warnPartitions(warns)
	rep.Warnings = append(rep.Warnings, warns...)
	if err := verify.CheckPKeys(verify.PKeyTables{Members: mem, Tables: pl.Tables, Enforce: pl.Enforce}, 0); err != nil {
		s.Log.Error("P_Key tables not programmed; the previous ones stay in force", "error", err)
		rep.Warnings = append(rep.Warnings, err.Error())
		return nil
	}
	lids := planLIDs(topo, res)
	ast, err := pk.Apply(ctx, pl, func(r discovery.PortRef) uint16 { return lids[r] })
	ast.BlocksRead = st.BlocksRead
	rep.PKeys = ast
	s.parts.mu.Lock()
	s.parts.stats = ast
	if err == nil {
		s.parts.plan = pl
	}
	s.parts.mu.Unlock()
	if err != nil {
		return fmt.Errorf("programming P_Key tables: %w (the next sweep retries)", err)
	}
	if ast.BlocksSent+ast.EnforceSets > 0 {
		s.Log.Info("P_Key tables programmed", "partitions", len(parts), "ports", ast.Ports, "blocks_read", ast.BlocksRead,
			"blocks_sent", ast.BlocksSent, "enforcement_sets", ast.EnforceSets)
	}
	return nil
}

// warnPartitions logs the partition warnings when they differ from the
// last ones logged.
func (s *SM) warnPartitions(warns []string) {
	key := strings.Join(warns, "\n")
	s.parts.mu.Lock()
	same := key == s.parts.warned
	s.parts.warned = key
	s.parts.mu.Unlock()
	if same {
		return
	}
	for _, w := range warns {
		s.Log.Warn("partitions", "warning", w)
	}
}

// planLIDs maps every end port to the base LID the plan gives it.
func planLIDs(topo *topology.Topology, res *pipeline.Result) map[discovery.PortRef]uint16 {
	eps := topo.Endpoints()
	out := make(map[discovery.PortRef]uint16, len(eps))
	for i, ep := range eps {
		out[discovery.PortRef{GUID: topo.Nodes[ep.Node].GUID, Port: ep.Port}] = res.Realized.LIDs.Ports[i].Base
	}
	return out
}
