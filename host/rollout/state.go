package rollout

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ibsm/ibsm/conf/atomicfile"
)

// Files in the state directory's rollout/ folder. The daemon writes them;
// `ibsm rollout` reads status.json and history.jsonl and drops requests.
const (
	StatusFile  = "status.json"   // the latest Status
	StateFile   = "state.json"    // the rollout in progress (or last), written before each step
	HistoryFile = "history.jsonl" // one Event per line, appended
	RequestFile = "request"       // "promote" or "abort", taken by the daemon's next sweep
)

// Dir is the rollout folder of a state directory.
func Dir(stateDir string) string { return filepath.Join(stateDir, "rollout") }

// Phase is where a rollout stands.
type Phase string

// Phases. Staging is the only one in progress; the others are outcomes.
const (
	PhaseStaging    Phase = "staging"
	PhasePromoted   Phase = "promoted"
	PhaseRolledBack Phase = "rolled_back"
	PhaseRefused    Phase = "refused"
)

// Rollout is one promotion attempt.
type Rollout struct {
	ID           string    `json:"id"`
	Phase        Phase     `json:"phase"`
	Started      time.Time `json:"started"`
	Updated      time.Time `json:"updated"`
	Topology     string    `json:"topology"`
	ActiveKey    string    `json:"active_key"`
	CandidateKey string    `json:"candidate_key"`
	Engine       string    `json:"engine"`
	Steps        []Step    `json:"steps"`
	// Applied is how many steps are programmed and read back; Entering,
	// when >= 0, is the step being programmed (a restart finds it half
	// done).
	Applied  int `json:"applied"`
	Entering int `json:"entering"`
	// GateFrom is when the dwell of the stage ending at step Applied-1
	// began.
	GateFrom time.Time `json:"gate_from,omitempty"`
	// BlocksDiffer counts the LFT blocks the candidate changes; BlocksSent
	// the LFT blocks sent by the steps so far.
	BlocksDiffer int    `json:"blocks_differ"`
	BlocksSent   int64  `json:"blocks_sent"`
	Reason       string `json:"reason,omitempty"`
}

// InProgress reports whether r is staging.
func (r *Rollout) InProgress() bool { return r != nil && r.Phase == PhaseStaging }

// Status is what `ibsm rollout status` prints.
type Status struct {
	Updated  time.Time `json:"updated"`
	Topology string    `json:"topology"`
	Active   *Metrics  `json:"active"`
	// Candidate is nil when none is configured or it failed (Error).
	Candidate *Metrics `json:"candidate,omitempty"`
	Error     string   `json:"candidate_error,omitempty"`
	// Changes is what promotion would send (per-switch lists left out).
	Changes *Diff `json:"changes,omitempty"`
	// Stageable is "" or why the candidate cannot be staged.
	Stageable string `json:"not_stageable,omitempty"`
	Promote   string `json:"promote"`
	// Require, Unmet and Streak: an automatic promotion waits until no
	// criterion is unmet for Need shadow computations in a row.
	Require []string `json:"require,omitempty"`
	Unmet   []string `json:"unmet,omitempty"`
	Streak  int      `json:"streak"`
	Need    int      `json:"need"`
	// ShadowMillis and ShadowCPUMillis are the last shadow computation's
	// wall and CPU time (pipeline and metrics).
	ShadowMillis    float64  `json:"shadow_ms"`
	ShadowCPUMillis float64  `json:"shadow_cpu_ms"`
	Rollout         *Rollout `json:"rollout,omitempty"`
}

// Event is one line of the rollout history.
type Event struct {
	At      time.Time `json:"at"`
	ID      string    `json:"rollout"`
	Event   string    `json:"event"`
	Stage   string    `json:"stage,omitempty"`
	Step    int       `json:"step,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	Active  *Metrics  `json:"active,omitempty"`
	Cand    *Metrics  `json:"candidate,omitempty"`
	Outcome Phase     `json:"outcome,omitempty"`
}

// writeJSON writes v to path atomically and durably.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'))
}

// maxStateFile bounds what is read back (a status of a fabric that fills
// the LID space with every switch changed stays well below).
const maxStateFile = 64 << 20

func readJSON(path string, v any) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.Size() > maxStateFile {
		return fmt.Errorf("%s is %d bytes, more than any rollout file should be; remove it", path, st.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w (a torn or edited file: remove it, the daemon rewrites it)", path, err)
	}
	return nil
}

// WriteStatus saves s as dir/status.json.
func WriteStatus(dir string, s *Status) error { return writeJSON(filepath.Join(dir, StatusFile), s) }

// ReadStatus reads dir/status.json.
func ReadStatus(dir string) (*Status, error) {
	var s Status
	if err := readJSON(filepath.Join(dir, StatusFile), &s); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no rollout status in %s yet: the daemon writes it after its first sweep with a candidate {} block", dir)
		}
		return nil, err
	}
	return &s, nil
}

// SaveRollout saves r as dir/state.json.
func SaveRollout(dir string, r *Rollout) error { return writeJSON(filepath.Join(dir, StateFile), r) }

// LoadRollout reads dir/state.json; nil without error when there is none.
func LoadRollout(dir string) (*Rollout, error) {
	var r Rollout
	err := readJSON(filepath.Join(dir, StateFile), &r)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if err := r.valid(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, StateFile), err)
	}
	return &r, nil
}

func (r *Rollout) valid() error {
	switch r.Phase {
	case PhaseStaging, PhasePromoted, PhaseRolledBack, PhaseRefused:
	default:
		return fmt.Errorf("unknown phase %q", r.Phase)
	}
	if r.Applied < 0 || r.Applied > len(r.Steps) || r.Entering < -1 || r.Entering >= len(r.Steps) {
		return fmt.Errorf("step counters out of range (applied %d, entering %d, %d steps)", r.Applied, r.Entering, len(r.Steps))
	}
	return nil
}

// AppendHistory adds e to dir/history.jsonl.
func AppendHistory(dir string, e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, HistoryFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadHistory returns the events of dir/history.jsonl; a torn last line
// (a crash while appending) is skipped.
func ReadHistory(dir string) ([]Event, error) {
	f, err := os.Open(filepath.Join(dir, HistoryFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// Request is an operator's order to the daemon.
type Request string

// Requests.
const (
	RequestPromote Request = "promote"
	RequestAbort   Request = "abort"
)

// ParseRequest reads a request file's content.
func ParseRequest(b []byte) (Request, error) {
	switch r := Request(strings.TrimSpace(string(b))); r {
	case RequestPromote, RequestAbort:
		return r, nil
	default:
		return "", fmt.Errorf("rollout request %q is neither %q nor %q", shortText(string(b)), RequestPromote, RequestAbort)
	}
}

func shortText(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// WriteRequest leaves r for the daemon, which takes it at its next sweep
// tick (sm.sweep_interval).
func WriteRequest(dir string, r Request) error {
	if _, err := ParseRequest([]byte(r)); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, RequestFile), []byte(string(r)+"\n"))
}

// TakeRequest removes and returns the pending request ("" when none). A
// malformed request is removed and reported.
func TakeRequest(dir string) (Request, error) {
	path := filepath.Join(dir, RequestFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	os.Remove(path)
	if len(b) > 64 {
		b = b[:64]
	}
	return ParseRequest(b)
}
