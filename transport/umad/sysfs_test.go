package umad

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakePort is one port directory's attributes as the kernel prints them.
type fakePort struct {
	state, phys, linkLayer, lid string
	capMask                     string // default 0x2651e84a
	guid                        string // last 4 hex digits of the port GUID; default b2c<port>
}

// fakeSysfs builds /sys/class/infiniband{,_mad} under a temp dir: each
// device gets node_type, node_guid and its ports; umad lists "dev port"
// in umadN order.
func fakeSysfs(t *testing.T, devs map[string]map[int]fakePort, nodeType map[string]string, umad []string) string {
	t.Helper()
	root := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		path = filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("class/infiniband_mad/abi_version", "5")
	for name, ports := range devs {
		d := "class/infiniband/" + name
		nt := nodeType[name]
		if nt == "" {
			nt = "1: CA"
		}
		write(d+"/node_type", nt)
		write(d+"/node_guid", "0002:c903:00a1:b2c0")
		for n, p := range ports {
			pd := d + "/ports/" + itoa(n)
			if p.lid == "" {
				p.lid = "0x0"
			}
			write(pd+"/lid", p.lid)
			write(pd+"/sm_lid", "0x1")
			write(pd+"/sm_sl", "0")
			write(pd+"/lid_mask_count", "0")
			write(pd+"/state", p.state)
			write(pd+"/phys_state", p.phys)
			write(pd+"/rate", "100 Gb/sec (4X EDR)")
			if p.capMask == "" {
				p.capMask = "0x2651e84a"
			}
			write(pd+"/cap_mask", p.capMask)
			if p.linkLayer != "-" {
				ll := p.linkLayer
				if ll == "" {
					ll = "InfiniBand"
				}
				write(pd+"/link_layer", ll)
			}
			if p.guid == "" {
				p.guid = "b2c" + itoa(n)
			}
			write(pd+"/gids/0", "fe80:0000:0000:0000:0002:c903:00a1:"+p.guid)
		}
	}
	for i, u := range umad {
		dev, port, _ := strings.Cut(u, " ")
		write("class/infiniband_mad/umad"+itoa(i)+"/ibdev", dev)
		write("class/infiniband_mad/umad"+itoa(i)+"/port", port)
	}
	return root
}

func itoa(n int) string { return strconv.Itoa(n) }

var (
	active   = fakePort{state: "4: ACTIVE", phys: "5: LinkUp", lid: "0x1a"}
	initUp   = fakePort{state: "2: INIT", phys: "5: LinkUp"}
	down     = fakePort{state: "1: DOWN", phys: "2: Polling"}
	disabled = fakePort{state: "1: DOWN", phys: "3: Disabled"}
	ethernet = fakePort{state: "4: ACTIVE", phys: "5: LinkUp", linkLayer: "Ethernet"}
	// A multi-plane HCA's GSI device: its firmware forbids an SM here
	// (PortInfo.CapabilityMask IsSMDisabled, 0x400); the SMI device
	// carries the same port GUID.
	gsiOnly = fakePort{state: "4: ACTIVE", phys: "5: LinkUp", lid: "0x1a", capMask: "0x2651ec4a", guid: "0777"}
	smiOf   = fakePort{state: "2: INIT", phys: "5: LinkUp", guid: "0777"}
)

