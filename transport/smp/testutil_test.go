package smp

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// hexb parses a hex dump; whitespace and '|' separators are ignored. The
// result is zero-padded to n bytes when n > 0.
func hexb(t testing.TB, s string, n int) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "\n", "", "\t", "", "|", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad test vector: %v", err)
	}
	if n > 0 {
		if len(b) > n {
			t.Fatalf("test vector is %d bytes, want at most %d", len(b), n)
		}
		b = append(b, make([]byte, n-len(b))...)
	}
	return b
}

func diffBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			var g byte
			if i < len(got) {
				g = got[i]
			}
			t.Fatalf("%s: first difference at byte %d: got %#02x want %#02x\ngot  %x\nwant %x", what, i, g, want[i], got, want)
		}
	}
	t.Fatalf("%s: got %d bytes, want %d", what, len(got), len(want))
}
