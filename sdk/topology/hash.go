package topology

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// Hash is the canonical xxhash64 of everything routing may depend on: nodes,
// ports, links, port states, widths, speeds and VLCap. Node order is already
// canonical (sorted by GUID), so the hash is independent of discovery order.
// Node descriptions are excluded: renaming a host must not re-route. Of the
// port state only "link up" (Init or better) counts: the SM moving ports
// through Armed to Active must not make the next sweep look like a change.
func (t *Topology) Hash() uint64 {
	h := xxhash.New()
	var buf [32]byte
	h.WriteString("ibsm-topology-v1")
	for i := range t.Nodes {
		n := &t.Nodes[i]
		binary.LittleEndian.PutUint64(buf[0:], n.GUID)
		buf[8] = byte(n.Type)
		buf[9] = byte(len(n.Ports))
		h.Write(buf[:10])
		for p := range n.Ports {
			pt := &n.Ports[p]
			peerGUID := uint64(0)
			if pt.Peer.Connected() {
				peerGUID = t.Nodes[pt.Peer.Node].GUID
			}
			binary.LittleEndian.PutUint64(buf[0:], pt.GUID)
			binary.LittleEndian.PutUint64(buf[8:], peerGUID)
			buf[16] = pt.Peer.Port
			buf[17] = 0
			if pt.State >= StateInit {
				buf[17] = 1
			}
			buf[18] = pt.Width
			buf[19] = pt.Speed
			buf[20] = pt.VLCap
			h.Write(buf[:21])
		}
	}
	if t.SM.Connected() {
		binary.LittleEndian.PutUint64(buf[0:], t.Nodes[t.SM.Node].GUID)
		buf[8] = t.SM.Port
		h.Write(buf[:9])
	}
	return h.Sum64()
}
