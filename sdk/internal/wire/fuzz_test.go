package wire

import (
	"encoding/binary"
	"io"
	"slices"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
	"google.golang.org/protobuf/proto"
)

// The fuzzers feed the decoders a stream of chunks taken from arbitrary
// bytes: each chunk is a 2-byte little-endian length and that many bytes of
// protobuf, unmarshalled as pb.Chunk (undecodable ones end the stream with
// an error, as a broken gRPC stream would). Seeds are the encodings of real
// plans, so the fuzzer starts deep inside valid streams.

func frame(chunks []*pb.Chunk) []byte {
	var out []byte
	for _, c := range chunks {
		b, err := proto.Marshal(c)
		if err != nil {
			panic(err)
		}
		out = binary.LittleEndian.AppendUint16(out, uint16(len(b)))
		out = append(out, b...)
	}
	return out
}

func unframe(data []byte) Recv {
	return func() (*pb.Chunk, error) {
		if len(data) == 0 {
			return nil, io.EOF
		}
		if len(data) < 2 {
			data = nil
			return nil, io.ErrUnexpectedEOF
		}
		n := int(binary.LittleEndian.Uint16(data))
		data = data[2:]
		if n > len(data) {
			n = len(data)
		}
		var c pb.Chunk
		err := proto.Unmarshal(data[:n], &c)
		data = data[n:]
		if err != nil {
			return nil, err
		}
		return &c, nil
	}
}

func collect(t testing.TB, f func(Send) error) []byte {
	var chunks []*pb.Chunk
	if err := f(func(c *pb.Chunk) error { chunks = append(chunks, c); return nil }); err != nil {
		t.Fatal(err)
	}
	return frame(chunks)
}

// fuzzTopo is a ring of three switches (4 ports, port 4 free) with one CA
// each and a two-port CA on switches 0 and 1.
func fuzzTopo(t testing.TB) *topology.Topology {
	b := topology.NewBuilder()
	up := topology.Port{State: topology.StateActive, VLCap: 8, Width: 2, Speed: 1}
	for s := uint64(1); s <= 3; s++ {
		n := topology.Node{GUID: s, Type: topology.Switch, Ports: []topology.Port{{GUID: s, State: topology.StateActive}, up, up, up, {}, up}}
		if err := b.AddNode(n); err != nil {
			t.Fatal(err)
		}
		ca := up
		ca.GUID = 0x100*s + 1
		if err := b.AddNode(topology.Node{GUID: 0x100 * s, Type: topology.CA, Ports: []topology.Port{{}, ca}}); err != nil {
			t.Fatal(err)
		}
		b.Link(s, 3, 0x100*s, 1)
		b.Link(s, 1, s%3+1, 2)
	}
	p1, p2 := up, up
	p1.GUID, p2.GUID = 0x1001, 0x1002
	if err := b.AddNode(topology.Node{GUID: 0x1000, Type: topology.CA, Ports: []topology.Port{{}, p1, p2}}); err != nil {
		t.Fatal(err)
	}
	b.Link(1, 5, 0x1000, 1)
	b.Link(2, 5, 0x1000, 2)
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// fuzzPlans: planes (two identical trees per destination, LMC 1), explicit
// paths, a LID plan carrying those planes and a two-VL plan.
func fuzzPlans(t testing.TB, topo *topology.Topology) (*plan.Routes, *plan.Routes, *plan.LIDPlan, *plan.VLPlan) {
	eps := topo.Endpoints()
	sw := topo.Switches()
	planes := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	for e := range eps {
		pl := make(plan.Plane, len(sw))
		for s := range pl {
			pl[s] = uint8(1 + (e+s)%3)
		}
		planes.Planes[e] = plan.DestPlanes{Planes: []plan.Plane{pl, append(plan.Plane(nil), pl...)}}
	}
	paths := &plan.Routes{Paths: []plan.Path{
		{Src: 1, Dst: 2, Hops: []plan.Hop{{Switch: sw[0], In: 3, Out: 1}, {Switch: sw[1], In: 2, Out: 3}}},
		{Src: 2, Dst: 1, Hops: []plan.Hop{{Switch: sw[1], In: 3, Out: 2}}},
	}}
	l := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps)), Rule: plan.DLIDSpread,
		Overrides: []plan.DLIDOverride{{Src: 0, Dst: 1, Offset: 1}}}
	for e := range eps {
		l.Ports[e] = plan.PortLID{Base: uint16(2 + 2*e), LMC: 1}
	}
	l.Planes = planes.Planes
	v := &plan.VLPlan{SLByDLID: []uint8{0, 1, 2, 3, 0, 1}, VLs: 2,
		Overrides: []plan.SLOverride{{Src: 1, DLID: 4, SL: 1}},
		SL2VL:     []plan.SL2VLEntry{{Node: sw[0], In: 1, Out: 2, VL: [16]uint8{1, 0, 1}}}}
	for i := range v.Default {
		v.Default[i] = uint8(i % 2)
	}
	return planes, paths, l, v
}

