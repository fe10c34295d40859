// Package dump writes the files OpenSM leaves at SUBNET UP, in OpenSM's
// exact formats, so that Debian ibutils' ibdmchk (and OpenSM's own `file`
// routing engine) can check or load what ibsm programmed:
//
//	opensm-subnet.lst  one line per directed link (ibdmchk -s)
//	opensm.fdbs        dump_ucast_routes (ibdmchk -f)
//	opensm-lfts.dump   dump_ucast_lfts (ibroute-compatible; OpenSM -U)
//	opensm.mcfdbs      dump_mcast_routes (ibdmchk -m; WriteAll leaves it empty, WriteMCFDBFile fills it)
//	opensm-sl2vl.dump  SL-to-VL tables (ibdmchk -d)
package dump

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ibsm/ibsm/conf/atomicfile"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// File names OpenSM uses.
const (
	SubnetFile = "opensm-subnet.lst"
	FDBFile    = "opensm.fdbs"
	LFTFile    = "opensm-lfts.dump"
	SL2VLFile  = "opensm-sl2vl.dump"
	MCFDBFile  = "opensm.mcfdbs"
)

// PathSLFile is the path-SL file for ibdmchk -c (OpenSM writes none; the
// name is ours).
const PathSLFile = "ibsm-path-sl.dump"

// MaxPathSLPairs bounds the CA-to-CA pairs WriteAll puts in the path-SL
// file (one line each, quadratic in CAs): about 2,000 CAs, 100 MB.
const MaxPathSLPairs = 1 << 22

// lids maps every port that has a LID to its base LID: a switch's ports all
// answer to the port-0 LID, as in OpenSM's dumps.
type lidMap struct {
	t    *topology.Topology
	l    *plan.LIDPlan
	base map[topology.PortRef]uint16
}

func newLIDMap(t *topology.Topology, l *plan.LIDPlan) (*lidMap, error) {
	eps := t.Endpoints()
	if l == nil || len(l.Ports) != len(eps) {
		return nil, fmt.Errorf("dump: LID plan does not cover the topology's %d endpoints", len(eps))
	}
	m := &lidMap{t: t, l: l, base: make(map[topology.PortRef]uint16, len(eps))}
	for e, p := range eps {
		m.base[p] = l.Ports[e].Base
	}
	return m, nil
}

func (m *lidMap) lid(r topology.PortRef) uint16 {
	if m.t.SwitchIndex(r.Node) >= 0 {
		r.Port = 0
	}
	return m.base[r]
}

func typeShort(t topology.NodeType) string {
	switch t {
	case topology.Switch:
		return "SW"
	case topology.Router:
		return "Rt"
	}
	return "CA"
}

// typeLong is ib_get_node_type_str().
func typeLong(t topology.NodeType) string {
	switch t {
	case topology.Switch:
		return "Switch"
	case topology.Router:
		return "Router"
	case topology.CA:
		return "Channel Adapter"
	}
	return "Unknown"
}

// width is osm_get_lwa_str() of LinkWidthActive.
func width(w uint8) string {
	switch w {
	case 1:
		return "1x"
	case 2:
		return "4x"
	case 4:
		return "8x"
	case 8:
		return "12x"
	case 16:
		return "2x"
	}
	return "??"
}

// speed is osm_get_lsa_str() of LinkSpeedActive.
func speed(s uint8) string {
	switch s {
	case 1:
		return "2.5"
	case 2:
		return "5"
	case 4:
		return "10"
	}
	return "??"
}

func logState(s topology.PortState) string {
	switch s {
	case topology.StateActive:
		return "ACT"
	case topology.StateArmed:
		return "ARM"
	case topology.StateInit:
		return "INI"
	}
	return "DWN"
}

func portGUID(t *topology.Topology, r topology.PortRef) uint64 {
	if t.SwitchIndex(r.Node) >= 0 {
		r.Port = 0
	}
	return t.Port(r).GUID
}

