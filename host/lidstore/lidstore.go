// Package lidstore persists the port-GUID → LID assignment so LIDs survive SM
// restarts. The file uses OpenSM's guid2lid format ("0x<guid> 0x<min> 0x<max>"
// per port, a blank line after each record) so an operator can seed ibsm from
// an existing OpenSM cache and the other way round.
//
// A lost or shortened guid2lid silently renumbers every port it no longer
// lists, so the file ibsm writes is guarded:
//
//	# ibsm guid2lid: OpenSM format; ends with an ibsm-checksum line
//
//	0x0002c90000000001 0x0001 0x0001
//
//	# ibsm-checksum xxhash64=a793a1f538d601b2 entries=1
//
// The header marks the file as ibsm's, so a file that starts with it must
// end with the checksum line: a copy cut short at any line end is refused
// rather than read as a smaller assignment. The checksum is the xxhash64 of
// every byte before the checksum line, so any edit, truncation or corruption
// is refused too, with the file and line and what to do. A file without the
// header is an OpenSM guid2lid and is read as such (each record still
// checked, file:line on error). Every comment is followed by a blank line:
// OpenSM has no comment syntax, takes "#" for a key it rejects (ERR 610B)
// and would otherwise swallow the next record into that key's value.
//
// An empty file is refused: every file ibsm writes has the header and the
// checksum line, even with no ports, so an empty guid2lid is a damaged one
// (a crash before the data reached the disk, an interrupted copy, or an
// operator's "> guid2lid"), and reading it as "no LIDs" is exactly the
// silent renumbering this format exists to prevent. The error says to
// remove the file to start without stored LIDs.
package lidstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/ibsm/ibsm/conf/atomicfile"
)

// Range is the LIDs one port holds.
type Range struct{ Min, Max uint16 }

// Header is the first line of every guid2lid ibsm writes. A file starting
// with it must end with the checksum line.
const Header = "# ibsm guid2lid: OpenSM format; ends with an ibsm-checksum line"

// checksumPrefix starts the checksum line.
const checksumPrefix = "# ibsm-checksum "

// maxFileSize bounds what Parse reads: 49,151 unicast LIDs at ~36 bytes a
// record are under 2 MB, so anything far larger is not a guid2lid.
const maxFileSize = 64 << 20

// Parse reads a guid2lid file, ibsm's (with header and checksum line) or
// OpenSM's. Every error starts with name and, where one line is at fault,
// its number.
func Parse(name string, r io.Reader) (map[uint64]Range, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s: larger than %d MB; this is not a guid2lid file (point sm.state_dir elsewhere or remove the file)", name, maxFileSize>>20)
	}
	return parse(name, data)
}

// removeHint is how to start over when the stored LIDs cannot be trusted.
const removeHint = "remove the file to start without stored LIDs (ports keep the LIDs the fabric shows them holding, others get new ones)"

