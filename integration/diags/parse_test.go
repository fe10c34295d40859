package diags

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fixtures were captured from the real tools with OpenSM 3.3.23 (updn)
// bringing up testdata/random-6sw-8ca-seed3.net on ibsim 0.10; the tools
// ran with SIM_HOST=random-5-host-1 (LID 14).

func read(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fixtureDiscovery(t testing.TB) *Discovery {
	t.Helper()
	d, err := ParseIBNetDiscover(strings.NewReader(read(t, "ibnetdiscover-opensm.txt")))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func fixtureLFTs(t testing.TB, name string) map[uint64]*LFT {
	t.Helper()
	l, err := ParseLFTs(strings.NewReader(read(t, name)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return l
}

func fixturePlan(t testing.TB) *Plan {
	t.Helper()
	p, err := LoadPlan(filepath.Join("testdata", "guid2lid-opensm"), filepath.Join("testdata", "opensm-lfts.dump"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseIBNetDiscover(t *testing.T) {
	d := fixtureDiscovery(t)
	if n := len(d.File.Nodes); n != 14 {
		t.Fatalf("%d nodes, want 14", n)
	}
	if n := len(d.LIDs); n != 14 {
		t.Fatalf("%d LID-bearing ports, want 14 (6 switch port 0 + 8 CA ports)", n)
	}
	for g, want := range map[uint64]uint16{0x0002c90000000004: 6, 0x0002c9010000000f: 14, 0x0002c90100000001: 1} {
		if got := d.LIDs[g]; got != want {
			t.Errorf("port %#x: LID %d, want %d", g, got, want)
		}
	}
	n, p, ok := d.Peer(0x0002c90000000004, 2)
	if !ok || n.GUID != 0x0002c90000000001 || p != 6 {
		t.Errorf("peer of switch 3 port 2: %v %d %v, want switch 0 port 6", n, p, ok)
	}
	if _, _, ok := d.Peer(0x0002c90000000004, 5); ok {
		t.Error("unconnected port 5 has a peer")
	}
}

func TestCheckLIDs(t *testing.T) {
	d := fixtureDiscovery(t)
	plan := fixturePlan(t)
	if err := CheckLIDs(d, plan.LIDs); err != nil {
		t.Fatalf("OpenSM's own guid2lid vs what ibnetdiscover saw: %v", err)
	}
	for _, c := range []struct {
		name  string
		edit  func(map[uint64]uint16)
		wants string
	}{
		{"wrong CA LID", func(m map[uint64]uint16) { m[0x0002c9010000000f] = 15 }, "port 0x0002c9010000000f: ibnetdiscover shows LID 14, plan 15"},
		{"wrong switch LID", func(m map[uint64]uint16) { m[0x0002c90000000004] = 99 }, "LID 6, plan 99"},
		{"port missing from plan", func(m map[uint64]uint16) { delete(m, 0x0002c90100000001) }, "plan gives it none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := map[uint64]uint16{}
			for k, v := range plan.LIDs {
				m[k] = v
			}
			c.edit(m)
			err := CheckLIDs(d, m)
			if err == nil || !strings.Contains(err.Error(), c.wants) {
				t.Fatalf("got %v, want an error containing %q", err, c.wants)
			}
		})
	}
}

func TestParseLFTs(t *testing.T) {
	fts := fixtureLFTs(t, "dump_fts-opensm.txt")
	osm := fixtureLFTs(t, "opensm-lfts.dump")
	if len(fts) != 6 || len(osm) != 6 {
		t.Fatalf("%d and %d switches, want 6", len(fts), len(osm))
	}
	s3 := fts[0x0002c90000000004]
	if s3 == nil || s3.Desc != "random switch 3" || s3.Lo != 0 || s3.Hi != 14 {
		t.Fatalf("switch 3 header: %+v", s3)
	}
	for lid, want := range map[uint16]uint8{1: 2, 6: 0, 12: 1, 14: 3, 15: NoPort, 0: NoPort} {
		if got := s3.Port(lid); got != want {
			t.Errorf("switch 3 LID %d: port %d, want %d", lid, got, want)
		}
	}
	if err := CheckLFTs(fts, osm, 14); err != nil {
		t.Fatalf("dump_fts vs OpenSM's own opensm-lfts.dump: %v", err)
	}
	osm[0x0002c90000000001].Out[12] = 5
	err := CheckLFTs(fts, osm, 14)
	if err == nil || !strings.Contains(err.Error(), "switch 0x0002c90000000001 (random switch 0) LID 12: fabric port 6, plan port 5") {
		t.Fatalf("a changed entry: got %v", err)
	}
	delete(fts, 0x0002c90000000002)
	if err := CheckLFTs(fts, osm, 14); err == nil || !strings.Contains(err.Error(), "no LFT read from the fabric") {
		t.Fatalf("a missing switch: got %v", err)
	}
}

func TestParseLFTsErrors(t *testing.T) {
	head := "Unicast lids [0x0-0x3] of switch DR path slid 0; dlid 0; 0 guid 0x0002c90000000004 (sw):\n"
	for _, c := range []struct{ name, in, wants string }{
		{"truncated", head + "0x0001 002 : (x)\n", "without its \"lids dumped\""},
		{"count mismatch", head + "0x0001 002 : (x)\n2 valid lids dumped \n", "footer says 2 lids, read 1"},
		{"out of range", head + "0x0009 002 : (x)\n1 valid lids dumped \n", "outside the block's range"},
		{"duplicate", head + "0x0001 002 : (x)\n0x0001 003 : (x)\n2 valid lids dumped \n", "listed twice"},
		{"garbage", head + "ibwarn: something\n", "unexpected"},
		{"outside block", "hello\n", "outside a switch block"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseLFTs(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.wants) {
				t.Fatalf("got %v, want %q", err, c.wants)
			}
		})
	}
}

func TestParseSMPDump(t *testing.T) {
	fts := fixtureLFTs(t, "dump_fts-opensm.txt")
	for _, name := range []string{"smpdump-lft-lid.txt", "smpdump-lft-dr.txt"} {
		t.Run(name, func(t *testing.T) {
			b, err := ParseSMPDump(strings.NewReader(read(t, name)))
			if err != nil {
				t.Fatal(err)
			}
			// Both read block 0 of switch 3 (LID 6 / DR 0,1,3,4).
			s3 := fts[0x0002c90000000004]
			for lid := 0; lid < 64; lid++ {
				if b[lid] != s3.Port(uint16(lid)) {
					t.Errorf("LID %d: smpdump %d, dump_fts %d", lid, b[lid], s3.Port(uint16(lid)))
				}
			}
			added, err := MergeBlock(s3, 0, b, 14)
			if err != nil || len(added) != 0 {
				t.Fatalf("merging an agreeing block: added %v, %v", added, err)
			}
			// A dump that stopped one short of the top gets its entry back.
			cut := *s3
			cut.Out = append([]uint8(nil), s3.Out[:14]...)
			added, err = MergeBlock(&cut, 0, b, 14)
			if err != nil || len(added) != 1 || added[0] != 14 || cut.Port(14) != 3 {
				t.Fatalf("merging into a short dump: added %v, LID 14 → %d, %v", added, cut.Port(14), err)
			}
			b[12] = 7
			if _, err := MergeBlock(s3, 0, b, 14); err == nil || !strings.Contains(err.Error(), "LID 12: dump_fts says port 1, smpdump of block 0 says 7") {
				t.Fatalf("conflicting block: %v", err)
			}
		})
	}
	for _, c := range []struct{ name, in, wants string }{
		{"short", "ff02 0203\n", "4 data bytes"},
		{"bad word", "ff0 0203\n", "not a 16-bit hex word"},
		{"status", strings.Repeat("ffff ffff ffff ffff ffff ffff ffff ffff\n", 4) + "SMP status: 0x801c\n", "MAD status"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseSMPDump(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.wants) {
				t.Fatalf("got %v, want %q", err, c.wants)
			}
		})
	}
}

func TestParseTraceAndWalk(t *testing.T) {
	d := fixtureDiscovery(t)
	fts := fixtureLFTs(t, "dump_fts-opensm.txt")
	for _, c := range []struct {
		file     string
		src      uint64 // source CA port GUID
		dlid     uint16
		switches int
		toType   string
	}{
		{"ibtracert-14-12.txt", 0x0002c9010000000f, 12, 3, "ca"},
		{"ibtracert-14-2.txt", 0x0002c9010000000f, 2, 3, "switch"},
		{"ibtracert-self.txt", 0x0002c9010000000f, 14, 0, "ca"},
	} {
		t.Run(c.file, func(t *testing.T) {
			tr, err := ParseTrace(strings.NewReader(read(t, c.file)))
			if err != nil {
				t.Fatal(err)
			}
			if tr.From.LID != 14 || tr.From.NodeGUID != 0x0002c9010000000e || tr.To.LID != c.dlid || tr.To.Type != c.toType {
				t.Fatalf("ends: %+v → %+v", tr.From, tr.To)
			}
			got := tr.Steps()
			if len(got) != c.switches {
				t.Fatalf("%d switches, want %d: %v", len(got), c.switches, got)
			}
			want, err := Walk(d, fts, c.src, c.dlid)
			if err != nil {
				t.Fatal(err)
			}
			if err := CompareSteps(got, want); err != nil {
				t.Fatalf("ibtracert vs walking dump_fts: %v", err)
			}
		})
	}
	// A changed LFT entry on the path makes the walk and the trace differ.
	tr, _ := ParseTrace(strings.NewReader(read(t, "ibtracert-14-12.txt")))
	fts[0x0002c90000000006].Out[12] = 4
	want, err := Walk(d, fts, 0x0002c9010000000f, 12)
	if err != nil {
		t.Fatal(err)
	}
	if err := CompareSteps(tr.Steps(), want); err == nil || !strings.Contains(err.Error(), "hop 1") {
		t.Fatalf("diverging paths: %v", err)
	}
}

func TestWalkErrors(t *testing.T) {
	d := fixtureDiscovery(t)
	for _, c := range []struct {
		name  string
		edit  func(map[uint64]*LFT)
		src   uint64
		dlid  uint16
		wants string
	}{
		{"hole", func(m map[uint64]*LFT) { m[0x0002c90000000006].Out[12] = NoPort }, 0x0002c9010000000f, 12, "has no entry"},
		{"dead port", func(m map[uint64]*LFT) { m[0x0002c90000000006].Out[12] = 6 }, 0x0002c9010000000f, 12, "unconnected port 6"},
		{"loop", func(m map[uint64]*LFT) {
			m[0x0002c90000000006].Out[12] = 3 // to switch 1
			m[0x0002c90000000002].Out[12] = 5 // back to switch 5
		}, 0x0002c9010000000f, 12, "loop"},
		{"wrong CA", func(m map[uint64]*LFT) { m[0x0002c90000000001].Out[12] = 1 }, 0x0002c90100000003, 12, "deliver to H-0002c90100000000 port 1 (LID 1)"},
		{"unknown source", func(map[uint64]*LFT) {}, 0x1234, 12, "no CA port"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fts := fixtureLFTs(t, "dump_fts-opensm.txt")
			c.edit(fts)
			_, err := Walk(d, fts, c.src, c.dlid)
			if err == nil || !strings.Contains(err.Error(), c.wants) {
				t.Fatalf("got %v, want %q", err, c.wants)
			}
		})
	}
}

func TestParseTraceErrors(t *testing.T) {
	for _, c := range []struct{ name, in, wants string }{
		{"unreachable", "ibwarn: [1044] mad_rpc: _do_madrpc failed; dport (Lid 99)\nibtracert: iberror: failed: Failed to get route information\n", "mad_rpc"},
		{"no To", "From ca {0x0002c9010000000e} portnum 1 lid 14-14 \"h\"\n", "lacks its From or To"},
		{"hop before From", "[1] -> switch port {0x0002c90000000006}[2] lid 9-9 \"s\"\n", "outside From..To"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseTrace(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.wants) {
				t.Fatalf("got %v, want %q", err, c.wants)
			}
		})
	}
}

func TestParsePathRecords(t *testing.T) {
	prs, err := ParsePathRecords(strings.NewReader(read(t, "saquery-pr-14-12.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 {
		t.Fatalf("%d records, want 1", len(prs))
	}
	pr := prs[0]
	if pr.DLID != 12 || pr.SLID != 14 || pr.SL != 0 || pr.DGID != "fe80::2:c901:0:b" || pr.Fields["pkey"] != "0xFFFF" {
		t.Fatalf("record: %+v", pr)
	}
	if _, err := ParsePathRecords(strings.NewReader("Query SA failed: Connection timed out\n")); err == nil || !strings.Contains(err.Error(), "Query SA failed") {
		t.Fatalf("SA failure: %v", err)
	}
	if _, err := ParsePathRecords(strings.NewReader("PathRecord dump:\n\t\tslid....1\n\t\tsl....0x0\n")); err == nil || !strings.Contains(err.Error(), "without dlid") {
		t.Fatalf("record without dlid: %v", err)
	}
}

func TestParseSMInfo(t *testing.T) {
	s, err := ParseSMInfo(read(t, "sminfo-opensm.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if s.LID != 1 || s.GUID != 0x2c90100000001 || s.State != SMStateMaster || s.StateStr != "SMINFO_MASTER" || s.Priority != 0 {
		t.Fatalf("%+v", s)
	}
	if _, err := ParseSMInfo("ibwarn: [1521] mad_rpc: _do_madrpc failed; dport (Lid 1)\nsminfo: iberror: failed: query\n"); err == nil {
		t.Fatal("a failed query parsed")
	}
}

func TestParseStat(t *testing.T) {
	st, err := parseStat("1234 (ibsm-plugin-a (b)) S 1 4321 4321 0 -1 4194560")
	if err != nil || st.state != "S" || st.ppid != 1 || st.pgrp != 4321 {
		t.Fatalf("%+v %v", st, err)
	}
	if _, err := parseStat("1234 ibsm"); err == nil {
		t.Fatal("no parenthesis parsed")
	}
}

func TestGroupMembersSelf(t *testing.T) {
	// This test binary is in some group; that group has at least us.
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc")
	}
	st, err := parseStat(string(b))
	if err != nil {
		t.Fatal(err)
	}
	m, err := GroupMembers(st.pgrp)
	if err != nil || len(m) == 0 {
		t.Fatalf("own process group %d: %v %v", st.pgrp, m, err)
	}
}
