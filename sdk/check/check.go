// Package check decides whether a plan may be programmed: LIDs (in
// 1..0xBFFF, aligned to 2^LMC, LMC <= 7, unique), forwarding tables (ports
// exist and are up), reachability, loops, per-VL deadlock freedom over
// (channel, VL) pairs and VL capabilities, using sdk/analysis for
// everything that walks the tables. It is the host's own verifier (the
// host's verify package calls it before any Set) and sdktest runs it on
// plugin output, so a plan that passes here passes the host.
package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Rules names the verifier's rules. It changes whenever the same plan may
// get a different verdict, so that verdicts remembered under older rules
// (the pipeline cache) are not reused: "cdg-channel-vl" is the channel
// dependency graph over (channel, VL) pairs, which accepts plans that
// change VL along paths and refuses loops that cross VLs.
const Rules = "cdg-channel-vl"

// Plan is what the pipeline produced for one topology snapshot.
type Plan struct {
	Topo   *topology.Topology
	Routes *plan.Routes  // may be nil when LIDs.Planes carries the trees
	LIDs   *plan.LIDPlan // required
	VLs    *plan.VLPlan  // nil: one SL, one VL
	// Realized are the tables that will be programmed; nil makes Verify
	// realise Routes and LIDs itself.
	Realized *plan.Realized
}

// Options tune Verify. The zero value is usable.
type Options struct {
	// MaxProblems caps the problems listed in the error (default 20).
	MaxProblems int
	// Workers is passed to the analysis (default GOMAXPROCS).
	Workers int
	// RoutesOnly skips the VL checks (CDG per VL, VLCap): used to explain
	// why a VL assigner refused routes (a loop, a hole) before blaming VLs.
	RoutesOnly bool
	// SwitchToSwitch decides what unreachable switch->switch pairs do to
	// the plan (zero value: SwitchRequired).
	SwitchToSwitch SwitchPolicy
	// Metrics fills the report's hops and channel loads, which no rule
	// reads: without it the report holds what the verdict rests on
	// (analysis.Options.VerdictOnly), and a one-VL plan is checked
	// looking at each LFT entry once.
	Metrics bool
}

// SwitchPolicy is the verifier's policy for unreachable switch->switch
// (source switch, DLID of another switch) pairs; its values are those of
// the configuration's routing.switch_to_switch.
//
// Only management traffic between switches uses these routes; CA->CA
// traffic never does, and OpenSM-style ftree engines leave a share of them
// unrouted on purpose. Whatever the policy, unreachable CA->CA pairs,
// forwarding loops, bad LFT entries and cyclic channel dependency graphs
// reject the plan.
type SwitchPolicy string

const (
	// SwitchRequired rejects a plan with any unreachable switch->switch
	// pair. The empty policy means the same.
	SwitchRequired SwitchPolicy = "required"
	// SwitchBestEffort accepts such a plan and reports the unreachable
	// pairs (count and samples) in Verdict.Warnings.
	SwitchBestEffort SwitchPolicy = "best_effort"
)

// valid reports whether p is a known policy ("" is SwitchRequired).
func (p SwitchPolicy) valid() bool {
	return p == "" || p == SwitchRequired || p == SwitchBestEffort
}

// Verdict is what Check says of a plan it accepted (and, when the plan was
// analysable, of one it rejected).
type Verdict struct {
	// Report is the analysis of the realised tables; nil when the plan was
	// too malformed to analyse.
	Report *analysis.Report
	// Warnings describe what the policy let through, one line each with
	// counts and a few samples: unreachable switch->switch pairs under
	// SwitchBestEffort. Empty for a plan without compromise.
	Warnings []string
	// SwitchUnreachable are the switch->switch pairs (source switch, DLID)
	// that do not arrive, and SwitchSamples names some of them; filled
	// whatever the policy.
	SwitchUnreachable int64
	SwitchSamples     []string
}

// warningSamples is how many unreachable pairs a warning line names.
const warningSamples = 3

