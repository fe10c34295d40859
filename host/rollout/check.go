package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Checker verifies forwarding states and transitions with sdk/analysis.
// It remembers each state's verdict (states recur while a schedule is
// searched) and counts the analyses it ran.
type Checker struct {
	Pair Pair
	// Workers bounds the analysis goroutines (0: GOMAXPROCS).
	Workers int
	// Deadline, when set, ends the search for a verified order (Build
	// refuses what it has not ordered by then).
	Deadline time.Time

	oldRep, newRep *analysis.Report
	states         map[string]error
	// Analyses counts analysis runs (states and unions).
	Analyses int
}

// NewChecker analyses both end plans; an error means a plan is malformed
// or the pair cannot be staged.
func NewChecker(p Pair, workers int) (*Checker, error) {
	if err := p.Stageable(); err != nil {
		return nil, err
	}
	c := &Checker{Pair: p, Workers: workers, states: map[string]error{}}
	var err error
	if c.oldRep, err = c.analyse(p.Old); err != nil {
		return nil, fmt.Errorf("analysing the active plan: %w", err)
	}
	if c.newRep, err = c.analyse(p.New); err != nil {
		return nil, fmt.Errorf("analysing the candidate: %w", err)
	}
	return c, nil
}

func (c *Checker) allLIDs() bool {
	for _, p := range c.Pair.Old.Rz.LIDs.Ports {
		if p.LMC > 0 {
			return true
		}
	}
	return false
}

func (c *Checker) analyse(p Plan) (*analysis.Report, error) {
	return c.analyseLIDs(p, c.allLIDs())
}

// analyseLIDs analyses p; allLIDs counts every LID of every range as used
// (a union plan needs it: its upper LIDs are the second state's).
func (c *Checker) analyseLIDs(p Plan, allLIDs bool) (*analysis.Report, error) {
	c.Analyses++
	return analysis.Analyse(p.Rz, p.VLs, analysis.Options{Workers: c.Workers, AllLIDs: allLIDs, Samples: 3})
}

// Reports returns the analyses of the active and the candidate plan.
func (c *Checker) Reports() (old, new *analysis.Report) { return c.oldRep, c.newRep }

// State checks one forwarding state: every CA pair delivered, no
// switch->switch pair lost that both end plans deliver (a state may not
// route fewer than the weaker plan), no loop, no bad entry, an acyclic
// dependency graph and no VL the hardware cannot carry.
func (c *Checker) State(st State) error {
	k := st.key()
	if err, ok := c.states[k]; ok {
		return err
	}
	rep, err := c.analyse(c.Pair.Mix(st))
	if err == nil {
		err = c.judge(rep, "the mixed state")
	}
	c.states[k] = err
	return err
}

func (c *Checker) judge(rep *analysis.Report, what string) error {
	minSw := min(c.oldRep.SwitchPairs.Reachable, c.newRep.SwitchPairs.Reachable)
	switch {
	case rep.LoopLIDs > 0:
		l := rep.Loops[0]
		return fmt.Errorf("%s has a forwarding loop toward LID %d closed at switch %s port %d (%d LIDs loop)", what, l.DLID, l.Switch, l.Port, rep.LoopLIDs)
	case !rep.CAPairs.Complete() || (rep.AllLIDs && !rep.CALIDPairs.Complete()):
		return fmt.Errorf("%s loses CA pairs: %d of %d delivered%s", what, rep.CAPairs.Reachable, rep.CAPairs.Total, sample(rep))
	case rep.SwitchPairs.Reachable < minSw:
		return fmt.Errorf("%s delivers %d switch pairs, fewer than both plans (%d)%s", what, rep.SwitchPairs.Reachable, minSw, sample(rep))
	case !rep.DeadlockFree:
		return fmt.Errorf("%s has a credit loop: %s", what, cycle(rep))
	case rep.VLProblemCount > 0:
		return fmt.Errorf("%s uses VLs the ports cannot carry: %s", what, rep.VLProblems[0].Message)
	}
	return nil
}

func sample(rep *analysis.Report) string {
	if len(rep.Unreachable) == 0 {
		return ""
	}
	u := rep.Unreachable[0]
	return fmt.Sprintf(", e.g. %s -> %s (DLID %d): %s at %s", u.Src, u.Dst, u.DLID, u.Code, u.Where)
}

func cycle(rep *analysis.Report) string {
	for _, v := range rep.VLs {
		if !v.Acyclic && len(v.Cycle) > 0 {
			return fmt.Sprintf("VL%d cycle %s -> (back to the first)", v.VL, strings.Join(v.Cycle, " -> "))
		}
	}
	return "cycle not reported"
}

