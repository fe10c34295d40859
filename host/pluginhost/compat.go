package pluginhost

import (
	"errors"
	"fmt"

	"github.com/ibsm/ibsm/sdk"
)

// Member is one plugin of a routing pipeline as Pipeline.Check sees it.
type Member struct {
	// Role is the setting that names it: "routing.engine",
	// "routing.fallback", "routing.lid_assigner", "routing.vl_assigner".
	Role string
	Name string
	// Where is its plugin block's location, for messages.
	Where string
	Info  sdk.Info
}

func (m Member) String() string {
	s := fmt.Sprintf("%s %q", m.Role, m.Name)
	if m.Where != "" {
		s += " (" + m.Where + ")"
	}
	return s
}

// Pipeline is the routing pipeline as configured: the engine and its
// fallbacks (each may feed the LID assigner), the LID and VL assigners,
// and sm.lmc.
type Pipeline struct {
	Engines []Member
	LID     Member
	VL      Member
	LMC     uint8
}

// Check returns an error naming both plugins of every pair whose declared
// capabilities (sdk.CapLMC, sdk.CapPaths, sdk.CapPlanes) cannot work
// together, nil if there is none. It runs on what the plugins reported at
// launch, before any of them is asked for a plan. What no plugin declares
// is not guessed: an engine that declares no route form is not checked.
func (pl Pipeline) Check() error {
	var errs []error
	for _, e := range pl.Engines {
		form := e.Info.RouteForm()
		if !pl.LID.Info.Numbers(form) {
			errs = append(errs, fmt.Errorf("%s returns %s-form routes (capabilities %q), but %s numbers planes-form routes only (it does not declare %q): "+
				"pair the engine with a LID assigner that declares %q (a path LID assigner such as greedy or color-l), or choose a planes-form engine",
				e, form, e.Info.Capabilities, pl.LID, sdk.CapPaths, sdk.CapPaths))
		}
	}
	if pl.LMC > 0 && !pl.LID.Info.HasCapability(sdk.CapLMC) && len(pl.Engines) > 0 {
		e := pl.Engines[0]
		what := fmt.Sprintf("routes for %d LIDs per port", 1<<pl.LMC)
		if e.Info.HasCapability(sdk.CapLMC) && e.Info.RouteForm() != sdk.FormPaths {
			what = fmt.Sprintf("up to %d planes per destination", 1<<pl.LMC)
		}
		errs = append(errs, fmt.Errorf("with sm.lmc = %d, %s returns %s, but %s does not declare %q and cannot give ports %d LIDs: "+
			"set lmc = 0 or use a LID assigner that declares %q",
			pl.LMC, e, what, pl.LID, sdk.CapLMC, 1<<pl.LMC, sdk.CapLMC))
	}
	return errors.Join(errs...)
}
