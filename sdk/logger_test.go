package sdk

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestLoggerFollowsHostLevel: the logger Serve hands a plugin writes JSON
// lines (what go-plugin re-logs on the host) at the level the host put in
// LogLevelEnv, info when it set none or something unknown.
func TestLoggerFollowsHostLevel(t *testing.T) {
	tests := []struct {
		env        string
		debug, inf bool
	}{
		{"", false, true},
		{"trace", true, true},
		{"debug", true, true},
		{" DEBUG ", true, true},
		{"info", false, true},
		{"warn", false, false},
		{"error", false, false},
		{"bogus", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(LogLevelEnv, tc.env)
			var b bytes.Buffer
			l := newLogger("p", &b)
			l.Debug("dbg", "k", 1)
			l.Info("inf")
			l.Error("err")
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			got := map[string]bool{}
			for _, line := range lines {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("not a JSON line: %q: %v", line, err)
				}
				got[m["@message"].(string)] = true
			}
			if got["dbg"] != tc.debug || got["inf"] != tc.inf || !got["err"] {
				t.Fatalf("%s=%q: logged %v; want debug %v, info %v, error true", LogLevelEnv, tc.env, got, tc.debug, tc.inf)
			}
		})
	}
}
