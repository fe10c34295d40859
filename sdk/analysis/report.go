// Package analysis measures a realised routing: reachability of every CA→CA
// and switch→switch pair, forwarding loops, bad LFT entries, hop counts,
// channel load under uniform all-to-all traffic and the channel dependency
// graph over (channel, VL) pairs, the VL of every hop taken from the SL2VL
// table of (switch, in-port, out-port). The verifier, the `ibsm verify`
// command and the tests all use this one package so that they never
// disagree.
//
// Every figure is computed per destination LID in O(switches): the LFT of
// every switch is followed once with memoisation, which gives the forwarding
// tree toward the LID; sources, loads and dependencies are then accumulated
// along that tree, dependencies once per distinct SL the LID's sources use
// (its default SL and the SLs of per-source overrides). Destinations are
// spread over goroutines; results are merged in LID order, so the report is
// deterministic. Dependency memory is one bitset of (switch, in, out) per
// (VL, VL) pair in use: one for a single-VL plan.
//
// A verifier asks for the verdict only (Options.VerdictOnly, the default of
// sdk/check): hops and loads are left out, and a one-VL plan without LMC or
// overrides takes a path that reads each LFT entry once, checking it and
// adding its dependency; the general path takes over where that path cannot
// vouch for a chunk of LIDs or the graph has a cycle (lean.go).
//
// On request (Options.Shifts, Options.Bisections) it also routes individual
// flows for the fat-tree quality metrics: the worst channel load over shift
// permutations and the effective bisection bandwidth (traffic.go). These
// cost O(flows·hops) time and O(channels + CAs) memory per worker, and are
// off by default so the SM's verifier does not pay for them.
package analysis

import (
	"fmt"
	"io"
	"strings"
)

// PairStats counts (source, destination) pairs.
type PairStats struct {
	Reachable int64 `json:"reachable"`
	Total     int64 `json:"total"`
}

// Percent is Reachable/Total in percent (100 when there are no pairs).
func (p PairStats) Percent() float64 {
	if p.Total == 0 {
		return 100
	}
	return 100 * float64(p.Reachable) / float64(p.Total)
}

// Complete reports whether every pair is reachable.
func (p PairStats) Complete() bool { return p.Reachable == p.Total }

// Failure codes: why a walk from a switch does not arrive.
const (
	FailNoRoute     = "no-route"     // LFT entry is 0xFF
	FailNoSuchPort  = "no-such-port" // LFT entry beyond the switch's ports
	FailUnconnected = "unconnected"  // LFT entry names a port with no cable
	FailDown        = "link-down"    // LFT entry names a port whose link is not up
	FailPort0       = "port0"        // port 0 on a switch that does not own the LID
	FailWrongPort   = "wrong-port"   // delivered to an endpoint that does not own the LID
	FailLoop        = "loop"         // forwarding loop
	FailSourceLink  = "source-link"  // the source CA has no up link to a switch
)

// Unreachable is one (source, DLID) walk that does not arrive.
type Unreachable struct {
	Src     string `json:"src"` // "0x<node guid>/<port>"
	Dst     string `json:"dst"`
	DLID    uint16 `json:"dlid"`
	Code    string `json:"code"`
	Where   string `json:"where"` // switch (and port) where it went wrong
	Message string `json:"message"`
}

// Loop is a forwarding loop toward DLID, closed at Switch/Port.
type Loop struct {
	DLID   uint16 `json:"dlid"`
	Switch string `json:"switch"` // 0x<guid>
	Port   uint8  `json:"port"`
}

// BadEntry is an LFT entry that can never forward correctly.
type BadEntry struct {
	Switch string `json:"switch"`
	LID    uint16 `json:"lid"`
	Port   uint8  `json:"port"`
	Code   string `json:"code"`
}

// LoadStats is the channel load under uniform all-to-all CA→CA traffic: the
// load of a directed link is the number of (source, destination) routes that
// cross it. Normalised values divide by N−1 (N = CAs), i.e. every CA sends a
// total of 1 to all others, as in Nienaber, Yuan and Duan,
// "On LID Assignment in InfiniBand Networks" (ANCS 2007), §5.2 / Table 3.
type LoadStats struct {
	CAs                     int     `json:"cas"`
	Max                     int64   `json:"max"`
	MaxNormalized           float64 `json:"max_normalized"`
	MaxChannel              string  `json:"max_channel,omitempty"`
	MaxSwitchLink           int64   `json:"max_switch_link"`
	MaxSwitchLinkNormalized float64 `json:"max_switch_link_normalized"`
	MaxSwitchLinkChannel    string  `json:"max_switch_link_channel,omitempty"`
}

