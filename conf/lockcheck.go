package conf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/ibsm/ibsm/sdk"
)

// Lock is the lock file kept beside a configuration file.
type Lock struct {
	Path    string
	Entries []LockEntry
}

// LockPath is where the configuration's lock file lives: LockFileName in
// the configuration file's directory.
func (c *Config) LockPath() string { return filepath.Join(c.Dir, LockFileName) }

// ReadLockFile reads the configuration's lock file. Without one it returns
// nil and no diagnostics: binaries are then checked against sha256 pins in
// the configuration only. A lock file that exists but cannot be read or
// parsed is an error, never taken as absent.
func (c *Config) ReadLockFile() (*Lock, hcl.Diagnostics) {
	path := c.LockPath()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	entries, diags := ReadLock(path)
	if diags.HasErrors() {
		return nil, diags
	}
	return &Lock{Path: path, Entries: entries}, diags
}

// Find returns the entry for a declared plugin, or nil.
func (l *Lock) Find(p *Plugin) *LockEntry {
	if l == nil {
		return nil
	}
	return FindLock(l.Entries, p.Kind, p.Name)
}

// CheckLock checks the configuration and its plugin binaries against the
// lock before any binary runs: every declared plugin has an entry, sha256
// pins in the configuration agree with it (VerifyLock), and every binary's
// sha256 is the one its entry records. A mismatch is reported at the lock
// entry, with both hashes. Entries no declared plugin uses are warnings.
func (c *Config) CheckLock(l *Lock) hcl.Diagnostics {
	diags := c.VerifyLock(l.Entries)
	for _, p := range c.Plugins {
		e := l.Find(p)
		if e == nil {
			continue // reported by VerifyLock
		}
		sum, err := FileSHA256(p.Path)
		if err != nil {
			r := p.PathRange
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot hash plugin binary",
				Detail:   shorten(fmt.Sprintf("%v. The lock entry at %s cannot be checked; fix the path or reinstall the plugin.", err, e.DeclRange)),
				Subject:  &r,
			})
			continue
		}
		if d := e.mismatch(p, sum, c.File); d != nil {
			diags = append(diags, d)
		}
	}
	for i := range l.Entries {
		e := &l.Entries[i]
		if c.Plugin(e.Kind, e.Name) == nil {
			r := e.DeclRange
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagWarning,
				Summary:  "Stale lock entry",
				Detail: shorten(fmt.Sprintf("plugin %q %q is locked but not declared in %s. Run \"ibsm plugins lock --config %s\" to drop it.",
					e.Kind, e.Name, c.File, c.File)),
				Subject: &r,
			})
		}
	}
	return diags
}

// mismatch is the diagnostic for a binary whose sha256 is not the locked
// one, nil when it is.
func (e *LockEntry) mismatch(p *Plugin, sum, file string) *hcl.Diagnostic {
	if sum == e.SHA256 {
		return nil
	}
	r := e.DeclRange
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Plugin binary does not match the lock file",
		Detail: shorten(fmt.Sprintf("plugin %q %q (declared at %s): %s has sha256 %s, but this lock entry records %s. The binary was not run. "+
			"If it was rebuilt or upgraded on purpose, run \"ibsm plugins lock --config %s\" and review the change; otherwise reinstall the plugin.",
			p.Kind, p.Name, p.DeclRange, p.Path, sum, e.SHA256, file)),
		Subject: &r,
	}
}

// CheckReported compares what a launched plugin reported (its version and
// SDK version) and the protocol negotiated with it against the entry. The
// binary's sha256 matched the entry, so a difference means the binary
// reports something else from run to run, or the lock file was edited;
// either way the lock no longer describes what runs. Fields the entry does
// not record are not checked.
func (e *LockEntry) CheckReported(info sdk.Info, protocol int) error {
	var what string
	switch {
	case e.Version != "" && info.Version != e.Version:
		what = fmt.Sprintf("version %q, the plugin reports %q", e.Version, info.Version)
	case e.SDKVersion != "" && info.SDKVersion != e.SDKVersion:
		what = fmt.Sprintf("SDK version %q, the plugin reports %q", e.SDKVersion, info.SDKVersion)
	case e.Protocol != 0 && protocol != e.Protocol:
		what = fmt.Sprintf("plugin protocol %d, the host negotiated %d", e.Protocol, protocol)
	default:
		return nil
	}
	return fmt.Errorf("%s: the lock entry for plugin %q %q records %s; run \"ibsm plugins lock\" again after checking the binary",
		e.DeclRange, e.Kind, e.Name, what)
}
