// Package settings reads a plugin's settings out of the decoded config
// object its Configure receives: one attribute at a time (Bool, Int,
// String, GUIDs …) or into a Go struct by `ibsm` tags (Decode). A null
// object or null attribute (absent from the operator's block) takes the
// default.
package settings

import (
	"fmt"
	"strconv"
	"strings"

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

// Int reads a whole-number attribute that fits in 32 bits; callers check
// their own range so the error can say what the number means.
func Int(v cty.Value, name string, def int) (int, error) {
	i, err := Int64(v, name, int64(def))
	if err != nil {
		return def, err
	}
	if i < -1<<31 || i > 1<<31-1 {
		return def, fmt.Errorf("config attribute %q = %d is out of range", name, i)
	}
	return int(i), nil
}

// Int64 reads a whole-number attribute that fits in 64 bits (seeds);
// callers check their own range as with Int.
func Int64(v cty.Value, name string, def int64) (int64, error) {
	a, err := attr(v, name)
	if err != nil || a.IsNull() {
		return def, err
	}
	if a.Type() != cty.Number {
		return def, fmt.Errorf("config attribute %q must be a number, got %s", name, a.Type().FriendlyName())
	}
	bf := a.AsBigFloat()
	if !bf.IsInt() {
		return def, fmt.Errorf("config attribute %q must be a whole number, got %s", name, bf.Text('g', -1))
	}
	i, acc := bf.Int64()
	if acc != 0 {
		return def, fmt.Errorf("config attribute %q = %s is out of range", name, bf.Text('g', -1))
	}
	return i, nil
}

// GUID parses a node or port GUID as operators copy it from ibnetdiscover
// or OpenSM's guid files: hex with a 0x prefix, surrounding space ignored.
// Zero is refused: no port has it, so it is always a typo.
func GUID(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "0x") && !strings.HasPrefix(t, "0X") {
		return 0, fmt.Errorf("%q is not a GUID: write it as hex with a 0x prefix, e.g. 0x0002c90000000001", s)
	}
	g, err := strconv.ParseUint(t[2:], 16, 64)
	if err != nil || g == 0 {
		return 0, fmt.Errorf("%q is not a non-zero 64-bit hex GUID", s)
	}
	return g, nil
}

// GUIDs reads the GUIDs an operator names in the list attribute listAttr.
// A GUID named twice counts once, where it first appears, so the order of
// the rest is kept (ftree's ca_order is a rank order). Errors name the
// attribute. A GUID file is a file-valued attribute (schema.Attr's File
// flag): the host sends its contents, plugins never open host paths.
func GUIDs(v cty.Value, listAttr string) ([]uint64, error) {
	strs, err := Strings(v, listAttr)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, s := range strs {
		g, err := GUID(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", listAttr, err)
		}
		out = append(out, g)
	}
	return dedup(out), nil
}

// dedup keeps the first occurrence of each GUID, in order.
func dedup(in []uint64) []uint64 {
	seen := make(map[uint64]bool, len(in))
	out := in[:0]
	for _, g := range in {
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	return out
}
