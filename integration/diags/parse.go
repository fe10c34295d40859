package diags

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// Discovery is what ibnetdiscover saw: the fabric and the LID of every port
// that carries one (a switch's port 0, every CA or router port).
type Discovery struct {
	File *netfile.File
	// LIDs maps a port GUID (a switch's node GUID for its port 0) to its
	// base LID as ibnetdiscover printed it; 0 means the port has none.
	LIDs map[uint64]uint16

	caPorts map[uint64]portRef
}

type portRef struct {
	node *netfile.Node
	port int
}

// ParseIBNetDiscover reads ibnetdiscover's default output. It is the same
// format ibsim loads, so transport/netfile parses it; this adds the LIDs
// ibnetdiscover prints in the comments.
func ParseIBNetDiscover(r io.Reader) (*Discovery, error) {
	f, err := netfile.Parse("ibnetdiscover", r)
	if err != nil {
		return nil, err
	}
	if len(f.Nodes) == 0 {
		return nil, errors.New("ibnetdiscover: no nodes in the output (did it run against the right IBSIM_SOCKNAME?)")
	}
	d := &Discovery{File: f, LIDs: map[uint64]uint16{}, caPorts: map[uint64]portRef{}}
	for _, n := range f.Nodes {
		if n.NumPorts() == 0 {
			continue
		}
		if n.Type == topology.Switch {
			d.LIDs[n.GUID] = n.LID
			continue
		}
		for p := 1; p <= n.NumPorts(); p++ {
			if n.Ports[p].Peer != nil {
				d.LIDs[n.Ports[p].GUID] = n.Ports[p].LID
				d.caPorts[n.Ports[p].GUID] = portRef{n, p}
			}
		}
	}
	return d, nil
}

// Peer returns the node and port at the far end of a node's port.
func (d *Discovery) Peer(nodeGUID uint64, port int) (*netfile.Node, int, bool) {
	n := d.File.NodeByGUID(nodeGUID)
	if n == nil || port < 1 || port > n.NumPorts() || n.Ports[port].Peer == nil {
		return nil, 0, false
	}
	return n.Ports[port].Peer, n.Ports[port].PeerPort, true
}

// LFT is one switch's linear forwarding table as a tool printed it.
type LFT struct {
	GUID uint64
	Desc string
	// Lo and Hi are the LID range the header announced.
	Lo, Hi uint16
	// Out[lid] is the egress port; NoPort for LIDs not listed.
	Out []uint8
}

// NoPort marks an LFT entry that forwards nowhere (0xFF on the wire).
const NoPort = 0xFF

// Port returns the egress port for lid, NoPort beyond the table.
func (l *LFT) Port(lid uint16) uint8 {
	if int(lid) >= len(l.Out) {
		return NoPort
	}
	return l.Out[lid]
}

// set grows the table to hold lid.
func (l *LFT) set(lid uint16, port uint8) {
	for int(lid) >= len(l.Out) {
		l.Out = append(l.Out, NoPort)
	}
	l.Out[lid] = port
}

var (
	// dump_fts: "Unicast lids [0x0-0xe] of switch DR path slid 0; dlid 0; 0,1,3 guid 0x0002c90000000004 (random switch 3):"
	// OpenSM's opensm-lfts.dump: "Unicast lids [0-14] of switch Lid 2 guid 0x0002c90000000001 ('random switch 0'):"
	reLFTHead  = regexp.MustCompile(`^Unicast lids \[(0x[0-9a-fA-F]+|\d+)-(0x[0-9a-fA-F]+|\d+)\] of switch .*\bguid (0x[0-9a-fA-F]+) \((.*)\):$`)
	reLFTEntry = regexp.MustCompile(`^(0x[0-9a-fA-F]{1,4}) +(\d{1,3})\b`)
	reLFTEnd   = regexp.MustCompile(`^(\d+) (valid )?lids dumped\s*$`)
)

