package umad

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Port states (PortInfo.PortState) and physical states as sysfs reports
// them ("4: ACTIVE", "5: LinkUp").
const (
	StateDown         = 1
	StateInit         = 2
	StateArmed        = 3
	StateActive       = 4
	PhysStateDisabled = 3
	PhysStateLinkUp   = 5
)

// Node types in /sys/class/infiniband/<dev>/node_type.
const (
	nodeCA     = 1
	nodeSwitch = 2
	nodeRouter = 3
)

// CapIsSMDisabled is PortInfo.CapabilityMask's IsSMDisabled bit: the
// port's firmware does not let a subnet manager run on it. Multi-plane
// HCAs set it on the GSI-only device of a port whose SMPs go through a
// separate SMI device with the same port GUID.
const CapIsSMDisabled = 0x400

// PortInfo is what sysfs says about the HCA port a Conn is bound to. The
// LIDs are a snapshot taken at Open; the SM changes them as it runs.
type PortInfo struct {
	Device   string // HCA name, e.g. mlx5_0
	Port     int    // port number (0 for a switch's management port)
	NodeType int    // 1 CA, 2 switch, 3 router
	NodeGUID uint64
	// PortGUID and GIDPrefix are the two halves of GID index 0.
	PortGUID  uint64
	GIDPrefix uint64
	LID       uint16
	LMC       uint8
	SMLID     uint16
	SMSL      uint8
	State     uint8  // StateDown..StateActive
	StateName string // as sysfs spells it, e.g. "4: ACTIVE"
	PhysState uint8
	Rate      string // e.g. "100 Gb/sec (4X EDR)"
	CapMask   uint32
	LinkLayer string // "InfiniBand"
	// UMADIndex is N in /dev/infiniband/umadN and issmN.
	UMADIndex int
	UMADPath  string
	ISSMPath  string
	// Note says why Resolve chose another port than the one asked for
	// (a switch's port 0, a multi-plane port's SMI device); "" if it did
	// not.
	Note string
}

func (p PortInfo) smDisabled() bool { return p.CapMask&CapIsSMDisabled != 0 }

// smDisabledError refuses a port whose IsSMDisabled bit is set.
type smDisabledError struct {
	dev  string
	port int
	guid uint64
}

func (e *smDisabledError) Error() string {
	return fmt.Sprintf("umad: %s port %d has IsSMDisabled set (cap_mask bit 0x400): its firmware does not let a subnet manager use it. "+
		"On a multi-plane HCA this is the GSI device and the SMI device has the same port GUID %#016x, but none was found; "+
		"choose a port without the bit (see /sys/class/infiniband/*/ports/*/cap_mask)", e.dev, e.port, e.guid)
}

// Paths are the roots Resolve and Open read; tests point them into a
// temporary directory.
type Paths struct {
	SysfsRoot string // default "/sys"
	DevRoot   string // default "/dev"
}

func (p Paths) withDefaults() Paths {
	if p.SysfsRoot == "" {
		p.SysfsRoot = "/sys"
	}
	if p.DevRoot == "" {
		p.DevRoot = "/dev"
	}
	return p
}

