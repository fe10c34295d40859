package conf

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/ibsm/ibsm/sdk"
)

func TestLoadFull(t *testing.T) {
	cfg, diags := Load("testdata/full.hcl")
	if diags.HasErrors() {
		t.Fatalf("Load: %s", FormatDiagnostics(diags))
	}
	dir, _ := filepath.Abs("testdata")
	want := Fabric{
		Transport: TransportSim,
		Topology:  filepath.Join(dir, "nets/fabric.net"),
		SMNode:    0x0002c90300000001,
		SMPort:    0,
		Socket:    DefaultIBSimSocket,
		Port:      DefaultUMADPort,
	}
	got := cfg.Fabric
	got.TopologyRange, got.DeclRange = hcl.Range{}, hcl.Range{}
	if got != want {
		t.Errorf("Fabric = %+v, want %+v", got, want)
	}
	wantSM := SM{
		SweepInterval: 90 * time.Second,
		LMC:           2,
		StateDir:      filepath.Join(dir, "state"),
		MADWindow:     64,
		MADTimeout:    350 * time.Millisecond,
		MADRetries:    0,
		PluginTimeout: 2 * time.Minute,
		Priority:      3,

		SMKey:           0x0123456789abcdef,
		PollingInterval: 3 * time.Second,
		PollingRetries:  2,
		HonorPriority:   false,
	}
	if cfg.SM != wantSM {
		t.Errorf("SM = %+v, want %+v", cfg.SM, wantSM)
	}
	if cfg.Dir != dir || cfg.File != "testdata/full.hcl" {
		t.Errorf("File, Dir = %q, %q", cfg.File, cfg.Dir)
	}
	type pl struct {
		Kind      sdk.Kind
		Name      string
		Path      string
		SHA256    string
		HasConfig bool
	}
	var plugins []pl
	for _, p := range cfg.Plugins {
		plugins = append(plugins, pl{p.Kind, p.Name, p.Path, p.SHA256, p.HasConfig})
	}
	wantPlugins := []pl{
		{sdk.KindRouting, "updn", filepath.Join(filepath.Dir(dir), "bin/ibsm-plugin-updn"),
			"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", true},
		{sdk.KindRouting, "minhop", "/opt/ibsm/ibsm-plugin-minhop", "", false},
		{sdk.KindRouting, "ftree", filepath.Join(dir, "bin/ibsm-plugin-ftree"), "", false},
		{sdk.KindLIDAssign, "sequential", filepath.Join(dir, "bin/ibsm-plugin-sequential"), "", false},
		{sdk.KindVLAssign, "single", filepath.Join(dir, "bin/ibsm-plugin-single"), "", false},
	}
	if !reflect.DeepEqual(plugins, wantPlugins) {
		t.Errorf("plugins =\n%+v\nwant\n%+v", plugins, wantPlugins)
	}
	r := cfg.Routing
	if r.Engine != "updn" || !reflect.DeepEqual(r.Fallback, []string{"ftree", "minhop"}) ||
		r.LIDAssigner != "sequential" || r.VLAssigner != "single" {
		t.Errorf("Routing = %+v", r)
	}
	var engines []string
	for _, p := range cfg.Engines() {
		engines = append(engines, p.Name)
	}
	if !reflect.DeepEqual(engines, []string{"updn", "ftree", "minhop"}) {
		t.Errorf("Engines() = %v", engines)
	}
	if cfg.LIDAssigner().Name != "sequential" || cfg.VLAssigner().Name != "single" {
		t.Errorf("assigners = %v, %v", cfg.LIDAssigner(), cfg.VLAssigner())
	}
	// Ranges point into the file so later stages can report problems there.
	if p := cfg.Plugin(sdk.KindRouting, "updn"); p.DeclRange.Start.Line != 24 || p.ConfigRange.Start.Line != 27 ||
		p.PathRange.Start.Line != 25 || p.SHA256Range.Start.Line != 26 || p.DeclRange.Filename != "testdata/full.hcl" {
		t.Errorf("updn ranges: decl %v config %v path %v sha %v", p.DeclRange, p.ConfigRange, p.PathRange, p.SHA256Range)
	}
	if cfg.Fabric.TopologyRange.Start.Line != 4 {
		t.Errorf("TopologyRange = %v", cfg.Fabric.TopologyRange)
	}
}

