package conf

import (
	"fmt"
	"strings"
	"testing"
)

// partConfig is the minimal configuration followed by src (partition
// blocks), so the first line of src is line 13 of the file.
func partConfig(src string) string { return minimal + src }

const partLine0 = 12 // lines of minimal before src

func TestPartitionsDecode(t *testing.T) {
	cfg, diags := LoadBytes("p.hcl", []byte(partConfig(`
partition "storage" {
  pkey            = "0x8002"
  members         = ["all_cas", "self", "0x0002c90300000001"]
  limited_members = ["desc:login-[0-9]*", "all_switches"]
  ipoib {
    mtu   = 4096
    rate  = 100
    sl    = 3
    scope = "site-local"
    qkey  = "0x12345678"
  }
}
partition "compute" {
  pkey    = "0x0003"
  members = ["all"]
}
`)))
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics(diags))
	}
	ps := cfg.Partitions
	if len(ps) != 3 || !ps[0].Implicit || ps[0].PKey != DefaultPKey || ps[0].Name != "default" {
		t.Fatalf("partitions = %+v, want the implicit default first", ps)
	}
	if ib := ps[0].IPoIB; ib == nil || *ib != (IPoIB{MTU: 4, Rate: 3, Scope: 2, QKey: 0x0B1B}) {
		t.Errorf("default IPoIB = %+v", ib)
	}
	st := ps[1]
	if st.Name != "storage" || st.PKey != 0x0002 || st.Range.Start.Line != 14 {
		t.Errorf("storage = %q %#x line %d", st.Name, st.PKey, st.Range.Start.Line)
	}
	var got []string
	for _, m := range st.Members {
		got = append(got, fmt.Sprintf("%s/%v/%d", m.String(), m.Full, m.Rank()))
	}
	want := "all_cas/true/1 self/true/3 0x0002c90300000001/true/3 desc:login-[0-9]*/false/2 all_switches/false/1"
	if strings.Join(got, " ") != want {
		t.Errorf("members = %s\nwant      %s", strings.Join(got, " "), want)
	}
	if ib := st.IPoIB; ib == nil || *ib != (IPoIB{MTU: 5, Rate: 16, SL: 3, Scope: 5, QKey: 0x12345678}) {
		t.Errorf("storage IPoIB = %+v", ib)
	}
	if ps[2].IPoIB != nil || ps[2].PKey != 3 {
		t.Errorf("compute = %+v", ps[2])
	}
	d := &st.Members[3]
	for desc, match := range map[string]bool{"login-1 HCA-1": true, "login-x": false, "xlogin-1": false, "login-": false} {
		if d.MatchDesc(desc) != match {
			t.Errorf("desc:login-[0-9]* on %q = %v", desc, !match)
		}
	}
}

// An explicit 0x7fff replaces the implicit default partition.
func TestPartitionsExplicitDefault(t *testing.T) {
	cfg, diags := LoadBytes("p.hcl", []byte(partConfig(`
partition "default" {
  pkey            = "0xffff"
  members         = ["all_switches", "self"]
  limited_members = ["all_cas"]
}
`)))
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics(diags))
	}
	if len(cfg.Partitions) != 1 || cfg.Partitions[0].Implicit || cfg.Partitions[0].PKey != DefaultPKey || cfg.Partitions[0].IPoIB != nil {
		t.Errorf("partitions = %+v", cfg.Partitions)
	}
}

