package ibsim

import (
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
