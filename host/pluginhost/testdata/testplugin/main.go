// Command testplugin is a routing engine for pluginhost's tests. Its config
// attribute "mode" makes it misbehave on Route: normal, crash (exit mid-call),
// crash_once (exit the first time, marked by the file "marker"), hang (sleep
// forever, ignoring its context), stop (SIGSTOP itself mid-call),
// close_stdio (close its real stdout and stderr, then answer), short_plane,
// bad_port, error, synthetic (fast well-shaped planes for benchmarks).
//
// At start, before the handshake: TESTPLUGIN_STOP_AT_START names a file
// whose existence makes the plugin remove it and SIGSTOP itself;
// TESTPLUGIN_CLOSE_STDOUT=1 makes it close its stdout (the handshake
// channel) and serve on.
package main

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/zclconf/go-cty/cty"
)

type engine struct {
	configured bool
	mode       string
	marker     string
}

func (e *engine) Info() sdk.Info {
	kind := sdk.KindRouting
	if k := os.Getenv("TESTPLUGIN_CLAIM_KIND"); k != "" {
		kind = sdk.Kind(k)
	}
	return sdk.Info{Name: "testplugin", Version: "0.0.1", Kind: kind}
}

func (e *engine) Schema() schema.Block {
	return schema.Object(
		schema.Attr("mode", cty.String, "misbehaviour on Route").WithDefault(cty.StringVal("normal")),
		schema.Attr("marker", cty.String, "file marking that crash_once already crashed").WithDefault(cty.StringVal("")),
	)
}

func (e *engine) Configure(v cty.Value) error {
	e.mode, e.marker = "normal", ""
	if m := v.GetAttr("mode"); !m.IsNull() {
		e.mode = m.AsString()
	}
	if m := v.GetAttr("marker"); !m.IsNull() {
		e.marker = m.AsString()
	}
	e.configured = true
	return nil
}

func (e *engine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	if !e.configured {
		return nil, errors.New("not configured")
	}
	if e.mode == "synthetic" {
		// Cheap planes of the right shape, for transfer benchmarks on big
		// fabrics where BFS would dominate.
		nsw, neps := len(req.Topo.Switches()), len(req.Topo.Endpoints())
		r := &plan.Routes{Planes: make([]plan.DestPlanes, neps)}
		for d := range r.Planes {
			pl := make(plan.Plane, nsw)
			for s := range pl {
				pl[s] = uint8(1 + (d+s)%2)
			}
			r.Planes[d] = plan.DestPlanes{Planes: []plan.Plane{pl}}
		}
		return r, nil
	}
	r := sdktest.BFSRoutes(req.Topo)
	switch e.mode {
	case "crash":
		os.Exit(7)
	case "crash_once":
		if _, err := os.Stat(e.marker); err != nil {
			os.WriteFile(e.marker, nil, 0o600)
			os.Exit(7)
		}
	case "stop":
		// A stopped process never answers. The signal lands on the
		// process asynchronously: without blocking here the answer could
		// slip out before the stop takes hold.
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		select {}
	case "close_stdio":
		syscall.Close(1)
		syscall.Close(2)
	case "hang":
		for {
			time.Sleep(time.Hour)
		}
	case "short_plane":
		r.Planes[0].Planes[0] = r.Planes[0].Planes[0][1:]
	case "bad_port":
		r.Planes[1].Planes[0][0] = 200
	case "error":
		return nil, errors.New("engine refuses: no roots found")
	}
	return r, nil
}

func main() {
	if f := os.Getenv("TESTPLUGIN_STOP_AT_START"); f != "" {
		if os.Remove(f) == nil {
			syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		}
	}
	if os.Getenv("TESTPLUGIN_CLOSE_STDOUT") == "1" {
		syscall.Close(1)
	}
	sdk.Serve(&engine{})
}
