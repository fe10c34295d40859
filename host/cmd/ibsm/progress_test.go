package main

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTerm is a terminal of width columns that keeps what was written.
type fakeTerm struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (f *fakeTerm) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(b)
}

func (f *fakeTerm) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.String()
}

// screen replays what a terminal shows: \r returns to the line's start,
// ESC[K erases to its end, \n ends the line.
func screen(out string) []string {
	var lines []string
	var cur []rune
	col := 0
	rs := []rune(out)
	for i := 0; i < len(rs); i++ {
		switch {
		case rs[i] == '\r':
			col = 0
		case rs[i] == '\n':
			lines = append(lines, string(cur))
			cur, col = nil, 0
		case rs[i] == '\x1b' && i+2 < len(rs) && rs[i+1] == '[' && rs[i+2] == 'K':
			cur = cur[:col]
			i += 2
		default:
			if col < len(cur) {
				cur[col] = rs[i]
			} else {
				cur = append(cur, rs[i])
			}
			col++
		}
	}
	return append(lines, string(cur))
}

// TestTermProgress drives the progress line as a sweep and a logger
// would and reads the fake terminal's screen.
func TestTermProgress(t *testing.T) {
	type step struct {
		phase, detail string // Phase when phase != ""
		unit          string // Count when unit != ""
		done, total   int64
		log           string // a log line written through
		draw          bool   // let the ticker draw
	}
	cases := []struct {
		name  string
		width int
		steps []step
		// the screen's lines: want[last] is the line being redrawn
		want []string
		// the line being redrawn must start with this (time suffix varies)
		prefix string
	}{
		{name: "discovery counts nodes", width: 120,
			steps:  []step{{phase: "discovery"}, {unit: "nodes found", done: 1}, {unit: "nodes found", done: 612}, {draw: true}},
			prefix: "ibsm: discovery, nodes found 612 ["},
		{name: "counts out of order keep the highest", width: 120,
			steps:  []step{{phase: "programming"}, {unit: "LFT blocks", done: 9, total: 10}, {unit: "LFT blocks", done: 7, total: 10}, {draw: true}},
			prefix: "ibsm: programming, LFT blocks 9/10 (90%) ["},
		{name: "a new phase resets the count", width: 120,
			steps:  []step{{phase: "discovery"}, {unit: "nodes found", done: 612}, {phase: "routing", detail: "plugin updn: Route"}, {draw: true}},
			prefix: "ibsm: routing: plugin updn: Route ["},
		{name: "a plugin call changes the detail, not the phase", width: 120,
			steps:  []step{{phase: "routing", detail: "plugin updn: Route"}, {phase: "routing", detail: "plugin single: AssignVLs"}, {draw: true}},
			prefix: "ibsm: routing: plugin single: AssignVLs ["},
		{name: "log lines step around the progress line", width: 120,
			steps: []step{{phase: "discovery"}, {unit: "nodes found", done: 5}, {draw: true}, {log: "[INFO] ibsm.sm: this SM is master\n"},
				{unit: "nodes found", done: 8}, {draw: true}},
			want:   []string{"[INFO] ibsm.sm: this SM is master"},
			prefix: "ibsm: discovery, nodes found 8 ["},
		{name: "cut to the terminal's width", width: 30,
			steps:  []step{{phase: "routing", detail: "plugin a-very-long-plugin-name: Route"}, {draw: true}},
			prefix: "ibsm: routing: plugin a-very…"},
		{name: "nothing drawn before a phase", width: 80,
			steps: []step{{log: "starting\n"}, {draw: true}},
			want:  []string{"starting"}, prefix: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			term := &fakeTerm{}
			p := newTermProgress(term, func() int { return c.width })
			for _, s := range c.steps {
				switch {
				case s.phase != "":
					p.Phase(s.phase, s.detail)
				case s.unit != "":
					p.Count(s.unit, s.done, s.total)
				case s.log != "":
					p.Write([]byte(s.log))
				case s.draw:
					p.mu.Lock()
					p.redraw(false)
					p.mu.Unlock()
				}
			}
			lines := screen(term.String())
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, c.prefix) || (c.prefix == "" && last != "") {
				t.Errorf("progress line %q, want it to start with %q (output %q)", last, c.prefix, term.String())
			}
			if got := lines[:len(lines)-1]; strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("lines above the progress line %q, want %q", got, c.want)
			}
			if n := len([]rune(last)); n >= c.width {
				t.Errorf("progress line of %d runes on a %d-column terminal wraps", n, c.width)
			}
			p.closed = true // not started: nothing to stop
			p.mu.Lock()
			p.clear()
			p.mu.Unlock()
			if lines := screen(term.String()); lines[len(lines)-1] != "" {
				t.Errorf("after clear the line shows %q", lines[len(lines)-1])
			}
		})
	}
}

// TestTermProgressTicker: the ticker draws without being asked, Close
// stops it and leaves a clean line, and log lines after Close pass
// through untouched.
func TestTermProgressTicker(t *testing.T) {
	term := &fakeTerm{}
	p := newTermProgress(term, func() int { return 100 })
	go p.run()
	p.Phase("discovery", "")
	p.Count("nodes found", 42, 0)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(term.String(), "nodes found 42") {
		if time.Now().After(deadline) {
			t.Fatalf("the ticker drew nothing in 5s: %q", term.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Close()
	p.Write([]byte("after\n"))
	p.Phase("routing", "") // too late: nobody draws
	time.Sleep(3 * progressInterval)
	lines := screen(term.String())
	if got := strings.Join(lines, "|"); got != "after|" {
		t.Errorf("screen after Close %q, want the log line alone", got)
	}
	if strings.Contains(term.String(), "routing") {
		t.Errorf("drawn after Close: %q", term.String())
	}
}

// TestProgressOffWithoutTerminal: when stderr is not a terminal the
// command's log and hooks stay as they are.
func TestProgressOffWithoutTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(w) {
		t.Fatal("a pipe is taken for a terminal")
	}
	saved := os.Stderr
	os.Stderr = w
	defer func() { os.Stderr = saved }()
	var c common
	if h := c.progressHooks(nil); h != nil || c.prog != nil || c.logOut != nil {
		t.Errorf("progress on a pipe: hooks %v, prog %v, log %v", h, c.prog, c.logOut)
	}
	c.phase("analysis", "") // no-ops
	c.endProgress()
}