// FuzzRecvTopologyPatch feeds patches against a held topology: whatever
// decodes must be a valid topology.
func FuzzRecvTopologyPatch(f *testing.F) {
	base := fuzzTopo(f)
	to := cut(f, base, base.Switches()[0], 1)
	seed := collect(f, func(s Send) error { _, err := SendNamedTopology(s, to, 7, base, 3); return err })
	held := func(uint64) *topology.Topology { return base }
	if got, _, err := RecvNamedTopology(unframe(seed), held); err != nil || got.Hash() != to.Hash() {
		f.Fatalf("seed does not round-trip: %v", err)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, _, err := RecvNamedTopology(unframe(data), held)
		if err != nil {
			return
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("decoded topology is invalid: %v", err)
		}
	})
}

func FuzzRecvTopology(f *testing.F) {
	topo := fuzzTopo(f)
	seed := collect(f, func(s Send) error { return SendTopology(s, topo) })
	if got, err := recvTopology(unframe(seed)); err != nil || got.Hash() != topo.Hash() {
		f.Fatalf("seed does not round-trip: %v", err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := recvTopology(unframe(data))
		if err != nil {
			return
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("decoded topology is invalid: %v", err)
		}
		_ = got.Hash()
	})
}

func FuzzRecvRoutes(f *testing.F) {
	topo := fuzzTopo(f)
	planes, paths, _, _ := fuzzPlans(f, topo)
	for _, r := range []*plan.Routes{planes, paths} {
		seed := collect(f, func(s Send) error { return SendRoutes(s, topo, r) })
		if _, err := RecvRoutes(unframe(seed), topo, 1); err != nil {
			f.Fatalf("seed does not decode: %v", err)
		}
		f.Add(uint8(1), seed)
	}
	// Planes split one destination per batch, so the fuzzer starts from a
	// multi-batch stream too.
	split := collect(f, func(s Send) error {
		h := &pb.RoutesHeader{Form: pb.RoutesHeader_FORM_PLANES, NumDestinations: uint32(len(planes.Planes))}
		if err := s(&pb.Chunk{Part: &pb.Chunk_RoutesHeader{RoutesHeader: h}}); err != nil {
			return err
		}
		return sendPlanes(s, topo, planes.Planes, nil, 1)
	})
	if _, err := RecvRoutes(unframe(split), topo, 1); err != nil {
		f.Fatalf("split seed does not decode: %v", err)
	}
	f.Add(uint8(1), split)
	f.Fuzz(func(t *testing.T, lmc uint8, data []byte) {
		r, err := RecvRoutes(unframe(data), topo, lmc%8)
		if err != nil {
			return
		}
		// What the decoder accepted must be safe to realise.
		if r.IsPlanes() {
			l := &plan.LIDPlan{Ports: make([]plan.PortLID, len(topo.Endpoints()))}
			for e := range l.Ports {
				l.Ports[e] = plan.PortLID{Base: uint16(e + 1)}
			}
			if _, err := plan.Realize(topo, r, l); err != nil {
				t.Fatalf("accepted planes do not realise: %v", err)
			}
		}
	})
}

