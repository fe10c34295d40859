// Package pipeline runs routing → LID assignment → VL assignment through
// plugins, verifies every result before it may be programmed, falls back to
// the next configured engine when a result is rejected, and skips any stage
// whose inputs are unchanged (content-addressed cache).
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Identity is what a stage's cache key knows of a plugin: a changed binary,
// version or config invalidates its results.
type Identity struct {
	Name       string
	SHA256     string
	Version    string
	ConfigHash uint64
}

// Engine is a routing engine with its identity.
type Engine struct {
	Identity
	Impl sdk.RoutingEngine
}

// LIDStage is the LID assigner with its identity.
type LIDStage struct {
	Identity
	Impl sdk.LIDAssigner
	// RoutesUnread says the assigner declared sdk.CapRoutesUnread: it is
	// sent the routes' shape only, so a route call may answer changes.
	RoutesUnread bool
	// EndpointsOnly says it declared sdk.CapEndpointsOnly (and
	// RoutesUnread): its plan is filed under the endpoints, not the whole
	// topology and the routes, so a cable's change does not ask it again.
	EndpointsOnly bool
}

// VLStage is the VL assigner with its identity.
type VLStage struct {
	Identity
	Impl sdk.VLAssigner
	// Remote says Impl runs in a plugin process, which is never sent
	// VLRequest.Realized (the SDK realises the tables there if it reads
	// them): the host realises its own after the call, so that the routes'
	// planes and the tables (the same forwarding, 172 and 179 MB at ft3-56)
	// are not both held while the call sends the planes.
	Remote bool
	// OneVL says the assigner declared sdk.CapOneVL: its plan, when it
	// has one, is plan.OneVL(). The host then verifies that plan first
	// and asks the assigner only when it fails (to hear its refusal, or
	// verify whatever else it answers).
	OneVL bool
}

// Verifier checks a complete plan before it may reach the fabric.
type Verifier func(t *topology.Topology, r *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) error

// Checker is a Verifier that may accept a plan with warnings: what its
// policy let through (say, unreachable switch->switch pairs under
// routing.switch_to_switch = "best_effort"). Warnings are one line each.
type Checker func(t *topology.Topology, r *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) (warnings []string, err error)

// Runner holds the configured stages.
type Runner struct {
	Engines []Engine // primary first, then fallbacks in order
	LID     LIDStage
	VL      VLStage
	Cache   *Cache
	// Verify checks every plan before it is returned. Check, when set, is
	// used instead and may accept a plan with warnings.
	Verify Verifier
	Check  Checker
	// VerifyPolicy names the acceptance policy Verify or Check applies
	// (e.g. "switch_to_switch=best_effort"). It is part of the key under
	// which verdicts are remembered, so a changed policy verifies again
	// instead of reusing a rejection (or acceptance) made under the old one.
	VerifyPolicy string
	// CheckRoutes (optional) checks reachability and loops only; when the
	// VL assigner refuses, it tells whether the routes themselves are
	// broken, which is the more useful error.
	CheckRoutes Verifier
	// Delta (optional) verifies a one-VL plan by what changed since the
	// last plan accepted, before Verify/Check would walk all of it (a
	// cable down re-routes ~0.1 % of ft3-56); where it cannot prove the
	// plan sound, the full check decides.
	Delta *check.Delta
	Log   hclog.Logger

	calls atomic.Int64
	mu    sync.Mutex
	basis *routeBasis // since.go
}

// Input is what one pipeline run depends on besides the plugins.
type Input struct {
	Topo *topology.Topology
	LMC  uint8
	// Previous maps port GUID to its persisted base LID.
	Previous map[uint64]uint16
}

// Attempt records how one engine fared.
type Attempt struct {
	Engine string
	Err    error
}

// Result is a verified plan.
type Result struct {
	Engine string
	// Routes are the engine's answer; planes-form routes keep only their
	// shape (one empty DestPlanes per destination): Realized holds the
	// same forwarding.
	Routes   *plan.Routes
	LIDs     *plan.LIDPlan
	VLs      *plan.VLPlan
	Realized *plan.Realized
	// Key is the content hash of the whole plan (topology, routes, LIDs,
	// VLs): equal keys mean the same forwarding state.
	Key Key
	// Calls is the number of plugin calls this run made (0 when every
	// stage came from the cache).
	Calls    int
	Attempts []Attempt
	// cached counts the stages taken from the cache.
	cached  int
	Timings Timings
	// Warnings are what the verifier's policy let through (nil for a plan
	// without compromise); they are logged when the plan is accepted and
	// kept with the remembered verdict, so a cached plan reports them too.
	Warnings []string
}

