package rollout

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/conf/atomicfile"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// ProgrammedFile, in the state directory, records what the SM last
// programmed: `ibsm plan diff`'s reference when the fabric cannot be read
// back (the embedded fabric lives only inside the daemon that runs it).
const ProgrammedFile = "programmed.gob"

// Programmed is what the SM last programmed, by GUID so that it applies
// to any later topology.
type Programmed struct {
	At     time.Time
	Engine string
	Key    string
	// Note says what state this is when not a whole plan (a rollout step).
	Note string
	// Switches by node GUID.
	Switches map[uint64]ProgrammedSwitch
	// LIDs by port GUID.
	LIDs map[uint64]plan.PortLID
	// SL2VLDefault fills pairs a switch's Listed does not hold;
	// NoSL2VL: the plan wrote no SL2VL table (SL 0 on VL 0 only).
	SL2VLDefault [16]uint8
	NoSL2VL      bool
	// SMLID is the programming SM port's LID (every switch's port-0
	// MasterSMLID), Top the LinearFDBTop every switch was given; 0 in
	// records written before they were kept (a restart then reads every
	// table back).
	SMLID, Top uint16
}

// ProgrammedSwitch is one switch's LFT and its listed SL2VL tables, and
// the LID and LMC of its port 0 (LID 0 in records written before it was
// kept).
type ProgrammedSwitch struct {
	LFT   []uint8
	SL2VL map[[2]uint8][16]uint8
	LID   uint16
	LMC   uint8
}

// RecordOf records plan p (engine, key and note describe it).
func RecordOf(p Plan, engine, key, note string) *Programmed {
	t := p.Rz.Topo
	r := &Programmed{At: time.Now(), Engine: engine, Key: key, Note: note,
		Switches: make(map[uint64]ProgrammedSwitch, len(t.Switches())), LIDs: make(map[uint64]plan.PortLID, len(t.Endpoints()))}
	sv := PlanSL2VL(t, p.VLs).(*planSL2VL)
	r.NoSL2VL, r.SL2VLDefault = sv.none, sv.def
	r.Top = p.Rz.TopLID
	if t.SM.Connected() {
		if i := t.EndpointIndex(t.SM); i >= 0 {
			r.SMLID = p.Rz.LIDs.Ports[i].Base
		}
	}
	listed := map[int32]map[[2]uint8][16]uint8{}
	for k, v := range sv.listed {
		if listed[k[0]] == nil {
			listed[k[0]] = map[[2]uint8][16]uint8{}
		}
		listed[k[0]][[2]uint8{uint8(k[1]), uint8(k[2])}] = v
	}
	for s, node := range t.Switches() {
		ps := ProgrammedSwitch{LFT: p.Rz.LFT[s], SL2VL: listed[node]}
		if i := t.EndpointIndex(topology.PortRef{Node: node, Port: 0}); i >= 0 {
			ps.LID, ps.LMC = p.Rz.LIDs.Ports[i].Base, p.Rz.LIDs.Ports[i].LMC
		}
		r.Switches[t.Nodes[node].GUID] = ps
	}
	for e, ep := range t.Endpoints() {
		r.LIDs[t.PortGUID(ep)] = p.Rz.LIDs.Ports[e]
	}
	return r
}

// Tables maps the record onto topology t: a switch or port the record
// does not hold is unknown (no LFT row, no SL2VL table, LID none).
func (r *Programmed) Tables(t *topology.Topology) Tables {
	out := Tables{Topo: t, LFT: make([][]uint8, len(t.Switches())), LIDs: make([]plan.PortLID, len(t.Endpoints()))}
	sl := &recordSL2VL{r: r, t: t}
	out.SL2VL = sl
	for s, node := range t.Switches() {
		if ps, ok := r.Switches[t.Nodes[node].GUID]; ok {
			out.LFT[s] = ps.LFT
		}
	}
	for e, ep := range t.Endpoints() {
		out.LIDs[e] = r.LIDs[t.PortGUID(ep)]
	}
	return out
}

type recordSL2VL struct {
	r *Programmed
	t *topology.Topology
}

func (s *recordSL2VL) Table(node int32, in, out uint8) ([16]uint8, bool) {
	ps, ok := s.r.Switches[s.t.Nodes[node].GUID]
	if !ok || s.r.NoSL2VL {
		return [16]uint8{}, false
	}
	if v, ok := ps.SL2VL[[2]uint8{in, out}]; ok {
		return v, true
	}
	return s.r.SL2VLDefault, true
}

// Pairs is unused on the held side of a diff; it lists the listed pairs.
func (s *recordSL2VL) Pairs(node int32) [][2]uint8 {
	return ReadSL2VL{node: s.r.Switches[s.t.Nodes[node].GUID].SL2VL}.Pairs(node)
}

// A record file is recordMagic, then uvarint(len(head)), a gob of
// recordHead (the record without its LFTs), the LFTs raw in head.Order,
// and the xxhash of everything after the magic (8 bytes, little endian).
// The LFTs are nearly all of it (LIDs × switches bytes: 187 MB on the
// largest 3-level fat tree in the LID space), where gob and gzip spent
// 6.9 s of CPU; raw they are written straight from the plan and read
// back as slices of the file.
const recordMagic = "ibsm-programmed-v2\n"

// recordMagicV1 starts the older format, a gzip'd gob of the whole
// record: still read, no longer written.
const recordMagicV1 = "ibsm-programmed-v1\n"

type recordHead struct {
	Rec Programmed // without LFTs
	// Order lists the switches whose LFTs follow, Lens their lengths
	// (-1: none).
	Order []uint64
	Lens  []int32
}