func parse(name string, data []byte) (map[uint64]Range, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: the file is empty; ibsm always writes a header and a checksum line, so this file was emptied or cut short (a crash before it reached the disk, an interrupted copy, \"> guid2lid\"): restore it from a backup or a standby SM's copy, or %s", name, removeHint)
	}
	if data[len(data)-1] != '\n' {
		n := bytes.Count(data, []byte{'\n'}) + 1
		return nil, fmt.Errorf("%s:%d: the file ends in the middle of this line (no newline): it was cut short; restore it, or %s", name, n, removeHint)
	}
	ours := bytes.HasPrefix(data, []byte(Header+"\n"))
	out := map[uint64]Range{}
	seen := map[uint64]int{} // GUID → line
	var (
		line, entries int
		sumLine       int    // line of the checksum line, 0 if none yet
		sumOffset     int    // bytes before the checksum line
		sumText       string // the checksum line
	)
	for off := 0; off < len(data); {
		end := off + bytes.IndexByte(data[off:], '\n')
		text := string(data[off:end])
		start := off
		off = end + 1
		line++
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if sumLine != 0 {
			return nil, fmt.Errorf("%s:%d: text after the checksum line (line %d), which must be last; if the edit is meant, delete the checksum line and the ibsm header (line 1) to accept the file as edited, else restore it or %s",
				name, line, sumLine, removeHint)
		}
		if strings.HasPrefix(f[0], "#") {
			if strings.HasPrefix(text, checksumPrefix) {
				sumLine, sumOffset, sumText = line, start, text
			}
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want \"0x<port guid> 0x<min lid> 0x<max lid>\", got %q; fix or delete the line (LIDs are reassigned for ports without an entry)", name, line, text)
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
		if prev, dup := seen[guid]; dup {
			return nil, fmt.Errorf("%s:%d: port %#016x is listed again (first at line %d); delete one of the two lines", name, line, guid, prev)
		}
		seen[guid] = line
		out[guid] = Range{uint16(lo), uint16(hi)}
		entries++
	}
	switch {
	case sumLine != 0:
		if err := verify(data[:sumOffset], sumText, entries); err != nil {
			return nil, fmt.Errorf("%s:%d: %v: the file was edited, cut short or damaged since ibsm wrote it; restore it, or, if the edit is meant, delete this checksum line and the ibsm header (line 1) to accept the file as it is, or %s",
				name, sumLine, err, removeHint)
		}
	case ours:
		return nil, fmt.Errorf("%s:%d: the file starts with ibsm's header but has no checksum line: it was cut short after %d entries (ports it no longer lists would be renumbered); restore it, or, if those entries are all you want, delete line 1 to accept them, or %s",
			name, line, entries, removeHint)
	case entries == 0:
		return nil, fmt.Errorf("%s: the file lists no ports and is not one ibsm wrote (no header or checksum line), so it was emptied or cut short: restore it, or %s", name, removeHint)
	}
	return out, nil
}

// verify checks a checksum line against the bytes before it and the number
// of records.
func verify(before []byte, sumLine string, entries int) error {
	var sum uint64
	n := -1
	for _, kv := range strings.Fields(strings.TrimPrefix(sumLine, checksumPrefix)) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "xxhash64":
			s, err := strconv.ParseUint(v, 16, 64)
			if err != nil || len(v) != 16 {
				return fmt.Errorf("malformed checksum line %q (want %sxxhash64=<16 hex digits> entries=<n>)", sumLine, checksumPrefix)
			}
			sum = s
		case "entries":
			e, err := strconv.Atoi(v)
			if err != nil || e < 0 {
				return fmt.Errorf("malformed checksum line %q (want %sxxhash64=<16 hex digits> entries=<n>)", sumLine, checksumPrefix)
			}
			n = e
		}
	}
	if n < 0 || !strings.Contains(sumLine, "xxhash64=") {
		return fmt.Errorf("malformed checksum line %q (want %sxxhash64=<16 hex digits> entries=<n>)", sumLine, checksumPrefix)
	}
	if n != entries {
		return fmt.Errorf("the checksum line counts %d entries but the file has %d", n, entries)
	}
	if got := xxhash.Sum64(before); got != sum {
		return fmt.Errorf("checksum mismatch: the lines above hash to xxhash64=%016x, the checksum line says %016x", got, sum)
	}
	return nil
}

// Load reads path; a missing file is an empty assignment.
func Load(path string) (map[uint64]Range, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[uint64]Range{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(path, f)
}

// Encode writes m sorted by GUID in OpenSM's record layout, between ibsm's
// header and checksum line (each followed by a blank line, as OpenSM
// needs).
func Encode(w io.Writer, m map[uint64]Range) error {
	guids := make([]uint64, 0, len(m))
	for g := range m {
		guids = append(guids, g)
	}
	sort.Slice(guids, func(i, j int) bool { return guids[i] < guids[j] })
	var b bytes.Buffer
	b.Grow(len(Header) + 36*len(guids) + 64)
	b.WriteString(Header + "\n\n")
	for _, g := range guids {
		r := m[g]
		fmt.Fprintf(&b, "0x%016x 0x%04x 0x%04x\n\n", g, r.Min, r.Max)
	}
	fmt.Fprintf(&b, "%sxxhash64=%016x entries=%d\n\n", checksumPrefix, xxhash.Sum64(b.Bytes()), len(guids))
	_, err := w.Write(b.Bytes())
	return err
}

// Save writes m to path atomically and durably (atomicfile.Write), so neither a
// crash nor a power loss leaves a half-written or empty file.
func Save(path string, m map[uint64]Range) error {
	var buf bytes.Buffer
	if err := Encode(&buf, m); err != nil {
		return err
	}
	return atomicfile.Write(path, buf.Bytes())
}
