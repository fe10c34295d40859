package mkey_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/mkey"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// someCA returns a CA other than the SM's, and its port GUID.
func (b *bench) someCA(skip int) (*netfile.Node, uint64) {
	for _, n := range b.f.Nodes {
		if n.Type == topology.Switch || n.GUID == b.smG {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		g, err := b.fab.PortGUID(n.GUID, 1)
		must(b.t, err)
		return n, g
	}
	b.t.Fatal("no CA")
	return nil, 0
}

// TestForeignKeys: ports that hold a key ibsm was not configured with
// (another SM's, an earlier policy's). Level 0 shows the key to a Get, so
// ibsm learns and replaces it; at level 1 a key in guid2mkey is found by
// trying it; a key nobody told ibsm about leaves the port hidden (reported,
// the rest of the fabric programmed) until its lease expires; at level 2 the
// port does not answer at all (a discovery warning that says why) until
// its lease expires.
func TestForeignKeys(t *testing.T) {
	pol := mkey.Policy{Key: 0x600d, Protect: 1}
	ctx := context.Background()
	tests := []struct {
		name    string
		protect uint8
		inStore bool
		// managedAtOnce: the first sweep re-keys the port.
		managedAtOnce bool
	}{
		{"level 0", 0, false, true},
		{"level 1, key in guid2mkey", 1, true, true},
		{"level 1, unknown key", 1, false, false},
		{"level 2, unknown key", 2, false, false},
		{"level 3, key in guid2mkey", 3, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, 2)
			ca, g := b.someCA(0)
			const foreignKey = 0xf0e1d2c3
			must(t, b.fab.SetMKey(ca.GUID, 1, foreignKey, tc.protect, 5))
			dir := t.TempDir()
			if tc.inStore {
				must(t, os.MkdirAll(dir, 0o700))
				must(t, os.WriteFile(filepath.Join(dir, mkey.KeysFile), mkey.FormatKeys(map[uint64]uint64{g: foreignKey}), 0o600))
			}
			x := b.start(dir, pol)
			rep, err := x.s.HeavySweep(ctx)
			must(t, err)
			if tc.managedAtOnce {
				b.checkKeys(pol)
				b.checkProgrammed(x.s)
				return
			}
			// Not manageable yet: the port keeps the foreign key, the rest
			// of the fabric is programmed and keyed, and the port is named.
			snap, _ := b.fab.PortInfo(ca.GUID, 1)
			if snap.MKey != foreignKey {
				t.Fatalf("port changed without its key: %+v", snap)
			}
			switch tc.protect {
			case 1:
				if st := x.ring.Status(); len(st.Hidden) != 1 || st.Hidden[0] != g {
					t.Fatalf("ring status %+v; want the port hidden", st)
				}
				if !x.ring.Hidden(g) {
					t.Fatal("Hidden(port) = false")
				}
			case 2:
				found := false
				for _, w := range rep.Warnings {
					found = found || strings.Contains(w, "M_Key")
				}
				if !found {
					t.Fatalf("no warning names M_Keys: %q", rep.Warnings)
				}
			}
			if x.s.Applied() == nil {
				t.Fatal("the rest of the fabric was not programmed")
			}
			// The foreign-keyed port refused ibsm's Sets (level 1) or Gets
			// (level 2): violations, so its lease runs. When it expires
			// the port shows its key and ibsm takes it over.
			if !snap.LeaseRunning {
				t.Fatalf("ibsm's refused SMPs did not start the port's lease: %+v", snap)
			}
			b.clk.add(6 * time.Second)
			if _, err := x.s.HeavySweep(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := x.s.LightSweep(ctx); err != nil {
				t.Fatal(err)
			}
			b.checkKeys(pol)
			b.checkProgrammed(x.s)
		})
	}
}

// TestKeyErrorSaysWhy: an SMP that no key opens says so.
func TestKeyErrorSaysWhy(t *testing.T) {
	b := newBench(t, 2)
	ca, _ := b.someCA(0)
	must(t, b.fab.SetMKey(ca.GUID, 1, 0x77, 2, 0))
	x := b.start(t.TempDir(), mkey.Policy{Key: 0x600d, Protect: 2})
	ctx := context.Background()
	if _, err := x.s.HeavySweep(ctx); err != nil {
		t.Fatal(err)
	}
	// The CA never answered: its route ends at a switch port that is up
	// with nobody known behind it.
	c := &mad.Client{T: x.tr}
	fab := x.s.Fabric()
	var path mad.Path
	for _, n := range fab.Nodes {
		for p := range n.Ports {
			if n.Switch != nil && n.Ports[p].Valid && n.Ports[p].PeerGUID == 0 && n.Ports[p].Info.PortState >= 2 {
				path = n.Path.Extend(uint8(p))
			}
		}
	}
	if path == nil {
		t.Fatal("no switch port leads to the silent CA")
	}
	err := c.Get(ctx, path, 0x11, 0, nil)
	var ke *mad.KeyError
	if !errors.As(err, &ke) || ke.Known || !strings.Contains(err.Error(), "M_Key") {
		t.Fatalf("err = %v; want a KeyError for an unknown port", err)
	}
}
