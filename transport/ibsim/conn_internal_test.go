package ibsim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ibsm/ibsm/integration/benchutil"
)

// TestDataSocketConnected: our data socket must be connected to ibsim's
// out<k>; otherwise the kernel's max_dgram_qlen applies to ibsim's writes
// to us and ibsim spins whenever 10 replies wait unread.
func TestDataSocketConnected(t *testing.T) {
	net, _ := filepath.Abs("testdata/small.net")
	sim := benchutil.StartIBSimTest(t, benchutil.IBSimOptions{NetFile: net, NoConsole: true,
		SockName: fmt.Sprintf("ibsmtransint%d", os.Getpid())})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, Options{SockName: sim.Sockname, Attach: "h2"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.data.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var peer syscall.Sockaddr
	var perr error
	rc.Control(func(fd uintptr) { peer, perr = syscall.Getpeername(int(fd)) })
	if perr != nil {
		t.Fatalf("data socket has no peer: %v", perr)
	}
	// Go drops the trailing NUL of abstract names it returns.
	want := fmt.Sprintf("@%s:out%d", sim.Sockname, c.Attachment().Slot)
	if u, ok := peer.(*syscall.SockaddrUnix); !ok || u.Name != want {
		t.Errorf("data socket peer %#v, want %q", peer, want)
	}
}

// TestCopyMADRecycle: a received MAD is copied into a buffer of its own,
// whether fresh or given back by Recycle, and a MAD of another size is
// copied whole.
func TestCopyMADRecycle(t *testing.T) {
	c := &Conn{}
	for _, tc := range []struct {
		name    string
		size    int
		recycle bool
	}{
		{"fresh", MADLen, false},
		{"given back", MADLen, true},
		{"short", 100, true},
	} {
		in := make([]byte, tc.size)
		for i := range in {
			in[i] = byte(i + tc.size)
		}
		if tc.recycle {
			old := make([]byte, MADLen)
			for i := range old {
				old[i] = 0xEE
			}
			c.Recycle(old)
		}
		got := c.copyMAD(in)
		if !bytes.Equal(got, in) || &got[0] == &in[0] {
			t.Fatalf("%s: copy %x of %x (aliased: %v)", tc.name, got[:8], in[:8], &got[0] == &in[0])
		}
	}
}