// VLStats describes one VL of the channel dependency graph, whose nodes are
// (channel, VL) pairs: a packet holding channel a on VL x and waiting for
// channel b on VL y (y from the SL2VL table of the hop) makes (a, x) →
// (b, y) a dependency.
type VLStats struct {
	VL       int `json:"vl"`
	Channels int `json:"channels"`     // switch channels carrying traffic on this VL
	Edges    int `json:"dependencies"` // distinct dependencies into this VL
	// FromOtherVLs counts the dependencies into this VL whose in-channel
	// is held on another VL (the SL2VL tables change the VL there).
	FromOtherVLs int  `json:"from_other_vls"`
	Acyclic      bool `json:"acyclic"` // no credit loop passes this VL
	// Cycle is one credit loop through this VL, as out-ports
	// "0x<guid>/<port>" in dependency order (the first depends on the
	// last); when the loop crosses VLs each hop ends in " (VL<n>)".
	Cycle []string `json:"cycle,omitempty"`
	// CycleVLs is the VL of each hop of Cycle.
	CycleVLs []int `json:"cycle_vls,omitempty"`
}

// VLProblem is a VL use the hardware cannot carry (VL beyond the port's VLCap
// or traffic mapped to VL15, which drops it).
type VLProblem struct {
	Channel string `json:"channel"`
	VL      int    `json:"vl"`
	VLCap   int    `json:"vlcap"`
	Message string `json:"message"`
}

// Report is the result of Analyse. Slices of samples are capped at
// Options.Samples; the matching counts are totals.
type Report struct {
	Switches  int    `json:"switches"`
	CAs       int    `json:"cas"`
	Endpoints int    `json:"endpoints"`
	LIDsUsed  int    `json:"lids_used"`
	TopLID    uint16 `json:"top_lid"`
	MaxLMC    uint8  `json:"max_lmc"`
	// AllLIDs is set when every LID of every range was treated as used by
	// every source (Options.AllLIDs).
	AllLIDs bool `json:"all_lids"`

	// CAPairs and SwitchPairs count pairs over the DLID each source selects
	// (LIDPlan rule and overrides). CALIDPairs/SwitchLIDPairs count
	// (source, LID) over every LID of each destination's range.
	CAPairs        PairStats     `json:"ca_pairs"`
	SwitchPairs    PairStats     `json:"switch_pairs"`
	CALIDPairs     PairStats     `json:"ca_lid_pairs"`
	SwitchLIDPairs PairStats     `json:"switch_lid_pairs"`
	Unreachable    []Unreachable `json:"unreachable,omitempty"`

	LoopLIDs   int        `json:"loop_lids"`
	Loops      []Loop     `json:"loops,omitempty"`
	BadEntries int64      `json:"bad_entries"`
	BadSamples []BadEntry `json:"bad_entry_samples,omitempty"`

	// Hops[h] is the number of reachable CA→CA pairs whose route traverses
	// h switches (a pair on one leaf switch has 1).
	Hops    []int64 `json:"hops"`
	MaxHops int     `json:"max_hops"`
	AvgHops float64 `json:"avg_hops"`

	Load LoadStats `json:"load"`
	// VerdictOnly is set when Options.VerdictOnly left Hops, MaxHops,
	// AvgHops and Load out (zero).
	VerdictOnly bool `json:"verdict_only,omitempty"`
	// Shift and EBB are the fat-tree quality metrics, present when
	// Options asked for them.
	Shift *ShiftStats `json:"shift,omitempty"`
	EBB   *EBBStats   `json:"ebb,omitempty"`

	VLs          []VLStats   `json:"vls"`
	VLsUsed      []int       `json:"vls_used"`
	SLsUsed      []int       `json:"sls_used"`
	DeadlockFree bool        `json:"deadlock_free"`
	VLProblems   []VLProblem `json:"vl_problems,omitempty"`
	// VLProblemCount counts channels with a VL problem.
	VLProblemCount int `json:"vl_problem_count"`
}

// OK reports whether the routing is complete, loop-free, deadlock-free and
// within the ports' VL capabilities.
func (r *Report) OK() bool {
	return r.CAPairs.Complete() && r.SwitchPairs.Complete() &&
		(!r.AllLIDs || (r.CALIDPairs.Complete() && r.SwitchLIDPairs.Complete())) &&
		r.LoopLIDs == 0 && r.BadEntries == 0 && r.DeadlockFree && r.VLProblemCount == 0
}

