package mad

import (
	"strconv"
	"testing"
)

// TestSlots: what put(i) kept, take(i) returns once, whether i's ring slot
// was free or held by another index still in flight (the map's).
func TestSlots(t *testing.T) {
	type op struct {
		put  bool
		i    int
		want string // take's
	}
	tests := []struct {
		name string
		ops  []op
	}{
		{"in turn", []op{{true, 0, ""}, {true, 1, ""}, {false, 0, "0"}, {false, 1, "1"}}},
		{"a late one shares its slot", []op{{true, 5, ""}, {true, 5 + slotsLen, ""}, {true, 5 + 2*slotsLen, ""},
			{false, 5 + slotsLen, "1029"}, {false, 5, "5"}, {false, 5 + 2*slotsLen, "2053"}}},
		{"the slot is free again after take", []op{{true, 7, ""}, {false, 7, "7"}, {true, 7 + slotsLen, ""}, {false, 7 + slotsLen, "1031"}, {false, 7, ""}}},
		{"taken twice", []op{{true, 3, ""}, {false, 3, "3"}, {false, 3, ""}}},
		{"never put", []op{{false, 9, ""}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s slots[string]
			for k, o := range tc.ops {
				if o.put {
					s.put(o.i, itoa(o.i))
					continue
				}
				if got := s.take(o.i); got != o.want {
					t.Fatalf("op %d: take(%d) = %q, want %q", k, o.i, got, o.want)
				}
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
