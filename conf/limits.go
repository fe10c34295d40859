package conf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apparentlymart/go-textseg/v15/textseg"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Limits checked before HCL sees a file. The HCL parsers recurse once per
// nesting level and a Go stack overflow is fatal, not a recoverable panic:
// without these checks a 200 KB file of nested "[" kills the daemon that
// reloads it.
const (
	// MaxFileSize bounds configuration and lock files. Real configurations
	// are a few KiB; the largest plausible generated one (a plugin config
	// listing every endpoint of a fabric that fills the 49,151-LID unicast
	// space, ~40 bytes an entry) is about 2 MB, so 4 MiB leaves twice that.
	// Parsing a 4 MiB list of GUIDs takes HCL about 2 s and 250 MB here; a
	// 4 MiB file of one-character tokens is HCL's worst case, about 15 s
	// and 1.5 GB, so a much larger limit would not be safe either.
	MaxFileSize = 4 << 20

	// MaxNesting bounds how deeply brackets, braces, parentheses, template
	// sequences and chained unary or conditional operators nest (all of
	// them recurse in HCL's parser). ibsm's own blocks need 2 levels and
	// plugin configs a handful more; 64 levels cost HCL well under 1 MB of
	// stack.
	MaxNesting = 64
)

// readLimited reads at most MaxFileSize+1 bytes of path, so an oversized
// file is refused without reading it all.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}

// checkLimits refuses src, before any parsing, if it is larger than
// MaxFileSize or nests deeper than MaxNesting. what names the file kind in
// messages ("configuration file", "plugin lock file"); asJSON selects HCL's
// JSON syntax.
func checkLimits(what, name string, src []byte, asJSON bool) hcl.Diagnostics {
	if len(src) > MaxFileSize {
		r := rangeAt(src, name, MaxFileSize, MaxFileSize+1)
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "File too large",
			Detail: fmt.Sprintf("The %s is larger than %d bytes (4 MiB); ibsm refuses it before parsing. "+
				"Real ibsm files are a few KiB: check that this is the file you meant, and remove whatever generated the bulk.",
				what, MaxFileSize),
			Subject: &r,
		}}
	}
	var t *tracker
	if asJSON {
		t = newTracker(nil)
		scanJSON(src, t)
	} else {
		t = newTracker(src)
		newLexer(src, 0, t, false).run()
	}
	if !t.exceeded {
		return nil
	}
	r := rangeAt(src, name, t.at, t.end)
	detail := fmt.Sprintf("This %s opens nesting level %d; ibsm refuses a %s nested more than %d levels deep "+
		"(brackets, braces, parentheses, template sequences and chained !, - or ? operators each count) before parsing it, "+
		"because the parser would run out of stack. Real configurations need a handful of levels: flatten this value, "+
		"or check that the file is the one you meant.",
		t.what, t.depth+t.debt, what, t.limit)
	if t.debt > 0 {
		detail += fmt.Sprintf(" %d of the levels are blocks left open by broken one-line blocks (content other than a single \"name = value\") earlier in the file: fix those first.", t.debt)
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Nested too deeply",
		Detail:   detail,
		Subject:  &r,
	}}
}

// rangeAt is the range of src[start:end] (end clamped to the file).
func rangeAt(src []byte, name string, start, end int) hcl.Range {
	if end > len(src) {
		end = len(src)
	}
	if start > end {
		start = end
	}
	s := posAt(src, 0, hcl.InitialPos, start)
	return hcl.Range{Filename: name, Start: s, End: posAt(src, start, s, end)}
}

// posAt advances pos, the position of byte from, to byte to, counting
// columns in characters as HCL does (up to grapheme clusters).
func posAt(src []byte, from int, pos hcl.Pos, to int) hcl.Pos {
	seg := src[from:to]
	if nl := bytes.LastIndexByte(seg, '\n'); nl >= 0 {
		pos.Line += bytes.Count(seg, []byte{'\n'})
		pos.Column = 1
		seg = seg[nl+1:]
	}
	pos.Column += utf8.RuneCount(seg)
	pos.Byte = to
	return pos
}

