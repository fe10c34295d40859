package netfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/ibsm/ibsm/sdk/topology"
)

// ParseFile reads the topology file at path.
func ParseFile(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("netfile: %w", err)
	}
	defer fh.Close()
	return Parse(path, fh)
}

// Parse reads a topology file; filename is used only in error messages,
// which have the form "filename:line: message".
func Parse(filename string, r io.Reader) (*File, error) {
	p := &parser{
		file:     filename,
		f:        New(),
		guidBase: map[topology.NodeType]uint64{topology.CA: 0x100000, topology.Switch: 0x200000, topology.Router: 0},
		defWidth: Width4x,
		defSpeed: SDR,
		decls:    map[portKey]*portDecl{},
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		p.line++
		if err := p.parseLine(strings.TrimRight(sc.Text(), "\r")); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, p.errf("line longer than 1 MiB")
		}
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	if err := p.resolve(); err != nil {
		return nil, err
	}
	return p.f, nil
}

type portKey struct {
	n *Node
	p int
}

// portDecl is one port line, kept until every record is read.
type portDecl struct {
	n        *Node
	p        int
	peer     string
	peerPort int
	width    Width // enabled set
	speed    Speed // enabled set
	explicit bool  // width/speed came from an ibnetdiscover trailer
	line     int
}

type parser struct {
	file string
	line int
	f    *File

	cur       *Node // open record
	inRecord  bool
	guidBase  map[topology.NodeType]uint64
	sysImage  uint64 // next node only
	vendID    uint32 // next node only
	devID     uint32 // sticky
	defWidth  Width
	defSpeed  Speed
	decls     map[portKey]*portDecl
	declOrder []*portDecl
}

func (p *parser) errf(format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s", p.file, p.line, fmt.Sprintf(format, a...))
}

func (p *parser) errAt(line int, format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s", p.file, line, fmt.Sprintf(format, a...))
}

func (p *parser) parseLine(raw string) error {
	s := strings.TrimLeft(raw, " \t")
	switch {
	case s == "":
		p.inRecord = false
		return nil
	case s[0] == '#':
		return nil
	case s[0] == '[':
		if !p.inRecord {
			return p.errf("port line outside a node record (is the header above misspelt, or separated by a blank line?)")
		}
		return p.parsePort(s)
	case s[0] == '@':
		return p.errf("port aliases (@) are an ibsim extension this parser does not support; write the peer's node id instead")
	}
	wasRecord := p.inRecord
	p.inRecord = false
	word := s
	if i := strings.IndexAny(s, " \t=+"); i >= 0 {
		word = s[:i]
	}
	var t topology.NodeType
	switch word {
	case "Switch":
		t = topology.Switch
	case "Ca", "Hca":
		t = topology.CA
	case "Rt":
		t = topology.Router
	case "include", "do":
		return p.errf("%q lines are ibsim extensions this parser does not support; flatten the file", word)
	}
	if t != 0 {
		if wasRecord {
			return p.errf("node header directly after a record; ibsim would swallow it: add a blank line before it")
		}
		return p.parseHeader(t, s[len(word):])
	}
	if len(word) < len(s) && (s[len(word)] == '=' || s[len(word)] == '+') {
		if wasRecord {
			return p.errf("directive directly after a record; ibsim would swallow it: add a blank line before it")
		}
		return p.parseDirective(word, s[len(word):])
	}
	// ibnetdiscover headings ("Non-Chassis Nodes", "Chassis 1 ...") and
	// anything else ibsim ignores.
	return nil
}

