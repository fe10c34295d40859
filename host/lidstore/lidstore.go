// Package lidstore persists the port-GUID → LID assignment so LIDs survive SM
// restarts. The file uses OpenSM's guid2lid format ("0x<guid> 0x<min> 0x<max>"
// per port, blank lines allowed) so an operator can seed ibsm from an
// existing OpenSM cache and the other way round.
package lidstore

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Range is the LIDs one port holds.
type Range struct{ Min, Max uint16 }

// Parse reads a guid2lid file. Malformed lines are errors with file:line.
func Parse(name string, r io.Reader) (map[uint64]Range, error) {
	out := map[uint64]Range{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want \"0x<port guid> 0x<min lid> 0x<max lid>\", got %q; fix or delete the line (LIDs are reassigned for ports without an entry)", name, line, sc.Text())
		}
		guid, err := strconv.ParseUint(f[0], 0, 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: bad GUID %q: %v", name, line, f[0], err)
		}
		lo, err1 := strconv.ParseUint(f[1], 0, 16)
		hi, err2 := strconv.ParseUint(f[2], 0, 16)
		if err1 != nil || err2 != nil || lo == 0 || hi < lo || hi > 0xBFFF {
			return nil, fmt.Errorf("%s:%d: bad LID range %s..%s (want 0x0001..0xBFFF, min <= max)", name, line, f[1], f[2])
		}
		out[guid] = Range{uint16(lo), uint16(hi)}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// Load reads path; a missing file is an empty assignment.
func Load(path string) (map[uint64]Range, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return map[uint64]Range{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(path, f)
}

// Encode writes m sorted by GUID, in OpenSM's record layout.
func Encode(w io.Writer, m map[uint64]Range) error {
	guids := make([]uint64, 0, len(m))
	for g := range m {
		guids = append(guids, g)
	}
	sort.Slice(guids, func(i, j int) bool { return guids[i] < guids[j] })
	bw := bufio.NewWriter(w)
	for _, g := range guids {
		r := m[g]
		fmt.Fprintf(bw, "0x%016x 0x%04x 0x%04x\n\n", g, r.Min, r.Max)
	}
	return bw.Flush()
}

// Save writes m to path atomically (temp file + rename), so a crash never
// leaves a half-written file that would lose LIDs.
func Save(path string, m map[uint64]Range) error {
	var buf bytes.Buffer
	if err := Encode(&buf, m); err != nil {
		return err
	}
	return WriteAtomic(path, buf.Bytes())
}

// WriteAtomic writes data to path through a temp file in the same directory.
func WriteAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
