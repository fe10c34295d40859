//go:build linux

package umad

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// fileDevice is an open umad character device. The kernel's umad file
// supports poll, so os.File reads go through the runtime poller and Close
// wakes a blocked Read.
type fileDevice struct {
	f  *os.File
	rc syscall.RawConn
}

func openDevice(path string) (*fileDevice, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("umad: %w%s", err, accessHint(err))
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("umad: %s: %w", path, err)
	}
	return &fileDevice{f: f, rc: rc}, nil
}

func (d *fileDevice) Read(b []byte) (int, error)  { return d.f.Read(b) }
func (d *fileDevice) Write(b []byte) (int, error) { return d.f.Write(b) }
func (d *fileDevice) Close() error                { return d.f.Close() }

func (d *fileDevice) Ioctl(req uint32, arg []byte) error {
	var errno syscall.Errno
	err := d.rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, uintptr(req), uintptr(unsafe.Pointer(unsafe.SliceData(arg))))
	})
	runtime.KeepAlive(arg)
	if err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// openISSM opens the port's issm device, which sets the IsSM capability
// bit for as long as it stays open. The kernel lets one opener at a time
// hold it; O_NONBLOCK turns "another SM has it" into EAGAIN instead of a
// wait for that SM to exit.
func openISSM(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.EAGAIN) {
			return nil, fmt.Errorf("umad: %s is held by another subnet manager on this port (opensm?); stop it first (systemctl stop opensm)", path)
		}
		return nil, fmt.Errorf("umad: open %s: %w%s", path, err, accessHint(err))
	}
	return os.NewFile(uintptr(fd), path), nil
}

func accessHint(err error) string {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return " (is the ib_umad kernel module loaded? modprobe ib_umad)"
	case errors.Is(err, os.ErrPermission):
		return " (run as root, or grant this user access to /dev/infiniband/umad* and issm* with a udev rule)"
	}
	return ""
}

// Open binds a Conn to an HCA port: it resolves device and port from sysfs
// (see Resolve: a switch uses port 0, a port with IsSMDisabled is never
// used), takes the port's issm device (setting IsSM), opens its umad device
// and registers the SMP and SA agents.
func Open(device string, port int, opts Options) (*Conn, PortInfo, error) {
	switch runtime.GOARCH {
	case "amd64", "arm64", "386", "arm", "riscv64", "s390x", "loong64":
	default: // ppc, mips and sparc encode ioctl numbers differently
		return nil, PortInfo{}, fmt.Errorf("umad: ioctl encoding for %s is not implemented", runtime.GOARCH)
	}
	opts = opts.withDefaults()
	info, err := Resolve(opts.Paths, device, port)
	if err != nil {
		return nil, PortInfo{}, err
	}
	if info.Note != "" {
		opts.Logger.Warn("umad port chosen instead of the one configured", "why", info.Note)
	}
	issm, err := openISSM(info.ISSMPath)
	if err != nil {
		return nil, info, err
	}
	dev, err := openDevice(info.UMADPath)
	if err != nil {
		issm.Close()
		return nil, info, err
	}
	c, err := newConn(dev, issm, opts)
	if err != nil {
		dev.Close()
		issm.Close()
		return nil, info, fmt.Errorf("%w (device %s)", err, info.UMADPath)
	}
	opts.Logger.Info("umad port opened", "device", info.Device, "port", info.Port, "umad", info.UMADPath,
		"port_guid", fmt.Sprintf("0x%016x", info.PortGUID), "lid", info.LID, "state", info.StateName)
	return c, info, nil
}
