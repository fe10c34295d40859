package mcast

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/transport/smp"
)

func TestStoreJoinLeave(t *testing.T) {
	s := NewStore(smp.MulticastLIDBase + 1) // two MLIDs
	changes := 0
	s.OnChange(func() { changes++ })
	a, err := s.Create(Group{PKey: 0xFFFF, Scope: 2})
	if err != nil || a.MLID != 0xC000 || a.MGID[0] != 0xff || a.MGID[1] != 0x12 || a.MGID[15] != 0x00 || a.MGID[14] != 0xC0 {
		t.Fatalf("create: %+v %v", a, err)
	}
	b, err := s.Create(Group{MGID: [16]byte{0xff, 0x12, 15: 1}})
	if err != nil || b.MLID != 0xC001 {
		t.Fatalf("second: %+v %v", b, err)
	}
	if _, err := s.Create(Group{MGID: [16]byte{0xff, 0x12, 15: 2}}); !errors.Is(err, ErrNoMLID) {
		t.Fatalf("third group past the last MLID: %v", err)
	}
	if _, err := s.Create(Group{MGID: b.MGID}); !errors.Is(err, ErrExists) && !errors.Is(err, ErrNoMLID) {
		t.Fatalf("duplicate MGID: %v", err)
	}
	if got := s.TakeDirty(); !slices.Equal(got, []uint16{0xC000, 0xC001}) || s.Dirty() {
		t.Fatalf("dirty %v", got)
	}
	if _, err := s.Join(b.MGID, 7, Member{State: smp.JoinFullMember}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Join(b.MGID, 7, Member{State: smp.JoinSendOnlyNonMember}); err != nil {
		t.Fatal(err)
	}
	g, _ := s.Get(b.MGID)
	if g.Members[7].State != smp.JoinFullMember|smp.JoinSendOnlyNonMember {
		t.Fatalf("states are or-ed: %+v", g.Members[7])
	}
	// Re-joining with bits held already changes nothing.
	s.TakeDirty()
	if _, err := s.Join(b.MGID, 7, Member{State: smp.JoinFullMember}); err != nil || s.Dirty() {
		t.Fatalf("idempotent join marked the group: %v", err)
	}
	if _, _, err := s.Leave(b.MGID, 7, smp.JoinNonMember); !errors.Is(err, ErrNotMember) {
		t.Fatalf("leaving a state not held: %v", err)
	}
	if _, _, err := s.Leave(b.MGID, 8, smp.JoinFullMember); !errors.Is(err, ErrNotMember) {
		t.Fatalf("leave by a non-member: %v", err)
	}
	if _, _, err := s.Leave([16]byte{1}, 7, 1); !errors.Is(err, ErrNoGroup) {
		t.Fatalf("leave of an unknown group: %v", err)
	}
	if _, del, err := s.Leave(b.MGID, 7, smp.JoinFullMember); err != nil || del {
		t.Fatalf("partial leave: %v %v", del, err)
	}
	if _, del, err := s.Leave(b.MGID, 7, smp.JoinSendOnlyNonMember); err != nil || !del {
		t.Fatalf("last leave: deleted=%v %v", del, err)
	}
	if _, ok := s.ByMLID(0xC001); ok || !slices.Equal(s.TakeDirty(), []uint16{0xC001}) {
		t.Fatal("deleted group kept or not marked")
	}
	// Its MLID is free again.
	if c, err := s.Create(Group{MGID: [16]byte{0xff, 0x12, 15: 3}}); err != nil || c.MLID != 0xC001 {
		t.Fatalf("MLID reuse: %+v %v", c, err)
	}
	if changes == 0 {
		t.Fatal("OnChange never called")
	}
}

func TestIPoIBGroupsPermanent(t *testing.T) {
	gs := IPoIBGroups([]conf.Partition{conf.DefaultPartition(), {Name: "x", PKey: 0x8001 & 0x7FFF}})
	if len(gs) != 2 {
		t.Fatalf("%d groups, want 2 (only the default partition is IPoIB)", len(gs))
	}
	want := [16]byte{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff}
	if gs[0].MGID != want || gs[0].QKey != 0x0B1B || gs[0].MTU != 4 || gs[0].PKey != 0xFFFF || gs[1].MGID[2] != 0x60 {
		t.Fatalf("groups %+v", gs)
	}
	s := NewStore(0)
	if n, err := s.Ensure(gs); n != 2 || err != nil {
		t.Fatalf("Ensure: %d %v", n, err)
	}
	if n, _ := s.Ensure(gs); n != 0 {
		t.Fatal("Ensure created twice")
	}
	if _, err := s.Join(want, 1, Member{State: smp.JoinFullMember}); err != nil {
		t.Fatal(err)
	}
	if _, del, err := s.Leave(want, 1, smp.JoinFullMember); err != nil || del {
		t.Fatalf("permanent group deleted: %v %v", del, err)
	}
}

func TestForwardingBlocks(t *testing.T) {
	b := Blocks{}
	b.SetPorts(0xC021, []uint8{0, 3, 17, 40})
	if got := b.Ports(0xC021); !slices.Equal(got, []uint8{0, 3, 17, 40}) {
		t.Fatalf("ports %v", got)
	}
	if blk := b[BlockKey{Position: 1, Block: 1}]; blk[1] != 1<<1 {
		t.Fatalf("position 1 mask %#x", blk[1])
	}
	if !slices.Equal(b.MLIDs(), []uint16{0xC021}) {
		t.Fatalf("MLIDs %v", b.MLIDs())
	}
	b.SetPorts(0xC021, nil)
	if len(b.MLIDs()) != 0 {
		t.Fatal("cleared MLID still forwards")
	}

	topo, err := sdktest.FatTree2(4, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	req := sdk.MulticastRequest{Topo: topo, Groups: sdktest.MulticastGroups(topo, 1)[:2]}
	trees, err := sdktest.BFSMulticast(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(&req, trees); err != nil {
		t.Fatal(err)
	}
	f := NewForwarding()
	touched := f.Apply(topo, trees, nil)
	in := map[uint64]bool{}
	for _, tr := range trees {
		for _, s := range tr.Switches {
			in[topo.Nodes[s.Node].GUID] = true
		}
	}
	if len(touched) != len(in) {
		t.Fatalf("trees touched %d switches, they span %d", len(touched), len(in))
	}
	// Dropping the first group clears its MLID everywhere, leaves the other.
	f.Apply(topo, nil, []uint16{trees[0].MLID})
	for g, b := range f.Switches {
		if len(b.Ports(trees[0].MLID)) != 0 {
			t.Fatalf("switch %#x still forwards the dropped group", g)
		}
	}
	bad := slices.Clone(trees)
	bad[0].Switches = bad[0].Switches[1:]
	if err := Verify(&req, bad); err == nil {
		t.Fatal("a tree missing a switch passed")
	}
}

// TestStoreRestore: saved groups come back with their MLIDs and members
// and are marked for programming; a group whose MGID or MLID is taken, or
// whose MLID is no multicast LID, is named and left out.
func TestStoreRestore(t *testing.T) {
	saved := []Group{
		{MGID: [16]byte{0xff, 0x12, 15: 1}, MLID: 0xC005, PKey: 0xFFFF, Members: map[uint64]Member{7: {State: smp.JoinFullMember}}},
		{MGID: [16]byte{0xff, 0x12, 15: 2}, MLID: 0xC009},
	}
	s := NewStore(0)
	g0 := s.Generation()
	if n, err := s.Restore(saved); n != 2 || err != nil {
		t.Fatalf("restore: %d, %v", n, err)
	}
	if s.Generation() == g0 {
		t.Fatal("generation did not change")
	}
	g, ok := s.ByMLID(0xC005)
	if !ok || g.MGID != saved[0].MGID || g.Members[7].State != smp.JoinFullMember {
		t.Fatalf("group at 0xC005: %+v %v", g, ok)
	}
	if d := s.TakeDirty(); !slices.Equal(d, []uint16{0xC005, 0xC009}) {
		t.Fatalf("dirty %v, want both MLIDs", d)
	}
	// A new group takes the lowest free MLID, below the restored ones.
	if c, err := s.Create(Group{MGID: [16]byte{0xff, 0x12, 15: 3}}); err != nil || c.MLID != 0xC000 {
		t.Fatalf("create after restore: %+v %v", c, err)
	}
	n, err := s.Restore([]Group{
		{MGID: saved[0].MGID, MLID: 0xC00A},         // MGID taken
		{MGID: [16]byte{0xff, 15: 4}, MLID: 0xC009}, // MLID taken
		{MGID: [16]byte{0xff, 15: 5}, MLID: 0x10},   // not multicast
		{MGID: [16]byte{0xff, 15: 6}, MLID: 0xC00B},
	})
	if n != 1 || err == nil || !strings.Contains(err.Error(), "MGID exists") || !strings.Contains(err.Error(), "0xc009 is taken") || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("conflicting restore: %d, %v", n, err)
	}
}