// The nesting tracker consumes the token stream HCL's scanner would
// produce (see lexer) and bounds how deeply HCL's recursive-descent parser
// can recurse on it: one level per bracket, brace, parenthesis, "${" or
// "%{" sequence and open if/for template directive, plus one per unary "!"
// or "-" and conditional "?", which recurse without brackets. An
// operator's level lasts until the expression can end: a comma, or a
// newline where newlines end expressions (a body, an object constructor).
//
// It only ever errs on the side of counting more. A closer that does not
// match the innermost opener is ignored rather than guessed at, and block
// bodies get HCL's own rules, because that is where its parser recovers
// from errors without returning: after a broken body item it skips to the
// end of the line, so a "}" on the same line never closes the block and
// the parser nests the following blocks inside it. A block's "}" is
// therefore only counted as closing it at the start of a line (or right
// after its "{"); and a one-line block whose content is not a single
// well-formed "name = value" may take a later block's "}" as its own,
// which leaves one block open to the end of the file, so each counts one
// level for good (debt).

type frameKind uint8

const (
	fBody      frameKind = iota // the file's top level
	fBrace                      // "{": a block body or an object constructor
	fBrack                      // "["
	fParen                      // "("
	fInterp                     // "${"
	fControl                    // "%{"
	fString                     // a quoted string's or heredoc's template
	fDirective                  // an open %{ if } or %{ for } directive
)

func (k frameKind) weight() int {
	switch k {
	case fBody, fString:
		return 0
	}
	return 1
}

// What a "{" frame is, as far as HCL's body parser is concerned.
const (
	notBlock     = iota
	blockPending // a block's "{": one-line or not depends on the next token
	blockLines   // a block body over lines
	blockOneLine // a one-line block: { name = value }
)

// sig classifies significant tokens (all but newlines and comments).
type sig uint8

const (
	sOther sig = iota
	sIdent
	sEquals
)

type frame struct {
	kind frameKind
	w    int // this frame's own level: kind.weight(), or for "%{" see significant
	// at, end locate the opener (for a "%{" until its keyword is known).
	at, end int
	// extra counts unary and conditional operators pending in the current
	// expression of this frame.
	extra int
	// newlines: a newline ends the current expression (body, object
	// constructor); false where the parser skips newlines.
	newlines bool
	// first: the next significant token is the frame's first (a "{" may
	// start a newline-insensitive for expression; a "%{" names a directive).
	first bool
	// directive: for a "%{" frame, +1 if it opens an if/for, -1 if it
	// closes one.
	directive int

	block int // for "{": notBlock, blockPending, ...
	// For a one-line block: significant tokens so far, whether they began
	// "name =", and where the value starts.
	n        int
	attr     bool
	exprFrom int
}

type tracker struct {
	stack       []frame
	depth       int
	max         int // the deepest level seen
	limit       int
	prevOperand bool // the last token ends an operand, so "-" is binary

	// Body level: the caller sets outer for tokens of the file's outermost
	// code (not inside a string, heredoc or template sequence), where HCL
	// parses blocks. src is the whole file, to check one-line blocks; nil
	// where there are no blocks (templates, JSON).
	src    []byte
	outer  bool
	line   int  // 0 at a line start, 1 after "name label...", 2 otherwise
	lastNL bool // the last outermost token was a newline or a block's "{"
	debt   int  // levels that broken one-line blocks may have left open

	exceeded bool
	at, end  int    // the token that exceeded the limit
	what     string // and its description
}

func newTracker(src []byte) *tracker {
	return &tracker{limit: MaxNesting, stack: []frame{{kind: fBody}}, src: src, lastNL: true}
}

func (t *tracker) top() *frame { return &t.stack[len(t.stack)-1] }