// LoadProgrammed reads dir/ProgrammedFile; nil without one.
func LoadProgrammed(path string) (*Programmed, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r *Programmed
	switch {
	case bytes.HasPrefix(b, []byte(recordMagic)):
		r, err = decodeRecord(b[len(recordMagic):])
	case bytes.HasPrefix(b, []byte(recordMagicV1)):
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(b[len(recordMagicV1):])); err == nil {
			r = &Programmed{}
			err = gob.NewDecoder(zr).Decode(r)
		}
	default:
		return nil, fmt.Errorf("%s is not a record of a programmed plan (remove it; the daemon writes it again at its next programming)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s is damaged: %v (remove it; the daemon writes it again at its next programming)", path, err)
	}
	return r, nil
}

var errRecordShort = errors.New("truncated")

// decodeRecord decodes what follows the magic; the LFTs alias b.
func decodeRecord(b []byte) (*Programmed, error) {
	if len(b) < 8 {
		return nil, errRecordShort
	}
	body := b[:len(b)-8]
	if xxhash.Sum64(body) != binary.LittleEndian.Uint64(b[len(b)-8:]) {
		return nil, errors.New("checksum mismatch")
	}
	n, k := binary.Uvarint(body)
	if k <= 0 || n > uint64(len(body)-k) {
		return nil, errRecordShort
	}
	var h recordHead
	if err := gob.NewDecoder(bytes.NewReader(body[k : k+int(n)])).Decode(&h); err != nil {
		return nil, err
	}
	rest := body[k+int(n):]
	if len(h.Order) != len(h.Lens) {
		return nil, errors.New("switch list and LFT lengths differ")
	}
	if h.Rec.Switches == nil {
		h.Rec.Switches = map[uint64]ProgrammedSwitch{}
	}
	for i, g := range h.Order {
		ps := h.Rec.Switches[g]
		if l := h.Lens[i]; l >= 0 {
			if int(l) > len(rest) {
				return nil, errRecordShort
			}
			ps.LFT, rest = rest[:l:l], rest[l:]
		}
		h.Rec.Switches[g] = ps
	}
	if len(rest) != 0 {
		return nil, errors.New("trailing bytes after the tables")
	}
	return &h.Rec, nil
}

func saveProgrammed(path string, r *Programmed) error {
	h := recordHead{Rec: *r, Order: slices.Sorted(maps.Keys(r.Switches))}
	h.Rec.Switches = make(map[uint64]ProgrammedSwitch, len(r.Switches))
	h.Lens = make([]int32, len(h.Order))
	for i, g := range h.Order {
		ps := r.Switches[g]
		h.Lens[i] = -1
		if ps.LFT != nil {
			h.Lens[i] = int32(len(ps.LFT))
		}
		ps.LFT = nil
		h.Rec.Switches[g] = ps
	}
	var head bytes.Buffer
	if err := gob.NewEncoder(&head).Encode(&h); err != nil {
		return err
	}
	return atomicfile.WriteFunc(path, func(f io.Writer) error {
		bw := bufio.NewWriterSize(f, 1<<20)
		if _, err := bw.WriteString(recordMagic); err != nil {
			return err
		}
		sum := xxhash.New()
		w := io.MultiWriter(bw, sum)
		parts := [][]byte{binary.AppendUvarint(nil, uint64(head.Len())), head.Bytes()}
		for _, g := range h.Order {
			parts = append(parts, r.Switches[g].LFT)
		}
		for _, p := range parts {
			if _, err := w.Write(p); err != nil {
				return err
			}
		}
		if _, err := bw.Write(binary.LittleEndian.AppendUint64(nil, sum.Sum64())); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// Recorder writes records in the background, the newest only: the sweep
// that programmed does not wait for the file (tens of MB for the largest
// fabrics before compression). It also keeps the mark that says the record
// is stale (Programming, restore.go).
type Recorder struct {
	Path string
	Log  hclog.Logger

	mu   sync.Mutex
	next func() *Programmed // the record to write, made when written
	// gen counts Programming calls; nextGen is gen when next was queued:
	// a record clears the stale mark only if no programming started
	// after the one it records.
	gen, nextGen uint64
	busy         bool
	idle         chan struct{} // closed when nothing is pending
}

// RecordPlan queues the record of plan p (RecordOf), replacing a record
// not yet written. The record is made on the writer's goroutine: RecordOf
// walks every switch and endpoint (ft3-56: ~13 ms), which the sweep that
// programmed need not wait for. p must not change afterwards (plans in
// force do not).
func (w *Recorder) RecordPlan(p Plan, engine, key, note string) {
	at := time.Now()
	w.queue(func() *Programmed {
		r := RecordOf(p, engine, key, note)
		r.At = at
		return r
	})
}

func (w *Recorder) queue(next func() *Programmed) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next, w.nextGen = next, w.gen
	if w.busy {
		return
	}
	w.busy, w.idle = true, make(chan struct{})
	go w.drain()
}

func (w *Recorder) drain() {
	for {
		w.mu.Lock()
		next, gen := w.next, w.nextGen
		w.next = nil
		if next == nil {
			w.busy = false
			close(w.idle)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		err := saveProgrammed(w.Path, next())
		if err != nil && w.Log != nil {
			w.Log.Warn("cannot record the programmed plan; ibsm plan diff without a daemon compares against an older record, and a restart reads every forwarding table back", "file", w.Path, "error", err)
		}
		if err == nil {
			w.clearStale(gen)
		}
	}
}

// Wait returns once every queued record is written.
func (w *Recorder) Wait() {
	w.mu.Lock()
	idle, busy := w.idle, w.busy
	w.mu.Unlock()
	if busy {
		<-idle
	}
}