// Text writes a human-readable summary.
func (r *Report) Text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fabric: %d switches, %d CAs, %d endpoints; %d LIDs used (top LID %d), max LMC %d\n",
		r.Switches, r.CAs, r.Endpoints, r.LIDsUsed, r.TopLID, r.MaxLMC)
	pair := func(name string, p PairStats) {
		fmt.Fprintf(&b, "%-30s %7.3f%% (%d of %d reachable)\n", name, p.Percent(), p.Reachable, p.Total)
	}
	pair("CA->CA reachability:", r.CAPairs)
	pair("switch->switch reachability:", r.SwitchPairs)
	if r.MaxLMC > 0 || r.AllLIDs {
		pair("CA->CA, every LID:", r.CALIDPairs)
		pair("switch->switch, every LID:", r.SwitchLIDPairs)
	}
	for _, u := range r.Unreachable {
		fmt.Fprintf(&b, "  unreachable: %s\n", u.Message)
	}
	fmt.Fprintf(&b, "forwarding loops: %d LIDs\n", r.LoopLIDs)
	for _, l := range r.Loops {
		fmt.Fprintf(&b, "  loop at switch %s port %d for DLID %d\n", l.Switch, l.Port, l.DLID)
	}
	fmt.Fprintf(&b, "bad LFT entries: %d\n", r.BadEntries)
	for _, e := range r.BadSamples {
		fmt.Fprintf(&b, "  switch %s LID %d -> port %d: %s\n", e.Switch, e.LID, e.Port, e.Code)
	}
	if r.VerdictOnly {
		b.WriteString("hops and channel load: not computed (verdict only)\n")
	} else {
		fmt.Fprintf(&b, "hops (switches traversed, CA->CA): max %d, average %.3f\n", r.MaxHops, r.AvgHops)
		for h, n := range r.Hops {
			if n > 0 {
				fmt.Fprintf(&b, "  %2d: %d\n", h, n)
			}
		}
		fmt.Fprintf(&b, "channel load (all-to-all, %d CAs): max %d (%.3f normalised) on %s; max switch-to-switch %d (%.3f) on %s\n",
			r.Load.CAs, r.Load.Max, r.Load.MaxNormalized, orDash(r.Load.MaxChannel),
			r.Load.MaxSwitchLink, r.Load.MaxSwitchLinkNormalized, orDash(r.Load.MaxSwitchLinkChannel))
	}
	if s := r.Shift; s != nil {
		which := "all"
		if !s.All {
			which = fmt.Sprintf("sample, seed %d", s.Seed)
		}
		fmt.Fprintf(&b, "shift permutations (%d CAs, %d shifts, %s): worst load %d at shift %d on %s; mean of per-shift max %.3f; congestion-free %d of %d; unrouted flows %d (%.0f ms)\n",
			s.CAs, s.Shifts, which, s.Worst, s.WorstShift, orDash(s.WorstChannel), s.Mean, s.CongestionFree, s.Shifts, s.UnroutedFlows, s.Millis)
		fmt.Fprintf(&b, "  CA order: %s\n", s.Order)
	}
	if e := r.EBB; e != nil {
		fmt.Fprintf(&b, "effective bisection bandwidth: %.4f (%d bisections, seed %d; min %.4f, max %.4f; %d flows, %d unrouted) (%.0f ms)\n",
			e.EBB, e.Bisections, e.Seed, e.Min, e.Max, e.Flows, e.UnroutedFlows, e.Millis)
	}
	fmt.Fprintf(&b, "SLs used: %v; VLs used: %v\n", r.SLsUsed, r.VLsUsed)
	for _, v := range r.VLs {
		cross := ""
		if v.FromOtherVLs > 0 {
			cross = fmt.Sprintf(", %d from other VLs", v.FromOtherVLs)
		}
		if v.Acyclic {
			fmt.Fprintf(&b, "  VL%d: CDG acyclic (%d channels, %d dependencies%s)\n", v.VL, v.Channels, v.Edges, cross)
		} else {
			fmt.Fprintf(&b, "  VL%d: CDG CYCLIC (%d channels, %d dependencies%s): %s\n", v.VL, v.Channels, v.Edges, cross, strings.Join(v.Cycle, " -> "))
		}
	}
	if r.DeadlockFree {
		b.WriteString("deadlock-free: yes\n")
	} else {
		b.WriteString("deadlock-free: NO\n")
	}
	fmt.Fprintf(&b, "VL problems: %d\n", r.VLProblemCount)
	for _, p := range r.VLProblems {
		fmt.Fprintf(&b, "  %s\n", p.Message)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
