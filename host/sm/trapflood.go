package sm

// Per-source trap limits (demux). A switch reports a link change with one
// trap 128 and repeats it until repressed; a hundred a second from one LID
// is a broken or hostile port. Traps over the limit are dropped before
// they are decoded or answered, and counted in the log.
const (
	trapRate  = 100 // traps per second per source LID
	trapBurst = 200
)
