package mkey

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

	"github.com/ibsm/ibsm/conf/atomicfile"
)

// The files live in Dir (Options.Dir, normally <state_dir>/mkey, mode
// 0700: they hold secrets) in OpenSM's cache formats, one record per line
// and a blank line after each, as OpenSM's osm_db writes them (it reads
// them back either way):
//
//	guid2mkey:  0x<port GUID> 0x<M_Key>
//	neighbors:  0x<port GUID>:<port> 0x<port GUID>:<port>
//
// A switch's ports all go by its port GUID. neighbors holds every cable the
// SM has seen, both ways, so that the key of the port at the end of any
// directed route can be found before that port answers (at protection
// level 2 it answers only SMPs that carry its key).
const (
	KeysFile      = "guid2mkey"
	NeighborsFile = "neighbors"
)

// maxFile bounds what is read: 49,151 ports at ~40 bytes a record.
const maxFile = 64 << 20

// End is one end of a cable: a port GUID and a port number.
type End struct {
	GUID uint64
	Port uint8
}

func (e End) String() string { return fmt.Sprintf("0x%016x:%d", e.GUID, e.Port) }

// records calls f with the two fields of every non-blank line of file
// name; errors carry name:line.
func records(name string, r io.Reader, f func(a, b string) error) error {
	sc := bufio.NewScanner(io.LimitReader(r, maxFile+1))
	sc.Buffer(make([]byte, 4096), 4096)
	n, size := 0, 0
	for sc.Scan() {
		n++
		size += len(sc.Bytes()) + 1
		if size > maxFile {
			return fmt.Errorf("%s: larger than %d MiB; this is not an ibsm or OpenSM %s file", name, maxFile>>20, filepath.Base(name))
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 2 {
			return fmt.Errorf("%s:%d: want two fields, got %d (%q); fix or remove the line", name, n, len(fs), cut(line))
		}
		if err := f(fs[0], fs[1]); err != nil {
			return fmt.Errorf("%s:%d: %v; fix or remove the line", name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %v", name, n+1, err)
	}
	return nil
}

func cut(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

func hex64(s, what string) (uint64, error) {
	if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		return 0, fmt.Errorf("%s %q: want 0x and hex digits", what, cut(s))
	}
	v, err := strconv.ParseUint(s[2:], 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want at most 16 hex digits after 0x", what, cut(s))
	}
	return v, nil
}

// ParseKeys reads a guid2mkey file.
func ParseKeys(name string, r io.Reader) (map[uint64]uint64, error) {
	m := map[uint64]uint64{}
	err := records(name, r, func(a, b string) error {
		g, err := hex64(a, "port GUID")
		if err != nil {
			return err
		}
		k, err := hex64(b, "M_Key")
		if err != nil {
			return err
		}
		if g == 0 {
			return fmt.Errorf("port GUID 0")
		}
		if _, dup := m[g]; dup {
			return fmt.Errorf("port GUID 0x%016x listed twice", g)
		}
		m[g] = k
		return nil
	})
	return m, err
}

// FormatKeys writes m in guid2mkey format, sorted by GUID.
func FormatKeys(m map[uint64]uint64) []byte {
	gs := make([]uint64, 0, len(m))
	for g := range m {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i] < gs[j] })
	var b bytes.Buffer
	for _, g := range gs {
		fmt.Fprintf(&b, "0x%016x 0x%016x\n\n", g, m[g])
	}
	return b.Bytes()
}

func parseEnd(s string) (End, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return End{}, fmt.Errorf("%q: want 0x<port GUID>:<port>", cut(s))
	}
	g, err := hex64(s[:i], "port GUID")
	if err != nil {
		return End{}, err
	}
	p, err := strconv.ParseUint(s[i+1:], 10, 8)
	if err != nil {
		return End{}, fmt.Errorf("port %q: want 0..255", cut(s[i+1:]))
	}
	return End{g, uint8(p)}, nil
}

// ParseNeighbors reads a neighbors file: each record names the end at the
// other side of a cable.
func ParseNeighbors(name string, r io.Reader) (map[End]End, error) {
	m := map[End]End{}
	err := records(name, r, func(a, b string) error {
		x, err := parseEnd(a)
		if err != nil {
			return err
		}
		y, err := parseEnd(b)
		if err != nil {
			return err
		}
		m[x] = y
		return nil
	})
	return m, err
}

// FormatNeighbors writes m in neighbors format, sorted.
func FormatNeighbors(m map[End]End) []byte {
	es := make([]End, 0, len(m))
	for e := range m {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].GUID != es[j].GUID {
			return es[i].GUID < es[j].GUID
		}
		return es[i].Port < es[j].Port
	})
	var b bytes.Buffer
	for _, e := range es {
		fmt.Fprintf(&b, "%s %s\n\n", e, m[e])
	}
	return b.Bytes()
}

// readFile opens dir/name and parses it with parse; a missing file is
// empty.
func readFile[T any](dir, name string, parse func(string, io.Reader) (T, error), empty T) (T, error) {
	path := filepath.Join(dir, name)
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return empty, nil
	}
	if err != nil {
		return empty, err
	}
	defer f.Close()
	return parse(path, f)
}

// writeFile replaces dir/name atomically, readable by its owner only.
func writeFile(dir, name string, data []byte) error {
	path := filepath.Join(dir, name)
	if err := atomicfile.Write(path, data); err != nil {
		return err
	}
	// atomicfile.Write leaves 0644; the directory (0700) keeps others out
	// meanwhile.
	return os.Chmod(path, 0o600)
}
