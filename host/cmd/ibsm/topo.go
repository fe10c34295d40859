package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/ibsm/ibsm/host/topogen"
)

// cmdTopo is 'ibsm topo': args[0] is the kind, the rest its flags. It
// writes the topology file to w, or the help text for -h.
func cmdTopo(args []string, w io.Writer) error {
	if len(args) == 0 {
		return errors.New("topo: missing topology kind; run 'ibsm topo -h' for kinds and examples")
	}
	if a := args[0]; a == "-h" || a == "-help" || a == "--help" || a == "help" {
		_, err := io.WriteString(w, topoUsage)
		return err
	}
	g, err := topogen.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs, err := topogen.FlagSet(args[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "usage: ibsm topo %s [flags]\n\n%s\nFlags:\n", fs.Name(), topoKindHelp[fs.Name()])
		fs.SetOutput(w)
		fs.PrintDefaults()
		return nil
	}
	if err != nil {
		return err
	}
	_, err = topogen.WriteFile(w, g, args)
	return err
}

const topoUsage = `usage: ibsm topo <kind> [flags] > fabric.net

Writes a seeded, reproducible fabric in ibnetdiscover/ibsim topology format.
Kinds:
  fat-tree (ft)  folded-Clos fat trees, k-ary n-trees and XGFTs
  ring           n switches in a cycle
  torus, mesh    k-ary n-cubes with or without wrap-around links
  random         random irregular switch graph (GT-ITM style), CAs placed at random
  rrg            random regular graph (Jellyfish)
  paper          the random fabrics of papers 000, 001, 003 and the 512-switch RRG, checked
  dragonfly      groups of fully connected switches, one global cable per group pair
  hyperx         a grid whose every dimension is fully connected (trunked --links)
  kautz          the Kautz graph K(d,k): (d+1)·d^k switches, d cables out and in each
  file           an existing topology file (--in FILE), to degrade it

Examples:
  ibsm topo fat-tree --radix 36 --levels 2          # 648 CAs, 54 switches
  ibsm topo fat-tree --radix 36 --levels 3          # 11,664 CAs, 1,620 switches
  ibsm topo ft --arity 4 --levels 3                 # 4-ary 3-tree: 64 CAs, 48 switches
  ibsm topo ft --children 8,16 --parents 1,4 --cas 6
  ibsm topo ring --switches 6 --cas 1
  ibsm topo torus --dims 4x4x4 --cas 2
  ibsm topo mesh --dims 8x8 --cas 1
  ibsm topo dragonfly --a 8 --p 4 --h 4             # 33 groups, 264 switches, 1,056 CAs
  ibsm topo hyperx --dims 12x8 --cas 7              # 96 switches, 672 CAs
  ibsm topo kautz --degree 4 --diameter 3 --cas 4   # K(4,3): 320 switches, 1,280 CAs
  ibsm topo random --switches 32 --degree 8 --cas 256 --seed 7
  ibsm topo rrg --switches 512 --ports 12 --cas 4 --seed 1
  ibsm topo paper --set 000 --switches 64 --cas 512 --seed 3   # instance 3 of 512/64
  ibsm topo paper --set 003 --switches 32 --seed 1
  ibsm topo ft --radix 36 --levels 2 --remove-links 0.01 --seed 7
  ibsm topo file --in fabric.net --remove-links 0.05 --remove-switches 0.02 --seed 3

Run 'ibsm topo <kind> -h' for the flags of one kind. Every kind also takes
--width (1x 2x 4x 8x 12x, default 4x) and --speed (SDR DDR QDR FDR EDR HDR NDR,
default QDR), and --switch-ports to declare more ports than the topology uses.

Degraded fabrics (every kind): --remove-links F removes floor(F x L) of the L
switch-to-switch cables, --remove-switches F removes floor(F x S) of the S
switches (only switches without CAs are eligible), both drawn with --seed; CA
cables are never removed. Draws that split the fabric are redrawn from the
same seed unless --allow-disconnected. The file header says what was removed.

ibsim 0.10 defaults to 2048 nodes and 256 switches; the file's first comment
lines give the -N/-S/-P/-L flags that load it.
`

