package dump

import (
	"strings"
	"testing"

	"github.com/ibsm/ibsm/host/mcast"
)

func TestWriteMCFDBs(t *testing.T) {
	a, b := mcast.Blocks{}, mcast.Blocks{}
	a.SetPorts(0xC000, []uint8{1, 5})
	a.SetPorts(0xC001, []uint8{18})
	var sb strings.Builder
	if err := WriteMCFDBs(&sb, map[uint64]mcast.Blocks{0x20: a, 0x10: b}); err != nil {
		t.Fatal(err)
	}
	want := "\nSwitch 0x0000000000000020\nLID    : Out Port(s)\n0xC000 : 0x001  0x005 \n0xC001 : 0x012 \n"
	if sb.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", sb.String(), want)
	}
	sb.Reset()
	if err := WriteMCFDBs(&sb, nil); err != nil || sb.Len() != 0 {
		t.Fatalf("no groups: %q %v", sb.String(), err)
	}
}
