package pipeline

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/ibsm/ibsm/conf/atomicfile"
)

// Key names a stage result: xxhash over the stage kind, the plugin identity,
// its canonical config, the topology hash and the upstream results' keys.
// It names things; it vouches for nothing (binaries are pinned by sha256).
type Key uint64

func (k Key) String() string { return fmt.Sprintf("%016x", uint64(k)) }

// keyOf hashes a sequence of strings and integers unambiguously.
func keyOf(parts ...any) Key {
	h := xxhash.New()
	h.WriteString("ibsm-cache-v2")
	var b [9]byte
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			b[0] = 's'
			binary.LittleEndian.PutUint64(b[1:], uint64(len(v)))
			h.Write(b[:])
			h.WriteString(v)
		case uint64:
			b[0] = 'u'
			binary.LittleEndian.PutUint64(b[1:], v)
			h.Write(b[:])
		case Key:
			b[0] = 'k'
			binary.LittleEndian.PutUint64(b[1:], uint64(v))
			h.Write(b[:])
		case uint8:
			b[0] = 'b'
			binary.LittleEndian.PutUint64(b[1:], uint64(v))
			h.Write(b[:])
		default:
			panic(fmt.Sprintf("keyOf: unsupported %T", p))
		}
	}
	return Key(h.Sum64())
}

// Cache keeps stage results in memory and, when Dir is set, on disk so that
// a restart on an unchanged fabric recomputes nothing. Only the newest few
// results per stage are kept: a fabric flapping between two states reuses
// both, a fabric that keeps changing does not grow the state directory.
//
// Each file carries the xxhash of its payload: a file that does not match
// (torn write, bit rot, an edit) is a miss, removed and reported. The cache
// is an optimisation: a failed write never fails a stage; it is reported
// once per pipeline run (Problems) and routing goes on.
type Cache struct {
	dir  string
	keep int
	// readOnly: the files are read, never written or removed (a
	// command looking at a daemon's state directory).
	readOnly bool

	mu       sync.Mutex
	mem      map[string][]entry // stage -> newest last
	problems []problem
	// lastWrite is closed when the newest putBehind write is done; each
	// write waits for the one before, so files land in Put order.
	lastWrite chan struct{}
}

type entry struct {
	key Key
	val any
}

// NewCache returns a cache persisting under dir ("" for memory only).
func NewCache(dir string) *Cache {
	return &Cache{dir: dir, keep: 3, mem: map[string][]entry{}}
}

// NewReadOnlyCache returns a cache that reads dir's results and keeps
// new ones in memory only: it never writes nor removes a file there.
func NewReadOnlyCache(dir string) *Cache {
	c := NewCache(dir)
	c.readOnly = true
	return c
}

// fileMagic starts every cache file; the payload's xxhash follows it.
// Version 4 stores forwarding trees and SL2VL entries raw (codec.go);
// oldMagics started the files of earlier versions (2: all gob, 3: trees
// raw, SL2VL entries in the gob).
const fileMagic = "ibsm-cache-v4\n"

var oldMagics = []string{"ibsm-cache-v2\n", "ibsm-cache-v3\n"}

func (c *Cache) path(stage string, k Key) string {
	return filepath.Join(c.dir, fmt.Sprintf("%s-%s.gob", stage, k))
}

// Get loads the result for (stage, k) and reports whether it was found. A
// corrupt or unreadable file is removed and reported as a miss.
func Get[T any](c *Cache, stage string, k Key) (*T, bool) {
	c.mu.Lock()
	for _, e := range c.mem[stage] {
		if e.key == k {
			c.mu.Unlock()
			return e.val.(*T), true
		}
	}
	c.mu.Unlock()
	if c.dir == "" {
		return nil, false
	}
	p := c.path(stage, k)
	data, err := os.ReadFile(p)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.problem("read", fmt.Sprintf("cannot read %s: %v", p, err))
		}
		return nil, false
	}
	payload, ok := checked(data)
	v := new(T)
	if ok {
		ok = decodePayload(payload, v) == nil
	}
	if !ok {
		if c.readOnly {
			return nil, false
		}
		os.Remove(p)
		// A file an older ibsm wrote in its own format is stale, not
		// corrupt: it is recomputed without alarming the operator.
		if !slices.ContainsFunc(oldMagics, func(m string) bool { return bytes.HasPrefix(data, []byte(m)) }) {
			c.problem("corrupt", fmt.Sprintf("%s is corrupt (checksum or format); removed, the stage is recomputed", p))
		}
		return nil, false
	}
	if !c.onDiskOnly(stage) {
		c.remember(stage, k, v)
	}
	return v, true
}

// onDiskOnly reports whether stage's results, once their file is written,
// are read back from it instead of kept in memory: the routing engine's
// forwarding trees are the plan's tables in another order (172 MB at
// ft3-56, against 187 MB of tables the plan in force holds anyway), and
// an unchanged fabric's sweep reads them back in a fraction of a second.
// A cache without a directory, a read-only one and a failed write keep
// them in memory.
func (c *Cache) onDiskOnly(stage string) bool {
	return stage == "routing" && c.dir != "" && !c.readOnly
}