const minimal = `
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

func TestLoadDefaults(t *testing.T) {
	cfg, diags := LoadBytes("/etc/ibsm/ibsm.hcl", []byte(minimal))
	if diags.HasErrors() {
		t.Fatalf("LoadBytes: %s", FormatDiagnostics(diags))
	}
	want := SM{
		SweepInterval: 10 * time.Second,
		LMC:           0,
		StateDir:      "/var/lib/ibsm",
		MADWindow:     16,
		MADTimeout:    200 * time.Millisecond,
		MADRetries:    3,
		PluginTimeout: time.Minute,
		Priority:      15,
		SMKey:         1,

		PollingInterval: DefaultPollingInterval,
		PollingRetries:  DefaultPollingRetries,
		HonorPriority:   true,
	}
	if cfg.SM != want {
		t.Errorf("SM = %+v, want %+v", cfg.SM, want)
	}
	if f := cfg.Fabric; f.Transport != TransportSim || f.Topology != "/etc/ibsm/f.net" || f.SMNode != 0 || f.SMPort != 1 {
		t.Errorf("Fabric = %+v", f)
	}
	if p := cfg.Plugin(sdk.KindRouting, "minhop"); p.Path != "/etc/ibsm/minhop" || p.HasConfig || p.Body == nil {
		t.Errorf("minhop = %+v", p)
	}
	if cfg.Routing.Fallback != nil {
		t.Errorf("Fallback = %v, want none", cfg.Routing.Fallback)
	}
	if cfg.Plugin(sdk.KindLIDAssign, "minhop") != nil {
		t.Error("Plugin matched a name under the wrong kind")
	}
}

func TestLoadTransports(t *testing.T) {
	tests := []struct {
		name, fabric string
		want         Fabric
	}{
		{"ibsim defaults", `transport = "ibsim"`,
			Fabric{Transport: TransportIBSim, SMPort: 1, Socket: "sim", Port: 1}},
		{"ibsim attach", "transport = \"ibsim\"\nsocket = \"ibsimx1\"\nattach = \"Hca1\"",
			Fabric{Transport: TransportIBSim, SMPort: 1, Socket: "ibsimx1", Attach: "Hca1", Port: 1}},
		{"ibsim sm_node", "transport = \"ibsim\"\nsm_node = \"2c90300000001\"\nsm_port = 2",
			Fabric{Transport: TransportIBSim, SMNode: 0x2c90300000001, SMPort: 2, Socket: "sim", Port: 1}},
		{"umad", "transport = \"umad\"\ndevice = \"mlx5_0\"\nport = 2",
			Fabric{Transport: TransportUMAD, SMPort: 1, Socket: "sim", Device: "mlx5_0", Port: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(minimal, `topology = "f.net"`, tt.fabric, 1)
			cfg, diags := LoadBytes("/x/ibsm.hcl", []byte(src))
			if diags.HasErrors() {
				t.Fatalf("LoadBytes: %s", FormatDiagnostics(diags))
			}
			got := cfg.Fabric
			got.DeclRange = hcl.Range{}
			if got != tt.want {
				t.Errorf("Fabric = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadJSON(t *testing.T) {
	src := `{
  "fabric": {"topology": "f.net"},
  "plugin": {
    "routing_engine": {"minhop": {"path": "m"}},
    "lid_assigner": {"sequential": {"path": "s"}},
    "vl_assigner": {"single": {"path": "v"}}
  },
  "routing": {"engine": "minhop", "fallback": [], "lid_assigner": "sequential", "vl_assigner": "single"}
}`
	cfg, diags := LoadBytes("/x/ibsm.hcl.json", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("LoadBytes: %s", FormatDiagnostics(diags))
	}
	if cfg.Routing.Engine != "minhop" || len(cfg.Plugins) != 3 || cfg.Fabric.Topology != "/x/f.net" {
		t.Errorf("cfg = %+v", cfg)
	}
}

func TestSwitchToSwitchPolicy(t *testing.T) {
	tests := []struct {
		name string
		attr string // added to the routing block ("" = absent)
		want SwitchToSwitch
	}{
		{"absent is required", "", SwitchToSwitchRequired},
		{"required", `switch_to_switch = "required"`, SwitchToSwitchRequired},
		{"best_effort", `switch_to_switch = "best_effort"`, SwitchToSwitchBestEffort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(minimal, "routing {", "routing {\n  "+tt.attr, 1)
			cfg, diags := LoadBytes("ibsm.hcl", []byte(src))
			if diags.HasErrors() {
				t.Fatalf("LoadBytes: %s", FormatDiagnostics(diags))
			}
			if cfg.Routing.SwitchToSwitch != tt.want {
				t.Errorf("SwitchToSwitch = %q, want %q", cfg.Routing.SwitchToSwitch, tt.want)
			}
		})
	}
	// The JSON syntax carries the same attribute.
	cfg, diags := LoadBytes("ibsm.json", []byte(`{
  "fabric": {"topology": "f.net"},
  "plugin": {"routing_engine": {"ftree": {"path": "f"}}, "lid_assigner": {"sequential": {"path": "s"}}, "vl_assigner": {"single": {"path": "v"}}},
  "routing": {"engine": "ftree", "lid_assigner": "sequential", "vl_assigner": "single", "switch_to_switch": "best_effort"}
}`))
	if diags.HasErrors() {
		t.Fatalf("JSON: %s", FormatDiagnostics(diags))
	}
	if cfg.Routing.SwitchToSwitch != SwitchToSwitchBestEffort {
		t.Errorf("JSON SwitchToSwitch = %q", cfg.Routing.SwitchToSwitch)
	}
}

func TestExamples(t *testing.T) {
	files, err := filepath.Glob("examples/*.hcl")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v", files, err)
	}
	root, _ := filepath.Abs("..")
	for _, f := range files {
		cfg, diags := Load(f)
		if diags.HasErrors() {
			t.Errorf("%s: %s", f, FormatDiagnostics(diags))
			continue
		}
		base := strings.TrimSuffix(filepath.Base(f), ".hcl")
		if cfg.Fabric.Transport != TransportSim {
			// ibsim loads the topology itself; the example names no file.
		} else if !exampleTopology(root, base, cfg.Fabric.Topology) {
			t.Errorf("%s: topology %s, want conf/examples/<name>.net where <name> is %q or a prefix of it ending before a '-'", f, cfg.Fabric.Topology, base)
		} else if _, err := os.Stat(cfg.Fabric.Topology); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if want := filepath.Join(root, ".ibsm-state", base); cfg.SM.StateDir != want {
			t.Errorf("%s: state_dir %s, want %s", f, cfg.SM.StateDir, want)
		}
		for _, p := range cfg.Plugins {
			if want := filepath.Join(root, "bin", "ibsm-plugin-"+p.Name); p.Path != want {
				t.Errorf("%s: plugin %s path %s, want %s", f, p.Name, p.Path, want)
			}
		}
	}
	cfg, _ := Load("examples/ft2-648.hcl")
	if cfg != nil && (cfg.Routing.Engine != "updn" || !reflect.DeepEqual(cfg.Routing.Fallback, []string{"minhop"})) {
		t.Errorf("ft2-648 routing = %+v", cfg.Routing)
	}
	for _, c := range []struct {
		file, engine string
		policy       SwitchToSwitch
	}{
		{"ft2-648.hcl", "updn", SwitchToSwitchRequired},
		{"ft2-648-sftree.hcl", "sftree", SwitchToSwitchRequired},
		{"ft2-648-ftree.hcl", "ftree", SwitchToSwitchBestEffort},
		{"ft3-128-sftree.hcl", "sftree", SwitchToSwitchRequired},
		{"ft3-128-ftree.hcl", "ftree", SwitchToSwitchBestEffort},
	} {
		cfg, _ := Load("examples/" + c.file)
		if cfg != nil && (cfg.Routing.Engine != c.engine || cfg.Routing.SwitchToSwitch != c.policy) {
			t.Errorf("%s: engine %q switch_to_switch %q, want %q %q", c.file, cfg.Routing.Engine, cfg.Routing.SwitchToSwitch, c.engine, c.policy)
		}
	}
	cfg, _ = Load("examples/ring6.hcl")
	if cfg != nil && (cfg.Routing.Engine != "minhop" || !reflect.DeepEqual(cfg.Routing.Fallback, []string{"updn"}) ||
		cfg.Routing.VLAssigner != "single") {
		t.Errorf("ring6 routing = %+v", cfg.Routing)
	}
}

// exampleTopology reports whether topo is conf/examples/<name>.net for the
// example's own name or a '-'-separated prefix of it (ft2-648-ftree.hcl
// routes ft2-648.net).
func exampleTopology(root, name, topo string) bool {
	for {
		if topo == filepath.Join(root, "conf/examples", name+".net") {
			return true
		}
		i := strings.LastIndex(name, "-")
		if i <= 0 {
			return false
		}
		name = name[:i]
	}
}

func TestLoadMissingFile(t *testing.T) {
	cfg, diags := Load(filepath.Join(t.TempDir(), "nope.hcl"))
	if cfg != nil || !diags.HasErrors() || !strings.Contains(diags[0].Summary, "Cannot read") {
		t.Errorf("Load missing = %v, %v", cfg, diags)
	}
}

func TestFormatDiagnostics(t *testing.T) {
	src := strings.Replace(minimal, `engine       = "minhop"`, `engine       = "minhpo"`, 1)
	_, diags := LoadBytes("ibsm.hcl", []byte(src))
	got := FormatDiagnostics(diags)
	want := `ibsm.hcl:9,18-26: Unknown plugin; routing.engine names "minhpo", but no plugin "routing_engine" "minhpo" is declared. Declared: minhop.` + "\n"
	if got != want {
		t.Errorf("FormatDiagnostics =\n%s\nwant\n%s", got, want)
	}
	if got := FormatDiagnostics(hcl.Diagnostics{{Severity: hcl.DiagWarning, Summary: "S", Detail: "D"}}); got != "warning: S; D\n" {
		t.Errorf("FormatDiagnostics(warning) = %q", got)
	}
}

func TestParseGUID(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0x0002c90300000001", 0x0002c90300000001, true},
		{"0X0002C90300000001", 0x0002c90300000001, true},
		{"ffffffffffffffff", ^uint64(0), true},
		{"0x", 0, false},
		{"0x0", 0, false},
		{"0x10000000000000000", 0, false},
		{"0xg", 0, false},
		{"-1", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseGUID(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseGUID(%q) = %#x, %v", tt.in, got, err)
		}
	}
}

func TestLoadFileRelative(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "ibsm.hcl")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(minimal), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := Load(p)
	if diags.HasErrors() {
		t.Fatal(FormatDiagnostics(diags))
	}
	if want := filepath.Join(dir, "sub", "f.net"); cfg.Fabric.Topology != want {
		t.Errorf("topology = %s, want %s", cfg.Fabric.Topology, want)
	}
}

func TestLoaderFilesForSnippets(t *testing.T) {
	l := NewLoader()
	src := strings.Replace(minimal, "  lid_assigner = \"sequential\"", "  lid_assigner = \"sequental\"", 1)
	_, diags := l.LoadBytes("ibsm.hcl", []byte(src))
	if !diags.HasErrors() {
		t.Fatal("no error")
	}
	var b strings.Builder
	if err := hcl.NewDiagnosticTextWriter(&b, l.Files(), 0, false).WriteDiagnostics(diags); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Error: Unknown plugin", "on ibsm.hcl line 10", `lid_assigner = "sequental"`, "Declared: sequential."} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("snippet output lacks %q:\n%s", want, b.String())
		}
	}
}
