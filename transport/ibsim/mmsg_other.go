//go:build !linux || !(amd64 || arm64)

package ibsim

import (
	"net"

	"github.com/ibsm/ibsm/transport"
)

// datagrams reads one datagram per call where recvmmsg(2) is missing.
type datagrams struct {
	c    *net.UnixConn
	bufs [][]byte
	n    int
}

func newDatagrams(c *net.UnixConn, _, size int) (*datagrams, error) {
	return &datagrams{c: c, bufs: [][]byte{make([]byte, size)}}, nil
}

func (d *datagrams) read() (int, error) {
	n, err := d.c.Read(d.bufs[0])
	if err != nil {
		return 0, err
	}
	d.n = n
	return 1, nil
}

func (d *datagrams) size(int) int { return d.n }

// sendBatch sends ps one write each.
func (c *Conn) sendBatch(ps []transport.Packet) (int, error) {
	for i, p := range ps {
		h, err := header(p)
		if err == nil {
			err = c.send(&h, p.MAD)
		}
		if err != nil {
			return i, err
		}
	}
	return len(ps), nil
}
