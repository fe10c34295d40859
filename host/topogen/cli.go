package topogen

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// Generator is any of FatTree, Torus, Random, RRG, Paper, Load or Degraded.
type Generator interface {
	Generate() (*netfile.File, error)
}

// Kinds lists the topology kinds Parse accepts (ft is an alias of fat-tree).
func Kinds() []string {
	return append([]string{"fat-tree", "ring", "torus", "mesh", "random", "rrg", "paper", "file"}, directKinds...)
}

const usageText = `usage: ibsm topo <kind> [flags] > fabric.net

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

// Usage writes the command's help.
func Usage(w io.Writer) { io.WriteString(w, usageText) }

// Run implements 'ibsm topo': args[0] is the kind, the rest its flags. It
// writes the topology file to w, or the help text for -h.
func Run(args []string, w io.Writer) error {
	if len(args) == 0 {
		return errors.New("topo: missing topology kind; run 'ibsm topo -h' for kinds and examples")
	}
	if a := args[0]; a == "-h" || a == "-help" || a == "--help" || a == "help" {
		Usage(w)
		return nil
	}
	g, err := Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs, _ := newFlags(canonicalKind(args[0]))
		fmt.Fprintf(w, "usage: ibsm topo %s [flags]\n\n%s\nFlags:\n", canonicalKind(args[0]), kindHelp[canonicalKind(args[0])])
		fs.fs.SetOutput(w)
		fs.fs.PrintDefaults()
		return nil
	}
	if err != nil {
		return err
	}
	_, err = writeFabric(g, args, w)
	return err
}

// Write is Run without the help texts, for programs that generate fabrics:
// it writes the topology file args describe to w, header included, and
// returns what degradation removed (nil when the fabric is not degraded).
func Write(args []string, w io.Writer) (*DegradeResult, error) {
	g, err := Parse(args)
	if err != nil {
		return nil, err
	}
	return writeFabric(g, args, w)
}

// writeFabric generates g and writes it to w with the header naming args.
func writeFabric(g Generator, args []string, w io.Writer) (*DegradeResult, error) {
	var f *netfile.File
	var deg *DegradeResult
	var err error
	if d, ok := g.(Degraded); ok {
		var r DegradeResult
		f, r, err = d.GenerateReport()
		deg = &r
	} else {
		f, err = g.Generate()
	}
	if err != nil {
		return nil, err
	}
	if err := writeHeader(w, args, f); err != nil {
		return nil, err
	}
	if deg != nil {
		split := ""
		if !deg.Connected {
			split = "; the fabric is SPLIT (--allow-disconnected)"
		}
		if _, err := fmt.Fprintf(w, "# degraded with seed %d: removed %d of %d switches and %d of %d switch-to-switch cables, %d draws redone because they split the fabric%s\n",
			g.(Degraded).Degrade.Seed, deg.SwitchesRemoved, deg.SwitchesBefore, deg.LinksRemoved, deg.LinksBefore, deg.Redraws, split); err != nil {
			return nil, err
		}
	}
	return deg, netfile.Write(w, f)
}

// writeHeader records how the file was made and how to load it in ibsim;
// both ibsim and netfile ignore lines starting with '#'.
func writeHeader(w io.Writer, args []string, f *netfile.File) error {
	var sw, ca, ports int
	for _, n := range f.Nodes {
		if n.Type == topology.Switch {
			sw++
		} else {
			ca++
		}
		ports += n.NumPorts() + 1
	}
	_, err := fmt.Fprintf(w, "# ibsm topo %s\n# %d switches, %d CAs, %d links\n# ibsim 0.10: ibsim -s -N %d -S %d -P %d -L 49152 <file>\n",
		strings.Join(args, " "), sw, ca, len(f.Links()), max(sw+ca, 2048), max(sw, 256), max(ports, 13312))
	return err
}

func canonicalKind(k string) string {
	if k == "ft" {
		return "fat-tree"
	}
	return k
}

var kindHelp = map[string]string{
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

// kindFlags holds one kind's flag set and where its values land.
type kindFlags struct {
	fs      *flag.FlagSet
	build   func() (Generator, error)
	seed    *int64 // the kind's --seed, shared with degradation
	degrade Degrade
}

// Parse turns 'kind --flag value ...' into a generator.
func Parse(args []string) (Generator, error) {
	if len(args) == 0 {
		return nil, errors.New("topo: missing topology kind; run 'ibsm topo -h' for kinds and examples")
	}
	kind := canonicalKind(args[0])
	kf, err := newFlags(kind)
	if err != nil {
		return nil, err
	}
	if err := kf.fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("topo %s: %v; run 'ibsm topo %s -h' for its flags", kind, err, kind)
	}
	if kf.fs.NArg() > 0 {
		return nil, fmt.Errorf("topo %s: unexpected argument %q; flags look like --switches 6", kind, kf.fs.Arg(0))
	}
	g, err := kf.build()
	if err != nil {
		return nil, err
	}
	d := kf.degrade
	d.Seed = *kf.seed
	if !d.On() {
		if d.AllowDisconnected {
			return nil, fmt.Errorf("topo %s: --allow-disconnected without --remove-links or --remove-switches; add one, e.g. --remove-links 0.01", kind)
		}
		return g, nil
	}
	return Degraded{Base: g, Degrade: d}, nil
}

func newFlags(kind string) (*kindFlags, error) {
	fs := flag.NewFlagSet(kind, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cable Cable
	fs.Func("width", "link width: 1x, 2x, 4x, 8x or 12x (default 4x)", func(s string) error {
		w, ok := map[string]netfile.Width{"1x": netfile.Width1x, "2x": netfile.Width2x, "4x": netfile.Width4x, "8x": netfile.Width8x, "12x": netfile.Width12x}[strings.ToLower(s)]
		if !ok {
			return fmt.Errorf("width %q is not one of 1x 2x 4x 8x 12x", s)
		}
		cable.Width = uint8(w)
		return nil
	})
	fs.Func("speed", "link speed: SDR, DDR, QDR, FDR, EDR, HDR or NDR (default QDR)", func(s string) error {
		for _, sp := range []netfile.Speed{netfile.SDR, netfile.DDR, netfile.QDR, netfile.FDR, netfile.EDR, netfile.HDR, netfile.NDR} {
			if strings.EqualFold(sp.String(), s) {
				cable.Speed = uint8(sp)
				return nil
			}
		}
		return fmt.Errorf("speed %q is not one of SDR DDR QDR FDR EDR HDR NDR", s)
	})
	switchPorts := fs.Int("switch-ports", 0, "declared port count of every switch (default: what the topology uses)")
	kf := &kindFlags{fs: fs}
	fs.Float64Var(&kf.degrade.Links, "remove-links", 0, "fraction of switch-to-switch cables to remove, seeded by --seed (0.01 = 1%)")
	fs.Float64Var(&kf.degrade.Switches, "remove-switches", 0, "fraction of switches to remove (only switches without CAs), seeded by --seed")
	fs.BoolVar(&kf.degrade.AllowDisconnected, "allow-disconnected", false, "keep a degraded draw that splits the fabric instead of redrawing")
	if kind != "random" && kind != "rrg" && kind != "paper" {
		kf.seed = fs.Int64("seed", 1, "random seed of --remove-links / --remove-switches")
	}
	switch kind {
	case "fat-tree":
		var t FatTree
		fs.IntVar(&t.Radix, "radix", 0, "switch radix k (even) of the maximal folded Clos")
		fs.IntVar(&t.Arity, "arity", 0, "arity k of a k-ary n-tree")
		fs.IntVar(&t.Levels, "levels", 0, "switch levels n (default 2 with --radix)")
		fs.Func("children", "XGFT children per level, m1,..,mn", intList(&t.Children))
		fs.Func("parents", "XGFT parents per level, 1,w2,..,wn", intList(&t.Parents))
		fs.IntVar(&t.Parallel, "parallel", 1, "cables between each connected pair of switches")
		fs.IntVar(&t.CAsPerLeaf, "cas", 0, "CAs per leaf (default: every leaf down port)")
		kf.build = func() (Generator, error) {
			if t.CAsPerLeaf == 0 && flagSet(fs, "cas") {
				return nil, errors.New("topo fat-tree: --cas 0 would leave the tree without CAs; give 1 or more per leaf")
			}
			t.SwitchPorts, t.Cable = *switchPorts, cable
			return t, nil
		}
	case "ring":
		var n, h int
		fs.IntVar(&n, "switches", 0, "number of switches (required)")
		fs.IntVar(&h, "cas", 1, "CAs per switch")
		kf.build = func() (Generator, error) {
			if n < 1 {
				return nil, errors.New("topo ring: give --switches (1 or more), e.g. ring --switches 6 --cas 1")
			}
			t := Ring(n, h)
			t.SwitchPorts, t.Cable = *switchPorts, cable
			return t, nil
		}
	case "torus", "mesh":
		t := Torus{Mesh: kind == "mesh"}
		fs.Func("dims", "dimensions, e.g. 4x4x4 or 4,4,4 (required)", func(s string) error {
			d, err := parseInts(strings.ReplaceAll(strings.ToLower(s), "x", ","))
			t.Dims = d
			return err
		})
		fs.IntVar(&t.CAsPerSwitch, "cas", 1, "CAs per switch")
		kf.build = func() (Generator, error) {
			if len(t.Dims) == 0 {
				return nil, fmt.Errorf("topo %s: give --dims, e.g. %s --dims 4x4x4 --cas 2", kind, kind)
			}
			t.SwitchPorts, t.Cable = *switchPorts, cable
			return t, nil
		}
	case "random":
		var t Random
		fs.IntVar(&t.Switches, "switches", 0, "number of switches (required)")
		fs.Float64Var(&t.Degree, "degree", 0, "average inter-switch degree (required)")
		fs.IntVar(&t.CAs, "cas", 0, "total number of CAs, placed uniformly at random (required)")
		fs.Int64Var(&t.Seed, "seed", 1, "random seed (also of --remove-links / --remove-switches)")
		kf.seed = &t.Seed
		kf.build = func() (Generator, error) {
			if err := requireFlags(fs, "random --switches 32 --degree 8 --cas 256 --seed 7", "switches", "degree", "cas"); err != nil {
				return nil, err
			}
			t.SwitchPorts, t.Cable = *switchPorts, cable
			return t, nil
		}
	case "rrg":
		var t RRG
		fs.IntVar(&t.Switches, "switches", 0, "number of switches (required)")
		fs.IntVar(&t.NetPorts, "ports", 0, "inter-switch ports per switch (required)")
		fs.IntVar(&t.CAsPerSwitch, "cas", 1, "CAs per switch")
		fs.Int64Var(&t.Seed, "seed", 1, "random seed (also of --remove-links / --remove-switches)")
		kf.seed = &t.Seed
		kf.build = func() (Generator, error) {
			if err := requireFlags(fs, "rrg --switches 512 --ports 12 --cas 4 --seed 1", "switches", "ports"); err != nil {
				return nil, err
			}
			t.SwitchPorts, t.Cable = *switchPorts, cable
			return t, nil
		}
	case "paper":
		var p Paper
		fs.StringVar(&p.Set, "set", "", "which paper's fabrics: 000, 001, 003 or rrg512 (required)")
		fs.IntVar(&p.Switches, "switches", 0, "number of switches")
		fs.IntVar(&p.CAs, "cas", 0, "machines in total (set 000)")
		fs.IntVar(&p.Degree, "degree", 0, "inter-switch ports per switch (sets 001 and 003)")
		fs.Int64Var(&p.Seed, "seed", 1, "random seed: the instance (also of --remove-links / --remove-switches)")
		kf.seed = &p.Seed
		kf.build = func() (Generator, error) {
			if p.Set == "" {
				return nil, fmt.Errorf("topo paper: give --set (%s), e.g. paper --set 000 --switches 16 --cas 128", strings.Join(PaperSets(), ", "))
			}
			p.SwitchPorts, p.Cable = *switchPorts, cable
			if _, err := p.Base(); err != nil {
				return nil, err
			}
			return p, nil
		}
	case "file":
		var l Load
		fs.StringVar(&l.Path, "in", "", "topology file to read (required)")
		kf.build = func() (Generator, error) {
			if l.Path == "" {
				return nil, errors.New("topo file: give --in FILE, e.g. file --in ft2-648.net --remove-links 0.01 --seed 7")
			}
			if flagSet(fs, "switch-ports") || flagSet(fs, "width") || flagSet(fs, "speed") {
				return nil, errors.New("topo file: --switch-ports, --width and --speed apply to generated fabrics; a loaded file keeps its own")
			}
			return l, nil
		}
	default:
		if b, ok := directFlags(kind, fs, switchPorts, &cable); ok {
			kf.build = b
			break
		}
		return nil, fmt.Errorf("topo: unknown topology kind %q; use one of %s (ft = fat-tree)", kind, strings.Join(Kinds(), ", "))
	}
	return kf, nil
}

// requireFlags says which of names was not given, with an example command
// line whose first word is the generator.
func requireFlags(fs *flag.FlagSet, example string, names ...string) error {
	for _, req := range names {
		if !flagSet(fs, req) {
			kind, _, _ := strings.Cut(example, " ")
			return fmt.Errorf("topo %s: give --%s, e.g. %s", kind, req, example)
		}
	}
	return nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func intList(dst *[]int) func(string) error {
	return func(s string) error {
		v, err := parseInts(s)
		*dst = v
		return err
	}
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a list of integers like 4,4,4", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// directKinds are the kinds of this file, registered in newFlags.
var directKinds = []string{"dragonfly", "hyperx", "kautz"}

// directFlags declares the flags of a kind of this file on fs and returns
// its builder; ok is false for other kinds.
func directFlags(kind string, fs *flag.FlagSet, switchPorts *int, cable *Cable) (build func() (Generator, error), ok bool) {
	switch kind {
	case "dragonfly":
		var t Dragonfly
		fs.IntVar(&t.A, "a", 0, "switches per group (required)")
		fs.IntVar(&t.P, "p", 0, "CAs per switch (required)")
		fs.IntVar(&t.H, "h", 0, "global cables per switch (required)")
		fs.IntVar(&t.Groups, "groups", 0, "number of groups (default a·h+1: every pair of groups cabled once)")
		return func() (Generator, error) {
			if err := requireFlags(fs, "dragonfly --a 8 --p 4 --h 4", "a", "p", "h"); err != nil {
				return nil, err
			}
			t.SwitchPorts, t.Cable = *switchPorts, *cable
			return t, nil
		}, true
	case "hyperx":
		var t HyperX
		fs.Func("dims", "switches per dimension, e.g. 12x8 (required)", func(s string) error {
			d, err := parseInts(strings.ReplaceAll(strings.ToLower(s), "x", ","))
			t.Dims = d
			return err
		})
		fs.IntVar(&t.K, "links", 1, "parallel cables between two switches of a dimension")
		fs.IntVar(&t.T, "cas", 1, "CAs per switch")
		return func() (Generator, error) {
			if len(t.Dims) == 0 {
				return nil, errors.New("topo hyperx: give --dims, e.g. hyperx --dims 12x8 --cas 7")
			}
			t.SwitchPorts, t.Cable = *switchPorts, *cable
			return t, nil
		}, true
	case "kautz":
		var t Kautz
		fs.IntVar(&t.D, "degree", 0, "out-degree d of K(d,k) (required)")
		fs.IntVar(&t.K, "diameter", 0, "k of K(d,k): words of k+1 symbols (required)")
		fs.IntVar(&t.T, "cas", 1, "CAs per switch")
		return func() (Generator, error) {
			if err := requireFlags(fs, "kautz --degree 4 --diameter 3 --cas 4", "degree", "diameter"); err != nil {
				return nil, err
			}
			t.SwitchPorts, t.Cable = *switchPorts, *cable
			return t, nil
		}, true
	}
	return nil, false
}
