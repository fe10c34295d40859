// Package transport moves MADs between the SM and a fabric. A Conn is a raw
// attachment (embedded simulator, ibsim socket, umad device); a Transport
// wraps a Conn with TID matching, a window of outstanding requests, per-MAD
// timeouts and retries. Codecs live in transport/smp.
package transport

import (
	"context"
	"errors"
	"time"
)

// Packet is one MAD with the addressing that travels outside it (the LRH and
// BTH/DETH fields). Directed-route SMPs carry their route inside the MAD and
// use DLID 0xFFFF (permissive).
type Packet struct {
	DLID uint16
	SLID uint16
	SL   uint8
	// QP is the destination QP on send and the source QP on receive
	// (0 for SMPs, 1 for GMPs such as SA).
	QP uint32
	// MAD is the 256-byte management datagram.
	MAD []byte
	// Timeout is how long this attempt of a request waits for its answer
	// (set by the Transport, which backs off on retries); a Conn whose
	// lower layer keeps its own timer (umad's kernel) passes it down. Zero
	// means the Conn's default.
	Timeout time.Duration
}

// Conn is a raw MAD attachment. Send must not block for long; Recv blocks
// until a packet arrives, ctx is done or the Conn is closed.
type Conn interface {
	Send(p Packet) error
	Recv(ctx context.Context) (Packet, error)
	Close() error
}

// Recycler is a Conn that takes back the MAD buffer of a packet its Recv
// returned once the Dispatcher is done with it (an answer DoAll handed to
// its done), to fill again: the embedded fabric's answers cost a 256-byte
// allocation each otherwise.
type Recycler interface {
	Recycle(mad []byte)
}

// Deliverer is a Conn whose own reader can hand each packet it reads
// straight to the Dispatcher instead of queueing it for Recv: a goroutine
// hop and a channel send fewer per MAD (on ibsim, at a few microseconds of
// host CPU per SMP on two cores the simulator shares, that is rate).
// Deliver calls fn, from one goroutine at a time, with what Recv would have
// returned, until ctx is done or the Conn is closed; it returns once fn is
// no longer called. fn never blocks. Meanwhile Recv is not called; after
// Deliver returned the Conn queues packets for Recv again.
type Deliverer interface {
	Deliver(ctx context.Context, fn func(Packet, error))
}

// BatchSender is a Conn that writes several requests in one system call
// (DoAll's answers come in bursts, and so do the requests that take their
// slots). SendBatch sends ps in order, each as Send would, and returns how
// many it handed over before err; the rest were not sent. Like Send, it
// keeps no MAD after it returned.
type BatchSender interface {
	SendBatch(ps []Packet) (int, error)
}

// Stats counts what a Transport did. Gets and Sets count distinct requests
// by method (a retry is counted in Retries, not again in Gets/Sets).
type Stats struct {
	Gets, Sets, Others uint64
	Sent, Received     uint64
	Retries, Timeouts  uint64
	Unmatched          uint64
}

// Transport sends requests and matches their responses.
type Transport interface {
	// Do sends req, assigning it a fresh TID, and returns the response with
	// the same TID, retrying on timeout. At most the configured window of
	// requests is outstanding; further callers wait for a slot.
	Do(ctx context.Context, req Packet) (Packet, error)
	// Unsolicited delivers packets that answer no request: traps and
	// requests from other agents (SA queries, SMInfo from other SMs).
	Unsolicited() <-chan Packet
	// Send transmits a packet without waiting for an answer (responses to
	// unsolicited requests, TrapRepress).
	Send(p Packet) error
	Stats() Stats
	Close() error
}

// ErrTimeout is returned (wrapped) when a request exhausted its retries.
var ErrTimeout = errors.New("MAD timed out")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("transport closed")