func (p *parser) parseDirective(key, rest string) error {
	if rest[0] == '+' {
		return p.errf("relative GUID directive %s+N is not supported; give an absolute %s=0x...", key, key)
	}
	val := rest[1:]
	if i := strings.IndexAny(val, " \t#("); i >= 0 {
		val = val[:i]
	}
	num := func(max uint64) (uint64, error) {
		v, err := strconv.ParseUint(val, 0, 64)
		if err != nil || v > max {
			return 0, p.errf("%s=%q: want a number (0x... or decimal) up to %#x", key, val, max)
		}
		return v, nil
	}
	var err error
	var v uint64
	switch key {
	case "switchguid", "caguid", "hcaguids", "rtguid", "sysimgguid":
		if v, err = num(^uint64(0)); err != nil {
			return err
		}
		switch key {
		case "switchguid":
			p.guidBase[topology.Switch] = v
		case "caguid", "hcaguids":
			p.guidBase[topology.CA] = v
		case "rtguid":
			p.guidBase[topology.Router] = v
		default:
			p.sysImage = v
		}
	case "vendid", "devid":
		if v, err = num(0xFFFFFFFF); err != nil {
			return err
		}
		if key == "vendid" {
			p.vendID = uint32(v)
		} else {
			p.devID = uint32(v)
		}
	case "width":
		if v, err = num(31); err != nil || v == 0 {
			return p.errf("width=%q: want a LinkWidthEnabled mask 1..31", val)
		}
		p.defWidth = Width(v)
	case "speed":
		if v, err = num(15); err != nil || v == 0 {
			return p.errf("speed=%q: want a LinkSpeedEnabled mask 1..15", val)
		}
		p.defSpeed = p.defSpeed&0xF0 | Speed(v&7)
	case "extspeed":
		if v, err = num(15); err != nil {
			return p.errf("extspeed=%q: want a LinkSpeedExtEnabled mask 0..15", val)
		}
		p.defSpeed = p.defSpeed&0x0F | Speed(v<<4)
	case "pdebug":
	case "module":
		return p.errf("module= is an ibsim extension this parser does not support; flatten the file")
	default:
		return p.errf("unknown directive %q (known: switchguid, caguid, rtguid, sysimgguid, vendid, devid, width, speed, extspeed)", key)
	}
	return nil
}

// cursor scans one line.
type cursor struct {
	s string
	i int
}

func (c *cursor) skipSpace() {
	for c.i < len(c.s) && (c.s[c.i] == ' ' || c.s[c.i] == '\t') {
		c.i++
	}
}

func (c *cursor) peek() byte {
	if c.i < len(c.s) {
		return c.s[c.i]
	}
	return 0
}

// delimited reads open...close and returns the inside.
func (c *cursor) delimited(open, close byte) (string, bool) {
	if c.peek() != open {
		return "", false
	}
	j := strings.IndexByte(c.s[c.i+1:], close)
	if j < 0 {
		return "", false
	}
	v := c.s[c.i+1 : c.i+1+j]
	c.i += j + 2
	return v, true
}

func (c *cursor) digits() string {
	j := c.i
	for c.i < len(c.s) && c.s[c.i] >= '0' && c.s[c.i] <= '9' {
		c.i++
	}
	return c.s[j:c.i]
}

func (p *parser) parseHeader(t topology.NodeType, rest string) error {
	c := &cursor{s: rest}
	c.skipSpace()
	d := c.digits()
	n, err := strconv.Atoi(d)
	if d == "" || err != nil || n < 1 || n > MaxPorts {
		return p.errf("node header: want the port count (1..%d) after the type, e.g. Switch 36 \"S-1\"", MaxPorts)
	}
	c.skipSpace()
	name, ok := c.delimited('"', '"')
	if !ok {
		return p.errf("node header: want the node id in double quotes after the port count")
	}
	desc, lid, lmc, enhanced, err := p.headerComment(c.s[c.i:])
	if err != nil {
		return err
	}
	guid := p.guidBase[t]
	if guid == 0 {
		return p.errf("%s %q would get GUID 0: put a %s=0x... line before it", typeWord(t), name, guidDirective(t))
	}
	node, err := p.f.add(t, name, guid, n)
	if err != nil {
		if o := p.f.Node(name); o != nil {
			return p.errf("duplicate node id %q (first defined at line %d)", name, o.line)
		}
		if o := p.f.NodeByGUID(guid); o != nil {
			return p.errf("%s %q gets GUID 0x%016x, already used by %q (line %d); fix the guid lines", typeWord(t), name, guid, o.Name, o.line)
		}
		return p.errf("%s", strings.TrimPrefix(err.Error(), "netfile: "))
	}
	node.line = p.line
	if desc != "" {
		node.Desc = desc
	}
	if t == topology.Switch {
		node.LID, node.LMC, node.Enhanced = lid, lmc, enhanced
		p.guidBase[t] = guid + 1
	} else {
		p.guidBase[t] = guid + uint64(n) + 1
	}
	if p.sysImage != 0 {
		node.SysImageGUID = p.sysImage
	}
	node.VendorID, node.DeviceID = p.vendID, p.devID
	p.sysImage, p.vendID = 0, 0
	p.cur, p.inRecord = node, true
	return nil
}

// token is one word of a comment; quoted strings are one token.
type token struct {
	s      string
	quoted bool
}

// tokens splits a comment into words, keeping "quoted strings" whole.
func tokens(s string) []token {
	var out []token
	c := &cursor{s: s}
	for {
		c.skipSpace()
		if c.i >= len(s) {
			return out
		}
		if c.peek() == '"' {
			if v, ok := c.delimited('"', '"'); ok {
				out = append(out, token{v, true})
				continue
			}
		}
		j := c.i
		for c.i < len(s) && s[c.i] != ' ' && s[c.i] != '\t' {
			c.i++
		}
		out = append(out, token{s[j:c.i], false})
	}
}