// Error lists why a plan was rejected.
type Error struct {
	// Summary has one line per kind of problem, with its total count.
	Summary []string
	// Problems are the first problems found, each naming what and where.
	Problems []string
	// Total is the number of problems found (Problems may be capped).
	Total int64
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan rejected: %d problem(s)", e.Total)
	for _, s := range e.Summary {
		fmt.Fprintf(&b, "\n  %s", s)
	}
	if len(e.Problems) > 0 {
		fmt.Fprintf(&b, "\nfirst %d:", len(e.Problems))
		for _, p := range e.Problems {
			fmt.Fprintf(&b, "\n  - %s", p)
		}
	}
	return b.String()
}

// collector gathers problems by kind; the error lists samples round-robin
// over kinds so that one flood (say, unreachable pairs) does not hide the
// others.
type collector struct {
	err     Error
	max     int
	samples [][]string
	single  []string // problems reported one by one (structural checks)
}

// kind records a category total and its sample messages.
func (c *collector) kind(total int64, summary string, samples ...string) {
	if total == 0 {
		return
	}
	c.err.Total += total
	c.err.Summary = append(c.err.Summary, summary)
	c.samples = append(c.samples, samples)
}

func (c *collector) one(format string, args ...any) {
	c.err.Total++
	if len(c.single) < c.max {
		c.single = append(c.single, fmt.Sprintf(format, args...))
	}
}

func (c *collector) result() error {
	if c.err.Total == 0 {
		return nil
	}
	if len(c.err.Summary) == 0 {
		c.err.Summary = append(c.err.Summary, fmt.Sprintf("%d problem(s) in the plan", c.err.Total))
	}
	e := c.err
	e.Problems = nil
	lists := append([][]string{c.single}, c.samples...)
	for i := 0; len(e.Problems) < c.max; i++ {
		added := false
		for _, l := range lists {
			if i < len(l) && len(e.Problems) < c.max {
				e.Problems = append(e.Problems, l[i])
				added = true
			}
		}
		if !added {
			break
		}
	}
	return &e
}

// Verify checks p and returns the analysis of the realised tables (nil when
// the plan is too malformed to analyse) and an *Error listing the problems,
// or nil when the plan may be programmed. Check also returns the warnings
// of an accepted plan.
func Verify(p Plan, opt Options) (*analysis.Report, error) {
	v, err := Check(p, opt)
	if v == nil {
		return nil, err
	}
	return v.Report, err
}

