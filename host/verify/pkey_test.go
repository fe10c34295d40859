package verify

import (
	"strings"
	"testing"

	"github.com/ibsm/ibsm/host/discovery"
)

func TestCheckPKeys(t *testing.T) {
	ca := discovery.PortRef{GUID: 0x10, Port: 1}
	sw := discovery.PortRef{GUID: 0x20, Port: 3}
	members := map[discovery.PortRef]map[uint16]bool{ca: {0x7FFF: true, 0x0002: false}}
	good := []uint16{0xFFFF, 0x0002, 0, 0}
	tests := []struct {
		name   string
		ca, sw []uint16
		err    string
	}{
		{"good", good, good, ""},
		{"switch port in another order", good, []uint16{0x0002, 0, 0xFFFF, 0}, ""},
		{"member lacks its key", []uint16{0xFFFF, 0, 0, 0}, good, "port 0x10/1 lacks P_Key 0x0002"},
		{"wrong membership bit", []uint16{0xFFFF, 0x8002, 0, 0}, good, "0x8002 with the wrong membership bit (entry 1): want limited"},
		{"non-member holds a key", []uint16{0xFFFF, 0x0002, 0x8009, 0}, good, "P_Key 0x8009 of a partition it is not a member of"},
		{"invalid key", []uint16{0xFFFF, 0x0002, 0x8000, 0}, good, "invalid P_Key 0x8000"},
		{"duplicate", []uint16{0xFFFF, 0x0002, 0x7FFF, 0}, good, "holds P_Key 0x7fff twice"},
		{"switch port differs", good, []uint16{0xFFFF, 0, 0, 0}, "port 0x20/3 (enforcing for 0x10/1) lacks P_Key 0x0002"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPKeys(PKeyTables{
				Members: members,
				Tables:  map[discovery.PortRef][]uint16{ca: tc.ca, sw: tc.sw},
				Enforce: map[discovery.PortRef]discovery.PortRef{sw: ca},
			}, 0)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
}