func (p *parser) lidLMC(tok []token, i int) (uint16, uint8, error) {
	var lid uint16
	var lmc uint8
	if i+1 >= len(tok) {
		return 0, 0, p.errf("\"lid\" without a number")
	}
	v, err := strconv.ParseUint(tok[i+1].s, 0, 16)
	if err != nil {
		return 0, 0, p.errf("lid %q: want a number 0..65535", tok[i+1].s)
	}
	lid = uint16(v)
	if i+3 < len(tok) && tok[i+2] == (token{s: "lmc"}) {
		m, err := strconv.ParseUint(tok[i+3].s, 10, 8)
		if err != nil || m > 7 {
			return 0, 0, p.errf("lmc %q: want 0..7", tok[i+3].s)
		}
		lmc = uint8(m)
	}
	return lid, lmc, nil
}

func (p *parser) headerComment(s string) (desc string, lid uint16, lmc uint8, enhanced bool, err error) {
	c := &cursor{s: s}
	c.skipSpace()
	if c.i >= len(s) {
		return
	}
	if c.peek() != '#' {
		return "", 0, 0, false, p.errf("node header: unexpected %q after the node id; descriptions go in a comment: # \"desc\"", s[c.i:])
	}
	tok := tokens(s[c.i+1:])
	for i, t := range tok {
		switch {
		case i == 0 && t.quoted:
			desc = t.s
		case t == token{s: "enhanced"}:
			enhanced = true
		case t == token{s: "lid"}:
			if lid, lmc, err = p.lidLMC(tok, i); err != nil {
				return
			}
		}
	}
	return
}

func (p *parser) parsePort(s string) error {
	n := p.cur
	c := &cursor{s: s}
	ps, _ := c.delimited('[', ']')
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 {
		return p.errf("port line: want [port number] at the start")
	}
	if port < 1 || port > n.NumPorts() {
		return p.errf("port %d out of range: %s %q has %d ports", port, typeWord(n.Type), n.Name, n.NumPorts())
	}
	key := portKey{n, port}
	if o := p.decls[key]; o != nil {
		return p.errf("port %d of %q declared twice (first at line %d)", port, n.Name, o.line)
	}
	d := &portDecl{n: n, p: port, peerPort: 1, width: p.defWidth, speed: p.defSpeed, line: p.line}
	if g, ok := c.delimited('(', ')'); ok && n.Type != topology.Switch {
		v, err := strconv.ParseUint(g, 16, 64)
		if err != nil || v == 0 {
			return p.errf("port GUID (%s): want hex digits", g)
		}
		n.Ports[port].GUID = v
	}
	c.skipSpace()
	peer, ok := c.delimited('"', '"')
	if !ok || peer == "" {
		return p.errf("port line: want the peer node id in double quotes after [%d]", port)
	}
	d.peer = peer
	if c.peek() == '[' {
		qs, ok := c.delimited('[', ']')
		q, err := strconv.Atoi(qs)
		if !ok || err != nil || q < 0 {
			return p.errf("port line: peer port [%s] is not a number", qs)
		}
		d.peerPort = q
	}
	c.delimited('(', ')') // peer port GUID: informational
	// ibsim options before the comment.
	for {
		c.skipSpace()
		if c.i >= len(s) || c.peek() == '#' {
			break
		}
		j := c.i
		for c.i < len(s) && s[c.i] != ' ' && s[c.i] != '\t' && s[c.i] != '#' {
			c.i++
		}
		opt := s[j:c.i]
		k, v, ok := strings.Cut(opt, "=")
		if !ok {
			return p.errf("port line: unexpected %q; options are w=N s=N e=N and comments start with #", opt)
		}
		num, err := strconv.ParseUint(v, 0, 8)
		switch k {
		case "w":
			if err != nil || num == 0 || num > 31 {
				return p.errf("w=%s: want a LinkWidthEnabled mask 1..31", v)
			}
			d.width = Width(num)
		case "s":
			if err != nil || num == 0 || num > 7 {
				return p.errf("s=%s: want a LinkSpeedEnabled mask 1..7", v)
			}
			d.speed = d.speed&0xF0 | Speed(num)
		case "e":
			if err != nil || num > 15 {
				return p.errf("e=%s: want a LinkSpeedExtEnabled mask 0..15", v)
			}
			d.speed = d.speed&0x0F | Speed(num<<4)
		}
	}
	if c.peek() == '#' {
		tok := tokens(s[c.i+1:])
		if n.Type != topology.Switch {
			for i, t := range tok {
				if t == (token{s: "lid"}) {
					lid, lmc, err := p.lidLMC(tok, i)
					if err != nil {
						return err
					}
					n.Ports[port].LID, n.Ports[port].LMC = lid, lmc
					break
				}
			}
		}
		if last := len(tok) - 1; last >= 0 && !tok[last].quoted {
			if w, sp, ok := parseLinkTrailer(tok[last].s); ok {
				d.width, d.speed, d.explicit = w, sp, true
			} else if looksLikeTrailer(tok[last].s) {
				return p.errf("link %q: want <width>x<speed> such as 4xQDR (widths 1x 2x 4x 8x 12x; speeds SDR DDR QDR FDR10 FDR EDR HDR NDR)", tok[last].s)
			}
		}
	}
	p.decls[key] = d
	p.declOrder = append(p.declOrder, d)
	return nil
}

