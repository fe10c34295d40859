package ftree

import (
	"fmt"
	"strings"

	"github.com/ibsm/ibsm/sdk/settings"
)

// ParseGUIDFile reads the contents of a GUID file as OpenSM's
// root_guid_file and cn_guid_file hold them: one node or port GUID per
// line, blank lines and '#' comments skipped. The host reads the file (the
// attribute is file-valued) and sends its contents; the plugin never opens
// a host path. attr names the attribute in errors, with the line.
func ParseGUIDFile(attr, contents string) ([]uint64, error) {
	var out []uint64
	for n, line := range strings.Split(contents, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		g, err := settings.GUID(line)
		if err != nil {
			if !strings.Contains(contents, "\n") && strings.Contains(contents, "/") {
				return nil, fmt.Errorf("%s: %w; this looks like a path, which an ibsm host older than this plugin sends instead of the file's contents: upgrade the host", attr, err)
			}
			return nil, fmt.Errorf("%s line %d: %w", attr, n+1, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// AppendUnique appends the GUIDs of more that are not in list yet, in
// order (a GUID named twice counts once, where it first appears: ca_order
// is a rank order).
func AppendUnique(list, more []uint64) []uint64 {
	seen := make(map[uint64]bool, len(list)+len(more))
	for _, g := range list {
		seen[g] = true
	}
	for _, g := range more {
		if !seen[g] {
			seen[g] = true
			list = append(list, g)
		}
	}
	return list
}
