package transport

import "errors"

// ErrConnLost is what a Conn wraps into the error Recv (or Send) returns
// once its attachment is gone for good: the HCA was removed or reset, the
// simulator went away. It is not a transient receive error, so the
// Dispatcher does not retry the read: it ends, and every pending and later
// Do and Send fails with an error that wraps both ErrClosed and the Conn's
// error (see Dispatcher.Done and Dispatcher.Err).
var ErrConnLost = errors.New("MAD attachment lost")
