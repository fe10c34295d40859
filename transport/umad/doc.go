// Package umad attaches the SM to real InfiniBand hardware through the
// kernel's user MAD interface, /dev/infiniband/umadN, in pure Go.
//
// Open resolves the HCA port from sysfs as libibumad resolves an SMI port
// (a switch uses port 0; ports whose IsSMDisabled bit is set are skipped,
// and a multi-plane port named by its GSI device is replaced by its SMI
// device), holds the port's issmN device (which sets the port's IsSM
// capability bit while open), switches the umad file to the header with
// pkey_index (IB_USER_MAD_ENABLE_PKEY) and registers three agents: LID-routed SMPs
// (class 0x01) and directed-route SMPs (0x81) on QP0, receiving Get, Set
// and Trap so other SMs' SMInfo and the SMAs' traps reach us, and the SA
// (0x03, class version 2) on QP1 with kernel RMPP for every SA request
// method. The returned Conn is a transport.Conn: wrap it with
// transport.New.
//
// Every read and write is one record: the 64-byte struct ib_user_mad_hdr
// (Header) followed by the MAD. Requests are sent with the kernel's
// response timeout and no kernel retries; the kernel delivers the response,
// or a record with status ETIMEDOUT, which the Conn consumes (the
// Transport's own timer, with the same timeout, reports
// transport.ErrTimeout). The Transport retries with a fresh TID each time,
// because the kernel refuses (EINVAL) a request whose TID and class are
// still on its send list, and it keeps a request there until its own timer
// — started at send completion, after ours — expires, or until it has
// queued the response for reading. Writing a request, the kernel replaces
// the whole upper 32 TID bits with its MAD client id (responses keep the
// TID they answer); matching uses the low 32 bits.
//
// Responses go out with ResponseRetries kernel retries, as OpenSM sends
// everything: multi-record SA answers are written whole with the RMPP
// Active flag, the kernel segments them, and each lost segment or ACK costs
// a retry. A read or write failing with EIO means the HCA was removed or
// reset: the Conn reports an error wrapping transport.ErrConnLost and the
// Transport ends.
//
// MADs pass through unchanged. On hardware the kernel's SMI code walks
// directed-route hop pointers: an originator sends hop pointer 0 (as with
// ibsim) and its responses arrive with hop pointer 0, while a DR request
// from another SM arrives with hop pointer hop count + 1, and the response
// must keep that value (the kernel decrements it on the way out; a
// response with hop pointer 0 is treated as already home).
//
// Nothing here needs cgo. Tests drive the Conn through a fake kernel at
// the byte level; sysfs and /dev roots are injectable (Paths).
package umad
