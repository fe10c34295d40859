// Package pcfg reads attributes out of the decoded config object a plugin's
// Configure receives, tolerating a null object or null attributes (absent
// in the operator's block) by falling back to defaults.
package pcfg

import (
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"
)

// attr returns the named attribute, or a null value when v is null, lacks
// the attribute, or the attribute is null.
func attr(v cty.Value, name string) (cty.Value, error) {
	if v == cty.NilVal || v.IsNull() {
		return cty.NullVal(cty.DynamicPseudoType), nil
	}
	if !v.Type().IsObjectType() {
		return cty.NilVal, fmt.Errorf("config must be an object, got %s", v.Type().FriendlyName())
	}
	if !v.Type().HasAttribute(name) {
		return cty.NullVal(cty.DynamicPseudoType), nil
	}
	a := v.GetAttr(name)
	if !a.IsKnown() {
		return cty.NilVal, fmt.Errorf("config attribute %q is not known yet; it must be a constant", name)
	}
	return a, nil
}

// Bool reads a bool attribute.
func Bool(v cty.Value, name string, def bool) (bool, error) {
	a, err := attr(v, name)
	if err != nil || a.IsNull() {
		return def, err
	}
	if a.Type() != cty.Bool {
		return def, fmt.Errorf("config attribute %q must be a bool, got %s", name, a.Type().FriendlyName())
	}
	return a.True(), nil
}

// String reads a string attribute.
func String(v cty.Value, name string, def string) (string, error) {
	a, err := attr(v, name)
	if err != nil || a.IsNull() {
		return def, err
	}
	if a.Type() != cty.String {
		return def, fmt.Errorf("config attribute %q must be a string, got %s", name, a.Type().FriendlyName())
	}
	return a.AsString(), nil
}

// Strings reads a list (or set/tuple) of strings attribute.
func Strings(v cty.Value, name string) ([]string, error) {
	a, err := attr(v, name)
	if err != nil || a.IsNull() {
		return nil, err
	}
	if !a.CanIterateElements() {
		return nil, fmt.Errorf("config attribute %q must be a list of strings, got %s", name, a.Type().FriendlyName())
	}
	var out []string
	for it := a.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || !e.IsKnown() || e.Type() != cty.String {
			return nil, fmt.Errorf("config attribute %q must hold only strings", name)
		}
		out = append(out, e.AsString())
	}
	return out, nil
}

// Logger is the logger a plugin binary writes through: JSON on stderr,
// which go-plugin forwards into the host's log.
func Logger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, JSONFormat: true, Level: hclog.Info})
}
