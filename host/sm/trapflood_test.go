package sm_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestHostileTraps: a link trap naming a port its switch does not have is
// ignored (it used to force a full re-discovery at every trap), and a flood
// of traps from one source is cut to the per-source rate, counted in a
// bounded log, while the traps that pass still coalesce into few sweeps.
func TestHostileTraps(t *testing.T) {
	t.Parallel()
	r := startTrapRig(t, sm.Options{TrapCoalesce: 30 * time.Millisecond, TrapMinInterval: 300 * time.Millisecond}, false, 1024)
	f, fab, sink, reps, stop := r.f, r.fab, r.sink, r.reps, r.stop
	smLID := r.smLID()
	l := switchLinks(f)[0]
	swLID := r.lidOf(l.B.GUID)
	sender := trapSender(t, fab, l.B.GUID)

	// Port 200 of a 4-port switch.
	bad, err := smp.NewLinkTrap(smp.TrapLinkIntegrity, smp.ProducerSwitch, swLID, 200)
	must(t, err)
	sendTrap(t, sender, smLID, swLID, bad, 1)
	select {
	case r := <-reps:
		t.Fatalf("a link trap on a port the switch lacks made a sweep: %+v", r)
	case <-time.After(400 * time.Millisecond):
	}
	if !strings.Contains(sink.String(), "link trap names a port the switch does not have") {
		t.Fatalf("not warned:\n%s", sink.String())
	}

	// 2,000 traps 128 from one switch as fast as they go: at most the burst
	// of 200 passes (fewer if the sweep loop's queue is full: those are
	// dropped too), the rest is dropped and counted.
	sendStart := time.Now()
	for i := 0; i < 2000; i++ {
		sendTrap(t, sender, smLID, swLID, smp.NewTrap128(swLID), uint64(10+i))
	}
	sendTime := time.Since(sendStart)
	time.Sleep(time.Second)
	stop()
	traps, sweeps := 0, 0
	for len(reps) > 0 {
		r := <-reps
		traps += r.Traps
		sweeps++
	}
	if traps < 10 || traps > 250 || sweeps > 6 {
		t.Fatalf("%d traps in %d sweeps answered the flood; want the per-source burst (200) in a few", traps, sweeps)
	}
	// The demux logs the counts when it ends, after Run returned.
	re := regexp.MustCompile(`traps dropped: \d+ .*dropped_total=(\d+) within_rate_total=(\d+)`)
	out := sink.String()
	for end := time.Now().Add(5 * time.Second); !re.MatchString(out) && time.Now().Before(end); out = sink.String() {
		time.Sleep(10 * time.Millisecond)
	}
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no trap counter in the log:\n%s", out)
	}
	if !strings.Contains(out, "over rate: ") {
		t.Fatalf("the counter does not say why:\n%s", out)
	}
	// At most the burst and what the rate refilled while they went passed
	// the limit (the transport's own queue may have dropped some before).
	dropped, _ := strconv.Atoi(m[1])
	allowed, _ := strconv.Atoi(m[2])
	// The demux may still be taking the last traps (and refilling) a
	// moment after the sender's loop returned: half a second of slack.
	if dropped < 500 || allowed < 150 || float64(allowed) > 200+100*(sendTime.Seconds()+0.5) {
		t.Fatalf("%d traps dropped, %d within the limit in %s; want at most 200 + 100/s within", dropped, allowed, sendTime)
	}
	if n := strings.Count(out, "\n"); n > 60 {
		t.Fatalf("%d log lines for one trap flood:\n%s", n, out)
	}
}
