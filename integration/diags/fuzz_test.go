package diags

import (
	"strings"
	"testing"
)

// The fuzz targets feed the parsers arbitrary text: they must return an
// error or a value, never panic, and what they return must be consistent.

func FuzzParseLFTs(f *testing.F) {
	f.Add(read(f, "dump_fts-opensm.txt"))
	f.Add(read(f, "opensm-lfts.dump"))
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseLFTs(strings.NewReader(s))
		if err != nil {
			return
		}
		for g, l := range m {
			if l.GUID != g || l.Lo > l.Hi || len(l.Out) > int(l.Hi)+1 {
				t.Fatalf("inconsistent LFT %+v", l)
			}
		}
	})
}

func FuzzParseTrace(f *testing.F) {
	for _, n := range []string{"ibtracert-14-12.txt", "ibtracert-14-2.txt", "ibtracert-self.txt"} {
		f.Add(read(f, n))
	}
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := ParseTrace(strings.NewReader(s))
		if err != nil {
			return
		}
		if len(tr.Steps()) > len(tr.Hops) {
			t.Fatal("more steps than hops")
		}
	})
}

func FuzzParsePathRecords(f *testing.F) {
	f.Add(read(f, "saquery-pr-14-12.txt"))
	f.Fuzz(func(t *testing.T, s string) {
		prs, err := ParsePathRecords(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, p := range prs {
			if p.SL > 15 {
				t.Fatalf("SL %d", p.SL)
			}
		}
	})
}

func FuzzParseSMPDump(f *testing.F) {
	f.Add(read(f, "smpdump-lft-lid.txt"))
	f.Add(read(f, "smpdump-lft-dr.txt"))
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseSMPDump(strings.NewReader(s))
		if err == nil && len(b) != 64 {
			t.Fatalf("%d bytes", len(b))
		}
	})
}

func FuzzParseSMInfo(f *testing.F) {
	f.Add(read(f, "sminfo-opensm.txt"))
	f.Fuzz(func(t *testing.T, s string) {
		ParseSMInfo(s)
	})
}

func FuzzParseIBNetDiscover(f *testing.F) {
	f.Add(read(f, "ibnetdiscover-opensm.txt"))
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseIBNetDiscover(strings.NewReader(s))
		if err != nil {
			return
		}
		for g := range d.caPorts {
			if _, ok := d.LIDs[g]; !ok {
				t.Fatalf("CA port %#x without a LID entry", g)
			}
		}
	})
}
