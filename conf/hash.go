package conf

import (
	"github.com/cespare/xxhash/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"github.com/zclconf/go-cty/cty/msgpack"
)

// hashDomain versions the canonical encoding: change it whenever the
// encoding below changes, so old cache entries can never match new keys.
const hashDomain = "ibsm/conf/value/v1\x00"

// CanonicalBytes is the canonical encoding HashValue hashes: the value's
// type as cty JSON, a NUL, then the value as cty msgpack of that type.
// Object attributes and map keys are encoded in lexical order and numbers
// by value, so comments, whitespace, attribute order and how a number is
// written (4, 4.0, 2+2) do not change it. Set element order is a cty
// implementation detail; plugin schemas should prefer lists. Marks are
// dropped. Capsule types cannot be encoded (HCL never produces them).
func CanonicalBytes(v cty.Value) ([]byte, error) {
	v, _ = v.UnmarkDeep()
	ty := v.Type()
	tj, err := ctyjson.MarshalType(ty)
	if err != nil {
		return nil, err
	}
	mp, err := msgpack.Marshal(v, ty)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(tj)+1+len(mp))
	out = append(out, tj...)
	out = append(out, 0)
	return append(out, mp...), nil
}

// HashValue is the xxhash64 of a decoded value's canonical encoding
// (CanonicalBytes), prefixed with a versioned domain tag. It names cache
// entries; it does not vouch for them. Values CanonicalBytes cannot encode
// hash to 0, which callers must not use as a cache key.
func HashValue(v cty.Value) uint64 {
	b, err := CanonicalBytes(v)
	if err != nil {
		return 0
	}
	d := xxhash.New()
	d.WriteString(hashDomain)
	d.Write(b)
	return d.Sum64()
}
