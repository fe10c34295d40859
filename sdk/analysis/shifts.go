package analysis

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseShifts reads the --shifts flag the ibsm verify and ftcompare
// commands take into an Options.Shifts value: "auto" (ShiftsAuto), "all"
// (ShiftsAll), either in any case, or a non-negative sample size (0 skips
// the shift metric).
func ParseShifts(v string) (int, error) {
	switch strings.ToLower(v) {
	case "auto":
		return ShiftsAuto, nil
	case "all":
		return ShiftsAll, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q: give auto, all, 0 to skip, or a number of shifts to sample", v)
	}
	return n, nil
}
