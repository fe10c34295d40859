package topogen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// Degrade is seeded failure injection (fail-in-place style): it removes
// ⌊Switches·S⌋ of the S switches (only switches with no CA or router cabled
// to them are eligible, so no host is cut off by construction), then
// ⌊Links·L⌋ of the L switch-to-switch cables that remain. CA and router
// cables are never removed. A draw that splits the fabric is redrawn from
// the same random stream (so the result is still a pure function of the
// seed) unless AllowDisconnected.
type Degrade struct {
	Links    float64 // fraction of inter-switch cables to remove, 0..1
	Switches float64 // fraction of all switches to remove, 0..1
	Seed     int64
	// AllowDisconnected keeps the first draw even if it splits the fabric.
	AllowDisconnected bool
}

// DegradeResult says what was removed.
type DegradeResult struct {
	SwitchesBefore, SwitchesRemoved int
	LinksBefore, LinksRemoved       int // switch-to-switch cables
	Redraws                         int // draws rejected because they split the fabric
	Connected                       bool
}

// maxRedraws bounds the search for a connected draw.
const maxRedraws = 1000

// On reports whether d removes anything.
func (d Degrade) On() bool { return d.Links > 0 || d.Switches > 0 }

// fractionOf is ⌊frac·n⌋, tolerant of binary fractions such as 0.29·100.
func fractionOf(frac float64, n int) int { return int(math.Floor(frac*float64(n) + 1e-9)) }

func isSwitchLink(l netfile.Link) bool {
	return l.A.Type == topology.Switch && l.B.Type == topology.Switch
}

// Apply returns a new file with the removals; f is not modified. Node order,
// names, GUIDs and the remaining cables are kept.
func (d Degrade) Apply(f *netfile.File) (*netfile.File, DegradeResult, error) {
	var res DegradeResult
	if d.Links < 0 || d.Links > 1 || math.IsNaN(d.Links) || d.Switches < 0 || d.Switches > 1 || math.IsNaN(d.Switches) {
		return nil, res, fmt.Errorf("topogen: --remove-links %v / --remove-switches %v: give fractions between 0 and 1 (0.01 removes 1%%)", d.Links, d.Switches)
	}
	var eligible []*netfile.Node
	for _, n := range f.Nodes {
		if n.Type != topology.Switch {
			continue
		}
		res.SwitchesBefore++
		host := false
		for p := 1; p < len(n.Ports); p++ {
			if pe := n.Ports[p].Peer; pe != nil && pe.Type != topology.Switch {
				host = true
			}
		}
		if !host {
			eligible = append(eligible, n)
		}
	}
	nsw := fractionOf(d.Switches, res.SwitchesBefore)
	if nsw > len(eligible) {
		return nil, res, fmt.Errorf("topogen: removing %d of %d switches, but only %d have no CA cabled to them; lower --remove-switches to at most %.4f", nsw, res.SwitchesBefore, len(eligible), float64(len(eligible))/float64(res.SwitchesBefore))
	}
	all := f.Links()
	rng := rand.New(rand.NewPCG(uint64(d.Seed), 0xdeb7ade))
	for attempt := 0; ; attempt++ {
		gone := map[*netfile.Node]bool{}
		for _, i := range pick(rng, len(eligible), nsw) {
			gone[eligible[i]] = true
		}
		var cand []int // indices into all of surviving switch-to-switch cables
		for i, l := range all {
			if isSwitchLink(l) && !gone[l.A] && !gone[l.B] {
				cand = append(cand, i)
			}
		}
		nl := fractionOf(d.Links, len(cand))
		cut := make([]bool, len(all))
		for _, i := range pick(rng, len(cand), nl) {
			cut[cand[i]] = true
		}
		out, err := rebuild(f, all, gone, cut)
		if err != nil {
			return nil, res, err
		}
		res.SwitchesRemoved, res.LinksBefore, res.LinksRemoved, res.Redraws = nsw, len(cand), nl, attempt
		res.Connected = fileConnected(out)
		if res.Connected || d.AllowDisconnected {
			return out, res, nil
		}
		if attempt == maxRedraws {
			return nil, res, fmt.Errorf("topogen: %d draws removing %d switches and %d of %d inter-switch cables all split the fabric; remove less or pass --allow-disconnected", maxRedraws+1, nsw, nl, len(cand))
		}
	}
}