// Check verifies p like Verify and returns its verdict: the analysis and,
// for a plan accepted under a lenient policy, the warnings to log. On
// rejection the error is an *Error; the verdict may be nil.
func Check(p Plan, opt Options) (*Verdict, error) {
	if opt.MaxProblems <= 0 {
		opt.MaxProblems = 20
	}
	if !opt.SwitchToSwitch.valid() {
		return nil, fmt.Errorf("verify: unknown switch_to_switch policy %q: use %q or %q", opt.SwitchToSwitch, SwitchRequired, SwitchBestEffort)
	}
	c := &collector{max: opt.MaxProblems}
	if p.Topo == nil || p.LIDs == nil {
		return nil, fmt.Errorf("verify: plan without topology or LID plan: run the LID assigner before verifying")
	}
	t := p.Topo
	structural := c.err.Total
	checkLIDs(c, t, p.LIDs)
	checkVLPlan(c, t, p.VLs)
	if c.err.Total > structural {
		c.err.Summary = append(c.err.Summary, fmt.Sprintf("%d LID/VL plan problem(s)", c.err.Total-structural))
		return nil, c.result()
	}

	r := p.Realized
	if r == nil {
		var err error
		if r, err = plan.Realize(t, p.Routes, p.LIDs); err != nil {
			c.kind(1, "routes cannot be realised", fmt.Sprintf("realising forwarding tables: %v", err))
			return nil, c.result()
		}
	} else if n := checkRealized(c, t, p.LIDs, r); n > 0 {
		c.err.Summary = append(c.err.Summary, fmt.Sprintf("%d problem(s) in the realised tables", n))
		return nil, c.result()
	}
	if n := checkUnassigned(c, r); n > 0 {
		c.err.Summary = append(c.err.Summary, fmt.Sprintf("%d LFT entries for unassigned LIDs point at unusable ports", n))
	}

	var maxLMC uint8
	for _, pl := range p.LIDs.Ports {
		maxLMC = max(maxLMC, pl.LMC)
	}
	// Planes from the routing engine are whole forwarding trees for every
	// LID of a range, and SA may hand out any of them: all must work.
	allLIDs := maxLMC > 0 && p.LIDs.Planes == nil
	rep, err := analysis.Analyse(r, p.VLs, analysis.Options{Samples: opt.MaxProblems, Workers: opt.Workers, AllLIDs: allLIDs, VerdictOnly: !opt.Metrics})
	if err != nil {
		c.kind(1, "tables cannot be analysed", err.Error())
		return nil, c.result()
	}

	v := &Verdict{Report: rep}
	checkReach(c, v, opt.SwitchToSwitch, maxLMC, allLIDs)
	loops := make([]string, 0, len(rep.Loops))
	for _, l := range rep.Loops {
		loops = append(loops, fmt.Sprintf("loop at switch %s port %d for DLID %d", l.Switch, l.Port, l.DLID))
	}
	c.kind(int64(rep.LoopLIDs), fmt.Sprintf("forwarding loops toward %d LID(s)", rep.LoopLIDs), loops...)
	bad := make([]string, 0, len(rep.BadSamples))
	for _, b := range rep.BadSamples {
		bad = append(bad, fmt.Sprintf("switch %s LFT[%d] = port %d: %s", b.Switch, b.LID, b.Port, badText(b.Code)))
	}
	c.kind(rep.BadEntries, fmt.Sprintf("%d LFT entries point at unusable ports", rep.BadEntries), bad...)
	if opt.RoutesOnly {
		return v.finish(c)
	}
	// The graph's nodes are (channel, VL): a loop that crosses VLs shows
	// under each VL it passes; name it once, under the first.
	reported := map[string]bool{}
	for _, v := range rep.VLs {
		if v.Acyclic {
			continue
		}
		key := cycleKey(v.Cycle)
		if reported[key] {
			continue
		}
		reported[key] = true
		vls := distinctVLs(v.CycleVLs)
		if len(vls) <= 1 {
			c.kind(1, fmt.Sprintf("VL%d channel dependency graph is cyclic (credit loop possible)", v.VL),
				fmt.Sprintf("VL%d dependency cycle: %s -> (back to start); assign these routes to different VLs or use a deadlock-free engine", v.VL, strings.Join(v.Cycle, " -> ")))
			continue
		}
		c.kind(1, fmt.Sprintf("VL%d channel dependency graph is cyclic through VLs %v (credit loop possible)", v.VL, vls),
			fmt.Sprintf("VL%d dependency cycle: %s -> (back to start); the SL2VL tables bring this loop back to a VL it already held: make the VL along each route never return to one it left, or use a deadlock-free engine", v.VL, strings.Join(v.Cycle, " -> ")))
	}
	vlp := make([]string, 0, len(rep.VLProblems))
	for _, v := range rep.VLProblems {
		vlp = append(vlp, v.Message)
	}
	c.kind(int64(rep.VLProblemCount), fmt.Sprintf("%d channel(s) carry VLs their link cannot", rep.VLProblemCount), vlp...)
	if p.VLs != nil && p.VLs.VLs > 0 && len(rep.VLsUsed) > 0 && rep.VLsUsed[len(rep.VLsUsed)-1] >= p.VLs.VLs {
		c.kind(1, "VL plan uses more VLs than it declares",
			fmt.Sprintf("VL plan declares %d VL(s) but traffic uses VLs %v", p.VLs.VLs, rep.VLsUsed))
	}
	return v.finish(c)
}

// cycleKey identifies a cycle whatever hop it starts at.
func cycleKey(cyc []string) string {
	s := append([]string(nil), cyc...)
	sort.Strings(s)
	return strings.Join(s, "|")
}

