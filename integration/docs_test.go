package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Docs and diagnostics name only what exists: every `ibsm <command>` (and
// `ibsm <command> <subcommand>`) written as code in the README, the
// benchmarks, the SDK guide, the shipped examples and the host's own
// messages must be a command the built binary knows.

// docSources are the files whose code spans name commands, relative to
// the repository root. Go sources are scanned for string literals.
var docSources = []string{"README.md", "BENCHMARKS.md", "sdk/README.md", "conf/examples/*.hcl", "conf/examples/*.md",
	"host/*/*.go", "host/cmd/ibsm/*.go", "conf/*.go"}

var (
	// fence is a fenced code block; span an inline code span.
	fence = regexp.MustCompile("(?s)```[a-z]*\n(.*?)```")
	span  = regexp.MustCompile("`([^`\n]+)`")
	// goString is a Go interpreted string literal.
	goString = regexp.MustCompile(`"((?:[^"\\\n]|\\.)*)"`)
	// mention is an invocation: ibsm (or a path ending in it) and what
	// follows; words (see commandWords) name the command.
	mention = regexp.MustCompile(`(?:^|[\s$(/])ibsm +([^\n]*)`)
	word    = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// commandWords is the command and subcommand of an invocation's
// arguments: up to two leading plain words; a flag, path or placeholder
// ends them.
func commandWords(args string) []string {
	var w []string
	for _, f := range strings.Fields(args) {
		if len(w) == 2 || !word.MatchString(f) {
			break
		}
		w = append(w, f)
	}
	return w
}

// codeOf returns the parts of a file that are code, where an `ibsm …`
// mention is a command rather than prose.
func codeOf(path string, b []byte) []string {
	s := string(b)
	var out []string
	switch {
	case strings.HasSuffix(path, ".go"):
		for _, m := range goString.FindAllStringSubmatch(s, -1) {
			for _, c := range span.FindAllStringSubmatch(m[1], -1) {
				out = append(out, c[1])
			}
			if strings.Contains(m[1], "run ibsm ") || strings.HasPrefix(m[1], "ibsm ") {
				out = append(out, m[1])
			}
		}
	default: // Markdown and HCL comments
		for _, m := range fence.FindAllStringSubmatch(s, -1) {
			for _, line := range strings.Split(m[1], "\n") {
				if i := strings.Index(line, " #"); i >= 0 {
					line = line[:i] // a shell comment is prose
				}
				out = append(out, line)
			}
		}
		for _, m := range span.FindAllStringSubmatch(fence.ReplaceAllString(s, ""), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

func TestDocsNameOnlyExistingCommands(t *testing.T) {
	root := ".."
	bin := filepath.Join(binDir, "ibsm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v (make build first)", bin, err)
	}
	type where struct{ file, text string }
	found := map[string]where{} // "cmd" or "cmd sub" → first mention
	for _, pat := range docSources {
		files, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, code := range codeOf(f, b) {
				for _, m := range mention.FindAllStringSubmatch(code, -1) {
					words := commandWords(m[1])
					rel, _ := filepath.Rel(root, f)
					for i := range words {
						key := strings.Join(words[:i+1], " ")
						if _, ok := found[key]; !ok {
							found[key] = where{rel, strings.TrimSpace(code)}
						}
					}
				}
			}
		}
	}
	if len(found) == 0 {
		t.Fatal("no `ibsm …` mention found in the docs: the scanner is broken")
	}
	keys := make([]string, 0, len(found))
	for k := range found {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	checked := 0
	for _, k := range keys {
		words := strings.Fields(k)
		if len(words) == 2 && !hasSubcommands(t, bin, words[0]) {
			continue // "ibsm run once" style prose or an argument, not a subcommand
		}
		out, err := exec.Command(bin, append(words, "-h")...).CombinedOutput()
		if strings.Contains(string(out), "unknown") {
			w := found[k]
			t.Errorf("%s names `ibsm %s`, which the binary does not know (in %q):\n%s", w.file, k, w.text, out)
			continue
		}
		_ = err // -h exits non-zero for some commands; the message is what counts
		checked++
	}
	t.Logf("%d commands and subcommands named in the docs checked against %s", checked, bin)
}

// hasSubcommands reports whether `ibsm cmd` dispatches on a second word:
// its help names at least one and a made-up one is refused as unknown.
func hasSubcommands(t *testing.T, bin, cmd string) bool {
	t.Helper()
	out, _ := exec.Command(bin, cmd, "no-such-subcommand-xyz", "-h").CombinedOutput()
	return strings.Contains(string(out), "unknown")
}