// WriteSubnetList writes opensm-subnet.lst: for every node in GUID order and
// every cabled port, the local and remote ends and the link's width, state
// and speed. The node holding the SM port is tagged "-SM". Topology carries
// no SystemGUID, vendor, device or revision: NodeGUID and zeros are written.
func WriteSubnetList(w io.Writer, t *topology.Topology, l *plan.LIDPlan) error {
	m, err := newLIDMap(t, l)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	end := func(r topology.PortRef, venFmt string) {
		n := &t.Nodes[r.Node]
		sm := ""
		if t.SM.Connected() && t.SM.Node == r.Node {
			sm = "-SM"
		}
		fmt.Fprintf(bw, "{ %s%s Ports:%02X SystemGUID:%016x NodeGUID:%016x PortGUID:%016x VenID:"+venFmt+" DevID:%04X Rev:%08X {%s} LID:%04X PN:%02X } ",
			typeShort(n.Type), sm, n.NumPorts(), n.GUID, n.GUID, portGUID(t, r), 0, 0, 0, n.Desc, m.lid(r), r.Port)
	}
	for i := range t.Nodes {
		n := &t.Nodes[i]
		for p := 1; p < len(n.Ports); p++ {
			port := &n.Ports[p]
			if !port.Peer.Connected() {
				continue
			}
			local := topology.PortRef{Node: int32(i), Port: uint8(p)}
			end(local, "%06X")
			end(port.Peer, "%08X") // sic: OpenSM prints the remote VenID with 8 digits
			fmt.Fprintf(bw, "PHY=%s LOG=%s SPD=%s\n", width(port.Width), logState(port.State), speed(port.Speed))
		}
	}
	return bw.Flush()
}

// hopTable gives OpenSM's least hops from every switch to every LID: 0 to
// its own port 0, 1 to an attached CA, switch-graph distance otherwise.
type hopTable struct {
	r    *plan.Realized
	n    int
	dist []int32 // dist[dstSwitch*n+s], computed lazily per destination switch
	done []bool
}

func newHopTable(r *plan.Realized) *hopTable {
	n := len(r.Topo.Switches())
	return &hopTable{r: r, n: n, done: make([]bool, n)}
}

func (h *hopTable) from(ds int32) []int32 {
	if h.dist == nil {
		h.dist = make([]int32, h.n*h.n)
	}
	row := h.dist[int(ds)*h.n : (int(ds)+1)*h.n]
	if h.done[ds] {
		return row
	}
	h.done[ds] = true
	t := h.r.Topo
	sws := t.Switches()
	for i := range row {
		row[i] = -1
	}
	row[ds] = 0
	q := []int32{ds}
	for qi := 0; qi < len(q); qi++ {
		s := q[qi]
		ports := t.Nodes[sws[s]].Ports
		for p := 1; p < len(ports); p++ {
			if !t.IsLinkUp(topology.PortRef{Node: sws[s], Port: uint8(p)}) {
				continue
			}
			if ps := t.SwitchIndex(ports[p].Peer.Node); ps >= 0 && row[ps] < 0 {
				row[ps] = row[s] + 1
				q = append(q, ps)
			}
		}
	}
	return row
}

// hops returns the least hops from switch s to endpoint e and the hops via
// out port out (-1: no path).
func (h *hopTable) hops(s int32, e int32, out uint8) (least, via int) {
	t := h.r.Topo
	ref := t.Endpoints()[e]
	ds, extra := t.SwitchIndex(ref.Node), 0
	if ds < 0 {
		peer := t.Port(ref).Peer
		if !peer.Connected() || !t.IsLinkUp(ref) {
			return -1, -1
		}
		ds, extra = t.SwitchIndex(peer.Node), 1
		if ds < 0 {
			return -1, -1
		}
	}
	row := h.from(ds)
	least = -1
	if row[s] >= 0 {
		least = int(row[s]) + extra
	}
	node := t.Switches()[s]
	switch {
	case out == 0:
		if ds == s && extra == 0 {
			return least, 0
		}
		return least, -1
	case int(out) >= len(t.Nodes[node].Ports) || !t.IsLinkUp(topology.PortRef{Node: node, Port: out}):
		return least, -1
	}
	peer := t.Nodes[node].Ports[out].Peer
	if t.SwitchIndex(peer.Node) < 0 {
		if peer == ref {
			return least, 1
		}
		return least, -1
	}
	if d := row[t.SwitchIndex(peer.Node)]; d >= 0 {
		return least, 1 + int(d) + extra
	}
	return least, -1
}

// WriteFDBs writes opensm.fdbs (OpenSM's dump_ucast_routes), the file
// ibdmchk -f parses: per switch, every LID 1..TopLID with its out port, least
// hops and whether the chosen port is on a shortest path.
func WriteFDBs(w io.Writer, r *plan.Realized) error {
	if err := checkRealized(r); err != nil {
		return err
	}
	t := r.Topo
	bw := bufio.NewWriter(w)
	h := newHopTable(r)
	for s, node := range t.Switches() {
		fmt.Fprintf(bw, "dump_ucast_routes: Switch 0x%016x\nLID    : Port : Hops : Optimal\n", t.Nodes[node].GUID)
		row := r.LFT[s]
		for lid := 1; lid <= int(r.TopLID); lid++ {
			fmt.Fprintf(bw, "0x%04X : ", lid)
			owner := r.LIDOwner[lid]
			out := row[lid]
			if owner == 0 || out == plan.NoPort {
				bw.WriteString("UNREACHABLE\n")
				continue
			}
			least, via := h.hops(int32(s), owner-1, out)
			fmt.Fprintf(bw, "%03d  : %02d   : ", out, max(least, 0))
			switch {
			case via >= 0 && via == least:
				bw.WriteString("yes\n")
			case via < 0:
				fmt.Fprintf(bw, "No %d hop path possible via port %d!\n", max(least, 0), out)
			default:
				fmt.Fprintf(bw, "%d hop path possible via port %d!\n", via, out)
			}
		}
	}
	return bw.Flush()
}

