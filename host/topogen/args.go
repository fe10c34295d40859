package topogen

// The command-line form of a fabric: 'ibsm topo' arguments (a kind and its
// flags) parsed into a Generator, written or read back. The command itself
// (help texts) is host/cmd/ibsm's topo.go; experiments and benchmarks
// describe their fabrics with these arguments too.

import (
	"bytes"
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

// Write writes the topology file args (an 'ibsm topo' command line after
// "topo") describe to w, header included, and returns what degradation
// removed (nil when the fabric is not degraded).
func Write(args []string, w io.Writer) (*DegradeResult, error) {
	g, err := Parse(args)
	if err != nil {
		return nil, err
	}
	return WriteFile(w, g, args)
}

// Written runs Write into memory and reads the file back as the SM would
// load it: the snapshot a reader of that file routes. Programs that
// generate their instances in process test with it that the command line
// they print writes the same fabric (equal Hash).
func Written(args []string) (*topology.Topology, error) {
	var buf bytes.Buffer
	if _, err := Write(args, &buf); err != nil {
		return nil, err
	}
	f, err := netfile.Parse("ibsm-topo.net", &buf)
	if err != nil {
		return nil, fmt.Errorf("topogen: reading back the written file: %w", err)
	}
	t, err := f.Topology()
	if err != nil {
		return nil, fmt.Errorf("topogen: written fabric is not a valid topology: %w", err)
	}
	return t, nil
}

// WriteFile generates g and writes it to w as a topology file whose header
// names args, the 'ibsm topo' command line that describes g, says how to
// load the file in ibsim and what degradation removed; it returns that
// (nil when g is not Degraded).
func WriteFile(w io.Writer, g Generator, args []string) (*DegradeResult, error) {
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

// FlagSet returns the flags of kind (ft is fat-tree) for its help text;
// its Name is the kind's canonical name.
func FlagSet(kind string) (*flag.FlagSet, error) {
	kf, err := newFlags(canonicalKind(kind))
	if err != nil {
		return nil, err
	}
	return kf.fs, nil
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
