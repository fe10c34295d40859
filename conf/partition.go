package conf

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/hashicorp/hcl/v2"
)

// Partitions (IBA 10.9): partition "<name>" {} blocks.
//
//	partition "storage" {
//	  pkey            = "0x0002"
//	  members         = ["all_cas", "self"]          # full members
//	  limited_members = ["desc:login-*"]             # limited members
//	  ipoib { mtu = 4096  rate = 100 }               # IPoIB broadcast group
//	}
//
// A member selector is a port GUID ("0x0002c90300000001"), a node
// description glob ("desc:compute-*": every end port of the nodes whose
// NodeDescription matches; * and ? match any characters, [..] a class),
// "all_cas" (every CA port), "all_switches" (every switch's port 0),
// "all" (every end port) or "self" (the SM's own port). When several
// selectors of one partition name a port, the most specific decides its
// membership (a GUID or self, then a description glob, then
// all_cas/all_switches, then all); at equal specificity full wins. So
// members = ["all_cas"] with limited_members = ["0x...01"] makes that one
// port a limited member.
//
// The SM's own port is a full member of every partition, whatever the
// lists say (it answers SA queries from every member, and two limited
// members cannot talk); naming it as a limited member is an error.
//
// Without a partition whose P_Key is 0x7fff, the default partition is
// added as OpenSM adds it: every end port a full member, IPoIB with the
// defaults below. Declaring 0x7fff replaces it (to make compute nodes
// limited members of the default partition, say); ports left out of it
// lose the default P_Key.
//
// The configuration cannot know the fabric: a GUID that no port has, or a
// glob that matches no node, is a warning of the sweep that resolves the
// partitions (naming the partition and the selector), not an error here.

// DefaultPKey is the default partition's P_Key (IBA 10.9.1.2), without the
// membership bit.
const DefaultPKey = 0x7FFF

// DefaultPartitionName names the implicit default partition; a partition
// of that name must use DefaultPKey.
const DefaultPartitionName = "default"

// IPoIB defaults, as OpenSM's default partition and the IPoIB RFC 4391
// broadcast group: 2048-byte MTU (code 4), 10 Gb/s (rate code 3), SL 0,
// link-local scope, Q_Key 0x0B1B.
const (
	DefaultIPoIBMTU   = 4
	DefaultIPoIBRate  = 3
	DefaultIPoIBScope = 2
	DefaultIPoIBQKey  = 0x0B1B
)

// Partition is one partition block, or the implicit default partition.
type Partition struct {
	Name string
	// PKey is the 15-bit partition key (the membership bit is per member).
	PKey    uint16
	Members []PartitionMember
	// IPoIB is the ipoib {} block: the partition gets an IPoIB broadcast
	// group with these parameters. nil: no IPoIB group.
	IPoIB *IPoIB
	// Range is the block's header; zero for the implicit default.
	Range hcl.Range
	// Implicit marks the default partition added because no block
	// declared P_Key 0x7fff.
	Implicit bool
}

// IPoIB is an ipoib {} block: the broadcast group's MCMemberRecord
// parameters. MTU and Rate are IBA codes (PathRecord MTU and Rate
// encodings, IBA 15.2.5.16); Scope is the MGID scope nibble.
type IPoIB struct {
	MTU, Rate, SL, Scope uint8
	QKey                 uint32
}

// MemberKind is what a member selector names.
type MemberKind uint8

const (
	MemberGUID        MemberKind = iota + 1 // one port, by port GUID
	MemberDesc                              // end ports of nodes whose description matches a glob
	MemberAllCAs                            // every CA port
	MemberAllSwitches                       // every switch's port 0
	MemberAll                               // every end port
	MemberSelf                              // the SM's own port
)

// PartitionMember is one selector of members or limited_members.
type PartitionMember struct {
	Kind    MemberKind
	GUID    uint64 // MemberGUID
	Pattern string // MemberDesc: the glob as written (without "desc:")
	Full    bool
	Range   hcl.Range

	re *regexp.Regexp
}

// String is the selector as written in the configuration.
func (m *PartitionMember) String() string {
	switch m.Kind {
	case MemberGUID:
		return fmt.Sprintf("0x%016x", m.GUID)
	case MemberDesc:
		return "desc:" + m.Pattern
	case MemberAllCAs:
		return "all_cas"
	case MemberAllSwitches:
		return "all_switches"
	case MemberAll:
		return "all"
	case MemberSelf:
		return "self"
	}
	return "?"
}

