// Package control is the daemon's local control API: a Unix socket in the
// state directory (mode 0600) that serves `ibsm status`, `ibsm sweep`,
// `ibsm reload` and whatever other parts of the daemon register (the
// rollout commands register "rollout.*").
//
// Protocol: one JSON request per line, one JSON response per line, on a
// stream socket; a connection may carry several requests in turn.
//
//	→ {"cmd":"status","args":{...}}
//	← {"ok":true,"result":{...}}   or   {"ok":false,"error":"what went wrong and what to do"}
//
// Only the daemon's own uid and root may talk to it: every connection's
// peer credentials (SO_PEERCRED) are checked before anything is read, so
// the file mode is a second fence, not the only one.
//
// Registering a command (before or after Serve; names are unique):
//
//	srv.Handle("rollout.status", func(ctx context.Context, args json.RawMessage) (any, error) {
//		var a struct{ Stage string `json:"stage"` }
//		if err := control.Decode(args, &a); err != nil {
//			return nil, err
//		}
//		return rolloutState(a.Stage), nil // marshalled as the response's result
//	})
//
// A handler's error is sent to the client as the response's error text;
// it should say what to do next. Handlers run concurrently (one goroutine
// per connection) and are given a context that ends when the server
// closes or the request's deadline (Options.RequestTimeout) passes.
package control