// Transition checks moving from state from to state to (to is checked
// too): the dependencies of both states together must be acyclic, with
// the switches that change on their old and on their new SL2VL tables.
func (c *Checker) Transition(from, to State) error {
	if err := c.State(to); err != nil {
		return err
	}
	a, b := c.Pair.Mix(from), c.Pair.Mix(to)
	u, err := union(a, b)
	if err != nil {
		return err
	}
	rep, err := c.analyseLIDs(u, true)
	if err != nil {
		return err
	}
	if !rep.DeadlockFree {
		return &UnionLoopError{Cycle: cycle(rep)}
	}
	if rep.LoopLIDs > 0 {
		return fmt.Errorf("the union of both states loops toward LID %d", rep.Loops[0].DLID)
	}
	// Switches whose SL2VL tables change: the in-flight old packets may
	// meet either table, so check the union on the old tables as well.
	var flip []int32
	diff := c.Pair.sl2vlDiffers()
	for s := range to {
		if to[s] && !from[s] && diff[s] {
			flip = append(flip, int32(s))
		}
	}
	if len(flip) == 0 {
		return nil
	}
	if u, err = union(a, Plan{Rz: b.Rz, VLs: c.Pair.mixVLs(to, flip)}); err != nil {
		return err
	}
	rep, err = c.analyseLIDs(u, true)
	if err != nil {
		return err
	}
	if !rep.DeadlockFree {
		return &UnionLoopError{Cycle: cycle(rep), SL2VL: true}
	}
	return nil
}

// UnionLoopError is a transition whose old and new tables together close
// a credit loop.
type UnionLoopError struct {
	Cycle string
	// SL2VL: found with the changing switches on their old SL2VL tables.
	SL2VL bool
}

func (e *UnionLoopError) Error() string {
	if e.SL2VL {
		return "old and new tables together close a credit loop while the switches change their SL2VL tables: " + e.Cycle
	}
	return "old and new tables together close a credit loop while the switches change: " + e.Cycle
}

// switchRoutesLoop reports whether the credit loops of the pair's
// transitions come from the routes toward switches (the DLIDs of switch
// port 0): the union of the whole old and the whole new plan is cyclic,
// and acyclic without those routes.
func (c *Checker) switchRoutesLoop() bool {
	full, err := union(c.Pair.Old, c.Pair.New)
	if err != nil {
		return false
	}
	rep, err := c.analyseLIDs(full, true)
	if err != nil || rep.DeadlockFree {
		return false
	}
	caOnly, err := union(withoutSwitchLIDs(c.Pair.Old), withoutSwitchLIDs(c.Pair.New))
	if err != nil {
		return false
	}
	rep, err = c.analyseLIDs(caOnly, true)
	return err == nil && rep.DeadlockFree
}

// withoutSwitchLIDs is p with nothing forwarded toward a switch's LID.
func withoutSwitchLIDs(p Plan) Plan {
	t := p.Rz.Topo
	rz := *p.Rz
	rz.LFT = make([][]uint8, len(p.Rz.LFT))
	for s, row := range p.Rz.LFT {
		rz.LFT[s] = slices.Clone(row)
		for lid, own := range p.Rz.LIDOwner {
			if own > 0 && lid < len(row) && t.Nodes[t.Endpoints()[own-1].Node].Type == topology.Switch {
				rz.LFT[s][lid] = plan.NoPort
			}
		}
	}
	return Plan{Rz: &rz, VLs: p.VLs}
}

// SwitchRoutesAdvice is what to do when only the routes toward switches
// keep a pair from being staged.
const SwitchRoutesAdvice = "the credit loop is closed by the routes toward switches (switch-to-switch management traffic): " +
	"the two plans route some pair of switches through turns in different parts of the fabric (on a fat tree: core-to-core " +
	"routes turning in different pods), and each order of per-switch steps lets packets of one plan cross the other's turn; " +
	"the routes between CAs alone stage fine. What to do: make the plans agree on switch-to-switch routes, e.g. for an updn " +
	"active plan on a fat tree set auto_roots = \"spines\" in its plugin config with routing.switch_to_switch = \"best_effort\" " +
	"(updn then leaves core-to-core pairs unrouted, as OpenSM's ftree does), reload, and promote again; or make the candidate " +
	"the routing block and reload, which programs it at once without staged verification"

func (st State) key() string {
	b := make([]byte, (len(st)+7)/8)
	for i, v := range st {
		if v {
			b[i/8] |= 1 << (i % 8)
		}
	}
	return string(b)
}