// distinctVLs lists the VLs of a cycle's hops, ascending.
func distinctVLs(vls []int) []int {
	var m uint16
	for _, v := range vls {
		m |= 1 << v
	}
	var out []int
	for v := range 16 {
		if m&(1<<v) != 0 {
			out = append(out, v)
		}
	}
	return out
}

// finish returns v with c's verdict. A rejected plan lets nothing through,
// so it carries no warnings; its problems are in the error.
func (v *Verdict) finish(c *collector) (*Verdict, error) {
	err := c.result()
	if err != nil {
		v.Warnings = nil
	}
	return v, err
}

// checkReach counts unreachable pairs as problems, except switch->switch
// pairs under SwitchBestEffort, which become a warning on v.
func checkReach(c *collector, v *Verdict, policy SwitchPolicy, maxLMC uint8, allLIDs bool) {
	rep := v.Report
	// A switch is addressed through its port 0 and only switches have one,
	// so a sample whose destination is ".../0" is a switch->switch pair
	// (the analysis walks switch DLIDs from switch sources only).
	var caSamples []string
	for _, u := range rep.Unreachable {
		if strings.HasSuffix(u.Dst, "/0") {
			v.SwitchSamples = append(v.SwitchSamples, u.Message)
		} else {
			caSamples = append(caSamples, u.Message)
		}
	}
	ca, sw := rep.CAPairs, rep.SwitchPairs
	caLost, swLost := ca.Total-ca.Reachable, sw.Total-sw.Reachable
	v.SwitchUnreachable = swLost
	var caLIDLost, swLIDLost int64
	if allLIDs {
		caLIDLost = rep.CALIDPairs.Total - rep.CALIDPairs.Reachable
		swLIDLost = rep.SwitchLIDPairs.Total - rep.SwitchLIDPairs.Reachable
	}
	if policy != SwitchBestEffort {
		all := append(append([]string{}, caSamples...), v.SwitchSamples...)
		c.kind(caLost+swLost,
			fmt.Sprintf("unreachable: %d of %d CA->CA and %d of %d switch->switch (source, DLID) pairs",
				caLost, ca.Total, swLost, sw.Total), all...)
		if allLIDs {
			c.kind(caLIDLost+swLIDLost,
				fmt.Sprintf("unreachable with LMC %d: %d of %d CA->CA and %d of %d switch->switch (source, LID) pairs over every LID of each range",
					maxLMC, caLIDLost, rep.CALIDPairs.Total, swLIDLost, rep.SwitchLIDPairs.Total))
		}
		return
	}
	c.kind(caLost, fmt.Sprintf("unreachable: %d of %d CA->CA (source, DLID) pairs (switch->switch pairs are best effort: %d of %d unreachable, not counted)",
		caLost, ca.Total, swLost, sw.Total), caSamples...)
	if allLIDs {
		c.kind(caLIDLost, fmt.Sprintf("unreachable with LMC %d: %d of %d CA->CA (source, LID) pairs over every LID of each range",
			maxLMC, caLIDLost, rep.CALIDPairs.Total))
	}
	if swLost == 0 && swLIDLost == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d switch->switch (source, DLID) pairs unreachable (%.1f%%)", swLost, sw.Total, 100-sw.Percent())
	if allLIDs && swLIDLost > 0 {
		fmt.Fprintf(&b, ", %d of %d over every LID of each range (LMC %d)", swLIDLost, rep.SwitchLIDPairs.Total, maxLMC)
	}
	b.WriteString(`, accepted because routing.switch_to_switch = "best_effort": management traffic between these switches fails; CA->CA traffic is unaffected`)
	for i, s := range v.SwitchSamples {
		switch i {
		case 0:
			b.WriteString("; e.g. ")
		case warningSamples:
			b.WriteString("; …")
		default:
			b.WriteString("; ")
		}
		if i == warningSamples {
			break
		}
		b.WriteString(s)
	}
	v.Warnings = append(v.Warnings, b.String())
}

func badText(code string) string {
	switch code {
	case analysis.FailNoSuchPort:
		return "the switch has no such port"
	case analysis.FailUnconnected:
		return "the port is not cabled"
	case analysis.FailDown:
		return "the link is not up (PortState below Init at one end)"
	case analysis.FailPort0:
		return "port 0 on a switch that does not own the LID"
	case analysis.FailWrongPort:
		return "delivers to an endpoint that does not own the LID"
	}
	return code
}

