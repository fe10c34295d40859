package conf

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// from rewrites the minimal config: each pair replaces old with new once,
// failing the test if old is absent (so a case cannot silently test the
// valid config).
func from(t *testing.T, pairs ...string) string {
	t.Helper()
	s := minimal
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("minimal config has no %q", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

// markedLine is the 1-based line of src that carries the "#<" marker.
func markedLine(t *testing.T, src string) int {
	t.Helper()
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, "#<") {
			return i + 1
		}
	}
	t.Fatal("test source has no #< marker")
	return 0
}

// TestLoadErrors checks that every class of mistake yields an error whose
// Subject is in the right file, on the line marked "#<", covering the
// expected source text, and that nothing is returned.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     func(t *testing.T) string
		summary string
		subject string // exact source text the Subject covers
		detail  string // substring of Detail
	}{
		{"syntax error", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, `topology = "f.net" }}  #<`)
		}, "Missing newline after argument", "}", "must end with a newline"},
		{"unclosed string", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, `topology = "f.net  #<`)
		}, "Unterminated template string", "\n", ""},
		{"unknown block", func(t *testing.T) string {
			return from(t, "routing {", "rooting {} #<\nrouting {")
		}, "Unsupported block type", "rooting", `Did you mean "routing"?`},
		{"unknown attribute", func(t *testing.T) string {
			return from(t, "routing {", "sm {\n  lcm = 1 #<\n}\nrouting {")
		}, "Unsupported argument", "lcm", `Did you mean "lmc"?`},
		{"unknown top-level attribute", func(t *testing.T) string {
			return from(t, "routing {", "lmc = 1 #<\nrouting {")
		}, "Unsupported argument", "lmc", ""},
		{"wrong type", func(t *testing.T) string {
			return from(t, "routing {", "sm {\n  lmc = \"two\" #<\n}\nrouting {")
		}, "Unsuitable value type", "two", "number is required"},
		{"wrong type list", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, `topology = ["f.net"] #<`)
		}, "Unsuitable value type", "[", "string required"},
		{"fractional lmc", func(t *testing.T) string {
			return from(t, "routing {", "sm {\n  lmc = 1.5 #<\n}\nrouting {")
		}, "Unsuitable value type", "1.5", ""},
		{"missing plugin path", func(t *testing.T) string {
			return from(t, `plugin "lid_assigner" "sequential" { path = "seq" }`, "plugin \"lid_assigner\" \"sequential\" { #<\n}")
		}, "Missing required argument", "", `"path" is required`},
		{"missing engine", func(t *testing.T) string {
			return from(t, "routing {", "routing { #<", `engine       = "minhop"`, "")
		}, "Missing engine", "routing", "Declared: minhop."},
		{"missing vl_assigner", func(t *testing.T) string {
			return from(t, "routing {", "routing { #<", `vl_assigner  = "single"`, "")
		}, "Missing vl_assigner", "routing", "Declared: single."},
		{"missing fabric block", func(t *testing.T) string {
			return from(t, "\nfabric {\n  topology = \"f.net\"\n}", "#<")
		}, "Missing fabric block", "", `transport = "sim"`},
		{"missing routing block", func(t *testing.T) string {
			return "#<" + from(t, "routing {\n  engine       = \"minhop\"\n  lid_assigner = \"sequential\"\n  vl_assigner  = \"single\"\n}", "")
		}, "Missing routing block", "", ""},
		{"duplicate fabric block", func(t *testing.T) string {
			return from(t, "routing {", "fabric { #<\n  topology = \"g.net\"\n}\nrouting {")
		}, "Duplicate fabric block", "fabric", "the first is at ibsm.hcl:2,1-7"},
		{"bad duration", func(t *testing.T) string {
			return from(t, "routing {", "sm {\n  sweep_interval = \"10\" #<\n}\nrouting {")
		}, "Invalid duration", `"10"`, "Write a number with a unit"},
		{"negative duration", func(t *testing.T) string {
			return from(t, "routing {", "sm {\n  mad_timeout = \"-1s\" #<\n}\nrouting {")
		}, "Invalid duration", `"-1s"`, "must be positive"},
		{"zero duration", func(t *testing.T) string {
			return from(t, "routing {", "sm {\n  plugin_timeout = \"0s\" #<\n}\nrouting {")
		}, "Invalid duration", `"0s"`, "must be positive"},
		{"lmc out of range", func(t *testing.T) string {
			return from(t, "routing {", "sm {\n  lmc = 8 #<\n}\nrouting {")
		}, "LMC out of range", "8", "0..7"},
		{"negative lmc", func(t *testing.T) string {
			return from(t, "routing {", "sm {\n  lmc = -1 #<\n}\nrouting {")
		}, "LMC out of range", "-1", "0..7"},
		{"priority out of range", func(t *testing.T) string {
			return from(t, "routing {", "sm {\n  priority = 16 #<\n}\nrouting {")
		}, "Priority out of range", "16", "0..15"},
		{"mad window zero", func(t *testing.T) string {
			return from(t, "routing {", "sm {\n  mad_window = 0 #<\n}\nrouting {")
		}, "MAD window out of range", "0", ""},
		{"negative retries", func(t *testing.T) string {
			return from(t, "routing {", "sm {\n  mad_retries = -1 #<\n}\nrouting {")
		}, "MAD retries out of range", "-1", ""},
		{"empty state_dir", func(t *testing.T) string {
			return from(t, "routing {", "sm {\n  state_dir = \"\" #<\n}\nrouting {")
		}, "Empty state_dir", `""`, ""},
		{"duplicate sm block", func(t *testing.T) string {
			return from(t, "routing {", "sm {}\nsm {} #<\nrouting {")
		}, "Duplicate sm block", "sm", ""},
		{"unknown switch_to_switch policy", func(t *testing.T) string {
			return from(t, `vl_assigner  = "single"`, "vl_assigner  = \"single\"\n  switch_to_switch = \"besteffort\" #<")
		}, "Invalid switch_to_switch", `"besteffort"`, `Use "required" (the default`},
		{"switch_to_switch not a string policy", func(t *testing.T) string {
			return from(t, `vl_assigner  = "single"`, "vl_assigner  = \"single\"\n  switch_to_switch = true #<")
		}, "Invalid switch_to_switch", "true", `"best_effort" (accept it`},
		{"switch_to_switch wrong type", func(t *testing.T) string {
			return from(t, `vl_assigner  = "single"`, "vl_assigner  = \"single\"\n  switch_to_switch = [\"required\"] #<")
		}, "Unsuitable value type", "[", "string required"},
		{"switch_to_switch outside routing", func(t *testing.T) string {
			return from(t, "routing {", "sm {\n  switch_to_switch = \"required\" #<\n}\nrouting {")
		}, "Unsupported argument", "switch_to_switch", ""},
		{"unknown plugin reference", func(t *testing.T) string {
			return from(t, `engine       = "minhop"`, `engine       = "updm" #<`,
				`plugin "routing_engine" "minhop" { path = "minhop" }`,
				"plugin \"routing_engine\" \"minhop\" { path = \"minhop\" }\nplugin \"routing_engine\" \"updn\" { path = \"updn\" }")
		}, "Unknown plugin", `"updm"`, `no plugin "routing_engine" "updm" is declared. Declared: minhop, updn.`},
		{"kind mismatch", func(t *testing.T) string {
			return from(t, `lid_assigner = "sequential"`, `lid_assigner = "minhop" #<`)
		}, "Plugin kind mismatch", `"minhop"`, `declared as plugin "routing_engine" "minhop" at ibsm.hcl:5,1-33`},
		{"duplicate plugin", func(t *testing.T) string {
			return from(t, `plugin "vl_assigner" "single" { path = "single" }`,
				"plugin \"vl_assigner\" \"single\" { path = \"single\" }\nplugin \"vl_assigner\" \"single\" { path = \"other\" } #<")
		}, "Duplicate plugin", `plugin "vl_assigner" "single"`, "already declared at ibsm.hcl:7,1-30"},
		{"unknown plugin kind", func(t *testing.T) string {
			return from(t, "routing {", "plugin \"routing\" \"ftree\" { path = \"x\" } #<\nrouting {")
		}, "Unknown plugin kind", `"routing"`, "routing_engine, lid_assigner, vl_assigner"},
		{"invalid plugin name", func(t *testing.T) string {
			return from(t, "routing {", "plugin \"routing_engine\" \"../x\" { path = \"x\" } #<\nrouting {")
		}, "Invalid plugin name", `"../x"`, ""},
		{"missing plugin label", func(t *testing.T) string {
			return from(t, "routing {", "plugin \"routing_engine\" { path = \"x\" } #<\nrouting {")
		}, "Missing name for plugin", "{", ""},
		{"bad sha256 length", func(t *testing.T) string {
			return from(t, `{ path = "seq" }`, "{\n  path = \"seq\"\n  sha256 = \"abc123\" #<\n}")
		}, "Invalid sha256", `"abc123"`, "64 hex digits"},
		{"bad sha256 digit", func(t *testing.T) string {
			return from(t, `{ path = "seq" }`, "{\n  path = \"seq\"\n  sha256 = \""+strings.Repeat("g", 64)+"\" #<\n}")
		}, "Invalid sha256", `"` + strings.Repeat("g", 64) + `"`, ""},
		{"empty plugin path", func(t *testing.T) string {
			return from(t, `path = "seq" }`, "path = \"\" } #<")
		}, "Empty plugin path", `""`, "bin/ibsm-plugin-sequential"},
		{"duplicate config block", func(t *testing.T) string {
			return from(t, `{ path = "seq" }`, "{\n  path = \"seq\"\n  config {}\n  config {} #<\n}")
		}, "Duplicate config block", "config", ""},
		{"fallback repeats engine", func(t *testing.T) string {
			return from(t, `engine       = "minhop"`, "engine       = \"minhop\"\n  fallback = [\"minhop\"] #<")
		}, "Fallback repeats the engine", `"minhop"`, ""},
		{"fallback unknown", func(t *testing.T) string {
			return from(t, `engine       = "minhop"`, "engine       = \"minhop\"\n  fallback = [\n    \"updn\", #<\n  ]")
		}, "Unknown plugin", `"updn"`, "routing.fallback"},
		{"fallback duplicate", func(t *testing.T) string {
			return from(t, `engine       = "minhop"`,
				"engine       = \"minhop\"\n  fallback = [\n    \"updn\",\n    \"updn\", #<\n  ]",
				`plugin "routing_engine" "minhop" { path = "minhop" }`,
				"plugin \"routing_engine\" \"minhop\" { path = \"minhop\" }\nplugin \"routing_engine\" \"updn\" { path = \"updn\" }")
		}, "Duplicate fallback", `"updn"`, "already listed"},
		{"fallback kind mismatch", func(t *testing.T) string {
			return from(t, `engine       = "minhop"`, "engine       = \"minhop\"\n  fallback = [\"single\"] #<")
		}, "Plugin kind mismatch", `"single"`, `declared as plugin "vl_assigner" "single"`},
		{"fallback not a list", func(t *testing.T) string {
			return from(t, `engine       = "minhop"`, "engine       = \"minhop\"\n  fallback = \"updn\" #<")
		}, "Invalid fallback", `"updn"`, ""},
		{"unknown transport", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, "transport = \"rdma\" #<")
		}, "Unknown transport", `"rdma"`, `"sim"`},
		{"sim without topology", func(t *testing.T) string {
			return from(t, "fabric {\n  topology = \"f.net\"", "fabric { #<\n  transport = \"sim\"")
		}, "Missing topology", "fabric", "relative to this file's directory"},
		{"empty topology", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, `topology = "" #<`)
		}, "Empty topology path", `""`, ""},
		{"umad without device", func(t *testing.T) string {
			return from(t, "fabric {\n  topology = \"f.net\"", "fabric { #<\n  transport = \"umad\"")
		}, "Missing device", "fabric", "mlx5_0"},
		{"umad device path", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, "transport = \"umad\"\n  device = \"/dev/infiniband/umad0\" #<")
		}, "Invalid device name", `"/dev/infiniband/umad0"`, ""},
		{"umad port zero", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, "transport = \"umad\"\n  device = \"mlx5_0\"\n  port = 0 #<")
		}, "Port out of range", "0", "1..254"},
		{"topology with umad", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, "transport = \"umad\"\n  device = \"mlx5_0\"\n  topology = \"f.net\" #<")
		}, "Attribute not used by this transport", "topology", `only used by transport "sim"`},
		{"device with sim", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, "topology = \"f.net\"\n  device = \"mlx5_0\" #<")
		}, "Attribute not used by this transport", "device", `transport "umad"`},
		{"sm_node with umad", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, "transport = \"umad\"\n  device = \"mlx5_0\"\n  sm_node = \"0x1\" #<")
		}, "Attribute not used by this transport", "sm_node", `"sim" or "ibsim"`},
		{"bad sm_node", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, "topology = \"f.net\"\n  sm_node = \"0xnothex\" #<")
		}, "Invalid GUID", `"0xnothex"`, ""},
		{"sm_port out of range", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, "topology = \"f.net\"\n  sm_port = 255 #<")
		}, "Port out of range", "255", ""},
		{"ibsim attach too long", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, "transport = \"ibsim\"\n  attach = \""+strings.Repeat("n", 32)+"\" #<")
		}, "Invalid ibsim attach point", `"` + strings.Repeat("n", 32) + `"`, "1..31 bytes"},
		{"ibsim attach and sm_node", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, "transport = \"ibsim\"\n  attach = \"Hca1\"\n  sm_node = \"0x1\" #<")
		}, "Conflicting attach point", `"0x1"`, ""},
		{"ibsim bad socket", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, "transport = \"ibsim\"\n  socket = \"/tmp/sim\" #<")
		}, "Invalid ibsim socket name", `"/tmp/sim"`, ""},
		{"variables not allowed", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, `topology = var.topo #<`)
		}, "Variables not allowed", "var", ""},
		{"functions not allowed", func(t *testing.T) string {
			return from(t, `topology = "f.net"`, `topology = file("x") #<`)
		}, "Function calls not allowed", `file("x")`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.src(t)
			line := markedLine(t, src)
			cfg, diags := LoadBytes("ibsm.hcl", []byte(src))
			if cfg != nil {
				t.Errorf("got a Config despite errors")
			}
			if !diags.HasErrors() {
				t.Fatalf("no error; source:\n%s", src)
			}
			for _, d := range diags {
				if d.Summary != tt.summary {
					continue
				}
				if d.Subject == nil {
					t.Fatalf("%q has no Subject", d.Summary)
				}
				s := d.Subject
				if s.Filename != "ibsm.hcl" || s.Start.Line != line {
					t.Errorf("%q at %s, want ibsm.hcl line %d", d.Summary, s, line)
				}
				if got := string(s.SliceBytes([]byte(src))); got != tt.subject {
					t.Errorf("%q covers %q, want %q", d.Summary, got, tt.subject)
				}
				if !strings.Contains(d.Detail, tt.detail) {
					t.Errorf("detail %q does not contain %q", d.Detail, tt.detail)
				}
				return
			}
			t.Errorf("no %q diagnostic; got:\n%s", tt.summary, FormatDiagnostics(diags))
		})
	}
}

// A bad reference must not be reported twice when the plugin itself is
// broken: the declaration error is the one to fix.
func TestBrokenPluginNotReportedAsUnknown(t *testing.T) {
	src := from(t, `plugin "lid_assigner" "sequential" { path = "seq" }`, `plugin "lid_assigner" "sequential" { path = ["seq"] }`)
	_, diags := LoadBytes("ibsm.hcl", []byte(src))
	for _, d := range diags {
		if d.Summary == "Unknown plugin" || d.Summary == "Missing lid_assigner" {
			t.Errorf("spurious %s", FormatDiagnostics(hcl.Diagnostics{d}))
		}
	}
	if !diags.HasErrors() {
		t.Error("no error for a non-string path")
	}
}
