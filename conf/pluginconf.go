package conf

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// DecodeConfig decodes the plugin's config {} block with the schema the
// plugin reported. The result is an object of b.ObjectType() with defaults
// applied; an absent block yields b.Defaults() (or an error per required
// attribute, at the plugin block). Unknown attributes and blocks, values of
// the wrong type and required attributes set to null are errors at their
// line. On error the value is cty.NilVal.
//
// Attributes the schema marks as naming a file (schema.Attribute.File)
// hold the file's contents in the result, read relative to the
// configuration file: the result is what the plugin is sent, and its
// HashValue changes when a named file's contents do. A file that cannot be
// read is an error at the attribute.
func (p *Plugin) DecodeConfig(b schema.Block) (cty.Value, hcl.Diagnostics) {
	v, diags := p.decodeConfig(b)
	return v, shortenDiags(diags)
}

func (p *Plugin) decodeConfig(b schema.Block) (cty.Value, hcl.Diagnostics) {
	spec, diags := p.spec(b)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	v, d := hcldec.Decode(p.Body, spec, nil)
	diags = append(diags, d...)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	v, d = p.readConfigFiles(b, v)
	diags = append(diags, d...)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	return v, diags
}

// spec turns a plugin's schema into an hcldec spec. Schema faults are the
// plugin author's bug, reported at the plugin block so the operator knows
// which binary to blame.
func (p *Plugin) spec(b schema.Block) (hcldec.ObjectSpec, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	bad := func(format string, args ...any) {
		r := p.DeclRange
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid plugin schema",
			Detail: fmt.Sprintf("plugin %q %q reports a config schema ibsm cannot use: %s. This is a bug in the plugin; report it to its author.",
				p.Kind, p.Name, fmt.Sprintf(format, args...)),
			Subject: &r,
		})
	}
	spec := hcldec.ObjectSpec{}
	for _, a := range b.Attributes {
		switch {
		case !hclsyntax.ValidIdentifier(a.Name):
			bad("attribute name %q is not an HCL identifier", a.Name)
			continue
		case spec[a.Name] != nil:
			bad("attribute %q is declared twice", a.Name)
			continue
		case a.Type == cty.NilType:
			bad("attribute %q has no type", a.Name)
			continue
		case a.File && a.Type != cty.String:
			bad("attribute %q names a file but has type %s; file attributes are strings", a.Name, a.Type.FriendlyName())
			continue
		}
		var s hcldec.Spec = &hcldec.AttrSpec{Name: a.Name, Type: a.Type, Required: a.Required}
		if a.Required {
			name := a.Name
			s = &hcldec.ValidateSpec{Wrapped: s, Func: func(v cty.Value) hcl.Diagnostics {
				if !v.IsNull() {
					return nil
				}
				return hcl.Diagnostics{{
					Severity: hcl.DiagError,
					Summary:  "Required attribute is null",
					Detail:   fmt.Sprintf("%s is required by plugin %q %q; give it a value.", name, p.Kind, p.Name),
				}}
			}}
		}
		if a.Default != cty.NilVal && !a.Default.IsNull() {
			if a.Required {
				bad("attribute %q is required and also has a default", a.Name)
				continue
			}
			def, err := convert.Convert(a.Default, a.Type)
			if err != nil {
				bad("default of attribute %q does not fit its type %s: %v", a.Name, a.Type.FriendlyName(), err)
				continue
			}
			if !def.IsWhollyKnown() {
				bad("default of attribute %q is not a known value", a.Name)
				continue
			}
			s = &hcldec.DefaultSpec{Primary: s, Default: &hcldec.LiteralSpec{Value: def}}
		}
		spec[a.Name] = s
	}
	return spec, diags
}