// Resolve finds the port the SM should use the way libibumad does for an
// SMI port (umad_open_smi_port): with a device name and port, that port
// must exist, be InfiniBand and not be disabled; with port 0 the device's
// first Active port is chosen, else its first port with the physical link
// up (an SM's port on a subnet nobody manages yet is Init, not Active);
// with no device name the first device (alphabetically) with an Active
// port wins, else the first with a usable one. A switch always uses its
// management port 0, whatever port was asked for. Ports with IsSMDisabled
// are never chosen; if the one named has it, the device whose port has the
// same port GUID without it (a multi-plane HCA's SMI device, as
// libibumad's SMI/GSI pairs) is used instead, and PortInfo.Note says so.
func Resolve(paths Paths, device string, port int) (PortInfo, error) {
	paths = paths.withDefaults()
	madDir := filepath.Join(paths.SysfsRoot, "class", "infiniband_mad")
	abi, err := readUint(filepath.Join(madDir, "abi_version"))
	if err != nil {
		return PortInfo{}, fmt.Errorf("umad: cannot read the umad ABI version (%w); is the ib_umad kernel module loaded? Try modprobe ib_umad", err)
	}
	if abi < ABIVersion {
		return PortInfo{}, fmt.Errorf("umad: kernel umad ABI version %d is older than %d, which this SM needs", abi, ABIVersion)
	}
	if port < 0 || port > 254 {
		return PortInfo{}, fmt.Errorf("umad: port %d out of range 0..254", port)
	}
	var info PortInfo
	if device != "" {
		ca, err := readCA(paths.SysfsRoot, device)
		if err != nil {
			return PortInfo{}, err
		}
		if info, _, err = ca.choose(port); err != nil {
			var off *smDisabledError
			if !errors.As(err, &off) {
				return PortInfo{}, err
			}
			if info, err = smiDevice(paths.SysfsRoot, off); err != nil {
				return PortInfo{}, err
			}
		}
	} else {
		if info, err = chooseDevice(paths.SysfsRoot, port); err != nil {
			return PortInfo{}, err
		}
	}
	idx, err := umadIndex(madDir, info.Device, info.Port)
	if err != nil {
		return PortInfo{}, err
	}
	info.UMADIndex = idx
	info.UMADPath = filepath.Join(paths.DevRoot, "infiniband", "umad"+strconv.Itoa(idx))
	info.ISSMPath = filepath.Join(paths.DevRoot, "infiniband", "issm"+strconv.Itoa(idx))
	return info, nil
}

// smiDevice finds the SMI side of a multi-plane port: another device's
// InfiniBand port with the same port GUID and IsSMDisabled clear.
func smiDevice(root string, off *smDisabledError) (PortInfo, error) {
	ents, err := os.ReadDir(filepath.Join(root, "class", "infiniband"))
	if err != nil {
		return PortInfo{}, off
	}
	for _, e := range ents {
		if e.Name() == off.dev {
			continue
		}
		ca, err := readCA(root, e.Name())
		if err != nil {
			continue
		}
		for _, n := range ca.portNumbers() {
			if p := ca.ports[n]; p.PortGUID != off.guid || p.smDisabled() || !isIB(p.LinkLayer) {
				continue
			}
			info, _, err := ca.choose(n)
			if err != nil {
				continue
			}
			info.Note = fmt.Sprintf("%s port %d has IsSMDisabled (the GSI side of a multi-plane port); using its SMI device %s port %d, same port GUID %#016x",
				off.dev, off.port, info.Device, info.Port, off.guid)
			return info, nil
		}
	}
	return PortInfo{}, off
}

func chooseDevice(root string, port int) (PortInfo, error) {
	dir := filepath.Join(root, "class", "infiniband")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return PortInfo{}, fmt.Errorf("umad: no InfiniBand devices (%w); is the HCA driver loaded?", err)
	}
	var fallback *PortInfo
	var why []string
	for _, e := range ents { // ReadDir sorts by name
		ca, err := readCA(root, e.Name())
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		if ca.nodeType < nodeCA || ca.nodeType > nodeRouter {
			continue // iWARP/usNIC and the like
		}
		info, active, err := ca.choose(port)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		if active {
			return info, nil
		}
		if fallback == nil {
			fallback = &info
		}
	}
	if fallback != nil {
		return *fallback, nil
	}
	if len(why) == 0 {
		why = append(why, "no devices in "+dir)
	}
	return PortInfo{}, fmt.Errorf("umad: no usable InfiniBand port: %s; name one with device = \"<hca>\" (see ibstat)", strings.Join(why, "; "))
}

type caInfo struct {
	name     string
	nodeType int
	nodeGUID uint64
	ports    map[int]PortInfo
}

