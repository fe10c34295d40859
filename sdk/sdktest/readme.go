package sdktest

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

// A plugin's README holds, between these markers, the table of its config
// attributes rendered from the schema it declares. CheckREADME keeps the
// two from drifting: the test fails when they differ, and rewrites the
// section when UpdateREADMEEnv is set.
const (
	readmeBegin = "<!-- BEGIN config: generated from the plugin's schema by its README test; do not edit -->"
	readmeEnd   = "<!-- END config -->"
	// UpdateREADMEEnv set to 1 makes CheckREADME rewrite the section.
	UpdateREADMEEnv = "IBSM_UPDATE_README"
)

// CheckREADME checks that the README at path documents p: its title is
// "# <name>", it says which kind p is, and its generated config section is
// what SchemaMarkdown renders from p.Schema(). With IBSM_UPDATE_README=1
// it rewrites the section instead of failing on it.
func CheckREADME(t testing.TB, p sdk.Plugin, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: every plugin directory has a README.md (name, what it does, paper, config, limits, example)", err)
	}
	doc := string(b)
	info := p.Info()
	if want := "# " + info.Name + "\n"; !strings.HasPrefix(doc, want) {
		t.Errorf("%s: the first line must be %q", path, strings.TrimSpace(want))
	}
	if !strings.Contains(doc, "`"+string(info.Kind)+"`") {
		t.Errorf("%s: does not name the plugin's kind `%s`", path, info.Kind)
	}
	i, j := strings.Index(doc, readmeBegin), strings.Index(doc, readmeEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no generated config section; add the two lines\n%s\n%s\nand run the test with %s=1", path, readmeBegin, readmeEnd, UpdateREADMEEnv)
	}
	got := doc[i+len(readmeBegin) : j]
	want := "\n" + SchemaMarkdown(p.Schema())
	if got == want {
		return
	}
	if os.Getenv(UpdateREADMEEnv) == "1" {
		if err := os.WriteFile(path, []byte(doc[:i+len(readmeBegin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: config section rewritten from the schema", path)
		return
	}
	t.Errorf("%s: the config section differs from the plugin's schema; run the test with %s=1 to regenerate it.\nREADME:\n%s\nschema:\n%s", path, UpdateREADMEEnv, got, want)
}

// SchemaMarkdown renders a config schema as a Markdown table: attribute,
// type, default, and what it does.
func SchemaMarkdown(b schema.Block) string {
	if len(b.Attributes) == 0 {
		return "This plugin takes no configuration (its `config {}` block stays empty).\n"
	}
	var s strings.Builder
	s.WriteString("| attribute | type | default | description |\n|---|---|---|---|\n")
	attrs := append([]schema.Attribute(nil), b.Attributes...)
	sort.SliceStable(attrs, func(i, j int) bool { return attrs[i].Name < attrs[j].Name })
	for _, a := range attrs {
		def := "—"
		switch {
		case a.Required:
			def = "required"
		case a.Default != cty.NilVal:
			def = "`" + hclLiteral(a.Default) + "`"
		}
		doc := strings.ReplaceAll(strings.TrimSpace(a.Doc), "|", `\|`)
		doc = strings.ReplaceAll(doc, "\n", " ")
		if a.File {
			doc += " *(a file: the host reads it and sends its contents)*"
		}
		fmt.Fprintf(&s, "| `%s` | %s | %s | %s |\n", a.Name, a.Type.FriendlyName(), def, doc)
	}
	return s.String()
}

// hclLiteral writes v as an operator would in HCL.
func hclLiteral(v cty.Value) string {
	switch {
	case v.IsNull():
		return "null"
	case !v.IsKnown():
		return "(unknown)"
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return fmt.Sprintf("%q", v.AsString())
	case t == cty.Number:
		return v.AsBigFloat().Text('g', -1)
	case t == cty.Bool:
		if v.True() {
			return "true"
		}
		return "false"
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		var parts []string
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			parts = append(parts, hclLiteral(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case t.IsMapType() || t.IsObjectType():
		var parts []string
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			parts = append(parts, k.AsString()+" = "+hclLiteral(e))
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	return v.GoString()
}
