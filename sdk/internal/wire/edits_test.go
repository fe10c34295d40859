package wire

import (
	"slices"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
)

// testEdits: three destinations' edits (LMC 1: planes 0 and 1), a
// NoPort and the highest port of a switch among them.
var testEdits = []plan.Edit{
	{Dest: 0, Plane: 0, Switch: 2, Port: 1},
	{Dest: 0, Plane: 1, Switch: 0, Port: plan.NoPort},
	{Dest: 0, Plane: 1, Switch: 1, Port: 5},
	{Dest: 3, Plane: 0, Switch: 0, Port: 0},
	{Dest: 7, Plane: 1, Switch: 2, Port: 2},
}

// TestEditsRoundTrip: an answer of edits arrives as sent, whatever the
// batch size, with the changed destinations and no planes; an answer of
// no edits arrives as one of no changes, still in the edits form.
func TestEditsRoundTrip(t *testing.T) {
	topo := fuzzTopo(t)
	eps := len(topo.Endpoints())
	for _, tc := range []struct {
		edits   []plan.Edit
		changed []int32
	}{{testEdits, []int32{0, 3, 7}}, {[]plan.Edit{}, []int32{}}} {
		for _, per := range []int{1, 2, 4, EditBatchEntries} {
			r := &plan.Routes{Planes: make([]plan.DestPlanes, eps), Token: 9, Base: 5, Changed: tc.changed, Edits: tc.edits}
			var chunks []*pb.Chunk
			send := func(c *pb.Chunk) error { chunks = append(chunks, c); return nil }
			if per == EditBatchEntries {
				if err := SendRoutes(send, topo, r); err != nil {
					t.Fatal(err)
				}
			} else {
				h := &pb.RoutesHeader{Form: pb.RoutesHeader_FORM_PLANES, NumDestinations: uint32(eps), Token: 9, Base: 5,
					NumChanged: uint32(len(tc.changed)), Edits: true, NumEdits: uint32(len(tc.edits))}
				chunks = append(chunks, &pb.Chunk{Part: &pb.Chunk_RoutesHeader{RoutesHeader: h}})
				if err := sendEdits(send, r, per); err != nil {
					t.Fatal(err)
				}
			}
			if want := 1 + (len(tc.edits)+per-1)/per; len(chunks) != want {
				t.Fatalf("%d edits in batches of %d took %d messages, want %d", len(tc.edits), per, len(chunks), want)
			}
			got, err := RecvRouteAnswer(unframe(frame(chunks)), topo, 1)
			if err != nil {
				t.Fatalf("batches of %d: %v", per, err)
			}
			if got.Token != 9 || got.Base != 5 || got.Edits == nil || !slices.Equal(got.Edits, tc.edits) || !slices.Equal(got.Changed, tc.changed) || got.Changed == nil {
				t.Fatalf("batches of %d: token %d base %d changed %v edits %v, want 9 5 %v %v", per, got.Token, got.Base, got.Changed, got.Edits, tc.changed, tc.edits)
			}
			if len(got.Planes) != eps {
				t.Fatalf("batches of %d: %d destinations, want %d", per, len(got.Planes), eps)
			}
			for e, dp := range got.Planes {
				if dp.Planes != nil {
					t.Fatalf("batches of %d: destination %d carries planes", per, e)
				}
			}
			if _, err := RecvRoutes(unframe(frame(chunks)), topo, 1); err == nil || !strings.Contains(err.Error(), "only edits of an earlier answer") {
				t.Fatalf("RecvRoutes took an answer of edits: %v", err)
			}
			if _, err := RecvRoutesOrShape(unframe(frame(chunks)), topo, 1); err == nil || !strings.Contains(err.Error(), "only edits of an earlier answer") {
				t.Fatalf("RecvRoutesOrShape took an answer of edits: %v", err)
			}
		}
	}
}

// TestSendEditsRefusesMismatch: the changed destinations sent in the
// header must be the ones the edits name.
func TestSendEditsRefusesMismatch(t *testing.T) {
	topo := fuzzTopo(t)
	for _, tc := range []struct {
		changed []int32
		want    string
	}{
		{[]int32{0, 3}, "edit 4 names destination 7, not the next changed destination"},
		{[]int32{0, 3, 7, 8}, "4 destinations changed, the edits name 3"},
		{[]int32{0, 4, 7}, "edit 3 names destination 3"},
	} {
		r := &plan.Routes{Planes: make([]plan.DestPlanes, len(topo.Endpoints())), Base: 5, Changed: tc.changed, Edits: testEdits}
		if err := SendRoutes(func(*pb.Chunk) error { return nil }, topo, r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("changed %v: error %v, want %q", tc.changed, err, tc.want)
		}
	}
}

