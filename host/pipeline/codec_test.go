package pipeline

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/ibsm/ibsm/sdk/plan"
)

// TestCacheRoundTrip: every result kind read back from disk equals what
// was stored, down to nil versus empty forwarding trees, and hashes the
// same (the key of everything downstream).
func TestCacheRoundTrip(t *testing.T) {
	planes := []plan.DestPlanes{
		{Planes: []plan.Plane{{1, 2, plan.NoPort}, {0, 3, 4}}},
		{}, // a destination nobody routes to
		{Planes: []plan.Plane{nil, {}, {7}}},
	}
	cases := []struct {
		name string
		v    any
	}{
		{"routes planes", &plan.Routes{Planes: planes}},
		{"routes empty planes", &plan.Routes{Planes: []plan.DestPlanes{}}},
		{"routes paths", &plan.Routes{Paths: []plan.Path{{Src: 1, Dst: 2, Hops: []plan.Hop{{Switch: 3, In: 1, Out: 2}}}}}},
		{"lids", &plan.LIDPlan{Ports: []plan.PortLID{{Base: 1}, {Base: 4, LMC: 2}}, Rule: plan.DLIDSpread, Overrides: []plan.DLIDOverride{{Src: 1, Dst: 0, Offset: 3}}}},
		{"lids with planes", &plan.LIDPlan{Ports: []plan.PortLID{{Base: 1}}, Planes: planes}},
		{"vls", &plan.VLPlan{SLByDLID: []uint8{0, 1, 2}, Default: [16]uint8{1}, SL2VL: []plan.SL2VLEntry{{Node: 2, In: 1, Out: 3, VL: [16]uint8{0, 1}}}, VLs: 2}},
		{"vls without SL2VL tables", &plan.VLPlan{VLs: 1}},
		{"vls with an empty SL2VL list", &plan.VLPlan{SL2VL: []plan.SL2VLEntry{}, VLs: 1}},
		{"verdict", &verdict{OK: true, Warnings: []string{"w"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			put(NewCache(dir), tc.v)
			got := get(t, NewCache(dir), tc.v) // a fresh cache reads the file
			if !reflect.DeepEqual(got, tc.v) {
				t.Fatalf("read back %#v\nstored    %#v", got, tc.v)
			}
			switch w := tc.v.(type) {
			case *plan.Routes:
				if hashRoutes(got.(*plan.Routes)) != hashRoutes(w) {
					t.Error("routes hash changed through the cache")
				}
			case *plan.LIDPlan:
				if hashLIDs(got.(*plan.LIDPlan)) != hashLIDs(w) {
					t.Error("LID plan hash changed through the cache")
				}
			}
		})
	}
}

func put(c *Cache, v any) {
	switch x := v.(type) {
	case *plan.Routes:
		Put(c, "s", 1, x)
	case *plan.LIDPlan:
		Put(c, "s", 1, x)
	case *plan.VLPlan:
		Put(c, "s", 1, x)
	case *verdict:
		Put(c, "s", 1, x)
	}
}

func get(t *testing.T, c *Cache, like any) any {
	t.Helper()
	var v any
	var ok bool
	switch like.(type) {
	case *plan.Routes:
		v, ok = Get[plan.Routes](c, "s", 1)
	case *plan.LIDPlan:
		v, ok = Get[plan.LIDPlan](c, "s", 1)
	case *plan.VLPlan:
		v, ok = Get[plan.VLPlan](c, "s", 1)
	case *verdict:
		v, ok = Get[verdict](c, "s", 1)
	}
	if !ok {
		t.Fatalf("stored result not found: %v", c.Problems())
	}
	return v
}

// TestCacheTruncatedIsAMiss: a payload cut anywhere (and re-checksummed,
// so only the format can tell) is a miss reported as corrupt.
func TestCacheTruncatedIsAMiss(t *testing.T) {
	r := &plan.Routes{Planes: []plan.DestPlanes{{Planes: []plan.Plane{{1, 2, 3}, {4, 5}}}, {Planes: []plan.Plane{{6}}}}}
	vls := &plan.VLPlan{SLByDLID: []uint8{0, 1}, SL2VL: []plan.SL2VLEntry{{Node: 1, In: 2, Out: 3, VL: [16]uint8{1}}, {Node: 4, VL: [16]uint8{15: 2}}}, VLs: 3}
	for _, c := range []struct {
		v     any
		empty func() any
	}{{r, func() any { return new(plan.Routes) }}, {vls, func() any { return new(plan.VLPlan) }}} {
		var buf bytes.Buffer
		if err := writePayload(&buf, c.v); err != nil {
			t.Fatal(err)
		}
		full := buf.Bytes()
		for cut := 0; cut < len(full); cut++ {
			if err := decodePayload(full[:cut], c.empty()); err == nil {
				t.Fatalf("%T payload cut at %d of %d decoded", c.v, cut, len(full))
			}
		}
		if err := decodePayload(append(append([]byte(nil), full...), 0), c.empty()); err == nil {
			t.Fatalf("%T: trailing byte accepted", c.v)
		}
	}
	var buf bytes.Buffer
	if err := writePayload(&buf, r); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()
	dir := t.TempDir()
	c := NewCache(dir)
	Put(c, "routing", 1, r)
	path := c.path("routing", 1)
	writeChecked(t, path, full[:len(full)-2])
	if _, ok := Get[plan.Routes](NewCache(dir), "routing", 1); ok {
		t.Fatal("truncated file was a hit")
	}
	c2 := NewCache(dir)
	writeChecked(t, path, full[:len(full)-2])
	Get[plan.Routes](c2, "routing", 1)
	if p := c2.Problems(); len(p) != 1 || !strings.Contains(p[0], "corrupt") {
		t.Errorf("problems %q, want one corrupt file", p)
	}
}

// writeChecked writes payload as a cache file with a valid checksum.
func writeChecked(t *testing.T, path string, payload []byte) {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString(fileMagic)
	buf.Write(make([]byte, 8))
	buf.Write(payload)
	data := buf.Bytes()
	binary.LittleEndian.PutUint64(data[len(fileMagic):], xxhash.Sum64(data[len(fileMagic)+8:]))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOldFormatIsQuietMiss: a file an earlier format wrote (a gob after
// its magic) is recomputed and removed without a corruption warning.
func TestOldFormatIsQuietMiss(t *testing.T) {
	for _, magic := range oldMagics {
		dir := t.TempDir()
		c := NewCache(dir)
		var buf bytes.Buffer
		buf.WriteString(magic)
		buf.Write(make([]byte, 8))
		if err := gob.NewEncoder(&buf).Encode(&plan.VLPlan{SL2VL: []plan.SL2VLEntry{{Node: 1}}}); err != nil {
			t.Fatal(err)
		}
		path := c.path("vls", 1)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, ok := Get[plan.VLPlan](c, "vls", 1); ok {
			t.Fatalf("%q file was a hit", magic)
		}
		if p := c.Problems(); len(p) != 0 {
			t.Errorf("%q file reported: %q", magic, p)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%q file kept: %v", magic, err)
		}
	}
}

// FuzzDecodePayload: no payload panics the decoder; what decodes
// re-encodes to a payload that decodes to the same result.
func FuzzDecodePayload(f *testing.F) {
	for _, r := range []*plan.Routes{
		{Planes: []plan.DestPlanes{{Planes: []plan.Plane{{1, 2}, nil}}, {}}},
		{Paths: []plan.Path{{Src: 1, Dst: 2}}},
	} {
		var buf bytes.Buffer
		if err := writePayload(&buf, r); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := new(plan.Routes)
		if decodePayload(data, r) != nil {
			return
		}
		var buf bytes.Buffer
		if err := writePayload(&buf, r); err != nil {
			t.Fatal(err)
		}
		again := new(plan.Routes)
		if err := decodePayload(buf.Bytes(), again); err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("re-encoded payload decodes to %#v (%v), want %#v", again, err, r)
		}
	})
}

// TestPutBehindKeepsOrder: writes behind the caller land in Put order
// (the last result stored under a key is the one on disk) and Flush
// returns only once they are all there.
func TestPutBehindKeepsOrder(t *testing.T) {
	dir := t.TempDir()
	c := NewCache(dir)
	for i := range 20 {
		putBehind(c, "vl", Key(i%2), &plan.VLPlan{VLs: i})
	}
	c.Flush()
	for k, want := range map[Key]int{0: 18, 1: 19} {
		got, ok := Get[plan.VLPlan](NewCache(dir), "vl", k)
		if !ok || got.VLs != want {
			t.Fatalf("key %v on disk: %+v (found %v), want VLs %d", k, got, ok, want)
		}
	}
}

// writePayload writes v's payload as the cache does.
func writePayload(w io.Writer, v any) error {
	p, err := newPayload(v)
	if err != nil {
		return err
	}
	return p.writeTo(w)
}