// Timings are wall-clock times per stage (plugin calls included); the
// four add up to the phase's wall time. For a CapOneVL assigner the check
// runs before the call (VLs is 0 when the check spared it). An LID stage
// asked beside the route call (endpoints-only) shows only the wait after it.
type Timings struct {
	Routing, LIDs, VLs, Verify time.Duration
}

// Calls is the total number of plugin calls made by this runner.
func (r *Runner) Calls() int64 { return r.calls.Load() }

// Run tries each engine in order and returns the first plan that passes
// verification. If none passes, the error names every engine's failure and
// nothing should be programmed.
func (r *Runner) Run(ctx context.Context, in Input) (*Result, error) {
	if len(r.Engines) == 0 {
		return nil, errors.New("no routing engine configured")
	}
	log := r.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	var attempts []Attempt
	topoHash := in.Topo.Hash() // once, not per engine tried
	defer func() {
		// Problems waits for the stage results still being written: a
		// plan returned is on disk, as a restart expects.
		for _, p := range r.Cache.Problems() {
			log.Warn("plan cache: "+p+"; routing goes on without it", "dir", r.Cache.dir)
		}
	}()
	for _, e := range r.Engines {
		res, err := r.runEngine(ctx, e, in, topoHash)
		attempts = append(attempts, Attempt{Engine: e.Name, Err: err})
		if err == nil {
			res.Attempts = attempts
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		log.Error("plan rejected", "engine", e.Name, "error", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "every routing engine failed; the fabric keeps its last good plan:")
	for _, a := range attempts {
		fmt.Fprintf(&b, "\n  %s: %v", a.Engine, a.Err)
	}
	return nil, &PlanError{Attempts: attempts, msg: b.String()}
}

// PlanError is returned when no engine produced an acceptable plan.
type PlanError struct {
	Attempts []Attempt
	msg      string
}

func (e *PlanError) Error() string { return e.msg }

func (r *Runner) runEngine(ctx context.Context, e Engine, in Input, topoHash uint64) (*Result, error) {
	res, err := r.attempt(ctx, e, in, topoHash, false)
	var fresh *freshRejection
	if errors.As(err, &fresh) && res.cached > 0 {
		calls := res.Calls
		// The verifier rejected a plan built partly from cached results.
		// A deterministic plugin gives the same answer again, but a cache
		// entry may have been altered or computed under other inputs:
		// decide on results computed now, not on what the disk says.
		r.log().Warn("plan built from cached stage results was rejected; recomputing every stage", "engine", e.Name, "error", err)
		res, err = r.attempt(ctx, e, in, topoHash, true)
		res.Calls += calls
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// freshRejection is a verifier rejection made in this run (not a
// remembered one).
type freshRejection struct{ err error }

func (f *freshRejection) Error() string { return "verification: " + f.err.Error() }
func (f *freshRejection) Unwrap() error { return f.err }

// attempt computes (or, unless fresh, reuses) each stage and verifies the
// plan. Every stage's key holds everything that shapes its output: plugin
// identity and config, the topology, the content of the upstream results
// and, for LIDs, the persisted LIDs. The verdict is keyed by the content of
// the exact plan checked.
func (r *Runner) attempt(ctx context.Context, e Engine, in Input, topoHash uint64, fresh bool) (*Result, error) {
	res := &Result{Engine: e.Name}

	t0 := time.Now()
	rk := keyOf("routing", e.Name, e.SHA256, e.Version, e.ConfigHash, topoHash, in.LMC)
	ask := func(basis *routeBasis) func() (*plan.Routes, error) {
		req := sdk.RouteRequest{Topo: in.Topo, LMC: in.LMC}
		if basis != nil {
			req.Since, req.Edits = basis.token, basis.full
		}
		return func() (*plan.Routes, error) { return e.Impl.Route(ctx, req) }
	}
	basis := r.since(e, in)
	// An endpoints-only assigner numbers what the topology alone says: it
	// is asked beside the route call (at ft3-56 its call, the topology's
	// upload to another process, is 0.1-0.2 s of the routing phase).
	var lidsBeside *earlyLIDs
	if r.LID.EndpointsOnly && r.LID.RoutesUnread {
		lidsBeside = r.startLIDs(ctx, fresh, in, topoHash)
		defer lidsBeside.wait(res) // counts its calls whatever the attempt does
	}
	calls := res.Calls
	// A fabric seen before (a cable that came back) has its whole answer
	// filed: 187 MB to read back at ft3-56, ~1 s with its checksum. The
	// engine names the changes since the answer the host holds in a tenth
	// of that, so it is asked first; the file still serves when the call
	// fails. (For a fabric not seen before no file is found either way,
	// and a failure remembered for it is asked again.)
	callFirst := !fresh && basis != nil && basis.topo != topoHash && r.Cache.onDiskOnly("routing")
	routes, err := stage(r, res, fresh || callFirst, "routing", rk, ask(basis))
	if err != nil && callFirst && ctx.Err() == nil {
		if filed, ok := Get[plan.Routes](r.Cache, "routing", rk); ok {
			r.log().Warn("route call failed; using the answer filed for this fabric", "engine", e.Name, "error", err)
			routes, err = filed, nil
			res.cached++
			calls = res.Calls // the answer was not made now: no token to keep
		}
	}
	if err != nil {
		return res, fmt.Errorf("routing: %w", err)
	}
	// The plugin's name for its answer, when it answered now: a filed
	// answer keeps the token of its day, which the plugin may have
	// forgotten.
	var token uint64
	if res.Calls > calls {
		token = routes.Token
	}
	var hashes []uint64 // of each destination's planes
	switch {
	case routes.Base != 0:
		if hashes, err = basis.changedHashes(routes); err != nil {
			// Changes the host cannot apply to the answer it holds: the
			// engine's whole answer decides.
			r.log().Warn("route call answered changes the host cannot apply; asking for the whole answer", "engine", e.Name, "error", err)
			if routes, err = call(r, res, ask(nil)); err != nil {
				return res, fmt.Errorf("routing: %w", err)
			}
			if routes.Base != 0 {
				return res, fmt.Errorf("routing: engine %s answered changes when asked for its whole answer", e.Name)
			}
			token, hashes = routes.Token, destHashes(routes.Planes)
			putBehind(r.Cache, "routing", rk, routes)
			break
		}
		r.log().Debug("route call answered the destinations changed since its last answer", "engine", e.Name, "changed", len(routes.Changed), "of", len(routes.Planes), "entries", len(routes.Edits))
	case routes.Planes != nil:
		hashes = destHashes(routes.Planes)
	}
	res.Timings.Routing = time.Since(t0)
	hr := hashRoutesFrom(routes, hashes)
	// whole asks the engine again for its whole answer where what follows
	// must read planes that an answer of changes left out.
	whole := func() error {
		full, err := call(r, res, ask(nil))
		if err != nil {
			return fmt.Errorf("routing: %w", err)
		}
		if full.Base != 0 || hashRoutes(full) != hr {
			return fmt.Errorf("routing: engine %s answered otherwise when asked for its whole answer again", e.Name)
		}
		putBehind(r.Cache, "routing", rk, full)
		routes, token = full, full.Token
		return nil
	}

	t0 = time.Now()
	var lids *plan.LIDPlan
	if lidsBeside != nil && routes.IsPlanes() {
		lids, err = lidsBeside.wait(res)
	} else {
		lids, err = r.assignLIDs(ctx, res, fresh, in, topoHash, routes, hr)
	}
	if err != nil {
		return res, fmt.Errorf("LID assigner %s: %w", r.LID.Name, err)
	}
	res.Timings.LIDs = time.Since(t0)
	hl := hashLIDs(lids)
	if routes.Base != 0 && (hl != basis.lids || lids.Planes != nil) {
		// The tables of the last answer were realised with other LIDs.
		if err := whole(); err != nil {
			return res, err
		}
	}

	// changes are what realises the tables: routes that change the last
	// answer's, or a whole answer (a plan filed before: the cable came
	// back) seen as the destinations it changes against the tables kept.
	changes, from := routes, (*plan.Realized)(nil)
	if routes.Base != 0 {
		from = basis.rz
	} else if kept := r.tablesFor(in, routes, hashes, lids); kept != nil {
		changes, from = kept.changesTo(routes, hashes), kept.rz
	}
	realize := func() (*plan.Realized, error) {
		realise := plan.Realize
		if from != nil {
			realise = func(t *topology.Topology, rt *plan.Routes, l *plan.LIDPlan) (*plan.Realized, error) {
				return plan.RealizeChanged(from, t, rt, l)
			}
		}
		rz, err := realise(in.Topo, changes, lids)
		if err != nil {
			return nil, fmt.Errorf("LID assigner %s produced an unusable plan: %w", r.LID.Name, err)
		}
		return rz, nil
	}
	var rz *plan.Realized // before the call for an assigner in this process; for a remote one during a one-VL call, else after it
	if !r.VL.Remote {
		if rz, err = realize(); err != nil {
			return res, err
		}
	}

	vk := keyOf("vl", r.VL.Name, r.VL.SHA256, r.VL.Version, r.VL.ConfigHash, topoHash, hr, hl)
	planKey := func(vls *plan.VLPlan) (Key, Key) {
		k := keyOf("plan", topoHash, hr, hl, hashVLs(vls))
		// Verdicts depend on the plan's content and on the policy that judged it.
		return k, keyOf("verdict", k, r.VerifyPolicy)
	}
	// MaxVLs is set when the assigner is asked: a plan the host proves
	// needs no walk of every link for it (20 ms at ft3-56, every cable).
	req := sdk.VLRequest{Topo: in.Topo, Routes: routes, LIDs: lids}
	if !r.VL.Remote {
		req.Realized = rz
	}
	var vls *plan.VLPlan
	var vlTime time.Duration
	assign := func() {
		t0 := time.Now()
		vls, err = stage(r, res, fresh, "vl", vk, func() (*plan.VLPlan, error) {
			if req.Routes.Base != 0 {
				if err := whole(); err != nil {
					return nil, err
				}
				req.Routes = routes
			}
			req.MaxVLs = in.Topo.MinLinkVLs()
			return r.VL.Impl.AssignVLs(ctx, req)
		})
		vlTime = time.Since(t0)
	}
	var early *earlyCheck
	var proven time.Duration // the host's check that made the call needless
	if !r.checkFirst(fresh, vk, planKey) {
		assign()
	} else {
		// The assigner's answer is known before it is asked: plan.OneVL()
		// when the one-VL dependency graph is acyclic, else a refusal. The
		// host proves the first itself (it checks every plan anyway) and
		// asks the assigner only when its check fails, to hear its refusal
		// or see the plan it answers instead. At ft3-56 that spares 0.8 s
		// of a one-VL call that ships 172 MB of planes to prove the same.
		if rz == nil {
			// The planes are still live; so is the routing stage's file
			// write, which the collection need not wait for. (Changes
			// realise into a copy of the last tables: nothing to collect.)
			if routes.Base == 0 {
				runtime.GC()
			}
			if rz, err = realize(); err != nil {
				return res, err
			}
		}
		t0 := time.Now()
		early = r.startCheck(in, routes, lids, rz)
		early.wait()
		proven = time.Since(t0)
		if early.err == nil {
			vls = plan.OneVL()
			putBehind(r.Cache, "vl", vk, vls)
			r.log().Debug("VL assigner not asked: the host proved the plan it declares ("+sdk.CapOneVL+")", "vl_assigner", r.VL.Name, "took", proven)
		} else {
			assign()
		}
	}
	if rz == nil {
		// Realising reads the planes while it allocates the tables: a
		// collection in between finds both live and sets the heap's goal
		// at twice the two (1 GB at ft3-56, where each is ~180 MB). One
		// before it (the routing stage's file write, which holds the
		// planes until they are on disk, done first) leaves the tables room
		// to be allocated without one; the next finds the planes gone.
		// (Changes realise into a copy of the last tables: no planes.)
		if routes.Base == 0 {
			r.collect()
		}
		var rerr error
		if rz, rerr = realize(); rerr != nil {
			return res, rerr
		}
	}
	// From here the tables are the forwarding: the planes go (the routing
	// stage's cache file keeps them for the next sweep).
	r.keep(e, in, topoHash, token, routes, hashes, basis, lids, rz)
	partial := routes.Base != 0
	routes, req.Routes = shapeOf(routes), nil
	if early != nil && r.VL.Remote && !partial {
		// The check (and a call after it) held the planes beside the tables realised before it,
		// so the collections during it set the heap's goal at twice both
		// (1.16 GB at ft3-56, reached during distribution). One now, in
		// the background once the routing stage's file is written, finds
		// the planes gone and sets it from the tables alone.
		go r.collect()
	}
	t0 = time.Now()
	early.wait()
	if err != nil {
		if r.CheckRoutes != nil {
			if cerr := r.CheckRoutes(in.Topo, routes, lids, nil, rz); cerr != nil {
				return res, fmt.Errorf("routes are broken: %w (the VL assigner %s refused them too: %v)", cerr, r.VL.Name, err)
			}
		}
		return res, fmt.Errorf("VL assigner %s: %w", r.VL.Name, err)
	}
	res.Timings.VLs = vlTime

	var verdictKey Key
	res.Key, verdictKey = planKey(vls)
	if f, ok := Get[failure](r.Cache, "rejected", verdictKey); ok {
		return res, fmt.Errorf("verification: %s (remembered: this exact plan was rejected before)", f.Msg)
	}
	// A plan this host verified before (the same bytes on the same topology
	// under the same policy) is not verified again: the verdict is the
	// host's own, kept in its state directory, not a plugin's claim.
	if v, verified := Get[verdict](r.Cache, "verified", verdictKey); verified {
		res.Warnings = v.Warnings
	} else if check := r.checker(); check != nil {
		warnings, err, ok := early.result(vls)
		if !ok {
			if early != nil {
				r.log().Warn("the VL assigner declared "+sdk.CapOneVL+" but answered another plan; verifying the plan it answered", "vl_assigner", r.VL.Name, "vls", vls.VLs)
			}
			if !r.deltaCheck(in.Topo, routes, lids, vls, rz) {
				warnings, err = check(in.Topo, routes, lids, vls, rz)
			}
		}
		if err != nil {
			Put(r.Cache, "rejected", verdictKey, &failure{Msg: err.Error()})
			return res, &freshRejection{err}
		}
		Put(r.Cache, "verified", verdictKey, &verdict{OK: true, Warnings: warnings})
		res.Warnings = warnings
	}
	if r.Delta != nil {
		if len(res.Warnings) == 0 {
			r.Delta.Accepted(check.Plan{Topo: in.Topo, Routes: routes, LIDs: lids, VLs: vls, Realized: rz}, uint64(res.Key))
		} else {
			r.Delta.Forget() // the verdict's warnings are the full check's to give
		}
	}
	res.Timings.Verify = proven + time.Since(t0)
	for _, w := range res.Warnings {
		r.log().Warn("plan accepted with a warning", "engine", e.Name, "policy", r.VerifyPolicy, "warning", w)
	}
	res.Routes, res.LIDs, res.VLs, res.Realized = routes, lids, vls, rz
	return res, nil
}

// assignLIDs runs the LID stage for routes (hr: their content hash):
// filed under the endpoints for an endpoints-only assigner of planes, the
// topology and the routes otherwise.
func (r *Runner) assignLIDs(ctx context.Context, res *Result, fresh bool, in Input, topoHash uint64, routes *plan.Routes, hr uint64) (*plan.LIDPlan, error) {
	lidKey := func(prev uint64) Key {
		if r.LID.EndpointsOnly && r.LID.RoutesUnread && routes.IsPlanes() {
			return keyOf("lid-endpoints", r.LID.Name, r.LID.SHA256, r.LID.Version, r.LID.ConfigHash, hashEndpoints(in.Topo), in.LMC, prev)
		}
		return keyOf("lid", r.LID.Name, r.LID.SHA256, r.LID.Version, r.LID.ConfigHash, topoHash, hr, in.LMC, prev)
	}
	lk := lidKey(hashPrevious(in.Topo, in.Previous))
	calls := res.Calls
	lids, err := stage(r, res, fresh, "lid", lk, func() (*plan.LIDPlan, error) {
		return r.LID.Impl.AssignLIDs(ctx, sdk.LIDRequest{Topo: in.Topo, Routes: routes, LMC: in.LMC, Previous: in.Previous})
	})
	if err != nil {
		return nil, err
	}
	if res.Calls > calls {
		// Once programmed, the plan's own LIDs are what guid2lid holds.
		// An assigner keeps every Previous LID that still fits (the SDK's
		// contract), so given its own LIDs it answers this same plan:
		// file it under that key too, and the next sweep asks nobody.
		if own := lidKey(hashPrevious(in.Topo, ownLIDs(in.Topo, lids))); own != lk {
			putBehind(r.Cache, "lid", own, lids)
		}
	}
	return lids, nil
}

// earlyLIDs is an endpoints-only assigner's stage run beside the route
// call, for the planes-form routes it numbers without reading them.
type earlyLIDs struct {
	done chan struct{}
	res  Result // its calls and cache hits, added to the attempt's
	lids *plan.LIDPlan
	err  error
}

// startLIDs starts the LID stage for planes-form routes of in's fabric.
func (r *Runner) startLIDs(ctx context.Context, fresh bool, in Input, topoHash uint64) *earlyLIDs {
	e := &earlyLIDs{done: make(chan struct{})}
	shape := &plan.Routes{Planes: make([]plan.DestPlanes, len(in.Topo.Endpoints()))}
	go func() {
		defer close(e.done)
		e.lids, e.err = r.assignLIDs(ctx, &e.res, fresh, in, topoHash, shape, 0)
	}()
	return e
}

// wait returns the stage's answer once it ended, adding its calls and
// cache hits to res the first time.
func (e *earlyLIDs) wait(res *Result) (*plan.LIDPlan, error) {
	<-e.done
	res.Calls += e.res.Calls
	res.cached += e.res.cached
	e.res = Result{}
	return e.lids, e.err
}

// collect waits for the cache's file writes (which hold the routes they
// write) and runs a collection, so that realising the tables next does not
// find the planes and the tables both live (see attempt).
func (r *Runner) collect() {
	if r.Cache != nil {
		r.Cache.Flush()
	}
	runtime.GC()
}

// earlyCheck is the host's check of plan.OneVL() made before asking a VL
// assigner that declared sdk.CapOneVL: when it passes, the assigner's
// answer is known and it is not asked. Its verdict is used only for that
// exact plan.
type earlyCheck struct {
	done     chan struct{}
	warnings []string
	err      error
}

// checkFirst reports whether the host should check plan.OneVL() before
// the VL call: the assigner declared CapOneVL, a checker is configured,
// the call will be made (no answer or failure of it remembered) and no
// verdict on that plan is remembered.
func (r *Runner) checkFirst(fresh bool, vk Key, planKey func(*plan.VLPlan) (Key, Key)) bool {
	if !r.VL.OneVL || r.checker() == nil {
		return false
	}
	if !fresh {
		if _, ok := Get[plan.VLPlan](r.Cache, "vl", vk); ok {
			return false
		}
		if _, ok := Get[failure](r.Cache, "vl-failed", vk); ok {
			return false
		}
	}
	_, verdictKey := planKey(plan.OneVL())
	if _, ok := Get[verdict](r.Cache, "verified", verdictKey); ok {
		return false
	}
	_, rejected := Get[failure](r.Cache, "rejected", verdictKey)
	return !rejected
}

// startCheck starts the check of plan.OneVL() on the tables rz: by its
// changes when Delta proves it sound at once, in full otherwise.
func (r *Runner) startCheck(in Input, routes *plan.Routes, lids *plan.LIDPlan, rz *plan.Realized) *earlyCheck {
	one := plan.OneVL()
	e := &earlyCheck{done: make(chan struct{})}
	check, shape := r.checker(), shapeOf(routes)
	if r.deltaCheck(in.Topo, shape, lids, one, rz) {
		close(e.done)
		return e
	}
	go func() {
		defer close(e.done)
		e.warnings, e.err = check(in.Topo, shape, lids, one, rz)
	}()
	return e
}

// Prepare does now what the next plan's check by its changes would
// otherwise start with (check.Delta.Prepare), and collects the plan that
// went out of force: call it when the fabric is programmed and the host
// idle.
func (r *Runner) Prepare() {
	if r.Delta != nil {
		r.Delta.Prepare()
	}
	// The tables a cable's changes copy (up to ~1,700 of 48 KB at
	// ft3-56) then reuse the memory of the last plan's copies. Left to
	// the pacer, the heap grows toward twice what it holds, each cable's
	// copies land on pages new to the process, and their faults were
	// 0.2 s of a cable's 0.35 s on the VM measured.
	runtime.GC()
}

// Settle tells the check by changes the topology the next cable's is
// patched from, once the ports a plan armed are Active (check.Delta.Settle).
func (r *Runner) Settle(t *topology.Topology) {
	if r.Delta != nil {
		r.Delta.Settle(t)
	}
}

// deltaCheck reports whether Delta proves the plan sound by its changes
// since the last plan accepted (the caller then needs no full check).
func (r *Runner) deltaCheck(t *topology.Topology, routes *plan.Routes, lids *plan.LIDPlan, vls *plan.VLPlan, rz *plan.Realized) bool {
	if r.Delta == nil {
		return false
	}
	t0 := time.Now()
	ok, why := r.Delta.Check(check.Plan{Topo: t, Routes: routes, LIDs: lids, VLs: vls, Realized: rz})
	if ok {
		r.log().Info("plan verified by its changes since the last plan accepted", "took", time.Since(t0))
	} else {
		r.log().Debug("plan verified in full", "why_not_by_its_changes", why, "took", time.Since(t0))
	}
	return ok
}

// wait returns when the check has ended (at once for none).
func (e *earlyCheck) wait() {
	if e != nil {
		<-e.done
	}
}

// result is the check's verdict if it judged v (ok: v is plan.OneVL()),
// after wait.
func (e *earlyCheck) result(v *plan.VLPlan) (warnings []string, err error, ok bool) {
	if e == nil || !v.IsOneVL() {
		return nil, nil, false
	}
	return e.warnings, e.err, true
}

// shapeOf returns planes-form routes without their trees: one empty
// DestPlanes per destination, as a routes-unread plugin receives them.
// Once realised, the trees are the forwarding tables in another order
// (172 MB at ft3-56, kept beside the tables through distribution); the
// cache file holds them for the next sweep and nothing after the pipeline
// reads them. Paths-form routes are kept whole: their paths are not in
// the tables.
func shapeOf(r *plan.Routes) *plan.Routes {
	if !r.IsPlanes() {
		return r
	}
	return &plan.Routes{Planes: make([]plan.DestPlanes, len(r.Planes))}
}

func (r *Runner) log() hclog.Logger {
	if r.Log == nil {
		return hclog.NewNullLogger()
	}
	return r.Log
}

// failure is a remembered deterministic rejection: the same inputs to the
// same plugin (or the same plan to the verifier) fail the same way, so a
// restart on an unchanged fabric does not ask again.
type failure struct{ Msg string }

// verdict records that the host's verifier accepted a plan, and what its
// policy let through.
type verdict struct {
	OK       bool
	Warnings []string
}

// checker returns Check, or Verify as a Checker without warnings, or nil.
func (r *Runner) checker() Checker {
	switch {
	case r.Check != nil:
		return r.Check
	case r.Verify != nil:
		verify := r.Verify
		return func(t *topology.Topology, rt *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) ([]string, error) {
			return nil, verify(t, rt, l, v, rz)
		}
	}
	return nil
}

// stage returns the cached result for key k (unless fresh) or calls f,
// caching its result or, when the plugin itself answered with an error,
// that error.
func stage[T any](r *Runner, res *Result, fresh bool, name string, k Key, f func() (*T, error)) (*T, error) {
	if !fresh {
		if v, ok := Get[T](r.Cache, name, k); ok {
			res.cached++
			return v, nil
		}
		if fl, ok := Get[failure](r.Cache, name+"-failed", k); ok {
			return nil, fmt.Errorf("%s (remembered from an earlier run with identical inputs)", fl.Msg)
		}
	}
	v, err := call(r, res, f)
	if err != nil {
		if deterministic(err) {
			Put(r.Cache, name+"-failed", k, &failure{Msg: err.Error()})
		}
		return nil, err
	}
	if rt, ok := any(v).(*plan.Routes); ok && rt.Base != 0 {
		return v, nil // only changes to an earlier answer: not a whole result to keep
	}
	putBehind(r.Cache, name, k, v)
	return v, nil
}

// deterministic reports whether err is the plugin's own answer (its
// handler returned an error: gRPC code Unknown) rather than a crash, hang or
// transport fault, which may go away on the next try.
func deterministic(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.Unknown && st.Message() != ""
}

// call runs one plugin call, counting it. A nil result without error is
// garbage from the plugin and becomes an error.
func call[T any](r *Runner, res *Result, f func() (*T, error)) (*T, error) {
	r.calls.Add(1)
	res.Calls++
	v, err := f()
	if err == nil && v == nil {
		err = errors.New("plugin returned no result")
	}
	return v, err
}