// ParseLFTs reads dump_fts output or OpenSM's opensm-lfts.dump (the same
// per-switch blocks with ':' or '#' before the destination text) into one
// LFT per switch GUID. Each block must end with its "N lids dumped" line
// and N must match the entries read, so truncated output is an error.
func ParseLFTs(r io.Reader) (map[uint64]*LFT, error) {
	out := map[uint64]*LFT{}
	var cur *LFT
	entries := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimRight(sc.Text(), " \t")
		switch {
		case reLFTHead.MatchString(s):
			if cur != nil {
				return nil, fmt.Errorf("line %d: new switch block before the \"lids dumped\" line of switch %#016x (truncated output?)", line, cur.GUID)
			}
			m := reLFTHead.FindStringSubmatch(s)
			lo, err1 := strconv.ParseUint(m[1], 0, 16)
			hi, err2 := strconv.ParseUint(m[2], 0, 16)
			guid, err3 := strconv.ParseUint(m[3], 0, 64)
			if err := errors.Join(err1, err2, err3); err != nil || lo > hi {
				return nil, fmt.Errorf("line %d: bad switch header %q", line, s)
			}
			if _, dup := out[guid]; dup {
				return nil, fmt.Errorf("line %d: switch %#016x listed twice", line, guid)
			}
			cur = &LFT{GUID: guid, Desc: strings.Trim(m[4], "'"), Lo: uint16(lo), Hi: uint16(hi)}
			entries = 0
		case cur == nil:
			// Text between blocks (none expected; tolerate blank lines).
			if s != "" {
				return nil, fmt.Errorf("line %d: %q outside a switch block", line, s)
			}
		case reLFTEntry.MatchString(s):
			m := reLFTEntry.FindStringSubmatch(s)
			lid, err1 := strconv.ParseUint(m[1], 0, 16)
			port, err2 := strconv.ParseUint(m[2], 10, 8)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("line %d: bad entry %q", line, s)
			}
			if uint16(lid) < cur.Lo || uint16(lid) > cur.Hi {
				return nil, fmt.Errorf("line %d: LID %#x outside the block's range %#x-%#x", line, lid, cur.Lo, cur.Hi)
			}
			if cur.Port(uint16(lid)) != NoPort {
				return nil, fmt.Errorf("line %d: LID %#x listed twice for switch %#016x", line, lid, cur.GUID)
			}
			cur.set(uint16(lid), uint8(port))
			entries++
		case reLFTEnd.MatchString(s):
			n, _ := strconv.Atoi(reLFTEnd.FindStringSubmatch(s)[1])
			if n != entries {
				return nil, fmt.Errorf("line %d: switch %#016x: footer says %d lids, read %d", line, cur.GUID, n, entries)
			}
			out[cur.GUID] = cur
			cur = nil
		case strings.HasPrefix(strings.TrimSpace(s), "Lid") || strings.HasPrefix(strings.TrimSpace(s), "Port"):
			// dump_fts column headings.
		default:
			return nil, fmt.Errorf("line %d: unexpected %q in the block of switch %#016x", line, s, cur.GUID)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("switch %#016x: output ends without its \"lids dumped\" line (truncated?)", cur.GUID)
	}
	return out, nil
}