// Rank is the selector's specificity: a port named by selectors of
// different rank takes the membership of the highest.
func (m *PartitionMember) Rank() int {
	switch m.Kind {
	case MemberGUID, MemberSelf:
		return 3
	case MemberDesc:
		return 2
	case MemberAllCAs, MemberAllSwitches:
		return 1
	}
	return 0
}

// MatchDesc reports whether a MemberDesc selector matches a node
// description.
func (m *PartitionMember) MatchDesc(desc string) bool {
	if m.Kind != MemberDesc {
		return false
	}
	if m.re == nil {
		re, err := globRegexp(m.Pattern)
		if err != nil {
			return false
		}
		m.re = re
	}
	return m.re.MatchString(desc)
}

// DefaultPartition is the partition added when none declares P_Key 0x7fff.
func DefaultPartition() Partition {
	return Partition{
		Name: DefaultPartitionName, PKey: DefaultPKey, Implicit: true,
		Members: []PartitionMember{{Kind: MemberAll, Full: true}},
		IPoIB:   &IPoIB{MTU: DefaultIPoIBMTU, Rate: DefaultIPoIBRate, Scope: DefaultIPoIBScope, QKey: DefaultIPoIBQKey},
	}
}

var partitionSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "pkey", Required: true}, {Name: "members"}, {Name: "limited_members"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "ipoib"}},
}

var ipoibSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "mtu"}, {Name: "rate"}, {Name: "sl"}, {Name: "scope"}, {Name: "qkey"}},
}

// maxPartitionName bounds a partition name (it appears in logs).
const maxPartitionName = 64

// partitions decodes every partition block, in declaration order, and adds
// the default partition first unless one declares P_Key 0x7fff.
func (d *decoder) partitions(blocks hcl.Blocks) []Partition {
	var out []Partition
	byName := map[string]hcl.Range{}
	byKey := map[uint16]*Partition{}
	for _, b := range blocks {
		if b.Type != "partition" {
			continue
		}
		p, ok := d.partition(b)
		if !ok {
			continue
		}
		if prev, dup := byName[p.Name]; dup {
			d.errorf(b.LabelRanges[0], "Duplicate partition name",
				"partition %q is already declared at %s. Give each partition its own name.", p.Name, prev)
			continue
		}
		byName[p.Name] = b.DefRange
		if prev := byKey[p.PKey]; prev != nil {
			d.errorf(b.DefRange, "Duplicate P_Key",
				"partition %q uses P_Key 0x%04x, already used by partition %q at %s (the membership bit 0x8000 is not part of the key). Merge their members into one partition, or give this one another key.",
				p.Name, p.PKey, prev.Name, prev.Range)
			continue
		}
		out = append(out, p)
		byKey[p.PKey] = &out[len(out)-1]
	}
	if _, ok := byKey[DefaultPKey]; !ok {
		out = append([]Partition{DefaultPartition()}, out...)
	}
	return out
}

