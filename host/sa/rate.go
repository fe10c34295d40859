package sa

import (
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// rateCodes maps PathRecord Rate codes (IBA 15.2.5.16, table 224) to their
// data rate in tenths of Gb/s. The codes are not ordered by speed, so every
// comparison goes through the rate.
var rateCodes = [...]struct {
	code uint8
	dgbs int // deci-Gb/s
}{
	{2, 25}, {5, 50}, {3, 100}, {11, 140}, {6, 200}, {15, 250}, {19, 280}, {4, 300},
	{7, 400}, {20, 500}, {12, 560}, {8, 600}, {9, 800}, {16, 1000}, {13, 1120},
	{10, 1200}, {14, 1680}, {17, 2000}, {18, 3000}, {21, 4000}, {22, 6000},
	{23, 8000}, {24, 12000},
} // ascending by rate

// rateOf is the data rate of a code, 0 for reserved codes.
func rateOf(code uint8) int {
	for _, r := range rateCodes {
		if r.code == code {
			return r.dgbs
		}
	}
	return 0
}

// rateCode is the code of the fastest defined rate not above dgbs (2.5 Gb/s
// for anything slower).
func rateCode(dgbs int) uint8 {
	c := rateCodes[0].code
	for _, r := range rateCodes {
		if r.dgbs > dgbs {
			break
		}
		c = r.code
	}
	return c
}

// rateBelow is the code of the fastest defined rate strictly below dgbs, or
// 0 if there is none.
func rateBelow(dgbs int) uint8 {
	var c uint8
	for _, r := range rateCodes {
		if r.dgbs >= dgbs {
			break
		}
		c = r.code
	}
	return c
}

// rateAbove is the code of the slowest defined rate strictly above dgbs,
// or 0 if there is none.
func rateAbove(dgbs int) uint8 {
	for _, r := range rateCodes {
		if r.dgbs > dgbs {
			return r.code
		}
	}
	return 0
}

// lanes decodes LinkWidthActive.
func lanes(w uint8) int {
	switch w {
	case smp.LinkWidth1X:
		return 1
	case smp.LinkWidth2X:
		return 2
	case smp.LinkWidth4X:
		return 4
	case smp.LinkWidth8X:
		return 8
	case smp.LinkWidth12X:
		return 12
	}
	return 0
}

// laneRate decodes LinkSpeedActive (SDR, DDR, QDR) or, when non-zero,
// LinkSpeedExtActive (FDR, EDR, HDR, NDR), in deci-Gb/s of data.
func laneRate(speed, ext uint8) int {
	switch ext {
	case 1:
		return 140
	case 2:
		return 250
	case 4:
		return 500
	case 8:
		return 1000
	}
	switch speed {
	case 1:
		return 25
	case 2:
		return 50
	case 4:
		return 100
	}
	return 0
}

// portRate is the active data rate of a port, 0 if unknown.
func (x *index) portRate(r topology.PortRef) int {
	p := x.topo.Port(r)
	var ext uint8
	if pi, ok := x.portInfo(r.Node, r.Port); ok && pi.CapabilityMask&smp.CapIsExtendedSpeeds != 0 {
		ext = pi.LinkSpeedExtActive
	}
	return lanes(p.Width) * laneRate(p.Speed, ext)
}

// portMTU is a port's MTUCap, 0 if unknown.
func (x *index) portMTU(r topology.PortRef) uint8 {
	if pi, ok := x.portInfo(r.Node, r.Port); ok {
		return pi.MTUCap
	}
	return 0
}
