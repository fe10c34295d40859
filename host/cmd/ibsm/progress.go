package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ibsm/ibsm/host/app"
	"golang.org/x/sys/unix"
)

// progressInterval is how often the progress line is redrawn.
const progressInterval = 100 * time.Millisecond

// termProgress draws how far long interactive work has come (sm.Progress)
// on one line of a terminal, redrawn in place. A new phase is drawn at
// once (phases start on the sweep's own goroutine, which writes its log
// to the same terminal anyway), so every phase shows; Count only notes
// the state, for a ticker to draw, because counts come from the
// discovery's and the programmer's workers, some under their locks. Log
// lines go through Write: the progress line is cleared first and drawn
// again after them, so the two never mix.
type termProgress struct {
	w     io.Writer
	width func() int // the terminal's columns

	mu          sync.Mutex
	phase       string
	detail      string
	unit        string
	done, total int64
	started     time.Time // of the phase
	drawn       string    // what the line shows now ("" none)
	dirty       bool
	stop        chan struct{}
	stopped     chan struct{}
	closed      bool // Close ran: draw nothing more
}

// newTermProgress draws on w; start the ticker with run.
func newTermProgress(w io.Writer, width func() int) *termProgress {
	return &termProgress{w: w, width: width, stop: make(chan struct{}), stopped: make(chan struct{})}
}

// Phase implements sm.Progress.
func (p *termProgress) Phase(name, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if name != p.phase {
		p.started = time.Now()
		p.unit, p.done, p.total = "", 0, 0
	}
	p.phase, p.detail, p.dirty = name, detail, true
	if !p.closed {
		p.redraw(false)
	}
}

// Count implements sm.Progress. Counts arrive from many goroutines, not
// in order: the line keeps the highest.
func (p *termProgress) Count(unit string, done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if unit != p.unit {
		p.unit, p.done = unit, 0
	}
	p.done, p.total, p.dirty = max(p.done, done), total, true
}

// line is the progress line for the state as it is.
func (p *termProgress) line(now time.Time) string {
	if p.phase == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("ibsm: " + p.phase)
	if p.detail != "" {
		b.WriteString(": " + p.detail)
	}
	switch {
	case p.unit != "" && p.total > 0:
		fmt.Fprintf(&b, ", %s %d/%d (%d%%)", p.unit, p.done, p.total, 100*p.done/p.total)
	case p.unit != "":
		fmt.Fprintf(&b, ", %s %d", p.unit, p.done)
	}
	fmt.Fprintf(&b, " [%s]", now.Sub(p.started).Truncate(100*time.Millisecond))
	s := b.String()
	// A line wider than the terminal wraps, and \r then redraws only its
	// last part: cut it to fit.
	if w := p.width(); w > 1 && len([]rune(s)) > w-1 {
		s = string([]rune(s)[:w-2]) + "…"
	}
	return s
}

// redraw draws the line if it changed (or if force). Call with p.mu held.
func (p *termProgress) redraw(force bool) {
	if !p.dirty && !force {
		return
	}
	s := p.line(time.Now())
	if s == p.drawn && !force {
		return
	}
	io.WriteString(p.w, "\r\x1b[K"+s)
	p.drawn, p.dirty = s, false
}

// clear removes the line. Call with p.mu held.
func (p *termProgress) clear() {
	if p.drawn != "" {
		io.WriteString(p.w, "\r\x1b[K")
		p.drawn = ""
	}
}

// run redraws the line every progressInterval until Close.
func (p *termProgress) run() {
	t := time.NewTicker(progressInterval)
	defer func() { t.Stop(); close(p.stopped) }()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.dirty = p.dirty || p.phase != "" // the clock moves
			p.redraw(false)
			p.mu.Unlock()
		}
	}
}

// Write passes a log line through: the progress line steps aside for it.
func (p *termProgress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	had := p.drawn != ""
	p.clear()
	n, err := p.w.Write(b)
	if had {
		p.redraw(true)
	}
	return n, err
}

// Close stops drawing and removes the line, so what the command prints
// next starts on a clean line.
func (p *termProgress) Close() {
	close(p.stop)
	<-p.stopped
	p.mu.Lock()
	p.closed = true
	p.clear()
	p.phase = ""
	p.mu.Unlock()
}

// isTerminal reports whether f is a terminal that can redraw a line in
// place (TERM=dumb cannot).
func isTerminal(f *os.File) bool {
	if os.Getenv("TERM") == "dumb" {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// termWidth is f's width in columns (80 when it cannot be read).
func termWidth(f *os.File) func() int {
	return func() int {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
		return 80
	}
}

// progressHooks starts drawing progress on stderr when stderr is a
// terminal, and then routes the command's log through it if the log goes
// to stderr; otherwise it does nothing (the log stays as it is) and
// returns h unchanged. Call it before c.logger(); endProgress clears the
// line before the command prints its result.
func (c *common) progressHooks(h *app.Hooks) *app.Hooks {
	if c.prog != nil || !isTerminal(os.Stderr) {
		return h
	}
	c.prog = newTermProgress(os.Stderr, termWidth(os.Stderr))
	go c.prog.run()
	if c.logOut == nil {
		c.logOut = c.prog
	}
	if h == nil {
		h = &app.Hooks{}
	}
	h.Progress = c.prog
	return h
}

// phase starts a phase of the command's own (after the sweep's), if
// progress is drawn.
func (c *common) phase(name, detail string) {
	if c.prog != nil {
		c.prog.Phase(name, detail)
	}
}

// endProgress removes the progress line for good; the log, if it went
// through it, goes on to stderr.
func (c *common) endProgress() {
	if c.prog != nil {
		c.prog.mu.Lock()
		closed := c.prog.closed
		c.prog.mu.Unlock()
		if !closed {
			c.prog.Close()
		}
	}
}
