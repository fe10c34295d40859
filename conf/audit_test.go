package conf

import (
	"strings"
	"testing"
)

// TestAuditSMPs: sm.audit_smps is passed on as sm.Options.AuditSMPs takes
// it (unset: 0, the SM's default; 0: -1, off); out-of-range and non-number
// values are errors on the attribute's line.
func TestAuditSMPs(t *testing.T) {
	tests := []struct {
		name  string
		attr  string // "" = no sm block
		want  int
		error string // summary; "" = valid
	}{
		{"unset", "", 0, ""},
		{"budget", "audit_smps = 300", 300, ""},
		{"one", "audit_smps = 1", 1, ""},
		{"off", "audit_smps = 0", -1, ""},
		{"max", "audit_smps = 1048576", MaxAuditSMPs, ""},
		{"negative", "audit_smps = -5", 0, "Audit budget out of range"},
		{"too big", "audit_smps = 1048577", 0, "Audit budget out of range"},
		{"not a number", `audit_smps = "many"`, 0, "Unsuitable value type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := minimal
			if tc.attr != "" {
				src = from(t, "routing {", "sm {\n  "+tc.attr+"\n}\nrouting {")
			}
			cfg, diags := LoadBytes("ibsm.hcl", []byte(src))
			if tc.error == "" {
				if diags.HasErrors() {
					t.Fatalf("LoadBytes: %s", FormatDiagnostics(diags))
				}
				if cfg.SM.AuditSMPs != tc.want {
					t.Fatalf("AuditSMPs = %d, want %d", cfg.SM.AuditSMPs, tc.want)
				}
				return
			}
			if cfg != nil || !diags.HasErrors() {
				t.Fatalf("no error for %s", tc.attr)
			}
			for _, d := range diags {
				if d.Summary == tc.error {
					if d.Subject == nil || d.Subject.Start.Line != strings.Count(minimal[:strings.Index(minimal, "routing {")], "\n")+2 {
						t.Fatalf("%q at %v, want the audit_smps line", d.Summary, d.Subject)
					}
					if tc.error == "Audit budget out of range" && !strings.Contains(d.Detail, "0 (audit off)") {
						t.Fatalf("detail %q does not say how to turn the audit off", d.Detail)
					}
					return
				}
			}
			t.Fatalf("no %q diagnostic; got:\n%s", tc.error, FormatDiagnostics(diags))
		})
	}
}