var topoKindHelp = map[string]string{
	"fat-tree": `Fat trees. Give exactly one of:
  --radix k [--levels n]       the maximal folded Clos of k-port switches (default 2 levels):
                               2(k/2)^n CAs; n=2: k leaves, k/2 spines; n=3: k pods of k/2 leaves
                               and k/2 spines, (k/2)^2 cores
  --arity k --levels n         the k-ary n-tree: k^n CAs, n levels of k^(n-1) switches of 2k ports
  --children m1,..,mn --parents 1,w2,..,wn
                               XGFT(n; m; w): a level-i switch has m_i children and w_(i+1) parents
Ports on every switch: down ports first (CA c of a leaf on port c+1, child c on ports
c*p+1..c*p+p with p parallel cables), then up ports (parent b on the b-th group).
`,
	"ring": `A ring of --switches switches, each with --cas CAs on ports 1..cas; port cas+1 goes to
the next switch, cas+2 to the previous one.
`,
	"torus": `A k-ary n-cube with wrap-around links. --dims 4x4x4 (or 4,4,4); switch (x,y,z) carries
--cas CAs on ports 1..cas, then ports cas+2d+1 / cas+2d+2 go to its +/- neighbour in dimension d.
`,
	"mesh": `A grid without wrap-around links. --dims 8x8 (or 8,8); switch ports as for torus, with
the boundary ports left unconnected.
`,
	"random": `A random irregular fabric (Nienaber et al. §5): --switches switches with round(switches*degree/2)
cables drawn uniformly (average inter-switch degree --degree), redrawn until connected, and --cas
CAs in total, each on a switch chosen uniformly. CAs use the lowest ports, then the neighbours in
ascending order. Same --seed, same file.
`,
	"file": `An existing ibnetdiscover/ibsim topology file, --in FILE, re-emitted (with its node
order, names and GUIDs) after the optional --remove-links / --remove-switches.
`,
	"paper": `A random fabric exactly as one of the papers builds it (the seed is the instance):
  --set 000 --switches 16|32|64 --cas 128|256|512   average inter-switch degree 8, machines
                                                    placed uniformly (Nienaber/Yuan/Duan §5)
  --set 001 --switches 64|256 --degree 3..12        random regular, one CA per switch (ACRO)
  --set 003 --switches 8..64 [--degree 3..8]        4 hosts and 4 single links per switch
                                                    (destination renaming §5; Table 6
                                                    varies the links from 3 to 8)
  --set rrg512                                      512 switches, degree 12, 4 CAs each
`,
	"dragonfly": `A dragonfly (Kim et al., ISCA 2008): --groups groups (default a*h+1) of --a switches,
all-to-all inside a group, each switch with --p CAs (ports 1..p), a-1 local ports, then --h
global ports; global cables in the consecutive arrangement, one per pair of groups at a*h+1.
`,
	"hyperx": `A HyperX (Ahn et al., SC 2009): switches on a grid of --dims (e.g. 12x8), each cabled to
every switch that differs in one coordinate, --links parallel cables per pair, --cas CAs on
ports 1..cas; then per dimension, per other coordinate ascending, the links' ports.
`,
	"kautz": `The Kautz graph K(--degree d, --diameter k): a switch per word of k+1 symbols from
d+1 with no two equal neighbours, a cable per arc s0..sk -> s1..sk x; --cas CAs per switch
on ports 1..cas, then d out-arc ports, then d in-arc ports.
`,
	"rrg": `A random regular graph built as Jellyfish does: --switches switches with --ports network
ports each (exactly that many neighbours unless switches*ports is odd) and --cas CAs each, on
ports 1..cas; neighbours follow in ascending order. Same --seed, same file.
`,
}
