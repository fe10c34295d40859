package conf

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/ibsm/ibsm/conf/atomicfile"
	"github.com/ibsm/ibsm/sdk"
	"github.com/zclconf/go-cty/cty"
)

// LockFileName is the conventional name of the lock file, kept next to the
// configuration file.
const LockFileName = "plugins.lock.hcl"

// LockEntry pins one plugin binary: the host refuses to launch a binary
// whose sha256 differs.
type LockEntry struct {
	Kind    sdk.Kind
	Name    string
	Version string // as the plugin reported it; may be empty
	// SDKVersion and Protocol are the SDK version the plugin reported and
	// the plugin protocol the host negotiated with it ("" and 0 in lock
	// files written before they were recorded: not checked then).
	SDKVersion string
	Protocol   int
	SHA256     string // 64 lower-case hex digits
	// DeclRange is where ReadLock found the entry (zero for new entries).
	DeclRange hcl.Range
}

// FindLock returns the entry for kind and name, or nil.
func FindLock(entries []LockEntry, kind sdk.Kind, name string) *LockEntry {
	for i := range entries {
		if entries[i].Kind == kind && entries[i].Name == name {
			return &entries[i]
		}
	}
	return nil
}

var lockSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "plugin", LabelNames: []string{"kind", "name"}}},
}

var lockEntrySchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "version"}, {Name: "sdk_version"}, {Name: "protocol"}, {Name: "sha256", Required: true}},
}

// ReadLock reads a lock file. A missing file is an error; callers for whom
// absence is normal should check os.Stat first.
func ReadLock(path string) ([]LockEntry, hcl.Diagnostics) {
	src, err := readLimited(path)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read plugin lock file",
			Detail:   shorten(fmt.Sprintf("%v. Run \"ibsm plugins lock\" to create it.", err)),
		}}
	}
	return ParseLock(path, src)
}

// ParseLock parses lock file source; name is used in diagnostics. Like
// LoadBytes it refuses oversized or too deeply nested files before parsing
// and cuts long values in diagnostics.
func ParseLock(name string, src []byte) ([]LockEntry, hcl.Diagnostics) {
	entries, diags := parseLock(name, src)
	return entries, shortenDiags(diags)
}

func parseLock(name string, src []byte) ([]LockEntry, hcl.Diagnostics) {
	if diags := checkLimits("plugin lock file", name, src, false); diags.HasErrors() {
		return nil, diags
	}
	f, diags := hclparse.NewParser().ParseHCL(src, name)
	if diags.HasErrors() {
		return nil, diags
	}
	d := &decoder{diags: diags}
	c := d.content(f.Body, lockSchema)
	if c == nil {
		return nil, d.diags
	}
	var out []LockEntry
	seen := map[string]hcl.Range{}
	for _, b := range c.Blocks {
		e := LockEntry{Kind: sdk.Kind(b.Labels[0]), Name: b.Labels[1], DeclRange: b.DefRange}
		if !validKind(e.Kind) {
			d.errorf(b.LabelRanges[0], "Unknown plugin kind", "%q is not a plugin kind. Use one of %s.", e.Kind, kindList())
		}
		if !validName(e.Name) {
			d.errorf(b.LabelRanges[1], "Invalid plugin name", "%q is not a valid plugin name.", e.Name)
		}
		if prev, dup := seen[key(e.Kind, e.Name)]; dup {
			d.errorf(b.DefRange, "Duplicate lock entry",
				"plugin %q %q is already locked at %s. Run \"ibsm plugins lock\" to rewrite the file.", e.Kind, e.Name, prev)
		}
		seen[key(e.Kind, e.Name)] = b.DefRange
		bc := d.content(b.Body, lockEntrySchema)
		if bc == nil {
			continue
		}
		attr(d, bc.Attributes, "version", &e.Version)
		attr(d, bc.Attributes, "sdk_version", &e.SDKVersion)
		if f := attr(d, bc.Attributes, "protocol", &e.Protocol); f.ok && e.Protocol < 1 {
			d.errorf(f.rng, "Invalid protocol", "protocol = %d must be a plugin protocol major version (1 or more).", e.Protocol)
		}
		if f := attr(d, bc.Attributes, "sha256", &e.SHA256); f.ok {
			if !validSHA256(e.SHA256) {
				d.errorf(f.rng, "Invalid sha256", "sha256 = %q must be 64 hex digits.", e.SHA256)
			}
			e.SHA256 = strings.ToLower(e.SHA256)
		}
		out = append(out, e)
	}
	if d.diags.HasErrors() {
		return nil, d.diags
	}
	return out, d.diags
}

