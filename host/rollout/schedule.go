package rollout

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Step is one move of the fabric: the switches that take their new tables
// together, part of a declared stage. A stage whose switches cannot all
// change at once without an unverified state is split into several steps.
type Step struct {
	Stage    string   `json:"stage"`
	Switches []int32  `json:"-"`
	GUIDs    []uint64 `json:"guids"`
	// Last marks the stage's last step: the stage's dwell and health gate
	// follow it.
	Last  bool          `json:"last"`
	Dwell time.Duration `json:"dwell"`
}

// Schedule is a verified order of steps from the active plan to the
// candidate.
type Schedule struct {
	Steps []Step `json:"steps"`
	// Analyses is how many states and unions were analysed to find it.
	Analyses int `json:"analyses"`
	// Splits names the stages that had to be split, and why.
	Splits []string `json:"splits,omitempty"`
}

// RefusedError is a rollout no verified order was found for.
type RefusedError struct {
	Stage string
	Err   error
	// Advice says what to do, when the cause is known.
	Advice string
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("stage %q cannot be entered by any verified order of its switches: %v; nothing of it was programmed", e.Stage, e.Err)
	if e.Advice != "" {
		msg += ". Why and what to do: " + e.Advice
	}
	return msg
}

func (e *RefusedError) Unwrap() error { return e.Err }

// MaxAnalyses plus six per switch bound the search for a verified order
// (each try is an analysis of the fabric).
const MaxAnalyses = 100

// Build orders the groups' switches into verified steps from the all-old
// state. Each group is tried whole; a group whose state or transition
// fails is split in halves, each half tried first in turn, a few levels
// deep, then ordered greedily switch by switch; the search stops at its
// budget of analyses. A group that
// cannot be entered is refused with what went wrong (the loop or the
// credit loop named) and no step of a later group is planned.
func Build(c *Checker, groups []Group) (*Schedule, error) {
	t := c.Pair.Old.Rz.Topo
	sws := t.Switches()
	sc := &Schedule{}
	cur := make(State, len(sws))
	for _, g := range groups {
		if len(g.Switches) == 0 {
			continue
		}
		steps, next, err := c.enter(cur, g.Switches)
		if err != nil {
			ref := &RefusedError{Stage: g.Name, Err: err}
			var ul *UnionLoopError
			if errors.As(err, &ul) && c.switchRoutesLoop() {
				ref.Advice = SwitchRoutesAdvice
			}
			sc.Analyses = c.Analyses
			return sc, ref
		}
		if len(steps) > 1 {
			sc.Splits = append(sc.Splits, fmt.Sprintf("stage %q split into %d steps so that every intermediate state verifies", g.Name, len(steps)))
		}
		for i, ws := range steps {
			st := Step{Stage: g.Name, Switches: ws, Last: i == len(steps)-1, Dwell: g.Dwell}
			for _, s := range ws {
				st.GUIDs = append(st.GUIDs, t.Nodes[sws[s]].GUID)
			}
			sc.Steps = append(sc.Steps, st)
		}
		cur = next
	}
	sc.Analyses = c.Analyses
	return sc, nil
}

var errBudget = errors.New("no verified order found within the analysis budget (analyses or time)")

// enter finds steps that take the switches ws of state cur to their new
// tables, each transition verified: the whole group at once, else its
// halves in either order (recursively), else a greedy pass that grows one
// step at a time from the switches whose change verifies, in order.
func (c *Checker) enter(cur State, ws []int32) ([][]int32, State, error) {
	steps, next, err := c.split(cur, ws, 0)
	if err == nil || len(ws) < 2 {
		return steps, next, err
	}
	if steps, next, gerr := c.greedy(cur, ws); gerr == nil {
		return steps, next, nil
	}
	// The whole group's failure is what the operator needs to read (it
	// names the loop or the cycle); the tries after it failed too.
	return nil, nil, err
}

// maxSplitDepth bounds the halving search (2^depth pieces at most).
const maxSplitDepth = 3

func (c *Checker) split(cur State, ws []int32, depth int) ([][]int32, State, error) {
	if c.exhausted() {
		return nil, nil, errBudget
	}
	next := cur.With(ws)
	err := c.Transition(cur, next)
	if err == nil {
		return [][]int32{ws}, next, nil
	}
	if len(ws) == 1 {
		t := c.Pair.Old.Rz.Topo
		return nil, nil, fmt.Errorf("switch 0x%016x: %w", t.Nodes[t.Switches()[ws[0]]].GUID, err)
	}
	if depth >= maxSplitDepth {
		return nil, nil, err
	}
	h := len(ws) / 2
	for _, order := range [2][2][]int32{{ws[:h], ws[h:]}, {ws[h:], ws[:h]}} {
		s1, mid, e1 := c.split(cur, order[0], depth+1)
		if e1 != nil {
			continue
		}
		s2, end, e2 := c.split(mid, order[1], depth+1)
		if e2 != nil {
			continue
		}
		return append(s1, s2...), end, nil
	}
	return nil, nil, err
}

// greedy builds steps one at a time: a step takes, in order, every
// remaining switch whose addition keeps the transition verified.
func (c *Checker) greedy(cur State, ws []int32) ([][]int32, State, error) {
	left := slices.Clone(ws)
	var steps [][]int32
	for len(left) > 0 {
		var step, rest []int32
		for i, s := range left {
			if c.exhausted() {
				return nil, nil, errBudget
			}
			try := append(slices.Clone(step), s)
			if c.Transition(cur, cur.With(try)) == nil {
				step = try
			} else {
				rest = append(rest, left[i])
			}
		}
		if len(step) == 0 {
			return nil, nil, errors.New("no single switch of the rest can change next")
		}
		steps = append(steps, step)
		cur, left = cur.With(step), rest
	}
	return steps, cur, nil
}

// exhausted reports whether the search has used its budget: the analyses
// (enough for a greedy pass or two over every switch) or the time.
func (c *Checker) exhausted() bool {
	return c.Analyses >= MaxAnalyses+6*len(c.Pair.Old.Rz.LFT) || (!c.Deadline.IsZero() && time.Now().After(c.Deadline))
}

// StateAfter returns the state once steps[:n] are applied.
func StateAfter(nsw int, steps []Step, n int) State {
	st := make(State, nsw)
	for _, s := range steps[:n] {
		st = st.With(s.Switches)
	}
	return st
}
