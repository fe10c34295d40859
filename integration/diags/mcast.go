package diags

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/ibsm/ibsm/sdk/topology"
)

// DumpMFTs runs dump_mfts (every switch's MulticastForwardingTable, by
// ibroute -M) and parses it.
func (e *Env) DumpMFTs(ctx context.Context) (map[uint64]map[uint16][]uint8, string, error) {
	if e.Paths["dump_mfts"] == "" {
		// Not in Tools (the other tests do not need it): find it here.
		for _, p := range []string{"dump_mfts", "/usr/sbin/dump_mfts"} {
			if full, err := exec.LookPath(p); err == nil {
				e.Paths["dump_mfts"] = full
				break
			}
		}
	}
	out, err := e.Run(ctx, "dump_mfts")
	if err != nil {
		return nil, out, err
	}
	m, err := ParseMFTs(strings.NewReader(out))
	return m, out, err
}

var (
	// The switch is named by "Lid <n>" or "DR path ...": only the GUID counts.
	reMFTHeader = regexp.MustCompile(`^Multicast mlids \[0x([0-9a-fA-F]+)-0x([0-9a-fA-F]+)\] of switch .* guid 0x([0-9a-fA-F]+)`)
	reMFTLine   = regexp.MustCompile(`^0x([0-9a-fA-F]{4})\s+(.*)$`)
)

// ParseMFTs reads ibroute -M output (what dump_mfts prints): per switch a
// header, a column ruler and one line per MLID with an "x" under each
// port in its mask. It returns, per switch GUID, each MLID's ports.
func ParseMFTs(r io.Reader) (map[uint64]map[uint16][]uint8, error) {
	out := map[uint64]map[uint16][]uint8{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	var cur map[uint16][]uint8
	var ports []int // column of each port on the "Ports:" ruler
	for sc.Scan() {
		line := sc.Text()
		if m := reMFTHeader.FindStringSubmatch(line); m != nil {
			g, err := strconv.ParseUint(m[3], 16, 64)
			if err != nil {
				return nil, fmt.Errorf("dump_mfts: bad switch GUID in %q", line)
			}
			cur, ports = map[uint16][]uint8{}, nil
			out[g] = cur
			continue
		}
		if cur == nil {
			continue
		}
		if i := strings.Index(line, "Ports:"); i >= 0 && ports == nil {
			// Columns: the units digit of each port number.
			for j := i + len("Ports:"); j < len(line); j++ {
				if line[j] >= '0' && line[j] <= '9' {
					ports = append(ports, j)
				}
			}
			continue
		}
		m := reMFTLine.FindStringSubmatch(line)
		if m == nil || ports == nil {
			continue
		}
		mlid, err := strconv.ParseUint(m[1], 16, 16)
		if err != nil {
			return nil, fmt.Errorf("dump_mfts: bad MLID in %q", line)
		}
		var got []uint8
		for p, col := range ports {
			if col < len(line) && (line[col] == 'x' || line[col] == 'X') {
				if p > 255 {
					return nil, fmt.Errorf("dump_mfts: port column %d past 255", p)
				}
				got = append(got, uint8(p))
			}
		}
		if len(got) > 0 {
			cur[uint16(mlid)] = got
		}
	}
	return out, sc.Err()
}

// CheckMulticast walks the MFTs from every sender port (CA port GUIDs) for
// mlid, as switches forward (out of every port in the mask but the ingress
// one), and checks that each reaches every receiver but itself exactly
// once and no other CA port, and that no switch sees a copy twice (a loop
// or a duplicate path).
func CheckMulticast(d *Discovery, mfts map[uint64]map[uint16][]uint8, mlid uint16, senders, receivers []uint64) error {
	want := map[uint64]bool{}
	for _, r := range receivers {
		want[r] = true
	}
	for _, s := range senders {
		ref, ok := d.caPorts[s]
		if !ok {
			return fmt.Errorf("sender %#x is not a CA port of the discovered fabric", s)
		}
		sw, in, ok := d.Peer(ref.node.GUID, ref.port)
		if !ok || sw.Type != topology.Switch {
			return fmt.Errorf("sender %#x is not cabled to a switch", s)
		}
		got := map[uint64]int{}
		seen := map[uint64]int{}
		type at struct {
			guid uint64
			in   int
		}
		queue := []at{{sw.GUID, in}}
		for len(queue) > 0 {
			c := queue[0]
			queue = queue[1:]
			if seen[c.guid]++; seen[c.guid] > 1 {
				return fmt.Errorf("MLID %#x from %#x: switch %#x gets a copy twice (loop or second path)", mlid, s, c.guid)
			}
			for _, p := range mfts[c.guid][mlid] {
				if int(p) == c.in || p == 0 {
					continue
				}
				n, pp, ok := d.Peer(c.guid, int(p))
				if !ok {
					return fmt.Errorf("MLID %#x: switch %#x forwards out of port %d, which has no link", mlid, c.guid, p)
				}
				if n.Type == topology.Switch {
					queue = append(queue, at{n.GUID, pp})
					continue
				}
				got[n.Ports[pp].GUID]++
			}
		}
		for g, n := range got {
			switch {
			case !want[g] || g == s:
				return fmt.Errorf("MLID %#x from %#x reaches %#x, not a receiver", mlid, s, g)
			case n != 1:
				return fmt.Errorf("MLID %#x from %#x reaches %#x %d times", mlid, s, g, n)
			}
		}
		for g := range want {
			if g != s && got[g] == 0 {
				return fmt.Errorf("MLID %#x from %#x never reaches %#x", mlid, s, g)
			}
		}
	}
	return nil
}
