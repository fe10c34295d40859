package pipeline

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/ibsm/ibsm/host/lidstore"
)

// Key names a stage result: xxhash over the stage kind, the plugin identity,
// its canonical config, the topology hash and the upstream results' keys.
// It names things; it vouches for nothing (binaries are pinned by sha256).
type Key uint64

func (k Key) String() string { return fmt.Sprintf("%016x", uint64(k)) }

// keyOf hashes a sequence of strings and integers unambiguously.
func keyOf(parts ...any) Key {
	h := xxhash.New()
	h.WriteString("ibsm-cache-v1")
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
type Cache struct {
	dir  string
	keep int

	mu  sync.Mutex
	mem map[string][]entry // stage -> newest last
}

type entry struct {
	key Key
	val any
}

// NewCache returns a cache persisting under dir ("" for memory only).
func NewCache(dir string) *Cache {
	return &Cache{dir: dir, keep: 3, mem: map[string][]entry{}}
}

func (c *Cache) path(stage string, k Key) string {
	return filepath.Join(c.dir, fmt.Sprintf("%s-%s.gob", stage, k))
}

// Get loads the result for (stage, k) into out (a pointer) and reports
// whether it was found. A corrupt file is removed and reported as a miss.
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
	data, err := os.ReadFile(c.path(stage, k))
	if err != nil {
		return nil, false
	}
	v := new(T)
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(v); err != nil {
		os.Remove(c.path(stage, k))
		return nil, false
	}
	c.remember(stage, k, v)
	return v, true
}

// Put stores v for (stage, k) in memory and on disk.
func Put[T any](c *Cache, stage string, k Key, v *T) error {
	c.remember(stage, k, v)
	if c.dir == "" {
		return nil
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return fmt.Errorf("cache: encode %s result: %w", stage, err)
	}
	if err := lidstore.WriteAtomic(c.path(stage, k), buf.Bytes()); err != nil {
		return fmt.Errorf("cache: %w (is the state directory writable?)", err)
	}
	c.prune(stage)
	return nil
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
	if len(list) > c.keep {
		list = list[len(list)-c.keep:]
	}
	c.mem[stage] = list
}

// prune deletes all but the newest c.keep files of a stage.
func (c *Cache) prune(stage string) {
	files, _ := filepath.Glob(filepath.Join(c.dir, stage+"-*.gob"))
	if len(files) <= c.keep {
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
	for _, f := range all[min(c.keep, len(all)):] {
		os.Remove(f.name)
	}
}