// FuzzRecvRouteAnswer: a routing engine's answer may carry only the
// destinations changed since an earlier one, their planes whole or as
// edits; whatever the decoder accepts realises onto the earlier tables
// (applied to the earlier planes, for edits) without a panic.
func FuzzRecvRouteAnswer(f *testing.F) {
	topo := fuzzTopo(f)
	planes, _, _, _ := fuzzPlans(f, topo)
	l := &plan.LIDPlan{Ports: make([]plan.PortLID, len(topo.Endpoints()))}
	for e := range l.Ports {
		l.Ports[e] = plan.PortLID{Base: uint16(e + 1)}
	}
	base, err := plan.Realize(topo, planes, l)
	if err != nil {
		f.Fatal(err)
	}
	for _, changed := range [][]int32{{}, {0}, {0, int32(len(planes.Planes) - 1)}} {
		r := *planes
		r.Token, r.Base, r.Changed = 7, 5, changed
		seed := collect(f, func(s Send) error { return SendRoutes(s, topo, &r) })
		if _, err := RecvRouteAnswer(unframe(seed), topo, 1); err != nil {
			f.Fatalf("seed does not decode: %v", err)
		}
		if _, err := RecvRoutes(unframe(seed), topo, 1); err == nil {
			f.Fatal("RecvRoutes accepted an answer of changes")
		}
		f.Add(uint8(1), seed)
	}
	// Answers of edits: none, three in one batch, and the same one entry a
	// batch so that the fuzzer starts from a multi-batch stream too.
	edits := []plan.Edit{{Dest: 0, Plane: 1, Switch: 2, Port: 4}, {Dest: 2, Plane: 0, Switch: 0, Port: plan.NoPort}, {Dest: 2, Plane: 0, Switch: 1, Port: 5}}
	for _, tc := range []struct {
		changed []int32
		edits   []plan.Edit
		per     int
	}{{[]int32{}, []plan.Edit{}, EditBatchEntries}, {[]int32{0, 2}, edits, EditBatchEntries}, {[]int32{0, 2}, edits, 1}} {
		r := &plan.Routes{Planes: make([]plan.DestPlanes, len(planes.Planes)), Token: 7, Base: 5, Changed: tc.changed, Edits: tc.edits}
		seed := collect(f, func(s Send) error {
			h := &pb.RoutesHeader{Form: pb.RoutesHeader_FORM_PLANES, NumDestinations: uint32(len(r.Planes)), Token: r.Token, Base: r.Base,
				NumChanged: uint32(len(r.Changed)), Edits: true, NumEdits: uint32(len(r.Edits))}
			if err := s(&pb.Chunk{Part: &pb.Chunk_RoutesHeader{RoutesHeader: h}}); err != nil {
				return err
			}
			return sendEdits(s, r, tc.per)
		})
		if got, err := RecvRouteAnswer(unframe(seed), topo, 1); err != nil || !slices.Equal(got.Edits, r.Edits) {
			f.Fatalf("edits seed does not round-trip: %v", err)
		}
		f.Add(uint8(1), seed)
	}
	lim := newPortCheck(topo).lim
	f.Fuzz(func(t *testing.T, lmc uint8, data []byte) {
		r, err := RecvRouteAnswer(unframe(data), topo, lmc%8)
		if err != nil || !r.IsPlanes() {
			return
		}
		if r.Edits != nil {
			checkEdits(t, r, len(topo.Endpoints()), 1<<(lmc%8), lim)
			// Applied to the earlier planes (the host checks each plane
			// index against them), they give planes that realise.
			got := &plan.Routes{Planes: make([]plan.DestPlanes, len(planes.Planes))}
			for e, d := range planes.Planes {
				for _, pl := range d.Planes {
					got.Planes[e].Planes = append(got.Planes[e].Planes, slices.Clone(pl))
				}
			}
			for _, e := range r.Edits {
				if d := got.Planes[e.Dest].Planes; int(e.Plane) < len(d) {
					d[e.Plane][e.Switch] = e.Port
				}
			}
			if _, err := plan.Realize(topo, got, l); err != nil {
				t.Fatalf("accepted edits do not realise: %v", err)
			}
			// Onto the earlier tables they may be refused (a plane that
			// no LID realises alone), never panic.
			_, _ = plan.RealizeChanged(base, topo, r, l)
			return
		}
		if r.Base == 0 {
			if _, err := plan.Realize(topo, r, l); err != nil {
				t.Fatalf("accepted planes do not realise: %v", err)
			}
			return
		}
		for _, e := range r.Changed {
			if len(r.Planes[e].Planes) == 0 {
				t.Fatalf("changed destination %d arrived without planes", e)
			}
		}
		if _, err := plan.RealizeChanged(base, topo, r, l); err != nil {
			t.Fatalf("accepted changes do not realise: %v", err)
		}
	})
}

