package netfile

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/ibsm/ibsm/sdk/topology"
)

// Write prints f in ibnetdiscover format with every link listed from both
// ends, explicit guid/vendid/devid/sysimgguid lines before each node and the
// active width and speed as a trailer (4xQDR), so that ibsim 0.10 loads it
// with the same GUIDs and link speeds and ibnetdiscover-format readers
// (including Parse) accept it. Descriptions must not contain '"' or newlines.
func Write(w io.Writer, f *File) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# Topology file written by ibsm netfile: %d nodes\n\n", len(f.Nodes))
	for _, n := range f.Nodes {
		if err := checkName(n.Name); err != nil {
			return err
		}
		if strings.ContainsAny(n.Desc, "\"\n\r") {
			return fmt.Errorf("netfile: node %q: description %q contains a quote or newline, which the format cannot carry", n.Name, n.Desc)
		}
		if n.NumPorts() < 1 || n.NumPorts() > MaxPorts {
			return fmt.Errorf("netfile: node %q has %d ports, want 1..%d", n.Name, n.NumPorts(), MaxPorts)
		}
		fmt.Fprintf(bw, "vendid=0x%x\ndevid=0x%x\nsysimgguid=0x%016x\n", n.VendorID, n.DeviceID, n.SysImageGUID)
		switch n.Type {
		case topology.Switch:
			port0 := "base"
			if n.Enhanced {
				port0 = "enhanced"
			}
			fmt.Fprintf(bw, "switchguid=0x%016x(%x)\n", n.GUID, n.GUID)
			fmt.Fprintf(bw, "Switch\t%d \"%s\"\t\t# \"%s\" %s port 0 lid %d lmc %d\n", n.NumPorts(), n.Name, n.Desc, port0, n.LID, n.LMC)
		case topology.CA, topology.Router:
			kw, g := "Ca", "caguid"
			if n.Type == topology.Router {
				kw, g = "Rt", "rtguid"
			}
			fmt.Fprintf(bw, "%s=0x%016x\n%s\t%d \"%s\"\t\t# \"%s\"\n", g, n.GUID, kw, n.NumPorts(), n.Name, n.Desc)
		default:
			return fmt.Errorf("netfile: node %q has unknown type %v", n.Name, n.Type)
		}
		for p := 1; p < len(n.Ports); p++ {
			pt := &n.Ports[p]
			if pt.Peer == nil {
				continue
			}
			peer := pt.Peer
			if pt.PeerPort < 1 || pt.PeerPort > peer.NumPorts() {
				return fmt.Errorf("netfile: %q[%d] links to port %d of %q, which has %d ports", n.Name, p, pt.PeerPort, peer.Name, peer.NumPorts())
			}
			if bp := &peer.Ports[pt.PeerPort]; bp.Peer != n || bp.PeerPort != p {
				return fmt.Errorf("netfile: link %q[%d]-%q[%d] is not symmetric", n.Name, p, peer.Name, pt.PeerPort)
			}
			if pt.Width.fastest() != pt.Width || pt.Width == 0 || pt.Speed.fastest() != pt.Speed || pt.Speed == 0 {
				return fmt.Errorf("netfile: link %q[%d]: width %v / speed %v is not one active value", n.Name, p, pt.Width, pt.Speed)
			}
			peerLID := peer.LID
			peerGUID := ""
			if peer.Type != topology.Switch {
				peerLID = peer.Ports[pt.PeerPort].LID
				peerGUID = fmt.Sprintf("(%x)", peer.Ports[pt.PeerPort].GUID)
			}
			if n.Type == topology.Switch {
				fmt.Fprintf(bw, "[%d]\t\"%s\"[%d]%s\t\t# \"%s\" lid %d %v%v\n", p, peer.Name, pt.PeerPort, peerGUID, peer.Desc, peerLID, pt.Width, pt.Speed)
			} else {
				fmt.Fprintf(bw, "[%d](%x)\t\"%s\"[%d]%s\t\t# lid %d lmc %d \"%s\" lid %d %v%v\n", p, pt.GUID, peer.Name, pt.PeerPort, peerGUID, pt.LID, pt.LMC, peer.Desc, peerLID, pt.Width, pt.Speed)
			}
		}
		bw.WriteString("\n")
	}
	return bw.Flush()
}
