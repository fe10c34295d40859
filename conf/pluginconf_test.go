package conf

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

// engineSchema is a plausible routing engine schema: one required list, and
// optional attributes with and without defaults.
func engineSchema() schema.Block {
	return schema.Object(
		schema.Attr("root_guids", cty.List(cty.String), "spine GUIDs").AsRequired(),
		schema.Attr("max_vls", cty.Number, "VLs to use").WithDefault(cty.NumberIntVal(4)),
		schema.Attr("strict", cty.Bool, "fail instead of degrading").WithDefault(cty.False),
		schema.Attr("weights", cty.Map(cty.Number), "per-port weights"),
		schema.Attr("note", cty.String, "free text"),
	)
}

func optionalSchema() schema.Block {
	return schema.Object(
		schema.Attr("max_vls", cty.Number, "").WithDefault(cty.NumberIntVal(4)),
		schema.Attr("name", cty.String, "").WithDefault(cty.StringVal("x")),
		schema.Attr("note", cty.String, ""),
	)
}

// pluginSrc is a config whose routing engine "e" has the given plugin body
// (everything between the braces of plugin "routing_engine" "e").
func pluginSrc(body string) string {
	return `fabric {
  topology = "f.net"
}
plugin "routing_engine" "e" {
` + body + `
}
plugin "lid_assigner" "s" { path = "s" }
plugin "vl_assigner" "v" { path = "v" }
routing {
  engine       = "e"
  lid_assigner = "s"
  vl_assigner  = "v"
}
`
}

func decodeEngine(t *testing.T, body string, b schema.Block) (cty.Value, hcl.Diagnostics, string) {
	t.Helper()
	src := pluginSrc(body)
	cfg, diags := LoadBytes("ibsm.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("LoadBytes: %s", FormatDiagnostics(diags))
	}
	v, diags := cfg.Plugin(sdk.KindRouting, "e").DecodeConfig(b)
	return v, diags, src
}

func TestDecodeConfigValues(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		schema schema.Block
		want   cty.Value
	}{
		{"absent block gives defaults", `path = "e"`, optionalSchema(), optionalSchema().Defaults()},
		{"empty block gives defaults", "path = \"e\"\nconfig {}", optionalSchema(), optionalSchema().Defaults()},
		{"empty schema", "path = \"e\"\nconfig {}", schema.Object(), cty.EmptyObjectVal},
		{"absent block, empty schema", `path = "e"`, schema.Object(), cty.EmptyObjectVal},
		{"values, conversions and defaults", `path = "e"
config {
  root_guids = ["0x1", "0x2"]
  max_vls    = "8"        # a numeric string converts
  weights    = { b = 2, a = 1 }
}`, engineSchema(), cty.ObjectVal(map[string]cty.Value{
			"root_guids": cty.ListVal([]cty.Value{cty.StringVal("0x1"), cty.StringVal("0x2")}),
			"max_vls":    cty.NumberIntVal(8),
			"strict":     cty.False,
			"weights":    cty.MapVal(map[string]cty.Value{"a": cty.NumberIntVal(1), "b": cty.NumberIntVal(2)}),
			"note":       cty.NullVal(cty.String),
		})},
		{"explicit null takes the default", "path = \"e\"\nconfig {\n  max_vls = null\n}", optionalSchema(), optionalSchema().Defaults()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, diags, _ := decodeEngine(t, tt.body, tt.schema)
			if diags.HasErrors() {
				t.Fatalf("DecodeConfig: %s", FormatDiagnostics(diags))
			}
			if !v.RawEquals(tt.want) {
				t.Errorf("got %#v\nwant %#v", v, tt.want)
			}
			if !v.Type().Equals(tt.schema.ObjectType()) {
				t.Errorf("type %#v, want %#v", v.Type(), tt.schema.ObjectType())
			}
		})
	}
}

func TestDecodeConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		schema  schema.Block
		summary string
		subject string
		detail  string
	}{
		{"required missing, block absent", `path = "e"`, engineSchema(),
			"Missing required argument", "", `"root_guids" is required`},
		{"required missing, block present", "path = \"e\"\nconfig { #<\n  max_vls = 2\n}", engineSchema(),
			"Missing required argument", "", `"root_guids" is required`},
		{"required null", "path = \"e\"\nconfig {\n  root_guids = null #<\n}", engineSchema(),
			"Required attribute is null", "null", "root_guids"},
		{"unknown attribute", "path = \"e\"\nconfig {\n  root_guids = []\n  max_vl = 2 #<\n}", engineSchema(),
			"Unsupported argument", "max_vl", `Did you mean "max_vls"?`},
		{"unknown block", "path = \"e\"\nconfig {\n  root_guids = []\n  port_group {} #<\n}", engineSchema(),
			"Unsupported block type", "port_group", ""},
		{"wrong type", "path = \"e\"\nconfig {\n  root_guids = []\n  max_vls = \"many\" #<\n}", engineSchema(),
			"Incorrect attribute value type", `"many"`, "a number is required"},
		{"wrong element type", "path = \"e\"\nconfig {\n  root_guids = [[\"0x1\"]] #<\n}", engineSchema(),
			"Incorrect attribute value type", `[["0x1"]]`, ""},
		{"variables not allowed", "path = \"e\"\nconfig {\n  root_guids = [var.root] #<\n}", engineSchema(),
			"Variables not allowed", "var", ""},
		{"bad default in schema", `path = "e"`, schema.Object(
			schema.Attr("n", cty.Number, "").WithDefault(cty.StringVal("four"))),
			"Invalid plugin schema", `plugin "routing_engine" "e"`, "bug in the plugin"},
		{"duplicate attribute in schema", `path = "e"`, schema.Object(
			schema.Attr("n", cty.Number, ""), schema.Attr("n", cty.String, "")),
			"Invalid plugin schema", `plugin "routing_engine" "e"`, "declared twice"},
		{"bad name in schema", `path = "e"`, schema.Object(schema.Attr("max-vls!", cty.Number, "")),
			"Invalid plugin schema", `plugin "routing_engine" "e"`, "not an HCL identifier"},
		{"untyped attribute in schema", `path = "e"`, schema.Object(schema.Attribute{Name: "n"}),
			"Invalid plugin schema", `plugin "routing_engine" "e"`, "no type"},
		{"required with default in schema", `path = "e"`, schema.Object(
			schema.Attr("n", cty.Number, "").WithDefault(cty.NumberIntVal(1)).AsRequired()),
			"Invalid plugin schema", `plugin "routing_engine" "e"`, "required and also has a default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, diags, src := decodeEngine(t, tt.body, tt.schema)
			if v != cty.NilVal {
				t.Errorf("got value %#v despite errors", v)
			}
			line := 4 // the plugin block's header
			if strings.Contains(src, "#<") {
				line = markedLine(t, src)
			}
			for _, d := range diags {
				if d.Summary != tt.summary {
					continue
				}
				s := d.Subject
				if s == nil || s.Filename != "ibsm.hcl" || s.Start.Line != line {
					t.Errorf("%q at %v, want ibsm.hcl line %d", d.Summary, s, line)
					return
				}
				if got := string(s.SliceBytes([]byte(src))); got != tt.subject {
					t.Errorf("%q covers %q, want %q", d.Summary, got, tt.subject)
				}
				if !strings.Contains(d.Detail, tt.detail) {
					t.Errorf("detail %q does not contain %q", d.Detail, tt.detail)
				}
				return
			}
			t.Errorf("no %q diagnostic; got:\n%s", tt.summary, FormatDiagnostics(diags))
		})
	}
}
