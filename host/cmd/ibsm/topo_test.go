package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/host/topogen"
)

func TestTopoHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"-h"}, []string{"ibsm topo fat-tree --radix 36 --levels 2", "rrg --switches 512 --ports 12"}},
		{[]string{"ft", "-h"}, []string{"usage: ibsm topo fat-tree", "-radix", "-parallel", "-switch-ports"}},
		{[]string{"torus", "--help"}, []string{"usage: ibsm topo torus", "-dims", "-cas"}},
		{[]string{"rrg", "-h"}, []string{"-ports", "-seed"}},
		{[]string{"paper", "-h"}, []string{"--set 000"}},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := cmdTopo(tt.args, &b); err != nil {
			t.Fatalf("topo %q: %v", tt.args, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("topo %q output lacks %q:\n%s", tt.args, w, b.String())
			}
		}
	}
}

// TestTopoWrites: the command writes what topogen.Write writes, degraded
// or not, and passes topogen's errors on with nothing written.
func TestTopoWrites(t *testing.T) {
	for _, args := range [][]string{
		{"ft", "--radix", "8", "--levels", "2"},
		{"ft", "--radix", "8", "--levels", "2", "--remove-links", "0.25", "--seed", "3"},
		{"ring", "--switches", "5", "--cas", "2"},
	} {
		var cmd, lib bytes.Buffer
		if err := cmdTopo(args, &cmd); err != nil {
			t.Fatalf("topo %q: %v", args, err)
		}
		if _, err := topogen.Write(args, &lib); err != nil {
			t.Fatal(err)
		}
		if cmd.Len() == 0 || cmd.String() != lib.String() {
			t.Errorf("topo %q wrote %d bytes, topogen.Write %d, or different ones", args, cmd.Len(), lib.Len())
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "missing topology kind"},
		{[]string{"hypercube"}, "unknown topology kind"},
		{[]string{"hypercube", "-h"}, "unknown topology kind"},
		{[]string{"ft", "--radix", "35"}, "must be even"},
	} {
		var b bytes.Buffer
		err := cmdTopo(tc.args, &b)
		if err == nil || !strings.Contains(err.Error(), tc.want) || b.Len() != 0 {
			t.Errorf("topo %q = %v with %d bytes written, want an error containing %q and nothing written", tc.args, err, b.Len(), tc.want)
		}
	}
}
