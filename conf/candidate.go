package conf

import (
	"path"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/ibsm/ibsm/sdk"
)

// Candidate is the top-level candidate {} block: an alternative pipeline
// computed and verified in shadow every sweep beside the active one, and
// the rules by which it is promoted in stages.
//
//	candidate {
//	  engine  = "sftree"           # lid_assigner, vl_assigner, fallback default to routing's
//	  promote = "auto"             # or "manual" (ibsm rollout promote)
//	  require = ["deadlock_free", "all_pairs_reachable", "max_load_le_active"]
//	  consecutive_sweeps = 3
//	  stage "leaves" { tier = 0      dwell = "10s" }
//	  stage "canary" { fraction = 0.25 }
//	  stage "rest"   { node_desc = "*" }
//	}
type Candidate struct {
	Engine      string
	Fallback    []string
	LIDAssigner string
	VLAssigner  string

	Promote Promote
	// Require lists the criteria an automatic promotion waits for; they
	// must hold for ConsecutiveSweeps shadow computations in a row.
	Require           []Criterion
	ConsecutiveSweeps int
	// Stages are applied in order; switches no stage selects (and that the
	// candidate changes) form a last, implicit stage.
	Stages    []Stage
	DeclRange hcl.Range
}

// Promote is candidate.promote.
type Promote string

// Promotion modes.
const (
	PromoteManual Promote = "manual"
	PromoteAuto   Promote = "auto"
)

// Criterion is one entry of candidate.require.
type Criterion string

// The criteria an automatic promotion can require.
const (
	// RequireDeadlockFree: the candidate's channel dependency graph is
	// acyclic.
	RequireDeadlockFree Criterion = "deadlock_free"
	// RequireAllPairs: every CA->CA and switch->switch pair is reachable.
	RequireAllPairs Criterion = "all_pairs_reachable"
	// RequireMaxLoadLEActive: the candidate's all-to-all max channel load
	// is at most the active plan's.
	RequireMaxLoadLEActive Criterion = "max_load_le_active"
	// RequireNoWorseHops: the candidate's longest route is no longer than
	// the active plan's.
	RequireNoWorseHops Criterion = "max_hops_le_active"
)

var criteria = []Criterion{RequireDeadlockFree, RequireAllPairs, RequireMaxLoadLEActive, RequireNoWorseHops}

// Defaults of the candidate block.
const (
	DefaultConsecutiveSweeps = 3
	DefaultDwell             = 10 * time.Second
)

// DefaultRequire is what promote = "auto" waits for when require is absent.
var DefaultRequire = []Criterion{RequireDeadlockFree, RequireAllPairs}

// Stage is one stage "<name>" {} block. Exactly one selector is set.
type Stage struct {
	Name string
	// GUIDs selects switches by node GUID.
	GUIDs []uint64
	// NodeDesc selects switches whose NodeDescription matches this glob
	// (path.Match syntax: *, ?, [...]).
	NodeDesc string
	// Tier selects the switches at this distance from the CAs in a fat
	// tree (0 = leaves); -1 when not set.
	Tier int
	// Fraction selects this share (0 < f <= 1) of the switches still
	// unpromoted, in GUID order.
	Fraction  float64
	Dwell     time.Duration
	DeclRange hcl.Range
}

var candidateSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "engine"}, {Name: "fallback"}, {Name: "lid_assigner"}, {Name: "vl_assigner"},
		{Name: "promote"}, {Name: "require"}, {Name: "consecutive_sweeps"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "stage", LabelNames: []string{"name"}}},
}

var stageSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "guids"}, {Name: "node_desc"}, {Name: "tier"}, {Name: "fraction"}, {Name: "dwell"},
	},
}