func TestResolve(t *testing.T) {
	for _, c := range []struct {
		name     string
		devs     map[string]map[int]fakePort
		types    map[string]string
		umad     []string
		device   string
		port     int
		wantDev  string
		wantPort int
		wantUMAD int
		wantErr  string
		wantNote string
	}{
		{name: "named device and port", devs: map[string]map[int]fakePort{"mlx5_0": {1: active, 2: initUp}},
			umad: []string{"mlx5_0 1", "mlx5_0 2"}, device: "mlx5_0", port: 2, wantDev: "mlx5_0", wantPort: 2, wantUMAD: 1},
		{name: "port 0 prefers an Active port", devs: map[string]map[int]fakePort{"mlx5_0": {1: initUp, 2: active}},
			umad: []string{"mlx5_0 1", "mlx5_0 2"}, device: "mlx5_0", wantDev: "mlx5_0", wantPort: 2, wantUMAD: 1},
		{name: "port 0 falls back to a LinkUp port (unmanaged subnet)", devs: map[string]map[int]fakePort{"mlx5_0": {1: down, 2: initUp}},
			umad: []string{"mlx5_0 1", "mlx5_0 2"}, device: "mlx5_0", wantDev: "mlx5_0", wantPort: 2, wantUMAD: 1},
		{name: "no device: the first with an Active port", devs: map[string]map[int]fakePort{"mlx4_0": {1: initUp}, "mlx5_0": {1: active}},
			umad: []string{"mlx4_0 1", "mlx5_0 1"}, wantDev: "mlx5_0", wantPort: 1, wantUMAD: 1},
		{name: "no device, none Active: the first usable", devs: map[string]map[int]fakePort{"mlx4_0": {1: disabled}, "mlx5_0": {1: initUp}, "mlx5_1": {1: initUp}},
			umad: []string{"mlx4_0 1", "mlx5_0 1", "mlx5_1 1"}, wantDev: "mlx5_0", wantPort: 1, wantUMAD: 1},
		{name: "no link_layer file means InfiniBand", devs: map[string]map[int]fakePort{"mthca0": {1: {state: "4: ACTIVE", phys: "5: LinkUp", linkLayer: "-"}}},
			umad: []string{"mthca0 1"}, device: "mthca0", port: 1, wantDev: "mthca0", wantPort: 1},
		{name: "switch uses port 0", devs: map[string]map[int]fakePort{"sw0": {0: active}}, types: map[string]string{"sw0": "2: switch"},
			umad: []string{"sw0 0"}, device: "sw0", wantDev: "sw0", wantPort: 0},
		{name: "explicit port that is down but not disabled", devs: map[string]map[int]fakePort{"mlx5_0": {1: down}},
			umad: []string{"mlx5_0 1"}, device: "mlx5_0", port: 1, wantDev: "mlx5_0", wantPort: 1},
		{name: "Ethernet port", devs: map[string]map[int]fakePort{"mlx5_0": {1: ethernet}}, umad: []string{"mlx5_0 1"},
			device: "mlx5_0", port: 1, wantErr: "link layer Ethernet"},
		{name: "disabled port", devs: map[string]map[int]fakePort{"mlx5_0": {1: disabled}}, umad: []string{"mlx5_0 1"},
			device: "mlx5_0", port: 1, wantErr: "disabled"},
		{name: "missing port", devs: map[string]map[int]fakePort{"mlx5_0": {1: active}}, umad: []string{"mlx5_0 1"},
			device: "mlx5_0", port: 2, wantErr: "no port 2"},
		{name: "missing device", devs: map[string]map[int]fakePort{"mlx5_0": {1: active}}, umad: []string{"mlx5_0 1"},
			device: "mlx5_9", port: 1, wantErr: "not found"},
		{name: "no umad node for the port", devs: map[string]map[int]fakePort{"mlx5_0": {1: active, 2: active}}, umad: []string{"mlx5_0 1"},
			device: "mlx5_0", port: 2, wantErr: "no umad device for mlx5_0 port 2"},
		{name: "switch asked for port 1 uses port 0 (as libibumad)", devs: map[string]map[int]fakePort{"sw0": {0: active}}, types: map[string]string{"sw0": "2: switch"},
			umad: []string{"sw0 0"}, device: "sw0", port: 1, wantDev: "sw0", wantPort: 0, wantNote: "management port 0, not port 1"},
		{name: "switch found without a device name", devs: map[string]map[int]fakePort{"sw0": {0: active}}, types: map[string]string{"sw0": "2: switch"},
			umad: []string{"sw0 0"}, port: 1, wantDev: "sw0", wantPort: 0, wantNote: "management port 0"},
		{name: "switch whose port 0 has IsSMDisabled", devs: map[string]map[int]fakePort{"sw0": {0: gsiOnly}}, types: map[string]string{"sw0": "2: switch"},
			umad: []string{"sw0 0"}, device: "sw0", wantErr: "IsSMDisabled"},
		{name: "port 0 skips IsSMDisabled ports", devs: map[string]map[int]fakePort{"mlx5_0": {1: gsiOnly, 2: initUp}},
			umad: []string{"mlx5_0 1", "mlx5_0 2"}, device: "mlx5_0", wantDev: "mlx5_0", wantPort: 2, wantUMAD: 1},
		{name: "no device: the SMI device, not the Active GSI one", devs: map[string]map[int]fakePort{"mlx5_0": {1: gsiOnly}, "mlx5_1": {1: smiOf}},
			umad: []string{"mlx5_0 1", "mlx5_1 1"}, wantDev: "mlx5_1", wantPort: 1, wantUMAD: 1},
		{name: "named GSI device: its SMI device (same port GUID)", devs: map[string]map[int]fakePort{"mlx5_0": {1: gsiOnly}, "mlx5_1": {1: smiOf}},
			umad: []string{"mlx5_0 1", "mlx5_1 1"}, device: "mlx5_0", port: 1, wantDev: "mlx5_1", wantPort: 1, wantUMAD: 1,
			wantNote: "mlx5_0 port 1 has IsSMDisabled (the GSI side of a multi-plane port); using its SMI device mlx5_1 port 1"},
		{name: "named GSI device, any port: its SMI device", devs: map[string]map[int]fakePort{"mlx5_0": {1: gsiOnly}, "mlx5_1": {1: smiOf}},
			umad: []string{"mlx5_0 1", "mlx5_1 1"}, device: "mlx5_0", wantDev: "mlx5_1", wantPort: 1, wantUMAD: 1, wantNote: "SMI device mlx5_1"},
		{name: "named GSI device without an SMI device", devs: map[string]map[int]fakePort{"mlx5_0": {1: gsiOnly}},
			umad: []string{"mlx5_0 1"}, device: "mlx5_0", port: 1, wantErr: "IsSMDisabled"},
		{name: "nothing usable", devs: map[string]map[int]fakePort{"mlx5_0": {1: disabled}}, umad: []string{"mlx5_0 1"},
			wantErr: "no usable InfiniBand port"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := fakeSysfs(t, c.devs, c.types, c.umad)
			info, err := Resolve(Paths{SysfsRoot: root, DevRoot: "/devx"}, c.device, c.port)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(info.Note, c.wantNote) || (c.wantNote == "") != (info.Note == "") {
				t.Errorf("note %q, want %q", info.Note, c.wantNote)
			}
			if info.Device != c.wantDev || info.Port != c.wantPort || info.UMADIndex != c.wantUMAD {
				t.Fatalf("got %s port %d umad%d, want %s port %d umad%d", info.Device, info.Port, info.UMADIndex, c.wantDev, c.wantPort, c.wantUMAD)
			}
			if info.UMADPath != "/devx/infiniband/umad"+itoa(c.wantUMAD) || info.ISSMPath != "/devx/infiniband/issm"+itoa(c.wantUMAD) {
				t.Fatalf("paths %s %s", info.UMADPath, info.ISSMPath)
			}
		})
	}
}

