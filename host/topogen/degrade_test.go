package topogen

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// cables lists a file's cables as "a[pa]-b[pb]" with switch-switch ones
// flagged, independent of Degrade's own bookkeeping.
func cables(f *netfile.File) (sw, host map[string]bool) {
	sw, host = map[string]bool{}, map[string]bool{}
	for _, l := range f.Links() {
		k := l.A.Name + "[" + itoa(l.PA) + "]-" + l.B.Name + "[" + itoa(l.PB) + "]"
		if l.A.Type == topology.Switch && l.B.Type == topology.Switch {
			sw[k] = true
		} else {
			host[k] = true
		}
	}
	return sw, host
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestDegrade(t *testing.T) {
	for _, c := range []struct {
		name          string
		args          []string
		d             Degrade
		wantLinks     int // removed switch-to-switch cables
		wantSwitches  int
		wantLinksFrom int // candidates after switch removal
	}{
		// ft2 radix 8: 8 leaves x 4 spines = 32 cables; floor(0.1*32) = 3.
		{"1 in 10 links of a small tree", []string{"ft", "--radix", "8"}, Degrade{Links: 0.1, Seed: 7}, 3, 0, 32},
		// 36 leaves x 18 spines = 648 cables; 1% = 6, 5% = 32.
		{"ft2-648 1%", []string{"ft", "--radix", "36"}, Degrade{Links: 0.01, Seed: 7}, 6, 0, 648},
		{"ft2-648 5%", []string{"ft", "--radix", "36"}, Degrade{Links: 0.05, Seed: 1}, 32, 0, 648},
		// 0.29*100 is 28.999… in binary; the count must still be 29.
		{"binary fraction", []string{"ft", "--arity", "10", "--levels", "2"}, Degrade{Links: 0.29, Seed: 2}, 29, 0, 100},
		// 12 switches, floor(0.25*12) = 3 of the 4 spines; each takes its
		// 8 cables, leaving 8 (one per leaf, so none can go).
		{"switches only", []string{"ft", "--radix", "8"}, Degrade{Switches: 0.25, Seed: 3}, 0, 3, 8},
		// floor(0.09*12) = 1 spine, leaving 24 cables; a quarter go.
		{"switches then links", []string{"ft", "--radix", "8"}, Degrade{Switches: 0.09, Links: 0.25, Seed: 3}, 6, 1, 24},
		{"nothing", []string{"ft", "--radix", "8"}, Degrade{Seed: 3}, 0, 0, 32},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := generate(t, c.args...)
			beforeSw, beforeHost := cables(base)
			out, res, err := c.d.Apply(base)
			if err != nil {
				t.Fatal(err)
			}
			if res.LinksRemoved != c.wantLinks || res.SwitchesRemoved != c.wantSwitches || res.LinksBefore != c.wantLinksFrom || !res.Connected {
				t.Fatalf("result %+v, want %d links of %d and %d switches removed, connected", res, c.wantLinks, c.wantLinksFrom, c.wantSwitches)
			}
			afterSw, afterHost := cables(out)
			// Every host cable survives; switch cables only shrink.
			if len(afterHost) != len(beforeHost) {
				t.Errorf("host cables %d -> %d", len(beforeHost), len(afterHost))
			}
			for k := range beforeHost {
				if !afterHost[k] {
					t.Errorf("host cable %s removed", k)
				}
			}
			for k := range afterSw {
				if !beforeSw[k] {
					t.Errorf("cable %s appeared", k)
				}
			}
			if got := len(f(out, topology.Switch)); got != len(f(base, topology.Switch))-c.wantSwitches {
				t.Errorf("%d switches left, want %d", got, len(f(base, topology.Switch))-c.wantSwitches)
			}
			if gone := len(beforeSw) - len(afterSw); c.wantSwitches == 0 && gone != c.wantLinks {
				t.Errorf("%d switch cables gone, want %d", gone, c.wantLinks)
			}
			if len(f(out, topology.CA)) != len(f(base, topology.CA)) {
				t.Error("CAs lost")
			}
			// Deterministic per seed, different across seeds.
			again, _, err := c.d.Apply(base)
			if err != nil {
				t.Fatal(err)
			}
			if write(t, again) != write(t, out) {
				t.Error("same seed, different file")
			}
			if c.wantLinks > 0 {
				d2 := c.d
				d2.Seed++
				other, _, err := d2.Apply(base)
				if err != nil {
					t.Fatal(err)
				}
				if write(t, other) == write(t, out) {
					t.Error("different seeds, same file")
				}
			}
			// The input is untouched and the output is a valid file that
			// parses back and builds a topology.
			if s, _ := cables(base); len(s) != len(beforeSw) {
				t.Error("Apply modified its input")
			}
			back, err := netfile.Parse("degraded.net", strings.NewReader(write(t, out)))
			if err != nil {
				t.Fatalf("degraded file does not parse: %v", err)
			}
			if _, err := back.Topology(); err != nil {
				t.Fatalf("degraded file does not build: %v", err)
			}
		})
	}
}

func f(file *netfile.File, typ topology.NodeType) []*netfile.Node {
	var out []*netfile.Node
	for _, n := range file.Nodes {
		if n.Type == typ {
			out = append(out, n)
		}
	}
	return out
}

