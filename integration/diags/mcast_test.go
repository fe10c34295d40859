package diags

import (
	"slices"
	"strings"
	"testing"
)

// dump_mfts output from ibsim 0.10 / infiniband-diags (rand8, two
// switches kept), column alignment as printed.
const dumpMFTsSample = `Multicast mlids [0xc000-0xc3ff] of switch DR path slid 0; dlid 0; 0,1,4,7,8 guid 0x0002c90000000005 (random switch 4):
     Ports: 0 1 2 3 4 5 6 7 8 9 
 MLid
0 valid mlids dumped 
Multicast mlids [0xc000-0xc3ff] of switch DR path slid 0; dlid 0; 0,1,4,5,3 guid 0x0002c90000000006 (random switch 5):
     Ports: 0 1 2 3 4 5 6 7 8 9 
 MLid
0xc000        x x   x           
1 valid mlids dumped 
Multicast mlids [0xc000-0xc3ff] of switch Lid 3 guid 0x0002c90000000002 (random switch 1):
                0                   1
     Ports: 0 1 2 3 4 5 6 7 8 9 0 1 2
 MLid
0xc000          x x x   x x x       x
0xc001      x
2 valid mlids dumped 
*** WARNING ***: this command has been replaced by dump_fts -M
`

func TestParseMFTs(t *testing.T) {
	m, err := ParseMFTs(strings.NewReader(dumpMFTsSample))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || len(m[0x0002c90000000005]) != 0 {
		t.Fatalf("switches %v", m)
	}
	if got := m[0x0002c90000000006][0xc000]; !slices.Equal(got, []uint8{1, 2, 4}) {
		t.Fatalf("switch 5 MLID 0xc000: %v", got)
	}
	if got := m[0x0002c90000000002][0xc000]; !slices.Equal(got, []uint8{2, 3, 4, 6, 7, 8, 12}) {
		t.Fatalf("switch 1 MLID 0xc000: %v", got)
	}
	if got := m[0x0002c90000000002][0xc001]; !slices.Equal(got, []uint8{0}) {
		t.Fatalf("switch 1 MLID 0xc001: %v", got)
	}
}

func FuzzParseMFTs(f *testing.F) {
	f.Add(dumpMFTsSample)
	f.Add("Multicast mlids [0xc000-0xc3ff] of switch Lid 1 guid 0x1 (x):\n Ports: 0 1\n0xc000 x x x x x\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMFTs(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, byMLID := range m {
			for _, ports := range byMLID {
				if !slices.IsSorted(ports) || len(ports) == 0 {
					t.Fatalf("ports %v", ports)
				}
			}
		}
	})
}