// significant is called before every token other than newlines and
// comments; b is an identifier's text, at and end the token's bytes.
func (t *tracker) significant(s sig, b []byte, at, end int) {
	if t.outer {
		switch {
		case s == sIdent && t.line <= 1:
			t.line = 1
		default:
			t.line = 2
		}
		t.lastNL = false
	}
	f := t.top()
	if f.block == blockPending {
		f.block = blockOneLine
	}
	if f.block == blockOneLine {
		f.n++
		switch {
		case f.n == 1:
			f.attr = s == sIdent
		case f.n == 2:
			f.attr = f.attr && s == sEquals
			f.exprFrom = end
		}
	}
	if !f.first {
		return
	}
	f.first = false
	switch f.kind {
	case fBrace:
		if string(b) == "for" {
			f.newlines = false
		}
	case fControl:
		// Only a directive with an expression (if, for, or a mistake)
		// parses one; else, endif and endfor are keywords alone, so the
		// closing "%{ endif }" of the deepest directive adds no level.
		switch string(b) {
		case "else":
			return
		case "endif", "endfor":
			f.directive = -1
			return
		case "if", "for":
			f.directive = 1
		}
		f.w = 1
		t.grow(1, f.at, f.end, `"%{" template directive`)
	}
}

func (t *tracker) grow(n, at, end int, what string) {
	t.depth += n
	t.max = max(t.max, t.depth+t.debt)
	if t.depth+t.debt > t.limit && !t.exceeded {
		t.exceeded, t.at, t.end, t.what = true, at, end, what
	}
}

func (t *tracker) push(k frameKind, at, end int, what string) {
	t.significant(sOther, nil, at, end)
	f := frame{kind: k, w: k.weight(), at: at, end: end, newlines: k == fBrace, first: k == fBrace || k == fControl}
	if k == fControl {
		f.w = 0 // until its keyword is known
	}
	t.stack = append(t.stack, f)
	t.prevOperand = false
	t.grow(f.w, at, end, what)
}

// pop removes the innermost frame if it is of kind k, reporting whether
// it did.
func (t *tracker) pop(k frameKind) bool {
	if len(t.stack) == 1 || t.top().kind != k {
		return false
	}
	f := t.top()
	t.depth -= f.w + f.extra
	t.stack = t.stack[:len(t.stack)-1]
	return true
}

func (t *tracker) open(c byte, at int) {
	switch c {
	case '{':
		header := t.outer && t.line == 1
		t.push(fBrace, at, at+1, `"{"`)
		if header {
			t.top().block = blockPending
			t.lastNL = true
		}
	case '[':
		t.push(fBrack, at, at+1, `"["`)
	case '(':
		t.push(fParen, at, at+1, `"("`)
	}
}

func (t *tracker) close(c byte, at int) {
	lastNL := t.lastNL
	f := t.top()
	if c == '}' && f.block == blockPending {
		f.block = blockLines // "{}": HCL parses an empty body
	}
	block := f.block
	if c != '}' || block == notBlock || !t.outer {
		t.significant(sOther, nil, at, at+1)
	}
	switch c {
	case '}':
		switch {
		case block == notBlock:
			t.pop(fBrace)
		case !t.outer:
		case block == blockLines:
			if lastNL {
				t.pop(fBrace)
			}
		case block == blockOneLine:
			ok := f.attr && f.n >= 3 && t.src != nil && validExpr(t.src[f.exprFrom:at])
			t.pop(fBrace)
			if !ok {
				t.debt++
				t.grow(0, at, at+1, `"}" (of a one-line block that is not a single "name = value")`)
			}
		}
		if t.outer {
			t.line, t.lastNL = 2, false
		}
	case ']':
		t.pop(fBrack)
	case ')':
		t.pop(fParen)
	}
	t.prevOperand = true
}

// validExpr reports whether src is one whole HCL expression. It is only
// asked about text the tracker has already bounded.
func validExpr(src []byte) bool {
	_, diags := hclsyntax.ParseExpression(src, "", hcl.InitialPos)
	return !diags.HasErrors()
}

func (t *tracker) interp(control bool, at, end int) {
	if control {
		t.push(fControl, at, end, `"%{" template directive`)
	} else {
		t.push(fInterp, at, end, `"${" template interpolation`)
	}
}

// seqEnd closes a "${" or "%{" sequence; closing an if/for directive opens
// a level that its endif/endfor closes.
func (t *tracker) seqEnd(at, end int) {
	t.significant(sOther, nil, at, end)
	if t.pop(fInterp) {
		t.prevOperand = true
		return
	}
	dir := t.top().directive
	if t.pop(fControl) {
		switch dir {
		case 1:
			t.stack = append(t.stack, frame{kind: fDirective, w: 1})
			t.grow(1, at, end, "if or for template directive")
		case -1:
			t.pop(fDirective)
		}
	}
	t.prevOperand = true
}