func epName(t *topology.Topology, e int) string {
	p := t.Endpoints()[e]
	return fmt.Sprintf("0x%016x/%d", t.Nodes[p.Node].GUID, p.Port)
}

// checkLIDs: every endpoint has 2^LMC LIDs in 1..0xBFFF, aligned, LMC <= 7,
// no LID shared; overrides name real endpoints and offsets.
func checkLIDs(c *collector, t *topology.Topology, l *plan.LIDPlan) {
	eps := t.Endpoints()
	if len(l.Ports) != len(eps) {
		c.one("LID plan has %d ports but the topology has %d endpoints; the LID assigner must answer for every endpoint in Topology.Endpoints() order", len(l.Ports), len(eps))
		return
	}
	owner := make([]int32, plan.MaxUnicastLID+1)
	for e, p := range l.Ports {
		switch {
		case p.LMC > 7:
			c.one("endpoint %s: LMC %d > 7", epName(t, e), p.LMC)
			continue
		case p.Base == 0:
			c.one("endpoint %s has no LID", epName(t, e))
			continue
		case int(p.Base)+p.Count()-1 > plan.MaxUnicastLID:
			c.one("endpoint %s: LIDs %d..%d leave the unicast range 1..0x%X", epName(t, e), p.Base, int(p.Base)+p.Count()-1, plan.MaxUnicastLID)
			continue
		case int(p.Base)%p.Count() != 0:
			c.one("endpoint %s: base LID %d is not aligned to 2^LMC = %d", epName(t, e), p.Base, p.Count())
			continue
		}
		for k := 0; k < p.Count(); k++ {
			lid := int(p.Base) + k
			if o := owner[lid]; o != 0 {
				c.one("LID %d is assigned to both %s and %s", lid, epName(t, int(o-1)), epName(t, e))
				continue
			}
			owner[lid] = int32(e) + 1
		}
	}
	for _, o := range l.Overrides {
		if o.Src < 0 || int(o.Src) >= len(eps) || o.Dst < 0 || int(o.Dst) >= len(eps) {
			c.one("DLID override %d -> %d names an endpoint outside 0..%d", o.Src, o.Dst, len(eps)-1)
			continue
		}
		if int(o.Offset) >= l.Ports[o.Dst].Count() && l.Ports[o.Dst].LMC <= 7 {
			c.one("DLID override %s -> %s: offset %d outside the destination's %d LIDs", epName(t, int(o.Src)), epName(t, int(o.Dst)), o.Offset, l.Ports[o.Dst].Count())
		}
	}
	if l.Rule != plan.DLIDBase && l.Rule != plan.DLIDSpread {
		c.one("LID plan has unknown DLID rule %d", l.Rule)
	}
}

// checkVLPlan: SLs <= 15, SL2VL entries name real ports and map to a VL the
// out port carries (or VL15, which drops).
func checkVLPlan(c *collector, t *topology.Topology, v *plan.VLPlan) {
	if v == nil {
		return
	}
	for lid, sl := range v.SLByDLID {
		if sl > 15 {
			c.one("DLID %d has SL %d > 15", lid, sl)
		}
	}
	ne := len(t.Endpoints())
	for _, o := range v.Overrides {
		if o.SL > 15 {
			c.one("SL override for DLID %d has SL %d > 15", o.DLID, o.SL)
		}
		if o.Src < 0 || int(o.Src) >= ne {
			c.one("SL override for DLID %d names endpoint %d outside 0..%d", o.DLID, o.Src, ne-1)
		}
	}
	for _, en := range v.Default {
		if en > 15 {
			c.one("default SL2VL table maps to VL %d > 15", en)
			break
		}
	}
	for _, en := range v.SL2VL {
		if en.Node < 0 || int(en.Node) >= len(t.Nodes) {
			c.one("SL2VL entry names node %d of %d", en.Node, len(t.Nodes))
			continue
		}
		n := &t.Nodes[en.Node]
		if int(en.In) >= len(n.Ports) || int(en.Out) >= len(n.Ports) {
			c.one("SL2VL entry for 0x%016x in %d out %d: the node has %d ports", n.GUID, en.In, en.Out, n.NumPorts())
			continue
		}
		if n.Type != topology.Switch && (en.In != en.Out || en.Out == 0) {
			c.one("SL2VL entry for CA 0x%016x in %d out %d: a CA port has a single table (in = out = port)", n.GUID, en.In, en.Out)
			continue
		}
		out := topology.PortRef{Node: en.Node, Port: en.Out}
		capv := t.LinkVLs(out)
		for sl, vl := range en.VL {
			if vl != 15 && int(vl) >= capv {
				c.one("SL2VL 0x%016x in %d out %d: SL%d -> VL%d but the link carries %d data VL(s); map to a VL below VLCap or to 15 (drop)", n.GUID, en.In, en.Out, sl, vl, capv)
				break
			}
		}
	}
}