// FormatLock renders entries as lock file source, sorted by kind and name
// so the file diffs cleanly.
func FormatLock(entries []LockEntry) ([]byte, error) {
	es := append([]LockEntry(nil), entries...)
	sort.Slice(es, func(i, j int) bool {
		if es[i].Kind != es[j].Kind {
			return es[i].Kind < es[j].Kind
		}
		return es[i].Name < es[j].Name
	})
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	body.AppendUnstructuredTokens(hclwrite.Tokens{{
		Type: hclsyntax.TokenComment,
		Bytes: []byte("# This file is maintained by \"ibsm plugins lock\". Do not edit it by hand:\n" +
			"# rebuild or reinstall plugins, then run \"ibsm plugins lock\" again.\n"),
	}})
	for i, e := range es {
		if !validKind(e.Kind) {
			return nil, fmt.Errorf("lock entry %q %q: unknown kind (use one of %s)", e.Kind, e.Name, kindList())
		}
		if !validName(e.Name) {
			return nil, fmt.Errorf("lock entry %q %q: invalid plugin name", e.Kind, e.Name)
		}
		if !validSHA256(e.SHA256) {
			return nil, fmt.Errorf("lock entry %q %q: sha256 %q is not 64 hex digits", e.Kind, e.Name, e.SHA256)
		}
		if i > 0 && es[i-1].Kind == e.Kind && es[i-1].Name == e.Name {
			return nil, fmt.Errorf("lock entry %q %q appears twice", e.Kind, e.Name)
		}
		body.AppendNewline()
		blk := body.AppendNewBlock("plugin", []string{string(e.Kind), e.Name}).Body()
		if e.Version != "" {
			blk.SetAttributeValue("version", cty.StringVal(e.Version))
		}
		if e.SDKVersion != "" {
			blk.SetAttributeValue("sdk_version", cty.StringVal(e.SDKVersion))
		}
		if e.Protocol != 0 {
			blk.SetAttributeValue("protocol", cty.NumberIntVal(int64(e.Protocol)))
		}
		blk.SetAttributeValue("sha256", cty.StringVal(strings.ToLower(e.SHA256)))
	}
	return f.Bytes(), nil
}

// WriteLock writes entries to path atomically and durably, so a crash
// never leaves a half-written lock.
func WriteLock(path string, entries []LockEntry) error {
	src, err := FormatLock(entries)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, src); err != nil {
		return fmt.Errorf("write lock file: %w", err)
	}
	return nil
}

// FileSHA256 returns the lower-case hex sha256 of the file at path, read
// in a stream (plugin binaries are tens of MB).
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// VerifyLock checks the configuration against a lock file: every declared
// plugin must be locked, and a sha256 pinned in the configuration must agree
// with the lock. It does not read the binaries (CheckFiles and the plugin
// manager do).
func (c *Config) VerifyLock(entries []LockEntry) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, p := range c.Plugins {
		e := FindLock(entries, p.Kind, p.Name)
		switch {
		case e == nil:
			r := p.DeclRange
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Plugin not locked",
				Detail: fmt.Sprintf("plugin %q %q has no entry in the lock file, so its binary cannot be verified. Run \"ibsm plugins lock\".",
					p.Kind, p.Name),
				Subject: &r,
			})
		case p.SHA256 != "" && p.SHA256 != e.SHA256:
			r := p.SHA256Range
			where := "the lock file"
			if e.DeclRange.Filename != "" {
				where = fmt.Sprintf("the lock file (%s)", e.DeclRange)
			}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Plugin pin disagrees with lock file",
				Detail: fmt.Sprintf("The configuration pins sha256 %s, but %s records %s. Update whichever is stale.",
					p.SHA256, where, e.SHA256),
				Subject: &r,
			})
		}
	}
	return diags
}