// candidate decodes the candidate block; r is the already decoded routing
// block whose names are the defaults.
func (d *decoder) candidate(b *hcl.Block, r Routing, plugins []*Plugin) *Candidate {
	c := &Candidate{
		Engine: r.Engine, Fallback: r.Fallback, LIDAssigner: r.LIDAssigner, VLAssigner: r.VLAssigner,
		Promote: PromoteManual, ConsecutiveSweeps: DefaultConsecutiveSweeps, DeclRange: b.DefRange,
	}
	body := d.content(b.Body, candidateSchema)
	if body == nil {
		return c
	}
	a := body.Attributes
	ref := func(name string, kind sdk.Kind, dst *string) {
		var v string
		if f := attr(d, a, name, &v); f.ok && d.resolve(plugins, kind, v, "candidate."+name, f.rng) {
			*dst = v
		}
	}
	ref("engine", sdk.KindRouting, &c.Engine)
	ref("lid_assigner", sdk.KindLIDAssign, &c.LIDAssigner)
	ref("vl_assigner", sdk.KindVLAssign, &c.VLAssigner)
	if fa, ok := a["fallback"]; ok {
		c.Fallback = nil
		for _, n := range d.nameList(fa, "fallback", `fallback = ["updn"]`) {
			switch {
			case n.name == c.Engine:
				d.errorf(n.rng, "Fallback repeats the engine",
					"%q is already the candidate's engine; a fallback must be a different engine. Remove it from fallback.", n.name)
			case d.resolve(plugins, sdk.KindRouting, n.name, "candidate.fallback", n.rng):
				c.Fallback = append(c.Fallback, n.name)
			}
		}
	} else {
		// The inherited fallback loses the candidate's own engine:
		// candidate { engine = "updn" } beside fallback = ["updn"].
		c.Fallback = slices.DeleteFunc(slices.Clone(c.Fallback), func(n string) bool { return n == c.Engine })
	}
	var promote string
	if f := attr(d, a, "promote", &promote); f.ok {
		switch p := Promote(promote); p {
		case PromoteManual, PromoteAuto:
			c.Promote = p
		default:
			d.errorf(f.rng, "Invalid promote",
				"promote = %q is not a mode. Use %q (the operator runs `ibsm rollout promote`) or %q (promote when every require criterion held for consecutive_sweeps sweeps).",
				promote, PromoteManual, PromoteAuto)
		}
	}
	if ra, ok := a["require"]; ok {
		for _, n := range d.nameList(ra, "require", `require = ["deadlock_free", "all_pairs_reachable"]`) {
			if !validCriterion(Criterion(n.name)) {
				d.errorf(n.rng, "Unknown criterion", "%q is not a promotion criterion. Use any of %s.", n.name, criterionList())
				continue
			}
			c.Require = append(c.Require, Criterion(n.name))
		}
		if c.Promote != PromoteAuto {
			d.errorf(ra.Range, "require without promote = \"auto\"",
				"require lists the criteria of an automatic promotion, but promote is %q. Set promote = \"auto\" or remove require.", c.Promote)
		}
	} else if c.Promote == PromoteAuto {
		c.Require = append([]Criterion(nil), DefaultRequire...)
	}
	var n int
	if f := attr(d, a, "consecutive_sweeps", &n); f.ok {
		if n < 1 || n > 1000 {
			d.errorf(f.rng, "Invalid consecutive_sweeps",
				"consecutive_sweeps = %d must be 1..1000: the number of shadow computations in a row that must meet every require criterion.", n)
		} else {
			c.ConsecutiveSweeps = n
		}
	}
	seen := map[string]hcl.Range{}
	for _, sb := range body.Blocks {
		if prev, dup := seen[sb.Labels[0]]; dup {
			d.errorf(sb.LabelRanges[0], "Duplicate stage", "stage %q is already declared at %s. Give each stage its own name.", sb.Labels[0], prev)
			continue
		}
		seen[sb.Labels[0]] = sb.DefRange
		if s, ok := d.stage(sb); ok {
			c.Stages = append(c.Stages, s)
		}
	}
	return c
}

type named struct {
	name string
	rng  hcl.Range
}

// nameList decodes a list of strings, reporting duplicates.
func (d *decoder) nameList(a *hcl.Attribute, what, example string) []named {
	elems, diags := hcl.ExprList(a.Expr)
	if diags.HasErrors() {
		d.errorf(a.Expr.Range(), "Invalid "+what, "%s must be a list of strings, e.g. %s.", what, example)
		return nil
	}
	var out []named
	seen := map[string]hcl.Range{}
	for _, e := range elems {
		var s string
		if f := decodeElem(d, e, &s); !f {
			continue
		}
		if prev, dup := seen[s]; dup {
			d.errorf(e.Range(), "Duplicate entry", "%q is already listed in %s at %s. Remove one of them.", s, what, prev)
			continue
		}
		seen[s] = e.Range()
		out = append(out, named{s, e.Range()})
	}
	return out
}

