package plan_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Realize's tables hold, for every LID, the plane its owner's range maps
// it to (NoPort for LIDs nobody owns), across blocks and with LMC.
func TestRealizeTables(t *testing.T) {
	topo, err := testfab.FatTree3(8)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	nsw := len(topo.Switches())
	eps := topo.Endpoints()
	for _, lmc := range []uint8{0, 1, 2} {
		r := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
		for e := range eps {
			for range 1 + rng.IntN(3) {
				pl := make(plan.Plane, nsw)
				for s := range pl {
					pl[s] = uint8(rng.IntN(9))
				}
				r.Planes[e].Planes = append(r.Planes[e].Planes, pl)
			}
		}
		l := testfab.SequentialLIDs(topo, lmc)
		// A gap of unowned LIDs in the middle.
		for e := len(eps) / 2; e < len(eps); e++ {
			l.Ports[e].Base += 64 << lmc
		}
		rz, err := plan.Realize(topo, r, l)
		if err != nil {
			t.Fatal(err)
		}
		owned := make([]bool, int(rz.TopLID)+1)
		for e, p := range l.Ports {
			for k := 0; k < p.Count(); k++ {
				lid := int(p.Base) + k
				owned[lid] = true
				pl := r.Planes[e].Planes[k%len(r.Planes[e].Planes)]
				for s := range nsw {
					if rz.LFT[s][lid] != pl[s] {
						t.Fatalf("lmc %d: switch %d LID %d = %d, want %d", lmc, s, lid, rz.LFT[s][lid], pl[s])
					}
				}
			}
		}
		for lid, o := range owned {
			for s := range nsw {
				if !o && rz.LFT[s][lid] != plan.NoPort {
					t.Fatalf("lmc %d: unowned LID %d on switch %d = %d, want NoPort", lmc, lid, s, rz.LFT[s][lid])
				}
			}
		}
		// UsedPlanes: every plane some LID realises, once, and no other.
		used, err := plan.UsedPlanes(topo, r, l)
		if err != nil {
			t.Fatal(err)
		}
		in := map[*uint8]bool{}
		for _, pl := range used {
			in[&pl[0]] = true
		}
		want := 0
		for e, p := range l.Ports {
			planes := r.Planes[e].Planes
			want += min(p.Count(), len(planes))
			for k := 0; k < p.Count(); k++ {
				if !in[&planes[k%len(planes)][0]] {
					t.Fatalf("lmc %d: endpoint %d LID offset %d realises a plane UsedPlanes left out", lmc, e, k)
				}
			}
		}
		if len(used) != want || len(in) != want {
			t.Fatalf("lmc %d: UsedPlanes gave %d planes (%d distinct), want %d", lmc, len(used), len(in), want)
		}
	}
	r := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	for e := range eps {
		r.Planes[e].Planes = []plan.Plane{make(plan.Plane, nsw)}
	}
	r.Planes[3].Planes[0] = r.Planes[3].Planes[0][:nsw-1]
	r.Planes[5].Planes = nil
	if _, err := plan.Realize(topo, r, testfab.SequentialLIDs(topo, 0)); err == nil || !strings.Contains(err.Error(), "endpoint 3 plane 0") {
		t.Fatalf("short plane: got %v, want the first bad destination (3) named", err)
	}
	if _, err := plan.UsedPlanes(topo, r, testfab.SequentialLIDs(topo, 0)); err == nil || !strings.Contains(err.Error(), "endpoint 3 plane 0") {
		t.Fatalf("UsedPlanes, short plane: got %v, want the first bad destination (3) named", err)
	}
	r.Planes[3].Planes[0] = make(plan.Plane, nsw)
	if _, err := plan.UsedPlanes(topo, r, testfab.SequentialLIDs(topo, 0)); err == nil || !strings.Contains(err.Error(), "endpoint 5 has no plane") {
		t.Fatalf("UsedPlanes, no plane: got %v, want endpoint 5 named", err)
	}
}

