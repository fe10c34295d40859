package conf

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/ibsm/ibsm/sdk"
)

// Loader parses configuration files and keeps their sources, so a caller can
// print diagnostics with source snippets:
//
//	l := conf.NewLoader()
//	cfg, diags := l.Load(path)
//	hcl.NewDiagnosticTextWriter(os.Stderr, l.Files(), 100, false).WriteDiagnostics(diags)
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

// LoadBytes validates configuration source; name is used in diagnostics and
// its directory anchors relative paths.
func LoadBytes(name string, src []byte) (*Config, hcl.Diagnostics) {
	return NewLoader().LoadBytes(name, src)
}

// Load reads and validates the configuration file at path. On any error it
// returns a nil Config; warnings may accompany a valid Config.
func (l *Loader) Load(path string) (*Config, hcl.Diagnostics) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read configuration file",
			Detail:   fmt.Sprintf("%v. Check the path, or pass the configuration file explicitly.", err),
		}}
	}
	return l.LoadBytes(path, src)
}

// LoadBytes validates configuration source. A name ending in ".json" is
// parsed as HCL's JSON syntax, anything else as native HCL.
func (l *Loader) LoadBytes(name string, src []byte) (*Config, hcl.Diagnostics) {
	var f *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(name, ".json") {
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
	},
}

var pluginSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "path", Required: true}, {Name: "sha256"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "config"}},
}

var routingSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "engine"}, {Name: "fallback"}, {Name: "lid_assigner"}, {Name: "vl_assigner"},
	},
}

// kinds lists the plugin kinds in the order messages name them.
var kinds = []sdk.Kind{sdk.KindRouting, sdk.KindLIDAssign, sdk.KindVLAssign}

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
		Detail:   fmt.Sprintf(format, args...),
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
	cfg.SM = d.sm(d.singleton(c.Blocks, "sm"))

	byKey := map[string]*Plugin{}
	for _, b := range c.Blocks {
		if b.Type == "plugin" {
			if p := d.plugin(b, byKey); p != nil {
				cfg.Plugins = append(cfg.Plugins, p)
			}
		}
	}
	if b := d.singleton(c.Blocks, "routing"); b != nil {
		cfg.Routing = d.routing(b, cfg.Plugins)
	} else {
		d.errorf(body.MissingItemRange(), "Missing routing block",
			`Add a routing block naming the plugins to use, for example routing { engine = "minhop"  lid_assigner = "sequential"  vl_assigner = "single" }.`)
	}
	return cfg
}

// transportAttrs says which transports use each transport-specific attribute.
var transportAttrs = []struct {
	name string
	use  []Transport
}{
	{"topology", []Transport{TransportSim}},
	{"sm_node", []Transport{TransportSim, TransportIBSim}},
	{"sm_port", []Transport{TransportSim, TransportIBSim}},
	{"socket", []Transport{TransportIBSim}},
	{"attach", []Transport{TransportIBSim}},
	{"device", []Transport{TransportUMAD}},
	{"port", []Transport{TransportUMAD}},
}

