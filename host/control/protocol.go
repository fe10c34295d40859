package control

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
)

// SocketName is the control socket's file name inside sm.state_dir.
const SocketName = "control.sock"

// maxPath is the longest path a Unix socket address holds (sun_path is
// 108 bytes on Linux, one of them the terminating NUL).
const maxPath = 107

// maxLine bounds a request or response line (1 MiB): a status of a large
// fabric is a few kB, so anything longer is garbage.
const maxLine = 1 << 20

// SocketPath is where the daemon whose state directory is stateDir listens.
func SocketPath(stateDir string) string { return filepath.Join(stateDir, SocketName) }

// Request is one command sent to the daemon.
type Request struct {
	Cmd  string          `json:"cmd"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Response answers one Request: Result when OK, Error otherwise.
type Response struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Decode unmarshals a handler's args into v, refusing unknown fields so a
// misspelt option is an error rather than ignored. Empty args leave v as
// it is.
func Decode(args json.RawMessage, v any) error {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad arguments: %w", err)
	}
	return nil
}

// checkPath refuses socket paths the kernel cannot bind.
func checkPath(path string) error {
	if len(path) > maxPath {
		return fmt.Errorf("control socket path %s is %d bytes, more than a Unix socket address holds (%d): choose a shorter sm.state_dir", path, len(path), maxPath)
	}
	return nil
}