func TestIsOneVL(t *testing.T) {
	for _, c := range []struct {
		name string
		v    *plan.VLPlan
		want bool
	}{
		{"OneVL", plan.OneVL(), true},
		{"empty lists, as off the wire", &plan.VLPlan{SLByDLID: []uint8{}, Overrides: []plan.SLOverride{}, SL2VL: []plan.SL2VLEntry{}, VLs: 1}, true},
		{"nil", nil, false},
		{"an SL per DLID", &plan.VLPlan{SLByDLID: []uint8{0, 1}, VLs: 1}, false},
		{"a default SL2VL table", &plan.VLPlan{Default: [16]uint8{0, 1}, VLs: 1}, false},
		{"two VLs", &plan.VLPlan{VLs: 2}, false},
	} {
		if got := c.v.IsOneVL(); got != c.want {
			t.Errorf("%s: IsOneVL = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRealizeChanged: the tables of routes that change an earlier answer
// in some destinations, realised onto that answer's tables, equal the
// tables of the whole new routes; tables no change touches stay shared
// with the earlier ones, which are left as they were.
func TestRealizeChanged(t *testing.T) {
	small, err := testfab.FatTree2(6, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	// More switches than one worker of the rewrite takes at a time.
	large, err := testfab.FatTree3(12)
	if err != nil {
		t.Fatal(err)
	}
	for _, topo := range []*topology.Topology{small, large} {
		t.Run(fmt.Sprintf("%d switches", len(topo.Switches())), func(t *testing.T) { testRealizeChanged(t, topo) })
	}
	if _, err := plan.RealizeChanged(&plan.Realized{}, small, &plan.Routes{}, &plan.LIDPlan{}); err == nil {
		t.Error("routes that change nothing earlier were realised as changes")
	}
	testRealizeEditsRefused(t, small)
}

// testRealizeEditsRefused: an edit RealizeChanged cannot index is an
// error, not a write.
func testRealizeEditsRefused(t *testing.T, topo *topology.Topology) {
	eps, nsw := len(topo.Endpoints()), len(topo.Switches())
	lids := &plan.LIDPlan{Ports: make([]plan.PortLID, eps)}
	for e := range lids.Ports {
		lids.Ports[e] = plan.PortLID{Base: uint16(e + 1)}
	}
	routes := &plan.Routes{Planes: make([]plan.DestPlanes, eps)}
	for e := range routes.Planes {
		routes.Planes[e].Planes = []plan.Plane{make(plan.Plane, nsw)}
	}
	base, err := plan.Realize(topo, routes, lids)
	if err != nil {
		t.Fatal(err)
	}
	high := &plan.LIDPlan{Ports: slices.Clone(lids.Ports)}
	high.Ports[1].Base = base.TopLID + 1
	for _, c := range []struct {
		name string
		edit plan.Edit
		lids *plan.LIDPlan
		want string
	}{
		{"destination", plan.Edit{Dest: int32(eps), Port: 1}, lids, "out of range"},
		{"negative destination", plan.Edit{Dest: -1, Port: 1}, lids, "out of range"},
		{"switch", plan.Edit{Switch: int32(nsw), Port: 1}, lids, "out of range"},
		{"plane beyond 2^LMC", plan.Edit{Plane: 1, Port: 1}, lids, "no LID"},
		{"LID above the tables", plan.Edit{Dest: 1, Port: 1}, high, "above the earlier tables"},
	} {
		r := &plan.Routes{Planes: make([]plan.DestPlanes, eps), Base: 1, Changed: []int32{c.edit.Dest}, Edits: []plan.Edit{c.edit}}
		if _, err := plan.RealizeChanged(base, topo, r, c.lids); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

func testRealizeChanged(t *testing.T, topo *topology.Topology) {
	eps, sw := topo.Endpoints(), topo.Switches()
	rng := rand.New(rand.NewPCG(3, 4))
	random := func(lmc uint8) *plan.Routes {
		r := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
		for e := range r.Planes {
			for range 1 << lmc {
				pl := make(plan.Plane, len(sw))
				for s := range pl {
					pl[s] = uint8(rng.IntN(4))
				}
				r.Planes[e].Planes = append(r.Planes[e].Planes, pl)
			}
		}
		return r
	}
	for _, c := range []struct {
		name    string
		lmc     uint8
		changed []int32
	}{
		{"none", 0, []int32{}},
		{"one", 0, []int32{5}},
		{"first and last", 0, []int32{0, int32(len(eps) - 1)}},
		{"all", 0, nil},
		{"lmc 2", 2, []int32{1, 7, 9}},
	} {
		t.Run(c.name, func(t *testing.T) {
			lids := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps))}
			for e := range lids.Ports {
				lids.Ports[e] = plan.PortLID{Base: uint16(e+1) << c.lmc, LMC: c.lmc}
			}
			old := random(c.lmc)
			base, err := plan.Realize(topo, old, lids)
			if err != nil {
				t.Fatal(err)
			}
			before := make([][]uint8, len(base.LFT))
			for s, row := range base.LFT {
				before[s] = append([]uint8(nil), row...)
			}
			changed := c.changed
			if changed == nil {
				for e := range eps {
					changed = append(changed, int32(e))
				}
			}
			next := &plan.Routes{Planes: append([]plan.DestPlanes(nil), old.Planes...)}
			fresh := random(c.lmc)
			for _, e := range changed {
				next.Planes[e] = fresh.Planes[e]
			}
			want, err := plan.Realize(topo, next, lids)
			if err != nil {
				t.Fatal(err)
			}
			delta := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps)), Base: 1, Changed: changed}
			for _, e := range changed {
				delta.Planes[e] = next.Planes[e]
			}
			// The same changes entry by entry, and the LIDs they write.
			edits := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps)), Base: 1, Changed: changed, Edits: []plan.Edit{}}
			var differ []int32
			for _, e := range changed {
				for k, pl := range next.Planes[e].Planes {
					n := len(edits.Edits)
					for s, port := range pl {
						if port != old.Planes[e].Planes[k][s] {
							edits.Edits = append(edits.Edits, plan.Edit{Dest: e, Switch: int32(s), Plane: uint8(k), Port: port})
						}
					}
					if len(edits.Edits) > n {
						differ = append(differ, int32(lids.Ports[e].Base)+int32(k))
					}
				}
			}
			got, err := plan.RealizeChanged(base, topo, delta, lids)
			if err != nil {
				t.Fatal(err)
			}
			written, ok := got.ChangedSince(base)
			if !ok || len(written) != len(changed)<<c.lmc {
				t.Fatalf("ChangedSince(base) = %d LIDs, %v; want the %d LIDs of the changed destinations", len(written), ok, len(changed)<<c.lmc)
			}
			byEntry, err := plan.RealizeChanged(base, topo, edits, lids)
			if err != nil {
				t.Fatal(err)
			}
			if written, ok := byEntry.ChangedSince(base); !ok || !slices.Equal(written, differ) {
				t.Fatalf("changed entries: ChangedSince(base) = %v, %v; want the %d LIDs whose entries changed", written, ok, len(differ))
			}
			rows, ok := byEntry.ChangedRows(base)
			if !ok {
				t.Fatal("tables made from changed entries do not say which rows they wrote")
			}
			for s := range base.LFT {
				var want []int32
				for lid, port := range base.LFT[s] {
					if byEntry.LFT[s][lid] != port {
						want = append(want, int32(lid))
					}
				}
				if got := rows.Of(s); !slices.Equal(got, want) && len(got)+len(want) > 0 {
					t.Fatalf("switch %d: ChangedRows names LIDs %v, the entries that changed are %v", s, got, want)
				}
			}
			if _, ok := got.ChangedRows(base); ok {
				t.Error("tables made from planes claim to know their rows' changes")
			}
			if _, ok := byEntry.ChangedRows(want); ok {
				t.Error("ChangedRows names tables the changes were not made from")
			}
			if _, ok := got.ChangedSince(want); ok {
				t.Error("ChangedSince names tables the changes were not made from")
			}
			copied := *got
			copied.LFT = slices.Clone(got.LFT)
			if _, ok := copied.ChangedSince(base); ok {
				t.Error("a copy given other tables inherits ChangedSince")
			}
			for _, got := range []*plan.Realized{got, byEntry} {
				for s := range want.LFT {
					if string(got.LFT[s]) != string(want.LFT[s]) {
						t.Fatalf("switch %d: table differs from the whole routes' tables", s)
					}
					if string(base.LFT[s]) != string(before[s]) {
						t.Fatalf("switch %d: the earlier table was written to", s)
					}
					if shared := &got.LFT[s][0] == &base.LFT[s][0]; shared != (string(got.LFT[s]) == string(before[s])) {
						t.Errorf("switch %d: shared %v, unchanged %v", s, shared, !shared)
					}
				}
			}
		})
	}
}

