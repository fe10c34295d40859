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
//
// The bytes go to xxhash in chunks of a buffer, not a Write per port: at
// ft3-56 (311 k ports) the calls were most of the hash's time.
func (t *Topology) Hash() uint64 {
	h := xxhash.New()
	const flush = 64 << 10
	buf := make([]byte, 0, flush+21*256)
	buf = append(buf, "ibsm-topology-v1"...)
	for i := range t.Nodes {
		n := &t.Nodes[i]
		buf = binary.LittleEndian.AppendUint64(buf, n.GUID)
		buf = append(buf, byte(n.Type), byte(len(n.Ports)))
		for p := range n.Ports {
			pt := &n.Ports[p]
			peerGUID := uint64(0)
			if pt.Peer.Connected() {
				peerGUID = t.Nodes[pt.Peer.Node].GUID
			}
			up := byte(0)
			if pt.State >= StateInit {
				up = 1
			}
			buf = binary.LittleEndian.AppendUint64(buf, pt.GUID)
			buf = binary.LittleEndian.AppendUint64(buf, peerGUID)
			buf = append(buf, pt.Peer.Port, up, pt.Width, pt.Speed, pt.VLCap)
		}
		if len(buf) >= flush {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	if t.SM.Connected() {
		buf = binary.LittleEndian.AppendUint64(buf, t.Nodes[t.SM.Node].GUID)
		buf = append(buf, t.SM.Port)
	}
	h.Write(buf)
	return h.Sum64()
}