// WriteLFTs writes opensm-lfts.dump (OpenSM's dump_ucast_lfts, compatible
// with ibroute output and loadable by OpenSM's file engine).
func WriteLFTs(w io.Writer, r *plan.Realized) error {
	if err := checkRealized(r); err != nil {
		return err
	}
	t := r.Topo
	eps := t.Endpoints()
	bw := bufio.NewWriter(w)
	for s, node := range t.Switches() {
		n := &t.Nodes[node]
		own := r.LIDs.Ports[t.EndpointIndex(topology.PortRef{Node: node, Port: 0})].Base
		fmt.Fprintf(bw, "Unicast lids [0-%d] of switch Lid %d guid 0x%016x ('%s'):\n", r.TopLID, own, n.GUID, n.Desc)
		count := 0
		for lid := 1; lid <= int(r.TopLID); lid++ {
			out := r.LFT[s][lid]
			if out == plan.NoPort {
				continue
			}
			fmt.Fprintf(bw, "0x%04x %03d # ", lid, out)
			if o := r.LIDOwner[lid]; o != 0 {
				ref := eps[o-1]
				dn := &t.Nodes[ref.Node]
				fmt.Fprintf(bw, "%s portguid 0x%016x: '%s'\n", typeLong(dn.Type), portGUID(t, ref), dn.Desc)
			} else {
				fmt.Fprintf(bw, "unknown node and type (LID %d)\n", lid)
			}
			count++
		}
		fmt.Fprintf(bw, "%d lids dumped\n", count)
	}
	return bw.Flush()
}

// WriteSL2VL writes opensm-sl2vl.dump: per switch one line per (in, out)
// pair whose out port is up, per CA port one line "0 0"; ibdmchk -d reads it.
func WriteSL2VL(w io.Writer, t *topology.Topology, l *plan.LIDPlan, v *plan.VLPlan) error {
	m, err := newLIDMap(t, l)
	if err != nil {
		return err
	}
	if v == nil {
		v = &plan.VLPlan{}
	}
	type key struct {
		node    int32
		in, out uint8
	}
	tab := make(map[key][16]uint8, len(v.SL2VL))
	for _, e := range v.SL2VL {
		tab[key{e.Node, e.In, e.Out}] = e.VL
	}
	get := func(k key) [16]uint8 {
		if x, ok := tab[k]; ok {
			return x
		}
		return v.Default
	}
	bw := bufio.NewWriter(w)
	line := func(in, out int, vl [16]uint8) {
		fmt.Fprintf(bw, "%-3d %-3d :", in, out)
		for _, x := range vl {
			fmt.Fprintf(bw, " %-2d", x)
		}
		bw.WriteString("\n")
	}
	header := "#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15\n#--------------------------------------------------------\n"
	for i := range t.Nodes {
		n := &t.Nodes[i]
		ni := int32(i)
		if n.Type == topology.Switch {
			fmt.Fprintf(bw, "Switch 0x%016x, base LID %d, \"%s\"\n%s", n.GUID, m.lid(topology.PortRef{Node: ni}), n.Desc, header)
			for in := 0; in < len(n.Ports); in++ {
				for out := 1; out < len(n.Ports); out++ {
					if !t.IsLinkUp(topology.PortRef{Node: ni, Port: uint8(out)}) {
						continue
					}
					line(in, out, get(key{ni, uint8(in), uint8(out)}))
				}
			}
			continue
		}
		for p := 1; p < len(n.Ports); p++ {
			ref := topology.PortRef{Node: ni, Port: uint8(p)}
			if !n.Ports[p].Peer.Connected() {
				continue
			}
			fmt.Fprintf(bw, "%s 0x%016x, base LID %d, \"%s\"\n%s", typeLong(n.Type), n.Ports[p].GUID, m.lid(ref), n.Desc, header)
			line(0, 0, get(key{ni, uint8(p), uint8(p)}))
		}
	}
	return bw.Flush()
}