// TestPartitionErrors: every mistake is an error at the marked line of the
// file, with no Config.
func TestPartitionErrors(t *testing.T) {
	tests := []struct {
		name, src, summary, detail string
	}{
		{"bad guid", `partition "a" {
  pkey    = "0x0001"
  members = ["0x12g4"] #<
}`, "Invalid port GUID", "not hexadecimal"},
		{"guid too long", `partition "a" {
  pkey    = "0x0001"
  members = ["0x00112233445566778"] #<
}`, "Invalid port GUID", "1..16 hex digits"},
		{"unknown selector", `partition "a" {
  pkey    = "0x0001"
  members = ["all_hosts"] #<
}`, "Unknown member", "all_cas"},
		{"bad pattern", `partition "a" {
  pkey    = "0x0001"
  members = ["desc:node[0-9"] #<
}`, "Invalid description pattern", "no closing ]"},
		{"empty pattern", `partition "a" {
  pkey    = "0x0001"
  members = ["desc:"] #<
}`, "Invalid description pattern", "empty"},
		{"pkey zero", `partition "a" {
  pkey    = "0x8000" #<
  members = ["all"]
}`, "Invalid P_Key", "invalid P_Key"},
		{"pkey not hex", `partition "a" {
  pkey    = "12" #<
  members = ["all"]
}`, "Invalid P_Key", "with 0x"},
		{"pkey too wide", `partition "a" {
  pkey    = "0x10001" #<
  members = ["all"]
}`, "Invalid P_Key", "16-bit"},
		{"duplicate pkey", `partition "a" {
  pkey    = "0x0005"
  members = ["all"]
}
partition "b" { #<
  pkey    = "0x8005"
  members = ["all"]
}`, "Duplicate P_Key", `already used by partition "a" at p.hcl:13`},
		{"duplicate default pkey", `partition "a" {
  pkey    = "0x7fff"
  members = ["all"]
}
partition "b" { #<
  pkey    = "0xffff"
  members = ["all_cas"]
}`, "Duplicate P_Key", "0x7fff"},
		{"duplicate name", `partition "a" {
  pkey    = "0x0005"
  members = ["all"]
}
partition "a" { #<
  pkey    = "0x0006"
  members = ["all"]
}`, "Duplicate partition name", "p.hcl:13"},
		{"default with another key", `partition "default" {
  pkey    = "0x0001" #<
  members = ["all"]
}`, "Default partition redefined", "0x7fff"},
		{"self limited", `partition "default" {
  pkey            = "0x7fff"
  limited_members = ["all_cas", "self"] #<
}`, "SM port as limited member", "full member of every partition"},
		{"listed twice", `partition "a" {
  pkey            = "0x0001"
  members         = ["all_cas"]
  limited_members = ["all_cas"] #<
}`, "Member listed twice", "p.hcl:15"},
		{"no members", `partition "a" { #<
  pkey = "0x0001"
}`, "Partition without members", "members = [...]"},
		{"missing pkey", `partition "a" { #<
  members = ["all"]
}`, "Missing required argument", "pkey"},
		{"bad mtu", `partition "a" {
  pkey    = "0x0001"
  members = ["all"]
  ipoib {
    mtu = 9000 #<
  }
}`, "Invalid IPoIB MTU", "2048"},
		{"bad rate", `partition "a" {
  pkey    = "0x0001"
  members = ["all"]
  ipoib {
    rate = 42 #<
  }
}`, "Invalid IPoIB rate", "100"},
		{"bad sl", `partition "a" {
  pkey    = "0x0001"
  members = ["all"]
  ipoib {
    sl = 16 #<
  }
}`, "SL out of range", "0..15"},
		{"bad scope", `partition "a" {
  pkey    = "0x0001"
  members = ["all"]
  ipoib {
    scope = "planet" #<
  }
}`, "Invalid IPoIB scope", "link-local"},
		{"bad qkey", `partition "a" {
  pkey    = "0x0001"
  members = ["all"]
  ipoib {
    qkey = "b1b" #<
  }
}`, "Invalid Q_Key", "0x0b1b"},
		{"two ipoib blocks", `partition "a" {
  pkey    = "0x0001"
  members = ["all"]
  ipoib {}
  ipoib {} #<
}`, "Duplicate ipoib block", "p.hcl:16"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := partConfig(tc.src)
			cfg, diags := LoadBytes("p.hcl", []byte(src))
			if cfg != nil || !diags.HasErrors() {
				t.Fatalf("loaded; want error %q", tc.summary)
			}
			line := markedLine(t, src)
			if line <= partLine0 {
				t.Fatalf("marker on line %d", line)
			}
			msg := FormatDiagnostics(diags)
			want := fmt.Sprintf("p.hcl:%d,", line)
			if !strings.Contains(msg, want) || !strings.Contains(msg, tc.summary) || !strings.Contains(msg, tc.detail) {
				t.Errorf("diagnostics:\n%s\nwant %q at %s with %q", msg, tc.summary, want, tc.detail)
			}
		})
	}
}

// JSON syntax carries the same blocks.
func TestPartitionsJSON(t *testing.T) {
	cfg, diags := LoadBytes("ibsm.json", []byte(`{
  "fabric": {"topology": "f.net"},
  "plugin": {"routing_engine": {"ftree": {"path": "f"}}, "lid_assigner": {"sequential": {"path": "s"}}, "vl_assigner": {"single": {"path": "v"}}},
  "routing": {"engine": "ftree", "lid_assigner": "sequential", "vl_assigner": "single"},
  "partition": {"storage": {"pkey": "0x0002", "members": ["all_cas"], "ipoib": {"mtu": 2048}}}
}`))
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics(diags))
	}
	if len(cfg.Partitions) != 2 || cfg.Partitions[1].PKey != 2 || cfg.Partitions[1].IPoIB == nil || cfg.Partitions[1].IPoIB.MTU != 4 {
		t.Errorf("partitions = %+v", cfg.Partitions)
	}
}

func TestGlobRegexp(t *testing.T) {
	for _, tc := range []struct {
		pat, s string
		match  bool
	}{
		{"a*", "abc/def", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"[!x]y", "zy", true},
		{"[!x]y", "xy", false},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
		{"a.b", "axb", false},
		{"(x)", "(x)", true},
		{"[]]", "]", true},
	} {
		re, err := globRegexp(tc.pat)
		if err != nil {
			t.Errorf("%q: %v", tc.pat, err)
			continue
		}
		if re.MatchString(tc.s) != tc.match {
			t.Errorf("%q on %q = %v", tc.pat, tc.s, !tc.match)
		}
	}
	for _, bad := range []string{"", "[a", `a\`} {
		if _, err := globRegexp(bad); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}
