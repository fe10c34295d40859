package conf

import (
	"strings"
	"testing"
)

func TestMulticastBlock(t *testing.T) {
	const spanning = `plugin "multicast_router" "mcast-spanning" { path = "mcast-spanning" }` + "\n"
	const other = `plugin "multicast_router" "other" { path = "other" }` + "\n"
	for _, tc := range []struct {
		name, src, router string
		errs              []string // substrings of the error, "" for none
	}{
		{"absent, none declared: no multicast", minimal, "", nil},
		{"absent, one declared: that one", minimal + spanning, "mcast-spanning", nil},
		{"block names it", minimal + spanning + other + `multicast { router = "other" }`, "other", nil},
		{"absent, two declared", minimal + spanning + other, "", []string{"ibsm.hcl:14,", "Which multicast router?", "mcast-spanning, other"}},
		{"unknown router", minimal + spanning + `multicast { router = "nope" }`, "", []string{"ibsm.hcl:14,", "multicast.router"}},
		{"router of another kind", minimal + spanning + `multicast { router = "minhop" }`, "", []string{"ibsm.hcl:14,", "kind"}},
		{"router missing", minimal + spanning + `multicast {}`, "", []string{"ibsm.hcl:14,", "router"}},
		{"two blocks", minimal + spanning + `multicast { router = "mcast-spanning" }` + "\n" + `multicast { router = "mcast-spanning" }`, "", []string{"ibsm.hcl:15,", "Duplicate multicast block"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, diags := LoadBytes("ibsm.hcl", []byte(tc.src))
			if len(tc.errs) == 0 {
				if diags.HasErrors() {
					t.Fatalf("LoadBytes: %s", FormatDiagnostics(diags))
				}
				if cfg.Multicast.Router != tc.router {
					t.Fatalf("router = %q, want %q", cfg.Multicast.Router, tc.router)
				}
				if p := cfg.MulticastRouter(); (p == nil) != (tc.router == "") || (p != nil && p.Name != tc.router) {
					t.Fatalf("MulticastRouter() = %+v", p)
				}
				return
			}
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			msg := FormatDiagnostics(diags)
			for _, want := range tc.errs {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
		})
	}
}
