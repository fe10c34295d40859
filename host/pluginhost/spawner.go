package pluginhost

import (
	"errors"
	"runtime"
	"sync"
)

var errSpawnerClosed = errors.New("plugin manager is closed")

// spawner runs launch functions on one OS thread that stays locked for the
// Manager's lifetime, so that Pdeathsig (which fires when the spawning thread
// exits) fires only when the host itself goes away. Only fork/exec runs
// here (procRunner.Start): the handshake and every RPC run elsewhere, so a
// plugin that hangs cannot hold the thread and block later launches.
type spawner struct {
	work chan func()
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

func newSpawner() *spawner {
	s := &spawner{work: make(chan func()), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread()
		// Never unlocked: when this goroutine returns (Manager.Close, after
		// every plugin was killed) the thread exits with it, and the kernel
		// SIGKILLs any plugin it spawned that is somehow still there.
		defer close(s.done)
		for {
			select {
			case f := <-s.work:
				f()
			case <-s.quit:
				return
			}
		}
	}()
	return s
}

// run executes f on the spawner thread and waits for it; after close it
// runs nothing and returns errSpawnerClosed.
func (s *spawner) run(f func()) error {
	ch := make(chan struct{})
	select {
	case s.work <- func() { defer close(ch); f() }:
	case <-s.quit:
		return errSpawnerClosed
	}
	<-ch
	return nil
}

// close stops the thread after the function it is running, if any.
func (s *spawner) close() {
	s.once.Do(func() { close(s.quit) })
	<-s.done
}
