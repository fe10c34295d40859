package conf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

func fileSchema2() schema.Block {
	return schema.Object(
		schema.Attr("root_guids", cty.List(cty.String), ""),
		schema.Attr("root_guid_file", cty.String, "one GUID per line").AsFile(),
		schema.Attr("note", cty.String, "a string that is not a file"),
	)
}

// loadIn writes an ibsm.hcl with the engine body into dir and decodes the
// engine's config.
func decodeIn(t *testing.T, dir, body string, b schema.Block) (cty.Value, string) {
	t.Helper()
	path := filepath.Join(dir, "ibsm.hcl")
	if err := os.WriteFile(path, []byte(pluginSrc(body)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := Load(path)
	if diags.HasErrors() {
		t.Fatalf("Load: %s", FormatDiagnostics(diags))
	}
	v, diags := cfg.Plugin(sdk.KindRouting, "e").DecodeConfig(b)
	return v, FormatDiagnostics(diags)
}

func TestFileAttributeSendsContents(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "guids"), 0o755); err != nil {
		t.Fatal(err)
	}
	roots := filepath.Join(dir, "guids", "roots")
	if err := os.WriteFile(roots, []byte("0x1\n0x2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Relative to the configuration file, not the working directory.
	body := `path = "e"
  config {
    root_guid_file = "guids/roots"
    note           = "guids/roots"
  }`
	v, diags := decodeIn(t, dir, body, fileSchema2())
	if diags != "" {
		t.Fatal(diags)
	}
	if got := v.GetAttr("root_guid_file").AsString(); got != "0x1\n0x2\n" {
		t.Errorf("root_guid_file sent as %q, want the file's contents", got)
	}
	if got := v.GetAttr("note").AsString(); got != "guids/roots" {
		t.Errorf("a plain string attribute was changed to %q", got)
	}
	if !v.GetAttr("root_guids").IsNull() {
		t.Errorf("root_guids = %#v, want null", v.GetAttr("root_guids"))
	}
	h1 := HashValue(v)

	// Unchanged file: same hash. Edited file: another hash.
	v2, _ := decodeIn(t, dir, body, fileSchema2())
	if HashValue(v2) != h1 {
		t.Errorf("hash changed with nothing edited")
	}
	if err := os.WriteFile(roots, []byte("0x1\n0x3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v3, _ := decodeIn(t, dir, body, fileSchema2())
	if HashValue(v3) == h1 {
		t.Errorf("editing the file left the config hash unchanged: the cache would serve a stale plan")
	}

	// An absolute path and an absent attribute.
	v4, diags := decodeIn(t, dir, `path = "e"
  config {
    root_guid_file = "`+roots+`"
  }`, fileSchema2())
	if diags != "" || v4.GetAttr("root_guid_file").AsString() != "0x1\n0x3\n" {
		t.Errorf("absolute path: %#v %s", v4, diags)
	}
	v5, diags := decodeIn(t, dir, `path = "e"`, fileSchema2())
	if diags != "" || !v5.GetAttr("root_guid_file").IsNull() {
		t.Errorf("absent file attribute: %#v %s", v5, diags)
	}
}

// TestOldSchemaKeepsPath: a plugin whose schema does not mark the
// attribute (built before AsFile) is sent the path, as before.
func TestOldSchemaKeepsPath(t *testing.T) {
	old := schema.Object(schema.Attr("root_guid_file", cty.String, ""))
	v, diags := decodeIn(t, t.TempDir(), `path = "e"
  config {
    root_guid_file = "/nonexistent/roots"
  }`, old)
	if diags != "" || v.GetAttr("root_guid_file").AsString() != "/nonexistent/roots" {
		t.Fatalf("old schema: %#v %s", v, diags)
	}
}

func TestFileAttributeErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bin"), []byte{0xff, 0xfe, 0x00}, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("0x1\n", MaxFileSize/4+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, value string
		want        []string
	}{
		{"missing", `"nope"`, []string{"ibsm.hcl:7,22-", "Cannot read file", "root_guid_file", filepath.Join(dir, "nope"), "no such file"}},
		{"empty", `""`, []string{"ibsm.hcl:7,22-", "Empty file name"}},
		{"binary", `"bin"`, []string{"ibsm.hcl:7,22-", "File is not text"}},
		{"too large", `"big"`, []string{"ibsm.hcl:7,22-", "File too large"}},
		{"directory", `"."`, []string{"ibsm.hcl:7,22-", "Cannot read file", "is a directory"}},
	}
	for _, tc := range cases {
		v, diags := decodeIn(t, dir, `path = "e"
  config {
    root_guid_file = `+tc.value+`
  }`, fileSchema2())
		if v != cty.NilVal {
			t.Errorf("%s: value %#v despite the error", tc.name, v)
		}
		for _, w := range tc.want {
			if !strings.Contains(diags, w) {
				t.Errorf("%s: diagnostics lack %q:\n%s", tc.name, w, diags)
			}
		}
	}

	// A file attribute that is not a string is the plugin author's bug.
	badSchema := schema.Object(schema.Attr("roots", cty.List(cty.String), "").AsFile())
	_, diags := decodeIn(t, dir, `path = "e"`, badSchema)
	if !strings.Contains(diags, "Invalid plugin schema") || !strings.Contains(diags, `"roots" names a file`) {
		t.Errorf("non-string file attribute: %s", diags)
	}
}
