package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// Client talks to a daemon's control socket.
type Client struct {
	c *net.UnixConn
	r *bufio.Reader
}

// Dial connects to the control socket at path.
func Dial(ctx context.Context, path string) (*Client, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED):
			return nil, fmt.Errorf("no ibsm daemon listens at %s: is `ibsm run` running with this sm.state_dir? (%w)", path, err)
		case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
			return nil, fmt.Errorf("%s: permission denied: run as root or as the daemon's user (%w)", path, err)
		}
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return &Client{c: c.(*net.UnixConn), r: bufio.NewReaderSize(c, 64<<10)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }

// Call sends cmd with args (nil for none) and decodes the result into out
// (nil to discard). A daemon-side error comes back as the error.
func (c *Client) Call(ctx context.Context, cmd string, args, out any) error {
	req := Request{Cmd: cmd}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return err
		}
		req.Args = b
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.c.SetDeadline(dl)
	} else {
		_ = c.c.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { _ = c.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	_, werr := c.c.Write(append(b, '\n'))
	// A refused peer is answered before it writes and then closed, so
	// a failed write may still have an answer to read.
	line, err := readLine(c.r)
	if err != nil && werr != nil {
		return fmt.Errorf("control socket: sending %q: %w", cmd, werr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("control socket: %q: %w", cmd, ctx.Err())
		}
		return fmt.Errorf("control socket: no answer to %q (the daemon closed the connection)", cmd)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("control socket: answer to %q is not JSON: %w", cmd, err)
	}
	if !resp.OK {
		return errors.New(resp.Error)
	}
	if out != nil && len(resp.Result) > 0 {
		if err := json.Unmarshal(resp.Result, out); err != nil {
			return fmt.Errorf("control socket: result of %q: %w", cmd, err)
		}
	}
	return nil
}

// Call dials path, sends one command and closes the connection.
func Call(ctx context.Context, path, cmd string, args, out any) error {
	c, err := Dial(ctx, path)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Call(ctx, cmd, args, out)
}
