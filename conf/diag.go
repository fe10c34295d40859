package conf

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// FormatDiagnostics renders diagnostics one per line as
// "file:line,col-col: Summary; Detail" (warnings prefixed "warning: "), the
// compact form for logs and single-line CLI output. Long values in messages
// are cut (see shorten). For source snippets use Loader.FormatDiagnostics.
func FormatDiagnostics(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		writeDiagnostic(&b, d)
	}
	return b.String()
}

func writeDiagnostic(b *strings.Builder, d *hcl.Diagnostic) {
	if d.Severity == hcl.DiagWarning {
		b.WriteString("warning: ")
	}
	if d.Subject != nil {
		b.WriteString(d.Subject.String())
		b.WriteString(": ")
	}
	b.WriteString(shorten(d.Summary))
	if d.Detail != "" {
		b.WriteString("; ")
		b.WriteString(shorten(d.Detail))
	}
	b.WriteByte('\n')
}

// FormatDiagnostics is the package's FormatDiagnostics with, under each
// diagnostic that has a subject in a file this Loader parsed, the subject's
// source line and a caret at its start. A long line shows only a window
// around the subject (hcl's own diagnostic writer prints whole lines,
// which may be megabytes).
func (l *Loader) FormatDiagnostics(diags hcl.Diagnostics) string {
	files := l.Files()
	var b strings.Builder
	for _, d := range diags {
		writeDiagnostic(&b, d)
		if d.Subject == nil {
			continue
		}
		f := files[d.Subject.Filename]
		if f == nil || d.Subject.Start.Byte < 0 || d.Subject.Start.Byte > len(f.Bytes) {
			continue
		}
		line, caret := sourceWindow(f.Bytes, d.Subject.Start.Byte)
		prefix := fmt.Sprintf("  %d: ", d.Subject.Start.Line)
		fmt.Fprintf(&b, "%s%s\n%s^\n", prefix, line, strings.Repeat(" ", len(prefix)+caret))
	}
	return b.String()
}

// sourceWindow returns the source line holding byte at (tabs as spaces),
// cut to at most about maxValueChars characters around at, and the
// caret's column in it.
func sourceWindow(src []byte, at int) (string, int) {
	ls, le := at, at // the line
	for ls > 0 && src[ls-1] != '\n' {
		ls--
	}
	for le < len(src) && src[le] != '\n' && src[le] != '\r' {
		le++
	}
	lo, hi := max(ls, at-4*maxValueChars), min(le, at+4*maxValueChars)
	for lo < at && !utf8.RuneStart(src[lo]) {
		lo++
	}
	for hi > at && hi < len(src) && !utf8.RuneStart(src[hi]) {
		hi--
	}
	before, after := []rune(string(src[lo:at])), []rune(string(src[at:hi]))
	cutBefore := lo > ls
	if n := maxValueChars / 2; len(before) > n {
		before, cutBefore = before[len(before)-n:], true
	}
	if cutBefore {
		before = append([]rune("…"), before...)
	}
	if n := maxValueChars - len(before); len(after) > n || hi < le {
		after = append(after[:min(n, len(after))], []rune(fmt.Sprintf("… (line of %d bytes)", le-ls))...)
	}
	var b strings.Builder
	for _, r := range append(before, after...) {
		if r == '\t' {
			r = ' '
		}
		b.WriteRune(r)
	}
	return b.String(), len(before)
}

// Diagnostics quote values from the file (labels, names, strings), and
// HCL's own quote some too; a configuration may hold megabyte values, which
// must not reach a log or terminal whole.
const (
	// maxValueChars bounds one quoted value or unbroken word in a message.
	maxValueChars = 200
	// maxMessageChars bounds a whole Summary or Detail.
	maxMessageChars = 2000
)

// shortenDiags applies shorten to every Summary and Detail, in place, and
// returns diags.
func shortenDiags(diags hcl.Diagnostics) hcl.Diagnostics {
	for _, d := range diags {
		d.Summary = shorten(d.Summary)
		d.Detail = shorten(d.Detail)
	}
	return diags
}

// shorten cuts every double-quoted value (as %q writes them) and every
// unbroken word longer than maxValueChars characters to that many,
// followed by "… (N bytes)", then the whole message to maxMessageChars.
// Prose around the values is kept. shorten(shorten(s)) == shorten(s).
func shorten(s string) string {
	if len(s) <= maxValueChars {
		return s
	}
	var b strings.Builder
	quotes := true // false once a quote has no closing one: no later quote closes either
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\n' || c == '\t':
			b.WriteByte(c)
			i++
		case c == '"' && quotes:
			j := closingQuote(s, i)
			if j < 0 {
				quotes = false
				continue
			}
			cutValue(&b, s[i:j+1], true)
			i = j + 1
		default:
			j := i + 1
			for j < len(s) && s[j] != ' ' && s[j] != '\n' && s[j] != '\t' && (s[j] != '"' || !quotes) {
				j++
			}
			cutValue(&b, s[i:j], false)
			i = j
		}
	}
	out := b.String()
	if utf8.RuneCountInString(out) > maxMessageChars+30 {
		out = prefixRunes(out, maxMessageChars) + fmt.Sprintf("… (%d bytes)", len(out))
	}
	return out
}

// closingQuote returns the index of the quote closing the one at i,
// skipping backslash escapes, or -1.
func closingQuote(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}

func cutValue(b *strings.Builder, v string, quoted bool) {
	limit := maxValueChars
	if quoted {
		limit += 2
	}
	if len(v) <= limit+1 || utf8.RuneCountInString(v) <= limit+1 {
		b.WriteString(v)
		return
	}
	if quoted {
		fmt.Fprintf(b, "\"%s…\" (%d bytes)", prefixRunes(v[1:], maxValueChars), len(v)-2)
		return
	}
	fmt.Fprintf(b, "%s… (%d bytes)", prefixRunes(v, maxValueChars), len(v))
}

// prefixRunes returns the first n characters of s.
func prefixRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