func (d *decoder) fabric(b *hcl.Block) Fabric {
	f := Fabric{
		Transport: TransportSim,
		SMPort:    DefaultSMPort,
		Socket:    DefaultIBSimSocket,
		Port:      DefaultUMADPort,
		DeclRange: b.DefRange,
	}
	c := d.content(b.Body, fabricSchema)
	if c == nil {
		return f
	}
	var tr string
	if fv := attr(d, c.Attributes, "transport", &tr); fv.ok {
		switch t := Transport(tr); t {
		case TransportSim, TransportIBSim, TransportUMAD:
			f.Transport = t
		default:
			d.errorf(fv.rng, "Unknown transport",
				`transport = %q is not a transport. Use "sim" (embedded fabric from a topology file), "ibsim" (a running ibsim) or "umad" (hardware).`, tr)
			return f
		}
	}
	for _, ta := range transportAttrs {
		a, ok := c.Attributes[ta.name]
		if !ok || containsT(ta.use, f.Transport) {
			continue
		}
		names := make([]string, len(ta.use))
		for i, t := range ta.use {
			names[i] = strconv.Quote(string(t))
		}
		d.errorf(a.NameRange, "Attribute not used by this transport",
			"%s is only used by transport %s, but this fabric uses transport %q. Remove it, or change transport.",
			ta.name, strings.Join(names, " or "), f.Transport)
	}

	var topo, node, socket, attach, device string
	var smPort, port int
	topoF := attr(d, c.Attributes, "topology", &topo)
	nodeF := attr(d, c.Attributes, "sm_node", &node)
	smPortF := attr(d, c.Attributes, "sm_port", &smPort)
	socketF := attr(d, c.Attributes, "socket", &socket)
	attachF := attr(d, c.Attributes, "attach", &attach)
	deviceF := attr(d, c.Attributes, "device", &device)
	portF := attr(d, c.Attributes, "port", &port)

	switch f.Transport {
	case TransportSim:
		switch {
		case !topoF.present:
			d.errorf(b.DefRange, "Missing topology",
				`Transport "sim" builds the fabric from a topology file (ibnetdiscover/ibsim format). Add topology = "<file>.net"; a relative path is relative to this file's directory.`)
		case topoF.ok && topo == "":
			d.errorf(topoF.rng, "Empty topology path", "topology must name a topology file.")
		case topoF.ok:
			f.Topology, f.TopologyRange = d.abs(topo), topoF.rng
		}
	case TransportIBSim:
		if socketF.ok {
			if socket == "" || len(socket) > 100 || strings.ContainsAny(socket, "\x00/") {
				d.errorf(socketF.rng, "Invalid ibsim socket name",
					"socket = %q must be ibsim's socket base name (IBSIM_SOCKNAME, default \"sim\"): 1..100 characters, no '/'.", socket)
			} else {
				f.Socket = socket
			}
		}
		if attachF.ok {
			// CONNECT carries the node id in a 32-byte NUL-terminated field.
			if attach == "" || len(attach) > 31 || strings.ContainsRune(attach, 0) {
				d.errorf(attachF.rng, "Invalid ibsim attach point",
					"attach = %q must be an ibsim node id or node description of 1..31 bytes; omit it to attach to ibsim's first node.", attach)
			} else {
				f.Attach = attach
			}
		}
		if attachF.present && nodeF.present {
			d.errorf(nodeF.rng, "Conflicting attach point",
				"Both attach (at %s) and sm_node name the node the SM attaches through. Keep one of them.", attachF.rng)
		}
	case TransportUMAD:
		switch {
		case !deviceF.present:
			d.errorf(b.DefRange, "Missing device",
				`Transport "umad" needs the HCA to use: add device = "mlx5_0" (a name listed by ibstat).`)
		case deviceF.ok && (device == "" || strings.ContainsAny(device, "/\x00")):
			d.errorf(deviceF.rng, "Invalid device name",
				"device = %q must be an HCA name such as \"mlx5_0\" (see ibstat), not a path.", device)
		case deviceF.ok:
			f.Device = device
		}
		if portF.ok {
			if port < 1 || port > 254 {
				d.errorf(portF.rng, "Port out of range", "port = %d; HCA port numbers are 1..254.", port)
			} else {
				f.Port = uint8(port)
			}
		}
	}
	if nodeF.ok && containsT([]Transport{TransportSim, TransportIBSim}, f.Transport) {
		g, err := ParseGUID(node)
		if err != nil {
			d.errorf(nodeF.rng, "Invalid GUID", "sm_node = %q: %v.", node, err)
		} else {
			f.SMNode = g
		}
	}
	if smPortF.ok && containsT([]Transport{TransportSim, TransportIBSim}, f.Transport) {
		if smPort < 0 || smPort > 254 {
			d.errorf(smPortF.rng, "Port out of range",
				"sm_port = %d; use 0 for a switch's management port or 1..254 for a CA port.", smPort)
		} else {
			f.SMPort = uint8(smPort)
		}
	}
	return f
}

// ParseGUID parses a 64-bit GUID written as up to 16 hex digits with an
// optional 0x prefix. The zero GUID is invalid.
func ParseGUID(s string) (uint64, error) {
	h := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if h == "" || len(h) > 16 {
		return 0, fmt.Errorf("a GUID is 1..16 hex digits, optionally prefixed by 0x, e.g. \"0x0002c90300000001\"")
	}
	g, err := strconv.ParseUint(h, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not hexadecimal; write a GUID like \"0x0002c90300000001\"", h)
	}
	if g == 0 {
		return 0, fmt.Errorf("GUID 0 is reserved; use the node GUID ibnetdiscover shows")
	}
	return g, nil
}

func containsT(ts []Transport, t Transport) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

