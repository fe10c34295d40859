package conf

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/ibsm/ibsm/sdk"
)

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && (r == '_' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

func validKind(k sdk.Kind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

func kindList() string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func key(k sdk.Kind, name string) string { return string(k) + "\x00" + name }

// plugin decodes one plugin block. It returns nil when the labels are
// invalid or duplicate, so later references report the declaration problem
// rather than a second, confusing one.
func (d *decoder) plugin(b *hcl.Block, byKey map[string]*Plugin) *Plugin {
	p := &Plugin{Kind: sdk.Kind(b.Labels[0]), Name: b.Labels[1], DeclRange: b.DefRange, ConfigRange: b.DefRange}
	labelsOK := true
	if !validKind(p.Kind) {
		d.errorf(b.LabelRanges[0], "Unknown plugin kind",
			"%q is not a plugin kind. Use one of %s.", p.Kind, kindList())
		labelsOK = false
	}
	if !validName(p.Name) {
		d.errorf(b.LabelRanges[1], "Invalid plugin name",
			"%q is not a valid plugin name: use 1..64 letters, digits, '_', '-' or '.', starting with a letter or digit.", p.Name)
		labelsOK = false
	}
	if labelsOK {
		if prev, dup := byKey[key(p.Kind, p.Name)]; dup {
			d.errorf(b.DefRange, "Duplicate plugin",
				"plugin %q %q is already declared at %s. Rename or remove one of them.", p.Kind, p.Name, prev.DeclRange)
			labelsOK = false
		} else {
			byKey[key(p.Kind, p.Name)] = p
		}
	}

	c := d.content(b.Body, pluginSchema)
	if c != nil {
		var path, sum string
		if f := attr(d, c.Attributes, "path", &path); f.ok {
			if path == "" {
				d.errorf(f.rng, "Empty plugin path", "path must name the plugin binary, e.g. \"bin/ibsm-plugin-%s\".", p.Name)
			} else {
				p.Path, p.PathRange = d.abs(path), f.rng
			}
		}
		if f := attr(d, c.Attributes, "sha256", &sum); f.ok {
			if !validSHA256(sum) {
				d.errorf(f.rng, "Invalid sha256",
					"sha256 = %q must be 64 hex digits (the output of sha256sum on the plugin binary).", sum)
			} else {
				p.SHA256, p.SHA256Range = strings.ToLower(sum), f.rng
			}
		}
		var cfg *hcl.Block
		for _, cb := range c.Blocks {
			if cfg != nil {
				d.errorf(cb.DefRange, "Duplicate config block",
					"Only one config block is allowed per plugin; the first is at %s. Merge them into one.", cfg.DefRange)
				continue
			}
			cfg = cb
		}
		if cfg != nil {
			p.Body, p.HasConfig, p.ConfigRange = cfg.Body, true, cfg.DefRange
		}
	}
	if p.Body == nil {
		// An empty native body positioned at the plugin block: decoding it
		// yields defaults, and missing required attributes point here.
		p.Body = &hclsyntax.Body{SrcRange: b.DefRange, EndRange: b.DefRange}
	}
	if !labelsOK {
		return nil
	}
	return p
}

func validSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}

func (d *decoder) routing(b *hcl.Block, plugins []*Plugin) Routing {
	r := Routing{DeclRange: b.DefRange, SwitchToSwitch: DefaultSwitchToSwitch}
	c := d.content(b.Body, routingSchema)
	if c == nil {
		return r
	}
	var policy string
	if f := attr(d, c.Attributes, "switch_to_switch", &policy); f.ok {
		switch p := SwitchToSwitch(policy); p {
		case SwitchToSwitchRequired, SwitchToSwitchBestEffort:
			r.SwitchToSwitch = p
		default:
			d.errorf(f.rng, "Invalid switch_to_switch",
				"switch_to_switch = %q is not a policy. Use %q (the default: reject a plan that leaves any switch->switch pair unreachable) "+
					"or %q (accept it and log the unreachable pairs as a warning; unreachable CA->CA pairs, loops and credit loops still reject the plan).",
				policy, SwitchToSwitchRequired, SwitchToSwitchBestEffort)
		}
	}
	ref := func(attrName string, kind sdk.Kind, dst *string) {
		var name string
		f := attr(d, c.Attributes, attrName, &name)
		switch {
		case !f.present:
			d.errorf(b.DefRange, "Missing "+attrName,
				"routing needs %s = \"<name>\" naming a declared plugin %q block. %s",
				attrName, kind, declared(plugins, kind))
		case f.ok && d.resolve(plugins, kind, name, "routing."+attrName, f.rng):
			*dst = name
		}
	}
	ref("engine", sdk.KindRouting, &r.Engine)
	ref("lid_assigner", sdk.KindLIDAssign, &r.LIDAssigner)
	ref("vl_assigner", sdk.KindVLAssign, &r.VLAssigner)

	a, ok := c.Attributes["fallback"]
	if !ok {
		return r
	}
	elems, diags := hcl.ExprList(a.Expr)
	if diags.HasErrors() {
		d.errorf(a.Expr.Range(), "Invalid fallback",
			`fallback must be a list of routing engine names, e.g. fallback = ["minhop"].`)
		return r
	}
	seen := map[string]hcl.Range{}
	for _, e := range elems {
		var name string
		ed := gohcl.DecodeExpression(e, nil, &name)
		d.diags = append(d.diags, ed...)
		if ed.HasErrors() {
			continue
		}
		rng := e.Range()
		switch prev, dup := seen[name]; {
		case name == r.Engine && r.Engine != "":
			d.errorf(rng, "Fallback repeats the engine",
				"%q is already routing.engine; a fallback must be a different engine. Remove it from fallback.", name)
		case dup:
			d.errorf(rng, "Duplicate fallback", "%q is already listed in fallback at %s. Remove one of them.", name, prev)
		default:
			seen[name] = rng
			if d.resolve(plugins, sdk.KindRouting, name, "routing.fallback", rng) {
				r.Fallback = append(r.Fallback, name)
			}
		}
	}
	return r
}

// resolve reports whether a plugin of kind and name is declared, explaining
// at rng why not.
func (d *decoder) resolve(plugins []*Plugin, kind sdk.Kind, name, what string, rng hcl.Range) bool {
	var other *Plugin
	for _, p := range plugins {
		if p.Name != name {
			continue
		}
		if p.Kind == kind {
			return true
		}
		other = p
	}
	if other != nil {
		d.errorf(rng, "Plugin kind mismatch",
			"%s names %q, but %q is declared as plugin %q %q at %s; %s needs a plugin %q %q block.",
			what, name, name, other.Kind, other.Name, other.DeclRange, what, kind, name)
		return false
	}
	d.errorf(rng, "Unknown plugin", "%s names %q, but no plugin %q %q is declared. %s",
		what, name, kind, name, declared(plugins, kind))
	return false
}

// declared lists the names of the declared plugins of kind, for messages.
func declared(plugins []*Plugin, kind sdk.Kind) string {
	var names []string
	for _, p := range plugins {
		if p.Kind == kind {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("No plugin %q blocks are declared; add one.", kind)
	}
	sort.Strings(names)
	return "Declared: " + strings.Join(names, ", ") + "."
}
