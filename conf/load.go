package conf

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/ibsm/ibsm/sdk"
)

// Loader parses configuration files and keeps their sources, so a caller can
// print diagnostics with source snippets:
//
//	l := conf.NewLoader()
//	cfg, diags := l.Load(path)
//	fmt.Fprint(os.Stderr, l.FormatDiagnostics(diags))
//
// (hcl.NewDiagnosticTextWriter with l.Files() works too, but prints whole
// source lines, however long.)
//
// The parser caches files by name, so use a new Loader for every reload.
type Loader struct {
	parser *hclparse.Parser
}

// NewLoader returns a Loader with an empty file cache.
func NewLoader() *Loader { return &Loader{parser: hclparse.NewParser()} }

// Files maps each parsed file name to its source, for hcl's diagnostic
// text writer.
func (l *Loader) Files() map[string]*hcl.File { return l.parser.Files() }

// Load reads and validates the configuration file at path.
func Load(path string) (*Config, hcl.Diagnostics) { return NewLoader().Load(path) }

// Load reads and validates the configuration file at path. On any error it
// returns a nil Config; warnings may accompany a valid Config.
func (l *Loader) Load(path string) (*Config, hcl.Diagnostics) {
	src, err := readLimited(path)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read configuration file",
			Detail:   shorten(fmt.Sprintf("%v. Check the path, or pass the configuration file explicitly.", err)),
		}}
	}
	return l.LoadBytes(path, src)
}

// LoadBytes validates configuration source. A name ending in ".json" is
// parsed as HCL's JSON syntax, anything else as native HCL.
//
// Files over MaxFileSize or nested deeper than MaxNesting are refused
// before parsing. Values quoted in diagnostics are cut to a few hundred
// characters.
func (l *Loader) LoadBytes(name string, src []byte) (*Config, hcl.Diagnostics) {
	cfg, diags := l.loadBytes(name, src)
	return cfg, shortenDiags(diags)
}

func (l *Loader) loadBytes(name string, src []byte) (*Config, hcl.Diagnostics) {
	asJSON := strings.HasSuffix(name, ".json")
	if diags := checkLimits("configuration file", name, src, asJSON); diags.HasErrors() {
		return nil, diags
	}
	var f *hcl.File
	var diags hcl.Diagnostics
	if asJSON {
		f, diags = l.parser.ParseJSON(src, name)
	} else {
		f, diags = l.parser.ParseHCL(src, name)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		return nil, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot resolve configuration directory",
			Detail:   fmt.Sprintf("%v. Relative paths in %s are resolved against its directory.", err, name),
		})
	}
	d := &decoder{dir: dir, diags: diags}
	cfg := d.file(f.Body)
	cfg.File, cfg.Dir = name, dir
	if d.diags.HasErrors() {
		return nil, d.diags
	}
	return cfg, d.diags
}

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "fabric"},
		{Type: "sm"},
		{Type: "plugin", LabelNames: []string{"kind", "name"}},
		{Type: "routing"},
		{Type: "partition", LabelNames: []string{"name"}},
		{Type: "candidate"},
		{Type: "multicast"},
	},
}

var fabricSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "transport"}, {Name: "topology"}, {Name: "sm_node"}, {Name: "sm_port"},
		{Name: "socket"}, {Name: "attach"}, {Name: "device"}, {Name: "port"},
	},
}

var smSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "sweep_interval"}, {Name: "lmc"}, {Name: "state_dir"}, {Name: "mad_window"},
		{Name: "mad_timeout"}, {Name: "mad_retries"}, {Name: "plugin_timeout"}, {Name: "priority"},
		{Name: "audit_smps"}, {Name: "sm_key"}, {Name: "polling_interval"}, {Name: "polling_retries"},
		{Name: "honor_priority"}, {Name: "m_key"}, {Name: "m_key_secret"}, {Name: "m_key_protect_bits"},
		{Name: "m_key_lease_period"}, {Name: "log_level"}, {Name: "metrics_listen"}, {Name: "arm_ahead"},
	},
}

var pluginSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "path", Required: true}, {Name: "sha256"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "config"}},
}

var routingSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "engine"}, {Name: "fallback"}, {Name: "lid_assigner"}, {Name: "vl_assigner"},
		{Name: "switch_to_switch"},
	},
}

// kinds lists the plugin kinds in the order messages name them.
var kinds = []sdk.Kind{sdk.KindRouting, sdk.KindLIDAssign, sdk.KindVLAssign, sdk.KindMulticast}

// decoder accumulates diagnostics while turning the syntax tree into a Config.
type decoder struct {
	dir   string
	diags hcl.Diagnostics
}

func (d *decoder) errorf(rng hcl.Range, summary, format string, args ...any) {
	r := rng
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   shorten(fmt.Sprintf(format, args...)),
		Subject:  &r,
	})
}

func (d *decoder) content(body hcl.Body, s *hcl.BodySchema) *hcl.BodyContent {
	c, diags := body.Content(s)
	d.diags = append(d.diags, diags...)
	return c
}

// abs resolves p against the configuration file's directory.
func (d *decoder) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}

// field reports what happened to one attribute: present in the file, and
// decoded without error.
type field struct {
	present, ok bool
	rng         hcl.Range // the value expression
	attrRng     hcl.Range // the whole "name = value"
}

// attr decodes attribute name (if present) into dst with gohcl's
// conversions, so type errors carry hcl's own wording and the value's range.
func attr[T any](d *decoder, attrs hcl.Attributes, name string, dst *T) field {
	a, ok := attrs[name]
	if !ok {
		return field{}
	}
	f := field{present: true, rng: a.Expr.Range(), attrRng: a.Range}
	var v T
	diags := gohcl.DecodeExpression(a.Expr, nil, &v)
	d.diags = append(d.diags, diags...)
	if !diags.HasErrors() {
		*dst, f.ok = v, true
	}
	return f
}

// singleton returns the only block of type typ, reporting duplicates.
func (d *decoder) singleton(blocks hcl.Blocks, typ string) *hcl.Block {
	var first *hcl.Block
	for _, b := range blocks {
		if b.Type != typ {
			continue
		}
		if first != nil {
			d.errorf(b.DefRange, "Duplicate "+typ+" block",
				"Only one %s block is allowed; the first is at %s. Merge them into one.", typ, first.DefRange)
			continue
		}
		first = b
	}
	return first
}

func (d *decoder) file(body hcl.Body) *Config {
	cfg := &Config{}
	c := d.content(body, fileSchema)
	if c == nil {
		return cfg
	}
	if b := d.singleton(c.Blocks, "fabric"); b != nil {
		cfg.Fabric = d.fabric(b)
	} else {
		d.errorf(body.MissingItemRange(), "Missing fabric block",
			`The SM needs to know how to reach the fabric. Add, for example, fabric { transport = "sim"  topology = "fabric.net" }.`)
	}
	cfg.SM = d.sm(d.singleton(c.Blocks, "sm"), cfg.Fabric.Transport)

	byKey := map[string]*Plugin{}
	for _, b := range c.Blocks {
		if b.Type == "plugin" {
			if p := d.plugin(b, byKey); p != nil {
				cfg.Plugins = append(cfg.Plugins, p)
			}
		}
	}
	cfg.Partitions = d.partitions(c.Blocks)
	if b := d.singleton(c.Blocks, "routing"); b != nil {
		cfg.Routing = d.routing(b, cfg.Plugins)
	} else {
		d.errorf(body.MissingItemRange(), "Missing routing block",
			`Add a routing block naming the plugins to use, for example routing { engine = "minhop"  lid_assigner = "sequential"  vl_assigner = "single" }.`)
	}
	if b := d.singleton(c.Blocks, "candidate"); b != nil {
		cfg.Candidate = d.candidate(b, cfg.Routing, cfg.Plugins)
	}
	cfg.Multicast = d.multicast(d.singleton(c.Blocks, "multicast"), cfg.Plugins) // multicast.go
	return cfg
}