func readCA(root, name string) (*caInfo, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("umad: %q is not an HCA name (see ibstat)", name)
	}
	dir := filepath.Join(root, "class", "infiniband", name)
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("umad: HCA %q not found (%w); ibstat lists the names", name, err)
	}
	ca := &caInfo{name: name, ports: map[int]PortInfo{}}
	nt, err := readUint(filepath.Join(dir, "node_type"))
	if err != nil {
		return nil, fmt.Errorf("umad: HCA %s: %w", name, err)
	}
	ca.nodeType = int(nt)
	if ca.nodeGUID, err = readGUID(filepath.Join(dir, "node_guid")); err != nil {
		return nil, fmt.Errorf("umad: HCA %s: %w", name, err)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "ports"))
	if err != nil {
		return nil, fmt.Errorf("umad: HCA %s has no ports directory: %w", name, err)
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 0 || n > 254 {
			return nil, fmt.Errorf("umad: HCA %s: unexpected port entry %q", name, e.Name())
		}
		p, err := readPort(filepath.Join(dir, "ports", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("umad: HCA %s port %d: %w", name, n, err)
		}
		p.Device, p.Port, p.NodeType, p.NodeGUID = name, n, ca.nodeType, ca.nodeGUID
		ca.ports[n] = p
	}
	return ca, nil
}

func readPort(dir string) (PortInfo, error) {
	var p PortInfo
	var err error
	num := func(file string, bits int) uint64 {
		if err != nil {
			return 0
		}
		var v uint64
		v, err = readUint(filepath.Join(dir, file))
		if err == nil && bits < 64 && v >= 1<<bits {
			err = fmt.Errorf("%s: value %d does not fit %d bits", file, v, bits)
		}
		return v
	}
	p.LID = uint16(num("lid", 16))
	p.SMLID = uint16(num("sm_lid", 16))
	p.SMSL = uint8(num("sm_sl", 4))
	p.LMC = uint8(num("lid_mask_count", 3))
	p.State = uint8(num("state", 8))
	p.PhysState = uint8(num("phys_state", 8))
	p.CapMask = uint32(num("cap_mask", 32))
	if err != nil {
		return p, err
	}
	if p.StateName, err = readString(filepath.Join(dir, "state")); err != nil {
		return p, err
	}
	if p.Rate, err = readString(filepath.Join(dir, "rate")); err != nil {
		return p, err
	}
	// Kernels before link_layer existed only had InfiniBand ports.
	p.LinkLayer = "InfiniBand"
	if ll, err := readString(filepath.Join(dir, "link_layer")); err == nil {
		p.LinkLayer = ll
	} else if !errors.Is(err, fs.ErrNotExist) {
		return p, err
	}
	gid, err := readGID(filepath.Join(dir, "gids", "0"))
	if err != nil {
		return p, err
	}
	p.GIDPrefix, p.PortGUID = beUint64(gid[:8]), beUint64(gid[8:])
	return p, nil
}

// choose picks the port as Resolve describes; active reports whether it is
// Active (a device is preferred for an Active port).
func (ca *caInfo) choose(port int) (PortInfo, bool, error) {
	if ca.nodeType == nodeSwitch {
		p, ok := ca.ports[0]
		if !ok {
			return PortInfo{}, false, fmt.Errorf("umad: switch %s has no port 0 in sysfs", ca.name)
		}
		if p.smDisabled() {
			return PortInfo{}, false, fmt.Errorf("umad: switch %s port 0 has IsSMDisabled set (cap_mask bit 0x400): its firmware does not let a subnet manager run on this switch", ca.name)
		}
		if port != 0 { // as libibumad: a switch's SM port is port 0
			p.Note = fmt.Sprintf("%s is a switch: the SM uses its management port 0, not port %d", ca.name, port)
		}
		return p, p.State == StateActive, nil
	}
	if port > 0 {
		p, ok := ca.ports[port]
		switch {
		case !ok:
			return PortInfo{}, false, fmt.Errorf("umad: HCA %s has no port %d (ports: %v)", ca.name, port, ca.portNumbers())
		case !isIB(p.LinkLayer):
			return PortInfo{}, false, fmt.Errorf("umad: %s port %d has link layer %s; a subnet manager needs an InfiniBand port", ca.name, port, p.LinkLayer)
		case p.smDisabled():
			return PortInfo{}, false, &smDisabledError{dev: ca.name, port: port, guid: p.PortGUID}
		case p.State == StateActive:
			return p, true, nil
		case p.PhysState == PhysStateDisabled:
			return PortInfo{}, false, fmt.Errorf("umad: %s port %d is disabled (phys_state %d); enable it (ibportstate) or choose another port", ca.name, port, p.PhysState)
		}
		return p, false, nil
	}
	nums := ca.portNumbers()
	pick := func(ok func(PortInfo) bool) (PortInfo, bool) {
		for _, n := range nums {
			if p := ca.ports[n]; isIB(p.LinkLayer) && !p.smDisabled() && ok(p) {
				return p, true
			}
		}
		return PortInfo{}, false
	}
	if p, ok := pick(func(p PortInfo) bool { return p.State == StateActive }); ok {
		return p, true, nil
	}
	if p, ok := pick(func(p PortInfo) bool { return p.PhysState == PhysStateLinkUp }); ok {
		return p, false, nil
	}
	if p, ok := pick(func(p PortInfo) bool { return p.PhysState != PhysStateDisabled }); ok {
		return p, false, nil
	}
	for _, n := range nums {
		if p := ca.ports[n]; isIB(p.LinkLayer) && p.smDisabled() {
			return PortInfo{}, false, &smDisabledError{dev: ca.name, port: n, guid: p.PortGUID}
		}
	}
	return PortInfo{}, false, fmt.Errorf("umad: HCA %s has no InfiniBand port that is not disabled (ports: %v)", ca.name, nums)
}

