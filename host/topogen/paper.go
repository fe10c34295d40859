package topogen

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/ibsm/ibsm/transport/netfile"
)

// Paper is one random fabric of the families the project's papers evaluate
// on, checked against what each paper says, and built with Random or RRG.
// Seed is the instance: the papers average over 32 (set 000), 100 (set
// 001) or 10 (set 003) random instances per configuration.
//
//   - "000" (Nienaber, Yuan and Duan, "On LID Assignment in InfiniBand
//     Networks" (ANCS 2007), §5): Switches 16, 32 or 64 with average
//     inter-switch degree 8 (a GT-ITM flat random graph; here a uniform
//     simple graph with exactly 4·Switches cables, redrawn until
//     connected) and CAs 128, 256 or 512 machines placed uniformly at
//     random. The paper gives no port count: switches declare the most
//     any switch needs (CAs + neighbours; about 40–55 ports at 512/16).
//   - "001" (Kawano et al., "ACRO: Assignment of Channels in Reverse Order
//     to Make Arbitrary Routing Deadlock-free", §IV): random regular
//     graphs, Switches 64 or 256, Degree 3..12 inter-switch ports ("the
//     degree corresponds to the number of ports of a switch"); the paper
//     routes switch to switch, so each switch carries one CA to give it
//     traffic (CAs is ignored).
//   - "003" (López, Flich and Duato, "Deadlock-free Routing in InfiniBand
//     through Destination Renaming" (ICPP 2001), §5): each switch 4 hosts
//     and 4 links to other switches, neighbours joined by one link only, 8
//     to 64 switches; Degree sets 3 to 8 links per switch (its Table 6 uses
//     3, 4, 5 and 8 on 64 switches).
//   - "rrg512": the 512-switch random 12-regular graph with 4 CAs per
//     switch (2,048 CAs) the routing+VL time budget is set on.
type Paper struct {
	Set         string
	Switches    int
	CAs         int
	Degree      int
	Seed        int64
	SwitchPorts int
	Cable       Cable
}

// Args is the 'ibsm topo' command line (the arguments after "topo") that
// writes p's fabric.
func (p Paper) Args() []string {
	args := []string{"paper", "--set", p.Set, "--switches", strconv.Itoa(p.Switches)}
	if p.CAs != 0 {
		args = append(args, "--cas", strconv.Itoa(p.CAs))
	}
	if p.Degree != 0 {
		args = append(args, "--degree", strconv.Itoa(p.Degree))
	}
	return append(args, "--seed", strconv.FormatInt(p.Seed, 10))
}

// PaperSets lists the Set names Paper accepts.
func PaperSets() []string { return []string{"000", "001", "003", "rrg512"} }

// PaperConfigs lists every configuration a set reports on, with Seed 0
// (set the instance before generating).
func PaperConfigs(set string) []Paper {
	var out []Paper
	switch set {
	case "000":
		for _, s := range []int{16, 32, 64} {
			for _, m := range []int{128, 256, 512} {
				out = append(out, Paper{Set: set, Switches: s, CAs: m})
			}
		}
	case "001":
		for _, s := range []int{64, 256} {
			for d := 4; d <= 12; d++ {
				out = append(out, Paper{Set: set, Switches: s, Degree: d})
			}
		}
	case "003":
		for _, s := range []int{8, 16, 32, 64} {
			out = append(out, Paper{Set: set, Switches: s, Degree: 4})
		}
	case "rrg512":
		out = append(out, Paper{Set: set, Switches: 512, Degree: 12})
	}
	return out
}

// Base returns the plain generator for p after checking p against its
// paper; use random or rrg directly for other sizes.
func (p Paper) Base() (Generator, error) {
	switch p.Set {
	case "000":
		if !slices.Contains([]int{16, 32, 64}, p.Switches) || !slices.Contains([]int{128, 256, 512}, p.CAs) {
			return nil, fmt.Errorf("topogen: paper 000 uses 16, 32 or 64 switches and 128, 256 or 512 machines, not %d switches and %d machines; use 'ibsm topo random --degree 8' for other sizes", p.Switches, p.CAs)
		}
		return Random{Switches: p.Switches, Degree: 8, CAs: p.CAs, Seed: p.Seed, SwitchPorts: p.SwitchPorts, Cable: p.Cable}, nil
	case "001":
		if p.Switches != 64 && p.Switches != 256 {
			return nil, fmt.Errorf("topogen: paper 001 uses 64 or 256 switches, not %d; use 'ibsm topo rrg' for other sizes", p.Switches)
		}
		if p.Degree < 3 || p.Degree > 12 {
			return nil, fmt.Errorf("topogen: paper 001 uses degree 3 to 12, not %d; give --degree", p.Degree)
		}
		return RRG{Switches: p.Switches, NetPorts: p.Degree, CAsPerSwitch: 1, Seed: p.Seed, SwitchPorts: p.SwitchPorts, Cable: p.Cable}, nil
	case "003":
		d := p.Degree
		if d == 0 {
			d = 4
		}
		if p.Switches < 8 || p.Switches > 64 {
			return nil, fmt.Errorf("topogen: paper 003 uses 8 to 64 switches, not %d; use 'ibsm topo rrg --ports 4 --cas 4' for other sizes", p.Switches)
		}
		if d < 3 || d > 8 {
			return nil, fmt.Errorf("topogen: paper 003 uses 4 links per switch (3 to 8 in its Table 6), not %d", d)
		}
		return RRG{Switches: p.Switches, NetPorts: d, CAsPerSwitch: 4, Seed: p.Seed, SwitchPorts: p.SwitchPorts, Cable: p.Cable}, nil
	case "rrg512":
		if (p.Switches != 0 && p.Switches != 512) || (p.Degree != 0 && p.Degree != 12) {
			return nil, fmt.Errorf("topogen: rrg512 is fixed at 512 switches of degree 12; use 'ibsm topo rrg' for other sizes")
		}
		return RRG{Switches: 512, NetPorts: 12, CAsPerSwitch: 4, Seed: p.Seed, SwitchPorts: p.SwitchPorts, Cable: p.Cable}, nil
	}
	return nil, fmt.Errorf("topogen: unknown paper set %q; use one of %v", p.Set, PaperSets())
}

// Generate draws the fabric.
func (p Paper) Generate() (*netfile.File, error) {
	g, err := p.Base()
	if err != nil {
		return nil, err
	}
	return g.Generate()
}
