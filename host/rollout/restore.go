package rollout

import (
	"errors"
	"io/fs"
	"os"

	"github.com/ibsm/ibsm/conf/atomicfile"
	"github.com/ibsm/ibsm/host/program"
)

// StaleSuffix names, beside the record (Recorder.Path + StaleSuffix), the
// mark a programming leaves until its own record is written: while it is
// there the record may not describe what the switches hold (the SM stopped
// between writing tables and recording them, or programming failed).
const StaleSuffix = ".stale"

// The Recorder is the Programmer's record of what this SM last programmed.
var _ program.Record = (*Recorder)(nil)

// Programming marks the record stale, durably, before tables are written;
// the next record written clears the mark (unless another programming
// started meanwhile).
func (w *Recorder) Programming() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	return atomicfile.Write(w.Path+StaleSuffix, []byte("a programming started after this record was written; it may not describe the fabric\n"))
}

// clearStale removes the stale mark once the record of the programming
// that made it (gen) is written.
func (w *Recorder) clearStale(gen uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gen != w.gen {
		return
	}
	if err := os.Remove(w.Path + StaleSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) && w.Log != nil {
		w.Log.Warn("cannot clear the stale mark of the programmed plan's record; a restart reads every forwarding table back", "file", w.Path+StaleSuffix, "error", err)
	}
}

// Held is what the record says the switches hold, for a Programmer
// starting after a restart: nil without a record, with the stale mark, or
// with a record from before the SM LID and LinearFDBTop were kept.
func (w *Recorder) Held() (*program.Held, error) {
	if _, err := os.Stat(w.Path + StaleSuffix); !errors.Is(err, fs.ErrNotExist) {
		return nil, nil // marked stale, or the mark cannot be checked
	}
	r, err := LoadProgrammed(w.Path)
	if err != nil || r == nil {
		return nil, err
	}
	if r.SMLID == 0 || r.Top == 0 {
		return nil, nil
	}
	return heldOf(r), nil
}

// heldOf turns a record into what the Programmer restores: each switch's
// LFT, SL2VL tables and port-0 LID and LMC (switches without an LFT or
// LID are left out: they are read back).
func heldOf(r *Programmed) *program.Held {
	h := &program.Held{SMLID: r.SMLID, Top: r.Top, Switches: make(map[uint64]program.HeldSwitch, len(r.Switches)),
		SL2VLDefault: r.SL2VLDefault, NoSL2VL: r.NoSL2VL}
	for g, ps := range r.Switches {
		if ps.LFT != nil && ps.LID != 0 {
			h.Switches[g] = program.HeldSwitch{LID: ps.LID, LMC: ps.LMC, LFT: ps.LFT, SL2VL: ps.SL2VL}
		}
	}
	return h
}
