// Package flood limits unsolicited MADs per source. Every MAD from the
// fabric is untrusted input: one host (or one broken HCA) must not be able
// to take the SM's time or fill its log. A Limiter keeps a token bucket per
// source (a source LID, or the directed route an SMP came by), a bounded
// table of sources, and counts what it dropped; the counts reach the log
// in a bounded number of lines: at most FirstLines "source is being
// limited" lines and one summary per Report interval, whatever the flood.
package flood

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Source names where a MAD came from.
type Source uint32

const (
	drBit = 1 << 16
	// Overflow is the bucket shared by sources that found the table full.
	Overflow Source = 1 << 17
)

// LID is the source of a LID-routed MAD (its SLID). SLIDs can be spoofed
// on some fabrics (ibsim keeps a non-zero SLID as sent); the table bound
// keeps a spoofer from growing memory.
func LID(l uint16) Source { return Source(l) }

// DR is the source of a directed-route SMP: its return path (hop count and
// the ports the fabric recorded), hashed to 16 bits.
func DR(hopCount uint8, returnPath []byte) Source {
	h := fnv.New32a()
	h.Write([]byte{hopCount})
	if n := int(hopCount) + 1; n < len(returnPath) {
		returnPath = returnPath[:n]
	}
	h.Write(returnPath)
	s := h.Sum32()
	return Source(drBit | (s^s>>16)&0xFFFF)
}

func (s Source) String() string {
	switch {
	case s == Overflow:
		return "other sources (table full)"
	case s&drBit != 0:
		return fmt.Sprintf("directed route #%04x", uint32(s)&0xFFFF)
	}
	return fmt.Sprintf("lid %d", uint32(s))
}

// Config sets a Limiter's limits. Zero values select the defaults.
type Config struct {
	// Kind names what is limited in log lines, in the plural ("SA
	// requests", "traps").
	Kind string
	// Rate is how many MADs per second one source may send; Burst how
	// many it may send at once. Rate < 0 disables the limit (drops for
	// other reasons are still counted).
	Rate  float64
	Burst int
	// MaxSources bounds the table (default 4096). Sources that find it
	// full share the Overflow bucket.
	MaxSources int
	// Report is the summary interval (default 10s).
	Report time.Duration
	// FirstLines is how many "now limiting" lines a Report interval may
	// carry (default 3); later sources appear in the summary only.
	FirstLines int
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Stats are a Limiter's counters since it was made. Allowed counts the
// MADs Allow let through (a later Drop, e.g. a full queue, may still drop
// them); Dropped counts every drop, for any reason.
type Stats struct {
	Allowed, Dropped uint64
	// Sources is the size of the table now.
	Sources int
	// Limited counts sources that had MADs dropped, over every interval.
	Limited uint64
}

type bucket struct {
	tokens float64
	last   time.Time
	// dropped in the current report window, per reason.
	dropped map[string]uint64
}

// Limiter is a per-source token bucket with drop counters. Safe for
// concurrent use.
type Limiter struct {
	cfg Config
	log hclog.Logger

	mu      sync.Mutex
	buckets map[Source]*bucket
	stats   Stats
	// The current report window.
	window    map[Source]bool // sources with drops in this window
	lines     int             // "now limiting" lines logged in this window
	scheduled bool
	since     time.Time // when this window's first drop came
	lastPurge time.Time
	timer     *time.Timer
}

// New returns a Limiter that logs to log.
func New(cfg Config, log hclog.Logger) *Limiter {
	if cfg.Kind == "" {
		cfg.Kind = "MADs"
	}
	if cfg.Burst <= 0 {
		cfg.Burst = max(1, int(cfg.Rate))
	}
	if cfg.MaxSources <= 0 {
		cfg.MaxSources = 4096
	}
	if cfg.Report <= 0 {
		cfg.Report = 10 * time.Second
	}
	if cfg.FirstLines <= 0 {
		cfg.FirstLines = 3
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Limiter{cfg: cfg, log: log, buckets: map[Source]*bucket{}, window: map[Source]bool{}}
}

// Allow takes a token from src's bucket and reports whether the MAD may be
// handled. A refused MAD is counted as dropped ("over rate").
func (l *Limiter) Allow(src Source) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Rate < 0 {
		l.stats.Allowed++
		return true
	}
	now := l.cfg.Now()
	src, b := l.bucketLocked(src, now)
	b.tokens = min(float64(l.cfg.Burst), b.tokens+now.Sub(b.last).Seconds()*l.cfg.Rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		l.stats.Allowed++
		return true
	}
	l.dropLocked(src, b, "over rate", now)
	return false
}

// Drop counts a MAD from src dropped for another reason (why), e.g. a full
// queue.
func (l *Limiter) Drop(src Source, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.cfg.Now()
	src, b := l.bucketLocked(src, now)
	l.dropLocked(src, b, why, now)
}

// Stats returns the counters.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Sources = len(l.buckets)
	return s
}

