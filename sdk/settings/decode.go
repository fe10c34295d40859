package settings

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/zclconf/go-cty/cty"
)

// Decode copies the attributes of v (the object Configure receives) into
// the struct dst points to, field by field as the `ibsm:"name"` tags say.
// Fields without a tag are left alone, and so are fields whose attribute
// is absent or null: fill dst with the defaults before calling Decode.
// Supported field kinds: bool, string, every signed and unsigned integer
// (range-checked against the field), float32/64 and []string; a field
// tagged `ibsm:"name,guids"` of type []uint64 takes a list of GUIDs (see
// GUIDs). Errors name the attribute; on error dst may be partly filled, so
// decode into a copy and keep the old settings when it fails.
func Decode(v cty.Value, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("settings.Decode wants a pointer to a struct, got %T", dst)
	}
	s := rv.Elem()
	var errs []error
	for i := range s.NumField() {
		f := s.Type().Field(i)
		tag, ok := f.Tag.Lookup("ibsm")
		if !ok || tag == "" || tag == "-" {
			continue
		}
		if !f.IsExported() {
			return fmt.Errorf("settings.Decode: field %s is tagged %q but not exported", f.Name, tag)
		}
		if err := decodeField(v, tag, s.Field(i)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func decodeField(v cty.Value, tag string, fv reflect.Value) error {
	name, opt, _ := cut(tag)
	a, err := attr(v, name)
	if err != nil || a.IsNull() {
		return err
	}
	switch {
	case opt == "guids":
		if fv.Type() != reflect.TypeFor[[]uint64]() {
			return fmt.Errorf("settings.Decode: field for %q tagged guids must be []uint64, is %s", name, fv.Type())
		}
		g, err := GUIDs(v, name)
		if err == nil {
			fv.Set(reflect.ValueOf(g))
		}
		return err
	case opt != "":
		return fmt.Errorf("settings.Decode: unknown tag option %q on %q (known: guids)", opt, name)
	}
	switch fv.Kind() {
	case reflect.Bool:
		b, err := Bool(v, name, false)
		fv.SetBool(b)
		return err
	case reflect.String:
		s, err := String(v, name, "")
		fv.SetString(s)
		return err
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := Int64(v, name, 0)
		if err != nil {
			return err
		}
		if fv.OverflowInt(i) {
			return fmt.Errorf("config attribute %q = %d is out of range for %s", name, i, fv.Type())
		}
		fv.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		i, err := Int64(v, name, 0)
		if err != nil {
			return err
		}
		if i < 0 || fv.OverflowUint(uint64(i)) {
			return fmt.Errorf("config attribute %q = %d is out of range for %s", name, i, fv.Type())
		}
		fv.SetUint(uint64(i))
	case reflect.Float32, reflect.Float64:
		if a.Type() != cty.Number {
			return fmt.Errorf("config attribute %q must be a number, got %s", name, a.Type().FriendlyName())
		}
		f, _ := a.AsBigFloat().Float64()
		fv.SetFloat(f)
	case reflect.Slice:
		if fv.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("settings.Decode: field for %q has unsupported type %s", name, fv.Type())
		}
		ss, err := Strings(v, name)
		if err == nil {
			fv.Set(reflect.ValueOf(ss).Convert(fv.Type()))
		}
		return err
	default:
		return fmt.Errorf("settings.Decode: field for %q has unsupported type %s", name, fv.Type())
	}
	return nil
}

// cut splits "name,option".
func cut(tag string) (name, opt string, ok bool) {
	for i := range len(tag) {
		if tag[i] == ',' {
			return tag[:i], tag[i+1:], true
		}
	}
	return tag, "", false
}