// openString starts a quoted string (a block label, if it follows a block
// type) or a heredoc.
func (t *tracker) openString(heredoc bool, at int) {
	line := t.line
	t.significant(sOther, nil, at, at+1)
	if t.outer && line == 1 && !heredoc {
		t.line = 1
	}
	t.stack = append(t.stack, frame{kind: fString})
}

func (t *tracker) closeString() {
	t.pop(fString)
	t.prevOperand = true
	if t.outer {
		t.lastNL = false
	}
}

func (t *tracker) operator(at int, what string) {
	t.significant(sOther, nil, at, at+1)
	t.top().extra++
	t.prevOperand = false
	t.grow(1, at, at+1, what)
}

func (t *tracker) bang(at int) { t.operator(at, `"!" operator`) }

func (t *tracker) question(at int) { t.operator(at, `conditional "?"`) }

func (t *tracker) minus(at int) {
	if t.prevOperand {
		t.significant(sOther, nil, at, at+1)
		t.prevOperand = false
		return
	}
	t.operator(at, `unary "-"`)
}

// endExpr: the current expression of the innermost frame has ended.
func (t *tracker) endExpr() {
	f := t.top()
	t.depth -= f.extra
	f.extra = 0
	t.prevOperand = false
}

func (t *tracker) comma(at int) {
	t.significant(sOther, nil, at, at+1)
	t.endExpr()
}

func (t *tracker) newline() {
	f := t.top()
	if t.outer {
		t.line, t.lastNL = 0, true
		if f.block == blockPending {
			f.block = blockLines
		}
	}
	if f.newlines || f.kind == fBody {
		t.endExpr()
	}
}

// comment: HCL's parser reads a line comment's trailing newline as a
// newline.
func (t *tracker) comment(endsLine bool) {
	if endsLine {
		t.newline()
	}
}

func (t *tracker) ident(b []byte, at int) {
	t.significant(sIdent, b, at, at+len(b))
	t.prevOperand = true
}

func (t *tracker) equals(at int) {
	t.significant(sEquals, nil, at, at+1)
	t.prevOperand = false
}

func (t *tracker) operand(at, end int) {
	t.significant(sOther, nil, at, end)
	t.prevOperand = true
}

func (t *tracker) other(at int) {
	t.significant(sOther, nil, at, at+1)
	t.prevOperand = false
}

// lexer mirrors hclsyntax's scanner (scan_tokens.rl) closely enough to
// know, for every byte, whether HCL reads it as code, as string or heredoc
// template text, or as a comment, and feeds the resulting tokens to a
// tracker. It allocates nothing per byte and never recurses. Where HCL's
// scanner would give up (and so parse nothing further) it carries on,
// which can only count more.
type lexer struct {
	src  []byte
	base int // offset of src in the file, for positions
	t    *tracker

	modes     []lexMode
	braces    int
	retBraces []int     // brace levels at which "}" ends a template sequence
	heredocs  []heredoc // heredocs in progress, innermost last

	noCommentEnd int // no "*/" after this offset
}

type lexMode uint8

const (
	modeMain    lexMode = iota
	modeString          // inside "..."
	modeHeredoc         // inside <<MARKER ... MARKER
	modeBare            // a bare template (a JSON string's contents)
)

type heredoc struct {
	marker      []byte
	startOfLine bool
}

func newLexer(src []byte, base int, t *tracker, bare bool) *lexer {
	l := &lexer{src: src, base: base, t: t, modes: []lexMode{modeMain}, noCommentEnd: len(src)}
	if bare {
		l.modes[0] = modeBare
	}
	return l
}

// outer reports whether the lexer is in the file's outermost code.
func (l *lexer) outer() bool { return len(l.modes) == 1 && l.modes[0] == modeMain }

