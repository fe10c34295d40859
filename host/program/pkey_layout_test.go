package program

import (
	"reflect"
	"testing"
)

// TestPKeyLayout: keys stay at their index, new keys fill free entries in
// order with the default key at index 0 when free, leavers are cleared.
func TestPKeyLayout(t *testing.T) {
	tests := []struct {
		name string
		cur  []uint16
		want map[uint16]bool
		size int
		out  []uint16
		err  bool
	}{
		{"reset port", []uint16{0xFFFF, 0, 0, 0}, map[uint16]bool{0x7FFF: true, 2: false}, 4, []uint16{0xFFFF, 0x0002, 0, 0}, false},
		{"unknown port", nil, map[uint16]bool{3: true, 0x7FFF: false, 2: true}, 4, []uint16{0x7FFF, 0x8002, 0x8003, 0}, false},
		{"keys keep their index", []uint16{0xFFFF, 0x8005, 0x8002, 0}, map[uint16]bool{0x7FFF: true, 2: true, 4: false}, 4, []uint16{0xFFFF, 0x0004, 0x8002, 0}, false},
		{"membership bit flips in place", []uint16{0, 0x0003, 0xFFFF}, map[uint16]bool{3: true, 0x7FFF: false}, 3, []uint16{0, 0x8003, 0x7FFF}, false},
		{"default takes 0 when free", []uint16{0, 0x8002}, map[uint16]bool{0x7FFF: true, 2: true, 9: true}, 3, []uint16{0xFFFF, 0x8002, 0x8009}, false},
		{"invalid and duplicate entries cleared", []uint16{0x8000, 0x8002, 0x0002}, map[uint16]bool{2: true}, 3, []uint16{0, 0x8002, 0}, false},
		{"nothing wanted", []uint16{0xFFFF}, nil, 2, []uint16{0, 0}, false},
		{"too many", nil, map[uint16]bool{1: true, 2: true, 3: true}, 2, nil, true},
		{"already laid out", []uint16{0xFFFF, 0, 0x0002}, map[uint16]bool{0x7FFF: true, 2: false}, 3, []uint16{0xFFFF, 0, 0x0002}, false},
		{"a wanted key duplicated, another missing", []uint16{0x8002, 0x8002, 0}, map[uint16]bool{2: true, 3: true}, 3, []uint16{0x8002, 0x8003, 0}, false},
		{"a bit to flip", []uint16{0xFFFF, 0x0002}, map[uint16]bool{0x7FFF: true, 2: true}, 2, []uint16{0xFFFF, 0x8002}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := layout(tc.cur, tc.want, tc.size)
			if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.out) {
				t.Errorf("layout(%#04x, %v, %d) = %#04x, %v; want %#04x (error %v)", tc.cur, tc.want, tc.size, got, err, tc.out, tc.err)
			}
		})
	}
}
