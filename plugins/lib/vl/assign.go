package vl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/zclconf/go-cty/cty"
)

// Algorithm computes layers for a fabric; max bounds the layers.
type Algorithm func(ctx context.Context, f *Fabric, tr *Trees, max int) (*Layers, error)

// Assign is the body of the layered, dfsssp and acro plugins: realise the
// tables if the host did not, index them, run the algorithm, and turn its
// layers into a VLPlan. Layers are bounded by 16 SLs and by the largest
// VLCap among switch-to-switch links; each link's own VLCap is enforced by
// the algorithms and the plan (not req.MaxVLs, which counts CA links too).
func Assign(ctx context.Context, log hclog.Logger, name string, req sdk.VLRequest, algo Algorithm) (*plan.VLPlan, error) {
	start := time.Now()
	real := req.Realized
	if real == nil {
		if req.Topo == nil || req.LIDs == nil {
			return nil, fmt.Errorf("%s: the request has neither realised forwarding tables nor topology, routes and LIDs to realise them from", name)
		}
		var err error
		if real, err = plan.Realize(req.Topo, req.Routes, req.LIDs); err != nil {
			return nil, fmt.Errorf("%s: cannot realise the forwarding tables: %w", name, err)
		}
	}
	f, err := NewFabric(real)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	tr, err := f.BuildTrees()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	maxVLs := 1
	for c := int32(0); c < int32(f.Chans()); c++ {
		if f.peerSw[c] >= 0 {
			maxVLs = max(maxVLs, f.Cap(c))
		}
	}
	maxVLs = min(maxVLs, MaxSLs)
	ly, err := algo(ctx, f, tr, maxVLs)
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			log.Error("not enough VLs", "needed_at_least", le.Needed, "available", le.Available, "why", le.Why)
			return nil, err // already names the algorithm
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	layered := time.Since(start)
	var v *plan.VLPlan
	var st Stats
	if ly.PerHop {
		v, st, err = HopPlan(f, ly, tr, maxVLs)
	} else {
		v, st, err = PairPlan(f, ly)
	}
	if err != nil {
		log.Error("layers cannot be realised", "layers", ly.N, "error", err)
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	log.Info("VLs assigned", "algorithm_layers", ly.N, "vls", st.Layers, "sls", st.SLs, "sl_overrides", st.Overrides, "sl2vl_tables", st.Tables,
		"dlids", len(f.DLIDs), "switches", f.N, "max_vls", maxVLs, "layering", layered, "total", time.Since(start))
	return v, nil
}

// NoConfig accepts a null or empty object: the VL plugins have nothing to tune.
func NoConfig(name string, v cty.Value) error {
	if v == cty.NilVal || v.IsNull() {
		return nil
	}
	if !v.Type().IsObjectType() || len(v.Type().AttributeTypes()) != 0 {
		return fmt.Errorf("%s: takes no configuration, got %s", name, v.Type().FriendlyName())
	}
	return nil
}
