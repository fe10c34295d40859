package conf

import (
	"fmt"
	"path/filepath"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

// readConfigFiles replaces, in a decoded config value, the path each
// file-valued attribute (schema.Attribute.File) names by the file's
// contents: the plugin receives what the operator's file holds and never
// opens a host path, and the contents, not the path, enter the cache key
// (HashValue of the value sent). Relative paths are relative to the
// directory of the configuration file holding the attribute. Null (absent)
// attributes stay null. Files must be text (UTF-8) of at most MaxFileSize
// bytes.
func (p *Plugin) readConfigFiles(b schema.Block, v cty.Value) (cty.Value, hcl.Diagnostics) {
	var files []schema.Attribute
	for _, a := range b.Attributes {
		if a.File {
			files = append(files, a)
		}
	}
	if len(files) == 0 || v.IsNull() || !v.IsKnown() {
		return v, nil
	}
	// Where each attribute is written, for diagnostics and to anchor
	// relative paths; a defaulted attribute is anchored at the block.
	want := &hcl.BodySchema{}
	for _, a := range files {
		want.Attributes = append(want.Attributes, hcl.AttributeSchema{Name: a.Name})
	}
	written := hcl.Attributes{}
	if c, _, d := p.Body.PartialContent(want); !d.HasErrors() && c != nil {
		written = c.Attributes
	}
	var diags hcl.Diagnostics
	bad := func(rng hcl.Range, summary, format string, args ...any) {
		r := rng
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: summary, Detail: shorten(fmt.Sprintf(format, args...)), Subject: &r,
		})
	}
	vals := v.AsValueMap()
	for _, a := range files {
		pv, ok := vals[a.Name]
		if !ok || pv.IsNull() || !pv.IsKnown() || pv.Type() != cty.String {
			continue
		}
		rng := p.ConfigRange
		if wa, ok := written[a.Name]; ok {
			rng = wa.Expr.Range()
		}
		name := pv.AsString()
		if name == "" {
			bad(rng, "Empty file name", "%s names a file for plugin %q %q; give its path (relative paths are relative to the configuration file) or leave the attribute out.",
				a.Name, p.Kind, p.Name)
			continue
		}
		path := name
		if !filepath.IsAbs(path) {
			dir, err := filepath.Abs(filepath.Dir(rng.Filename))
			if err != nil {
				bad(rng, "Cannot resolve file", "%s = %q: %v.", a.Name, name, err)
				continue
			}
			path = filepath.Join(dir, path)
		}
		data, err := readLimited(path)
		switch {
		case err != nil:
			bad(rng, "Cannot read file", "%s: %v. Plugin %q %q is sent the file's contents; relative paths are relative to the configuration file's directory.",
				a.Name, err, p.Kind, p.Name)
			continue
		case len(data) > MaxFileSize:
			bad(rng, "File too large", "%s: %s is larger than %d bytes (4 MiB); plugin config files are lists of a few thousand lines at most.",
				a.Name, path, MaxFileSize)
			continue
		case !utf8.Valid(data):
			bad(rng, "File is not text", "%s: %s is not UTF-8 text; plugin config files are text.", a.Name, path)
			continue
		}
		vals[a.Name] = cty.StringVal(string(data))
	}
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	return cty.ObjectVal(vals), nil
}