func checkRealized(r *plan.Realized) error {
	if r == nil || r.Topo == nil || r.LIDs == nil {
		return fmt.Errorf("dump: realised plan without topology or LIDs")
	}
	if len(r.LFT) != len(r.Topo.Switches()) || len(r.LIDOwner) != int(r.TopLID)+1 {
		return fmt.Errorf("dump: realised tables do not match the topology (%d tables for %d switches)", len(r.LFT), len(r.Topo.Switches()))
	}
	for _, row := range r.LFT {
		if len(row) != int(r.TopLID)+1 {
			return fmt.Errorf("dump: an LFT has %d entries, want %d", len(row), int(r.TopLID)+1)
		}
	}
	if len(r.LIDs.Ports) != len(r.Topo.Endpoints()) {
		return fmt.Errorf("dump: LID plan does not cover the topology's endpoints")
	}
	return nil
}

// WriteAll writes the subnet list, FDBs, multicast FDBs (empty) and LFTs
// into dir, and when vls is not nil the SL2VL dump and, for fabrics of at
// most MaxPathSLPairs CA pairs, the path-SL file; check them with
// `ibdmchk -s opensm-subnet.lst -f opensm.fdbs -m opensm.mcfdbs -c
// ibsm-path-sl.dump -d opensm-sl2vl.dump`.
func WriteAll(dir string, r *plan.Realized, vls *plan.VLPlan) error {
	if err := checkRealized(r); err != nil {
		return err
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{SubnetFile, func(w io.Writer) error { return WriteSubnetList(w, r.Topo, r.LIDs) }},
		{FDBFile, func(w io.Writer) error { return WriteFDBs(w, r) }},
		{LFTFile, func(w io.Writer) error { return WriteLFTs(w, r) }},
		// OpenSM writes an empty dump_mcast_routes when there are no
		// groups; ibdmchk refuses to run without the file.
		{MCFDBFile, func(io.Writer) error { return nil }},
	}
	if vls != nil {
		files = append(files, struct {
			name  string
			write func(io.Writer) error
		}{SL2VLFile, func(w io.Writer) error { return WriteSL2VL(w, r.Topo, r.LIDs, vls) }})
		if cas := countCAs(r.Topo); cas*(cas-1) <= MaxPathSLPairs {
			files = append(files, struct {
				name  string
				write func(io.Writer) error
			}{PathSLFile, func(w io.Writer) error { return WritePathSL(w, r, vls) }})
		}
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes through a temporary file and renames it, so a reader
// never sees half a dump.
func writeFile(path string, write func(io.Writer) error) error {
	// A mistyped directory is an error, not a new directory.
	if _, err := os.Stat(filepath.Dir(path)); err != nil {
		return fmt.Errorf("dump: %w (check that the dump directory exists)", err)
	}
	if err := atomicfile.WriteFunc(path, write); err != nil {
		return fmt.Errorf("dump: %w (check that the dump directory is writable)", err)
	}
	return nil
}

// WritePathSL writes the path-SL file ibdmchk -c reads ("0x<source node
// GUID> <DLID> <SL>" per line) for every CA-to-CA pair, with the DLID each
// source selects (rule and overrides) and its SL under vls. OpenSM writes no
// such file (ibdiagnet builds it from SA queries); its size is quadratic in
// CAs, so keep it for test and debugging fabrics.
func WritePathSL(w io.Writer, r *plan.Realized, vls *plan.VLPlan) error {
	if err := checkRealized(r); err != nil {
		return err
	}
	t := r.Topo
	eps := t.Endpoints()
	l := r.LIDs
	ov := make(map[[2]int32]uint8, len(l.Overrides))
	for _, o := range l.Overrides {
		ov[[2]int32{o.Src, o.Dst}] = o.Offset
	}
	if vls == nil {
		vls = &plan.VLPlan{}
	}
	bw := bufio.NewWriter(w)
	for src, sp := range eps {
		if t.Nodes[sp.Node].Type == topology.Switch {
			continue
		}
		for dst, dp := range eps {
			if dst == src || t.Nodes[dp.Node].Type == topology.Switch {
				continue
			}
			dlid := l.DLID(int32(src), int32(dst))
			if off, ok := ov[[2]int32{int32(src), int32(dst)}]; ok {
				dlid = l.Ports[dst].Base + uint16(off)
			}
			fmt.Fprintf(bw, "0x%016x %d %d\n", t.Nodes[sp.Node].GUID, dlid, vls.SL(int32(src), dlid))
		}
	}
	return bw.Flush()
}

func countCAs(t *topology.Topology) int {
	n := 0
	for _, ep := range t.Endpoints() {
		if t.Nodes[ep.Node].Type != topology.Switch {
			n++
		}
	}
	return n
}
