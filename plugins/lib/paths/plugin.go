package paths

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

// Version is the version both path routing engines report.
const Version = "0.1.0"

// Kind is which path routing engine a binary serves; its string is the
// plugin name operators write in HCL and the logger's name.
type Kind string

const (
	// KindShortestWidest routes each pair on the widest of its shortest
	// legal paths (ShortestWidestOpts).
	KindShortestWidest Kind = "shortest-widest"
	// KindPathSelection selects one of k shortest legal paths per pair by
	// unloading the busiest channel (PathSelectionOpts); it alone takes k,
	// max_stretch and granularity.
	KindPathSelection Kind = "path-selection"
)

// withK says whether the kind takes path-selection's extra attributes.
func (k Kind) withK() bool { return k == KindPathSelection }

func (k Kind) valid() bool { return k == KindShortestWidest || k == KindPathSelection }

// Main is the whole main function of the two path routing engine binaries.
func Main(k Kind) {
	if !k.valid() {
		// A binary built with an unknown kind is a programming error; failing
		// at start names it instead of failing every Route.
		panic(fmt.Sprintf("paths.Main: unknown path engine %q (want %q or %q)", k, KindShortestWidest, KindPathSelection))
	}
	sdk.Serve(NewEngine(k, sdk.Logger(string(k))))
}

// Engine is the routing engine both path plugins serve, one Kind each.
type Engine struct {
	kind Kind
	log  hclog.Logger
	cfg  Config
}

var _ sdk.RoutingEngine = (*Engine)(nil)

// NewEngine returns the engine of kind k with the default configuration.
func NewEngine(k Kind, log hclog.Logger) *Engine {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Engine{kind: k, log: log, cfg: DefaultConfig()}
}

// Config is the configuration the last successful Configure installed.
func (e *Engine) Config() Config { return e.cfg }

func (e *Engine) Info() sdk.Info {
	return sdk.Info{Name: string(e.kind), Version: Version, Kind: sdk.KindRouting, Capabilities: []string{sdk.CapPaths}}
}

func (e *Engine) Schema() schema.Block { return schema.Object(SchemaAttrs(e.kind.withK())...) }

func (e *Engine) Configure(v cty.Value) error {
	c, err := ParseConfig(v, e.kind.withK())
	if err != nil {
		return fmt.Errorf("%s: %w", e.kind, err)
	}
	e.cfg = c
	return nil
}

func (e *Engine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	if req.Topo == nil {
		return nil, fmt.Errorf("%s: no topology in the request", e.kind)
	}
	o, rng, err := e.cfg.Options(req.Topo)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.kind, err)
	}
	route := ShortestWidestOpts
	if e.kind == KindPathSelection {
		route = PathSelectionOpts
	}
	r, err := route(req.Topo, rng, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.kind, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	root := fmt.Sprintf("0x%016x", req.Topo.Nodes[req.Topo.Switches()[r.Root]].GUID)
	if e.kind == KindPathSelection {
		e.log.Info("selected explicit up/down paths", "root", root,
			"paths", len(r.Paths), "k", o.K, "max_stretch", o.MaxStretch, "granularity", o.Granularity.String())
	} else {
		e.log.Info("routed explicit up/down paths", "root", root, "paths", len(r.Paths))
	}
	if r.Unrouted > 0 {
		e.log.Warn("some pairs have no legal up/down path (different components or detached); they are left without a path",
			"unrouted_pairs", r.Unrouted)
	}
	return &plan.Routes{Paths: r.Paths}, nil
}
