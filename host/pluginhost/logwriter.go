package pluginhost

import (
	"bytes"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// lineLogger turns stray plugin stdout/stderr output (written after Serve,
// which go-plugin forwards over its stdio stream) into WARN log lines, so
// that prints in a plugin are visible instead of silently discarded.
type lineLogger struct {
	mu     sync.Mutex
	log    hclog.Logger
	stream string
	buf    []byte
}

func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.log.Warn("unstructured plugin output", "stream", w.stream, "line", string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 {
		w.log.Warn("unstructured plugin output", "stream", w.stream, "line", string(w.buf))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// tail keeps the last bytes of the plugin's raw stderr, appended to start-up
// errors: go-plugin's own message for a plugin that died early ("Unrecognized
// remote plugin message") rarely names the real cause.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
