package rollout

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestStateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rollout")
	if r, err := LoadRollout(dir); r != nil || err != nil {
		t.Fatalf("no state: %v %v", r, err)
	}
	r := &Rollout{ID: "r1", Phase: PhaseStaging, Steps: []Step{{Stage: "a", GUIDs: []uint64{1}, Last: true, Dwell: time.Second}}, Entering: 0}
	if err := SaveRollout(dir, r); err != nil {
		t.Fatal(err)
	}
	got, err := LoadRollout(dir)
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	os.WriteFile(filepath.Join(dir, StateFile), []byte(`{"phase":"dancing"}`), 0o644)
	if _, err := LoadRollout(dir); err == nil || !strings.Contains(err.Error(), "unknown phase") {
		t.Errorf("bad phase: %v", err)
	}
	os.WriteFile(filepath.Join(dir, StateFile), []byte(`{"phase":"staging","applied":3,"steps":[]}`), 0o644)
	if _, err := LoadRollout(dir); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("bad counters: %v", err)
	}
	for _, e := range []Event{{ID: "r1", Event: "step"}, {ID: "r1", Event: "done", Outcome: PhasePromoted}} {
		if err := AppendHistory(dir, e); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(filepath.Join(dir, HistoryFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"rollout":"r1","ev`) // torn by a crash
	f.Close()
	h, err := ReadHistory(dir)
	if err != nil || len(h) != 2 || h[1].Outcome != PhasePromoted {
		t.Errorf("history = %+v, %v", h, err)
	}
	if _, err := ReadStatus(dir); err == nil || !strings.Contains(err.Error(), "no rollout status") {
		t.Errorf("missing status: %v", err)
	}
}

func TestRequests(t *testing.T) {
	dir := t.TempDir()
	if r, err := TakeRequest(dir); r != "" || err != nil {
		t.Fatalf("none: %q %v", r, err)
	}
	if err := WriteRequest(dir, RequestPromote); err != nil {
		t.Fatal(err)
	}
	if r, err := TakeRequest(dir); r != RequestPromote || err != nil {
		t.Fatalf("promote: %q %v", r, err)
	}
	if r, _ := TakeRequest(dir); r != "" {
		t.Fatalf("taken twice: %q", r)
	}
	if err := WriteRequest(dir, "reboot"); err == nil {
		t.Error("bad request written")
	}
	os.WriteFile(filepath.Join(dir, RequestFile), []byte("rm -rf /"), 0o644)
	if r, err := TakeRequest(dir); r != "" || err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("garbage: %q %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(dir, RequestFile)); err == nil {
		t.Error("garbage request left behind")
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{"promote", "abort\n", "", "promote abort", "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRequest(b)
		if (err == nil) != (r == RequestPromote || r == RequestAbort) {
			t.Fatalf("ParseRequest(%q) = %q, %v", b, r, err)
		}
	})
}

func FuzzLoadRollout(f *testing.F) {
	f.Add([]byte(`{"phase":"staging","applied":1,"entering":-1,"steps":[{"stage":"a","guids":[1]}]}`))
	f.Add([]byte(`{"phase":"promoted"}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, StateFile), b, 0o644)
		r, err := LoadRollout(dir)
		if err == nil && r != nil && (r.Applied > len(r.Steps) || r.Entering >= len(r.Steps)) {
			t.Fatalf("accepted out-of-range state %+v", r)
		}
	})
}
