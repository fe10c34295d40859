package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// fabric is one row group of the issue-14 table: how to make it and what
// runs on it.
type fabric struct {
	name, label string
	topo        []string // `ibsm topo` arguments
	// without names a switch (netfile node id) removed with its CAs after
	// generating topo: `ibsm topo` only removes switches without CAs.
	without string
	// torus, when set, is the grid torus-2QoS.conf describes (seed at the
	// switch "torus-0-0-0").
	torus  []int
	ibsm   []ibsmCfg
	opensm []osmCfg
	// ssspRef scores ibsm's sssp routes alone (no VL assignment, not
	// deadlock-free) as the upper reference of balance.
	ssspRef bool
}

// ibsmCfg is one ibsm pipeline: engine + sequential + vl.
type ibsmCfg struct {
	label, engine, vl string
	engineCfg, vlCfg  []string // attribute lines of the plugins' config blocks
	budget            int
	vs                string // key of the OpenSM row the time ratio is against
}

// osmCfg is one OpenSM engine run.
type osmCfg struct {
	key, engine string
	args        []string
	budget      int
	// vls > 1 means the engine spreads paths over SLs this run does not
	// read, so deadlock freedom is by design, not measured.
	vls int
}

func nue(vls int, extra ...string) ibsmCfg {
	c := append([]string{fmt.Sprintf("vls = %d", vls)}, extra...)
	return ibsmCfg{label: fmt.Sprintf("`nue` + `nue-vl` (vls %d)", vls), engine: "nue", vl: "nue-vl",
		engineCfg: c, vlCfg: []string{fmt.Sprintf("vls = %d", vls)}, budget: vls, vs: fmt.Sprintf("nue%d", vls)}
}

func osmNue(vls int) osmCfg {
	c := osmCfg{key: fmt.Sprintf("nue%d", vls), engine: "nue", args: []string{"--nue_max_num_vls", fmt.Sprint(vls)}, budget: vls, vls: vls}
	if vls > 1 {
		c.args = append([]string{"-Q"}, c.args...)
	}
	return c
}

var (
	torusVL = func(vls int) ibsmCfg {
		return ibsmCfg{label: fmt.Sprintf("`torus` + `torus-vl` (max_vls %d)", vls), engine: "torus", vl: "torus-vl",
			vlCfg: []string{fmt.Sprintf("max_vls = %d", vls)}, budget: vls, vs: "torus-2QoS"}
	}
	ssspAcro   = ibsmCfg{label: "`sssp` + `acro`", engine: "sssp", vl: "acro", budget: 8, vs: "dfsssp"}
	updnSingle = ibsmCfg{label: "`updn` + `single`", engine: "updn", vl: "single", budget: 1, vs: "updn"}

	osmTorus  = osmCfg{key: "torus-2QoS", engine: "torus-2QoS", args: []string{"-Q"}, budget: 8, vls: 2}
	osmDFSSSP = osmCfg{key: "dfsssp", engine: "dfsssp", args: []string{"-Q"}, budget: 8, vls: 8}
	osmUpdn   = osmCfg{key: "updn", engine: "updn", budget: 1, vls: 1}
	osmMinhop = osmCfg{key: "minhop", engine: "minhop", budget: 1, vls: 1}
	osmDOR    = osmCfg{key: "dor", engine: "dor", budget: 1, vls: 1}
	osmSSSP   = osmCfg{key: "sssp", engine: "sssp", budget: 1, vls: 1}
)

// fabrics are the issue-14 acceptance fabrics, small first.
func fabrics() []fabric {
	torus := []string{"torus", "--dims", "8x8x8", "--cas", "2"}
	faulty := []ibsmCfg{torusVL(8), nue(8)}
	faultyOSM := []osmCfg{osmTorus, osmNue(8)}
	std := func(name, label string, topo ...string) fabric {
		return fabric{name: name, label: label, topo: topo,
			ibsm:   []ibsmCfg{nue(8), nue(1), ssspAcro, updnSingle},
			opensm: []osmCfg{osmNue(8), osmNue(1), osmDFSSSP, osmUpdn}}
	}
	return []fabric{
		std("hyperx", "HyperX 12×8, 7 CAs", "hyperx", "--dims", "12x8", "--cas", "7"),
		std("dragonfly", "dragonfly a=8 p=4 h=4", "dragonfly", "--a", "8", "--p", "4", "--h", "4"),
		std("kautz", "Kautz K(4,3), 4 CAs", "kautz", "--degree", "4", "--diameter", "3", "--cas", "4"),
		{name: "torus", label: "torus 8×8×8, 2 CAs", topo: torus, torus: []int{8, 8, 8}, ssspRef: true,
			ibsm:   []ibsmCfg{torusVL(8), torusVL(2), nue(8), nue(2), nue(1), updnSingle, ssspAcro},
			opensm: []osmCfg{osmTorus, osmNue(8), osmNue(2), osmNue(1), osmDFSSSP, osmUpdn, osmMinhop, osmDOR, osmSSSP}},
		{name: "torus-link", label: "torus, 1 link removed", topo: append(append([]string(nil), torus...), "--remove-links", "0.00066", "--seed", "1"),
			torus: []int{8, 8, 8}, ibsm: faulty, opensm: faultyOSM},
		{name: "torus-switch", label: "torus, switch (3,4,5) removed", topo: torus, without: "torus-3-4-5",
			torus: []int{8, 8, 8}, ibsm: faulty, opensm: faultyOSM},
		{name: "rrg512", label: "rrg 512×12, 4 CAs, seed 1", topo: []string{"rrg", "--switches", "512", "--ports", "12", "--cas", "4", "--seed", "1"},
			ssspRef: true,
			ibsm:    []ibsmCfg{nue(1), nue(2), nue(4), ssspAcro},
			opensm:  []osmCfg{osmNue(1), osmNue(2), osmNue(4), osmDFSSSP, osmUpdn}},
		{name: "rrg1000", label: "rrg 1000×16, 10 CAs, seed 7", topo: []string{"rrg", "--switches", "1000", "--ports", "16", "--cas", "10", "--seed", "7"},
			ibsm:   []ibsmCfg{nue(8, "trees_per_switch = 1", "reroute = 0"), ssspAcro},
			opensm: []osmCfg{osmNue(8), osmDFSSSP}},
	}
}