func (d *decoder) partition(b *hcl.Block) (Partition, bool) {
	p := Partition{Name: b.Labels[0], Range: b.DefRange}
	nameRng := b.LabelRanges[0]
	if p.Name == "" || len(p.Name) > maxPartitionName || strings.IndexFunc(p.Name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		d.errorf(nameRng, "Invalid partition name", "partition %q: a name is 1..%d printable characters, e.g. \"storage\".", p.Name, maxPartitionName)
		return p, false
	}
	c := d.content(b.Body, partitionSchema)
	if c == nil {
		return p, false
	}
	errs := len(d.diags.Errs())
	var key string
	if f := attr(d, c.Attributes, "pkey", &key); f.ok {
		v, ok := parseKey(key)
		switch {
		case !ok || v > 0xFFFF:
			d.errorf(f.rng, "Invalid P_Key", "pkey = %q is not a 16-bit P_Key in hex; write it as a string with 0x, like \"0x0002\" (the membership bit 0x8000 is ignored: membership is per member).", key)
		case v&DefaultPKey == 0:
			d.errorf(f.rng, "Invalid P_Key", "pkey = %q: 0x0000 and 0x8000 are the invalid P_Key (IBA 10.9.1.2) and cannot name a partition; use 0x0001..0x7ffe, or 0x7fff for the default partition.", key)
		default:
			p.PKey = uint16(v) & DefaultPKey
		}
	}
	if p.Name == DefaultPartitionName && p.PKey != 0 && p.PKey != DefaultPKey {
		d.errorf(c.Attributes["pkey"].Expr.Range(), "Default partition redefined",
			"partition %q must use P_Key 0x7fff (the default partition); name this partition otherwise.", p.Name)
	}
	seen := map[string]hcl.Range{}
	for _, list := range []struct {
		name string
		full bool
	}{{"members", true}, {"limited_members", false}} {
		var sel []string
		f := attr(d, c.Attributes, list.name, &sel)
		if !f.ok {
			continue
		}
		items := listItemRanges(c.Attributes[list.name], len(sel))
		for i, s := range sel {
			rng := items[i]
			m, ok := d.member(s, rng, list.full)
			if !ok {
				continue
			}
			k := m.String()
			if prev, dup := seen[k]; dup {
				d.errorf(rng, "Member listed twice", "%q is already listed at %s; a selector is either in members (full) or in limited_members, once.", s, prev)
				continue
			}
			seen[k] = rng
			if m.Kind == MemberSelf && !m.Full {
				d.errorf(rng, "SM port as limited member", "the SM's own port is a full member of every partition (it answers SA queries from all members); move \"self\" to members or remove it.")
				continue
			}
			p.Members = append(p.Members, m)
		}
	}
	if len(p.Members) == 0 && len(d.diags.Errs()) == errs {
		d.errorf(b.DefRange, "Partition without members",
			"partition %q names no member; add members = [...] (full) or limited_members = [...], e.g. members = [\"all_cas\"].", p.Name)
	}
	if ib := d.singleton(c.Blocks, "ipoib"); ib != nil {
		p.IPoIB = d.ipoib(ib)
	}
	return p, len(d.diags.Errs()) == errs
}

// listItemRanges returns the source range of each element of a list
// attribute, or the attribute's value range for all when the expression
// is not a literal list (or its length differs).
func listItemRanges(a *hcl.Attribute, n int) []hcl.Range {
	out := make([]hcl.Range, n)
	exprs, diags := hcl.ExprList(a.Expr)
	for i := range out {
		out[i] = a.Expr.Range()
		if !diags.HasErrors() && len(exprs) == n {
			out[i] = exprs[i].Range()
		}
	}
	return out
}

