// Package statedir guards an SM's state directory (sm.state_dir) against a
// second ibsm: two SMs on one directory overwrite each other's guid2lid and
// plan cache, and both program the fabric.
//
// Lock takes an exclusive flock(2) on <dir>/lock and writes the holder's
// PID into it for the error the next process gets. The kernel drops the
// lock when the process exits in any way (kill -9 included), so there is no
// stale lock to clean up: the lock file's existence means nothing, only
// the flock does. The descriptor is close-on-exec, so plugin processes do
// not inherit it and cannot keep the directory locked after ibsm dies.
package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FileName is the lock file inside the state directory.
const FileName = "lock"

// ErrLocked is returned (wrapped) when another process holds the lock.
var ErrLocked = errors.New("state directory is in use")

// Dir is a locked state directory. Close releases it.
type Dir struct {
	// ReadOnly is set when the directory could not be written and the
	// directory itself is locked instead of the lock file.
	ReadOnly bool

	path string
	mu   sync.Mutex
	f    *os.File
}

// Lock locks dir for this process. It fails at once, naming the holder's
// PID, if another process (or another Lock in this one) holds it.
func Lock(dir string) (*Dir, error) {
	p := filepath.Join(dir, FileName)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	readOnly := false
	if errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) {
		// A read-only state directory costs the cache and guid2lid
		// writes, never the SM: lock the directory itself (flock works
		// on a read-only descriptor); the holder's PID cannot be kept.
		f, err = os.Open(dir)
		readOnly = true
	}
	if err != nil {
		return nil, fmt.Errorf("locking state directory %s: %w (set sm.state_dir to a writable directory)", dir, err)
	}
	if err := flock(f); err != nil {
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("locking state directory %s: flock %s: %w", dir, p, err)
		}
		return nil, fmt.Errorf("%w: %s is locked by %s; stop that ibsm first, or give this one its own sm.state_dir (two SMs on one directory overwrite each other's LIDs and plans)",
			ErrLocked, dir, holder(p))
	}
	if readOnly {
		return &Dir{path: dir, f: f, ReadOnly: true}, nil
	}
	// Ours now: record who we are for the next one's error message.
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(pid, 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking state directory %s: writing our PID to %s: %w", dir, p, err)
	}
	return &Dir{path: dir, f: f}, nil
}

func flock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

// holder describes the process named in the lock file. The holder writes
// its PID right after locking, so an empty file is retried briefly.
func holder(p string) string {
	var pid int
	for range 20 {
		b, err := os.ReadFile(p)
		if err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
				pid = n
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 {
		return "another process (it has not written its PID to " + p + ")"
	}
	s := "process " + strconv.Itoa(pid)
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
		s += " (" + strings.TrimSpace(string(comm)) + ")"
	}
	return s
}

// Close releases the lock. It is safe to call more than once and on nil.
func (d *Dir) Close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return nil
	}
	// Clear our PID while still holding the lock (the file stays: removing
	// it would let two processes lock two different inodes), then unlock by
	// closing.
	_ = d.f.Truncate(0)
	err := d.f.Close()
	d.f = nil
	return err
}
