//go:build linux

package umad

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// seqpacketPair returns a fileDevice and the peer end of a SOCK_SEQPACKET
// pair, which keeps record boundaries like the umad file and, like it,
// goes through the runtime poller.
func seqpacketPair(t *testing.T) (*fileDevice, *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skipf("socketpair: %v", err)
	}
	syscall.SetNonblock(fds[0], true)
	f := os.NewFile(uintptr(fds[0]), "umad-test")
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	peer := os.NewFile(uintptr(fds[1]), "kernel-side")
	t.Cleanup(func() { peer.Close() })
	return &fileDevice{f: f, rc: rc}, peer
}

// ioctlShim is a real file for reads and writes with the fake kernel's
// ioctls (a socket has none).
type ioctlShim struct {
	*fileDevice
	k *fakeKernel
}

func (s ioctlShim) Ioctl(req uint32, arg []byte) error { return s.k.Ioctl(req, arg) }

func TestFileDeviceConn(t *testing.T) {
	dev, kernel := seqpacketPair(t)
	if err := dev.Ioctl(ioctlEnablePKey, nil); !errors.Is(err, syscall.ENOTTY) {
		t.Fatalf("ENABLE_PKEY on a socket = %v, want ENOTTY", err)
	}
	c, err := newConn(ioctlShim{dev, newFakeKernel()}, nil, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	req := mad(256, smp.ClassSMPDR, smp.MethodGet, 0x31)
	if err := c.Send(transport.Packet{DLID: smp.PermissiveLID, MAD: req}); err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, 1024)
	n, err := kernel.Read(rec)
	if err != nil || n != HeaderLen+256 {
		t.Fatalf("kernel side read %d bytes, %v", n, err)
	}
	h, m, _ := decodeRecord(rec[:n])
	if h.AgentID != 8 || h.LID != smp.PermissiveLID || h.TimeoutMS != 1000 || string(m) != string(req) {
		t.Fatalf("record %+v", h)
	}
	m[3] |= 0x80
	h.TimeoutMS = 0
	_ = h.EncodeTo(rec)
	if _, err := kernel.Write(rec[:n]); err != nil {
		t.Fatal(err)
	}
	p, err := c.Recv(context.Background())
	if err != nil || p.MAD[3] != smp.MethodGetResp || p.SLID != smp.PermissiveLID {
		t.Fatalf("Recv = %v, %v", p.MAD[:4], err)
	}
	// A retry's backed-off timeout reaches the kernel.
	req[8]++ // a fresh TID
	if err := c.Send(transport.Packet{DLID: smp.PermissiveLID, MAD: req, Timeout: 4 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if n, err = kernel.Read(rec); err != nil {
		t.Fatal(err)
	}
	if h, _, _ = decodeRecord(rec[:n]); h.TimeoutMS != 4000 {
		t.Fatalf("attempt timeout 4s reached the kernel as %d ms", h.TimeoutMS)
	}
	// Close must wake the reader blocked in read(2).
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return: the blocked read was not interrupted")
	}
}

// TestOpenOnNonUMADFiles runs Open's real file handling against a fake
// sysfs and a /dev whose umad node is a plain file: the ENABLE_PKEY ioctl
// must fail with a clear error.
func TestOpenOnNonUMADFiles(t *testing.T) {
	root := fakeSysfs(t, map[string]map[int]fakePort{"mlx5_0": {1: active}}, nil, []string{"mlx5_0 1"})
	devRoot := t.TempDir()
	os.MkdirAll(filepath.Join(devRoot, "infiniband"), 0o755)
	paths := Paths{SysfsRoot: root, DevRoot: devRoot}
	_, _, err := Open("mlx5_0", 1, Options{Paths: paths})
	if err == nil || !strings.Contains(err.Error(), "issm0") || !strings.Contains(err.Error(), "modprobe") {
		t.Fatalf("missing issm: %v", err)
	}
	for _, n := range []string{"issm0", "umad0"} {
		os.WriteFile(filepath.Join(devRoot, "infiniband", n), nil, 0o600)
	}
	_, info, err := Open("mlx5_0", 1, Options{Paths: paths})
	if err == nil || !strings.Contains(err.Error(), "ENABLE_PKEY") || !errors.Is(err, syscall.ENOTTY) {
		t.Fatalf("plain file as umad device: %v", err)
	}
	if info.PortGUID != 0x0002c90300a1b2c1 {
		t.Fatalf("PortInfo not returned with the error: %+v", info)
	}
}
