package conf

import (
	"strings"
	"testing"
	"time"
)

// TestMKeySettings: m_key, m_key_secret, m_key_protect_bits and
// m_key_lease_period, good and bad, with the file:line of each error.
func TestMKeySettings(t *testing.T) {
	const rest = `
plugin "routing_engine" "minhop" { path = "minhop" }
plugin "lid_assigner" "sequential" { path = "seq" }
plugin "vl_assigner" "single" { path = "single" }
routing {
  engine       = "minhop"
  lid_assigner = "sequential"
  vl_assigner  = "single"
}
`
	const secret = "0123456789abcdef0123"
	tests := []struct {
		name string
		sm   []string // lines of the sm block; line 1 of the block is line 5 of the file
		want SM       // only the M_Key fields are compared
		err  string   // "" = loads; else a substring of the diagnostics
	}{
		{"off by default", nil, SM{}, ""},
		{"single key", []string{`m_key = "0x00000000deadbeef"`},
			SM{MKey: 0xdeadbeef, MKeyProtectBits: DefaultMKeyProtectBits}, ""},
		{"upper-case 0X", []string{`m_key = "0XDEADBEEF"`},
			SM{MKey: 0xdeadbeef, MKeyProtectBits: DefaultMKeyProtectBits}, ""},
		{"secret, level 2, lease", []string{`m_key_secret = "` + secret + `"`, `m_key_protect_bits = 2`, `m_key_lease_period = "90s"`},
			SM{MKeySecret: secret, MKeyProtectBits: 2, MKeyLeasePeriod: 90 * time.Second}, ""},
		{"level 0", []string{`m_key = "0x1"`, `m_key_protect_bits = 0`}, SM{MKey: 1}, ""},
		{"level 3", []string{`m_key = "0x1"`, `m_key_protect_bits = 3`}, SM{MKey: 1, MKeyProtectBits: 3}, ""},
		{"lease never", []string{`m_key = "0x1"`, `m_key_lease_period = "0s"`}, SM{MKey: 1, MKeyProtectBits: 1}, ""},
		{"lease max", []string{`m_key = "0x1"`, `m_key_lease_period = "65535s"`},
			SM{MKey: 1, MKeyProtectBits: 1, MKeyLeasePeriod: 65535 * time.Second}, ""},

		{"key not hex", []string{`m_key = "secret"`}, SM{}, "f.hcl:6,9-17: Invalid M_Key; m_key = \"secret\" is not a 64-bit key in hex"},
		{"key too long", []string{`m_key = "0x11112222333344445"`}, SM{}, "f.hcl:6,9-30: Invalid M_Key"},
		{"key zero", []string{`m_key = "0x0000"`}, SM{}, "f.hcl:6,9-17: Invalid M_Key; m_key = \"0x0000\": M_Key 0 means no protection"},
		{"key without 0x", []string{`m_key = 12`}, SM{}, "f.hcl:6,9-11: Invalid M_Key; m_key = \"12\" is not a 64-bit key in hex; write it as a string with 0x"},
		{"both", []string{`m_key = "0x1"`, `m_key_secret = "` + secret + `"`}, SM{}, "f.hcl:7,16-38: Conflicting M_Key settings; m_key_secret and m_key (at f.hcl:6,9-14) both set"},
		{"short secret", []string{`m_key_secret = "hunter2"`}, SM{}, "f.hcl:6,16-25: M_Key secret too short; m_key_secret is 7 bytes; use at least 16"},
		{"bits without key", []string{`m_key_protect_bits = 2`}, SM{}, "f.hcl:6,1-23: M_Key setting without a key; m_key_protect_bits has no effect without m_key or m_key_secret"},
		{"lease without key", []string{``, `m_key_lease_period = "60s"`}, SM{}, "f.hcl:7,1-27: M_Key setting without a key; m_key_lease_period"},
		{"bits out of range", []string{`m_key = "0x1"`, `m_key_protect_bits = 4`}, SM{}, "f.hcl:7,22-23: M_Key protection out of range; m_key_protect_bits = 4; use 0..3"},
		{"bits negative", []string{`m_key = "0x1"`, `m_key_protect_bits = -1`}, SM{}, "M_Key protection out of range"},
		{"lease not a duration", []string{`m_key = "0x1"`, `m_key_lease_period = "soon"`}, SM{}, "f.hcl:7,22-28: Invalid duration; m_key_lease_period = \"soon\" is not a duration"},
		{"lease too long", []string{`m_key = "0x1"`, `m_key_lease_period = "65536s"`}, SM{}, "f.hcl:7,22-30: M_Key lease out of range"},
		{"lease fraction", []string{`m_key = "0x1"`, `m_key_lease_period = "1500ms"`}, SM{}, "M_Key lease out of range; m_key_lease_period = \"1500ms\"; PortInfo holds whole seconds"},
		{"lease negative", []string{`m_key = "0x1"`, `m_key_lease_period = "-1s"`}, SM{}, "M_Key lease out of range"},
		{"misspelt", []string{`m_key_protection_level = 2`}, SM{}, "f.hcl:6,1-23: Unsupported argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "fabric {\n  topology = \"f.net\"\n}\n\nsm {\n" + strings.Join(tc.sm, "\n") + "\n}\n" + rest
			cfg, diags := LoadBytes("f.hcl", []byte(src))
			if tc.err != "" {
				got := FormatDiagnostics(diags)
				if !diags.HasErrors() || !strings.Contains(strings.ReplaceAll(got, "\n", "; "), tc.err) {
					t.Fatalf("want an error containing %q, got:\n%s", tc.err, got)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(FormatDiagnostics(diags))
			}
			s := cfg.SM
			got := SM{MKey: s.MKey, MKeySecret: s.MKeySecret, MKeyProtectBits: s.MKeyProtectBits, MKeyLeasePeriod: s.MKeyLeasePeriod}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if s.MKeysEnabled() != (tc.want.MKey != 0 || tc.want.MKeySecret != "") {
				t.Fatal("MKeysEnabled disagrees")
			}
		})
	}
}