func (ca *caInfo) portNumbers() []int {
	var ns []int
	for n := range ca.ports {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	return ns
}

func isIB(linkLayer string) bool { return linkLayer == "InfiniBand" || linkLayer == "IB" }

// umadIndex finds N such that /sys/class/infiniband_mad/umadN names the
// device and port.
func umadIndex(madDir, device string, port int) (int, error) {
	ents, err := os.ReadDir(madDir)
	if err != nil {
		return 0, fmt.Errorf("umad: %w", err)
	}
	for _, e := range ents {
		num, ok := strings.CutPrefix(e.Name(), "umad")
		if !ok {
			continue
		}
		idx, err := strconv.Atoi(num)
		if err != nil {
			continue
		}
		dir := filepath.Join(madDir, e.Name())
		dev, err := readString(filepath.Join(dir, "ibdev"))
		if err != nil || dev != device {
			continue
		}
		if p, err := readUint(filepath.Join(dir, "port")); err == nil && int(p) == port {
			return idx, nil
		}
	}
	return 0, fmt.Errorf("umad: no umad device for %s port %d under %s; is ib_umad loaded for this HCA?", device, port, madDir)
}

func readString(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// readUint reads a sysfs number the way strtoul(s, 0) does: the leading
// number of "4: ACTIVE", "0x1a" or "100 Gb/sec (4X EDR)".
func readUint(path string) (uint64, error) {
	s, err := readString(path)
	if err != nil {
		return 0, err
	}
	v, err := parseLeadingUint(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

func parseLeadingUint(s string) (uint64, error) {
	end := 0
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		end = 2
		for end < len(s) && isHex(s[end]) {
			end++
		}
	} else {
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
		}
	}
	v, err := strconv.ParseUint(s[:end], 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%q does not start with a number", s)
	}
	return v, nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// readGUID parses "0002:c903:00a1:b2c0".
func readGUID(path string) (uint64, error) {
	b, err := readHexGroups(path, 8)
	if err != nil {
		return 0, err
	}
	return beUint64(b), nil
}

// readGID parses "fe80:0000:0000:0000:0002:c903:00a1:b2c1".
func readGID(path string) ([16]byte, error) {
	var g [16]byte
	b, err := readHexGroups(path, 16)
	copy(g[:], b)
	return g, err
}

func readHexGroups(path string, n int) ([]byte, error) {
	s, err := readString(path)
	if err != nil {
		return nil, err
	}
	groups := strings.Split(s, ":")
	b, herr := hex.DecodeString(strings.Join(groups, ""))
	if herr != nil || len(b) != n || len(groups) != n/2 || slices.ContainsFunc(groups, func(g string) bool { return len(g) != 4 }) {
		return nil, fmt.Errorf("%s: %q is not %d colon-separated groups of 4 hex digits", path, s, n/2)
	}
	return b, nil
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return v
}