// checkEdits fails t unless r's edits are what the decoder promises:
// strictly ascending, in range, each port one of its switch or NoPort,
// and r.Changed the destinations they name, in order, each once.
func checkEdits(t *testing.T, r *plan.Routes, neps, maxPlanes int, lim []uint8) {
	t.Helper()
	var changed []int32
	for i, e := range r.Edits {
		if e.Dest < 0 || int(e.Dest) >= neps || int(e.Plane) >= maxPlanes || e.Switch < 0 || int(e.Switch) >= len(lim) ||
			(e.Port != plan.NoPort && e.Port > lim[e.Switch]) {
			t.Fatalf("accepted edit %d out of range: %+v", i, e)
		}
		if i > 0 && !editBefore(r.Edits[i-1], e) {
			t.Fatalf("accepted edit %d out of order: %+v after %+v", i, e, r.Edits[i-1])
		}
		if i == 0 || e.Dest != r.Edits[i-1].Dest {
			changed = append(changed, e.Dest)
		}
	}
	if len(changed) != len(r.Changed) || !slices.Equal(changed, r.Changed) {
		t.Fatalf("accepted changed destinations %v, the edits name %v", r.Changed, changed)
	}
	for e, d := range r.Planes {
		if d.Planes != nil {
			t.Fatalf("accepted an answer of edits with planes for destination %d", e)
		}
	}
}

func FuzzRecvLIDPlan(f *testing.F) {
	topo := fuzzTopo(f)
	planes, _, l, _ := fuzzPlans(f, topo)
	seed := collect(f, func(s Send) error { return SendLIDPlan(s, topo, l) })
	if _, err := RecvLIDPlan(unframe(seed), topo); err != nil {
		f.Fatalf("seed does not decode: %v", err)
	}
	f.Add(seed)
	noPlanes := *l
	noPlanes.Planes = nil
	f.Add(collect(f, func(s Send) error { return SendLIDPlan(s, topo, &noPlanes) }))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := RecvLIDPlan(unframe(data), topo)
		if err != nil {
			return
		}
		// Realize must reject, never panic on, what the decoder let through
		// (zero bases and duplicates are the verifier's business).
		_, _ = plan.Realize(topo, planes, got)
		for e := range got.Ports {
			_ = got.DLID(int32(e), int32(e))
		}
	})
}

func FuzzRecvVLPlan(f *testing.F) {
	topo := fuzzTopo(f)
	_, _, _, v := fuzzPlans(f, topo)
	seed := collect(f, func(s Send) error { return SendVLPlan(s, v) })
	if _, err := RecvVLPlan(unframe(seed), topo); err != nil {
		f.Fatalf("seed does not decode: %v", err)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := RecvVLPlan(unframe(data), topo)
		if err != nil {
			return
		}
		for _, o := range got.Overrides {
			_ = got.SL(o.Src, o.DLID)
		}
	})
}

func FuzzRecvPrevious(f *testing.F) {
	guids := []uint64{0x101, 0x201, 0x1001}
	prev := map[uint64]uint16{0x101: 1, 0x201: 5, 0x1001: 0xBFFF}
	f.Add(uint32(3), collect(f, func(s Send) error { return SendPrevious(s, prev, guids) }))
	f.Fuzz(func(t *testing.T, n uint32, data []byte) {
		got, err := RecvPrevious(unframe(data), n)
		if err != nil {
			return
		}
		for g, lid := range got {
			if lid == 0 || lid > plan.MaxUnicastLID {
				t.Fatalf("accepted port %#x with LID %d", g, lid)
			}
		}
	})
}

func FuzzSchemaFromProto(f *testing.F) {
	s, err := SchemaToProto(schema.Block{Attributes: []schema.Attribute{
		{Name: "roots", Type: cty.List(cty.String), Doc: "root GUIDs"},
		{Name: "lmc", Type: cty.Number, Default: cty.NumberIntVal(1)},
	}})
	if err != nil {
		f.Fatal(err)
	}
	b, err := proto.Marshal(s)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var m pb.Schema
		if proto.Unmarshal(data, &m) != nil {
			return
		}
		_, _ = SchemaFromProto(&m)
	})
}

func FuzzConfigFromProto(f *testing.F) {
	r, err := ConfigToProto(cty.ObjectVal(map[string]cty.Value{
		"roots": cty.ListVal([]cty.Value{cty.StringVal("0x1")}),
		"lmc":   cty.NumberIntVal(2),
		"opts":  cty.MapVal(map[string]cty.Value{"a": cty.True}),
	}))
	if err != nil {
		f.Fatal(err)
	}
	b, err := proto.Marshal(r)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var m pb.ConfigureRequest
		if proto.Unmarshal(data, &m) != nil {
			return
		}
		_, _ = ConfigFromProto(&m)
	})
}