func looksLikeTrailer(t string) bool {
	i := strings.IndexByte(t, 'x')
	if i <= 0 || i > 2 {
		return false
	}
	_, err := strconv.Atoi(t[:i])
	return err == nil && len(t) > i+1 && t[i+1] >= 'A' && t[i+1] <= 'Z'
}

// parseLinkTrailer parses "4xQDR". FDR10 (a Mellanox extension outside
// PortInfo) is read as QDR, its PortInfo speed.
func parseLinkTrailer(t string) (Width, Speed, bool) {
	i := strings.IndexByte(t, 'x')
	if i <= 0 {
		return 0, 0, false
	}
	var w Width
	for _, o := range widthOrder {
		if o.name == t[:i+1] {
			w = o.w
		}
	}
	sp := t[i+1:]
	var s Speed
	if sp == "FDR10" {
		s = QDR
	}
	for _, o := range speedNames {
		if o.name == sp {
			s = o.s
		}
	}
	return w, s, w != 0 && s != 0
}

// resolve connects the declared ports once every record is known.
func (p *parser) resolve() error {
	claimed := map[portKey]*portDecl{} // peer port -> one-sided declaration naming it
	for _, d := range p.declOrder {
		peer := p.f.Node(d.peer)
		if peer == nil {
			return p.errAt(d.line, "unknown peer node %q: no record has this id", d.peer)
		}
		if d.peerPort < 1 || d.peerPort > peer.NumPorts() {
			return p.errAt(d.line, "peer port %d out of range: %s %q has %d ports", d.peerPort, typeWord(peer.Type), peer.Name, peer.NumPorts())
		}
		if peer == d.n && d.peerPort == d.p {
			return p.errAt(d.line, "port %d of %q is cabled to itself", d.p, d.n.Name)
		}
		back := p.decls[portKey{peer, d.peerPort}]
		w, s := d.width, d.speed
		if back != nil {
			if back.peer != d.n.Name || back.peerPort != d.p {
				return p.errAt(d.line, "%q[%d] links to %q[%d], but line %d links %q[%d] to %q[%d]",
					d.n.Name, d.p, peer.Name, d.peerPort, back.line, peer.Name, d.peerPort, back.peer, back.peerPort)
			}
			if d.explicit && back.explicit && (d.width != back.width || d.speed != back.speed) {
				return p.errAt(d.line, "link %q[%d]-%q[%d] declared differently from each side: %v%v here, %v%v at line %d",
					d.n.Name, d.p, peer.Name, d.peerPort, d.width, d.speed, back.width, back.speed, back.line)
			}
			w, s = w&back.width, s&back.speed
		} else {
			k := portKey{peer, d.peerPort}
			if o := claimed[k]; o != nil {
				return p.errAt(d.line, "%q[%d] is cabled twice: line %d already links it to %q[%d]", peer.Name, d.peerPort, o.line, o.n.Name, o.p)
			}
			claimed[k] = d
		}
		if w == 0 || s == 0 {
			return p.errAt(d.line, "link %q[%d]-%q[%d]: the two ends' enabled widths or speeds have nothing in common", d.n.Name, d.p, peer.Name, d.peerPort)
		}
		if d.n.Ports[d.p].Peer == nil {
			link(d.n, d.p, peer, d.peerPort, w.fastest(), s.fastest())
		}
	}
	return nil
}

func guidDirective(t topology.NodeType) string {
	switch t {
	case topology.Switch:
		return "switchguid"
	case topology.Router:
		return "rtguid"
	}
	return "caguid"
}
