// Package schema lets a plugin declare the attributes of its HCL config block.
// The host decodes the operator's block with this schema (hcldec), so errors
// point at the operator's file and line, and hands the decoded cty value to
// the plugin's Configure.
package schema

import "github.com/zclconf/go-cty/cty"

// Attribute is one config attribute.
type Attribute struct {
	Name     string
	Type     cty.Type
	Required bool
	// Default applies when the attribute is absent (cty.NilVal: null).
	Default cty.Value
	Doc     string
	// File marks an attribute whose value names a file (AsFile). The
	// operator writes a path, relative to the configuration file; the host
	// reads the file and the plugin receives its contents as the string
	// value, never the path: a plugin runs without access to the host's
	// files, and the contents, not the name, enter the plan cache's key.
	// The attribute's type must be cty.String. Hosts that predate File
	// send the path.
	File bool
}

// Block is a plugin's whole config block.
type Block struct {
	Attributes []Attribute
}

// Attr starts an optional attribute.
func Attr(name string, t cty.Type, doc string) Attribute {
	return Attribute{Name: name, Type: t, Doc: doc}
}

// WithDefault returns a copy of a with a default value.
func (a Attribute) WithDefault(v cty.Value) Attribute { a.Default = v; return a }

// AsFile returns a copy of a whose value names a file: the plugin
// receives the file's contents (text, at most 4 MiB), read by the host
// relative to the configuration file. a must be of type cty.String.
func (a Attribute) AsFile() Attribute { a.File = true; return a }

// AsRequired returns a copy of a that must be set.
func (a Attribute) AsRequired() Attribute { a.Required = true; return a }

// Object builds a block from attributes.
func Object(attrs ...Attribute) Block { return Block{Attributes: attrs} }

// ObjectType is the cty object type a decoded block has.
func (b Block) ObjectType() cty.Type {
	m := make(map[string]cty.Type, len(b.Attributes))
	for _, a := range b.Attributes {
		m[a.Name] = a.Type
	}
	return cty.Object(m)
}

// Defaults is the value of a block whose attributes are all absent.
func (b Block) Defaults() cty.Value {
	m := make(map[string]cty.Value, len(b.Attributes))
	for _, a := range b.Attributes {
		if a.Default != cty.NilVal {
			m[a.Name] = a.Default
		} else {
			m[a.Name] = cty.NullVal(a.Type)
		}
	}
	if len(m) == 0 {
		return cty.EmptyObjectVal
	}
	return cty.ObjectVal(m)
}
