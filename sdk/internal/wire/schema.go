package wire

import (
	"fmt"

	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"github.com/zclconf/go-cty/cty/msgpack"
)

// SchemaToProto encodes a config schema.
func SchemaToProto(b schema.Block) (*pb.Schema, error) {
	out := &pb.Schema{}
	for _, a := range b.Attributes {
		tj, err := ctyjson.MarshalType(a.Type)
		if err != nil {
			return nil, fmt.Errorf("schema attribute %q: type: %w", a.Name, err)
		}
		m := &pb.Attribute{Name: a.Name, TypeJson: tj, Required: a.Required, Doc: a.Doc, File: a.File}
		if a.Default != cty.NilVal {
			d, err := msgpack.Marshal(a.Default, a.Type)
			if err != nil {
				return nil, fmt.Errorf("schema attribute %q: default does not fit its type: %w", a.Name, err)
			}
			m.HasDefault, m.DefaultMsgpack = true, d
		}
		out.Attributes = append(out.Attributes, m)
	}
	return out, nil
}

// SchemaFromProto decodes a config schema reported by a plugin.
func SchemaFromProto(s *pb.Schema) (schema.Block, error) {
	var b schema.Block
	seen := map[string]bool{}
	for i, m := range s.GetAttributes() {
		if m.Name == "" {
			return schema.Block{}, fmt.Errorf("schema attribute %d has no name", i)
		}
		if seen[m.Name] {
			return schema.Block{}, fmt.Errorf("schema attribute %q is declared twice", m.Name)
		}
		seen[m.Name] = true
		ty, err := ctyjson.UnmarshalType(m.TypeJson)
		if err != nil {
			return schema.Block{}, fmt.Errorf("schema attribute %q: type: %w", m.Name, err)
		}
		a := schema.Attribute{Name: m.Name, Type: ty, Required: m.Required, Doc: m.Doc, File: m.File}
		if m.HasDefault {
			v, err := msgpack.Unmarshal(m.DefaultMsgpack, ty)
			if err != nil {
				return schema.Block{}, fmt.Errorf("schema attribute %q: default: %w", m.Name, err)
			}
			a.Default = v
		}
		b.Attributes = append(b.Attributes, a)
	}
	return b, nil
}

// ConfigToProto encodes a decoded config value with its own type.
func ConfigToProto(v cty.Value) (*pb.ConfigureRequest, error) {
	if v == cty.NilVal {
		v = cty.EmptyObjectVal
	}
	if !v.IsWhollyKnown() {
		return nil, fmt.Errorf("config contains unknown values; resolve all variables before configuring a plugin")
	}
	ty := v.Type()
	tj, err := ctyjson.MarshalType(ty)
	if err != nil {
		return nil, err
	}
	b, err := msgpack.Marshal(v, ty)
	if err != nil {
		return nil, err
	}
	return &pb.ConfigureRequest{TypeJson: tj, ValueMsgpack: b}, nil
}

// ConfigFromProto decodes a Configure request.
func ConfigFromProto(r *pb.ConfigureRequest) (cty.Value, error) {
	ty, err := ctyjson.UnmarshalType(r.TypeJson)
	if err != nil {
		return cty.NilVal, fmt.Errorf("config type: %w", err)
	}
	v, err := msgpack.Unmarshal(r.ValueMsgpack, ty)
	if err != nil {
		return cty.NilVal, fmt.Errorf("config value: %w", err)
	}
	return v, nil
}