// popMode leaves a string, heredoc or template sequence.
func (l *lexer) popMode() {
	l.modes = l.modes[:len(l.modes)-1]
	l.t.outer = l.outer()
}

func (l *lexer) run() {
	i := 0
	if bytes.HasPrefix(l.src, []byte("\xef\xbb\xbf")) {
		i = 3
	}
	for i < len(l.src) && !l.t.exceeded {
		switch l.modes[len(l.modes)-1] {
		case modeMain:
			i = l.main(i)
		case modeString:
			i = l.str(i)
		default:
			i = l.template(i)
		}
	}
}

func (l *lexer) at(i int) byte {
	if i < len(l.src) {
		return l.src[i]
	}
	return 0
}

// beginSeq enters a "${" or "%{" sequence at i (with an optional "~").
func (l *lexer) beginSeq(i int, control bool) int {
	end := i + 2
	if l.at(end) == '~' {
		end++
	}
	l.t.outer = false
	l.t.interp(control, l.base+i, l.base+end)
	l.braces++
	l.retBraces = append(l.retBraces, l.braces)
	if len(l.heredocs) > 0 {
		l.heredocs[len(l.heredocs)-1].startOfLine = false
	}
	l.modes = append(l.modes, modeMain)
	return end
}

// endSeq handles "}" or "~}" in code: the end of a template sequence if
// the brace level matches the one its "${" or "%{" opened.
func (l *lexer) endSeq(i, n int, tilde bool) int {
	if len(l.retBraces) > 0 && l.retBraces[len(l.retBraces)-1] == l.braces {
		l.t.seqEnd(l.base+i, l.base+i+n)
		l.braces--
		l.retBraces = l.retBraces[:len(l.retBraces)-1]
		l.popMode()
		return i + n
	}
	if tilde {
		// HCL emits a sequence end anyway, for the parser to reject.
		l.t.seqEnd(l.base+i, l.base+i+n)
	} else {
		l.t.close('}', l.base+i)
	}
	l.braces--
	return i + n
}

func (l *lexer) main(i int) int {
	src := l.src
	c := src[i]
	at := l.base + i
	l.t.outer = l.outer()
	switch c {
	case ' ', '\t':
		return i + 1
	case '\n':
		l.t.newline()
		return i + 1
	case '\r':
		if l.at(i+1) == '\n' {
			l.t.newline()
			return i + 2
		}
		l.t.other(at)
		return i + 1
	case '#':
		return l.lineComment(i)
	case '/':
		switch l.at(i + 1) {
		case '/':
			return l.lineComment(i)
		case '*':
			if i < l.noCommentEnd {
				if end := bytes.Index(src[i+2:], []byte("*/")); end >= 0 {
					l.t.comment(false)
					return i + 2 + end + 2
				}
				// No "*/" follows, so none follows any later "/*" either.
				l.noCommentEnd = i
			}
		}
		l.t.other(at)
		return i + 1
	case '"':
		l.t.openString(false, at)
		l.modes = append(l.modes, modeString)
		return i + 1
	case '<':
		if l.at(i+1) == '<' {
			if end, marker := l.heredocIntro(i); end > 0 {
				l.t.openString(true, at)
				l.modes = append(l.modes, modeHeredoc)
				l.heredocs = append(l.heredocs, heredoc{marker: marker, startOfLine: true})
				return end
			}
		}
		l.t.other(at)
		if l.at(i+1) == '=' {
			return i + 2
		}
		return i + 1
	case '>':
		l.t.other(at)
		if l.at(i+1) == '=' {
			return i + 2
		}
		return i + 1
	case '=':
		if n := l.at(i + 1); n == '=' || n == '>' {
			l.t.other(at)
			return i + 2
		}
		l.t.equals(at)
		return i + 1
	case '{', '[', '(':
		if c == '{' {
			l.braces++
		}
		l.t.open(c, at)
		return i + 1
	case '}':
		return l.endSeq(i, 1, false)
	case '~':
		if l.at(i+1) == '}' {
			return l.endSeq(i, 2, true)
		}
	case ']', ')':
		l.t.close(c, at)
		return i + 1
	case ',':
		l.t.comma(at)
		return i + 1
	case '?':
		l.t.question(at)
		return i + 1
	case '!':
		if l.at(i+1) == '=' {
			l.t.other(at)
			return i + 2
		}
		l.t.bang(at)
		return i + 1
	case '-':
		l.t.minus(at)
		return i + 1
	}
	if c >= '0' && c <= '9' {
		end := l.number(i)
		l.t.operand(at, l.base+end)
		return end
	}
	if end := l.identEnd(i); end > i {
		l.t.ident(src[i:end], at)
		return end
	}
	// Any other character is a token of its own (an operator or an
	// invalid character); none opens or closes anything.
	l.t.other(at)
	if c < utf8.RuneSelf {
		return i + 1
	}
	_, n := utf8.DecodeRune(src[i:])
	return i + n
}