// member parses one selector.
func (d *decoder) member(s string, rng hcl.Range, full bool) (PartitionMember, bool) {
	m := PartitionMember{Full: full, Range: rng}
	switch {
	case s == "all_cas":
		m.Kind = MemberAllCAs
	case s == "all_switches":
		m.Kind = MemberAllSwitches
	case s == "all":
		m.Kind = MemberAll
	case s == "self":
		m.Kind = MemberSelf
	case strings.HasPrefix(s, "desc:"):
		m.Kind, m.Pattern = MemberDesc, strings.TrimPrefix(s, "desc:")
		re, err := globRegexp(m.Pattern)
		if err != nil {
			d.errorf(rng, "Invalid description pattern", "%q: %v. A pattern matches whole node descriptions: * and ? match any characters, [abc] or [a-z] one of a set, [!a-z] one not in it, \\ quotes the next character.", s, err)
			return m, false
		}
		m.re = re
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") || isHex(s):
		g, err := ParseGUID(s)
		if err != nil {
			d.errorf(rng, "Invalid port GUID", "%q: %v.", s, err)
			return m, false
		}
		m.Kind, m.GUID = MemberGUID, g
	default:
		d.errorf(rng, "Unknown member", "%q is not a member selector. Use a port GUID (\"0x0002c90300000001\"), a node description glob (\"desc:compute-*\"), \"all_cas\", \"all_switches\", \"all\" or \"self\" (the SM's own port).", s)
		return m, false
	}
	return m, true
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// globRegexp compiles a description glob into an anchored regexp: * any
// run of characters, ? one character, [..] a class ([!..] negated), \x
// the character x.
func globRegexp(p string) (*regexp.Regexp, error) {
	if p == "" {
		return nil, fmt.Errorf("the pattern is empty")
	}
	var b strings.Builder
	b.WriteString("^(?s:")
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '\\':
			if i+1 == len(rs) {
				return nil, fmt.Errorf("it ends with a lone \\")
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case '[':
			j := i + 1
			if j < len(rs) && (rs[j] == '!' || rs[j] == '^') {
				j++
			}
			if j < len(rs) && rs[j] == ']' {
				j++ // a leading ] is a member of the class
			}
			for j < len(rs) && rs[j] != ']' {
				j++
			}
			if j == len(rs) {
				return nil, fmt.Errorf("the [ at character %d has no closing ]", i+1)
			}
			body := string(rs[i+1 : j])
			if strings.HasPrefix(body, "!") {
				body = "^" + body[1:]
			}
			body = strings.ReplaceAll(body, `\`, `\\`)
			if strings.HasPrefix(body, "^]") || strings.HasPrefix(body, "]") {
				body = strings.Replace(body, "]", `\]`, 1)
			}
			b.WriteString("[" + body + "]")
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(")$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("not a valid pattern (%v)", err)
	}
	return re, nil
}

// ipoib decodes an ipoib {} block, with the defaults for what it omits.
func (d *decoder) ipoib(b *hcl.Block) *IPoIB {
	ib := &IPoIB{MTU: DefaultIPoIBMTU, Rate: DefaultIPoIBRate, Scope: DefaultIPoIBScope, QKey: DefaultIPoIBQKey}
	c := d.content(b.Body, ipoibSchema)
	if c == nil {
		return ib
	}
	a := c.Attributes
	var mtu, sl int
	if f := attr(d, a, "mtu", &mtu); f.ok {
		code, ok := mtuCodes[mtu]
		if !ok {
			d.errorf(f.rng, "Invalid IPoIB MTU", "mtu = %d; an InfiniBand MTU is 256, 512, 1024, 2048 or 4096 bytes (IPoIB datagram mode carries 4 bytes less).", mtu)
		} else {
			ib.MTU = code
		}
	}
	var rate float64
	if f := attr(d, a, "rate", &rate); f.ok {
		code, ok := rateCodeOf(rate)
		if !ok {
			d.errorf(f.rng, "Invalid IPoIB rate", "rate = %v is not an InfiniBand rate in Gb/s; use one of %s.", rate, rateList())
		} else {
			ib.Rate = code
		}
	}
	if f := attr(d, a, "sl", &sl); f.ok {
		if sl < 0 || sl > 15 {
			d.errorf(f.rng, "SL out of range", "sl = %d; service levels are 0..15.", sl)
		} else {
			ib.SL = uint8(sl)
		}
	}
	var scope string
	if f := attr(d, a, "scope", &scope); f.ok {
		v, ok := scopes[scope]
		if n, err := strconv.Atoi(scope); err == nil {
			v, ok = uint8(n), n >= 1 && n <= 15
		}
		if !ok {
			d.errorf(f.rng, "Invalid IPoIB scope", "scope = %q; use \"link-local\" (2, the IPoIB default), \"site-local\" (5), \"organization-local\" (8), \"global\" (14), or a scope number 1..15.", scope)
		} else {
			ib.Scope = v
		}
	}
	var qkey string
	if f := attr(d, a, "qkey", &qkey); f.ok {
		v, ok := parseKey(qkey)
		if !ok || v > 0xFFFFFFFF {
			d.errorf(f.rng, "Invalid Q_Key", "qkey = %q is not a 32-bit Q_Key in hex; write it as a string with 0x, like \"0x0b1b\" (the IPoIB default).", qkey)
		} else {
			ib.QKey = uint32(v)
		}
	}
	return ib
}

// mtuCodes maps MTU bytes to the IBA MTU code.
var mtuCodes = map[int]uint8{256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}

// ipoibRates maps data rates (Gb/s) to IBA rate codes (IBA 15.2.5.16
// table 224; MCMemberRecord uses the same encoding).
var ipoibRates = []struct {
	gbs  float64
	code uint8
}{
	{2.5, 2}, {5, 5}, {10, 3}, {14, 11}, {20, 6}, {25, 15}, {28, 19}, {30, 4}, {40, 7}, {50, 20},
	{56, 12}, {60, 8}, {80, 9}, {100, 16}, {112, 13}, {120, 10}, {168, 14}, {200, 17}, {300, 18},
	{400, 21}, {600, 22}, {800, 23}, {1200, 24},
}

func rateCodeOf(gbs float64) (uint8, bool) {
	for _, r := range ipoibRates {
		if r.gbs == gbs {
			return r.code, true
		}
	}
	return 0, false
}

func rateList() string {
	s := make([]string, len(ipoibRates))
	for i, r := range ipoibRates {
		s[i] = strconv.FormatFloat(r.gbs, 'f', -1, 64)
	}
	return strings.Join(s, ", ")
}

var scopes = map[string]uint8{"link-local": 2, "site-local": 5, "organization-local": 8, "global": 14}