func (d *decoder) sm(b *hcl.Block) SM {
	s := SM{
		SweepInterval: DefaultSweepInterval,
		StateDir:      d.abs(DefaultStateDir),
		MADWindow:     DefaultMADWindow,
		MADTimeout:    DefaultMADTimeout,
		MADRetries:    DefaultMADRetries,
		PluginTimeout: DefaultPluginTimeout,
		Priority:      DefaultPriority,
	}
	if b == nil {
		return s
	}
	c := d.content(b.Body, smSchema)
	if c == nil {
		return s
	}
	a := c.Attributes
	d.duration(a, "sweep_interval", &s.SweepInterval, "the light sweep period")
	d.duration(a, "mad_timeout", &s.MADTimeout, "how long to wait for each MAD's response")
	d.duration(a, "plugin_timeout", &s.PluginTimeout, "how long a plugin call may run before it is killed")
	var n int
	if f := attr(d, a, "lmc", &n); f.ok {
		if n < 0 || n > 7 {
			d.errorf(f.rng, "LMC out of range", "lmc = %d; the LID mask control is 0..7 (2^LMC LIDs per port).", n)
		} else {
			s.LMC = uint8(n)
		}
	}
	if f := attr(d, a, "priority", &n); f.ok {
		if n < 0 || n > 15 {
			d.errorf(f.rng, "Priority out of range", "priority = %d; SMInfo priority is 0..15 (15 wins).", n)
		} else {
			s.Priority = uint8(n)
		}
	}
	if f := attr(d, a, "mad_window", &n); f.ok {
		if n < 1 || n > 65535 {
			d.errorf(f.rng, "MAD window out of range", "mad_window = %d; allow 1..65535 outstanding MADs (16 is a good start).", n)
		} else {
			s.MADWindow = n
		}
	}
	if f := attr(d, a, "mad_retries", &n); f.ok {
		if n < 0 || n > 100 {
			d.errorf(f.rng, "MAD retries out of range", "mad_retries = %d; use 0..100 (3 is typical).", n)
		} else {
			s.MADRetries = n
		}
	}
	var dir string
	if f := attr(d, a, "state_dir", &dir); f.ok {
		if dir == "" {
			d.errorf(f.rng, "Empty state_dir", "state_dir must name a directory where ibsm keeps LIDs and cached plans.")
		} else {
			s.StateDir = d.abs(dir)
		}
	}
	return s
}

