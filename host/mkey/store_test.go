package mkey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDerive pins the derivation: changing it would lock a restarted ibsm
// out of every port an older version keyed at protection level 2.
func TestDerive(t *testing.T) {
	const secret = "correct horse battery staple"
	got := Derive(secret, 0x0002c90300000001)
	if got != Derive(secret, 0x0002c90300000001) || got == 0 {
		t.Fatal("Derive is not a non-zero function of its inputs")
	}
	if got != 0x751206c9c0565e5e { // HMAC-SHA256 computed independently (Python hmac)
		t.Fatalf("Derive(%q, 0x0002c90300000001) = %#x; the derivation changed", secret, got)
	}
	seen := map[uint64]bool{}
	for g := uint64(1); g <= 1000; g++ {
		k := Derive(secret, g)
		if k == 0 || seen[k] {
			t.Fatalf("GUID %#x: key %#x zero or repeated", g, k)
		}
		seen[k] = true
	}
	if Derive(secret+"!", 1) == Derive(secret, 1) {
		t.Fatal("the key does not depend on the secret")
	}
	p := Policy{Secret: secret, Protect: 2, Lease: 90 * time.Second}
	if p.KeyFor(7) != Derive(secret, 7) || !p.Enabled() || p.LeaseSeconds() != 90 {
		t.Fatalf("policy %+v", p)
	}
	if q := (Policy{Key: 5, Lease: 100 * time.Hour}); q.KeyFor(7) != 5 || q.LeaseSeconds() != 0xFFFF {
		t.Fatal("single-key policy")
	}
	if (Policy{}).Enabled() {
		t.Fatal("empty policy enabled")
	}
}

func TestStoreFormats(t *testing.T) {
	keys := map[uint64]uint64{0x2c90300000001: 0xdeadbeef, 0x10: 0}
	out := FormatKeys(keys)
	want := "0x0000000000000010 0x0000000000000000\n\n0x0002c90300000001 0x00000000deadbeef\n\n"
	if string(out) != want {
		t.Fatalf("FormatKeys:\n%s", out)
	}
	back, err := ParseKeys("guid2mkey", strings.NewReader(string(out)))
	if err != nil || len(back) != 2 || back[0x2c90300000001] != 0xdeadbeef {
		t.Fatalf("round trip: %v %v", back, err)
	}
	nb := map[End]End{{1, 2}: {3, 4}, {3, 4}: {1, 2}}
	nout := FormatNeighbors(nb)
	if !strings.HasPrefix(string(nout), "0x0000000000000001:2 0x0000000000000003:4\n\n") {
		t.Fatalf("FormatNeighbors:\n%s", nout)
	}
	nback, err := ParseNeighbors("neighbors", strings.NewReader(string(nout)))
	if err != nil || len(nback) != 2 || nback[End{3, 4}] != (End{1, 2}) {
		t.Fatalf("round trip: %v %v", nback, err)
	}

	bad := []struct{ name, keys, err string }{
		{"one field", "0x1 0x2\n\n0x3\n", "guid2mkey:3: want two fields, got 1"},
		{"no 0x", "1 0x2\n", "guid2mkey:1: port GUID \"1\": want 0x"},
		{"long key", "0x1 0x11112222333344445\n", "guid2mkey:1: M_Key \"0x11112222333344445\": want at most 16 hex digits"},
		{"guid 0", "0x0 0x2\n", "guid2mkey:1: port GUID 0"},
		{"twice", "0x1 0x2\n0x1 0x3\n", "guid2mkey:2: port GUID 0x0000000000000001 listed twice"},
	}
	for _, tc := range bad {
		if _, err := ParseKeys("guid2mkey", strings.NewReader(tc.keys)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
		}
	}
	for _, tc := range []struct{ in, err string }{
		{"0x1 0x2:1\n", "neighbors:1: \"0x1\": want 0x<port GUID>:<port>"},
		{"0x1:300 0x2:1\n", "neighbors:1: port \"300\": want 0..255"},
	} {
		if _, err := ParseNeighbors("neighbors", strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("neighbors %q: err = %v, want %q", tc.in, err, tc.err)
		}
	}
}

// TestStoreFiles: the ring writes guid2mkey and neighbors readable by
// their owner only, in a 0700 directory, and a damaged file stops Open
// with its file:line.
func TestStoreFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mkey")
	r, err := Open(Options{Dir: dir, FlushDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.learnKeyLocked(r.stateLocked(0x42), 0x99)
	r.links[End{1, 1}], r.links[End{2, 3}] = End{2, 3}, End{1, 1}
	r.linksDirty = true
	r.mu.Unlock()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{KeysFile, NeighborsFile} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v mode %v", f, err, fi.Mode())
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v", fi.Mode())
	}
	r2, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := r2.Key(0x42); !ok || k != 0x99 {
		t.Fatalf("reloaded key %#x %v", k, ok)
	}
	if err := os.WriteFile(filepath.Join(dir, KeysFile), []byte("0x42 0x99\n\nbroken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, KeysFile)+":3: want two fields") {
		t.Fatalf("damaged store: %v", err)
	}
}

// stateLocked returns (creating) a port's state; r.mu held. Test helper.
func (r *Ring) stateLocked(g uint64) *portState {
	st := r.ports[g]
	if st == nil {
		st = &portState{}
		r.ports[g] = st
	}
	return st
}
