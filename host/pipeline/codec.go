package pipeline

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"io"

	"github.com/ibsm/ibsm/sdk/plan"
)

// A cache file's payload is a gob of the result with its forwarding trees
// or SL2VL entries taken out, followed by those as raw bytes. The trees
// are nearly all of a large plan (CAs × switches bytes: 19 MB on a 3-level
// fat tree of 36-port switches); gob spent 0.7 s of CPU growing and
// copying its buffer for them, raw they stream from the result into the
// file, and a read hands out slices of the file's bytes instead of
// decoding them. A VL plan's SL2VL entries are nearly all of it (gob
// spent 80 ms of the routing phase's critical path on the 90,000 entries
// of sssp + acro on a 512-switch random graph, one uint per VL).
//
//	payload := uvarint(len(gob)) gob [trees | sl2vl]
//	trees   := 0 (nil) | 1 uvarint(dests) { uvarint(planes) { uvarint(len+1) bytes } }
//	sl2vl   := 0 (nil) | 1 uvarint(entries) { uint32le(node) in out vl[16] }
//
// A plane's length is stored plus one so that a nil plane stays nil.

// treesOf returns what of v gob encodes and, for results that carry
// forwarding trees, the trees (has reports whether v is such a result).
func treesOf(v any) (rest any, trees []plan.DestPlanes, has bool) {
	switch x := v.(type) {
	case *plan.Routes:
		c := *x
		c.Planes = nil
		return &c, x.Planes, true
	case *plan.LIDPlan:
		c := *x
		c.Planes = nil
		return &c, x.Planes, true
	}
	return v, nil, false
}

// sl2vlOf returns what of v gob encodes and, for a VL plan, its SL2VL
// entries (has reports whether v is a VL plan).
func sl2vlOf(v any) (rest any, e []plan.SL2VLEntry, has bool) {
	if x, ok := v.(*plan.VLPlan); ok {
		c := *x
		c.SL2VL = nil
		return &c, x.SL2VL, true
	}
	return v, nil, false
}

// setTrees puts trees back into a decoded result.
func setTrees(v any, trees []plan.DestPlanes) {
	switch x := v.(type) {
	case *plan.Routes:
		x.Planes = trees
	case *plan.LIDPlan:
		x.Planes = trees
	}
}

// payload is a result ready to be written: the gob of what is not
// forwarding trees, and the trees, written raw from the result itself so
// that a large plan is never copied into a buffer (172 MB at ft3-56).
type payload struct {
	head  []byte
	trees []plan.DestPlanes
	has   bool
	sl2vl []plan.SL2VLEntry
	isVL  bool
}

// newPayload gob-encodes what of v is not forwarding trees or SL2VL
// entries.
func newPayload(v any) (*payload, error) {
	rest, trees, has := treesOf(v)
	rest, sl2vl, isVL := sl2vlOf(rest)
	var g bytes.Buffer
	if err := gob.NewEncoder(&g).Encode(rest); err != nil {
		return nil, err
	}
	return &payload{head: g.Bytes(), trees: trees, has: has, sl2vl: sl2vl, isVL: isVL}, nil
}

// writeTo writes the payload to w; it may be called more than once (the
// cache hashes it, then writes it).
func (p *payload) writeTo(w io.Writer) error {
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriterSize(w, 1<<16)
	}
	bw.Write(binary.AppendUvarint(nil, uint64(len(p.head))))
	bw.Write(p.head)
	if p.has {
		writeTrees(bw, p.trees)
	}
	if p.isVL {
		writeSL2VL(bw, p.sl2vl)
	}
	return bw.Flush()
}

// sl2vlSize is the bytes of one raw SL2VL entry.
const sl2vlSize = 4 + 2 + 16

func writeSL2VL(buf *bufio.Writer, es []plan.SL2VLEntry) {
	if es == nil {
		buf.WriteByte(0)
		return
	}
	buf.WriteByte(1)
	buf.Write(binary.AppendUvarint(nil, uint64(len(es))))
	var b [sl2vlSize]byte
	for _, e := range es {
		binary.LittleEndian.PutUint32(b[:], uint32(e.Node))
		b[4], b[5] = e.In, e.Out
		copy(b[6:], e.VL[:])
		buf.Write(b[:])
	}
}