func (d *decoder) stage(b *hcl.Block) (Stage, bool) {
	s := Stage{Name: b.Labels[0], Tier: -1, Dwell: DefaultDwell, DeclRange: b.DefRange}
	if !validName(s.Name) {
		d.errorf(b.LabelRanges[0], "Invalid stage name",
			"%q is not a valid stage name: use 1..64 letters, digits, '_', '-' or '.', starting with a letter or digit.", s.Name)
	}
	c := d.content(b.Body, stageSchema)
	if c == nil {
		return s, false
	}
	a := c.Attributes
	var selectors []string
	if ga, ok := a["guids"]; ok {
		selectors = append(selectors, "guids")
		for _, n := range d.nameList(ga, "guids", `guids = ["0x0002c90300000001"]`) {
			g, err := ParseGUID(n.name)
			if err != nil {
				d.errorf(n.rng, "Invalid GUID", "%v.", err)
				continue
			}
			s.GUIDs = append(s.GUIDs, g)
		}
		if len(s.GUIDs) == 0 && !d.diags.HasErrors() {
			d.errorf(ga.Expr.Range(), "Empty guids", "guids must name at least one switch by node GUID.")
		}
	}
	if f := attr(d, a, "node_desc", &s.NodeDesc); f.present {
		selectors = append(selectors, "node_desc")
		if _, err := path.Match(s.NodeDesc, ""); f.ok && (err != nil || s.NodeDesc == "") {
			d.errorf(f.rng, "Invalid node_desc pattern",
				"node_desc = %q is not a valid glob (use *, ? and [...], e.g. \"leaf*\" or \"*spine 1?\").", s.NodeDesc)
		}
	}
	var tier int
	if f := attr(d, a, "tier", &tier); f.present {
		selectors = append(selectors, "tier")
		if f.ok {
			if tier < 0 || tier > 15 {
				d.errorf(f.rng, "Invalid tier", "tier = %d must be 0..15: the switches' distance from the CAs (0 = leaf switches).", tier)
			} else {
				s.Tier = tier
			}
		}
	}
	if f := attr(d, a, "fraction", &s.Fraction); f.present {
		selectors = append(selectors, "fraction")
		if f.ok && !(s.Fraction > 0 && s.Fraction <= 1) {
			d.errorf(f.rng, "Invalid fraction", "fraction = %g must be in (0, 1]: the share of the switches not yet promoted that this stage takes.", s.Fraction)
		}
	}
	d.duration(a, "dwell", &s.Dwell, "how long the stage is watched before the next one")
	switch len(selectors) {
	case 0:
		d.errorf(b.DefRange, "Stage selects no switch",
			"stage %q needs one of guids = [...], node_desc = \"pattern\", tier = N or fraction = 0.25.", s.Name)
		return s, false
	case 1:
	default:
		d.errorf(b.DefRange, "Stage has several selectors",
			"stage %q sets %v; a stage selects its switches one way. Split it into one stage per selector.", s.Name, selectors)
		return s, false
	}
	return s, true
}

func validCriterion(c Criterion) bool {
	for _, x := range criteria {
		if x == c {
			return true
		}
	}
	return false
}

func criterionList() string {
	s := ""
	for i, c := range criteria {
		if i > 0 {
			s += ", "
		}
		s += string(c)
	}
	return s
}

// CandidateConfig returns a copy of c whose routing block is the
// candidate's pipeline (nil when there is no candidate block): the host
// builds the shadow pipeline from it exactly as it builds the active one.
func (c *Config) CandidateConfig() *Config {
	if c.Candidate == nil {
		return nil
	}
	out := *c
	out.Routing = Routing{
		Engine: c.Candidate.Engine, Fallback: c.Candidate.Fallback,
		LIDAssigner: c.Candidate.LIDAssigner, VLAssigner: c.Candidate.VLAssigner,
		SwitchToSwitch: c.Routing.SwitchToSwitch, DeclRange: c.Candidate.DeclRange,
	}
	out.Candidate = nil
	return &out
}

// decodeElem decodes one list element with gohcl's conversions.
func decodeElem[T any](d *decoder, e hcl.Expression, dst *T) bool {
	diags := gohcl.DecodeExpression(e, nil, dst)
	d.diags = append(d.diags, diags...)
	return !diags.HasErrors()
}