// duration decodes a positive Go duration string such as "10s".
func (d *decoder) duration(a hcl.Attributes, name string, dst *time.Duration, what string) {
	var s string
	f := attr(d, a, name, &s)
	if !f.ok {
		return
	}
	v, err := time.ParseDuration(s)
	switch {
	case err != nil:
		d.errorf(f.rng, "Invalid duration",
			`%s = %q is not a duration (%s). Write a number with a unit, e.g. "10s", "500ms" or "1m30s".`, name, s, what)
	case v <= 0:
		d.errorf(f.rng, "Invalid duration", "%s = %q must be positive (%s).", name, s, what)
	default:
		*dst = v
	}
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && (r == '_' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

func validKind(k sdk.Kind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

func kindList() string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func key(k sdk.Kind, name string) string { return string(k) + "\x00" + name }

// plugin decodes one plugin block. It returns nil when the labels are
// invalid or duplicate, so later references report the declaration problem
// rather than a second, confusing one.
func (d *decoder) plugin(b *hcl.Block, byKey map[string]*Plugin) *Plugin {
	p := &Plugin{Kind: sdk.Kind(b.Labels[0]), Name: b.Labels[1], DeclRange: b.DefRange, ConfigRange: b.DefRange}
	labelsOK := true
	if !validKind(p.Kind) {
		d.errorf(b.LabelRanges[0], "Unknown plugin kind",
			"%q is not a plugin kind. Use one of %s.", p.Kind, kindList())
		labelsOK = false
	}
	if !validName(p.Name) {
		d.errorf(b.LabelRanges[1], "Invalid plugin name",
			"%q is not a valid plugin name: use 1..64 letters, digits, '_', '-' or '.', starting with a letter or digit.", p.Name)
		labelsOK = false
	}
	if labelsOK {
		if prev, dup := byKey[key(p.Kind, p.Name)]; dup {
			d.errorf(b.DefRange, "Duplicate plugin",
				"plugin %q %q is already declared at %s. Rename or remove one of them.", p.Kind, p.Name, prev.DeclRange)
			labelsOK = false
		} else {
			byKey[key(p.Kind, p.Name)] = p
		}
	}

	c := d.content(b.Body, pluginSchema)
	if c != nil {
		var path, sum string
		if f := attr(d, c.Attributes, "path", &path); f.ok {
			if path == "" {
				d.errorf(f.rng, "Empty plugin path", "path must name the plugin binary, e.g. \"bin/ibsm-plugin-%s\".", p.Name)
			} else {
				p.Path, p.PathRange = d.abs(path), f.rng
			}
		}
		if f := attr(d, c.Attributes, "sha256", &sum); f.ok {
			if !validSHA256(sum) {
				d.errorf(f.rng, "Invalid sha256",
					"sha256 = %q must be 64 hex digits (the output of sha256sum on the plugin binary).", sum)
			} else {
				p.SHA256, p.SHA256Range = strings.ToLower(sum), f.rng
			}
		}
		var cfg *hcl.Block
		for _, cb := range c.Blocks {
			if cfg != nil {
				d.errorf(cb.DefRange, "Duplicate config block",
					"Only one config block is allowed per plugin; the first is at %s. Merge them into one.", cfg.DefRange)
				continue
			}
			cfg = cb
		}
		if cfg != nil {
			p.Body, p.HasConfig, p.ConfigRange = cfg.Body, true, cfg.DefRange
		}
	}
	if p.Body == nil {
		// An empty native body positioned at the plugin block: decoding it
		// yields defaults, and missing required attributes point here.
		p.Body = &hclsyntax.Body{SrcRange: b.DefRange, EndRange: b.DefRange}
	}
	if !labelsOK {
		return nil
	}
	return p
}

func validSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}

func (d *decoder) routing(b *hcl.Block, plugins []*Plugin) Routing {
	r := Routing{DeclRange: b.DefRange}
	c := d.content(b.Body, routingSchema)
	if c == nil {
		return r
	}
	ref := func(attrName string, kind sdk.Kind, dst *string) {
		var name string
		f := attr(d, c.Attributes, attrName, &name)
		switch {
		case !f.present:
			d.errorf(b.DefRange, "Missing "+attrName,
				"routing needs %s = \"<name>\" naming a declared plugin %q block. %s",
				attrName, kind, declared(plugins, kind))
		case f.ok && d.resolve(plugins, kind, name, "routing."+attrName, f.rng):
			*dst = name
		}
	}
	ref("engine", sdk.KindRouting, &r.Engine)
	ref("lid_assigner", sdk.KindLIDAssign, &r.LIDAssigner)
	ref("vl_assigner", sdk.KindVLAssign, &r.VLAssigner)

	a, ok := c.Attributes["fallback"]
	if !ok {
		return r
	}
	elems, diags := hcl.ExprList(a.Expr)
	if diags.HasErrors() {
		d.errorf(a.Expr.Range(), "Invalid fallback",
			`fallback must be a list of routing engine names, e.g. fallback = ["minhop"].`)
		return r
	}
	seen := map[string]hcl.Range{}
	for _, e := range elems {
		var name string
		ed := gohcl.DecodeExpression(e, nil, &name)
		d.diags = append(d.diags, ed...)
		if ed.HasErrors() {
			continue
		}
		rng := e.Range()
		switch prev, dup := seen[name]; {
		case name == r.Engine && r.Engine != "":
			d.errorf(rng, "Fallback repeats the engine",
				"%q is already routing.engine; a fallback must be a different engine. Remove it from fallback.", name)
		case dup:
			d.errorf(rng, "Duplicate fallback", "%q is already listed in fallback at %s. Remove one of them.", name, prev)
		default:
			seen[name] = rng
			if d.resolve(plugins, sdk.KindRouting, name, "routing.fallback", rng) {
				r.Fallback = append(r.Fallback, name)
			}
		}
	}
	return r
}

// resolve reports whether a plugin of kind and name is declared, explaining
// at rng why not.
func (d *decoder) resolve(plugins []*Plugin, kind sdk.Kind, name, what string, rng hcl.Range) bool {
	var other *Plugin
	for _, p := range plugins {
		if p.Name != name {
			continue
		}
		if p.Kind == kind {
			return true
		}
		other = p
	}
	if other != nil {
		d.errorf(rng, "Plugin kind mismatch",
			"%s names %q, but %q is declared as plugin %q %q at %s; %s needs a plugin %q %q block.",
			what, name, name, other.Kind, other.Name, other.DeclRange, what, kind, name)
		return false
	}
	d.errorf(rng, "Unknown plugin", "%s names %q, but no plugin %q %q is declared. %s",
		what, name, kind, name, declared(plugins, kind))
	return false
}

// declared lists the names of the declared plugins of kind, for messages.
func declared(plugins []*Plugin, kind sdk.Kind) string {
	var names []string
	for _, p := range plugins {
		if p.Kind == kind {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("No plugin %q blocks are declared; add one.", kind)
	}
	sort.Strings(names)
	return "Declared: " + strings.Join(names, ", ") + "."
}
