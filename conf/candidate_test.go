package conf

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// candidateBase declares the plugins the candidate tests refer to.
const candidateBase = `
fabric {
  transport = "sim"
  topology  = "fabric.net"
}
plugin "routing_engine" "updn"   { path = "bin/updn" }
plugin "routing_engine" "sftree" { path = "bin/sftree" }
plugin "routing_engine" "minhop" { path = "bin/minhop" }
plugin "lid_assigner" "sequential" { path = "bin/sequential" }
plugin "vl_assigner" "single"      { path = "bin/single" }
plugin "vl_assigner" "layered"     { path = "bin/layered" }
routing {
  engine       = "updn"
  fallback     = ["minhop"]
  lid_assigner = "sequential"
  vl_assigner  = "single"
}
`

func TestCandidateDefaults(t *testing.T) {
	cfg, diags := LoadBytes("t.hcl", []byte(candidateBase+`candidate { engine = "sftree" }`))
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics(diags))
	}
	c := cfg.Candidate
	if c == nil {
		t.Fatal("no candidate")
	}
	if c.Engine != "sftree" || c.LIDAssigner != "sequential" || c.VLAssigner != "single" || !reflect.DeepEqual(c.Fallback, []string{"minhop"}) {
		t.Errorf("candidate pipeline = %+v, want sftree with routing's fallback and assigners", c)
	}
	if c.Promote != PromoteManual || len(c.Require) != 0 || c.ConsecutiveSweeps != DefaultConsecutiveSweeps || len(c.Stages) != 0 {
		t.Errorf("rules = %+v, want manual, no require, default sweeps, no stage", c)
	}
	cc := cfg.CandidateConfig()
	if cc.Routing.Engine != "sftree" || cc.Candidate != nil || cfg.Routing.Engine != "updn" {
		t.Errorf("CandidateConfig routing = %+v (active %+v)", cc.Routing, cfg.Routing)
	}
	// The active fallback as the candidate's engine: the inherited
	// fallback drops it (the plugin would run twice in one pipeline).
	own, diags := LoadBytes("t.hcl", []byte(candidateBase+`candidate { engine = "minhop" }`))
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics(diags))
	}
	if f := own.Candidate.Fallback; len(f) != 0 || !reflect.DeepEqual(own.Routing.Fallback, []string{"minhop"}) {
		t.Errorf("candidate minhop inherits fallback %v (active %v), want none", f, own.Routing.Fallback)
	}
	if none, _ := LoadBytes("t.hcl", []byte(candidateBase)); none.Candidate != nil || none.CandidateConfig() != nil {
		t.Error("a config without candidate block has a candidate")
	}
}

func TestCandidateFull(t *testing.T) {
	cfg, diags := LoadBytes("t.hcl", []byte(candidateBase+`
candidate {
  engine      = "sftree"
  fallback    = []
  vl_assigner = "layered"
  promote     = "auto"
  require     = ["deadlock_free", "max_load_le_active"]
  consecutive_sweeps = 5
  stage "spine" {
    guids = ["0x10", "0002c90300000001"]
    dwell = "2s"
  }
  stage "leaves" { tier = 0 }
  stage "canary" { fraction = 0.25 }
  stage "rest"   { node_desc = "sw*" }
}`))
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics(diags))
	}
	c := cfg.Candidate
	if c.VLAssigner != "layered" || len(c.Fallback) != 0 || c.Promote != PromoteAuto || c.ConsecutiveSweeps != 5 {
		t.Errorf("candidate = %+v", c)
	}
	if !reflect.DeepEqual(c.Require, []Criterion{RequireDeadlockFree, RequireMaxLoadLEActive}) {
		t.Errorf("require = %v", c.Require)
	}
	type st struct {
		Name     string
		GUIDs    []uint64
		NodeDesc string
		Tier     int
		Fraction float64
		Dwell    time.Duration
	}
	var got []st
	for _, s := range c.Stages {
		got = append(got, st{s.Name, s.GUIDs, s.NodeDesc, s.Tier, s.Fraction, s.Dwell})
	}
	want := []st{
		{"spine", []uint64{0x10, 0x0002c90300000001}, "", -1, 0, 2 * time.Second},
		{"leaves", nil, "", 0, 0, DefaultDwell},
		{"canary", nil, "", -1, 0.25, DefaultDwell},
		{"rest", nil, "sw*", -1, 0, DefaultDwell},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stages = %+v\nwant %+v", got, want)
	}
	auto, _ := LoadBytes("t.hcl", []byte(candidateBase+`candidate { promote = "auto" }`))
	if !reflect.DeepEqual(auto.Candidate.Require, DefaultRequire) || auto.Candidate.Engine != "updn" {
		t.Errorf("auto without require = %+v, want DefaultRequire and routing's engine", auto.Candidate)
	}
}

func TestCandidateErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line      int    // line of the diagnostic within the candidate text (1 = "candidate {")
		want      string // in summary + detail
	}{
		{"unknown engine", `candidate {
  engine = "nope"
}`, 2, `no plugin "routing_engine" "nope"`},
		{"kind mismatch", `candidate {
  lid_assigner = "single"
}`, 2, "Plugin kind mismatch"},
		{"bad promote", `candidate {
  promote = "yolo"
}`, 2, `"yolo" is not a mode`},
		{"unknown criterion", `candidate {
  promote = "auto"
  require = ["fast"]
}`, 3, `"fast" is not a promotion criterion`},
		{"require manual", `candidate {
  require = ["deadlock_free"]
}`, 2, `promote = "auto"`},
		{"sweeps", `candidate {
  consecutive_sweeps = 0
}`, 2, "must be 1..1000"},
		{"fallback repeats", `candidate {
  engine = "sftree"
  fallback = ["sftree"]
}`, 3, "Fallback repeats the engine"},
		{"no selector", `candidate {
  stage "a" {
    dwell = "1s"
  }
}`, 2, "Stage selects no switch"},
		{"two selectors", `candidate {
  stage "a" {
    tier = 1
    fraction = 0.5
  }
}`, 2, "several selectors"},
		{"fraction", `candidate {
  stage "a" {
    fraction = 1.5
  }
}`, 3, "must be in (0, 1]"},
		{"tier", `candidate {
  stage "a" {
    tier = -1
  }
}`, 3, "tier = -1 must be 0..15"},
		{"guid", `candidate {
  stage "a" {
    guids = ["0xzz"]
  }
}`, 3, "not hexadecimal"},
		{"glob", `candidate {
  stage "a" {
    node_desc = "leaf["
  }
}`, 3, "not a valid glob"},
		{"dwell", `candidate {
  stage "a" {
    tier = 1
    dwell = "soon"
  }
}`, 4, "not a duration"},
		{"dup stage", `candidate {
  stage "a" { tier = 1 }
  stage "a" { tier = 2 }
}`, 3, "Duplicate stage"},
		{"dup block", `candidate {}
candidate {}`, 2, "Duplicate candidate block"},
		{"unknown attr", `candidate {
  engin = "sftree"
}`, 2, "Unsupported argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, diags := LoadBytes("t.hcl", []byte(candidateBase+tc.src))
			if !diags.HasErrors() || cfg != nil {
				t.Fatalf("no error for %s", tc.src)
			}
			d := diags[0]
			msg := d.Summary + ": " + d.Detail
			if !strings.Contains(msg, tc.want) {
				t.Errorf("diagnostic %q does not contain %q", msg, tc.want)
			}
			base := strings.Count(candidateBase, "\n")
			if d.Subject == nil || d.Subject.Filename != "t.hcl" || d.Subject.Start.Line != base+tc.line {
				t.Errorf("diagnostic at %v, want t.hcl:%d", d.Subject, base+tc.line)
			}
		})
	}
}