// writeFabric writes f's topology to path and, for a torus, its
// torus-2QoS.conf to confPath.
func writeFabric(f fabric, path, confPath string) (*netfile.File, error) {
	var buf bytes.Buffer
	if _, err := topogen.Write(f.topo, &buf); err != nil {
		return nil, fmt.Errorf("ibsm topo %s: %w", strings.Join(f.topo, " "), err)
	}
	nf, err := netfile.Parse(path, bytes.NewReader(buf.Bytes()))
	if err != nil {
		return nil, err
	}
	if f.without != "" {
		if nf, err = withoutSwitch(nf, f.without); err != nil {
			return nil, err
		}
		var out bytes.Buffer
		// Keep the generator's header (ibsim's table sizes) and say what
		// else was done.
		sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
		for sc.Scan() && strings.HasPrefix(sc.Text(), "#") {
			fmt.Fprintln(&out, sc.Text())
		}
		fmt.Fprintf(&out, "# without switch %s and its CAs (race14)\n", f.without)
		if err := netfile.Write(&out, nf); err != nil {
			return nil, err
		}
		buf = out
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if f.torus != nil {
		conf, err := torusConf(nf, f.torus)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
			return nil, err
		}
	}
	return nf, nil
}

// withoutSwitch copies nf without the switch named sw and the CAs cabled
// to it.
func withoutSwitch(nf *netfile.File, sw string) (*netfile.File, error) {
	gone := nf.Node(sw)
	if gone == nil || gone.Type != topology.Switch {
		return nil, fmt.Errorf("no switch %q in the fabric", sw)
	}
	drop := map[*netfile.Node]bool{gone: true}
	for _, p := range gone.Ports {
		if p.Peer != nil && p.Peer.Type != topology.Switch {
			drop[p.Peer] = true
		}
	}
	out := netfile.New()
	for _, n := range nf.Nodes {
		if drop[n] {
			continue
		}
		var c *netfile.Node
		var err error
		if n.Type == topology.Switch {
			c, err = out.AddSwitch(n.Name, n.GUID, n.NumPorts())
		} else {
			c, err = out.AddCA(n.Name, n.GUID, n.NumPorts())
		}
		if err != nil {
			return nil, err
		}
		c.Desc, c.SysImageGUID, c.VendorID, c.DeviceID, c.Enhanced = n.Desc, n.SysImageGUID, n.VendorID, n.DeviceID, n.Enhanced
		for p := range n.Ports {
			c.Ports[p].GUID = n.Ports[p].GUID
		}
	}
	for _, l := range nf.Links() {
		a, b := out.NodeByGUID(l.A.GUID), out.NodeByGUID(l.B.GUID)
		if a == nil || b == nil {
			continue
		}
		if err := out.Connect(a, l.PA, b, l.PB, l.Width, l.Speed); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// torusConf is OpenSM's torus-2QoS.conf for an `ibsm topo torus` grid: its
// size and the seed switch (0,0,0)'s + links in each dimension.
func torusConf(nf *netfile.File, dims []int) (string, error) {
	var b strings.Builder
	b.WriteString("torus")
	for _, d := range dims {
		fmt.Fprintf(&b, " %d", d)
	}
	b.WriteString("\n")
	name := func(c []int) string {
		s := make([]string, len(c))
		for i, v := range c {
			s[i] = fmt.Sprint(v)
		}
		return "torus-" + strings.Join(s, "-")
	}
	origin := make([]int, len(dims))
	seed := nf.Node(name(origin))
	if seed == nil {
		return "", fmt.Errorf("no switch %s to seed torus-2QoS", name(origin))
	}
	for d, dir := range []string{"xp_link", "yp_link", "zp_link"}[:len(dims)] {
		next := make([]int, len(dims))
		next[d] = 1
		n := nf.Node(name(next))
		if n == nil {
			return "", fmt.Errorf("no switch %s to seed torus-2QoS", name(next))
		}
		fmt.Fprintf(&b, "%s 0x%016x 0x%016x\n", dir, seed.GUID, n.GUID)
	}
	return b.String(), nil
}