func write(t *testing.T, f *netfile.File) string {
	t.Helper()
	var b bytes.Buffer
	if err := netfile.Write(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestDegradeConnectivity(t *testing.T) {
	// A ring of 6 switches has 6 cables; removing 2 splits it unless the
	// two are the same... they never are, so every draw splits.
	ring := generate(t, "ring", "--switches", "6")
	if _, _, err := (Degrade{Links: 0.34, Seed: 1}).Apply(ring); err == nil || !strings.Contains(err.Error(), "--allow-disconnected") {
		t.Fatalf("err = %v, want every draw to split the ring", err)
	}
	out, res, err := (Degrade{Links: 0.34, Seed: 1, AllowDisconnected: true}).Apply(ring)
	if err != nil || res.Connected || res.LinksRemoved != 2 || res.Redraws != 0 {
		t.Fatalf("res %+v err %v: want the first (split) draw kept", res, err)
	}
	if fileConnected(out) {
		t.Error("fileConnected says a split ring is whole")
	}
	// One cable of a ring never splits it.
	if _, res, err := (Degrade{Links: 0.17, Seed: 1}).Apply(ring); err != nil || !res.Connected || res.LinksRemoved != 1 {
		t.Errorf("res %+v err %v", res, err)
	}
	// Cutting 20 of the 32 cables of a radix-8 tree usually strands a leaf:
	// the draws must be redone, and the result still connected.
	out, res, err = (Degrade{Links: 0.625, Seed: 5}).Apply(generate(t, "ft", "--radix", "8"))
	if err != nil || !res.Connected || res.Redraws == 0 || !fileConnected(out) {
		t.Errorf("res %+v err %v: want a connected draw after redraws", res, err)
	}
}

func TestDegradeErrors(t *testing.T) {
	tree := generate(t, "ft", "--radix", "8")
	for _, c := range []struct {
		d    Degrade
		want string
	}{
		{Degrade{Links: 1.5}, "between 0 and 1"},
		{Degrade{Links: -0.1}, "between 0 and 1"},
		// 8 of 12 switches are leaves; half the switches is 6 > 4 spines.
		{Degrade{Switches: 0.5}, "at most 0.3333"},
	} {
		if _, _, err := c.d.Apply(tree); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.d, err, c.want)
		}
	}
}

func TestDegradeCLI(t *testing.T) {
	var full, deg, deg2 bytes.Buffer
	if _, err := Write([]string{"ft", "--radix", "8", "--remove-links", "0.1", "--seed", "7"}, &deg); err != nil {
		t.Fatal(err)
	}
	if _, err := Write([]string{"ft", "--radix", "8", "--remove-links", "0.1", "--seed", "7"}, &deg2); err != nil {
		t.Fatal(err)
	}
	if deg.String() != deg2.String() {
		t.Error("same command line, different bytes")
	}
	if !strings.Contains(deg.String(), "# degraded with seed 7: removed 0 of 12 switches and 3 of 32 switch-to-switch cables") {
		t.Errorf("header:\n%s", deg.String()[:300])
	}
	// Loading the full tree from a file and degrading it gives the same
	// cables as degrading the generated one.
	if _, err := Write([]string{"ft", "--radix", "8"}, &full); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ft.net")
	if err := os.WriteFile(path, full.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var loaded bytes.Buffer
	if _, err := Write([]string{"file", "--in", path, "--remove-links", "0.1", "--seed", "7"}, &loaded); err != nil {
		t.Fatal(err)
	}
	a, err := netfile.Parse("a", &deg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := netfile.Parse("b", &loaded)
	if err != nil {
		t.Fatal(err)
	}
	sa, _ := cables(a)
	sb, _ := cables(b)
	if len(sa) != 29 || len(sb) != 29 {
		t.Fatalf("cables %d / %d, want 29", len(sa), len(sb))
	}
	for k := range sa {
		if !sb[k] {
			t.Errorf("cable %s differs between generated and loaded", k)
		}
	}
	// random keeps its own --seed for both generation and removal.
	var r bytes.Buffer
	if _, err := Write([]string{"random", "--switches", "16", "--degree", "6", "--cas", "32", "--seed", "4", "--remove-links", "0.1"}, &r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.String(), "degraded with seed 4") {
		t.Error("random: degradation did not use --seed")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"file"}, "--in FILE"},
		{[]string{"file", "--in", path, "--width", "1x"}, "keeps its own"},
		{[]string{"ft", "--radix", "8", "--allow-disconnected"}, "without --remove-links"},
		{[]string{"file", "--in", filepath.Join(t.TempDir(), "missing.net")}, "missing.net"},
	} {
		if _, err := Write(c.args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.args, err, c.want)
		}
	}
}

// TestWriteReportsDegradation: Write returns what the header says was
// removed, writes the same file every time, and returns nil for a full
// fabric.
func TestWriteReportsDegradation(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		degraded bool
	}{
		{[]string{"ft", "--radix", "8", "--levels", "2"}, false},
		{[]string{"ft", "--radix", "8", "--levels", "2", "--remove-links", "0.25", "--seed", "3"}, true},
	} {
		var w, r bytes.Buffer
		deg, err := Write(tc.args, &w)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Write(tc.args, &r); err != nil {
			t.Fatal(err)
		}
		if w.String() != r.String() {
			t.Errorf("%q: two Writes wrote different files", tc.args)
		}
		if (deg != nil) != tc.degraded {
			t.Fatalf("%q: result %+v, want degraded %v", tc.args, deg, tc.degraded)
		}
		if deg == nil {
			continue
		}
		if deg.LinksBefore == 0 || deg.LinksRemoved != deg.LinksBefore/4 {
			t.Errorf("%q: removed %d of %d cables, want a quarter", tc.args, deg.LinksRemoved, deg.LinksBefore)
		}
		want := fmt.Sprintf("and %d of %d switch-to-switch cables", deg.LinksRemoved, deg.LinksBefore)
		if !strings.Contains(w.String(), want) {
			t.Errorf("%q: header lacks %q", tc.args, want)
		}
	}
	if _, err := Write([]string{"ft", "--bogus"}, io.Discard); err == nil {
		t.Error("bad flag accepted")
	}
}