// TestRecvEditsRefusesMalformed feeds hand-made answers of edits, each
// wrong in one way, and wants the error to name what was wrong.
func TestRecvEditsRefusesMalformed(t *testing.T) {
	topo := fuzzTopo(t) // 8 endpoints; 3 switches of 5 ports
	header := func(changed, edits uint32, mod ...func(*pb.RoutesHeader)) *pb.Chunk {
		h := &pb.RoutesHeader{Form: pb.RoutesHeader_FORM_PLANES, NumDestinations: 8, Token: 9, Base: 5, NumChanged: changed, Edits: true, NumEdits: edits}
		for _, m := range mod {
			m(h)
		}
		return &pb.Chunk{Part: &pb.Chunk_RoutesHeader{RoutesHeader: h}}
	}
	batch := func(es ...plan.Edit) *pb.Chunk {
		b := &pb.PlaneEdits{}
		for _, e := range es {
			b.Dest, b.Plane, b.Switch, b.Port = append(b.Dest, uint32(e.Dest)), append(b.Plane, e.Plane), append(b.Switch, uint32(e.Switch)), append(b.Port, e.Port)
		}
		return &pb.Chunk{Part: &pb.Chunk_Edits{Edits: b}}
	}
	raw := func(b *pb.PlaneEdits) *pb.Chunk { return &pb.Chunk{Part: &pb.Chunk_Edits{Edits: b}} }
	e := func(d int32, pl uint8, s int32, p uint8) plan.Edit {
		return plan.Edit{Dest: d, Plane: pl, Switch: s, Port: p}
	}
	tests := []struct {
		name   string
		chunks []*pb.Chunk
		want   string
	}{
		{"all good", []*pb.Chunk{header(2, 3), batch(e(1, 0, 0, 1), e(1, 1, 2, 255)), batch(e(6, 0, 1, 5))}, ""},
		{"no base", []*pb.Chunk{header(1, 1, func(h *pb.RoutesHeader) { h.Base = 0 }), batch(e(1, 0, 0, 1))}, "edits in an answer without a base"},
		{"paths form", []*pb.Chunk{header(0, 0, func(h *pb.RoutesHeader) { h.Form = pb.RoutesHeader_FORM_PATHS })}, "edits in an answer without a base"},
		{"shape only", []*pb.Chunk{header(0, 0, func(h *pb.RoutesHeader) { h.ShapeOnly = true })}, "edits in an answer without a base"},
		{"count without edits", []*pb.Chunk{header(0, 2, func(h *pb.RoutesHeader) { h.Edits = false })}, "2 edits declared in an answer that carries none"},
		{"too many changed", []*pb.Chunk{header(9, 9)}, "9 destinations changed of 8"},
		{"too many edits", []*pb.Chunk{header(1, 2*3+1)}, "7 edits declared for 1 changed destinations of up to 2 planes of 3 switches"},
		{"huge edit count", []*pb.Chunk{header(8, 1<<31)}, "2147483648 edits declared"},
		{"fewer edits than changed", []*pb.Chunk{header(2, 1)}, "1 edits declared for 2 changed destinations"},
		{"columns differ", []*pb.Chunk{header(1, 2), raw(&pb.PlaneEdits{Dest: []uint32{1, 1}, Plane: []byte{0, 0}, Switch: []uint32{0, 1}, Port: []byte{1}})}, "columns of 2 destinations, 2 planes, 2 switches and 1 ports"},
		{"empty batch", []*pb.Chunk{header(1, 1), batch()}, "empty edits batch after 0 edits"},
		{"more than declared", []*pb.Chunk{header(1, 2), batch(e(1, 0, 0, 1)), batch(e(1, 0, 1, 1), e(1, 0, 2, 1))}, "more edits sent than the 2 declared"},
		{"destination", []*pb.Chunk{header(1, 1), batch(e(8, 0, 0, 1))}, "edit 0: destination 8 out of range (8 endpoints)"},
		{"plane", []*pb.Chunk{header(1, 1), batch(e(1, 2, 0, 1))}, "edit 0: destination endpoint 1 plane 2, at most 2 planes"},
		{"switch", []*pb.Chunk{header(1, 2), batch(e(1, 0, 0, 1), e(1, 0, 3, 1))}, "edit 1: destination endpoint 1 plane 0: switch 3 out of range (3 switches)"},
		{"port", []*pb.Chunk{header(1, 1), batch(e(1, 0, 1, 6))}, "edit 0: destination endpoint 1 plane 0: switch 1 (0x0000000000000002) out-port 6 does not exist (switch has 5 ports)"},
		{"repeated entry", []*pb.Chunk{header(1, 2), batch(e(1, 0, 1, 1)), batch(e(1, 0, 1, 2))}, "edit 1 (destination endpoint 1 plane 0 switch 1) does not follow edit 0 (destination endpoint 1 plane 0 switch 1)"},
		{"switch order", []*pb.Chunk{header(1, 2), batch(e(1, 0, 2, 1), e(1, 0, 1, 1))}, "edit 1 (destination endpoint 1 plane 0 switch 1) does not follow"},
		{"plane order", []*pb.Chunk{header(1, 2), batch(e(1, 1, 0, 1), e(1, 0, 2, 1))}, "edit 1 (destination endpoint 1 plane 0 switch 2) does not follow"},
		{"destination order", []*pb.Chunk{header(2, 2), batch(e(2, 0, 0, 1), e(1, 1, 2, 1))}, "edit 1 (destination endpoint 1 plane 1 switch 2) does not follow"},
		{"more destinations than declared", []*pb.Chunk{header(1, 2), batch(e(1, 0, 0, 1), e(2, 0, 0, 1))}, "edit 1 names destination endpoint 2, more than the 1 changed destinations declared"},
		{"fewer destinations than declared", []*pb.Chunk{header(2, 2), batch(e(1, 0, 0, 1), e(1, 0, 1, 1))}, "the edits name 1 destinations, 2 changed destinations declared"},
		{"planes instead", []*pb.Chunk{header(1, 1), {Part: &pb.Chunk_Planes{Planes: &pb.PlaneBatch{}}}}, "got planes chunk, want edits"},
		{"stream ends", []*pb.Chunk{header(1, 2), batch(e(1, 0, 0, 1))}, "stream ended while expecting edits (have 1 of 2)"},
	}
	for _, tc := range tests {
		r, err := RecvRouteAnswer(unframe(frame(tc.chunks)), topo, 1)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == "" && !slices.Equal(r.Changed, []int32{1, 6}):
			t.Errorf("%s: changed %v, want [1 6]", tc.name, r.Changed)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
