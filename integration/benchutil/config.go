package benchutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ibsm/ibsm/conf"
)

// Config is the ibsm config of one benchmark or experiment run: one
// fabric, one pipeline (engine, LID assigner, VL assigner, no fallback: a
// rejected plan must show as a rejection, not as another engine's
// numbers), the plugin binaries from BinDir.
type Config struct {
	// Topology is the .net file of the embedded simulator (transport
	// "sim"); Socket, if set instead, the IBSIM_SOCKNAME of an ibsim at
	// its default port (transport "ibsim").
	Topology, Socket string
	StateDir, BinDir string
	// Engine is the routing engine plugin; LIDAssigner and VLAssigner
	// default to "sequential" and "single".
	Engine, LIDAssigner, VLAssigner string
	// EngineConfig and VLConfig are the attribute lines ("vls = 8") of the
	// plugins' config blocks; none: no block.
	EngineConfig, VLConfig []string
	LMC                    int
	// PluginTimeout is sm.plugin_timeout as HCL writes it ("30m"); "":
	// conf's default.
	PluginTimeout string
	// SwitchToSwitch is routing.switch_to_switch; "": conf's default.
	SwitchToSwitch string
	// ExampleSM writes out the sweep, MAD and priority settings of
	// conf/examples/ft2-648.hcl (ft2-648-ibsim.hcl's window on ibsim), so
	// the benchmarks keep them when conf's defaults move.
	ExampleSM bool
}

// HCL is c as a config file.
func (c Config) HCL() string {
	lid, vl := c.LIDAssigner, c.VLAssigner
	if lid == "" {
		lid = "sequential"
	}
	if vl == "" {
		vl = "single"
	}
	var b strings.Builder
	fabric := [][2]string{{"transport", `"sim"`}, {"topology", fmt.Sprintf("%q", c.Topology)}}
	if c.Socket != "" {
		fabric = [][2]string{{"transport", `"ibsim"`}, {"socket", fmt.Sprintf("%q", c.Socket)}}
	}
	block(&b, "fabric", fabric)
	b.WriteString("\n")
	var sm [][2]string
	if c.ExampleSM {
		sm = append(sm, [2]string{"sweep_interval", `"10s"`})
	}
	sm = append(sm, [2]string{"lmc", fmt.Sprint(c.LMC)}, [2]string{"state_dir", fmt.Sprintf("%q", c.StateDir)})
	if c.ExampleSM {
		window := "16"
		if c.Socket != "" {
			window = "128" // conf/examples/ft2-648-ibsim.hcl
		}
		sm = append(sm, [2]string{"mad_window", window}, [2]string{"mad_timeout", `"200ms"`}, [2]string{"mad_retries", "3"})
	}
	if c.PluginTimeout != "" {
		sm = append(sm, [2]string{"plugin_timeout", fmt.Sprintf("%q", c.PluginTimeout)})
	}
	if c.ExampleSM {
		sm = append(sm, [2]string{"priority", "15"})
	}
	block(&b, "sm", sm)
	b.WriteString("\n")
	for _, p := range []struct {
		kind, name string
		config     []string
	}{{"routing_engine", c.Engine, c.EngineConfig}, {"lid_assigner", lid, nil}, {"vl_assigner", vl, c.VLConfig}} {
		fmt.Fprintf(&b, "plugin %q %q {\n  path = %q\n", p.kind, p.name, filepath.Join(c.BinDir, "ibsm-plugin-"+p.name))
		if len(p.config) > 0 {
			fmt.Fprintf(&b, "  config {\n    %s\n  }\n", strings.Join(p.config, "\n    "))
		}
		b.WriteString("}\n\n")
	}
	routing := [][2]string{{"engine", fmt.Sprintf("%q", c.Engine)}, {"lid_assigner", fmt.Sprintf("%q", lid)}, {"vl_assigner", fmt.Sprintf("%q", vl)}}
	if c.SwitchToSwitch != "" {
		routing = append(routing, [2]string{"switch_to_switch", fmt.Sprintf("%q", c.SwitchToSwitch)})
	}
	block(&b, "routing", routing)
	return b.String()
}

// block writes an HCL block of attributes with their "=" aligned, as
// hclfmt lays them out.
func block(b *strings.Builder, name string, attrs [][2]string) {
	w := 0
	for _, a := range attrs {
		w = max(w, len(a[0]))
	}
	fmt.Fprintf(b, "%s {\n", name)
	for _, a := range attrs {
		fmt.Fprintf(b, "  %-*s = %s\n", w, a[0], a[1])
	}
	b.WriteString("}\n")
}

// Write writes c's HCL to path.
func (c Config) Write(path string) error {
	return os.WriteFile(path, []byte(c.HCL()), 0o644)
}

// Load writes c to path and loads it as ibsm does (host/app.New starts
// the host on what it returns).
func (c Config) Load(path string) (*conf.Config, error) {
	if err := c.Write(path); err != nil {
		return nil, err
	}
	cfg, diags := conf.Load(path)
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s", conf.FormatDiagnostics(diags))
	}
	return cfg, nil
}

// WriteConfig writes an HCL config that brings up netFile on the embedded
// simulator with one routing engine and no fallback. MAD and plugin
// settings are those of conf/examples/ft2-648.hcl.
func WriteConfig(path, netFile, stateDir, binDir, engine string) error {
	return Config{Topology: netFile, StateDir: stateDir, BinDir: binDir, Engine: engine,
		PluginTimeout: "120s", ExampleSM: true}.Write(path)
}

// WriteIBSimConfig writes the config WriteConfig writes, attached instead
// to the ibsim behind sockname at ibsim's default port (where OpenSM's
// umad2sim attaches too). Plugins get 300s: the race runs the largest
// fabrics, on loaded machines.
func WriteIBSimConfig(path, sockname, stateDir, binDir, engine string) error {
	return Config{Socket: sockname, StateDir: stateDir, BinDir: binDir, Engine: engine,
		PluginTimeout: "300s", ExampleSM: true}.Write(path)
}

// PluginDir is bin as an absolute path, once it holds ibsm-plugin-<name>
// for each name; otherwise the error names the missing plugin and says to
// build it or pass flag (the program's option for another directory).
func PluginDir(bin, flag string, names ...string) (string, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", err
	}
	for _, p := range names {
		if _, err := os.Stat(filepath.Join(abs, "ibsm-plugin-"+p)); err != nil {
			return "", fmt.Errorf("plugin %s: %v; run 'make build' or pass %s", p, err, flag)
		}
	}
	return abs, nil
}

// WorkDir is dir as an absolute path, created if missing, or when dir is
// "" a new temporary directory named prefix*. done removes the temporary
// directory and leaves a given one alone.
func WorkDir(dir, prefix string) (path string, done func(), err error) {
	done = func() {}
	if dir == "" {
		if dir, err = os.MkdirTemp("", prefix); err != nil {
			return "", nil, err
		}
		tmp := dir
		done = func() { os.RemoveAll(tmp) }
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	if path, err = filepath.Abs(dir); err != nil {
		done()
		return "", nil, err
	}
	return path, done, nil
}
