package conf

import (
	"fmt"
	"os"

	"github.com/hashicorp/hcl/v2"
)

// CheckFiles checks what Load deliberately does not touch: that the
// topology file (sim) exists, that every declared plugin binary exists and
// is executable, and that a binary matches its sha256 pin. It reads each
// pinned binary in full. Diagnostics point at the attribute naming the file.
func (c *Config) CheckFiles() hcl.Diagnostics {
	var diags hcl.Diagnostics
	add := func(rng hcl.Range, summary, format string, args ...any) {
		r := rng
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: summary, Detail: shorten(fmt.Sprintf(format, args...)), Subject: &r,
		})
	}
	if c.Fabric.Transport == TransportSim {
		switch st, err := os.Stat(c.Fabric.Topology); {
		case err != nil:
			add(c.Fabric.TopologyRange, "Topology file not found",
				"%v. Generate it (ibsm topo) or fix the path; relative paths are relative to %s.", err, c.Dir)
		case !st.Mode().IsRegular():
			add(c.Fabric.TopologyRange, "Topology is not a file", "%s is not a regular file.", c.Fabric.Topology)
		}
	}
	for _, p := range c.Plugins {
		st, err := os.Stat(p.Path)
		switch {
		case err != nil:
			add(p.PathRange, "Plugin binary not found",
				"%v. Build it (make plugins) or fix the path; relative paths are relative to %s.", err, c.Dir)
			continue
		case !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0:
			add(p.PathRange, "Plugin binary not executable", "%s must be an executable file (mode %v).", p.Path, st.Mode())
			continue
		}
		if p.SHA256 == "" {
			continue
		}
		sum, err := FileSHA256(p.Path)
		switch {
		case err != nil:
			add(p.PathRange, "Cannot hash plugin binary", "%v.", err)
		case sum != p.SHA256:
			add(p.SHA256Range, "Plugin checksum mismatch",
				"%s has sha256 %s, but the configuration pins %s. If the binary was rebuilt on purpose, update the pin; otherwise reinstall the plugin.",
				p.Path, sum, p.SHA256)
		}
	}
	return diags
}