func (l *lexer) lineComment(i int) int {
	end := bytes.IndexByte(l.src[i:], '\n')
	if end < 0 {
		l.t.comment(false)
		return len(l.src)
	}
	l.t.comment(true)
	return i + end + 1
}

// number skips an HCL number literal: a digit, then digits, "." and
// exponents, not ending in ".".
func (l *lexer) number(i int) int {
	src := l.src
	last := i + 1
	j := i + 1
	for j < len(src) {
		switch c := src[j]; {
		case c >= '0' && c <= '9':
			j++
			last = j
		case c == '.':
			j++
		case c == 'e' || c == 'E':
			k := j + 1
			if l.at(k) == '+' || l.at(k) == '-' {
				k++
			}
			if d := l.at(k); d < '0' || d > '9' {
				return last
			}
			j = k + 1
			last = j
		default:
			return last
		}
	}
	return last
}

// identEnd returns the end of the identifier starting at i, or i.
func (l *lexer) identEnd(i int) int {
	src := l.src
	j := i
	for j < len(src) {
		c := src[j]
		if c < utf8.RuneSelf {
			ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
			if j > i {
				ok = ok || c == '-' || c >= '0' && c <= '9'
			}
			if !ok {
				return j
			}
			j++
			continue
		}
		r, n := utf8.DecodeRune(src[j:])
		if r == utf8.RuneError || !(idStart(r) || j > i && idContinue(r)) {
			return j
		}
		j += n
	}
	return j
}

func idStart(r rune) bool {
	return (unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_ID_Start, r)) &&
		!unicode.Is(unicode.Pattern_Syntax, r) && !unicode.Is(unicode.Pattern_White_Space, r)
}

func idContinue(r rune) bool {
	return idStart(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc, unicode.Other_ID_Continue)
}

// heredocIntro recognises "<<MARKER\n" or "<<-MARKER\n" at i, returning
// the end of the introducer and the marker, or 0.
func (l *lexer) heredocIntro(i int) (int, []byte) {
	src := l.src
	j := i + 2
	if l.at(j) == '-' {
		j++
	}
	// The marker runs to the newline; stopping at anything that cannot be
	// in an identifier keeps "<<<<<<..." linear.
	k := j
	ascii := true
	for k < len(src) {
		c := src[k]
		if c >= utf8.RuneSelf {
			ascii = false
		} else if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			break
		}
		k++
	}
	nl := k
	if l.at(nl) == '\r' {
		nl++
	}
	if l.at(nl) != '\n' || k == j {
		return 0, nil
	}
	if ascii {
		if l.identEnd(j) != k || src[j] == '-' || src[j] >= '0' && src[j] <= '9' {
			return 0, nil
		}
	} else {
		// Leave Unicode's identifier rules to HCL's own scanner.
		toks, _ := hclsyntax.LexConfig(src[i:nl+1], "", hcl.InitialPos)
		if len(toks) == 0 || toks[0].Type != hclsyntax.TokenOHeredoc {
			return 0, nil
		}
	}
	return nl + 1, src[j:k]
}

