package lidstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// written is what Save writes for m.
func written(t *testing.T, m map[uint64]Range) string {
	t.Helper()
	var b bytes.Buffer
	if err := Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// withSum appends a checksum line for body (which should start with Header).
func withSum(body string, entries int) string {
	return body + fmt.Sprintf("# ibsm-checksum xxhash64=%016x entries=%d\n", xxhash.Sum64String(body), entries)
}

func TestParse(t *testing.T) {
	three := map[uint64]Range{0x100003: {10, 11}, 0x200000: {1, 1}, 0x200001: {2, 2}}
	ours := written(t, three)
	lines := strings.SplitAfter(ours, "\n")
	// lines: 0 header, 1 blank, 2/4/6 records, 8 checksum, 9 blank
	cut := func(n int) string { return strings.Join(lines[:n], "") }
	hdr := Header + "\n\n"
	cases := []struct {
		name, in string
		want     map[uint64]Range
		err      string // substrings, "|"-separated; "" = no error
	}{
		{"opensm layout", "0x0000000000100003 0x000a 0x000b\n\n0x0000000000200000 0x0001 0x0001\n",
			map[uint64]Range{0x100003: {10, 11}, 0x200000: {1, 1}}, ""},
		{"opensm comment and decimal", "# comment\n\n0x1 1 1\n", map[uint64]Range{1: {1, 1}}, ""},
		{"ours", ours, three, ""},
		{"ours without its final blank line", strings.TrimSuffix(ours, "\n"), three, ""},
		{"ours, no ports", written(t, nil), map[uint64]Range{}, ""},
		{"package doc example", Header + "\n\n0x0002c90000000001 0x0001 0x0001\n\n# ibsm-checksum xxhash64=a793a1f538d601b2 entries=1\n",
			map[uint64]Range{0x0002c90000000001: {1, 1}}, ""},
		{"checksum over CRLF", withSum(hdr+"0x1 0x1 0x1\r\n\r\n", 1), map[uint64]Range{1: {1, 1}}, ""},

		// OpenSM-format files: each record checked, file:line.
		{"two fields", "0x1 0x2\n", nil, "g2l:1: want"},
		{"bad guid", "\n0xzz 0x1 0x1\n", nil, "g2l:2: bad GUID"},
		{"zero lid", "0x1 0x0 0x0\n", nil, "g2l:1: bad LID range"},
		{"multicast lid", "0x1 0xc000 0xc000\n", nil, "bad LID range"},
		{"inverted", "0x1 0x5 0x4\n", nil, "bad LID range"},
		{"duplicate port", "0x1 0x1 0x1\n\n0x2 0x2 0x2\n\n0x0000000000000001 0x3 0x3\n", nil, "g2l:5: port 0x0000000000000001 is listed again (first at line 1)"},
		{"opensm cut mid-line", "0x1 0x1 0x1\n\n0x2 0x2 0x", nil, "g2l:3: the file ends in the middle of this line|cut short"},

		// Empty: refused, never read as "no LIDs".
		{"empty", "", nil, "g2l: the file is empty|remove the file"},
		{"blank lines only", "\n\n\n", nil, "the file is empty"},
		{"comments only", "# nothing\n\n", nil, "g2l: the file lists no ports"},

		// ibsm's file cut short at a line end, anywhere.
		{"cut after header", cut(2), nil, "g2l:2: the file starts with ibsm's header but has no checksum line: it was cut short after 0 entries|delete line 1"},
		{"cut after one record", cut(4), nil, "g2l:4: |cut short after 1 entries"},
		{"cut before checksum", cut(8), nil, "g2l:8: |after 3 entries"},
		{"cut mid-checksum", cut(8) + lines[8][:20], nil, "g2l:9: the file ends in the middle of this line"},
		{"cut mid-record", cut(4) + lines[4][:10], nil, "g2l:5: the file ends in the middle"},

		// ibsm's file edited or damaged.
		{"record edited", strings.Replace(ours, "0x000a 0x000b", "0x000c 0x000d", 1), nil,
			"g2l:9: checksum mismatch|delete this checksum line and the ibsm header (line 1)|remove the file"},
		{"record deleted", strings.Replace(ours, "0x0000000000200000 0x0001 0x0001\n\n", "", 1), nil,
			"g2l:7: the checksum line counts 3 entries but the file has 2"},
		{"record added", strings.Replace(ours, "\n\n0x0000000000200000", "\n\n0x0000000000300000 0x0005 0x0005\n\n0x0000000000200000", 1), nil,
			"g2l:11: the checksum line counts 3 entries but the file has 4"},
		{"header deleted", strings.TrimPrefix(ours, hdr), nil, "g2l:7: checksum mismatch"},
		{"comment added", strings.Replace(ours, hdr, hdr+"# mine\n\n", 1), nil, "g2l:11: checksum mismatch"},
		{"bit flip", strings.Replace(ours, "0x0000000000100003", "0x0000000000100013", 1), nil, "checksum mismatch"},
		{"record after checksum", ours + "0x5 0x5 0x5\n", nil, "g2l:11: text after the checksum line (line 9)"},
		{"malformed checksum", hdr + "# ibsm-checksum xxhash64=nothex entries=0\n", nil, "g2l:3: malformed checksum line"},
		{"checksum without count", hdr + fmt.Sprintf("# ibsm-checksum xxhash64=%016x\n", xxhash.Sum64String(hdr)), nil, "g2l:3: malformed checksum line"},
		{"malformed record in ours", withSum(hdr+"0x1 0x1\n\n", 1), nil, "g2l:3: want"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse("g2l", strings.NewReader(c.in))
			if c.err != "" {
				if err == nil {
					t.Fatalf("accepted %q as %v, want error containing %q", c.in, got, c.err)
				}
				for _, s := range strings.Split(c.err, "|") {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("err = %v\nwant it to contain %q", err, s)
					}
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

// TestTruncatedAnywhere: every strict prefix of a file ibsm wrote is
// refused, whether it ends at a line end or inside a line.
func TestTruncatedAnywhere(t *testing.T) {
	m := map[uint64]Range{}
	for i := range 20 {
		m[0x0002c90000001000+uint64(i)] = Range{uint16(2*i + 2), uint16(2*i + 3)}
	}
	full := written(t, m)
	end := len(full) - 1 // dropping only the final blank line is harmless
	for n := range end {
		if _, err := Parse("g2l", strings.NewReader(full[:n])); err == nil {
			t.Fatalf("accepted the first %d of %d bytes:\n%s", n, len(full), full[:n])
		}
	}
}

// TestOpenSMReadsOurs: the layout OpenSM's osm_db_restore needs: every
// non-blank line starts a record, followed by a blank line (OpenSM has no
// comments; a line right after a "#" line would join that rejected key).
func TestOpenSMReadsOurs(t *testing.T) {
	s := written(t, map[uint64]Range{1: {1, 1}, 2: {4, 7}})
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines)%2 != 0 {
		t.Fatalf("odd number of lines:\n%s", s)
	}
	for i := 0; i < len(lines); i += 2 {
		if lines[i] == "" || lines[i][0] == ' ' || lines[i][0] == '\t' || lines[i+1] != "" {
			t.Fatalf("line %d %q / %q: want a record then a blank line:\n%s", i+1, lines[i], lines[i+1], s)
		}
	}
	if want := "0x0000000000000002 0x0004 0x0007"; lines[4] != want {
		t.Errorf("record %q, want OpenSM's %q", lines[4], want)
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "guid2lid")
	m := map[uint64]Range{0xabc: {4, 7}, 0x1: {1, 1}}
	if err := Save(p, m); err != nil {
		t.Fatal(err)
	}
	got, err := Load(p)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("got %v, %v", got, err)
	}
	missing, err := Load(filepath.Join(t.TempDir(), "none"))
	if err != nil || len(missing) != 0 {
		t.Fatalf("missing file: %v %v", missing, err)
	}
	// Replacing leaves no temp files and a readable file.
	if err := Save(p, map[uint64]Range{0x2: {2, 2}}); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Dir(p))
	if err != nil || len(ents) != 1 {
		t.Fatalf("directory holds %v (%v), want guid2lid only", ents, err)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", st.Mode(), err)
	}
	// Load names the path in its errors.
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.HasPrefix(err.Error(), p+": the file is empty") {
		t.Errorf("empty file: err = %v", err)
	}
}
