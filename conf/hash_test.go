package conf

import (
	"reflect"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// configHash loads src and hashes the decoded config of routing engine "e".
func configHash(t *testing.T, body string) uint64 {
	t.Helper()
	v, diags, _ := decodeEngine(t, body, engineSchema())
	if diags.HasErrors() {
		t.Fatalf("DecodeConfig: %s", FormatDiagnostics(diags))
	}
	return HashValue(v)
}

func TestHashValueCanonical(t *testing.T) {
	base := `path = "e"
config {
  root_guids = ["0x1", "0x2"]
  max_vls    = 4
  weights    = { a = 1, b = 2 }
}`
	same := map[string]string{
		"reformatted and commented": `path = "e"   # the engine
config {
  # spines
  root_guids = [
    "0x1",
    "0x2",
  ]
  max_vls = 4
  weights = {
    a = 1
    b = 2
  }
}`,
		"attributes reordered": `config {
  weights    = { b = 2, a = 1 }
  max_vls    = 4
  root_guids = ["0x1", "0x2"]
}
path = "e"`,
		"expression for a number": "path = \"e\"\nconfig {\n  root_guids = [\"0x1\", \"0x2\"]\n  max_vls = 2+2\n  weights = { a = 1.0, b = 2 }\n}",
		"default written out":     "path = \"e\"\nconfig {\n  root_guids = [\"0x1\", \"0x2\"]\n  max_vls = 4\n  strict = false\n  weights = { a = 1, b = 2 }\n}",
		"omitted default":         "path = \"e\"\nconfig {\n  root_guids = [\"0x1\", \"0x2\"]\n  weights = { a = 1, b = 2 }\n}",
		"different binary path":   strings.Replace(base, `path = "e"`, `path = "other/e"`, 1),
	}
	different := map[string]string{
		"number changed":     strings.Replace(base, "max_vls    = 4", "max_vls    = 5", 1),
		"list order changed": strings.Replace(base, `["0x1", "0x2"]`, `["0x2", "0x1"]`, 1),
		"map value changed":  strings.Replace(base, "b = 2", "b = 3", 1),
		"optional set":       strings.Replace(base, "max_vls    = 4", "max_vls    = 4\n  note = \"\"", 1),
		"bool changed":       strings.Replace(base, "max_vls    = 4", "max_vls    = 4\n  strict = true", 1),
	}
	want := configHash(t, base)
	if want == 0 {
		t.Fatal("hash is 0")
	}
	for name, body := range same {
		if got := configHash(t, body); got != want {
			t.Errorf("%s: hash %x, want %x", name, got, want)
		}
	}
	seen := map[uint64]string{want: "base"}
	for name, body := range different {
		got := configHash(t, body)
		if prev, dup := seen[got]; dup {
			t.Errorf("%s: hash %x equals that of %s", name, got, prev)
		}
		seen[got] = name
	}
}

func TestHashValueTypes(t *testing.T) {
	// Values that a type-blind encoding could confuse must differ.
	vals := map[string]cty.Value{
		"string 1":      cty.StringVal("1"),
		"number 1":      cty.NumberIntVal(1),
		"list":          cty.ListVal([]cty.Value{cty.StringVal("a")}),
		"set":           cty.SetVal([]cty.Value{cty.StringVal("a")}),
		"tuple":         cty.TupleVal([]cty.Value{cty.StringVal("a")}),
		"null string":   cty.NullVal(cty.String),
		"null number":   cty.NullVal(cty.Number),
		"empty object":  cty.EmptyObjectVal,
		"empty map":     cty.MapValEmpty(cty.String),
		"fraction":      cty.NumberFloatVal(0.1),
		"big number":    cty.MustParseNumberVal("123456789012345678901234567890"),
		"unknown":       cty.UnknownVal(cty.String),
		"marked string": cty.StringVal("m"),
	}
	seen := map[uint64]string{}
	for name, v := range vals {
		h := HashValue(v)
		if h == 0 {
			t.Errorf("%s: hash 0", name)
		}
		if prev, dup := seen[h]; dup {
			t.Errorf("%s and %s hash alike (%x)", name, prev, h)
		}
		seen[h] = name
		if HashValue(v) != h {
			t.Errorf("%s: hash not deterministic", name)
		}
	}
	if HashValue(cty.StringVal("m").Mark("sensitive")) != HashValue(cty.StringVal("m")) {
		t.Error("marks change the hash")
	}
	if HashValue(cty.CapsuleVal(cty.Capsule("c", reflect.TypeOf(0)), new(int))) != 0 {
		t.Error("a capsule hashed to non-zero")
	}
	// Pinned: the encoding is persistent (cache keys on disk), so a change
	// must be deliberate, with hashDomain bumped.
	if got := HashValue(cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(1)})); got != pinnedObjectHash {
		t.Errorf("HashValue({a=1}) = %#x; if the encoding changed on purpose, bump hashDomain and update pinnedObjectHash", got)
	}
}

const pinnedObjectHash = 0x8ff5fc75f8ed2e4d
