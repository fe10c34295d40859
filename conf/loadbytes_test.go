package conf

import "github.com/hashicorp/hcl/v2"

// LoadBytes validates configuration source with a fresh Loader; name is used
// in diagnostics and its directory anchors relative paths. The host reads
// files (Load); the tests feed source.
func LoadBytes(name string, src []byte) (*Config, hcl.Diagnostics) {
	return NewLoader().LoadBytes(name, src)
}
