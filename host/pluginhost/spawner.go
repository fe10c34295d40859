package pluginhost

import "runtime"

// spawner runs launch functions on one OS thread that stays locked for the
// Manager's lifetime, so that Pdeathsig (which fires when the spawning thread
// exits) fires only when the host itself goes away.
type spawner struct {
	work chan func()
	done chan struct{}
}

func newSpawner() *spawner {
	s := &spawner{work: make(chan func()), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread()
		// Never unlocked: when this goroutine returns (Manager.Close, after
		// every plugin was killed) the thread exits with it.
		defer close(s.done)
		for f := range s.work {
			f()
		}
	}()
	return s
}

// run executes f on the spawner thread and waits for it.
func (s *spawner) run(f func()) {
	ch := make(chan struct{})
	s.work <- func() { defer close(ch); f() }
	<-ch
}

func (s *spawner) close() {
	close(s.work)
	<-s.done
}
