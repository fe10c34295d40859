package conf

import (
	"strings"
	"testing"
)

// TestSMElectionAndWindow: the election settings and the transport's
// default MAD window, good and bad.
func TestSMElectionAndWindow(t *testing.T) {
	const plugins = `
plugin "routing_engine" "minhop" { path = "minhop" }
plugin "lid_assigner" "sequential" { path = "seq" }
plugin "vl_assigner" "single" { path = "single" }
routing {
  engine       = "minhop"
  lid_assigner = "sequential"
  vl_assigner  = "single"
}
`
	tests := []struct {
		name, fabric, sm string
		window           int
		key              uint64
		err              string // "" = loads
	}{
		{"sim default window", `transport = "sim"  topology = "f.net"`, ``, DefaultMADWindow, DefaultSMKey, ""},
		{"umad default window", `transport = "umad"  device = "mlx5_0"`, ``, DefaultMADWindowUMAD, DefaultSMKey, ""},
		{"ibsim default window", `transport = "ibsim"`, ``, DefaultMADWindowIBSim, DefaultSMKey, ""},
		{"umad explicit window", `transport = "umad"  device = "mlx5_0"`, `mad_window = 16`, 16, DefaultSMKey, ""},
		{"no sm_key", `topology = "f.net"`, `sm_key = "0x0"`, DefaultMADWindow, 0, ""},
		{"sm_key", `topology = "f.net"`, `sm_key = "0xdeadbeef00000001"`, DefaultMADWindow, 0xdeadbeef00000001, ""},
		{"bad sm_key", `topology = "f.net"`, `sm_key = "secret"`, 0, 0, "f.hcl:7,12-20: Invalid SM_Key"},
		{"bad polling_retries", `topology = "f.net"`, `polling_retries = 0`, 0, 0, "Polling retries out of range"},
		{"bad polling_interval", `topology = "f.net"`, `polling_interval = "-1s"`, 0, 0, "must be positive"},
		{"arm_ahead", `topology = "f.net"`, `arm_ahead = true`, DefaultMADWindow, DefaultSMKey, ""},
		{"bad arm_ahead", `topology = "f.net"`, `arm_ahead = "often"`, 0, 0, "f.hcl:7,16-21: Unsuitable value type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "fabric {\n  " + tc.fabric + "\n}\n\nsm {\n\n  " + tc.sm + "\n}\n" + plugins
			src = strings.Replace(src, `transport = "sim"  topology`, "transport = \"sim\"\n  topology", 1)
			src = strings.Replace(src, `transport = "umad"  device`, "transport = \"umad\"\n  device", 1)
			cfg, diags := LoadBytes("f.hcl", []byte(src))
			if tc.err != "" {
				if !diags.HasErrors() || !strings.Contains(FormatDiagnostics(diags), tc.err) {
					t.Fatalf("want an error containing %q, got %s", tc.err, FormatDiagnostics(diags))
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(FormatDiagnostics(diags))
			}
			if cfg.SM.MADWindow != tc.window || cfg.SM.SMKey != tc.key || !cfg.SM.HonorPriority || cfg.SM.ArmAhead != (tc.sm == `arm_ahead = true`) {
				t.Fatalf("SM = %+v", cfg.SM)
			}
		})
	}
}
