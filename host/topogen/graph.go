package topogen

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/testfab/gen"
	"github.com/ibsm/ibsm/transport/netfile"
)

// GUID ranges and limits of the generated fabrics (see gen).
const (
	SwitchGUIDBase = gen.SwitchGUIDBase
	CAGUIDBase     = gen.CAGUIDBase
	MaxNodes       = gen.MaxNodes
)

// Vendor and device IDs written into NodeInfo: Mellanox, SwitchX and
// ConnectX-3, the hardware generation that 36-port QDR/FDR fabrics used.
const (
	vendorMellanox = 0x02c9
	devSwitch      = 0xc738
	devCA          = 0x1003
)

// Cable is the width and speed every generated link trains at.
type Cable = gen.Cable

// The shapes are gen's, each written as a topology file by Generate.
type (
	FatTree   gen.FatTree
	Torus     gen.Torus
	Random    gen.Random
	RRG       gen.RRG
	Dragonfly gen.Dragonfly
	HyperX    gen.HyperX
	Kautz     gen.Kautz
)

// Ring returns the torus of n switches in a cycle, named as a ring.
func Ring(switches, casPerSwitch int) Torus { return Torus(gen.Ring(switches, casPerSwitch)) }

// Generate builds the tree.
func (t FatTree) Generate() (*netfile.File, error) { return file(gen.FatTree(t).Graph()) }

// Generate builds the grid.
func (t Torus) Generate() (*netfile.File, error) { return file(gen.Torus(t).Graph()) }

// Generate draws the fabric.
func (t Random) Generate() (*netfile.File, error) { return file(gen.Random(t).Graph()) }

// Generate draws the fabric.
func (t RRG) Generate() (*netfile.File, error) { return file(gen.RRG(t).Graph()) }

// Generate builds the dragonfly.
func (t Dragonfly) Generate() (*netfile.File, error) { return file(gen.Dragonfly(t).Graph()) }

// Generate builds the HyperX.
func (t HyperX) Generate() (*netfile.File, error) { return file(gen.HyperX(t).Graph()) }

// Generate builds the Kautz graph.
func (t Kautz) Generate() (*netfile.File, error) { return file(gen.Kautz(t).Graph()) }

// file emits a generated graph (or passes its error on) through the
// netfile builder, in gen's node order (CAs first).
func file(g *gen.Graph, err error) (*netfile.File, error) {
	if err != nil {
		return nil, err
	}
	f := netfile.New()
	cas := make([]*netfile.Node, len(g.CAs))
	for j, n := range g.CAs {
		nd, err := f.AddCA(n.Name, gen.CARef(j).GUID(), 1)
		if err != nil {
			return nil, fmt.Errorf("topogen: %w", err)
		}
		nd.Desc, nd.VendorID, nd.DeviceID = n.Desc, vendorMellanox, devCA
		cas[j] = nd
	}
	sws := make([]*netfile.Node, len(g.Switches))
	for i, n := range g.Switches {
		nd, err := f.AddSwitch(n.Name, gen.SwitchRef(i).GUID(), n.Ports)
		if err != nil {
			return nil, fmt.Errorf("topogen: %w", err)
		}
		nd.Desc, nd.VendorID, nd.DeviceID = n.Desc, vendorMellanox, devSwitch
		sws[i] = nd
	}
	node := func(r gen.Ref) *netfile.Node {
		if r.IsCA() {
			return cas[r.Index()]
		}
		return sws[r.Index()]
	}
	for _, l := range g.Links {
		if err := f.Connect(node(l.A), l.PA, node(l.B), l.PB, netfile.Width(g.Cable.Width), netfile.Speed(g.Cable.Speed)); err != nil {
			return nil, fmt.Errorf("topogen: internal error, generator cabled a bad port: %w", err)
		}
	}
	return f, nil
}
