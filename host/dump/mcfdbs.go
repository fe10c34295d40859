package dump

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/ibsm/ibsm/host/mcast"
)

// WriteMCFDBs writes opensm.mcfdbs as OpenSM's dump_mcast_routes does, for
// ibdmchk -m: per switch that forwards any MLID, a "Switch 0x<guid>"
// header, the column line, and one line per MLID listing its out-ports.
// mft maps switch node GUIDs to their MFT blocks (sm.SM's
// MulticastForwarding); no group writes an empty file, as OpenSM does.
func WriteMCFDBs(w io.Writer, mft map[uint64]mcast.Blocks) error {
	bw := bufio.NewWriter(w)
	for _, guid := range slices.Sorted(maps.Keys(mft)) {
		b := mft[guid]
		mlids := b.MLIDs()
		if len(mlids) == 0 {
			continue
		}
		fmt.Fprintf(bw, "\nSwitch 0x%016x\nLID    : Out Port(s)\n", guid)
		for _, m := range mlids {
			fmt.Fprintf(bw, "0x%04X :", m)
			for _, p := range b.Ports(m) {
				fmt.Fprintf(bw, " 0x%03X ", p)
			}
			bw.WriteString("\n")
		}
	}
	return bw.Flush()
}

// WriteMCFDBFile writes opensm.mcfdbs into dir (after WriteAll, which
// leaves it empty).
func WriteMCFDBFile(dir string, mft map[uint64]mcast.Blocks) error {
	return writeFile(dir+"/"+MCFDBFile, func(w io.Writer) error { return WriteMCFDBs(w, mft) })
}
