package flood

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Unix(1000, 0)} }
func logger(buf *bytes.Buffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Debug})
}

func TestRatePerSource(t *testing.T) {
	c := newClock()
	var buf bytes.Buffer
	l := New(Config{Kind: "SA requests", Rate: 10, Burst: 20, Report: time.Hour, Now: c.now}, logger(&buf))
	allowed := func(src Source, n int) int {
		k := 0
		for i := 0; i < n; i++ {
			if l.Allow(src) {
				k++
			}
		}
		return k
	}
	if got := allowed(LID(5), 100); got != 20 {
		t.Fatalf("burst: %d of 100 allowed, want 20", got)
	}
	// Another source has its own bucket.
	if got := allowed(LID(6), 5); got != 5 {
		t.Fatalf("second source: %d of 5 allowed", got)
	}
	c.advance(time.Second)
	if got := allowed(LID(5), 100); got != 10 {
		t.Fatalf("after 1s at 10/s: %d allowed, want 10", got)
	}
	st := l.Stats()
	if st.Allowed != 35 || st.Dropped != 170 || st.Limited != 1 || st.Sources != 2 {
		t.Fatalf("stats %+v", st)
	}
	l.Flush()
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 2 {
		t.Fatalf("%d log lines, want 2 (one when lid 5 was first limited, one summary):\n%s", n, out)
	}
	for _, want := range []string{"dropping SA requests from this source", "source=\"lid 5\"", "SA requests dropped: 170", "top=\"lid 5: 170\"", "reasons=\"over rate: 170\""} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// TestBoundedLog: a thousand limited sources make FirstLines lines and one
// summary per interval, and the table stays bounded.
func TestBoundedLog(t *testing.T) {
	c := newClock()
	var buf bytes.Buffer
	l := New(Config{Kind: "traps", Rate: 1, Burst: 1, MaxSources: 100, Report: time.Hour, Now: c.now}, logger(&buf))
	for round := 0; round < 3; round++ {
		for i := 0; i < 1000; i++ {
			l.Allow(LID(uint16(i)))
			l.Allow(LID(uint16(i)))
			l.Drop(LID(uint16(i)), "queue full")
		}
		l.Flush()
		c.advance(2 * time.Second)
	}
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 3*(3+1) {
		t.Fatalf("%d log lines, want 12:\n%s", n, out)
	}
	if st := l.Stats(); st.Sources > 101 {
		t.Fatalf("table holds %d sources, bound 100 (+ overflow)", st.Sources)
	}
	if !strings.Contains(out, "other sources (table full)") {
		t.Fatalf("the overflow bucket is not reported:\n%s", out)
	}
}

func TestNoLimit(t *testing.T) {
	l := New(Config{Rate: -1}, nil)
	for i := 0; i < 100000; i++ {
		if !l.Allow(LID(1)) {
			t.Fatal("a disabled limit dropped")
		}
	}
}

func TestSourceOf(t *testing.T) {
	dr := make([]byte, 256)
	dr[1], dr[7] = 0x81, 2
	dr[192], dr[193], dr[194] = 1, 3, 5
	a := SourceOf(dr, 0xFFFF)
	dr[194] = 6
	b := SourceOf(dr, 0xFFFF)
	dr[195] = 9 // beyond the hop count: not part of the route
	if a == b || SourceOf(dr, 0xFFFF) != b || a&drBit == 0 {
		t.Fatalf("DR sources %v %v", a, b)
	}
	if got := SourceOf(dr[:100], 7); got != LID(7) {
		t.Fatalf("short DR MAD: %v", got)
	}
	lid := make([]byte, 256)
	lid[1] = 0x03
	if got := SourceOf(lid, 12); got != LID(12) || got.String() != "lid 12" {
		t.Fatalf("LID source %v", got)
	}
}
