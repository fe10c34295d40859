package program_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/host/verify"
	"github.com/ibsm/ibsm/transport/smp"
)

// caPorts lists the CA end ports of fab, sorted, without the SM's.
func caPorts(fab *discovery.Fabric) []discovery.PortRef {
	var out []discovery.PortRef
	for g, n := range fab.Nodes {
		if n.Info.NodeType != smp.NodeTypeCA {
			continue
		}
		for q := 1; q < len(n.Ports); q++ {
			if r := (discovery.PortRef{GUID: g, Port: uint8(q)}); n.Ports[q].Valid && r != (discovery.PortRef{GUID: fab.SMGUID, Port: fab.SMPort}) {
				out = append(out, r)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GUID < out[j].GUID })
	return out
}

func member(kind conf.MemberKind, guid uint64, full bool) conf.PartitionMember {
	return conf.PartitionMember{Kind: kind, GUID: guid, Full: full}
}

// syncPKeys plans, verifies and applies; it returns the plan and what
// was read and sent.
func syncPKeys(t *testing.T, pk *program.PKeys, fab *discovery.Fabric, parts []conf.Partition) (*program.PKeyPlan, program.PKeyStats) {
	t.Helper()
	mem, warns := program.ResolvePartitions(parts, fab)
	if len(warns) > 0 {
		t.Logf("warnings: %q", warns)
	}
	pl, st := pk.Plan(context.Background(), fab, mem)
	must(t, verify.CheckPKeys(verify.PKeyTables{Members: mem, Tables: pl.Tables, Enforce: pl.Enforce}, 0))
	lid := func(r discovery.PortRef) uint16 { return fab.Nodes[r.GUID].Ports[r.Port].Info.LID }
	ast, err := pk.Apply(context.Background(), pl, lid)
	must(t, err)
	ast.BlocksRead = st.BlocksRead
	return pl, ast
}

// TestPKeysProgram: tables and switch enforcement land on the embedded
// fabric; an unchanged re-sync sends nothing; a changed partition sends
// only the blocks of the ports it changes; a port that lost its LID (a
// reset) is read back and re-programmed.
func TestPKeysProgram(t *testing.T) {
	f, err := topogen.FatTree{Radix: 4, Levels: 2}.Generate()
	must(t, err)
	r := newRig(t, f)
	fab, _ := r.discover(t)
	cas := caPorts(fab)
	if len(cas) < 4 {
		t.Fatalf("%d CA ports", len(cas))
	}
	a, b, c := cas[0], cas[1], cas[2]
	guid := func(p discovery.PortRef) uint64 { return fab.Nodes[p.GUID].Ports[p.Port].GUID }
	parts := []conf.Partition{
		conf.DefaultPartition(),
		{Name: "storage", PKey: 0x0002, Members: []conf.PartitionMember{
			member(conf.MemberGUID, guid(a), true), member(conf.MemberGUID, guid(b), true), member(conf.MemberGUID, guid(c), false)}},
	}
	pk := &program.PKeys{C: r.c, Parallel: 8}
	pl, st := syncPKeys(t, pk, fab, parts)
	// Every table was read once; the default partition is what ports
	// hold after reset, so only block 0 of the storage members (and the
	// SM's port, a full member of every partition) and of the switch
	// ports in front of them change, and every CA-facing switch port is
	// told to enforce.
	if st.BlocksRead == 0 || st.BlocksSent != 8 || st.EnforceSets != int64(len(cas)+1) {
		t.Errorf("first sync: %+v, want 8 blocks sent (3 CA ports, the SM's, 4 switch ports) and %d enforcement Sets", st, len(cas)+1)
	}
	check := func(p discovery.PortRef, want ...uint16) {
		t.Helper()
		got, ok := r.fab.PKeys(p.GUID, p.Port)
		if !ok {
			t.Fatalf("no port %v", p)
		}
		var keys []uint16
		for _, k := range got {
			if k != 0 {
				keys = append(keys, k)
			}
		}
		if len(keys) != len(want) {
			t.Fatalf("port %#x/%d holds %#04x, want %#04x", p.GUID, p.Port, keys, want)
		}
		for i := range want {
			if keys[i] != want[i] {
				t.Fatalf("port %#x/%d holds %#04x, want %#04x", p.GUID, p.Port, keys, want)
			}
		}
		// The switch port in front holds the same keys and enforces.
		pt := fab.Nodes[p.GUID].Ports[p.Port]
		sw, ok := r.fab.PKeys(pt.PeerGUID, pt.PeerPort)
		if !ok || !equalNonZero(sw, keys) {
			t.Fatalf("switch port %#x/%d holds %#04x, want %#04x", pt.PeerGUID, pt.PeerPort, sw, keys)
		}
		if in, out := r.fab.PartitionEnforcement(pt.PeerGUID, pt.PeerPort); !in || !out {
			t.Fatalf("switch port %#x/%d enforcement in=%v out=%v", pt.PeerGUID, pt.PeerPort, in, out)
		}
	}
	check(a, 0xFFFF, 0x8002)
	check(b, 0xFFFF, 0x8002)
	check(c, 0xFFFF, 0x0002)
	check(cas[3], 0xFFFF)
	if keys, ok := pl.PortKeys(guid(c)); !ok || len(keys) != 2 || keys[1] != 0x0002 {
		t.Errorf("PortKeys(c) = %#04x %v", keys, ok)
	}

	// Unchanged: no read, no Set (the enforcement bits are now read by
	// discovery, and the programmer remembers them anyway).
	fab, _ = r.discover(t)
	if _, st := syncPKeys(t, pk, fab, parts); st.BlocksRead+st.BlocksSent+st.EnforceSets != 0 {
		t.Errorf("unchanged re-sync: %+v, want nothing sent or read", st)
	}

	// c becomes a full member, a leaves, a new partition takes d limited
	// (and the SM's port full): a, c, d, the SM's port and their 4 switch
	// ports change block 0; a keeps 0xFFFF at index 0 and storage's old
	// index is cleared, not shifted.
	d := cas[3]
	parts2 := []conf.Partition{
		conf.DefaultPartition(),
		{Name: "storage", PKey: 0x0002, Members: []conf.PartitionMember{
			member(conf.MemberGUID, guid(b), true), member(conf.MemberGUID, guid(c), true)}},
		{Name: "login", PKey: 0x0003, Members: []conf.PartitionMember{member(conf.MemberGUID, guid(d), false)}},
	}
	if _, st := syncPKeys(t, pk, fab, parts2); st.BlocksRead != 0 || st.BlocksSent != 8 || st.EnforceSets != 0 {
		t.Errorf("changed partitions: %+v, want 8 blocks (a, c, d, the SM's port and their switch ports), no read", st)
	}
	check(a, 0xFFFF)
	check(b, 0xFFFF, 0x8002)
	check(c, 0xFFFF, 0x8002)
	check(d, 0xFFFF, 0x0003)

	// A port that lost its LID was reset: read back, then re-programmed
	// (the simulator keeps its table, so only the read shows).
	must(t, r.fab.SetPortLID(b.GUID, b.Port, 77, 0))
	fab, _ = r.discover(t)
	if _, st := syncPKeys(t, pk, fab, parts2); st.BlocksRead != 2 || st.BlocksSent != 0 {
		t.Errorf("after a LID change: %+v, want b's 2 blocks read, none sent", st)
	}
}

// TestPKeysPrepared: Apply's decisions made ahead (Prepare, as the SM
// does beside distribution) send what Apply would; if what is known of the
// ports changed in between, they are made again rather than trusted.
func TestPKeysPrepared(t *testing.T) {
	for _, tc := range []struct {
		name    string
		between func(pk *program.PKeys)
		blocks  func(n int64) bool
		want    string
	}{
		{"nothing in between", func(*program.PKeys) {}, func(n int64) bool { return n == 8 }, "8 (a, c, d, the SM's port and their switch ports)"},
		// Nothing known: every block of every port is sent, far more
		// than the 8 decided before.
		{"forgotten in between", (*program.PKeys).Forget, func(n int64) bool { return n > 8 }, "every block of every port (> 8)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := topogen.FatTree{Radix: 4, Levels: 2}.Generate()
			must(t, err)
			r := newRig(t, f)
			fab, _ := r.discover(t)
			cas := caPorts(fab)
			a, b, c, d := cas[0], cas[1], cas[2], cas[3]
			guid := func(p discovery.PortRef) uint64 { return fab.Nodes[p.GUID].Ports[p.Port].GUID }
			pk := &program.PKeys{C: r.c, Parallel: 8}
			syncPKeys(t, pk, fab, []conf.Partition{
				conf.DefaultPartition(),
				{Name: "storage", PKey: 0x0002, Members: []conf.PartitionMember{
					member(conf.MemberGUID, guid(a), true), member(conf.MemberGUID, guid(b), true), member(conf.MemberGUID, guid(c), false)}},
			})
			fab, _ = r.discover(t)
			mem, _ := program.ResolvePartitions([]conf.Partition{
				conf.DefaultPartition(),
				{Name: "storage", PKey: 0x0002, Members: []conf.PartitionMember{
					member(conf.MemberGUID, guid(b), true), member(conf.MemberGUID, guid(c), true)}},
				{Name: "login", PKey: 0x0003, Members: []conf.PartitionMember{member(conf.MemberGUID, guid(d), false)}},
			}, fab)
			pl, _ := pk.Plan(context.Background(), fab, mem)
			lid := func(r discovery.PortRef) uint16 { return fab.Nodes[r.GUID].Ports[r.Port].Info.LID }
			prep := pk.Prepare(pl, lid)
			tc.between(pk)
			st, err := pk.ApplyPrepared(context.Background(), prep, nil)
			must(t, err)
			if !tc.blocks(st.BlocksSent) {
				t.Errorf("%d blocks sent, want %s", st.BlocksSent, tc.want)
			}
			for p, want := range map[discovery.PortRef][]uint16{a: {0xFFFF}, b: {0xFFFF, 0x8002}, c: {0xFFFF, 0x8002}, d: {0xFFFF, 0x0003}} {
				if got, ok := r.fab.PKeys(p.GUID, p.Port); !ok || !equalNonZero(got, want) {
					t.Errorf("port %#x/%d holds %#04x, want %#04x", p.GUID, p.Port, got, want)
				}
			}
		})
	}
}

