package sm_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestBadMKeyTrap: trap 256 (a port refused an SMP with a wrong M_Key) is
// reported with who was refused and what was asked, and makes no sweep.
func TestBadMKeyTrap(t *testing.T) {
	t.Parallel()
	r := startTrapRig(t, sm.Options{TrapCoalesce: 30 * time.Millisecond}, false, 16)
	sw := switchLinks(r.f)[0].B
	smLID, swLID := r.smLID(), r.lidOf(sw.GUID)

	n := smp.NewTrap256(smp.ProducerSwitch, smp.Trap256{LID: swLID, Method: smp.MethodSet, AttrID: smp.AttrPortInfo,
		AttrMod: 3, MKey: 0xbad, DRNotice: true, DRHops: 2, DRReturnPath: [30]byte{0, 5, 1}})
	sendTrap(t, trapSender(t, r.fab, sw.GUID), smLID, swLID, n, 1)
	want := []string{"wrong M_Key (trap 256)", fmt.Sprintf("port_lid=%d", swLID), fmt.Sprintf("port_guid=0x%016x", sw.GUID),
		"attr=0x0015", "m_key=0x0000000000000bad", "directed_route_hops=2", `return_path="[0 5]"`}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end) && !strings.Contains(r.sink.String(), want[0]); {
		time.Sleep(10 * time.Millisecond)
	}
	out := r.sink.String()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the trap 256 warning lacks %q:\n%s", w, out)
		}
	}
	select {
	case rep := <-r.reps:
		t.Fatalf("trap 256 made a sweep: %+v", rep)
	case <-time.After(300 * time.Millisecond):
	}
}
