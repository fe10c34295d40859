package conf

import (
	"strings"
	"testing"
)

// TestOperateAttributes: sm.log_level and sm.metrics_listen, good and bad.
func TestOperateAttributes(t *testing.T) {
	const rest = `
fabric {
  topology = "f.net"
}
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
		body, level, listen, err string
	}{
		{body: ``},
		{body: `log_level = "DEBUG"`, level: "debug"},
		{body: `metrics_listen = "127.0.0.1:9464"`, listen: "127.0.0.1:9464"},
		{body: `metrics_listen = ":9464"`, listen: ":9464"},
		{body: `log_level = "loud"`, err: "f.hcl:2,15-21: Invalid log level"},
		{body: `metrics_listen = "9464"`, err: "f.hcl:2,20-26: Invalid metrics address"},
	}
	for _, tc := range tests {
		cfg, diags := LoadBytes("f.hcl", []byte("sm {\n  "+tc.body+"\n}\n"+rest))
		got := FormatDiagnostics(diags)
		if tc.err != "" {
			if !strings.Contains(got, tc.err) {
				t.Errorf("%s: diagnostics %q, want %q", tc.body, got, tc.err)
			}
			continue
		}
		if diags.HasErrors() {
			t.Errorf("%s: %s", tc.body, got)
			continue
		}
		if cfg.SM.LogLevel != tc.level || cfg.SM.MetricsListen != tc.listen {
			t.Errorf("%s: level %q listen %q", tc.body, cfg.SM.LogLevel, cfg.SM.MetricsListen)
		}
	}
}