// str scans inside a quoted string: escapes, "$${" and "%%{" are text,
// "${" and "%{" open sequences, an unescaped quote ends the string.
func (l *lexer) str(i int) int {
	src := l.src
	for i < len(src) {
		switch src[i] {
		case '"':
			l.popMode()
			l.t.closeString()
			return i + 1
		case '\\':
			if c := l.at(i + 1); c != '\n' && c != '\r' && i+1 < len(src) {
				i += 2
				continue
			}
		case '$', '%':
			if l.at(i+1) == '{' {
				return l.beginSeq(i, src[i] == '%')
			}
			if l.at(i+1) == src[i] && l.at(i+2) == '{' {
				i += 3
				continue
			}
		}
		i++
	}
	return i
}

// template scans heredoc text or a bare template: no escapes, "$${" and
// "%%{" are text, and a heredoc ends at a line holding only its marker.
func (l *lexer) template(i int) int {
	src := l.src
	heredoc := l.modes[len(l.modes)-1] == modeHeredoc
	for i < len(src) {
		if heredoc {
			h := &l.heredocs[len(l.heredocs)-1]
			if h.startOfLine {
				if end := l.markerLine(i, h.marker); end > 0 {
					l.heredocs = l.heredocs[:len(l.heredocs)-1]
					l.popMode()
					l.t.closeString()
					l.t.newline()
					return end
				}
				h.startOfLine = false
			}
		}
		switch src[i] {
		case '\n':
			if heredoc {
				l.heredocs[len(l.heredocs)-1].startOfLine = true
			}
		case '$', '%':
			if l.at(i+1) == '{' {
				return l.beginSeq(i, src[i] == '%')
			}
			if l.at(i+1) == src[i] && l.at(i+2) == '{' {
				i += 3
				continue
			}
		}
		i++
	}
	return i
}

// markerLine reports the end of the line at i if the line, without
// surrounding white space, is marker (HCL's rule), or 0.
func (l *lexer) markerLine(i int, marker []byte) int {
	nl := bytes.IndexByte(l.src[i:], '\n')
	if nl < 0 {
		return 0
	}
	line := l.src[i : i+nl]
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if bytes.ContainsAny(line, "$%\r") || !bytes.Equal(bytes.TrimSpace(line), marker) {
		return 0
	}
	return i + nl + 1
}

// scanJSON mirrors HCL's JSON scanner: objects and arrays nest, and every
// string is also scanned as the template HCL may parse it as.
func scanJSON(src []byte, t *tracker) {
	i := 0
	for i < len(src) && !t.exceeded {
		switch c := src[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':' || c == '=':
			i++
		case c == '{' || c == '[':
			t.open(c, i)
			i++
		case c == '}' || c == ']':
			t.close(c, i)
			i++
		case c == '"':
			end := jsonStringEnd(src, i)
			// Only a string that contains "${" or "%{" once decoded
			// opens anything as a template.
			var s string
			if bytes.ContainsAny(src[i:end], `$%\`) && json.Unmarshal(src[i:end], &s) == nil &&
				(strings.Contains(s, "${") || strings.Contains(s, "%{")) {
				n := len(t.stack)
				newLexer([]byte(s), i+1, t, true).run()
				for len(t.stack) > n {
					f := t.top()
					t.depth -= f.w + f.extra
					t.stack = t.stack[:len(t.stack)-1]
				}
			}
			i = end
		case c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9':
			for i < len(src) && bytes.IndexByte([]byte("-+.eE0123456789"), src[i]) >= 0 {
				i++
			}
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			for i < len(src) && (src[i] >= 'a' && src[i] <= 'z' || src[i] >= 'A' && src[i] <= 'Z' || src[i] == '_') {
				i++
			}
		default:
			return // HCL's JSON scanner stops at an invalid character
		}
	}
}

// jsonStringEnd returns the end of the JSON string token at i the way
// HCL's JSON scanner delimits it (grapheme by grapheme; a control
// character ends it unterminated).
func jsonStringEnd(src []byte, i int) int {
	j := i + 1
	escaping := false
	for j < len(src) {
		switch b := src[j]; {
		case b == '\\':
			escaping = !escaping
			j++
		case b == '"':
			j++
			if !escaping {
				return j
			}
			escaping = false
		case b < 32:
			return j
		default:
			n, _, _ := textseg.ScanGraphemeClusters(src[j:], true)
			if n < 1 {
				n = 1
			}
			j += n
			escaping = false
		}
	}
	return j
}
