package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/integration/benchutil"
)

// TestSummaryParses: what `ibsm run --once` prints at SUBNET UP is what the
// benchmarks and experiments parse (benchutil.ParseSummary), with and
// without the partitions line.
func TestSummaryParses(t *testing.T) {
	base := sm.Report{
		Total: 4257 * time.Millisecond, Nodes: 13284, Switches: 1620, CAs: 11664, Links: 34992, Engine: "sftree", PluginCalls: 3,
		Discovery:    sm.Phase{Time: 617389 * time.Microsecond, Gets: 121514},
		Routing:      sm.Phase{Time: 1452550 * time.Microsecond},
		Stages:       pipeline.Timings{Routing: 430441 * time.Microsecond, LIDs: 71941 * time.Microsecond, VLs: 208979 * time.Microsecond, Verify: 685905 * time.Microsecond},
		Distribution: sm.Phase{Time: 2180679 * time.Microsecond, Gets: 1620, Sets: 493452},
		Program:      program.Stats{LFTBlocksSent: 336960, LFTBlocksTotal: 336960},
	}
	withPKeys := base
	withPKeys.Partitions = sm.Phase{Time: 812500 * time.Microsecond, Gets: 47520, Sets: 11664}
	withPKeys.PKeys = program.PKeyStats{BlocksRead: 47520, EnforceSets: 11664}
	for _, tc := range []struct {
		name string
		r    sm.Report
	}{{"partitions not managed", base}, {"partitions", withPKeys}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			printSummary(&b, &tc.r)
			s, err := benchutil.ParseSummary(b.String())
			if err != nil {
				t.Fatalf("%v\n%s", err, b.String())
			}
			r := tc.r
			if s.SubnetUp != r.Total || s.CAs != r.CAs || s.Discovery != r.Discovery.Time || s.DiscoveryGets != int64(r.Discovery.Gets) ||
				s.Verify != r.Stages.Verify || s.DistributionSets != int64(r.Distribution.Sets) || s.LFTBlocksTotal != r.Program.LFTBlocksTotal ||
				s.Partitions != r.Partitions.Time || s.PartitionGets != int64(r.Partitions.Gets) || s.PartitionSets != int64(r.Partitions.Sets) {
				t.Fatalf("parsed %+v from\n%s", *s, b.String())
			}
		})
	}
}
