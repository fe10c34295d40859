package sim

import (
	"maps"
	"testing"

	"github.com/ibsm/ibsm/transport/smp"
)

// setMFT sets the position-0 mask of mlid on the switch at path.
func (h *harness) setMFT(mlid uint16, ports []uint8, path ...uint8) {
	h.t.Helper()
	block, i := smp.MFTBlockOf(mlid)
	var b smp.MFTBlock
	if r := h.drGet(smp.AttrMulticastForwardingTable, uint32(block), path...); r != nil {
		_ = b.Unmarshal(r.Data[:])
	}
	b[i] = 0
	for _, p := range ports {
		b[i] |= 1 << p
	}
	mod, err := smp.MFTMod(0, block)
	if err != nil {
		h.t.Fatal(err)
	}
	if r := h.drSet(&b, mod, path...); r == nil || r.Status != 0 {
		h.t.Fatalf("MFT Set on %v: %+v", path, r)
	}
}

func TestMFTGetSetAndProbe(t *testing.T) {
	h := newHarness(t)
	const mlid = 0xC021 // block 1, index 1
	sw1, sw2, sw3 := []uint8{1}, []uint8{1, 3}, []uint8{1, 3, 5}
	h.setMFT(mlid, []uint8{1, 2, 3}, sw1...)
	h.setMFT(mlid, []uint8{1, 3, 5}, sw2...)
	h.setMFT(mlid, []uint8{1, 2}, sw3...)

	// Read back: block 1 position 0 holds the mask, other MLIDs are empty.
	r := h.drGet(smp.AttrMulticastForwardingTable, 1, sw2...)
	var b smp.MFTBlock
	if err := b.Unmarshal(r.Data[:]); err != nil || r.Status != 0 || b[1] != 1<<1|1<<3|1<<5 || b[0] != 0 {
		t.Fatalf("MFT Get: status %#x block %v", r.Status, b)
	}
	// An 8-port switch has one position; a second is an invalid field.
	if r := h.drGet(smp.AttrMulticastForwardingTable, 1<<28, sw2...); r.Status != smp.StatusInvalidField {
		t.Fatalf("position 1 on an 8-port switch: status %#x", r.Status)
	}
	if r := h.drGet(smp.AttrMulticastForwardingTable, 0, 1, 3, 5, 2); r.Status != smp.StatusUnsupportedMethodAttr {
		t.Fatalf("MFT Get on a CA: status %#x", r.Status)
	}
	var si smp.SwitchInfo
	if r := h.drGet(smp.AttrSwitchInfo, 0, sw1...); si.Unmarshal(r.Data[:]) != nil || si.MulticastFDBCap != MulticastFDBCap {
		t.Fatalf("SwitchInfo.MulticastFDBCap = %d", si.MulticastFDBCap)
	}

	got, _, err := h.fab.ProbeMulticast(gH1, 1, mlid)
	if err != nil {
		t.Fatal(err)
	}
	want := map[Delivery]int{{gH2, 1}: 1, {gH3, 1}: 1, {gH4, 1}: 1}
	if !maps.Equal(got, want) {
		t.Fatalf("probe from h1 reached %v, want %v", got, want)
	}
	m, err := h.fab.MFT(gSw3)
	if err != nil || len(m) != 1 || len(m[mlid]) != 2 {
		t.Fatalf("MFT(sw3) = %v, %v", m, err)
	}

	// Both sw1-sw2 cables in the mask: copies double back and forth and
	// never stop; the probe says so instead of spinning.
	h.setMFT(mlid, []uint8{1, 2, 3, 4}, sw1...)
	h.setMFT(mlid, []uint8{1, 3, 4, 5}, sw2...)
	if _, steps, err := h.fab.ProbeMulticast(gH1, 1, mlid); err == nil {
		t.Fatalf("looping MFTs probed without error after %d steps", steps)
	}
	if _, _, err := h.fab.ProbeMulticast(gH1, 1, 0x10); err == nil {
		t.Fatal("probe to a unicast LID accepted")
	}
}