func TestResolvePortAttributes(t *testing.T) {
	root := fakeSysfs(t, map[string]map[int]fakePort{"mlx5_0": {1: active}}, nil, []string{"mlx5_0 1"})
	info, err := Resolve(Paths{SysfsRoot: root}, "mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := PortInfo{Device: "mlx5_0", Port: 1, NodeType: 1, NodeGUID: 0x0002c90300a1b2c0,
		PortGUID: 0x0002c90300a1b2c1, GIDPrefix: 0xfe80000000000000, LID: 0x1a, SMLID: 1,
		State: StateActive, StateName: "4: ACTIVE", PhysState: PhysStateLinkUp, Rate: "100 Gb/sec (4X EDR)",
		CapMask: 0x2651e84a, LinkLayer: "InfiniBand", UMADIndex: 0,
		UMADPath: "/dev/infiniband/umad0", ISSMPath: "/dev/infiniband/issm0"}
	if info != want {
		t.Fatalf("got  %+v\nwant %+v", info, want)
	}
}

func TestResolveKernelChecks(t *testing.T) {
	root := fakeSysfs(t, map[string]map[int]fakePort{"mlx5_0": {1: active}}, nil, []string{"mlx5_0 1"})
	abi := filepath.Join(root, "class/infiniband_mad/abi_version")
	if err := os.WriteFile(abi, []byte("4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(Paths{SysfsRoot: root}, "mlx5_0", 1); err == nil || !strings.Contains(err.Error(), "ABI version 4") {
		t.Fatalf("err = %v", err)
	}
	os.Remove(abi)
	if _, err := Resolve(Paths{SysfsRoot: root}, "mlx5_0", 1); err == nil || !strings.Contains(err.Error(), "modprobe ib_umad") {
		t.Fatalf("err = %v", err)
	}
	gid := filepath.Join(root, "class/infiniband/mlx5_0/ports/1/gids/0")
	os.WriteFile(abi, []byte("5\n"), 0o644)
	os.WriteFile(gid, []byte("fe80::2\n"), 0o644)
	if _, err := Resolve(Paths{SysfsRoot: root}, "mlx5_0", 1); err == nil || !strings.Contains(err.Error(), "groups of 4 hex digits") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Resolve(Paths{SysfsRoot: root}, "../etc", 1); err == nil || !strings.Contains(err.Error(), "not an HCA name") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseLeadingUint(t *testing.T) {
	for in, want := range map[string]uint64{"4: ACTIVE": 4, "0x1a": 26, "0X1A": 26, "100 Gb/sec (4X EDR)": 100, "0": 0, "2.5 Gb/sec": 2} {
		if got, err := parseLeadingUint(in); err != nil || got != want {
			t.Errorf("parseLeadingUint(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "ACTIVE", "0x", "x1"} {
		if _, err := parseLeadingUint(in); err == nil {
			t.Errorf("parseLeadingUint(%q) accepted", in)
		}
	}
}