// ParseSMPDump reads the hex dump smpdump prints for one attribute
// (rows of 16-bit words, optionally followed by "SMP status: 0x...") and
// returns the 64 data bytes. A DR reply's status must be 0x8000 (direction
// bit only) or 0; anything else is an error.
func ParseSMPDump(r io.Reader) ([]byte, error) {
	var data []byte
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(s, "SMP status:"); ok {
			st, err := strconv.ParseUint(strings.TrimSpace(rest), 0, 16)
			if err != nil {
				return nil, fmt.Errorf("smpdump: bad status line %q", s)
			}
			if st&0x7FFF != 0 {
				return nil, fmt.Errorf("smpdump: MAD status %#04x", st)
			}
			continue
		}
		for _, w := range strings.Fields(s) {
			if len(w) != 4 {
				return nil, fmt.Errorf("smpdump: %q is not a 16-bit hex word (line %q)", w, s)
			}
			v, err := strconv.ParseUint(w, 16, 16)
			if err != nil {
				return nil, fmt.Errorf("smpdump: %q is not a 16-bit hex word (line %q)", w, s)
			}
			data = append(data, byte(v>>8), byte(v))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(data) != 64 {
		return nil, fmt.Errorf("smpdump: %d data bytes, want 64", len(data))
	}
	return data, nil
}

// Endpoint is the "From" or "To" line of ibtracert.
type Endpoint struct {
	Type     string // "ca", "switch" or "router"
	NodeGUID uint64
	Port     int
	LID      uint16 // base LID
	Desc     string
}

// Hop is one "[out] -> type port {guid}[in]" line of ibtracert: the packet
// leaves the previous node on Out and enters the port PortGUID on In.
type Hop struct {
	Out      int
	Type     string
	PortGUID uint64
	In       int
	LID      uint16
	Desc     string
}

// Trace is ibtracert's path from one LID to another.
type Trace struct {
	From, To Endpoint
	Hops     []Hop
}

// Step is one switch on a path: entered on In, left on Out (0 = the
// switch itself is the destination).
type Step struct {
	Switch  uint64
	In, Out int
}

// Steps lists the switches the trace crosses with their in and out ports.
func (t *Trace) Steps() []Step {
	var s []Step
	for i, h := range t.Hops {
		if h.Type != "switch" {
			continue
		}
		out := 0
		if i+1 < len(t.Hops) {
			out = t.Hops[i+1].Out
		}
		s = append(s, Step{Switch: h.PortGUID, In: h.In, Out: out})
	}
	return s
}

var (
	reTraceEnd = regexp.MustCompile(`^(From|To) (ca|switch|router) \{(0x[0-9a-fA-F]+)\} portnum (\d+) lid (\d+)-(\d+) "(.*)"$`)
	reTraceHop = regexp.MustCompile(`^\[(\d+)\] -> (ca|switch|router) port \{(0x[0-9a-fA-F]+)\}\[(\d+)\] lid (\d+)-(\d+) "(.*)"$`)
)

// ParseTrace reads ibtracert's default output. Any ibwarn/iberror line
// (an unreachable LID, a broken route) is an error carrying that text.
func ParseTrace(r io.Reader) (*Trace, error) {
	t := &Trace{}
	var haveFrom, haveTo bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		s := strings.TrimSpace(sc.Text())
		switch {
		case s == "":
		case reTraceEnd.MatchString(s):
			m := reTraceEnd.FindStringSubmatch(s)
			e, err := endpoint(m[2:])
			if err != nil {
				return nil, fmt.Errorf("ibtracert: %q: %w", s, err)
			}
			if m[1] == "From" {
				if haveFrom || len(t.Hops) > 0 {
					return nil, fmt.Errorf("ibtracert: unexpected %q", s)
				}
				t.From, haveFrom = e, true
			} else {
				if !haveFrom || haveTo {
					return nil, fmt.Errorf("ibtracert: unexpected %q", s)
				}
				t.To, haveTo = e, true
			}
		case reTraceHop.MatchString(s):
			if !haveFrom || haveTo {
				return nil, fmt.Errorf("ibtracert: hop outside From..To: %q", s)
			}
			m := reTraceHop.FindStringSubmatch(s)
			out, _ := strconv.Atoi(m[1])
			e, err := endpoint(m[2:])
			if err != nil {
				return nil, fmt.Errorf("ibtracert: %q: %w", s, err)
			}
			t.Hops = append(t.Hops, Hop{Out: out, Type: e.Type, PortGUID: e.NodeGUID, In: e.Port, LID: e.LID, Desc: e.Desc})
		default:
			return nil, fmt.Errorf("ibtracert: %s", s)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !haveFrom || !haveTo {
		return nil, errors.New("ibtracert: output lacks its From or To line")
	}
	return t, nil
}

// endpoint decodes type, {guid}, port, lid-lid and description.
func endpoint(m []string) (Endpoint, error) {
	guid, err := strconv.ParseUint(m[1], 0, 64)
	if err != nil {
		return Endpoint{}, err
	}
	port, _ := strconv.Atoi(m[2])
	lo, err1 := strconv.ParseUint(m[3], 10, 16)
	hi, err2 := strconv.ParseUint(m[4], 10, 16)
	if err := errors.Join(err1, err2); err != nil || hi < lo {
		return Endpoint{}, fmt.Errorf("bad LID range %s-%s", m[3], m[4])
	}
	return Endpoint{Type: m[0], NodeGUID: guid, Port: port, LID: uint16(lo), Desc: m[5]}, nil
}

// PathRecord is the part of a saquery PathRecord dump the checks use;
// Fields keeps every printed field verbatim.
type PathRecord struct {
	DLID, SLID uint16
	SL         uint8
	DGID, SGID string
	Fields     map[string]string
}

var rePRField = regexp.MustCompile(`^([a-z_0-9]+)\.{2,}(.*)$`)

// ParsePathRecords reads `saquery -p` output: "PathRecord dump:" blocks
// of "name.....value" lines.
func ParsePathRecords(r io.Reader) ([]PathRecord, error) {
	var out []PathRecord
	var cur *PathRecord
	finish := func() error {
		if cur == nil {
			return nil
		}
		for _, k := range []string{"dlid", "slid", "sl"} {
			if _, ok := cur.Fields[k]; !ok {
				return fmt.Errorf("saquery: PathRecord without %s", k)
			}
		}
		dl, err1 := strconv.ParseUint(cur.Fields["dlid"], 0, 16)
		sl, err2 := strconv.ParseUint(cur.Fields["slid"], 0, 16)
		lvl, err3 := strconv.ParseUint(cur.Fields["sl"], 0, 4)
		if err := errors.Join(err1, err2, err3); err != nil {
			return fmt.Errorf("saquery: PathRecord: %w", err)
		}
		cur.DLID, cur.SLID, cur.SL = uint16(dl), uint16(sl), uint8(lvl)
		cur.DGID, cur.SGID = cur.Fields["dgid"], cur.Fields["sgid"]
		out = append(out, *cur)
		cur = nil
		return nil
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		s := strings.TrimSpace(sc.Text())
		switch {
		case s == "":
		case s == "PathRecord dump:":
			if err := finish(); err != nil {
				return nil, err
			}
			cur = &PathRecord{Fields: map[string]string{}}
		case cur != nil && rePRField.MatchString(s):
			m := rePRField.FindStringSubmatch(s)
			cur.Fields[m[1]] = m[2]
		default:
			return nil, fmt.Errorf("saquery: %s", s)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return out, nil
}

// SMInfo is what sminfo printed about the master SM.
type SMInfo struct {
	LID      uint16
	GUID     uint64
	Activity uint32
	Priority int
	State    int // 3 = master
	StateStr string
}

// SMStateMaster is SMInfo's SMState for a master SM.
const SMStateMaster = 3

var reSMInfo = regexp.MustCompile(`^sminfo: sm lid (\d+) sm guid (0x[0-9a-fA-F]+), activity count (\d+) priority (\d+) state (\d+) (\S+)$`)

// ParseSMInfo reads sminfo's one-line answer.
func ParseSMInfo(s string) (SMInfo, error) {
	s = strings.TrimSpace(s)
	m := reSMInfo.FindStringSubmatch(s)
	if m == nil {
		return SMInfo{}, fmt.Errorf("sminfo: unexpected output %q", s)
	}
	lid, err1 := strconv.ParseUint(m[1], 10, 16)
	guid, err2 := strconv.ParseUint(m[2], 0, 64)
	act, err3 := strconv.ParseUint(m[3], 10, 32)
	pri, err4 := strconv.Atoi(m[4])
	st, err5 := strconv.Atoi(m[5])
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return SMInfo{}, fmt.Errorf("sminfo: %q: %w", s, err)
	}
	return SMInfo{LID: uint16(lid), GUID: guid, Activity: uint32(act), Priority: pri, State: st, StateStr: m[6]}, nil
}