// rawPart reads the byte before a raw part: 0 for a nil part, which must
// end the payload, 1 for a part that follows.
func rawPart(p []byte) (rest []byte, present bool, err error) {
	if len(p) == 0 {
		return nil, false, errShort
	}
	switch p[0] {
	case 0:
		if len(p) != 1 {
			return nil, false, errors.New("trailing bytes after the result")
		}
		return nil, false, nil
	case 1:
		return p[1:], true, nil
	}
	return nil, false, errShort
}

func readSL2VL(p []byte) ([]plan.SL2VLEntry, error) {
	p, present, err := rawPart(p)
	if !present {
		return nil, err
	}
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k)/sl2vlSize {
		return nil, errShort
	}
	p = p[k:]
	es := make([]plan.SL2VLEntry, n)
	for i := range es {
		b := p[i*sl2vlSize : (i+1)*sl2vlSize]
		es[i] = plan.SL2VLEntry{Node: int32(binary.LittleEndian.Uint32(b)), In: b[4], Out: b[5]}
		copy(es[i].VL[:], b[6:])
	}
	if len(p) != int(n)*sl2vlSize {
		return nil, errors.New("trailing bytes after the result")
	}
	return es, nil
}

func writeTrees(buf *bufio.Writer, trees []plan.DestPlanes) {
	var b [binary.MaxVarintLen64]byte
	uv := func(x uint64) { buf.Write(b[:binary.PutUvarint(b[:], x)]) }
	if trees == nil {
		buf.WriteByte(0)
		return
	}
	buf.WriteByte(1)
	uv(uint64(len(trees)))
	for _, dp := range trees {
		uv(uint64(len(dp.Planes)))
		for _, p := range dp.Planes {
			if p == nil {
				uv(0)
				continue
			}
			uv(uint64(len(p)) + 1)
			buf.Write(p)
		}
	}
}

var errShort = errors.New("truncated payload")

// decodePayload decodes a payload written by payload.writeTo into v. The
// decoded trees alias payload, which the caller must not reuse.
func decodePayload(payload []byte, v any) error {
	n, k := binary.Uvarint(payload)
	if k <= 0 || n > uint64(len(payload)-k) {
		return errShort
	}
	payload = payload[k:]
	if err := gob.NewDecoder(bytes.NewReader(payload[:n])).Decode(v); err != nil {
		return err
	}
	payload = payload[n:]
	if x, ok := v.(*plan.VLPlan); ok {
		es, err := readSL2VL(payload)
		if err != nil {
			return err
		}
		x.SL2VL = es
		return nil
	}
	if _, _, has := treesOf(v); !has {
		if len(payload) != 0 {
			return errors.New("trailing bytes after the result")
		}
		return nil
	}
	trees, err := readTrees(payload)
	if err != nil {
		return err
	}
	setTrees(v, trees)
	return nil
}

func readTrees(p []byte) ([]plan.DestPlanes, error) {
	uv := func() (uint64, error) {
		x, k := binary.Uvarint(p)
		if k <= 0 {
			return 0, errShort
		}
		p = p[k:]
		return x, nil
	}
	p, present, err := rawPart(p)
	if !present {
		return nil, err
	}
	dests, err := uv()
	// Every destination takes at least one byte: a count beyond what is
	// left is corruption, not a reason to allocate.
	if err != nil || dests > uint64(len(p)) {
		return nil, errShort
	}
	trees := make([]plan.DestPlanes, dests)
	for d := range trees {
		np, err := uv()
		if err != nil || np > uint64(len(p)) {
			return nil, errShort
		}
		if np == 0 {
			continue
		}
		planes := make([]plan.Plane, np)
		for i := range planes {
			l, err := uv()
			if err != nil || l > uint64(len(p))+1 {
				return nil, errShort
			}
			if l == 0 {
				continue
			}
			l--
			planes[i] = plan.Plane(p[:l:l])
			p = p[l:]
		}
		trees[d].Planes = planes
	}
	if len(p) != 0 {
		return nil, errors.New("trailing bytes after the result")
	}
	return trees, nil
}