func equalNonZero(t []uint16, want []uint16) bool {
	var got []uint16
	for _, k := range t {
		if k != 0 {
			got = append(got, k)
		}
	}
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestResolvePartitions: selectors, specificity, the SM's port and the
// warnings for what matches nothing.
func TestResolvePartitions(t *testing.T) {
	f, err := topogen.FatTree{Radix: 4, Levels: 2}.Generate()
	must(t, err)
	r := newRig(t, f)
	fab, _ := r.discover(t)
	cas := caPorts(fab)
	sm := discovery.PortRef{GUID: fab.SMGUID, Port: fab.SMPort}
	x := cas[0]
	xg := fab.Nodes[x.GUID].Ports[x.Port].GUID
	var sw discovery.PortRef
	for g, n := range fab.Nodes {
		if n.Info.NodeType == smp.NodeTypeSwitch {
			sw = discovery.PortRef{GUID: g}
			break
		}
	}
	desc := conf.PartitionMember{Kind: conf.MemberDesc, Pattern: fab.Nodes[cas[1].GUID].Desc, Full: false}
	nodesGUID := cas[2].GUID // a CA's node GUID is not its port GUID
	parts := []conf.Partition{
		{Name: "p", PKey: 0x10, Members: []conf.PartitionMember{
			{Kind: conf.MemberAllCAs, Full: true},
			member(conf.MemberGUID, xg, false), // more specific: limited
			desc,
			{Kind: conf.MemberAllSwitches, Full: false},
			member(conf.MemberGUID, 0x1234, true),
			member(conf.MemberGUID, nodesGUID, true),
		}},
		{Name: "q", PKey: 0x11, Members: []conf.PartitionMember{member(conf.MemberGUID, xg, true)}},
	}
	mem, warns := program.ResolvePartitions(parts, fab)
	if full, ok := mem[x][0x10]; !ok || full {
		t.Errorf("x in p: member %v full %v, want limited (the GUID beats all_cas)", ok, full)
	}
	if full, ok := mem[cas[1]][0x10]; !ok || full {
		t.Errorf("desc match: member %v full %v, want limited", ok, full)
	}
	if full := mem[cas[3]][0x10]; !full {
		t.Errorf("other CA not a full member of p")
	}
	if full, ok := mem[sw][0x10]; !ok || full {
		t.Errorf("switch port 0 in p: %v %v, want limited", ok, full)
	}
	if !mem[sm][0x11] || !mem[sm][0x10] {
		t.Errorf("SM port %v not a full member of every partition: %v", sm, mem[sm])
	}
	if _, ok := mem[cas[3]][0x11]; ok {
		t.Errorf("non-member in q")
	}
	all := strings.Join(warns, "\n")
	if !strings.Contains(all, `partition "p"`) || !strings.Contains(all, "0x0000000000001234 is not on the fabric") ||
		!strings.Contains(all, "is the node GUID of") {
		t.Errorf("warnings = %q", warns)
	}
	_, warns = program.ResolvePartitions(parts[1:], fab)
	if !strings.Contains(strings.Join(warns, "\n"), "end ports are members of no partition") {
		t.Errorf("no warning about ports outside every partition: %q", warns)
	}
}
