package ftree

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// checker walks CA-to-CA routes of planes and measures channel loads on
// switch-to-switch channels. It is deliberately independent of the router:
// it only follows the tables.
type checker struct {
	topo *topology.Topology
	r    *plan.Routes
	// cas are the CA endpoints, home their leaf switch index.
	cas  []int32
	home []int32
	load []int32 // per channel: switch index*256 + port
}

func newChecker(topo *topology.Topology, r *plan.Routes) *checker {
	c := &checker{topo: topo, r: r, load: make([]int32, len(topo.Switches())*256)}
	for e, ep := range topo.Endpoints() {
		if topo.SwitchIndex(ep.Node) >= 0 || !topo.IsLinkUp(ep) {
			continue
		}
		peer := topo.Port(ep).Peer
		if s := topo.SwitchIndex(peer.Node); s >= 0 {
			c.cas = append(c.cas, int32(e))
			c.home = append(c.home, s)
		}
	}
	return c
}

// walk follows plane k of dst from switch s, adding w to every
// switch-to-switch channel it crosses, and calls touch for each channel.
func (c *checker) walk(s int32, dst int32, k int, w int32, touch func(ch int32)) error {
	pl := c.r.Planes[dst].Planes[k]
	want := c.topo.Endpoints()[dst]
	sws := c.topo.Switches()
	for hops := 0; hops <= len(sws); hops++ {
		out := pl[s]
		if out == plan.NoPort {
			return fmt.Errorf("switch %d has no route to endpoint %d plane %d", s, dst, k)
		}
		node := sws[s]
		if out == 0 {
			if want.Node != node || want.Port != 0 {
				return fmt.Errorf("switch %d delivers endpoint %d to its port 0", s, dst)
			}
			return nil
		}
		ref := topology.PortRef{Node: node, Port: out}
		if int(out) >= len(c.topo.Nodes[node].Ports) || !c.topo.IsLinkUp(ref) {
			return fmt.Errorf("switch %d routes endpoint %d out of port %d, not an up link", s, dst, out)
		}
		peer := c.topo.Port(ref).Peer
		if peer == want {
			return nil
		}
		ns := c.topo.SwitchIndex(peer.Node)
		if ns < 0 {
			return fmt.Errorf("switch %d delivers endpoint %d to the wrong CA", s, dst)
		}
		ch := s*256 + int32(out)
		c.load[ch] += w
		if touch != nil {
			touch(ch)
		}
		s = ns
	}
	return fmt.Errorf("loop toward endpoint %d plane %d", dst, k)
}

// allToAll returns the largest switch-to-switch channel load under uniform
// all-to-all CA traffic on plane 0.
func (c *checker) allToAll() (int32, error) {
	clear(c.load)
	perLeaf := map[int32]int32{}
	for _, h := range c.home {
		perLeaf[h]++
	}
	for _, d := range c.cas {
		for leaf, n := range perLeaf {
			if err := c.walk(leaf, d, 0, n, nil); err != nil {
				return 0, err
			}
		}
	}
	var m int32
	for _, l := range c.load {
		m = max(m, l)
	}
	return m, nil
}

// worstShift returns the largest channel load over the shift permutations
// i -> (i+s) mod N, s = 1..N-1, of CAs in the given order (endpoints).
func (c *checker) worstShift(order []int32) (int32, error) {
	clear(c.load)
	homeOf := map[int32]int32{}
	for i, e := range c.cas {
		homeOf[e] = c.home[i]
	}
	var touched []int32
	var worst int32
	n := len(order)
	for s := 1; s < n; s++ {
		touched = touched[:0]
		for j := 0; j < n; j++ {
			src, dst := order[j], order[(j+s)%n]
			if err := c.walk(homeOf[src], dst, 0, 1, func(ch int32) { touched = append(touched, ch) }); err != nil {
				return 0, err
			}
		}
		for _, ch := range touched {
			worst = max(worst, c.load[ch])
			c.load[ch] = 0
		}
	}
	return worst, nil
}