// checkRealized makes sure supplied tables belong to this topology and LID
// plan; it returns the number of problems.
func checkRealized(c *collector, t *topology.Topology, l *plan.LIDPlan, r *plan.Realized) int {
	before := c.err.Total
	if r.Topo != t {
		c.one("realised tables were built for another topology snapshot; realise the plan again")
		return int(c.err.Total - before)
	}
	if r.LIDs != nil && r.LIDs != l {
		c.one("realised tables were built from another LID plan; realise the plan again")
	}
	var top uint16
	for _, p := range l.Ports {
		top = max(top, p.Base+uint16(p.Count())-1)
	}
	if r.TopLID != top {
		c.one("realised tables end at LID %d but the LID plan's top LID is %d", r.TopLID, top)
		return int(c.err.Total - before)
	}
	if len(r.LFT) != len(t.Switches()) {
		c.one("realised tables hold %d switches, topology has %d", len(r.LFT), len(t.Switches()))
		return int(c.err.Total - before)
	}
	for s, row := range r.LFT {
		if len(row) != int(top)+1 {
			c.one("switch 0x%016x LFT has %d entries, want %d", t.Nodes[t.Switches()[s]].GUID, len(row), int(top)+1)
		}
	}
	if len(r.LIDOwner) != int(top)+1 {
		c.one("LID owner table has %d entries, want %d", len(r.LIDOwner), int(top)+1)
		return int(c.err.Total - before)
	}
	want := make([]int32, int(top)+1)
	for e, p := range l.Ports {
		for k := 0; k < p.Count(); k++ {
			want[int(p.Base)+k] = int32(e) + 1
		}
	}
	for lid, o := range r.LIDOwner {
		if o != want[lid] {
			c.one("LID %d: realised owner %d, LID plan says %d", lid, o-1, want[lid]-1)
		}
	}
	return int(c.err.Total - before)
}

// checkUnassigned scans entries of LIDs nobody owns: they are never walked
// by the analysis, but a switch must not be told to use a port it lacks or
// whose link is down.
func checkUnassigned(c *collector, r *plan.Realized) int64 {
	t := r.Topo
	// Few LIDs are unowned (gaps, alignment): list them once instead of
	// scanning every switch's whole table (187 M entries at ft3-56).
	var free []int
	for lid := 1; lid < len(r.LIDOwner); lid++ {
		if r.LIDOwner[lid] == 0 {
			free = append(free, lid)
		}
	}
	var n int64
	for s, node := range t.Switches() {
		ports := t.Nodes[node].Ports
		row := r.LFT[s]
		for _, lid := range free {
			if lid >= len(row) {
				break
			}
			out := row[lid]
			if out == plan.NoPort || out == 0 {
				continue
			}
			if int(out) >= len(ports) || !t.IsLinkUp(topology.PortRef{Node: node, Port: out}) {
				n++
				c.one("switch 0x%016x LFT[%d] (unassigned LID) = port %d, which does not exist or is not up", t.Nodes[node].GUID, lid, out)
			}
		}
	}
	return n
}
