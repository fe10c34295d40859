// Package pcfg reads attributes out of the decoded config object a plugin's
// Configure receives, tolerating a null object or null attributes (absent
// in the operator's block) by falling back to defaults.
package pcfg

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

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

// GUIDs reads the GUIDs an operator names in the list attribute listAttr
// and then, when fileAttr is not "", in the file that attribute names (one
// GUID per line as in OpenSM's root_guid_file; '#' starts a comment). A
// GUID named twice counts once, where it first appears, so the order of
// the rest is kept (ftree's ca_order is a rank order). Errors name the
// attribute or the file line.
func GUIDs(v cty.Value, listAttr, fileAttr string) ([]uint64, error) {
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
	if fileAttr != "" {
		path, err := String(v, fileAttr, "")
		if err != nil {
			return nil, err
		}
		if path != "" {
			more, err := guidFile(fileAttr, path)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
	}
	return dedup(out), nil
}

// guidFile reads one GUID per line; blank lines and '#' comments are
// skipped.
func guidFile(fileAttr, path string) ([]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fileAttr, err)
	}
	defer f.Close()
	var out []uint64
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		g, err := GUID(line)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, g)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: reading %s: %w", fileAttr, path, err)
	}
	return out, nil
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

// Logger is the logger a plugin binary writes through: JSON on stderr,
// which go-plugin forwards into the host's log.
func Logger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, JSONFormat: true, Level: hclog.Info})
}