// forget drops the in-memory copy of (stage, k).
func (c *Cache) forget(stage string, k Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mem[stage] = slices.DeleteFunc(c.mem[stage], func(e entry) bool { return e.key == k })
}

// checked returns the payload of a cache file if its checksum matches.
func checked(data []byte) ([]byte, bool) {
	n := len(fileMagic)
	if len(data) < n+8 || string(data[:n]) != fileMagic {
		return nil, false
	}
	payload := data[n+8:]
	return payload, binary.LittleEndian.Uint64(data[n:]) == xxhash.Sum64(payload)
}

// Put stores v for (stage, k) in memory and, best effort, on disk.
func Put[T any](c *Cache, stage string, k Key, v *T) {
	if p := c.encode(stage, k, v); p != nil {
		c.write(stage, k, p)
	}
}

// putBehind is Put whose disk write (a large plan's tens of MB and an
// fsync) runs behind the caller, in order after earlier ones: the stage
// result is in memory at once, and the pipeline's next stages need not
// wait for the disk. Flush waits for the writes.
func putBehind[T any](c *Cache, stage string, k Key, v *T) {
	p := c.encode(stage, k, v)
	if p == nil {
		return
	}
	c.mu.Lock()
	prev, done := c.lastWrite, make(chan struct{})
	c.lastWrite = done
	c.mu.Unlock()
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		c.write(stage, k, p)
	}()
}

// Flush waits until every write putBehind started is on disk (or has
// failed and been recorded as a problem).
//
// It waits for the newest write, which waits for the one before: a
// WaitGroup here panicked when a background Flush (Runner.collect) was
// still waiting as the next pipeline run's write began.
func (c *Cache) Flush() {
	c.mu.Lock()
	last := c.lastWrite
	c.mu.Unlock()
	if last != nil {
		<-last
	}
}

// encode remembers v and returns its payload, or nil when nothing goes
// to disk.
func (c *Cache) encode(stage string, k Key, v any) *payload {
	c.remember(stage, k, v)
	if c.dir == "" || c.readOnly {
		return nil
	}
	p, err := newPayload(v)
	if err != nil {
		c.problem("write", fmt.Sprintf("cannot encode the %s result: %v", stage, err))
		return nil
	}
	return p
}

// write puts a result on disk and prunes its stage. The payload's hash
// comes first in the file, so it is streamed twice: into the hash, then
// after it into the file.
func (c *Cache) write(stage string, k Key, p *payload) {
	sum := xxhash.New()
	err := p.writeTo(sum)
	if err == nil {
		err = atomicfile.WriteFunc(c.path(stage, k), func(f io.Writer) error {
			bw := bufio.NewWriterSize(f, 1<<20)
			bw.WriteString(fileMagic)
			bw.Write(binary.LittleEndian.AppendUint64(nil, sum.Sum64()))
			return p.writeTo(bw)
		})
	}
	if err != nil {
		c.problem("write", fmt.Sprintf("cannot write the %s result: %v", stage, err))
		return
	}
	if c.onDiskOnly(stage) {
		c.forget(stage, k)
	}
	c.prune(stage)
}

// problem records something the operator should hear about: the first
// problem of each kind ("read", "write") per run, and how many followed.
func (c *Cache) problem(kind, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.problems {
		if c.problems[i].kind == kind {
			c.problems[i].more++
			return
		}
	}
	c.problems = append(c.problems, problem{kind, msg, 0})
}

type problem struct {
	kind, msg string
	more      int
}

// Problems returns and clears what went wrong with the on-disk cache since
// the last call: one line per kind of problem. It waits for pending writes
// first, so their failures are reported too.
func (c *Cache) Problems() []string {
	c.Flush()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, p := range c.problems {
		if p.more > 0 {
			p.msg += fmt.Sprintf(" (and %d more like it)", p.more)
		}
		out = append(out, p.msg)
	}
	c.problems = nil
	return out
}

func (c *Cache) remember(stage string, k Key, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.mem[stage]
	for i, e := range list {
		if e.key == k {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	list = append(list, entry{k, v})
	if keep := c.keepOf(stage); len(list) > keep {
		list = list[len(list)-keep:]
	}
	c.mem[stage] = list
}

// keepOf is how many results of a stage are kept. LID plans are filed
// twice (under the persisted LIDs they were asked with and under their
// own), so they get twice the room.
func (c *Cache) keepOf(stage string) int {
	if stage == "lid" {
		return 2 * c.keep
	}
	return c.keep
}

// prune deletes all but the newest keepOf(stage) files of a stage.
func (c *Cache) prune(stage string) {
	// Exactly 16 hex digits, so "lid" does not count "lid-failed" files.
	files, _ := filepath.Glob(filepath.Join(c.dir, stage+"-"+strings.Repeat("?", 16)+".gob"))
	keep := c.keepOf(stage)
	if len(files) <= keep {
		return
	}
	type fi struct {
		name string
		mod  int64
	}
	var all []fi
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			all = append(all, fi{f, st.ModTime().UnixNano()})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod > all[j].mod })
	for _, f := range all[min(keep, len(all)):] {
		os.Remove(f.name)
	}
}