// BenchmarkRealizeChanged: one cable's repair at the edge of the LID space
// (ft3-56: 3,920 switches, 47,824 LIDs), as sftree answers a leaf's
// uplink going down: 1,736 destinations changed, each on two switches.
func BenchmarkRealizeChanged(b *testing.B) {
	topo, err := testfab.FatTree3(56)
	if err != nil {
		b.Fatal(err)
	}
	eps, sw := topo.Endpoints(), topo.Switches()
	rng := rand.New(rand.NewPCG(5, 6))
	old := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	for e := range old.Planes {
		pl := make(plan.Plane, len(sw))
		for s := range pl {
			pl[s] = uint8(1 + rng.IntN(56))
		}
		old.Planes[e].Planes = []plan.Plane{pl}
	}
	lids := testfab.SequentialLIDs(topo, 0)
	base, err := plan.Realize(topo, old, lids)
	if err != nil {
		b.Fatal(err)
	}
	delta := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps)), Base: 1}
	edits := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps)), Base: 1, Edits: []plan.Edit{}}
	for e := 0; e < len(eps); e += len(eps) / 1736 {
		pl := slices.Clone(old.Planes[e].Planes[0])
		at := rng.Perm(len(pl))[:2]
		slices.Sort(at)
		for _, s := range at {
			pl[s] = uint8(1 + rng.IntN(56))
			edits.Edits = append(edits.Edits, plan.Edit{Dest: int32(e), Switch: int32(s), Port: pl[s]})
		}
		delta.Planes[e].Planes = []plan.Plane{pl}
		delta.Changed = append(delta.Changed, int32(e))
	}
	edits.Changed = delta.Changed
	for _, c := range []struct {
		name string
		r    *plan.Routes
	}{{"planes", delta}, {"entries", edits}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := plan.RealizeChanged(base, topo, c.r, lids); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestChangedBetween: tables made by RealizeChanged from common tables,
// one or more steps back, differ only in the LIDs ChangedBetween names;
// unrelated tables, or a copy given other rows, are not named.
func TestChangedBetween(t *testing.T) {
	topo, err := testfab.FatTree2(6, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	eps, sw := topo.Endpoints(), topo.Switches()
	rng := rand.New(rand.NewPCG(7, 8))
	lids := testfab.SequentialLIDs(topo, 0)
	random := func() plan.DestPlanes {
		pl := make(plan.Plane, len(sw))
		for s := range pl {
			pl[s] = uint8(rng.IntN(4))
		}
		return plan.DestPlanes{Planes: []plan.Plane{pl}}
	}
	whole := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	for e := range whole.Planes {
		whole.Planes[e] = random()
	}
	base, err := plan.Realize(topo, whole, lids)
	if err != nil {
		t.Fatal(err)
	}
	change := func(from *plan.Realized, dests ...int32) *plan.Realized {
		r := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps)), Base: 1, Changed: dests}
		for _, e := range dests {
			r.Planes[e] = random()
		}
		out, err := plan.RealizeChanged(from, topo, r, lids)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a := change(base, 1, 4)
	b := change(base, 2)
	c := change(a, 7)
	d := change(c, 9)
	e := change(d, 11)
	other, err := plan.Realize(topo, whole, lids)
	if err != nil {
		t.Fatal(err)
	}
	copied := *a
	copied.LFT = slices.Clone(a.LFT)
	for _, tc := range []struct {
		name string
		x, y *plan.Realized
		want []int32 // LIDs; nil: not related
	}{
		{"made from", base, a, []int32{2, 5}},
		{"made into", a, base, []int32{2, 5}},
		{"siblings", a, b, []int32{2, 3, 5}},
		{"two steps and one", c, b, []int32{2, 3, 5, 8}},
		{"four steps back", e, base, []int32{2, 5, 8, 10, 12}},
		{"unrelated", other, a, nil},
		{"a copy with other rows", &copied, base, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := plan.ChangedBetween(tc.x, tc.y)
			if ok != (tc.want != nil) || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, ok, tc.want)
			}
			for s := range tc.x.LFT {
				for lid := range tc.x.LFT[s] {
					if tc.x.LFT[s][lid] != tc.y.LFT[s][lid] && ok && !slices.Contains(got, int32(lid)) {
						t.Fatalf("switch %d LID %d differs outside the LIDs named", s, lid)
					}
				}
			}
		})
	}
}
