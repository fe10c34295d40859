package conf

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// transportAttrs says which transports use each transport-specific attribute.
var transportAttrs = []struct {
	name string
	use  []Transport
}{
	{"topology", []Transport{TransportSim}},
	{"sm_node", []Transport{TransportSim, TransportIBSim}},
	{"sm_port", []Transport{TransportSim, TransportIBSim}},
	{"socket", []Transport{TransportIBSim}},
	{"attach", []Transport{TransportIBSim}},
	{"device", []Transport{TransportUMAD}},
	{"port", []Transport{TransportUMAD}},
}

func (d *decoder) fabric(b *hcl.Block) Fabric {
	f := Fabric{
		Transport: TransportSim,
		SMPort:    DefaultSMPort,
		Socket:    DefaultIBSimSocket,
		Port:      DefaultUMADPort,
		DeclRange: b.DefRange,
	}
	c := d.content(b.Body, fabricSchema)
	if c == nil {
		return f
	}
	var tr string
	if fv := attr(d, c.Attributes, "transport", &tr); fv.ok {
		switch t := Transport(tr); t {
		case TransportSim, TransportIBSim, TransportUMAD:
			f.Transport = t
		default:
			d.errorf(fv.rng, "Unknown transport",
				`transport = %q is not a transport. Use "sim" (embedded fabric from a topology file), "ibsim" (a running ibsim) or "umad" (hardware).`, tr)
			return f
		}
	}
	for _, ta := range transportAttrs {
		a, ok := c.Attributes[ta.name]
		if !ok || containsT(ta.use, f.Transport) {
			continue
		}
		names := make([]string, len(ta.use))
		for i, t := range ta.use {
			names[i] = strconv.Quote(string(t))
		}
		d.errorf(a.NameRange, "Attribute not used by this transport",
			"%s is only used by transport %s, but this fabric uses transport %q. Remove it, or change transport.",
			ta.name, strings.Join(names, " or "), f.Transport)
	}

	var topo, node, socket, attach, device string
	var smPort, port int
	topoF := attr(d, c.Attributes, "topology", &topo)
	nodeF := attr(d, c.Attributes, "sm_node", &node)
	smPortF := attr(d, c.Attributes, "sm_port", &smPort)
	socketF := attr(d, c.Attributes, "socket", &socket)
	attachF := attr(d, c.Attributes, "attach", &attach)
	deviceF := attr(d, c.Attributes, "device", &device)
	portF := attr(d, c.Attributes, "port", &port)

	switch f.Transport {
	case TransportSim:
		switch {
		case !topoF.present:
			d.errorf(b.DefRange, "Missing topology",
				`Transport "sim" builds the fabric from a topology file (ibnetdiscover/ibsim format). Add topology = "<file>.net"; a relative path is relative to this file's directory.`)
		case topoF.ok && topo == "":
			d.errorf(topoF.rng, "Empty topology path", "topology must name a topology file.")
		case topoF.ok:
			f.Topology, f.TopologyRange = d.abs(topo), topoF.rng
		}
	case TransportIBSim:
		if socketF.ok {
			if socket == "" || len(socket) > 100 || strings.ContainsAny(socket, "\x00/") {
				d.errorf(socketF.rng, "Invalid ibsim socket name",
					"socket = %q must be ibsim's socket base name (IBSIM_SOCKNAME, default \"sim\"): 1..100 characters, no '/'.", socket)
			} else {
				f.Socket = socket
			}
		}
		if attachF.ok {
			// CONNECT carries the node id in a 32-byte NUL-terminated field.
			if attach == "" || len(attach) > 31 || strings.ContainsRune(attach, 0) {
				d.errorf(attachF.rng, "Invalid ibsim attach point",
					"attach = %q must be an ibsim node id or node description of 1..31 bytes; omit it to attach to ibsim's first node.", attach)
			} else {
				f.Attach = attach
			}
		}
		if attachF.present && nodeF.present {
			d.errorf(nodeF.rng, "Conflicting attach point",
				"Both attach (at %s) and sm_node name the node the SM attaches through. Keep one of them.", attachF.rng)
		}
	case TransportUMAD:
		switch {
		case !deviceF.present:
			d.errorf(b.DefRange, "Missing device",
				`Transport "umad" needs the HCA to use: add device = "mlx5_0" (a name listed by ibstat).`)
		case deviceF.ok && (device == "" || strings.ContainsAny(device, "/\x00")):
			d.errorf(deviceF.rng, "Invalid device name",
				"device = %q must be an HCA name such as \"mlx5_0\" (see ibstat), not a path.", device)
		case deviceF.ok:
			f.Device = device
		}
		if portF.ok {
			if port < 1 || port > 254 {
				d.errorf(portF.rng, "Port out of range", "port = %d; HCA port numbers are 1..254.", port)
			} else {
				f.Port = uint8(port)
			}
		}
	}
	if nodeF.ok && containsT([]Transport{TransportSim, TransportIBSim}, f.Transport) {
		g, err := ParseGUID(node)
		if err != nil {
			d.errorf(nodeF.rng, "Invalid GUID", "sm_node = %q: %v.", node, err)
		} else {
			f.SMNode = g
		}
	}
	if smPortF.ok && containsT([]Transport{TransportSim, TransportIBSim}, f.Transport) {
		if smPort < 0 || smPort > 254 {
			d.errorf(smPortF.rng, "Port out of range",
				"sm_port = %d; use 0 for a switch's management port or 1..254 for a CA port.", smPort)
		} else {
			f.SMPort = uint8(smPort)
		}
	}
	return f
}

// ParseGUID parses a 64-bit GUID written as up to 16 hex digits with an
// optional 0x prefix. The zero GUID is invalid.
func ParseGUID(s string) (uint64, error) {
	h := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if h == "" || len(h) > 16 {
		return 0, fmt.Errorf("a GUID is 1..16 hex digits, optionally prefixed by 0x, e.g. \"0x0002c90300000001\"")
	}
	g, err := strconv.ParseUint(h, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not hexadecimal; write a GUID like \"0x0002c90300000001\"", h)
	}
	if g == 0 {
		return 0, fmt.Errorf("GUID 0 is reserved; use the node GUID ibnetdiscover shows")
	}
	return g, nil
}

func containsT(ts []Transport, t Transport) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}
