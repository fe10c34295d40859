package sm

// Progress hears how far a heavy sweep (or Plan) has come, for the
// interactive commands that draw it on a terminal. Calls come from the
// sweep's goroutines, concurrently, and must not block.
type Progress interface {
	// Phase starts a phase: "discovery", "routing", "verification" or
	// "programming"; detail says what runs in it ("" for nothing in
	// particular), e.g. the plugin being called.
	Phase(name, detail string)
	// Count says how far the current phase is: done of total (0: not
	// known in advance) units, e.g. "nodes found", "LFT blocks".
	Count(unit string, done, total int64)
}

// SetProgress makes discovery and programming report to p (nil: to
// nobody). Call it before the first sweep.
func (s *SM) SetProgress(p Progress) {
	s.progress = p
	if p == nil {
		s.disc.OnNode, s.prog.OnBlocks = nil, nil
		return
	}
	s.disc.OnNode = func(found int) { p.Count("nodes found", int64(found), 0) }
	s.prog.OnBlocks = func(done, total int64) { p.Count("LFT blocks written or unchanged", done, total) }
}

// phase tells the Progress, if any, that a phase starts.
func (s *SM) phase(name string) {
	if s.progress != nil {
		s.progress.Phase(name, "")
	}
}