// pick draws k distinct indices of 0..n-1 (partial Fisher-Yates), sorted.
func pick(rng *rand.Rand, n, k int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	for i := 0; i < k; i++ {
		j := i + rng.IntN(n-i)
		p[i], p[j] = p[j], p[i]
	}
	p = p[:k]
	slices.Sort(p)
	return p
}

// rebuild copies f without the removed switches and cut cables.
func rebuild(f *netfile.File, all []netfile.Link, gone map[*netfile.Node]bool, cut []bool) (*netfile.File, error) {
	out := netfile.New()
	copyOf := make(map[*netfile.Node]*netfile.Node, len(f.Nodes))
	for _, n := range f.Nodes {
		if gone[n] {
			continue
		}
		var nn *netfile.Node
		var err error
		switch n.Type {
		case topology.Switch:
			nn, err = out.AddSwitch(n.Name, n.GUID, n.NumPorts())
		case topology.Router:
			nn, err = out.AddRouter(n.Name, n.GUID, n.NumPorts())
		default:
			nn, err = out.AddCA(n.Name, n.GUID, n.NumPorts())
		}
		if err != nil {
			return nil, fmt.Errorf("topogen: copying %q: %w", n.Name, err)
		}
		nn.Desc, nn.SysImageGUID, nn.VendorID, nn.DeviceID = n.Desc, n.SysImageGUID, n.VendorID, n.DeviceID
		nn.Enhanced, nn.LID, nn.LMC = n.Enhanced, n.LID, n.LMC
		for p := range n.Ports {
			nn.Ports[p].GUID, nn.Ports[p].LID, nn.Ports[p].LMC = n.Ports[p].GUID, n.Ports[p].LID, n.Ports[p].LMC
		}
		copyOf[n] = nn
	}
	for i, l := range all {
		if cut[i] || gone[l.A] || gone[l.B] {
			continue
		}
		if err := out.Connect(copyOf[l.A], l.PA, copyOf[l.B], l.PB, l.Width, l.Speed); err != nil {
			return nil, fmt.Errorf("topogen: re-cabling %q[%d]: %w", l.A.Name, l.PA, err)
		}
	}
	return out, nil
}

// fileConnected reports whether every node of f is reachable from the first.
func fileConnected(f *netfile.File) bool {
	if len(f.Nodes) == 0 {
		return true
	}
	seen := map[*netfile.Node]bool{f.Nodes[0]: true}
	stack := []*netfile.Node{f.Nodes[0]}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for p := 1; p < len(n.Ports); p++ {
			if pe := n.Ports[p].Peer; pe != nil && !seen[pe] {
				seen[pe] = true
				stack = append(stack, pe)
			}
		}
	}
	return len(seen) == len(f.Nodes)
}

// Degraded is a generator whose output is degraded.
type Degraded struct {
	Base    Generator
	Degrade Degrade
}

// Generate builds the base fabric and degrades it.
func (g Degraded) Generate() (*netfile.File, error) {
	f, _, err := g.GenerateReport()
	return f, err
}

// GenerateReport is Generate with what was removed.
func (g Degraded) GenerateReport() (*netfile.File, DegradeResult, error) {
	f, err := g.Base.Generate()
	if err != nil {
		return nil, DegradeResult{}, err
	}
	return g.Degrade.Apply(f)
}

// Load reads an existing topology file, to degrade or re-emit it.
type Load struct{ Path string }

// Generate parses the file.
func (l Load) Generate() (*netfile.File, error) {
	f, err := netfile.ParseFile(l.Path)
	if err != nil {
		return nil, fmt.Errorf("topogen: %w", err)
	}
	return f, nil
}