// bucketLocked finds or makes src's bucket; a full table purges idle
// buckets (at most once a second) and otherwise sends src to Overflow.
func (l *Limiter) bucketLocked(src Source, now time.Time) (Source, *bucket) {
	if b := l.buckets[src]; b != nil {
		return src, b
	}
	if len(l.buckets) >= l.cfg.MaxSources && now.Sub(l.lastPurge) >= time.Second {
		l.purgeLocked(now)
	}
	if len(l.buckets) >= l.cfg.MaxSources {
		src = Overflow
		if b := l.buckets[src]; b != nil {
			return src, b
		}
	}
	b := &bucket{tokens: float64(l.cfg.Burst), last: now}
	l.buckets[src] = b
	return src, b
}

// purgeLocked forgets buckets that are full again and have nothing to
// report: they behave exactly like new ones.
func (l *Limiter) purgeLocked(now time.Time) {
	l.lastPurge = now
	full := time.Duration(float64(l.cfg.Burst) / max(l.cfg.Rate, 1e-9) * float64(time.Second))
	for s, b := range l.buckets {
		if b.dropped == nil && now.Sub(b.last) >= full {
			delete(l.buckets, s)
		}
	}
}

func (l *Limiter) dropLocked(src Source, b *bucket, why string, now time.Time) {
	l.stats.Dropped++
	if b.dropped == nil {
		b.dropped = map[string]uint64{}
	}
	b.dropped[why]++
	if !l.window[src] {
		l.window[src] = true
		l.stats.Limited++
		if l.lines < l.cfg.FirstLines {
			l.lines++
			l.log.Warn(fmt.Sprintf("dropping %s from this source; counts follow every %s", l.cfg.Kind, l.cfg.Report),
				"source", src.String(), "reason", why, "rate_limit", l.rateText())
		}
	}
	if !l.scheduled {
		l.scheduled = true
		l.since = now
		l.timer = time.AfterFunc(l.cfg.Report, l.report)
	}
}

func (l *Limiter) rateText() string {
	if l.cfg.Rate < 0 {
		return "none"
	}
	return fmt.Sprintf("%g/s, burst %d", l.cfg.Rate, l.cfg.Burst)
}

// report logs one summary of the window that ends now and starts the next.
func (l *Limiter) report() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.scheduled { // else Flush reported it while this timer fired
		l.reportLocked()
	}
}

// Flush logs the summary of the current window now (if anything was
// dropped in it), e.g. before the SM exits.
func (l *Limiter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.scheduled {
		l.reportLocked()
	}
}

type srcCount struct {
	src Source
	n   uint64
	why map[string]uint64
}

func (l *Limiter) reportLocked() {
	l.scheduled = false
	var (
		total  uint64
		counts []srcCount
		reason = map[string]uint64{}
	)
	for src := range l.window {
		b := l.buckets[src]
		if b == nil {
			continue
		}
		var n uint64
		for why, k := range b.dropped {
			n += k
			reason[why] += k
		}
		total += n
		counts = append(counts, srcCount{src, n, b.dropped})
		b.dropped = nil
	}
	sort.Slice(counts, func(i, j int) bool {
		if counts[i].n != counts[j].n {
			return counts[i].n > counts[j].n
		}
		return counts[i].src < counts[j].src
	})
	var top []string
	for i, c := range counts {
		if i == 5 {
			top = append(top, fmt.Sprintf("and %d more", len(counts)-5))
			break
		}
		top = append(top, fmt.Sprintf("%s: %d", c.src, c.n))
	}
	var whys []string
	for why, k := range reason {
		whys = append(whys, fmt.Sprintf("%s: %d", why, k))
	}
	sort.Strings(whys)
	now := l.cfg.Now()
	l.log.Warn(fmt.Sprintf("%s dropped: %d in %s", l.cfg.Kind, total, now.Sub(l.since).Round(time.Millisecond)),
		"sources", len(counts), "top", strings.Join(top, ", "), "reasons", strings.Join(whys, ", "),
		"dropped_total", l.stats.Dropped, "within_rate_total", l.stats.Allowed, "rate_limit", l.rateText())
	l.window = map[Source]bool{}
	l.lines = 0
	l.purgeLocked(now)
}

// SourceOf is the source of a MAD that arrived with slid: the return path
// of a directed-route SMP (its SLID is the permissive LID), else the SLID.
func SourceOf(mad []byte, slid uint16) Source {
	const classSMPDR, madLen = 0x81, 256
	if len(mad) >= madLen && mad[1] == classSMPDR {
		return DR(mad[7], mad[192:256])
	}
	return LID(slid)
}
