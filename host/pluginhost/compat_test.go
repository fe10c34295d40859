package pluginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk"
)

func member(role, name string, caps ...string) Member {
	return Member{Role: role, Name: name, Where: "ibsm.hcl:1", Info: sdk.Info{Name: name, Capabilities: caps}}
}

func TestPipelineCheck(t *testing.T) {
	t.Parallel()
	planes := member("routing.engine", "updn", "lmc")
	paths := member("routing.engine", "sw", "paths")
	unknown := member("routing.engine", "old-paths")
	seq := member("routing.lid_assigner", "sequential", "lmc")
	colorL := member("routing.lid_assigner", "color-l", "lmc", "paths")
	noLMC := member("routing.lid_assigner", "plain")
	vl := member("routing.vl_assigner", "single")
	tests := []struct {
		name string
		pl   Pipeline
		want []string // "" = compatible
	}{
		{"planes engine, plain assigner", Pipeline{Engines: []Member{planes}, LID: seq, VL: vl}, nil},
		{"paths engine, path assigner", Pipeline{Engines: []Member{paths}, LID: colorL, VL: vl}, nil},
		{"planes engine, path assigner", Pipeline{Engines: []Member{planes}, LID: colorL, VL: vl, LMC: 2}, nil},
		{"undeclared form is not guessed", Pipeline{Engines: []Member{unknown}, LID: seq, VL: vl}, nil},
		{"paths engine, planes-only assigner", Pipeline{Engines: []Member{paths}, LID: seq, VL: vl},
			[]string{`routing.engine "sw" (ibsm.hcl:1) returns paths-form routes`, `routing.lid_assigner "sequential" (ibsm.hcl:1) numbers planes-form routes only`, `"paths"`}},
		{"paths fallback, planes-only assigner", Pipeline{Engines: []Member{planes, {Role: "routing.fallback", Name: "sw", Info: paths.Info}}, LID: seq, VL: vl},
			[]string{`routing.fallback "sw" returns paths-form routes`, `"sequential"`}},
		{"lmc without an lmc assigner", Pipeline{Engines: []Member{planes}, LID: noLMC, VL: vl, LMC: 1},
			[]string{"sm.lmc = 1", `routing.engine "updn" (ibsm.hcl:1) returns up to 2 planes per destination`, `routing.lid_assigner "plain" (ibsm.hcl:1) does not declare "lmc"`}},
		{"lmc 0 needs nothing", Pipeline{Engines: []Member{planes}, LID: noLMC, VL: vl}, nil},
	}
	for _, tc := range tests {
		err := tc.pl.Check()
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q:\n%v", tc.name, w, err)
			}
		}
	}
}

// TestLaunchReportsSDKVersionAndProtocol: what the lock records comes from
// the running binary.
func TestLaunchReportsSDKVersionAndProtocol(t *testing.T) {
	t.Parallel()
	p := launch(t, newManager(t), Config{})
	if got := p.Info().SDKVersion; got != sdk.SDKVersion {
		t.Errorf("SDK version %q, want %q", got, sdk.SDKVersion)
	}
	if got := p.Protocol(); got != sdk.ProtocolVersion {
		t.Errorf("protocol %d, want %d", got, sdk.ProtocolVersion)
	}
}

func TestPinSourceNamedOnMismatch(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(testPlugin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	bad := strings.Repeat("cd", 32)
	_, err = newManager(t).Launch(context.Background(), Config{Name: "locked", Kind: sdk.KindRouting, Path: testPlugin,
		SHA256: bad, PinSource: "the lock entry at plugins.lock.hcl:4,1-30"})
	for _, want := range []string{"refusing to run", hex.EncodeToString(sum[:]), "the lock entry at plugins.lock.hcl:4,1-30 records " + bad, "ibsm plugins lock"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v, want it to contain %q", err, want)
		}
	}
}
