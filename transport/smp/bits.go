package smp

import "fmt"

// Attribute layouts in the spec are tables of (bit offset, length) with bit
// 0 the most significant bit of byte 0. getBits/putBits address fields the
// same way so the code can be checked line by line against those tables.
// Fields are either byte-aligned whole bytes or lie inside one byte, which
// holds for every attribute in this package.

func getBits(b []byte, off, width int) uint64 {
	if off%8 == 0 && width%8 == 0 {
		var v uint64
		for i := off / 8; i < (off+width)/8; i++ {
			v = v<<8 | uint64(b[i])
		}
		return v
	}
	shift := 8 - off%8 - width
	return uint64(b[off/8]>>uint(shift)) & (1<<uint(width) - 1)
}

// bitWriter writes fields and remembers the first value that does not fit,
// so Marshal reports it instead of silently truncating.
type bitWriter struct {
	b    []byte
	attr string
	err  error
}

func (w *bitWriter) put(name string, off, width int, v uint64) {
	if width < 64 && v>>uint(width) != 0 {
		if w.err == nil {
			w.err = fmt.Errorf("smp: %s.%s = %d does not fit in %d bits", w.attr, name, v, width)
		}
		return
	}
	if off%8 == 0 && width%8 == 0 {
		for i := (off+width)/8 - 1; i >= off/8; i-- {
			w.b[i] = byte(v)
			v >>= 8
		}
		return
	}
	shift := uint(8 - off%8 - width)
	mask := byte((1<<uint(width) - 1) << shift)
	w.b[off/8] = w.b[off/8]&^mask | byte(v)<<shift&mask
}

func (w *bitWriter) bool(name string, off int, v bool) {
	var x uint64
	if v {
		x = 1
	}
	w.put(name, off, 1, x)
}

// need checks a buffer length for attribute attr.
func need(attr string, b []byte, n int) error {
	if len(b) < n {
		return fmt.Errorf("smp: %s needs %d bytes, got %d", attr, n, len(b))
	}
	return nil
}

func clear64(b []byte) {
	for i := range b {
		b[i] = 0
	}
}
